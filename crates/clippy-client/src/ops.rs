//! The typed operations: one method of [`Connection`] per broker request a front end makes,
//! building the request from typed arguments and unpacking its reply into a typed result. A
//! reply of the wrong type is [`ClientError::Protocol`]; a refusal is [`ClientError::Broker`]
//! with the broker's reason.
//!
//! The waits (`wait_for`, `wait_prompt`, `expect_send`, `exec`, `end_session`, `screen`) send
//! their deadline — the one given, else the broker's default from `clippy-proto` — and allow
//! the reply that long plus [`crate::REPLY_GRACE`].

use std::path::PathBuf;
use std::time::Duration;

use clippy_proto::{
    DEFAULT_ANSWER_WAIT_MS, DEFAULT_END_WAIT_MS, DEFAULT_SCREEN_WAIT_MS, DEFAULT_WAIT_MS, Decision,
    ErrorReason, EventRecord, Format, HistoryEntry, HistoryInfo, InboxItem, Message, PatternKind,
    Payload, RouteInfo, RouteSpec, ScreenData, SearchHit, SessionState, SessionSummary, TurnMeta,
};

use crate::args::{CommandLine, HistoryQuery, Input, SearchQuery};
use crate::connection::Connection;
use crate::error::ClientError;

/// A turn and its content (`get_turn`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Its metadata.
    pub meta: TurnMeta,
    /// The format of `content`.
    pub format: Format,
    /// The content, exact bytes.
    pub content: Payload,
}

/// What `capture` and `capture_by_id` put in the relay buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The captured turn.
    pub turn_id: String,
    /// Its size.
    pub byte_length: u32,
}

/// A session's screen (`screen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
    /// The session id, as the broker resolved it.
    pub session: String,
    /// The screen and its history lines.
    pub screen: ScreenData,
}

/// Spool bytes (`read`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolData {
    /// The bytes.
    pub data: Vec<u8>,
    /// Where they start.
    pub cursor: u64,
    /// Where the next read starts.
    pub resume_cursor: u64,
}

/// A wait's outcome (`wait_for`, `wait_prompt`, `expect_send`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The matched text, escapes stripped (a prompt's first line for `wait_prompt`).
    pub match_text: String,
    /// `[start, end)` in spool offsets.
    pub match_span: (u64, u64),
    /// Where to go on from: the span's end.
    pub resume_cursor: u64,
    /// For a prompt: the exit code the shell reported.
    pub exit_code: Option<i32>,
    /// For a prompt: the working directory the shell reported.
    pub cwd: Option<String>,
    /// For a prompt: when it appeared, Unix time in milliseconds.
    pub timestamp: Option<u64>,
    /// For a prompt: the session's latest recorded turn (the one that ended there).
    pub turn_id: Option<String>,
}

/// What `exec` got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executed {
    /// The turn the command produced, if it printed anything.
    pub turn_id: Option<String>,
    /// Its output as text.
    pub output: String,
    /// Its exit code, when the shell reports it.
    pub exit_code: Option<i32>,
    /// The working directory afterwards, when the shell reports it.
    pub cwd: Option<String>,
    /// Where the prompt after it begins.
    pub resume_cursor: u64,
}

/// How `end_session` ended a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// `idle`, `interrupted` or `killed`.
    pub outcome: String,
    /// The spool size then.
    pub resume_cursor: u64,
}

/// A session's inbox of gated handoffs (`inbox`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbox {
    /// The session id, as the broker resolved it.
    pub session: String,
    /// Oldest first.
    pub items: Vec<InboxItem>,
}

/// Where `deliver` puts the relay buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// Typed into a session (id, prefix or name).
    Inject(String),
    /// Written to a file: an absolute path (the broker refuses a relative one).
    File(String),
    /// The desktop clipboard, owned by the broker.
    Clipboard,
}

/// Where a session's terminals attach (`attach`, `detach`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachTarget {
    /// The session id.
    pub session: String,
    /// Its name, if it has one.
    pub name: Option<String>,
    /// Its `attach.sock`.
    pub path: PathBuf,
}

/// A wait's deadline: `timeout_ms`, else `default_ms`.
fn deadline(timeout_ms: Option<u64>, default_ms: u64) -> (u64, Duration) {
    let ms = timeout_ms.unwrap_or(default_ms);
    (ms, Duration::from_millis(ms))
}

