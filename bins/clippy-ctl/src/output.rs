//! Rendering: readable tables and lines for people, one JSON object per result for programs.
//!
//! Turn content is the exception to "readable": `get-turn` writes it to stdout byte for byte
//! (escapes, invalid UTF-8 and all, nothing added) and its metadata to stderr. In JSON, content is
//! `"content"` when it is valid UTF-8 and `"content_b64"` (standard base64) otherwise. Everything
//! else a person reads passes through [`clean`], so a session name or a submitted line cannot
//! send escape sequences to the terminal.

use std::io::{self, Write};
use std::path::Path;

use clippy_proto::{
    EventRecord, Format, HistoryEntry, HistoryInfo, HookStats, InboxItem, Mode, RouteInfo,
    RouteKind, SearchHit, SessionExit, SessionState, SessionSummary, TurnMeta, WaitingState,
};
use serde_json::{Value, json};

use crate::commands::{BrokerState, Report, Status};
use crate::error::{CtlError, START_HINT};
use crate::exit::reason;
use crate::history::NotReported;
use clippy_proto::iso8601_utc;

/// The program name that prefixes messages on stderr.
const PROGRAM: &str = "clippy-ctl";
/// Longest submitted line shown in a `list-turns` table, in characters.
const INPUT_WIDTH: usize = 60;
/// Longest tool input (JSON) shown on `status SESSION`'s `waiting` line and in an event line,
/// in characters.
const TOOL_INPUT_WIDTH: usize = 80;
/// Longest command line shown in a `history` table, in characters.
const COMMAND_WIDTH: usize = 40;

/// Writes `report` as JSON (one line on `out`) or for people (`out`, and `err` for `get-turn`'s
/// metadata).
pub fn render(
    report: &Report,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    // Events are a stream: one JSON object per line (JSONL), as `events --follow` prints them.
    if let (true, Report::Events(events)) = (json, report) {
        for event in events {
            write_json(out, &json!(event))?;
        }
        return Ok(());
    }
    if json {
        return write_json(out, &report_json(report));
    }
    match report {
        Report::Sessions(sessions) => sessions_table(out, sessions),
        Report::Turns { session, turns } => turns_table(out, session, turns),
        Report::Turn {
            meta,
            format,
            content,
        } => {
            out.write_all(content)?;
            out.flush()?;
            writeln!(err, "{}", turn_line(meta, *format, content.len()))
        }
        Report::Captured {
            turn_id,
            byte_length,
        } => writeln!(out, "captured {} ({byte_length} bytes)", clean(turn_id)),
        Report::Pasted { session, format } => writeln!(
            out,
            "pasted the relay buffer into {} ({})",
            clean(session),
            format.as_str()
        ),
        Report::Delivered {
            sink,
            session,
            path,
            format,
        } => {
            let target = match (session, path) {
                (Some(session), _) => format!(" into {}", clean(session)),
                (None, Some(path)) => format!(" to {}", clean(path)),
                (None, None) => String::new(),
            };
            writeln!(
                out,
                "delivered the relay buffer to the {} sink{target} ({})",
                sink.as_str(),
                format.as_str()
            )
        }
        Report::Status(status) => status_lines(out, status),
        Report::HotkeysStopped => writeln!(out, "hotkeys released"),
        Report::TmuxBindings(lines) => out.write_all(lines.as_bytes()),
        Report::SessionStatus(status) => session_status_lines(out, status),
        // The text as it stands on the screen, one line each, like `tmux capture-pane -p`.
        Report::Screen { screen, .. } => {
            for line in &screen.lines {
                writeln!(out, "{}", clean(line))?;
            }
            Ok(())
        }
        Report::SpoolData {
            data,
            cursor,
            resume_cursor,
        } => {
            out.write_all(data)?;
            out.flush()?;
            writeln!(
                err,
                "read {} bytes from cursor {cursor}; resume_cursor {resume_cursor}",
                data.len()
            )
        }
        Report::Found(found) => {
            // The cursor alone on stdout, for `cursor=$(clippy-ctl wait-for …)`.
            writeln!(out, "{}", found.resume_cursor)?;
            let (start, end) = found.match_span;
            let mut line = format!("matched {:?} at [{start}, {end})", clean(&found.match_text));
            if let Some(code) = found.exit_code {
                line.push_str(&format!(", exit {code}"));
            }
            if let Some(cwd) = &found.cwd {
                line.push_str(&format!(", cwd {}", clean(cwd)));
            }
            if let Some(ms) = found.timestamp {
                line.push_str(&format!(", at {}", iso8601_utc(ms)));
            }
            if let Some(turn_id) = &found.turn_id {
                line.push_str(&format!(", turn {}", clean(turn_id)));
            }
            writeln!(err, "{line}")
        }
        Report::Sent { session, bytes } => {
            writeln!(out, "sent {bytes} bytes to {}", clean(session))
        }
        Report::Answered(answered) => writeln!(
            out,
            "answered wait #{} of {} ({}): {}",
            answered.waiting_id,
            clean(&answered.session),
            answered.decision.as_str(),
            clean(&answered.message)
        ),
        Report::Executed(executed) => {
            out.write_all(executed.output.as_bytes())?;
            if !executed.output.is_empty() && !executed.output.ends_with('\n') {
                out.write_all(b"\n")?;
            }
            out.flush()?;
            let show = |value: Option<String>| value.unwrap_or_else(|| "-".into());
            writeln!(
                err,
                "turn {}, exit {}, cwd {}, resume_cursor {}",
                show(executed.turn_id.as_deref().map(clean)),
                show(executed.exit_code.map(|c| c.to_string())),
                show(executed.cwd.as_deref().map(clean)),
                executed.resume_cursor
            )
        }
        Report::Ended {
            session,
            outcome,
            resume_cursor,
        } => writeln!(
            out,
            "session {}: {}; resume_cursor {resume_cursor}",
            clean(session),
            match outcome.as_str() {
                "idle" => "already idle at its prompt, nothing to end",
                "interrupted" => "interrupted, back at its prompt",
                "killed" => "no prompt after Ctrl+C: its process group was killed",
                "exited" => "it ended (its program exited)",
                other => other,
            }
        ),
        Report::Route { route, verb } => writeln!(out, "{verb} {}", route_line(route)),
        Report::Routes(routes) => routes_table(out, routes),
        Report::RouteRemoved(route) => writeln!(out, "removed route {}", clean(route)),
        Report::Inbox { session, items } => inbox_table(out, session, items),
        Report::Resolved {
            approval,
            approved,
            edited,
        } => writeln!(
            out,
            "{} {}",
            match (approved, edited) {
                (true, false) => "approved",
                (true, true) => "approved with the edited text:",
                (false, _) => "denied",
            },
            clean(approval)
        ),
        Report::Events(events) => {
            for event in events {
                writeln!(out, "{}", event_line(event))?;
            }
            Ok(())
        }
        Report::History { session, turns } => history_table(out, session.as_deref(), turns),
        Report::SearchHits { query, hits } => search_table(out, query, hits),
        Report::Forgotten { session, turns } => {
            let what = match session {
                Some(session) => format!("of {}", clean(session)),
                None => "of every session, and every stored event".into(),
            };
            writeln!(
                out,
                "forgot {turns} stored {} {what}",
                if *turns == 1 { "turn" } else { "turns" }
            )
        }
        Report::Completions { script, .. } => out.write_all(script.as_bytes()),
        Report::Man(roff) => out.write_all(roff.as_bytes()),
    }
}

