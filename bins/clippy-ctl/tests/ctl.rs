//! End-to-end tests of `clippy-ctl`: the real binary against the real `clippy-broker` with
//! sessions registered over the protocol (every command, every output form, every exit code), and
//! against a fault peer for the faults and replies a real broker does not give.

mod support;

use base64::Engine as _;
use clippy_proto::{ErrorReason, HookStats, Message, Progress, WaitingState, encode};
use serde_json::json;
use support::*;

// ---------------------------------------------------------------------------------------------
// list-sessions
// ---------------------------------------------------------------------------------------------

#[test]
fn list_sessions_prints_a_table() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["list-sessions"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        format!(
            "ID      NAME   PID   CONNECTED  TURNS  LAST TURN  WAITING        COMMAND\n\
             {ALPHA}  alpha  4242  yes        2      {ALPHA}:2   permission #1  claude --model 'opus 4'\n\
             {BETA}  -      77    yes        0      -          -              bash\n"
        )
    );
    assert_eq!(out.stderr, "");
}

#[test]
fn a_session_listed_as_disconnected_says_no() {
    // The real broker forgets a session once its wrapper has gone, so only a broker's scripted
    // reply shows a listed session without a connection: the table and JSON say so.
    let dir = test_dir();
    let _peer = FaultPeer::listing(
        &dir.socket(),
        vec![clippy_proto::SessionSummary {
            session: BETA.into(),
            name: None,
            pid: 77,
            command: vec!["bash".into()],
            preset: "shell".into(),
            connected: false,
            turns: 0,
            last_turn_id: None,
            bracketed_paste: false,
            waiting: None,
            waiting_id: None,
            attached: 0,
        }],
    );
    let table = Ctl::new(&dir)
        .run(["list-sessions"])
        .expect_code(0)
        .stdout_str();
    assert_eq!(
        table,
        format!(
            "ID      NAME  PID  CONNECTED  TURNS  LAST TURN  WAITING  COMMAND\n\
             {BETA}  -     77   no         0      -          -        bash\n"
        )
    );
    let out = Ctl::new(&dir).run(["list-sessions", "--json"]);
    assert_eq!(out.json()["sessions"][0]["connected"], false);
}

#[test]
fn list_sessions_json() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["list-sessions", "--json"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(
        json["sessions"][0],
        json!({
            "session": ALPHA, "name": "alpha", "pid": 4242, "connected": true, "turns": 2,
            "last_turn_id": format!("{ALPHA}:2"), "command": ["claude", "--model", "opus 4"],
            "preset": "claude", "bracketed_paste": true, "waiting": "permission",
            "waiting_id": 1, "attached": 0,
        })
    );
    assert_eq!(json["sessions"][1]["name"], json!(null));
    assert_eq!(json["sessions"][1]["waiting"], json!(null));
    assert_eq!(json["sessions"][1]["last_turn_id"], json!(null));
}

// ---------------------------------------------------------------------------------------------
// list-turns
// ---------------------------------------------------------------------------------------------

#[test]
fn list_turns_newest_first() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["list-turns", "alpha"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        format!(
            "TURN      TIME                      BYTES  FLAGS        EXIT  INPUT\n\
             {ALPHA}:2  2023-11-14T22:14:20.456Z  {}     interrupted  130   dump\\u{{1b}}[A\n\
             {ALPHA}:1  2023-11-14T22:13:20.123Z  {}     truncated    -     say hi\n",
            TURN2.len(),
            TURN1.len()
        )
    );
}

#[test]
fn list_turns_limit_is_sent() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["list-turns", ALPHA, "--limit", "1", "--json"]);
    out.expect_code(0);
    // The limit reached the broker: one turn, the newest.
    let json = out.json();
    assert_eq!(json["session"], ALPHA);
    assert_eq!(json["turns"].as_array().unwrap().len(), 1);
    assert_eq!(
        json["turns"][0],
        json!({
            "turn_id": format!("{ALPHA}:2"), "timestamp": T2, "time": "2023-11-14T22:14:20.456Z",
            "byte_length": TURN2.len(), "interrupted": true, "truncated": false,
            "exit_code": 130, "cwd": "/home/u", "input": "dump\u{1b}[A", "spool_span": [100, 125],
            "message_length": TURN2_MESSAGE.len(),
        })
    );
}

#[test]
fn list_turns_of_a_session_without_turns() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["list-turns", BETA]);
    out.expect_code(0);
    assert_eq!(out.stdout_str(), format!("no turns in {BETA}\n"));
    let out = Ctl::new(&dir).run(["list-turns", BETA, "--json"]);
    assert_eq!(out.json(), json!({"session": BETA, "turns": []}));
}

// ---------------------------------------------------------------------------------------------
// get-turn
// ---------------------------------------------------------------------------------------------

#[test]
fn get_turn_writes_exact_bytes_to_stdout_and_metadata_to_stderr() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    for (turn_id, content) in [("1", TURN1), ("2", TURN2)] {
        let out = Ctl::new(&dir).run(["get-turn", &format!("{ALPHA}:{turn_id}")]);
        out.expect_code(0);
        assert_eq!(out.stdout, content, "exact bytes, nothing added");
        assert_eq!(out.stderr.lines().count(), 1, "{:?}", out.stderr);
        assert!(out.stderr.contains(&format!("{ALPHA}:{turn_id}")));
    }
    let out = Ctl::new(&dir).run(["get-turn", &format!("{ALPHA}:2")]);
    assert_eq!(
        out.stderr,
        format!(
            "turn {ALPHA}:2: {} bytes (raw), 2023-11-14T22:14:20.456Z, exit 130, interrupted\n",
            TURN2.len()
        )
    );
}

