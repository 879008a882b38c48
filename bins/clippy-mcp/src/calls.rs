//! Running a tool: its arguments checked against its type, the broker request built from them,
//! the reply turned into the JSON the tool returns. Blocking; the server runs each call on a
//! thread of its own.

use std::time::Duration;

use base64::Engine as _;
use clippy_proto::{ErrorReason, Message, PatternKind, RouteKind, RouteSpec};
use rmcp::model::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::bridge::{Bridge, Failure};
use crate::tools::{
    CaptureArgs, DeliverArgs, EndSessionArgs, EventsSinceArgs, ExecArgs, ExpectSendArgs,
    GetTurnArgs, ListTurnsArgs, NoArgs, PasteArgs, ReadSpoolArgs, RouteAddArgs, RouteKindArg,
    RouteRemoveArgs, ScreenArgs, SendArgs, SessionArgs, TurnFormat, WaitForArgs, WaitPromptArgs,
};

/// The waits' default deadline, as the broker's.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// `end_session`'s default deadline, as the broker's.
const DEFAULT_END_MS: u64 = 5_000;
/// How long the wrapper may take to answer a `screen` request.
const SCREEN_TIMEOUT_MS: u64 = 5_000;
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
    /// The broker's own reason.
    Broker(Failure),
    /// The arguments are wrong before anything was asked.
    Argument(String),
}

