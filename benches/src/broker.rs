//! Workloads of the broker benchmark (`benches/broker.rs`): request round trips to a real
//! `clippy-broker` and, as the baselines, to bare Unix-socket servers of our own.
//!
//! - [`BareServer`] is the least any server can cost: it accepts one connection, reads
//!   length-prefixed frames and answers each one in one write — with the frame itself
//!   ([`BareReply::Echo`]) or with a fixed, pre-built frame ([`BareReply::Fixed`], the 4 MiB reply
//!   of the throughput test). It runs as a thread of the bench, or as a process of its own (the
//!   `bare-server` binary) waiting in `read` or, like the broker's event loop, in `epoll_wait`.
//! - [`RawConn`] speaks frames without the protocol crate: it writes a pre-encoded frame and reads
//!   the reply's bytes into a reused buffer. Against a bare server it is the baseline client;
//!   against the broker it isolates what the broker adds from what [`clippy_proto::Client`] adds.
//! - [`BrokerProcess`] runs `clippy-broker --foreground` with a private `XDG_RUNTIME_DIR`, and
//!   stops it when dropped (SIGTERM, then SIGKILL), so a failing bench leaves no process behind.
//! - [`FakeWrapper`] is a wrapper connection (role `wrapper`) that registered a session and reports
//!   turns, as `clippy-session` would.
//! - The in-process steps of the 4 MiB path ([`reassemble`], [`decode_header`], [`decode_tagged`],
//!   [`decode_turn_owned`], [`decode_turn_borrowed`], [`page_fault_cost`]) and [`Usage`], the CPU
//!   time, page faults and CPU of a thread, from `/proc` and the thread's CPU clock.

use std::fs;
use std::hint::black_box;
use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_proto::{
    Client, FrameDecoder, HEADER_LEN, MAX_FRAME, Message, PROTOCOL_VERSION, Role, SessionInfo,
    TurnData, TurnMeta, decode, encode,
};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::signal::{Signal, kill};
use nix::time::{ClockId, clock_gettime};
use nix::unistd::Pid;
use serde::Deserialize;

use crate::Rng;
pub use crate::wrapper::Error;

/// How long any wait (a reply, the broker starting or stopping) may take before the bench fails.
pub const WAIT: Duration = Duration::from_secs(10);

/// What a [`BareServer`] answers to each frame.
#[derive(Debug, Clone)]
pub enum BareReply {
    /// The frame it read, header and payload, in one write.
    Echo,
    /// This whole frame (header included), in one write, whatever the request was.
    Fixed(Vec<u8>),
}

/// How a [`BareServer`] waits for the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareWait {
    /// Blocked in `read` on the socket.
    Read,
    /// Blocked in `epoll_wait` (level-triggered, on that one socket), then reading: the way the
    /// broker's event loop (mio) waits, so the same wake-up path.
    Epoll,
}

/// A bare frame server on a Unix socket: one connection, no decoding; a thread of this process
/// ([`BareServer::start`]) or a process of its own ([`BareServer::spawn`], the `bare-server`
/// binary), since the broker is one too.
#[derive(Debug)]
pub struct BareServer {
    path: PathBuf,
    runner: Runner,
}

#[derive(Debug)]
enum Runner {
    Thread(Option<JoinHandle<io::Result<()>>>),
    Process(Option<Child>),
}

impl BareServer {
    /// Binds `path` (which must not exist) and serves the first connection on a thread until the
    /// peer closes it.
    ///
    /// # Errors
    /// When the socket cannot be bound or the thread cannot start.
    pub fn start(path: &Path, reply: BareReply) -> Result<Self, Error> {
        let listener = UnixListener::bind(path)?;
        let thread = std::thread::Builder::new()
            .name("bare-server".into())
            .spawn(move || serve(&listener, &reply, BareWait::Read))?;
        Ok(BareServer {
            path: path.to_owned(),
            runner: Runner::Thread(Some(thread)),
        })
    }

