//! What `clippy-mcp` adds to a request: `get_turn` (and `list_sessions`) as an MCP `tools/call`
//! through a running `clippy-mcp`, against the same request straight to the broker as
//! `clippy-ctl` sends it, measured in the same run (target, issue 17: a `get_turn` through
//! `clippy-mcp` adds less than 1 ms at p50).
//!
//! Set-up: `clippy-mcp`, `clippy-broker`, `clippy-session` and `clippy-ctl` built in release mode
//! by the bench; a private `XDG_RUNTIME_DIR` on tmpfs (mode 0700, like `/run/user/UID`) with a
//! broker of its own (`clippy-broker --foreground`), and an empty `XDG_CONFIG_HOME`, so no
//! configuration of the caller's plays a part. One session, `clippy-ctl spawn --name sh
//! --shell-integration -- bash`, and two completed turns in it, from `clippy-ctl exec sh 'seq 1
//! 300'` (about 1 KiB of text) and `clippy-ctl exec sh 'seq 1 12500'` (about 62 KiB, under
//! `clippy-mcp`'s default reply limit of 64 KiB, so neither path cuts it).
//!
//! Requests: `get_turn` of each turn by its id, format text; `list_sessions`. Each one three ways:
//! - **direct**: over one kept `clippy_proto::Client` connection to the broker (role client,
//!   past `hello`): exactly the request `clippy-ctl get-turn ID --format text` (or
//!   `list-sessions`) sends once it has connected, timed from building the request until its
//!   reply is decoded. The baseline: "`clippy-ctl`'s own round trip".
//! - **mcp**: the same request as a JSON-RPC `tools/call` line written to the stdin of one running
//!   `clippy-mcp` (after `initialize` and `notifications/initialized`), timed until the response
//!   line with that id has been read whole from its stdout. Each response is then checked, untimed:
//!   a result, not an error nor `isError`, whose `structuredContent` carries the turn's very text
//!   (not cut) or the one session.
//! - **process**: `clippy-ctl get-turn ID --format text` (or `clippy-ctl list-sessions`) spawned,
//!   its output captured and waited for: what a script pays per call, for context.
//!
//! Direct and mcp take [`SAMPLES`] samples each per request after [`WARM_UP`] untimed ones,
//! alternated in rounds of [`ROUND`] (which goes first alternates too), every request in every
//! round; the processes run [`PROCESS_RUNS`] times per request, spread over the same rounds. The
//! CPU time of `clippy-mcp` (all its threads) and of the broker is recorded around each block.
//!
//! It prints a markdown report and writes it to `target/mcp-bench.md`; about 10 s after the build.
//! It ignores its arguments and asserts no timing (only that every reply is the right one). Every
//! process it starts is stopped, by pid, on errors too.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_benches::broker::{BrokerProcess, WAIT};
use clippy_benches::wrapper::{Error, percentile};
use clippy_benches::{Scratch, build_release, machine, monotonic_ns, write_report};
use clippy_proto::{Client, Format, Message, Role, encode};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

/// Samples per request and path (direct, mcp), after [`WARM_UP`] untimed ones.
const SAMPLES: usize = 2000;
/// Untimed requests per request and path first.
const WARM_UP: usize = 200;
/// Samples per request and path per round.
const ROUND: usize = 50;
/// `clippy-ctl` processes per request (spread over the rounds), after [`PROCESS_WARM_UP`].
const PROCESS_RUNS: usize = 200;
/// Untimed `clippy-ctl` processes per request first.
const PROCESS_WARM_UP: usize = 10;
/// The small turn's command: about 1 KiB of text.
const SMALL_TURN: &str = "seq 1 300";
/// The large turn's command: about 62 KiB of text, under `clippy-mcp`'s reply limit (64 KiB).
const LARGE_TURN: &str = "seq 1 12500";
/// The target: what `clippy-mcp` may add to a `get_turn` at p50, in microseconds.
const TARGET_US: f64 = 1000.0;
/// How long one MCP call, or `exec`, may take before the bench gives up.
const STUCK: Duration = Duration::from_secs(30);
/// How long a process may take to go once told to.
const GRACE: Duration = Duration::from_secs(5);
/// The MCP protocol version the bench's client asks for (the newest with `initialize`).
const PROTOCOL_VERSION: &str = "2025-11-25";

