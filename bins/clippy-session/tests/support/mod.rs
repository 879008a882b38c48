//! Harness for the end-to-end tests of `clippy-session`.
//!
//! [`Term`] plays the user's terminal: it opens a PTY of its own, starts a program (normally the
//! wrapper) on the slave as session leader with that slave as controlling terminal — as a terminal
//! emulator would — and reads the master on a thread into a buffer. [`Term::expect`] waits for
//! bytes to show up, [`Term::send`] types, [`Term::wait_exit`] collects the exit status. Dropping a
//! `Term` kills the whole process tree it started, so nothing is left behind when a test fails.
//!
//! Every test gets a [`TempDir`] of the workspace's test kit (mode 0700) holding its
//! `XDG_RUNTIME_DIR` (`run/`, 0700), a `HOME` (`home/`) and whatever files the test writes; it is
//! removed on drop. Programs run with a
//! small, fixed environment ([`base_env`]), not the test runner's.

#![allow(dead_code)] // Not every test uses every helper.

pub mod broker;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clippy_pty::{Child, CommandSpec, ExitStatus, PtyMaster, PtySlave, Signal, WinSize};
pub use clippy_testkit::TempDir;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::termios::Termios;
use nix::unistd::Pid;

/// How long any single wait may take before the test fails: the test kit's bound on a hang.
/// Normal runs take milliseconds, but a debug build on two cores loaded by other builds can be
/// starved for seconds, and a wait is a guard against a hang, not a speed test.
pub const TIMEOUT: Duration = clippy_testkit::DEADLINE;

/// The wrapper under test.
pub fn wrapper_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clippy-session"))
}

/// One of our test programs in `tests/programs/`.
pub fn program(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(name)
}

/// The Python 3 interpreter itself (`python3` on `PATH` may be a wrapper script, such as a
/// pyenv shim, that adds variables to the environment and is slow to start).
pub fn python() -> &'static str {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        let path = String::from_utf8(out.stdout).expect("a UTF-8 path");
        let path = path.trim();
        assert!(
            out.status.success() && Path::new(path).is_absolute(),
            "python3 names its interpreter: {path:?}"
        );
        path.to_owned()
    })
}

// ---------------------------------------------------------------------------------------------
// Temporary directories
// ---------------------------------------------------------------------------------------------

/// A test's private folder (the test kit's): `run/` is the `XDG_RUNTIME_DIR`, `home/` the `HOME`
/// of the programs it starts; removed on drop.
pub fn test_dir() -> TempDir {
    TempDir::with_runtime("cs")
}

/// The session folders currently under `$XDG_RUNTIME_DIR/clippy/sessions/`.
pub fn session_dirs(dir: &TempDir) -> Vec<PathBuf> {
    list_dir(&dir.runtime().join("clippy/sessions"))
}

/// The entries of a folder, sorted; empty when it does not exist.
pub fn list_dir(path: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(path) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    out.sort();
    out
}

/// The permission bits of a file or folder.
pub fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o7777
}

// ---------------------------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------------------------

