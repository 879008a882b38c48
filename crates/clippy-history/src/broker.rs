//! The broker's side of the store, with no thread and no channel: its records as the store's
//! rows ([`texts_of`], [`rows_of`]), and its history requests answered from the store as the
//! replies it sends ([`answer`]). The broker's history thread (`bins/clippy-broker`) keeps the
//! threads, the channels and the journal's lock; what a request is answered with is decided
//! here, where it is tested without a broker.

use std::sync::{Mutex, MutexGuard, PoisonError};

use clippy_broker_core::{HistoryQuery as Query, HistoryRecord};
use clippy_proto::{
    ErrorReason, EventRecord as WireEvent, Format, HistoryEntry, HistoryInfo, Message, SearchHit,
    TurnMeta,
};

use crate::error::HistoryError;
use crate::journal::Journal;
use crate::query::{HistoryQuery, SearchQuery, StoredTurn, TurnSummary};
use crate::record::{EventRecord, Record, SessionEnd, SessionRecord, TurnRecord};
use crate::store::Store;

/// Events a `list_events` answered from the store returns at most.
pub const MAX_EVENTS: u32 = 100_000;

/// What the rows of `records` borrow that the records do not hold as text: an event's JSON (as
/// it is sent), a turn's id; empty for the rest. [`rows_of`] takes it beside the records.
#[must_use]
pub fn texts_of(records: &[HistoryRecord]) -> Vec<String> {
    records
        .iter()
        .map(|record| match record {
            HistoryRecord::Event { event, .. } => serde_json::to_string(event).unwrap_or_default(),
            HistoryRecord::Turn { record, .. } => record.turn_id().to_string(),
            _ => String::new(),
        })
        .collect()
}

/// The store's rows for the broker's `records` (`texts`: [`texts_of`] them), in order, borrowing
/// the records' bytes (a turn's content is not copied).
#[must_use]
pub fn rows_of<'a>(records: &'a [HistoryRecord], texts: &'a [String]) -> Vec<Record<'a>> {
    records
        .iter()
        .zip(texts)
        .map(|(record, text)| row_of(record, text))
        .collect()
}

/// The store's row for a record (`text`: an event's JSON, a turn's id).
fn row_of<'a>(record: &'a HistoryRecord, text: &'a str) -> Record<'a> {
    match record {
        HistoryRecord::Session {
            session,
            name,
            command,
            cwd,
            started_at,
        } => Record::Session(SessionRecord {
            key: session,
            name: name.as_deref(),
            command,
            cwd: cwd.as_deref(),
            started_at: *started_at,
        }),
        HistoryRecord::SessionEnded {
            session,
            ended_at,
            exit_code,
            signal,
        } => Record::SessionEnd(SessionEnd {
            key: session,
            ended_at: *ended_at,
            exit_code: *exit_code,
            signal: *signal,
        }),
        HistoryRecord::Turn { record, .. } => {
            let meta = record.meta();
            Record::Turn(TurnRecord {
                turn_id: text,
                session: record.turn_id().session(),
                seq: record.turn_id().seq(),
                started_at: None,
                ended_at: meta.timestamp_ms,
                input: meta.input.as_deref(),
                content: record.content(),
                text: record.text(),
                message: record.message(),
                interrupted: meta.interrupted,
                truncated: meta.truncated,
                exit_code: meta.exit_code,
                cwd: meta.cwd.as_deref(),
                spool_span: meta.spool_span,
            })
        }
        HistoryRecord::Event { event, time } => Record::Event(EventRecord {
            seq: event.id,
            time: *time,
            kind: &event.kind,
            session: event.session.as_deref(),
            payload: text,
        }),
    }
}

/// Whether `query` must wait until every journaled record is in the store: a query sees every
/// record asked for before it. A turn (read from the journal when it has it) and the status
/// (which counts what the journal holds) need not.
#[must_use]
pub fn waits_for_journal(query: &Query) -> bool {
    !matches!(query, Query::Turn { .. } | Query::Status { .. })
}

/// A request answered: the reply, and a line for the broker's log (at info level) when the
/// request changed the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The reply to the request.
    pub reply: Message,
    /// What to log.
    pub log: Option<String>,
}

impl From<Message> for Answer {
    fn from(reply: Message) -> Self {
        Answer { reply, log: None }
    }
}

