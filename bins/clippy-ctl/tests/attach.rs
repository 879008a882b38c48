//! End-to-end: sessions without a terminal. `clippy-ctl spawn` starts real wrappers around a
//! real Python REPL and a real bash with shell integration, registered with a real broker in a
//! private `XDG_RUNTIME_DIR`; `clippy-ctl attach` runs on a PTY of the test's own, as on a
//! person's terminal. Every wait is for a condition; the deadlines only fail a test that hangs.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::Output;

use clippy_proto::FrameDecoder;
use clippy_proto::attach::{AttachFrame, decode};
use clippy_pty::WinSize;
use desktop::{OnTerminal, TempDir, broker, ctl, ctl_bin, python, wait_for, workspace_bin};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;

/// The sessions a test spawned: their programs are killed when it ends, pass or fail (their
/// wrappers then end on their own).
struct Spawned<'a> {
    dir: &'a TempDir,
    _broker: desktop::Broker,
    names: Vec<String>,
}

impl<'a> Spawned<'a> {
    fn new(dir: &'a TempDir) -> Self {
        Spawned {
            dir,
            _broker: broker(dir, &[]),
            names: Vec::new(),
        }
    }

    /// `clippy-ctl spawn --name NAME ARGS…`: the session id it printed.
    fn spawn(&mut self, name: &str, args: &[&str]) -> String {
        self.names.push(name.to_owned());
        let mut full = vec!["spawn", "--name", name];
        full.extend_from_slice(args);
        let out = ctl(self.dir, &[], &full);
        assert!(out.status.success(), "spawn {name}: {}", describe(&out));
        let id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        assert!(
            !id.is_empty() && !id.contains(char::is_whitespace),
            "{id:?}"
        );
        id
    }

    fn python(&mut self, name: &str) -> String {
        self.spawn(name, &["--preset", "python", "--", &python(), "-q"])
    }

    fn bash(&mut self, name: &str) -> String {
        self.spawn(
            name,
            &["--shell-integration", "--", "bash", "--norc", "--noprofile"],
        )
    }
}

impl Drop for Spawned<'_> {
    fn drop(&mut self) {
        for name in &self.names {
            let status = json(&ctl(self.dir, &[], &["--json", "status", name]));
            if let Some(pid) = status["session_status"]["pid"].as_i64() {
                let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
        }
    }
}

