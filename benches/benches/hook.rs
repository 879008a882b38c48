//! What an agent's hook costs the agent: `clippy-ctl hook` spawned and waited for, as an agent
//! runs its hook, against spawning `/bin/true` the same way in the same run.
//!
//! Set-up: `clippy-ctl` (release, built by this bench) in a clean environment (`PATH` only,
//! plus `CLIPPY_HOOK_SOCKET` where a subject says), a Claude `Stop` payload of about 400 bytes
//! written to its stdin and stdin closed, stdout and stderr on `/dev/null`: what Claude Code and
//! Gemini CLI do for each hook event. Subjects, each timed from `spawn` to `wait` returning:
//! - **/bin/true**: the baseline, the least any hook costs;
//! - **no session**: `clippy-ctl hook claude` without `CLIPPY_HOOK_SOCKET` (an agent outside any
//!   session with hooks installed persistently): it exits without reading its input;
//! - **no socket file**: `CLIPPY_HOOK_SOCKET` names a path where there is nothing (a session
//!   that ended and took its folder with it): it reads the payload, connecting fails;
//! - **refused**: a socket file nobody listens on any more (connecting is refused);
//! - **delivered**: a listener of this process accepts and reads each report to its end (the
//!   wrapper's side of a live session), for comparison; every report is checked;
//! - **sh -c**, **sh -c true**: the no-session hook and `true` through `/bin/sh -c`, as Claude
//!   and Gemini run a hook's command line.
//!
//! Every subject runs [`WARM_UP`] times untimed, then [`RUNS`] times, interleaved round by round.
//! The ratios are each subject's p50 and mean over `/bin/true`'s; the target (issue 15) is under
//! 50 ms per hook call when clippy is unreachable. It prints a markdown report and writes it to
//! `target/hook-bench.md`; about 10 s after the build. It ignores its arguments and asserts no
//! timing.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clippy_benches::wrapper::{Error, percentile};
use clippy_benches::{Scratch, build_release, machine, write_report};

/// Timed runs per subject.
const RUNS: usize = 300;
/// Untimed runs per subject before.
const WARM_UP: usize = 20;
/// The target per hook call when clippy is unreachable, in milliseconds.
const TARGET_MS: f64 = 50.0;
/// What Claude Code hands a `Stop` hook.
const PAYLOAD: &[u8] = br#"{"session_id":"8a3c0d52-4b1e-4f7a-9c55-2f0e6d1b7a90","transcript_path":"/home/u/.claude/projects/-home-u-src-clippy/8a3c0d52-4b1e-4f7a-9c55-2f0e6d1b7a90.jsonl","cwd":"/home/u/src/clippy","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done: the hook entry sends its payload to the session's wrapper and exits 0."}"#;

fn main() {
    if let Err(e) = run() {
        eprintln!("hook bench: {e}");
        std::process::exit(1);
    }
}

/// One measured command line.
struct Subject {
    label: &'static str,
    program: PathBuf,
    args: Vec<OsString>,
    /// `CLIPPY_HOOK_SOCKET`, when set.
    socket: Option<PathBuf>,
    unreachable: bool,
    runs: Vec<Duration>,
}

impl Subject {
    fn new(label: &'static str, program: &Path, args: &[&str]) -> Self {
        Subject {
            label,
            program: program.to_owned(),
            args: args.iter().map(OsString::from).collect(),
            socket: None,
            unreachable: false,
            runs: Vec::with_capacity(RUNS),
        }
    }

    fn socket(mut self, socket: &Path) -> Self {
        self.socket = Some(socket.to_owned());
        self
    }

    fn unreachable(mut self) -> Self {
        self.unreachable = true;
        self
    }

    /// Spawns it, hands it the payload, waits for it: what an agent does per hook event.
    fn once(&self) -> Result<Duration, Error> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(socket) = &self.socket {
            command.env("CLIPPY_HOOK_SOCKET", socket);
        }
        let started = Instant::now();
        let mut child = command.spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            // A program that does not read (true, a hook outside any session) may be gone
            // already: agents ignore that too.
            let _ = stdin.write_all(PAYLOAD);
        }
        let status = child.wait()?;
        let took = started.elapsed();
        if !status.success() {
            return Err(format!("{}: exited with {status}", self.label).into());
        }
        Ok(took)
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut sorted = self.runs.clone();
        sorted.sort_unstable();
        sorted
    }

    fn mean(&self) -> Duration {
        self.runs.iter().sum::<Duration>() / u32::try_from(self.runs.len().max(1)).unwrap_or(1)
    }
}

