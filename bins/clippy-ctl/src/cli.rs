//! The command line, as clap derive definitions. Completions and the man page are generated from
//! these same definitions, so what `--help` says is what the shells and `man` say.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

/// Default for `--timeout`, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 5000;

/// `clippy-ctl`: the command line over the clippy broker.
#[derive(Debug, Parser)]
#[command(
    name = "clippy-ctl",
    version,
    about = "Talk to the clippy broker: list sessions and turns, read, capture, paste and deliver turns",
    long_about = "Talk to the clippy broker: list sessions and turns, read, capture, paste and \
                  deliver turns.\n\nA SESSION is a session id, a unique prefix of one, or a session \
                  name. A TURN_ID is <session>:<seq>.",
    after_help = "Exit codes: 0 ok, 1 the operation failed, 3 broker unreachable, \
                  4 invalid arguments or configuration, 5 protocol error, 124 wait timeout."
)]
pub struct Cli {
    /// Print one JSON document (an object) per result, errors included.
    #[arg(long, global = true)]
    pub json: bool,
    /// Configuration file (see CONTRACTS/CLI.md).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The broker's socket [default: $XDG_RUNTIME_DIR/clippy/broker.sock].
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// How long connecting to the broker and waiting for each reply may take, in milliseconds;
    /// for wait-for, wait-prompt, expect-send, exec and end-session: how long to wait; for
    /// screen: how long the session's wrapper may take to answer; for spawn: how long the new
    /// session may take to register.
    #[arg(
        long,
        global = true,
        value_name = "MS",
        default_value_t = DEFAULT_TIMEOUT_MS,
        value_parser = clap::value_parser!(u64).range(1..),
    )]
    pub timeout: u64,
    /// Tell the result as a desktop notification (tmux: in the status line) instead of on
    /// stdout; for commands run from key bindings.
    #[arg(long, global = true)]
    pub notify: bool,
    /// Which desktop `--focused`, `hotkeys` and the clipboard use [default: desktop.resolver,
    /// else detect: tmux when $TMUX is set, X11 when $DISPLAY is set].
    #[arg(long, global = true, value_enum, value_name = "RESOLVER")]
    pub resolver: Option<ResolverArg>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the registered sessions.
    ListSessions,
    /// List a session's turns, newest first (metadata only).
    ListTurns {
        /// Session id, unique id prefix, or name.
        session: String,
        /// Show at most N turns.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        limit: Option<u32>,
    },
    /// Write a turn's content to stdout (exact bytes) and its metadata to stderr.
    ///
    /// An argument containing ':' is a turn id; anything else is a session (id, unique prefix
    /// or name), whose latest turn is fetched.
    GetTurn {
        /// A turn id (SESSION:SEQ) or a session.
        #[arg(value_name = "TURN_ID|SESSION")]
        target: String,
        /// raw: the bytes as the agent wrote them, escapes included; text: the rendered text;
        /// message: the agent's own final message from its hooks (a turn without one fails
        /// with no_message).
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<FormatArg>,
    },
    /// Copy a session's latest turn into the relay buffer.
    Capture {
        /// Session id, unique id prefix, or name.
        #[arg(required_unless_present = "focused", conflicts_with = "focused")]
        session: Option<String>,
        /// The session in the focused window (X11) or the active pane (tmux).
        #[arg(long)]
        focused: bool,
    },
    /// Copy the given turn into the relay buffer.
    CaptureById {
        /// The turn id, SESSION:SEQ.
        turn_id: String,
    },
    /// Inject the relay buffer into a session.
    Paste {
        /// Session id, unique id prefix, or name.
        #[arg(required_unless_present = "focused", conflicts_with = "focused")]
        session: Option<String>,
        /// The session in the focused window (X11) or the active pane (tmux).
        #[arg(long)]
        focused: bool,
        /// raw: the captured bytes; text: the rendered text; message: the agent's own final
        /// message, or the text when the turn has none.
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<FormatArg>,
    },
    /// Deliver the relay buffer to a sink.
    Deliver {
        /// inject: into --session; file: into --path (written atomically, mode 0600);
        /// clipboard: the desktop clipboard.
        #[arg(value_enum)]
        sink: SinkArg,
        /// The target session (inject).
        #[arg(long, value_name = "SESSION", conflicts_with = "focused")]
        session: Option<String>,
        /// The target session is the one in the focused window or pane (inject).
        #[arg(long)]
        focused: bool,
        /// The target file (file); a relative path is taken from the current directory.
        #[arg(long, value_name = "PATH")]
        path: Option<PathBuf>,
        /// raw: the captured bytes; text: the rendered text; message: the agent's own final
        /// message, or the text when the turn has none.
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<FormatArg>,
    },
    /// Without SESSION: whether the broker answers, its protocol version, its sessions and turns.
    /// With SESSION: its mode (idle, busy, starting), cursors, current and last turn.
    Status {
        /// Session id, unique id prefix, or name.
        session: Option<String>,
    },
    /// Start COMMAND as a session with no terminal: a detached wrapper in a PTY of its own,
    /// registered with the broker like any session. Prints the session id once the broker
    /// knows it (with --json: its status), so the next command finds it. --timeout bounds the
    /// wait for that.
    Spawn(SpawnArgs),
    /// Connect this terminal to a running session: its screen is drawn, then its output flows
    /// here and keys go to it, and the session follows this terminal's size. The detach key
    /// (default Ctrl+\ then d) or `clippy-ctl detach` leaves it running.
    Attach {
        /// Session id, unique id prefix, or name.
        session: String,
        /// Watch only: keys (but the detach key) and this terminal's size are not sent.
        #[arg(long)]
        read_only: bool,
        /// The detach key, as tmux writes keys: one key or a prefix and a key, e.g. "C-\\ d"
        /// (the default: Ctrl+\ then d) or "C-]" [default: ctl.detach_key].
        #[arg(long, value_name = "KEYS")]
        detach_key: Option<String>,
    },
    /// Detach every terminal attached to a session (it runs on).
    Detach {
        /// Session id, unique id prefix, or name.
        session: String,
    },
    /// A full-screen dashboard of every session: its state (waiting first, busy with the time
    /// it runs), its screen or last turn, and keys to attach, answer, send, capture and paste,
    /// start, end, approve handoffs and search the history (? lists them; q quits).
    Dash {
        /// Do not ring the terminal's bell when a session starts waiting or ends a turn
        /// unseen.
        #[arg(long)]
        no_bell: bool,
        /// The detach key for Enter's attach, as `attach --detach-key` takes it [default:
        /// ctl.detach_key].
        #[arg(long, value_name = "KEYS")]
        detach_key: Option<String>,
    },
    /// Print a session's screen as text right now, after up to N lines of its history (like
    /// `tmux capture-pane -p`): a dialog waiting for an answer included.
    Screen {
        /// Session id, unique id prefix, or name.
        #[arg(required_unless_present = "focused", conflicts_with = "focused")]
        session: Option<String>,
        /// The session in the focused window (X11) or the active pane (tmux).
        #[arg(long)]
        focused: bool,
        /// Lines of history to print before the screen (at most 100000).
        #[arg(long, value_name = "N", default_value_t = 0)]
        history: u32,
    },
    /// Answer the permission request a session waits on, with its dialog's own keys: allow
    /// (once), deny, or always (the agent's "don't ask again" choice, where it has one).
    Answer {
        /// Session id, unique id prefix, or name.
        session: String,
        /// allow, deny or always.
        #[arg(value_enum)]
        decision: DecisionArg,
        /// Why, for deny: typed into the agent's own field where its dialog offers one
        /// (CONTRACTS/HOOKS.md).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// The wait to answer (`status`'s waiting id) [default: the current one].
        #[arg(long = "id", value_name = "WAITING_ID")]
        waiting_id: Option<u64>,
    },
    /// The spool commands.
    #[command(flatten)]
    Spool(SpoolCommand),
    /// Routes: hand every completed turn of one session to another.
    #[command(subcommand)]
    Route(RouteCommand),
    /// The handoffs waiting for a session (queued, or awaiting approval).
    Inbox {
        /// Session id, unique id prefix, or name.
        session: String,
    },
    /// Let a handoff of a gated route through (see inbox for its approval id).
    Approve {
        /// The approval id, e.g. a3.
        approval: String,
        /// Hand over this file's content instead of the original text.
        #[arg(long, value_name = "FILE")]
        edit: Option<PathBuf>,
    },
    /// Drop a handoff of a gated route.
    Deny {
        /// The approval id, e.g. a3.
        approval: String,
    },
    /// The broker's events: its recent history, or with --follow everything as it happens
    /// (with --json: one JSON object per line).
    Events {
        /// Keep printing events as they happen.
        #[arg(long)]
        follow: bool,
        /// Only events after this id.
        #[arg(long, value_name = "ID")]
        since: Option<u64>,
        /// Only events of this type (route.handoff) or category (route); repeatable.
        #[arg(long = "type", value_name = "TYPE")]
        types: Vec<String>,
    },
    /// Stored turns of live and ended sessions, newest first, from the broker's history store
    /// (which outlives sessions and broker restarts); with --forget, delete stored turns.
    ///
    /// `get-turn TURN_ID` reads any turn listed here. With --forget SESSION: that session's
    /// stored turns are deleted; with --forget --all: every stored turn and event. Either prints
    /// how many turns went.
    #[command(
        override_usage = "clippy-ctl history [SESSION] [--since TIME] [--until TIME] [--limit N]\n       \
                          clippy-ctl history --forget SESSION\n       \
                          clippy-ctl history --forget --all"
    )]
    History(HistoryArgs),
    /// Find stored turns (of live and ended sessions) whose text has the words, best match
    /// first, each with a piece of its text where the words found are between [ and ].
    Search(SearchArgs),
    /// Global hotkeys (X11): capture from the focused session, paste into it.
    ///
    /// Grabs the bindings (default super+shift+c capture, super+shift+v paste; [hotkeys] in
    /// the configuration), then for each press resolves the focused session and asks the
    /// broker. Runs until SIGTERM or SIGINT (exit 0) or until the broker goes away (exit 3).
    Hotkeys(BindingArgs),
    /// Print the tmux bind-key lines that capture and paste with the focused pane's session.
    TmuxBindings(BindingArgs),
    /// Tell a person when an agent waits or a turn completes: desktop notifications, a
    /// terminal bell, and a line each on stdout, as it happens.
    ///
    /// Follows the broker's events (`session.waiting`, `turn.completed`) of the SESSIONs named
    /// (names, ids or id prefixes; every session when none), each a desktop notification (a
    /// wait stays until dismissed) unless --no-desktop, a bell (BEL on stderr) with --bell,
    /// and a line on stdout (with --json: a JSON object). Turns are rate-limited (--burst,
    /// --interval-ms); the ones held back are summed up in one notice. A wait is always told.
    /// Runs until SIGINT or SIGTERM (exit 0); when the broker goes away it says so on stderr
    /// and follows the next one.
    Notify(NotifyArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff): clippy-ctl(1), or with COMMAND, clippy-ctl-COMMAND(1).
    Man {
        /// A subcommand, e.g. get-turn.
        #[arg(value_name = "COMMAND")]
        command: Option<String>,
    },
    /// Run by agents' hooks; not for people: hand a hook's payload to its session's wrapper.
    ///
    /// Agents run it at each hook event, with the payload on stdin (Claude Code, Gemini CLI)
    /// or as the last argument (Codex's notify). It sends the payload to the socket in
    /// $CLIPPY_HOOK_SOCKET, which clippy-session sets for what it wraps, and runs --chain. It
    /// prints nothing, reads no configuration and exits 0 whatever happens.
    #[command(override_usage = "clippy-ctl hook AGENT [--chain JSON_ARRAY] [PAYLOAD]")]
    Hook {
        /// The agent whose hook runs: claude, codex or gemini.
        agent: String,
        /// Also run this program, a JSON array of strings (your own Codex notify), with the
        /// payload as its last argument.
        #[arg(long, value_name = "JSON_ARRAY")]
        chain: Option<String>,
        /// The payload [default: read from stdin].
        payload: Option<std::ffi::OsString>,
    },
    /// Keep clippy's hooks in the agents' own settings files, for agents started without
    /// clippy-session's own wiring (e.g. typed into a wrapped shell).
    #[command(subcommand)]
    Hooks(HooksCommand),
}

