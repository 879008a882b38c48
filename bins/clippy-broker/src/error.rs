//! The broker's errors, each with the exit code it ends the process with.

use std::io;
use std::path::PathBuf;

/// Why the broker could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// `XDG_RUNTIME_DIR` is unset, empty or relative.
    #[error(
        "XDG_RUNTIME_DIR is not set (or not an absolute path): the broker keeps its socket there and never falls back to /tmp"
    )]
    NoRuntimeDir,
    /// `XDG_RUNTIME_DIR` does not name a directory.
    #[error("XDG_RUNTIME_DIR={} is not a directory", .0.display())]
    RuntimeDirMissing(PathBuf),
    /// A command-line value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Another broker answers on the socket (or holds the lock while it starts).
    #[error("already running{}", match .pid { Some(pid) => format!(" (pid {pid})"), None => String::new() })]
    AlreadyRunning {
        /// The other broker's pid, when the socket told it.
        pid: Option<i32>,
    },
    /// Something that is not a socket sits where the socket goes.
    #[error("{} exists and is not a socket; not touching it", .0.display())]
    NotASocket(PathBuf),
    /// A process accepts connections on the socket but does not answer `hello`.
    #[error("a process listens on {} but does not answer hello; not replacing it", .0.display())]
    NotAnswering(PathBuf),
    /// The runtime folder is not one the broker can trust.
    #[error("{}: {reason}", .path.display())]
    UnsafeDir {
        /// The folder.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The system's error.
        #[source]
        source: io::Error,
    },
}

impl BrokerError {
    /// The process exit code: 4 for configuration problems (no usable `XDG_RUNTIME_DIR`, bad
    /// values), 1 for everything else, "already running" included.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        match self {
            BrokerError::NoRuntimeDir
            | BrokerError::RuntimeDirMissing(_)
            | BrokerError::Config(_) => 4,
            _ => 1,
        }
    }

    /// An [`BrokerError::Io`] builder for `map_err`.
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(io::Error) -> BrokerError {
        let context = context.into();
        move |source| BrokerError::Io { context, source }
    }
}
