//! `wait-for-child marks | flood ansi|plain`: the programs the wait-for benchmark
//! (`benches/benches/wait_for.rs`) wraps in `clippy-session`. Not a benchmark itself.
//!
//! - `marks [--no-prompt]`: prints `wait-for-child ready` and a prompt `lat> `; then, for every
//!   line `go N` it reads, reads `CLOCK_MONOTONIC` and writes `ESC[32mmark N t=NS ESC[0m`, a line
//!   end and the prompt again, all in **one** `write`: `NS` is the moment the line was written, in
//!   the clock `std::time::Instant` uses on Linux, so the bench can time the line from its very
//!   write. With `--no-prompt`, no prompt ever: no turn ever completes. Ends at end of input.
//! - `flood ansi|plain`: prints about 64 MiB of lines (`clippy_benches::wrapper::sgr_text`: one
//!   word in eight in an SGR colour; `plain`: the same with the escapes taken out), then
//!   `result: ` and the unique needle `needle-4711-end` (coloured with `ansi`), 512 KiB more lines,
//!   and `flood complete needle_at=OFFSET` (the needle's first byte, counted in the bytes written;
//!   the spool holds exactly those, as the program writes `\n` line ends only) and a prompt. Then
//!   it waits for the end of its input, so the session and its spool stay until the bench is done.

use std::fs::File;
use std::io::{self, BufRead, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;

use clippy_benches::monotonic_ns;
use clippy_benches::search::NEEDLE;
use clippy_benches::wrapper::sgr_text;

/// Bytes of lines before the needle.
const FLOOD_BYTES: usize = 64 << 20;
/// Bytes of lines after it.
const TAIL_BYTES: usize = 512 << 10;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["marks"] => marks(true),
        ["marks", "--no-prompt"] => marks(false),
        ["flood", "ansi"] => flood(true),
        ["flood", "plain"] => flood(false),
        _ => {
            eprintln!("usage: wait-for-child marks [--no-prompt] | flood ansi|plain");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wait-for-child: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Standard output as an unbuffered file: one `write_all` of a short buffer is one `write`.
fn stdout_file() -> io::Result<File> {
    Ok(File::from(io::stdout().as_fd().try_clone_to_owned()?))
}

fn marks(prompt: bool) -> io::Result<()> {
    let prompt: &[u8] = if prompt { b"\x1b[1mlat>\x1b[0m " } else { b"" };
    let mut out = stdout_file()?;
    out.write_all(b"wait-for-child ready\n")?;
    out.write_all(prompt)?;
    let mut stdin = io::stdin().lock();
    let mut line = String::new();
    let mut buf = Vec::with_capacity(128);
    loop {
        line.clear();
        if stdin.read_line(&mut line)? == 0 {
            return Ok(());
        }
        buf.clear();
        match line.trim().strip_prefix("go ") {
            Some(n) => {
                let t = monotonic_ns();
                writeln!(buf, "\x1b[32mmark {n} t={t}\x1b[0m")?;
            }
            None => buf.extend_from_slice(b"?\n"),
        }
        buf.extend_from_slice(prompt);
        out.write_all(&buf)?;
    }
}

/// `text` without its escape sequences (`sgr_text` has only `ESC [ … m`).
fn strip_sgr(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = memchr::memchr(0x1b, rest) {
        out.extend_from_slice(&rest[..at]);
        rest = &rest[at..];
        let end = memchr::memchr(b'm', rest).map_or(rest.len(), |m| m + 1);
        rest = &rest[end..];
    }
    out.extend_from_slice(rest);
    out
}

fn flood(ansi: bool) -> io::Result<()> {
    let lines = |len| {
        let text = sgr_text(len);
        if ansi { text } else { strip_sgr(&text) }
    };
    let mut out = stdout_file()?;
    let body = lines(FLOOD_BYTES);
    out.write_all(&body)?;
    let mut needle_line = b"result: ".to_vec();
    if ansi {
        needle_line.extend_from_slice(b"\x1b[1;32m");
    }
    let needle_at = body.len() + needle_line.len();
    needle_line.extend_from_slice(NEEDLE.as_bytes());
    if ansi {
        needle_line.extend_from_slice(b"\x1b[0m");
    }
    needle_line.push(b'\n');
    out.write_all(&needle_line)?;
    out.write_all(&lines(TAIL_BYTES))?;
    write!(out, "flood complete needle_at={needle_at}\nflood> ")?;
    drop(body);
    // Stay until the bench hangs up or closes our input.
    let mut sink = String::new();
    while io::stdin().lock().read_line(&mut sink)? > 0 {
        sink.clear();
    }
    Ok(())
}