/// `hooks …`.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Add clippy's hooks to AGENT's user settings (~/.claude/settings.json,
    /// ~/.codex/config.toml, ~/.gemini/settings.json), keeping the file as it was in
    /// FILE.clippy-backup.
    Install {
        /// The agent.
        #[arg(value_enum)]
        agent: AgentArg,
    },
    /// Remove clippy's hooks from AGENT's user settings: the file as it was before install
    /// when nothing else changed, else everything but clippy's entries.
    Uninstall {
        /// The agent.
        #[arg(value_enum)]
        agent: AgentArg,
    },
    /// For each agent: its settings file and whether clippy's hooks are in it.
    Status,
}

/// An agent whose hooks clippy installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentArg {
    /// Claude Code.
    Claude,
    /// Codex CLI.
    Codex,
    /// Gemini CLI.
    Gemini,
}

/// Key bindings on the command line; each overrides its `[hotkeys]` key. `""` unbinds.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BindingArgs {
    /// Capture the focused session's latest turn [default: super+shift+c].
    #[arg(long, value_name = "BINDING")]
    pub capture: Option<String>,
    /// Paste the relay buffer into the focused session [default: super+shift+v].
    #[arg(long, value_name = "BINDING")]
    pub paste: Option<String>,
    /// Deliver the relay buffer to the clipboard.
    #[arg(long, value_name = "BINDING")]
    pub deliver_clipboard: Option<String>,
    /// Capture the focused session's latest turn and copy it to the clipboard.
    #[arg(long, value_name = "BINDING")]
    pub capture_and_copy: Option<String>,
}

