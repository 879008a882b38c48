//! Real PTYs, real child programs.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic
#![allow(unsafe_code)] // one test ignores a signal in the parent process, which needs `unsafe`

mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use clippy_pty::{CommandSpec, ExitStatus, PtyError, RawModeGuard, Signal, WinSize, openpty};
use common::{Session, have};
use nix::sys::termios::{LocalFlags, SetArg, cfmakeraw, tcgetattr, tcsetattr};

fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn child_is_session_leader_with_the_slave_as_controlling_tty() {
    let mut s =
        Session::sh("tty; echo $$; ps -o sid= -p $$; ps -o pgid= -p $$; ps -o tpgid= -p $$");
    let text = s.read_to_end();
    let pid = s.child.pid().to_string();
    let got = lines(&text);
    assert_eq!(got.len(), 5, "{text:?}");
    assert_eq!(got[0], s.slave_path.to_str().unwrap(), "tty");
    assert_eq!(got[1], pid, "$$");
    assert_eq!(
        got[2], pid,
        "session id = child's pid: it is the session leader"
    );
    assert_eq!(got[3], pid, "process group id");
    assert_eq!(
        got[4], pid,
        "the child's group is the terminal's foreground group"
    );
    assert_eq!(s.child.process_group(), s.child.pid());
    assert_eq!(s.wait(), ExitStatus::Exited(0));
}

#[test]
fn stty_sees_the_initial_size_and_a_resize() {
    let mut s = Session::start(
        &CommandSpec::new("sh")
            .arg("-c")
            .arg("stty size; read go; stty size"),
        WinSize::new(80, 24),
    );
    s.read_until("24 80");
    s.master.resize(WinSize::new(100, 30)).unwrap();
    assert_eq!(s.master.size().unwrap(), WinSize::new(100, 30));
    s.write(b"go\n");
    s.read_until("30 100");
    assert_eq!(s.wait(), ExitStatus::Exited(0));
}

#[test]
fn resize_sends_sigwinch_to_the_foreground_group() {
    if !have("bash") {
        eprintln!("skipped: no bash");
        return;
    }
    let mut s = Session::start(
        &CommandSpec::new("bash")
            .arg("-c")
            .arg("trap 'echo WINCH $(stty size)' WINCH; echo ready; while :; do sleep 0.05; done"),
        WinSize::new(80, 24),
    );
    s.read_until("ready");
    s.master.resize(WinSize::new(132, 43)).unwrap();
    s.read_until("WINCH 43 132");
}

#[test]
fn exit_code_is_reported() {
    let mut s = Session::sh("exit 3");
    let status = s.wait();
    assert_eq!(status, ExitStatus::Exited(3));
    assert_eq!(status.code_for_shell(), 3);
    // Waiting again gives the same answer.
    assert_eq!(s.child.wait().unwrap(), ExitStatus::Exited(3));
    assert_eq!(s.child.try_wait().unwrap(), Some(ExitStatus::Exited(3)));
}

#[test]
fn death_by_signal_is_reported() {
    let mut s = Session::sh("kill -KILL $$");
    let status = s.wait();
    assert_eq!(
        status,
        ExitStatus::Signaled {
            signal: 9,
            core_dumped: false
        }
    );
    assert_eq!(status.code_for_shell(), 137);
    assert_eq!(status.signal(), Some(Signal::SIGKILL));
}

#[test]
fn master_reads_end_of_file_once_the_child_is_gone() {
    let mut s = Session::sh("printf 'last words'");
    assert!(s.read_to_end().ends_with("last words"));
    assert_eq!(s.wait(), ExitStatus::Exited(0));
}

#[test]
fn signal_group_interrupts_sleep_in_sh() {
    let mut s = Session::sh("sleep 600; echo after");
    // Signal only once `sleep` runs: a SIGINT arriving while sh is still busy elsewhere is
    // handled by sh after its next command (dash defers it), which is not what this tests.
    common::wait_for_child_named(s.child.pid(), "sleep");
    let start = Instant::now();
    s.child.signal_group(Signal::SIGINT).unwrap();
    let status = s.wait();
    assert!(
        start.elapsed() < Duration::from_secs(300),
        "{status:?} after {:?}",
        start.elapsed()
    );
    assert_eq!(status.code_for_shell(), 130, "{status}");
    assert!(!s.text().contains("after"));
}

