//! The event stream (CONTRACTS/ROUTING.md): every state change the broker makes is an
//! [`EventRecord`] with an id and a timestamp, kept in a bounded history and published to the
//! subscribers whose type filter it passes.
//!
//! Publishing a new event is an [`Action::Publish`]: the I/O layer queues the event unless the
//! subscriber is too far behind, in which case it calls [`State::subscriber_lagged`] and the
//! subscriber is dropped with a final `subscriber.lagged` event — a subscriber that does not
//! read never slows anyone else.
//!
//! Catching up on the history (`subscribe` with `since`) is not publishing: a backlog of
//! thousands of events would overrun the lag bound at once and drop a subscriber that reads
//! perfectly well. Instead the subscriber keeps a cursor into the history, the I/O layer is
//! told with [`Action::Replay`], and it pulls the history with [`State::replay`] as the
//! subscriber's socket drains. New events are not published to it meanwhile — they are in the
//! history, where the cursor will reach them in order — and once the cursor reaches the newest
//! event the subscriber is live. A subscriber whose cursor the history overtakes (it stopped
//! reading while catching up) has lost events, and is dropped as lagging.

use std::collections::{BTreeMap, VecDeque};

use clippy_proto::{EventRecord, Message, iso8601_utc};

use super::{Action, ConnId, State};

/// The type of the notice that stands first in a replay (or a `list_events` answer) whose
/// `since` is older than the oldest event kept.
const EVENTS_MISSED: &str = "events.missed";

/// One subscriber.
#[derive(Debug)]
struct Subscriber {
    /// Its type filter (empty: everything).
    filter: Vec<String>,
    /// While it catches up on the history: the id of the last event it was handed (or that its
    /// filter passed over). `None` once it is live.
    cursor: Option<u64>,
}

/// The history and the subscribers.
#[derive(Debug)]
pub(super) struct EventLog {
    last_id: u64,
    history: VecDeque<EventRecord>,
    capacity: usize,
    subscribers: BTreeMap<ConnId, Subscriber>,
}

/// Whether an event of type `kind` passes `filter`: empty passes all; an entry is a type
/// (`route.handoff`) or a category (`route`, every `route.*`). The live stream and the
/// history's events (`events --since` past the ring) filter alike.
///
/// ```
/// let route = ["route".to_owned()];
/// assert!(clippy_broker_core::event_passes(&route, "route.handoff"));
/// assert!(!clippy_broker_core::event_passes(&route, "turn.completed"));
/// ```
#[must_use]
pub fn event_passes(filter: &[String], kind: &str) -> bool {
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

    /// The id of the oldest event kept (the next one's when none is).
    fn oldest_id(&self) -> u64 {
        self.history.front().map_or(self.last_id + 1, |e| e.id)
    }

    /// Stamps `record` with the next id and `now_ms`, keeps it, and publishes it to the live
    /// subscribers. Returns the subscribers still catching up whose next event it pushed out of
    /// the history: they cannot get it any more.
    pub(super) fn emit(
        &mut self,
        now_ms: u64,
        mut record: EventRecord,
        out: &mut Vec<Action>,
    ) -> Vec<ConnId> {
        self.last_id += 1;
        record.id = self.last_id;
        record.ts = iso8601_utc(now_ms);
        for (conn, sub) in &self.subscribers {
            if sub.cursor.is_none() && event_passes(&sub.filter, &record.kind) {
                out.push(Action::Publish(
                    *conn,
                    Message::Event {
                        id: 0,
                        event: record.clone(),
                    },
                ));
            }
        }
        let mut overtaken = Vec::new();
        if self.history.len() == self.capacity
            && let Some(gone) = self.history.pop_front()
        {
            overtaken.extend(
                self.subscribers
                    .iter()
                    .filter(|(_, sub)| sub.cursor.is_some_and(|c| c < gone.id))
                    .map(|(conn, _)| *conn),
            );
        }
        self.history.push_back(record);
        overtaken
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
            .filter(move |e| e.id > since && event_passes(filter, &e.kind))
    }

    /// Makes the next event's id `last_id + 1` (ids continue where a stored history ended).
    pub(super) fn continue_after(&mut self, last_id: u64) {
        self.last_id = self.last_id.max(last_id);
    }

    /// How many events after `since` are no longer kept (0 when the history reaches back to
    /// it).
    pub(super) fn missed_after(&self, since: u64) -> u64 {
        self.oldest_id().saturating_sub(since.saturating_add(1))
    }
}

