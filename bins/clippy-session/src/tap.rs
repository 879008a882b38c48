//! The tap: turn detection and the spool, on their own thread (the spool written in batches).
//!
//! After every spool write it reports [`Progress`] — the spool's size and the session's mode,
//! prompt count and latest prompt — whenever that changed, so the broker can serve reads and
//! wake the waits parked on this session without polling the file.
//!
//! The byte-moving loop hands each chunk of output and input here through a bounded channel,
//! in the order they happened, and goes straight back to moving bytes: forwarding never waits
//! on detection or on the spool (SPEC §11). The channel holds up to `CAPACITY` chunks (output
//! goes in batches of about 32 KiB under a flood, so some 8 MiB); only if detection fell that far
//! behind would the loop wait, which bounds memory whatever the child writes, however far a
//! saturated machine lets detection fall behind.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_hooks::Report;
use clippy_proto::{
    MAX_SCREEN_BYTES, MAX_SCREEN_HISTORY, Mode, Progress, ScreenData, WaitingState,
};
use clippy_spool::SpoolWriter;
use clippy_turn::{Event, Phase, TurnDetector};

use crate::sink::{Events, SessionEvent};

/// Chunks the channel holds before the loop has to wait.
const CAPACITY: usize = 256;
/// How long a turn one source says ended waits for the other (the screen for the agent's hook,
/// or the reverse) before it ends anyway, as a disagreement (CONTRACTS/HOOKS.md).
pub const AGREEMENT_GRACE: Duration = Duration::from_secs(2);
/// How long output has to stop before the detector is told it is quiet
/// ([`TurnDetector::quiet`]): an agent at work animates (spinner, timer, streaming text) far
/// more often; one at rest writes nothing. `--replay` drives the same call from the
/// recording's timestamps.
pub const QUIET: Duration = Duration::from_millis(400);

/// What the loop reports, in order.
#[derive(Debug)]
pub enum Tapped {
    /// Bytes the child wrote.
    Output(Vec<u8>),
    /// Bytes written to the child: from the user's terminal (`human`: the user's keys and the
    /// terminal's own reports, which the detector tells apart), or injected by the broker.
    Input { bytes: Vec<u8>, human: bool },
    /// The terminal was resized.
    Resize { cols: u16, rows: u16 },
    /// The broker asks for the screen (`screen_request` number `request`) with up to `history`
    /// lines of history: taken after everything handed over before it, so it shows all the
    /// output read so far.
    Screen { request: u64, history: u32 },
    /// The agent's hook reported, or sent something unreadable (why).
    Agent(Result<Report, String>),
    /// An attached client needs the screen drawn (`clippy_attach::HubAction::Redraw`): taken
    /// after everything handed over before it, answered through [`ToLoop`].
    Redraw { client: u64, generation: u64 },
}

/// What the tap hands back to the byte loop.
#[derive(Debug)]
pub enum FromTap {
    /// The screen rendered for an attached client.
    Redrawn {
        client: u64,
        generation: u64,
        screen: Vec<u8>,
    },
    /// What a terminal would have answered the program's queries (cursor position, device
    /// attributes, …): written to it when nobody's terminal answers them (a detached session
    /// with no interactive client).
    TerminalReplies(Vec<u8>),
}

/// The tap's way back to the loop: a channel, and the loop's waker.
pub struct ToLoop {
    pub tx: std::sync::mpsc::Sender<FromTap>,
    pub waker: std::sync::Arc<mio::Waker>,
}

impl ToLoop {
    fn send(&self, message: FromTap) {
        // Gone only when the loop is, and then nobody needs it.
        if self.tx.send(message).is_ok() {
            let _ = self.waker.wake();
        }
    }
}

/// The loop's end of the tap.
pub struct Tap {
    tx: SyncSender<Tapped>,
    thread: JoinHandle<SpoolWriter>,
}

