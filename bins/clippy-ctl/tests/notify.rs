//! End-to-end: `clippy-ctl notify` (CONTRACTS/CLI.md) against a real broker and real sessions
//! in a private `XDG_RUNTIME_DIR`: bash with shell integration, and the hooked test agent
//! (`bins/clippy-session/tests/programs/hooked_agent.py`, run as `claude`, so its permission
//! request reaches the broker as `session.waiting` through the hooks clippy-session wires).
//! Without a desktop (`--no-desktop`): the notices are the lines on stdout and the bell on
//! stderr. The broker is stopped and another started while it follows; SIGINT ends it with
//! exit 0. Every wait is for a condition; the deadlines only fail a test that hangs.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use desktop::{Proc, TempDir, base_env, ctl, ctl_bin, wait_for};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;

/// The test agent that runs Claude Code's hooks.
fn hooked_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../clippy-session/tests/programs/hooked_agent.py")
}

/// A pipe read to its end on a thread: what came so far.
fn collect(mut pipe: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            into.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    seen
}

fn text(seen: &Arc<Mutex<Vec<u8>>>) -> String {
    String::from_utf8_lossy(&seen.lock().unwrap()).into_owned()
}

/// The notices printed so far (`--json`: one object per line).
fn notices(out: &Arc<Mutex<Vec<u8>>>) -> Vec<Value> {
    text(out)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .map(|doc| doc["notice"].clone())
        .collect()
}

/// The sessions' programs, killed (their process groups) when the test ends.
struct Programs(Vec<i32>);

