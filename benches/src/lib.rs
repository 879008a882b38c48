//! Inputs and workloads for clippy's benchmarks.
//!
//! The generators are deterministic (a fixed-seed xorshift, no clock, no `rand`), so every run
//! measures the same bytes and results from different runs compare. Each workload is a plain
//! function over the input cut into [`CHUNK`]-byte pieces, the size a PTY read typically
//! returns, so the bench file only wires them into criterion and a profiler can call them
//! directly.
//!
//! The baselines ([`vte_baseline`], [`newline_baseline`]) bound what detection can cost: `vte`
//! is the escape parser the detector's line view is built on, so `detector / vte` is the price
//! of line assembly and prompt matching; `memchr` is about as fast as any pass over the bytes can go.
//!
//! [`wrapper`] holds the workloads of the wrapper benchmark (`benches/wrapper.rs`): bytes through
//! a PTY with and without `clippy-session` in the way, and keystroke round trips. [`broker`]
//! holds those of the broker benchmark (`benches/broker.rs`): request round trips to a real
//! `clippy-broker` and to a bare Unix-socket server. [`soak`] is the soak test (`cargo xtask soak`,
//! `tests/soak_short.rs`): many wrapped sessions driven through turns under client load.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use clippy_turn::{DetectorConfig, Preset, TurnDetector};

pub mod broker;
pub mod search;
pub mod soak;
pub mod wrapper;

/// How much of each input the benchmarks feed: 4 MiB.
pub const INPUT_BYTES: usize = 4 * 1024 * 1024;

/// Bytes per `feed_output` call: what one PTY read typically returns.
pub const CHUNK: usize = 4096;

/// A fixed-seed xorshift64: deterministic inputs without a `rand` dependency. The seed must not
/// be zero.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number of the sequence.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (`n > 0`); the slight modulo bias does not matter here.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `words` (not empty), picked at random.
    pub fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.below(words.len())]
    }
}

pub(crate) const LOREM: &[&str] = &[
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet,",
    "consectetur",
    "adipiscing",
    "elit,",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua.",
    "Ut",
    "enim",
    "ad",
    "minim",
    "veniam,",
    "quis",
    "nostrud",
    "exercitation",
    "ullamco",
    "laboris",
    "nisi",
    "aliquip",
    "ex",
    "ea",
    "commodo",
    "consequat.",
];

/// Lines of `words` joined by spaces, each 20-100 columns, ended by `\r\n`, until at least
/// `len` bytes; the result is cut back to `len` at a line end (so it stays valid UTF-8).
fn lines(seed: u64, len: usize, words: &[&str], sep: &str) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut out = String::with_capacity(len + 256);
    while out.len() < len {
        let width = 20 + rng.below(80);
        let start = out.len();
        out.push_str(rng.pick(words));
        while out.len() - start < width {
            out.push_str(sep);
            out.push_str(rng.pick(words));
        }
        out.push_str("\r\n");
    }
    let mut out = out.into_bytes();
    if let Some(end) = out[..len.min(out.len())].iter().rposition(|&b| b == b'\n') {
        out.truncate(end + 1);
    }
    out
}

/// About `len` bytes of plain ASCII: lorem-ipsum lines ended by `\r\n`, as a program printing
/// prose to a terminal writes them. No escapes, no prompts.
pub fn ascii_text(len: usize) -> Vec<u8> {
    lines(0x9e37_79b9_7f4a_7c15, len, LOREM, " ")
}

const WIDE: &[&str] = &[
    "日本語",
    "の文章",
    "中文字符",
    "한국어",
    "テスト",
    "🙂",
    "🚀",
    "👩‍💻",
    "✨",
    "🦀",
    "│",
    "─────",
    "┌──┐",
    "└──┘",
    "╭─╮",
    "╰─╯",
    "├",
    "┤",
    "═══",
    "║",
    "é",
    "ñ",
    "→",
    "✳",
    "❯",
    "⎿",
    "·",
];

/// About `len` bytes of UTF-8-heavy text: CJK, emoji (including a ZWJ sequence), box drawing and
/// the symbols agent TUIs draw with, in `\r\n`-ended lines. Almost every byte is part of a
/// multi-byte character, so this measures the UTF-8 decoding paths.
pub fn utf8_text(len: usize) -> Vec<u8> {
    lines(0xdead_beef_cafe_f00d, len, WIDE, "")
}

/// The directory of recorded agent sessions: `crates/clippy-turn/tests/corpus`, found from
/// this crate's manifest directory at run time (the recordings are not compiled in).
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/clippy-turn/tests/corpus")
}

/// ANSI-heavy TUI output: every `*.out` recording in `dir` (raw bytes real agents wrote to
/// their terminal), concatenated in name order and repeated until at least `len` bytes.
///
/// # Errors
/// If `dir` cannot be read, or holds no non-empty `*.out` file.
pub fn tui_output(dir: &Path, len: usize) -> io::Result<Vec<u8>> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "out") {
            paths.push(path);
        }
    }
    paths.sort();
    let mut once = Vec::new();
    for path in &paths {
        once.extend_from_slice(&std::fs::read(path)?);
    }
    if once.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no recordings (*.out) in {}", dir.display()),
        ));
    }
    let mut out = Vec::with_capacity(len + once.len());
    while out.len() < len {
        out.extend_from_slice(&once);
    }
    Ok(out)
}

