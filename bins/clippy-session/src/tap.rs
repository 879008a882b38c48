//! The tap: turn detection and the spool, on their own thread (the spool written in batches).
//!
//! After every spool write it reports [`Progress`] — the spool's size and the session's mode,
//! prompt count and latest prompt — whenever that changed, so the broker can serve reads and
//! wake the waits parked on this session without polling the file.
//!
//! The byte-moving loop hands each chunk of output and input here through a bounded channel,
//! in the order they happened, and goes straight back to moving bytes: forwarding never waits
//! on detection or on the spool (SPEC §11). The channel holds up to `CAPACITY` chunks (PTY reads
//! are at most a few KiB, so a few MiB); only if detection fell that far behind would the loop
//! wait, which bounds memory whatever the child writes.

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;

use clippy_proto::{Mode, Progress};
use clippy_spool::SpoolWriter;
use clippy_turn::{Event, Phase, TurnDetector};

use crate::sink::{Events, SessionEvent};

/// Chunks the channel holds before the loop has to wait.
const CAPACITY: usize = 1024;

/// What the loop reports, in order.
#[derive(Debug)]
pub enum Tapped {
    /// Bytes the child wrote.
    Output(Vec<u8>),
    /// Bytes written to the child: from the user's terminal (`human`: the user's keys and the
    /// terminal's own reports, which the tap tells apart), or injected by the broker.
    Input { bytes: Vec<u8>, human: bool },
    /// The terminal was resized.
    Resize { cols: u16, rows: u16 },
}

/// The loop's end of the tap.
pub struct Tap {
    tx: SyncSender<Tapped>,
    thread: JoinHandle<SpoolWriter>,
}

impl Tap {
    /// Starts the tap thread, which owns the detector and the spool and reports to `events`.
    pub fn start(
        detector: TurnDetector,
        spool: SpoolWriter,
        events: Events,
    ) -> std::io::Result<Self> {
        let (tx, rx) = sync_channel(CAPACITY);
        let thread = std::thread::Builder::new()
            .name("clippy-session-tap".into())
            .spawn(move || run(rx, detector, spool, events))?;
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

fn run(
    rx: Receiver<Tapped>,
    detector: TurnDetector,
    spool: SpoolWriter,
    events: Events,
) -> SpoolWriter {
    let mut tap = TapState {
        detector,
        spool: BatchedSpool {
            spool,
            pending: Vec::with_capacity(SPOOL_BATCH),
            failed: false,
        },
        events,
        progress: Progress::default(),
        reported: None,
        keys: KeyFilter::default(),
    };
    loop {
        let tapped = match rx.try_recv() {
            Ok(tapped) => tapped,
            Err(TryRecvError::Empty) => {
                // Caught up: readers of the spool see everything so far.
                tap.spool.flush(&tap.events);
                tap.report_progress();
                match rx.recv() {
                    Ok(tapped) => tapped,
                    Err(_) => break,
                }
            }
            Err(TryRecvError::Disconnected) => break,
        };
        tap.take(tapped);
    }
    tap.spool.flush(&tap.events);
    tap.report_progress();
    tap.spool.spool
}

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
    /// Where the session is now (`spool_size` and `mode` are filled in when reported).
    progress: Progress,
    /// What was last reported.
    reported: Option<Progress>,
    /// Tells the user's keys from the terminal's own reports in what they type.
    keys: KeyFilter,
}

impl TapState {
    /// Reports that the spool grew, the mode as last reported. Sent before a completed turn,
    /// which reaches the broker only once its text is rendered: the broker learns at once of
    /// the output that ended the turn (waits on it wake now) and of the keystrokes that led to
    /// it (a route counts its hops from the last one), always before the turn itself.
    fn report_spool_growth(&mut self) {
        let Some(reported) = &mut self.reported else {
            return;
        };
        // The counters that lead to the turn go too: a keystroke that started it must reset
        // the routes' hop counts before the turn is handed over.
        let early = Progress {
            spool_size: self.spool.spool.len(),
            keystrokes: self.progress.keystrokes,
            inputs: self.progress.inputs,
            input: self.progress.input.clone(),
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
                // Only a key is a person at work: focus events, mouse reports and the replies
                // to an agent's queries arrive on the same input, and counting them would
                // reset the routes' hop counts with nobody there (CONTRACTS/ROUTING.md).
                if human && self.keys.feed(&bytes) {
                    self.progress.keystrokes += 1;
                }
                self.detector.feed_input(&bytes).collect()
            }
            Tapped::Resize { cols, rows } => {
                let _ = self.detector.resize(cols.max(1), rows.max(1));
                Vec::new()
            }
        };
        for event in detected {
            let out = match event {
                Event::TurnCompleted(turn) => {
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
                    continue;
                }
                _ => continue,
            };
            self.events.send(out);
        }
    }
}

