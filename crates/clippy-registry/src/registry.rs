//! The per-session rings of turn records.

use std::collections::{BTreeMap, VecDeque, vec_deque};
use std::iter::{Rev, Take};

use crate::id::check_session_id;
use crate::{RegistryConfig, RegistryError, TurnId, TurnRecord};

/// The broker's turn history: one bounded ring of [`TurnRecord`]s per registered session.
///
/// Turn IDs come from the wrapper (its detector numbers turns 1, 2, 3…), so the registry does not
/// assign seqs; it keeps, per session, the highest seq it has seen and stores a turn only if its
/// seq is higher. A turn with a seq already seen — a wrapper re-sending its latest turns after it
/// reconnects — is accepted and ignored ([`InsertOutcome::AlreadySeen`]), as is one whose seq went
/// backwards. So seqs in a ring are strictly increasing and never reused.
///
/// Inserting never blocks and never fails for a registered session: content over
/// [`RegistryConfig::max_turn_bytes`] is cut and marked `truncated`, and a full ring drops its
/// oldest turn silently.
///
/// Sans-I/O: no clock (timestamps come with the record), no files, no threads.
///
/// ```
/// use clippy_registry::{Registry, RegistryConfig, RegistryError, TurnId, TurnRecord};
///
/// let mut registry = Registry::new(RegistryConfig { ring_depth: 2, ..RegistryConfig::default() })?;
/// registry.add_session("s1")?;
/// for seq in 1..=3 {
///     let text = format!("answer {seq}\n");
///     let record = TurnRecord::new(TurnId::new("s1", seq)?, 1_000 + seq, text.as_bytes(), text.as_str());
///     registry.insert(record)?;
/// }
/// // Depth 2: turn 1 was evicted.
/// assert_eq!(registry.latest("s1")?.text(), "answer 3\n");
/// let listed: Vec<String> = registry.list("s1", None)?.map(|r| r.turn_id().to_string()).collect();
/// assert_eq!(listed, ["s1:3", "s1:2"]);
/// assert!(matches!(
///     registry.get(&"s1:1".parse()?),
///     Err(RegistryError::TurnNotFound { .. })
/// ));
/// # Ok::<(), RegistryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Registry {
    config: RegistryConfig,
    sessions: BTreeMap<String, Ring>,
    total_bytes: usize,
}

#[derive(Debug, Clone, Default)]
struct Ring {
    /// Oldest at the front, newest at the back; seqs strictly increasing.
    turns: VecDeque<TurnRecord>,
    /// Highest seq ever seen for the session, stored or not (0 before the first turn).
    last_seq: u64,
}

/// What [`Registry::insert`] did with a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsertOutcome {
    /// The turn is new and is now the session's latest. The broker announces it (turn events,
    /// routes).
    Stored(TurnId),
    /// A turn with this seq, or a higher one, was seen before for the session (a wrapper
    /// re-sending after a reconnect, or a seq going backwards). Nothing was stored; the broker
    /// should acknowledge it and announce nothing.
    AlreadySeen(TurnId),
}

impl InsertOutcome {
    /// The turn's ID, in either case.
    #[must_use]
    pub fn turn_id(&self) -> &TurnId {
        match self {
            InsertOutcome::Stored(id) | InsertOutcome::AlreadySeen(id) => id,
        }
    }

    /// The turn's ID, by value.
    #[must_use]
    pub fn into_turn_id(self) -> TurnId {
        match self {
            InsertOutcome::Stored(id) | InsertOutcome::AlreadySeen(id) => id,
        }
    }

    /// Whether the turn was stored (it was new).
    #[must_use]
    pub fn is_stored(&self) -> bool {
        matches!(self, InsertOutcome::Stored(_))
    }
}

/// Turn records of one session, newest first; from [`Registry::list`].
#[derive(Debug, Clone)]
pub struct Turns<'a> {
    inner: Take<Rev<vec_deque::Iter<'a, TurnRecord>>>,
}

impl<'a> Iterator for Turns<'a> {
    type Item = &'a TurnRecord;

