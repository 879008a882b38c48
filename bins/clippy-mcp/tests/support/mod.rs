//! Harness of clippy-mcp's end-to-end tests: a private folder whose `run/` is the
//! `XDG_RUNTIME_DIR`, a real `clippy-broker` there, real sessions started with `clippy-ctl spawn`
//! (bash with shell integration, a Python REPL), and the MCP client — `tests/client/drive.py`,
//! on the official MCP Python SDK — run against them, one scenario per run.
//!
//! The binaries: `clippy-mcp` is this package's (`CARGO_BIN_EXE_clippy-mcp`); `clippy-broker`,
//! `clippy-session` and `clippy-ctl` come from the same build through the workspace's test kit
//! (`clippy-testkit`), which builds each once per test process (a no-op when up to date, as under
//! `cargo test --workspace`). The folder, the broker and the clean-up are the kit's too.
//!
//! Without the SDK (`python3 -c 'import mcp'` fails) a test says "skipped" and passes, unless
//! `CLIPPY_REQUIRE_MCP_TESTS=1` (`.ci/run`, which installs it): then it fails.
//!
//! Every process a test starts carries its private `XDG_RUNTIME_DIR` in its environment; when the
//! test ends, pass or fail, the sessions' process groups and then every process still carrying
//! that folder are killed by pid, and the folder is removed. Nothing sleeps to synchronise: every
//! wait is for a condition, under a deadline that only fails a test that hangs.

#![allow(dead_code)] // Not every test uses every helper.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_testkit::{Broker, Reaper, TempDir, kill_tree_of};
use serde_json::Value;

/// How long a whole scenario may run (the driver's own deadline is shorter).
pub const SCENARIO_DEADLINE: Duration = Duration::from_secs(480);
/// How long starting the broker or a session may take.
pub const START_DEADLINE: Duration = Duration::from_secs(60);

/// Set to 1 where the SDK is installed (CI): a test that would skip fails instead.
pub const REQUIRE: &str = "CLIPPY_REQUIRE_MCP_TESTS";

/// This package's binary.
pub fn mcp_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clippy-mcp"))
}

/// Another package's binary from the same build (the test kit's [`clippy_testkit::bin`]: built
/// on first use in this test process).
pub fn workspace_bin(name: &str) -> PathBuf {
    clippy_testkit::bin(name)
}

/// The MCP client.
pub fn driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/client/drive.py")
}

/// The guessing program of seed 002 §8.
pub fn guess_program() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/guess.py")
}

/// The test agent that runs the hooks `clippy-session` wires (Claude Code's, as `claude`).
pub fn hooked_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../clippy-session/tests/programs/hooked_agent.py")
}

/// The test cannot run here: says so on stderr (which libtest does not capture), or fails where
/// [`REQUIRE`] is 1.
pub fn skip(reason: &str) {
    clippy_testkit::skip(REQUIRE, reason);
}

/// The Python interpreter itself (`python3` on `PATH` may be a shim, such as pyenv's, that needs
/// the runner's `HOME`), when it has the MCP SDK; else why not.
fn python_with_sdk() -> Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .map_err(|e| format!("python3 does not run ({e})"))?;
            let python = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if !out.status.success() || !python.is_absolute() {
                return Err("python3 does not name its interpreter".into());
            }
            // As the driver will run: a clean environment, another HOME.
            let sdk = Command::new(&python)
                .args(["-c", "import mcp, jsonschema"])
                .env_clear()
                .env("PATH", path_var())
                .env("HOME", std::env::temp_dir())
                .env("LANG", "C.UTF-8")
                .output()
                .map_err(|e| format!("{} does not run ({e})", python.display()))?;
            if sdk.status.success() {
                Ok(python)
            } else {
                Err("the Python MCP SDK is not installed (pip install mcp)".into())
            }
        })
        .clone()
}

fn path_var() -> std::ffi::OsString {
    std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into())
}

/// What a driver run printed.
#[derive(Debug)]
pub struct Driven {
    pub stdout: String,
    pub stderr: String,
}

