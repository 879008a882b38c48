//! Rendering: readable tables and lines for people, one JSON object per result for programs.
//!
//! Turn content is the exception to "readable": `get-turn` writes it to stdout byte for byte
//! (escapes, invalid UTF-8 and all, nothing added) and its metadata to stderr. In JSON, content is
//! `"content"` when it is valid UTF-8 and `"content_b64"` (standard base64) otherwise. Everything
//! else a person reads passes through [`clean`], so a session name or a submitted line cannot
//! send escape sequences to the terminal.

use std::io::{self, Write};
use std::path::Path;

use base64::Engine as _;
use clippy_proto::{Format, SessionSummary, TurnMeta};
use serde_json::{Value, json};

use crate::commands::{BrokerState, Report, Status};
use crate::error::{CtlError, START_HINT};
use crate::exit::reason;
use clippy_proto::iso8601_utc;

/// The program name that prefixes messages on stderr.
const PROGRAM: &str = "clippy-ctl";
/// Longest submitted line shown in a `list-turns` table, in characters.
const INPUT_WIDTH: usize = 60;

/// Writes `report` as JSON (one line on `out`) or for people (`out`, and `err` for `get-turn`'s
/// metadata).
pub fn render(
    report: &Report,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
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
            format_name(*format)
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
                format_name(*format)
            )
        }
        Report::Status(status) => status_lines(out, status),
        Report::HotkeysStopped => writeln!(out, "hotkeys released"),
        Report::TmuxBindings(lines) => out.write_all(lines.as_bytes()),
        Report::Completions { script, .. } => out.write_all(script.as_bytes()),
        Report::Man(roff) => out.write_all(roff.as_bytes()),
    }
}

/// Writes `error`: `{"error": {"reason", "message"}}` on `out` with `json`, else
/// `clippy-ctl: <reason>: <message>` (and a hint to start a broker when none answers) on `err`.
pub fn render_error(
    error: &CtlError,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    if json {
        return write_json(out, &json!({ "error": error_json(error) }));
    }
    match error {
        // The broker's reason first, as it is on the wire, so scripts can grep for it.
        CtlError::Broker { reason, message } => {
            writeln!(err, "{PROGRAM}: {reason}: {}", clean(message))?;
        }
        other => writeln!(err, "{PROGRAM}: {}", clean(&other.to_string()))?,
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
    let message = match error {
        CtlError::Broker { message, .. } => message.clone(),
        other if other.is_unreachable() => format!("{other}; {START_HINT}"),
        other => other.to_string(),
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
                fields.insert("format".into(), format_name(*format).into());
                match std::str::from_utf8(content) {
                    Ok(text) => fields.insert("content".into(), text.into()),
                    Err(_) => fields.insert(
                        "content_b64".into(),
                        base64::engine::general_purpose::STANDARD
                            .encode(content)
                            .into(),
                    ),
                };
            }
            json!({ "turn": turn })
        }
        Report::Captured {
            turn_id,
            byte_length,
        } => json!({ "captured": { "turn_id": turn_id, "byte_length": byte_length } }),
        Report::Pasted { session, format } => {
            json!({ "pasted": { "session": session, "format": format_name(*format) } })
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
            "format": format_name(*format),
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
                }),
                Err(error) => json!({
                    "running": false,
                    "socket": socket,
                    "error": error_json(error),
                }),
            };
            json!({ "status": status })
        }
        Report::Completions { shell, script } => {
            json!({ "completions": { "shell": shell, "script": script } })
        }
        Report::Man(roff) => json!({ "man": roff }),
        Report::HotkeysStopped => json!({ "hotkeys": { "stopped": true } }),
        Report::TmuxBindings(lines) => json!({ "tmux_bindings": lines }),
    }
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
    })
}

fn format_name(format: Format) -> &'static str {
    match format {
        Format::Raw => "raw",
        Format::Text => "text",
    }
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
        format_name(format),
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
        }) => {
            writeln!(out, "broker:   running")?;
            writeln!(out, "socket:   {socket}")?;
            writeln!(out, "protocol: {protocol_version}")?;
            writeln!(out, "sessions: {sessions} ({connected} connected)")?;
            writeln!(out, "turns:    {turns}")?;
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

    #[test]
    fn broker_errors_lead_with_their_reason() {
        let error = CtlError::Broker {
            reason: clippy_proto::ErrorReason::SessionNotFound,
            message: "no session \"x\"".into(),
        };
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
}
