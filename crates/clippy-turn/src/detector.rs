//! The turn state machine.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::agent::{AgentHooks, AgentSignal, SILENT_TURNS, message_tail};
use crate::error::TurnError;
use crate::input::{InputParser, Key};
use crate::line_view::{self, Line, LineView, ViewSink};
use crate::preset::Preset;
use crate::turn::Turn;

mod quiet;

/// Default cap on one turn's content: 4 MiB.
pub const DEFAULT_MAX_TURN_BYTES: usize = 4 * 1024 * 1024;
/// Recent output kept to take content back that passed a turn buffer full of echo: 16 KiB.
const TAIL_BYTES: usize = 16 * 1024;
/// Output rendered on the live screen per [`TurnDetector::catch_up_screen`] call.
#[cfg(feature = "text")]
const SCREEN_STEP: usize = 64 * 1024;
/// Lines typed ahead and not yet taken by a turn; older ones are dropped past this.
const MAX_PENDING_INPUTS: usize = 64;
/// Lines one turn's `input` holds at most (continuation lines past it are not added).
const MAX_TURN_INPUTS: usize = 64;
/// How far past its end a turn waits for the synchronized frame it ended in to close (frames
/// are a few KiB; a program that never closes one must not hold its turns).
const MAX_OPEN_FRAME_BYTES: u64 = 1024 * 1024;

/// How a [`TurnDetector`] is set up: which signals mean "prompt", limits, and screen size.
#[derive(Debug, Clone)]
pub struct DetectorConfig {
    preset: Preset,
    max_turn_bytes: usize,
    cols: u16,
    rows: u16,
    agent_hooks: AgentHooks,
}

impl DetectorConfig {
    /// A configuration for `preset`, with a 4 MiB turn cap and an 80x24 screen.
    pub fn new(preset: Preset) -> Self {
        Self {
            preset,
            max_turn_bytes: DEFAULT_MAX_TURN_BYTES,
            cols: 80,
            rows: 24,
            agent_hooks: AgentHooks::Off,
        }
    }

    /// How far turns rest on the agent's own word ([`TurnDetector::feed_agent`]): off by
    /// default.
    pub fn agent_hooks(mut self, hooks: AgentHooks) -> Self {
        self.agent_hooks = hooks;
        self
    }

    /// The preset.
    pub fn preset(&self) -> &Preset {
        &self.preset
    }

    /// Caps the content kept for one turn; longer turns are cut and marked `truncated`.
    pub fn max_turn_bytes(mut self, max: usize) -> Self {
        self.max_turn_bytes = max;
        self
    }

    /// The terminal size the agent draws for (the live screen's size, for the text view).
    pub fn size(mut self, cols: u16, rows: u16) -> Result<Self, TurnError> {
        check_size(cols, rows)?;
        self.cols = cols;
        self.rows = rows;
        Ok(self)
    }
}

fn check_size(cols: u16, rows: u16) -> Result<(), TurnError> {
    if cols == 0 || rows == 0 {
        return Err(TurnError::InvalidSize { cols, rows });
    }
    Ok(())
}

/// Where the agent is, as far as its output tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No prompt seen yet.
    Starting,
    /// At a prompt, waiting for input.
    Idle,
    /// Input was submitted; the agent is answering.
    Busy,
}

/// What the detector reports as bytes are fed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// The first prompt: the session is ready. Not a turn.
    Ready {
        /// Stream offset of the prompt.
        offset: u64,
    },
    /// The user (or an injector) submitted a line.
    Submitted {
        /// The line, with editing applied and escape sequences removed.
        input: String,
    },
    /// The agent is back at a prompt (after `Ready`, after each turn, and after input that
    /// produced no output).
    Prompt {
        /// Stream offset where the prompt begins.
        offset: u64,
        /// The exit code of the command that just ended, when the shell reported it (OSC 133).
        exit_code: Option<i32>,
    },
    /// A turn completed.
    TurnCompleted(Turn),
    /// The agent enabled or disabled bracketed paste (`ESC[?2004h` / `ESC[?2004l`).
    BracketedPaste {
        /// Whether pastes should now be wrapped in `ESC[200~ … ESC[201~`.
        enabled: bool,
    },
    /// The input just fed holds at least one key a person pressed — text, Enter, Ctrl+C, Esc,
    /// cursor or function keys, a paste — and not only what the terminal sends by itself
    /// (cursor-position and device-attribute replies, status and mode reports, focus events,
    /// mouse reports). Reported once per [`TurnDetector::feed_input`] call, before what the
    /// keys caused.
    KeysPressed,
    /// One source says the running turn ended and the other has not said so yet (the screen
    /// shows it idle and the agent's hook has not spoken, or the reverse): the turn waits. A
    /// caller with a clock calls [`TurnDetector::settle`] if it stays so (clippy-session: 2 s).
    AwaitingAgreement,
    /// The agent asks the user something in the middle of the running turn (a permission
    /// dialog), as the preset's `waiting_line` tells from the screen; once until the next keys.
    /// The turn goes on.
    Asking {
        /// The line that asks, trimmed.
        question: String,
    },
    /// The agent's hooks and the screen disagreed (counted in a session's `status`).
    Disagreement {
        /// What happened, in a sentence.
        reason: String,
    },
}

/// A sans-I/O turn detector: feed it the child's output and the input written to the child,
/// in the order they happened, and it reports turns.
///
/// No clocks, threads or I/O: the same bytes in the same order give the same events, however
/// they are chunked (while the caller says no flood is on: see [`TurnDetector::flood`]). Memory is bounded by the current line, the in-progress turn (capped by
/// [`DetectorConfig::max_turn_bytes`]), a 32 KiB tail and, with the `text` feature, the live
/// screen and its history (at most [`clippy_screen::DEFAULT_HISTORY_BYTES`] of text).
///
/// ```
/// use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
///
/// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("python")?));
/// assert!(matches!(detector.feed_output(b"Python 3\r\n>>> ").next(), Some(Event::Ready { .. })));
/// detector.feed_input(b"6*7\r").for_each(drop);
/// let events: Vec<Event> = detector.feed_output(b"6*7\r\n42\r\n>>> ").collect();
/// let Some(Event::TurnCompleted(turn)) = events.first() else { panic!("{events:?}") };
/// assert_eq!(turn.content, b"42\r\n");
/// assert_eq!(turn.input, "6*7");
/// # Ok::<(), clippy_turn::TurnError>(())
/// ```
#[derive(Debug)]
pub struct TurnDetector {
    view: LineView,
    input: InputParser,
    core: Core,
    /// The caller says output is a flood ([`TurnDetector::flood`]).
    flood: bool,
    /// Where the output the line view skimmed over begins (`None`: it has seen all of it).
    skimmed_from: Option<u64>,
    /// The last bytes skimmed, when they begin an escape sequence whose kind the next output
    /// tells (an ESC, or `ESC [`).
    skim_cut: Vec<u8>,
}

/// Everything but the parsers, so a [`Feed`] can borrow it while the view is fed.
#[derive(Debug)]
struct Core {
    preset: Arc<Preset>,
    max_turn_bytes: usize,
    cols: u16,
    rows: u16,
    /// Output bytes fed so far.
    offset: u64,
    /// Offset up to which `tail` and the turn buffer have taken bytes.
    synced: u64,
    phase: Phase,
    turn: Option<Running>,
    seq: u64,
    events: Vec<Event>,
    /// The last status OSC said busy.
    osc_busy: bool,
    /// A busy line was seen since the last prompt line.
    line_veto: bool,
    /// The stream carries OSC 133 marks: they alone decide prompts.
    osc133: bool,
    /// The stream has shown the preset's status OSCs: then a prompt line ends a turn only after
    /// an idle OSC (TUIs draw their input line, and menus that look like it, while busy).
    osc_status: bool,
    cwd: Option<String>,
    bracketed_paste: bool,
    /// The agent is drawing a synchronized frame (`ESC[?2026h` seen, its `ESC[?2026l` not yet):
    /// what is on screen is half of it.
    frame_open: bool,
    /// The last line with text was the preset's `done_line`.
    after_done_line: bool,
    /// The last line with text the view ended, and where it began (two buffers, swapped, so
    /// that the line before the current one is kept without allocating).
    last_line: (Vec<u8>, u64),
    /// The line with text before [`Core::last_line`].
    line_before: (Vec<u8>, u64),
    /// The character of the end-of-output mark on the last line, if it was one: the shell may
    /// draw it once more on the next line (fish's `⏎ `).
    eol_mark: Option<char>,
    /// The last end-of-output mark character seen: left on screen at a turn's end, it is not
    /// part of its text.
    last_eol_mark: Option<char>,
    /// The first line of a two-line prompt (`root@box ~/dir` over `# `): the line with text
    /// drawn right before the first prompt line. A turn that ends at a prompt line with this
    /// line right above ends where it begins.
    prompt_header: Option<Vec<u8>>,
    /// The running turn ended inside an open frame: it ends where the frame does (with whether
    /// the next line typed ahead is drawn already, as for [`Feed::finish_then_queued`], and
    /// where it would have ended).
    finish_at_frame_end: Option<(bool, u64)>,
    /// A line has been submitted since the session started: until then the agent going busy
    /// by itself is its start-up, not a turn.
    submitted: bool,
    /// Lines submitted ahead of the prompt that will run them (typed ahead, piped in), oldest
    /// first; with OSC 133 every submit waits here for its `C` mark.
    pending: VecDeque<String>,
    /// The last output bytes, at most 2 × `TAIL_BYTES`.
    tail: Vec<u8>,
    /// How far turns rest on the agent's hooks.
    hooks: AgentHooks,
    /// Turns in a row the screen ended with no word from the hooks.
    silent_turns: u32,
    /// The last turn ended at the agent's word before the screen said idle: until it does, the
    /// agent going busy is its screen catching up, not a turn.
    screen_behind_agent: bool,
    /// The preset's own signals have been seen (a prompt line or status title it accepted,
    /// the agent's hooks): from then on they decide, and quiet output ends no turn (except
    /// with `generic`, where it is the rule; see [`TurnDetector::quiet`]).
    signal_seen: bool,
    /// Where the agent draws its input line, as the last submit showed.
    input_row: Option<quiet::InputRow>,
    /// The screen's rows when the running turn began: a quiet screen that shows nothing new
    /// above its input area has not answered yet.
    #[cfg(feature = "text")]
    rows_at_start: Vec<String>,
    /// The input row's text when the turn ending now ends because output went quiet: the
    /// text view is cut there.
    quiet_input_row: Option<String>,
    /// The screen's rows as the last output that changed them left them (while quiet output
    /// decides): see [`TurnDetector::screen_moved`].
    #[cfg(feature = "text")]
    still_rows: Option<Vec<String>>,
    /// The last line with text the line view ended (its last 512 bytes): a busy line the
    /// agent wrapped over two rows is matched across them.
    prev_line: Vec<u8>,
    /// The terminal as the agent drew it, fed the same bytes up to the same offset.
    #[cfg(feature = "text")]
    screen: clippy_screen::Screen,
}