/// A stored turn's session for people: its name, else its id.
fn session_label(e: &HistoryEntry) -> String {
    match e.name.as_deref().filter(|name| !name.is_empty()) {
        Some(name) => clean(name),
        None => clean(&e.session),
    }
}

/// `history`: one line per stored turn, newest first.
fn history_table(
    out: &mut dyn Write,
    session: Option<&str>,
    turns: &[HistoryEntry],
) -> io::Result<()> {
    if turns.is_empty() {
        return match session {
            Some(session) => writeln!(out, "no stored turns of {}", clean(session)),
            None => writeln!(out, "no stored turns"),
        };
    }
    let header = [
        "TIME", "SESSION", "TURN", "BYTES", "EXIT", "CWD", "COMMAND", "INPUT",
    ];
    let dash = || "-".to_owned();
    let rows = turns.iter().map(|e| {
        vec![
            iso8601_utc(e.timestamp),
            session_label(e),
            clean(&e.turn_id),
            e.byte_length.to_string(),
            e.exit_code.map_or_else(dash, |code| code.to_string()),
            e.cwd.as_deref().map_or_else(dash, clean),
            if e.command.is_empty() {
                dash()
            } else {
                shorten(&clean(&shell_words(&e.command)), COMMAND_WIDTH)
            },
            e.input
                .as_deref()
                .map_or_else(dash, |input| shorten(&clean(input), INPUT_WIDTH)),
        ]
    });
    table(out, &header, rows.collect())
}

/// `search`: one line per turn found, best first, with its snippet.
fn search_table(out: &mut dyn Write, query: &str, hits: &[SearchHit]) -> io::Result<()> {
    if hits.is_empty() {
        return writeln!(out, "nothing found for {}", clean(&format!("{query:?}")));
    }
    let header = ["TIME", "SESSION", "TURN", "SNIPPET"];
    let rows = hits.iter().map(|hit| {
        vec![
            iso8601_utc(hit.entry.timestamp),
            session_label(&hit.entry),
            clean(&hit.entry.turn_id),
            snippet_line(&hit.snippet),
        ]
    });
    table(out, &header, rows.collect())
}

/// A snippet on one line: each run of white space (line breaks, tabs) one space, other
/// control characters escaped as everywhere. The `[`…`]` around the words found stay.
fn snippet_line(snippet: &str) -> String {
    let words: Vec<&str> = snippet.split_whitespace().collect();
    clean(&words.join(" "))
}

fn history_entry_json(e: &HistoryEntry) -> Value {
    json!({
        "turn_id": e.turn_id,
        "session": e.session,
        "name": e.name,
        "command": e.command,
        "cwd": e.cwd,
        "timestamp": e.timestamp,
        "time": iso8601_utc(e.timestamp),
        "byte_length": e.byte_length,
        "input": e.input,
        "exit_code": e.exit_code,
        "live": e.live,
    })
}

/// `status`'s `history` line: where, how much, and what is wrong; or why it is not known.
fn history_text(history: &Result<HistoryInfo, NotReported>, home: Option<&str>) -> String {
    let info = match history {
        Err(why) => return format!("not reported ({}: {})", why.reason, clean(&why.message)),
        Ok(info) => info,
    };
    let mut text = if info.enabled {
        format!(
            "{} ({} {}, {})",
            info.path
                .as_deref()
                .map_or_else(|| "on".into(), |path| clean(&tilde(path, home))),
            info.turns,
            if info.turns == 1 { "turn" } else { "turns" },
            size_text(info.bytes)
        )
    } else {
        "off".to_owned()
    };
    if let Some(problem) = &info.problem {
        text.push_str(&format!(" — {}", clean(problem)));
    }
    text
}

/// `path` with the home folder written `~`.
fn tilde(path: &str, home: Option<&str>) -> String {
    let home = home.map(|home| home.trim_end_matches('/'));
    match home.filter(|home| !home.is_empty()) {
        Some(home) if path == home => "~".into(),
        Some(home) => match path.strip_prefix(home) {
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => path.to_owned(),
        },
        None => path.to_owned(),
    }
}

/// `512 B`, `1.5 KiB`, `5.6 MiB`, `1.0 GiB`.
fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    // Display only: a float's rounding is fine here.
    #[allow(clippy::cast_precision_loss)]
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

/// `r1: coder → reviewer (handoff, text, submit, 0/16 hops, 3 handoffs)`, with the pause.
fn route_line(r: &RouteInfo) -> String {
    let mut flags = vec![
        match r.kind {
            RouteKind::Handoff => "handoff",
            RouteKind::Report => "report",
        },
        r.format.as_str(),
        if r.submit { "submit" } else { "no submit" },
    ];
    if r.interrupt {
        flags.push("interrupt");
    }
    if r.gated {
        flags.push("gated");
    }
    let mut line = format!(
        "route {}: {} -> {} ({}, {}/{} hops, {} handoffs)",
        clean(&r.route),
        clean(&r.from),
        clean(&r.to),
        flags.join(", "),
        r.hops,
        r.max_hops,
        r.handoffs
    );
    if let Some(reason) = &r.paused_reason {
        line.push_str(&format!(", paused: {}", clean(reason)));
    }
    line
}

