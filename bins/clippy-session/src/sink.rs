//! The sink thread: everything slow or blocking that happens to a session's events — rendering
//! turns as text, writing the turn log, the broker link — off the loop that moves bytes.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::thread::JoinHandle;

use clippy_proto::{Progress, ScreenData, SessionInfo};
use clippy_turn::Turn;

use crate::broker_link::{BrokerLink, ExitReport, FromBroker, Ready, exit_report};

/// What the loop and the tap report.
#[derive(Debug)]
pub enum SessionEvent {
    /// The child runs.
    Started {
        session_id: String,
        name: Option<String>,
        pid: u32,
        command: Vec<String>,
        preset: String,
        /// The spool file, when the session has one.
        spool: Option<String>,
        /// The working directory the command started in.
        cwd: Option<String>,
        /// `--no-history`: the broker must store nothing of this session.
        no_history: bool,
        /// `--detached`'s ready channel: told `ready <session-id>` once the broker acknowledged
        /// the session's first registration, or `error <message>` (no broker answers and none
        /// could be started, the session runs without a broker, or it ended first), then closed.
        ready: Option<std::fs::File>,
    },
    /// A turn completed at `timestamp` (Unix ms); `spool_span` is its byte range in the spool.
    Turn {
        turn: Box<Turn>,
        spool_span: Option<(u64, u64)>,
        timestamp: u64,
    },
    /// The child turned bracketed paste on or off.
    BracketedPaste(bool),
    /// The spool grew or the session's mode changed.
    Progress(Box<Progress>),
    /// The spool could not be written (reported once; the session goes on).
    SpoolFailed(String),
    /// Whether input is blocked changed ([`clippy_proto::Progress::input_blocked`]): the
    /// [`clippy_wrapper::InputBacklog`] says how it is now.
    InputBlocked,
    /// The screen the broker asked for with `screen_request` number `request`.
    Screen {
        request: u64,
        screen: Box<ScreenData>,
    },
    /// The report on an `answer_request`.
    Answer(clippy_wrapper::tap::AnswerReport),
    /// The session is over: deregister (saying how the child ended, when it is known) and
    /// finish.
    Ended(Option<clippy_pty::ExitStatus>),
}

/// Everything the sink thread receives.
#[derive(Debug)]
pub enum SinkInput {
    /// From the loop or the tap.
    Session(SessionEvent),
    /// From the render thread: a turn with its text view, in the order the turns completed.
    Rendered(Box<Rendered>),
    /// From the broker's reader thread.
    Broker(FromBroker),
}

/// A completed turn with its text view.
#[derive(Debug)]
pub struct Rendered {
    turn: Turn,
    text: String,
    spool_span: Option<(u64, u64)>,
    timestamp: u64,
}

/// A completed turn on its way to the render thread: the turn, its spool span, its timestamp.
type ToRender = (Box<Turn>, Option<(u64, u64)>, u64);

/// The render thread: a turn's text view replays up to 64 KiB of screen through a terminal
/// emulator, which takes milliseconds; done here, it never holds up the progress reports that
/// wake the broker's waits.
struct Renderer {
    tx: Sender<ToRender>,
    thread: JoinHandle<()>,
}

impl Renderer {
    fn start(to_sink: Sender<SinkInput>) -> std::io::Result<Self> {
        let (tx, rx) = channel::<ToRender>();
        let thread = std::thread::Builder::new()
            .name("clippy-session-render".into())
            .spawn(move || {
                for (turn, spool_span, timestamp) in rx {
                    let text = turn.text();
                    let rendered = Rendered {
                        turn: *turn,
                        text,
                        spool_span,
                        timestamp,
                    };
                    if to_sink
                        .send(SinkInput::Rendered(Box::new(rendered)))
                        .is_err()
                    {
                        break;
                    }
                }
            })?;
        Ok(Self { tx, thread })
    }
}

/// The sending half for the loop and the tap.
#[derive(Debug, Clone)]
pub struct Events(Sender<SinkInput>);

impl Events {
    /// Queues an event for the sink thread (dropped if the thread is gone).
    pub fn send(&self, event: SessionEvent) {
        let _ = self.0.send(SinkInput::Session(event));
    }
}

/// What the broker (or the agent's hooks) ask the loop to do.
#[derive(Debug)]
pub enum LoopCommand {
    /// The agent's hook reported (or sent something unreadable): handed to the tap in order
    /// with the output read so far.
    AgentReport(Result<clippy_hooks::Report, String>),
    /// Write these bytes to the child, as typed.
    Input(Vec<u8>),
    /// Kill the child's process group (`end-session --force`).
    Terminate,
    /// Report the screen (`screen_request` number `request`), after the output read so far.
    Screen { request: u64, history: u32 },
    /// Answer the session's wait, after the output and input read so far.
    Answer(clippy_wrapper::tap::AnswerAsk),
}