#[test]
fn get_turn_of_a_session_fetches_its_latest_turn() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    // By name, by id, by unique prefix: the broker resolves it.
    for session in ["alpha", ALPHA, "k3f"] {
        let out = Ctl::new(&dir).run(["get-turn", session]);
        out.expect_code(0);
        assert_eq!(out.stdout, TURN2, "{session}");
        assert!(out.stderr.contains("(raw)"), "{session}: {:?}", out.stderr);
    }
}

#[test]
fn get_turn_text_format_is_requested() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["get-turn", "alpha", "--format", "text"]);
    out.expect_code(0);
    // The broker was asked for the text view: it is what came back.
    assert_eq!(out.stdout, TURN2_TEXT.as_bytes());
    assert!(out.stderr.contains("(text)"), "{:?}", out.stderr);
}

#[test]
fn get_turn_message_format_is_the_agents_own_message() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["get-turn", "alpha", "--format", "message"]);
    out.expect_code(0);
    assert_eq!(out.stdout, TURN2_MESSAGE.as_bytes(), "exact, nothing added");
    assert_eq!(
        out.stderr,
        format!(
            "turn {ALPHA}:2: {} bytes (message), 2023-11-14T22:14:20.456Z, exit 130, interrupted\n",
            TURN2_MESSAGE.len()
        )
    );
    let out = Ctl::new(&dir).run(["get-turn", "alpha", "--format", "message", "--json"]);
    out.expect_code(0);
    let turn = &out.json()["turn"];
    assert_eq!(turn["format"], "message");
    assert_eq!(turn["content"], TURN2_MESSAGE);
    assert_eq!(turn["message_length"], TURN2_MESSAGE.len());
    assert_eq!(turn["byte_length"], TURN2.len(), "still the raw length");
}

#[test]
fn get_turn_message_of_a_turn_without_one_fails_with_no_message() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let turn_id = format!("{ALPHA}:1");
    let out = Ctl::new(&dir).run(["get-turn", &turn_id, "--format", "message"]);
    out.expect_code(1);
    assert!(out.stdout.is_empty(), "nothing on stdout");
    // One line: the broker's reason and message (which goes on to say what to use instead).
    assert!(
        out.stderr.starts_with(&format!(
            "clippy-ctl: no_message: turn {turn_id} has no final message from the agent's hooks"
        )),
        "{:?}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{:?}", out.stderr);
    let out = Ctl::new(&dir).run(["get-turn", &turn_id, "--format", "message", "--json"]);
    out.expect_code(1);
    assert_eq!(out.json()["error"]["reason"], "no_message");
    assert_eq!(out.stderr, "");
    // The other formats of that turn still work.
    Ctl::new(&dir)
        .run(["get-turn", &turn_id, "--format", "text"])
        .expect_code(0);
}

#[test]
fn get_turn_json_has_content_when_utf8() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["--json", "get-turn", &format!("{ALPHA}:1")]);
    out.expect_code(0);
    assert_eq!(out.stderr, "", "JSON mode: everything in the one document");
    let json = out.json();
    let turn = &json["turn"];
    assert_eq!(turn["content"], std::str::from_utf8(TURN1).unwrap());
    assert!(turn.get("content_b64").is_none());
    assert_eq!(turn["turn_id"], format!("{ALPHA}:1"));
    assert_eq!(turn["format"], "raw");
    assert_eq!(turn["truncated"], true);
    assert_eq!(turn["time"], "2023-11-14T22:13:20.123Z");
}

#[test]
fn get_turn_json_has_content_b64_when_not_utf8() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["get-turn", &format!("{ALPHA}:2"), "--json"]);
    out.expect_code(0);
    let json = out.json();
    assert!(json["turn"].get("content").is_none());
    let b64 = json["turn"]["content_b64"].as_str().unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(decoded, TURN2);
}

// ---------------------------------------------------------------------------------------------
// capture, capture-by-id, paste, deliver
// ---------------------------------------------------------------------------------------------

#[test]
fn capture_prints_the_turn_and_size() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["capture", "alpha"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        format!("captured {ALPHA}:2 ({} bytes)\n", TURN2.len())
    );
    let out = Ctl::new(&dir).run(["capture", "alpha", "--json"]);
    assert_eq!(
        out.json(),
        json!({"captured": {"turn_id": format!("{ALPHA}:2"), "byte_length": TURN2.len()}})
    );
}

#[test]
fn capture_by_id() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    // Turn 1, not the latest: captured by its id.
    let out = Ctl::new(&dir).run(["capture-by-id", &format!("{ALPHA}:1")]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        format!("captured {ALPHA}:1 ({} bytes)\n", TURN1.len())
    );
    let out = Ctl::new(&dir).run(["capture-by-id", &format!("{ALPHA}:1"), "--json"]);
    assert_eq!(
        out.json(),
        json!({"captured": {"turn_id": format!("{ALPHA}:1"), "byte_length": TURN1.len()}})
    );
}