impl Connection {
    /// Sends `make(id)` with the reply allowed `wait` more than the broker's own deadline
    /// (`None`: a request that does not wait), and unpacks the reply with `unpack` (which
    /// gives the type of a reply it does not expect).
    fn ask<T>(
        &mut self,
        request: &str,
        wait: Option<Duration>,
        make: impl FnOnce(u32) -> Message,
        unpack: impl FnOnce(Message) -> Result<T, &'static str>,
    ) -> Result<T, ClientError> {
        self.allow_reply_after(wait)?;
        let reply = self.request(make)?;
        unpack(reply).map_err(|other| ClientError::unexpected(request, other))
    }

    /// `list_sessions`: every session the broker knows.
    ///
    /// # Errors
    ///
    /// As every operation: the broker refused, did not answer, or answered nonsense.
    pub fn list_sessions(&mut self) -> Result<Vec<SessionSummary>, ClientError> {
        self.ask(
            "list_sessions",
            None,
            |id| Message::ListSessions { id },
            |reply| match reply {
                Message::Sessions { sessions, .. } => Ok(SessionSummary::unshare(sessions)),
                other => Err(other.kind()),
            },
        )
    }

    /// `list_turns`: a session's turns, newest first, at most `limit`.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `session_not_found`.
    pub fn list_turns(
        &mut self,
        session: &str,
        limit: Option<u32>,
    ) -> Result<Vec<TurnMeta>, ClientError> {
        self.ask(
            "list_turns",
            None,
            |id| Message::ListTurns {
                id,
                session: session.to_owned(),
                limit,
            },
            |reply| match reply {
                Message::Turns { turns, .. } => Ok(turns),
                other => Err(other.kind()),
            },
        )
    }

    /// `get_turn`: a turn by id (`<session>:<seq>`), or a session's latest (the broker tells
    /// them apart by the `:`), in `format`.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `turn_not_found`, `no_turn`, `no_message`.
    pub fn get_turn(&mut self, target: &str, format: Format) -> Result<Turn, ClientError> {
        self.ask(
            "get_turn",
            None,
            |id| Message::GetTurn {
                id,
                turn_id: target.to_owned(),
                format,
            },
            |reply| match reply {
                Message::Turn { turn, content, .. } => Ok(Turn {
                    meta: turn,
                    format,
                    content,
                }),
                other => Err(other.kind()),
            },
        )
    }

    /// `capture`: a session's latest turn into the relay buffer.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `session_not_found`, `no_turn`.
    pub fn capture(&mut self, session: &str) -> Result<Captured, ClientError> {
        self.ask(
            "capture",
            None,
            |id| Message::Capture {
                id,
                session: session.to_owned(),
            },
            captured,
        )
    }

    /// `capture_by_id`: a turn by id into the relay buffer.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `turn_not_found`.
    pub fn capture_by_id(&mut self, turn_id: &str) -> Result<Captured, ClientError> {
        self.ask(
            "capture_by_id",
            None,
            |id| Message::CaptureById {
                id,
                turn_id: turn_id.to_owned(),
            },
            captured,
        )
    }

    /// `paste`: the relay buffer typed into a session, in `format`.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `buffer_empty`, `session_disconnected`.
    pub fn paste(&mut self, session: &str, format: Format) -> Result<(), ClientError> {
        self.ask(
            "paste",
            None,
            |id| Message::Paste {
                id,
                session: session.to_owned(),
                format,
            },
            done,
        )
    }

    /// `deliver`: the relay buffer to a sink, in `format`.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `buffer_empty`, `sink_failed`.
    pub fn deliver(&mut self, sink: &Sink, format: Format) -> Result<(), ClientError> {
        let (name, session, path) = match sink {
            Sink::Inject(session) => ("inject", Some(session.clone()), None),
            Sink::File(path) => ("file", None, Some(path.clone())),
            Sink::Clipboard => ("clipboard", None, None),
        };
        self.ask(
            "deliver",
            None,
            |id| Message::Deliver {
                id,
                sink: name.to_owned(),
                session,
                path,
                format,
            },
            done,
        )
    }

    /// `session_status`: a session's state now.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `session_not_found`.
    pub fn session_status(&mut self, session: &str) -> Result<SessionState, ClientError> {
        self.ask(
            "session_status",
            None,
            |id| Message::SessionStatus {
                id,
                session: session.to_owned(),
            },
            |reply| match reply {
                Message::Status { status, .. } => Ok(status),
                other => Err(other.kind()),
            },
        )
    }

