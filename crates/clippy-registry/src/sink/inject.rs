//! The inject sink: turn content as keystrokes for another session's PTY.

use std::fmt;

use super::{INJECT_SINK, Sink};
use crate::{SinkError, TurnMeta};

/// Bracketed paste start marker, `ESC [ 2 0 0 ~`.
pub const PASTE_START: &[u8] = b"\x1b[200~";
/// Bracketed paste end marker, `ESC [ 2 0 1 ~`.
pub const PASTE_END: &[u8] = b"\x1b[201~";

/// The bytes to write into a target PTY to paste `content`.
///
/// With `bracketed` (the target application enabled bracketed paste, mode 2004): [`PASTE_START`],
/// the content, [`PASTE_END`], so the application takes a multi-line paste as one input instead
/// of submitting it line by line. Every [`PASTE_END`] and [`PASTE_START`] inside the content is
/// removed first: otherwise a turn containing `ESC[201~` would end the paste early and the rest
/// of it would reach the application as typed keystrokes — an agent's output could then run
/// commands in the other session. Removal is repeated until none is left, so a marker cannot be
/// smuggled in as `ESC[20` + `ESC[201~` + `1~` either. Nothing else is changed.
///
/// Without `bracketed`: the content as is. Each newline in it then acts like a key press of
/// Enter (or Ctrl+J) in the target; this is the v0 paste behaviour.
///
/// ```
/// use clippy_registry::inject_payload;
///
/// assert_eq!(inject_payload(b"ls\n", false), b"ls\n");
/// assert_eq!(inject_payload(b"a\nb", true), b"\x1b[200~a\nb\x1b[201~");
/// // An end marker inside the content cannot close the paste early.
/// assert_eq!(inject_payload(b"x\x1b[201~rm -rf ~\n", true), b"\x1b[200~xrm -rf ~\n\x1b[201~");
/// ```
#[must_use]
pub fn inject_payload(content: &[u8], bracketed: bool) -> Vec<u8> {
    if !bracketed {
        return content.to_vec();
    }
    let mut out = Vec::with_capacity(PASTE_START.len() + content.len() + PASTE_END.len());
    out.extend_from_slice(PASTE_START);
    let body = out.len();
    // Drop a marker the moment its last byte arrives. The body written so far never contains a
    // marker, so any new one ends at the byte just pushed, and removing it can only expose bytes
    // that were already checked: one pass leaves none, in linear time.
    for &byte in content {
        out.push(byte);
        if byte == b'~' && out.len() - body >= PASTE_END.len() {
            let tail = &out[out.len() - PASTE_END.len()..];
            if tail == PASTE_END || tail == PASTE_START {
                out.truncate(out.len() - PASTE_END.len());
            }
        }
    }
    out.extend_from_slice(PASTE_END);
    out
}

/// Delivers content into a target session's PTY, as a paste (CONTRACT_REGISTRY sink `inject`).
///
/// Sans-I/O: the sink builds the bytes with [`inject_payload`] and hands them, with the target
/// session ID, to the `send` function the broker provides (which queues them to the target's
/// wrapper and reports [`SinkError::SessionNotFound`] / [`SinkError::SessionDisconnected`]).
/// The broker knows whether the target enabled bracketed paste (the wrapper tracks mode 2004) and
/// passes it at construction or with [`set_bracketed_paste`](Self::set_bracketed_paste).
///
/// It writes no Enter after the paste: submitting is the caller's separate, delayed write
/// (SPEC §7).
///
/// ```
/// use clippy_registry::{InjectSink, Sink, TurnId, TurnRecord};
///
/// let record = TurnRecord::new(TurnId::new("s1", 1)?, 0, &b"two\nlines"[..], "two\nlines");
/// let mut sent = Vec::new();
/// let mut sink = InjectSink::new("s2", true, |session: &str, bytes: Vec<u8>| {
///     sent.push((session.to_owned(), bytes));
///     Ok(())
/// });
/// sink.deliver(record.content(), record.meta()).unwrap();
/// drop(sink);
/// assert_eq!(sent, [("s2".to_owned(), b"\x1b[200~two\nlines\x1b[201~".to_vec())]);
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
pub struct InjectSink<F> {
    target: String,
    bracketed_paste: bool,
    send: F,
}

impl<F> InjectSink<F>
where
    F: FnMut(&str, Vec<u8>) -> Result<(), SinkError>,
{
    /// A sink pasting into session `target`, whose application has (or has not) enabled
    /// bracketed paste; `send(target, bytes)` writes the bytes to the target's PTY.
    pub fn new(target: impl Into<String>, bracketed_paste: bool, send: F) -> InjectSink<F> {
        InjectSink {
            target: target.into(),
            bracketed_paste,
            send,
        }
    }
}

impl<F> InjectSink<F> {
    /// The target session ID.
    #[must_use]
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Whether pastes are wrapped in bracketed-paste markers.
    #[must_use]
    pub fn bracketed_paste(&self) -> bool {
        self.bracketed_paste
    }

    /// Updates whether the target has bracketed paste enabled.
    pub fn set_bracketed_paste(&mut self, enabled: bool) {
        self.bracketed_paste = enabled;
    }
}

