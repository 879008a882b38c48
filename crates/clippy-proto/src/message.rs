//! Every message of the protocol.
//!
//! One enum, tagged by `type` on the wire. Requests go from wrappers and clients to the broker;
//! each reply has a `type` of its own (`hello_ack`, `done`, `captured`, …, `error`), so a client
//! in any language reads `type` and `id` and knows what it got. Optional fields may be absent or
//! nil.

use serde::{Deserialize, Serialize};

use crate::error::ErrorReason;

/// The protocol version this crate speaks; `hello` carries it and the broker refuses others.
pub const PROTOCOL_VERSION: u32 = 1;

/// Who is connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A `clippy-session` wrapper: registers its session and reports its turns.
    Wrapper,
    /// Anything else: `clippy-ctl`, the hotkey client, an orchestrator.
    Client,
}

/// Which form of a turn to use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// The raw bytes, escapes included, byte-exact (the default).
    #[default]
    Raw,
    /// The text a person saw (the rendered view), UTF-8.
    Text,
}

/// What a wrapper tells the broker about its session in `register`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session id.
    pub session: String,
    /// The user-given name, if any.
    #[serde(default)]
    pub name: Option<String>,
    /// The child's pid.
    pub pid: u32,
    /// The child's command line.
    #[serde(default)]
    pub command: Vec<String>,
    /// The preset name (`custom` for a pattern).
    #[serde(default)]
    pub preset: String,
    /// Whether the child has bracketed paste enabled right now.
    #[serde(default)]
    pub bracketed_paste: bool,
}

/// A completed turn as a wrapper reports it in `turn_completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnData {
    /// The wrapper's sequence number for the turn: 1, 2, 3, … (the turn id is `<session>:<seq>`).
    pub seq: u64,
    /// When the turn completed, Unix milliseconds.
    pub timestamp: u64,
    /// Raw content (MessagePack `bin`).
    #[serde(with = "serde_bytes")]
    pub content: Vec<u8>,
    /// The rendered text view.
    #[serde(default)]
    pub text: String,
    /// Ctrl+C was pressed during the turn.
    #[serde(default)]
    pub interrupted: bool,
    /// The content was cut at the wrapper's limit.
    #[serde(default)]
    pub truncated: bool,
    /// Exit code (OSC 133), when known.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Working directory (OSC 7), when known.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The submitted line(s).
    #[serde(default)]
    pub input: Option<String>,
    /// `[start, end)` of the turn in the session's spool, when known.
    #[serde(default)]
    pub spool_span: Option<(u64, u64)>,
}

/// A turn's metadata, in listings and `turn` replies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMeta {
    /// `<session>:<seq>`.
    pub turn_id: String,
    /// Completion time, Unix milliseconds.
    pub timestamp: u64,
    /// Stored content length in bytes.
    pub byte_length: u32,
    /// Ctrl+C was pressed during the turn.
    pub interrupted: bool,
    /// The content was cut at the size limit.
    pub truncated: bool,
    /// Exit code, when known.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Working directory, when known.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The submitted line(s), when known.
    #[serde(default)]
    pub input: Option<String>,
    /// Spool span, when known.
    #[serde(default)]
    pub spool_span: Option<(u64, u64)>,
}

/// One session in a `sessions` reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The session id.
    pub session: String,
    /// Its name, if any.
    #[serde(default)]
    pub name: Option<String>,
    /// The child's pid.
    pub pid: u32,
    /// The child's command line.
    #[serde(default)]
    pub command: Vec<String>,
    /// The preset.
    #[serde(default)]
    pub preset: String,
    /// Whether its wrapper is connected now.
    pub connected: bool,
    /// Turns held in its ring.
    pub turns: u32,
    /// Its latest turn, if any.
    #[serde(default)]
    pub last_turn_id: Option<String>,
    /// Whether its child has bracketed paste enabled.
    #[serde(default)]
    pub bracketed_paste: bool,
}

