//! [`Journal`]: records appended to a file beside the database, to be written into it later.
//!
//! Appending is a copy into the page cache; writing a turn into the database (its rows, its
//! words in the full-text index) costs tens of times more CPU. The broker appends what comes in
//! and acknowledges it once appended, and its store thread moves the journal into the database
//! at its own pace, so a store that falls behind the sessions costs disk, not memory.
//!
//! # Format
//! `history.journal`, mode 0600: frames, each a 4-byte length (little-endian), a 4-byte FNV-1a
//! hash of the payload and the payload (a record, see `encode`). A frame cut short or whose hash
//! does not match ends the journal: what follows it is cut off when the journal is opened (a
//! broker killed in the middle of an append). Replaying a journal from its start is harmless:
//! turns and events already stored are skipped, and sessions are written again in order.

use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::HistoryError;
use crate::query::{StoredTurn, TurnSummary};
use crate::record::{EventRecord, Record, SessionEnd, SessionRecord, TurnRecord};
use crate::store::{Result, open_private};

/// The journal's file name in the store's folder.
pub const JOURNAL_FILE: &str = "history.journal";

/// A frame's header: length and hash.
const HEADER: usize = 8;

const TAG_SESSION: u8 = 1;
const TAG_SESSION_END: u8 = 2;
const TAG_TURN: u8 = 3;
const TAG_EVENT: u8 = 4;

/// Records appended to `<dir>/history.journal` and read back in order (see the module's
/// documentation). Blocking, single-threaded, like [`Store`](crate::Store).
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    /// Bytes of whole frames in the file.
    len: u64,
    /// Where the next [`Journal::read`] starts.
    read_at: u64,
    /// The largest event id in the journal (0: none).
    max_event_seq: u64,
    /// Bytes the journal may grow to; an append past it fails with [`HistoryError::DiskFull`].
    max_bytes: u64,
    /// Where each turn in the file is (turn id → frame offset), so a turn can be read before
    /// it is in the database.
    turns: HashMap<String, u64>,
    /// Each session's newest turn in the file (session key → seq, frame offset).
    latest: HashMap<String, (u64, u64)>,
    /// The sessions' names in the file (name → key; the newest session of a name).
    names: HashMap<String, String>,
    /// Where each turn's and each event's frame starts, in file order: what is past the read
    /// offset is not in the database yet ([`Journal::unread_turns`]).
    turn_frames: Vec<u64>,
    event_frames: Vec<u64>,
}

/// A record read back from the journal, owning its fields; [`JournaledRecord::record`] borrows
/// it as the [`Record`] [`Store::apply`](crate::Store::apply) takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are those of the record types
pub enum JournaledRecord {
    /// A [`SessionRecord`].
    Session {
        key: String,
        name: Option<String>,
        command: Vec<String>,
        cwd: Option<String>,
        started_at: u64,
    },
    /// A [`SessionEnd`].
    SessionEnd {
        key: String,
        ended_at: u64,
        exit_code: Option<i32>,
        signal: Option<i32>,
    },
    /// A [`TurnRecord`].
    Turn {
        turn_id: String,
        session: String,
        seq: u64,
        started_at: Option<u64>,
        ended_at: u64,
        input: Option<String>,
        content: Vec<u8>,
        text: String,
        message: Option<String>,
        interrupted: bool,
        truncated: bool,
        exit_code: Option<i32>,
        cwd: Option<String>,
        spool_span: Option<(u64, u64)>,
    },
    /// An [`EventRecord`].
    Event {
        seq: u64,
        time: u64,
        kind: String,
        session: Option<String>,
        payload: String,
    },
}

