//! A child running on a PTY, and how it ended.

use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::sync::Weak;

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg};
use nix::unistd::Pid;

use crate::Signal;
use crate::error::{PtyError, SignalTarget, os};
use crate::pty::foreground_group;

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExitStatus {
    /// It called `exit` with this code.
    Exited(i32),
    /// It was killed by a signal.
    Signaled {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
}

impl ExitStatus {
    /// The status a shell would report in `$?`: the exit code, or 128 + the signal number.
    #[must_use]
    pub fn code_for_shell(&self) -> i32 {
        match *self {
            ExitStatus::Exited(code) => code,
            ExitStatus::Signaled { signal, .. } => 128 + signal,
        }
    }

    /// Whether the child exited with code 0.
    #[must_use]
    pub fn success(&self) -> bool {
        *self == ExitStatus::Exited(0)
    }

    /// The signal that killed the child, if one did and it is a known signal.
    #[must_use]
    pub fn signal(&self) -> Option<Signal> {
        match *self {
            ExitStatus::Exited(_) => None,
            ExitStatus::Signaled { signal, .. } => Signal::try_from(signal).ok(),
        }
    }
}

impl From<std::process::ExitStatus> for ExitStatus {
    fn from(status: std::process::ExitStatus) -> Self {
        if let Some(signal) = status.signal() {
            ExitStatus::Signaled {
                signal,
                core_dumped: status.core_dumped(),
            }
        } else {
            // `wait` only reports terminated children, so one of the two is always set.
            ExitStatus::Exited(status.code().unwrap_or_else(|| status.into_raw()))
        }
    }
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExitStatus::Exited(code) => write!(f, "exited with code {code}"),
            ExitStatus::Signaled {
                signal,
                core_dumped,
            } => {
                match Signal::try_from(signal) {
                    Ok(name) => write!(f, "killed by {name} (signal {signal})")?,
                    Err(_) => write!(f, "killed by signal {signal}")?,
                }
                if core_dumped {
                    f.write_str(", core dumped")?;
                }
                Ok(())
            }
        }
    }
}

/// A child started by [`PtySlave::spawn`](crate::PtySlave::spawn).
///
/// Dropping a `Child` neither kills nor reaps it: call [`wait`](Self::wait) (or
/// [`try_wait`](Self::try_wait) until it returns `Some`), after [`kill`](Self::kill) if need be.
#[derive(Debug)]
pub struct Child {
    inner: std::process::Child,
    pid: i32,
    master: Weak<OwnedFd>,
    status: Option<ExitStatus>,
}

impl Child {
    pub(crate) fn new(inner: std::process::Child, master: Weak<OwnedFd>) -> Self {
        // PIDs fit an i32 (pid_t) on every Unix.
        let pid = i32::try_from(inner.id()).unwrap_or(i32::MAX);
        Child {
            inner,
            pid,
            master,
            status: None,
        }
    }

