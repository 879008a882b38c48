//! A small blocking client: connect, `hello`, then request/reply by id; and, for the programs
//! that start a broker when none answers (`clippy-session`, `clippy-ctl`'s waits), the one way
//! to do so ([`with_broker`]).

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// The first pause between two connection attempts to a broker just started; it doubles up to
/// [`MAX_START_PAUSE`].
const MIN_START_PAUSE: Duration = Duration::from_millis(10);
/// The longest pause between two connection attempts to a broker just started.
const MAX_START_PAUSE: Duration = Duration::from_millis(200);

/// The broker program to start: `clippy-broker` next to the running executable when it is
/// there (an installation or a build puts the binaries side by side), else `clippy-broker` as
/// found on `PATH`.
pub fn broker_program() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("clippy-broker")))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("clippy-broker"))
}

/// Starts [`broker_program`] detached: it takes a session of its own as it starts (`setsid`,
/// CONTRACTS/BROKER.md), with stdin, stdout and stderr on `/dev/null` (it logs to its own file), in this process's environment (so it serves
/// the same `XDG_RUNTIME_DIR`). A thread reaps it when it exits, so it never lingers as a
/// zombie of ours. Two brokers started at once do not both run: the second finds the first one's
/// lock and exits.
///
/// # Errors
///
/// The program cannot be run: the system's error, naming where it was looked for.
pub fn start_broker() -> Result<(), std::io::Error> {
    spawn_broker(None)
}

/// As [`start_broker`], for the broker whose socket is `socket`
/// (`RUNTIME_DIR/clippy/broker.sock`): it is started with `XDG_RUNTIME_DIR` set to that
/// `RUNTIME_DIR`, so it binds there even when this process's environment lacks the variable
/// (an MCP client that passes its servers a reduced environment, say).
///
/// # Errors
///
/// As [`start_broker`].
pub fn start_broker_for(socket: &Path) -> Result<(), std::io::Error> {
    spawn_broker(socket.parent().and_then(Path::parent))
}

fn spawn_broker(runtime_dir: Option<&Path>) -> Result<(), std::io::Error> {
    let program = broker_program();
    let mut command = Command::new(&program);
    if let Some(dir) = runtime_dir {
        command.env("XDG_RUNTIME_DIR", dir);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            let looked = if program.is_absolute() {
                program.display().to_string()
            } else {
                "next to this program, and on PATH".to_owned()
            };
            std::io::Error::new(
                e.kind(),
                format!("cannot run clippy-broker ({looked}): {e}"),
            )
        })?;
    // Without a thread to reap it, it would be a zombie once it exits; a process that ends
    // first leaves it to init, which reaps it.
    let _ = std::thread::Builder::new()
        .name("clippy-broker-reaper".into())
        .spawn(move || child.wait());
    Ok(())
}

/// Whether `error` means that nobody listens at the socket (no socket file, or nobody accepts
/// on it): a broker to start, or one that is not up yet.
fn nobody_listens(error: &ProtoError) -> bool {
    matches!(
        error,
        ProtoError::Io { source, .. }
            if matches!(source.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused)
    )
}

/// Runs `attempt` — a connection to the broker at `socket` and whatever has to follow it (a
/// `register`, say) — and when nobody listens at `socket`, starts a broker ([`start_broker_for`],
/// once) and runs `attempt` again, pausing a little longer each time (10 ms doubling to
/// 200 ms), until it succeeds or `deadline` passes. A broker that refuses (`attempt`'s
/// [`ProtoError::Broker`], or any failure other than nobody listening or a closed connection)
/// is not tried again.
///
/// `socket` must be where a started broker binds (`$XDG_RUNTIME_DIR/clippy/broker.sock`, as
/// [`socket_path`] says): a broker cannot be started anywhere else.
///
/// # Errors
///
/// [`ProtoError::NoBroker`] when the broker cannot be run or does not answer by `deadline`;
/// otherwise the error of the attempt that was not tried again.
pub fn with_broker<T>(
    socket: &Path,
    deadline: Instant,
    mut attempt: impl FnMut() -> Result<T, ProtoError>,
) -> Result<T, ProtoError> {
    match attempt() {
        Err(e) if nobody_listens(&e) => {}
        done => return done,
    }
    start_broker_for(socket).map_err(|e| ProtoError::NoBroker {
        socket: socket.to_owned(),
        started: false,
        detail: e.to_string(),
    })?;
    let mut pause = MIN_START_PAUSE;
    loop {
        let last = match attempt() {
            Err(e) if nobody_listens(&e) || matches!(e, ProtoError::Closed) => e,
            done => return done,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ProtoError::NoBroker {
                socket: socket.to_owned(),
                started: true,
                detail: format!("{last} (its log: broker.log next to the socket)"),
            });
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(MAX_START_PAUSE);
    }
}

