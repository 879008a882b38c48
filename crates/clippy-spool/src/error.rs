//! The crate's one error type.

use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in `clippy-spool`. Each variant names the path concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpoolError {
    /// `XDG_RUNTIME_DIR` is unset or empty. There is deliberately no fallback to `/tmp`: spool
    /// files hold everything an agent printed and belong in the per-user runtime directory.
    #[error(
        "XDG_RUNTIME_DIR is not set (or empty); clippy keeps session spools only under the per-user runtime directory and has no /tmp fallback"
    )]
    RuntimeDirUnset,

    /// The runtime directory is not an absolute path.
    #[error("runtime directory {} is not an absolute path", .path.display())]
    RuntimeDirRelative {
        /// The path given.
        path: PathBuf,
    },

    /// The runtime directory does not exist or cannot be inspected.
    #[error("runtime directory {} is not usable: {source}", .path.display())]
    RuntimeDir {
        /// The path given.
        path: PathBuf,
        /// Why it cannot be used.
        source: io::Error,
    },

    /// The session ID cannot be used as a folder name.
    #[error("session id {id:?} cannot name a spool folder: {reason}")]
    InvalidSessionId {
        /// The ID given.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// Creating a folder failed.
    #[error("cannot create folder {}: {source}", .path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// Something that is not a directory (a file, a symlink) sits where a folder is expected.
    #[error("{} exists but is not a directory (symlinks are refused); remove it", .path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },

    /// A folder on the spool path belongs to another user; it is not used.
    #[error(
        "{} is owned by uid {owner}, not by this user (uid {uid}); refusing to use it",
        .path.display()
    )]
    NotOwned {
        /// The folder.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The effective uid of this process.
        uid: u32,
    },

    /// Setting a folder's or the spool's mode failed.
    #[error("cannot set the mode of {} to {mode:04o}: {source}", .path.display())]
    Chmod {
        /// The folder or file.
        path: PathBuf,
        /// The mode that was to be set.
        mode: u32,
        /// The OS error.
        source: io::Error,
    },

    /// The session's folder exists already (session IDs are never reused).
    #[error("session folder {} already exists; session ids must be unique", .path.display())]
    SessionExists {
        /// The folder.
        path: PathBuf,
    },

    /// Creating the spool file failed.
    #[error("cannot create spool file {}: {source}", .path.display())]
    CreateSpool {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// Writing to the spool failed (disk full, I/O error). Reported once; the writer then
    /// stops writing but keeps counting (see [`SpoolWriter`](crate::SpoolWriter)).
    #[error("writing to spool {} failed, the spool stops here: {source}", display_opt(.path.as_deref()))]
    Write {
        /// The spool file, when known.
        path: Option<PathBuf>,
        /// The OS error.
        source: io::Error,
    },

    /// Keeping the spool was asked of a writer that has no spool folder
    /// ([`SpoolWriter::with_file`](crate::SpoolWriter::with_file)).
    #[error("this spool has no folder, so it cannot be moved to a keep directory")]
    KeepWithoutFolder,

    /// Moving the spool to the keep directory failed. The session folder and its spool are left
    /// in place, so nothing is lost.
    #[error("cannot keep spool {} as {}: {source}", .from.display(), .to.display())]
    Keep {
        /// The spool file.
        from: PathBuf,
        /// Where it was to go.
        to: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// Removing the session folder failed.
    #[error("cannot remove session folder {}: {source}", .path.display())]
    Remove {
        /// The folder.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// Reading the spool failed.
    #[error("cannot read spool {}: {source}", .path.display())]
    Read {
        /// The spool file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// A cursor past the end of the spool (cursors only come from this spool's reads and waits).
    #[error("cursor {cursor} is past the end of spool {} ({size} bytes)", .path.display())]
    CursorBeyondEnd {
        /// The spool file.
        path: PathBuf,
        /// The cursor given.
        cursor: u64,
        /// The spool's size.
        size: u64,
    },

    /// A pattern for a scan that cannot be used.
    #[error("invalid pattern {pattern:?}: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// Why.
        reason: String,
    },
}

fn display_opt(path: Option<&Path>) -> String {
    path.map_or_else(|| "(open file)".to_owned(), |p| p.display().to_string())
}
