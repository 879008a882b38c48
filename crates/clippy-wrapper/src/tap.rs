//! The tap's model of a session: the turn detector, the spool's batches, the session's
//! [`Progress`] and the tap's deadlines, with the clock passed in and what to send returned.
//!
//! The wrapper's tap thread (in `clippy-session`) owns the channels and reads the clock: it
//! hands each chunk of output and input to [`TapModel::take`] in the order they happened, calls
//! [`TapModel::expire`] before each, and [`TapModel::caught_up`] whenever its channel is empty,
//! then sends what these return ([`TapOutput`]) to the sink thread or back to the byte loop and
//! waits until [`Idle::wake_at`]. The rules live here:
//! - output quiet for [`QUIET`] tells the detector it is quiet, once per pause
//!   ([`TurnDetector::quiet`]); the pause runs from the last output that moved the screen
//!   ([`TurnDetector::screen_moved`], judged once output paused for [`RENDER_AFTER`] or the
//!   pause is due: an animated logo or a blinking cursor does not move it); under a flood
//!   (more than [`FLOOD_BYTES`] at [`FLOOD_RATE`] or faster, with no pause of [`FLOOD_PAUSE`]),
//!   only once it paused for [`FLOOD_PAUSE`], the pause is due, or the oldest output not
//!   judged came [`QUIET`] ago, and while it is still on it moves the screen without the screen
//!   being rendered for that (no agent at rest writes so fast): the pause runs from its last
//!   bytes as it would, and a flood is rendered once, after it (or when read);
//! - while a flood is on, the detector is told so ([`TurnDetector::flood`]): with no turn
//!   running it skims the flood's lines instead of judging each, and judges the lines it ended
//!   with once it paused for [`FLOOD_PAUSE`] (or before input, a hook's report or the quiet
//!   pause);
//! - a turn one source says ended waits [`AGREEMENT_GRACE`] for the other, then is settled
//!   ([`TurnDetector::settle`]); the detector itself keeps no clock;
//! - the screen renders in the tap's idle time once output paused for [`RENDER_AFTER`]; under a
//!   flood while no turn records, for [`FLOOD_PAUSE`] (what waits past 8 MiB is skipped);
//! - the spool is written in batches of [`SPOOL_BATCH`] (output handed over in half a batch or
//!   more goes as it is, not copied to be batched), and whenever the tap caught up (under a
//!   flood, at most every [`FLOOD_REPORTS`]), before a turn's span or a prompt's cursor is
//!   taken; a failing spool is reported once;
//! - progress is reported when it changed, once caught up (under a flood, at most every
//!   [`FLOOD_REPORTS`]); before a completed turn, the spool's
//!   growth and the counters that led to it go first, so nobody sees the turn with the state
//!   from before it;
//! - the agent's waiting state: set by its hook (or by the screen, for agents whose hooks do
//!   not say), numbered (a new wait takes the next id), cleared by a key other than moving
//!   through a menu, a prompt submitted or a turn end;
//! - answering it (`answer`): the dialog read from the live screen ([`crate::dialog`]), its
//!   keys handed to the byte loop, which writes them only if no person's input came in
//!   between ([`Tapped::AnswerWritten`]); a dialog the agent's hooks announced but has not
//!   drawn yet is waited for up to [`DIALOG_GRACE`]; the first answer wins.

use std::time::{Duration, Instant};

use clippy_hooks::Report;
use clippy_proto::{
    AnswerRecord, Decision, ErrorReason, MAX_SCREEN_BYTES, MAX_SCREEN_HISTORY, Mode, Progress,
    ScreenData, WaitingState,
};

use crate::dialog::{self, Meaning};
use clippy_turn::{AgentSignal, Event, Phase, Turn, TurnDetector};

/// How long a turn one source says ended waits for the other (the screen for the agent's hook,
/// or the reverse) before it ends anyway, as a disagreement (CONTRACTS/HOOKS.md).
pub const AGREEMENT_GRACE: Duration = Duration::from_secs(2);
/// How long output has to stop before the detector is told it is quiet
/// ([`TurnDetector::quiet`]): an agent at work animates (spinner, timer, streaming text) far
/// more often; one at rest writes nothing. `--replay` drives the same call from the
/// recording's timestamps ([`crate::replay::detect`]).
pub const QUIET: Duration = Duration::from_millis(400);
/// How long output has to pause before the tap renders the screen in its idle time: under a
/// flood, rendering as it goes would take a CPU from the byte path on a small machine.
pub const RENDER_AFTER: Duration = Duration::from_millis(5);
/// Output past this many bytes with no pause of [`FLOOD_PAUSE`], at [`FLOOD_RATE`] or faster,
/// is a flood: while it is on, it moves the screen for the quiet clock without the screen being
/// rendered to judge it ([`TurnDetector::screen_moved`]), and, while no turn records, the
/// screen is not rendered in idle time either, until output paused for [`FLOOD_PAUSE`]. It is
/// rendered whenever it is read all the same, and what waits past 8 MiB is skipped, as the lines of a flood leave the screen's
/// bounded history anyway (`clippy_screen::Screen::feed`). While no turn runs, the detector
/// skims its lines too ([`TurnDetector::flood`]) and judges those it ended with once it paused.
/// Under a long flood that leaves the tap the spool, and the CPU to the byte path (issue 29).
pub const FLOOD_BYTES: u64 = 1024 * 1024;
/// The least rate of a flood, in bytes a second: an agent's animation or a streamed reply,
/// however long, is far slower.
pub const FLOOD_RATE: u64 = 1024 * 1024;
/// The pause that ends a flood (see [`FLOOD_BYTES`]).
pub const FLOOD_PAUSE: Duration = Duration::from_millis(100);
/// How long an `answer` waits for the dialog of a wait to be drawn (the agent's hook may say
/// it waits a moment before its screen shows the dialog), counted from the wait's start.
pub const DIALOG_GRACE: Duration = Duration::from_secs(3);
/// Spool bytes are written in batches of up to this many (one write each), and whenever the
/// tap has caught up with the loop.
pub const SPOOL_BATCH: usize = 64 * 1024;
/// While a flood is on, what waits for the spool is written and the progress reported at most
/// this often when the tap catches up (a batch still goes whenever [`SPOOL_BATCH`] bytes wait,
/// and a flood's batches go as they come): the broker hears of a flood's growth a hundred
/// times a second, not at every hand-over of the byte loop, each of which woke the sink thread
/// (issue 29).
pub const FLOOD_REPORTS: Duration = Duration::from_millis(10);

/// Output with no pause of [`FLOOD_PAUSE`]: whether it is a flood ([`FLOOD_BYTES`]).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Run {
    bytes: u64,
    /// When its first and its last output came.
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Run {
    /// Output of `len` bytes came at `at`: after a pause of [`FLOOD_PAUSE`], a new run.
    pub(crate) fn add(&mut self, len: usize, at: Instant) {
        if self
            .last
            .is_none_or(|last| at.saturating_duration_since(last) >= FLOOD_PAUSE)
        {
            *self = Run {
                bytes: 0,
                first: Some(at),
                last: None,
            };
        }
        self.bytes = self.bytes.saturating_add(len as u64);
        self.last = Some(at);
    }

    /// Whether output came less than [`FLOOD_PAUSE`] before `now`.
    pub(crate) fn on(&self, now: Instant) -> bool {
        self.last
            .is_some_and(|last| now.saturating_duration_since(last) < FLOOD_PAUSE)
    }

    /// Whether the run is a flood: more than [`FLOOD_BYTES`], at [`FLOOD_RATE`] or faster.
    /// (It stays one after it paused, until the next run starts: what the pause ends is
    /// measured from its last output, `FLOOD_PAUSE` later.)
    pub(crate) fn flood(&self) -> bool {
        let (Some(first), Some(last)) = (self.first, self.last) else {
            return false;
        };
        let millis =
            u64::try_from(last.saturating_duration_since(first).as_millis()).unwrap_or(u64::MAX);
        self.bytes > FLOOD_BYTES
            && self.bytes.saturating_mul(1000) >= FLOOD_RATE.saturating_mul(millis)
    }
}

/// The time, as the caller's clocks read it: a monotonic instant for the deadlines, and Unix
/// milliseconds for the times reported (a turn's, a prompt's, a wait's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// The monotonic clock.
    pub instant: Instant,
    /// The wall clock, Unix time in milliseconds.
    pub unix_ms: u64,
}

/// The session's spool file as the model writes it: appends, and what it holds.
pub trait Spool {
    /// Why an append failed (reported once).
    type Error: std::fmt::Display;
    /// Appends output bytes, in stream order.
    fn append(&mut self, bytes: &[u8]) -> Result<(), Self::Error>;
    /// The spool's size in bytes, all readable.
    fn size(&self) -> u64;
    /// The spool offset of a raw stream offset (what the detector counts), when the spool
    /// holds it.
    fn spool_offset_of(&self, raw_offset: u64) -> Option<u64>;
}

/// An `answer_request` from the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerAsk {
    /// The broker's number for the request.
    pub request: u64,
    /// The decision.
    pub decision: Decision,
    /// Why, for a denial: typed at the agent's prompt once it shows it again.
    pub reason: Option<String>,
    /// The wait meant; `None`: the current one.
    pub waiting_id: Option<u64>,
    /// Who answers.
    pub by: String,
}

/// The wrapper's report on an [`AnswerAsk`] (`answer_report`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerReport {
    /// The broker's number for the request.
    pub request: u64,
    /// The wait answered (0 when none was).
    pub waiting_id: u64,
    /// Why it was not answered.
    pub refused: Option<ErrorReason>,
    /// What was pressed, or why nothing was.
    pub message: String,
}

