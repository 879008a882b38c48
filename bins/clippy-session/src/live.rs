//! The live wrapper: one agent in one PTY, bytes moved first, turns detected on the side.
//!
//! One mio loop moves bytes: child output to the user's terminal, user input to the child. A
//! copy of each goes to the tap thread (turn detection and the spool, `tap.rs`), which reports
//! turns to the sink thread (rendering, the turn log, later the broker, `sink.rs`). The loop
//! never waits on either.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clippy_pty::{
    Child, CommandSpec, ExitStatus, PtyMaster, RawModeGuard, Signal, SignalPipe, WinSize,
};
use clippy_spool::{SpoolDir, SpoolWriter};

use clippy_turn::{AgentHooks, DetectorConfig, TurnDetector};
use clippy_wrapper::InputBacklog;
use clippy_wrapper::handover::Handover;
use clippy_wrapper::submit::SubmitSpacing;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};

use clippy_attach::HubAction;

use crate::agent_hooks;
use crate::attach_server::{self, AttachServer};
use crate::shell_integration;
use crate::sink::{self, LoopCommand, SessionEvent};
use crate::tap::{FromTap, Tap, Tapped, ToLoop};

const STDIN: Token = Token(0);
const MASTER: Token = Token(1);
const SIGNALS: Token = Token(2);
/// The sink thread has bytes from the broker to inject.
const INJECT: Token = Token(3);
/// How much is read from the child at a time.
const READ_CHUNK: usize = 64 * 1024;
/// How much of the child's output is read in one go before the loop looks at its other sources
/// (the terminal's keys, attached clients, signals, the broker) again.
const READ_BUDGET: usize = 256 * 1024;
/// The least room a read of the child's output is given: with less left in the buffer, what it
/// holds goes to the terminal first (a PTY hands over at most about 4 KiB a read).
const MIN_READ: usize = 4 * 1024;
/// How long the child has to go after a SIGTERM is forwarded to it before the wrapper hangs up
/// its terminal (CONTRACTS/PTY.md, "Signals"): an interactive shell ignores SIGTERM.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// What the wrapper was asked to do.
#[derive(Debug)]
pub struct Options {
    pub command: Vec<OsString>,
    pub detector: DetectorConfig,
    pub name: Option<String>,
    pub keep_spool: Option<PathBuf>,
    pub export_session_id: bool,
    pub shell_integration: bool,
    pub turn_log: Option<PathBuf>,
    /// Neither start nor contact a broker.
    pub no_broker: bool,
    /// The PTY size when stdin is not a terminal.
    pub headless_size: WinSize,
    /// Offer the hook socket and wire a known agent's hooks (CONTRACTS/HOOKS.md).
    pub agent_hooks: bool,
    /// `--no-history`: the broker stores nothing of this session on disk.
    pub no_history: bool,
    /// No terminal at all (`clippy-ctl spawn`): the output goes to the spool and to attached
    /// clients only.
    pub detached: bool,
    /// `broker.submit_delay_ms`: the least time between injected text written to the child
    /// and the lone Enter that submits it (`clippy_wrapper::submit`).
    pub submit_delay: Duration,
}

/// Why the session could not run. `Usage` errors exit 4, the others 1.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    Usage(String),
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        source: std::io::Error,
    },
    #[error(transparent)]
    Pty(#[from] clippy_pty::PtyError),
}

fn io(context: &'static str) -> impl FnOnce(std::io::Error) -> SessionError {
    move |source| SessionError::Io { context, source }
}

