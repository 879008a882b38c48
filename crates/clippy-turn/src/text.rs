//! The text view of a turn: its content rendered through a terminal emulator.
//!
//! The raw content of a TUI's turn is a stream of cursor moves and repaints; the text view is
//! what a person saw, for relaying into another agent. It holds the whole reply even when the
//! reply scrolled past the screen (rows are collected as they leave the top) and leaves out
//! what was on screen before the turn began (old transcript, even when redrawn unchanged), the
//! agent's prompt and busy lines (input box, spinners), box-drawing chrome and the echo of the
//! submitted input.

use vt100::capture::{BasicFormattedCaptureState, RowContents};

use crate::detector::is_echo;
use crate::turn::Turn;

/// One screen row as text.
#[derive(Debug)]
struct Row {
    text: String,
    /// The row continues on the next one (the line was wider than the screen).
    wrapped: bool,
    /// The row is unchanged from the screen before the turn.
    old: bool,
}

/// Collects rows as they scroll off the top of the emulated screen.
#[derive(Default)]
struct ScrolledRows {
    rows: Vec<String>,
    /// `wrapped` of each row, known once the next row arrives.
    wrapped: Vec<bool>,
    state: BasicFormattedCaptureState,
    scratch: String,
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
        let (Some(rows), Some(cols)) = (
            std::num::NonZeroU16::new(ctx.rows),
            std::num::NonZeroU16::new(ctx.cols),
        ) else {
            return String::new();
        };
        let mut parser = vt100::Parser::new_with_callbacks(rows, cols, 0, ScrolledRows::default());
        parser.process(&ctx.preamble);
        let before: Vec<String> = parser.screen().rows(0, ctx.cols).collect();
        *parser.callbacks_mut() = ScrolledRows::default();
        parser.process(&self.content);

        let screen_rows: Vec<String> = parser.screen().rows(0, ctx.cols).collect();
        let scrolled = std::mem::take(parser.callbacks_mut());
        let shift = scrolled.rows.len();
        let mut all = Vec::with_capacity(shift + screen_rows.len());
        for (i, text) in scrolled.rows.into_iter().enumerate() {
            let last_wrapped = parser.screen().row_wrapped(0);
            let wrapped = scrolled.wrapped.get(i).copied().unwrap_or(last_wrapped);
            let old = before
                .get(i)
                .is_some_and(|b| b.trim_end() == text.trim_end());
            all.push(Row { text, wrapped, old });
        }
        for (i, text) in screen_rows.into_iter().enumerate() {
            let wrapped = parser.screen().row_wrapped(i as u16);
            let old = before
                .get(i + shift)
                .is_some_and(|b| b.trim_end() == text.trim_end());
            all.push(Row { text, wrapped, old });
        }

        let mut lines: Vec<String> = Vec::new();
        let mut current = String::new();
        let mut current_old = true;
        for row in all {
            current.push_str(if row.wrapped {
                &row.text
            } else {
                row.text.trim_end()
            });
            current_old &= row.old;
            if !row.wrapped {
                let line = std::mem::take(&mut current);
                if !std::mem::replace(&mut current_old, true) && self.keep_line(&line) {
                    lines.push(line);
                } else if !line.trim().is_empty() {
                    // A dropped line with text separates paragraphs like a blank one would.
                    lines.push(String::new());
                }
            }
        }
        if !current.is_empty() && !current_old && self.keep_line(&current) {
            lines.push(current);
        }
        tidy(lines)
    }

    /// Whether a rendered line belongs to the reply (and not to the agent's chrome).
    fn keep_line(&self, line: &str) -> bool {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return true;
        }
        let preset = &self.render.preset;
        let chrome = preset.prompt().is_some_and(|p| p.is_match(line))
            || preset.busy_line().is_some_and(|b| b.is_match(line))
            || preset.chrome().is_some_and(|c| c.is_match(line))
            || trimmed
                .chars()
                .all(|c| c.is_whitespace() || ('\u{2500}'..='\u{257f}').contains(&c))
            || trimmed == "^C";
        !chrome && !is_echo(line, &self.render.inputs)
    }
}

/// Removes blank lines at both ends and folds runs of blank lines into one.
fn tidy(lines: Vec<String>) -> String {
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