fn main() {
    if let Err(e) = run() {
        eprintln!("mcp bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Error> {
    let started = Instant::now();
    let mcp_bin = build_release("mcp bench", "clippy-mcp")?;
    let ctl = build_release("mcp bench", "clippy-ctl")?;
    let broker_bin = build_release("mcp bench", "clippy-broker")?;
    // `clippy-ctl spawn` runs the `clippy-session` next to it: built here so it is this tree's.
    build_release("mcp bench", "clippy-session")?;
    // Dropped in reverse order: the MCP server and the session first, then the broker, then the
    // directory.
    let scratch = Scratch::create("clippy-mcp-bench")?;
    let config = scratch.path().join("config");
    std::fs::create_dir(&config)?;
    let broker = BrokerProcess::start(&broker_bin, scratch.path(), &[])?;
    let env = Env {
        ctl,
        runtime: scratch.path().to_owned(),
        config,
    };
    let load_before = load();

    let mut shell = env.spawn("sh")?;
    let small = env.exec("sh", SMALL_TURN)?;
    let large = env.exec("sh", LARGE_TURN)?;
    let mut client = Client::connect_within(broker.socket(), Role::Client, WAIT)?;
    client.set_read_timeout(Some(WAIT))?;
    let mut subjects = vec![
        Subject::get_turn("small", &small, &mut client)?,
        Subject::get_turn("large", &large, &mut client)?,
        Subject::list_sessions(&mut client)?,
    ];
    let (small_bytes, large_bytes) = (subjects[0].content_bytes(), subjects[1].content_bytes());
    let mut mcp = McpServer::start(&mcp_bin, &env)?;
    let broker_pid = broker.pid()?;
    measure(&mut subjects, &env, &mut client, &mut mcp, broker_pid)?;
    let threads = threads(mcp.pid());
    let mcp_log = mcp.finish()?;
    drop(client);
    shell.stop()?;
    let load_after = load();
    let broker_log = broker.log();
    broker.stop()?;
    drop(scratch);

    let report = report(
        &subjects,
        &Notes {
            small_bytes,
            large_bytes,
            mcp_threads: threads,
            not_replies: mcp.not_replies,
            load: (load_before, load_after),
            mcp_log,
            broker_log,
        },
        started.elapsed(),
    );
    write_report("mcp bench", "mcp-bench.md", &report)
}

/// The system's load averages, as `uptime` shows them.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

/// `clippy-ctl`, the runtime directory and the empty configuration directory.
struct Env {
    ctl: PathBuf,
    runtime: PathBuf,
    config: PathBuf,
}

impl Env {
    /// `program` in the bench's environment: `PATH` and `HOME` only, plus the private runtime,
    /// configuration and state directories; the scratch directory as the working directory (no
    /// `./clippy.toml` of the caller's is read).
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.env_clear();
        for key in ["PATH", "HOME"] {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        command
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("XDG_CONFIG_HOME", &self.config)
            .env("XDG_STATE_HOME", self.runtime.join("state"))
            .current_dir(&self.runtime);
        command
    }

    /// `clippy-ctl args…`, its output captured.
    fn ctl<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<std::process::Output, Error> {
        Ok(self
            .command(&self.ctl)
            .args(args)
            .stdin(Stdio::null())
            .output()?)
    }

    /// `clippy-ctl --json spawn --name NAME --shell-integration -- bash`: the session, once the
    /// broker knows it.
    fn spawn(&self, name: &str) -> Result<Shell, Error> {
        let out = self.ctl(&[
            "--json",
            "spawn",
            "--name",
            name,
            "--shell-integration",
            "--",
            "bash",
        ])?;
        let said = said(&out);
        if !out.status.success() {
            return Err(format!("clippy-ctl spawn {name} failed ({}): {said}", out.status).into());
        }
        let doc: Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("clippy-ctl --json spawn {name}: {e}: {said}"))?;
        let status = &doc["session_status"];
        let (Some(id), Some(pid)) = (status["session"].as_str(), status["pid"].as_u64()) else {
            return Err(format!("clippy-ctl --json spawn {name} said {said}").into());
        };
        let program = i32::try_from(pid)?;
        Ok(Shell {
            name: name.to_owned(),
            program,
            wrapper: parent_of(program),
            dir: clippy_spool::session_dir(&self.runtime, id),
            stopped: false,
        })
    }

    /// `clippy-ctl --json exec SESSION LINE`: the new turn's id.
    fn exec(&self, session: &str, line: &str) -> Result<String, Error> {
        let timeout = STUCK.as_millis().to_string();
        let out = self.ctl(&["--json", "--timeout", &timeout, "exec", session, line])?;
        let said = said(&out);
        if !out.status.success() {
            return Err(format!("clippy-ctl exec {session} {line:?} failed: {said}").into());
        }
        let doc: Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("clippy-ctl --json exec: {e}: {said}"))?;
        match (doc["turn_id"].as_str(), doc["exit_code"].as_i64()) {
            (Some(turn), Some(0)) => Ok(turn.to_owned()),
            _ => Err(format!("clippy-ctl --json exec {session} {line:?} said {said}").into()),
        }
    }
}

