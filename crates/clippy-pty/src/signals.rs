//! Signals for the wrapper's event loop: a readable fd that reports signals in arrival order,
//! suspending the wrapper itself, and dying of the child's signal.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{SigSet, SigmaskHow, raise, sigprocmask};
use signal_hook::SigId;

use crate::Signal;
use crate::error::{PtyError, os};
use crate::sys;

/// The signals a PTY wrapper handles: `SIGWINCH` (resize the PTY), `SIGINT`, `SIGTERM`, `SIGHUP`,
/// `SIGQUIT` (forward to the child), `SIGTSTP`, `SIGCONT` (suspend / resume), `SIGCHLD` (the
/// child changed state).
pub const WRAPPER_SIGNALS: [Signal; 8] = [
    Signal::SIGWINCH,
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGTSTP,
    Signal::SIGCONT,
    Signal::SIGCHLD,
];

/// Signals that must not be caught this way: uncatchable, or faults of the process itself.
const FORBIDDEN: [Signal; 5] = [
    Signal::SIGKILL,
    Signal::SIGSTOP,
    Signal::SIGSEGV,
    Signal::SIGILL,
    Signal::SIGFPE,
];

/// Delivers signals to an event loop through a self-pipe.
///
/// The handler of each registered signal writes the signal's number as one byte into a
/// non-blocking pipe; the read end is what [`AsRawFd`] exposes, to be registered for
/// readability (e.g. `mio::unix::SourceFd(&pipe.as_raw_fd())`). When it is readable,
/// [`drain`](Self::drain) returns the signals in the order they arrived, each delivery once:
/// `SIGTSTP` then `SIGCONT` comes out as exactly that, and a `SIGWINCH` between two `SIGINT`s is
/// not lost. (The kernel itself merges deliveries of one signal that arrive while that signal is
/// pending, so N quick `SIGWINCH`es may come out as fewer; repeated ones are all reported
/// otherwise, and callers may coalesce.)
///
/// Handlers are process-wide. Creating the pipe replaces the signals' default actions — e.g.
/// `SIGINT` and `SIGTERM` no longer terminate the process, `SIGTSTP` no longer stops it
/// (see [`suspend_self`]) — for as long as the process lives: dropping the pipe unregisters the
/// handlers, after which those signals are ignored rather than restored to their defaults (a
/// limitation of signal-hook). A wrapper creates one `SignalPipe` at start and keeps it.
#[derive(Debug)]
pub struct SignalPipe {
    read: OwnedFd,
    ids: Vec<SigId>,
    signals: Vec<Signal>,
}

impl SignalPipe {
    /// Registers [`WRAPPER_SIGNALS`].
    ///
    /// # Errors
    ///
    /// See [`with_signals`](Self::with_signals).
    ///
    /// # Example
    ///
    /// ```
    /// use clippy_pty::{Signal, SignalPipe};
    ///
    /// let signals = SignalPipe::new()?;
    /// // The event loop would poll `signals.as_raw_fd()` for readability.
    /// nix::sys::signal::raise(Signal::SIGWINCH)?;
    /// assert_eq!(signals.drain()?, vec![Signal::SIGWINCH]);
    /// assert!(signals.drain()?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Result<Self, PtyError> {
        Self::with_signals(&WRAPPER_SIGNALS)
    }

    /// Registers the given signals.
    ///
    /// # Errors
    ///
    /// [`PtyError::UncatchableSignal`] for `SIGKILL`, `SIGSTOP`, `SIGSEGV`, `SIGILL` or `SIGFPE`;
    /// [`PtyError::SignalSetup`] when the pipe cannot be created or a handler cannot be
    /// installed (handlers installed before the failure are removed again).
    pub fn with_signals(signals: &[Signal]) -> Result<Self, PtyError> {
        if let Some(&signal) = signals.iter().find(|s| FORBIDDEN.contains(s)) {
            return Err(PtyError::UncatchableSignal { signal });
        }
        let first = signals.first().copied().unwrap_or(Signal::SIGCHLD);
        let (read, write) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK).map_err(|e| {
                PtyError::SignalSetup {
                    signal: first,
                    call: "pipe2",
                    source: os(e),
                }
            })?;
        let write = Arc::new(write);
        let mut pipe = SignalPipe {
            read,
            ids: Vec::with_capacity(signals.len()),
            signals: Vec::with_capacity(signals.len()),
        };
        for &signal in signals {
            if pipe.signals.contains(&signal) {
                continue;
            }
            // On error `pipe` is dropped, which unregisters what was registered so far.
            let id = sys::register_signal_byte(signal, Arc::clone(&write)).map_err(|source| {
                PtyError::SignalSetup {
                    signal,
                    call: "sigaction",
                    source,
                }
            })?;
            pipe.ids.push(id);
            pipe.signals.push(signal);
        }
        Ok(pipe)
    }

    /// The signals this pipe reports.
    #[must_use]
    pub fn signals(&self) -> &[Signal] {
        &self.signals
    }

    /// Takes every signal delivered since the last call, oldest first. Returns an empty vector
    /// when there is none; never blocks.
    ///
    /// # Errors
    ///
    /// [`PtyError::SignalPipe`] when reading the pipe fails.
    pub fn drain(&self) -> Result<Vec<Signal>, PtyError> {
        let mut out = Vec::new();
        self.drain_into(&mut out)?;
        Ok(out)
    }

    /// Like [`drain`](Self::drain), appending to `out` (no allocation once `out` is big enough).
    /// Returns how many signals were appended.
    ///
    /// # Errors
    ///
    /// [`PtyError::SignalPipe`] when reading the pipe fails.
    pub fn drain_into(&self, out: &mut Vec<Signal>) -> Result<usize, PtyError> {
        let before = out.len();
        let mut buf = [0u8; 64];
        loop {
            match nix::unistd::read(&self.read, &mut buf) {
                Ok(0) | Err(Errno::EAGAIN) => break,
                Ok(n) => out.extend(
                    buf[..n]
                        .iter()
                        .filter_map(|&b| Signal::try_from(i32::from(b)).ok()),
                ),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(PtyError::SignalPipe { source: os(e) }),
            }
        }
        Ok(out.len() - before)
    }
}