impl Tap {
    /// Starts the tap thread, which owns the detector and the spool and reports to `events`;
    /// `hooks_wired`: the agent's hooks were wired for this run.
    pub fn start(
        detector: TurnDetector,
        spool: SpoolWriter,
        events: Events,
        to_loop: ToLoop,
        hooks_wired: bool,
    ) -> std::io::Result<Self> {
        let (tx, rx) = sync_channel(CAPACITY);
        let thread = std::thread::Builder::new()
            .name("clippy-session-tap".into())
            .spawn(move || {
                clippy_pty::lower_this_thread(NICE);
                run(rx, detector, spool, events, to_loop, hooks_wired)
            })?;
        Ok(Self { tx, thread })
    }

    /// Hands a copy of some bytes or a resize to the tap.
    pub fn send(&self, tapped: Tapped) {
        // The tap only ends when this side is dropped, so a failed send cannot happen while the
        // loop runs; if the thread panicked, detection is lost but the session goes on.
        let _ = self.tx.send(tapped);
    }

    /// Lets the tap finish what it was given and returns the spool.
    pub fn finish(self) -> Option<SpoolWriter> {
        drop(self.tx);
        self.thread.join().ok()
    }
}

/// The tap's scheduling priority (nice), above the byte loop's and the broker's: on a machine
/// saturated by many busy sessions, the CPU goes first to moving bytes and to the broker that
/// serves everyone, and detection catches up behind them (its channel is bounded, so it never
/// falls more than [`CAPACITY`] chunks behind).
const NICE: i32 = 5;

