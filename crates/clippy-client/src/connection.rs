//! Where the broker is ([`Endpoint`]) and a connection to it ([`Connection`]): connected and
//! past `hello` within a deadline, starting a broker where one may be started, then one request
//! at a time, each reply allowed the time its request may take.

use std::io::{ErrorKind, Read as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clippy_proto::{Client, Message, Role};

use crate::error::ClientError;

/// How much longer than a wait's own deadline its reply may take to arrive.
pub const REPLY_GRACE: Duration = Duration::from_secs(5);

/// The broker to talk to: its socket, whether a broker may be started there when none answers,
/// and how long connecting (and a reply to a request that does not wait) may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    socket: PathBuf,
    may_start: bool,
    timeout: Duration,
}

impl Endpoint {
    /// The broker at `socket`. A broker may be started there only when it is the default
    /// socket (`$XDG_RUNTIME_DIR/clippy/broker.sock`), where a started broker binds.
    pub fn new(socket: impl Into<PathBuf>, timeout: Duration) -> Self {
        let socket = socket.into();
        let may_start = clippy_proto::socket_path().is_ok_and(|path| path == socket);
        Self {
            socket,
            may_start,
            timeout,
        }
    }

    /// The broker at `explicit` (a `--socket`), else at `$XDG_RUNTIME_DIR/clippy/broker.sock`.
    ///
    /// # Errors
    ///
    /// [`ClientError::NoRuntimeDir`]: no `explicit` socket and no usable `XDG_RUNTIME_DIR`.
    pub fn resolve(explicit: Option<&Path>, timeout: Duration) -> Result<Self, ClientError> {
        match explicit {
            Some(path) => Ok(Self::new(path, timeout)),
            None => clippy_proto::socket_path()
                .map(|path| Self::new(path, timeout))
                .map_err(|_| ClientError::NoRuntimeDir),
        }
    }

    /// As [`Endpoint::resolve`], but without `XDG_RUNTIME_DIR` (as some programs start their
    /// helpers, MCP clients among them) the login session's `/run/user/UID/clippy/broker.sock`
    /// when `/run/user/UID` is this user's folder; a broker may be started there too (with
    /// `XDG_RUNTIME_DIR` set to that folder).
    ///
    /// # Errors
    ///
    /// [`ClientError::NoRuntimeDir`]: no `explicit` socket, no usable `XDG_RUNTIME_DIR` and no
    /// `/run/user/UID` of this user.
    pub fn resolve_or_login(
        explicit: Option<&Path>,
        timeout: Duration,
    ) -> Result<Self, ClientError> {
        let default = clippy_proto::socket_path()
            .ok()
            .or_else(|| login_runtime_dir().map(|dir| dir.join("clippy").join("broker.sock")));
        let socket = match (explicit, &default) {
            (Some(path), _) => path.to_owned(),
            (None, Some(path)) => path.clone(),
            (None, None) => return Err(ClientError::NoRuntimeDir),
        };
        Ok(Self {
            may_start: default.as_deref() == Some(socket.as_path()),
            socket,
            timeout,
        })
    }

    /// The broker's socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Whether a broker may be started at the socket when none answers.
    pub fn may_start(&self) -> bool {
        self.may_start
    }

    /// How long connecting, and a reply to a request that does not wait, may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
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

/// A connection to the broker, past `hello`, as a client. The typed operations
/// ([`crate::ops`]) are its methods.
#[derive(Debug)]
pub struct Connection {
    client: Client,
    socket: PathBuf,
    /// What a reply to a request that does not wait may take.
    base: Duration,
    /// What the next reply may take (the socket's read timeout); `None`: for ever.
    allowed: Option<Duration>,
}

impl Connection {
    /// Connects to the broker at `endpoint` and says `hello`; a broker that accepts the
    /// connection but does not answer within the endpoint's timeout is
    /// [`ClientError::NoAnswer`]. Never starts a broker (see [`Connection::connect_starting`]).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use clippy_client::{Connection, Endpoint};
    ///
    /// let endpoint = Endpoint::resolve(None, Duration::from_secs(5))?;
    /// let mut broker = Connection::connect(&endpoint)?;
    /// for session in broker.list_sessions()? {
    ///     println!("{} {}", session.session, session.name.as_deref().unwrap_or("-"));
    /// }
    /// # Ok::<(), clippy_client::ClientError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ClientError::Unreachable`] (nobody listens), [`ClientError::NoAnswer`] (no `hello`
    /// in time), or the broker's refusal of `hello`.
    pub fn connect(endpoint: &Endpoint) -> Result<Self, ClientError> {
        Self::open(endpoint, false)
    }

