//! `clippy_spool::Scanner` (what the broker's `wait_for` runs over a spool) against `grep -b -F
//! -m1` on the same file, measured in the same run.
//!
//! Set-up: two spool-like files of about 64 MiB in a scratch directory on tmpfs (like
//! `$XDG_RUNTIME_DIR`, where spools live), each with one unique needle, `needle-4711-end`, about
//! 512 KiB before the end:
//! - **ansi**: what an agent or a shell prints — `\n`-ended lines of ASCII words and some UTF-8,
//!   about one word in five in an SGR colour, prompts in colour, now and then a cursor or erase
//!   CSI, and an OSC window title every few hundred lines. The needle itself is coloured, so grep
//!   finds it as plain bytes and the scanner has escapes on both sides of it.
//! - **plain**: the same kind of lines without any escape.
//!
//! Subjects, each timed from start to the first match (file open and reads included):
//! - **grep**: `grep -b -F -m1 NEEDLE FILE` as a subprocess, with `LC_ALL=C` (its fastest
//!   locale); its wall time, spawn included. Skipped, with a message, when there is no `grep`.
//! - **scanner, literal**: `Scanner` fed the file in 1 MiB chunks read with `read_at` into one
//!   reused buffer, with `Pattern::literal(NEEDLE)`;
//! - **scanner, regex**: the same with `Pattern::regex(r"needle-\d+-end")`.
//!
//! Every subject runs once untimed, then [`RUNS`] times, interleaved. MB/s = bytes up to the end
//! of the match (10^6 bytes per MB) / best run; the ratio is scanner MB/s / grep MB/s on the same
//! file (target of issue #4: ≥ 0.5 for the literal). Every run's result is checked: grep's line
//! offset and the scanner's span must point at the needle.
//!
//! It prints a markdown report and writes it to `target/spool-scan-bench.md`; about 10 s. It
//! ignores its arguments and asserts no timing.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use clippy_benches::search::{
    NEEDLE, NEEDLE_REGEX, best, every_run, mb_per_s, ratio_to_grep, result_row, time_grep,
    time_scanner,
};
use clippy_benches::wrapper::Error;
use clippy_benches::{Rng, Scratch, machine, write_report};
use clippy_spool::Pattern;

/// Size of each generated file (about: it ends on a line end).
const FILE_BYTES: usize = 64 << 20;
/// Where the needle goes: this many bytes before the end.
const NEEDLE_FROM_END: usize = 512 << 10;
/// Bytes per read, fed to the scanner as one chunk.
const CHUNK: usize = 1 << 20;
/// Timed runs per subject.
const RUNS: usize = 9;

fn main() {
    if let Err(e) = run() {
        eprintln!("spool scan bench: {e}");
        std::process::exit(1);
    }
}

/// A generated file and where its needle is.
struct Input {
    name: &'static str,
    description: &'static str,
    path: std::path::PathBuf,
    bytes: u64,
    /// Spool offsets of the needle's first byte and just past its last.
    needle: (u64, u64),
    /// Bytes inside escape sequences.
    escape_bytes: u64,
}

/// How a subject searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Searcher {
    Grep,
    ScannerLiteral,
    ScannerRegex,
}

impl Searcher {
    fn label(self) -> &'static str {
        match self {
            Searcher::Grep => "grep -b -F -m1",
            Searcher::ScannerLiteral => "Scanner, literal",
            Searcher::ScannerRegex => "Scanner, regex",
        }
    }
}

/// One subject: a searcher on an input, and its timed runs in order.
struct Subject<'a> {
    input: &'a Input,
    searcher: Searcher,
    runs: Vec<Duration>,
}

impl Subject<'_> {
    fn best(&self) -> Duration {
        best(&self.runs)
    }

    /// MB/s of the best run: the bytes a search must read (up to the match's end) per second.
    fn mb_per_s(&self) -> f64 {
        mb_per_s(self.input.needle.1, self.best())
    }
}

