//! One live terminal screen per session, with no I/O.
//!
//! [`Screen`] is a terminal emulator (alacritty's, the one Zed embeds) fed the bytes a program
//! writes to its terminal, in order, however they are chunked. It keeps what a person's
//! terminal keeps: the visible rows and the lines that scrolled into history above them —
//! including the lines an inline-viewport TUI pushes out of a scroll region that starts at the
//! top of the screen, as xterm and tmux keep them. History is held as *logical* lines (wrapped
//! rows joined), so a resize or a reprint at another width does not change them.
//!
//! For turn detection it records what a turn added: [`Screen::begin_recording`] when input is
//! submitted, [`Screen::finish_recording`] when the agent is idle again, which returns the
//! lines before and the lines since, for the caller to tell the reply from old transcript and
//! chrome. On the alternate screen, where nothing scrolls into history, it stitches the frames
//! a full-screen TUI draws into one transcript instead.
//!
//! ```
//! use clippy_screen::Screen;
//!
//! let mut screen = Screen::new(20, 3);
//! screen.feed(b"$ seq 4\r\n");
//! screen.begin_recording();
//! screen.feed(b"1\r\n2\r\n3\r\n4\r\n$ ");
//! let turn = screen.finish_recording();
//! // "$ seq 4" scrolled into history during the turn; the caller strips it as old.
//! assert_eq!(turn.before, ["$ seq 4"]);
//! assert_eq!(turn.lines, ["$ seq 4", "1", "2", "3", "4", "$"]);
//! assert_eq!(screen.snapshot(1).lines, ["2", "3", "4", "$"]);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod frames;
mod graphemes;
mod markers;
mod redraw;
mod seams;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use alacritty_terminal::grid::{Dimensions, Row};
use alacritty_terminal::index::Line;
use alacritty_terminal::term::cell::{Cell, Flags};
use alacritty_terminal::term::{Config, Term, TermMode};
use alacritty_terminal::vte::ansi::{Processor, Timeout};

use crate::frames::Frames;
use crate::graphemes::Joining;
use crate::markers::{Marker, MarkerScan};
use crate::redraw::Shadow;
use crate::seams::Seams;

pub use crate::redraw::{RESTORE_TERMINAL, RESTORE_TERMINAL_FROM_ALTERNATE};

/// Bytes fed to the emulator between two collections of the rows that scrolled into history.
/// The emulator's own history only has to hold what one slice can scroll.
const SLICE: usize = 512;
/// Rows the emulator holds in its history between two collections (far more than a slice
/// scrolls, barring `CSI n S` storms, whose rows are blank).
const EMULATOR_HISTORY: usize = 4096;
/// Default bound on the history kept as text.
pub const DEFAULT_HISTORY_BYTES: usize = 4 * 1024 * 1024;
/// Lines of history before a recording that are kept to tell old from new.
const BEFORE_LINES: usize = 2000;
/// A logical line longer than this goes into history in pieces of this size (a program that
/// writes megabytes without a line break keeps memory bounded).
const MAX_LINE_BYTES: usize = 64 * 1024;
/// Default bound on the output waiting to be rendered (see [`Screen::feed`]).
pub const DEFAULT_MAX_BEHIND: usize = 8 * 1024 * 1024;

/// A live terminal screen and its history.
pub struct Screen {
    term: Term<Listener>,
    /// The emulator's answers to the program's queries, not taken yet.
    replies: Arc<Mutex<Vec<u8>>>,
    parser: Processor<Unsynchronized>,
    markers: MarkerScan,
    history: History,
    /// The head of a logical line whose first rows are in history and whose rest is on screen.
    partial: String,
    recording: Option<Recording>,
    /// The last character drawn was a zero-width joiner.
    after_zwj: bool,
    /// What the emulator keeps to itself and a redraw needs.
    shadow: Shadow,
    /// Bytes of a character split by the end of the bytes emulated last still to come.
    utf8_needed: usize,
    /// The program uses synchronized output: its frames end there.
    synchronized: bool,
    /// A synchronized frame is being drawn: the screen is not what a terminal shows yet.
    mid_frame: bool,
    /// Output fed and not rendered yet: a ring, so that skipping its oldest part moves nothing.
    pending: VecDeque<u8>,
    max_behind: usize,
    /// Output bytes skipped unrendered because more than `max_behind` waited.
    skipped: u64,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Screen")
            .field("size", &self.size())
            .field("history_lines", &self.history.lines.len())
            .field("recording", &self.recording.is_some())
            .finish_non_exhaustive()
    }
}

