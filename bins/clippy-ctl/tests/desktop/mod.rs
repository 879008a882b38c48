//! Harness for the desktop end-to-end tests (`desktop_x11.rs`, `desktop_tmux.rs`,
//! `desktop_notify.rs`): the real binaries, a private broker and runtime folder per test (the
//! workspace's test kit, `clippy-testkit`), a
//! private X server ([`x11`]), and every process the test starts owned by a [`Proc`] that kills
//! it (its process group, by pid) when dropped. A test that cannot run here says so with
//! [`skip`], which fails instead where [`REQUIRE`] is set (CI, which installs every tool).

#![allow(dead_code)] // Not every test uses every helper.

pub mod x11;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clippy_pty::{CommandSpec, PtyMaster, WinSize};
pub use clippy_testkit::{Broker, TempDir};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// How long any wait may take before the test fails.
pub const TIMEOUT: Duration = clippy_testkit::DEADLINE;

/// Whether `program` is on `PATH`.
pub fn have(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The environment variable that makes a skip a failure: `.ci/run` sets it to 1 because it
/// installs every tool, so there a test that does not run is a broken test, not a passing one.
pub const REQUIRE: &str = "CLIPPY_REQUIRE_DESKTOP_TESTS";

/// The current test cannot run here, for `reason`: says so on stderr, or fails the test when
/// [`REQUIRE`] is `1`. Written to the process's stderr, which libtest does not capture
/// (`println!` and `eprintln!` are captured and shown only for a failing test, so a skip would
/// pass unseen).
pub fn skip(reason: &str) {
    clippy_testkit::skip(REQUIRE, reason);
}

/// Whether every one of `tools` is on `PATH`; if one is not, [`skip`]s naming it.
pub fn tools_present(tools: &[&str]) -> bool {
    match tools.iter().find(|tool| !have(tool)) {
        None => true,
        Some(missing) => {
            skip(&format!("{missing} not found"));
            false
        }
    }
}

/// Polls `check` every 50 ms until it gives `Some`, or fails the test after [`TIMEOUT`].
pub fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A process of the test, in a process group of its own; dropping it kills that group.
pub struct Proc {
    pub child: Child,
    pub name: String,
}

impl Proc {
    /// Starts `command` in a new process group.
    pub fn spawn(name: &str, command: &mut Command) -> Proc {
        let child = command
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            child,
            name: name.to_owned(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited (and its status).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends `signal` to it alone.
    pub fn signal(&self, signal: Signal) {
        let _ = nix::sys::signal::kill(Pid::from_raw(self.pid() as i32), signal);
    }

    /// Waits for its exit, at most [`TIMEOUT`].
    pub fn wait(&mut self) -> std::process::ExitStatus {
        let name = self.name.clone();
        wait_for(&format!("{name} to exit"), || self.exited())
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.exited().is_none() {
            let _ = killpg(Pid::from_raw(self.pid() as i32), Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// A workspace binary from the same build (the test kit's [`clippy_testkit::bin`]: built on first
/// use in this test process; `cargo test -p clippy-ctl` does not build the other packages).
pub fn workspace_bin(package: &str) -> PathBuf {
    clippy_testkit::bin(package)
}

pub fn ctl_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clippy-ctl"))
}

/// Our REPL (`tests/programs/repl.py`).
pub fn repl() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/repl.py")
}

/// The Python interpreter itself (not a shim that is slow to start).
pub fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The environment every program of a test gets: nothing of the runner's but `PATH`.
pub fn base_env(command: &mut Command, dir: &TempDir) {
    command
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("HOME", dir.join("home"))
        .env("XDG_RUNTIME_DIR", dir.runtime())
        .env("XDG_STATE_HOME", dir.runtime().join("state"))
        .env("LANG", "C.UTF-8")
        .current_dir(dir.path());
}

/// Starts a private broker (the test kit's, in a process group of its own, `extra_env` added)
/// and waits for its socket to answer.
pub fn broker(dir: &TempDir, extra_env: &[(&str, &str)]) -> Broker {
    Broker::in_dir(dir)
        .envs(extra_env.iter().copied())
        .process_group()
        .start()
}

/// Runs `clippy-ctl ARGS` with `env` added, to completion.
pub fn ctl(dir: &TempDir, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(ctl_bin());
    base_env(&mut command, dir);
    command
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `clippy-ctl --json list-sessions`: `(id, name, turns)` of each session.
pub fn sessions(dir: &TempDir) -> Vec<(String, Option<String>, u64)> {
    let out = ctl(dir, &[], &["--json", "list-sessions"]);
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    json["sessions"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|s| {
                    (
                        s["session"].as_str().unwrap_or_default().to_owned(),
                        s["name"].as_str().map(str::to_owned),
                        s["turns"].as_u64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The number of turns session `name` has, once it is registered.
pub fn turns_of(dir: &TempDir, name: &str) -> Option<u64> {
    sessions(dir)
        .into_iter()
        .find(|(_, n, _)| n.as_deref() == Some(name))
        .map(|(_, _, turns)| turns)
}

/// The latest turn of session `name`, raw.
pub fn latest_turn(dir: &TempDir, name: &str) -> Vec<u8> {
    let out = ctl(dir, &[], &["get-turn", name]);
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

/// The command line of a wrapped REPL named `name` that logs its input to `log`.
pub fn wrapped_repl(name: &str, log: &Path) -> Vec<String> {
    vec![
        workspace_bin("clippy-session").display().to_string(),
        "--name".into(),
        name.into(),
        "--pattern".into(),
        "^repl> ".into(),
        "--".into(),
        python(),
        repl().display().to_string(),
        log.display().to_string(),
    ]
}

/// Reads a line from a child's stdout (e.g. Xvfb's display number), at most [`TIMEOUT`].
pub fn read_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(TIMEOUT).expect("a line in time")
}

/// The contents of `path`, empty while it does not exist.
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

/// A program on a terminal (a PTY) of the test's own, as on a person's: everything it writes to
/// the terminal is kept; dropping it kills it.
pub struct OnTerminal {
    pub child: clippy_pty::Child,
    pub master: Arc<PtyMaster>,
    /// Everything the terminal was sent.
    written: Arc<Mutex<Vec<u8>>>,
}

impl OnTerminal {
    /// Starts `program ARGS…` on a terminal of `size`, in `dir`, with only the test's
    /// environment (as [`base_env`]) and `TERM=dumb`.
    pub fn start<S: AsRef<OsStr>>(
        dir: &TempDir,
        program: impl AsRef<OsStr>,
        args: &[S],
        size: WinSize,
    ) -> OnTerminal {
        let pair = clippy_pty::openpty(size).unwrap();
        let mut spec = CommandSpec::new(program.as_ref())
            .args(args.iter().map(AsRef::as_ref))
            .cwd(dir.path());
        for (key, _) in std::env::vars_os() {
            spec = spec.env_remove(key);
        }
        spec = spec
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", dir.join("home"))
            .env("XDG_RUNTIME_DIR", dir.runtime())
            .env("XDG_STATE_HOME", dir.runtime().join("state"))
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb");
        let child = pair.slave.spawn(&spec).unwrap();
        // Only the program holds the terminal now: the reader ends when it goes.
        drop(pair.slave);
        let master = Arc::new(pair.master);
        let written = Arc::new(Mutex::new(Vec::new()));
        let (reader, sink) = (Arc::clone(&master), Arc::clone(&written));
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut &*reader, &mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        OnTerminal {
            child,
            master,
            written,
        }
    }

    /// What the terminal was sent so far, as text.
    pub fn shown(&self) -> String {
        String::from_utf8_lossy(&self.written.lock().unwrap()).into_owned()
    }

    /// Waits until the terminal was sent `text` at least `times` times.
    pub fn wait_shown(&self, text: &str, times: usize) {
        wait_for(&format!("{text:?} on the terminal"), || {
            (self.shown().matches(text).count() >= times).then_some(())
        });
    }

    /// Types `keys` on the terminal.
    pub fn type_keys(&self, keys: &[u8]) {
        (&*self.master).write_all(keys).unwrap();
    }

    /// Waits for the program to exit; its status.
    pub fn wait_exit(&mut self) -> clippy_pty::ExitStatus {
        wait_for("the program on the terminal to exit", || {
            self.child.try_wait().unwrap()
        })
    }
}

impl Drop for OnTerminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
