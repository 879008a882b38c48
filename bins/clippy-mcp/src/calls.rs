//! Running a tool: its arguments checked against its type, the broker request built from them,
//! the reply turned into the JSON the tool returns. Blocking; the server runs each call on a
//! thread of its own.

use std::time::Duration;

use clippy_client::{ArgumentError, ClientError, CommandLine, Connection, Found, Input, Sink};
use clippy_proto::{ErrorReason, PatternKind, RouteKind, RouteSpec};
use rmcp::model::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::bridge::Bridge;
use crate::tools::{
    AnswerArgs, ApproveArgs, CaptureArgs, CommandArg, DeliverArgs, DenyArgs, EndSessionArgs,
    EventsSinceArgs, ExecArgs, ExpectSendArgs, GetTurnArgs, HistoryArgs, ListTurnsArgs, NoArgs,
    PasteArgs, ReadSpoolArgs, RouteAddArgs, RouteKindArg, RouteRemoveArgs, ScreenArgs,
    SearchHistoryArgs, SendArgs, SessionArgs, SpawnSessionArgs, TurnFormat, WaitForArgs,
    WaitPromptArgs,
};

/// `events_since`'s default number of events.
const DEFAULT_EVENTS: u32 = 100;

/// What the server allows itself.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most content bytes a tool returns in one result (turn content, spool data, exec
    /// output, screen lines); past it, the result says so and how to read the rest.
    pub max_reply_bytes: usize,
    /// The broker's pause between typed text and its Enter (`broker.submit_delay_ms`): a
    /// `send` with `enter` is answered that much later, and may take that long.
    pub submit_delay: Duration,
}

/// A tool's result: what it returns, or why it failed (an `isError` result).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The tool did what it was asked.
    Done(Value),
    /// It could not: `{reason, message}`, and `resume_cursor` for a wait that timed out.
    Failed(Value),
}

/// A call no tool answers: a protocol error, not a tool result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no tool is named {0:?}")]
pub struct UnknownTool(pub String);

/// Whether the tool `name` may take long: it waits on the broker, a session or a file (and so
/// runs on a thread of its own).
pub fn waits(name: &str) -> bool {
    matches!(
        name,
        "wait_for"
            | "wait_prompt"
            | "expect_send"
            | "exec"
            | "end_session"
            | "screen"
            | "send"
            | "deliver"
            | "spawn_session"
    )
}

/// Runs the tool `name` with `args`.
///
/// # Errors
///
/// [`UnknownTool`] when no tool has that name; everything else is an [`Outcome`].
pub fn call(
    bridge: &Bridge,
    limits: &Limits,
    name: &str,
    args: JsonObject,
) -> Result<Outcome, UnknownTool> {
    let call = Call {
        bridge,
        limits,
        args,
    };
    let result = match name {
        "list_sessions" => call.list_sessions(),
        "list_turns" => call.list_turns(),
        "get_turn" => call.get_turn(),
        "read_spool" => call.read_spool(),
        "wait_for" => call.wait_for(),
        "wait_prompt" => call.wait_prompt(),
        "send" => call.send(),
        "expect_send" => call.expect_send(),
        "exec" => call.exec(),
        "status" => call.status(),
        "screen" => call.screen(),
        "capture" => call.capture(),
        "paste" => call.paste(),
        "deliver" => call.deliver(),
        "route_add" => call.route_add(),
        "route_list" => call.route_list(),
        "route_remove" => call.route_remove(),
        "events_since" => call.events_since(),
        "end_session" => call.end_session(),
        // Starting sessions, history, gated handoffs (issue 30).
        "spawn_session" => call.spawn_session(),
        "history" => call.history(),
        "search_history" => call.search_history(),
        "inbox" => call.inbox(),
        "answer" => call.answer(),
        "approve" => call.approve(),
        "deny" => call.deny(),
        other => return Err(UnknownTool(other.to_owned())),
    };
    Ok(match result {
        Ok(value) => Outcome::Done(value),
        Err(failure) => Outcome::Failed(failure.into_json()),
    })
}

/// Why a call failed, as its result says it.
#[derive(Debug)]
enum Refusal {
    /// The client layer's error: the broker's own reason, no broker, or an argument it refused.
    Client(ClientError),
    /// The arguments are wrong before anything was asked.
    Argument(String),
    /// This clippy-mcp cannot do it where it is (a session to start for a broker it cannot
    /// point a session at).
    Unsupported(String),
}

