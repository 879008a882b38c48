//! The wrapper's connection to the broker: register, report turns, receive injections.
//!
//! It lives on the sink thread, never on the loop that moves bytes. Writes are fire-and-forget
//! (the broker's replies are read by a small reader thread, which also passes `inject` commands
//! on); a broker that goes away is reconnected with backoff, and on every (re)connection the
//! session is registered again and the turns still held are re-sent — the broker accepts a
//! re-sent turn idempotently, so its turn ids stay stable.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use clippy_proto::{
    Client, FrameDecoder, Message, Progress, ProtoError, Role, SessionInfo, TurnData, decode,
};

/// Turns kept for re-sending after a reconnection (the broker's default ring depth).
const HELD_TURNS: usize = 32;
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long a write to the broker may take before the broker counts as gone.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// What the reader thread reports to the sink thread.
#[derive(Debug)]
pub enum FromBroker {
    /// Bytes to write into the child's PTY.
    Inject(Vec<u8>),
    /// Kill the child's process group.
    Terminate,
    /// Connection `generation` ended.
    Closed(u64),
}

/// The link and what it must replay on every connection.
pub struct BrokerLink {
    socket: PathBuf,
    info: SessionInfo,
    client: Option<Client>,
    /// Incremented on every connection, so a stale reader's `Closed` is recognised.
    generation: u64,
    held: VecDeque<TurnData>,
    /// The latest progress, re-sent after every (re)registration.
    progress: Option<Progress>,
    backoff: Duration,
    next_attempt: Instant,
    to_sink: Sender<crate::sink::SinkInput>,
}

