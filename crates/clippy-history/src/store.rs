//! [`Store`]: opening the database, and writing to it.

use std::ffi::OsString;
use std::fs::{self, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};

use crate::error::HistoryError;
use crate::query::Deleted;
use crate::record::{EventRecord, Record, SessionEnd, SessionRecord, TurnRecord};
use crate::schema;

/// The database's file name in the store's folder.
pub const DB_FILE: &str = "history.sqlite3";

/// How long a statement waits for a lock another process holds before failing with
/// [`HistoryError::Locked`].
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The WAL file is cut back to this size after a checkpoint (it grows with the largest
/// transaction between checkpoints).
const JOURNAL_SIZE_LIMIT: i64 = 64 << 20;

/// Rows deleted per transaction by [`Store::prune`].
const PRUNE_BATCH: i64 = 1000;

pub(crate) type Result<T> = std::result::Result<T, HistoryError>;

/// The history store: sessions, turns and events in one SQLite database,
/// `<dir>/history.sqlite3`.
///
/// Blocking and single-threaded: the broker owns one on a thread of its own and sends it what to
/// write (batched with [`Store::apply`]) and what to read. A `Store` is [`Send`], not `Sync`.
/// It reads no clock: every time is an argument, in Unix milliseconds.
///
/// # Durability
/// The database is in WAL mode with `synchronous = NORMAL`:
/// - a write returns once its transaction has committed, that is, once it is appended to the
///   `-wal` file (in the OS's page cache, not yet synced);
/// - the process being killed (`kill -9`, a panic, an abort) at any point loses nothing that
///   committed: SQLite's transactions are durable across application crashes whatever the
///   `synchronous` setting;
/// - on power loss or an OS crash, the transactions committed since the last checkpoint may be
///   rolled back — with `synchronous = NORMAL` the WAL is synced only before each checkpoint
///   (SQLite runs one when the WAL passes 1000 pages, about 4 MiB; [`Store::checkpoint`] runs one
///   now) — but the database stays consistent: it is as of some earlier commit, never torn.
///   `synchronous = FULL` would close that window at the cost of an fsync per transaction.
///
/// # Files and privacy
/// The folder is made mode 0700 (an existing one is narrowed to it), the database and its
/// `-wal` and `-shm` files 0600. Deleting ([`forget_session`](Store::forget_session),
/// [`forget_all`](Store::forget_all), [`prune`](Store::prune)) overwrites the deleted content
/// left in pages still in use with zeros, gives every free page back to the file system
/// (`auto_vacuum = INCREMENTAL` + `PRAGMA incremental_vacuum`: cheap, unlike a `VACUUM`, which
/// rewrites the whole file and needs as much free space again) and empties the WAL
/// (`wal_checkpoint(TRUNCATE)`), whose old frames would otherwise still hold copies of the
/// pages. Forgetting also rewrites the full-text index (FTS5 `optimize`), whose older segments
/// would otherwise keep the deleted words until merged: a pass over the whole index, so it
/// takes longer on a large store (see the benchmark) — pruning, which is not about privacy,
/// skips it.
///
/// # Example
/// ```
/// use clippy_history::{HistoryQuery, SearchQuery, SessionRecord, Store, TurnRecord};
///
/// # let dir = std::env::temp_dir().join(format!("clippy-history-doc-{}", std::process::id()));
/// let mut store = Store::open(&dir)?;
/// let command = vec!["claude".to_owned()];
/// store.record_session(&SessionRecord {
///     key: "rdzmi70",
///     name: Some("reviewer"),
///     command: &command,
///     cwd: Some("/src/app"),
///     started_at: 1_700_000_000_000,
/// })?;
/// store.record_turn(&TurnRecord {
///     turn_id: "rdzmi70:1",
///     session: "rdzmi70",
///     seq: 1,
///     started_at: None,
///     ended_at: 1_700_000_060_000,
///     input: Some("review the migration"),
///     content: b"\x1b[1mThe migration drops a column.\x1b[0m\r\n",
///     text: "The migration drops a column.\n",
///     message: None,
///     interrupted: false,
///     truncated: false,
///     exit_code: None,
///     cwd: None,
///     spool_span: Some((0, 40)),
/// })?;
///
/// let hits = store.search(&SearchQuery::new("migrations"))?;
/// assert_eq!(hits[0].turn.turn_id, "rdzmi70:1");
/// assert_eq!(hits[0].snippet, "The [migration] drops a column.\n");
///
/// let turns = store.history(&HistoryQuery { session: Some("reviewer".into()), ..Default::default() })?;
/// assert_eq!(turns[0].cwd.as_deref(), Some("/src/app"));
///
/// let turn = store.get_turn("rdzmi70:1")?.expect("stored");
/// assert_eq!(turn.content, b"\x1b[1mThe migration drops a column.\x1b[0m\r\n");
/// # drop(store);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), clippy_history::HistoryError>(())
/// ```
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Connection,
    dir: PathBuf,
    pub(crate) db: PathBuf,
}