    /// The child's process ID.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.inner.id()
    }

    /// The child's process group ID. The child is a session leader, so this is its PID.
    #[must_use]
    pub fn process_group(&self) -> u32 {
        self.inner.id()
    }

    /// Reaps the child if it has exited, without blocking.
    ///
    /// # Errors
    ///
    /// [`PtyError::Wait`] when `waitpid` fails.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, PtyError> {
        if self.status.is_none() {
            let status = self.inner.try_wait().map_err(|source| PtyError::Wait {
                pid: self.pid(),
                source,
            })?;
            self.status = status.map(ExitStatus::from);
        }
        Ok(self.status)
    }

    /// Blocks until the child exits and reaps it.
    ///
    /// # Errors
    ///
    /// [`PtyError::Wait`] when `waitpid` fails.
    pub fn wait(&mut self) -> Result<ExitStatus, PtyError> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = ExitStatus::from(self.inner.wait().map_err(|source| PtyError::Wait {
            pid: self.pid(),
            source,
        })?);
        self.status = Some(status);
        Ok(status)
    }

    /// Sends `signal` to the terminal's **foreground** process group — the group a keypress like
    /// Ctrl+C would reach on a real terminal — or, when that cannot be found, to the child's own
    /// process group.
    ///
    /// Why the foreground group: with a job-control shell as the child, the shell puts the running
    /// command in a process group of its own and makes it the foreground group; the shell itself
    /// ignores `SIGINT` while it waits. Forwarding the wrapper's `SIGINT` to the shell's group
    /// would do nothing; sending it to the foreground group interrupts the command, as the user's
    /// terminal would have. Without job control (a plain program, `sh -c`), the foreground group
    /// is the child's own group, so both choices agree.
    ///
    /// The foreground group is read with `tcgetpgrp` on the PTY master, which needs the
    /// [`PtyMaster`](crate::PtyMaster) to still be open; otherwise, or when the terminal has no
    /// foreground group, the child's group is used. Once the child has been reaped (by
    /// [`wait`](Self::wait) or [`try_wait`](Self::try_wait)) that fallback is skipped, since its
    /// process group ID may by then belong to someone else. A group that no longer exists is not
    /// an error.
    ///
    /// # Errors
    ///
    /// [`PtyError::Signal`] when `killpg` fails for another reason than the group being gone.
    pub fn signal_group(&self, signal: Signal) -> Result<(), PtyError> {
        let foreground = self
            .master
            .upgrade()
            .and_then(|master| foreground_group(master.as_fd()));
        match foreground {
            Some(pgid) => send(signal, SignalTarget::Group(pgid_to_i32(pgid))),
            None => self.signal_own_group(signal),
        }
    }

    /// Sends `signal` to the child's own process group (the child and whatever it started that
    /// did not move to another group), regardless of which group is in the foreground.
    /// Does nothing once the child has been reaped.
    ///
    /// # Errors
    ///
    /// [`PtyError::Signal`] when `killpg` fails for another reason than the group being gone.
    pub fn signal_own_group(&self, signal: Signal) -> Result<(), PtyError> {
        if self.status.is_some() {
            return Ok(());
        }
        send(signal, SignalTarget::Group(self.pid))
    }

    /// Sends `signal` to the child process only. Does nothing once it has been reaped.
    ///
    /// # Errors
    ///
    /// [`PtyError::Signal`] when `kill` fails for another reason than the process being gone.
    pub fn signal(&self, signal: Signal) -> Result<(), PtyError> {
        if self.status.is_some() {
            return Ok(());
        }
        send(signal, SignalTarget::Process(self.pid))
    }

    /// Kills the child's process group with `SIGKILL` (the child and everything it started in
    /// its group). It still has to be reaped with [`wait`](Self::wait).
    /// Does nothing once the child has been reaped.
    ///
    /// # Errors
    ///
    /// [`PtyError::Signal`] when `killpg` fails for another reason than the group being gone.
    pub fn kill(&self) -> Result<(), PtyError> {
        self.signal_own_group(Signal::SIGKILL)
    }
}

fn pgid_to_i32(pgid: u32) -> i32 {
    i32::try_from(pgid).unwrap_or(i32::MAX)
}

fn send(signal: Signal, target: SignalTarget) -> Result<(), PtyError> {
    let result = match target {
        SignalTarget::Process(pid) => kill(Pid::from_raw(pid), signal),
        SignalTarget::Group(pgid) => killpg(Pid::from_raw(pgid), signal),
    };
    match result {
        Ok(()) | Err(Errno::ESRCH) => Ok(()),
        Err(e) => Err(PtyError::Signal {
            signal,
            target,
            source: os(e),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_codes() {
        assert_eq!(ExitStatus::Exited(3).code_for_shell(), 3);
        let killed = ExitStatus::Signaled {
            signal: 9,
            core_dumped: false,
        };
        assert_eq!(killed.code_for_shell(), 137);
        assert_eq!(killed.signal(), Some(Signal::SIGKILL));
        assert_eq!(killed.to_string(), "killed by SIGKILL (signal 9)");
        assert_eq!(ExitStatus::Exited(3).to_string(), "exited with code 3");
        assert!(ExitStatus::Exited(0).success());
    }

    #[test]
    fn from_std_status() {
        let exited = std::process::ExitStatus::from_raw(3 << 8);
        assert_eq!(ExitStatus::from(exited), ExitStatus::Exited(3));
        let cored = std::process::ExitStatus::from_raw(6 | 0x80);
        assert_eq!(
            ExitStatus::from(cored),
            ExitStatus::Signaled {
                signal: 6,
                core_dumped: true
            }
        );
    }
}
