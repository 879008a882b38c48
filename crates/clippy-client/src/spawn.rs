//! Starting a session with no terminal: `clippy-session --detached`, which leaves this
//! process's session and terminal and says one line once the broker knows the session
//! (`ready <id>`) or why it could not start (`error <why>`).

use std::ffi::OsString;
use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clippy_proto::ErrorReason;

use crate::error::{ArgumentError, ClientError};

/// The longest ready line read (an error message can be long; an id is short).
const MAX_LINE: usize = 64 * 1024;

/// A session to start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spawn {
    /// The command and its arguments (none: the wrapper's shell, with `shell_integration`).
    pub command: Vec<OsString>,
    /// Its name.
    pub name: Option<String>,
    /// The detection preset.
    pub preset: Option<String>,
    /// A prompt pattern (a custom preset).
    pub pattern: Option<String>,
    /// A configuration file for the wrapper.
    pub config: Option<PathBuf>,
    /// Its working directory (else this process's).
    pub cwd: Option<PathBuf>,
    /// Variables added to its environment.
    pub env: Vec<(OsString, OsString)>,
    /// Its terminal size, `COLSxROWS`.
    pub size: String,
    /// The shell's prompt marks wired in.
    pub shell_integration: bool,
    /// The agent's own hooks left out.
    pub no_agent_hooks: bool,
    /// Its turns kept out of the history store.
    pub no_history: bool,
}

/// Starts the session and returns its id once the broker knows it, within `timeout`; a
/// session not registered by then is stopped (as a terminal's hangup would stop it).
///
/// # Errors
///
/// [`ArgumentError`]s for a spawn without a command, a working directory that is not one, or
/// arguments `clippy-session` refused; [`ClientError::Broker`] `timeout` when it was not
/// registered in time; [`ClientError::Spawn`] when it did not start, saying why.
pub fn spawn(request: &Spawn, timeout: Duration) -> Result<String, ClientError> {
    spawn_child(request, timeout).map(|(id, _wrapper)| id)
}

/// As [`spawn`], and the wrapper's process too: it stays a child of this process (it leaves
/// only its session and terminal), so a process that lives on after the spawn (`clippy-mcp`)
/// waits for it when it ends, leaving no zombie.
///
/// # Errors
///
/// As [`spawn`].
pub fn spawn_child(request: &Spawn, timeout: Duration) -> Result<(String, Child), ClientError> {
    if request.command.is_empty() && !request.shell_integration {
        return Err(ArgumentError::NoCommand.into());
    }
    if let Some(cwd) = &request.cwd
        && !cwd.is_dir()
    {
        return Err(ArgumentError::NotADirectory(cwd.clone()).into());
    }
    let mut command = Command::new(session_program());
    command
        .arg("--detached")
        .arg("--size")
        .arg(&request.size)
        .args(session_flags(request))
        .arg("--")
        .args(&request.command)
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // Until it detaches (when its stderr becomes the session's log), what it says is read
        // here if it ends without a word on stdout.
        .stderr(Stdio::piped());
    if let Some(cwd) = &request.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|source| ClientError::Io {
        context: format!(
            "cannot run {} (it is installed beside clippy-ctl)",
            session_program().display()
        ),
        source,
    })?;
    let why = match read_line(&mut child, timeout) {
        Ok(Some(line)) => match line.split_once(' ') {
            Some(("ready", id)) if !id.is_empty() => return Ok((id.to_owned(), child)),
            Some(("error", why)) => why.to_owned(),
            _ => format!("clippy-session said {line:?}"),
        },
        // Ended without a word: what it printed says why.
        Ok(None) => {
            let mut said = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                let _ = stderr.read_to_string(&mut said);
            }
            let said = said.trim().trim_start_matches("clippy-session: ");
            if said.is_empty() {
                "clippy-session ended before registering".to_owned()
            } else {
                said.to_owned()
            }
        }
        Err(e) => {
            stop(&mut child);
            return Err(e);
        }
    };
    // It ends right after saying why; its exit code says whose fault it was.
    let usage = child.wait().is_ok_and(|status| status.code() == Some(4));
    Err(if usage {
        ArgumentError::SessionRefused(why).into()
    } else {
        ClientError::Spawn(format!("the session did not start: {why}"))
    })
}

