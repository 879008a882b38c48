//! The event loop: one thread, one `mio::Poll`, non-blocking everything.
//!
//! Each connection has a [`FrameDecoder`] for what arrives and a bounded queue of encoded frames
//! for what leaves. Writes go straight to the socket while it takes them; what it does not take
//! waits in the queue, with WRITABLE interest registered only while the queue is non-empty. A
//! peer that stops reading cannot make anyone wait: when its queue passes its bound (bytes or
//! frames) it is disconnected, and nothing else is affected.
//!
//! Reading is budgeted per connection and per round ([`READ_BUDGET`]), so a wrapper flooding
//! turns shares the loop with everyone else; a connection that used its budget is read again in
//! the next round without waiting for a new readiness event.
//!
//! File deliveries run on a worker thread (the file sink syncs to disk, which may take long on a
//! slow file system) and come back through a [`Waker`]; so do the history store's jobs, on a
//! thread of their own (`crate::history`). Signals arrive through a self-pipe.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, IoSlice, Read, Write};
use std::os::unix::net::UnixListener as StdUnixListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clippy_proto::{
    ErrorReason, Frame, FrameDecoder, Message, ProtoError, decode, encode, encode_frame,
};
use clippy_pty::{Signal, SignalPipe};
use clippy_registry::{FileSink, Format, SinkError, TurnRecord};
use mio::net::{UnixListener, UnixStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use std::os::fd::AsRawFd;

use crate::error::BrokerError;
use crate::history::{self, HistoryOutput};
use crate::log::{Level, Logger};
use crate::startup::remove_socket;
use clippy_broker_core::{
    Action, ConnId, Delivery, HistoryBatch, HistoryJob, HistoryRecord, State,
};

const LISTENER: Token = Token(0);
const SIGNALS: Token = Token(1);
const WAKER: Token = Token(2);
/// Connection ids start here, so their tokens never collide with the fixed ones.
const FIRST_CONN: u64 = 16;
/// Bytes read from one connection per round before the others get their turn.
pub const READ_BUDGET: usize = 1024 * 1024;
/// Size of the read buffer.
const READ_CHUNK: usize = 64 * 1024;
/// Frames handed to one `writev`.
const MAX_IOVECS: usize = 64;
/// History events queued at a time to a subscriber catching up: more follow as its socket
/// drains, so a long replay never counts against the lag bound.
const REPLAY_WINDOW: usize = 128;

/// Limits of the event loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// Bytes queued to one connection (not yet taken by its socket) before it is disconnected.
    pub queue_max_bytes: usize,
    /// Frames queued to one connection before it is disconnected.
    pub queue_max_frames: usize,
    /// How long a connection being closed may take to read what is still queued to it.
    pub drain_timeout: Duration,
    /// Event frames queued to a subscriber before it counts as lagging and is dropped (with a
    /// final `subscriber.lagged` event, which the general bounds still leave room for).
    pub subscriber_max_frames: usize,
}

impl Default for ServerConfig {
    /// 64 MiB or 1024 frames per connection, 5 s to drain, 512 events behind for a subscriber.
    fn default() -> ServerConfig {
        ServerConfig {
            queue_max_bytes: 64 * 1024 * 1024,
            queue_max_frames: 1024,
            drain_timeout: Duration::from_secs(5),
            subscriber_max_frames: 512,
        }
    }
}

/// One accepted connection.
struct Conn {
    stream: UnixStream,
    decoder: FrameDecoder,
    /// Encoded frames waiting for the socket, oldest first (a turn's content shared with the
    /// ring, not copied into its frame).
    out: VecDeque<Frame>,
    /// Bytes of `out.front()` already written.
    written: usize,
    /// Sum of the lengths of the frames in `out`.
    queued: usize,
    interest: Interest,
    /// Set when the connection is closing: nothing more is read, what is queued is still
    /// written until then.
    draining: Option<Instant>,
    /// A write to it failed (the peer closed its end): nothing more is written, and it is
    /// closed once what it sent before is handled (a wrapper's `deregister` written just
    /// before it exits, behind a report whose reply found the socket closed).
    write_failed: bool,
}

