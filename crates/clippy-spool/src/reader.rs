//! Reading a spool by cursor: [`read`], one read of a spool file, and [`SpoolFiles`], how a
//! long-lived reader (the broker's state machine) reads spools, with [`DiskSpoolFiles`] on disk.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::SpoolError;

/// What a read returns: the bytes at the cursor, and the single cursor to continue from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// At most the requested number of bytes, starting at the cursor.
    pub data: Vec<u8>,
    /// The cursor the read started at.
    pub cursor: u64,
    /// Where the next read starts: `cursor + data.len()`. Never less than `cursor`.
    pub resume_cursor: u64,
}

/// Reads at most `max_bytes` of the spool at `path` from byte offset `cursor`.
///
/// A cursor past the end of the spool is an error: cursors only come from earlier reads and
/// waits on the same spool, which never shrinks. At the end, `data` is empty and
/// `resume_cursor == cursor`.
///
/// ```
/// let path = std::env::temp_dir().join(format!("clippy-spool-doc-{}", std::process::id()));
/// std::fs::write(&path, b"hello\nworld\n")?;
/// let chunk = clippy_spool::read(&path, 6, 100)?;
/// assert_eq!((chunk.data.as_slice(), chunk.resume_cursor), (&b"world\n"[..], 12));
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(path: &Path, cursor: u64, max_bytes: usize) -> Result<Chunk, SpoolError> {
    let io = |source| SpoolError::Read {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if cursor > size {
        return Err(SpoolError::CursorBeyondEnd {
            path: path.to_owned(),
            cursor,
            size,
        });
    }
    let want = usize::try_from(size - cursor)
        .unwrap_or(usize::MAX)
        .min(max_bytes);
    let mut data = vec![0; want];
    let filled = fill_at(|buf, offset| file.read_at(buf, offset), cursor, &mut data).map_err(io)?;
    data.truncate(filled);
    Ok(Chunk {
        resume_cursor: cursor + filled as u64,
        data,
        cursor,
    })
}

/// Fills `buf` with positional reads from `offset` on, until it is full or a read returns 0 (the
/// end); returns how much was filled.
fn fill_at(
    mut read_at: impl FnMut(&mut [u8], u64) -> io::Result<usize>,
    mut offset: u64,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match read_at(&mut buf[filled..], offset)? {
            0 => break,
            n => {
                filled += n;
                offset += n as u64;
            }
        }
    }
    Ok(filled)
}

/// How a long-lived reader reads spool files: behind a trait so that what reads them (the
/// broker's state machine) is tested on in-memory spools, and [`DiskSpoolFiles`] on disk.
pub trait SpoolFiles: Send + std::fmt::Debug {
    /// Reads up to `buf.len()` bytes of the spool at `path` from byte `offset`; `Ok(0)` at the
    /// end.
    ///
    /// # Errors
    ///
    /// The file cannot be opened or read.
    fn read_at(&mut self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// The session whose spool is `path` is gone: close whatever is kept open for it.
    fn forget(&mut self, path: &Path);

    /// Fills `buf` from byte `offset` of the spool at `path`, reading until `buf` is full or the
    /// spool ends; returns how much was filled (less than `buf.len()` only at the end).
    ///
    /// # Errors
    ///
    /// A read failed (what was filled before it is lost).
    fn read_full(&mut self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        fill_at(|buf, offset| self.read_at(path, offset, buf), offset, buf)
    }
}

/// Spool files on disk, each opened once (read-only, not through a symlink: `O_NOFOLLOW`) and
/// kept open until [`SpoolFiles::forget`].
///
/// ```
/// use clippy_spool::{DiskSpoolFiles, SpoolFiles};
///
/// let path = std::env::temp_dir().join(format!("clippy-spool-files-doc-{}", std::process::id()));
/// std::fs::write(&path, b"hello\nworld\n")?;
/// let mut files = DiskSpoolFiles::default();
/// let mut buf = [0; 100];
/// let filled = files.read_full(&path, 6, &mut buf)?;
/// assert_eq!(&buf[..filled], b"world\n");
/// files.forget(&path);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct DiskSpoolFiles {
    open: HashMap<PathBuf, File>,
}

impl SpoolFiles for DiskSpoolFiles {
    fn read_at(&mut self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let file = match self.open.entry(path.to_owned()) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(
                OpenOptions::new()
                    .read(true)
                    .custom_flags(nix::libc::O_NOFOLLOW)
                    .open(path)?,
            ),
        };
        file.read_at(buf, offset)
    }

    fn forget(&mut self, path: &Path) {
        self.open.remove(path);
    }
}
