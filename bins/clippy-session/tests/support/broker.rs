//! Shared helpers for suites that run a real broker next to wrapped sessions, on the workspace's
//! test kit (`clippy-testkit`): the sibling binaries (`clippy-broker`, `clippy-ctl`, built with
//! the wrapper's profile on first use), a private broker in the test's runtime directory, a guard
//! that kills every broker of that directory, broker connections, `clippy-ctl` runs with a deadline, `/proc` memory figures and
//! latency summaries.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clippy_proto::{
    Client, ErrorReason, EventRecord, Message, ProtoError, Role, SessionState, SessionSummary,
};
pub use clippy_testkit::Broker;
use clippy_testkit::Reaper;

use super::{TIMEOUT, TempDir};

/// `clippy-broker`, built on first use in this test process (the test kit's [`bin`]).
pub fn broker_bin() -> PathBuf {
    clippy_testkit::bin("clippy-broker")
}

/// `clippy-ctl`, built on first use in this test process.
pub fn ctl_bin() -> PathBuf {
    clippy_testkit::bin("clippy-ctl")
}

/// The broker's socket in the test's runtime directory.
pub fn socket(dir: &TempDir) -> PathBuf {
    dir.socket()
}

/// Every `clippy-broker` process serving the runtime directory `runtime`.
pub fn brokers_of(runtime: &Path) -> Vec<u32> {
    clippy_testkit::processes_carrying(runtime, Some("clippy-broker"))
}

/// Kills (SIGKILL) every broker of the test's runtime directory when dropped — the ones the test
/// started and the ones a wrapper started — so no broker outlives its test. Declare it after the
/// [`TempDir`] and before the terminals.
pub fn broker_guard(dir: &TempDir) -> Reaper {
    Reaper::new(&dir.runtime()).only("clippy-broker")
}

/// A broker of the test's own (`--foreground`, the test's environment, `extra` arguments),
/// returned once its socket answers; killed on drop. Its log goes to `broker.log` in the test's
/// folder (appended: a test may start several).
pub fn start_broker(dir: &TempDir, extra: &[&str]) -> Broker {
    Broker::in_dir(dir)
        .args(extra)
        .envs(super::base_env(dir))
        // The wrappers' environment: their history under `home/`.
        .env_remove("XDG_STATE_HOME")
        .append_log()
        .start()
}

/// A test's world for suites that drive one private broker: its temporary directory and the
/// broker (started with `clippy-ctl` built), killed on drop together with any other broker of
/// that runtime directory. Terminals and agents are declared after it, so they are dropped
/// (their process trees killed) first. Each suite adds its own methods in an `impl Fixture` of
/// its own.
pub struct Fixture {
    // Dropped in this order: the broker, the other brokers, then the directory.
    broker: Broker,
    brokers: Reaper,
    pub dir: TempDir,
    /// When the broker answered.
    pub started: Instant,
}

impl Fixture {
    pub fn new() -> Fixture {
        ctl_bin();
        let dir = super::test_dir();
        let brokers = broker_guard(&dir);
        let broker = start_broker(&dir, &[]);
        Fixture {
            broker,
            brokers,
            dir,
            started: Instant::now(),
        }
    }

    /// A new connection to the broker, as a client.
    pub fn client(&self) -> Client {
        client(&self.dir)
    }

    /// The session's state, as `session_status` on the wire says it; `None` while the broker
    /// does not know the session.
    pub fn state(&self, client: &mut Client, session: &str) -> Option<SessionState> {
        session_state(client, session)
    }

    /// Polls `session_status` until `ok` holds; returns that state.
    pub fn wait_state(
        &self,
        session: &str,
        what: &str,
        ok: impl FnMut(&SessionState) -> bool,
    ) -> SessionState {
        wait_session_state(&self.dir, session, what, ok)
    }
}

/// A client connection, if the broker answers now.
pub fn try_connect(dir: &TempDir) -> Option<Client> {
    Client::connect(&socket(dir), Role::Client).ok()
}