    /// Where a session's terminals attach: its id, name and `attach.sock`, in its folder
    /// (`$XDG_RUNTIME_DIR/clippy/sessions/<id>/`, the layout `clippy_spool::session_dir`
    /// makes, beside the broker's `clippy/broker.sock`).
    ///
    /// # Errors
    ///
    /// As [`Connection::session_status`]; [`ClientError::NoRuntimeDir`].
    pub fn attach_target(&mut self, session: &str) -> Result<AttachTarget, ClientError> {
        let status = self.session_status(session)?;
        let broker_socket = clippy_proto::socket_path().map_err(|_| ClientError::NoRuntimeDir)?;
        let sessions = broker_socket
            .parent()
            .map(|clippy| clippy.join("sessions"))
            .ok_or(ClientError::NoRuntimeDir)?;
        let path = sessions
            .join(&status.session)
            .join(clippy_proto::attach::ATTACH_SOCKET);
        Ok(AttachTarget {
            session: status.session,
            name: status.name,
            path,
        })
    }

    /// `screen`: a session's screen and `history` lines above it; the wrapper may take
    /// `timeout_ms` (default [`DEFAULT_SCREEN_WAIT_MS`]) to answer.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `session_not_found`, `timeout`.
    pub fn screen(
        &mut self,
        session: &str,
        history: u32,
        timeout_ms: Option<u64>,
    ) -> Result<Screen, ClientError> {
        let (ms, wait) = deadline(timeout_ms, DEFAULT_SCREEN_WAIT_MS);
        self.ask(
            "screen",
            Some(wait),
            |id| Message::Screen {
                id,
                session: session.to_owned(),
                history,
                timeout_ms: Some(ms),
            },
            |reply| match reply {
                Message::ScreenSnapshot {
                    session,
                    lines,
                    history,
                    cols,
                    rows,
                    cursor_row,
                    cursor_col,
                    alternate,
                    ..
                } => Ok(Screen {
                    session,
                    screen: ScreenData {
                        lines,
                        history,
                        cols,
                        rows,
                        cursor_row,
                        cursor_col,
                        alternate,
                    },
                }),
                other => Err(other.kind()),
            },
        )
    }

    /// `read`: a session's spool from `from`, at most `max_bytes` (the broker's default and
    /// ceiling: 1 MiB).
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `invalid_cursor`, `spool_unavailable`.
    pub fn read(
        &mut self,
        session: &str,
        from: u64,
        max_bytes: Option<u32>,
    ) -> Result<SpoolData, ClientError> {
        self.ask(
            "read",
            None,
            |id| Message::Read {
                id,
                session: session.to_owned(),
                from_cursor: from,
                max_bytes,
            },
            |reply| match reply {
                Message::SpoolData {
                    data,
                    cursor,
                    resume_cursor,
                    ..
                } => Ok(SpoolData {
                    data,
                    cursor,
                    resume_cursor,
                }),
                other => Err(other.kind()),
            },
        )
    }

    /// `wait_for`: the first match of `pattern` in the session's output from `from`, within
    /// `timeout_ms` (default [`DEFAULT_WAIT_MS`]; 0 looks once).
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `timeout` (with the `resume_cursor`),
    /// `invalid_pattern`, `invalid_cursor`.
    pub fn wait_for(
        &mut self,
        session: &str,
        pattern: &str,
        kind: PatternKind,
        from: u64,
        timeout_ms: Option<u64>,
    ) -> Result<Found, ClientError> {
        let (ms, wait) = deadline(timeout_ms, DEFAULT_WAIT_MS);
        self.ask(
            "wait_for",
            Some(wait),
            |id| Message::WaitFor {
                id,
                session: session.to_owned(),
                pattern: pattern.to_owned(),
                kind,
                from_cursor: from,
                timeout_ms: Some(ms),
            },
            found,
        )
    }

    /// `wait_prompt`: the session's next prompt from `from`, within `timeout_ms` (default
    /// [`DEFAULT_WAIT_MS`]).
    ///
    /// # Errors
    ///
    /// As [`Connection::wait_for`].
    pub fn wait_prompt(
        &mut self,
        session: &str,
        from: u64,
        timeout_ms: Option<u64>,
    ) -> Result<Found, ClientError> {
        let (ms, wait) = deadline(timeout_ms, DEFAULT_WAIT_MS);
        self.ask(
            "wait_prompt",
            Some(wait),
            |id| Message::WaitPrompt {
                id,
                session: session.to_owned(),
                from_cursor: from,
                timeout_ms: Some(ms),
            },
            found,
        )
    }

