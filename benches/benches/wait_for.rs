//! `wait_for` end to end: a real `clippy-broker` and real `clippy-session` wrappers on PTYs,
//! against baselines measured in the same run — the latency of a parked wait from the child's
//! write to the reply (target of issue #4: p99 under 5 ms), and the scanning speed of a wait over
//! a large spool (target: at least 0.5× `grep -b` on the same file).
//!
//! Set-up: `clippy-session` and `clippy-broker` built in release mode by the bench, the broker
//! (`--foreground`) in a private `XDG_RUNTIME_DIR` on tmpfs (mode 0700, like `/run/user/UID`),
//! and every wrapper started on the slave of a PTY the bench holds the master of, standing in for
//! the user's terminal; a thread per PTY reads its master all the time (as a terminal would). The
//! wrapped programs are `wait-for-child` (`src/bin/wait-for-child.rs`).
//!
//! 1. **Latency**: `clippy-session --name lat -- wait-for-child marks` (a prompt after every line,
//!    so every sample ends a turn, as with an agent or a shell) and `lat-np` (`marks --no-prompt`:
//!    no turn ever ends). Per sample: the spool's size from `session_status`; a `wait_for` of the
//!    literal `mark N t=` from that cursor sent on a `clippy_proto::Client` connection without
//!    waiting for the reply; `session_status` on a second connection until the wait is parked
//!    (`waiters` = 1); then `go N\r` written to the master. The child reads `CLOCK_MONOTONIC` just
//!    before its one `write` of `mark N t=NS` (and its prompt); the bench reads the same clock
//!    right after the `matched` reply has arrived. Latency = reply − child's write. In the same
//!    samples, when the master's thread read the line (child → wrapper → the user's terminal: 2 PTY
//!    hops). Baseline: the same child directly on a PTY of ours (1 hop, no wrapper), the time until
//!    the line is read from the master. [`SAMPLES`] samples per subject after [`WARM_UP`],
//!    interleaved in rounds of [`ROUND`]; the median of every round is reported too (drift over a
//!    session's life).
//! 2. **Scanning**: `clippy-session --name scan-ansi -- wait-for-child flood ansi` (64 MiB of
//!    lines, one word in eight in an SGR colour, then a unique coloured needle, 512 KiB more
//!    lines, a prompt) and the same with `plain` (no escapes). Once the spool is complete (its size
//!    stops growing and the final line is in), per subject: `wait_for` of the needle from cursor 0
//!    over the socket (literal, and the regex `needle-\d+-end`), `LC_ALL=C grep -b -F -m1 NEEDLE
//!    SPOOL` as a subprocess on the spool file (path from `session_status`), and
//!    `clippy_spool::Scanner` in this process over the same file (what the broker runs, without the
//!    broker). One untimed round, then [`SCAN_RUNS`] rounds, interleaved. MB/s = bytes up to the
//!    match's end (10^6 per MB) / best run.
//!
//! It prints a markdown report and writes it to `target/wait-for-bench.md`; about 20-40 s after
//! the build. It ignores its arguments and asserts no timing. Every process it starts is stopped
//! by a drop guard (by pid), on errors and panics too.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_benches::broker::BrokerProcess;
use clippy_benches::search::{
    NEEDLE, NEEDLE_REGEX, best, every_run, mb_per_s, ratio_to_grep, result_row, time_grep,
    time_scanner,
};
use clippy_benches::wrapper::{Error, READ_CHUNK, TERMINAL_SIZE, percentile};
use clippy_benches::{Scratch, build_release, machine, monotonic_ns, write_report};
use clippy_proto::{Client, Message, PatternKind, ProtoError, Role, SessionState};
use clippy_pty::{Child, CommandSpec, PtyMaster, Signal};
use clippy_spool::Pattern;

