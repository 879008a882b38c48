//! `clippy-ctl attach` against the session's own terminal, measured in the same run: what attaching
//! adds to a keystroke's echo (target: p99 no more than 1 ms over the direct wrapper), and a
//! 64 MiB burst of output with an attached client — reading, or stalled — that must reach the
//! spool whole without slowing the session.
//!
//! Set-up: `clippy-session`, `clippy-ctl` and `clippy-broker` built in release mode by the bench;
//! a private `XDG_RUNTIME_DIR` on tmpfs (mode 0700, like `/run/user/UID`) with a broker of its own
//! (`clippy-broker --foreground`), and an empty `XDG_CONFIG_HOME`, so no configuration of the
//! caller's plays a part. Every terminal is a PTY of the bench's own ([`TERMINAL_SIZE`]).
//!
//! 1. **Keystroke echo**: the echo program of the wrapper bench (`sh -c "stty raw -echo && printf
//!    '<ready>' && exec cat"`), twice:
//!    - *direct*: `clippy-session --name lat-direct -- sh -c …` on a PTY of ours; one byte written
//!      to its master, timed until `cat`'s echo is read back from it (2 PTY hops);
//!    - *attached*: `clippy-ctl spawn --name lat-attached -- sh -c …` (no terminal), and
//!      `clippy-ctl attach lat-attached` on a PTY of ours; one byte written to that master, timed
//!      until the echo is read back from it (attach client → `attach.sock` → wrapper → program →
//!      wrapper → `attach.sock` → client: the same 2 PTY hops, plus the socket both ways and the
//!      client process). Timing starts once the client drew the screen (`<ready>` seen).
//!
//!    [`SAMPLES`] keystrokes each after [`WARM_UP`] untimed ones, alternated in rounds of
//!    [`ROUND`] (direct first in even rounds, attached first in odd ones).
//! 2. **Burst**: `clippy-ctl spawn --name burst-… -- attach-burst …` (`src/bin/attach-burst.rs`):
//!    the program loads a file of exactly [`BURST_BYTES`] of numbered lines, says it is ready, waits
//!    for a byte on a FIFO, then writes the file to its terminal as fast as it can and waits. Three
//!    cases: no client; one `clippy-ctl attach` whose PTY master a thread of ours reads as fast as
//!    it can; one whose master we stop reading once the first screen is drawn (a stalled client).
//!    The clock starts when the bench writes the go byte and stops when the live spool
//!    (`$XDG_RUNTIME_DIR/clippy/sessions/<id>/output.spool`, polled every millisecond) holds all
//!    the bytes; the spool is then read back and compared with the file (size, FNV-1a, every byte:
//!    the bench fails if any run's spool is not whole). One untimed run with a reading client, then
//!    [`BURST_ROUNDS`] rounds of the three cases, their order rotated each round. Where the time
//!    went: how far the spool was behind when the program's last write returned, the CPU time of
//!    the program, the wrapper's loop, its other threads (the tap) and the client
//!    (`/proc/PID/task/*/schedstat`), and how busy the machine was (`/proc/stat`).
//!
//! It prints a markdown report and writes it to `target/attach-bench.md`; about one to two minutes
//! after the build. It ignores its arguments and asserts no timing (only that every spool is
//! whole). Every process it starts is stopped, by pid, on errors too.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_benches::broker::BrokerProcess;
use clippy_benches::wrapper::{
    ECHO_SCRIPT, EchoSession, Error, READ_CHUNK, TERMINAL_SIZE, median, percentile,
};
use clippy_benches::{Rng, Scratch, build_release, machine, monotonic_ns, write_report};
use clippy_pty::{Child, CommandSpec, PtyMaster, Signal};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::unistd::Pid;

/// Keystroke samples per subject, after [`WARM_UP`] untimed ones.
const SAMPLES: usize = 2000;
/// Untimed keystrokes per subject first.
const WARM_UP: usize = 200;
/// Keystrokes per subject per round.
const ROUND: usize = 50;
/// The burst: exactly this many bytes.
const BURST_BYTES: usize = 64 << 20;
/// Timed rounds of the three burst cases (after one untimed run).
const BURST_ROUNDS: usize = 5;
/// The longest line of the burst, `\n` included (the terminal is 120 columns wide: no line wraps).
const MAX_LINE: usize = 110;
/// How long anything may take before the bench gives up.
const STUCK: Duration = Duration::from_secs(120);
/// How long a new client's terminal must stay quiet before its first screen counts as drawn.
const SETTLE: Duration = Duration::from_millis(300);
/// How long a process may take to go once told to.
const GRACE: Duration = Duration::from_secs(5);

