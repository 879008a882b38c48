//! The journal against real files: what is appended reads back in order after a reopen, a torn
//! last frame is cut off, a full journal appends nothing, and what is read goes into a store.

mod common;

use std::fs;
use std::io::Write;

use common::Scratch;

use clippy_history::{
    EventRecord, HistoryError, HistoryQuery, JOURNAL_FILE, Journal, Record, Store,
};

/// A turn of session `s` (the store tests' record, its content the text as it is).
fn turn<'a>(turn_id: &'a str, seq: u64, text: &'a str) -> Record<'a> {
    Record::Turn(common::turn(
        turn_id,
        "s",
        seq,
        1_700_000_000_000 + seq,
        text,
        text.as_bytes(),
    ))
}

#[test]
fn appended_records_read_back_in_order_after_a_reopen_and_a_torn_end_is_cut_off() {
    let scratch = Scratch::new("journal-reopen");
    let dir = scratch.path();
    let mut journal = Journal::open(dir, u64::MAX).expect("open");
    assert!(journal.is_empty());
    let event = Record::Event(EventRecord {
        seq: 41,
        time: 1,
        kind: "session.started",
        session: Some("s"),
        payload: "{}",
    });
    journal
        .append(&[turn("s:1", 1, "one"), event])
        .expect("append");
    journal.append(&[turn("s:2", 2, "two")]).expect("append");
    let whole = journal.len();
    drop(journal);
    // Killed in the middle of an append: a header and part of a payload.
    let path = dir.join(JOURNAL_FILE);
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("file");
    file.write_all(&[100, 0, 0, 0, 7, 7, 7, 7, 1, 2])
        .expect("torn");
    drop(file);

    let mut journal = Journal::open(dir, u64::MAX).expect("reopen");
    assert_eq!(journal.len(), whole, "the torn frame is cut off");
    assert_eq!(fs::metadata(&path).expect("file").len(), whole);
    assert_eq!(journal.max_event_seq(), 41);
    // Turns are found by id and by session key (the newest), before and after reading.
    assert_eq!(
        journal
            .turn("s:1")
            .expect("turn")
            .map(|t| t.record() == turn("s:1", 1, "one")),
        Some(true)
    );
    assert_eq!(
        journal
            .turn("s")
            .expect("turn")
            .map(|t| t.record() == turn("s:2", 2, "two")),
        Some(true)
    );
    assert_eq!(journal.turn("s:3").expect("turn"), None);
    assert_eq!(
        journal.turn("rev").expect("turn"),
        None,
        "no session record yet"
    );
    let command = vec!["sh".to_owned()];
    journal
        .append(&[Record::Session(clippy_history::SessionRecord {
            key: "s",
            name: Some("rev"),
            command: &command,
            cwd: None,
            started_at: 1,
        })])
        .expect("append");
    assert_eq!(
        journal
            .turn("rev")
            .expect("turn")
            .map(|t| t.record() == turn("s:2", 2, "two")),
        Some(true),
        "by name"
    );
    let first = journal.read(2, u64::MAX).expect("read");
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].record(), turn("s:1", 1, "one"));
    assert_eq!(first[1].record(), event);
    let rest = journal.read(10, u64::MAX).expect("read");
    assert_eq!(rest.len(), 2);
    assert_eq!(rest[0].record(), turn("s:2", 2, "two"));
    assert_eq!(journal.unread(), 0);
    assert!(journal.read(10, u64::MAX).expect("read").is_empty());
    journal.clear().expect("clear");
    assert_eq!(fs::metadata(&path).expect("file").len(), 0);
    assert_eq!(journal.turn("s:1").expect("turn"), None, "cleared");
}

#[test]
fn a_full_journal_appends_nothing_and_says_the_disk_is_full() {
    let scratch = Scratch::new("journal-full");
    let dir = scratch.path();
    let mut journal = Journal::open(dir, 200).expect("open");
    journal.append(&[turn("s:1", 1, "one")]).expect("fits");
    let before = journal.len();
    let big = "x".repeat(300);
    let err = journal
        .append(&[turn("s:2", 2, "two"), turn("s:3", 3, &big)])
        .expect_err("past the limit");
    assert!(matches!(err, HistoryError::DiskFull { .. }), "{err}");
    assert!(err.to_string().contains(JOURNAL_FILE), "{err}");
    assert_eq!(journal.len(), before, "none of the batch");
    assert_eq!(journal.read(10, u64::MAX).expect("read").len(), 1);
}

