//! The tool catalogue: each tool's name, its description (written for a model: what it does,
//! when to use it, what it returns, which cursor to pass next) and its arguments, whose JSON
//! schema is derived from the types here. [`crate::calls`] runs them.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `list_turns`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTurnsArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// At most this many turns, newest first (default: all the broker keeps, 32 by default).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Which form of a turn.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TurnFormat {
    /// The text a person saw on the screen (default).
    #[default]
    Text,
    /// The raw terminal bytes, escape sequences included.
    Raw,
    /// The agent's own final message (markdown), when its hooks reported one.
    Message,
}

impl TurnFormat {
    /// The wire format.
    pub fn wire(self) -> clippy_proto::Format {
        match self {
            Self::Text => clippy_proto::Format::Text,
            Self::Raw => clippy_proto::Format::Raw,
            Self::Message => clippy_proto::Format::Message,
        }
    }
}

/// `get_turn`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTurnArgs {
    /// The turn's id, `<session>:<seq>` (from list_turns, exec, events). Give this or `session`.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// A session (id, prefix or name): its latest completed turn. Give this or `turn_id`.
    #[serde(default)]
    pub session: Option<String>,
    /// `text` (default): what the screen showed; `raw`: the terminal bytes; `message`: the
    /// agent's own final message (Claude Code, Codex, Gemini CLI with hooks).
    #[serde(default)]
    pub format: TurnFormat,
    /// Byte offset into the content to start from (default 0): pass the `next_offset` of a
    /// truncated answer to read on.
    #[serde(default)]
    pub offset: u64,
}

/// `read_spool`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadSpoolArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// Spool byte offset to read from (default 0): a `resume_cursor` from an earlier call.
    #[serde(default)]
    pub from: u64,
    /// At most this many bytes (default and ceiling: the server's reply limit).
    #[serde(default)]
    pub max_bytes: Option<u32>,
    /// Remove terminal escape sequences from the text (default true); false keeps the bytes
    /// as the program wrote them.
    #[serde(default = "yes")]
    pub strip_escapes: bool,
}

fn yes() -> bool {
    true
}

/// `wait_for`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitForArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// The text to wait for, matched against the output with escape sequences removed.
    pub pattern: String,
    /// Read `pattern` as a regular expression (Rust regex syntax, multi-line: ^ and $ match at
    /// line ends). Default false: the exact text.
    #[serde(default)]
    pub regex: bool,
    /// Spool offset to look from (default 0, the session's start): pass the `resume_cursor` of
    /// the previous call so nothing is matched twice or skipped.
    #[serde(default)]
    pub from: u64,
    /// How long to wait in milliseconds (default 30000; 0 looks once).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `wait_prompt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitPromptArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// The prompt must begin at or after this spool offset (default 0): pass the
    /// `resume_cursor` you had before sending, so an old prompt does not count.
    #[serde(default)]
    pub from: u64,
    /// How long to wait in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `send`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// The text to type, exactly (control characters included: "\u0003" is Ctrl+C, "\u001b"
    /// Escape, "\r" Enter).
    pub text: String,
    /// Press Enter after the text, as its own key press after a short pause so agents that
    /// take a fast burst for a paste still submit (default false).
    #[serde(default)]
    pub enter: bool,
}

/// `expect_send`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectSendArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// The text to wait for (escape sequences removed before matching).
    pub pattern: String,
    /// Read `pattern` as a regular expression (default false).
    #[serde(default)]
    pub regex: bool,
    /// Spool offset to look from (default 0): the `resume_cursor` of the previous call.
    #[serde(default)]
    pub from: u64,
    /// How long to wait in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// What to type the moment it matches (nothing else is typed in between).
    pub text: String,
    /// Press Enter after the text (default true).
    #[serde(default = "yes")]
    pub enter: bool,
}

/// `exec`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// One command line (no newlines), typed and followed by Enter.
    pub command: String,
    /// How long to wait for the prompt after it, in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// Tools that take a session and nothing else (`status`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
}

