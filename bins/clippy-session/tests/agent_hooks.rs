//! End-to-end tests of the agents' own hooks (CONTRACTS/HOOKS.md): the wrapper wires them for
//! one run, the agent runs the real `clippy-ctl hook`, and turns end at its word with its own
//! final message. The agent is `tests/programs/hooked_agent.py` under the name of the agent it
//! plays; its prompt is one no preset takes for a prompt, so only the hooks end its turns.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use support::{session_dirs, test_dir};

use std::path::{Path, PathBuf};

use clippy_pty::ExitStatus;
use serde_json::Value;

use support::broker::{Fixture, ctl_bin};
use support::{Spawn, TempDir, program, read_turn_log, settle};

/// `hooked_agent.py` as `name` (claude, codex or gemini), in a folder of its own, with the
/// `clippy-ctl` the wrapper points the hooks at beside it on `PATH`.
fn agent_named(dir: &TempDir, name: &str) -> PathBuf {
    let bin = dir.subdir("bin");
    let agent = bin.join(name);
    std::os::unix::fs::symlink(program("hooked_agent.py"), &agent).unwrap();
    std::os::unix::fs::symlink(ctl_bin(), bin.join("clippy-ctl")).unwrap();
    agent
}

fn path_with(bin: &Path) -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display())
}

/// The prompt `hooked_agent.py` draws as `agent`.
fn prompt_of(agent: &str) -> &'static str {
    if agent == "claude" {
        "\u{276f}\u{a0}"
    } else {
        "> "
    }
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Asks two questions of `agent` with hooks wired and returns the turn log.
fn two_questions(agent: &str) -> Vec<Value> {
    questions_in(&test_dir(), agent)
}

/// [`two_questions`], in `dir`.
fn questions_in(dir: &TempDir, agent: &str) -> Vec<Value> {
    let bin_agent = agent_named(dir, agent);
    let log = dir.join("turns.jsonl");
    let mut term = Spawn::wrapper(
        dir,
        ["--no-broker", "--turn-log", s(&log), "--", s(&bin_agent)],
    )
    .env("PATH", path_with(bin_agent.parent().unwrap()))
    .start();
    term.expect("hooks: wired");
    term.expect("socket: set");
    term.expect(prompt_of(agent));
    for question in ["first question", "second question"] {
        // Typed, then Enter once it shows, as a person does.
        term.send(question);
        term.expect(question);
        term.send("\r");
        term.expect("That is all.");
        term.expect(prompt_of(agent));
        settle("the turn ends at the hook", || {
            read_turn_log(&log)
                .iter()
                .any(|t| t["input"].as_str() == Some(question))
        });
    }
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
    read_turn_log(&log)
}

fn assert_turns_carry_the_agents_messages(turns: &[Value]) {
    assert_eq!(turns.len(), 2, "{turns:#?}");
    for (turn, question) in turns.iter().zip(["first question", "second question"]) {
        assert_eq!(turn["input"], question);
        assert_eq!(turn["ended_by_agent"], true, "{turn}");
        assert_eq!(
            turn["message"].as_str(),
            Some(format!("Read **{}** characters.\n\nThat is all.", question.len()).as_str()),
            "the agent's own markdown, exactly"
        );
        // The hook's report reaches the wrapper's loop after the output before it, sometimes
        // after the prompt drawn next as well; a prompt this preset does not know (`> `) is
        // then the text view's last line.
        let text = turn["text"].as_str().unwrap();
        assert_eq!(
            text.strip_suffix("\n>").unwrap_or(text),
            format!("Read {} characters.\n\nThat is all.", question.len()),
            "what the screen showed"
        );
    }
}

#[test]
fn claude_turns_end_at_its_stop_hook_with_its_own_message() {
    assert_turns_carry_the_agents_messages(&two_questions("claude"));
}

#[test]
fn codex_turns_end_at_its_notify_program_with_its_own_message() {
    assert_turns_carry_the_agents_messages(&two_questions("codex"));
}

