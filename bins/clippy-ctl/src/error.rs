//! What can go wrong in `clippy-ctl`, sorted by what the caller can do about it: each variant
//! maps to one exit code ([`crate::exit`]).

use std::path::PathBuf;

use clippy_proto::ErrorReason;

/// How to get a broker running, shown with every "unreachable" error.
pub const START_HINT: &str =
    "start one with `clippy-broker --foreground`, or run a `clippy-session` (it starts one)";

/// A failure of a `clippy-ctl` command.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// The arguments are invalid (beyond what clap checks).
    #[error("{0}")]
    Usage(String),
    /// The configuration is invalid or unreadable.
    #[error("configuration: {0}")]
    Config(String),
    /// `XDG_RUNTIME_DIR` is not set (or not absolute) and no `--socket` was given.
    #[error(
        "XDG_RUNTIME_DIR is not set (or not absolute), so there is no broker socket to find (or pass --socket)"
    )]
    NoRuntimeDir,
    /// Nothing answers at the socket: missing, refused, or the connection broke.
    #[error("the broker is not reachable at {}: {detail}", socket.display())]
    Unreachable {
        /// The socket tried.
        socket: PathBuf,
        /// What the system said.
        detail: String,
    },
    /// The broker accepted the connection but did not answer in time.
    #[error("the broker at {} did not answer within {timeout_ms} ms", socket.display())]
    NoAnswer {
        /// The socket tried.
        socket: PathBuf,
        /// The `--timeout` that ran out.
        timeout_ms: u64,
    },
    /// The broker refused the request.
    #[error("{reason}: {message}")]
    Broker {
        /// Its reason.
        reason: ErrorReason,
        /// Its explanation.
        message: String,
        /// For a wait that timed out: where to resume.
        resume_cursor: Option<u64>,
    },
    /// The broker's reply could not be understood: malformed, unexpected, wrong version.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The desktop side failed: no focused session, several, no display, a grab refused.
    /// `reason` is a stable word for scripts (see `CONTRACTS/RESOLVER.md`).
    #[error("{message}")]
    Desktop {
        /// `no_focused_session`, `ambiguous_session`, `desktop_unavailable`, `grab_failed`,
        /// `desktop_error`.
        reason: &'static str,
        /// What happened.
        message: String,
    },
    /// `events --follow` read too slowly: the broker dropped it after a `subscriber.lagged`
    /// event.
    #[error(
        "the broker dropped this follower for not reading its events fast enough (subscriber.lagged); run events --follow again, with --since to catch up"
    )]
    Lagged,
    /// A session could not be started (`spawn`), or a terminal not attached to one (`attach`).
    #[error("{0}")]
    Session(String),
    /// Local I/O failed (writing the output, finding the current directory).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

impl CtlError {
    /// Whether the message should be followed by [`START_HINT`].
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            Self::NoRuntimeDir | Self::Unreachable { .. } | Self::NoAnswer { .. }
        )
    }
}