impl Refusal {
    fn into_json(self) -> Value {
        match self {
            Self::Argument(message) => json!({ "reason": "invalid_argument", "message": message }),
            Self::Unsupported(message) => json!({ "reason": "unsupported", "message": message }),
            Self::Client(err @ (ClientError::Spawn(_) | ClientError::Io { .. })) => {
                json!({ "reason": "spawn_failed", "message": err.to_string() })
            }
            Self::Client(ClientError::Argument(refused)) => {
                let message = match refused {
                    ArgumentError::NothingToSend => {
                        "nothing to send: text is empty and enter is false".to_owned()
                    }
                    other => other.to_string(),
                };
                json!({ "reason": "invalid_argument", "message": message })
            }
            Self::Client(ClientError::Broker {
                reason,
                message,
                resume_cursor,
            }) => {
                let mut value = json!({ "reason": reason.as_str(), "message": message });
                if let Some(cursor) = resume_cursor {
                    value["resume_cursor"] = cursor.into();
                }
                if reason == ErrorReason::Timeout {
                    value["hint"] =
                        "nothing matched in time: wait again with from = resume_cursor".into();
                }
                value
            }
            Self::Client(err @ ClientError::Protocol(_)) => {
                json!({ "reason": "unexpected_reply", "message": err.to_string() })
            }
            Self::Client(err) => {
                json!({ "reason": "broker_unavailable", "message": err.to_string() })
            }
        }
    }
}

impl From<ClientError> for Refusal {
    fn from(err: ClientError) -> Self {
        Self::Client(err)
    }
}

impl From<ArgumentError> for Refusal {
    fn from(err: ArgumentError) -> Self {
        Self::Client(err.into())
    }
}

type Answer = Result<Value, Refusal>;

struct Call<'a> {
    bridge: &'a Bridge,
    limits: &'a Limits,
    args: JsonObject,
}