impl<F> fmt::Debug for InjectSink<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InjectSink")
            .field("target", &self.target)
            .field("bracketed_paste", &self.bracketed_paste)
            .finish_non_exhaustive()
    }
}

impl<F> Sink for InjectSink<F>
where
    F: FnMut(&str, Vec<u8>) -> Result<(), SinkError>,
{
    fn name(&self) -> &str {
        INJECT_SINK
    }

    fn deliver(&mut self, content: &[u8], _meta: &TurnMeta) -> Result<(), SinkError> {
        let payload = inject_payload(content, self.bracketed_paste);
        (self.send)(&self.target, payload)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::sink::test_util::meta;

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn without_bracketed_paste_content_is_unchanged() {
        let content = b"line 1\nline 2\x1b[201~\x1b[31mred\n";
        assert_eq!(inject_payload(content, false), content);
        assert_eq!(inject_payload(b"", false), b"");
    }

    #[test]
    fn with_bracketed_paste_content_is_wrapped() {
        assert_eq!(inject_payload(b"a\nb\n", true), b"\x1b[200~a\nb\n\x1b[201~");
        assert_eq!(inject_payload(b"", true), b"\x1b[200~\x1b[201~");
        // Other escapes are kept.
        assert_eq!(
            inject_payload(b"\x1b[31mred\x1b[0m", true),
            b"\x1b[200~\x1b[31mred\x1b[0m\x1b[201~"
        );
    }

    #[test]
    fn embedded_markers_are_removed() {
        assert_eq!(
            inject_payload(b"safe\x1b[201~\nrm -rf ~\n", true),
            b"\x1b[200~safe\nrm -rf ~\n\x1b[201~"
        );
        assert_eq!(
            inject_payload(b"\x1b[200~\x1b[201~x\x1b[200~", true),
            b"\x1b[200~x\x1b[201~"
        );
        // Nested: removing the inner marker must not leave an outer one behind.
        assert_eq!(
            inject_payload(b"a\x1b[20\x1b[201~1~b", true),
            b"\x1b[200~ab\x1b[201~"
        );
        assert_eq!(
            inject_payload(b"\x1b[2\x1b[20\x1b[201~1~01~!", true),
            b"\x1b[200~!\x1b[201~"
        );
        // Near misses stay.
        assert_eq!(
            inject_payload(b"\x1b[202~ [201~ \x1b[201", true),
            b"\x1b[200~\x1b[202~ [201~ \x1b[201\x1b[201~"
        );
    }

    #[test]
    fn sink_sends_the_payload_to_the_target() {
        let mut sent: Vec<(String, Vec<u8>)> = Vec::new();
        let mut sink = InjectSink::new("target", false, |s: &str, b: Vec<u8>| {
            sent.push((s.to_owned(), b));
            Ok(())
        });
        assert_eq!(sink.name(), "inject");
        assert_eq!(sink.target(), "target");
        assert!(!sink.bracketed_paste());
        sink.deliver(b"one\n", &meta()).expect("deliver");
        sink.set_bracketed_paste(true);
        sink.deliver(b"two\x1b[201~\n", &meta()).expect("deliver");
        assert!(format!("{sink:?}").contains("target"));
        drop(sink);
        assert_eq!(
            sent,
            [
                ("target".to_owned(), b"one\n".to_vec()),
                ("target".to_owned(), b"\x1b[200~two\n\x1b[201~".to_vec()),
            ]
        );
    }

    #[test]
    fn send_errors_are_returned() {
        let mut sink = InjectSink::new("gone", true, |s: &str, _b: Vec<u8>| {
            Err(SinkError::SessionDisconnected {
                session: s.to_owned(),
            })
        });
        let err = sink.deliver(b"x", &meta()).expect_err("fails");
        assert_eq!(
            err.to_string(),
            "cannot inject into session \"gone\": its wrapper is not connected"
        );
    }

    fn marker_soup() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"\x1b".to_vec()),
            Just(b"[".to_vec()),
            Just(b"20".to_vec()),
            Just(b"0~".to_vec()),
            Just(b"1~".to_vec()),
            Just(b"\x1b[20".to_vec()),
            Just(PASTE_END.to_vec()),
            Just(PASTE_START.to_vec()),
            proptest::collection::vec(any::<u8>(), 0..4),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        /// The body of a bracketed paste never contains a marker, keeps the content's bytes in
        /// order, and is the content itself when the content has no ESC.
        #[test]
        fn bracketed_body_never_contains_a_marker(content in marker_soup()) {
            let out = inject_payload(&content, true);
            prop_assert!(out.starts_with(PASTE_START));
            prop_assert!(out.ends_with(PASTE_END));
            let body = &out[PASTE_START.len()..out.len() - PASTE_END.len()];
            prop_assert!(!contains(body, PASTE_END));
            prop_assert!(!contains(body, PASTE_START));
            // Only whole markers are removed: the body is a subsequence of the content.
            let mut rest = content.iter();
            prop_assert!(body.iter().all(|b| rest.any(|c| c == b)));
            if !content.contains(&0x1b) {
                prop_assert_eq!(body, &content[..]);
            }
        }
    }
}
