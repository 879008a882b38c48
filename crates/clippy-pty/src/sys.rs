//! The crate's only `unsafe` code: three `ioctl`s, the child setup that runs between `fork` and
//! `exec`, and the signal-handler plumbing. Everything else is built on these safe wrappers.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;

use nix::libc;
use nix::sys::signal::{
    SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, sigaction, sigprocmask,
};
use signal_hook::SigId;

use crate::Signal;

/// `ioctl(fd, TIOCGWINSZ)`.
#[allow(unsafe_code)]
pub(crate) fn get_winsize(fd: BorrowedFd<'_>) -> io::Result<libc::winsize> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `struct winsize` through the pointer, which points to a live,
    // properly aligned local of that type; `fd` is borrowed, so it stays open during the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ws)
    }
}

/// `ioctl(fd, TIOCSWINSZ)`.
#[allow(unsafe_code)]
pub(crate) fn set_winsize(fd: BorrowedFd<'_>, ws: &libc::winsize) -> io::Result<()> {
    // SAFETY: TIOCSWINSZ reads one `struct winsize` through the pointer, which points to a live
    // value of that type; `fd` is borrowed, so it stays open during the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, ws as *const libc::winsize) };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Arranges for the child of `cmd` to start in a new session with its stdin (the PTY slave) as
/// controlling terminal, every signal at its default disposition and an empty signal mask.
///
/// std runs this after it has set up stdin/stdout/stderr and the working directory, and reports
/// an error returned here (or by `exec`) to `spawn()` through its close-on-exec pipe.
#[allow(unsafe_code)]
pub(crate) fn setup_child_on_tty(cmd: &mut Command) {
    // glibc's SIGRTMAX() is a function call; evaluate it here, in the parent.
    let max_signal = libc::SIGRTMAX();
    // SAFETY: the closure runs in the forked child before exec. It only makes async-signal-safe
    // calls (sigprocmask, signal, rt_sigaction, setsid, ioctl), takes no locks and does not allocate: errors are
    // built from errno alone (`io::Error::from_raw_os_error`).
    unsafe {
        cmd.pre_exec(move || child_setup(max_signal));
    }
}

/// The body of the `pre_exec` hook; see [`setup_child_on_tty`].
#[allow(unsafe_code)]
fn child_setup(max_signal: libc::c_int) -> io::Result<()> {
    // Block everything while dispositions change, so that no handler inherited from the parent
    // (which would write into the parent's signal pipe) runs in the child.
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::all()), None)?;
    for signal in 1..=max_signal {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: setting SIG_DFL installs no code.
        if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
            reset_reserved_signal(signal);
        }
    }
    nix::unistd::setsid()?;
    // SAFETY: TIOCSCTTY takes an int argument (0: do not steal a terminal that is already some
    // other session's controlling terminal). Fd 0 is the PTY slave, set up by std just before.
    if unsafe { libc::ioctl(libc::STDIN_FILENO, libc::TIOCSCTTY, 0) } == -1 {
        return Err(io::Error::last_os_error());
    }
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
    Ok(())
}

/// Resets a signal that glibc's `signal`/`sigaction` refuse to touch (32 and 33, which it
/// reserves for itself) with the raw system call. They matter because glibc's `posix_spawn` sets
/// them to `SIG_IGN` in the programs it starts (std's `Command` uses it, so e.g. a wrapper started
/// by cargo has signal 32 ignored), and an ignored signal survives `exec`.
#[allow(unsafe_code)]
fn reset_reserved_signal(signal: libc::c_int) {
    // The kernel's `struct sigaction` (handler, flags, restorer, mask: at most 32 bytes on Linux);
    // all zeroes is SIG_DFL with no flags and an empty mask.
    let default = [0u64; 8];
    // _NSIG / 8: the size of the kernel's sigset_t on Linux (other than MIPS, which clippy does
    // not target).
    const KERNEL_SIGSET_BYTES: libc::size_t = 8;
    // SAFETY: rt_sigaction reads the new action from `default`, which is live and large enough
    // for the kernel's struct; no old action is requested (null). Numbers that are invalid for
    // the kernel too (SIGKILL, SIGSTOP, out of range) fail with EINVAL, ignored on purpose.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            signal,
            default.as_ptr(),
            std::ptr::null_mut::<u64>(),
            KERNEL_SIGSET_BYTES,
        );
    }
}

/// Registers a handler for `signal` that writes the signal's number, as one byte, to `pipe`.
///
/// `pipe` must be the non-blocking write end of a pipe.
#[allow(unsafe_code)]
pub(crate) fn register_signal_byte(signal: Signal, pipe: Arc<OwnedFd>) -> io::Result<SigId> {
    // Signal numbers on Linux are at most 64, so they fit a byte.
    let byte = [signal as i32 as u8];
    let action = move || {
        // Best effort: when the pipe is full the reader has bytes to read anyway.
        let _ = nix::unistd::write(&*pipe, &byte);
    };
    // SAFETY: `action` runs in signal-handler context. It makes one write(2), which is
    // async-signal-safe and cannot block on a non-blocking pipe; it does not allocate, lock or
    // panic. signal-hook-registry saves and restores errno around it, and the caller has checked
    // that `signal` is not one of the forbidden ones (SIGKILL, SIGSTOP, SIGSEGV, SIGILL, SIGFPE).
    unsafe { signal_hook::low_level::register(signal as libc::c_int, action) }
}

/// Sets `signal`'s disposition to `SIG_DFL` and returns the previous action.
#[allow(unsafe_code)]
pub(crate) fn set_default_action(signal: Signal) -> nix::Result<SigAction> {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    // SAFETY: installing SIG_DFL runs none of our code in signal context.
    unsafe { sigaction(signal, &default) }
}

/// Reinstalls an action previously returned by [`set_default_action`] for the same signal.
#[allow(unsafe_code)]
pub(crate) fn restore_action(signal: Signal, action: &SigAction) -> nix::Result<()> {
    // SAFETY: `action` was returned by sigaction(2) for this same signal, so it is exactly the
    // handler (or SIG_DFL / SIG_IGN) that was installed before; reinstalling it restores that state.
    unsafe { sigaction(signal, action) }.map(drop)
}
