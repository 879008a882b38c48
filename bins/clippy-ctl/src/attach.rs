//! `clippy-ctl attach` and `detach`: this terminal connected to a session's `attach.sock`
//! (CONTRACTS/ATTACH.md). The broker only says where the session is; the bytes go between
//! this process and the session's wrapper.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use clippy_attach::{AlternateScreen, DetachKey, Keys};
use clippy_proto::FrameDecoder;
use clippy_proto::attach::{
    ATTACH_VERSION, AttachFrame, AttachMode, DetachReason, decode, encode_into,
};
use clippy_pty::{RawModeGuard, Signal, SignalPipe};
use nix::poll::{PollFd, PollFlags, PollTimeout};

use crate::error::CtlError;
use clippy_client::Connection;

/// How the attachment ended, for the person.
#[derive(Debug)]
pub enum Ended {
    /// Detached (by the key, or by `clippy-ctl detach`).
    Detached(DetachReason),
    /// The session's command ended with this code.
    Exited { exit_code: i32 },
    /// The session closed the connection without a word (it was killed).
    Closed,
    /// This process was told to stop (SIGTERM, SIGHUP).
    Signalled(Signal),
}

/// A session's id, name and attach socket, from what the broker knows of it
/// ([`Connection::attach_target`]).
pub fn socket_of(
    connect: &dyn Fn() -> Result<Connection, CtlError>,
    session: &str,
) -> Result<(String, Option<String>, PathBuf), CtlError> {
    let target = connect()?.attach_target(session)?;
    Ok((target.session, target.name, target.path))
}

/// Connects to the attach socket at `path` and says hello.
fn connect(path: &PathBuf, hello: &AttachFrame) -> Result<UnixStream, CtlError> {
    let mut stream = UnixStream::connect(path).map_err(|source| CtlError::Io {
        context: format!(
            "cannot connect to the session's attach socket {}",
            path.display()
        ),
        source,
    })?;
    send(&mut stream, hello)?;
    Ok(stream)
}

fn send(stream: &mut UnixStream, frame: &AttachFrame) -> Result<(), CtlError> {
    let mut wire = Vec::new();
    encode_into(frame, &mut wire).map_err(|e| CtlError::Protocol(e.to_string()))?;
    stream.write_all(&wire).map_err(|source| CtlError::Io {
        context: "the session's attach socket".into(),
        source,
    })
}

/// `clippy-ctl detach`: lets every client of the session go; returns how many there were.
pub fn detach(path: &PathBuf, timeout: Duration) -> Result<u32, CtlError> {
    let hello = AttachFrame::Hello {
        version: ATTACH_VERSION,
        mode: AttachMode::Control,
        cols: 0,
        rows: 0,
    };
    let mut stream = connect(path, &hello)?;
    send(&mut stream, &AttachFrame::DetachAll)?;
    let _ = stream.set_read_timeout(Some(timeout));
    let mut decoder = FrameDecoder::default();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(payload) = decoder
            .next_frame()
            .map_err(|e| CtlError::Protocol(e.to_string()))?
        {
            return match decode(&payload).map_err(|e| CtlError::Protocol(e.to_string()))? {
                AttachFrame::DetachedAll { clients } => Ok(clients),
                AttachFrame::Refused { message } => {
                    Err(CtlError::Session(format!("the session refused: {message}")))
                }
                other => Err(CtlError::Protocol(format!(
                    "the session answered detach with {other:?}"
                ))),
            };
        }
        match stream.read(&mut buf) {
            Ok(0) => {
                return Err(CtlError::Protocol(
                    "the session closed the connection without an answer".into(),
                ));
            }
            Ok(n) => decoder.push(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(CtlError::Io {
                    context: "no answer from the session's attach socket".into(),
                    source,
                });
            }
        }
    }
}