/// Where the broker's commands go: a channel to the loop, and the waker that makes it look.
#[derive(Clone)]
pub struct Injector {
    pub tx: Sender<LoopCommand>,
    pub waker: Arc<mio::Waker>,
    /// Injected input not yet written to the child, counted from the broker's connection on.
    pub backlog: Arc<clippy_wrapper::InputBacklog>,
}

impl Injector {
    /// Queues `command` for the loop and wakes it (dropped once the loop is gone).
    pub fn pass(&self, command: LoopCommand) {
        if self.tx.send(command).is_ok() {
            let _ = self.waker.wake();
        }
    }
}

/// How the sink thread is set up.
pub struct SinkOptions {
    pub turn_log: Option<PathBuf>,
    /// The broker's socket and whether to start a broker when none answers; `None`: no broker.
    pub broker: Option<(PathBuf, bool)>,
    pub injector: Injector,
}

/// One line of `--turn-log`.
#[derive(serde::Serialize)]
struct TurnLine<'a> {
    session: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    turn_id: String,
    seq: u64,
    /// When the turn completed: Unix milliseconds, and ISO-8601 UTC.
    timestamp: u64,
    time: String,
    input: &'a str,
    interrupted: bool,
    truncated: bool,
    byte_length: usize,
    exit_code: Option<i32>,
    cwd: Option<&'a str>,
    spool_span: Option<(u64, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_b64: Option<String>,
    text: &'a str,
    /// The agent's own final message, when its hooks gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    /// The turn ended at the agent's word (its hook).
    ended_by_agent: bool,
}

/// Starts the sink thread; opening the turn log is the only thing that can fail here.
pub fn start(options: SinkOptions) -> std::io::Result<(Events, JoinHandle<()>)> {
    let log = match &options.turn_log {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot open the turn log {}: {e}", path.display()),
                    )
                })?,
        ),
        None => None,
    };
    let (tx, rx) = channel();
    let events = Events(tx.clone());
    let renderer = Renderer::start(tx.clone())?;
    let handle = std::thread::Builder::new()
        .name("clippy-session-sink".into())
        .spawn(move || {
            Sink {
                log,
                options,
                tx,
                session: String::new(),
                name: None,
                bracketed: false,
                link: None,
                renderer: Some(renderer),
            }
            .run(rx)
        })?;
    Ok((events, handle))
}

struct Sink {
    log: Option<std::fs::File>,
    options: SinkOptions,
    /// For the broker link's reader threads.
    tx: Sender<SinkInput>,
    session: String,
    name: Option<String>,
    bracketed: bool,
    link: Option<BrokerLink>,
    /// The readiness pipe, until the session starts (then the link has it).
    /// `None` once the session ended (the turns still being rendered are then collected).
    renderer: Option<Renderer>,
}

