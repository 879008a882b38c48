//! The relay buffer: the one captured turn, waiting to be pasted or delivered.

use crate::{TurnId, TurnRecord};

/// Holds at most one captured turn: its ID, metadata, content, text and message, when it has one
/// (CONTRACT_REGISTRY: the relay buffer stores "the Turn ID plus a copy of the content bytes").
///
/// The copy is a clone of the [`TurnRecord`], so its bytes are shared with the ring, not
/// duplicated; the relay keeps them alive on its own, so the captured turn survives its eviction
/// from the ring and the removal of its session. The metadata comes along because a
/// [`Sink`](crate::Sink) needs it to deliver.
///
/// Reading does not clear it: a paste leaves the turn in place for the next paste. Only a new
/// [`capture`](Self::capture) replaces it.
///
/// ```
/// use clippy_registry::{Registry, RelayBuffer, TurnId, TurnRecord};
///
/// let mut registry = Registry::default();
/// registry.add_session("s1")?;
/// registry.insert(TurnRecord::new(TurnId::new("s1", 1)?, 0, &b"hello"[..], "hello"))?;
///
/// let mut relay = RelayBuffer::new();
/// relay.capture(registry.latest("s1")?);
/// registry.remove_session("s1");
/// let captured = relay.get().expect("captured");
/// assert_eq!(captured.content(), b"hello");
/// assert_eq!(captured.turn_id().to_string(), "s1:1");
/// assert!(relay.get().is_some(), "reading does not clear it");
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct RelayBuffer {
    slot: Option<TurnRecord>,
}

impl RelayBuffer {
    /// An empty relay buffer.
    #[must_use]
    pub fn new() -> RelayBuffer {
        RelayBuffer::default()
    }

    /// Captures `record`, replacing what was held. Shares its bytes; copies nothing but the
    /// metadata.
    pub fn capture(&mut self, record: &TurnRecord) {
        self.slot = Some(record.clone());
    }

    /// The captured turn, if any. Does not clear it.
    #[must_use]
    pub fn get(&self) -> Option<&TurnRecord> {
        self.slot.as_ref()
    }

    /// The captured turn's ID, if any.
    #[must_use]
    pub fn turn_id(&self) -> Option<&TurnId> {
        self.slot.as_ref().map(TurnRecord::turn_id)
    }

    /// Whether nothing has been captured yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slot.is_none()
    }

    /// Bytes of content, text and message held (shared with a ring while the turn is still in
    /// one).
    #[must_use]
    pub fn held_bytes(&self) -> usize {
        self.slot.as_ref().map_or(0, TurnRecord::held_bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Registry, RegistryConfig};

    fn rec(session: &str, seq: u64, body: &str) -> TurnRecord {
        TurnRecord::new(
            TurnId::new(session, seq).expect("id"),
            0,
            body.as_bytes(),
            body,
        )
    }

    #[test]
    fn starts_empty() {
        let relay = RelayBuffer::new();
        assert!(relay.is_empty());
        assert!(relay.get().is_none() && relay.turn_id().is_none());
        assert_eq!(relay.held_bytes(), 0);
    }

    #[test]
    fn capture_replaces_and_reads_do_not_clear() {
        let mut relay = RelayBuffer::new();
        relay.capture(&rec("s", 1, "first"));
        relay.capture(&rec("s", 2, "second"));
        for _ in 0..3 {
            let got = relay.get().expect("held");
            assert_eq!(got.text(), "second");
        }
        assert_eq!(
            relay.turn_id().map(ToString::to_string).as_deref(),
            Some("s:2")
        );
        assert!(!relay.is_empty());
        assert_eq!(relay.held_bytes(), 12);
    }

    #[test]
    fn capture_shares_bytes_with_the_ring() {
        let mut registry = Registry::default();
        registry.add_session("s").expect("add");
        registry.insert(rec("s", 1, "body")).expect("insert");
        let mut relay = RelayBuffer::new();
        relay.capture(registry.latest("s").expect("latest"));
        let held = relay.get().expect("held");
        let stored = registry.latest("s").expect("latest");
        assert!(Arc::ptr_eq(held.content_arc(), stored.content_arc()));
        assert!(Arc::ptr_eq(held.text_arc(), stored.text_arc()));
    }

    #[test]
    fn survives_eviction_and_session_removal() {
        let mut registry = Registry::new(RegistryConfig {
            ring_depth: 1,
            ..RegistryConfig::default()
        })
        .expect("config");
        registry.add_session("s").expect("add");
        registry.insert(rec("s", 1, "kept")).expect("insert");
        let mut relay = RelayBuffer::new();
        relay.capture(registry.latest("s").expect("latest"));

        registry.insert(rec("s", 2, "newer")).expect("evicts 1");
        assert!(registry.get(&"s:1".parse().expect("id")).is_err());
        assert_eq!(relay.get().expect("held").content(), b"kept");

        assert!(registry.remove_session("s"));
        let held = relay.get().expect("held");
        assert_eq!(held.content(), b"kept");
        assert_eq!(held.text(), "kept");
        assert_eq!(held.meta().byte_length, 4);
    }
}