/// What the byte loop hands the tap, in order.
#[derive(Debug)]
pub enum Tapped {
    /// Bytes the child wrote.
    Output(Vec<u8>),
    /// Bytes written to the child: from the user's terminal (`human`: the user's keys and the
    /// terminal's own reports, which the detector tells apart), or injected by the broker.
    Input {
        /// The bytes, as written.
        bytes: Vec<u8>,
        /// From a person's terminal, not injected.
        human: bool,
    },
    /// The terminal was resized.
    Resize {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// The broker asks for the screen (`screen_request` number `request`) with up to `history`
    /// lines of history: taken after everything handed over before it, so it shows all the
    /// output read so far.
    Screen {
        /// The broker's number for the request.
        request: u64,
        /// Lines of history asked for.
        history: u32,
    },
    /// The agent's hook reported, or sent something unreadable (why).
    Agent(Result<Report, String>),
    /// This many terminals are attached now (the loop's attach hub changed its count):
    /// reported in the progress ([`Progress::attached`]).
    Attached(u32),
    /// An attached client needs the screen drawn (`clippy_attach::HubAction::Redraw`): taken
    /// after everything handed over before it, answered with [`TapOutput::Redrawn`].
    Redraw {
        /// The attached client.
        client: u64,
        /// The hub's generation of the request.
        generation: u64,
    },
    /// The broker asks to answer the session's wait: answered with [`TapOutput::AnswerKeys`]
    /// (to the loop) or a refusal ([`TapOutput::Answer`]).
    Answer(AnswerAsk),
    /// The loop wrote the keys of [`TapOutput::AnswerKeys`] (handed over before the keys
    /// themselves, as input that is not a person's), or did not: a person's input reached it
    /// after the tap decided.
    AnswerWritten {
        /// The broker's number for the request.
        request: u64,
        /// Whether the keys were written.
        written: bool,
    },
}

/// What the tap sends, in order: to the sink thread (the first five) or back to the byte loop
/// (the last two).
#[derive(Debug)]
pub enum TapOutput {
    /// The spool grew or the session's state changed.
    Progress(Box<Progress>),
    /// A turn completed at `timestamp` (Unix ms); `spool_span` is its byte range in the spool.
    Turn {
        /// The turn.
        turn: Box<Turn>,
        /// Its bytes in the spool, when the spool holds them.
        spool_span: Option<(u64, u64)>,
        /// When it completed, Unix ms.
        timestamp: u64,
    },
    /// The child turned bracketed paste on or off.
    BracketedPaste(bool),
    /// The screen the broker asked for with `screen_request` number `request`.
    Screen {
        /// The broker's number for the request.
        request: u64,
        /// The screen.
        screen: Box<ScreenData>,
    },
    /// The spool could not be written (reported once; the session goes on).
    SpoolFailed(String),
    /// The screen rendered for an attached client.
    Redrawn {
        /// The attached client.
        client: u64,
        /// The hub's generation of the request.
        generation: u64,
        /// The bytes that draw it.
        screen: Vec<u8>,
    },
    /// What a terminal would have answered the program's queries (cursor position, device
    /// attributes, …): written to it when nobody's terminal answers them (a detached session
    /// with no interactive client).
    TerminalReplies(Vec<u8>),
    /// To the loop: write these keys to answer the dialog on screen, but only if the loop has
    /// handed over exactly `human_inputs` chunks of a person's input (nothing came since the
    /// tap decided); then say so with [`Tapped::AnswerWritten`].
    AnswerKeys {
        /// The broker's number for the request.
        request: u64,
        /// The keys.
        keys: Vec<u8>,
        /// The person's input chunks ([`Tapped::Input`] with `human`) the tap had taken.
        human_inputs: u64,
    },
    /// To the sink: the report on an `answer_request`.
    Answer(AnswerReport),
    /// To the loop: type this at the agent's prompt (a denial's reason, once the prompt is
    /// back), as injected input.
    Type(Vec<u8>),
}

/// An answer on its way: held for its dialog to be drawn, or its keys with the loop.
#[derive(Debug)]
struct Answering {
    ask: AnswerAsk,
    /// The wait it answers.
    waiting_id: u64,
    /// Until when it waits for the dialog to be drawn (`None`: its keys are with the loop).
    held_until: Option<Instant>,
    /// What the keys do, once decided.
    press: Option<dialog::Press>,
}

/// What [`TapModel::caught_up`] says.
#[derive(Debug)]
pub struct Idle {
    /// What to send.
    pub outputs: Vec<TapOutput>,
    /// The screen has more to render: call again unless something else came meanwhile.
    pub more: bool,
    /// When to look again if nothing comes (`None`: wait for the next chunk).
    pub wake_at: Option<Instant>,
}

/// The tap's model of a session, with no I/O: see the module's documentation.
///
/// ```
/// use std::time::{Duration, Instant};
/// use clippy_turn::{DetectorConfig, Preset, TurnDetector};
/// use clippy_wrapper::tap::{Now, QUIET, Spool, TapModel, TapOutput, Tapped};
///
/// /// A spool in memory.
/// struct Memory(Vec<u8>);
/// impl Spool for Memory {
///     type Error = std::convert::Infallible;
///     fn append(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
///         self.0.extend_from_slice(bytes);
///         Ok(())
///     }
///     fn size(&self) -> u64 { self.0.len() as u64 }
///     fn spool_offset_of(&self, raw: u64) -> Option<u64> { Some(raw) }
/// }
///
/// let detector = TurnDetector::new(DetectorConfig::new(Preset::named("generic")?));
/// let mut tap = TapModel::new(detector, Memory(Vec::new()), false);
/// let start = Instant::now();
/// let at = |ms: u64| Now { instant: start + Duration::from_millis(ms), unix_ms: 1_000 + ms };
/// let quiet = QUIET.as_millis() as u64;
/// // An agent no preset knows: its banner and prompt, still for a while (it is ready), then a
/// // question, an answer, and nothing more.
/// tap.take(Tapped::Output(b"Agent 1.0\r\n\r\n: ".to_vec()), at(0));
/// tap.caught_up(at(quiet));
/// tap.take(Tapped::Output(b"hello".to_vec()), at(1_000));
/// tap.take(Tapped::Input { bytes: b"hello\r".to_vec(), human: true }, at(1_010));
/// tap.take(Tapped::Output(b"\r\n\r\nHi there.\r\n\r\n: ".to_vec()), at(1_020));
/// // Caught up once output paused: the spool is written, the progress reported, the screen
/// // rendered; the tap wakes when the output has been quiet long enough.
/// let idle = tap.caught_up(at(1_030));
/// assert!(idle.outputs.iter().any(|o| matches!(o, TapOutput::Progress(p) if p.spool_size == 39)));
/// assert_eq!(idle.wake_at, Some(at(1_020 + quiet).instant));
/// // Quiet for that long: the screen is judged, and the turn ends.
/// let idle = tap.caught_up(at(1_020 + quiet));
/// let turn = idle.outputs.iter().find_map(|o| match o {
///     TapOutput::Turn { turn, timestamp, .. } => Some((turn.input.clone(), *timestamp)),
///     _ => None,
/// });
/// assert_eq!(turn, Some(("hello".to_owned(), 1_000 + 1_020 + quiet)));
/// # Ok::<(), clippy_turn::TurnError>(())
/// ```
#[derive(Debug)]
pub struct TapModel<S> {
    detector: TurnDetector,
    spool: S,
    /// Spool bytes not written yet.
    pending: Vec<u8>,
    /// The spool failed (and it was reported).
    spool_failed: bool,
    /// Where the session is now (`spool_size` and `mode` are filled in when reported).
    progress: Progress,
    /// What was last reported.
    reported: Option<Progress>,
    /// When a turn waiting for its two sources to agree ends anyway.
    settle_at: Option<Instant>,
    /// When output last came: the screen is rendered once it has paused.
    output_at: Option<Instant>,
    /// When the detector is told that output went quiet (once per pause).
    quiet_at: Option<Instant>,
    /// When the last output came that was not judged yet (whether it moved the screen).
    unjudged_output: Option<Instant>,
    /// When the oldest output not judged yet came.
    unjudged_since: Option<Instant>,
    /// The output since it last paused for [`FLOOD_PAUSE`]: how many bytes, since when.
    run: Run,
    /// While a flood is on: when the spool was last written and the progress reported on
    /// catching up ([`FLOOD_REPORTS`]).
    flood_reported_at: Option<Instant>,
    /// The latest wait's id (0: none yet).
    waiting_ids: u64,
    /// A person's input chunks taken ([`Tapped::Input`] with `human`).
    human_inputs: u64,
    /// The answer being given, if one is.
    answering: Option<Answering>,
    /// A denial's reason, to type at the agent's prompt once it is back.
    reason: Option<String>,
    /// The keys of an answer the loop wrote, still to come as input: the dialog's, not the
    /// start of the next question.
    answer_keys: Option<Vec<u8>>,
    /// The latest time given (Unix ms): when a turn that began since was first seen.
    now_ms: u64,
}

impl<S: Spool> TapModel<S> {
    /// The model of a session whose detector and spool are these; `hooks_wired`: the agent's
    /// hooks were wired for this run (reported in the progress).
    pub fn new(detector: TurnDetector, spool: S, hooks_wired: bool) -> Self {
        let mut progress = Progress::default();
        progress.hooks.wired = hooks_wired;
        Self {
            detector,
            spool,
            pending: Vec::with_capacity(SPOOL_BATCH),
            spool_failed: false,
            progress,
            reported: None,
            settle_at: None,
            output_at: None,
            quiet_at: None,
            unjudged_output: None,
            unjudged_since: None,
            run: Run::default(),
            flood_reported_at: None,
            waiting_ids: 0,
            human_inputs: 0,
            answering: None,
            reason: None,
            answer_keys: None,
            now_ms: 0,
        }
    }

    /// The deadlines due at `now`: a turn that waited [`AGREEMENT_GRACE`] for its two sources
    /// to agree ends. Called before each chunk is taken.
    pub fn expire(&mut self, now: Now) -> Vec<TapOutput> {
        self.now_ms = now.unix_ms;
        let mut out = Vec::new();
        if self.settle_at.is_some_and(|at| now.instant >= at) {
            self.settle_at = None;
            let events: Vec<Event> = self.detector.settle().collect();
            self.take_events(events, now, &mut out);
        }
        out
    }

