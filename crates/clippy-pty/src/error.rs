//! The crate's one error type.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::Signal;

/// Everything that can go wrong in `clippy-pty`.
///
/// Each variant names the operation (and, where there is one, the path, program, process or
/// signal) so that a message built from it tells the user what to look at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PtyError {
    /// Opening a new PTY pair failed (`posix_openpt`, `grantpt`, `unlockpt` or `ptsname_r`).
    #[error(
        "cannot open a new PTY pair: {call} failed: {source} (is /dev/ptmx available and devpts mounted?)"
    )]
    Open {
        /// The call that failed.
        call: &'static str,
        /// The OS error.
        source: io::Error,
    },

    /// Opening the slave side of a new PTY pair failed.
    #[error("cannot open the PTY slave {}: {source}", .path.display())]
    OpenSlave {
        /// The slave's device path, e.g. `/dev/pts/3`.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },

    /// An operation on the PTY master failed (`TIOCSWINSZ`, `TIOCGWINSZ`, `fcntl`).
    #[error("{call} on the PTY master failed: {source}")]
    Master {
        /// The call that failed.
        call: &'static str,
        /// The OS error.
        source: io::Error,
    },

    /// The child program could not be started: not found, not executable, or the session /
    /// controlling-terminal setup in the child failed. `source.kind()` is
    /// [`io::ErrorKind::NotFound`] for a missing program and
    /// [`io::ErrorKind::PermissionDenied`] for one that is not executable.
    #[error("cannot start `{}`: {source}", .program.to_string_lossy())]
    Spawn {
        /// The program as given to [`CommandSpec::new`](crate::CommandSpec::new).
        program: OsString,
        /// Why it could not be started.
        source: io::Error,
    },

    /// The working directory requested for the child is missing or not a directory.
    #[error(
        "cannot start `{}`: working directory {} is not usable: {source}",
        .program.to_string_lossy(),
        .path.display()
    )]
    Cwd {
        /// The program that was to be started.
        program: OsString,
        /// The working directory that was asked for.
        path: PathBuf,
        /// Why it cannot be used.
        source: io::Error,
    },

    /// Waiting for the child failed.
    #[error("waiting for child process {pid} failed: {source}")]
    Wait {
        /// The child's process ID.
        pid: u32,
        /// The OS error.
        source: io::Error,
    },

    /// Sending a signal failed (other than the target being gone, which is not an error).
    #[error("sending {signal} to {target} failed: {source}")]
    Signal {
        /// The signal.
        signal: Signal,
        /// Who it was sent to.
        target: SignalTarget,
        /// The OS error.
        source: io::Error,
    },

    /// Reading or changing the terminal's attributes failed (`tcgetattr`, `tcsetattr`, `dup`).
    #[error("{call} on the terminal failed: {source}")]
    Terminal {
        /// The call that failed.
        call: &'static str,
        /// The OS error.
        source: io::Error,
    },

    /// Installing or changing signal handling failed (`pipe2`, `sigaction`, `sigprocmask`,
    /// `raise`, or registering the handler).
    #[error("setting up {signal} handling failed: {call}: {source}")]
    SignalSetup {
        /// The signal concerned.
        signal: Signal,
        /// The call that failed.
        call: &'static str,
        /// The OS error.
        source: io::Error,
    },

    /// The signal cannot be caught (`SIGKILL`, `SIGSTOP`) or must not be, because it reports a
    /// fault in the process itself (`SIGSEGV`, `SIGILL`, `SIGFPE`).
    #[error("{signal} cannot be delivered through a signal pipe")]
    UncatchableSignal {
        /// The signal asked for.
        signal: Signal,
    },

    /// Reading the signal pipe failed.
    #[error("reading the signal pipe failed: {source}")]
    SignalPipe {
        /// The OS error.
        source: io::Error,
    },
}

/// Who a signal was sent to, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignalTarget {
    /// One process (`kill`).
    Process(i32),
    /// A process group (`killpg`).
    Group(i32),
}

impl fmt::Display for SignalTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignalTarget::Process(pid) => write!(f, "process {pid}"),
            SignalTarget::Group(pgid) => write!(f, "process group {pgid}"),
        }
    }
}

/// Converts a nix errno into an `io::Error` (no allocation).
pub(crate) fn os(errno: nix::errno::Errno) -> io::Error {
    io::Error::from(errno)
}
