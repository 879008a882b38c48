//! Reading the store: `history`, `search`, `get_turn`, sessions, events, ids and sizes.

use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Row, params};

use crate::error::HistoryError;
use crate::query::{
    HistoryQuery, QuerySyntax, SearchHit, SearchQuery, StoreStats, StoredEvent, StoredSession,
    StoredTurn, TurnSummary, words_to_fts,
};
use crate::store::{Result, Store, from_sql, keys_json, to_sql};

/// The columns [`summary`] reads, from `turns t LEFT JOIN sessions s`.
const SUMMARY: &str = "t.turn_id, t.session, t.seq, s.name, s.command, COALESCE(t.cwd, s.cwd), \
    t.started_at, t.ended_at, t.input, t.exit_code, t.interrupted, t.truncated, t.spool_start, \
    t.spool_end, t.content_bytes, t.text_bytes, t.message_bytes, s.ended_at";

/// How many columns [`SUMMARY`] has: the next one is at this index.
const SUMMARY_COLUMNS: usize = 18;

/// The columns of [`StoredSession`], from `sessions`.
const SESSION: &str = "key, name, command, cwd, started_at, ended_at, exit_code, signal, \
    (SELECT count(*) FROM turns WHERE turns.session = sessions.key)";

impl Store {
    /// Turns of every session or of some, newest first (by completion time), with their
    /// session's name, command and cwd.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn history(&self, query: &HistoryQuery) -> Result<Vec<TurnSummary>> {
        let op = "list the history";
        let mut args = Vec::new();
        let Some(filters) = self.filters(
            query.session.as_deref(),
            query.since,
            query.until,
            &mut args,
        )?
        else {
            return Ok(Vec::new());
        };
        args.push(Value::Integer(i64::from(query.limit.max(1))));
        let sql = format!(
            "SELECT {SUMMARY} FROM turns t LEFT JOIN sessions s ON s.key = t.session \
             WHERE 1 {filters} ORDER BY t.ended_at DESC, t.id DESC LIMIT ?{}",
            args.len()
        );
        let sqlite = |e| HistoryError::sqlite(&self.db, op, e);
        let mut stmt = self.conn.prepare_cached(&sql).map_err(sqlite)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), summary)
            .map_err(sqlite)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sqlite)
    }

    /// Full-text search over the turns' text views, best match first (BM25), each hit with a
    /// snippet around the words found. The user's words never make an error (see
    /// [`QuerySyntax`]); no word at all finds nothing.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn search(&self, query: &SearchQuery) -> Result<Vec<SearchHit>> {
        let words = words_to_fts(&query.text);
        match query.syntax {
            QuerySyntax::Words => match words {
                Some(words) => self.run_search(query, &words),
                None => Ok(Vec::new()),
            },
            QuerySyntax::Fts5 => match self.run_search(query, &query.text) {
                Ok(hits) => Ok(hits),
                // Not FTS5 syntax (or no column of that name): the user's words, then.
                Err(HistoryError::Sqlite { source, .. })
                    if source.sqlite_error_code() == Some(rusqlite::ErrorCode::Unknown) =>
                {
                    match words {
                        Some(words) => self.run_search(query, &words),
                        None => Ok(Vec::new()),
                    }
                }
                Err(e) => Err(e),
            },
        }
    }

    /// A stored turn, whole, by its id (`<session>:<seq>` as recorded); `None` when no turn of
    /// that id is stored.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn get_turn(&self, turn_id: &str) -> Result<Option<StoredTurn>> {
        let sql = format!(
            "SELECT {SUMMARY}, t.text, t.message, t.content \
             FROM turns t LEFT JOIN sessions s ON s.key = t.session WHERE t.turn_id = ?1"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.query_row([turn_id], stored_turn).optional())
            .map_err(|e| HistoryError::sqlite(&self.db, "read a turn", e))
    }

    /// The latest stored turn (by completion time) of the sessions `session` names (as
    /// [`Store::sessions`]); `None` when they have none.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn latest_turn(&self, session: &str) -> Result<Option<StoredTurn>> {
        let keys = self.resolve_sessions(session)?;
        if keys.is_empty() {
            return Ok(None);
        }
        let sql = format!(
            "SELECT {SUMMARY}, t.text, t.message, t.content \
             FROM turns t LEFT JOIN sessions s ON s.key = t.session \
             WHERE t.session IN (SELECT value FROM json_each(?1)) \
             ORDER BY t.ended_at DESC, t.seq DESC LIMIT 1"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.query_row([keys_json(&keys)], stored_turn).optional())
            .map_err(|e| HistoryError::sqlite(&self.db, "read a session's latest turn", e))
    }

    /// The stored sessions `session` names: the one whose key it is; else every session of
    /// that name; else every session whose key starts with it (none for `""`). Oldest first.
    /// `history`, `search`, `latest_turn` and `forget_session` read a session argument this
    /// way; a caller that wants exactly one can check how many this returns.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn sessions(&self, session: &str) -> Result<Vec<StoredSession>> {
        let keys = self.resolve_sessions(session)?;
        let sql = format!(
            "SELECT {SESSION} FROM sessions WHERE key IN (SELECT value FROM json_each(?1)) \
             ORDER BY started_at, key"
        );
        let sqlite = |e| HistoryError::sqlite(&self.db, "list sessions", e);
        let mut stmt = self.conn.prepare_cached(&sql).map_err(sqlite)?;
        let rows = stmt
            .query_map([keys_json(&keys)], stored_session)
            .map_err(sqlite)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sqlite)
    }

    /// The events after `since` (by id), oldest first, at most `limit`: call again from the
    /// last one's `seq` for more.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn events_since(&self, since: u64, limit: u32) -> Result<Vec<StoredEvent>> {
        let sqlite = |e| HistoryError::sqlite(&self.db, "read events", e);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, time, kind, session, payload FROM events WHERE seq > ?1 \
                 ORDER BY seq LIMIT ?2",
            )
            .map_err(sqlite)?;
        let rows = stmt
            .query_map(params![to_sql(since), i64::from(limit)], |row| {
                Ok(StoredEvent {
                    seq: from_sql(row.get(0)?),
                    time: from_sql(row.get(1)?),
                    kind: row.get(2)?,
                    session: row.get(3)?,
                    payload: row.get(4)?,
                })
            })
            .map_err(sqlite)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sqlite)
    }

    /// The highest turn seq stored for the session `key` (0 when none).
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn max_turn_seq_for(&self, key: &str) -> Result<u64> {
        self.conn
            .prepare_cached("SELECT COALESCE(max(seq), 0) FROM turns WHERE session = ?1")
            .and_then(|mut stmt| stmt.query_row([key], |row| row.get::<_, i64>(0)))
            .map(from_sql)
            .map_err(|e| HistoryError::sqlite(&self.db, "read the highest turn seq", e))
    }

    /// The highest event id ever stored (0 when none), counting events since forgotten or
    /// pruned: a broker numbers its events from the one after, so an id is never handed out
    /// twice.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn max_event_seq(&self) -> Result<u64> {
        self.conn
            .query_row(
                "SELECT max((SELECT COALESCE(max(seq), 0) FROM events), \
                            (SELECT COALESCE(max(value), 0) FROM meta WHERE key = 'event_seq'))",
                [],
                |row| row.get::<_, i64>(0),
            )
            .map(from_sql)
            .map_err(|e| HistoryError::sqlite(&self.db, "read the highest event id", e))
    }

    /// What the store holds, and its size.
    ///
    /// # Errors
    /// On an SQLite failure.
    pub fn stats(&self) -> Result<StoreStats> {
        let (sessions, turns, events) = self
            .conn
            .query_row(
                "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM turns), \
                        (SELECT count(*) FROM events)",
                [],
                |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, i64>(2)?,
                    ))
                },
            )
            .map_err(|e| HistoryError::sqlite(&self.db, "count what is stored", e))?;
        let page_size = self.pragma_u64("page_size")?;
        Ok(StoreStats {
            sessions: from_sql(sessions),
            turns: from_sql(turns),
            events: from_sql(events),
            bytes: self.pragma_u64("page_count")?.saturating_mul(page_size),
            free_bytes: self.pragma_u64("freelist_count")?.saturating_mul(page_size),
        })
    }

    /// The keys of the sessions `session` names (see [`Store::sessions`]).
    pub(crate) fn resolve_sessions(&self, session: &str) -> Result<Vec<String>> {
        let sqlite = |e| HistoryError::sqlite(&self.db, "find a session", e);
        let keys = |sql: &str| -> Result<Vec<String>> {
            let mut stmt = self.conn.prepare_cached(sql).map_err(sqlite)?;
            let rows = stmt
                .query_map([session], |row| row.get(0))
                .map_err(sqlite)?;
            rows.collect::<rusqlite::Result<Vec<String>>>()
                .map_err(sqlite)
        };
        let exact = keys("SELECT key FROM sessions WHERE key = ?1")?;
        if !exact.is_empty() {
            return Ok(exact);
        }
        let named = keys("SELECT key FROM sessions WHERE name = ?1 ORDER BY started_at, key")?;
        if !named.is_empty() || session.is_empty() {
            return Ok(named);
        }
        keys(
            "SELECT key FROM sessions WHERE substr(key, 1, length(?1)) = ?1 \
             ORDER BY started_at, key",
        )
    }

    /// The `AND …` clauses for a session argument and a time range, their values pushed to
    /// `args` (numbered from 1 in order). `None` when the session argument names no session.
    fn filters(
        &self,
        session: Option<&str>,
        since: Option<u64>,
        until: Option<u64>,
        args: &mut Vec<Value>,
    ) -> Result<Option<String>> {
        let mut sql = String::new();
        if let Some(session) = session {
            let keys = self.resolve_sessions(session)?;
            if keys.is_empty() {
                return Ok(None);
            }
            args.push(Value::Text(keys_json(&keys)));
            sql.push_str(&format!(
                " AND t.session IN (SELECT value FROM json_each(?{}))",
                args.len()
            ));
        }
        if let Some(since) = since {
            args.push(Value::Integer(to_sql(since)));
            sql.push_str(&format!(" AND t.ended_at >= ?{}", args.len()));
        }
        if let Some(until) = until {
            args.push(Value::Integer(to_sql(until)));
            sql.push_str(&format!(" AND t.ended_at < ?{}", args.len()));
        }
        Ok(Some(sql))
    }

    /// [`Store::search`] with `fts` as the FTS5 query.
    fn run_search(&self, query: &SearchQuery, fts: &str) -> Result<Vec<SearchHit>> {
        let op = "search";
        let mut args = vec![
            Value::Text(query.mark_open.clone()),
            Value::Text(query.mark_close.clone()),
            Value::Text(query.ellipsis.clone()),
            Value::Integer(i64::from(query.snippet_words.clamp(1, 64))),
            Value::Text(fts.to_owned()),
        ];
        let Some(filters) = self.filters(
            query.session.as_deref(),
            query.since,
            query.until,
            &mut args,
        )?
        else {
            return Ok(Vec::new());
        };
        args.push(Value::Integer(i64::from(query.limit.max(1))));
        let sql = format!(
            "SELECT {SUMMARY}, snippet(turns_fts, 0, ?1, ?2, ?3, ?4), bm25(turns_fts) \
             FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid \
             LEFT JOIN sessions s ON s.key = t.session \
             WHERE turns_fts MATCH ?5 {filters} ORDER BY turns_fts.rank LIMIT ?{}",
            args.len()
        );
        let sqlite = |e| HistoryError::sqlite(&self.db, op, e);
        let mut stmt = self.conn.prepare_cached(&sql).map_err(sqlite)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), |row| {
                Ok(SearchHit {
                    turn: summary(row)?,
                    snippet: row.get(SUMMARY_COLUMNS)?,
                    score: -row.get::<_, f64>(SUMMARY_COLUMNS + 1)?,
                })
            })
            .map_err(sqlite)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sqlite)
    }
}

