//! A session's spool: the append-only file of everything the child printed, with line endings
//! normalised to `\n`, under `$XDG_RUNTIME_DIR/clippy/sessions/<id>/output.spool`.
//!
//! A cursor is a byte offset into the spool file; reads and waits take a cursor and return the
//! one `resume_cursor` to continue from (SPEC §6, seeds/002). The writer half is used by the
//! wrapper: [`SpoolDir`] makes the private folder, [`SpoolWriter`] appends output as it arrives
//! and maps raw stream offsets (what the turn detector counts) to spool offsets (what cursors
//! count). The reader half is for whoever serves cursors: [`read`] returns bytes at a cursor
//! ([`SpoolFiles`] for a reader that keeps spools open, [`DiskSpoolFiles`] on disk), and a
//! [`Scanner`] finds a pattern in the ANSI-stripped text from a cursor on, never skipping
//! a match, with its span in spool offsets.
//!
//! Why the writer is shaped like this: the wrapper forwards every byte to the user first and
//! must never wait on the spool, and readers in other processes follow the file by cursor. So
//! appends are unbuffered (readers see bytes at once), do not allocate, and a failing disk turns
//! the writer into a counter that reports the error once instead of an obstacle.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod dir;
mod error;
mod reader;
mod scanner;
mod sweep;
mod writer;

pub use dir::{DIR_MODE, FILE_MODE, SPOOL_FILE_NAME, SpoolDir, runtime_dir_from_env, session_dir};
pub use error::SpoolError;
pub use reader::{Chunk, DiskSpoolFiles, SpoolFiles, read};
pub use scanner::{MAX_MATCH_BYTES, Match, Pattern, RecentRegexes, Scanner, strip_escapes};
pub use sweep::{Host, OWNER_FILE_NAME, Owner, Process, Verdict, sweep_stale, verdict};
pub use writer::{CRLF_MEMORY, SpoolWriter};
