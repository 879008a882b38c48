//! End-to-end tests of the live wrapper. `clippy-session` runs on a PTY the test opens — the
//! user's terminal, see `support` — so its raw-mode handling, signal handling and size following
//! are the real ones. Test programs of our own are in `tests/programs/`.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use support::{session_dirs, test_dir};

use std::fs;
use std::path::Path;

use clippy_pty::{ExitStatus, Signal, WinSize};
use nix::sys::termios::LocalFlags;
use serde_json::Value;

use support::{
    Headless, Spawn, TempDir, base_env, children_of, crlf_to_lf, environ_of, list_dir, mode_of,
    parse_environ, process_state, program, python, read_turn_log, runs_in_foreground, screen_tail,
    settle, signal_pid, tty_size, turn_content, wrapper_bin,
};

/// The prompt of a plain `bash --norc` (given through the environment, which bash honours).
const BASH_PROMPT: &str = "test$ ";

/// The end of bash's prompt with `--shell-integration` (OSC 133 `B`): the shell is waiting.
const PROMPT_END: &[u8] = b"\x1b]133;B\x07";

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Asserts two byte strings are equal; on failure shows where they first differ.
fn assert_bytes_eq(actual: &[u8], expected: &[u8], what: &str) {
    if actual == expected {
        return;
    }
    let at = actual
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(actual.len().min(expected.len()));
    let context = |bytes: &[u8]| {
        let from = at.saturating_sub(40);
        let to = (at + 80).min(bytes.len());
        bytes[from.min(to)..to].escape_ascii().to_string()
    };
    panic!(
        "{what}: {} bytes, expected {}; first difference at offset {at}\n  actual:   …{}…\n  expected: …{}…",
        actual.len(),
        expected.len(),
        context(actual),
        context(expected),
    );
}

fn str_field<'a>(turn: &'a Value, field: &str) -> &'a str {
    turn[field]
        .as_str()
        .unwrap_or_else(|| panic!("turn without a string {field}: {turn}"))
}

// ---------------------------------------------------------------------------------------------
// 1–2. Transparency
// ---------------------------------------------------------------------------------------------

/// The bytes the user's terminal receives through the wrapper are exactly the bytes it receives
/// when the program runs on it directly (both go through one PTY line discipline with the same
/// settings and size: the child's PTY when wrapped, the user's own when not).
#[test]
fn output_reaches_the_terminal_unmodified() {
    let dir = test_dir();
    let emit = program("emit.py");

    let mut direct = Spawn::program(&dir, python(), [s(&emit)])
        .size(100, 30)
        .start();
    assert_eq!(direct.wait_exit(), ExitStatus::Exited(0));
    let expected = direct.read_to_end();
    assert!(
        expected.len() > 100_000 && expected.ends_with(b"END-OF-EMIT"),
        "the direct run printed the whole payload\n{}",
        screen_tail(&expected)
    );

    let mut wrapped = Spawn::wrapper(&dir, ["--no-broker", "--", python(), s(&emit)])
        .size(100, 30)
        .start();
    assert_eq!(wrapped.wait_exit(), ExitStatus::Exited(0));
    let actual = wrapped.read_to_end();

    assert_bytes_eq(&actual, &expected, "output through clippy-session");
}