impl JournaledRecord {
    /// The record, borrowed.
    #[must_use]
    pub fn record(&self) -> Record<'_> {
        match self {
            JournaledRecord::Session {
                key,
                name,
                command,
                cwd,
                started_at,
            } => Record::Session(SessionRecord {
                key,
                name: name.as_deref(),
                command,
                cwd: cwd.as_deref(),
                started_at: *started_at,
            }),
            JournaledRecord::SessionEnd {
                key,
                ended_at,
                exit_code,
                signal,
            } => Record::SessionEnd(SessionEnd {
                key,
                ended_at: *ended_at,
                exit_code: *exit_code,
                signal: *signal,
            }),
            JournaledRecord::Turn {
                turn_id,
                session,
                seq,
                started_at,
                ended_at,
                input,
                content,
                text,
                message,
                interrupted,
                truncated,
                exit_code,
                cwd,
                spool_span,
            } => Record::Turn(TurnRecord {
                turn_id,
                session,
                seq: *seq,
                started_at: *started_at,
                ended_at: *ended_at,
                input: input.as_deref(),
                content,
                text,
                message: message.as_deref(),
                interrupted: *interrupted,
                truncated: *truncated,
                exit_code: *exit_code,
                cwd: cwd.as_deref(),
                spool_span: *spool_span,
            }),
            JournaledRecord::Event {
                seq,
                time,
                kind,
                session,
                payload,
            } => Record::Event(EventRecord {
                seq: *seq,
                time: *time,
                kind,
                session: session.as_deref(),
                payload,
            }),
        }
    }
}