/// `capture`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureArgs {
    /// A session (id, prefix or name): its latest turn. Give this or `turn_id`.
    #[serde(default)]
    pub session: Option<String>,
    /// A turn id, `<session>:<seq>`. Give this or `session`.
    #[serde(default)]
    pub turn_id: Option<String>,
}

/// `paste`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PasteArgs {
    /// The session to paste into (id, prefix or name).
    pub session: String,
    /// `text` (default), `raw`, or `message` (the agent's own final message, else the text).
    #[serde(default)]
    pub format: TurnFormat,
}

/// `deliver`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliverArgs {
    /// The file to write (created or replaced whole, atomically). A relative path is taken
    /// from clippy-mcp's working directory.
    pub path: String,
    /// `text` (default), `raw`, or `message` (the agent's own final message, else the text).
    #[serde(default)]
    pub format: TurnFormat,
}

/// Handoff or report.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RouteKindArg {
    /// The target acts on the turn (default).
    #[default]
    Handoff,
    /// The target is told of it (the default template names the source).
    Report,
}

/// `route_add`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteAddArgs {
    /// The source session (id, prefix or name): each turn it completes is handed over.
    pub from: String,
    /// The target session (id, prefix or name): it receives the text at its prompt.
    pub to: String,
    /// `handoff` (default) or `report`.
    #[serde(default)]
    pub kind: RouteKindArg,
    /// The text handed over, with {turn}, {session}, {name}, {turn_id} and {input} replaced
    /// (default: the kind's own).
    #[serde(default)]
    pub template: Option<String>,
    /// Which view of the turn {turn} is: `text` (default), `raw` or `message`.
    #[serde(default)]
    pub format: Option<TurnFormat>,
    /// Interrupt a busy target (Ctrl+C, then its prompt) instead of waiting (default false).
    #[serde(default)]
    pub interrupt: bool,
    /// Handoffs allowed since the last human keystroke into either session (default 16).
    #[serde(default)]
    pub max_hops: Option<u32>,
    /// Park each handoff until a person approves it (`clippy-ctl approve`; default false).
    #[serde(default)]
    pub gated: bool,
    /// Press Enter after the text (default true).
    #[serde(default)]
    pub submit: Option<bool>,
}

/// `route_remove`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteRemoveArgs {
    /// The route id, e.g. `r1` (from route_add or route_list).
    pub route: String,
}

/// `events_since`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventsSinceArgs {
    /// Only events after this id (default: all kept): pass the `last_event_id` of the previous
    /// call.
    #[serde(default)]
    pub since: Option<u64>,
    /// Only these types, e.g. ["turn.completed", "session.exited"] (default: all).
    #[serde(default)]
    pub types: Vec<String>,
    /// At most this many events, oldest first (default 100).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `end_session`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndSessionArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// Kill the program's process group if Ctrl+C does not bring a prompt in time (default
    /// false).
    #[serde(default)]
    pub force: bool,
    /// How long to wait for the prompt after Ctrl+C, in milliseconds (default 5000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `screen`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenArgs {
    /// Session id, unique id prefix, or name (as list_sessions shows them).
    pub session: String,
    /// Lines of scrollback to include before the visible rows (default 0).
    #[serde(default)]
    pub history: u32,
}

// ---- Starting sessions, history, gated handoffs (issue 30) ----

/// A session's command: its words, or one line split into words as a shell would.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CommandArg {
    /// The program and its arguments, one word each: `["claude", "--model", "x"]`.
    Words(Vec<String>),
    /// One line, split into words as a shell would (quotes, backslashes; no expansion):
    /// `claude --model "x y"`.
    Line(String),
}

/// A terminal size.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SizeArg {
    /// Columns (at least 1).
    pub cols: u16,
    /// Rows (at least 1).
    pub rows: u16,
}