#[test]
fn what_is_read_from_the_journal_goes_into_the_store_and_again_harmlessly() {
    let scratch = Scratch::new("journal-store");
    let dir = scratch.path();
    let mut store = Store::open(dir).expect("store");
    let mut journal = Journal::open(dir, u64::MAX).expect("open");
    let texts: Vec<(String, String)> = (1..=100)
        .map(|seq| (format!("s:{seq}"), format!("turn number {seq}")))
        .collect();
    let rows: Vec<Record<'_>> = texts
        .iter()
        .zip(1..)
        .map(|((id, text), seq)| turn(id, seq, text))
        .collect();
    journal.append(&rows).expect("append");
    // In portions, and the first portion twice (a broker killed after storing it).
    let offset = journal.read_offset();
    let portion = journal.read(30, u64::MAX).expect("read");
    let borrowed: Vec<Record<'_>> = portion.iter().map(|r| r.record()).collect();
    store.apply(&borrowed).expect("apply");
    journal.rewind(offset);
    loop {
        let portion = journal.read(30, 64).expect("read");
        if portion.is_empty() {
            break;
        }
        let borrowed: Vec<Record<'_>> = portion.iter().map(|r| r.record()).collect();
        store.apply(&borrowed).expect("apply");
    }
    let stored = store
        .history(&HistoryQuery {
            limit: 1000,
            ..Default::default()
        })
        .expect("history");
    assert_eq!(stored.len(), 100);
    assert_eq!(
        store.get_turn("s:100").expect("get").expect("stored").text,
        "turn number 100"
    );
    drop(store);
}

#[test]
fn the_turns_and_events_not_read_back_yet_are_counted_before_and_after_a_reopen() {
    let scratch = Scratch::new("journal-unread");
    let dir = scratch.path();
    let mut journal = Journal::open(dir, u64::MAX).expect("open");
    let event = |seq| {
        Record::Event(EventRecord {
            seq,
            time: 1,
            kind: "turn.completed",
            session: Some("s"),
            payload: "{}",
        })
    };
    journal
        .append(&[turn("s:1", 1, "one"), event(1), turn("s:2", 2, "two")])
        .expect("append");
    journal
        .append(&[event(2), turn("s:3", 3, "three")])
        .expect("append");
    assert_eq!((journal.unread_turns(), journal.unread_events()), (3, 2));
    assert_eq!(journal.read(2, u64::MAX).expect("read").len(), 2);
    assert_eq!((journal.unread_turns(), journal.unread_events()), (2, 1));
    let offset = journal.read_offset();
    assert_eq!(journal.read(10, u64::MAX).expect("read").len(), 3);
    assert_eq!((journal.unread_turns(), journal.unread_events()), (0, 0));
    // A portion the store failed to take is read again, and counted again.
    journal.rewind(offset);
    assert_eq!((journal.unread_turns(), journal.unread_events()), (2, 1));
    drop(journal);
    // A restarted broker reads the whole journal again.
    let mut journal = Journal::open(dir, u64::MAX).expect("reopen");
    assert_eq!((journal.unread_turns(), journal.unread_events()), (3, 2));
    journal.read(10, u64::MAX).expect("read");
    journal.clear().expect("clear");
    assert_eq!((journal.unread_turns(), journal.unread_events()), (0, 0));
}

/// Found by the `history_journal` fuzz target: a damaged header saying ~4 GiB had that much
/// allocated before the read found the file's end (out of memory under the fuzzer's limit).
#[test]
fn a_header_whose_length_runs_past_the_end_is_cut_off_like_a_torn_frame() {
    let scratch = Scratch::new("journal-long-header");
    let dir = scratch.path();
    let mut journal = Journal::open(dir, u64::MAX).expect("open");
    journal.append(&[turn("s:1", 1, "one")]).expect("append");
    let whole = journal.len();
    drop(journal);
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(dir.join(JOURNAL_FILE))
        .expect("file");
    file.write_all(&[0xf0, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5])
        .expect("damaged header");
    drop(file);
    let mut journal = Journal::open(dir, u64::MAX).expect("reopen");
    assert_eq!(journal.len(), whole);
    assert_eq!(journal.unread_turns(), 1);
    assert_eq!(journal.read(10, u64::MAX).expect("read").len(), 1);
}

#[test]
fn a_journaled_turn_reads_back_as_the_store_gives_it() {
    let scratch = Scratch::new("journal-stored");
    let dir = scratch.path();
    let mut journal = Journal::open(dir, u64::MAX).expect("open");
    journal
        .append(&[turn("s:1", 1, "one"), turn("s:2", 2, "two")])
        .expect("append");
    let turn = journal.stored_turn("s").expect("read").expect("the newest");
    assert_eq!(turn.summary.turn_id, "s:2");
    assert_eq!((turn.summary.seq, turn.summary.text_bytes), (2, 3));
    assert_eq!(
        (turn.content.as_slice(), turn.text.as_str()),
        (&b"two"[..], "two")
    );
    assert!(journal.stored_turn("t:1").expect("read").is_none());
}
