//! `clippy-ctl dash` (issue 31): what a frame costs with 100 sessions and 200 events a second
//! (goal: p99 ≤ 5 ms, under 5 % of a core), and what the running dashboard does when nothing
//! changes (goal: no redraw, no wake-up).
//!
//! 1. **Frames**: a `clippy_dash::App` with 100 sessions (their `list_sessions` and
//!    `session_status` replies), then events paced at 200 a second for [`PACED`] — turns
//!    starting and ending (`session.mode`), turns completed, waits and their ends, in a fixed
//!    pseudo-random order over the sessions. Each event is handled and, when the state says
//!    something shown changed and the dashboard's pacing allows (25 frames a second, as
//!    `clippy-ctl dash` draws), drawn into ratatui's `TestBackend` at 160x50 (then 80x24): a
//!    frame is that handling plus drawing, timed on the thread's CPU clock; the CPU share is the
//!    thread's CPU time over the run's wall time. Baseline in the same run: the same 100 rows,
//!    formatted beforehand, drawn as a plain `Paragraph` — what ratatui itself costs for a
//!    screen of that size.
//! 2. **Idle**: the real `clippy-ctl dash` (release) on a PTY of the bench's own, against a real
//!    `clippy-broker` (release) with two `clippy-session` bash sessions (release), once it has
//!    drawn and been still for a second: for [`IDLE`] it counts the bytes it writes to its
//!    terminal (a redraw writes some), its threads' context switches (every wake-up is one) and
//!    its CPU time (`/proc`). The sessions' programs are killed at the end (their wrappers end
//!    with them).
//!
//! It prints a markdown report and writes it to `target/dash-bench.md`; it asserts no timing.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clippy_benches::broker::BrokerProcess;
use clippy_benches::wrapper::{Error, percentile};
use clippy_benches::{Scratch, build_release, machine, write_report};
use clippy_dash::{App, Input, Pacer, Reply, Theme, render};
use clippy_proto::{EventRecord, SessionState, SessionSummary};
use clippy_pty::{CommandSpec, WinSize};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use serde_json::json;

/// Sessions in the dashboard.
const SESSIONS: usize = 100;
/// Events a second.
const RATE: u64 = 200;
/// How long the paced run lasts.
const PACED: Duration = Duration::from_secs(5);
/// How long the idle dashboard is watched.
const IDLE: Duration = Duration::from_secs(10);

