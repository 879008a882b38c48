//! The history store's faults, against a real broker: a store that cannot be opened, one whose
//! file system turns read-only, one on a full disk. Live operation must lose nothing and nothing
//! may crash; the problem shows in `history_status`, and writes resume once the cause is gone.
//!
//! The read-only and full-disk cases mount a small tmpfs (as root, with the right to mount);
//! where that cannot be done they print why and pass, as the desktop tests do without a display.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use clippy_proto::{Client, ErrorReason, Format, HistoryInfo, Message, ProtoError};

use clippy_testkit::Tmpfs;
use common::{Broker, TempDir, WAIT, report, runtime_dir};

/// `--config` with ages kept for ever: the harness's turns are stamped in 2023, which the
/// default 90 days would prune at the next start.
fn keep_for_ever(runtime: &TempDir) -> Vec<String> {
    let config = runtime.path().join("config.toml");
    fs::write(&config, "[history]\nmax_age_days = 0\n").expect("config");
    vec!["--config".into(), config.display().to_string()]
}

fn start(runtime: TempDir) -> Broker {
    let args = keep_for_ever(&runtime);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Broker::start_in(runtime, &args)
}

fn history_status(client: &mut Client) -> HistoryInfo {
    match client
        .request(|id| Message::HistoryStatus { id })
        .expect("history_status")
    {
        Message::HistoryState { history, .. } => history,
        other => panic!("{other:?}"),
    }
}

/// The ids of the stored turns, newest first.
fn stored(client: &mut Client) -> Vec<String> {
    match client
        .request(|id| Message::History {
            id,
            session: None,
            since: None,
            until: None,
            limit: Some(1000),
        })
        .expect("history")
    {
        Message::HistoryTurns { turns, .. } => turns.into_iter().map(|t| t.turn_id).collect(),
        other => panic!("{other:?}"),
    }
}

fn content(client: &mut Client, turn_id: &str) -> Vec<u8> {
    match client
        .request(|id| Message::GetTurn {
            id,
            turn_id: turn_id.into(),
            format: Format::Raw,
        })
        .expect("get_turn")
    {
        Message::Turn { content, .. } => content.into_vec(),
        other => panic!("{other:?}"),
    }
}

