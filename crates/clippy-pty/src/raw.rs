//! Raw mode on the user's terminal, restored on every exit path.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError, TryLockError};

use nix::errno::Errno;
use nix::sys::termios::{SetArg, Termios, cfmakeraw, tcgetattr, tcsetattr};

use crate::error::{PtyError, os};

/// Puts a terminal in raw mode and puts it back as it was when dropped.
///
/// Raw mode is `cfmakeraw`: no echo, no line editing, no signal keys (Ctrl+C arrives as byte
/// `0x03`, to be passed on to the child), no output post-processing, 8-bit characters, reads
/// return as soon as one byte is there. The settings found on entry are saved and written back
/// with `tcsetattr(TCSANOW)` — byte-identical — by [`Drop`], by [`restore`](Self::restore), and
/// by the panic hook of [`install_panic_restore`](Self::install_panic_restore) (which also covers
/// `panic = "abort"`, where destructors do not run).
///
/// **Not a terminal.** [`enter`](Self::enter) returns `Ok(None)` when the fd is not a terminal
/// (stdin is `/dev/null`, a pipe or a file: headless use), so "no raw mode to enter" is a normal
/// result, not an error: `let _raw = RawModeGuard::enter(stdin.as_fd())?;` works either way.
///
/// The guard keeps its own duplicate of the fd, so it does not borrow the caller's handle.
#[derive(Debug)]
pub struct RawModeGuard {
    fd: Arc<OwnedFd>,
    saved: Termios,
    raw: Termios,
    id: u64,
}

/// Saved settings of every live guard, for the panic hook. Each entry: guard id, terminal, saved
/// settings.
static ACTIVE: Mutex<Vec<(u64, Arc<OwnedFd>, Termios)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
static HOOK: Once = Once::new();

fn active() -> MutexGuard<'static, Vec<(u64, Arc<OwnedFd>, Termios)>> {
    ACTIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RawModeGuard {
    /// Saves the settings of the terminal on `fd` and switches it to raw mode.
    ///
    /// Returns `Ok(None)`, changing nothing, when `fd` is not a terminal.
    ///
    /// # Errors
    ///
    /// [`PtyError::Terminal`] when the fd cannot be duplicated or `tcgetattr`/`tcsetattr` fail
    /// on a terminal.
    ///
    /// # Example
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use clippy_pty::{RawModeGuard, WinSize, openpty};
    ///
    /// // Headless: /dev/null is not a terminal, nothing to do.
    /// let null = std::fs::File::open("/dev/null")?;
    /// assert!(RawModeGuard::enter(null.as_fd())?.is_none());
    ///
    /// // A PTY slave stands in for the user's terminal here.
    /// let pair = openpty(WinSize::new(80, 24))?;
    /// RawModeGuard::install_panic_restore();
    /// let guard = RawModeGuard::enter(pair.slave.as_fd())?.expect("a PTY is a terminal");
    /// // ... relay bytes ...
    /// drop(guard); // settings restored
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enter(fd: BorrowedFd<'_>) -> Result<Option<RawModeGuard>, PtyError> {
        let saved = match tcgetattr(fd) {
            Ok(saved) => saved,
            // ENOTTY: not a terminal. EBADF/EINVAL never happen for a valid borrowed fd, and
            // treating anything odd as "not a terminal" would silently skip raw mode, so only
            // ENOTTY is accepted.
            Err(Errno::ENOTTY) => return Ok(None),
            Err(e) => {
                return Err(PtyError::Terminal {
                    call: "tcgetattr",
                    source: os(e),
                });
            }
        };
        let fd = fd
            .try_clone_to_owned()
            .map_err(|source| PtyError::Terminal {
                call: "dup",
                source,
            })?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        let guard = RawModeGuard {
            fd: Arc::new(fd),
            saved,
            raw,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        };
        active().push((guard.id, Arc::clone(&guard.fd), guard.saved.clone()));
        if let Err(e) = guard.reenter() {
            // Drop restores and unregisters.
            drop(guard);
            return Err(e);
        }
        Ok(Some(guard))
    }

    /// Puts the saved settings back, leaving raw mode (e.g. before suspending on `SIGTSTP`).
    /// The guard stays armed: dropping it restores again, which is harmless.
    ///
    /// # Errors
    ///
    /// [`PtyError::Terminal`] when `tcsetattr` fails.
    pub fn restore(&self) -> Result<(), PtyError> {
        set(&self.fd, &self.saved)
    }

    /// Switches back to raw mode after [`restore`](Self::restore) (e.g. on `SIGCONT`).
    ///
    /// Raw mode is derived from the settings saved by [`enter`](Self::enter), not re-read: if the
    /// user changed settings with `stty` while the wrapper was suspended, those changes are
    /// undone when the guard restores on exit.
    ///
    /// # Errors
    ///
    /// [`PtyError::Terminal`] when `tcsetattr` fails.
    pub fn reenter(&self) -> Result<(), PtyError> {
        set(&self.fd, &self.raw)
    }

    /// Installs (once per process) a panic hook that restores the saved settings of every live
    /// guard, then runs the hook that was installed before (so the panic message is printed on a
    /// sane terminal). Call it early, before entering raw mode; calling it again does nothing.
    pub fn install_panic_restore() {
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore_all_for_panic();
                previous(info);
            }));
        });
    }
}

/// Restores every live guard's terminal, newest first. Never blocks on the registry lock: a
/// panic while it is held (it never is across a panic-prone call) must not deadlock.
fn restore_all_for_panic() {
    let entries = match ACTIVE.try_lock() {
        Ok(entries) => entries,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return,
    };
    for (_, fd, saved) in entries.iter().rev() {
        let _ = set(fd, saved);
    }
}

fn set(fd: &OwnedFd, termios: &Termios) -> Result<(), PtyError> {
    tcsetattr(fd.as_fd(), SetArg::TCSANOW, termios).map_err(|e| PtyError::Terminal {
        call: "tcsetattr",
        source: os(e),
    })
}

impl Drop for RawModeGuard {
    fn drop(&mut self) {
        // Nothing useful can be done with a failure here (the terminal is gone, typically).
        let _ = self.restore();
        active().retain(|(id, _, _)| *id != self.id);
    }
}
