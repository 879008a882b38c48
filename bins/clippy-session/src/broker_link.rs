//! The wrapper's connection to the broker: register, report turns, receive injections, and say
//! how the session ended.
//!
//! The sink thread hands its reports to the link and never waits on the broker. What is still to
//! be written waits in an [`Outbox`] (`clippy_wrapper::link`: what to write, in what order,
//! what to keep until acknowledged, no I/O in it); the link thread owns the connection: it connects
//! (starting a broker if asked), registers with the session's progress so far, replays the
//! turns it keeps (every one not acknowledged yet, and the newest 32; the broker accepts a
//! re-sent turn idempotently, so turn ids stay stable), writes, and reconnects with backoff. A
//! reader thread per connection passes the broker's commands on, hands the outbox the
//! acknowledgements (`turn_recorded`: the turn is in the broker's history store) and the
//! requests to send turns again (`resend_turns`: a store that was behind caught up), and drops
//! the other replies.
//!
//! A broker that is only slow — two busy cores, a long scan — is waited for, never dropped:
//! writes have no timeout, and progress reports queued behind a slow write collapse into one.
//! The connection is given up when the broker closes it, a write fails, or more is unsent than
//! the outbox allows (`clippy_wrapper::link::UNSENT_TURNS` turns or `UNSENT_BYTES` bytes); the
//! next connection then starts again from the turns kept.
//!
//! A `--ready-fd` pipe (`clippy-ctl spawn`) is told once ([`Ready`]): `ready <session-id>` when
//! the broker acknowledged the session's first `register`, or `error <message>` when the link
//! gave up before that (no broker answers and none could be started).

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clippy_proto::{
    Client, FrameDecoder, Message, Progress, ProtoError, Role, ScreenData, SessionInfo, TurnData,
    decode,
};
use clippy_wrapper::InputBacklog;
pub use clippy_wrapper::link::{ExitReport, FromBroker};
use clippy_wrapper::link::{
    Next, Outbox, Overflow, ToOutbox, command_of, failed_line, ready_line, to_outbox,
};

/// The first wait before reconnecting; it doubles after every failed attempt.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long the end of a session waits for its `deregister` to be written.
const GOODBYE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a broker this wrapper started may take to answer before the link says it gave up
/// (and goes on trying with its usual backoff).
const BROKER_START_WAIT: Duration = Duration::from_secs(10);

/// How the session's command ended, as `deregister` tells it: the code a shell shows, and the
/// signal that killed it, when one did.
pub fn exit_report(status: clippy_pty::ExitStatus) -> ExitReport {
    ExitReport {
        exit_code: Some(status.code_for_shell()),
        signal: match status {
            clippy_pty::ExitStatus::Exited(_) => None,
            clippy_pty::ExitStatus::Signaled { signal, .. } => Some(signal),
        },
    }
}

/// The readiness pipe of `clippy-ctl spawn` (`--ready-fd`): written exactly one line, then
/// closed. Dropped without a word (the session ended first, the link could not start), it says
/// `error` with why it cannot say more.
#[derive(Debug)]
pub struct Ready(Option<std::fs::File>);

