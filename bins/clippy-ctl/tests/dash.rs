//! End-to-end: `clippy-ctl dash` on a terminal (a PTY) of the test's own, its screen read back
//! through the project's own terminal emulator (`clippy-screen`), with a real broker in a
//! private `XDG_RUNTIME_DIR` and real sessions (bash, Python, the hooked test agent) started by
//! `clippy-ctl spawn`. Every wait is for a condition on the screen or the broker; the deadlines
//! only fail a test that hangs.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clippy_pty::{CommandSpec, PtyMaster, WinSize};
use clippy_screen::Screen;
use desktop::{TempDir, broker, ctl, ctl_bin, python, wait_for};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The dashboard on a terminal, its screen emulated as the bytes come.
struct Dash {
    child: clippy_pty::Child,
    master: Arc<PtyMaster>,
    screen: Arc<Mutex<Screen>>,
}

impl Dash {
    fn start(dir: &TempDir, size: WinSize, env: &[(&str, &str)]) -> Dash {
        Dash::run(dir, size, env, &["dash"])
    }

    /// `clippy-ctl ARGS` on a terminal of its own (the dashboard, or `attach`).
    fn run(dir: &TempDir, size: WinSize, env: &[(&str, &str)], args: &[&str]) -> Dash {
        let pair = clippy_pty::openpty(size).unwrap();
        let mut spec = CommandSpec::new(ctl_bin()).cwd(dir.path());
        for arg in args {
            spec = spec.arg(arg);
        }
        for (key, _) in std::env::vars_os() {
            spec = spec.env_remove(key);
        }
        spec = spec
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.join("home"))
            .env("XDG_RUNTIME_DIR", dir.runtime())
            .env("XDG_STATE_HOME", dir.runtime().join("state"))
            .env("LANG", "C.UTF-8")
            .env("TERM", "xterm-256color");
        for (k, v) in env {
            spec = spec.env(k, v);
        }
        let child = pair.slave.spawn(&spec).unwrap();
        drop(pair.slave);
        let master = Arc::new(pair.master);
        let screen = Arc::new(Mutex::new(Screen::new(size.cols, size.rows)));
        let (reader, sink) = (Arc::clone(&master), Arc::clone(&screen));
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            while let Ok(n) = std::io::Read::read(&mut &*reader, &mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().feed(&buf[..n]);
            }
        });
        Dash {
            child,
            master,
            screen,
        }
    }

    fn text(&self) -> String {
        self.screen.lock().unwrap().snapshot(0).lines.join("\n")
    }

    fn alternate(&self) -> bool {
        self.screen.lock().unwrap().snapshot(0).alternate
    }

    /// Waits until the screen shows a line that has every one of `words`.
    fn wait_line(&self, words: &[&str]) -> String {
        self.wait(&format!("a line with {words:?}"), |text| {
            text.lines()
                .find(|line| words.iter().all(|w| line.contains(w)))
                .map(str::to_owned)
        })
    }

    fn wait_text(&self, text: &str) {
        self.wait(&format!("{text:?}"), |shown| {
            shown.contains(text).then_some(())
        });
    }

    /// Waits until `check` finds what it looks for on the screen; the screen is shown when
    /// it never does.
    fn wait<T>(&self, what: &str, check: impl Fn(&str) -> Option<T>) -> T {
        let deadline = std::time::Instant::now() + desktop::TIMEOUT;
        loop {
            let text = self.text();
            if let Some(found) = check(&text) {
                return found;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what} on the dashboard:\n{text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Waits until the terminal is back on its normal screen (the last bytes the dashboard
    /// wrote may reach the emulator after it exited).
    fn wait_normal_screen(&self) {
        wait_for("the alternate screen to be left", || {
            (!self.alternate()).then_some(())
        });
    }

    fn keys(&self, keys: &[u8]) {
        std::io::Write::write_all(&mut &*self.master, keys).unwrap();
    }

    fn resize(&self, size: WinSize) {
        self.screen.lock().unwrap().resize(size.cols, size.rows);
        self.master.resize(size).unwrap();
    }
}

impl Drop for Dash {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sessions a test spawned, killed when it ends.
struct Sessions<'a> {
    dir: &'a TempDir,
    names: Vec<String>,
}

impl Sessions<'_> {
    fn spawn(&mut self, name: &str, args: &[&str]) {
        self.names.push(name.to_owned());
        let mut full = vec!["spawn", "--name", name];
        full.extend_from_slice(args);
        let out = ctl(self.dir, &[], &full);
        assert!(out.status.success(), "spawn {name}: {out:?}");
    }
}

impl Drop for Sessions<'_> {
    fn drop(&mut self) {
        for name in &self.names {
            let out = ctl(self.dir, &[], &["--json", "status", name]);
            let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            if let Some(pid) = status["session_status"]["pid"].as_i64() {
                let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
        }
    }
}

fn bash_args() -> Vec<&'static str> {
    vec!["--shell-integration", "--", "bash", "--norc", "--noprofile"]
}

#[test]
fn the_list_follows_each_state_enter_attaches_a_resize_redraws_and_q_restores_the_terminal() {
    let dir = TempDir::with_runtime("dash-states");
    let _broker = broker(&dir, &[]);
    let mut sessions = Sessions {
        dir: &dir,
        names: Vec::new(),
    };
    sessions.spawn("sh", &bash_args());
    let py = python();
    sessions.spawn("py", &["--preset", "python", "--", &py, "-q"]);
    let dash = Dash::start(&dir, WinSize::new(80, 24), &[]);
    dash.wait_text("clippy dash");
    assert!(
        dash.alternate(),
        "the dashboard draws on the alternate screen"
    );
    dash.wait_line(&["sh", "idle"]);
    dash.wait_line(&["py", "idle"]);

    // A turn runs: busy with its time, then idle again with one more turn.
    std::thread::scope(|scope| {
        let exec = scope.spawn(|| ctl(&dir, &[], &["exec", "sh", "sleep 2; echo slept-well"]));
        dash.wait_line(&["sh", "busy"]);
        let out = exec.join().unwrap();
        assert!(out.status.success(), "{out:?}");
    });
    dash.wait_line(&["sh", "idle", " 1 "]);

    // Enter attaches to the selected session (Home: the first, sh, the most recently active
    // idle one); the detach key comes back to the dashboard.
    dash.keys(b"\x1b[H");
    dash.wait_text("sh: screen");
    dash.keys(b"\r");
    wait_for("the session's own screen", || {
        (!dash.text().contains("clippy dash")).then_some(())
    });
    dash.keys(b"echo typed-while-attached\r");
    dash.wait_text("typed-while-attached");
    dash.keys(b"\x1cd");
    dash.wait_text("clippy dash");
    dash.wait_line(&["sh", "idle", " 2 "]);

    // s: a message written in the editor is sent as one paste and submitted.
    dash.keys(b"s");
    dash.wait_text("message to sh");
    dash.keys(b"echo sent-by-the-$((6*7))-editor\x13");
    dash.wait("the sent command's output", |text| {
        text.lines()
            .any(|l| l.trim() == "sent-by-the-42-editor")
            .then_some(())
    });

    // A resize redraws at the new size: the wide layout has the COMMAND column.
    dash.resize(WinSize::new(160, 50));
    dash.wait_line(&["NAME", "COMMAND"]);

    // n starts a session that then shows in the list.
    sessions.names.push("spawned".into());
    dash.keys(b"n");
    dash.wait_text("new session");
    dash.keys(format!("{py} -q\tspawned\r").as_bytes());
    dash.wait_line(&["spawned", "ok"]);

    // q leaves, and the terminal is back on its normal screen.
    dash.keys(b"q");
    let mut dash = dash;
    let status = wait_for("the dashboard to exit", || dash.child.try_wait().unwrap());
    assert!(status.success(), "{status:?}");
    dash.wait_normal_screen();
}

/// Keys typed while the dashboard makes an attachment (here, while the broker it asks for the
/// session's attach socket is stopped) wait for the session: the terminal stays raw, so they
/// are neither echoed by it nor read as its signal keys (the detach key's Ctrl+\\ is the quit
/// key of a cooked terminal, which would also throw away the line typed before it). Keys read
/// with the Enter that attaches are the session's as well.
#[test]
fn keys_typed_with_or_after_the_enter_that_attaches_reach_the_session() {
    let dir = TempDir::with_runtime("dash-attach-keys");
    let broker = broker(&dir, &[]);
    let mut sessions = Sessions {
        dir: &dir,
        names: Vec::new(),
    };
    sessions.spawn("sh", &bash_args());
    let dash = Dash::start(&dir, WinSize::new(80, 24), &[]);
    dash.wait_line(&["sh", "idle"]);

    let stopped = Pid::from_raw(i32::try_from(broker.pid()).unwrap());
    nix::sys::signal::kill(stopped, Signal::SIGSTOP).unwrap();
    dash.keys(b"\r");
    wait_for("the dashboard to step aside", || {
        (!dash.alternate()).then_some(())
    });
    dash.keys(b"echo typed-$((6*7))-while-attaching\r\x1cd");
    nix::sys::signal::kill(stopped, Signal::SIGCONT).unwrap();

    dash.wait_text("clippy dash");
    dash.wait_line(&["sh", "idle", " 1 "]);
    let out = ctl(&dir, &[], &["get-turn", "sh", "--format", "text"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "typed-42-while-attaching"
    );

    // Keys that come in one read with the Enter are the session's too.
    dash.keys(b"\recho with-the-enter-$((6*7))\r\x1cd");
    dash.wait_line(&["sh", "idle", " 2 "]);
    dash.wait_text("clippy dash");
    let out = ctl(&dir, &[], &["get-turn", "sh", "--format", "text"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "with-the-enter-42"
    );
}

#[test]
fn a_search_opens_a_turn_and_a_gated_handoff_is_approved() {
    let dir = TempDir::with_runtime("dash-route");
    let _broker = broker(&dir, &[]);
    let mut sessions = Sessions {
        dir: &dir,
        names: Vec::new(),
    };
    sessions.spawn("from", &bash_args());
    sessions.spawn("to", &bash_args());
    for name in ["from", "to"] {
        let out = ctl(&dir, &[], &["wait-prompt", name, "--timeout", "20000"]);
        assert!(out.status.success(), "{out:?}");
    }
    let out = ctl(&dir, &[], &["route", "add", "from", "to", "--gated"]);
    assert!(out.status.success(), "{out:?}");
    let dash = Dash::start(&dir, WinSize::new(100, 30), &[]);
    dash.wait_line(&["from", "idle"]);
    let out = ctl(&dir, &[], &["exec", "from", "echo needle-in-a-haystack"]);
    assert!(out.status.success(), "{out:?}");

    // The handoff waits for approval: r shows it, a approves it, and it reaches `to`.
    dash.wait_line(&["to", "+1"]);
    dash.keys(b"r");
    dash.wait_line(&["awaiting_approval"]);
    dash.keys(b"a");
    dash.wait_text("approved");
    dash.keys(b"\x1b");
    wait_for("the handoff typed into `to`", || {
        let out = ctl(&dir, &[], &["screen", "to"]);
        String::from_utf8_lossy(&out.stdout)
            .contains("needle-in-a-haystack")
            .then_some(())
    });

    // The next handoff is edited before it is approved: e opens the editor on its text, the
    // text written there is what reaches `to`.
    let out = ctl(&dir, &[], &["wait-prompt", "to", "--timeout", "20000"]);
    assert!(out.status.success(), "{out:?}");
    let out = ctl(&dir, &[], &["exec", "from", "echo first-draft"]);
    assert!(out.status.success(), "{out:?}");
    dash.wait_line(&["to", "+1"]);
    dash.keys(b"r");
    dash.wait_line(&["awaiting_approval"]);
    dash.keys(b"e");
    dash.wait_text("edit the handoff of");
    dash.wait_text("first-draft");
    dash.keys(&[0x7f; 300]);
    dash.wait("the editor emptied", |text| {
        (!text.contains("first-draft")).then_some(())
    });
    dash.keys(b"echo edited-$((6*7))-by-the-dash\x13");
    dash.wait_text("with the edited text");
    dash.keys(b"\x1b");
    wait_for("the edited handoff run in `to`", || {
        let out = ctl(&dir, &[], &["screen", "to"]);
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        screen
            .lines()
            .any(|l| l.trim() == "edited-42-by-the-dash")
            .then_some(())
    });
    let out = ctl(&dir, &[], &["screen", "to"]);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("first-draft"),
        "the text before the edit never reached `to`: {out:?}"
    );

    // / searches the history; Enter opens the turn found.
    dash.keys(b"/needle\r");
    dash.wait_line(&["from", "[needle"]);
    dash.keys(b"\r");
    dash.wait_text("found: turn");
    dash.wait_line(&["needle-in-a-haystack"]);
    dash.keys(b"\x03");
    let mut dash = dash;
    let status = wait_for("Ctrl+C to end the dashboard", || {
        dash.child.try_wait().unwrap()
    });
    assert!(status.success());
    dash.wait_normal_screen();
}

#[test]
fn a_waiting_agent_comes_first_is_answered_with_a_and_a_hang_up_restores_the_terminal() {
    let dir = TempDir::with_runtime("dash-agent");
    let _broker = broker(&dir, &[]);
    let bin = dir.subdir("bin");
    let agent = bin.join("claude");
    let program = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../clippy-session/tests/programs/hooked_agent.py");
    std::os::unix::fs::symlink(&program, &agent).unwrap();
    std::os::unix::fs::symlink(ctl_bin(), bin.join("clippy-ctl")).unwrap();
    let path = format!("PATH={}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let mut sessions = Sessions {
        dir: &dir,
        names: Vec::new(),
    };
    sessions.spawn("sh", &bash_args());
    sessions.spawn("agent", &["--env", &path, "--", agent.to_str().unwrap()]);
    let dash = Dash::start(&dir, WinSize::new(80, 24), &[("NO_COLOR", "1")]);
    dash.wait_line(&["agent", "idle"]);
    let out = ctl(&dir, &[], &["send", "agent", "perm", "--enter"]);
    assert!(out.status.success(), "{out:?}");
    let line = dash.wait_line(&["agent", "waiting permission"]);
    // What needs a person is the first row of the list.
    let text = dash.text();
    let first = text
        .lines()
        .skip_while(|l| !l.contains("NAME"))
        .nth(1)
        .map(str::to_owned);
    assert_eq!(first.as_deref(), Some(line.as_str()), "{}", dash.text());
    dash.wait_text("1 waiting");
    // a answers it (allow) from the dashboard: the agent goes on.
    dash.keys(b"\x1b[H");
    dash.wait_text("agent: screen");
    dash.keys(b"a");
    dash.wait_line(&["answered", ": allow"]);
    wait_for("the wait to end", || {
        (!dash.text().contains("waiting permission")).then_some(())
    });
    wait_for("the agent to go on", || {
        let out = ctl(&dir, &[], &["screen", "agent"]);
        String::from_utf8_lossy(&out.stdout)
            .contains("You answered allow")
            .then_some(())
    });
    // A hang-up ends the dashboard and puts the terminal back.
    let mut dash = dash;
    nix::sys::signal::kill(Pid::from_raw(dash.child.pid() as i32), Signal::SIGHUP).unwrap();
    let status = wait_for("the hang-up to end the dashboard", || {
        dash.child.try_wait().unwrap()
    });
    assert!(status.success(), "{status:?}");
    dash.wait_normal_screen();
}

#[test]
fn a_terminal_attached_with_clippy_ctl_attach_is_counted_in_status_and_on_the_dashboard() {
    let dir = TempDir::with_runtime("dash-attached");
    let _broker = broker(&dir, &[]);
    let mut sessions = Sessions {
        dir: &dir,
        names: Vec::new(),
    };
    sessions.spawn("sh", &bash_args());
    let out = ctl(&dir, &[], &["wait-prompt", "sh", "--timeout", "20000"]);
    assert!(out.status.success(), "{out:?}");
    let attached = |dir: &TempDir| {
        let out = ctl(dir, &[], &["status", "sh"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("attached:"))
            .map(str::to_owned)
            .unwrap_or_default()
    };
    assert_eq!(attached(&dir), "attached:       0");
    let dash = Dash::start(&dir, WinSize::new(80, 24), &[]);
    let line = dash.wait_line(&["sh", "idle"]);
    assert!(!line.contains('⧉'), "{line}");

    // A real `clippy-ctl attach` on a terminal of its own: counted by the broker, and the
    // dashboard shows it from the event, without asking.
    let client = Dash::run(&dir, WinSize::new(80, 24), &[], &["attach", "sh"]);
    wait_for("status to count the attached terminal", || {
        (attached(&dir) == "attached:       1 terminal (clippy-ctl attach)").then_some(())
    });
    dash.wait_line(&["sh ⧉1", "idle"]);
    client.keys(b"echo from-the-attached-terminal\r");
    client.wait_text("from-the-attached-terminal");
    let json = ctl(&dir, &[], &["--json", "list-sessions"]);
    let listed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(listed["sessions"][0]["attached"], 1, "{listed}");

    // Detached: the count goes back to 0 on both.
    client.keys(b"\x1cd");
    wait_for("status to count no terminal", || {
        (attached(&dir) == "attached:       0").then_some(())
    });
    dash.wait("the count gone from the list", |text| {
        text.lines()
            .any(|l| l.contains("sh") && l.contains("idle") && !l.contains('⧉'))
            .then_some(())
    });
    dash.keys(b"q");
}