#[test]
fn paste_after_capture() {
    let dir = test_dir();
    let mut world = Standard::start(&dir);
    Ctl::new(&dir).run(["capture", "alpha"]).expect_code(0);
    let out = Ctl::new(&dir).run(["paste", "alpha"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        "pasted the relay buffer into alpha (raw)\n"
    );
    assert_pasted(&world.alpha.next_inject(), TURN2);
    let out = Ctl::new(&dir).run(["paste", "alpha", "--format", "text", "--json"]);
    out.expect_code(0);
    assert_eq!(
        out.json(),
        json!({"pasted": {"session": "alpha", "format": "text"}})
    );
    // The format reached the broker: alpha's wrapper was sent the text view.
    assert_pasted(&world.alpha.next_inject(), TURN2_TEXT.as_bytes());
}

#[test]
fn deliver_file_sends_an_absolute_path() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    Ctl::new(&dir).run(["capture", "alpha"]).expect_code(0);
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let out = Ctl::new(&dir).run(["deliver", "file", "--path", "sub/out.txt"]);
    out.expect_code(0);
    // The test runs clippy-ctl in the temporary directory (its cwd has no symlinks); the broker
    // (whose cwd is elsewhere) wrote the raw turn where clippy-ctl's relative path pointed.
    let want = std::fs::canonicalize(dir.path())
        .unwrap()
        .join("sub/out.txt");
    assert_eq!(std::fs::read(&want).unwrap(), TURN2);
    assert_eq!(
        out.stdout_str(),
        format!(
            "delivered the relay buffer to the file sink to {} (raw)\n",
            want.display()
        )
    );
    let out = Ctl::new(&dir).run(["deliver", "file", "--path", "o.txt", "--json"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["delivered"]["sink"], "file");
    assert!(json["delivered"]["path"].as_str().unwrap().starts_with('/'));
    assert_eq!(json["delivered"]["session"], json!(null));
}

#[test]
fn deliver_inject_and_clipboard() {
    let dir = test_dir();
    let mut world = Standard::start(&dir);
    Ctl::new(&dir).run(["capture", "alpha"]).expect_code(0);
    let out = Ctl::new(&dir).run(["deliver", "inject", "--session", "alpha"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        "delivered the relay buffer to the inject sink into alpha (raw)\n"
    );
    assert_pasted(&world.alpha.next_inject(), TURN2);
    let out = Ctl::new(&dir).run([
        "deliver",
        "inject",
        "--session",
        "alpha",
        "--json",
        "--format",
        "text",
    ]);
    out.expect_code(0);
    assert_eq!(
        out.json(),
        json!({"delivered": {"sink": "inject", "session": "alpha", "path": null, "format": "text"}})
    );
    assert_pasted(&world.alpha.next_inject(), TURN2_TEXT.as_bytes());
    // The broker has no display here (the kit starts it without DISPLAY): the clipboard sink
    // says so. Its success is tested with a real X server in desktop_x11.rs.
    let out = Ctl::new(&dir).run(["deliver", "clipboard", "--json", "--format", "text"]);
    out.expect_code(1);
    assert_eq!(out.json()["error"]["reason"], "sink_failed");
}

#[test]
fn deliver_with_missing_or_stray_options_is_a_usage_error() {
    let dir = test_dir();
    // No broker: had clippy-ctl connected before checking, it would exit 3 (unreachable).
    for args in [
        &["deliver", "inject"][..],
        &["deliver", "file"],
        &["deliver", "file", "--path", "x", "--session", "alpha"],
        &["deliver", "inject", "--session", "alpha", "--path", "x"],
    ] {
        let out = Ctl::new(&dir).run(args);
        out.expect_code(4);
        assert!(out.stderr.starts_with("clippy-ctl: "), "{:?}", out.stderr);
    }
    let out = Ctl::new(&dir).run(["deliver", "inject", "--json"]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["reason"], "invalid_arguments");
}

// ---------------------------------------------------------------------------------------------
// status
// ---------------------------------------------------------------------------------------------

#[test]
fn status_of_a_running_broker() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["status"]);
    out.expect_code(0);
    let text = out.stdout_str();
    assert!(text.starts_with("broker:   running\n"), "{text}");
    assert!(text.contains(&format!("socket:   {}\n", dir.socket().display())));
    assert!(text.contains("protocol: 1\n"));
    assert!(text.contains("sessions: 2 (2 connected)\n"), "{text}");
    assert!(text.contains("turns:    2\n"));
    // The real broker keeps history (under the test's XDG_STATE_HOME) and says so.
    let store = dir.runtime().join("state/clippy");
    assert!(
        text.contains(&format!("\nhistory:  {} (2 turns, ", store.display())),
        "{text}"
    );
    let out = Ctl::new(&dir).run(["status", "--json"]);
    out.expect_code(0);
    let mut json = out.json();
    let history = json["status"]
        .as_object_mut()
        .unwrap()
        .remove("history")
        .unwrap();
    assert!(
        history.is_object() && history.get("error").is_none(),
        "{history}"
    );
    assert_eq!(
        json,
        json!({"status": {
            "running": true, "socket": dir.socket().to_str().unwrap(), "protocol_version": 1,
            "sessions": 2, "connected_sessions": 2, "turns": 2,
        }})
    );
}

#[test]
fn status_of_a_broker_that_does_not_know_history_status() {
    // A broker older than the history store answers `history_status` with unknown_type:
    // `status` says so and still succeeds.
    let dir = test_dir();
    let _peer = FaultPeer::listing(&dir.socket(), Vec::new());
    let text = Ctl::new(&dir).run(["status"]).expect_code(0).stdout_str();
    for line in [
        "broker:   running",
        "sessions: 0 (0 connected)",
        "history:  not reported (unknown_type: not for a broker)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in {text}");
    }
    let out = Ctl::new(&dir).run(["status", "--json"]);
    out.expect_code(0);
    assert_eq!(
        out.json()["status"]["history"],
        json!({"error": {"reason": "unknown_type", "message": "not for a broker"}})
    );
}