/// The workspace root: this crate's parent directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The cargo target directory (honours `CARGO_TARGET_DIR`, relative to the workspace root).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    }
}

/// Prints a benchmark's markdown `report` and writes it to `target/<file>`; `bench` names the
/// caller in the progress line.
///
/// # Errors
/// When the file cannot be written.
pub fn write_report(bench: &str, file: &str, report: &str) -> Result<(), wrapper::Error> {
    print!("\n{report}");
    let path = target_dir().join(file);
    std::fs::write(&path, report).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("{bench}: wrote {}", path.display());
    Ok(())
}

/// The machine a report was measured on: the number of CPUs (0 when unknown) and the kernel
/// release (empty when unknown).
pub fn machine() -> (usize, String) {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    (cpus, kernel.trim().to_owned())
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock `wait-for-child` stamps its lines with (the one
/// `std::time::Instant` uses on Linux).
///
/// # Panics
/// If the clock cannot be read.
pub fn monotonic_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec()).unwrap_or(0)
}

/// Builds the binary `package` (a workspace binary crate named like its binary) in release mode
/// with the cargo running the bench (`$CARGO`), and returns its path. `bench` names the caller in
/// the progress line.
///
/// # Errors
/// When cargo cannot run, the build fails, or the binary is not where it should be.
pub fn build_release(bench: &str, package: &str) -> Result<PathBuf, wrapper::Error> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("{bench}: cargo build --release -p {package}");
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", package])
        .current_dir(workspace_root())
        .status()?;
    if !status.success() {
        return Err(format!("building {package} failed ({status})").into());
    }
    let path = target_dir().join("release").join(package);
    if !path.is_file() {
        return Err(format!("{} was not built", path.display()).into());
    }
    Ok(path)
}

/// A scratch directory (mode 0700) on tmpfs when there is one (`/dev/shm`, like
/// `/run/user/UID`), removed with its contents when dropped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// Creates `<tmpfs>/<name>-<pid>`.
    ///
    /// # Errors
    /// When the directory cannot be created (it must not exist).
    pub fn create(name: &str) -> io::Result<Self> {
        let base = Path::new("/dev/shm");
        let base = if base.is_dir() {
            base.to_owned()
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("{name}-{}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Scratch(dir))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Feeds `bytes` in [`CHUNK`]-byte pieces to a new detector for `preset`, as a session would;
/// returns the number of events, so the work cannot be optimised away.
pub fn detect(preset: &Preset, bytes: &[u8]) -> usize {
    let mut detector = TurnDetector::new(DetectorConfig::new(preset.clone()));
    let mut events = 0;
    for chunk in bytes.chunks(CHUNK) {
        events += detector.feed_output(chunk).count();
    }
    events
}

/// [`detect`], with the live screen rendered after every chunk, as the session's tap does
/// whenever it has caught up with the PTY: the tap's whole cost when it is never behind.
pub fn detect_rendering(preset: &Preset, bytes: &[u8]) -> usize {
    let mut detector = TurnDetector::new(DetectorConfig::new(preset.clone()));
    let mut events = 0;
    for chunk in bytes.chunks(CHUNK) {
        events += detector.feed_output(chunk).count();
        while detector.catch_up_screen() {}
    }
    events
}

/// A `vte::Perform` that does nothing: what parsing alone costs.
#[derive(Debug, Default)]
struct Discard;

impl vte::Perform for Discard {}

/// Baseline: the same pieces through a bare `vte::Parser` with an empty [`vte::Perform`].
pub fn vte_baseline(bytes: &[u8]) -> usize {
    let mut parser = vte::Parser::new();
    let mut performer = Discard;
    for chunk in bytes.chunks(CHUNK) {
        parser.advance(&mut performer, chunk);
    }
    bytes.len()
}

/// Baseline: counting line feeds with `memchr`, over the same pieces.
pub fn newline_baseline(bytes: &[u8]) -> usize {
    bytes
        .chunks(CHUNK)
        .map(|chunk| memchr::memchr_iter(b'\n', chunk).count())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_inputs_are_long_enough_and_well_formed() {
        for text in [ascii_text(1 << 16), utf8_text(1 << 16)] {
            assert!(text.len() > (1 << 16) - 200 && text.len() <= 1 << 16);
            assert!(text.ends_with(b"\r\n"));
            assert!(std::str::from_utf8(&text).is_ok());
        }
        assert!(ascii_text(1000).is_ascii());
        let utf8 = utf8_text(1 << 16);
        let multibyte = utf8.iter().filter(|&&b| b >= 0x80).count();
        assert!(multibyte * 2 > utf8.len(), "mostly multi-byte characters");
    }

    #[test]
    fn generators_are_deterministic() {
        assert_eq!(ascii_text(5000), ascii_text(5000));
        assert_eq!(utf8_text(5000), utf8_text(5000));
    }

    #[test]
    fn the_corpus_is_found_and_repeated() {
        let tui = tui_output(&corpus_dir(), 1 << 20).expect("corpus");
        assert!(tui.len() >= 1 << 20);
        assert!(tui.contains(&0x1b));
    }

    #[test]
    fn workloads_run() {
        let preset = Preset::named("generic").expect("preset");
        let text = b"hello\r\n$ ".repeat(10);
        assert!(detect(&preset, &text) >= 1);
        assert_eq!(newline_baseline(&text), 10);
        assert_eq!(vte_baseline(&text), text.len());
    }
}