/// `--resolver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ResolverArg {
    /// tmux when $TMUX is set, else X11 when $DISPLAY is set.
    Detect,
    /// The X11 display.
    X11,
    /// The tmux server.
    Tmux,
}

impl ResolverArg {
    /// The setting's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Detect => "detect",
            Self::X11 => "x11",
            Self::Tmux => "tmux",
        }
    }
}

/// The commands over a session's spool and terminal (CONTRACTS/SPOOL.md).
#[derive(Debug, Subcommand)]
pub enum SpoolCommand {
    /// Write a session's spool (its output, line endings as \n) from a cursor to stdout; the
    /// cursors go to stderr.
    Read {
        /// Session id, unique id prefix, or name.
        session: String,
        /// Where to start: a resume_cursor from an earlier read or wait.
        #[arg(long = "from", value_name = "CURSOR", default_value_t = 0)]
        from: u64,
        /// Read at most N bytes (at most 1 MiB).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
        max_bytes: Option<u32>,
    },
    /// Wait until PATTERN appears in a session's output (escapes stripped) at or after a cursor;
    /// print the resume_cursor. --timeout is how long to wait.
    WaitFor {
        /// Session id, unique id prefix, or name.
        session: String,
        /// The text to find (a regex with --regex).
        pattern: String,
        #[command(flatten)]
        kind: PatternArgs,
        /// Where to start looking.
        #[arg(long = "from", value_name = "CURSOR", default_value_t = 0)]
        from: u64,
    },
    /// Wait until the session is back at a prompt that begins at or after a cursor; print the
    /// resume_cursor. --timeout is how long to wait.
    WaitPrompt {
        /// Session id, unique id prefix, or name.
        session: String,
        /// The prompt must begin at or after this cursor.
        #[arg(long = "from", value_name = "CURSOR", default_value_t = 0)]
        from: u64,
    },
    /// Type DATA into a session. Escapes: \r (Enter), \n, \t, \e (Esc), \a, \b, \0, \\, \xHH
    /// (\x03 is Ctrl+C).
    Send {
        /// Session id, unique id prefix, or name.
        session: String,
        /// The bytes to type, with escapes.
        data: String,
        /// Append Enter (\r).
        #[arg(long)]
        enter: bool,
    },
    /// Wait for PATTERN, then type DATA at once: nothing else is written to the session in
    /// between. Prints the resume_cursor of the match.
    ExpectSend {
        /// Session id, unique id prefix, or name.
        session: String,
        /// The text to find (a regex with --regex).
        pattern: String,
        /// The bytes to type on the match, with escapes as for send.
        data: String,
        #[command(flatten)]
        kind: PatternArgs,
        /// Append Enter (\r) to DATA.
        #[arg(long)]
        enter: bool,
        /// Where to start looking.
        #[arg(long = "from", value_name = "CURSOR", default_value_t = 0)]
        from: u64,
    },
    /// Run COMMAND in a session idle at its prompt and print its output (stdout) and its turn,
    /// exit code and cwd (stderr). Refused with `busy` while a turn runs. --timeout is how long
    /// to wait for the prompt after it.
    Exec {
        /// Session id, unique id prefix, or name.
        session: String,
        /// The command line (several words are joined with spaces).
        #[arg(required = true, num_args = 1.., value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Interrupt what runs in a session (Ctrl+C) and wait for its prompt. --timeout is how long
    /// to wait.
    EndSession {
        /// Session id, unique id prefix, or name.
        session: String,
        /// If no prompt comes in time, kill the child's process group (the session ends).
        #[arg(long)]
        force: bool,
    },
}

/// `spawn …`.
#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// A name for the session, accepted wherever a session id is.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The PTY's size.
    #[arg(long, value_name = "COLSxROWS", default_value = "120x40")]
    pub size: String,
    /// The directory COMMAND runs in [default: this one].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Set a variable in COMMAND's environment (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Prompt preset (see `clippy-session --help`) [default: by the command's name].
    #[arg(long, value_name = "NAME", conflicts_with = "pattern")]
    pub preset: Option<String>,
    /// A custom prompt regex (replaces the preset's line pattern).
    #[arg(long, value_name = "REGEX")]
    pub pattern: Option<String>,
    /// Start bash or zsh with OSC 133 marks, for exact turn boundaries and exit codes
    /// (COMMAND defaults to $SHELL then).
    #[arg(long)]
    pub shell_integration: bool,
    /// Do not wire the agent's own hooks for this run.
    #[arg(long)]
    pub no_agent_hooks: bool,
    /// Keep the session's turns out of the broker's history store (memory only).
    #[arg(long)]
    pub no_history: bool,
    /// The command to run, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// `notify`'s arguments.
#[derive(Debug, Args)]
pub struct NotifyArgs {
    /// Sessions to follow (names, ids or id prefixes) [default: every session].
    #[arg(value_name = "SESSION")]
    pub sessions: Vec<String>,
    /// What to tell: `waiting` (an agent waits for the person), `turn` (a turn completed).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "WHAT",
        default_value = "waiting,turn"
    )]
    pub on: Vec<NotifyOn>,
    /// Ring the terminal bell (BEL on stderr) with each notice.
    #[arg(long)]
    pub bell: bool,
    /// No desktop notifications (only the lines, and the bell with --bell).
    #[arg(long)]
    pub no_desktop: bool,
    /// Turn notices told at once before the rate limit holds them back.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub burst: u32,
    /// One more turn notice allowed per this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub interval_ms: u64,
}