/// What the screen showed, as text: the last lines of history, then every visible row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// History lines (logical lines, oldest first), then one entry per visible row, trailing
    /// spaces removed.
    pub lines: Vec<String>,
    /// How many of `lines` are history.
    pub history: usize,
    /// Columns and rows.
    pub size: (u16, u16),
    /// The cursor's row and column on the screen (0-based).
    pub cursor: (u16, u16),
    /// Whether the alternate screen (a full-screen TUI) is shown.
    pub alternate: bool,
}

/// What a recording saw: the lines before it began and the lines it added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// What was on screen and in recent history when the recording began (logical lines,
    /// trailing spaces removed), oldest first: old transcript, the prompt and its input.
    pub before: Vec<String>,
    /// The lines that went into history since the recording began, then the screen as it is
    /// now, as logical lines. When the program cleared the history meanwhile (`ESC [ 3 J`),
    /// only what came after the clear: a reprint of old transcript is then part of it. On the
    /// alternate screen, the frames drawn meanwhile stitched in order of first appearance.
    pub lines: Vec<String>,
    /// Whether `lines` come from alternate-screen frames rather than history.
    pub alternate: bool,
    /// Lines of history that left the bounded history before the recording ended (the
    /// recording's head is missing).
    pub lost: u64,
    /// The screen's width when the recording ended (0: unknown), to tell a line a program
    /// wrapped itself at the edge from one it ended.
    pub cols: u16,
    /// On the alternate screen, the lines a program kept under the text it was adding (a
    /// status or trailer line under a streaming reply): pushed down by rows drawn above them
    /// while the view stood still, or held in place while the view scrolled above them. Empty
    /// otherwise.
    pub kept_under: Vec<String>,
    /// On the alternate screen, every distinct row with text the frames showed during the
    /// recording (trimmed, oldest first, the first few thousand): also rows drawn over since,
    /// such as a status line before the reply's end added its time. Empty otherwise.
    pub shown: Vec<String>,
}

/// The recording in progress.
struct Recording {
    /// Index in [`History`] of the first line added after the recording began.
    from: u64,
    before: Vec<String>,
    /// Frames of the alternate screen, when it was shown at some point.
    frames: Option<Frames>,
    /// Rows erased on the normal screen at the seam of a live area and not drawn again.
    seams: Seams,
}

/// The logical lines that scrolled into history, bounded in bytes, with a running index.
#[derive(Default)]
struct History {
    lines: VecDeque<String>,
    /// Index of `lines[0]` among every line ever added.
    first: u64,
    bytes: usize,
    max_bytes: usize,
    /// Index of the first line after the latest `ESC [ 3 J`.
    cleared_at: u64,
    /// Where each resize happened, as the range of lines it pushed into history (often
    /// empty): a program that repaints its live area after a resize draws some again.
    spills: Vec<std::ops::Range<u64>>,
}

impl History {
    fn end(&self) -> u64 {
        self.first + self.lines.len() as u64
    }

    fn push(&mut self, line: String) {
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.bytes > self.max_bytes && self.lines.len() > 1 {
            if let Some(old) = self.lines.pop_front() {
                self.bytes -= old.len();
                self.first += 1;
            }
        }
        let first = self.first;
        self.spills.retain(|spill| spill.start >= first);
    }

    /// Drops every line, as a terminal does on `ESC [ 3 J`.
    fn clear(&mut self) {
        self.first = self.end();
        self.cleared_at = self.first;
        self.lines.clear();
        self.bytes = 0;
        self.spills.clear();
    }

    /// Lines from index `from` on (those still kept).
    fn since(&self, from: u64) -> impl Iterator<Item = &String> {
        let skip = from.saturating_sub(self.first) as usize;
        self.lines.iter().skip(skip)
    }
}

impl Screen {
    /// A screen of `cols` × `rows` (each at least 1) keeping up to
    /// [`DEFAULT_HISTORY_BYTES`] of history.
    pub fn new(cols: u16, rows: u16) -> Self {
        Self::with_history_bytes(cols, rows, DEFAULT_HISTORY_BYTES)
    }