/// A key typed while the child floods the terminal reaches it long before the flood would have
/// ended: the byte loop reads the child's output in portions and reads the terminal between them,
/// however fast the output comes (CONTRACTS/PTY.md, "Throughput").
#[test]
fn a_key_typed_during_a_flood_reaches_the_child() {
    let dir = test_dir();
    let flood = program("keys_in_flood.py");
    // Far more output than a portion: the child stops at the first key, or here.
    let limit = 64 << 20;
    let mut term = Spawn::wrapper(
        &dir,
        ["--no-broker", "--", python(), s(&flood), &limit.to_string()],
    )
    .start();
    term.expect("flood> ");
    term.expect("a key is on its way");
    term.send("k");
    let at = term.expect(" bytes\r\n");
    let output = term.output();
    let report = String::from_utf8_lossy(&output[..at]);
    let report = report.rsplit("\r\n").next().unwrap_or_default().to_owned();
    assert!(
        report.starts_with("GOT KEY after "),
        "the key reached the child during the flood: {report:?}"
    );
    term.send("x");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

/// Every byte typed on the user's terminal reaches a raw-mode child unchanged: control keys
/// (Ctrl+C is a byte, not a signal, for a raw-mode program), escape sequences, NUL, CR, UTF-8 and
/// every other byte value.
#[test]
fn input_reaches_the_child_unmodified() {
    let dir = test_dir();
    let dump = dir.join("input.hex");
    let mut term = Spawn::wrapper(
        &dir,
        [
            "--no-broker",
            "--",
            python(),
            s(&program("rawdump.py")),
            s(&dump),
        ],
    )
    .start();
    // The child is in raw mode, and since its output came through, so is the wrapper's terminal.
    term.expect("READY\r\n");

    let parts: Vec<Vec<u8>> = vec![
        b"plain text\r".to_vec(),
        b"\x03".to_vec(),
        b"\x1b[A\x1b[B\x1bOP\x1b[1;5C".to_vec(),
        b"\x00".to_vec(),
        "h\u{e9}llo \u{2733} \u{1f600}".as_bytes().to_vec(),
        b"\r\n\r".to_vec(),
        // EOF, SUSP, QUIT, DEL, BS, XON, XOFF, LNEXT, WERASE, KILL, REPRINT, ESC
        b"\x04\x1a\x1c\x7f\x08\x11\x13\x16\x17\x15\x12\x1b".to_vec(),
        b"\x1b[200~pasted\rtext\x1b[201~".to_vec(),
        (0u8..=255).collect(),
    ];
    let mut sent = Vec::new();
    for part in &parts {
        term.send(part);
        sent.extend_from_slice(part);
    }
    term.send(b"@@END@@");
    // (The child has put its terminal back in cooked mode: "\n" now prints as "\r\n".)
    term.expect("DONE\r\r\n");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));

    let hex = fs::read_to_string(&dump).unwrap();
    let received: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    assert_bytes_eq(&received, &sent, "bytes the child read");
}

// ---------------------------------------------------------------------------------------------
// 3. Environment
// ---------------------------------------------------------------------------------------------

struct EnvRun {
    /// The child's exec-time environment, sorted `KEY=VALUE` entries.
    child: Vec<Vec<u8>>,
    /// The wrapper's.
    wrapper: Vec<Vec<u8>>,
    turns: Vec<Value>,
    /// The session folder names seen while the session ran.
    session_dirs: Vec<String>,
}

