//! Rows a program erased at the seam of its live area without drawing them again.
//!
//! A TUI that redraws its live area in place (Ink's log-update: Gemini CLI) erases the rows it
//! drew last, from its cursor upwards with `ESC [ 2 K` and a cursor-up between rows, then draws
//! the area again from the top of what it erased. When the cursor was not on the area's last
//! row as the program believed (Gemini CLI 0.61.0 moves it to its input box, and after a
//! full-screen reprint it erases from there without moving it back), the erase starts above
//! rows it leaves standing and reaches as many rows higher, into the text above the live area:
//! the reply's last lines go, the area is drawn where they were, and the rows under it keep a
//! stale copy of its foot. Those lines were on the screen and a person saw them; the turn keeps
//! them where they were.

/// One pass of erasing rows upwards, as it began.
struct Pass {
    /// The visible rows when the pass began.
    pre: Vec<String>,
    /// The first row erased (the lowest) and the last one (the highest) so far.
    first: usize,
    top: usize,
}

/// Lines erased and not drawn again, with the lines that stood around them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dropped {
    /// The line above the erased rows, still there after the redraw.
    above: String,
    /// The erased lines, top down (blank lines among them kept).
    lines: Vec<String>,
    /// The first line with text the program drew where they were, which was under them.
    next: String,
}

/// The erase passes of a recording on the normal screen, and what they dropped.
#[derive(Default)]
pub(crate) struct Seams {
    pass: Option<Pass>,
    dropped: Vec<Dropped>,
}

impl Seams {
    /// The program is about to erase row `row` with `ESC [ 2 K`; `rows` gives the visible rows
    /// as they are now (before the erase), asked only when a new pass begins.
    pub(crate) fn erase(&mut self, row: usize, rows: impl FnOnce() -> Vec<String>) {
        if let Some(pass) = &mut self.pass {
            if pass.top.checked_sub(1) == Some(row) {
                pass.top = row;
                return;
            }
        }
        let pre = rows();
        self.close(&pre);
        self.pass = Some(Pass {
            pre,
            first: row,
            top: row,
        });
    }

    /// Forgets the pass under way (a resize or a reprint makes its rows another screen's).
    pub(crate) fn forget(&mut self) {
        self.pass = None;
    }

    /// Ends the pass under way, `post` being the visible rows after its redraw: notes the lines
    /// it erased and did not draw again (nowhere from its top row down), when it began above
    /// rows with text that it left standing (the erase started above the area's foot), the
    /// line above its top row stayed, and the first line with text the program drew from that
    /// row down is one the pass erased lower down: the erased lines above that one.
    pub(crate) fn close(&mut self, post: &[String]) {
        let Some(Pass { pre, first, top }) = self.pass.take() else {
            return;
        };
        let has_text = |line: &String| !line.trim().is_empty();
        let left_standing = pre
            .get(first + 1..)
            .is_some_and(|under| under.iter().any(has_text));
        let Some(above) = top.checked_sub(1).and_then(|row| pre.get(row)) else {
            return;
        };
        if !left_standing || !has_text(above) || post.get(top - 1) != Some(above) {
            return;
        }
        let Some(erased) = pre.get(top..=first) else {
            return;
        };
        let Some(next) = post
            .get(top..)
            .and_then(|rows| rows.iter().find(|l| has_text(l)))
        else {
            return;
        };
        let Some(k) = (1..erased.len()).find(|&k| &erased[k] == next) else {
            return;
        };
        let lines = &erased[..k];
        let redrawn = &post[top..];
        if !lines.iter().any(has_text) || lines.iter().any(|l| has_text(l) && redrawn.contains(l)) {
            return;
        }
        self.dropped.push(Dropped {
            above: above.clone(),
            lines: lines.to_vec(),
            next: next.clone(),
        });
    }

    /// Puts the dropped lines back into `lines` (a recording's lines) where the line above them
    /// is still followed by the next line with text, the lowest such place: where the program
    /// drew them again (a later reprint), those two no longer stand together. (Anywhere else,
    /// the same lines may be an older reply's, reprinted with the transcript.)
    pub(crate) fn restore(&self, lines: &mut Vec<String>) {
        for dropped in &self.dropped {
            let seam = (0..lines.len()).rev().find(|&at| {
                lines[at] == dropped.above
                    && lines[at + 1..]
                        .iter()
                        .find(|l| !l.trim().is_empty())
                        .is_some_and(|l| *l == dropped.next)
            });
            if let Some(at) = seam {
                lines.splice(at + 1..at + 1, dropped.lines.iter().cloned());
            }
        }
    }
}
