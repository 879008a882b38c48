//! The store when things go wrong: a writer killed mid-write, a read-only folder, a full disk,
//! a database of a newer clippy or no database at all; and the modes of its files.
#![allow(missing_docs)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use clippy_history::{HistoryError, HistoryQuery, Record, SearchQuery, Store};
use clippy_testkit::Tmpfs;
use common::{Scratch, is_root, turn};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_folder_is_private_and_so_are_the_files() {
    let scratch = Scratch::new("modes");
    let dir = scratch.store_dir();
    let mut store = Store::open(&dir).expect("open");
    store
        .record_turn(&turn("s:1", "s", 1, 1, "hello", b"hello"))
        .expect("turn");
    assert_eq!(mode(&dir), 0o700);
    for file in [
        "history.sqlite3",
        "history.sqlite3-wal",
        "history.sqlite3-shm",
    ] {
        assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
    }
    drop(store);

    // Looser modes (an older version, a user's chmod) are narrowed.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let db = dir.join("history.sqlite3");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let store = Store::open(&dir).expect("open again");
    assert_eq!(mode(&dir), 0o700);
    for file in [
        "history.sqlite3",
        "history.sqlite3-wal",
        "history.sqlite3-shm",
    ] {
        assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
    }
    assert_eq!(
        store.get_turn("s:1").expect("read").map(|t| t.text),
        Some("hello".into())
    );
}

/// Set in the child of [`a_killed_writer_loses_no_committed_turn`]: the store's folder.
const CHILD_DIR: &str = "CLIPPY_HISTORY_TEST_KILLED_WRITER";
/// Turns per batch the child writes.
const BATCH: u64 = 5;

/// Not a test of its own: the child process of [`a_killed_writer_loses_no_committed_turn`],
/// which runs this test binary with [`CHILD_DIR`] set. It writes batches of [`BATCH`] turns
/// for ever, printing `committed N` after each commit, until it is killed.
#[test]
fn killed_writer_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let mut store = Store::open(Path::new(&dir)).expect("open");
    let text = "a turn of the writer that gets killed, with some words to index ".repeat(30);
    let mut stdout = std::io::stdout();
    for batch in 0u64.. {
        let ids: Vec<String> = (1..=BATCH)
            .map(|i| format!("k:{}", batch * BATCH + i))
            .collect();
        let records: Vec<Record<'_>> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let seq = batch * BATCH + i as u64 + 1;
                Record::Turn(turn(id, "k", seq, seq, &text, text.as_bytes()))
            })
            .collect();
        store.apply(&records).expect("write");
        writeln!(stdout, "committed {}", (batch + 1) * BATCH).expect("stdout");
        stdout.flush().expect("stdout");
    }
}

#[test]
fn a_killed_writer_loses_no_committed_turn() {
    let scratch = Scratch::new("killed");
    let dir = scratch.store_dir();
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "killed_writer_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the writer");
    let stdout = child.stdout.take().expect("stdout");
    let mut committed = 0u64;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        if let Some(n) = line.strip_prefix("committed ") {
            committed = n.parse().expect("a count");
            if committed >= 400 {
                break;
            }
        }
    }
    // SIGKILL, most likely in the middle of a batch.
    child.kill().expect("kill");
    let status = child.wait().expect("wait");
    assert!(!status.success());
    assert!(committed >= 400, "the writer stopped at {committed}");

    let store = Store::open(&dir).expect("reopen");
    assert!(store.integrity_problems().expect("check").is_empty());
    let stored = store.stats().expect("stats").turns;
    println!("killed after {committed} turns were reported committed; {stored} stored");
    assert!(
        stored >= committed,
        "{stored} stored, {committed} committed"
    );
    assert_eq!(stored % BATCH, 0, "whole batches only: {stored}");
    for seq in 1..=stored {
        assert!(
            store.get_turn(&format!("k:{seq}")).expect("read").is_some(),
            "k:{seq}"
        );
    }
    assert_eq!(store.max_turn_seq_for("k").expect("max"), stored);
    let hits = store.search(&SearchQuery::new("killed")).expect("search");
    assert!(!hits.is_empty());
}

