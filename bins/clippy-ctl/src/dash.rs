//! `clippy-ctl dash`: the dashboard's wiring (its state and drawing are `clippy-dash`). The
//! terminal in raw mode on the alternate screen, put back on every way out (`q`, Ctrl+C,
//! SIGHUP/SIGTERM/SIGINT/SIGQUIT, a panic); three threads besides this one:
//!
//! - **events**: follows the broker's event stream (`subscribe`); when the broker goes away it
//!   says so and connects again, once a second, until one answers.
//! - **requests**: carries out the state's requests one at a time (`clippy_dash::Requests`:
//!   which client call each is, and its reply or failure line) and hands back the replies.
//! - **output**: follows the selected session's output (a `wait_for` of any character from the
//!   spool's end) and tells the state, at most four times a second, so its screen is asked for
//!   again only when it changed.
//!
//! This thread waits in `poll` for keys, signals and the others' news, and redraws only when
//! the state says something shown changed — at most [`FRAMES_PER_SECOND`] times a second — or,
//! while a busy session's elapsed time is shown, at its next whole second. With nothing
//! changing it does not wake up.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use clippy_attach::DetachKey;
use clippy_client::{ClientError, Connection, Endpoint};
use clippy_dash::{
    Action, AnsiBackend, App, BELL, ENTER_SCREEN, Input, KeyDecoder, LEAVE_SCREEN, Pacer, Reply,
    Requests, Theme,
};
use clippy_proto::PatternKind;
use clippy_pty::{RawModeGuard, Signal, SignalPipe};
use nix::poll::{PollFd, PollFlags, PollTimeout};
use ratatui::Terminal;
use ratatui::layout::Size;

use crate::cli::Cli;
use crate::error::CtlError;

/// The most frames drawn a second: a burst of events is drawn in a few frames, each change at
/// most 40 ms late.
const FRAMES_PER_SECOND: u64 = 25;
/// How long the broker may be away before the next try to connect.
const RECONNECT: Duration = Duration::from_secs(1);
/// The least time between two notices of the selected session's output (four a second).
const OUTPUT_EVERY: Duration = Duration::from_millis(250);
/// How long one wait for the selected session's output lasts before it is asked again.
const OUTPUT_WAIT_MS: u64 = 60_000;

/// News for the dashboard's thread from the others, with a byte on `wake` to wake it.
#[derive(Clone)]
struct Mailbox {
    inputs: Sender<Input>,
    wake: Arc<UnixStream>,
}

impl Mailbox {
    fn post(&self, input: Input) {
        if self.inputs.send(input).is_ok() {
            let _ = (&*self.wake).write(&[1]);
        }
    }
}

/// The session whose output is followed, and the connection waiting for it (shut down to
/// follow another).
#[derive(Default)]
struct Watched {
    session: Option<String>,
    waiting: Option<UnixStream>,
    stop: bool,
}

type Watch = Arc<(Mutex<Watched>, Condvar)>;

