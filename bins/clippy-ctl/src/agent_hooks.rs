//! The agents' own hooks: `clippy-ctl hook AGENT`, which agents run at each hook event, and
//! `clippy-ctl hooks install|uninstall|status`, which keeps those hooks in the agents' own
//! settings files (the text transforms are `clippy_hooks::install`; the files are read and
//! written here).
//!
//! `hook` runs inside the agent's turn, once per event, so it does as little as it can: no
//! argument errors (it is dispatched before clap), no configuration, no broker, nothing on
//! stdout or stderr, exit 0 whatever happens. It reads the payload (at most
//! [`STDIN_DEADLINE`]), hands it unread to the socket named in `CLIPPY_HOOK_SOCKET` (at most
//! [`SOCKET_DEADLINE`]), and starts `--chain` without waiting for it. Without the socket
//! variable (an agent outside any session) and without `--chain`, it exits at once, without
//! reading its input.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clippy_hooks::install::{self, Edit};
use clippy_hooks::{Agent, HookCommand, HooksError, MAX_REPORT_BYTES, SOCKET_ENV, encode};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use serde_json::{Value, json};

use crate::cli::{AgentArg, HooksCommand};
use crate::error::CtlError;
use crate::exit::{Exit, exit_code};
use crate::output::{clean, render_error};

/// How long `hook` waits for the end of its stdin.
pub const STDIN_DEADLINE: Duration = Duration::from_secs(2);
/// How long `hook` gives connecting to the wrapper and writing the report, together.
pub const SOCKET_DEADLINE: Duration = Duration::from_secs(2);
/// The suffix of the backup kept of a settings file before clippy first changes it.
const BACKUP_SUFFIX: &str = ".clippy-backup";
/// The mode of a settings file clippy creates.
const NEW_FILE_MODE: u32 = 0o600;

// ---------------------------------------------------------------------------------------------
// `hook`
// ---------------------------------------------------------------------------------------------

/// When `args` (the whole command line) is `clippy-ctl [global options] hook …`: runs the hook
/// and returns exit 0. `None` for any other command, and for `hook --help` (clap prints it).
pub fn hook_entry(args: &[OsString]) -> Option<ExitCode> {
    let words = hook_words(args)?;
    let parsed = HookArgs::parse(words)?;
    // Nothing of a hook may reach the agent's screen, not even a panic's message.
    std::panic::set_hook(Box::new(|_| {}));
    let _ = std::panic::catch_unwind(|| parsed.run());
    Some(ExitCode::SUCCESS)
}

/// The words after `hook` when it is the subcommand: after any of the global options.
fn hook_words(args: &[OsString]) -> Option<&[OsString]> {
    let mut at = 1;
    while let Some(arg) = args.get(at) {
        match arg.to_str()? {
            "hook" => return args.get(at + 1..),
            "-h" | "--help" | "-V" | "--version" => return None,
            "--config" | "--socket" | "--timeout" | "--resolver" => at += 2,
            option if option.starts_with('-') => at += 1,
            _ => return None,
        }
    }
    None
}

/// `hook`'s arguments, read leniently: what an agent passes is never an error.
#[derive(Debug, Default, PartialEq, Eq)]
struct HookArgs {
    agent: Option<OsString>,
    chain: Option<OsString>,
    payload: Option<OsString>,
}

impl HookArgs {
    /// `AGENT [--chain JSON_ARRAY] [PAYLOAD]` in any order (the last word is the payload: Codex
    /// appends it); unknown options are ignored. `None` when help is asked for.
    fn parse(words: &[OsString]) -> Option<Self> {
        let mut parsed = HookArgs::default();
        let mut words = words.iter();
        let mut options = true;
        while let Some(word) = words.next() {
            if options {
                let text = word.to_str().unwrap_or_default();
                match text {
                    "--" => {
                        options = false;
                        continue;
                    }
                    "-h" | "--help" => return None,
                    "--chain" => {
                        parsed.chain = words.next().cloned();
                        continue;
                    }
                    "--config" | "--socket" | "--timeout" | "--resolver" => {
                        words.next();
                        continue;
                    }
                    _ if text.starts_with("--chain=") => {
                        parsed.chain = Some(OsString::from(&text["--chain=".len()..]));
                        continue;
                    }
                    _ if text.starts_with("--") => continue,
                    _ => {}
                }
            }
            if parsed.agent.is_none() {
                parsed.agent = Some(word.clone());
            } else {
                parsed.payload = Some(word.clone());
            }
        }
        Some(parsed)
    }

