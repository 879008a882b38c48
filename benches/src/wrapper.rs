//! Workloads of the wrapper benchmark: bytes through one PTY hop, and keystroke round trips.
//!
//! **Throughput** ([`pipe_drain`]): each subject is a process that puts `cat FILE` on a PTY of
//! its own and relays what the PTY gives into its stdout, a pipe the benchmark reads in
//! [`READ_CHUNK`] reads and throws away — one PTY hop, the hop every PTY wrapper adds, with
//! nothing else in the way:
//!
//! - `clippy-session --no-broker -- cat FILE`: the wrapper, detection and spool included;
//! - `raw-relay -- cat FILE` (`src/bin/raw-relay.rs`): a forkpty relay that only copies;
//! - `script -q -e -c "cat FILE" /dev/null` (util-linux), when it is installed.
//!
//! Every subject is started the same way (stdin `/dev/null`, in the benchmark's session, as a
//! shell starts a job), so no subject leads a session of its own.
//!
//! **Latency** ([`EchoSession`]): the benchmark opens a PTY that stands in for the user's
//! terminal, starts the subject on its slave, writes one byte to its master and times the
//! program's echo of it.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clippy_pty::{Child, CommandSpec, ExitStatus, PtyMaster, WinSize};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::{LOREM, Rng};

/// Errors of the workloads: PTY setup, I/O, or a subject that misbehaves.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Bytes per read of the master (what `clippy-session` and `raw-relay` read at a time too).
pub const READ_CHUNK: usize = 64 * 1024;

/// The size of the PTY standing in for the user's terminal.
pub const TERMINAL_SIZE: WinSize = WinSize::new(120, 40);

/// How long a subject may stay silent before a run is declared stuck.
const STUCK: Duration = Duration::from_secs(10);

/// SGR sequences sprinkled over [`sgr_text`]: colours, bold, reverse, 256-colour and RGB.
const SGR: &[&str] = &[
    "\x1b[1m",
    "\x1b[31m",
    "\x1b[1;32m",
    "\x1b[33;44m",
    "\x1b[7m",
    "\x1b[38;5;208m",
    "\x1b[38;2;120;200;255m",
];

/// About `len` bytes of mixed text as a program prints it to a terminal: ASCII lorem-ipsum lines
/// of 20-100 columns ended by `\n` (the PTY's `ONLCR` turns that into `\r\n`), about one word in
/// eight wrapped in an SGR colour sequence and `\x1b[0m`. Deterministic; cut back to `len` at a
/// line end.
pub fn sgr_text(len: usize) -> Vec<u8> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut out = Vec::with_capacity(len + 256);
    while out.len() < len {
        let width = 20 + rng.below(80);
        let start = out.len();
        let mut first = true;
        while out.len() - start < width {
            if !first {
                out.push(b' ');
            }
            first = false;
            let word = rng.pick(LOREM).as_bytes();
            if rng.below(8) == 0 {
                out.extend_from_slice(SGR[rng.below(SGR.len())].as_bytes());
                out.extend_from_slice(word);
                out.extend_from_slice(b"\x1b[0m");
            } else {
                out.extend_from_slice(word);
            }
        }
        out.push(b'\n');
    }
    if let Some(end) = out[..len.min(out.len())].iter().rposition(|&b| b == b'\n') {
        out.truncate(end + 1);
    }
    out
}

/// A command line as a [`CommandSpec`]: `argv[0]` and the rest.
///
/// # Panics
/// If `argv` is empty.
pub fn command<S: AsRef<OsStr>>(argv: &[S]) -> CommandSpec {
    let (program, args) = argv.split_first().expect("a command line");
    CommandSpec::new(program.as_ref()).args(args.iter().map(AsRef::as_ref))
}

/// What one [`pipe_drain`] measured.
#[derive(Debug, Clone, Copy)]
pub struct PipeTransfer {
    /// Bytes read from the subject's stdout.
    pub bytes: u64,
    /// From just before the spawn to the end of output.
    pub elapsed: Duration,
    /// CPU time (user and system) of the subject and of every process it waited for (its
    /// `cat`), from `getrusage(RUSAGE_CHILDREN)` around the run.
    pub cpu: Duration,
    /// Whether the subject exited 0.
    pub success: bool,
}

/// Runs `command` with stdin from `/dev/null` and stdout into a pipe, which is read in
/// [`READ_CHUNK`] reads until its end; then reaps the subject. Nothing else of this process
/// may run children meanwhile (their CPU time would be counted).
///
/// # Errors
/// When the subject cannot be started, or reading or waiting fails.
pub fn pipe_drain(command: &mut Command) -> Result<PipeTransfer, Error> {
    let mut buf = vec![0u8; READ_CHUNK];
    let before = children_cpu()?;
    let start = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut out = child.stdout.take().ok_or("no stdout pipe")?;
    let mut bytes = 0u64;
    loop {
        match out.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let elapsed = start.elapsed();
    let status = child.wait()?;
    let cpu = children_cpu()?.saturating_sub(before);
    Ok(PipeTransfer {
        bytes,
        elapsed,
        cpu,
        success: status.success(),
    })
}

/// User and system CPU time of this process's children that were waited for, so far.
fn children_cpu() -> Result<Duration, Error> {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN)?;
    let time = |t: nix::sys::time::TimeVal| {
        Duration::new(
            u64::try_from(t.tv_sec()).unwrap_or(0),
            u32::try_from(t.tv_usec()).unwrap_or(0) * 1000,
        )
    };
    Ok(time(usage.user_time()) + time(usage.system_time()))
}