    /// Takes one chunk from the byte loop, in order.
    pub fn take(&mut self, tapped: Tapped, now: Now) -> Vec<TapOutput> {
        self.now_ms = now.unix_ms;
        let mut out = Vec::new();
        let detected: Vec<Event> = match tapped {
            Tapped::Output(bytes) => return self.take_output(&bytes, now),
            Tapped::Input { bytes, human } => {
                if human {
                    self.human_inputs += 1;
                }
                // Read before the keys: the screen still shows what they answer.
                let waiting_id = self
                    .progress
                    .waiting
                    .as_ref()
                    .filter(|_| !moves_only(&bytes))
                    .map(|w| w.id);
                let answered_by = waiting_id.map(|id| (id, self.meaning_of_keys(&bytes)));
                // Keys clippy writes itself are whole: a lone Esc at their end (a dialog's
                // "no") is the Esc key, so the next key typed is not read as Alt+key.
                let events: Vec<Event> = if !human && bytes.ends_with(b"\x1b") {
                    let mut closed = bytes.clone();
                    closed.push(0);
                    self.detector.feed_input(&closed).collect()
                } else {
                    self.detector.feed_input(&bytes).collect()
                };
                let keys = events.iter().any(|e| matches!(e, Event::KeysPressed));
                if !human && self.answer_keys.as_ref() == Some(&bytes) {
                    self.answer_keys = None;
                    self.detector.forget_typed_line();
                }
                // The agent's question is answered: keys other than moving through its menu.
                if keys && !moves_only(&bytes) {
                    self.progress.waiting = None;
                    if let Some((waiting_id, decision)) = answered_by {
                        // Keys the dialog took are not the start of the next question.
                        self.detector.forget_typed_line();
                        self.progress.answered = Some(AnswerRecord {
                            waiting_id,
                            decision,
                            by: if human { "terminal" } else { "send" }.into(),
                        });
                    }
                }
                // Only a key is a person at work: focus events, mouse reports and the replies
                // to an agent's queries arrive on the same input, and counting them would
                // reset the routes' hop counts with nobody there (CONTRACTS/ROUTING.md).
                if human && keys {
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
                out.push(TapOutput::Screen {
                    request,
                    screen: Box::new(screen),
                });
                Vec::new()
            }
            Tapped::Agent(report) => self.agent_report(report, now),
            Tapped::Attached(count) => {
                self.progress.attached = count;
                Vec::new()
            }
            Tapped::Redraw { client, generation } => {
                let screen = self.detector.screen_redraw();
                out.push(TapOutput::Redrawn {
                    client,
                    generation,
                    screen,
                });
                Vec::new()
            }
            Tapped::Answer(ask) => {
                self.answer(ask, now, &mut out);
                Vec::new()
            }
            Tapped::AnswerWritten { request, written } => {
                self.answer_written(request, written, now, &mut out);
                Vec::new()
            }
        };
        self.take_events(detected, now, &mut out);
        self.forward_terminal_replies(&mut out);
        out
    }

    /// Takes output the child wrote, as [`TapModel::take`] takes [`Tapped::Output`], from a
    /// buffer the caller keeps (to use again: `crate::handover::Handover::give_back`).
    pub fn take_output(&mut self, bytes: &[u8], now: Now) -> Vec<TapOutput> {
        self.now_ms = now.unix_ms;
        let mut out = Vec::new();
        self.output_at = Some(now.instant);
        self.run.add(bytes.len(), now.instant);
        self.push_spool(bytes, &mut out);
        // Whether it moved the screen is judged once it is rendered (caught_up).
        self.unjudged_output = Some(now.instant);
        self.unjudged_since.get_or_insert(now.instant);
        // Under a flood the detector skims the lines while no turn runs, and judges those it
        // left at its end once it is over.
        let mut events: Vec<Event> = self.detector.flood(self.run.flood()).collect();
        events.extend(self.detector.feed_output(bytes));
        self.take_events(events, now, &mut out);
        self.forward_terminal_replies(&mut out);
        out
    }

    /// The tap has taken everything it was given: output quiet for [`QUIET`] is judged, the
    /// spool written, the progress reported if it changed, and, once output paused for
    /// [`RENDER_AFTER`] ([`FLOOD_PAUSE`] after a flood while no turn records), a step of the
    /// screen rendered.
    pub fn caught_up(&mut self, now: Now) -> Idle {
        self.now_ms = now.unix_ms;
        let mut out = Vec::new();
        // A flood that paused for `FLOOD_PAUSE` is over: the lines it ended with are judged
        // (before anything looks at its screen).
        if !self.run.on(now.instant) {
            let events: Vec<Event> = self.detector.flood(false).collect();
            self.take_events(events, now, &mut out);
        }
        let flood = self.run.flood();
        // Output not judged yet, once it paused long enough (`FLOOD_PAUSE` after a flood), the
        // pause is due, or under a flood the oldest of it came `QUIET` ago: whether it moved the
        // screen decides whether the pause runs from it. (This renders what is pending at once,
        // only while quiet output decides: see `judge_output`.) A flood moves the screen, and
        // is not rendered for that while it is on.
        let judge_at = self.judge_at(flood);
        if judge_at.is_some_and(|at| at <= now.instant) {
            if flood {
                self.flood_moved(now.instant);
            } else {
                self.judge_output();
            }
            self.forward_terminal_replies(&mut out);
        }
        let judge_at = self.judge_at(flood);
        // No output that moved the screen for `QUIET`: the detector judges its screen.
        if self.quiet_at.is_some_and(|at| now.instant >= at) {
            self.quiet_at = None;
            let events: Vec<Event> = self.detector.quiet().collect();
            self.take_events(events, now, &mut out);
            self.forward_terminal_replies(&mut out);
        }
        // An answer held for its dialog to be drawn looks at the screen again.
        if self
            .answering
            .as_ref()
            .is_some_and(|a| a.held_until.is_some())
        {
            self.retry_answer(now, &mut out);
        }
        // Readers of the spool see everything so far (under a flood, what came until the last
        // report, `FLOOD_REPORTS` ago at most). The screen renders in steps while nothing else
        // waits, once output has paused (a flood is rendered once it is over, and what a read
        // needs is rendered by that read).
        let flooding = flood && self.run.on(now.instant);
        let next_report = self
            .flood_reported_at
            .filter(|_| flooding)
            .map(|at| at + FLOOD_REPORTS)
            .filter(|at| *at > now.instant);
        if next_report.is_none() {
            self.flush_spool(&mut out);
            self.report_progress(&mut out);
            self.flood_reported_at = flooding.then_some(now.instant);
        }
        let pause = if flood && !self.detector.screen_recording() {
            FLOOD_PAUSE
        } else {
            RENDER_AFTER
        };
        let render_at = self
            .output_at
            .map(|at| at + pause)
            .filter(|at| *at > now.instant);
        let mut more = false;
        if render_at.is_none() {
            self.output_at = None;
            more = self.detector.catch_up_screen();
            self.forward_terminal_replies(&mut out);
        }
        let wake_at = if more {
            None
        } else {
            let held = self.answering.as_ref().and_then(|a| a.held_until);
            [
                self.settle_at,
                render_at,
                judge_at,
                self.quiet_at,
                held,
                next_report,
            ]
            .into_iter()
            .flatten()
            .min()
        };
        Idle {
            outputs: out,
            more,
            wake_at,
        }
    }

    /// When the output not judged yet is judged (`None`: there is none): once it paused for
    /// [`RENDER_AFTER`] — for [`FLOOD_PAUSE`] under a flood, or sooner when the quiet pause is
    /// due or the oldest of it came [`QUIET`] ago, so a flood's last bytes move the quiet
    /// deadline on at least that often.
    fn judge_at(&self, flood: bool) -> Option<Instant> {
        let last = self.unjudged_output?;
        let (paused, oldest) = if flood {
            (last + FLOOD_PAUSE, self.unjudged_since.map(|at| at + QUIET))
        } else {
            (last + RENDER_AFTER, None)
        };
        [Some(paused), self.quiet_at, oldest]
            .into_iter()
            .flatten()
            .min()
    }

    /// The output not judged yet is a flood's: it moved the screen (no agent at rest writes at
    /// [`FLOOD_RATE`]), so the quiet pause runs from it, and while the flood is on nothing is
    /// rendered for that. Once it paused, its screen is taken as the one the next output is
    /// judged against (this renders, only while quiet output decides).
    fn flood_moved(&mut self, now: Instant) {
        self.unjudged_since = None;
        if let Some(at) = self.unjudged_output.take() {
            self.quiet_at = Some(at + QUIET);
        }
        if !self.run.on(now) {
            self.detector.screen_moved();
        }
    }

    /// Judges the output taken since the last judgement: when it moved the screen (beyond an
    /// animation at rest), the quiet pause runs from it. The detector renders for this only
    /// while quiet output decides (`generic`, or a preset whose signals were not seen yet);
    /// otherwise every output moves the screen and nothing is rendered here.
    fn judge_output(&mut self) {
        self.unjudged_since = None;
        if let Some(at) = self.unjudged_output.take()
            && self.detector.screen_moved()
        {
            self.quiet_at = Some(at + QUIET);
        }
    }

    /// The loop is gone: the spool written, the last progress reported, and the spool handed
    /// back.
    pub fn finish(mut self) -> (S, Vec<TapOutput>) {
        let mut out = Vec::new();
        self.flush_spool(&mut out);
        self.report_progress(&mut out);
        (self.spool, out)
    }

    fn push_spool(&mut self, bytes: &[u8], out: &mut Vec<TapOutput>) {
        if self.pending.is_empty() && bytes.len() >= SPOOL_BATCH / 2 {
            // Big enough for a write of its own (a flood's batch): not copied to be batched.
            self.append_spool(bytes, out);
            return;
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= SPOOL_BATCH {
            self.flush_spool(out);
        }
    }

    fn flush_spool(&mut self, out: &mut Vec<TapOutput>) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        self.append_spool(&pending, out);
        self.pending = pending;
        self.pending.clear();
    }

    /// Appends to the spool; a failure is reported once.
    fn append_spool(&mut self, bytes: &[u8], out: &mut Vec<TapOutput>) {
        if let Err(e) = self.spool.append(bytes)
            && !self.spool_failed
        {
            self.spool_failed = true;
            out.push(TapOutput::SpoolFailed(e.to_string()));
        }
    }

    /// Hands the loop what a terminal would have answered the queries rendered since.
    fn forward_terminal_replies(&mut self, out: &mut Vec<TapOutput>) {
        let replies = self.detector.take_terminal_replies();
        if !replies.is_empty() {
            out.push(TapOutput::TerminalReplies(replies));
        }
    }

    /// Reports that the spool grew, the mode as last reported (busy if the turn ran unreported).
    /// Sent before a completed turn,
    /// which reaches the broker only once its text is rendered: the broker learns at once of
    /// the output that ended the turn (waits on it wake now) and of the keystrokes that led to
    /// it (a route counts its hops from the last one), always before the turn itself.
    fn report_spool_growth(&mut self, turn: &Turn, out: &mut Vec<TapOutput>) {
        let Some(reported) = &mut self.reported else {
            return;
        };
        // A turn that started and ended between two reports (a quick reply to a submission)
        // was never reported busy: the broker hears it busy, running the turn's input, until
        // the report after the turn says idle. Left as last reported (idle, before the
        // submission), the session would look idle at a prompt with the turn recorded but
        // its prompt not yet heard of: a client that acts on that idle (a route's next
        // handoff) would find it still taking the last one.
        let unreported_run =
            reported.mode == Mode::Idle && self.progress.inputs > reported.prompt_inputs;
        let (mode, input, busy_since) = if unreported_run {
            let input = (self.progress.input.clone())
                .or_else(|| Some(turn.input.clone()).filter(|i| !i.is_empty()));
            (Mode::Busy, input, Some(self.now_ms))
        } else {
            (
                reported.mode,
                self.progress.input.clone(),
                reported.busy_since,
            )
        };
        // The counters that lead to the turn go too: a keystroke that started it must reset
        // the routes' hop counts before the turn is handed over; and what the turn's end
        // changed (the waiting state gone, the hooks' turn ends counted), so that nobody sees
        // the turn with the state from before it.
        let early = Progress {
            spool_size: self.spool.size(),
            keystrokes: self.progress.keystrokes,
            inputs: self.progress.inputs,
            input,
            mode,
            busy_since,
            waiting: self.progress.waiting.clone(),
            hooks: self.progress.hooks.clone(),
            ..reported.clone()
        };
        if *reported != early {
            *reported = early.clone();
            out.push(TapOutput::Progress(Box::new(early)));
        }
    }

    /// Reports the progress if it changed since the last report.
    fn report_progress(&mut self, out: &mut Vec<TapOutput>) {
        self.progress.spool_size = self.spool.size();
        self.progress.mode = match self.detector.phase() {
            Phase::Starting => Mode::Starting,
            Phase::Idle => Mode::Idle,
            Phase::Busy => Mode::Busy,
        };
        // A turn's start is the time the tap first saw it busy: kept while it runs.
        self.progress.busy_since = match self.progress.mode {
            Mode::Busy => self.progress.busy_since.or(Some(self.now_ms)),
            _ => None,
        };
        self.progress.cwd = self.detector.cwd().map(str::to_owned);
        self.progress.prompt_unrecognised =
            self.progress.spool_size > 0 && !self.detector.prompt_recognised();
        if self.reported.as_ref() != Some(&self.progress) {
            self.reported = Some(self.progress.clone());
            out.push(TapOutput::Progress(Box::new(self.progress.clone())));
        }
    }

    /// What the agent's hook said: the detector takes turn ends and prompts; waiting is the
    /// session's state until the next key, prompt or turn end.
    fn agent_report(&mut self, report: Result<Report, String>, now: Now) -> Vec<Event> {
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
                // The agent saying again what it waits for (Claude Code's notification after
                // its permission request) is the same wait, the same dialog: it keeps its id
                // and start, and what the first report named.
                let same = self
                    .progress
                    .waiting
                    .take()
                    .filter(|before| before.kind == waiting.kind);
                let id = match &same {
                    Some(before) => before.id,
                    None => self.next_waiting_id(),
                };
                self.progress.waiting = Some(WaitingState {
                    id,
                    kind: waiting.kind.clone(),
                    tool: waiting
                        .tool
                        .clone()
                        .or_else(|| same.as_ref().and_then(|b| b.tool.clone())),
                    input: waiting
                        .input
                        .clone()
                        .or_else(|| same.as_ref().and_then(|b| b.input.clone())),
                    message: waiting
                        .message
                        .clone()
                        .or_else(|| same.as_ref().and_then(|b| b.message.clone())),
                    since: same.as_ref().map_or(now.unix_ms, |b| b.since),
                });
            }
            Report::TurnEnded { .. } | Report::Other { .. } => {}
        }
        match signal_of(&report) {
            Some(signal) => self.detector.feed_agent(signal).collect(),
            None => Vec::new(),
        }
    }

