//! Reading a spool by cursor.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

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
    let mut file = File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if cursor > size {
        return Err(SpoolError::CursorBeyondEnd {
            path: path.to_owned(),
            cursor,
            size,
        });
    }
    file.seek(SeekFrom::Start(cursor)).map_err(io)?;
    let want = usize::try_from(size - cursor)
        .unwrap_or(usize::MAX)
        .min(max_bytes);
    let mut data = vec![0; want];
    let mut filled = 0;
    while filled < want {
        match file.read(&mut data[filled..]).map_err(io)? {
            0 => break,
            n => filled += n,
        }
    }
    data.truncate(filled);
    Ok(Chunk {
        resume_cursor: cursor + filled as u64,
        data,
        cursor,
    })
}
