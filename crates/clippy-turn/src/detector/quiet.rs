//! Turns from what the screen does, for agents no preset describes.
//!
//! An agent at work animates (a spinner, an elapsed timer, streaming text); an agent at rest
//! sits still with its input area on screen. The detector has no clock: its caller says when
//! output has been quiet for a while ([`TurnDetector::quiet`]), and the detector decides from
//! its live screen whether that is the agent at rest — a reply ended — and where its input
//! area is (cut from the turn's text view).
//!
//! Where the input area is, is learned from the agent itself: when a line is submitted, the
//! row that shows it holds the agent's prompt decoration before it (`>`, `┃`, `$`), at some
//! distance above the cursor (an Ink TUI leaves its cursor under its live area; most put it
//! in the input row). At rest that row is there again, empty or with its placeholder.

use super::{Core, Feed, Phase, TurnDetector};
use crate::detector::Event;
#[cfg(feature = "text")]
use crate::detector::is_echo;

/// Where an agent draws its input line, as the row that showed the last line submitted
/// told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct InputRow {
    /// What the row held before the typed text, trimmed (`>`, `┃`, `root@box:~#`).
    decoration: String,
    /// How many rows above the cursor it was.
    above_cursor: usize,
}

#[cfg(feature = "text")]
/// Longest prompt decoration taken for one (a prompt with its label, `root@host:~/src$`).
const MAX_DECORATION: usize = 32;
#[cfg(feature = "text")]
/// How many characters of a submitted line are looked for on the screen.
const PROBE_CHARS: usize = 24;

impl TurnDetector {
    /// Tells the detector that no output has come for a while (the caller's clock:
    /// clippy-session waits 400 ms). For the `generic` preset, and for any preset whose own
    /// signals (prompt line, status title, OSC 133 marks, the agent's hooks) have not been
    /// seen yet, this is where the screen decides: an agent whose output stopped with its
    /// input area on screen — the row it showed the last submitted line in, its prompt
    /// decoration there again, or the cursor right after a short prompt — is at rest. Then a
    /// running turn that showed text ends here, and a session not ready yet is ready. Nothing
    /// happens while a busy title or busy line of the preset is shown, or with OSC 133 marks.
    ///
    /// ```
    /// use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
    ///
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("generic")?));
    /// detector.feed_output(b"Welcome\r\n\r\n\xe2\x94\x83 ").for_each(drop);
    /// assert!(matches!(detector.quiet().next(), Some(Event::Ready { .. })));
    /// detector.feed_output(b"hello").for_each(drop);
    /// detector.feed_input(b"hello\r").for_each(drop);
    /// detector.feed_output(b"\r\n\r\nHi there.\r\n\r\n\xe2\x94\x83 ").for_each(drop);
    /// let events: Vec<Event> = detector.quiet().collect();
    /// let Some(Event::TurnCompleted(turn)) = events.first() else { panic!("{events:?}") };
    /// assert_eq!(turn.input, "hello");
    /// assert_eq!(turn.text(), "Hi there.");
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn quiet(&mut self) -> std::vec::Drain<'_, Event> {
        self.catch_up_view();
        let offset = self.core.offset;
        if self.core.quiet_decides() {
            let phase = self.core.phase;
            match phase {
                Phase::Starting if self.core.screen_shows_text() => {
                    let mut feed = Feed {
                        core: &mut self.core,
                        chunk: &[],
                        base: offset,
                    };
                    feed.ready(offset);
                }
                Phase::Busy => {
                    if let Some(row) = self.core.at_rest() {
                        let mut feed = Feed {
                            core: &mut self.core,
                            chunk: &[],
                            base: offset,
                        };
                        feed.core.quiet_input_row = Some(row);
                        feed.finish(offset);
                        feed.core.quiet_input_row = None;
                    }
                }
                _ => {}
            }
        }
        self.core.events.drain(..)
    }

    /// Whether the output fed since the last call changed what the screen shows, beyond
    /// animation; it renders what is pending. The caller's quiet clock
    /// ([`TurnDetector::quiet`]) runs from the last output that did: an agent at rest may
    /// animate a decoration (a logo drawn in Braille patterns that cycles every few seconds)
    /// or blink its cursor, and that is not work. Output that only swaps Braille pattern cells
    /// (U+2800–U+28FF) and blanks among themselves, or changes no text at all (a blinking
    /// cursor, colours), has not moved the screen; a spinner drawn so stays on screen and is
    /// judged there, as before. Always true while quiet does not decide (a preset whose own
    /// signals were seen, OSC 133 marks).
    ///
    /// ```
    /// use clippy_turn::{DetectorConfig, Preset, TurnDetector};
    ///
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("generic")?));
    /// detector.feed_output("\u{28e0}\u{2812} Banner\r\n> ".as_bytes()).for_each(drop);
    /// assert!(detector.screen_moved());
    /// // The banner's Braille logo animates; the cursor blinks.
    /// detector.feed_output("\x1b[H\u{2812}\u{28e0}\x1b[2;3H".as_bytes()).for_each(drop);
    /// assert!(!detector.screen_moved());
    /// detector.feed_output(b"\x1b[?25l\x1b[?25h").for_each(drop);
    /// assert!(!detector.screen_moved());
    /// detector.feed_output(b"hi").for_each(drop);
    /// assert!(detector.screen_moved());
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn screen_moved(&mut self) -> bool {
        self.core.screen_moved()
    }

    /// Whether the preset's own signals have been seen: a prompt line or status title it
    /// recognises, OSC 133 marks, or the agent's hooks. Until then, turns end only when the
    /// screen goes still ([`TurnDetector::quiet`]).
    pub fn prompt_recognised(&self) -> bool {
        self.core.signal_seen || self.core.osc133
    }
}