/// The turn in progress.
#[derive(Debug)]
struct Running {
    /// Lines submitted before the agent's output began.
    inputs: Vec<String>,
    /// The next line to end is the prompt/echo line of a submit: never content.
    skip_line: bool,
    /// The echo of the submitted input has been drawn (on the submit's line, or on a line of
    /// its own): from then on a line that is the bare input again is the agent's answer.
    echo_seen: bool,
    /// The screen said the turn ended; it waits for the agent's word.
    screen_ended: bool,
    /// Where the screen said so, and whether the next line typed ahead was drawn there: the
    /// turn's content ends there whatever ends the wait.
    screen_end: Option<(u64, bool)>,
    /// The agent said the turn ended, with its final message when it gave one.
    agent_done: Option<Option<String>>,
    /// Input or [`TurnDetector::settle`] ended the wait for agreement: the turn ends.
    forced: bool,
    /// [`Event::Asking`] was reported since the last keys.
    asked: bool,
    /// Offset of `buf[0]`.
    buf_start: u64,
    buf: Vec<u8>,
    /// Where the content begins, once known.
    content_start: Option<u64>,
    saw_text: bool,
    busy_seen: bool,
    interrupted: bool,
    /// OSC 133 `D`: where the command's output ended.
    end_mark: Option<u64>,
    /// The agent said idle (OSC) but draws the rest of its frame after saying so: the turn ends
    /// at its next prompt line, or at the next input.
    idle_armed: bool,
    /// A dialog held the turn: its hooks said the agent waits on the user
    /// ([`AgentSignal::Waiting`]), or a busy line (a dialog's menu) was drawn after the turn's
    /// idle title. The agent may then stop the turn without a new title (the preset's
    /// `stopped_line`).
    held_by_dialog: bool,
    /// The agent stopped the turn itself after a dialog held it (its `stopped_line`).
    stopped: bool,
    /// An agent whose turns end with a done mark said idle without one (Codex after Ctrl+C):
    /// it redraws only what changed, perhaps not its prompt line, so the turn ends with the
    /// chunk of output that said so (and the frame it is drawing).
    ends_with_chunk: bool,
    exit_code: Option<i32>,
    /// The turn was started from a line typed ahead, not by a submit at its prompt.
    queued: bool,
    /// Non-blank lines the agent drew since the turn started.
    lines_seen: u32,
    /// Lines typed ahead during this turn (the last ones in `pending`).
    typed_ahead: usize,
    /// Every line typed ahead while this turn ran, also those since run, dropped by Ctrl+C or
    /// taken back from `inputs`: the terminal echoed them into this turn's output, and the
    /// text view leaves that echo out.
    echoed_ahead: Vec<String>,
    /// The terminal's echoes of lines in `echoed_ahead` seen before the content began.
    ahead_echoes: Vec<String>,
    /// Where the terminal's `^C` echo began, for a turn interrupted before it printed anything.
    interrupt_echo: Option<u64>,
    /// How many of `inputs` (from the first) the program drew, behind its prompt or bare: the
    /// others were never read as part of this command.
    echoed_upto: usize,
    /// A turn started from a line typed ahead waits for the prompt that reads it: the prompt
    /// line (its start) it let pass, drawn before the line typed ahead is.
    held_prompt: Option<u64>,
    /// The agent went idle and busy again with a line typed ahead waiting, or took that line at
    /// once (it steers): the turn ends where the agent draws that line as the next question.
    ends_at_next_question: bool,
    /// Where the screen decides: the question typed ahead was drawn on the agent's prompt
    /// decoration while it worked. That echo is either the agent's queue under a reply that
    /// still grows above it, or the question taken; text drawn below it says which.
    ahead_held: bool,
    /// Where the screen decides: a frame judged during the turn showed the input's echo, newly
    /// drawn, with text under it above the input row (see `Core::note_answer_shown`).
    #[cfg_attr(not(feature = "text"), allow(dead_code))]
    answer_shown: bool,
    /// Where the output stood when the first question typed ahead was submitted to an agent that
    /// steers: its echo is a line drawn after that, not its input box's line typed before.
    steered_at: Option<u64>,
}

impl Running {
    /// Notes lines typed ahead during this turn, whose echo the text view leaves out: the last
    /// `MAX_PENDING_INPUTS` of them, as many as can wait for turns of their own (a program
    /// that reads line after line and never answers must not grow the turn).
    fn remember_ahead(&mut self, lines: impl IntoIterator<Item = String>) {
        self.echoed_ahead.extend(lines);
        let over = self.echoed_ahead.len().saturating_sub(MAX_PENDING_INPUTS);
        self.echoed_ahead.drain(..over);
    }
}

impl Running {
    /// The screen shows the agent busy: a turn end it showed before was early (Gemini CLI draws
    /// a queued question's state like its idle frame), so the turn no longer waits to end there.
    fn busy_again(&mut self) {
        self.busy_seen = true;
        self.screen_ended = false;
        self.screen_end = None;
    }
}

impl TurnDetector {
    /// A detector in the [`Phase::Starting`] phase.
    pub fn new(config: DetectorConfig) -> Self {
        Self {
            view: LineView::default(),
            input: InputParser::default(),
            core: Core {
                preset: Arc::new(config.preset),
                max_turn_bytes: config.max_turn_bytes,
                cols: config.cols,
                rows: config.rows,
                offset: 0,
                synced: 0,
                phase: Phase::Starting,
                turn: None,
                seq: 0,
                events: Vec::new(),
                osc_busy: false,
                line_veto: false,
                osc133: false,
                osc_status: false,
                cwd: None,
                bracketed_paste: false,
                frame_open: false,
                after_done_line: false,
                last_line: (Vec::new(), 0),
                line_before: (Vec::new(), 0),
                prompt_header: None,
                eol_mark: None,
                last_eol_mark: None,
                finish_at_frame_end: None,
                submitted: false,
                pending: VecDeque::new(),
                tail: Vec::new(),
                hooks: config.agent_hooks,
                silent_turns: 0,
                screen_behind_agent: false,
                signal_seen: false,
                input_row: None,
                quiet_input_row: None,
                #[cfg(feature = "text")]
                still_rows: None,
                #[cfg(feature = "text")]
                rows_at_start: Vec::new(),
                prev_line: Vec::new(),
                #[cfg(feature = "text")]
                screen: clippy_screen::Screen::new(config.cols, config.rows),
            },
            flood: false,
            skimmed_from: None,
            skim_cut: Vec::new(),
        }
    }