/// Runs a Python REPL under the wrapper (with `extra` options) and has it dump its own
/// exec-time environment (`/proc/self/environ`, which later `setenv`s do not change).
fn run_env_dump(extra: &[&str]) -> EnvRun {
    let dir = test_dir();
    let log = dir.join("turns.jsonl");
    let dump = dir.join("environ");
    let mut args = vec!["--no-broker", "--preset", "python", "--turn-log", s(&log)];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", python(), "-i", "-q"]);
    let mut term = Spawn::wrapper(&dir, args).start();
    term.expect(">>> ");
    let wrapper = environ_of(term.pid());
    let session_dirs = session_dirs(&dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    term.send(format!(
        "n = open('{}', 'wb').write(open('/proc/self/environ', 'rb').read()); print('dumped', n > 0)\r",
        dump.display()
    ));
    term.expect("dumped True\r\n");
    term.expect(">>> ");
    term.send("\x04");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
    EnvRun {
        child: parse_environ(&fs::read(&dump).unwrap()),
        wrapper,
        turns: read_turn_log(&log),
        session_dirs,
    }
}

fn show_env(entries: &[Vec<u8>]) -> Vec<String> {
    entries
        .iter()
        .map(|e| String::from_utf8_lossy(e).into_owned())
        .collect()
}

/// Without `--export-session-id` the child's environment is exactly the wrapper's.
#[test]
fn child_environment_is_the_wrappers() {
    let run = run_env_dump(&[]);
    // The wrapper got just the environment the harness gave it, so nothing else could leak in.
    let mut given: Vec<String> = base_env(&test_dir())
        .iter()
        .map(|(key, _)| key.to_str().unwrap().to_owned())
        .collect();
    given.sort();
    let wrapper_keys: Vec<String> = show_env(&run.wrapper)
        .iter()
        .map(|e| e.split('=').next().unwrap().to_owned())
        .collect();
    assert_eq!(wrapper_keys, given);

    assert_eq!(show_env(&run.child), show_env(&run.wrapper));
    assert!(
        !run.child.iter().any(|e| e.starts_with(b"CLIPPY_")),
        "no CLIPPY_* variable: {:?}",
        show_env(&run.child)
    );
    assert_eq!(run.turns.len(), 1, "{:?}", run.turns);
}

/// With `--export-session-id` exactly one variable is added: `CLIPPY_SESSION_ID`, the session's
/// ID as the turn log (and the session folder) name it.
#[test]
fn export_session_id_adds_exactly_one_variable() {
    let run = run_env_dump(&["--export-session-id"]);
    let extra: Vec<String> = show_env(&run.child)
        .into_iter()
        .filter(|e| !show_env(&run.wrapper).contains(e))
        .collect();
    let missing: Vec<String> = show_env(&run.wrapper)
        .into_iter()
        .filter(|e| !show_env(&run.child).contains(e))
        .collect();
    assert!(missing.is_empty(), "missing in the child: {missing:?}");
    assert_eq!(run.turns.len(), 1, "{:?}", run.turns);
    let session = str_field(&run.turns[0], "session");
    assert!(!session.is_empty());
    assert_eq!(extra, vec![format!("CLIPPY_SESSION_ID={session}")]);
    assert_eq!(run.session_dirs, vec![session.to_owned()]);
}

// ---------------------------------------------------------------------------------------------
// 4–5. Turns, live
// ---------------------------------------------------------------------------------------------

/// bash with `--shell-integration`: OSC 133 gives exact contents, exit codes and cwd; commands
/// that print nothing make no turn (CONTRACTS/TURN.md: a turn needs non-blank output); Ctrl+C
/// marks only its own turn interrupted; each turn's `spool_span` addresses its content in the
/// kept spool.
#[test]
fn bash_turns_with_shell_integration() {
    let dir = test_dir();
    let log = dir.join("turns.jsonl");
    let kept = dir.subdir("kept");
    let mut term = Spawn::wrapper(
        &dir,
        [
            "--no-broker",
            "--shell-integration",
            "--keep-spool",
            s(&kept),
            "--turn-log",
            s(&log),
            "--",
            "bash",
            "--norc",
            "--noprofile",
        ],
    )
    .cwd(dir.home())
    .start();
    term.expect(PROMPT_END);
    for command in [
        "echo hello",
        "false",
        "cd /tmp",
        r"printf 'a\nb\n'",
        "sh -c 'echo seven; exit 7'",
    ] {
        term.send(format!("{command}\r"));
        term.expect(PROMPT_END);
    }
    term.send("for i in 1 2 3 4 5 6 7 8 9; do echo tick $i; sleep 5; done\r");
    term.expect("tick 1\r\n");
    // Ctrl+C once `sleep` runs in the foreground: earlier, bash's child may still be between
    // `fork` and `exec`, where bash's own SIGINT handling applies and the loop goes on.
    settle("sleep to run in the foreground", || {
        runs_in_foreground(term.pid(), "sleep")
    });
    term.send("\x03");
    term.expect(PROMPT_END);
    term.send("exit 0\r");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));

    let turns = read_turn_log(&log);
    let summary: Vec<(String, Vec<u8>)> = turns
        .iter()
        .map(|t| (str_field(t, "input").to_owned(), turn_content(t)))
        .collect();
    let home = dir.home().to_str().unwrap().to_owned();
    // (input, content, exit code, cwd, interrupted)
    let expected: Vec<(&str, &[u8], i64, &str, bool)> = vec![
        ("echo hello", b"hello\r\n", 0, &home, false),
        (r"printf 'a\nb\n'", b"a\r\nb\r\n", 0, "/tmp", false),
        ("sh -c 'echo seven; exit 7'", b"seven\r\n", 7, "/tmp", false),
        (
            "for i in 1 2 3 4 5 6 7 8 9; do echo tick $i; sleep 5; done",
            b"tick 1\r\n^C\r\n",
            130,
            "/tmp",
            true,
        ),
    ];
    assert_eq!(
        turns.len(),
        expected.len(),
        "turns (input, content): {summary:?}"
    );
    let session = str_field(&turns[0], "session").to_owned();
    let spool = fs::read(kept.join(format!("{session}.spool"))).unwrap();
    for (i, (turn, (input, content, exit_code, cwd, interrupted))) in
        turns.iter().zip(&expected).enumerate()
    {
        let seq = i as u64 + 1;
        assert_eq!(str_field(turn, "input"), *input, "turn {seq}: {turn}");
        assert_bytes_eq(&turn_content(turn), content, &format!("turn {seq} content"));
        assert_eq!(turn["exit_code"], *exit_code, "turn {seq}: {turn}");
        assert_eq!(turn["cwd"], *cwd, "turn {seq}: {turn}");
        assert_eq!(turn["interrupted"], *interrupted, "turn {seq}: {turn}");
        assert_eq!(turn["seq"], seq, "turn {seq}: {turn}");
        assert_eq!(turn["truncated"], false, "turn {seq}: {turn}");
        assert_eq!(turn["byte_length"], content.len(), "turn {seq}: {turn}");
        assert_eq!(str_field(turn, "session"), session);
        assert_eq!(str_field(turn, "turn_id"), format!("{session}:{seq}"));
        let span = turn["spool_span"]
            .as_array()
            .unwrap_or_else(|| panic!("turn {seq} has a spool span: {turn}"));
        let (from, to) = (
            span[0].as_u64().unwrap() as usize,
            span[1].as_u64().unwrap() as usize,
        );
        assert_bytes_eq(
            &spool[from..to],
            &crlf_to_lf(content),
            &format!("turn {seq} spool span"),
        );
    }
    assert_eq!(turns[0]["text"], "hello");
    assert_eq!(turns[1]["text"], "a\nb");
    // The rc file went with the session folder.
    assert!(session_dirs(&dir).is_empty(), "{:?}", session_dirs(&dir));
}

