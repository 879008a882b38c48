//! The wrapper's connection to the broker: register, report turns, receive injections.
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

use std::collections::VecDeque;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
    Deregister,
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
    /// The session ended: say goodbye, then stop.
    ending: bool,
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
            ending: false,
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

    /// The session ended: the goodbye is queued if connected, and no reconnection follows.
    pub fn end(&mut self) {
        self.ending = true;
        if self.queue.is_none() {
            self.finished = true;
        }
        let _ = self.push(Pending::Deregister);
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
    }

    /// The connection is gone: nothing more is written to it.
    pub fn disconnected(&mut self) {
        self.queue = None;
        self.unsent_turns = 0;
        self.unsent_bytes = 0;
        if self.ending {
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
            Pending::Deregister => Message::Deregister { id, session },
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
    pub fn new(
        socket: PathBuf,
        info: SessionInfo,
        to_sink: Sender<crate::sink::SinkInput>,
        start_broker: bool,
    ) -> Self {
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

    /// Says goodbye: the session ended. Waits (a little) for the goodbye to be written.
    pub fn deregister(&mut self) {
        self.shared.update(|link| link.outbox.end());
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
}

impl LinkThread {
    fn run(self, start_broker: bool) {
        let mut client = self.connect().ok();
        if client.is_none() && start_broker {
            client = self.start_broker();
        }
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
            if client.is_none() {
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }

    /// Starts a broker and gives it a moment to bind its socket.
    fn start_broker(&self) -> Option<Client> {
        if !spawn_broker() {
            eprintln!(
                "clippy-session: no broker answers at {} and clippy-broker could not be started \
                 (not next to clippy-session, nor on PATH); turns are still detected, and the \
                 session will register when a broker starts\r",
                self.socket.display()
            );
            return None;
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut pause = Duration::from_millis(10);
        while Instant::now() < deadline {
            if let Ok(client) = self.connect() {
                return Some(client);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(200));
        }
        None
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

    /// Connects and registers; the link is connected from then on, with its reader running.
    fn connect(&self) -> Result<Client, ProtoError> {
        let io = |context: &str| {
            let context = context.to_owned();
            move |source| ProtoError::Io { context, source }
        };
        let mut client = Client::connect(&self.socket, Role::Wrapper)?;
        let registration = self.shared.lock().outbox.registration();
        let (session, progress) = registration.clone();
        client.request(|id| Message::Register {
            id,
            session,
            progress,
        })?;
        let reader = client
            .stream()
            .try_clone()
            .map_err(io("cannot clone the broker connection"))?;
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
        let shared = Arc::clone(&self.shared);
        let reading = std::thread::Builder::new()
            .name("clippy-session-broker".into())
            .spawn(move || {
                read_commands(reader, &to_sink);
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

/// Reads what the broker sends until the connection ends: passes `inject`, `terminate` and
/// `screen_request` on, drops replies.
fn read_commands(mut stream: UnixStream, to_sink: &Sender<crate::sink::SinkInput>) {
    use std::io::Read;
    let _ = stream.set_read_timeout(None);
    let mut decoder = FrameDecoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        decoder.push(&buf[..n]);
        loop {
            let command = match decoder.next_frame() {
                Ok(Some(payload)) => match decode(&payload) {
                    Ok(Message::Inject { data, .. }) => FromBroker::Inject(data),
                    Ok(Message::Terminate { .. }) => FromBroker::Terminate,
                    Ok(Message::ScreenRequest {
                        request, history, ..
                    }) => FromBroker::Screen { request, history },
                    // Replies to what the link sent: nothing to do.
                    _ => continue,
                },
                Ok(None) => break,
                Err(_) => return,
            };
            if to_sink
                .send(crate::sink::SinkInput::Broker(command))
                .is_err()
            {
                return;
            }
        }
    }
}

/// Starts `clippy-broker` detached (its own process group, no terminal I/O); `true` if started.
///
/// The broker is looked for next to this executable first, then on `PATH`.
fn spawn_broker() -> bool {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("clippy-broker")))
        .filter(|path| path.is_file());
    let program = beside.unwrap_or_else(|| PathBuf::from("clippy-broker"));
    use std::os::unix::process::CommandExt;
    let spawned = Command::new(&program)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    match spawned {
        Ok(mut child) => {
            // Reap it when it exits, so it never lingers as a zombie of ours.
            let _ = std::thread::Builder::new()
                .name("clippy-session-broker-reaper".into())
                .spawn(move || child.wait());
            true
        }
        Err(_) => false,
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
                Message::Deregister { .. } => "deregister".into(),
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
        outbox.end();
        assert!(!outbox.finished());
        assert_eq!(drain(&mut outbox), ["turn 1", "deregister"]);
        assert!(!outbox.finished(), "finished before the goodbye is written");
        outbox.goodbye_written();
        assert_eq!(outbox.next(), Next::Finished);

        // Without a connection there is nobody to say goodbye to.
        let mut outbox = Outbox::new(info());
        outbox.end();
        assert_eq!(outbox.next(), Next::Finished);

        // A connection lost before the goodbye was written finishes the link too.
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        outbox.end();
        outbox.disconnected();
        assert_eq!(outbox.next(), Next::Finished);
    }
}