/// `clippy-ctl attach`: runs until detached, the session ends, or this process is told to stop;
/// the terminal is restored on every way out. `raw` is the raw mode the caller holds the
/// terminal in already (the dashboard's), kept throughout and used to suspend: without one,
/// the attachment enters raw mode itself and leaves it when it ends. `typed` is what was typed
/// before the attachment was made (read by the caller), taken as typed into it.
pub fn attach(
    path: &PathBuf,
    read_only: bool,
    key: DetachKey,
    raw: Option<&RawModeGuard>,
    typed: &[u8],
) -> Result<Ended, CtlError> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let (cols, rows) = clippy_pty::terminal_size(stdin.as_fd())
        .or_else(|| clippy_pty::terminal_size(stdout.as_fd()))
        .map_or((0, 0), |size| (size.cols, size.rows));
    let mode = if read_only {
        AttachMode::ReadOnly
    } else {
        AttachMode::Interactive
    };
    let signals = SignalPipe::with_signals(&[
        Signal::SIGWINCH,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGTSTP,
        Signal::SIGCONT,
    ])
    .map_err(pty_error)?;
    let stream = connect(
        path,
        &AttachFrame::Hello {
            version: ATTACH_VERSION,
            mode,
            cols,
            rows,
        },
    )?;
    let own = match raw {
        Some(_) => None,
        None => {
            RawModeGuard::install_panic_restore();
            RawModeGuard::enter(stdin.as_fd()).map_err(pty_error)?
        }
    };
    let guard = raw.or(own.as_ref());
    let mut client = Client {
        stream,
        decoder: FrameDecoder::default(),
        keys: key.matcher(),
        read_only,
        restore: None,
        screen: AlternateScreen::default(),
    };
    let ended = client
        .typed(typed)
        .and_then(|()| client.run(&signals, guard));
    // Whatever the program left the terminal in (alternate screen, mouse reports, a hidden
    // cursor), it is put back before the shell gets it.
    if let Some((normal, alternate)) = &client.restore {
        let mut out = stdout.lock();
        let _ = out.write_all(if client.screen.shown() {
            alternate
        } else {
            normal
        });
        let _ = out.write_all(b"\r\n");
        let _ = out.flush();
    }
    drop(own);
    ended
}

struct Client {
    stream: UnixStream,
    decoder: FrameDecoder,
    keys: clippy_attach::DetachMatcher,
    read_only: bool,
    /// What puts this terminal back, from the session's welcome (nothing is drawn before it):
    /// from its normal screen, and from the alternate screen.
    restore: Option<(Vec<u8>, Vec<u8>)>,
    /// Whether the session's output left this terminal on the alternate screen.
    screen: AlternateScreen,
}

