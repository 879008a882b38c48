//! Session folders left behind by a SIGKILLed wrapper are swept at the next session start and at
//! the next broker start, while a live session's folder stays (CONTRACTS/SPOOL.md, "Writer
//! side"). Real wrappers on PTYs around a shell waiting on its terminal; nothing sleeps to
//! synchronise: the sweep runs before the new wrapper's folder exists (and before the broker's
//! socket answers), so it is done by the time the starter is ready.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use support::{session_dirs, test_dir};

use std::path::PathBuf;

use clippy_pty::{ExitStatus, Signal};
use support::broker::{broker_guard, is_gone, start_broker};
use support::{Spawn, TempDir, Term, children_of, settle, signal_pid};

/// A wrapper without a broker around a shell that prints `ready` and waits for a line, once it
/// is ready; with its session folder.
fn start_session(dir: &TempDir) -> (Term, PathBuf) {
    let before = session_dirs(dir);
    let mut term = Spawn::wrapper(
        dir,
        [
            "--no-broker",
            "--",
            "/bin/sh",
            "-c",
            "echo ready; read line",
        ],
    )
    .start();
    term.expect("ready");
    let new: Vec<PathBuf> = session_dirs(dir)
        .into_iter()
        .filter(|path| !before.contains(path))
        .collect();
    assert_eq!(new.len(), 1, "one new session folder: {new:?}");
    let folder = new.into_iter().next().unwrap();
    assert!(
        folder.join(clippy_spool::OWNER_FILE_NAME).is_file(),
        "{} records its owner",
        folder.display()
    );
    (term, folder)
}

/// SIGKILLs the wrapper (by its pid) and the program it runs, and waits until both are gone.
fn kill_session(term: &mut Term) {
    let wrapper = term.pid();
    let children = children_of(wrapper);
    assert!(!children.is_empty(), "the wrapper runs its program");
    signal_pid(wrapper, Signal::SIGKILL);
    for child in &children {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*child as i32), Signal::SIGKILL);
    }
    assert!(matches!(
        term.wait_exit(),
        ExitStatus::Signaled { signal, .. } if signal == Signal::SIGKILL as i32
    ));
    settle("the killed wrapper's program is gone", || {
        children.iter().all(|&child| is_gone(child))
    });
}

#[test]
fn a_new_session_sweeps_a_killed_wrappers_folder_and_keeps_a_live_one() {
    let dir = test_dir();
    let (_live, live_folder) = start_session(&dir);
    let (mut killed, killed_folder) = start_session(&dir);
    kill_session(&mut killed);
    assert!(killed_folder.is_dir(), "SIGKILL leaves the folder behind");

    let (_next, next_folder) = start_session(&dir);
    assert!(
        !killed_folder.exists(),
        "the dead wrapper's folder is swept"
    );
    let mut expected = vec![live_folder, next_folder];
    expected.sort();
    assert_eq!(session_dirs(&dir), expected);
}

#[test]
fn a_starting_broker_sweeps_a_killed_wrappers_folder_and_keeps_a_live_one() {
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let (_live, live_folder) = start_session(&dir);
    let (mut killed, killed_folder) = start_session(&dir);
    kill_session(&mut killed);
    assert!(killed_folder.is_dir(), "SIGKILL leaves the folder behind");

    let _broker = start_broker(&dir, &[]);
    assert!(
        !killed_folder.exists(),
        "the dead wrapper's folder is swept"
    );
    assert_eq!(session_dirs(&dir), vec![live_folder]);
    let log = std::fs::read_to_string(dir.join("broker.log")).unwrap();
    assert!(
        log.contains("removed the stale session folder"),
        "the broker logs the sweep: {log}"
    );
}
