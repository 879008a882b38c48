//! A private broker per test: a real `clippy-broker` process on a real socket in a temporary
//! `XDG_RUNTIME_DIR` (mode 0700), stopped and cleaned up on drop.
#![allow(dead_code)] // each test binary uses a different part of the harness

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use clippy_proto::{Client, FrameDecoder, Message, Role, SessionInfo, TurnData, decode, encode};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// How long any single wait in a test may take before it fails.
pub const WAIT: Duration = Duration::from_secs(10);

pub const BROKER: &str = env!("CARGO_BIN_EXE_clippy-broker");

/// A temporary directory (mode 0700), removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        // Short: a socket path must fit in 108 bytes.
        let path = std::env::temp_dir().join(format!("cb-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .expect("create the runtime dir");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).expect("chmod 0700");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// No directory at all (what a broker handing its runtime dir on is left with).
    fn placeholder() -> TempDir {
        TempDir(PathBuf::new())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// A running broker.
pub struct Broker {
    child: Option<Child>,
    pub socket: PathBuf,
    stderr: PathBuf,
    // Last: dropped after the process is gone.
    pub runtime: TempDir,
}

/// Starts `clippy-broker --foreground ARGS` with `XDG_RUNTIME_DIR=runtime`, stderr to a file.
pub fn spawn(runtime: &Path, args: &[&str], stderr: &Path) -> Child {
    Command::new(BROKER)
        .arg("--foreground")
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("XDG_STATE_HOME", Path::new(runtime).join("state"))
        // The clipboard sink must fail the same way on a desktop as in CI.
        .env_remove("DISPLAY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(stderr).expect("stderr file"))
        .spawn()
        .expect("start clippy-broker")
}

impl Broker {
    /// A broker with default settings plus `args`, ready to accept.
    pub fn start(args: &[&str]) -> Broker {
        Broker::start_in(TempDir::new(), args)
    }

    /// A broker in an existing runtime dir.
    pub fn start_in(runtime: TempDir, args: &[&str]) -> Broker {
        let stderr = runtime.path().join("broker.stderr");
        let child = spawn(runtime.path(), args, &stderr);
        let mut broker = Broker {
            child: Some(child),
            socket: runtime.path().join("clippy").join("broker.sock"),
            stderr,
            runtime,
        };
        broker.wait_ready();
        broker
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + WAIT;
        loop {
            if UnixStream::connect(&self.socket).is_ok() {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("the broker exited with {status}: {}", self.stderr());
            }
            assert!(
                Instant::now() < deadline,
                "the broker did not start: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// What the broker wrote to stderr (its log, with `--foreground`).
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// A connected client (hello done), with a read timeout so a test cannot hang.
    pub fn client(&self) -> Client {
        let client = Client::connect(&self.socket, Role::Client).expect("connect as a client");
        client.set_read_timeout(Some(WAIT)).expect("timeout");
        client
    }

    /// A fake wrapper that registered `session`.
    pub fn wrapper(&self, session: &str, name: Option<&str>, bracketed_paste: bool) -> Client {
        let mut client =
            Client::connect(&self.socket, Role::Wrapper).expect("connect as a wrapper");
        client.set_read_timeout(Some(WAIT)).expect("timeout");
        let info = session_info(session, name, bracketed_paste);
        let reply = client
            .request(|id| Message::Register {
                id,
                session: info,
                progress: None,
            })
            .expect("register");
        assert!(matches!(reply, Message::Done { .. }), "{reply:?}");
        client
    }

    /// The runtime dir of a stopped broker, for the next one.
    pub fn take_runtime(mut self) -> TempDir {
        assert!(self.child.is_none(), "stop the broker first");
        std::mem::replace(&mut self.runtime, TempDir::placeholder())
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        signal(&child, Signal::SIGTERM);
        wait_timeout(&mut child, WAIT).unwrap_or_else(|| {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the broker did not stop on SIGTERM: {}", self.stderr());
        })
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(&child, Signal::SIGTERM);
            if wait_timeout(&mut child, Duration::from_secs(3)).is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A child process killed (SIGKILL) and reaped on drop, so a failing test leaves none behind.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn signal(child: &Child, signal: Signal) {
    let pid = i32::try_from(child.id()).expect("pid");
    let _ = kill(Pid::from_raw(pid), signal);
}

/// Waits for `child` at most `limit`.
pub fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn session_info(session: &str, name: Option<&str>, bracketed_paste: bool) -> SessionInfo {
    SessionInfo {
        session: session.into(),
        name: name.map(Into::into),
        pid: std::process::id(),
        command: vec!["fake-agent".into()],
        preset: "custom".into(),
        bracketed_paste,
        spool: None,
        cwd: None,
        no_history: false,
    }
}

pub fn turn(seq: u64, content: &[u8], text: &str) -> TurnData {
    TurnData {
        seq,
        timestamp: 1_700_000_000_000 + seq,
        content: content.to_vec(),
        text: text.into(),
        interrupted: false,
        truncated: false,
        exit_code: None,
        cwd: None,
        input: None,
        spool_span: None,
        message: None,
    }
}

/// Reports a turn and returns its id.
pub fn report(wrapper: &mut Client, session: &str, seq: u64, content: &[u8], text: &str) -> String {
    let session = session.to_owned();
    let turn = turn(seq, content, text);
    match wrapper
        .request(|id| Message::TurnCompleted { id, session, turn })
        .expect("turn_completed")
    {
        Message::TurnRecorded { turn_id, .. } => turn_id,
        other => panic!("expected turn_recorded, got {other:?}"),
    }
}

// ── raw frames ──────────────────────────────────────────────────────────────────────────────

/// A raw connection with timeouts.
pub fn raw_connect(socket: &Path) -> UnixStream {
    let stream = UnixStream::connect(socket).expect("connect");
    stream.set_read_timeout(Some(WAIT)).expect("timeout");
    stream.set_write_timeout(Some(WAIT)).expect("timeout");
    stream
}

/// A MessagePack value, enough for hand-made frames.
pub enum Val<'a> {
    Str(&'a str),
    Uint(u32),
}

/// A frame holding the MessagePack map `fields`, encoded by hand (fixmap, str8, uint32).
pub fn raw_frame(fields: &[(&str, Val<'_>)]) -> Vec<u8> {
    let mut payload = vec![0x80 | u8::try_from(fields.len()).expect("fixmap")];
    let put_str = |out: &mut Vec<u8>, s: &str| {
        out.push(0xd9);
        out.push(u8::try_from(s.len()).expect("str8"));
        out.extend_from_slice(s.as_bytes());
    };
    for (key, value) in fields {
        put_str(&mut payload, key);
        match value {
            Val::Str(s) => put_str(&mut payload, s),
            Val::Uint(n) => {
                payload.push(0xce);
                payload.extend_from_slice(&n.to_be_bytes());
            }
        }
    }
    frame_of(&payload)
}

/// Header + payload.
pub fn frame_of(payload: &[u8]) -> Vec<u8> {
    let mut frame = u32::try_from(payload.len())
        .expect("len")
        .to_be_bytes()
        .to_vec();
    frame.extend_from_slice(payload);
    frame
}

/// A connection speaking frames by hand.
pub struct Raw {
    pub stream: UnixStream,
    decoder: FrameDecoder,
}

impl Raw {
    pub fn connect(socket: &Path) -> Raw {
        Raw {
            stream: raw_connect(socket),
            decoder: FrameDecoder::default(),
        }
    }

    /// Connects and says hello as `role`.
    pub fn hello(socket: &Path, role: Role) -> Raw {
        let mut raw = Raw::connect(socket);
        raw.send(&Message::Hello {
            id: 1,
            version: clippy_proto::PROTOCOL_VERSION,
            role,
        });
        let reply = raw.recv().expect("hello_ack");
        assert!(
            matches!(reply, Message::HelloAck { id: 1, .. }),
            "{reply:?}"
        );
        raw
    }

    pub fn send(&mut self, message: &Message) {
        self.send_bytes(&encode(message).expect("encode"));
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// The next message, or `None` at end of stream (EOF or reset).
    pub fn recv(&mut self) -> Option<Message> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            if let Some(payload) = self.decoder.next_frame().expect("frame") {
                return Some(decode(&payload).expect("decode"));
            }
            match self.stream.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => self.decoder.push(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return None,
                // A signal for another part of the test process (a child's end) is no answer.
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// Asserts the broker closes the connection next (after no more messages).
    pub fn expect_closed(&mut self) {
        if let Some(message) = self.recv() {
            panic!("expected the connection to close, got {message:?}");
        }
    }
}