fn main() {
    if let Err(e) = run() {
        eprintln!("attach bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Error> {
    let started = Instant::now();
    let session = build_release("attach bench", "clippy-session")?;
    let ctl = build_release("attach bench", "clippy-ctl")?;
    let broker_bin = build_release("attach bench", "clippy-broker")?;
    // Dropped in reverse order: sessions first (inside the steps), then the broker, then the dir.
    let scratch = Scratch::create("clippy-attach-bench")?;
    let config = scratch.path().join("config");
    std::fs::create_dir(&config)?;
    let broker = BrokerProcess::start(&broker_bin, scratch.path(), &[])?;
    let env = Env {
        session,
        ctl,
        burst: PathBuf::from(env!("CARGO_BIN_EXE_attach-burst")),
        runtime: scratch.path().to_owned(),
        config,
    };
    let load_before = load();
    let latency = latency(&env)?;
    let bursts = bursts(&env)?;
    let load_after = load();
    let log = broker.log();
    broker.stop()?;
    drop(scratch);

    let report = report(
        &latency,
        &bursts,
        (&load_before, &load_after),
        &log,
        started.elapsed(),
    );
    write_report("attach bench", "attach-bench.md", &report)?;
    let broken: Vec<String> = bursts
        .runs
        .iter()
        .filter(|run| !run.spool.whole())
        .map(|run| format!("{} (round {}): {}", run.case.label(), run.round, run.spool))
        .collect();
    if broken.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "SPOOL NOT WHOLE after {} burst(s): {}",
            broken.len(),
            broken.join("; ")
        )
        .into())
    }
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

/// The binaries, the runtime directory and the empty configuration directory.
struct Env {
    session: PathBuf,
    ctl: PathBuf,
    burst: PathBuf,
    runtime: PathBuf,
    config: PathBuf,
}

impl Env {
    /// `program args…` for a PTY of ours, in the bench's environment (the scratch dir as the
    /// working directory: no `./clippy.toml` of the caller's is read).
    fn spec<S: AsRef<OsStr>>(&self, program: &Path, args: &[S]) -> CommandSpec {
        CommandSpec::new(program)
            .args(args.iter().map(AsRef::as_ref))
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("XDG_STATE_HOME", self.runtime.join("state"))
            .env("XDG_CONFIG_HOME", &self.config)
            .cwd(&self.runtime)
    }

    /// `clippy-ctl attach NAME` on a PTY of ours.
    fn attach_spec(&self, name: &str) -> CommandSpec {
        self.spec(&self.ctl, &["attach", name])
    }

    /// `clippy-ctl --json spawn --name NAME -- argv…`: the session, once the broker knows it.
    fn spawn<S: AsRef<OsStr>>(&self, name: &str, argv: &[S]) -> Result<Spawned, Error> {
        let out = Command::new(&self.ctl)
            .args(["--json", "spawn", "--name", name, "--"])
            .args(argv.iter().map(AsRef::as_ref))
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("XDG_STATE_HOME", self.runtime.join("state"))
            .env("XDG_CONFIG_HOME", &self.config)
            .current_dir(&self.runtime)
            .stdin(Stdio::null())
            .output()?;
        let said = || {
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        };
        if !out.status.success() {
            return Err(format!(
                "clippy-ctl spawn {name} failed ({}): {}",
                out.status,
                said()
            )
            .into());
        }
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("clippy-ctl --json spawn {name}: {e}: {}", said()))?;
        let status = &doc["session_status"];
        let (Some(id), Some(pid)) = (status["session"].as_str(), status["pid"].as_u64()) else {
            return Err(format!("clippy-ctl --json spawn {name} said {}", said()).into());
        };
        let pid = i32::try_from(pid)?;
        let dir = clippy_spool::session_dir(&self.runtime, id);
        let spool = status["spool"]
            .as_str()
            .map_or_else(|| dir.join(clippy_spool::SPOOL_FILE_NAME), PathBuf::from);
        Ok(Spawned {
            name: name.to_owned(),
            program: pid,
            wrapper: parent_of(pid),
            dir,
            spool,
            stopped: false,
        })
    }
}

/// A session started by `clippy-ctl spawn`: its program and its wrapper (the program's parent)
/// are stopped, by pid, when it is dropped.
struct Spawned {
    name: String,
    /// The program's pid (`status`'s `pid`).
    program: i32,
    /// The wrapper's pid, when it could be read.
    wrapper: Option<i32>,
    /// The session's folder, removed by the wrapper when it ends.
    dir: PathBuf,
    spool: PathBuf,
    stopped: bool,
}

impl Spawned {
    /// The program and its wrapper still run.
    fn alive(&self) -> bool {
        alive(self.program) && self.wrapper.is_none_or(alive)
    }