/// `spawn_session`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnSessionArgs {
    /// The program to run: a list of words (`["bash", "--norc"]`) or one command line
    /// (`"claude --model x"`). May be left out with shell_integration (the user's $SHELL).
    #[serde(default)]
    pub command: Option<CommandArg>,
    /// A name for the session, usable wherever a session id is.
    #[serde(default)]
    pub name: Option<String>,
    /// The folder it runs in (default: clippy-mcp's working directory; a relative path is
    /// taken from there).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Variables added to its environment, e.g. {"LANG": "C.UTF-8"}.
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Its terminal's size (default 120 columns by 40 rows).
    #[serde(default)]
    pub size: Option<SizeArg>,
    /// The prompt-detection preset (default: chosen by the command's name: claude, codex,
    /// gemini, aider, bash, python, …).
    #[serde(default)]
    pub preset: Option<String>,
    /// Start bash or zsh with prompt marks, for exact turns, exit codes and cwd (default
    /// false).
    #[serde(default)]
    pub shell_integration: bool,
    /// Do not wire the agent's own hooks (default false: Claude Code, Codex and Gemini CLI
    /// report their final message and permission waits through them).
    #[serde(default)]
    pub no_agent_hooks: bool,
    /// Keep its turns out of the broker's history store (default false).
    #[serde(default)]
    pub no_history: bool,
    /// How long the session may take to register, in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `history`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryArgs {
    /// One session's turns (id, prefix or name; live or ended), else every session's.
    #[serde(default)]
    pub session: Option<String>,
    /// Only turns completed at or after this time: a time ago (90s, 15m, 2h, 3d, 1w, 1h30m),
    /// an ISO-8601 date or date-time, UTC unless it gives an offset (2026-11-26,
    /// 2026-11-26T10:00:00+01:00), or Unix milliseconds.
    #[serde(default)]
    pub since: Option<String>,
    /// Only turns completed before this time (the forms of `since`).
    #[serde(default)]
    pub until: Option<String>,
    /// At most this many turns, newest first (default: the broker's, 50).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `search_history`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchHistoryArgs {
    /// The words to find (any text: it is quoted, never read as query syntax).
    pub query: String,
    /// Only this session's turns (id, prefix or name; live or ended).
    #[serde(default)]
    pub session: Option<String>,
    /// Only turns completed at or after this time (the forms of history's `since`).
    #[serde(default)]
    pub since: Option<String>,
    /// Only turns completed before this time.
    #[serde(default)]
    pub until: Option<String>,
    /// At most this many hits, best first (default: the broker's, 20).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `approve`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveArgs {
    /// The approval id, e.g. `a1` (from inbox, or an approval.requested event).
    pub approval: String,
    /// Text to hand over instead of the handoff's own (default: as it is).
    #[serde(default)]
    pub text: Option<String>,
}

/// How a permission request is answered.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DecisionArg {
    /// Let the tool run this once.
    Allow,
    /// Refuse it.
    Deny,
    /// Let it run and stop asking for it, where the agent's dialog offers that.
    Always,
}

impl DecisionArg {
    /// The wire decision.
    pub fn wire(self) -> clippy_proto::Decision {
        match self {
            Self::Allow => clippy_proto::Decision::Allow,
            Self::Deny => clippy_proto::Decision::Deny,
            Self::Always => clippy_proto::Decision::Always,
        }
    }
}

/// `answer`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerArgs {
    /// The session (id, prefix or name) whose agent waits for a permission.
    pub session: String,
    /// `allow`, `deny` or `always`.
    pub decision: DecisionArg,
    /// For a denial: why, typed where the agent asks what to do instead.
    #[serde(default)]
    pub reason: Option<String>,
    /// The wait answered (`status`'s `waiting.id`); default: the wait shown now.
    #[serde(default)]
    pub id: Option<u64>,
}

/// `deny`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyArgs {
    /// The approval id, e.g. `a1` (from inbox, or an approval.requested event).
    pub approval: String,
}