    /// Tells the detector whether output is a flood now: so much so fast that no agent at rest
    /// or at work writes it (clippy-session's tap: over 1 MiB at 1 MiB a second or faster, with
    /// no pause of 100 ms), and its lines scroll away faster than anyone reads them. While one
    /// is on and no turn runs (none started, no line typed ahead waits for one), output that
    /// holds no OSC, no mode set or reset and no string (only text, line breaks and other
    /// escape sequences: what a log or `cat` prints) is skimmed: it goes to the live screen and
    /// the tail as always, but its lines are not judged one by one. When the flood is over
    /// (`on` false), before input, an agent's word, [`TurnDetector::quiet`] or
    /// [`TurnDetector::settle`], and before output that cannot be skimmed, the lines the flood
    /// left at its end are judged: those of its last 16 KiB, from the first line that starts
    /// there (a prompt drawn at the end is found, its offset exact). The lines before scrolled
    /// away unjudged: a prompt among them does not make the session ready, nor a busy line
    /// hold its next prompt. A turn that runs sees every line, flood or not. The events of
    /// what was judged now are returned.
    ///
    /// ```
    /// use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
    ///
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("python")?));
    /// detector.flood(true).for_each(drop);
    /// let line = b"log line, not a prompt\r\n".repeat(1000);
    /// for _ in 0..100 {
    ///     assert_eq!(detector.feed_output(&line).count(), 0);
    /// }
    /// assert_eq!(detector.feed_output(b">>> ").count(), 0);
    /// // Over: the prompt it ended with is found, where it is.
    /// let offset = 100 * line.len() as u64;
    /// let events: Vec<Event> = detector.flood(false).collect();
    /// assert_eq!(events.first(), Some(&Event::Ready { offset }));
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn flood(&mut self, on: bool) -> std::vec::Drain<'_, Event> {
        self.flood = on;
        if !on {
            self.catch_up_view();
        }
        self.core.events.drain(..)
    }

    /// Whether `bytes`, the next output, is skimmed (see [`TurnDetector::flood`]): then how many
    /// bytes at the end of what was skimmed begin an escape sequence still to be told.
    fn skims(&self, bytes: &[u8]) -> Option<usize> {
        if !self.flood
            || self.core.turn.is_some()
            || !self.core.pending.is_empty()
            || self.core.finish_at_frame_end.is_some()
            || (self.skimmed_from.is_none() && !self.view.at_ground())
        {
            return None;
        }
        line_view::only_lines(&self.skim_cut, bytes)
    }

    /// The line view judges the lines the output it skimmed over ended with: those of the last
    /// [`TAIL_BYTES`], from the first line that starts there (or all of it, when it was less);
    /// a line longer than that, from a character's start in it.
    fn catch_up_view(&mut self) {
        let Some(from) = self.skimmed_from.take() else {
            return;
        };
        self.skim_cut.clear();
        let end = self.core.synced;
        let tail_start = end - self.core.tail.len() as u64;
        let mut start = from
            .max(tail_start)
            .max(end.saturating_sub(TAIL_BYTES as u64));
        if start > from {
            let window = &self.core.tail[(start - tail_start) as usize..];
            let skip = memchr::memchr(b'\n', window).map_or_else(
                || window.iter().take_while(|&&b| b & 0xc0 == 0x80).count(),
                |newline| newline + 1,
            );
            start += skip as u64;
            self.view.restart_at(start);
        }
        let bytes = self.core.tail[(start - tail_start) as usize..].to_vec();
        let mut feed = Feed {
            core: &mut self.core,
            chunk: &bytes,
            base: start,
        };
        self.view.feed(&bytes, start, &mut feed);
        feed.check_partial_line(self.view.current_text(), self.view.current_start());
    }

    /// Feeds bytes the child wrote to its terminal.
    pub fn feed_output(&mut self, bytes: &[u8]) -> std::vec::Drain<'_, Event> {
        let base = self.core.offset;
        let end = base + bytes.len() as u64;
        if let Some(cut) = self.skims(bytes) {
            self.skimmed_from.get_or_insert(base);
            // What is cut, of the bytes carried over and these.
            let carried = cut.saturating_sub(bytes.len());
            self.skim_cut.drain(..self.skim_cut.len() - carried);
            self.skim_cut
                .extend_from_slice(&bytes[bytes.len() - (cut - carried)..]);
            let mut feed = Feed {
                core: &mut self.core,
                chunk: bytes,
                base,
            };
            feed.sync(end);
            feed.core.offset = end;
            return self.core.events.drain(..);
        }
        self.catch_up_view();
        let mut feed = Feed {
            core: &mut self.core,
            chunk: bytes,
            base,
        };
        self.view.feed(bytes, base, &mut feed);
        // A frame left open far past where its turn ended (a program that never closes its
        // synchronized output) does not hold the turn any longer: it ends here.
        if let Some((echoed, at)) = feed.core.finish_at_frame_end
            && end - at > MAX_OPEN_FRAME_BYTES
        {
            feed.core.frame_open = false;
            feed.finish_then_queued(end, echoed);
        }
        // A prompt drawn at the chunk's end ends the turn where it begins: the screen and the
        // turn buffer are brought up to there first, then past it.
        feed.check_partial_line(self.view.current_text(), self.view.current_start());
        feed.sync(end);
        if !feed.core.frame_open {
            feed.hold_ahead_shown_on_screen(end);
        }
        if feed.core.turn.as_ref().is_some_and(|t| t.ends_with_chunk) || feed.core.shows_agent_end()
        {
            feed.finish(end);
        }
        #[cfg(feature = "text")]
        feed.check_idle_screen(end, self.input.line());
        feed.core.offset = end;
        self.core.events.drain(..)
    }

    /// Feeds bytes written to the child (keystrokes, pastes, injected text).
    pub fn feed_input(&mut self, bytes: &[u8]) -> std::vec::Drain<'_, Event> {
        self.catch_up_view();
        if !bytes.is_empty()
            && let Some((echoed, _)) = self.core.finish_at_frame_end.take()
        {
            // The turn ended in a frame the agent has not closed since: it ends before this
            // input all the same (the user acts on what was shown).
            let offset = self.core.offset;
            self.core.frame_open = false;
            let mut feed = Feed {
                core: &mut self.core,
                chunk: &[],
                base: offset,
            };
            feed.finish_then_queued(offset, echoed);
        }
        if !bytes.is_empty()
            && self
                .core
                .turn
                .as_ref()
                .is_some_and(|t| t.idle_armed || t.screen_ended)
            && !self.core.dialog_on_screen()
        {
            // The user saw the agent idle and acts on it: the turn ended before this input. (Not
            // when the screen still shows it busy or asking: the input answers a menu.)
            if let Some(turn) = &mut self.core.turn {
                turn.forced = true;
            }
            let offset = self.core.offset;
            let mut feed = Feed {
                core: &mut self.core,
                chunk: &[],
                base: offset,
            };
            feed.finish(offset);
        }
        let core = &mut self.core;
        let view = &self.view;
        let first = core.events.len();
        let pressed = self.input.feed(bytes, |key| match key {
            Key::Submit(input) => core.submit(input, view.current_text()),
            Key::Interrupt => {
                if let Some(turn) = &mut core.turn {
                    turn.interrupted = true;
                    // The terminal discards input not yet read when it interrupts.
                    let dropped = std::mem::take(&mut turn.typed_ahead);
                    core.pending
                        .truncate(core.pending.len().saturating_sub(dropped));
                }
            }
        });
        if pressed {
            self.core.events.insert(first, Event::KeysPressed);
            if let Some(turn) = &mut self.core.turn {
                turn.asked = false;
            }
        }
        self.core.events.drain(..)
    }

    /// Feeds what the agent said through its hooks, in order with its output: a prompt it
    /// sent, or the end of its turn with its own final message. With
    /// [`DetectorConfig::agent_hooks`] on, the agent's word ends the running turn: at once when
    /// the screen already shows the end of the message (or said the turn ended), else with the
    /// first chunk of output that shows it, the screen's own end, input or
    /// [`TurnDetector::settle`]. The turn then carries the message ([`Turn::message`]).
    ///
    /// ```
    /// use clippy_turn::{AgentHooks, AgentSignal, DetectorConfig, Event, Preset, TurnDetector};
    ///
    /// let config = DetectorConfig::new(Preset::named("shell")?).agent_hooks(AgentHooks::On);
    /// let mut detector = TurnDetector::new(config);
    /// detector.feed_output(b"$ ").for_each(drop);
    /// detector.feed_input(b"ask\r").for_each(drop);
    /// detector.feed_output(b"ask\r\nThe answer is **42**.\r\n").for_each(drop);
    /// let message = Some("The answer is **42**.".to_owned());
    /// let ended = AgentSignal::TurnEnded { message, prompts: vec!["ask".into()] };
    /// let events: Vec<Event> = detector.feed_agent(ended).collect();
    /// let Some(Event::TurnCompleted(turn)) = events.first() else { panic!("{events:?}") };
    /// assert_eq!(turn.message.as_deref(), Some("The answer is **42**."));
    /// assert!(turn.ended_by_agent);
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn feed_agent(&mut self, signal: AgentSignal) -> std::vec::Drain<'_, Event> {
        self.catch_up_view();
        let offset = self.core.offset;
        let core = &mut self.core;
        core.silent_turns = 0;
        core.signal_seen = true;
        match signal {
            AgentSignal::PromptSubmitted { prompt } => match &mut core.turn {
                Some(turn) if turn.inputs.is_empty() => turn.inputs = vec![prompt],
                Some(_) => {}
                // A prompt the keys did not show as submitted (a start-up argument, a paste
                // the input parser did not take for a submit): its turn begins here.
                None => {
                    core.submitted = true;
                    core.events.push(Event::Submitted {
                        input: prompt.clone(),
                    });
                    core.start_turn(vec![prompt], false, offset);
                }
            },
            AgentSignal::Waiting => {
                if let Some(turn) = &mut core.turn {
                    turn.held_by_dialog = true;
                }
            }
            AgentSignal::TurnEnded { prompts, .. } if !core.answered(&prompts) => {}
            AgentSignal::TurnEnded { message, .. } => {
                if let Some(turn) = &mut core.turn {
                    let now =
                        turn.screen_ended || message.as_deref().and_then(message_tail).is_none();
                    turn.agent_done = Some(message);
                    let mut feed = Feed {
                        core,
                        chunk: &[],
                        base: offset,
                    };
                    if now || feed.core.shows_agent_end() {
                        feed.finish(offset);
                    } else {
                        feed.core.events.push(Event::AwaitingAgreement);
                    }
                } else {
                    core.disagree("the agent ended a turn the screen did not show running");
                }
            }
        }
        self.core.events.drain(..)
    }

    /// Forgets the line typed since the last Enter: the agent took those keys as the answer to
    /// a dialog of its own (a permission's `1`, no Enter), so the next question typed at its
    /// prompt starts afresh. The caller knows a dialog was answered (the agent's hooks said it
    /// waited); the detector does not.
    pub fn forget_typed_line(&mut self) {
        self.input.forget_line();
    }

    /// Ends a turn that waits for agreement ([`Event::AwaitingAgreement`]) now: the caller
    /// waited long enough for the other source. Counted as a disagreement; after three turns
    /// in a row the screen ended with no word from the hooks, the hooks are taken as silent
    /// until the agent speaks again. Does nothing when no turn waits.
    pub fn settle(&mut self) -> std::vec::Drain<'_, Event> {
        self.catch_up_view();
        let offset = self.core.offset;
        let core = &mut self.core;
        if let Some(turn) = &mut core.turn
            && (turn.screen_ended || turn.agent_done.is_some())
        {
            turn.forced = true;
            if turn.agent_done.is_none() {
                core.silent_turns += 1;
                core.disagree("the screen showed the turn ended and no hook said so");
            } else {
                core.disagree("the agent said its turn ended while the screen did not show it");
            }
            let mut feed = Feed {
                core,
                chunk: &[],
                base: offset,
            };
            feed.finish(offset);
        }
        self.core.events.drain(..)
    }

    /// Tells the detector the terminal was resized (affects how later turns render as text).
    pub fn resize(&mut self, cols: u16, rows: u16) -> Result<(), TurnError> {
        check_size(cols, rows)?;
        self.core.cols = cols;
        self.core.rows = rows;
        #[cfg(feature = "text")]
        self.core.screen.resize(cols, rows);
        Ok(())
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.core.phase
    }

    /// Output bytes fed so far (the offset the next output byte will have).
    pub fn output_offset(&self) -> u64 {
        self.core.offset
    }

    /// Whether the agent has bracketed paste enabled.
    pub fn bracketed_paste(&self) -> bool {
        self.core.bracketed_paste
    }

    /// The working directory last reported by the agent (OSC 7), if any.
    pub fn cwd(&self) -> Option<&str> {
        self.core.cwd.as_deref()
    }

    /// The preset in use.
    pub fn preset(&self) -> &Preset {
        &self.core.preset
    }

    /// The session's screen as text right now, after up to `history` lines of its history
    /// (like `tmux capture-pane -p`): what a person sees, a waiting dialog included.
    ///
    /// ```
    /// use clippy_turn::{DetectorConfig, Preset, TurnDetector};
    ///
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("shell")?).size(20, 2)?);
    /// detector.feed_output(b"one\r\ntwo\r\n$ ").for_each(drop);
    /// assert_eq!(detector.screen(1).lines, ["one", "two", "$"]);
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    #[cfg(feature = "text")]
    pub fn screen(&mut self, history: usize) -> clippy_screen::Snapshot {
        self.core.screen.snapshot(history)
    }

    /// The agent's prompt line as its screen shows it now, for a TUI (a preset with an idle
    /// OSC), which keeps its input line on screen and redraws it in place, so that the output
    /// after a prompt's offset need not hold it: the last row that is a prompt line of the
    /// preset, else the last row that begins with a prompt character (`>`, `❯`, `›`: Gemini
    /// CLI's input box), else the row the cursor is on; trimmed, spacing
    /// characters as spaces. `None` for shells and REPLs, whose prompt is printed after the
    /// prompt's offset, and when that row is blank.
    ///
    /// ```
    /// use clippy_turn::{DetectorConfig, Preset, TurnDetector};
    ///
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("claude")?).size(20, 4)?);
    /// detector.feed_output("\x1b]0;✳ Claude\x07● done\r\n───\r\n❯\u{a0}\r\n? for shortcuts\x1b[3;3H".as_bytes()).for_each(drop);
    /// assert_eq!(detector.prompt_line().as_deref(), Some("❯"));
    ///
    /// // Gemini CLI has no prompt pattern: its input box's row, wherever the cursor is.
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("gemini")?).size(40, 4)?);
    /// detector.feed_output("\x1b]0;◇  Ready\x07✦ done\r\n >   Type your message\r\n workspace\x1b[4;1H".as_bytes()).for_each(drop);
    /// assert_eq!(detector.prompt_line().as_deref(), Some(">   Type your message"));
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    #[cfg(feature = "text")]
    pub fn prompt_line(&mut self) -> Option<String> {
        self.core.preset.osc_idle()?;
        let screen = self.core.screen.snapshot(0);
        let rows = &screen.lines[screen.history..];
        let prompt = self.core.preset.prompt().and_then(|prompt| {
            rows.iter()
                .rev()
                .find(|row| prompt.is_match(row.as_bytes()))
        });
        // Without a prompt pattern: the last row that begins with a prompt character (Gemini
        // CLI's ` >   Type your message`), else the cursor's row.
        let marked = || {
            rows.iter().rev().find(|row| {
                let row = row.trim_start_matches(|c: char| c.is_whitespace() || "│┃|".contains(c));
                let mut chars = row.chars();
                chars.next().is_some_and(|c| ">❯›".contains(c))
                    && chars.next().is_none_or(char::is_whitespace)
            })
        };
        let row = prompt
            .or_else(marked)
            .or_else(|| rows.get(usize::from(screen.cursor.0)))?;
        let text = crate::text::as_pasted(row.trim());
        (!text.is_empty()).then_some(text)
    }

    /// The bytes that make a terminal of the session's size show the session's screen as it is
    /// now, whatever that terminal showed before, and send what the program expects (cursor,
    /// modes, attributes): for a client attaching to the running session, before it gets the
    /// output that follows. See [`clippy_screen::Screen::redraw`] for what is and is not
    /// reproduced.
    ///
    /// ```
    /// use clippy_turn::{DetectorConfig, Preset, TurnDetector};
    ///
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("shell")?).size(20, 2)?);
    /// detector.feed_output(b"one\r\n\x1b[1mtwo").for_each(drop);
    /// let mut terminal = clippy_screen::Screen::new(20, 2);
    /// terminal.feed(b"something else");
    /// terminal.feed(&detector.screen_redraw());
    /// assert_eq!(terminal.snapshot(0), detector.screen(0));
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    #[cfg(feature = "text")]
    pub fn screen_redraw(&mut self) -> Vec<u8> {
        self.core.screen.redraw()
    }

    /// What a terminal would have answered the program's queries (cursor position, device
    /// attributes, …) in the output rendered so far, each once: for a session with no terminal
    /// to answer them (see [`clippy_screen::Screen::take_replies`]).
    #[cfg(feature = "text")]
    pub fn take_terminal_replies(&mut self) -> Vec<u8> {
        self.core.screen.take_replies()
    }

    /// Renders up to 64 KiB of the output waiting for the live screen and says whether more
    /// waits. The screen renders lazily, when a turn starts or ends, on
    /// [`TurnDetector::screen`] and when input needs a look at it; a caller with idle time (its
    /// input drained) calls this between its inputs so those stay quick. Under a flood, output
    /// that waited unrendered past 8 MiB is skipped (see [`clippy_screen::Screen::feed`]).
    #[cfg(feature = "text")]
    pub fn catch_up_screen(&mut self) -> bool {
        self.core.screen.catch_up_step(SCREEN_STEP)
    }

    /// Whether the live screen records a turn now (from the input that began it to its end):
    /// then what it renders becomes the turn's text. A caller choosing when to spend idle time
    /// on the screen ([`TurnDetector::catch_up_screen`]) may put it off while this is `false`,
    /// as any read renders what waits.
    #[cfg(feature = "text")]
    pub fn screen_recording(&self) -> bool {
        self.core.screen.recording()
    }
}