    /// SIGTERM to the program; its wrapper then ends the session. Whatever has not gone after
    /// [`GRACE`] is killed. Errs if the wrapper had to be killed.
    fn stop(&mut self) -> Result<(), Error> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        signal(self.program, Signal::SIGTERM);
        let deadline = Instant::now() + GRACE;
        let gone = |s: &Self| !alive(s.program) && s.wrapper.is_none_or(|w| !alive(w));
        while !gone(self) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if gone(self) {
            // The wrapper removes the session's folder on its way out.
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
            "session {} did not end within {GRACE:?} of its program's SIGTERM",
            self.name
        )
        .into())
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn signal(pid: i32, signal: Signal) {
    let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
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

/// Stops `child`: `signal` (unless `None`), then SIGKILL after [`GRACE`].
fn end_child(child: &mut Child, signal: Option<Signal>) {
    if let Some(signal) = signal {
        let _ = child.signal(signal);
    }
    let deadline = Instant::now() + GRACE;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Keystroke echo
// ---------------------------------------------------------------------------------------------

/// The sorted round trips: direct, attached.
struct Latency {
    direct: Vec<Duration>,
    attached: Vec<Duration>,
}

fn latency(env: &Env) -> Result<Latency, Error> {
    let script = ["sh", "-c", ECHO_SCRIPT];
    let mut spawned = env.spawn("lat-attached", &script)?;
    let mut direct = EchoSession::start(&env.spec(
        &env.session,
        &["--name", "lat-direct", "--", "sh", "-c", ECHO_SCRIPT],
    ))?;
    // Returns once the client drew `<ready>` (the program's first output, in the redraw or in an
    // output frame after it).
    let mut attached = EchoSession::start(&env.attach_spec("lat-attached"))?;
    for _ in 0..WARM_UP {
        direct.round_trip()?;
        attached.round_trip()?;
    }
    let mut out = Latency {
        direct: Vec::with_capacity(SAMPLES),
        attached: Vec::with_capacity(SAMPLES),
    };
    for round in 0..SAMPLES / ROUND {
        for which in [round % 2, 1 - round % 2] {
            let (session, samples) = if which == 0 {
                (&mut direct, &mut out.direct)
            } else {
                (&mut attached, &mut out.attached)
            };
            for _ in 0..ROUND {
                samples.push(session.round_trip()?);
            }
        }
    }
    eprintln!("attach bench: {SAMPLES} keystrokes each, direct and attached");
    // Hanging up the client's terminal ends `clippy-ctl attach` (the session runs on); hanging
    // up the direct wrapper's ends it and its program.
    attached.finish()?;
    direct.finish()?;
    spawned.stop()?;
    out.direct.sort_unstable();
    out.attached.sort_unstable();
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// 2. Burst
// ---------------------------------------------------------------------------------------------

/// Exactly `len` bytes of numbered lines (`00000042 ` then 10-100 letters, `\n`), each at most
/// [`MAX_LINE`] bytes; deterministic. Returns the bytes and the last line without its `\n`.
fn burst_content(len: usize) -> (Vec<u8>, Vec<u8>) {
    fn line(out: &mut Vec<u8>, n: usize, width: usize) {
        let start = out.len();
        let _ = write!(out, "{n:08} ");
        let mut i = 0;
        while out.len() - start < width - 1 {
            out.push(b'a' + ((n * 7 + i) % 26) as u8);
            i += 1;
        }
        out.push(b'\n');
    }
    let mut rng = Rng(0x6a09_e667_f3bc_c908);
    let mut out = Vec::with_capacity(len);
    let mut n = 0;
    while len - out.len() > 2 * MAX_LINE {
        n += 1;
        line(&mut out, n, 20 + rng.below(MAX_LINE - 19));
    }
    // The last two lines share what is left (each more than MAX_LINE / 2, at most MAX_LINE).
    let left = len - out.len();
    line(&mut out, n + 1, left / 2);
    let last = out.len();
    line(&mut out, n + 2, left - left / 2);
    assert_eq!(out.len(), len);
    let needle = out[last..len - 1].to_vec();
    (out, needle)
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Who is attached during a burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    NoClient,
    Reading,
    Stalled,
}

impl Case {
    const ALL: [Case; 3] = [Case::NoClient, Case::Reading, Case::Stalled];

    fn label(self) -> &'static str {
        match self {
            Case::NoClient => "no client",
            Case::Reading => "1 client, read as fast as it comes",
            Case::Stalled => "1 client, stalled (its terminal never read)",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Case::NoClient => "none",
            Case::Reading => "reading",
            Case::Stalled => "stalled",
        }
    }
}

/// What the spool held after a burst.
#[derive(Debug, Clone, Copy)]
struct SpoolCheck {
    len: u64,
    hash: u64,
    /// The first byte that differs from the file (the shorter length when one is a prefix).
    first_difference: Option<u64>,
}

impl SpoolCheck {
    fn whole(&self) -> bool {
        self.first_difference.is_none()
    }
}

impl std::fmt::Display for SpoolCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes, FNV-1a {:016x}", self.len, self.hash)?;
        if let Some(at) = self.first_difference {
            write!(f, ", differs from the file at byte {at}")?;
        }
        Ok(())
    }
}