impl Store {
    /// Opens the store in `dir`, making the folder (0700) and the database (0600) if missing,
    /// and bringing an older schema up to date.
    ///
    /// # Errors
    /// [`HistoryError::ReadOnly`] when the folder or the database cannot be written,
    /// [`HistoryError::DiskFull`] when there is no space to create them,
    /// [`HistoryError::NewerSchema`] for a database of a newer clippy,
    /// [`HistoryError::Corrupt`] for a file that is not a database; others for other failures.
    pub fn open(dir: &Path) -> Result<Store> {
        make_private_dir(dir)?;
        let db = dir.join(DB_FILE);
        make_private_file(&db)?;
        let path: &Path = &db;
        let sqlite = |op| move |e| HistoryError::sqlite(path, op, e);
        let conn = Connection::open_with_flags(
            &db,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sqlite("open the database"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(sqlite("set the busy timeout"))?;
        conn.set_prepared_statement_cache_capacity(64);
        // Deleted content is zeroed inside the pages a change writes anyway; a page freed whole
        // (the full-text index merges its segments as turns come in) goes on the free list as
        // it is, not written again in zeros (`secure_delete = ON` would: a page of writes per
        // page freed, on every merge). Deleting gives every free page back to the file system
        // (`reclaim`), so what was on them is in no file afterwards either.
        conn.execute_batch(&format!(
            "PRAGMA secure_delete = FAST; PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT};"
        ))
        .map_err(sqlite("set up the connection"))?;
        let store = Store {
            conn,
            dir: dir.to_owned(),
            db: db.clone(),
        };
        store.migrate()?;
        store.tighten_side_files()?;
        Ok(store)
    }

    /// The default folder: `$XDG_STATE_HOME/clippy`, else `$HOME/.local/state/clippy` (each
    /// only when set to an absolute path).
    ///
    /// # Errors
    /// [`HistoryError::NoStateDir`] when neither is.
    pub fn default_dir() -> Result<PathBuf> {
        state_dir(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
    }

    /// The store's folder.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The database file, `<dir>/history.sqlite3`.
    #[must_use]
    pub fn db_path(&self) -> &Path {
        &self.db
    }

    /// Records a session (see [`SessionRecord`]).
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn record_session(&mut self, session: &SessionRecord<'_>) -> Result<()> {
        self.apply(&[Record::Session(*session)])
    }

    /// Records how a session ended (a session not recorded yet is recorded with it).
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn record_session_end(&mut self, end: &SessionEnd<'_>) -> Result<()> {
        self.apply(&[Record::SessionEnd(*end)])
    }

    /// Records a turn (see [`TurnRecord`]; a turn already stored is left as it is).
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn record_turn(&mut self, turn: &TurnRecord<'_>) -> Result<()> {
        self.apply(&[Record::Turn(*turn)])
    }

    /// Records an event (see [`EventRecord`]; an event already stored is left as it is).
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn record_event(&mut self, event: &EventRecord<'_>) -> Result<()> {
        self.apply(&[Record::Event(*event)])
    }

    /// Writes `records` in order, in one transaction: all of them, or — on an error — none.
    /// Records already stored (a turn or an event by its id) are skipped, so sending a batch
    /// again is harmless.
    ///
    /// # Errors
    /// [`HistoryError::DiskFull`], [`HistoryError::ReadOnly`], [`HistoryError::Locked`] and
    /// others; the batch is then rolled back and the store stays usable.
    pub fn apply(&mut self, records: &[Record<'_>]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let db = &self.db;
        let op = "record sessions, turns and events";
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| HistoryError::sqlite(db, op, e))?;
        for record in records {
            write(&tx, record).map_err(|e| HistoryError::sqlite(db, op, e))?;
        }
        tx.commit().map_err(|e| HistoryError::sqlite(db, op, e))
    }

    /// Deletes the sessions `session` names (a key, else every session of that name, else every
    /// session whose key starts with it: as [`Store::sessions`]) with all their turns and
    /// events, and makes their text leave the files (see the type's "Files and privacy").
    /// Deleting a session that still runs is fine: its later turns are stored again.
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn forget_session(&mut self, session: &str) -> Result<Deleted> {
        let keys = self.resolve_sessions(session)?;
        if keys.is_empty() {
            return Ok(Deleted::default());
        }
        let keys = keys_json(&keys);
        let db = &self.db;
        let op = "forget a session";
        let sqlite = |e| HistoryError::sqlite(db, op, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite)?;
        keep_event_seq(&tx).map_err(sqlite)?;
        let turns = tx
            .execute(
                "DELETE FROM turns WHERE session IN (SELECT value FROM json_each(?1))",
                [&keys],
            )
            .map_err(sqlite)?;
        let events = tx
            .execute(
                "DELETE FROM events WHERE session IN (SELECT value FROM json_each(?1))",
                [&keys],
            )
            .map_err(sqlite)?;
        let sessions = tx
            .execute(
                "DELETE FROM sessions WHERE key IN (SELECT value FROM json_each(?1))",
                [&keys],
            )
            .map_err(sqlite)?;
        // The deleted turns' words out of the index's older segments.
        tx.execute_batch("INSERT INTO turns_fts(turns_fts) VALUES ('optimize');")
            .map_err(sqlite)?;
        tx.commit().map_err(sqlite)?;
        self.reclaim(op)?;
        Ok(Deleted {
            sessions: count(sessions),
            turns: count(turns),
            events: count(events),
        })
    }

    /// Deletes every session, turn and event, and makes their text leave the files (see the
    /// type's "Files and privacy"). Event ids still continue after the highest ever stored.
    ///
    /// # Errors
    /// As [`Store::apply`].
    pub fn forget_all(&mut self) -> Result<Deleted> {
        let db = &self.db;
        let op = "forget everything";
        let sqlite = |e| HistoryError::sqlite(db, op, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite)?;
        keep_event_seq(&tx).map_err(sqlite)?;
        // The index is emptied at once rather than turn by turn through the trigger.
        tx.execute_batch("DROP TRIGGER turns_deleted;")
            .map_err(sqlite)?;
        let turns = tx.execute("DELETE FROM turns", []).map_err(sqlite)?;
        tx.execute_batch("INSERT INTO turns_fts(turns_fts) VALUES ('delete-all');")
            .map_err(sqlite)?;
        tx.execute_batch(schema::TURN_DELETED_TRIGGER)
            .map_err(sqlite)?;
        let events = tx.execute("DELETE FROM events", []).map_err(sqlite)?;
        let sessions = tx.execute("DELETE FROM sessions", []).map_err(sqlite)?;
        tx.commit().map_err(sqlite)?;
        self.reclaim(op)?;
        Ok(Deleted {
            sessions: count(sessions),
            turns: count(turns),
            events: count(events),
        })
    }

    /// Deletes what is too old or too much, oldest first, in transactions of up to 1000 rows:
    /// - with `max_age`, every turn completed and every event before `now_ms - max_age`, and
    ///   the sessions left without turns that ended (or, never told ended, started) before then;
    /// - with `max_bytes`, when the database's pages in use take more, then the oldest turns
    ///   (and the events up to the newest of them, and the ended sessions left without turns)
    ///   until they take at most 90 % of `max_bytes` (or nothing is left), the full-text index
    ///   rewritten between rounds (a pass over it: FTS5 `optimize`);
    ///
    /// then gives the freed space back to the file system. Unlike forgetting, pruning by age
    /// leaves the deleted turns' words masked in the index until FTS5 merges its segments.
    ///
    /// # Errors
    /// As [`Store::apply`]; what was deleted before the error stays deleted.
    pub fn prune(
        &mut self,
        max_age: Option<Duration>,
        max_bytes: Option<u64>,
        now_ms: u64,
    ) -> Result<Deleted> {
        let op = "prune";
        let mut deleted = Deleted::default();
        if let Some(age) = max_age {
            let age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
            let cutoff = to_sql(now_ms.saturating_sub(age_ms));
            self.delete_in_batches(
                op,
                "DELETE FROM turns WHERE id IN \
                 (SELECT id FROM turns WHERE ended_at < ?1 ORDER BY ended_at LIMIT ?2)",
                cutoff,
                &mut deleted.turns,
            )?;
            self.delete_in_batches(
                op,
                "DELETE FROM events WHERE seq IN \
                 (SELECT seq FROM events WHERE time < ?1 ORDER BY seq LIMIT ?2)",
                cutoff,
                &mut deleted.events,
            )?;
            deleted.sessions += count(
                self.conn
                    .execute(
                        "DELETE FROM sessions WHERE COALESCE(ended_at, started_at, 0) < ?1 \
                         AND NOT EXISTS (SELECT 1 FROM turns WHERE turns.session = sessions.key)",
                        [cutoff],
                    )
                    .map_err(|e| HistoryError::sqlite(&self.db, op, e))?,
            );
        }
        if let Some(max_bytes) = max_bytes {
            self.prune_to_size(max_bytes, &mut deleted)?;
        }
        if deleted != Deleted::default() {
            self.reclaim(op)?;
        }
        Ok(deleted)
    }

    /// Caps the database's size at `max_bytes` (rounded down to whole pages, and never below
    /// its current size), or lifts the cap (`None`): a write that would grow it past the cap
    /// fails with [`HistoryError::DiskFull`] and stores nothing, as on a full disk. For this
    /// connection only (SQLite's `max_page_count`), not kept in the file.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn set_size_cap(&mut self, max_bytes: Option<u64>) -> Result<()> {
        let page_size = self.pragma_u64("page_size")?.max(1);
        // SQLite's own default and largest value.
        let pages = max_bytes.map_or(4_294_967_294, |b| b / page_size);
        self.conn
            .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
            .map_err(|e| HistoryError::sqlite(&self.db, "cap the size", e))
    }

    /// Copies the WAL into the database now (a passive checkpoint: it does not wait for
    /// readers), which also syncs both: what committed before it survives power loss.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn checkpoint(&mut self) -> Result<()> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(|e| HistoryError::sqlite(&self.db, "checkpoint", e))
    }

    /// Checks the database's structure (`PRAGMA quick_check`, a pass over every page): the
    /// problems found, none when it is sound.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn integrity_problems(&self) -> Result<Vec<String>> {
        let op = "check the database";
        let sqlite = |e| HistoryError::sqlite(&self.db, op, e);
        let mut stmt = self.conn.prepare("PRAGMA quick_check").map_err(sqlite)?;
        let rows = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(sqlite)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(sqlite)?;
        Ok(rows.into_iter().filter(|r| r != "ok").collect())
    }