/// Gemini CLI reads a per-run system-defaults file only under folders root owns alone, which a
/// test's temporary folder is not: its hooks come from the user's settings, installed once.
#[test]
fn gemini_turns_end_at_its_after_agent_hook_with_its_own_message() {
    let dir = test_dir();
    let installed = std::process::Command::new(ctl_bin())
        .args(["hooks", "install", "gemini"])
        .env("HOME", dir.home())
        .env_remove("GEMINI_CLI_HOME")
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    assert_turns_carry_the_agents_messages(&questions_in(&dir, "gemini"));
}

#[test]
fn gemini_per_run_wiring_under_a_shared_folder_is_refused_with_a_reason() {
    let dir = test_dir();
    let agent = agent_named(&dir, "gemini");
    let mut term = Spawn::wrapper(&dir, ["--no-broker", "--", s(&agent)])
        .env("PATH", path_with(agent.parent().unwrap()))
        .start();
    term.expect("gemini hooks not wired: Gemini CLI skips a system-defaults file under");
    term.expect("clippy-ctl hooks install gemini");
    term.expect("hooks: none");
    term.expect("socket: set");
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

#[test]
fn without_agent_hooks_nothing_is_wired_and_no_socket_is_offered() {
    let dir = test_dir();
    let agent = agent_named(&dir, "claude");
    let mut term = Spawn::wrapper(&dir, ["--no-broker", "--no-agent-hooks", "--", s(&agent)])
        .env("PATH", path_with(agent.parent().unwrap()))
        .start();
    term.expect("hooks: none");
    term.expect("socket: unset");
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

#[test]
fn a_program_that_is_not_a_known_agent_gets_the_socket_but_no_wiring() {
    let dir = test_dir();
    let agent = agent_named(&dir, "myagent");
    let mut term = Spawn::wrapper(&dir, ["--no-broker", "--preset", "claude", "--", s(&agent)])
        .env("PATH", path_with(agent.parent().unwrap()))
        .start();
    term.expect("hooks: none");
    term.expect("socket: set");
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

/// A permission request is the session's `waiting` state (with the tool and its input) until
/// it is answered, and does not end the turn; the hooks' counters show in `status`.
#[test]
fn a_permission_request_is_a_waiting_state_not_a_turn_end() {
    let fixture = Fixture::new();
    let dir = &fixture.dir;
    let agent = agent_named(dir, "claude");
    let mut term = Spawn::wrapper(dir, ["--name", "hooked", "--", s(&agent)])
        .env("PATH", path_with(agent.parent().unwrap()))
        .start();
    term.expect(prompt_of("claude"));
    fixture.wait_state("hooked", "registered", |_| true);
    term.send("perm\r");
    term.expect("Esc to cancel");
    let state = fixture.wait_state("hooked", "waiting", |state| state.waiting.is_some());
    let waiting = state.waiting.unwrap();
    assert_eq!(waiting.kind, "permission");
    assert_eq!(waiting.tool.as_deref(), Some("Bash"));
    assert_eq!(waiting.input.as_deref(), Some(r#"{"command":"ls"}"#));
    assert!(state.last_turn_id.is_none(), "asking ends no turn");
    term.send("1");
    let state = fixture.wait_state("hooked", "a turn", |state| state.last_turn_id.is_some());
    assert!(state.waiting.is_none(), "answered");
    assert!(state.hooks.wired);
    assert_eq!(state.hooks.turn_ends, 1);
    assert_eq!(state.hooks.disagreements, 0);
    assert_eq!(
        state.hooks.reports, 2,
        "the request and the end: {:?}",
        state.hooks
    );
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

/// A turn the screen ended and no hook reported ends anyway after the grace, without a
/// message, counted as a disagreement in `status`.
#[test]
fn a_turn_no_hook_reports_ends_after_the_grace_as_a_disagreement() {
    let fixture = Fixture::new();
    let dir = &fixture.dir;
    let agent = agent_named(dir, "claude");
    let mut term = Spawn::wrapper(dir, ["--name", "quiet", "--", s(&agent)])
        .env("PATH", path_with(agent.parent().unwrap()))
        .start();
    term.expect(prompt_of("claude"));
    fixture.wait_state("quiet", "registered", |_| true);
    term.send("quiet\r");
    term.expect("That is all.");
    let state = fixture.wait_state("quiet", "a turn", |state| state.last_turn_id.is_some());
    assert_eq!(state.hooks.turn_ends, 0);
    assert_eq!(state.hooks.disagreements, 1);
    assert_eq!(
        state.hooks.last_disagreement.as_deref(),
        Some("the screen showed the turn ended and no hook said so")
    );
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

/// What is not a hook report on the socket is counted as rejected and changes nothing else.
#[test]
fn garbage_on_the_hook_socket_is_rejected_and_the_session_goes_on() {
    use std::io::Write;
    let fixture = Fixture::new();
    let dir = &fixture.dir;
    let agent = agent_named(dir, "claude");
    let mut term = Spawn::wrapper(dir, ["--name", "g", "--", s(&agent)])
        .env("PATH", path_with(agent.parent().unwrap()))
        .start();
    term.expect(prompt_of("claude"));
    fixture.wait_state("g", "registered", |_| true);
    let socket = session_dirs(dir)[0].join("hook.sock");
    for garbage in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        b"clippy-hook 1 claude\n{not json",
        b"clippy-hook 1 aider\n{}",
        b"",
    ] {
        let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        stream.write_all(garbage).unwrap();
    }
    let state = fixture.wait_state("g", "rejected", |state| state.hooks.rejected == 4);
    assert_eq!(state.hooks.reports, 0);
    term.send("still here\r");
    term.expect("That is all.");
    let state = fixture.wait_state("g", "a turn", |state| state.last_turn_id.is_some());
    assert_eq!(state.hooks.turn_ends, 1);
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

/// Codex's hooks say nothing of a permission dialog: its screen does (the preset's waiting
/// line), so the session waits all the same, with the question and no tool.
#[test]
fn a_codex_dialog_seen_on_screen_is_a_waiting_state_too() {
    let fixture = Fixture::new();
    let dir = &fixture.dir;
    let agent = agent_named(dir, "codex");
    let mut term = Spawn::wrapper(dir, ["--name", "cx", "--", s(&agent)])
        .env("PATH", path_with(agent.parent().unwrap()))
        .start();
    term.expect(prompt_of("codex"));
    fixture.wait_state("cx", "registered", |_| true);
    term.send("perm");
    term.expect("perm");
    term.send("\r");
    term.expect("Esc to cancel");
    let state = fixture.wait_state("cx", "waiting", |state| state.waiting.is_some());
    let waiting = state.waiting.unwrap();
    assert_eq!(waiting.kind, "permission");
    assert_eq!(waiting.tool, None);
    assert_eq!(
        waiting.message.as_deref(),
        Some("Would you like to run the following command?")
    );
    assert!(state.last_turn_id.is_none(), "asking ends no turn");
    term.send("y");
    let state = fixture.wait_state("cx", "a turn", |state| state.last_turn_id.is_some());
    assert!(state.waiting.is_none(), "answered");
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

// ── answer (issue 30): clippy-ctl answer presses the dialog's own keys ───────────────────────

/// `hooked_agent.py` as `agent` under a wrapper named `name`, with a broker, asked for a
/// permission: its dialog drawn and the session waiting (returned).
fn asking(
    fixture: &Fixture,
    agent: &str,
    name: &str,
) -> (support::Term, clippy_proto::WaitingState) {
    let dir = &fixture.dir;
    let bin_agent = agent_named(dir, agent);
    let mut term = Spawn::wrapper(dir, ["--name", name, "--", s(&bin_agent)])
        .env("PATH", path_with(bin_agent.parent().unwrap()))
        .start();
    term.expect(prompt_of(agent));
    fixture.wait_state(name, "registered", |_| true);
    term.send("perm");
    term.expect("perm");
    term.send("\r");
    term.expect("Esc to cancel");
    let state = fixture.wait_state(name, "waiting", |state| state.waiting.is_some());
    (term, state.waiting.unwrap())
}

fn answer(fixture: &Fixture, args: &[&str]) -> support::broker::CtlRun {
    let mut all = vec!["--json", "answer"];
    all.extend_from_slice(args);
    support::broker::ctl(&fixture.dir, &all, std::time::Duration::from_secs(30))
}

fn json(run: &support::broker::CtlRun) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"))
}

/// The `session.answered` events so far.
fn answered_events(fixture: &Fixture) -> Vec<clippy_proto::EventRecord> {
    support::broker::events(&mut fixture.client(), &["session.answered"])
}

/// After the answer: the agent's turn ended, the session idle at its prompt, and a line typed
/// now is the next prompt as typed (nothing of an answer's keys in it).
fn nothing_typed_into_the_next_prompt(fixture: &Fixture, term: &mut support::Term, name: &str) {
    fixture.wait_state(name, "the answered turn", |state| {
        state.last_turn_id.is_some() && state.waiting.is_none()
    });
    term.send("next");
    term.expect("next");
    term.send("\r");
    term.expect("Read 4 characters.");
    let state = fixture.wait_state(name, "the next turn", |state| {
        state
            .last_turn_id
            .as_deref()
            .is_some_and(|t| t.ends_with(":2"))
    });
    let (_, meta) = support::broker::turn(&mut fixture.client(), &state.last_turn_id.unwrap());
    assert_eq!(meta.input.as_deref(), Some("next"));
}

#[test]
fn answer_allow_presses_the_options_number_and_the_agent_runs_the_tool() {
    let fixture = Fixture::new();
    let (mut term, waiting) = asking(&fixture, "claude", "c1");
    assert_eq!(waiting.id, 1);
    let listed = support::broker::session_named(&mut fixture.client(), "c1").unwrap();
    assert_eq!(listed.waiting_id, Some(1));
    let run = answer(&fixture, &["c1", "allow"]);
    assert_eq!(run.code, 0, "{run:?}");
    let said = json(&run);
    assert_eq!(said["answered"]["waiting_id"], 1);
    assert_eq!(said["answered"]["decision"], "allow");
    assert_eq!(said["answered"]["message"], "pressed 1 (Yes)");
    term.expect("You answered allow.");
    nothing_typed_into_the_next_prompt(&fixture, &mut term, "c1");
    let events = answered_events(&fixture);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].waiting_id, Some(1));
    assert_eq!(events[0].decision.as_deref(), Some("allow"));
    assert_eq!(events[0].by.as_deref(), Some("clippy-ctl"));
    let resumed = support::broker::events(&mut fixture.client(), &["session.resumed"]);
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert_eq!(resumed[0].waiting_id, Some(1));
}

#[test]
fn answer_always_picks_the_dont_ask_again_option() {
    let fixture = Fixture::new();
    let (mut term, _) = asking(&fixture, "claude", "c2");
    let run = answer(&fixture, &["c2", "always"]);
    assert_eq!(run.code, 0, "{run:?}");
    term.expect("You answered always.");
    assert_eq!(json(&run)["answered"]["decision"], "always");
}

/// Codex draws its options' keys: `deny` presses its `(esc)`.
#[test]
fn answer_deny_presses_the_key_the_option_draws() {
    let fixture = Fixture::new();
    let (mut term, waiting) = asking(&fixture, "codex", "x1");
    let id = waiting.id.to_string();
    let run = answer(&fixture, &["x1", "deny", "--id", &id]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        json(&run)["answered"]["message"],
        "pressed Esc (No, and tell Codex what to do differently)"
    );
    term.expect("You answered deny.");
    nothing_typed_into_the_next_prompt(&fixture, &mut term, "x1");
    // Codex's (p) is its "always".
    term.send("perm\r");
    term.expect("Esc to cancel");
    let waiting = fixture.wait_state("x1", "waiting again", |state| state.waiting.is_some());
    assert_eq!(
        waiting.waiting.unwrap().id,
        2,
        "the next wait takes the next id"
    );
    // The first wait's id is stale now.
    let run = answer(&fixture, &["x1", "allow", "--id", &id]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(json(&run)["error"]["reason"], "stale_answer");
    let run = answer(&fixture, &["x1", "always"]);
    assert_eq!(run.code, 0, "{run:?}");
    term.expect("You answered always.");
}

#[test]
fn answering_a_session_that_waits_for_nothing_is_refused() {
    let fixture = Fixture::new();
    let (mut term, _) = asking(&fixture, "claude", "c3");
    // Answered in the terminal first: the wait is over, and said so, by the terminal.
    term.send("1");
    term.expect("You answered allow.");
    fixture.wait_state("c3", "answered", |state| state.waiting.is_none());
    let run = answer(&fixture, &["c3", "deny"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(json(&run)["error"]["reason"], "not_waiting");
    let run = answer(&fixture, &["c3", "deny", "--id", "1"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(json(&run)["error"]["reason"], "not_waiting");
    let events = answered_events(&fixture);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].by.as_deref(), Some("terminal"));
    assert_eq!(
        events[0].decision.as_deref(),
        Some("allow"),
        "the 1 pressed"
    );
    nothing_typed_into_the_next_prompt(&fixture, &mut term, "c3");
    // Human-readable refusal, exit 1.
    let run = support::broker::ctl(
        &fixture.dir,
        &["answer", "c3", "allow"],
        std::time::Duration::from_secs(30),
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("not_waiting"), "{run:?}");
}

/// Two answers at once: exactly one is given, the other refused, and no key of the loser
/// reaches the agent's next prompt.
#[test]
fn two_answers_racing_one_wins() {
    let fixture = Fixture::new();
    let (mut term, _) = asking(&fixture, "claude", "c4");
    let racers: Vec<_> = ["allow", "deny"]
        .into_iter()
        .map(|decision| {
            support::broker::ctl_command(&fixture.dir, &["--json", "answer", "c4", decision])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let runs: Vec<_> = racers
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let won: Vec<_> = runs.iter().filter(|r| r.status.code() == Some(0)).collect();
    let lost: Vec<_> = runs.iter().filter(|r| r.status.code() == Some(1)).collect();
    assert_eq!((won.len(), lost.len()), (1, 1), "{runs:?}");
    let lost: Value = serde_json::from_slice(&lost[0].stdout).unwrap();
    assert_eq!(lost["error"]["reason"], "not_waiting", "{lost}");
    let won: Value = serde_json::from_slice(&won[0].stdout).unwrap();
    let decision = won["answered"]["decision"].as_str().unwrap().to_owned();
    term.expect(format!("You answered {decision}."));
    nothing_typed_into_the_next_prompt(&fixture, &mut term, "c4");
    assert_eq!(answered_events(&fixture).len(), 1);
}

/// `deny --reason`: the refusal, then the reason typed at the agent's prompt once it is back,
/// as its next message.
#[test]
fn a_denials_reason_is_typed_at_the_prompt_that_comes_back() {
    let fixture = Fixture::new();
    let (mut term, _) = asking(&fixture, "claude", "c5");
    let run = answer(&fixture, &["c5", "deny", "--reason", "use ls -la"]);
    assert_eq!(run.code, 0, "{run:?}");
    term.expect("You answered deny.");
    term.expect("Read 10 characters.");
    let state = fixture.wait_state("c5", "the reason's turn", |state| {
        state
            .last_turn_id
            .as_deref()
            .is_some_and(|t| t.ends_with(":2"))
    });
    let (_, meta) = support::broker::turn(&mut fixture.client(), &state.last_turn_id.unwrap());
    assert_eq!(meta.input.as_deref(), Some("use ls -la"));
}
