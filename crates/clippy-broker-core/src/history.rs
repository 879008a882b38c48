//! The history store's side of the state machine: what to record (sessions, turns, events) and
//! the requests answered from the store (`history`, `search`, `forget_history`,
//! `history_status`, and `get_turn` / `list_events` reaching past what memory holds). The store
//! itself is the I/O layer's: it runs the [`HistoryJob`]s on a thread of its own, in order, so a
//! query sees every record asked for before it (`bins/clippy-broker/src/history.rs`).

use clippy_proto::{ErrorReason, EventRecord, Format, Message};
use clippy_registry::TurnRecord;

use super::{Action, ConnId, Outcome, Refusal, State, refuse};

/// What the history thread is asked to do, in order.
// One lives per record or request on its way to the history thread, moved, never stored in
// numbers: the size of a `Message` costs nothing worth a box (as `Delivery`).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryJob {
    /// Store this (with whatever else is queued, in one transaction).
    Record(Record),
    /// Answer request `id` of `conn` from the store.
    Query {
        /// Who asked.
        conn: ConnId,
        /// The request's id.
        id: u32,
        /// What.
        query: Query,
    },
}

/// Something to store.
#[allow(clippy::large_enum_variant)] // as `HistoryJob`
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A session registered (the first time in this broker's life; again after a restart).
    Session {
        /// Its id.
        session: String,
        /// Its name.
        name: Option<String>,
        /// Its command line.
        command: Vec<String>,
        /// Where its command started.
        cwd: Option<String>,
        /// When it registered, Unix ms.
        started_at: u64,
    },
    /// A session ended.
    SessionEnded {
        /// Its id.
        session: String,
        /// When, Unix ms.
        ended_at: u64,
        /// The code a shell shows for its command, when known.
        exit_code: Option<i32>,
        /// The signal that killed it, when one did.
        signal: Option<i32>,
    },
    /// A completed turn, and the reply that acknowledges it to its wrapper, sent once the turn
    /// is in the store (or the store failed: live operation goes on).
    Turn {
        /// The turn (its bytes shared with the ring, not copied).
        record: TurnRecord,
        /// `(wrapper connection, turn_recorded)`.
        ack: Option<(ConnId, Message)>,
    },
    /// An event of the stream, and when it happened (Unix ms).
    Event {
        /// The event, stamped.
        event: EventRecord,
        /// Its time.
        time: u64,
    },
}

/// A request answered from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// `history`.
    History {
        /// A session id, prefix or name (ended sessions' too).
        session: Option<String>,
        /// From this Unix ms.
        since: Option<u64>,
        /// Before this Unix ms.
        until: Option<u64>,
        /// At most this many.
        limit: u32,
        /// The sessions registered now (to mark their turns `live`).
        live: Vec<String>,
    },
    /// `search`.
    Search {
        /// The words.
        query: String,
        /// A session id, prefix or name.
        session: Option<String>,
        /// From this Unix ms.
        since: Option<u64>,
        /// Before this Unix ms.
        until: Option<u64>,
        /// At most this many.
        limit: u32,
        /// The sessions registered now.
        live: Vec<String>,
    },
    /// `forget_history`: one session's (id, prefix or name), or everything.
    Forget {
        /// The session; `None`: all.
        session: Option<String>,
    },
    /// `history_status`.
    Status,
    /// `get_turn` of a turn no ring holds: by id, or a session's latest.
    Turn {
        /// `<session>:<seq>`, or a session id or name.
        which: String,
        /// Which view.
        format: Format,
        /// Why memory could not answer: the answer when the store has nothing either.
        missing: (ErrorReason, String),
    },
    /// `list_events` reaching before the oldest event memory holds.
    Events {
        /// After this id.
        since: u64,
        /// Only these types or categories (all when empty).
        types: Vec<String>,
    },
}

/// `history`'s default number of turns.
const DEFAULT_HISTORY_LIMIT: u32 = 50;
/// `search`'s default number of turns.
const DEFAULT_SEARCH_LIMIT: u32 = 20;

impl State {
    /// Turns the history store on: from now on sessions, turns and events are recorded
    /// ([`Action::History`]), and event ids continue after `last_event_id` (the store's
    /// newest), so an id is never handed out twice across restarts.
    pub fn enable_history(&mut self, last_event_id: u64) {
        self.history_on = true;
        self.events.continue_after(last_event_id);
    }

    /// The configuration asks for history but the store cannot be opened (`why`): requests
    /// for it answer `history_failed` with the reason, and `history_status` shows it.
    pub fn history_unavailable(&mut self, why: String) {
        self.history_problem = Some(why);
    }

