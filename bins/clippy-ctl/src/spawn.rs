//! `clippy-ctl spawn`: a session with no terminal. It runs `clippy-session --detached`, which
//! leaves this process's session and terminal, and waits for its one line: `ready <id>` once
//! the broker knows the session, or `error <why>`.

use std::ffi::OsString;
use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clippy_proto::ErrorReason;

use crate::cli::{Cli, SpawnArgs};
use crate::error::CtlError;

/// The longest ready line read (an error message can be long; an id is short).
const MAX_LINE: usize = 64 * 1024;

/// Starts the session and returns its id once it is registered.
pub fn spawn(cli: &Cli, args: &SpawnArgs) -> Result<String, CtlError> {
    if args.command.is_empty() && !args.shell_integration {
        return Err(CtlError::Usage(
            "no command given: clippy-ctl spawn [OPTIONS] -- COMMAND [ARGS…]".into(),
        ));
    }
    if cli.socket.is_some() {
        return Err(CtlError::Usage(
            "spawn registers its session with the broker of $XDG_RUNTIME_DIR; --socket cannot \
             point it at another"
                .into(),
        ));
    }
    if let Some(cwd) = &args.cwd
        && !cwd.is_dir()
    {
        return Err(CtlError::Usage(format!(
            "--cwd {}: not a directory",
            cwd.display()
        )));
    }
    let mut command = Command::new(session_program());
    command
        .arg("--detached")
        .arg("--size")
        .arg(&args.size)
        .args(session_flags(cli, args))
        .arg("--")
        .args(&args.command)
        .envs(args.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // Until it detaches (when its stderr becomes the session's log), what it says is read
        // here if it ends without a word on stdout.
        .stderr(Stdio::piped());
    if let Some(cwd) = &args.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|source| CtlError::Io {
        context: format!(
            "cannot run {} (it is installed beside clippy-ctl)",
            session_program().display()
        ),
        source,
    })?;
    let line = read_line(&mut child, Duration::from_millis(cli.timeout));
    let why = match line {
        Ok(Some(line)) => match line.split_once(' ') {
            Some(("ready", id)) if !id.is_empty() => return Ok(id.to_owned()),
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
        CtlError::Usage(why)
    } else {
        CtlError::Session(format!("the session did not start: {why}"))
    })
}

/// Not registered in time: the wrapper is stopped as a terminal's hangup would (it ends its
/// program and removes its folder), then killed if that takes more than a few seconds.
fn stop(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP);
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

/// The wrapper's flags from spawn's own.
fn session_flags(cli: &Cli, args: &SpawnArgs) -> Vec<OsString> {
    let mut flags: Vec<OsString> = Vec::new();
    let mut with = |flag: &str, value: Option<OsString>| {
        if let Some(value) = value {
            flags.push(flag.into());
            flags.push(value);
        }
    };
    with("--name", args.name.clone().map(Into::into));
    with("--preset", args.preset.clone().map(Into::into));
    with("--pattern", args.pattern.clone().map(Into::into));
    with("--config", cli.config.clone().map(Into::into));
    if args.shell_integration {
        flags.push("--shell-integration".into());
    }
    if args.no_agent_hooks {
        flags.push("--no-agent-hooks".into());
    }
    if args.no_history {
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
fn read_line(child: &mut Child, timeout: Duration) -> Result<Option<String>, CtlError> {
    let Some(mut pipe) = child.stdout.take() else {
        return Err(CtlError::Session(
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
            return Err(CtlError::Broker {
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
                return Err(CtlError::Session(format!(
                    "cannot wait for the session: {e}"
                )));
            }
        }
        match pipe.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) if line.len() + n <= MAX_LINE => line.extend_from_slice(&buf[..n]),
            Ok(_) => {
                return Err(CtlError::Session(
                    "the session's ready line is too long".into(),
                ));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(CtlError::Session(format!(
                    "cannot read the session's ready line: {e}"
                )));
            }
        }
    }
}
