//! `clippy-session` against raw PTY relays measured in the same run: throughput of `cat` on a
//! 64 MiB file, and keystroke round-trip latency.
//!
//! Subjects (see `clippy_benches::wrapper`):
//! - **A, raw relay, 1 hop**: `cat FILE` on our PTY, read by this process — no wrapper at all;
//! - **B, wrapper, 2 hops**: `clippy-session --no-broker -- cat FILE`;
//! - **C, raw relay, 2 hops**: `raw-relay -- cat FILE`, a relay that only copies.
//!
//! B/C is the wrapper's cost at the same number of PTY hops (the target: ≥ 0.95, issue 19); B/A
//! adds the price of the second hop, which any PTY wrapper pays. Runs are interleaved (A, B, C,
//! A, B, C…) so drift on a shared VM hits all subjects alike. Latency: `cat` on a raw terminal, directly and
//! under B and C, one byte at a time, in interleaved rounds; the added p50/p99 is a difference of
//! percentiles (target: added p99 ≤ 0.2 ms).
//!
//! The bench builds `clippy-session` itself (`cargo build --release -p clippy-session`), then
//! runs for about 30 s, prints a markdown table and writes it to `target/wrapper-bench.md`. It
//! ignores its arguments (so criterion's, passed to every bench by `cargo bench -- …`, do no
//! harm) and asserts no timing.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use clippy_benches::wrapper::{
    ECHO_SCRIPT, EchoSession, Error, READ_CHUNK, TERMINAL_SIZE, Transfer, command, drain, median,
    percentile, sgr_text,
};
use clippy_benches::{Scratch, build_release, machine, write_report};

/// Size of the file `cat` prints.
const FILE_BYTES: usize = 64 << 20;
/// Timed throughput runs per subject.
const RUNS: usize = 11;
/// Keystroke samples per subject, after [`WARM_UP`] untimed ones.
const SAMPLES: usize = 2000;
/// Untimed keystrokes per subject before sampling.
const WARM_UP: usize = 200;
/// Samples per subject per latency round.
const ROUND: usize = 50;

/// One subject: a name for the table, its PTY hops, and the command prefix that wraps `cat`.
struct Subject {
    label: &'static str,
    hops: u8,
    prefix: Vec<OsString>,
}