#[test]
fn status_of_a_session_shows_what_it_waits_for_and_its_hooks() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let out = Ctl::new(&dir).run(["status", "alpha"]);
    out.expect_code(0);
    let text = out.stdout_str();
    assert!(
        text.contains(
            "\nwaiting:        permission #1 (Bash: {\"command\":\"ls\"}) — Claude needs your \
             permission to use Bash\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\nhooks:          wired yes, reports 12, turn ends 2, rejected 0, disagreements 1, \
             last: the screen showed a prompt and no hook came\n"
        ),
        "{text}"
    );
    let out = Ctl::new(&dir).run(["status", "alpha", "--json"]);
    out.expect_code(0);
    let status = &out.json()["session_status"];
    assert_eq!(
        status["waiting"],
        json!({
            "id": 1, "kind": "permission", "tool": "Bash", "input": ALPHA_INPUT,
            "message": "Claude needs your permission to use Bash", "since": T2,
        })
    );
    assert_eq!(status["hooks"]["wired"], true);
    assert_eq!(status["hooks"]["reports"], 12);
    assert_eq!(status["hooks"]["disagreements"], 1);

    // A session without hooks says nothing about waiting: it cannot know.
    let out = Ctl::new(&dir).run(["status", BETA]);
    out.expect_code(0);
    let text = out.stdout_str();
    assert!(
        !text.contains("waiting:") && !text.contains("hooks:"),
        "{text}"
    );
    let out = Ctl::new(&dir).run(["status", BETA, "--json"]);
    let status = &out.json()["session_status"];
    assert_eq!(status["waiting"], json!(null));
    assert_eq!(status["hooks"]["wired"], false);
}

#[test]
fn paste_deliver_and_routes_may_ask_for_the_message() {
    let dir = test_dir();
    let mut world = Standard::start(&dir);
    Ctl::new(&dir).run(["capture", "alpha"]).expect_code(0);
    let out = Ctl::new(&dir).run(["paste", "alpha", "--format", "message"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        "pasted the relay buffer into alpha (message)\n"
    );
    // The format reached the broker: alpha's wrapper was sent the agent's own message.
    assert_pasted(&world.alpha.next_inject(), TURN2_MESSAGE.as_bytes());
    let out = Ctl::new(&dir).run([
        "deliver",
        "inject",
        "--session",
        "alpha",
        "--format",
        "message",
        "--json",
    ]);
    out.expect_code(0);
    assert_eq!(out.json()["delivered"]["format"], "message");
    assert_pasted(&world.alpha.next_inject(), TURN2_MESSAGE.as_bytes());

    let out = Ctl::new(&dir).run(["route", "add", "alpha", BETA, "--format", "message"]);
    out.expect_code(0);
    assert!(out.stdout_str().contains("message"), "{}", out.stdout_str());
    // The broker keeps the route with the format asked for.
    let out = Ctl::new(&dir).run(["route", "list", "--json"]);
    out.expect_code(0);
    assert!(
        out.stdout_str().contains("\"format\":\"message\""),
        "{}",
        out.stdout_str()
    );
}

#[test]
fn status_without_a_broker_exits_3() {
    let dir = test_dir();
    let out = Ctl::new(&dir).run(["status"]);
    out.expect_code(3);
    let text = out.stdout_str();
    assert!(text.starts_with("broker:   not running ("), "{text}");
    assert!(text.contains("clippy-broker --foreground"), "{text}");
    let out = Ctl::new(&dir).run(["status", "--json"]);
    out.expect_code(3);
    let json = out.json();
    assert_eq!(json["status"]["running"], false);
    assert_eq!(json["status"]["socket"], dir.socket().to_str().unwrap());
    assert_eq!(json["status"]["error"]["reason"], "broker_unreachable");
    let out = Ctl::without_runtime(&dir).run(["status", "--json"]);
    out.expect_code(3);
    assert_eq!(out.json()["status"]["socket"], json!(null));
}

// ---------------------------------------------------------------------------------------------
// Broker errors: exit 1 with the reason
// ---------------------------------------------------------------------------------------------

#[test]
fn broker_errors_exit_1_with_their_reason() {
    let dir = test_dir();
    let _world = Standard::start(&dir);
    let missing_turn = format!("{ALPHA}:99");
    let cases = [
        (vec!["list-turns", "nope"], "session_not_found"),
        (vec!["get-turn", "nope"], "session_not_found"),
        (vec!["get-turn", &missing_turn], "turn_not_found"),
        (vec!["capture-by-id", &missing_turn], "turn_not_found"),
        (vec!["get-turn", BETA], "no_turn"),
        (vec!["paste", "alpha"], "buffer_empty"),
        (vec!["deliver", "clipboard"], "buffer_empty"),
    ];
    for (args, reason) in &cases {
        let out = Ctl::new(&dir).run(args);
        out.expect_code(1);
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            out.stderr.starts_with(&format!("clippy-ctl: {reason}: ")),
            "{args:?}: {:?}",
            out.stderr
        );
        let mut json_args = args.clone();
        json_args.push("--json");
        let out = Ctl::new(&dir).run(&json_args);
        out.expect_code(1);
        let json = out.json();
        assert_eq!(json["error"]["reason"], *reason, "{args:?}");
        assert!(json["error"]["message"].as_str().unwrap().len() > 3);
        assert_eq!(out.stderr, "");
    }
    Ctl::new(&dir).run(["capture", "alpha"]).expect_code(0);
    // A session whose wrapper has gone has ended: pasting into it is refused.
    drop(register(&dir.socket(), "ended01", Some("gone")));
    clippy_testkit::wait_until("gone ended", TIMEOUT, || {
        let out = Ctl::new(&dir).run(["status", "ended01", "--json"]);
        out.code == 0 && out.json()["session_status"]["mode"] == "exited"
    });
    let out = Ctl::new(&dir).run(["paste", "ended01"]);
    out.expect_code(1);
    assert!(
        out.stderr.starts_with("clippy-ctl: session_disconnected: "),
        "{}",
        out.stderr
    );
}