/// How long [`Client::request`] keeps polling for its reply, giving way to any other runnable
/// thread between polls, before it sleeps in `read`. A small request's reply usually comes within
/// it, so the client's CPU is not idle when it does: on a VM, waking an idle vCPU costs about as
/// much as the whole round trip. A broker on the client's own CPU runs in the yields.
pub const REPLY_SPIN: Duration = Duration::from_micros(200);

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
        Self::hello(Self::open(path)?, role)
    }

    /// As [`Client::connect`], but a broker that accepts the connection and does not answer
    /// `hello` within `timeout` is an error ([`ProtoError::Io`] of kind `WouldBlock` or
    /// `TimedOut`) rather than a wait for ever. The read timeout stays set to `timeout`.
    pub fn connect_within(path: &Path, role: Role, timeout: Duration) -> Result<Self, ProtoError> {
        let stream = Self::open(path)?;
        stream
            .set_read_timeout(Some(timeout))
            .map_err(|source| ProtoError::Io {
                context: "cannot set the socket timeout".into(),
                source,
            })?;
        Self::hello(stream, role)
    }

    fn open(path: &Path) -> Result<UnixStream, ProtoError> {
        UnixStream::connect(path).map_err(|source| ProtoError::Io {
            context: format!("cannot connect to the broker at {}", path.display()),
            source,
        })
    }

    fn hello(stream: UnixStream, role: Role) -> Result<Self, ProtoError> {
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

    /// Sends the request `make(id)` with a fresh id and waits for its reply, polling for it for
    /// [`REPLY_SPIN`] before it sleeps. An `error` reply becomes [`ProtoError::Broker`].
    pub fn request(&mut self, make: impl FnOnce(u32) -> Message) -> Result<Message, ProtoError> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.send(&make(id))?;
        let mut spin_until = Some(Instant::now() + REPLY_SPIN);
        loop {
            let message = self.read_message(&mut spin_until)?;
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
            None => self.read_message(&mut None),
        }
    }

    /// The next message. Until `spin_until` (then set to `None`) the socket is polled without
    /// blocking, yielding between polls; after it, or without it, a read sleeps until data comes.
    fn read_message(&mut self, spin_until: &mut Option<Instant>) -> Result<Message, ProtoError> {
        loop {
            // Decoded where it lies in the decoder's buffer (kept between replies), which the
            // socket is read into: a large reply is copied once, into the message.
            if let Some(payload) = self.decoder.next_payload()? {
                return decode(payload);
            }
            let read = match *spin_until {
                Some(until) => match self.decoder.read_from(&mut DontWait(&self.stream)) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if Instant::now() >= until {
                            *spin_until = None;
                        } else {
                            std::thread::yield_now();
                        }
                        continue;
                    }
                    read => read,
                },
                None => self.decoder.read_from(&mut self.stream),
            };
            let n = match read {
                // A read with a timeout is not restarted after a signal (SIGSTOP then SIGCONT
                // of a waiting `clippy-ctl`, say): read again.
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
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
        }
    }
}

/// Reads from a socket without blocking (`MSG_DONTWAIT`), leaving the socket itself, and any
/// clone of it, blocking.
struct DontWait<'a>(&'a UnixStream);