    /// The next wait's id.
    fn next_waiting_id(&mut self) -> u64 {
        self.waiting_ids += 1;
        self.waiting_ids
    }

    /// What `bytes` pick in the dialog on screen now, when they pick an option clippy reads.
    fn meaning_of_keys(&mut self, bytes: &[u8]) -> Option<Decision> {
        let screen = self.detector.screen(0);
        let dialog = dialog::read(&screen.lines, screen.cursor.0 as usize)?;
        match dialog.meaning_of_keys(bytes)? {
            Meaning::Allow => Some(Decision::Allow),
            Meaning::Always => Some(Decision::Always),
            Meaning::Deny => Some(Decision::Deny),
            Meaning::Other => None,
        }
    }

    /// `answer_request`: refused, held for its dialog, or its keys handed to the loop.
    fn answer(&mut self, ask: AnswerAsk, now: Now, out: &mut Vec<TapOutput>) {
        let refuse = |out: &mut Vec<TapOutput>, ask: &AnswerAsk, reason, message: String| {
            out.push(TapOutput::Answer(AnswerReport {
                request: ask.request,
                waiting_id: 0,
                refused: Some(reason),
                message,
            }));
        };
        let Some(waiting) = &self.progress.waiting else {
            let message = match (&self.progress.answered, ask.waiting_id) {
                (Some(last), Some(id)) if last.waiting_id == id => {
                    format!("wait #{id} was answered already (by {})", last.by)
                }
                _ => "the session waits for no answer".to_owned(),
            };
            return refuse(out, &ask, ErrorReason::NotWaiting, message);
        };
        if let Some(id) = ask.waiting_id
            && id != waiting.id
        {
            let message = if id < waiting.id {
                format!(
                    "wait #{id} is over; the session waits on #{} now",
                    waiting.id
                )
            } else {
                format!(
                    "there is no wait #{id}; the session waits on #{}",
                    waiting.id
                )
            };
            return refuse(out, &ask, ErrorReason::StaleAnswer, message);
        }
        if self.answering.is_some() {
            let message = format!("wait #{} is being answered already", waiting.id);
            return refuse(out, &ask, ErrorReason::NotWaiting, message);
        }
        if waiting.kind != "permission" {
            let message = format!(
                "the agent asks a question ({}), not a permission: answer it in its terminal \
                 or with clippy-ctl send",
                waiting.message.as_deref().unwrap_or("no text")
            );
            return refuse(out, &ask, ErrorReason::Unsupported, message);
        }
        let grace_ms = DIALOG_GRACE.as_millis() as u64;
        let left = (waiting.since + grace_ms).saturating_sub(now.unix_ms);
        self.answering = Some(Answering {
            waiting_id: waiting.id,
            ask,
            held_until: Some(now.instant + Duration::from_millis(left)),
            press: None,
        });
        self.retry_answer(now, out);
    }

    /// The held answer looks at the screen: its dialog's keys go to the loop, or it waits on,
    /// or it is refused (the wait is over, or no dialog was drawn in time).
    fn retry_answer(&mut self, now: Now, out: &mut Vec<TapOutput>) {
        let Some(answering) = self.answering.take() else {
            return;
        };
        let report = |refused, message: String| {
            TapOutput::Answer(AnswerReport {
                request: answering.ask.request,
                waiting_id: answering.waiting_id,
                refused: Some(refused),
                message,
            })
        };
        match &self.progress.waiting {
            Some(w) if w.id == answering.waiting_id => {}
            _ => {
                let by = self
                    .progress
                    .answered
                    .as_ref()
                    .filter(|a| a.waiting_id == answering.waiting_id)
                    .map_or_else(|| "the agent".to_owned(), |a| a.by.clone());
                out.push(report(
                    ErrorReason::NotWaiting,
                    format!(
                        "wait #{} was answered first (by {by})",
                        answering.waiting_id
                    ),
                ));
                return;
            }
        }
        let screen = self.detector.screen(0);
        let Some(dialog) = dialog::read(&screen.lines, screen.cursor.0 as usize) else {
            if answering
                .held_until
                .is_some_and(|until| now.instant < until)
            {
                self.answering = Some(answering);
            } else {
                out.push(report(
                    ErrorReason::Unsupported,
                    "clippy cannot read the dialog on the session's screen: look at it \
                     (clippy-ctl screen) and press its keys (clippy-ctl send)"
                        .into(),
                ));
            }
            return;
        };
        match dialog.press(answering.ask.decision) {
            Err(why) => out.push(report(ErrorReason::Unsupported, why)),
            Ok(press) => {
                out.push(TapOutput::AnswerKeys {
                    request: answering.ask.request,
                    keys: press.keys.clone(),
                    human_inputs: self.human_inputs,
                });
                self.answering = Some(Answering {
                    held_until: None,
                    press: Some(press),
                    ..answering
                });
            }
        }
    }

