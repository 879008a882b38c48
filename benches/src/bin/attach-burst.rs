//! `attach-burst FILE GO READY STATS`: the program the attach benchmark
//! (`benches/benches/attach.rs`) runs in a spawned session. Not a benchmark itself.
//!
//! It reads FILE into memory, creates the empty file READY, then opens the FIFO GO and waits for
//! one byte on it (so the session is registered, and a client attached, before the clock starts).
//! Then it writes FILE to its
//! terminal as fast as it can, in 64 KiB `write`s, with `CLOCK_MONOTONIC` read just before the
//! first and just after the last; it puts `START_NS END_NS` in STATS (written beside it and
//! renamed, so the bench never reads half a line) and waits for the end of its input (the bench
//! kills it), so the session and its spool stay until the bench has checked them. It prints
//! nothing else: the spool holds exactly FILE (its lines end in `\n` alone, which the PTY turns
//! into `\r\n` and the spool back into `\n`).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::ExitCode;

use clippy_benches::monotonic_ns;

/// Bytes per `write`.
const WRITE: usize = 64 * 1024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, go, ready, stats] = args.as_slice() else {
        eprintln!("usage: attach-burst FILE GO_FIFO READY STATS");
        return ExitCode::from(2);
    };
    match burst(
        Path::new(file),
        Path::new(go),
        Path::new(ready),
        Path::new(stats),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("attach-burst: {e}");
            ExitCode::FAILURE
        }
    }
}

fn burst(file: &Path, go: &Path, ready: &Path, stats: &Path) -> io::Result<()> {
    let content = std::fs::read(file)?;
    File::create(ready)?;
    let mut byte = [0u8; 1];
    File::open(go)?.read_exact(&mut byte)?;
    let mut out = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    let start = monotonic_ns();
    for chunk in content.chunks(WRITE) {
        out.write_all(chunk)?;
    }
    let end = monotonic_ns();
    let partial = stats.with_extension("partial");
    std::fs::write(&partial, format!("{start} {end}\n"))?;
    std::fs::rename(&partial, stats)?;
    drop(content);
    // Stay until killed, or until the terminal hangs up.
    let mut sink = [0u8; 256];
    let mut stdin = io::stdin().lock();
    loop {
        match stdin.read(&mut sink) {
            Ok(0) | Err(_) => return Ok(()),
            Ok(_) => {}
        }
    }
}
