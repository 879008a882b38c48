//! Every message of the protocol.
//!
//! One enum, tagged by `type` on the wire. Requests go from wrappers and clients to the broker;
//! each reply has a `type` of its own (`hello_ack`, `done`, `captured`, …, `error`), so a client
//! in any language reads `type` and `id` and knows what it got. Optional fields may be absent or
//! nil.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::ErrorReason;
use crate::payload::Payload;

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
    /// The agent's own final message, as its hooks reported it: the markdown the model wrote,
    /// with no wrapping or decoration (CONTRACTS/HOOKS.md). A turn without one has none.
    Message,
}

impl Format {
    /// The wire string: `raw`, `text` or `message`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Raw => "raw",
            Self::Text => "text",
            Self::Message => "message",
        }
    }
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
    /// The absolute path of the session's spool file, when it has one: the broker serves `read`
    /// and the waits from it.
    #[serde(default)]
    pub spool: Option<String>,
    /// The working directory the command started in, when the wrapper knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The session's turns must never reach the disk (`clippy-session --no-history`): the
    /// broker keeps them in memory only and stores nothing of the session in its history.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_history: bool,
}

/// Where a session is, as its wrapper's turn detector sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// No prompt seen yet.
    #[default]
    Starting,
    /// At a prompt, waiting for input: safe to `exec`.
    Idle,
    /// A turn is running.
    Busy,
    /// The session has ended (`session_status` of an ended session; a wrapper never reports
    /// it).
    Exited,
}

/// What a wrapper reports in `progress`: how far its spool is written and where its session is.
/// Sent whenever the spool grows or the mode changes (coalesced under load), and again after
/// every (re)registration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// Bytes in the spool file, all readable.
    pub spool_size: u64,
    /// The session's mode.
    pub mode: Mode,
    /// How many prompts the session has shown (counts up by one per prompt, never down).
    pub prompts: u64,
    /// How many lines have been submitted to the session (typed or injected, then Enter).
    pub inputs: u64,
    /// How many lines had been submitted when the latest prompt appeared: a prompt that ends a
    /// given submission has `prompt_inputs` at least that submission's number.
    pub prompt_inputs: u64,
    /// Spool offset where the latest prompt begins, once there was one.
    #[serde(default)]
    pub prompt_cursor: Option<u64>,
    /// Exit code of the last command, when the shell reported it (OSC 133).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Working directory, when the shell reported it (OSC 7).
    #[serde(default)]
    pub cwd: Option<String>,
    /// When the latest prompt appeared: Unix time in milliseconds, by the wrapper's clock.
    #[serde(default)]
    pub prompt_timestamp: Option<u64>,
    /// The latest prompt's line as the wrapper's screen showed it, for agents that keep their
    /// input line on screen and redraw it in place (a TUI's output after the prompt's offset
    /// need not hold it): `wait_prompt`'s `match_text`. None for shells and REPLs, whose
    /// prompt line is read from the spool.
    #[serde(default)]
    pub prompt_text: Option<String>,
    /// How many turns the session has completed (the latest turn's seq): the broker has every
    /// turn up to here once it has recorded this seq.
    #[serde(default)]
    pub turns: u64,
    /// In `register` only (0 in `progress`): the latest turn seq this wrapper wrote to a broker
    /// before this connection, 0 for none. Re-sent after a reconnection, those turns were
    /// announced already: the broker stores and serves them, emits `turn.replayed` for them
    /// instead of `turn.completed`, and hands none of them off on a route again.
    #[serde(default)]
    pub announced_turns: u64,
    /// How many times a person typed into the session (not counting what the broker injected):
    /// routes count their hops from the last human input.
    #[serde(default)]
    pub keystrokes: u64,
    /// The line submitted since the latest prompt, if any (the running turn's, while busy).
    #[serde(default)]
    pub input: Option<String>,
    /// The program has not taken the input it was given: over [`INPUT_BACKLOG_LIMIT`] bytes
    /// (typed or injected) wait in the wrapper. The broker injects nothing more until it has.
    #[serde(default)]
    pub input_blocked: bool,
    /// The program has written output, and its preset has recognised no prompt in it (no
    /// prompt line, status title, OSC 133 mark or hook): turns, if any, end only when its
    /// screen goes still. `status` then says how to name its prompt.
    #[serde(default)]
    pub prompt_unrecognised: bool,
    /// The agent waits for the user (a permission request, a question), as its hooks said;
    /// cleared by the next key, input or turn end.
    #[serde(default)]
    pub waiting: Option<WaitingState>,
    /// The latest wait that was answered, and how: by `answer` (the client named) or at the
    /// session's terminal. The broker emits `session.answered` when it changes.
    #[serde(default)]
    pub answered: Option<AnswerRecord>,
    /// What the agent's hooks have reported, and how often they and the screen disagreed.
    #[serde(default)]
    pub hooks: HookStats,
    /// Terminals attached to the session now (`clippy-ctl attach`, read-only ones included).
    /// The broker emits `session.attached` when it changes.
    #[serde(default)]
    pub attached: u32,
    /// When the running turn began, while `mode` is `busy`: Unix milliseconds by the
    /// wrapper's clock (the moment its tap first saw the session busy), so that a busy
    /// session's elapsed time survives a broker restart. `None` otherwise.
    #[serde(default)]
    pub busy_since: Option<u64>,
    /// Turns the wrapper let go before the broker acknowledged them (past its bound of turns
    /// kept unacknowledged, while the history store was far behind): they may be missing from
    /// the store. Counts up, never down; absent (0) for a wrapper that never let one go.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unkept_turns: u64,
}

