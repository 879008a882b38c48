//! The spool operations end to end (seed 002 §8, CONTRACTS/SPOOL.md): a real broker in the test's
//! own `XDG_RUNTIME_DIR`, sessions wrapped by `clippy-session` on real PTYs (bash with
//! `--shell-integration`, Python programs from `tests/programs/`), and `clippy-ctl` run as a
//! process — or, where a test needs many requests, one `clippy_proto::Client` connection.
//!
//! Nothing here sleeps to synchronise: every wait is either the product's own (`wait-for`,
//! `wait-prompt`, `exec`) or a poll of the broker's `session_status` with a deadline.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_proto::{ErrorReason, Message, Mode, PatternKind, ProtoError, SessionState};
use serde_json::Value;
use support::broker::{self, CtlRun, Fixture};
use support::{Spawn, Term, now_ms, parse_iso8601_ms, program, python, settle};

/// How long a `clippy-ctl` run may take before the test fails (its own `--timeout` is shorter).
const CTL_DEADLINE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// The broker
// ---------------------------------------------------------------------------------------------

/// What these tests add to the shared fixture.
impl Fixture {
    /// `clippy-ctl ARGS…` with the test's environment, run to its end.
    fn ctl(&self, args: &[&str]) -> CtlRun {
        self.spawn_ctl(args).finish(CTL_DEADLINE)
    }

    /// `clippy-ctl --json ARGS…`: the exit code and the one JSON document on stdout. Checks the
    /// raw text never holds a `next_cursor` (seed 002 §3.7) and stderr stays empty.
    fn ctl_json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ctl(&all);
        assert!(
            !out.stdout.contains("next_cursor"),
            "clippy-ctl {all:?} answered a next_cursor: {}",
            out.stdout
        );
        let value: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "clippy-ctl {all:?} (exit {}) did not print one JSON document ({e}):\n{}\nstderr: {}",
                out.code, out.stdout, out.stderr
            )
        });
        assert!(no_key(&value, "next_cursor"), "clippy-ctl {all:?}: {value}");
        (out.code, value)
    }

    /// `clippy-ctl ARGS…` started in the background.
    fn spawn_ctl(&self, args: &[&str]) -> Bg {
        Bg::start(broker::ctl_command(&self.dir, args), args)
    }

    /// A wrapped `bash --norc --noprofile` with `--shell-integration`, named `name`, started in
    /// the test's `home/`, with its turns logged to `turn_log`; returned once the broker knows
    /// it idle at its first prompt.
    fn shell(&self, name: &str, turn_log: &Path) -> Term {
        let mut term = Spawn::wrapper(
            &self.dir,
            [
                "--name",
                name,
                "--shell-integration",
                "--turn-log",
                turn_log.to_str().unwrap(),
                "--",
                "bash",
                "--norc",
                "--noprofile",
            ],
        )
        .cwd(self.dir.home())
        .start();
        term.expect("\x1b]133;B\x07");
        self.wait_state(name, "idle at its first prompt", |s| {
            s.connected && s.mode == Mode::Idle
        });
        term
    }

    /// The whole spool of `session` through `clippy-ctl read` (in 1 MiB steps).
    fn read_all(&self, session: &str) -> Vec<u8> {
        let mut data = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (code, value) = self.ctl_json(&["read", session, "--from", &cursor.to_string()]);
            assert_eq!(code, 0, "read: {value}");
            assert_eq!(value["cursor"], cursor, "{value}");
            let chunk = json_bytes(&value);
            let resume = value["resume_cursor"].as_u64().unwrap();
            assert_eq!(resume, cursor + chunk.len() as u64, "{value}");
            if chunk.is_empty() {
                return data;
            }
            data.extend_from_slice(&chunk);
            cursor = resume;
        }
    }
}

/// Whether no object anywhere in `value` has the key `key`.
fn no_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(map) => !map.contains_key(key) && map.values().all(|v| no_key(v, key)),
        Value::Array(items) => items.iter().all(|v| no_key(v, key)),
        _ => true,
    }
}

/// The bytes of a `read --json` answer: `data` (UTF-8) or `data_b64`.
fn json_bytes(value: &Value) -> Vec<u8> {
    if let Some(text) = value["data"].as_str() {
        return text.as_bytes().to_vec();
    }
    let b64 = value["data_b64"]
        .as_str()
        .unwrap_or_else(|| panic!("no data in {value}"));
    base64::engine::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    support::find(haystack, needle.as_bytes()).is_some()
}

fn cursor_of(value: &Value) -> u64 {
    value["resume_cursor"]
        .as_u64()
        .unwrap_or_else(|| panic!("no resume_cursor in {value}"))
}

/// An `exec` answer's output (its text view: the trailing newline is not part of it).
fn output_of(value: &Value) -> &str {
    value["output"]
        .as_str()
        .unwrap_or_else(|| panic!("no output in {value}"))
        .trim_end_matches('\n')
}

fn reason_of(value: &Value) -> &str {
    value["error"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no error reason in {value}"))
}

/// The spool file's length on disk.
fn spool_len(state: &SessionState) -> u64 {
    let path = state.spool.as_deref().expect("the session has a spool");
    std::fs::metadata(path).unwrap().len()
}

// ---------------------------------------------------------------------------------------------
// Processes run in the background
// ---------------------------------------------------------------------------------------------

/// A process with piped output read on threads, killed on drop if still running.
struct Bg {
    what: String,
    started: Instant,
    child: Child,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    done: bool,
}

impl Bg {
    /// `command` (stdin from /dev/null, in a process group of its own: see
    /// [`broker::ctl_command`]) started with its output piped.
    fn start(mut command: Command, args: &[&str]) -> Bg {
        let started = Instant::now();
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let drain = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                bytes
            })
        };
        let stdout = drain(Box::new(child.stdout.take().unwrap()));
        let stderr = drain(Box::new(child.stderr.take().unwrap()));
        Bg {
            what: format!("clippy-ctl {args:?}"),
            started,
            child,
            stdout: Some(stdout),
            stderr: Some(stderr),
            done: false,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited (its output is collected by [`finish`](Self::finish)).
    fn exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Waits for the exit, at most `deadline`; the exit code (128 + N for a signal) and output.
    fn finish(mut self, deadline: Duration) -> CtlRun {
        use std::os::unix::process::ExitStatusExt;
        let end = Instant::now() + deadline;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < end,
                "{} did not exit within {deadline:?}",
                self.what
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        self.done = true;
        let elapsed = self.started.elapsed();
        let stdout = self.stdout.take().unwrap().join().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        CtlRun {
            code: status
                .code()
                .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            elapsed,
        }
    }

    /// [`finish`](Self::finish) for a `--json` run: the exit code and the document.
    fn finish_json(self, deadline: Duration) -> (i32, Value) {
        let what = self.what.clone();
        let out = self.finish(deadline);
        assert!(
            !out.stdout.contains("next_cursor"),
            "{what}: {}",
            out.stdout
        );
        let value: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "{what} (exit {}): not JSON ({e}): {}\n{}",
                out.code, out.stdout, out.stderr
            )
        });
        (out.code, value)
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------------------------

