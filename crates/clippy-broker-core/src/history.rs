//! The history store's side of the state machine: what to record (sessions, turns, events) and
//! the requests answered from the store (`history`, `search`, `forget_history`,
//! `history_status`, and `get_turn` / `list_events` reaching past what memory holds). The store
//! itself is the I/O layer's: it runs the [`HistoryJob`]s on a thread of its own, in order, so a
//! query sees every record asked for before it (`bins/clippy-broker/src/history.rs`).

use std::collections::BTreeMap;

use clippy_proto::{ErrorReason, EventRecord, Format, Message};
use clippy_registry::TurnRecord;

use super::{Action, ConnId, Outcome, Refusal, State, refuse};
use crate::Level;

/// Bytes of records on their way to the store at most (turns' content, text and message; other
/// records count `SMALL_RECORD`, 512 bytes): past it, records that nobody can send again (events,
/// sessions, turns of a wrapper that does not re-send) are not stored, so a stalled store costs
/// a bounded amount of memory.
pub const MAX_BACKLOG: usize = 32 * 1024 * 1024;
/// Past this many bytes queued, the turns of wrappers that re-send are held: not queued, not
/// acknowledged, asked for again once the store has caught up. The rest of [`MAX_BACKLOG`] is
/// left to the events and sessions, which cannot be held.
pub const HOLD_AT: usize = 12 * 1024 * 1024;
/// Held turns are asked for again once the bytes queued are down to this.
pub const RELEASE_AT: usize = 4 * 1024 * 1024;
/// Held turns are asked for again in portions: a turn is asked for only while the bytes
/// queued and the bytes asked for and not come yet stay within this (one turn at a time when
/// a single turn weighs more). Asking every wrapper for all it holds at once had them arrive
/// together, and the broker's memory held them all at once.
pub const RESEND_BUDGET: usize = 6 * 1024 * 1024;
/// Turns asked for that have not come this long after the session's latest ask or arrival
/// are no longer counted in flight (the wrapper no longer keeps them, or is gone): the next
/// portions are asked for. One that comes later is still stored.
pub const RESEND_PATIENCE_MS: u64 = 30_000;
/// What a record other than a turn counts for in the backlog.
const SMALL_RECORD: usize = 512;

/// What `history_status` says of the store's backlog, from a [`Query::Status`]'s counts
/// (`None`: nothing to say) when the store takes writes.
#[must_use]
pub fn backlog_problem(skipped: u64, holding: bool) -> Option<String> {
    match (skipped, holding) {
        (0, false) => None,
        (0, true) => Some(
            "the store is behind the sessions: turns are acknowledged once it has stored them"
                .to_owned(),
        ),
        (n, _) => Some(format!(
            "{n} records (turns and events) not stored since the broker started: the store fell \
             behind the sessions"
        )),
    }
}

/// What a record weighs in the backlog: a turn its bytes, anything else `SMALL_RECORD`.
#[must_use]
pub fn weight(record: &Record) -> usize {
    match record {
        Record::Turn { record, .. } => {
            record.content().len()
                + record.text().len()
                + record.message().map_or(0, str::len)
                + SMALL_RECORD
        }
        _ => SMALL_RECORD,
    }
}

/// The records between the state machine and the store: how much is queued, whether turns are
/// being held, and whose.
#[derive(Debug, Default)]
pub(super) struct Backlog {
    /// Bytes queued ([`weight`]) and not yet reported written.
    queued: usize,
    /// Turns of re-sending wrappers are held until `queued` is down to [`RELEASE_AT`].
    holding: bool,
    /// Records are being left out (a full backlog): logged once per episode.
    skipping: bool,
    /// Records left out of the store since the broker started (and turns wrappers let go).
    skipped: u64,
    /// Bytes ([`weight`]) of the turns asked for again that have not come yet.
    asked: usize,
    /// Sessions that had a turn held, by id.
    held: BTreeMap<String, Held>,
}

/// A session that had a turn held.
#[derive(Debug, Clone, Default)]
struct Held {
    /// The lowest seq ever held: a turn sent again at or above it is stored (a copy already
    /// stored is kept, the second ignored), one below is only acknowledged.
    lowest: u64,
    /// The turns held and not asked for yet: seq → weight.
    owed: BTreeMap<u64, usize>,
    /// The turns asked for again that have not come yet: seq → weight.
    asked: BTreeMap<u64, usize>,
    /// When a turn was last asked for or came (the state's clock): the asks still open are
    /// given up [`RESEND_PATIENCE_MS`] after it.
    since: u64,
}

/// What the history thread is asked to do, in order.
// One lives per record or request on its way to the history thread, moved, never stored in
// numbers: the size of a `Message` costs nothing worth a box (as `Delivery`).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryJob {
    /// Store this (with whatever else is queued, in one transaction).
    Record(Record),
    /// Send this acknowledgement once every record queued before it is written (a turn sent
    /// again that was stored, or is on its way: its `turn_recorded` never comes before its
    /// commit).
    Ack(ConnId, Message),
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

/// How long the event loop holds [`HistoryJob`]s at most (the state's clock, ms) before it hands
/// them to the history thread together: one wake of that thread, and of the loop for what it
/// sends back, per batch rather than per record. A `capture` records an event: handed over one
/// by one, the wakes cost each small request's round trip as much again on a 2-CPU machine.
pub const BATCH_MS: u64 = 5;
/// Records held weighing this much ([`weight`]) go at once, whatever the time.
pub const BATCH_WEIGHT: usize = 1024 * 1024;