/// Answers request `id` from `store` and `journal` (what is journaled and not written into the
/// store yet: `get_turn` reads a turn there first, `history_status` counts it). `problem` is
/// why the store or the journal cannot be written now, if either cannot: `history_status`
/// shows it before what the backlog says.
///
/// A failure of the store is the reply `history_failed`, never a panic; a session argument
/// that names no stored session is `session_not_found` (a typo more often than an empty past).
pub fn answer(
    store: &mut Store,
    journal: Option<&Mutex<Journal>>,
    problem: Option<String>,
    id: u32,
    query: Query,
) -> Answer {
    let failed = |e: HistoryError| -> Answer {
        Message::error(
            id,
            ErrorReason::HistoryFailed,
            format!("the history store could not answer: {e}"),
        )
        .into()
    };
    let session = match &query {
        Query::History { session, .. }
        | Query::Search { session, .. }
        | Query::Forget { session } => session.as_deref(),
        _ => None,
    };
    if let Some(session) = session {
        match store.sessions(session) {
            Ok(found) if found.is_empty() => {
                return Message::error(
                    id,
                    ErrorReason::SessionNotFound,
                    format!(
                        "no stored session has the id, name or id prefix {session:?} (a session run with --no-history is never stored)"
                    ),
                )
                .into();
            }
            Ok(_) => {}
            Err(e) => return failed(e),
        }
    }
    match query {
        Query::History {
            session,
            since,
            until,
            limit,
            live,
        } => {
            let query = HistoryQuery {
                session,
                since,
                until,
                limit,
            };
            match store.history(&query) {
                Ok(turns) => Message::HistoryTurns {
                    id,
                    turns: turns.iter().map(|t| entry_of(t, &live)).collect(),
                }
                .into(),
                Err(e) => failed(e),
            }
        }
        Query::Search {
            query,
            session,
            since,
            until,
            limit,
            live,
        } => {
            let query = SearchQuery {
                session,
                since,
                until,
                limit,
                ..SearchQuery::new(query)
            };
            match store.search(&query) {
                Ok(hits) => Message::SearchHits {
                    id,
                    hits: hits
                        .iter()
                        .map(|hit| SearchHit {
                            entry: entry_of(&hit.turn, &live),
                            snippet: hit.snippet.clone(),
                        })
                        .collect(),
                }
                .into(),
                Err(e) => failed(e),
            }
        }
        Query::Forget { session } => {
            let forgotten = match &session {
                Some(session) => store.forget_session(session),
                None => store.forget_all(),
            };
            match forgotten {
                Ok(deleted) => Answer {
                    reply: Message::Forgotten {
                        id,
                        turns: deleted.turns,
                    },
                    log: Some(format!(
                        "history: forgot {} turns and {} events of {}",
                        deleted.turns,
                        deleted.events,
                        session.as_deref().unwrap_or("every session")
                    )),
                },
                Err(e) => failed(e),
            }
        }
        Query::Status { skipped, holding } => match store.stats() {
            Ok(stats) => {
                let journaled = |count: fn(&Journal) -> u64| journal.map_or(0, |j| count(&lock(j)));
                Message::HistoryState {
                    id,
                    history: HistoryInfo {
                        enabled: true,
                        path: Some(store.dir().display().to_string()),
                        // What the history holds: the database, and what is acknowledged into
                        // the journal but not written in yet (the status does not wait for it).
                        turns: stats.turns + journaled(Journal::unread_turns),
                        events: stats.events + journaled(Journal::unread_events),
                        bytes: stats.bytes,
                        problem: problem.or_else(|| {
                            clippy_broker_core::history_backlog_problem(skipped, holding)
                        }),
                    },
                }
                .into()
            }
            Err(e) => failed(e),
        },
        Query::Turn {
            which,
            format,
            missing,
        } => match stored_turn(store, journal, &which) {
            Ok(Some(turn)) => {
                let content = match format {
                    Format::Raw => Some(turn.content.clone()),
                    Format::Text => Some(turn.text.clone().into_bytes()),
                    Format::Message => turn.message.clone().map(String::into_bytes),
                };
                match content {
                    Some(content) => Message::Turn {
                        id,
                        turn: meta_of(&turn),
                        content: content.into(),
                    }
                    .into(),
                    None => Message::error(
                        id,
                        ErrorReason::NoMessage,
                        format!(
                            "turn {} has no final message from the agent's hooks: ask for text or raw",
                            turn.summary.turn_id
                        ),
                    )
                    .into(),
                }
            }
            // Not stored either: memory's answer stands.
            Ok(None) => Message::error(id, missing.0, missing.1).into(),
            Err(e) => failed(e),
        },
        Query::Events { since, types } => match store.events_since(since, MAX_EVENTS) {
            Ok(events) => Message::Events {
                id,
                events: events
                    .into_iter()
                    .filter_map(|stored| serde_json::from_str::<WireEvent>(&stored.payload).ok())
                    .filter(|event| clippy_broker_core::event_passes(&types, &event.kind))
                    .collect(),
            }
            .into(),
            Err(e) => failed(e),
        },
    }
}

/// Takes the lock, whatever a panicking holder left.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A turn by id, or the latest of the sessions a session argument names: from the journal
/// when it has it, else from the store.
fn stored_turn(
    store: &Store,
    journal: Option<&Mutex<Journal>>,
    which: &str,
) -> Result<Option<StoredTurn>, HistoryError> {
    if let Some(Ok(Some(turn))) = journal.map(|j| lock(j).stored_turn(which)) {
        return Ok(Some(turn));
    }
    if which.contains(':') {
        store.get_turn(which)
    } else {
        store.latest_turn(which)
    }
}

/// A stored turn as a history entry (`live`: the sessions registered now).
fn entry_of(turn: &TurnSummary, live: &[String]) -> HistoryEntry {
    HistoryEntry {
        turn_id: turn.turn_id.clone(),
        session: turn.session.clone(),
        name: turn.session_name.clone(),
        command: turn.command.clone(),
        cwd: turn.cwd.clone(),
        timestamp: turn.ended_at,
        byte_length: u32::try_from(turn.content_bytes).unwrap_or(u32::MAX),
        input: turn.input.clone(),
        exit_code: turn.exit_code,
        live: live.contains(&turn.session),
    }
}

/// A stored turn's metadata, as `get_turn` gives it.
fn meta_of(turn: &StoredTurn) -> TurnMeta {
    let summary = &turn.summary;
    TurnMeta {
        turn_id: summary.turn_id.clone(),
        timestamp: summary.ended_at,
        byte_length: u32::try_from(summary.content_bytes).unwrap_or(u32::MAX),
        interrupted: summary.interrupted,
        truncated: summary.truncated,
        exit_code: summary.exit_code,
        cwd: summary.cwd.clone(),
        input: summary.input.clone(),
        spool_span: summary.spool_span,
        message_length: summary
            .message_bytes
            .map(|bytes| u32::try_from(bytes).unwrap_or(u32::MAX)),
    }
}