#[test]
fn signal_group_targets_the_foreground_job() {
    if !have("python3") {
        eprintln!("skipped: no python3");
        return;
    }
    // A job-control-like parent: it moves its own child into a new process group, makes that
    // the terminal's foreground group, and reports how the child ended. SIGINT sent to the
    // parent's group would kill the parent with KeyboardInterrupt instead.
    let script = r#"
import os, signal, time
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.setpgid(0, 0)
    while os.tcgetpgrp(0) != os.getpid():
        time.sleep(0.01)
    print("fg", os.getpid(), flush=True)
    time.sleep(5)
    os._exit(0)
os.setpgid(pid, pid)
os.tcsetpgrp(0, pid)
_, status = os.waitpid(pid, 0)
os.tcsetpgrp(0, os.getpgrp())
if os.WIFSIGNALED(status):
    print("job signaled", os.WTERMSIG(status), flush=True)
else:
    print("job exited", os.WEXITSTATUS(status), flush=True)
"#;
    let mut s = Session::start(
        &CommandSpec::new("python3").arg("-c").arg(script),
        WinSize::new(80, 24),
    );
    let text = s.read_until("\n");
    let job: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("fg "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(job, s.child.pid());
    assert_eq!(s.master.foreground_process_group(), Some(job));
    s.child.signal_group(Signal::SIGINT).unwrap();
    s.read_until("job signaled 2");
    assert_eq!(s.wait(), ExitStatus::Exited(0));
}

#[test]
fn kill_takes_the_whole_group() {
    let mut s = Session::sh("sleep 30 & echo bg $!; sleep 30");
    let text = s.read_until("\n");
    let bg: i32 = text
        .lines()
        .find_map(|l| l.strip_prefix("bg "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    s.child.kill().unwrap();
    assert_eq!(s.wait().signal(), Some(Signal::SIGKILL));
    // The background sleep was in the child's group: it is gone (or a zombie awaiting its
    // reaper) shortly after.
    let deadline = Instant::now() + clippy_testkit::DEADLINE;
    loop {
        let state = std::fs::read_to_string(format!("/proc/{bg}/stat")).unwrap_or_default();
        let dead = state.is_empty()
            || state
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X']));
        if dead {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "background job survived: {state}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Signalling a reaped child is a no-op, not an error.
    s.child.kill().unwrap();
    s.child.signal(Signal::SIGTERM).unwrap();
}

#[test]
fn missing_program_is_a_spawn_error() {
    let pair = openpty(WinSize::new(80, 24)).unwrap();
    let err = pair
        .slave
        .spawn(&CommandSpec::new("clippy-no-such-program-xyz"))
        .unwrap_err();
    match &err {
        PtyError::Spawn { program, source } => {
            assert_eq!(program, "clippy-no-such-program-xyz");
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
        }
        other => panic!("unexpected error: {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("cannot start `clippy-no-such-program-xyz`: ")
    );
}

#[test]
fn non_executable_program_is_permission_denied() {
    let dir = clippy_testkit::TempDir::new("clippy-pty-noexec");
    let file = dir.join("script");
    std::fs::write(&file, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let pair = openpty(WinSize::new(80, 24)).unwrap();
    let err = pair.slave.spawn(&CommandSpec::new(&file)).unwrap_err();
    drop(dir);
    match err {
        PtyError::Spawn { source, .. } => {
            assert_eq!(source.kind(), io::ErrorKind::PermissionDenied)
        }
        other => panic!("unexpected error: {other:?}"),
    }
}

#[test]
fn missing_working_directory_is_a_cwd_error() {
    let pair = openpty(WinSize::new(80, 24)).unwrap();
    let err = pair
        .slave
        .spawn(&CommandSpec::new("true").cwd("/nonexistent/clippy"))
        .unwrap_err();
    assert!(
        matches!(&err, PtyError::Cwd { source, .. } if source.kind() == io::ErrorKind::NotFound),
        "{err:?}"
    );
}

#[test]
fn working_directory_is_applied() {
    let mut s = Session::start(&CommandSpec::new("pwd").cwd("/usr"), WinSize::new(80, 24));
    assert_eq!(s.read_to_end().trim(), "/usr");
}

#[test]
fn child_sees_the_parent_environment_plus_overrides() {
    let pair = openpty(WinSize::new(80, 24)).unwrap();
    // Byte-exact output: no \n -> \r\n translation.
    let mut raw = tcgetattr(&pair.slave).unwrap();
    cfmakeraw(&mut raw);
    tcsetattr(&pair.slave, SetArg::TCSANOW, &raw).unwrap();
    let spec = CommandSpec::new("env")
        .arg("-0")
        .env("CLIPPY_PTY_TEST_SET", "value with spaces\nand a newline")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CLIPPY_PTY_TEST_GONE", "set then removed")
        .env_remove("CLIPPY_PTY_TEST_GONE")
        .env_remove("HOME");
    let child = pair.slave.spawn(&spec).unwrap();
    drop(pair.slave);
    let mut s = Session::from_parts(pair.master, child);
    s.read_to_end();

    let mut expected: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    expected.insert(
        "CLIPPY_PTY_TEST_SET".into(),
        "value with spaces\nand a newline".into(),
    );
    expected.remove(&OsString::from("HOME"));
    let got: BTreeMap<OsString, OsString> = s
        .raw_output()
        .split(|&b| b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let eq = entry.iter().position(|&b| b == b'=').unwrap();
            (
                OsString::from_vec(entry[..eq].to_vec()),
                OsString::from_vec(entry[eq + 1..].to_vec()),
            )
        })
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn child_starts_with_default_signal_dispositions_and_empty_mask() {
    // The parent ignores SIGUSR1 (and, being a Rust program, SIGPIPE) and blocks SIGUSR2 in
    // this thread; none of it may leak into the child.
    // SAFETY: SIG_IGN installs no handler code; nothing in this test binary relies on SIGUSR1.
    unsafe {
        nix::sys::signal::signal(Signal::SIGUSR1, nix::sys::signal::SigHandler::SigIgn).unwrap();
    }
    let mut blocked = nix::sys::signal::SigSet::empty();
    blocked.add(Signal::SIGUSR2);
    blocked.thread_block().unwrap();

    let mut s = Session::start(
        &CommandSpec::new("cat").arg("/proc/self/status"),
        WinSize::new(80, 24),
    );
    let text = s.read_to_end();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .trim()
            .to_owned()
    };
    assert_eq!(field("SigIgn:"), "0000000000000000");
    assert_eq!(field("SigBlk:"), "0000000000000000");
    blocked.thread_unblock().unwrap();
}

fn stty_g(path: &std::path::Path) -> String {
    let out = Command::new("stty")
        .arg("-F")
        .arg(path)
        .arg("-g")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn raw_mode_guard_enters_and_restores_byte_identically() {
    // The slave of a fresh PTY stands in for the user's terminal.
    let pair = openpty(WinSize::new(80, 24)).unwrap();
    let user_tty = pair.slave.as_fd();
    let before = tcgetattr(user_tty).unwrap();
    let before_g = stty_g(pair.slave.path());

    let guard = RawModeGuard::enter(user_tty)
        .unwrap()
        .expect("a PTY is a tty");
    let raw = tcgetattr(user_tty).unwrap();
    assert_ne!(raw, before);
    assert!(!raw.local_flags.contains(LocalFlags::ICANON));
    assert!(!raw.local_flags.contains(LocalFlags::ECHO));
    assert!(!raw.local_flags.contains(LocalFlags::ISIG));
    assert_ne!(stty_g(pair.slave.path()), before_g);

    // SIGTSTP / SIGCONT dance.
    guard.restore().unwrap();
    assert_eq!(tcgetattr(user_tty).unwrap(), before);
    guard.reenter().unwrap();
    assert_eq!(tcgetattr(user_tty).unwrap(), raw);

    drop(guard);
    assert_eq!(tcgetattr(user_tty).unwrap(), before);
    assert_eq!(stty_g(pair.slave.path()), before_g);
}

#[test]
fn raw_mode_guard_is_none_without_a_terminal() {
    let null = std::fs::File::open("/dev/null").unwrap();
    assert!(RawModeGuard::enter(null.as_fd()).unwrap().is_none());
    let (read, _write) = nix::unistd::pipe().unwrap();
    assert!(RawModeGuard::enter(read.as_fd()).unwrap().is_none());
    assert_eq!(clippy_pty::terminal_size(read.as_fd()), None);
}

#[test]
fn input_reaches_the_child() {
    let mut s = Session::start(&CommandSpec::new("cat"), WinSize::new(80, 24));
    s.write(b"hello through the pty\n");
    // Echo plus cat's copy.
    let text = s.read_until("hello through the pty\nhello through the pty\n");
    assert!(text.starts_with("hello"));
    s.write(&[4]); // Ctrl+D: EOF for cat
    assert_eq!(s.wait(), ExitStatus::Exited(0));
}
