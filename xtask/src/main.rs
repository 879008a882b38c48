//! `cargo xtask <command>`: the project's chores, in Rust so they run the same everywhere.
//!
//! - `ci` — format check, clippy, the docs (`cargo doc`, warnings as errors), tests, then a fuzz
//!   smoke run (skipped, saying so, when `cargo +nightly fuzz` is not installed). Stops at the
//!   first failing step with its exit code.
//! - `fuzz [--smoke] [SECONDS]` — every fuzz target for SECONDS (default 60; `--smoke`: 20): those
//!   of `fuzz/` (the pure cores), then those of `fuzz/store/` (the SQLite history store) and
//!   `fuzz/mcp/` (the MCP server).
//! - `bench [CRITERION ARGS…]` — the criterion bench (`cargo bench -p clippy-benches --bench
//!   detector`), then the wrapper bench (`--bench wrapper`: throughput of `clippy-session`
//!   through one PTY hop against plain relays, `raw-relay` and `script`, and keystroke
//!   latency), then the broker bench (`--bench broker`: request
//!   round trips and 4 MiB `get_turn` throughput of `clippy-broker` against bare Unix-socket
//!   servers); prints a table of detector vs baseline ratios (also written to
//!   `target/bench-report.md`), then the reports of the wrapper, broker, spool-scan, wait-for,
//!   hook, attach, mcp, history and dash benches (which they write to `target/*-bench.md`
//!   themselves); the attach bench (`--bench attach`) measures keystroke echo through
//!   `clippy-ctl attach` against the direct wrapper and a 64 MiB burst with reading and stalled
//!   attached clients; the mcp bench (`--bench mcp`) measures `get_turn` and `list_sessions` as
//!   MCP tool calls through `clippy-mcp` against the same requests over a `clippy_proto::Client`
//!   connection; the dash bench (`--bench dash`) the dashboard's frame time with 100 sessions
//!   and 200 events/s and the running dashboard idle.
//! - `soak [--seconds N] [--sessions N] [--clients N] [ARGS…]` — builds `clippy-session`,
//!   `clippy-broker` and the `soak` binary of `clippy-benches` in release, then runs the soak
//!   (defaults: 64 sessions, 8 clients, 60 s; see `benches/src/soak.rs`); it prints a table and
//!   writes `target/soak-report.json` and `target/soak-report.md`. Fails when a turn was lost, a
//!   `wait_for` skipped a marker, a request failed or the broker's memory went over its bound.
//! - `install [--prefix DIR] [--from DIR]` — builds the four binaries in release (or takes them
//!   from `--from DIR`) and installs them in PREFIX/bin (default `~/.local`), with `clippy-ctl`'s
//!   man pages, its bash, zsh and fish completions and the systemd user units, saying what it
//!   did; `uninstall [--prefix DIR]` removes exactly that (see [`install`]).
//!
//! Plain `std::process::Command`s and no argument-parsing crate: the commands are few, and a
//! chore runner should build in seconds.

mod install;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci                       fmt --check, clippy -D warnings, tests, fuzz smoke
  fuzz [--smoke] [SECONDS] run every fuzz target for SECONDS (default 60, --smoke: 20)
  bench [ARGS...]          detector bench [-- ARGS], wrapper and broker benches, their tables
  soak [--seconds N] [--sessions N] [--clients N] [--no-history]
                           release soak: N sessions driven through turns, N clients loading the
                           broker (defaults 60 s, 64, 8; the history store on unless
                           --no-history); target/soak-report.{json,md}
  install [--prefix DIR] [--from DIR]
                           release build; the binaries in DIR/bin (default ~/.local), man pages,
                           shell completions, systemd user units; --from: binaries already built
  uninstall [--prefix DIR] remove what install put there (its manifest)
";

/// Seconds per fuzz target in a smoke run.
const SMOKE_SECONDS: u64 = 20;
/// Seconds per fuzz target by default.
const DEFAULT_SECONDS: u64 = 60;

/// Why a chore stopped: a step that failed (its exit code is passed on) or a usage error.
#[derive(Debug)]
enum Failure {
    /// A command failed; its exit code (1 when it was killed by a signal).
    Step { what: String, code: u8 },
    /// Anything else, with a message.
    Other(String),
}

