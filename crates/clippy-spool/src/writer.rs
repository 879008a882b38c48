//! The writer half of the spool: append raw output, normalised, and map raw offsets to spool
//! offsets.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use clippy_lanes::{WINDOW, splat};

use crate::dir::{FILE_MODE, SpoolDir};
use crate::error::SpoolError;

/// How many removed line-ending bytes [`SpoolWriter::spool_offset_of`] remembers (the bound on
/// its memory: 8 bytes each, 2 MiB at most). See [`SpoolWriter::window_start`].
pub const CRLF_MEMORY: usize = 256 * 1024;

/// Appends a session's output to its spool file, with `\r\n` normalised to `\n`.
///
/// # Normalisation
///
/// Every `\r\n` in the raw stream becomes `\n`, wherever the chunk boundaries fall; a `\r` not
/// followed by `\n` (a terminal redraw) stays. So the spool is exactly the raw stream with each
/// `\r\n` replaced by `\n`. A `\r` that ends a chunk cannot be decided yet, so it is held back
/// until the next [`append`](Self::append) (or [`finish`](Self::finish)); everything else is
/// written at once.
///
/// # Writes
///
/// The file is opened `O_APPEND` and written without buffering: one `write` per chunk (more only
/// on a short write), so readers in other processes, following the file by cursor, see output as
/// soon as it is appended. The append path does not allocate: one scratch buffer is reused (and
/// the bounded memory of removed `\r\n`s grows to its cap once).
///
/// # Offsets
///
/// [`len`](Self::len) is the spool's size, the `resume_cursor` of its end;
/// [`raw_len`](Self::raw_len) counts raw bytes appended; [`spool_offset_of`](Self::spool_offset_of)
/// maps a raw offset (as the turn detector reports them) to the spool offset of the same
/// position.
///
/// # Write errors
///
/// When a write fails (disk full, I/O error), [`append`](Self::append) returns the error once;
/// from then on the writer is *failed*: it writes nothing more, `append` returns `Ok(())`,
/// [`len`](Self::len) stays where the spool ends, and [`raw_len`](Self::raw_len) keeps counting.
/// The wrapper keeps passing every byte to the user — a broken spool must never stall the
/// session — and reports the error once. [`failed`](Self::failed) tells whether it happened.
///
/// # Example
///
/// ```
/// use clippy_spool::{SpoolDir, SpoolWriter};
///
/// # let runtime = std::env::temp_dir().join(format!("clippy-spool-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&runtime)?;
/// let dir = SpoolDir::create(&runtime, "doc1")?; // or SpoolDir::from_env(id)
/// let spool_path = dir.spool_path();
/// let mut spool = SpoolWriter::create(dir)?;
/// spool.append(b"hello\r")?;
/// spool.append(b"\nworld\rover\r\n")?;
/// assert_eq!(std::fs::read(&spool_path)?, b"hello\nworld\rover\n");
/// assert_eq!((spool.raw_len(), spool.len()), (19, 17));
/// assert_eq!(spool.spool_offset_of(7), Some(6)); // raw "w" -> spool "w"
/// spool.finish(None)?; // removes the session folder
/// assert!(!spool_path.exists());
/// # std::fs::remove_dir_all(&runtime)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SpoolWriter {
    file: File,
    /// `None` for [`SpoolWriter::with_file`].
    dir: Option<SpoolDir>,
    path: Option<PathBuf>,
    /// Spool bytes written.
    len: u64,
    /// Raw bytes appended.
    raw_len: u64,
    /// The last raw byte was a `\r` that has not been written yet.
    pending_cr: bool,
    /// Normalised bytes of the chunk being appended; reused.
    scratch: Vec<u8>,
    /// Raw offsets of the `\n`s dropped from `\r\n` pairs, ascending, the most recent
    /// `max_dropped` of them.
    dropped: VecDeque<u64>,
    max_dropped: usize,
    /// Dropped `\n`s forgotten from `dropped`.
    forgotten: u64,
    /// Smallest raw offset `spool_offset_of` can answer.
    window_start: u64,
    /// `raw_len` when the first write error happened.
    failed_at: Option<u64>,
}

