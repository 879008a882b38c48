//! Reading asciicast v2 recordings: a JSON header line, then one `[time, code, data]` per line.

use std::io::BufRead;

/// One event of a recording, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum CastEvent {
    /// `o`: bytes the program wrote to the terminal.
    Output(String),
    /// `i`: bytes typed into the terminal.
    Input(String),
    /// `r`: the terminal was resized.
    Resize { cols: u16, rows: u16 },
    /// `m`: a marker (carries no bytes).
    Marker,
}

/// The header line's terminal size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CastHeader {
    pub cols: u16,
    pub rows: u16,
}

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CastError {
    #[error("cannot read the recording: {0}")]
    Io(#[from] std::io::Error),
    #[error("line 1: not an asciicast v2 header: {0}")]
    Header(String),
    #[error("line {line}: not an asciicast v2 event: {reason}")]
    Event { line: usize, reason: String },
}

#[derive(serde::Deserialize)]
struct RawHeader {
    version: u32,
    width: u16,
    height: u16,
}

#[derive(serde::Deserialize)]
struct RawEvent(f64, String, String);

/// Reads a whole recording: its header and its events.
pub fn read(reader: impl BufRead) -> Result<(CastHeader, Vec<CastEvent>), CastError> {
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
        let RawEvent(_time, code, data) =
            serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        events.push(match code.as_str() {
            "o" => CastEvent::Output(data),
            "i" => CastEvent::Input(data),
            "r" => {
                let size = data
                    .split_once('x')
                    .and_then(|(c, r)| Some((c.trim().parse().ok()?, r.trim().parse().ok()?)));
                match size {
                    Some((cols, rows)) if cols > 0 && rows > 0 => CastEvent::Resize { cols, rows },
                    _ => return Err(bad(format!("resize {data:?} is not COLSxROWS"))),
                }
            }
            "m" => CastEvent::Marker,
            other => return Err(bad(format!("unknown event code {other:?}"))),
        });
    }
    Ok((
        CastHeader {
            cols: header.width,
            rows: header.height,
        },
        events,
    ))
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
                CastEvent::Output("$ ".into()),
                CastEvent::Input("ls\r".into()),
                CastEvent::Resize {
                    cols: 100,
                    rows: 30
                },
                CastEvent::Marker
            ]
        );
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