    /// A screen keeping up to `max_bytes` of history text (older lines are dropped).
    pub fn with_history_bytes(cols: u16, rows: u16, max_bytes: usize) -> Self {
        let config = Config {
            scrolling_history: EMULATOR_HISTORY,
            // The flags a program sets change what keys send: a redraw sets them again.
            kitty_keyboard: true,
            ..Config::default()
        };
        let listener = Listener::default();
        Self {
            replies: Arc::clone(&listener.replies),
            term: Term::new(config, &Size::new(cols, rows), listener),
            parser: Processor::default(),
            markers: MarkerScan::default(),
            history: History {
                max_bytes,
                ..History::default()
            },
            partial: String::new(),
            recording: None,
            after_zwj: false,
            shadow: Shadow::default(),
            utf8_needed: 0,
            synchronized: false,
            mid_frame: false,
            pending: VecDeque::new(),
            max_behind: DEFAULT_MAX_BEHIND,
            skipped: 0,
        }
    }

    /// Feeds bytes the program wrote to its terminal.
    ///
    /// They are rendered when the screen is next read (or on [`Screen::catch_up`]), so feeding
    /// costs a copy: a caller that reads the screen only when it needs to pays for rendering
    /// then, and a flood of output between two reads is rendered once, at the end. Should more
    /// than [`DEFAULT_MAX_BEHIND`] (8 MiB) wait, the oldest half is skipped unrendered, as a
    /// terminal that lost them would: by then their lines would have left the bounded history
    /// anyway, unless the program redraws in place (a TUI is then redrawn wrongly until it
    /// repaints). Reads give the same result however the bytes were cut and whenever the
    /// screen caught up, as long as nothing was skipped.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend(bytes);
        if self.pending.len() > self.max_behind {
            let skip = self.pending.len() - self.max_behind / 2;
            self.pending.drain(..skip);
            self.skipped += skip as u64;
        }
    }

    /// Renders the output fed so far. Reads do this themselves.
    pub fn catch_up(&mut self) {
        while self.catch_up_step(usize::MAX) {}
    }

    /// Renders up to `max` bytes of the output waiting, and says whether more waits: a caller
    /// with idle time renders in steps and goes back to its input between them.
    pub fn catch_up_step(&mut self, max: usize) -> bool {
        let end = self.pending.len().min(max);
        if end > 0 {
            let mut pending = std::mem::take(&mut self.pending);
            let (front, back) = pending.as_slices();
            let first = front.len().min(end);
            self.render(&front[..first]);
            if end > first {
                self.render(&back[..end - first]);
            }
            pending.drain(..end);
            self.pending = pending;
        }
        !self.pending.is_empty()
    }

    /// What a terminal would have answered the queries in the output rendered so far (cursor
    /// position and device status, device attributes, mode reports, keyboard flags), in order,
    /// each once: for a program that has no terminal of its own to answer it. Queries in output
    /// not rendered yet are answered once it is; colour and pixel-size queries are not answered.
    ///
    /// ```
    /// use clippy_screen::Screen;
    ///
    /// let mut screen = Screen::new(20, 5);
    /// screen.feed(b"ab\r\ncd\x1b[6n");
    /// screen.catch_up();
    /// assert_eq!(screen.take_replies(), b"\x1b[2;3R");
    /// assert!(screen.take_replies().is_empty());
    /// ```
    pub fn take_replies(&mut self) -> Vec<u8> {
        self.replies
            .lock()
            .map(|mut replies| std::mem::take(&mut *replies))
            .unwrap_or_default()
    }

    /// Output bytes skipped unrendered so far, because more than [`DEFAULT_MAX_BEHIND`] waited.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    fn render(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (cut, marker) = self.markers.next(&bytes[..bytes.len().min(SLICE)]);
            let (now, rest) = bytes.split_at(cut);
            if marker == Some(Marker::ClearHistory) {
                // The rows scrolled before the clear are history until the clear.
                let (head, last) = now.split_at(now.len() - 1);
                self.emulate(head);
                self.collect_history();
                self.emulate(last);
                self.history.clear();
                if let Some(recording) = &mut self.recording {
                    recording.seams.forget();
                }
            } else if marker == Some(Marker::EraseLine) {
                // The row is read before the erase is emulated (the sequence's last byte).
                let (head, last) = now.split_at(now.len() - 1);
                self.emulate(head);
                self.collect_history();
                self.note_erase();
                self.emulate(last);
            } else {
                self.emulate(now);
                self.collect_history();
                match marker {
                    Some(Marker::SyncBegin) => self.mid_frame = true,
                    Some(Marker::SyncEnd) => {
                        self.synchronized = true;
                        self.mid_frame = false;
                        self.sample_frame();
                    }
                    // Inside a synchronized frame the cursor goes home to draw, not between
                    // frames.
                    Some(Marker::Home) if !self.synchronized => self.sample_frame(),
                    _ => {}
                }
            }
            bytes = rest;
        }
    }

    fn emulate(&mut self, bytes: &[u8]) {
        let mut joining = Joining {
            term: &mut self.term,
            after_zwj: &mut self.after_zwj,
            shadow: &mut self.shadow,
        };
        // The parser (vte 0.15) drops the character after one split between two calls when
        // another split one follows within three bytes: the bytes that complete a split
        // character go in a call of their own. (Cutting a call in two changes nothing else.)
        let (completing, rest) = bytes.split_at(self.utf8_needed.min(bytes.len()));
        for part in [completing, rest] {
            if !part.is_empty() {
                self.parser.advance(&mut joining, part);
            }
        }
        self.utf8_needed = match self.utf8_needed.checked_sub(bytes.len()) {
            Some(needed) if needed > 0 => needed,
            _ => utf8_needed(rest),
        };
    }

    /// The terminal was resized. Rows pushed off the top go into history; nothing is
    /// re-wrapped in history, which holds logical lines.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.catch_up();
        self.sample_frame();
        if let Some(recording) = &mut self.recording {
            recording.seams.forget();
        }
        let size = Size::new(cols, rows);
        if (size.columns, size.lines) != (self.term.columns(), self.term.screen_lines()) {
            // The emulator resets the scroll region on a resize (and only then).
            self.shadow.reset_region();
        }
        // A terminal that loses rows keeps what is drawn at the bottom, as xterm and tmux do:
        // only blank rows under the cursor go, the rest scrolls into history from the top.
        // (alacritty drops every row under the cursor; a TUI whose input box and footer sit
        // there, redrawing its live area for the new size as if the top had scrolled away,
        // then overwrote the rows it thought were gone: Claude Code lost two reply lines.)
        let keep_bottom = self.bottom_under_cursor(size.lines);
        if let Some(bottom) = keep_bottom {
            self.term.grid_mut().cursor.point.line = Line(bottom.0 as i32);
        }
        self.term.resize(size);
        if let Some((bottom, cursor)) = keep_bottom {
            let grid = self.term.grid_mut();
            let line = grid.cursor.point.line.0 - (bottom - cursor) as i32;
            grid.cursor.point.line = Line(line.max(0));
        }
        let before = self.history.end();
        self.collect_history();
        let after = self.history.end();
        self.history.spills.push(before..after);
    }

    /// When the screen is to shrink to `rows` on the normal screen and text is drawn under the
    /// cursor below the new last row: the lowest row with text and the cursor's row.
    fn bottom_under_cursor(&self, rows: usize) -> Option<(usize, usize)> {
        if self.alternate() {
            return None;
        }
        let grid = self.term.grid();
        let cursor = grid.cursor.point.line.0.max(0) as usize;
        let lowest = (0..self.term.screen_lines()).rev().find(|&row| {
            grid[Line(row as i32)]
                .into_iter()
                .any(|cell| cell.c != ' ' && cell.c != '\0')
        })?;
        (lowest > cursor && lowest >= rows).then_some((lowest, cursor))
    }

    /// Columns and rows.
    pub fn size(&self) -> (u16, u16) {
        (self.term.columns() as u16, self.term.screen_lines() as u16)
    }

    /// Whether the alternate screen is shown (as of the output rendered so far).
    fn alternate(&self) -> bool {
        self.term.mode().contains(TermMode::ALT_SCREEN)
    }

    /// The screen as text, after up to `history` lines of history (like
    /// `tmux capture-pane -p -S -N`).
    pub fn snapshot(&mut self, history: usize) -> Snapshot {
        self.catch_up();
        let kept = self.history.lines.len();
        let mut lines: Vec<String> = self
            .history
            .lines
            .iter()
            .skip(kept.saturating_sub(history))
            .cloned()
            .collect();
        let history = lines.len();
        let grid = self.term.grid();
        for row in 0..self.term.screen_lines() {
            let mut text = String::new();
            row_text(&grid[Line(row as i32)], &mut text);
            lines.push(text.trim_end().to_owned());
        }
        let cursor = grid.cursor.point;
        Snapshot {
            lines,
            history,
            size: self.size(),
            cursor: (cursor.line.0.max(0) as u16, cursor.column.0 as u16),
            alternate: self.alternate(),
        }
    }

    /// Starts recording what the program adds (a turn begins). A recording in progress is
    /// replaced.
    pub fn begin_recording(&mut self) {
        self.catch_up();
        let history = &self.history;
        let from = history.end();
        let kept_from = from.saturating_sub(BEFORE_LINES as u64);
        let mut before: Vec<String> = history.since(kept_from).cloned().collect();
        before.extend(self.screen_lines());
        before.retain(|line| !line.is_empty());
        let frames = self.alternate().then(|| {
            let mut frames = Frames::default();
            frames.sample(self.visible_rows());
            frames
        });
        self.recording = Some(Recording {
            from,
            before,
            frames,
            seams: Seams::default(),
        });
    }

    /// Whether a recording is in progress.
    pub fn recording(&self) -> bool {
        self.recording.is_some()
    }

    /// The lines on screen and in recent history when the recording in progress began (empty
    /// when none is in progress), oldest first.
    pub fn lines_before(&self) -> &[String] {
        self.recording
            .as_ref()
            .map_or(&[], |recording| recording.before.as_slice())
    }

    /// Whether `line` (trailing spaces aside) was on screen or in recent history when the
    /// recording in progress began: old transcript redrawn, not something new.
    pub fn was_before(&self, line: &str) -> bool {
        let line = line.trim_end();
        self.recording
            .as_ref()
            .is_some_and(|recording| recording.before.iter().any(|b| b.trim_end() == line))
    }

    /// The logical lines that went into history since the recording in progress began (only
    /// those after the latest `ESC [ 3 J`, and still kept), oldest first; none when no
    /// recording is in progress.
    pub fn history_since_recording(&mut self) -> impl Iterator<Item = &String> {
        self.catch_up();
        let start = self
            .recording
            .as_ref()
            .map_or(u64::MAX, |recording| recording.from)
            .max(self.history.cleared_at);
        self.history.since(start)
    }

    /// Takes into the recording the rows a program has drawn so far of the synchronized frame
    /// it is drawing on the alternate screen: those above the cursor (drawn top down), and
    /// under it those that differ from its last whole frame. For a turn that ends inside a
    /// frame where that frame begins the next one's text (an answer drawn below the reply's
    /// last rows, which the same frame completed): what it drew above is the ending turn's.
    /// Nothing outside such a frame or a recording ([`Screen::finish_recording`] samples
    /// whole frames).
    pub fn sample_drawn_rows(&mut self) {
        self.catch_up();
        if self.synchronized && self.mid_frame && self.alternate() {
            self.sample_partial_frame();
        }
    }

    /// Samples into the recording's frames the frame being drawn on the alternate screen, top
    /// down to the cursor (see `Frames::sample_partial`).
    fn sample_partial_frame(&mut self) {
        let rows = self.visible_rows();
        let cursor = self.term.grid().cursor.point.line.0.max(0) as usize;
        if let Some(recording) = &mut self.recording {
            recording
                .frames
                .get_or_insert_with(Frames::default)
                .sample_partial(rows, cursor);
        }
    }

    /// Ends the recording and returns what it saw (empty when none was in progress).
    pub fn finish_recording(&mut self) -> Recorded {
        self.catch_up();
        // Half a synchronized frame is not what the terminal shows: its last whole frame is.
        // A program without synchronized output draws each frame top down from its cursor-home:
        // of the frame it is drawing, the rows under the cursor that did not change still show
        // the last frame (Claude Code 2.1.332, its transcript scrolled by the question typed
        // ahead, had the reply's last lines twice).
        if self.synchronized {
            if !self.mid_frame {
                self.sample_frame();
            }
        } else if self.alternate() {
            self.sample_partial_frame();
        }
        let Some(mut recording) = self.recording.take() else {
            return Recorded::default();
        };
        if !self.alternate() {
            recording.seams.close(&self.visible_rows());
        }
        let start = recording.from.max(self.history.cleared_at);
        let lost = self.history.first.saturating_sub(start);
        let start = start.max(self.history.first);
        if let Some(frames) = recording.frames.filter(|_| self.alternate()) {
            let (lines, kept_under, shown) = frames.into_lines();
            return Recorded {
                before: recording.before,
                lines,
                alternate: true,
                lost,
                cols: self.size().0,
                kept_under,
                shown,
            };
        }
        let mut lines: Vec<String> = self.history.since(start).cloned().collect();
        lines.extend(self.screen_lines());
        // A program that repaints its live area after a resize draws again rows that the
        // resize pushed into history or re-wrapped: a run of lines repeated right after itself,
        // within a screen's height of where the resize happened, is counted once (the longest
        // such run).
        for spill in self.history.spills.iter().rev() {
            if spill.end < start {
                break;
            }
            let at = (spill.end - start) as usize;
            let reach = usize::from(self.size().1).max((spill.end - spill.start) as usize) + 1;
            let repeated = (1..=reach).rev().find_map(|len| {
                (at.saturating_sub(2 * len)..=(at + reach).min(lines.len()))
                    .find(|&from| {
                        let first = lines.get(from..from + len);
                        first.is_some_and(|first| {
                            lines.get(from + len..from + 2 * len) == Some(first)
                                && first.iter().any(|line| !line.trim().is_empty())
                        })
                    })
                    .map(|from| from..from + len)
            });
            if let Some(run) = repeated {
                lines.drain(run);
            }
        }
        recording.seams.restore(&mut lines);
        Recorded {
            before: recording.before,
            lines,
            alternate: false,
            lost,
            cols: self.size().0,
            kept_under: Vec::new(),
            shown: Vec::new(),
        }
    }

    /// The visible rows joined into logical lines, trailing spaces removed; the first one
    /// continues the partial line in history, if any. On the alternate screen, a scrollbar's
    /// thumb at a row's end is left out ([`scrollbar_thumb`]).
    fn screen_lines(&self) -> Vec<String> {
        let grid = self.term.grid();
        let alternate = self.alternate();
        let mut lines = Vec::new();
        let mut current = self.partial.clone();
        for row in 0..self.term.screen_lines() {
            let row = &grid[Line(row as i32)];
            row_text(row, &mut current);
            if alternate && scrollbar_thumb(row) {
                current.pop();
            }
            if !wraps(row) {
                lines.push(trimmed(std::mem::take(&mut current)));
            }
        }
        if !current.is_empty() {
            lines.push(trimmed(current));
        }
        lines
    }

    /// The visible rows, one string each, trailing spaces removed. On the alternate screen, a
    /// scrollbar's thumb at a row's end is left out ([`scrollbar_thumb`]).
    fn visible_rows(&self) -> Vec<String> {
        let grid = self.term.grid();
        let alternate = self.alternate();
        (0..self.term.screen_lines())
            .map(|row| {
                let row = &grid[Line(row as i32)];
                let mut text = String::new();
                row_text(row, &mut text);
                if alternate && scrollbar_thumb(row) {
                    text.pop();
                }
                trimmed(text)
            })
            .collect()
    }

    /// Moves the rows that scrolled into the emulator's history into ours, as logical lines.
    fn collect_history(&mut self) {
        let grid = self.term.grid();
        let count = grid.history_size();
        if count == 0 {
            return;
        }
        for back in (1..=count).rev() {
            let row = &grid[Line(-(back as i32))];
            row_text(row, &mut self.partial);
            if !wraps(row) {
                let line = trimmed(std::mem::take(&mut self.partial));
                self.history.push(line);
            } else if self.partial.len() >= MAX_LINE_BYTES {
                let line = std::mem::take(&mut self.partial);
                self.history.push(line);
            }
        }
        self.term.grid_mut().clear_history();
    }

    /// The program is about to erase the cursor's row: a recording on the normal screen notes
    /// it for [`Seams`].
    fn note_erase(&mut self) {
        if self.alternate() {
            return;
        }
        let row = self.term.grid().cursor.point.line.0.max(0) as usize;
        let Some(recording) = &mut self.recording else {
            return;
        };
        let (term, seams) = (&self.term, &mut recording.seams);
        seams.erase(row, || {
            let grid = term.grid();
            (0..term.screen_lines())
                .map(|row| {
                    let mut text = String::new();
                    row_text(&grid[Line(row as i32)], &mut text);
                    trimmed(text)
                })
                .collect()
        });
    }

    /// Samples the alternate screen into the recording's frames.
    fn sample_frame(&mut self) {
        if !self.alternate() {
            return;
        }
        let rows = match &self.recording {
            Some(_) => self.visible_rows(),
            None => return,
        };
        if let Some(recording) = &mut self.recording {
            recording
                .frames
                .get_or_insert_with(Frames::default)
                .sample(rows);
        }
    }
}