fn run() -> Result<(), Error> {
    let started = Instant::now();
    let scratch = Scratch::create("clippy-spool-scan-bench")?;
    let inputs = [
        write_input(scratch.path(), "ansi", true)?,
        write_input(scratch.path(), "plain", false)?,
    ];
    let grep = grep_works(&inputs[1]);
    if let Err(e) = &grep {
        eprintln!("spool scan bench: skipping grep: {e}");
    }
    let literal = Pattern::literal(NEEDLE)?;
    let regex = Pattern::regex(NEEDLE_REGEX)?;
    let mut buffer = vec![0; CHUNK];

    let mut subjects = Vec::new();
    for input in &inputs {
        if grep.is_ok() {
            subjects.push(Subject {
                input,
                searcher: Searcher::Grep,
                runs: Vec::new(),
            });
        }
        for searcher in [Searcher::ScannerLiteral, Searcher::ScannerRegex] {
            subjects.push(Subject {
                input,
                searcher,
                runs: Vec::new(),
            });
        }
    }
    // One untimed round (files in the page cache, grep's binary too), then the timed ones.
    for round in 0..=RUNS {
        for subject in &mut subjects {
            let took = match subject.searcher {
                Searcher::Grep => run_grep(subject.input)?,
                Searcher::ScannerLiteral => run_scanner(subject.input, &literal, &mut buffer)?,
                Searcher::ScannerRegex => run_scanner(subject.input, &regex, &mut buffer)?,
            };
            if round > 0 {
                subject.runs.push(took);
            }
        }
        eprintln!("spool scan bench: round {round}/{RUNS} done");
    }
    drop(scratch);

    let report = report(&inputs, &subjects, grep.err(), started.elapsed());
    write_report("spool scan bench", "spool-scan-bench.md", &report)
}

const WORDS: &[&str] = &[
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet,",
    "cargo",
    "build",
    "--release",
    "Compiling",
    "clippy-spool",
    "v0.1.0",
    "warning:",
    "unused",
    "variable",
    "src/main.rs:42:7",
    "=>",
    "fn",
    "let",
    "mut",
    "Ok(())",
    "tests",
    "passed;",
    "0",
    "failed;",
    "finished",
    "in",
    "1.23s",
    "→",
    "✳",
    "é",
    "日本語",
    "❯",
    "⎿",
    "·",
    "│",
    "✔",
    "done",
];

/// Colours and styles an agent or a shell wraps words in.
const SGR: &[&str] = &[
    "\x1b[1m",
    "\x1b[2m",
    "\x1b[31m",
    "\x1b[32m",
    "\x1b[1;33m",
    "\x1b[34m",
    "\x1b[38;5;208m",
    "\x1b[38;2;215;119;87m",
    "\x1b[7m",
];

/// Other escapes now and then: cursor hide/show, erase line, a window title (OSC, BEL-ended and
/// ST-ended).
const OTHER_ESCAPES: &[&str] = &[
    "\x1b[?25l",
    "\x1b[?25h",
    "\x1b[2K",
    "\x1b[K",
    "\x1b]0;agent: working\x07",
    "\x1b]2;~/src/clippy\x1b\\",
];

/// Generates about [`FILE_BYTES`] of lines (with escapes or not), the needle in a line of its own
/// [`NEEDLE_FROM_END`] before the end, and writes them to `dir/<name>.spool`.
fn write_input(dir: &Path, name: &'static str, escapes: bool) -> Result<Input, Error> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut out = Vec::with_capacity(FILE_BYTES + 4096);
    let mut escape_bytes = 0;
    let mut needle = None;
    let mut push_escape = |out: &mut Vec<u8>, escape: &str| {
        if escapes {
            out.extend_from_slice(escape.as_bytes());
            escape_bytes += escape.len() as u64;
        }
    };
    let mut line = 0usize;
    while out.len() < FILE_BYTES {
        line += 1;
        if needle.is_none() && out.len() >= FILE_BYTES - NEEDLE_FROM_END {
            out.extend_from_slice(b"result: ");
            push_escape(&mut out, "\x1b[1;32m");
            let start = out.len() as u64;
            out.extend_from_slice(NEEDLE.as_bytes());
            needle = Some((start, out.len() as u64));
            push_escape(&mut out, "\x1b[0m");
            out.push(b'\n');
            continue;
        }
        if line % 40 == 0 {
            // A prompt.
            push_escape(&mut out, "\x1b[1;34m");
            out.extend_from_slice("~/src/clippy".as_bytes());
            push_escape(&mut out, "\x1b[0m");
            out.push(b' ');
            push_escape(&mut out, "\x1b[32m");
            out.extend_from_slice("❯".as_bytes());
            push_escape(&mut out, "\x1b[0m");
            out.extend_from_slice(b" cargo test\n");
            continue;
        }
        if rng.below(16) == 0 {
            push_escape(&mut out, rng.pick(OTHER_ESCAPES));
        }
        let width = 20 + rng.below(80);
        let start = out.len();
        while out.len() - start < width {
            if out.len() > start {
                out.push(b' ');
            }
            let word = rng.pick(WORDS);
            if rng.below(5) == 0 {
                push_escape(&mut out, rng.pick(SGR));
                out.extend_from_slice(word.as_bytes());
                push_escape(&mut out, "\x1b[0m");
            } else {
                out.extend_from_slice(word.as_bytes());
            }
        }
        out.push(b'\n');
    }
    let needle = needle.ok_or("the needle was not placed")?;
    let path = dir.join(format!("{name}.spool"));
    std::fs::write(&path, &out)?;
    Ok(Input {
        name,
        description: if escapes {
            "ANSI-coloured lines (SGR, some CSI and OSC titles), some UTF-8"
        } else {
            "the same kind of lines, no escapes"
        },
        path,
        bytes: out.len() as u64,
        needle,
        escape_bytes,
    })
}