/// A message on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    // ── Requests ─────────────────────────────────────────────────────────────────────────
    /// First message on every connection.
    Hello {
        /// Request id.
        id: u32,
        /// [`PROTOCOL_VERSION`].
        version: u32,
        /// Who connects.
        role: Role,
    },
    /// A wrapper registers its session (again, after a reconnect).
    Register {
        /// Request id.
        id: u32,
        /// The session.
        session: SessionInfo,
    },
    /// A wrapper says its session ended.
    Deregister {
        /// Request id.
        id: u32,
        /// The session id.
        session: String,
    },
    /// A wrapper reports a completed turn.
    TurnCompleted {
        /// Request id.
        id: u32,
        /// The session id.
        session: String,
        /// The turn.
        turn: TurnData,
    },
    /// A wrapper reports that its child turned bracketed paste on or off.
    BracketedPaste {
        /// Request id.
        id: u32,
        /// The session id.
        session: String,
        /// The new state.
        enabled: bool,
    },
    /// Copy a session's latest turn into the relay buffer.
    Capture {
        /// Request id.
        id: u32,
        /// Session id, unique id prefix, or name.
        session: String,
    },
    /// Copy a given turn into the relay buffer.
    CaptureById {
        /// Request id.
        id: u32,
        /// `<session>:<seq>`.
        turn_id: String,
    },
    /// Inject the relay buffer into a session (the `inject` sink).
    Paste {
        /// Request id.
        id: u32,
        /// Target session.
        session: String,
        /// Raw (default) or text.
        #[serde(default)]
        format: Format,
    },
    /// Deliver the relay buffer to a sink: `inject` (needs `session`), `file` (needs `path`),
    /// `clipboard`.
    Deliver {
        /// Request id.
        id: u32,
        /// Sink name.
        sink: String,
        /// Target session, for `inject`.
        #[serde(default)]
        session: Option<String>,
        /// Target file, for `file`.
        #[serde(default)]
        path: Option<String>,
        /// Raw (default) or text.
        #[serde(default)]
        format: Format,
    },
    /// List the registered sessions.
    ListSessions {
        /// Request id.
        id: u32,
    },
    /// Fetch one turn with its content.
    GetTurn {
        /// Request id.
        id: u32,
        /// `<session>:<seq>`, or a session (id, prefix or name) for its latest turn.
        turn_id: String,
        /// Raw (default) or text.
        #[serde(default)]
        format: Format,
    },
    /// List a session's turns, newest first, without content.
    ListTurns {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// At most this many.
        #[serde(default)]
        limit: Option<u32>,
    },

    // ── Replies ──────────────────────────────────────────────────────────────────────────
    /// Reply to `hello`.
    HelloAck {
        /// The request's id.
        id: u32,
        /// The broker's protocol version.
        version: u32,
    },
    /// Success without data (register, deregister, bracketed_paste, paste, deliver).
    Done {
        /// The request's id.
        id: u32,
    },
    /// Reply to `turn_completed`: the turn's id.
    TurnRecorded {
        /// The request's id.
        id: u32,
        /// `<session>:<seq>`.
        turn_id: String,
    },
    /// Reply to `capture` and `capture_by_id`.
    Captured {
        /// The request's id.
        id: u32,
        /// The captured turn.
        turn_id: String,
        /// Its length in bytes.
        byte_length: u32,
    },
    /// Reply to `list_sessions`.
    Sessions {
        /// The request's id.
        id: u32,
        /// The sessions.
        sessions: Vec<SessionSummary>,
    },
    /// Reply to `get_turn`.
    Turn {
        /// The request's id.
        id: u32,
        /// Metadata.
        turn: TurnMeta,
        /// Content in the requested format (MessagePack `bin`).
        #[serde(with = "serde_bytes")]
        content: Vec<u8>,
    },
    /// Reply to `list_turns`: newest first.
    Turns {
        /// The request's id.
        id: u32,
        /// Metadata only.
        turns: Vec<TurnMeta>,
    },
    /// A request failed.
    Error {
        /// The request's id (0 when it could not be read).
        id: u32,
        /// Why, as a fixed wire string.
        reason: ErrorReason,
        /// A sentence for humans.
        message: String,
    },

    // ── Broker to wrapper ────────────────────────────────────────────────────────────────
    /// Write these bytes into the session's PTY (id 0; not answered).
    Inject {
        /// Always 0.
        id: u32,
        /// The target session.
        session: String,
        /// The bytes, ready to write (bracketed-paste markers already added when needed).
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
}

impl Message {
    /// Every `type` string this crate knows.
    pub const TYPES: &'static [&'static str] = &[
        "hello",
        "register",
        "deregister",
        "turn_completed",
        "bracketed_paste",
        "capture",
        "capture_by_id",
        "paste",
        "deliver",
        "list_sessions",
        "get_turn",
        "list_turns",
        "hello_ack",
        "done",
        "turn_recorded",
        "captured",
        "sessions",
        "turn",
        "turns",
        "error",
        "inject",
    ];

    /// The message's `type` as on the wire (for logs and errors: the whole message may hold
    /// megabytes).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Hello { .. } => "hello",
            Self::Register { .. } => "register",
            Self::Deregister { .. } => "deregister",
            Self::TurnCompleted { .. } => "turn_completed",
            Self::BracketedPaste { .. } => "bracketed_paste",
            Self::Capture { .. } => "capture",
            Self::CaptureById { .. } => "capture_by_id",
            Self::Paste { .. } => "paste",
            Self::Deliver { .. } => "deliver",
            Self::ListSessions { .. } => "list_sessions",
            Self::GetTurn { .. } => "get_turn",
            Self::ListTurns { .. } => "list_turns",
            Self::HelloAck { .. } => "hello_ack",
            Self::Done { .. } => "done",
            Self::TurnRecorded { .. } => "turn_recorded",
            Self::Captured { .. } => "captured",
            Self::Sessions { .. } => "sessions",
            Self::Turn { .. } => "turn",
            Self::Turns { .. } => "turns",
            Self::Error { .. } => "error",
            Self::Inject { .. } => "inject",
        }
    }

    /// The message's `id`.
    pub fn id(&self) -> u32 {
        match self {
            Self::Hello { id, .. }
            | Self::Register { id, .. }
            | Self::Deregister { id, .. }
            | Self::TurnCompleted { id, .. }
            | Self::BracketedPaste { id, .. }
            | Self::Capture { id, .. }
            | Self::CaptureById { id, .. }
            | Self::Paste { id, .. }
            | Self::Deliver { id, .. }
            | Self::ListSessions { id }
            | Self::GetTurn { id, .. }
            | Self::ListTurns { id, .. }
            | Self::HelloAck { id, .. }
            | Self::Done { id }
            | Self::TurnRecorded { id, .. }
            | Self::Captured { id, .. }
            | Self::Sessions { id, .. }
            | Self::Turn { id, .. }
            | Self::Turns { id, .. }
            | Self::Error { id, .. }
            | Self::Inject { id, .. } => *id,
        }
    }

    /// An `error` reply to request `id`.
    pub fn error(id: u32, reason: ErrorReason, message: impl Into<String>) -> Self {
        Self::Error {
            id,
            reason,
            message: message.into(),
        }
    }
}
