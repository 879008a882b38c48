//! `raw-relay [--] COMMAND [ARGS…]`: the smallest PTY relay that does what a wrapper must, and
//! nothing else — the plain forkpty relay of the wrapper benchmark (`benches/benches/wrapper.rs`):
//! one PTY hop into a pipe for throughput, two hops (on the bench's PTY) for keystroke latency.
//!
//! Like `clippy-session`: a new PTY of the size of the terminal on stdin (120x40 when there is
//! none), `COMMAND` on its slave as session leader, stdin in raw mode for the duration, then one
//! `poll` loop: PTY readable → one read of up to 64 KiB → all of it to stdout; stdin readable →
//! one read → all of it to the PTY. Unlike it: no detection, no spool, no signal handling (a
//! hang-up of the outer terminal kills the relay, and closing the inner PTY then hangs up the
//! child), blocking writes. Exits with the child's code (128 + signal when it was killed).

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::process::ExitCode;

use clippy_pty::{CommandSpec, PtyMaster, RawModeGuard, WinSize};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// Bytes per read, as `clippy-session` reads.
const CHUNK: usize = 64 * 1024;

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: raw-relay [--] COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let spec = CommandSpec::new(program.clone()).args(rest.iter().cloned());
    match run(&spec) {
        Ok(code) => ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1)),
        Err(e) => {
            eprintln!("raw-relay: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(spec: &CommandSpec) -> Result<i32, Box<dyn std::error::Error>> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let size = clippy_pty::terminal_size(stdin.as_fd())
        .or_else(|| clippy_pty::terminal_size(stdout.as_fd()))
        .unwrap_or(WinSize::new(120, 40));
    let pair = clippy_pty::openpty(size)?;
    let mut child = pair.slave.spawn(spec)?;
    drop(pair.slave);
    let guard = RawModeGuard::enter(stdin.as_fd())?;
    let relayed = relay(&pair.master, stdin.as_fd(), stdout.as_fd());
    let status = child.wait()?;
    drop(guard);
    relayed?;
    Ok(status.code_for_shell())
}

/// Moves bytes both ways until the PTY reports end of output.
fn relay(master: &PtyMaster, stdin: BorrowedFd<'_>, stdout: BorrowedFd<'_>) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut stdin_open = true;
    let ready = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
    loop {
        let mut fds = [
            PollFd::new(master.as_fd(), PollFlags::POLLIN),
            PollFd::new(stdin, PollFlags::POLLIN),
        ];
        let watched = if stdin_open { 2 } else { 1 };
        match poll(&mut fds[..watched], PollTimeout::NONE) {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let revents = |fd: &PollFd<'_>| fd.revents().unwrap_or(PollFlags::empty());
        let (output, input) = (revents(&fds[0]), revents(&fds[1]));
        if output.intersects(ready) {
            // `EIO` (the child side closed everywhere) reads as end of file.
            let n = match (&*master).read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Ok(());
            }
            write_all(stdout, &buf[..n])?;
        }
        if stdin_open && input.intersects(ready) {
            match nix::unistd::read(stdin, &mut buf) {
                Ok(0) | Err(Errno::EIO) => stdin_open = false,
                Ok(n) => write_all(master.as_fd(), &buf[..n])?,
                Err(Errno::EINTR | Errno::EAGAIN) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

fn write_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