/// Runs the session to its end and returns how the child ended (the terminal already restored).
/// `ready` (`--detached`'s ready channel) is handed to the broker link once the session has
/// started; left in place, the caller says why the session did not start.
pub fn run(
    options: Options,
    ready: &mut Option<std::fs::File>,
) -> Result<ExitStatus, SessionError> {
    if options.command.is_empty() {
        return Err(SessionError::Usage(
            "no command given: clippy-session [OPTIONS] -- COMMAND [ARGS…]".into(),
        ));
    }
    // Signals first, so none between here and the loop is lost.
    let signals = SignalPipe::new()?;
    let _cpu_share = crate::cpu_share::CpuShare::yield_to_programs();
    RawModeGuard::install_panic_restore();

    // Everything that can be refused is checked before anything is created or started.
    let poll = Poll::new().map_err(io("cannot create the event loop"))?;
    let waker =
        Arc::new(Waker::new(poll.registry(), INJECT).map_err(io("cannot create the event loop"))?);
    let (inject_tx, inject_rx) = std::sync::mpsc::channel();
    let (from_tap_tx, from_tap_rx) = std::sync::mpsc::channel();
    let (spares_tx, spares_rx) = std::sync::mpsc::channel();
    let broker = if options.no_broker {
        None
    } else {
        clippy_proto::socket_path()
            .ok()
            .map(|socket| (socket, true))
    };
    let input_backlog = Arc::new(InputBacklog::default());
    let injector = sink::Injector {
        tx: inject_tx,
        waker: Arc::clone(&waker),
        backlog: Arc::clone(&input_backlog),
    };
    let (events, sink_thread) = sink::start(sink::SinkOptions {
        turn_log: options.turn_log.clone(),
        broker,
        injector: injector.clone(),
    })
    .map_err(|e| SessionError::Usage(e.to_string()))?;
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let size = clippy_pty::terminal_size(stdin.as_fd())
        .or_else(|| clippy_pty::terminal_size(stdout.as_fd()))
        .unwrap_or(options.headless_size);
    let mut detector_config = options
        .detector
        .size(size.cols.max(1), size.rows.max(1))
        .map_err(|e| SessionError::Usage(e.to_string()))?;
    // From here the spool owns the session folder: any error below drops it, which removes it.
    let (spool, session_id) = create_spool()?;
    if options.detached
        && let Some(dir) = spool.dir()
    {
        log_to_session_folder(dir.path())?;
    }
    let attach = match spool.dir() {
        Some(dir) => Some(
            AttachServer::bind(
                dir.path(),
                &session_id,
                options.name.clone(),
                (size.cols, size.rows),
                poll.registry(),
            )
            .map_err(io("cannot open the session's attach socket"))?,
        ),
        None => None,
    };
    let mut command = options.command.clone();
    let mut extra_env = Vec::new();
    let mut hooks = None;
    if options.agent_hooks
        && let Some(dir) = spool.dir()
    {
        let preset = detector_config.preset().name().to_owned();
        if let Some((wired, warning)) = agent_hooks::wire(&command, &preset, dir.path())
            .map_err(io("cannot offer the hook socket"))?
        {
            if let Some(warning) = warning {
                eprintln!("clippy-session: {warning}");
            }
            if wired.agent.is_some() {
                detector_config = detector_config.agent_hooks(AgentHooks::On);
            }
            command.clone_from(&wired.command);
            extra_env.extend(wired.env.iter().cloned());
            hooks = Some(wired);
        }
    }
    let detector = TurnDetector::new(detector_config);
    if options.shell_integration
        && let Some(dir) = spool.dir()
        && let Some(wrapped) = shell_integration::wrap(&command, dir.path())
            .map_err(io("cannot write the shell integration files"))?
    {
        command = wrapped.command;
        extra_env.extend(wrapped.env);
    }
    let Some((program, args)) = command.split_first() else {
        unreachable!("checked non-empty above");
    };
    let mut spec = CommandSpec::new(program.clone()).args(args.iter().cloned());
    for (key, value) in extra_env {
        spec = spec.env(key, value);
    }
    if options.export_session_id {
        spec = spec.env("CLIPPY_SESSION_ID", &session_id);
    }

    let pair = clippy_pty::openpty(size)?;
    let mut child = match pair.slave.spawn(&spec) {
        Ok(child) => child,
        Err(e @ clippy_pty::PtyError::Spawn { .. }) => {
            return Err(SessionError::Usage(e.to_string()));
        }
        Err(e) => return Err(e.into()),
    };
    drop(pair.slave);
    let master = pair.master;
    master.set_nonblocking(true)?;

    let wired_agent = hooks.as_ref().is_some_and(|h| h.agent.is_some());
    events.send(SessionEvent::Started {
        session_id: session_id.clone(),
        name: options.name.clone(),
        pid: child.pid(),
        // The command as the user gave it, without the hooks' arguments.
        command: if wired_agent {
            &options.command
        } else {
            &command
        }
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect(),
        preset: detector.preset().name().to_owned(),
        spool: spool.path().map(|p| p.to_string_lossy().into_owned()),
        cwd: std::env::current_dir()
            .ok()
            .map(|dir| dir.to_string_lossy().into_owned()),
        no_history: options.no_history,
        ready: ready.take(),
    });
    if let Some(hooks) = hooks {
        hooks
            .listen(injector)
            .map_err(io("cannot start the session"))?;
    }
    let to_loop = ToLoop {
        tx: from_tap_tx,
        waker,
        spares: spares_tx,
    };
    let tap = Tap::start(detector, spool, events.clone(), to_loop, wired_agent)
        .map_err(io("cannot start the session"))?;
    let guard = if options.detached {
        None
    } else {
        RawModeGuard::enter(stdin.as_fd())?
    };
    let mut session = Session {
        poll,
        master,
        tap,
        attach,
        terminal: !options.detached,
        attach_unread: Vec::new(),
        attached_told: 0,
        injected: inject_rx,
        human_inputs: 0,
        from_tap: from_tap_rx,
        spares: spares_rx,
        handover: Handover::new(Instant::now()),
        output_pending: false,
        pending_input: VecDeque::new(),
        submit: SubmitSpacing::new(options.submit_delay),
        input_backlog,
        events: events.clone(),
        guard,
    };
    let status = session.pump(&mut child, &signals);
    if session.terminal {
        let_go_of_stdout();
    }
    session.flush_tap();
    let Session {
        tap,
        guard,
        attach,
        poll,
        ..
    } = session;
    drop(guard);
    if let (Some(attach), Ok(status)) = (attach, &status) {
        let signal = status.signal().map(|s| s as i32);
        attach.exited(status.code_for_shell(), signal, poll.registry());
    }
    if let Some(spool) = tap.finish()
        && let Err(e) = spool.finish(options.keep_spool.as_deref())
    {
        eprintln!("clippy-session: {e}");
    }
    // The tap has reported every turn: the sink writes them, deregisters and ends.
    events.send(SessionEvent::Ended(status.as_ref().ok().copied()));
    let _ = sink_thread.join();
    status
}