/// `--shell-integration -- bash --norc` loads no rc file but the hooks
/// (CONTRACTS/PTY.md: the generated rc file loads the user's own, "none with `--norc`"), so the
/// shell's own prompt inside the hooks' OSC 133 marks is the one `bash --norc` has.
#[test]
fn shell_integration_keeps_norc() {
    /// The shell's `PS1`, as it prints it.
    fn ps1_of(term: &mut support::Term) -> Vec<u8> {
        // The echo of the typed line reads `P""S1=[`, the output `PS1=[`.
        term.send("echo \"P\"\"S1=[$PS1]\"\r");
        let start = term.expect("PS1=[") + 5;
        let end = term.expect("]\r\n");
        term.output()[start..end].to_vec()
    }
    let dir = test_dir();
    let mut plain = Spawn::program(&dir, "bash", ["--norc", "--noprofile"])
        .cwd(dir.home())
        .start();
    let plain_ps1 = ps1_of(&mut plain);

    let mut wrapped = Spawn::wrapper(
        &dir,
        [
            "--no-broker",
            "--shell-integration",
            "--",
            "bash",
            "--norc",
            "--noprofile",
        ],
    )
    .cwd(dir.home())
    .start();
    wrapped.expect(PROMPT_END);
    let wrapped_ps1 = ps1_of(&mut wrapped);
    let (before, after) = (&br"\[\e]133;A\a\]"[..], &br"\[\e]133;B\a\]"[..]);
    assert!(
        wrapped_ps1.starts_with(before) && wrapped_ps1.ends_with(after),
        "the hooks' marks around the prompt: {}",
        wrapped_ps1.escape_ascii()
    );
    assert_eq!(
        wrapped_ps1[before.len()..wrapped_ps1.len() - after.len()]
            .escape_ascii()
            .to_string(),
        plain_ps1.escape_ascii().to_string(),
        "PS1 of bash --norc with --shell-integration (inside the marks) and without"
    );
}