/// Whether a count is 0 (left out of the map then, so older peers read the same maps).
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How a permission request is answered (`answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Let the tool run this once.
    Allow,
    /// Refuse it.
    Deny,
    /// Let it run and stop asking for it (what "always" covers is the agent's own choice:
    /// CONTRACTS/HOOKS.md).
    Always,
}

impl Decision {
    /// The wire string: `allow`, `deny` or `always`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Always => "always",
        }
    }
}

/// A wait that was answered (`progress`'s `answered`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRecord {
    /// The wait's id ([`WaitingState::id`]).
    pub waiting_id: u64,
    /// The decision, when it is known (a key pressed at the terminal that clippy cannot match
    /// to one of the dialog's options leaves it unknown).
    #[serde(default)]
    pub decision: Option<Decision>,
    /// Who answered: `terminal`, or the client that sent `answer`.
    pub by: String,
}

/// An agent waiting for the user, as its hooks reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingState {
    /// The wait's number in its session: counts up from 1 with each new wait the wrapper sets
    /// and names it in `answer` (a wait reported again by the agent keeps its number).
    #[serde(default)]
    pub id: u64,
    /// `permission` (a tool needs approval) or `question` (the agent asks the user).
    pub kind: String,
    /// The tool asking, when the agent named it.
    #[serde(default)]
    pub tool: Option<String>,
    /// The tool's input as compact JSON, when the agent gave it.
    #[serde(default)]
    pub input: Option<String>,
    /// The agent's own sentence about it, when it gave one.
    #[serde(default)]
    pub message: Option<String>,
    /// Since when, Unix milliseconds by the wrapper's clock.
    #[serde(default)]
    pub since: u64,
}

/// A session's hook counters: how much the agent said through its hooks, and how often its
/// word and the screen disagreed (a changed agent release shows up here as a number).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookStats {
    /// Whether the wrapper wired the agent's hooks for this run.
    #[serde(default)]
    pub wired: bool,
    /// Reports received from the agent's hooks.
    #[serde(default)]
    pub reports: u64,
    /// Turns ended by the agent's own word.
    #[serde(default)]
    pub turn_ends: u64,
    /// Reports that could not be read (malformed payloads, unknown agents).
    #[serde(default)]
    pub rejected: u64,
    /// Times the hooks and the screen disagreed (the hook said done while the screen showed the
    /// agent busy, or the screen showed it idle and no hook came).
    #[serde(default)]
    pub disagreements: u64,
    /// The latest disagreement, in a sentence.
    #[serde(default)]
    pub last_disagreement: Option<String>,
}

/// Bytes of input waiting for a session's program to take them past which the session reports
/// [`Progress::input_blocked`].
pub const INPUT_BACKLOG_LIMIT: usize = 1024 * 1024;

/// How `wait_for` reads its pattern.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    /// The exact text (the default).
    #[default]
    Literal,
    /// A regular expression (Rust `regex` syntax, multi-line mode).
    Regex,
    /// No pattern: the next prompt, as `wait_prompt` (the `pattern` field is ignored).
    Prompt,
}

/// A session's state, in `session_status` replies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The session id.
    pub session: String,
    /// Its name, if any.
    #[serde(default)]
    pub name: Option<String>,
    /// The child's pid.
    pub pid: u32,
    /// Whether its wrapper is connected.
    pub connected: bool,
    /// `idle`, `busy` (a turn or an `exec` is running) or `starting`.
    pub mode: Mode,
    /// Whether an `exec` is in flight.
    pub exec_running: bool,
    /// The spool's size: where a wait for what comes next starts.
    pub resume_cursor: u64,
    /// Where the latest prompt begins in the spool.
    #[serde(default)]
    pub prompt_cursor: Option<u64>,
    /// The running turn's submitted line, while busy.
    #[serde(default)]
    pub current_input: Option<String>,
    /// The latest completed turn held.
    #[serde(default)]
    pub last_turn_id: Option<String>,
    /// The last exit code the shell reported.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The working directory the shell reported.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Whether the child has bracketed paste enabled.
    pub bracketed_paste: bool,
    /// Waits parked on this session now.
    pub waiters: u32,
    /// Handoffs waiting in its inbox (approvals pending for it included).
    #[serde(default)]
    pub inbox: u32,
    /// The spool file, when there is one.
    #[serde(default)]
    pub spool: Option<String>,
    /// The agent waits for the user, as its hooks said.
    #[serde(default)]
    pub waiting: Option<WaitingState>,
    /// The session's hook counters.
    #[serde(default)]
    pub hooks: HookStats,
    /// The program has not taken more than [`INPUT_BACKLOG_LIMIT`] bytes of the input it was
    /// given: `paste`, `send`, `exec` and handoffs into it answer `busy` or wait until it does.
    #[serde(default)]
    pub input_blocked: bool,
    /// The session has written output and its preset has recognised no prompt in it
    /// ([`Progress::prompt_unrecognised`]).
    #[serde(default)]
    pub prompt_unrecognised: bool,
    /// How and when the session ended, for an ended session (`mode` is then
    /// [`Mode::Exited`]); `None` while it lives.
    #[serde(default)]
    pub exited: Option<SessionExit>,
    /// Terminals attached to the session now ([`Progress::attached`]).
    #[serde(default)]
    pub attached: u32,
    /// When the running turn began, while its wrapper reports it busy: Unix milliseconds by
    /// the wrapper's clock ([`Progress::busy_since`]); `None` otherwise (an `exec` the wrapper
    /// has not seen start yet included).
    #[serde(default)]
    pub busy_since: Option<u64>,
}

/// How a session ended, as its wrapper told the broker in `deregister`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionExit {
    /// The code a shell shows for the session's command: its exit code, or 128 + N when signal
    /// N killed it; `None` when the broker was not told (its wrapper went away without
    /// saying, or is older than this field).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// The signal that killed the command, when one did.
    #[serde(default)]
    pub signal: Option<i32>,
    /// When the broker saw the session end, Unix milliseconds.
    pub ended_at: u64,
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
    /// The agent's own final message, when its hooks gave one.
    #[serde(default)]
    pub message: Option<String>,
}

/// A turn's metadata, in listings and `turn` replies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Bytes of the agent's own final message, when its hooks gave one.
    #[serde(default)]
    pub message_length: Option<u32>,
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
    /// What the agent waits for (`permission`, `question`), when its hooks said it waits.
    #[serde(default)]
    pub waiting: Option<String>,
    /// That wait's id, to name in `answer`.
    #[serde(default)]
    pub waiting_id: Option<u64>,
    /// Terminals attached to it now ([`Progress::attached`]).
    #[serde(default)]
    pub attached: u32,
}

impl SessionSummary {
    /// The summaries of a `sessions` reply as values of their own. Each summary decoded from
    /// the wire is already its reply's alone, so this copies nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use clippy_proto::SessionSummary;
    ///
    /// let shared = vec![Arc::new(SessionSummary {
    ///     session: "abc".into(),
    ///     name: None,
    ///     pid: 7,
    ///     command: vec!["bash".into()],
    ///     preset: "shell".into(),
    ///     connected: true,
    ///     turns: 0,
    ///     last_turn_id: None,
    ///     bracketed_paste: false,
    ///     waiting: None,
    ///     waiting_id: None,
    ///     attached: 0,
    /// })];
    /// assert_eq!(SessionSummary::unshare(shared)[0].session, "abc");
    /// ```
    #[must_use]
    pub fn unshare(sessions: Vec<Arc<SessionSummary>>) -> Vec<SessionSummary> {
        sessions.into_iter().map(Arc::unwrap_or_clone).collect()
    }
}

