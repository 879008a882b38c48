//! `clippy-broker` request round trips and 4 MiB `get_turn` throughput, against bare Unix-socket
//! servers measured in the same run.
//!
//! Set-up: the real `clippy-broker --foreground` (release, built by this bench) with a private
//! `XDG_RUNTIME_DIR` on tmpfs, and four fake wrappers (`clippy_proto::Client`, role `wrapper`)
//! that registered a session each and reported 32 turns of 4 KiB. The baselines answer
//! length-prefixed frames on a Unix socket in the same directory, in one write, decoding nothing
//! (`clippy_benches::broker::BareServer`): a thread of this process (the baseline the targets
//! refer to), a process of its own blocked in `read`, and one waiting in `epoll_wait` as the
//! broker's event loop does.
//!
//! 1. **Round trips**: `capture` (session by name) and `list_sessions`, each through
//!    `clippy_proto::Client` and as raw frames (a pre-encoded request, the reply read into a
//!    reused buffer: what the broker alone adds), against bare servers that read the same
//!    request frame and answer with the broker's very reply frame (the least any server of the
//!    request must do; until issue 29 they echoed one frame, of the request's size for
//!    `capture` and of the reply's for `list_sessions`, both ways). 5000 samples per subject
//!    after 500 warm-up, interleaved in rounds of 50; p50/p99/max and their ratios to the bare
//!    servers (target: `Client` p99 within 2× the bare thread's, met or missed in the table).
//! 2. **Throughput**: one wrapper reports a 4 MiB turn of random bytes; `get_turn` of it, through
//!    `Client` and as raw frames, against the bare servers answering the broker's very reply frame
//!    to a small request. MB/s = content bytes / round trip (target: `Client` ≥ 0.5× the bare
//!    thread). In the same rounds, the in-process steps of that path alone: `clippy_proto::decode`
//!    of the reply and its two passes, decoding it into plain structs (owned and borrowed
//!    content), `FrameDecoder` reassembly, `encode_frame` of the reply as the broker sends it (its
//!    head; the content is written from the ring), and the whole `encode` it no longer does.
//! 3. **One CPU**: the `capture` round trips again with this thread, the broker's event loop and
//!    fresh bare servers pinned to one CPU, which takes the wake-up of an idle vCPU out of the
//!    comparison (skipped with fewer than 2 CPUs, where there is nothing to take out).
//! 4. **Two CPUs apart**: the same with this thread on one CPU and the broker's event loop and the
//!    bare servers on another, so the broker and the bare servers pay the same cross-vCPU
//!    wake-ups (the scheduler leaves the broker on the other vCPU and the bare servers on the
//!    client's in part 1).
//!
//! Every series also records the CPU time and minor page faults of the server (the broker's
//! event-loop thread, or the bare process) and of this thread, from `/proc`, around each round.
//!
//! It prints a markdown report and writes it to `target/broker-bench.md`; about 10 s after the
//! build. It ignores its arguments and asserts no timing. The broker and the bare processes are
//! stopped at the end, and by drop guards on any failure.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use clippy_benches::broker::{
    BareReply, BareServer, BareWait, BrokerProcess, Error, FakeWrapper, RawConn, Usage, WAIT,
    decode_header, decode_tagged, decode_turn_borrowed, decode_turn_owned, frame_of,
    page_fault_cost, random_bytes, reassemble,
};
use clippy_benches::wrapper::{median, percentile};
use clippy_benches::{Scratch, ascii_text, build_release, machine, write_report};
use clippy_proto::{
    Client, Format, FrameDecoder, HEADER_LEN, Message, Payload, REPLY_SPIN, Role, decode, encode,
    encode_frame,
};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// Fake wrappers, one session each.
const SESSIONS: usize = 4;
/// Turns each wrapper reports before the round trips.
const TURNS: usize = 32;
/// Content bytes of each of those turns.
const TURN_BYTES: usize = 4096;
/// The session `capture` names (by its name, not its id).
const CAPTURE_NAME: &str = "agent-2";
/// Round-trip samples per subject, after [`WARM_UP`] untimed ones.
const SAMPLES: usize = 5000;
/// Untimed round trips per subject before sampling.
const WARM_UP: usize = 500;
/// Samples per subject per round.
const ROUND: usize = 50;
/// Samples per subject on one CPU (after [`PINNED_WARM_UP`]).
const PINNED_SAMPLES: usize = 2000;
/// Untimed round trips per subject on one CPU.
const PINNED_WARM_UP: usize = 200;
/// Content bytes of the big turn.
const BIG_BYTES: usize = 4 << 20;
/// Timed `get_turn`s (and in-process steps) per subject, one per round.
const BIG_RUNS: usize = 30;
/// Untimed ones before.
const BIG_WARM_UP: usize = 3;
/// Bytes per read of `clippy_proto::Client` (its read buffer), for the reassembly step.
const CLIENT_READ: usize = 64 * 1024;

fn main() {
    if let Err(e) = run() {
        eprintln!("broker bench: {e}");
        std::process::exit(1);
    }
}

/// What a series is, for the ratios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The bare server, a thread of the bench: the baseline.
    BareThread,
    /// The bare server, a process of its own blocked in `read`.
    BareProcess,
    /// The bare server, a process of its own waiting in `epoll_wait`.
    BareEpoll,
    /// The broker, as raw frames.
    BrokerRaw,
    /// The broker, through `clippy_proto::Client`.
    BrokerClient,
    /// An in-process step.
    Step,
}