/// The child's output is all written: fd 1 becomes `/dev/null`, so that whoever reads a piped
/// session's output sees its end now, not once the tap caught up, the spool was put away and
/// the broker told (about 10 ms after a 64 MiB flood). Nothing is printed to it after.
fn let_go_of_stdout() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
    }
}

/// What `--detached` does before anything else: a session of its own (no controlling terminal,
/// none of a terminal's signals), stdin from `/dev/null`, and stdout kept as the ready channel
/// (returned) while fd 1 becomes `/dev/null`, so nothing printed later reaches the caller.
pub fn detach_from_terminal() -> Result<std::fs::File, SessionError> {
    // Already a process group leader (started so on purpose): its own session is up to the
    // caller then.
    let _ = nix::unistd::setsid();
    let ready = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(io("cannot keep the ready channel"))?;
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(io("cannot open /dev/null"))?;
    nix::unistd::dup2_stdin(&null)
        .and_then(|()| nix::unistd::dup2_stdout(&null))
        .map_err(|e| SessionError::Io {
            context: "cannot let go of the caller's stdin and stdout",
            source: e.into(),
        })?;
    Ok(std::fs::File::from(ready))
}

/// With `--detached`, stderr (warnings, the end of the session) goes to `session.log` in the
/// session's folder from the moment it exists.
fn log_to_session_folder(dir: &std::path::Path) -> Result<(), SessionError> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join("session.log"))
        .map_err(io("cannot create the session's log"))?;
    nix::unistd::dup2_stderr(&log).map_err(|e| SessionError::Io {
        context: "cannot send stderr to the session's log",
        source: e.into(),
    })
}

/// Creates `$XDG_RUNTIME_DIR/clippy/sessions/<id>/` under a fresh ID, with its spool.
fn create_spool() -> Result<(SpoolWriter, String), SessionError> {
    let runtime =
        clippy_spool::runtime_dir_from_env().map_err(|e| SessionError::Usage(e.to_string()))?;
    // Folders of wrappers that are certainly gone (SIGKILL leaves them behind); errors are
    // ignored: the broker logs them, and they never stop a session.
    let _ = clippy_spool::sweep_stale(&runtime);
    let mut last = None;
    for bump in 0..64 {
        // Creation is exclusive: a taken ID fails and the next one is tried.
        let id = clippy_wrapper::session_id::at(clippy_proto::unix_ms_now(), bump);
        match SpoolDir::create(&runtime, &id).and_then(SpoolWriter::create) {
            Ok(spool) => return Ok((spool, id)),
            Err(e) => last = Some(e),
        }
    }
    Err(SessionError::Usage(last.map_or_else(
        || "no free session ID".to_owned(),
        |e| e.to_string(),
    )))
}