impl Call<'_> {
    /// The arguments as the tool's type; an argument error names the field.
    fn args<T: DeserializeOwned>(&self) -> Result<T, Refusal> {
        serde_path_to_error::deserialize(Value::Object(self.args.clone())).map_err(|e| {
            let field = e.path().to_string();
            let error = e.into_inner();
            Refusal::Argument(if field == "." {
                format!("invalid arguments: {error}")
            } else {
                format!("invalid argument `{field}`: {error}")
            })
        })
    }

    /// Runs `call` on a broker connection.
    fn broker<T>(
        &self,
        call: impl FnOnce(&mut Connection) -> Result<T, ClientError>,
    ) -> Result<T, Refusal> {
        Ok(self.bridge.with(call)?)
    }

    fn list_sessions(&self) -> Answer {
        let NoArgs {} = self.args()?;
        let sessions = self.broker(Connection::list_sessions)?;
        Ok(json!({ "sessions": sessions }))
    }

    fn list_turns(&self) -> Answer {
        let ListTurnsArgs { session, limit } = self.args()?;
        let turns = self.broker(|broker| broker.list_turns(&session, limit))?;
        Ok(json!({ "session": session, "turns": turns }))
    }

    fn get_turn(&self) -> Answer {
        let GetTurnArgs {
            turn_id,
            session,
            format,
            offset,
        } = self.args()?;
        let which = one_of(turn_id, session, "turn_id", "session")?;
        let turn = self.broker(|broker| broker.get_turn(&which, format.wire()))?;
        let (meta, content) = (turn.meta, turn.content);
        let piece = Piece::of(&content, offset, self.limits.max_reply_bytes)?;
        let mut value = json!({
            "turn_id": meta.turn_id,
            "format": turn.format.as_str(),
            "completed_at_ms": meta.timestamp,
            "input": meta.input,
            "exit_code": meta.exit_code,
            "cwd": meta.cwd,
            "interrupted": meta.interrupted,
            "cut_at_capture": meta.truncated,
            "spool_span": meta.spool_span,
        });
        piece.insert(&mut value, "content", &content);
        if piece.truncated {
            value["hint"] = format!(
                "content cut at {} of {} bytes: call get_turn with turn_id {:?} and offset {} \
                 to read on{}",
                piece.end,
                content.len(),
                meta.turn_id,
                piece.end,
                match meta.spool_span {
                    Some((start, end)) =>
                        format!(", or read_spool from {start} (the turn's raw bytes end at {end})"),
                    None => String::new(),
                }
            )
            .into();
        }
        Ok(value)
    }

    fn read_spool(&self) -> Answer {
        let ReadSpoolArgs {
            session,
            from,
            max_bytes,
            strip_escapes,
        } = self.args()?;
        let ceiling = u32::try_from(self.limits.max_reply_bytes).unwrap_or(u32::MAX);
        let max_bytes = max_bytes.unwrap_or(ceiling).min(ceiling);
        if max_bytes == 0 {
            return Err(Refusal::Argument("max_bytes must be at least 1".into()));
        }
        let read = self.broker(|broker| broker.read(&session, from, Some(max_bytes)))?;
        let (data, cursor) = (read.data, read.cursor);
        // A UTF-8 character cut by the read's end is left for the next read.
        let whole = complete_utf8_prefix(&data);
        let resume_cursor = if whole == data.len() {
            read.resume_cursor
        } else {
            cursor + u64::try_from(whole).unwrap_or(0)
        };
        let data = &data[..whole];
        let mut value = json!({
            "session": session,
            "cursor": cursor,
            "resume_cursor": resume_cursor,
            "bytes": data.len(),
            "escapes_stripped": strip_escapes,
        });
        if strip_escapes {
            value["data"] = String::from_utf8_lossy(&clippy_spool::strip_escapes(data)).into();
        } else {
            insert_bytes(&mut value, "data", data);
        }
        Ok(value)
    }

    fn wait_for(&self) -> Answer {
        let WaitForArgs {
            session,
            pattern,
            regex,
            from,
            timeout_ms,
        } = self.args()?;
        let found = self.broker(|broker| {
            broker.wait_for(&session, &pattern, pattern_kind(regex), from, timeout_ms)
        })?;
        Ok(matched(found))
    }

    fn wait_prompt(&self) -> Answer {
        let WaitPromptArgs {
            session,
            from,
            timeout_ms,
        } = self.args()?;
        let found = self.broker(|broker| broker.wait_prompt(&session, from, timeout_ms))?;
        Ok(matched(found))
    }

    fn send(&self) -> Answer {
        let SendArgs {
            session,
            text,
            enter,
        } = self.args()?;
        let input = Input::new(text, enter)?;
        // The broker writes the Enter on its own after its submit delay, and answers once it
        // has (CONTRACTS/BROKER.md).
        let bytes = self.broker(|broker| broker.send(&session, input, self.limits.submit_delay))?;
        Ok(json!({ "session": session, "bytes": bytes, "enter": enter }))
    }

    fn expect_send(&self) -> Answer {
        let ExpectSendArgs {
            session,
            pattern,
            regex,
            from,
            timeout_ms,
            text,
            enter,
        } = self.args()?;
        let input = Input::new(text, enter)?;
        let found = self.broker(|broker| {
            broker.expect_send(
                &session,
                &pattern,
                pattern_kind(regex),
                from,
                timeout_ms,
                input,
            )
        })?;
        Ok(matched(found))
    }

    fn exec(&self) -> Answer {
        let ExecArgs {
            session,
            command,
            timeout_ms,
        } = self.args()?;
        let command = CommandLine::new(command)?;
        let done = self.broker(|broker| broker.exec(&session, &command, timeout_ms))?;
        let mut value = json!({
            "turn_id": done.turn_id,
            "exit_code": done.exit_code,
            "cwd": done.cwd,
            "resume_cursor": done.resume_cursor,
        });
        let output = done.output;
        let piece = Piece::of(output.as_bytes(), 0, self.limits.max_reply_bytes)?;
        piece.insert(&mut value, "output", output.as_bytes());
        if piece.truncated {
            value["hint"] = format!(
                "output cut at {} of {} bytes: call get_turn with turn_id {} and offset {} to \
                 read on",
                piece.end,
                output.len(),
                done.turn_id.as_deref().unwrap_or("?"),
                piece.end
            )
            .into();
        }
        Ok(value)
    }

    fn status(&self) -> Answer {
        let SessionArgs { session } = self.args()?;
        let status = self.broker(|broker| broker.session_status(&session))?;
        Ok(json!({ "status": status }))
    }

    fn screen(&self) -> Answer {
        let ScreenArgs { session, history } = self.args()?;
        let clippy_client::Screen {
            session,
            screen:
                clippy_proto::ScreenData {
                    mut lines,
                    mut history,
                    cols,
                    rows,
                    cursor_row,
                    cursor_col,
                    alternate,
                },
        } = self.broker(|broker| broker.screen(&session, history, None))?;
        // Blank rows below the last written one say nothing (`rows` gives the height).
        while lines.len() > usize::try_from(history).unwrap_or(0)
            && lines.last().is_some_and(String::is_empty)
            && usize::from(cursor_row) + usize::try_from(history).unwrap_or(0) + 1 < lines.len()
        {
            lines.pop();
        }
        // Oldest lines go first when the screen is larger than a reply may be.
        let mut size: usize = lines.iter().map(|line| line.len() + 1).sum();
        let mut cut = 0;
        while size > self.limits.max_reply_bytes && !lines.is_empty() {
            size -= lines.remove(0).len() + 1;
            history = history.saturating_sub(1);
            cut += 1;
        }
        let mut value = json!({
            "session": session,
            "cols": cols,
            "rows": rows,
            "cursor_row": cursor_row,
            "cursor_col": cursor_col,
            "alternate_screen": alternate,
            "history_lines": history,
            "text": lines.join("\n"),
        });
        if cut > 0 {
            value["truncated"] = true.into();
            value["hint"] =
                format!("the {cut} oldest lines were left out to fit the reply limit").into();
        }
        Ok(value)
    }

    fn capture(&self) -> Answer {
        let CaptureArgs { session, turn_id } = self.args()?;
        let captured = match (session, turn_id) {
            (Some(session), None) => self.broker(|broker| broker.capture(&session))?,
            (None, Some(turn_id)) => self.broker(|broker| broker.capture_by_id(&turn_id))?,
            _ => return Err(either("session", "turn_id")),
        };
        Ok(json!({ "turn_id": captured.turn_id, "byte_length": captured.byte_length }))
    }

    fn paste(&self) -> Answer {
        let PasteArgs { session, format } = self.args()?;
        self.broker(|broker| broker.paste(&session, format.wire()))?;
        Ok(json!({ "session": session, "pasted": true }))
    }

    fn deliver(&self) -> Answer {
        let DeliverArgs { path, format } = self.args()?;
        let path = absolute(&path)?;
        self.broker(|broker| broker.deliver(&Sink::File(path.clone()), format.wire()))?;
        Ok(json!({ "path": path, "delivered": true }))
    }

    fn route_add(&self) -> Answer {
        let RouteAddArgs {
            from,
            to,
            kind,
            template,
            format,
            interrupt,
            max_hops,
            gated,
            submit,
        } = self.args()?;
        let route = RouteSpec {
            from,
            to,
            kind: match kind {
                RouteKindArg::Handoff => RouteKind::Handoff,
                RouteKindArg::Report => RouteKind::Report,
            },
            template,
            format: format.map(TurnFormat::wire),
            interrupt,
            max_hops,
            gated,
            submit,
        };
        let route = self.broker(|broker| broker.route_add(route))?;
        Ok(json!({ "route": route }))
    }

    fn route_list(&self) -> Answer {
        let NoArgs {} = self.args()?;
        let routes = self.broker(Connection::route_list)?;
        Ok(json!({ "routes": routes }))
    }

    fn route_remove(&self) -> Answer {
        let RouteRemoveArgs { route } = self.args()?;
        self.broker(|broker| broker.route_remove(&route))?;
        Ok(json!({ "route": route, "removed": true }))
    }

    fn events_since(&self) -> Answer {
        let EventsSinceArgs {
            since,
            types,
            limit,
        } = self.args()?;
        let limit = usize::try_from(limit.unwrap_or(DEFAULT_EVENTS).max(1)).unwrap_or(usize::MAX);
        let events = self.broker(|broker| broker.list_events(since, &types))?;
        // `events.missed` (id 0) says what the broker no longer holds; it is not an event of
        // the stream and does not move the cursor.
        let mut kept = Vec::new();
        let mut size = 0;
        let mut more = false;
        for event in events {
            let value = serde_json::to_value(&event).unwrap_or(Value::Null);
            let len = value.to_string().len();
            if kept.len() >= limit || (size + len > self.limits.max_reply_bytes && !kept.is_empty())
            {
                more = true;
                break;
            }
            size += len;
            kept.push((event.id, value));
        }
        let last = kept
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| *id > 0)
            .max()
            .or(since)
            .unwrap_or(0);
        let mut value = json!({
            "events": kept.into_iter().map(|(_, value)| value).collect::<Vec<_>>(),
            "last_event_id": last,
            "more": more,
        });
        if more {
            value["hint"] = format!("more events follow: call again with since = {last}").into();
        }
        Ok(value)
    }

    fn end_session(&self) -> Answer {
        let EndSessionArgs {
            session,
            force,
            timeout_ms,
        } = self.args()?;
        let ended = self.broker(|broker| broker.end_session(&session, force, timeout_ms))?;
        Ok(json!({
            "session": session,
            "outcome": ended.outcome,
            "resume_cursor": ended.resume_cursor,
        }))
    }
}

