//! Harness for the end-to-end tests of `clippy-ctl`: the real binary, run in a private temporary
//! directory, against either a small fake broker on a thread (scripted replies, records every
//! request) or the real `clippy-broker` with a fake wrapper registered over `clippy_proto`.
//!
//! Every test owns its directory (its `XDG_RUNTIME_DIR` is `run/`), its broker and its
//! processes; dropping them removes the directory and kills the broker.

#![allow(dead_code)] // Not every test uses every helper.

use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_proto::{
    Client, ErrorReason, Format, FrameDecoder, HookStats, Message, Mode, PROTOCOL_VERSION,
    Progress, Role, SessionInfo, SessionState, SessionSummary, TurnData, TurnMeta, WaitingState,
    decode, encode,
};

/// How long a test waits for anything before it fails.
pub const TIMEOUT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------------
// Temporary directories and running clippy-ctl
// ---------------------------------------------------------------------------------------------

/// A private temporary directory, removed on drop: `run/` is the `XDG_RUNTIME_DIR`.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new() -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "clippy-ctl-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&path);
        private_dir(&path);
        private_dir(&path.join("run"));
        private_dir(&path.join("home"));
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn runtime(&self) -> PathBuf {
        self.path.join("run")
    }

    /// `HOME` for the programs of the test.
    pub fn home(&self) -> PathBuf {
        self.path.join("home")
    }

    /// Where clients look for the broker.
    pub fn socket(&self) -> PathBuf {
        self.runtime().join("clippy").join("broker.sock")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

pub fn private_dir(path: &Path) {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    fs::set_permissions(path, fs::Permissions::from_mode(0o700))
        .unwrap_or_else(|e| panic!("cannot chmod {}: {e}", path.display()));
}

/// What a `clippy-ctl` run left.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Output {
    pub fn stdout_str(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }

    /// stdout as the one JSON document it must be.
    pub fn json(&self) -> serde_json::Value {
        let text = self.stdout_str();
        assert_eq!(
            text.matches('\n').count(),
            1,
            "one JSON document on one line: {text:?}"
        );
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"))
    }

    /// Asserts the exit code, showing everything on failure.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            code,
            "exit code; stdout: {:?}; stderr: {:?}",
            String::from_utf8_lossy(&self.stdout),
            self.stderr
        );
        self
    }
}

/// The binary under test.
pub fn ctl_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clippy-ctl"))
}

/// How `clippy-ctl` is run: a clean environment with `HOME`, `PATH` and (unless removed) the
/// directory's `XDG_RUNTIME_DIR`; the current directory is the temporary directory.
pub struct Ctl<'a> {
    dir: &'a TempDir,
    runtime: bool,
}

impl<'a> Ctl<'a> {
    pub fn new(dir: &'a TempDir) -> Self {
        Ctl { dir, runtime: true }
    }

    /// Without `XDG_RUNTIME_DIR`.
    pub fn without_runtime(dir: &'a TempDir) -> Self {
        Ctl {
            dir,
            runtime: false,
        }
    }

    pub fn run<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(ctl_bin());
        command
            .args(args)
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", self.dir.path().join("home"))
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        if self.runtime {
            command
                .env("XDG_RUNTIME_DIR", self.dir.runtime())
                .env("XDG_STATE_HOME", self.dir.runtime().join("state"));
        }
        let started = Instant::now();
        let out = command.output().expect("clippy-ctl runs");
        assert!(started.elapsed() < TIMEOUT, "clippy-ctl took too long");
        Output {
            code: out.status.code().expect("clippy-ctl exited, not killed"),
            stdout: out.stdout,
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The fake broker
// ---------------------------------------------------------------------------------------------

/// What the fake broker does with a request.
pub enum Reply {
    /// Send this message (its id is set to the request's).
    Message(Box<Message>),
    /// Send these bytes as they are, then close the connection.
    Raw(Vec<u8>),
    /// Never answer (keep the connection open).
    Silent,
}

impl Reply {
    /// [`Reply::Message`].
    pub fn message(message: Message) -> Reply {
        Reply::Message(Box::new(message))
    }
}

type Handler = dyn Fn(&Message) -> Reply + Send + Sync;

/// A broker on a thread: answers `hello` with `hello_ack` (unless the handler says otherwise)
/// and everything else through the handler. Every request is recorded.
pub struct FakeBroker {
    socket: PathBuf,
    requests: Arc<Mutex<Vec<Message>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeBroker {
    /// The standard fake ([`Standard`]) at the directory's default socket.
    pub fn start(dir: &TempDir) -> FakeBroker {
        let state = Arc::new(Standard::default());
        FakeBroker::with_handler(&dir.socket(), move |m| state.handle(m))
    }

    /// A fake at `socket` answering through `handler`.
    pub fn with_handler(
        socket: &Path,
        handler: impl Fn(&Message) -> Reply + Send + Sync + 'static,
    ) -> FakeBroker {
        private_dir(socket.parent().expect("a socket in a folder"));
        let listener = UnixListener::bind(socket).expect("bind the fake broker's socket");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (requests, handler) = (requests.clone(), handler.clone());
                    std::thread::spawn(move || serve(stream, &*handler, &requests));
                }
            })
        };
        FakeBroker {
            socket: socket.to_owned(),
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// Every request received so far (`hello` included).
    pub fn requests(&self) -> Vec<Message> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The last request received.
    pub fn last_request(&self) -> Message {
        self.requests().pop().expect("a request")
    }
}

impl Drop for FakeBroker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = UnixStream::connect(&self.socket);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = fs::remove_file(&self.socket);
    }
}

