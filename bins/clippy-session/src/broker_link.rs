//! The wrapper's connection to the broker: register, report turns, receive injections, and say
//! how the session ended.
//!
//! The sink thread hands its reports to the link and never waits on the broker. What is still to
//! be written waits in an [`Outbox`] (no I/O in it); the link thread owns the connection: it
//! connects (starting a broker if asked), registers with the session's progress so far, replays
//! the turns it holds (the broker accepts a re-sent turn idempotently, so turn ids stay stable),
//! writes, and reconnects with backoff. A reader thread per connection passes the broker's
//! commands on and drops its replies.
//!
//! A broker that is only slow — two busy cores, a long scan — is waited for, never dropped:
//! writes have no timeout, and progress reports queued behind a slow write collapse into one.
//! The connection is given up when the broker closes it, a write fails, or more is unsent than
//! the outbox allows ([`UNSENT_TURNS`] turns or [`UNSENT_BYTES`] bytes); the next connection then
//! starts again from the held turns.
//!
//! A `--ready-fd` pipe (`clippy-ctl spawn`) is told once ([`Ready`]): `ready <session-id>` when
//! the broker acknowledged the session's first `register`, or `error <message>` when the link
//! gave up before that (no broker answers and none could be started).

use std::collections::VecDeque;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::input_backlog::InputBacklog;

use clippy_proto::{
    Client, FrameDecoder, Message, Progress, ProtoError, Role, ScreenData, SessionInfo, TurnData,
    decode,
};

/// Turns kept for re-sending after a reconnection (the broker's default ring depth).
const HELD_TURNS: usize = 32;
/// Turns not yet written, at most: past this the broker counts as gone.
const UNSENT_TURNS: usize = 1024;
/// Content and text bytes of the turns not yet written, at most, once they are more than the
/// held turns (which are kept anyway): past this the broker counts as gone.
const UNSENT_BYTES: usize = 32 * 1024 * 1024;
/// The first wait before reconnecting; it doubles after every failed attempt.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long the end of a session waits for its `deregister` to be written.
const GOODBYE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a broker this wrapper started may take to answer before the link says it gave up
/// (and goes on trying with its usual backoff).
const BROKER_START_WAIT: Duration = Duration::from_secs(10);

/// How the session's command ended, as `deregister` tells the broker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExitReport {
    /// The code a shell shows: the exit code, or 128 + N for signal N.
    pub exit_code: Option<i32>,
    /// The signal that killed the command, when one did.
    pub signal: Option<i32>,
}

impl From<clippy_pty::ExitStatus> for ExitReport {
    fn from(status: clippy_pty::ExitStatus) -> Self {
        Self {
            exit_code: Some(status.code_for_shell()),
            signal: match status {
                clippy_pty::ExitStatus::Exited(_) => None,
                clippy_pty::ExitStatus::Signaled { signal, .. } => Some(signal),
            },
        }
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
        self.say(&format!("ready {session}\n"));
    }