/// A client connection; retried for up to [`TIMEOUT`].
pub fn client(dir: &TempDir) -> Client {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match Client::connect(&socket(dir), Role::Client) {
            Ok(client) => return client,
            Err(e) if Instant::now() >= deadline => {
                panic!("no broker at {}: {e}", socket(dir).display())
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// `list_sessions`.
pub fn sessions(client: &mut Client) -> Vec<SessionSummary> {
    match client.request(|id| Message::ListSessions { id }) {
        Ok(Message::Sessions { sessions, .. }) => SessionSummary::unshare(sessions),
        other => panic!("list_sessions: {other:?}"),
    }
}

/// The session named `name`, if registered.
pub fn session_named(client: &mut Client, name: &str) -> Option<SessionSummary> {
    sessions(client)
        .into_iter()
        .find(|s| s.name.as_deref() == Some(name))
}

/// The session's state, as `session_status` on the wire says it; `None` while the broker does
/// not know the session.
pub fn session_state(client: &mut Client, session: &str) -> Option<SessionState> {
    match client.request(|id| Message::SessionStatus {
        id,
        session: session.into(),
    }) {
        Ok(Message::Status { status, .. }) => Some(status),
        Err(ProtoError::Broker {
            reason: ErrorReason::SessionNotFound,
            ..
        }) => None,
        other => panic!("session_status {session}: {other:?}"),
    }
}

/// Polls `session_status` on a connection of its own until `ok` holds; returns that state.
/// Panics after [`TIMEOUT`], with the last state seen.
pub fn wait_session_state(
    dir: &TempDir,
    session: &str,
    what: &str,
    mut ok: impl FnMut(&SessionState) -> bool,
) -> SessionState {
    let mut client = client(dir);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let state = session_state(&mut client, session);
        if let Some(state) = state.as_ref().filter(|s| ok(s)) {
            return state.clone();
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {TIMEOUT:?} waiting for {session}: {what}; last state {state:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Subscribes `client` to every event type from now on (`subscribe`, no filter); what it is
/// sent is left unread.
pub fn subscribe_all(client: &mut Client) {
    match client.request(|id| Message::Subscribe {
        id,
        since: None,
        types: Vec::new(),
    }) {
        Ok(Message::Subscribed { .. }) => {}
        other => panic!("subscribe: {other:?}"),
    }
}

/// The broker's recorded events of the given types (all types when empty), oldest first.
pub fn events(client: &mut Client, types: &[&str]) -> Vec<EventRecord> {
    match client.request(|id| Message::ListEvents {
        id,
        since: None,
        types: types.iter().map(|t| (*t).to_owned()).collect(),
    }) {
        Ok(Message::Events { events, .. }) => events,
        other => panic!("list_events: {other:?}"),
    }
}

/// A turn's raw content and whether it was truncated.
pub fn turn(client: &mut Client, turn_id: &str) -> (Vec<u8>, clippy_proto::TurnMeta) {
    match client.request(|id| Message::GetTurn {
        id,
        turn_id: turn_id.into(),
        format: Default::default(),
    }) {
        Ok(Message::Turn { content, turn, .. }) => (content.into_vec(), turn),
        other => panic!("get_turn {turn_id}: {other:?}"),
    }
}

/// A finished `clippy-ctl` run.
#[derive(Debug)]
pub struct CtlRun {
    /// The exit code (128 + N for a signal).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

/// `clippy-ctl ARGS…` with the test's environment, run to its end (killed and reported after
/// `deadline`).
pub fn ctl(dir: &TempDir, args: &[&str], deadline: Duration) -> CtlRun {
    use std::os::unix::process::ExitStatusExt;
    // Built (when it has to be) before the clock starts: only the run is timed.
    let mut command = ctl_command(dir, args);
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start clippy-ctl");
    loop {
        if child.try_wait().expect("waitpid").is_some() {
            break;
        }
        if started.elapsed() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("clippy-ctl {args:?} did not exit within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = started.elapsed();
    let out = child.wait_with_output().expect("clippy-ctl output");
    CtlRun {
        code: out
            .status
            .code()
            .unwrap_or_else(|| 128 + out.status.signal().unwrap_or(0)),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed,
    }
}

/// `clippy-ctl ARGS…` as a command with the test's environment (stdin from /dev/null, its own
/// process group), to start in the background.
pub fn ctl_command(dir: &TempDir, args: &[&str]) -> Command {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(ctl_bin());
    command
        .args(args)
        .env_clear()
        .envs(super::base_env(dir))
        .stdin(Stdio::null())
        .process_group(0);
    command
}

/// `VmRSS` and `VmHWM` of a process in KiB (`(0, 0)` once it is gone).
pub fn memory_kib(pid: u32) -> (u64, u64) {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return (0, 0);
    };
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Whether a process is gone (or a zombie: dead, waiting to be reaped by a parent that is not
/// ours).
pub fn is_gone(pid: u32) -> bool {
    super::process_state(pid).is_none_or(|s| s == 'Z' || s == 'X')
}

/// The median and the largest of some durations.
pub fn p50_max(samples: &[Duration]) -> (Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    (sorted[sorted.len() / 2], sorted[sorted.len() - 1])
}

/// Times `rounds` `list_sessions` + `get_turn SESSION` round trips on `client`.
pub fn request_latencies(client: &mut Client, session: &str, rounds: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(rounds * 2);
    for _ in 0..rounds {
        let started = Instant::now();
        sessions(client);
        out.push(started.elapsed());
        let started = Instant::now();
        turn(client, session);
        out.push(started.elapsed());
    }
    out
}