/// The [`HistoryJob`]s the event loop holds before handing them over (at most [`BATCH_MS`]; a
/// query, or records of [`BATCH_WEIGHT`], at once), in order.
///
/// ```
/// use clippy_broker_core::{HistoryBatch, HistoryJob, HistoryRecord};
///
/// let record = HistoryRecord::SessionEnded {
///     session: "s1".into(),
///     ended_at: 1_000,
///     exit_code: Some(0),
///     signal: None,
/// };
/// let mut batch = HistoryBatch::default();
/// assert!(!batch.push(HistoryJob::Record(record), 1_000), "a record waits");
/// assert_eq!(batch.due_at(), Some(1_005));
/// assert!(!batch.is_due(1_004));
/// assert!(batch.is_due(1_005));
/// assert_eq!(batch.take().len(), 1);
/// assert_eq!(batch.due_at(), None, "nothing held");
/// ```
#[derive(Debug, Default)]
pub struct Batch {
    jobs: Vec<HistoryJob>,
    /// When the first job held came.
    since: Option<u64>,
    /// What the records held weigh.
    weight: usize,
}

impl Batch {
    /// Holds `job`, which came at `now_ms`: `true` when the batch should go at once — for a query
    /// (someone waits for its answer, which comes after every record before it) or once the
    /// records held weigh [`BATCH_WEIGHT`].
    pub fn push(&mut self, job: HistoryJob, now_ms: u64) -> bool {
        self.since.get_or_insert(now_ms);
        let now = match &job {
            HistoryJob::Record(record) => {
                self.weight += weight(record);
                self.weight >= BATCH_WEIGHT
            }
            HistoryJob::Ack(..) => false,
            HistoryJob::Query { .. } => true,
        };
        self.jobs.push(job);
        now
    }

    /// When what is held should go (`None`: nothing is held).
    #[must_use]
    pub fn due_at(&self) -> Option<u64> {
        self.since.map(|since| since.saturating_add(BATCH_MS))
    }

    /// Whether what is held should go at `now_ms`.
    #[must_use]
    pub fn is_due(&self, now_ms: u64) -> bool {
        self.due_at().is_some_and(|due| now_ms >= due)
    }