struct Session {
    poll: Poll,
    master: PtyMaster,
    tap: Tap,
    /// The attach socket and its clients (`None` for a spool without a session folder).
    attach: Option<AttachServer>,
    /// Whether output goes to the user's terminal (not when detached).
    terminal: bool,
    /// Attached clients whose sockets may hold keys not read yet (see `read_attached`).
    attach_unread: Vec<u64>,
    /// The attached terminals the tap was last told of (reported to the broker in `progress`).
    attached_told: usize,
    /// Bytes the broker asked to inject, announced by the `INJECT` waker.
    injected: std::sync::mpsc::Receiver<LoopCommand>,
    /// Chunks of a person's input (`Tapped::Input` with `human`) handed to the tap: an answer's
    /// keys are written only if none came since the tap decided on them.
    human_inputs: u64,
    /// Screens the tap rendered for attached clients and a terminal's answers to the program,
    /// announced by the same waker.
    from_tap: std::sync::mpsc::Receiver<FromTap>,
    /// The flood buffers the tap took and gives back, for the hand-over to fill again.
    spares: std::sync::mpsc::Receiver<Vec<u8>>,
    /// Output not yet handed to the tap (one hand-over, and one wake-up of its thread, per
    /// batch), and when it goes (`clippy_wrapper::handover`).
    handover: Handover,
    /// The last read of the child's output stopped at [`READ_BUDGET`]: more may wait.
    output_pending: bool,
    /// Input (read from the user, or injected) that the child has not taken yet; taken from the
    /// front a PTY buffer at a time.
    pending_input: VecDeque<u8>,
    /// The broker's injections before they join `pending_input`: an Enter that submits
    /// injected text waits until the text was written and the submit delay passed.
    submit: SubmitSpacing,
    /// The injected input waiting here and on its way here: over
    /// [`clippy_proto::INPUT_BACKLOG_LIMIT`] the sink thread is told (its link reports it to the
    /// broker, which then injects nothing more).
    input_backlog: Arc<InputBacklog>,
    /// The sink thread, told directly (not through the tap, which may be busy detecting).
    events: sink::Events,
    guard: Option<RawModeGuard>,
}