/// What `notify` tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NotifyOn {
    /// An agent waits for the person (`session.waiting`).
    Waiting,
    /// A turn completed (`turn.completed`).
    Turn,
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() && !key.contains('\0') && !value.contains('\0') => {
            Ok((key.to_owned(), value.to_owned()))
        }
        _ => Err(format!("expected KEY=VALUE, found {text:?}")),
    }
}

/// clap's value parser for a TIME (`clippy_client::when`), a time ago counted back from now.
fn time_arg(text: &str) -> Result<u64, String> {
    clippy_client::when::parse(text, clippy_proto::unix_ms_now()).map_err(|e| e.to_string())
}

/// `--since` and `--until` of `history` and `search`.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct TimeRange {
    /// Only turns completed at or after TIME: a time ago (90s, 15m, 2h, 3d, 1w, 1h30m), an
    /// ISO-8601 date or date-time, UTC unless it gives an offset (2026-11-26,
    /// 2026-11-26T10:00, 2026-11-26T10:00:00+01:00), or Unix milliseconds.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    pub since: Option<u64>,
    /// Only turns completed before TIME (the forms of --since).
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    pub until: Option<u64>,
}

/// `history …`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("forget_target").args(["session", "all"])))]
pub struct HistoryArgs {
    /// Only this session's turns (id, unique id prefix, or name; an ended session's too); with
    /// --forget, the session whose turns to delete.
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    #[command(flatten)]
    pub range: TimeRange,
    /// Show at most N turns [default: 50].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
    /// Delete SESSION's stored turns (or with --all every stored turn and event) from the
    /// history store, at once and for good; prints how many turns were deleted.
    #[arg(long, requires = "forget_target", conflicts_with_all = ["since", "until", "limit"])]
    pub forget: bool,
    /// With --forget: delete every stored turn and event, of every session.
    #[arg(long, requires = "forget")]
    pub all: bool,
}