impl Core {
    /// A line was submitted; `line` is the line being drawn when Enter was pressed.
    fn submit(&mut self, input: String, line: &[u8]) {
        let input = self.as_shown(input);
        self.learn_input_row(&input);
        self.submitted = true;
        self.screen_behind_agent = false;
        self.events.push(Event::Submitted {
            input: input.clone(),
        });
        // With OSC 133 the shell says when each line runs (`C`); before the first prompt nothing
        // runs yet. Either way the line waits for its turn. (With the agent's hooks, the agent
        // says when its turn ends whether or not its prompt was recognised: the line runs now.)
        let before_ready = self.phase == Phase::Starting && self.hooks == AgentHooks::Off;
        if self.osc133 || (before_ready && self.turn.is_none()) {
            // Typed at the shell's prompt: lines submitted while the last command ran that the
            // shell has not run since were read by that command (the answer to its question);
            // a shell runs a typed-ahead line as soon as its prompt is drawn. This line is the
            // next turn's.
            if self.osc133 && self.turn.is_none() && self.phase == Phase::Idle {
                self.pending.clear();
            }
            if self.pending.len() == MAX_PENDING_INPUTS {
                self.pending.pop_front();
            }
            self.pending.push_back(input);
            return;
        }
        let typed_ahead = self.is_typed_ahead(&input, line);
        let require_busy = self.preset.require_busy();
        // Before the program's output began, a line is part of the running command when the
        // program drew a prompt for it on the cursor's row (`... `, `> `, `name: `). Typed
        // while the command runs, the terminal echoes it on a row of its own (or has not yet):
        // it is the next command, typed ahead. (TUIs draw their own input line: Codex folds
        // such a line into the running turn.)
        let continuation = self.preset.continuation_lines()
            && self
                .turn
                .as_ref()
                .is_some_and(|turn| turn.content_start.is_none())
            && (self.preset.osc_idle().is_some()
                || !typed_ahead
                || !self.row_before_input(&input, line).is_empty());
        match &mut self.turn {
            // A line typed ahead that the program never ran (it was read as the answer to a
            // question, or discarded: a TUI drops what was typed while it started): the agent
            // is at its prompt, and this line is the turn's.
            Some(turn)
                if turn.queued && (turn.lines_seen == 0 || (require_busy && !turn.busy_seen)) =>
            {
                turn.inputs = vec![input];
                turn.queued = false;
                turn.skip_line = true;
            }
            // Continuation lines typed before any output (a multi-line statement in a REPL),
            // the first `MAX_TURN_INPUTS` of them: a program that reads on and never answers
            // (a sink for pastes) must not grow the turn without bound.
            Some(turn) if continuation => {
                if turn.inputs.len() < MAX_TURN_INPUTS {
                    turn.inputs.push(input);
                }
                turn.skip_line = true;
            }
            // A question typed ahead while the agent works: its turn comes after this one.
            Some(turn) if typed_ahead => {
                turn.typed_ahead += 1;
                // An agent that steers answers it at once: the running reply ends where the
                // agent draws the question's echo.
                if self.preset.steers_typed_ahead() {
                    turn.ends_at_next_question = true;
                    turn.steered_at.get_or_insert(self.offset);
                }
                turn.remember_ahead([input.clone()]);
                if self.pending.len() == MAX_PENDING_INPUTS {
                    self.pending.pop_front();
                }
                self.pending.push_back(input);
            }
            // An answer to a question asked inside the turn (a permission dialog).
            Some(_) => {}
            None => self.start_turn(vec![input], true, self.offset),
        }
    }

    /// Whether a line submitted while a turn runs is a question typed ahead (rather than an
    /// answer to the program): for agents that answer such lines in turns of their own, a line
    /// with text, not typed after a question the program drew on the same line (`Run shell
    /// command? [Yes]: y`, `name: bob`) — and, for TUIs, only when their input line shows it
    /// (a menu's choice is not drawn there).
    fn is_typed_ahead(&mut self, input: &str, line: &[u8]) -> bool {
        let input = input.trim();
        if !self.preset.queues_typed_ahead() || input.is_empty() {
            return false;
        }
        if self.preset.osc_idle().is_some() {
            return self.shown_on_prompt_row(input);
        }
        let before = self.row_before_input(input, line);
        // Drawn behind the agent's own input decoration (where it showed the last line
        // submitted), it was typed in its input area: a question, not an answer.
        if self.quiet_decides() && self.is_input_decoration(&before) {
            return true;
        }
        let asked = before.ends_with(['?', ':', ']', '>']);
        !asked
    }

    /// What the cursor's row shows before the submitted `input` (the whole row when it does
    /// not end with it), trimmed: a prompt or question the program drew for it, or nothing
    /// when the terminal echoed a line typed ahead on a row of its own.
    fn row_before_input(&mut self, input: &str, line: &[u8]) -> String {
        let row = self.cursor_row(line);
        let row = row.trim_end();
        row.strip_suffix(input.trim())
            .unwrap_or(row)
            .trim()
            .to_owned()
    }

    /// Whether `line` was on screen or in recent history when the running turn began (old
    /// transcript that the agent draws again). Without the screen (no `text` feature), never.
    fn was_before(&mut self, line: &[u8]) -> bool {
        #[cfg(feature = "text")]
        {
            self.screen.was_before(&lossy(line))
        }
        #[cfg(not(feature = "text"))]
        {
            let _ = line;
            false
        }
    }

    /// Whether a screen row shows `input` behind a prompt or bullet (its echo). Without the
    /// screen (no `text` feature), never.
    fn shows_echo(&mut self, input: &str) -> bool {
        #[cfg(feature = "text")]
        {
            let inputs = [input.to_owned()];
            self.screen
                .snapshot(0)
                .lines
                .iter()
                .any(|row| is_echo(row, &inputs) && !is_bare_input(row, &inputs))
        }
        #[cfg(not(feature = "text"))]
        {
            let _ = input;
            false
        }
    }

    /// Whether a person is typing a line: keys typed since the last submit that a TUI's input
    /// line shows, or part of them (it may not have drawn the last keys yet). Keys a TUI took
    /// for a dialog (Claude Code's `1` for "Yes", its input line still empty) are not.
    #[cfg(feature = "text")]
    fn typing(&mut self, line: &str) -> bool {
        let line = line.trim();
        if line.is_empty() {
            return false;
        }
        let Some(prompt) = self
            .preset
            .prompt()
            .filter(|_| self.preset.osc_idle().is_some())
        else {
            return true;
        };
        self.screen.snapshot(0).lines.iter().any(|row| {
            prompt.find(row.as_bytes()).is_some_and(|at| {
                let shown = row.get(at.end()..).unwrap_or_default().trim();
                !shown.is_empty() && (line.starts_with(shown) || shown.starts_with(line))
            })
        })
    }

    /// The submitted line as a TUI's input line shows it: keys the agent took for itself before
    /// the line (a dialog's `y`, answered without Enter) are not part of it. Unchanged when no
    /// prompt row ends with a part of it.
    fn as_shown(&mut self, input: String) -> String {
        #[cfg(feature = "text")]
        if self.preset.osc_idle().is_some()
            && let Some(prompt) = self.preset.prompt()
        {
            let screen = self.screen.snapshot(0);
            let rows: Vec<&str> = screen
                .lines
                .iter()
                .filter(|row| prompt.is_match(row.as_bytes()))
                .map(|row| row.trim_end())
                .collect();
            let whole = input.trim();
            if whole.is_empty() || rows.iter().any(|row| row.contains(whole)) {
                return input;
            }
            if let Some(tail) = input
                .char_indices()
                .skip(1)
                .map(|(at, _)| input[at..].trim())
                .find(|tail| !tail.is_empty() && rows.iter().any(|row| row.ends_with(tail)))
            {
                return tail.to_owned();
            }
        }
        input
    }

    /// The text of the row the cursor is on: from the screen, else the line view's `line`
    /// (which a TUI's cursor moves cut short).
    fn cursor_row(&mut self, line: &[u8]) -> String {
        #[cfg(feature = "text")]
        {
            let _ = line;
            let screen = self.screen.snapshot(0);
            screen
                .lines
                .get(usize::from(screen.cursor.0))
                .cloned()
                .unwrap_or_default()
        }
        #[cfg(not(feature = "text"))]
        lossy(line).into_owned()
    }

    /// Whether a row of the screen is a prompt line showing `input` (a TUI's input box holding
    /// a question typed ahead). Without the screen (no `text` feature), never.
    fn shown_on_prompt_row(&mut self, input: &str) -> bool {
        #[cfg(feature = "text")]
        if let Some(prompt) = self.preset.prompt() {
            return self
                .screen
                .snapshot(0)
                .lines
                .iter()
                .any(|row| row.contains(input) && prompt.is_match(row.as_bytes()));
        }
        #[cfg(feature = "text")]
        return true;
        #[cfg(not(feature = "text"))]
        {
            let _ = input;
            false
        }
    }

    /// Whether a turn end for `prompts` is the running turn's: they include its input, or one
    /// of the two is not known.
    fn answered(&self, prompts: &[String]) -> bool {
        let Some(turn) = &self.turn else {
            return true;
        };
        let inputs: Vec<&str> = turn
            .inputs
            .iter()
            .map(|i| i.trim())
            .filter(|i| !i.is_empty())
            .collect();
        if prompts.is_empty() || inputs.is_empty() {
            return true;
        }
        let joined = inputs.join("\n");
        prompts
            .iter()
            .map(|p| p.trim())
            .any(|p| p == joined || inputs.contains(&p))
    }

    /// Reports a disagreement between the agent's hooks and the screen.
    fn disagree(&mut self, reason: &str) {
        self.events.push(Event::Disagreement {
            reason: reason.to_owned(),
        });
    }

    /// Whether a turn the screen says ended waits for the agent's word instead (reporting
    /// [`Event::AwaitingAgreement`] when it starts to).
    fn waits_for_agent(&mut self, end: u64, echoed: bool) -> bool {
        let listening = match self.hooks {
            AgentHooks::Off => false,
            AgentHooks::On => self.silent_turns < SILENT_TURNS,
            AgentHooks::Only => true,
        };
        let Some(turn) = &mut self.turn else {
            return false;
        };
        // Agents run no turn-end hook when interrupted (Claude Code's `Stop` does not fire on
        // Ctrl+C): the screen decides those.
        if !listening || turn.agent_done.is_some() || turn.forced || turn.interrupted {
            return false;
        }
        if !turn.screen_ended {
            turn.screen_ended = true;
            turn.screen_end = Some((end, echoed));
            self.events.push(Event::AwaitingAgreement);
        }
        true
    }

    /// Whether the agent said its turn ended and the screen now shows the end of its message: more
    /// often than when the turn began (the same answer to the same question may still be there).
    fn shows_agent_end(&mut self) -> bool {
        let Some(Some(message)) = self.turn.as_ref().and_then(|t| t.agent_done.as_ref()) else {
            return false;
        };
        let Some(tail) = message_tail(message) else {
            return true;
        };
        #[cfg(feature = "text")]
        {
            use crate::agent::tail_count;
            let before = tail_count(self.screen.lines_before(), &tail);
            tail_count(&self.screen.snapshot(0).lines, &tail) > before
        }
        #[cfg(not(feature = "text"))]
        {
            let _ = tail;
            false
        }
    }

    fn start_turn(&mut self, inputs: Vec<String>, skip_line: bool, at: u64) {
        #[cfg(feature = "text")]
        {
            self.screen.begin_recording();
            self.rows_at_start = self.screen.snapshot(0).lines;
        }
        self.phase = Phase::Busy;
        self.line_veto = false;
        self.turn = Some(Running {
            inputs,
            skip_line,
            echo_seen: false,
            screen_ended: false,
            screen_end: None,
            agent_done: None,
            forced: false,
            asked: false,
            buf_start: at,
            buf: Vec::new(),
            content_start: None,
            saw_text: false,
            busy_seen: self.osc_busy,
            interrupted: false,
            end_mark: None,
            idle_armed: false,
            held_by_dialog: false,
            stopped: false,
            ends_with_chunk: false,
            exit_code: None,
            queued: false,
            lines_seen: 0,
            typed_ahead: 0,
            echoed_ahead: Vec::new(),
            ahead_echoes: Vec::new(),
            interrupt_echo: None,
            echoed_upto: 0,
            held_prompt: None,
            ends_at_next_question: false,
            ahead_held: false,
            answer_shown: false,
            steered_at: None,
        });
    }

    /// Whether the screen shows the agent busy or asking (a permission menu, `❯ 1. Yes`): a
    /// busy line on a visible row.
    fn dialog_on_screen(&mut self) -> bool {
        #[cfg(feature = "text")]
        if let Some(busy) = self.preset.busy_line() {
            let screen = self.screen.snapshot(0);
            return rows_show(busy, &screen.lines);
        }
        false
    }

    /// Whether a prompt seen now must be ignored because the agent says it is still busy.
    fn vetoed(&self) -> bool {
        let require_busy =
            self.preset.require_busy() && self.turn.as_ref().is_some_and(|t| !t.busy_seen);
        self.osc_busy || self.line_veto || require_busy
    }

    /// Whether a prompt *line* seen now ends the running turn (or readies the session).
    fn accepts_prompt_line(&self) -> bool {
        !self.vetoed() && (!self.osc_status || self.turn.as_ref().is_none_or(|t| t.idle_armed))
    }

    /// Whether the running turn, started from a line typed ahead that the program has not drawn
    /// yet, lets the prompt line beginning at `start` pass: that is the prompt the program
    /// reads the line at (zsh draws it after the mark that ended the last turn), and the line
    /// drawn with it is the echo. Once: a second bare prompt ends the turn.
    fn holds_prompt(&mut self, start: u64) -> bool {
        if self.preset.osc_idle().is_some() {
            return false;
        }
        let Some(turn) = &mut self.turn else {
            return false;
        };
        let holds = turn.queued
            && !turn.echo_seen
            && turn.content_start.is_none()
            && turn.held_prompt.is_none_or(|at| at == start);
        if holds {
            turn.held_prompt = Some(start);
            turn.skip_line = true;
        }
        holds
    }