    /// Sends the payload to the session's wrapper and runs the chained program; every failure
    /// ends it quietly.
    fn run(self) {
        let Some(agent) = self
            .agent
            .as_deref()
            .and_then(OsStr::to_str)
            .and_then(|name| Agent::from_name(name).ok())
        else {
            return;
        };
        let socket = std::env::var_os(SOCKET_ENV).filter(|path| !path.is_empty());
        if socket.is_none() && self.chain.is_none() {
            return;
        }
        let payload = match self.payload {
            Some(payload) => payload.into_vec(),
            None => match read_stdin(
                Instant::now() + STDIN_DEADLINE,
                MAX_REPORT_BYTES - encode(agent, b"").len(),
            ) {
                Some(payload) => payload,
                None => return,
            },
        };
        if let Some(chain) = &self.chain {
            run_chained(chain, &payload);
        }
        if let Some(socket) = socket
            && !payload.is_empty()
        {
            let frame = encode(agent, &payload);
            if frame.len() <= MAX_REPORT_BYTES {
                deliver(PathBuf::from(socket), frame, SOCKET_DEADLINE);
            }
        }
    }
}

/// Standard input to its end, when it ends before `deadline` with at most `limit` bytes (past
/// that, the rest is read and dropped, so the agent's write does not fail).
fn read_stdin(deadline: Instant, limit: usize) -> Option<Vec<u8>> {
    // A descriptor of its own: unbuffered, so `poll` says the truth about what is left.
    let mut input = File::from(io::stdin().as_fd().try_clone_to_owned().ok()?);
    let mut payload = Vec::new();
    let mut chunk = vec![0; 64 * 1024];
    let mut too_large = false;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        match poll(
            &mut [PollFd::new(input.as_fd(), PollFlags::POLLIN)],
            timeout,
        ) {
            Ok(0) => return None,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return None,
        }
        match input.read(&mut chunk) {
            Ok(0) => return (!too_large).then_some(payload),
            Ok(n) if !too_large && payload.len() + n <= limit => {
                payload.extend_from_slice(&chunk[..n]);
            }
            Ok(_) => {
                too_large = true;
                payload = Vec::new();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) => {}
            Err(_) => return None,
        }
    }
}