/// Unix time in milliseconds.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// CSI parameter bytes kept per sequence; longer ones are not reports we know, and are keys.
const MAX_CSI_BYTES: usize = 32;

/// Where [`KeyFilter`] is in the input stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum KeyState {
    #[default]
    Ground,
    /// After an ESC.
    Escape,
    /// Inside `ESC [`, its parameter and intermediate bytes collected.
    Csi,
    /// After `ESC O` (F1–F4, keypad keys): the next byte ends it.
    Ss3,
    /// Inside an OSC, DCS, APC, PM or SOS string (a terminal's reply); `true` after an ESC.
    String(bool),
    /// The three raw bytes of an X10 mouse report (`ESC [ M b x y`) still to skip.
    X10Mouse(u8),
}

/// Tells, chunk by chunk, whether what the user's terminal sent holds a key the user pressed —
/// text, Enter, Ctrl+C, Esc, arrows, function keys, a paste — or only what the terminal sends by
/// itself: cursor-position (`CSI r;c R`) and device-attribute (`CSI ? … c`) replies, status and
/// mode reports (`CSI … n`, `CSI … $ y`, `CSI … t`, `CSI ? … u`), focus events (`CSI I`,
/// `CSI O`), mouse reports (SGR, X10 and urxvt encodings) and OSC/DCS/APC strings. The same
/// split as the turn detector's input parser (clippy-turn), which finds no keystroke in those
/// either. Sequences may be cut between chunks; the state carries over.
#[derive(Debug, Default)]
struct KeyFilter {
    state: KeyState,
    csi: Vec<u8>,
}

impl KeyFilter {
    /// Feeds a chunk of the user's input; `true` when it holds at least one key. A lone ESC at
    /// the end of a chunk counts as the Esc key (terminals write their reports whole, so that is
    /// what it nearly always is).
    fn feed(&mut self, bytes: &[u8]) -> bool {
        let mut key = false;
        for &byte in bytes {
            key |= self.byte(byte);
        }
        key || self.state == KeyState::Escape
    }

    /// One byte; `true` when it completes a key.
    fn byte(&mut self, byte: u8) -> bool {
        match self.state {
            KeyState::Ground => {
                if byte == 0x1b {
                    self.state = KeyState::Escape;
                    false
                } else {
                    true
                }
            }
            KeyState::Escape => {
                self.state = KeyState::Ground;
                match byte {
                    b'[' => {
                        self.csi.clear();
                        self.state = KeyState::Csi;
                        false
                    }
                    b'O' => {
                        self.state = KeyState::Ss3;
                        false
                    }
                    b']' | b'P' | b'_' | b'^' | b'X' => {
                        self.state = KeyState::String(false);
                        false
                    }
                    // Esc pressed, then another ESC: the first was a key.
                    0x1b => {
                        self.state = KeyState::Escape;
                        true
                    }
                    // Alt+key.
                    _ => true,
                }
            }
            KeyState::Csi => match byte {
                0x20..=0x3f => {
                    if self.csi.len() < MAX_CSI_BYTES {
                        self.csi.push(byte);
                    }
                    false
                }
                0x40..=0x7e => {
                    self.state = KeyState::Ground;
                    self.csi_final(byte)
                }
                // A broken sequence: what breaks it is read as if the sequence were not there.
                _ => {
                    self.state = KeyState::Ground;
                    self.byte(byte)
                }
            },
            KeyState::Ss3 => {
                self.state = KeyState::Ground;
                true
            }
            KeyState::String(after_esc) => {
                self.state = match byte {
                    0x07 | 0x18 | 0x1a => KeyState::Ground,
                    b'\\' if after_esc => KeyState::Ground,
                    0x1b => KeyState::String(true),
                    _ => KeyState::String(false),
                };
                false
            }
            KeyState::X10Mouse(left) => {
                self.state = if left > 1 {
                    KeyState::X10Mouse(left - 1)
                } else {
                    KeyState::Ground
                };
                false
            }
        }
    }