    /// Lines submitted before the running command printed anything, taken for its own, that
    /// the program never drew (two commands sent in one write: the shell reads the second at
    /// its next prompt) were typed ahead: they wait for turns of their own.
    fn requeue_unread_inputs(&mut self) {
        if self.preset.osc_idle().is_some() || self.osc133 {
            return;
        }
        let Some(turn) = &mut self.turn else {
            return;
        };
        // Only when the program drew the command itself: otherwise nothing tells what it read.
        let from = turn.echoed_upto;
        if from == 0
            || !turn
                .inputs
                .get(from..)
                .is_some_and(|rest| rest.iter().any(|input| !input.trim().is_empty()))
        {
            return;
        }
        let unread: Vec<String> = turn
            .inputs
            .drain(from..)
            .filter(|input| !input.trim().is_empty())
            .collect();
        turn.remember_ahead(unread.iter().cloned());
        self.wait_again(unread);
    }

    /// Puts `lines`, taken back from the running turn, at the head of the lines waiting for
    /// their turns (they were typed before those); past `MAX_PENDING_INPUTS` the oldest go.
    fn wait_again(&mut self, lines: Vec<String>) {
        for input in lines.into_iter().rev() {
            self.pending.push_front(input);
        }
        while self.pending.len() > MAX_PENDING_INPUTS {
            self.pending.pop_front();
        }
    }

    /// Whether `line` is a shell's end-of-output mark (zsh's `PROMPT_SP` `%`, fish's `⏎`): one
    /// character padded with spaces to the screen's width, so that output that did not end its
    /// line wraps under it and output that did is drawn over (perhaps behind the `^C` echo), or
    /// that character again on the next line. Never where content begins.
    fn end_of_output_mark(&mut self, line: &[u8]) -> bool {
        // Shells draw it; a TUI's rows are not looked at this way.
        if self.preset.osc_idle().is_some() {
            return false;
        }
        let text = lossy(line);
        let body = text.trim_end_matches(' ');
        let pad = text.len() - body.len();
        let mut chars = body.chars();
        let last = chars.next_back();
        let before = chars.as_str().trim();
        let again = std::mem::take(&mut self.eol_mark);
        if again.is_some() && last == again && before.is_empty() {
            return true;
        }
        let mark = last.filter(|c| {
            !c.is_alphanumeric()
                && pad + 1 >= usize::from(self.cols)
                && (before.is_empty() || is_interrupt_echo(before.as_bytes()))
        });
        self.eol_mark = mark;
        if mark.is_some() {
            self.last_eol_mark = mark;
        }
        mark.is_some()
    }

    /// The line with text right before the prompt line just ended (the view has made that
    /// prompt line [`Core::last_line`]).
    fn line_above_prompt(&self) -> &(Vec<u8>, u64) {
        &self.line_before
    }

    /// The first prompt line was drawn (and ended): the line above it, if any, may be the
    /// first line of a two-line prompt.
    fn learn_prompt_header(&mut self) {
        let (above, _) = self.line_above_prompt();
        if !above.is_empty() {
            self.prompt_header = Some(above.clone());
        }
    }

    /// [`Core::learn_prompt_header`] for a prompt still being drawn (not ended), which the view
    /// has not made a line yet: the line above it is [`Core::last_line`].
    fn learn_prompt_header_before(&mut self, prompt_start: u64) {
        let (above, at) = &self.last_line;
        if !above.is_empty() && *at < prompt_start {
            self.prompt_header = Some(above.clone());
        }
    }

    /// Where the prompt whose prompt line ended at `at` begins: at its first line when the
    /// line above is the two-line prompt's first line, inside the running turn; else `at`.
    fn prompt_start(&self, at: u64) -> u64 {
        let above = self.line_above_prompt().clone();
        self.header_above(above, at)
    }

    /// [`Core::prompt_start`] for a prompt line still being drawn.
    fn prompt_start_before(&self, at: u64) -> u64 {
        let above = self.last_line.clone();
        self.header_above(above, at)
    }

    fn header_above(&self, (above, above_at): (Vec<u8>, u64), at: u64) -> u64 {
        let Some(turn) = &self.turn else {
            return at;
        };
        if above.is_empty() || above_at >= at || above_at < turn.buf_start {
            return at;
        }
        if self.prompt_header.as_deref() == Some(&above[..]) {
            above_at
        } else {
            at
        }
    }

    fn ready(&mut self, offset: u64) {
        self.phase = Phase::Idle;
        self.events.push(Event::Ready { offset });
        self.events.push(Event::Prompt {
            offset,
            exit_code: None,
        });
    }
}

/// The detector's core while one output chunk is being fed: callbacks from the line view land
/// here, and the turn buffer takes bytes from `chunk` up to whatever offset a decision needs.
struct Feed<'a> {
    core: &'a mut Core,
    chunk: &'a [u8],
    base: u64,
}

