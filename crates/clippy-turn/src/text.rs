//! The text view of a turn: its content rendered through a terminal emulator.
//!
//! The raw content of a TUI's turn is a stream of cursor moves and repaints; the text view is
//! what a person saw, for relaying into another agent. It holds the whole reply even when the
//! reply scrolled past the screen (rows are collected as they leave the top) and leaves out
//! what was on screen before the turn began (old transcript, even when redrawn unchanged), the
//! agent's prompt and busy lines (input box, spinners), box-drawing chrome and the echo of the
//! submitted input.

use std::collections::HashSet;
use std::num::NonZeroU16;

use vt100::capture::{BasicFormattedCaptureState, RowContents};

use crate::detector::{is_bare_input, is_echo};
use crate::turn::Turn;

/// Collects rows as they scroll off the top of the emulated screen.
#[derive(Default)]
struct ScrolledRows {
    rows: Vec<String>,
    /// `wrapped` of each row, known once the next row arrives.
    wrapped: Vec<bool>,
    state: BasicFormattedCaptureState,
    scratch: String,
}

impl ScrolledRows {
    fn clear(&mut self) {
        self.rows.clear();
        self.wrapped.clear();
        self.state = BasicFormattedCaptureState::default();
    }
}

impl vt100::Callbacks for ScrolledRows {
    fn on_scroll(&mut self, contents: RowContents<'_>, _alternate_screen: bool) {
        self.scratch.clear();
        // The writer prefixes a newline when the previous row was not wrapped.
        if contents
            .write_formatted_basic(&mut self.scratch, &mut self.state)
            .is_err()
        {
            return;
        }
        let (ended, formatted) = match self.scratch.strip_prefix('\n') {
            Some(rest) => (true, rest),
            None => (false, self.scratch.as_str()),
        };
        if !self.rows.is_empty() {
            self.wrapped.push(!ended);
        }
        self.rows
            .push(vt100::capture::basic_formatted_to_plain(formatted).collect());
    }
}

impl Turn {
    /// The turn as a person saw it: the content rendered by a terminal emulator, without what
    /// was on screen before the turn, the prompt, busy indicators or the echoed input.
    ///
    /// Lines are joined with `\n`, trailing spaces trimmed, blank lines at both ends removed.
    ///
    /// ```
    /// use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
    ///
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("python")?));
    /// detector.feed_output(b">>> ").for_each(drop);
    /// detector.feed_input(b"print('a\\nb')\r").for_each(drop);
    /// let events: Vec<Event> =
    ///     detector.feed_output(b"print('a\\nb')\r\n\x1b[1ma\x1b[0m\r\nb\r\n>>> ").collect();
    /// let Some(Event::TurnCompleted(turn)) = events.first() else { panic!() };
    /// assert_eq!(turn.text(), "a\nb");
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn text(&self) -> String {
        let ctx = &self.render;
        let (Some(cols), Some(rows)) = (NonZeroU16::new(ctx.size.0), NonZeroU16::new(ctx.size.1))
        else {
            return String::new();
        };
        let mut parser = vt100::Parser::new_with_callbacks(rows, cols, 0, ScrolledRows::default());
        let mut replay = Replay {
            resizes: &ctx.resizes,
            offset: -(ctx.preamble.len() as i64),
        };
        // What was on screen, or scrolled past, before the turn: old, even when redrawn.
        replay.process(&mut parser, &ctx.preamble);
        let mut old: HashSet<String> = HashSet::new();
        let before = std::mem::take(parser.callbacks_mut());
        for row in before.rows.into_iter().chain(screen_rows(&parser)) {
            let row = row.trim().to_owned();
            if !row.is_empty() {
                old.insert(row);
            }
        }
        let rows = if parser.screen().alternate_screen() {
            frame_rows(&mut parser, &mut replay, &self.content)
        } else {
            scrolled_rows(&mut parser, &mut replay, &self.content)
        };

        let mut lines: Vec<String> = Vec::new();
        let mut current = String::new();
        for (text, wrapped) in rows {
            current.push_str(if wrapped { &text } else { text.trim_end() });
            if !wrapped {
                let line = std::mem::take(&mut current);
                if self.keep_line(&line) {
                    lines.push(line);
                } else if !line.trim().is_empty() {
                    // A dropped line with text separates paragraphs like a blank one would.
                    lines.push(String::new());
                }
            }
        }
        if !current.is_empty() && self.keep_line(&current) {
            lines.push(current);
        }
        // Old transcript above the reply and the agent's unchanged footer below it.
        let is_old = |line: &String| line.trim().is_empty() || old.contains(line.trim());
        let Some(first) = lines.iter().position(|l| !is_old(l)) else {
            // Every line was seen before: an agent answering "OK" again. The reply is what the
            // turn drew last, one row per line it wrote.
            let written = self.content.iter().filter(|&&b| b == b'\n').count().max(1);
            let end = lines
                .iter()
                .rposition(|l| !l.trim().is_empty())
                .map_or(0, |i| i + 1);
            return tidy(&lines[end.saturating_sub(written)..end]);
        };
        let last = lines
            .iter()
            .rposition(|l| !is_old(l))
            .map_or(first, |i| i + 1);
        tidy(&lines[first..last.max(first)])
    }

    /// Whether a rendered line belongs to the reply (and not to the agent's chrome).
    fn keep_line(&self, line: &str) -> bool {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return true;
        }
        let preset = &self.render.preset;
        let bytes = line.as_bytes();
        let chrome = preset.prompt().is_some_and(|p| p.is_match(bytes))
            || preset.busy_line().is_some_and(|b| b.is_match(bytes))
            || preset.chrome().is_some_and(|c| c.is_match(bytes))
            || trimmed
                .chars()
                .all(|c| c.is_whitespace() || ('\u{2500}'..='\u{257f}').contains(&c))
            || trimmed == "^C";
        // The content begins after the terminal's echo of the input, so a line that is the bare
        // input is the answer (a REPL evaluating a literal); a decorated one is a TUI's echo.
        !chrome && (is_bare_input(line, &self.render.inputs) || !is_echo(line, &self.render.inputs))
    }
}

