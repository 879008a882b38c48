//! Shared helpers: a child on a real PTY, read with timeouts, killed and reaped on drop.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use clippy_pty::{Child, CommandSpec, ExitStatus, PtyMaster, WinSize, openpty};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

/// How long any wait may take before the test fails: the test kit's bound on a hang.
pub const TIMEOUT: Duration = clippy_testkit::DEADLINE;

/// A child on a fresh PTY. Dropping it kills the child's process group and reaps the child, so a
/// failing test leaves nothing behind.
pub struct Session {
    pub master: PtyMaster,
    pub child: Child,
    pub slave_path: std::path::PathBuf,
    output: Vec<u8>,
    eof: bool,
}

impl Session {
    pub fn start(spec: &CommandSpec, size: WinSize) -> Session {
        let pair = openpty(size).unwrap();
        let child = pair.slave.spawn(spec).unwrap();
        let slave_path = pair.slave.path().to_owned();
        drop(pair.slave);
        Session {
            master: pair.master,
            child,
            slave_path,
            output: Vec::new(),
            eof: false,
        }
    }

    /// Wraps a child spawned by the test itself (the slave already dropped).
    pub fn from_parts(master: PtyMaster, child: Child) -> Session {
        Session {
            master,
            child,
            slave_path: std::path::PathBuf::new(),
            output: Vec::new(),
            eof: false,
        }
    }

    pub fn sh(script: &str) -> Session {
        Session::start(
            &CommandSpec::new("sh").arg("-c").arg(script),
            WinSize::new(80, 24),
        )
    }

    /// Reads what is available within `wait`; false when the deadline passed or at EOF.
    fn read_some(&mut self, deadline: Instant) -> bool {
        if self.eof {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let ms = u16::try_from(left.as_millis().min(1000)).unwrap();
        let mut fds = [PollFd::new(self.master.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => return true,
            Ok(_) => {}
            Err(e) => panic!("poll: {e}"),
        }
        let mut buf = [0u8; 4096];
        match (&self.master).read(&mut buf) {
            Ok(0) => {
                self.eof = true;
                false
            }
            Ok(n) => {
                self.output.extend_from_slice(&buf[..n]);
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => true,
            Err(e) => panic!("reading the master: {e}"),
        }
    }

    /// Output so far, with the terminal's `\r\n` turned into `\n`.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).replace("\r\n", "\n")
    }

    pub fn raw_output(&self) -> &[u8] {
        &self.output
    }

    /// Reads until the output contains `needle`; panics with the output on timeout or EOF.
    pub fn read_until(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        while !self.text().contains(needle) {
            assert!(
                self.read_some(deadline),
                "{needle:?} not seen (eof: {}); output so far: {:?}",
                self.eof,
                self.text()
            );
        }
        self.text()
    }

    /// Reads until end of output (the child and everything holding the slave has gone).
    pub fn read_to_end(&mut self) -> String {
        let deadline = Instant::now() + TIMEOUT;
        while self.read_some(deadline) {}
        assert!(self.eof, "no EOF; output so far: {:?}", self.text());
        self.text()
    }

    pub fn write(&self, bytes: &[u8]) {
        (&self.master).write_all(bytes).unwrap();
    }

    /// Waits for the child to exit, failing the test after the timeout.
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "child did not exit");
            // Keep the PTY drained so the child never blocks on output.
            if !self.read_some(Instant::now() + Duration::from_millis(20)) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `program` can be found on PATH.
pub fn have(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Waits until a child of `parent` runs the program `name` (its `comm`).
pub fn wait_for_child_named(parent: u32, name: &str) -> u32 {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // pid (comm) state ppid ...
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = &stat[open + 1..close];
            let ppid = stat[close + 1..].split_whitespace().nth(1);
            if comm == name && ppid == Some(parent.to_string().as_str()) {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "no child {name} of {parent}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
