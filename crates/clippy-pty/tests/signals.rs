//! The signal pipe, suspending the process and dying of a signal.
//!
//! Signal handlers are process-wide, so everything that raises signals in this process is in
//! one test (`signal_pipe_in_this_process`); suspending and re-raising run in a child process
//! that re-executes this test binary with `CLIPPY_PTY_CHILD_MODE` set.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clippy_pty::{CommandSpec, PtyError, Signal, SignalPipe, WinSize, reraise, suspend_self};
use common::Session;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, kill, raise};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;

const CHILD_MODE: &str = "CLIPPY_PTY_CHILD_MODE";

fn readable(pipe: &SignalPipe, ms: u16) -> bool {
    let deadline = Instant::now() + Duration::from_millis(u64::from(ms));
    loop {
        let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(n) => return n > 0,
            // Interrupted by one of the very signals under test: try again.
            Err(nix::errno::Errno::EINTR) if Instant::now() < deadline => {}
            Err(e) => panic!("poll: {e}"),
        }
    }
}

/// Children of other tests in this binary exit at any time; their SIGCHLD is noise here.
fn without_sigchld(signals: Vec<Signal>) -> Vec<Signal> {
    signals
        .into_iter()
        .filter(|&s| s != Signal::SIGCHLD)
        .collect()
}

#[test]
fn signal_pipe_in_this_process() {
    let pipe = SignalPipe::new().unwrap();
    assert_eq!(pipe.signals().len(), 8);
    pipe.drain().unwrap();
    assert!(without_sigchld(pipe.drain().unwrap()).is_empty());

    // Arrival order, repeats of different signals kept.
    let raised = [
        Signal::SIGWINCH,
        Signal::SIGINT,
        Signal::SIGWINCH,
        Signal::SIGTSTP,
        Signal::SIGCONT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ];
    for signal in raised {
        raise(signal).unwrap();
    }
    assert!(readable(&pipe, 1000));
    assert_eq!(without_sigchld(pipe.drain().unwrap()), raised);

    // A child exiting shows up as SIGCHLD.
    let mut s = Session::start(&CommandSpec::new("true"), WinSize::new(80, 24));
    s.wait();
    let deadline = Instant::now() + clippy_testkit::DEADLINE;
    let mut seen = Vec::new();
    while !seen.contains(&Signal::SIGCHLD) {
        assert!(Instant::now() < deadline, "no SIGCHLD");
        readable(&pipe, 100);
        pipe.drain_into(&mut seen).unwrap();
    }

    // A second pipe sees the same signals (handlers chain).
    let other = SignalPipe::with_signals(&[Signal::SIGUSR1]).unwrap();
    raise(Signal::SIGUSR1).unwrap();
    assert_eq!(other.drain().unwrap(), [Signal::SIGUSR1]);
    assert!(without_sigchld(pipe.drain().unwrap()).is_empty());

    assert!(matches!(
        SignalPipe::with_signals(&[Signal::SIGUSR2, Signal::SIGKILL]),
        Err(PtyError::UncatchableSignal {
            signal: Signal::SIGKILL
        })
    ));
}

/// Runs test `name` of this binary in a child process (in a process group of its own, so that
/// a stop signal really stops it) and returns its pid. The caller reaps it with `waitpid`.
#[allow(clippy::zombie_processes)] // reaped by the caller through `waitpid`
fn spawn_child_mode(name: &str) -> Pid {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD_MODE, name)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Pid::from_raw(i32::try_from(child.id()).unwrap())
}

fn child_mode(name: &str) -> bool {
    std::env::var_os(CHILD_MODE).is_some_and(|mode| mode == name)
}

fn wait_status(pid: Pid) -> WaitStatus {
    waitpid(pid, Some(WaitPidFlag::WUNTRACED)).unwrap()
}

#[test]
fn suspend_self_stops_until_continued() {
    let pid = spawn_child_mode("child_suspends_itself");
    assert_eq!(wait_status(pid), WaitStatus::Stopped(pid, Signal::SIGTSTP));
    kill(pid, Signal::SIGCONT).unwrap();
    let status = wait_status(pid);
    if matches!(status, WaitStatus::Stopped(..)) {
        // The handler was not reinstalled: the second SIGTSTP stopped it again.
        kill(pid, Signal::SIGKILL).unwrap();
        waitpid(pid, None).unwrap();
    }
    assert_eq!(status, WaitStatus::Exited(pid, 0));
}

#[test]
fn child_suspends_itself() {
    if !child_mode("child_suspends_itself") {
        return;
    }
    let pipe = SignalPipe::new().unwrap();
    suspend_self().unwrap();
    // Continued by the parent.
    assert!(readable(&pipe, 5000));
    assert!(pipe.drain().unwrap().contains(&Signal::SIGCONT));
    // The pipe's SIGTSTP handler is back: this is reported, not a stop.
    raise(Signal::SIGTSTP).unwrap();
    assert!(pipe.drain().unwrap().contains(&Signal::SIGTSTP));
}

#[test]
fn reraise_dies_of_the_signal_even_if_caught_and_blocked() {
    let pid = spawn_child_mode("child_reraises_sigterm");
    assert_eq!(
        wait_status(pid),
        WaitStatus::Signaled(pid, Signal::SIGTERM, false)
    );
}

#[test]
fn child_reraises_sigterm() {
    if !child_mode("child_reraises_sigterm") {
        return;
    }
    let _pipe = SignalPipe::new().unwrap();
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.thread_block().unwrap();
    reraise(Signal::SIGTERM);
}

#[test]
fn reraise_falls_back_to_128_plus_signal() {
    let pid = spawn_child_mode("child_reraises_sigwinch");
    // SIGWINCH's default action is to ignore it: the process exits 128 + 28 instead.
    assert_eq!(wait_status(pid), WaitStatus::Exited(pid, 156));
}

#[test]
fn child_reraises_sigwinch() {
    if !child_mode("child_reraises_sigwinch") {
        return;
    }
    reraise(Signal::SIGWINCH);
}