fn run() -> Result<(), Error> {
    let ctl = build_release("hook bench", "clippy-ctl")?;
    let started = Instant::now();
    let scratch = Scratch::create("clippy-hook-bench")?;
    let missing = scratch.path().join("gone").join("hook.sock");
    let stale = scratch.path().join("stale.sock");
    drop(UnixListener::bind(&stale)?);
    let live = scratch.path().join("hook.sock");
    let listener = UnixListener::bind(&live)?;
    let received = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&received);
    let expected = [b"clippy-hook 1 claude\n".as_slice(), PAYLOAD].concat();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut report = Vec::with_capacity(expected.len());
            if stream.read_to_end(&mut report).is_ok() && report == expected {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
    });

    let sh = Path::new("/bin/sh");
    let hook_line = format!("'{}' hook claude # clippy-hooks", ctl.display());
    let mut subjects = vec![
        Subject::new("/bin/true", Path::new("/bin/true"), &[]),
        Subject::new("no session", &ctl, &["hook", "claude"]).unreachable(),
        Subject::new("no socket file", &ctl, &["hook", "claude"])
            .socket(&missing)
            .unreachable(),
        Subject::new("refused", &ctl, &["hook", "claude"])
            .socket(&stale)
            .unreachable(),
        Subject::new("delivered", &ctl, &["hook", "claude"]).socket(&live),
        Subject::new("sh -c true", sh, &["-c", "true"]),
        Subject::new("sh -c, no session", sh, &["-c", &hook_line]).unreachable(),
    ];
    for round in 0..WARM_UP + RUNS {
        for subject in &mut subjects {
            let took = subject.once()?;
            if round >= WARM_UP {
                subject.runs.push(took);
            }
        }
        if (round + 1) % 100 == 0 {
            eprintln!("hook bench: round {}/{}", round + 1, WARM_UP + RUNS);
        }
    }
    // The listener may read the last reports after their hooks exited: a moment for them.
    let deadline = Instant::now() + Duration::from_secs(5);
    while received.load(Ordering::Relaxed) < WARM_UP + RUNS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let delivered = received.load(Ordering::Relaxed);
    if delivered != WARM_UP + RUNS {
        return Err(format!(
            "the listener read {delivered} whole reports of {}",
            WARM_UP + RUNS
        )
        .into());
    }
    drop(scratch);
    let report = report(&subjects, started.elapsed());
    write_report("hook bench", "hook-bench.md", &report)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn report(subjects: &[Subject], took: Duration) -> String {
    let (cpus, kernel) = machine();
    let base = &subjects[0];
    let (base_p50, base_mean) = (ms(percentile(&base.sorted(), 0.5)), ms(base.mean()));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Hook cost (`clippy-ctl hook claude`, spawned and waited for)\n"
    );
    let _ = writeln!(
        out,
        "{RUNS} runs per subject after {WARM_UP} untimed, interleaved; {cpus} CPUs, Linux {kernel}; \
         {:.0} s. Per call, in milliseconds; ratios over `/bin/true` in the same run.\n",
        took.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "| subject | p50 ms | p90 ms | p99 ms | max ms | mean ms | p50 / true | mean / true |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut worst: f64 = 0.0;
    for subject in subjects {
        let sorted = subject.sorted();
        let (p50, p90, p99) = (
            ms(percentile(&sorted, 0.5)),
            ms(percentile(&sorted, 0.9)),
            ms(percentile(&sorted, 0.99)),
        );
        let max = sorted.last().copied().map_or(0.0, ms);
        let mean = ms(subject.mean());
        if subject.unreachable {
            worst = worst.max(p99);
        }
        let _ = writeln!(
            out,
            "| {} | {p50:.2} | {p90:.2} | {p99:.2} | {max:.2} | {mean:.2} | {:.2} | {:.2} |",
            subject.label,
            p50 / base_p50,
            mean / base_mean
        );
    }
    let _ = writeln!(
        out,
        "\nTarget: under {TARGET_MS:.0} ms per hook call with clippy unreachable; the worst p99 of \
         those subjects is {worst:.2} ms ({}).",
        if worst < TARGET_MS { "met" } else { "NOT met" }
    );
    out
}