/// When a read of a connection may stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Drained {
    /// At the first read that returns less than asked: the socket was drained (edge-triggered
    /// readiness reports what arrives after it).
    Short,
    /// Only at `WouldBlock` or the end of the stream (the peer hung up: its end must be seen
    /// now, since no further edge will come; or a read continued after its budget).
    Empty,
}

/// How to close a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CloseMode {
    /// Drop it now, queue and all.
    Hard,
    /// Stop reading; write what is queued (until the drain timeout), then drop it.
    Drain,
}

/// A file delivery for the worker thread.
struct FileJob {
    path: PathBuf,
    record: TurnRecord,
    format: Format,
    reply_to: ConnId,
    reply_id: u32,
}

/// A finished file (or clipboard) delivery.
pub(crate) struct FileDone {
    pub(crate) reply_to: ConnId,
    pub(crate) reply_id: u32,
    pub(crate) result: Result<(), SinkError>,
}

/// The broker's event loop and everything it owns.
pub struct Server {
    poll: Poll,
    listener: Option<UnixListener>,
    socket_path: PathBuf,
    socket_id: (u64, u64),
    signals: SignalPipe,
    jobs: Option<mpsc::Sender<FileJob>>,
    done: mpsc::Receiver<FileDone>,
    /// The history store's thread, when the broker keeps history.
    history: Option<mpsc::Sender<HistoryJob>>,
    /// The history jobs held before they go to its thread together.
    history_batch: HistoryBatch,
    history_done: mpsc::Receiver<HistoryOutput>,
    /// The clipboard owner's thread, started on the first clipboard delivery.
    clipboard: crate::clipboard::ClipboardOwner,
    conns: HashMap<ConnId, Conn>,
    next_conn: u64,
    state: State,
    log: Logger,
    uid: u32,
    config: ServerConfig,
    /// Connections that used their read budget and have more to read.
    pending_reads: Vec<ConnId>,
    /// Subscribers catching up on the event history (fed as their sockets drain).
    replaying: HashSet<ConnId>,
    scratch: Vec<u8>,
    /// The state machine's clock: Unix milliseconds at start, advanced by a monotonic clock (so
    /// wait deadlines do not move when the wall clock is set).
    started: (Instant, u64),
}

impl Server {
    /// Sets the loop up around a bound listener. `socket_id` is the socket file's (device,
    /// inode), so that it is removed at exit only if it is still ours.
    ///
    /// # Errors
    ///
    /// [`BrokerError::Io`] when the poll, the waker or the worker thread cannot be set up.
    #[allow(clippy::too_many_arguments)] // each is one part of the loop, named at the call
    pub fn new(
        listener: StdUnixListener,
        socket_path: PathBuf,
        socket_id: (u64, u64),
        signals: SignalPipe,
        state: State,
        log: Logger,
        config: ServerConfig,
        store: Option<(history::Opened, history::Limits)>,
    ) -> Result<Server, BrokerError> {
        let poll = Poll::new().map_err(BrokerError::io("cannot create the event loop"))?;
        listener
            .set_nonblocking(true)
            .map_err(BrokerError::io("cannot make the socket non-blocking"))?;
        let mut listener = UnixListener::from_std(listener);
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(BrokerError::io("cannot poll the socket"))?;
        poll.registry()
            .register(
                &mut SourceFd(&signals.as_raw_fd()),
                SIGNALS,
                Interest::READABLE,
            )
            .map_err(BrokerError::io("cannot poll the signal pipe"))?;
        let waker = Arc::new(
            Waker::new(poll.registry(), WAKER).map_err(BrokerError::io("cannot create a waker"))?,
        );
        let (jobs, job_rx) = mpsc::channel::<FileJob>();
        let (done_tx, done) = mpsc::channel::<FileDone>();
        let clipboard = crate::clipboard::ClipboardOwner::new(done_tx.clone(), Arc::clone(&waker));
        let (history_tx, history_done) = mpsc::channel::<HistoryOutput>();
        let history = match store {
            Some((opened, limits)) => {
                let (jobs, job_rx) = mpsc::channel::<HistoryJob>();
                let waker = Arc::clone(&waker);
                std::thread::Builder::new()
                    .name("clippy-broker-history".into())
                    .spawn(move || {
                        history::run(opened, limits, &job_rx, &history_tx, &waker);
                    })
                    .map_err(BrokerError::io("cannot start the history thread"))?;
                Some(jobs)
            }
            None => None,
        };
        std::thread::Builder::new()
            .name("clippy-broker-file-sink".into())
            .spawn(move || file_worker(&job_rx, &done_tx, &waker))
            .map_err(BrokerError::io("cannot start the file sink thread"))?;
        Ok(Server {
            poll,
            listener: Some(listener),
            socket_path,
            socket_id,
            signals,
            jobs: Some(jobs),
            done,
            history,
            history_batch: HistoryBatch::default(),
            history_done,
            clipboard,
            conns: HashMap::new(),
            next_conn: FIRST_CONN,
            state,
            log,
            uid: nix::unistd::geteuid().as_raw(),
            config,
            pending_reads: Vec::new(),
            replaying: HashSet::new(),
            scratch: vec![0; READ_CHUNK],
            started: (Instant::now(), clippy_proto::unix_ms_now()),
        })
    }