/// Runs the dashboard until `q`, Ctrl+C or a signal to stop.
pub fn dash(cli: &Cli, bell: bool, detach_key: Option<&str>) -> Result<(), CtlError> {
    let key = crate::detach_key_of(cli, detach_key)?;
    let endpoint = crate::broker::endpoint(cli)?;
    let stdin = std::io::stdin();
    let Some(size) = clippy_pty::terminal_size(stdin.as_fd()) else {
        return Err(CtlError::Usage(
            "dash needs a terminal (stdin is not one)".into(),
        ));
    };
    let signals = SignalPipe::with_signals(&[
        Signal::SIGWINCH,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
    ])
    .map_err(pty_error)?;
    let (wake_rx, wake_tx) = UnixStream::pair().map_err(io_error("a wake-up pipe"))?;
    wake_rx
        .set_nonblocking(true)
        .map_err(io_error("a wake-up pipe"))?;
    let (inputs_tx, inputs) = mpsc::channel();
    let mailbox = Mailbox {
        inputs: inputs_tx,
        wake: Arc::new(wake_tx),
    };
    let (actions, actions_rx) = mpsc::channel();
    let watch: Watch = Arc::default();
    {
        let (endpoint, mailbox) = (endpoint.clone(), mailbox.clone());
        std::thread::spawn(move || follow_events(&endpoint, &mailbox));
    }
    {
        let (endpoint, mailbox) = (endpoint.clone(), mailbox.clone());
        let timeout = Duration::from_millis(cli.timeout);
        std::thread::spawn(move || serve_requests(&endpoint, timeout, &actions_rx, &mailbox));
    }
    {
        let (endpoint, watch) = (endpoint.clone(), Arc::clone(&watch));
        std::thread::spawn(move || follow_output(&endpoint, &watch, &mailbox));
    }

    RawModeGuard::install_panic_restore();
    install_panic_leave();
    let guard = RawModeGuard::enter(stdin.as_fd()).map_err(pty_error)?;
    let mut out = std::io::stdout();
    let _ = out.write_all(ENTER_SCREEN).and_then(|()| out.flush());
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut screen = Screen {
        terminal: Terminal::new(AnsiBackend::new(
            std::io::stdout(),
            Size::new(size.cols, size.rows),
        ))
        .map_err(io_error("the terminal"))?,
        theme: Theme::new(no_color),
    };
    let mut app = App::new(bell);
    let mut run = Run {
        app: &mut app,
        actions: &actions,
        watch: &watch,
        endpoint: &endpoint,
        key,
        guard: guard.as_ref(),
        decoder: KeyDecoder::default(),
        quit: false,
    };
    run.feed(
        Input::Resize {
            cols: size.cols,
            rows: size.rows,
        },
        &mut screen,
    );
    let ended = run.main_loop(&signals, &wake_rx, &inputs, &mut screen);
    // Every way out puts the terminal back.
    let _ = out.write_all(LEAVE_SCREEN).and_then(|()| out.flush());
    drop(guard);
    let (lock, wake) = &*watch;
    let mut watched = lock.lock().unwrap_or_else(PoisonError::into_inner);
    watched.stop = true;
    if let Some(stream) = watched.waiting.take() {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    wake.notify_all();
    ended
}

struct Screen {
    terminal: Terminal<AnsiBackend<std::io::Stdout>>,
    theme: Theme,
}

impl Screen {
    fn draw(&mut self, app: &mut App) {
        let theme = self.theme;
        let now = clippy_proto::unix_ms_now();
        let _ = self
            .terminal
            .draw(|frame| clippy_dash::render(app, theme, now, frame));
        app.drawn();
    }
}

struct Run<'a> {
    app: &'a mut App,
    actions: &'a Sender<Action>,
    watch: &'a Watch,
    endpoint: &'a Endpoint,
    key: DetachKey,
    guard: Option<&'a RawModeGuard>,
    /// This terminal's keys, decoded as they are needed.
    decoder: KeyDecoder,
    quit: bool,
}

