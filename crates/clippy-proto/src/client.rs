//! A small blocking client: connect, `hello`, then request/reply by id.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::codec::{FrameDecoder, decode, encode_into};
use crate::error::ProtoError;
use crate::message::{Message, PROTOCOL_VERSION, Role};

/// The broker's socket: `$XDG_RUNTIME_DIR/clippy/broker.sock`. There is no fallback.
pub fn socket_path() -> Result<PathBuf, ProtoError> {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .ok_or(ProtoError::NoRuntimeDir)?;
    Ok(dir.join("clippy").join("broker.sock"))
}

/// A connection to the broker, past `hello`.
///
/// Replies are matched to requests by id; anything else that arrives meanwhile (an `inject`
/// for a wrapper) is kept for [`Client::recv`].
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    decoder: FrameDecoder,
    next_id: u32,
    out: Vec<u8>,
    unsolicited: VecDeque<Message>,
}

impl Client {
    /// Connects to the socket at `path` and says `hello` as `role`.
    pub fn connect(path: &Path, role: Role) -> Result<Self, ProtoError> {
        let stream = UnixStream::connect(path).map_err(|source| ProtoError::Io {
            context: format!("cannot connect to the broker at {}", path.display()),
            source,
        })?;
        let mut client = Self {
            stream,
            decoder: FrameDecoder::default(),
            next_id: 1,
            out: Vec::new(),
            unsolicited: VecDeque::new(),
        };
        match client.request(|id| Message::Hello {
            id,
            version: PROTOCOL_VERSION,
            role,
        })? {
            Message::HelloAck { .. } => Ok(client),
            other => Err(ProtoError::Unexpected(format!("{other:?} to hello"))),
        }
    }

    /// Sets how long a read may wait (`None`: for ever).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> Result<(), ProtoError> {
        self.stream
            .set_read_timeout(timeout)
            .map_err(|source| ProtoError::Io {
                context: "cannot set the socket timeout".into(),
                source,
            })
    }

    /// The underlying socket (to poll it, or shut it down).
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Sends the request `make(id)` with a fresh id and waits for its reply. An `error` reply
    /// becomes [`ProtoError::Broker`].
    pub fn request(&mut self, make: impl FnOnce(u32) -> Message) -> Result<Message, ProtoError> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.send(&make(id))?;
        loop {
            let message = self.read_message()?;
            if message.id() != id || matches!(message, Message::Inject { .. }) {
                self.unsolicited.push_back(message);
                continue;
            }
            return match message {
                Message::Error {
                    reason,
                    message,
                    resume_cursor,
                    ..
                } => Err(ProtoError::Broker {
                    reason,
                    message,
                    resume_cursor,
                }),
                reply => Ok(reply),
            };
        }
    }

    /// Sends one message without waiting for anything.
    pub fn send(&mut self, message: &Message) -> Result<(), ProtoError> {
        self.out.clear();
        encode_into(message, &mut self.out)?;
        self.stream
            .write_all(&self.out)
            .map_err(|source| ProtoError::Io {
                context: "cannot write to the broker".into(),
                source,
            })
    }

    /// The next message that was not a reply to a request of ours.
    pub fn recv(&mut self) -> Result<Message, ProtoError> {
        match self.unsolicited.pop_front() {
            Some(message) => Ok(message),
            None => self.read_message(),
        }
    }

    fn read_message(&mut self) -> Result<Message, ProtoError> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            if let Some(payload) = self.decoder.next_frame()? {
                return decode(&payload);
            }
            let n = match self.stream.read(&mut buf) {
                // A read with a timeout is not restarted after a signal (SIGSTOP then SIGCONT
                // of a waiting `clippy-ctl`, say): read again.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                read => read.map_err(|source| ProtoError::Io {
                    context: "cannot read from the broker".into(),
                    source,
                })?,
            };
            if n == 0 {
                return Err(if self.decoder.buffered() > 0 {
                    ProtoError::Truncated
                } else {
                    ProtoError::Closed
                });
            }
            self.decoder.push(&buf[..n]);
        }
    }
}