/// What a route's handoffs are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteKind {
    /// The turn is handed over for the target to act on (default template `{turn}`).
    #[default]
    Handoff,
    /// The turn is reported to the target (default template names where it comes from).
    Report,
}

/// A route to add: every completed turn of `from` is handed to `to`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteSpec {
    /// The source session (id, prefix or name).
    pub from: String,
    /// The target session (id, prefix or name).
    pub to: String,
    /// Handoff or report.
    #[serde(default)]
    pub kind: RouteKind,
    /// The text handed over, with `{turn}`, `{session}`, `{name}`, `{turn_id}`, `{input}`
    /// replaced; `None`: the kind's default.
    #[serde(default)]
    pub template: Option<String>,
    /// Which view of the turn `{turn}` is (default text).
    #[serde(default)]
    pub format: Option<Format>,
    /// Interrupt a busy target (Ctrl+C, wait for its prompt) instead of queueing.
    #[serde(default)]
    pub interrupt: bool,
    /// Handoffs allowed since the last human input into either session (default 16).
    #[serde(default)]
    pub max_hops: Option<u32>,
    /// Park each handoff until it is approved.
    #[serde(default)]
    pub gated: bool,
    /// Press Enter after the text (default true).
    #[serde(default)]
    pub submit: Option<bool>,
}

/// A route, as the broker reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteInfo {
    /// Its id, `r1`, `r2`, ….
    pub route: String,
    /// The source session id.
    pub from: String,
    /// The target session id.
    pub to: String,
    /// Handoff or report.
    pub kind: RouteKind,
    /// The template in force.
    pub template: String,
    /// The view of the turn used.
    pub format: Format,
    /// Whether it interrupts a busy target.
    pub interrupt: bool,
    /// The hop limit.
    pub max_hops: u32,
    /// Whether handoffs wait for approval.
    pub gated: bool,
    /// Whether Enter follows the text.
    pub submit: bool,
    /// Whether it is paused (by `route pause`, or by loop safety).
    pub paused: bool,
    /// Why it is paused, when it is.
    #[serde(default)]
    pub paused_reason: Option<String>,
    /// Handoffs since the last human input into either session.
    pub hops: u32,
    /// Handoffs made in all.
    pub handoffs: u64,
}

/// A handoff waiting for its target, in `inbox` replies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxItem {
    /// The handoff's id, `h1`, `h2`, ….
    pub handoff: String,
    /// The route it came by.
    pub route: String,
    /// The turn handed over.
    pub turn_id: String,
    /// Bytes of text to inject.
    pub byte_length: u32,
    /// `queued` (waiting for the target's prompt) or `awaiting_approval` (id in `approval`).
    pub state: String,
    /// The approval to resolve, for a gated route.
    #[serde(default)]
    pub approval: Option<String>,
    /// When it was made, Unix ms.
    pub created: u64,
    /// The text it hands over, for a handoff awaiting approval whose text is at most
    /// [`INBOX_TEXT_LIMIT`] bytes (what `approve` with an edited text starts from); `None`
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The longest handoff text an `inbox` reply carries ([`InboxItem::text`]): 256 of them stay
/// well inside a frame.
pub const INBOX_TEXT_LIMIT: usize = 16 * 1024;