/// The rows of a turn drawn on the normal screen: those that scrolled off the top, then the
/// screen. Each row comes with whether it wraps onto the next.
fn scrolled_rows(
    parser: &mut vt100::Parser<ScrolledRows>,
    replay: &mut Replay<'_>,
    content: &[u8],
) -> Vec<(String, bool)> {
    // `ESC[3J` clears the scrollback: TUIs that reprint their whole transcript (Gemini CLI)
    // send it first, and a person then sees only the reprint.
    for (i, part) in split_after(content, b"\x1b[3J").enumerate() {
        if i > 0 {
            parser.callbacks_mut().clear();
        }
        replay.process(parser, part);
    }
    let scrolled = std::mem::take(parser.callbacks_mut());
    let last_wrapped = parser.screen().row_wrapped(0);
    let mut rows: Vec<(String, bool)> = Vec::new();
    for (i, text) in scrolled.rows.into_iter().enumerate() {
        rows.push((
            text,
            scrolled.wrapped.get(i).copied().unwrap_or(last_wrapped),
        ));
    }
    for (i, text) in screen_rows(parser).enumerate() {
        rows.push((text, parser.screen().row_wrapped(i as u16)));
    }
    rows
}

/// The rows of a turn drawn by a full-screen TUI on the alternate screen, where nothing
/// scrolls into a scrollback: the TUI scrolls a long reply by redrawing. The screen is read at
/// each frame's end (`ESC[?2026l`, synchronized output, or before each cursor-home), and each
/// frame's rows are stitched into one transcript in order of first appearance; a row that grew
/// in place (streamed text) replaces its shorter self.
fn frame_rows(
    parser: &mut vt100::Parser<ScrolledRows>,
    replay: &mut Replay<'_>,
    content: &[u8],
) -> Vec<(String, bool)> {
    let marker: &[u8] = if memmem(content, b"\x1b[?2026l").is_some() {
        b"\x1b[?2026l"
    } else {
        b"\x1b[H"
    };
    let mut transcript: Vec<String> = Vec::new();
    let mut positions: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut previous: Vec<Option<usize>> = Vec::new();
    for part in split_after(content, marker) {
        replay.process(parser, part);
        let mut current = Vec::new();
        for (row, text) in screen_rows(parser).enumerate() {
            let text = text.trim_end().to_owned();
            if text.trim().is_empty() {
                current.push(None);
                continue;
            }
            if let Some(&at) = positions.get(&text) {
                current.push(Some(at));
                continue;
            }
            // The same row of the last frame held a prefix of this one: it grew.
            let grown = previous
                .get(row)
                .copied()
                .flatten()
                .filter(|&at| text.starts_with(transcript[at].as_str()));
            let at = match grown {
                Some(at) => {
                    positions.remove(&transcript[at]);
                    transcript[at] = text.clone();
                    at
                }
                None => {
                    transcript.push(text.clone());
                    transcript.len() - 1
                }
            };
            positions.insert(text, at);
            current.push(Some(at));
        }
        previous = current;
    }
    transcript.into_iter().map(|line| (line, false)).collect()
}

/// Feeds the emulator the turn's bytes in order, resizing it where the terminal was resized.
struct Replay<'a> {
    /// (offset relative to the content's first byte, columns, rows), in order.
    resizes: &'a [(i64, u16, u16)],
    /// Offset of the next byte fed, relative to the content's first byte.
    offset: i64,
}

impl Replay<'_> {
    fn process(&mut self, parser: &mut vt100::Parser<ScrolledRows>, mut bytes: &[u8]) {
        loop {
            let end = self.offset + bytes.len() as i64;
            match self.resizes.first() {
                Some(&(at, cols, rows)) if at <= end => {
                    let (now, later) = bytes.split_at((at - self.offset).max(0) as usize);
                    parser.process(now);
                    if let (Some(rows), Some(cols)) = (NonZeroU16::new(rows), NonZeroU16::new(cols))
                    {
                        parser.set_size(rows, cols);
                    }
                    self.offset = at.max(self.offset);
                    self.resizes = &self.resizes[1..];
                    bytes = later;
                }
                _ => {
                    parser.process(bytes);
                    self.offset = end;
                    return;
                }
            }
        }
    }
}

/// The visible rows of the emulated screen, as text.
fn screen_rows(parser: &vt100::Parser<ScrolledRows>) -> impl Iterator<Item = String> + '_ {
    parser.screen().rows(0, parser.screen().size().1.get())
}

fn memmem(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Splits `content` just after each occurrence of `marker`.
fn split_after<'a>(content: &'a [u8], marker: &'static [u8]) -> impl Iterator<Item = &'a [u8]> {
    let mut rest = content;
    let mut first = true;
    std::iter::from_fn(move || {
        if rest.is_empty() && !first {
            return None;
        }
        first = false;
        let cut = memmem(rest, marker).map_or(rest.len(), |i| i + marker.len());
        let (part, tail) = rest.split_at(cut);
        rest = tail;
        Some(part)
    })
}

/// Removes blank lines at both ends and folds runs of blank lines into one.
fn tidy(lines: &[String]) -> String {
    let mut out = String::new();
    let mut blank_run = false;
    for line in lines {
        if line.trim().is_empty() {
            blank_run = !out.is_empty();
            continue;
        }
        if blank_run {
            out.push('\n');
            blank_run = false;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line.trim_end());
    }
    out
}
