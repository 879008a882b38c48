//! The event stream (CONTRACTS/ROUTING.md): every state change the broker makes is an
//! [`EventRecord`] with an id and a timestamp, kept in a bounded history and published to the
//! subscribers whose type filter it passes.
//!
//! Publishing is an [`Action::Publish`]: the I/O layer queues the event unless the subscriber
//! is too far behind, in which case it calls [`State::subscriber_lagged`] and the subscriber is
//! dropped with a final `subscriber.lagged` event — a subscriber that does not read never slows
//! anyone else.

use std::collections::{BTreeMap, VecDeque};

use clippy_proto::{EventRecord, Message, iso8601_utc};

use super::{Action, ConnId, State};

/// The history and the subscribers.
#[derive(Debug)]
pub(super) struct EventLog {
    last_id: u64,
    history: VecDeque<EventRecord>,
    capacity: usize,
    /// Each subscriber's type filter (empty: everything).
    subscribers: BTreeMap<ConnId, Vec<String>>,
}

/// Whether an event of type `kind` passes `filter`: empty passes all; an entry is a type
/// (`route.handoff`) or a category (`route`, every `route.*`).
fn passes(filter: &[String], kind: &str) -> bool {
    filter.is_empty()
        || filter.iter().any(|f| {
            kind == f
                || kind
                    .strip_prefix(f.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        })
}

impl EventLog {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            last_id: 0,
            history: VecDeque::new(),
            capacity: capacity.max(1),
            subscribers: BTreeMap::new(),
        }
    }

    pub(super) fn is_subscribed(&self, conn: ConnId) -> bool {
        self.subscribers.contains_key(&conn)
    }

    pub(super) fn unsubscribe(&mut self, conn: ConnId) {
        self.subscribers.remove(&conn);
    }

    /// Stamps `record` with the next id and `now_ms`, keeps it, and publishes it.
    pub(super) fn emit(&mut self, now_ms: u64, mut record: EventRecord, out: &mut Vec<Action>) {
        self.last_id += 1;
        record.id = self.last_id;
        record.ts = iso8601_utc(now_ms);
        for (conn, filter) in &self.subscribers {
            if passes(filter, &record.kind) {
                out.push(Action::Publish(
                    *conn,
                    Message::Event {
                        id: 0,
                        event: record.clone(),
                    },
                ));
            }
        }
        if self.history.len() == self.capacity {
            self.history.pop_front();
        }
        self.history.push_back(record);
    }

    /// The events after `since` that pass `filter`, oldest first.
    pub(super) fn since<'a>(
        &'a self,
        since: Option<u64>,
        filter: &'a [String],
    ) -> impl Iterator<Item = &'a EventRecord> + 'a {
        let since = since.unwrap_or(0);
        self.history
            .iter()
            .filter(move |e| e.id > since && passes(filter, &e.kind))
    }

    /// Subscribes `conn`: the reply, then the history after `since`, then everything new.
    pub(super) fn subscribe(
        &mut self,
        conn: ConnId,
        id: u32,
        since: Option<u64>,
        filter: Vec<String>,
        out: &mut Vec<Action>,
    ) {
        out.push(Action::Send(
            conn,
            Message::Subscribed {
                id,
                last_event_id: self.last_id,
            },
        ));
        if since.is_some() {
            for event in self.since(since, &filter) {
                out.push(Action::Publish(
                    conn,
                    Message::Event {
                        id: 0,
                        event: event.clone(),
                    },
                ));
            }
        }
        self.subscribers.insert(conn, filter);
    }
}

impl State {
    /// Records an event (see [`EventLog::emit`]).
    pub(super) fn emit(&mut self, record: EventRecord, out: &mut Vec<Action>) {
        self.events.emit(self.clock, record, out);
    }

    /// The subscriber `conn` fell too far behind: it is unsubscribed, told so with a final
    /// `subscriber.lagged` event (also recorded for everyone else), and closed.
    pub fn subscriber_lagged(&mut self, conn: ConnId) -> Vec<Action> {
        if !self.events.is_subscribed(conn) {
            return Vec::new();
        }
        self.events.unsubscribe(conn);
        let mut out = Vec::new();
        self.emit(
            EventRecord {
                kind: "subscriber.lagged".into(),
                message: Some(format!(
                    "connection {conn} did not read its events fast enough and was dropped"
                )),
                ..EventRecord::default()
            },
            &mut out,
        );
        if let Some(event) = self.events.history.back().cloned() {
            out.push(Action::Send(conn, Message::Event { id: 0, event }));
        }
        out.push(Action::Close(conn));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_take_types_and_categories() {
        let f = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(passes(&[], "route.handoff"));
        assert!(passes(&f(&["route"]), "route.handoff"));
        assert!(passes(&f(&["route.handoff"]), "route.handoff"));
        assert!(!passes(&f(&["route.handoff"]), "route.stalled"));
        assert!(!passes(&f(&["rout"]), "route.handoff"));
        assert!(!passes(&f(&["turn"]), "route.handoff"));
    }

    #[test]
    fn history_is_bounded_and_ids_keep_counting() {
        let mut log = EventLog::new(3);
        let mut out = Vec::new();
        for _ in 0..5 {
            log.emit(
                0,
                EventRecord {
                    kind: "turn.completed".into(),
                    ..EventRecord::default()
                },
                &mut out,
            );
        }
        let ids: Vec<u64> = log.since(None, &[]).map(|e| e.id).collect();
        assert_eq!(ids, [3, 4, 5]);
        let ids: Vec<u64> = log.since(Some(4), &[]).map(|e| e.id).collect();
        assert_eq!(ids, [5]);
        assert!(out.is_empty(), "nobody subscribed");
    }
}