impl Journal {
    /// Opens `<dir>/history.journal` (made 0600 if missing; `dir` must exist: open the
    /// [`Store`](crate::Store) first), reads it through once to find where its whole frames end
    /// (cutting off a torn last frame) and its largest event id, and starts reading at its
    /// beginning: what it holds was not, or not surely, written into the database.
    ///
    /// # Errors
    /// [`HistoryError::ReadOnly`] when the file cannot be opened for writing, others for other
    /// failures.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<Journal> {
        let path = dir.join(JOURNAL_FILE);
        let file =
            open_private(&path).map_err(|e| HistoryError::io(&path, "open the journal", e))?;
        let mut journal = Journal {
            file,
            path,
            len: 0,
            read_at: 0,
            max_event_seq: 0,
            max_bytes,
            turns: HashMap::new(),
            latest: HashMap::new(),
            names: HashMap::new(),
            turn_frames: Vec::new(),
            event_frames: Vec::new(),
        };
        journal.scan()?;
        Ok(journal)
    }

    /// The journal's file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes not read back yet.
    #[must_use]
    pub fn unread(&self) -> u64 {
        self.len - self.read_at
    }

    /// Turns in the journal not read back yet: on the store's thread, between portions, the
    /// turns acknowledged that are not in the database yet.
    #[must_use]
    pub fn unread_turns(&self) -> u64 {
        unread(&self.turn_frames, self.read_at)
    }

    /// Events in the journal not read back yet, as [`Journal::unread_turns`].
    #[must_use]
    pub fn unread_events(&self) -> u64 {
        unread(&self.event_frames, self.read_at)
    }

    /// Bytes in the file.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file holds nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The largest event id the journal holds (0: none): a broker's new ids go on after it and
    /// after the database's.
    #[must_use]
    pub fn max_event_seq(&self) -> u64 {
        self.max_event_seq
    }

    /// Appends `records` with one write: all of them or — on an error, the file cut back to
    /// where it was — none. They are in the page cache when it returns: a broker killed then
    /// loses none of them, power loss may.
    ///
    /// # Errors
    /// [`HistoryError::DiskFull`] on a full disk or past the journal's `max_bytes`,
    /// [`HistoryError::ReadOnly`], others.
    pub fn append(&mut self, records: &[Record<'_>]) -> Result<()> {
        let mut buf = Vec::new();
        let mut offsets = Vec::new();
        let mut events = Vec::new();
        for record in records {
            let start = buf.len();
            match record {
                Record::Turn(t) => offsets.push((t.turn_id, t.session, t.seq, start as u64)),
                Record::Session(SessionRecord {
                    key,
                    name: Some(name),
                    ..
                }) => {
                    self.names.insert((*name).to_owned(), (*key).to_owned());
                }
                _ => {}
            }
            buf.extend_from_slice(&[0; HEADER]);
            encode(record, &mut buf);
            let payload = &buf[start + HEADER..];
            let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
            let hash = checksum(payload);
            buf[start..start + 4].copy_from_slice(&len.to_le_bytes());
            buf[start + 4..start + HEADER].copy_from_slice(&hash.to_le_bytes());
            if let Record::Event(e) = record {
                self.max_event_seq = self.max_event_seq.max(e.seq);
                events.push(start as u64);
            }
        }
        let op = "append to the journal";
        if self.len + buf.len() as u64 > self.max_bytes {
            return Err(HistoryError::io(
                &self.path,
                op,
                std::io::Error::new(
                    ErrorKind::StorageFull,
                    format!("the journal reached its limit of {} bytes", self.max_bytes),
                ),
            ));
        }
        let written = self
            .file
            .write_all_at(&buf, self.len)
            .and_then(|()| self.file.flush());
        match written {
            Ok(()) => {
                let len = self.len;
                self.event_frames
                    .extend(events.iter().map(|start| len + start));
                for (turn_id, session, seq, start) in offsets {
                    self.index(turn_id, session, seq, self.len + start);
                }
                self.len += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(self.len);
                Err(HistoryError::io(&self.path, op, e))
            }
        }
    }

    /// Reads the next records, up to `max_records` and (past the first) `max_bytes` of frames;
    /// empty when all are read. Reading does not remove them: [`Journal::clear`] does, once
    /// they are in the database; [`Journal::rewind`] reads them again.
    ///
    /// # Errors
    /// On a failed read.
    pub fn read(&mut self, max_records: usize, max_bytes: u64) -> Result<Vec<JournaledRecord>> {
        let mut out = Vec::new();
        let mut read = 0;
        while out.len() < max_records
            && self.read_at < self.len
            && (out.is_empty() || read < max_bytes)
        {
            let Some((payload, next)) = self.frame_at(self.read_at)? else {
                break;
            };
            read += next - self.read_at;
            self.read_at = next;
            if let Some(record) = decode(&payload) {
                out.push(record);
            }
        }
        Ok(out)
    }

    /// Reads again from `offset`, a value of [`Journal::read_offset`] taken before.
    pub fn rewind(&mut self, offset: u64) {
        self.read_at = offset.min(self.len);
    }

    /// Where the next read starts.
    #[must_use]
    pub fn read_offset(&self) -> u64 {
        self.read_at
    }

    /// Empties the file once everything in it is read and in the database.
    ///
    /// # Errors
    /// On a failed truncation.
    pub fn clear(&mut self) -> Result<()> {
        self.file
            .set_len(0)
            .map_err(|e| HistoryError::io(&self.path, "empty the journal", e))?;
        self.len = 0;
        self.read_at = 0;
        self.turns = HashMap::new();
        self.latest = HashMap::new();
        self.names = HashMap::new();
        self.turn_frames = Vec::new();
        self.event_frames = Vec::new();
        Ok(())
    }

    /// A turn in the journal (written into the database or not yet): `which` is a turn id, or
    /// a session key or name for its newest turn. `None` when the journal has none.
    ///
    /// # Errors
    /// On a failed read.
    pub fn turn(&self, which: &str) -> Result<Option<JournaledRecord>> {
        let at = match self.turns.get(which) {
            Some(at) => *at,
            None => {
                let key = self.names.get(which).map_or(which, String::as_str);
                match self.latest.get(key) {
                    Some((_, at)) => *at,
                    None => return Ok(None),
                }
            }
        };
        Ok(self
            .frame_at(at)?
            .and_then(|(payload, _)| decode(&payload))
            .filter(|record| matches!(record, JournaledRecord::Turn { .. })))
    }

    /// [`Journal::turn`] as the store gives a turn ([`Store::get_turn`](crate::Store::get_turn)),
    /// without what only the database knows (the session's name, command and end).
    ///
    /// # Errors
    /// On a failed read.
    pub fn stored_turn(&self, which: &str) -> Result<Option<StoredTurn>> {
        let Some(JournaledRecord::Turn {
            turn_id,
            session,
            seq,
            started_at,
            ended_at,
            input,
            content,
            text,
            message,
            interrupted,
            truncated,
            exit_code,
            cwd,
            spool_span,
        }) = self.turn(which)?
        else {
            return Ok(None);
        };
        Ok(Some(StoredTurn {
            summary: TurnSummary {
                turn_id,
                session,
                seq,
                session_name: None,
                command: Vec::new(),
                cwd,
                started_at,
                ended_at,
                input,
                exit_code,
                interrupted,
                truncated,
                spool_span,
                content_bytes: content.len() as u64,
                text_bytes: text.len() as u64,
                message_bytes: message.as_ref().map(|m| m.len() as u64),
                session_ended_at: None,
            },
            content,
            text,
            message,
        }))
    }

    fn index(&mut self, turn_id: &str, session: &str, seq: u64, at: u64) {
        self.turns.insert(turn_id.to_owned(), at);
        self.turn_frames.push(at);
        let newest = self.latest.entry(session.to_owned()).or_insert((seq, at));
        if seq >= newest.0 {
            *newest = (seq, at);
        }
    }

    /// Finds the end of the whole frames and the largest event id; cuts off a torn tail.
    fn scan(&mut self) -> Result<()> {
        let size = self
            .file
            .metadata()
            .map_err(|e| HistoryError::io(&self.path, "read the journal", e))?
            .len();
        self.len = size;
        let mut at = 0;
        while at < size {
            match self.frame_at(at)? {
                Some((payload, next)) => {
                    match decode(&payload) {
                        Some(JournaledRecord::Event { seq, .. }) => {
                            self.max_event_seq = self.max_event_seq.max(seq);
                            self.event_frames.push(at);
                        }
                        Some(JournaledRecord::Turn {
                            turn_id,
                            session,
                            seq,
                            ..
                        }) => self.index(&turn_id, &session, seq, at),
                        Some(JournaledRecord::Session {
                            key,
                            name: Some(name),
                            ..
                        }) => {
                            self.names.insert(name, key);
                        }
                        _ => {}
                    }
                    at = next;
                }
                None => break,
            }
        }
        if at < size {
            self.file
                .set_len(at)
                .map_err(|e| HistoryError::io(&self.path, "cut off the journal's torn end", e))?;
        }
        self.len = at;
        self.read_at = 0;
        Ok(())
    }

    /// The payload of the frame at `at` and where the next begins; `None` for a frame cut short
    /// or damaged (the journal's end).
    fn frame_at(&self, at: u64) -> Result<Option<(Vec<u8>, u64)>> {
        let op = "read the journal";
        let mut header = [0u8; HEADER];
        if !self.read_exact_at(&mut header, at, op)? {
            return Ok(None);
        }
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let hash = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        // A length past the file's end is a torn or damaged header: nothing is allocated for it
        // (it may say 4 GiB).
        if at + HEADER as u64 + u64::from(len) > self.len {
            return Ok(None);
        }
        let mut payload = vec![0u8; len as usize];
        if !self.read_exact_at(&mut payload, at + HEADER as u64, op)? || checksum(&payload) != hash
        {
            return Ok(None);
        }
        Ok(Some((payload, at + HEADER as u64 + u64::from(len))))
    }

    /// Fills `buf` from `at`; `false` at the file's end.
    fn read_exact_at(&self, buf: &mut [u8], at: u64, op: &'static str) -> Result<bool> {
        match self.file.read_exact_at(buf, at) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(HistoryError::io(&self.path, op, e)),
        }
    }
}

