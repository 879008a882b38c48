//! `clippy-session` against plain PTY relays measured in the same run: throughput of `cat` on a
//! 64 MiB file through one PTY hop, and keystroke round-trip latency.
//!
//! **Throughput** (the method `cargo xtask bench` and the README report, issue 29): one PTY hop
//! per subject, `cat FILE` on the subject's PTY, its output relayed into a pipe the bench
//! drains (`clippy_benches::wrapper::pipe_drain`):
//! - **W**: `clippy-session --no-broker -- cat FILE` (detection, live screen and spool on);
//! - **R**: `raw-relay -- cat FILE`, a forkpty relay that only copies;
//! - **S**: util-linux `script -q -e -c "cat FILE" /dev/null`, when installed.
//!
//! - **B**, with `CLIPPY_WRAPPER_BENCH_BASELINE=PATH` set: another build of `clippy-session` (say,
//!   main's, to compare a change with in the same run), started as W; reported against W, and
//!   never taken for a plain relay.
//!
//! Runs are interleaved in rounds so drift on a shared VM hits all alike: per plain relay, W, that
//! relay, then B (W R B W S B), so W and B run as often as the plain relays together. The target
//! (≥ 0.95) is W's best run against the best plain relay's best run **within each round** (as
//! many runs on each side, under the same conditions), the median over the rounds. The best run
//! of the whole bench against the plain relays' is reported beside it, with the medians, the CPU
//! time each subject's processes took per run (which a shared machine's noise moves less than
//! wall time) and, for scale, that same whole-bench figure for the wrapper against itself (its
//! first run of each round against its second): one outlier run moves a whole-bench best by
//! ±10 % on a 2-vCPU VM, which a per-round comparison cancels.
//!
//! **Latency**: `cat` on a raw terminal, directly and under `clippy-session` and `raw-relay`
//! (two PTY hops: the bench's PTY stands in for the user's terminal), one byte at a time, in
//! interleaved rounds; the added p50/p99 is a difference of percentiles (target: added p99 ≤
//! 0.2 ms).
//!
//! The bench builds `clippy-session` itself (`cargo build --release -p clippy-session`), then
//! runs for one to three minutes, prints a markdown table and writes it to
//! `target/wrapper-bench.md`. It ignores its arguments (so criterion's, passed to every bench by
//! `cargo bench -- …`, do no harm) and asserts no timing.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clippy_benches::wrapper::{
    ECHO_SCRIPT, EchoSession, Error, PipeTransfer, READ_CHUNK, TERMINAL_SIZE, command, median,
    percentile, pipe_drain, sgr_text,
};
use clippy_benches::{Scratch, build_release, machine, write_report};

/// Size of the file `cat` prints.
const FILE_BYTES: usize = 64 << 20;
/// Rounds of timed throughput runs (each plain relay runs once per round; W and B once per plain
/// relay).
const ROUNDS: usize = 15;
/// Keystroke samples per subject, after [`WARM_UP`] untimed ones.
const SAMPLES: usize = 2000;
/// Untimed keystrokes per subject before sampling.
const WARM_UP: usize = 200;
/// Samples per subject per latency round.
const ROUND: usize = 50;
/// The target: per round, the wrapper's best run over the best plain relay's (median of the rounds).
const TARGET: f64 = 0.95;

/// A throughput subject: a letter and a name for the table, and how to start it on a file.
struct Relay {
    letter: &'static str,
    label: &'static str,
    /// Whether this is the wrapper (the others are the plain relays it is compared with).
    wrapper: bool,
    /// Whether this is the baseline build of the wrapper (B), compared with W only.
    baseline: bool,
    start: Box<dyn Fn(&Path) -> Command>,
}

impl Relay {
    /// Whether this is one of the plain relays W is measured against.
    fn plain(&self) -> bool {
        !self.wrapper && !self.baseline
    }
}

/// A latency subject: a name for the table and the command prefix that wraps the echo script.
struct Subject {
    label: &'static str,
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
    let runtime = scratch.path().to_owned();

    let relays = relays(&wrapper, &runtime);
    let throughput = throughput(&relays, scratch.path())?;