// ---- Starting sessions, history, gated handoffs (issue 30) ----

/// How long a session to start may take to register when the call gives no `timeout_ms`.
const DEFAULT_SPAWN_MS: u64 = 30_000;

impl Call<'_> {
    fn spawn_session(&self) -> Answer {
        let SpawnSessionArgs {
            command,
            name,
            cwd,
            env,
            size,
            preset,
            shell_integration,
            no_agent_hooks,
            no_history,
            timeout_ms,
        } = self.args()?;
        let command = match command {
            Some(CommandArg::Words(words)) if words.first().is_some_and(|w| !w.is_empty()) => words,
            Some(CommandArg::Line(line)) => {
                clippy_client::command_words(&line).map_err(|e| named("command", &e.to_string()))?
            }
            None if shell_integration => Vec::new(),
            _ => {
                return Err(named(
                    "command",
                    "the command is empty: give the program and its arguments (a list of words \
                     or one line), or shell_integration for the user's shell",
                ));
            }
        };
        let size = match size {
            Some(size) => clippy_client::TermSize::new(size.cols, size.rows)
                .map_err(|e| named("size", &e.to_string()))?,
            None => clippy_client::TermSize::DETACHED,
        };
        if name.as_deref().is_some_and(|name| name.trim().is_empty()) {
            return Err(named("name", "a name is not blank"));
        }
        let cwd = cwd.map(|cwd| absolute(&cwd)).transpose()?;
        let mut vars = Vec::new();
        for (key, value) in &env {
            if key == "XDG_RUNTIME_DIR" {
                return Err(named(
                    "env",
                    "XDG_RUNTIME_DIR is where the session finds its broker: clippy-mcp sets it",
                ));
            }
            let (key, value) =
                clippy_client::variable(key, value).map_err(|e| named("env", &e.to_string()))?;
            vars.push((key.into(), value.into()));
        }
        if let Some(runtime) = self.runtime_dir()? {
            vars.push(("XDG_RUNTIME_DIR".into(), runtime.into_os_string()));
        }
        let request = clippy_client::Spawn {
            command: command.into_iter().map(Into::into).collect(),
            name,
            preset,
            pattern: None,
            config: None,
            cwd: cwd.map(Into::into),
            env: vars,
            size: size.spec(),
            shell_integration,
            no_agent_hooks,
            no_history,
        };
        let timeout = Duration::from_millis(timeout_ms.unwrap_or(DEFAULT_SPAWN_MS).max(1));
        let (id, wrapper) = clippy_client::spawn_child(&request, timeout)?;
        reap(wrapper);
        let status = self.broker(|broker| broker.session_status(&id))?;
        Ok(json!({ "session": id, "name": status.name.clone(), "status": status }))
    }

    /// The runtime folder a new session must be given so it registers with this clippy-mcp's
    /// broker: none when the broker is the one of this process's `XDG_RUNTIME_DIR`, else the
    /// folder of a socket at `DIR/clippy/broker.sock`.
    fn runtime_dir(&self) -> Result<Option<std::path::PathBuf>, Refusal> {
        let socket = self.bridge.socket();
        if clippy_proto::socket_path().is_ok_and(|own| own == socket) {
            return Ok(None);
        }
        let runtime = socket
            .ends_with("clippy/broker.sock")
            .then(|| socket.parent().and_then(std::path::Path::parent))
            .flatten()
            .filter(|dir| dir.is_absolute());
        match runtime {
            Some(dir) => Ok(Some(dir.to_owned())),
            None => Err(Refusal::Unsupported(format!(
                "a session registers with the broker of its runtime folder \
                 (DIR/clippy/broker.sock); this clippy-mcp's broker is at {}, which is not one",
                socket.display()
            ))),
        }
    }

    fn history(&self) -> Answer {
        let HistoryArgs {
            session,
            since,
            until,
            limit,
        } = self.args()?;
        let query = clippy_client::HistoryQuery {
            session,
            range: time_range(since.as_deref(), until.as_deref())?,
            limit: at_least_one(limit)?,
        };
        let turns = self.broker(|broker| broker.history(&query))?;
        Ok(json!({ "turns": turns }))
    }

    fn search_history(&self) -> Answer {
        let SearchHistoryArgs {
            query,
            session,
            since,
            until,
            limit,
        } = self.args()?;
        let mut search =
            clippy_client::SearchQuery::new(query).map_err(|e| named("query", &e.to_string()))?;
        search.session = session;
        search.range = time_range(since.as_deref(), until.as_deref())?;
        search.limit = at_least_one(limit)?;
        let hits = self.broker(|broker| broker.search(&search))?;
        let hits: Vec<Value> = hits
            .into_iter()
            .map(|hit| {
                let mut value = serde_json::to_value(&hit.entry).unwrap_or(Value::Null);
                value["snippet"] = hit.snippet.into();
                value
            })
            .collect();
        Ok(json!({ "query": search.words(), "hits": hits }))
    }

    fn inbox(&self) -> Answer {
        let SessionArgs { session } = self.args()?;
        let inbox = self.broker(|broker| broker.inbox(&session))?;
        Ok(json!({ "session": inbox.session, "items": inbox.items }))
    }

    fn answer(&self) -> Answer {
        let AnswerArgs {
            session,
            decision,
            reason,
            id,
        } = self.args()?;
        let answered = self.broker(|broker| {
            broker.answer(&clippy_client::Answer {
                session: session.clone(),
                decision: decision.wire(),
                reason,
                waiting_id: id,
                by: Some("clippy-mcp".into()),
            })
        })?;
        Ok(json!({
            "session": answered.session,
            "id": answered.waiting_id,
            "decision": answered.decision.as_str(),
            "message": answered.message,
        }))
    }

    fn approve(&self) -> Answer {
        let ApproveArgs { approval, text } = self.args()?;
        let edited = text.is_some();
        self.broker(|broker| broker.approve(&approval, text))?;
        Ok(json!({ "approval": approval, "approved": true, "edited": edited }))
    }

    fn deny(&self) -> Answer {
        let DenyArgs { approval } = self.args()?;
        self.broker(|broker| broker.deny(&approval))?;
        Ok(json!({ "approval": approval, "denied": true }))
    }
}

