//! The spool commands: `read`, `wait-for`, `wait-prompt`, `send`, `expect-send`, `exec`,
//! `end-session` and `status SESSION` — requests built from the arguments, replies turned into
//! [`Report`]s. The waits give the broker the `--timeout` as their deadline and allow the reply
//! that long plus a grace period.

use std::time::Duration;

use clippy_proto::Message;

use crate::broker::{Broker, unexpected};
use crate::cli::SpoolCommand;
use crate::commands::Report;
use crate::error::CtlError;

/// How much longer than a wait's own deadline the reply may take to arrive.
pub const REPLY_GRACE: Duration = Duration::from_secs(5);

/// A wait's outcome, as `wait-for`, `wait-prompt` and `expect-send` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The matched text, escapes stripped (a prompt's first line for `wait-prompt`).
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

/// Runs one of the spool commands.
pub fn run(
    command: &SpoolCommand,
    timeout: Duration,
    connect: &dyn Fn() -> Result<Broker, CtlError>,
) -> Result<Report, CtlError> {
    let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let waiting = || -> Result<Broker, CtlError> {
        let mut broker = connect()?;
        broker.allow_reply_after(timeout + REPLY_GRACE)?;
        Ok(broker)
    };
    match command {
        SpoolCommand::Read {
            session,
            from,
            max_bytes,
        } => read(connect, session, *from, *max_bytes),
        SpoolCommand::WaitFor {
            session,
            pattern,
            kind,
            from,
        } => awaited_match(waiting()?, "wait_for", |id| Message::WaitFor {
            id,
            session: session.clone(),
            pattern: pattern.clone(),
            kind: kind.kind(),
            from_cursor: *from,
            timeout_ms: Some(timeout_ms),
        }),
        SpoolCommand::WaitPrompt { session, from } => {
            awaited_match(waiting()?, "wait_prompt", |id| Message::WaitPrompt {
                id,
                session: session.clone(),
                from_cursor: *from,
                timeout_ms: Some(timeout_ms),
            })
        }
        SpoolCommand::Send {
            session,
            data,
            enter,
        } => text_of(data, *enter).and_then(|data| {
            let bytes = data.len() + usize::from(*enter);
            let request = |id| Message::Send {
                id,
                session: session.clone(),
                data,
                enter: *enter,
            };
            // With `--enter` the broker writes the Enter on its own after its submit delay
            // and answers once it has.
            let mut broker = if *enter { waiting()? } else { connect()? };
            match broker.request(request)? {
                Message::Done { .. } => Ok(Report::Sent {
                    session: session.clone(),
                    bytes,
                }),
                other => Err(unexpected("send", &other)),
            }
        }),
        SpoolCommand::ExpectSend {
            session,
            pattern,
            data,
            kind,
            enter,
            from,
        } => typed(data, *enter).and_then(|data| {
            awaited_match(waiting()?, "expect_send", |id| Message::ExpectSend {
                id,
                session: session.clone(),
                pattern: pattern.clone(),
                kind: kind.kind(),
                from_cursor: *from,
                timeout_ms: Some(timeout_ms),
                data,
            })
        }),
        SpoolCommand::Exec { session, command } => one_line(command).and_then(|command| {
            let mut broker = waiting()?;
            let request = |id| Message::Exec {
                id,
                session: session.clone(),
                command,
                timeout_ms: Some(timeout_ms),
            };
            match broker.request(request)? {
                Message::ExecResult {
                    turn_id,
                    output,
                    exit_code,
                    cwd,
                    resume_cursor,
                    ..
                } => Ok(Report::Executed(Executed {
                    turn_id,
                    output,
                    exit_code,
                    cwd,
                    resume_cursor,
                })),
                other => Err(unexpected("exec", &other)),
            }
        }),
        SpoolCommand::EndSession { session, force } => waiting().and_then(|mut broker| {
            let request = |id| Message::EndSession {
                id,
                session: session.clone(),
                force: *force,
                timeout_ms: Some(timeout_ms),
            };
            match broker.request(request)? {
                Message::SessionEnded {
                    outcome,
                    resume_cursor,
                    ..
                } => Ok(Report::Ended {
                    session: session.clone(),
                    outcome,
                    resume_cursor,
                }),
                other => Err(unexpected("end_session", &other)),
            }
        }),
    }
}

/// `status SESSION`.
pub fn session_status(
    connect: &dyn Fn() -> Result<Broker, CtlError>,
    session: &str,
) -> Result<Report, CtlError> {
    let request = |id| Message::SessionStatus {
        id,
        session: session.to_owned(),
    };
    match connect()?.request(request)? {
        Message::Status { status, .. } => Ok(Report::SessionStatus(status)),
        other => Err(unexpected("session_status", &other)),
    }
}