/// A process's stdout and stderr, for messages.
fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The session started by `clippy-ctl spawn`: bash and its wrapper (bash's parent) are stopped,
/// by pid, when it is dropped.
struct Shell {
    name: String,
    program: i32,
    wrapper: Option<i32>,
    /// The session's folder, removed by the wrapper when it ends.
    dir: PathBuf,
    stopped: bool,
}

impl Shell {
    /// SIGHUP to bash (an interactive bash ignores SIGTERM); its wrapper then ends the session.
    /// Whatever has not gone after [`GRACE`] is killed. Errs if it had to be.
    fn stop(&mut self) -> Result<(), Error> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        signal(self.program, Signal::SIGHUP);
        let deadline = Instant::now() + GRACE;
        let gone = |s: &Self| !alive(s.program) && s.wrapper.is_none_or(|w| !alive(w));
        while !gone(self) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if gone(self) {
            while self.dir.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            return Ok(());
        }
        signal(self.program, Signal::SIGKILL);
        if let Some(wrapper) = self.wrapper {
            signal(wrapper, Signal::SIGKILL);
        }
        Err(format!(
            "session {} did not end within {GRACE:?} of bash's SIGHUP",
            self.name
        )
        .into())
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn signal(pid: i32, signal: Signal) {
    let _ = kill(Pid::from_raw(pid), signal);
}

/// `pid`'s state letter and parent, from `/proc/PID/stat`.
fn stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// Runs, and is not a zombie.
fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

fn parent_of(pid: i32) -> Option<i32> {
    stat(pid).map(|(_, parent)| parent).filter(|&p| p > 1)
}

/// The CPU time of every thread of `pid` (`/proc/PID/task/*/schedstat`); zero when unknown.
fn process_cpu(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// How many threads `pid` has (0 when unknown).
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count)
}

/// One `clippy-mcp` serving the bench on its stdin and stdout: a JSON-RPC client of it, one
/// request at a time. A watchdog kills it (by pid) when a call takes longer than [`STUCK`], so
/// a hung server ends the bench instead of hanging it; dropping it closes its stdin, and kills it
/// if it has not gone after [`GRACE`].
struct McpServer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The last line read.
    line: Vec<u8>,
    next_id: u64,
    /// Lines read that were not the reply waited for (notifications).
    not_replies: usize,
    log: PathBuf,
    /// When the current call is stuck ([`monotonic_ns`]); 0 between calls.
    deadline: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    watchdog: Option<JoinHandle<()>>,
}