/// Appends a row's text: wide characters once, combining marks and ZWJ sequences kept.
fn row_text(row: &Row<Cell>, out: &mut String) {
    let cells = &row[..];
    // Blank cells at the end are the row's padding, unless the row wraps onto the next.
    let used = if wraps(row) {
        cells.len()
    } else {
        cells
            .iter()
            .rposition(|cell| cell.c != ' ' || cell.zerowidth().is_some())
            .map_or(0, |last| last + 1)
    };
    for cell in &cells[..used] {
        if cell
            .flags
            .intersects(Flags::WIDE_CHAR_SPACER | Flags::LEADING_WIDE_CHAR_SPACER)
        {
            continue;
        }
        out.push(if cell.c == '\0' { ' ' } else { cell.c });
        if let Some(marks) = cell.zerowidth() {
            out.extend(marks);
        }
    }
}

/// Whether a row ends in a scrollbar's thumb: a block element (U+2580–U+259F: `▆`, `█`, `▐`)
/// alone in the last column, a blank cell before it. A full-screen program draws its
/// scrollbar there (Textual, ratatui); the thumb moves as the view scrolls, so the same line of
/// transcript would read differently from frame to frame, and an echo or a reply line would
/// carry it. Text never ends that way: it is not part of any line.
fn scrollbar_thumb(row: &Row<Cell>) -> bool {
    let cells = &row[..];
    let [.., before, last] = cells else {
        return false;
    };
    !wraps(row)
        && ('\u{2580}'..='\u{259f}').contains(&last.c)
        && last.zerowidth().is_none()
        && (before.c == ' ' || before.c == '\0')
}