impl Read for DontWait<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        nix::sys::socket::recv(
            self.0.as_raw_fd(),
            buf,
            nix::sys::socket::MsgFlags::MSG_DONTWAIT,
        )
        .map_err(std::io::Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode;

    /// A client past `hello` on one end of a socket pair, and the broker's end.
    fn pair() -> (Client, UnixStream) {
        let (ours, theirs) = UnixStream::pair().expect("a socket pair");
        let client = Client {
            stream: ours,
            decoder: FrameDecoder::default(),
            next_id: 1,
            out: Vec::new(),
            unsolicited: VecDeque::new(),
        };
        (client, theirs)
    }

    /// Reads one whole frame from `broker` and returns its message.
    fn read_request(broker: &mut UnixStream) -> Message {
        let mut decoder = FrameDecoder::default();
        loop {
            if let Some(payload) = decoder.next_payload().expect("a frame") {
                return decode(payload).expect("a message");
            }
            assert!(decoder.read_from(broker).expect("the request") > 0);
        }
    }

    fn list_reply(id: u32) -> Message {
        Message::Sessions {
            id,
            sessions: Vec::new(),
        }
    }

    #[test]
    fn a_reply_split_across_the_polling_and_the_sleeping_read_is_read_whole() {
        let (mut client, mut broker) = pair();
        let pause = REPLY_SPIN * 20;
        let answer = std::thread::spawn(move || {
            let id = read_request(&mut broker).id();
            let frame = encode(&list_reply(id)).expect("a frame");
            let (head, tail) = frame.split_at(frame.len() / 2);
            // Whether the client still polls or already sleeps when each half comes, the reply
            // it returns is the same.
            std::thread::sleep(pause);
            broker.write_all(head).expect("the first half");
            std::thread::sleep(pause);
            broker.write_all(tail).expect("the second half");
            broker
        });
        let reply = client.request(|id| Message::ListSessions { id });
        assert_eq!(reply.expect("a reply"), list_reply(1));
        drop(answer.join().expect("the broker's thread"));
    }

    #[test]
    fn what_comes_before_the_reply_is_kept_for_recv() {
        let (mut client, mut broker) = pair();
        let inject = Message::Inject {
            id: 0,
            session: "s1".into(),
            data: b"ls\r".to_vec(),
        };
        let sent = inject.clone();
        let answer = std::thread::spawn(move || {
            let id = read_request(&mut broker).id();
            broker
                .write_all(&encode(&sent).expect("a frame"))
                .expect("the inject");
            broker
                .write_all(&encode(&list_reply(id)).expect("a frame"))
                .expect("the reply");
            broker
        });
        let reply = client.request(|id| Message::ListSessions { id });
        assert_eq!(reply.expect("a reply"), list_reply(1));
        assert_eq!(client.recv().expect("the inject"), inject);
        drop(answer.join().expect("the broker's thread"));
    }

    #[test]
    fn a_read_timeout_still_ends_the_wait_for_a_reply_that_never_comes() {
        let (mut client, _broker) = pair();
        client
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("a timeout");
        match client.request(|id| Message::ListSessions { id }) {
            Err(ProtoError::Io { source, .. }) => assert!(
                matches!(source.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                "{source}"
            ),
            other => panic!("{other:?} to a request never answered"),
        }
    }

    #[test]
    fn polling_for_a_reply_leaves_the_socket_and_its_clones_blocking() {
        let (mut client, mut broker) = pair();
        let answer = std::thread::spawn(move || {
            let id = read_request(&mut broker).id();
            broker
                .write_all(&encode(&list_reply(id)).expect("a frame"))
                .expect("the reply");
            broker
        });
        client
            .request(|id| Message::ListSessions { id })
            .expect("a reply");
        let _broker = answer.join().expect("the broker's thread");
        // A non-blocking socket would fail at once; a blocking one waits out its timeout.
        let wait = Duration::from_millis(30);
        let mut clone = client.stream().try_clone().expect("a clone");
        clone.set_read_timeout(Some(wait)).expect("a timeout");
        let start = Instant::now();
        let read = clone.read(&mut [0u8; 16]);
        assert!(
            matches!(&read, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
            "{read:?}"
        );
        assert!(
            start.elapsed() >= wait,
            "the read returned after {:?}",
            start.elapsed()
        );
    }
}