#[test]
fn a_wait_timeout_from_the_broker_exits_124() {
    let dir = test_dir();
    let _broker = FaultPeer::start(&dir.socket(), |m| match m {
        Message::Hello { .. } => ack(),
        _ => error(ErrorReason::Timeout, "no match within 10 ms"),
    });
    let out = Ctl::new(&dir).run(["list-sessions"]);
    out.expect_code(124);
    assert!(out.stderr.starts_with("clippy-ctl: timeout: "));
    let out = Ctl::new(&dir).run(["list-sessions", "--json"]);
    out.expect_code(124);
    assert_eq!(out.json()["error"]["reason"], "timeout");
}

// ---------------------------------------------------------------------------------------------
// Broker unreachable: exit 3
// ---------------------------------------------------------------------------------------------

#[test]
fn no_socket_exits_3_and_says_how_to_start_a_broker() {
    let dir = test_dir();
    let out = Ctl::new(&dir).run(["list-sessions"]);
    out.expect_code(3);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.contains(&dir.socket().display().to_string()),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("clippy-broker --foreground"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("clippy-session"), "{}", out.stderr);
    let out = Ctl::new(&dir).run(["get-turn", "x:1", "--json"]);
    out.expect_code(3);
    let json = out.json();
    assert_eq!(json["error"]["reason"], "broker_unreachable");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("clippy-broker --foreground")
    );
}

#[test]
fn a_socket_nobody_listens_on_exits_3() {
    let dir = test_dir();
    // Bound, then the listener is gone: connecting is refused.
    private_dir(dir.socket().parent().unwrap());
    drop(std::os::unix::net::UnixListener::bind(dir.socket()).unwrap());
    let out = Ctl::new(&dir).run(["capture", "alpha"]);
    out.expect_code(3);
    assert!(out.stderr.contains("not reachable"), "{}", out.stderr);
}

#[test]
fn no_runtime_dir_exits_3() {
    let dir = test_dir();
    let out = Ctl::without_runtime(&dir).run(["list-sessions"]);
    out.expect_code(3);
    assert!(out.stderr.contains("XDG_RUNTIME_DIR"), "{}", out.stderr);
    assert!(
        out.stderr.contains("clippy-broker --foreground"),
        "{}",
        out.stderr
    );
    let out = Ctl::without_runtime(&dir).run(["list-sessions", "--json"]);
    out.expect_code(3);
    assert_eq!(out.json()["error"]["reason"], "broker_unreachable");
}