impl Feed<'_> {
    /// Brings the tail and the turn buffer up to stream offset `upto` (within this chunk).
    /// Offsets past this chunk (or before what was already taken) are clamped.
    fn sync(&mut self, upto: u64) {
        let upto = upto.min(self.base + self.chunk.len() as u64);
        let core = &mut *self.core;
        if upto <= core.synced {
            return;
        }
        let from = (core.synced - self.base) as usize;
        let to = (upto - self.base) as usize;
        let bytes = &self.chunk[from..to];
        #[cfg(feature = "text")]
        core.screen.feed(bytes);
        if bytes.len() >= TAIL_BYTES && core.tail.len() + bytes.len() > 2 * TAIL_BYTES {
            // All that stays is these bytes' last `TAIL_BYTES`: only they are copied.
            core.tail.clear();
            core.tail
                .extend_from_slice(&bytes[bytes.len() - TAIL_BYTES..]);
        } else {
            core.tail.extend_from_slice(bytes);
            if core.tail.len() > 2 * TAIL_BYTES {
                let cut = core.tail.len() - TAIL_BYTES;
                core.tail.drain(..cut);
            }
        }
        if let Some(turn) = &mut core.turn {
            // The buffer covers `buf_start..buf_start + buf.len()` with no gap: once it is full,
            // later bytes are not taken even after its head moves to the preamble.
            let buf_end = turn.buf_start + turn.buf.len() as u64;
            let from = buf_end.max(core.synced);
            if buf_end == from && from < upto {
                let room = core.max_turn_bytes.saturating_sub(turn.buf.len());
                let skip = (from - core.synced) as usize;
                let take = (bytes.len() - skip).min(room);
                turn.buf.extend_from_slice(&bytes[skip..skip + take]);
            }
        }
        core.synced = upto;
    }

    /// The first prompt; a line typed ahead of it starts its turn here.
    fn ready(&mut self, at: u64) {
        self.core.ready(at);
        self.start_queued(at);
    }

    /// Starts the turn of the next line typed ahead, if any (without OSC 133, whose `C` mark
    /// does that). The prompt line it is echoed on is skipped like any submit's.
    fn start_queued(&mut self, at: u64) {
        self.start_queued_echoed(at, false);
    }

    /// [`Feed::start_queued`], where `echoed` says the line was already drawn on the prompt
    /// line that ended the previous turn: the next line is the program's.
    fn start_queued_echoed(&mut self, at: u64, echoed: bool) {
        if self.core.osc133 || self.core.turn.is_some() {
            return;
        }
        if let Some(input) = self.core.pending.pop_front() {
            self.sync(at);
            self.core.start_turn(vec![input], !echoed, at);
            if let Some(turn) = &mut self.core.turn {
                turn.queued = true;
                turn.echo_seen = echoed;
            }
        }
    }

    /// Whether `text` is a prompt with a line typed ahead drawn after it (a line editor
    /// reading what was typed while the last command ran): `Some(None)` for the next line
    /// waiting, `Some(Some(i))` for the running turn's input `i` (≥ 1), taken for a line of the
    /// running command because it was submitted before that printed anything and the program
    /// had drawn something on its row (a command sent with the next one in one write).
    fn typed_ahead_on_prompt(&self, text: &[u8]) -> Option<Option<usize>> {
        let turn = self.core.turn.as_ref()?;
        if let Some(at) = turn
            .inputs
            .iter()
            .skip(1)
            .position(|input| self.prompt_with_echo(text, input))
        {
            return Some(Some(at + 1));
        }
        let next = self.core.pending.front()?;
        let queued_here = turn.typed_ahead > 0 || self.core.preset.osc_idle().is_none();
        (queued_here && self.prompt_with_echo(text, next)).then_some(None)
    }

    /// Whether `text` is a prompt with `next` drawn after it (a readline program reading the
    /// line it was given while busy: `>>> print(1)`).
    fn prompt_with_echo(&self, text: &[u8], next: &str) -> bool {
        prompt_then(&self.core.preset, self.core.osc133, text, next)
    }

    fn prompt_matches(&self, text: &[u8]) -> bool {
        !self.core.osc133 && self.core.preset.prompt().is_some_and(|p| p.is_match(text))
    }

    /// An agent that redraws its footer in place and may set no status title (Claude Code under
    /// tmux) is idle when, once it was busy, the screen shows its idle footer and no busy line,
    /// and nobody is typing (`typed`: it hides its busy hints then). Checked where a chunk of
    /// output ends: the frame drawn by then is what a person sees.
    #[cfg(feature = "text")]
    fn check_idle_screen(&mut self, end: u64, typed: &str) {
        let core = &mut *self.core;
        let preset = Arc::clone(&core.preset);
        let (Some(idle), Some(busy)) = (preset.idle_line(), preset.busy_line()) else {
            return;
        };
        if core.phase != Phase::Busy
            || core.osc_busy
            || !core.turn.as_ref().is_some_and(|t| t.busy_seen)
        {
            return;
        }
        let typing = core.typing(typed);
        let screen = core.screen.snapshot(0);
        let shows =
            |re: &regex::bytes::Regex| screen.lines.iter().any(|row| re.is_match(row.as_bytes()));
        // A person typing hides Claude's busy hints, so its idle footer alone does not say the
        // reply is over; the line it draws once a reply is over does, when this turn drew it
        // (not an older reply's, on screen when the turn began). With the agent's hooks its own
        // word, which comes with the message, ends the turn instead: a turn the screen ended
        // first would end at the next key without it.
        if typing
            && (core.hooks != AgentHooks::Off
                || !preset.done_line().is_some_and(|done| {
                    screen
                        .lines
                        .iter()
                        .any(|row| done.is_match(row.as_bytes()) && !core.screen.was_before(row))
                }))
        {
            return;
        }
        if shows(idle) && !rows_show(busy, &screen.lines) {
            core.line_veto = false;
            self.finish(end);
        }
    }

    /// A TUI that sends the questions it had queued as one message (Claude Code) echoes the
    /// next ones with their prompt too before it answers: when a queued turn's answer begins
    /// and the screen shows the next questions typed ahead echoed that way, they are this
    /// turn's.
    fn take_questions_sent_along(&mut self, at: u64) {
        if self.core.preset.osc_idle().is_none()
            || !self.core.turn.as_ref().is_some_and(|turn| turn.queued)
        {
            return;
        }
        self.sync(at);
        while let Some(next) = self.core.pending.front().cloned() {
            if !self.core.shows_echo(&next) {
                break;
            }
            self.core.pending.pop_front();
            if let Some(turn) = &mut self.core.turn {
                turn.inputs.push(next);
            }
        }
    }

    /// The line being drawn when a chunk ends may be a prompt waiting for input.
    fn check_partial_line(&mut self, text: &[u8], start: u64) {
        if text.trim_ascii().is_empty()
            || !self.prompt_matches(text)
            || !self.core.accepts_prompt_line()
        {
            return;
        }
        // Where the screen decides (no preset signal yet, or `generic`), a prompt character at
        // the end of a chunk is no prompt while the screen shows the agent at work: an agent's
        // frame cut short by a stall right after its input row's `>`.
        if self.core.quiet_decides() && self.core.turn.is_some() {
            self.sync(start);
            if self.core.spinner_on_screen() {
                return;
            }
        }
        self.core.signal_seen = true;
        if self.core.phase == Phase::Starting {
            self.core.learn_prompt_header_before(start);
            self.ready(start);
        } else if self.core.phase == Phase::Busy
            && self.core.turn.as_ref().is_some_and(|t| !t.skip_line)
            && !self.core.holds_prompt(start)
        {
            let end = self.core.prompt_start_before(start);
            self.finish(end);
        }
    }

    /// Ends the running turn at stream offset `end`, reporting it if the agent said anything,
    /// and starts the turn of the next line typed ahead, if any.
    fn finish(&mut self, end: u64) {
        self.finish_then_queued(end, false);
    }

    /// Whether `text`, drawn while the question typed ahead is held on the agent's prompt
    /// decoration ([`Running::ahead_held`]), is the answer to that question: text of its own
    /// (not a spinner frame, an interrupt hint, a rule or the echo again) that the agent draws
    /// on a row below the echo and above its input row, in a row that is not its spinner's.
    fn answer_below_held_echo(&mut self, text: &[u8], start: u64) -> bool {
        if self.core.phase != Phase::Busy
            || !self.core.turn.as_ref().is_some_and(|turn| turn.ahead_held)
        {
            return false;
        }
        let Some(next) = self.core.pending.front().cloned() else {
            return false;
        };
        let line = String::from_utf8_lossy(text);
        if !quiet::is_answer_text(&line) || is_echo(&line, std::slice::from_ref(&next)) {
            return false;
        }
        self.sync(start);
        self.core.drawn_below_echo(&next)
    }

    /// Where the screen decides, the question typed ahead shown on the agent's prompt
    /// decoration above its input row while the screen shows it at work is held as when the
    /// line view sees it drawn behind a prompt (below, in the line handler): an agent that
    /// draws its screen cell run by cell run (OpenCode) never writes its decoration and the
    /// question as one line. Checked where a frame (or a chunk outside one) ends, the cursor
    /// back in the input row.
    fn hold_ahead_shown_on_screen(&mut self, at: u64) {
        if self.core.phase != Phase::Busy
            || !self.core.quiet_decides()
            || !self
                .core
                .turn
                .as_ref()
                .is_some_and(|turn| turn.typed_ahead > 0 && !turn.ahead_held)
        {
            return;
        }
        let Some(next) = self.core.pending.front().cloned() else {
            return;
        };
        self.sync(at);
        if self.core.ahead_shown_above_input(&next)
            && self.core.spinner_on_screen()
            && let Some(turn) = &mut self.core.turn
        {
            turn.ahead_held = true;
        }
    }

    /// Ends the running turn at `at`, where the answer to the question typed ahead begins
    /// below its echo, and starts that question's turn there. Unlike [`Feed::finish`], not at
    /// the end of an open synchronized frame: the frame that draws the answer's first words is
    /// the next turn's.
    fn split_at_answer(&mut self, at: u64) {
        if self.core.waits_for_agent(at, true) {
            return;
        }
        self.core.finish_at_frame_end = None;
        self.core.requeue_unread_inputs();
        // What the frame drew above the answer (the reply's last rows, completed in the frame
        // that begins the answer) is this turn's.
        self.sync(at);
        #[cfg(feature = "text")]
        self.core.screen.sample_drawn_rows();
        self.end_turn(at);
        self.start_queued_echoed(at, true);
    }

    /// [`Feed::finish`], where `echoed` says the next line typed ahead is drawn on the prompt
    /// line that ends this turn.
    fn finish_then_queued(&mut self, end: u64, echoed: bool) {
        if self.core.waits_for_agent(end, echoed) {
            return;
        }
        let echoed = echoed
            || self
                .core
                .turn
                .as_ref()
                .and_then(|t| t.screen_end)
                .is_some_and(|(_, echoed)| echoed);
        // Ending in the middle of a synchronized frame would cut what it draws next (Codex says
        // idle, then draws `■ Conversation interrupted` in the same frame): the turn ends with it.
        if self.core.frame_open && self.core.turn.is_some() {
            let since = self.core.finish_at_frame_end.map_or(end, |(_, at)| at);
            if end.saturating_sub(since) <= MAX_OPEN_FRAME_BYTES {
                self.core.finish_at_frame_end = Some((echoed, since));
                return;
            }
        }
        self.core.finish_at_frame_end = None;
        self.core.requeue_unread_inputs();
        self.end_turn(end);
        self.start_queued_echoed(end, echoed);
    }

    /// Ends the running turn at stream offset `end`, reporting it if the agent said anything.
    fn end_turn(&mut self, end: u64) {
        self.sync(end);
        let core = &mut *self.core;
        let Some(mut turn) = core.turn.take() else {
            return;
        };
        core.phase = Phase::Idle;
        core.line_veto = false;
        #[cfg(feature = "text")]
        let mut recorded = core.screen.finish_recording();
        // The first line of a two-line prompt, already drawn when the turn ends at it, is not
        // the reply's.
        #[cfg(feature = "text")]
        if let Some(header) = &core.prompt_header
            && let Some(last) = recorded.lines.iter().rposition(|l| !l.trim().is_empty())
            && recorded.lines[last].trim() == lossy(header).trim()
        {
            recorded.lines.truncate(last);
        }
        // So is the next prompt, already drawing the line typed ahead behind it (the turn ended
        // when that line was whole: the screen may show it, or part of it, and what the line
        // editor draws under it, such as node's completion preview).
        // (Where the screen decides, the agent's live area may be drawn under that line — its
        // spinner, its input box —, the frame that drew it ending the turn, or the answer to
        // it begun below: the turn ends at that line wherever it is.)
        #[cfg(feature = "text")]
        if core.preset.osc_idle().is_none()
            && let Some(next) = core.pending.front()
            && let Some(at) = recorded
                .lines
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, line)| !line.trim().is_empty())
                .take(if core.quiet_decides() { usize::MAX } else { 3 })
                .find(|(_, line)| {
                    prompt_then_part(&core.preset, line, next)
                        || (core.quiet_decides() && core.input_decoration_then_part(line, next))
                })
                .map(|(at, _)| at)
        {
            recorded.lines.truncate(at);
            // The rows of the echo's block above it (its decoration alone: OpenCode's `┃`)
            // go with it.
            while recorded
                .lines
                .last()
                .is_some_and(|line| line.trim().is_empty() || core.is_input_decoration(line.trim()))
            {
                recorded.lines.pop();
            }
        }
        // So is the shell's end-of-output mark still drawn at the foot (fish's `⏎`, behind a
        // `^C` echo or alone).
        #[cfg(feature = "text")]
        if let Some(mark) = core.last_eol_mark {
            for line in recorded.lines.iter_mut().rev() {
                let body = line.trim_end();
                let Some(before) = body.strip_suffix(mark) else {
                    if body.trim().is_empty() {
                        continue;
                    }
                    break;
                };
                if !before.trim().is_empty() && !is_interrupt_echo(before.as_bytes()) {
                    break;
                }
                *line = before.to_owned();
            }
        }
        // Where the screen said the turn ended, unless its content only began after that.
        let screen_end = turn
            .screen_end
            .map(|(at, _)| at)
            .filter(|&at| turn.content_start.is_some_and(|start| at > start));
        let end = turn.end_mark.or(screen_end).unwrap_or(end);
        let ended_by_agent = turn.agent_done.is_some();
        let message = turn.agent_done.take().flatten();
        if ended_by_agent && !turn.forced {
            core.silent_turns = 0;
        }
        core.screen_behind_agent = ended_by_agent && !turn.screen_ended;
        // A turn whose text the screen never showed still has the agent's message to keep.
        // A command interrupted before it printed anything is a turn all the same: its content
        // is the terminal's `^C` echo, or nothing.
        let start = match turn.content_start {
            Some(start) if turn.saw_text && (start < end || !turn.interrupted) => Some(start),
            _ if message.is_some() => Some(turn.buf_start),
            _ if turn.interrupted => Some(
                turn.interrupt_echo
                    .unwrap_or(end)
                    .clamp(turn.buf_start, end.max(turn.buf_start)),
            ),
            _ => None,
        };
        if let Some(start) = start.filter(|&s| s < end || message.is_some() || turn.interrupted) {
            // A turn kept for its message alone may have no content before its end.
            let end = end.max(start);
            let from = (start - turn.buf_start) as usize;
            let to = ((end - turn.buf_start) as usize).min(turn.buf.len());
            let mut content = std::mem::take(&mut turn.buf);
            content.truncate(to.max(from));
            content.drain(..from.min(content.len()));
            core.seq += 1;
            let truncated = (content.len() as u64) < end - start;
            let mut input = turn.inputs.join("\n");
            while input.ends_with('\n') {
                input.pop();
            }
            core.events.push(Event::TurnCompleted(Turn {
                seq: core.seq,
                start,
                end,
                content,
                input,
                interrupted: turn.interrupted,
                truncated,
                exit_code: turn.exit_code,
                cwd: core.cwd.clone(),
                message,
                ended_by_agent,
                #[cfg(feature = "text")]
                text: {
                    // The questions typed ahead, shown queued under the reply, are echo too.
                    // (Every line typed ahead during the turn: those still waiting, those
                    // Ctrl+C dropped, those taken back from `inputs`.)
                    let echoed: Vec<String> = turn
                        .inputs
                        .iter()
                        .chain(&turn.echoed_ahead)
                        .cloned()
                        .collect();
                    let keys_typed = turn.interrupted || echoed.len() > 1;
                    let own = turn.inputs.len();
                    crate::text::render(
                        &recorded,
                        &echoed,
                        own,
                        &core.preset,
                        keys_typed,
                        core.quiet_input_row.as_deref(),
                        turn.stopped,
                    )
                },
            }));
        }
        core.events.push(Event::Prompt {
            offset: end,
            exit_code: turn.exit_code,
        });
    }

    /// The content begins at `start`: what the turn buffer holds before it is dropped.
    fn confirm_content(&mut self, start: u64) {
        // Content never begins before its turn: a line that began before the turn started (a
        // busy title drawn mid-line) contributes only what came after.
        let start = self
            .core
            .turn
            .as_ref()
            .map_or(start, |turn| start.max(turn.buf_start));
        self.sync(start);
        let core = &mut *self.core;
        let Some(turn) = &mut core.turn else {
            return;
        };
        let head = ((start.saturating_sub(turn.buf_start)) as usize).min(turn.buf.len());
        turn.buf.drain(..head);
        turn.buf_start = start;
        turn.content_start = Some(start);
        // While the buffer was full of what turned out to be echo, later bytes passed it by:
        // take them back from the tail, so that the content does not depend on the chunking.
        let buf_end = start + turn.buf.len() as u64;
        let tail_start = core.synced - core.tail.len() as u64;
        if (tail_start..core.synced).contains(&buf_end) {
            let from = (buf_end - tail_start) as usize;
            let room = core.max_turn_bytes.saturating_sub(turn.buf.len());
            let to = core.tail.len().min(from + room);
            turn.buf.extend_from_slice(&core.tail[from..to]);
        }
    }
}