    /// `expect_send`: as [`Connection::wait_for`], then `input` typed at once with the match
    /// (its Enter in the same write).
    ///
    /// # Errors
    ///
    /// As [`Connection::wait_for`]; `busy`, `session_disconnected`.
    pub fn expect_send(
        &mut self,
        session: &str,
        pattern: &str,
        kind: PatternKind,
        from: u64,
        timeout_ms: Option<u64>,
        input: Input,
    ) -> Result<Found, ClientError> {
        let (ms, wait) = deadline(timeout_ms, DEFAULT_WAIT_MS);
        self.ask(
            "expect_send",
            Some(wait),
            |id| Message::ExpectSend {
                id,
                session: session.to_owned(),
                pattern: pattern.to_owned(),
                kind,
                from_cursor: from,
                timeout_ms: Some(ms),
                data: input.into_typed(),
            },
            found,
        )
    }

    /// `send`: `input` typed into the session; with its Enter, the broker writes the Enter on
    /// its own after its submit delay and answers once it has, so the reply is allowed
    /// `enter_wait` (that delay, or more). Returns how many bytes were typed, the Enter
    /// included.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `busy`, `session_disconnected`.
    pub fn send(
        &mut self,
        session: &str,
        input: Input,
        enter_wait: Duration,
    ) -> Result<usize, ClientError> {
        let bytes = input.typed_len();
        let enter = input.enter();
        self.ask(
            "send",
            enter.then_some(enter_wait),
            |id| Message::Send {
                id,
                session: session.to_owned(),
                data: input.into_text(),
                enter,
            },
            done,
        )?;
        Ok(bytes)
    }

    /// `exec`: `command` typed at the session's prompt and its output once the next prompt
    /// comes, within `timeout_ms` (default [`DEFAULT_WAIT_MS`]).
    ///
    /// # Errors
    ///
    /// As [`Connection::wait_for`]; `busy` (a command is running).
    pub fn exec(
        &mut self,
        session: &str,
        command: &CommandLine,
        timeout_ms: Option<u64>,
    ) -> Result<Executed, ClientError> {
        let (ms, wait) = deadline(timeout_ms, DEFAULT_WAIT_MS);
        self.ask(
            "exec",
            Some(wait),
            |id| Message::Exec {
                id,
                session: session.to_owned(),
                command: command.as_str().to_owned(),
                timeout_ms: Some(ms),
            },
            |reply| match reply {
                Message::ExecResult {
                    turn_id,
                    output,
                    exit_code,
                    cwd,
                    resume_cursor,
                    ..
                } => Ok(Executed {
                    turn_id,
                    output,
                    exit_code,
                    cwd,
                    resume_cursor,
                }),
                other => Err(other.kind()),
            },
        )
    }

    /// `end_session`: Ctrl+C, then a wait for the prompt of `timeout_ms` (default
    /// [`DEFAULT_END_WAIT_MS`]); with `force`, the session's program is killed.
    ///
    /// # Errors
    ///
    /// As [`Connection::wait_for`].
    pub fn end_session(
        &mut self,
        session: &str,
        force: bool,
        timeout_ms: Option<u64>,
    ) -> Result<Ended, ClientError> {
        let (ms, wait) = deadline(timeout_ms, DEFAULT_END_WAIT_MS);
        self.ask(
            "end_session",
            Some(wait),
            |id| Message::EndSession {
                id,
                session: session.to_owned(),
                force,
                timeout_ms: Some(ms),
            },
            |reply| match reply {
                Message::SessionEnded {
                    outcome,
                    resume_cursor,
                    ..
                } => Ok(Ended {
                    outcome,
                    resume_cursor,
                }),
                other => Err(other.kind()),
            },
        )
    }

    /// `route_add`: a new route; the route as the broker keeps it.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `invalid_argument` (a route to itself, a template
    /// without `{turn}`, …).
    pub fn route_add(&mut self, route: RouteSpec) -> Result<RouteInfo, ClientError> {
        self.ask(
            "route_add",
            None,
            |id| Message::RouteAdd { id, route },
            route_info,
        )
    }

