//! The way to the broker: blocking `clippy-proto` connections, kept for the next tool call once
//! a request is answered, so a quick tool costs one round trip and no connection set-up. A wait
//! takes a connection of its own for as long as it waits, so waits never hold up other calls.

use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clippy_proto::{Client, ErrorReason, Message, ProtoError, Role};

use crate::error::McpError;

/// How much longer than a wait's own deadline its reply may take to arrive.
pub const REPLY_GRACE: Duration = Duration::from_secs(5);

/// Connections kept idle at most (more than this many concurrent calls open and close their own).
const MAX_IDLE: usize = 8;

/// A request the broker could not or would not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The broker answered `error`: its reason, its sentence, and for a wait that timed out
    /// where to resume.
    Refused {
        /// The wire reason (`session_not_found`, `busy`, `timeout`, …).
        reason: ErrorReason,
        /// The broker's sentence.
        message: String,
        /// For a timed-out wait: the spool size, where to resume.
        resume_cursor: Option<u64>,
    },
    /// No broker could be reached or started, or the connection failed mid-request.
    Unreachable(String),
    /// The broker answered something that is not a reply to this request.
    Unexpected(String),
}

/// The broker connections of one `clippy-mcp` process.
#[derive(Debug)]
pub struct Bridge {
    socket: PathBuf,
    /// Whether a broker may be started when none answers (only at the default socket, where a
    /// started broker binds).
    may_start: bool,
    /// How long connecting, and a quick request's reply, may take.
    timeout: Duration,
    idle: Mutex<Vec<Client>>,
}

impl Bridge {
    /// A bridge to the broker at `socket` (`None`: `$XDG_RUNTIME_DIR/clippy/broker.sock`;
    /// without `XDG_RUNTIME_DIR`, as some MCP clients start their servers, the login session's
    /// `/run/user/UID/clippy/broker.sock`). Nothing is connected yet: the first call connects,
    /// starting a broker when none answers at the default socket.
    ///
    /// # Errors
    ///
    /// No `socket`, no usable `XDG_RUNTIME_DIR` and no `/run/user/UID` of this user.
    pub fn new(socket: Option<&Path>, timeout: Duration) -> Result<Self, McpError> {
        let default = clippy_proto::socket_path()
            .ok()
            .or_else(|| login_runtime_dir().map(|dir| dir.join("clippy").join("broker.sock")));
        let socket = match (socket, &default) {
            (Some(path), _) => path.to_owned(),
            (None, Some(path)) => path.clone(),
            (None, None) => return Err(McpError::NoRuntimeDir),
        };
        Ok(Self {
            may_start: default.as_deref() == Some(socket.as_path()),
            socket,
            timeout,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// The broker's socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Sends the request `make(id)` and returns its reply. `wait` is how long the broker may
    /// take by the request's own deadline (a wait's `timeout_ms`); the reply may take that
    /// plus [`REPLY_GRACE`]. Quick requests (`None`) may take the bridge's timeout.
    pub fn request(
        &self,
        wait: Option<Duration>,
        make: impl FnOnce(u32) -> Message,
    ) -> Result<Message, Failure> {
        let mut client = self.take()?;
        let allowed = wait.map_or(self.timeout, |wait| wait.saturating_add(REPLY_GRACE));
        client
            .set_read_timeout(Some(allowed))
            .map_err(|e| Failure::Unreachable(e.to_string()))?;
        match client.request(make) {
            Ok(reply) => {
                self.give_back(client);
                Ok(reply)
            }
            Err(ProtoError::Broker {
                reason,
                message,
                resume_cursor,
            }) => {
                self.give_back(client);
                Err(Failure::Refused {
                    reason,
                    message,
                    resume_cursor,
                })
            }
            // The connection is in no known state: it is dropped.
            Err(ProtoError::Io { source, .. })
                if matches!(source.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                Err(Failure::Unreachable(format!(
                    "the broker at {} did not answer within {} ms",
                    self.socket.display(),
                    allowed.as_millis()
                )))
            }
            Err(e) => Err(Failure::Unreachable(format!(
                "the connection to the broker at {} failed: {e}",
                self.socket.display()
            ))),
        }
    }

    /// How long connecting, and a quick request's reply, may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A new connection, past `hello`, starting a broker when none answers at the default
    /// socket.
    fn connect(&self) -> Result<Client, Failure> {
        let socket = self.socket.clone();
        let timeout = self.timeout;
        let attempt = || Client::connect_within(&socket, Role::Client, timeout);
        let connected = if self.may_start {
            clippy_proto::with_broker(&self.socket, Instant::now() + self.timeout, attempt)
        } else {
            attempt()
        };
        connected.map_err(|e| {
            Failure::Unreachable(format!(
                "cannot reach the broker at {}: {e}",
                self.socket.display()
            ))
        })
    }

    /// An idle connection that is still open, or a new one.
    fn take(&self) -> Result<Client, Failure> {
        loop {
            let kept = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            match kept {
                Some(client) if still_open(&client) => return Ok(client),
                Some(_closed) => continue,
                None => return self.connect(),
            }
        }
    }

    fn give_back(&self, client: Client) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(client);
        }
    }
}

/// `/run/user/UID`, the runtime folder a login session gets (what `XDG_RUNTIME_DIR` names
/// there), when it exists, is a folder and is this user's.
fn login_runtime_dir() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt as _;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let dir = PathBuf::from(format!("/run/user/{uid}"));
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid).then_some(dir)
}

/// Whether an idle connection is still usable: the broker has not closed it (a broker that
/// restarted since) and sent nothing unasked (a client is sent nothing but replies).
fn still_open(client: &Client) -> bool {
    let mut stream = client.stream();
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let open = matches!(stream.read(&mut byte), Err(e) if e.kind() == ErrorKind::WouldBlock);
    open && stream.set_nonblocking(false).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_socket_is_never_a_place_to_start_a_broker() {
        let bridge = Bridge::new(
            Some(Path::new("/nonexistent/clippy/broker.sock")),
            Duration::from_millis(200),
        )
        .expect("an explicit socket needs no runtime dir");
        assert!(!bridge.may_start);
        match bridge.request(None, |id| Message::ListSessions { id }) {
            Err(Failure::Unreachable(why)) => {
                assert!(why.contains("/nonexistent/clippy/broker.sock"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }
}
