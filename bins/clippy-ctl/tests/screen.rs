//! End-to-end: `clippy-ctl screen` against a real broker and a real `clippy-session` on a
//! terminal (a PTY) of the test's own, wrapping a program that prints 50 lines and then waits at
//! a dialog. Every wait is for a condition; the deadlines only fail a test that hangs.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::path::Path;
use std::process::Output;

use clippy_pty::WinSize;
use desktop::{OnTerminal, TempDir, broker, ctl, python, sessions, wait_for, workspace_bin};
use serde_json::Value;

/// `clippy-session --name NAME -- python3 dialog.py` on an 80×24 terminal of the test's own.
fn wrapped_dialog(dir: &TempDir, name: &str) -> OnTerminal {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/dialog.py");
    let program = program.display().to_string();
    OnTerminal::start(
        dir,
        workspace_bin("clippy-session"),
        &["--name", name, "--", &python(), &program],
        WinSize::new(80, 24),
    )
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Starts a broker and the wrapped dialog named `name`, and waits until the dialog is on its
/// screen: `wait-for` matches once the wrapper's tap has taken the output, and a `screen`
/// request queues behind all of it.
fn dialog(dir: &TempDir, name: &str) -> (desktop::Broker, OnTerminal) {
    let broker = broker(dir, &[]);
    let wrapped = wrapped_dialog(dir, name);
    wait_for("the session to register", || {
        sessions(dir)
            .iter()
            .any(|(_, n, _)| n.as_deref() == Some(name))
            .then_some(())
    });
    let out = ctl(
        dir,
        &[],
        &["--timeout", "20000", "wait-for", name, "Allow? [y/n]"],
    );
    assert!(out.status.success(), "{out:?}");
    (broker, wrapped)
}

fn lines(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn screen_shows_the_dialog_and_the_history_before_it() {
    let dir = TempDir::with_runtime("screen");
    let (_broker, _wrapped) = dialog(&dir, "dlg");

    let out = ctl(&dir, &[], &["screen", "dlg", "--history", "100", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let reply = &json(&out)["screen"];
    let all = lines(&reply["lines"]);
    let history = reply["history"].as_u64().unwrap() as usize;
    let (cols, rows) = (
        reply["cols"].as_u64().unwrap(),
        reply["rows"].as_u64().unwrap(),
    );
    assert_eq!((cols, rows), (80, 24), "{reply}");
    assert_eq!(
        all.len(),
        history + 24,
        "history lines, then one per row: {reply}"
    );
    assert_eq!(reply["alternate"], false);
    // Every line printed, in order, the dialog last: 27 in history, 23 and the dialog on screen.
    let mut want: Vec<String> = (1..=50).map(|i| format!("line {i}")).collect();
    want.push("Allow? [y/n]".into());
    assert_eq!(all, want, "{reply}");
    assert_eq!(history, 27);
    assert_eq!(reply["cursor_row"], 23);
    assert_eq!(reply["cursor_col"], "Allow? [y/n] ".len());
    assert!(reply["session"].as_str().is_some_and(|s| !s.is_empty()));

    // Without --history: the visible rows only, as plain text.
    let out = ctl(&dir, &[], &["screen", "dlg"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut want = all[history..].join("\n");
    want.push('\n');
    assert_eq!(text, want);
    assert!(text.ends_with("line 49\nline 50\nAllow? [y/n]\n"), "{text}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A history shorter than asked is all there is.
    let out = ctl(&dir, &[], &["--json", "screen", "dlg", "--history", "5"]);
    let reply = &json(&out)["screen"];
    assert_eq!(reply["history"], 5);
    assert_eq!(lines(&reply["lines"])[0], "line 23");
}

#[test]
fn screen_of_an_unknown_session_fails_with_session_not_found() {
    let dir = TempDir::with_runtime("screen-unknown");
    let _broker = broker(&dir, &[]);
    let out = ctl(&dir, &[], &["screen", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("clippy-ctl: session_not_found: ") && stderr.contains("\"nope\""),
        "{stderr}"
    );
    let out = ctl(&dir, &[], &["--json", "screen", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(json(&out)["error"]["reason"], "session_not_found");
}

#[test]
fn screen_of_a_killed_wrapper_fails_instead_of_waiting() {
    let dir = TempDir::with_runtime("screen-killed");
    let (_broker, wrapped) = dialog(&dir, "doomed");
    wrapped.child.signal(clippy_pty::Signal::SIGKILL).unwrap();
    // Asked at once, the broker may not have seen the connection go yet: either way the answer
    // is a refusal, never the timeout (the generous --timeout would fail the test if it hung).
    let out = ctl(
        &dir,
        &[],
        &["--json", "--timeout", "60000", "screen", "doomed"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let reason = json(&out)["error"]["reason"].as_str().unwrap().to_owned();
    assert!(
        reason == "session_disconnected" || reason == "session_not_found",
        "{reason}"
    );
    // Once the broker has dropped the session, it has ended.
    wait_for("the session to go", || {
        sessions(&dir)
            .iter()
            .all(|(_, n, _)| n.as_deref() != Some("doomed"))
            .then_some(())
    });
    let out = ctl(&dir, &[], &["screen", "doomed"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("session_not_found"),
        "{out:?}"
    );
}
