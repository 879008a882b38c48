//! The frames of a full-screen TUI, stitched into one transcript.
//!
//! On the alternate screen nothing scrolls into history: a TUI shows a long reply by redrawing
//! its rows. Each frame's rows are added in order of first appearance; a row that grew in place
//! (streamed text) replaces its shorter self.

use std::collections::HashMap;

/// The transcript stitched so far.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    lines: Vec<String>,
    /// Where each line is in `lines`.
    positions: HashMap<String, usize>,
    /// For each row of the previous frame, its line in `lines`.
    previous: Vec<Option<usize>>,
}

impl Frames {
    /// Adds one frame: the screen's rows, top to bottom.
    pub(crate) fn sample(&mut self, rows: Vec<String>) {
        let mut current = Vec::with_capacity(rows.len());
        for (row, text) in rows.into_iter().enumerate() {
            if text.trim().is_empty() {
                current.push(None);
                continue;
            }
            if let Some(&at) = self.positions.get(&text) {
                current.push(Some(at));
                continue;
            }
            let grown = self
                .previous
                .get(row)
                .copied()
                .flatten()
                .filter(|&at| text.starts_with(self.lines[at].as_str()));
            let at = match grown {
                Some(at) => {
                    self.positions.remove(&self.lines[at]);
                    self.lines[at] = text.clone();
                    at
                }
                None => {
                    self.lines.push(text.clone());
                    self.lines.len() - 1
                }
            };
            self.positions.insert(text, at);
            current.push(Some(at));
        }
        self.previous = current;
    }

    /// The transcript, oldest line first.
    pub(crate) fn into_lines(self) -> Vec<String> {
        self.lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_stitched_in_order_of_first_appearance_and_grow_in_place() {
        let mut frames = Frames::default();
        let frame = |rows: &[&str]| rows.iter().map(|r| (*r).to_owned()).collect::<Vec<_>>();
        frames.sample(frame(&["a", "b", "> "]));
        frames.sample(frame(&["b", "c", "> "]));
        frames.sample(frame(&["c", "d one", "> "]));
        frames.sample(frame(&["c", "d one two", "> "]));
        assert_eq!(frames.into_lines(), ["a", "b", "> ", "c", "d one two"]);
    }
}