impl Session {
    /// Moves bytes until the child is gone; returns its exit status.
    fn pump(
        &mut self,
        child: &mut Child,
        signals: &SignalPipe,
    ) -> Result<ExitStatus, SessionError> {
        let stdin = std::io::stdin();
        let stdin_fd = stdin.as_raw_fd();
        let master_fd = self.master.as_raw_fd();
        let signal_fd = signals.as_fd().as_raw_fd();
        // A stdin that epoll refuses (a regular file, /dev/null) is simply not read.
        let mut stdin_open = self
            .poll
            .registry()
            .register(&mut SourceFd(&stdin_fd), STDIN, Interest::READABLE)
            .is_ok();
        self.poll
            .registry()
            .register(&mut SourceFd(&master_fd), MASTER, Interest::READABLE)
            .map_err(io("cannot watch the PTY"))?;
        self.poll
            .registry()
            .register(&mut SourceFd(&signal_fd), SIGNALS, Interest::READABLE)
            .map_err(io("cannot watch signals"))?;

        let mut events = Events::with_capacity(16);
        let mut buf = vec![0u8; READ_CHUNK];
        let mut exited: Option<ExitStatus> = None;
        let mut pending_signals = Vec::new();
        let mut watching_writable = false;
        // When the child, sent a SIGTERM, gets its terminal hung up if it is still there.
        let mut hangup_at: Option<Instant> = None;
        loop {
            // Output for the tap is handed over in batches: when the loop would block, once
            // `TAP_INTERVAL` (`clippy_wrapper::handover`) has passed since the last hand-over, so the tap is never behind an
            // idle session. Attached clients' keys left unread go in as soon as the program
            // takes input. A pending hang-up bounds the wait.
            let keys_waiting = self.attach_keys_waiting();
            let now = Instant::now();
            let idle_timeout = hangup_at.map(|at| at.saturating_duration_since(now));
            let handover_in = self.handover.wait_at_most(now);
            let submit_in = self
                .submit
                .next_at()
                .map(|at| at.saturating_duration_since(now));
            let timeout = if keys_waiting || self.output_pending {
                Some(Duration::ZERO)
            } else {
                [idle_timeout, handover_in, submit_in]
                    .into_iter()
                    .flatten()
                    .min()
            };
            let mut polled = self.poll.poll(&mut events, timeout);
            if polled.is_ok() && events.is_empty() && self.handover.due(Instant::now()) {
                self.flush_tap();
                if !keys_waiting && !self.output_pending {
                    // A held Enter's time bounds this wait too.
                    let now = Instant::now();
                    let submit_in = self
                        .submit
                        .next_at()
                        .map(|at| at.saturating_duration_since(now));
                    let wait = [idle_timeout, submit_in].into_iter().flatten().min();
                    polled = self.poll.poll(&mut events, wait);
                }
            }
            if let Err(e) = polled {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(SessionError::Io {
                    context: "the event loop failed",
                    source: e,
                });
            }
            for event in &events {
                match event.token() {
                    MASTER => {
                        if event.is_readable() && !self.read_child(&mut buf)? {
                            // The child side closed: collect the child.
                            return Ok(match exited {
                                Some(status) => status,
                                None => child.wait()?,
                            });
                        }
                        if event.is_writable() {
                            self.flush_input()?;
                        }
                    }
                    STDIN if stdin_open && !self.read_user(&stdin, &mut buf)? => {
                        stdin_open = false;
                        let _ = self.poll.registry().deregister(&mut SourceFd(&stdin_fd));
                    }
                    attach_server::LISTENER => {
                        if let Some(attach) = &mut self.attach {
                            attach.accept(self.poll.registry());
                        }
                    }
                    token if let Some(client) = AttachServer::client_of(token) => {
                        self.attach_event(client, event.is_readable(), event.is_writable())?;
                    }
                    // `end-session --force`: the child's process group and whatever runs in
                    // the foreground go; the PTY then closes and the session ends as with any
                    // exit.
                    INJECT if self.take_injected()? => {
                        eprint!(
                            "\r\nclippy-session: ended by the broker (end-session --force)\r\n"
                        );
                        let _ = child.signal_group(Signal::SIGKILL);
                        let _ = child.signal_own_group(Signal::SIGKILL);
                    }
                    SIGNALS => {
                        pending_signals.clear();
                        signals.drain_into(&mut pending_signals)?;
                        for &signal in &pending_signals {
                            if let Some(status) = self.on_signal(signal, child)? {
                                exited = Some(status);
                            }
                            if signal == Signal::SIGTERM && hangup_at.is_none() {
                                hangup_at = Some(Instant::now() + TERM_GRACE);
                            }
                        }
                    }
                    _ => {}
                }
            }
            if self.attach_keys_waiting() {
                for client in std::mem::take(&mut self.attach_unread) {
                    self.read_attached(client)?;
                }
            }
            // The child's output left unread when the last read stopped at its budget.
            if self.output_pending && exited.is_none() && !self.read_child(&mut buf)? {
                return Ok(child.wait()?);
            }
            self.tell_attached();
            self.pace_injected()?;
            if let Some(status) = exited {
                // Drain what the child left in the PTY, then go.
                while self.read_child(&mut buf)? {}
                return Ok(status);
            }
            if hangup_at.is_some_and(|at| at <= Instant::now()) {
                // Still there after a SIGTERM: a hang-up, as when a terminal closes. Once: the
                // child then ends as it pleases (a shell does).
                hangup_at = None;
                Self::hang_up(child);
            }
            // Watch for the child taking input only while some is waiting.
            let want_writable = !self.pending_input.is_empty();
            if want_writable != watching_writable {
                let want = if want_writable {
                    Interest::READABLE | Interest::WRITABLE
                } else {
                    Interest::READABLE
                };
                self.poll
                    .registry()
                    .reregister(&mut SourceFd(&master_fd), MASTER, want)
                    .map_err(io("cannot watch the PTY"))?;
                watching_writable = want_writable;
            }
        }
    }