impl AsFd for SignalPipe {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }
}

impl AsRawFd for SignalPipe {
    fn as_raw_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Stops the calling process the way `SIGTSTP` would have without a handler, and returns once
/// it has been continued (`SIGCONT`, e.g. the user's shell running `fg`).
///
/// It sets `SIGTSTP` to its default action, unblocks it in the calling thread, raises it, and
/// once resumed reinstalls the previous handler (e.g. the [`SignalPipe`]'s) and signal mask.
/// Restoring the terminal first, and re-entering raw mode afterwards, is the caller's job; a
/// [`SignalPipe`] watching `SIGCONT` reports the resume.
///
/// If the process group is orphaned (its parent is gone or in another session), the kernel
/// discards the stop and this returns at once, as POSIX requires.
///
/// # Errors
///
/// [`PtyError::SignalSetup`] when changing the disposition or mask or raising fails; the
/// previous handler is reinstalled in every case where it was replaced.
pub fn suspend_self() -> Result<(), PtyError> {
    let signal = Signal::SIGTSTP;
    let err = |call| {
        move |e| PtyError::SignalSetup {
            signal,
            call,
            source: os(e),
        }
    };
    let previous = sys::set_default_action(signal).map_err(err("sigaction"))?;
    let mut only = SigSet::empty();
    only.add(signal);
    let mut old_mask = SigSet::empty();
    let stopped = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), Some(&mut old_mask))
        .map_err(err("sigprocmask"))
        // The process stops inside this call and continues from here.
        .and_then(|()| raise(signal).map_err(err("raise")));
    let mask_restored =
        sigprocmask(SigmaskHow::SIG_SETMASK, Some(&old_mask), None).map_err(err("sigprocmask"));
    let handler_restored = sys::restore_action(signal, &previous).map_err(err("sigaction"));
    stopped.and(mask_restored).and(handler_restored)
}

/// Terminates the calling process with `signal`, the way the child died, so that the wrapper's
/// parent (a shell, a script) sees the same status.
///
/// It sets `signal` to its default action, unblocks it, and raises it. If the process is still
/// alive afterwards — the signal's default action is to ignore or to stop (e.g. `SIGCHLD`,
/// `SIGWINCH`, or `SIGTSTP` followed by `SIGCONT`), or it could not be raised — it exits with
/// `128 + signal` as a shell would report. Restore the terminal before calling this: nothing
/// runs afterwards, not even destructors.
pub fn reraise(signal: Signal) -> ! {
    // Errors are ignored on purpose: whatever happens, the exit below is the fallback.
    let _ = sys::set_default_action(signal);
    let mut only = SigSet::empty();
    only.add(signal);
    let _ = only.thread_unblock();
    let _ = raise(signal);
    std::process::exit(128 + signal as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_signals_are_refused() {
        for signal in FORBIDDEN {
            assert!(matches!(
                SignalPipe::with_signals(&[signal]),
                Err(PtyError::UncatchableSignal { signal: s }) if s == signal
            ));
        }
    }

    #[test]
    fn signal_numbers_fit_a_byte() {
        for signal in Signal::iterator() {
            assert!((signal as i32) < 256);
        }
    }
}