/// What a tool does to the world, for the client's hints.
#[derive(Debug, Clone, Copy)]
enum Effect {
    /// Reads only.
    Reads,
    /// Types into a session, or changes the broker's routes or relay buffer.
    Acts,
    /// Interrupts or kills what runs.
    Destroys,
}

/// One tool: its name, description and argument schema.
struct Entry {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Arc<JsonObject>,
    effect: Effect,
}

fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::tool::schema_for_type::<T>()
}

/// Every tool, in the order `tools/list` gives them.
const ENTRIES: &[Entry] = &[
    Entry {
        name: "list_sessions",
        description: "List the terminal sessions clippy wraps (agents such as Claude Code, Codex, \
            Gemini CLI, aider, or shells): id, name, command, preset, whether connected, turns \
            held, latest turn id, and what an agent waits for. Start here to find the session \
            to talk to.",
        schema: schema::<NoArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "list_turns",
        description: "List a session's completed turns (one turn = one submitted input and the \
            output it produced), newest first, without content: turn_id, completion time, \
            byte length, the input, exit code and cwd when a shell reported them. Read one \
            with get_turn.",
        schema: schema::<ListTurnsArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "get_turn",
        description: "Read one completed turn: by turn_id, or a session's latest. Returns the \
            content as the screen showed it (format text, default), as raw terminal bytes, or \
            as the agent's own final message (format message). Content longer than the \
            server's reply limit is cut: truncated is true, total_bytes says how much there \
            is, and calling again with offset = next_offset reads on (the turn's raw bytes \
            are also in the spool at spool_span, for read_spool).",
        schema: schema::<GetTurnArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "read_spool",
        description: "Read a session's output log (the spool: every byte the program wrote, \
            append-only) from a byte cursor. Returns data, cursor and resume_cursor: pass \
            resume_cursor as `from` next time to continue exactly where this read stopped. \
            Escape sequences are removed unless strip_escapes is false. (Seed 002's \
            pty.read_spool.)",
        schema: schema::<ReadSpoolArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "wait_for",
        description: "Wait until text (or a regex) appears in a session's output at or after \
            the cursor `from`, up to timeout_ms. Returns the match, its span and \
            resume_cursor (the match's end): pass it as `from` to the next wait so nothing is \
            matched twice or skipped. On timeout the result is an error with reason timeout \
            and a resume_cursor (the output's end so far) to wait on from. (Seed 002's \
            pty.wait_for.)",
        schema: schema::<WaitForArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "wait_prompt",
        description: "Wait until the session shows its prompt again (idle, ready for input) at \
            or after the cursor `from`: use it after send to know a program or agent has \
            finished answering. Returns turn_id (the turn that ended at this prompt, already \
            recorded: pass it to get_turn), the prompt line, its span, resume_cursor, and for a \
            shell with integration the last exit code and cwd. Timeout: error reason timeout \
            with resume_cursor.",
        schema: schema::<WaitPromptArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "send",
        description: "Type text into a session as a person would (with enter=true, press Enter \
            after it). To ask an agent something: note status's resume_cursor (the cursor), \
            send the question with enter=true, wait_prompt from that cursor, then get_turn with \
            the turn_id it returns. Fails \
            with reason busy, typing nothing, while the program has not taken the input it \
            already has. (Seed 002's pty.send.)",
        schema: schema::<SendArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "expect_send",
        description: "Wait for text (or a regex) in the output from cursor `from`, then type \
            `text` at once, with nothing else typed in between: answer a question a program \
            asks (a password prompt, a y/n, a guessing game). Returns the match and \
            resume_cursor; on timeout, error reason timeout with resume_cursor and nothing \
            typed.",
        schema: schema::<ExpectSendArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "exec",
        description: "Run one command line in an idle shell session and wait for its prompt: \
            returns the command's output (as text), its exit code and the working directory \
            after it (when the shell was started with shell integration), the turn_id, and \
            resume_cursor. Fails with reason busy if something is running. (Seed 002's \
            pty.exec.)",
        schema: schema::<ExecArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "status",
        description: "A session's state now: mode (idle, busy, starting, exited), resume_cursor \
            (the cursor to wait from for what comes next), the latest prompt's cursor, the \
            running input, latest turn, last exit code and cwd, whether input is blocked, \
            what an agent waits for (a permission), and how an ended session exited. \
            (Seed 002's pty.status.)",
        schema: schema::<SessionArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "screen",
        description: "The session's terminal screen as text right now, like a person looking \
            at it (with `history` lines of scrollback first): menus, dialogs, progress and \
            the input box included. Use it to see what an agent is showing while it works or \
            asks for something; use get_turn for a finished answer.",
        schema: schema::<ScreenArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "capture",
        description: "Copy a turn (a session's latest, or one by turn_id) into clippy's relay \
            buffer, the one the copy hotkey fills, for paste or deliver. Returns the turn_id \
            and its byte length.",
        schema: schema::<CaptureArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "paste",
        description: "Type the relay buffer (filled by capture) into a session, as a paste, \
            without pressing Enter.",
        schema: schema::<PasteArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "deliver",
        description: "Write the relay buffer (filled by capture) to a file, atomically. \
            Returns the path written.",
        schema: schema::<DeliverArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "route_add",
        description: "Route one session's turns into another: each turn the source completes \
            is typed into the target at its prompt (handoff: for it to act on; report: to \
            inform it). Loops are stopped by a hop limit counted from the last human input. \
            Returns the route (its id for route_remove).",
        schema: schema::<RouteAddArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "route_list",
        description: "List the routes: id, source, target, kind, template, hop count, whether \
            paused and why.",
        schema: schema::<NoArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "route_remove",
        description: "Remove a route by id; the handoffs it had queued are dropped.",
        schema: schema::<RouteRemoveArgs>,
        effect: Effect::Destroys,
    },
    Entry {
        name: "events_since",
        description: "The broker's events after an event id, oldest first: sessions \
            registered and exited, turns completed, agents waiting for permission, route \
            handoffs. Returns events and last_event_id: pass it as `since` next time to get \
            only what is new. (Seed 002's blocks.since.)",
        schema: schema::<EventsSinceArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "end_session",
        description: "Interrupt what runs in a session (Ctrl+C) and wait for its prompt; with \
            force, kill the program's process group when no prompt comes in time. Returns \
            the outcome: idle (nothing ran), interrupted, or killed (the session ends).",
        schema: schema::<EndSessionArgs>,
        effect: Effect::Destroys,
    },
    // ---- Starting sessions, history, gated handoffs (issue 30) ----
    Entry {
        name: "spawn_session",
        description: "Start a new session: a coding agent (claude, codex, gemini, aider), a \
            shell or a REPL, with no terminal of its own, wrapped by clippy. command is a list \
            of words or one command line; name it to address it by name. Returns once the \
            broker has registered it: session (its id), name, and its status; wait_prompt from \
            0 then waits for its first prompt before you send to it.",
        schema: schema::<SpawnSessionArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "history",
        description: "Turns of live and ended sessions from the broker's history store, newest \
            first (it outlives broker restarts): turn_id (read it with get_turn), session, name, \
            command, cwd, completion time, input, exit code, live. Filter by session and by \
            time (since/until: 2h, 3d, an ISO-8601 date, Unix ms).",
        schema: schema::<HistoryArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "search_history",
        description: "Full-text search of the stored turns of live and ended sessions, best \
            match first: each hit is a turn (turn_id for get_turn, session, name, time, input) \
            with a snippet around the words found, each between [ and ]. Filter by session and \
            time as history does.",
        schema: schema::<SearchHistoryArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "inbox",
        description: "The handoffs waiting for a session (from routes): each with its route, \
            turn_id, size, and state: queued (typed at its next prompt) or awaiting_approval \
            (a gated route: resolve it with approve or deny, by its approval id).",
        schema: schema::<SessionArgs>,
        effect: Effect::Reads,
    },
    Entry {
        name: "answer",
        description: "Answer the permission request a session's agent waits on (status shows \
            waiting, with its id, the tool and its input): allow, deny or always, pressed in the \
            agent's own dialog by its wrapper. Refused with not_waiting when nothing waits (or \
            a person answered first), stale_answer when `id` is not the wait shown now, \
            unsupported when the dialog offers no such choice (the message names the keys).",
        schema: schema::<AnswerArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "approve",
        description: "Let a gated handoff go on (by approval id, from inbox): it joins the \
            target's inbox and is typed at its next prompt, as it is or with `text` in its \
            place.",
        schema: schema::<ApproveArgs>,
        effect: Effect::Acts,
    },
    Entry {
        name: "deny",
        description: "Drop a gated handoff (by approval id, from inbox): it is never typed \
            into its target.",
        schema: schema::<DenyArgs>,
        effect: Effect::Destroys,
    },
];