    /// Reads what the child wrote and passes it on, until the PTY has nothing more or
    /// [`READ_BUDGET`] was read (then `output_pending` says to read on after the other sources).
    /// A read that finds the line discipline empty waits for what the kernel is still moving
    /// there, so reading on takes the child's output in the largest pieces the PTY gives;
    /// going back to `epoll_wait` after each read woke the loop for every piece (issue 29).
    /// The pieces read on go to the user's terminal together, in one write per `buf`ful (or
    /// when the reading stops), not one per piece of about 4 KiB: under a flood that is a
    /// sixteenth of the writes, and of the wake-ups of whatever reads the terminal (issue 29).
    /// `false` once the child side is closed (or, when draining, nothing more is there).
    fn read_child(&mut self, buf: &mut [u8]) -> Result<bool, SessionError> {
        self.output_pending = false;
        while let Ok(spare) = self.spares.try_recv() {
            self.handover.give_back(spare);
        }
        let mut read = 0;
        // `buf[..unwritten]`: read, and not written to the user's terminal yet.
        let mut unwritten = 0;
        let open = loop {
            if buf.len() - unwritten < MIN_READ {
                self.to_terminal(&buf[..unwritten])?;
                unwritten = 0;
            }
            let n = match (&self.master).read(&mut buf[unwritten..]) {
                Ok(0) => break false,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break true,
                // EIO: the last process holding the slave went away.
                Err(e) if e.raw_os_error() == Some(nix::libc::EIO) => break false,
                Err(e) => {
                    self.to_terminal(&buf[..unwritten])?;
                    return Err(SessionError::Io {
                        context: "cannot read from the PTY",
                        source: e,
                    });
                }
            };
            let bytes = &buf[unwritten..unwritten + n];
            // The attached terminals after the tap's copy: a screen one of them asks for now
            // (it skipped output) shows these bytes.
            let full = self.handover.push(bytes, Instant::now());
            let actions = match &mut self.attach {
                Some(attach) => attach.output(bytes, self.poll.registry()),
                None => Vec::new(),
            };
            unwritten += n;
            // The user's terminal gets output before the tap does (what the attached clients'
            // actions do may hand it over).
            if full || !actions.is_empty() {
                self.to_terminal(&buf[..unwritten])?;
                unwritten = 0;
            }
            self.apply(actions)?;
            if full {
                self.flush_tap();
            }
            read += n;
            if read >= READ_BUDGET {
                self.output_pending = true;
                break true;
            }
        };
        self.to_terminal(&buf[..unwritten])?;
        Ok(open)
    }

    /// Writes the child's output to the user's terminal, unmodified (nothing when detached).
    fn to_terminal(&self, bytes: &[u8]) -> Result<(), SessionError> {
        if self.terminal && !bytes.is_empty() {
            write_all(std::io::stdout().as_fd(), bytes)
                .map_err(io("cannot write to the terminal"))?;
        }
        Ok(())
    }

    /// Reads the user's input and sends it to the child. `false` at end of input.
    fn read_user(&mut self, stdin: &std::io::Stdin, buf: &mut [u8]) -> Result<bool, SessionError> {
        if !self.pending_input.is_empty() {
            // The child has not taken the last input yet: leave the rest in the kernel.
            return Ok(true);
        }
        let n = loop {
            match nix::unistd::read(stdin.as_fd(), buf) {
                Ok(n) => break n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(nix::errno::Errno::EAGAIN) => return Ok(true),
                Err(e) => {
                    return Err(SessionError::Io {
                        context: "cannot read the terminal",
                        source: e.into(),
                    });
                }
            }
        };
        if n == 0 {
            return Ok(false);
        }
        let bytes = &buf[..n];
        self.pending_input.extend(bytes);
        self.flush_input()?;
        self.flush_tap();
        self.hand_human_input(bytes.to_vec());
        Ok(true)
    }

    /// Queues what the broker asked to inject; the detector sees it as input, like typing.
    /// `true` when the broker asked to terminate the child.
    fn take_injected(&mut self) -> Result<bool, SessionError> {
        let mut terminate = false;
        while let Ok(command) = self.injected.try_recv() {
            match command {
                LoopCommand::Input(data) => {
                    self.input_backlog.taken(data.len());
                    self.submit.push(data);
                    self.release_injected();
                }
                LoopCommand::Terminate => terminate = true,
                LoopCommand::AgentReport(report) => {
                    self.flush_tap();
                    self.tap.send(Tapped::Agent(report));
                }
                // Behind all the output read so far, in the tap's order: the screen shows it.
                LoopCommand::Screen { request, history } => {
                    self.flush_tap();
                    self.tap.send(Tapped::Screen { request, history });
                }
                // Behind the output and input so far: the tap decides on the screen as it is.
                LoopCommand::Answer(ask) => {
                    self.flush_tap();
                    self.tap.send(Tapped::Answer(ask));
                }
            }
        }
        while let Ok(from_tap) = self.from_tap.try_recv() {
            match from_tap {
                FromTap::Redrawn {
                    client,
                    generation,
                    screen,
                } => {
                    if let Some(attach) = &mut self.attach {
                        let actions =
                            attach.redrawn(client, generation, screen, self.poll.registry());
                        self.apply(actions)?;
                    }
                }
                // The program asked its terminal something (where the cursor is, what it
                // is): with no terminal of its own and none attached that types, the screen
                // model answers, as a terminal would, behind the input before it.
                FromTap::TerminalReplies(replies)
                    if !self.terminal
                        && self.attach.as_ref().is_none_or(|a| a.interactive() == 0) =>
                {
                    self.pending_input.extend(&replies);
                    self.flush_tap();
                    self.hand_human_input(replies);
                }
                FromTap::TerminalReplies(_) => {}
                // The tap's answer to a dialog: written only if no person's input came since
                // the tap decided (that input answered first, or changed the screen), and the
                // tap hears which, before the keys themselves.
                FromTap::AnswerKeys {
                    request,
                    keys,
                    human_inputs,
                } => {
                    let written = human_inputs == self.human_inputs;
                    self.flush_tap();
                    self.tap.send(Tapped::AnswerWritten { request, written });
                    if written {
                        self.write_injected(keys);
                    }
                }
                FromTap::Type(keys) => self.write_injected(keys),
            }
        }
        self.flush_input()?;
        Ok(terminate)
    }

