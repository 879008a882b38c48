//! Timed searches for the needle in a spool-like file, shared by the spool-scan benchmark
//! (`benches/spool_scan.rs`, generated files) and the wait-for benchmark (`benches/wait_for.rs`,
//! real spools): `grep -b -F -m1` as a subprocess and `clippy_spool::Scanner` in this process,
//! and the summaries of their timed runs the reports print.

use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use clippy_spool::{Match, Pattern, Scanner};

use crate::wrapper::{Error, median};

/// The one literal the benchmarks look for; no generated word contains `needle`.
pub const NEEDLE: &str = "needle-4711-end";

/// A regex matching [`NEEDLE`] (and nothing else in the generated text).
pub const NEEDLE_REGEX: &str = r"needle-\d+-end";

/// `LC_ALL=C grep -b -F -m1 needle FILE` on `path`, timed (spawn included); checks that the line
/// grep reports starts at most 64 bytes before `needle_at`, the needle's first byte.
///
/// # Errors
/// When grep cannot run, fails, or reports another line.
pub fn time_grep(path: &Path, needle: &str, needle_at: u64) -> Result<Duration, Error> {
    let start = Instant::now();
    let output = Command::new("grep")
        .args(["-b", "-F", "-m1", needle])
        .arg(path)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| format!("cannot run grep: {e}"))?;
    let took = start.elapsed();
    if !output.status.success() {
        return Err(format!("grep failed ({})", output.status).into());
    }
    // `OFFSET:LINE`, OFFSET being the line's first byte.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line_offset: u64 = stdout
        .split_once(':')
        .and_then(|(offset, _)| offset.parse().ok())
        .ok_or_else(|| format!("unexpected grep output: {stdout:?}"))?;
    if !(line_offset <= needle_at && needle_at - line_offset < 64) {
        return Err(
            format!("grep found the line at {line_offset}, the needle is at {needle_at}").into(),
        );
    }
    Ok(took)
}

/// Opens `path` and feeds it to a new scanner for `pattern` in `buffer.len()`-byte `read_at`s
/// into `buffer` until the first match: how long that took, and the match (`None` at the end of
/// the file).
///
/// # Errors
/// When the file cannot be opened or read.
pub fn time_scanner(
    path: &Path,
    pattern: &Pattern,
    buffer: &mut [u8],
) -> Result<(Duration, Option<Match>), Error> {
    let start = Instant::now();
    let file = File::open(path)?;
    let mut scanner = Scanner::new(pattern.clone(), 0);
    let mut offset = 0;
    let found = loop {
        let read = file.read_at(buffer, offset)?;
        if read == 0 {
            break None;
        }
        offset += read as u64;
        if let Some(found) = scanner.feed(&buffer[..read]) {
            break Some(found);
        }
    };
    Ok((start.elapsed(), found))
}

/// The fastest of some timed runs (zero when there are none).
pub fn best(runs: &[Duration]) -> Duration {
    runs.iter().copied().min().unwrap_or_default()
}

/// MB/s (10^6 bytes per MB) of reading `bytes` in `took`.
pub fn mb_per_s(bytes: u64, took: Duration) -> f64 {
    bytes as f64 / took.as_secs_f64() / 1e6
}

/// The median of some timed runs, in milliseconds.
pub fn median_ms(runs: &[Duration]) -> f64 {
    let ms: Vec<f64> = runs.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    median(&ms)
}

/// The "ratio to grep" cell of a results table: a subject's MB/s over grep's on the same file;
/// `1` for grep itself, `—` when grep did not run.
pub fn ratio_to_grep(is_grep: bool, mb_per_s: f64, grep_mb_per_s: Option<f64>) -> String {
    match (is_grep, grep_mb_per_s) {
        (true, _) => "1".to_owned(),
        (false, Some(grep)) => format!("{:.2}", mb_per_s / grep),
        (false, None) => "—".to_owned(),
    }
}

/// A row `| file | subject | best ms | median ms | MB/s (best) | ratio | target |` of a results
/// table: the timed `runs` of a search that reads `bytes` (up to the match's end).
pub fn result_row(
    out: &mut String,
    file: &str,
    subject: &str,
    bytes: u64,
    runs: &[Duration],
    ratio: &str,
    target: &str,
) {
    let best = best(runs);
    let _ = writeln!(
        out,
        "| {file} | {subject} | {:.1} | {:.1} | {:.0} | {ratio} | {target} |",
        best.as_secs_f64() * 1e3,
        median_ms(runs),
        mb_per_s(bytes, best),
    );
}

/// ` FILE / SUBJECT: MS, MS, …;`: every one of `runs` in milliseconds (one decimal), in order.
pub fn every_run(out: &mut String, file: &str, subject: &str, runs: &[Duration]) {
    let list: Vec<String> = runs
        .iter()
        .map(|d| format!("{:.1}", d.as_secs_f64() * 1e3))
        .collect();
    let _ = write!(out, " {file} / {subject}: {};", list.join(", "));
}