#[test]
fn iso8601_parser_knows_the_documented_example() {
    assert_eq!(
        parse_iso8601_ms("2023-11-14T22:14:20.456Z"),
        Some(1_700_000_060_456)
    );
    assert_eq!(parse_iso8601_ms("2023-11-14 22:14:20.456Z"), None);
}

// ---------------------------------------------------------------------------------------------
// The guess program in a shell
// ---------------------------------------------------------------------------------------------

/// The command line that runs `guess.py`.
fn guess_command() -> String {
    format!("{} {}", python(), program("guess.py").display())
}

/// Types the guess program's command line into the idle shell `sh` (an interactive session
/// begins: seed 002's `exec_interactive`) and waits for its question. Returns the cursor the
/// session was at before (what `exec_interactive` returns) and the `resume_cursor` after the
/// question.
fn start_guess(fx: &Fixture) -> (u64, u64) {
    let before = fx.wait_state("sh", "idle", |s| s.mode == Mode::Idle);
    let from = before.resume_cursor;
    let sent = fx.ctl(&["send", "sh", &guess_command(), "--enter"]);
    assert_eq!(sent.code, 0, "{sent:?}");
    let (code, found) = fx.ctl_json(&[
        "wait-for",
        "sh",
        "Guess a number",
        "--from",
        &from.to_string(),
    ]);
    assert_eq!(code, 0, "{found}");
    assert_eq!(found["matched"], true, "{found}");
    assert_eq!(found["match_text"], "Guess a number", "{found}");
    assert!(found["match_cursor"].as_u64().unwrap() >= from, "{found}");
    (from, cursor_of(&found))
}

/// The turn-log lines whose input ran the guess program.
fn guess_turns(log: &Path) -> Vec<Value> {
    if !log.exists() {
        return Vec::new();
    }
    support::read_turn_log(log)
        .into_iter()
        .filter(|t| t["input"].as_str().is_some_and(|i| i.contains("guess.py")))
        .collect()
}

/// The complete interactive flow of §8.2/§8.3: answer `answer`, wait for `reply`, wait for the
/// prompt; checks the exit code everywhere it is reported.
fn guess_flow(answer: &str, reply: &str, exit: i64) {
    let fx = Fixture::new();
    let log = fx.dir.join("turns.jsonl");
    let _term = fx.shell("sh", &log);

    let (_, resume) = start_guess(&fx);
    let state = fx.state(&mut fx.client(), "sh").unwrap();
    assert_eq!(state.mode, Mode::Busy, "the guess program runs: {state:?}");
    assert!(
        state
            .current_input
            .as_deref()
            .is_some_and(|i| i.contains("guess.py")),
        "{state:?}"
    );

    let sent = fx.ctl(&["send", "sh", &format!("{answer}\\r")]);
    assert_eq!(sent.code, 0, "{sent:?}");
    let (code, found) = fx.ctl_json(&["wait-for", "sh", reply, "--from", &resume.to_string()]);
    assert_eq!(code, 0, "{found}");
    assert_eq!(found["match_text"], reply, "{found}");
    let resume = cursor_of(&found);
    assert_eq!(found["match_span"]["end"], resume, "{found}");

    let (code, prompt) = fx.ctl_json(&["wait-prompt", "sh", "--from", &resume.to_string()]);
    assert_eq!(code, 0, "{prompt}");
    assert_eq!(prompt["matched"], true, "{prompt}");
    assert!(
        prompt["match_cursor"].as_u64().unwrap() >= resume,
        "{prompt}"
    );
    assert!(cursor_of(&prompt) >= prompt["match_cursor"].as_u64().unwrap());
    assert_eq!(
        prompt["exit_code"], exit,
        "the prompt's exit code: {prompt}"
    );
    assert_eq!(
        prompt["cwd"].as_str().map(PathBuf::from),
        Some(fx.dir.home()),
        "{prompt}"
    );

    // The prompt made the session idle, deterministically: no poll needed.
    let (code, status) = fx.ctl_json(&["status", "sh"]);
    assert_eq!(code, 0, "{status}");
    let status = &status["session_status"];
    assert_eq!(status["mode"], "idle", "{status}");
    assert_eq!(status["exec_running"], false, "{status}");
    assert_eq!(status["exit_code"], exit, "{status}");
    assert!(cursor_of(status) >= cursor_of(&prompt), "{status}");
    assert_eq!(status["prompt_cursor"], prompt["match_cursor"], "{status}");

    // The completed turn: in the turn log (the blocks.jsonl of seed 002) and in list-turns.
    let mut turns = Vec::new();
    settle("the guess turn in the turn log", || {
        turns = guess_turns(&log);
        !turns.is_empty()
    });
    assert_eq!(turns.len(), 1, "{turns:?}");
    let turn = &turns[0];
    assert_eq!(turn["exit_code"], exit, "{turn}");
    assert_eq!(turn["interrupted"], false, "{turn}");
    assert!(
        contains(&support::turn_content(turn), reply),
        "the turn holds {reply:?}: {turn}"
    );
    let span = turn["spool_span"].as_array().expect("a spool span");
    let (start, end) = (span[0].as_u64().unwrap(), span[1].as_u64().unwrap());
    assert!(start < end && end <= cursor_of(status), "{turn}");
    let spool = fx.read_all("sh");
    assert!(
        contains(&spool[start as usize..end as usize], reply),
        "the turn's spool span holds {reply:?}"
    );

    let (code, listed) = fx.ctl_json(&["list-turns", "sh"]);
    assert_eq!(code, 0, "{listed}");
    let listed: Vec<&Value> = listed["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["input"].as_str().is_some_and(|i| i.contains("guess.py")))
        .collect();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["exit_code"], exit, "{listed:?}");
    assert_eq!(listed[0]["turn_id"], turn["turn_id"], "{listed:?}");
    assert_eq!(status["last_turn_id"], turn["turn_id"], "{status}");
}