/// How many bytes the character that `bytes` end in the middle of still needs (0 when they end
/// on a character boundary, or in no UTF-8).
fn utf8_needed(bytes: &[u8]) -> usize {
    let tail = &bytes[bytes.len().saturating_sub(3)..];
    let Some(lead) = tail.iter().rposition(|&byte| byte & 0xc0 != 0x80) else {
        return 0;
    };
    let len: usize = match tail[lead] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return 0,
    };
    len.saturating_sub(tail.len() - lead)
}

/// Whether a row continues on the next (the program wrote past its last column).
fn wraps(row: &Row<Cell>) -> bool {
    row.last()
        .is_some_and(|cell| cell.flags.contains(Flags::WRAPLINE))
}

fn trimmed(mut line: String) -> String {
    let len = line.trim_end().len();
    line.truncate(len);
    line
}

/// The emulator's size, as alacritty wants it.
struct Size {
    columns: usize,
    lines: usize,
}

impl Size {
    fn new(cols: u16, rows: u16) -> Self {
        Self {
            columns: usize::from(cols.max(1)),
            lines: usize::from(rows.max(1)),
        }
    }
}

impl Dimensions for Size {
    fn total_lines(&self) -> usize {
        self.lines
    }

    fn screen_lines(&self) -> usize {
        self.lines
    }