/// A started session's wrapper stays this process's child: it is waited for when it ends, on
/// a thread of its own, so no zombie is left.
fn reap(mut wrapper: std::process::Child) {
    drop((
        wrapper.stdin.take(),
        wrapper.stdout.take(),
        wrapper.stderr.take(),
    ));
    let waited = std::thread::Builder::new()
        .name("reap".into())
        .spawn(move || {
            let _ = wrapper.wait();
        });
    drop(waited); // Without a thread the wrapper is a zombie once it ends: harmless.
}

/// An argument refused, naming it.
fn named(field: &str, why: &str) -> Refusal {
    Refusal::Argument(format!("invalid argument `{field}`: {why}"))
}

/// `since` and `until` as times (`clippy_client::when`), counted back from now.
fn time_range(
    since: Option<&str>,
    until: Option<&str>,
) -> Result<clippy_client::TimeRange, Refusal> {
    let now = clippy_proto::unix_ms_now();
    let parse = |field: &str, text: Option<&str>| {
        text.map(|text| clippy_client::when::parse(text, now))
            .transpose()
            .map_err(|e| named(field, &e.to_string()))
    };
    let since = parse("since", since)?;
    let until = parse("until", until)?;
    Ok(clippy_client::TimeRange::new(since, until)?)
}