/// The frame's check: a multiply-xor hash eight bytes at a time (the journal is written at the
/// sessions' rate on a thread that may get little CPU: a byte-at-a-time hash was most of its
/// work), folded to 32 bits.
fn checksum(bytes: &[u8]) -> u32 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut hash: u64 = K ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        hash = (hash ^ u64::from_le_bytes(w))
            .wrapping_mul(K)
            .rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    hash = (hash ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    hash ^= hash >> 32;
    hash as u32
}

// ── the payload: a tag, then the fields in order ────────────────────────────────────────────

fn put_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(buf: &mut Vec<u8>, v: &[u8]) {
    put_u64(buf, v.len() as u64);
    buf.extend_from_slice(v);
}

fn put_opt_bytes(buf: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        Some(v) => {
            buf.push(1);
            put_bytes(buf, v);
        }
        None => buf.push(0),
    }
}

fn put_opt_u64(buf: &mut Vec<u8>, v: Option<u64>) {
    match v {
        Some(v) => {
            buf.push(1);
            put_u64(buf, v);
        }
        None => buf.push(0),
    }
}

fn put_opt_i32(buf: &mut Vec<u8>, v: Option<i32>) {
    put_opt_u64(buf, v.map(|v| u64::from(v.cast_unsigned())));
}