impl State {
    /// Records an event (see [`EventLog::emit`]); drops the subscribers it leaves behind.
    pub(super) fn emit(&mut self, record: EventRecord, out: &mut Vec<Action>) {
        let overtaken = self.events.emit(self.clock, record, out);
        for conn in overtaken {
            out.extend(self.drop_lagging(conn));
        }
        if let Some(stamped) = self.events.history.back().cloned() {
            let time = self.clock;
            self.record(
                super::history::Record::Event {
                    event: stamped,
                    time,
                },
                out,
            );
        }
    }

    /// The `events.missed` notice for a `since` older than the history, if it is.
    fn missed_notice(&self, since: u64) -> Option<EventRecord> {
        let missed = self.events.missed_after(since);
        (missed > 0).then(|| {
            let (first, last) = (since + 1, since + missed);
            EventRecord {
                id: 0,
                ts: iso8601_utc(self.clock),
                kind: EVENTS_MISSED.into(),
                missed: Some(missed),
                message: Some(format!(
                    "events {first} to {last} are no longer kept (the broker keeps the last {}); \
                     what follows starts at event {}",
                    self.events.capacity,
                    last + 1
                )),
                ..EventRecord::default()
            }
        })
    }

    /// `list_events`: the events after `since` that pass `filter`, preceded by an
    /// `events.missed` notice when some after `since` are no longer kept.
    pub(super) fn list_events(&self, since: Option<u64>, filter: &[String]) -> Vec<EventRecord> {
        since
            .and_then(|since| self.missed_notice(since))
            .into_iter()
            .chain(self.events.since(since, filter).cloned())
            .collect()
    }

