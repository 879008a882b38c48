//! A session's spool: the append-only file of everything the child printed, with line endings
//! normalised to `\n`, under `$XDG_RUNTIME_DIR/clippy/sessions/<id>/output.spool`.
//!
//! A cursor is a byte offset into the spool file; the broker's `read` and `wait_for` scan the
//! file from a cursor and return a `resume_cursor` (SPEC §6, seeds/002). This crate has the
//! writer half, used by the wrapper: [`SpoolDir`] makes the private folder, [`SpoolWriter`]
//! appends output as it arrives and maps raw stream offsets (what the turn detector counts) to
//! spool offsets (what cursors count).
//!
//! Why the writer is shaped like this: the wrapper forwards every byte to the user first and
//! must never wait on the spool, and readers in other processes follow the file by cursor. So
//! appends are unbuffered (readers see bytes at once), do not allocate, and a failing disk turns
//! the writer into a counter that reports the error once instead of an obstacle.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod dir;
mod error;
mod writer;

pub use dir::{DIR_MODE, FILE_MODE, SPOOL_FILE_NAME, SpoolDir, runtime_dir_from_env, session_dir};
pub use error::SpoolError;
pub use writer::{CRLF_MEMORY, SpoolWriter};