    /// Everything held, in order, to hand over now.
    pub fn take(&mut self) -> Vec<HistoryJob> {
        self.since = None;
        self.weight = 0;
        std::mem::take(&mut self.jobs)
    }
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
    Status {
        /// Records left out of the store since the broker started (turns wrappers let go
        /// included).
        skipped: u64,
        /// Whether turns' acknowledgements are held now (the store is behind).
        holding: bool,
    },
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

/// `resend_turns` of `session`'s turns `from` to `to`, to its wrapper `owner`.
fn resend(owner: ConnId, session: &str, from: u64, to: u64) -> Action {
    Action::Send(
        owner,
        Message::ResendTurns {
            id: 0,
            session: session.to_owned(),
            from,
            to,
        },
    )
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

    /// Records `record` when history is on and the session it is about keeps history: queued
    /// for the store, or — a turn while the store is behind — held (a wrapper that re-sends) or
    /// left out (anything nobody can send again, once the backlog is full).
    pub(super) fn record(&mut self, record: Record, out: &mut Vec<Action>) {
        let session = match &record {
            Record::Session { session, .. } | Record::SessionEnded { session, .. } => {
                Some(session.as_str())
            }
            Record::Turn { record, .. } => Some(record.turn_id().session()),
            Record::Event { event, .. } => event.session.as_deref(),
        };
        if !self.history_on || session.is_some_and(|s| self.unrecorded.contains(s)) {
            if let Record::Turn {
                ack: Some((conn, reply)),
                ..
            } = record
            {
                out.push(Action::Send(conn, reply));
            }
            return;
        }
        let weight = weight(&record);
        let behind = self.backlog.holding || self.backlog.queued + weight > HOLD_AT;
        if let Record::Turn {
            record: turn,
            ack: Some((conn, _)),
        } = &record
            && behind
            && self.resends(*conn, turn.turn_id().session())
        {
            self.hold(
                turn.turn_id().session().to_owned(),
                turn.turn_id().seq(),
                weight,
                out,
            );
            return;
        }
        if self.backlog.queued + weight > MAX_BACKLOG {
            self.backlog.skipped += 1;
            if !self.backlog.skipping {
                self.backlog.skipping = true;
                out.push(Action::Log(
                    Level::Warn,
                    "history: the store fell 32 MiB behind; events, sessions and the turns of \
                     wrappers that do not re-send are not stored until it catches up"
                        .into(),
                ));
            }
            if let Record::Turn {
                ack: Some((conn, reply)),
                ..
            } = record
            {
                out.push(Action::Send(conn, reply));
            }
            return;
        }
        self.backlog.queued += weight;
        out.push(Action::History(HistoryJob::Record(record)));
    }

    /// Whether `conn` owns `session` and said it re-sends turns when asked.
    fn resends(&self, conn: ConnId, session: &str) -> bool {
        self.sessions
            .get(session)
            .is_some_and(|entry| entry.owner == conn && entry.resends)
    }

    /// Holds turn `seq` of `session` (weighing `weight`): not stored, not acknowledged; asked
    /// for again once the store has caught up.
    fn hold(&mut self, session: String, seq: u64, weight: usize, out: &mut Vec<Action>) {
        if !self.backlog.holding {
            self.backlog.holding = true;
            out.push(Action::Log(
                Level::Warn,
                format!(
                    "history: the store is {} MiB behind the sessions; turns are acknowledged \
                     once it has caught up and stored them",
                    self.backlog.queued >> 20
                ),
            ));
        }
        let held = self.backlog.held.entry(session).or_insert(Held {
            lowest: seq,
            ..Held::default()
        });
        held.lowest = held.lowest.min(seq);
        held.owed.insert(seq, weight);
    }

    /// Turn `seq` of `session` came (sent again or not): no longer owed nor in flight.
    pub(super) fn turn_came(&mut self, session: &str, seq: u64) {
        let Some(held) = self.backlog.held.get_mut(session) else {
            return;
        };
        held.owed.remove(&seq);
        if let Some(weight) = held.asked.remove(&seq) {
            self.backlog.asked -= weight;
            held.since = self.clock;
        }
    }

    /// Turn `seq` of `session` came again (a `resend_turns`, or a wrapper sending what it had
    /// no acknowledgement for): whether to store it (it may have been held) rather than only
    /// acknowledge it.
    pub(super) fn store_again(&self, session: &str, seq: u64) -> bool {
        self.history_on
            && !self.unrecorded.contains(session)
            && self
                .backlog
                .held
                .get(session)
                .is_some_and(|held| seq >= held.lowest)
    }

    /// The acknowledgement of a turn sent again that is not stored again: after every record
    /// queued before it, so it never comes before the first copy's commit.
    pub(super) fn acknowledge_again(&self, conn: ConnId, reply: Message, out: &mut Vec<Action>) {
        if self.history_on {
            out.push(Action::History(HistoryJob::Ack(conn, reply)));
        } else {
            out.push(Action::Send(conn, reply));
        }
    }

    /// The history thread wrote (or failed to write) records weighing `weight`: once the
    /// backlog is down to [`RELEASE_AT`], turns are no longer held, and the held ones are
    /// asked for again, a portion at a time ([`RESEND_BUDGET`]). `now_ms`: the time now (Unix
    /// ms).
    pub fn history_written(&mut self, weight: usize, now_ms: u64) -> Vec<Action> {
        self.clock = self.clock.max(now_ms);
        self.backlog.queued = self.backlog.queued.saturating_sub(weight);
        let mut out = Vec::new();
        if self.backlog.queued <= RELEASE_AT {
            if self.backlog.skipping {
                self.backlog.skipping = false;
                out.push(Action::Log(
                    Level::Info,
                    "history: the store caught up; every record is stored again".into(),
                ));
            }
            if self.backlog.holding {
                self.backlog.holding = false;
                let owed: usize = self.backlog.held.values().map(|h| h.owed.len()).sum();
                out.push(Action::Log(
                    Level::Info,
                    format!(
                        "history: the store caught up; the wrappers are asked to send {owed} \
                         held turns again, a portion at a time"
                    ),
                ));
            }
        }
        self.ask_again(&mut out);
        out
    }

    /// Asks for the next portions of held turns, while the store is not behind and what is
    /// queued and asked for stays within [`RESEND_BUDGET`] (a larger turn alone, once nothing
    /// is asked for and the store is down to [`RELEASE_AT`]). Each session's turns are asked for oldest first, in runs of consecutive
    /// seqs (`resend_turns`), the sessions one after the other.
    fn ask_again(&mut self, out: &mut Vec<Action>) {
        if self.backlog.holding || !self.history_on {
            return;
        }
        for (session, held) in &mut self.backlog.held {
            let Some(owner) = self.sessions.get(session).map(|entry| entry.owner) else {
                continue;
            };
            let mut run: Option<(u64, u64)> = None;
            while let Some((&seq, &weight)) = held.owed.first_key_value() {
                let fits = self.backlog.queued + self.backlog.asked + weight <= RESEND_BUDGET;
                // A turn too large to fit with what is queued goes alone, once the store is down
                // to RELEASE_AT.
                let alone = self.backlog.asked == 0 && self.backlog.queued <= RELEASE_AT;
                if !fits && !alone {
                    break;
                }
                held.owed.remove(&seq);
                held.asked.insert(seq, weight);
                held.since = self.clock;
                self.backlog.asked += weight;
                run = match run {
                    Some((from, to)) if to + 1 == seq => Some((from, seq)),
                    Some((from, to)) => {
                        out.push(resend(owner, session, from, to));
                        Some((seq, seq))
                    }
                    None => Some((seq, seq)),
                };
            }
            if let Some((from, to)) = run {
                out.push(resend(owner, session, from, to));
            }
            if !held.owed.is_empty() {
                break;
            }
        }
    }

    /// When the asks still open are given up on, if any are.
    pub(super) fn next_resend_deadline(&self) -> Option<u64> {
        self.backlog
            .held
            .values()
            .filter(|held| !held.asked.is_empty())
            .map(|held| held.since.saturating_add(RESEND_PATIENCE_MS))
            .min()
    }

    /// Gives up on the asks that got no turn for [`RESEND_PATIENCE_MS`] by `now_ms` (they
    /// count in flight no more), and asks for the next portions.
    pub(super) fn expire_resends(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        let mut given_up = 0;
        for (session, held) in &mut self.backlog.held {
            if held.asked.is_empty() || held.since.saturating_add(RESEND_PATIENCE_MS) > now_ms {
                continue;
            }
            let weight: usize = held.asked.values().sum();
            self.backlog.asked -= weight;
            given_up += held.asked.len();
            held.asked.clear();
            out.push(Action::Log(
                Level::Warn,
                format!(
                    "history: session {session}'s wrapper did not send again turns asked for \
                     {} s ago: asking for the next ones",
                    RESEND_PATIENCE_MS / 1000
                ),
            ));
        }
        if given_up > 0 {
            self.ask_again(out);
        }
    }

    /// The history thread is gone: nothing is recorded any more, and the held turns are asked
    /// for again, all at once (they are only acknowledged, nothing is queued for them).
    pub fn history_gone(&mut self) -> Vec<Action> {
        self.history_on = false;
        let held = std::mem::take(&mut self.backlog.held);
        self.backlog = Backlog {
            skipped: self.backlog.skipped,
            ..Backlog::default()
        };
        let mut out = Vec::new();
        for (session, held) in held {
            let Some(owner) = self.sessions.get(&session).map(|entry| entry.owner) else {
                continue;
            };
            let seqs = held.owed.keys().chain(held.asked.keys());
            if let (Some(&from), Some(&to)) = (seqs.clone().min(), seqs.max()) {
                out.push(resend(owner, &session, from, to));
            }
        }
        out
    }

    /// A session is going: turns of it that were held and are still in its ring are queued
    /// for the store as they are (its wrapper will not be asked for them; their bytes are the
    /// ring's, which goes now). Held turns the ring no longer has are counted as left out.
    pub(super) fn store_held_of(&mut self, session: &str, out: &mut Vec<Action>) {
        let Some(held) = self.backlog.held.remove(session) else {
            return;
        };
        self.backlog.asked -= held.asked.values().sum::<usize>();
        let Ok(turns) = self.registry.list(session, None) else {
            return;
        };
        let turns: Vec<TurnRecord> = turns
            .filter(|t| t.turn_id().seq() >= held.lowest)
            .cloned()
            .collect();
        let owed: std::collections::BTreeSet<u64> =
            held.owed.keys().chain(held.asked.keys()).copied().collect();
        if !owed.is_empty() {
            let kept = turns
                .iter()
                .filter(|t| owed.contains(&t.turn_id().seq()))
                .count() as u64;
            let lost = (owed.len() as u64).saturating_sub(kept);
            if lost > 0 {
                self.backlog.skipped += lost;
                out.push(Action::Log(
                    Level::Warn,
                    format!(
                        "history: session {session} went with {lost} held turns its ring no \
                         longer has: they are not stored"
                    ),
                ));
            }
        }
        for record in turns.into_iter().rev() {
            let job = Record::Turn { record, ack: None };
            self.backlog.queued += weight(&job);
            out.push(Action::History(HistoryJob::Record(job)));
        }
    }

    /// A wrapper says it let `unkept` turns go in all before they were acknowledged (it
    /// said `before` until now): counted as left out, and logged.
    pub(super) fn turns_unkept(
        &mut self,
        session: &str,
        before: u64,
        unkept: u64,
        out: &mut Vec<Action>,
    ) {
        if unkept <= before || !self.history_on || self.unrecorded.contains(session) {
            return;
        }
        self.backlog.skipped += unkept - before;
        out.push(Action::Log(
            Level::Warn,
            format!(
                "history: session {session}'s wrapper let {} turns go before they were \
                 acknowledged ({unkept} in all): they may be missing from the store",
                unkept - before
            ),
        ));
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
            Message::HistoryStatus { id } => (
                id,
                Query::Status {
                    skipped: self.backlog.skipped,
                    holding: self.backlog.holding,
                },
            ),
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
    fn ended(session: &str) -> Record {
        Record::SessionEnded {
            session: session.into(),
            ended_at: NOW,
            exit_code: None,
            signal: None,
        }
    }

    fn turn_of(bytes: usize) -> Record {
        let data = turn_data(1, &"x".repeat(bytes));
        Record::Turn {
            record: TurnRecord::new(
                clippy_registry::TurnId::new("s01", 1).expect("id"),
                0,
                data.content,
                data.text,
            ),
            ack: None,
        }
    }

    #[test]
    fn a_batch_holds_records_and_acknowledgements_for_its_time_in_order() {
        let mut batch = Batch::default();
        assert_eq!(batch.due_at(), None);
        assert!(!batch.is_due(u64::MAX), "nothing held is never due");
        assert!(!batch.push(HistoryJob::Record(ended("a")), 100));
        let ack = Message::TurnRecorded {
            id: 1,
            turn_id: "s01:1".into(),
        };
        assert!(!batch.push(HistoryJob::Ack(ConnId(3), ack.clone()), 103));
        assert!(!batch.push(HistoryJob::Record(ended("b")), 104));
        assert_eq!(
            batch.due_at(),
            Some(100 + BATCH_MS),
            "timed from the first job held"
        );
        assert!(!batch.is_due(100 + BATCH_MS - 1));
        assert!(batch.is_due(100 + BATCH_MS));
        assert_eq!(
            batch.take(),
            vec![
                HistoryJob::Record(ended("a")),
                HistoryJob::Ack(ConnId(3), ack),
                HistoryJob::Record(ended("b")),
            ]
        );
        assert_eq!(batch.due_at(), None);
        assert!(!batch.push(HistoryJob::Record(ended("c")), 200));
        assert_eq!(
            batch.due_at(),
            Some(200 + BATCH_MS),
            "a new batch times anew"
        );
    }

    #[test]
    fn a_query_or_heavy_records_make_the_batch_go_at_once() {
        let mut batch = Batch::default();
        assert!(!batch.push(HistoryJob::Record(ended("a")), 100));
        let query = HistoryJob::Query {
            conn: ConnId(4),
            id: 9,
            query: Query::Status {
                skipped: 0,
                holding: false,
            },
        };
        assert!(batch.push(query.clone(), 101), "someone waits for a query");
        assert_eq!(batch.take(), vec![HistoryJob::Record(ended("a")), query]);

        let turn = turn_of(BATCH_WEIGHT / 10);
        let fill = BATCH_WEIGHT.div_ceil(weight(&turn));
        assert!(fill > 2, "the test's turns fill a batch in a few");
        for _ in 1..fill {
            assert!(!batch.push(HistoryJob::Record(turn.clone()), 300));
        }
        assert!(
            batch.push(HistoryJob::Record(turn.clone()), 300),
            "this one fills it"
        );
        assert_eq!(batch.take().len(), fill);
        assert!(
            !batch.push(HistoryJob::Record(turn), 301),
            "the weight counts anew"
        );
    }

    #[test]
    fn the_status_names_a_store_behind_and_records_left_out() {
        assert_eq!(backlog_problem(0, false), None);
        assert!(backlog_problem(0, true).is_some_and(|p| p.contains("behind")));
        assert!(
            backlog_problem(3, true).is_some_and(|p| p.starts_with("3 records")),
            "what was left out says more than that the store is behind now"
        );
    }

    use clippy_proto::{Format, Message, Role, SessionInfo};

    use std::collections::BTreeSet;

    use super::*;
    use crate::tests::{
        NOW, connect, info, refused, sent_to, state, state_with, turn_data, wrapper,
    };

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
                HistoryJob::Query { .. } | HistoryJob::Ack(..) => None,
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
                resends: false,
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

        // A re-send stores nothing and is acknowledged behind the store's queue (after the
        // first copy's commit).
        let actions = st.handle(w, turn_completed(1, "hello"), NOW);
        assert!(sent_to(&actions, w).is_empty(), "{actions:?}");
        assert!(
            matches!(jobs(&actions).as_slice(),
                [HistoryJob::Ack(conn, Message::TurnRecorded { id: 9, turn_id })]
                    if *conn == w && turn_id == "aaa:1"),
            "{actions:?}"
        );

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
                resends: false,
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
                resends: false,
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

    /// A broker keeping history whose turns may be as large as the backlog tests need.
    fn big_state() -> State {
        let mut st = state_with(8, 4 << 20);
        st.enable_history(0);
        st
    }

    /// Registers `session` on a new wrapper connection number `n`, re-sending or not.
    fn register(st: &mut State, n: u64, session: &str, resends: bool) -> ConnId {
        let w = connect(st, n, Role::Wrapper);
        let actions = st.handle(
            w,
            Message::Register {
                id: 2,
                session: info(session, None, false),
                progress: None,
                resends,
            },
            NOW,
        );
        assert_eq!(sent_to(&actions, w), [Message::Done { id: 2 }]);
        w
    }

    /// Turn `seq` of `session` with about 2 MiB of bytes (content and text).
    fn big_turn(session: &str, seq: u64) -> Message {
        Message::TurnCompleted {
            id: 9,
            session: session.into(),
            turn: turn_data(seq, &"x".repeat(1 << 20)),
        }
    }

    /// `resend_turns` as the broker sends it.
    fn resend_turns(session: &str, from: u64, to: u64) -> Message {
        Message::ResendTurns {
            id: 0,
            session: session.into(),
            from,
            to,
        }
    }

    /// What `actions` queue for the store, weighed.
    fn queued(actions: &[Action]) -> usize {
        records(actions).iter().map(weight).sum()
    }

    /// The turns (session, seq) `actions` queue for the store, and with an acknowledgement.
    fn stored_turns(actions: &[Action]) -> Vec<(String, u64, bool)> {
        records(actions)
            .into_iter()
            .filter_map(|r| match r {
                Record::Turn { record, ack } => Some((
                    record.turn_id().session().to_owned(),
                    record.turn_id().seq(),
                    ack.is_some(),
                )),
                _ => None,
            })
            .collect()
    }

    fn logs(actions: &[Action], level: Level) -> Vec<String> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Log(l, line) if *l == level => Some(line.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn past_the_bound_turns_are_held_unacknowledged_and_asked_for_again_once_the_store_caught_up() {
        let mut st = big_state();
        let w = register(&mut st, 1, "aaa", true);
        let mut weight_queued = 0;
        let mut held = Vec::new();
        for seq in 1..=8 {
            let actions = st.handle(w, big_turn("aaa", seq), NOW);
            weight_queued += queued(&actions);
            assert!(
                sent_to(&actions, w).is_empty(),
                "never acknowledged at once"
            );
            if stored_turns(&actions).is_empty() {
                held.push(seq);
                // Live operation goes on: the turn is in the ring, its event recorded.
                assert!(
                    records(&actions).iter().any(
                        |r| matches!(r, Record::Event { event, .. } if event.kind == "turn.completed")
                    ),
                    "{actions:?}"
                );
            } else {
                assert_eq!(stored_turns(&actions), [("aaa".to_owned(), seq, true)]);
            }
            if seq == 6 {
                assert_eq!(logs(&actions, Level::Warn).len(), 1, "{actions:?}");
            }
        }
        // 5 turns of 2 MiB fit under HOLD_AT; from the 6th on they are held.
        assert_eq!(held, [6, 7, 8]);
        assert!(weight_queued <= HOLD_AT);

        // The store writes some: not yet down to RELEASE_AT, still holding.
        assert!(st.history_written(1 << 20, NOW).is_empty());
        let actions = st.handle(w, big_turn("aaa", 9), NOW);
        assert!(stored_turns(&actions).is_empty(), "still held");
        // Down to RELEASE_AT: the held turns are asked for again, a portion that fits the
        // budget with what is queued: here the first one only.
        let actions = st.history_written(st.backlog.queued - RELEASE_AT, NOW);
        assert_eq!(sent_to(&actions, w), [resend_turns("aaa", 6, 6)]);
        // The store wrote what was queued: the next portion, within the budget.
        let actions = st.history_written(RELEASE_AT, NOW);
        assert_eq!(sent_to(&actions, w), [resend_turns("aaa", 7, 7)]);
        // Nothing more while what was asked for has not come and been written.
        assert!(sent_to(&st.history_written(0, NOW), w).is_empty());
        let send_again = |st: &mut State, seq| {
            // Sent again: stored, and acknowledged with the commit.
            let actions = st.handle(w, big_turn("aaa", seq), NOW);
            assert_eq!(stored_turns(&actions), [("aaa".to_owned(), seq, true)]);
            assert!(sent_to(&actions, w).is_empty());
            // Sent again, a turn announces nothing a second time.
            assert!(
                !records(&actions)
                    .iter()
                    .any(|r| matches!(r, Record::Event { .. })),
                "{actions:?}"
            );
        };
        send_again(&mut st, 6);
        send_again(&mut st, 7);
        // Written: the rest is asked for, in one run of seqs.
        let actions = st.history_written(st.backlog.queued, NOW);
        assert_eq!(sent_to(&actions, w), [resend_turns("aaa", 8, 9)]);
        send_again(&mut st, 8);
        send_again(&mut st, 9);
        assert!(sent_to(&st.history_written(st.backlog.queued, NOW), w).is_empty());
        // A turn below the held ones sent again is only acknowledged, behind the queue.
        let actions = st.handle(w, big_turn("aaa", 3), NOW);
        assert!(matches!(jobs(&actions).as_slice(), [HistoryJob::Ack(conn, _)] if *conn == w));
        // New turns go straight to the store again.
        let actions = st.handle(w, big_turn("aaa", 10), NOW);
        assert_eq!(stored_turns(&actions), [("aaa".to_owned(), 10, true)]);
    }

    /// Wrappers that keep their turns until acknowledged and send again, in order, what they
    /// are asked for, and a store that writes the jobs queued for it, oldest first, when told:
    /// the state machine between them, stepped by hand.
    struct Sim {
        st: State,
        /// Content bytes of each turn.
        size: usize,
        /// Jobs queued for the store, oldest first.
        store: std::collections::VecDeque<HistoryJob>,
        /// Turns written to the store.
        stored: BTreeSet<(String, u64)>,
        /// What each wrapper keeps unacknowledged: session → seqs.
        kept: BTreeMap<String, BTreeSet<u64>>,
        /// Each session's wrapper connection.
        owners: BTreeMap<String, ConnId>,
        /// Turns asked for again, on their way from their wrapper: (session, seq).
        outgoing: std::collections::VecDeque<(String, u64)>,
        /// Turns asked for again and not yet written (on their way or queued for the store).
        in_flight: BTreeSet<(String, u64)>,
        /// The most bytes of them at any time.
        most_in_flight: usize,
        /// `resend_turns` sent.
        asks: usize,
    }

    impl Sim {
        fn new(wrappers: u64, ring_depth: usize, size: usize) -> Self {
            let mut st = state_with(ring_depth, 1 << 20);
            st.enable_history(0);
            let mut owners = BTreeMap::new();
            for n in 1..=wrappers {
                let session = format!("s{n:02}");
                owners.insert(session.clone(), register(&mut st, n, &session, true));
            }
            Self {
                st,
                size,
                store: std::collections::VecDeque::new(),
                stored: BTreeSet::new(),
                kept: BTreeMap::new(),
                owners,
                outgoing: std::collections::VecDeque::new(),
                in_flight: BTreeSet::new(),
                most_in_flight: 0,
                asks: 0,
            }
        }

        /// What one turn weighs in the backlog.
        fn weight(&self) -> usize {
            weight(&Record::Turn {
                record: TurnRecord::new(
                    clippy_registry::TurnId::new("s01", 1).expect("id"),
                    0,
                    turn_data(1, &"x".repeat(self.size)).content,
                    turn_data(1, &"x".repeat(self.size)).text,
                ),
                ack: None,
            })
        }

        fn acknowledged(&mut self, turn_id: &str) {
            let (session, seq) = turn_id.rsplit_once(':').expect("session:seq");
            let seq: u64 = seq.parse().expect("seq");
            if let Some(kept) = self.kept.get_mut(session) {
                kept.remove(&seq);
            }
        }

        fn apply(&mut self, actions: Vec<Action>) {
            for action in actions {
                match action {
                    Action::History(job) => self.store.push_back(job),
                    Action::Send(_, Message::TurnRecorded { turn_id, .. }) => {
                        self.acknowledged(&turn_id);
                    }
                    Action::Send(
                        conn,
                        Message::ResendTurns {
                            session, from, to, ..
                        },
                    ) => {
                        assert_eq!(self.owners.get(&session), Some(&conn));
                        self.asks += 1;
                        let kept = self.kept.get(&session).cloned().unwrap_or_default();
                        for seq in kept.range(from..=to) {
                            let turn = (session.clone(), *seq);
                            if self.in_flight.insert(turn.clone()) {
                                self.outgoing.push_back(turn);
                            }
                        }
                    }
                    _ => {}
                }
            }
            let bytes = self.in_flight.len() * self.weight();
            assert!(
                bytes <= RESEND_BUDGET,
                "{bytes} bytes of turns asked for again in flight"
            );
            self.most_in_flight = self.most_in_flight.max(bytes);
        }

        /// Session `session`'s wrapper sends turn `seq` (kept until acknowledged).
        fn send(&mut self, session: &str, seq: u64) {
            self.kept.entry(session.to_owned()).or_default().insert(seq);
            let conn = self.owners[session];
            let turn = turn_data(seq, &"x".repeat(self.size));
            let actions = self.st.handle(
                conn,
                Message::TurnCompleted {
                    id: 9,
                    session: session.into(),
                    turn,
                },
                NOW,
            );
            self.apply(actions);
        }

        /// The next turn asked for again arrives, if one is on its way.
        fn send_asked(&mut self) -> bool {
            let Some((session, seq)) = self.outgoing.pop_front() else {
                return false;
            };
            self.send(&session, seq);
            true
        }

        /// The store writes up to `n` jobs, and says so.
        fn write(&mut self, n: usize) -> bool {
            let mut weighed = 0;
            let mut wrote = false;
            for _ in 0..n {
                let Some(job) = self.store.pop_front() else {
                    break;
                };
                wrote = true;
                match job {
                    HistoryJob::Record(record) => {
                        weighed += weight(&record);
                        if let Record::Turn { record, ack } = record {
                            let turn = (
                                record.turn_id().session().to_owned(),
                                record.turn_id().seq(),
                            );
                            self.in_flight.remove(&turn);
                            self.stored.insert(turn);
                            if let Some((_, Message::TurnRecorded { turn_id, .. })) = ack {
                                self.acknowledged(&turn_id);
                            }
                        }
                    }
                    HistoryJob::Ack(_, Message::TurnRecorded { turn_id, .. }) => {
                        self.acknowledged(&turn_id);
                    }
                    _ => {}
                }
            }
            let actions = self.st.history_written(weighed, NOW);
            self.apply(actions);
            wrote
        }

        /// Store and wrappers take turns until nothing is left to write or send.
        fn run(&mut self) {
            for _ in 0..1_000_000 {
                let wrote = self.write(16);
                let mut sent = false;
                for _ in 0..4 {
                    sent |= self.send_asked();
                }
                if !wrote && !sent {
                    return;
                }
            }
            panic!("never settled");
        }

        /// Every turn 1 to `turns` of every session is stored and acknowledged.
        fn all_stored(&self, turns: u64) {
            for session in self.owners.keys() {
                for seq in 1..=turns {
                    assert!(
                        self.stored.contains(&(session.clone(), seq)),
                        "{session}:{seq} not stored"
                    );
                }
                assert!(
                    self.kept.get(session).is_none_or(BTreeSet::is_empty),
                    "{session}'s wrapper still keeps {:?}",
                    self.kept.get(session)
                );
            }
        }
    }

    #[test]
    fn a_burst_of_held_turns_is_asked_for_again_in_portions_within_the_budget_and_all_are_stored() {
        // 64 wrappers, 12 turns of ~64 KiB each, sent before the store writes anything: 48 MiB,
        // of which all past HOLD_AT is held.
        const TURNS: u64 = 12;
        let mut sim = Sim::new(64, TURNS as usize, 32 * 1024);
        let sessions: Vec<String> = sim.owners.keys().cloned().collect();
        for seq in 1..=TURNS {
            for session in &sessions {
                sim.send(session, seq);
            }
        }
        assert!(sim.st.backlog.holding);
        let held: usize = sim.st.backlog.held.values().map(|h| h.owed.len()).sum();
        assert!(held * sim.weight() > 4 * RESEND_BUDGET, "{held} turns held");
        assert!(sim.asks == 0 && sim.outgoing.is_empty());
        // The store writes, the wrappers send what they are asked for: never more than the
        // budget in flight (checked at every step), and every turn in the end.
        sim.run();
        sim.all_stored(TURNS);
        assert!(sim.asks > 1, "asked in portions");
        assert!(sim.most_in_flight > 0);
        assert_eq!(sim.st.backlog.asked, 0);
        assert!(
            sim.st
                .backlog
                .held
                .values()
                .all(|h| h.owed.is_empty() && h.asked.is_empty())
        );
        // New turns go straight to the store.
        sim.send("s01", TURNS + 1);
        assert!(matches!(
            sim.store.back(),
            Some(HistoryJob::Record(Record::Event { .. }))
        ));
        assert_eq!(sim.st.backlog.held["s01"].owed.len(), 0);
    }

    #[test]
    fn a_wrapper_that_disconnects_while_it_sends_turns_again_loses_none_it_still_keeps() {
        // A ring of 4: at the disconnection the broker no longer has most of the held turns;
        // the wrapper has them all, and sends them on its new connection.
        const TURNS: u64 = 16;
        let mut sim = Sim::new(8, 4, 64 * 1024);
        let sessions: Vec<String> = sim.owners.keys().cloned().collect();
        for seq in 1..=TURNS {
            for session in &sessions {
                sim.send(session, seq);
            }
        }
        assert!(sim.st.backlog.holding);
        // Written until the first portion is asked for, and one of its turns came.
        while sim.outgoing.is_empty() {
            assert!(
                sim.write(4),
                "the store ran dry before a turn was asked for again"
            );
        }
        assert!(sim.send_asked());
        let (session, _) = sim.outgoing.front().cloned().expect("more asked for");
        let conn = sim.owners[&session];
        // Its connection goes, with what it had not written.
        let actions = sim.st.connection_closed(conn);
        sim.apply(actions);
        sim.outgoing.retain(|(s, _)| *s != session);
        sim.in_flight.retain(|(s, _)| *s != session);
        // A new connection: registered again, every turn not acknowledged is sent again.
        let conn = register(&mut sim.st, 100, &session, true);
        sim.owners.insert(session.clone(), conn);
        let kept: Vec<u64> = sim.kept[&session].iter().copied().collect();
        assert!(!kept.is_empty());
        for seq in kept {
            sim.send(&session, seq);
        }
        sim.run();
        sim.all_stored(TURNS);
    }

    #[test]
    fn turns_asked_for_that_do_not_come_are_given_up_after_a_while_and_the_next_are_asked_for() {
        let mut sim = Sim::new(2, 64, 1 << 20);
        for seq in 1..=8 {
            sim.send("s01", seq);
            sim.send("s02", seq);
        }
        assert!(sim.st.backlog.holding);
        while sim.outgoing.is_empty() {
            assert!(sim.write(4));
        }
        while sim.write(64) {}
        // s01's turns were held first, and are asked for first.
        assert!(!sim.outgoing.is_empty());
        assert!(
            sim.outgoing.iter().all(|(s, _)| s == "s01"),
            "{:?}",
            sim.outgoing
        );
        // Its wrapper let them go (past its own bound): it sends nothing, and nothing more is
        // asked for meanwhile.
        sim.outgoing.clear();
        sim.in_flight.clear();
        sim.kept.remove("s01");
        let asks = sim.asks;
        assert!(!sim.write(1));
        let deadline = sim.st.next_deadline().expect("a deadline for the asks");
        assert_eq!(deadline, NOW + RESEND_PATIENCE_MS);
        let actions = sim.st.expire(deadline - 1);
        sim.apply(actions);
        assert_eq!(sim.asks, asks);
        let actions = sim.st.expire(deadline);
        assert_eq!(logs(&actions, Level::Warn).len(), 1, "{actions:?}");
        sim.apply(actions);
        assert!(sim.asks > asks);
        // s01's next held turns are asked for, in vain, and given up in turn; then s02's come,
        // and are stored.
        sim.kept.remove("s01");
        for _ in 0..8 {
            sim.run();
            sim.outgoing.retain(|(s, _)| s != "s01");
            sim.in_flight.retain(|(s, _)| s != "s01");
            let Some(deadline) = sim.st.next_deadline() else {
                break;
            };
            let actions = sim.st.expire(deadline);
            sim.apply(actions);
        }
        for seq in 1..=8 {
            assert!(sim.stored.contains(&("s02".to_owned(), seq)));
        }
        assert_eq!(sim.st.backlog.asked, 0);
    }

    #[test]
    fn while_turns_are_held_the_events_still_have_room_for_seconds_of_a_flood() {
        // The soak (64 sessions, ~1200 turns/s on 2 cores) emits ~2400 events a second; a
        // store behind holds turns, and has to write what it queued before it reaches the
        // events queued behind them. They must not be left out meanwhile: 40,000 events (about
        // 16 s of the soak) fit in what the turns leave of the backlog.
        let mut st = big_state();
        let w = register(&mut st, 1, "aaa", true);
        let mut seq = 0;
        while !st.backlog.holding {
            seq += 1;
            st.handle(w, big_turn("aaa", seq), NOW);
        }
        let mut out = Vec::new();
        for id in 0..40_000 {
            st.record(
                Record::Event {
                    event: EventRecord {
                        id,
                        kind: "relay.captured".into(),
                        session: Some("aaa".into()),
                        ..EventRecord::default()
                    },
                    time: NOW,
                },
                &mut out,
            );
        }
        assert_eq!(st.backlog.skipped, 0);
        assert_eq!(records(&out).len(), 40_000);
    }

    #[test]
    fn a_full_backlog_leaves_out_what_nobody_can_send_again_and_history_status_says_so() {
        let mut st = big_state();
        let old = register(&mut st, 1, "old", false);
        let new = register(&mut st, 2, "new", true);
        let mut acknowledged_at_once = 0;
        for seq in 1..=20 {
            let actions = st.handle(old, big_turn("old", seq), NOW);
            if !sent_to(&actions, old).is_empty() {
                // A wrapper that does not re-send: over MAX_BACKLOG its turn is left out.
                assert!(stored_turns(&actions).is_empty());
                acknowledged_at_once += 1;
            }
        }
        // 32 MiB: 15 turns of 2 MiB and their events.
        assert_eq!(acknowledged_at_once, 5);
        // The re-sending wrapper's turn is held, not left out.
        let actions = st.handle(new, big_turn("new", 1), NOW);
        assert!(stored_turns(&actions).is_empty());
        assert!(sent_to(&actions, new).is_empty());
        let c = connect(&mut st, 3, Role::Client);
        let actions = st.handle(c, Message::HistoryStatus { id: 4 }, NOW);
        assert!(
            matches!(jobs(&actions).as_slice(),
                [HistoryJob::Query { query: Query::Status { skipped, holding: true }, .. }]
                    if *skipped >= 5),
            "{actions:?}"
        );
        // Everything written: the held turn is asked for, and records are stored again.
        let actions = st.history_written(usize::MAX, NOW);
        assert_eq!(
            sent_to(&actions, new),
            [Message::ResendTurns {
                id: 0,
                session: "new".into(),
                from: 1,
                to: 1,
            }]
        );
        assert!(!logs(&actions, Level::Info).is_empty());
        let actions = st.handle(old, big_turn("old", 21), NOW);
        assert_eq!(stored_turns(&actions), [("old".to_owned(), 21, true)]);
    }

    #[test]
    fn a_session_that_goes_with_held_turns_has_those_still_in_its_ring_stored() {
        // A ring of 2: of the 3 held turns, the oldest is gone from memory when the session ends.
        let mut st = state_with(2, 4 << 20);
        st.enable_history(0);
        let w = register(&mut st, 1, "aaa", true);
        for seq in 1..=5 {
            st.handle(w, big_turn("aaa", seq), NOW);
        }
        for seq in 6..=8 {
            let actions = st.handle(w, big_turn("aaa", seq), NOW);
            assert!(stored_turns(&actions).is_empty());
        }
        let actions = st.handle(
            w,
            Message::Deregister {
                id: 4,
                session: "aaa".into(),
                exit_code: Some(0),
                signal: None,
            },
            NOW,
        );
        assert_eq!(
            stored_turns(&actions),
            [("aaa".to_owned(), 7, false), ("aaa".to_owned(), 8, false)]
        );
        assert_eq!(logs(&actions, Level::Warn).len(), 1, "{actions:?}");
        let c = connect(&mut st, 3, Role::Client);
        let actions = st.handle(c, Message::HistoryStatus { id: 4 }, NOW);
        assert!(
            matches!(
                jobs(&actions).as_slice(),
                [HistoryJob::Query {
                    query: Query::Status { skipped: 1, .. },
                    ..
                }]
            ),
            "{actions:?}"
        );
    }

    #[test]
    fn when_the_history_thread_is_gone_held_turns_are_asked_for_and_acknowledged_at_once() {
        let mut st = big_state();
        let w = register(&mut st, 1, "aaa", true);
        for seq in 1..=6 {
            st.handle(w, big_turn("aaa", seq), NOW);
        }
        let actions = st.history_gone();
        assert_eq!(
            sent_to(&actions, w),
            [Message::ResendTurns {
                id: 0,
                session: "aaa".into(),
                from: 6,
                to: 6,
            }]
        );
        let actions = st.handle(w, big_turn("aaa", 6), NOW);
        assert!(jobs(&actions).is_empty(), "{actions:?}");
        assert!(matches!(
            sent_to(&actions, w).as_slice(),
            [Message::TurnRecorded { turn_id, .. }] if turn_id == "aaa:6"
        ));
    }

    #[test]
    fn turns_a_wrapper_let_go_unacknowledged_are_counted_and_logged() {
        let mut st = big_state();
        let w = register(&mut st, 1, "aaa", true);
        let progress = |unkept_turns| Message::Progress {
            id: 3,
            session: "aaa".into(),
            progress: clippy_proto::Progress {
                unkept_turns,
                ..clippy_proto::Progress::default()
            },
        };
        let actions = st.handle(w, progress(0), NOW);
        assert!(logs(&actions, Level::Warn).is_empty());
        let actions = st.handle(w, progress(3), NOW);
        assert_eq!(logs(&actions, Level::Warn).len(), 1, "{actions:?}");
        let actions = st.handle(w, progress(3), NOW);
        assert!(logs(&actions, Level::Warn).is_empty(), "said once");
        let c = connect(&mut st, 3, Role::Client);
        let actions = st.handle(c, Message::HistoryStatus { id: 4 }, NOW);
        assert!(
            matches!(
                jobs(&actions).as_slice(),
                [HistoryJob::Query {
                    query: Query::Status {
                        skipped: 3,
                        holding: false
                    },
                    ..
                }]
            ),
            "{actions:?}"
        );
    }
}