/// `search …`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The words to find; all must occur (several arguments are joined with spaces). They are
    /// taken as words: quotes, *, - or NEAR are never an error.
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    pub query: Vec<String>,
    /// Only this session's turns (id, unique id prefix, or name; an ended session's too).
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    #[command(flatten)]
    pub range: TimeRange,
    /// Show at most N turns [default: 20].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
}

/// `route …`.
#[derive(Debug, Subcommand)]
pub enum RouteCommand {
    /// Hand every completed turn of FROM to TO: typed in at TO's next prompt (queued while TO
    /// is busy), then Enter.
    Add {
        /// The source session (id, unique prefix or name).
        from: String,
        /// The target session (id, unique prefix or name).
        to: String,
        /// handoff: TO acts on it; report: TO is told (the default template names the source).
        #[arg(long, value_enum, default_value_t = RouteKindArg::Handoff)]
        kind: RouteKindArg,
        /// A file with the text to hand over; {turn}, {session}, {name}, {turn_id} and
        /// {input} are replaced.
        #[arg(long, value_name = "FILE", conflicts_with = "template_text")]
        template: Option<PathBuf>,
        /// The template as text.
        #[arg(long, value_name = "TEXT")]
        template_text: Option<String>,
        /// Which view of the turn {turn} is [default: text]; message: the agent's own final
        /// message, or the text for a turn without one.
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<FormatArg>,
        /// Interrupt a busy target (Ctrl+C, wait for its prompt) instead of waiting.
        #[arg(long)]
        interrupt: bool,
        /// Handoffs allowed since the last human keystroke into either session [default: 16].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        max_hops: Option<u32>,
        /// Park each handoff until `clippy-ctl approve`.
        #[arg(long)]
        gated: bool,
        /// Press Enter after the text (the default).
        #[arg(long, conflicts_with = "no_submit")]
        submit: bool,
        /// Type the text without pressing Enter.
        #[arg(long)]
        no_submit: bool,
    },
    /// List the routes.
    List,
    /// Remove a route and the handoffs it queued.
    Rm {
        /// The route id, e.g. r1.
        route: String,
    },
    /// Stop handing over until resumed.
    Pause {
        /// The route id, e.g. r1.
        route: String,
    },
    /// Hand over again (the hop count starts from 0).
    Resume {
        /// The route id, e.g. r1.
        route: String,
    },
}

