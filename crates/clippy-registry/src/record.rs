//! Turn records and their metadata.

use std::sync::Arc;

use crate::TurnId;

/// A turn's metadata: everything in a [`TurnRecord`] but its content. This is what turn listings
/// carry, and what a [`Sink`](crate::Sink) is told about the turn it delivers.
///
/// Metadata is immutable once the record is built (CONTRACT_REGISTRY): a registry hands out only
/// shared references to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnMeta {
    /// The turn's ID.
    pub turn_id: TurnId,
    /// When the turn completed, in milliseconds since the Unix epoch (given by the caller; this
    /// crate reads no clock).
    pub timestamp_ms: u64,
    /// Length of the content as stored, in bytes (after any truncation).
    pub byte_length: u32,
    /// The user interrupted the turn (Ctrl+C while it ran).
    pub interrupted: bool,
    /// The content (or its text view) was cut to the size limit.
    pub truncated: bool,
    /// The command's exit code, when the stream carried one (OSC 133 `D`).
    pub exit_code: Option<i32>,
    /// The working directory, when the stream carried one (OSC 7).
    pub cwd: Option<String>,
    /// The input line the user submitted, when known.
    pub input: Option<String>,
    /// The turn's content as a `[start, end)` byte span of the session's spool, when known.
    pub spool_span: Option<(u64, u64)>,
    /// Length in bytes of the agent's own final message as stored (after any truncation), when
    /// its hooks gave one ([`TurnRecord::message`]).
    pub message_length: Option<u32>,
}

/// A completed turn: its [`TurnMeta`], its raw content, its rendered text and — when the agent's
/// hooks reported it — the agent's own final message.
///
/// Content, text and message are reference-counted, so cloning a record, listing it, or
/// capturing it into a [`RelayBuffer`](crate::RelayBuffer) never copies the bytes. Build one
/// with [`TurnRecord::new`] and the `with_*` methods; the byte lengths are computed, never given.
///
/// ```
/// use clippy_registry::{TurnId, TurnRecord};
///
/// let record = TurnRecord::new(TurnId::new("s1", 1)?, 1_700_000_000_000, &b"\x1b[1mhi\x1b[0m\n"[..], "hi\n")
///     .with_exit_code(0)
///     .with_input("echo hi");
/// assert_eq!(record.content(), b"\x1b[1mhi\x1b[0m\n");
/// assert_eq!(record.text(), "hi\n");
/// assert_eq!(record.meta().byte_length, 11);
/// assert_eq!(record.meta().exit_code, Some(0));
/// assert_eq!(record.message(), None);
///
/// let answered = record.with_message("**hi**");
/// assert_eq!(answered.message(), Some("**hi**"));
/// assert_eq!(answered.meta().message_length, Some(6));
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRecord {
    meta: TurnMeta,
    content: Arc<[u8]>,
    text: Arc<str>,
    /// The agent's own final message, from its hooks; `None` for a turn without one.
    message: Option<Arc<str>>,
}

impl TurnRecord {
    /// A record with the given ID, completion time (Unix ms), raw content and rendered text;
    /// not interrupted, not truncated, no optional metadata, no message.
    ///
    /// `byte_length` is the content's length (saturating at `u32::MAX`; a
    /// [`Registry`](crate::Registry) cuts content to its limit, which is at most `u32::MAX`, so a
    /// stored record's length is always exact).
    #[must_use]
    pub fn new(
        turn_id: TurnId,
        timestamp_ms: u64,
        content: impl Into<Arc<[u8]>>,
        text: impl Into<Arc<str>>,
    ) -> TurnRecord {
        let content = content.into();
        TurnRecord {
            meta: TurnMeta {
                turn_id,
                timestamp_ms,
                byte_length: saturating_u32(content.len()),
                interrupted: false,
                truncated: false,
                exit_code: None,
                cwd: None,
                input: None,
                spool_span: None,
                message_length: None,
            },
            content,
            text: text.into(),
            message: None,
        }
    }

    /// Sets the `interrupted` flag.
    #[must_use]
    pub fn with_interrupted(mut self, interrupted: bool) -> TurnRecord {
        self.meta.interrupted = interrupted;
        self
    }

    /// Sets the `truncated` flag (e.g. when the wrapper's detector already cut the turn). A
    /// registry only ever sets it, never clears it.
    #[must_use]
    pub fn with_truncated(mut self, truncated: bool) -> TurnRecord {
        self.meta.truncated = truncated;
        self
    }

