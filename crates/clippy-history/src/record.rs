//! What the broker writes: sessions, their ends, turns and events, borrowed from wherever the
//! broker keeps them (the bytes of a turn are not copied to be stored).

/// A session as it registered with the broker.
///
/// Recording a session again (a wrapper re-registering after a broker restart) updates what it
/// gives (name, command, cwd), keeps the earliest `started_at`, and clears a recorded end (the
/// session runs again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRecord<'a> {
    /// The broker-unique session key (the session id: `clippy-registry`'s `TurnId` session part).
    pub key: &'a str,
    /// The user-given name, if any.
    pub name: Option<&'a str>,
    /// The command line (argv), stored as a JSON array of strings.
    pub command: &'a [String],
    /// The working directory the command started in, when known.
    pub cwd: Option<&'a str>,
    /// When it registered, Unix milliseconds.
    pub started_at: u64,
}

/// How and when a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionEnd<'a> {
    /// The session key.
    pub key: &'a str,
    /// When it ended, Unix milliseconds.
    pub ended_at: u64,
    /// The code a shell shows for its command (its exit code, or 128 + N for signal N), when
    /// known.
    pub exit_code: Option<i32>,
    /// The signal that killed its command, when one did.
    pub signal: Option<i32>,
}

/// A completed turn: the fields of `clippy_registry::TurnRecord` / `clippy_proto::TurnData`.
///
/// Stored once: recording a turn whose id (or session and seq) is already stored changes
/// nothing — the first copy stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnRecord<'a> {
    /// The globally unique turn id, as the broker hands it out: `<session>:<seq>`.
    pub turn_id: &'a str,
    /// The session key.
    pub session: &'a str,
    /// The turn's sequence number within its session (1, 2, 3, …).
    pub seq: u64,
    /// When the turn started (its input was submitted), Unix milliseconds, when known.
    pub started_at: Option<u64>,
    /// When the turn completed, Unix milliseconds (`TurnMeta::timestamp`).
    pub ended_at: u64,
    /// The submitted line(s), when known.
    pub input: Option<&'a str>,
    /// The raw content, escapes included: stored and read back byte for byte.
    pub content: &'a [u8],
    /// The rendered text view: what full-text search indexes.
    pub text: &'a str,
    /// The agent's own final message, when its hooks gave one.
    pub message: Option<&'a str>,
    /// The user interrupted the turn (Ctrl+C while it ran).
    pub interrupted: bool,
    /// The content (or its text view) was cut at the size limit.
    pub truncated: bool,
    /// The command's exit code (OSC 133), when the stream carried one.
    pub exit_code: Option<i32>,
    /// The working directory (OSC 7), when the stream carried one.
    pub cwd: Option<&'a str>,
    /// The turn's `[start, end)` byte span in the session's spool, when known.
    pub spool_span: Option<(u64, u64)>,
}

/// An event of the broker's event stream, stored whole.
///
/// `payload` is kept verbatim (the broker stores its `clippy_proto::EventRecord` as JSON), so
/// the stream replays from the store exactly as it was sent. Stored once per `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRecord<'a> {
    /// The event's id: increasing from 1, and continuing across broker restarts (see
    /// [`Store::max_event_seq`](crate::Store::max_event_seq)).
    pub seq: u64,
    /// When, Unix milliseconds.
    pub time: u64,
    /// Its type: `session.registered`, `turn.completed`, `route.handoff`, ….
    pub kind: &'a str,
    /// The session it is about, if any: [`Store::forget_session`](crate::Store::forget_session)
    /// deletes the session's events with its turns.
    pub session: Option<&'a str>,
    /// The whole event (by convention JSON), returned as it was given.
    pub payload: &'a str,
}

/// One thing to write, for [`Store::apply`](crate::Store::apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A session registered.
    Session(SessionRecord<'a>),
    /// A session ended.
    SessionEnd(SessionEnd<'a>),
    /// A turn completed.
    Turn(TurnRecord<'a>),
    /// An event happened.
    Event(EventRecord<'a>),
}