impl SpoolWriter {
    /// Creates `output.spool` in `dir` (exclusively, mode `0600` set explicitly, append-only).
    /// The writer owns the folder: [`finish`](Self::finish) removes it or moves the spool out.
    ///
    /// # Errors
    ///
    /// [`SpoolError::CreateSpool`] when the file cannot be created (e.g. it exists);
    /// [`SpoolError::Chmod`] when its mode cannot be set. The session folder is removed again
    /// (if empty) on error.
    pub fn create(dir: SpoolDir) -> Result<SpoolWriter, SpoolError> {
        let path = dir.spool_path();
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&path)
            .map_err(|source| SpoolError::CreateSpool {
                path: path.clone(),
                source,
            });
        let file = match file {
            Ok(file) => file,
            Err(e) => {
                // Leave no empty session folder behind (remove_dir only removes an empty one).
                crate::sweep::disown(dir.path());
                let _ = fs::remove_dir(dir.path());
                return Err(e);
            }
        };
        let mut writer = SpoolWriter::with_file(file);
        writer.dir = Some(dir);
        writer.path = Some(path.clone());
        // The umask may have narrowed 0600 at creation. On error the writer is dropped, which
        // removes the folder.
        writer
            .file
            .set_permissions(Permissions::from_mode(FILE_MODE))
            .map_err(|source| SpoolError::Chmod {
                path,
                mode: FILE_MODE,
                source,
            })?;
        Ok(writer)
    }

    /// A writer appending to an already open file, with no spool folder: offsets count from
    /// where the writer starts, and [`finish`](Self::finish) only completes the file. Meant for
    /// tests (e.g. `/dev/full` to exercise write errors) and for callers that manage the file.
    #[must_use]
    pub fn with_file(file: File) -> SpoolWriter {
        SpoolWriter {
            file,
            dir: None,
            path: None,
            len: 0,
            raw_len: 0,
            pending_cr: false,
            scratch: Vec::new(),
            dropped: VecDeque::new(),
            max_dropped: CRLF_MEMORY,
            forgotten: 0,
            window_start: 0,
            failed_at: None,
        }
    }

    /// The spool file's path (`None` for [`with_file`](Self::with_file)).
    #[must_use]
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The spool folder (`None` for [`with_file`](Self::with_file)).
    #[must_use]
    pub fn dir(&self) -> Option<&SpoolDir> {
        self.dir.as_ref()
    }

    /// Appends a chunk of raw output.
    ///
    /// # Errors
    ///
    /// [`SpoolError::Write`] the first time a write fails; see the type's docs for what happens
    /// then (in short: nothing more is written, nothing is reported again, `raw_len` keeps
    /// counting).
    pub fn append(&mut self, raw: &[u8]) -> Result<(), SpoolError> {
        if raw.is_empty() {
            return Ok(());
        }
        let start = self.raw_len;
        self.raw_len += raw.len() as u64;
        if self.failed_at.is_some() {
            return Ok(());
        }
        self.normalise(start, raw);
        self.write_scratch()
    }

    /// Turns `raw` (starting at raw offset `start`) into spool bytes in `scratch`.
    fn normalise(&mut self, start: u64, raw: &[u8]) {
        self.scratch.clear();
        let mut i = 0;
        if self.pending_cr {
            self.pending_cr = false;
            if raw[0] == b'\n' {
                self.scratch.push(b'\n');
                self.record_dropped(start);
                i = 1;
            } else {
                self.scratch.push(b'\r');
            }
        }
        // The CR of each CR LF is left out: the runs between them are copied whole.
        let mut copied = i;
        let mut window_start = i;
        while window_start < raw.len() {
            let window = &raw[window_start..raw.len().min(window_start + WINDOW)];
            window_start += window.len();
            let mut pairs = crlf_starts(window, raw.get(window_start).copied());
            while pairs != 0 {
                let cr = window_start - window.len() + pairs.trailing_zeros() as usize;
                pairs &= pairs - 1;
                self.scratch.extend_from_slice(&raw[copied..cr]);
                self.record_dropped(start + cr as u64 + 1);
                copied = cr + 1;
            }
        }
        if raw.len() > i && raw.last() == Some(&b'\r') {
            // The next byte decides what it is.
            self.scratch.extend_from_slice(&raw[copied..raw.len() - 1]);
            self.pending_cr = true;
        } else {
            self.scratch.extend_from_slice(&raw[copied..]);
        }
    }

    /// Remembers that the raw byte at `offset` (the `\n` of a `\r\n`) is not in the spool.
    fn record_dropped(&mut self, offset: u64) {
        if self.dropped.len() == self.max_dropped {
            if let Some(oldest) = self.dropped.pop_front() {
                self.forgotten += 1;
                self.window_start = oldest + 1;
            }
        }
        self.dropped.push_back(offset);
    }

    /// Writes `scratch` to the file; on failure enters the failed state.
    fn write_scratch(&mut self) -> Result<(), SpoolError> {
        let mut rest = &self.scratch[..];
        while !rest.is_empty() {
            match self.file.write(rest) {
                Ok(0) => {
                    return Err(self.fail(io::Error::from(io::ErrorKind::WriteZero)));
                }
                Ok(n) => {
                    self.len += n as u64;
                    rest = &rest[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(e)),
            }
        }
        Ok(())
    }

    fn fail(&mut self, source: io::Error) -> SpoolError {
        self.failed_at = Some(self.raw_len);
        self.pending_cr = false;
        SpoolError::Write {
            path: self.path.clone(),
            source,
        }
    }

    /// Spool bytes written: the spool file's size, the `resume_cursor` of its end. A held-back
    /// trailing `\r` is not counted until it is written.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing has been written to the spool yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Raw bytes appended (counted even after a write error).
    #[must_use]
    pub fn raw_len(&self) -> u64 {
        self.raw_len
    }

    /// Whether a write failed (see the type's docs).
    #[must_use]
    pub fn failed(&self) -> bool {
        self.failed_at.is_some()
    }

    /// The smallest raw offset [`spool_offset_of`](Self::spool_offset_of) can still map.
    ///
    /// The writer remembers the positions of the last [`CRLF_MEMORY`] `\r\n`s it normalised; the
    /// window is everything after the oldest one remembered. That is at least the last 512 KiB
    /// of raw output (if it were nothing but `\r\n`s), and about 20 MiB of ordinary 80-column
    /// text; a stream without `\r\n` never leaves the window. Map offsets promptly (e.g. when
    /// the turn detector reports a turn's start) rather than long afterwards.
    #[must_use]
    pub fn window_start(&self) -> u64 {
        self.window_start
    }

    /// The spool offset of the position before raw byte `raw_offset`: the length of the
    /// normalised form of the first `raw_offset` raw bytes.
    ///
    /// Within a `\r\n`, the `\r` stands for the spool's `\n` and the `\n` is the dropped byte,
    /// so offsets map monotonically and exactly. One consequence: while a trailing `\r` is held
    /// back, `spool_offset_of(raw_len())` is `len() + 1`, counting the byte about to be written
    /// (a `\r`, or a `\n` if a `\n` follows).
    ///
    /// Returns `None` when `raw_offset` is beyond [`raw_len`](Self::raw_len), before
    /// [`window_start`](Self::window_start), or, after a write error, not covered by what was
    /// written.
    #[must_use]
    pub fn spool_offset_of(&self, raw_offset: u64) -> Option<u64> {
        if raw_offset > self.raw_len || raw_offset < self.window_start {
            return None;
        }
        let dropped_before = self.forgotten
            + self
                .dropped
                .partition_point(|&dropped| dropped < raw_offset) as u64;
        let spool_offset = raw_offset - dropped_before;
        match self.failed_at {
            Some(failed_at) if raw_offset > failed_at || spool_offset > self.len => None,
            _ => Some(spool_offset),
        }
    }

    /// Writes a held-back trailing `\r`, if any. A failure is not reported (the spool then ends
    /// without it) but does put the writer in the failed state.
    fn flush_pending(&mut self) {
        if self.pending_cr && self.failed_at.is_none() {
            self.pending_cr = false;
            self.scratch.clear();
            self.scratch.push(b'\r');
            let _ = self.write_scratch();
        }
    }

    /// Ends the spool: writes a held-back trailing `\r`, then either removes the session folder
    /// (`keep: None`) or moves the spool into the directory `keep`, as `<session_id>.spool`
    /// (mode `0600`), removes the folder, and returns the new path.
    ///
    /// `keep` is created if missing. An existing file of that name is never overwritten. The
    /// move is a rename, or a copy when `keep` is on another filesystem (the runtime directory
    /// is usually a tmpfs). A writer from [`with_file`](Self::with_file) has no folder: with
    /// `keep: None` this just closes the file and returns `Ok(None)`.
    ///
    /// A writer dropped without `finish` removes its folder too (best effort).
    ///
    /// # Errors
    ///
    /// [`SpoolError::Keep`] when the spool cannot be moved (the folder is then left as it is, so
    /// the spool is not lost, and disowned so no sweep removes it);
    /// [`SpoolError::KeepWithoutFolder`] for `keep` with a [`with_file`](Self::with_file) writer;
    /// [`SpoolError::Remove`] when the folder cannot be removed.
    pub fn finish(mut self, keep: Option<&Path>) -> Result<Option<PathBuf>, SpoolError> {
        self.flush_pending();
        let Some(dir) = self.dir.take() else {
            return match keep {
                Some(_) => Err(SpoolError::KeepWithoutFolder),
                None => Ok(None),
            };
        };
        let kept = match keep {
            Some(keep) => {
                let to = keep.join(format!("{}.spool", dir.session_id()));
                // A spool that could not be kept stays in its folder, which must then not be
                // swept as stale once this process is gone.
                keep_spool(&dir.spool_path(), keep, &to)
                    .inspect_err(|_| crate::sweep::disown(dir.path()))?;
                Some(to)
            }
            None => None,
        };
        fs::remove_dir_all(dir.path()).map_err(|source| SpoolError::Remove {
            path: dir.path().to_owned(),
            source,
        })?;
        Ok(kept)
    }
}

