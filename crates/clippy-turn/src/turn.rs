//! The completed turn.

use std::sync::Arc;

use crate::preset::Preset;

/// A completed turn: what the agent output between the submitted input and its next prompt.
///
/// `content` is the raw bytes, escapes preserved, byte-exact: the stored and relayed form.
/// [`Turn::text`] renders it through a terminal emulator into the text a person saw.
#[derive(Debug, Clone)]
pub struct Turn {
    /// 1 for the first turn of a detector, then 2, 3, …
    pub seq: u64,
    /// The raw output of the turn (at most the configured maximum; see `truncated`).
    pub content: Vec<u8>,
    /// Stream offset of the first content byte.
    pub start: u64,
    /// Stream offset just past the last content byte (where the prompt line begins).
    pub end: u64,
    /// The submitted line(s) that started the turn, joined with `\n`; empty when the agent
    /// went busy on input that was not seen as a submit.
    pub input: String,
    /// The user pressed Ctrl+C while the turn ran.
    pub interrupted: bool,
    /// The content was longer than the maximum and was cut.
    pub truncated: bool,
    /// The command's exit code, when the shell reported it (OSC 133 `D;<code>`).
    pub exit_code: Option<i32>,
    /// The working directory last reported by the agent (OSC 7), when known.
    pub cwd: Option<String>,
    pub(crate) render: RenderContext,
}

impl PartialEq for Turn {
    /// Turns are equal when their data is; the rendering context is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
            && self.content == other.content
            && self.start == other.start
            && self.end == other.end
            && self.input == other.input
            && self.interrupted == other.interrupted
            && self.truncated == other.truncated
            && self.exit_code == other.exit_code
            && self.cwd == other.cwd
    }
}

/// What rendering a turn as text needs besides its content.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "text"), allow(dead_code))]
pub(crate) struct RenderContext {
    /// Output just before the content (at most 64 KiB): puts the emulator in the state the
    /// agent drew on, so relative cursor moves land where they did.
    pub(crate) preamble: Vec<u8>,
    /// The screen size when the turn started (columns, rows).
    pub(crate) size: (u16, u16),
    /// Resizes during the turn: (offset relative to the content's first byte — negative while
    /// the preamble was being drawn — columns, rows).
    pub(crate) resizes: Vec<(i64, u16, u16)>,
    /// The submitted lines, whose echoes are left out of the text.
    pub(crate) inputs: Vec<String>,
    /// The preset, whose prompt and busy lines are left out of the text.
    pub(crate) preset: Arc<Preset>,
}