    /// The session cannot register now: `error <message>` (on one line).
    pub fn failed(&mut self, message: &str) {
        let message: String = message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        self.say(&format!("error {message}\n"));
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

/// What the reader thread passes to the sink thread.
#[derive(Debug)]
pub enum FromBroker {
    /// Bytes to write into the child's PTY.
    Inject(Vec<u8>),
    /// Kill the child's process group.
    Terminate,
    /// Report the screen with up to `history` lines of history (`screen_request` number
    /// `request`).
    Screen { request: u64, history: u32 },
}

/// One report waiting for the connection.
#[derive(Debug, Clone)]
enum Pending {
    Turn(Arc<TurnData>),
    /// The latest progress, whatever it is when this is written.
    Progress,
    BracketedPaste(bool),
    /// The answer to a `screen_request`: written on the connection that asked, never replayed
    /// (the broker fails the request when that connection goes).
    Screen(u64, Box<ScreenData>),
    Deregister(ExitReport),
}

/// What the link thread does next, as [`Outbox::next`] says.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Write this.
    Write(Box<Message>),
    /// Nothing to write: wait for a report.
    Wait,
    /// Not connected: (re)connect.
    Connect,
    /// The session ended and its goodbye is written (or there is no connection to write it to).
    Finished,
}

/// More is unsent than the outbox allows: the broker is not reading. Drop the connection; the
/// next one starts from the held turns.
#[derive(Debug, PartialEq, Eq)]
pub struct Overflow;

/// The link's memory, without I/O: the session as it registers, the turns it holds for a
/// replay, the latest progress, and what the current connection still has to be sent, in order.
#[derive(Debug)]
pub struct Outbox {
    info: SessionInfo,
    held: VecDeque<Arc<TurnData>>,
    /// The latest progress from the tap, without `input_blocked`, which the loop tells the link
    /// directly.
    progress: Option<Progress>,
    input_blocked: bool,
    /// `None` while there is no connection.
    queue: Option<VecDeque<Pending>>,
    unsent_turns: usize,
    unsent_bytes: usize,
    /// The session ended (its command as this says): say goodbye, then stop.
    ending: Option<ExitReport>,
    /// The link thread is connecting and registering: a session that ends meanwhile says
    /// goodbye on that connection once it is made.
    connecting: bool,
    /// The goodbye is written, or there was no connection to write it to.
    finished: bool,
}

fn turn_bytes(turn: &TurnData) -> usize {
    turn.content.len() + turn.text.len()
}

impl Outbox {
    /// An outbox for `info`, not connected.
    pub fn new(info: SessionInfo) -> Self {
        Self {
            info,
            held: VecDeque::new(),
            progress: None,
            input_blocked: false,
            queue: None,
            unsent_turns: 0,
            unsent_bytes: 0,
            ending: None,
            connecting: false,
            finished: false,
        }
    }

    /// A completed turn: held for replays, and queued if connected.
    pub fn turn(&mut self, turn: TurnData) -> Result<(), Overflow> {
        let turn = Arc::new(turn);
        if self.held.len() == HELD_TURNS {
            self.held.pop_front();
        }
        self.held.push_back(Arc::clone(&turn));
        self.push(Pending::Turn(turn))
    }

    /// The spool grew or the mode changed: queued once however often it changes before it is
    /// written.
    pub fn progress(&mut self, progress: Progress) {
        self.progress = Some(progress);
        self.queue_progress();
    }

    /// The child stopped taking its input, or took it again: sent with the progress.
    pub fn input_blocked(&mut self, blocked: bool) {
        self.input_blocked = blocked;
        if self.progress.is_some() {
            self.queue_progress();
        }
    }

    /// The progress to report: the tap's, with whether the input is blocked.
    fn current_progress(&self) -> Option<Progress> {
        self.progress.clone().map(|progress| Progress {
            input_blocked: self.input_blocked,
            ..progress
        })
    }

    fn queue_progress(&mut self) {
        let queued = self
            .queue
            .as_ref()
            .is_some_and(|q| q.iter().any(|p| matches!(p, Pending::Progress)));
        if !queued {
            let _ = self.push(Pending::Progress);
        }
    }

    /// The child turned bracketed paste on or off.
    pub fn bracketed_paste(&mut self, enabled: bool) {
        self.info.bracketed_paste = enabled;
        if let Some(queue) = &mut self.queue {
            // Only the latest state matters.
            queue.retain(|p| !matches!(p, Pending::BracketedPaste(_)));
        }
        let _ = self.push(Pending::BracketedPaste(enabled));
    }

    /// The screen the broker asked for: queued if connected (a request of a connection that has
    /// gone is answered on no other).
    pub fn screen(&mut self, request: u64, screen: ScreenData) {
        let _ = self.push(Pending::Screen(request, Box::new(screen)));
    }

    /// The session ended (its command as `exit` says): the goodbye is queued if connected (or
    /// once the connection being made is), and no reconnection follows.
    pub fn end(&mut self, exit: ExitReport) {
        self.ending = Some(exit);
        if self.queue.is_none() && !self.connecting {
            self.finished = true;
        }
        let _ = self.push(Pending::Deregister(exit));
    }

    /// The link thread starts connecting (and registering).
    pub fn connecting(&mut self) {
        self.connecting = true;
    }

    /// The connection being made failed: a session that ended meanwhile has nobody to say
    /// goodbye to.
    pub fn connect_failed(&mut self) {
        self.connecting = false;
        if self.queue.is_none() && self.ending.is_some() {
            self.finished = true;
        }
    }

    /// Whether the goodbye is written (or could not be).
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// The goodbye [`Next::Write`] gave is written.
    pub fn goodbye_written(&mut self) {
        self.finished = true;
    }