    let subjects = [
        Subject {
            label: "direct (cat on our PTY)",
            prefix: Vec::new(),
        },
        Subject {
            label: "clippy-session --no-broker",
            prefix: vec![wrapper.clone().into(), "--no-broker".into(), "--".into()],
        },
        Subject {
            label: "raw-relay",
            prefix: vec![env!("CARGO_BIN_EXE_raw-relay").into(), "--".into()],
        },
    ];
    let latency = latency(&subjects, scratch.path())?;
    drop(scratch);

    let report = report(&relays, &throughput, &subjects, &latency, started.elapsed());
    write_report("wrapper bench", "wrapper-bench.md", &report)
}

/// The wrapper, `raw-relay`, and `script` when it is installed; each started the same way
/// (the same environment, in this process's session).
fn relays(wrapper: &Path, runtime: &Path) -> Vec<Relay> {
    let runtime = runtime.to_owned();
    let env = move |mut cmd: Command| {
        cmd.env("XDG_RUNTIME_DIR", &runtime)
            .env("XDG_STATE_HOME", runtime.join("state"));
        cmd
    };
    let mut relays = Vec::new();
    let wrapper = wrapper.to_owned();
    let w_env = env.clone();
    relays.push(Relay {
        letter: "W",
        label: "clippy-session --no-broker",
        wrapper: true,
        baseline: false,
        start: Box::new(move |file| {
            let mut cmd = Command::new(&wrapper);
            cmd.args(["--no-broker", "--", "cat"]).arg(file);
            w_env(cmd)
        }),
    });
    let r_env = env.clone();
    let b_env = env.clone();
    relays.push(Relay {
        letter: "R",
        label: "raw-relay (forkpty, copies only)",
        wrapper: false,
        baseline: false,
        start: Box::new(move |file| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_raw-relay"));
            cmd.args(["--", "cat"]).arg(file);
            r_env(cmd)
        }),
    });
    if let Some(script) = on_path("script") {
        relays.push(Relay {
            letter: "S",
            label: "script -q -e -c (util-linux)",
            wrapper: false,
            baseline: false,
            start: Box::new(move |file| {
                let mut cmd = Command::new(&script);
                // The file's name is ours (no quotes in it): `script` runs the line in a shell.
                cmd.args(["-q", "-e", "-c"])
                    .arg(format!("cat '{}'", file.display()))
                    .arg("/dev/null");
                env(cmd)
            }),
        });
    }
    if let Some(baseline) = std::env::var_os("CLIPPY_WRAPPER_BENCH_BASELINE") {
        let baseline = PathBuf::from(baseline);
        relays.push(Relay {
            letter: "B",
            label: "baseline clippy-session --no-broker ($CLIPPY_WRAPPER_BENCH_BASELINE)",
            wrapper: false,
            baseline: true,
            start: Box::new(move |file| {
                let mut cmd = Command::new(&baseline);
                cmd.args(["--no-broker", "--", "cat"]).arg(file);
                b_env(cmd)
            }),
        });
    }
    relays
}

/// `name` in one of `PATH`'s directories.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Per relay, the timed runs in order.
type Runs = Vec<Vec<PipeTransfer>>;

fn throughput(relays: &[Relay], scratch: &Path) -> Result<Runs, Error> {
    let file = scratch.join("input.txt");
    let small = scratch.join("warm-up.txt");
    std::fs::write(&file, sgr_text(FILE_BYTES))?;
    std::fs::write(&small, sgr_text(1 << 20))?;

    // One untimed pass each: binaries and the file in the page cache.
    for relay in relays {
        check(relay, pipe_drain(&mut (relay.start)(&small))?)?;
    }
    let mut runs: Runs = relays.iter().map(|_| Vec::new()).collect();
    for round in 0..ROUNDS {
        for subject in round_order(relays) {
            let relay = &relays[subject];
            let t = check(relay, pipe_drain(&mut (relay.start)(&file))?)?;
            eprintln!(
                "wrapper bench: round {}/{ROUNDS} {} {}: {:.1} MiB/s, {:.2} s of CPU",
                round + 1,
                relay.letter,
                relay.label,
                mib_per_s(t),
                t.cpu.as_secs_f64(),
            );
            runs[subject].push(t);
        }
    }
    Ok(runs)
}