    /// As [`Connection::connect`], but when nobody listens at the socket and a broker may be
    /// started there ([`Endpoint::may_start`]), starts one (`clippy-broker` beside this
    /// program, else on `PATH`; [`clippy_proto::with_broker`]) and tries again until the
    /// endpoint's timeout has passed. For what runs right after starting a session in the
    /// background, whose wrapper may not have started the broker yet, and for front ends that
    /// are themselves started on demand (`clippy-mcp`).
    ///
    /// # Errors
    ///
    /// As [`Connection::connect`]; [`ClientError::Unreachable`] also when no broker could be
    /// started, or the one started did not answer in time.
    pub fn connect_starting(endpoint: &Endpoint) -> Result<Self, ClientError> {
        Self::open(endpoint, endpoint.may_start)
    }

    fn open(endpoint: &Endpoint, start: bool) -> Result<Self, ClientError> {
        let socket = endpoint.socket.as_path();
        let timeout = endpoint.timeout;
        let attempt = || Client::connect_within(socket, Role::Client, timeout);
        let connected = if start {
            clippy_proto::with_broker(socket, Instant::now() + timeout, attempt)
        } else {
            attempt()
        };
        let client = connected.map_err(|err| ClientError::from_proto(err, socket, timeout))?;
        Ok(Self {
            client,
            socket: socket.to_owned(),
            base: timeout,
            allowed: Some(timeout),
        })
    }

    /// The broker's socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The connection's socket (to poll it alongside other descriptors).
    pub fn stream(&self) -> &UnixStream {
        self.client.stream()
    }

    /// Whether the connection is still usable between requests: the broker has not closed it
    /// (a broker that stopped, or restarted since) and sent nothing unasked (a client is sent
    /// nothing but replies, and events once subscribed).
    pub fn is_open(&self) -> bool {
        let mut stream = self.client.stream();
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let open = matches!(stream.read(&mut byte), Err(e) if e.kind() == ErrorKind::WouldBlock);
        open && stream.set_nonblocking(false).is_ok()
    }

    /// Lets the next replies take up to `wait` plus [`REPLY_GRACE`] (a request that waits in
    /// the broker for that long), and never less than the endpoint's timeout; `None`: back to
    /// the endpoint's timeout.
    ///
    /// # Errors
    ///
    /// The socket's timeout cannot be set.
    pub fn allow_reply_after(&mut self, wait: Option<Duration>) -> Result<(), ClientError> {
        let allowed = wait.map_or(self.base, |wait| {
            wait.saturating_add(REPLY_GRACE).max(self.base)
        });
        self.read_within(Some(allowed))
    }

    /// Lets a read take up to `timeout` (`None`: for ever, an event follower that waits as
    /// long as it takes); a read that runs out is [`ClientError::NoAnswer`].
    ///
    /// # Errors
    ///
    /// The socket's timeout cannot be set.
    pub fn read_within(&mut self, timeout: Option<Duration>) -> Result<(), ClientError> {
        if self.allowed == timeout {
            return Ok(());
        }
        self.client
            .set_read_timeout(timeout)
            .map_err(|err| ClientError::from_proto(err, &self.socket, self.base))?;
        self.allowed = timeout;
        Ok(())
    }

    /// Sends the request `make(id)` and returns its reply; an `error` reply is
    /// [`ClientError::Broker`]. For requests the typed operations do not cover.
    ///
    /// # Errors
    ///
    /// The broker refused, did not answer in time, or the connection failed.
    pub fn request(&mut self, make: impl FnOnce(u32) -> Message) -> Result<Message, ClientError> {
        self.client.request(make).map_err(|err| self.sorted(err))
    }

    /// The next message that is not a reply (an event, once subscribed).
    ///
    /// # Errors
    ///
    /// Nothing came in time, or the connection failed.
    pub fn next_unsolicited(&mut self) -> Result<Message, ClientError> {
        self.client.recv().map_err(|err| self.sorted(err))
    }

    fn sorted(&self, err: clippy_proto::ProtoError) -> ClientError {
        ClientError::from_proto(err, &self.socket, self.allowed.unwrap_or(self.base))
    }
}