// ---------------------------------------------------------------------------------------------
// §8.1 cursor semantics
// ---------------------------------------------------------------------------------------------

#[test]
fn cursors_resume_where_the_last_match_ended_and_a_timeout_returns_the_spool_size() {
    let fx = Fixture::new();
    let _term = fx.shell("sh", &fx.dir.join("turns.jsonl"));

    let (code, exec) = fx.ctl_json(&["exec", "sh", r#"printf "hello\nworld\n""#]);
    assert_eq!(code, 0, "{exec}");
    assert_eq!(output_of(&exec), "hello\nworld", "{exec}");
    assert_eq!(exec["exit_code"], 0, "{exec}");
    let after_exec = cursor_of(&exec);

    let (code, hello) = fx.ctl_json(&["wait-for", "sh", "hello", "--from", "0"]);
    assert_eq!(code, 0, "{hello}");
    assert_eq!(hello["matched"], true, "{hello}");
    assert_eq!(hello["match_text"], "hello", "{hello}");
    let resume = cursor_of(&hello);
    assert_eq!(
        hello["match_span"]["end"], resume,
        "resume_cursor = match_span.end: {hello}"
    );
    assert_eq!(
        hello["match_cursor"], hello["match_span"]["start"],
        "{hello}"
    );

    let (code, world) = fx.ctl_json(&["wait-for", "sh", "world", "--from", &resume.to_string()]);
    assert_eq!(code, 0, "{world}");
    assert_eq!(world["match_text"], "world", "{world}");
    let world_start = world["match_cursor"].as_u64().unwrap();
    assert!(world_start >= resume, "{world}");

    // No match skipped, none found twice: the spans are exactly the occurrences in the spool
    // (the typed command line echoes both words, then the output prints them).
    let spool = fx.read_all("sh");
    let occurrences = |word: &str| -> Vec<u64> {
        spool
            .windows(word.len())
            .enumerate()
            .filter(|(_, w)| *w == word.as_bytes())
            .map(|(i, _)| i as u64)
            .collect()
    };
    let hellos = occurrences("hello");
    let worlds = occurrences("world");
    assert_eq!(hello["match_cursor"], hellos[0], "the first hello");
    let next_world = *worlds.iter().find(|&&w| w >= resume).unwrap();
    assert_eq!(world_start, next_world, "the first world after hello");
    // Going on from each resume_cursor walks through every later world, then times out.
    let mut cursor = cursor_of(&world);
    for &want in worlds.iter().filter(|&&w| w > world_start) {
        let (code, next) = fx.ctl_json(&["wait-for", "sh", "world", "--from", &cursor.to_string()]);
        assert_eq!(code, 0, "{next}");
        assert_eq!(next["match_cursor"], want, "{next}");
        assert!(cursor_of(&next) > cursor);
        cursor = cursor_of(&next);
    }
    // The output's own lines are in the spool as printed, \r\n normalised to \n.
    assert!(
        contains(&spool, "hello\nworld\n"),
        "{:?}",
        String::from_utf8_lossy(&spool)
    );
    assert!(
        cursor <= after_exec,
        "the output's world comes before the prompt after it"
    );

    // A timeout answers the spool's size: the same as status and as the file on disk.
    let (code, timeout) = fx.ctl_json(&[
        "wait-for",
        "sh",
        "NOT_IN_THE_SPOOL",
        "--from",
        &cursor.to_string(),
        "--timeout",
        "300",
    ]);
    assert_eq!(code, 124, "{timeout}");
    assert_eq!(timeout["matched"], false, "{timeout}");
    assert_eq!(reason_of(&timeout), "timeout", "{timeout}");
    let size = cursor_of(&timeout);
    let (code, status) = fx.ctl_json(&["status", "sh"]);
    assert_eq!(code, 0);
    assert_eq!(cursor_of(&status["session_status"]), size, "{status}");
    let state = fx.state(&mut fx.client(), "sh").unwrap();
    assert_eq!(spool_len(&state), size, "the spool file's length");
    assert_eq!(spool.len() as u64, size, "what read returned");

    // The same in text mode: exit 124, the resume_cursor alone on stdout.
    let text = fx.ctl(&[
        "wait-for",
        "sh",
        "NOT_IN_THE_SPOOL",
        "--from",
        "0",
        "--timeout",
        "200",
    ]);
    assert_eq!(text.code, 124, "{text:?}");
    assert_eq!(text.stdout, format!("{size}\n"), "{text:?}");
    assert!(!text.stdout.contains("next_cursor") && !text.stderr.contains("next_cursor"));
    // And a match in text mode: the resume_cursor on stdout, the span on stderr.
    let text = fx.ctl(&["wait-for", "sh", "hello", "--from", "0"]);
    assert_eq!(text.code, 0, "{text:?}");
    assert_eq!(text.stdout, format!("{}\n", cursor_of(&hello)), "{text:?}");
    assert!(text.stderr.contains("matched \"hello\""), "{text:?}");
}

// ---------------------------------------------------------------------------------------------
// §8.2, §8.3 interactive sessions
// ---------------------------------------------------------------------------------------------

#[test]
fn interactive_correct_guess_ends_at_an_idle_prompt_with_a_completed_turn() {
    guess_flow("7", "Correct!", 0);
}

#[test]
fn interactive_error_path_reports_the_exit_code() {
    guess_flow("11", "Out of range", 2);
}

// ---------------------------------------------------------------------------------------------
// §8.4 safety gate
// ---------------------------------------------------------------------------------------------

#[test]
fn exec_is_refused_while_an_interactive_program_waits_for_input() {
    let fx = Fixture::new();
    let _term = fx.shell("sh", &fx.dir.join("turns.jsonl"));
    let (_, resume) = start_guess(&fx);

    let (code, refused) = fx.ctl_json(&["exec", "sh", "echo SHOULD_FAIL"]);
    assert_eq!(code, 1, "{refused}");
    assert_eq!(reason_of(&refused), "busy", "{refused}");
    assert!(
        !refused["error"]["message"].as_str().unwrap().is_empty(),
        "a clear message: {refused}"
    );
    // Also in text mode: the reason first on stderr.
    let text = fx.ctl(&["exec", "sh", "echo SHOULD_FAIL"]);
    assert_eq!(text.code, 1, "{text:?}");
    assert!(text.stderr.contains("busy"), "{text:?}");

    // Nothing was typed: the spool does not hold it and the program still waits.
    let spool = fx.read_all("sh");
    assert!(
        !contains(&spool, "SHOULD_FAIL"),
        "{}",
        String::from_utf8_lossy(&spool)
    );
    let state = fx.state(&mut fx.client(), "sh").unwrap();
    assert_eq!(state.mode, Mode::Busy, "{state:?}");
    assert!(!state.exec_running, "{state:?}");

    let sent = fx.ctl(&["send", "sh", "7\\r"]);
    assert_eq!(sent.code, 0, "{sent:?}");
    let (code, found) = fx.ctl_json(&["wait-for", "sh", "Correct!", "--from", &resume.to_string()]);
    assert_eq!(code, 0, "{found}");
    let (code, prompt) = fx.ctl_json(&[
        "wait-prompt",
        "sh",
        "--from",
        &cursor_of(&found).to_string(),
    ]);
    assert_eq!(code, 0, "{prompt}");
    assert_eq!(prompt["exit_code"], 0, "{prompt}");
    let spool = fx.read_all("sh");
    assert!(!contains(&spool, "SHOULD_FAIL"));
    assert!(!contains(&spool, "Not a number"), "the program read only 7");
}

#[test]
fn a_second_exec_is_refused_while_one_runs() {
    let fx = Fixture::new();
    let _term = fx.shell("sh", &fx.dir.join("turns.jsonl"));

    // One exec in flight (seen by the broker), then another from a second client.
    let first = fx.spawn_ctl(&["--json", "exec", "sh", "sleep 1; echo one"]);
    fx.wait_state("sh", "the first exec in flight", |s| s.exec_running);
    let (code, refused) = fx.ctl_json(&["exec", "sh", "echo two"]);
    assert_eq!(code, 1, "{refused}");
    assert_eq!(reason_of(&refused), "busy", "{refused}");
    let (code, done) = first.finish_json(CTL_DEADLINE);
    assert_eq!(code, 0, "{done}");
    assert_eq!(output_of(&done), "one", "{done}");
    assert_eq!(done["exit_code"], 0, "{done}");

    // Two execs started at the same moment: exactly one runs.
    // (Each sleeps 2 s, so the later one surely arrives while the first runs.)
    let a = fx.spawn_ctl(&["--json", "exec", "sh", "sleep 2; echo alpha"]);
    let b = fx.spawn_ctl(&["--json", "exec", "sh", "sleep 2; echo beta"]);
    let (code_a, a) = a.finish_json(CTL_DEADLINE);
    let (code_b, b) = b.finish_json(CTL_DEADLINE);
    let (winner, loser) = match (code_a, code_b) {
        (0, 1) => (&a, &b),
        (1, 0) => (&b, &a),
        other => panic!("exactly one exec runs, the other is refused: {other:?}\n{a}\n{b}"),
    };
    assert_eq!(reason_of(loser), "busy", "{loser}");
    let word = winner["output"].as_str().unwrap().trim().to_owned();
    let other = if word == "alpha" { "beta" } else { "alpha" };
    assert!(word == "alpha" || word == "beta", "{winner}");
    let spool = fx.read_all("sh");
    assert!(!contains(&spool, other), "the refused exec typed nothing");
    assert!(!contains(&spool, "two"), "the refused exec typed nothing");
}

// ---------------------------------------------------------------------------------------------
// §8.5 prompt sentinel consistency
// ---------------------------------------------------------------------------------------------

#[test]
fn every_prompt_reports_its_exit_code_and_the_shell_s_directory() {
    let fx = Fixture::new();
    let log = fx.dir.join("turns.jsonl");
    let _term = fx.shell("sh", &log);
    let shell_pid = fx.state(&mut fx.client(), "sh").unwrap().pid;
    let home = fx.dir.home();
    let tmp = std::fs::canonicalize("/tmp").unwrap();
    let steps: [(&str, i64, &Path); 5] = [
        ("cd /tmp", 0, &tmp),
        ("true", 0, &tmp),
        ("false", 1, &tmp),
        ("echo x", 0, &tmp),
        ("cd -", 0, &home),
    ];
    let mut last_cursor = 0;
    let mut last_prompt_ms = 0;
    for (command, exit, want_dir) in steps {
        let before = now_ms();
        let (code, exec) = fx.ctl_json(&["exec", "sh", command]);
        assert_eq!(code, 0, "{command}: {exec}");
        assert_eq!(exec["exit_code"], exit, "{command}: {exec}");
        let resume = cursor_of(&exec);
        assert!(
            resume > last_cursor,
            "{command}: cursors move forward: {exec}"
        );
        let (code, prompt) = fx.ctl_json(&["wait-prompt", "sh", "--from", &resume.to_string()]);
        assert_eq!(code, 0, "{command}: {prompt}");
        assert_eq!(
            prompt["match_cursor"], resume,
            "{command}: the prompt exec saw: {prompt}"
        );
        assert_eq!(prompt["exit_code"], exit, "{command}: {prompt}");
        let cwd = PathBuf::from(prompt["cwd"].as_str().unwrap_or_else(|| panic!("{prompt}")));
        assert!(cwd.is_absolute() && cwd.is_dir(), "{command}: {prompt}");
        let real = std::fs::canonicalize(&cwd).unwrap();
        assert_eq!(&real, want_dir, "{command}: {prompt}");
        let shell_cwd = std::fs::read_link(format!("/proc/{shell_pid}/cwd")).unwrap();
        assert_eq!(
            real,
            std::fs::canonicalize(shell_cwd).unwrap(),
            "{command}: where bash is"
        );
        assert_eq!(exec["cwd"], prompt["cwd"], "{command}: {exec}");
        // Each prompt says when it appeared: after the command was sent, in order, and the
        // ISO-8601 time is the same instant.
        let ms = prompt["timestamp"]
            .as_u64()
            .unwrap_or_else(|| panic!("{command}: {prompt}"));
        assert!(
            ms >= before.saturating_sub(1) && ms <= now_ms() && ms >= last_prompt_ms,
            "{command}: a prompt time of this step: {prompt}"
        );
        let time = prompt["time"]
            .as_str()
            .unwrap_or_else(|| panic!("{prompt}"));
        assert_eq!(parse_iso8601_ms(time), Some(ms), "{command}: {prompt}");
        last_prompt_ms = ms;
        let state = fx.state(&mut fx.client(), "sh").unwrap();
        assert_eq!(state.mode, Mode::Idle, "{command}: {state:?}");
        assert_eq!(state.exit_code, Some(exit as i32), "{command}: {state:?}");
        last_cursor = cursor_of(&prompt);
    }

    // Every turn's metadata has a timestamp from this test's run, and list-turns's ISO-8601
    // time is the same instant.
    let begin = now_ms() - u64::try_from(fx.started.elapsed().as_millis()).unwrap() - 1000;
    let end = now_ms() + 1000;
    let (code, listed) = fx.ctl_json(&["list-turns", "sh"]);
    assert_eq!(code, 0, "{listed}");
    let turns = listed["turns"].as_array().unwrap();
    assert!(
        turns.iter().any(|t| t["input"] == "echo x"),
        "the echo x turn is listed: {listed}"
    );
    let mut previous = u64::MAX;
    for turn in turns {
        let ms = turn["timestamp"]
            .as_u64()
            .unwrap_or_else(|| panic!("{turn}"));
        assert!(
            (begin..=end).contains(&ms),
            "{turn}: not within the test ({begin}..{end})"
        );
        let time = turn["time"].as_str().unwrap_or_else(|| panic!("{turn}"));
        assert_eq!(parse_iso8601_ms(time), Some(ms), "{turn}");
        assert!(ms <= previous, "newest first: {listed}");
        previous = ms;
        let id = turn["turn_id"].as_str().unwrap();
        let (code, got) = fx.ctl_json(&["get-turn", id]);
        assert_eq!(code, 0, "{got}");
        assert_eq!(got["turn"]["timestamp"], ms, "{got}");
    }
    let echo = turns.iter().find(|t| t["input"] == "echo x").unwrap();
    assert_eq!(echo["exit_code"], 0, "{echo}");
    assert_eq!(
        std::fs::canonicalize(echo["cwd"].as_str().unwrap()).unwrap(),
        tmp,
        "{echo}"
    );

    // The turn log has a parseable line for every listed turn, with the same exit code and cwd.
    let mut lines = Vec::new();
    settle("every listed turn in the turn log", || {
        lines = if log.exists() {
            support::read_turn_log(&log)
        } else {
            Vec::new()
        };
        lines.len() >= turns.len()
    });
    for turn in turns {
        let line = lines
            .iter()
            .find(|l| l["turn_id"] == turn["turn_id"])
            .unwrap_or_else(|| panic!("{turn} not in the turn log"));
        assert_eq!(line["exit_code"], turn["exit_code"], "{line}");
        assert_eq!(line["cwd"], turn["cwd"], "{line}");
        assert_eq!(line["input"], turn["input"], "{line}");
    }
}

// ---------------------------------------------------------------------------------------------
// A match split across two writes
// ---------------------------------------------------------------------------------------------

#[test]
fn a_regex_match_split_across_two_writes_of_the_child_is_found() {
    let fx = Fixture::new();
    let mut term = Spawn::wrapper(
        &fx.dir,
        [
            "--name",
            "split",
            "--",
            python(),
            program("splitwrite.py").to_str().unwrap(),
        ],
    )
    .start();
    term.expect("split ready> ");
    let (code, ready) = fx.ctl_json(&["wait-for", "split", "split ready> ", "--from", "0"]);
    assert_eq!(code, 0, "{ready}");
    let from = cursor_of(&ready);

    // The wait is parked in the broker before the child writes the first half.
    let mut wait = fx.spawn_ctl(&[
        "--json",
        "--timeout",
        "10000",
        "wait-for",
        "split",
        r"abc-\d+-xyz",
        "--regex",
        "--from",
        &from.to_string(),
    ]);
    fx.wait_state("split", "the wait parked", |s| s.waiters == 1);
    let state = fx.state(&mut fx.client(), "split").unwrap();
    assert_eq!(state.resume_cursor, from, "nothing written yet: {state:?}");
    // The first half, reported by the wrapper: no match yet, the wait stays parked.
    term.send("\r");
    term.expect("abc-12");
    fx.wait_state("split", "the first half spooled", |s| {
        s.resume_cursor == from + 6
    });
    let (code, half) = fx.ctl_json(&["read", "split", "--from", &from.to_string()]);
    assert_eq!(code, 0, "{half}");
    assert_eq!(json_bytes(&half), b"abc-12", "{half}");
    let state = fx.state(&mut fx.client(), "split").unwrap();
    assert_eq!(
        state.waiters, 1,
        "still waiting after the first half: {state:?}"
    );
    assert!(!wait.exited(), "the wait answered after the first half");

    // The second half completes the match.
    term.send("\r");
    let (code, found) = wait.finish_json(CTL_DEADLINE);
    assert_eq!(code, 0, "{found}");
    assert_eq!(found["match_text"], "abc-1234-xyz", "{found}");
    assert_eq!(found["match_span"]["start"], from, "{found}");
    assert_eq!(found["match_span"]["end"], from + 12, "{found}");
    assert_eq!(cursor_of(&found), from + 12, "{found}");
    let spool = fx.read_all("split");
    assert_eq!(&spool[from as usize..], b"abc-1234-xyz\nsplit done> ");
    let state = fx.state(&mut fx.client(), "split").unwrap();
    assert_eq!(state.waiters, 0, "{state:?}");

    term.expect("split done> ");
    term.send("\r");
    assert!(term.wait_exit().success());
}

// ---------------------------------------------------------------------------------------------
// 10,000 consecutive waits over a large spool
// ---------------------------------------------------------------------------------------------

/// Lines of the flood, each numbered, and their width in bytes: 10,000 × 5,000 = 50 MB.
const FLOOD_LINES: u64 = 10_000;
const FLOOD_WIDTH: u64 = 5_000;
/// How long the 10,000 waits may take (a debug build on two cores), and after how many waits
/// the pace is checked against it.
const WAITS_BUDGET: Duration = Duration::from_secs(60);
const BUDGET_CHECK_AFTER: u64 = 500;

#[test]
fn ten_thousand_consecutive_waits_over_a_large_spool_find_every_line_once() {
    let fx = Fixture::new();
    let mut term = Spawn::wrapper(
        &fx.dir,
        [
            "--name",
            "flood",
            "--",
            python(),
            program("flood.py").to_str().unwrap(),
            &FLOOD_LINES.to_string(),
            &FLOOD_WIDTH.to_string(),
        ],
    )
    .start();
    term.expect("flood ready> ");
    let mut client = fx.client();
    let ready = match client
        .request(|id| Message::WaitFor {
            id,
            session: "flood".into(),
            pattern: "flood ready> ".into(),
            kind: PatternKind::Literal,
            from_cursor: 0,
            timeout_ms: Some(10_000),
        })
        .unwrap()
    {
        Message::Matched { resume_cursor, .. } => resume_cursor,
        other => panic!("{other:?}"),
    };

    let produce = Instant::now();
    term.send("\r");
    let total = FLOOD_LINES * FLOOD_WIDTH;
    // Poll the broker (at most two minutes) until the whole flood and its DONE are spooled.
    let deadline = produce + Duration::from_secs(120);
    let size = loop {
        let state = fx.state(&mut client, "flood").unwrap();
        if state.resume_cursor >= ready + total + 5 {
            let tail = match client
                .request(|id| Message::Read {
                    id,
                    session: "flood".into(),
                    from_cursor: state.resume_cursor - 5,
                    max_bytes: Some(5),
                })
                .unwrap()
            {
                Message::SpoolData { data, .. } => data,
                other => panic!("{other:?}"),
            };
            if tail == b"DONE\n" {
                break state.resume_cursor;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the flood was not spooled within 120 s: {} of {} bytes",
            state.resume_cursor,
            ready + total + 5
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let produced = produce.elapsed();
    assert!(size >= 50_000_000, "a spool of {size} bytes");
    assert_eq!(
        size,
        ready + 1 + total + 5,
        "flood ready> , the echoed Enter, the lines, DONE"
    );

    let scan = Instant::now();
    let mut cursor = ready;
    for n in 1..=FLOOD_LINES {
        if n == BUDGET_CHECK_AFTER + 1 && std::env::var_os("CLIPPY_TEST_FULL_FLOOD").is_none() {
            // The waits' speed is part of the contract here: the suite must stay usable. Fail
            // early (with the correctness of the waits so far checked) rather than run for
            // minutes; CLIPPY_TEST_FULL_FLOOD=1 runs all of them whatever they take.
            let spent = scan.elapsed();
            let projected = spent * u32::try_from(FLOOD_LINES / BUDGET_CHECK_AFTER).unwrap();
            assert!(
                projected <= WAITS_BUDGET,
                "{BUDGET_CHECK_AFTER} consecutive wait_for calls (one connection, regex \
                 `item (\\d{{7}})`, {FLOOD_WIDTH} bytes apart) took {spent:?}, {:?} each: \
                 {FLOOD_LINES} would take about {projected:?}, more than {WAITS_BUDGET:?} \
                 (the spool of {size} bytes was written in {produced:?})",
                spent / u32::try_from(BUDGET_CHECK_AFTER).unwrap()
            );
        }
        let reply = client
            .request(|id| Message::WaitFor {
                id,
                session: "flood".into(),
                pattern: r"item (\d{7})".into(),
                kind: PatternKind::Regex,
                from_cursor: cursor,
                timeout_ms: Some(10_000),
            })
            .unwrap_or_else(|e| panic!("wait number {n} from {cursor}: {e:?}"));
        let Message::Matched {
            matched,
            match_text,
            match_cursor,
            match_span,
            resume_cursor,
            ..
        } = reply
        else {
            panic!("wait number {n}: {reply:?}");
        };
        assert!(matched);
        assert_eq!(
            match_text,
            format!("item {n:07}"),
            "wait number {n} from {cursor}"
        );
        assert_eq!(match_cursor, match_span.0);
        assert_eq!(resume_cursor, match_span.1);
        assert!(
            match_span.0 >= cursor,
            "wait number {n}: {match_span:?} before {cursor}"
        );
        assert!(
            resume_cursor > cursor,
            "wait number {n}: the cursor did not move"
        );
        // Each line starts one line width after the previous one.
        assert_eq!(
            match_span.0,
            ready + 1 + (n - 1) * FLOOD_WIDTH,
            "wait number {n}"
        );
        cursor = resume_cursor;
    }
    let scanned = scan.elapsed();
    // Past the last line: only DONE, no more items.
    match client.request(|id| Message::WaitFor {
        id,
        session: "flood".into(),
        pattern: r"item (\d{7})".into(),
        kind: PatternKind::Regex,
        from_cursor: cursor,
        timeout_ms: Some(0),
    }) {
        Err(ProtoError::Broker {
            reason: ErrorReason::Timeout,
            resume_cursor,
            ..
        }) => assert_eq!(resume_cursor, Some(size)),
        other => panic!("{other:?}"),
    }
    eprintln!("flood: {size} bytes spooled in {produced:?}; {FLOOD_LINES} waits in {scanned:?}");
    term.send("\r");
    assert!(term.wait_exit().success());
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_input_is_refused_clearly_and_loses_nothing() {
    let fx = Fixture::new();
    let _term = fx.shell("sh", &fx.dir.join("turns.jsonl"));
    let (code, exec) = fx.ctl_json(&["exec", "sh", "echo before"]);
    assert_eq!(code, 0, "{exec}");
    let size = fx.state(&mut fx.client(), "sh").unwrap().resume_cursor;
    let before = fx.read_all("sh");

    let (code, bad) = fx.ctl_json(&["wait-for", "sh", "(", "--regex"]);
    assert_eq!((code, reason_of(&bad)), (1, "invalid_pattern"), "{bad}");
    let (code, bad) = fx.ctl_json(&["wait-for", "sh", "x*", "--regex"]);
    assert_eq!(
        (code, reason_of(&bad)),
        (1, "invalid_pattern"),
        "matches empty: {bad}"
    );
    // A wait on a session that is not there waits for it to register, then times out.
    let (code, bad) = fx.ctl_json(&["wait-for", "no-such-session", "x", "--timeout", "200"]);
    assert_eq!((code, reason_of(&bad)), (124, "timeout"), "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("never registered")),
        "{bad}"
    );
    let (code, bad) = fx.ctl_json(&["read", "no-such-session"]);
    assert_eq!((code, reason_of(&bad)), (1, "session_not_found"), "{bad}");
    let past = (size + 1000).to_string();
    let (code, bad) = fx.ctl_json(&["wait-for", "sh", "x", "--from", &past]);
    assert_eq!((code, reason_of(&bad)), (1, "invalid_cursor"), "{bad}");
    let (code, bad) = fx.ctl_json(&["read", "sh", "--from", &past]);
    assert_eq!((code, reason_of(&bad)), (1, "invalid_cursor"), "{bad}");
    let (code, bad) = fx.ctl_json(&["wait-prompt", "sh", "--from", &past]);
    assert_eq!((code, reason_of(&bad)), (1, "invalid_cursor"), "{bad}");
    // The end itself is a valid cursor: an empty read.
    let (code, end) = fx.ctl_json(&["read", "sh", "--from", &size.to_string()]);
    assert_eq!(code, 0, "{end}");
    assert_eq!(
        (json_bytes(&end).len(), cursor_of(&end)),
        (0, size),
        "{end}"
    );
    // A bad escape is a usage error, found before anything is sent.
    for bad in [r"a\q", r"\x4", "end\\"] {
        let out = fx.ctl(&["send", "sh", bad]);
        assert_eq!(out.code, 4, "send {bad:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "send {bad:?}: a message: {out:?}");
    }

    // A waiter whose client is killed is cancelled.
    let waiter = fx.spawn_ctl(&["--timeout", "60000", "wait-for", "sh", "NEVER_PRINTED"]);
    fx.wait_state("sh", "the wait parked", |s| s.waiters == 1);
    support::signal_pid(waiter.pid(), nix::sys::signal::Signal::SIGKILL);
    let killed = waiter.finish(CTL_DEADLINE);
    assert_eq!(killed.code, 128 + 9, "{killed:?}");
    fx.wait_state("sh", "the killed client's wait cancelled", |s| {
        s.waiters == 0
    });

    // Nothing was lost or typed: the spool is as it was, and the session still works.
    let state = fx.state(&mut fx.client(), "sh").unwrap();
    assert_eq!(
        (state.resume_cursor, state.mode),
        (size, Mode::Idle),
        "{state:?}"
    );
    assert_eq!(fx.read_all("sh"), before);
    let (code, exec) = fx.ctl_json(&["exec", "sh", "echo after"]);
    assert_eq!(code, 0, "{exec}");
    assert_eq!(output_of(&exec), "after", "{exec}");
}

#[test]
fn expect_send_sends_before_anything_another_client_sends_on_the_same_match() {
    let fx = Fixture::new();
    let _term = fx.shell("sh", &fx.dir.join("turns.jsonl"));
    let from = fx
        .wait_state("sh", "idle", |s| s.mode == Mode::Idle)
        .resume_cursor;

    // The rival parks first, so a broker that answered waits in order and left the send to the
    // expect-send client would let the rival's 9 reach the program before the 7: it sends the
    // moment its own wait for the same question returns, over a connection already open.
    let mut rival = fx.client();
    let session = "sh".to_owned();
    let rival = std::thread::spawn(move || {
        let found = rival.request(|id| Message::WaitFor {
            id,
            session: session.clone(),
            pattern: "Guess a number".into(),
            kind: PatternKind::Literal,
            from_cursor: from,
            timeout_ms: Some(10_000),
        });
        let sent = rival.request(|id| Message::Send {
            id,
            session,
            data: b"9\r".to_vec(),
            enter: false,
        });
        (found, sent)
    });
    fx.wait_state("sh", "the rival's wait parked", |s| s.waiters == 1);
    let expect = fx.spawn_ctl(&[
        "--json",
        "--timeout",
        "10000",
        "expect-send",
        "sh",
        "Guess a number",
        "7\\r",
        "--from",
        &from.to_string(),
    ]);
    fx.wait_state("sh", "both waits parked", |s| s.waiters == 2);
    let sent = fx.ctl(&["send", "sh", &guess_command(), "--enter"]);
    assert_eq!(sent.code, 0, "{sent:?}");

    let (code, found) = expect.finish_json(CTL_DEADLINE);
    assert_eq!(code, 0, "{found}");
    assert_eq!(found["match_text"], "Guess a number", "{found}");
    let (rival_found, rival_sent) = rival.join().unwrap();
    let Ok(Message::Matched { match_span, .. }) = rival_found else {
        panic!("{rival_found:?}");
    };
    assert_eq!(
        found["match_span"]["start"], match_span.0,
        "the same question"
    );
    assert!(
        matches!(rival_sent, Ok(Message::Done { .. })),
        "{rival_sent:?}"
    );

    // The program read 7: it is right. The 9 went to bash afterwards, once the program had
    // exited: bash ran it as a command.
    let resume = cursor_of(&found);
    let (code, outcome) = fx.ctl_json(&[
        "wait-for",
        "sh",
        r"Correct!|Wrong, it was 7",
        "--regex",
        "--from",
        &resume.to_string(),
    ]);
    assert_eq!(code, 0, "{outcome}");
    assert_eq!(
        outcome["match_text"], "Correct!",
        "the program got the rival's 9 first"
    );
    let (code, nine) = fx.ctl_json(&[
        "wait-for",
        "sh",
        "9: command not found",
        "--from",
        &cursor_of(&outcome).to_string(),
    ]);
    assert_eq!(code, 0, "{nine}");
    let (code, prompt) =
        fx.ctl_json(&["wait-prompt", "sh", "--from", &cursor_of(&nine).to_string()]);
    assert_eq!(code, 0, "{prompt}");
    assert_eq!(prompt["exit_code"], 127, "{prompt}");
    let mut turns = Vec::new();
    settle("the guess turn in the turn log", || {
        turns = guess_turns(&fx.dir.join("turns.jsonl"));
        !turns.is_empty()
    });
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_eq!(
        turns[0]["exit_code"], 0,
        "the guess turn exited 0: {turns:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// end-session
// ---------------------------------------------------------------------------------------------

#[test]
fn end_session_interrupts_then_kills_what_ignores_ctrl_c() {
    let fx = Fixture::new();
    let mut term = fx.shell("sh", &fx.dir.join("turns.jsonl"));

    // Idle: nothing to end.
    let (code, ended) = fx.ctl_json(&["end-session", "sh"]);
    assert_eq!(code, 0, "{ended}");
    assert_eq!(ended["ended"]["outcome"], "idle", "{ended}");

    // sleep 100: Ctrl+C brings the prompt back.
    let sent = fx.ctl(&["send", "sh", "sleep 100", "--enter"]);
    assert_eq!(sent.code, 0, "{sent:?}");
    let shell_pid = fx.state(&mut fx.client(), "sh").unwrap().pid;
    fx.wait_state("sh", "sleep 100 running", |s| s.mode == Mode::Busy);
    settle("sleep in the foreground", || {
        support::runs_in_foreground(shell_pid, "sleep")
    });
    let (code, ended) = fx.ctl_json(&["end-session", "sh"]);
    assert_eq!(code, 0, "{ended}");
    assert_eq!(ended["ended"]["outcome"], "interrupted", "{ended}");
    let resume = ended["ended"]["resume_cursor"].as_u64().unwrap();
    let state = fx.state(&mut fx.client(), "sh").unwrap();
    assert_eq!(state.mode, Mode::Idle, "{state:?}");
    assert_eq!(state.exit_code, Some(130), "{state:?}");
    assert!(state.resume_cursor >= resume, "{state:?}");
    assert!(!support::runs_in_foreground(shell_pid, "sleep"));
    // The session goes on.
    let (code, exec) = fx.ctl_json(&["exec", "sh", "echo still here"]);
    assert_eq!(code, 0, "{exec}");
    assert_eq!(output_of(&exec), "still here", "{exec}");

    // Ctrl+C ignored: a timeout, then --force kills and the session ends.
    let sent = fx.ctl(&["send", "sh", "trap '' INT; sleep 100", "--enter"]);
    assert_eq!(sent.code, 0, "{sent:?}");
    fx.wait_state("sh", "the trapped sleep running", |s| s.mode == Mode::Busy);
    settle("sleep in the foreground", || {
        support::runs_in_foreground(shell_pid, "sleep")
    });
    let (code, timeout) = fx.ctl_json(&["end-session", "sh", "--timeout", "1000"]);
    assert_eq!(code, 124, "{timeout}");
    assert_eq!(reason_of(&timeout), "timeout", "{timeout}");
    let state = fx.state(&mut fx.client(), "sh").unwrap();
    assert_eq!(state.mode, Mode::Busy, "{state:?}");
    let (code, killed) = fx.ctl_json(&["end-session", "sh", "--force", "--timeout", "1000"]);
    assert_eq!(code, 0, "{killed}");
    assert_eq!(killed["ended"]["outcome"], "killed", "{killed}");
    settle("the session gone from list-sessions", || {
        let (code, list) = fx.ctl_json(&["list-sessions"]);
        assert_eq!(code, 0, "{list}");
        !list.to_string().contains("\"sh\"")
    });
    // The wrapper exits (wait_exit fails the test if it does not, within its deadline).
    let status = term.wait_exit();
    eprintln!("the wrapper exited after the forced end: {status:?}");
    assert!(
        support::process_state(shell_pid).is_none_or(|s| s == 'Z'),
        "bash is gone"
    );
}

#[test]
fn without_shell_integration_exec_reports_no_exit_code_and_no_cwd() {
    // Nothing in the output says how a command ended or where the shell is: both are null,
    // never guessed (an `exit 3` here would be just as silent).
    let fx = Fixture::new();
    let _term = Spawn::wrapper(
        &fx.dir,
        ["--name", "plain", "--", "bash", "--norc", "--noprofile"],
    )
    .env("PS1", "$ ")
    .cwd(fx.dir.home())
    .start();
    fx.wait_state("plain", "idle at its first prompt", |s| {
        s.connected && s.mode == Mode::Idle
    });
    let (code, exec) = fx.ctl_json(&["exec", "plain", "echo hi; (exit 3)"]);
    assert_eq!(code, 0, "{exec}");
    assert_eq!(output_of(&exec), "hi", "{exec}");
    assert!(exec["exec"]["exit_code"].is_null(), "{exec}");
    assert!(exec["exec"]["cwd"].is_null(), "{exec}");
}

/// The script of README's "Driving agents from scripts", as printed there.
fn readme_script() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let start = readme
        .find("# terminal 3: a script\n")
        .expect("README has the script");
    let end = start
        + readme[start..]
            .find("```")
            .expect("the script's block ends");
    readme[start..end].to_owned()
}

#[test]
fn the_readme_script_drives_a_wrapped_shell_and_a_wrapped_repl() {
    let fx = Fixture::new();
    let _sh = fx.shell("sh", &fx.dir.join("turns.jsonl"));
    let _py = Spawn::wrapper(&fx.dir, ["--name", "py", "--", "python3", "-q"])
        .cwd(fx.dir.home())
        .start();
    fx.wait_state("py", "idle at its first prompt", |s| {
        s.connected && s.mode == Mode::Idle
    });
    let script = readme_script();
    // `clippy-ctl` on PATH, as after `cargo install`; everything else as the fixture's.
    let bin_dir = broker::ctl_bin().parent().unwrap().to_owned();
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", &script])
        .env_clear()
        .envs(support::base_env(&fx.dir))
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .current_dir(fx.dir.home())
        .stdin(Stdio::null());
    let run = Bg::start(command, &["bash", "-c", "README script"]).finish(CTL_DEADLINE);
    let report = format!("{run:?}\n--- script ---\n{script}");
    assert_eq!(run.code, 0, "{report}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    // exec sh: `ls | wc -l` in /tmp; exec py: 42.
    assert!(lines[0].trim().parse::<u64>().is_ok(), "{report}");
    assert!(run.stderr.contains("exit 0, cwd /tmp"), "{report}");
    assert_eq!(lines[1], "42", "{report}");
    assert_eq!(lines[2], "sent 46 bytes to sh", "{report}");
    // wait-for prints the cursor after the match; stderr says what matched.
    let after_answer: u64 = lines[3].parse().unwrap_or_else(|e| panic!("{e}: {report}"));
    assert!(run.stderr.contains(r#"matched "answer: y""#), "{report}");
    let spool = fx.read_all("sh");
    let answer = spool
        .windows(b"answer: y".len())
        .rposition(|w| w == b"answer: y")
        .expect("the answer is in the spool");
    assert_eq!(
        after_answer,
        (answer + b"answer: y".len()) as u64,
        "{report}"
    );
    // wait-prompt --json: the prompt after the answered command, exit 0 in /tmp.
    let prompt: Value = serde_json::from_str(lines[4]).unwrap_or_else(|e| panic!("{e}: {report}"));
    assert_eq!(prompt["matched"], true, "{report}");
    assert_eq!(prompt["exit_code"], 0, "{report}");
    assert_eq!(prompt["cwd"], "/tmp", "{report}");
    // status: idle, in /tmp.
    assert!(lines[5..].contains(&"mode:           idle"), "{report}");
    assert!(lines[5..].contains(&"cwd:            /tmp"), "{report}");
}