/// One measured thing: a label, the frame sizes it moves, and how to take one sample.
struct Series<'a> {
    kind: Kind,
    label: String,
    /// Request and reply frame sizes, header included (0 for in-process steps).
    sizes: (usize, usize),
    /// The process answering, whose main thread's CPU time is recorded.
    server: Option<u32>,
    sample: Box<dyn FnMut() -> Result<Duration, Error> + 'a>,
    /// In the order taken.
    samples: Vec<Duration>,
    server_usage: Usage,
    client_usage: Usage,
    /// Blocks of samples after which the server had last run on this thread's CPU, of all.
    same_cpu: (usize, usize),
}

impl<'a> Series<'a> {
    fn new(
        kind: Kind,
        label: impl Into<String>,
        sizes: (usize, usize),
        server: Option<u32>,
        sample: impl FnMut() -> Result<Duration, Error> + 'a,
    ) -> Self {
        Series {
            kind,
            label: label.into(),
            sizes,
            server,
            sample: Box::new(sample),
            samples: Vec::new(),
            server_usage: Usage::default(),
            client_usage: Usage::default(),
            same_cpu: (0, 0),
        }
    }

    fn done(self) -> Measured {
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        let n = self.samples.len().max(1);
        let per = |u: Usage| PerRequest {
            cpu: u.cpu / u32::try_from(n).unwrap_or(u32::MAX),
            faults: u.minor_faults as f64 / n as f64,
        };
        Measured {
            kind: self.kind,
            label: self.label,
            sizes: self.sizes,
            server: self.server.map(|_| per(self.server_usage)),
            client: per(self.client_usage),
            same_cpu: (self.same_cpu.1 > 0)
                .then(|| self.same_cpu.0 as f64 / self.same_cpu.1 as f64),
            in_order: self.samples,
            sorted,
        }
    }
}

/// CPU time and minor page faults per sample.
#[derive(Debug, Clone, Copy)]
struct PerRequest {
    cpu: Duration,
    faults: f64,
}

/// What a [`Series`] measured.
struct Measured {
    kind: Kind,
    label: String,
    sizes: (usize, usize),
    server: Option<PerRequest>,
    client: PerRequest,
    /// Share of the rounds after which the server had last run on this thread's CPU.
    same_cpu: Option<f64>,
    in_order: Vec<Duration>,
    sorted: Vec<Duration>,
}

impl Measured {
    fn p(&self, p: f64) -> Duration {
        percentile(&self.sorted, p)
    }
}

/// Runs `f` and times it; what it returns is dropped after the clock stops.
fn timed<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<Duration, Error> {
    let start = Instant::now();
    let value = f()?;
    let elapsed = start.elapsed();
    drop(black_box(value));
    Ok(elapsed)
}

/// `warm_up` untimed samples of each series, then `rounds` rounds of `per_round` samples of
/// each, interleaved; CPU time and faults are read before and after each block of samples.
fn sample_interleaved(
    series: &mut [Series<'_>],
    warm_up: usize,
    rounds: usize,
    per_round: usize,
) -> Result<(), Error> {
    for s in series.iter_mut() {
        for _ in 0..warm_up {
            (s.sample)()?;
        }
        s.samples.reserve(rounds * per_round);
    }
    for _ in 0..rounds {
        for s in series.iter_mut() {
            let server = s.server.map(Usage::of_process).transpose()?;
            let client = Usage::of_this_thread()?;
            for _ in 0..per_round {
                let d = (s.sample)()?;
                s.samples.push(d);
            }
            let client_after = Usage::of_this_thread()?;
            s.client_usage = s.client_usage.plus(client_after.since(client));
            if let (Some(pid), Some(before)) = (s.server, server) {
                let after = Usage::of_process(pid)?;
                s.server_usage = s.server_usage.plus(after.since(before));
                s.same_cpu.0 += usize::from(after.last_cpu == client_after.last_cpu);
                s.same_cpu.1 += 1;
            }
        }
    }
    Ok(())
}

fn client(socket: &Path) -> Result<Client, Error> {
    let client = Client::connect(socket, Role::Client)?;
    client.set_read_timeout(Some(WAIT))?;
    Ok(client)
}

/// The broker under test: its socket and pid.
#[derive(Clone, Copy)]
struct Broker<'a> {
    socket: &'a Path,
    pid: u32,
}

fn run() -> Result<(), Error> {
    let started = Instant::now();
    let binary = build_release("broker bench", "clippy-broker")?;
    // Declared before the broker, so it is removed after the broker is gone.
    let scratch = Scratch::create("clippy-broker-bench")?;
    let process = BrokerProcess::start(&binary, scratch.path(), &[])?;
    let broker = Broker {
        socket: process.socket(),
        pid: process.pid()?,
    };
    eprintln!(
        "broker bench: broker pid {} on {}",
        broker.pid,
        broker.socket.display()
    );

    let mut text = ascii_text(2 * TURN_BYTES);
    text.truncate(TURN_BYTES);
    let text = String::from_utf8(text)?;
    let mut wrappers = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        let mut wrapper = FakeWrapper::register(
            broker.socket,
            &format!("{i}e7f3a9c2b"),
            &format!("agent-{i}"),
        )?;
        for _ in 0..TURNS {
            wrapper.report(text.clone().into_bytes(), text.clone())?;
        }
        wrappers.push(wrapper);
    }

    eprintln!("broker bench: round trips ({SAMPLES} samples per subject)");
    let latency = latency(scratch.path(), broker)?;

    eprintln!("broker bench: 4 MiB get_turn ({BIG_RUNS} rounds)");
    let big = random_bytes(BIG_BYTES);
    let big_turn = wrappers
        .last_mut()
        .ok_or("no wrapper")?
        .report(big.clone(), String::new())?;
    let throughput = throughput(scratch.path(), broker, &big_turn, &big)?;

    eprintln!("broker bench: capture on one CPU ({PINNED_SAMPLES} samples per subject)");
    let together = pinned(scratch.path(), broker, Placement::Together)?;
    eprintln!("broker bench: capture on two CPUs apart ({PINNED_SAMPLES} samples per subject)");
    let apart = pinned(scratch.path(), broker, Placement::Apart)?;

    drop(wrappers);
    let log = process.log();
    let status = process.stop()?;
    if !status.success() {
        return Err(format!("the broker ended with {status}: {log}").into());
    }
    drop(scratch);

    let report = report(
        &latency,
        &throughput,
        together.as_ref(),
        apart.as_ref(),
        started.elapsed(),
    );
    write_report("broker bench", "broker-bench.md", &report)
}

