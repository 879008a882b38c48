//! The panic hook restores the terminal even when the guard's destructor never runs (as with
//! `panic = "abort"`). Alone in its binary: the hook is process-wide and would restore the
//! terminals of other tests' guards.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

use std::os::fd::AsFd;
use std::panic::{AssertUnwindSafe, catch_unwind};

use clippy_pty::{RawModeGuard, WinSize, openpty};
use nix::sys::termios::tcgetattr;

#[test]
fn panic_hook_restores_the_terminal() {
    let pair = openpty(WinSize::new(80, 24)).unwrap();
    let before = tcgetattr(pair.slave.as_fd()).unwrap();
    RawModeGuard::install_panic_restore();
    RawModeGuard::install_panic_restore(); // idempotent
    let guard = RawModeGuard::enter(pair.slave.as_fd()).unwrap().unwrap();
    assert_ne!(tcgetattr(pair.slave.as_fd()).unwrap(), before);

    let result = catch_unwind(AssertUnwindSafe(|| {
        // No destructor: only the hook can restore.
        std::mem::forget(guard);
        panic!("deliberate panic to exercise the hook");
    }));
    assert!(result.is_err());
    assert_eq!(tcgetattr(pair.slave.as_fd()).unwrap(), before);
}