    fn next(&mut self) -> Option<&'a TurnRecord> {
        self.inner.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl ExactSizeIterator for Turns<'_> {}

impl Default for Registry {
    /// An empty registry with [`RegistryConfig::default`].
    fn default() -> Registry {
        Registry {
            config: RegistryConfig::default(),
            sessions: BTreeMap::new(),
            total_bytes: 0,
        }
    }
}

impl Registry {
    /// An empty registry.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidConfig`] when `config` does not [validate](RegistryConfig::validate).
    pub fn new(config: RegistryConfig) -> Result<Registry, RegistryError> {
        config.validate()?;
        Ok(Registry {
            config,
            sessions: BTreeMap::new(),
            total_bytes: 0,
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &RegistryConfig {
        &self.config
    }

    /// Registers a session with an empty ring.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidSessionId`] when `session` is empty or contains `:`;
    /// [`RegistryError::DuplicateSession`] when it is registered already.
    pub fn add_session(&mut self, session: &str) -> Result<(), RegistryError> {
        check_session_id(session)?;
        if self.sessions.contains_key(session) {
            return Err(RegistryError::DuplicateSession {
                session: session.to_owned(),
            });
        }
        self.sessions.insert(session.to_owned(), Ring::default());
        Ok(())
    }

    /// Removes a session and its turns (a [`RelayBuffer`](crate::RelayBuffer) holding one of
    /// them keeps its copy). Returns whether the session was registered.
    pub fn remove_session(&mut self, session: &str) -> bool {
        match self.sessions.remove(session) {
            Some(ring) => {
                self.total_bytes -= ring.turns.iter().map(TurnRecord::held_bytes).sum::<usize>();
                true
            }
            None => false,
        }
    }

    /// Whether the session is registered.
    #[must_use]
    pub fn has_session(&self, session: &str) -> bool {
        self.sessions.contains_key(session)
    }

    /// The registered sessions, in ID order.
    pub fn sessions(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.sessions.keys().map(String::as_str)
    }

    /// Stores a completed turn as its session's latest, cutting content, text and message to
    /// [`RegistryConfig::max_turn_bytes`] each (setting `truncated` and the lengths) and evicting
    /// the session's oldest turn if its ring is full.
    ///
    /// A seq at or below the highest already seen for the session stores nothing and returns
    /// [`InsertOutcome::AlreadySeen`] (see the type's docs).
    ///
    /// # Errors
    ///
    /// [`RegistryError::SessionNotFound`] when the record's session is not registered.
    pub fn insert(&mut self, mut record: TurnRecord) -> Result<InsertOutcome, RegistryError> {
        let session = record.turn_id().session();
        let ring =
            self.sessions
                .get_mut(session)
                .ok_or_else(|| RegistryError::SessionNotFound {
                    session: session.to_owned(),
                })?;
        let seq = record.turn_id().seq();
        if seq <= ring.last_seq {
            return Ok(InsertOutcome::AlreadySeen(record.turn_id().clone()));
        }
        ring.last_seq = seq;
        record.truncate_to(self.config.max_turn_bytes);
        while ring.turns.len() >= self.config.ring_depth {
            if let Some(evicted) = ring.turns.pop_front() {
                self.total_bytes -= evicted.held_bytes();
            }
        }
        self.total_bytes += record.held_bytes();
        let id = record.turn_id().clone();
        ring.turns.push_back(record);
        Ok(InsertOutcome::Stored(id))
    }

    /// The session's latest completed turn (the ring's head).
    ///
    /// # Errors
    ///
    /// [`RegistryError::SessionNotFound`] for an unregistered session, [`RegistryError::NoTurn`]
    /// when it has no turn yet.
    pub fn latest(&self, session: &str) -> Result<&TurnRecord, RegistryError> {
        self.ring(session)?
            .turns
            .back()
            .ok_or_else(|| RegistryError::NoTurn {
                session: session.to_owned(),
            })
    }

    /// The turn with this ID.
    ///
    /// # Errors
    ///
    /// [`RegistryError::TurnNotFound`] when it was evicted, its session is not registered, or it
    /// never existed.
    pub fn get(&self, turn_id: &TurnId) -> Result<&TurnRecord, RegistryError> {
        let not_found = || RegistryError::TurnNotFound {
            turn_id: turn_id.clone(),
        };
        let ring = self.sessions.get(turn_id.session()).ok_or_else(not_found)?;
        let index = ring
            .turns
            .binary_search_by_key(&turn_id.seq(), |r| r.turn_id().seq())
            .map_err(|_| not_found())?;
        ring.turns.get(index).ok_or_else(not_found)
    }

    /// The session's turns, newest first, at most `limit` of them (all when `None`).
    ///
    /// # Errors
    ///
    /// [`RegistryError::SessionNotFound`] for an unregistered session.
    pub fn list(&self, session: &str, limit: Option<usize>) -> Result<Turns<'_>, RegistryError> {
        let ring = self.ring(session)?;
        Ok(Turns {
            inner: ring.turns.iter().rev().take(limit.unwrap_or(usize::MAX)),
        })
    }

    /// The highest seq seen for the session (stored or since evicted), `None` before its first
    /// turn.
    ///
    /// # Errors
    ///
    /// [`RegistryError::SessionNotFound`] for an unregistered session.
    pub fn last_seq(&self, session: &str) -> Result<Option<u64>, RegistryError> {
        let last = self.ring(session)?.last_seq;
        Ok((last > 0).then_some(last))
    }

    /// Bytes of content, text and messages held by all rings, for memory accounting. Bytes
    /// shared with a
    /// [`RelayBuffer`](crate::RelayBuffer) count here while a ring holds them.
    #[must_use]
    pub fn total_bytes(&self) -> usize {
        self.total_bytes
    }

    fn ring(&self, session: &str) -> Result<&Ring, RegistryError> {
        self.sessions
            .get(session)
            .ok_or_else(|| RegistryError::SessionNotFound {
                session: session.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id(session: &str, seq: u64) -> TurnId {
        TurnId::new(session, seq).expect("valid id")
    }

    fn rec(session: &str, seq: u64, content: &str) -> TurnRecord {
        TurnRecord::new(id(session, seq), seq * 10, content.as_bytes(), content)
    }

    fn registry(ring_depth: usize, max_turn_bytes: usize) -> Registry {
        Registry::new(RegistryConfig {
            ring_depth,
            max_turn_bytes,
        })
        .expect("valid config")
    }

    fn seqs(r: &Registry, session: &str) -> Vec<u64> {
        r.list(session, None)
            .expect("session")
            .map(|t| t.turn_id().seq())
            .collect()
    }

    #[test]
    fn new_refuses_an_invalid_config() {
        assert!(matches!(
            Registry::new(RegistryConfig {
                ring_depth: 0,
                max_turn_bytes: 1
            }),
            Err(RegistryError::InvalidConfig { .. })
        ));
        assert_eq!(Registry::default().config(), &RegistryConfig::default());
    }

    #[test]
    fn sessions_are_added_listed_and_removed() {
        let mut r = Registry::default();
        r.add_session("b").expect("add b");
        r.add_session("a").expect("add a");
        assert_eq!(
            r.add_session("a"),
            Err(RegistryError::DuplicateSession {
                session: "a".into()
            })
        );
        assert!(matches!(
            r.add_session(""),
            Err(RegistryError::InvalidSessionId { .. })
        ));
        assert!(matches!(
            r.add_session("x:y"),
            Err(RegistryError::InvalidSessionId { .. })
        ));
        assert!(r.has_session("a") && !r.has_session("c"));
        assert_eq!(r.sessions().collect::<Vec<_>>(), ["a", "b"]);
        assert!(r.remove_session("a"));
        assert!(!r.remove_session("a"));
        assert_eq!(r.sessions().collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn insert_needs_a_registered_session() {
        let mut r = Registry::default();
        assert_eq!(
            r.insert(rec("s", 1, "x")),
            Err(RegistryError::SessionNotFound {
                session: "s".into()
            })
        );
        assert_eq!(r.total_bytes(), 0);
    }

    #[test]
    fn ring_evicts_the_oldest_after_depth_plus_one() {
        let depth = 3;
        let mut r = registry(depth, 1024);
        r.add_session("s").expect("add");
        for seq in 1..=depth as u64 {
            assert!(r.insert(rec("s", seq, "t")).expect("insert").is_stored());
        }
        assert_eq!(seqs(&r, "s"), [3, 2, 1]);
        r.get(&id("s", 1)).expect("still there at depth");
        r.insert(rec("s", 4, "t")).expect("insert");
        assert_eq!(seqs(&r, "s"), [4, 3, 2]);
        assert_eq!(
            r.get(&id("s", 1)),
            Err(RegistryError::TurnNotFound {
                turn_id: id("s", 1)
            })
        );
        assert_eq!(r.get(&id("s", 2)).expect("kept").turn_id(), &id("s", 2));
        assert_eq!(r.total_bytes(), 3 * 2);
    }

    #[test]
    fn re_sent_and_backward_seqs_are_accepted_and_ignored() {
        let mut r = registry(4, 1024);
        r.add_session("s").expect("add");
        r.insert(rec("s", 1, "one")).expect("1");
        r.insert(rec("s", 2, "two")).expect("2");
        let bytes = r.total_bytes();
        // A wrapper re-sending its latest turn after a reconnect.
        assert_eq!(
            r.insert(rec("s", 2, "changed")),
            Ok(InsertOutcome::AlreadySeen(id("s", 2)))
        );
        // Going backwards.
        assert_eq!(
            r.insert(rec("s", 1, "again")),
            Ok(InsertOutcome::AlreadySeen(id("s", 1)))
        );
        assert_eq!(seqs(&r, "s"), [2, 1]);
        assert_eq!(r.get(&id("s", 2)).expect("2").text(), "two");
        assert_eq!(r.total_bytes(), bytes);
        assert_eq!(r.last_seq("s"), Ok(Some(2)));
        // Gaps are fine: the wrapper's seqs need not be dense here.
        assert_eq!(
            r.insert(rec("s", 5, "five")),
            Ok(InsertOutcome::Stored(id("s", 5)))
        );
        assert_eq!(seqs(&r, "s"), [5, 2, 1]);
    }

    #[test]
    fn an_evicted_seq_stays_seen() {
        let mut r = registry(1, 1024);
        r.add_session("s").expect("add");
        r.insert(rec("s", 1, "a")).expect("1");
        r.insert(rec("s", 2, "b")).expect("2");
        assert!(!r.insert(rec("s", 1, "a")).expect("1 again").is_stored());
        assert_eq!(seqs(&r, "s"), [2]);
    }

    #[test]
    fn oversize_content_and_text_are_truncated_and_flagged() {
        let mut r = registry(4, 4);
        r.add_session("s").expect("add");
        r.insert(rec("s", 1, "abcdefgh")).expect("insert");
        let t = r.latest("s").expect("latest");
        assert_eq!(t.content(), b"abcd");
        assert_eq!(t.text(), "efgh", "the text view keeps its end");
        assert_eq!(t.meta().byte_length, 4);
        assert!(t.meta().truncated);
        assert_eq!(r.total_bytes(), 8);
        // At the limit exactly: untouched.
        r.insert(rec("s", 2, "wxyz")).expect("insert");
        let t = r.latest("s").expect("latest");
        assert!(!t.meta().truncated);
        assert_eq!(t.meta().byte_length, 4);
        // A caller's truncated flag is kept.
        r.insert(rec("s", 3, "ab").with_truncated(true))
            .expect("insert");
        assert!(r.latest("s").expect("latest").meta().truncated);
    }

    #[test]
    fn messages_are_cut_like_text_and_counted_until_evicted() {
        let mut r = registry(1, 4);
        r.add_session("s").expect("add");
        r.insert(rec("s", 1, "ab").with_message("abcdefgh"))
            .expect("insert");
        let t = r.latest("s").expect("latest");
        assert_eq!(t.message(), Some("abcd"));
        assert_eq!(t.meta().message_length, Some(4));
        assert!(t.meta().truncated, "the message was cut");
        assert_eq!(r.total_bytes(), 2 + 2 + 4);
        // Evicting it frees its message too.
        r.insert(rec("s", 2, "xyz")).expect("insert");
        assert_eq!(r.total_bytes(), 3 + 3);
        assert!(r.remove_session("s"));
        assert_eq!(r.total_bytes(), 0);
    }

    #[test]
    fn latest_and_list_errors() {
        let mut r = Registry::default();
        assert_eq!(
            r.latest("s"),
            Err(RegistryError::SessionNotFound {
                session: "s".into()
            })
        );
        assert!(matches!(
            r.list("s", None),
            Err(RegistryError::SessionNotFound { .. })
        ));
        assert!(matches!(
            r.last_seq("s"),
            Err(RegistryError::SessionNotFound { .. })
        ));
        r.add_session("s").expect("add");
        assert_eq!(
            r.latest("s"),
            Err(RegistryError::NoTurn {
                session: "s".into()
            })
        );
        assert_eq!(r.list("s", None).expect("list").len(), 0);
        assert_eq!(r.last_seq("s"), Ok(None));
        assert!(matches!(
            r.get(&id("nope", 1)),
            Err(RegistryError::TurnNotFound { .. })
        ));
        assert!(matches!(
            r.get(&id("s", 1)),
            Err(RegistryError::TurnNotFound { .. })
        ));
    }

    #[test]
    fn list_limits_newest_first() {
        let mut r = registry(8, 1024);
        r.add_session("s").expect("add");
        for seq in 1..=5 {
            r.insert(rec("s", seq, "x")).expect("insert");
        }
        let two: Vec<u64> = r
            .list("s", Some(2))
            .expect("list")
            .map(|t| t.turn_id().seq())
            .collect();
        assert_eq!(two, [5, 4]);
        assert_eq!(r.list("s", Some(0)).expect("list").count(), 0);
        assert_eq!(r.list("s", Some(99)).expect("list").len(), 5);
    }

    #[test]
    fn listing_shares_content_with_the_ring() {
        let mut r = Registry::default();
        r.add_session("s").expect("add");
        r.insert(rec("s", 1, "shared")).expect("insert");
        let listed = r
            .list("s", None)
            .expect("list")
            .next()
            .expect("one")
            .clone();
        let stored = r.get(&id("s", 1)).expect("get");
        assert!(std::sync::Arc::ptr_eq(
            listed.content_arc(),
            stored.content_arc()
        ));
    }

    #[test]
    fn sessions_are_independent_and_removal_frees_bytes() {
        let mut r = registry(2, 1024);
        r.add_session("a").expect("a");
        r.add_session("b").expect("b");
        r.insert(rec("a", 1, "aaaa")).expect("a1");
        r.insert(rec("b", 7, "bb")).expect("b7");
        assert_eq!(r.total_bytes(), 8 + 4);
        assert_eq!(seqs(&r, "a"), [1]);
        assert_eq!(seqs(&r, "b"), [7]);
        assert!(r.remove_session("a"));
        assert_eq!(r.total_bytes(), 4);
        assert!(matches!(
            r.get(&id("a", 1)),
            Err(RegistryError::TurnNotFound { .. })
        ));
        // Re-adding starts afresh (IDs are never reused in practice, but the ring is clean).
        r.add_session("a").expect("a again");
        assert_eq!(r.last_seq("a"), Ok(None));
    }

    proptest! {
        /// For any sequence of inserts (seqs may repeat or go backwards), a ring of depth `d`
        /// holds exactly the last min(n, d) of the n seqs that were new highs, newest first, and
        /// `total_bytes` is the sum over what is held.
        #[test]
        fn ring_holds_the_last_distinct_increasing_seqs(
            depth in 1usize..6,
            max_bytes in 1usize..12,
            inserts in proptest::collection::vec((1u64..40, "[a-z\u{e9}]{0,10}"), 0..60),
        ) {
            let mut r = registry(depth, max_bytes);
            r.add_session("s").expect("add");
            let mut accepted = Vec::new();
            for (seq, body) in &inserts {
                // Every other turn has a message from the agent's hooks, counted and cut too.
                let record = rec("s", *seq, body);
                let record = if seq % 2 == 0 { record.with_message(body.repeat(2)) } else { record };
                let outcome = r.insert(record).expect("insert");
                let is_new = accepted.last().is_none_or(|last| seq > last);
                prop_assert_eq!(outcome.is_stored(), is_new);
                prop_assert_eq!(outcome.turn_id(), &id("s", *seq));
                if is_new {
                    accepted.push(*seq);
                }
            }
            let keep = accepted.len().min(depth);
            let expected: Vec<u64> = accepted[accepted.len() - keep..].iter().rev().copied().collect();
            prop_assert_eq!(seqs(&r, "s"), expected.clone());
            let held: usize = r.list("s", None).expect("list").map(TurnRecord::held_bytes).sum();
            prop_assert_eq!(r.total_bytes(), held);
            for t in r.list("s", None).expect("list") {
                prop_assert!(t.content().len() <= max_bytes && t.text().len() <= max_bytes);
                prop_assert!(t.message().is_none_or(|m| m.len() <= max_bytes));
                prop_assert_eq!(t.meta().byte_length as usize, t.content().len());
                prop_assert_eq!(t.meta().message_length.map(|n| n as usize), t.message().map(str::len));
            }
            for seq in &accepted {
                prop_assert_eq!(r.get(&id("s", *seq)).is_ok(), expected.contains(seq));
            }
        }
    }
}