fn describe(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// `clippy-ctl exec NAME LINE`: its stdout, the command having succeeded.
fn exec(dir: &TempDir, name: &str, line: &str) -> String {
    let out = ctl(dir, &[], &["--timeout", "30000", "exec", name, line]);
    assert!(out.status.success(), "exec {line:?}: {}", describe(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// `clippy-ctl attach ARGS…` on a terminal of the test's own, of `size`.
fn attach(dir: &TempDir, args: &[&str], size: WinSize) -> OnTerminal {
    let mut all = vec!["attach"];
    all.extend_from_slice(args);
    OnTerminal::start(dir, ctl_bin(), &all, size)
}

/// The latest turn of `name` as text.
fn latest_text(dir: &TempDir, name: &str) -> String {
    let out = ctl(dir, &[], &["get-turn", name, "--format", "text"]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn terminal_size_seen_by(dir: &TempDir, name: &str) -> String {
    exec(
        dir,
        name,
        "import shutil; print('size', *shutil.get_terminal_size())",
    )
}

#[test]
fn a_spawned_repl_is_driven_attached_to_typed_in_detached_and_attached_again() {
    let dir = TempDir::with_runtime("attach");
    let mut spawned = Spawned::new(&dir);
    let id = spawned.python("py");
    // Registered before spawn returned: its status is there at once.
    let status = json(&ctl(&dir, &[], &["--json", "status", "py"]));
    assert_eq!(status["session_status"]["session"], id.as_str());
    assert!(exec(&dir, "py", "print(6*7)").contains("42"));

    // Attached: the current screen first, with what ran before.
    let mut attached = attach(&dir, &["py"], WinSize::new(80, 24));
    attached.wait_shown("42", 1);
    attached.wait_shown(">>> ", 1);
    // Typed on the attached terminal: the program gets it and the turn is recorded.
    attached.type_keys(b"print('typed', 'here')\r");
    attached.wait_shown("typed here", 1);
    wait_for("the typed turn", || {
        latest_text(&dir, "py").contains("typed here").then_some(())
    });
    // The detach key: Ctrl+\ then d.
    attached.type_keys(b"\x1c");
    attached.type_keys(b"d");
    let status = attached.wait_exit();
    assert!(status.success(), "{status:?}");
    wait_for("the detach message", || {
        attached
            .shown()
            .contains("[detached from py]")
            .then_some(())
    });
    // The session runs on.
    assert!(exec(&dir, "py", "print(7*6)").contains("42"));

    // Attached again: the screen shows the earlier work; `clippy-ctl detach` lets it go.
    let mut again = attach(&dir, &["py"], WinSize::new(80, 24));
    again.wait_shown("typed here", 1);
    let out = ctl(&dir, &[], &["detach", "py"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "detached 1 client(s) from py"
    );
    assert!(again.wait_exit().success());
    // Nobody attached now.
    let out = ctl(&dir, &[], &["--json", "detach", "py"]);
    assert_eq!(json(&out)["detached"]["clients"], 0);
}

#[test]
fn the_session_follows_the_attached_terminals_size_and_outlives_a_killed_client() {
    let dir = TempDir::with_runtime("attach-size");
    let mut spawned = Spawned::new(&dir);
    spawned.spawn(
        "py",
        &[
            "--size",
            "70x20",
            "--preset",
            "python",
            "--",
            &python(),
            "-q",
        ],
    );
    assert!(terminal_size_seen_by(&dir, "py").contains("size 70 20"));

    let attached = attach(&dir, &["py"], WinSize::new(100, 30));
    attached.wait_shown(">>> ", 1);
    assert!(terminal_size_seen_by(&dir, "py").contains("size 100 30"));
    // The attached terminal is resized: the kernel tells clippy-ctl, which tells the session.
    attached.master.resize(WinSize::new(90, 25)).unwrap();
    wait_for("the session to take the new size", || {
        terminal_size_seen_by(&dir, "py")
            .contains("size 90 25")
            .then_some(())
    });

    // A read-only client neither types nor resizes.
    let watcher = attach(&dir, &["--read-only", "py"], WinSize::new(50, 10));
    watcher.wait_shown(">>> ", 1);
    watcher.type_keys(b"print('from the watcher')\r");
    assert!(terminal_size_seen_by(&dir, "py").contains("size 90 25"));
    // Its keys never reached the program: the next turn's input is only what exec typed.
    let spool = ctl(&dir, &[], &["read", "py"]);
    assert!(!String::from_utf8_lossy(&spool.stdout).contains("from the watcher"));

    // The interactive client is killed outright: the session runs on, and the size stays.
    attached.child.kill().unwrap();
    assert!(exec(&dir, "py", "print(6*7)").contains("42"));
    drop(attached);
    drop(watcher);
    assert!(exec(&dir, "py", "print(7*6)").contains("42"));
}

#[test]
fn the_end_of_a_spawned_session_is_kept_and_told_to_attached_clients() {
    let dir = TempDir::with_runtime("attach-exit");
    let mut spawned = Spawned::new(&dir);
    spawned.python("py");
    exec(&dir, "py", "print('warm')");
    let mut attached = attach(&dir, &["py"], WinSize::new(80, 24));
    attached.wait_shown("warm", 1);
    let out = ctl(&dir, &[], &["send", "py", "raise SystemExit(3)", "--enter"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(attached.wait_exit().success());
    wait_for("the exit message", || {
        attached
            .shown()
            .contains("[py exited with code 3]")
            .then_some(())
    });
    // The broker keeps the end: `status` says how, and the event stream has it.
    let status = wait_for("the session to end", || {
        let status = json(&ctl(&dir, &[], &["--json", "status", "py"]));
        (status["session_status"]["exit_code"] == 3).then_some(status)
    });
    assert_eq!(status["session_status"]["mode"], "exited", "{status}");
    // One JSON object per event, one per line.
    let events = ctl(&dir, &[], &["--json", "events", "--type", "session.exited"]);
    let exited: Vec<Value> = String::from_utf8_lossy(&events.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(exited.len(), 1, "{}", describe(&events));
    assert_eq!(exited[0]["exit_code"], 3, "{}", describe(&events));
}

#[test]
fn a_spawned_shell_with_integration_runs_exec_with_exit_codes() {
    let dir = TempDir::with_runtime("attach-sh");
    let mut spawned = Spawned::new(&dir);
    spawned.bash("sh");
    assert_eq!(exec(&dir, "sh", "echo hi"), "hi\n");
    let out = ctl(&dir, &[], &["--json", "exec", "sh", "echo out; false"]);
    assert!(out.status.success(), "{}", describe(&out));
    let executed = json(&out);
    assert_eq!(executed["exit_code"], 1, "{executed}");
    // `--json`: the new session's status.
    spawned.names.push("sh2".into());
    let out = ctl(
        &dir,
        &[],
        &[
            "--json", "spawn", "--name", "sh2", "--cwd", "/", "--", "bash", "--norc",
        ],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let status = json(&out);
    assert_eq!(status["session_status"]["name"], "sh2", "{status}");
    assert_eq!(exec(&dir, "sh2", "pwd"), "/\n");
    assert_eq!(executed["output"], "out", "{executed}");
}

#[test]
fn spawn_then_exec_at_once_works_every_time() {
    let dir = TempDir::with_runtime("attach-100");
    let mut spawned = Spawned::new(&dir);
    let mut failures = Vec::new();
    for i in 0..100 {
        let name = format!("s{i}");
        spawned.bash(&name);
        let out = ctl(
            &dir,
            &[],
            &["--timeout", "30000", "exec", &name, &format!("echo hi {i}")],
        );
        if !out.status.success() || out.stdout != format!("hi {i}\n").as_bytes() {
            failures.push(format!("{name}: {}", describe(&out)));
        }
        // Ended at once, so that a hundred shells do not run side by side.
        let out = ctl(&dir, &[], &["send", &name, "exit", "--enter"]);
        assert!(out.status.success(), "{}", describe(&out));
    }
    assert!(
        failures.is_empty(),
        "{} of 100 failed:\n{failures:#?}",
        failures.len()
    );
}

#[test]
fn spawn_says_why_a_session_cannot_start() {
    let dir = TempDir::with_runtime("attach-bad");
    let _broker = broker(&dir, &[]);
    let usage = |args: &[&str], says: &str| {
        let out = ctl(&dir, &[], args);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            describe(&out)
        );
    };
    usage(&["spawn"], "no command given");
    usage(
        &["spawn", "--cwd", "/nonexistent", "--", "true"],
        "not a directory",
    );
    usage(&["spawn", "--env", "NOEQUALS", "--", "true"], "KEY=VALUE");
    usage(&["spawn", "--size", "0x5", "--", "true"], "at least 1x1");
    usage(&["spawn", "--preset", "nosuch", "--", "true"], "nosuch");
    let out = ctl(&dir, &[], &["spawn", "--", "/nonexistent/program"]);
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/nonexistent/program"),
        "{}",
        describe(&out)
    );
    // Nothing was left registered.
    let sessions = json(&ctl(&dir, &[], &["--json", "list-sessions"]));
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(0));
}

#[test]
fn the_attach_socket_refuses_garbage_and_the_session_runs_on() {
    let dir = TempDir::with_runtime("attach-garbage");
    let mut spawned = Spawned::new(&dir);
    let id = spawned.python("py");
    let socket = dir
        .runtime()
        .join("clippy/sessions")
        .join(&id)
        .join("attach.sock");
    let mode = std::fs::metadata(&socket).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    let mut stream = UnixStream::connect(&socket).unwrap();
    stream
        .write_all(&[0, 0, 0, 4, 0xc1, 0xc1, 0xc1, 0xc1])
        .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let mut decoder = FrameDecoder::default();
    decoder.push(&answer);
    let frame = decode(&decoder.next_frame().unwrap().unwrap()).unwrap();
    assert!(
        matches!(&frame, AttachFrame::Refused { message } if message.contains("not an attach frame")),
        "{frame:?}"
    );
    // A detach key that cannot be read, an unknown session, and the session itself unharmed.
    let out = ctl(&dir, &[], &["attach", "--detach-key", "C-1", "py"]);
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad detach key"));
    let out = ctl(&dir, &[], &["attach", "nosuch"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nosuch"));
    assert!(exec(&dir, "py", "print(6*7)").contains("42"));
}

#[test]
fn a_session_run_in_a_terminal_is_watched_and_typed_into_from_elsewhere() {
    let dir = TempDir::with_runtime("attach-owner");
    let _broker = broker(&dir, &[]);
    let mut owner = OnTerminal::start(
        &dir,
        workspace_bin("clippy-session"),
        &["--name", "py", "--preset", "python", "--", &python(), "-q"],
        WinSize::new(80, 24),
    );
    assert!(exec(&dir, "py", "print('first')").contains("first"));
    let mut watcher = attach(&dir, &["--read-only", "py"], WinSize::new(80, 24));
    watcher.wait_shown("first", 1);
    // The person at the session's own terminal types: the watcher sees it.
    owner.type_keys(b"print('from', 'the owner')\r");
    watcher.wait_shown("from the owner", 1);
    // Someone attached elsewhere types: the session's own terminal shows it too.
    let mut helper = attach(&dir, &["py"], WinSize::new(80, 24));
    helper.wait_shown("from the owner", 1);
    helper.type_keys(b"print('from', 'elsewhere')\r");
    owner.wait_shown("from elsewhere", 1);
    watcher.wait_shown("from elsewhere", 1);
    // The program ends: the wrapper exits with its code, and both clients are told.
    owner.type_keys(b"raise SystemExit(5)\r");
    assert_eq!(owner.wait_exit().code_for_shell(), 5);
    for client in [&mut helper, &mut watcher] {
        assert!(client.wait_exit().success());
        client.wait_shown("[py exited with code 5]", 1);
    }
}

#[test]
fn a_paste_bigger_than_the_input_backlog_reaches_the_program_whole_through_attach() {
    let dir = TempDir::with_runtime("attach-paste");
    let mut spawned = Spawned::new(&dir);
    let received = dir.join("received");
    let size = 4 * 1024 * 1024;
    // Reads `size` bytes in raw mode, slowly at first, then writes them to a file.
    let program = format!(
        "import os, sys, time, tty\n\
         tty.setraw(0)\n\
         print('ready', flush=True)\n\
         data = b''\n\
         while len(data) < {size}:\n\
         \x20   data += os.read(0, 65536)\n\
         \x20   if len(data) < 1 << 20: time.sleep(0.01)\n\
         open({received:?}, 'wb').write(data)\n\
         print('got', len(data), flush=True)\n\
         time.sleep(60)\n",
        received = received.display().to_string(),
    );
    spawned.spawn("reader", &["--", &python(), "-c", &program]);
    let mut attached = attach(
        &dir,
        &["--detach-key", "C-a x", "reader"],
        WinSize::new(80, 24),
    );
    attached.wait_shown("ready", 1);
    let paste: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
    attached.type_keys(&paste);
    attached.wait_shown(&format!("got {size}"), 1);
    assert!(
        std::fs::read(&received).unwrap() == paste,
        "the paste arrived altered"
    );
    // A detach key of the user's choice.
    attached.type_keys(b"\x01x");
    assert!(attached.wait_exit().success());
    attached.wait_shown("[detached from reader]", 1);
}

#[test]
fn a_spawned_program_asking_its_terminal_gets_the_answers_a_terminal_would_give() {
    let dir = TempDir::with_runtime("attach-queries");
    let mut spawned = Spawned::new(&dir);
    // Asks where the cursor is and what the terminal is, as aider and Codex do at start.
    let program = "import os, sys, tty\n\
                   tty.setraw(0)\n\
                   os.write(1, b'ab\\r\\ncd\\x1b[6n\\x1b[c')\n\
                   got = b''\n\
                   while not (b'R' in got and got.endswith(b'c')):\n\
                   \x20   got += os.read(0, 100)\n\
                   os.write(1, b'\\r\\nanswers ' + repr(got).encode() + b' end\\r\\n')\n\
                   os.read(0, 1)\n";
    spawned.spawn("asker", &["--", &python(), "-c", program]);
    let out = ctl(
        &dir,
        &[],
        &["wait-for", "asker", "end", "--timeout", "20000"],
    );
    assert!(out.status.success(), "{}", describe(&out));
    let spool = String::from_utf8_lossy(&ctl(&dir, &[], &["read", "asker"]).stdout).into_owned();
    assert!(
        spool.contains(r"answers b'\x1b[2;3R\x1b[?6c' end"),
        "{spool}"
    );
}