    /// The loop wrote the answer's keys, or a person's input came first.
    fn answer_written(&mut self, request: u64, written: bool, now: Now, out: &mut Vec<TapOutput>) {
        let Some(answering) = self
            .answering
            .take_if(|a| a.ask.request == request && a.held_until.is_none())
        else {
            return;
        };
        if !written {
            // Whatever the person's input did decides: if the wait is still on, look again.
            self.answering = Some(Answering {
                held_until: Some(now.instant),
                press: None,
                ..answering
            });
            return self.retry_answer(now, out);
        }
        let decision = answering.ask.decision;
        self.progress.waiting = None;
        self.progress.answered = Some(AnswerRecord {
            waiting_id: answering.waiting_id,
            decision: Some(decision),
            by: answering.ask.by.clone(),
        });
        if decision == Decision::Deny {
            self.reason = answering
                .ask
                .reason
                .clone()
                .filter(|r| !r.trim().is_empty());
        }
        // The broker hears the wait is over before the client hears it answered.
        self.report_progress(out);
        self.answer_keys = answering.press.as_ref().map(|p| p.keys.clone());
        let said = answering.press.map(|p| p.said).unwrap_or_default();
        out.push(TapOutput::Answer(AnswerReport {
            request,
            waiting_id: answering.waiting_id,
            refused: None,
            message: said,
        }));
    }

    /// Reports what the detector found.
    fn take_events(&mut self, detected: Vec<Event>, now: Now, out: &mut Vec<TapOutput>) {
        for event in detected {
            let output = match event {
                // The screen says the agent asks (agents whose hooks do not): waiting, unless
                // its hooks said so already, with more.
                Event::Asking { question } => {
                    if self.progress.waiting.is_none() {
                        let id = self.next_waiting_id();
                        self.progress.waiting = Some(WaitingState {
                            id,
                            kind: "permission".into(),
                            message: Some(question),
                            since: now.unix_ms,
                            ..WaitingState::default()
                        });
                    }
                    continue;
                }
                Event::AwaitingAgreement => {
                    self.settle_at = Some(now.instant + AGREEMENT_GRACE);
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
                    self.flush_spool(out);
                    self.report_spool_growth(&turn, out);
                    self.progress.turns = turn.seq;
                    let spool_span = self
                        .spool
                        .spool_offset_of(turn.start)
                        .zip(self.spool.spool_offset_of(turn.end));
                    TapOutput::Turn {
                        turn: Box::new(turn),
                        spool_span,
                        timestamp: now.unix_ms,
                    }
                }
                Event::BracketedPaste { enabled } => TapOutput::BracketedPaste(enabled),
                Event::Submitted { input } => {
                    self.progress.inputs += 1;
                    self.progress.input = Some(input);
                    continue;
                }
                Event::Prompt { offset, exit_code } => {
                    self.flush_spool(out);
                    self.progress.prompts += 1;
                    self.progress.input = None;
                    self.progress.prompt_inputs = self.progress.inputs;
                    self.progress.prompt_cursor = self.spool.spool_offset_of(offset);
                    // The latest prompt's own code: none when the shell reported none.
                    self.progress.exit_code = exit_code;
                    self.progress.prompt_timestamp = Some(now.unix_ms);
                    self.progress.prompt_text = self.detector.prompt_line();
                    // A denial's reason goes to the agent once its prompt is back.
                    if let Some(reason) = self.reason.take() {
                        let mut keys = reason.into_bytes();
                        keys.push(b'\r');
                        out.push(TapOutput::Type(keys));
                    }
                    continue;
                }
                _ => continue,
            };
            out.push(output);
        }
    }
}

