//! What the broker reads: the queries, the rows they return, and the safe translation of a
//! user's words into an FTS5 query.

/// `history`'s filters. Turns are returned newest first (by completion time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// Only the turns of this session: a session key, else every session of that name, else
    /// every session whose key starts with it (see [`Store::sessions`](crate::Store::sessions)).
    /// A session that matches nothing gives no turns.
    pub session: Option<String>,
    /// Only turns completed at or after this time (Unix ms).
    pub since: Option<u64>,
    /// Only turns completed before this time (Unix ms).
    pub until: Option<u64>,
    /// At most this many turns (0 is taken as 1).
    pub limit: u32,
}

impl Default for HistoryQuery {
    /// Every session, all time, at most 50 turns.
    fn default() -> Self {
        HistoryQuery {
            session: None,
            since: None,
            until: None,
            limit: 50,
        }
    }
}

/// How [`SearchQuery::text`] is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QuerySyntax {
    /// The user's words, never query syntax (the default): each whitespace-separated word is
    /// quoted, so quotes, `-`, `*`, `(`, `NEAR`, `AND`, `OR`, `NOT`, `column:` are matched as
    /// text, and every word must appear. Nothing typed is an error; words with no letter or
    /// digit match nothing by themselves and are otherwise ignored.
    #[default]
    Words,
    /// FTS5 query syntax (phrases, `OR`, `NOT`, `NEAR`, `prefix*`) when the text parses as
    /// such; text that does not parse is read as [`QuerySyntax::Words`] instead, so this never
    /// fails on the user's input either.
    Fts5,
}

/// `search`'s words, filters and snippet shape. Results come best match first (BM25).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// What to look for, as a user typed it (see [`QuerySyntax`]).
    pub text: String,
    /// How `text` is read.
    pub syntax: QuerySyntax,
    /// Only the turns of this session (as [`HistoryQuery::session`]).
    pub session: Option<String>,
    /// Only turns completed at or after this time (Unix ms).
    pub since: Option<u64>,
    /// Only turns completed before this time (Unix ms).
    pub until: Option<u64>,
    /// At most this many hits (0 is taken as 1).
    pub limit: u32,
    /// What goes before each word found in the snippet (default `[`).
    pub mark_open: String,
    /// What goes after each word found in the snippet (default `]`).
    pub mark_close: String,
    /// What marks text left out at either end of the snippet (default `…`).
    pub ellipsis: String,
    /// How many words (tokens) the snippet holds, 1 to 64 (default 16; clamped).
    pub snippet_words: u8,
}

impl SearchQuery {
    /// A search for `text` (the user's words) with the defaults: every session, all time, at
    /// most 20 hits, words marked `[` `]`, a 16-word snippet.
    #[must_use]
    pub fn new(text: impl Into<String>) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            syntax: QuerySyntax::Words,
            session: None,
            since: None,
            until: None,
            limit: 20,
            mark_open: "[".to_owned(),
            mark_close: "]".to_owned(),
            ellipsis: "…".to_owned(),
            snippet_words: 16,
        }
    }
}

/// A stored turn's metadata, with its session's, as `history` and `search` list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSummary {
    /// `<session>:<seq>`: [`Store::get_turn`](crate::Store::get_turn) reads it.
    pub turn_id: String,
    /// The session key.
    pub session: String,
    /// The turn's sequence number in its session.
    pub seq: u64,
    /// The session's name, if it had one.
    pub session_name: Option<String>,
    /// The session's command line (empty when not recorded).
    pub command: Vec<String>,
    /// The working directory: the turn's (OSC 7) when the stream carried one, else the one the
    /// session's command started in.
    pub cwd: Option<String>,
    /// When the turn started, Unix ms, when known.
    pub started_at: Option<u64>,
    /// When the turn completed, Unix ms.
    pub ended_at: u64,
    /// The submitted line(s), when known.
    pub input: Option<String>,
    /// The exit code the shell reported, when it did.
    pub exit_code: Option<i32>,
    /// The user interrupted the turn.
    pub interrupted: bool,
    /// The content was cut at the size limit.
    pub truncated: bool,
    /// The turn's span in its session's spool, when known.
    pub spool_span: Option<(u64, u64)>,
    /// Bytes of raw content stored.
    pub content_bytes: u64,
    /// Bytes of text view stored.
    pub text_bytes: u64,
    /// Bytes of the agent's own message, when there is one.
    pub message_bytes: Option<u64>,
    /// When the session ended, if the store was told (Unix ms).
    pub session_ended_at: Option<u64>,
}