    /// `route_list`: every route.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`].
    pub fn route_list(&mut self) -> Result<Vec<RouteInfo>, ClientError> {
        self.ask(
            "route_list",
            None,
            |id| Message::RouteList { id },
            |reply| match reply {
                Message::Routes { routes, .. } => Ok(routes),
                other => Err(other.kind()),
            },
        )
    }

    /// `route_remove`: the route `route` goes.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `route_not_found`.
    pub fn route_remove(&mut self, route: &str) -> Result<(), ClientError> {
        self.ask(
            "route_remove",
            None,
            |id| Message::RouteRemove {
                id,
                route: route.to_owned(),
            },
            done,
        )
    }

    /// `route_pause`: the route stops delivering until resumed.
    ///
    /// # Errors
    ///
    /// As [`Connection::route_remove`].
    pub fn route_pause(&mut self, route: &str) -> Result<RouteInfo, ClientError> {
        self.ask(
            "route_pause",
            None,
            |id| Message::RoutePause {
                id,
                route: route.to_owned(),
            },
            route_info,
        )
    }

    /// `route_resume`: a paused route delivers again.
    ///
    /// # Errors
    ///
    /// As [`Connection::route_remove`].
    pub fn route_resume(&mut self, route: &str) -> Result<RouteInfo, ClientError> {
        self.ask(
            "route_resume",
            None,
            |id| Message::RouteResume {
                id,
                route: route.to_owned(),
            },
            route_info,
        )
    }

    /// `inbox`: the gated handoffs waiting for a session.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `session_not_found`.
    pub fn inbox(&mut self, session: &str) -> Result<Inbox, ClientError> {
        self.ask(
            "inbox",
            None,
            |id| Message::Inbox {
                id,
                session: session.to_owned(),
            },
            |reply| match reply {
                Message::InboxItems { session, items, .. } => Ok(Inbox { session, items }),
                other => Err(other.kind()),
            },
        )
    }

    /// `approve`: a gated handoff goes on, with `text` in place of its own when given.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `approval_not_found`.
    pub fn approve(&mut self, approval: &str, text: Option<String>) -> Result<(), ClientError> {
        self.ask(
            "approve",
            None,
            |id| Message::Approve {
                id,
                approval: approval.to_owned(),
                text,
            },
            done,
        )
    }

    /// `deny`: a gated handoff is dropped.
    ///
    /// # Errors
    ///
    /// As [`Connection::approve`].
    pub fn deny(&mut self, approval: &str) -> Result<(), ClientError> {
        self.ask(
            "deny",
            None,
            |id| Message::Deny {
                id,
                approval: approval.to_owned(),
            },
            done,
        )
    }

    /// `list_events`: the events the broker still holds after `since`, of `types` (all when
    /// empty), oldest first.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`].
    pub fn list_events(
        &mut self,
        since: Option<u64>,
        types: &[String],
    ) -> Result<Vec<EventRecord>, ClientError> {
        self.ask(
            "list_events",
            None,
            |id| Message::ListEvents {
                id,
                since,
                types: types.to_vec(),
            },
            |reply| match reply {
                Message::Events { events, .. } => Ok(events),
                other => Err(other.kind()),
            },
        )
    }

