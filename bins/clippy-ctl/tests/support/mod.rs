//! Harness for the end-to-end tests of `clippy-ctl`: the real binary, run in a private temporary
//! directory (the test kit's [`TempDir`]: its `run/` is the `XDG_RUNTIME_DIR`), against the real
//! `clippy-broker` (the kit's [`Broker`]) with sessions registered by wrappers speaking the
//! protocol ([`Standard`]: two sessions, two turns, what one waits for), or against a
//! [`FaultPeer`]: a socket that answers with scripted replies and faults a real broker never
//! gives (a timeout for everything, silence, malformed frames, a version it does not speak, an
//! older broker that does not know a request). The fault peer knows no broker rule: it resolves
//! no session and keeps no state.
//!
//! Every test owns its directory, its broker and its processes; dropping them removes the
//! directory and kills the broker.

#![allow(dead_code)] // Not every test uses every helper.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_proto::{
    ErrorReason, FrameDecoder, HookStats, Message, PROTOCOL_VERSION, Progress, SessionInfo,
    SessionSummary, TurnData, WaitingState, decode, encode,
};
pub use clippy_testkit::{Broker, TempDir, Wrapper, private_dir};

/// How long a test waits for anything before it fails.
pub const TIMEOUT: Duration = clippy_testkit::DEADLINE;

/// A fresh test directory: `run/` (the `XDG_RUNTIME_DIR`) and `home/`.
pub fn test_dir() -> TempDir {
    TempDir::with_runtime("ctl")
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
// The fault peer
// ---------------------------------------------------------------------------------------------

/// What the fault peer does with a request.
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

/// A socket on a thread that answers every request through a handler of the test's — scripted
/// replies and faults, no broker rule. `hello` is acknowledged when the handler says [`ack`].
pub struct FaultPeer {
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FaultPeer {
    /// A peer at `socket` answering through `handler`.
    pub fn start(
        socket: &Path,
        handler: impl Fn(&Message) -> Reply + Send + Sync + 'static,
    ) -> FaultPeer {
        private_dir(socket.parent().expect("a socket in a folder"));
        let listener = UnixListener::bind(socket).expect("bind the fault peer's socket");
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let handler = handler.clone();
                    std::thread::spawn(move || serve(stream, &*handler));
                }
            })
        };
        FaultPeer {
            socket: socket.to_owned(),
            stop,
            thread: Some(thread),
        }
    }
}

impl FaultPeer {
    /// A peer at `socket` that lists `sessions` and answers every other request with
    /// unknown_type (`not for a broker`), as a broker older than that request would.
    pub fn listing(socket: &Path, sessions: Vec<SessionSummary>) -> FaultPeer {
        let sessions: Vec<Arc<SessionSummary>> = sessions.into_iter().map(Arc::new).collect();
        FaultPeer::start(socket, move |m| match m {
            Message::Hello { .. } => ack(),
            Message::ListSessions { .. } => Reply::message(Message::Sessions {
                id: 0,
                sessions: sessions.clone(),
            }),
            _ => error(ErrorReason::UnknownType, "not for a broker"),
        })
    }
}

impl Drop for FaultPeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = UnixStream::connect(&self.socket);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

fn serve(mut stream: UnixStream, handler: &Handler) {
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
        | Message::Sessions { id, .. }
        | Message::Error { id, .. } => *id = new,
        _ => {}
    }
    message
}

/// An error reply.
pub fn error(reason: ErrorReason, message: &str) -> Reply {
    Reply::message(Message::error(0, reason, message))
}

/// The default hello handling for handlers: acknowledge.
pub fn ack() -> Reply {
    Reply::message(Message::Done { id: 0 })
}

// ---------------------------------------------------------------------------------------------
// The standard world: a real broker, two sessions, two turns
// ---------------------------------------------------------------------------------------------

/// The id of the standard world's first session (named `alpha`, connected, two turns).
pub const ALPHA: &str = "k3f9a2";
/// The id of its second session (no name, no turns).
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