/// Python's REPL with `--preset python`: results, a two-line statement, and Ctrl+C during a
/// sleep (its turn, and only it, interrupted).
#[test]
fn python_turns_with_the_python_preset() {
    let dir = test_dir();
    let log = dir.join("turns.jsonl");
    let mut term = Spawn::wrapper(
        &dir,
        [
            "--no-broker",
            "--preset",
            "python",
            "--turn-log",
            s(&log),
            "--",
            python(),
            "-i",
            "-q",
        ],
    )
    .start();
    term.expect(">>> ");
    term.send("1+1\r");
    term.expect(">>> ");
    term.send("for i in range(2):\r");
    term.expect("... ");
    term.send("    print(i)\r");
    term.expect("... ");
    term.send("\r");
    term.expect(">>> ");
    term.send("print('x'*5)\r");
    term.expect(">>> ");
    term.send("import time; print('sleeping'); time.sleep(5)\r");
    term.expect("sleeping\r\n");
    term.send("\x03");
    term.expect(">>> ");
    // Not Ctrl+D: after a KeyboardInterrupt, CPython's REPL ends at EOF by killing itself with
    // SIGINT (exit status -2), which the wrapper would faithfully reraise.
    term.send("raise SystemExit(0)\r");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));

    let turns = read_turn_log(&log);
    let summary: Vec<(String, String)> = turns
        .iter()
        .map(|t| {
            (
                str_field(t, "input").to_owned(),
                String::from_utf8_lossy(&turn_content(t)).into_owned(),
            )
        })
        .collect();
    assert_eq!(turns.len(), 4, "turns (input, content): {summary:?}");
    let expect = |i: usize, input: &str, content: &[u8], interrupted: bool| {
        let turn = &turns[i];
        assert_eq!(str_field(turn, "input"), input, "turn {}: {turn}", i + 1);
        assert_bytes_eq(&turn_content(turn), content, &format!("turn {}", i + 1));
        assert_eq!(turn["interrupted"], interrupted, "turn {}: {turn}", i + 1);
        assert_eq!(turn["exit_code"], Value::Null, "turn {}: {turn}", i + 1);
    };
    expect(0, "1+1", b"2\r\n", false);
    expect(
        1,
        // The blank line that ends the statement is not part of the input.
        "for i in range(2):\n    print(i)",
        b"0\r\n1\r\n",
        false,
    );
    expect(2, "print('x'*5)", b"xxxxx\r\n", false);
    let last = turn_content(&turns[3]);
    assert!(
        last.starts_with(b"sleeping\r\n") && support::find(&last, b"KeyboardInterrupt").is_some(),
        "the interrupted turn: {}",
        last.escape_ascii()
    );
    assert_eq!(
        str_field(&turns[3], "input"),
        "import time; print('sleeping'); time.sleep(5)"
    );
    assert_eq!(turns[3]["interrupted"], true, "{}", turns[3]);
}

// ---------------------------------------------------------------------------------------------
// 6. Exit codes, signals, and the terminal's settings
// ---------------------------------------------------------------------------------------------

/// Starts the wrapper around `sh -c SCRIPT` (the script prints `ready` first and then waits for a
/// line), checks the terminal is in raw mode while it runs, lets it go on, and returns the
/// wrapper's status after checking the terminal's settings are back as they were.
fn run_sh_and_check_terminal(script: &str) -> ExitStatus {
    let dir = test_dir();
    let mut term = Spawn::wrapper(
        &dir,
        [
            "--no-broker",
            "--",
            "sh",
            "-c",
            &format!("echo ready; {script}"),
        ],
    )
    .start();
    term.expect("ready\r\n");
    let during = term.termios();
    assert!(
        !during.local_flags.contains(LocalFlags::ICANON)
            && !during.local_flags.contains(LocalFlags::ECHO),
        "the wrapper's terminal is in raw mode while the child runs: {during:?}"
    );
    term.send("\r");
    let status = term.wait_exit();
    assert_eq!(
        term.termios(),
        *term.initial_termios(),
        "the terminal's settings are restored after {status}"
    );
    status
}

#[test]
fn exit_code_is_the_childs_and_the_terminal_is_restored() {
    let status = run_sh_and_check_terminal("read line; exit 3");
    assert_eq!(status, ExitStatus::Exited(3));
}

#[test]
fn child_killed_by_a_signal_is_reraised_and_the_terminal_is_restored() {
    let status = run_sh_and_check_terminal("read line; kill -KILL $$");
    assert!(
        matches!(status, ExitStatus::Signaled { signal: 9, .. }),
        "the wrapper dies of SIGKILL itself: {status}"
    );
}

/// SIGTERM sent to the wrapper goes to the child, whose trap decides the exit code.
#[test]
fn sigterm_is_forwarded_and_the_terminal_is_restored() {
    let dir = test_dir();
    let mut term = Spawn::wrapper(
        &dir,
        [
            "--no-broker",
            "--",
            "sh",
            "-c",
            r#"trap "exit 5" TERM; echo armed; while :; do sleep 0.1; done"#,
        ],
    )
    .start();
    term.expect("armed\r\n");
    assert_ne!(
        term.termios(),
        *term.initial_termios(),
        "raw mode while running"
    );
    term.signal(Signal::SIGTERM);
    assert_eq!(term.wait_exit(), ExitStatus::Exited(5));
    assert_eq!(term.termios(), *term.initial_termios());
}

// ---------------------------------------------------------------------------------------------
// 7. SIGWINCH
// ---------------------------------------------------------------------------------------------

