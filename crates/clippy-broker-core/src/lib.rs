//! `clippy-broker-core`: the broker's request handling, a pure state machine.
//!
//! [`State`] owns the session table, the turn [`Registry`] and the [`RelayBuffer`]; it knows
//! connections only by [`ConnId`] and never touches a socket or a clock. Every input —
//! a connection opened, a decoded message, a frame that did not decode, a connection gone, a
//! delivery finished — returns the [`Action`]s the I/O layer must carry out: send a message,
//! close a connection, deliver to a sink, log a line, give a job to the history store. So every
//! rule of CONTRACTS/BROKER.md is unit-tested here without sockets, and the broker's event loop
//! (`bins/clippy-broker`, with mio) stays mechanical.
//!
//! Deliveries are actions rather than direct effects because their outcome is decided outside:
//! a file write can fail (and may block, so it runs off the event loop), and an injection fails
//! when the target wrapper's output queue is over its bound. The I/O layer reports the outcome
//! with [`State::delivery_finished`], which produces the reply. What history records is a
//! [`HistoryJob`] action: the store (SQLite) lives in the binary's history thread.
//!
//! The one thing the state machine reads itself is a session's spool, for reads and waits, and
//! only through [`SpoolFiles`] (`clippy_spool::DiskSpoolFiles` on disk, in-memory spools in the
//! tests). The crate depends on no I/O crate: no event loop, no SQLite, no X11.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use clippy_proto::{
    ErrorReason, EventRecord, Format as WireFormat, Message, PROTOCOL_VERSION, Payload, Progress,
    ProtoError, Role, SessionInfo, SessionSummary, TurnData, TurnMeta as WireTurnMeta,
};
use clippy_registry::{
    CLIPBOARD_SINK, FILE_SINK, Format, INJECT_SINK, Registry, RegistryConfig, RegistryError,
    RelayBuffer, SinkError, TurnId, TurnMeta, TurnRecord, inject_payload,
};

use clippy_config::{DEFAULT_EVENT_HISTORY, DEFAULT_SUBMIT_DELAY_MS};
use clippy_spool::DiskSpoolFiles;

mod answer;
mod events;
mod history;
mod hooks;
mod level;
mod lifecycle;
mod routing;
mod screen;
mod spool_ops;

pub use events::event_passes;
pub use history::{
    BATCH_MS as HISTORY_BATCH_MS, BATCH_WEIGHT as HISTORY_BATCH_WEIGHT, Batch as HistoryBatch,
    HOLD_AT, HistoryJob, MAX_BACKLOG, Query as HistoryQuery, RELEASE_AT, RESEND_BUDGET,
    RESEND_PATIENCE_MS, Record as HistoryRecord, backlog_problem as history_backlog_problem,
    weight as history_weight,
};
pub use level::Level;
pub use routing::DEFAULT_MAX_HOPS;

pub use clippy_spool::SpoolFiles;
pub use spool_ops::{DEFAULT_END_WAIT_MS, DEFAULT_WAIT_MS, MAX_READ_BYTES, MAX_WAIT_MS};

/// How many ended sessions are remembered, to say "it ended" (and how) rather than "never heard
/// of it".
const DEPARTED_MEMORY: usize = 1024;
/// How many candidates an ambiguity error lists.
const MAX_CANDIDATES: usize = 10;
/// How long a connection may take to send its `hello` (milliseconds): a connection still
/// silent then is closed (CONTRACTS/BROKER.md, "Connection rules").
pub const HELLO_TIMEOUT_MS: u64 = 5000;

/// A connection, as the I/O layer numbers them. Never reused within one broker run, so an action
/// for a connection that has gone cannot reach a newer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What the I/O layer must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Queue this message to this connection (if it is still there).
    Send(ConnId, Message),
    /// Close this connection after what is queued to it, and report it with
    /// [`State::connection_closed_at`].
    Close(ConnId),
    /// Carry out a delivery, then report its outcome with
    /// [`State::delivery_finished`]`(reply_to, reply_id, result, now_ms)`.
    Deliver {
        /// What to deliver where.
        delivery: Delivery,
        /// The connection that asked.
        reply_to: ConnId,
        /// The id of its request.
        reply_id: u32,
    },
    /// Queue this event to a subscriber, unless it is too far behind: then report it with
    /// [`State::subscriber_lagged`] instead.
    Publish(ConnId, Message),
    /// This subscriber has history to catch up on: feed it with [`State::replay`] as its queue
    /// drains, until [`State::is_replaying`] says it is done.
    Replay(ConnId),
    /// Write a log line.
    Log(Level, String),
    /// Give this to the history store's thread (in order: a query sees every record asked for
    /// before it).
    History(HistoryJob),
}

/// A delivery of the relay buffer to a sink.
// One lives per request, for as long as it takes to hand it to the I/O layer: the size of a
// `Message` (an `event` is its largest) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Queue `message` (an `inject`) to the target wrapper's connection `conn`. Fails with
    /// [`SinkError::InputBacklog`] when much is queued to it already (its program is not
    /// reading), and [`SinkError::SessionDisconnected`] when that connection is gone.
    Inject {
        /// The target wrapper's connection.
        conn: ConnId,
        /// The target session id.
        session: String,
        /// The `inject` message, payload ready (bracketed-paste markers added when needed).
        message: Message,
    },
    /// Write `format.select(&record)` to `path` with [`clippy_registry::FileSink`]. Blocking
    /// (it syncs), so the I/O layer runs it off its event loop.
    File {
        /// The target path, as the client gave it (the sink refuses relative paths).
        path: PathBuf,
        /// The captured turn (its bytes are shared, not copied).
        record: TurnRecord,
        /// Which view of it to write.
        format: Format,
    },
    /// Set the desktop clipboard to `format.select(&record)`. The I/O layer runs it on the
    /// thread that owns the clipboard (an X selection lives as long as its owner).
    Clipboard {
        /// The captured turn.
        record: TurnRecord,
        /// Which view of it to copy.
        format: Format,
    },
}

/// A refused request: the reason on the wire and a sentence for humans.
#[derive(Debug)]
struct Refusal {
    reason: ErrorReason,
    message: String,
}

fn refuse(reason: ErrorReason, message: impl Into<String>) -> Refusal {
    Refusal {
        reason,
        message: message.into(),
    }
}

/// What a request leads to when it is not refused.
enum Outcome {
    Reply(Message),
    Deliver(Delivery),
    /// A wait was parked: its reply comes when it is satisfied or times out. (Also: the reply
    /// is already among the actions, ahead of what it led to.)
    Parked,
}

/// A registered session.
#[derive(Debug)]
struct SessionEntry {
    info: SessionInfo,
    /// The wrapper connection that registered it; only it may report for the session.
    owner: ConnId,
    /// Its spool and mode, as the wrapper reports them.
    live: spool_ops::Live,
    /// The turns up to this seq were announced before this registration: its wrapper wrote
    /// them to a broker (an earlier one, restarted since) on an earlier connection
    /// (`progress.announced_turns` in `register`). Re-sent, they are stored and served but are
    /// no new completion: `turn.replayed`, not `turn.completed`, and no route hands them off.
    replayed_through: u64,
    /// Its wrapper keeps turns until acknowledged and sends them again when asked.
    resends: bool,
    /// Its summary as the last `sessions` reply gave it, and the seq of the latest turn it
    /// names: shared by the replies that follow until something in it changes.
    summary: Option<(Arc<SessionSummary>, Option<u64>)>,
}

impl SessionEntry {
    /// Its summary now: the one built last while it still holds (no allocation), else a new one.
    /// Building every summary afresh for every reply took 14 % of the broker's CPU under the
    /// soak, most of it in the allocator.
    fn summary(
        &mut self,
        session: &str,
        registry: &Registry,
        connected: bool,
    ) -> Arc<SessionSummary> {
        let turns = registry.list(session, None).map_or(0, |t| t.len());
        let turns = u32::try_from(turns).unwrap_or(u32::MAX);
        let latest = registry.latest(session).ok();
        let latest_seq = latest.map(|r| r.turn_id().seq());
        let (info, progress) = (&self.info, &self.live.progress);
        if let Some((cached, seq)) = &self.summary {
            let holds = *seq == latest_seq
                && cached.turns == turns
                && cached.connected == connected
                && cached.name == info.name
                && cached.pid == info.pid
                && cached.command == info.command
                && cached.preset == info.preset
                && cached.bracketed_paste == info.bracketed_paste
                && cached.waiting.as_deref() == progress.waiting.as_ref().map(|w| w.kind.as_str())
                && cached.waiting_id == progress.waiting.as_ref().map(|w| w.id)
                && cached.attached == progress.attached;
            if holds {
                return Arc::clone(cached);
            }
        }
        let summary = Arc::new(SessionSummary {
            session: session.to_owned(),
            name: info.name.clone(),
            pid: info.pid,
            command: info.command.clone(),
            preset: info.preset.clone(),
            connected,
            turns,
            last_turn_id: latest.map(|r| r.turn_id().to_string()),
            bracketed_paste: info.bracketed_paste,
            waiting: progress.waiting.as_ref().map(|w| w.kind.clone()),
            waiting_id: progress.waiting.as_ref().map(|w| w.id),
            attached: progress.attached,
        });
        self.summary = Some((Arc::clone(&summary), latest_seq));
        summary
    }
}

/// A live connection.
#[derive(Debug, Default)]
struct ConnEntry {
    /// `None` until `hello`.
    role: Option<Role>,
    /// Until `hello`: the time by which it must have come (a key of `State::hello_deadlines`).
    hello_deadline: Option<u64>,
    /// Sessions this connection registered.
    sessions: BTreeSet<String>,
}

/// The broker's state: sessions, their turns, the relay buffer, the live connections.
///
/// Fed connections, decoded messages and the time; answers with the [`Action`]s to carry out.
///
/// ```
/// use clippy_broker_core::{Action, ConnId, State};
/// use clippy_proto::{Message, PROTOCOL_VERSION, Role};
/// use clippy_registry::RegistryConfig;
///
/// // What is sent to `conn`, leaving out the log lines.
/// fn sent(actions: Vec<Action>, conn: ConnId) -> Vec<Message> {
///     actions
///         .into_iter()
///         .filter_map(|action| match action {
///             Action::Send(to, message) if to == conn => Some(message),
///             _ => None,
///         })
///         .collect()
/// }
///
/// let now = 1_700_000_000_000; // Unix milliseconds, passed in: the state has no clock.
/// let mut state = State::new(RegistryConfig { ring_depth: 8, max_turn_bytes: 4096 })?;
/// let client = ConnId(1);
/// state.connection_opened_at(client, true, now);
/// let hello = Message::Hello { id: 1, version: PROTOCOL_VERSION, role: Role::Client };
/// assert_eq!(
///     sent(state.handle(client, hello, now), client),
///     [Message::HelloAck { id: 1, version: PROTOCOL_VERSION }]
/// );
/// assert_eq!(
///     sent(state.handle(client, Message::ListSessions { id: 2 }, now), client),
///     [Message::Sessions { id: 2, sessions: Vec::new() }]
/// );
/// // A client that never says `hello` is closed once its deadline has passed.
/// let silent = ConnId(2);
/// state.connection_opened_at(silent, true, now);
/// let later = now + clippy_broker_core::HELLO_TIMEOUT_MS;
/// assert!(state.expire(later).contains(&Action::Close(silent)));
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
#[derive(Debug)]
pub struct State {
    registry: Registry,
    relay: RelayBuffer,
    sessions: BTreeMap<String, SessionEntry>,
    conns: HashMap<ConnId, ConnEntry>,
    /// Connections that have not said `hello` yet, by the time they must have said it.
    hello_deadlines: BTreeSet<(u64, ConnId)>,
    /// Ids of sessions that ended (oldest first), bounded by [`DEPARTED_MEMORY`].
    departed: VecDeque<String>,
    /// What is known of each of them: its registration, how far it got, how it ended.
    ended: HashMap<String, lifecycle::Ended>,
    /// Parked waits, by a key that grows (so iteration is in arrival order).
    waiters: BTreeMap<u64, spool_ops::Waiter>,
    /// Requests that wait for their session to register (or, for an `exec`, to show its first
    /// prompt), keyed as `waiters`.
    awaiting: BTreeMap<u64, lifecycle::Awaiting>,
    next_waiter: u64,
    /// Pattern waits with spool left to scan after a step's budget ran out.
    scan_queue: VecDeque<u64>,
    /// Reused buffer for spool reads.
    scratch: Vec<u8>,
    /// The regexes of recent waits, compiled once for the waits that repeat them.
    regexes: clippy_spool::RecentRegexes,
    spool_files: Box<dyn SpoolFiles>,
    /// Routes and approvals.
    routing: routing::Routing,
    /// Timers by deadline (Enters that submit text: handoffs, `send` with `enter`, `exec`).
    timers: BTreeMap<u64, Vec<routing::Timer>>,
    /// The event stream.
    events: events::EventLog,
    /// The latest time the I/O layer passed in: events are stamped with it.
    clock: u64,
    /// Pastes and deliveries in progress: (connection, request id) → (sink, target session).
    relay_deliveries: HashMap<(ConnId, u32), (String, Option<String>)>,
    /// `send`s with `enter` whose text is being handed to the wrapper: (connection, request
    /// id) → target session, to press Enter in once the text is written.
    enter_after: HashMap<(ConnId, u32), String>,
    /// Whether sessions, turns and events are recorded in the history store.
    history_on: bool,
    /// Why the history store asked for could not be opened.
    history_problem: Option<String>,
    /// Sessions whose turns must never reach the disk (`--no-history`).
    unrecorded: HashSet<String>,
    /// The records on their way to the store, and the turns held while it is behind.
    backlog: history::Backlog,
}