impl Driven {
    /// The facts the driver reported (`RESULT {json}` lines), merged.
    pub fn results(&self) -> serde_json::Map<String, Value> {
        let mut all = serde_json::Map::new();
        for line in self.stdout.lines() {
            if let Some(json) = line.strip_prefix("RESULT ") {
                let value: Value = serde_json::from_str(json)
                    .unwrap_or_else(|e| panic!("a RESULT line is JSON ({e}): {line}"));
                if let Value::Object(map) = value {
                    all.extend(map);
                }
            }
        }
        all
    }

    /// One reported fact.
    pub fn result(&self, key: &str) -> Value {
        self.results()
            .remove(key)
            .unwrap_or_else(|| panic!("the driver reported no {key}:\n{}", self.stdout))
    }
}

/// A test's world: its folder, its broker, its sessions.
pub struct Fixture {
    pub dir: TempDir,
    python: PathBuf,
    broker: Option<Broker>,
    /// The sessions' programs (each the leader of its process group).
    programs: Vec<u32>,
}

impl Fixture {
    /// A private folder and a broker answering in it; `None` (the test skipped) without the SDK.
    pub fn start(tag: &str) -> Option<Fixture> {
        let python = match python_with_sdk() {
            Ok(python) => python,
            Err(reason) => {
                skip(&reason);
                return None;
            }
        };
        let dir = TempDir::with_runtime(&format!("mcp-{tag}"));
        let mut fixture = Fixture {
            dir,
            python,
            broker: None,
            programs: Vec::new(),
        };
        fixture.broker = Some(Broker::in_dir(&fixture.dir).process_group().start());
        Some(fixture)
    }

    /// The environment every process of the test gets: nothing of the runner's but `PATH`.
    fn env(&self, command: &mut Command) {
        command
            .env_clear()
            .env("PATH", path_var())
            .env("HOME", self.dir.home())
            .env("XDG_RUNTIME_DIR", self.dir.runtime())
            .env("XDG_STATE_HOME", self.dir.runtime().join("state"))
            .env("LANG", "C.UTF-8")
            .current_dir(self.dir.path());
    }