/// The subjects of one round, as indices into `relays`: per plain relay, W, that relay, then B;
/// so W (and B) run as often as the plain relays together.
fn round_order(relays: &[Relay]) -> Vec<usize> {
    let find = |pick: fn(&Relay) -> bool| relays.iter().position(pick);
    let wrapper = find(|r| r.wrapper);
    let baseline = find(|r| r.baseline);
    (0..relays.len())
        .filter(|&p| relays[p].plain())
        .flat_map(|p| [wrapper, Some(p), baseline].into_iter().flatten())
        .collect()
}

/// How many runs `relay` has in each round of [`round_order`].
fn runs_per_round(relays: &[Relay], relay: &Relay) -> usize {
    if relay.plain() {
        1
    } else {
        relays.iter().filter(|r| r.plain()).count()
    }
}

fn check(relay: &Relay, t: PipeTransfer) -> Result<PipeTransfer, Error> {
    if t.success {
        Ok(t)
    } else {
        Err(format!("{} failed", relay.label).into())
    }
}

/// The file's size over the run's time.
fn mib_per_s(t: PipeTransfer) -> f64 {
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

fn best(x: &[f64]) -> f64 {
    x.iter().copied().fold(0.0, f64::max)
}

fn least(x: &[f64]) -> f64 {
    x.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The load average over the last minute, as `/proc/loadavg` has it ("?" when unknown).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn report(
    relays: &[Relay],
    runs: &Runs,
    subjects: &[Subject],
    latency: &Latencies,
    took: Duration,
) -> String {
    let mut out = String::from("# Wrapper benchmark\n\n");
    let (cpus, kernel) = machine();
    let _ = writeln!(
        out,
        "One run of `cargo bench -p clippy-benches --bench wrapper` ({:.0} s; {cpus} CPUs, Linux {}; \
         load average {} at the end).\n",
        took.as_secs_f64(),
        kernel,
        load_average(),
    );

    let _ = writeln!(
        out,
        "## Throughput: one PTY hop\n\n`cat` of a {} MiB file (ASCII lines of 20-100 columns, \
         about one word in eight in an SGR colour) on the subject's PTY ({TERMINAL_SIZE}, since \
         stdin is no terminal), relayed to its stdout, a pipe this bench drains in {} KiB reads. \
         {ROUNDS} interleaved rounds after one untimed warm-up each: per plain relay, W, that \
         relay, then B, so W and B run as often as the plain relays together. MiB/s = file \
         size / time from spawn to the end of output; CPU = user + system time of the subject \
         and its `cat`.\n",
        FILE_BYTES >> 20,
        READ_CHUNK / 1024,
    );
    out.push_str(
        "| subject | best MiB/s | median | min | CPU s per run (median) | bytes relayed |\n\
         |---|---|---|---|---|---|\n",
    );
    let rates: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| r.iter().map(|&t| mib_per_s(t)).collect())
        .collect();
    let cpus: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| r.iter().map(|t| t.cpu.as_secs_f64()).collect())
        .collect();
    for (((relay, runs), rates), cpu) in relays.iter().zip(runs).zip(&rates).zip(&cpus) {
        let bytes = runs.first().map_or(0, |t| t.bytes);
        let same = runs.iter().all(|t| t.bytes == bytes);
        let _ = writeln!(
            out,
            "| {} {} | {:.1} | {:.1} | {:.1} | {:.2} | {bytes}{} |",
            relay.letter,
            relay.label,
            best(rates),
            median(rates),
            least(rates),
            median(cpu),
            if same { "" } else { " (varies!)" },
        );
    }
    let wrapper = relays.iter().position(|r| r.wrapper).unwrap_or(0);
    let plain: Vec<usize> = (0..relays.len()).filter(|&i| relays[i].plain()).collect();
    // The best plain relay: the one with the best run.
    let Some(&baseline) = plain
        .iter()
        .max_by(|&&a, &&b| best(&rates[a]).total_cmp(&best(&rates[b])))
    else {
        return out;
    };
    let (w, b) = (&rates[wrapper], &rates[baseline]);
    let plain_runs: usize = plain.iter().map(|&p| rates[p].len()).sum();
    // Per round, W's best run of the round against the best plain relay run of that round.
    let rounds = |subject: usize| -> Vec<f64> {
        let per = runs_per_round(relays, &relays[subject]);
        rates[subject].chunks(per).map(best).collect()
    };
    let w_rounds = rounds(wrapper);
    let per_round: Vec<f64> = w_rounds
        .iter()
        .enumerate()
        .map(|(i, w)| w / plain.iter().map(|&p| rates[p][i]).fold(0.0, f64::max))
        .collect();
    let cpu_ratio = median(&cpus[wrapper]) / median(&cpus[baseline]);
    let ratio = median(&per_round);
    let _ = writeln!(
        out,
        "\n| ratio (throughput, W against the plain relays) | figure | target |\n|---|---|---|\n\
         | per round, W's best run over the best plain relay's best run, median of {ROUNDS} rounds \
         (min–max) | **{ratio:.3}** ({:.3}–{:.3}) | ≥ {TARGET} ({}) |\n\
         | of the whole bench's best runs ({} runs of W, {} of the plain relays; the best relay {}) \
         | {:.3} | — |\n\
         | of medians, W over {} | {:.3} | — |\n\
         | CPU per run, W over {} (medians) | {cpu_ratio:.2} | — |",
        least(&per_round),
        best(&per_round),
        if ratio >= TARGET { "met" } else { "**missed**" },
        w.len(),
        plain_runs,
        relays[baseline].letter,
        best(w) / best(b),
        relays[baseline].letter,
        median(w) / median(b),
        relays[baseline].letter,
    );
    let w_per_round = runs_per_round(relays, &relays[wrapper]);
    if w_per_round >= 2 {
        // The same program against itself: how far apart two whole-bench bests fall.
        let nth =
            |n: usize| -> Vec<f64> { w.iter().copied().skip(n).step_by(w_per_round).collect() };
        let (first, second) = (nth(0), nth(1));
        let _ = writeln!(
            out,
            "| for scale: W against itself, its first run of each round over its second: of the \
             whole bench's best runs, of medians | {:.3}, {:.3} | — |",
            best(&first) / best(&second),
            median(&first) / median(&second),
        );
    }
    if let Some(b) = relays.iter().position(|r| r.baseline) {
        let b_rounds = rounds(b);
        let per_round: Vec<f64> = w_rounds.iter().zip(&b_rounds).map(|(w, b)| w / b).collect();
        let _ = writeln!(
            out,
            "| W over B (the baseline wrapper, as many runs): of the whole bench's best runs, of \
             medians, per round median (min–max), CPU per run (medians) | {:.3}, {:.3}, {:.3} \
             ({:.3}–{:.3}), {:.2} | — |",
            best(w) / best(&rates[b]),
            median(w) / median(&rates[b]),
            median(&per_round),
            least(&per_round),
            best(&per_round),
            median(&cpus[wrapper]) / median(&cpus[b]),
        );
    }
    out.push_str(
        "\nEvery run, MiB/s in order (the spread between runs is wide on a shared VM, so \
         compare only within one run):",
    );
    for (relay, rates) in relays.iter().zip(&rates) {
        let list: Vec<String> = rates.iter().map(|r| format!("{r:.1}")).collect();
        let _ = write!(out, " {}: {};", relay.letter, list.join(", "));
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
        "\n## Keystroke latency\n\n`sh -c \"{ECHO_SCRIPT}\"` on a PTY of this bench, directly and \
         under `clippy-session` and `raw-relay` (two PTY hops then: this bench's PTY stands in \
         for the user's terminal): one byte written to the master, timed until `cat`'s echo of \
         it is read back (the terminal's own echo is off, so this is the path of a key to a TUI \
         and its redraw back). {SAMPLES} samples per subject after {WARM_UP} warm-up, \
         interleaved in rounds of {ROUND}.\n"
    );
    out.push_str("| subject | p50 µs | p99 µs | max µs |\n|---|---|---|---|\n");
    for (subject, samples) in subjects.iter().zip(latency) {
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} |",
            subject.label,
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
    let _ = writeln!(
        out,
        "| clippy-session vs direct | {p50:+.1} | {p99:+.1} | p99 ≤ +200 |"
    );
    let (p50, p99) = added(&latency[1], &latency[2]);
    let _ = writeln!(
        out,
        "| clippy-session vs raw-relay (same hops) | {p50:+.1} | {p99:+.1} | — |"
    );
    let (p50, p99) = added(&latency[2], &latency[0]);
    let _ = writeln!(
        out,
        "| raw-relay vs direct (cost of the 2nd hop) | {p50:+.1} | {p99:+.1} | — |"
    );
    out
}