impl Client {
    fn run(
        &mut self,
        signals: &SignalPipe,
        guard: Option<&RawModeGuard>,
    ) -> Result<Ended, CtlError> {
        let stdin = std::io::stdin();
        let mut stdin_open = true;
        let mut exited = None;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let mut fds = vec![
                PollFd::new(self.stream.as_fd(), PollFlags::POLLIN),
                PollFd::new(signals.as_fd(), PollFlags::POLLIN),
            ];
            if stdin_open {
                fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
            }
            match nix::poll::poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    return Err(CtlError::Io {
                        context: "cannot wait for the session".into(),
                        source: e.into(),
                    });
                }
            }
            let ready = |fd: &PollFd<'_>| {
                fd.revents()
                    .is_some_and(|r| !(r & !PollFlags::POLLNVAL).is_empty())
            };
            let (socket_ready, signal_ready) = (ready(&fds[0]), ready(&fds[1]));
            let stdin_ready = fds.get(2).is_some_and(ready);
            drop(fds);
            if signal_ready {
                for signal in signals.drain().map_err(pty_error)? {
                    if let Some(ended) = self.on_signal(signal, guard)? {
                        return Ok(ended);
                    }
                }
            }
            if socket_ready {
                let n = match self.stream.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => 0,
                };
                if n == 0 {
                    return Ok(match exited {
                        Some(exit_code) => Ended::Exited { exit_code },
                        None => Ended::Closed,
                    });
                }
                self.decoder.push(&buf[..n]);
                while let Some(payload) = self
                    .decoder
                    .next_frame()
                    .map_err(|e| CtlError::Protocol(e.to_string()))?
                {
                    let frame = decode(&payload).map_err(|e| CtlError::Protocol(e.to_string()))?;
                    match frame {
                        AttachFrame::Welcome {
                            restore,
                            restore_alternate,
                            ..
                        } => self.restore = Some((restore, restore_alternate)),
                        AttachFrame::Redraw { data, .. } | AttachFrame::Output { data } => {
                            self.screen.feed(&data);
                            write_out(&data)?;
                        }
                        AttachFrame::Exited { exit_code, .. } => exited = Some(exit_code),
                        AttachFrame::Detached { reason } => {
                            return Ok(match (reason, exited) {
                                (DetachReason::Exited, Some(exit_code)) => {
                                    Ended::Exited { exit_code }
                                }
                                (reason, _) => Ended::Detached(reason),
                            });
                        }
                        AttachFrame::Refused { message } => {
                            return Err(CtlError::Session(format!(
                                "the session refused to attach: {message}"
                            )));
                        }
                        other => {
                            return Err(CtlError::Protocol(format!(
                                "the session sent {other:?} to an attached client"
                            )));
                        }
                    }
                }
            }
            if stdin_ready {
                let n = match nix::unistd::read(stdin.as_fd(), &mut buf) {
                    Ok(n) => n,
                    Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => continue,
                    Err(_) => 0,
                };
                if n == 0 {
                    // No more keys (stdin closed): watch on.
                    stdin_open = false;
                    continue;
                }
                self.typed(&buf[..n])?;
            }
        }
    }

    /// Keys typed on this terminal: the session's, up to the detach key.
    fn typed(&mut self, bytes: &[u8]) -> Result<(), CtlError> {
        let (typed, detach) = match self.keys.feed(bytes) {
            Keys::Forward(typed) => (typed, false),
            Keys::Detach(typed) => (typed, true),
        };
        if !typed.is_empty() && !self.read_only {
            self.send(&AttachFrame::Input { data: typed })?;
        }
        if detach {
            // The session answers with `detached` and closes.
            self.send(&AttachFrame::Detach)?;
        }
        Ok(())
    }

    fn on_signal(
        &mut self,
        signal: Signal,
        guard: Option<&RawModeGuard>,
    ) -> Result<Option<Ended>, CtlError> {
        match signal {
            // A read-only client's size is not the session's, but it gets its screen again.
            Signal::SIGWINCH => {
                let stdin = std::io::stdin();
                if let Some(size) = clippy_pty::terminal_size(stdin.as_fd()) {
                    self.send(&AttachFrame::Resize {
                        cols: size.cols,
                        rows: size.rows,
                    })?;
                }
            }
            Signal::SIGTSTP => {
                if let Some(guard) = guard {
                    guard.restore().map_err(pty_error)?;
                }
                clippy_pty::suspend_self().map_err(pty_error)?;
                if let Some(guard) = guard {
                    guard.reenter().map_err(pty_error)?;
                }
            }
            Signal::SIGCONT => {
                if let Some(guard) = guard {
                    guard.reenter().map_err(pty_error)?;
                }
            }
            Signal::SIGTERM | Signal::SIGHUP | Signal::SIGINT | Signal::SIGQUIT => {
                return Ok(Some(Ended::Signalled(signal)));
            }
            _ => {}
        }
        Ok(None)
    }

    fn send(&mut self, frame: &AttachFrame) -> Result<(), CtlError> {
        send(&mut self.stream, frame)
    }
}

fn write_out(bytes: &[u8]) -> Result<(), CtlError> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|source| CtlError::Io {
            context: "cannot write to the terminal".into(),
            source,
        })
}

fn pty_error(e: clippy_pty::PtyError) -> CtlError {
    CtlError::Io {
        context: "the terminal".into(),
        source: std::io::Error::other(e.to_string()),
    }
}