impl Drop for Programs {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

fn ok(dir: &TempDir, env: &[(&str, &str)], args: &[&str]) -> String {
    let out = ctl(dir, env, args);
    assert!(
        out.status.success(),
        "clippy-ctl {args:?}: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `spawn --name NAME ARGS…`, then its first prompt; its program's pid.
fn spawn(dir: &TempDir, env: &[(&str, &str)], name: &str, args: &[&str]) -> i32 {
    let mut all = vec!["--timeout", "30000", "spawn", "--name", name];
    all.extend_from_slice(args);
    ok(dir, env, &all);
    ok(
        dir,
        &[],
        &["--timeout", "30000", "wait-prompt", name, "--from", "0"],
    );
    let status: Value = serde_json::from_str(&ok(dir, &[], &["--json", "status", name])).unwrap();
    i32::try_from(status["session_status"]["pid"].as_i64().unwrap()).unwrap()
}

#[test]
fn notify_tells_turns_and_waits_rings_the_bell_follows_a_new_broker_and_ends_on_sigint() {
    let dir = TempDir::with_runtime("notify");
    let mut broker = Some(desktop::broker(&dir, &[]));
    let mut programs = Programs(Vec::new());

    // The hooked agent as `claude`, with the clippy-ctl its hooks call beside it.
    let bin = dir.join("agent-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(hooked_agent(), bin.join("claude")).unwrap();
    std::os::unix::fs::symlink(ctl_bin(), bin.join("clippy-ctl")).unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let claude = bin.join("claude").display().to_string();
    programs
        .0
        .push(spawn(&dir, &[("PATH", &path)], "agent", &["--", &claude]));
    programs.0.push(spawn(
        &dir,
        &[],
        "sh",
        &["--shell-integration", "--", "bash", "--norc", "--noprofile"],
    ));
    // A session not chosen: its turns are not told.
    programs.0.push(spawn(
        &dir,
        &[],
        "other",
        &["--shell-integration", "--", "bash", "--norc", "--noprofile"],
    ));

    let mut command = Command::new(ctl_bin());
    base_env(&mut command, &dir);
    command
        .args([
            "--json",
            "notify",
            "--no-desktop",
            "--bell",
            "--burst",
            "100",
            "sh",
            "agent",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut notify = Proc::spawn("clippy-ctl notify", &mut command);
    let out = collect(notify.child.stdout.take().unwrap());
    let err = collect(notify.child.stderr.take().unwrap());
    wait_for("notify to follow the broker", || {
        text(&err)
            .contains("following session.waiting, turn.completed at ")
            .then_some(())
    });

    // A turn of another session, then one of sh: only sh's is told, with its first line.
    ok(
        &dir,
        &[],
        &["--timeout", "30000", "exec", "other", "echo not-told"],
    );
    ok(
        &dir,
        &[],
        &[
            "--timeout",
            "30000",
            "exec",
            "sh",
            "echo hello-notify; echo second",
        ],
    );
    let told = wait_for("sh's turn told", || {
        notices(&out)
            .into_iter()
            .find(|n| n["title"] == "sh finished a turn")
    });
    assert_eq!(told["kind"], "turn");
    assert_eq!(told["body"], "hello-notify", "{told}");
    assert!(told["turn_id"].as_str().is_some_and(|t| t.contains(':')));

    // The agent asks for a permission: told with the tool and its input.
    ok(&dir, &[], &["send", "agent", "perm", "--enter"]);
    let waiting = wait_for("the agent's wait told", || {
        notices(&out).into_iter().find(|n| n["kind"] == "waiting")
    });
    assert_eq!(waiting["title"], "agent is waiting");
    let body = waiting["body"].as_str().unwrap();
    assert!(
        body.starts_with(r#"permission: Bash {"command":"ls"}"#),
        "{waiting}"
    );
    ok(&dir, &[], &["send", "agent", "y", "--enter"]);
    let answered = wait_for("the agent's turn told", || {
        notices(&out)
            .into_iter()
            .find(|n| n["title"] == "agent finished a turn")
    });
    // Its own message, through its Stop hook (its dialog takes Enter for the selected option,
    // `1. Yes`).
    assert_eq!(answered["body"], "You answered allow.", "{answered}");
    assert!(
        !notices(&out)
            .iter()
            .any(|n| n["title"] == "other finished a turn"),
        "another session's turn is not told: {}",
        text(&out)
    );
    let bells = text(&err).matches('\x07').count();
    assert!(bells >= 3, "a bell per notice: {bells}\n{}", text(&err));

    // The broker goes away and another comes: notify says so and follows the new one.
    broker.take().unwrap().stop();
    wait_for("notify to see the broker go", || {
        text(&err).contains("the broker went away").then_some(())
    });
    broker = Some(desktop::broker(&dir, &[]));
    wait_for("notify to follow the new broker", || {
        text(&err).contains("again").then_some(())
    });
    // sh's wrapper registers with the new broker; its next turn is told.
    ok(
        &dir,
        &[],
        &["--timeout", "30000", "wait-prompt", "sh", "--from", "0"],
    );
    ok(
        &dir,
        &[],
        &["--timeout", "30000", "exec", "sh", "echo after-restart"],
    );
    wait_for("the turn after the restart told", || {
        notices(&out)
            .into_iter()
            .find(|n| n["body"] == "after-restart")
    });
    // The turn sh's wrapper re-sent to the new broker (it had written it to the old one) is
    // no new completion: told once, before the restart, and completed once in the event stream
    // (which reaches back across the restart), replayed once (CONTRACTS/ROUTING.md).
    let hello: Vec<_> = notices(&out)
        .into_iter()
        .filter(|n| n["body"] == "hello-notify")
        .collect();
    assert_eq!(hello.len(), 1, "{hello:?}\n{}", text(&out));
    let events = ok(
        &dir,
        &[],
        &["--json", "events", "--since", "0", "--type", "turn"],
    );
    let of_hello = |kind: &str| {
        events
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|e| e["type"] == kind && e["turn_id"] == told["turn_id"])
            .count()
    };
    assert_eq!(of_hello("turn.completed"), 1, "{events}");
    assert_eq!(of_hello("turn.replayed"), 1, "{events}");

    // Ctrl+C: a clean end.
    notify.signal(Signal::SIGINT);
    let status = notify.wait();
    assert!(status.success(), "{status}: {}", text(&err));
    drop(broker);
}

/// With no broker yet, notify says it waits for one, follows it once it comes, and SIGTERM ends
/// it with exit 0.
#[test]
fn notify_waits_for_a_broker_that_is_not_there_yet() {
    let dir = TempDir::with_runtime("notify-later");
    let mut command = Command::new(ctl_bin());
    base_env(&mut command, &dir);
    command
        .args(["notify", "--no-desktop"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut notify = Proc::spawn("clippy-ctl notify", &mut command);
    let _out = collect(notify.child.stdout.take().unwrap());
    let err = collect(notify.child.stderr.take().unwrap());
    wait_for("notify to say it waits", || {
        text(&err).contains("waiting for one").then_some(())
    });
    let _broker = desktop::broker(&dir, &[]);
    wait_for("notify to follow the broker once it is there", || {
        text(&err)
            .contains("following session.waiting")
            .then_some(())
    });
    notify.signal(Signal::SIGTERM);
    let status = notify.wait();
    assert!(status.success(), "{status}: {}", text(&err));
}