#[test]
fn a_read_only_folder_is_a_read_only_error() {
    let scratch = Scratch::new("read-only");
    let dir = scratch.path().join("ro").join("clippy");
    let made =
        Store::open(&dir).and_then(|mut s| s.record_turn(&turn("s:1", "s", 1, 1, "kept", b"")));
    made.expect("a store to make read-only");

    let _mount; // Unmounted at the end, when there is one.
    if is_root() {
        // Root writes through file modes: use a read-only file system instead.
        let tmpfs = match Tmpfs::mount(&scratch.path().join("mnt"), "4m") {
            Ok(t) => t,
            Err(why) => {
                println!("SKIPPED a_read_only_folder_is_a_read_only_error: root, and {why}");
                return;
            }
        };
        let existing = tmpfs.path().join("clippy");
        Store::open(&existing)
            .and_then(|mut s| s.record_turn(&turn("s:1", "s", 1, 1, "kept", b"")))
            .expect("a store on the tmpfs");
        tmpfs.remount("ro").expect("remount read-only");
        check_read_only(&existing, &tmpfs.path().join("new").join("clippy"));
        _mount = tmpfs;
    } else {
        let parent = scratch.path().join("ro");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).expect("chmod");
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o500)).expect("chmod");
        check_read_only(&dir, &parent.join("new"));
    }
}

/// Opening the store in `existing` (a store made before the folder went read-only) and in `new`
/// (not there yet, in a read-only folder) fails with [`HistoryError::ReadOnly`].
fn check_read_only(existing: &Path, new: &Path) {
    for dir in [existing, new] {
        match Store::open(dir) {
            Err(e) => {
                println!("opening {}: {e}", dir.display());
                assert!(e.is_read_only(), "{dir:?}: {e:?}");
                assert!(!e.is_disk_full());
                let message = e.to_string();
                assert!(message.contains("read-only"), "{message}");
                assert!(message.contains(&*dir.to_string_lossy()), "{message}");
            }
            Ok(mut store) => {
                // SQLite may open an existing database read-only: then writes must say so.
                let e = store
                    .record_turn(&turn("s:2", "s", 2, 2, "lost", b""))
                    .expect_err("a write to a read-only store");
                println!("writing to {}: {e}", dir.display());
                assert!(e.is_read_only(), "{dir:?}: {e:?}");
            }
        }
    }
}

fn big_text(i: u64) -> String {
    (0..2_000u64)
        .map(|w| format!("w{:x}", (i * 7_919 + w * 104_729) % 50_000))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_full_database_fails_a_write_and_stays_usable() {
    let scratch = Scratch::new("size-cap");
    let mut store = Store::open(&scratch.store_dir()).expect("open");
    store
        .record_turn(&turn("s:1", "s", 1, 1, "before the cap", b"before"))
        .expect("turn");
    let cap = store.stats().expect("stats").bytes + 64 * 1024;
    store.set_size_cap(Some(cap)).expect("cap");

    let texts: Vec<String> = (0..40).map(big_text).collect();
    let ids: Vec<String> = (0..40).map(|i| format!("s:{}", i + 2)).collect();
    let batch: Vec<Record<'_>> = (0..40)
        .map(|i| {
            Record::Turn(turn(
                &ids[i],
                "s",
                i as u64 + 2,
                2,
                &texts[i],
                texts[i].as_bytes(),
            ))
        })
        .collect();
    let e = store.apply(&batch).expect_err("a batch past the cap");
    assert!(e.is_disk_full(), "{e:?}");
    assert!(!e.is_read_only());
    assert!(e.to_string().contains("disk is full"), "{e}");

    // Nothing of the batch is stored; what was is readable.
    assert_eq!(store.stats().expect("stats").turns, 1);
    assert_eq!(store.get_turn("s:2").expect("read"), None);
    assert_eq!(
        store
            .history(&HistoryQuery::default())
            .expect("history")
            .len(),
        1
    );
    assert_eq!(
        store
            .search(&SearchQuery::new("cap"))
            .expect("search")
            .len(),
        1
    );
    // A small write still fits.
    store
        .record_turn(&turn("t:1", "t", 1, 3, "small", b""))
        .expect("a small turn");

    store.set_size_cap(None).expect("no cap");
    store.apply(&batch).expect("the batch, once there is space");
    assert_eq!(store.stats().expect("stats").turns, 42);
    assert!(store.integrity_problems().expect("check").is_empty());
}

#[test]
fn a_full_disk_fails_a_write_and_stays_usable() {
    let scratch = Scratch::new("disk-full");
    let tmpfs = match Tmpfs::mount(&scratch.path().join("mnt"), "2m") {
        Ok(t) => t,
        Err(why) => {
            println!("SKIPPED a_full_disk_fails_a_write_and_stays_usable: {why}");
            return;
        }
    };
    let dir = tmpfs.path().join("clippy");
    let mut store = Store::open(&dir).expect("open");
    store
        .record_turn(&turn("s:1", "s", 1, 1, "before the disk filled", b""))
        .expect("turn");

    // Fill the file system.
    let filler_path = tmpfs.path().join("filler");
    let mut filler = std::fs::File::create(&filler_path).expect("filler");
    let chunk = vec![0u8; 16 * 1024];
    loop {
        match filler.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
            Err(e) => panic!("filling the disk: {e}"),
        }
    }
    drop(filler);

    let texts: Vec<String> = (0..20).map(big_text).collect();
    let ids: Vec<String> = (0..20).map(|i| format!("s:{}", i + 2)).collect();
    let batch: Vec<Record<'_>> = (0..20)
        .map(|i| {
            Record::Turn(turn(
                &ids[i],
                "s",
                i as u64 + 2,
                2,
                &texts[i],
                texts[i].as_bytes(),
            ))
        })
        .collect();
    let e = store.apply(&batch).expect_err("a write on a full disk");
    println!("on a full disk: {e}");
    assert!(e.is_disk_full(), "{e:?}");

    assert_eq!(store.get_turn("s:2").expect("read"), None);
    assert_eq!(
        store
            .search(&SearchQuery::new("filled"))
            .expect("search")
            .len(),
        1
    );
    assert_eq!(
        store
            .history(&HistoryQuery::default())
            .expect("history")
            .len(),
        1
    );

    std::fs::remove_file(&filler_path).expect("free the space");
    store.apply(&batch).expect("the batch, once there is space");
    assert_eq!(store.stats().expect("stats").turns, 21);
    assert!(store.integrity_problems().expect("check").is_empty());
    drop(store);
    let store = Store::open(&dir).expect("reopen");
    assert_eq!(store.stats().expect("stats").turns, 21);
}