    /// Subscribes `conn`: the reply, then — with `since` — an `events.missed` notice if the
    /// history does not reach back that far, and the history after `since` (pulled by the I/O
    /// layer with [`State::replay`]); then every new event.
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
                last_event_id: self.events.last_id,
            },
        ));
        let mut cursor = None;
        if let Some(since) = since {
            if let Some(notice) = self.missed_notice(since) {
                out.push(Action::Send(
                    conn,
                    Message::Event {
                        id: 0,
                        event: notice,
                    },
                ));
            }
            let from = since.max(self.events.oldest_id() - 1);
            if from < self.events.last_id {
                cursor = Some(from);
                out.push(Action::Replay(conn));
            }
        }
        self.events
            .subscribers
            .insert(conn, Subscriber { filter, cursor });
    }

    /// Whether `conn` is a subscriber still catching up on the history.
    #[must_use]
    pub fn is_replaying(&self, conn: ConnId) -> bool {
        self.events
            .subscribers
            .get(&conn)
            .is_some_and(|sub| sub.cursor.is_some())
    }

    /// The next at most `max` events of the history for the subscriber `conn` that is catching
    /// up (see [`Action::Replay`]), as [`Action::Send`]s: not counted against the lag bound,
    /// since the I/O layer asks only for as many as its queue has room for. `now_ms` (Unix
    /// milliseconds) stamps an event this causes. Once the history is exhausted the subscriber
    /// is live and [`State::is_replaying`] is false; a subscriber the history overtook is
    /// dropped as lagging.
    pub fn replay(&mut self, conn: ConnId, max: usize, now_ms: u64) -> Vec<Action> {
        self.clock = self.clock.max(now_ms);
        let oldest = self.events.oldest_id();
        let last_id = self.events.last_id;
        let Some(sub) = self.events.subscribers.get_mut(&conn) else {
            return Vec::new();
        };
        let Some(cursor) = sub.cursor else {
            return Vec::new();
        };
        if cursor + 1 < oldest {
            return self.drop_lagging(conn);
        }
        let mut out = Vec::new();
        let mut at = cursor;
        // Ids in the history are consecutive, so the cursor's place is a subtraction.
        let start = usize::try_from(cursor + 1 - oldest).unwrap_or(usize::MAX);
        for event in self.events.history.iter().skip(start) {
            if out.len() >= max {
                break;
            }
            at = event.id;
            if event_passes(&sub.filter, &event.kind) {
                out.push(Action::Send(
                    conn,
                    Message::Event {
                        id: 0,
                        event: event.clone(),
                    },
                ));
            }
        }
        sub.cursor = (at < last_id).then_some(at);
        out
    }

    /// The subscriber `conn` fell too far behind at `now_ms` (Unix milliseconds): it is
    /// unsubscribed, told so with a final `subscriber.lagged` event (also recorded for everyone
    /// else), and closed.
    pub fn subscriber_lagged(&mut self, conn: ConnId, now_ms: u64) -> Vec<Action> {
        self.clock = self.clock.max(now_ms);
        self.drop_lagging(conn)
    }

    fn drop_lagging(&mut self, conn: ConnId) -> Vec<Action> {
        if !self.events.is_subscribed(conn) {
            return Vec::new();
        }
        self.events.unsubscribe(conn);
        let mut out = Vec::new();
        let record = EventRecord {
            kind: "subscriber.lagged".into(),
            message: Some(format!(
                "connection {conn} did not read its events fast enough and was dropped"
            )),
            ..EventRecord::default()
        };
        let overtaken = self.events.emit(self.clock, record, &mut out);
        if let Some(event) = self.events.history.back().cloned() {
            out.push(Action::Send(conn, Message::Event { id: 0, event }));
        }
        out.push(Action::Close(conn));
        // Its own `subscriber.lagged` may have overtaken another one still catching up.
        for other in overtaken {
            out.extend(self.drop_lagging(other));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use clippy_proto::Role;

    use crate::tests::{NOW, connect, report, req, sent_to, state, wrapper};

    /// A state whose history holds `count` events (a registration, a turn, captures) and
    /// keeps at most `capacity`; the wrapper and a client.
    fn with_history(capacity: usize, count: u64) -> (State, ConnId) {
        let mut st = state();
        st.set_routing_options(150, capacity);
        let w = wrapper(&mut st, 1, "a", None);
        report(&mut st, w, "a", 1, "x");
        let client = connect(&mut st, 2, Role::Client);
        while st.events.last_id < count {
            capture(&mut st, client);
        }
        (st, client)
    }

    fn capture(st: &mut State, client: ConnId) -> Vec<Action> {
        st.handle(
            client,
            Message::Capture {
                id: 4,
                session: "a".into(),
            },
            NOW,
        )
    }

    fn subscribe(st: &mut State, n: u64, since: Option<u64>) -> (ConnId, Vec<Action>) {
        let conn = connect(st, n, Role::Client);
        let actions = st.handle(
            conn,
            Message::Subscribe {
                id: 8,
                since,
                types: Vec::new(),
            },
            NOW,
        );
        (conn, actions)
    }

    fn events_sent(actions: &[Action], conn: ConnId) -> Vec<EventRecord> {
        sent_to(actions, conn)
            .into_iter()
            .filter_map(|m| match m {
                Message::Event { event, .. } => Some(event),
                _ => None,
            })
            .collect()
    }

    fn published_to(actions: &[Action], conn: ConnId) -> usize {
        actions
            .iter()
            .filter(|a| matches!(a, Action::Publish(c, _) if *c == conn))
            .count()
    }

    #[test]
    fn filters_take_types_and_categories() {
        let f = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(event_passes(&[], "route.handoff"));
        assert!(event_passes(&f(&["route"]), "route.handoff"));
        assert!(event_passes(&f(&["route.handoff"]), "route.handoff"));
        assert!(!event_passes(&f(&["route.handoff"]), "route.stalled"));
        assert!(!event_passes(&f(&["rout"]), "route.handoff"));
        assert!(!event_passes(&f(&["turn"]), "route.handoff"));
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
        assert_eq!(log.missed_after(0), 2);
        assert_eq!(log.missed_after(1), 1);
        assert_eq!(log.missed_after(2), 0);
        assert_eq!(log.missed_after(9), 0);
    }

    #[test]
    fn a_late_subscriber_catches_up_on_a_long_history_at_its_own_pace_then_goes_live() {
        let (mut st, client) = with_history(4096, 3000);
        let (late, actions) = subscribe(&mut st, 3, Some(0));
        assert!(matches!(
            sent_to(&actions, late).as_slice(),
            [Message::Subscribed {
                last_event_id: 3000,
                ..
            }]
        ));
        assert!(actions.contains(&Action::Replay(late)));
        assert_eq!(published_to(&actions, late), 0, "nothing counts as lag");
        let mut seen = Vec::new();
        let mut rounds = 0;
        while st.is_replaying(late) {
            rounds += 1;
            let batch = st.replay(late, 128, NOW);
            let got = events_sent(&batch, late);
            assert!(got.len() <= 128);
            seen.extend(got.into_iter().map(|e| e.id));
            // New events while it catches up reach it through the history, in order.
            if rounds == 5 {
                let actions = capture(&mut st, client);
                assert_eq!(published_to(&actions, late), 0);
            }
        }
        assert_eq!(seen, (1..=3001).collect::<Vec<u64>>());
        let actions = capture(&mut st, client);
        assert_eq!(published_to(&actions, late), 1, "live once caught up");
        assert!(st.replay(late, 128, NOW).is_empty());
    }

    #[test]
    fn a_since_older_than_the_history_starts_with_an_events_missed_notice() {
        let (mut st, client) = with_history(10, 25);
        // Ids 16 to 25 are kept: after 3, 12 are gone.
        let (late, actions) = subscribe(&mut st, 3, Some(3));
        let notice = events_sent(&actions, late);
        assert_eq!(notice.len(), 1, "{actions:?}");
        assert_eq!(notice[0].kind, EVENTS_MISSED);
        assert_eq!(notice[0].id, 0);
        assert_eq!(notice[0].missed, Some(12));
        assert_eq!(notice[0].ts, iso8601_utc(NOW));
        let message = notice[0].message.as_deref().unwrap_or_default();
        assert!(message.contains("4 to 15"), "{message}");
        let replayed: Vec<u64> = events_sent(&st.replay(late, 100, NOW), late)
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(replayed, (16..=25).collect::<Vec<u64>>());

        let listed = |st: &mut State, since| match req(
            st,
            client,
            Message::ListEvents {
                id: 9,
                since,
                types: vec!["relay".into()],
            },
        ) {
            Message::Events { events, .. } => events,
            other => panic!("{other:?}"),
        };
        let events = listed(&mut st, Some(3));
        assert_eq!(events[0].kind, EVENTS_MISSED, "whatever the filter");
        assert_eq!(events[0].missed, Some(12));
        assert_eq!(events.len(), 11);
        for since in [None, Some(15), Some(20)] {
            let events = listed(&mut st, since);
            assert!(events.iter().all(|e| e.kind != EVENTS_MISSED), "{since:?}");
        }
        // Nothing missed, nothing to replay: live at once.
        let (now_live, actions) = subscribe(&mut st, 4, Some(25));
        assert!(events_sent(&actions, now_live).is_empty());
        assert!(!actions.contains(&Action::Replay(now_live)));
        assert!(!st.is_replaying(now_live));
    }

    #[test]
    fn a_subscriber_the_history_overtakes_while_it_catches_up_is_dropped_as_lagging() {
        let (mut st, client) = with_history(10, 10);
        let (slow, _) = subscribe(&mut st, 3, Some(0));
        let (reader, _) = subscribe(&mut st, 4, Some(0));
        assert_eq!(events_sent(&st.replay(slow, 2, NOW), slow).len(), 2);
        assert_eq!(events_sent(&st.replay(reader, 100, NOW), reader).len(), 10);
        // Two new events push out ids 1 and 2: still fine for `slow`, at event 2.
        capture(&mut st, client);
        let actions = capture(&mut st, client);
        assert!(!actions.contains(&Action::Close(slow)));
        // The third pushes out id 3, which `slow` has not had.
        let actions = capture(&mut st, client);
        assert!(actions.contains(&Action::Close(slow)), "{actions:?}");
        let last = events_sent(&actions, slow);
        assert_eq!(last.len(), 1);
        assert_eq!(last[0].kind, "subscriber.lagged");
        assert!(!st.is_replaying(slow));
        // The live reader hears about it (and about the capture before it).
        let kinds: Vec<String> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Publish(c, Message::Event { event, .. }) if *c == reader => {
                    Some(event.kind.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(kinds, ["relay.captured", "subscriber.lagged"]);
    }
}