fn at_least_one(limit: Option<u32>) -> Result<Option<u32>, Refusal> {
    match limit {
        Some(0) => Err(named("limit", "at least 1")),
        limit => Ok(limit),
    }
}

/// A wait's outcome as the tool returns it.
fn matched(found: Found) -> Value {
    let mut value = json!({
        "matched": true,
        "match_text": found.match_text,
        "match_span": [found.match_span.0, found.match_span.1],
        "resume_cursor": found.resume_cursor,
    });
    if let Some(code) = found.exit_code {
        value["exit_code"] = code.into();
    }
    if let Some(cwd) = found.cwd {
        value["cwd"] = cwd.into();
    }
    if let Some(at) = found.timestamp {
        value["timestamp_ms"] = at.into();
    }
    if let Some(turn_id) = found.turn_id {
        value["turn_id"] = turn_id.into();
    }
    value
}

fn pattern_kind(regex: bool) -> PatternKind {
    if regex {
        PatternKind::Regex
    } else {
        PatternKind::Literal
    }
}

/// Exactly one of two alternative arguments.
fn one_of(
    a: Option<String>,
    b: Option<String>,
    a_name: &str,
    b_name: &str,
) -> Result<String, Refusal> {
    match (a, b) {
        (Some(value), None) | (None, Some(value)) => Ok(value),
        _ => Err(either(a_name, b_name)),
    }
}