    /// Runs until SIGTERM or SIGINT: then stops accepting, closes every connection, removes the
    /// socket and returns `Ok`.
    ///
    /// # Errors
    ///
    /// [`BrokerError::Io`] when polling fails (the socket is removed all the same).
    pub fn run(mut self) -> Result<(), BrokerError> {
        let mut events = Events::with_capacity(256);
        loop {
            let timeout = self.poll_timeout();
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.shutdown("the event loop failed");
                return Err(BrokerError::io("polling failed")(e));
            }
            for event in &events {
                match event.token() {
                    LISTENER => self.accept_all(),
                    SIGNALS => {
                        if let Some(signal) = self.take_signals() {
                            self.shutdown(&format!("{signal:?} received"));
                            return Ok(());
                        }
                    }
                    WAKER => {
                        self.collect_file_results();
                        self.collect_history_output();
                    }
                    Token(token) => {
                        let id = ConnId(token as u64);
                        if event.is_writable() || event.is_write_closed() {
                            self.flush(id);
                        }
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            // Unless the peer also hung up, a short read drained the socket.
                            let closing = event.is_read_closed() || event.is_error();
                            self.read_until(
                                id,
                                if closing {
                                    Drained::Empty
                                } else {
                                    Drained::Short
                                },
                            );
                        }
                    }
                }
            }
            for id in std::mem::take(&mut self.pending_reads) {
                self.read_until(id, Drained::Empty);
            }
            let now = self.now_ms();
            // A hello sent while this loop was behind is in the socket: read it before the
            // deadline closes the connection as silent.
            for id in self.state.hellos_due(now) {
                self.read_until(id, Drained::Empty);
            }
            let expired = self.state.expire(now);
            self.apply(expired);
            if self.history_batch.is_due(now) {
                self.hand_over_history();
            }
            if self.state.has_scan_work() {
                let scanned = self.state.continue_scans();
                self.apply(scanned);
            }
            self.expire_drains();
        }
    }

    fn poll_timeout(&self) -> Option<Duration> {
        if !self.pending_reads.is_empty() || self.state.has_scan_work() {
            return Some(Duration::ZERO);
        }
        let now = Instant::now();
        let drain = self
            .conns
            .values()
            .filter_map(|c| c.draining)
            .min()
            .map(|deadline| deadline.saturating_duration_since(now));
        let now_ms = self.now_ms();
        let wait = (self.state.next_deadline().into_iter())
            .chain(self.history_batch.due_at())
            .min()
            .map(|deadline| Duration::from_millis(deadline.saturating_sub(now_ms)));
        drain.into_iter().chain(wait).min()
    }

    /// The state machine's clock (see `started`).
    fn now_ms(&self) -> u64 {
        let (at, wall) = self.started;
        wall.saturating_add(u64::try_from(at.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    /// The first stopping signal among those delivered; others are logged and ignored.
    fn take_signals(&mut self) -> Option<Signal> {
        let signals = match self.signals.drain() {
            Ok(signals) => signals,
            Err(e) => {
                self.log.log(Level::Error, &format!("signal pipe: {e}"));
                return None;
            }
        };
        let mut stop = None;
        for signal in signals {
            if matches!(signal, Signal::SIGTERM | Signal::SIGINT) {
                stop.get_or_insert(signal);
            } else {
                self.log
                    .log(Level::Info, &format!("{signal:?} received; ignored"));
            }
        }
        stop
    }

    fn accept_all(&mut self) {
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            match listener.accept() {
                Ok((stream, _)) => self.accept(stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.log
                        .log(Level::Error, &format!("cannot accept a connection: {e}"));
                    return;
                }
            }
        }
    }

    fn accept(&mut self, mut stream: UnixStream) {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        let peer = getsockopt(&stream, PeerCredentials);
        let uid_ok = matches!(&peer, Ok(cred) if cred.uid() == self.uid);
        if !uid_ok {
            let who = match &peer {
                Ok(cred) => format!("uid {} (pid {})", cred.uid(), cred.pid()),
                Err(e) => format!("a peer whose credentials cannot be read ({e})"),
            };
            self.log.log(
                Level::Warn,
                &format!(
                    "refused connection {id} from {who}: only uid {} may connect",
                    self.uid
                ),
            );
            let actions = self.state.connection_opened(id, false);
            self.apply(actions);
            return; // dropping the stream closes it
        }
        if let Err(e) = self
            .poll
            .registry()
            .register(&mut stream, token(id), Interest::READABLE)
        {
            self.log
                .log(Level::Error, &format!("cannot poll connection {id}: {e}"));
            return;
        }
        if let Ok(cred) = &peer {
            self.log.log(
                Level::Debug,
                &format!("connection {id} from pid {}", cred.pid()),
            );
        }
        self.conns.insert(
            id,
            Conn {
                stream,
                decoder: FrameDecoder::default(),
                out: VecDeque::new(),
                written: 0,
                queued: 0,
                interest: Interest::READABLE,
                draining: None,
                write_failed: false,
            },
        );
        let now = self.now_ms();
        let actions = self.state.connection_opened_at(id, true, now);
        self.apply(actions);
    }

    /// Reads what `id` sent (within the budget) and handles every whole frame.
    fn read_until(&mut self, id: ConnId, drained: Drained) {
        let mut ended = false;
        let mut more = false;
        // Whether a write to it had failed before this read: then this read goes to the end of
        // what it sent, and the connection is closed after it.
        let failed_before;
        {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            if conn.draining.is_some() {
                return;
            }
            failed_before = conn.write_failed;
            let mut budget = READ_BUDGET;
            loop {
                match conn.stream.read(&mut self.scratch) {
                    Ok(0) => {
                        ended = true;
                        break;
                    }
                    Ok(n) => {
                        conn.decoder.push(&self.scratch[..n]);
                        if n >= budget {
                            self.pending_reads.push(id);
                            more = true;
                            break;
                        }
                        budget -= n;
                        // A stream socket's read stops short only when nothing more is queued:
                        // anything sent later is a new readiness edge. One syscall less per
                        // request.
                        if drained == Drained::Short && n < self.scratch.len() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.log
                            .log(Level::Debug, &format!("connection {id}: read failed: {e}"));
                        ended = true;
                        break;
                    }
                }
            }
        }
        loop {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            if conn.draining.is_some() {
                return;
            }
            let actions = match conn.decoder.next_frame() {
                Ok(Some(payload)) => match decode(&payload) {
                    Ok(message) => {
                        if self.log.enabled(Level::Debug) {
                            self.log.log(
                                Level::Debug,
                                &format!(
                                    "connection {id}: {} (id {})",
                                    message.kind(),
                                    message.id()
                                ),
                            );
                        }
                        let now = self.now_ms();
                        self.state.handle(id, message, now)
                    }
                    Err(e) => self.state.decode_failed(id, &e),
                },
                Ok(None) => break,
                Err(e) => {
                    let actions = self.state.decode_failed(id, &e);
                    self.apply(actions);
                    // The stream cannot be trusted after a bad header, whatever the state said.
                    let mut rest = VecDeque::new();
                    self.close(id, CloseMode::Drain, &mut rest);
                    self.apply(rest.into());
                    return;
                }
            };
            self.apply(actions);
        }
        // A connection whose write failed is closed once everything it sent is handled: the
        // frames read before the failure, and then (the failure queued one more read) what its
        // socket still held.
        if ended || (failed_before && !more) {
            let mut rest = VecDeque::new();
            self.close(id, CloseMode::Drain, &mut rest);
            self.apply(rest.into());
        }
    }

    /// Carries out the state machine's actions, and those that follow from them.
    fn apply(&mut self, actions: Vec<Action>) {
        let mut queue = VecDeque::from(actions);
        while let Some(action) = queue.pop_front() {
            match action {
                Action::Send(id, message) => {
                    self.send(id, &message, &mut queue);
                }
                Action::Close(id) => self.close(id, CloseMode::Drain, &mut queue),
                Action::Log(level, line) => self.log.log(level, &line),
                Action::History(job) => self.history_job(job, &mut queue),
                Action::Replay(id) => {
                    self.replaying.insert(id);
                    self.feed_replay(id, &mut queue);
                }
                Action::Publish(id, message) => {
                    let behind = self
                        .conns
                        .get(&id)
                        .is_some_and(|c| c.out.len() >= self.config.subscriber_max_frames);
                    if behind {
                        let now = self.now_ms();
                        queue.extend(self.state.subscriber_lagged(id, now));
                    } else {
                        self.send(id, &message, &mut queue);
                    }
                }
                Action::Deliver {
                    delivery,
                    reply_to,
                    reply_id,
                } => match delivery {
                    Delivery::Inject {
                        conn,
                        session,
                        message,
                    } => {
                        let result = match self.inject_backlog(conn) {
                            Some(queued) => Err(SinkError::InputBacklog { session, queued }),
                            None if self.send(conn, &message, &mut queue) => Ok(()),
                            None => Err(SinkError::SessionDisconnected { session }),
                        };
                        let now = self.now_ms();
                        queue.extend(
                            self.state
                                .delivery_finished(reply_to, reply_id, result, now),
                        );
                    }
                    Delivery::File {
                        path,
                        record,
                        format,
                    } => {
                        let job = FileJob {
                            path,
                            record,
                            format,
                            reply_to,
                            reply_id,
                        };
                        let sent = self
                            .jobs
                            .as_ref()
                            .is_some_and(|jobs| jobs.send(job).is_ok());
                        if !sent {
                            let error = SinkError::Other {
                                sink: "file".into(),
                                source: "the file sink thread is gone".into(),
                            };
                            let now = self.now_ms();
                            queue.extend(self.state.delivery_finished(
                                reply_to,
                                reply_id,
                                Err(error),
                                now,
                            ));
                        }
                    }
                    Delivery::Clipboard { record, format } => {
                        let content = format.select(&record).to_vec();
                        if let Err(error) = self.clipboard.deliver(content, reply_to, reply_id) {
                            let now = self.now_ms();
                            queue.extend(self.state.delivery_finished(
                                reply_to,
                                reply_id,
                                Err(error),
                                now,
                            ));
                        }
                    }
                },
            }
        }
    }

    /// Queues `message` to `id` and writes what the socket takes. `false` when the connection
    /// is gone, closing, cannot be written to, or was just disconnected for going over its
    /// queue bound.
    fn send(&mut self, id: ConnId, message: &Message, queue: &mut VecDeque<Action>) -> bool {
        let frame = match encode_frame(message) {
            Ok(frame) => frame,
            Err(e) => {
                self.log.log(
                    Level::Error,
                    &format!("cannot encode a reply to connection {id}: {e}"),
                );
                let reply_id = message.id();
                let fallback = Message::error(
                    reply_id,
                    ErrorReason::PayloadTooLarge,
                    format!("the reply does not fit in a frame: {e}"),
                );
                match (reply_id, &e, encode(&fallback)) {
                    (1.., ProtoError::FrameTooLarge { .. }, Ok(frame)) => Frame::from(frame),
                    _ => return false,
                }
            }
        };
        let Some(conn) = self.conns.get_mut(&id) else {
            return false;
        };
        if conn.draining.is_some() || conn.write_failed {
            return false;
        }
        if conn.queued + frame.len() > self.config.queue_max_bytes
            || conn.out.len() >= self.config.queue_max_frames
        {
            let (bytes, frames) = (conn.queued, conn.out.len());
            self.log.log(
                Level::Warn,
                &format!(
                    "connection {id} does not read: {bytes} bytes in {frames} frames queued, over the bound; disconnected"
                ),
            );
            self.close(id, CloseMode::Hard, queue);
            return false;
        }
        conn.queued += frame.len();
        conn.out.push_back(frame);
        if conn.out.len() == 1 {
            self.flush_with(id, queue);
        }
        self.conns.get(&id).is_some_and(|c| !c.write_failed)
    }

    /// The bytes queued to wrapper connection `id` when an injection must not be added to
    /// them: over [`clippy_proto::INPUT_BACKLOG_LIMIT`], or over half the connection's frame
    /// bound (past which it would be disconnected). The injection is refused `busy` instead.
    fn inject_backlog(&self, id: ConnId) -> Option<usize> {
        let conn = self.conns.get(&id)?;
        (conn.queued > clippy_proto::INPUT_BACKLOG_LIMIT
            || conn.out.len() >= self.config.queue_max_frames / 2)
            .then_some(conn.queued)
    }

    /// Writes what the socket of `id` takes now (it said it is writable), then feeds it more
    /// of the event history if it is catching up.
    fn flush(&mut self, id: ConnId) {
        let mut queue = VecDeque::new();
        self.flush_with(id, &mut queue);
        if self.replaying.contains(&id) {
            self.feed_replay(id, &mut queue);
        }
        self.apply(queue.into());
    }

    /// Tops the queue of the subscriber `id`, catching up on the history, up to
    /// [`REPLAY_WINDOW`] frames; the rest comes when its socket drains ([`Server::flush`]).
    /// Loops while the socket takes everything at once, since no writable event would come.
    fn feed_replay(&mut self, id: ConnId, queue: &mut VecDeque<Action>) {
        loop {
            let room = match self.conns.get(&id) {
                Some(conn)
                    if conn.draining.is_none()
                        && !conn.write_failed
                        && self.state.is_replaying(id) =>
                {
                    REPLAY_WINDOW.saturating_sub(conn.out.len())
                }
                _ => {
                    self.replaying.remove(&id);
                    return;
                }
            };
            if room == 0 {
                return;
            }
            let now = self.now_ms();
            for action in self.state.replay(id, room, now) {
                match action {
                    Action::Send(to, message) if to == id => {
                        self.send(id, &message, queue);
                    }
                    other => queue.push_back(other),
                }
            }
        }
    }

    /// Writes queued frames until the socket stops taking them; adjusts the interest; finishes
    /// a drain.
    fn flush_with(&mut self, id: ConnId, queue: &mut VecDeque<Action>) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let mut failed = None;
        while !conn.out.is_empty() {
            // Each frame's parts, less what was written of the first; empty parts left out.
            let mut skip = conn.written;
            let slices: Vec<IoSlice<'_>> = conn
                .out
                .iter()
                .flat_map(Frame::parts)
                .filter_map(|part| {
                    let from = skip.min(part.len());
                    skip -= from;
                    let rest = &part[from..];
                    (!rest.is_empty()).then(|| IoSlice::new(rest))
                })
                .take(MAX_IOVECS)
                .collect();
            match conn.stream.write_vectored(&slices) {
                Ok(0) => {
                    failed = Some(io::Error::from(io::ErrorKind::WriteZero));
                    break;
                }
                Ok(mut n) => {
                    while n > 0 {
                        let Some(front) = conn.out.front() else {
                            break;
                        };
                        let left = front.len() - conn.written;
                        if n < left {
                            conn.written += n;
                            n = 0;
                        } else {
                            n -= left;
                            conn.queued -= front.len();
                            conn.written = 0;
                            conn.out.pop_front();
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            self.log
                .log(Level::Debug, &format!("connection {id}: write failed: {e}"));
            if conn.draining.is_some() {
                self.close(id, CloseMode::Hard, queue);
                return;
            }
            // Its peer closed its end, but what it sent before may still wait to be read (a
            // wrapper's `deregister`, written before it exited): nothing more is written, and
            // the connection is read to its end, handled, then closed (`read`).
            conn.write_failed = true;
            conn.out.clear();
            conn.queued = 0;
            conn.written = 0;
            if !self.pending_reads.contains(&id) {
                self.pending_reads.push(id);
            }
        }
        if conn.draining.is_some() && conn.out.is_empty() {
            self.drop_conn(id);
            return;
        }
        let want = match (conn.draining.is_some(), conn.out.is_empty()) {
            (true, _) => Interest::WRITABLE,
            (false, true) => Interest::READABLE,
            (false, false) => Interest::READABLE | Interest::WRITABLE,
        };
        if want != conn.interest {
            match self
                .poll
                .registry()
                .reregister(&mut conn.stream, token(id), want)
            {
                Ok(()) => conn.interest = want,
                Err(e) => {
                    self.log
                        .log(Level::Error, &format!("cannot poll connection {id}: {e}"));
                    self.close(id, CloseMode::Hard, queue);
                }
            }
        }
    }

    /// Closes `id`: tells the state machine (its actions go to `queue`), then drops the
    /// connection now or once what is queued to it is written.
    fn close(&mut self, id: ConnId, mode: CloseMode, queue: &mut VecDeque<Action>) {
        let now = self.now_ms();
        queue.extend(self.state.connection_closed_at(id, now));
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if mode == CloseMode::Hard || conn.out.is_empty() {
            self.drop_conn(id);
            return;
        }
        if conn.draining.is_none() {
            conn.draining = Some(Instant::now() + self.config.drain_timeout);
            let _ = conn.stream.shutdown(std::net::Shutdown::Read);
            self.flush_with(id, queue);
        }
    }

    fn drop_conn(&mut self, id: ConnId) {
        self.replaying.remove(&id);
        if let Some(mut conn) = self.conns.remove(&id) {
            let _ = self.poll.registry().deregister(&mut conn.stream);
        }
    }

    fn expire_drains(&mut self) {
        let now = Instant::now();
        let expired: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| c.draining.is_some_and(|deadline| deadline <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.log.log(
                Level::Debug,
                &format!("connection {id}: did not read its last replies in time; dropped"),
            );
            self.drop_conn(id);
        }
    }

    /// Holds `job` for the history thread (see `HistoryBatch`), or hands the batch over now.
    /// What is queued is bounded by the state machine (`clippy_broker_core`), which holds turns
    /// while the store is behind.
    fn history_job(&mut self, job: HistoryJob, queue: &mut VecDeque<Action>) {
        if self.history.is_none() {
            self.without_history(job, queue);
        } else if self.history_batch.push(job, self.now_ms()) {
            self.hand_over_history_with(queue);
        }
    }

    /// Hands the history jobs held to the history thread.
    fn hand_over_history(&mut self) {
        let mut queue = VecDeque::new();
        self.hand_over_history_with(&mut queue);
        self.apply(queue.into());
    }

    fn hand_over_history_with(&mut self, queue: &mut VecDeque<Action>) {
        for job in self.history_batch.take() {
            let Some(jobs) = &self.history else {
                self.without_history(job, queue);
                continue;
            };
            if let Err(mpsc::SendError(job)) = jobs.send(job) {
                self.log.log(
                    Level::Error,
                    "the history thread is gone: history is not stored any more",
                );
                self.history = None;
                queue.extend(self.state.history_gone());
                self.without_history(job, queue);
            }
        }
    }

    /// Answers what waits on a history job that no thread takes (turns are acknowledged,
    /// queries refused), so nothing hangs.
    fn without_history(&mut self, job: HistoryJob, queue: &mut VecDeque<Action>) {
        match job {
            HistoryJob::Record(HistoryRecord::Turn {
                ack: Some((conn, reply)),
                ..
            })
            | HistoryJob::Ack(conn, reply) => {
                self.send(conn, &reply, queue);
            }
            HistoryJob::Record(_) => {}
            HistoryJob::Query { conn, id, .. } => {
                let refusal = Message::error(
                    id,
                    ErrorReason::HistoryFailed,
                    "the broker's history store is not running (its log says why)",
                );
                self.send(conn, &refusal, queue);
            }
        }
    }

    /// Replies and log lines from the history thread.
    fn collect_history_output(&mut self) {
        let mut queue = VecDeque::new();
        while let Ok(output) = self.history_done.try_recv() {
            match output {
                HistoryOutput::Reply(conn, message) => {
                    self.send(conn, &message, &mut queue);
                }
                HistoryOutput::Log(level, line) => self.log.log(level, &line),
                HistoryOutput::Written(weight) => {
                    queue.extend(self.state.history_written(weight, self.now_ms()));
                }
            }
        }
        self.apply(queue.into());
    }

    fn collect_file_results(&mut self) {
        while let Ok(done) = self.done.try_recv() {
            let now = self.now_ms();
            let actions =
                self.state
                    .delivery_finished(done.reply_to, done.reply_id, done.result, now);
            self.apply(actions);
        }
    }

    /// Stops accepting, removes the socket, closes every connection (after one last attempt to
    /// write what is queued).
    fn shutdown(&mut self, why: &str) {
        self.log.log(Level::Info, &format!("{why}: stopping"));
        if let Some(mut listener) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        if !remove_socket(&self.socket_path, self.socket_id) {
            self.log.log(
                Level::Warn,
                &format!(
                    "{} was not ours any more (or is gone); left as it is",
                    self.socket_path.display()
                ),
            );
        }
        let ids: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in ids {
            if let Some(conn) = self.conns.get_mut(&id) {
                conn.draining = Some(Instant::now());
            }
            let mut queue = VecDeque::new();
            self.flush_with(id, &mut queue);
            self.drop_conn(id);
            let now = self.now_ms();
            for action in self.state.connection_closed_at(id, now) {
                if let Action::Log(level, line) = action {
                    self.log.log(level, &line);
                }
            }
        }
        // What is held goes to the history thread, which journals it before it ends.
        self.hand_over_history();
        self.jobs = None;
        self.log.log(Level::Info, "stopped");
    }
}

fn token(id: ConnId) -> Token {
    Token(usize::try_from(id.0).unwrap_or(usize::MAX))
}

/// Runs file deliveries one after the other until the job channel closes.
fn file_worker(jobs: &mpsc::Receiver<FileJob>, done: &mpsc::Sender<FileDone>, waker: &Waker) {
    run_delivery_worker(jobs, done, waker, |job| FileDone {
        reply_to: job.reply_to,
        reply_id: job.reply_id,
        result: FileSink::new(&job.path).write(job.format.select(&job.record)),
    });
}

/// The loop of a delivery thread (files, the clipboard): runs `deliver` on each job in turn and
/// hands its result to the event loop on `done`, followed by a wake of `waker`. Returns when the
/// job channel closes or the event loop is gone.
pub(crate) fn run_delivery_worker<J>(
    jobs: &mpsc::Receiver<J>,
    done: &mpsc::Sender<FileDone>,
    waker: &Waker,
    mut deliver: impl FnMut(J) -> FileDone,
) {
    for job in jobs {
        if done.send(deliver(job)).is_err() {
            return;
        }
        let _ = waker.wake();
    }
}