impl Run<'_> {
    fn main_loop(
        &mut self,
        signals: &SignalPipe,
        wake: &UnixStream,
        inputs: &Receiver<Input>,
        screen: &mut Screen,
    ) -> Result<(), CtlError> {
        let stdin = std::io::stdin();
        let mut buf = vec![0u8; 16 * 1024];
        let mut stdin_open = true;
        let mut pacer = Pacer::new(FRAMES_PER_SECOND);
        let mut tick = false;
        while !self.quit {
            let now = clippy_proto::unix_ms_now();
            let mut wake_at = self.app.next_tick(now);
            if self.app.changed() || tick {
                match pacer.wait(now) {
                    None => {
                        screen.draw(self.app);
                        pacer.drew(now);
                        tick = false;
                        wake_at = self.app.next_tick(now);
                    }
                    Some(at) => wake_at = Some(wake_at.map_or(at, |w| w.min(at))),
                }
            }
            let timeout = match wake_at {
                Some(at) => {
                    PollTimeout::try_from(at.saturating_sub(now).max(1)).unwrap_or(PollTimeout::MAX)
                }
                None => PollTimeout::NONE,
            };
            let mut fds = vec![
                PollFd::new(signals.as_fd(), PollFlags::POLLIN),
                PollFd::new(wake.as_fd(), PollFlags::POLLIN),
            ];
            if stdin_open {
                fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
            }
            match nix::poll::poll(&mut fds, timeout) {
                Ok(0) => {
                    // The next second of a busy session's elapsed time, or a frame held back.
                    tick = true;
                    continue;
                }
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io_error("cannot wait for the terminal")(e.into())),
            }
            let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
            let (signal_ready, wake_ready) = (ready(&fds[0]), ready(&fds[1]));
            let stdin_ready = fds.get(2).is_some_and(ready);
            drop(fds);
            if signal_ready {
                for signal in signals.drain().map_err(pty_error)? {
                    match signal {
                        Signal::SIGWINCH => self.resized(screen),
                        _ => self.quit = true,
                    }
                }
            }
            if wake_ready {
                let mut drained = [0u8; 256];
                while matches!((&*wake).read(&mut drained), Ok(n) if n > 0) {}
                while let Ok(input) = inputs.try_recv() {
                    self.feed(input, screen);
                }
            }
            if stdin_ready {
                match nix::unistd::read(stdin.as_fd(), &mut buf) {
                    Ok(0) => stdin_open = false,
                    Ok(n) => {
                        // Key by key: one may attach, and the rest of the read is the session's.
                        self.decoder.push(&buf[..n]);
                        while let Some(key) = self.decoder.next_key() {
                            self.feed(Input::Key(key), screen);
                        }
                    }
                    Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => {}
                    Err(_) => stdin_open = false,
                }
            }
        }
        Ok(())
    }

    fn resized(&mut self, screen: &mut Screen) {
        if let Some(size) = clippy_pty::terminal_size(std::io::stdin().as_fd()) {
            screen
                .terminal
                .backend_mut()
                .set_size(Size::new(size.cols, size.rows));
            self.feed(
                Input::Resize {
                    cols: size.cols,
                    rows: size.rows,
                },
                screen,
            );
        }
    }

    fn feed(&mut self, input: Input, screen: &mut Screen) {
        let mut pending = vec![input];
        while let Some(input) = pending.pop() {
            for action in self.app.handle(input, clippy_proto::unix_ms_now()) {
                match action {
                    Action::Quit => self.quit = true,
                    Action::Bell => {
                        let mut out = std::io::stdout();
                        let _ = out.write_all(BELL).and_then(|()| out.flush());
                    }
                    Action::Watch(session) => {
                        let (lock, wake) = &**self.watch;
                        let mut watched = lock.lock().unwrap_or_else(PoisonError::into_inner);
                        if watched.session != session {
                            watched.session = session;
                            if let Some(stream) = watched.waiting.take() {
                                let _ = stream.shutdown(std::net::Shutdown::Both);
                            }
                            wake.notify_all();
                        }
                    }
                    Action::Attach(session) => {
                        pending.push(self.attach(&session, screen));
                    }
                    other => {
                        let _ = self.actions.send(other);
                    }
                }
            }
        }
    }

    /// Enter: the dashboard steps aside, this terminal attaches to the session (as `clippy-ctl
    /// attach` does), and comes back on the detach key. The terminal stays in raw mode from the
    /// dashboard into the attachment and back: keys typed while the attachment is being made
    /// wait, unechoed, for the session (a cooked moment between the two would echo them, and
    /// the detach key's Ctrl+\ would be the terminal's quit signal), and so do the keys read
    /// with the Enter that attached.
    fn attach(&mut self, session: &str, screen: &mut Screen) -> Input {
        let mut out = std::io::stdout();
        let _ = out.write_all(LEAVE_SCREEN).and_then(|()| out.flush());
        let typed = self.decoder.take_undecoded();
        let endpoint = self.endpoint.clone();
        let connect = move || Connection::connect(&endpoint).map_err(CtlError::from);
        let attached = crate::attach::socket_of(&connect, session).and_then(|(_, _, path)| {
            crate::attach::attach(&path, false, self.key, self.guard, &typed)
        });
        let _ = out.write_all(ENTER_SCREEN).and_then(|()| out.flush());
        let _ = screen.terminal.clear();
        self.resized(screen);
        match attached {
            Ok(crate::attach::Ended::Signalled(_)) => {
                self.quit = true;
                Input::Detached(session.to_owned())
            }
            Ok(_) => Input::Detached(session.to_owned()),
            Err(e) => Input::Reply(Reply::Failed(format!("attach {session}: {e}"))),
        }
    }
}