/// One timed burst.
#[derive(Debug)]
struct Burst {
    case: Case,
    /// 0 for the untimed run.
    round: usize,
    /// The go byte written (`CLOCK_MONOTONIC` ns).
    go_ns: u64,
    /// The program's first and last write (before / after).
    wrote_ns: (u64, u64),
    /// The spool seen holding every byte.
    spool_ns: u64,
    /// The reading client's terminal showed the last line.
    client_ns: Option<u64>,
    /// Bytes the reading client's terminal got during the burst (after its first screen).
    client_bytes: Option<u64>,
    /// The spool's size when the bench first saw the program's timings (its last write had
    /// returned): how far the spool was behind the program.
    spool_at_end: u64,
    /// CPU time used from the go byte until the spool and the client were done.
    cpu: Cpu,
    spool: SpoolCheck,
    /// The program and its wrapper still ran after the burst.
    alive: bool,
}

impl Burst {
    fn seconds(&self) -> f64 {
        (self.spool_ns.saturating_sub(self.go_ns)) as f64 / 1e9
    }

    /// MiB/s from the go byte to the spool holding every byte.
    fn mib_per_s(&self) -> f64 {
        BURST_BYTES as f64 / f64::from(1 << 20) / self.seconds()
    }

    /// MiB/s of the program's own writes (first write to the return of the last).
    fn program_mib_per_s(&self) -> f64 {
        let ns = self.wrote_ns.1.saturating_sub(self.wrote_ns.0).max(1);
        BURST_BYTES as f64 / f64::from(1 << 20) / (ns as f64 / 1e9)
    }
}

/// Every burst run, and what the reading client should have got.
struct Bursts {
    runs: Vec<Burst>,
    /// FNV-1a of the file.
    hash: u64,
    /// Lines in the file (the raw stream holds one `\r` more per line).
    lines: u64,
}

fn bursts(env: &Env) -> Result<Bursts, Error> {
    let (content, needle) = burst_content(BURST_BYTES);
    let file = env.runtime.join("burst.txt");
    std::fs::write(&file, &content)?;
    let hash = fnv1a(&content);
    let lines = memchr::memchr_iter(b'\n', &content).count() as u64;
    let mut runs = Vec::new();
    let warm = burst(env, &file, &content, &needle, Case::Reading, 0)?;
    eprintln!(
        "attach bench: untimed burst, {}: {:.1} MiB/s, spool {}",
        warm.case.label(),
        warm.mib_per_s(),
        warm.spool
    );
    runs.push(warm);
    for round in 1..=BURST_ROUNDS {
        for i in 0..Case::ALL.len() {
            let case = Case::ALL[(i + round - 1) % Case::ALL.len()];
            let run = burst(env, &file, &content, &needle, case, round)?;
            eprintln!(
                "attach bench: burst {round}/{BURST_ROUNDS}, {}: {:.1} MiB/s (program's writes \
                 {:.1} MiB/s), spool {}",
                case.label(),
                run.mib_per_s(),
                run.program_mib_per_s(),
                run.spool,
            );
            runs.push(run);
        }
    }
    Ok(Bursts { runs, hash, lines })
}

fn burst(
    env: &Env,
    file: &Path,
    content: &[u8],
    needle: &[u8],
    case: Case,
    round: usize,
) -> Result<Burst, Error> {
    let name = format!("burst-{}-{round}", case.tag());
    let go = env.runtime.join(format!("{name}.go"));
    let ready = env.runtime.join(format!("{name}.ready"));
    let stats = env.runtime.join(format!("{name}.stats"));
    let status = Command::new("mkfifo")
        .arg("-m")
        .arg("600")
        .arg(&go)
        .status()?;
    if !status.success() {
        return Err(format!("mkfifo {} failed ({status})", go.display()).into());
    }
    let argv: [&OsStr; 5] = [
        env.burst.as_os_str(),
        file.as_os_str(),
        go.as_os_str(),
        ready.as_os_str(),
        stats.as_os_str(),
    ];
    let mut spawned = env.spawn(&name, &argv)?;
    let mut client = match case {
        Case::NoClient => None,
        Case::Reading | Case::Stalled => Some(AttachClient::start(env, &name, case, needle)?),
    };
    wait_for_file(&ready, "the burst program's ready file")?;
    // Read and write, so opening never blocks; the program has opened it for reading or is about
    // to, and reads the byte at once either way.
    let mut fifo = OpenOptions::new().read(true).write(true).open(&go)?;
    let client_pid = client.as_ref().map(|c| c.child.pid());
    let cpu_before = Cpu::of(&spawned, client_pid);
    let go_ns = monotonic_ns();
    fifo.write_all(b"g")?;
    let (spool_ns, spool_at_end) = wait_spool(&spawned.spool, BURST_BYTES as u64, &stats)?;
    wait_for_file(&stats, "the burst program's timings")?;
    drop(fifo);
    let wrote_ns = read_stats(&stats)?;
    let client_ns = match &client {
        Some(client) if case == Case::Reading => Some(client.wait_end()?),
        _ => None,
    };
    let cpu = Cpu::of(&spawned, client_pid).since(cpu_before);
    let spool = check_spool(&spawned.spool, content)?;
    let alive = spawned.alive();
    let client_bytes = client.take().and_then(AttachClient::finish);
    spawned.stop()?;
    for path in [&go, &ready, &stats] {
        let _ = std::fs::remove_file(path);
    }
    Ok(Burst {
        case,
        round,
        go_ns,
        wrote_ns,
        spool_ns,
        client_ns,
        client_bytes,
        spool_at_end: spool_at_end.unwrap_or(BURST_BYTES as u64),
        cpu,
        spool,
        alive,
    })
}

