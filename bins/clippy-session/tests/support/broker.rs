//! Shared helpers for suites that run a real broker next to wrapped sessions: the sibling
//! binaries (`clippy-broker`, `clippy-ctl`, built with the wrapper's profile on first use), a
//! private broker in the test's runtime directory, a guard that kills every broker of that
//! directory, broker connections, `clippy-ctl` runs with a deadline, `/proc` memory figures and
//! latency summaries.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clippy_proto::{
    Client, ErrorReason, EventRecord, Message, ProtoError, Role, SessionState, SessionSummary,
};
use nix::sys::signal::Signal;

use super::{TIMEOUT, TempDir, list_dir, parse_environ, settle, wrapper_bin};

/// A binary of the workspace next to the wrapper under test. The first use in a test run builds
/// it with the wrapper's profile (a no-op when it is up to date); when that build fails (other
/// work in the tree may not compile right now), the binary already there is used, with a warning.
pub fn sibling_bin(name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let path = wrapper_bin().with_file_name(name);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.iter().any(|b| b == name) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command.args(["build", "-q", "-p", name]);
        if path.parent().is_some_and(|dir| dir.ends_with("release")) {
            command.arg("--release");
        }
        let out = command.output().expect("cargo runs");
        if !out.status.success() {
            // Someone's unfinished edit elsewhere in the tree: test the binary there is, but
            // never in CI, where the tree is what is tested.
            assert!(
                path.is_file() && std::env::var_os("CI").is_none(),
                "cannot build {}:\n{}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!(
                "warning: `cargo build -p {name}` failed; testing the existing {}",
                path.display()
            );
        }
        built.push(name.to_owned());
    }
    path
}

/// `clippy-broker` next to the wrapper under test.
pub fn broker_bin() -> PathBuf {
    sibling_bin("clippy-broker")
}

/// `clippy-ctl` next to the wrapper under test.
pub fn ctl_bin() -> PathBuf {
    sibling_bin("clippy-ctl")
}

/// The broker's socket in the test's runtime directory.
pub fn socket(dir: &TempDir) -> PathBuf {
    dir.runtime().join("clippy").join("broker.sock")
}

/// Every `clippy-broker` process serving the runtime directory `runtime`.
pub fn brokers_of(runtime: &Path) -> Vec<u32> {
    let wanted = format!("XDG_RUNTIME_DIR={}", runtime.display()).into_bytes();
    list_dir(Path::new("/proc"))
        .iter()
        .filter_map(|p| p.file_name()?.to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read_link(format!("/proc/{pid}/exe"))
                .is_ok_and(|exe| exe.ends_with("clippy-broker"))
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|raw| parse_environ(&raw).contains(&wanted))
        })
        .collect()
}

/// Kills (SIGKILL) every broker of a runtime directory when dropped — the ones the test started
/// and the ones a wrapper started — so no broker outlives its test. Declare it after the
/// [`TempDir`] and before the terminals.
pub struct BrokerGuard {
    runtime: PathBuf,
}

impl BrokerGuard {
    pub fn new(dir: &TempDir) -> BrokerGuard {
        BrokerGuard {
            runtime: dir.runtime(),
        }
    }
}

impl Drop for BrokerGuard {
    fn drop(&mut self) {
        for pid in brokers_of(&self.runtime) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// A broker of the test's own (`--foreground`, the test's environment, `extra` arguments),
/// returned once its socket answers. Its log goes to `broker.log` in the test's folder.
pub struct Broker {
    child: Child,
}

impl Broker {
    pub fn start(dir: &TempDir, extra: &[&str]) -> Broker {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("broker.log"))
            .expect("broker log");
        let child = Command::new(broker_bin())
            .arg("--foreground")
            .args(extra)
            .env_clear()
            .envs(super::base_env(dir))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start clippy-broker");
        let broker = Broker { child };
        settle("the broker answers", || try_connect(dir).is_some());
        broker
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A test's world for suites that drive one private broker: its temporary directory and the
/// broker (started with `clippy-ctl` built), killed on drop together with any other broker of
/// that runtime directory. Terminals and agents are declared after it, so they are dropped
/// (their process trees killed) first. Each suite adds its own methods in an `impl Fixture` of
/// its own.
pub struct Fixture {
    // Dropped in this order: the broker, the other brokers, then the directory.
    broker: Broker,
    brokers: BrokerGuard,
    pub dir: TempDir,
    /// When the broker answered.
    pub started: Instant,
}

impl Fixture {
    pub fn new() -> Fixture {
        ctl_bin();
        let dir = TempDir::new();
        let brokers = BrokerGuard::new(&dir);
        let broker = Broker::start(&dir, &[]);
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

/// A client connection; retried for up to 5 s.
pub fn client(dir: &TempDir) -> Client {
    let deadline = Instant::now() + Duration::from_secs(5);
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
        Ok(Message::Sessions { sessions, .. }) => sessions,
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

/// Polls `ok` every 10 ms until it holds; panics with `what` after `deadline`.
pub fn wait_until(what: &str, deadline: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + deadline;
    while !ok() {
        assert!(
            Instant::now() < end,
            "timed out after {deadline:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
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