/// The events thread: subscribes, hands every event over, and when the broker goes away says
/// so and tries again every [`RECONNECT`].
fn follow_events(endpoint: &Endpoint, mailbox: &Mailbox) {
    // Whether the dashboard was told the broker is away (told once, not at every try).
    let mut told_away = false;
    loop {
        let subscribed = Connection::connect(endpoint).and_then(|c| c.subscribe(None, &[], None));
        match subscribed {
            Ok(mut events) => {
                mailbox.post(Input::Broker(true));
                while let Ok(event) = events.next_event() {
                    mailbox.post(Input::Event(Box::new(event)));
                }
                mailbox.post(Input::Broker(false));
                told_away = true;
            }
            Err(_) if !told_away => {
                mailbox.post(Input::Broker(false));
                told_away = true;
            }
            Err(_) => {}
        }
        std::thread::sleep(RECONNECT);
    }
}

/// The requests thread: one request at a time (`clippy_dash::Requests`), each reply handed
/// back; a request already waiting its turn is not made twice.
fn serve_requests(
    endpoint: &Endpoint,
    timeout: Duration,
    actions: &Receiver<Action>,
    mailbox: &Mailbox,
) {
    let mut requests = Requests::new(endpoint.clone(), timeout);
    while let Ok(first) = actions.recv() {
        let queue = std::iter::once(first).chain(actions.try_iter());
        for action in clippy_dash::requests::distinct(queue) {
            if let Some(reply) = requests.serve(&action) {
                mailbox.post(Input::Reply(reply));
            }
        }
    }
}

/// The output thread: while a session is selected, waits for any character of its output
/// past the spool's end, tells the dashboard, and waits again (at most every
/// [`OUTPUT_EVERY`]); another selection shuts the wait down.
fn follow_output(endpoint: &Endpoint, watch: &Watch, mailbox: &Mailbox) {
    let (lock, changed) = &**watch;
    let mut cursor: Option<(String, u64)> = None;
    loop {
        let session = {
            let mut watched = lock.lock().unwrap_or_else(PoisonError::into_inner);
            while watched.session.is_none() && !watched.stop {
                watched = changed
                    .wait(watched)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if watched.stop {
                return;
            }
            watched.session.clone().unwrap_or_default()
        };
        let Ok(mut conn) = Connection::connect(endpoint) else {
            std::thread::sleep(RECONNECT);
            continue;
        };
        let from = match &cursor {
            Some((s, at)) if *s == session => Some(*at),
            _ => conn
                .session_status(&session)
                .ok()
                .map(|st| st.resume_cursor),
        };
        let Some(from) = from else {
            // Gone, or no broker: wait for another selection (or a second).
            let watched = lock.lock().unwrap_or_else(PoisonError::into_inner);
            if watched.session.as_deref() == Some(session.as_str()) && !watched.stop {
                let _ = changed.wait_timeout(watched, RECONNECT);
            }
            continue;
        };
        {
            let mut watched = lock.lock().unwrap_or_else(PoisonError::into_inner);
            if watched.session.as_deref() != Some(session.as_str()) || watched.stop {
                continue;
            }
            watched.waiting = conn.stream().try_clone().ok();
        }
        let found = conn.wait_for(
            &session,
            "(?s).",
            PatternKind::Regex,
            from,
            Some(OUTPUT_WAIT_MS),
        );
        lock.lock().unwrap_or_else(PoisonError::into_inner).waiting = None;
        match found {
            Ok(found) => {
                cursor = Some((session.clone(), found.resume_cursor));
                mailbox.post(Input::Output(session));
                std::thread::sleep(OUTPUT_EVERY);
            }
            Err(ClientError::Broker { .. }) => cursor = None,
            Err(_) => {
                cursor = None;
                std::thread::sleep(OUTPUT_EVERY);
            }
        }
    }
}

/// A panic leaves the alternate screen too (the raw mode's own hook puts the termios back).
fn install_panic_leave() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let mut out = std::io::stdout();
        let _ = out.write_all(LEAVE_SCREEN).and_then(|()| out.flush());
        previous(info);
    }));
}

fn io_error(context: &'static str) -> impl Fn(std::io::Error) -> CtlError {
    move |source| CtlError::Io {
        context: context.into(),
        source,
    }
}

fn pty_error(e: clippy_pty::PtyError) -> CtlError {
    CtlError::Io {
        context: "the terminal".into(),
        source: std::io::Error::other(e.to_string()),
    }
}