/// A [`TurnSummary`] from the [`SUMMARY`] columns.
fn summary(row: &Row<'_>) -> rusqlite::Result<TurnSummary> {
    let opt =
        |i| -> rusqlite::Result<Option<u64>> { Ok(row.get::<_, Option<i64>>(i)?.map(from_sql)) };
    let spool = match (opt(12)?, opt(13)?) {
        (Some(start), Some(end)) => Some((start, end)),
        _ => None,
    };
    Ok(TurnSummary {
        turn_id: row.get(0)?,
        session: row.get(1)?,
        seq: from_sql(row.get(2)?),
        session_name: row.get(3)?,
        command: parse_command(row.get(4)?),
        cwd: row.get(5)?,
        started_at: opt(6)?,
        ended_at: from_sql(row.get(7)?),
        input: row.get(8)?,
        exit_code: row.get(9)?,
        interrupted: row.get(10)?,
        truncated: row.get(11)?,
        spool_span: spool,
        content_bytes: from_sql(row.get(14)?),
        text_bytes: from_sql(row.get(15)?),
        message_bytes: opt(16)?,
        session_ended_at: opt(17)?,
    })
}

/// A [`StoredTurn`] from the [`SUMMARY`] columns, then text, message and content.
fn stored_turn(row: &Row<'_>) -> rusqlite::Result<StoredTurn> {
    Ok(StoredTurn {
        summary: summary(row)?,
        text: row.get(SUMMARY_COLUMNS)?,
        message: row.get(SUMMARY_COLUMNS + 1)?,
        content: row.get(SUMMARY_COLUMNS + 2)?,
    })
}

/// A [`StoredSession`] from the [`SESSION`] columns.
fn stored_session(row: &Row<'_>) -> rusqlite::Result<StoredSession> {
    Ok(StoredSession {
        key: row.get(0)?,
        name: row.get(1)?,
        command: parse_command(row.get(2)?),
        cwd: row.get(3)?,
        started_at: row.get::<_, Option<i64>>(4)?.map(from_sql),
        ended_at: row.get::<_, Option<i64>>(5)?.map(from_sql),
        exit_code: row.get(6)?,
        signal: row.get(7)?,
        turns: from_sql(row.get(8)?),
    })
}

/// A stored command line (a JSON array of strings); anything else is taken as one word.
fn parse_command(json: Option<String>) -> Vec<String> {
    match json {
        None => Vec::new(),
        Some(json) => serde_json::from_str(&json).unwrap_or_else(|_| vec![json]),
    }
}
