//! The connection to the broker: find the socket, connect and say `hello` within the timeout
//! (for the commands a script runs right after starting a session, starting a broker when none
//! answers), then one request at a time. Every [`ProtoError`] is sorted here into what it means
//! for the user ([`CtlError`]): nobody answers, the broker refused, or the reply made no sense.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clippy_proto::{Client, Message, ProtoError, Role};

use crate::error::CtlError;

/// The socket to use: `--socket`, else `$XDG_RUNTIME_DIR/clippy/broker.sock`.
pub fn resolve_socket(explicit: Option<&Path>) -> Result<PathBuf, CtlError> {
    match explicit {
        Some(path) => Ok(path.to_owned()),
        None => clippy_proto::socket_path().map_err(|_| CtlError::NoRuntimeDir),
    }
}

/// A connection to the broker, past `hello`.
#[derive(Debug)]
pub struct Broker {
    client: Client,
    socket: PathBuf,
    timeout: Duration,
}

impl Broker {
    /// Connects to `socket` as a client. Connecting and the `hello` exchange together may take
    /// at most `timeout`; so may every later reply.
    pub fn connect(socket: &Path, timeout: Duration) -> Result<Self, CtlError> {
        let path = socket.to_owned();
        Self::connect_with(socket, timeout, move || {
            Client::connect(&path, Role::Client)
        })
    }

    /// As [`Broker::connect`], but when nobody listens at `socket` and it is the default socket
    /// (`$XDG_RUNTIME_DIR/clippy/broker.sock`, where a broker binds), starts a broker as
    /// `clippy-session` does and tries again until `timeout` has passed
    /// ([`clippy_proto::with_broker`]). For the commands a script runs right after starting a
    /// session in the background: its wrapper may not have started the broker yet.
    pub fn connect_starting(socket: &Path, timeout: Duration) -> Result<Self, CtlError> {
        let default = clippy_proto::socket_path().is_ok_and(|path| path == socket);
        if !default {
            // A broker started now would not bind there: nobody to wait for.
            return Self::connect(socket, timeout);
        }
        let deadline = Instant::now() + timeout;
        let path = socket.to_owned();
        Self::connect_with(socket, timeout, move || {
            clippy_proto::with_broker(&path, deadline, || Client::connect(&path, Role::Client))
        })
    }

    /// Runs `connect` (a connection and its `hello`) within `timeout`, then sets the read
    /// timeout.
    fn connect_with(
        socket: &Path,
        timeout: Duration,
        connect: impl FnOnce() -> Result<Client, ProtoError> + Send + 'static,
    ) -> Result<Self, CtlError> {
        // `Client::connect` blocks until the broker answers `hello`; a broker that accepted the
        // connection but hangs must not hang us, so the handshake runs on a helper thread. When
        // it times out the thread is left behind, blocked on a socket nobody will answer; the
        // process exits right after.
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("connect".into())
            .spawn(move || {
                // The receiver is gone only when we have given up waiting.
                let _ = tx.send(connect());
            })
            .map_err(|source| CtlError::Io {
                context: "cannot start a thread".into(),
                source,
            })?;
        let client = match rx.recv_timeout(timeout) {
            Ok(Ok(client)) => client,
            Ok(Err(err)) => return Err(classify(err, socket, timeout)),
            Err(_) => return Err(no_answer(socket, timeout)),
        };
        client
            .set_read_timeout(Some(timeout))
            .map_err(|err| classify(err, socket, timeout))?;
        Ok(Self {
            client,
            socket: socket.to_owned(),
            timeout,
        })
    }

    /// The connection's socket (to watch it for the broker going away).
    pub fn stream(&self) -> &std::os::unix::net::UnixStream {
        self.client.stream()
    }

    /// Lets replies take up to `wait` (a wait request's own deadline plus a grace period).
    pub fn allow_reply_after(&mut self, wait: Duration) -> Result<(), CtlError> {
        self.client
            .set_read_timeout(Some(wait.max(self.timeout)))
            .map_err(|err| classify(err, &self.socket, self.timeout))?;
        self.timeout = wait.max(self.timeout);
        Ok(())
    }

    /// Waits for messages as long as it takes (a follower of the event stream).
    pub fn wait_forever(&mut self) -> Result<(), CtlError> {
        self.client
            .set_read_timeout(None)
            .map_err(|err| classify(err, &self.socket, self.timeout))
    }

    /// The next message that is not a reply (an event, for a subscriber).
    pub fn next_unsolicited(&mut self) -> Result<Message, CtlError> {
        self.client
            .recv()
            .map_err(|err| classify(err, &self.socket, self.timeout))
    }