fn encode(record: &Record<'_>, buf: &mut Vec<u8>) {
    match record {
        Record::Session(s) => {
            buf.push(TAG_SESSION);
            put_bytes(buf, s.key.as_bytes());
            put_opt_bytes(buf, s.name.map(str::as_bytes));
            put_u64(buf, s.command.len() as u64);
            for arg in s.command {
                put_bytes(buf, arg.as_bytes());
            }
            put_opt_bytes(buf, s.cwd.map(str::as_bytes));
            put_u64(buf, s.started_at);
        }
        Record::SessionEnd(e) => {
            buf.push(TAG_SESSION_END);
            put_bytes(buf, e.key.as_bytes());
            put_u64(buf, e.ended_at);
            put_opt_i32(buf, e.exit_code);
            put_opt_i32(buf, e.signal);
        }
        Record::Turn(t) => {
            buf.push(TAG_TURN);
            put_bytes(buf, t.turn_id.as_bytes());
            put_bytes(buf, t.session.as_bytes());
            put_u64(buf, t.seq);
            put_opt_u64(buf, t.started_at);
            put_u64(buf, t.ended_at);
            put_opt_bytes(buf, t.input.map(str::as_bytes));
            put_bytes(buf, t.content);
            put_bytes(buf, t.text.as_bytes());
            put_opt_bytes(buf, t.message.map(str::as_bytes));
            buf.push(u8::from(t.interrupted) | u8::from(t.truncated) << 1);
            put_opt_i32(buf, t.exit_code);
            put_opt_bytes(buf, t.cwd.map(str::as_bytes));
            put_opt_u64(buf, t.spool_span.map(|(start, _)| start));
            put_opt_u64(buf, t.spool_span.map(|(_, end)| end));
        }
        Record::Event(e) => {
            buf.push(TAG_EVENT);
            put_u64(buf, e.seq);
            put_u64(buf, e.time);
            put_bytes(buf, e.kind.as_bytes());
            put_opt_bytes(buf, e.session.map(str::as_bytes));
            put_bytes(buf, e.payload.as_bytes());
        }
    }
}

/// Reads a payload's fields in order.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn u64(&mut self) -> Option<u64> {
        let bytes = self.0.get(..8)?;
        self.0 = &self.0[8..];
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<Vec<u8>> {
        let len = usize::try_from(self.u64()?).ok()?;
        let bytes = self.0.get(..len)?.to_vec();
        self.0 = &self.0[len..];
        Some(bytes)
    }

    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?).ok()
    }

    fn opt_string(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            _ => Some(Some(self.string()?)),
        }
    }

    fn opt_u64(&mut self) -> Option<Option<u64>> {
        match self.u8()? {
            0 => Some(None),
            _ => Some(Some(self.u64()?)),
        }
    }

    fn opt_i32(&mut self) -> Option<Option<i32>> {
        Some(self.opt_u64()?.map(|v| (v as u32).cast_signed()))
    }
}