impl ViewSink for Feed<'_> {
    fn line(&mut self, line: &Line<'_>) {
        let text = line.text;
        let blank = text.trim_ascii().is_empty();
        if !blank && !self.core.osc133 {
            let core = &mut *self.core;
            std::mem::swap(&mut core.last_line, &mut core.line_before);
            core.last_line.0.clear();
            core.last_line.0.extend_from_slice(text);
            core.last_line.1 = line.start;
        }
        if blank {
            if let Some(turn) = &mut self.core.turn {
                turn.skip_line = false;
            }
            return;
        }
        let busy = self
            .core
            .preset
            .busy_line()
            .is_some_and(|b| b.is_match(text) || spans_rows(b, &self.core.prev_line, text));
        self.core.prev_line.clear();
        self.core
            .prev_line
            .extend_from_slice(&text[text.len().saturating_sub(PREV_LINE_BYTES)..]);
        if busy {
            self.core.line_veto = true;
            if let Some(turn) = &mut self.core.turn {
                turn.busy_again();
                // A busy line after this turn's idle title: a dialog the agent waits on.
                turn.held_by_dialog |= turn.idle_armed;
                // Still working, or asking something (a permission menu): not idle after all.
                turn.idle_armed = false;
            }
        }
        // The agent says it stopped the turn itself after a dialog held it (a permission
        // refused): the turn is interrupted, and the prompt it draws next ends it, with no new
        // title. (A full-screen agent draws an old such line again in later turns: those were
        // not held by a dialog, or the agent went busy again after it.)
        if let Some(turn) = &mut self.core.turn
            && turn.held_by_dialog
            && self
                .core
                .preset
                .stopped_line()
                .is_some_and(|s| s.is_match(text))
        {
            turn.interrupted = true;
            turn.stopped = true;
            turn.idle_armed = true;
            self.core.line_veto = false;
            self.core.osc_busy = false;
        }
        if let Some(turn) = &mut self.core.turn
            && !turn.asked
            && self
                .core
                .preset
                .waiting_line()
                .is_some_and(|w| w.is_match(text))
        {
            turn.asked = true;
            let question = lossy(text).trim().to_owned();
            self.core.events.push(Event::Asking { question });
        }
        let skip = self
            .core
            .turn
            .as_mut()
            .is_some_and(|t| std::mem::take(&mut t.skip_line));
        if let Some(turn) = &mut self.core.turn {
            turn.lines_seen += 1;
        }
        // The question typed ahead, held on the agent's prompt decoration while it works
        // (below): text drawn under that echo is its answer, and this reply ends where it
        // begins. (Text drawn above it is this reply growing: the echo was the agent's queue.)
        if self.answer_below_held_echo(text, line.start) {
            self.split_at_answer(line.start);
            return;
        }
        // The question typed ahead drawn right under the line that closes this reply (no other
        // line with text between) is sent: it starts the next turn, as after an idle title.
        // (Drawn anywhere else, `❯ question` / `⎿ Queued`, it is still waiting; under an older
        // reply's done line, redrawn, it is an older question.)
        let after_done = self.core.after_done_line;
        if !text.trim_ascii().is_empty() {
            self.core.after_done_line = self
                .core
                .preset
                .done_line()
                .is_some_and(|d| d.is_match(text))
                && !self.core.was_before(text);
        }
        if self.core.turn.as_ref().is_some_and(|t| {
            (t.ends_at_next_question || (after_done && t.typed_ahead > 0))
                && t.steered_at.is_none_or(|at| line.start >= at)
        }) && self
            .core
            .pending
            .front()
            .is_some_and(|next| is_echo(&lossy(text), std::slice::from_ref(next)))
        {
            // The agent that steers says its turn ended once, for the question it took: the
            // reply it cut short ends here, without its word.
            if self.core.preset.steers_typed_ahead()
                && let Some(turn) = &mut self.core.turn
            {
                turn.forced = true;
            }
            self.finish_then_queued(line.start, true);
            return;
        }
        // Where the screen decides, the question typed ahead drawn on the agent's prompt
        // decoration while the screen shows the agent at work (a spinner, an interrupt hint)
        // ends nothing yet: the agent may show it queued under a reply that goes on, or have
        // taken it. What it draws next decides ([`Feed::answer_below_held_echo`]); if it goes
        // still first, the turn ends at rest.
        if !skip
            && self.core.phase == Phase::Busy
            && self.core.quiet_decides()
            && self.core.accepts_prompt_line()
            && self.typed_ahead_on_prompt(text) == Some(None)
        {
            self.sync(line.start);
            if self.core.spinner_on_screen() {
                if let Some(turn) = &mut self.core.turn {
                    turn.ahead_held = true;
                }
                self.core.line_veto = false;
                return;
            }
        }
        // Where the screen decides (no preset signal yet, or `generic`), a bare prompt line
        // drawn while the screen shows the agent at work is its empty input area, not its rest:
        // a full-screen agent redraws it with everything else when the window is resized. The
        // reply ends when the screen goes still ([`TurnDetector::quiet`]). (A prompt with the
        // question typed ahead after it is that question taken: the next turn, below.)
        if !skip
            && self.core.phase == Phase::Busy
            && self.core.quiet_decides()
            && self.core.turn.is_some()
            && self.typed_ahead_on_prompt(text).is_none()
            && self.prompt_matches(text)
        {
            self.sync(line.start);
            if self.core.spinner_on_screen() {
                self.core.line_veto = false;
                return;
            }
        }
        if let Some(from) = self.typed_ahead_on_prompt(text).filter(|_| !skip)
            && self.core.phase == Phase::Busy
            && self.core.accepts_prompt_line()
        {
            // The prompt, and the line typed ahead already drawn on it: the next turn begins.
            self.core.signal_seen = true;
            // Lines taken for the running command's own (submitted before it printed
            // anything) were typed ahead after all: they wait for their turns again.
            if let Some(from) = from
                && let Some(turn) = &mut self.core.turn
            {
                let ahead: Vec<String> = turn.inputs.drain(from..).collect();
                turn.remember_ahead(ahead.iter().cloned());
                self.core.wait_again(ahead);
            }
            self.core.line_veto = false;
            let end = self.core.prompt_start(line.start);
            self.finish_then_queued(end, true);
            return;
        }
        if !skip && self.prompt_matches(text) {
            let accepted = self.core.accepts_prompt_line();
            self.core.line_veto = false;
            if accepted {
                self.core.signal_seen = true;
                match self.core.phase {
                    Phase::Starting => {
                        self.core.learn_prompt_header();
                        self.ready(line.start);
                    }
                    Phase::Busy => {
                        if !self.core.holds_prompt(line.start) {
                            let end = self.core.prompt_start(line.start);
                            self.finish(end);
                        }
                    }
                    Phase::Idle => {}
                }
            }
            // A prompt line, accepted or not, is the agent's chrome: never the start of content.
            return;
        }
        let mark = self.core.end_of_output_mark(text);
        let Some(turn) = &mut self.core.turn else {
            return;
        };
        if busy || skip || mark || is_interrupt_echo(text) {
            if skip
                && let Some(at) =
                    echoed_input(&self.core.preset, self.core.osc133, text, &turn.inputs)
            {
                turn.echo_seen = true;
                turn.echoed_upto = turn.echoed_upto.max(at + 1);
            }
            if !busy && !skip && turn.interrupted {
                turn.interrupt_echo.get_or_insert(line.start);
            }
            return;
        }
        if turn.content_start.is_none() {
            let bytes = text;
            let text = lossy(text);
            // A REPL evaluating a literal prints the input back (`>>> 42`, then `42`): once the
            // echo has been drawn, the bare input is an answer, not a second echo.
            let answer = turn.echo_seen && is_bare_input(&text, &turn.inputs);
            // The terminal's echo of a line typed ahead (on a row of its own), and the prompt
            // drawn again with the turn's input behind it (a queued line's, after zsh's
            // end-of-output mark ended the turn before), are echo too.
            let echoed = echoed_input(&self.core.preset, self.core.osc133, bytes, &turn.inputs);
            // The terminal echoes a line typed ahead once: the same line bare again is what the
            // program printed (`cat` reading it).
            let ahead_echo = {
                let line = text.trim();
                let typed = turn
                    .echoed_ahead
                    .iter()
                    .filter(|i| i.trim() == line)
                    .count();
                let seen = turn
                    .ahead_echoes
                    .iter()
                    .filter(|i| i.as_str() == line)
                    .count();
                (seen < typed).then(|| line.to_owned())
            };
            if !answer && (echoed.is_some() || ahead_echo.is_some()) {
                turn.ahead_echoes
                    .extend(ahead_echo.filter(|_| echoed.is_none()));
                turn.echo_seen = true;
                if let Some(at) = echoed {
                    turn.echoed_upto = turn.echoed_upto.max(at + 1);
                }
                return;
            }
            // The first line of a two-line prompt is the prompt's, never where content begins.
            if self
                .core
                .prompt_header
                .as_deref()
                .is_some_and(|header| header.trim_ascii() == bytes.trim_ascii())
            {
                return;
            }
            self.take_questions_sent_along(line.start);
            self.confirm_content(line.start);
        }
        if let Some(turn) = &mut self.core.turn {
            turn.saw_text = true;
        }
    }

    fn osc(&mut self, payload: &str, start: u64, end: u64) {
        if let Some(mark) = payload.strip_prefix("133;") {
            self.core.osc133 = true;
            self.osc133(mark, start, end);
        } else if let Some(url) = payload.strip_prefix("7;") {
            self.core.cwd = cwd_from_url(url);
        }
        let preset = Arc::clone(&self.core.preset);
        if preset
            .osc_busy()
            .is_some_and(|b| b.is_match(payload.as_bytes()))
        {
            self.core.osc_status = true;
            self.core.signal_seen = true;
            self.core.osc_busy = true;
            // Busy again after a dialog: it was answered and the agent went on.
            if let Some(turn) = &mut self.core.turn {
                turn.held_by_dialog = false;
            }
            match &mut self.core.turn {
                // Idle, then busy again on a question typed ahead (Claude Code shows its idle
                // title for a few ms before sending it): the turn ends where the question is
                // drawn, after the reply's last lines.
                Some(turn) if turn.idle_armed && turn.typed_ahead > 0 => {
                    turn.ends_at_next_question = true;
                    turn.busy_again();
                }
                Some(turn) => turn.busy_again(),
                // The agent went busy on input we did not see submitted (a key encoding we do
                // not parse, or an agent-initiated action): its output is still a turn. Before
                // anything was submitted it is the agent starting up (Codex works once after its
                // first idle mark): no turn.
                // Nor is its screen catching up after the agent said its turn ended (Claude Code
                // draws one more busy title before its idle one).
                None if self.core.phase == Phase::Idle
                    && self.core.submitted
                    && !self.core.screen_behind_agent
                    && preset.osc_idle().is_some() =>
                {
                    self.sync(end);
                    self.core.start_turn(Vec::new(), false, end);
                    if let Some(turn) = &mut self.core.turn {
                        turn.busy_seen = true;
                    }
                }
                None => {}
            }
        } else if preset
            .osc_idle()
            .is_some_and(|i| i.is_match(payload.as_bytes()))
        {
            self.core.osc_status = true;
            self.core.signal_seen = true;
            self.core.osc_busy = false;
            self.core.line_veto = false;
            self.core.screen_behind_agent = false;
            let done = preset
                .osc_done()
                .is_some_and(|d| d.is_match(payload.as_bytes()));
            match self.core.phase {
                Phase::Starting => self.ready(start),
                Phase::Busy if !self.core.vetoed() => {
                    if preset.prompt().is_some() && !done {
                        if let Some(turn) = &mut self.core.turn {
                            turn.idle_armed = true;
                            turn.ends_with_chunk = preset.osc_done().is_some();
                        }
                    } else {
                        self.finish(start);
                    }
                }
                _ => {}
            }
        }
    }

    fn private_mode(&mut self, mode: u16, set: bool, end: u64) {
        if mode == 2026 {
            self.core.frame_open = set;
            if let Some((echoed, _)) = self.core.finish_at_frame_end.take().filter(|_| !set) {
                self.finish_then_queued(end, echoed);
            }
            if !set {
                self.hold_ahead_shown_on_screen(end);
            }
        }
        if mode == 2004 && self.core.bracketed_paste != set {
            self.core.bracketed_paste = set;
            self.core
                .events
                .push(Event::BracketedPaste { enabled: set });
        }
    }
}

impl Feed<'_> {
    /// OSC 133 semantic prompt marks: `A` prompt start, `B` input start, `C` output start,
    /// `D[;exit]` command end.
    fn osc133(&mut self, mark: &str, start: u64, end: u64) {
        let mut parts = mark.split(';');
        match parts.next() {
            Some("A") => match self.core.phase {
                Phase::Starting => self.ready(start),
                Phase::Busy => self.finish(start),
                Phase::Idle => {}
            },
            Some("C") => {
                if self.core.turn.is_none() && self.core.phase != Phase::Busy {
                    self.sync(end);
                    let input = self.core.pending.pop_front();
                    self.core
                        .start_turn(input.into_iter().collect(), false, end);
                }
                self.confirm_content(end);
            }
            Some("D") => {
                if let Some(turn) = &mut self.core.turn {
                    turn.end_mark.get_or_insert(start);
                    turn.exit_code = parts.next().and_then(|code| code.trim().parse().ok());
                }
            }
            _ => {}
        }
    }
}

/// How much of the last line a busy line wrapped over two rows is matched with.
const PREV_LINE_BYTES: usize = 512;

/// Whether `re` matches across the seam of `above` and `line` joined by a space: a line the
/// agent wrapped over two rows (`⠦ Thinking… (esc to` / `cancel, 3s)`), which matches neither
/// row alone.
fn spans_rows(re: &regex::bytes::Regex, above: &[u8], line: &[u8]) -> bool {
    let above = above.trim_ascii();
    let line = line.trim_ascii();
    if above.is_empty() || line.is_empty() {
        return false;
    }
    let mut joined = Vec::with_capacity(above.len() + 1 + line.len());
    joined.extend_from_slice(above);
    joined.push(b' ');
    joined.extend_from_slice(line);
    let seam = above.len();
    re.find_iter(&joined)
        .any(|m| m.start() < seam && m.end() > seam + 1)
}