    /// Sets the exit code.
    #[must_use]
    pub fn with_exit_code(mut self, exit_code: i32) -> TurnRecord {
        self.meta.exit_code = Some(exit_code);
        self
    }

    /// Sets the working directory.
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> TurnRecord {
        self.meta.cwd = Some(cwd.into());
        self
    }

    /// Sets the submitted input line.
    #[must_use]
    pub fn with_input(mut self, input: impl Into<String>) -> TurnRecord {
        self.meta.input = Some(input.into());
        self
    }

    /// Sets the spool span `[start, end)`.
    #[must_use]
    pub fn with_spool_span(mut self, start: u64, end: u64) -> TurnRecord {
        self.meta.spool_span = Some((start, end));
        self
    }

    /// Sets the agent's own final message (what its hooks reported at the end of the turn),
    /// and `message_length` with it.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<Arc<str>>) -> TurnRecord {
        let message = message.into();
        self.meta.message_length = Some(saturating_u32(message.len()));
        self.message = Some(message);
        self
    }

    /// The metadata.
    #[must_use]
    pub fn meta(&self) -> &TurnMeta {
        &self.meta
    }

    /// The turn ID.
    #[must_use]
    pub fn turn_id(&self) -> &TurnId {
        &self.meta.turn_id
    }

    /// The raw content (escape sequences preserved).
    #[must_use]
    pub fn content(&self) -> &[u8] {
        &self.content
    }

    /// The rendered text view.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The shared content, for handing to another owner without a copy.
    #[must_use]
    pub fn content_arc(&self) -> &Arc<[u8]> {
        &self.content
    }

    /// The shared text, for handing to another owner without a copy.
    #[must_use]
    pub fn text_arc(&self) -> &Arc<str> {
        &self.text
    }

    /// The agent's own final message, when its hooks reported one: the markdown the model
    /// wrote, without the terminal's wrapping or decoration.
    #[must_use]
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The shared message, for handing to another owner without a copy.
    #[must_use]
    pub fn message_arc(&self) -> Option<&Arc<str>> {
        self.message.as_ref()
    }

    /// Bytes held by content, text and message together (what [`Registry::total_bytes`] adds
    /// up).
    ///
    /// [`Registry::total_bytes`]: crate::Registry::total_bytes
    #[must_use]
    pub fn held_bytes(&self) -> usize {
        self.content.len() + self.text.len() + self.message.as_ref().map_or(0, |m| m.len())
    }

    /// Cuts content, text and message to at most `limit` bytes each, setting `truncated`,
    /// `byte_length` and `message_length` when anything was cut. Content and message keep their
    /// beginning (the message at a char boundary); the text view keeps its end, from a line start
    /// when one is in it: a long turn's text is what its screen kept, the end of the output, and
    /// the end is what a reader of a flood wants. Only an oversize part is copied.
    pub fn truncate_to(&mut self, limit: usize) {
        if self.content.len() > limit {
            self.content = Arc::from(&self.content[..limit]);
            self.meta.truncated = true;
        }
        if let Some(text) = cut_str_keeping_end(&self.text, limit) {
            self.text = text;
            self.meta.truncated = true;
        }
        if let Some(message) = self.message.as_ref().and_then(|m| cut_str(m, limit)) {
            self.meta.message_length = Some(saturating_u32(message.len()));
            self.message = Some(message);
            self.meta.truncated = true;
        }
        self.meta.byte_length = saturating_u32(self.content.len());
    }
}