    /// An attached client's socket is readable or writable.
    fn attach_event(
        &mut self,
        client: u64,
        readable: bool,
        writable: bool,
    ) -> Result<(), SessionError> {
        let Some(attach) = &mut self.attach else {
            return Ok(());
        };
        let mut actions = Vec::new();
        if writable {
            actions.extend(attach.flush(client, self.poll.registry()));
        }
        self.apply(actions)?;
        if readable {
            self.read_attached(client)?;
        }
        Ok(())
    }

    /// Reads an attached client's keys, unless the program has not taken the input before
    /// them: then (or when its read budget ran out) it waits in `attach_unread`, and its keys
    /// wait in its socket, so an attached paste is bounded as a typed one is.
    fn read_attached(&mut self, client: u64) -> Result<(), SessionError> {
        let Some(attach) = &mut self.attach else {
            return Ok(());
        };
        let more = if self.pending_input.len() > clippy_proto::INPUT_BACKLOG_LIMIT {
            true
        } else {
            let (actions, more) = attach.read(client, self.poll.registry());
            self.apply(actions)?;
            more
        };
        if more && !self.attach_unread.contains(&client) {
            self.attach_unread.push(client);
        }
        Ok(())
    }

    /// A terminal attached or left: the tap is told the new count (behind the output read
    /// so far), and reports it to the broker in its next `progress`.
    fn tell_attached(&mut self) {
        let attached = self.attach.as_ref().map_or(0, AttachServer::attached);
        if attached != self.attached_told {
            self.attached_told = attached;
            self.flush_tap();
            self.tap.send(Tapped::Attached(
                u32::try_from(attached).unwrap_or(u32::MAX),
            ));
        }
    }

    /// Some attached client may have keys unread, and the program has room for them.
    fn attach_keys_waiting(&self) -> bool {
        !self.attach_unread.is_empty()
            && self.pending_input.len() <= clippy_proto::INPUT_BACKLOG_LIMIT
    }

    /// Does what the attached clients asked: their keys to the program (as a person's
    /// typing), the size they set to the PTY and the screen, their screens to the tap.
    fn apply(&mut self, actions: Vec<HubAction>) -> Result<(), SessionError> {
        for action in actions {
            match action {
                HubAction::Input(data) => {
                    self.pending_input.extend(&data);
                    self.flush_tap();
                    self.hand_human_input(data);
                    self.flush_input()?;
                }
                HubAction::Resize { cols, rows } => {
                    self.master.resize(WinSize::new(cols, rows))?;
                    self.flush_tap();
                    self.tap.send(Tapped::Resize { cols, rows });
                }
                HubAction::Redraw { client, generation } => {
                    self.flush_tap();
                    self.tap.send(Tapped::Redraw { client, generation });
                }
            }
        }
        Ok(())
    }

    /// Moves the broker's injections that may go now into the input queue
    /// (`clippy_wrapper::submit`): a lone Enter after injected text only once the text was
    /// written and the submit delay passed.
    fn release_injected(&mut self) {
        let now = Instant::now();
        if self.pending_input.is_empty() {
            self.submit.drained(now);
        }
        for data in self.submit.release(now) {
            self.write_injected(data);
        }
    }