impl Ready {
    /// Takes the pipe's write end. It is kept from the programs this process starts (the
    /// child, a broker): the reader sees the end of the pipe once this line is written.
    pub fn new(file: std::fs::File) -> Self {
        use nix::fcntl::{FcntlArg, FdFlag, fcntl};
        // Best effort: a descriptor that cannot be marked is still written and closed.
        let _ = fcntl(&file, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
        Self(Some(file))
    }

    /// No pipe: nobody to tell.
    pub fn none() -> Self {
        Self(None)
    }

    /// The broker acknowledged the session's registration: `ready <session-id>`.
    pub fn registered(&mut self, session: &str) {
        self.say(&ready_line(session));
    }

    /// The session cannot register now: `error <message>` (on one line).
    pub fn failed(&mut self, message: &str) {
        self.say(&failed_line(message));
    }

    fn say(&mut self, line: &str) {
        if let Some(mut file) = self.0.take() {
            // A reader that went away is nobody to tell; the file is closed on return.
            let _ = file.write_all(line.as_bytes());
        }
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        self.failed("the session ended before it registered with the broker");
    }
}

/// What the threads of a link share.
struct Shared {
    state: Mutex<LinkState>,
    /// Signalled whenever the state changes.
    changed: Condvar,
}

struct LinkState {
    outbox: Outbox,
    /// The current connection's number: a reader of an older one that sees it close is ignored.
    generation: u64,
    /// A handle on the current connection, to shut it down from any thread (which also wakes a
    /// write blocked on it).
    stream: Option<UnixStream>,
}

impl LinkState {
    /// Drops the current connection.
    fn drop_connection(&mut self) {
        if let Some(stream) = self.stream.take() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        self.outbox.disconnected();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, LinkState> {
        // A panic while the lock was held leaves plain data behind: carry on with it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn update(&self, change: impl FnOnce(&mut LinkState)) {
        change(&mut self.lock());
        self.changed.notify_all();
    }
}

/// The sink thread's handle on the link; the link thread runs until the session ends.
pub struct BrokerLink {
    shared: Arc<Shared>,
}

impl BrokerLink {
    /// Starts the link thread for `info`. `start_broker`: start a broker when none answers.
    /// `ready` is told when the session first registers, or that it could not.
    pub fn new(
        socket: PathBuf,
        info: SessionInfo,
        to_sink: Sender<crate::sink::SinkInput>,
        backlog: Arc<InputBacklog>,
        start_broker: bool,
        ready: Ready,
    ) -> Self {
        let session = info.session.clone();
        let shared = Arc::new(Shared {
            state: Mutex::new(LinkState {
                outbox: Outbox::new(info),
                generation: 0,
                stream: None,
            }),
            changed: Condvar::new(),
        });
        let thread = LinkThread {
            shared: Arc::clone(&shared),
            socket,
            to_sink,
            backlog,
            session,
            ready,
        };
        let spawned = std::thread::Builder::new()
            .name("clippy-session-link".into())
            .spawn(move || thread.run(start_broker));
        if let Err(e) = spawned {
            eprintln!(
                "\r\nclippy-session: cannot start the broker link: {e}; turns are still detected\r"
            );
        }
        Self { shared }
    }

    /// Reports a completed turn (and holds it for re-sending).
    pub fn turn(&mut self, turn: TurnData) {
        self.shared.update(|link| {
            if link.outbox.turn(turn) == Err(Overflow) {
                link.drop_connection();
            }
        });
    }

    /// Reports the spool's size and the session's mode.
    pub fn progress(&mut self, progress: Progress) {
        self.shared.update(|link| link.outbox.progress(progress));
    }

    /// Reports whether the child stopped taking its input.
    pub fn input_blocked(&mut self, blocked: bool) {
        self.shared
            .update(|link| link.outbox.input_blocked(blocked));
    }

    /// Reports the child's bracketed-paste mode.
    pub fn bracketed_paste(&mut self, enabled: bool) {
        self.shared
            .update(|link| link.outbox.bracketed_paste(enabled));
    }

    /// Answers the broker's `screen_request` number `request`.
    pub fn screen(&mut self, request: u64, screen: ScreenData) {
        self.shared
            .update(|link| link.outbox.screen(request, screen));
    }

    /// Reports on the broker's `answer_request`.
    pub fn answer(&mut self, report: clippy_wrapper::tap::AnswerReport) {
        self.shared.update(|link| link.outbox.answer(report));
    }

