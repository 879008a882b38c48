//! What the workspace's tests share, so each suite does not grow its own: a private temporary
//! folder removed on drop ([`TempDir`]), the workspace's binaries built once per test process
//! and found next to the test ([`bin`]), a real `clippy-broker` on a real socket in a temporary
//! `XDG_RUNTIME_DIR`, stopped on drop ([`Broker`]), a wrapper speaking the protocol to register
//! sessions and report turns ([`Wrapper`]), the clean-up of every process a test left behind
//! ([`Reaper`]), a tmpfs to fill or make read-only ([`Tmpfs`]), a test that cannot run here saying
//! so ([`skip`]) and waiting for a condition under a deadline ([`wait_for`]).
//!
//! A dev-dependency only (`publish = false`): nothing here is part of clippy.

#![allow(clippy::unwrap_used, clippy::panic)] // A test helper fails the test loudly.

mod bins;
mod broker;
mod dir;
mod procs;
mod tmpfs;
mod wrapper;

use std::time::{Duration, Instant};

pub use bins::{bin, program_dir};
pub use broker::{Broker, BrokerBuilder, socket_in};
pub use dir::{TempDir, private_dir};
pub use procs::{Reaper, kill_tree_of, processes_carrying};
pub use tmpfs::Tmpfs;
pub use wrapper::{Wrapper, client, session_info, turn};

/// How long a wait of the kit may take before it fails the test: far longer than anything takes
/// on a loaded machine, so only a test that hangs fails on it.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Polls `check` every 10 ms until it gives `Some`; fails the test after `deadline`, naming
/// `what`.
pub fn wait_for<T>(what: &str, deadline: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + deadline;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < end,
            "timed out after {deadline:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `ok` every 10 ms until it holds; fails the test after `deadline`, naming `what`.
pub fn wait_until(what: &str, deadline: Duration, mut ok: impl FnMut() -> bool) {
    wait_for(what, deadline, || ok().then_some(()));
}

/// The current test cannot run here, for `reason`: says so on the process's stderr (which libtest
/// does not capture, so a skip is never a silent pass), or fails the test where the environment
/// variable `require` is `1` (CI sets it where it installs every tool the test needs).
pub fn skip(require: &str, reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("this test");
    let required = std::env::var_os(require).is_some_and(|v| v == "1");
    assert!(
        !required,
        "{test} cannot run: {reason}; {require}=1 says it must run here"
    );
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{test}: skipped: {reason}");
}
