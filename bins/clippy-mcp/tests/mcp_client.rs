//! End to end (issue 17's "Done when"): `clippy-mcp` driven over stdio by a real MCP client — the
//! official MCP Python SDK (`mcp` from PyPI), in `tests/client/drive.py` — against a real broker
//! in a private `XDG_RUNTIME_DIR` and real sessions started by `clippy-ctl spawn`: bash with shell
//! integration, a Python REPL, and the guessing program of seed 002 §8 run in the shell.
//!
//! Each test starts its own broker and sessions and runs one scenario of the driver, which
//! asserts on every call (printing each request and its result, so a failure shows both) and
//! reports a few facts (`RESULT` lines) that are checked here against the world outside MCP.
//! Every test then checks that no clippy-mcp it ran panicked (their stderr is kept).
//!
//! Needs `cargo build -p clippy-session -p clippy-broker -p clippy-ctl` to have run (see
//! `support`); without the Python SDK a test says "skipped" and passes, unless
//! `CLIPPY_REQUIRE_MCP_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may panic on setup failures.

mod support;

use support::Fixture;

/// `tools/list`: all 26 tools, names as the catalogue has them, each input schema a valid JSON
/// Schema the SDK parsed, descriptions non-empty; an unknown tool is a JSON-RPC error (-32602).
#[test]
fn every_tool_is_listed_with_a_schema_and_an_unknown_tool_is_a_protocol_error() {
    let Some(fx) = Fixture::start("tools") else {
        return;
    };
    let driven = fx.drive("tools");
    let listed: Vec<String> = serde_json::from_value(driven.result("tools")).unwrap();
    let catalogue: Vec<&str> = clippy_mcp::tools::names().collect();
    assert_eq!(listed, catalogue, "the client sees the catalogue");
    assert_eq!(listed.len(), 26, "{listed:?}");
}

/// Lines written raw to clippy-mcp's stdin that are not JSON, or JSON but not a request, get a
/// JSON-RPC error or nothing; requests with bad parameters get an error reply with their id; the
/// server answers on after each, and exits 0 when stdin closes.
#[test]
fn malformed_lines_get_errors_or_nothing_and_the_server_answers_on() {
    let Some(fx) = Fixture::start("raw") else {
        return;
    };
    let driven = fx.drive("raw");
    eprintln!(
        "error codes of the bad lines: {}",
        driven.result("raw_errors")
    );
}

/// Seed 002 §8.1 and §8.5: exec with output, exit code and cwd; wait_for from 0 then from the
/// resume_cursor; a wait that times out is an error with reason timeout and resume_cursor = the
/// spool's size (status's, what read_spool read, the spool file's: checked here again once all
/// has stopped); several execs in a row, each with its prompt, exit code, cwd and time.
#[test]
fn seed_002_cursors_timeouts_and_prompts_through_the_tools() {
    let Some(mut fx) = Fixture::start("cursors") else {
        return;
    };
    fx.bash("sh");
    let driven = fx.drive("seed_cursors");
    let spool = driven.result("spool_path");
    let spool = spool.as_str().expect("a spool path");
    let size = std::fs::metadata(spool).unwrap().len();
    assert_eq!(
        driven.result("final_resume_cursor"),
        size,
        "the last timeout's resume_cursor is the spool file's size"
    );
}

/// Seed 002 §8.2–8.4: the guessing program started in the shell with send; its question waited
/// for; exec refused with reason busy while it waits; answered with expect_send (7: Correct!)
/// and with send (11: Out of range), each followed by wait_prompt with its exit code, and the
/// turns listed with them.
#[test]
fn seed_002_the_guessing_program_is_answered_and_exec_is_busy_meanwhile() {
    let Some(mut fx) = Fixture::start("guess") else {
        return;
    };
    fx.bash("sh");
    fx.drive("seed_guess");
}

/// A Python REPL: send with Enter, wait_prompt from the cursor before, get_turn (text, by
/// session and by turn_id; raw), read_spool from 0 and on from its resume_cursor, with escapes
/// stripped and kept, and the screen at the prompt.
#[test]
fn a_python_repl_is_asked_and_its_turn_spool_and_screen_read() {
    let Some(mut fx) = Fixture::start("repl") else {
        return;
    };
    fx.repl("py");
    fx.drive("repl");
}