/// The whole environment programs get (the test runner's own is not passed on): `PATH`, a `HOME`
/// and `XDG_RUNTIME_DIR` of the test's own, `TERM=dumb` (readline and Python's REPL draw plainly)
/// and a UTF-8 locale.
pub fn base_env(dir: &TempDir) -> Vec<(OsString, OsString)> {
    vec![
        (
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        ),
        ("HOME".into(), dir.home().into()),
        ("TERM".into(), "dumb".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("XDG_RUNTIME_DIR".into(), dir.runtime().into()),
    ]
}

// ---------------------------------------------------------------------------------------------
// The user's terminal
// ---------------------------------------------------------------------------------------------

/// What to start on a [`Term`].
pub struct Spawn {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    size: WinSize,
    cwd: Option<PathBuf>,
}

impl Spawn {
    /// `clippy-session ARGS…` with [`base_env`].
    pub fn wrapper<I, S>(dir: &TempDir, args: I) -> Spawn
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Spawn::program(dir, wrapper_bin(), args)
    }

    /// Any program with [`base_env`].
    pub fn program<I, S>(dir: &TempDir, program: impl Into<OsString>, args: I) -> Spawn
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Spawn {
            program: program.into(),
            args: args.into_iter().map(|a| a.as_ref().to_owned()).collect(),
            env: base_env(dir)
                .into_iter()
                .map(|(k, v)| (k, Some(v)))
                .collect(),
            size: WinSize::new(80, 24),
            cwd: None,
        }
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Spawn {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    pub fn env_remove(mut self, key: impl Into<OsString>) -> Spawn {
        self.env.push((key.into(), None));
        self
    }

    pub fn size(mut self, cols: u16, rows: u16) -> Spawn {
        self.size = WinSize::new(cols, rows);
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Spawn {
        self.cwd = Some(dir.into());
        self
    }

    /// The same command, started through `sh -c 'umask 000; exec "$@"'`.
    pub fn with_umask_000(mut self) -> Spawn {
        let mut args: Vec<OsString> = vec![
            "-c".into(),
            r#"umask 000 && exec "$@""#.into(),
            "sh".into(),
            self.program,
        ];
        args.append(&mut self.args);
        self.program = "sh".into();
        self.args = args;
        self
    }

    /// The same command, started by `tests/programs/jobctl.py` the way a job-control shell
    /// would: in a process group of its own that is the terminal's foreground group and has a
    /// parent in the same session (so a stop signal really stops it). The started program's PID
    /// is written to `pid_file`.
    pub fn under_job_control(mut self, pid_file: &Path) -> Spawn {
        let mut args: Vec<OsString> =
            vec![program("jobctl.py").into(), pid_file.into(), self.program];
        args.append(&mut self.args);
        self.program = python().into();
        self.args = args;
        self
    }

    /// Opens a new PTY (the user's terminal) and starts the command on its slave.
    pub fn start(self) -> Term {
        Term::start(self)
    }
}

#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    /// The master read end-of-file: every process holding the slave closed it.
    eof: bool,
}

struct Shared {
    output: Mutex<Output>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Output> {
        self.output.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A program running on a terminal of the test's own.
pub struct Term {
    master: Arc<PtyMaster>,
    /// Our copy of the slave: kept open so its settings can be read, and so the master never
    /// reports end-of-file before [`Term::read_to_end`] asks for it.
    slave: Option<PtySlave>,
    child: Child,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    /// Where the next [`expect`](Term::expect) starts searching.
    cursor: usize,
    /// The terminal's settings before the program started.
    initial_termios: Termios,
    status: Option<ExitStatus>,
    started: Instant,
}

impl Term {
    fn start(spawn: Spawn) -> Term {
        let pair = clippy_pty::openpty(spawn.size).expect("openpty");
        let mut spec = CommandSpec::new(&spawn.program).args(&spawn.args);
        // A fixed environment: drop everything inherited, then apply ours in order.
        for (key, _) in std::env::vars_os() {
            spec = spec.env_remove(key);
        }
        for (key, value) in spawn.env {
            spec = match value {
                Some(value) => spec.env(key, value),
                None => spec.env_remove(key),
            };
        }
        if let Some(cwd) = spawn.cwd {
            spec = spec.cwd(cwd);
        }
        let initial_termios =
            nix::sys::termios::tcgetattr(pair.slave.as_fd()).expect("tcgetattr on a new PTY");
        let child = pair
            .slave
            .spawn(&spec)
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", spawn.program));
        let master = Arc::new(pair.master);
        let shared = Arc::new(Shared {
            output: Mutex::new(Output::default()),
            changed: Condvar::new(),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let master = Arc::clone(&master);
            let shared = Arc::clone(&shared);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || read_master(&master, &shared, &stop))
        };
        Term {
            master,
            slave: Some(pair.slave),
            child,
            shared,
            stop,
            reader: Some(reader),
            cursor: 0,
            initial_termios,
            status: None,
            started: Instant::now(),
        }
    }

    /// The PID of the program started (the wrapper, or the job-control launcher).
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Types `bytes` on the terminal.
    pub fn send(&self, bytes: impl AsRef<[u8]>) {
        (&*self.master)
            .write_all(bytes.as_ref())
            .expect("write to the terminal");
    }

    /// Waits until `needle` appears in the output after the last match; returns where it starts
    /// (an offset into [`output`](Self::output)) and moves the search start past it.
    pub fn expect(&mut self, needle: impl AsRef<[u8]>) -> usize {
        let needle = needle.as_ref();
        let from = self.cursor;
        let what = format!("{:?}", needle.escape_ascii().to_string());
        let at = self.wait_for(&what, |bytes, _| {
            find(&bytes[from..], needle).map(|i| from + i)
        });
        self.cursor = at + needle.len();
        at
    }

    /// Waits until the output holds `needle` `count` times after the last match; moves the
    /// search start past the last one.
    pub fn expect_count(&mut self, needle: impl AsRef<[u8]>, count: usize) {
        for _ in 0..count {
            self.expect(needle.as_ref());
        }
    }

    /// Everything the terminal received so far.
    pub fn output(&self) -> Vec<u8> {
        self.shared.lock().bytes.clone()
    }

    /// Where the next `expect` starts searching.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Waits until `check` (given the output so far and whether it has ended) says yes.
    fn wait_for<T>(&self, what: &str, mut check: impl FnMut(&[u8], bool) -> Option<T>) -> T {
        let deadline = Instant::now() + TIMEOUT;
        let mut output = self.shared.lock();
        loop {
            if let Some(found) = check(&output.bytes, output.eof) {
                return found;
            }
            let now = Instant::now();
            if output.eof || now >= deadline {
                let why = if output.eof {
                    "the terminal was closed"
                } else {
                    "timed out"
                };
                let message = format!(
                    "{why} after {:?} waiting for {what} (searching from offset {} of {})\n{}",
                    self.started.elapsed(),
                    self.cursor,
                    output.bytes.len(),
                    screen_tail(&output.bytes)
                );
                drop(output);
                panic!("{message}");
            }
            output = self
                .shared
                .changed
                .wait_timeout(output, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Waits for the program to exit; returns how it ended.
    pub fn wait_exit(&mut self) -> ExitStatus {
        if let Some(status) = self.status {
            return status;
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("waitpid") {
                self.status = Some(status);
                return status;
            }
            if Instant::now() >= deadline {
                panic!(
                    "pid {} did not exit within {TIMEOUT:?}\n{}",
                    self.pid(),
                    screen_tail(&self.shared.lock().bytes)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// After the program exited: closes our copy of the slave and returns everything the
    /// terminal received, up to the end (the master reads end-of-file once no process holds the
    /// slave, after every byte written to it has been read).
    pub fn read_to_end(&mut self) -> Vec<u8> {
        assert!(self.status.is_some(), "read_to_end before wait_exit");
        self.slave = None;
        self.wait_for("the end of the output", |bytes, eof| {
            eof.then(|| bytes.to_vec())
        })
    }

    /// The terminal's settings now (from our copy of the slave).
    pub fn termios(&self) -> Termios {
        let slave = self.slave.as_ref().expect("the slave is still open");
        nix::sys::termios::tcgetattr(slave.as_fd()).expect("tcgetattr")
    }

    /// The terminal's settings before the program started.
    pub fn initial_termios(&self) -> &Termios {
        &self.initial_termios
    }

    /// Resizes the terminal; the kernel sends `SIGWINCH` to its foreground process group.
    pub fn resize(&self, cols: u16, rows: u16) {
        self.master
            .resize(WinSize::new(cols, rows))
            .expect("TIOCSWINSZ");
    }

    /// Sends `signal` to the program started (not to its group).
    pub fn signal(&self, signal: Signal) {
        signal_pid(self.pid(), signal);
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        if self.status.is_none() {
            kill_tree(self.child.pid());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The reader thread: master → buffer, until end-of-file or told to stop.
fn read_master(master: &PtyMaster, shared: &Shared, stop: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(master.as_fd(), PollFlags::POLLIN)];
        match nix::poll::poll(&mut fds, PollTimeout::from(20u16)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => break,
        }
        let read = (&*master).read(&mut buf);
        let mut output = shared.lock();
        match read {
            Ok(0) => {
                output.eof = true;
                shared.changed.notify_all();
                return;
            }
            Ok(n) => output.bytes.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                ) =>
            {
                continue;
            }
            Err(_) => output.eof = true,
        }
        shared.changed.notify_all();
        if output.eof {
            return;
        }
    }
}

/// The last part of what a terminal received, escaped, one line per line, for failure messages.
pub fn screen_tail(bytes: &[u8]) -> String {
    const TAIL: usize = 2000;
    let start = bytes.len().saturating_sub(TAIL);
    let mut out = format!(
        "--- terminal output, last {} of {} bytes (escaped) ---\n",
        bytes.len() - start,
        bytes.len()
    );
    for &b in &bytes[start..] {
        if b == b'\n' {
            out.push_str("\\n\n");
        } else {
            out.push_str(&b.escape_ascii().to_string());
        }
    }
    out.push_str("\n--- end ---");
    out
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Polls `condition` every few milliseconds until it holds; panics with `what` after
/// [`TIMEOUT`].
pub fn settle(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "timed out after {TIMEOUT:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

pub fn signal_pid(pid: u32, signal: Signal) {
    nix::sys::signal::kill(Pid::from_raw(pid as i32), signal)
        .unwrap_or_else(|e| panic!("kill({pid}, {signal}): {e}"));
}

/// What `/proc/<pid>/stat` says about a process.
#[derive(Clone, Debug)]
pub struct ProcStat {
    pub pid: u32,
    /// The command name (after `exec`, the program's).
    pub comm: String,
    /// `R`, `S`, `T` (stopped), `Z` (zombie)…
    pub state: char,
    pub ppid: u32,
    pub pgrp: i32,
    /// The foreground process group of the process's controlling terminal (-1: none).
    pub tpgid: i32,
}

/// `/proc/<pid>/stat`, `None` once the process is gone.
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid pgrp session tty_nr tpgid …": the name may hold spaces and parentheses.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat[open + 1..close].to_owned();
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    Some(ProcStat {
        pid,
        comm,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        tpgid: fields.get(5)?.parse().ok()?,
    })
}

fn processes() -> Vec<ProcStat> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter_map(proc_stat)
        .collect()
}

/// The state letter of a process (`R`, `S`, `T`, `Z`…), `None` once it is gone.
pub fn process_state(pid: u32) -> Option<char> {
    proc_stat(pid).map(|stat| stat.state)
}

/// The children of a process.
pub fn children_of(pid: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|stat| stat.ppid == pid)
        .map(|stat| stat.pid)
        .collect()
}

/// A process and all its descendants, parents first.
pub fn process_tree(root: u32) -> Vec<u32> {
    let all = processes();
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(all.iter().filter(|s| s.ppid == parent).map(|s| s.pid));
        i += 1;
    }
    tree
}

/// Whether a descendant of `root` running `comm` is in the foreground of its terminal (it has
/// `exec`'d, and a key like Ctrl+C would reach it).
pub fn runs_in_foreground(root: u32, comm: &str) -> bool {
    process_tree(root)
        .into_iter()
        .filter_map(proc_stat)
        .any(|stat| stat.comm == comm && stat.pgrp == stat.tpgid && stat.state != 'Z')
}

/// Kills a process and every descendant with `SIGKILL` (all found before any is killed, so the
/// ones reparented by the kill are not missed).
pub fn kill_tree(root: u32) {
    for _ in 0..3 {
        let live: Vec<u32> = process_tree(root)
            .into_iter()
            .filter(|&pid| process_state(pid).is_some_and(|s| s != 'Z'))
            .collect();
        if live.is_empty() {
            return;
        }
        for pid in live {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// The exec-time environment of a process (`/proc/<pid>/environ`), as `KEY=VALUE` entries, sorted.
pub fn environ_of(pid: u32) -> Vec<Vec<u8>> {
    parse_environ(&fs::read(format!("/proc/{pid}/environ")).expect("read /proc/<pid>/environ"))
}

/// NUL-separated `KEY=VALUE` entries, sorted.
pub fn parse_environ(raw: &[u8]) -> Vec<Vec<u8>> {
    let mut entries: Vec<Vec<u8>> = raw
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    entries.sort();
    entries
}

/// The size of the terminal `path` (e.g. the child's PTY slave seen from outside).
pub fn tty_size(path: &Path) -> Option<WinSize> {
    let tty = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOCTTY)
        .open(path)
        .ok()?;
    clippy_pty::terminal_size(tty.as_fd())
}

/// A headless process (pipes, no terminal), killed with its descendants on drop.
pub struct Headless {
    child: std::process::Child,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    status: Option<std::process::ExitStatus>,
}

impl Headless {
    /// Starts `command` with stdout and stderr read on threads; `input` (if any) is written to
    /// its stdin, which is then closed, otherwise stdin is `/dev/null`.
    pub fn start(mut command: std::process::Command, input: Option<&[u8]>) -> Headless {
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        command
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().expect("spawn");
        let drain = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.read_to_end(&mut bytes);
                bytes
            })
        };
        let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
        let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
        let mut headless = Headless {
            child,
            stdout: Some(stdout),
            stderr: Some(stderr),
            status: None,
        };
        if let Some(input) = input {
            let mut stdin = headless.child.stdin.take().expect("stdin");
            stdin.write_all(input).expect("write stdin");
        }
        headless
    }

    /// Waits for the exit (at most [`TIMEOUT`]); returns the status, stdout and stderr.
    pub fn finish(mut self) -> (std::process::ExitStatus, Vec<u8>, Vec<u8>) {
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waitpid") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "pid {} did not exit within {TIMEOUT:?}",
                self.child.id()
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        self.status = Some(status);
        let stdout = self.stdout.take().expect("once").join().expect("stdout");
        let stderr = self.stderr.take().expect("once").join().expect("stderr");
        (status, stdout, stderr)
    }
}

impl Drop for Headless {
    fn drop(&mut self) {
        if self.status.is_none() {
            kill_tree(self.child.id());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The turn log
// ---------------------------------------------------------------------------------------------

/// The turns of a `--turn-log` file, one JSON object per line.
pub fn read_turn_log(path: &Path) -> Vec<serde_json::Value> {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the turn log {}: {e}", path.display()));
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("turn log line is not JSON ({e}): {line}"))
        })
        .collect()
}

/// A turn's raw content, from `content` (UTF-8) or `content_b64`.
pub fn turn_content(turn: &serde_json::Value) -> Vec<u8> {
    if let Some(text) = turn["content"].as_str() {
        return text.as_bytes().to_vec();
    }
    let b64 = turn["content_b64"]
        .as_str()
        .unwrap_or_else(|| panic!("a turn without content: {turn}"));
    base64::engine::Engine::decode(&base64::engine::general_purpose::STANDARD, b64)
        .expect("content_b64 is base64")
}

/// Every `\r\n` replaced by `\n`, as the spool stores output.
pub fn crlf_to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            out.push(b'\n');
            i += 2;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------------------------

/// The wall clock as Unix milliseconds.
pub fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the clock is after 1970")
            .as_millis(),
    )
    .expect("milliseconds fit in a u64")
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` as Unix milliseconds; `None` when it is not that.
pub fn parse_iso8601_ms(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[23] != b'Z'
    {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(range)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second, milli) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli;
    u64::try_from(ms).ok()
}