/// A turn found by [`Store::search`](crate::Store::search).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The turn.
    pub turn: TurnSummary,
    /// A piece of the text view around the words found, each between the query's marks.
    pub snippet: String,
    /// How well it matches: BM25, negated so that higher is better (hits come sorted by it,
    /// best first).
    pub score: f64,
}

/// A stored turn, whole: [`Store::get_turn`](crate::Store::get_turn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTurn {
    /// Its metadata and its session's.
    pub summary: TurnSummary,
    /// The raw content, byte for byte as recorded.
    pub content: Vec<u8>,
    /// The text view, exactly as recorded.
    pub text: String,
    /// The agent's own final message, when there is one.
    pub message: Option<String>,
}

/// A stored session: [`Store::sessions`](crate::Store::sessions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    /// The session key.
    pub key: String,
    /// Its name, if any.
    pub name: Option<String>,
    /// Its command line (empty when not recorded).
    pub command: Vec<String>,
    /// Where its command started, when known.
    pub cwd: Option<String>,
    /// When it registered, Unix ms (`None` when only its turns or end were recorded).
    pub started_at: Option<u64>,
    /// When it ended, Unix ms, if the store was told.
    pub ended_at: Option<u64>,
    /// Its exit code (or 128 + signal), when known.
    pub exit_code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
    /// Turns stored.
    pub turns: u64,
}

/// A stored event: [`Store::events_since`](crate::Store::events_since).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its id.
    pub seq: u64,
    /// When, Unix ms.
    pub time: u64,
    /// Its type.
    pub kind: String,
    /// The session it is about, if any.
    pub session: Option<String>,
    /// The event as recorded.
    pub payload: String,
}

/// What [`Store::forget_session`](crate::Store::forget_session),
/// [`Store::forget_all`](crate::Store::forget_all) and [`Store::prune`](crate::Store::prune)
/// deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deleted {
    /// Sessions.
    pub sessions: u64,
    /// Turns.
    pub turns: u64,
    /// Events.
    pub events: u64,
}

/// The store's size and contents: [`Store::stats`](crate::Store::stats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Sessions stored.
    pub sessions: u64,
    /// Turns stored.
    pub turns: u64,
    /// Events stored.
    pub events: u64,
    /// The database's size: pages × page size (the committed pages, those still in the WAL
    /// included).
    pub bytes: u64,
    /// Of `bytes`, the free pages not yet given back to the file system.
    pub free_bytes: u64,
}

/// The user's words as an FTS5 query that cannot be a syntax error: every whitespace-separated
/// word becomes a string (`"…"`, inner quotes doubled), and the strings are joined by spaces
/// (FTS5's implicit AND). `None` when there is no word at all.
///
/// A word is tokenized inside its quotes like the text was, so `foo-bar` is the phrase
/// `foo bar`, and a word without letters or digits is an empty phrase, which FTS5 ignores next to
/// others (and which matches nothing alone).
#[must_use]
pub fn words_to_fts(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 8);
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push('"');
        for c in word.chars() {
            match c {
                '"' => out.push_str("\"\""),
                // NUL would end the string for SQLite's tokenizer; it is no letter either.
                '\0' => out.push(' '),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted() {
        assert_eq!(words_to_fts("  "), None);
        assert_eq!(words_to_fts("foo"), Some("\"foo\"".into()));
        assert_eq!(
            words_to_fts("foo-bar \"x NEAR("),
            Some("\"foo-bar\" \"\"\"x\" \"NEAR(\"".into())
        );
        assert_eq!(words_to_fts("a\0b"), Some("\"a b\"".into()));
    }
}