/// Starts the program of `chain` (a JSON array of strings) with `payload` as its last
/// argument, its stdio on `/dev/null` so it holds none of the agent's pipes, and without the
/// hook socket (a chained `clippy-ctl hook` must not report the event twice). Not waited for.
fn run_chained(chain: &OsStr, payload: &[u8]) {
    let Some(argv) = chain
        .to_str()
        .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
    else {
        return;
    };
    let Some((program, args)) = argv.split_first() else {
        return;
    };
    let _ = Command::new(program)
        .args(args)
        .arg(OsStr::from_bytes(payload))
        .env_remove(SOCKET_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}

/// Connects to `socket` and writes `frame`, giving both together at most `deadline`. The
/// connection is made on a helper thread: a wrapper that does not accept (its backlog full)
/// would block `connect` for ever; when the deadline passes, the thread is left behind and the
/// process exits.
fn deliver(socket: PathBuf, frame: Vec<u8>, deadline: Duration) {
    let (done, finished) = mpsc::channel();
    let sender = std::thread::Builder::new()
        .name("hook".into())
        .spawn(move || {
            let sent = UnixStream::connect(&socket).and_then(|mut stream| {
                stream.set_write_timeout(Some(deadline))?;
                stream.write_all(&frame)
            });
            let _ = done.send(sent);
        });
    if sender.is_ok() {
        let _ = finished.recv_timeout(deadline);
    }
}

// ---------------------------------------------------------------------------------------------
// `hooks install|uninstall|status`
// ---------------------------------------------------------------------------------------------

/// Runs `hooks …` and writes its result (`--json`: one object) or its error; returns how the
/// writing went and the exit code.
pub fn hooks(
    command: &HooksCommand,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> (io::Result<()>, Exit) {
    let env = |name: &str| std::env::var_os(name);
    let done = match command {
        HooksCommand::Install { agent } => install_hooks(agent.into(), &env).map(Done::Changed),
        HooksCommand::Uninstall { agent } => uninstall_hooks(agent.into(), &env).map(Done::Changed),
        HooksCommand::Status => Ok(Done::Status(
            Agent::ALL
                .iter()
                .map(|&agent| status(agent, &env))
                .collect(),
        )),
    };
    match done {
        Ok(done) => (done.render(json, out), Exit::Ok),
        Err(error) => (render_error(&error, json, out, err), exit_code(&error)),
    }
}

impl From<&AgentArg> for Agent {
    fn from(agent: &AgentArg) -> Self {
        match agent {
            AgentArg::Claude => Agent::Claude,
            AgentArg::Codex => Agent::Codex,
            AgentArg::Gemini => Agent::Gemini,
        }
    }
}

/// What `hooks` did or found.
#[derive(Debug)]
enum Done {
    /// `install`, `uninstall`.
    Changed(Change),
    /// `status`: one per agent.
    Status(Vec<AgentStatus>),
}

/// What `install` or `uninstall` did to one settings file.
#[derive(Debug, Default)]
struct Change {
    agent: &'static str,
    /// `install` or `uninstall`.
    action: &'static str,
    path: PathBuf,
    /// The file was written or removed.
    changed: bool,
    /// The backup of the file as it was before install, where one is kept.
    backup: Option<PathBuf>,
    /// Uninstall gave back the file as it was before install.
    restored: bool,
    /// Uninstall removed the file (clippy had created it).
    removed: bool,
    /// Codex: the user's own notify program, chained after clippy's hook.
    chained: Option<Vec<String>>,
}

/// One agent in `status`.
#[derive(Debug)]
struct AgentStatus {
    agent: &'static str,
    path: Option<PathBuf>,
    /// The file exists.
    exists: bool,
    installed: bool,
    backup: Option<PathBuf>,
    /// Why the file could not be read.
    error: Option<String>,
}

fn install_hooks(agent: Agent, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Change, CtlError> {
    let path = settings_path(agent, env)?;
    let backup = backup_path(&path);
    let current = read_text(&path)?;
    let program = std::env::current_exe().map_err(|source| CtlError::Io {
        context: "cannot find the path of clippy-ctl itself, which the hooks run".into(),
        source,
    })?;
    let hook = HookCommand {
        program,
        args: vec!["hook".into()],
    };
    let installed =
        install::install(agent, &hook, &path, current.as_deref()).map_err(settings_error)?;
    let mut change = Change {
        agent: agent.name(),
        action: "install",
        chained: installed.chained,
        ..Change::default()
    };
    if let Edit::Write(text) = installed.edit {
        let mode = file_mode(&path)?;
        // The backup is the file before clippy's first change: taken while none of clippy's
        // entries are in it, kept while they are.
        if let Some(current) = &current
            && !install::is_installed(agent, &path, current).map_err(settings_error)?
        {
            write_atomic(&backup, current.as_bytes(), mode.unwrap_or(NEW_FILE_MODE))?;
        }
        if current.is_none()
            && let Some(dir) = path.parent()
        {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| CtlError::Io {
                    context: format!("cannot create {}", dir.display()),
                    source,
                })?;
        }
        write_atomic(
            &write_target(&path)?,
            text.as_bytes(),
            mode.unwrap_or(NEW_FILE_MODE),
        )?;
        change.changed = true;
    }
    change.backup = exists(&backup)?.then_some(backup);
    change.path = path;
    Ok(change)
}

fn uninstall_hooks(
    agent: Agent,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Change, CtlError> {
    let path = settings_path(agent, env)?;
    let backup = backup_path(&path);
    let current = read_text(&path)?;
    let before = read_text(&backup)?;
    let uninstalled = install::uninstall(agent, &path, current.as_deref(), before.as_deref())
        .map_err(settings_error)?;
    let mut change = Change {
        agent: agent.name(),
        action: "uninstall",
        restored: uninstalled.restored,
        ..Change::default()
    };
    match uninstalled.edit {
        Edit::Unchanged => {}
        Edit::Write(text) => {
            let mode = file_mode(&path)?.unwrap_or(NEW_FILE_MODE);
            write_atomic(&write_target(&path)?, text.as_bytes(), mode)?;
            change.changed = true;
        }
        Edit::Remove => {
            fs::remove_file(&path).map_err(|source| CtlError::Io {
                context: format!("cannot remove {}", path.display()),
                source,
            })?;
            change.changed = true;
            change.removed = true;
        }
    }
    // Once the file is as it was, its backup has served.
    if change.restored && before.is_some() {
        fs::remove_file(&backup).map_err(|source| CtlError::Io {
            context: format!("cannot remove {}", backup.display()),
            source,
        })?;
    }
    change.backup = exists(&backup)?.then_some(backup);
    change.path = path;
    Ok(change)
}

fn status(agent: Agent, env: &dyn Fn(&str) -> Option<OsString>) -> AgentStatus {
    let mut status = AgentStatus {
        agent: agent.name(),
        path: None,
        exists: false,
        installed: false,
        backup: None,
        error: None,
    };
    let path = match settings_path(agent, env) {
        Ok(path) => path,
        Err(error) => {
            status.error = Some(error.to_string());
            return status;
        }
    };
    let backup = backup_path(&path);
    status.backup = backup.exists().then_some(backup);
    match read_text(&path) {
        Ok(None) => {}
        Ok(Some(text)) => {
            status.exists = true;
            match install::is_installed(agent, &path, &text) {
                Ok(installed) => status.installed = installed,
                // The path is shown beside it.
                Err(HooksError::Settings { reason, .. }) => status.error = Some(reason),
                Err(error) => status.error = Some(error.to_string()),
            }
        }
        Err(error) => status.error = Some(error.to_string()),
    }
    status.path = Some(path);
    status
}

fn settings_path(
    agent: Agent,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, CtlError> {
    install::settings_path(agent, env).ok_or_else(|| {
        let over = match agent {
            Agent::Claude => "CLAUDE_CONFIG_DIR",
            Agent::Codex => "CODEX_HOME",
            Agent::Gemini => "GEMINI_CLI_HOME",
        };
        CtlError::Usage(format!(
            "cannot find {agent}'s settings: neither {over} nor HOME is set"
        ))
    })
}

/// A settings file clippy cannot read back is a failure (exit 1), named with the reason.
fn settings_error(error: HooksError) -> CtlError {
    match error {
        HooksError::Settings { path, reason } => CtlError::Io {
            context: path,
            source: io::Error::new(io::ErrorKind::InvalidData, reason),
        },
        other => CtlError::Io {
            context: "hooks".into(),
            source: io::Error::other(other.to_string()),
        },
    }
}

/// `<path>.clippy-backup`.
fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(BACKUP_SUFFIX);
    PathBuf::from(name)
}

/// The file's text, `None` when there is no file.
fn read_text(path: &Path) -> Result<Option<String>, CtlError> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| CtlError::Io {
                context: path.display().to_string(),
                source: io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not UTF-8 text; clippy does not rewrite it",
                ),
            }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CtlError::Io {
            context: format!("cannot read {}", path.display()),
            source,
        }),
    }
}