impl McpServer {
    /// Starts `binary` (default options: the broker at `$XDG_RUNTIME_DIR/clippy/broker.sock`) and
    /// goes through `initialize` and `notifications/initialized`.
    fn start(binary: &Path, env: &Env) -> Result<Self, Error> {
        let log = env.runtime.join("mcp.stderr");
        let mut child = env
            .command(binary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&log)?)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("clippy-mcp's stdin or stdout is missing".into());
        };
        let deadline = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let pid = child.id();
        let watchdog = {
            let (deadline, done) = (Arc::clone(&deadline), Arc::clone(&done));
            std::thread::Builder::new()
                .name("watchdog".into())
                .spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        let due = deadline.load(Ordering::Relaxed);
                        if due != 0 && monotonic_ns() > due {
                            signal(i32::try_from(pid).unwrap_or(0), Signal::SIGKILL);
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                })?
        };
        let mut server = McpServer {
            child,
            stdin: Some(stdin),
            // Large enough for a whole response in a few reads.
            stdout: BufReader::with_capacity(256 * 1024, stdout),
            line: Vec::with_capacity(256 * 1024),
            next_id: 0,
            not_replies: 0,
            log,
            deadline,
            done,
            watchdog: Some(watchdog),
        };
        let init = format!(r#"{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"#)
            + r#""clientInfo":{"name":"clippy-mcp-bench","version":"0"}}"#;
        let id = server.send("initialize", &init)?;
        let reply = server.reply(id)?;
        if reply["result"]["protocolVersion"].as_str().is_none() {
            return Err(format!("clippy-mcp answered initialize with {reply}").into());
        }
        server.write(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        Ok(server)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn write(&mut self, line: &[u8]) -> Result<(), Error> {
        let stdin = self.stdin.as_mut().ok_or("clippy-mcp's stdin is closed")?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
        // One write: the server reads the request whole.
        stdin.write_all(&bytes)?;
        Ok(())
    }

    /// Writes the request `method` with `params` (a JSON object); its id.
    fn send(&mut self, method: &str, params: &str) -> Result<u64, Error> {
        let id = self.next_id;
        self.next_id += 1;
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        self.write(line.as_bytes())?;
        Ok(id)
    }

    /// Reads lines until the one replying to `id`, left in `self.line`. Notifications are
    /// skipped; the reply is found by its start (`{"jsonrpc":"2.0","id":ID,`, as `rmcp` writes
    /// it), and any other line is parsed to see whether it is the reply.
    fn read_reply(&mut self, id: u64) -> Result<(), Error> {
        const REPLY: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
        const NOTIFICATION: &[u8] = br#"{"jsonrpc":"2.0","method":"#;
        let digits = format!("{id},");
        loop {
            self.line.clear();
            if self.stdout.read_until(b'\n', &mut self.line)? == 0 {
                return Err(format!(
                    "clippy-mcp closed its stdout: {}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                )
                .into());
            }
            let ours = if let Some(rest) = self.line.strip_prefix(REPLY) {
                rest.starts_with(digits.as_bytes())
            } else if self.line.starts_with(NOTIFICATION) {
                false
            } else {
                serde_json::from_slice::<Value>(&self.line)
                    .is_ok_and(|v| v["id"].as_u64() == Some(id) && v.get("method").is_none())
            };
            if ours {
                return Ok(());
            }
            self.not_replies += 1;
        }
    }

    /// The reply to `id`, parsed; an error reply is an error.
    fn reply(&mut self, id: u64) -> Result<Value, Error> {
        self.read_reply(id)?;
        let reply: Value = serde_json::from_slice(&self.line)?;
        if reply["id"].as_u64() != Some(id) {
            return Err(format!("clippy-mcp answered request {id} with {reply}").into());
        }
        if let Some(error) = reply.get("error") {
            return Err(format!("clippy-mcp answered request {id} with an error: {error}").into());
        }
        Ok(reply)
    }

    /// One `tools/call` of `tool` with `arguments` (a JSON object), timed from building the
    /// request line until the reply's line is read whole; the reply is left in `self.line`.
    fn call(&mut self, tool: &str, arguments: &str) -> Result<(u64, Duration), Error> {
        self.deadline.store(
            monotonic_ns() + u64::try_from(STUCK.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let started = Instant::now();
        let id = self.send(
            "tools/call",
            &format!(r#"{{"name":"{tool}","arguments":{arguments}}}"#),
        )?;
        self.read_reply(id)?;
        let took = started.elapsed();
        self.deadline.store(0, Ordering::Relaxed);
        Ok((id, took))
    }

    /// The last reply, checked: a result (not an error, not `isError`) for `id`; its
    /// `structuredContent`.
    fn checked(&self, id: u64) -> Result<Value, Error> {
        let mut reply: Value = serde_json::from_slice(&self.line)?;
        let result = &reply["result"];
        if reply["id"].as_u64() != Some(id)
            || result.is_null()
            || result["isError"].as_bool() != Some(false)
        {
            let shown: String = String::from_utf8_lossy(&self.line)
                .chars()
                .take(500)
                .collect();
            return Err(format!("clippy-mcp answered call {id} with {shown}").into());
        }
        Ok(reply["result"]["structuredContent"].take())
    }

    /// Closes its stdin (the client leaves), waits for it to go; its log.
    fn finish(&mut self) -> Result<String, Error> {
        drop(self.stdin.take());
        let status = wait_child(&mut self.child);
        self.done.store(true, Ordering::Relaxed);
        if let Some(watchdog) = self.watchdog.take() {
            let _ = watchdog.join();
        }
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        match status {
            Some(status) if status.success() => Ok(log),
            Some(status) => Err(format!("clippy-mcp exited with {status}: {log}").into()),
            None => {
                Err(format!("clippy-mcp did not exit within {GRACE:?} of its stdin closing").into())
            }
        }
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = wait_child(&mut self.child);
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Waits up to [`GRACE`] for `child`, then kills it; its status if it went by itself.
fn wait_child(child: &mut Child) -> Option<ExitStatus> {
    let deadline = Instant::now() + GRACE;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------------------------

/// What is asked.
enum Request {
    /// `get_turn` of this turn (by id), format text; its text.
    GetTurn { turn_id: String, text: Vec<u8> },
    /// `list_sessions`; the one session's name.
    ListSessions { name: String },
}

/// One request, measured three ways.
struct Subject {
    label: String,
    request: Request,
    direct: Vec<Duration>,
    mcp: Vec<Duration>,
    process: Vec<Duration>,
    /// The broker's reply frame, header included.
    frame_bytes: usize,
    /// The MCP response line, its `\n` included.
    line_bytes: usize,
    /// CPU time over the direct blocks: the broker's.
    broker_cpu_direct: Duration,
    /// CPU time over the mcp blocks: the broker's, and `clippy-mcp`'s (all threads).
    broker_cpu_mcp: Duration,
    mcp_cpu: Duration,
}

impl Subject {
    fn new(label: String, request: Request, frame_bytes: usize) -> Self {
        Subject {
            label,
            request,
            direct: Vec::with_capacity(SAMPLES + WARM_UP),
            mcp: Vec::with_capacity(SAMPLES + WARM_UP),
            process: Vec::with_capacity(PROCESS_RUNS + PROCESS_WARM_UP),
            frame_bytes,
            line_bytes: 0,
            broker_cpu_direct: Duration::ZERO,
            broker_cpu_mcp: Duration::ZERO,
            mcp_cpu: Duration::ZERO,
        }
    }

    /// `get_turn` of `turn_id` (the `size` turn): its text fetched once, untimed, to check every
    /// reply against.
    fn get_turn(size: &str, turn_id: &str, client: &mut Client) -> Result<Self, Error> {
        let reply = client.request(|id| Message::GetTurn {
            id,
            turn_id: turn_id.to_owned(),
            format: Format::Text,
        })?;
        let frame_bytes = encode(&reply)?.len();
        let Message::Turn { content, .. } = reply else {
            return Err(format!("the broker answered get_turn {turn_id} with {reply:?}").into());
        };
        if std::str::from_utf8(&content).is_err() || content.len() < 512 {
            return Err(format!(
                "turn {turn_id}'s text is {} bytes, or not UTF-8",
                content.len()
            )
            .into());
        }
        let label = format!("get_turn, {size} turn ({:.1} KiB)", kib(content.len()));
        let request = Request::GetTurn {
            turn_id: turn_id.to_owned(),
            text: content.into_vec(),
        };
        Ok(Self::new(label, request, frame_bytes))
    }

    /// `list_sessions`: the one session, checked once.
    fn list_sessions(client: &mut Client) -> Result<Self, Error> {
        let reply = client.request(|id| Message::ListSessions { id })?;
        let frame_bytes = encode(&reply)?.len();
        let Message::Sessions { sessions, .. } = reply else {
            return Err(format!("the broker answered list_sessions with {reply:?}").into());
        };
        let [session] = sessions.as_slice() else {
            return Err(format!("the broker lists {} sessions, not 1", sessions.len()).into());
        };
        let name = session.name.clone().ok_or("the session has no name")?;
        let request = Request::ListSessions { name };
        Ok(Self::new("list_sessions".into(), request, frame_bytes))
    }

    /// The turn's text bytes (0 for `list_sessions`).
    fn content_bytes(&self) -> usize {
        match &self.request {
            Request::GetTurn { text, .. } => text.len(),
            Request::ListSessions { .. } => 0,
        }
    }

    /// One direct request over `client`, timed, its reply checked.
    fn direct_once(&self, client: &mut Client) -> Result<Duration, Error> {
        match &self.request {
            Request::GetTurn { turn_id, text } => {
                let started = Instant::now();
                let reply = client.request(|id| Message::GetTurn {
                    id,
                    turn_id: turn_id.clone(),
                    format: Format::Text,
                })?;
                let took = started.elapsed();
                match reply {
                    Message::Turn { content, .. } if content == *text => Ok(took),
                    other => Err(format!("direct get_turn {turn_id}: {other:?}").into()),
                }
            }
            Request::ListSessions { name } => {
                let started = Instant::now();
                let reply = client.request(|id| Message::ListSessions { id })?;
                let took = started.elapsed();
                match reply {
                    Message::Sessions { sessions, .. }
                        if sessions.len() == 1 && sessions[0].name.as_ref() == Some(name) =>
                    {
                        Ok(took)
                    }
                    other => Err(format!("direct list_sessions: {other:?}").into()),
                }
            }
        }
    }

    /// One `tools/call` through `mcp`, timed, its reply checked (untimed).
    fn mcp_once(&mut self, mcp: &mut McpServer) -> Result<Duration, Error> {
        let (id, took) = match &self.request {
            Request::GetTurn { turn_id, .. } => mcp.call(
                "get_turn",
                &format!(r#"{{"turn_id":"{turn_id}","format":"text"}}"#),
            )?,
            Request::ListSessions { .. } => mcp.call("list_sessions", "{}")?,
        };
        self.line_bytes = mcp.line.len();
        let value = mcp.checked(id)?;
        let right = match &self.request {
            Request::GetTurn { text, .. } => {
                value["content"].as_str().map(str::as_bytes) == Some(text.as_slice())
                    && value["truncated"].as_bool() == Some(false)
            }
            Request::ListSessions { name } => value["sessions"]
                .as_array()
                .is_some_and(|s| s.len() == 1 && s[0]["name"].as_str() == Some(name)),
        };
        if right {
            Ok(took)
        } else {
            let shown: String = value.to_string().chars().take(500).collect();
            Err(format!(
                "clippy-mcp's {} result is not the broker's: {shown}",
                self.label
            )
            .into())
        }
    }

    /// One `clippy-ctl` process doing the request, spawned, its output captured, waited for.
    fn process_once(&self, env: &Env) -> Result<Duration, Error> {
        let mut command = env.command(&env.ctl);
        match &self.request {
            Request::GetTurn { turn_id, .. } => {
                command.args(["get-turn", turn_id, "--format", "text"]);
            }
            Request::ListSessions { .. } => {
                command.arg("list-sessions");
            }
        }
        command.stdin(Stdio::null());
        let started = Instant::now();
        let out = command.output()?;
        let took = started.elapsed();
        let right = match &self.request {
            Request::GetTurn { text, .. } => out.stdout == *text,
            Request::ListSessions { name } => {
                String::from_utf8_lossy(&out.stdout).contains(name.as_str())
            }
        };
        if out.status.success() && right {
            Ok(took)
        } else {
            Err(format!(
                "clippy-ctl ({}) failed ({}): {}",
                self.label,
                out.status,
                said(&out)
            )
            .into())
        }
    }
}

/// Warm-up, then the rounds: every subject's direct and mcp blocks (which goes first alternates
/// each round), then a few of its processes.
fn measure(
    subjects: &mut [Subject],
    env: &Env,
    client: &mut Client,
    mcp: &mut McpServer,
    broker: u32,
) -> Result<(), Error> {
    let server = mcp.pid();
    for subject in subjects.iter_mut() {
        for _ in 0..WARM_UP {
            subject.direct_once(client)?;
            subject.mcp_once(mcp)?;
        }
        for _ in 0..PROCESS_WARM_UP {
            subject.process_once(env)?;
        }
    }
    let rounds = SAMPLES / ROUND;
    for round in 0..rounds {
        for subject in subjects.iter_mut() {
            for which in [round % 2, 1 - round % 2] {
                let (broker_before, server_before) = (process_cpu(broker), process_cpu(server));
                if which == 0 {
                    for _ in 0..ROUND {
                        let took = subject.direct_once(client)?;
                        subject.direct.push(took);
                    }
                    subject.broker_cpu_direct += process_cpu(broker).saturating_sub(broker_before);
                } else {
                    for _ in 0..ROUND {
                        let took = subject.mcp_once(mcp)?;
                        subject.mcp.push(took);
                    }
                    subject.broker_cpu_mcp += process_cpu(broker).saturating_sub(broker_before);
                    subject.mcp_cpu += process_cpu(server).saturating_sub(server_before);
                }
            }
            let runs = PROCESS_RUNS * (round + 1) / rounds - PROCESS_RUNS * round / rounds;
            for _ in 0..runs {
                let took = subject.process_once(env)?;
                subject.process.push(took);
            }
        }
        if (round + 1) % 10 == 0 {
            eprintln!("mcp bench: round {}/{rounds}", round + 1);
        }
    }
    for subject in subjects.iter_mut() {
        subject.direct.sort_unstable();
        subject.mcp.sort_unstable();
        subject.process.sort_unstable();
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

/// The rest of what the report says.
struct Notes {
    small_bytes: usize,
    large_bytes: usize,
    mcp_threads: usize,
    not_replies: usize,
    load: (String, String),
    mcp_log: String,
    broker_log: String,
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn kib(bytes: usize) -> f64 {
    bytes as f64 / 1024.0
}

fn report(subjects: &[Subject], notes: &Notes, took: Duration) -> String {
    let mut out = String::from("# MCP benchmark\n\n");
    let (cpus, kernel) = machine();
    let _ = writeln!(
        out,
        "One run of `cargo bench -p clippy-benches --bench mcp` ({:.0} s; {cpus} CPUs, Linux \
         {kernel}; load average {} before, {} after). Release builds of `clippy-mcp`, \
         `clippy-broker`, `clippy-session` and `clippy-ctl`; a private `XDG_RUNTIME_DIR` on tmpfs \
         with its own broker (`clippy-broker --foreground`). One session, `clippy-ctl spawn --name \
         sh --shell-integration -- bash`, with two completed turns: `clippy-ctl exec sh \
         '{SMALL_TURN}'` \
         ({} bytes of text, the small turn) and `clippy-ctl exec sh '{LARGE_TURN}'` ({} bytes, \
         the large turn; `clippy-mcp`'s default reply limit is 64 KiB, so it is returned whole).\n",
        took.as_secs_f64(),
        notes.load.0,
        notes.load.1,
        notes.small_bytes,
        notes.large_bytes,
    );
    let _ = writeln!(
        out,
        "Each request three ways: **direct**, over one kept `clippy_proto::Client` connection to \
         the broker, the very request `clippy-ctl` sends once connected (`get_turn` by turn id, \
         format text; `list_sessions`), timed until its reply is decoded: the baseline, \
         `clippy-ctl`'s own round trip; **mcp**, the same as a JSON-RPC `tools/call` line written \
         to the stdin of one running `clippy-mcp` (after `initialize`), timed until the response \
         line with that id is read whole from its stdout (each then checked, untimed: a result \
         whose `structuredContent` holds the broker's very text, not cut); **process**, \
         `clippy-ctl get-turn ID --format text` (`clippy-ctl list-sessions`) spawned, its output \
         captured and checked, waited for: what a script pays per call, for context. Direct and \
         mcp: {SAMPLES} samples each after {WARM_UP} untimed, alternated in rounds of {ROUND} \
         (which goes first alternates too); processes: {PROCESS_RUNS} after {PROCESS_WARM_UP} \
         untimed, spread over the same rounds.\n"
    );
    out.push_str(
        "| request | path | p50 µs | p90 µs | p99 µs | max µs | reply bytes |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for s in subjects {
        let row = |path: &str, samples: &[Duration], bytes: String| {
            format!(
                "| {} | {path} | {:.1} | {:.1} | {:.1} | {:.1} | {bytes} |\n",
                s.label,
                us(percentile(samples, 0.5)),
                us(percentile(samples, 0.9)),
                us(percentile(samples, 0.99)),
                us(percentile(samples, 1.0)),
            )
        };
        out.push_str(&row(
            "direct (`clippy_proto::Client`)",
            &s.direct,
            format!("{} (frame)", s.frame_bytes),
        ));
        out.push_str(&row(
            "mcp (`clippy-mcp` `tools/call`)",
            &s.mcp,
            format!("{} (line)", s.line_bytes),
        ));
        out.push_str(&row("process (`clippy-ctl`)", &s.process, "—".into()));
    }

    out.push_str(
        "\n| request | added p50 µs (mcp − direct) | added p90 µs | added p99 µs | ratio p50 \
         (mcp / direct) | ratio p99 | target |\n|---|---|---|---|---|---|---|\n",
    );
    let mut verdicts = Vec::new();
    for s in subjects {
        let at = |p: f64| (us(percentile(&s.mcp, p)), us(percentile(&s.direct, p)));
        let (m50, d50) = at(0.5);
        let (m90, d90) = at(0.9);
        let (m99, d99) = at(0.99);
        let target = match s.request {
            Request::GetTurn { .. } => {
                let met = m50 - d50 < TARGET_US;
                verdicts.push(format!(
                    "{}: {:+.0} µs, {}",
                    s.label,
                    m50 - d50,
                    if met { "met" } else { "**missed**" }
                ));
                format!(
                    "p50 < +{TARGET_US:.0} ({})",
                    if met { "met" } else { "**missed**" }
                )
            }
            Request::ListSessions { .. } => "—".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | **{:+.1}** | {:+.1} | {:+.1} | {:.2} | {:.2} | {target} |",
            s.label,
            m50 - d50,
            m90 - d90,
            m99 - d99,
            m50 / d50,
            m99 / d99,
        );
    }
    let _ = writeln!(
        out,
        "\nTarget (issue 17): a `get_turn` through `clippy-mcp` adds less than {TARGET_US:.0} µs at \
         p50 over `clippy-ctl`'s own round trip (direct). {}.",
        verdicts.join("; ")
    );

    let _ = writeln!(
        out,
        "\nCPU time per request, from `/proc/PID/task/*/schedstat` around each block of {ROUND} \
         (the bench's own side not counted): the broker's in the direct and in the mcp blocks, \
         and `clippy-mcp`'s, all its threads.\n"
    );
    out.push_str(
        "| request | broker µs/request, direct | broker µs/request, mcp | clippy-mcp µs/request |\n\
         |---|---|---|---|\n",
    );
    for s in subjects {
        let per = |d: Duration, n: usize| us(d) / n.max(1) as f64;
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} |",
            s.label,
            per(s.broker_cpu_direct, s.direct.len()),
            per(s.broker_cpu_mcp, s.mcp.len()),
            per(s.mcp_cpu, s.mcp.len()),
        );
    }
    let _ = writeln!(
        out,
        "\n`clippy-mcp` had {} threads at the end; {} lines it wrote were not the reply waited for \
         (notifications).",
        notes.mcp_threads, notes.not_replies
    );
    for (who, log) in [
        ("clippy-mcp", &notes.mcp_log),
        ("broker", &notes.broker_log),
    ] {
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.contains(" INFO "))
            .take(5)
            .collect();
        if !lines.is_empty() {
            let _ = writeln!(
                out,
                "\nThe {who} logged (past INFO): `{}`",
                lines.join("` / `")
            );
        }
    }
    out
}