#[cfg(feature = "text")]
/// Whether `re` matches a row of `rows`, or a line wrapped over two of them.
pub(super) fn rows_show(re: &regex::bytes::Regex, rows: &[String]) -> bool {
    rows.iter().any(|row| re.is_match(row.as_bytes()))
        || rows
            .windows(2)
            .any(|pair| spans_rows(re, pair[0].as_bytes(), pair[1].as_bytes()))
}

/// Whether `line` is the terminal's or the agent's echo of a submitted line: the input itself,
/// behind at most a short prompt or box decoration that ends where a word would (`$ ls`,
/// `│ > ls`, `>>>ls`; not `als`).
pub(crate) fn is_echo(line: &str, inputs: &[String]) -> bool {
    let line = line.trim_matches(|c: char| c.is_whitespace() || "│┃|".contains(c));
    inputs.iter().any(|input| {
        let input = input.trim();
        !input.is_empty()
            && (line == input
                || line.strip_suffix(input).is_some_and(|decoration| {
                    decoration.trim().chars().count() <= 12
                        && decoration
                            .chars()
                            .next_back()
                            .is_some_and(|c| !c.is_alphanumeric())
                }))
    })
}

/// `bytes` as text, with U+FFFD for what is not UTF-8: borrowed when all of it is, which
/// `str::from_utf8` checks far quicker than the lossy decoder walks ASCII (every line of
/// output goes through here, issue 29).
fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Which of `inputs` (the last one) `line` echoes: behind a short decoration (see [`is_echo`])
/// or behind a prompt of `preset`, whatever its length.
fn echoed_input(preset: &Preset, osc133: bool, line: &[u8], inputs: &[String]) -> Option<usize> {
    let text = lossy(line);
    inputs.iter().rposition(|input| {
        is_echo(&text, std::slice::from_ref(input)) || prompt_then(preset, osc133, line, input)
    })
}

/// Whether `text` is a prompt line of `preset` with `next` drawn after it (never with OSC 133
/// marks, which alone say where prompts are).
fn prompt_then(preset: &Preset, osc133: bool, text: &[u8], next: &str) -> bool {
    let next = next.trim();
    let text = lossy(text);
    let text = text.trim_end();
    !osc133
        && !next.is_empty()
        && text.strip_suffix(next).is_some_and(|prompt| {
            preset
                .prompt()
                .is_some_and(|p| p.is_match(prompt.as_bytes()))
        })
}

#[cfg(feature = "text")]
/// Whether `line` is a prompt line of `preset` with the beginning of `next` (or all of it)
/// drawn after it: a line editor drawing a line typed ahead. (A prompt with nothing after it
/// is not enough: a line of output may end in `$`, `#` or `%`.)
fn prompt_then_part(preset: &Preset, line: &str, next: &str) -> bool {
    let Some(prompt) = preset.prompt() else {
        return false;
    };
    let line = line.trim_end();
    let next = next.trim();
    line.char_indices()
        .map(|(at, _)| at)
        .chain(std::iter::once(line.len()))
        .any(|at| {
            let drawn = line[at..].trim_start();
            !drawn.is_empty() && next.starts_with(drawn) && prompt.is_match(&line.as_bytes()[..at])
        })
}

/// Whether `line` is one of `inputs` with nothing around it but white space.
pub(crate) fn is_bare_input(line: &str, inputs: &[String]) -> bool {
    let line = line.trim();
    inputs.iter().any(|input| input.trim() == line)
}

/// The terminal echoes Ctrl+C as `^C`: that is the user's keystroke, not agent output.
fn is_interrupt_echo(line: &[u8]) -> bool {
    let mut rest = line.trim_ascii();
    while let Some(after) = rest.strip_prefix(b"^C") {
        rest = after.trim_ascii_start();
    }
    rest.is_empty() && !line.trim_ascii().is_empty()
}

/// `file://host/path` (OSC 7) to a local path, percent-decoded.
fn cwd_from_url(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = &rest[rest.find('/')?..];
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = path.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` chunks of plain log lines, none a prompt (about 36 KiB each).
    fn log_chunks(count: usize) -> Vec<Vec<u8>> {
        let line = b"\x1b[32mINFO\x1b[0m a line of a flood, $5 and 100% not a prompt\r\n";
        vec![line.repeat(600); count]
    }

    #[test]
    fn a_flood_with_no_turn_is_skimmed_and_the_prompt_it_ends_with_is_found() {
        let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("python").unwrap()));
        assert_eq!(detector.flood(true).count(), 0);
        let mut offset = 0;
        for chunk in log_chunks(64) {
            assert_eq!(detector.feed_output(&chunk).count(), 0);
            offset += chunk.len() as u64;
        }
        // A prompt in the middle of it scrolls away unjudged, as do the lines.
        assert_eq!(detector.feed_output(b">>> \r\n").count(), 0);
        offset += 6;
        for chunk in log_chunks(4) {
            assert_eq!(detector.feed_output(&chunk).count(), 0);
            offset += chunk.len() as u64;
        }
        assert_eq!(
            detector.view.current_start(),
            0,
            "the line view was fed none of the flood"
        );
        assert_eq!(detector.phase(), Phase::Starting);
        assert_eq!(detector.feed_output(b">>> ").count(), 0);
        // Over: the lines it ended with are judged, and its last line is the prompt.
        let events: Vec<Event> = detector.flood(false).collect();
        assert_eq!(
            events,
            [
                Event::Ready { offset },
                Event::Prompt {
                    offset,
                    exit_code: None
                }
            ]
        );
        assert_eq!(detector.view.current_start(), offset);
        // The turn after it is exact.
        detector.feed_input(b"6*7\r").for_each(drop);
        let events: Vec<Event> = detector.feed_output(b"6*7\r\n42\r\n>>> ").collect();
        let Some(Event::TurnCompleted(turn)) = events.first() else {
            panic!("{events:?}")
        };
        assert_eq!(
            (turn.input.as_str(), &turn.content[..]),
            ("6*7", &b"42\r\n"[..])
        );
        assert_eq!(turn.start, offset + 9, "under its echo");
    }

    #[test]
    fn what_a_skimmed_flood_ends_with_is_found_however_it_is_cut() {
        let mut stream = log_chunks(2).concat();
        stream.extend_from_slice(b"\x1b[1m>>> ");
        let offset = stream.len() as u64 - 8;
        for size in [1, 2, 3, 5, 7, 64, 1000, 4096, stream.len()] {
            let mut detector =
                TurnDetector::new(DetectorConfig::new(Preset::named("python").unwrap()));
            detector.flood(true).for_each(drop);
            for chunk in stream.chunks(size) {
                assert_eq!(detector.feed_output(chunk).count(), 0, "chunks of {size}");
            }
            assert_eq!(detector.view.current_start(), 0, "chunks of {size}");
            let events: Vec<Event> = detector.flood(false).collect();
            assert_eq!(
                events.first(),
                Some(&Event::Ready { offset }),
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn under_a_flood_a_mode_an_input_and_a_running_turn_see_every_line() {
        let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("shell").unwrap()));
        detector.feed_output(b"$ ").for_each(drop);
        detector.flood(true).for_each(drop);
        let mut offset = 2;
        for chunk in log_chunks(8) {
            assert_eq!(detector.feed_output(&chunk).count(), 0);
            offset += chunk.len() as u64;
        }
        assert_eq!(
            detector.view.current_start(),
            0,
            "skimmed: still on the prompt's line"
        );
        // A mode set in the flood is seen at once.
        let events: Vec<Event> = detector.feed_output(b"\x1b[?2004h$ ").collect();
        assert_eq!(events, [Event::BracketedPaste { enabled: true }]);
        offset += 10;
        assert_eq!(
            detector.view.current_start(),
            offset - 10,
            "judged up to here"
        );
        // So is one whose escape the output cut in two.
        let mut chunk = log_chunks(1).remove(0);
        chunk.extend_from_slice(b"\x1b");
        assert_eq!(detector.feed_output(&chunk).count(), 0);
        let events: Vec<Event> = detector.feed_output(b"[?2004l$ ").collect();
        assert_eq!(events, [Event::BracketedPaste { enabled: false }]);
        offset += chunk.len() as u64 + 9;
        // A command typed at the prompt the flood ended with: its turn sees every line of its
        // own flood, and ends at the prompt after it.
        detector.feed_output(b"ls").for_each(drop);
        let events: Vec<Event> = detector.feed_input(b"ls\r").collect();
        assert!(
            events.contains(&Event::Submitted { input: "ls".into() }),
            "{events:?}"
        );
        let mut content = b"\r\n".to_vec();
        assert_eq!(detector.feed_output(b"\r\n").count(), 0);
        for chunk in log_chunks(8) {
            assert_eq!(detector.feed_output(&chunk).count(), 0);
            content.extend_from_slice(&chunk);
        }
        assert_eq!(
            detector.view.current_start(),
            offset + 2 + content.len() as u64,
            "not skimmed while a turn runs"
        );
        let events: Vec<Event> = detector.feed_output(b"$ ").collect();
        let Some(Event::TurnCompleted(turn)) = events.first() else {
            panic!("{events:?}")
        };
        assert_eq!(turn.input, "ls");
        assert_eq!(turn.content, content[2..]);
    }

    #[test]
    fn lines_typed_ahead_during_one_long_turn_are_remembered_in_bounds() {
        // A program that reads what is pasted into it and never prompts again (a sink): every
        // line is typed ahead of the turn that never ends.
        let mut detector = TurnDetector::new(DetectorConfig::new(
            Preset::named("python").expect("preset"),
        ));
        detector.feed_output(b">>> ").for_each(drop);
        detector.feed_input(b"run()\r").for_each(drop);
        detector.feed_output(b"run()\r\nworking\r\n").for_each(drop);
        for n in 0..1000 {
            detector
                .feed_input(format!("pasted line {n}\r").as_bytes())
                .for_each(drop);
        }
        let turn = detector.core.turn.as_ref().expect("the turn runs");
        assert_eq!(turn.echoed_ahead.len(), MAX_PENDING_INPUTS);
        assert_eq!(
            turn.echoed_ahead.last().map(String::as_str),
            Some("pasted line 999")
        );
        assert!(detector.core.pending.len() <= MAX_PENDING_INPUTS);
    }

    #[test]
    fn cwd_urls_are_decoded() {
        assert_eq!(
            cwd_from_url("file://host/tmp/a%20b").as_deref(),
            Some("/tmp/a b")
        );
        assert_eq!(cwd_from_url("file:///root").as_deref(), Some("/root"));
        assert_eq!(cwd_from_url("kitty-shell-cwd://h/x").as_deref(), Some("/x"));
        assert_eq!(cwd_from_url("garbage"), None);
    }

    #[test]
    fn keys_a_tui_took_for_a_dialog_are_not_part_of_the_next_line() {
        let mut detector =
            TurnDetector::new(DetectorConfig::new(Preset::named("codex").expect("preset")));
        detector
            .feed_output(
                b"\x1b]7501;state=idle\x1b\\\x1b[2J\x1b[H> done\r\n\x1b[3;1H\xe2\x80\xba tell me",
            )
            .for_each(drop);
        let events: Vec<Event> = detector.feed_input(b"ytell me\r").collect();
        assert!(
            events.contains(&Event::Submitted {
                input: "tell me".to_owned()
            }),
            "{events:?}"
        );
    }

    #[test]
    fn echo_lines_are_recognised() {
        let inputs = ["what is 2+2".to_owned()];
        assert!(is_echo("$ what is 2+2", &inputs));
        assert!(is_echo("│ > what is 2+2   │", &inputs));
        assert!(!is_echo("The answer to what is 2+2 is 4", &inputs));
        assert!(!is_echo("anything", &[String::new()]));
        assert!(!is_echo("14", &["4".to_owned()]));
        assert!(is_echo(">>>4", &["4".to_owned()]));
        assert!(is_bare_input("  4 ", &["4".to_owned()]));
        assert!(!is_bare_input("$ 4", &["4".to_owned()]));
        assert!(is_interrupt_echo(b"^C"));
        assert!(!is_interrupt_echo(b"^C then more"));
    }
}