/// `route add --kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RouteKindArg {
    /// The target acts on the turn.
    Handoff,
    /// The target is told about the turn.
    Report,
}

/// `--regex` / `--literal`.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct PatternArgs {
    /// PATTERN is a regular expression (Rust regex syntax, multi-line: ^ and $ match at lines).
    #[arg(long, conflicts_with = "literal")]
    pub regex: bool,
    /// PATTERN is literal text (the default).
    #[arg(long)]
    pub literal: bool,
}

impl PatternArgs {
    /// The wire kind.
    pub fn kind(self) -> clippy_proto::PatternKind {
        if self.regex {
            clippy_proto::PatternKind::Regex
        } else {
            clippy_proto::PatternKind::Literal
        }
    }
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// The raw bytes, escapes included.
    Raw,
    /// The rendered text a person saw.
    Text,
    /// The agent's own final message, as its hooks reported it (markdown, no screen wrapping).
    Message,
}

impl From<FormatArg> for clippy_proto::Format {
    fn from(format: FormatArg) -> Self {
        match format {
            FormatArg::Raw => Self::Raw,
            FormatArg::Text => Self::Text,
            FormatArg::Message => Self::Message,
        }
    }
}

/// The sinks of `deliver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SinkArg {
    /// Inject into a session's terminal.
    Inject,
    /// Write a file.
    File,
    /// Set the desktop clipboard.
    Clipboard,
}