/// Not registered in time: the wrapper is stopped as a terminal's hangup would (it ends its
/// program and removes its folder), then killed if that takes more than a few seconds.
fn stop(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGHUP,
        );
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The wrapper's flags for `request`.
fn session_flags(request: &Spawn) -> Vec<OsString> {
    let mut flags: Vec<OsString> = Vec::new();
    let mut with = |flag: &str, value: Option<OsString>| {
        if let Some(value) = value {
            flags.push(flag.into());
            flags.push(value);
        }
    };
    with("--name", request.name.clone().map(Into::into));
    with("--preset", request.preset.clone().map(Into::into));
    with("--pattern", request.pattern.clone().map(Into::into));
    with("--config", request.config.clone().map(Into::into));
    if request.shell_integration {
        flags.push("--shell-integration".into());
    }
    if request.no_agent_hooks {
        flags.push("--no-agent-hooks".into());
    }
    if request.no_history {
        flags.push("--no-history".into());
    }
    flags
}

/// `clippy-session` beside this executable, else on `PATH`.
fn session_program() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("clippy-session")))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("clippy-session"))
}

/// The wrapper's first line, within `timeout`; `None` if it ended without one.
fn read_line(child: &mut Child, timeout: Duration) -> Result<Option<String>, ClientError> {
    let Some(mut pipe) = child.stdout.take() else {
        return Err(ClientError::Spawn(
            "the session's ready channel was not opened".into(),
        ));
    };
    let deadline = Instant::now() + timeout;
    let mut line = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = line.iter().position(|&b| b == b'\n') {
            line.truncate(end);
            return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ClientError::Broker {
                reason: ErrorReason::Timeout,
                message: format!(
                    "the session was not registered within {} ms (raise --timeout?); it was stopped",
                    timeout.as_millis()
                ),
                resume_cursor: None,
            });
        }
        let mut fds = [nix::poll::PollFd::new(
            pipe.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let wait = nix::poll::PollTimeout::try_from(left).unwrap_or(nix::poll::PollTimeout::MAX);
        match nix::poll::poll(&mut fds, wait) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => {
                return Err(ClientError::Spawn(format!(
                    "cannot wait for the session: {e}"
                )));
            }
        }
        match pipe.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) if line.len() + n <= MAX_LINE => line.extend_from_slice(&buf[..n]),
            Ok(_) => {
                return Err(ClientError::Spawn(
                    "the session's ready line is too long".into(),
                ));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(ClientError::Spawn(format!(
                    "cannot read the session's ready line: {e}"
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawn_needs_a_command_and_a_real_folder() {
        let timeout = Duration::from_secs(1);
        assert!(matches!(
            spawn(&Spawn::default(), timeout),
            Err(ClientError::Argument(ArgumentError::NoCommand))
        ));
        let request = Spawn {
            command: vec!["true".into()],
            cwd: Some("/nonexistent/folder".into()),
            ..Spawn::default()
        };
        assert!(matches!(
            spawn(&request, timeout),
            Err(ClientError::Argument(ArgumentError::NotADirectory(_)))
        ));
    }

    #[test]
    fn flags_follow_the_request() {
        let request = Spawn {
            name: Some("rev".into()),
            config: Some("/c.toml".into()),
            shell_integration: true,
            no_history: true,
            ..Spawn::default()
        };
        let flags: Vec<String> = session_flags(&request)
            .into_iter()
            .map(|f| f.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            flags,
            [
                "--name",
                "rev",
                "--config",
                "/c.toml",
                "--shell-integration",
                "--no-history"
            ]
        );
    }
}
