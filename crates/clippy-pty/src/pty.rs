//! Opening a PTY pair; the master and slave handles.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Weak};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::libc;
use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};

use crate::child::Child;
use crate::command::CommandSpec;
use crate::error::{PtyError, os};
use crate::size::WinSize;
use crate::sys;

/// Both ends of a new PTY, as returned by [`openpty`].
#[derive(Debug)]
pub struct PtyPair {
    /// The master side: the wrapper reads the child's output from it and writes the user's input
    /// to it.
    pub master: PtyMaster,
    /// The slave side: the terminal the child runs on.
    pub slave: PtySlave,
}

/// Opens a new PTY pair with the given window size.
///
/// Both file descriptors are close-on-exec (the master is opened with `O_CLOEXEC`, so no other
/// thread's child can inherit it), and neither becomes the caller's controlling terminal
/// (`O_NOCTTY`).
///
/// # Errors
///
/// [`PtyError::Open`] when no PTY can be allocated, [`PtyError::OpenSlave`] when the slave
/// device cannot be opened, [`PtyError::Master`] when the size cannot be set.
///
/// # Example
///
/// ```
/// use std::io::Read;
/// use clippy_pty::{CommandSpec, ExitStatus, WinSize, openpty};
///
/// let pair = openpty(WinSize::new(80, 24))?;
/// let mut child = pair.slave.spawn(&CommandSpec::new("sh").arg("-c").arg("stty size; exit 3"))?;
/// // Close our copy of the slave: reading the master then ends once the child has exited.
/// drop(pair.slave);
/// let mut output = Vec::new();
/// let mut reader = &pair.master;
/// reader.read_to_end(&mut output)?;
/// assert_eq!(String::from_utf8_lossy(&output).trim(), "24 80");
/// assert_eq!(child.wait()?, ExitStatus::Exited(3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn openpty(size: WinSize) -> Result<PtyPair, PtyError> {
    let open_err = |call| {
        move |e: Errno| PtyError::Open {
            call,
            source: os(e),
        }
    };
    let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .map_err(open_err("posix_openpt"))?;
    grantpt(&master).map_err(open_err("grantpt"))?;
    unlockpt(&master).map_err(open_err("unlockpt"))?;
    let path = PathBuf::from(ptsname_r(&master).map_err(open_err("ptsname_r"))?);
    // std opens with O_CLOEXEC.
    let slave = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&path)
        .map_err(|source| PtyError::OpenSlave {
            path: path.clone(),
            source,
        })?;
    let master = PtyMaster {
        fd: Arc::new(OwnedFd::from(master)),
    };
    master.resize(size)?;
    let slave = PtySlave {
        fd: OwnedFd::from(slave),
        path,
        master: Arc::downgrade(&master.fd),
    };
    Ok(PtyPair { master, slave })
}

/// The master side of a PTY.
///
/// Read the child's output with [`std::io::Read`] and send it input with [`std::io::Write`],
/// both implemented for `&PtyMaster` too, so one handle serves both directions (also from two
/// threads). Register it with an event loop through [`AsRawFd`] (e.g.
/// `mio::unix::SourceFd(&master.as_raw_fd())`) after [`set_nonblocking(true)`](Self::set_nonblocking).
///
/// **End of output.** Once every process holding the slave has closed it (normally: the child
/// and its descendants have exited, *and* the caller has dropped its [`PtySlave`]), Linux makes
/// reads on the master fail with `EIO` after the buffered output has been read. `read` turns that
/// `EIO` into `Ok(0)`, the usual end-of-file, so `read_to_end` and friends just work. Until then
/// a non-blocking read with nothing buffered returns [`io::ErrorKind::WouldBlock`].
///
/// Dropping the master hangs up the terminal: the kernel sends `SIGHUP` to the child's session.
#[derive(Debug)]
pub struct PtyMaster {
    // Shared (weakly) with the slave and the children spawned on it, which use it to find the
    // terminal's foreground process group; see `Child::signal_group`.
    fd: Arc<OwnedFd>,
}