/// Resizing the user's terminal resizes the child's (the kernel signals the wrapper, which sets
/// the new size on the child's PTY), as `stty size` in the child shows.
#[test]
fn resizing_the_terminal_resizes_the_childs() {
    let dir = test_dir();
    let mut term = Spawn::wrapper(&dir, ["--no-broker", "--", "bash", "--norc", "--noprofile"])
        .env("PS1", BASH_PROMPT)
        .size(80, 24)
        .start();
    term.expect(BASH_PROMPT);
    let children = children_of(term.pid());
    assert_eq!(children.len(), 1, "the wrapper has one child: {children:?}");
    let child_tty = fs::read_link(format!("/proc/{}/fd/0", children[0])).unwrap();
    assert_eq!(tty_size(&child_tty), Some(WinSize::new(80, 24)));
    term.send("stty size\r");
    term.expect("24 80\r\n");
    term.expect(BASH_PROMPT);

    for (cols, rows) in [(100, 30), (61, 17)] {
        term.resize(cols, rows);
        settle(&format!("the child's PTY to become {cols}x{rows}"), || {
            tty_size(&child_tty) == Some(WinSize::new(cols, rows))
        });
        term.send("stty size\r");
        term.expect(format!("{rows} {cols}\r\n"));
        term.expect(BASH_PROMPT);
    }
    term.send("exit 0\r");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
}

// ---------------------------------------------------------------------------------------------
// 8. SIGTSTP / SIGCONT
// ---------------------------------------------------------------------------------------------

/// SIGTSTP stops the wrapper with the user's terminal back in cooked mode; SIGCONT resumes it in
/// raw mode and the session goes on. The wrapper runs as a job of a job-control "shell"
/// (`jobctl.py`), as it would for a user: a process group of a session leader is orphaned and
/// the kernel would discard the stop.
#[test]
fn sigtstp_stops_with_the_terminal_restored_and_sigcont_resumes() {
    let dir = test_dir();
    let pid_file = dir.join("wrapper.pid");
    let mut term = Spawn::wrapper(&dir, ["--no-broker", "--", "bash", "--norc", "--noprofile"])
        .env("PS1", BASH_PROMPT)
        .under_job_control(&pid_file)
        .start();
    term.expect(BASH_PROMPT);
    let wrapper: u32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let raw = term.termios();
    assert!(
        !raw.local_flags.contains(LocalFlags::ICANON),
        "raw mode while running"
    );

    signal_pid(wrapper, Signal::SIGTSTP);
    settle("the wrapper to stop", || {
        process_state(wrapper) == Some('T')
    });
    assert_eq!(
        term.termios(),
        *term.initial_termios(),
        "the terminal is restored while the wrapper is stopped"
    );

    signal_pid(wrapper, Signal::SIGCONT);
    settle("the wrapper to run again, in raw mode", || {
        process_state(wrapper) != Some('T') && term.termios() == raw
    });
    term.send("echo ba''ck\r");
    term.expect("back\r\n");
    term.expect(BASH_PROMPT);
    term.send("exit 0\r");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
    assert_eq!(term.termios(), *term.initial_termios());
}

// ---------------------------------------------------------------------------------------------
// 9. Headless
// ---------------------------------------------------------------------------------------------

/// Runs `printf 'echo hi\nstty size\nexit 0\n' | clippy-session --size 90x20 --shell-integration
/// --turn-log F -- bash --norc`: no terminal at all, stdin and stdout are pipes. Returns the exit
/// status, stdout, stderr and the turns.
fn run_headless_bash() -> (std::process::ExitStatus, Vec<u8>, String, Vec<Value>) {
    let dir = test_dir();
    let log = dir.join("turns.jsonl");
    let mut command = std::process::Command::new(wrapper_bin());
    command
        .env_clear()
        .envs(base_env(&dir))
        .current_dir(dir.home())
        .args([
            "--no-broker",
            "--size",
            "90x20",
            "--shell-integration",
            "--turn-log",
            s(&log),
            "--",
            "bash",
            "--norc",
            "--noprofile",
        ]);
    let run = Headless::start(command, Some(b"echo hi\nstty size\nexit 0\n"));
    let (status, stdout, stderr) = run.finish();
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    assert!(session_dirs(&dir).is_empty(), "{:?}", session_dirs(&dir));
    (status, stdout, stderr, read_turn_log(&log))
}

fn summary(turns: &[Value]) -> Vec<(String, String)> {
    turns
        .iter()
        .map(|t| {
            (
                str_field(t, "input").to_owned(),
                turn_content(t).escape_ascii().to_string(),
            )
        })
        .collect()
}

