//! Helpers of the store's tests: scratch folders, records, raw scans of the database files, and
//! (as root) small tmpfs mounts.
#![allow(dead_code, missing_docs)]

use std::path::{Path, PathBuf};

use clippy_history::{EventRecord, SessionRecord, TurnRecord};
use clippy_testkit::TempDir;

/// A folder of its own per test (the test kit's), removed (with what is in it, read-only
/// folders included) when dropped.
#[derive(Debug)]
pub struct Scratch(TempDir);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        Scratch(TempDir::new(&format!("clippy-history-{name}")))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// The store's folder inside.
    pub fn store_dir(&self) -> PathBuf {
        self.0.join("state").join("clippy")
    }
}

pub const COMMAND: &[&str] = &["claude", "--model", "opus"];

pub fn command() -> Vec<String> {
    COMMAND.iter().map(|s| (*s).to_owned()).collect()
}

/// A session record (`command` from [`command`]).
pub fn session<'a>(
    key: &'a str,
    name: Option<&'a str>,
    command: &'a [String],
    started_at: u64,
) -> SessionRecord<'a> {
    SessionRecord {
        key,
        name,
        command,
        cwd: Some("/src/app"),
        started_at,
    }
}

/// A turn of `session` with the given seq (id `<session>:<seq>`), completion time and text;
/// its content is the text in bold.
pub fn turn<'a>(
    id: &'a str,
    session: &'a str,
    seq: u64,
    ended_at: u64,
    text: &'a str,
    content: &'a [u8],
) -> TurnRecord<'a> {
    TurnRecord {
        turn_id: id,
        session,
        seq,
        started_at: Some(ended_at.saturating_sub(1000)),
        ended_at,
        input: None,
        content,
        text,
        message: None,
        interrupted: false,
        truncated: false,
        exit_code: None,
        cwd: None,
        spool_span: None,
    }
}

/// An event with a JSON payload naming it.
pub fn event<'a>(seq: u64, session: Option<&'a str>, payload: &'a str) -> EventRecord<'a> {
    EventRecord {
        seq,
        time: 1_000 + seq,
        kind: "turn.completed",
        session,
        payload,
    }
}

/// The database's files in `dir` (`history.sqlite3`, `-wal`, `-shm`) that hold `needle`.
pub fn files_holding(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)
        .expect("read the store's folder")
        .flatten()
    {
        let path = entry.path();
        let is_db = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("history.sqlite3"));
        if is_db {
            let bytes = std::fs::read(&path).expect("read a database file");
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(path);
            }
        }
    }
    found
}

/// Whether this process runs as root (where file modes do not stop writes).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}