impl PtyMaster {
    /// Switches `O_NONBLOCK` on or off (for all handles sharing this open file description).
    ///
    /// # Errors
    ///
    /// [`PtyError::Master`] when `fcntl` fails.
    pub fn set_nonblocking(&self, nonblocking: bool) -> Result<(), PtyError> {
        let err = |e| PtyError::Master {
            call: "fcntl(O_NONBLOCK)",
            source: os(e),
        };
        let flags = OFlag::from_bits_retain(fcntl(&*self.fd, FcntlArg::F_GETFL).map_err(err)?);
        let wanted = if nonblocking {
            flags | OFlag::O_NONBLOCK
        } else {
            flags - OFlag::O_NONBLOCK
        };
        if wanted != flags {
            fcntl(&*self.fd, FcntlArg::F_SETFL(wanted)).map_err(err)?;
        }
        Ok(())
    }

    /// Sets the window size (`TIOCSWINSZ`). When the size changes, the kernel itself sends
    /// `SIGWINCH` to the terminal's foreground process group; there is nothing to forward.
    ///
    /// # Errors
    ///
    /// [`PtyError::Master`] when the `ioctl` fails.
    pub fn resize(&self, size: WinSize) -> Result<(), PtyError> {
        sys::set_winsize(self.fd.as_fd(), &size.to_raw()).map_err(|source| PtyError::Master {
            call: "TIOCSWINSZ",
            source,
        })
    }

    /// The current window size (`TIOCGWINSZ`).
    ///
    /// # Errors
    ///
    /// [`PtyError::Master`] when the `ioctl` fails.
    pub fn size(&self) -> Result<WinSize, PtyError> {
        sys::get_winsize(self.fd.as_fd())
            .map(WinSize::from_raw)
            .map_err(|source| PtyError::Master {
                call: "TIOCGWINSZ",
                source,
            })
    }

    /// The terminal's foreground process group (`tcgetpgrp` on the master), or `None` when there
    /// is none (no process has the slave as controlling terminal, e.g. the child has exited).
    ///
    /// With a job-control shell as the child this is the job in the foreground, not the shell.
    #[must_use]
    pub fn foreground_process_group(&self) -> Option<u32> {
        foreground_group(self.fd.as_fd())
    }
}

pub(crate) fn foreground_group(master: BorrowedFd<'_>) -> Option<u32> {
    let pgid = nix::unistd::tcgetpgrp(master).ok()?.as_raw();
    u32::try_from(pgid).ok().filter(|&pgid| pgid > 0)
}

impl AsFd for PtyMaster {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for PtyMaster {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn read_master(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    match nix::unistd::read(fd, buf) {
        Ok(n) => Ok(n),
        // The slave side is closed by every process: end of output.
        Err(Errno::EIO) => Ok(0),
        Err(e) => Err(os(e)),
    }
}

fn write_master(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    nix::unistd::write(fd, buf).map_err(os)
}

/// Reads the child's output; `EIO` (slave closed everywhere) reads as end-of-file, `Ok(0)`.
impl io::Read for &PtyMaster {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_master(self.fd.as_fd(), buf)
    }
}

/// Reads the child's output; `EIO` (slave closed everywhere) reads as end-of-file, `Ok(0)`.
impl io::Read for PtyMaster {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_master(self.fd.as_fd(), buf)
    }
}