/// Latency samples per subject, after [`WARM_UP`] untimed ones.
const SAMPLES: usize = 2000;
/// Untimed samples per subject first.
const WARM_UP: usize = 200;
/// Samples per subject per round (subjects interleaved round by round).
const ROUND: usize = 50;
/// Timed scanning rounds (after one untimed).
const SCAN_RUNS: usize = 5;
/// How long anything may take before the bench gives up.
const STUCK: Duration = Duration::from_secs(20);
/// The wait's own timeout, sent with every `wait_for`.
const WAIT_TIMEOUT_MS: u64 = 20_000;
/// Bytes per read of the in-process scanner (the broker reads 1 MiB at a time too).
const SCAN_CHUNK: usize = 1 << 20;

fn main() {
    if let Err(e) = run() {
        eprintln!("wait-for bench: {e}");
        std::process::exit(1);
    }
}

/// The system's load averages, as `uptime` shows them.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn run() -> Result<(), Error> {
    let started = Instant::now();
    let wrapper = build_release("wait-for bench", "clippy-session")?;
    let broker_bin = build_release("wait-for bench", "clippy-broker")?;
    let child_bin = PathBuf::from(env!("CARGO_BIN_EXE_wait-for-child"));
    let load_before = load();
    // Dropped in reverse order: terminals (their processes) first, then the broker, then the dir.
    let scratch = Scratch::create("clippy-wait-for-bench")?;
    let broker = BrokerProcess::start(&broker_bin, scratch.path(), &[])?;
    let env = Env {
        wrapper,
        child: child_bin,
        runtime: scratch.path().to_owned(),
    };

    let latency = latency(&env, broker.socket())?;
    let scan = scan(&env, broker.socket())?;
    let load_after = load();

    let log = broker.log();
    broker.stop()?;
    drop(scratch);
    let report = report(
        &latency,
        &scan,
        (&load_before, &load_after),
        &log,
        started.elapsed(),
    );
    write_report("wait-for bench", "wait-for-bench.md", &report)
}

/// The binaries and the runtime directory.
struct Env {
    wrapper: PathBuf,
    child: PathBuf,
    runtime: PathBuf,
}

impl Env {
    /// `wait-for-child ARGS…`, wrapped in `clippy-session --name NAME` or not.
    fn spec(&self, name: Option<&str>, args: &[&str]) -> CommandSpec {
        let spec = match name {
            Some(name) => CommandSpec::new(&self.wrapper)
                .args(["--name", name, "--pattern", "(lat|flood)> ", "--"])
                .arg(&self.child),
            None => CommandSpec::new(&self.child),
        };
        // The scratch dir as the working directory: no `./clippy.toml` of the caller is read.
        spec.args(args)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("XDG_STATE_HOME", self.runtime.join("state"))
            .cwd(&self.runtime)
    }
}

// ---------------------------------------------------------------------------------------------
// Terminals
// ---------------------------------------------------------------------------------------------

/// A `mark N t=NS` line as the master's reader saw it.
#[derive(Debug, Clone, Copy)]
struct Mark {
    n: u64,
    /// When the child wrote it (`CLOCK_MONOTONIC` ns).
    child_ns: u64,
    /// When the read of the master that completed it returned.
    master_ns: u64,
}

/// A program on the slave of a PTY of ours; a thread reads the master all the time and reports
/// the `mark` lines it sees. Dropping it stops the program (SIGTERM, SIGKILL after 3 s).
struct Terminal {
    label: &'static str,
    child: Child,
    writer: File,
    marks: Receiver<Mark>,
    reader: Option<JoinHandle<u64>>,
}

impl Terminal {
    fn start(label: &'static str, spec: &CommandSpec, parse_marks: bool) -> Result<Self, Error> {
        let pair = clippy_pty::openpty(TERMINAL_SIZE)?;
        let child = pair.slave.spawn(spec)?;
        drop(pair.slave);
        let writer = File::from(pair.master.as_fd().try_clone_to_owned()?);
        let (tx, marks) = channel();
        let master = pair.master;
        let mut terminal = Terminal {
            label,
            child,
            writer,
            marks,
            reader: None,
        };
        terminal.reader = Some(
            std::thread::Builder::new()
                .name(format!("master-{label}"))
                .spawn(move || read_master(&master, &tx, parse_marks))?,
        );
        Ok(terminal)
    }