impl State {
    /// An empty broker state.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidConfig`] when `config` is out of range.
    pub fn new(config: RegistryConfig) -> Result<State, RegistryError> {
        Self::with_spool_files(config, Box::new(DiskSpoolFiles::default()))
    }

    /// An empty broker state that reads spools through `spool_files`.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidConfig`] when `config` is out of range.
    pub fn with_spool_files(
        config: RegistryConfig,
        spool_files: Box<dyn SpoolFiles>,
    ) -> Result<State, RegistryError> {
        Ok(State {
            registry: Registry::new(config)?,
            relay: RelayBuffer::new(),
            sessions: BTreeMap::new(),
            conns: HashMap::new(),
            hello_deadlines: BTreeSet::new(),
            departed: VecDeque::new(),
            ended: HashMap::new(),
            waiters: BTreeMap::new(),
            awaiting: BTreeMap::new(),
            next_waiter: 1,
            scan_queue: VecDeque::new(),
            scratch: Vec::new(),
            regexes: clippy_spool::RecentRegexes::default(),
            spool_files,
            routing: routing::Routing::new(DEFAULT_SUBMIT_DELAY_MS),
            timers: BTreeMap::new(),
            events: events::EventLog::new(DEFAULT_EVENT_HISTORY),
            clock: 0,
            relay_deliveries: HashMap::new(),
            enter_after: HashMap::new(),
            history_on: false,
            history_problem: None,
            unrecorded: HashSet::new(),
            backlog: history::Backlog::default(),
        })
    }

    /// Sets the pause between text and the Enter that submits it, and how many events are kept for
    /// late subscribers.
    pub fn set_routing_options(&mut self, submit_delay_ms: u64, event_history: usize) {
        self.routing.submit_delay_ms = submit_delay_ms;
        self.events = events::EventLog::new(event_history);
    }

    /// The registry configuration in force.
    #[must_use]
    pub fn config(&self) -> &RegistryConfig {
        self.registry.config()
    }

    /// Number of registered sessions.
    #[must_use]
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// A connection was accepted at `now_ms` (Unix milliseconds). `peer_uid_ok`: its
    /// SO_PEERCRED uid is the broker's. A peer of another user is closed at once, without a
    /// reply (it learns nothing about the sessions). One that has not said `hello` within
    /// [`HELLO_TIMEOUT_MS`] is closed by [`State::expire`].
    pub fn connection_opened_at(
        &mut self,
        conn: ConnId,
        peer_uid_ok: bool,
        now_ms: u64,
    ) -> Vec<Action> {
        self.clock = self.clock.max(now_ms);
        if !peer_uid_ok {
            return vec![Action::Close(conn)];
        }
        let deadline = now_ms.saturating_add(HELLO_TIMEOUT_MS);
        self.hello_deadlines.insert((deadline, conn));
        self.conns.insert(
            conn,
            ConnEntry {
                hello_deadline: Some(deadline),
                ..ConnEntry::default()
            },
        );
        vec![Action::Log(
            Level::Debug,
            format!("connection {conn} opened"),
        )]
    }

    /// A connection was accepted, at the latest time passed in: see
    /// [`State::connection_opened_at`], which the event loop calls with the time it is now.
    pub fn connection_opened(&mut self, conn: ConnId, peer_uid_ok: bool) -> Vec<Action> {
        self.connection_opened_at(conn, peer_uid_ok, self.clock)
    }

    /// A connection is gone at `now_ms` (Unix milliseconds, stamping the `session.exited`
    /// events it causes): see [`State::connection_closed`].
    pub fn connection_closed_at(&mut self, conn: ConnId, now_ms: u64) -> Vec<Action> {
        self.clock = self.clock.max(now_ms);
        self.connection_closed(conn)
    }

    /// A connection is gone (the peer closed it, it failed, or the broker closed it). Its
    /// sessions are deregistered implicitly: removed from the table and the registry, their
    /// turns with them. The relay buffer keeps its copy. Idempotent.
    ///
    /// Its events are stamped with the latest time passed in, which may be long ago on an idle
    /// broker: the event loop calls [`State::connection_closed_at`] with the time it is now.
    pub fn connection_closed(&mut self, conn: ConnId) -> Vec<Action> {
        let Some(entry) = self.conns.remove(&conn) else {
            return Vec::new();
        };
        if let Some(deadline) = entry.hello_deadline {
            self.hello_deadlines.remove(&(deadline, conn));
        }
        let mut out = vec![Action::Log(
            Level::Debug,
            format!("connection {conn} closed"),
        )];
        self.cancel_waiters_of(conn);
        self.events.unsubscribe(conn);
        for session in entry.sessions {
            self.remove_session(&session, lifecycle::ExitReport::default(), &mut out);
            out.push(Action::Log(
                Level::Info,
                format!("session {session} gone: its wrapper's connection {conn} closed"),
            ));
        }
        out
    }

    /// A frame from `conn` did not decode. Unknown types and missing fields are answered and the
    /// connection stays (after `hello`); an oversize or malformed frame, after which the stream
    /// cannot be trusted, is answered with id 0 and the connection closed.
    pub fn decode_failed(&mut self, conn: ConnId, error: &ProtoError) -> Vec<Action> {
        let Some(entry) = self.conns.get(&conn) else {
            return Vec::new();
        };
        let greeted = entry.role.is_some();
        let send =
            |id, reason, message: String| Action::Send(conn, Message::error(id, reason, message));
        match error {
            ProtoError::UnknownType { id, kind } if greeted => vec![send(
                *id,
                ErrorReason::UnknownType,
                format!("unknown message type {kind:?}"),
            )],
            ProtoError::UnknownType { id, kind } => vec![
                send(
                    *id,
                    ErrorReason::NotAllowed,
                    format!("the first message must be hello, not {kind:?}; closing"),
                ),
                Action::Close(conn),
            ],
            ProtoError::MissingField { id, kind, detail } if greeted => vec![send(
                *id,
                ErrorReason::MissingField,
                format!("{kind}: a field is missing or has the wrong type: {detail}"),
            )],
            ProtoError::MissingField { id, kind, detail } => vec![
                send(
                    *id,
                    if kind == "hello" {
                        ErrorReason::MissingField
                    } else {
                        ErrorReason::NotAllowed
                    },
                    format!("the first message must be a valid hello ({kind}: {detail}); closing"),
                ),
                Action::Close(conn),
            ],
            ProtoError::FrameTooLarge { len, max } => vec![
                send(
                    0,
                    ErrorReason::PayloadTooLarge,
                    format!("frame of {len} bytes announced, the limit is {max}; closing"),
                ),
                Action::Close(conn),
                Action::Log(
                    Level::Warn,
                    format!("connection {conn}: frame of {len} bytes over the limit; closed"),
                ),
            ],
            ProtoError::Malformed(detail) => vec![
                send(
                    0,
                    ErrorReason::MissingField,
                    format!("malformed frame ({detail}); closing"),
                ),
                Action::Close(conn),
                Action::Log(
                    Level::Warn,
                    format!("connection {conn}: malformed frame ({detail}); closed"),
                ),
            ],
            other => vec![
                Action::Close(conn),
                Action::Log(Level::Warn, format!("connection {conn}: {other}; closed")),
            ],
        }
    }

    /// A delivery asked for with [`Action::Deliver`] finished at `now_ms` (Unix milliseconds,
    /// stamping its `relay.delivered` event: a file write may end long after the request);
    /// produces the reply to the request — for a `send` with `enter`, the Enter is scheduled
    /// instead, and the reply comes when it is written ([`State::expire`]).
    pub fn delivery_finished(
        &mut self,
        reply_to: ConnId,
        reply_id: u32,
        result: Result<(), SinkError>,
        now_ms: u64,
    ) -> Vec<Action> {
        self.clock = self.clock.max(now_ms);
        let relay = self.relay_deliveries.remove(&(reply_to, reply_id));
        // A `send` with `enter`: its text is written, its Enter follows on its own after the
        // submit delay (even when its client has gone: the text asked for it), and the reply
        // with it.
        if let Some(session) = self.enter_after.remove(&(reply_to, reply_id))
            && result.is_ok()
        {
            self.submit_later(&session, Some((reply_to, reply_id)));
            return Vec::new();
        }
        if !self.conns.contains_key(&reply_to) {
            return Vec::new();
        }
        let mut out = Vec::new();
        if let (Ok(()), Some((sink, to))) = (&result, relay) {
            let record = EventRecord {
                kind: "relay.delivered".into(),
                turn_id: self.relay.turn_id().map(ToString::to_string),
                to,
                reason: Some(sink),
                ..EventRecord::default()
            };
            self.emit(record, &mut out);
        }
        let reply = match result {
            Ok(()) => Message::Done { id: reply_id },
            Err(SinkError::SessionDisconnected { session }) => Message::error(
                reply_id,
                ErrorReason::SessionDisconnected,
                format!(
                    "session {session}'s wrapper could not take the paste (it disconnected, or stopped reading)"
                ),
            ),
            Err(SinkError::SessionNotFound { session }) => Message::error(
                reply_id,
                ErrorReason::SessionNotFound,
                format!("no session {session}"),
            ),
            Err(error @ SinkError::InputBacklog { .. }) => {
                Message::error(reply_id, ErrorReason::Busy, error.to_string())
            }
            Err(error) => Message::error(reply_id, ErrorReason::SinkFailed, error.to_string()),
        };
        out.push(Action::Send(reply_to, reply));
        out
    }

    /// Handles one message from `conn`. `now_ms` (Unix milliseconds) stamps a turn whose
    /// wrapper sent timestamp 0.
    pub fn handle(&mut self, conn: ConnId, msg: Message, now_ms: u64) -> Vec<Action> {
        let Some(entry) = self.conns.get(&conn) else {
            return Vec::new();
        };
        self.clock = self.clock.max(now_ms);
        let Some(role) = entry.role else {
            return self.first_message(conn, msg);
        };
        let id = msg.id();
        // Pastes and deliveries of the relay buffer are events once they are done.
        let relay_sink = match &msg {
            Message::Paste { .. } => Some(INJECT_SINK.to_owned()),
            Message::Deliver { sink, .. } => Some(sink.clone()),
            _ => None,
        };
        let mut out = Vec::new();
        let result = self.dispatch(conn, role, msg, now_ms, &mut out);
        out.push(match result {
            Ok(Outcome::Reply(reply)) => Action::Send(conn, reply),
            Ok(Outcome::Deliver(delivery)) => {
                if let Some(sink) = relay_sink {
                    // The target as resolved (an id), not as the request named it; the file
                    // and clipboard sinks have no target session.
                    let to = match &delivery {
                        Delivery::Inject { session, .. } => Some(session.clone()),
                        Delivery::File { .. } | Delivery::Clipboard { .. } => None,
                    };
                    self.relay_deliveries.insert((conn, id), (sink, to));
                }
                Action::Deliver {
                    delivery,
                    reply_to: conn,
                    reply_id: id,
                }
            }
            Ok(Outcome::Parked) => return out,
            Err(refusal) => Action::Send(conn, Message::error(id, refusal.reason, refusal.message)),
        });
        out
    }

    /// When the next connection that has not said `hello` is due.
    fn next_hello_deadline(&self) -> Option<u64> {
        self.hello_deadlines.first().map(|&(deadline, _)| deadline)
    }