/// Headless: the PTY gets `--size`, the child runs to its end, turns are detected.
#[test]
fn headless_with_pipes() {
    let (status, stdout, stderr, turns) = run_headless_bash();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    for needle in [&b"hi\r\n"[..], b"20 90\r\n"] {
        assert!(
            support::find(&stdout, needle).is_some(),
            "the output holds {}\n{}",
            needle.escape_ascii(),
            screen_tail(&stdout)
        );
    }
    assert_eq!(
        turns.len(),
        2,
        "turns (input, content): {:?}",
        summary(&turns)
    );
    assert_bytes_eq(&turn_content(&turns[0]), b"hi\r\n", "turn 1");
    assert_bytes_eq(&turn_content(&turns[1]), b"20 90\r\n", "turn 2");
    for turn in &turns {
        assert_eq!(turn["exit_code"], 0, "{turn}");
        assert_eq!(turn["interrupted"], false, "{turn}");
    }
}

/// Headless input arrives all at once, before the shell's first prompt (type-ahead, as from any
/// script or orchestrator): each turn still carries the command that produced it.
#[test]
fn headless_typed_ahead_input_is_attributed_to_its_turn() {
    let (status, _, stderr, turns) = run_headless_bash();
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    let inputs: Vec<&str> = turns.iter().map(|t| str_field(t, "input")).collect();
    assert_eq!(
        inputs,
        vec!["echo hi", "stty size"],
        "turns (input, content): {:?}",
        summary(&turns)
    );
}

// ---------------------------------------------------------------------------------------------
// 10. Errors
// ---------------------------------------------------------------------------------------------

/// Runs the wrapper headless with `args`; returns its exit code and stderr after checking that no
/// session folder was left behind.
fn run_failing(
    args: &[&str],
    configure: impl FnOnce(&mut std::process::Command, &TempDir),
) -> (Option<i32>, String) {
    let dir = test_dir();
    let cwd = dir.subdir("cwd");
    let mut command = std::process::Command::new(wrapper_bin());
    command
        .env_clear()
        .envs(base_env(&dir))
        .current_dir(&cwd)
        .args(args);
    configure(&mut command, &dir);
    let (status, stdout, stderr) = Headless::start(command, None).finish();
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    assert!(
        stdout.is_empty(),
        "nothing on stdout: {}",
        stdout.escape_ascii()
    );
    assert!(
        session_dirs(&dir).is_empty(),
        "no session folder is left behind: {:?} (stderr: {stderr})",
        session_dirs(&dir)
    );
    assert!(
        list_dir(&cwd).is_empty(),
        "nothing created in the working directory: {:?}",
        list_dir(&cwd)
    );
    (status.code(), stderr)
}

#[test]
fn error_command_not_found() {
    let (code, stderr) = run_failing(&["--no-broker", "--", "/no/such/program"], |_, _| {});
    assert_eq!(code, Some(4), "stderr: {stderr}");
    assert!(
        stderr.contains("/no/such/program") && stderr.contains("No such file"),
        "{stderr}"
    );
}

#[test]
fn error_command_not_found_with_shell_integration() {
    // The rc file is written into the session folder before the spawn fails.
    let (code, stderr) = run_failing(
        &["--no-broker", "--shell-integration", "--", "/no/such/bash"],
        |_, _| {},
    );
    assert_eq!(code, Some(4), "stderr: {stderr}");
    assert!(stderr.contains("/no/such/bash"), "{stderr}");
}

#[test]
fn error_bad_pattern() {
    let (code, stderr) = run_failing(
        &["--no-broker", "--pattern", "(oops", "--", "true"],
        |_, _| {},
    );
    assert_eq!(code, Some(4), "stderr: {stderr}");
    assert!(
        stderr.contains("(oops"),
        "the message names the pattern: {stderr}"
    );
}

#[test]
fn error_unknown_preset() {
    let (code, stderr) = run_failing(
        &["--no-broker", "--preset", "nope", "--", "true"],
        |_, _| {},
    );
    assert_eq!(code, Some(4), "stderr: {stderr}");
    assert!(
        stderr.contains("nope") && stderr.contains("preset"),
        "the message names the preset: {stderr}"
    );
}

#[test]
fn error_no_runtime_dir() {
    for value in [None, Some(""), Some("relative/run")] {
        let (code, stderr) = run_failing(&["--no-broker", "--", "true"], |command, _| {
            match value {
                None => command.env_remove("XDG_RUNTIME_DIR"),
                Some(value) => command.env("XDG_RUNTIME_DIR", value),
            };
        });
        assert_eq!(code, Some(4), "XDG_RUNTIME_DIR={value:?}, stderr: {stderr}");
        let named = match value {
            Some(value) if !value.is_empty() => stderr.contains(value),
            _ => stderr.contains("XDG_RUNTIME_DIR"),
        };
        assert!(
            named,
            "XDG_RUNTIME_DIR={value:?}: the message names the variable or its value: {stderr}"
        );
    }
}

