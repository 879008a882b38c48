//! Fault injection (issue 7, part 2): real PTYs, a real broker, real children — and then
//! something breaks: the broker is SIGKILLed (a), a wrapper is SIGKILLed (b), clients and
//! subscribers are SIGSTOPped (c), the spool's disk fills up (d), a child writes a 200 MB line (e).
//! Each test owns its processes (killed in drop guards), works in a temporary folder and waits
//! with deadlines.
//!
//! The sessions run `tests/programs/burst.py` (bursts of ANSI-heavy output per input, then
//! `burst> `), recognised with `--pattern '^(burst|sink)> $'`.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use support::{session_dirs, test_dir};

use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clippy_proto::{Message, PatternKind, ProtoError};
use clippy_pty::{CommandSpec, PtyMaster, WinSize};
use clippy_testkit::wait_until;
use nix::sys::signal::Signal;
use support::broker::{
    self, broker_guard, client, ctl, ctl_command, events, is_gone, memory_kib, p50_max,
    request_latencies, session_named, sessions, start_broker,
};
use support::{Spawn, TempDir, Term, program, python, signal_pid};

/// How long a process may take before it counts as hung: a liveness deadline, far beyond what any
/// step takes even on a loaded machine (speed is the benchmarks' business, not these tests').
const HANG: Duration = Duration::from_secs(60);

/// A wrapped `burst.py NAME`, at its first prompt.
fn burst(dir: &TempDir, name: &str) -> Term {
    let mut term = Spawn::wrapper(dir, burst_args(name)).start();
    term.expect("burst> ");
    term
}

fn burst_args(name: &str) -> Vec<String> {
    vec![
        "--name".into(),
        name.into(),
        "--pattern".into(),
        "^(burst|sink)> $".into(),
        "--".into(),
        python().into(),
        program("burst.py").to_str().unwrap().into(),
        name.into(),
    ]
}

/// Types `n` into the burst session `name` and waits for its burst and the prompt after it.
fn turn(term: &mut Term, name: &str, n: u64) {
    term.send(format!("{n}\r"));
    term.expect(format!("END {n} of {name}\r\n"));
    term.expect("burst> ");
}

/// The session id of `name` (once registered).
fn id_of(dir: &TempDir, name: &str) -> String {
    let mut c = client(dir);
    let mut found = None;
    wait_until(&format!("{name} registered"), HANG, || {
        found = session_named(&mut c, name).map(|s| s.session);
        found.is_some()
    });
    found.unwrap()
}