impl Core {
    /// Whether quiet output is for the screen to judge: always with `generic`, and with other
    /// presets until their own signals have been seen. Never with OSC 133 marks.
    pub(super) fn quiet_decides(&self) -> bool {
        !self.osc133 && (self.preset.name() == "generic" || !self.signal_seen)
    }

    /// See [`TurnDetector::screen_moved`].
    fn screen_moved(&mut self) -> bool {
        #[cfg(feature = "text")]
        {
            if !self.quiet_decides() {
                self.still_rows = None;
                return true;
            }
            let screen = self.screen.snapshot(0);
            let moved = self
                .still_rows
                .as_ref()
                .is_none_or(|still| !only_animated(still, &screen.lines));
            if moved {
                self.note_answer_shown(&screen);
                self.still_rows = Some(screen.lines);
            }
            moved
        }
        #[cfg(not(feature = "text"))]
        true
    }

    /// Notes where the agent draws its input line: the row nearest the cursor, at or above
    /// it, that shows the submitted `input` behind a short decoration. Kept from an earlier
    /// submit when the screen does not show it (its echo not drawn yet).
    pub(super) fn learn_input_row(&mut self, input: &str) {
        #[cfg(feature = "text")]
        {
            let Some(first) = input.lines().map(str::trim).find(|l| !l.is_empty()) else {
                return;
            };
            let probe: String = first.chars().take(PROBE_CHARS).collect();
            let screen = self.screen.snapshot(0);
            let cursor = usize::from(screen.cursor.0).min(screen.lines.len().saturating_sub(1));
            for row in (0..=cursor).rev() {
                let Some(text) = screen.lines.get(row) else {
                    continue;
                };
                if let Some(at) = text.find(&probe) {
                    let decoration = text[..at].trim();
                    if !decoration.is_empty() && decoration.chars().count() <= MAX_DECORATION {
                        self.input_row = Some(InputRow {
                            decoration: decoration.to_owned(),
                            above_cursor: cursor - row,
                        });
                    }
                    return;
                }
            }
        }
        #[cfg(not(feature = "text"))]
        let _ = input;
    }

    /// Whether `left` (what a row holds before a submitted line, trimmed) is the decoration of
    /// the agent's input row, as learned from an earlier submit.
    pub(super) fn is_input_decoration(&self, left: &str) -> bool {
        self.input_row
            .as_ref()
            .is_some_and(|row| !left.is_empty() && row.decoration == left)
    }