/// A payload's record; `None` for one this version cannot read (skipped).
fn decode(payload: &[u8]) -> Option<JournaledRecord> {
    let mut r = Reader(payload);
    let record = match r.u8()? {
        TAG_SESSION => JournaledRecord::Session {
            key: r.string()?,
            name: r.opt_string()?,
            command: {
                let n = r.u64()?;
                let mut command = Vec::new();
                for _ in 0..n {
                    command.push(r.string()?);
                }
                command
            },
            cwd: r.opt_string()?,
            started_at: r.u64()?,
        },
        TAG_SESSION_END => JournaledRecord::SessionEnd {
            key: r.string()?,
            ended_at: r.u64()?,
            exit_code: r.opt_i32()?,
            signal: r.opt_i32()?,
        },
        TAG_TURN => {
            let turn_id = r.string()?;
            let session = r.string()?;
            let seq = r.u64()?;
            let started_at = r.opt_u64()?;
            let ended_at = r.u64()?;
            let input = r.opt_string()?;
            let content = r.bytes()?;
            let text = r.string()?;
            let message = r.opt_string()?;
            let flags = r.u8()?;
            let exit_code = r.opt_i32()?;
            let cwd = r.opt_string()?;
            let start = r.opt_u64()?;
            let end = r.opt_u64()?;
            JournaledRecord::Turn {
                turn_id,
                session,
                seq,
                started_at,
                ended_at,
                input,
                content,
                text,
                message,
                interrupted: flags & 1 != 0,
                truncated: flags & 2 != 0,
                exit_code,
                cwd,
                spool_span: start.zip(end),
            }
        }
        TAG_EVENT => JournaledRecord::Event {
            seq: r.u64()?,
            time: r.u64()?,
            kind: r.string()?,
            session: r.opt_string()?,
            payload: r.string()?,
        },
        _ => return None,
    };
    Some(record)
}

/// How many of `frames` (offsets in file order) start at or past `read_at`.
fn unread(frames: &[u64], read_at: u64) -> u64 {
    (frames.len() - frames.partition_point(|&at| at < read_at)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_reads_back_as_it_was_written() {
        let command = vec!["claude".to_owned(), "--x".to_owned()];
        let records = [
            Record::Session(SessionRecord {
                key: "k",
                name: Some("rev"),
                command: &command,
                cwd: None,
                started_at: 5,
            }),
            Record::SessionEnd(SessionEnd {
                key: "k",
                ended_at: 9,
                exit_code: Some(-1),
                signal: None,
            }),
            Record::Turn(TurnRecord {
                turn_id: "k:1",
                session: "k",
                seq: 1,
                started_at: None,
                ended_at: 7,
                input: Some("q"),
                content: b"\x1b[1mhi\xff",
                text: "hi",
                message: None,
                interrupted: true,
                truncated: false,
                exit_code: Some(2),
                cwd: Some("/x"),
                spool_span: Some((3, 4)),
            }),
            Record::Event(EventRecord {
                seq: 12,
                time: 8,
                kind: "turn.completed",
                session: Some("k"),
                payload: "{}",
            }),
        ];
        for record in &records {
            let mut buf = Vec::new();
            encode(record, &mut buf);
            let back = decode(&buf).expect("decodes");
            assert_eq!(back.record(), *record);
            // Cut short anywhere, a payload does not decode.
            for cut in 0..buf.len() {
                assert_eq!(decode(&buf[..cut]), None, "{record:?} cut at {cut}");
            }
        }
    }
}