fn either(a: &str, b: &str) -> Refusal {
    Refusal::Argument(format!("give either {a} or {b}, not both and not neither"))
}

/// `path` made absolute against the working directory, as a UTF-8 string (the wire's).
fn absolute(path: &str) -> Result<String, Refusal> {
    if path.is_empty() {
        return Err(Refusal::Argument("path is empty".into()));
    }
    let path = std::path::Path::new(path);
    if path.is_absolute() {
        return Ok(path.to_string_lossy().into_owned());
    }
    let cwd = std::env::current_dir().map_err(|e| {
        Refusal::Argument(format!(
            "the path is relative and the working directory is unknown ({e}): give an absolute path"
        ))
    })?;
    cwd.join(path)
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| Refusal::Argument("the path is not UTF-8".into()))
}

/// The bytes as a JSON string when they are UTF-8, else base64 under `<name>_b64`.
fn insert_bytes(value: &mut Value, name: &str, bytes: &[u8]) {
    let (name, text) = clippy_client::bytes_field(name, bytes);
    value[name] = text.into();
}

/// How long the prefix of `bytes` is that ends on a whole UTF-8 character: all of it, unless
/// it ends inside a character whose first byte is in the last three.
fn complete_utf8_prefix(bytes: &[u8]) -> usize {
    let tail_start = bytes.len().saturating_sub(3);
    for at in (tail_start..bytes.len()).rev() {
        let byte = bytes[at];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for its lead
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return bytes.len(),
        };
        return if bytes.len() - at < needed {
            at
        } else {
            bytes.len()
        };
    }
    bytes.len()
}

/// The part of some content one reply returns: `[start, end)`, on UTF-8 character boundaries
/// when the content is UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    start: usize,
    end: usize,
    truncated: bool,
}

impl Piece {
    fn of(content: &[u8], offset: u64, max: usize) -> Result<Self, Refusal> {
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        if offset > content.len() {
            return Err(Refusal::Argument(format!(
                "offset {offset} is past the content's end ({} bytes)",
                content.len()
            )));
        }
        let continuation = |at: usize| content.get(at).is_some_and(|b| b & 0xC0 == 0x80);
        let mut start = offset;
        while continuation(start) && start - offset < 3 {
            start += 1;
        }
        let mut end = start.saturating_add(max.max(4)).min(content.len());
        if end < content.len() {
            let limit = end.saturating_sub(3).max(start + 1);
            while end > limit && continuation(end) {
                end -= 1;
            }
        }
        Ok(Self {
            start,
            end,
            truncated: end < content.len(),
        })
    }

