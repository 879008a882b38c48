//! Sessions that outlive their terminal, the broker's side of it: how a session's command ended
//! reaches the broker (`session.exited`, `clippy-ctl status` of an ended session); waits and
//! `exec` asked before their session — and the broker — exist; the readiness line of a
//! detached wrapper.
//!
//! Real brokers on real sockets in the test's own `XDG_RUNTIME_DIR`, real wrappers on PTYs,
//! `clippy-ctl` as a process. Nothing sleeps to synchronise: every wait is the product's own or
//! a poll of the broker with a deadline.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use support::test_dir;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clippy_proto::{Client, EventRecord, Message, Mode, Progress, Role, SessionInfo};
use clippy_pty::Signal;
use serde_json::Value;
use support::broker::{
    self, Broker, broker_guard, brokers_of, client, ctl, ctl_command, start_broker, try_connect,
    wait_session_state,
};
use support::{Spawn, TempDir, base_env, proc_stat, settle, signal_pid};

/// How long a `clippy-ctl` run may take before the test fails (its own `--timeout` is shorter).
const CTL_DEADLINE: Duration = Duration::from_secs(90);

/// The `session.exited` event of the session named `name`, once the broker has it.
fn exit_event(dir: &TempDir, name: &str) -> EventRecord {
    let mut found = None;
    settle(&format!("the session.exited event of {name}"), || {
        found = broker::events(&mut client(dir), &["session.exited"])
            .into_iter()
            .find(|e| e.name.as_deref() == Some(name));
        found.is_some()
    });
    found.unwrap()
}

/// `clippy-ctl --json ARGS…`: the exit code and the one JSON document on stdout.
fn ctl_json(dir: &TempDir, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = ctl(dir, &all, CTL_DEADLINE);
    let value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "clippy-ctl {all:?} (exit {}) did not print one JSON document ({e}):\n{}\nstderr: {}",
            out.code, out.stdout, out.stderr
        )
    });
    (out.code, value)
}

/// A wrapped `sh` that reads one line and exits `code`, named `name`, returned once the broker
/// knows it (a session that ends before it registers has nobody to tell).
fn one_line_shell(dir: &TempDir, name: &str, code: u8) -> support::Term {
    let script = format!("echo waiting; read line; exit {code}");
    let mut term = Spawn::wrapper(dir, ["--name", name, "--", "sh", "-c", &script]).start();
    term.expect("waiting");
    wait_session_state(dir, name, "registered", |s| s.connected);
    term
}

/// A `clippy-ctl` started in the background, its output collected when it ends (killed if the
/// test fails first).
struct Bg {
    child: Option<Child>,
    what: String,
}