/// `--max-reply-bytes 1024`: exec output and a turn longer than that are cut with total_bytes,
/// next_offset and a hint; reading on from each next_offset reassembles the text exactly (as a
/// clippy-mcp with the default limit returns it whole); read_spool and screen keep to the limit.
#[test]
fn large_turns_are_cut_with_a_way_to_read_on_that_reassembles_them() {
    let Some(mut fx) = Fixture::start("large") else {
        return;
    };
    fx.repl("py");
    fx.drive("truncation");
}

/// Every failure reason the tools give, each an isError result with reason and message:
/// session_not_found, invalid_argument, invalid_pattern, invalid_cursor, timeout, turn_not_found,
/// no_turn, broker_unavailable, route_not_found, buffer_empty, sink_failed; and capture, deliver
/// (the file holds the turn's text, checked here too) and paste succeeding.
#[test]
fn every_error_reason_is_a_tool_error_and_capture_deliver_paste_work() {
    let Some(mut fx) = Fixture::start("errors") else {
        return;
    };
    fx.bash("sh");
    fx.bash("empty");
    let driven = fx.drive("errors");
    let delivered = driven.result("delivered");
    let text = std::fs::read_to_string(delivered["path"].as_str().unwrap()).unwrap();
    assert_eq!(
        text,
        delivered["text"].as_str().unwrap(),
        "the delivered file"
    );
}

/// CONTRACTS/MCP.md: "wrong types are a tool error with reason invalid_argument naming the
/// field (so a model can correct itself)".
#[test]
fn an_argument_of_the_wrong_type_is_named_in_the_error() {
    let Some(mut fx) = Fixture::start("types") else {
        return;
    };
    fx.bash("sh");
    fx.drive("wrong_types");
}

/// route_add, route_list, route_remove (and route_not_found after it); events_since with
/// turn.completed events and last_event_id, since = last_event_id returning only newer ones,
/// types and limit.
#[test]
fn routes_round_trip_and_events_since_resumes_from_last_event_id() {
    let Some(mut fx) = Fixture::start("routes") else {
        return;
    };
    fx.bash("sh");
    fx.repl("py");
    fx.drive("routes_events");
}

/// Sessions as resources: resources/list has `clippy://session/NAME/screen` and, for a session
/// with a turn, `…/turn/latest`; reading it gives the latest turn's text; an unknown session's
/// resource is a JSON-RPC error; a subscribed latest turn is notified when it changes, a new
/// session changes the list; end_session on it.
#[test]
fn sessions_are_resources_with_notifications() {
    let Some(mut fx) = Fixture::start("resources") else {
        return;
    };
    fx.bash("sh");
    fx.bash("empty");
    let driven = fx.drive("resources");
    assert!(
        driven.result("late_session").as_str().is_some(),
        "the late session's id"
    );
}

/// Issue 30's orchestrator: two sessions started with `spawn_session` (the hooked test agent as
/// Claude Code, by its words, with env and size; bash by one command line, with shell
/// integration), the agent driven with send, wait_prompt and get_turn (its own message), a
/// permission wait seen in status (the place where `answer` goes is marked in the driver), a
/// gated route's handoffs from bash to the agent approved (the agent answers it) and denied (it
/// never reaches the agent) with inbox, approve and deny, the turns listed with `history` and one found with `search_history`
/// (the broker's history store is on), and every argument refused with the field named. Here:
/// both sessions are the broker's, as clippy-ctl sees them, and the found turn is in
/// `clippy-ctl search`.
#[test]
fn an_orchestrator_spawns_drives_approves_and_searches_through_the_tools() {
    let Some(fx) = Fixture::start("orchestrate") else {
        return;
    };
    let driven = fx.drive("orchestrate");
    let spawned = driven.result("spawned");
    let listed = fx.ctl(&["--json", "list-sessions"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["session"].as_str())
        .collect();
    for name in ["agent", "sh"] {
        let id = spawned[name].as_str().unwrap();
        assert!(ids.contains(&id), "{name} ({id}) is registered: {listed}");
    }
    let found = driven.result("found");
    let search = fx.ctl(&["--json", "search", "zebraquokka"]);
    let text = String::from_utf8_lossy(&search.stdout);
    assert!(
        search.status.success() && text.contains(found.as_str().unwrap()),
        "clippy-ctl search finds {found}: {text}"
    );
}