    fn push(&mut self, pending: Pending) -> Result<(), Overflow> {
        let Some(queue) = &mut self.queue else {
            return Ok(());
        };
        if let Pending::Turn(turn) = &pending {
            self.unsent_turns += 1;
            self.unsent_bytes += turn_bytes(turn);
        }
        queue.push_back(pending);
        // Up to HELD_TURNS unsent turns cost nothing: they are held for a replay anyway.
        if self.unsent_turns > HELD_TURNS
            && (self.unsent_turns > UNSENT_TURNS || self.unsent_bytes > UNSENT_BYTES)
        {
            self.disconnected();
            return Err(Overflow);
        }
        Ok(())
    }

    /// What to send in `register` on a new connection: the session and its progress so far.
    pub fn registration(&self) -> (SessionInfo, Option<Progress>) {
        (self.info.clone(), self.current_progress())
    }

    /// A new connection registered with `registered` (from [`Outbox::registration`]): queues
    /// the held turns, and whatever changed since the registration was taken.
    pub fn connected(&mut self, registered: &(SessionInfo, Option<Progress>)) {
        self.queue = Some(VecDeque::new());
        self.unsent_turns = 0;
        self.unsent_bytes = 0;
        for turn in self.held.clone() {
            let _ = self.push(Pending::Turn(turn));
        }
        if self.current_progress() != registered.1 {
            let _ = self.push(Pending::Progress);
        }
        if self.info.bracketed_paste != registered.0.bracketed_paste {
            let _ = self.push(Pending::BracketedPaste(self.info.bracketed_paste));
        }
        self.connecting = false;
        // The session ended while this connection was being made: its goodbye goes last.
        if let Some(exit) = self.ending {
            let _ = self.push(Pending::Deregister(exit));
        }
    }

    /// The connection is gone: nothing more is written to it.
    pub fn disconnected(&mut self) {
        self.queue = None;
        self.unsent_turns = 0;
        self.unsent_bytes = 0;
        if self.ending.is_some() {
            self.finished = true;
        }
    }

