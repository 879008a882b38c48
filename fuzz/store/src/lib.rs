//! What the history's fuzz targets share: a scratch folder per fuzzing process, the known
//! records their valid files are made from, and the check every error must pass.

use std::path::PathBuf;

use clippy_history::{EventRecord, HistoryError, Record, SessionEnd, SessionRecord, TurnRecord};

/// A folder of its own under `$TMPDIR` for this fuzzing process (`clippy-fuzz-<name>-<pid>`),
/// emptied first.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clippy-fuzz-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// An error of the history is clear: it names the store or the file it is about.
pub fn clear(error: HistoryError) {
    let message = error.to_string();
    assert!(message.contains("history store"), "{message}");
}

/// The owned parts of the known records: two sessions (`aaa`, named `rev`, and `bbb`), six turns
/// of `aaa` with an event each (every other one with a message, the third interrupted), and
/// `bbb`'s end.
pub struct Known {
    command: Vec<String>,
    text: String,
    content: String,
    ids: Vec<String>,
}

impl Default for Known {
    fn default() -> Self {
        let text = "The migration drops a column; the reviewer asks why. ".repeat(8);
        Self {
            command: vec!["bash".to_owned(), "--norc".to_owned()],
            content: format!("\x1b[1m{text}\x1b[0m\r\n"),
            text,
            ids: (1..=6).map(|seq| format!("aaa:{seq}")).collect(),
        }
    }
}

impl Known {
    /// The records, in the order a broker hands them on.
    pub fn records(&self) -> Vec<Record<'_>> {
        let mut records = vec![
            Record::Session(SessionRecord {
                key: "aaa",
                name: Some("rev"),
                command: &self.command,
                cwd: Some("/src/app"),
                started_at: 1_000,
            }),
            Record::Session(SessionRecord {
                key: "bbb",
                name: None,
                command: &self.command,
                cwd: None,
                started_at: 2_000,
            }),
        ];
        for (seq, id) in (1u64..).zip(&self.ids) {
            records.push(Record::Turn(TurnRecord {
                turn_id: id,
                session: "aaa",
                seq,
                started_at: Some(1_000 + seq * 10),
                ended_at: 1_005 + seq * 10,
                input: Some("explain the migration"),
                content: self.content.as_bytes(),
                text: &self.text,
                message: (seq % 2 == 0).then_some("**Done.**"),
                interrupted: seq == 3,
                truncated: false,
                exit_code: Some(0),
                cwd: Some("/src/app"),
                spool_span: Some((seq * 100, seq * 100 + 90)),
            }));
            records.push(Record::Event(EventRecord {
                seq,
                time: 1_006 + seq * 10,
                kind: "turn.completed",
                session: Some("aaa"),
                payload: r#"{"type":"turn.completed","session":"aaa"}"#,
            }));
        }
        records.push(Record::SessionEnd(SessionEnd {
            key: "bbb",
            ended_at: 3_000,
            exit_code: Some(1),
            signal: None,
        }));
        records
    }
}

/// `file` damaged by `damage`, a list of records `[op, a, b, len, bytes…]` on blocks of `block`
/// bytes: `op % 4` 0 truncates the file to `(a·256 + b) · block / 256` bytes; 1 overwrites
/// block `a` at offset `b·16` (within the block) with the bytes; 2 fills block `a` with byte
/// `b` (garbage, or zeros); 3 copies block `a` over block `b`.
pub fn damage(mut file: Vec<u8>, mut damage: &[u8], block: usize) -> Vec<u8> {
    while let [op, a, b, len, tail @ ..] = damage {
        let len = usize::from(*len).min(tail.len());
        let (bytes, after) = tail.split_at(len);
        damage = after;
        let blocks = file.len().div_ceil(block).max(1);
        let start = |n: u8| usize::from(n) % blocks * block;
        match op % 4 {
            0 => file.truncate(usize::from(u16::from_be_bytes([*a, *b])) * block / 256),
            1 => {
                let at = start(*a) + usize::from(*b) * 16 % block;
                for (i, byte) in bytes.iter().enumerate() {
                    if let Some(slot) = file.get_mut(at + i) {
                        *slot = *byte;
                    }
                }
            }
            2 => {
                let at = start(*a);
                let end = (at + block).min(file.len());
                if at < end {
                    file[at..end].fill(*b);
                }
            }
            _ => {
                let (from, to) = (start(*a), start(*b));
                let n = block.min(file.len().saturating_sub(from.max(to)));
                file.copy_within(from..from + n, to);
            }
        }
    }
    file
}
