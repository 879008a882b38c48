//! The frames of a full-screen TUI, stitched into one transcript.
//!
//! On the alternate screen nothing scrolls into history: a TUI shows a long reply by redrawing
//! its rows as a window onto its transcript. Each frame is placed where it lines up with the
//! transcript stitched so far and overwrites from there: a row drawn again at the same place
//! replaces what was there (streamed text growing, a spinner, a footer, the input box redrawn),
//! rows scrolled out of the window stay as they last were, and a header pinned over the
//! scrolling rows does not cover them. What the placement goes by is on [`Frames::place`].

/// The transcript stitched so far.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    lines: Vec<String>,
    /// Where the previous frame's top row is in `lines`.
    top: usize,
    /// The previous frame's rows.
    previous: Vec<String>,
    /// Lines the program kept under what it was adding (see [`Frames::note_kept_under`]).
    kept_under: Vec<String>,
    /// Lines that made blank room above themselves, with the rows of that room (see
    /// [`Frames::confirm_room_filled`]).
    room_made: Vec<(String, std::ops::Range<usize>)>,
    /// Rows seen held in place under a scrolling view, with the first scroll (in rows) that
    /// held them.
    held: Vec<(String, usize)>,
    /// The last frame that moved the transcript moved it forward.
    scrolled_forward: bool,
    /// Every distinct row with text the frames showed, trimmed, oldest first (at most
    /// [`MAX_SHOWN_ROWS`]), and the same as a set.
    shown: Vec<String>,
    shown_set: std::collections::HashSet<String>,
}

/// How many distinct rows a recording notes as shown: a long reply's rows, many times over.
const MAX_SHOWN_ROWS: usize = 4096;

impl Frames {
    /// Adds one frame: the screen's rows, top to bottom. A frame with nothing in common with the
    /// transcript is a whole new view and goes after it (what was shown before stays).
    pub(crate) fn sample(&mut self, rows: Vec<String>) {
        self.sample_drawn(rows, None);
    }

    /// Adds the frame a program is drawing, top down, with its cursor on row `cursor`: the
    /// rows above the cursor are drawn; under it only the rows that changed since the last
    /// frame are, the others still show the last frame and are left to the transcript (which
    /// has them where this frame will, scrolled or not).
    pub(crate) fn sample_partial(&mut self, rows: Vec<String>, cursor: usize) {
        let drawn = (0..rows.len())
            .rev()
            .find(|&i| i < cursor || self.previous.get(i) != Some(&rows[i]))
            .map_or(0, |i| i + 1);
        self.sample_drawn(rows, Some(drawn));
    }