fn wait_for_file(path: &Path, what: &str) -> Result<(), Error> {
    let deadline = Instant::now() + STUCK;
    while !path.exists() {
        if Instant::now() >= deadline {
            return Err(format!("{what} ({}) did not appear", path.display()).into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Polls the spool's size every millisecond until it reaches `len`; returns when it was seen,
/// and its size when `stats` (the program's timings, written after its last write) was first
/// seen, if it was before then.
fn wait_spool(spool: &Path, len: u64, stats: &Path) -> Result<(u64, Option<u64>), Error> {
    let deadline = Instant::now() + STUCK;
    let mut last = 0;
    let mut at_end = None;
    loop {
        let program_done = at_end.is_none() && stats.exists();
        last = std::fs::metadata(spool).map_or(last, |m| m.len());
        if program_done {
            at_end = Some(last);
        }
        if last >= len {
            return Ok((monotonic_ns(), at_end));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the spool {} stopped at {last} of {len} bytes",
                spool.display()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn read_stats(path: &Path) -> Result<(u64, u64), Error> {
    let text = std::fs::read_to_string(path)?;
    let mut numbers = text.split_whitespace().map(str::parse::<u64>);
    match (numbers.next(), numbers.next()) {
        (Some(Ok(start)), Some(Ok(end))) => Ok((start, end)),
        _ => Err(format!("{}: {text:?}", path.display()).into()),
    }
}

fn check_spool(spool: &Path, content: &[u8]) -> Result<SpoolCheck, Error> {
    let bytes = std::fs::read(spool)?;
    let common = bytes.len().min(content.len());
    let first_difference = bytes[..common]
        .iter()
        .zip(&content[..common])
        .position(|(a, b)| a != b)
        .or((bytes.len() != content.len()).then_some(common))
        .map(|at| at as u64);
    Ok(SpoolCheck {
        len: bytes.len() as u64,
        hash: fnv1a(&bytes),
        first_difference,
    })
}

/// CPU time (ns) of the processes of a burst, from `/proc/PID/task/*/schedstat`.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    program: u64,
    /// The wrapper's main thread: the loop that moves bytes (PTY, attach socket).
    wrapper_loop: u64,
    /// Its other threads: the tap (spool, turn detection, the screen and its redraws) above all.
    wrapper_rest: u64,
    client: u64,
    /// The whole machine's time (`/proc/stat`, in clock ticks): busy (not idle or waiting for
    /// I/O), and all.
    machine_busy: u64,
    machine_all: u64,
}

impl Cpu {
    fn of(spawned: &Spawned, client: Option<u32>) -> Cpu {
        let (program, _) = threads_cpu(spawned.program);
        let (wrapper_loop, wrapper_rest) = spawned.wrapper.map_or((0, 0), threads_cpu);
        let client = client
            .and_then(|pid| i32::try_from(pid).ok())
            .map_or(0, |pid| {
                let (main, rest) = threads_cpu(pid);
                main + rest
            });
        let (machine_busy, machine_all) = machine_ticks();
        Cpu {
            program,
            wrapper_loop,
            wrapper_rest,
            client,
            machine_busy,
            machine_all,
        }
    }

    /// The share of the machine's CPUs that were busy, anyone's work included.
    fn machine_busy(&self) -> f64 {
        self.machine_busy as f64 / self.machine_all.max(1) as f64
    }

    fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            program: self.program.saturating_sub(earlier.program),
            wrapper_loop: self.wrapper_loop.saturating_sub(earlier.wrapper_loop),
            wrapper_rest: self.wrapper_rest.saturating_sub(earlier.wrapper_rest),
            client: self.client.saturating_sub(earlier.client),
            machine_busy: self.machine_busy.saturating_sub(earlier.machine_busy),
            machine_all: self.machine_all.saturating_sub(earlier.machine_all),
        }
    }
}

/// The machine's busy and total clock ticks so far, from the `cpu` line of `/proc/stat`.
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return (0, 0);
    };
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let all: u64 = ticks.iter().sum();
    // user nice system idle iowait irq softirq steal …
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    (all.saturating_sub(idle), all)
}

/// CPU time (ns) of `pid`'s main thread and of its other threads.
fn threads_cpu(pid: i32) -> (u64, u64) {
    let (mut main, mut rest) = (0, 0);
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    for task in tasks.flatten() {
        let tid = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<i32>().ok());
        let ns = std::fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        if tid == Some(pid) {
            main += ns;
        } else {
            rest += ns;
        }
    }
    (main, rest)
}

/// `clippy-ctl attach` on a PTY of ours, its first screen drawn; then either a thread reads the
/// master as fast as it can (watching for the burst's last line) or nobody reads it.
struct AttachClient {
    child: Child,
    /// Held, never read (a stalled client).
    master: Option<PtyMaster>,
    reader: Option<JoinHandle<u64>>,
    /// When the reader saw the last line.
    end: Option<Receiver<u64>>,
}

impl AttachClient {
    fn start(env: &Env, name: &str, case: Case, needle: &[u8]) -> Result<Self, Error> {
        let pair = clippy_pty::openpty(TERMINAL_SIZE)?;
        let child = pair.slave.spawn(&env.attach_spec(name))?;
        drop(pair.slave);
        let mut client = AttachClient {
            child,
            master: None,
            reader: None,
            end: None,
        };
        // The first screen: something, then quiet.
        let mut buf = vec![0u8; READ_CHUNK];
        let deadline = Instant::now() + STUCK;
        let mut drawn = 0;
        loop {
            let wait = if drawn == 0 {
                deadline.saturating_duration_since(Instant::now())
            } else {
                SETTLE
            };
            let mut fds = [PollFd::new(pair.master.as_fd(), PollFlags::POLLIN)];
            match poll(
                &mut fds,
                PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX),
            ) {
                Ok(0) if drawn > 0 => break,
                Ok(0) => return Err(format!("clippy-ctl attach {name} drew nothing").into()),
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            match (&pair.master).read(&mut buf) {
                Ok(0) => return Err(format!("clippy-ctl attach {name} ended").into()),
                Ok(n) => drawn += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // EIO: the client closed its terminal (it ended).
                Err(e) => {
                    end_child(&mut client.child, None);
                    return Err(format!("clippy-ctl attach {name} ended: {e}").into());
                }
            }
        }
        if case == Case::Stalled {
            client.master = Some(pair.master);
        } else {
            let (tx, rx) = channel();
            let needle = needle.to_vec();
            let master = pair.master;
            client.end = Some(rx);
            client.reader = Some(
                std::thread::Builder::new()
                    .name(format!("master-{name}"))
                    .spawn(move || read_master(&master, &needle, &tx))?,
            );
        }
        Ok(client)
    }

    /// When the reader saw the burst's last line.
    fn wait_end(&self) -> Result<u64, Error> {
        let Some(end) = &self.end else {
            return Err("this client is not read".into());
        };
        match end.recv_timeout(STUCK) {
            Ok(ns) => Ok(ns),
            Err(RecvTimeoutError::Timeout) => {
                Err(format!("the client did not show the last line within {STUCK:?}").into())
            }
            Err(RecvTimeoutError::Disconnected) => {
                Err("the client's terminal closed before the last line".into())
            }
        }
    }

    /// Ends the client (SIGTERM to a read one, which restores its terminal and goes; a hang-up
    /// for a stalled one, blocked writing to it); the bytes the reader got, for a read one.
    fn finish(mut self) -> Option<u64> {
        match self.master.take() {
            Some(master) => {
                drop(master);
                end_child(&mut self.child, None);
            }
            None => end_child(&mut self.child, Some(Signal::SIGTERM)),
        }
        let reader = self.reader.take()?;
        // The reader ends once nothing holds the slave any more; never wait for it for long.
        let deadline = Instant::now() + GRACE;
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if reader.is_finished() {
            reader.join().ok()
        } else {
            None
        }
    }
}

impl Drop for AttachClient {
    fn drop(&mut self) {
        drop(self.master.take());
        end_child(&mut self.child, Some(Signal::SIGTERM));
    }
}

/// Reads `master` until the client closes it; reports (once) when `needle` went by. Returns the
/// bytes read.
fn read_master(master: &PtyMaster, needle: &[u8], end: &Sender<u64>) -> u64 {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut tail: Vec<u8> = Vec::with_capacity(needle.len() + READ_CHUNK);
    let mut total = 0u64;
    let mut seen = false;
    loop {
        let n = match (&*master).read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return total,
        };
        total += n as u64;
        if seen {
            continue;
        }
        tail.extend_from_slice(&buf[..n]);
        if memchr::memmem::find(&tail, needle).is_some() {
            seen = true;
            let _ = end.send(monotonic_ns());
        } else {
            let keep = needle.len().min(tail.len());
            tail.drain(..tail.len() - keep);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn report(
    latency: &Latency,
    bursts: &Bursts,
    load: (&str, &str),
    broker_log: &str,
    took: Duration,
) -> String {
    let mut out = String::from("# Attach benchmark\n\n");
    let (cpus, kernel) = machine();
    let _ = writeln!(
        out,
        "One run of `cargo bench -p clippy-benches --bench attach` ({:.0} s; {cpus} CPUs, Linux \
         {kernel}; load average {} before, {} after). Release builds of `clippy-session`, \
         `clippy-ctl` and `clippy-broker`; a private `XDG_RUNTIME_DIR` on tmpfs with its own \
         broker (`clippy-broker --foreground`). Every terminal is a {TERMINAL_SIZE} PTY of the \
         bench's own.\n",
        took.as_secs_f64(),
        load.0,
        load.1,
    );

    let _ = writeln!(
        out,
        "## Keystroke echo\n\n`sh -c \"{ECHO_SCRIPT}\"` in a session, reached two ways: \
         **direct**, `clippy-session --name lat-direct -- sh -c …` on our PTY (a key goes our PTY \
         → wrapper → its PTY → `cat` and back); **attached**, a session started with \
         `clippy-ctl spawn` (no terminal) and `clippy-ctl attach` on our PTY (our PTY → client → \
         `attach.sock` → wrapper → its PTY → `cat` and back the same way). One byte written to \
         our master, timed until `cat`'s echo of it is read back from it; the client's first \
         screen is drawn before any timing. {SAMPLES} keystrokes each after {WARM_UP} untimed, \
         alternated in rounds of {ROUND} (which goes first alternates too).\n"
    );
    out.push_str("| subject | p50 µs | p90 µs | p99 µs | max µs |\n|---|---|---|---|---|\n");
    let row = |label: &str, samples: &[Duration]| {
        format!(
            "| {label} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            us(percentile(samples, 0.5)),
            us(percentile(samples, 0.9)),
            us(percentile(samples, 0.99)),
            us(percentile(samples, 1.0)),
        )
    };
    out.push_str(&row("direct: `clippy-session` on our PTY", &latency.direct));
    out.push_str(&row(
        "attached: `clippy-ctl attach` to a spawned session",
        &latency.attached,
    ));
    let at = |p: f64| {
        (
            us(percentile(&latency.attached, p)),
            us(percentile(&latency.direct, p)),
        )
    };
    out.push_str(
        "\n| attached vs direct | p50 | p90 | p99 | max | target |\n|---|---|---|---|---|---|\n",
    );
    let (a50, d50) = at(0.5);
    let (a90, d90) = at(0.9);
    let (a99, d99) = at(0.99);
    let (amax, dmax) = at(1.0);
    let _ = writeln!(
        out,
        "| added µs (difference of percentiles) | {:+.1} | {:+.1} | **{:+.1}** | {:+.1} | p99 ≤ +1000 ({}) |",
        a50 - d50,
        a90 - d90,
        a99 - d99,
        amax - dmax,
        if a99 - d99 <= 1000.0 {
            "met"
        } else {
            "**missed**"
        },
    );
    let _ = writeln!(
        out,
        "| ratio attached / direct | {:.2} | {:.2} | {:.2} | {:.2} | — |",
        a50 / d50,
        a90 / d90,
        a99 / d99,
        amax / dmax,
    );

    let timed: Vec<&Burst> = bursts.runs.iter().filter(|r| r.round > 0).collect();
    let raw = BURST_BYTES as u64 + bursts.lines;
    let _ = writeln!(
        out,
        "\n## {} MiB burst with an attached client\n\n`clippy-ctl spawn -- attach-burst …`: the \
         program loads a file of exactly {BURST_BYTES} bytes ({} numbered lines of 20-{MAX_LINE} \
         columns, plain ASCII, `\\n` line ends; FNV-1a {:016x}), waits for a go byte on a FIFO, \
         then writes it to its terminal in 64 KiB writes as fast as it can and waits. MiB/s = \
         {} MiB / time from the go byte to the live spool (`sessions/<id>/output.spool`, its size \
         polled every ms) holding every byte; \"program's writes\" = from its first write to the \
         return of its last. After each run the spool is read back and compared byte for byte \
         with the file. Cases: no client; one `clippy-ctl attach` on our PTY, its master read in \
         {} KiB reads by a thread of ours as fast as it comes; one whose master we stop reading \
         once its first screen is drawn (a stalled client: it blocks writing to its terminal, its \
         socket fills, the wrapper's 4 MiB queue for it overflows). One untimed run (reading \
         client), then {BURST_ROUNDS} rounds of the three, a new session each, the order rotated \
         each round.\n",
        BURST_BYTES >> 20,
        bursts.lines,
        bursts.hash,
        BURST_BYTES >> 20,
        READ_CHUNK / 1024,
    );
    out.push_str(
        "| case | median MiB/s | min | max | vs no client (median of per-round ratios) | \
         program's writes MiB/s (median) | spool whole | session alive after |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let of =
        |case: Case| -> Vec<&Burst> { timed.iter().copied().filter(|r| r.case == case).collect() };
    let rates = |runs: &[&Burst]| -> Vec<f64> { runs.iter().map(|r| r.mib_per_s()).collect() };
    let none = rates(&of(Case::NoClient));
    for case in Case::ALL {
        let runs = of(case);
        let r = rates(&runs);
        let min = r.iter().copied().fold(f64::INFINITY, f64::min);
        let max = r.iter().copied().fold(0.0, f64::max);
        let per_round: Vec<f64> = runs
            .iter()
            .map(|run| {
                let base = of(Case::NoClient)
                    .into_iter()
                    .find(|b| b.round == run.round)
                    .map_or(f64::NAN, Burst::mib_per_s);
                run.mib_per_s() / base
            })
            .collect();
        let program: Vec<f64> = runs.iter().map(|r| r.program_mib_per_s()).collect();
        let whole = runs.iter().filter(|r| r.spool.whole()).count();
        let alive = runs.iter().filter(|r| r.alive).count();
        let _ = writeln!(
            out,
            "| {} | {:.1} | {min:.1} | {max:.1} | {} | {:.1} | {whole}/{} | {alive}/{} |",
            case.label(),
            median(&r),
            if case == Case::NoClient {
                "1".to_owned()
            } else {
                format!(
                    "{:.3} (of medians {:.3})",
                    median(&per_round),
                    median(&r) / median(&none)
                )
            },
            median(&program),
            runs.len(),
            runs.len(),
        );
    }
    let _ = writeln!(
        out,
        "\nWhere the time went (medians over the runs): the spool's lag behind the program when \
         its last write returned, and the CPU time each process used from the go byte until the \
         spool (and the reading client) had everything, out of {cpus} CPUs (`/proc/PID/task/*/\
         schedstat`; the bench's own reading thread and the kernel's PTY work not counted), and \
         how busy the whole machine was meanwhile (`/proc/stat`, everyone's work included).\n"
    );
    out.push_str(
        "| case | wall ms | spool behind the program MiB | program CPU ms | wrapper loop CPU ms | \
         wrapper's other threads (tap: spool, detector, screen) CPU ms | client CPU ms | sum / wall | \
         machine busy |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for case in Case::ALL {
        let runs = of(case);
        let pick = |f: &dyn Fn(&Burst) -> f64| -> f64 {
            median(&runs.iter().map(|r| f(r)).collect::<Vec<_>>())
        };
        let ms = |ns: u64| ns as f64 / 1e6;
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0} | {} | {:.2} | {:.0}% |",
            case.label(),
            pick(&|r| r.seconds() * 1e3),
            pick(&|r| mib(BURST_BYTES as u64 - r.spool_at_end.min(BURST_BYTES as u64))),
            pick(&|r| ms(r.cpu.program)),
            pick(&|r| ms(r.cpu.wrapper_loop)),
            pick(&|r| ms(r.cpu.wrapper_rest)),
            if case == Case::NoClient {
                "—".to_owned()
            } else {
                format!("{:.0}", pick(&|r| ms(r.cpu.client)))
            },
            pick(&|r| {
                let c = r.cpu;
                ms(c.program + c.wrapper_loop + c.wrapper_rest + c.client) / (r.seconds() * 1e3)
            }),
            pick(&|r| r.cpu.machine_busy() * 100.0),
        );
    }
    let reading = of(Case::Reading);
    let client_ms: Vec<f64> = reading
        .iter()
        .filter_map(|r| {
            r.client_ns
                .map(|ns| ns.saturating_sub(r.go_ns) as f64 / 1e6)
        })
        .collect();
    let spool_ms: Vec<f64> = reading.iter().map(|r| r.seconds() * 1e3).collect();
    let got: Vec<String> = reading
        .iter()
        .map(|r| {
            r.client_bytes
                .map_or("?".to_owned(), |b| format!("{:.2}", mib(b)))
        })
        .collect();
    let _ = writeln!(
        out,
        "\nThe reading client: its terminal showed the last line {:.0} ms (median) after the go \
         byte, the spool held it all after {:.0} ms; its terminal got {} MiB in the runs (the \
         whole stream is {:.2} MiB with the PTY's `\\r\\n`; less means the wrapper skipped output \
         for it and sent a fresh screen instead).",
        median(&client_ms),
        median(&spool_ms),
        got.join(", "),
        mib(raw),
    );
    out.push_str("\nEvery run, MiB/s in order:");
    for case in Case::ALL {
        let list: Vec<String> = rates(&of(case)).iter().map(|r| format!("{r:.1}")).collect();
        let _ = write!(out, " {}: {};", case.tag(), list.join(", "));
    }
    out.pop();
    out.push_str(".\n");
    let broken: Vec<&Burst> = bursts.runs.iter().filter(|r| !r.spool.whole()).collect();
    if broken.is_empty() {
        let _ = writeln!(
            out,
            "\nEvery spool, the untimed run's included, was the file exactly: {BURST_BYTES} bytes, \
             FNV-1a {:016x}.",
            bursts.hash
        );
    } else {
        out.push_str("\n**SPOOL NOT WHOLE**:\n");
        for run in broken {
            let _ = writeln!(
                out,
                "- {} (round {}): {}",
                run.case.label(),
                run.round,
                run.spool
            );
        }
    }
    if bursts.runs.iter().any(|r| !r.alive) {
        out.push_str("\n**A session's program or wrapper had ended by the end of its burst.**\n");
    }
    let warnings: Vec<&str> = broker_log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(5)
        .collect();
    if !warnings.is_empty() {
        let _ = writeln!(out, "\nThe broker logged: `{}`", warnings.join("` / `"));
    }
    out
}