impl Bg {
    fn start(dir: &TempDir, args: &[&str]) -> Bg {
        let child = ctl_command(dir, args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Bg {
            child: Some(child),
            what: format!("clippy-ctl {args:?}"),
        }
    }

    /// Its exit code, stdout and stderr, once it exits (at most [`CTL_DEADLINE`]). Its output
    /// is small: the pipes do not fill while it runs.
    fn finish(mut self) -> (i32, String, String) {
        let end = Instant::now() + CTL_DEADLINE;
        let mut child = self.child.take().unwrap();
        while child.try_wait().unwrap().is_none() {
            if Instant::now() >= end {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{} did not exit within {CTL_DEADLINE:?}", self.what);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// How a session ended
// ---------------------------------------------------------------------------------------------

#[test]
fn a_session_exiting_with_code_3_is_announced_and_its_status_says_so() {
    broker::ctl_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let _broker = start_broker(&dir, &[]);
    let mut term = one_line_shell(&dir, "three", 3);
    term.send("\r");
    assert_eq!(term.wait_exit().code_for_shell(), 3);

    let event = exit_event(&dir, "three");
    assert_eq!(
        (event.exit_code, event.signal),
        (Some(3), None),
        "{event:?}"
    );
    // The human status of the ended session, by name.
    let out = ctl(&dir, &["status", "three"], CTL_DEADLINE);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("connected:      no\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("mode:           exited\nexited:         exit code 3 at "),
        "{}",
        out.stdout
    );
    let (code, value) = ctl_json(&dir, &["status", "three"]);
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["session_status"]["mode"], "exited");
    assert_eq!(value["session_status"]["exited"]["exit_code"], 3);
    assert_eq!(value["session_status"]["exited"]["signal"], Value::Null);
    // Live sessions only in the list.
    let (code, value) = ctl_json(&dir, &["list-sessions"]);
    assert_eq!((code, value), (0, serde_json::json!({"sessions": []})));
}

#[test]
fn a_session_killed_by_a_signal_is_announced_with_the_signal() {
    broker::ctl_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let _broker = start_broker(&dir, &[]);
    let mut term = one_line_shell(&dir, "doomed", 0);
    let child = wait_session_state(&dir, "doomed", "registered", |s| s.connected).pid;
    signal_pid(child, Signal::SIGKILL);
    assert_eq!(term.wait_exit().code_for_shell(), 137);

    let event = exit_event(&dir, "doomed");
    assert_eq!(
        (event.exit_code, event.signal),
        (Some(137), Some(9)),
        "{event:?}"
    );
    let state = wait_session_state(&dir, "doomed", "ended", |s| s.mode == Mode::Exited);
    let exited = state.exited.expect("how it ended");
    assert_eq!((exited.exit_code, exited.signal), (Some(137), Some(9)));
    let out = ctl(&dir, &["status", "doomed"], CTL_DEADLINE);
    assert!(
        out.stdout
            .contains("exited:         killed by signal 9 (exit code 137) at "),
        "{out:?}"
    );
    let out = ctl(&dir, &["events", "--type", "session.exited"], CTL_DEADLINE);
    assert!(out.stdout.contains("exit 137 signal 9"), "{out:?}");
}

/// A wrapper of its own on a broker of its own: registered as `hangup1`, named `hangup`.
fn raw_wrapper(dir: &TempDir) -> Client {
    let mut wrapper = Client::connect(&broker::socket(dir), Role::Wrapper).unwrap();
    wrapper
        .request(|id| Message::Register {
            id,
            session: SessionInfo {
                session: "hangup1".into(),
                name: Some("hangup".into()),
                pid: std::process::id(),
                command: vec!["sh".into()],
                preset: "shell".into(),
                bracketed_paste: false,
                spool: None,
                cwd: None,
                no_history: false,
            },
            progress: None,
            resends: false,
        })
        .unwrap();
    wrapper
}

/// Stops `broker` (SIGSTOP) and returns once it is stopped: it reads nothing until continued.
fn stop(broker: &Broker) {
    signal_pid(broker.pid(), Signal::SIGSTOP);
    settle("the broker is stopped", || {
        proc_stat(broker.pid()).is_some_and(|s| s.state == 'T')
    });
}

/// The wrapper's goodbye: session `hangup1` exited with code 3.
fn goodbye() -> Message {
    Message::Deregister {
        id: 3,
        session: "hangup1".into(),
        exit_code: Some(3),
        signal: None,
    }
}

/// A wrapper writes its last report and its `deregister`, then exits; the broker, stopped
/// meanwhile, finds both and the hang-up in one read. The reply to the report finds the socket
/// closed — and the goodbye behind it is still handled, with how the session ended.
#[test]
fn a_deregister_read_together_with_the_wrappers_hang_up_still_says_how_it_ended() {
    broker::broker_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let broker = start_broker(&dir, &[]);
    let mut wrapper = raw_wrapper(&dir);
    stop(&broker);
    wrapper
        .send(&Message::Progress {
            id: 2,
            session: "hangup1".into(),
            progress: Progress::default(),
        })
        .unwrap();
    wrapper.send(&goodbye()).unwrap();
    drop(wrapper);
    signal_pid(broker.pid(), Signal::SIGCONT);
    let event = exit_event(&dir, "hangup");
    assert_eq!(
        (event.exit_code, event.signal),
        (Some(3), None),
        "{event:?}"
    );
}

/// The same, when what finds the wrapper's socket closed is an injection another client asked
/// for, handled before the wrapper's connection is read: its goodbye is still read and handled.
#[test]
fn a_deregister_behind_a_failed_injection_still_says_how_it_ended() {
    broker::broker_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let broker = start_broker(&dir, &[]);
    let mut wrapper = raw_wrapper(&dir);
    let mut sender = client(&dir);
    stop(&broker);
    // Asked first, so the broker reads it first once it goes on.
    sender
        .send(&Message::Send {
            id: 7,
            session: "hangup1".into(),
            data: b"late\r".to_vec(),
            enter: false,
        })
        .unwrap();
    wrapper.send(&goodbye()).unwrap();
    drop(wrapper);
    signal_pid(broker.pid(), Signal::SIGCONT);
    // Whatever the broker answers the `send` (the wrapper is gone), it answers.
    assert_eq!(sender.recv().unwrap().id(), 7);
    let event = exit_event(&dir, "hangup");
    assert_eq!(
        (event.exit_code, event.signal),
        (Some(3), None),
        "{event:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Asked before the session (and the broker) exist
// ---------------------------------------------------------------------------------------------

/// Starts `clippy-ctl ARGS…` with no broker running, and returns it once the broker it started
/// answers; the session the test starts next is not there yet.
fn ctl_before_everything(dir: &TempDir, args: &[&str]) -> Bg {
    assert!(try_connect(dir).is_none(), "no broker runs yet");
    let waiting = Bg::start(dir, args);
    settle("the broker clippy-ctl started answers", || {
        try_connect(dir).is_some()
    });
    waiting
}

/// `clippy-session --name NAME --shell-integration -- bash`.
fn bash_session(dir: &TempDir, name: &str) -> support::Term {
    Spawn::wrapper(
        dir,
        [
            "--name",
            name,
            "--shell-integration",
            "--",
            "bash",
            "--norc",
            "--noprofile",
        ],
    )
    .cwd(dir.home())
    .start()
}

#[test]
fn a_wait_prompt_asked_before_the_session_and_the_broker_returns_at_its_prompt() {
    broker::broker_bin();
    broker::ctl_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let waiting = ctl_before_everything(&dir, &["wait-prompt", "sh", "--timeout", "60000"]);
    let mut term = bash_session(&dir, "sh");
    let (code, stdout, stderr) = waiting.finish();
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.trim().parse::<u64>().is_ok(),
        "the resume cursor: {stdout}"
    );
    assert!(stderr.starts_with("matched "), "{stderr}");
    // The session found the broker clippy-ctl started, and is at the prompt it waited for.
    let state = wait_session_state(&dir, "sh", "idle", |s| s.mode == Mode::Idle);
    assert!(state.connected);
    assert_eq!(brokers_of(&dir.runtime()).len(), 1, "one broker");
    term.send("exit\r");
    term.wait_exit();
}

#[test]
fn an_exec_asked_before_the_session_and_the_broker_runs_at_its_first_prompt() {
    broker::broker_bin();
    broker::ctl_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let waiting = ctl_before_everything(
        &dir,
        &[
            "exec",
            "early",
            "echo",
            "ran-$((6*7))",
            "--timeout",
            "60000",
        ],
    );
    let mut term = bash_session(&dir, "early");
    let (code, stdout, stderr) = waiting.finish();
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("ran-42"),
        "the command's output: {stdout:?}"
    );
    assert!(stderr.contains("exit 0"), "{stderr}");
    term.expect("ran-42");
    term.send("exit\r");
    term.wait_exit();
}

#[test]
fn a_wait_on_a_name_that_never_registers_times_out_saying_so() {
    broker::ctl_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let _broker = start_broker(&dir, &[]);
    let out = ctl(
        &dir,
        &["wait-for", "nobody", "text", "--timeout", "200"],
        CTL_DEADLINE,
    );
    assert_eq!(out.code, 124, "{out:?}");
    assert!(
        out.stderr.contains("session \"nobody\" never registered"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "0\n", "the cursor to go on from");
}

// ---------------------------------------------------------------------------------------------
// Readiness (`clippy-ctl spawn`)
// ---------------------------------------------------------------------------------------------

/// A detached wrapper (`--detached`, as `clippy-ctl spawn` runs it), killed on drop.
struct Detached(Child);

impl Drop for Detached {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_detached_wrapper_says_ready_with_its_id_once_the_broker_knows_it() {
    broker::broker_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    // No broker runs: the wrapper starts one, registers, and only then says ready.
    let mut wrapper = Detached(
        Command::new(support::wrapper_bin())
            .args(["--detached", "--name", "bg", "--", "sh", "-c", "read line"])
            .env_clear()
            .envs(base_env(&dir))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Read on a thread, so a wrapper that never says anything fails the test instead of
    // hanging it (the thread ends when the wrapper is killed).
    let stdout = wrapper.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(CTL_DEADLINE)
        .expect("the wrapper says one line on its ready channel");
    let id = line
        .strip_prefix("ready ")
        .and_then(|rest| rest.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("not a ready line: {line:?}"));
    // Already registered when it said so: no wait needed.
    let sessions = broker::sessions(&mut client(&dir));
    assert!(
        sessions
            .iter()
            .any(|s| s.session == id && s.name.as_deref() == Some("bg")),
        "{id}: {sessions:?}"
    );
}