#[test]
fn a_broker_that_never_answers_exits_3_within_the_timeout() {
    let dir = test_dir();
    // One that hangs in hello, one that hangs in the request.
    for hang_in_hello in [true, false] {
        let _broker = FaultPeer::start(&dir.socket(), move |m| match m {
            Message::Hello { .. } if !hang_in_hello => ack(),
            _ => Reply::Silent,
        });
        // `run` fails if clippy-ctl is still waiting long after: it gave up at its timeout.
        let out = Ctl::new(&dir).run(["list-sessions", "--timeout", "300"]);
        out.expect_code(3);
        assert!(
            out.stderr.contains("did not answer within 300 ms"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn socket_option_overrides_the_runtime_dir() {
    let dir = test_dir();
    // A broker whose runtime folder is not the one clippy-ctl would look in.
    let elsewhere = dir.subdir("elsewhere");
    let broker = Broker::in_runtime(&elsewhere).start();
    let socket = broker.socket().to_owned();
    let _alpha = register(&socket, ALPHA, Some("alpha"));
    let out = Ctl::without_runtime(&dir).run([
        "list-sessions".as_ref(),
        "--socket".as_ref(),
        socket.as_os_str(),
    ]);
    out.expect_code(0);
    assert!(out.stdout_str().contains("alpha"));
    // And the default socket is not where it is.
    Ctl::new(&dir).run(["list-sessions"]).expect_code(3);
}

// ---------------------------------------------------------------------------------------------
// Protocol errors: exit 5
// ---------------------------------------------------------------------------------------------

#[test]
fn protocol_errors_exit_5() {
    let dir = test_dir();
    type Case = fn(&Message) -> Reply;
    let cases: [(&str, Case); 5] = [
        ("an unexpected reply", |m| match m {
            Message::Hello { .. } => ack(),
            _ => Reply::message(Message::Done { id: 0 }),
        }),
        ("a malformed frame", |m| match m {
            Message::Hello { .. } => ack(),
            // A frame whose payload is not a MessagePack map.
            _ => Reply::Raw(vec![0, 0, 0, 3, 0xc1, 0xc1, 0xc1]),
        }),
        ("a truncated frame", |m| match m {
            Message::Hello { .. } => ack(),
            _ => Reply::Raw({
                let mut frame = encode(&Message::Done { id: 2 }).unwrap();
                frame.truncate(frame.len() - 1);
                frame
            }),
        }),
        ("a version mismatch", |_| {
            error(ErrorReason::VersionMismatch, "this broker speaks version 9")
        }),
        ("a missing field", |m| match m {
            Message::Hello { .. } => ack(),
            _ => error(ErrorReason::MissingField, "session"),
        }),
    ];
    for (what, handler) in cases {
        let broker = FaultPeer::start(&dir.socket(), handler);
        let out = Ctl::new(&dir).run(["list-sessions", "--timeout", "2000"]);
        assert_eq!(out.code, 5, "{what}: {out:?}");
        let out = Ctl::new(&dir).run(["list-sessions", "--json", "--timeout", "2000"]);
        assert_eq!(out.code, 5, "{what}: {out:?}");
        let reason = out.json()["error"]["reason"].clone();
        assert!(
            ["protocol_error", "version_mismatch", "missing_field"]
                .contains(&reason.as_str().unwrap()),
            "{what}: {reason}"
        );
        drop(broker);
    }
}

// ---------------------------------------------------------------------------------------------
// Usage errors: exit 4; help and version: exit 0
// ---------------------------------------------------------------------------------------------

#[test]
fn usage_errors_exit_4() {
    let dir = test_dir();
    for args in [
        &["frobnicate"][..],
        &[],
        &["get-turn"],
        &["list-turns", "s", "--limit", "many"],
        &["list-turns", "s", "--limit", "0"],
        &["list-sessions", "--timeout", "0"],
        &["get-turn", "s:1", "--format", "html"],
        &["paste", "s", "--format", "RAW!"],
        &["deliver", "carrier-pigeon"],
        &["completions", "tcsh"],
    ] {
        let out = Ctl::new(&dir).run(args);
        assert_eq!(out.code, 4, "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let out = Ctl::new(&dir).run(["get-turn", "s:1", "--format", "html"]);
    assert!(out.stderr.contains("html"), "{}", out.stderr);
    assert!(
        out.stderr.contains("raw"),
        "names the choices: {}",
        out.stderr
    );
}

#[test]
fn usage_errors_with_json_are_one_object() {
    let dir = test_dir();
    let out = Ctl::new(&dir).run(["get-turn", "s:1", "--format", "html", "--json"]);
    out.expect_code(4);
    let json = out.json();
    assert_eq!(json["error"]["reason"], "invalid_arguments");
    assert!(json["error"]["message"].as_str().unwrap().contains("html"));
    assert_eq!(out.stderr, "");
}

#[test]
fn help_and_version_exit_0() {
    let dir = test_dir();
    for args in [&["--help"][..], &["-h"], &["get-turn", "--help"], &["help"]] {
        let out = Ctl::new(&dir).run(args);
        out.expect_code(0);
        assert!(out.stdout_str().contains("Usage"), "{args:?}");
    }
    let out = Ctl::new(&dir).run(["--help"]);
    for command in [
        "list-sessions",
        "list-turns",
        "get-turn",
        "capture",
        "capture-by-id",
        "paste",
        "deliver",
        "status",
        "completions",
        "man",
    ] {
        assert!(out.stdout_str().contains(command), "{command}");
    }
    let out = Ctl::new(&dir).run(["--version"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        format!("clippy-ctl {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn config_file_must_be_readable() {
    let dir = test_dir();
    let _broker = Broker::in_dir(&dir).start();
    let out = Ctl::new(&dir).run(["list-sessions", "--config", "missing.toml"]);
    out.expect_code(4);
    assert!(out.stderr.contains("missing.toml"), "{}", out.stderr);
    let out = Ctl::new(&dir).run(["list-sessions", "--config", "missing.toml", "--json"]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["reason"], "invalid_configuration");
    std::fs::write(dir.path().join("clippy.toml"), "").unwrap();
    Ctl::new(&dir)
        .run(["list-sessions", "--config", "clippy.toml"])
        .expect_code(0);
}

// ---------------------------------------------------------------------------------------------
// completions, man
// ---------------------------------------------------------------------------------------------

#[test]
fn completions_for_every_shell() {
    let dir = test_dir();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Ctl::without_runtime(&dir).run(["completions", shell]);
        out.expect_code(0);
        let script = out.stdout_str();
        assert!(!script.is_empty(), "{shell}");
        assert!(script.contains("list-sessions"), "{shell}");
    }
    let out = Ctl::without_runtime(&dir).run(["completions", "bash"]);
    assert!(out.stdout_str().contains("complete -F _clippy__ctl"));
    let out = Ctl::without_runtime(&dir).run(["completions", "bash", "--json"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["completions"]["shell"], "bash");
    assert!(
        json["completions"]["script"]
            .as_str()
            .unwrap()
            .contains("list-sessions")
    );
}

#[test]
fn man_page_is_roff() {
    let dir = test_dir();
    let out = Ctl::without_runtime(&dir).run(["man"]);
    out.expect_code(0);
    let page = out.stdout_str();
    assert!(page.starts_with(".TH clippy-ctl 1"), "{page}");
    assert!(page.contains(".SH NAME"));
    assert!(page.contains("list\\-sessions"));
    // The subcommand pages the SUBCOMMANDS section names.
    assert!(page.contains("clippy\\-ctl\\-get\\-turn(1)"), "{page}");
    let out = Ctl::without_runtime(&dir).run(["man", "get-turn"]);
    out.expect_code(0);
    assert!(out.stdout_str().starts_with(".TH clippy-ctl-get-turn 1"));
    Ctl::without_runtime(&dir)
        .run(["man", "no-such-command"])
        .expect_code(4);
    let out = Ctl::without_runtime(&dir).run(["man", "--json"]);
    out.expect_code(0);
    assert!(out.json()["man"].as_str().unwrap().starts_with(".TH"));
}

// ---------------------------------------------------------------------------------------------
// The real broker
// ---------------------------------------------------------------------------------------------

#[test]
fn against_the_real_broker() {
    let dir = test_dir();
    let _broker = Broker::in_dir(&dir).start();
    let ctl = Ctl::new(&dir);

    // Nothing yet: no sessions, nothing to paste.
    let out = ctl.run(["list-sessions", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json(), json!({"sessions": []}));
    let out = ctl.run(["paste", "nope"]);
    out.expect_code(1);
    assert!(out.stderr.starts_with("clippy-ctl: "), "{}", out.stderr);

    let mut wrapper = register(&dir.socket(), "ctlsess01", Some("alpha"));
    let first = wrapper.report(turn_with(1, TURN1, "hello world\n", "say hi", None));
    let second = wrapper.report(turn_with(2, TURN2, TURN2_TEXT, "dump", None));
    assert_eq!(second, "ctlsess01:2");

    // paste before any capture: buffer_empty.
    let out = ctl.run(["paste", "alpha"]);
    out.expect_code(1);
    assert!(
        out.stderr.starts_with("clippy-ctl: buffer_empty: "),
        "{}",
        out.stderr
    );

    let out = ctl.run(["list-sessions"]);
    out.expect_code(0);
    let table = out.stdout_str();
    assert!(table.starts_with("ID "), "{table}");
    assert!(table.contains("ctlsess01  alpha"), "{table}");
    assert!(table.contains("fake-agent --flag"), "{table}");
    let out = ctl.run(["list-sessions", "--json"]);
    let json = out.json();
    assert_eq!(json["sessions"][0]["session"], "ctlsess01");
    assert_eq!(json["sessions"][0]["connected"], true);
    assert_eq!(json["sessions"][0]["turns"], 2);
    assert_eq!(json["sessions"][0]["last_turn_id"], "ctlsess01:2");

    let out = ctl.run(["list-turns", "alpha", "--json"]);
    out.expect_code(0);
    let json = out.json();
    let ids: Vec<_> = json["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["turn_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, [second.clone(), first.clone()], "newest first");
    let out = ctl.run(["list-turns", "ctlsess01", "--limit", "1"]);
    out.expect_code(0);
    assert_eq!(out.stdout_str().lines().count(), 2, "{}", out.stdout_str());

    // Exact bytes, by turn id and by session (prefix).
    let out = ctl.run(["get-turn", &first]);
    out.expect_code(0);
    assert_eq!(out.stdout, TURN1);
    assert!(out.stderr.contains(&first));
    let out = ctl.run(["get-turn", "ctlsess"]);
    out.expect_code(0);
    assert_eq!(out.stdout, TURN2);
    let out = ctl.run(["get-turn", &second, "--json"]);
    let b64 = out.json()["turn"]["content_b64"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
        TURN2
    );
    let out = ctl.run(["get-turn", &first, "--json"]);
    assert_eq!(
        out.json()["turn"]["content"],
        std::str::from_utf8(TURN1).unwrap()
    );
    let out = ctl.run(["get-turn", &first, "--format", "text"]);
    out.expect_code(0);
    assert_eq!(out.stdout, b"hello world\n");

    // Errors.
    let out = ctl.run(["list-turns", "nope"]);
    out.expect_code(1);
    assert!(
        out.stderr.starts_with("clippy-ctl: session_not_found: "),
        "{}",
        out.stderr
    );
    let out = ctl.run(["get-turn", "ctlsess01:99", "--json"]);
    out.expect_code(1);
    assert_eq!(out.json()["error"]["reason"], "turn_not_found");

    // Capture, paste into the (fake) wrapper, deliver to a file.
    let out = ctl.run(["capture-by-id", &first]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_str(),
        format!("captured {first} ({} bytes)\n", TURN1.len())
    );
    let out = ctl.run(["capture", "alpha", "--json"]);
    out.expect_code(0);
    assert_eq!(
        out.json(),
        json!({"captured": {"turn_id": second, "byte_length": TURN2.len()}})
    );
    let out = ctl.run(["paste", "alpha"]);
    out.expect_code(0);
    assert_eq!(wrapper.next_inject(), TURN2);
    let out = ctl.run(["deliver", "file", "--path", "delivered.out"]);
    out.expect_code(0);
    assert_eq!(
        std::fs::read(dir.path().join("delivered.out")).unwrap(),
        TURN2
    );

    let out = ctl.run(["status", "--json"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["status"]["running"], true);
    assert_eq!(json["status"]["sessions"], 1);
    assert_eq!(json["status"]["turns"], 2);

    // The agent's own word: a turn whose hooks gave its final message, and one without.
    let third = wrapper.report(turn_with(
        3,
        b"\x1b[1mDone.\x1b[0m\r\n",
        "Done.\n",
        "finish",
        Some("**Done.**"),
    ));
    let out = ctl.run(["get-turn", "alpha", "--format", "message"]);
    out.expect_code(0);
    assert_eq!(out.stdout, b"**Done.**");
    assert!(out.stderr.contains("9 bytes (message)"), "{}", out.stderr);
    let out = ctl.run(["get-turn", &third, "--json"]);
    assert_eq!(out.json()["turn"]["message_length"], 9);
    let out = ctl.run(["get-turn", &first, "--format", "message"]);
    out.expect_code(1);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.starts_with(&format!(
            "clippy-ctl: no_message: turn {first} has no final message from the agent's hooks"
        )),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--format text"), "{}", out.stderr);
    let out = ctl.run(["get-turn", &first, "--format", "message", "--json"]);
    out.expect_code(1);
    assert_eq!(out.json()["error"]["reason"], "no_message");
    // Relaying asks for the message and falls back to the text: never an error.
    ctl.run(["capture-by-id", &first]).expect_code(0);
    ctl.run(["paste", "alpha", "--format", "message"])
        .expect_code(0);
    assert_eq!(wrapper.next_inject(), b"hello world\n");

    // The wrapper reports the agent waiting for permission, and its hooks' counters.
    wrapper.progress(Progress {
        waiting: Some(WaitingState {
            id: 1,
            kind: "permission".into(),
            tool: Some("Bash".into()),
            input: Some(ALPHA_INPUT.into()),
            message: None,
            since: T2,
        }),
        hooks: HookStats {
            wired: true,
            reports: 4,
            turn_ends: 1,
            ..HookStats::default()
        },
        ..Progress::default()
    });
    let out = ctl.run(["status", "alpha"]);
    out.expect_code(0);
    let text = out.stdout_str();
    assert!(
        text.contains("\nwaiting:        permission #1 (Bash: {\"command\":\"ls\"})\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "\nhooks:          wired yes, reports 4, turn ends 1, rejected 0, disagreements 0\n"
        ),
        "{text}"
    );
    let out = ctl.run(["status", "alpha", "--json"]);
    assert_eq!(out.json()["session_status"]["waiting"]["tool"], "Bash");
    let out = ctl.run(["list-sessions"]);
    assert!(
        out.stdout_str().contains(" permission "),
        "{}",
        out.stdout_str()
    );
    let out = ctl.run(["events", "--type", "session.waiting", "--json"]);
    out.expect_code(0);
    let event = out.json();
    assert_eq!(event["session"], "ctlsess01");
    assert_eq!(event["reason"], "permission");
    assert_eq!(event["input"], ALPHA_INPUT);
    // Answered: the session no longer waits.
    wrapper.progress(Progress::default());
    let out = ctl.run(["events", "--type", "session.resumed", "--json"]);
    assert_eq!(out.json()["tool"], "Bash");
    let out = ctl.run(["list-sessions", "--json"]);
    assert_eq!(out.json()["sessions"][0]["waiting"], json!(null));
}

#[test]
fn real_broker_gone_exits_3() {
    let dir = test_dir();
    let broker = Broker::in_dir(&dir).start();
    Ctl::new(&dir).run(["status"]).expect_code(0);
    drop(broker);
    let out = Ctl::new(&dir).run(["list-sessions"]);
    out.expect_code(3);
    assert!(out.stderr.contains("clippy-broker --foreground"));
}

// ---------------------------------------------------------------------------------------------
// Sessions before they register and after they end (real broker)
// ---------------------------------------------------------------------------------------------

#[test]
fn status_of_an_ended_session_says_how_it_ended() {
    let dir = test_dir();
    let _broker = Broker::in_dir(&dir).start();
    let ctl = Ctl::new(&dir);
    let mut wrapper = register(&dir.socket(), "ctlend01", Some("doomed"));
    let reply = wrapper
        .client
        .request(|id| Message::Deregister {
            id,
            session: "ctlend01".into(),
            exit_code: Some(3),
            signal: None,
        })
        .expect("deregister");
    assert!(matches!(reply, Message::Done { .. }), "{reply:?}");

    let out = ctl.run(["status", "doomed"]);
    out.expect_code(0);
    let text = out.stdout_str();
    assert!(text.contains("session:        ctlend01\n"), "{text}");
    assert!(text.contains("connected:      no\n"), "{text}");
    assert!(
        text.contains("mode:           exited\nexited:         exit code 3 at "),
        "{text}"
    );
    let out = ctl.run(["status", "ctlend01", "--json"]);
    out.expect_code(0);
    let status = &out.json()["session_status"];
    assert_eq!(status["mode"], "exited");
    assert_eq!(status["exited"]["exit_code"], 3);
    assert_eq!(status["exited"]["signal"], serde_json::Value::Null);
    assert!(status["exited"]["ended_at"].as_u64().is_some(), "{status}");

    // Gone from the list; its exit in the event stream.
    let out = ctl.run(["list-sessions", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json(), json!({"sessions": []}));
    let out = ctl.run(["events", "--type", "session.exited"]);
    out.expect_code(0);
    assert!(
        out.stdout_str()
            .contains("session.exited ctlend01 doomed exit 3"),
        "{}",
        out.stdout_str()
    );
    // Other commands keep saying it ended.
    let out = ctl.run(["capture", "ctlend01"]);
    out.expect_code(1);
    assert!(out.stderr.contains("has ended"), "{}", out.stderr);
}

#[test]
fn a_wait_for_a_session_that_never_registers_times_out_saying_so() {
    let dir = test_dir();
    let _broker = Broker::in_dir(&dir).start();
    let ctl = Ctl::new(&dir);
    let out = ctl.run(["wait-prompt", "ghost", "--timeout", "300"]);
    out.expect_code(124);
    assert_eq!(out.stdout_str(), "0\n", "the cursor to go on from");
    assert!(out.stderr.contains("timeout: "), "{}", out.stderr);
    assert!(
        out.stderr.contains("\"ghost\" never registered"),
        "{}",
        out.stderr
    );
    let out = ctl.run(["exec", "ghost", "true", "--timeout", "300", "--json"]);
    out.expect_code(124);
    let json = out.json();
    assert_eq!(json["error"]["reason"], "timeout");
    assert!(
        json["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("never registered")),
        "{json}"
    );
}