fn exists(path: &Path) -> Result<bool, CtlError> {
    path.try_exists().map_err(|source| CtlError::Io {
        context: format!("cannot look at {}", path.display()),
        source,
    })
}

/// The permission bits of the file at `path`, `None` when there is none.
fn file_mode(path: &Path) -> Result<Option<u32>, CtlError> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta.permissions().mode() & 0o7777)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CtlError::Io {
            context: format!("cannot read the mode of {}", path.display()),
            source,
        }),
    }
}

/// Where writing `path` goes: through a symbolic link to its target (settings kept in a
/// dotfiles repository stay linked).
fn write_target(path: &Path) -> Result<PathBuf, CtlError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).map_err(|source| CtlError::Io {
                context: format!("cannot follow the link {}", path.display()),
                source,
            })
        }
        _ => Ok(path.to_owned()),
    }
}

/// Writes `bytes` to `path` with `mode` all at once: a temporary file in the same directory,
/// synced, then renamed over it.
fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CtlError> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".clippy-tmp-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let _ = fs::remove_file(&temp);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&temp)
        .and_then(|mut file| {
            // `mode` went through the umask; the file keeps the mode it had.
            file.set_permissions(fs::Permissions::from_mode(mode))?;
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&temp, path));
    written.map_err(|source| {
        let _ = fs::remove_file(&temp);
        CtlError::Io {
            context: format!("cannot write {}", path.display()),
            source,
        }
    })
}

impl Done {
    fn render(&self, json: bool, out: &mut dyn Write) -> io::Result<()> {
        if json {
            let value = match self {
                Done::Changed(change) => change.json(),
                Done::Status(agents) => {
                    json!({ "agents": agents.iter().map(AgentStatus::json).collect::<Vec<_>>() })
                }
            };
            serde_json::to_writer(&mut *out, &value)?;
            return out.write_all(b"\n");
        }
        match self {
            Done::Changed(change) => writeln!(out, "{}", change.sentence()),
            Done::Status(agents) => {
                for agent in agents {
                    writeln!(out, "{}", agent.line())?;
                }
                Ok(())
            }
        }
    }
}

fn path_json(path: Option<&PathBuf>) -> Value {
    path.map_or(Value::Null, |path| path.display().to_string().into())
}

fn shown(path: &Path) -> String {
    clean(&path.display().to_string())
}