/// A bare server of each kind (a thread; a process blocked in `read`; a process waiting in
/// `epoll_wait`) answering `reply` on a socket in `dir`, and a connection to each.
fn bare_servers(
    dir: &Path,
    name: &str,
    reply: &BareReply,
) -> Result<[(BareServer, RawConn); 3], Error> {
    let binary = Path::new(env!("CARGO_BIN_EXE_bare-server"));
    let thread = BareServer::start(&dir.join(format!("{name}-t.sock")), reply.clone())?;
    let thread_conn = RawConn::connect(thread.path())?;
    let process = BareServer::spawn(
        binary,
        &dir.join(format!("{name}-p.sock")),
        reply,
        BareWait::Read,
    )?;
    let process_conn = RawConn::connect(process.path())?;
    let epoll = BareServer::spawn(
        binary,
        &dir.join(format!("{name}-e.sock")),
        reply,
        BareWait::Epoll,
    )?;
    let epoll_conn = RawConn::connect(epoll.path())?;
    Ok([
        (thread, thread_conn),
        (process, process_conn),
        (epoll, epoll_conn),
    ])
}

/// Closes the connections, then waits for the servers.
fn finish_bare(pairs: Vec<(BareServer, RawConn)>) -> Result<(), Error> {
    let (servers, conns): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
    drop(conns);
    for server in servers {
        server.finish()?;
    }
    Ok(())
}

/// A raw round trip of `frame` on `conn`, timed; the reply must be `want` bytes long.
fn raw_sample(conn: &mut RawConn, frame: &[u8], want: usize) -> Result<Duration, Error> {
    let mut n = 0;
    let t = timed(|| {
        n = conn.round_trip(frame)?;
        Ok(())
    })?;
    if n == want {
        Ok(t)
    } else {
        Err(format!("a reply of {n} bytes, expected {want}").into())
    }
}

/// A `capture` of [`CAPTURE_NAME`] through `client`, timed.
fn capture_sample(client: &mut Client) -> Result<Duration, Error> {
    let mut reply = None;
    let t = timed(|| {
        reply = Some(client.request(|id| Message::Capture {
            id,
            session: CAPTURE_NAME.to_owned(),
        })?);
        Ok(())
    })?;
    match reply {
        Some(Message::Captured { .. }) => Ok(t),
        other => Err(format!("{other:?} to capture").into()),
    }
}

/// The `capture` request as raw frames, with the length of the broker's reply payload.
fn capture_frames(raw: &mut RawConn) -> Result<(Vec<u8>, usize), Error> {
    let frame = encode(&Message::Capture {
        id: 1000,
        session: CAPTURE_NAME.to_owned(),
    })?;
    let reply_len = raw.round_trip(&frame)?;
    match raw.decode_reply()? {
        Message::Captured { byte_length, .. } if byte_length as usize == TURN_BYTES => {
            Ok((frame, reply_len))
        }
        other => Err(format!("{other:?} to capture").into()),
    }
}