    /// The connections whose hello deadline has passed by `now_ms`: the server reads what each
    /// has sent before calling [`State::expire`], so a hello that waits unread in the socket (a
    /// broker that was behind, not a silent peer) is taken, not closed.
    pub fn hellos_due(&self, now_ms: u64) -> Vec<ConnId> {
        self.hello_deadlines
            .iter()
            .take_while(|&&(deadline, _)| deadline <= now_ms)
            .map(|&(_, conn)| conn)
            .collect()
    }

    /// Closes the connections still silent at their hello deadline.
    fn expire_hellos(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        while let Some(&(deadline, conn)) = self.hello_deadlines.first() {
            if deadline > now_ms {
                break;
            }
            self.hello_deadlines.pop_first();
            if let Some(entry) = self.conns.get_mut(&conn) {
                entry.hello_deadline = None;
            }
            out.push(Action::Log(
                Level::Info,
                format!("connection {conn}: no hello within {HELLO_TIMEOUT_MS} ms; closing"),
            ));
            out.push(Action::Close(conn));
        }
    }

    fn first_message(&mut self, conn: ConnId, msg: Message) -> Vec<Action> {
        match msg {
            Message::Hello { id, version, role } if version == PROTOCOL_VERSION => {
                if let Some(entry) = self.conns.get_mut(&conn) {
                    entry.role = Some(role);
                    if let Some(deadline) = entry.hello_deadline.take() {
                        self.hello_deadlines.remove(&(deadline, conn));
                    }
                }
                vec![
                    Action::Log(
                        Level::Debug,
                        format!("connection {conn}: hello as {role:?}"),
                    ),
                    Action::Send(
                        conn,
                        Message::HelloAck {
                            id,
                            version: PROTOCOL_VERSION,
                        },
                    ),
                ]
            }
            Message::Hello { id, version, .. } => vec![
                Action::Send(
                    conn,
                    Message::error(
                        id,
                        ErrorReason::VersionMismatch,
                        format!(
                            "protocol version {version} is not supported; this broker speaks {PROTOCOL_VERSION}"
                        ),
                    ),
                ),
                Action::Close(conn),
            ],
            other => vec![
                Action::Send(
                    conn,
                    Message::error(
                        other.id(),
                        ErrorReason::NotAllowed,
                        format!(
                            "the first message must be hello, not {}; closing",
                            other.kind()
                        ),
                    ),
                ),
                Action::Close(conn),
            ],
        }
    }

    fn dispatch(
        &mut self,
        conn: ConnId,
        role: Role,
        msg: Message,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let wrapper_only = matches!(
            msg,
            Message::Register { .. }
                | Message::Deregister { .. }
                | Message::TurnCompleted { .. }
                | Message::BracketedPaste { .. }
                | Message::Progress { .. }
                | Message::ScreenReport { .. }
                | Message::AnswerReport { .. }
        );
        if wrapper_only && role != Role::Wrapper {
            return Err(refuse(
                ErrorReason::NotAllowed,
                format!(
                    "{} is for wrappers; this connection said hello as a client",
                    msg.kind()
                ),
            ));
        }
        match msg {
            Message::Hello { .. } => Err(refuse(
                ErrorReason::NotAllowed,
                "hello was already said on this connection",
            )),
            Message::Register {
                id,
                session,
                progress,
                resends,
            } => self.register(conn, id, session, progress, resends, out),
            Message::Deregister {
                id,
                session,
                exit_code,
                signal,
            } => {
                let exit = lifecycle::ExitReport { exit_code, signal };
                self.deregister(conn, id, &session, exit, out)
            }
            Message::TurnCompleted { id, session, turn } => {
                self.turn_completed(conn, id, &session, turn, now_ms, out)
            }
            Message::BracketedPaste {
                id,
                session,
                enabled,
            } => {
                self.owned(conn, &session)?.info.bracketed_paste = enabled;
                Ok(Outcome::Reply(Message::Done { id }))
            }
            Message::Capture { id, session } => {
                let session = self.resolve(&session)?;
                let record = self.latest(&session)?.clone();
                Ok(Outcome::Reply(self.capture(id, &record, out)))
            }
            Message::CaptureById { id, turn_id } => {
                let turn_id = self.resolve_turn_id(&turn_id)?;
                let record = self.get_turn_record(&turn_id)?.clone();
                Ok(Outcome::Reply(self.capture(id, &record, out)))
            }
            Message::Paste {
                session, format, ..
            } => self.inject(&session, format),
            Message::Deliver {
                sink,
                session,
                path,
                format,
                ..
            } => self.deliver(&sink, session, path, format),
            Message::ListSessions { id } => Ok(Outcome::Reply(Message::Sessions {
                id,
                sessions: self.summaries(),
            })),
            Message::ListTurns { id, session, limit } => {
                let session = self.resolve(&session)?;
                let limit = limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
                let turns = self
                    .registry
                    .list(&session, limit)
                    .map_err(|e| refuse(ErrorReason::SessionNotFound, e.to_string()))?
                    .map(|record| wire_meta(record.meta()))
                    .collect();
                Ok(Outcome::Reply(Message::Turns { id, turns }))
            }
            Message::GetTurn {
                id,
                turn_id,
                format,
            } => {
                // What the store is asked when memory has no such turn: what the argument
                // names among the live sessions, when it names one — a name that a live
                // session has is that session, never an ended namesake, even before the live
                // one has a turn (`no_turn`).
                let (found, which) = if turn_id.parse::<TurnId>().is_ok() {
                    match self.resolve_turn_id(&turn_id) {
                        Ok(resolved) => (self.get_turn_record(&resolved), resolved.to_string()),
                        Err(refusal) => (Err(refusal), turn_id),
                    }
                } else {
                    match self.resolve(&turn_id) {
                        Ok(session) => (self.latest(&session), session),
                        Err(refusal) => (Err(refusal), turn_id),
                    }
                };
                let record = match found {
                    Ok(record) => record,
                    // Not in memory: a turn of an ended session, or evicted from its ring.
                    Err(refusal) => {
                        return self.stored_turn(conn, id, which, format, refusal, out);
                    }
                };
                // Exact: a reader who asks for the agent's own message and gets the screen's
                // text instead could not tell them apart. Relaying falls back instead.
                // Shared with the ring, not copied: the reply is written from where it lies.
                let content = match format_of(format) {
                    Format::Raw => Payload::from(Arc::clone(record.content_arc())),
                    Format::Text => Payload::from(Arc::clone(record.text_arc())),
                    Format::Message => Payload::from(Arc::clone(
                        record.message_arc().ok_or_else(|| no_message(record))?,
                    )),
                };
                Ok(Outcome::Reply(Message::Turn {
                    id,
                    turn: wire_meta(record.meta()),
                    content,
                }))
            }
            Message::Progress {
                id,
                session,
                progress,
            } => self.progress(conn, id, &session, progress, out),
            Message::Read {
                id,
                session,
                from_cursor,
                max_bytes,
            } => self.read(id, &session, from_cursor, max_bytes),
            request @ (Message::WaitFor { .. }
            | Message::WaitPrompt { .. }
            | Message::ExpectSend { .. }
            | Message::Exec { .. }) => self.session_request(conn, request, now_ms, out),
            Message::Send {
                id,
                session,
                data,
                enter,
            } => self.send(conn, id, &session, data, enter),
            Message::SessionStatus { id, session } => self.session_status(id, &session),
            Message::EndSession {
                id,
                session,
                force,
                timeout_ms,
            } => self.end_session(conn, id, &session, force, timeout_ms, now_ms, out),
            Message::Screen {
                id,
                session,
                history,
                timeout_ms,
            } => self.screen(conn, id, &session, history, timeout_ms, now_ms, out),
            Message::ScreenReport {
                id,
                session,
                request,
                screen,
            } => self.screen_report(conn, id, &session, request, screen, out),
            Message::Answer {
                id,
                session,
                decision,
                reason,
                waiting_id,
                by,
            } => self.answer(
                conn,
                id,
                answer::AnswerAsked {
                    session,
                    decision,
                    reason,
                    waiting_id,
                    by,
                },
                now_ms,
                out,
            ),
            Message::AnswerReport {
                id,
                session,
                request,
                waiting_id,
                refused,
                message,
            } => self.answer_report(
                conn, id, &session, request, waiting_id, refused, message, out,
            ),
            Message::RouteAdd { id, route } => self.route_add(id, route, out),
            Message::RouteList { id } => Ok(self.route_list(id)),
            Message::RouteRemove { id, route } => self.route_remove(id, &route, out),
            Message::RoutePause { id, route } => self.route_pause(id, &route, true, out),
            Message::RouteResume { id, route } => self.route_pause(id, &route, false, out),
            Message::Inbox { id, session } => self.inbox(id, &session),
            Message::Approve { id, approval, text } => {
                self.resolve_approval(id, &approval, true, text, out)
            }
            Message::Deny { id, approval } => {
                self.resolve_approval(id, &approval, false, None, out)
            }
            Message::ListEvents { id, since, types } => {
                if let Some(parked) = self.stored_events(conn, id, since, &types, out) {
                    return Ok(parked);
                }
                Ok(Outcome::Reply(Message::Events {
                    id,
                    events: self.list_events(since, &types),
                }))
            }
            Message::Subscribe { id, since, types } => {
                self.subscribe(conn, id, since, types, out);
                Ok(Outcome::Parked)
            }
            request @ (Message::History { .. }
            | Message::Search { .. }
            | Message::ForgetHistory { .. }
            | Message::HistoryStatus { .. }) => self.history_request(conn, request, out),
            reply @ (Message::HelloAck { .. }
            | Message::Done { .. }
            | Message::TurnRecorded { .. }
            | Message::Captured { .. }
            | Message::Sessions { .. }
            | Message::Turn { .. }
            | Message::Turns { .. }
            | Message::SpoolData { .. }
            | Message::Matched { .. }
            | Message::Status { .. }
            | Message::ExecResult { .. }
            | Message::SessionEnded { .. }
            | Message::ScreenSnapshot { .. }
            | Message::Answered { .. }
            | Message::Route { .. }
            | Message::Routes { .. }
            | Message::InboxItems { .. }
            | Message::Events { .. }
            | Message::Subscribed { .. }
            | Message::HistoryTurns { .. }
            | Message::SearchHits { .. }
            | Message::Forgotten { .. }
            | Message::HistoryState { .. }
            | Message::Event { .. }
            | Message::Error { .. }
            | Message::Inject { .. }
            | Message::Terminate { .. }
            | Message::ScreenRequest { .. }
            | Message::AnswerRequest { .. }
            | Message::ResendTurns { .. }) => Err(refuse(
                ErrorReason::NotAllowed,
                format!("{} is sent by the broker, not to it", reply.kind()),
            )),
        }
    }