impl Change {
    fn json(&self) -> Value {
        json!({
            "agent": self.agent,
            "action": self.action,
            "path": self.path.display().to_string(),
            "changed": self.changed,
            "restored": self.restored,
            "removed": self.removed,
            "backup": path_json(self.backup.as_ref()),
            "chained": self.chained,
        })
    }

    fn sentence(&self) -> String {
        let (agent, path) = (self.agent, shown(&self.path));
        let mut sentence = match (self.action, self.changed) {
            ("install", false) => {
                format!("the {agent} hooks are already installed in {path}; nothing changed")
            }
            ("install", true) => format!("installed the {agent} hooks in {path}"),
            (_, false) => format!("no clippy hooks in {path}; nothing changed"),
            _ if self.removed => {
                format!("removed the {agent} hooks: {path} is gone again, as clippy had created it")
            }
            _ if self.restored => format!(
                "removed the {agent} hooks from {path}: it is back as it was before install"
            ),
            _ => format!(
                "removed the {agent} hooks from {path}; the rest of the file stays as you left it"
            ),
        };
        if let Some(user) = &self.chained {
            sentence.push_str(&format!(
                "; your own notify ({}) is commented out there and runs after clippy's hook",
                clean(&user.join(" "))
            ));
        }
        if let Some(backup) = &self.backup {
            sentence.push_str(&format!(
                " (the file as it was before install: {})",
                shown(backup)
            ));
        }
        sentence
    }
}

impl AgentStatus {
    fn json(&self) -> Value {
        json!({
            "agent": self.agent,
            "path": path_json(self.path.as_ref()),
            "exists": self.exists,
            "installed": self.installed,
            "backup": path_json(self.backup.as_ref()),
            "error": self.error,
        })
    }

    /// `claude  installed      /home/u/.claude/settings.json`.
    fn line(&self) -> String {
        let state = match (&self.error, self.installed) {
            (Some(_), _) => "unreadable",
            (None, true) => "installed",
            (None, false) => "not installed",
        };
        let mut line = format!("{:<7} {state:<14}", self.agent);
        if let Some(path) = &self.path {
            line.push_str(&shown(path));
            if !self.exists && self.error.is_none() {
                line.push_str(" (no file)");
            }
        }
        if let Some(error) = &self.error {
            line.push_str(&format!(" ({})", clean(error)));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_hook_is_found_after_global_options_only() {
        let args = words(&[
            "clippy-ctl",
            "--json",
            "--timeout",
            "5",
            "hook",
            "codex",
            "{}",
        ]);
        assert_eq!(hook_words(&args), Some(&args[5..]));
        for other in [
            &["clippy-ctl", "hooks", "status"][..],
            &["clippy-ctl", "list-sessions", "hook"],
            &["clippy-ctl", "--help", "hook"],
            &["clippy-ctl"],
        ] {
            assert_eq!(hook_words(&words(other)), None, "{other:?}");
        }
    }

    #[test]
    fn hook_arguments_never_fail() {
        let parsed = |args: &[&str]| HookArgs::parse(&words(args));
        assert_eq!(
            parsed(&["codex", "--chain", "[\"x\"]", "{\"type\":1}"]),
            Some(HookArgs {
                agent: Some("codex".into()),
                chain: Some("[\"x\"]".into()),
                payload: Some("{\"type\":1}".into()),
            })
        );
        assert_eq!(
            parsed(&["--chain=[]", "--json", "claude"]),
            Some(HookArgs {
                agent: Some("claude".into()),
                chain: Some("[]".into()),
                payload: None,
            })
        );
        assert_eq!(parsed(&[]), Some(HookArgs::default()));
        assert_eq!(
            parsed(&["gemini", "--", "--help"]).and_then(|a| a.payload),
            Some("--help".into())
        );
        assert_eq!(parsed(&["claude", "--help"]), None);
    }

    #[test]
    fn sentences_say_what_changed_and_where() {
        let change = Change {
            agent: "codex",
            action: "install",
            path: PathBuf::from("/h/.codex/config.toml"),
            changed: true,
            backup: Some(PathBuf::from("/h/.codex/config.toml.clippy-backup")),
            chained: Some(vec!["notify-send".into(), "Codex".into()]),
            ..Change::default()
        };
        assert_eq!(
            change.sentence(),
            "installed the codex hooks in /h/.codex/config.toml; your own notify (notify-send \
             Codex) is commented out there and runs after clippy's hook (the file as it was \
             before install: /h/.codex/config.toml.clippy-backup)"
        );
    }
}