    fn type_text(&mut self, text: &str) -> Result<(), Error> {
        self.writer.write_all(text.as_bytes())?;
        Ok(())
    }

    /// The mark `n`, skipping older ones.
    fn mark(&self, n: u64) -> Result<Mark, Error> {
        let deadline = Instant::now() + STUCK;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.marks.recv_timeout(left) {
                Ok(mark) if mark.n == n => return Ok(mark),
                Ok(mark) if mark.n > n => {
                    return Err(
                        format!("{}: mark {} came before mark {n}", self.label, mark.n).into(),
                    );
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("{}: no mark {n} within {STUCK:?}", self.label).into());
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(
                        format!("{}: the terminal closed before mark {n}", self.label).into(),
                    );
                }
            }
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.signal(Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
            }
        }
        // The reader ends once nothing holds the slave any more; never wait for it for long.
        if let Some(reader) = self.reader.take() {
            let deadline = Instant::now() + Duration::from_secs(1);
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
    }
}

/// Reads `master` until end of output; with `parse_marks`, reports every complete line holding
/// `mark N t=NS` with the time the read that completed it returned. Returns the bytes read.
fn read_master(master: &PtyMaster, marks: &Sender<Mark>, parse_marks: bool) -> u64 {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut line = Vec::new();
    let mut total = 0u64;
    loop {
        let n = match (&*master).read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return total,
        };
        let now = monotonic_ns();
        total += n as u64;
        if !parse_marks {
            continue;
        }
        let mut rest = &buf[..n];
        while let Some(end) = memchr::memchr(b'\n', rest) {
            line.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            if let Some((n, child_ns)) = parse_mark(&line) {
                let _ = marks.send(Mark {
                    n,
                    child_ns,
                    master_ns: now,
                });
            }
            line.clear();
        }
        line.extend_from_slice(rest);
    }
}

/// `(N, NS)` of a line holding `mark N t=NS`.
fn parse_mark(line: &[u8]) -> Option<(u64, u64)> {
    let at = memchr::memmem::find(line, b"mark ")?;
    let number = |text: &[u8]| -> Option<(u64, usize)> {
        let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
        let value = std::str::from_utf8(&text[..digits]).ok()?.parse().ok()?;
        Some((value, digits))
    };
    let rest = &line[at + 5..];
    let (n, len) = number(rest)?;
    let rest = rest[len..].strip_prefix(b" t=")?;
    let (t, _) = number(rest)?;
    Some((n, t))
}

// ---------------------------------------------------------------------------------------------
// Broker requests
// ---------------------------------------------------------------------------------------------

fn connect(socket: &Path) -> Result<Client, Error> {
    let client = Client::connect(socket, Role::Client)?;
    client.set_read_timeout(Some(STUCK))?;
    Ok(client)
}

fn status(client: &mut Client, session: &str) -> Result<SessionState, Error> {
    match client.request(|id| Message::SessionStatus {
        id,
        session: session.to_owned(),
    })? {
        Message::Status { status, .. } => Ok(status),
        other => Err(format!("unexpected reply to session_status: {other:?}").into()),
    }
}

