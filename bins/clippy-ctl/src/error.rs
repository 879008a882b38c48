//! What can go wrong in `clippy-ctl`, sorted by what the caller can do about it: each variant
//! maps to one exit code ([`crate::exit`]).

use clippy_client::ClientError;

/// How to get a broker running, shown with every "unreachable" error.
pub use clippy_client::START_HINT;

/// A failure of a `clippy-ctl` command.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// The arguments are invalid (beyond what clap checks).
    #[error("{0}")]
    Usage(String),
    /// The configuration is invalid or unreadable.
    #[error("configuration: {0}")]
    Config(String),
    /// The broker: not reachable (no runtime folder, nothing at the socket, no answer in
    /// time), refused (its reason), or not understood. Never an [`ClientError::Argument`] (a
    /// [`CtlError::Usage`]) nor a follower that lagged ([`CtlError::Lagged`]).
    #[error(transparent)]
    Client(ClientError),
    /// A session's attach socket spoke something this side does not understand.
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
        matches!(self, Self::Client(err) if err.is_unreachable())
    }

    /// The broker's refusal: its reason, its sentence, and for a wait that timed out where to
    /// resume.
    pub fn refusal(&self) -> Option<(clippy_proto::ErrorReason, &str, Option<u64>)> {
        match self {
            Self::Client(ClientError::Broker {
                reason,
                message,
                resume_cursor,
            }) => Some((*reason, message, *resume_cursor)),
            _ => None,
        }
    }
}