    /// Whether a visible row has text (something was drawn).
    fn screen_shows_text(&mut self) -> bool {
        #[cfg(feature = "text")]
        {
            self.screen
                .snapshot(0)
                .lines
                .iter()
                .any(|row| !row.trim().is_empty())
        }
        #[cfg(not(feature = "text"))]
        false
    }

    /// Whether the running turn, its output quiet, is over: it showed text, nothing the preset
    /// knows says the agent is busy, and the screen shows its input area with something new
    /// above it. Returns the input row's text (where the text view is cut).
    fn at_rest(&mut self) -> Option<String> {
        let turn = self.turn.as_ref()?;
        if !turn.saw_text
            || turn.screen_ended
            || self.osc_busy
            || self.dialog_on_screen()
            || self.spinner_on_screen()
        {
            return None;
        }
        let (row, text) = self.input_area()?;
        self.new_text_above(row).then_some(text)
    }

    /// Notes, on a frame that moved the screen during a turn the screen decides, whether it
    /// shows the input's echo (behind a decoration: a bare line equal to the input may be the
    /// answer), drawn where the turn's first screen did not have it, with answer text under it
    /// above the input row. A reply as long as the last one ends on the very rows the last one
    /// left, and a full-screen agent's echo goes by in frames only: this is what says, at the
    /// quiet, that the agent answered ([`Core::new_text_above`]).
    #[cfg(feature = "text")]
    fn note_answer_shown(&mut self, screen: &clippy_screen::Snapshot) {
        let Some(turn) = self.turn.as_ref().filter(|t| !t.answer_shown) else {
            return;
        };
        let inputs = turn.inputs.clone();
        let Some((input_row, _)) = self.input_area_of(screen) else {
            return;
        };
        let rows = &screen.lines;
        let echo = rows
            .iter()
            .take(input_row)
            .enumerate()
            .position(|(i, row)| {
                is_echo(row, &inputs)
                    && !inputs.iter().any(|input| input.trim() == row.trim())
                    && self
                        .rows_at_start
                        .get(i)
                        .is_none_or(|old| old.trim() != row.trim())
            });
        if let Some(echo) = echo
            && rows[echo + 1..input_row.max(echo + 1)]
                .iter()
                .any(|row| is_text_besides_echo(row, &inputs))
            && let Some(turn) = &mut self.turn
        {
            turn.answer_shown = true;
        }
    }

    /// Whether the agent answered: a row above `input_row` shows text that was not in that
    /// place when the turn began, other than the input's echo, rules and borders; or a frame
    /// during the turn showed the echo with text under it; or the echo went into history
    /// during the turn and text came under it (a reply as long as the last one, which left
    /// every row in place, is new all the same). (A full-screen agent that stalled before it
    /// drew its answer still shows its old screen; an inline one, the echo and its live area
    /// moved down.)
    #[cfg(feature = "text")]
    fn new_text_above(&mut self, input_row: usize) -> bool {
        let inputs = self
            .turn
            .as_ref()
            .map(|t| t.inputs.clone())
            .unwrap_or_default();
        let rows = self.screen.snapshot(0).lines;
        let text = |row: &str| is_text_besides_echo(row, &inputs);
        let moved = rows.iter().take(input_row).enumerate().any(|(i, row)| {
            text(row)
                && self
                    .rows_at_start
                    .get(i)
                    .is_none_or(|old| old.trim() != row.trim())
        });
        // The answer comes under the input's echo: with that echo (behind its decoration: a
        // bare line equal to the input may be the answer) on screen above the input row and
        // only blanks, rules and borders under it, the rows that moved are the transcript
        // scrolled up to make room for it (an agent on a starved machine that stalled before it
        // drew its spinner), not an answer.
        let echo = rows.iter().take(input_row).rposition(|row| {
            is_echo(row, &inputs) && !inputs.iter().any(|input| input.trim() == row.trim())
        });
        if moved
            && let Some(echo) = echo
            && !rows[echo + 1..input_row].iter().any(|row| text(row))
        {
            return false;
        }
        let shown = self.turn.as_ref().is_some_and(|t| t.answer_shown);
        moved || shown || {
            let above = rows.iter().take(input_row);
            let mut after_echo = false;
            let mut answered = false;
            for line in self.screen.history_since_recording().chain(above) {
                if is_echo(line, &inputs) {
                    after_echo = true;
                    answered = false;
                } else if after_echo && text(line) {
                    answered = true;
                }
            }
            answered
        }
    }