    /// Puts the piece of `content` into `value` as `name` (or `name_b64`), with its framing.
    fn insert(self, value: &mut Value, name: &str, content: &[u8]) {
        insert_bytes(value, name, &content[self.start..self.end]);
        value["total_bytes"] = content.len().into();
        value["offset"] = self.start.into();
        value["returned_bytes"] = (self.end - self.start).into();
        value["truncated"] = self.truncated.into();
        if self.truncated {
            value["next_offset"] = self.end.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_never_splits_a_character() {
        let text = "aé€😀b".repeat(50);
        let bytes = text.as_bytes();
        for max in 4..20 {
            let mut offset = 0;
            let mut joined = Vec::new();
            loop {
                let piece = Piece::of(bytes, offset as u64, max).expect("in range");
                let part = std::str::from_utf8(&bytes[piece.start..piece.end]).expect("whole");
                joined.extend_from_slice(part.as_bytes());
                if !piece.truncated {
                    break;
                }
                assert!(piece.end > offset, "progress");
                offset = piece.end;
            }
            assert_eq!(joined, bytes, "max {max}");
        }
    }

    #[test]
    fn an_offset_past_the_end_is_refused_and_at_the_end_is_empty() {
        assert!(matches!(
            Piece::of(b"abc", 4, 10),
            Err(Refusal::Argument(_))
        ));
        let piece = Piece::of(b"abc", 3, 10).expect("at the end");
        assert_eq!((piece.start, piece.end, piece.truncated), (3, 3, false));
    }

    #[test]
    fn a_character_cut_at_a_read_end_is_left_for_the_next_read() {
        let euro = "€".as_bytes();
        assert_eq!(complete_utf8_prefix(b"abc"), 3);
        assert_eq!(complete_utf8_prefix(&[b'a', euro[0], euro[1]]), 1);
        assert_eq!(complete_utf8_prefix(&[b'a', euro[0], euro[1], euro[2]]), 4);
        // Not UTF-8 at all: nothing is held back.
        assert_eq!(complete_utf8_prefix(&[0xff, 0xfe]), 2);
    }

    #[test]
    fn bytes_that_are_not_utf8_go_as_base64() {
        let mut value = json!({});
        insert_bytes(&mut value, "data", &[0xff, b'a']);
        assert_eq!(value["data_b64"], "/2E=");
        insert_bytes(&mut value, "data", b"ok");
        assert_eq!(value["data"], "ok");
    }

    fn refused(result: Result<impl std::fmt::Debug, Refusal>) -> String {
        match result {
            Err(Refusal::Argument(message)) => message,
            other => panic!("not an argument refusal: {other:?}"),
        }
    }

    #[test]
    fn times_are_read_as_the_cli_reads_them_and_a_bad_one_is_named() {
        let range = time_range(Some("2026-11-26"), Some("1795687200000")).expect("two times");
        assert_eq!(range.since(), Some(1_795_651_200_000));
        assert_eq!(range.until(), Some(1_795_687_200_000));
        let ago = time_range(Some("2h"), None).expect("a time ago");
        assert!(
            ago.since()
                .is_some_and(|at| at < clippy_proto::unix_ms_now())
        );
        let said = refused(time_range(Some("yesterday"), None));
        assert!(said.starts_with("invalid argument `since`: "), "{said}");
        let said = refused(time_range(None, Some("2026-02-30")));
        assert!(
            said.contains("`until`") && said.contains("no day 30"),
            "{said}"
        );
        assert!(matches!(
            time_range(Some("1h"), Some("2h")),
            Err(Refusal::Client(ClientError::Argument(
                ArgumentError::EmptyRange { .. }
            )))
        ));
        assert_eq!(at_least_one(Some(2)).ok(), Some(Some(2)));
        assert!(refused(at_least_one(Some(0))).contains("`limit`"));
    }

    #[test]
    fn a_session_is_pointed_at_the_runtime_folder_of_the_broker_it_must_register_with() {
        let limits = Limits {
            max_reply_bytes: 1024,
            submit_delay: Duration::ZERO,
        };
        let runtime_of = |socket: &str| {
            let bridge = Bridge::new(Some(std::path::Path::new(socket)), Duration::from_secs(1))
                .expect("an explicit socket");
            let call = Call {
                bridge: &bridge,
                limits: &limits,
                args: JsonObject::new(),
            };
            call.runtime_dir()
        };
        assert_eq!(
            runtime_of("/elsewhere/run/clippy/broker.sock").ok(),
            Some(Some("/elsewhere/run".into()))
        );
        let said = match runtime_of("/tmp/other.sock") {
            Err(Refusal::Unsupported(said)) => said,
            other => panic!("{other:?}"),
        };
        assert!(said.contains("/tmp/other.sock"), "{said}");
    }

    #[test]
    fn a_spawn_failure_and_an_unsupported_socket_have_their_reasons() {
        let value = Refusal::Client(ClientError::Spawn("it died".into())).into_json();
        assert_eq!(value["reason"], "spawn_failed");
        let value = Refusal::Unsupported("no".into()).into_json();
        assert_eq!(value["reason"], "unsupported");
    }

    #[test]
    fn a_timeout_keeps_its_resume_cursor() {
        let value = Refusal::Client(ClientError::Broker {
            reason: ErrorReason::Timeout,
            message: "no match".into(),
            resume_cursor: Some(42),
        })
        .into_json();
        assert_eq!(value["reason"], "timeout");
        assert_eq!(value["resume_cursor"], 42);
    }
}