/// Polls `history_status` until `done` says so (the history thread reports asynchronously).
fn status_until(
    client: &mut Client,
    what: &str,
    done: impl Fn(&HistoryInfo) -> bool,
) -> HistoryInfo {
    let deadline = Instant::now() + WAIT;
    loop {
        let status = history_status(client);
        if done(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}: {status:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A tmpfs mounted at `runtime/state` (the broker's `XDG_STATE_HOME` in these tests), unmounted
/// on drop; `None` (with the reason printed) where this process may not mount.
fn mount_state(runtime: &Path, size: &str) -> Option<Tmpfs> {
    Tmpfs::mount(&runtime.join("state"), size)
        .map_err(|why| eprintln!("skipped: cannot mount a tmpfs here ({why})"))
        .ok()
}

#[test]
fn a_store_that_cannot_be_opened_leaves_the_broker_serving_and_says_why() {
    let runtime = runtime_dir();
    // The store's folder cannot be made: XDG_STATE_HOME/clippy is a file.
    fs::create_dir_all(runtime.path().join("state")).expect("state");
    fs::write(runtime.path().join("state").join("clippy"), b"not a folder").expect("file");
    let broker = start(runtime);
    let mut w = broker.wrapper("aaa", Some("rev"), false);
    assert_eq!(report(&mut w, "aaa", 1, b"live turn", "live turn"), "aaa:1");
    let mut client = broker.client();
    assert_eq!(content(&mut client, "aaa:1"), b"live turn");
    let status = history_status(&mut client);
    assert!(status.enabled, "{status:?}");
    assert!(status.problem.is_some(), "{status:?}");
    match client.request(|id| Message::Search {
        id,
        query: "live".into(),
        session: None,
        since: None,
        until: None,
        limit: None,
    }) {
        Err(ProtoError::Broker {
            reason, message, ..
        }) => {
            assert_eq!(reason, ErrorReason::HistoryFailed);
            assert!(message.contains("history store"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        broker.stderr().contains("history: not kept"),
        "{}",
        broker.stderr()
    );
}

/// A store with 40 turns of a few KiB each, made and closed as a broker leaves it.
fn make_store(dir: &Path) {
    use clippy_history::{Record, SessionRecord, Store, TurnRecord};
    let mut store = Store::open(dir).expect("a store");
    let command = vec!["bash".to_owned()];
    let text = "the migration drops a column and the reviewer asks why ".repeat(60);
    let ids: Vec<String> = (1..=40).map(|seq| format!("old:{seq}")).collect();
    let mut records = vec![Record::Session(SessionRecord {
        key: "old",
        name: Some("old"),
        command: &command,
        cwd: None,
        started_at: 1_000,
    })];
    for (seq, id) in (1u64..).zip(&ids) {
        records.push(Record::Turn(TurnRecord {
            turn_id: id,
            session: "old",
            seq,
            started_at: None,
            ended_at: 1_000 + seq,
            input: None,
            content: text.as_bytes(),
            text: &text,
            message: None,
            interrupted: false,
            truncated: false,
            exit_code: None,
            cwd: None,
            spool_span: None,
        }));
    }
    store.apply(&records).expect("stored");
}

/// The store's file damaged while no broker ran: cut in half, every page after the first
/// overwritten with garbage, or replaced by another program's SQLite database. The broker starts
/// and keeps live turns; `history` (what `clippy-ctl history` asks) answers `history_failed`
/// naming the store and what is wrong; the broker serves on after it.
#[test]
fn a_damaged_store_file_leaves_the_broker_serving_and_says_why() {
    for damage in ["truncated", "garbage pages", "another program's database"] {
        let runtime = runtime_dir();
        let dir = runtime.path().join("state").join("clippy");
        make_store(&dir);
        let db = dir.join(clippy_history::DB_FILE);
        let mut bytes = fs::read(&db).expect("the store's file");
        assert!(bytes.len() > 16 * 4096, "{damage}: {} bytes", bytes.len());
        match damage {
            "truncated" => bytes.truncate(bytes.len() / 2),
            "garbage pages" => {
                for page in bytes.chunks_mut(4096).skip(1) {
                    page.fill(0x5a);
                }
            }
            _ => {
                fs::remove_file(&db).expect("remove the store");
                let conn = rusqlite::Connection::open(&db).expect("another program's database");
                conn.execute_batch(
                    "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); \
                     INSERT INTO notes(body) VALUES ('a note');",
                )
                .expect("its tables");
                drop(conn);
                bytes = fs::read(&db).expect("read it");
            }
        }
        fs::write(&db, &bytes).expect("damage the store");
        let broker = start(runtime);
        let mut w = broker.wrapper("aaa", Some("live"), false);
        assert_eq!(report(&mut w, "aaa", 1, b"live turn", "live turn"), "aaa:1");
        let mut client = broker.client();
        assert_eq!(content(&mut client, "aaa:1"), b"live turn", "{damage}");
        match client.request(|id| Message::History {
            id,
            session: None,
            since: None,
            until: None,
            limit: Some(1000),
        }) {
            Err(ProtoError::Broker {
                reason, message, ..
            }) => {
                assert_eq!(reason, ErrorReason::HistoryFailed, "{damage}: {message}");
                assert!(message.contains("history store"), "{damage}: {message}");
                assert!(
                    message.contains("damaged") || message.contains("another program's"),
                    "{damage}: {message}"
                );
            }
            other => panic!("{damage}: {other:?}"),
        }
        // Still serving, the live turn still there.
        assert_eq!(content(&mut client, "aaa:1"), b"live turn", "{damage}");
        assert_eq!(
            report(&mut w, "aaa", 2, b"another", "another"),
            "aaa:2",
            "{damage}"
        );
    }
}

#[test]
fn a_store_on_a_read_only_disk_loses_no_live_turn() {
    let runtime = runtime_dir();
    let Some(tmpfs) = mount_state(runtime.path(), "16m") else {
        return;
    };
    let mut broker = start(runtime);
    let mut w = broker.wrapper("aaa", Some("rev"), false);
    report(&mut w, "aaa", 1, b"before", "before");
    assert_eq!(stored(&mut broker.client()), ["aaa:1"]);
    drop(w);
    broker.stop();
    // A file system cannot turn read-only under a file open for writing: between brokers.
    tmpfs.remount("ro").expect("remount ro");
    let runtime = broker.take_runtime();
    let mut broker = start(runtime);
    let mut w = broker.wrapper("bbb", Some("rev"), false);
    let mut client = broker.client();
    for seq in 1..=3 {
        // Each is acknowledged (report waits for turn_recorded) and served live.
        let text = format!("while read-only {seq}");
        let turn_id = report(&mut w, "bbb", seq, text.as_bytes(), &text);
        assert_eq!(content(&mut client, &turn_id), text.as_bytes());
    }
    let status = history_status(&mut client);
    assert!(status.enabled && status.problem.is_some(), "{status:?}");
    assert!(
        broker.stderr().contains("history: not kept"),
        "{}",
        broker.stderr()
    );
    drop(w);
    broker.stop();

    tmpfs.remount("rw").expect("remount rw");
    let runtime = broker.take_runtime();
    let broker = start(runtime);
    let mut client = broker.client();
    assert_eq!(history_status(&mut client).problem, None);
    // What was stored before is all there; what came while it could not be written is not.
    assert_eq!(stored(&mut client), ["aaa:1"], "{}", broker.stderr());
    assert_eq!(content(&mut client, "aaa:1"), b"before");
}

#[test]
fn a_store_on_a_full_disk_loses_no_live_turn() {
    let runtime = runtime_dir();
    let Some(tmpfs) = mount_state(runtime.path(), "4m") else {
        return;
    };
    let broker = start(runtime);
    let mut w = broker.wrapper("aaa", Some("rev"), false);
    let mut client = broker.client();
    report(&mut w, "aaa", 1, b"first", "first");
    // Fill the disk, then keep reporting turns of 64 KiB until the store says it is full.
    let filler = tmpfs.path().join("filler");
    let chunk = vec![b'x'; 64 * 1024];
    let mut file = fs::File::create(&filler).expect("filler");
    while std::io::Write::write_all(&mut file, &chunk).is_ok() {}
    drop(file);
    let big = vec![b'y'; 64 * 1024];
    let mut seq = 2;
    let deadline = Instant::now() + WAIT;
    loop {
        let turn_id = report(&mut w, "aaa", seq, &big, "y");
        assert_eq!(content(&mut client, &turn_id), big, "served live");
        seq += 1;
        if history_status(&mut client).problem.is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "the store never filled up");
    }
    let status = history_status(&mut client);
    assert!(status.enabled, "{status:?}");
    // Space again: the next turn is stored.
    fs::remove_file(&filler).expect("free the disk");
    report(&mut w, "aaa", seq, b"after", "after");
    status_until(&mut client, "the problem cleared", |s| s.problem.is_none());
    assert!(stored(&mut client).contains(&format!("aaa:{seq}")));
}

/// The broker's peak resident memory (`VmHWM`), KiB.
fn peak_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_stalled_store_holds_acknowledgements_and_stores_every_turn_once_it_catches_up() {
    use std::collections::BTreeSet;
    use std::io::Write as _;

    use clippy_proto::Role;
    use common::{Raw, session_info, turn};

    // The history thread waits at a FIFO before each batch: closed, the store is stalled.
    let runtime = runtime_dir();
    let gate_path = runtime.path().join("history-gate");
    nix::unistd::mkfifo(&gate_path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let mut args = keep_for_ever(&runtime);
    args.extend(["--ring-depth".into(), "4".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let broker = Broker::start_with(
        runtime,
        &args,
        &[(clippy_broker::history::TEST_GATE_ENV, &gate_path)],
    );
    // Opening for writing waits for the broker's end: its history thread is up then.
    let mut gate = fs::OpenOptions::new()
        .write(true)
        .open(&gate_path)
        .expect("the gate");
    let mut client = broker.client();
    let before = peak_kib(broker.pid());

    let mut wrapper = Raw::hello(&broker.socket, Role::Wrapper);
    wrapper.send(&Message::Register {
        id: 2,
        session: session_info("stall", None, false),
        progress: None,
        resends: true,
    });
    assert_eq!(wrapper.recv(), Some(Message::Done { id: 2 }));
    // 120 MiB of turns, 2 MiB each, while the store writes nothing.
    const TURNS: u64 = 60;
    let content = vec![b'c'; 1 << 20];
    let text = "t".repeat(1 << 20);
    let completed = |seq: u64| Message::TurnCompleted {
        id: 3,
        session: "stall".into(),
        turn: turn(seq, &content, &text),
    };
    for seq in 1..=TURNS {
        wrapper.send(&completed(seq));
    }
    let deadline = Instant::now() + WAIT;
    loop {
        let sessions = match client.request(|id| Message::ListSessions { id }) {
            Ok(Message::Sessions { sessions, .. }) => sessions,
            other => panic!("{other:?}"),
        };
        if sessions
            .iter()
            .any(|s| s.last_turn_id.as_deref() == Some("stall:60"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the turns did not reach the broker"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Nothing acknowledged while nothing is stored.
    wrapper.stream.set_nonblocking(true).expect("non-blocking");
    let mut byte = [0u8; 1];
    assert!(
        std::io::Read::read(&mut wrapper.stream, &mut byte).is_err(),
        "nothing is acknowledged while the store writes nothing"
    );
    wrapper.stream.set_nonblocking(false).expect("blocking");
    // The event loop says so (history_status would wait for the stalled thread).
    assert!(
        broker
            .stderr()
            .contains("turns are acknowledged once it has caught up"),
        "{}",
        broker.stderr()
    );
    // Bounded: what waits for the store (12 MiB of turns at most) and a ring of 4 turns, not
    // the 120 MiB sent.
    let grown_mib = peak_kib(broker.pid()).saturating_sub(before) / 1024;
    assert!(
        grown_mib < 80,
        "the broker grew by {grown_mib} MiB while its store was stalled"
    );

    // The store goes on. The turns it had queued are acknowledged, the held ones asked for
    // again, a portion at a time; the wrapper sends those it has no acknowledgement for, as
    // often as asked.
    gate.write_all(b"o").expect("open the gate");
    let mut unacked: BTreeSet<u64> = (1..=TURNS).collect();
    let mut asked = 0;
    let mut next_asked = None;
    // A turn here weighs 2 MiB and a little more: a portion is as many as fit the budget.
    let portion = (clippy_broker_core::RESEND_BUDGET / (2 << 20)) as u64;
    while !unacked.is_empty() {
        match wrapper.recv() {
            Some(Message::TurnRecorded { turn_id, .. }) => {
                let seq: u64 = turn_id
                    .strip_prefix("stall:")
                    .and_then(|s| s.parse().ok())
                    .expect("a turn id");
                unacked.remove(&seq);
            }
            Some(Message::ResendTurns { from, to, .. }) => {
                asked += 1;
                if asked == 1 {
                    // What was acknowledged before the first request is exactly what came
                    // before the held turns.
                    assert_eq!(unacked, (from..=TURNS).collect(), "from {from}");
                }
                // Oldest first, each held turn once, never more than the budget at once.
                assert_eq!(next_asked.unwrap_or(from), from, "asked in order");
                assert!(
                    to >= from && to - from < portion,
                    "asked for {from} to {to}"
                );
                next_asked = Some(to + 1);
                for seq in unacked.clone().range(from..=to) {
                    wrapper.send(&completed(*seq));
                }
            }
            other => panic!("{other:?} with {unacked:?} unacknowledged"),
        }
    }
    assert!(asked >= 1, "turns were held");
    let stored = stored(&mut client);
    assert_eq!(stored.len(), 60, "{stored:?}");
    assert_eq!(history_status(&mut client).problem, None);
    assert!(
        broker.stderr().contains("the wrappers are asked to send"),
        "{}",
        broker.stderr()
    );
}

#[test]
fn turns_acknowledged_into_the_journal_are_served_from_it_and_stored_by_the_next_broker_after_a_kill()
 {
    // The history thread journals and acknowledges but never writes the journal into the
    // store: a store as slow as can be. The broker is then killed with that backlog.
    let runtime = runtime_dir();
    let mut args = keep_for_ever(&runtime);
    args.extend(["--ring-depth".into(), "4".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let flag = runtime.path().join("no-drain");
    let mut broker = Broker::start_with(
        runtime,
        &args,
        &[(clippy_broker::history::TEST_NO_DRAIN_ENV, &flag)],
    );
    let mut w = broker.wrapper("jjj", Some("rev"), false);
    const TURNS: u64 = 40;
    for seq in 1..=TURNS {
        // `report` returns once the turn is acknowledged (turn_recorded).
        let text = format!("journaled {seq} ").repeat(200);
        report(&mut w, "jjj", seq, text.as_bytes(), &text);
    }
    let store_dir = broker.runtime().join("state/clippy");
    let journal = store_dir.join(clippy_history::JOURNAL_FILE);
    let journaled = fs::metadata(&journal).map(|m| m.len()).unwrap_or(0);
    assert!(journaled > 0, "nothing in {}", journal.display());
    let mut client = broker.client();
    assert_eq!(
        stored(&mut client),
        Vec::<String>::new(),
        "the store was written"
    );
    // A turn out of the ring (4 deep) and not in the store is read from the journal, at once.
    let first = "journaled 1 ".repeat(200);
    assert_eq!(content(&mut client, "jjj:1"), first.as_bytes());
    drop(w);
    broker.kill();

    // Half a frame more, as if the broker had been killed in the middle of an append.
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .expect("the journal");
    std::io::Write::write_all(&mut file, &[200, 0, 0, 0, 1, 2, 3, 4, 9]).expect("a torn frame");
    drop(file);

    let runtime = broker.take_runtime();
    let broker = start(runtime);
    let mut client = broker.client();
    // A query sees every record journaled before it.
    let mut ids = stored(&mut client);
    ids.sort_by_key(|id| id.trim_start_matches("jjj:").parse::<u64>().unwrap_or(0));
    let expected: Vec<String> = (1..=TURNS).map(|seq| format!("jjj:{seq}")).collect();
    assert_eq!(ids, expected, "{}", broker.stderr());
    let text = format!("journaled {TURNS} ").repeat(200);
    assert_eq!(
        content(&mut client, &format!("jjj:{TURNS}")),
        text.as_bytes()
    );
    assert!(
        broker.stderr().contains("journaled by an earlier broker"),
        "{}",
        broker.stderr()
    );
    // Written in, the journal is emptied.
    status_until(&mut client, "the journal emptied", |_| {
        fs::metadata(&journal).map(|m| m.len()).unwrap_or(1) == 0
    });
}

/// The nice value of each of `pid`'s threads, by thread name.
fn thread_nices(pid: u32) -> Vec<(String, i32)> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| {
            let name = fs::read_to_string(task.path().join("comm")).ok()?;
            let stat = fs::read_to_string(task.path().join("stat")).ok()?;
            // After the name: state is field 3, nice field 19.
            let nice = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(16)?
                .parse()
                .ok()?;
            Some((name.trim().to_owned(), nice))
        })
        .collect()
}

#[test]
fn the_store_thread_runs_below_the_event_loops_priority_and_the_journal_at_it() {
    let broker = start(runtime_dir());
    // The kernel keeps a thread's name to 15 bytes.
    let nice_of = |nices: &[(String, i32)], name: &str| {
        let name = &name[..name.len().min(15)];
        nices.iter().find(|(n, _)| n == name).map(|(_, nice)| *nice)
    };
    let deadline = Instant::now() + WAIT;
    loop {
        let nices = thread_nices(broker.pid());
        let main = nice_of(&nices, "clippy-broker");
        let journal = nice_of(&nices, "clippy-broker-history");
        let store = nice_of(&nices, "clippy-broker-store");
        if let Some(main) = main
            && main >= clippy_broker::history::NICE
        {
            eprintln!("the broker already runs at nice {main}: nothing to lower, nothing to check");
            return;
        }
        if store == Some(clippy_broker::history::NICE) {
            assert!(main < store, "{nices:?}");
            // Journaling below the loop fell behind under load, and the turns it could not
            // acknowledge took the broker and its wrappers over their memory bounds.
            assert_eq!(journal, main, "{nices:?}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the store thread was not lowered to nice {}: {nices:?}",
            clippy_broker::history::NICE
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