fn routes_table(out: &mut dyn Write, routes: &[RouteInfo]) -> io::Result<()> {
    if routes.is_empty() {
        return writeln!(out, "no routes");
    }
    let header = [
        "ROUTE", "FROM", "TO", "KIND", "STATE", "HOPS", "HANDOFFS", "FLAGS",
    ];
    let rows = routes.iter().map(|r| {
        let flags: Vec<&str> = [
            (r.interrupt, "interrupt"),
            (r.gated, "gated"),
            (!r.submit, "no-submit"),
            (r.format == Format::Raw, "raw"),
            (r.format == Format::Message, "message"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        vec![
            clean(&r.route),
            clean(&r.from),
            clean(&r.to),
            match r.kind {
                RouteKind::Handoff => "handoff".into(),
                RouteKind::Report => "report".into(),
            },
            r.paused_reason
                .as_deref()
                .map_or_else(|| "active".into(), |why| format!("paused ({})", clean(why))),
            format!("{}/{}", r.hops, r.max_hops),
            r.handoffs.to_string(),
            if flags.is_empty() {
                "-".into()
            } else {
                flags.join(",")
            },
        ]
    });
    table(out, &header, rows.collect())
}

fn inbox_table(out: &mut dyn Write, session: &str, items: &[InboxItem]) -> io::Result<()> {
    if items.is_empty() {
        return writeln!(out, "nothing waits for {}", clean(session));
    }
    let header = ["HANDOFF", "ROUTE", "TURN", "BYTES", "STATE", "APPROVAL"];
    let rows = items.iter().map(|i| {
        vec![
            clean(&i.handoff),
            clean(&i.route),
            clean(&i.turn_id),
            i.byte_length.to_string(),
            clean(&i.state),
            i.approval.as_deref().map_or_else(|| "-".into(), clean),
        ]
    });
    table(out, &header, rows.collect())
}

/// One event for people: `#12 2026-11-22T10:00:00.000Z route.handoff r1 coder -> reviewer …`.
pub fn event_line(e: &EventRecord) -> String {
    let mut parts = vec![format!("#{}", e.id), e.ts.clone(), clean(&e.kind)];
    if let Some(route) = &e.route {
        parts.push(clean(route));
    }
    match (&e.session, &e.to) {
        (Some(from), Some(to)) => parts.push(format!("{} -> {}", clean(from), clean(to))),
        (Some(session), None) => parts.push(clean(session)),
        (None, Some(to)) => parts.push(format!("-> {}", clean(to))),
        (None, None) => {}
    }
    for (label, value) in [
        ("", e.name.as_deref()),
        ("turn ", e.turn_id.as_deref()),
        ("handoff ", e.handoff.as_deref()),
        ("approval ", e.approval.as_deref()),
        ("", e.reason.as_deref()),
        ("tool ", e.tool.as_deref()),
    ] {
        if let Some(value) = value {
            parts.push(format!("{label}{}", clean(value)));
        }
    }
    if let Some(input) = &e.input {
        parts.push(shorten(&clean(input), TOOL_INPUT_WIDTH));
    }
    if let Some(id) = e.waiting_id {
        parts.push(format!("wait #{id}"));
    }
    for (label, value) in [("", e.decision.as_deref()), ("by ", e.by.as_deref())] {
        if let Some(value) = value {
            parts.push(format!("{label}{}", clean(value)));
        }
    }
    if let Some(bytes) = e.byte_length {
        parts.push(format!("{bytes} bytes"));
    }
    if let Some(hops) = e.hops {
        parts.push(format!("{hops} hops"));
    }
    if let Some(code) = e.exit_code {
        parts.push(format!("exit {code}"));
    }
    if let Some(signal) = e.signal {
        parts.push(format!("signal {signal}"));
    }
    if let Some(since) = e.since {
        parts.push(format!("since {}", iso8601_utc(since)));
    }
    if let Some(message) = &e.message {
        parts.push(format!("— {}", clean(message)));
    }
    parts.join(" ")
}

/// Writes `error`: `{"error": {"reason", "message"}}` on `out` with `json`, else
/// `clippy-ctl: <reason>: <message>` (and a hint to start a broker when none answers) on `err`.
pub fn render_error(
    error: &CtlError,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    // A wait that timed out says where to resume: on stdout, like a match's cursor.
    let resume_cursor = error.refusal().and_then(|(_, _, cursor)| cursor);
    if json {
        return write_json(
            out,
            &match resume_cursor {
                Some(cursor) => json!({
                    "matched": false,
                    "error": error_json(error),
                    "resume_cursor": cursor,
                }),
                None => json!({ "error": error_json(error) }),
            },
        );
    }
    if let Some(cursor) = resume_cursor {
        writeln!(out, "{cursor}")?;
    }
    match error.refusal() {
        // The broker's reason first, as it is on the wire, so scripts can grep for it.
        Some((reason, message, _)) => {
            writeln!(err, "{PROGRAM}: {reason}: {}", clean(message))?;
        }
        None => writeln!(err, "{PROGRAM}: {}", clean(&error.to_string()))?,
    }
    if error.is_unreachable() {
        writeln!(err, "{PROGRAM}: hint: {START_HINT}")?;
    }
    Ok(())
}

/// Writes a clap usage error (already rendered by clap) as [`render_error`] would.
pub fn render_usage_error(
    message: &str,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    if json {
        let error = json!({ "reason": "invalid_arguments", "message": message.trim_end() });
        write_json(out, &json!({ "error": error }))
    } else {
        err.write_all(message.as_bytes())
    }
}

fn write_json(out: &mut dyn Write, value: &Value) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")
}

fn error_json(error: &CtlError) -> Value {
    let message = match error.refusal() {
        Some((_, message, _)) => message.to_owned(),
        None if error.is_unreachable() => format!("{error}; {START_HINT}"),
        None => error.to_string(),
    };
    json!({ "reason": reason(error), "message": message })
}

fn report_json(report: &Report) -> Value {
    match report {
        Report::Sessions(sessions) => {
            json!({ "sessions": sessions.iter().map(session_json).collect::<Vec<_>>() })
        }
        Report::Turns { session, turns } => json!({
            "session": session,
            "turns": turns.iter().map(turn_meta_json).collect::<Vec<_>>(),
        }),
        Report::Turn {
            meta,
            format,
            content,
        } => {
            let mut turn = turn_meta_json(meta);
            if let Value::Object(fields) = &mut turn {
                fields.insert("format".into(), format.as_str().into());
                insert_bytes(fields, "content", content);
            }
            json!({ "turn": turn })
        }
        Report::Captured {
            turn_id,
            byte_length,
        } => json!({ "captured": { "turn_id": turn_id, "byte_length": byte_length } }),
        Report::Pasted { session, format } => {
            json!({ "pasted": { "session": session, "format": format.as_str() } })
        }
        Report::Delivered {
            sink,
            session,
            path,
            format,
        } => json!({ "delivered": {
            "sink": sink.as_str(),
            "session": session,
            "path": path,
            "format": format.as_str(),
        } }),
        Report::Status(Status { socket, broker }) => {
            let socket = socket.as_deref().map(Path::to_string_lossy);
            let status = match broker {
                Ok(state) => json!({
                    "running": true,
                    "socket": socket,
                    "protocol_version": state.protocol_version,
                    "sessions": state.sessions,
                    "connected_sessions": state.connected,
                    "turns": state.turns,
                    "history": match &state.history {
                        Ok(info) => json!(info),
                        Err(why) => json!({ "error": {
                            "reason": why.reason,
                            "message": why.message,
                        } }),
                    },
                }),
                Err(error) => json!({
                    "running": false,
                    "socket": socket,
                    "error": error_json(error),
                }),
            };
            json!({ "status": status })
        }
        Report::SessionStatus(status) => json!({ "session_status": status }),
        Report::Screen { session, screen } => json!({ "screen": {
            "session": session,
            "lines": screen.lines,
            "history": screen.history,
            "cols": screen.cols,
            "rows": screen.rows,
            "cursor_row": screen.cursor_row,
            "cursor_col": screen.cursor_col,
            "alternate": screen.alternate,
        }}),
        Report::SpoolData {
            data,
            cursor,
            resume_cursor,
        } => {
            let mut value = json!({ "cursor": cursor, "resume_cursor": resume_cursor });
            if let Value::Object(fields) = &mut value {
                insert_bytes(fields, "data", data);
            }
            value
        }
        Report::Found(found) => {
            let mut value = json!({
                "matched": true,
                "match_text": found.match_text,
                "match_cursor": found.match_span.0,
                "match_span": { "start": found.match_span.0, "end": found.match_span.1 },
                "resume_cursor": found.resume_cursor,
            });
            if let Value::Object(fields) = &mut value {
                if let Some(code) = found.exit_code {
                    fields.insert("exit_code".into(), code.into());
                }
                if let Some(cwd) = &found.cwd {
                    fields.insert("cwd".into(), cwd.clone().into());
                }
                if let Some(ms) = found.timestamp {
                    fields.insert("timestamp".into(), ms.into());
                    fields.insert("time".into(), iso8601_utc(ms).into());
                }
                if let Some(turn_id) = &found.turn_id {
                    fields.insert("turn_id".into(), turn_id.clone().into());
                }
            }
            value
        }
        Report::Sent { session, bytes } => {
            json!({ "sent": { "session": session, "bytes": bytes } })
        }
        Report::Answered(answered) => json!({ "answered": {
            "session": answered.session,
            "waiting_id": answered.waiting_id,
            "decision": answered.decision.as_str(),
            "message": answered.message,
        }}),
        Report::Executed(executed) => json!({
            "turn_id": executed.turn_id,
            "output": executed.output,
            "exit_code": executed.exit_code,
            "cwd": executed.cwd,
            "resume_cursor": executed.resume_cursor,
        }),
        Report::Ended {
            session,
            outcome,
            resume_cursor,
        } => json!({ "ended": {
            "session": session,
            "outcome": outcome,
            "resume_cursor": resume_cursor,
        } }),
        Report::Route { route, .. } => json!({ "route": route }),
        Report::Routes(routes) => json!({ "routes": routes }),
        Report::RouteRemoved(route) => json!({ "removed": route }),
        Report::Inbox { session, items } => json!({ "session": session, "items": items }),
        Report::Resolved {
            approval,
            approved,
            edited,
        } => json!({ "resolved": {
            "approval": approval,
            "decision": if *approved { "approved" } else { "denied" },
            "edited": edited,
        } }),
        Report::Events(events) => json!(events),
        Report::History { session, turns } => json!({
            "session": session,
            "turns": turns.iter().map(history_entry_json).collect::<Vec<_>>(),
        }),
        Report::SearchHits { query, hits } => json!({
            "query": query,
            "hits": hits
                .iter()
                .map(|hit| {
                    let mut value = history_entry_json(&hit.entry);
                    if let Value::Object(fields) = &mut value {
                        fields.insert("snippet".into(), hit.snippet.clone().into());
                    }
                    value
                })
                .collect::<Vec<_>>(),
        }),
        Report::Forgotten { session, turns } => json!({ "forgotten": {
            "session": session,
            "all": session.is_none(),
            "turns": turns,
        } }),
        Report::Completions { shell, script } => {
            json!({ "completions": { "shell": shell, "script": script } })
        }
        Report::Man(roff) => json!({ "man": roff }),
        Report::HotkeysStopped => json!({ "hotkeys": { "stopped": true } }),
        Report::TmuxBindings(lines) => json!({ "tmux_bindings": lines }),
    }
}

/// Bytes in JSON: `name` when they are valid UTF-8, else `name_b64` (standard base64).
fn insert_bytes(fields: &mut serde_json::Map<String, Value>, name: &str, bytes: &[u8]) {
    let (name, value) = clippy_client::bytes_field(name, bytes);
    fields.insert(name, value.into());
}

fn session_status_lines(out: &mut dyn Write, s: &SessionState) -> io::Result<()> {
    let show = |value: Option<String>| value.unwrap_or_else(|| "-".into());
    let mode = match s.mode {
        Mode::Idle => "idle",
        Mode::Busy if s.exec_running => "busy (exec)",
        Mode::Busy => "busy",
        Mode::Starting => "starting",
        Mode::Exited => "exited",
    };
    writeln!(out, "session:        {}", clean(&s.session))?;
    writeln!(
        out,
        "name:           {}",
        show(s.name.as_deref().map(clean))
    )?;
    writeln!(out, "pid:            {}", s.pid)?;
    writeln!(
        out,
        "connected:      {}",
        if s.connected { "yes" } else { "no" }
    )?;
    writeln!(out, "attached:       {}", attached_text(s.attached))?;
    writeln!(out, "mode:           {mode}")?;
    if let Some(exited) = &s.exited {
        writeln!(out, "exited:         {}", exit_text(exited))?;
    }
    writeln!(
        out,
        "running:        {}",
        show(
            s.current_input
                .as_deref()
                .map(clean)
                .filter(|i| !i.is_empty())
        )
    )?;
    if let Some(since) = s.busy_since {
        writeln!(out, "busy since:     {}", iso8601_utc(since))?;
    }
    writeln!(out, "resume_cursor:  {}", s.resume_cursor)?;
    writeln!(
        out,
        "prompt_cursor:  {}",
        show(s.prompt_cursor.map(|c| c.to_string()))
    )?;
    writeln!(
        out,
        "last turn:      {}",
        show(s.last_turn_id.as_deref().map(clean))
    )?;
    writeln!(
        out,
        "exit code:      {}",
        show(s.exit_code.map(|c| c.to_string()))
    )?;
    writeln!(out, "cwd:            {}", show(s.cwd.as_deref().map(clean)))?;
    // Only the agent's hooks know whether it waits for the user: without them, say nothing
    // rather than a "-" that would read as "not waiting".
    match &s.waiting {
        Some(waiting) => writeln!(out, "waiting:        {}", waiting_text(waiting))?,
        None if s.hooks.wired => writeln!(out, "waiting:        -")?,
        None => {}
    }
    if s.hooks.wired || s.hooks.reports > 0 {
        writeln!(out, "hooks:          {}", hooks_text(&s.hooks))?;
    }
    // Said only when it is so: turns of such a session end only when its screen goes still.
    if s.prompt_unrecognised {
        writeln!(
            out,
            "prompt:         none recognised: turns end when the screen goes still; name the \
             prompt for surer ends with --pattern REGEX or --preset NAME (clippy-session --help)"
        )?;
    }
    // Said only when it is so: it is why `paste`, `send` and `exec` answer `busy`.
    if s.input_blocked {
        writeln!(
            out,
            "input:          blocked: the program has not taken over {} bytes given to it",
            clippy_proto::INPUT_BACKLOG_LIMIT
        )?;
    }
    writeln!(out, "waits:          {}", s.waiters)?;
    // The handoffs themselves are one command away; the count tells whether to look.
    match s.inbox {
        0 => writeln!(out, "inbox:          0")?,
        n => writeln!(
            out,
            "inbox:          {n} waiting (clippy-ctl inbox {} lists them)",
            clean(&s.session)
        )?,
    }
    writeln!(
        out,
        "spool:          {}",
        show(s.spool.as_deref().map(clean))
    )
}

/// How an ended session's command ended, and when: `exit code 3 at …`, `killed by signal 9
/// (exit code 137) at …`, `exit status unknown (its wrapper went away without saying) at …`.
/// `0`, `1 terminal (clippy-ctl attach)`, `2 terminals (clippy-ctl attach)`.
fn attached_text(attached: u32) -> String {
    match attached {
        0 => "0".to_owned(),
        1 => "1 terminal (clippy-ctl attach)".to_owned(),
        n => format!("{n} terminals (clippy-ctl attach)"),
    }
}

fn exit_text(e: &SessionExit) -> String {
    let how = match (e.exit_code, e.signal) {
        (Some(code), Some(signal)) => format!("killed by signal {signal} (exit code {code})"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (Some(code), None) => format!("exit code {code}"),
        (None, None) => "exit status unknown (its wrapper went away without saying)".to_owned(),
    };
    format!("{how} at {}", iso8601_utc(e.ended_at))
}

/// `permission (Bash: {"command":"ls"}) — Claude needs your permission to use Bash`: the kind,
/// the tool and its input when given, the agent's own sentence when given.
fn waiting_text(w: &WaitingState) -> String {
    let mut text = clean(&w.kind);
    if w.id > 0 {
        text.push_str(&format!(" #{}", w.id));
    }
    match (&w.tool, &w.input) {
        (Some(tool), Some(input)) => text.push_str(&format!(
            " ({}: {})",
            clean(tool),
            shorten(&clean(input), TOOL_INPUT_WIDTH)
        )),
        (Some(tool), None) => text.push_str(&format!(" ({})", clean(tool))),
        (None, Some(input)) => {
            text.push_str(&format!(" ({})", shorten(&clean(input), TOOL_INPUT_WIDTH)));
        }
        (None, None) => {}
    }
    if let Some(message) = &w.message {
        text.push_str(&format!(" — {}", clean(message)));
    }
    text
}

/// `wired yes, reports 7, turn ends 2, rejected 0, disagreements 1, last: …`.
fn hooks_text(h: &HookStats) -> String {
    let mut text = format!(
        "wired {}, reports {}, turn ends {}, rejected {}, disagreements {}",
        if h.wired { "yes" } else { "no" },
        h.reports,
        h.turn_ends,
        h.rejected,
        h.disagreements
    );
    if let Some(last) = &h.last_disagreement {
        text.push_str(&format!(", last: {}", clean(last)));
    }
    text
}

fn session_json(s: &SessionSummary) -> Value {
    json!({
        "session": s.session,
        "name": s.name,
        "pid": s.pid,
        "connected": s.connected,
        "turns": s.turns,
        "last_turn_id": s.last_turn_id,
        "command": s.command,
        "preset": s.preset,
        "bracketed_paste": s.bracketed_paste,
        "waiting": s.waiting,
        "waiting_id": s.waiting_id,
        "attached": s.attached,
    })
}

fn turn_meta_json(t: &TurnMeta) -> Value {
    json!({
        "turn_id": t.turn_id,
        "timestamp": t.timestamp,
        "time": iso8601_utc(t.timestamp),
        "byte_length": t.byte_length,
        "interrupted": t.interrupted,
        "truncated": t.truncated,
        "exit_code": t.exit_code,
        "cwd": t.cwd,
        "input": t.input,
        "spool_span": t.spool_span.map(|(start, end)| [start, end]),
        "message_length": t.message_length,
    })
}

fn sessions_table(out: &mut dyn Write, sessions: &[SessionSummary]) -> io::Result<()> {
    if sessions.is_empty() {
        return writeln!(out, "no sessions");
    }
    let header = [
        "ID",
        "NAME",
        "PID",
        "CONNECTED",
        "TURNS",
        "LAST TURN",
        "WAITING",
        "COMMAND",
    ];
    let rows = sessions.iter().map(|s| {
        vec![
            clean(&s.session),
            s.name.as_deref().map_or_else(|| "-".into(), clean),
            s.pid.to_string(),
            if s.connected { "yes" } else { "no" }.into(),
            s.turns.to_string(),
            s.last_turn_id.as_deref().map_or_else(|| "-".into(), clean),
            match (&s.waiting, s.waiting_id) {
                (Some(kind), Some(id)) => format!("{} #{id}", clean(kind)),
                (Some(kind), None) => clean(kind),
                (None, _) => "-".into(),
            },
            clean(&shell_words(&s.command)),
        ]
    });
    table(out, &header, rows.collect())
}

fn turns_table(out: &mut dyn Write, session: &str, turns: &[TurnMeta]) -> io::Result<()> {
    if turns.is_empty() {
        return writeln!(out, "no turns in {}", clean(session));
    }
    let header = ["TURN", "TIME", "BYTES", "FLAGS", "EXIT", "INPUT"];
    let rows = turns.iter().map(|t| {
        vec![
            clean(&t.turn_id),
            iso8601_utc(t.timestamp),
            t.byte_length.to_string(),
            flags(t).unwrap_or_else(|| "-".into()),
            t.exit_code
                .map_or_else(|| "-".into(), |code| code.to_string()),
            t.input
                .as_deref()
                .map_or_else(|| "-".into(), |input| shorten(&clean(input), INPUT_WIDTH)),
        ]
    });
    table(out, &header, rows.collect())
}

fn flags(t: &TurnMeta) -> Option<String> {
    let set: Vec<&str> = [(t.interrupted, "interrupted"), (t.truncated, "truncated")]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
    (!set.is_empty()).then(|| set.join(","))
}

/// `get-turn`'s metadata line, for stderr.
fn turn_line(meta: &TurnMeta, format: Format, len: usize) -> String {
    let mut line = format!(
        "turn {}: {len} bytes ({}), {}",
        clean(&meta.turn_id),
        format.as_str(),
        iso8601_utc(meta.timestamp)
    );
    if let Some(code) = meta.exit_code {
        line.push_str(&format!(", exit {code}"));
    }
    if let Some(flags) = flags(meta) {
        line.push_str(", ");
        line.push_str(&flags);
    }
    line
}

fn status_lines(out: &mut dyn Write, status: &Status) -> io::Result<()> {
    let socket = status
        .socket
        .as_deref()
        .map_or_else(|| "unknown".into(), |path| clean(&path.to_string_lossy()));
    match &status.broker {
        Ok(BrokerState {
            protocol_version,
            sessions,
            connected,
            turns,
            history,
        }) => {
            writeln!(out, "broker:   running")?;
            writeln!(out, "socket:   {socket}")?;
            writeln!(out, "protocol: {protocol_version}")?;
            writeln!(out, "sessions: {sessions} ({connected} connected)")?;
            writeln!(out, "turns:    {turns}")?;
            let home = std::env::var("HOME").ok();
            writeln!(out, "history:  {}", history_text(history, home.as_deref()))?;
            writeln!(
                out,
                "relay:    not reported (the protocol has no request for it)"
            )
        }
        Err(error) => {
            writeln!(out, "broker:   not running ({})", clean(&error.to_string()))?;
            writeln!(out, "socket:   {socket}")?;
            writeln!(out, "hint:     {START_HINT}")
        }
    }
}

/// Left-aligned columns two spaces apart; the last column is not padded.
fn table(out: &mut dyn Write, header: &[&str], rows: Vec<Vec<String>>) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', width - cell.chars().count() + 2));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), safe to print on a terminal.
pub fn clean(s: &str) -> String {
    let mut cleaned = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            cleaned.extend(c.escape_debug());
        } else {
            cleaned.push(c);
        }
    }
    cleaned
}

