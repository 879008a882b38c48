//! A real `clippy-broker` on a real socket in a temporary `XDG_RUNTIME_DIR`.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::{DEADLINE, TempDir, bin, wait_for};

/// The broker's socket for the runtime folder `runtime`.
pub fn socket_in(runtime: &Path) -> PathBuf {
    runtime.join("clippy").join("broker.sock")
}

/// How a [`Broker`] is started; see [`Broker::in_runtime`].
#[derive(Debug)]
pub struct BrokerBuilder {
    /// `None`: the workspace's, built on first use ([`bin`]).
    program: Option<PathBuf>,
    runtime: PathBuf,
    foreground: bool,
    args: Vec<OsString>,
    /// In order; `None` removes the variable.
    env: Vec<(OsString, Option<OsString>)>,
    cwd: PathBuf,
    log: PathBuf,
    append_log: bool,
    process_group: bool,
    owned: Option<TempDir>,
}

impl BrokerBuilder {
    /// Adds arguments after `--foreground` (`--ring-depth 2`, `--config FILE`…).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets a variable of the broker's environment (over the defaults).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Sets every variable of `vars`, in order.
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (key, value) in vars {
            self = self.env(key, value);
        }
        self
    }

    /// Leaves a variable out of the broker's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// The broker's `HOME` (default: the runtime folder).
    pub fn home(self, home: impl AsRef<OsStr>) -> Self {
        self.env("HOME", home)
    }

    /// The broker's current folder, where it looks for `./clippy.toml` (default: the runtime
    /// folder).
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = cwd.into();
        self
    }

    /// Where its stderr goes (default: `broker.log` beside the runtime folder's `clippy/`,
    /// i.e. in the runtime folder).
    pub fn log(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = path.into();
        self
    }

    /// Appends to the log rather than truncating it (several brokers of one test, one log).
    pub fn append_log(mut self) -> Self {
        self.append_log = true;
        self
    }

    /// Without `--foreground`: the broker logs to its own file, as when a wrapper starts it.
    pub fn background(mut self) -> Self {
        self.foreground = false;
        self
    }

    /// Another program in the broker's place (a build of it elsewhere).
    pub fn program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = Some(program.into());
        self
    }

    fn program_path(&self) -> PathBuf {
        self.program.clone().unwrap_or_else(|| bin("clippy-broker"))
    }

    /// In a process group of its own (so a signal to the test's group does not reach it).
    pub fn process_group(mut self) -> Self {
        self.process_group = true;
        self
    }

    /// The broker owns `dir` (its runtime folder, or the one holding it): removed after the
    /// broker is gone, or handed on by [`Broker::take_dir`].
    pub fn owning(mut self, dir: TempDir) -> Self {
        self.owned = Some(dir);
        self
    }

    /// The command the broker is started with.
    pub fn command(&self) -> Command {
        let mut command = Command::new(self.program_path());
        if self.foreground {
            command.arg("--foreground");
        }
        command
            .args(&self.args)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", &self.runtime)
            .env("LANG", "C.UTF-8")
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("XDG_STATE_HOME", self.runtime.join("state"));
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if self.process_group {
            command.process_group(0);
        }
        command
    }

    /// Starts the broker and returns at once (its socket may not answer yet).
    pub fn spawn(self) -> Broker {
        let mut command = self.command();
        let log = fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(self.append_log)
            .truncate(!self.append_log)
            .open(&self.log)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", self.log.display()));
        let child = command
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.program_path().display()));
        Broker {
            child: Some(child),
            socket: socket_in(&self.runtime),
            log: self.log,
            dir: self.owned,
        }
    }

    /// Starts the broker and returns once its socket accepts connections; fails the test if it
    /// exits first or does not get there within [`DEADLINE`].
    pub fn start(self) -> Broker {
        let mut broker = self.spawn();
        broker.wait_ready();
        broker
    }
}

/// A running `clippy-broker`, killed (SIGKILL) and reaped on drop; its log is shown when the
/// test is failing.
#[derive(Debug)]
pub struct Broker {
    child: Option<Child>,
    socket: PathBuf,
    log: PathBuf,
    dir: Option<TempDir>,
}

impl Broker {
    /// A broker whose `XDG_RUNTIME_DIR` is `runtime` (its socket
    /// `runtime/clippy/broker.sock`), run as `clippy-broker --foreground` with nothing of the
    /// test runner's environment but `PATH`: `HOME` and the current folder are `runtime`,
    /// `XDG_STATE_HOME` (its history) is `runtime/state`, `LANG=C.UTF-8`, no `DISPLAY`.
    pub fn in_runtime(runtime: &Path) -> BrokerBuilder {
        BrokerBuilder {
            program: None,
            runtime: runtime.to_owned(),
            foreground: true,
            args: Vec::new(),
            env: Vec::new(),
            cwd: runtime.to_owned(),
            log: runtime.join("broker.log"),
            append_log: false,
            process_group: false,
            owned: None,
        }
    }

    /// A broker for a folder made by [`TempDir::with_runtime`]: runtime `run/`, `HOME` `home/`,
    /// current folder and log (`broker.log`) in the folder itself.
    pub fn in_dir(dir: &TempDir) -> BrokerBuilder {
        Broker::in_runtime(&dir.runtime())
            .home(dir.home())
            .cwd(dir.path())
            .log(dir.join("broker.log"))
    }

    /// Waits until the socket accepts a connection.
    pub fn wait_ready(&mut self) {
        let socket = self.socket.clone();
        wait_for("the broker's socket to accept", DEADLINE, || {
            if UnixStream::connect(&socket).is_ok() {
                return Some(());
            }
            if let Some(status) = self.try_wait() {
                panic!("the broker exited with {status}:\n{}", self.log_text());
            }
            None
        });
    }

    /// The broker's pid (while it runs).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the broker runs").id()
    }

    /// Its socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// What it wrote to stderr (its log, with `--foreground`).
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.as_mut()?.try_wait().ok().flatten()
    }

    /// Sends `signal` to it.
    pub fn signal(&self, signal: Signal) {
        if let Some(child) = &self.child {
            let pid = i32::try_from(child.id()).expect("a pid fits i32");
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }

    /// Waits for its exit, at most `limit`; `None` if it still runs.
    pub fn wait_timeout(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for its exit (after a signal of the test's); fails the test if it still runs after
    /// [`DEADLINE`].
    pub fn wait(&mut self) -> ExitStatus {
        let status = self.wait_timeout(DEADLINE).unwrap_or_else(|| {
            self.kill();
            panic!("the broker did not exit:\n{}", self.log_text())
        });
        self.child = None;
        status
    }

    /// Stops it as a user would (SIGTERM) and waits for the exit; fails the test if it does
    /// not stop within [`DEADLINE`].
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(Signal::SIGTERM);
        self.wait()
    }

    /// Kills it (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The folder it owned ([`BrokerBuilder::owning`]), once it is stopped: for the next broker.
    pub fn take_dir(&mut self) -> TempDir {
        assert!(self.child.is_none(), "stop the broker first");
        self.dir.take().expect("the broker owns a folder")
    }

    /// The folder it owns, if any.
    pub fn dir(&self) -> Option<&TempDir> {
        self.dir.as_ref()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let running = self.child.is_some();
        self.kill();
        if running && std::thread::panicking() {
            eprintln!(
                "--- clippy-broker's log ({}) ---\n{}--- end of log ---",
                self.log.display(),
                self.log_text()
            );
        }
        // `dir` is dropped after this: the broker is gone before its folder is.
    }
}
