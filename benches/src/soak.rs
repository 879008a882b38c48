//! The soak test (issue 7): many wrapped sessions driven through turns while clients hammer the
//! broker, for a fixed time; then every turn is accounted for.
//!
//! - **Sessions.** `sessions` × `clippy-session --name soak-NN --pattern '^burst> $' -- python3
//!   burst.py soak-NN` (`bins/clippy-session/tests/programs/burst.py`), each on a PTY of ours that
//!   plays the user's terminal. A *driver* thread per session types `N` at each `burst> ` prompt;
//!   the program answers with a burst of ANSI-heavy output (SGR colours, cursor moves, an OSC
//!   title, UTF-8, now and then a long line, the marker `MARK-N.` with an escape inside it) and
//!   its prompt. The driver keeps a ledger of every turn it completed: its number and the exact
//!   bytes it saw between the echo of its input and the prompt (the turn's content, as the
//!   detector defines it), as length + FNV-1a hash.
//! - **A sink session** (`burst.py --sink`, raw mode, reads and discards) takes the pastes. When
//!   it falls behind, pastes are refused `busy` (flow control, counted but not a failure).
//! - **Failures.** A turn lost or corrupt, a marker skipped, a request failing on the wire or
//!   refused for another reason than `no_turn`, an empty relay buffer, a timed-out wait or a
//!   busy sink; a wrapper connection the broker lost (its log says the session went); memory
//!   over its bound; with the history store on, a completed turn not in the store once it has
//!   caught up (up to 60 s after the load), or records `history_status` says were not stored.
//! - **Clients.** `clients` threads, one broker connection each, issue `list_sessions`,
//!   `get_turn`, `capture`, `paste` (into the sink), `wait_for` and `read` in turn, as fast as
//!   they can. Client `c` waits with the regex `MARK-\d+\.` on session `c mod sessions`, always
//!   from the last `resume_cursor`, and checks each match is the previous number plus one (a
//!   skipped or repeated marker is counted). Every `get_turn` checks the content is the burst of
//!   the turn its id names (`BEGIN N of NAME` … `END N of NAME`).
//! - **Afterwards.** Every session's last completed turn must reach the broker; the newest
//!   `min(ring_depth, completed)` turns of each session are listed and fetched and compared with
//!   the ledger (`turns_lost` counts the missing or different ones). RSS (`VmRSS`, `VmHWM`) of
//!   the broker and the wrappers is read at the start (all sessions up, before the load) and at
//!   the end; the broker's end RSS is checked against its start plus its ring ceiling
//!   (`sessions × ring_depth × largest turn × 2`, raw content and text view) plus 64 MiB.
//! - **Where the time went.** How long the broker's event loop, the clients and the drivers ran
//!   and how long they were ready but waited for a CPU during the load ([`CpuTime`], from
//!   `schedstat`): on a saturated machine that wait, not the broker's work, is most of a
//!   request's latency. A client's wait includes the moments it polls for a reply.
//!
//! [`run`] does all of it and returns a [`Report`] (`to_json`, `table`, `failures`); the `soak`
//! binary (`cargo xtask soak`) and the short test (`tests/soak_short.rs`) call it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child as StdChild, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_proto::{
    Client, ErrorReason, Format, Message, PatternKind, ProtoError, Role, SessionSummary,
};
use clippy_pty::{Child, CommandSpec, PtyMaster, Signal, WinSize};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::unistd::Pid;
use serde_json::{Value, json};

pub use crate::wrapper::Error;

/// How long one turn, the start of a session or the final accounting may take.
const TURN_DEADLINE: Duration = Duration::from_secs(30);
/// The prompt of `burst.py`.
const PROMPT: &[u8] = b"burst> ";
/// The name of the paste target.
const SINK: &str = "soak-sink";
/// Bytes per `read` request.
const READ_BYTES: u32 = 64 * 1024;
/// A `wait_for`'s deadline.
const WAIT_MS: u64 = 2000;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long the load runs.
    pub duration: Duration,
    /// Wrapped sessions driven through turns.
    pub sessions: usize,
    /// Client connections issuing requests.
    pub clients: usize,
    /// The broker's `--ring-depth`.
    pub ring_depth: usize,
    /// A pause of the driver between a prompt and its next input.
    pub think: Duration,
    /// Where `clippy-session` and `clippy-broker` are.
    pub bin_dir: PathBuf,
    /// `burst.py`.
    pub program: PathBuf,
    /// The Python interpreter.
    pub python: PathBuf,
    /// Whether the broker keeps its history store (the default, as installed).
    pub history: bool,
    /// The slowest a request type's p99 may be (`cargo xtask soak`: 1 s); `None`: latency is
    /// reported, never a failure (the short test, on a machine loaded by other tests).
    pub max_p99: Option<Duration>,
}

impl Config {
    /// The defaults of `cargo xtask soak`: 64 sessions, 8 clients, 60 s, ring depth 64, binaries
    /// in `bin_dir`.
    pub fn new(bin_dir: PathBuf) -> Config {
        Config {
            duration: Duration::from_secs(60),
            sessions: 64,
            clients: 8,
            ring_depth: 64,
            think: Duration::from_millis(5),
            bin_dir,
            program: burst_program(),
            python: python().unwrap_or_else(|_| PathBuf::from("python3")),
            history: true,
            max_p99: Some(Duration::from_secs(1)),
        }
    }
}

/// `program` as found on `PATH`.
fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

/// `bins/clippy-session/tests/programs/burst.py`.
pub fn burst_program() -> PathBuf {
    crate::workspace_root().join("bins/clippy-session/tests/programs/burst.py")
}

/// The Python interpreter itself (`sys.executable`: `python3` on `PATH` may be a slow shim).
///
/// # Errors
/// When `python3` does not run.
pub fn python() -> Result<PathBuf, Error> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()?;
    let path = String::from_utf8(out.stdout)?.trim().to_owned();
    if !out.status.success() || !Path::new(&path).is_absolute() {
        return Err(format!("python3 does not name its interpreter: {path:?}").into());
    }
    Ok(PathBuf::from(path))
}