fn main() -> Result<(), Error> {
    let (cpus, kernel) = machine();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut report = String::from("# clippy-ctl dash\n\n");
    let _ = writeln!(
        report,
        "{cpus} CPUs, Linux {kernel}, load average at start: {}\n",
        load.split(' ').take(3).collect::<Vec<_>>().join(" ")
    );
    report.push_str(
        "## Frames: 100 sessions, 200 events/s (frames paced at 25/s, as `clippy-ctl dash` draws)\n\n| size | events | frames | frame p50 | frame p99 | frame max | event without a frame p99 | CPU share | baseline p50 (plain Paragraph) | baseline p99 |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (cols, rows) in [(160, 50), (80, 24)] {
        let paced = paced(cols, rows);
        let base = baseline(cols, rows);
        let _ = writeln!(
            report,
            "| {cols}x{rows} | {} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.3} ms | {:.1} % | {:.2} ms | {:.2} ms |",
            paced.frames.len() + paced.handled.len(),
            paced.frames.len(),
            ms(percentile(&paced.frames, 0.50)),
            ms(percentile(&paced.frames, 0.99)),
            ms(paced.frames.last().copied().unwrap_or_default()),
            ms(percentile(&paced.handled, 0.99)),
            paced.cpu.as_secs_f64() / paced.wall.as_secs_f64() * 100.0,
            ms(percentile(&base, 0.50)),
            ms(percentile(&base, 0.99)),
        );
    }
    report.push_str("\n## Idle: the running dashboard, nothing changing\n\n");
    let idle = idle()?;
    let _ = writeln!(
        report,
        "| watched | bytes written (redraws) | context switches (wake-ups) | CPU time |\n|---|---|---|---|\n| {} s | {} | {} | {} ms |",
        IDLE.as_secs(),
        idle.bytes,
        idle.switches,
        idle.cpu_ms
    );
    write_report("dash", "dash-bench.md", &report)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn thread_cpu() -> Duration {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("the thread's CPU clock");
    Duration::new(
        u64::try_from(t.tv_sec()).unwrap_or(0),
        u32::try_from(t.tv_nsec()).unwrap_or(0),
    )
}

fn id(i: usize) -> String {
    format!("s{i:03}")
}

fn fleet(now: u64) -> App {
    let mut app = App::new(false);
    app.handle(Input::Broker(true), now);
    let list: Vec<SessionSummary> = (0..SESSIONS)
        .map(|i| {
            serde_json::from_value(json!({
                "session": id(i), "name": format!("agent-{i}"), "pid": 1000 + i,
                "command": ["claude", "--model", "opus"], "preset": "claude",
                "connected": true, "turns": i % 7, "bracketed_paste": true,
            }))
            .expect("a summary")
        })
        .collect();
    app.handle(Input::Reply(Reply::Sessions(list)), now);
    for i in 0..SESSIONS {
        let status: SessionState = serde_json::from_value(json!({
            "session": id(i), "pid": 1000 + i, "connected": true,
            "mode": if i % 3 == 0 { "busy" } else { "idle" }, "exec_running": false,
            "resume_cursor": 0, "bracketed_paste": true, "waiters": 0,
        }))
        .expect("a status");
        app.handle(Input::Reply(Reply::Status(Box::new(status))), now);
    }
    app.handle(
        Input::Reply(Reply::Screen {
            session: id(0),
            lines: (0..40).map(|l| format!("line {l} of the screen")).collect(),
        }),
        now,
    );
    app
}

/// The `n`th event of the run: over the sessions in a fixed pseudo-random order.
fn event(n: u64) -> EventRecord {
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555;
    x ^= x >> 29;
    let session = id(usize::try_from(x % SESSIONS as u64).unwrap_or(0));
    let (kind, extra) = match n % 6 {
        0 => (
            "session.mode",
            json!({"reason": "busy", "message": "fix the tests"}),
        ),
        1 | 2 => ("session.mode", json!({"reason": "idle"})),
        3 => (
            "turn.completed",
            json!({"turn_id": format!("{session}:{n}"), "byte_length": 900}),
        ),
        4 => (
            "session.waiting",
            json!({"reason": "permission", "tool": "Bash", "input": "{\"command\":\"cargo test\"}"}),
        ),
        _ => ("session.resumed", json!({"reason": "permission"})),
    };
    let mut v =
        json!({"id": n + 1, "ts": "2027-01-01T00:00:00.000Z", "type": kind, "session": session});
    if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
        v.extend(extra.clone());
    }
    serde_json::from_value(v).expect("an event")
}

struct Paced {
    /// An event handled and the frame drawn, sorted.
    frames: Vec<Duration>,
    /// An event handled with no frame drawn (one was drawn less than 40 ms before), sorted.
    handled: Vec<Duration>,
    cpu: Duration,
    wall: Duration,
}

fn paced(cols: u16, rows: u16) -> Paced {
    let start_ms = clippy_proto::unix_ms_now();
    let mut app = fleet(start_ms);
    let mut terminal = Terminal::new(TestBackend::new(cols, rows)).expect("a test terminal");
    let theme = Theme::new(false);
    let mut frames = Vec::new();
    let mut handled = Vec::new();
    // As the dashboard paces its frames (`clippy-ctl dash`: 25 a second).
    let mut pacer = Pacer::new(25);
    let cpu_start = thread_cpu();
    let start = Instant::now();
    let interval = Duration::from_nanos(1_000_000_000 / RATE);
    let total = RATE * PACED.as_secs();
    for n in 0..total {
        let due = start + interval * u32::try_from(n).unwrap_or(u32::MAX);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let now = start_ms + u64::try_from(start.elapsed().as_millis()).unwrap_or(0);
        let before = thread_cpu();
        app.handle(Input::Event(Box::new(event(n))), now);
        let last = n + 1 == total;
        if app.changed() && (pacer.wait(now).is_none() || last) {
            terminal
                .draw(|frame| render(&app, theme, now, frame))
                .expect("drawn");
            app.drawn();
            pacer.drew(now);
            frames.push(thread_cpu() - before);
        } else {
            handled.push(thread_cpu() - before);
        }
    }
    let wall = start.elapsed();
    let cpu = thread_cpu() - cpu_start;
    frames.sort();
    handled.sort();
    Paced {
        frames,
        handled,
        cpu,
        wall,
    }
}