/// Polls `session_status` until the session is there (its wrapper registered).
fn wait_registered(client: &mut Client, session: &str) -> Result<SessionState, Error> {
    let deadline = Instant::now() + STUCK;
    loop {
        match status(client, session) {
            Ok(state) if state.spool.is_some() => return Ok(state),
            Ok(_) => {}
            Err(e) => {
                let missing = e
                    .downcast_ref::<ProtoError>()
                    .is_some_and(|e| matches!(e, ProtoError::Broker { .. }));
                if !missing {
                    return Err(e);
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(format!("session {session} did not register").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `(match_span, match_text)` of a `matched` reply, checked against `id`.
fn matched(reply: Message, id: u32) -> Result<((u64, u64), String), Error> {
    match reply {
        Message::Matched {
            id: got,
            match_span,
            match_text,
            ..
        } if got == id => Ok((match_span, match_text)),
        other => Err(format!("unexpected reply to wait_for {id}: {other:?}").into()),
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Latency
// ---------------------------------------------------------------------------------------------

/// One wrapped session of the latency part and what its samples measured (ns).
struct Wrapped {
    /// The session's name (`--name`).
    name: &'static str,
    label: &'static str,
    terminal: Terminal,
    /// Child's write → `matched` reply read by the bench, in the order taken.
    wait_for: Vec<u64>,
    /// Child's write → line read from the wrapper's terminal (2 PTY hops), same samples.
    on_terminal: Vec<u64>,
    /// `matched` reply − line on the wrapper's terminal (can be negative), same samples.
    after_terminal: Vec<i64>,
    /// Status polls beyond the first before the wait showed as parked.
    extra_polls: usize,
    next: u64,
    /// The session's state after the samples (mode, latest turn).
    end_state: Option<SessionState>,
}

/// What the latency part measured.
struct Latency {
    wrapped: Vec<Wrapped>,
    /// Child's write → line read from our PTY, no wrapper (1 hop), in the order taken.
    direct: Vec<u64>,
}

fn sorted<T: Ord + Copy>(values: &[T]) -> Vec<T> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted
}

fn latency(env: &Env, socket: &Path) -> Result<Latency, Error> {
    let mut direct = Terminal::start("direct", &env.spec(None, &["marks"]), true)?;
    let mut wrapped = Vec::new();
    for (name, label, args) in [
        (
            "lat",
            "prompt after each line (a turn completes per sample)",
            &["marks"][..],
        ),
        (
            "lat-np",
            "no prompt (no turn ever completes)",
            &["marks", "--no-prompt"][..],
        ),
    ] {
        wrapped.push(Wrapped {
            name,
            label,
            terminal: Terminal::start(name, &env.spec(Some(name), args), true)?,
            wait_for: Vec::with_capacity(SAMPLES),
            on_terminal: Vec::with_capacity(SAMPLES),
            after_terminal: Vec::with_capacity(SAMPLES),
            extra_polls: 0,
            next: 0,
            end_state: None,
        });
    }
    let mut control = connect(socket)?;
    let mut waiter = connect(socket)?;
    for w in &wrapped {
        wait_registered(&mut control, w.name)?;
    }

    let mut out_direct = Vec::with_capacity(SAMPLES);
    let mut n_direct = 0u64;
    let total_rounds = (WARM_UP + SAMPLES) / ROUND;
    for round in 0..total_rounds {
        let timed = round * ROUND >= WARM_UP;
        for _ in 0..ROUND {
            n_direct += 1;
            direct.type_text(&format!("go {n_direct}\r"))?;
            let mark = direct.mark(n_direct)?;
            if timed {
                out_direct.push(mark.master_ns.saturating_sub(mark.child_ns));
            }
        }
        for w in &mut wrapped {
            for _ in 0..ROUND {
                sample(w, &mut control, &mut waiter, timed)?;
            }
        }
        eprintln!("wait-for bench: latency round {}/{total_rounds}", round + 1);
    }
    for w in &mut wrapped {
        w.end_state = Some(status(&mut control, w.name)?);
    }
    Ok(Latency {
        wrapped,
        direct: out_direct,
    })
}

/// One sample of a wrapped session: park a `wait_for` of the next mark from the spool's size,
/// trigger it, time the reply against the child's stamp.
fn sample(
    w: &mut Wrapped,
    control: &mut Client,
    waiter: &mut Client,
    timed: bool,
) -> Result<(), Error> {
    w.next += 1;
    let n = w.next;
    let cursor = status(control, w.name)?.resume_cursor;
    let id = u32::try_from(n).unwrap_or(u32::MAX);
    waiter.send(&Message::WaitFor {
        id,
        session: w.name.into(),
        pattern: format!("mark {n} t="),
        kind: PatternKind::Literal,
        from_cursor: cursor,
        timeout_ms: Some(WAIT_TIMEOUT_MS),
    })?;
    let mut polls = 0;
    loop {
        polls += 1;
        if status(control, w.name)?.waiters >= 1 {
            break;
        }
        if polls > 10_000 {
            return Err(format!("{}: the wait never showed as parked", w.name).into());
        }
    }
    w.terminal.type_text(&format!("go {n}\r"))?;
    let reply = waiter.recv()?;
    let reply_ns = monotonic_ns();
    let (span, text) = matched(reply, id)?;
    if span.0 < cursor || text != format!("mark {n} t=") {
        return Err(format!(
            "{}: wait {n} matched {text:?} at {span:?} (from {cursor})",
            w.name
        )
        .into());
    }
    let mark = w.terminal.mark(n)?;
    if timed {
        w.wait_for.push(reply_ns.saturating_sub(mark.child_ns));
        w.on_terminal
            .push(mark.master_ns.saturating_sub(mark.child_ns));
        w.after_terminal.push(
            i64::try_from(reply_ns).unwrap_or(i64::MAX)
                - i64::try_from(mark.master_ns).unwrap_or(i64::MAX),
        );
        w.extra_polls += polls - 1;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// 2. Scanning
// ---------------------------------------------------------------------------------------------

/// A flooded session: its spool, where the needle is, and the runs of each subject.
struct Flooded {
    name: &'static str,
    spool: PathBuf,
    spool_bytes: u64,
    /// The needle's span in the spool.
    needle: (u64, u64),
    /// From the start of the flood to the spool being complete.
    fill: Duration,
    subjects: Vec<ScanSubject>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Searcher {
    WaitForLiteral,
    WaitForRegex,
    Grep,
    ScannerLiteral,
}

impl Searcher {
    fn label(self) -> &'static str {
        match self {
            Searcher::WaitForLiteral => "wait_for literal (socket)",
            Searcher::WaitForRegex => "wait_for regex (socket)",
            Searcher::Grep => "grep -b -F -m1",
            Searcher::ScannerLiteral => "Scanner literal (in-process)",
        }
    }
}

struct ScanSubject {
    searcher: Searcher,
    runs: Vec<Duration>,
}

impl ScanSubject {
    fn best(&self) -> Duration {
        best(&self.runs)
    }
}

impl Flooded {
    fn mb_per_s(&self, subject: &ScanSubject) -> f64 {
        mb_per_s(self.needle.1, subject.best())
    }

    fn of(&self, searcher: Searcher) -> Option<&ScanSubject> {
        self.subjects.iter().find(|s| s.searcher == searcher)
    }
}

fn scan(env: &Env, socket: &Path) -> Result<Vec<Flooded>, Error> {
    let mut control = connect(socket)?;
    // Both sessions stay up (their spools with them) until the end of the scanning.
    let mut terminals = Vec::new();
    let mut flooded = Vec::new();
    for (name, kind) in [("scan-ansi", "ansi"), ("scan-plain", "plain")] {
        let start = Instant::now();
        terminals.push(Terminal::start(
            name,
            &env.spec(Some(name), &["flood", kind]),
            false,
        )?);
        flooded.push(fill(&mut control, name, start)?);
        eprintln!("wait-for bench: {name}: spool complete");
    }
    let grep = run_grep(&flooded[0]);
    let searchers: &[Searcher] = if grep.is_ok() {
        &[
            Searcher::WaitForLiteral,
            Searcher::Grep,
            Searcher::WaitForRegex,
            Searcher::ScannerLiteral,
        ]
    } else {
        eprintln!(
            "wait-for bench: no grep: {}",
            grep.err().map(|e| e.to_string()).unwrap_or_default()
        );
        &[
            Searcher::WaitForLiteral,
            Searcher::WaitForRegex,
            Searcher::ScannerLiteral,
        ]
    };
    for f in &mut flooded {
        f.subjects = searchers
            .iter()
            .map(|&searcher| ScanSubject {
                searcher,
                runs: Vec::new(),
            })
            .collect();
    }
    let mut client = connect(socket)?;
    let literal = Pattern::literal(NEEDLE)?;
    let mut buffer = vec![0; SCAN_CHUNK];
    for round in 0..=SCAN_RUNS {
        for f in &mut flooded {
            for i in 0..f.subjects.len() {
                let took = match f.subjects[i].searcher {
                    Searcher::WaitForLiteral => {
                        run_wait_for(&mut client, f, NEEDLE, PatternKind::Literal)?
                    }
                    Searcher::WaitForRegex => {
                        run_wait_for(&mut client, f, NEEDLE_REGEX, PatternKind::Regex)?
                    }
                    Searcher::Grep => run_grep(f)?,
                    Searcher::ScannerLiteral => run_scanner(f, &literal, &mut buffer)?,
                };
                if round > 0 {
                    f.subjects[i].runs.push(took);
                }
            }
        }
        eprintln!("wait-for bench: scan round {round}/{SCAN_RUNS} done");
    }
    drop(terminals);
    Ok(flooded)
}

/// Waits until the session `name`'s spool holds the whole flood: its size has stopped growing
/// and its last bytes are the final line; finds the needle from it.
fn fill(control: &mut Client, name: &'static str, start: Instant) -> Result<Flooded, Error> {
    let state = wait_registered(control, name)?;
    let spool = PathBuf::from(state.spool.ok_or("no spool")?);
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut last, mut steady) = (0, 0);
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let size = status(control, name)?.resume_cursor;
        if size == last && size > 0 {
            steady += 1;
        } else {
            (last, steady) = (size, 0);
        }
        if steady >= 5 {
            let tail = read_tail(control, name, size)?;
            if let Some(at) = memchr::memmem::find(&tail, b"flood complete needle_at=") {
                let digits: String = tail[at + 25..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .map(|&b| char::from(b))
                    .collect();
                let needle_at: u64 = digits.parse()?;
                let fill = start.elapsed();
                return Ok(Flooded {
                    name,
                    spool,
                    spool_bytes: size,
                    needle: (needle_at, needle_at + NEEDLE.len() as u64),
                    fill,
                    subjects: Vec::new(),
                });
            }
        }
        if Instant::now() >= deadline {
            return Err(format!("{name}: the spool stopped at {last} bytes").into());
        }
    }
}

/// The last (up to) 4 KiB of the spool, through the broker's `read`.
fn read_tail(control: &mut Client, name: &str, size: u64) -> Result<Vec<u8>, Error> {
    match control.request(|id| Message::Read {
        id,
        session: name.to_owned(),
        from_cursor: size.saturating_sub(4096),
        max_bytes: Some(4096),
    })? {
        Message::SpoolData { data, .. } => Ok(data),
        other => Err(format!("unexpected reply to read: {other:?}").into()),
    }
}

fn run_wait_for(
    client: &mut Client,
    f: &Flooded,
    pattern: &str,
    kind: PatternKind,
) -> Result<Duration, Error> {
    let start = Instant::now();
    let reply = client.request(|id| Message::WaitFor {
        id,
        session: f.name.to_owned(),
        pattern: pattern.to_owned(),
        kind,
        from_cursor: 0,
        timeout_ms: Some(WAIT_TIMEOUT_MS),
    })?;
    let took = start.elapsed();
    let id = reply.id();
    let (span, text) = matched(reply, id)?;
    if span != f.needle || text != NEEDLE {
        return Err(format!(
            "{}: wait_for found {text:?} at {span:?}, the needle is at {:?}",
            f.name, f.needle
        )
        .into());
    }
    Ok(took)
}

/// `LC_ALL=C grep -b -F -m1 NEEDLE SPOOL`, timed; checks that grep's line holds the needle.
fn run_grep(f: &Flooded) -> Result<Duration, Error> {
    time_grep(&f.spool, NEEDLE, f.needle.0).map_err(|e| format!("{}: {e}", f.name).into())
}

/// `clippy_spool::Scanner` over the spool file in this process, as `spool_scan` runs it.
fn run_scanner(f: &Flooded, pattern: &Pattern, buffer: &mut [u8]) -> Result<Duration, Error> {
    match time_scanner(&f.spool, pattern, buffer)? {
        (took, Some(found)) if found.span == f.needle => Ok(took),
        (_, other) => Err(format!("{}: the scanner found {other:?}", f.name).into()),
    }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    let as_durations: Vec<Duration> = sorted.iter().map(|&ns| Duration::from_nanos(ns)).collect();
    u64::try_from(percentile(&as_durations, p).as_nanos()).unwrap_or(u64::MAX)
}

fn pct_signed(sorted: &[i64], p: f64) -> i64 {
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn report(
    latency: &Latency,
    scan: &[Flooded],
    load: (&str, &str),
    broker_log: &str,
    took: Duration,
) -> String {
    let mut out = String::from("# wait-for benchmark\n\n");
    let (cpus, kernel) = machine();
    let _ = writeln!(
        out,
        "One run of `cargo bench -p clippy-benches --bench wait_for` ({:.0} s; {cpus} CPUs, Linux \
         {}; load average {} at the start, {} at the end). Real `clippy-broker` and \
         `clippy-session` (release), on PTYs of the bench whose masters a thread reads \
         continuously; spools on tmpfs.\n",
        took.as_secs_f64(),
        kernel,
        load.0,
        load.1,
    );

    let _ = writeln!(
        out,
        "## Latency: child writes a line → `wait_for` returns\n\n\
         `wait-for-child marks` under `clippy-session`: per sample a `wait_for` literal `mark N t=` \
         is parked from the spool's size (checked with `session_status`: `waiters` = 1), then \
         `go N\\r` is typed; the child reads `CLOCK_MONOTONIC` just before its one `write` of the \
         line, the bench right after the `matched` reply is read. Two wrapped sessions: the child \
         printing its prompt after each line (so each sample ends a turn, as an agent or a shell \
         does), and the same child printing no prompt (no turn ever ends). Baseline: the same \
         child directly on a PTY of ours, the line read from the master. {SAMPLES} samples per \
         subject after {WARM_UP} warm-up, interleaved in rounds of {ROUND}.\n"
    );
    out.push_str(
        "| session | path | p50 ms | p90 ms | p99 ms | max ms | ≥ 5 ms | target |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let row = |out: &mut String, session: &str, label: &str, in_order: &[u64], target: &str| {
        let sorted = sorted(in_order);
        let _ = writeln!(
            out,
            "| {session} | {label} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {target} |",
            ms(pct(&sorted, 0.5)),
            ms(pct(&sorted, 0.9)),
            ms(pct(&sorted, 0.99)),
            ms(pct(&sorted, 1.0)),
            in_order.iter().filter(|&&ns| ns >= 5_000_000).count(),
        );
    };
    for w in &latency.wrapped {
        let session = format!("`{}`: {}", w.name, w.label);
        row(
            &mut out,
            &session,
            "**child write → `wait_for` reply**",
            &w.wait_for,
            "p99 < 5",
        );
        row(
            &mut out,
            &session,
            "child write → line on the wrapper's terminal (2 PTY hops)",
            &w.on_terminal,
            "—",
        );
        let signed = sorted(&w.after_terminal);
        let _ = writeln!(
            out,
            "| {session} | reply − line on the terminal (signed) | {:.3} | {:.3} | {:.3} | {:.3} | — | — |",
            pct_signed(&signed, 0.5) as f64 / 1e6,
            pct_signed(&signed, 0.9) as f64 / 1e6,
            pct_signed(&signed, 0.99) as f64 / 1e6,
            pct_signed(&signed, 1.0) as f64 / 1e6,
        );
    }
    row(
        &mut out,
        "baseline, no wrapper",
        "child write → line on our PTY (1 hop)",
        &latency.direct,
        "—",
    );
    let direct = sorted(&latency.direct);
    out.push('\n');
    for w in &latency.wrapped {
        let s = sorted(&w.wait_for);
        let p99 = pct(&s, 0.99);
        let state = w.end_state.as_ref().map_or_else(String::new, |st| {
            format!(
                " At the end: mode {:?}, latest turn {}.",
                st.mode,
                st.last_turn_id.as_deref().unwrap_or("none")
            )
        });
        let _ = writeln!(
            out,
            "- `{}`: p99 {:.3} ms, target p99 < 5 ms **{}**; ratio to the 1-hop baseline: p50 ×{:.0}, \
             p99 ×{:.0}. Status polls beyond the first before the wait showed as parked: {}.{state}",
            w.name,
            ms(p99),
            if p99 < 5_000_000 { "met" } else { "missed" },
            pct(&s, 0.5) as f64 / pct(&direct, 0.5).max(1) as f64,
            p99 as f64 / pct(&direct, 0.99).max(1) as f64,
            w.extra_polls,
        );
    }
    out.push_str(
        "\nMedian `wait_for` latency (ms) of each round of samples, in order (drift over the \
         session's life shows here):\n\n",
    );
    for w in &latency.wrapped {
        let rounds: Vec<String> = w
            .wait_for
            .chunks(ROUND)
            .map(|chunk| {
                let s = sorted(chunk);
                format!("{:.2}", ms(pct(&s, 0.5)))
            })
            .collect();
        let _ = writeln!(out, "- `{}`: {}", w.name, rounds.join(", "));
    }

    let _ = writeln!(
        out,
        "\n## Scanning: `wait_for` from cursor 0 over a large spool\n\n\
         `wait-for-child flood` under `clippy-session`: 64 MiB of lines, then the needle \
         `{NEEDLE}`, 512 KiB more lines and a prompt; timed once the spool is complete. \
         `wait_for` (literal `{NEEDLE}`, regex `{NEEDLE_REGEX}`) from cursor 0 through \
         `clippy_proto::Client`, request to reply; `LC_ALL=C grep -b -F -m1 {NEEDLE} SPOOL` as a \
         subprocess on the spool file (wall time, spawn included); `Scanner` in this process over \
         the same file in {} MiB reads. One untimed round, then {SCAN_RUNS}, interleaved. MB/s = \
         bytes up to the match's end (10^6 per MB) / best run.\n",
        SCAN_CHUNK >> 20
    );
    out.push_str("| spool | bytes | needle at | filled in (s) |\n|---|---|---|---|\n");
    for f in scan {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.2} |",
            f.name,
            f.spool_bytes,
            f.needle.0,
            f.fill.as_secs_f64()
        );
    }
    out.push_str(
        "\n| spool | subject | best ms | median ms | MB/s (best) | ratio to grep | target |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for f in scan {
        let grep = f.of(Searcher::Grep);
        for s in &f.subjects {
            let ratio = ratio_to_grep(
                s.searcher == Searcher::Grep,
                f.mb_per_s(s),
                grep.map(|g| f.mb_per_s(g)),
            );
            let target = if s.searcher == Searcher::WaitForLiteral {
                "≥ 0.5"
            } else {
                "—"
            };
            let label = s.searcher.label();
            result_row(&mut out, f.name, label, f.needle.1, &s.runs, &ratio, target);
        }
    }
    out.push_str("\nEvery run, ms in order:");
    for f in scan {
        for s in &f.subjects {
            every_run(&mut out, f.name, s.searcher.label(), &s.runs);
        }
    }
    out.pop();
    out.push_str(".\n");
    let warnings: Vec<&str> = broker_log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    if !warnings.is_empty() {
        let _ = writeln!(
            out,
            "\nThe broker logged {} warnings/errors; the first: `{}`",
            warnings.len(),
            warnings[0]
        );
    }
    out
}