impl Failure {
    fn other(message: impl Into<String>) -> Self {
        Self::Other(message.into())
    }
}

type Result<T = ()> = std::result::Result<T, Failure>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") if args.len() == 1 => ci(),
        Some("fuzz") => parse_fuzz(&args[1..]).and_then(|secs| fuzz(secs, true)),
        Some("bench") => bench(&args[1..]),
        Some("soak") => soak(&args[1..]),
        Some("install") => install::parse(&args[1..], true).and_then(|o| install::install(&o)),
        Some("uninstall") => install::parse(&args[1..], false).and_then(|o| install::uninstall(&o)),
        Some("help" | "-h" | "--help") => {
            print!("{USAGE}");
            Ok(())
        }
        _ => Err(Failure::other(format!("unknown command\n\n{USAGE}"))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Step { what, code }) => {
            eprintln!("xtask: `{what}` failed (exit code {code})");
            ExitCode::from(code)
        }
        Err(Failure::Other(message)) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: this crate's parent directory.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The cargo target directory (honours `CARGO_TARGET_DIR`).
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

/// `cargo` from `PATH` (the rustup proxy, so `+nightly` works), run in `dir`.
///
/// The variables cargo and rustup set for `cargo run` are removed so each step picks its own
/// toolchain as if typed in a shell.
fn cargo(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.args(args).current_dir(dir);
    for var in [
        "RUSTUP_TOOLCHAIN",
        "CARGO",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `cmd`, echoing it first; a non-zero exit is a [`Failure::Step`].
fn run(mut cmd: Command) -> Result {
    let what = describe(&cmd);
    eprintln!("\n$ {what}");
    let status = cmd
        .status()
        .map_err(|e| Failure::other(format!("cannot run `{what}`: {e}")))?;
    if status.success() {
        return Ok(());
    }
    let code = status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .filter(|&c| c != 0)
        .unwrap_or(1);
    Err(Failure::Step { what, code })
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|s| s.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn ci() -> Result {
    let root = root();
    run(cargo(&root, &["fmt", "--all", "--check"]))?;
    run(cargo(
        &root,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    ))?;
    // `clippy-turn` without its text view (`default-features = false`), as an embedder may take
    // it: its library builds clean too.
    run(cargo(
        &root,
        &[
            "clippy",
            "-p",
            "clippy-turn",
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ],
    ))?;
    // Every public item's docs build, their links resolve (a doc names what exists).
    let mut doc = cargo(&root, &["doc", "--workspace", "--no-deps", "--quiet"]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    run(doc)?;
    run(cargo(&root, &["test", "--workspace"]))?;
    fuzz(SMOKE_SECONDS, false)
}

/// `[--smoke] [SECONDS]` to seconds per target.
fn parse_fuzz(args: &[String]) -> Result<u64> {
    let mut secs = None;
    let mut smoke = false;
    for arg in args {
        match arg.as_str() {
            "--smoke" => smoke = true,
            n => match n.parse::<u64>() {
                Ok(n) if n > 0 && secs.is_none() => secs = Some(n),
                _ => {
                    return Err(Failure::other(format!(
                        "fuzz: bad argument `{n}`\n\n{USAGE}"
                    )));
                }
            },
        }
    }
    Ok(secs.unwrap_or(if smoke {
        SMOKE_SECONDS
    } else {
        DEFAULT_SECONDS
    }))
}

/// Whether `cargo +nightly fuzz` works here.
fn have_cargo_fuzz(fuzz_dir: &Path) -> bool {
    cargo(fuzz_dir, &["+nightly", "fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The fuzz packages, each its own Cargo workspace under the root: `fuzz/` links the pure cores
/// only; `fuzz/store/` is the history store's, the one that links SQLite; `fuzz/mcp/` is the MCP
/// server's, the one that links the MCP SDK and its tokio.
const FUZZ_PACKAGES: [&str; 3] = ["fuzz", "fuzz/store", "fuzz/mcp"];

/// A fuzz package's targets: `<package>/fuzz_targets/*.rs`, by name.
fn fuzz_targets(fuzz_dir: &Path) -> Result<Vec<String>> {
    let dir = fuzz_dir.join("fuzz_targets");
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| Failure::other(format!("cannot list {}: {e}", dir.display())))?;
    let mut targets: Vec<String> = entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.extension()? == "rs").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    targets.sort();
    Ok(targets)
}

/// Runs every fuzz target of every fuzz package for `secs` seconds. Without cargo-fuzz this is
/// an error when asked for directly (`required`) and a clearly reported skip inside `ci`.
fn fuzz(secs: u64, required: bool) -> Result {
    let root = root();
    if !have_cargo_fuzz(&root.join("fuzz")) {
        let message = "`cargo +nightly fuzz` is not available: install a nightly toolchain \
                       (`rustup toolchain install nightly`) and cargo-fuzz (`cargo install cargo-fuzz`)";
        if required {
            return Err(Failure::other(message));
        }
        eprintln!("\nxtask: SKIPPED fuzz smoke: {message}");
        return Ok(());
    }
    let time = format!("-max_total_time={secs}");
    // Prompts, status OSCs and escapes: the fuzzer would take long to find them by mutation.
    let dict = format!("-dict={}", root.join("fuzz/turn.dict").display());
    for package in FUZZ_PACKAGES {
        let fuzz_dir = root.join(package);
        // Named, not found: from `fuzz/store/` or `fuzz/mcp/`, cargo-fuzz would pick `fuzz/`.
        let dir = fuzz_dir.display().to_string();
        for target in fuzz_targets(&fuzz_dir)? {
            run(cargo(
                &fuzz_dir,
                &[
                    "+nightly",
                    "fuzz",
                    "run",
                    "--fuzz-dir",
                    &dir,
                    &target,
                    "--",
                    &time,
                    &dict,
                ],
            ))?;
        }
    }
    Ok(())
}

/// The benches that write a table of their own, and its file in `target/`.
const BENCH_TABLES: [(&str, &str); 9] = [
    ("wrapper", "wrapper-bench.md"),
    ("broker", "broker-bench.md"),
    ("spool_scan", "spool-scan-bench.md"),
    ("wait_for", "wait-for-bench.md"),
    ("hook", "hook-bench.md"),
    ("attach", "attach-bench.md"),
    ("mcp", "mcp-bench.md"),
    ("history", "history-bench.md"),
    ("dash", "dash-bench.md"),
];

/// The criterion bench (with `extra` as its arguments), then the benches of [`BENCH_TABLES`]
/// (which take none); then their tables.
fn bench(extra: &[String]) -> Result {
    let root = root();
    let mut cmd = cargo(
        &root,
        &["bench", "-p", "clippy-benches", "--bench", "detector"],
    );
    if !extra.is_empty() {
        cmd.arg("--").args(extra);
    }
    run(cmd)?;
    // Each of these benches writes its own table; a table left by an earlier run must not pass
    // for this run's.
    let tables: Vec<PathBuf> = BENCH_TABLES
        .iter()
        .map(|(_, table)| target_dir().join(table))
        .collect();
    for path in &tables {
        let _ = std::fs::remove_file(path);
    }
    for (bench, _) in BENCH_TABLES {
        run(cargo(
            &root,
            &["bench", "-p", "clippy-benches", "--bench", bench],
        ))?;
    }
    let results = read_criterion(&target_dir().join("criterion"))?;
    let report = report(&results)?;
    print!("\n{report}");
    let path = target_dir().join("bench-report.md");
    std::fs::write(&path, &report)
        .map_err(|e| Failure::other(format!("cannot write {}: {e}", path.display())))?;
    eprintln!("xtask: wrote {}", path.display());
    for path in &tables {
        let table = std::fs::read_to_string(path)
            .map_err(|e| Failure::other(format!("cannot read {}: {e}", path.display())))?;
        print!("\n{table}");
    }
    Ok(())
}

/// Checks the soak's arguments (flag and value pairs; the soak binary checks the values too).
fn parse_soak(args: &[String]) -> Result<Vec<String>> {
    const FLAGS: [&str; 6] = [
        "--seconds",
        "--sessions",
        "--clients",
        "--ring-depth",
        "--think-ms",
        "--out",
    ];
    // `--no-history` stands alone; every other flag takes a value.
    let valued: Vec<&String> = args.iter().filter(|a| *a != "--no-history").collect();
    if valued.len() % 2 != 0
        || valued
            .chunks(2)
            .any(|pair| !FLAGS.contains(&pair[0].as_str()))
    {
        return Err(Failure::other(format!(
            "soak: bad arguments {args:?}\n\n{USAGE}"
        )));
    }
    Ok(args.to_vec())
}

/// Builds the binaries in release and runs the soak with `args`.
fn soak(args: &[String]) -> Result {
    let args = parse_soak(args)?;
    let root = root();
    run(cargo(
        &root,
        &[
            "build",
            "--release",
            "-p",
            "clippy-session",
            "-p",
            "clippy-broker",
            "-p",
            "clippy-benches",
            "--bin",
            "clippy-session",
            "--bin",
            "clippy-broker",
            "--bin",
            "soak",
        ],
    ))?;
    let release = target_dir().join("release");
    let mut cmd = Command::new(release.join("soak"));
    cmd.args(&args)
        .arg("--bin-dir")
        .arg(&release)
        .current_dir(&root);
    run(cmd)
}

/// One criterion result: the mean time per iteration and the bytes one iteration processes.
#[derive(Debug, Clone, Copy)]
struct Measured {
    mean: Duration,
    bytes: Option<u64>,
}

impl Measured {
    fn mib_per_s(self) -> Option<f64> {
        let secs = self.mean.as_secs_f64();
        self.bytes
            .filter(|_| secs > 0.0)
            .map(|b| b as f64 / secs / (1024.0 * 1024.0))
    }
}

/// Results by group then function id, from `<dir>/*/*/new/{estimates,benchmark}.json`.
type Results = BTreeMap<String, BTreeMap<String, Measured>>;

fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::other(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::other(format!("cannot parse {}: {e}", path.display())))
}

fn read_criterion(dir: &Path) -> Result<Results> {
    let mut results = Results::new();
    let groups = std::fs::read_dir(dir)
        .map_err(|e| Failure::other(format!("no criterion results in {}: {e}", dir.display())))?;
    for group in groups.flatten() {
        let Ok(benches) = std::fs::read_dir(group.path()) else {
            continue;
        };
        for bench in benches.flatten() {
            let new = bench.path().join("new");
            if !new.join("estimates.json").is_file() {
                continue;
            }
            let estimates = read_json(&new.join("estimates.json"))?;
            let Some(mean_ns) = estimates["mean"]["point_estimate"].as_f64() else {
                continue;
            };
            // benchmark.json has the ids as written (directory names may be sanitised).
            let meta = read_json(&new.join("benchmark.json")).unwrap_or_default();
            let name = |key: &str, fallback: &Path| {
                meta[key].as_str().map_or_else(
                    || {
                        fallback
                            .file_name()
                            .unwrap_or_default()
                            .to_string_lossy()
                            .into_owned()
                    },
                    str::to_owned,
                )
            };
            results
                .entry(name("group_id", &group.path()))
                .or_default()
                .insert(
                    name("function_id", &bench.path()),
                    Measured {
                        mean: Duration::from_secs_f64(mean_ns.max(0.0) / 1e9),
                        bytes: meta["throughput"]["Bytes"].as_u64(),
                    },
                );
        }
    }
    Ok(results)
}

/// The baseline for a detector benchmark: the same input, i.e. the id up to the first `-`
/// (`tui-claude` is the `claude` preset on the `tui` input).
fn input_of(id: &str) -> &str {
    id.split_once('-').map_or(id, |(input, _)| input)
}

fn fmt_measured(m: Option<Measured>) -> String {
    match m {
        Some(m) => match m.mib_per_s() {
            Some(rate) => format!("{rate:.1} MiB/s ({:.2} ms)", m.mean.as_secs_f64() * 1e3),
            None => format!("{:.2} ms", m.mean.as_secs_f64() * 1e3),
        },
        None => "—".to_owned(),
    }
}

/// The baseline groups of `benches/benches/detector.rs`, in column order.
const BASELINES: [&str; 2] = ["vte", "memchr"];

/// The markdown table: one row per detector benchmark; for each baseline group, its speed and
/// `baseline time / detector time` (above 1: the detector is faster than that baseline).
fn report(results: &Results) -> Result<String> {
    let detector = results
        .get("detector")
        .ok_or_else(|| Failure::other("no `detector` results under target/criterion"))?;
    let baselines: Vec<(&str, &BTreeMap<String, Measured>)> = BASELINES
        .iter()
        .filter_map(|&group| Some((group, results.get(group)?)))
        .collect();
    let mut out = String::from("# Detector throughput\n\n");
    out.push_str(
        "Throughput and mean time per pass over each input of at least 4 MiB (criterion point \
         estimates, one run). Ratio = baseline time / detector time: above 1 means the detector \
         is faster than the baseline.\n\n| input | detector |",
    );
    for (group, _) in &baselines {
        let _ = write!(out, " {group} | {group} / detector |");
    }
    out.push_str("\n|---|---|");
    for _ in &baselines {
        out.push_str("---|---|");
    }
    out.push('\n');
    for (id, &det) in detector {
        let _ = write!(out, "| {id} | {} |", fmt_measured(Some(det)));
        for (_, group) in &baselines {
            let base = group.get(id).or_else(|| group.get(input_of(id))).copied();
            let ratio = base.map_or_else(
                || "—".to_owned(),
                |b| format!("{:.3}", b.mean.as_secs_f64() / det.mean.as_secs_f64()),
            );
            let _ = write!(out, " {} | {ratio} |", fmt_measured(base));
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ms: u64) -> Measured {
        Measured {
            mean: Duration::from_millis(ms),
            bytes: Some(4 << 20),
        }
    }

    #[test]
    fn fuzz_arguments() {
        let args = |a: &[&str]| parse_fuzz(&a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(args(&[]).ok(), Some(DEFAULT_SECONDS));
        assert_eq!(args(&["--smoke"]).ok(), Some(SMOKE_SECONDS));
        assert_eq!(args(&["--smoke", "5"]).ok(), Some(5));
        assert_eq!(args(&["7"]).ok(), Some(7));
        assert!(args(&["x"]).is_err());
        assert!(args(&["1", "2"]).is_err());
    }

    #[test]
    fn fuzz_packages_split_the_targets() {
        let targets = |package: &str| fuzz_targets(&root().join(package)).expect("fuzz targets");
        let cores = targets(FUZZ_PACKAGES[0]);
        let store = targets(FUZZ_PACKAGES[1]);
        let mcp = targets(FUZZ_PACKAGES[2]);
        assert!(cores.contains(&"broker_state".to_owned()), "{cores:?}");
        assert_eq!(
            store,
            ["history_file", "history_journal"],
            "the history's targets (they link SQLite) are the store's alone"
        );
        assert_eq!(mcp, ["mcp_args"], "the MCP SDK's target is its own");
        assert!(!cores.contains(&"history_file".to_owned()), "{cores:?}");
        assert!(!cores.contains(&"history_journal".to_owned()), "{cores:?}");
        assert!(!cores.contains(&"mcp_args".to_owned()), "{cores:?}");
    }

    #[test]
    fn soak_arguments() {
        let args = |a: &[&str]| parse_soak(&a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert!(args(&[]).is_ok());
        assert!(args(&["--seconds", "30", "--sessions", "4"]).is_ok());
        assert!(args(&["--no-history", "--seconds", "30"]).is_ok());
        assert!(args(&["--seconds"]).is_err());
        assert!(args(&["--bogus", "1"]).is_err());
    }

    #[test]
    fn report_matches_baselines_by_input() {
        let mut results = Results::new();
        let detector = results.entry("detector".into()).or_default();
        detector.insert("tui".into(), m(20));
        detector.insert("tui-claude".into(), m(40));
        results
            .entry("vte".into())
            .or_default()
            .insert("tui".into(), m(10));
        let table = report(&results).expect("report");
        assert!(
            table.contains("| tui | 200.0 MiB/s (20.00 ms) | 400.0 MiB/s (10.00 ms) | 0.500 |")
        );
        assert!(
            table.contains(
                "| tui-claude | 100.0 MiB/s (40.00 ms) | 400.0 MiB/s (10.00 ms) | 0.250 |"
            )
        );
    }
}