/// At most `max` characters, the last one `…` when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut short: String = s.chars().take(max.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// A command line as a shell would need it typed: arguments with spaces or quotes are quoted.
fn shell_words(command: &[String]) -> String {
    let quote = |arg: &String| {
        let plain = !arg.is_empty()
            && arg.chars().all(|c| {
                c.is_alphanumeric()
                    || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '+' | '@' | '%')
            });
        if plain {
            arg.clone()
        } else {
            format!("'{}'", arg.replace('\'', r"'\''"))
        }
    };
    command.iter().map(quote).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(turn_id: &str) -> TurnMeta {
        TurnMeta {
            turn_id: turn_id.into(),
            timestamp: 1_700_000_000_123,
            byte_length: 12,
            interrupted: false,
            truncated: false,
            exit_code: None,
            cwd: None,
            input: None,
            spool_span: None,
            message_length: None,
        }
    }

    fn human(report: &Report) -> (String, Vec<u8>) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        render(report, false, &mut out, &mut err).unwrap();
        (String::from_utf8(err).unwrap(), out)
    }

    fn json_of(report: &Report) -> Value {
        let mut out = Vec::new();
        render(report, true, &mut out, &mut Vec::new()).unwrap();
        assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(clean("a\x1b[31mb\n"), "a\\u{1b}[31mb\\n");
        assert_eq!(clean("héllo"), "héllo");
    }

    #[test]
    fn commands_are_quoted_like_a_shell() {
        let cmd = [
            "claude".into(),
            "--x".into(),
            "a b".into(),
            "it's".into(),
            String::new(),
        ];
        assert_eq!(shell_words(&cmd), r"claude --x 'a b' 'it'\''s' ''");
    }

    #[test]
    fn long_input_is_shortened() {
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }

    #[test]
    fn turn_content_is_written_exactly_and_metadata_apart() {
        let content = b"\xff\x1b[1mhi\x1b[0m".to_vec();
        let mut m = meta("s:2");
        m.exit_code = Some(3);
        m.interrupted = true;
        let report = Report::Turn {
            meta: m,
            format: Format::Raw,
            content: content.clone(),
        };
        let (err, out) = human(&report);
        assert_eq!(out, content);
        assert_eq!(
            err,
            "turn s:2: 11 bytes (raw), 2023-11-14T22:13:20.123Z, exit 3, interrupted\n"
        );
        let json = json_of(&report);
        assert_eq!(json["turn"]["content_b64"], "/xtbMW1oaRtbMG0=");
        assert!(json["turn"].get("content").is_none());
    }

    #[test]
    fn utf8_content_is_json_text() {
        let report = Report::Turn {
            meta: meta("s:1"),
            format: Format::Text,
            content: "héllo\n".into(),
        };
        let json = json_of(&report);
        assert_eq!(json["turn"]["content"], "héllo\n");
        assert_eq!(json["turn"]["format"], "text");
        assert_eq!(json["turn"]["time"], "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn tables_line_up() {
        let report = Report::Turns {
            session: "s".into(),
            turns: vec![
                TurnMeta {
                    input: Some("ls\n".into()),
                    truncated: true,
                    ..meta("s:10")
                },
                meta("s:9"),
            ],
        };
        let (_, out) = human(&report);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            "TURN  TIME                      BYTES  FLAGS      EXIT  INPUT\n\
             s:10  2023-11-14T22:13:20.123Z  12     truncated  -     ls\\n\n\
             s:9   2023-11-14T22:13:20.123Z  12     -          -     -\n"
        );
    }

    fn session_state() -> SessionState {
        SessionState {
            session: "re2fvk8".into(),
            name: Some("sh".into()),
            pid: 2202,
            connected: true,
            mode: Mode::Busy,
            exec_running: false,
            resume_cursor: 343,
            prompt_cursor: Some(249),
            current_input: None,
            last_turn_id: None,
            exit_code: None,
            cwd: None,
            bracketed_paste: false,
            waiters: 0,
            inbox: 0,
            spool: None,
            waiting: None,
            hooks: HookStats::default(),
            input_blocked: false,
            prompt_unrecognised: false,
            exited: None,
            attached: 0,
            busy_since: None,
        }
    }

    fn status_text(state: &SessionState) -> String {
        let (_, out) = human(&Report::SessionStatus(state.clone()));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn session_status_says_how_many_terminals_are_attached_and_since_when_it_is_busy() {
        let mut state = session_state();
        let text = status_text(&state);
        assert!(text.contains("attached:       0\n"), "{text}");
        assert!(!text.contains("busy since:"), "{text}");
        state.attached = 2;
        state.busy_since = Some(1_700_000_000_123);
        let text = status_text(&state);
        assert!(
            text.contains("attached:       2 terminals (clippy-ctl attach)\n"),
            "{text}"
        );
        assert!(
            text.contains("busy since:     2023-11-14T22:13:20.123Z\n"),
            "{text}"
        );
        let doc = json_of(&Report::SessionStatus(state));
        assert_eq!(doc["session_status"]["attached"], 2);
        assert_eq!(doc["session_status"]["busy_since"], 1_700_000_000_123_u64);
    }

    #[test]
    fn session_status_says_when_the_program_has_not_taken_its_input() {
        let mut state = session_state();
        assert!(!status_text(&state).contains("input:"));
        state.input_blocked = true;
        let text = status_text(&state);
        assert!(
            text.contains("input:          blocked: the program has not taken over 1048576 bytes"),
            "{text}"
        );
        let doc = json_of(&Report::SessionStatus(state));
        assert_eq!(doc["session_status"]["input_blocked"], true);
    }

    #[test]
    fn session_status_says_when_no_prompt_was_recognised_and_how_to_name_one() {
        let mut state = session_state();
        assert!(!status_text(&state).contains("prompt:"));
        state.prompt_unrecognised = true;
        let text = status_text(&state);
        assert!(
            text.contains("prompt:         none recognised: turns end when the screen goes still")
                && text.contains("--pattern REGEX or --preset NAME"),
            "{text}"
        );
        let doc = json_of(&Report::SessionStatus(state));
        assert_eq!(doc["session_status"]["prompt_unrecognised"], true);
    }

    #[test]
    fn session_status_shows_what_the_agent_waits_for_and_its_hooks() {
        // No hooks: neither line, not even a "-" that would read as "not waiting".
        let mut state = session_state();
        let out = status_text(&state);
        assert!(
            !out.contains("waiting:") && !out.contains("hooks:"),
            "{out}"
        );
        // An answer submitted empty (Enter in a dialog) is no running line to show.
        state.current_input = Some(String::new());
        assert!(status_text(&state).contains("\nrunning:        -\n"));
        state.current_input = None;

        state.hooks = HookStats {
            wired: true,
            reports: 7,
            turn_ends: 2,
            rejected: 0,
            disagreements: 1,
            last_disagreement: Some("the hook said done\nwhile busy".into()),
        };
        let out = status_text(&state);
        assert!(out.contains("\nwaiting:        -\n"), "{out}");
        assert!(
            out.contains(
                "\nhooks:          wired yes, reports 7, turn ends 2, rejected 0, \
                 disagreements 1, last: the hook said done\\nwhile busy\n"
            ),
            "{out}"
        );

        state.waiting = Some(WaitingState {
            id: 3,
            kind: "permission".into(),
            tool: Some("Bash".into()),
            input: Some(r#"{"command":"ls"}"#.into()),
            message: None,
            since: 1_700_000_000_000,
        });
        let out = status_text(&state);
        assert!(
            out.contains("\nwaiting:        permission #3 (Bash: {\"command\":\"ls\"})\nhooks:"),
            "{out}"
        );
        // The lines come after cwd, before waits.
        let at = |label: &str| out.find(label).unwrap_or_else(|| panic!("{label}: {out}"));
        assert!(at("\ncwd:") < at("\nwaiting:") && at("\nhooks:") < at("\nwaits:"));

        state.waiting = Some(WaitingState {
            id: 0,
            kind: "question".into(),
            tool: None,
            input: None,
            message: Some("Which file?".into()),
            since: 0,
        });
        state.hooks = HookStats {
            wired: false,
            reports: 1,
            ..HookStats::default()
        };
        let out = status_text(&state);
        assert!(
            out.contains("\nwaiting:        question — Which file?\n"),
            "{out}"
        );
        assert!(
            out.contains("\nhooks:          wired no, reports 1,"),
            "{out}"
        );

        let json = json_of(&Report::SessionStatus(state));
        assert_eq!(json["session_status"]["waiting"]["kind"], "question");
        assert_eq!(json["session_status"]["waiting"]["message"], "Which file?");
        assert_eq!(json["session_status"]["hooks"]["reports"], 1);
        assert_eq!(json["session_status"]["hooks"]["wired"], false);
    }

    #[test]
    fn a_long_tool_input_is_shortened_for_people() {
        let waiting = WaitingState {
            kind: "permission".into(),
            tool: Some("Write".into()),
            input: Some(format!("{{\"content\":\"{}\"}}", "x".repeat(200))),
            ..WaitingState::default()
        };
        let text = waiting_text(&waiting);
        assert!(
            text.starts_with("permission (Write: {\"content\":\"xxx"),
            "{text}"
        );
        assert!(text.ends_with("…)"), "{text}");
        assert_eq!(
            text.chars().count(),
            "permission (Write: )".len() + TOOL_INPUT_WIDTH
        );
    }

    #[test]
    fn list_sessions_marks_the_waiting_ones() {
        let session = |id: &str, waiting: Option<&str>| SessionSummary {
            session: id.into(),
            name: None,
            pid: 1,
            command: vec!["claude".into()],
            preset: "claude".into(),
            connected: true,
            turns: 0,
            last_turn_id: None,
            bracketed_paste: false,
            waiting: waiting.map(Into::into),
            waiting_id: waiting.map(|_| 2),
            attached: 0,
        };
        let report = Report::Sessions(vec![session("a", Some("permission")), session("b", None)]);
        let (_, out) = human(&report);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ID  NAME  PID  CONNECTED  TURNS  LAST TURN  WAITING        COMMAND\n\
             a   -     1    yes        0      -          permission #2  claude\n\
             b   -     1    yes        0      -          -              claude\n"
        );
        let json = json_of(&report);
        assert_eq!(json["sessions"][0]["waiting"], "permission");
        assert_eq!(json["sessions"][0]["waiting_id"], 2);
        assert_eq!(json["sessions"][0]["attached"], 0);
        assert_eq!(json["sessions"][1]["waiting"], Value::Null);
    }

    #[test]
    fn a_turn_as_message_says_so_and_carries_its_length() {
        let report = Report::Turn {
            meta: TurnMeta {
                message_length: Some(9),
                ..meta("s:3")
            },
            format: Format::Message,
            content: b"**Done.**".to_vec(),
        };
        let (err, out) = human(&report);
        assert_eq!(out, b"**Done.**");
        assert_eq!(
            err,
            "turn s:3: 9 bytes (message), 2023-11-14T22:13:20.123Z\n"
        );
        let json = json_of(&report);
        assert_eq!(json["turn"]["format"], "message");
        assert_eq!(json["turn"]["message_length"], 9);
        assert_eq!(json["turn"]["content"], "**Done.**");
        assert_eq!(
            json_of(&Report::Turns {
                session: "s".into(),
                turns: vec![meta("s:1")]
            })["turns"][0]["message_length"],
            Value::Null
        );
    }

    #[test]
    fn waiting_events_read_as_a_line() {
        let event = EventRecord {
            id: 7,
            ts: "2026-11-22T10:00:00.000Z".into(),
            kind: "session.waiting".into(),
            session: Some("s1".into()),
            name: Some("coder".into()),
            reason: Some("permission".into()),
            tool: Some("Bash".into()),
            input: Some(r#"{"command":"ls"}"#.into()),
            message: Some("Claude needs your permission to use Bash".into()),
            ..EventRecord::default()
        };
        assert_eq!(
            event_line(&event),
            "#7 2026-11-22T10:00:00.000Z session.waiting s1 coder permission tool Bash \
             {\"command\":\"ls\"} — Claude needs your permission to use Bash"
        );
    }

    #[test]
    fn session_status_shows_the_inbox() {
        let mut state = SessionState {
            inbox: 2,
            ..session_state()
        };
        let out = status_text(&state);
        assert!(
            out.contains("\ninbox:          2 waiting (clippy-ctl inbox re2fvk8 lists them)\n"),
            "{out}"
        );
        state.inbox = 0;
        assert!(status_text(&state).contains("\ninbox:          0\n"));
        assert_eq!(
            json_of(&Report::SessionStatus(state))["session_status"]["inbox"],
            0
        );
    }

    #[test]
    fn broker_errors_lead_with_their_reason() {
        let error = CtlError::Client(clippy_client::ClientError::Broker {
            reason: clippy_proto::ErrorReason::SessionNotFound,
            message: "no session \"x\"".into(),
            resume_cursor: None,
        });
        let (mut out, mut err) = (Vec::new(), Vec::new());
        render_error(&error, false, &mut out, &mut err).unwrap();
        assert!(out.is_empty());
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "clippy-ctl: session_not_found: no session \"x\"\n"
        );
        let mut out = Vec::new();
        render_error(&error, true, &mut out, &mut Vec::new()).unwrap();
        let json: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            json,
            json!({"error": {"reason": "session_not_found", "message": "no session \"x\""}})
        );
    }

    #[test]
    fn an_ended_session_says_how_it_ended() {
        let live = status_text(&session_state());
        assert!(!live.contains("exited:"), "{live}");
        assert_eq!(
            json_of(&Report::SessionStatus(session_state()))["session_status"]["exited"],
            Value::Null
        );
        let mut state = SessionState {
            mode: Mode::Exited,
            connected: false,
            exited: Some(SessionExit {
                exit_code: Some(3),
                signal: None,
                ended_at: 1_700_000_000_123,
            }),
            ..session_state()
        };
        let out = status_text(&state);
        assert!(
            out.contains(
                "\nmode:           exited\nexited:         exit code 3 at 2023-11-14T22:13:20.123Z\n"
            ),
            "{out}"
        );
        let json = json_of(&Report::SessionStatus(state.clone()));
        assert_eq!(json["session_status"]["mode"], "exited");
        assert_eq!(
            json["session_status"]["exited"],
            json!({"exit_code": 3, "signal": null, "ended_at": 1_700_000_000_123_u64})
        );
        state.exited = Some(SessionExit {
            exit_code: Some(137),
            signal: Some(9),
            ended_at: 1_700_000_000_123,
        });
        assert!(status_text(&state).contains("killed by signal 9 (exit code 137) at"));
        state.exited = Some(SessionExit::default());
        assert!(status_text(&state).contains("exit status unknown"));
    }

    #[test]
    fn an_exit_event_reads_with_its_status() {
        let event = EventRecord {
            id: 9,
            ts: "2026-11-22T10:00:00.000Z".into(),
            kind: "session.exited".into(),
            session: Some("s1".into()),
            name: Some("sh".into()),
            exit_code: Some(130),
            signal: Some(2),
            ..EventRecord::default()
        };
        assert_eq!(
            event_line(&event),
            "#9 2026-11-22T10:00:00.000Z session.exited s1 sh exit 130 signal 2"
        );
    }

    fn entry(turn_id: &str) -> HistoryEntry {
        HistoryEntry {
            turn_id: turn_id.into(),
            session: "k3f9a2".into(),
            name: Some("coder".into()),
            command: vec!["bash".into(), "--norc".into()],
            cwd: Some("/home/u".into()),
            timestamp: 1_700_000_000_123,
            byte_length: 42,
            input: Some("make test".into()),
            exit_code: Some(0),
            live: false,
        }
    }

    fn text_of(report: &Report) -> String {
        let (err, out) = human(report);
        assert!(err.is_empty(), "{err}");
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn history_is_one_line_per_turn() {
        let unnamed = HistoryEntry {
            name: None,
            command: Vec::new(),
            cwd: None,
            input: None,
            exit_code: None,
            live: true,
            session: "zz81qq".into(),
            ..entry("zz81qq:1")
        };
        let report = Report::History {
            session: None,
            turns: vec![entry("k3f9a2:12"), unnamed],
        };
        assert_eq!(
            text_of(&report),
            "TIME                      SESSION  TURN       BYTES  EXIT  CWD      COMMAND      INPUT\n\
             2023-11-14T22:13:20.123Z  coder    k3f9a2:12  42     0     /home/u  bash --norc  make test\n\
             2023-11-14T22:13:20.123Z  zz81qq   zz81qq:1   42     -     -        -            -\n"
        );
    }

    #[test]
    fn hostile_history_fields_cannot_drive_the_terminal() {
        let hostile = HistoryEntry {
            name: Some("evil\x1b]0;pwned\x07".into()),
            command: vec!["sh".into(), "-c".into(), "echo \x1b[2J".into()],
            cwd: Some("/tmp/\nx".into()),
            input: Some(format!("rm -rf /\r\n\x1b[A{}", "y".repeat(200))),
            turn_id: "k3f9a2:1\x1b[31m".into(),
            ..entry("x")
        };
        let out = text_of(&Report::History {
            session: None,
            turns: vec![hostile.clone()],
        });
        assert!(!out.contains('\x1b') && !out.contains('\x07') && !out.contains('\r'));
        // Two lines: the header and the turn; the line breaks in the fields are escaped.
        assert_eq!(out.lines().count(), 2, "{out}");
        assert!(out.contains("evil\\u{1b}]0;pwned\\u{7}"), "{out}");
        assert!(out.contains("/tmp/\\nx"), "{out}");
        assert!(out.contains("rm -rf /\\r\\n\\u{1b}[Ay"), "{out}");
        assert!(out.trim_end().ends_with('…'), "the input is cut: {out}");
        // In JSON every field is there as it is.
        let doc = json_of(&Report::History {
            session: Some("evil".into()),
            turns: vec![hostile.clone()],
        });
        assert_eq!(doc["session"], "evil");
        let turn = &doc["turns"][0];
        assert_eq!(turn["name"], "evil\x1b]0;pwned\x07");
        assert_eq!(turn["input"], hostile.input.unwrap().as_str());
        assert_eq!(turn["command"], json!(["sh", "-c", "echo \x1b[2J"]));
    }

    #[test]
    fn history_json_has_every_field() {
        let doc = json_of(&Report::History {
            session: None,
            turns: vec![entry("k3f9a2:12")],
        });
        assert_eq!(
            doc,
            json!({"session": null, "turns": [{
                "turn_id": "k3f9a2:12", "session": "k3f9a2", "name": "coder",
                "command": ["bash", "--norc"], "cwd": "/home/u",
                "timestamp": 1_700_000_000_123_u64, "time": "2023-11-14T22:13:20.123Z",
                "byte_length": 42, "input": "make test", "exit_code": 0, "live": false,
            }]})
        );
    }

    #[test]
    fn empty_history_and_search_say_so() {
        let none = |session: Option<&str>| Report::History {
            session: session.map(Into::into),
            turns: Vec::new(),
        };
        assert_eq!(text_of(&none(None)), "no stored turns\n");
        assert_eq!(text_of(&none(Some("a\nb"))), "no stored turns of a\\nb\n");
        assert_eq!(json_of(&none(None))["turns"], json!([]));
        let nothing = Report::SearchHits {
            query: "x\x1b".into(),
            hits: Vec::new(),
        };
        assert_eq!(text_of(&nothing), "nothing found for \"x\\u{1b}\"\n");
        assert_eq!(json_of(&nothing), json!({"query": "x\x1b", "hits": []}));
    }

    #[test]
    fn search_hits_show_their_snippet_on_one_line() {
        let hit = |turn: &str, snippet: &str| SearchHit {
            entry: entry(turn),
            snippet: snippet.into(),
        };
        let report = Report::SearchHits {
            query: "migration".into(),
            hits: vec![
                hit("k3f9a2:3", "…the [migration]\n\n  needs\ta lock…"),
                hit("k3f9a2:1", "\x1b[31m[migration]\r done"),
            ],
        };
        assert_eq!(
            text_of(&report),
            "TIME                      SESSION  TURN      SNIPPET\n\
             2023-11-14T22:13:20.123Z  coder    k3f9a2:3  …the [migration] needs a lock…\n\
             2023-11-14T22:13:20.123Z  coder    k3f9a2:1  \\u{1b}[31m[migration] done\n"
        );
        let doc = json_of(&report);
        assert_eq!(doc["query"], "migration");
        assert_eq!(
            doc["hits"][0]["snippet"],
            "…the [migration]\n\n  needs\ta lock…"
        );
        assert_eq!(doc["hits"][1]["turn_id"], "k3f9a2:1");
        assert_eq!(doc["hits"][1]["cwd"], "/home/u");
        assert_eq!(doc["hits"][1]["time"], "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn forgetting_says_how_many() {
        let one = Report::Forgotten {
            session: Some("coder".into()),
            turns: 1,
        };
        assert_eq!(text_of(&one), "forgot 1 stored turn of coder\n");
        assert_eq!(
            json_of(&one),
            json!({"forgotten": {"session": "coder", "all": false, "turns": 1}})
        );
        let all = Report::Forgotten {
            session: None,
            turns: 120,
        };
        assert_eq!(
            text_of(&all),
            "forgot 120 stored turns of every session, and every stored event\n"
        );
        assert_eq!(json_of(&all)["forgotten"]["all"], true);
    }

    fn info(turns: u64, bytes: u64) -> HistoryInfo {
        HistoryInfo {
            enabled: true,
            path: Some("/home/u/.local/state/clippy".into()),
            turns,
            events: 7,
            bytes,
            problem: None,
        }
    }

    #[test]
    fn status_tells_the_history_store() {
        let home = Some("/home/u");
        assert_eq!(
            history_text(&Ok(info(1234, 5_872_026)), home),
            "~/.local/state/clippy (1234 turns, 5.6 MiB)"
        );
        assert_eq!(
            history_text(&Ok(info(1, 10)), None),
            "/home/u/.local/state/clippy (1 turn, 10 B)"
        );
        let mut broken = info(3, 2048);
        broken.problem = Some("cannot write: read-only file system\n".into());
        assert_eq!(
            history_text(&Ok(broken), home),
            "~/.local/state/clippy (3 turns, 2.0 KiB) — cannot write: read-only file system\\n"
        );
        let off = HistoryInfo {
            enabled: false,
            path: None,
            ..info(0, 0)
        };
        assert_eq!(history_text(&Ok(off), home), "off");
        let old = NotReported {
            reason: "unknown_type",
            message: "not for a broker\n".into(),
        };
        assert_eq!(
            history_text(&Err(old), home),
            "not reported (unknown_type: not for a broker\\n)"
        );
    }

    #[test]
    fn status_json_carries_the_history_object() {
        let status = |history| {
            Report::Status(Status {
                socket: Some("/run/s".into()),
                broker: Ok(BrokerState {
                    protocol_version: 1,
                    sessions: 0,
                    connected: 0,
                    turns: 0,
                    history,
                }),
            })
        };
        let doc = json_of(&status(Ok(info(2, 4096))));
        assert_eq!(
            doc["status"]["history"],
            json!({"enabled": true, "path": "/home/u/.local/state/clippy", "turns": 2,
                   "events": 7, "bytes": 4096, "problem": null})
        );
        let doc = json_of(&status(Err(NotReported {
            reason: "unknown_type",
            message: "old broker".into(),
        })));
        assert_eq!(
            doc["status"]["history"],
            json!({"error": {"reason": "unknown_type", "message": "old broker"}})
        );
        let text = text_of(&status(Ok(info(2, 4096))));
        assert!(
            text.contains(
                "\nturns:    0\nhistory:  /home/u/.local/state/clippy (2 turns, 4.0 KiB)\nrelay:"
            ) || text.contains(
                "\nturns:    0\nhistory:  ~/.local/state/clippy (2 turns, 4.0 KiB)\nrelay:"
            ),
            "{text}"
        );
    }

    #[test]
    fn paths_under_home_are_written_with_a_tilde() {
        assert_eq!(tilde("/home/u/x", Some("/home/u")), "~/x");
        assert_eq!(tilde("/home/u/x", Some("/home/u/")), "~/x");
        assert_eq!(tilde("/home/u", Some("/home/u")), "~");
        assert_eq!(tilde("/home/user2/x", Some("/home/u")), "/home/user2/x");
        assert_eq!(tilde("/x", Some("")), "/x");
        assert_eq!(tilde("/x", None), "/x");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(size_text(0), "0 B");
        assert_eq!(size_text(1023), "1023 B");
        assert_eq!(size_text(1536), "1.5 KiB");
        assert_eq!(size_text(5_872_026), "5.6 MiB");
        assert_eq!(size_text(1 << 30), "1.0 GiB");
        assert_eq!(size_text(u64::MAX), "16777216.0 TiB");
    }
}