impl Refusal {
    fn into_json(self) -> Value {
        match self {
            Self::Argument(message) => json!({ "reason": "invalid_argument", "message": message }),
            Self::Broker(Failure::Refused {
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
            Self::Broker(Failure::Unreachable(message)) => {
                json!({ "reason": "broker_unavailable", "message": message })
            }
            Self::Broker(Failure::Unexpected(message)) => {
                json!({ "reason": "unexpected_reply", "message": message })
            }
        }
    }
}

impl From<Failure> for Refusal {
    fn from(failure: Failure) -> Self {
        Self::Broker(failure)
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

    fn quick(&self, make: impl FnOnce(u32) -> Message) -> Result<Message, Refusal> {
        Ok(self.bridge.request(None, make)?)
    }

    fn waiting(
        &self,
        timeout_ms: u64,
        make: impl FnOnce(u32) -> Message,
    ) -> Result<Message, Refusal> {
        Ok(self
            .bridge
            .request(Some(Duration::from_millis(timeout_ms)), make)?)
    }

    fn list_sessions(&self) -> Answer {
        let NoArgs {} = self.args()?;
        match self.quick(|id| Message::ListSessions { id })? {
            Message::Sessions { sessions, .. } => Ok(json!({ "sessions": sessions })),
            other => unexpected("list_sessions", &other),
        }
    }

    fn list_turns(&self) -> Answer {
        let ListTurnsArgs { session, limit } = self.args()?;
        match self.quick(|id| Message::ListTurns {
            id,
            session: session.clone(),
            limit,
        })? {
            Message::Turns { turns, .. } => Ok(json!({ "session": session, "turns": turns })),
            other => unexpected("list_turns", &other),
        }
    }

    fn get_turn(&self) -> Answer {
        let GetTurnArgs {
            turn_id,
            session,
            format,
            offset,
        } = self.args()?;
        let which = one_of(turn_id, session, "turn_id", "session")?;
        let reply = self.quick(|id| Message::GetTurn {
            id,
            turn_id: which,
            format: format.wire(),
        })?;
        let Message::Turn { turn, content, .. } = reply else {
            return unexpected("get_turn", &reply);
        };
        let piece = Piece::of(&content, offset, self.limits.max_reply_bytes)?;
        let mut value = json!({
            "turn_id": turn.turn_id,
            "format": format_name(format),
            "completed_at_ms": turn.timestamp,
            "input": turn.input,
            "exit_code": turn.exit_code,
            "cwd": turn.cwd,
            "interrupted": turn.interrupted,
            "cut_at_capture": turn.truncated,
            "spool_span": turn.spool_span,
        });
        piece.insert(&mut value, "content", &content);
        if piece.truncated {
            value["hint"] = format!(
                "content cut at {} of {} bytes: call get_turn with turn_id {:?} and offset {} \
                 to read on{}",
                piece.end,
                content.len(),
                turn.turn_id,
                piece.end,
                match turn.spool_span {
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
        let reply = self.quick(|id| Message::Read {
            id,
            session: session.clone(),
            from_cursor: from,
            max_bytes: Some(max_bytes),
        })?;
        let Message::SpoolData {
            data,
            cursor,
            resume_cursor,
            ..
        } = reply
        else {
            return unexpected("read", &reply);
        };
        // A UTF-8 character cut by the read's end is left for the next read.
        let whole = complete_utf8_prefix(&data);
        let resume_cursor = if whole == data.len() {
            resume_cursor
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
        let timeout_ms = timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
        let reply = self.waiting(timeout_ms, |id| Message::WaitFor {
            id,
            session,
            pattern,
            kind: pattern_kind(regex),
            from_cursor: from,
            timeout_ms: Some(timeout_ms),
        })?;
        matched("wait_for", reply)
    }

    fn wait_prompt(&self) -> Answer {
        let WaitPromptArgs {
            session,
            from,
            timeout_ms,
        } = self.args()?;
        let timeout_ms = timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
        let reply = self.waiting(timeout_ms, |id| Message::WaitPrompt {
            id,
            session,
            from_cursor: from,
            timeout_ms: Some(timeout_ms),
        })?;
        matched("wait_prompt", reply)
    }

    fn send(&self) -> Answer {
        let SendArgs {
            session,
            text,
            enter,
        } = self.args()?;
        if text.is_empty() && !enter {
            return Err(Refusal::Argument(
                "nothing to send: text is empty and enter is false".into(),
            ));
        }
        let bytes = text.len() + usize::from(enter);
        // The broker writes the Enter on its own after its submit delay, and answers once it
        // has (CONTRACTS/BROKER.md).
        let request = |id| Message::Send {
            id,
            session: session.clone(),
            data: text.into_bytes(),
            enter,
        };
        let reply = if enter {
            self.waiting(
                u64::try_from(self.limits.submit_delay.as_millis()).unwrap_or(u64::MAX),
                request,
            )?
        } else {
            self.quick(request)?
        };
        match reply {
            Message::Done { .. } => {}
            other => return unexpected("send", &other),
        }
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
        let mut data = text.into_bytes();
        if enter {
            data.push(b'\r');
        }
        if data.is_empty() {
            return Err(Refusal::Argument(
                "nothing to send: text is empty and enter is false".into(),
            ));
        }
        let timeout_ms = timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
        let reply = self.waiting(timeout_ms, |id| Message::ExpectSend {
            id,
            session,
            pattern,
            kind: pattern_kind(regex),
            from_cursor: from,
            timeout_ms: Some(timeout_ms),
            data,
        })?;
        matched("expect_send", reply)
    }

    fn exec(&self) -> Answer {
        let ExecArgs {
            session,
            command,
            timeout_ms,
        } = self.args()?;
        if command.trim().is_empty() || command.contains(['\n', '\r']) {
            return Err(Refusal::Argument(
                "exec runs one non-empty command line; type anything else with send".into(),
            ));
        }
        let timeout_ms = timeout_ms.unwrap_or(DEFAULT_WAIT_MS);
        let reply = self.waiting(timeout_ms, |id| Message::Exec {
            id,
            session,
            command,
            timeout_ms: Some(timeout_ms),
        })?;
        let Message::ExecResult {
            turn_id,
            output,
            exit_code,
            cwd,
            resume_cursor,
            ..
        } = reply
        else {
            return unexpected("exec", &reply);
        };
        let mut value = json!({
            "turn_id": turn_id,
            "exit_code": exit_code,
            "cwd": cwd,
            "resume_cursor": resume_cursor,
        });
        let piece = Piece::of(output.as_bytes(), 0, self.limits.max_reply_bytes)?;
        piece.insert(&mut value, "output", output.as_bytes());
        if piece.truncated {
            value["hint"] = format!(
                "output cut at {} of {} bytes: call get_turn with turn_id {} and offset {} to \
                 read on",
                piece.end,
                output.len(),
                turn_id.as_deref().unwrap_or("?"),
                piece.end
            )
            .into();
        }
        Ok(value)
    }

    fn status(&self) -> Answer {
        let SessionArgs { session } = self.args()?;
        match self.quick(|id| Message::SessionStatus { id, session })? {
            Message::Status { status, .. } => Ok(json!({ "status": status })),
            other => unexpected("session_status", &other),
        }
    }

    fn screen(&self) -> Answer {
        let ScreenArgs { session, history } = self.args()?;
        let reply = self.waiting(SCREEN_TIMEOUT_MS, |id| Message::Screen {
            id,
            session,
            history,
            timeout_ms: Some(SCREEN_TIMEOUT_MS),
        })?;
        let Message::ScreenSnapshot {
            session,
            mut lines,
            mut history,
            cols,
            rows,
            cursor_row,
            cursor_col,
            alternate,
            ..
        } = reply
        else {
            return unexpected("screen", &reply);
        };
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
        let reply = match (session, turn_id) {
            (Some(session), None) => self.quick(|id| Message::Capture { id, session })?,
            (None, Some(turn_id)) => self.quick(|id| Message::CaptureById { id, turn_id })?,
            _ => return Err(either("session", "turn_id")),
        };
        match reply {
            Message::Captured {
                turn_id,
                byte_length,
                ..
            } => Ok(json!({ "turn_id": turn_id, "byte_length": byte_length })),
            other => unexpected("capture", &other),
        }
    }

    fn paste(&self) -> Answer {
        let PasteArgs { session, format } = self.args()?;
        match self.quick(|id| Message::Paste {
            id,
            session: session.clone(),
            format: format.wire(),
        })? {
            Message::Done { .. } => Ok(json!({ "session": session, "pasted": true })),
            other => unexpected("paste", &other),
        }
    }

    fn deliver(&self) -> Answer {
        let DeliverArgs { path, format } = self.args()?;
        let path = absolute(&path)?;
        let reply = self.quick(|id| Message::Deliver {
            id,
            sink: "file".into(),
            session: None,
            path: Some(path.clone()),
            format: format.wire(),
        })?;
        match reply {
            Message::Done { .. } => Ok(json!({ "path": path, "delivered": true })),
            other => unexpected("deliver", &other),
        }
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
        match self.quick(|id| Message::RouteAdd { id, route })? {
            Message::Route { route, .. } => Ok(json!({ "route": route })),
            other => unexpected("route_add", &other),
        }
    }

    fn route_list(&self) -> Answer {
        let NoArgs {} = self.args()?;
        match self.quick(|id| Message::RouteList { id })? {
            Message::Routes { routes, .. } => Ok(json!({ "routes": routes })),
            other => unexpected("route_list", &other),
        }
    }

    fn route_remove(&self) -> Answer {
        let RouteRemoveArgs { route } = self.args()?;
        match self.quick(|id| Message::RouteRemove {
            id,
            route: route.clone(),
        })? {
            Message::Done { .. } => Ok(json!({ "route": route, "removed": true })),
            other => unexpected("route_remove", &other),
        }
    }

    fn events_since(&self) -> Answer {
        let EventsSinceArgs {
            since,
            types,
            limit,
        } = self.args()?;
        let limit = usize::try_from(limit.unwrap_or(DEFAULT_EVENTS).max(1)).unwrap_or(usize::MAX);
        let reply = self.quick(|id| Message::ListEvents { id, since, types })?;
        let Message::Events { events, .. } = reply else {
            return unexpected("list_events", &reply);
        };
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
        let timeout_ms = timeout_ms.unwrap_or(DEFAULT_END_MS);
        let reply = self.waiting(timeout_ms, |id| Message::EndSession {
            id,
            session: session.clone(),
            force,
            timeout_ms: Some(timeout_ms),
        })?;
        match reply {
            Message::SessionEnded {
                outcome,
                resume_cursor,
                ..
            } => Ok(json!({
                "session": session,
                "outcome": outcome,
                "resume_cursor": resume_cursor,
            })),
            other => unexpected("end_session", &other),
        }
    }
}

/// A wait's reply as the tool returns it.
fn matched(request: &str, reply: Message) -> Answer {
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
        } => {
            let mut value = json!({
                "matched": true,
                "match_text": match_text,
                "match_span": [match_span.0, match_span.1],
                "resume_cursor": resume_cursor,
            });
            if let Some(code) = exit_code {
                value["exit_code"] = code.into();
            }
            if let Some(cwd) = cwd {
                value["cwd"] = cwd.into();
            }
            if let Some(at) = timestamp {
                value["timestamp_ms"] = at.into();
            }
            if let Some(turn_id) = turn_id {
                value["turn_id"] = turn_id.into();
            }
            Ok(value)
        }
        other => unexpected(request, &other),
    }
}

fn unexpected<T>(request: &str, reply: &Message) -> Result<T, Refusal> {
    Err(Refusal::Broker(Failure::Unexpected(format!(
        "the broker answered {request} with {}",
        reply_type(reply)
    ))))
}

/// A reply's wire type, for messages (its content may be large).
fn reply_type(reply: &Message) -> String {
    serde_json::to_value(reply)
        .ok()
        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "something else".into())
}

fn pattern_kind(regex: bool) -> PatternKind {
    if regex {
        PatternKind::Regex
    } else {
        PatternKind::Literal
    }
}

fn format_name(format: TurnFormat) -> &'static str {
    match format {
        TurnFormat::Text => "text",
        TurnFormat::Raw => "raw",
        TurnFormat::Message => "message",
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
    match std::str::from_utf8(bytes) {
        Ok(text) => value[name] = text.into(),
        Err(_) => {
            value[format!("{name}_b64")] = base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into();
        }
    }
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

    #[test]
    fn a_timeout_keeps_its_resume_cursor() {
        let value = Refusal::Broker(Failure::Refused {
            reason: ErrorReason::Timeout,
            message: "no match".into(),
            resume_cursor: Some(42),
        })
        .into_json();
        assert_eq!(value["reason"], "timeout");
        assert_eq!(value["resume_cursor"], 42);
    }
}