impl Sink {
    fn run(mut self, rx: Receiver<SinkInput>) {
        // Progress reports are coalesced: one is held while more input is queued, replaced by
        // a newer one, and sent before anything else is handled or the thread waits, so the
        // broker sees them in order and never late, but not one per PTY read under load.
        let mut held_progress: Option<Box<Progress>> = None;
        let mut exit = ExitReport::default();
        loop {
            let next = if held_progress.is_some() {
                match rx.try_recv() {
                    Ok(input) => Some(input),
                    Err(TryRecvError::Empty) => {
                        self.progress(held_progress.take());
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => None,
                }
            } else {
                rx.recv().ok()
            };
            if let Some(SinkInput::Session(SessionEvent::Progress(progress))) = next {
                held_progress = Some(progress);
                continue;
            }
            self.progress(held_progress.take());
            match next {
                Some(SinkInput::Session(SessionEvent::Ended(status))) => {
                    exit = status.map(exit_report).unwrap_or_default();
                    break;
                }
                None => break,
                Some(SinkInput::Session(event)) => self.session_event(event),
                Some(SinkInput::Rendered(rendered)) => self.turn_rendered(*rendered),
                Some(SinkInput::Broker(FromBroker::Inject(data))) => {
                    self.options.injector.pass(LoopCommand::Input(data));
                }
                Some(SinkInput::Broker(FromBroker::Terminate)) => {
                    self.options.injector.pass(LoopCommand::Terminate);
                }
                Some(SinkInput::Broker(FromBroker::Screen { request, history })) => {
                    self.options
                        .injector
                        .pass(LoopCommand::Screen { request, history });
                }
                Some(SinkInput::Broker(FromBroker::Answer(ask))) => {
                    self.options.injector.pass(LoopCommand::Answer(ask));
                }
            }
        }
        // The turns still being rendered are reported before the session says goodbye.
        if let Some(renderer) = self.renderer.take() {
            drop(renderer.tx);
            let _ = renderer.thread.join();
        }
        while let Ok(input) = rx.try_recv() {
            match input {
                SinkInput::Rendered(rendered) => self.turn_rendered(*rendered),
                SinkInput::Session(SessionEvent::Progress(progress)) => {
                    self.progress(Some(progress));
                }
                _ => {}
            }
        }
        if let Some(link) = &mut self.link {
            link.deregister(exit);
        }
    }

    fn session_event(&mut self, event: SessionEvent) {
        match event {
            SessionEvent::Started {
                session_id,
                name,
                pid,
                command,
                preset,
                spool,
                cwd,
                no_history,
                ready,
            } => {
                self.session = session_id.clone();
                self.name = name.clone();
                let ready = ready.map(Ready::new);
                if let Some((socket, start_broker)) = self.options.broker.clone() {
                    let info = SessionInfo {
                        session: session_id,
                        name,
                        pid,
                        command,
                        preset,
                        bracketed_paste: self.bracketed,
                        spool,
                        cwd,
                        no_history,
                    };
                    let ready = ready.unwrap_or(Ready::none());
                    self.link = Some(BrokerLink::new(
                        socket,
                        info,
                        self.tx.clone(),
                        Arc::clone(&self.options.injector.backlog),
                        start_broker,
                        ready,
                    ));
                } else if let Some(mut ready) = ready {
                    ready.failed(
                        "the session runs without a broker (--no-broker, or no XDG_RUNTIME_DIR)",
                    );
                }
            }
            SessionEvent::Turn {
                turn,
                spool_span,
                timestamp,
            } => {
                let unsent = match &self.renderer {
                    Some(renderer) => renderer
                        .tx
                        .send((turn, spool_span, timestamp))
                        .err()
                        .map(|e| e.0),
                    None => Some((turn, spool_span, timestamp)),
                };
                // The render thread is gone (it panicked): render here.
                if let Some((turn, spool_span, timestamp)) = unsent {
                    let text = turn.text();
                    self.turn_rendered(Rendered {
                        turn: *turn,
                        text,
                        spool_span,
                        timestamp,
                    });
                }
            }
            SessionEvent::BracketedPaste(enabled) => {
                self.bracketed = enabled;
                if let Some(link) = &mut self.link {
                    link.bracketed_paste(enabled);
                }
            }
            SessionEvent::Progress(progress) => self.progress(Some(progress)),
            // Whichever side saw the change, the state now is what counts.
            SessionEvent::InputBlocked => {
                if let Some(link) = &mut self.link {
                    link.input_blocked(self.options.injector.backlog.is_blocked());
                }
            }
            SessionEvent::Screen { request, screen } => {
                if let Some(link) = &mut self.link {
                    link.screen(request, *screen);
                }
            }
            SessionEvent::Answer(report) => {
                if let Some(link) = &mut self.link {
                    link.answer(report);
                }
            }
            SessionEvent::SpoolFailed(reason) => {
                notice(&format!("spool: {reason} (the session goes on)"));
            }
            SessionEvent::Ended(_) => {}
        }
    }

    /// A turn's text is ready: log it and report it.
    fn turn_rendered(&mut self, rendered: Rendered) {
        let Rendered {
            turn,
            text,
            spool_span,
            timestamp,
        } = rendered;
        self.log_turn(&turn, spool_span, timestamp, &text);
        if let Some(link) = &mut self.link {
            link.turn(clippy_wrapper::link::turn_data(
                turn, text, spool_span, timestamp,
            ));
        }
    }

    fn progress(&mut self, progress: Option<Box<Progress>>) {
        if let (Some(progress), Some(link)) = (progress, &mut self.link) {
            link.progress(*progress);
        }
    }

    fn log_turn(
        &mut self,
        turn: &Turn,
        spool_span: Option<(u64, u64)>,
        timestamp: u64,
        text: &str,
    ) {
        let Some(file) = &mut self.log else { return };
        let utf8 = std::str::from_utf8(&turn.content).ok();
        let line = TurnLine {
            session: &self.session,
            name: self.name.as_deref(),
            turn_id: format!("{}:{}", self.session, turn.seq),
            seq: turn.seq,
            timestamp,
            time: clippy_proto::iso8601_utc(timestamp),
            input: &turn.input,
            interrupted: turn.interrupted,
            truncated: turn.truncated,
            byte_length: turn.content.len(),
            exit_code: turn.exit_code,
            cwd: turn.cwd.as_deref(),
            spool_span,
            content: utf8,
            content_b64: utf8.is_none().then(|| {
                base64::engine::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    &turn.content,
                )
            }),
            text,
            message: turn.message.as_deref(),
            ended_by_agent: turn.ended_by_agent,
        };
        let mut record = serde_json::to_vec(&line).unwrap_or_default();
        record.push(b'\n');
        if let Err(e) = file.write_all(&record) {
            notice(&format!("cannot write the turn log: {e}"));
            self.log = None;
        }
    }
}

/// Tells the user something on the terminal the session's output goes to, on a line of its
/// own, in one write: the relay writes the program's output from another thread, and a notice
/// written in pieces could be split by it.
fn notice(message: &str) {
    use std::io::Write as _;
    let line = format!("\r\nclippy-session: {message}\r\n");
    // Nowhere to report a terminal that cannot be written to.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}