/// Writes input to the child. Unbuffered: `flush` does nothing.
impl io::Write for &PtyMaster {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_master(self.fd.as_fd(), buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes input to the child. Unbuffered: `flush` does nothing.
impl io::Write for PtyMaster {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_master(self.fd.as_fd(), buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The slave side of a PTY: the terminal a child runs on.
///
/// After spawning, drop the slave (or the whole pair's slave) in the parent: as long as the
/// parent holds it open, reads on the master never report end-of-output.
#[derive(Debug)]
pub struct PtySlave {
    fd: OwnedFd,
    path: PathBuf,
    master: Weak<OwnedFd>,
}

impl PtySlave {
    /// The slave's device path, e.g. `/dev/pts/3` (what `tty` prints in the child).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts `spec` on this terminal.
    ///
    /// The child
    /// - is a session leader (`setsid`), so its process group ID is its PID;
    /// - has this slave as its controlling terminal (`TIOCSCTTY`), and as stdin, stdout and stderr;
    /// - starts with every signal at its default disposition and an empty signal mask, whatever
    ///   the parent did to its own (e.g. Rust ignores `SIGPIPE`; a wrapper catches `SIGINT`);
    /// - inherits the parent's environment with only the overrides of `spec` applied, and no
    ///   file descriptor other than 0, 1 and 2 (everything this crate opens is close-on-exec).
    ///
    /// # Errors
    ///
    /// [`PtyError::Spawn`] when the program cannot be started: `source.kind()` is
    /// [`io::ErrorKind::NotFound`] when it does not exist (or is not on `PATH`) and
    /// [`io::ErrorKind::PermissionDenied`] when it is not executable. std reports a failed `exec`
    /// through a close-on-exec pipe, so these come back from `spawn` itself, not as an exit
    /// status. [`PtyError::Cwd`] when the requested working directory is not a directory.
    pub fn spawn(&self, spec: &CommandSpec) -> Result<Child, PtyError> {
        let spawn_err = |source| PtyError::Spawn {
            program: spec.get_program().to_owned(),
            source,
        };
        if let Some(cwd) = spec.get_cwd() {
            let checked = std::fs::metadata(cwd).and_then(|meta| {
                if meta.is_dir() {
                    Ok(())
                } else {
                    Err(io::Error::from(io::ErrorKind::NotADirectory))
                }
            });
            if let Err(source) = checked {
                return Err(PtyError::Cwd {
                    program: spec.get_program().to_owned(),
                    path: cwd.to_owned(),
                    source,
                });
            }
        }

        let mut cmd = Command::new(spec.get_program());
        cmd.args(spec.get_args());
        if let Some(cwd) = spec.get_cwd() {
            cmd.current_dir(cwd);
        }
        for (key, value) in spec.get_envs() {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        let stdio = || self.fd.try_clone().map(Stdio::from).map_err(spawn_err);
        cmd.stdin(stdio()?).stdout(stdio()?).stderr(stdio()?);
        sys::setup_child_on_tty(&mut cmd);
        let child = cmd.spawn().map_err(spawn_err)?;
        Ok(Child::new(child, self.master.clone()))
    }
}

impl AsFd for PtySlave {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for PtySlave {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::FdFlag;

    #[test]
    fn both_ends_are_cloexec_and_sized() {
        let pair = openpty(WinSize::new(91, 17)).unwrap();
        for fd in [pair.master.as_fd(), pair.slave.as_fd()] {
            let flags = FdFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFD).unwrap());
            assert!(flags.contains(FdFlag::FD_CLOEXEC));
        }
        assert_eq!(pair.master.size().unwrap(), WinSize::new(91, 17));
        assert_eq!(
            crate::terminal_size(pair.slave.as_fd()),
            Some(WinSize::new(91, 17))
        );
        assert!(pair.slave.path().starts_with("/dev/pts"));
    }

    #[test]
    fn nonblocking_toggles() {
        let pair = openpty(WinSize::new(80, 24)).unwrap();
        let flags = || OFlag::from_bits_retain(fcntl(&pair.master, FcntlArg::F_GETFL).unwrap());
        pair.master.set_nonblocking(true).unwrap();
        assert!(flags().contains(OFlag::O_NONBLOCK));
        let mut buf = [0u8; 16];
        let err = io::Read::read(&mut &pair.master, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        pair.master.set_nonblocking(false).unwrap();
        assert!(!flags().contains(OFlag::O_NONBLOCK));
    }

    #[test]
    fn no_foreground_group_without_a_session() {
        let pair = openpty(WinSize::new(80, 24)).unwrap();
        assert_eq!(pair.master.foreground_process_group(), None);
    }
}