    /// Says goodbye: the session ended, its command as `exit` says. Waits (a little) for the
    /// goodbye to be written.
    pub fn deregister(&mut self, exit: ExitReport) {
        self.shared.update(|link| link.outbox.end(exit));
        let deadline = Instant::now() + GOODBYE_TIMEOUT;
        let mut link = self.shared.lock();
        while !link.outbox.finished() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            link = match self.shared.changed.wait_timeout(link, left) {
                Ok((link, _)) => link,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        // Written or not, the connection goes (and with it a write stuck on a stopped broker).
        link.drop_connection();
        drop(link);
        self.shared.changed.notify_all();
    }
}

/// The link thread: connections, writes, reconnections.
struct LinkThread {
    shared: Arc<Shared>,
    socket: PathBuf,
    to_sink: Sender<crate::sink::SinkInput>,
    /// Injected input on its way to the child, counted as it is read.
    backlog: Arc<InputBacklog>,
    /// The session's id, for [`Ready`].
    session: String,
    ready: Ready,
}

impl LinkThread {
    fn run(mut self, start_broker: bool) {
        let first = if start_broker {
            clippy_proto::with_broker(&self.socket, Instant::now() + BROKER_START_WAIT, || {
                self.connect()
            })
        } else {
            self.connect()
        };
        let mut client = match first {
            Ok(client) => {
                self.ready.registered(&self.session);
                Some(client)
            }
            Err(e @ ProtoError::NoBroker { .. }) => {
                let message = format!(
                    "{e}; turns are still detected, and the session will register when a broker \
                     starts"
                );
                eprintln!("clippy-session: {message}\r");
                self.ready.failed(&message);
                None
            }
            Err(e) => {
                self.ready.failed(&format!(
                    "cannot register with the broker at {}: {e}; the session goes on and tries \
                     again",
                    self.socket.display()
                ));
                None
            }
        };
        let mut backoff = MIN_BACKOFF;
        loop {
            if let Some(connected) = client.take() {
                self.write(connected);
                backoff = MIN_BACKOFF;
            }
            // Not connected: wait, unless the session ended meanwhile, and try again.
            if !self.pause(backoff) {
                return;
            }
            client = self.connect().ok();
            match &client {
                // Told once: after a failure already said, nothing more.
                Some(_) => self.ready.registered(&self.session),
                None => backoff = (backoff * 2).min(MAX_BACKOFF),
            }
        }
    }