    /// `subscribe`: this connection becomes a follower of the event stream (after `since`, of
    /// `types`); once subscribed, its reads wait up to `read` (`None`: as long as it takes).
    /// The events come from [`Events::next_event`].
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`].
    pub fn subscribe(
        mut self,
        since: Option<u64>,
        types: &[String],
        read: Option<Duration>,
    ) -> Result<Events, ClientError> {
        self.ask(
            "subscribe",
            None,
            |id| Message::Subscribe {
                id,
                since,
                types: types.to_vec(),
            },
            |reply| match reply {
                Message::Subscribed { .. } => Ok(()),
                other => Err(other.kind()),
            },
        )?;
        self.read_within(read)?;
        Ok(Events {
            connection: self,
            lagged: false,
        })
    }

    /// `history`: turns of live and ended sessions from the broker's store, newest first.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `history_off`, `history_failed`.
    pub fn history(&mut self, query: &HistoryQuery) -> Result<Vec<HistoryEntry>, ClientError> {
        self.ask(
            "history",
            None,
            |id| Message::History {
                id,
                session: query.session.clone(),
                since: query.range.since(),
                until: query.range.until(),
                limit: query.limit,
            },
            |reply| match reply {
                Message::HistoryTurns { turns, .. } => Ok(turns),
                other => Err(other.kind()),
            },
        )
    }

    /// `search`: the stored turns that match the query's words, best match first.
    ///
    /// # Errors
    ///
    /// As [`Connection::history`].
    pub fn search(&mut self, query: &SearchQuery) -> Result<Vec<SearchHit>, ClientError> {
        self.ask(
            "search",
            None,
            |id| Message::Search {
                id,
                query: query.words().to_owned(),
                session: query.session.clone(),
                since: query.range.since(),
                until: query.range.until(),
                limit: query.limit,
            },
            |reply| match reply {
                Message::SearchHits { hits, .. } => Ok(hits),
                other => Err(other.kind()),
            },
        )
    }

    /// `forget_history`: a session's stored turns (`None`, with `all`: every one) go; how
    /// many went.
    ///
    /// # Errors
    ///
    /// As [`Connection::history`].
    pub fn forget_history(
        &mut self,
        session: Option<String>,
        all: bool,
    ) -> Result<u64, ClientError> {
        self.ask(
            "forget_history",
            None,
            |id| Message::ForgetHistory { id, session, all },
            |reply| match reply {
                Message::Forgotten { turns, .. } => Ok(turns),
                other => Err(other.kind()),
            },
        )
    }

    /// `history_status`: the history store's state. A broker that keeps no history and says
    /// so with `history_off` is reported as a store that is not enabled.
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `unknown_type` from a broker older than the store.
    pub fn history_status(&mut self) -> Result<HistoryInfo, ClientError> {
        let asked = self.ask(
            "history_status",
            None,
            |id| Message::HistoryStatus { id },
            |reply| match reply {
                Message::HistoryState { history, .. } => Ok(history),
                other => Err(other.kind()),
            },
        );
        match asked {
            Err(ClientError::Broker {
                reason: ErrorReason::HistoryOff,
                ..
            }) => Ok(HistoryInfo {
                enabled: false,
                path: None,
                turns: 0,
                events: 0,
                bytes: 0,
                problem: None,
            }),
            asked => asked,
        }
    }
}

/// A connection subscribed to the event stream ([`Connection::subscribe`]).
#[derive(Debug)]
pub struct Events {
    connection: Connection,
    lagged: bool,
}

impl Events {
    /// The next event, as it happens.
    ///
    /// # Errors
    ///
    /// [`ClientError::NoAnswer`] when none came within the read time given to `subscribe`
    /// (follow on: the subscription stands); [`ClientError::Lagged`] when the broker dropped
    /// this follower for reading too slowly; else the connection ended.
    pub fn next_event(&mut self) -> Result<EventRecord, ClientError> {
        let next = match self.connection.next_unsolicited() {
            Err(_) if self.lagged => return Err(ClientError::Lagged),
            next => next?,
        };
        match next {
            Message::Event { event, .. } => {
                self.lagged = event.kind == "subscriber.lagged";
                Ok(event)
            }
            other => Err(ClientError::unexpected("an event", other.kind())),
        }
    }
}

fn done(reply: Message) -> Result<(), &'static str> {
    match reply {
        Message::Done { .. } => Ok(()),
        other => Err(other.kind()),
    }
}

fn captured(reply: Message) -> Result<Captured, &'static str> {
    match reply {
        Message::Captured {
            turn_id,
            byte_length,
            ..
        } => Ok(Captured {
            turn_id,
            byte_length,
        }),
        other => Err(other.kind()),
    }
}

fn route_info(reply: Message) -> Result<RouteInfo, &'static str> {
    match reply {
        Message::Route { route, .. } => Ok(route),
        other => Err(other.kind()),
    }
}

fn found(reply: Message) -> Result<Found, &'static str> {
    match reply {
        Message::Matched {
            match_text,
            match_span,
            resume_cursor,
            exit_code,
            cwd,
            timestamp,
            turn_id,
            ..
        } => Ok(Found {
            match_text,
            match_span,
            resume_cursor,
            exit_code,
            cwd,
            timestamp,
            turn_id,
        }),
        other => Err(other.kind()),
    }
}

// ── answer (issue 30) ─────────────────────────────────────────────────────────────────────

/// What [`Connection::answer`] asks: the session, the decision, and optionally the reason
/// (for a denial), the wait meant and who answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Session id, unique id prefix or name.
    pub session: String,
    /// `allow`, `deny` or `always`.
    pub decision: Decision,
    /// Why, for a denial: typed into the agent's own field where its dialog offers one.
    pub reason: Option<String>,
    /// The wait answered (`waiting`'s `id`); `None`: the session's current wait, looked up
    /// when the answer is sent.
    pub waiting_id: Option<u64>,
    /// Who answers, as `session.answered` names it (`None`: the broker names the connection).
    pub by: Option<String>,
}

impl Answer {
    /// An answer to `session`'s current wait.
    pub fn new(session: impl Into<String>, decision: Decision) -> Self {
        Self {
            session: session.into(),
            decision,
            reason: None,
            waiting_id: None,
            by: None,
        }
    }
}

/// What an answer did (`answered`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The session id.
    pub session: String,
    /// The wait answered.
    pub waiting_id: u64,
    /// The decision given.
    pub decision: Decision,
    /// What was pressed, in a sentence.
    pub message: String,
}

impl Connection {
    /// `answer`: answers the permission request `answer.session` waits on, with the dialog's
    /// own keys, pressed by its wrapper while its screen shows the dialog. With no
    /// `waiting_id`, the session's current wait is looked up first and named, so an answer meant
    /// for the dialog on screen now never reaches one that comes after it (`stale_answer`).
    ///
    /// # Errors
    ///
    /// As [`Connection::list_sessions`]; `session_not_found`, `session_disconnected`,
    /// `not_waiting` (nothing asked, or answered already), `stale_answer` (another wait is
    /// current), `unsupported` (a dialog clippy cannot read, or a decision it does not offer:
    /// the message says which keys a person would press), `timeout`.
    pub fn answer(&mut self, answer: &Answer) -> Result<Answered, ClientError> {
        let waiting_id = match answer.waiting_id {
            Some(id) => Some(id),
            None => self
                .session_status(&answer.session)?
                .waiting
                .map(|waiting| waiting.id),
        };
        self.ask(
            "answer",
            Some(Duration::from_millis(DEFAULT_ANSWER_WAIT_MS)),
            |id| Message::Answer {
                id,
                session: answer.session.clone(),
                decision: answer.decision,
                reason: answer.reason.clone(),
                waiting_id,
                by: answer.by.clone(),
            },
            |reply| match reply {
                Message::Answered {
                    session,
                    waiting_id,
                    decision,
                    message,
                    ..
                } => Ok(Answered {
                    session,
                    waiting_id,
                    decision,
                    message,
                }),
                other => Err(other.kind()),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_match_is_decoded_whole() {
        let reply = Message::Matched {
            id: 3,
            matched: true,
            match_text: "$ ".into(),
            match_cursor: 10,
            match_span: (10, 12),
            resume_cursor: 12,
            exit_code: Some(0),
            cwd: Some("/tmp".into()),
            timestamp: Some(5),
            turn_id: Some("k3:1".into()),
        };
        assert_eq!(
            found(reply),
            Ok(Found {
                match_text: "$ ".into(),
                match_span: (10, 12),
                resume_cursor: 12,
                exit_code: Some(0),
                cwd: Some("/tmp".into()),
                timestamp: Some(5),
                turn_id: Some("k3:1".into()),
            })
        );
    }

    #[test]
    fn a_reply_of_another_type_is_named() {
        assert_eq!(found(Message::Done { id: 1 }), Err("done"));
        assert_eq!(captured(Message::Done { id: 1 }), Err("done"));
        assert_eq!(done(Message::Done { id: 1 }), Ok(()));
        assert!(route_info(Message::Done { id: 1 }).is_err());
        let reply = Message::Captured {
            id: 2,
            turn_id: "k3:4".into(),
            byte_length: 9,
        };
        assert_eq!(
            captured(reply),
            Ok(Captured {
                turn_id: "k3:4".into(),
                byte_length: 9
            })
        );
    }

    #[test]
    fn a_wait_takes_its_default_when_none_is_given() {
        assert_eq!(
            deadline(None, DEFAULT_WAIT_MS),
            (30_000, Duration::from_secs(30))
        );
        assert_eq!(deadline(Some(0), DEFAULT_WAIT_MS), (0, Duration::ZERO));
        assert_eq!(deadline(None, DEFAULT_END_WAIT_MS).0, 5_000);
    }
}