/// Round trips: per operation, the three bare servers, the broker through raw frames, the broker
/// through `Client` (in this order).
fn latency(dir: &Path, broker: Broker<'_>) -> Result<Vec<Measured>, Error> {
    let mut raw_capture = RawConn::broker(broker.socket)?;
    let (capture_frame, captured_len) = capture_frames(&mut raw_capture)?;
    let list_frame = encode(&Message::ListSessions { id: 1000 })?;
    let mut raw_list = RawConn::broker(broker.socket)?;
    let sessions_len = raw_list.round_trip(&list_frame)?;
    match raw_list.decode_reply()? {
        Message::Sessions { sessions, .. }
            if sessions.len() == SESSIONS && sessions.iter().all(|s| s.turns as usize == TURNS) => {
        }
        other => return Err(format!("{other:?} to list_sessions").into()),
    }
    // The bare servers read the very request the broker reads and answer with the very frame
    // it answers: what any server of the request must at least do (until issue 29 they echoed
    // a frame, the `capture` request's size both ways, the `list_sessions` reply's both ways).
    let captured_frame = frame_of(raw_capture.reply());
    let sessions_frame = frame_of(raw_list.reply());

    let [
        (t1, mut bare_capture_t),
        (p1, mut bare_capture_p),
        (e1, mut bare_capture_e),
    ] = bare_servers(dir, "capture", &BareReply::Fixed(captured_frame))?;
    let [
        (t2, mut bare_list_t),
        (p2, mut bare_list_p),
        (e2, mut bare_list_e),
    ] = bare_servers(dir, "list", &BareReply::Fixed(sessions_frame))?;
    let mut client_capture = client(broker.socket)?;
    let mut client_list = client(broker.socket)?;

    let capture = (capture_frame.len(), captured_len + HEADER_LEN);
    let list = (list_frame.len(), sessions_len + HEADER_LEN);
    let bare_capture = capture;
    let bare_list = list;
    let capture_bare_len = captured_len;
    let broker_pid = Some(broker.pid);
    let mut series = vec![
        Series::new(
            Kind::BareThread,
            "bare, thread (`capture` request, the broker's reply frame)",
            bare_capture,
            None,
            || raw_sample(&mut bare_capture_t, &capture_frame, capture_bare_len),
        ),
        Series::new(
            Kind::BareProcess,
            "bare, process (`capture` request, the broker's reply frame)",
            bare_capture,
            p1.pid(),
            || raw_sample(&mut bare_capture_p, &capture_frame, capture_bare_len),
        ),
        Series::new(
            Kind::BareEpoll,
            "bare, process in `epoll_wait` (`capture` request, the broker's reply frame)",
            bare_capture,
            e1.pid(),
            || raw_sample(&mut bare_capture_e, &capture_frame, capture_bare_len),
        ),
        Series::new(
            Kind::BrokerRaw,
            "broker `capture`, raw frames",
            capture,
            broker_pid,
            || raw_sample(&mut raw_capture, &capture_frame, captured_len),
        ),
        Series::new(
            Kind::BrokerClient,
            "broker `capture`, `clippy_proto::Client`",
            capture,
            broker_pid,
            || capture_sample(&mut client_capture),
        ),
        Series::new(
            Kind::BareThread,
            "bare, thread (`list_sessions` request, the broker's reply frame)",
            bare_list,
            None,
            || raw_sample(&mut bare_list_t, &list_frame, sessions_len),
        ),
        Series::new(
            Kind::BareProcess,
            "bare, process (`list_sessions` request, the broker's reply frame)",
            bare_list,
            p2.pid(),
            || raw_sample(&mut bare_list_p, &list_frame, sessions_len),
        ),
        Series::new(
            Kind::BareEpoll,
            "bare, process in `epoll_wait` (`list_sessions` request, the broker's reply frame)",
            bare_list,
            e2.pid(),
            || raw_sample(&mut bare_list_e, &list_frame, sessions_len),
        ),
        Series::new(
            Kind::BrokerRaw,
            "broker `list_sessions`, raw frames",
            list,
            broker_pid,
            || raw_sample(&mut raw_list, &list_frame, sessions_len),
        ),
        Series::new(
            Kind::BrokerClient,
            "broker `list_sessions`, `clippy_proto::Client`",
            list,
            broker_pid,
            || {
                let mut reply = None;
                let t = timed(|| {
                    reply = Some(client_list.request(|id| Message::ListSessions { id })?);
                    Ok(())
                })?;
                match reply {
                    Some(Message::Sessions { sessions, .. }) if sessions.len() == SESSIONS => Ok(t),
                    other => Err(format!("{other:?} to list_sessions").into()),
                }
            },
        ),
    ];
    sample_interleaved(&mut series, WARM_UP, SAMPLES / ROUND, ROUND)?;
    let measured = series.into_iter().map(Series::done).collect();
    finish_bare(vec![
        (t1, bare_capture_t),
        (p1, bare_capture_p),
        (e1, bare_capture_e),
        (t2, bare_list_t),
        (p2, bare_list_p),
        (e2, bare_list_e),
    ])?;
    Ok(measured)
}

/// `get_turn` of the 4 MiB turn: the round trips (the three bare servers, raw frames, `Client`),
/// then the in-process steps.
fn throughput(
    dir: &Path,
    broker: Broker<'_>,
    turn_id: &str,
    content: &[u8],
) -> Result<Vec<Measured>, Error> {
    let get_frame = encode(&Message::GetTurn {
        id: 1000,
        turn_id: turn_id.to_owned(),
        format: Format::Raw,
    })?;
    let mut raw = RawConn::broker(broker.socket)?;
    let payload_len = raw.round_trip(&get_frame)?;
    let payload = raw.reply().to_vec();
    let reply = decode(&payload)?;
    match &reply {
        Message::Turn { content: got, .. } if got == content => {}
        Message::Turn { content: got, .. } => {
            return Err(format!(
                "get_turn returned {} bytes, not the {} reported",
                got.len(),
                content.len()
            )
            .into());
        }
        other => return Err(format!("{other:?} to get_turn").into()),
    }
    // The reply as the broker holds it: the content shared with its ring.
    let shared_reply = match &reply {
        Message::Turn { id, turn, content } => Message::Turn {
            id: *id,
            turn: turn.clone(),
            content: Payload::from(std::sync::Arc::<[u8]>::from(&content[..])),
        },
        other => other.clone(),
    };
    // The bare servers answer with the broker's very reply.
    let reply_frame = frame_of(&payload);
    let [(t, mut bare_t), (p, mut bare_p), (e, mut bare_e)] =
        bare_servers(dir, "turn", &BareReply::Fixed(reply_frame.clone()))?;
    let mut client = client(broker.socket)?;
    let mut decoder = FrameDecoder::default();

    let sizes = (get_frame.len(), reply_frame.len());
    let broker_pid = Some(broker.pid);
    let mut series = vec![
        Series::new(Kind::BareThread, "bare server, thread", sizes, None, || {
            raw_sample(&mut bare_t, &get_frame, payload_len)
        }),
        Series::new(
            Kind::BareProcess,
            "bare server, process",
            sizes,
            p.pid(),
            || raw_sample(&mut bare_p, &get_frame, payload_len),
        ),
        Series::new(
            Kind::BareEpoll,
            "bare server, process in `epoll_wait`",
            sizes,
            e.pid(),
            || raw_sample(&mut bare_e, &get_frame, payload_len),
        ),
        Series::new(
            Kind::BrokerRaw,
            "broker `get_turn`, raw frames",
            sizes,
            broker_pid,
            || raw_sample(&mut raw, &get_frame, payload_len),
        ),
        Series::new(
            Kind::BrokerClient,
            "broker `get_turn`, `clippy_proto::Client`",
            sizes,
            broker_pid,
            || {
                let mut reply = None;
                let t = timed(|| {
                    reply = Some(client.request(|id| Message::GetTurn {
                        id,
                        turn_id: turn_id.to_owned(),
                        format: Format::Raw,
                    })?);
                    Ok(())
                })?;
                match reply {
                    Some(Message::Turn { content: got, .. }) if got.len() == content.len() => Ok(t),
                    Some(Message::Turn { content: got, .. }) => {
                        Err(format!("get_turn returned {} bytes", got.len()).into())
                    }
                    other => Err(format!("{other:?} to get_turn").into()),
                }
            },
        ),
        step(
            "client: `clippy_proto::decode` of the reply payload",
            || timed(|| Ok(decode(black_box(&payload))?)),
        ),
        step(
            "… its 1st pass alone (`type` and `id`, the rest skipped)",
            || timed(|| decode_header(black_box(&payload))),
        ),
        step(
            "… its 2nd pass alone (the internally tagged `Message`)",
            || timed(|| decode_tagged(black_box(&payload))),
        ),
        step(
            "… vs a plain struct, content owned (`serde_bytes`)",
            || timed(|| decode_turn_owned(black_box(&payload))),
        ),
        step("… vs a plain struct, content borrowed (`&[u8]`)", || {
            timed(|| decode_turn_borrowed(black_box(&payload)))
        }),
        step(
            "client: `FrameDecoder`, the frame read into its kept buffer in 64 KiB reads, then `next_payload` (borrowed)",
            || timed(|| reassemble(&mut decoder, black_box(&reply_frame), CLIENT_READ)),
        ),
        step(
            "broker: `encode_frame` of the reply (its head; the content stays in the ring)",
            || timed(|| Ok(encode_frame(black_box(&shared_reply))?)),
        ),
        step(
            "what the broker no longer does: `encode` of the whole reply into a fresh `Vec`",
            || timed(|| Ok(encode(black_box(&reply))?)),
        ),
        step(
            "first touch of fresh memory, per 4 MiB (1024 pages; a new 36 MiB mapping per run)",
            || Ok(page_fault_cost() * 1024),
        ),
    ];
    sample_interleaved(&mut series, BIG_WARM_UP, BIG_RUNS, 1)?;
    let measured = series.into_iter().map(Series::done).collect();
    finish_bare(vec![(t, bare_t), (p, bare_p), (e, bare_e)])?;
    Ok(measured)
}