impl Subject {
    /// `prefix… argv…` with the scratch runtime dir as `XDG_RUNTIME_DIR` (set for every subject
    /// alike; only the wrapper uses it).
    fn spec<S: AsRef<OsStr>>(&self, argv: &[S], runtime: &Path) -> clippy_pty::CommandSpec {
        let mut full: Vec<OsString> = self.prefix.clone();
        full.extend(argv.iter().map(|a| a.as_ref().to_owned()));
        command(&full)
            .env("XDG_RUNTIME_DIR", runtime)
            .env("XDG_STATE_HOME", Path::new(runtime).join("state"))
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("wrapper bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Error> {
    let started = Instant::now();
    let wrapper = build_release("wrapper bench", "clippy-session")?;
    // tmpfs like /run/user/UID, so the wrapper's spool writes cost what they cost there.
    let scratch = Scratch::create("clippy-wrapper-bench")?;
    let subjects = [
        Subject {
            label: "A raw relay (cat on our PTY)",
            hops: 1,
            prefix: Vec::new(),
        },
        Subject {
            label: "B clippy-session --no-broker",
            hops: 2,
            prefix: vec![wrapper.into(), "--no-broker".into(), "--".into()],
        },
        Subject {
            label: "C raw-relay binary",
            hops: 2,
            prefix: vec![env!("CARGO_BIN_EXE_raw-relay").into(), "--".into()],
        },
    ];

    let throughput = throughput(&subjects, scratch.path())?;
    let latency = latency(&subjects, scratch.path())?;
    drop(scratch);

    let report = report(&subjects, &throughput, &latency, started.elapsed());
    write_report("wrapper bench", "wrapper-bench.md", &report)
}

/// Per subject, the timed runs in order.
type Runs = Vec<Vec<Transfer>>;

fn throughput(subjects: &[Subject], scratch: &Path) -> Result<Runs, Error> {
    let file = scratch.join("input.txt");
    let small = scratch.join("warm-up.txt");
    std::fs::write(&file, sgr_text(FILE_BYTES))?;
    std::fs::write(&small, sgr_text(1 << 20))?;
    let mut sink = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    let cat = |path: &Path| [OsString::from("cat"), path.as_os_str().to_owned()];

    // One untimed pass each: binaries and the file in the page cache.
    for subject in subjects {
        check(
            subject,
            drain(&subject.spec(&cat(&small), scratch), &mut sink)?,
        )?;
    }
    let mut runs: Runs = subjects.iter().map(|_| Vec::new()).collect();
    for run in 0..RUNS {
        for (subject, runs) in subjects.iter().zip(&mut runs) {
            let t = check(
                subject,
                drain(&subject.spec(&cat(&file), scratch), &mut sink)?,
            )?;
            eprintln!(
                "wrapper bench: run {}/{RUNS} {}: {:.1} MiB/s",
                run + 1,
                subject.label,
                mib_per_s(t)
            );
            runs.push(t);
        }
    }
    Ok(runs)
}

fn check(subject: &Subject, t: Transfer) -> Result<Transfer, Error> {
    if t.status.success() {
        Ok(t)
    } else {
        Err(format!("{} ended with {:?}", subject.label, t.status).into())
    }
}

/// The file's size over the run's time.
fn mib_per_s(t: Transfer) -> f64 {
    FILE_BYTES as f64 / t.elapsed.as_secs_f64() / f64::from(1 << 20)
}

/// Per subject, the sorted round trips.
type Latencies = Vec<Vec<Duration>>;

fn latency(subjects: &[Subject], scratch: &Path) -> Result<Latencies, Error> {
    let script = ["sh", "-c", ECHO_SCRIPT];
    let mut sessions = subjects
        .iter()
        .map(|s| EchoSession::start(&s.spec(&script, scratch)))
        .collect::<Result<Vec<_>, _>>()?;
    for session in &mut sessions {
        for _ in 0..WARM_UP {
            session.round_trip()?;
        }
    }
    let mut samples: Latencies = subjects
        .iter()
        .map(|_| Vec::with_capacity(SAMPLES))
        .collect();
    for _ in 0..SAMPLES / ROUND {
        for (session, samples) in sessions.iter_mut().zip(&mut samples) {
            for _ in 0..ROUND {
                samples.push(session.round_trip()?);
            }
        }
    }
    for session in sessions {
        session.finish()?;
    }
    for samples in &mut samples {
        samples.sort_unstable();
    }
    Ok(samples)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn report(subjects: &[Subject], runs: &Runs, latency: &Latencies, took: Duration) -> String {
    let mut out = String::from("# Wrapper benchmark\n\n");
    let (cpus, kernel) = machine();
    let _ = writeln!(
        out,
        "One run of `cargo bench -p clippy-benches --bench wrapper` ({:.0} s; {cpus} CPUs, Linux {}). \
         Every subject is started on the slave of a {TERMINAL_SIZE} PTY standing in for the user's \
         terminal; its master is read by the bench in {} KiB reads into `/dev/null`.\n",
        took.as_secs_f64(),
        kernel,
        READ_CHUNK / 1024,
    );

    let _ = writeln!(
        out,
        "## Throughput\n\n`cat` of a {} MiB file (ASCII lines of 20-100 columns, about one word in \
         eight in an SGR colour); {RUNS} timed runs per subject after one untimed warm-up, \
         interleaved A, B, C, A, B, C…. MiB/s = file size / time from spawn to end of output.\n",
        FILE_BYTES >> 20
    );
    out.push_str(
        "| subject | PTY hops | median MiB/s | min | max | start-up (ms, median) | bytes relayed | bytes per read |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let rates: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| r.iter().map(|&t| mib_per_s(t)).collect())
        .collect();
    for ((subject, runs), rates) in subjects.iter().zip(runs).zip(&rates) {
        let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rates.iter().copied().fold(0.0, f64::max);
        let startup: Vec<f64> = runs
            .iter()
            .map(|t| t.first_byte.as_secs_f64() * 1e3)
            .collect();
        let bytes = runs.first().map_or(0, |t| t.bytes);
        let same = runs.iter().all(|t| t.bytes == bytes);
        let per_read: Vec<f64> = runs
            .iter()
            .map(|t| t.bytes as f64 / t.reads.max(1) as f64)
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {min:.1} | {max:.1} | {:.1} | {bytes}{} | {:.0} |",
            subject.label,
            subject.hops,
            median(rates),
            median(&startup),
            if same { "" } else { " (varies!)" },
            median(&per_read),
        );
    }
    let (a, b, c) = (&rates[0], &rates[1], &rates[2]);
    let paired =
        |x: &[f64], y: &[f64]| -> Vec<f64> { x.iter().zip(y).map(|(x, y)| x / y).collect() };
    let best = |x: &[f64]| x.iter().copied().fold(0.0, f64::max);
    let ratio_row = |name: &str, x: &[f64], y: &[f64], target: &str| {
        let per_run = paired(x, y);
        let min = per_run.iter().copied().fold(f64::INFINITY, f64::min);
        let max = best(&per_run);
        format!(
            "| {name} | {:.3} | {:.3} ({min:.3}–{max:.3}) | {:.3} | {target} |\n",
            median(x) / median(y),
            median(&per_run),
            best(x) / best(y),
        )
    };
    out.push_str(
        "\n| ratio (throughput) | of medians | median of per-round ratios (min–max) | of best runs | target |\n\
         |---|---|---|---|---|\n",
    );
    out.push_str(&ratio_row("B / C (same hops)", b, c, "≥ 0.95"));
    out.push_str(&ratio_row("B / A", b, a, "—"));
    out.push_str(&ratio_row("C / A (cost of the 2nd hop)", c, a, "—"));
    out.push_str(
        "\nEvery run, MiB/s in order (the spread between runs is wide on a shared VM, so \
         compare only within one run):",
    );
    for (subject, rates) in subjects.iter().zip(&rates) {
        let list: Vec<String> = rates.iter().map(|r| format!("{r:.1}")).collect();
        let letter = subject.label.split(' ').next().unwrap_or("?");
        let _ = write!(out, " {letter}: {};", list.join(", "));
    }
    out.pop();
    out.push_str(".\n");
    let relayed = runs.iter().flatten().map(|t| t.bytes);
    if relayed.clone().min() != relayed.max() {
        out.push_str(
            "\n**The runs relayed different byte counts**: some subject is not transparent.\n",
        );
    }

    let _ = writeln!(
        out,
        "\n## Keystroke latency\n\n`sh -c \"{ECHO_SCRIPT}\"` on the PTY, directly and under B and C: \
         one byte written to the master, timed until `cat`'s echo of it is read back (the \
         terminal's own echo is off, so this is the path of a key to a TUI and its redraw back). \
         {SAMPLES} samples per subject after {WARM_UP} warm-up, interleaved in rounds of {ROUND}.\n"
    );
    out.push_str("| subject | p50 µs | p99 µs | max µs |\n|---|---|---|---|\n");
    let labels = [
        "direct (cat on our PTY)",
        subjects[1].label,
        subjects[2].label,
    ];
    for (label, samples) in labels.iter().zip(latency) {
        let _ = writeln!(
            out,
            "| {label} | {:.1} | {:.1} | {:.1} |",
            us(percentile(samples, 0.5)),
            us(percentile(samples, 0.99)),
            us(percentile(samples, 1.0)),
        );
    }
    let added = |x: &[Duration], y: &[Duration]| {
        (
            us(percentile(x, 0.5)) - us(percentile(y, 0.5)),
            us(percentile(x, 0.99)) - us(percentile(y, 0.99)),
        )
    };
    out.push_str(
        "\n| added latency (difference of percentiles) | p50 µs | p99 µs | target |\n|---|---|---|---|\n",
    );
    let (p50, p99) = added(&latency[1], &latency[0]);
    let _ = writeln!(out, "| B vs direct | {p50:+.1} | {p99:+.1} | p99 ≤ +200 |");
    let (p50, p99) = added(&latency[1], &latency[2]);
    let _ = writeln!(out, "| B vs C (same hops) | {p50:+.1} | {p99:+.1} | — |");
    let (p50, p99) = added(&latency[2], &latency[0]);
    let _ = writeln!(
        out,
        "| C vs direct (cost of the 2nd hop) | {p50:+.1} | {p99:+.1} | — |"
    );
    out
}