fn read(
    connect: &dyn Fn() -> Result<Broker, CtlError>,
    session: &str,
    from: u64,
    max_bytes: Option<u32>,
) -> Result<Report, CtlError> {
    let request = |id| Message::Read {
        id,
        session: session.to_owned(),
        from_cursor: from,
        max_bytes,
    };
    match connect()?.request(request)? {
        Message::SpoolData {
            data,
            cursor,
            resume_cursor,
            ..
        } => Ok(Report::SpoolData {
            data,
            cursor,
            resume_cursor,
        }),
        other => Err(unexpected("read", &other)),
    }
}

/// Sends a request that waits in the broker until something matches (`wait_for`,
/// `wait_prompt`, `expect_send`) on `broker`, a connection allowed to wait that long; what
/// matched.
fn awaited_match(
    mut broker: Broker,
    request: &str,
    make: impl FnOnce(u32) -> Message,
) -> Result<Report, CtlError> {
    found(request, broker.request(make)?).map(Report::Found)
}

fn found(request: &str, reply: Message) -> Result<Found, CtlError> {
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
        other => Err(unexpected(request, &other)),
    }
}

/// `exec`'s words as the one command line it types.
fn one_line(words: &[String]) -> Result<String, CtlError> {
    let line = words.join(" ");
    if line.trim().is_empty() || line.contains(['\n', '\r']) {
        return Err(CtlError::Usage(
            "exec runs one non-empty command line; type anything else with send".into(),
        ));
    }
    Ok(line)
}

/// `data` with its escapes resolved, and Enter appended for `--enter` (`expect-send`: the
/// text and its Enter are one write, at once with the match).
fn typed(data: &str, enter: bool) -> Result<Vec<u8>, CtlError> {
    let mut bytes = text_of(data, enter)?;
    if enter {
        bytes.push(b'\r');
    }
    Ok(bytes)
}

/// `data` with its escapes resolved, without the Enter of `--enter` (`send`: the broker writes
/// it on its own); refused when there is nothing to send at all.
fn text_of(data: &str, enter: bool) -> Result<Vec<u8>, CtlError> {
    let bytes = unescape(data).map_err(CtlError::Usage)?;
    if bytes.is_empty() && !enter {
        return Err(CtlError::Usage(
            "nothing to send: DATA is empty (use --enter for a bare Enter)".into(),
        ));
    }
    Ok(bytes)
}

/// Resolves the escapes `send` understands: `\r \n \t \e \a \b \0 \\ \xHH`.
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let byte = match chars.next() {
            Some('r') => b'\r',
            Some('n') => b'\n',
            Some('t') => b'\t',
            Some('e') => 0x1b,
            Some('a') => 0x07,
            Some('b') => 0x08,
            Some('0') => 0,
            Some('\\') => b'\\',
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                u8::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 2)
                    .ok_or_else(|| format!("\\x must be followed by two hex digits, not {hex:?}"))?
            }
            Some(other) => {
                return Err(format!(
                    "unknown escape \\{other}: the escapes are \\r \\n \\t \\e \\a \\b \\0 \\\\ \\xHH"
                ));
            }
            None => return Err("DATA ends with a lone backslash (write \\\\ for one)".into()),
        };
        out.push(byte);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clippy_proto::PatternKind;

    #[test]
    fn escapes_resolve_to_bytes() {
        assert_eq!(unescape(r"7\r").unwrap(), b"7\r");
        assert_eq!(unescape(r"\x03").unwrap(), [3]);
        assert_eq!(unescape(r"a\\b\e[A\t\n\0").unwrap(), b"a\\b\x1b[A\t\n\0");
        assert_eq!(unescape("héllo").unwrap(), "héllo".as_bytes());
        for bad in [r"\q", r"\x3", r"\xzz", "end\\"] {
            assert!(unescape(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn exec_takes_one_line() {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(one_line(&words(&["ls", "-la"])).unwrap(), "ls -la");
        for bad in [&["  "][..], &["a\nb"], &["a\r"]] {
            assert!(matches!(one_line(&words(bad)), Err(CtlError::Usage(_))));
        }
    }

    #[test]
    fn enter_is_appended_and_empty_data_refused() {
        assert_eq!(typed("y", true).unwrap(), b"y\r");
        assert_eq!(typed("", true).unwrap(), b"\r");
        assert!(matches!(typed("", false), Err(CtlError::Usage(_))));
        // `send` leaves the Enter to the broker, which writes it on its own.
        assert_eq!(text_of("y", true).unwrap(), b"y");
        assert_eq!(text_of("", true).unwrap(), b"");
        assert!(matches!(text_of("", false), Err(CtlError::Usage(_))));
    }

    #[test]
    fn literal_is_the_default_kind() {
        use crate::cli::PatternArgs;
        assert_eq!(PatternArgs::default().kind(), PatternKind::Literal);
        let regex = PatternArgs {
            regex: true,
            literal: false,
        };
        assert_eq!(regex.kind(), PatternKind::Regex);
    }
}