impl BrokerLink {
    /// A link for `info`, not yet connected. `start_broker`: start one when none answers.
    pub fn new(
        socket: PathBuf,
        info: SessionInfo,
        to_sink: Sender<crate::sink::SinkInput>,
        start_broker: bool,
    ) -> Self {
        let mut link = Self {
            socket,
            info,
            client: None,
            generation: 0,
            held: VecDeque::new(),
            progress: None,
            backoff: Duration::from_millis(100),
            next_attempt: Instant::now(),
            to_sink,
        };
        if !link.try_connect() && start_broker && !spawn_broker() {
            eprintln!(
                "clippy-session: no broker answers at {} and clippy-broker could not be started \
                 (not next to clippy-session, nor on PATH); turns are still detected, and the \
                 session will register when a broker starts\r",
                link.socket.display()
            );
        } else if link.client.is_none() && start_broker {
            // Give the new broker a moment to bind its socket.
            let deadline = Instant::now() + Duration::from_secs(3);
            let mut pause = Duration::from_millis(10);
            while Instant::now() < deadline && !link.try_connect() {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
        }
        link
    }

    /// When the next reconnection attempt is due, if disconnected.
    pub fn next_attempt(&self) -> Option<Instant> {
        self.client.is_none().then_some(self.next_attempt)
    }

    /// Tries to reconnect if one is due.
    pub fn tick(&mut self) {
        if self.client.is_none() && Instant::now() >= self.next_attempt && !self.try_connect() {
            self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
            self.next_attempt = Instant::now() + self.backoff;
        }
    }

    /// Connection `generation` is gone: its reader saw it close, or a write to it failed.
    pub fn closed(&mut self, generation: u64) {
        if generation != self.generation {
            return;
        }
        if let Some(client) = self.client.take() {
            // The reader thread holds a copy of the socket: without a shutdown the connection
            // would stay open, and the broker would refuse the re-registration as a duplicate
            // of a session whose wrapper it still thinks is connected.
            let _ = client.stream().shutdown(std::net::Shutdown::Both);
            self.backoff = Duration::from_millis(100);
            self.next_attempt = Instant::now() + self.backoff;
        }
    }

    /// Reports a completed turn (and holds it for re-sending).
    pub fn turn(&mut self, turn: TurnData) {
        if self.held.len() == HELD_TURNS {
            self.held.pop_front();
        }
        self.held.push_back(turn.clone());
        let session = self.info.session.clone();
        self.send(|id| Message::TurnCompleted { id, session, turn });
    }

    /// Reports the spool's size and the session's mode.
    pub fn progress(&mut self, progress: Progress) {
        self.progress = Some(progress.clone());
        let session = self.info.session.clone();
        self.send(|id| Message::Progress {
            id,
            session,
            progress,
        });
    }

    /// Reports the child's bracketed-paste mode.
    pub fn bracketed_paste(&mut self, enabled: bool) {
        self.info.bracketed_paste = enabled;
        let session = self.info.session.clone();
        self.send(|id| Message::BracketedPaste {
            id,
            session,
            enabled,
        });
    }

    /// Says goodbye: the session ended.
    pub fn deregister(&mut self) {
        let session = self.info.session.clone();
        self.send(|id| Message::Deregister { id, session });
        if let Some(client) = self.client.take() {
            let _ = client.stream().shutdown(std::net::Shutdown::Both);
        }
    }

    fn send(&mut self, make: impl FnOnce(u32) -> Message) {
        let Some(client) = &mut self.client else {
            return;
        };
        // Replies are read (and dropped) by the reader thread; ids only need to be non-zero.
        if client.send(&make(1)).is_err() {
            self.closed(self.generation);
        }
    }

    /// Connects, registers and replays; `true` on success.
    fn try_connect(&mut self) -> bool {
        match self.connect() {
            Ok(client) => {
                self.client = Some(client);
                self.backoff = Duration::from_millis(100);
                true
            }
            Err(_) => false,
        }
    }

    fn connect(&mut self) -> Result<Client, ProtoError> {
        let mut client = Client::connect(&self.socket, Role::Wrapper)?;
        client.set_read_timeout(Some(IO_TIMEOUT))?;
        let _ = client.stream().set_write_timeout(Some(IO_TIMEOUT));
        let info = self.info.clone();
        client.request(|id| Message::Register { id, session: info })?;
        for turn in &self.held {
            let session = self.info.session.clone();
            let turn = turn.clone();
            client.request(|id| Message::TurnCompleted { id, session, turn })?;
        }
        if let Some(progress) = self.progress.clone() {
            let session = self.info.session.clone();
            client.request(|id| Message::Progress {
                id,
                session,
                progress,
            })?;
        }
        self.generation += 1;
        let reader = client
            .stream()
            .try_clone()
            .map_err(|source| ProtoError::Io {
                context: "cannot clone the broker connection".into(),
                source,
            })?;
        let to_sink = self.to_sink.clone();
        let generation = self.generation;
        std::thread::Builder::new()
            .name("clippy-session-broker".into())
            .spawn(move || read_commands(reader, generation, &to_sink))
            .map_err(|source| ProtoError::Io {
                context: "cannot start the broker reader".into(),
                source,
            })?;
        Ok(client)
    }
}

/// Reads what the broker sends: passes `inject` on, drops replies, reports the end.
fn read_commands(
    mut stream: std::os::unix::net::UnixStream,
    generation: u64,
    to_sink: &Sender<crate::sink::SinkInput>,
) {
    use std::io::Read;
    let _ = stream.set_read_timeout(None);
    let mut decoder = FrameDecoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    'read: loop {
        let n = match stream.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        decoder.push(&buf[..n]);
        loop {
            match decoder.next_frame() {
                Ok(Some(payload)) => {
                    let command = match decode(&payload) {
                        Ok(Message::Inject { data, .. }) => FromBroker::Inject(data),
                        Ok(Message::Terminate { .. }) => FromBroker::Terminate,
                        // Replies to what the link sent: nothing to do.
                        _ => continue,
                    };
                    if to_sink
                        .send(crate::sink::SinkInput::Broker(command))
                        .is_err()
                    {
                        break 'read;
                    }
                }
                Ok(None) => break,
                Err(_) => break 'read,
            }
        }
    }
    let _ = to_sink.send(crate::sink::SinkInput::Broker(FromBroker::Closed(
        generation,
    )));
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
    let spawned = {
        use std::os::unix::process::CommandExt;
        Command::new(&program)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
    };
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
