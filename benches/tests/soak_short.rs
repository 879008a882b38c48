//! The soak test, short (issue 7): 8 wrapped sessions driven through turns for 3 seconds while
//! 3 clients load the broker; no turn may be lost, no `wait_for` may skip a marker, no request may
//! fail, and the broker's memory stays under its bound. `cargo xtask soak` is the long version.
//!
//! The binaries are the debug ones next to this test (`target/debug/`), built first with the
//! cargo running the test (a no-op when they are up to date).

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use clippy_benches::soak::{self, Config};

/// `target/<profile>/`: the test binary is in its `deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .to_path_buf()
}

fn build(dir: &std::path::Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["build", "-q", "-p", "clippy-session", "-p", "clippy-broker"])
        .current_dir(clippy_benches::workspace_root());
    if dir.ends_with("release") {
        command.arg("--release");
    }
    let out = command.output().unwrap();
    let there = ["clippy-session", "clippy-broker"]
        .iter()
        .all(|bin| dir.join(bin).is_file());
    if !out.status.success() {
        // Other work in the tree may not compile right now: go on with the binaries there are,
        // but never in CI, where the tree is what is tested.
        assert!(
            there && std::env::var_os("CI").is_none(),
            "cannot build the binaries:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "warning: the build failed; soaking the binaries already in {}",
            dir.display()
        );
    }
}

#[test]
fn a_short_soak_loses_nothing_and_stays_bounded() {
    let dir = profile_dir();
    build(&dir);
    let mut config = Config::new(dir);
    config.sessions = 8;
    config.clients = 3;
    config.duration = Duration::from_secs(3);
    config.ring_depth = 32;
    // Latency is the full soak's to judge (on a quiet machine); here other tests load it.
    config.max_p99 = None;
    let report = soak::run(&config, &|line| eprintln!("{line}")).unwrap();
    let table = report.table();
    eprintln!("{table}");
    assert!(report.turns_completed >= 8, "too few turns:\n{table}");
    assert!(report.wait_matches > 0, "no wait_for matched:\n{table}");
    for (op, stats) in &report.ops {
        assert!(!stats.micros.is_empty(), "no {op} request ran:\n{table}");
    }
    // Each of them answered requests or drove turns, so each ran: the CPU table reads the right
    // threads.
    let threads: Vec<_> = report
        .cpu
        .iter()
        .map(|(name, n, t)| (*name, *n, !t.ran.is_zero()))
        .collect();
    assert_eq!(
        threads,
        [
            ("the broker's event loop", 1, true),
            ("clients (polling for a reply counts as waiting)", 3, true),
            ("drivers", 8, true)
        ],
        "{table}"
    );
    let failures = report.failures();
    assert!(failures.is_empty(), "{failures:#?}\n{table}");
}