    #[cfg(not(feature = "text"))]
    fn new_text_above(&mut self, _input_row: usize) -> bool {
        true
    }

    /// Whether the cursor, where the agent is about to draw text, is on a row below the last
    /// row that shows `next` (the question typed ahead) behind a prompt, and above the agent's
    /// input row under it (the learned decoration again), in a row that is not a spinner's or
    /// an interrupt hint's — and set apart from the echo by a blank row or a rule, as agents
    /// set an answer apart from the question: a line right under the echo belongs to it (the
    /// rest of a wrapped question, a `queued` label). Without a learned input row, never.
    #[cfg(feature = "text")]
    pub(super) fn drawn_below_echo(&mut self, next: &str) -> bool {
        let Some(decoration) = self.input_row.as_ref().map(|row| row.decoration.clone()) else {
            return false;
        };
        let screen = self.screen.snapshot(0);
        let rows = &screen.lines;
        let Some((echo, shown_behind)) = rows
            .iter()
            .enumerate()
            .rev()
            .find_map(|(at, row)| self.echo_behind(row, next).map(|left| (at, left)))
        else {
            return false;
        };
        // Rows right under the echo that begin with its decoration are part of it (OpenCode
        // draws its queued question in a block of `┃` rows, a label in one of them).
        let block_end = (echo + 1..rows.len())
            .find(|&row| {
                let text = rows[row].trim_start();
                text.is_empty() || shown_behind.is_empty() || !text.starts_with(&shown_behind)
            })
            .unwrap_or(rows.len());
        let Some(input) = (block_end..rows.len())
            .find(|&row| rows[row].trim_start().starts_with(decoration.as_str()))
        else {
            return false;
        };
        let cursor = usize::from(screen.cursor.0);
        echo < cursor
            && cursor < input
            && (echo + 1..cursor).any(|row| {
                let text = rows[row].trim();
                text.is_empty() || crate::text::is_rule(text) || crate::text::is_labelled_rule(text)
            })
            && !is_spinner_row(&rows[cursor])
            && !interrupt_hint().is_match(rows[cursor].as_bytes())
    }

    #[cfg(not(feature = "text"))]
    pub(super) fn drawn_below_echo(&mut self, _next: &str) -> bool {
        false
    }

    /// What `row` shows before `next` (trimmed) when it is `next` drawn behind a prompt of the
    /// preset or behind the agent's learned input decoration (`┃  question`), as an agent
    /// echoes a question it holds or takes.
    #[cfg(feature = "text")]
    fn echo_behind(&self, row: &str, next: &str) -> Option<String> {
        let left = row.trim_end().strip_suffix(next.trim())?;
        let shown = super::prompt_then(&self.preset, self.osc133, row.as_bytes(), next)
            || self.is_input_decoration(left.trim());
        shown.then(|| left.trim().to_owned())
    }

    /// Whether `line` is the agent's learned input decoration with the beginning of `next` (or
    /// all of it) drawn after it (`┃  what is the`): the question typed ahead, echoed.
    #[cfg(feature = "text")]
    pub(super) fn input_decoration_then_part(&self, line: &str, next: &str) -> bool {
        let (line, next) = (line.trim(), next.trim());
        line.char_indices().any(|(at, _)| {
            let drawn = line[at..].trim_start();
            !drawn.is_empty()
                && next.starts_with(drawn)
                && self.is_input_decoration(line[..at].trim())
        })
    }