fn serve(mut stream: UnixStream, handler: &Handler, requests: &Mutex<Vec<Message>>) {
    let mut decoder = FrameDecoder::default();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let payload = loop {
            match decoder.next_frame() {
                Ok(Some(payload)) => break payload,
                Ok(None) => {}
                Err(_) => return,
            }
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => decoder.push(&buf[..n]),
            }
        };
        let Ok(message) = decode(&payload) else {
            return;
        };
        requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message.clone());
        let id = message.id();
        let reply = match (&message, handler(&message)) {
            // The handler may override hello; by default ([`ack`]) it is acknowledged.
            (Message::Hello { .. }, Reply::Message(reply))
                if matches!(*reply, Message::Done { .. }) =>
            {
                Reply::message(Message::HelloAck {
                    id,
                    version: PROTOCOL_VERSION,
                })
            }
            (_, reply) => reply,
        };
        let bytes = match reply {
            Reply::Message(message) => encode(&with_id(*message, id)).expect("encode a reply"),
            Reply::Raw(bytes) => {
                let _ = stream.write_all(&bytes);
                return;
            }
            Reply::Silent => {
                // Hold the connection open until the client goes away.
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
                return;
            }
        };
        if stream.write_all(&bytes).is_err() {
            return;
        }
    }
}

/// `message` with its id set to `id`.
fn with_id(mut message: Message, new: u32) -> Message {
    match &mut message {
        Message::HelloAck { id, .. }
        | Message::Done { id }
        | Message::Captured { id, .. }
        | Message::Sessions { id, .. }
        | Message::Turn { id, .. }
        | Message::Turns { id, .. }
        | Message::TurnRecorded { id, .. }
        | Message::Status { id, .. }
        | Message::Route { id, .. }
        | Message::Error { id, .. } => *id = new,
        _ => {}
    }
    message
}

/// An error reply.
pub fn error(reason: ErrorReason, message: &str) -> Reply {
    Reply::message(Message::error(0, reason, message))
}

/// The default hello handling for custom handlers: acknowledge.
pub fn ack() -> Reply {
    Reply::message(Message::Done { id: 0 })
}

// ---------------------------------------------------------------------------------------------
// The standard fake: two sessions, two turns, a relay buffer
// ---------------------------------------------------------------------------------------------

/// The id of the standard fake's first session (named `alpha`, connected, two turns).
pub const ALPHA: &str = "k3f9a2";
/// The id of its second session (no name, disconnected, no turns).
pub const BETA: &str = "zz81qq";
/// Turn 1 of `alpha`: valid UTF-8 with escapes.
pub const TURN1: &[u8] = b"hello \x1b[1mworld\x1b[0m\n\ttab \\ \"quoted\" \xc3\xa9\n";
/// Turn 2 of `alpha`: not UTF-8.
pub const TURN2: &[u8] = b"\xff\xfe bin \x1b[31mred\x1b[0m\r\n\x00end";
/// The text view of turn 2.
pub const TURN2_TEXT: &str = "bin red\nend";
/// The agent's own final message for turn 2, from its hooks (turn 1 has none).
pub const TURN2_MESSAGE: &str = "**bin** red\n\nend";
/// The tool input `alpha` waits for permission to run with.
pub const ALPHA_INPUT: &str = r#"{"command":"ls"}"#;
/// When the turns completed.
pub const T1: u64 = 1_700_000_000_123;
pub const T2: u64 = 1_700_000_060_456;

