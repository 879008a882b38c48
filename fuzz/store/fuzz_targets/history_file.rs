//! The history store opened on a damaged database file, and every read run against it.
//!
//! A small valid store is made once, from known sessions, turns and events (and three other
//! programs' SQLite files: one with tables of its own, one whose `user_version` is clippy's but
//! whose `turns` table is not, one with a newer `user_version`). Each input picks one of them
//! and damages it, writes it as `history.sqlite3` in a folder of its own (no `-wal` or `-shm`
//! beside it), opens the store there and runs every read the broker makes: `history`, `search`
//! (words and FTS5 syntax), `get_turn`, `latest_turn`, `sessions`, `events_since`,
//! `max_turn_seq_for`, `max_event_seq`, `stats`, `integrity_problems`.
//!
//! Input layout: `[pick, damage…]`. `pick & 0x80`: the file is the damage bytes themselves (any
//! bytes); else `pick % 4` is the file (0 clippy's, 1–3 the others'), and the damage is a list
//! of records `[op, a, b, len, bytes…]`: `op % 4` 0 truncates the file to `(a·256 + b)·16`
//! bytes; 1 overwrites page `a` at offset `b·16` with the bytes; 2 fills page `a` with byte `b`
//! (a page of garbage, or of zeros); 3 copies page `a` over page `b`.
//!
//! Checks: no panic, no crash, no hang; an error is a `HistoryError` whose message names the
//! store (`history store …`).
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use clippy_fuzz_store::{Known, clear, damage, scratch_dir};
use clippy_history::{HistoryQuery, QuerySyntax, SearchQuery, Store};
use libfuzzer_sys::fuzz_target;

const PAGE: usize = 4096;

/// The folder the damaged files are opened in, one per fuzzing process.
static DIR: LazyLock<PathBuf> = LazyLock::new(|| scratch_dir("history"));

/// The files to damage: clippy's store, then three other programs' databases.
static FILES: LazyLock<Vec<Vec<u8>>> = LazyLock::new(|| {
    let make = DIR.join("make");
    let mut files = vec![clippy_store(&make.join("clippy"))];
    for (tag, sql) in [
        (
            "notes",
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
             INSERT INTO notes(body) VALUES ('a note'), ('another');",
        ),
        (
            "same-version",
            "CREATE TABLE turns (id INTEGER PRIMARY KEY, what TEXT);
             CREATE TABLE sessions (name TEXT);
             INSERT INTO turns(what) VALUES ('not a turn');
             PRAGMA user_version = 1;",
        ),
        (
            "newer",
            "CREATE TABLE t (x); INSERT INTO t VALUES (1); PRAGMA user_version = 9;",
        ),
    ] {
        let path = make.join(format!("{tag}.sqlite3"));
        let conn = rusqlite::Connection::open(&path).expect("another program's database");
        conn.execute_batch(sql).expect("its tables");
        drop(conn);
        files.push(std::fs::read(&path).expect("read it"));
    }
    let _ = std::fs::remove_dir_all(&make);
    files
});

fn clippy_store(dir: &std::path::Path) -> Vec<u8> {
    let mut store = Store::open(dir).expect("a new store");
    store
        .apply(&Known::default().records())
        .expect("records stored");
    drop(store);
    std::fs::read(dir.join(clippy_history::DB_FILE)).expect("the store's file")
}

fuzz_target!(|data: &[u8]| {
    let [pick, rest @ ..] = data else {
        return;
    };
    let file = if pick & 0x80 != 0 {
        rest.to_vec()
    } else {
        damage(FILES[usize::from(*pick % 4)].clone(), rest, PAGE)
    };
    let dir = &*DIR;
    for side in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(dir.join(format!("{}{side}", clippy_history::DB_FILE)));
    }
    std::fs::write(dir.join(clippy_history::DB_FILE), &file).expect("write the damaged file");
    let store = match Store::open(dir) {
        Ok(store) => store,
        Err(e) => return clear(e),
    };
    let reads = [
        store.history(&HistoryQuery::default()).map(drop),
        store
            .history(&HistoryQuery {
                session: Some("rev".into()),
                since: Some(1_020),
                until: Some(1_050),
                limit: 3,
            })
            .map(drop),
        store
            .search(&SearchQuery::new("migration reviewer"))
            .map(drop),
        store
            .search(&SearchQuery {
                syntax: QuerySyntax::Fts5,
                session: Some("aaa".into()),
                ..SearchQuery::new("migrat* OR column")
            })
            .map(drop),
        store.get_turn("aaa:2").map(drop),
        store.latest_turn("aaa").map(drop),
        store.sessions("a").map(drop),
        store.events_since(0, 100).map(drop),
        store.max_turn_seq_for("aaa").map(drop),
        store.max_event_seq().map(drop),
        store.stats().map(drop),
        store.integrity_problems().map(drop),
    ];
    for read in reads {
        if let Err(e) = read {
            clear(e);
        }
    }
});