/// A real broker in the test's directory with two sessions registered the way `clippy-session`
/// registers them (over the protocol): `alpha` ([`ALPHA`], `claude --model 'opus 4'`, pid 4242,
/// bracketed paste) with turns 1 ([`TURN1`], truncated) and 2 ([`TURN2`], interrupted, exit 130,
/// with the agent's message), waiting for permission to run Bash with its hooks wired; and
/// [`BETA`] (`bash`, pid 77, no name, no turns, no hooks). Both wrappers stay connected (a real
/// broker forgets a session whose wrapper went: it has ended): what the broker injects into them
/// can be read from [`Standard::alpha`] and [`Standard::beta`].
pub struct Standard {
    /// `alpha`'s wrapper.
    pub alpha: Wrapper,
    /// `beta`'s wrapper.
    pub beta: Wrapper,
    pub broker: Broker,
}

impl Standard {
    pub fn start(dir: &TempDir) -> Standard {
        let broker = Broker::in_dir(dir).start();
        let mut alpha = Wrapper::register(
            &dir.socket(),
            SessionInfo {
                pid: 4242,
                command: vec!["claude".into(), "--model".into(), "opus 4".into()],
                preset: "claude".into(),
                bracketed_paste: true,
                ..clippy_testkit::session_info(ALPHA, Some("alpha"))
            },
        );
        alpha.report(TurnData {
            timestamp: T1,
            truncated: true,
            input: Some("say hi".into()),
            ..clippy_testkit::turn(1, TURN1, "hello world\n")
        });
        alpha.report(TurnData {
            timestamp: T2,
            interrupted: true,
            exit_code: Some(130),
            cwd: Some("/home/u".into()),
            input: Some("dump\x1b[A".into()),
            spool_span: Some((100, 125)),
            message: Some(TURN2_MESSAGE.into()),
            ..clippy_testkit::turn(2, TURN2, TURN2_TEXT)
        });
        alpha.progress(Progress {
            waiting: Some(WaitingState {
                id: 1,
                kind: "permission".into(),
                tool: Some("Bash".into()),
                input: Some(ALPHA_INPUT.into()),
                message: Some("Claude needs your permission to use Bash".into()),
                since: T2,
            }),
            hooks: HookStats {
                wired: true,
                reports: 12,
                turn_ends: 2,
                rejected: 0,
                disagreements: 1,
                last_disagreement: Some("the screen showed a prompt and no hook came".into()),
            },
            ..Progress::default()
        });
        let beta = Wrapper::register(
            &dir.socket(),
            SessionInfo {
                pid: 77,
                command: vec!["bash".into()],
                preset: "shell".into(),
                ..clippy_testkit::session_info(BETA, None)
            },
        );
        Standard {
            alpha,
            beta,
            broker,
        }
    }
}

/// A wrapper of the test's own: registers `session` (named `name`, `fake-agent --flag`, preset
/// `generic`) with the broker at `socket`.
pub fn register(socket: &Path, session: &str, name: Option<&str>) -> Wrapper {
    Wrapper::register(
        socket,
        SessionInfo {
            command: vec!["fake-agent".into(), "--flag".into()],
            preset: "generic".into(),
            ..clippy_testkit::session_info(session, name)
        },
    )
}

/// Turn `seq` with `content`, its text and the `input` that started it, and, when given, the
/// agent's own final `message`; exit 0.
pub fn turn_with(
    seq: u64,
    content: &[u8],
    text: &str,
    input: &str,
    message: Option<&str>,
) -> TurnData {
    TurnData {
        timestamp: T1 + seq * 1000,
        exit_code: Some(0),
        input: Some(input.into()),
        message: message.map(Into::into),
        ..clippy_testkit::turn(seq, content, text)
    }
}

/// Asserts `inject` is what `alpha`'s wrapper is sent for a paste of `content`: `alpha` asked
/// for bracketed paste, so the content comes between the paste markers.
pub fn assert_pasted(inject: &[u8], content: &[u8]) {
    let mut want = b"\x1b[200~".to_vec();
    want.extend_from_slice(content);
    want.extend_from_slice(b"\x1b[201~");
    assert_eq!(
        inject.escape_ascii().to_string(),
        want.escape_ascii().to_string()
    );
}
