//! The database schema, versioned with `PRAGMA user_version`, and its migrations; the tables and
//! the choices behind them are described in the crate's documentation (`lib.rs`).

/// The schema version this crate writes ([`MIGRATIONS`]`.len()`).
pub(crate) const VERSION: i64 = MIGRATIONS.len() as i64;

/// `MIGRATIONS[n]` takes a database from version `n` to `n + 1`; each runs in a transaction of
/// its own, which also sets `user_version`. Append, never edit.
pub(crate) const MIGRATIONS: &[&str] = &[V1];

/// The tables every version has (a database at a version of ours without them is another
/// program's).
pub(crate) const TABLES: &[&str] = &["events", "meta", "sessions", "turns", "turns_fts"];

/// The trigger that removes a deleted turn from the index (dropped and made again around
/// [`Store::forget_all`](crate::Store::forget_all), which empties the index at once).
pub(crate) const TURN_DELETED_TRIGGER: &str = "
CREATE TRIGGER turns_deleted AFTER DELETE ON turns BEGIN
    INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;";

const V1: &str = "
CREATE TABLE sessions (
    key        TEXT PRIMARY KEY NOT NULL,
    name       TEXT,
    command    TEXT NOT NULL DEFAULT '[]',
    cwd        TEXT,
    started_at INTEGER,
    ended_at   INTEGER,
    exit_code  INTEGER,
    signal     INTEGER
);
CREATE INDEX sessions_by_name ON sessions(name) WHERE name IS NOT NULL;

CREATE TABLE turns (
    id            INTEGER PRIMARY KEY,
    turn_id       TEXT NOT NULL UNIQUE,
    session       TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    started_at    INTEGER,
    ended_at      INTEGER NOT NULL,
    input         TEXT,
    cwd           TEXT,
    exit_code     INTEGER,
    interrupted   INTEGER NOT NULL DEFAULT 0,
    truncated     INTEGER NOT NULL DEFAULT 0,
    spool_start   INTEGER,
    spool_end     INTEGER,
    content_bytes INTEGER NOT NULL,
    text_bytes    INTEGER NOT NULL,
    message_bytes INTEGER,
    text          TEXT NOT NULL,
    message       TEXT,
    content       BLOB NOT NULL
);
CREATE UNIQUE INDEX turns_by_session ON turns(session, seq);
CREATE INDEX turns_by_time ON turns(ended_at);

CREATE VIRTUAL TABLE turns_fts USING fts5(
    text,
    content = 'turns',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER turns_inserted AFTER INSERT ON turns BEGIN
    INSERT INTO turns_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER turns_deleted AFTER DELETE ON turns BEGIN
    INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER turns_updated AFTER UPDATE OF id, text ON turns BEGIN
    INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO turns_fts(rowid, text) VALUES (new.id, new.text);
END;

CREATE TABLE events (
    seq     INTEGER PRIMARY KEY,
    time    INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    session TEXT,
    payload TEXT NOT NULL
);
CREATE INDEX events_by_session ON events(session) WHERE session IS NOT NULL;
CREATE INDEX events_by_time ON events(time);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value INTEGER NOT NULL
);
INSERT INTO meta(key, value) VALUES ('event_seq', 0);
";