/// One event of the broker's event stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Increasing from 1, and across broker restarts when the broker keeps history.
    pub id: u64,
    /// When, ISO-8601 UTC with milliseconds.
    pub ts: String,
    /// `session.registered`, `turn.completed`, `route.handoff`, … (CONTRACTS/ROUTING.md).
    #[serde(rename = "type")]
    pub kind: String,
    /// The session it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// That session's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The turn it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The route it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// The target session, for handoffs and deliveries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The handoff it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
    /// The approval it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// Bytes concerned (a turn's, a handoff's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byte_length: Option<u32>,
    /// Why (`hop_limit`, `repeated`, `approved`, `denied`, a sink's name, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The hop count, for route events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<u32>,
    /// Content hashes (hex), as evidence of a stall.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<String>,
    /// Turn ids, as evidence of a stall.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_ids: Vec<String>,
    /// A sentence for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The tool a waiting agent asks to use (`session.waiting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// That tool's input as compact JSON (`session.waiting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The wait it is about (`session.waiting`, `session.answered`, `session.resumed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_id: Option<u64>,
    /// How the wait was answered (`session.answered`): `allow`, `deny`, `always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Who answered (`session.answered`): `terminal` or the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// For `events.missed` (id 0, not itself an event of the stream): how many events after
    /// the `since` asked for are no longer kept in the broker's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed: Option<u64>,
    /// For `session.exited`: the code a shell shows for the session's command (its exit code,
    /// or 128 + N for signal N), when its wrapper said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// For `session.exited`: the signal that killed the session's command, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// For `session.attached`: how many terminals are attached to the session now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached: Option<u32>,
    /// For `session.mode` with `reason` `busy`: when the turn began, Unix milliseconds by the
    /// wrapper's clock ([`Progress::busy_since`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
}

/// The most history lines a `screen` request may ask for; more is taken as this many.
pub const MAX_SCREEN_HISTORY: u32 = 100_000;

/// The most text a screen snapshot carries (the lines plus their framing), half a frame: a
/// wrapper cuts the oldest lines of a larger one ([`ScreenData::fit`]).
pub const MAX_SCREEN_BYTES: usize = crate::codec::MAX_FRAME / 2;

/// How long a wait (`wait_for`, `wait_prompt`, `expect_send`, `exec`) may take, in
/// milliseconds, when its request gives no `timeout_ms`: the broker's default, and the one its
/// clients (`clippy-mcp`, the client layer) assume.
pub const DEFAULT_WAIT_MS: u64 = 30_000;
/// How long `end_session` waits for the prompt after its Ctrl+C, in milliseconds, when its
/// request gives no `timeout_ms`.
pub const DEFAULT_END_WAIT_MS: u64 = 5_000;
/// How long the broker lets a session's wrapper take to answer a `screen` request, in
/// milliseconds, when the request gives no `timeout_ms`.
pub const DEFAULT_SCREEN_WAIT_MS: u64 = 5_000;
/// How long the broker lets a session's wrapper take to report on an `answer`, in
/// milliseconds: the wrapper gives a dialog announced by the agent's hooks a moment to be drawn
/// before it refuses, so this is well over that.
pub const DEFAULT_ANSWER_WAIT_MS: u64 = 10_000;

/// A session's screen as its wrapper's terminal emulator shows it: what `screen_report`
/// carries from the wrapper (the broker passes it on as `screen_snapshot`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenData {
    /// History lines (logical lines, oldest first), then one per visible row; trailing spaces
    /// removed.
    pub lines: Vec<String>,
    /// How many of `lines` are history.
    pub history: u32,
    /// The screen's width in columns.
    pub cols: u16,
    /// The screen's height in rows.
    pub rows: u16,
    /// The cursor's row on the screen (0-based).
    pub cursor_row: u16,
    /// The cursor's column (0-based).
    pub cursor_col: u16,
    /// Whether the alternate screen (a full-screen program) is shown.
    pub alternate: bool,
}

/// Bytes a line costs in a frame beyond its text, at most (a MessagePack str header).
const LINE_OVERHEAD: usize = 5;

impl ScreenData {
    /// Cuts the oldest lines (history first; visible rows from the top only if the rows alone
    /// are too large) until the lines and their framing take at most `max_bytes`. Returns how
    /// many lines were cut; `history` counts what is left of the history.
    pub fn fit(&mut self, max_bytes: usize) -> usize {
        let mut size: usize = self.lines.iter().map(|l| l.len() + LINE_OVERHEAD).sum();
        let mut cut = 0;
        while size > max_bytes && cut < self.lines.len() {
            size -= self.lines[cut].len() + LINE_OVERHEAD;
            cut += 1;
        }
        if cut > 0 {
            self.lines.drain(..cut);
            let cut_history = u32::try_from(cut).unwrap_or(u32::MAX).min(self.history);
            self.history -= cut_history;
        }
        cut
    }
}

/// One stored turn, in `history` and `search` replies: a turn of a live or an ended session,
/// from the broker's history store (CONTRACTS/HISTORY.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// `<session>:<seq>`: `get_turn` reads it, whether or not a ring still holds it.
    pub turn_id: String,
    /// The session id.
    pub session: String,
    /// The session's name, if it had one.
    #[serde(default)]
    pub name: Option<String>,
    /// The session's command line.
    #[serde(default)]
    pub command: Vec<String>,
    /// The working directory: the turn's (OSC 7) when the shell reported it, else the
    /// session's when it started.
    #[serde(default)]
    pub cwd: Option<String>,
    /// When the turn completed, Unix milliseconds.
    pub timestamp: u64,
    /// Content bytes stored.
    pub byte_length: u32,
    /// The submitted line(s), when known.
    #[serde(default)]
    pub input: Option<String>,
    /// The exit code the shell reported, when it did.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Whether the session still runs (registered with the broker now).
    #[serde(default)]
    pub live: bool,
}

/// One turn found by `search`: the entry and where the words are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The turn.
    pub entry: HistoryEntry,
    /// A piece of its text view around the words found, each found word between `[` and `]`.
    pub snippet: String,
}