    /// `PRAGMA <name>` as a number.
    pub(crate) fn pragma_u64(&self, name: &'static str) -> Result<u64> {
        self.conn
            .query_row(&format!("PRAGMA {name}"), [], |row| row.get::<_, i64>(0))
            .map(from_sql)
            .map_err(|e| HistoryError::sqlite(&self.db, "read the database's size", e))
    }

    /// Refuses another program's database before anything is written to it: one with tables
    /// but no schema version (clippy's tables would be added to it), or one at a version of
    /// clippy's without clippy's tables (every read would fail on a missing table).
    fn refuse_foreign(&self, found: i64) -> Result<()> {
        let tables: Vec<String> = {
            let sqlite = |e| HistoryError::sqlite(&self.db, "read the schema", e);
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT name FROM sqlite_master WHERE type = 'table' \
                     AND name NOT LIKE 'sqlite_%' ORDER BY name",
                )
                .map_err(sqlite)?;
            stmt.query_map([], |row| row.get::<_, String>(0))
                .map_err(sqlite)?
                .collect::<rusqlite::Result<_>>()
                .map_err(sqlite)?
        };
        let foreign = |what: String| {
            Err(HistoryError::Foreign {
                path: self.db.clone(),
                what,
            })
        };
        if found == 0 && !tables.is_empty() {
            let mut named = tables
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if tables.len() > 3 {
                named.push_str(", …");
            }
            return foreign(format!("tables {named} and no schema version"));
        }
        if found > 0 {
            let missing: Vec<&str> = schema::TABLES
                .iter()
                .copied()
                .filter(|table| !tables.iter().any(|t| t == table))
                .collect();
            if !missing.is_empty() {
                return foreign(format!(
                    "schema version {found} without the tables {}",
                    missing.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Brings the schema to [`schema::VERSION`], one migration per transaction.
    fn migrate(&self) -> Result<()> {
        let sqlite = |op| move |e| HistoryError::sqlite(&self.db, op, e);
        let found: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(sqlite("read the schema version"))?;
        if found > schema::VERSION {
            return Err(HistoryError::NewerSchema {
                path: self.db.clone(),
                found,
                supported: schema::VERSION,
            });
        }
        self.refuse_foreign(found)?;
        if found == 0 {
            // Only takes effect before the first table is made: a new database.
            self.conn
                .execute_batch("PRAGMA auto_vacuum = INCREMENTAL;")
                .map_err(sqlite("set up a new database"))?;
        }
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(sqlite("switch to WAL mode"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(HistoryError::sqlite(
                &self.db,
                "switch to WAL mode",
                rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                    Some(format!("the journal mode stayed {mode}")),
                ),
            ));
        }
        self.conn
            .execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(sqlite("set synchronous"))?;
        let from = usize::try_from(found).unwrap_or(0);
        for (version, migration) in schema::MIGRATIONS.iter().enumerate().skip(from) {
            let to = version + 1;
            self.conn
                .execute_batch(&format!(
                    "BEGIN IMMEDIATE; {migration}; PRAGMA user_version = {to}; COMMIT;"
                ))
                .map_err(|e| {
                    // Leave no half-open transaction behind a failed migration.
                    let _ = self.conn.execute_batch("ROLLBACK;");
                    HistoryError::sqlite(&self.db, "create or upgrade the schema", e)
                })?;
        }
        Ok(())
    }

    /// Narrows the `-wal` and `-shm` files to 0600 (SQLite makes them with the database's
    /// mode already; this is in case an older file was looser).
    fn tighten_side_files(&self) -> Result<()> {
        for suffix in ["-wal", "-shm"] {
            let mut name = OsString::from(self.db.as_os_str());
            name.push(suffix);
            let path = PathBuf::from(name);
            match fs::metadata(&path) {
                Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
                    let mode = meta.permissions().mode() & 0o600;
                    fs::set_permissions(&path, Permissions::from_mode(mode))
                        .map_err(|e| HistoryError::io(&path, "narrow the mode to 0600", e))?;
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(HistoryError::io(&path, "read the mode", e)),
            }
        }
        Ok(())
    }

    /// Gives every free page back to the file system and empties the WAL (whose old frames
    /// hold copies of deleted pages): free pages are not zeroed (`secure_delete = FAST`), so
    /// this is what keeps deleted text out of the files.
    fn reclaim(&mut self, op: &'static str) -> Result<()> {
        let sqlite = |e| HistoryError::sqlite(&self.db, op, e);
        // Frees one page per step: stepped to the end.
        let mut stmt = self
            .conn
            .prepare("PRAGMA incremental_vacuum")
            .map_err(sqlite)?;
        let mut rows = stmt.query([]).map_err(sqlite)?;
        while rows.next().map_err(sqlite)?.is_some() {}
        drop(rows);
        drop(stmt);
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(sqlite)
    }

    /// Runs `sql` (a `DELETE` of at most `?2` rows older than `?1`) until it deletes nothing,
    /// one transaction per batch; adds what it deleted to `total`.
    fn delete_in_batches(
        &mut self,
        op: &'static str,
        sql: &str,
        cutoff: i64,
        total: &mut u64,
    ) -> Result<()> {
        loop {
            let n = self
                .conn
                .execute(sql, params![cutoff, PRUNE_BATCH])
                .map_err(|e| HistoryError::sqlite(&self.db, op, e))?;
            *total += count(n);
            if n == 0 {
                return Ok(());
            }
        }
    }

    /// The size part of [`Store::prune`]: when over `max_bytes`, deletes the oldest turns down
    /// to 90 % of it (so that it is not back over at the next turn), in rounds: as many of the
    /// oldest turns as their average size says, then the index rewritten (FTS5 `optimize`: a
    /// deleted turn's index entries are only masked until then), then measured again.
    fn prune_to_size(&mut self, max_bytes: u64, deleted: &mut Deleted) -> Result<()> {
        if self.used_bytes()? <= max_bytes {
            return Ok(());
        }
        let target = max_bytes - max_bytes / 10;
        loop {
            let used = self.used_bytes()?;
            if used <= target {
                return Ok(());
            }
            let turns: i64 = self
                .conn
                .query_row("SELECT count(*) FROM turns", [], |row| row.get(0))
                .map_err(|e| HistoryError::sqlite(&self.db, "prune to size", e))?;
            let before = *deleted;
            if turns > 0 {
                // Enough of the oldest turns, by their average size, to get under the target.
                let average = (used / from_sql(turns)).max(1);
                let mut n = (used - target) / average + 1;
                while n > 0 {
                    let batch = n.min(PRUNE_BATCH as u64);
                    let round = self.delete_oldest_turns(batch)?;
                    *deleted = Deleted {
                        sessions: deleted.sessions + round.sessions,
                        turns: deleted.turns + round.turns,
                        events: deleted.events + round.events,
                    };
                    if round.turns == 0 {
                        break;
                    }
                    n -= batch;
                }
            } else {
                deleted.events += count(
                    self.conn
                        .execute(
                            "DELETE FROM events WHERE seq IN \
                             (SELECT seq FROM events ORDER BY seq LIMIT ?1)",
                            [PRUNE_BATCH],
                        )
                        .map_err(|e| HistoryError::sqlite(&self.db, "prune to size", e))?,
                );
            }
            if *deleted == before {
                // Nothing left to delete: the schema alone is over the limit.
                return Ok(());
            }
            self.conn
                .execute_batch("INSERT INTO turns_fts(turns_fts) VALUES ('optimize');")
                .map_err(|e| HistoryError::sqlite(&self.db, "rewrite the index", e))?;
        }
    }

    /// Deletes the `n` oldest turns, the events up to the newest of them, and the ended
    /// sessions left without turns, in one transaction.
    fn delete_oldest_turns(&mut self, n: u64) -> Result<Deleted> {
        let db = &self.db;
        let sqlite = |e| HistoryError::sqlite(db, "prune to size", e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite)?;
        keep_event_seq(&tx).map_err(sqlite)?;
        let newest: Option<i64> = tx
            .query_row(
                "SELECT max(ended_at) FROM \
                 (SELECT ended_at FROM turns ORDER BY ended_at, id LIMIT ?1)",
                [to_sql(n)],
                |row| row.get(0),
            )
            .map_err(sqlite)?;
        let mut deleted = Deleted {
            turns: count(
                tx.execute(
                    "DELETE FROM turns WHERE id IN \
                     (SELECT id FROM turns ORDER BY ended_at, id LIMIT ?1)",
                    [to_sql(n)],
                )
                .map_err(sqlite)?,
            ),
            ..Deleted::default()
        };
        if let Some(newest) = newest {
            deleted.events = count(
                tx.execute("DELETE FROM events WHERE time <= ?1", [newest])
                    .map_err(sqlite)?,
            );
            deleted.sessions = count(
                tx.execute(
                    "DELETE FROM sessions WHERE ended_at <= ?1 AND NOT EXISTS \
                     (SELECT 1 FROM turns WHERE turns.session = sessions.key)",
                    [newest],
                )
                .map_err(sqlite)?,
            );
        }
        tx.commit().map_err(sqlite)?;
        Ok(deleted)
    }

    /// The database's pages in use (not free), in bytes.
    fn used_bytes(&self) -> Result<u64> {
        let page_size = self.pragma_u64("page_size")?;
        Ok(self
            .pragma_u64("page_count")?
            .saturating_sub(self.pragma_u64("freelist_count")?)
            .saturating_mul(page_size))
    }
}

/// Writes one record inside the caller's transaction.
fn write(conn: &Connection, record: &Record<'_>) -> rusqlite::Result<()> {
    match record {
        Record::Session(s) => {
            conn.prepare_cached(
                "INSERT INTO sessions(key, name, command, cwd, started_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT(key) DO UPDATE SET \
                   name = COALESCE(excluded.name, name), \
                   command = CASE WHEN excluded.command = '[]' THEN command \
                                  ELSE excluded.command END, \
                   cwd = COALESCE(excluded.cwd, cwd), \
                   started_at = CASE WHEN started_at IS NULL OR excluded.started_at < started_at \
                                     THEN excluded.started_at ELSE started_at END, \
                   ended_at = NULL, exit_code = NULL, signal = NULL",
            )?
            .execute(params![
                s.key,
                s.name,
                command_json(s.command),
                s.cwd,
                to_sql(s.started_at),
            ])?;
        }
        Record::SessionEnd(e) => {
            conn.prepare_cached(
                "INSERT INTO sessions(key, ended_at, exit_code, signal) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT(key) DO UPDATE SET ended_at = excluded.ended_at, \
                   exit_code = excluded.exit_code, signal = excluded.signal",
            )?
            .execute(params![e.key, to_sql(e.ended_at), e.exit_code, e.signal])?;
        }
        Record::Turn(t) => {
            conn.prepare_cached("INSERT INTO sessions(key) VALUES (?1) ON CONFLICT DO NOTHING")?
                .execute([t.session])?;
            conn.prepare_cached(
                "INSERT INTO turns(turn_id, session, seq, started_at, ended_at, input, cwd, \
                   exit_code, interrupted, truncated, spool_start, spool_end, content_bytes, \
                   text_bytes, message_bytes, text, message, content) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                   ?17, ?18) \
                 ON CONFLICT DO NOTHING",
            )?
            .execute(params![
                t.turn_id,
                t.session,
                to_sql(t.seq),
                t.started_at.map(to_sql),
                to_sql(t.ended_at),
                t.input,
                t.cwd,
                t.exit_code,
                t.interrupted,
                t.truncated,
                t.spool_span.map(|(start, _)| to_sql(start)),
                t.spool_span.map(|(_, end)| to_sql(end)),
                to_sql_len(t.content.len()),
                to_sql_len(t.text.len()),
                t.message.map(|m| to_sql_len(m.len())),
                t.text,
                t.message,
                t.content,
            ])?;
        }
        Record::Event(e) => {
            if let Some(session) = e.session {
                conn.prepare_cached(
                    "INSERT INTO sessions(key) VALUES (?1) ON CONFLICT DO NOTHING",
                )?
                .execute([session])?;
            }
            conn.prepare_cached(
                "INSERT INTO events(seq, time, kind, session, payload) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT DO NOTHING",
            )?
            .execute(params![
                to_sql(e.seq),
                to_sql(e.time),
                e.kind,
                e.session,
                e.payload
            ])?;
        }
    }
    Ok(())
}

/// Remembers the highest event id stored so far in `meta`, before events are deleted.
fn keep_event_seq(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE meta SET value = max(value, (SELECT COALESCE(max(seq), 0) FROM events)) \
         WHERE key = 'event_seq'",
        [],
    )
    .map(drop)
}

/// Makes `dir` (and its parents) if missing, mode 0700, and takes every right of group and
/// others from an existing one.
fn make_private_dir(dir: &Path) -> Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| HistoryError::io(dir, "create the folder", e))?;
    let mode = fs::metadata(dir)
        .map_err(|e| HistoryError::io(dir, "read the folder", e))?
        .permissions()
        .mode();
    // Narrowed only: group and others lose every right, the owner's stay as they are (a folder
    // made read-only on purpose stays so).
    if mode & 0o077 != 0 {
        fs::set_permissions(dir, Permissions::from_mode(mode & 0o700))
            .map_err(|e| HistoryError::io(dir, "narrow the folder's mode to 0700", e))?;
    }
    Ok(())
}

/// Opens `path` for reading and writing, made with mode 0600 if missing, never truncated: the
/// history's files (the database, the journal) are the user's alone.
pub(crate) fn open_private(path: &Path) -> std::io::Result<fs::File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Makes the database file with mode 0600 if missing (before SQLite does, with the process's
/// umask), or narrows an existing one to 0600; and checks it can be opened for writing.
fn make_private_file(path: &Path) -> Result<()> {
    let file = open_private(path)
        .map_err(|e| HistoryError::io(path, "open the database for writing", e))?;
    let meta = file
        .metadata()
        .map_err(|e| HistoryError::io(path, "read the database's mode", e))?;
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(Permissions::from_mode(meta.permissions().mode() & 0o600))
            .map_err(|e| HistoryError::io(path, "narrow the database's mode to 0600", e))?;
    }
    Ok(())
}

/// The default folder from the values of `XDG_STATE_HOME` and `HOME`.
fn state_dir(xdg_state_home: Option<OsString>, home: Option<OsString>) -> Result<PathBuf> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(state) = absolute(xdg_state_home) {
        return Ok(state.join("clippy"));
    }
    absolute(home)
        .map(|home| home.join(".local/state/clippy"))
        .ok_or(HistoryError::NoStateDir)
}

