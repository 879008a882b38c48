//! The crate's errors: [`RegistryError`] for the registry and its values, [`SinkError`] for
//! delivery.
//!
//! They are two types on purpose: a sink failure is about the outside world (a file system, a
//! PTY, a clipboard) and never about the turns stored (CONTRACT_REGISTRY: "sink failures are
//! reported but do not affect turn storage"), so no registry operation can return one.

use std::io;
use std::path::PathBuf;

use crate::TurnId;

/// Everything that can go wrong in the registry, its configuration and its values.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// A [`RegistryConfig`](crate::RegistryConfig) value is out of range.
    #[error("invalid registry configuration: {field} = {value} {reason}")]
    InvalidConfig {
        /// The field, e.g. `ring_depth`.
        field: &'static str,
        /// The value given.
        value: usize,
        /// What range is allowed.
        reason: &'static str,
    },

    /// A session ID that cannot be part of a turn ID (empty, or containing `:`).
    #[error("invalid session id {session:?}: {reason}")]
    InvalidSessionId {
        /// The ID given.
        session: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A turn ID that does not have the form `<session>:<seq>` with a non-empty session and a
    /// seq of 1 or more.
    #[error("invalid turn id {input:?}: {reason} (expected <session>:<seq>, seq from 1)")]
    InvalidTurnId {
        /// The text (or the parts) given.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// [`Registry::add_session`](crate::Registry::add_session) for a session that is already
    /// registered. Session IDs are never reused, so this is a caller bug or a second wrapper
    /// claiming the same ID.
    #[error("session {session:?} is already registered")]
    DuplicateSession {
        /// The session ID.
        session: String,
    },

    /// The session is not registered (never was, or was removed).
    #[error("session {session:?} is not registered")]
    SessionNotFound {
        /// The session ID.
        session: String,
    },

    /// The session exists but has no completed turn yet.
    #[error("session {session:?} has no completed turn yet")]
    NoTurn {
        /// The session ID.
        session: String,
    },

    /// The turn is not in the registry: evicted from its ring, its session removed, or it never
    /// existed. Evicted turns cannot be recovered.
    #[error("turn {turn_id} is not in the registry (evicted, session removed, or never existed)")]
    TurnNotFound {
        /// The turn ID asked for.
        turn_id: TurnId,
    },

    /// A content format name other than `raw`, `text` or `message`.
    #[error("unknown format {input:?}: expected \"raw\", \"text\" or \"message\"")]
    UnknownFormat {
        /// The name given.
        input: String,
    },
}

/// Why a [`Sink`](crate::Sink) could not deliver. Reported to the client that asked; the turn
/// registry is never affected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The file sink's path is relative. The broker's working directory is not the client's, so
    /// clients must resolve paths before sending them.
    #[error("file sink path {} is relative; give an absolute path", .path.display())]
    RelativePath {
        /// The path given.
        path: PathBuf,
    },

    /// The file sink's path has no file name (it is `/`, or ends in `..`).
    #[error("file sink path {} does not name a file", .path.display())]
    NoFileName {
        /// The path given.
        path: PathBuf,
    },

    /// The folder the file would go in does not exist (it is not created).
    #[error("cannot write {}: folder {} does not exist", .path.display(), .parent.display())]
    ParentMissing {
        /// The target path.
        path: PathBuf,
        /// Its parent folder.
        parent: PathBuf,
    },

    /// The parent of the target is not a folder.
    #[error("cannot write {}: {} is not a folder", .path.display(), .parent.display())]
    ParentNotDirectory {
        /// The target path.
        path: PathBuf,
        /// Its parent.
        parent: PathBuf,
    },

    /// The target is a directory; the file sink writes files only.
    #[error("cannot write {}: it is a directory; give a file path", .path.display())]
    IsDirectory {
        /// The target path.
        path: PathBuf,
    },

    /// The target is a symbolic link. The file sink never follows or replaces symlinks, so a
    /// link cannot redirect a write elsewhere; give the link's target instead.
    #[error("refusing to write {}: it is a symbolic link; give the real path", .path.display())]
    Symlink {
        /// The target path.
        path: PathBuf,
    },

    /// The target exists and is neither a regular file, a directory nor a symlink (a FIFO, a
    /// socket, a device).
    #[error("refusing to write {}: it exists and is not a regular file", .path.display())]
    NotRegularFile {
        /// The target path.
        path: PathBuf,
    },

    /// The folder the file would land in cannot be written (no permission, a read-only file
    /// system). `folder` is that folder with symbolic links resolved, so that a path leading
    /// through a link into a place the user cannot write names the place. Nothing is written.
    #[error(
        "cannot write {}: the folder it lands in, {}, is not writable ({source})",
        .path.display(),
        .folder.display()
    )]
    FolderNotWritable {
        /// The target path.
        path: PathBuf,
        /// The target's folder, symbolic links resolved.
        folder: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// An I/O step of the file sink failed. No temporary file is left behind, and the target is
    /// untouched.
    #[error("cannot write {}: {op} failed: {source}", .path.display())]
    Io {
        /// The target path.
        path: PathBuf,
        /// The step: "inspect", "create temporary file", "write", "sync", "set mode", "rename".
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },

    /// The target session of an inject sink is not registered.
    #[error("cannot inject into session {session:?}: it is not registered")]
    SessionNotFound {
        /// The target session ID.
        session: String,
    },

    /// The target session of an inject sink is registered but its wrapper is not connected (or
    /// its queue is full).
    #[error("cannot inject into session {session:?}: its wrapper is not connected")]
    SessionDisconnected {
        /// The target session ID.
        session: String,
    },

    /// The target session's program has not taken the input it was given: `queued` bytes still
    /// wait on their way to it. Nothing was injected; try again once it has read.
    #[error(
        "cannot inject into session {session:?}: its program has not taken the input it was \
         given ({queued} bytes wait on their way to it)"
    )]
    InputBacklog {
        /// The target session ID.
        session: String,
        /// Bytes queued to the session's wrapper.
        queued: usize,
    },

    /// Any other failure of a sink (the clipboard sink of `clippy-desktop`, a broker-provided
    /// send function), with its cause.
    #[error("sink {sink:?} failed: {source}")]
    Other {
        /// The sink's name.
        sink: String,
        /// The cause.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}