    /// Waits `backoff`, or less if the session ends; `false` once the link is finished.
    fn pause(&self, backoff: Duration) -> bool {
        let deadline = Instant::now() + backoff;
        let mut link = self.shared.lock();
        loop {
            if link.outbox.finished() {
                return false;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            link = match self.shared.changed.wait_timeout(link, left) {
                Ok((link, _)) => link,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Connects and registers; the link is connected from then on, with its reader running. A
    /// session that ends meanwhile says goodbye on this connection, if it is made.
    fn connect(&self) -> Result<Client, ProtoError> {
        self.shared.update(|link| link.outbox.connecting());
        let connected = self.register();
        if connected.is_err() {
            self.shared.update(|link| link.outbox.connect_failed());
        }
        connected
    }

    /// [`LinkThread::connect`]'s work: `hello`, `register`, the reader thread.
    fn register(&self) -> Result<Client, ProtoError> {
        let io = |context: &str| {
            let context = context.to_owned();
            move |source| ProtoError::Io { context, source }
        };
        let mut client = Client::connect(&self.socket, Role::Wrapper)?;
        let registration = self.shared.lock().outbox.registration();
        let (session, progress) = registration.clone();
        let mut reader = client
            .stream()
            .try_clone()
            .map_err(io("cannot clone the broker connection"))?;
        // The reply is read here, not by `Client::request`, which would keep the commands that
        // come before it to itself: a request that waited for this session to register (an
        // `exec` asked before the session started) may send its `inject` at once.
        client.send(&Message::Register {
            id: REGISTER_ID,
            session,
            progress,
            resends: true,
        })?;
        let mut decoder = FrameDecoder::default();
        await_registered(&mut reader, &mut decoder, &self.to_sink, &self.backlog)?;
        let handle = client
            .stream()
            .try_clone()
            .map_err(io("cannot clone the broker connection"))?;
        let generation = {
            let mut link = self.shared.lock();
            link.generation += 1;
            link.stream = Some(handle);
            link.outbox.connected(&registration);
            link.generation
        };
        let to_sink = self.to_sink.clone();
        let backlog = Arc::clone(&self.backlog);
        let shared = Arc::clone(&self.shared);
        let reading = std::thread::Builder::new()
            .name("clippy-session-broker".into())
            .spawn(move || {
                let outbox = |reply| {
                    shared.update(|link| {
                        let current = link.generation == generation;
                        link.outbox.take(reply, current);
                    });
                };
                read_commands(reader, decoder, &to_sink, &backlog, &outbox);
                shared.update(|link| {
                    if link.generation == generation {
                        link.drop_connection();
                    }
                });
            });
        if let Err(e) = reading {
            self.shared.update(LinkState::drop_connection);
            return Err(io("cannot start the broker reader")(e));
        }
        self.shared.changed.notify_all();
        Ok(client)
    }

    /// Writes what the outbox gives until the connection is gone or the link finished.
    fn write(&self, mut client: Client) {
        loop {
            let next = {
                let mut link = self.shared.lock();
                loop {
                    match link.outbox.next() {
                        Next::Wait => {
                            link = match self.shared.changed.wait(link) {
                                Ok(link) => link,
                                Err(poisoned) => poisoned.into_inner(),
                            };
                        }
                        next => break next,
                    }
                }
            };
            let Next::Write(message) = next else {
                return;
            };
            if client.send(&message).is_err() {
                self.shared.update(LinkState::drop_connection);
                return;
            }
            if matches!(*message, Message::Deregister { .. }) {
                self.shared.update(|link| link.outbox.goodbye_written());
            }
        }
    }
}

/// The id of `register` on a new connection (the other reports use 1: their replies are
/// dropped).
const REGISTER_ID: u32 = 2;

/// Reads more of the connection into `decoder`; `Ok(false)` at its end.
fn read_more(
    stream: &mut UnixStream,
    decoder: &mut FrameDecoder,
    buf: &mut [u8],
) -> std::io::Result<bool> {
    use std::io::Read;
    loop {
        match stream.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
            Ok(0) => return Ok(false),
            Ok(n) => {
                decoder.push(&buf[..n]);
                return Ok(true);
            }
        }
    }
}

/// Passes `command` on to the sink thread; `false` once that thread is gone. Injected input is
/// counted from here, so the broker hears the wrapper is busy however far behind the sink thread
/// or the byte loop are.
fn pass_on(
    command: FromBroker,
    to_sink: &Sender<crate::sink::SinkInput>,
    backlog: &InputBacklog,
) -> bool {
    if let FromBroker::Inject(data) = &command
        && backlog.injected(data.len())
    {
        let _ = to_sink.send(crate::sink::SinkInput::Session(
            crate::sink::SessionEvent::InputBlocked,
        ));
    }
    to_sink
        .send(crate::sink::SinkInput::Broker(command))
        .is_ok()
}

/// Waits for the broker's reply to `register` ([`REGISTER_ID`]). The commands that come
/// before it are passed on to the sink thread, in order: nothing the broker sends is lost. What
/// `decoder` holds past the reply is left for [`read_commands`].
fn await_registered(
    stream: &mut UnixStream,
    decoder: &mut FrameDecoder,
    to_sink: &Sender<crate::sink::SinkInput>,
    backlog: &InputBacklog,
) -> Result<(), ProtoError> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        while let Some(payload) = decoder.next_frame()? {
            // An unreadable frame is dropped, as the reader thread drops it.
            let Ok(message) = decode(&payload) else {
                continue;
            };
            match message {
                Message::Error {
                    id: REGISTER_ID,
                    reason,
                    message,
                    resume_cursor,
                } => {
                    return Err(ProtoError::Broker {
                        reason,
                        message,
                        resume_cursor,
                    });
                }
                reply if reply.id() == REGISTER_ID => return Ok(()),
                other => {
                    if let Some(command) = command_of(other) {
                        // A sink thread that is gone has ended the session: nobody to tell.
                        pass_on(command, to_sink, backlog);
                    }
                }
            }
        }
        let more = read_more(stream, decoder, &mut buf).map_err(|source| ProtoError::Io {
            context: "cannot read from the broker".into(),
            source,
        })?;
        if !more {
            return Err(if decoder.buffered() > 0 {
                ProtoError::Truncated
            } else {
                ProtoError::Closed
            });
        }
    }
}

/// Reads what the broker sends until the connection ends, starting with what `decoder` already
/// holds: passes `inject`, `terminate` and `screen_request` on, hands acknowledgements and
/// `resend_turns` to `outbox`, drops other replies.
fn read_commands(
    mut stream: UnixStream,
    mut decoder: FrameDecoder,
    to_sink: &Sender<crate::sink::SinkInput>,
    backlog: &InputBacklog,
    outbox: &dyn Fn(ToOutbox),
) {
    let _ = stream.set_read_timeout(None);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        loop {
            let command = match decoder.next_frame() {
                Ok(Some(payload)) => {
                    let Ok(message) = decode(&payload) else {
                        continue;
                    };
                    if let Some(reply) = to_outbox(&message) {
                        outbox(reply);
                        continue;
                    }
                    match command_of(message) {
                        Some(command) => command,
                        // Other replies to what the link sent: nothing to do.
                        None => continue,
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            };
            if !pass_on(command, to_sink, backlog) {
                return;
            }
        }
        if !matches!(read_more(&mut stream, &mut decoder, &mut buf), Ok(true)) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `messages` as the broker would write them, in one piece.
    fn frames(messages: &[Message]) -> Vec<u8> {
        messages
            .iter()
            .flat_map(|m| clippy_proto::encode(m).expect("encodes"))
            .collect()
    }

    fn inject(data: &[u8]) -> Message {
        Message::Inject {
            id: 0,
            session: "s1".into(),
            data: data.to_vec(),
        }
    }

    #[test]
    fn what_the_broker_sends_around_the_reply_to_register_is_all_passed_on_in_order() {
        let (mut broker, mut wrapper) = UnixStream::pair().expect("a socket pair");
        // An `exec` that waited for this session injects as the registration is handled:
        // before the reply, and right behind it, in the same write.
        broker
            .write_all(&frames(&[
                inject(b"first"),
                Message::Done { id: REGISTER_ID },
                inject(b"second"),
            ]))
            .expect("written");
        drop(broker);
        let (tx, rx) = std::sync::mpsc::channel();
        let mut decoder = FrameDecoder::default();
        let backlog = InputBacklog::default();
        await_registered(&mut wrapper, &mut decoder, &tx, &backlog).expect("registered");
        read_commands(wrapper, decoder, &tx, &backlog, &|_| {});
        let injected: Vec<Vec<u8>> = rx
            .try_iter()
            .map(|input| match input {
                crate::sink::SinkInput::Broker(FromBroker::Inject(data)) => data,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(injected, [b"first".to_vec(), b"second".to_vec()]);
    }

    #[test]
    fn the_reader_hands_acknowledgements_and_requests_to_send_again_to_the_outbox() {
        let recorded = Message::TurnRecorded {
            id: 1,
            turn_id: "s1:42".into(),
        };
        let resend = Message::ResendTurns {
            id: 0,
            session: "s1".into(),
            from: 3,
            to: 9,
        };
        let (mut broker, wrapper) = UnixStream::pair().expect("a socket pair");
        broker
            .write_all(&frames(&[recorded, inject(b"x"), resend]))
            .expect("written");
        drop(broker);
        let (tx, rx) = std::sync::mpsc::channel();
        let got = Mutex::new(Vec::new());
        read_commands(
            wrapper,
            FrameDecoder::default(),
            &tx,
            &InputBacklog::default(),
            &|reply| got.lock().expect("lock").push(reply),
        );
        assert_eq!(
            got.into_inner().expect("lock"),
            [ToOutbox::Recorded(42), ToOutbox::Resend(3, 9)]
        );
        assert_eq!(rx.try_iter().count(), 1, "the inject is passed on");
    }

    #[test]
    fn a_refused_registration_is_the_brokers_error() {
        let (mut broker, mut wrapper) = UnixStream::pair().expect("a socket pair");
        broker
            .write_all(&frames(&[Message::error(
                REGISTER_ID,
                clippy_proto::ErrorReason::DuplicateSession,
                "taken",
            )]))
            .expect("written");
        let (tx, _rx) = std::sync::mpsc::channel();
        let refused = await_registered(
            &mut wrapper,
            &mut FrameDecoder::default(),
            &tx,
            &InputBacklog::default(),
        );
        assert!(
            matches!(
                refused,
                Err(ProtoError::Broker {
                    reason: clippy_proto::ErrorReason::DuplicateSession,
                    ..
                })
            ),
            "{refused:?}"
        );
        drop(broker);
        let closed = await_registered(
            &mut wrapper,
            &mut FrameDecoder::default(),
            &tx,
            &InputBacklog::default(),
        );
        assert!(matches!(closed, Err(ProtoError::Closed)), "{closed:?}");
    }
}

#[cfg(test)]
mod ready_tests {
    use std::io::Read;
    use std::os::unix::net::UnixListener;
    use std::sync::mpsc::channel;

    use clippy_proto::{PROTOCOL_VERSION, encode};

    use super::*;

    fn info() -> SessionInfo {
        SessionInfo {
            session: "k3f9a2".into(),
            name: Some("sh".into()),
            pid: 7,
            command: vec!["bash".into()],
            preset: "shell".into(),
            bracketed_paste: false,
            spool: None,
            cwd: None,
            no_history: false,
        }
    }

    /// A pipe: its read end, and its write end as [`Ready`] takes it.
    fn pipe() -> (std::io::PipeReader, std::fs::File) {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        (
            reader,
            std::fs::File::from(std::os::fd::OwnedFd::from(writer)),
        )
    }

    /// Everything written to the pipe until its write end is closed.
    fn said(mut reader: std::io::PipeReader) -> String {
        let mut text = String::new();
        reader.read_to_string(&mut text).expect("read the pipe");
        text
    }

    /// A private folder for a socket, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            let path =
                std::env::temp_dir().join(format!("clippy-link-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir(&path).expect("a temporary folder");
            Dir(path)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A broker that acknowledges `hello` and everything after it, on one connection, and
    /// returns what it was sent once that connection closes.
    fn fake_broker(listener: UnixListener) -> std::thread::JoinHandle<Vec<Message>> {
        std::thread::spawn(move || {
            use std::io::Write as _;
            let (mut stream, _) = listener.accept().expect("accept");
            let mut decoder = FrameDecoder::default();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = match stream.read(&mut buf) {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => n,
                };
                decoder.push(&buf[..n]);
                while let Ok(Some(payload)) = decoder.next_frame() {
                    let message = decode(&payload).expect("a message");
                    let reply = match &message {
                        Message::Hello { id, .. } => Message::HelloAck {
                            id: *id,
                            version: PROTOCOL_VERSION,
                        },
                        other => Message::Done { id: other.id() },
                    };
                    got.push(message);
                    if stream.write_all(&encode(&reply).expect("encode")).is_err() {
                        return got;
                    }
                }
            }
        })
    }

    #[test]
    fn ready_names_the_session_once_the_broker_acknowledged_it_and_the_goodbye_says_how_it_ended() {
        let dir = Dir::new("ready");
        let socket = dir.0.join("broker.sock");
        let broker = fake_broker(UnixListener::bind(&socket).expect("bind"));
        let (reader, writer) = pipe();
        let (tx, _rx) = channel();
        let mut link = BrokerLink::new(
            socket,
            info(),
            tx,
            Arc::default(),
            false,
            Ready::new(writer),
        );
        // The write end is closed once the line is written: the whole of what is said.
        assert_eq!(said(reader), "ready k3f9a2\n");
        link.deregister(ExitReport {
            exit_code: Some(137),
            signal: Some(9),
        });
        let got = broker.join().expect("the fake broker");
        assert!(
            matches!(got.first(), Some(Message::Hello { .. })),
            "{got:?}"
        );
        assert!(
            matches!(got.get(1), Some(Message::Register { session, .. }) if session.session == "k3f9a2"),
            "{got:?}"
        );
        assert!(
            got.contains(&Message::Deregister {
                id: 1,
                session: "k3f9a2".into(),
                exit_code: Some(137),
                signal: Some(9),
            }),
            "{got:?}"
        );
    }

    #[test]
    fn ready_says_error_when_no_broker_answers() {
        let dir = Dir::new("none");
        let (reader, writer) = pipe();
        let (tx, _rx) = channel();
        let mut link = BrokerLink::new(
            dir.0.join("broker.sock"),
            info(),
            tx,
            Arc::default(),
            false,
            Ready::new(writer),
        );
        let line = said(reader);
        assert!(line.starts_with("error "), "{line:?}");
        assert!(line.contains("cannot connect to the broker"), "{line:?}");
        assert_eq!(line.matches('\n').count(), 1, "one line: {line:?}");
        assert!(line.ends_with('\n'));
        link.deregister(ExitReport::default());
    }

    #[test]
    fn ready_says_one_line_even_when_dropped_unsaid() {
        let (reader, writer) = pipe();
        let mut ready = Ready::new(writer);
        drop(ready);
        assert_eq!(
            said(reader),
            "error the session ended before it registered with the broker\n"
        );

        let (reader, writer) = pipe();
        ready = Ready::new(writer);
        ready.failed("two\nlines\r");
        // Said once: what comes later is not written.
        ready.registered("k3f9a2");
        drop(ready);
        assert_eq!(said(reader), "error two lines \n");
    }

    #[test]
    fn an_exit_status_is_told_as_a_shell_shows_it() {
        assert_eq!(
            exit_report(clippy_pty::ExitStatus::Exited(3)),
            ExitReport {
                exit_code: Some(3),
                signal: None
            }
        );
        assert_eq!(
            exit_report(clippy_pty::ExitStatus::Signaled {
                signal: 15,
                core_dumped: false
            }),
            ExitReport {
                exit_code: Some(143),
                signal: Some(15)
            }
        );
    }
}