    fn columns(&self) -> usize {
        self.columns
    }
}

/// The emulator's events: its replies to the program's queries are kept, for a session with no
/// terminal of its own to answer them ([`Screen::take_replies`]); the rest (bell, title) are
/// not ours to act on.
#[derive(Default)]
pub(crate) struct Listener {
    replies: Arc<Mutex<Vec<u8>>>,
}

/// Answers held for [`Screen::take_replies`] at most; a program that asks more without anyone
/// taking them gets no more.
const MAX_REPLIES: usize = 64 * 1024;

impl alacritty_terminal::event::EventListener for Listener {
    fn send_event(&self, event: alacritty_terminal::event::Event) {
        if let alacritty_terminal::event::Event::PtyWrite(text) = event
            && let Ok(mut replies) = self.replies.lock()
            && replies.len() + text.len() <= MAX_REPLIES
        {
            replies.extend_from_slice(text.as_bytes());
        }
    }
}

/// Synchronized output (`ESC [ ? 2026 h`) is applied as it comes: the screen stands at every
/// byte offset where the stream stands, with no clock and no buffering.
#[derive(Debug, Default)]
struct Unsynchronized;

impl Timeout for Unsynchronized {
    fn set_timeout(&mut self, _: std::time::Duration) {}

    fn clear_timeout(&mut self) {}

    fn pending_timeout(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