/// A fake with a little state: sessions resolve by id, unique prefix or name; the relay buffer
/// fills on capture.
#[derive(Default)]
pub struct Standard {
    relay: Mutex<Option<String>>,
}

struct FakeTurn {
    meta: TurnMeta,
    raw: &'static [u8],
    text: &'static str,
    message: Option<&'static str>,
}

fn turns() -> Vec<FakeTurn> {
    vec![
        FakeTurn {
            meta: TurnMeta {
                turn_id: format!("{ALPHA}:2"),
                timestamp: T2,
                byte_length: TURN2.len() as u32,
                interrupted: true,
                truncated: false,
                exit_code: Some(130),
                cwd: Some("/home/u".into()),
                input: Some("dump\x1b[A".into()),
                spool_span: Some((100, 125)),
                message_length: Some(TURN2_MESSAGE.len() as u32),
            },
            raw: TURN2,
            text: TURN2_TEXT,
            message: Some(TURN2_MESSAGE),
        },
        FakeTurn {
            meta: TurnMeta {
                turn_id: format!("{ALPHA}:1"),
                timestamp: T1,
                byte_length: TURN1.len() as u32,
                interrupted: false,
                truncated: true,
                exit_code: None,
                cwd: None,
                input: Some("say hi".into()),
                spool_span: None,
                message_length: None,
            },
            raw: TURN1,
            text: "hello world\n",
            message: None,
        },
    ]
}

pub fn sessions() -> Vec<SessionSummary> {
    vec![
        SessionSummary {
            session: ALPHA.into(),
            name: Some("alpha".into()),
            pid: 4242,
            command: vec!["claude".into(), "--model".into(), "opus 4".into()],
            preset: "claude".into(),
            connected: true,
            turns: 2,
            last_turn_id: Some(format!("{ALPHA}:2")),
            bracketed_paste: true,
            waiting: Some("permission".into()),
        },
        SessionSummary {
            session: BETA.into(),
            name: None,
            pid: 77,
            command: vec!["bash".into()],
            preset: "shell".into(),
            connected: false,
            turns: 0,
            last_turn_id: None,
            bracketed_paste: false,
            waiting: None,
        },
    ]
}

/// `status SESSION` of the standard fake: `alpha` waits for permission to run `ls` and has its
/// hooks wired; `beta` has no hooks.
pub fn session_state(session: &SessionSummary) -> SessionState {
    let alpha = session.session == ALPHA;
    SessionState {
        session: session.session.clone(),
        name: session.name.clone(),
        pid: session.pid,
        connected: session.connected,
        mode: if alpha { Mode::Busy } else { Mode::Idle },
        exec_running: false,
        resume_cursor: 125,
        prompt_cursor: None,
        current_input: None,
        last_turn_id: session.last_turn_id.clone(),
        exit_code: None,
        cwd: None,
        bracketed_paste: session.bracketed_paste,
        waiters: 0,
        inbox: 0,
        spool: None,
        waiting: alpha.then(|| WaitingState {
            kind: "permission".into(),
            tool: Some("Bash".into()),
            input: Some(ALPHA_INPUT.into()),
            message: Some("Claude needs your permission to use Bash".into()),
            since: T2,
        }),
        hooks: if alpha {
            HookStats {
                wired: true,
                reports: 12,
                turn_ends: 2,
                rejected: 0,
                disagreements: 1,
                last_disagreement: Some("the screen showed a prompt and no hook came".into()),
            }
        } else {
            HookStats::default()
        },
        input_blocked: false,
        prompt_unrecognised: false,
        exited: None,
    }
}

impl Standard {
    fn resolve(&self, given: &str) -> Result<SessionSummary, Reply> {
        let all = sessions();
        if let Some(s) = all
            .iter()
            .find(|s| s.session == given || s.name.as_deref() == Some(given))
        {
            return Ok(s.clone());
        }
        let prefixed: Vec<_> = all
            .iter()
            .filter(|s| !given.is_empty() && s.session.starts_with(given))
            .collect();
        match prefixed.as_slice() {
            [one] => Ok((*one).clone()),
            _ => Err(error(
                ErrorReason::SessionNotFound,
                &format!("no session {given:?}"),
            )),
        }
    }