impl SinkArg {
    /// The sink's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inject => "inject",
            Self::File => "file",
            Self::Clipboard => "clipboard",
        }
    }
}

/// Whether the raw arguments ask for JSON: used to report a usage error, when clap could not
/// parse them, in the form the caller asked for.
pub fn wants_json<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> bool {
    args.iter()
        .skip(1)
        .map(AsRef::as_ref)
        .take_while(|arg| *arg != "--")
        .any(|arg| arg == "--json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn json_flag_is_found_before_a_double_dash_only() {
        assert!(wants_json(&["clippy-ctl", "list-sessions", "--json"]));
        assert!(wants_json(&["clippy-ctl", "--json", "nope"]));
        assert!(!wants_json(&["clippy-ctl", "get-turn", "--", "--json"]));
        assert!(!wants_json(&["--json"]));
    }

    #[test]
    fn global_options_go_anywhere() {
        let cli = Cli::try_parse_from([
            "clippy-ctl",
            "get-turn",
            "abc:1",
            "--json",
            "--timeout",
            "10",
            "--format",
            "text",
        ])
        .unwrap();
        assert!(cli.json);
        assert_eq!(cli.timeout, 10);
        assert!(matches!(
            cli.command,
            Command::GetTurn {
                format: Some(FormatArg::Text),
                ..
            }
        ));
    }

    #[test]
    fn spawn_defaults_to_the_size_every_front_end_starts_sessions_at() {
        let cli = Cli::try_parse_from(["clippy-ctl", "spawn", "--", "bash"]).unwrap();
        let Command::Spawn(args) = cli.command else {
            panic!("spawn")
        };
        assert_eq!(args.size, clippy_client::TermSize::DETACHED.spec());
    }

    #[test]
    fn zero_timeout_is_refused() {
        assert!(Cli::try_parse_from(["clippy-ctl", "--timeout", "0", "status"]).is_err());
    }
}

/// `answer`'s decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DecisionArg {
    /// Let the tool run, this once.
    Allow,
    /// Refuse it.
    Deny,
    /// Let it run and stop asking (the agent's own "don't ask again" choice).
    Always,
}

impl From<DecisionArg> for clippy_proto::Decision {
    fn from(arg: DecisionArg) -> Self {
        match arg {
            DecisionArg::Allow => Self::Allow,
            DecisionArg::Deny => Self::Deny,
            DecisionArg::Always => Self::Always,
        }
    }
}