/// A command line as the JSON array stored.
fn command_json(command: &[String]) -> String {
    serde_json::Value::from(command.to_vec()).to_string()
}

/// Session keys as a JSON array, for `IN (SELECT value FROM json_each(?))`.
pub(crate) fn keys_json(keys: &[String]) -> String {
    serde_json::Value::from(keys.to_vec()).to_string()
}

/// A Unix-ms time, seq or size as SQLite's integer (saturating: nothing real gets near 2^63).
pub(crate) fn to_sql(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A length as SQLite's integer.
fn to_sql_len(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// An SQLite integer as a time, seq or size (this crate writes none below 0).
pub(crate) fn from_sql(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// A row count.
fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_dir_follows_xdg_then_home() {
        let dir =
            |x: Option<&str>, h: Option<&str>| state_dir(x.map(Into::into), h.map(Into::into));
        assert_eq!(
            dir(Some("/state"), Some("/home/u")).ok(),
            Some(PathBuf::from("/state/clippy"))
        );
        assert_eq!(
            dir(Some("relative"), Some("/home/u")).ok(),
            Some(PathBuf::from("/home/u/.local/state/clippy"))
        );
        assert_eq!(
            dir(None, Some("/home/u")).ok(),
            Some(PathBuf::from("/home/u/.local/state/clippy"))
        );
        assert!(matches!(dir(None, None), Err(HistoryError::NoStateDir)));
        assert!(matches!(
            dir(Some(""), Some("")),
            Err(HistoryError::NoStateDir)
        ));
    }

    #[test]
    fn the_bundled_sqlite_has_fts5() {
        let conn = Connection::open_in_memory().expect("open");
        let options: Vec<String> = conn
            .prepare("PRAGMA compile_options")
            .expect("prepare")
            .query_map([], |row| row.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        assert!(options.iter().any(|o| o == "ENABLE_FTS5"), "{options:?}");
        conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5(x)")
            .expect("an FTS5 table");
    }

    #[test]
    fn the_forget_all_trigger_is_the_schema_one() {
        assert!(schema::MIGRATIONS[0].contains(schema::TURN_DELETED_TRIGGER.trim()));
    }

    #[test]
    fn a_store_is_send() {
        fn send<T: Send>() {}
        send::<Store>();
    }
}