/// `s` cut to at most `limit` bytes at a char boundary, or `None` when it fits.
fn cut_str(s: &str, limit: usize) -> Option<Arc<str>> {
    if s.len() <= limit {
        return None;
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Some(Arc::from(&s[..end]))
}

/// The end of `s` in at most `limit` bytes, from its first line start (else its first char
/// boundary), or `None` when it fits.
fn cut_str_keeping_end(s: &str, limit: usize) -> Option<Arc<str>> {
    if s.len() <= limit {
        return None;
    }
    let mut start = s.len() - limit;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    let tail = &s[start..];
    let from_line = match tail.find('\n') {
        Some(newline) if newline + 1 < tail.len() => &tail[newline + 1..],
        _ => tail,
    };
    Some(Arc::from(from_line))
}

fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(content: &[u8], text: &str) -> TurnRecord {
        TurnRecord::new(TurnId::new("s", 1).expect("id"), 5, content, text)
    }

    #[test]
    fn new_computes_byte_length_and_defaults() {
        let r = rec(b"abc", "abc");
        let m = r.meta();
        assert_eq!(m.byte_length, 3);
        assert_eq!(m.timestamp_ms, 5);
        assert!(!m.interrupted && !m.truncated);
        assert_eq!(
            (m.exit_code, &m.cwd, &m.input, m.spool_span),
            (None, &None, &None, None)
        );
        assert_eq!((r.message(), m.message_length), (None, None));
        assert_eq!(r.held_bytes(), 6);
    }

    #[test]
    fn builders_set_optional_metadata() {
        let r = rec(b"x", "x")
            .with_interrupted(true)
            .with_truncated(true)
            .with_exit_code(2)
            .with_cwd("/tmp")
            .with_input("ls")
            .with_spool_span(10, 11);
        let m = r.meta();
        assert!(m.interrupted && m.truncated);
        assert_eq!(m.exit_code, Some(2));
        assert_eq!(m.cwd.as_deref(), Some("/tmp"));
        assert_eq!(m.input.as_deref(), Some("ls"));
        assert_eq!(m.spool_span, Some((10, 11)));
    }

    #[test]
    fn a_message_is_kept_measured_and_counted() {
        let r = rec(b"\x1b[1mok\x1b[0m", "ok").with_message("**ok** \u{e9}");
        assert_eq!(r.message(), Some("**ok** \u{e9}"));
        assert_eq!(r.meta().message_length, Some(9), "bytes, not chars");
        assert_eq!(r.meta().byte_length, 10, "the raw length is untouched");
        assert_eq!(r.held_bytes(), 10 + 2 + 9);
        let c = r.clone();
        assert!(Arc::ptr_eq(
            r.message_arc().expect("message"),
            c.message_arc().expect("message")
        ));
    }

    #[test]
    fn clones_share_content_and_text() {
        let r = rec(b"shared", "shared");
        let c = r.clone();
        assert!(Arc::ptr_eq(r.content_arc(), c.content_arc()));
        assert!(Arc::ptr_eq(r.text_arc(), c.text_arc()));
    }

    #[test]
    fn truncate_cuts_content_exactly_and_keeps_the_end_of_the_text() {
        let mut r = rec(b"0123456789", "h\u{e9}llo");
        r.truncate_to(4);
        assert_eq!(r.content(), b"0123");
        assert_eq!(r.meta().byte_length, 4);
        assert_eq!(r.text(), "llo", "é is two bytes and does not fit whole");
        assert!(r.meta().truncated);
        // A flood's text view: its last lines, whole, up to the very end.
        let lines: String = (1..=1000).map(|n| format!("{n}\n")).collect();
        let mut r = rec(b"x", &lines);
        r.truncate_to(100);
        assert!(r.text().len() <= 100);
        assert!(
            r.text().starts_with("97") && r.text().ends_with("999\n1000\n"),
            "{}",
            r.text()
        );
        // Without a line start in what fits, from a char boundary.
        let mut r = rec(b"x", "\u{e9}\u{e9}\u{e9}\u{e9}");
        r.truncate_to(5);
        assert_eq!(r.text(), "\u{e9}\u{e9}");
    }

    #[test]
    fn truncate_cuts_the_message_at_a_char_boundary_too() {
        let mut r = rec(b"ab", "ab").with_message("a\u{e9}b");
        r.truncate_to(2);
        assert_eq!(r.message(), Some("a"), "é is two bytes and does not fit");
        assert_eq!(r.meta().message_length, Some(1));
        assert!(r.meta().truncated);
        assert_eq!(r.content(), b"ab", "content within the limit is kept");
        // A message within the limit is not copied.
        let mut r = rec(b"abc", "abc").with_message("ok");
        let before = Arc::clone(r.message_arc().expect("message"));
        r.truncate_to(3);
        assert!(!r.meta().truncated);
        assert!(Arc::ptr_eq(&before, r.message_arc().expect("message")));
    }

    #[test]
    fn truncate_within_limit_changes_nothing_and_copies_nothing() {
        let mut r = rec(b"abc", "abc");
        let before = Arc::clone(r.content_arc());
        r.truncate_to(3);
        assert!(!r.meta().truncated);
        assert!(Arc::ptr_eq(&before, r.content_arc()));
    }
}