    /// Places `rows`, of which only the first `drawn` (all: `None`) are drawn.
    fn sample_drawn(&mut self, rows: Vec<String>, drawn: Option<usize>) {
        // Unchanged, or cleared to be drawn again (a resize): nothing to place.
        if rows == self.previous || rows.iter().all(|row| row.trim().is_empty()) {
            return;
        }
        let whole = rows.len();
        self.note_shown(&rows[..drawn.unwrap_or(whole).min(whole)]);
        let mut rows = rows;
        let partial = drawn.is_some_and(|drawn| drawn < whole);
        let full = partial.then(|| rows.clone());
        if let Some(drawn) = drawn {
            rows.truncate(drawn.max(1));
        }
        let at = self.place(&rows);
        if drawn.is_none() {
            self.note_kept_under(&rows, at.checked_sub(self.top).filter(|&by| by > 0));
        }
        // When the frame scrolled, the rows above the first that lines up with the transcript
        // are a header drawn over it (Codex pins the question there): the transcript lines that
        // scrolled under them stay. When it stood still, a row as the last frame drew it adds
        // nothing: the transcript keeps what it has there (the line under a pinned header, while
        // only the input box changes as the user types).
        let scrolled = at != self.top;
        let unchanged = |i: usize| !scrolled && self.previous.get(i) == Some(&rows[i]);
        // (A row that grows the line under it agrees: a list number drawn before its text.)
        let first_agree = (0..rows.len())
            .find(|&i| {
                !rows[i].trim().is_empty()
                    && self.lines.get(at + i).is_some_and(|line| {
                        *line == rows[i]
                            || (!line.trim().is_empty() && rows[i].starts_with(line.trim_end()))
                    })
            })
            .unwrap_or(0);
        let placed: Vec<String> = rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let pinned = scrolled && i < first_agree;
                match self.lines.get(at + i) {
                    Some(under) if pinned || unchanged(i) => under.clone(),
                    _ => row.clone(),
                }
            })
            .collect();
        if partial {
            // The rows not drawn yet stay as the transcript has them.
            let end = (at + placed.len()).min(self.lines.len());
            self.lines.splice(at.min(self.lines.len())..end, placed);
        } else if at >= self.top {
            self.lines.truncate(at);
            self.lines.extend(placed);
        } else {
            // The window moved back (the user scrolled up): what is below it stays.
            let end = (at + rows.len()).min(self.lines.len());
            self.lines.splice(at..end, placed);
        }
        if at != self.top {
            self.scrolled_forward = at > self.top;
        }
        self.top = at;
        self.previous = full.unwrap_or(rows);
    }

    /// Where `rows` line up with the transcript. Rows that are where they were in the previous
    /// frame say it stayed put (at `top`); the rows that changed say where it scrolled to: the
    /// offset, from two screens above the previous frame to just past the end, where most of them
    /// equal the line there (ties: the later offset, a TUI's transcript scrolls forward). The
    /// scroll wins when more rows say so than stayed put, or when it accounts for at least half
    /// of the rows that changed (and two of them, or as many as stayed) and it scrolls forward:
    /// an input box and footer that stay put must not hold a scrolling transcript in place,
    /// while rows drawn in place that repeat lines above them (a table's rules, as its rows
    /// arrive) must not move a frame back when more rows stayed; and one line that
    /// happens to be repeated elsewhere (the question, moved from the input box into the
    /// transcript) must not move a frame. A forward scroll that two rows or more line up with
    /// also wins when no row that changed contradicts it: each lands on a blank line, on a line
    /// it grows (`39.` then `39. Numbered line`: text streamed in), past the transcript's end or
    /// on the rows the previous frame kept fixed (a window scrolled further than half its height
    /// under a tall input box and footer). A frame with nothing in common is a whole new view
    /// and goes after the end.
    fn place(&self, rows: &[String]) -> usize {
        let text = |i: usize| !rows[i].trim().is_empty();
        let moved = |i: usize| self.previous.get(i) != Some(&rows[i]);
        let stayed = (0..rows.len()).filter(|&i| text(i) && !moved(i)).count();
        let changed = (0..rows.len()).filter(|&i| text(i) && moved(i)).count();
        let from = self.top.saturating_sub(2 * rows.len());
        let (mut scrolled, mut votes) = (None, 0);
        for at in (from..=self.lines.len()).filter(|&at| at != self.top) {
            let score = rows
                .iter()
                .zip(&self.lines[at..])
                .enumerate()
                .filter(|&(i, (row, line))| text(i) && moved(i) && row == line)
                .count();
            if score > 0 && score >= votes {
                (scrolled, votes) = (Some(at), score);
            }
        }
        // Where the previous frame's fixed rows (input box, footer) begin in the transcript.
        let first_fixed = (0..rows.len())
            .find(|&i| text(i) && !moved(i))
            .unwrap_or(rows.len());
        let fixed_from = self.top + first_fixed;
        let uncontradicted = |at: usize| {
            (0..rows.len())
                .filter(|&i| text(i) && moved(i))
                .all(|i| match self.lines.get(at + i) {
                    Some(line) if at + i < fixed_from => {
                        line.trim().is_empty() || rows[i].starts_with(line.trim_end())
                    }
                    _ => true,
                })
        };
        if let Some(at) = self.jumped_past(rows) {
            return at;
        }
        match scrolled {
            Some(at) if votes > stayed => at,
            Some(at) if at > self.top && 2 * votes >= changed && votes >= stayed.min(2) => at,
            Some(at) if votes >= 2 && at > self.top && uncontradicted(at) => at,
            _ if stayed > 0 => self.top,
            Some(at) => at,
            None => self.lines.len(),
        }
    }

    /// Where a frame goes that scrolled further than its window holds since the last one (a
    /// renderer that draws only the latest view, behind a reply streaming in): right after the
    /// lines the last frame showed. It is one when the transcript last moved forward, and above
    /// the first row that stayed or grew (the program's fixed rows: a trailer, the input box,
    /// the footer) the frame replaced two or more lines of text with others, none of them
    /// growing what was there or lining up with the transcript, even indented otherwise (but for
    /// lines of the last frame pushed down, as OpenCode's trailer under the reply): the window
    /// moved on past everything it showed. (Rows redrawn in place under a row that stayed, or over a view
    /// that did not scroll, replace what was there.)
    fn jumped_past(&self, rows: &[String]) -> Option<usize> {
        let text = |row: &String| !row.trim().is_empty();
        let grows = |i: usize| {
            self.previous
                .get(i)
                .is_some_and(|old| text(old) && rows[i].starts_with(old.trim_end()))
        };
        let fixed = (0..rows.len()).find(|&i| text(&rows[i]) && grows(i))?;
        let shown = self.previous.get(..fixed)?;
        // A line of the last frame drawn again as low or lower was pushed down, not replaced.
        let carried = |j: usize| (j..fixed).any(|i| rows[i] == shown[j]);
        let end = (0..fixed).rev().find(|&j| text(&shown[j]) && !carried(j))? + 1;
        let replaced = (0..fixed)
            .filter(|&i| text(&shown[i]) && text(&rows[i]))
            .count();
        // Compared without their indent, and as the start of a line: a list laid out again (its
        // numbers padded once it reaches 10), or drawn again without a side panel the window
        // lost (OpenCode's, glued on each row), is drawn in place, not past.
        let seen = |row: &String| {
            self.lines
                .iter()
                .any(|line| line.trim() == row.trim() || line.starts_with(row.trim_end()))
        };
        let unseen = (0..fixed)
            .all(|i| !text(&rows[i]) || !seen(&rows[i]) || shown[..=i].contains(&rows[i]));
        (replaced >= 2 && unseen).then_some(self.top + end)
    }

    /// Notes the lines the program keeps under what it is adding (a reply streaming in above
    /// its `▣ Build · Model` trailer): in a frame that stood still, a row the previous frame had
    /// higher up with something else drawn where it was and everything above that as it was
    /// (pushed down by rows inserted above it); in a frame that `scrolled` forward by some rows,
    /// a row that stayed where it was under rows that moved, in frames that scrolled by
    /// different numbers of rows (held in place: a reply that repeats itself every few rows
    /// matches itself when the view scrolls by that many, but not by two different numbers).
    /// Input boxes and footers are held in place too; the text cuts them anyway.
    fn note_kept_under(&mut self, rows: &[String], scrolled: Option<usize>) {
        if scrolled.is_none() {
            self.confirm_room_filled(rows);
        }
        let mut moved_above = false;
        for (i, row) in rows.iter().enumerate() {
            if row.trim().is_empty() {
                continue;
            }
            let stayed = self.previous.get(i) == Some(row);
            let kept = if let Some(by) = scrolled {
                let held = moved_above && stayed;
                let again = held && self.held_again(row, by);
                if held && !again {
                    // Held once: the rows the scroll opened above it may be filled next (noted
                    // once, however many frames scroll by the same rows meanwhile).
                    let room = i.saturating_sub(by)..i;
                    if !self
                        .room_made
                        .iter()
                        .any(|(line, r)| line == row && *r == room)
                    {
                        self.room_made.push((row.clone(), room));
                    }
                }
                again
            } else if stayed {
                false
            } else {
                let was_at = self
                    .previous
                    .get(..i)
                    .and_then(|above| above.iter().rposition(|p| p == row));
                match was_at.and_then(|j| self.inserted_at(rows, j, i).map(|text| (j, text))) {
                    Some((_, true)) => true,
                    Some((j, false)) => {
                        self.room_made.push((row.clone(), j..i));
                        false
                    }
                    None => false,
                }
            };
            moved_above |= !stayed;
            if kept {
                self.keep_under(row);
            }
        }
    }

    /// Notes `line` as kept under the text, once.
    fn keep_under(&mut self, line: &str) {
        if !self.kept_under.iter().any(|kept| kept == line) {
            self.kept_under.push(line.to_owned());
        }
    }

    /// Whether `rows` are the previous frame with rows inserted from `at` to `to`, and whether
    /// they hold text (`Some(false)`: blank room was made, to be filled). What was at `at` is
    /// gone from there, every row above it with text stayed where it was, and there is one: a
    /// view that moved down as a whole, a TUI repainting its transcript lower, inserted nothing,
    /// nor does a reply that says again what an older one said.
    fn inserted_at(&self, rows: &[String], at: usize, to: usize) -> Option<bool> {
        let above = &self.previous[..at.min(self.previous.len())];
        let inserted = self.previous.get(at) != rows.get(at)
            && above.iter().any(|row| !row.trim().is_empty())
            && above
                .iter()
                .enumerate()
                .all(|(i, row)| row.trim().is_empty() || rows.get(i) == Some(row));
        inserted.then(|| rows[at..to].iter().any(|row| !row.trim().is_empty()))
    }

    /// A line that made blank room above itself (or was held in place while the view scrolled
    /// room open above it) is kept under the text when that room is then filled with text while
    /// the line stays where it went (as it was or with more after it:
    /// OpenCode opens two rows above its trailer, then writes the reply there and the time
    /// behind the trailer). A blank line opened between two paragraphs of a reply as its
    /// markdown is laid out again is never filled: the paragraph under it is not kept under.
    fn confirm_room_filled(&mut self, rows: &[String]) {
        let previous = &self.previous;
        let (filled, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.room_made)
            .into_iter()
            .partition(|(line, room): &(String, std::ops::Range<usize>)| {
                rows.get(room.end)
                    .is_some_and(|row| row.starts_with(line.as_str()))
                    && room.clone().any(|k| {
                        previous.get(k).is_some_and(|p| p.trim().is_empty())
                            && rows.get(k).is_some_and(|r| !r.trim().is_empty())
                    })
            });
        // Room not filled by this frame is forgotten once the line moved on.
        self.room_made = waiting
            .into_iter()
            .filter(|(line, room)| rows.get(room.end) == Some(line))
            .collect();
        for (line, _) in filled {
            self.keep_under(&line);
        }
    }

    /// Notes a frame that scrolled `by` rows holding `row` in place; whether another one held it
    /// while scrolling by a different number of rows.
    fn held_again(&mut self, row: &str, by: usize) -> bool {
        match self.held.iter().find(|(held, _)| held == row) {
            Some(&(_, first)) => first != by,
            None => {
                self.held.push((row.to_owned(), by));
                false
            }
        }
    }

    /// Notes the rows with text a frame shows (see [`Frames::shown`]).
    fn note_shown(&mut self, rows: &[String]) {
        for row in rows {
            let row = row.trim();
            if self.shown.len() >= MAX_SHOWN_ROWS {
                return;
            }
            if !row.is_empty() && !self.shown_set.contains(row) {
                self.shown_set.insert(row.to_owned());
                self.shown.push(row.to_owned());
            }
        }
    }

    /// The transcript, oldest line first, the lines kept under it meanwhile, and every row
    /// with text the frames showed.
    pub(crate) fn into_lines(self) -> (Vec<String>, Vec<String>, Vec<String>) {
        (self.lines, self.kept_under, self.shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(rows: &[&str]) -> Vec<String> {
        rows.iter().map(|r| (*r).to_owned()).collect()
    }

    /// A frame of `rows` above the rows of a `foot` that stays put (an input box, a footer).
    fn over_foot(rows: &[&str], foot: &[&str]) -> Vec<String> {
        let mut frame = frame(rows);
        frame.extend(foot.iter().map(|r| (*r).to_owned()));
        frame
    }

    #[test]
    fn rows_added_in_place_that_repeat_lines_above_do_not_move_the_window_back() {
        // A table laid out again as its rows arrive (Mistral Vibe): its bottom border becomes
        // a rule and a row under it, and the rules repeat. The changed rows line up with the
        // transcript two rows back, but the rows above them stayed: the frame stood still.
        let mut frames = Frames::default();
        let (top, rule, end) = ("┌──┐", "├──┤", "└──┘");
        frames.sample(frame(&[
            "x1",
            "x2",
            "intro",
            top,
            "│ Shell │",
            rule,
            "│ bash │",
            end,
            "⠋ work",
            "> ",
        ]));
        frames.sample(frame(&[
            "intro",
            top,
            "│ Shell │",
            rule,
            "│ bash │",
            end,
            "",
            "",
            "⠙ work",
            "> ",
        ]));
        frames.sample(frame(&[
            "intro",
            top,
            "│ Shell │",
            rule,
            "│ bash │",
            rule,
            "│ zsh │",
            end,
            "⠹ work",
            "> ",
        ]));
        assert_eq!(
            frames.into_lines().0,
            [
                "x1",
                "x2",
                "intro",
                top,
                "│ Shell │",
                rule,
                "│ bash │",
                rule,
                "│ zsh │",
                end,
                "⠹ work",
                "> "
            ]
        );
    }

    #[test]
    fn a_window_scrolling_over_a_transcript_gives_each_line_once_as_it_last_was() {
        let mut frames = Frames::default();
        frames.sample(frame(&["a", "b", "c one", "> ", "footer"]));
        frames.sample(frame(&["a", "b", "c one two", "> ", "footer"]));
        frames.sample(frame(&["b", "c one two", "d", "> ", "footer"]));
        frames.sample(frame(&["c one two", "d", "e", "> ", "footer 2"]));
        assert_eq!(
            frames.into_lines().0,
            ["a", "b", "c one two", "d", "e", "> ", "footer 2"]
        );
    }

    #[test]
    fn a_line_kept_under_text_streaming_in_above_it_is_the_programs() {
        let mut frames = Frames::default();
        frames.sample(frame(&[
            "┃ question",
            "",
            "▣ Build",
            "",
            "",
            "",
            "┃ >",
            "footer ⬝■",
        ]));
        frames.sample(frame(&[
            "┃ question",
            "",
            "one",
            "",
            "▣ Build",
            "",
            "┃ >",
            "footer ■⬝",
        ]));
        frames.sample(frame(&[
            "┃ question",
            "",
            "one",
            "two",
            "",
            "▣ Build",
            "┃ >",
            "footer",
        ]));
        let (lines, pushed, _) = frames.into_lines();
        assert_eq!(lines.last().map(String::as_str), Some("footer"));
        // The input box and the footer stayed put; the reply's own lines were never lower down.
        assert_eq!(pushed, ["▣ Build"]);
    }

    #[test]
    fn a_view_moved_down_as_a_whole_or_a_blank_line_opened_pushes_nothing_down() {
        let mut frames = Frames::default();
        frames.sample(frame(&["› q", "• answer", "last line", "", "› "]));
        frames.sample(frame(&["header", "", "› q", "• answer", "› "]));
        assert!(frames.into_lines().1.is_empty());
        let mut frames = Frames::default();
        frames.sample(frame(&["› q", "• list", "  3. c", "  after", "", "› "]));
        frames.sample(frame(&["› q", "• list", "  3. c", "", "  after", "› "]));
        assert!(frames.into_lines().1.is_empty());
        // The same answer again, under the first one still on screen.
        let mut frames = Frames::default();
        frames.sample(frame(&["› q", "• same", "› q", "• sa", "", "› "]));
        frames.sample(frame(&["› q", "• same", "› q", "", "• same", "› "]));
        assert!(frames.into_lines().1.is_empty());
    }

    #[test]
    fn a_line_that_makes_room_above_itself_for_the_reply_is_the_programs() {
        let mut frames = Frames::default();
        frames.sample(frame(&["┃ q", "", "▣ Build", "", "", "┃ >"]));
        frames.sample(frame(&["┃ q", "", "", "", "▣ Build", "┃ >"]));
        frames.sample(frame(&["┃ q", "", "Paris.", "", "▣ Build · 5.5s", "┃ >"]));
        assert_eq!(frames.into_lines().1, ["▣ Build"]);
    }

    #[test]
    fn a_line_held_in_place_once_then_filled_above_is_the_programs() {
        let mut frames = Frames::default();
        frames.sample(frame(&["a", "b", "c", "d", "┃ >"]));
        frames.sample(frame(&["c", "d", "┃ q", "▣ Build", "┃ >"]));
        frames.sample(frame(&["d", "┃ q", "", "▣ Build", "┃ >"]));
        frames.sample(frame(&["d", "┃ q", "Paris.", "▣ Build · 1.8s", "┃ >"]));
        // (The input box under it was held too; the text cuts it anyway.)
        assert!(frames.into_lines().1.contains(&"▣ Build".to_owned()));
    }

    #[test]
    fn a_line_held_in_place_under_a_scrolling_reply_is_the_programs() {
        let mut frames = Frames::default();
        frames.sample(frame(&["a", "b", "c", "d", "▣ Build", "┃ >"]));
        frames.sample(frame(&["b", "c", "d", "e", "▣ Build", "┃ >"]));
        frames.sample(frame(&["d", "e", "f", "g", "▣ Build", "┃ >"]));
        let (lines, kept, _) = frames.into_lines();
        assert_eq!(lines, ["a", "b", "c", "d", "e", "f", "g", "▣ Build", "┃ >"]);
        assert_eq!(kept, ["▣ Build", "┃ >"]);
        // A reply that repeats itself every two rows, scrolled two rows at a time, holds its
        // own lines in place: that is not enough.
        let mut repeating = Frames::default();
        repeating.sample(frame(&["q", "x", "ok", "x", "ok", "┃ >"]));
        repeating.sample(frame(&["x", "ok", "x", "ok", "x", "┃ >"]));
        repeating.sample(frame(&["x", "ok", "x", "ok", "x", "┃ >"]));
        repeating.sample(frame(&["ok", "x", "ok", "x", "ok", "┃ >"]));
        repeating.sample(frame(&["x", "ok", "x", "ok", "x", "┃ >"]));
        assert!(!repeating.into_lines().1.contains(&"ok".to_owned()));
    }

    #[test]
    fn rows_redrawn_in_place_replace_what_was_there() {
        let mut frames = Frames::default();
        frames.sample(frame(&[
            "header",
            "• Working (0s)",
            "> ask anything",
            "hints",
        ]));
        frames.sample(frame(&["header", "• Here is a table", "> ", "hints"]));
        frames.sample(frame(&[
            "header",
            "• Here is a table of shells:",
            "  bash",
            "> ",
        ]));
        assert_eq!(
            frames.into_lines().0,
            ["header", "• Here is a table of shells:", "  bash", "> "]
        );
    }

    #[test]
    fn a_frame_with_nothing_in_common_is_a_new_view_after_the_old() {
        let mut frames = Frames::default();
        frames.sample(frame(&["reply", "> "]));
        frames.sample(frame(&["Allow this?", "1. Yes"]));
        assert_eq!(
            frames.into_lines().0,
            ["reply", "> ", "Allow this?", "1. Yes"]
        );
    }

    #[test]
    fn an_input_box_that_stays_put_does_not_hold_a_scrolling_transcript_in_place() {
        let mut frames = Frames::default();
        frames.sample(frame(&[
            "one",
            "two",
            "three",
            "",
            "───",
            "> ",
            "───",
            "footer",
        ]));
        frames.sample(frame(&[
            "two",
            "three",
            "four",
            "",
            "───",
            "> ",
            "───",
            "footer",
        ]));
        assert_eq!(
            frames.into_lines().0,
            [
                "one",
                "two",
                "three",
                "four",
                "",
                "───",
                "> ",
                "───",
                "footer"
            ]
        );
    }

    #[test]
    fn rows_under_the_cursor_of_a_frame_being_drawn_are_left_to_the_transcript() {
        let mut frames = Frames::default();
        frames.sample(frame(&["1", "2", "3", "end", "> q", "footer"]));
        // Scrolled by two rows, drawn down to the cursor on row 3: rows 3-5 still show the last
        // frame; the transcript has what is under row 2 of this one.
        frames.sample_partial(frame(&["3", "end", "", "end", "> q", "footer"]), 3);
        assert_eq!(frames.into_lines().0, ["1", "2", "3", "end", "", "footer"]);
        // A whole frame is placed whole.
        let mut frames = Frames::default();
        frames.sample(frame(&["1", "2", "3", "> q"]));
        frames.sample_partial(frame(&["1", "2", "3 and more", "> q"]), 0);
        assert_eq!(frames.into_lines().0, ["1", "2", "3 and more", "> q"]);
    }

    #[test]
    fn a_window_scrolled_past_half_its_height_over_a_tall_fixed_foot_loses_no_line() {
        // OpenCode: the transcript scrolls by more rows than stay on screen, under an input box
        // and footer that stay put; list numbers are drawn before their text.
        let foot = ["", "▣ Build", "┃", "┃ Model", "esc interrupt"];
        let with_foot = |rows: &[&str]| over_foot(rows, &foot);
        let mut frames = Frames::default();
        frames.sample(with_foot(&["1", "2", "3", "4", "5", "6"]));
        frames.sample(with_foot(&["5", "6", "7", "8", "9.", "10"]));
        frames.sample(with_foot(&["8", "9. nine", "10", "11", "12", "13"]));
        let want = with_foot(&[
            "1", "2", "3", "4", "5", "6", "7", "8", "9. nine", "10", "11", "12", "13",
        ]);
        assert_eq!(frames.into_lines().0, want);
    }

    #[test]
    fn list_numbers_filled_in_as_the_window_scrolls_are_not_a_pinned_header() {
        // OpenCode draws a list's numbers before their text; the frame that fills them in has
        // scrolled too. The filled rows grow the lines under them: they are the transcript.
        let foot = ["", "▣ Build", "┃ >", "esc interrupt"];
        let with_foot = |rows: &[&str]| over_foot(rows, &foot);
        let mut frames = Frames::default();
        frames.sample(with_foot(&["1. one", "2.", "3.", "4. four", "5. five"]));
        frames.sample(with_foot(&[
            "2. two", "3. three", "4. four", "5. five", "6. six",
        ]));
        let want = with_foot(&[
            "1. one", "2. two", "3. three", "4. four", "5. five", "6. six",
        ]);
        assert_eq!(frames.into_lines().0, want);
    }

    #[test]
    fn a_scrolling_window_that_jumps_past_its_height_keeps_the_lines_it_showed() {
        // OpenCode under load: its renderer draws only the latest view, so between two frames
        // the reply can scroll by more rows than the window holds. The new frame has nothing in
        // common with the last one above its input box and footer; the lines the last frame
        // showed were shown and stay, the new ones go after them (what was never drawn, no
        // screen can give).
        let foot = ["", "▣ Build", "┃", "┃ Model", "esc interrupt"];
        let with_foot = |rows: &[&str]| over_foot(rows, &foot);
        let mut frames = Frames::default();
        frames.sample(with_foot(&["1", "2", "3", "4"]));
        frames.sample(with_foot(&["2", "3", "4", "5"]));
        frames.sample(with_foot(&["9", "10", "11", "12"]));
        frames.sample(with_foot(&["10", "11", "12", "13"]));
        let want = with_foot(&["1", "2", "3", "4", "5", "9", "10", "11", "12", "13"]);
        assert_eq!(frames.into_lines().0, want);
        // The first lines of a reply under the question, then the view past them: the trailer
        // under the reply is pushed down, the question and the lines shown stay.
        let mut frames = Frames::default();
        frames.sample(frame(&[
            "┃ q",
            "intro",
            "1",
            "2",
            "▣ Build",
            "",
            "",
            "┃ >",
            "end",
        ]));
        frames.sample(frame(&[
            "5",
            "6",
            "7",
            "8",
            "9",
            "▣ Build",
            "",
            "┃ >",
            "end",
        ]));
        assert_eq!(
            frames.into_lines().0,
            [
                "┃ q",
                "intro",
                "1",
                "2",
                "5",
                "6",
                "7",
                "8",
                "9",
                "▣ Build",
                "",
                "┃ >",
                "end"
            ]
        );
        // A list laid out again in place, its numbers padded, is not a jump.
        let mut frames = Frames::default();
        frames.sample(frame(&[
            "┃ q",
            "1. a",
            "2. b",
            "9. c",
            "▣ Build",
            "┃ >",
            "end",
        ]));
        frames.sample(frame(&[
            " 1. a",
            " 2. b",
            " 9. c",
            "10. d",
            "▣ Build",
            "┃ >",
            "end",
        ]));
        let lines = frames.into_lines().0;
        assert_eq!(lines.iter().filter(|l| l.trim() == "2. b").count(), 1);
        assert!(lines.ends_with(&frame(&[
            " 2. b",
            " 9. c",
            "10. d",
            "▣ Build",
            "┃ >",
            "end"
        ])));
        // The same with a side panel glued on each row gone.
        let mut frames = Frames::default();
        frames.sample(frame(&[
            "x",
            "1. a   Context",
            "2. b   LSP",
            "▣ Build",
            "┃ >",
            "end",
        ]));
        frames.sample(frame(&["1. a", "2. b", "3. c", "▣ Build", "┃ >", "end"]));
        let lines = frames.into_lines().0;
        assert_eq!(lines.iter().filter(|l| l.starts_with("2. b")).count(), 1);
    }

    #[test]
    fn a_sticky_header_over_a_scrolling_transcript_does_not_cover_its_lines() {
        let mut frames = Frames::default();
        frames.sample(frame(&["› question", "1", "2", "3", "> "]));
        frames.sample(frame(&["› question", "2", "3", "4", "> "]));
        frames.sample(frame(&["› question", "3", "4", "5", "> "]));
        assert_eq!(
            frames.into_lines().0,
            ["› question", "1", "2", "3", "4", "5", "> "]
        );
    }

    #[test]
    fn a_sticky_header_stays_off_the_transcript_while_only_the_input_box_changes() {
        // Codex: a question typed while the reply scrolls under the pinned question redraws the
        // input box alone, frame after frame, between the scrolls.
        let mut frames = Frames::default();
        frames.sample(frame(&["› question", "1", "2", "3", "> "]));
        frames.sample(frame(&["› question", "2", "3", "4", "> "]));
        frames.sample(frame(&["› question", "2", "3", "4", "> w"]));
        frames.sample(frame(&["› question", "2", "3", "4", "> wh"]));
        frames.sample(frame(&["› question", "3", "4", "5", "> wh"]));
        assert_eq!(
            frames.into_lines().0,
            ["› question", "1", "2", "3", "4", "5", "> wh"]
        );
    }
}