    fn register(
        &mut self,
        conn: ConnId,
        id: u32,
        info: SessionInfo,
        progress: Option<Progress>,
        resends: bool,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let session = info.session.clone();
        if let Some(existing) = self.sessions.get_mut(&session) {
            if existing.owner != conn && self.conns.contains_key(&existing.owner) {
                return Err(refuse(
                    ErrorReason::DuplicateSession,
                    format!(
                        "session {session} is registered by another live connection ({})",
                        existing.owner
                    ),
                ));
            }
            // The same connection again, or a taker-over of a session whose connection is gone:
            // accepted, and the turns stay.
            let previous = existing.owner;
            existing.owner = conn;
            existing.info = info;
            existing.resends = resends;
            if let Some(entry) = self.conns.get_mut(&previous) {
                entry.sessions.remove(&session);
            }
        } else {
            if !self.registry.has_session(&session) {
                self.registry
                    .add_session(&session)
                    .map_err(|e| refuse(ErrorReason::MissingField, format!("register: {e}")))?;
            }
            let record = EventRecord {
                kind: "session.registered".into(),
                session: Some(session.clone()),
                name: info.name.clone(),
                message: Some(format!("pid {}, {}", info.pid, info.command.join(" "))),
                ..EventRecord::default()
            };
            if info.no_history {
                self.unrecorded.insert(session.clone());
            }
            self.record(
                history::Record::Session {
                    session: session.clone(),
                    name: info.name.clone(),
                    command: info.command.clone(),
                    cwd: info.cwd.clone(),
                    started_at: self.clock,
                },
                out,
            );
            self.sessions.insert(
                session.clone(),
                SessionEntry {
                    info,
                    owner: conn,
                    live: spool_ops::Live::default(),
                    replayed_through: 0,
                    resends,
                    summary: None,
                },
            );
            self.emit(record, out);
        }
        if self.ended.remove(&session).is_some() {
            self.departed.retain(|s| s != &session);
        }
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.sessions.insert(session.clone());
        }
        // The turns the wrapper already wrote to a broker: re-sent now, they are no new ones.
        if let Some(entry) = self.sessions.get_mut(&session) {
            entry.replayed_through = progress.as_ref().map_or(0, |p| p.announced_turns);
        }
        let Some(entry) = self.sessions.get(&session) else {
            return Ok(Outcome::Reply(Message::Done { id }));
        };
        let name = entry
            .info
            .name
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        out.push(Action::Log(
            Level::Info,
            format!(
                "session {session}{name} registered by connection {conn}: pid {}, {:?}",
                entry.info.pid, entry.info.command
            ),
        ));
        if let Some(progress) = progress {
            self.progress(conn, id, &session, progress, out)?;
        }
        // The wrapper hears that it is registered before the commands its registration
        // releases: requests that were waiting for this session to register go on now (an
        // `exec` at an idle prompt injects at once).
        out.push(Action::Send(conn, Message::Done { id }));
        self.session_registered(&session, out);
        Ok(Outcome::Parked)
    }

    fn deregister(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        exit: lifecycle::ExitReport,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        self.owned(conn, session)?;
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.sessions.remove(session);
        }
        let how = exit.describe();
        self.remove_session(session, exit, out);
        out.push(Action::Log(
            Level::Info,
            format!("session {session} deregistered: {how}"),
        ));
        Ok(Outcome::Reply(Message::Done { id }))
    }

    fn turn_completed(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        turn: TurnData,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        self.owned(conn, session)?;
        let turn_id = TurnId::new(session, turn.seq)
            .map_err(|e| refuse(ErrorReason::MissingField, format!("turn_completed: {e}")))?;
        let timestamp = if turn.timestamp == 0 {
            now_ms
        } else {
            turn.timestamp
        };
        let mut record = TurnRecord::new(turn_id, timestamp, turn.content, turn.text)
            .with_interrupted(turn.interrupted)
            .with_truncated(turn.truncated);
        if let Some(code) = turn.exit_code {
            record = record.with_exit_code(code);
        }
        if let Some(cwd) = turn.cwd {
            record = record.with_cwd(cwd);
        }
        if let Some(input) = turn.input {
            record = record.with_input(input);
        }
        if let Some((start, end)) = turn.spool_span {
            record = record.with_spool_span(start, end);
        }
        if let Some(message) = turn.message {
            record = record.with_message(message);
        }
        // A copy (its bytes shared) in case it is a turn sent again that must be stored.
        let again = self.store_again(session, turn.seq).then(|| record.clone());
        self.turn_came(session, turn.seq);
        let outcome = self
            .registry
            .insert(record)
            .map_err(|e| refuse(ErrorReason::SessionNotFound, e.to_string()))?;
        let reply = Message::TurnRecorded {
            id,
            turn_id: outcome.turn_id().to_string(),
        };
        if !outcome.is_stored() {
            // Sent again: stored if it may have been held, else acknowledged behind the store's
            // queue (its first copy may not be committed yet).
            match again {
                Some(mut record) => {
                    record.truncate_to(self.registry.config().max_turn_bytes);
                    self.record(
                        history::Record::Turn {
                            record,
                            ack: Some((conn, reply)),
                        },
                        out,
                    );
                }
                None => self.acknowledge_again(conn, reply, out),
            }
            return Ok(Outcome::Parked);
        }
        if outcome.is_stored()
            && let Ok(stored) = self.registry.get(outcome.turn_id()).cloned()
        {
            // Acknowledged to the wrapper once it is in the store: a turn the broker loses
            // before that (a crash) is one the wrapper still holds and sends again.
            self.record(
                history::Record::Turn {
                    record: stored.clone(),
                    ack: Some((conn, reply)),
                },
                out,
            );
            let entry = self.sessions.get(session);
            let name = entry.and_then(|e| e.info.name.clone());
            let replayed = entry.is_some_and(|e| stored.turn_id().seq() <= e.replayed_through);
            self.emit(
                EventRecord {
                    kind: if replayed {
                        "turn.replayed"
                    } else {
                        "turn.completed"
                    }
                    .into(),
                    session: Some(session.to_owned()),
                    name,
                    turn_id: Some(stored.turn_id().to_string()),
                    byte_length: Some(stored.meta().byte_length),
                    ..EventRecord::default()
                },
                out,
            );
            if !replayed {
                self.route_turn(&stored, out);
            }
            // An `exec` or a handoff into this session may have been waiting for this turn.
            self.wake(session, out);
            self.pump_inbox(session, out);
            return Ok(Outcome::Parked);
        }
        Ok(Outcome::Reply(reply))
    }

    fn capture(&mut self, id: u32, record: &TurnRecord, out: &mut Vec<Action>) -> Message {
        self.relay.capture(record);
        self.emit(
            EventRecord {
                kind: "relay.captured".into(),
                session: Some(record.turn_id().session().to_owned()),
                turn_id: Some(record.turn_id().to_string()),
                byte_length: Some(record.meta().byte_length),
                ..EventRecord::default()
            },
            out,
        );
        Message::Captured {
            id,
            turn_id: record.turn_id().to_string(),
            byte_length: record.meta().byte_length,
        }
    }

    /// `paste`, and `deliver` to the inject sink.
    fn inject(&self, target: &str, format: WireFormat) -> Result<Outcome, Refusal> {
        let record = self.captured()?;
        let session = self.resolve(target).map_err(|refusal| {
            if self.ended.contains_key(target) {
                refuse(
                    ErrorReason::SessionDisconnected,
                    format!("session {target} has ended: its wrapper disconnected or deregistered"),
                )
            } else {
                refusal
            }
        })?;
        let conn = self.input_target(&session)?;
        let bracketed = self
            .sessions
            .get(&session)
            .is_some_and(|entry| entry.info.bracketed_paste);
        // A message the turn does not have falls back to its text view: relaying never fails
        // because an agent has no hooks.
        let data = inject_payload(format_of(format).select(record), bracketed);
        Ok(Outcome::Deliver(Delivery::Inject {
            conn,
            session: session.clone(),
            message: Message::Inject {
                id: 0,
                session,
                data,
            },
        }))
    }

    fn deliver(
        &self,
        sink: &str,
        session: Option<String>,
        path: Option<String>,
        format: WireFormat,
    ) -> Result<Outcome, Refusal> {
        match sink {
            INJECT_SINK => {
                let session = session.ok_or_else(|| {
                    refuse(
                        ErrorReason::MissingField,
                        "deliver to the inject sink needs `session`",
                    )
                })?;
                self.inject(&session, format)
            }
            FILE_SINK => {
                let path = path.ok_or_else(|| {
                    refuse(
                        ErrorReason::MissingField,
                        "deliver to the file sink needs `path`",
                    )
                })?;
                let record = self.captured()?.clone();
                Ok(Outcome::Deliver(Delivery::File {
                    path: PathBuf::from(path),
                    record,
                    format: format_of(format),
                }))
            }
            CLIPBOARD_SINK => Ok(Outcome::Deliver(Delivery::Clipboard {
                record: self.captured()?.clone(),
                format: format_of(format),
            })),
            other => Err(refuse(
                ErrorReason::SinkFailed,
                format!("unknown sink {other:?}: expected inject, file or clipboard"),
            )),
        }
    }

    fn captured(&self) -> Result<&TurnRecord, Refusal> {
        self.relay.get().ok_or_else(|| {
            refuse(
                ErrorReason::BufferEmpty,
                "the relay buffer is empty: capture a turn first",
            )
        })
    }

    fn latest(&self, session: &str) -> Result<&TurnRecord, Refusal> {
        self.registry.latest(session).map_err(|_| {
            refuse(
                ErrorReason::NoTurn,
                format!("session {session} has no completed turn yet"),
            )
        })
    }

    fn get_turn_record(&self, turn_id: &TurnId) -> Result<&TurnRecord, Refusal> {
        self.registry.get(turn_id).map_err(|_| {
            refuse(
                ErrorReason::TurnNotFound,
                format!(
                    "turn {turn_id} is not held (evicted, its session ended, or it never existed)"
                ),
            )
        })
    }

    /// One summary per live session, for a `sessions` reply.
    fn summaries(&mut self) -> Vec<Arc<SessionSummary>> {
        let (registry, conns) = (&self.registry, &self.conns);
        self.sessions
            .iter_mut()
            .map(|(session, entry)| {
                let connected = conns.contains_key(&entry.owner);
                entry.summary(session, registry, connected)
            })
            .collect()
    }

    /// The session `session`, which `conn` must have registered.
    fn owned(&mut self, conn: ConnId, session: &str) -> Result<&mut SessionEntry, Refusal> {
        match self.sessions.get_mut(session) {
            Some(entry) if entry.owner == conn => Ok(entry),
            _ => Err(refuse(
                ErrorReason::SessionNotFound,
                format!("session {session} is not registered on this connection"),
            )),
        }
    }

    /// Resolves a session argument: the exact id, else an exact name, else a unique id prefix.
    fn resolve(&self, arg: &str) -> Result<String, Refusal> {
        match self.lookup(arg) {
            lifecycle::Lookup::Found(session) => Ok(session),
            lifecycle::Lookup::Missing(refusal)
            | lifecycle::Lookup::Ended(refusal)
            | lifecycle::Lookup::Ambiguous(refusal) => Err(refusal),
        }
    }

    /// What a session argument names among the live sessions: the exact id, else an exact
    /// name, else a unique id prefix; or why none.
    fn lookup(&self, arg: &str) -> lifecycle::Lookup {
        use lifecycle::Lookup;
        if self.sessions.contains_key(arg) {
            return Lookup::Found(arg.to_owned());
        }
        let named: Vec<&String> = self
            .sessions
            .iter()
            .filter(|(_, e)| e.info.name.as_deref() == Some(arg))
            .map(|(id, _)| id)
            .collect();
        match named.as_slice() {
            [one] => return Lookup::Found((*one).clone()),
            [] => {}
            several => return Lookup::Ambiguous(self.ambiguous(arg, "are named", several)),
        }
        let prefixed: Vec<&String> = if arg.is_empty() {
            Vec::new()
        } else {
            self.sessions
                .range::<str, _>((std::ops::Bound::Included(arg), std::ops::Bound::Unbounded))
                .take_while(|(id, _)| id.starts_with(arg))
                .map(|(id, _)| id)
                .collect()
        };
        match prefixed.as_slice() {
            [one] => Lookup::Found((*one).clone()),
            [] if self.ended.contains_key(arg) => Lookup::Ended(refuse(
                ErrorReason::SessionNotFound,
                format!("session {arg} has ended: its wrapper disconnected or deregistered"),
            )),
            [] => Lookup::Missing(refuse(
                ErrorReason::SessionNotFound,
                format!("no session has the id, name or id prefix {arg:?}"),
            )),
            several => Lookup::Ambiguous(self.ambiguous(arg, "start with", several)),
        }
    }

    fn ambiguous(&self, arg: &str, how: &str, ids: &[&String]) -> Refusal {
        let mut listed: Vec<String> = ids
            .iter()
            .take(MAX_CANDIDATES)
            .map(
                |id| match self.sessions.get(*id).and_then(|e| e.info.name.as_deref()) {
                    Some(name) => format!("{id} ({name})"),
                    None => (*id).clone(),
                },
            )
            .collect();
        if ids.len() > MAX_CANDIDATES {
            listed.push(format!("and {} more", ids.len() - MAX_CANDIDATES));
        }
        refuse(
            ErrorReason::SessionNotFound,
            format!(
                "{} sessions {how} {arg:?}: {}; give the full id",
                ids.len(),
                listed.join(", ")
            ),
        )
    }

    /// Resolves `<session>:<seq>`, where the session part may be an id, name or id prefix.
    fn resolve_turn_id(&self, arg: &str) -> Result<TurnId, Refusal> {
        let parsed: TurnId = arg
            .parse()
            .map_err(|e: RegistryError| refuse(ErrorReason::TurnNotFound, e.to_string()))?;
        if self.sessions.contains_key(parsed.session()) {
            return Ok(parsed);
        }
        let session = self.resolve(parsed.session()).map_err(|r| {
            refuse(
                ErrorReason::TurnNotFound,
                format!("turn {arg} is not held: {}", r.message),
            )
        })?;
        TurnId::new(session, parsed.seq())
            .map_err(|e| refuse(ErrorReason::TurnNotFound, e.to_string()))
    }

    /// Removes a session that ended (`exit`: how its command ended, when its wrapper said),
    /// fails what waits on it, and remembers it among the ended sessions.
    fn remove_session(
        &mut self,
        session: &str,
        exit: lifecycle::ExitReport,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.sessions.remove(session) else {
            return;
        };
        self.fail_waiters_of(
            session,
            entry.info.spool.as_deref(),
            entry.live.progress.spool_size,
            out,
        );
        self.fail_awaiting_of(session, out);
        self.drop_routes_of(session, out);
        self.emit(
            EventRecord {
                kind: "session.exited".into(),
                session: Some(session.to_owned()),
                name: entry.info.name.clone(),
                exit_code: exit.exit_code,
                signal: exit.signal,
                ..EventRecord::default()
            },
            out,
        );
        self.record(
            history::Record::SessionEnded {
                session: session.to_owned(),
                ended_at: self.clock,
                exit_code: exit.exit_code,
                signal: exit.signal,
            },
            out,
        );
        self.store_held_of(session, out);
        self.unrecorded.remove(session);
        let last_turn_id = self
            .registry
            .latest(session)
            .ok()
            .map(|r| r.turn_id().to_string());
        self.registry.remove_session(session);
        self.remember_ended(
            session,
            lifecycle::Ended::new(
                entry.info,
                entry.live.progress,
                last_turn_id,
                exit,
                self.clock,
            ),
        );
    }
}

