//! SIGTERM to a wrapper whose child ignores it (an interactive shell does): the wrapper forwards
//! it, and after a grace period hangs up the child's terminal, so the session ends
//! (CONTRACTS/PTY.md, "Signals").

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use support::test_dir;

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use clippy_pty::{ExitStatus, Signal};

use support::{Headless, Spawn, base_env, wrapper_bin};

/// The prompt of a plain `bash --norc` (given through the environment, which bash honours).
const BASH_PROMPT: &str = "test$ ";
/// The wrapper's grace period between the SIGTERM it forwards and the hang-up.
const TERM_GRACE: Duration = Duration::from_secs(2);

#[test]
fn sigterm_to_a_wrapped_interactive_shell_hangs_it_up_after_the_grace() {
    let dir = test_dir();
    let mut term = Spawn::wrapper(&dir, ["--no-broker", "--", "bash", "--norc", "--noprofile"])
        .env("PS1", BASH_PROMPT)
        .start();
    term.expect(BASH_PROMPT);
    let sent = Instant::now();
    term.signal(Signal::SIGTERM);
    // Bounded by the support's TIMEOUT; bash ignores the SIGTERM and dies of the hang-up, and
    // the wrapper dies of the same signal.
    let status = term.wait_exit();
    let took = sent.elapsed();
    assert!(
        matches!(status, ExitStatus::Signaled { signal: 1, .. }),
        "the wrapper dies of SIGHUP, as its shell did: {status}"
    );
    assert!(
        took >= TERM_GRACE,
        "hung up after {took:?}, before the grace"
    );
    assert_eq!(term.termios(), *term.initial_termios(), "terminal restored");
}

/// `timeout 2 clippy-session -- bash` ends: timeout's SIGTERM, then the hang-up.
#[test]
fn timeout_stops_a_wrapped_interactive_shell() {
    let dir = test_dir();
    let mut command = std::process::Command::new("timeout");
    command
        .env_clear()
        .envs(base_env(&dir))
        .env("PS1", BASH_PROMPT)
        .args(["--preserve-status", "1"])
        .arg(wrapper_bin())
        .args(["--no-broker", "--", "bash", "--norc", "--noprofile"]);
    let started = Instant::now();
    // Waits for the exit with a bound (the support's TIMEOUT).
    let (status, _stdout, stderr) = Headless::start(command, None).finish();
    assert!(
        status.signal() == Some(1) || status.code() == Some(128 + 1),
        "the wrapper died of SIGHUP, as its shell did: {status:?}\n{}",
        String::from_utf8_lossy(&stderr)
    );
    assert!(started.elapsed() >= Duration::from_secs(1) + TERM_GRACE);
}
