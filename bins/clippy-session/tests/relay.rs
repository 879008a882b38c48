//! The wrapper and the broker together: sessions register themselves (starting a broker when
//! none runs), their turns are relayable from one session into another, and they come back
//! when the broker is restarted.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use support::test_dir;

use clippy_proto::{Message, SessionSummary};
use support::broker::{self, broker_guard, brokers_of, client, socket, start_broker};
use support::{Spawn, TempDir, python, settle};

/// `list_sessions` on a new connection.
fn sessions(dir: &TempDir) -> Vec<SessionSummary> {
    broker::sessions(&mut client(dir))
}

/// A wrapped Python REPL named `name`, at its first prompt.
fn python_session(dir: &TempDir, name: &str) -> support::Term {
    let mut term = Spawn::wrapper(
        dir,
        [
            "--name",
            name,
            "--preset",
            "python",
            "--",
            python(),
            "-i",
            "-q",
        ],
    )
    .start();
    term.expect(">>> ");
    term
}

#[test]
fn a_turn_captured_in_one_session_is_pasted_into_another_as_one_bracketed_paste() {
    broker::broker_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    // No broker runs: the first session starts one.
    let mut alpha = python_session(&dir, "alpha");
    alpha.send("print('line one'); print('line two')\r");
    alpha.expect("line two\r\n>>> ");
    let dump = dir.join("pasted");
    let mut beta = Spawn::wrapper(
        &dir,
        [
            "--name",
            "beta",
            "--",
            python(),
            support::program("pastedump.py").to_str().unwrap(),
            dump.to_str().unwrap(),
        ],
    )
    .start();
    beta.expect("ready> ");
    settle(
        "both sessions registered, alpha's turn reported, beta's bracketed paste known",
        || {
            let list = sessions(&dir);
            list.iter()
                .any(|s| s.name.as_deref() == Some("alpha") && s.turns == 1)
                && list
                    .iter()
                    .any(|s| s.name.as_deref() == Some("beta") && s.bracketed_paste)
        },
    );
    assert_eq!(
        brokers_of(&dir.runtime()).len(),
        1,
        "one broker was started"
    );

    let mut client = client(&dir);
    let alpha_id = sessions(&dir)
        .into_iter()
        .find(|s| s.name.as_deref() == Some("alpha"))
        .unwrap()
        .session;
    match client
        .request(|id| Message::Capture {
            id,
            session: "alpha".into(),
        })
        .unwrap()
    {
        Message::Captured {
            turn_id,
            byte_length,
            ..
        } => {
            assert_eq!(turn_id, format!("{alpha_id}:1"));
            assert_eq!(byte_length, 20);
        }
        other => panic!("{other:?}"),
    }
    match client
        .request(|id| Message::GetTurn {
            id,
            turn_id: "alpha".into(),
            format: Default::default(),
        })
        .unwrap()
    {
        Message::Turn { content, turn, .. } => {
            assert_eq!(content, b"line one\r\nline two\r\n");
            assert_eq!(
                turn.input.as_deref(),
                Some("print('line one'); print('line two')")
            );
        }
        other => panic!("{other:?}"),
    }
    client
        .request(|id| Message::Paste {
            id,
            session: "beta".into(),
            format: Default::default(),
        })
        .unwrap();
    assert!(beta.wait_exit().success());
    assert_eq!(
        std::fs::read(&dump).unwrap(),
        b"\x1b[200~line one\r\nline two\r\n\x1b[201~"
    );

    // beta is gone; the relay buffer is not.
    settle("beta deregistered", || {
        sessions(&dir)
            .iter()
            .all(|s| s.name.as_deref() != Some("beta"))
    });
    match client.request(|id| Message::Paste {
        id,
        session: "beta".into(),
        format: Default::default(),
    }) {
        Err(clippy_proto::ProtoError::Broker { reason, .. }) => {
            assert_eq!(reason, clippy_proto::ErrorReason::SessionNotFound);
        }
        other => panic!("{other:?}"),
    }
    alpha.send("raise SystemExit(0)\r");
    assert!(alpha.wait_exit().success());
}

#[test]
fn sessions_come_back_with_their_turns_after_the_broker_restarts() {
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let mut broker = start_broker(&dir, &[]);
    let mut shell = Spawn::wrapper(
        &dir,
        [
            "--name",
            "sh",
            "--shell-integration",
            "--",
            "bash",
            "--norc",
            "--noprofile",
        ],
    )
    .start();
    shell.expect("\x1b]133;B\x07");
    shell.send("echo before\r");
    shell.expect("before\r\n");
    settle("the turn reached the broker", || {
        sessions(&dir).iter().any(|s| s.turns == 1)
    });

    broker.kill();
    // The session goes on without a broker: its turns are still detected.
    shell.send("echo during\r");
    shell.expect("during\r\n");
    let mut broker = start_broker(&dir, &[]);
    settle("the session re-registered with both turns", || {
        sessions(&dir)
            .iter()
            .any(|s| s.name.as_deref() == Some("sh") && s.turns == 2)
    });
    let mut client = client(&dir);
    let id = sessions(&dir)[0].session.clone();
    for (seq, want) in [(1, &b"before\r\n"[..]), (2, b"during\r\n")] {
        match client
            .request(|rid| Message::GetTurn {
                id: rid,
                turn_id: format!("{id}:{seq}"),
                format: Default::default(),
            })
            .unwrap()
        {
            Message::Turn { content, .. } => assert_eq!(content, want),
            other => panic!("{other:?}"),
        }
    }
    shell.send("exit\r");
    assert!(shell.wait_exit().success());
    settle("the session deregistered", || sessions(&dir).is_empty());
    broker.kill();
}

#[test]
fn no_broker_starts_none() {
    broker::broker_bin();
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let mut term = Spawn::wrapper(&dir, ["--no-broker", "--", "sh", "-c", "echo done"]).start();
    term.expect("done");
    assert!(term.wait_exit().success());
    assert!(!socket(&dir).exists());
    assert!(brokers_of(&dir.runtime()).is_empty());
}

#[test]
fn a_killed_wrapper_s_session_disappears_and_the_relay_buffer_stays() {
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let mut broker = start_broker(&dir, &[]);
    let mut alpha = python_session(&dir, "alpha");
    alpha.send("print('kept')\r");
    alpha.expect("kept\r\n>>> ");
    settle("alpha's turn reported", || {
        sessions(&dir).iter().any(|s| s.turns == 1)
    });
    let mut client = client(&dir);
    client
        .request(|id| Message::Capture {
            id,
            session: "alpha".into(),
        })
        .unwrap();

    support::signal_pid(alpha.pid(), nix::sys::signal::Signal::SIGKILL);
    settle("alpha's session is gone", || sessions(&dir).is_empty());
    let out = dir.join("relayed.txt");
    client
        .request(|id| Message::Deliver {
            id,
            sink: "file".into(),
            session: None,
            path: Some(out.to_str().unwrap().into()),
            format: Default::default(),
        })
        .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"kept\r\n");
    broker.kill();
}