/// The history store's state, in `history_status` replies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryInfo {
    /// Whether the broker keeps history (`[history] enabled`).
    pub enabled: bool,
    /// The store's folder.
    #[serde(default)]
    pub path: Option<String>,
    /// Turns stored.
    #[serde(default)]
    pub turns: u64,
    /// Events stored.
    #[serde(default)]
    pub events: u64,
    /// The store's size on disk, in bytes.
    #[serde(default)]
    pub bytes: u64,
    /// Why the store cannot be written now (a read-only folder, a full disk), when it cannot:
    /// live operation goes on, and what could not be stored is not.
    #[serde(default)]
    pub problem: Option<String>,
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
        /// The session's progress so far, when it has any: a session registered again after a
        /// reconnection is at once as far as its spool, so cursors into it stay valid.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        progress: Option<Progress>,
        /// The wrapper keeps every turn until its `turn_recorded` comes and sends turns again
        /// when asked (`resend_turns`): the broker may then hold acknowledgements while its
        /// history store is behind, instead of leaving turns out of it. Default false (an
        /// older wrapper).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        resends: bool,
    },
    /// A wrapper says its session ended, and how its command ended when it knows.
    Deregister {
        /// Request id.
        id: u32,
        /// The session id.
        session: String,
        /// The code a shell shows for the command: its exit code, or 128 + N for signal N.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// The signal number that killed the command, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
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

    /// A wrapper reports its spool size and mode.
    Progress {
        /// Request id.
        id: u32,
        /// The session id.
        session: String,
        /// Where it is.
        progress: Progress,
    },
    /// Read a session's spool from a cursor.
    Read {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// Where to start (default 0).
        #[serde(default)]
        from_cursor: u64,
        /// At most this many bytes (default and ceiling: 1 MiB).
        #[serde(default)]
        max_bytes: Option<u32>,
    },
    /// Wait until a pattern appears in a session's spool at or after a cursor.
    WaitFor {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// The literal text or regex.
        #[serde(default)]
        pattern: String,
        /// How to read `pattern`.
        #[serde(default)]
        kind: PatternKind,
        /// Where to start looking (default 0).
        #[serde(default)]
        from_cursor: u64,
        /// How long to wait, in milliseconds (default 30000; 0: look once).
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// Wait until the session shows a prompt that begins at or after a cursor and is idle.
    WaitPrompt {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// The prompt must begin at or after this cursor (default 0).
        #[serde(default)]
        from_cursor: u64,
        /// How long to wait, in milliseconds (default 30000).
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// Write bytes into a session's terminal, as typed.
    Send {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// The bytes (MessagePack `bin`; may be empty with `enter`).
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        /// Then press Enter, as a write of its own after the broker's submit delay (an agent
        /// that takes a fast burst of text and Enter for a paste still submits); the reply
        /// comes once the Enter is written.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        enter: bool,
    },
    /// `wait_for`, then `send` at once when it matches, with nothing written to the session in
    /// between.
    ExpectSend {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// The literal text or regex.
        pattern: String,
        /// How to read `pattern` (`prompt` too).
        #[serde(default)]
        kind: PatternKind,
        /// Where to start looking (default 0).
        #[serde(default)]
        from_cursor: u64,
        /// How long to wait, in milliseconds (default 30000).
        #[serde(default)]
        timeout_ms: Option<u64>,
        /// What to send on the match.
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    /// A session's mode, cursors and latest turn.
    SessionStatus {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
    },
    /// Run a command in an idle session and wait for the turn it starts.
    Exec {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// One line, typed followed by Enter.
        command: String,
        /// How long to wait for the prompt after it, in milliseconds (default 30000).
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// Interrupt what runs in a session (Ctrl+C) and wait for its prompt; with `force`, kill
    /// the child's process group if no prompt comes in time.
    EndSession {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// Kill when Ctrl+C is not enough.
        #[serde(default)]
        force: bool,
        /// How long to wait for the prompt after Ctrl+C, in milliseconds (default 5000).
        #[serde(default)]
        timeout_ms: Option<u64>,
    },

    /// The session's screen as text now, after up to `history` lines of its history (like
    /// `tmux capture-pane -p`). The broker asks the session's wrapper (`screen_request`) and
    /// answers with `screen_snapshot` when the wrapper reports it (`screen_report`).
    Screen {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// History lines wanted before the visible rows (default 0; at most
        /// [`MAX_SCREEN_HISTORY`]).
        #[serde(default)]
        history: u32,
        /// How long the wrapper may take to answer, in milliseconds (default 5000).
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// Answers the permission request the session waits on (CONTRACTS/BROKER.md, `answer`):
    /// the broker asks the session's wrapper (`answer_request`), which presses the dialog's own
    /// keys while its screen shows it, and replies `answered` when it has (or `error`:
    /// `not_waiting`, `stale_answer`, `unsupported`).
    Answer {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
        /// `allow`, `deny` or `always`.
        decision: Decision,
        /// Why, for a denial: typed into the agent's own field where its dialog offers one.
        #[serde(default)]
        reason: Option<String>,
        /// The wait answered (`waiting`'s `id`); absent: the session's current wait.
        #[serde(default)]
        waiting_id: Option<u64>,
        /// Who answers, for `session.answered` (default: `client N`, the connection).
        #[serde(default)]
        by: Option<String>,
    },
    /// A wrapper's answer to an `answer_request`: what it did.
    AnswerReport {
        /// Request id.
        id: u32,
        /// The wrapper's session.
        session: String,
        /// The `request` of the `answer_request` answered.
        request: u64,
        /// The wait answered (0 when refused before one was found).
        #[serde(default)]
        waiting_id: u64,
        /// Why it was not answered, when it was not.
        #[serde(default)]
        refused: Option<ErrorReason>,
        /// What was pressed, or why nothing was, in a sentence.
        #[serde(default)]
        message: String,
    },
    /// A wrapper answers a `screen_request` with its session's screen.
    ScreenReport {
        /// Request id.
        id: u32,
        /// The session id.
        session: String,
        /// The `request` of the `screen_request` answered.
        request: u64,
        /// The screen.
        screen: ScreenData,
    },

    /// Add a route.
    RouteAdd {
        /// Request id.
        id: u32,
        /// The route.
        route: RouteSpec,
    },
    /// List the routes.
    RouteList {
        /// Request id.
        id: u32,
    },
    /// Remove a route (its queued handoffs go with it).
    RouteRemove {
        /// Request id.
        id: u32,
        /// The route id.
        route: String,
    },
    /// Pause a route: its source's turns are not handed over until it is resumed.
    RoutePause {
        /// Request id.
        id: u32,
        /// The route id.
        route: String,
    },
    /// Resume a paused route (its hop count starts again from 0).
    RouteResume {
        /// Request id.
        id: u32,
        /// The route id.
        route: String,
    },
    /// The handoffs waiting for a session.
    Inbox {
        /// Request id.
        id: u32,
        /// Session id, prefix or name.
        session: String,
    },
    /// Approve a parked handoff, optionally with new text.
    Approve {
        /// Request id.
        id: u32,
        /// The approval id.
        approval: String,
        /// The text to hand over instead.
        #[serde(default)]
        text: Option<String>,
    },
    /// Deny a parked handoff.
    Deny {
        /// Request id.
        id: u32,
        /// The approval id.
        approval: String,
    },
    /// The events held in the broker's history, oldest first.
    ListEvents {
        /// Request id.
        id: u32,
        /// Only events after this id.
        #[serde(default)]
        since: Option<u64>,
        /// Only these types (all when empty).
        #[serde(default)]
        types: Vec<String>,
    },
    /// Receive events as they happen (after those of the history after `since`).
    Subscribe {
        /// Request id.
        id: u32,
        /// Replay the history after this id first.
        #[serde(default)]
        since: Option<u64>,
        /// Only these types (all when empty).
        #[serde(default)]
        types: Vec<String>,
    },

    /// Stored turns of live and ended sessions, newest first (the history store).
    History {
        /// Request id.
        id: u32,
        /// Only this session's (id, prefix or name; an ended session's too).
        #[serde(default)]
        session: Option<String>,
        /// Only turns completed at or after this Unix millisecond.
        #[serde(default)]
        since: Option<u64>,
        /// Only turns completed before this Unix millisecond.
        #[serde(default)]
        until: Option<u64>,
        /// At most this many (default 50).
        #[serde(default)]
        limit: Option<u32>,
    },
    /// Stored turns whose text has these words, best match first.
    Search {
        /// Request id.
        id: u32,
        /// The words (all must occur; a `"quoted phrase"` in order).
        query: String,
        /// Only this session's (id, prefix or name).
        #[serde(default)]
        session: Option<String>,
        /// Only turns completed at or after this Unix millisecond.
        #[serde(default)]
        since: Option<u64>,
        /// Only turns completed before this Unix millisecond.
        #[serde(default)]
        until: Option<u64>,
        /// At most this many (default 20).
        #[serde(default)]
        limit: Option<u32>,
    },
    /// Delete stored turns and events: one session's (`session`) or all (`all`).
    ForgetHistory {
        /// Request id.
        id: u32,
        /// The session (id, prefix or name).
        #[serde(default)]
        session: Option<String>,
        /// Everything.
        #[serde(default)]
        all: bool,
    },
    /// The history store's state.
    HistoryStatus {
        /// Request id.
        id: u32,
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
        /// The sessions. Shared: the broker hands the same summary to every reply until its
        /// session changes.
        sessions: Vec<Arc<SessionSummary>>,
    },
    /// Reply to `get_turn`.
    Turn {
        /// The request's id.
        id: u32,
        /// Metadata.
        turn: TurnMeta,
        /// Content in the requested format (MessagePack `bin`); the broker shares it with its
        /// ring rather than copying it ([`crate::encode_frame`]).
        content: Payload,
    },
    /// Reply to `list_turns`: newest first.
    Turns {
        /// The request's id.
        id: u32,
        /// Metadata only.
        turns: Vec<TurnMeta>,
    },
    /// Reply to `read`.
    SpoolData {
        /// The request's id.
        id: u32,
        /// The bytes (MessagePack `bin`).
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        /// Where they start: the request's `from_cursor`.
        cursor: u64,
        /// Where the next read starts: `cursor + len(data)`.
        resume_cursor: u64,
    },
    /// Reply to `wait_for`, `wait_prompt` and `expect_send`: what was found.
    Matched {
        /// The request's id.
        id: u32,
        /// Always true (a wait that finds nothing is an `error` with reason `timeout`).
        matched: bool,
        /// The matched text, ANSI-stripped (for a prompt: the prompt line).
        match_text: String,
        /// Where the match begins: `match_span.0`.
        match_cursor: u64,
        /// `[start, end)` of the match in spool offsets.
        match_span: (u64, u64),
        /// Where the next wait or read starts: `match_span.1`.
        resume_cursor: u64,
        /// For a prompt: the exit code the shell reported (OSC 133).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// For a prompt: the working directory the shell reported (OSC 7).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// For a prompt: when it appeared, Unix time in milliseconds (the wrapper's clock).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timestamp: Option<u64>,
        /// For a prompt: the session's latest turn, recorded by the time the reply is sent
        /// (the turn that ended at this prompt, when one did).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<String>,
    },
    /// Reply to `session_status`.
    Status {
        /// The request's id.
        id: u32,
        /// The session's state.
        status: SessionState,
    },
    /// Reply to `exec`.
    ExecResult {
        /// The request's id.
        id: u32,
        /// The turn the command produced (none when it printed nothing).
        turn_id: Option<String>,
        /// Its output, as text.
        output: String,
        /// Its exit code, when the shell reports it (`--shell-integration`); never guessed.
        exit_code: Option<i32>,
        /// The working directory afterwards, when the shell reports it.
        cwd: Option<String>,
        /// Where the prompt after the command begins in the spool.
        resume_cursor: u64,
    },
    /// Reply to `end_session`.
    SessionEnded {
        /// The request's id.
        id: u32,
        /// `idle` (nothing ran), `interrupted` (back at a prompt after Ctrl+C) or `killed`
        /// (the child's process group was killed: the session ends).
        outcome: String,
        /// The spool size when it was decided.
        resume_cursor: u64,
    },
    /// Reply to `route_add`, `route_pause`, `route_resume`.
    Route {
        /// The request's id.
        id: u32,
        /// The route.
        route: RouteInfo,
    },
    /// Reply to `route_list`.
    Routes {
        /// The request's id.
        id: u32,
        /// The routes, in order of their ids.
        routes: Vec<RouteInfo>,
    },
    /// Reply to `inbox`.
    InboxItems {
        /// The request's id.
        id: u32,
        /// The session id.
        session: String,
        /// Oldest first.
        items: Vec<InboxItem>,
    },
    /// Reply to `list_events`.
    Events {
        /// The request's id.
        id: u32,
        /// Oldest first.
        events: Vec<EventRecord>,
    },
    /// Reply to `subscribe`: events follow as `event` messages.
    Subscribed {
        /// The request's id.
        id: u32,
        /// The newest event's id now (0 when there was none).
        last_event_id: u64,
    },
    /// Reply to `answer`: the dialog's keys were pressed.
    Answered {
        /// The request's id.
        id: u32,
        /// The session id.
        session: String,
        /// The wait answered.
        waiting_id: u64,
        /// The decision given.
        decision: Decision,
        /// What was pressed, in a sentence (e.g. `pressed 1 (Yes)`).
        message: String,
    },
    /// Reply to `screen`: the session's screen, history lines first.
    ScreenSnapshot {
        /// The request's id.
        id: u32,
        /// The session id.
        session: String,
        /// History lines (oldest first), then one per visible row; trailing spaces removed.
        lines: Vec<String>,
        /// How many of `lines` are history (fewer than asked when the session has less, or
        /// when the oldest were cut to fit a frame).
        history: u32,
        /// The screen's width in columns.
        cols: u16,
        /// The screen's height in rows.
        rows: u16,
        /// The cursor's row on the screen (0-based).
        cursor_row: u16,
        /// The cursor's column (0-based).
        cursor_col: u16,
        /// Whether the alternate screen (a full-screen program) is shown.
        alternate: bool,
    },
    /// Reply to `history`: newest first.
    HistoryTurns {
        /// The request's id.
        id: u32,
        /// The turns.
        turns: Vec<HistoryEntry>,
    },
    /// Reply to `search`: best match first.
    SearchHits {
        /// The request's id.
        id: u32,
        /// The turns found.
        hits: Vec<SearchHit>,
    },
    /// Reply to `forget_history`.
    Forgotten {
        /// The request's id.
        id: u32,
        /// Turns deleted.
        turns: u64,
    },
    /// Reply to `history_status`.
    HistoryState {
        /// The request's id.
        id: u32,
        /// The store's state.
        history: HistoryInfo,
    },
    /// A request failed.
    Error {
        /// The request's id (0 when it could not be read).
        id: u32,
        /// Why, as a fixed wire string.
        reason: ErrorReason,
        /// A sentence for humans.
        message: String,
        /// For a wait that timed out: the spool size, where to resume.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume_cursor: Option<u64>,
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
    /// An event, to a subscriber (id 0).
    Event {
        /// Always 0.
        id: u32,
        /// The event.
        event: EventRecord,
    },
    /// Kill the child's process group (id 0; not answered): `end_session --force`.
    Terminate {
        /// Always 0.
        id: u32,
        /// The target session.
        session: String,
    },
    /// Answer the session's wait (id 0): the wrapper answers with `answer_report` carrying the
    /// same `request`.
    AnswerRequest {
        /// Always 0.
        id: u32,
        /// The target session.
        session: String,
        /// The broker's number for this request, echoed in the report.
        request: u64,
        /// The decision.
        decision: Decision,
        /// Why, for a denial.
        #[serde(default)]
        reason: Option<String>,
        /// The wait meant; absent: the current one.
        #[serde(default)]
        waiting_id: Option<u64>,
        /// Who answers.
        by: String,
    },
    /// Report the session's screen (id 0): the wrapper answers with `screen_report` carrying
    /// the same `request`.
    ScreenRequest {
        /// Always 0.
        id: u32,
        /// The target session.
        session: String,
        /// The broker's number for this request, echoed in the report.
        request: u64,
        /// History lines wanted before the visible rows.
        history: u32,
    },
    /// Send the turns numbered `from` to `to` (inclusive) again, those not acknowledged yet
    /// (id 0; not answered): the broker held their `turn_recorded` while its history store was
    /// behind, and has room for them now. Sent only to a wrapper that registered with
    /// `resends`.
    ResendTurns {
        /// Always 0.
        id: u32,
        /// The session.
        session: String,
        /// The first turn seq to send again.
        from: u64,
        /// The last turn seq to send again.
        to: u64,
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
        "progress",
        "read",
        "wait_for",
        "wait_prompt",
        "send",
        "expect_send",
        "session_status",
        "exec",
        "end_session",
        "screen",
        "screen_report",
        "answer",
        "answer_report",
        "route_add",
        "route_list",
        "route_remove",
        "route_pause",
        "route_resume",
        "inbox",
        "approve",
        "deny",
        "list_events",
        "subscribe",
        "history",
        "search",
        "forget_history",
        "history_status",
        "hello_ack",
        "done",
        "turn_recorded",
        "captured",
        "sessions",
        "turn",
        "turns",
        "spool_data",
        "matched",
        "status",
        "exec_result",
        "session_ended",
        "screen_snapshot",
        "answered",
        "route",
        "routes",
        "inbox_items",
        "events",
        "subscribed",
        "history_turns",
        "search_hits",
        "forgotten",
        "history_state",
        "error",
        "inject",
        "event",
        "terminate",
        "screen_request",
        "answer_request",
        "resend_turns",
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
            Self::Progress { .. } => "progress",
            Self::Read { .. } => "read",
            Self::WaitFor { .. } => "wait_for",
            Self::WaitPrompt { .. } => "wait_prompt",
            Self::Send { .. } => "send",
            Self::ExpectSend { .. } => "expect_send",
            Self::SessionStatus { .. } => "session_status",
            Self::Exec { .. } => "exec",
            Self::EndSession { .. } => "end_session",
            Self::Screen { .. } => "screen",
            Self::ScreenReport { .. } => "screen_report",
            Self::Answer { .. } => "answer",
            Self::AnswerReport { .. } => "answer_report",
            Self::RouteAdd { .. } => "route_add",
            Self::RouteList { .. } => "route_list",
            Self::RouteRemove { .. } => "route_remove",
            Self::RoutePause { .. } => "route_pause",
            Self::RouteResume { .. } => "route_resume",
            Self::Inbox { .. } => "inbox",
            Self::Approve { .. } => "approve",
            Self::Deny { .. } => "deny",
            Self::ListEvents { .. } => "list_events",
            Self::Subscribe { .. } => "subscribe",
            Self::History { .. } => "history",
            Self::Search { .. } => "search",
            Self::ForgetHistory { .. } => "forget_history",
            Self::HistoryStatus { .. } => "history_status",
            Self::HelloAck { .. } => "hello_ack",
            Self::Done { .. } => "done",
            Self::TurnRecorded { .. } => "turn_recorded",
            Self::Captured { .. } => "captured",
            Self::Sessions { .. } => "sessions",
            Self::Turn { .. } => "turn",
            Self::Turns { .. } => "turns",
            Self::SpoolData { .. } => "spool_data",
            Self::Matched { .. } => "matched",
            Self::Status { .. } => "status",
            Self::ExecResult { .. } => "exec_result",
            Self::SessionEnded { .. } => "session_ended",
            Self::ScreenSnapshot { .. } => "screen_snapshot",
            Self::Answered { .. } => "answered",
            Self::Route { .. } => "route",
            Self::Routes { .. } => "routes",
            Self::InboxItems { .. } => "inbox_items",
            Self::Events { .. } => "events",
            Self::Subscribed { .. } => "subscribed",
            Self::HistoryTurns { .. } => "history_turns",
            Self::SearchHits { .. } => "search_hits",
            Self::Forgotten { .. } => "forgotten",
            Self::HistoryState { .. } => "history_state",
            Self::Event { .. } => "event",
            Self::Error { .. } => "error",
            Self::Inject { .. } => "inject",
            Self::Terminate { .. } => "terminate",
            Self::ScreenRequest { .. } => "screen_request",
            Self::AnswerRequest { .. } => "answer_request",
            Self::ResendTurns { .. } => "resend_turns",
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
            | Self::Progress { id, .. }
            | Self::Read { id, .. }
            | Self::WaitFor { id, .. }
            | Self::WaitPrompt { id, .. }
            | Self::Send { id, .. }
            | Self::ExpectSend { id, .. }
            | Self::SessionStatus { id, .. }
            | Self::Exec { id, .. }
            | Self::EndSession { id, .. }
            | Self::Screen { id, .. }
            | Self::ScreenReport { id, .. }
            | Self::Answer { id, .. }
            | Self::AnswerReport { id, .. }
            | Self::RouteAdd { id, .. }
            | Self::RouteList { id }
            | Self::RouteRemove { id, .. }
            | Self::RoutePause { id, .. }
            | Self::RouteResume { id, .. }
            | Self::Inbox { id, .. }
            | Self::Approve { id, .. }
            | Self::Deny { id, .. }
            | Self::ListEvents { id, .. }
            | Self::Subscribe { id, .. }
            | Self::History { id, .. }
            | Self::Search { id, .. }
            | Self::ForgetHistory { id, .. }
            | Self::HistoryStatus { id }
            | Self::HelloAck { id, .. }
            | Self::Done { id }
            | Self::TurnRecorded { id, .. }
            | Self::Captured { id, .. }
            | Self::Sessions { id, .. }
            | Self::Turn { id, .. }
            | Self::Turns { id, .. }
            | Self::SpoolData { id, .. }
            | Self::Matched { id, .. }
            | Self::Status { id, .. }
            | Self::ExecResult { id, .. }
            | Self::SessionEnded { id, .. }
            | Self::ScreenSnapshot { id, .. }
            | Self::Answered { id, .. }
            | Self::Route { id, .. }
            | Self::Routes { id, .. }
            | Self::InboxItems { id, .. }
            | Self::Events { id, .. }
            | Self::Subscribed { id, .. }
            | Self::HistoryTurns { id, .. }
            | Self::SearchHits { id, .. }
            | Self::Forgotten { id, .. }
            | Self::HistoryState { id, .. }
            | Self::Event { id, .. }
            | Self::Error { id, .. }
            | Self::Inject { id, .. }
            | Self::Terminate { id, .. }
            | Self::ScreenRequest { id, .. }
            | Self::AnswerRequest { id, .. }
            | Self::ResendTurns { id, .. } => *id,
        }
    }

    /// An `error` reply to request `id`.
    pub fn error(id: u32, reason: ErrorReason, message: impl Into<String>) -> Self {
        Self::Error {
            id,
            reason,
            message: message.into(),
            resume_cursor: None,
        }
    }

    /// A `timeout` reply to wait request `id`, with the cursor to resume from.
    pub fn timeout(id: u32, message: impl Into<String>, resume_cursor: u64) -> Self {
        Self::Error {
            id,
            reason: ErrorReason::Timeout,
            message: message.into(),
            resume_cursor: Some(resume_cursor),
        }
    }
}