/// The request types of the clients, in the order they issue them.
pub const OPS: [&str; 6] = [
    "list_sessions",
    "get_turn",
    "capture",
    "paste",
    "wait_for",
    "read",
];

/// Latencies and outcomes of one request type.
#[derive(Debug, Default, Clone)]
pub struct OpStats {
    /// Latency of each request, microseconds.
    pub micros: Vec<u64>,
    /// Errors the broker answered, by reason (expected ones such as `no_turn` included).
    pub refusals: HashMap<String, u64>,
    /// Transport failures (the connection broke, a malformed reply).
    pub failures: u64,
}

/// Resident memory of a process, KiB.
#[derive(Debug, Default, Clone, Copy)]
pub struct Rss {
    /// `VmRSS`.
    pub rss_kib: u64,
    /// `VmHWM` (the peak).
    pub hwm_kib: u64,
}

/// `VmRSS` and `VmHWM` of `pid` from `/proc/PID/status`, zero when it is gone.
pub fn rss_of(pid: u32) -> Rss {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Rss::default();
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    Rss {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
    }
}

/// How long threads ran on a CPU and how long they were ready to run but waited for one
/// (`/proc/…/schedstat`): under a saturated machine a request's latency is mostly the second.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CpuTime {
    /// Time on a CPU.
    pub ran: Duration,
    /// Time runnable, waiting for a CPU.
    pub waited: Duration,
}

impl CpuTime {
    /// The calling thread's figures so far (zero where the kernel keeps none).
    pub fn of_this_thread() -> CpuTime {
        CpuTime::read("/proc/thread-self/schedstat")
    }

    /// The figures so far of thread `tid` of process `pid` (zero when it is gone).
    pub fn of_thread(pid: u32, tid: u32) -> CpuTime {
        CpuTime::read(&format!("/proc/{pid}/task/{tid}/schedstat"))
    }

    fn read(path: &str) -> CpuTime {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut fields = text
            .split_whitespace()
            .map(|f| f.parse::<u64>().unwrap_or(0));
        CpuTime {
            ran: Duration::from_nanos(fields.next().unwrap_or(0)),
            waited: Duration::from_nanos(fields.next().unwrap_or(0)),
        }
    }

    /// What passed between `earlier` and this reading.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            ran: self.ran.saturating_sub(earlier.ran),
            waited: self.waited.saturating_sub(earlier.waited),
        }
    }

    fn add(&mut self, other: CpuTime) {
        self.ran += other.ran;
        self.waited += other.waited;
    }
}