    /// Records `record` when history is on and the session it is about keeps history.
    pub(super) fn record(&mut self, record: Record, out: &mut Vec<Action>) {
        if !self.history_on {
            if let Record::Turn {
                ack: Some((conn, reply)),
                ..
            } = record
            {
                out.push(Action::Send(conn, reply));
            }
            return;
        }
        let session = match &record {
            Record::Session { session, .. } | Record::SessionEnded { session, .. } => {
                Some(session.as_str())
            }
            Record::Turn { record, .. } => Some(record.turn_id().session()),
            Record::Event { event, .. } => event.session.as_deref(),
        };
        if session.is_some_and(|s| self.unrecorded.contains(s)) {
            if let Record::Turn {
                ack: Some((conn, reply)),
                ..
            } = record
            {
                out.push(Action::Send(conn, reply));
            }
            return;
        }
        out.push(Action::History(HistoryJob::Record(record)));
    }

    /// `history`, `search`, `forget_history`, `history_status`.
    pub(super) fn history_request(
        &mut self,
        conn: ConnId,
        request: Message,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let live = || self.sessions.keys().cloned().collect::<Vec<_>>();
        let (id, query) = match request {
            Message::HistoryStatus { id } if !self.history_on => {
                return Ok(Outcome::Reply(Message::HistoryState {
                    id,
                    history: clippy_proto::HistoryInfo {
                        enabled: self.history_problem.is_some(),
                        path: None,
                        turns: 0,
                        events: 0,
                        bytes: 0,
                        problem: self.history_problem.clone(),
                    },
                }));
            }
            _ if !self.history_on => {
                return Err(match &self.history_problem {
                    Some(why) => refuse(
                        ErrorReason::HistoryFailed,
                        format!("the broker could not open its history store: {why}"),
                    ),
                    None => refuse(
                        ErrorReason::HistoryOff,
                        "the broker keeps no history ([history] enabled = false in its configuration)",
                    ),
                });
            }
            Message::History {
                id,
                session,
                since,
                until,
                limit,
            } => (
                id,
                Query::History {
                    session,
                    since,
                    until,
                    limit: limit.unwrap_or(DEFAULT_HISTORY_LIMIT).max(1),
                    live: live(),
                },
            ),
            Message::Search {
                id,
                query,
                session,
                since,
                until,
                limit,
            } => {
                if query.trim().is_empty() {
                    return Err(refuse(ErrorReason::InvalidArgument, "search: no words"));
                }
                (
                    id,
                    Query::Search {
                        query,
                        session,
                        since,
                        until,
                        limit: limit.unwrap_or(DEFAULT_SEARCH_LIMIT).max(1),
                        live: live(),
                    },
                )
            }
            Message::ForgetHistory { id, session, all } => match (session, all) {
                (Some(session), false) => (
                    id,
                    Query::Forget {
                        session: Some(session),
                    },
                ),
                (None, true) => (id, Query::Forget { session: None }),
                _ => {
                    return Err(refuse(
                        ErrorReason::InvalidArgument,
                        "forget_history: give a session or all, not both and not neither",
                    ));
                }
            },
            Message::HistoryStatus { id } => (id, Query::Status),
            other => {
                return Err(refuse(
                    ErrorReason::UnknownType,
                    format!("{} is not a history request", other.kind()),
                ));
            }
        };
        out.push(Action::History(HistoryJob::Query { conn, id, query }));
        Ok(Outcome::Parked)
    }

    /// `get_turn` of a turn no ring holds (`refusal`: why memory could not answer): asked of
    /// the store when it is on, else the refusal.
    pub(super) fn stored_turn(
        &self,
        conn: ConnId,
        id: u32,
        which: String,
        format: Format,
        refusal: Refusal,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let from_store = self.history_on
            && matches!(
                refusal.reason,
                ErrorReason::TurnNotFound | ErrorReason::SessionNotFound | ErrorReason::NoTurn
            );
        if !from_store {
            return Err(refusal);
        }
        out.push(Action::History(HistoryJob::Query {
            conn,
            id,
            query: Query::Turn {
                which,
                format,
                missing: (refusal.reason, refusal.message),
            },
        }));
        Ok(Outcome::Parked)
    }

    /// `list_events` after `since`: from the store when memory no longer holds the next one.
    pub(super) fn stored_events(
        &self,
        conn: ConnId,
        id: u32,
        since: Option<u64>,
        types: &[String],
        out: &mut Vec<Action>,
    ) -> Option<Outcome> {
        let since = since?;
        if !self.history_on || self.events.missed_after(since) == 0 {
            return None;
        }
        out.push(Action::History(HistoryJob::Query {
            conn,
            id,
            query: Query::Events {
                since,
                types: types.to_vec(),
            },
        }));
        Some(Outcome::Parked)
    }
}

#[cfg(test)]
mod tests {
    use clippy_proto::{Format, Message, Role, SessionInfo};