fn waiters(client: &mut clippy_proto::Client, session: &str) -> u32 {
    match client.request(|id| Message::SessionStatus {
        id,
        session: session.into(),
    }) {
        Ok(Message::Status { status, .. }) => status.waiters,
        other => panic!("session_status {session}: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// a. The broker is SIGKILLed
// ---------------------------------------------------------------------------------------------

#[test]
fn a_killed_broker_leaves_every_session_running_and_a_new_broker_gets_them_back() {
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let mut first = start_broker(&dir, &[]);
    let names = ["alpha", "beta", "gamma"];
    let mut terms: Vec<Term> = names.iter().map(|name| burst(&dir, name)).collect();
    let dump = dir.join("pasted");
    let mut target = Spawn::wrapper(
        &dir,
        [
            "--name",
            "dump",
            "--",
            python(),
            program("pastedump.py").to_str().unwrap(),
            dump.to_str().unwrap(),
        ],
    )
    .start();
    target.expect("ready> ");
    for (term, name) in terms.iter_mut().zip(names) {
        turn(term, name, 1);
    }
    let mut c = client(&dir);
    wait_until(
        "three sessions with a turn each, and dump's bracketed paste",
        HANG,
        || {
            let list = sessions(&mut c);
            names.iter().all(|name| {
                list.iter()
                    .any(|s| s.name.as_deref() == Some(name) && s.turns == 1)
            }) && list
                .iter()
                .any(|s| s.name.as_deref() == Some("dump") && s.bracketed_paste)
        },
    );
    let ids: Vec<String> = names.iter().map(|name| id_of(&dir, name)).collect();
    let before: Vec<Vec<u8>> = ids
        .iter()
        .map(|id| broker::turn(&mut c, &format!("{id}:1")).0)
        .collect();

    // Busy clients, each on a connection of its own, until the broker goes.
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    for i in 0..2 {
        let mut busy = client(&dir);
        let stop = Arc::clone(&stop);
        let done = done_tx.clone();
        std::thread::spawn(move || {
            let mut served = 0u64;
            let outcome = loop {
                if stop.load(Ordering::Relaxed) {
                    break None;
                }
                let reply = if i == 0 {
                    busy.request(|id| Message::ListSessions { id })
                } else {
                    busy.request(|id| Message::GetTurn {
                        id,
                        turn_id: "alpha".into(),
                        format: Default::default(),
                    })
                };
                match reply {
                    Ok(_) => served += 1,
                    Err(e) => break Some(e.to_string()),
                }
            };
            let _ = done.send((served, outcome));
        });
    }
    // And two clippy-ctl commands that wait on the broker: a long wait-for and a follower.
    let waiting: Vec<std::process::Child> = [
        &["wait-for", "alpha", "NEVER PRINTED", "--timeout", "60000"][..],
        &["events", "--follow"][..],
    ]
    .iter()
    .map(|args| {
        ctl_command(&dir, args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    })
    .collect();
    wait_until("the wait parked", HANG, || waiters(&mut c, "alpha") == 1);
    std::thread::sleep(Duration::from_millis(200));
    first.kill();
    let killed = Instant::now();
    for mut child in waiting {
        let code = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.code();
            }
            assert!(
                killed.elapsed() < HANG,
                "a waiting clippy-ctl hung when the broker died"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(code, Some(3), "a waiting clippy-ctl when the broker died");
    }
    for _ in 0..2 {
        let (served, outcome) = done_rx
            .recv_timeout(HANG)
            .expect("a busy client hung when the broker died");
        assert!(served > 0, "the busy client had been served");
        assert!(outcome.is_some(), "the busy client saw the connection end");
    }

    // Without a broker: the children keep running and the user's I/O passes.
    for (term, name) in terms.iter_mut().zip(names) {
        turn(term, name, 2);
    }
    // With a ten-minute timeout: it says the broker is down at once, not when the timeout ends.
    let down = ctl(&dir, &["--timeout", "600000", "list-sessions"], HANG);
    assert_eq!(down.code, 3, "list-sessions without a broker: {down:?}");

    // A new broker: every wrapper registers again, with its turns under the same ids.
    let _second = start_broker(&dir, &[]);
    let mut c = client(&dir);
    let reconnect = Instant::now();
    wait_until("every wrapper re-registered with both turns", HANG, || {
        let list = sessions(&mut c);
        ids.iter().all(|id| {
            list.iter().any(|s| {
                &s.session == id && s.turns == 2 && s.last_turn_id == Some(format!("{id}:2"))
            })
        }) && list
            .iter()
            .any(|s| s.name.as_deref() == Some("dump") && s.bracketed_paste)
    });
    eprintln!(
        "every wrapper was back {:?} after the new broker started",
        reconnect.elapsed()
    );
    for ((id, name), old) in ids.iter().zip(names).zip(&before) {
        assert_eq!(&broker::turn(&mut c, &format!("{id}:1")).0, old);
        let (second, _) = broker::turn(&mut c, &format!("{id}:2"));
        assert!(
            second.ends_with(format!("END 2 of {name}\r\n").as_bytes()),
            "{}",
            String::from_utf8_lossy(&second)
        );
    }

    // A turn completed after the restart is relayable.
    turn(&mut terms[0], "alpha", 3);
    let want = format!("{}:3", ids[0]);
    wait_until("alpha's third turn", HANG, || {
        session_named(&mut c, "alpha").and_then(|s| s.last_turn_id) == Some(want.clone())
    });
    match c
        .request(|id| Message::Capture {
            id,
            session: "alpha".into(),
        })
        .unwrap()
    {
        Message::Captured { turn_id, .. } => assert_eq!(turn_id, want),
        other => panic!("{other:?}"),
    }
    let (content, _) = broker::turn(&mut c, &want);
    c.request(|id| Message::Paste {
        id,
        session: "dump".into(),
        format: Default::default(),
    })
    .unwrap();
    assert!(target.wait_exit().success());
    let mut expected = b"\x1b[200~".to_vec();
    expected.extend_from_slice(&content);
    expected.extend_from_slice(b"\x1b[201~");
    assert_eq!(std::fs::read(&dump).unwrap(), expected);
}

// ---------------------------------------------------------------------------------------------
// b. A wrapper is SIGKILLed
// ---------------------------------------------------------------------------------------------

#[test]
fn a_killed_wrapper_hangs_up_its_child_and_only_its_session_goes() {
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let _broker = start_broker(&dir, &[]);
    // The victim's program records how its terminal went away.
    let hup_file = dir.join("victim.hup");
    let mut victim = Spawn::wrapper(&dir, burst_args("victim"))
        .env("BURST_HUP_FILE", &hup_file)
        .start();
    victim.expect("burst> ");
    let mut other = burst(&dir, "other");
    turn(&mut victim, "victim", 1);
    let victim_id = id_of(&dir, "victim");
    id_of(&dir, "other");
    let mut c = client(&dir);
    let child = session_named(&mut c, "victim").unwrap().pid;
    assert!(!is_gone(child), "victim's child runs");

    // A client waiting on the other session.
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let mut waiter = client(&dir);
        std::thread::spawn(move || {
            let reply = waiter.request(|id| Message::WaitFor {
                id,
                session: "other".into(),
                pattern: "MARK-1.".into(),
                kind: PatternKind::Literal,
                from_cursor: 0,
                timeout_ms: Some(20_000),
            });
            let _ = tx.send(reply);
        });
    }
    wait_until("the wait parked", HANG, || waiters(&mut c, "other") == 1);

    // Busy (sleeping, not reading its terminal) when the wrapper dies: the kernel hangs the
    // terminal up and sends the session leader SIGHUP, as when a terminal window is closed. (A
    // program blocked reading the terminal sees EIO instead, with any terminal: see burst.py.)
    victim.send("sleep 20\r");
    wait_until("victim's child asleep", Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{child}/wchan")).is_ok_and(|w| w.contains("sleep"))
    });
    signal_pid(victim.pid(), Signal::SIGKILL);
    victim.wait_exit();
    wait_until("victim's child to get SIGHUP and exit", HANG, || {
        is_gone(child)
    });
    assert_eq!(
        std::fs::read_to_string(&hup_file).ok().as_deref(),
        Some("SIGHUP"),
        "the child was hung up"
    );
    wait_until("the broker to drop victim", HANG, || {
        session_named(&mut c, "victim").is_none()
    });
    let exited = events(&mut c, &["session.exited"]);
    assert!(
        exited
            .iter()
            .any(|e| e.session.as_deref() == Some(victim_id.as_str())),
        "{exited:#?}"
    );

    // The other session, and the client waiting on it, are unaffected.
    assert!(
        rx.try_recv().is_err(),
        "the wait on other ended early: {:?}",
        rx.try_recv()
    );
    let list = sessions(&mut c);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert!(list[0].connected && list[0].name.as_deref() == Some("other"));
    turn(&mut other, "other", 1);
    match rx.recv_timeout(HANG).unwrap() {
        Ok(Message::Matched { match_text, .. }) => assert_eq!(match_text, "MARK-1."),
        other => panic!("the wait on other: {other:?}"),
    }
    wait_until("other's turn at the broker", HANG, || {
        session_named(&mut c, "other").is_some_and(|s| s.turns == 1)
    });
}

// ---------------------------------------------------------------------------------------------
// c. Stopped clients and subscribers
// ---------------------------------------------------------------------------------------------

#[test]
fn stopped_clients_and_subscribers_slow_no_one_and_leave_nothing_stuck() {
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let _broker = start_broker(&dir, &[]);
    let mut term = burst(&dir, "busy");
    let mut n = 1;
    turn(&mut term, "busy", n);
    let mut c = client(&dir);
    wait_until("busy's first turn", HANG, || {
        session_named(&mut c, "busy").is_some_and(|s| s.turns == 1)
    });
    // A typed turn, and a wait for its marker by a client: the time from typing to the match.
    let mut waits = client(&dir);
    let mut cursor = 0u64;
    let mut typed_to_matched = |term: &mut Term, n: u64| -> Duration {
        let started = Instant::now();
        term.send(format!("{n}\r"));
        let reply = waits.request(|id| Message::WaitFor {
            id,
            session: "busy".into(),
            pattern: format!("MARK-{n}."),
            kind: PatternKind::Literal,
            from_cursor: cursor,
            timeout_ms: Some(10_000),
        });
        let elapsed = started.elapsed();
        match reply {
            Ok(Message::Matched { resume_cursor, .. }) => cursor = resume_cursor,
            other => panic!("wait for MARK-{n}.: {other:?}"),
        }
        term.expect(format!("END {n} of busy\r\n"));
        term.expect("burst> ");
        elapsed
    };
    let before = request_latencies(&mut c, "busy", 100);
    let mut before_typed = Vec::new();
    for _ in 0..5 {
        n += 1;
        before_typed.push(typed_to_matched(&mut term, n));
    }

    // A `wait-for` that will not match for ten minutes, stopped.
    let mut waiter = ctl_command(
        &dir,
        &["wait-for", "busy", "NEVER-PRINTED", "--timeout", "600000"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let _waiter_guard = KillOnDrop(waiter.id());
    wait_until("the wait-for parked", HANG, || waiters(&mut c, "busy") == 1);
    signal_pid(waiter.id(), Signal::SIGSTOP);
    // An `events --follow`, stopped once it has printed an event.
    let follow_out = dir.join("follow.jsonl");
    let mut follower = ctl_command(&dir, &["--json", "events", "--follow"])
        .stdout(std::fs::File::create(&follow_out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _follower_guard = KillOnDrop(follower.id());
    wait_until("the follower printed an event", HANG, || {
        c.request(|id| Message::Capture {
            id,
            session: "busy".into(),
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        std::fs::metadata(&follow_out).is_ok_and(|m| m.len() > 0)
    });
    signal_pid(follower.id(), Signal::SIGSTOP);
    // A raw subscription that never reads.
    let mut raw = client(&dir);
    broker::subscribe_all(&mut raw);

    // A flood of events (each capture is one) until both subscribers are dropped, with requests
    // and typed turns timed in between.
    let mut during = Vec::new();
    let mut during_typed = Vec::new();
    let mut captures = 0u64;
    while events(&mut c, &["subscriber.lagged"]).len() < 2 {
        assert!(
            captures < 60_000,
            "no subscriber.lagged after {captures} events"
        );
        for _ in 0..300 {
            c.request(|id| Message::Capture {
                id,
                session: "busy".into(),
            })
            .unwrap();
            captures += 1;
        }
        during.extend(request_latencies(&mut c, "busy", 10));
        n += 1;
        during_typed.push(typed_to_matched(&mut term, n));
    }
    let (b50, bmax) = p50_max(&before);
    let (d50, dmax) = p50_max(&during);
    let (t50, tmax) = p50_max(&before_typed);
    let (u50, umax) = p50_max(&during_typed);
    eprintln!(
        "{captures} events until both stuck subscribers were dropped; requests p50/max before \
         {b50:?}/{bmax:?}, with stopped peers {d50:?}/{dmax:?}; typed->wait_for matched before \
         {t50:?}/{tmax:?}, with stopped peers {u50:?}/{umax:?}"
    );
    // Every request in between was answered and every typed turn matched its wait (each would
    // have panicked otherwise): the stopped peers held no one up. How fast is printed above, not
    // asserted: on a loaded machine any bound is a guess.
    assert!(!during.is_empty() && !during_typed.is_empty());

    // Resumed, the follower reads what was queued for it and ends (non-zero: it was dropped).
    signal_pid(follower.id(), Signal::SIGCONT);
    let deadline = Instant::now() + HANG;
    let status = loop {
        if let Some(status) = follower.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the resumed follower did not end"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(!status.success(), "a dropped follower exits non-zero");
    let printed = std::fs::read_to_string(&follow_out).unwrap();
    assert!(
        printed.contains("subscriber.lagged"),
        "the follower's last events: {}",
        &printed[printed.len().saturating_sub(400)..]
    );
    // The raw subscription was closed after its subscriber.lagged.
    raw.set_read_timeout(Some(HANG)).unwrap();
    let mut last = None;
    loop {
        match raw.recv() {
            Ok(Message::Event { event, .. }) => last = Some(event.kind),
            Ok(other) => panic!("{other:?}"),
            Err(ProtoError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::WouldBlock
                    || source.kind() == std::io::ErrorKind::TimedOut =>
            {
                panic!("the dropped subscriber's connection stays open")
            }
            Err(_) => break,
        }
    }
    assert_eq!(last.as_deref(), Some("subscriber.lagged"));

    // The stopped wait, resumed, is still parked (its deadline is far); killed, it is gone.
    signal_pid(waiter.id(), Signal::SIGCONT);
    assert_eq!(waiters(&mut c, "busy"), 1);
    let _ = waiter.kill();
    let _ = waiter.wait();
    wait_until("the killed wait-for's wait to go", HANG, || {
        waiters(&mut c, "busy") == 0
    });
    // Nothing is left stuck: a typed turn still matches its wait, requests are still answered.
    n += 1;
    let last_typed = typed_to_matched(&mut term, n);
    let after = request_latencies(&mut c, "busy", 20);
    eprintln!(
        "afterwards: typed->wait_for matched in {last_typed:?}, requests p50/max {:?}",
        p50_max(&after)
    );
}

/// SIGKILLs a process on drop (if it still runs).
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0 as i32), Signal::SIGCONT);
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0 as i32), Signal::SIGKILL);
    }
}

// ---------------------------------------------------------------------------------------------
// d. The spool's disk is full
// ---------------------------------------------------------------------------------------------

/// A small tmpfs mounted over a folder, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Tmpfs, String> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(at)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn a_full_spool_disk_is_reported_once_and_never_stalls_the_session() {
    let dir = test_dir();
    // The whole runtime directory (socket, session folders, spools) on a 256 KiB tmpfs.
    let _tmpfs = match Tmpfs::mount(&dir.runtime(), "256k") {
        Ok(tmpfs) => tmpfs,
        Err(why) => {
            eprintln!(
                "SKIPPED a_full_spool_disk_is_reported_once_and_never_stalls_the_session: a \
                 256 KiB tmpfs is needed as XDG_RUNTIME_DIR and {why} (run as root, or in a \
                 container allowed to mount)"
            );
            return;
        }
    };
    let _brokers = broker_guard(&dir);
    let _broker = start_broker(&dir, &[]);
    let mut term = burst(&dir, "full");
    turn(&mut term, "full", 1);
    let mut c = client(&dir);
    let spool = session_dirs(&dir)
        .first()
        .map(|d| d.join("output.spool"))
        .expect("a session folder");
    wait_until("the spool written", HANG, || {
        std::fs::metadata(&spool).is_ok_and(|m| m.len() > 0)
    });

    // 600 kB on a 256 KiB disk: the spool fills it; every byte of the output still reaches the user.
    let started = Instant::now();
    term.send("big 600000\r");
    term.expect("BIG DONE\r\n");
    term.expect("burst> ");
    eprintln!("600 kB reached the user in {:?}", started.elapsed());
    for n in 2..=4 {
        turn(&mut term, "full", n);
    }
    let output = term.output();
    // Every `x` reached the user: count them between the command and `BIG DONE`, leaving out
    // the wrapper's one report line (its spool path may hold an `x`).
    let find = |needle: &[u8], from: usize| {
        output[from..]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|at| from + at)
    };
    let begin = find(b"big 600000", 0).expect("the command's echo");
    let done = find(b"BIG DONE", begin).expect("BIG DONE");
    let mut region = output[begin..done].to_vec();
    if let Some(at) = region
        .windows(b"clippy-session: spool:".len())
        .position(|w| w == b"clippy-session: spool:")
    {
        let end = region[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(region.len(), |n| at + n);
        region.drain(at..end);
    }
    let xs = region.iter().filter(|&&b| b == b'x').count();
    assert_eq!(xs, 600_000, "every byte of the big output reached the user");
    let reports = output
        .windows(b"clippy-session: spool:".len())
        .filter(|w| *w == b"clippy-session: spool:")
        .count();
    assert_eq!(
        reports,
        1,
        "the spool error is reported once:\n{}",
        support::screen_tail(&output)
    );
    let len = std::fs::metadata(&spool).unwrap().len();
    assert!(len <= 256 * 1024, "the spool is {len} bytes");
    // The session is still detected and relayed: five turns (1, big, 2, 3, 4).
    let id = id_of(&dir, "full");
    wait_until("every turn at the broker", HANG, || {
        session_named(&mut c, "full").and_then(|s| s.last_turn_id) == Some(format!("{id}:5"))
    });
    let (content, _) = broker::turn(&mut c, &format!("{id}:5"));
    assert!(content.ends_with(b"END 4 of full\r\n"));
    term.send("quit\r");
    assert!(term.wait_exit().success());
}

// ---------------------------------------------------------------------------------------------
// e. 200 MB without a newline
// ---------------------------------------------------------------------------------------------

/// A terminal that counts what it receives and keeps only the tail (a [`Term`] keeps it all).
struct CountingTerm {
    master: Arc<PtyMaster>,
    child: clippy_pty::Child,
    count: Arc<AtomicU64>,
    tail: Arc<Mutex<Vec<u8>>>,
    stop: Arc<AtomicBool>,
}

impl CountingTerm {
    fn start(dir: &TempDir, args: &[String]) -> CountingTerm {
        let pair = clippy_pty::openpty(WinSize::new(120, 40)).unwrap();
        let mut spec = CommandSpec::new(support::wrapper_bin()).args(args);
        for (key, _) in std::env::vars_os() {
            spec = spec.env_remove(key);
        }
        for (key, value) in support::base_env(dir) {
            spec = spec.env(key, value);
        }
        let child = pair.slave.spawn(&spec).unwrap();
        drop(pair.slave);
        let term = CountingTerm {
            master: Arc::new(pair.master),
            child,
            count: Arc::new(AtomicU64::new(0)),
            tail: Arc::new(Mutex::new(Vec::new())),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (master, count, tail, stop) = (
            Arc::clone(&term.master),
            Arc::clone(&term.count),
            Arc::clone(&term.tail),
            Arc::clone(&term.stop),
        );
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while !stop.load(Ordering::Relaxed) {
                let mut fds = [nix::poll::PollFd::new(
                    master.as_fd(),
                    nix::poll::PollFlags::POLLIN,
                )];
                match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(20u16)) {
                    Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                    Ok(_) => {}
                    Err(_) => return,
                }
                match (&*master).read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        count.fetch_add(n as u64, Ordering::Relaxed);
                        let mut tail = tail.lock().unwrap();
                        tail.extend_from_slice(&buf[..n]);
                        let excess = tail.len().saturating_sub(1 << 16);
                        tail.drain(..excess);
                    }
                }
            }
        });
        term
    }

    fn send(&self, bytes: &[u8]) {
        use std::io::Write;
        (&*self.master).write_all(bytes).unwrap();
    }

    fn tail_has(&self, needle: &[u8]) -> bool {
        support::find(&self.tail.lock().unwrap(), needle).is_some()
    }
}

