//! The seam out of the event loop: session events go down a channel to a thread that does the
//! slow or blocking work (rendering turns, writing the turn log, and later the broker link), so
//! the loop that moves the user's bytes never waits on it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use clippy_turn::Turn;

/// What the loop reports.
#[derive(Debug)]
pub enum SessionEvent {
    /// The session has its ID; the child runs.
    Started {
        session_id: String,
        name: Option<String>,
    },
    /// A turn completed; `spool_span` is its byte range in the spool, when still mappable.
    Turn {
        turn: Box<Turn>,
        spool_span: Option<(u64, u64)>,
    },
    /// The spool could not be written (reported once; the session goes on).
    SpoolFailed(String),
}

/// The sending half, owned by the loop.
pub type Events = Sender<SessionEvent>;

/// One line of `--turn-log`.
#[derive(serde::Serialize)]
struct TurnLine<'a> {
    session: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    turn_id: String,
    seq: u64,
    input: &'a str,
    interrupted: bool,
    truncated: bool,
    byte_length: usize,
    exit_code: Option<i32>,
    cwd: Option<&'a str>,
    spool_span: Option<(u64, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_b64: Option<String>,
    text: String,
}

/// Starts the sink thread; returns the sender for the loop and the thread's handle.
pub fn start(turn_log: Option<PathBuf>) -> std::io::Result<(Events, JoinHandle<()>)> {
    let log = match turn_log {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot open the turn log {}: {e}", path.display()),
                    )
                })?,
        ),
        None => None,
    };
    let (tx, rx) = channel();
    let handle = std::thread::Builder::new()
        .name("clippy-session-sink".into())
        .spawn(move || run(rx, log))?;
    Ok((tx, handle))
}

fn run(rx: Receiver<SessionEvent>, mut log: Option<std::fs::File>) {
    let mut session = String::new();
    let mut session_name = None;
    for event in rx {
        match event {
            SessionEvent::Started { session_id, name } => {
                session = session_id;
                session_name = name;
            }
            SessionEvent::Turn { turn, spool_span } => {
                let Some(file) = &mut log else { continue };
                let utf8 = std::str::from_utf8(&turn.content).ok();
                let line = TurnLine {
                    session: &session,
                    name: session_name.as_deref(),
                    turn_id: format!("{session}:{}", turn.seq),
                    seq: turn.seq,
                    input: &turn.input,
                    interrupted: turn.interrupted,
                    truncated: turn.truncated,
                    byte_length: turn.content.len(),
                    exit_code: turn.exit_code,
                    cwd: turn.cwd.as_deref(),
                    spool_span,
                    content: utf8,
                    content_b64: utf8.is_none().then(|| {
                        base64::engine::Engine::encode(
                            &base64::engine::general_purpose::STANDARD,
                            &turn.content,
                        )
                    }),
                    text: turn.text(),
                };
                let mut record = serde_json::to_vec(&line).unwrap_or_default();
                record.push(b'\n');
                let written = file.write_all(&record);
                if let Err(e) = written {
                    eprintln!("\r\nclippy-session: cannot write the turn log: {e}\r");
                    log = None;
                }
            }
            SessionEvent::SpoolFailed(reason) => {
                eprintln!("\r\nclippy-session: spool: {reason} (the session goes on)\r")
            }
        }
    }
}