    /// Sends the request `make(id)` and returns its reply (an `error` reply is an error).
    pub fn request(&mut self, make: impl FnOnce(u32) -> Message) -> Result<Message, CtlError> {
        self.client
            .request(make)
            .map_err(|err| classify(err, &self.socket, self.timeout))
    }
}

fn no_answer(socket: &Path, timeout: Duration) -> CtlError {
    CtlError::NoAnswer {
        socket: socket.to_owned(),
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
    }
}

/// What a protocol-level failure means for the user.
fn classify(err: ProtoError, socket: &Path, timeout: Duration) -> CtlError {
    match err {
        ProtoError::Broker {
            reason,
            message,
            resume_cursor,
        } => CtlError::Broker {
            reason,
            message,
            resume_cursor,
        },
        ProtoError::NoRuntimeDir => CtlError::NoRuntimeDir,
        ProtoError::Io { source, .. }
            if matches!(source.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
        {
            no_answer(socket, timeout)
        }
        ProtoError::Io { source, .. } => CtlError::Unreachable {
            socket: socket.to_owned(),
            detail: source.to_string(),
        },
        ProtoError::Closed => CtlError::Unreachable {
            socket: socket.to_owned(),
            detail: "the broker closed the connection without answering".into(),
        },
        ProtoError::NoBroker {
            started, detail, ..
        } => CtlError::Unreachable {
            socket: socket.to_owned(),
            detail: if started {
                format!("a clippy-broker was started but did not answer in time: {detail}")
            } else {
                format!("no broker answers there, and clippy-broker could not be started: {detail}")
            },
        },
        err @ (ProtoError::FrameTooLarge { .. }
        | ProtoError::Malformed(_)
        | ProtoError::UnknownType { .. }
        | ProtoError::MissingField { .. }
        | ProtoError::Encode(_)
        | ProtoError::Truncated
        | ProtoError::Unexpected(_)) => CtlError::Protocol(err.to_string()),
    }
}

/// The error for a reply of the wrong type to `request`.
pub fn unexpected(request: &str, reply: &Message) -> CtlError {
    CtlError::Protocol(format!("unexpected reply to {request}: {}", reply.kind()))
}

#[cfg(test)]
mod tests {
    use clippy_proto::ErrorReason;

    use super::*;

    fn sock() -> PathBuf {
        PathBuf::from("/x/broker.sock")
    }

    fn io(kind: ErrorKind) -> ProtoError {
        ProtoError::Io {
            context: "c".into(),
            source: std::io::Error::from(kind),
        }
    }

    #[test]
    fn errors_are_sorted_by_meaning() {
        let t = Duration::from_millis(7);
        assert!(matches!(
            classify(io(ErrorKind::NotFound), &sock(), t),
            CtlError::Unreachable { .. }
        ));
        assert!(matches!(
            classify(io(ErrorKind::ConnectionRefused), &sock(), t),
            CtlError::Unreachable { .. }
        ));
        assert!(matches!(
            classify(io(ErrorKind::WouldBlock), &sock(), t),
            CtlError::NoAnswer { timeout_ms: 7, .. }
        ));
        assert!(matches!(
            classify(ProtoError::Closed, &sock(), t),
            CtlError::Unreachable { .. }
        ));
        assert!(matches!(
            classify(ProtoError::Truncated, &sock(), t),
            CtlError::Protocol(_)
        ));
        assert!(matches!(
            classify(ProtoError::Malformed("m".into()), &sock(), t),
            CtlError::Protocol(_)
        ));
        assert!(matches!(
            classify(ProtoError::NoRuntimeDir, &sock(), t),
            CtlError::NoRuntimeDir
        ));
        let not_started = classify(
            ProtoError::NoBroker {
                socket: sock(),
                started: false,
                detail: "cannot run clippy-broker".into(),
            },
            &sock(),
            t,
        );
        assert!(not_started.is_unreachable());
        assert!(
            not_started
                .to_string()
                .contains("clippy-broker could not be started: cannot run clippy-broker"),
            "{not_started}"
        );
        assert!(matches!(
            classify(
                ProtoError::Broker {
                    reason: ErrorReason::BufferEmpty,
                    message: "m".into(),
                    resume_cursor: None,
                },
                &sock(),
                t
            ),
            CtlError::Broker {
                reason: ErrorReason::BufferEmpty,
                ..
            }
        ));
    }

    #[test]
    fn an_unexpected_reply_is_named_by_its_type() {
        assert_eq!(
            unexpected("paste", &Message::Done { id: 1 }).to_string(),
            "protocol error: unexpected reply to paste: done"
        );
    }
}