    /// Whether the screen shows `next`, the question typed ahead, behind a prompt or the
    /// agent's input decoration on a row above its input row: the agent holds it (queued) or
    /// has taken it.
    #[cfg(feature = "text")]
    pub(super) fn ahead_shown_above_input(&mut self, next: &str) -> bool {
        let Some((input, _)) = self.input_area() else {
            return false;
        };
        let rows = self.screen.snapshot(0).lines;
        rows.iter()
            .take(input)
            .any(|row| self.echo_behind(row, next).is_some())
    }

    #[cfg(not(feature = "text"))]
    pub(super) fn ahead_shown_above_input(&mut self, _next: &str) -> bool {
        false
    }

    /// Whether a visible row shows the agent at work: it begins with a spinner frame (a Braille
    /// pattern, U+2801–U+28FF, the spinner most terminal programs animate, and a word after
    /// it), or it tells how to interrupt the work (`esc to cancel`, `esc interrupt`: agents show
    /// it only while they work), on one row or wrapped over two. An agent whose output stalled
    /// while it works (its process busy on a loaded machine) still shows these.
    #[cfg(feature = "text")]
    pub(super) fn spinner_on_screen(&mut self) -> bool {
        let rows = self.screen.snapshot(0).lines;
        rows.iter().any(|row| is_spinner_row(row)) || super::rows_show(interrupt_hint(), &rows)
    }

    #[cfg(not(feature = "text"))]
    pub(super) fn spinner_on_screen(&mut self) -> bool {
        false
    }

    /// The row of the screen that is the agent's input line, and its text: the learned input
    /// row (its decoration again, between its old distance above the cursor and the cursor,
    /// which moves up when a long input's rows are gone), or the cursor's row when the cursor
    /// sits right after a short prompt there.
    #[cfg(feature = "text")]
    fn input_area(&mut self) -> Option<(usize, String)> {
        let screen = self.screen.snapshot(0);
        self.input_area_of(&screen)
    }

    /// [`Core::input_area`] on a snapshot of the screen already taken.
    #[cfg(feature = "text")]
    fn input_area_of(&self, screen: &clippy_screen::Snapshot) -> Option<(usize, String)> {
        let cursor = usize::from(screen.cursor.0).min(screen.lines.len().saturating_sub(1));
        if let Some(learned) = &self.input_row {
            let from = cursor.saturating_sub(learned.above_cursor);
            if let Some(row) = (from..=cursor).find(|&row| {
                screen
                    .lines
                    .get(row)
                    .is_some_and(|text| text.trim_start().starts_with(&learned.decoration))
            }) {
                return Some((row, screen.lines[row].clone()));
            }
        }
        let row = screen.lines.get(cursor)?;
        let left: String = row.chars().take(usize::from(screen.cursor.1)).collect();
        is_prompt_decoration(left.trim()).then(|| (cursor, row.clone()))
    }

    #[cfg(not(feature = "text"))]
    fn input_area(&mut self) -> Option<(usize, String)> {
        None
    }
}

/// Whether a row shows text other than the input's echo: not blank, not only rules, borders
/// and blocks.
#[cfg(feature = "text")]
fn is_text_besides_echo(row: &str, inputs: &[String]) -> bool {
    let text = row.trim();
    !text.is_empty()
        && !is_echo(row, inputs)
        && !text
            .chars()
            .all(|c| c.is_whitespace() || ('\u{2500}'..='\u{259f}').contains(&c))
}

/// Whether `now` differs from `still` only in cells that are Braille patterns or blanks on
/// both sides (an animated Braille logo or spinner frame), row for row.
#[cfg(feature = "text")]
fn only_animated(still: &[String], now: &[String]) -> bool {
    let animated = |c: char| c == ' ' || ('\u{2800}'..='\u{28ff}').contains(&c);
    still.len() == now.len()
        && still.iter().zip(now).all(|(a, b)| {
            a == b || {
                let (mut a, mut b) = (a.chars(), b.chars());
                loop {
                    match (a.next(), b.next()) {
                        (None, None) => break true,
                        (x, y) => {
                            let (x, y) = (x.unwrap_or(' '), y.unwrap_or(' '));
                            if x != y && !(animated(x) && animated(y)) {
                                break false;
                            }
                        }
                    }
                }
            }
        })
}