/// What the detector takes from a hook's report: prompts, turn ends and waits (a dialog holds
/// the turn). What a wait is for is the session's business (the tap's); an event clippy does
/// not act on is nobody's. The one
/// place a [`Report`] becomes an [`AgentSignal`], for the live tap and `--replay` alike.
pub fn signal_of(report: &Report) -> Option<AgentSignal> {
    match report {
        Report::PromptSubmitted { prompt } => Some(AgentSignal::PromptSubmitted {
            prompt: prompt.clone(),
        }),
        Report::TurnEnded {
            message, prompts, ..
        } => Some(AgentSignal::TurnEnded {
            message: message.clone(),
            prompts: prompts.clone(),
        }),
        Report::Waiting(_) => Some(AgentSignal::Waiting),
        Report::Other { .. } => None,
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

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use clippy_turn::{AgentHooks, DetectorConfig, Preset};

    use super::*;

    /// A spool in memory the test can look into; `fail` makes every append fail.
    #[derive(Default, Clone)]
    struct Memory {
        bytes: Rc<RefCell<Vec<u8>>>,
        appends: Rc<RefCell<usize>>,
        fail: bool,
    }

    impl Spool for Memory {
        type Error = String;
        fn append(&mut self, bytes: &[u8]) -> Result<(), String> {
            *self.appends.borrow_mut() += 1;
            if self.fail {
                return Err("the disk is full".into());
            }
            self.bytes.borrow_mut().extend_from_slice(bytes);
            Ok(())
        }
        fn size(&self) -> u64 {
            self.bytes.borrow().len() as u64
        }
        fn spool_offset_of(&self, raw_offset: u64) -> Option<u64> {
            (raw_offset <= self.size()).then_some(raw_offset)
        }
    }

    /// A clock that starts at the test's start: `at(ms)` is `ms` milliseconds later.
    struct Clock(Instant);

    impl Clock {
        fn new() -> Self {
            Clock(Instant::now())
        }
        fn at(&self, ms: u64) -> Now {
            Now {
                instant: self.0 + Duration::from_millis(ms),
                unix_ms: 1_000_000 + ms,
            }
        }
    }

    fn model(preset: &str, hooks: AgentHooks, spool: Memory) -> TapModel<Memory> {
        let config =
            DetectorConfig::new(Preset::named(preset).expect("a preset")).agent_hooks(hooks);
        TapModel::new(TurnDetector::new(config), spool, hooks != AgentHooks::Off)
    }

    fn output(bytes: &[u8]) -> Tapped {
        Tapped::Output(bytes.to_vec())
    }

    fn typed(bytes: &[u8]) -> Tapped {
        Tapped::Input {
            bytes: bytes.to_vec(),
            human: true,
        }
    }

    fn turns(outputs: &[TapOutput]) -> Vec<&Turn> {
        outputs
            .iter()
            .filter_map(|o| match o {
                TapOutput::Turn { turn, .. } => Some(&**turn),
                _ => None,
            })
            .collect()
    }

    fn last_progress(outputs: &[TapOutput]) -> Option<&Progress> {
        outputs.iter().rev().find_map(|o| match o {
            TapOutput::Progress(progress) => Some(&**progress),
            _ => None,
        })
    }

    /// A turn of an agent no preset knows: its banner, still for [`QUIET`] (it is ready),
    /// then a question and its answer. Returns when the answer's last output came, in ms.
    fn unknown_agent_turn(tap: &mut TapModel<Memory>, clock: &Clock) -> u64 {
        let quiet = QUIET.as_millis() as u64;
        tap.take(output(b"Agent 1.0\r\n\r\n: "), clock.at(0));
        let render = RENDER_AFTER.as_millis() as u64;
        assert_eq!(
            tap.caught_up(clock.at(1)).wake_at,
            Some(clock.at(render).instant)
        );
        assert_eq!(
            tap.caught_up(clock.at(render)).wake_at,
            Some(clock.at(quiet).instant)
        );
        let ready = tap.caught_up(clock.at(quiet));
        let progress = last_progress(&ready.outputs).expect("a report");
        assert_eq!(
            progress.mode,
            Mode::Idle,
            "ready once its screen went still"
        );
        tap.take(output(b"hello"), clock.at(1000));
        tap.take(typed(b"hello\r"), clock.at(1010));
        tap.take(output(b"\r\n\r\nHi there.\r\n\r\n: "), clock.at(1020));
        1020
    }

    #[test]
    fn output_quiet_for_the_threshold_is_judged_and_not_a_moment_before() {
        let clock = Clock::new();
        let mut tap = model("generic", AgentHooks::Off, Memory::default());
        let end = unknown_agent_turn(&mut tap, &clock);
        let quiet = QUIET.as_millis() as u64;
        let idle = tap.caught_up(clock.at(end + quiet - 1));
        assert!(turns(&idle.outputs).is_empty(), "{:?}", idle.outputs);
        assert_eq!(idle.wake_at, Some(clock.at(end + quiet).instant));
        let idle = tap.caught_up(clock.at(end + quiet));
        let ended = turns(&idle.outputs);
        assert_eq!(ended.len(), 1, "{:?}", idle.outputs);
        assert_eq!(ended[0].input, "hello");
        assert!(
            idle.outputs.iter().any(|o| matches!(
                o,
                TapOutput::Turn { timestamp, .. } if *timestamp == clock.at(end + quiet).unix_ms
            )),
            "the turn is stamped with the wall clock passed in"
        );
        // Once per pause: nothing more to wait for.
        assert_eq!(tap.caught_up(clock.at(end + 2 * quiet)).wake_at, None);
    }

    #[test]
    fn new_output_puts_the_quiet_deadline_off() {
        let clock = Clock::new();
        let mut tap = model("generic", AgentHooks::Off, Memory::default());
        let end = unknown_agent_turn(&mut tap, &clock);
        // A spinner frame just before the deadline: the agent is still at work.
        let quiet = QUIET.as_millis() as u64;
        tap.take(output(b"."), clock.at(end + quiet - 1));
        let idle = tap.caught_up(clock.at(end + quiet));
        assert!(turns(&idle.outputs).is_empty(), "{:?}", idle.outputs);
        assert_eq!(
            idle.wake_at,
            Some(clock.at(end + quiet + 4).instant),
            "its render first"
        );
        let idle = tap.caught_up(clock.at(end + quiet + 4));
        assert_eq!(idle.wake_at, Some(clock.at(end + 2 * quiet - 1).instant));
    }

    /// Whether `outputs` hold the answers of a terminal: the screen rendered a query.
    fn rendered(outputs: &[TapOutput]) -> bool {
        outputs
            .iter()
            .any(|o| matches!(o, TapOutput::TerminalReplies(_)))
    }

    /// Text lines in chunks of `size` bytes, `count` of them `every` ms apart from `start` ms
    /// on, each followed by the tap catching up a little later (its pauses, longer than
    /// [`RENDER_AFTER`] and shorter than [`FLOOD_PAUSE`]); then a cursor-position query, whose
    /// answer says when the screen rendered. Returns when the query came.
    fn flood(
        tap: &mut TapModel<Memory>,
        clock: &Clock,
        (start, every, count): (u64, u64, u64),
        size: usize,
    ) -> u64 {
        let line = b"lorem ipsum dolor sit amet, consectetur adipiscing elit\r\n";
        let chunk: Vec<u8> = line.iter().copied().cycle().take(size).collect();
        let pause = RENDER_AFTER.as_millis() as u64 + 1;
        assert!(every > pause && every < FLOOD_PAUSE.as_millis() as u64);
        let mut at = start;
        for _ in 0..count {
            tap.take(output(&chunk), clock.at(at));
            tap.caught_up(clock.at(at + pause));
            at += every;
        }
        tap.take(output(b"\x1b[6n"), clock.at(at));
        at
    }

    #[test]
    fn a_flood_with_no_turn_recording_renders_once_it_paused_for_the_flood_pause() {
        let clock = Clock::new();
        let mut tap = model("generic", AgentHooks::Off, Memory::default());
        // 2 MiB at 4 MiB a second, in 32 KiB chunks with short pauses between.
        let last = flood(&mut tap, &clock, (0, 8, 64), 32 * 1024);
        assert!(tap.run.flood());
        assert!(!tap.detector.screen_recording());
        let render = RENDER_AFTER.as_millis() as u64;
        let idle = tap.caught_up(clock.at(last + render));
        assert!(!rendered(&idle.outputs), "not after the short pause");
        let pause = FLOOD_PAUSE.as_millis() as u64;
        assert_eq!(idle.wake_at, Some(clock.at(last + pause).instant));
        let mut idle = tap.caught_up(clock.at(last + pause));
        let mut outputs = std::mem::take(&mut idle.outputs);
        while idle.more {
            idle = tap.caught_up(clock.at(last + pause));
            outputs.append(&mut idle.outputs);
        }
        assert!(rendered(&outputs), "rendered once the flood paused");
        // The next output after the pause starts a new run: a short burst renders soon again.
        tap.take(output(b"$ \x1b[6n"), clock.at(last + 1000));
        let idle = tap.caught_up(clock.at(last + 1000 + render));
        assert!(rendered(&idle.outputs));
    }

    #[test]
    fn a_flood_still_on_is_not_rendered_for_the_quiet_clock() {
        let clock = Clock::new();
        let mut tap = model("generic", AgentHooks::Off, Memory::default());
        let quiet = QUIET.as_millis() as u64;
        // A flood, then a query in it, then more of it for three times QUIET.
        let query = flood(&mut tap, &clock, (0, 8, 64), 32 * 1024);
        let chunk = [b'x'; 32 * 1024];
        let mut at = query;
        while at < query + 3 * quiet {
            at += 8;
            tap.take(output(&chunk), clock.at(at));
            let idle = tap.caught_up(clock.at(at + 6));
            assert!(!rendered(&idle.outputs), "rendered at {at} ms");
            assert!(
                idle.wake_at
                    .is_some_and(|wake| wake <= clock.at(at + quiet).instant)
            );
        }
        // Once it paused, it is rendered (and judged).
        let pause = FLOOD_PAUSE.as_millis() as u64;
        let idle = tap.caught_up(clock.at(at + pause));
        assert!(rendered(&idle.outputs));
        assert_eq!(idle.wake_at, Some(clock.at(at + quiet).instant));
    }

    #[test]
    fn a_flood_in_a_recorded_turn_renders_after_the_short_pause() {
        let clock = Clock::new();
        let mut tap = model("shell", AgentHooks::Off, Memory::default());
        tap.take(output(b"$ "), clock.at(0));
        tap.take(typed(b"cat big\r"), clock.at(10));
        tap.take(output(b"cat big\r\n"), clock.at(11));
        assert!(
            tap.detector.screen_recording(),
            "the command's turn records"
        );
        let last = flood(&mut tap, &clock, (20, 8, 64), 32 * 1024);
        assert!(tap.run.flood());
        let render = RENDER_AFTER.as_millis() as u64;
        let mut idle = tap.caught_up(clock.at(last + render));
        let mut outputs = std::mem::take(&mut idle.outputs);
        while idle.more {
            idle = tap.caught_up(clock.at(last + render));
            outputs.append(&mut idle.outputs);
        }
        assert!(rendered(&outputs), "the turn's screen is kept up");
    }

    #[test]
    fn a_flood_with_no_turn_is_judged_by_the_lines_it_ends_with_once_it_paused() {
        let clock = Clock::new();
        let mut tap = model("python", AgentHooks::Off, Memory::default());
        let mode = |outputs: &[TapOutput]| last_progress(outputs).map(|p| p.mode);
        // A program that prints 2 MiB at 4 MiB a second before its prompt, with a line like
        // its prompt in the middle: that line scrolls away unjudged.
        let mid = flood(&mut tap, &clock, (0, 8, 32), 32 * 1024);
        tap.take(output(b"\r\n>>> \r\n"), clock.at(mid));
        let last = flood(&mut tap, &clock, (mid + 8, 8, 32), 32 * 1024);
        assert!(tap.run.flood());
        tap.take(output(b"\r\n>>> "), clock.at(last));
        let render = RENDER_AFTER.as_millis() as u64;
        let idle = tap.caught_up(clock.at(last + render));
        assert_ne!(mode(&idle.outputs), Some(Mode::Idle), "not judged yet");
        // Once it paused, the prompt it ended with is found: ready.
        let pause = FLOOD_PAUSE.as_millis() as u64;
        let idle = tap.caught_up(clock.at(last + pause));
        assert_eq!(mode(&idle.outputs), Some(Mode::Idle));
        // The turn after it is exact.
        tap.take(typed(b"6*7\r"), clock.at(last + 1000));
        let outputs = tap.take(output(b"6*7\r\n42\r\n>>> "), clock.at(last + 1010));
        let ended = turns(&outputs);
        assert_eq!(ended.len(), 1, "{outputs:?}");
        assert_eq!(
            (ended[0].input.as_str(), ended[0].text()),
            ("6*7", "42".into())
        );
    }

    #[test]
    fn under_a_flood_the_spool_is_written_and_reported_at_most_every_flood_reports() {
        let clock = Clock::new();
        let spool = Memory::default();
        let mut tap = model("generic", AgentHooks::Off, spool.clone());
        let line = b"lorem ipsum dolor sit amet, consectetur adipiscing elit\r\n";
        let chunk: Vec<u8> = line.iter().copied().cycle().take(8 * 1024).collect();
        // 8 KiB a millisecond, caught up after each: a flood once past `FLOOD_BYTES`.
        // (when, the spool size reported)
        let mut reports: Vec<(u64, u64)> = Vec::new();
        let mut wake_at = None;
        for ms in 0..300 {
            tap.take(output(&chunk), clock.at(ms));
            let idle = tap.caught_up(clock.at(ms));
            wake_at = idle.wake_at;
            for output in idle.outputs {
                if let TapOutput::Progress(progress) = output {
                    reports.push((ms, progress.spool_size));
                }
            }
        }
        let flood_from = FLOOD_BYTES / chunk.len() as u64 + 1;
        let (before, during): (Vec<_>, Vec<_>) =
            reports.into_iter().partition(|(ms, _)| *ms < flood_from);
        assert_eq!(
            before.len() as u64,
            flood_from,
            "one a chunk before the flood"
        );
        let every = FLOOD_REPORTS.as_millis() as u64;
        for pair in during.windows(2) {
            assert_eq!(pair[1].0 - pair[0].0, every, "{during:?}");
        }
        assert!(during.len() as u64 >= (300 - flood_from) / every);
        // Once it paused, the last of it is reported when the next report is due.
        let (last_report, _) = during.last().copied().expect("reports");
        let due = clock.at(last_report + every);
        assert_eq!(wake_at, Some(due.instant));
        let idle = tap.caught_up(due);
        let total = 300 * chunk.len() as u64;
        assert!(
            idle.outputs
                .iter()
                .any(|o| matches!(o, TapOutput::Progress(p) if p.spool_size == total))
        );
        assert_eq!(spool.size(), total);
    }

    #[test]
    fn a_slow_stream_is_no_flood_however_long() {
        let clock = Clock::new();
        let mut tap = model("generic", AgentHooks::Off, Memory::default());
        // 2 MiB with no pause of FLOOD_PAUSE, at 512 KiB a second.
        let last = flood(&mut tap, &clock, (0, 64, 64), 32 * 1024);
        assert!(!tap.run.flood());
        let render = RENDER_AFTER.as_millis() as u64;
        let idle = tap.caught_up(clock.at(last + render));
        assert!(rendered(&idle.outputs), "rendered after the short pause");
    }

    #[test]
    fn under_a_flood_the_quiet_deadline_follows_its_last_output() {
        let clock = Clock::new();
        let mut tap = model("generic", AgentHooks::Off, Memory::default());
        let quiet = QUIET.as_millis() as u64;
        // 1.5 s of output at 2 MiB a second: longer than QUIET, and a flood from 0.5 s on.
        let mut at = 0;
        for _ in 0..250 {
            tap.take(output(&[b'x'; 12 * 1024]), clock.at(at));
            let idle = tap.caught_up(clock.at(at + 5));
            let mode = last_progress(&idle.outputs).map(|p| p.mode);
            assert_ne!(mode, Some(Mode::Idle), "not quiet at {at} ms");
            // The quiet deadline is judged at least once per QUIET.
            assert!(
                idle.wake_at
                    .is_some_and(|wake| wake <= clock.at(at + quiet).instant)
            );
            at += 6;
        }
        assert!(tap.run.flood());
        let last = at - 6;
        // After the flood, the pause runs from its last output, to the millisecond.
        let idle = tap.caught_up(clock.at(last + 100));
        assert_eq!(idle.wake_at, Some(clock.at(last + quiet).instant));
        let idle = tap.caught_up(clock.at(last + quiet - 1));
        assert!(last_progress(&idle.outputs).is_none_or(|p| p.mode != Mode::Idle));
        let idle = tap.caught_up(clock.at(last + quiet));
        let progress = last_progress(&idle.outputs).expect("a report");
        assert_eq!(progress.mode, Mode::Idle, "ready once the flood went quiet");
    }

    #[test]
    fn an_animated_logo_and_a_blinking_cursor_do_not_put_the_quiet_deadline_off() {
        let clock = Clock::new();
        let mut tap = model("generic", AgentHooks::Off, Memory::default());
        let quiet = QUIET.as_millis() as u64;
        // A banner with a Braille logo, still for QUIET: ready.
        tap.take(
            output("\u{28e0}\u{2812} Agent\r\n\r\n: ".as_bytes()),
            clock.at(0),
        );
        tap.caught_up(clock.at(5));
        tap.caught_up(clock.at(quiet));
        tap.take(output(b"hello"), clock.at(1000));
        tap.take(typed(b"hello\r"), clock.at(1010));
        let end = 1020;
        tap.take(output(b"\r\n\r\nHi there.\r\n\r\n: "), clock.at(end));
        let render = RENDER_AFTER.as_millis() as u64;
        assert_eq!(
            tap.caught_up(clock.at(end + render)).wake_at,
            Some(clock.at(end + quiet).instant)
        );
        // At rest, the logo cycles and the cursor blinks more often than QUIET.
        let logo = "\x1b7\x1b[1;1H\u{2812}\u{28e0}\x1b8";
        for (n, at) in (end + 150..end + quiet).step_by(150).enumerate() {
            let frame: &[u8] = if n % 2 == 0 {
                logo.as_bytes()
            } else {
                b"\x1b[?25l\x1b[?25h"
            };
            assert!(turns(&tap.take(output(frame), clock.at(at))).is_empty());
            let idle = tap.caught_up(clock.at(at + render));
            assert!(turns(&idle.outputs).is_empty(), "{:?}", idle.outputs);
            assert_eq!(idle.wake_at, Some(clock.at(end + quiet).instant));
        }
        let idle = tap.caught_up(clock.at(end + quiet));
        let ended = turns(&idle.outputs);
        assert_eq!(ended.len(), 1, "{:?}", idle.outputs);
        assert_eq!(ended[0].input, "hello");
        assert_eq!(ended[0].text(), "Hi there.");
    }

    /// A shell with the agent's hooks on: its screen shows the turn ended at 20 ms.
    fn screen_ended(tap: &mut TapModel<Memory>, clock: &Clock) {
        tap.take(output(b"$ "), clock.at(0));
        tap.take(typed(b"ask\r"), clock.at(10));
        let out = tap.take(output(b"ask\r\nanswer\r\n$ "), clock.at(20));
        assert!(
            turns(&out).is_empty(),
            "the turn waits for the hook: {out:?}"
        );
    }

    #[test]
    fn a_turn_waiting_for_the_other_source_ends_after_the_grace_and_not_before() {
        let clock = Clock::new();
        let mut tap = model("shell", AgentHooks::On, Memory::default());
        screen_ended(&mut tap, &clock);
        let grace = AGREEMENT_GRACE.as_millis() as u64;
        let idle = tap.caught_up(clock.at(21));
        assert!(turns(&idle.outputs).is_empty());
        // The earliest deadline first (the screen's render, the quiet), the grace among them.
        assert!(
            idle.wake_at
                .is_some_and(|at| at <= clock.at(20 + grace).instant)
        );
        assert!(tap.expire(clock.at(20 + grace - 1)).is_empty());
        let out = tap.expire(clock.at(20 + grace));
        let ended = turns(&out);
        assert_eq!(ended.len(), 1, "{out:?}");
        assert!(!ended[0].ended_by_agent);
        let idle = tap.caught_up(clock.at(20 + grace));
        let progress = last_progress(&idle.outputs).expect("a progress report");
        assert_eq!(progress.hooks.disagreements, 1, "{progress:?}");
        assert!(progress.hooks.wired);
        assert!(
            tap.expire(clock.at(20 + 2 * grace)).is_empty(),
            "settled once"
        );
    }

    #[test]
    fn the_agents_word_within_the_grace_ends_the_turn_and_nothing_is_settled() {
        let clock = Clock::new();
        let mut tap = model("shell", AgentHooks::On, Memory::default());
        screen_ended(&mut tap, &clock);
        let ended = Report::TurnEnded {
            message: None,
            failed: false,
            prompts: Vec::new(),
        };
        let out = tap.take(Tapped::Agent(Ok(ended)), clock.at(100));
        assert_eq!(turns(&out).len(), 1, "{out:?}");
        assert!(turns(&out)[0].ended_by_agent);
        let grace = AGREEMENT_GRACE.as_millis() as u64;
        assert!(tap.expire(clock.at(20 + grace)).is_empty());
        let idle = tap.caught_up(clock.at(20 + grace));
        let progress = last_progress(&idle.outputs).expect("a progress report");
        assert_eq!(
            (
                progress.hooks.reports,
                progress.hooks.turn_ends,
                progress.hooks.disagreements
            ),
            (1, 1, 0)
        );
    }

    #[test]
    fn a_turn_reports_when_it_began_until_it_ends_and_the_attached_count_is_reported() {
        let clock = Clock::new();
        let mut tap = model("shell", AgentHooks::Off, Memory::default());
        tap.take(output(b"$ "), clock.at(0));
        let idle = tap.caught_up(clock.at(1));
        let progress = last_progress(&idle.outputs).expect("the first report");
        assert_eq!((progress.mode, progress.busy_since), (Mode::Idle, None));

        tap.take(typed(b"sleep 9\r"), clock.at(10));
        let busy = tap.caught_up(clock.at(12));
        let progress = last_progress(&busy.outputs).expect("busy reported");
        assert_eq!(progress.mode, Mode::Busy);
        assert_eq!(progress.busy_since, Some(clock.at(12).unix_ms));
        // Later reports of the same turn keep its start.
        tap.take(output(b"sleep 9\r\n"), clock.at(500));
        tap.take(Tapped::Attached(2), clock.at(600));
        let later = tap.caught_up(clock.at(700));
        let progress = last_progress(&later.outputs).expect("the attached count reported");
        assert_eq!(progress.busy_since, Some(clock.at(12).unix_ms));
        assert_eq!(progress.attached, 2);

        tap.take(output(b"$ "), clock.at(9_000));
        let done = tap.caught_up(clock.at(9_001));
        let progress = last_progress(&done.outputs).expect("idle reported");
        assert_eq!((progress.mode, progress.busy_since), (Mode::Idle, None));
        assert_eq!(progress.attached, 2);
        tap.take(Tapped::Attached(0), clock.at(9_100));
        let detached = tap.caught_up(clock.at(9_101));
        assert_eq!(
            last_progress(&detached.outputs).map(|p| p.attached),
            Some(0)
        );
    }

    #[test]
    fn the_spool_growth_and_the_keys_that_led_to_a_turn_are_reported_before_it() {
        let clock = Clock::new();
        let spool = Memory::default();
        let mut tap = model("shell", AgentHooks::Off, spool.clone());
        tap.take(output(b"$ "), clock.at(0));
        let first = tap.caught_up(clock.at(1));
        let progress = last_progress(&first.outputs).expect("the first report");
        assert_eq!((progress.spool_size, progress.mode), (2, Mode::Idle));
        assert_eq!(progress.prompt_cursor, Some(0));
        assert_eq!(progress.prompt_timestamp, Some(clock.at(0).unix_ms));
        // Unchanged: not reported again.
        assert!(last_progress(&tap.caught_up(clock.at(2)).outputs).is_none());

        tap.take(typed(b"ls\r"), clock.at(10));
        let out = tap.take(output(b"ls\r\nfile\r\n$ "), clock.at(20));
        let (early, turn) = match &out[..] {
            [
                TapOutput::Progress(early),
                TapOutput::Turn {
                    turn, spool_span, ..
                },
                ..,
            ] => (early, (turn, spool_span)),
            other => panic!("{other:?}"),
        };
        // The spool holds the turn when the broker hears of it.
        assert_eq!(early.spool_size, spool.size());
        assert_eq!(spool.size(), 2 + 12);
        assert_eq!((early.keystrokes, early.inputs), (1, 1));
        // The turn ran between two reports: the broker hears it busy with it, not idle at
        // the prompt before it, until the report after the turn.
        assert_eq!(
            (early.mode, early.input.as_deref(), early.prompt_inputs),
            (Mode::Busy, Some("ls"), 0)
        );
        assert_eq!(early.busy_since, Some(clock.at(20).unix_ms));
        assert_eq!(turn.0.input, "ls");
        assert_eq!(*turn.1, Some((turn.0.start, turn.0.end)));
        let idle = tap.caught_up(clock.at(21));
        let progress = last_progress(&idle.outputs).expect("the state after the turn");
        assert_eq!(
            (progress.turns, progress.prompts, progress.input.as_deref()),
            (1, 2, None)
        );
        assert_eq!(progress.prompt_inputs, 1);
        assert_eq!(progress.mode, Mode::Idle);

        // Busy reported before the turn: the early report leaves the mode as it was.
        tap.take(typed(b"pwd\r"), clock.at(30));
        let busy = tap.caught_up(clock.at(31));
        let busy = last_progress(&busy.outputs).expect("busy reported");
        assert_eq!(
            (busy.mode, busy.busy_since),
            (Mode::Busy, Some(clock.at(31).unix_ms))
        );
        let out = tap.take(output(b"pwd\r\n/\r\n$ "), clock.at(40));
        let early = last_progress(&out).expect("the early report");
        assert_eq!(
            (early.mode, early.busy_since, early.inputs),
            (Mode::Busy, Some(clock.at(31).unix_ms), 2)
        );
    }

    #[test]
    fn the_spool_is_written_in_batches_and_whenever_the_tap_caught_up() {
        let clock = Clock::new();
        let spool = Memory::default();
        let mut tap = model("generic", AgentHooks::Off, spool.clone());
        tap.take(output(&[b'x'; 100]), clock.at(0));
        assert_eq!(spool.size(), 0, "a small chunk waits for its batch");
        tap.take(output(&vec![b'y'; SPOOL_BATCH]), clock.at(1));
        assert_eq!(
            spool.size(),
            100 + SPOOL_BATCH as u64,
            "a full batch goes at once"
        );
        tap.take(output(b"z"), clock.at(2));
        tap.caught_up(clock.at(3));
        assert_eq!(
            spool.size(),
            101 + SPOOL_BATCH as u64,
            "caught up: all of it"
        );
        assert_eq!(*spool.appends.borrow(), 2);
        let (spool, out) = tap.finish();
        assert_eq!(*spool.appends.borrow(), 2, "nothing left to write");
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_failing_spool_is_reported_once_and_the_session_goes_on() {
        let clock = Clock::new();
        let spool = Memory {
            fail: true,
            ..Memory::default()
        };
        let mut tap = model("shell", AgentHooks::Off, spool);
        // The prompt's cursor is taken through the spool: written, and failed, at once.
        let first = tap.take(output(b"$ "), clock.at(0));
        assert!(
            matches!(&first[..], [TapOutput::SpoolFailed(why)] if why == "the disk is full"),
            "{first:?}"
        );
        let idle = tap.caught_up(clock.at(1));
        assert!(
            !idle
                .outputs
                .iter()
                .any(|o| matches!(o, TapOutput::SpoolFailed(_)))
        );
        tap.take(typed(b"ls\r"), clock.at(10));
        let out = tap.take(output(b"ls\r\nfile\r\n$ "), clock.at(20));
        assert!(
            !out.iter().any(|o| matches!(o, TapOutput::SpoolFailed(_))),
            "{out:?}"
        );
        let ended = out.iter().find_map(|o| match o {
            TapOutput::Turn { spool_span, .. } => Some(*spool_span),
            _ => None,
        });
        assert_eq!(
            ended,
            Some(None),
            "a turn the spool does not hold has no span"
        );
    }

    #[test]
    fn the_screen_renders_once_output_paused_and_its_answers_go_to_the_loop() {
        let clock = Clock::new();
        let mut tap = model("generic", AgentHooks::Off, Memory::default());
        // A program asks its terminal where the cursor is.
        let out = tap.take(output(b"hi\x1b[6n"), clock.at(0));
        assert!(out.is_empty(), "{out:?}");
        let render = RENDER_AFTER.as_millis() as u64;
        let idle = tap.caught_up(clock.at(render - 1));
        assert!(
            !idle
                .outputs
                .iter()
                .any(|o| matches!(o, TapOutput::TerminalReplies(_))),
            "not rendered while output may still come: {:?}",
            idle.outputs
        );
        assert_eq!(idle.wake_at, Some(clock.at(render).instant));
        let idle = tap.caught_up(clock.at(render));
        let replies: Vec<&Vec<u8>> = idle
            .outputs
            .iter()
            .filter_map(|o| match o {
                TapOutput::TerminalReplies(replies) => Some(replies),
                _ => None,
            })
            .collect();
        assert_eq!(replies, [&b"\x1b[1;3R".to_vec()]);
        assert!(!idle.more);
        assert_eq!(
            idle.wake_at,
            Some(clock.at(QUIET.as_millis() as u64).instant)
        );
    }

    #[test]
    fn a_hooks_wait_holds_until_a_key_that_answers() {
        let clock = Clock::new();
        let mut tap = model("shell", AgentHooks::On, Memory::default());
        tap.take(output(b"$ "), clock.at(0));
        let waiting = clippy_hooks::Waiting {
            kind: "permission".into(),
            tool: Some("Bash".into()),
            input: None,
            message: Some("Run ls?".into()),
        };
        tap.take(Tapped::Agent(Ok(Report::Waiting(waiting))), clock.at(5));
        let idle = tap.caught_up(clock.at(6));
        let progress = last_progress(&idle.outputs).expect("a report");
        let state = progress.waiting.as_ref().expect("waiting");
        assert_eq!(
            (state.kind.as_str(), state.since),
            ("permission", clock.at(5).unix_ms)
        );
        // Moving through the agent's menu answers nothing; injected keys are no person's.
        tap.take(typed(b"\x1b[B"), clock.at(7));
        let progress = tap.caught_up(clock.at(8));
        let progress = last_progress(&progress.outputs).expect("a key was counted");
        assert!(progress.waiting.is_some());
        assert_eq!(progress.keystrokes, 1);
        tap.take(
            Tapped::Input {
                bytes: b"y".to_vec(),
                human: false,
            },
            clock.at(9),
        );
        let idle = tap.caught_up(clock.at(10));
        let progress = last_progress(&idle.outputs).expect("the wait was answered");
        assert!(progress.waiting.is_none());
        assert_eq!(
            progress.keystrokes, 1,
            "injected input is not a person's key"
        );
        // Something unreadable from the hook socket is counted, nothing more.
        tap.take(Tapped::Agent(Err("garbage".into())), clock.at(11));
        let idle = tap.caught_up(clock.at(12));
        let hooks = &last_progress(&idle.outputs).expect("counted").hooks;
        assert_eq!((hooks.reports, hooks.rejected), (1, 1));
    }

    /// The agent's hook says it waits on a permission.
    fn permission_asked() -> Tapped {
        let waiting = clippy_hooks::Waiting {
            kind: "permission".into(),
            tool: None,
            input: None,
            message: None,
        };
        Tapped::Agent(Ok(Report::Waiting(waiting)))
    }

    /// The key that answered a dialog (`1`, no Enter) was the dialog's: the next question typed
    /// at the prompt is the question alone, whenever its echo reaches the screen.
    #[test]
    fn the_key_that_answers_a_dialog_is_not_the_start_of_the_next_question() {
        let clock = Clock::new();
        let mut tap = model("shell", AgentHooks::Off, Memory::default());
        tap.take(output(b"$ "), clock.at(0));
        tap.take(typed(b"ask\r"), clock.at(1));
        tap.take(output(b"ask\r\nRun it? 1. Yes 2. No\r\n"), clock.at(2));
        tap.take(permission_asked(), clock.at(3));
        tap.take(typed(b"1"), clock.at(4));
        tap.take(output(b"ran it\r\n$ "), clock.at(5));
        // Enter before the agent echoed the question: only the keys say what it was.
        tap.take(typed(b"next\r"), clock.at(6));
        let out = tap.take(output(b"next\r\nread\r\n$ "), clock.at(7));
        let outputs = [tap.caught_up(clock.at(8)).outputs, out];
        let inputs: Vec<&str> = outputs
            .iter()
            .flatten()
            .filter_map(|o| match o {
                TapOutput::Turn { turn, .. } => Some(turn.input.as_str()),
                _ => None,
            })
            .collect();
        assert!(inputs.contains(&"next"), "{inputs:?}");
        assert!(!inputs.contains(&"1next"), "{inputs:?}");
    }

    /// `answer deny --reason`: the keys clippy pressed in the dialog are the dialog's, and the
    /// reason typed at the prompt that comes back is the next turn's whole input.
    #[test]
    fn a_denials_reason_is_the_next_question_without_the_keys_that_refused() {
        let clock = Clock::new();
        let mut tap = model("shell", AgentHooks::On, Memory::default());
        tap.take(output(b"$ "), clock.at(0));
        tap.take(typed(b"ask\r"), clock.at(1));
        tap.take(
            output(" Do you want to proceed?\r\n \u{276f} 1. Yes\r\n   2. No\r\n".as_bytes()),
            clock.at(2),
        );
        tap.take(permission_asked(), clock.at(3));
        let ask = AnswerAsk {
            request: 1,
            decision: Decision::Deny,
            reason: Some("use ls".into()),
            waiting_id: None,
            by: "clippy-ctl".into(),
        };
        let out = tap.take(Tapped::Answer(ask), clock.at(4));
        let Some(keys) = out.iter().find_map(|o| match o {
            TapOutput::AnswerKeys { keys, .. } => Some(keys.clone()),
            _ => None,
        }) else {
            panic!("no keys pressed: {out:?}")
        };
        // The loop: the tap hears the keys were written, then the keys themselves.
        let request = 1;
        tap.take(
            Tapped::AnswerWritten {
                request,
                written: true,
            },
            clock.at(5),
        );
        tap.take(
            Tapped::Input {
                bytes: keys,
                human: false,
            },
            clock.at(6),
        );
        tap.take(output(b"refused\r\n$ "), clock.at(7));
        let ended = Report::TurnEnded {
            message: None,
            failed: false,
            prompts: Vec::new(),
        };
        let out = tap.take(Tapped::Agent(Ok(ended.clone())), clock.at(7));
        let Some(reason) = out.iter().find_map(|o| match o {
            TapOutput::Type(keys) => Some(keys.clone()),
            _ => None,
        }) else {
            panic!("no reason typed: {out:?}")
        };
        assert_eq!(reason, b"use ls\r");
        tap.take(
            Tapped::Input {
                bytes: reason,
                human: false,
            },
            clock.at(8),
        );
        tap.take(output(b"use ls\r\nfine\r\n$ "), clock.at(9));
        let out = tap.take(Tapped::Agent(Ok(ended)), clock.at(10));
        let inputs: Vec<&str> = out
            .iter()
            .filter_map(|o| match o {
                TapOutput::Turn { turn, .. } => Some(turn.input.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(inputs, ["use ls"]);
    }

    #[test]
    fn screens_and_redraws_answer_after_the_output_before_them() {
        let clock = Clock::new();
        let mut tap = model("shell", AgentHooks::Off, Memory::default());
        tap.take(output(b"$ echo hi\r\nhi\r\n$ "), clock.at(0));
        let out = tap.take(
            Tapped::Screen {
                request: 7,
                history: 0,
            },
            clock.at(1),
        );
        let [TapOutput::Screen { request: 7, screen }] = &out[..] else {
            panic!("{out:?}")
        };
        assert_eq!(screen.lines[..3], ["$ echo hi", "hi", "$"]);
        let out = tap.take(
            Tapped::Redraw {
                client: 3,
                generation: 2,
            },
            clock.at(2),
        );
        let [
            TapOutput::Redrawn {
                client: 3,
                generation: 2,
                screen,
            },
        ] = &out[..]
        else {
            panic!("{out:?}")
        };
        assert!(screen.windows(2).any(|w| w == b"hi"));
    }

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