fn run(
    rx: Receiver<Tapped>,
    detector: TurnDetector,
    spool: SpoolWriter,
    events: Events,
    to_loop: ToLoop,
    hooks_wired: bool,
) -> SpoolWriter {
    let mut progress = Progress::default();
    progress.hooks.wired = hooks_wired;
    let mut tap = TapState {
        detector,
        spool: BatchedSpool {
            spool,
            pending: Vec::with_capacity(SPOOL_BATCH),
            failed: false,
        },
        events,
        to_loop,
        progress,
        reported: None,
        settle_at: None,
    };
    // When output last came: the screen is rendered once it has paused.
    let mut output_at: Option<Instant> = None;
    // When the detector is told that output went quiet (once per pause).
    let mut quiet_at: Option<Instant> = None;
    loop {
        if tap.settle_at.is_some_and(|at| Instant::now() >= at) {
            tap.settle();
        }
        let tapped = match rx.try_recv() {
            Ok(tapped) => tapped,
            Err(TryRecvError::Empty) => {
                // Caught up, and no output for `QUIET`: the detector judges its screen.
                if quiet_at.is_some_and(|at| Instant::now() >= at) {
                    quiet_at = None;
                    tap.quiet();
                }
                // Caught up: readers of the spool see everything so far. The screen renders
                // in steps while nothing else waits, once output has paused for
                // `RENDER_AFTER` (a flood is rendered once it is over, and what a read needs
                // is rendered by that read).
                tap.spool.flush(&tap.events);
                tap.report_progress();
                let render_at = output_at
                    .map(|at| at + RENDER_AFTER)
                    .filter(|at| *at > Instant::now());
                if render_at.is_none() {
                    output_at = None;
                    let more = tap.detector.catch_up_screen();
                    tap.forward_terminal_replies();
                    if more {
                        continue;
                    }
                }
                let next = match [tap.settle_at, render_at, quiet_at]
                    .into_iter()
                    .flatten()
                    .min()
                {
                    Some(at) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                };
                match next {
                    Ok(tapped) => tapped,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            Err(TryRecvError::Disconnected) => break,
        };
        if matches!(tapped, Tapped::Output(_)) {
            let now = Instant::now();
            output_at = Some(now);
            quiet_at = Some(now + QUIET);
        }
        tap.take(tapped);
        tap.forward_terminal_replies();
    }
    tap.spool.flush(&tap.events);
    tap.report_progress();
    tap.spool.spool
}

/// How long output has to pause before the tap renders the screen in its idle time: under a
/// flood, rendering as it goes would take a CPU from the byte path on a small machine.
const RENDER_AFTER: Duration = Duration::from_millis(5);

/// Spool bytes are written in batches of up to this many (one `write` each), and whenever the
/// tap has caught up with the loop.
const SPOOL_BATCH: usize = 64 * 1024;

/// The spool, written in batches.
struct BatchedSpool {
    spool: SpoolWriter,
    pending: Vec<u8>,
    failed: bool,
}

impl BatchedSpool {
    fn push(&mut self, bytes: &[u8], events: &Events) {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= SPOOL_BATCH {
            self.flush(events);
        }
    }

    fn flush(&mut self, events: &Events) {
        if self.pending.is_empty() {
            return;
        }
        if let Err(e) = self.spool.append(&self.pending)
            && !self.failed
        {
            self.failed = true;
            events.send(SessionEvent::SpoolFailed(e.to_string()));
        }
        self.pending.clear();
    }
}

struct TapState {
    detector: TurnDetector,
    spool: BatchedSpool,
    events: Events,
    to_loop: ToLoop,
    /// Where the session is now (`spool_size` and `mode` are filled in when reported).
    progress: Progress,
    /// What was last reported.
    reported: Option<Progress>,
    /// When a turn waiting for its two sources to agree ends anyway.
    settle_at: Option<Instant>,
}

impl TapState {
    /// Hands the loop what a terminal would have answered the queries rendered since.
    fn forward_terminal_replies(&mut self) {
        let replies = self.detector.take_terminal_replies();
        if !replies.is_empty() {
            self.to_loop.send(FromTap::TerminalReplies(replies));
        }
    }

    /// Reports that the spool grew, the mode as last reported. Sent before a completed turn,
    /// which reaches the broker only once its text is rendered: the broker learns at once of
    /// the output that ended the turn (waits on it wake now) and of the keystrokes that led to
    /// it (a route counts its hops from the last one), always before the turn itself.
    fn report_spool_growth(&mut self) {
        let Some(reported) = &mut self.reported else {
            return;
        };
        // The counters that lead to the turn go too: a keystroke that started it must reset
        // the routes' hop counts before the turn is handed over; and what the turn's end
        // changed (the waiting state gone, the hooks' turn ends counted), so that nobody sees
        // the turn with the state from before it.
        let early = Progress {
            spool_size: self.spool.spool.len(),
            keystrokes: self.progress.keystrokes,
            inputs: self.progress.inputs,
            input: self.progress.input.clone(),
            waiting: self.progress.waiting.clone(),
            hooks: self.progress.hooks.clone(),
            ..reported.clone()
        };
        if *reported != early {
            *reported = early.clone();
            self.events.send(SessionEvent::Progress(Box::new(early)));
        }
    }

    /// Reports the progress if it changed since the last report.
    fn report_progress(&mut self) {
        self.progress.spool_size = self.spool.spool.len();
        self.progress.mode = match self.detector.phase() {
            Phase::Starting => Mode::Starting,
            Phase::Idle => Mode::Idle,
            Phase::Busy => Mode::Busy,
        };
        self.progress.cwd = self.detector.cwd().map(str::to_owned);
        self.progress.prompt_unrecognised =
            self.progress.spool_size > 0 && !self.detector.prompt_recognised();
        if self.reported.as_ref() != Some(&self.progress) {
            self.reported = Some(self.progress.clone());
            self.events
                .send(SessionEvent::Progress(Box::new(self.progress.clone())));
        }
    }

    fn take(&mut self, tapped: Tapped) {
        let detected: Vec<Event> = match tapped {
            Tapped::Output(bytes) => {
                self.spool.push(&bytes, &self.events);
                self.detector.feed_output(&bytes).collect()
            }
            Tapped::Input { bytes, human } => {
                let events: Vec<Event> = self.detector.feed_input(&bytes).collect();
                // The agent's question is answered: keys other than moving through its menu.
                if events.iter().any(|e| matches!(e, Event::KeysPressed)) && !moves_only(&bytes) {
                    self.progress.waiting = None;
                }
                // Only a key is a person at work: focus events, mouse reports and the replies
                // to an agent's queries arrive on the same input, and counting them would
                // reset the routes' hop counts with nobody there (CONTRACTS/ROUTING.md).
                if human && events.iter().any(|e| matches!(e, Event::KeysPressed)) {
                    self.progress.keystrokes += 1;
                }
                events
            }
            Tapped::Resize { cols, rows } => {
                let _ = self.detector.resize(cols.max(1), rows.max(1));
                Vec::new()
            }
            Tapped::Screen { request, history } => {
                let screen = screen_data(&mut self.detector, history);
                self.events.send(SessionEvent::Screen {
                    request,
                    screen: Box::new(screen),
                });
                Vec::new()
            }
            Tapped::Agent(report) => self.agent_report(report),
            Tapped::Redraw { client, generation } => {
                let screen = self.detector.screen_redraw();
                self.to_loop.send(FromTap::Redrawn {
                    client,
                    generation,
                    screen,
                });
                Vec::new()
            }
        };
        self.take_events(detected);
    }

    /// What the agent's hook said: the detector takes turn ends and prompts; waiting is the
    /// session's state until the next key, prompt or turn end.
    fn agent_report(&mut self, report: Result<Report, String>) -> Vec<Event> {
        let hooks = &mut self.progress.hooks;
        let report = match report {
            Ok(report) => report,
            Err(_) => {
                hooks.rejected += 1;
                return Vec::new();
            }
        };
        hooks.reports += 1;
        match &report {
            Report::PromptSubmitted { .. } => self.progress.waiting = None,
            Report::Waiting(waiting) => {
                self.progress.waiting = Some(WaitingState {
                    kind: waiting.kind.clone(),
                    tool: waiting.tool.clone(),
                    input: waiting.input.clone(),
                    message: waiting.message.clone(),
                    since: now_ms(),
                });
            }
            Report::TurnEnded { .. } | Report::Other { .. } => {}
        }
        match crate::agent_hooks::signal_of(&report) {
            Some(signal) => self.detector.feed_agent(signal).collect(),
            None => Vec::new(),
        }
    }

    /// Output has been quiet for [`QUIET`]: the detector looks at its screen.
    fn quiet(&mut self) {
        let events: Vec<Event> = self.detector.quiet().collect();
        self.take_events(events);
        self.forward_terminal_replies();
    }

    /// Ends a turn that waited too long for its two sources to agree.
    fn settle(&mut self) {
        self.settle_at = None;
        let events: Vec<Event> = self.detector.settle().collect();
        self.take_events(events);
    }

    /// Reports what the detector found.
    fn take_events(&mut self, detected: Vec<Event>) {
        for event in detected {
            let out = match event {
                // The screen says the agent asks (agents whose hooks do not): waiting, unless
                // its hooks said so already, with more.
                Event::Asking { question } => {
                    if self.progress.waiting.is_none() {
                        self.progress.waiting = Some(WaitingState {
                            kind: "permission".into(),
                            message: Some(question),
                            since: now_ms(),
                            ..WaitingState::default()
                        });
                    }
                    continue;
                }
                Event::AwaitingAgreement => {
                    self.settle_at = Some(Instant::now() + AGREEMENT_GRACE);
                    continue;
                }
                Event::Disagreement { reason } => {
                    let hooks = &mut self.progress.hooks;
                    hooks.disagreements += 1;
                    hooks.last_disagreement = Some(reason);
                    continue;
                }
                Event::TurnCompleted(turn) => {
                    self.settle_at = None;
                    self.progress.waiting = None;
                    if turn.ended_by_agent {
                        self.progress.hooks.turn_ends += 1;
                    }
                    // The span is mapped through what the spool has written.
                    self.spool.flush(&self.events);
                    self.report_spool_growth();
                    self.progress.turns = turn.seq;
                    let spool = &self.spool.spool;
                    let spool_span = spool
                        .spool_offset_of(turn.start)
                        .zip(spool.spool_offset_of(turn.end));
                    SessionEvent::Turn {
                        turn: Box::new(turn),
                        spool_span,
                        timestamp: now_ms(),
                    }
                }
                Event::BracketedPaste { enabled } => SessionEvent::BracketedPaste(enabled),
                Event::Submitted { input } => {
                    self.progress.inputs += 1;
                    self.progress.input = Some(input);
                    continue;
                }
                Event::Prompt { offset, exit_code } => {
                    self.spool.flush(&self.events);
                    self.progress.prompts += 1;
                    self.progress.input = None;
                    self.progress.prompt_inputs = self.progress.inputs;
                    self.progress.prompt_cursor = self.spool.spool.spool_offset_of(offset);
                    // The latest prompt's own code: none when the shell reported none.
                    self.progress.exit_code = exit_code;
                    self.progress.prompt_timestamp = Some(now_ms());
                    self.progress.prompt_text = self.detector.prompt_line();
                    continue;
                }
                _ => continue,
            };
            self.events.send(out);
        }
    }
}

/// The detector's screen with up to `history` lines of history (at most
/// [`MAX_SCREEN_HISTORY`]), the oldest cut if it would not fit a frame.
fn screen_data(detector: &mut TurnDetector, history: u32) -> ScreenData {
    let history = history.min(MAX_SCREEN_HISTORY);
    let snapshot = detector.screen(usize::try_from(history).unwrap_or(usize::MAX));
    let mut screen = ScreenData {
        history: u32::try_from(snapshot.history).unwrap_or(u32::MAX),
        lines: snapshot.lines,
        cols: snapshot.size.0,
        rows: snapshot.size.1,
        cursor_row: snapshot.cursor.0,
        cursor_col: snapshot.cursor.1,
        alternate: snapshot.alternate,
    };
    screen.fit(MAX_SCREEN_BYTES);
    screen
}

/// Whether `bytes` are only keys that move through a menu (arrows, Home/End, Page Up/Down, Tab),
/// which answer no question.
fn moves_only(bytes: &[u8]) -> bool {
    let mut rest = bytes;
    while !rest.is_empty() {
        rest = match rest {
            [b'\t', tail @ ..] => tail,
            [0x1b, b'O', b'A'..=b'D' | b'H' | b'F', tail @ ..] => tail,
            [0x1b, b'[', tail @ ..] => {
                let params = tail
                    .iter()
                    .take_while(|b| b.is_ascii_digit() || **b == b';')
                    .count();
                match tail.get(params) {
                    Some(b'A'..=b'D' | b'H' | b'F' | b'Z' | b'~') => &tail[params + 1..],
                    _ => return false,
                }
            }
            _ => return false,
        };
    }
    !bytes.is_empty()
}

/// Unix time in milliseconds.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::moves_only;

    #[test]
    fn moving_through_a_menu_answers_nothing() {
        for keys in [
            &b"\x1b[B"[..],
            b"\x1b[A\x1b[A",
            b"\x1bOB",
            b"\t",
            b"\x1b[6~",
            b"\x1b[1;2B",
        ] {
            assert!(moves_only(keys), "{keys:?}");
        }
        for keys in [
            &b"1"[..],
            b"\r",
            b"y",
            b"\x1b",
            b"\x1b[B\r",
            b"",
            b"\x1b[200~x",
        ] {
            assert!(!moves_only(keys), "{keys:?}");
        }
    }
}