/// Moves the spool `from` to `to` in directory `keep` without overwriting anything.
fn keep_spool(from: &Path, keep: &Path, to: &Path) -> Result<(), SpoolError> {
    let err = |source| SpoolError::Keep {
        from: from.to_owned(),
        to: to.to_owned(),
        source,
    };
    fs::create_dir_all(keep).map_err(err)?;
    // Claim the name first: rename would silently replace an existing file.
    let mut target = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(to)
        .map_err(err)?;
    match fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            let copied = File::open(from)
                .and_then(|mut source| io::copy(&mut source, &mut target))
                .and_then(|_| target.set_permissions(Permissions::from_mode(FILE_MODE)))
                .and_then(|()| target.sync_all());
            copied.map_err(|e| {
                let _ = fs::remove_file(to);
                err(e)
            })
        }
        Err(e) => {
            let _ = fs::remove_file(to);
            Err(err(e))
        }
    }
}

impl Drop for SpoolWriter {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = fs::remove_dir_all(dir.path());
        }
    }
}

/// Bit `i` set where byte `i` of `window` (up to [`WINDOW`] bytes) is a CR whose next byte is
/// an LF (`after`: the byte after the window). Classified in vector registers
/// (`clippy_lanes`), so that a line's CR LF is found without a search of its own: lines of
/// 60-odd bytes made the search's cost per call most of the spool's.
fn crlf_starts(window: &[u8], after: Option<u8>) -> u64 {
    let [cr, lf] = clippy_lanes::masks(window, |lanes| {
        [lanes.simd_eq(splat(b'\r')), lanes.simd_eq(splat(b'\n'))]
    });
    if cr == 0 {
        return 0;
    }
    let lf_after = (lf >> 1) | (u64::from(after == Some(b'\n')) << (window.len() - 1));
    cr & lf_after
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devnull_writer() -> SpoolWriter {
        SpoolWriter::with_file(OpenOptions::new().append(true).open("/dev/null").unwrap())
    }

    #[test]
    fn held_back_cr_counts_in_the_offset_of_the_end() {
        let mut w = devnull_writer();
        w.append(b"ab\r").unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w.spool_offset_of(3), Some(3));
        w.append(b"\n").unwrap();
        assert_eq!(w.len(), 3);
        assert_eq!(w.spool_offset_of(3), Some(3));
        assert_eq!(w.spool_offset_of(4), Some(3));
        assert_eq!(w.spool_offset_of(5), None);
    }

    #[test]
    fn the_window_moves_when_memory_is_full() {
        let mut w = devnull_writer();
        w.max_dropped = 2;
        w.append(b"a\r\nb\r\nc\r\nd").unwrap(); // dropped \n at 2, 5, 8
        assert_eq!(w.window_start(), 3);
        assert_eq!(w.spool_offset_of(2), None);
        assert_eq!(w.spool_offset_of(3), Some(2));
        assert_eq!(w.spool_offset_of(6), Some(4));
        assert_eq!(w.spool_offset_of(10), Some(7));
        assert_eq!(w.len(), 7);
    }

    #[test]
    fn empty_chunks_change_nothing() {
        let mut w = devnull_writer();
        w.append(b"x\r").unwrap();
        w.append(b"").unwrap();
        w.append(b"\n").unwrap();
        assert_eq!((w.raw_len(), w.len()), (3, 2));
        assert!(!w.is_empty());
    }
}