    fn turns_of(session: &str) -> Vec<FakeTurn> {
        turns()
            .into_iter()
            .filter(|t| t.meta.turn_id.starts_with(&format!("{session}:")))
            .collect()
    }

    fn turn(&self, target: &str) -> Result<FakeTurn, Reply> {
        if let Some((session, _)) = target.split_once(':') {
            self.resolve(session)?;
            return turns()
                .into_iter()
                .find(|t| t.meta.turn_id == target)
                .ok_or_else(|| error(ErrorReason::TurnNotFound, &format!("no turn {target}")));
        }
        let session = self.resolve(target)?;
        Self::turns_of(&session.session)
            .into_iter()
            .next()
            .ok_or_else(|| error(ErrorReason::NoTurn, "no turn yet"))
    }

    fn relay(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.relay.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn handle(&self, message: &Message) -> Reply {
        let reply = match message {
            Message::Hello { .. } => Ok(ack()),
            Message::ListSessions { .. } => Ok(Reply::message(Message::Sessions {
                id: 0,
                sessions: sessions(),
            })),
            Message::ListTurns { session, limit, .. } => self.resolve(session).map(|s| {
                let mut turns: Vec<TurnMeta> = Self::turns_of(&s.session)
                    .into_iter()
                    .map(|t| t.meta)
                    .collect();
                if let Some(limit) = limit {
                    turns.truncate(*limit as usize);
                }
                Reply::message(Message::Turns { id: 0, turns })
            }),
            Message::GetTurn {
                turn_id, format, ..
            } => self.turn(turn_id).and_then(|t| {
                let content = match format {
                    Format::Raw => t.raw.to_vec(),
                    Format::Text => t.text.as_bytes().to_vec(),
                    Format::Message => t
                        .message
                        .ok_or_else(|| {
                            error(
                                ErrorReason::NoMessage,
                                &format!(
                                    "turn {} has no final message from the agent's hooks",
                                    t.meta.turn_id
                                ),
                            )
                        })?
                        .as_bytes()
                        .to_vec(),
                };
                Ok(Reply::message(Message::Turn {
                    id: 0,
                    turn: t.meta,
                    content: content.into(),
                }))
            }),
            Message::SessionStatus { session, .. } => self.resolve(session).map(|s| {
                Reply::message(Message::Status {
                    id: 0,
                    status: session_state(&s),
                })
            }),
            Message::Capture { session, .. } => self.turn(session).map(|t| self.capture(t)),
            Message::CaptureById { turn_id, .. } => self.turn(turn_id).map(|t| self.capture(t)),
            Message::Paste { session, .. } => self.deliver(Some(session), None),
            Message::Deliver {
                sink,
                session,
                path,
                ..
            } => match sink.as_str() {
                "inject" | "file" | "clipboard" => self.deliver(session.as_ref(), path.as_ref()),
                other => Err(error(
                    ErrorReason::SinkFailed,
                    &format!("no sink {other:?}"),
                )),
            },
            _ => Err(error(ErrorReason::UnknownType, "not for a broker")),
        };
        reply.unwrap_or_else(|e| e)
    }

    fn capture(&self, turn: FakeTurn) -> Reply {
        *self.relay() = Some(turn.meta.turn_id.clone());
        Reply::message(Message::Captured {
            id: 0,
            turn_id: turn.meta.turn_id,
            byte_length: turn.meta.byte_length,
        })
    }

    fn deliver(&self, session: Option<&String>, path: Option<&String>) -> Result<Reply, Reply> {
        if self.relay().is_none() {
            return Err(error(ErrorReason::BufferEmpty, "nothing captured yet"));
        }
        if let Some(session) = session {
            let s = self.resolve(session)?;
            if !s.connected {
                return Err(error(
                    ErrorReason::SessionDisconnected,
                    "its wrapper is gone",
                ));
            }
        }
        if path.is_some_and(|path| !Path::new(path).is_absolute()) {
            return Err(error(ErrorReason::SinkFailed, "relative path"));
        }
        Ok(Reply::message(Message::Done { id: 0 }))
    }
}

// ---------------------------------------------------------------------------------------------
// The real broker
// ---------------------------------------------------------------------------------------------

/// The real broker binary, built if missing: `target/<profile>/clippy-broker`, next to the
/// binary under test. `None` (with the reason) when it cannot be built yet.
pub fn broker_bin() -> Result<PathBuf, String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        let ctl = ctl_bin();
        let dir = ctl.parent().expect("the target folder");
        let bin = dir.join("clippy-broker");
        if bin.exists() {
            return Ok(bin);
        }
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "-p", "clippy-broker", "--bin", "clippy-broker"])
            .current_dir(&workspace);
        if dir.file_name() == Some(OsStr::new("release")) {
            build.arg("--release");
        }
        let out = build
            .output()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if out.status.success() && bin.exists() {
            Ok(bin)
        } else {
            Err(format!(
                "cargo build -p clippy-broker failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    })
    .clone()
}

/// A real broker on the directory's socket, killed on drop (its log is shown when the test
/// failed).
pub struct RealBroker {
    child: Child,
    log: PathBuf,
}

impl RealBroker {
    pub fn start(dir: &TempDir, bin: &Path) -> RealBroker {
        let log = dir.path().join("broker.log");
        let log_file = fs::File::create(&log).expect("create the broker log");
        let child = Command::new(bin)
            .arg("--foreground")
            .env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("HOME", dir.path().join("home"))
            .env("XDG_RUNTIME_DIR", dir.runtime())
            .env("XDG_STATE_HOME", dir.runtime().join("state"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("start clippy-broker");
        let mut broker = RealBroker { child, log };
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(client) = Client::connect(&dir.socket(), Role::Client) {
                drop(client);
                return broker;
            }
            if let Ok(Some(status)) = broker.child.try_wait() {
                panic!("clippy-broker exited before answering: {status}");
            }
            assert!(Instant::now() < deadline, "clippy-broker did not answer");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for RealBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = fs::read_to_string(&self.log).unwrap_or_default();
            eprintln!("--- clippy-broker log ---\n{log}--- end of log ---");
        }
    }
}

/// A fake wrapper: registers a session with the broker and reports turns, as `clippy-session`
/// would.
pub struct FakeWrapper {
    pub client: Client,
    pub session: String,
}

impl FakeWrapper {
    pub fn register(socket: &Path, session: &str, name: Option<&str>) -> FakeWrapper {
        let mut client = Client::connect(socket, Role::Wrapper).expect("wrapper connects");
        client
            .set_read_timeout(Some(TIMEOUT))
            .expect("set the wrapper's read timeout");
        let info = SessionInfo {
            session: session.into(),
            name: name.map(Into::into),
            pid: std::process::id(),
            command: vec!["fake-agent".into(), "--flag".into()],
            preset: "generic".into(),
            bracketed_paste: false,
            spool: None,
            cwd: None,
            no_history: false,
        };
        let reply = client
            .request(|id| Message::Register {
                id,
                session: info,
                progress: None,
            })
            .expect("register");
        assert!(matches!(reply, Message::Done { .. }), "{reply:?}");
        FakeWrapper {
            client,
            session: session.into(),
        }
    }

    /// Reports turn `seq` with `content`; returns its turn id.
    pub fn turn(&mut self, seq: u64, content: &[u8], text: &str, input: &str) -> String {
        self.turn_with(seq, content, text, input, None)
    }

    /// Reports turn `seq` with `content` and, when given, the agent's own final `message`;
    /// returns its turn id.
    pub fn turn_with(
        &mut self,
        seq: u64,
        content: &[u8],
        text: &str,
        input: &str,
        message: Option<&str>,
    ) -> String {
        let turn = TurnData {
            seq,
            timestamp: T1 + seq * 1000,
            content: content.to_vec(),
            text: text.into(),
            interrupted: false,
            truncated: false,
            exit_code: Some(0),
            cwd: None,
            input: Some(input.into()),
            spool_span: None,
            message: message.map(Into::into),
        };
        let session = self.session.clone();
        match self
            .client
            .request(|id| Message::TurnCompleted { id, session, turn })
            .expect("turn_completed")
        {
            Message::TurnRecorded { turn_id, .. } => turn_id,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// Reports `progress` for the session, as the wrapper's sink thread would.
    pub fn progress(&mut self, progress: Progress) {
        let session = self.session.clone();
        let reply = self
            .client
            .request(|id| Message::Progress {
                id,
                session,
                progress,
            })
            .expect("progress");
        assert!(matches!(reply, Message::Done { .. }), "{reply:?}");
    }

    /// The next `inject` the broker sends.
    pub fn next_inject(&mut self) -> Vec<u8> {
        match self.client.recv().expect("an inject") {
            Message::Inject { data, .. } => data,
            other => panic!("expected an inject, got {other:?}"),
        }
    }
}