/// What a soak run found.
#[derive(Debug, Default)]
pub struct Report {
    /// The configuration's figures.
    pub sessions: usize,
    /// Clients.
    pub clients: usize,
    /// Ring depth.
    pub ring_depth: usize,
    /// How long the load ran.
    pub elapsed: Duration,
    /// The bound on each request type's p99 ([`Config::max_p99`]).
    pub max_p99: Option<Duration>,
    /// Per request type.
    pub ops: Vec<(String, OpStats)>,
    /// Turns the drivers completed, all sessions.
    pub turns_completed: u64,
    /// Turns compared with the broker's (the newest `ring_depth` of each session).
    pub turns_checked: u64,
    /// Completed turns missing from the broker or with other content.
    pub turns_lost: u64,
    /// Sessions whose last completed turn never reached the broker.
    pub stalled_sessions: u64,
    /// With the history store on: turns in the store at the end (after it caught up), and
    /// what `history_status` says is wrong (records not stored), if anything.
    pub history_stored: Option<u64>,
    /// `history_status`'s problem at the end, if any.
    pub history_problem: Option<String>,
    /// `get_turn` replies whose content was not the burst their id names.
    pub turns_corrupt: u64,
    /// `wait_for` matches that skipped or repeated a marker.
    pub wait_skipped: u64,
    /// `wait_for` matches, all clients.
    pub wait_matches: u64,
    /// Largest turn content seen by a driver, bytes.
    pub max_turn_bytes: u64,
    /// Broker memory at the start and at the end.
    pub broker_rss: (Rss, Rss),
    /// The wrappers' memory, summed, at the start and at the end.
    pub wrappers_rss_sum: (Rss, Rss),
    /// The largest wrapper's memory at the start and at the end.
    pub wrapper_rss_max: (Rss, Rss),
    /// The largest broker RSS sampled during the run, KiB.
    pub broker_rss_peak_kib: u64,
    /// The bound the broker's end RSS and its peak (`VmHWM`) are checked against, KiB.
    pub broker_rss_bound_kib: u64,
    /// The bound every wrapper's peak (`VmHWM`) is checked against, KiB.
    pub wrapper_rss_bound_kib: u64,
    /// The session whose wrapper peaked highest.
    pub largest_wrapper: String,
    /// Wrapper connections the broker lost during the run (a session `gone` in its log before
    /// the end): each is a window in which clients found the session missing.
    pub links_dropped: u64,
    /// The broker's log lines worth reading: warnings, errors and sessions gone (at most 20).
    pub broker_log: Vec<String>,
    /// During the load: the broker's event loop, the client threads and the driver threads
    /// (name, threads, their time summed).
    pub cpu: Vec<(&'static str, usize, CpuTime)>,
    /// What went wrong (empty: the soak passed).
    pub problems: Vec<String>,
}

fn percentile(sorted: &[u64], pct: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[(sorted.len() * pct / 100).min(sorted.len() - 1)]
}

impl Report {
    /// Requests per second, all types.
    pub fn total_rate(&self) -> f64 {
        let n: usize = self.ops.iter().map(|(_, s)| s.micros.len()).sum();
        n as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Everything that makes the soak fail.
    pub fn failures(&self) -> Vec<String> {
        let mut out = self.problems.clone();
        if self.turns_lost > 0 {
            out.push(format!("{} turns lost", self.turns_lost));
        }
        if self.turns_corrupt > 0 {
            out.push(format!(
                "{} get_turn replies with the wrong content",
                self.turns_corrupt
            ));
        }
        if self.wait_skipped > 0 {
            out.push(format!(
                "{} wait_for matches skipped or repeated a marker",
                self.wait_skipped
            ));
        }
        if self.links_dropped > 0 {
            out.push(format!(
                "the broker lost {} wrapper connections under load",
                self.links_dropped
            ));
        }
        if let Some(problem) = self
            .history_problem
            .as_ref()
            .filter(|p| p.contains("not stored"))
        {
            out.push(format!("the history store: {problem}"));
        }
        if let Some(stored) = self.history_stored
            && stored < self.turns_completed
        {
            out.push(format!(
                "{} of {} completed turns are not in the history store",
                self.turns_completed - stored,
                self.turns_completed
            ));
        }
        for (op, stats) in &self.ops {
            if stats.failures > 0 {
                out.push(format!(
                    "{} {op} requests failed on the wire",
                    stats.failures
                ));
            }
            if let Some(bound) = self.max_p99 {
                let mut sorted = stats.micros.clone();
                sorted.sort_unstable();
                let p99 = Duration::from_micros(percentile(&sorted, 99));
                if p99 > bound {
                    out.push(format!(
                        "{op}'s p99 was {:.0} ms, over its bound {} ms",
                        p99.as_secs_f64() * 1000.0,
                        bound.as_millis()
                    ));
                }
            }
        }
        let broker_peak = self.broker_rss.1.hwm_kib.max(self.broker_rss_peak_kib);
        if broker_peak > self.broker_rss_bound_kib {
            out.push(format!(
                "broker RSS peaked at {broker_peak} KiB, over its bound {} KiB",
                self.broker_rss_bound_kib
            ));
        }
        if self.wrapper_rss_max.1.hwm_kib > self.wrapper_rss_bound_kib {
            out.push(format!(
                "{}'s wrapper's RSS peaked at {} KiB, over its bound {} KiB",
                self.largest_wrapper, self.wrapper_rss_max.1.hwm_kib, self.wrapper_rss_bound_kib
            ));
        }
        out
    }

    /// The figures as JSON (`target/soak-report.json`).
    pub fn to_json(&self) -> Value {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let mut ops = serde_json::Map::new();
        for (op, stats) in &self.ops {
            let mut sorted = stats.micros.clone();
            sorted.sort_unstable();
            ops.insert(
                op.clone(),
                json!({
                    "count": sorted.len(),
                    "per_second": sorted.len() as f64 / secs,
                    "p50_us": percentile(&sorted, 50),
                    "p99_us": percentile(&sorted, 99),
                    "max_us": sorted.last().copied().unwrap_or(0),
                    "refusals": stats.refusals,
                    "failures": stats.failures,
                }),
            );
        }
        let rss = |r: Rss| json!({"rss_kib": r.rss_kib, "hwm_kib": r.hwm_kib});
        json!({
            "sessions": self.sessions,
            "clients": self.clients,
            "ring_depth": self.ring_depth,
            "seconds": secs,
            "requests_per_second": self.total_rate(),
            "requests": ops,
            "turns_completed": self.turns_completed,
            "turns_checked": self.turns_checked,
            "turns_lost": self.turns_lost,
            "history_stored": self.history_stored,
            "history_problem": self.history_problem,
            "turns_corrupt": self.turns_corrupt,
            "stalled_sessions": self.stalled_sessions,
            "links_dropped": self.links_dropped,
            "broker_log": self.broker_log,
            "wait_for_matches": self.wait_matches,
            "wait_for_skipped": self.wait_skipped,
            "max_turn_bytes": self.max_turn_bytes,
            "broker": {
                "start": rss(self.broker_rss.0),
                "end": rss(self.broker_rss.1),
                "peak_rss_kib": self.broker_rss_peak_kib,
                "growth_kib": self.broker_rss.1.rss_kib as i64 - self.broker_rss.0.rss_kib as i64,
                "bound_kib": self.broker_rss_bound_kib,
            },
            "wrappers": {
                "sum_start": rss(self.wrappers_rss_sum.0),
                "sum_end": rss(self.wrappers_rss_sum.1),
                "max_start": rss(self.wrapper_rss_max.0),
                "max_end": rss(self.wrapper_rss_max.1),
                "largest": self.largest_wrapper,
                "bound_kib": self.wrapper_rss_bound_kib,
            },
            "cpu": self.cpu.iter().map(|(name, threads, t)| json!({
                "threads": name,
                "count": threads,
                "ran_s": t.ran.as_secs_f64(),
                "waited_s": t.waited.as_secs_f64(),
            })).collect::<Vec<_>>(),
            "failures": self.failures(),
            "passed": self.failures().is_empty(),
        })
    }

    /// A short human table (markdown).
    pub fn table(&self) -> String {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let mut out = format!(
            "# Soak: {} sessions, {} clients, {:.1} s, ring depth {}\n\n\
             {:.0} requests/s in all.\n\n\
             | request | count | per s | p50 ms | p99 ms | max ms | refused |\n\
             |---|---|---|---|---|---|---|\n",
            self.sessions,
            self.clients,
            secs,
            self.ring_depth,
            self.total_rate()
        );
        for (op, stats) in &self.ops {
            let mut sorted = stats.micros.clone();
            sorted.sort_unstable();
            let ms = |us: u64| us as f64 / 1000.0;
            let mut refused: Vec<String> = stats
                .refusals
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect();
            refused.sort();
            let _ = writeln!(
                out,
                "| {op} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
                sorted.len(),
                sorted.len() as f64 / secs,
                ms(percentile(&sorted, 50)),
                ms(percentile(&sorted, 99)),
                ms(sorted.last().copied().unwrap_or(0)),
                if refused.is_empty() {
                    "-".to_owned()
                } else {
                    refused.join(", ")
                }
            );
        }
        let mib = |kib: u64| kib as f64 / 1024.0;
        let _ = write!(
            out,
            "\n| memory (MiB) | start RSS | end RSS | end HWM |\n|---|---|---|---|\n\
             | broker | {:.1} | {:.1} | {:.1} |\n\
             | wrappers, sum | {:.1} | {:.1} | {:.1} |\n\
             | largest wrapper | {:.1} | {:.1} | {:.1} |\n\n\
             Broker: peak RSS sampled {:.1} MiB, growth {:+.1} MiB, bound {:.1} MiB; \
             each wrapper's bound {:.1} MiB.\n\n\
             Turns: {} completed, {} checked against the broker, **{} lost**, {} get_turn \
             replies corrupt, {} sessions whose turns stopped reaching the broker; largest turn \
             {} bytes.\n\
             wait_for: {} matches, **{} skipped or repeated**.\n\
             Wrapper connections the broker lost: **{}**.\n",
            mib(self.broker_rss.0.rss_kib),
            mib(self.broker_rss.1.rss_kib),
            mib(self.broker_rss.1.hwm_kib),
            mib(self.wrappers_rss_sum.0.rss_kib),
            mib(self.wrappers_rss_sum.1.rss_kib),
            mib(self.wrappers_rss_sum.1.hwm_kib),
            mib(self.wrapper_rss_max.0.rss_kib),
            mib(self.wrapper_rss_max.1.rss_kib),
            mib(self.wrapper_rss_max.1.hwm_kib),
            mib(self.broker_rss_peak_kib),
            (self.broker_rss.1.rss_kib as f64 - self.broker_rss.0.rss_kib as f64) / 1024.0,
            mib(self.broker_rss_bound_kib),
            mib(self.wrapper_rss_bound_kib),
            self.turns_completed,
            self.turns_checked,
            self.turns_lost,
            self.turns_corrupt,
            self.stalled_sessions,
            self.max_turn_bytes,
            self.wait_matches,
            self.wait_skipped,
            self.links_dropped,
        );
        if let Some(stored) = self.history_stored {
            let _ = writeln!(
                out,
                "History store: **{stored}** turns stored of {} completed; {}.",
                self.turns_completed,
                self.history_problem
                    .as_deref()
                    .unwrap_or("nothing left out")
            );
        }
        if !self.cpu.is_empty() {
            out.push_str(
                "\n| during the load | threads | ran s | waited for a CPU s | waiting, share of \
                 each thread's time |\n|---|---|---|---|---|\n",
            );
            for (name, threads, t) in &self.cpu {
                let share = t.waited.as_secs_f64() / (secs * (*threads).max(1) as f64);
                let _ = writeln!(
                    out,
                    "| {name} | {threads} | {:.2} | {:.2} | {:.0} % |",
                    t.ran.as_secs_f64(),
                    t.waited.as_secs_f64(),
                    share * 100.0
                );
            }
        }
        if !self.broker_log.is_empty() {
            out.push_str("\nFrom the broker's log:\n\n```\n");
            for line in &self.broker_log {
                let _ = writeln!(out, "{line}");
            }
            out.push_str("```\n");
        }
        let failures = self.failures();
        if failures.is_empty() {
            out.push_str("\nResult: **passed**.\n");
        } else {
            out.push_str("\nResult: **FAILED**:\n");
            for f in failures {
                let _ = writeln!(out, "- {f}");
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

/// The soak's private world: a runtime directory, the broker, and every session; all of it killed
/// and removed on drop.
struct World {
    dir: crate::Scratch,
    broker: Option<StdChild>,
    sessions: Vec<Session>,
}

impl World {
    fn runtime(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    fn socket(&self) -> PathBuf {
        self.runtime().join("clippy/broker.sock")
    }

    fn env(&self) -> Vec<(String, PathBuf)> {
        vec![
            (
                "PATH".into(),
                std::env::var_os("PATH")
                    .map_or_else(|| PathBuf::from("/usr/bin:/bin"), PathBuf::from),
            ),
            ("HOME".into(), self.dir.path().join("home")),
            ("TERM".into(), PathBuf::from("dumb")),
            ("LANG".into(), PathBuf::from("C.UTF-8")),
            ("XDG_RUNTIME_DIR".into(), self.runtime()),
        ]
    }

    fn client(&self) -> Result<Client, Error> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Client::connect(&self.socket(), Role::Client) {
                Ok(client) => return Ok(client),
                Err(e) if Instant::now() >= deadline => return Err(e.into()),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        for session in &mut self.sessions {
            session.kill();
        }
        if let Some(mut broker) = self.broker.take() {
            let _ = broker.kill();
            let _ = broker.wait();
        }
    }
}

/// One wrapped program on a PTY of ours.
struct Session {
    name: String,
    master: Arc<PtyMaster>,
    wrapper: Child,
    done: bool,
}

impl Session {
    fn kill(&mut self) {
        if self.done {
            return;
        }
        // The wrapper's child is in a session of its own: kill it first, through its group.
        for pid in children_of(self.wrapper.pid()) {
            let _ = nix::sys::signal::killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
            let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        let _ = self.wrapper.kill();
        let _ = self.wrapper.wait();
        self.done = true;
    }
}

fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                stat.rfind(')')
                    .and_then(|i| stat[i + 1..].split_whitespace().nth(1)?.parse().ok())
                    == Some(pid)
            })
        })
        .collect()
}

fn start_session(
    world: &World,
    config: &Config,
    name: &str,
    args: &[&str],
) -> Result<Session, Error> {
    let pair = clippy_pty::openpty(WinSize::new(120, 40))?;
    let mut spec = CommandSpec::new(config.bin_dir.join("clippy-session"));
    for (key, _) in std::env::vars_os() {
        spec = spec.env_remove(key);
    }
    for (key, value) in world.env() {
        spec = spec.env(key, value);
    }
    spec = spec
        .args(["--name", name, "--pattern", "^(burst|sink)> $", "--"])
        .arg(&config.python)
        .arg(&config.program)
        .args(args);
    let wrapper = pair.slave.spawn(&spec)?;
    Ok(Session {
        name: name.to_owned(),
        master: Arc::new(pair.master),
        wrapper,
        done: false,
    })
}

/// Reads what is there on `master` within `wait` into `buf`; `false` at end of file.
fn read_some(master: &PtyMaster, buf: &mut Vec<u8>, wait: Duration) -> bool {
    let mut fds = [PollFd::new(master.as_fd(), PollFlags::POLLIN)];
    let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
    match poll(&mut fds, PollTimeout::from(ms)) {
        Ok(0) | Err(nix::errno::Errno::EINTR) => return true,
        Ok(_) => {}
        Err(_) => return false,
    }
    let mut chunk = [0u8; 65536];
    match (&*master).read(&mut chunk) {
        Ok(0) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
        ),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// FNV-1a, 64 bits.
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One completed turn in a driver's ledger.
#[derive(Debug, Clone, Copy)]
struct Entry {
    seq: u64,
    len: u64,
    hash: u64,
}

/// A driver's result: its ledger, or why it stopped.
struct Driven {
    ledger: Vec<Entry>,
    problem: Option<String>,
}

/// Types `N` at each prompt until `stop`; records what the program answered.
fn drive(
    name: &str,
    master: &PtyMaster,
    stop: &AtomicBool,
    think: Duration,
    completed: &AtomicU64,
) -> Driven {
    let mut buf = Vec::new();
    let mut ledger = Vec::new();
    let mut problem = None;
    // The first prompt.
    let deadline = Instant::now() + TURN_DEADLINE;
    while find(&buf, PROMPT).is_none() {
        if Instant::now() >= deadline || !read_some(master, &mut buf, Duration::from_millis(50)) {
            return Driven {
                ledger,
                problem: Some(format!("{name}: no first prompt")),
            };
        }
    }
    buf.clear();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let input = format!("{n}\r");
        if (&*master).write_all(input.as_bytes()).is_err() {
            problem = Some(format!("{name}: cannot type turn {n}"));
            break;
        }
        let echo = format!("{n}\r\n");
        let deadline = Instant::now() + TURN_DEADLINE;
        let found = loop {
            if let Some(start) = find(&buf, echo.as_bytes()) {
                let body = start + echo.len();
                if let Some(end) = find(&buf[body..], PROMPT) {
                    break Some((body, body + end));
                }
            }
            if Instant::now() >= deadline {
                break None;
            }
            if !read_some(master, &mut buf, Duration::from_millis(50)) {
                break None;
            }
        };
        let Some((body, end)) = found else {
            problem = Some(format!(
                "{name}: turn {n} did not end with a prompt within {TURN_DEADLINE:?} ({} bytes \
                 buffered)",
                buf.len()
            ));
            break;
        };
        let content = &buf[body..end];
        ledger.push(Entry {
            seq: n,
            len: content.len() as u64,
            hash: fnv(content),
        });
        completed.fetch_add(1, Ordering::Relaxed);
        buf.drain(..end + PROMPT.len());
        if !think.is_zero() {
            std::thread::sleep(think);
        }
    }
    Driven { ledger, problem }
}

/// Drains a PTY master until it closes or `stop`.
fn drain(master: &PtyMaster, stop: &AtomicBool) {
    let mut buf = Vec::new();
    while !stop.load(Ordering::Relaxed) && read_some(master, &mut buf, Duration::from_millis(50)) {
        buf.clear();
    }
}

// ---------------------------------------------------------------------------------------------
// Clients
// ---------------------------------------------------------------------------------------------

struct ClientResult {
    stats: Vec<OpStats>,
    corrupt: u64,
    matches: u64,
    skipped: u64,
    problems: Vec<String>,
}

/// Whether `content` is the burst of turn `turn_id` of session `name`.
fn burst_matches(name: &str, turn_id: &str, content: &[u8]) -> bool {
    let Some(seq) = turn_id.rsplit(':').next() else {
        return false;
    };
    let begin = format!("BEGIN {seq} of {name}\r\n");
    let end = format!("END {seq} of {name}\r\n");
    find(content, begin.as_bytes()).is_some() && content.ends_with(end.as_bytes())
}

fn client_loop(
    index: usize,
    mut client: Client,
    names: &[String],
    stop: &AtomicBool,
) -> ClientResult {
    let mut result = ClientResult {
        stats: vec![OpStats::default(); OPS.len()],
        corrupt: 0,
        matches: 0,
        skipped: 0,
        problems: Vec::new(),
    };
    let mut rng = crate::Rng(0x2545_f491_4f6c_dd1d ^ (index as u64 + 1).wrapping_mul(0x9e37));
    let watched = &names[index % names.len()];
    let mut wait_cursor = 0u64;
    let mut last_marker = 0u64;
    let mut read_cursors: HashMap<usize, u64> = HashMap::new();
    let mut op = index % OPS.len();
    while !stop.load(Ordering::Relaxed) {
        op = (op + 1) % OPS.len();
        let pick = rng.below(names.len());
        let name = &names[pick];
        let started = Instant::now();
        let reply = match OPS[op] {
            "list_sessions" => client.request(|id| Message::ListSessions { id }),
            "get_turn" => client.request(|id| Message::GetTurn {
                id,
                turn_id: name.clone(),
                format: Format::Raw,
            }),
            "capture" => client.request(|id| Message::Capture {
                id,
                session: name.clone(),
            }),
            "paste" => client.request(|id| Message::Paste {
                id,
                session: SINK.into(),
                format: Format::Raw,
            }),
            "wait_for" => client.request(|id| Message::WaitFor {
                id,
                session: watched.clone(),
                pattern: r"MARK-\d+\.".into(),
                kind: PatternKind::Regex,
                from_cursor: wait_cursor,
                timeout_ms: Some(WAIT_MS),
            }),
            _ => {
                let from = read_cursors.get(&pick).copied().unwrap_or(0);
                client.request(|id| Message::Read {
                    id,
                    session: name.clone(),
                    from_cursor: from,
                    max_bytes: Some(READ_BYTES),
                })
            }
        };
        let micros = started.elapsed().as_micros() as u64;
        let stats = &mut result.stats[op];
        stats.micros.push(micros);
        match reply {
            Ok(Message::Turn { turn, content, .. }) => {
                if !turn.truncated && !burst_matches(name, &turn.turn_id, &content) {
                    result.corrupt += 1;
                    if result.problems.len() < 5 {
                        result.problems.push(format!(
                            "get_turn {name} answered {} whose content is not its burst ({} \
                             bytes)",
                            turn.turn_id,
                            content.len()
                        ));
                    }
                }
            }
            Ok(Message::Matched {
                match_text,
                resume_cursor,
                ..
            }) => {
                result.matches += 1;
                let number: Option<u64> = match_text
                    .strip_prefix("MARK-")
                    .and_then(|rest| rest.strip_suffix('.'))
                    .and_then(|n| n.parse().ok());
                match number {
                    Some(n) if n == last_marker + 1 => last_marker = n,
                    other => {
                        result.skipped += 1;
                        if result.problems.len() < 5 {
                            result.problems.push(format!(
                                "wait_for on {watched} from {wait_cursor}: expected MARK-{}., \
                                 got {match_text:?} ({other:?})",
                                last_marker + 1
                            ));
                        }
                        if let Some(n) = other {
                            last_marker = n;
                        }
                    }
                }
                wait_cursor = resume_cursor;
            }
            Ok(Message::SpoolData {
                data,
                resume_cursor,
                ..
            }) => {
                let next = if data.is_empty() { 0 } else { resume_cursor };
                read_cursors.insert(pick, next);
            }
            Ok(_) => {}
            Err(ProtoError::Broker { reason, .. }) => {
                // A timed-out wait keeps its cursor: a marker half written at the spool's end
                // would otherwise be stepped over.
                *stats
                    .refusals
                    .entry(reason.as_str().to_owned())
                    .or_default() += 1;
                let expected = matches!(
                    (OPS[op], reason),
                    (_, ErrorReason::NoTurn)
                        | ("paste", ErrorReason::BufferEmpty | ErrorReason::Busy)
                        | ("wait_for", ErrorReason::Timeout)
                );
                if !expected && result.problems.len() < 5 {
                    result
                        .problems
                        .push(format!("{} {name}: refused with {reason}", OPS[op]));
                }
            }
            Err(e) => {
                stats.failures += 1;
                result
                    .problems
                    .push(format!("client {index}: {} failed: {e}", OPS[op]));
                break;
            }
        }
    }
    result
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

fn sessions_of(client: &mut Client) -> Result<Vec<SessionSummary>, Error> {
    match client.request(|id| Message::ListSessions { id })? {
        Message::Sessions { sessions, .. } => Ok(SessionSummary::unshare(sessions)),
        other => Err(format!("list_sessions answered {other:?}").into()),
    }
}

fn wait_until(
    what: &str,
    deadline: Duration,
    mut ok: impl FnMut() -> Result<bool, Error>,
) -> Result<(), Error> {
    let end = Instant::now() + deadline;
    loop {
        if ok()? {
            return Ok(());
        }
        if Instant::now() >= end {
            return Err(format!("timed out after {deadline:?} waiting for {what}").into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the soak; `progress` gets a line now and then (pass `|_| ()` to stay quiet).
///
/// # Errors
/// When the world cannot be set up (a binary missing, the broker not starting, a session not
/// reaching its first prompt). What goes wrong under load is in the report's
/// [`failures`](Report::failures).
pub fn run(config: &Config, progress: &dyn Fn(&str)) -> Result<Report, Error> {
    for bin in ["clippy-session", "clippy-broker"] {
        let path = config.bin_dir.join(bin);
        if !path.is_file() {
            return Err(format!("{} is not built", path.display()).into());
        }
    }
    let dir = crate::Scratch::create(&format!(
        "clippy-soak-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    ))?;
    for sub in ["run", "home"] {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir.path().join(sub))?;
    }
    let mut world = World {
        dir,
        broker: None,
        sessions: Vec::new(),
    };
    let log = std::fs::File::create(world.dir.path().join("broker.log"))?;
    // In a session of its own, as a broker started on demand or by systemd runs: where the
    // kernel schedules each session as a group (autogroup), it would otherwise share this
    // process's group with every driver and client thread (`setsid` of util-linux execs it in
    // place: a child of ours is no process group leader, so the pid stays the broker's).
    let mut broker = match which("setsid") {
        Some(setsid) => {
            let mut command = Command::new(setsid);
            command.arg(config.bin_dir.join("clippy-broker"));
            command
        }
        None => Command::new(config.bin_dir.join("clippy-broker")),
    };
    if !config.history {
        let file = world.dir.path().join("no-history.toml");
        std::fs::write(&file, "[history]\nenabled = false\n")?;
        broker.arg("--config").arg(file);
    }
    broker
        .args([
            "--foreground",
            "--ring-depth",
            &config.ring_depth.to_string(),
        ])
        .env_clear()
        .envs(world.env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    world.broker = Some(broker.spawn()?);
    let broker_pid = world.broker.as_ref().map_or(0, StdChild::id);
    let mut control = world.client()?;
    progress(&format!(
        "soak: broker up; starting {} sessions",
        config.sessions
    ));

    let names: Vec<String> = (0..config.sessions)
        .map(|i| format!("soak-{i:02}"))
        .collect();
    for name in &names {
        let session = start_session(&world, config, name, &[name.as_str()])?;
        world.sessions.push(session);
    }
    let sink = start_session(&world, config, SINK, &["--sink"])?;
    world.sessions.push(sink);
    let stop = Arc::new(AtomicBool::new(false));
    let sink_drain = {
        let master = Arc::clone(&world.sessions[config.sessions].master);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || drain(&master, &stop))
    };
    let everyone = config.sessions + 1;
    wait_until("every session registered", TURN_DEADLINE, || {
        Ok(sessions_of(&mut control)?.len() >= everyone)
    })?;
    let broker_start = rss_of(broker_pid);
    let wrapper_pids: Vec<u32> = world.sessions.iter().map(|s| s.wrapper.pid()).collect();
    // The wrappers' memory summed, the largest, and which wrapper peaked highest.
    let wrappers = |pids: &[u32]| {
        let all: Vec<Rss> = pids.iter().map(|&p| rss_of(p)).collect();
        let sum = Rss {
            rss_kib: all.iter().map(|r| r.rss_kib).sum(),
            hwm_kib: all.iter().map(|r| r.hwm_kib).sum(),
        };
        let max = Rss {
            rss_kib: all.iter().map(|r| r.rss_kib).max().unwrap_or(0),
            hwm_kib: all.iter().map(|r| r.hwm_kib).max().unwrap_or(0),
        };
        let peaked = (0..all.len()).max_by_key(|&i| all[i].hwm_kib);
        (sum, max, peaked)
    };
    let (wrappers_sum_start, wrapper_max_start, _) = wrappers(&wrapper_pids);

    // The load.
    progress("soak: driving sessions and clients");
    let completed = Arc::new(AtomicU64::new(0));
    let drivers: Vec<JoinHandle<(Driven, CpuTime)>> = world.sessions[..config.sessions]
        .iter()
        .map(|session| {
            let master = Arc::clone(&session.master);
            let stop = Arc::clone(&stop);
            let name = session.name.clone();
            let think = config.think;
            let completed = Arc::clone(&completed);
            std::thread::spawn(move || {
                let before = CpuTime::of_this_thread();
                let driven = drive(&name, &master, &stop, think, &completed);
                (driven, CpuTime::of_this_thread().since(before))
            })
        })
        .collect();
    let names = Arc::new(names);
    let started = Instant::now();
    // The broker's event loop is its main thread.
    let broker_loop_before = CpuTime::of_thread(broker_pid, broker_pid);
    let mut clients = Vec::new();
    for index in 0..config.clients {
        let client = world.client()?;
        let names = Arc::clone(&names);
        let stop = Arc::clone(&stop);
        clients.push(std::thread::spawn(move || {
            let before = CpuTime::of_this_thread();
            let result = client_loop(index, client, &names, &stop);
            (result, CpuTime::of_this_thread().since(before))
        }));
    }
    let peak = Arc::new(Mutex::new(broker_start.rss_kib));
    let mut last_line = Instant::now();
    while started.elapsed() < config.duration {
        std::thread::sleep(Duration::from_millis(100));
        let now = rss_of(broker_pid).rss_kib;
        if let Ok(mut p) = peak.lock() {
            *p = (*p).max(now);
        }
        if last_line.elapsed() >= Duration::from_secs(10) {
            last_line = Instant::now();
            progress(&format!(
                "soak: {:.0} s, {} turns, broker RSS {} KiB",
                started.elapsed().as_secs_f64(),
                completed.load(Ordering::Relaxed),
                now
            ));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    let broker_loop = CpuTime::of_thread(broker_pid, broker_pid).since(broker_loop_before);
    let mut report = Report {
        sessions: config.sessions,
        clients: config.clients,
        ring_depth: config.ring_depth,
        elapsed,
        max_p99: config.max_p99,
        ..Report::default()
    };
    let mut ops: Vec<OpStats> = vec![OpStats::default(); OPS.len()];
    let (mut clients_cpu, mut drivers_cpu) = (CpuTime::default(), CpuTime::default());
    let (client_count, driver_count) = (clients.len(), drivers.len());
    for handle in clients {
        let (result, cpu) = handle
            .join()
            .map_err(|_| Error::from("a client thread panicked"))?;
        clients_cpu.add(cpu);
        for (all, one) in ops.iter_mut().zip(result.stats) {
            all.micros.extend(one.micros);
            all.failures += one.failures;
            for (reason, n) in one.refusals {
                *all.refusals.entry(reason).or_default() += n;
            }
        }
        report.turns_corrupt += result.corrupt;
        report.wait_matches += result.matches;
        report.wait_skipped += result.skipped;
        report.problems.extend(result.problems.into_iter().take(5));
    }
    report.ops = OPS.iter().map(|s| (*s).to_owned()).zip(ops).collect();
    let mut ledgers = Vec::new();
    for handle in drivers {
        let (driven, cpu) = handle
            .join()
            .map_err(|_| Error::from("a driver thread panicked"))?;
        drivers_cpu.add(cpu);
        if let Some(problem) = driven.problem {
            report.problems.push(problem);
        }
        ledgers.push(driven.ledger);
    }
    report.cpu = vec![
        ("the broker's event loop", 1, broker_loop),
        (
            "clients (polling for a reply counts as waiting)",
            client_count,
            clients_cpu,
        ),
        ("drivers", driver_count, drivers_cpu),
    ];
    progress("soak: accounting for every turn");

    // Every turn accounted for.
    let ids: HashMap<String, String> = sessions_of(&mut control)?
        .into_iter()
        .filter_map(|s| Some((s.name?, s.session)))
        .collect();
    let settle_deadline = Instant::now() + Duration::from_secs(15);
    for (name, ledger) in names.iter().zip(&ledgers) {
        report.turns_completed += ledger.len() as u64;
        report.max_turn_bytes = report
            .max_turn_bytes
            .max(ledger.iter().map(|e| e.len).max().unwrap_or(0));
        let Some(last) = ledger.last() else {
            continue;
        };
        let Some(id) = ids.get(name) else {
            report.turns_lost += ledger.len().min(config.ring_depth) as u64;
            report.problems.push(format!("{name} is not registered"));
            continue;
        };
        let want_last = format!("{id}:{}", last.seq);
        // One deadline for all sessions: a session whose turns stopped reaching the broker
        // must not hold up the accounting of the others.
        let left = settle_deadline.saturating_duration_since(Instant::now());
        let reached = wait_until(
            &format!("{name}'s last turn {want_last} at the broker"),
            left,
            || {
                Ok(sessions_of(&mut control)?
                    .iter()
                    .any(|s| s.last_turn_id.as_deref() == Some(want_last.as_str())))
            },
        );
        if reached.is_err() {
            let at_broker = sessions_of(&mut control)?
                .into_iter()
                .find(|s| &s.session == id)
                .and_then(|s| s.last_turn_id);
            report.stalled_sessions += 1;
            report.problems.push(format!(
                "{name} ({id}): the program completed {} turns but the broker's latest is \
                 {at_broker:?}",
                last.seq
            ));
        }
        let listed = match control.request(|rid| Message::ListTurns {
            id: rid,
            session: id.clone(),
            limit: Some(config.ring_depth as u32),
        })? {
            Message::Turns { turns, .. } => turns,
            other => return Err(format!("list_turns answered {other:?}").into()),
        };
        let listed: HashMap<String, u32> = listed
            .into_iter()
            .map(|t| (t.turn_id, t.byte_length))
            .collect();
        let start = ledger.len().saturating_sub(config.ring_depth);
        for entry in &ledger[start..] {
            report.turns_checked += 1;
            let turn_id = format!("{id}:{}", entry.seq);
            let ok = listed.contains_key(&turn_id)
                && match control.request(|rid| Message::GetTurn {
                    id: rid,
                    turn_id: turn_id.clone(),
                    format: Format::Raw,
                }) {
                    Ok(Message::Turn { content, .. }) => {
                        content.len() as u64 == entry.len && fnv(&content) == entry.hash
                    }
                    _ => false,
                };
            if !ok {
                report.turns_lost += 1;
                if report.problems.len() < 20 {
                    report.problems.push(format!(
                        "turn {turn_id} ({name} #{}, {} bytes) is {}",
                        entry.seq,
                        entry.len,
                        if listed.contains_key(&turn_id) {
                            "listed with other content"
                        } else {
                            "not listed"
                        }
                    ));
                }
            }
        }
    }
    if config.history {
        // Every completed turn in the store, once it has caught up (a store behind holds the
        // wrappers' acknowledgements and asks for the turns again: none may be left out).
        let mut info = None;
        let _ = wait_until(
            "the history store to hold every completed turn",
            Duration::from_secs(60),
            || {
                let state = match control.request(|rid| Message::HistoryStatus { id: rid })? {
                    Message::HistoryState { history, .. } => history,
                    other => return Err(format!("history_status answered {other:?}").into()),
                };
                let done = state.turns >= report.turns_completed;
                info = Some(state);
                Ok(done)
            },
        );
        if let Some(state) = info {
            report.history_stored = Some(state.turns);
            report.history_problem = state.problem;
        }
    }
    let (links_dropped, notable) = broker_log_notes(&world.dir.path().join("broker.log"));
    report.links_dropped = links_dropped;
    report.broker_log = notable;
    report.broker_rss = (broker_start, rss_of(broker_pid));
    let (wrappers_sum_end, wrapper_max_end, peaked) = wrappers(&wrapper_pids);
    report.wrappers_rss_sum = (wrappers_sum_start, wrappers_sum_end);
    report.wrapper_rss_max = (wrapper_max_start, wrapper_max_end);
    report.largest_wrapper = peaked
        .map(|i| world.sessions[i].name.clone())
        .unwrap_or_default();
    report.broker_rss_peak_kib = peak.lock().map_or(0, |p| *p);
    // What a ring may hold: `ring_depth` turns of the largest size, raw and rendered. The broker
    // holds one ring per session, each wrapper its own (to send again after a reconnect); the
    // slack is for buffers and allocator pages, not for turns.
    let ring = (config.ring_depth as u64) * report.max_turn_bytes * 2 / 1024;
    report.broker_rss_bound_kib =
        broker_start.rss_kib + (config.sessions as u64) * ring + 64 * 1024;
    report.wrapper_rss_bound_kib = wrapper_max_start.hwm_kib + ring + 16 * 1024;

    // The end: every program asked to quit, then whatever is left killed.
    for session in &world.sessions[..config.sessions] {
        let _ = (&*session.master).write_all(b"quit\r");
    }
    let end = Instant::now() + Duration::from_secs(5);
    for session in &mut world.sessions[..config.sessions] {
        while Instant::now() < end {
            if session.wrapper.try_wait().ok().flatten().is_some() {
                session.done = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    drop(world);
    let _ = sink_drain.join();
    Ok(report)
}

/// Reads the broker's log: how many sessions it lost with their wrapper's connection, and its
/// warnings, errors and lost sessions (the first 20 such lines).
fn broker_log_notes(path: &Path) -> (u64, Vec<String>) {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let mut dropped = 0;
    let mut notable = Vec::new();
    for line in log.lines() {
        let gone = line.contains(" gone: its wrapper's connection");
        dropped += u64::from(gone);
        if (gone || line.contains(" WARN ") || line.contains(" ERROR ")) && notable.len() < 20 {
            notable.push(line.to_owned());
        }
    }
    (dropped, notable)
}

/// Writes `target/soak-report.json` and `target/soak-report.md` under `target`.
///
/// # Errors
/// When a file cannot be written.
pub fn write_report(report: &Report, target: &Path) -> Result<(PathBuf, PathBuf), Error> {
    std::fs::create_dir_all(target)?;
    let json_path = target.join("soak-report.json");
    let md_path = target.join("soak-report.md");
    std::fs::write(
        &json_path,
        serde_json::to_string_pretty(&report.to_json())? + "\n",
    )?;
    std::fs::write(&md_path, report.table())?;
    Ok((json_path, md_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_bursts() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), 51);
        assert_eq!(percentile(&v, 99), 100);
        assert_eq!(percentile(&[], 50), 0);
        assert!(burst_matches(
            "s",
            "abc:7",
            b"\x1b]0;t\x07BEGIN 7 of s\r\nx\r\nEND 7 of s\r\n"
        ));
        assert!(!burst_matches(
            "s",
            "abc:8",
            b"BEGIN 7 of s\r\nEND 7 of s\r\n"
        ));
    }
}