/// An in-process step of the 4 MiB path.
fn step<'a>(label: &str, sample: impl FnMut() -> Result<Duration, Error> + 'a) -> Series<'a> {
    Series::new(Kind::Step, label, (0, 0), None, sample)
}

/// Puts back the CPU sets of this thread and of the broker's event loop.
struct Unpin {
    this: CpuSet,
    broker: (Pid, CpuSet),
}

impl Drop for Unpin {
    fn drop(&mut self) {
        let _ = sched_setaffinity(Pid::from_raw(0), &self.this);
        let _ = sched_setaffinity(self.broker.0, &self.broker.1);
    }
}

/// Where [`pinned`] puts the servers: on the client's CPU, or all on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// This thread, the broker's event loop and the bare servers on one CPU.
    Together,
    /// This thread on one CPU; the broker's event loop and the bare servers on another.
    Apart,
}

/// `capture` round trips with this thread, the broker's event loop and fresh bare servers
/// pinned as `placement` says; `None` with fewer than 2 CPUs.
fn pinned(
    dir: &Path,
    broker: Broker<'_>,
    placement: Placement,
) -> Result<Option<Vec<Measured>>, Error> {
    let this = Pid::from_raw(0);
    let broker_pid = Pid::from_raw(i32::try_from(broker.pid)?);
    let allowed = sched_getaffinity(this)?;
    let cpus: Vec<usize> = (0..CpuSet::count())
        .filter(|&cpu| allowed.is_set(cpu).unwrap_or(false))
        .collect();
    let (Some(&client_cpu), Some(&other_cpu)) = (cpus.first(), cpus.get(1)) else {
        return Ok(None);
    };
    let server_cpu = match placement {
        Placement::Together => client_cpu,
        Placement::Apart => other_cpu,
    };
    let _unpin = Unpin {
        this: allowed,
        broker: (broker_pid, sched_getaffinity(broker_pid)?),
    };
    let only = |cpu: usize| -> Result<CpuSet, Error> {
        let mut set = CpuSet::new();
        set.set(cpu)?;
        Ok(set)
    };
    let servers = only(server_cpu)?;
    sched_setaffinity(this, &servers)?;
    sched_setaffinity(broker_pid, &servers)?;
    let mut raw = RawConn::broker(broker.socket)?;
    let (frame, reply_len) = capture_frames(&mut raw)?;
    // Started now, the bare servers inherit this thread's CPU set, the servers' (this thread
    // moves to its own CPU after); they answer the broker's reply frame, as in the round trips
    // above.
    let [(t, mut bare_t), (p, mut bare_p), (e, mut bare_e)] = bare_servers(
        dir,
        &format!("pinned-{placement:?}"),
        &BareReply::Fixed(frame_of(raw.reply())),
    )?;
    sched_setaffinity(this, &only(client_cpu)?)?;
    let mut client = client(broker.socket)?;
    let sizes = (frame.len(), reply_len + HEADER_LEN);
    let mut series = vec![
        Series::new(Kind::BareThread, "bare, thread", sizes, None, || {
            raw_sample(&mut bare_t, &frame, reply_len)
        }),
        Series::new(Kind::BareProcess, "bare, process", sizes, p.pid(), || {
            raw_sample(&mut bare_p, &frame, reply_len)
        }),
        Series::new(
            Kind::BareEpoll,
            "bare, process in `epoll_wait`",
            sizes,
            e.pid(),
            || raw_sample(&mut bare_e, &frame, reply_len),
        ),
        Series::new(
            Kind::BrokerRaw,
            "broker `capture`, raw frames",
            sizes,
            Some(broker.pid),
            || raw_sample(&mut raw, &frame, reply_len),
        ),
        Series::new(
            Kind::BrokerClient,
            "broker `capture`, `clippy_proto::Client`",
            sizes,
            Some(broker.pid),
            || capture_sample(&mut client),
        ),
    ];
    sample_interleaved(&mut series, PINNED_WARM_UP, PINNED_SAMPLES / ROUND, ROUND)?;
    let measured = series.into_iter().map(Series::done).collect();
    finish_bare(vec![(t, bare_t), (p, bare_p), (e, bare_e)])?;
    Ok(Some(measured))
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Content MB/s (10^6 bytes) of a round trip of `d`.
fn mb_per_s(d: Duration) -> f64 {
    BIG_BYTES as f64 / d.as_secs_f64() / 1e6
}

/// Per round, `baseline time / subject time` (a throughput ratio): its median, min and max.
fn per_round(baseline: &Measured, subject: &Measured) -> String {
    let per: Vec<f64> = baseline
        .in_order
        .iter()
        .zip(&subject.in_order)
        .map(|(b, s)| b.as_secs_f64() / s.as_secs_f64())
        .collect();
    let lo = per.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = per.iter().copied().fold(0.0, f64::max);
    format!("{:.2} ({lo:.2}–{hi:.2})", median(&per))
}

/// The round-trip table of `rows`: percentiles, ratios to the bare thread and the bare
/// `epoll_wait` process above each row, CPU time per request. `held_to_target`: whether its
/// `Client` rows are held to the target (part 1's are; the pinned parts' are not, their placement
/// being forced).
fn latency_table(out: &mut String, rows: &[Measured], held_to_target: bool) {
    out.push_str(
        "| subject | request B | reply B | p50 µs | p99 µs | max µs | p50 / bare thread | p99 / bare thread | p50 / bare epoll | p99 / bare epoll | server CPU µs/req | client CPU µs/req | server on client's CPU | target |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let (mut thread, mut epoll): (Option<&Measured>, Option<&Measured>) = (None, None);
    let ratio = |m: &Measured, b: Option<&Measured>, p: f64| {
        b.map_or_else(
            || "—".to_owned(),
            |b| format!("{:.2}", us(m.p(p)) / us(b.p(p))),
        )
    };
    for m in rows {
        match m.kind {
            Kind::BareThread => (thread, epoll) = (Some(m), None),
            Kind::BareEpoll => epoll = Some(m),
            Kind::BareProcess | Kind::BrokerRaw | Kind::BrokerClient | Kind::Step => {}
        }
        let target = match thread {
            Some(b) if held_to_target && m.kind == Kind::BrokerClient => {
                let met = us(m.p(0.99)) <= 2.0 * us(b.p(0.99));
                format!(
                    "p99 ≤ 2× bare thread ({})",
                    if met { "met" } else { "**missed**" }
                )
            }
            _ => "—".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} | {} | {:.1} | {} | {target} |",
            m.label,
            m.sizes.0,
            m.sizes.1,
            us(m.p(0.5)),
            us(m.p(0.99)),
            us(m.p(1.0)),
            ratio(m, thread, 0.5),
            ratio(m, thread, 0.99),
            ratio(m, epoll, 0.5),
            ratio(m, epoll, 0.99),
            m.server
                .map_or_else(|| "—".to_owned(), |s| format!("{:.1}", us(s.cpu))),
            us(m.client.cpu),
            m.same_cpu
                .map_or_else(|| "—".to_owned(), |f| format!("{:.0} %", 100.0 * f)),
        );
    }
}

fn find(rows: &[Measured], kind: Kind) -> Option<&Measured> {
    rows.iter().find(|m| m.kind == kind)
}

fn report(
    latency: &[Measured],
    throughput: &[Measured],
    pinned: Option<&Vec<Measured>>,
    apart: Option<&Vec<Measured>>,
    took: Duration,
) -> String {
    let mut out = String::from("# Broker benchmark\n\n");
    let (cpus, kernel) = machine();
    let _ = writeln!(
        out,
        "One run of `cargo bench -p clippy-benches --bench broker` ({:.0} s with the build; {cpus} \
         CPUs, Linux {}). `clippy-broker --foreground` (release) with {SESSIONS} fake wrappers \
         connected, each holding {TURNS} turns of {} KiB. Subjects:\n\n\
         - **bare, thread** (the baseline of the targets): a thread of the bench answering \
         length-prefixed frames on a Unix socket in the same tmpfs directory, in one write, \
         decoding nothing, blocked in `read` between requests; it reads the request the broker \
         reads and writes the reply frame the broker writes (the least a server of that request \
         must do);\n\
         - **bare, process**: the same loop in a process of its own (`bare-server`), as the \
         broker is one;\n\
         - **bare, process in `epoll_wait`**: the same, waiting for each request in `epoll_wait` \
         before reading, as the broker's event loop (mio) waits;\n\
         - **raw frames**: a pre-encoded request to the broker, its reply read into a reused \
         buffer and not decoded: what the broker alone adds;\n\
         - **`Client`**: `clippy_proto::Client::request`, as `clippy-ctl` uses it. It polls for \
         its reply for {} µs, yielding between polls, before it sleeps in `read` (raw frames and \
         the bare servers' client sleep in `read` at once).\n\n\
         Frame sizes include the 4-byte header. *Server CPU* is the on-CPU time of the broker's \
         event-loop thread (or the bare process) per request, *client CPU* that of the bench's \
         thread, both from `/proc` around each round. Latency on these VMs is bimodal: compare \
         only within one run.\n",
        took.as_secs_f64(),
        kernel,
        TURN_BYTES / 1024,
        REPLY_SPIN.as_micros(),
    );

    let _ = writeln!(
        out,
        "## Request round trips\n\n{SAMPLES} samples per subject after {WARM_UP} warm-up, \
         interleaved in rounds of {ROUND}; `capture` names its session by name (`{CAPTURE_NAME}`). \
         Ratios are to the bare thread and the bare `epoll_wait` process of the same frames just \
         above.\n"
    );
    latency_table(&mut out, latency, true);

    if let Some(pinned) = pinned {
        let _ = writeln!(
            out,
            "\n### The same `capture`, on one CPU\n\nThis thread, the broker's event loop and \
             fresh bare servers pinned to one CPU, so no round trip wakes a thread on another \
             vCPU; {PINNED_SAMPLES} samples per subject after {PINNED_WARM_UP} warm-up, \
             interleaved in rounds of {ROUND}, after the throughput part.\n"
        );
        latency_table(&mut out, pinned, false);
    }
    if let Some(apart) = apart {
        let _ = writeln!(
            out,
            "\n### The same `capture`, on two CPUs apart\n\nThis thread pinned to one CPU, the \
             broker's event loop and fresh bare servers to another, so every round trip wakes a \
             thread on the other vCPU, the broker's and the bare servers' alike; \
             {PINNED_SAMPLES} samples per subject after {PINNED_WARM_UP} warm-up, interleaved in \
             rounds of {ROUND}.\n"
        );
        latency_table(&mut out, apart, false);
    }
    if let (Some(bare), Some(epoll), Some(raw)) = (
        find(latency, Kind::BareThread),
        find(latency, Kind::BareEpoll),
        find(latency, Kind::BrokerRaw),
    ) {
        let cpu = |m: &Measured| m.server.map_or(f64::NAN, |s| us(s.cpu));
        let share = |m: &Measured| m.same_cpu.map_or(f64::NAN, |f| 100.0 * f);
        let _ = write!(
            out,
            "\n`capture` as raw frames takes {:.1} µs at p50 against {:.1} µs for the bare thread \
             and {:.1} µs for the bare `epoll_wait` process. The broker's event loop was last on \
             the client's CPU after {:.0} % of the rounds (the bare `epoll_wait` process: {:.0} %), \
             and it is on a CPU {:.1} µs per request (the bare process: {:.1} µs), this thread \
             {:.1} µs (against the bare thread: {:.1} µs).",
            us(raw.p(0.5)),
            us(bare.p(0.5)),
            us(epoll.p(0.5)),
            share(raw),
            share(epoll),
            cpu(raw),
            cpu(epoll),
            us(raw.client.cpu),
            us(bare.client.cpu),
        );
        if let Some(pinned) = pinned
            && let (Some(bare1), Some(raw1), Some(client1)) = (
                find(pinned, Kind::BareThread),
                find(pinned, Kind::BrokerRaw),
                find(pinned, Kind::BrokerClient),
            )
        {
            let _ = write!(
                out,
                " On one CPU the same round trip takes {:.1} µs ({:.2}× the bare thread's \
                 {:.1} µs; `Client` p99 {:.2}× the bare p99) with the event loop on a CPU {:.1} µs \
                 per request: the broker's own work is a few µs; the rest of the gap above is \
                 the cost of waking a thread on the other, idle vCPU, paid on both sides of \
                 every round trip and charged as CPU time to the threads woken.",
                us(raw1.p(0.5)),
                us(raw1.p(0.5)) / us(bare1.p(0.5)),
                us(bare1.p(0.5)),
                us(client1.p(0.99)) / us(bare1.p(0.99)),
                cpu(raw1),
            );
        }
        if let Some(apart) = apart
            && let (Some(bare2), Some(epoll2), Some(client2)) = (
                find(apart, Kind::BareThread),
                find(apart, Kind::BareEpoll),
                find(apart, Kind::BrokerClient),
            )
        {
            let _ = write!(
                out,
                " With every server on the other CPU than this thread, `Client` p99 is {:.1} µs \
                 against {:.1} µs for the bare `epoll_wait` process and {:.1} µs for the bare \
                 thread ({:.2}× the thread's).",
                us(client2.p(0.99)),
                us(epoll2.p(0.99)),
                us(bare2.p(0.99)),
                us(client2.p(0.99)) / us(bare2.p(0.99)),
            );
        }
        if let Some(client) = find(latency, Kind::BrokerClient) {
            let _ = write!(
                out,
                " `Client`, polling for its reply, keeps this thread's CPU awake for it: `capture` \
                 p99 {:.1} µs against {:.1} µs for raw frames, which sleep in `read`, for {:.1} µs \
                 more of this thread's CPU per request.",
                us(client.p(0.99)),
                us(raw.p(0.99)),
                us(client.client.cpu) - us(raw.client.cpu),
            );
        }
        out.push('\n');
    }

    let round_trips: Vec<&Measured> = throughput.iter().filter(|m| m.kind != Kind::Step).collect();
    let steps: Vec<&Measured> = throughput.iter().filter(|m| m.kind == Kind::Step).collect();
    let sizes = round_trips.first().map_or((0, 0), |m| m.sizes);
    let _ = writeln!(
        out,
        "\n## 4 MiB turn: `get_turn` throughput\n\nOne wrapper reported a turn of {} MiB of random \
         bytes; `get_turn` of it by turn id (request {} B, reply {} B), {BIG_RUNS} times per \
         subject after {BIG_WARM_UP} warm-up, interleaved one by one with each other and with \
         the in-process steps below. The bare servers answer with the broker's very reply frame. \
         MB/s = content bytes (10^6) / round trip. Ratios = subject MB/s / bare MB/s: of the \
         medians, and the median of the per-round ratios (min–max). Faults = minor page faults \
         per request (a 4 MiB buffer touched for the first time is 1024 of them).\n",
        BIG_BYTES >> 20,
        sizes.0,
        sizes.1,
    );
    out.push_str(
        "| subject | median ms | min ms | max ms | MB/s (median) | / bare thread | per round | / bare epoll | per round | server CPU ms | server faults | client CPU ms | client faults | target |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let rt_find = |kind: Kind| round_trips.iter().copied().find(|m| m.kind == kind);
    let (thread, epoll) = (rt_find(Kind::BareThread), rt_find(Kind::BareEpoll));
    for &m in &round_trips {
        let against = |b: Option<&Measured>| match b {
            Some(b) if !std::ptr::eq(b, m) => (
                format!("{:.2}", ms(b.p(0.5)) / ms(m.p(0.5))),
                per_round(b, m),
            ),
            Some(_) => ("1".to_owned(), "—".to_owned()),
            None => ("—".to_owned(), "—".to_owned()),
        };
        let (t, t_round) = against(thread);
        let (e, e_round) = against(epoll);
        let target = if m.kind == Kind::BrokerClient {
            "≥ 0.5 × bare thread"
        } else {
            "—"
        };
        let (server_cpu, server_faults) = m.server.map_or_else(
            || ("—".to_owned(), "—".to_owned()),
            |s| (format!("{:.2}", ms(s.cpu)), format!("{:.0}", s.faults)),
        );
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.2} | {:.2} | {:.0} | {t} | {t_round} | {e} | {e_round} | {server_cpu} | {server_faults} | {:.2} | {:.0} | {target} |",
            m.label,
            ms(m.p(0.5)),
            ms(m.p(0.0)),
            ms(m.p(1.0)),
            mb_per_s(m.p(0.5)),
            ms(m.client.cpu),
            m.client.faults,
        );
    }

    let client_rt = rt_find(Kind::BrokerClient).map_or(f64::NAN, |m| ms(m.p(0.5)));
    out.push_str(
        "\n### Where the time goes\n\nThe in-process steps of that path, alone, in this process, \
         on the same reply (same rounds). Share = step median / `Client` round-trip median. \
         Faults = minor page faults per run: a step faults only when this process's allocator has \
         no warm block to reuse, unlike the broker, which takes fresh pages for every reply \
         (compare its faults per request above).\n\n\
         | step | median ms | min ms | max ms | faults | share |\n|---|---|---|---|---|---|\n",
    );
    for m in &steps {
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} % |",
            m.label,
            ms(m.p(0.5)),
            ms(m.p(0.0)),
            ms(m.p(1.0)),
            m.client.faults,
            100.0 * ms(m.p(0.5)) / client_rt,
        );
    }
    if let (
        [bare, _, bare_epoll, raw, client],
        [
            decode,
            header,
            tagged,
            owned,
            borrowed,
            frame,
            head,
            whole,
            touch,
        ],
    ) = (round_trips.as_slice(), steps.as_slice())
    {
        let med = |m: &Measured| ms(m.p(0.5));
        let server = |m: &Measured| {
            m.server
                .map_or((f64::NAN, f64::NAN), |s| (ms(s.cpu), s.faults))
        };
        let (raw_cpu, raw_faults) = server(raw);
        let per_fault = med(touch) / 1024.0;
        let _ = writeln!(
            out,
            "\nMedians: the broker adds {:+.2} ms to the bare thread's round trip ({:+.2} ms to \
             the bare `epoll_wait` process's; raw frames − bare). Its event loop is on a CPU \
             {raw_cpu:.2} ms per `get_turn`, with {raw_faults:.0} page faults: the reply's head \
             is encoded (`encode_frame`, {:.2} ms) and the turn is written from the ring as it \
             lies (`writev`), where a whole `encode` would take {:.2} ms and a fresh 4 MiB buffer \
             (at {:.2} µs per first touch of a page, measured above, ≈ {:.2} ms of faults per \
             buffer). `clippy_proto::Client` adds {:+.2} ms more (`Client` − raw \
             frames; this thread is on a CPU {:.2} ms per request, with {:.0} page faults, \
             ≈ {:.2} ms): the frame read into the decoder's kept buffer {:.2} ms (the kernel's \
             copy; the payload is then borrowed) and `decode` {:.2} ms (one copy \
             of the content into the `Message`; {:.0} faults in that row). Within `decode`, the \
             1st pass (`type`/`id`) is {:.2} ms and the internally tagged 2nd pass {:.2} ms, \
             against {:.2} ms for a plain struct owning the content and {:.2} ms borrowing it: \
             serde's buffering of the tagged map costs {:+.2} ms and does not copy the content \
             (rmp-serde lends it); the cost is that one copy into the message.",
            med(raw) - med(bare),
            med(raw) - med(bare_epoll),
            med(head),
            med(whole),
            per_fault * 1e3,
            med(touch),
            med(client) - med(raw),
            ms(client.client.cpu),
            client.client.faults,
            client.client.faults * per_fault,
            med(frame),
            med(decode),
            decode.client.faults,
            med(header),
            med(tagged),
            med(owned),
            med(borrowed),
            med(tagged) - med(owned),
        );
    }
    out
}
