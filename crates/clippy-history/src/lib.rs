//! The broker's history store: every session, completed turn and event, kept in a local SQLite
//! database (WAL mode, FTS5 full-text index) so they outlive the broker, and read back by
//! `history`, `search`, `get_turn` and `events --since`.
//!
//! [`Store`] is the whole API: blocking, single-threaded, [`Send`]. The broker owns one on a
//! writer thread of its own, hands it [`Record`]s in batches ([`Store::apply`]: one transaction
//! per batch) and asks it its clients' queries; its request state machine stays pure, emitting
//! "record this" actions. Nothing here reads a clock (times are arguments, Unix milliseconds) or
//! knows the wire: records borrow plain strings and bytes, and events are kept as the JSON the
//! broker gives. The one exception is the broker's side ([`rows_of`], [`answer`]): its records
//! as rows, and its history requests answered with the replies it sends, so the broker's thread
//! only carries them (neither reads a clock either). Durability, file modes and what forgetting does are in [`Store`]'s
//! documentation; [`HistoryError::is_read_only`] and [`HistoryError::is_disk_full`] are the faults
//! the broker warns about and goes on from (a failed write stores nothing of its batch and leaves
//! the store usable).
//!
//! SQLite is compiled in (`rusqlite`'s `bundled` feature, which builds it with FTS5), so the
//! store does not depend on the system's library or its options.
//!
//! # Schema (version 1)
//! `PRAGMA user_version` holds the version. Opening an older database upgrades it, one
//! migration per transaction; a newer one is refused ([`HistoryError::NewerSchema`]) and left
//! as it is, and so is another program's SQLite database ([`HistoryError::Foreign`]: tables but
//! no version, or a version of ours without our tables). Times are Unix milliseconds, sizes bytes, all as SQLite integers.
//!
//! ## Tables
//! - `sessions`: one row per session key (name, command as a JSON array, cwd, start, end and
//!   how it ended); a session known only from its turns or events has a row with just its key.
//! - `turns`: one row per turn; `id` (the rowid) is the full-text index's key, `turn_id` and
//!   `(session, seq)` are each unique. The large columns come last and the text view before the
//!   raw content, so reading metadata touches no overflow page and reading the text view (for
//!   snippets) does not walk the content's.
//! - `turns_fts`: the FTS5 index over `turns.text` (see below).
//! - `events`: one row per event, `seq` (the event id) as the rowid, the event whole in
//!   `payload`.
//! - `meta`: `event_seq`, the highest event id ever stored, so event ids continue after events
//!   are forgotten or pruned.
//!
//! ## The full-text index: external content
//! `turns_fts` is an *external-content* FTS5 table (`content='turns'`): it holds only the index,
//! and reads the text from `turns` when it needs it. Chosen over the alternatives because:
//! - a regular FTS5 table would store every text view a second time;
//! - a contentless (or contentless-delete) table cannot give `snippet()` or `highlight()` — they
//!   need the text — and search must show a snippet with the words marked.
//!
//! The cost of external content is keeping the index in step with `turns`: triggers do it, in
//! the same transaction as the change, for every path (insert, forget, prune); turns are never
//! updated, but a trigger covers that too.
//!
//! A deleted turn's words stay in the index's older segments, masked by a delete marker, until
//! FTS5 merges those segments. Forgetting therefore ends with an `optimize` (every segment
//! merged into one, the masked entries dropped, the old segments' pages freed and then given
//! back to the file system), which costs a pass over the index. FTS5's own `secure-delete`
//! option, which removes the entries at once, was measured at about 36 ms per deleted turn of
//! 600 distinct words (release build, a 300-turn index): far too slow for pruning thousands.
//!
//! The tokenizer is `porter unicode61 remove_diacritics 2`: words split on Unicode letters and
//! digits, case and diacritics folded, English suffixes stemmed (`migrations` finds
//! `migration`). Snippets show the text as stored, whatever the folding.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod broker;
mod drain;
mod error;
mod journal;
mod query;
mod read;
mod record;
mod schema;
mod store;

pub use broker::{Answer, MAX_EVENTS, answer, rows_of, texts_of, waits_for_journal};
pub use drain::{DrainPace, PORTION_BYTES};
pub use error::{Cause, HistoryError};
pub use journal::{JOURNAL_FILE, Journal, JournaledRecord};
pub use query::{
    Deleted, HistoryQuery, QuerySyntax, SearchHit, SearchQuery, StoreStats, StoredEvent,
    StoredSession, StoredTurn, TurnSummary, words_to_fts,
};
pub use record::{EventRecord, Record, SessionEnd, SessionRecord, TurnRecord};
pub use store::{DB_FILE, Store};
