//! [`HistoryError`]: what can go wrong, classified so the broker can tell "warn and go on" (a
//! read-only store, a full disk) from the rest.

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// A boxed cause: an [`io::Error`] or a [`rusqlite::Error`], whichever the failing call gave.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error of the history store. Every variant names the store's path (the folder or the
/// database file) and what was being done, so a log line alone says what to fix.
///
/// [`ReadOnly`](HistoryError::ReadOnly) and [`DiskFull`](HistoryError::DiskFull) are the
/// expected faults of a store on a user's disk: the broker logs them, reports them in its status
/// and goes on without the store (a failed write stores nothing of its batch and leaves the store
/// usable: reads still work, and a later write succeeds once the cause is gone).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The store cannot be written: a read-only file system, a folder or file without write
    /// permission, or files SQLite could not create next to the database (`-wal`, `-shm`).
    #[error(
        "history store {}: cannot {op}: it is read-only ({source}); make the folder writable or \
         turn history off",
        path.display()
    )]
    ReadOnly {
        /// The folder or file concerned.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error underneath.
        #[source]
        source: Cause,
    },
    /// No space is left: the file system is full (`ENOSPC`, `EDQUOT`) or the database reached
    /// the size cap set with [`Store::set_size_cap`](crate::Store::set_size_cap)
    /// (`SQLITE_FULL`).
    #[error(
        "history store {}: cannot {op}: the disk is full ({source}); free some space or lower \
         [history] max_bytes",
        path.display()
    )]
    DiskFull {
        /// The folder or file concerned.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error underneath.
        #[source]
        source: Cause,
    },
    /// Another process holds the database locked for longer than the busy timeout (another
    /// broker using the same folder?).
    #[error(
        "history store {}: cannot {op}: the database is locked by another process ({source})",
        path.display()
    )]
    Locked {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error underneath.
        #[source]
        source: rusqlite::Error,
    },
    /// The file is not a database, or is damaged.
    #[error(
        "history store {}: cannot {op}: the file is damaged or not a clippy history database \
         ({source}); move it aside and a new one is made",
        path.display()
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error underneath.
        #[source]
        source: rusqlite::Error,
    },
    /// The file is an SQLite database, but another program's: it has tables and no clippy
    /// schema version, or clippy's schema version without clippy's tables. It is left as it is.
    #[error(
        "history store {}: the file is another program's SQLite database ({what}), not a clippy \
         history; move it aside and a new one is made",
        path.display()
    )]
    Foreign {
        /// The database file.
        path: PathBuf,
        /// What was found instead of clippy's schema.
        what: String,
    },
    /// The database was written by a newer clippy (its `user_version` is higher than the
    /// schema this crate knows); it is left untouched.
    #[error(
        "history store {}: its schema version is {found}, newer than this clippy's ({supported}); \
         upgrade clippy or move the file aside",
        path.display()
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: i64,
        /// The newest version this crate knows.
        supported: i64,
    },
    /// Another file system error.
    #[error("history store {}: cannot {op}: {source}", path.display())]
    Io {
        /// The folder or file concerned.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error underneath.
        #[source]
        source: io::Error,
    },
    /// Another SQLite error.
    #[error("history store {}: cannot {op}: {source}", path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error underneath.
        #[source]
        source: rusqlite::Error,
    },
    /// [`Store::default_dir`](crate::Store::default_dir) found neither `XDG_STATE_HOME` nor
    /// `HOME` set to an absolute path.
    #[error(
        "no folder for the history store: neither XDG_STATE_HOME nor HOME is set to an absolute \
         path"
    )]
    NoStateDir,
}

impl HistoryError {
    /// Whether the store cannot be written because it is read-only ([`HistoryError::ReadOnly`]):
    /// warn and go on without it.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        matches!(self, HistoryError::ReadOnly { .. })
    }

    /// Whether the disk (or the store's size cap) is full ([`HistoryError::DiskFull`]): warn and
    /// go on; a later write succeeds once there is space again.
    #[must_use]
    pub fn is_disk_full(&self) -> bool {
        matches!(self, HistoryError::DiskFull { .. })
    }

    /// Classifies a file system error about `path`.
    pub(crate) fn io(path: &Path, op: &'static str, source: io::Error) -> HistoryError {
        let path = path.to_owned();
        match source.kind() {
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                HistoryError::ReadOnly {
                    path,
                    op,
                    source: Box::new(source),
                }
            }
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => HistoryError::DiskFull {
                path,
                op,
                source: Box::new(source),
            },
            _ => HistoryError::Io { path, op, source },
        }
    }

    /// Classifies an SQLite error about the database at `path`.
    pub(crate) fn sqlite(path: &Path, op: &'static str, source: rusqlite::Error) -> HistoryError {
        let path = path.to_owned();
        match source.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => HistoryError::DiskFull {
                path,
                op,
                source: Box::new(source),
            },
            // CANTOPEN once the folder and the file exist (this crate creates both first) means
            // SQLite could not open the file for writing or create its `-wal`/`-shm` beside it.
            Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
                HistoryError::ReadOnly {
                    path,
                    op,
                    source: Box::new(source),
                }
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                HistoryError::Locked { path, op, source }
            }
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                HistoryError::Corrupt { path, op, source }
            }
            _ => HistoryError::Sqlite { path, op, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_classified() {
        let p = Path::new("/x");
        let e = |kind| HistoryError::io(p, "test", io::Error::from(kind));
        assert!(e(io::ErrorKind::PermissionDenied).is_read_only());
        assert!(e(io::ErrorKind::ReadOnlyFilesystem).is_read_only());
        assert!(e(io::ErrorKind::StorageFull).is_disk_full());
        assert!(e(io::ErrorKind::QuotaExceeded).is_disk_full());
        let other = e(io::ErrorKind::NotFound);
        assert!(!other.is_read_only() && !other.is_disk_full());
        assert!(other.to_string().contains("/x"), "{other}");
    }

    #[test]
    fn sqlite_errors_are_classified() {
        let p = Path::new("/db");
        let e = |code| {
            HistoryError::sqlite(
                p,
                "test",
                rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None),
            )
        };
        assert!(e(rusqlite::ffi::SQLITE_FULL).is_disk_full());
        assert!(e(rusqlite::ffi::SQLITE_READONLY).is_read_only());
        assert!(e(rusqlite::ffi::SQLITE_CANTOPEN).is_read_only());
        assert!(matches!(
            e(rusqlite::ffi::SQLITE_BUSY),
            HistoryError::Locked { .. }
        ));
        assert!(matches!(
            e(rusqlite::ffi::SQLITE_NOTADB),
            HistoryError::Corrupt { .. }
        ));
        let msg = e(rusqlite::ffi::SQLITE_FULL).to_string();
        assert!(msg.contains("/db") && msg.contains("disk is full"), "{msg}");
    }
}