    /// `clippy-ctl ARGS…`, run to its end.
    pub fn ctl(&self, args: &[&str]) -> Output {
        let mut command = Command::new(workspace_bin("clippy-ctl"));
        self.env(&mut command);
        command
            .args(["--timeout", "60000"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("clippy-ctl runs")
    }

    /// `clippy-ctl spawn --name NAME ARGS…` in `home/`: the session id, once the session is idle
    /// at its first prompt.
    pub fn spawn(&mut self, name: &str, args: &[&str]) -> String {
        let home = self.dir.home();
        let mut all = vec![
            "spawn",
            "--name",
            name,
            "--cwd",
            home.to_str().expect("a UTF-8 path"),
        ];
        all.extend_from_slice(args);
        let out = self.ctl(&all);
        assert!(
            out.status.success(),
            "clippy-ctl {all:?}: {}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        // Registered is not yet ready: the program's first prompt makes the session idle.
        let ready = self.ctl(&["wait-prompt", name, "--from", "0"]);
        assert!(
            ready.status.success(),
            "{name}'s first prompt: {}\nstdout: {}\nstderr: {}",
            ready.status,
            String::from_utf8_lossy(&ready.stdout),
            String::from_utf8_lossy(&ready.stderr)
        );
        let status = self.ctl(&["--json", "status", name]);
        let status: Value = serde_json::from_slice(&status.stdout).unwrap_or(Value::Null);
        let pid = status["session_status"]["pid"]
            .as_u64()
            .unwrap_or_else(|| panic!("status {name} has a pid: {status}"));
        self.programs
            .push(u32::try_from(pid).expect("a pid fits u32"));
        id
    }

    /// A bash session with shell integration (exit codes and cwd at each prompt), in `home/`.
    pub fn bash(&mut self, name: &str) -> String {
        self.spawn(
            name,
            &["--shell-integration", "--", "bash", "--norc", "--noprofile"],
        )
    }

    /// A Python REPL session (preset python).
    pub fn repl(&mut self, name: &str) -> String {
        let python = self.python.to_str().expect("a UTF-8 path").to_owned();
        self.spawn(name, &["--preset", "python", "--", &python, "-q"])
    }

    /// Runs the driver's `scenario` to its end and checks it passed and no clippy-mcp panicked.
    pub fn drive(&self, scenario: &str) -> Driven {
        let mut command = Command::new(&self.python);
        self.env(&mut command);
        command
            .arg(driver())
            .arg(scenario)
            .env("CLIPPY_MCP", mcp_bin())
            .env("CLIPPY_CTL", workspace_bin("clippy-ctl"))
            .env("CLIPPY_TEST_DIR", self.dir.path())
            .env("CLIPPY_TEST_PYTHON", &self.python)
            .env("CLIPPY_TEST_GUESS", guess_program())
            .env("CLIPPY_TEST_HOOKED_AGENT", hooked_agent())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let started = Instant::now();
        let mut child = command.spawn().expect("start the MCP client");
        let stdout = drain(child.stdout.take().expect("piped"));
        let stderr = drain(child.stderr.take().expect("piped"));
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the MCP client") {
                break Some(status);
            }
            if started.elapsed() > SCENARIO_DEADLINE {
                kill_tree_of(child.id(), &self.dir.runtime());
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let driven = Driven {
            stdout: String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned(),
            stderr: String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned(),
        };
        let elapsed = started.elapsed();
        let shown = || {
            format!(
                "--- the client's transcript ---\n{}\n--- its stderr ---\n{}\n--- clippy-mcp's \
                 stderr ---\n{}",
                driven.stdout,
                driven.stderr,
                self.mcp_stderr()
            )
        };
        let Some(status) = status else {
            panic!(
                "scenario {scenario} did not end within {SCENARIO_DEADLINE:?}\n{}",
                shown()
            );
        };
        assert!(
            status.success() && driven.stdout.ends_with(&format!("PASS {scenario}\n")),
            "scenario {scenario} failed ({status}) after {elapsed:?}\n{}",
            shown()
        );
        let _ = writeln!(
            std::io::stderr(),
            "scenario {scenario}: passed in {:.1} s",
            elapsed.as_secs_f64()
        );
        self.assert_no_panic();
        driven
    }

    /// What every clippy-mcp of the test wrote on stderr, file by file.
    pub fn mcp_stderr(&self) -> String {
        let mut shown = String::new();
        for (path, text) in self.mcp_logs() {
            shown.push_str(&format!("[{}]\n{text}\n", path.display()));
        }
        shown
    }

    fn mcp_logs(&self) -> Vec<(PathBuf, String)> {
        let mut logs: Vec<(PathBuf, String)> = std::fs::read_dir(self.dir.path())
            .expect("the test's folder")
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let name = path.file_name()?.to_str()?;
                (name.starts_with("mcp-") && name.ends_with(".stderr")).then_some(path)
            })
            .map(|path| {
                let text =
                    String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
                (path, text)
            })
            .collect();
        logs.sort();
        logs
    }

    /// No clippy-mcp of the test panicked (each one's stderr was kept).
    pub fn assert_no_panic(&self) {
        let logs = self.mcp_logs();
        assert!(!logs.is_empty(), "the driver kept clippy-mcp's stderr");
        for (path, text) in logs {
            assert!(
                !text.contains("panicked"),
                "clippy-mcp panicked ({}):\n{text}",
                path.display()
            );
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // The sessions' programs, with their process groups (their wrappers then end), also
        // those a scenario spawned; only processes of this test's runtime folder.
        let mut programs: BTreeSet<u32> = self.programs.iter().copied().collect();
        if self.broker.is_some() {
            let listed = self.ctl(&["--json", "list-sessions"]);
            let listed: Value = serde_json::from_slice(&listed.stdout).unwrap_or(Value::Null);
            for session in listed["sessions"].as_array().into_iter().flatten() {
                if let Some(pid) = session["pid"].as_u64().and_then(|p| u32::try_from(p).ok()) {
                    programs.insert(pid);
                }
            }
        }
        let runtime = self.dir.runtime();
        for pid in programs {
            kill_tree_of(pid, &runtime);
        }
        // The broker (its log shown if the test failed).
        drop(self.broker.take());
        // Anything else still running with this test's runtime folder: wrappers, a clippy-mcp.
        Reaper::new(&runtime).reap();
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}