fn format_of(format: WireFormat) -> Format {
    match format {
        WireFormat::Raw => Format::Raw,
        WireFormat::Text => Format::Text,
        WireFormat::Message => Format::Message,
    }
}

/// `get_turn` with `format: message` of a turn whose agent's hooks gave no final message.
fn no_message(record: &TurnRecord) -> Refusal {
    refuse(
        ErrorReason::NoMessage,
        format!(
            "turn {} has no final message from the agent's hooks (hooks off, or an agent \
             without them); use format text (--format text) for what the screen showed",
            record.turn_id()
        ),
    )
}

fn wire_meta(meta: &TurnMeta) -> WireTurnMeta {
    WireTurnMeta {
        turn_id: meta.turn_id.to_string(),
        timestamp: meta.timestamp_ms,
        byte_length: meta.byte_length,
        interrupted: meta.interrupted,
        truncated: meta.truncated,
        exit_code: meta.exit_code,
        cwd: meta.cwd.clone(),
        input: meta.input.clone(),
        spool_span: meta.spool_span,
        message_length: meta.message_length,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clippy_registry::{PASTE_END, PASTE_START};

    use super::*;

    pub(super) const NOW: u64 = 1_700_000_000_000;

    pub(super) fn state_with(ring_depth: usize, max_turn_bytes: usize) -> State {
        State::new(RegistryConfig {
            ring_depth,
            max_turn_bytes,
        })
        .expect("valid config")
    }

    pub(super) fn state() -> State {
        state_with(8, 1024)
    }

    /// The messages sent to `conn` by `actions`, ignoring logs.
    pub(super) fn sent_to(actions: &[Action], conn: ConnId) -> Vec<Message> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send(c, m) if *c == conn => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    fn closes(actions: &[Action], conn: ConnId) -> bool {
        actions.contains(&Action::Close(conn))
    }

    /// Sends `msg` and returns the one reply; fails on a close.
    pub(super) fn req(st: &mut State, conn: ConnId, msg: Message) -> Message {
        let actions = st.handle(conn, msg, NOW);
        assert!(!closes(&actions, conn), "unexpected close: {actions:?}");
        let replies = sent_to(&actions, conn);
        assert_eq!(replies.len(), 1, "{actions:?}");
        replies.into_iter().next().expect("one reply")
    }

    /// Sends `msg`, expects an error reply, returns its reason and message.
    pub(super) fn refused(st: &mut State, conn: ConnId, msg: Message) -> (ErrorReason, String) {
        match req(st, conn, msg) {
            Message::Error {
                reason, message, ..
            } => (reason, message),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    pub(super) fn connect(st: &mut State, n: u64, role: Role) -> ConnId {
        let conn = ConnId(n);
        st.connection_opened(conn, true);
        let reply = req(
            st,
            conn,
            Message::Hello {
                id: 1,
                version: PROTOCOL_VERSION,
                role,
            },
        );
        assert_eq!(
            reply,
            Message::HelloAck {
                id: 1,
                version: PROTOCOL_VERSION
            }
        );
        conn
    }

    pub(super) fn info(session: &str, name: Option<&str>, bracketed: bool) -> SessionInfo {
        SessionInfo {
            session: session.into(),
            name: name.map(Into::into),
            pid: 4242,
            command: vec!["agent".into(), "--flag".into()],
            preset: "claude".into(),
            bracketed_paste: bracketed,
            spool: Some(format!("/spools/{session}")),
            cwd: None,
            no_history: false,
        }
    }

    fn register(st: &mut State, conn: ConnId, info: SessionInfo) -> Message {
        req(
            st,
            conn,
            Message::Register {
                id: 2,
                session: info,
                progress: None,
                resends: false,
            },
        )
    }

    pub(super) fn wrapper(st: &mut State, n: u64, session: &str, name: Option<&str>) -> ConnId {
        let conn = connect(st, n, Role::Wrapper);
        assert_eq!(
            register(st, conn, info(session, name, false)),
            Message::Done { id: 2 }
        );
        conn
    }

    pub(super) fn turn_data(seq: u64, content: &str) -> TurnData {
        TurnData {
            seq,
            timestamp: 1000 + seq,
            content: content.as_bytes().to_vec(),
            text: format!("text of {content}"),
            interrupted: false,
            truncated: false,
            exit_code: None,
            cwd: None,
            input: None,
            spool_span: None,
            message: None,
        }
    }

    pub(super) fn report(
        st: &mut State,
        conn: ConnId,
        session: &str,
        seq: u64,
        content: &str,
    ) -> Message {
        req(
            st,
            conn,
            Message::TurnCompleted {
                id: 3,
                session: session.into(),
                turn: turn_data(seq, content),
            },
        )
    }

    fn capture(st: &mut State, conn: ConnId, session: &str) -> Message {
        req(
            st,
            conn,
            Message::Capture {
                id: 4,
                session: session.into(),
            },
        )
    }

    fn get_turn(st: &mut State, conn: ConnId, arg: &str, format: WireFormat) -> Message {
        req(
            st,
            conn,
            Message::GetTurn {
                id: 5,
                turn_id: arg.into(),
                format,
            },
        )
    }

    fn content_of(reply: &Message) -> (&str, &[u8]) {
        match reply {
            Message::Turn { turn, content, .. } => (turn.turn_id.as_str(), &content[..]),
            other => panic!("expected a turn, got {other:?}"),
        }
    }

    fn sessions(st: &mut State, conn: ConnId) -> Vec<SessionSummary> {
        match req(st, conn, Message::ListSessions { id: 6 }) {
            Message::Sessions { sessions, .. } => SessionSummary::unshare(sessions),
            other => panic!("expected sessions, got {other:?}"),
        }
    }

    fn paste(st: &mut State, conn: ConnId, target: &str, format: WireFormat) -> Vec<Action> {
        st.handle(
            conn,
            Message::Paste {
                id: 7,
                session: target.into(),
                format,
            },
            NOW,
        )
    }

    /// The one delivery in `actions`.
    pub(super) fn delivery(actions: &[Action]) -> (&Delivery, ConnId, u32) {
        let found: Vec<_> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Deliver {
                    delivery,
                    reply_to,
                    reply_id,
                } => Some((delivery, *reply_to, *reply_id)),
                _ => None,
            })
            .collect();
        assert_eq!(found.len(), 1, "{actions:?}");
        found[0]
    }

    // ── hello and roles ─────────────────────────────────────────────────────────────────

    #[test]
    fn hello_is_acknowledged_with_the_protocol_version() {
        let mut st = state();
        connect(&mut st, 1, Role::Client);
        connect(&mut st, 2, Role::Wrapper);
    }

    #[test]
    fn another_version_is_a_version_mismatch_and_closes() {
        let mut st = state();
        let conn = ConnId(1);
        st.connection_opened(conn, true);
        let actions = st.handle(
            conn,
            Message::Hello {
                id: 9,
                version: PROTOCOL_VERSION + 1,
                role: Role::Client,
            },
            NOW,
        );
        assert!(matches!(
            sent_to(&actions, conn).as_slice(),
            [Message::Error {
                id: 9,
                reason: ErrorReason::VersionMismatch,
                ..
            }]
        ));
        assert!(closes(&actions, conn));
    }

    #[test]
    fn anything_before_hello_is_not_allowed_and_closes() {
        let mut st = state();
        let conn = ConnId(1);
        st.connection_opened(conn, true);
        let actions = st.handle(conn, Message::ListSessions { id: 3 }, NOW);
        assert!(matches!(
            sent_to(&actions, conn).as_slice(),
            [Message::Error {
                id: 3,
                reason: ErrorReason::NotAllowed,
                ..
            }]
        ));
        assert!(closes(&actions, conn));
    }

    #[test]
    fn a_connection_silent_past_the_hello_deadline_is_closed() {
        let mut st = state();
        let silent = ConnId(1);
        let greeted = ConnId(2);
        st.connection_opened_at(silent, true, NOW);
        st.connection_opened_at(greeted, true, NOW + 10);
        assert_eq!(st.next_deadline(), Some(NOW + HELLO_TIMEOUT_MS));
        let hello = Message::Hello {
            id: 1,
            version: PROTOCOL_VERSION,
            role: Role::Client,
        };
        assert!(matches!(
            req(&mut st, greeted, hello),
            Message::HelloAck { .. }
        ));
        // Only the silent one is still owed a hello.
        assert_eq!(st.next_deadline(), Some(NOW + HELLO_TIMEOUT_MS));
        assert!(st.hellos_due(NOW + HELLO_TIMEOUT_MS - 1).is_empty());
        assert!(st.expire(NOW + HELLO_TIMEOUT_MS - 1).is_empty());
        // The server reads what a due connection sent before it expires it.
        assert_eq!(st.hellos_due(NOW + HELLO_TIMEOUT_MS), vec![silent]);
        let actions = st.expire(NOW + HELLO_TIMEOUT_MS);
        assert!(closes(&actions, silent), "{actions:?}");
        assert!(!closes(&actions, greeted), "{actions:?}");
        assert!(
            sent_to(&actions, silent).is_empty(),
            "closed without a reply"
        );
        st.connection_closed_at(silent, NOW + HELLO_TIMEOUT_MS);
        assert_eq!(st.next_deadline(), None);
        // The greeted connection is never closed for it.
        assert!(!closes(&st.expire(u64::MAX), greeted));
        assert!(matches!(
            req(&mut st, greeted, Message::ListSessions { id: 2 }),
            Message::Sessions { .. }
        ));
    }

    #[test]
    fn a_connection_gone_before_its_hello_deadline_leaves_no_deadline() {
        let mut st = state();
        let conn = ConnId(1);
        st.connection_opened_at(conn, true, NOW);
        st.connection_closed_at(conn, NOW + 1);
        assert_eq!(st.next_deadline(), None);
        assert!(st.expire(u64::MAX).is_empty());
    }

    #[test]
    fn a_second_hello_is_refused_and_the_connection_stays() {
        let mut st = state();
        let conn = connect(&mut st, 1, Role::Client);
        let hello = Message::Hello {
            id: 2,
            version: PROTOCOL_VERSION,
            role: Role::Wrapper,
        };
        assert_eq!(refused(&mut st, conn, hello).0, ErrorReason::NotAllowed);
        // Still a client: wrapper messages stay refused.
        let (reason, _) = refused(
            &mut st,
            conn,
            Message::Register {
                id: 3,
                session: info("s", None, false),
                progress: None,
                resends: false,
            },
        );
        assert_eq!(reason, ErrorReason::NotAllowed);
    }

    #[test]
    fn a_peer_of_another_user_is_closed_and_ignored() {
        let mut st = state();
        let conn = ConnId(1);
        assert_eq!(st.connection_opened(conn, false), vec![Action::Close(conn)]);
        let actions = st.handle(
            conn,
            Message::Hello {
                id: 1,
                version: PROTOCOL_VERSION,
                role: Role::Client,
            },
            NOW,
        );
        assert!(actions.is_empty(), "{actions:?}");
        assert!(st.connection_closed(conn).is_empty());
    }

    #[test]
    fn wrapper_messages_from_a_client_are_not_allowed() {
        let mut st = state();
        let client = connect(&mut st, 1, Role::Client);
        for msg in [
            Message::Register {
                id: 10,
                session: info("s", None, false),
                progress: None,
                resends: false,
            },
            Message::Deregister {
                id: 11,
                session: "s".into(),
                exit_code: None,
                signal: None,
            },
            Message::TurnCompleted {
                id: 12,
                session: "s".into(),
                turn: turn_data(1, "x"),
            },
            Message::BracketedPaste {
                id: 13,
                session: "s".into(),
                enabled: true,
            },
        ] {
            let id = msg.id();
            match req(&mut st, client, msg) {
                Message::Error {
                    id: got,
                    reason: ErrorReason::NotAllowed,
                    message,
                    ..
                } => {
                    assert_eq!(got, id);
                    assert!(message.contains("for wrappers"), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(st.session_count(), 0);
    }

    #[test]
    fn replies_sent_to_the_broker_are_not_allowed() {
        let mut st = state();
        let conn = connect(&mut st, 1, Role::Wrapper);
        for msg in [
            Message::HelloAck { id: 1, version: 1 },
            Message::Done { id: 2 },
            Message::TurnRecorded {
                id: 3,
                turn_id: "s:1".into(),
            },
            Message::Captured {
                id: 4,
                turn_id: "s:1".into(),
                byte_length: 1,
            },
            Message::Sessions {
                id: 5,
                sessions: Vec::new(),
            },
            Message::Turns {
                id: 6,
                turns: Vec::new(),
            },
            Message::Error {
                id: 7,
                reason: ErrorReason::Busy,
                message: String::new(),
                resume_cursor: None,
            },
            Message::Inject {
                id: 0,
                session: "s".into(),
                data: Vec::new(),
            },
        ] {
            let (reason, message) = refused(&mut st, conn, msg);
            assert_eq!(reason, ErrorReason::NotAllowed);
            assert!(message.contains("sent by the broker"), "{message}");
        }
    }

    // ── decode failures ─────────────────────────────────────────────────────────────────

    #[test]
    fn unknown_types_and_missing_fields_are_answered_and_the_connection_stays() {
        let mut st = state();
        let conn = connect(&mut st, 1, Role::Client);
        let actions = st.decode_failed(
            conn,
            &ProtoError::UnknownType {
                id: 7,
                kind: "frobnicate".into(),
            },
        );
        assert!(!closes(&actions, conn));
        assert!(matches!(
            sent_to(&actions, conn).as_slice(),
            [Message::Error {
                id: 7,
                reason: ErrorReason::UnknownType,
                ..
            }]
        ));
        let actions = st.decode_failed(
            conn,
            &ProtoError::MissingField {
                id: 8,
                kind: "capture".into(),
                detail: "missing field `session`".into(),
            },
        );
        assert!(!closes(&actions, conn));
        match sent_to(&actions, conn).as_slice() {
            [
                Message::Error {
                    id: 8,
                    reason: ErrorReason::MissingField,
                    message,
                    ..
                },
            ] => assert!(message.contains("session"), "{message}"),
            other => panic!("{other:?}"),
        }
        // Still usable.
        assert!(sessions(&mut st, conn).is_empty());
    }

    #[test]
    fn decode_failures_before_hello_close() {
        let mut st = state();
        let conn = ConnId(1);
        st.connection_opened(conn, true);
        let actions = st.decode_failed(
            conn,
            &ProtoError::UnknownType {
                id: 1,
                kind: "hi".into(),
            },
        );
        assert!(closes(&actions, conn));
        assert!(matches!(
            sent_to(&actions, conn).as_slice(),
            [Message::Error {
                reason: ErrorReason::NotAllowed,
                ..
            }]
        ));
        let conn = ConnId(2);
        st.connection_opened(conn, true);
        let actions = st.decode_failed(
            conn,
            &ProtoError::MissingField {
                id: 1,
                kind: "hello".into(),
                detail: "missing field `role`".into(),
            },
        );
        assert!(closes(&actions, conn));
        assert!(matches!(
            sent_to(&actions, conn).as_slice(),
            [Message::Error {
                reason: ErrorReason::MissingField,
                ..
            }]
        ));
    }

    #[test]
    fn oversize_and_malformed_frames_close_that_connection_only() {
        let mut st = state();
        let bad = connect(&mut st, 1, Role::Client);
        let good = connect(&mut st, 2, Role::Client);
        let actions = st.decode_failed(
            bad,
            &ProtoError::FrameTooLarge {
                len: 1 << 30,
                max: 16 << 20,
            },
        );
        assert!(closes(&actions, bad) && !closes(&actions, good));
        assert!(matches!(
            sent_to(&actions, bad).as_slice(),
            [Message::Error {
                id: 0,
                reason: ErrorReason::PayloadTooLarge,
                ..
            }]
        ));
        let bad2 = connect(&mut st, 3, Role::Client);
        let actions = st.decode_failed(bad2, &ProtoError::Malformed("not a map".into()));
        assert!(closes(&actions, bad2));
        assert!(sent_to(&actions, good).is_empty());
        let actions = st.decode_failed(bad2, &ProtoError::Truncated);
        assert!(closes(&actions, bad2));
        assert!(sessions(&mut st, good).is_empty());
    }

    // ── register, deregister, turns ─────────────────────────────────────────────────────

    #[test]
    fn register_adds_the_session_and_lists_it() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", Some("coder"));
        let client = connect(&mut st, 2, Role::Client);
        let list = sessions(&mut st, client);
        assert_eq!(
            list,
            vec![SessionSummary {
                session: "aaa".into(),
                name: Some("coder".into()),
                pid: 4242,
                command: vec!["agent".into(), "--flag".into()],
                preset: "claude".into(),
                connected: true,
                turns: 0,
                last_turn_id: None,
                bracketed_paste: false,
                waiting: None,
                waiting_id: None,
                attached: 0,
            }]
        );
        report(&mut st, w, "aaa", 1, "one");
        report(&mut st, w, "aaa", 2, "two");
        let list = sessions(&mut st, client);
        assert_eq!(list[0].turns, 2);
        assert_eq!(list[0].last_turn_id.as_deref(), Some("aaa:2"));
    }

    #[test]
    fn a_listed_summary_is_shared_until_its_session_changes() {
        let mut st = state_with(2, 1024);
        let w = wrapper(&mut st, 1, "aaa", None);
        let client = connect(&mut st, 2, Role::Client);
        let shared = |st: &mut State| match req(st, client, Message::ListSessions { id: 6 }) {
            Message::Sessions { mut sessions, .. } => sessions.remove(0),
            other => panic!("expected sessions, got {other:?}"),
        };
        let first = shared(&mut st);
        assert!(
            Arc::ptr_eq(&first, &shared(&mut st)),
            "nothing changed: the same summary"
        );
        // Each change shows in the next list, the seq of the latest turn too once the ring is
        // full and the count stays.
        let mut seen = Vec::new();
        for seq in 1..=3 {
            report(&mut st, w, "aaa", seq, "x");
            let summary = sessions(&mut st, client).remove(0);
            seen.push((summary.turns, summary.last_turn_id));
        }
        assert_eq!(
            seen,
            [
                (1, Some("aaa:1".into())),
                (2, Some("aaa:2".into())),
                (2, Some("aaa:3".into()))
            ]
        );
        let bracketed = Message::BracketedPaste {
            id: 4,
            session: "aaa".into(),
            enabled: true,
        };
        assert_eq!(req(&mut st, w, bracketed), Message::Done { id: 4 });
        assert!(sessions(&mut st, client)[0].bracketed_paste);
        register(&mut st, w, info("aaa", Some("renamed"), false));
        let summary = sessions(&mut st, client).remove(0);
        assert_eq!(summary.name.as_deref(), Some("renamed"));
        assert!(!summary.bracketed_paste);
    }

    #[test]
    fn the_same_id_from_another_live_connection_is_a_duplicate() {
        let mut st = state();
        wrapper(&mut st, 1, "aaa", None);
        let other = connect(&mut st, 2, Role::Wrapper);
        let (reason, message) = refused(
            &mut st,
            other,
            Message::Register {
                id: 2,
                session: info("aaa", None, false),
                progress: None,
                resends: false,
            },
        );
        assert_eq!(reason, ErrorReason::DuplicateSession);
        assert!(message.contains("aaa"), "{message}");
    }

    #[test]
    fn re_registering_on_the_same_connection_keeps_turns_and_updates_info() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        report(&mut st, w, "aaa", 1, "one");
        assert_eq!(
            register(&mut st, w, info("aaa", Some("renamed"), true)),
            Message::Done { id: 2 }
        );
        let client = connect(&mut st, 2, Role::Client);
        let list = sessions(&mut st, client);
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].turns, 1);
        assert_eq!(list[0].name.as_deref(), Some("renamed"));
        assert!(list[0].bracketed_paste);
    }

    #[test]
    fn re_registering_after_the_connection_dropped_is_accepted() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        report(&mut st, w, "aaa", 1, "one");
        st.connection_closed(w);
        assert_eq!(st.session_count(), 0);
        let w2 = wrapper(&mut st, 2, "aaa", None);
        // The wrapper re-sends its held turns; seqs are the wrapper's, so ids are stable.
        assert_eq!(
            report(&mut st, w2, "aaa", 1, "one"),
            Message::TurnRecorded {
                id: 3,
                turn_id: "aaa:1".into()
            }
        );
        let client = connect(&mut st, 3, Role::Client);
        assert_eq!(sessions(&mut st, client)[0].turns, 1);
    }

    #[test]
    fn an_invalid_session_id_is_refused() {
        let mut st = state();
        let w = connect(&mut st, 1, Role::Wrapper);
        for bad in ["", "a:b"] {
            let (reason, _) = refused(
                &mut st,
                w,
                Message::Register {
                    id: 2,
                    session: info(bad, None, false),
                    progress: None,
                    resends: false,
                },
            );
            assert_eq!(reason, ErrorReason::MissingField);
        }
        assert_eq!(st.session_count(), 0);
    }

    #[test]
    fn deregister_removes_the_session_and_keeps_the_relay_buffer() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let target = wrapper(&mut st, 2, "bbb", None);
        report(&mut st, w, "aaa", 1, "one");
        let client = connect(&mut st, 3, Role::Client);
        capture(&mut st, client, "aaa");
        assert_eq!(
            req(
                &mut st,
                w,
                Message::Deregister {
                    id: 8,
                    session: "aaa".into(),
                    exit_code: None,
                    signal: None,
                }
            ),
            Message::Done { id: 8 }
        );
        let list = sessions(&mut st, client);
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].session, "bbb");
        let (reason, _) = refused(
            &mut st,
            client,
            Message::GetTurn {
                id: 9,
                turn_id: "aaa:1".into(),
                format: WireFormat::Raw,
            },
        );
        assert_eq!(reason, ErrorReason::TurnNotFound);
        // The relay buffer still holds the turn.
        let actions = paste(&mut st, client, "bbb", WireFormat::Raw);
        let (d, _, _) = delivery(&actions);
        assert!(
            matches!(d, Delivery::Inject { conn, message: Message::Inject { data, .. }, .. }
            if *conn == target && data == b"one")
        );
    }

    #[test]
    fn a_wrapper_reports_only_for_its_own_sessions() {
        let mut st = state();
        wrapper(&mut st, 1, "aaa", None);
        let other = wrapper(&mut st, 2, "bbb", None);
        for msg in [
            Message::TurnCompleted {
                id: 3,
                session: "aaa".into(),
                turn: turn_data(1, "x"),
            },
            Message::BracketedPaste {
                id: 4,
                session: "aaa".into(),
                enabled: true,
            },
            Message::Deregister {
                id: 5,
                session: "aaa".into(),
                exit_code: None,
                signal: None,
            },
            Message::Deregister {
                id: 6,
                session: "nope".into(),
                exit_code: None,
                signal: None,
            },
        ] {
            assert_eq!(refused(&mut st, other, msg).0, ErrorReason::SessionNotFound);
        }
        assert_eq!(st.session_count(), 2);
    }

    #[test]
    fn turn_completed_records_the_turn_with_its_metadata() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let turn = TurnData {
            seq: 1,
            timestamp: 0,
            content: b"\x1b[1mhi\x1b[0m\n".to_vec(),
            text: "hi\n".into(),
            interrupted: true,
            truncated: true,
            exit_code: Some(3),
            cwd: Some("/work".into()),
            input: Some("say hi".into()),
            spool_span: Some((10, 21)),
            message: Some("**hi**".into()),
        };
        assert_eq!(
            req(
                &mut st,
                w,
                Message::TurnCompleted {
                    id: 3,
                    session: "aaa".into(),
                    turn
                }
            ),
            Message::TurnRecorded {
                id: 3,
                turn_id: "aaa:1".into()
            }
        );
        let client = connect(&mut st, 2, Role::Client);
        let reply = get_turn(&mut st, client, "aaa:1", WireFormat::Raw);
        assert_eq!(
            reply,
            Message::Turn {
                id: 5,
                turn: WireTurnMeta {
                    turn_id: "aaa:1".into(),
                    timestamp: NOW,
                    byte_length: 11,
                    interrupted: true,
                    truncated: true,
                    exit_code: Some(3),
                    cwd: Some("/work".into()),
                    input: Some("say hi".into()),
                    spool_span: Some((10, 21)),
                    message_length: Some(6),
                },
                content: b"\x1b[1mhi\x1b[0m\n".to_vec().into(),
            }
        );
        let reply = get_turn(&mut st, client, "aaa:1", WireFormat::Message);
        assert_eq!(content_of(&reply), ("aaa:1", &b"**hi**"[..]));
    }

    #[test]
    fn a_re_sent_turn_is_acknowledged_and_not_stored_again() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        report(&mut st, w, "aaa", 1, "one");
        assert_eq!(
            report(&mut st, w, "aaa", 1, "changed"),
            Message::TurnRecorded {
                id: 3,
                turn_id: "aaa:1".into()
            }
        );
        let client = connect(&mut st, 2, Role::Client);
        let reply = get_turn(&mut st, client, "aaa:1", WireFormat::Raw);
        assert_eq!(content_of(&reply).1, b"one");
        assert_eq!(sessions(&mut st, client)[0].turns, 1);
    }

    #[test]
    fn a_zero_seq_is_refused() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let (reason, _) = refused(
            &mut st,
            w,
            Message::TurnCompleted {
                id: 3,
                session: "aaa".into(),
                turn: turn_data(0, "x"),
            },
        );
        assert_eq!(reason, ErrorReason::MissingField);
    }

    #[test]
    fn oversize_turns_are_truncated_and_flagged() {
        let mut st = state_with(4, 4);
        let w = wrapper(&mut st, 1, "aaa", None);
        report(&mut st, w, "aaa", 1, "abcdefgh");
        let client = connect(&mut st, 2, Role::Client);
        let reply = get_turn(&mut st, client, "aaa", WireFormat::Raw);
        let Message::Turn { turn, content, .. } = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(content, b"abcd");
        assert!(turn.truncated);
        assert_eq!(turn.byte_length, 4);
    }

    #[test]
    fn the_ring_evicts_after_depth_turns() {
        let mut st = state_with(2, 1024);
        let w = wrapper(&mut st, 1, "aaa", None);
        for seq in 1..=3 {
            report(&mut st, w, "aaa", seq, "t");
        }
        let client = connect(&mut st, 2, Role::Client);
        let (reason, _) = refused(
            &mut st,
            client,
            Message::GetTurn {
                id: 5,
                turn_id: "aaa:1".into(),
                format: WireFormat::Raw,
            },
        );
        assert_eq!(reason, ErrorReason::TurnNotFound);
        let (reason, _) = refused(
            &mut st,
            client,
            Message::CaptureById {
                id: 5,
                turn_id: "aaa:1".into(),
            },
        );
        assert_eq!(reason, ErrorReason::TurnNotFound);
        assert_eq!(
            content_of(&get_turn(&mut st, client, "aaa:2", WireFormat::Raw)).0,
            "aaa:2"
        );
    }

    #[test]
    fn bracketed_paste_updates_the_flag() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        assert_eq!(
            req(
                &mut st,
                w,
                Message::BracketedPaste {
                    id: 4,
                    session: "aaa".into(),
                    enabled: true
                }
            ),
            Message::Done { id: 4 }
        );
        let client = connect(&mut st, 2, Role::Client);
        assert!(sessions(&mut st, client)[0].bracketed_paste);
    }

    #[test]
    fn closing_a_wrapper_connection_deregisters_its_sessions() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        report(&mut st, w, "aaa", 1, "one");
        let actions = st.connection_closed(w);
        assert!(
            actions
                .iter()
                .any(|a| matches!(a, Action::Log(Level::Info, line) if line.contains("aaa")))
        );
        assert_eq!(st.session_count(), 0);
        assert!(st.connection_closed(w).is_empty(), "idempotent");
    }

    // ── session arguments ───────────────────────────────────────────────────────────────

    #[test]
    fn sessions_resolve_by_id_then_name_then_unique_prefix() {
        let mut st = state();
        let a = wrapper(&mut st, 1, "abc123", Some("coder"));
        let b = wrapper(&mut st, 2, "abd456", Some("abc123x"));
        let c = wrapper(&mut st, 3, "coder", Some("reviewer"));
        report(&mut st, a, "abc123", 1, "from a");
        report(&mut st, b, "abd456", 1, "from b");
        report(&mut st, c, "coder", 1, "from c");
        let client = connect(&mut st, 4, Role::Client);
        let latest = |st: &mut State, arg: &str| {
            content_of(&get_turn(st, client, arg, WireFormat::Raw))
                .0
                .to_owned()
        };
        assert_eq!(latest(&mut st, "abc123"), "abc123:1", "exact id");
        assert_eq!(latest(&mut st, "coder"), "coder:1", "an id beats a name");
        assert_eq!(latest(&mut st, "reviewer"), "coder:1", "name");
        assert_eq!(
            latest(&mut st, "abc123x"),
            "abd456:1",
            "a name beats a prefix"
        );
        assert_eq!(latest(&mut st, "abd"), "abd456:1", "unique prefix");
        assert_eq!(latest(&mut st, "co"), "coder:1", "unique prefix");
        let (reason, message) = refused(
            &mut st,
            client,
            Message::Capture {
                id: 1,
                session: "ab".into(),
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(
            message.contains("abc123 (coder)") && message.contains("abd456 (abc123x)"),
            "{message}"
        );
        let (reason, message) = refused(
            &mut st,
            client,
            Message::Capture {
                id: 1,
                session: "zzz".into(),
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(message.contains("zzz"), "{message}");
        let (reason, _) = refused(
            &mut st,
            client,
            Message::Capture {
                id: 1,
                session: String::new(),
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
    }

    #[test]
    fn a_name_shared_by_two_sessions_is_ambiguous() {
        let mut st = state();
        wrapper(&mut st, 1, "s1", Some("twin"));
        wrapper(&mut st, 2, "s2", Some("twin"));
        let client = connect(&mut st, 3, Role::Client);
        let (reason, message) = refused(
            &mut st,
            client,
            Message::ListTurns {
                id: 1,
                session: "twin".into(),
                limit: None,
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(
            message.contains("s1 (twin)") && message.contains("s2 (twin)"),
            "{message}"
        );
    }

    #[test]
    fn turn_ids_accept_a_name_or_prefix_for_the_session() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa111", Some("coder"));
        report(&mut st, w, "aaa111", 1, "one");
        report(&mut st, w, "aaa111", 2, "two");
        let client = connect(&mut st, 2, Role::Client);
        for arg in ["aaa111:1", "coder:1", "aaa:1"] {
            let reply = get_turn(&mut st, client, arg, WireFormat::Raw);
            assert_eq!(content_of(&reply), ("aaa111:1", &b"one"[..]), "{arg}");
        }
        assert_eq!(
            req(
                &mut st,
                client,
                Message::CaptureById {
                    id: 2,
                    turn_id: "coder:2".into()
                }
            ),
            Message::Captured {
                id: 2,
                turn_id: "aaa111:2".into(),
                byte_length: 3
            }
        );
        for bad in ["nobody:1", "aaa111:9", "aaa111:0"] {
            let (reason, _) = refused(
                &mut st,
                client,
                Message::CaptureById {
                    id: 3,
                    turn_id: bad.into(),
                },
            );
            assert_eq!(reason, ErrorReason::TurnNotFound, "{bad}");
        }
    }

    // ── capture, paste, deliver ─────────────────────────────────────────────────────────

    #[test]
    fn capture_takes_the_latest_turn() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let client = connect(&mut st, 2, Role::Client);
        let (reason, _) = refused(
            &mut st,
            client,
            Message::Capture {
                id: 4,
                session: "aaa".into(),
            },
        );
        assert_eq!(reason, ErrorReason::NoTurn);
        report(&mut st, w, "aaa", 1, "one");
        report(&mut st, w, "aaa", 2, "second");
        assert_eq!(
            capture(&mut st, client, "aaa"),
            Message::Captured {
                id: 4,
                turn_id: "aaa:2".into(),
                byte_length: 6
            }
        );
        assert_eq!(
            refused(
                &mut st,
                client,
                Message::Capture {
                    id: 4,
                    session: "nope".into()
                }
            )
            .0,
            ErrorReason::SessionNotFound
        );
    }

    #[test]
    fn paste_needs_a_captured_turn_and_a_live_target() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let client = connect(&mut st, 2, Role::Client);
        let actions = paste(&mut st, client, "aaa", WireFormat::Raw);
        assert!(matches!(
            sent_to(&actions, client).as_slice(),
            [Message::Error {
                id: 7,
                reason: ErrorReason::BufferEmpty,
                ..
            }]
        ));
        report(&mut st, w, "aaa", 1, "one");
        capture(&mut st, client, "aaa");
        let actions = paste(&mut st, client, "nope", WireFormat::Raw);
        assert!(matches!(
            sent_to(&actions, client).as_slice(),
            [Message::Error {
                reason: ErrorReason::SessionNotFound,
                ..
            }]
        ));
        let target = wrapper(&mut st, 3, "bbb", None);
        st.connection_closed(target);
        let actions = paste(&mut st, client, "bbb", WireFormat::Raw);
        assert!(matches!(
            sent_to(&actions, client).as_slice(),
            [Message::Error {
                reason: ErrorReason::SessionDisconnected,
                ..
            }]
        ));
        // A target whose program has not taken what it was given is busy.
        let blocked = Progress {
            input_blocked: true,
            ..Progress::default()
        };
        let progress = |blocked| Message::Progress {
            id: 4,
            session: "aaa".into(),
            progress: blocked,
        };
        req(&mut st, w, progress(blocked));
        let actions = paste(&mut st, client, "aaa", WireFormat::Raw);
        assert!(matches!(
            sent_to(&actions, client).as_slice(),
            [Message::Error {
                reason: ErrorReason::Busy,
                ..
            }]
        ));
        req(&mut st, w, progress(Progress::default()));
        delivery(&paste(&mut st, client, "aaa", WireFormat::Raw));
    }

    #[test]
    fn paste_injects_into_the_target_wrapped_when_it_has_bracketed_paste() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", Some("coder"));
        let target = connect(&mut st, 2, Role::Wrapper);
        register(&mut st, target, info("bbb", Some("reviewer"), true));
        report(&mut st, w, "aaa", 1, "line 1\nline 2\n");
        let client = connect(&mut st, 3, Role::Client);
        capture(&mut st, client, "coder");
        let actions = paste(&mut st, client, "reviewer", WireFormat::Raw);
        assert!(
            sent_to(&actions, client).is_empty(),
            "the reply waits for the delivery"
        );
        let (d, reply_to, reply_id) = delivery(&actions);
        assert_eq!((reply_to, reply_id), (client, 7));
        let expected = [PASTE_START, b"line 1\nline 2\n", PASTE_END].concat();
        assert_eq!(
            d,
            &Delivery::Inject {
                conn: target,
                session: "bbb".into(),
                message: Message::Inject {
                    id: 0,
                    session: "bbb".into(),
                    data: expected
                }
            }
        );
        // Text format, target without bracketed paste.
        let actions = paste(&mut st, client, "aaa", WireFormat::Text);
        let (d, _, _) = delivery(&actions);
        assert!(
            matches!(d, Delivery::Inject { conn, message: Message::Inject { data, .. }, .. }
            if *conn == w && data == b"text of line 1\nline 2\n")
        );
        // The relay buffer survives pastes.
        let actions = paste(&mut st, client, "aaa", WireFormat::Raw);
        delivery(&actions);
    }

    #[test]
    fn delivery_outcomes_become_replies() {
        let mut st = state();
        let client = connect(&mut st, 1, Role::Client);
        assert_eq!(
            st.delivery_finished(client, 7, Ok(()), NOW),
            vec![Action::Send(client, Message::Done { id: 7 })]
        );
        let cases: Vec<(SinkError, ErrorReason)> = vec![
            (
                SinkError::SessionDisconnected {
                    session: "bbb".into(),
                },
                ErrorReason::SessionDisconnected,
            ),
            (
                SinkError::SessionNotFound {
                    session: "bbb".into(),
                },
                ErrorReason::SessionNotFound,
            ),
            (
                SinkError::RelativePath {
                    path: "out.txt".into(),
                },
                ErrorReason::SinkFailed,
            ),
        ];
        for (error, expected) in cases {
            let text = error.to_string();
            let actions = st.delivery_finished(client, 8, Err(error), NOW);
            match sent_to(&actions, client).as_slice() {
                [
                    Message::Error {
                        id: 8,
                        reason,
                        message,
                        ..
                    },
                ] => {
                    assert_eq!(*reason, expected);
                    if expected == ErrorReason::SinkFailed {
                        assert_eq!(message, &text);
                    }
                }
                other => panic!("{other:?}"),
            }
        }
        st.connection_closed(client);
        assert!(st.delivery_finished(client, 9, Ok(()), NOW).is_empty());
    }

    #[test]
    fn deliver_checks_the_sink_and_its_fields() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let client = connect(&mut st, 2, Role::Client);
        let deliver = |sink: &str, session: Option<&str>, path: Option<&str>| Message::Deliver {
            id: 9,
            sink: sink.into(),
            session: session.map(Into::into),
            path: path.map(Into::into),
            format: WireFormat::Raw,
        };
        let cases = [
            (
                deliver("inject", None, None),
                ErrorReason::MissingField,
                "session",
            ),
            (
                deliver("file", None, None),
                ErrorReason::MissingField,
                "path",
            ),
            (
                deliver("clipboard", None, None),
                ErrorReason::BufferEmpty,
                "capture",
            ),
            (
                deliver("printer", None, None),
                ErrorReason::SinkFailed,
                "unknown sink",
            ),
            (
                deliver("file", None, Some("/tmp/x")),
                ErrorReason::BufferEmpty,
                "capture",
            ),
            (
                deliver("inject", Some("aaa"), None),
                ErrorReason::BufferEmpty,
                "capture",
            ),
        ];
        for (msg, reason, needle) in cases {
            let (got, message) = refused(&mut st, client, msg);
            assert_eq!(got, reason, "{message}");
            assert!(message.contains(needle), "{message}");
        }
        report(&mut st, w, "aaa", 1, "body");
        capture(&mut st, client, "aaa");
        let actions = st.handle(client, deliver("file", None, Some("/tmp/out.txt")), NOW);
        let (d, reply_to, reply_id) = delivery(&actions);
        assert_eq!((reply_to, reply_id), (client, 9));
        match d {
            Delivery::File {
                path,
                record,
                format,
            } => {
                assert_eq!(path, Path::new("/tmp/out.txt"));
                assert_eq!(format.select(record), b"body");
            }
            other => panic!("{other:?}"),
        }
        let actions = st.handle(client, deliver("inject", Some("aaa"), None), NOW);
        assert!(matches!(delivery(&actions).0, Delivery::Inject { conn, .. } if *conn == w));
        let actions = st.handle(client, deliver("clipboard", None, None), NOW);
        match delivery(&actions).0 {
            Delivery::Clipboard { record, format } => {
                assert_eq!(format.select(record), b"body");
            }
            other => panic!("{other:?}"),
        }
    }

    // ── listings ────────────────────────────────────────────────────────────────────────

    #[test]
    fn list_turns_is_newest_first_and_limited() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", Some("coder"));
        for seq in 1..=3 {
            report(&mut st, w, "aaa", seq, "t");
        }
        let client = connect(&mut st, 2, Role::Client);
        let ids = |reply: Message| match reply {
            Message::Turns { turns, .. } => {
                turns.into_iter().map(|t| t.turn_id).collect::<Vec<_>>()
            }
            other => panic!("{other:?}"),
        };
        let all = req(
            &mut st,
            client,
            Message::ListTurns {
                id: 1,
                session: "coder".into(),
                limit: None,
            },
        );
        assert_eq!(ids(all), ["aaa:3", "aaa:2", "aaa:1"]);
        let two = req(
            &mut st,
            client,
            Message::ListTurns {
                id: 1,
                session: "aaa".into(),
                limit: Some(2),
            },
        );
        assert_eq!(ids(two), ["aaa:3", "aaa:2"]);
    }

    #[test]
    fn get_turn_by_session_gives_the_latest_in_either_format() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let client = connect(&mut st, 2, Role::Client);
        let (reason, _) = refused(
            &mut st,
            client,
            Message::GetTurn {
                id: 5,
                turn_id: "aaa".into(),
                format: WireFormat::Raw,
            },
        );
        assert_eq!(reason, ErrorReason::NoTurn);
        report(&mut st, w, "aaa", 1, "\x1b[1mbold\x1b[0m");
        let raw = get_turn(&mut st, client, "aaa", WireFormat::Raw);
        assert_eq!(content_of(&raw), ("aaa:1", &b"\x1b[1mbold\x1b[0m"[..]));
        let text = get_turn(&mut st, client, "aaa", WireFormat::Text);
        assert_eq!(content_of(&text).1, b"text of \x1b[1mbold\x1b[0m");
        let (reason, _) = refused(
            &mut st,
            client,
            Message::GetTurn {
                id: 5,
                turn_id: "nobody".into(),
                format: WireFormat::Raw,
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
    }

    /// `seq` of `session` with an agent's own final message `message` (its text view is
    /// `text of {content}`).
    fn report_with_message(
        st: &mut State,
        conn: ConnId,
        session: &str,
        seq: u64,
        content: &str,
        message: &str,
    ) -> Message {
        let turn = TurnData {
            message: Some(message.into()),
            ..turn_data(seq, content)
        };
        req(
            st,
            conn,
            Message::TurnCompleted {
                id: 3,
                session: session.into(),
                turn,
            },
        )
    }

    #[test]
    fn get_turn_as_message_is_the_agents_own_word_or_a_clear_refusal() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", Some("coder"));
        let client = connect(&mut st, 2, Role::Client);
        report_with_message(&mut st, w, "aaa", 1, "\x1b[1mDone\x1b[0m", "**Done.**\n");
        report(&mut st, w, "aaa", 2, "no hooks here");

        let reply = get_turn(&mut st, client, "coder:1", WireFormat::Message);
        assert_eq!(content_of(&reply), ("aaa:1", &b"**Done.**\n"[..]));
        match &reply {
            Message::Turn { turn, .. } => {
                assert_eq!(turn.message_length, Some(10));
                assert_eq!(turn.byte_length, 12, "byte_length stays the raw length");
            }
            other => panic!("{other:?}"),
        }
        // The other formats of the same turn are unchanged.
        let text = get_turn(&mut st, client, "aaa:1", WireFormat::Text);
        assert_eq!(content_of(&text).1, b"text of \x1b[1mDone\x1b[0m");

        // A turn without a message: refused, naming the turn and what to ask instead, for
        // the latest turn as for a turn id.
        for arg in ["aaa", "aaa:2"] {
            let (reason, message) = refused(
                &mut st,
                client,
                Message::GetTurn {
                    id: 5,
                    turn_id: arg.into(),
                    format: WireFormat::Message,
                },
            );
            assert_eq!(reason, ErrorReason::NoMessage, "{arg}");
            assert!(
                message.starts_with("turn aaa:2 has no final message"),
                "{message}"
            );
            assert!(message.contains("--format text"), "{message}");
        }
        // Its text is still there, and its metadata says it has no message.
        let text = get_turn(&mut st, client, "aaa:2", WireFormat::Text);
        assert_eq!(content_of(&text).1, b"text of no hooks here");
        match &text {
            Message::Turn { turn, .. } => assert_eq!(turn.message_length, None),
            other => panic!("{other:?}"),
        }
        // Listings carry the message's length.
        match req(
            &mut st,
            client,
            Message::ListTurns {
                id: 1,
                session: "aaa".into(),
                limit: None,
            },
        ) {
            Message::Turns { turns, .. } => {
                let lengths: Vec<_> = turns.iter().map(|t| t.message_length).collect();
                assert_eq!(lengths, [None, Some(10)]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn relaying_a_message_falls_back_to_the_text_when_the_turn_has_none() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let target = wrapper(&mut st, 2, "bbb", None);
        let client = connect(&mut st, 3, Role::Client);
        let injected = |actions: &[Action]| match delivery(actions).0 {
            Delivery::Inject {
                conn,
                message: Message::Inject { data, .. },
                ..
            } if *conn == target => data.clone(),
            other => panic!("{other:?}"),
        };

        // With a message: the message is pasted, and survives in the relay buffer.
        report_with_message(&mut st, w, "aaa", 1, "\x1b[2mraw\x1b[0m", "The *answer*.");
        capture(&mut st, client, "aaa");
        let actions = paste(&mut st, client, "bbb", WireFormat::Message);
        assert_eq!(injected(&actions), b"The *answer*.");
        assert_eq!(
            st.relay.held_bytes(),
            11 + 19 + 13,
            "content, text and message"
        );

        // Without one: the text view, not an error.
        report(&mut st, w, "aaa", 2, "plain");
        capture(&mut st, client, "aaa");
        let actions = paste(&mut st, client, "bbb", WireFormat::Message);
        assert_eq!(injected(&actions), b"text of plain");

        // The file and clipboard sinks get the format asked; the sink's `select` falls back.
        let deliver = |sink: &str, path: Option<&str>| Message::Deliver {
            id: 9,
            sink: sink.into(),
            session: None,
            path: path.map(Into::into),
            format: WireFormat::Message,
        };
        for msg in [
            deliver("file", Some("/tmp/out.md")),
            deliver("clipboard", None),
        ] {
            let actions = st.handle(client, msg, NOW);
            match delivery(&actions).0 {
                Delivery::File { record, format, .. } | Delivery::Clipboard { record, format } => {
                    assert_eq!(*format, Format::Message);
                    assert_eq!(format.select(record), b"text of plain");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_ended_session_is_reported_as_ended() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        st.connection_closed(w);
        let client = connect(&mut st, 2, Role::Client);
        let (reason, message) = refused(
            &mut st,
            client,
            Message::ListTurns {
                id: 1,
                session: "aaa".into(),
                limit: None,
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(message.contains("ended"), "{message}");
    }

    fn last_event(st: &State, kind: &str) -> EventRecord {
        st.events
            .since(None, &[])
            .filter(|e| e.kind == kind)
            .last()
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} event"))
    }

    #[test]
    fn events_from_outside_a_request_are_stamped_with_the_time_they_happen() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "aaa", None);
        let target = wrapper(&mut st, 2, "bbb", Some("reviewer"));
        report(&mut st, w, "aaa", 1, "x");
        let client = connect(&mut st, 3, Role::Client);
        capture(&mut st, client, "aaa");
        let actions = paste(&mut st, client, "reviewer", WireFormat::Text);
        delivery(&actions);
        // The injection is done a minute later (the loop was idle in between).
        st.delivery_finished(client, 7, Ok(()), NOW + 60_000);
        let delivered = last_event(&st, "relay.delivered");
        assert_eq!(delivered.ts, clippy_proto::iso8601_utc(NOW + 60_000));
        assert_eq!(delivered.to.as_deref(), Some("bbb"), "the id, not the name");
        assert_eq!(delivered.reason.as_deref(), Some(INJECT_SINK));
        // The target's wrapper goes away an hour later.
        st.connection_closed_at(target, NOW + 3_600_000);
        let exited = last_event(&st, "session.exited");
        assert_eq!(exited.session.as_deref(), Some("bbb"));
        assert_eq!(exited.ts, clippy_proto::iso8601_utc(NOW + 3_600_000));
        // A subscriber found lagging later still.
        let sub = connect(&mut st, 4, Role::Client);
        st.handle(
            sub,
            Message::Subscribe {
                id: 8,
                since: None,
                types: Vec::new(),
            },
            NOW,
        );
        st.subscriber_lagged(sub, NOW + 7_200_000);
        let lagged = last_event(&st, "subscriber.lagged");
        assert_eq!(lagged.ts, clippy_proto::iso8601_utc(NOW + 7_200_000));
        // The clock never goes back: a late report of an earlier time keeps the latest.
        st.connection_closed_at(w, NOW);
        let exited = last_event(&st, "session.exited");
        assert_eq!(exited.session.as_deref(), Some("aaa"));
        assert_eq!(exited.ts, clippy_proto::iso8601_utc(NOW + 7_200_000));
    }
}
