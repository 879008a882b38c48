//! Error reasons on the wire, and this crate's error type.

use serde::{Deserialize, Serialize};

/// Why the broker refused a request: the `reason` of an `error` message, as its exact wire string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorReason {
    /// No session has that id, unique id prefix or name.
    SessionNotFound,
    /// The session has no completed turn yet.
    NoTurn,
    /// Nothing was captured into the relay buffer yet.
    BufferEmpty,
    /// The session's wrapper is not connected (it cannot receive an injection).
    SessionDisconnected,
    /// A session with that id is already registered by another connection.
    DuplicateSession,
    /// The peer speaks another protocol version.
    VersionMismatch,
    /// The message `type` is not one the broker knows.
    UnknownType,
    /// The message or a field of it is too large.
    PayloadTooLarge,
    /// The turn was evicted from its ring, or never existed.
    TurnNotFound,
    /// A field the request needs is missing (or has the wrong type).
    MissingField,
    /// The session is busy.
    Busy,
    /// A wait ran out of time.
    Timeout,
    /// A pattern does not compile.
    InvalidPattern,
    /// A sink could not deliver (the message says why).
    SinkFailed,
    /// The first message on a connection was not `hello`, or a role sent what it may not.
    NotAllowed,
    /// A cursor lies past the end of the session's spool.
    InvalidCursor,
    /// The session's spool cannot be read (its wrapper has none, or the file is gone).
    SpoolUnavailable,
    /// The request is well-formed but an argument is refused (the message says which).
    InvalidArgument,
    /// No route has that id.
    RouteNotFound,
    /// No pending approval has that id.
    ApprovalNotFound,
    /// The turn has no final message from the agent's own hooks (`format: message` asked of a
    /// turn of an agent without hooks, or with them off): ask for another format.
    NoMessage,
    /// The broker keeps no history (its `[history] enabled` is false): `history`, `search`
    /// and `forget_history` have nothing to answer from.
    HistoryOff,
    /// The history store could not answer (the message says why: an unreadable or damaged
    /// store file).
    HistoryFailed,
    /// `answer`: the session waits for no answer (nothing asked, or the question was answered
    /// already, in its terminal or by another `answer`).
    NotWaiting,
    /// `answer`: the waiting id named is not the session's current wait (that one was answered
    /// and another one asked since).
    StaleAnswer,
    /// `answer`: clippy cannot answer this wait (a dialog it cannot read, or a decision the
    /// agent does not offer); the message says which keys a person would press.
    Unsupported,
}

impl ErrorReason {
    /// The wire string, e.g. `session_not_found`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SessionNotFound => "session_not_found",
            Self::NoTurn => "no_turn",
            Self::BufferEmpty => "buffer_empty",
            Self::SessionDisconnected => "session_disconnected",
            Self::DuplicateSession => "duplicate_session",
            Self::VersionMismatch => "version_mismatch",
            Self::UnknownType => "unknown_type",
            Self::PayloadTooLarge => "payload_too_large",
            Self::TurnNotFound => "turn_not_found",
            Self::MissingField => "missing_field",
            Self::Busy => "busy",
            Self::Timeout => "timeout",
            Self::InvalidPattern => "invalid_pattern",
            Self::SinkFailed => "sink_failed",
            Self::NotAllowed => "not_allowed",
            Self::InvalidCursor => "invalid_cursor",
            Self::SpoolUnavailable => "spool_unavailable",
            Self::InvalidArgument => "invalid_argument",
            Self::RouteNotFound => "route_not_found",
            Self::ApprovalNotFound => "approval_not_found",
            Self::NoMessage => "no_message",
            Self::HistoryOff => "history_off",
            Self::HistoryFailed => "history_failed",
            Self::NotWaiting => "not_waiting",
            Self::StaleAnswer => "stale_answer",
            Self::Unsupported => "unsupported",
        }
    }
}

impl std::fmt::Display for ErrorReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What can go wrong speaking the protocol.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// A frame announced more than [`MAX_FRAME`](crate::MAX_FRAME) bytes.
    #[error("frame of {len} bytes is larger than the {max}-byte limit")]
    FrameTooLarge {
        /// The announced length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The payload is not a MessagePack map with a string `type` and an integer `id`.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// A well-formed message of a type this side does not know.
    #[error("unknown message type {kind:?} (id {id})")]
    UnknownType {
        /// The message's `id`, to answer it.
        id: u32,
        /// Its `type`.
        kind: String,
    },
    /// A message of a known type lacks a field (or a field has the wrong type).
    #[error("{kind} message (id {id}) is missing a field or has a wrong one: {detail}")]
    MissingField {
        /// The message's `id`.
        id: u32,
        /// Its `type`.
        kind: String,
        /// The decoder's explanation.
        detail: String,
    },
    /// The message could not be encoded.
    #[error("cannot encode message: {0}")]
    Encode(String),
    /// The peer closed the connection in the middle of a frame.
    #[error("connection closed in the middle of a frame")]
    Truncated,
    /// The peer closed the connection.
    #[error("connection closed by the broker")]
    Closed,
    /// `XDG_RUNTIME_DIR` is not set to an absolute path.
    #[error(
        "XDG_RUNTIME_DIR is not set (or not absolute): clippy keeps its socket there and never falls back to /tmp"
    )]
    NoRuntimeDir,
    /// Connecting, reading or writing the socket failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// No broker answered at the socket, and none could be started there: `clippy-broker`
    /// could not be run, or the one started did not answer in time.
    #[error(
        "no broker answers at {} and {}: {detail}",
        socket.display(),
        if *started {
            "the clippy-broker started did not answer in time"
        } else {
            "clippy-broker could not be started"
        }
    )]
    NoBroker {
        /// The socket tried.
        socket: std::path::PathBuf,
        /// Whether a broker was started (and did not answer in time), rather than not run.
        started: bool,
        /// Why: the system's error running the program, or what the last connection attempt
        /// said.
        detail: String,
    },
    /// The broker answered with an error.
    #[error("{reason}: {message}")]
    Broker {
        /// The error reason.
        reason: ErrorReason,
        /// The broker's explanation.
        message: String,
        /// For a wait that timed out: where to resume.
        resume_cursor: Option<u64>,
    },
    /// The broker answered with a message this request does not expect.
    #[error("unexpected reply {0}")]
    Unexpected(String),
}
