//! The spool commands: `read`, `wait-for`, `wait-prompt`, `send`, `expect-send`, `exec`,
//! `end-session` and `status SESSION` — the client layer's operations called with the
//! arguments, their results turned into [`Report`]s. The waits give the broker the `--timeout`
//! as their deadline.

use std::time::Duration;

use clippy_client::{CommandLine, Connection, Input};

use crate::cli::SpoolCommand;
use crate::commands::Report;
use crate::error::CtlError;

pub use clippy_client::{Executed, Found};

/// Runs one of the spool commands. The waits give the broker `timeout` as their deadline.
pub fn run(
    command: &SpoolCommand,
    timeout: Duration,
    connect: &dyn Fn() -> Result<Connection, CtlError>,
) -> Result<Report, CtlError> {
    let timeout_ms = Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
    match command {
        SpoolCommand::Read {
            session,
            from,
            max_bytes,
        } => {
            let read = connect()?.read(session, *from, *max_bytes)?;
            Ok(Report::SpoolData {
                data: read.data,
                cursor: read.cursor,
                resume_cursor: read.resume_cursor,
            })
        }
        SpoolCommand::WaitFor {
            session,
            pattern,
            kind,
            from,
        } => Ok(Report::Found(connect()?.wait_for(
            session,
            pattern,
            kind.kind(),
            *from,
            timeout_ms,
        )?)),
        SpoolCommand::WaitPrompt { session, from } => Ok(Report::Found(
            connect()?.wait_prompt(session, *from, timeout_ms)?,
        )),
        SpoolCommand::Send {
            session,
            data,
            enter,
        } => {
            let input = input_of(data, *enter)?;
            // With `--enter` the broker writes the Enter on its own after its submit delay
            // and answers once it has: the reply may take as long as a wait.
            let bytes = connect()?.send(session, input, timeout)?;
            Ok(Report::Sent {
                session: session.clone(),
                bytes,
            })
        }
        SpoolCommand::ExpectSend {
            session,
            pattern,
            data,
            kind,
            enter,
            from,
        } => {
            let input = input_of(data, *enter)?;
            Ok(Report::Found(connect()?.expect_send(
                session,
                pattern,
                kind.kind(),
                *from,
                timeout_ms,
                input,
            )?))
        }
        SpoolCommand::Exec { session, command } => {
            let command = CommandLine::from_words(command)?;
            Ok(Report::Executed(
                connect()?.exec(session, &command, timeout_ms)?,
            ))
        }
        SpoolCommand::EndSession { session, force } => {
            let ended = connect()?.end_session(session, *force, timeout_ms)?;
            Ok(Report::Ended {
                session: session.clone(),
                outcome: ended.outcome,
                resume_cursor: ended.resume_cursor,
            })
        }
    }
}

/// `status SESSION`.
pub fn session_status(
    connect: &dyn Fn() -> Result<Connection, CtlError>,
    session: &str,
) -> Result<Report, CtlError> {
    Ok(Report::SessionStatus(connect()?.session_status(session)?))
}

/// `DATA` with its escapes resolved, and whether Enter follows; refused when there is nothing
/// to send at all.
fn input_of(data: &str, enter: bool) -> Result<Input, CtlError> {
    let bytes = unescape(data).map_err(CtlError::Usage)?;
    Ok(Input::new(bytes, enter)?)
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
    fn empty_data_is_a_usage_error_unless_enter_follows() {
        assert_eq!(input_of(r"y\r", false).unwrap().into_typed(), b"y\r");
        assert!(input_of("", true).is_ok());
        assert!(matches!(input_of("", false), Err(CtlError::Usage(_))));
        assert!(matches!(input_of(r"\q", true), Err(CtlError::Usage(_))));
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