impl Drop for CountingTerm {
    fn drop(&mut self) {
        support::kill_tree(self.child.pid());
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn a_200_mb_line_keeps_memory_bounded_and_its_turn_is_truncated() {
    // 200 MB (about 3 s in a debug build on 2 cores); CLIPPY_FLOOD_BYTES overrides it.
    let total: u64 = std::env::var("CLIPPY_FLOOD_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000_000);
    const MAX_TURN: u64 = 4 * 1024 * 1024;
    const BOUND_KIB: u64 = 100 * 1024;
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let broker_process = start_broker(&dir, &[]);
    let term = CountingTerm::start(&dir, &burst_args("flood"));
    wait_until("the first prompt", HANG, || term.tail_has(b"burst> "));
    let id = id_of(&dir, "flood");
    let mut c = client(&dir);
    let wrapper = term.child.pid();
    let start = (memory_kib(wrapper), memory_kib(broker_process.pid()));

    let before = term.count.load(Ordering::Relaxed);
    let started = Instant::now();
    term.send(format!("big {total}\r").as_bytes());
    // While it streams: the broker answers, memory is sampled.
    let mut slowest = Duration::ZERO;
    // Answers that came while bytes of the flood were still on their way: the broker is not
    // held up until the flood ends (how fast it answers is the benchmarks' business).
    let mut answered_during = 0u32;
    let mut peak = (0u64, 0u64);
    // A guard against a hang, not a speed test: a wrapper that leads its own session yields its
    // CPU to everything else on a loaded machine (CONTRACTS/PTY.md).
    let deadline = Instant::now() + Duration::from_secs(600);
    while !term.tail_has(b"BIG DONE\r\nburst> ") {
        assert!(
            Instant::now() < deadline,
            "the flood did not end: {} of {total} bytes arrived",
            term.count.load(Ordering::Relaxed) - before
        );
        let asked = Instant::now();
        match c.request(|rid| Message::SessionStatus {
            id: rid,
            session: "flood".into(),
        }) {
            Ok(Message::Status { .. }) => {}
            other => panic!("session_status during the flood: {other:?}"),
        }
        slowest = slowest.max(asked.elapsed());
        if term.count.load(Ordering::Relaxed) - before < total {
            answered_during += 1;
        }
        peak.0 = peak.0.max(memory_kib(wrapper).0);
        peak.1 = peak.1.max(memory_kib(broker_process.pid()).0);
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = started.elapsed();
    let arrived = term.count.load(Ordering::Relaxed) - before;
    wait_until("the flood's turn at the broker", HANG, || {
        session_named(&mut c, "flood").and_then(|s| s.last_turn_id) == Some(format!("{id}:1"))
    });
    let (content, meta) = broker::turn(&mut c, &format!("{id}:1"));
    let end = (memory_kib(wrapper), memory_kib(broker_process.pid()));
    eprintln!(
        "{total} bytes without a newline: {arrived} bytes reached the terminal in {took:?}; \
         wrapper RSS start/peak/end {}/{}/{} KiB (HWM {} KiB), broker {}/{}/{} KiB (HWM {} KiB); \
         {answered_during} session_status answered during it, the slowest in {slowest:?}; turn {} bytes, truncated {}",
        start.0.0,
        peak.0,
        end.0.0,
        end.0.1,
        start.1.0,
        peak.1,
        end.1.0,
        end.1.1,
        meta.byte_length,
        meta.truncated
    );
    // Every byte reached the user: the echo, the line, "\r\nBIG DONE\r\n", the prompt.
    assert!(
        arrived >= total + b"\r\nBIG DONE\r\nburst> ".len() as u64,
        "{arrived} of {total} bytes arrived"
    );
    assert!(meta.truncated, "a {total}-byte turn is truncated");
    assert!(
        content.len() as u64 <= MAX_TURN && content.len() as u64 >= MAX_TURN / 2,
        "the truncated turn holds {} bytes",
        content.len()
    );
    assert!(
        content.iter().all(|&b| b == b'x'),
        "the turn is the line's start"
    );
    assert!(
        end.0.1 < BOUND_KIB && end.1.1 < BOUND_KIB,
        "peak memory: wrapper {} KiB, broker {} KiB (bound {BOUND_KIB} KiB)",
        end.0.1,
        end.1.1
    );
    assert!(
        answered_during > 0,
        "the broker answered no session_status until the flood had ended"
    );
    // Still responsive afterwards.
    term.send(b"1\r");
    wait_until("a burst after the flood", HANG, || {
        term.tail_has(b"END 1 of flood\r\nburst> ")
    });
}

// ---------------------------------------------------------------------------------------------
// f. The broker stalls (SIGSTOP) longer than the wrapper's write timeout
// ---------------------------------------------------------------------------------------------

/// On 2 busy cores the broker can stall for seconds (the soak, `cargo xtask soak`, sees it). A
/// wrapper waits for a slow broker: it keeps its connection, so the session is never gone from
/// the broker's table. Here the stall is made on purpose (the broker is stopped for 4 s while a
/// 1 MB turn is reported, then resumed); every later turn must reach it, and the session must
/// have been registered once and never have left.
#[test]
fn a_broker_stalled_for_seconds_keeps_the_session_and_gets_every_later_turn() {
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let broker_process = start_broker(&dir, &[]);
    let mut term = burst(&dir, "stall");
    turn(&mut term, "stall", 1);
    let id = id_of(&dir, "stall");
    let mut c = client(&dir);
    wait_until("the first turn at the broker", HANG, || {
        session_named(&mut c, "stall").is_some_and(|s| s.turns == 1)
    });
    drop(c);

    signal_pid(broker_process.pid(), Signal::SIGSTOP);
    // A 1 MB turn (raw content and its text view) cannot fit the socket's buffer.
    term.send("big 1000000 4096\r");
    term.expect("BIG DONE\r\n");
    term.expect("burst> ");
    // Turns and progress keep coming while the broker is stopped.
    turn(&mut term, "stall", 2);
    std::thread::sleep(Duration::from_secs(4));
    signal_pid(broker_process.pid(), Signal::SIGCONT);

    turn(&mut term, "stall", 3);
    let mut c = client(&dir);
    let want = format!("{id}:4");
    let mut last;
    let deadline = Instant::now() + HANG;
    loop {
        last = session_named(&mut c, "stall");
        if last.as_ref().and_then(|s| s.last_turn_id.as_deref()) == Some(want.as_str()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{HANG:?} after the broker resumed, turn {want} has not reached it; the broker lists \
             the session as {last:?}"
        );
        std::thread::sleep(Duration::from_millis(15));
    }
    let comings_and_goings: Vec<String> = events(&mut c, &["session.registered", "session.exited"])
        .into_iter()
        .filter(|e| e.session.as_deref() == Some(id.as_str()))
        .map(|e| e.kind)
        .collect();
    assert_eq!(comings_and_goings, ["session.registered"]);
}

// ---------------------------------------------------------------------------------------------
// g. A program that does not read its input
// ---------------------------------------------------------------------------------------------

/// What is injected into a program that does not read waits in its wrapper, up to about
/// `INPUT_BACKLOG_LIMIT`; then the broker answers `busy` instead of piling more on. Once the
/// program reads, every byte it was given arrives, in order, and input flows again.
#[test]
fn a_program_that_does_not_read_gets_busy_instead_of_unbounded_input() {
    let dir = test_dir();
    let _brokers = broker_guard(&dir);
    let _broker = start_broker(&dir, &[]);
    let flag = dir.path().join("read-now");
    let script = format!(
        "import os, time, tty\n\
         tty.setraw(0)\n\
         print('deaf> ', end='', flush=True)\n\
         while not os.path.exists({flag:?}):\n    time.sleep(0.05)\n\
         total = 0\n\
         while True:\n    data = os.read(0, 65536)\n    total += len(data)\n    \
         if data.endswith(b'#'):\n        break\n\
         print('got', total, flush=True)\n\
         time.sleep(60)\n",
        flag = flag.to_str().unwrap()
    );
    let mut term = Spawn::wrapper(
        &dir,
        ["--name", "deaf", "--", python(), "-c", script.as_str()],
    )
    .start();
    term.expect("deaf> ");
    let id = id_of(&dir, "deaf");
    let mut c = client(&dir);
    let send = |c: &mut clippy_proto::Client, data: Vec<u8>| {
        c.request(|rid| Message::Send {
            id: rid,
            session: id.clone(),
            data,
            enter: false,
        })
    };

    let chunk = vec![b'x'; 256 * 1024];
    let mut accepted = 0usize;
    let refusal = loop {
        match send(&mut c, chunk.clone()) {
            Ok(_) => accepted += chunk.len(),
            Err(e) => break e,
        }
        assert!(
            accepted < 16 * 1024 * 1024,
            "{accepted} bytes accepted for a program that reads none"
        );
    };
    assert!(
        matches!(
            &refusal,
            ProtoError::Broker { reason: clippy_proto::ErrorReason::Busy, message, .. }
                if message.contains("has not taken the input")
        ),
        "{refusal:?}"
    );
    // The contract: `busy` only once at least the limit waits. Where it waits (the broker's
    // queue, the socket, the wrapper) depends on scheduling; frame headers count in the
    // broker's queue, so the refusal may come with exactly the limit accepted.
    assert!(
        accepted >= clippy_proto::INPUT_BACKLOG_LIMIT,
        "busy after {accepted} bytes, before the {} byte backlog limit",
        clippy_proto::INPUT_BACKLOG_LIMIT
    );

    std::fs::write(&flag, b"").unwrap();
    let deadline = Instant::now() + HANG;
    while send(&mut c, b"#".to_vec()).is_err() {
        assert!(Instant::now() < deadline, "input never flowed again");
        std::thread::sleep(Duration::from_millis(20));
    }
    term.expect(format!("got {}", accepted + 1));
}
