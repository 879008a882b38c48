//! A private broker per test, from the workspace's test kit (`clippy-testkit`): a real
//! `clippy-broker` process on a real socket in a temporary `XDG_RUNTIME_DIR` (mode 0700), killed
//! and cleaned up on drop; and hand-made frames for the protocol's error paths.
#![allow(dead_code)] // each test binary uses a different part of the harness

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use clippy_proto::{Client, FrameDecoder, Message, Role, SessionInfo, TurnData, decode, encode};
pub use clippy_testkit::TempDir;
use clippy_testkit::{Broker as KitBroker, BrokerBuilder, Wrapper};

/// How long any single read of a test may take before it fails.
pub const WAIT: Duration = clippy_testkit::DEADLINE;

pub const BROKER: &str = env!("CARGO_BIN_EXE_clippy-broker");

/// A fresh private runtime folder (mode 0700), removed on drop.
pub fn runtime_dir() -> TempDir {
    TempDir::new("cb")
}

/// A broker of this package (`--foreground`, the kit's clean environment) in `runtime`, its
/// stderr in `runtime/broker.stderr`.
pub fn builder(runtime: &Path) -> BrokerBuilder {
    KitBroker::in_runtime(runtime)
        .program(BROKER)
        .log(runtime.join("broker.stderr"))
}

/// A running broker that owns its runtime folder.
pub struct Broker {
    inner: KitBroker,
    pub socket: PathBuf,
}

impl Broker {
    /// A broker with default settings plus `args`, ready to accept.
    pub fn start(args: &[&str]) -> Broker {
        Broker::start_in(runtime_dir(), args)
    }

    /// A broker in an existing runtime dir.
    pub fn start_in(runtime: TempDir, args: &[&str]) -> Broker {
        Broker::start_with(runtime, args, &[])
    }

    /// A broker in an existing runtime dir, with more environment variables.
    pub fn start_with(runtime: TempDir, args: &[&str], env: &[(&str, &Path)]) -> Broker {
        let inner = builder(runtime.path())
            .args(args)
            .envs(env.iter().copied())
            .owning(runtime)
            .start();
        Broker {
            socket: inner.socket().to_owned(),
            inner,
        }
    }

    /// Its runtime folder.
    pub fn runtime(&self) -> &Path {
        self.inner.dir().expect("owned").path()
    }

    pub fn pid(&self) -> u32 {
        self.inner.pid()
    }

    /// What the broker wrote to stderr (its log, with `--foreground`).
    pub fn stderr(&self) -> String {
        self.inner.log_text()
    }

    /// A connected client (hello done), with a read timeout so a test cannot hang.
    pub fn client(&self) -> Client {
        clippy_testkit::client(&self.socket)
    }

    /// A fake wrapper that registered `session`.
    pub fn wrapper(&self, session: &str, name: Option<&str>, bracketed_paste: bool) -> Client {
        Wrapper::register(&self.socket, session_info(session, name, bracketed_paste)).client
    }

    /// The runtime dir of a stopped broker, for the next one.
    pub fn take_runtime(mut self) -> TempDir {
        self.inner.take_dir()
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn stop(&mut self) -> ExitStatus {
        self.inner.stop()
    }

    /// Kills it (SIGKILL: no chance to finish anything) and reaps it.
    #[allow(dead_code)] // not every test binary kills its broker
    pub fn kill(&mut self) {
        self.inner.kill();
    }
}

pub fn session_info(session: &str, name: Option<&str>, bracketed_paste: bool) -> SessionInfo {
    SessionInfo {
        bracketed_paste,
        ..clippy_testkit::session_info(session, name)
    }
}

pub fn turn(seq: u64, content: &[u8], text: &str) -> TurnData {
    clippy_testkit::turn(seq, content, text)
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