    /// Starts `binary` (the `bare-server` binary of this crate) to bind `path` and serve the
    /// first connection, waiting as `wait` says; a [`BareReply::Fixed`] frame goes to it through
    /// the file `path.frame`. Connect with [`RawConn::connect`], which waits for the socket.
    ///
    /// # Errors
    /// When the frame cannot be written or the process cannot start.
    pub fn spawn(
        binary: &Path,
        path: &Path,
        reply: &BareReply,
        wait: BareWait,
    ) -> Result<Self, Error> {
        let mut command = Command::new(binary);
        if wait == BareWait::Epoll {
            command.arg("--epoll");
        }
        command.arg(path).stdin(Stdio::null()).stdout(Stdio::null());
        if let BareReply::Fixed(frame) = reply {
            let file = path.with_extension("frame");
            fs::write(&file, frame)?;
            command.arg(file);
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        Ok(BareServer {
            path: path.to_owned(),
            runner: Runner::Process(Some(child)),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The server's process id, when it is a process of its own.
    pub fn pid(&self) -> Option<u32> {
        match &self.runner {
            Runner::Process(Some(child)) => Some(child.id()),
            Runner::Process(None) | Runner::Thread(_) => None,
        }
    }

    /// Waits for the server (after the client closed its connection) and returns its result.
    ///
    /// # Errors
    /// What the server failed with.
    pub fn finish(mut self) -> Result<(), Error> {
        match &mut self.runner {
            Runner::Thread(thread) => match thread.take().map(JoinHandle::join) {
                Some(Ok(result)) => Ok(result?),
                Some(Err(_)) => Err("the bare server thread panicked".into()),
                None => Ok(()),
            },
            Runner::Process(child) => {
                let Some(mut child) = child.take() else {
                    return Ok(());
                };
                let deadline = Instant::now() + WAIT;
                let status = loop {
                    if let Some(status) = child.try_wait()? {
                        break status;
                    }
                    if Instant::now() >= deadline {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err("the bare server process did not exit".into());
                    }
                    std::thread::sleep(Duration::from_millis(2));
                };
                if status.success() {
                    Ok(())
                } else {
                    Err(format!("the bare server process ended with {status}").into())
                }
            }
        }
    }
}

impl Drop for BareServer {
    fn drop(&mut self) {
        match &mut self.runner {
            Runner::Thread(thread) => {
                // A server still waiting in `accept` (the bench failed before connecting) must
                // not keep the process alive: connect once, so it accepts and sees the end of
                // the stream.
                if let Some(thread) = thread.take() {
                    if !thread.is_finished() {
                        let _ = UnixStream::connect(&self.path);
                    }
                    let _ = thread.join();
                }
            }
            Runner::Process(child) => {
                if let Some(mut child) = child.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_file(self.path.with_extension("frame"));
    }
}

/// What the `bare-server` binary runs: binds `path`, serves its first connection until the peer
/// closes it.
///
/// # Errors
/// When binding, waiting, reading or writing fails.
pub fn serve_at(path: &Path, reply: &BareReply, wait: BareWait) -> io::Result<()> {
    serve(&UnixListener::bind(path)?, reply, wait)
}

fn serve(listener: &UnixListener, reply: &BareReply, wait: BareWait) -> io::Result<()> {
    let (mut stream, _) = listener.accept()?;
    let epoll = match wait {
        BareWait::Read => None,
        BareWait::Epoll => {
            let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
            epoll.add(&stream, EpollEvent::new(EpollFlags::EPOLLIN, 0))?;
            Some(epoll)
        }
    };
    // Header and payload of the request, kept together so an echo is one write.
    let mut frame = Vec::new();
    let mut header = [0u8; HEADER_LEN];
    loop {
        if let Some(epoll) = &epoll {
            let mut events = [EpollEvent::empty()];
            loop {
                match epoll.wait(&mut events, EpollTimeout::NONE) {
                    Ok(_) => break,
                    Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        match stream.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let len = frame_len(&header)?;
        frame.clear();
        frame.extend_from_slice(&header);
        frame.resize(HEADER_LEN + len, 0);
        stream.read_exact(&mut frame[HEADER_LEN..])?;
        match reply {
            BareReply::Echo => stream.write_all(&frame)?,
            BareReply::Fixed(fixed) => stream.write_all(fixed)?,
        }
    }
}

/// The payload length announced by the header at the start of `frame`.
fn frame_len(frame: &[u8]) -> io::Result<usize> {
    let header: [u8; HEADER_LEN] = frame
        .get(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or_else(|| io::Error::other("a frame shorter than its header"))?;
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::other(format!(
            "a frame of {len} bytes (over {MAX_FRAME})"
        )));
    }
    Ok(len)
}

/// A connection that writes ready-made frames and reads replies as bytes, into a buffer it
/// reuses: the least a client can do.
#[derive(Debug)]
pub struct RawConn {
    stream: UnixStream,
    reply: Vec<u8>,
}

impl RawConn {
    /// Connects to `path` (a [`BareServer`]; for the broker use [`RawConn::broker`]). A server
    /// still starting (no socket yet, or not listening yet) is waited for, up to [`WAIT`].
    ///
    /// # Errors
    /// When the connection cannot be made.
    pub fn connect(path: &Path) -> Result<Self, Error> {
        let deadline = Instant::now() + WAIT;
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(stream) => break stream,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                    ) && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(format!("cannot connect to {}: {e}", path.display()).into()),
            }
        };
        stream.set_read_timeout(Some(WAIT))?;
        Ok(RawConn {
            stream,
            reply: Vec::new(),
        })
    }

    /// Connects to the broker at `path` and says `hello` as a client.
    ///
    /// # Errors
    /// When the connection cannot be made or the broker does not answer `hello_ack`.
    pub fn broker(path: &Path) -> Result<Self, Error> {
        let mut conn = RawConn::connect(path)?;
        conn.round_trip(&encode(&Message::Hello {
            id: 1,
            version: PROTOCOL_VERSION,
            role: Role::Client,
        })?)?;
        match conn.decode_reply()? {
            Message::HelloAck { .. } => Ok(conn),
            other => Err(format!("{other:?} to hello").into()),
        }
    }

    /// Writes `frame` (header and payload) in one write and reads one reply frame; returns the
    /// reply's payload length. The payload stays in [`RawConn::reply`] until the next call.
    ///
    /// # Errors
    /// When writing or reading fails, or the reply's header is over [`MAX_FRAME`].
    pub fn round_trip(&mut self, frame: &[u8]) -> Result<usize, Error> {
        self.stream.write_all(frame)?;
        let mut header = [0u8; HEADER_LEN];
        self.stream.read_exact(&mut header)?;
        let len = frame_len(&header)?;
        // Same length as last time (the usual case): no zeroing, no allocation.
        self.reply.resize(len, 0);
        self.stream.read_exact(&mut self.reply)?;
        Ok(len)
    }

    /// The payload of the last reply.
    pub fn reply(&self) -> &[u8] {
        &self.reply
    }

    /// The last reply, decoded (to check it, outside the timed part).
    ///
    /// # Errors
    /// When it does not decode.
    pub fn decode_reply(&self) -> Result<Message, Error> {
        Ok(decode(&self.reply)?)
    }
}

/// A `clippy-broker --foreground` process with `XDG_RUNTIME_DIR` set to a directory of ours;
/// stopped when dropped.
#[derive(Debug)]
pub struct BrokerProcess {
    child: Option<Child>,
    socket: PathBuf,
    stderr: PathBuf,
}

impl BrokerProcess {
    /// Starts `binary --foreground args…` with `XDG_RUNTIME_DIR=runtime` (an existing directory,
    /// mode 0700), its log to `runtime/broker.stderr`, and waits until its socket accepts.
    ///
    /// # Errors
    /// When the broker cannot be started, exits, or does not accept within [`WAIT`].
    pub fn start(binary: &Path, runtime: &Path, args: &[&str]) -> Result<Self, Error> {
        let stderr = runtime.join("broker.stderr");
        let child = Command::new(binary)
            .arg("--foreground")
            .args(args)
            .env("XDG_RUNTIME_DIR", runtime)
            .env("XDG_STATE_HOME", Path::new(runtime).join("state"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr)?)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut broker = BrokerProcess {
            child: Some(child),
            socket: runtime.join("clippy").join("broker.sock"),
            stderr,
        };
        let deadline = Instant::now() + WAIT;
        while UnixStream::connect(&broker.socket).is_err() {
            if let Some(status) = broker.child_mut()?.try_wait()? {
                return Err(format!("the broker exited with {status}: {}", broker.log()).into());
            }
            if Instant::now() >= deadline {
                return Err(format!("the broker did not start: {}", broker.log()).into());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(broker)
    }

    fn child_mut(&mut self) -> Result<&mut Child, Error> {
        self.child
            .as_mut()
            .ok_or_else(|| "the broker was stopped".into())
    }

    /// Its socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Its pid.
    ///
    /// # Errors
    /// When it was stopped already.
    pub fn pid(&self) -> Result<u32, Error> {
        Ok(self.child.as_ref().ok_or("the broker was stopped")?.id())
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit (SIGKILL after [`WAIT`]).
    ///
    /// # Errors
    /// When it does not stop on SIGTERM (it is killed then) or waiting fails.
    pub fn stop(mut self) -> Result<ExitStatus, Error> {
        let Some(mut child) = self.child.take() else {
            return Err("the broker was stopped".into());
        };
        terminate(&mut child, WAIT).ok_or_else(|| -> Error {
            format!("the broker did not stop on SIGTERM: {}", self.log()).into()
        })
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = terminate(&mut child, Duration::from_secs(3));
        }
    }
}

/// SIGTERM, then up to `limit` for the exit; SIGKILL (and `None`) when it does not come.
fn terminate(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// A wrapper connection that registered one session.
#[derive(Debug)]
pub struct FakeWrapper {
    client: Client,
    session: String,
    seq: u64,
}

impl FakeWrapper {
    /// Connects to the broker at `socket` as a wrapper and registers `session` named `name`.
    ///
    /// # Errors
    /// When connecting or registering fails.
    pub fn register(socket: &Path, session: &str, name: &str) -> Result<Self, Error> {
        let mut client = Client::connect(socket, Role::Wrapper)?;
        client.set_read_timeout(Some(WAIT))?;
        let info = SessionInfo {
            session: session.to_owned(),
            name: Some(name.to_owned()),
            pid: std::process::id(),
            command: vec!["agent".to_owned(), "--bench".to_owned()],
            preset: "generic".to_owned(),
            bracketed_paste: true,
            spool: None,
            cwd: None,
            no_history: false,
        };
        match client.request(|id| Message::Register {
            id,
            session: info,
            progress: None,
            resends: false,
        })? {
            Message::Done { .. } => Ok(FakeWrapper {
                client,
                session: session.to_owned(),
                seq: 0,
            }),
            other => Err(format!("{other:?} to register").into()),
        }
    }

    /// Reports the next turn with `content` (and `text` as its text view); returns its turn id.
    ///
    /// # Errors
    /// When the broker does not answer `turn_recorded`.
    pub fn report(&mut self, content: Vec<u8>, text: String) -> Result<String, Error> {
        self.seq += 1;
        let turn = TurnData {
            seq: self.seq,
            timestamp: 0,
            content,
            text,
            interrupted: false,
            truncated: false,
            exit_code: Some(0),
            cwd: Some("/home/user/project".to_owned()),
            input: Some("make it faster".to_owned()),
            spool_span: None,
            message: None,
        };
        let session = self.session.clone();
        match self
            .client
            .request(|id| Message::TurnCompleted { id, session, turn })?
        {
            Message::TurnRecorded { turn_id, .. } => Ok(turn_id),
            other => Err(format!("{other:?} to turn_completed").into()),
        }
    }
}

/// A `turn` reply read as a plain struct (no internally tagged enum, so serde buffers nothing),
/// content copied into an owned `Vec`: what [`decode`] could cost without the tag.
#[derive(Deserialize)]
struct OwnedTurnReply {
    #[serde(rename = "type")]
    kind: String,
    id: u32,
    turn: TurnMeta,
    #[serde(with = "serde_bytes")]
    content: Vec<u8>,
}

/// The same with the content borrowed from the payload: no copy at all.
#[derive(Deserialize)]
struct BorrowedTurnReply<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    id: u32,
    turn: TurnMeta,
    #[serde(borrow, with = "serde_bytes")]
    content: &'a [u8],
}

/// Decodes the payload of a `turn` reply into a plain struct with owned content; returns the
/// content's length (plus nothing the optimiser can see through).
///
/// # Errors
/// When `payload` is not a `turn` reply.
pub fn decode_turn_owned(payload: &[u8]) -> Result<usize, Error> {
    let reply: OwnedTurnReply = rmp_serde::from_slice(payload)?;
    check_turn(&reply.kind, reply.id, &reply.turn)?;
    Ok(reply.content.len())
}

/// Decodes the payload of a `turn` reply into a plain struct that borrows its content; returns
/// the content's length.
///
/// # Errors
/// When `payload` is not a `turn` reply.
pub fn decode_turn_borrowed(payload: &[u8]) -> Result<usize, Error> {
    let reply: BorrowedTurnReply<'_> = rmp_serde::from_slice(payload)?;
    check_turn(reply.kind, reply.id, &reply.turn)?;
    Ok(reply.content.len())
}

fn check_turn(kind: &str, id: u32, turn: &TurnMeta) -> Result<(), Error> {
    if kind == "turn" && id > 0 && !turn.turn_id.is_empty() {
        Ok(())
    } else {
        Err(format!("not a turn reply: {kind} {id}").into())
    }
}

/// What [`Client`] does with a reply's bytes before decoding: `frame` read straight into
/// `decoder`'s buffer ([`FrameDecoder::read_from`]) at most `piece` bytes per read, as from a
/// socket, then the payload borrowed where it lies ([`FrameDecoder::next_payload`]). Returns
/// its length.
///
/// # Errors
/// When `frame` is not one whole frame.
pub fn reassemble(decoder: &mut FrameDecoder, frame: &[u8], piece: usize) -> Result<usize, Error> {
    let mut rest = frame;
    while !rest.is_empty() {
        let mut reads = Read::take(rest, piece as u64);
        let n = decoder.read_from(&mut reads)?;
        rest = &rest[n..];
    }
    let payload = decoder.next_payload()?.ok_or("not a whole frame")?;
    Ok(payload.len())
}

/// What `clippy_proto::decode` reads first (its private `Header`): `type` and `id` only.
#[derive(Deserialize)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
    id: u32,
}

/// `decode`'s first pass alone: the payload read for its `type` and `id`, every other field
/// skipped. Returns the id.
///
/// # Errors
/// When `payload` is not a map with those two fields.
pub fn decode_header(payload: &[u8]) -> Result<u32, Error> {
    let header: Header = rmp_serde::from_slice(payload)?;
    Ok(header.id + u32::from(header.kind.is_empty()))
}

/// `decode`'s second pass alone: the payload read as the internally tagged [`Message`].
///
/// # Errors
/// When `payload` is not a message.
pub fn decode_tagged(payload: &[u8]) -> Result<Message, Error> {
    Ok(rmp_serde::from_slice(payload)?)
}

/// CPU time and minor page faults of one thread, and the CPU it last ran on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Time on a CPU (user and kernel).
    pub cpu: Duration,
    /// Minor page faults (a page touched for the first time, mostly).
    pub minor_faults: u64,
    /// The CPU it last ran on (not summed by [`Usage::since`] and [`Usage::plus`]).
    pub last_cpu: u32,
}

impl Usage {
    /// The main thread of process `pid`, from `/proc/PID/{schedstat,stat}` (exact while it
    /// sleeps; the faults are the whole process's).
    ///
    /// # Errors
    /// When `/proc/PID` cannot be read (the process is gone).
    pub fn of_process(pid: u32) -> Result<Usage, Error> {
        let dir = Path::new("/proc").join(pid.to_string());
        let schedstat = fs::read_to_string(dir.join("schedstat"))?;
        let cpu_ns: u64 = schedstat
            .split_whitespace()
            .next()
            .ok_or("an empty schedstat")?
            .parse()?;
        let (minor_faults, last_cpu) = stat_fields(&dir)?;
        Ok(Usage {
            cpu: Duration::from_nanos(cpu_ns),
            minor_faults,
            last_cpu,
        })
    }

    /// The calling thread: its CPU clock (exact even while it runs, unlike `schedstat`) and
    /// `/proc/thread-self/stat`.
    ///
    /// # Errors
    /// When the clock or `/proc/thread-self` cannot be read.
    pub fn of_this_thread() -> Result<Usage, Error> {
        let cpu = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)?;
        let (minor_faults, last_cpu) = stat_fields(Path::new("/proc/thread-self"))?;
        Ok(Usage {
            cpu: cpu.into(),
            minor_faults,
            last_cpu,
        })
    }

    /// What was used since `earlier` (the last CPU is `self`'s).
    #[must_use]
    pub fn since(self, earlier: Usage) -> Usage {
        Usage {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            last_cpu: self.last_cpu,
        }
    }

    /// The sum of both (the last CPU is `other`'s).
    #[must_use]
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            cpu: self.cpu + other.cpu,
            minor_faults: self.minor_faults + other.minor_faults,
            last_cpu: other.last_cpu,
        }
    }
}

/// `minflt` (the 10th field) and `processor` (the 39th) of `dir/stat`.
fn stat_fields(dir: &Path) -> Result<(u64, u32), Error> {
    let stat = fs::read_to_string(dir.join("stat"))?;
    // After `pid (comm)` come the fields from the 3rd (`state`) on.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .ok_or("a stat without `(comm)`")?
        .1
        .split_whitespace()
        .collect();
    let field = |n: usize| fields.get(n - 3).ok_or("a short stat");
    Ok((field(10)?.parse()?, field(39)?.parse()?))
}

/// Bytes of the fresh mapping [`page_fault_cost`] touches: above glibc's largest dynamic mmap
/// threshold (32 MiB), so the allocation is always a new mapping, whatever the allocator did
/// before.
const FRESH_MAPPING: usize = (32 << 20) + (4 << 20);

/// The time of one first touch of a page (4 KiB) of memory no one used before: a fresh mapping
/// of 36 MiB (`FRESH_MAPPING`) written one byte per page, the time divided by its pages. What
/// every freshly allocated large buffer pays per page before its first use.
pub fn page_fault_cost() -> Duration {
    const PAGE: usize = 4096;
    let start = Instant::now();
    let mut buf: Vec<u8> = Vec::with_capacity(FRESH_MAPPING);
    let spare = buf.spare_capacity_mut();
    for byte in spare.iter_mut().step_by(PAGE) {
        byte.write(1);
    }
    black_box(spare);
    let elapsed = start.elapsed();
    drop(buf);
    elapsed / u32::try_from(FRESH_MAPPING / PAGE).unwrap_or(u32::MAX)
}

/// `len` pseudo-random bytes (deterministic): content no compressor or fast path can shrink.
pub fn random_bytes(len: usize) -> Vec<u8> {
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The whole frame (header included) that carries `payload`.
pub fn frame_of(payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let mut frame = Vec::with_capacity(HEADER_LEN + payload.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("clippy-benches-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    #[test]
    fn bare_server_echoes_and_answers_fixed_frames() {
        let dir = scratch("bare");
        let echo = BareServer::start(&dir.join("echo.sock"), BareReply::Echo).expect("echo");
        let fixed_frame = frame_of(&random_bytes(100_000));
        let fixed = BareServer::start(
            &dir.join("fixed.sock"),
            BareReply::Fixed(fixed_frame.clone()),
        )
        .expect("fixed");
        let mut conn = RawConn::connect(echo.path()).expect("connect");
        for size in [0, 1, 57, 4096] {
            let frame = frame_of(&random_bytes(size));
            assert_eq!(conn.round_trip(&frame).expect("echo"), size);
            assert_eq!(conn.reply(), &frame[HEADER_LEN..]);
        }
        drop(conn);
        echo.finish().expect("echo server");
        let mut conn = RawConn::connect(fixed.path()).expect("connect");
        for _ in 0..3 {
            conn.round_trip(&frame_of(b"give")).expect("fixed");
            assert_eq!(conn.reply(), &fixed_frame[HEADER_LEN..]);
        }
        drop(conn);
        fixed.finish().expect("fixed server");
        fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_bare_server_nobody_connects_to_does_not_hang_its_drop() {
        let dir = scratch("unused");
        drop(BareServer::start(&dir.join("s.sock"), BareReply::Echo).expect("start"));
        fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn turn_replies_decode_every_way() {
        let content = random_bytes(300_000);
        let frame = encode(&Message::Turn {
            id: 7,
            turn: TurnMeta {
                turn_id: "abc:3".into(),
                timestamp: 1,
                byte_length: 300_000,
                interrupted: false,
                truncated: false,
                exit_code: None,
                cwd: None,
                input: None,
                spool_span: None,
                message_length: None,
            },
            content: content.clone().into(),
        })
        .expect("encode");
        let payload = &frame[HEADER_LEN..];
        assert_eq!(decode_turn_owned(payload).expect("owned"), content.len());
        assert_eq!(
            decode_turn_borrowed(payload).expect("borrowed"),
            content.len()
        );
        let mut decoder = FrameDecoder::default();
        for _ in 0..2 {
            assert_eq!(
                reassemble(&mut decoder, &frame, 64 * 1024).expect("frame"),
                payload.len()
            );
        }
        let hello = encode(&Message::Done { id: 1 }).expect("encode");
        assert!(decode_turn_owned(&hello[HEADER_LEN..]).is_err());
    }

    #[test]
    fn usage_counts_cpu_and_faults() {
        let before = Usage::of_this_thread().expect("usage");
        let mut buf = vec![0u8; 8 << 20];
        for (i, b) in buf.iter_mut().enumerate().step_by(4096) {
            *b = i as u8;
        }
        let spent = Usage::of_this_thread().expect("usage").since(before);
        assert!(spent.minor_faults >= 1000, "{spent:?}");
        assert!(spent.cpu > Duration::ZERO, "{spent:?}");
        drop(buf);
        let me = Usage::of_process(std::process::id()).expect("usage");
        assert!(me.cpu > Duration::ZERO && me.minor_faults > 0, "{me:?}");
        let per_page = page_fault_cost();
        assert!(per_page > Duration::ZERO && per_page < Duration::from_millis(1));
    }

    #[test]
    fn random_bytes_are_deterministic_and_varied() {
        let a = random_bytes(1 << 16);
        assert_eq!(a.len(), 1 << 16);
        assert_eq!(a, random_bytes(1 << 16));
        assert_eq!(random_bytes(13), a[..13]);
        let zeros = a.iter().filter(|&&b| b == 0).count();
        assert!(zeros < 1000, "{zeros} zero bytes");
    }
}