#[test]
fn a_database_of_a_newer_clippy_is_left_alone() {
    let scratch = Scratch::new("newer");
    let dir = scratch.store_dir();
    drop(Store::open(&dir).expect("open"));
    let db = dir.join("history.sqlite3");
    rusqlite::Connection::open(&db)
        .and_then(|c| c.execute_batch("PRAGMA user_version = 99;"))
        .expect("set the version");
    match Store::open(&dir) {
        Err(HistoryError::NewerSchema {
            found: 99,
            supported,
            ..
        }) => assert!(supported < 99),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_that_is_no_database_is_corrupt() {
    let scratch = Scratch::new("corrupt");
    let dir = scratch.store_dir();
    std::fs::create_dir_all(&dir).expect("folder");
    std::fs::write(dir.join("history.sqlite3"), vec![0x5a; 8192]).expect("garbage");
    match Store::open(&dir) {
        Err(e @ HistoryError::Corrupt { .. }) => {
            assert!(e.to_string().contains("move it aside"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

/// Another program's SQLite database where the store should be: refused, and left as it was
/// (seen while writing the `history_file` fuzz target: clippy's tables were added to such a
/// file, or every read failed on a missing table).
#[test]
fn another_programs_database_is_refused_and_left_untouched() {
    for (tag, sql) in [
        (
            "notes",
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); \
             INSERT INTO notes(body) VALUES ('a note');",
        ),
        (
            "same-version",
            "CREATE TABLE turns (id INTEGER PRIMARY KEY, what TEXT); \
             INSERT INTO turns(what) VALUES ('not a turn'); PRAGMA user_version = 1;",
        ),
    ] {
        let scratch = Scratch::new(tag);
        let dir = scratch.store_dir();
        std::fs::create_dir_all(&dir).expect("folder");
        let db = dir.join("history.sqlite3");
        let conn = rusqlite::Connection::open(&db).expect("another program's database");
        conn.execute_batch(sql).expect("its tables");
        drop(conn);
        let before = std::fs::read(&db).expect("read it");
        match Store::open(&dir) {
            Err(e @ HistoryError::Foreign { .. }) => {
                let message = e.to_string();
                assert!(message.contains("another program's"), "{message}");
                assert!(
                    message.contains("turns") || message.contains("notes"),
                    "{message}"
                );
            }
            other => panic!("{tag}: {other:?}"),
        }
        assert_eq!(std::fs::read(&db).expect("read it again"), before, "{tag}");
    }
}