/// Every tool's name, in catalogue order.
pub fn names() -> impl Iterator<Item = &'static str> {
    ENTRIES.iter().map(|entry| entry.name)
}

/// The tools as `tools/list` gives them.
pub fn catalogue() -> Vec<Tool> {
    ENTRIES
        .iter()
        .map(|entry| {
            let hints = match entry.effect {
                Effect::Reads => ToolAnnotations::new().read_only(true),
                Effect::Acts => ToolAnnotations::new().read_only(false).destructive(false),
                Effect::Destroys => ToolAnnotations::new().read_only(false).destructive(true),
            };
            Tool::new(
                Cow::Borrowed(entry.name),
                Cow::Borrowed(entry.description),
                (entry.schema)(),
            )
            .with_annotations(hints.open_world(false))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        let tools = catalogue();
        assert_eq!(tools.len(), ENTRIES.len());
        for tool in &tools {
            assert_eq!(
                tool.input_schema.get("type").and_then(|t| t.as_str()),
                Some("object"),
                "{}",
                tool.name
            );
            assert!(tool.description.as_deref().is_some_and(|d| d.len() > 40));
        }
        let mut names: Vec<_> = names().collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ENTRIES.len(), "names are unique");
    }

    fn required(name: &str) -> Vec<String> {
        let tool = catalogue()
            .into_iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("{name}"));
        let mut required: Vec<String> = tool
            .input_schema
            .get("required")
            .and_then(|r| r.as_array())
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        required.sort_unstable();
        required
    }

    #[test]
    fn the_orchestration_tools_require_what_they_cannot_do_without() {
        assert!(
            required("spawn_session").is_empty(),
            "command may be left to the shell"
        );
        assert!(required("history").is_empty());
        assert_eq!(required("search_history"), ["query"]);
        assert_eq!(required("inbox"), ["session"]);
        assert_eq!(required("approve"), ["approval"]);
        assert_eq!(required("answer"), ["decision", "session"]);
        assert_eq!(required("deny"), ["approval"]);
        let spawn = catalogue()
            .into_iter()
            .find(|tool| tool.name == "spawn_session")
            .expect("spawn_session");
        let schema = serde_json::Value::Object((*spawn.input_schema).clone()).to_string();
        for field in ["command", "name", "cwd", "env", "size", "timeout_ms"] {
            assert!(
                schema.contains(&format!("\"{field}\"")),
                "{field}: {schema}"
            );
        }
    }

    #[test]
    fn schemas_say_which_arguments_are_required() {
        let tool = catalogue()
            .into_iter()
            .find(|tool| tool.name == "wait_for")
            .expect("wait_for");
        let required = tool.input_schema.get("required").expect("required");
        let required: Vec<&str> = required
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert_eq!(required, ["session", "pattern"]);
    }
}