/// Whether `grep` runs and finds the needle in `input`.
fn grep_works(input: &Input) -> Result<(), Error> {
    run_grep(input).map(drop)
}

/// `grep -b -F -m1 NEEDLE FILE`, timed; checks that the line grep reports holds the needle.
fn run_grep(input: &Input) -> Result<Duration, Error> {
    time_grep(&input.path, NEEDLE, input.needle.0)
}

/// Opens `input` and feeds it to a new scanner for `pattern` in [`CHUNK`]-byte reads into
/// `buffer` until the first match; timed, and the match checked.
fn run_scanner(input: &Input, pattern: &Pattern, buffer: &mut [u8]) -> Result<Duration, Error> {
    let (took, found) = time_scanner(&input.path, pattern, buffer)?;
    let found = found.ok_or("the scanner found no match")?;
    if found.span != input.needle || found.text != NEEDLE {
        return Err(format!(
            "the scanner found {:?} at {:?}, the needle is at {:?}",
            found.text, found.span, input.needle
        )
        .into());
    }
    Ok(took)
}

fn report(
    inputs: &[Input],
    subjects: &[Subject<'_>],
    grep_skipped: Option<Error>,
    took: Duration,
) -> String {
    let mut out = String::from("# Spool scan benchmark\n\n");
    let (cpus, kernel) = machine();
    let _ = writeln!(
        out,
        "One run of `cargo bench -p clippy-benches --bench spool_scan` ({:.0} s; {cpus} CPUs, \
         Linux {}). Files on tmpfs; the needle `{NEEDLE}` is {} KiB before the end of each. \
         grep: `LC_ALL=C grep -b -F -m1 {NEEDLE} FILE` as a subprocess (wall time, spawn \
         included). Scanner: the file opened and fed in {} MiB `read_at`s into a reused buffer \
         until the first match (literal `{NEEDLE}`, or regex `{NEEDLE_REGEX}`). One untimed \
         round, then {RUNS} rounds, every subject once per round. MB/s = bytes up to the match's \
         end (10^6 per MB) / best run.\n",
        took.as_secs_f64(),
        kernel,
        NEEDLE_FROM_END >> 10,
        CHUNK >> 20,
    );
    if let Some(e) = grep_skipped {
        let _ = writeln!(out, "**grep was skipped**: {e}\n");
    }
    out.push_str("| file | bytes | escape bytes | what |\n|---|---|---|---|\n");
    for input in inputs {
        let _ = writeln!(
            out,
            "| {} | {} | {} ({:.1} %) | {} |",
            input.name,
            input.bytes,
            input.escape_bytes,
            input.escape_bytes as f64 * 100.0 / input.bytes as f64,
            input.description,
        );
    }
    out.push_str(
        "\n| file | subject | best ms | median ms | MB/s (best) | ratio to grep (MB/s) | target |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for subject in subjects {
        let grep = subjects
            .iter()
            .find(|s| s.searcher == Searcher::Grep && std::ptr::eq(s.input, subject.input));
        let ratio = ratio_to_grep(
            subject.searcher == Searcher::Grep,
            subject.mb_per_s(),
            grep.map(Subject::mb_per_s),
        );
        let target = if subject.searcher == Searcher::ScannerLiteral {
            "≥ 0.5"
        } else {
            "—"
        };
        result_row(
            &mut out,
            subject.input.name,
            subject.searcher.label(),
            subject.input.needle.1,
            &subject.runs,
            &ratio,
            target,
        );
    }
    out.push_str("\nEvery run, ms in order (compare only within one run on a shared VM):");
    for subject in subjects {
        every_run(
            &mut out,
            subject.input.name,
            subject.searcher.label(),
            &subject.runs,
        );
    }
    out.pop();
    out.push_str(".\n");
    out
}