/// Whether a line the agent draws is text of its own, as an answer's words are: not blank, not
/// a spinner frame (it begins with a Braille pattern), an interrupt hint, or a rule or border
/// (box-drawing and block characters, with a short label at most).
#[cfg(feature = "text")]
pub(super) fn is_answer_text(line: &str) -> bool {
    let text = line.trim();
    !text.is_empty()
        && !text.starts_with(|c: char| ('\u{2800}'..='\u{28ff}').contains(&c))
        && !crate::text::is_rule(text)
        && !crate::text::is_labelled_rule(text)
        && !interrupt_hint().is_match(text.as_bytes())
}

#[cfg(not(feature = "text"))]
pub(super) fn is_answer_text(_line: &str) -> bool {
    false
}

#[cfg(feature = "text")]
/// Whether `row` begins with a Braille spinner frame followed by a word (`⠦ Thinking…`,
/// `⠋Loading`).
fn is_spinner_row(row: &str) -> bool {
    let mut chars = row.trim_start().chars();
    matches!(chars.next(), Some('\u{2801}'..='\u{28ff}'))
        && chars
            .find(|c| !c.is_whitespace())
            .is_some_and(char::is_alphabetic)
}

/// A hint that says how to interrupt the work: `esc to interrupt`, `esc to cancel`,
/// `(esc interrupt)`, `ctrl+c to stop`.
#[cfg(feature = "text")]
fn interrupt_hint() -> &'static regex::bytes::Regex {
    static HINT: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
    HINT.get_or_init(|| {
        regex::bytes::Regex::new(
            r"(?i)\b(?:esc|escape|ctrl\+c)\b(?: to)? (?:interrupt|cancel|stop)\b",
        )
        .unwrap_or_else(|_| regex::bytes::Regex::new(r"$^").expect("an empty pattern"))
    })
}

#[cfg(feature = "text")]
/// Whether `left` (what a row holds before the cursor, trimmed) reads as a prompt: short, and
/// ending in a mark rather than a word (`>>>`, `$`, `┃`, `sqlite>`, `name:`), not mid-sentence.
fn is_prompt_decoration(left: &str) -> bool {
    let Some(last) = left.chars().next_back() else {
        return false;
    };
    left.chars().count() <= MAX_DECORATION
        && !last.is_alphanumeric()
        && !matches!(last, '.' | ',' | ';' | '!' | ')' | '"' | '\'' | '-')
}

#[cfg(test)]
mod tests {
    use super::{is_prompt_decoration, is_spinner_row};

    #[test]
    fn spinner_rows_begin_with_a_braille_frame_and_a_word() {
        for row in [
            "⠦ Initializing...",
            "  ⠇ Loading... (1s · esc to cancel)",
            "⠋Summoning",
        ] {
            assert!(is_spinner_row(row), "{row:?}");
        }
        for row in ["", "Initializing ⠦", "⠦⠦⠦", "⠀ blank braille", "⠦ 42"] {
            assert!(!is_spinner_row(row), "{row:?}");
        }
        let hint = super::interrupt_hint();
        for row in [
            "(2s · esc to cancel)",
            "⬝⬝■■  esc interrupt",
            "Esc to interrupt",
            "ctrl+c to stop",
        ] {
            assert!(hint.is_match(row.as_bytes()), "{row:?}");
        }
        for row in ["press esc", "escape the string", "cancel the order"] {
            assert!(!hint.is_match(row.as_bytes()), "{row:?}");
        }
    }

    #[test]
    fn prompt_decorations_are_short_and_end_in_a_mark() {
        for left in [
            ">>>",
            "$",
            "┃",
            "│ >",
            "sqlite>",
            "root@box:~#",
            "name:",
            "❯",
        ] {
            assert!(is_prompt_decoration(left), "{left:?}");
        }
        for left in ["", "Downloading files.", "Working on it", "50%,", "(0s)"] {
            assert!(!is_prompt_decoration(left), "{left:?}");
        }
    }
}
