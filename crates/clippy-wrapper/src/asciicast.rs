//! Reading asciicast v2 recordings: a JSON header line, then one `[time, code, data]` per line.
//!
//! Besides asciicast's own `o`, `i`, `r` and `m` events, a recording may hold `h` events: a
//! report an agent's hook sent (`tools/corpus/record.py` with `"hooks": true`), its data the
//! whole report as the hook sent it, `clippy-hook 1 <agent>\n` then the agent's JSON payload
//! ([`clippy_hooks::encode`]).

use std::io::BufRead;

use clippy_hooks::Report;

/// One event of a recording, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum CastEvent {
    /// `o`: bytes the program wrote to the terminal.
    Output(String),
    /// `i`: bytes typed into the terminal.
    Input(String),
    /// `r`: the terminal was resized.
    Resize {
        /// Columns, at least 1.
        cols: u16,
        /// Rows, at least 1.
        rows: u16,
    },
    /// `m`: a marker (carries no bytes).
    Marker,
    /// `h`: the agent's hook reported, at this point of the output (read when it was recorded).
    Hook(Report),
}

/// The header line's terminal size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CastHeader {
    /// Columns, at least 1.
    pub cols: u16,
    /// Rows, at least 1.
    pub rows: u16,
}

/// Why a recording could not be read (the crate's one error type).
#[derive(Debug, thiserror::Error)]
pub enum CastError {
    /// The reader failed.
    #[error("cannot read the recording: {0}")]
    Io(#[from] std::io::Error),
    /// The first line is not an asciicast v2 header (or says a size of zero).
    #[error("line 1: not an asciicast v2 header: {0}")]
    Header(String),
    /// A line is not an event clippy reads.
    #[error("line {line}: not an asciicast v2 event: {reason}")]
    Event {
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

#[derive(serde::Deserialize)]
struct RawHeader {
    version: u32,
    width: u16,
    height: u16,
}

#[derive(serde::Deserialize)]
struct RawEvent(f64, String, String);

/// Reads a whole recording: its header and its events, each with its time in seconds.
///
/// ```
/// use clippy_wrapper::asciicast::{CastEvent, CastHeader, read};
///
/// let cast = "{\"version\": 2, \"width\": 80, \"height\": 24}\n[0.5, \"o\", \"$ \"]\n";
/// let (header, events) = read(cast.as_bytes())?;
/// assert_eq!(header, CastHeader { cols: 80, rows: 24 });
/// assert_eq!(events, [(0.5, CastEvent::Output("$ ".into()))]);
/// # Ok::<(), clippy_wrapper::asciicast::CastError>(())
/// ```
pub fn read(reader: impl BufRead) -> Result<(CastHeader, Vec<(f64, CastEvent)>), CastError> {
    let mut lines = reader.lines();
    let first = lines
        .next()
        .ok_or_else(|| CastError::Header("the file is empty".into()))??;
    let header: RawHeader =
        serde_json::from_str(&first).map_err(|e| CastError::Header(e.to_string()))?;
    if header.version != 2 {
        return Err(CastError::Header(format!(
            "version {} (only 2 is supported)",
            header.version
        )));
    }
    if header.width == 0 || header.height == 0 {
        return Err(CastError::Header(format!(
            "size {}x{}",
            header.width, header.height
        )));
    }
    let mut events = Vec::new();
    for (i, line) in lines.enumerate() {
        let line_no = i + 2;
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| CastError::Event {
            line: line_no,
            reason,
        };
        let RawEvent(time, code, data) =
            serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        events.push((
            time,
            match code.as_str() {
                "o" => CastEvent::Output(data),
                "i" => CastEvent::Input(data),
                "r" => {
                    let size = data
                        .split_once('x')
                        .and_then(|(c, r)| Some((c.trim().parse().ok()?, r.trim().parse().ok()?)));
                    match size {
                        Some((cols, rows)) if cols > 0 && rows > 0 => {
                            CastEvent::Resize { cols, rows }
                        }
                        _ => return Err(bad(format!("resize {data:?} is not COLSxROWS"))),
                    }
                }
                "m" => CastEvent::Marker,
                "h" => CastEvent::Hook(hook_report(&data).map_err(bad)?),
                other => return Err(bad(format!("unknown event code {other:?}"))),
            },
        ));
    }
    Ok((
        CastHeader {
            cols: header.width,
            rows: header.height,
        },
        events,
    ))
}

/// The report in an `h` event's data: decoded and parsed as the live wrapper does.
fn hook_report(data: &str) -> Result<Report, String> {
    let (agent, payload) =
        clippy_hooks::decode(data.as_bytes()).map_err(|e| format!("bad hook report: {e}"))?;
    clippy_hooks::parse(agent, payload).map_err(|e| format!("bad hook report: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_event_type() {
        let cast = "{\"version\": 2, \"width\": 80, \"height\": 24}\n[0.1, \"o\", \"$ \"]\n[0.2, \"i\", \"ls\\r\"]\n\n[0.3, \"r\", \"100x30\"]\n[0.4, \"m\", \"\"]\n";
        let (header, events) = read(cast.as_bytes()).unwrap();
        assert_eq!(header, CastHeader { cols: 80, rows: 24 });
        assert_eq!(
            events,
            [
                (0.1, CastEvent::Output("$ ".into())),
                (0.2, CastEvent::Input("ls\r".into())),
                (
                    0.3,
                    CastEvent::Resize {
                        cols: 100,
                        rows: 30
                    }
                ),
                (0.4, CastEvent::Marker)
            ]
        );
    }

    /// A recording of `events` (each `[time, code, data]`) at 80x24.
    fn cast_of(events: &[serde_json::Value]) -> String {
        let mut cast = String::from("{\"version\": 2, \"width\": 80, \"height\": 24}\n");
        for event in events {
            cast.push_str(&event.to_string());
            cast.push('\n');
        }
        cast
    }

    #[test]
    fn hook_reports_are_read_as_the_wrapper_reads_them() {
        let frame = clippy_hooks::encode(
            clippy_hooks::Agent::Claude,
            br#"{"hook_event_name":"Stop","last_assistant_message":"Paris."}"#,
        );
        let frame = String::from_utf8(frame).unwrap();
        let (_, events) =
            read(cast_of(&[serde_json::json!([0.1, "h", frame])]).as_bytes()).unwrap();
        assert_eq!(
            events,
            [(
                0.1,
                CastEvent::Hook(Report::TurnEnded {
                    message: Some("Paris.".into()),
                    failed: false,
                    prompts: Vec::new(),
                })
            )]
        );
        for bad in [
            "not a report",
            "clippy-hook 1 aider\n{}",
            "clippy-hook 1 claude\n{\"no\": 1}",
        ] {
            let cast = cast_of(&[
                serde_json::json!([0.0, "m", ""]),
                serde_json::json!([0.1, "h", bad]),
            ]);
            let err = read(cast.as_bytes()).expect_err(bad);
            assert!(
                matches!(&err, CastError::Event { line: 3, reason } if reason.starts_with("bad hook report")),
                "{err:?}"
            );
            assert!(err.to_string().starts_with("line 3:"), "{err}");
        }
    }

    #[test]
    fn bad_files_say_where() {
        assert!(matches!(read(&b""[..]), Err(CastError::Header(_))));
        assert!(matches!(
            read(&b"{\"version\": 1, \"width\": 80, \"height\": 24}\n"[..]),
            Err(CastError::Header(_))
        ));
        let bad = read(
            &b"{\"version\": 2, \"width\": 80, \"height\": 24}\n[0.1, \"o\", \"x\"]\n[oops\n"[..],
        );
        assert!(
            matches!(bad, Err(CastError::Event { line: 3, .. })),
            "{bad:?}"
        );
        let bad =
            read(&b"{\"version\": 2, \"width\": 80, \"height\": 24}\n[0.1, \"r\", \"wide\"]\n"[..]);
        assert!(
            matches!(bad, Err(CastError::Event { line: 2, .. })),
            "{bad:?}"
        );
    }
}