/// The shell script of an [`EchoSession`]: its terminal in raw mode without echo, a marker to say
/// so, then `cat`, which writes back every byte it reads — the path a keystroke takes to a TUI
/// and its redraw back, with nothing added by the terminal's own echo.
pub const ECHO_SCRIPT: &str = "stty raw -echo && printf '<ready>' && exec cat";

/// What [`ECHO_SCRIPT`] prints once its terminal is set up.
const READY: &[u8] = b"<ready>";

/// A program that echoes keystrokes, running on the slave of a PTY we hold the master of.
#[derive(Debug)]
pub struct EchoSession {
    master: PtyMaster,
    child: Child,
    next: u8,
}

impl EchoSession {
    /// Starts `spec` (which must end up running [`ECHO_SCRIPT`]) on a new PTY and waits until it
    /// says it is ready.
    ///
    /// # Errors
    /// When the PTY or the subject cannot be started, or the subject does not get ready.
    pub fn start(spec: &CommandSpec) -> Result<Self, Error> {
        let pair = clippy_pty::openpty(TERMINAL_SIZE)?;
        let child = pair.slave.spawn(spec)?;
        drop(pair.slave);
        let mut session = EchoSession {
            master: pair.master,
            child,
            next: b'a',
        };
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        while !seen.windows(READY.len()).any(|w| w == READY) {
            let n = session.read_some(&mut buf)?;
            seen.extend_from_slice(&buf[..n]);
        }
        Ok(session)
    }

    /// Reads what is there, waiting at most [`STUCK`].
    fn read_some(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        loop {
            let mut fds = [PollFd::new(self.master.as_fd(), PollFlags::POLLIN)];
            let timeout = PollTimeout::try_from(STUCK).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(0) => return Err("the subject went silent".into()),
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            match (&self.master).read(buf) {
                Ok(0) => return Err("the subject exited".into()),
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Sends one keystroke (a letter, a different one each time) and returns how long it took
    /// until its echo was read back.
    ///
    /// # Errors
    /// When writing or reading fails, or the echo does not come.
    pub fn round_trip(&mut self) -> Result<Duration, Error> {
        let key = self.next;
        self.next = if key == b'z' { b'a' } else { key + 1 };
        let mut buf = [0u8; 64];
        let start = Instant::now();
        (&self.master).write_all(&[key])?;
        loop {
            let n = self.read_some(&mut buf)?;
            if buf[..n].contains(&key) {
                return Ok(start.elapsed());
            }
        }
    }

    /// Hangs up the terminal (the subject gets `SIGHUP`) and reaps the subject.
    ///
    /// # Errors
    /// When waiting for the subject fails.
    pub fn finish(self) -> Result<ExitStatus, Error> {
        let EchoSession {
            master, mut child, ..
        } = self;
        drop(master);
        Ok(child.wait()?)
    }
}

/// The `p`-th percentile (`0.0..=1.0`, nearest rank) of `sorted`, which must be sorted.
///
/// # Panics
/// If `sorted` is empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    assert!(!sorted.is_empty(), "no samples");
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of `values` (the mean of the middle two for an even count); `NaN` when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sgr_text_is_ascii_lines_with_escapes() {
        let text = sgr_text(1 << 16);
        assert!(text.len() > (1 << 16) - 400 && text.len() <= 1 << 16);
        assert!(text.is_ascii() && text.ends_with(b"\n"));
        assert!(!text.contains(&b'\r'));
        let escapes = text.windows(2).filter(|w| w == b"\x1b[").count();
        assert!(escapes > 100, "{escapes} escapes");
        assert_eq!(sgr_text(5000), sgr_text(5000));
    }

    #[test]
    fn pipe_drain_counts_every_byte_and_the_exit_status() {
        let dir = std::env::temp_dir().join(format!("clippy-benches-pipe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("input.txt");
        let text = sgr_text(200_000);
        std::fs::write(&file, &text).unwrap();
        // `cat` on the pipe, four times over, so it takes measurable CPU.
        let transfer = pipe_drain(Command::new("cat").args([&file, &file, &file, &file])).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(transfer.success);
        assert_eq!(transfer.bytes as usize, 4 * text.len());
        let failed = pipe_drain(&mut Command::new("false")).unwrap();
        assert!(!failed.success);
        assert_eq!(failed.bytes, 0);
    }

    #[test]
    fn echo_session_round_trips() {
        let mut session = EchoSession::start(&command(&["sh", "-c", ECHO_SCRIPT])).unwrap();
        for _ in 0..30 {
            assert!(session.round_trip().unwrap() < STUCK);
        }
        session.finish().unwrap();
    }

    #[test]
    fn percentiles_and_medians() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&samples, 0.5), Duration::from_micros(50));
        assert_eq!(percentile(&samples, 0.99), Duration::from_micros(99));
        assert_eq!(percentile(&samples, 1.0), Duration::from_micros(100));
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