    use super::*;
    use crate::tests::{NOW, connect, info, refused, sent_to, state, turn_data, wrapper};

    fn jobs(actions: &[Action]) -> Vec<HistoryJob> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::History(job) => Some(job.clone()),
                _ => None,
            })
            .collect()
    }

    fn records(actions: &[Action]) -> Vec<Record> {
        jobs(actions)
            .into_iter()
            .filter_map(|job| match job {
                HistoryJob::Record(record) => Some(record),
                HistoryJob::Query { .. } => None,
            })
            .collect()
    }

    fn turn_completed(seq: u64, text: &str) -> Message {
        Message::TurnCompleted {
            id: 9,
            session: "aaa".into(),
            turn: turn_data(seq, text),
        }
    }

    #[test]
    fn with_history_off_nothing_is_recorded_and_turns_are_acknowledged_at_once() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", Some("rev"));
        let actions = st.handle(w, turn_completed(1, "hello"), NOW);
        assert!(jobs(&actions).is_empty(), "{actions:?}");
        assert!(matches!(
            sent_to(&actions, w).as_slice(),
            [Message::TurnRecorded { id: 9, .. }]
        ));
        let c = connect(&mut st, 2, Role::Client);
        let (reason, _) = refused(
            &mut st,
            c,
            Message::Search {
                id: 3,
                query: "hello".into(),
                session: None,
                since: None,
                until: None,
                limit: None,
            },
        );
        assert_eq!(reason, ErrorReason::HistoryOff);
    }

    #[test]
    fn a_turn_is_acknowledged_by_the_store_after_its_session_and_before_its_event() {
        let mut st = state();
        st.enable_history(0);
        let w = connect(&mut st, 1, Role::Wrapper);
        let mut session = info("aaa", Some("rev"), false);
        session.cwd = Some("/src/app".into());
        let actions = st.handle(
            w,
            Message::Register {
                id: 2,
                session,
                progress: None,
            },
            NOW,
        );
        let recorded = records(&actions);
        assert!(
            matches!(&recorded[0], Record::Session { session, name, cwd, .. }
                if session == "aaa" && name.as_deref() == Some("rev") && cwd.as_deref() == Some("/src/app")),
            "{recorded:?}"
        );
        assert!(
            matches!(&recorded[1], Record::Event { event: e, .. } if e.kind == "session.registered"),
            "{recorded:?}"
        );

        let actions = st.handle(w, turn_completed(1, "hello"), NOW);
        // No reply yet: it comes with the store's commit.
        assert!(sent_to(&actions, w).is_empty(), "{actions:?}");
        let recorded = records(&actions);
        match &recorded[0] {
            Record::Turn {
                record,
                ack: Some((conn, Message::TurnRecorded { id: 9, turn_id })),
            } => {
                assert_eq!(*conn, w);
                assert_eq!(turn_id, "aaa:1");
                assert_eq!(record.content(), b"hello");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&recorded[1], Record::Event { event: e, .. } if e.kind == "turn.completed" && e.id > 0),
            "{recorded:?}"
        );

        // A re-send stores nothing and is acknowledged at once.
        let actions = st.handle(w, turn_completed(1, "hello"), NOW);
        assert!(jobs(&actions).is_empty());
        assert_eq!(sent_to(&actions, w).len(), 1);

        let actions = st.handle(
            w,
            Message::Deregister {
                id: 4,
                session: "aaa".into(),
                exit_code: Some(3),
                signal: None,
            },
            NOW,
        );
        assert!(
            records(&actions).iter().any(|r| matches!(r,
                Record::SessionEnded { session, exit_code: Some(3), .. } if session == "aaa")),
            "{actions:?}"
        );
    }

    #[test]
    fn a_no_history_session_leaves_nothing_to_record() {
        let mut st = state();
        st.enable_history(0);
        let w = connect(&mut st, 1, Role::Wrapper);
        let session = SessionInfo {
            no_history: true,
            ..info("sec", Some("secret"), false)
        };
        let actions = st.handle(
            w,
            Message::Register {
                id: 2,
                session,
                progress: None,
            },
            NOW,
        );
        assert!(jobs(&actions).is_empty(), "{actions:?}");
        let actions = st.handle(
            w,
            Message::TurnCompleted {
                id: 9,
                session: "sec".into(),
                turn: turn_data(1, "password"),
            },
            NOW,
        );
        assert!(jobs(&actions).is_empty(), "{actions:?}");
        assert_eq!(sent_to(&actions, w).len(), 1, "acknowledged at once");
    }

    #[test]
    fn event_ids_continue_after_the_stored_ones() {
        let mut st = state();
        st.enable_history(41);
        let w = connect(&mut st, 1, Role::Wrapper);
        let actions = st.handle(
            w,
            Message::Register {
                id: 2,
                session: info("aaa", None, false),
                progress: None,
            },
            NOW,
        );
        assert!(
            records(&actions)
                .iter()
                .any(|r| matches!(r, Record::Event { event: e, .. } if e.id == 42)),
            "{actions:?}"
        );
    }

    #[test]
    fn a_name_is_its_live_session_in_the_store_too_never_an_ended_namesake() {
        let mut st = state();
        st.enable_history(100);
        let c = connect(&mut st, 1, Role::Client);
        // `sh` had a turn and ended; a new `sh` registered and has none yet.
        let old = wrapper(&mut st, 2, "old1", Some("sh"));
        st.handle(
            old,
            Message::TurnCompleted {
                id: 3,
                session: "old1".into(),
                turn: turn_data(1, "before the restart"),
            },
            NOW,
        );
        st.connection_closed(old);
        wrapper(&mut st, 3, "new1", Some("sh"));
        let asked = |st: &mut State, turn_id: &str| -> Query {
            let actions = st.handle(
                c,
                Message::GetTurn {
                    id: 5,
                    turn_id: turn_id.into(),
                    format: Format::Raw,
                },
                NOW,
            );
            match jobs(&actions).as_slice() {
                [HistoryJob::Query { query, .. }] => query.clone(),
                other => panic!("{other:?}"),
            }
        };
        // The store is asked for the live session's latest (after a broker restart it may
        // hold some), by its id: never by the name, which would find the ended one's.
        match asked(&mut st, "sh") {
            Query::Turn { which, missing, .. } => {
                assert_eq!(which, "new1");
                assert_eq!(missing.0, ErrorReason::NoTurn);
            }
            other => panic!("{other:?}"),
        }
        match asked(&mut st, "sh:1") {
            Query::Turn { which, missing, .. } => {
                assert_eq!(which, "new1:1");
                assert_eq!(missing.0, ErrorReason::TurnNotFound);
            }
            other => panic!("{other:?}"),
        }
        // Named by nothing live, the name still reaches the store (an ended session's turns).
        st.connection_closed(ConnId(3));
        match asked(&mut st, "sh") {
            Query::Turn { which, .. } => assert_eq!(which, "sh"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_memory_does_not_hold_is_asked_of_the_store() {
        let mut st = state();
        st.enable_history(100);
        let c = connect(&mut st, 1, Role::Client);
        let asked = |st: &mut State, msg: Message| -> Query {
            let actions = st.handle(c, msg, NOW);
            assert!(sent_to(&actions, c).is_empty(), "{actions:?}");
            match jobs(&actions).as_slice() {
                [HistoryJob::Query { conn, id: 5, query }] if *conn == c => query.clone(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            asked(
                &mut st,
                Message::GetTurn {
                    id: 5,
                    turn_id: "gone:3".into(),
                    format: Format::Text,
                }
            ),
            Query::Turn {
                which: "gone:3".into(),
                format: Format::Text,
                missing: (
                    ErrorReason::TurnNotFound,
                    "turn gone:3 is not held: no session has the id, name or id prefix \"gone\""
                        .into()
                ),
            }
        );
        assert_eq!(
            asked(
                &mut st,
                Message::GetTurn {
                    id: 5,
                    turn_id: "reviewer".into(),
                    format: Format::Raw,
                }
            ),
            Query::Turn {
                which: "reviewer".into(),
                format: Format::Raw,
                missing: (
                    ErrorReason::SessionNotFound,
                    "no session has the id, name or id prefix \"reviewer\"".into()
                ),
            }
        );
        assert_eq!(
            asked(
                &mut st,
                Message::ListEvents {
                    id: 5,
                    since: Some(7),
                    types: vec!["turn".into()],
                }
            ),
            Query::Events {
                since: 7,
                types: vec!["turn".into()]
            }
        );
        assert!(matches!(
            asked(
                &mut st,
                Message::History {
                    id: 5,
                    session: Some("rev".into()),
                    since: None,
                    until: None,
                    limit: None,
                }
            ),
            Query::History { limit: 50, .. }
        ));
        assert_eq!(
            asked(
                &mut st,
                Message::ForgetHistory {
                    id: 5,
                    session: None,
                    all: true,
                }
            ),
            Query::Forget { session: None }
        );
        // Events memory still holds are answered from memory.
        let actions = st.handle(
            c,
            Message::ListEvents {
                id: 6,
                since: Some(100),
                types: vec![],
            },
            NOW,
        );
        assert!(matches!(
            sent_to(&actions, c).as_slice(),
            [Message::Events { id: 6, .. }]
        ));
        // Both or neither of session and all.
        let (reason, _) = refused(
            &mut st,
            c,
            Message::ForgetHistory {
                id: 7,
                session: Some("x".into()),
                all: true,
            },
        );
        assert_eq!(reason, ErrorReason::InvalidArgument);
    }
}