    /// Whether the CSI sequence ending in `final_byte` (parameters in `self.csi`) is a key.
    fn csi_final(&mut self, final_byte: u8) -> bool {
        let params = self.csi.as_slice();
        let numeric = params.iter().all(|b| b.is_ascii_digit() || *b == b';');
        let report = match final_byte {
            // Cursor position (`CSI r;c R`, `CSI ? r;c R`). Shift+F3 in some terminals is
            // `CSI 1;2 R` too: a report is the likelier reading.
            b'R' => true,
            // Device attributes: `CSI ? … c`, `CSI > … c`, `CSI = … c`.
            b'c' => true,
            // Focus in and out.
            b'I' | b'O' => params.is_empty(),
            // SGR mouse (`CSI < b;x;y M|m`), urxvt mouse (`CSI b;x;y M`), X10 mouse (`CSI M`
            // and three raw bytes).
            b'M' | b'm' => {
                if params.is_empty() && final_byte == b'M' {
                    self.state = KeyState::X10Mouse(3);
                    true
                } else {
                    params.first() == Some(&b'<') || (final_byte == b'M' && numeric)
                }
            }
            // Mode reports (`CSI ? n ; v $ y`).
            b'y' => params.last() == Some(&b'$'),
            // Status reports (`CSI 0 n`, `CSI ? … n`), window reports (`CSI 8;r;c t`), the
            // kitty keyboard flags (`CSI ? flags u`), terminal parameters (`CSI … x`).
            b'n' | b't' | b'x' => true,
            b'u' => params.first() == Some(&b'?'),
            _ => false,
        };
        !report
    }
}

#[cfg(test)]
mod tests {
    use super::KeyFilter;

    fn keys(chunks: &[&[u8]]) -> Vec<bool> {
        let mut filter = KeyFilter::default();
        chunks.iter().map(|chunk| filter.feed(chunk)).collect()
    }

    #[test]
    fn the_terminals_own_reports_are_not_keys() {
        for report in [
            &b"\x1b[12;1R"[..],
            b"\x1b[?12;1R",
            b"\x1b[?64;1;2;6;22c",
            b"\x1b[>41;354;0c",
            b"\x1b[I",
            b"\x1b[O",
            b"\x1b[<0;10;5M",
            b"\x1b[<0;10;5m",
            b"\x1b[<35;80;24M",
            b"\x1b[32;10;5M",
            b"\x1b[M !!",
            b"\x1b[?2004;1$y",
            b"\x1b[0n",
            b"\x1b[8;40;120t",
            b"\x1b[?1u",
            b"\x1b]11;rgb:0000/0000/0000\x1b\\",
            b"\x1b]10;rgb:ffff/ffff/ffff\x07",
            b"\x1bP1+r544e=787465726d\x1b\\",
            b"\x1b[I\x1b[12;1R\x1b[O",
        ] {
            assert_eq!(keys(&[report]), [false], "{report:?}");
        }
    }

    #[test]
    fn keys_are_keys() {
        for key in [
            &b"a"[..],
            b"\r",
            b"\x03",
            b"\x7f",
            b"\x1b",
            b"\x1b[A",
            b"\x1bOP",
            b"\x1b[15~",
            b"\x1b[13u",
            b"\x1b[99;5u",
            b"\x1bb",
            b"\x1b[200~pasted\x1b[201~",
            b"\x1b[12;1Rx",
            b"\x1b[I\x1b[A",
        ] {
            assert_eq!(keys(&[key]), [true], "{key:?}");
        }
    }

    #[test]
    fn a_report_cut_between_chunks_is_still_a_report() {
        assert_eq!(
            keys(&[b"\x1b[12", b";1R", b"\x1b]11;rgb:0/0/0", b"\x1b\\"]),
            [false, false, false, false]
        );
        // The X10 mouse report's raw bytes are not text, even cut off.
        assert_eq!(
            keys(&[b"\x1b[M", b" !", b"!", b"q"]),
            [false, false, false, true]
        );
    }
}