    /// The next thing to do.
    pub fn next(&mut self) -> Next {
        if self.finished {
            return Next::Finished;
        }
        let Some(queue) = &mut self.queue else {
            return Next::Connect;
        };
        let Some(pending) = queue.pop_front() else {
            return Next::Wait;
        };
        let session = self.info.session.clone();
        // Ids only need to be non-zero: the replies are read and dropped by the reader thread.
        let id = 1;
        Next::Write(Box::new(match pending {
            Pending::Turn(turn) => {
                self.unsent_turns -= 1;
                self.unsent_bytes -= turn_bytes(&turn);
                Message::TurnCompleted {
                    id,
                    session,
                    turn: Arc::unwrap_or_clone(turn),
                }
            }
            Pending::Progress => Message::Progress {
                id,
                session,
                progress: self.current_progress().unwrap_or_default(),
            },
            Pending::BracketedPaste(enabled) => Message::BracketedPaste {
                id,
                session,
                enabled,
            },
            Pending::Screen(request, screen) => Message::ScreenReport {
                id,
                session,
                request,
                screen: *screen,
            },
            Pending::Deregister(exit) => Message::Deregister {
                id,
                session,
                exit_code: exit.exit_code,
                signal: exit.signal,
            },
        }))
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
                read_commands(reader, decoder, &to_sink, &backlog);
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

/// What the wrapper does with a message from the broker: a command for the sink thread, or
/// nothing (a reply to a report, or something it does not know).
fn command_of(message: Message) -> Option<FromBroker> {
    match message {
        Message::Inject { data, .. } => Some(FromBroker::Inject(data)),
        Message::Terminate { .. } => Some(FromBroker::Terminate),
        Message::ScreenRequest {
            request, history, ..
        } => Some(FromBroker::Screen { request, history }),
        _ => None,
    }
}

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
/// holds: passes `inject`, `terminate` and `screen_request` on, drops replies.
fn read_commands(
    mut stream: UnixStream,
    mut decoder: FrameDecoder,
    to_sink: &Sender<crate::sink::SinkInput>,
    backlog: &InputBacklog,
) {
    let _ = stream.set_read_timeout(None);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        loop {
            let command = match decoder.next_frame() {
                Ok(Some(payload)) => match decode(&payload).ok().and_then(command_of) {
                    Some(command) => command,
                    // Replies to what the link sent: nothing to do.
                    None => continue,
                },
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

    fn info() -> SessionInfo {
        SessionInfo {
            session: "s1".into(),
            name: None,
            pid: 7,
            command: vec!["bash".into()],
            preset: "shell".into(),
            bracketed_paste: false,
            spool: None,
            cwd: None,
            no_history: false,
        }
    }

    fn turn(seq: u64, bytes: usize) -> TurnData {
        TurnData {
            seq,
            timestamp: 0,
            content: vec![b'x'; bytes],
            text: String::new(),
            interrupted: false,
            truncated: false,
            exit_code: None,
            cwd: None,
            input: None,
            spool_span: None,
            message: None,
        }
    }

    fn progress(spool_size: u64) -> Progress {
        Progress {
            spool_size,
            ..Progress::default()
        }
    }

    /// Connects the outbox with its current registration.
    fn connect(outbox: &mut Outbox) -> (SessionInfo, Option<Progress>) {
        let registration = outbox.registration();
        outbox.connected(&registration);
        registration
    }

    /// What the outbox writes until it has nothing more, in short form.
    fn drain(outbox: &mut Outbox) -> Vec<String> {
        let mut out = Vec::new();
        while let Next::Write(message) = outbox.next() {
            out.push(match *message {
                Message::TurnCompleted { turn, .. } => format!("turn {}", turn.seq),
                Message::Progress { progress, .. } => format!("progress {}", progress.spool_size),
                Message::BracketedPaste { enabled, .. } => format!("bracketed {enabled}"),
                Message::Deregister {
                    exit_code, signal, ..
                } => format!("deregister {exit_code:?} {signal:?}"),
                Message::ScreenReport { request, .. } => format!("screen {request}"),
                other => format!("{other:?}"),
            });
        }
        out
    }

    #[test]
    fn while_disconnected_turns_are_held_and_replayed_after_the_registration() {
        let mut outbox = Outbox::new(info());
        assert_eq!(outbox.next(), Next::Connect);
        for seq in 1..=40 {
            assert_eq!(outbox.turn(turn(seq, 10)), Ok(()));
        }
        outbox.progress(progress(500));
        outbox.bracketed_paste(true);
        assert_eq!(outbox.next(), Next::Connect);

        let (info, progress) = connect(&mut outbox);
        // The registration carries what changed while disconnected.
        assert!(info.bracketed_paste);
        assert_eq!(progress.map(|p| p.spool_size), Some(500));
        // Then the newest HELD_TURNS turns, oldest first, and nothing else.
        let want: Vec<String> = (9..=40).map(|seq| format!("turn {seq}")).collect();
        assert_eq!(drain(&mut outbox), want);
        assert_eq!(outbox.next(), Next::Wait);
    }

    #[test]
    fn what_changes_between_the_registration_and_the_connection_is_sent_after_it() {
        let mut outbox = Outbox::new(info());
        outbox.progress(progress(1));
        let registration = outbox.registration();
        outbox.progress(progress(2));
        outbox.bracketed_paste(true);
        outbox.connected(&registration);
        assert_eq!(drain(&mut outbox), ["progress 2", "bracketed true"]);
    }

    #[test]
    fn progress_queued_behind_a_slow_write_collapses_into_the_latest() {
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        outbox.progress(progress(1));
        assert_eq!(outbox.turn(turn(1, 10)), Ok(()));
        outbox.progress(progress(2));
        outbox.progress(progress(3));
        outbox.bracketed_paste(true);
        outbox.bracketed_paste(false);
        assert_eq!(
            drain(&mut outbox),
            ["progress 3", "turn 1", "bracketed false"]
        );
        outbox.progress(progress(4));
        assert_eq!(drain(&mut outbox), ["progress 4"]);
    }

    #[test]
    fn a_broker_too_far_behind_is_dropped_and_the_next_connection_starts_from_the_held_turns() {
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        for seq in 1..=UNSENT_TURNS as u64 {
            assert_eq!(outbox.turn(turn(seq, 1)), Ok(()));
        }
        assert_eq!(outbox.turn(turn(1025, 1)), Err(Overflow));
        assert_eq!(outbox.next(), Next::Connect);
        connect(&mut outbox);
        assert_eq!(drain(&mut outbox).len(), HELD_TURNS);

        // The byte bound too, once the unsent turns are more than the held ones.
        let big = UNSENT_BYTES / HELD_TURNS + 1;
        for seq in 2000..2000 + HELD_TURNS as u64 {
            assert_eq!(outbox.turn(turn(seq, big)), Ok(()));
        }
        assert_eq!(outbox.turn(turn(3000, big)), Err(Overflow));
        // A replay of held turns over the byte bound is no overflow…
        connect(&mut outbox);
        assert!(matches!(outbox.next(), Next::Write(_)));
        // …and written turns no longer count.
        assert_eq!(outbox.turn(turn(3001, big)), Ok(()));
        assert_eq!(drain(&mut outbox).len(), HELD_TURNS);
    }

    #[test]
    fn blocked_input_goes_out_with_the_latest_progress_and_in_the_registration() {
        let mut outbox = Outbox::new(info());
        // Nothing to say before the first progress.
        outbox.input_blocked(true);
        outbox.progress(progress(10));
        assert_eq!(outbox.registration().1.map(|p| p.input_blocked), Some(true));
        connect(&mut outbox);
        assert_eq!(drain(&mut outbox), Vec::<String>::new());
        outbox.input_blocked(false);
        let Next::Write(message) = outbox.next() else {
            panic!("a progress is queued");
        };
        assert!(matches!(
            *message,
            Message::Progress { ref progress, .. }
                if !progress.input_blocked && progress.spool_size == 10
        ));
    }

    #[test]
    fn a_screen_goes_out_in_order_on_the_connection_that_asked_and_is_never_replayed() {
        let mut outbox = Outbox::new(info());
        // No connection: nobody to answer.
        outbox.screen(1, ScreenData::default());
        connect(&mut outbox);
        assert_eq!(drain(&mut outbox), Vec::<String>::new());
        assert_eq!(outbox.turn(turn(1, 1)), Ok(()));
        outbox.screen(2, ScreenData::default());
        outbox.progress(progress(5));
        assert_eq!(drain(&mut outbox), ["turn 1", "screen 2", "progress 5"]);
        outbox.screen(3, ScreenData::default());
        outbox.disconnected();
        connect(&mut outbox);
        assert_eq!(
            drain(&mut outbox),
            ["turn 1"],
            "only the held turns are replayed"
        );
    }

    #[test]
    fn the_goodbye_is_written_last_and_then_the_link_is_finished() {
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        assert_eq!(outbox.turn(turn(1, 1)), Ok(()));
        outbox.end(ExitReport {
            exit_code: Some(3),
            signal: None,
        });
        assert!(!outbox.finished());
        assert_eq!(drain(&mut outbox), ["turn 1", "deregister Some(3) None"]);
        assert!(!outbox.finished(), "finished before the goodbye is written");
        outbox.goodbye_written();
        assert_eq!(outbox.next(), Next::Finished);

        // Without a connection there is nobody to say goodbye to.
        let mut outbox = Outbox::new(info());
        outbox.end(ExitReport::default());
        assert_eq!(outbox.next(), Next::Finished);

        // A connection lost before the goodbye was written finishes the link too.
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        outbox.end(ExitReport::default());
        outbox.disconnected();
        assert_eq!(outbox.next(), Next::Finished);
    }

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
        read_commands(wrapper, decoder, &tx, &backlog);
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

    #[test]
    fn a_session_that_ends_while_its_link_registers_says_goodbye_on_that_connection() {
        let exit = ExitReport {
            exit_code: Some(3),
            signal: None,
        };
        let mut outbox = Outbox::new(info());
        outbox.connecting();
        outbox.end(exit);
        assert!(
            !outbox.finished(),
            "the connection being made takes the goodbye"
        );
        connect(&mut outbox);
        assert_eq!(drain(&mut outbox), ["deregister Some(3) None"]);
        outbox.goodbye_written();
        assert_eq!(outbox.next(), Next::Finished);

        // The connection could not be made: nobody to say goodbye to.
        let mut outbox = Outbox::new(info());
        outbox.connecting();
        outbox.end(exit);
        outbox.connect_failed();
        assert_eq!(outbox.next(), Next::Finished);
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
            ExitReport::from(clippy_pty::ExitStatus::Exited(3)),
            ExitReport {
                exit_code: Some(3),
                signal: None
            }
        );
        assert_eq!(
            ExitReport::from(clippy_pty::ExitStatus::Signaled {
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
