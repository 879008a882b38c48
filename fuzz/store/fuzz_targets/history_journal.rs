//! The history journal (`history.journal`) opened on a damaged file, as a broker does at start,
//! and every read the broker makes of it: turns by id, by session key and by name, the records
//! in portions (and again after a rewind), the counts of what is not read back yet, and the
//! records written into a store.
//!
//! A small valid journal is made once from the known records (`clippy_fuzz_store::Known`). Each input
//! picks it or not and damages it: `[pick, damage…]`. `pick & 0x80`: the file is the damage bytes
//! themselves (any bytes); else the damage is `clippy_fuzz_store::damage`'s records on blocks
//! of 64 bytes (cut short to any byte, bytes overwritten, a block filled, a block copied over
//! another).
//!
//! Checks: no panic, no crash, no hang; an error is a `HistoryError` that names the file
//! (`history store …`); a journal that opens reads back whole records only, and a store takes
//! them (its errors name the store too).
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use clippy_fuzz_store::{Known, clear, damage, scratch_dir};
use clippy_history::{JOURNAL_FILE, Journal, Record, Store};
use libfuzzer_sys::fuzz_target;

const BLOCK: usize = 64;

/// The folder the damaged journals are opened in, one per fuzzing process.
static DIR: LazyLock<PathBuf> = LazyLock::new(|| scratch_dir("journal"));

/// A valid journal's bytes: the known records in two appends, as a journaling thread makes
/// them batch by batch.
static JOURNAL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let make = DIR.join("make");
    std::fs::create_dir_all(&make).expect("a folder to make the journal in");
    let mut journal = Journal::open(&make, u64::MAX).expect("a new journal");
    let known = Known::default();
    let records = known.records();
    let (first, second) = records.split_at(5);
    journal.append(first).expect("appended");
    journal.append(second).expect("appended");
    drop(journal);
    let bytes = std::fs::read(make.join(JOURNAL_FILE)).expect("the journal's file");
    let _ = std::fs::remove_dir_all(&make);
    bytes
});

fuzz_target!(|data: &[u8]| {
    let [pick, rest @ ..] = data else {
        return;
    };
    let file = if pick & 0x80 != 0 {
        rest.to_vec()
    } else {
        damage(JOURNAL.clone(), rest, BLOCK)
    };
    let dir = &*DIR;
    let _ = std::fs::remove_dir_all(dir.join("store"));
    std::fs::create_dir_all(dir.join("store")).expect("the store's folder");
    std::fs::write(dir.join(JOURNAL_FILE), &file).expect("write the damaged journal");
    let mut journal = match Journal::open(dir, u64::MAX) {
        Ok(journal) => journal,
        Err(e) => return clear(e),
    };
    // What a broker reads: the whole frames only, none past the file.
    assert!(journal.len() <= file.len() as u64);
    let turns = journal.unread_turns();
    for which in ["aaa:1", "aaa:6", "aaa", "rev", "bbb", ""] {
        if let Err(e) = journal.turn(which) {
            clear(e);
        }
    }
    let start = journal.read_offset();
    let mut records = Vec::new();
    loop {
        match journal.read(3, 256) {
            Ok(portion) if portion.is_empty() => break,
            Ok(portion) => records.extend(portion),
            Err(e) => return clear(e),
        }
    }
    assert_eq!(journal.unread_turns(), 0);
    assert!(records.len() as u64 >= turns);
    journal.rewind(start);
    assert_eq!(journal.unread_turns(), turns);
    // Into a store, as the store thread writes it in; then emptied.
    let mut store = match Store::open(&dir.join("store")) {
        Ok(store) => store,
        Err(e) => return clear(e),
    };
    let borrowed: Vec<Record<'_>> = records.iter().map(|r| r.record()).collect();
    if let Err(e) = store.apply(&borrowed) {
        clear(e);
    }
    if let Err(e) = journal.clear() {
        clear(e);
    }
    assert_eq!(journal.len(), 0);
});