#[test]
fn error_no_command() {
    let (code, stderr) = run_failing(&["--no-broker"], |_, _| {});
    assert_eq!(code, Some(4), "stderr: {stderr}");
    assert!(stderr.contains("no command"), "{stderr}");
}

/// A turn log that cannot be opened is a configuration error like the others: exit 4 with a
/// message naming it, before the command is started (a command must not run, with its side
/// effects, in a session that then fails to start).
#[test]
fn error_unopenable_turn_log() {
    let dir = test_dir();
    let marker = dir.join("the-command-ran");
    let log = dir.join("missing/turns.jsonl");
    let mut command = std::process::Command::new(wrapper_bin());
    command.env_clear().envs(base_env(&dir)).args([
        "--no-broker",
        "--turn-log",
        s(&log),
        "--",
        "sh",
        "-c",
        &format!("echo ran > '{}'", marker.display()),
    ]);
    let (status, _, stderr) = Headless::start(command, None).finish();
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(
        stderr.contains(s(&log)),
        "the message names the turn log: {stderr}"
    );
    assert!(session_dirs(&dir).is_empty(), "{:?}", session_dirs(&dir));
    let mut problems = Vec::new();
    if status.code() != Some(4) {
        problems.push(format!("{status}, expected exit code 4"));
    }
    if marker.exists() {
        problems.push("the command was started (it wrote its marker file)".to_owned());
    }
    assert!(problems.is_empty(), "{problems:?}; stderr: {stderr}");
}

// ---------------------------------------------------------------------------------------------
// 11. Spool
// ---------------------------------------------------------------------------------------------

/// While the session runs its folder is 0700 and the spool 0600 (even under umask 000); with
/// `--keep-spool DIR` the kept `<id>.spool` is the child's output with `\r\n` → `\n`, and the
/// session folder is gone.
#[test]
fn kept_spool_is_the_output_with_lf_line_ends() {
    let dir = test_dir();
    let kept = dir.subdir("kept");
    let mut term = Spawn::wrapper(
        &dir,
        [
            "--no-broker",
            "--keep-spool",
            s(&kept),
            "--",
            python(),
            s(&program("emit.py")),
            "--wait",
        ],
    )
    .with_umask_000()
    .start();
    term.expect("WAITING\r\n");

    let sessions = session_dirs(&dir);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let session_dir = &sessions[0];
    let id = session_dir
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    for folder in [
        dir.runtime().join("clippy"),
        dir.runtime().join("clippy/sessions"),
        session_dir.clone(),
    ] {
        assert_eq!(mode_of(&folder), 0o700, "{}", folder.display());
    }
    assert_eq!(mode_of(&session_dir.join("output.spool")), 0o600);

    term.send("\r");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
    let output = term.read_to_end();
    assert!(output.ends_with(b"END-OF-EMIT"));

    assert!(session_dirs(&dir).is_empty(), "{:?}", session_dirs(&dir));
    let kept_files = list_dir(&kept);
    assert_eq!(kept_files, vec![kept.join(format!("{id}.spool"))]);
    assert_bytes_eq(
        &fs::read(&kept_files[0]).unwrap(),
        &crlf_to_lf(&output),
        "the kept spool",
    );
}

/// Without `--keep-spool` the session folder exists while the session runs and is gone after.
#[test]
fn spool_folder_is_removed_at_exit() {
    let dir = test_dir();
    let mut term = Spawn::wrapper(
        &dir,
        [
            "--no-broker",
            "--",
            python(),
            s(&program("emit.py")),
            "--wait",
        ],
    )
    .start();
    term.expect("WAITING\r\n");
    let sessions = session_dirs(&dir);
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert!(sessions[0].join("output.spool").is_file());
    term.send("\r");
    assert_eq!(term.wait_exit(), ExitStatus::Exited(0));
    assert!(session_dirs(&dir).is_empty(), "{:?}", session_dirs(&dir));
    // Nothing else either: `clippy/sessions/` is all that is left in the runtime dir.
    assert_eq!(list_dir(&dir.runtime()), vec![dir.runtime().join("clippy")]);
}