fn baseline(cols: u16, rows: u16) -> Vec<Duration> {
    let mut terminal = Terminal::new(TestBackend::new(cols, rows)).expect("a test terminal");
    let lines: Vec<String> = (0..SESSIONS)
        .map(|i| {
            format!(
                "  agent-{i:<8} claude  idle            {}  12:00:00  ok  -",
                i % 7
            )
        })
        .collect();
    let mut times = Vec::new();
    for n in 0..(RATE * PACED.as_secs()) {
        let before = thread_cpu();
        let shown: Vec<Line<'_>> = lines
            .iter()
            .skip(usize::try_from(n % 2).unwrap_or(0))
            .map(|l| Line::from(l.as_str()))
            .collect();
        terminal
            .draw(|frame| frame.render_widget(Paragraph::new(shown), frame.area()))
            .expect("drawn");
        times.push(thread_cpu() - before);
    }
    times.sort();
    times
}

struct Idle {
    bytes: u64,
    switches: u64,
    cpu_ms: u64,
}

fn idle() -> Result<Idle, Error> {
    let broker_bin = build_release("dash", "clippy-broker")?;
    let session_bin = build_release("dash", "clippy-session")?;
    let ctl_bin = build_release("dash", "clippy-ctl")?;
    let scratch = Scratch::create("dash-bench")?;
    let runtime = scratch.path();
    let _broker = BrokerProcess::start(&broker_bin, runtime, &[])?;
    let mut sessions = Vec::new();
    for name in ["one", "two"] {
        let out = std::process::Command::new(&ctl_bin)
            .args([
                "spawn",
                "--name",
                name,
                "--",
                "bash",
                "--norc",
                "--noprofile",
            ])
            .env("XDG_RUNTIME_DIR", runtime)
            .env("XDG_STATE_HOME", runtime.join("state"))
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    session_bin.parent().map_or(Path::new("."), |p| p).display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .output()?;
        if !out.status.success() {
            return Err(format!("spawn {name}: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        sessions.push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    let pair = clippy_pty::openpty(WinSize::new(160, 50))?;
    let spec = CommandSpec::new(&ctl_bin)
        .arg("dash")
        .env("XDG_RUNTIME_DIR", runtime)
        .env("XDG_STATE_HOME", runtime.join("state"))
        .env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn(&spec)?;
    drop(pair.slave);
    let master = Arc::new(pair.master);
    let written = Arc::new(AtomicU64::new(0));
    {
        let (master, written) = (Arc::clone(&master), Arc::clone(&written));
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok(n) = (&*master).read(&mut buf) {
                if n == 0 {
                    break;
                }
                written.fetch_add(n as u64, Ordering::Relaxed);
            }
        });
    }
    // Drawn, and still for a second.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = (0, Instant::now());
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let now = written.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        } else if now > 0 && last.1.elapsed() >= Duration::from_secs(1) {
            break;
        }
    }
    let pid = child.pid();
    let (bytes0, switches0, cpu0) = (written.load(Ordering::Relaxed), switches(pid), cpu_ns(pid));
    std::thread::sleep(IDLE);
    let (bytes1, switches1, cpu1) = (written.load(Ordering::Relaxed), switches(pid), cpu_ns(pid));
    let _ = (&*master).write_all_q();
    let _ = child.wait();
    // The sessions' programs are killed (their wrappers then end), before the broker goes.
    for id in &sessions {
        let status = std::process::Command::new(&ctl_bin)
            .args(["--json", "status", id])
            .env("XDG_RUNTIME_DIR", runtime)
            .output()?;
        let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
        if let Some(pid) = json["session_status"]["pid"].as_i64() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(0)),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    Ok(Idle {
        bytes: bytes1 - bytes0,
        switches: switches1.saturating_sub(switches0),
        cpu_ms: cpu1.saturating_sub(cpu0) / 1_000_000,
    })
}

/// `q` to the dashboard.
trait Quit {
    fn write_all_q(self) -> std::io::Result<()>;
}

impl Quit for &clippy_pty::PtyMaster {
    fn write_all_q(self) -> std::io::Result<()> {
        std::io::Write::write_all(&mut &*self, b"q")
    }
}

/// Context switches of every thread of `pid`, voluntary and not.
fn switches(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}

/// CPU time of every thread of `pid`, in nanoseconds (`/proc/PID/task/*/schedstat`).
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