    /// Once a loop: the time the injected text was written is noted, and an Enter held back
    /// that is now due is written.
    fn pace_injected(&mut self) -> Result<(), SessionError> {
        let before = self.pending_input.len();
        self.release_injected();
        if self.pending_input.len() != before {
            self.flush_input()?;
            self.release_injected();
        }
        Ok(())
    }

    /// Queues input that is not a person's (the broker's, or the keys of an answer) for the
    /// child, and hands it to the tap behind the output read so far.
    fn write_injected(&mut self, bytes: Vec<u8>) {
        self.pending_input.extend(&bytes);
        self.flush_tap();
        self.tap.send(Tapped::Input {
            bytes,
            human: false,
        });
    }

    /// Hands a person's input (already queued for the child) to the tap, counted.
    fn hand_human_input(&mut self, bytes: Vec<u8>) {
        self.human_inputs += 1;
        self.tap.send(Tapped::Input { bytes, human: true });
    }

    /// Hands the output gathered for the tap over to it.
    fn flush_tap(&mut self) {
        if let Some(batch) = self.handover.take() {
            self.tap.send(Tapped::Output(batch));
            self.handover.handed_over(Instant::now());
        }
    }

    /// Writes pending input to the child as far as it takes it, and tells the sink thread when
    /// the backlog crosses [`clippy_proto::INPUT_BACKLOG_LIMIT`].
    fn flush_input(&mut self) -> Result<(), SessionError> {
        let written = self.write_input();
        if self.input_backlog.queued(self.pending_input.len()) {
            self.events.send(SessionEvent::InputBlocked);
        }
        written
    }

    fn write_input(&mut self) -> Result<(), SessionError> {
        while !self.pending_input.is_empty() {
            let (front, _) = self.pending_input.as_slices();
            match (&self.master).write(front) {
                Ok(n) => {
                    self.pending_input.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                // The child is gone; its exit is handled by the read side.
                Err(e) if e.raw_os_error() == Some(nix::libc::EIO) => {
                    self.pending_input.clear();
                    return Ok(());
                }
                Err(e) => {
                    return Err(SessionError::Io {
                        context: "cannot write to the PTY",
                        source: e,
                    });
                }
            }
        }
        Ok(())
    }

    /// Handles one signal; returns the child's status once it has exited.
    fn on_signal(
        &mut self,
        signal: Signal,
        child: &mut Child,
    ) -> Result<Option<ExitStatus>, SessionError> {
        match signal {
            Signal::SIGWINCH => {
                let stdin = std::io::stdin();
                let stdout = std::io::stdout();
                if let Some(size) = clippy_pty::terminal_size(stdin.as_fd())
                    .or_else(|| clippy_pty::terminal_size(stdout.as_fd()))
                {
                    self.master.resize(size)?;
                    if let Some(attach) = &mut self.attach {
                        attach.resized(size.cols, size.rows);
                    }
                    self.flush_tap();
                    self.tap.send(Tapped::Resize {
                        cols: size.cols,
                        rows: size.rows,
                    });
                }
            }
            Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP | Signal::SIGQUIT => {
                let _ = child.signal_group(signal);
            }
            Signal::SIGTSTP => {
                let _ = child.signal_group(Signal::SIGTSTP);
                if let Some(guard) = &self.guard {
                    guard.restore()?;
                }
                clippy_pty::suspend_self()?;
                // Resumed.
                if let Some(guard) = &self.guard {
                    guard.reenter()?;
                }
                let _ = child.signal_group(Signal::SIGCONT);
            }
            Signal::SIGCONT => {
                if let Some(guard) = &self.guard {
                    guard.reenter()?;
                }
                let _ = child.signal_group(Signal::SIGCONT);
            }
            Signal::SIGCHLD => return Ok(child.try_wait()?),
            _ => {}
        }
        Ok(None)
    }

    /// Hangs up the child's terminal as the kernel does when a terminal closes: `SIGHUP`, then
    /// `SIGCONT` (a stopped job must run to see it), to the foreground process group and to the
    /// child's own group (its session leader, an interactive shell, passes it on to its jobs).
    fn hang_up(child: &Child) {
        for signal in [Signal::SIGHUP, Signal::SIGCONT] {
            let _ = child.signal_group(signal);
            let _ = child.signal_own_group(signal);
        }
    }
}

/// Writes all of `bytes` to `fd`, waiting for it when it is non-blocking.
fn write_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => {
                let mut fds = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLOUT)];
                let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
