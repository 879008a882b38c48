//! The broker's records stored through [`clippy_history::rows_of`], and its history requests
//! answered by [`clippy_history::answer`] against a real store and journal: the replies the
//! broker sends, without a broker.

mod common;

use std::sync::Mutex;

use clippy_broker_core::{HistoryQuery, HistoryRecord};
use clippy_history::{Journal, Store, answer, rows_of, texts_of, waits_for_journal};
use clippy_proto::{ErrorReason, EventRecord, Format, Message};
use clippy_registry::{TurnId, TurnRecord};
use common::Scratch;

const T0: u64 = 1_700_000_000_000;

fn session(key: &str, name: &str) -> HistoryRecord {
    HistoryRecord::Session {
        session: key.to_owned(),
        name: Some(name.to_owned()),
        command: common::command(),
        cwd: Some("/src/app".to_owned()),
        started_at: T0,
    }
}

fn turn(session: &str, seq: u64, text: &str) -> HistoryRecord {
    HistoryRecord::Turn {
        record: TurnRecord::new(
            TurnId::new(session, seq).expect("a turn id"),
            T0 + seq,
            text.as_bytes().to_vec(),
            text,
        ),
        ack: None,
    }
}

fn event(id: u64, kind: &str, session: &str) -> HistoryRecord {
    HistoryRecord::Event {
        event: EventRecord {
            id,
            kind: kind.to_owned(),
            session: Some(session.to_owned()),
            ..EventRecord::default()
        },
        time: T0 + id,
    }
}

/// Stores `records` as the broker's history thread does.
fn store(store: &mut Store, records: &[HistoryRecord]) {
    let texts = texts_of(records);
    store
        .apply(&rows_of(records, &texts))
        .expect("the records stored");
}

fn live(sessions: &[&str]) -> Vec<String> {
    sessions.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn history_and_search_list_stored_turns_with_their_session_and_mark_the_live_ones() {
    let scratch = Scratch::new("broker-history");
    let mut db = Store::open(&scratch.store_dir()).expect("open");
    store(
        &mut db,
        &[
            session("s01", "reviewer"),
            turn("s01", 1, "the migration drops a column\n"),
            session("s02", "builder"),
            turn("s02", 1, "cargo build finished\n"),
        ],
    );
    let history = HistoryQuery::History {
        session: None,
        since: None,
        until: None,
        limit: 10,
        live: live(&["s02"]),
    };
    let Message::HistoryTurns { id: 7, turns } = answer(&mut db, None, None, 7, history).reply
    else {
        panic!("not a history reply");
    };
    let mut listed: Vec<_> = turns
        .iter()
        .map(|t| (t.turn_id.as_str(), t.name.as_deref(), t.live))
        .collect();
    listed.sort_unstable();
    assert_eq!(
        listed,
        [
            ("s01:1", Some("reviewer"), false),
            ("s02:1", Some("builder"), true)
        ]
    );
    assert_eq!(turns[0].command, common::command());

    let search = HistoryQuery::Search {
        query: "migrations".to_owned(),
        session: Some("reviewer".to_owned()),
        since: None,
        until: None,
        limit: 10,
        live: Vec::new(),
    };
    let Message::SearchHits { hits, .. } = answer(&mut db, None, None, 8, search).reply else {
        panic!("not a search reply");
    };
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].entry.turn_id, "s01:1");
    assert!(
        hits[0].snippet.contains("[migration]"),
        "{}",
        hits[0].snippet
    );
}

#[test]
fn a_session_argument_naming_nothing_stored_is_session_not_found_and_forgetting_is_logged() {
    let scratch = Scratch::new("broker-forget");
    let mut db = Store::open(&scratch.store_dir()).expect("open");
    store(
        &mut db,
        &[session("s01", "reviewer"), turn("s01", 1, "one\n")],
    );
    let typo = HistoryQuery::Forget {
        session: Some("reviwer".to_owned()),
    };
    let answered = answer(&mut db, None, None, 3, typo);
    assert!(
        matches!(
            answered.reply,
            Message::Error {
                id: 3,
                reason: ErrorReason::SessionNotFound,
                ..
            }
        ),
        "{:?}",
        answered.reply
    );
    assert_eq!(answered.log, None);
    let forget = HistoryQuery::Forget {
        session: Some("reviewer".to_owned()),
    };
    let answered = answer(&mut db, None, None, 4, forget);
    assert_eq!(answered.reply, Message::Forgotten { id: 4, turns: 1 });
    assert_eq!(
        answered.log.as_deref(),
        Some("history: forgot 1 turns and 0 events of reviewer")
    );
}

#[test]
fn get_turn_reads_the_journal_first_and_status_counts_what_it_holds() {
    let scratch = Scratch::new("broker-journal");
    let dir = scratch.store_dir();
    let mut db = Store::open(&dir).expect("open");
    let journal = Mutex::new(Journal::open(&dir, 1 << 20).expect("journal"));
    let records = [
        session("s01", "reviewer"),
        turn("s01", 1, "journaled, not stored\n"),
        event(1, "turn.completed", "s01"),
    ];
    let texts = texts_of(&records);
    journal
        .lock()
        .expect("lock")
        .append(&rows_of(&records, &texts))
        .expect("appended");

    let get = |which: &str, format| HistoryQuery::Turn {
        which: which.to_owned(),
        format,
        missing: (ErrorReason::NoTurn, "not in memory".to_owned()),
    };
    let Message::Turn { turn, content, .. } =
        answer(&mut db, Some(&journal), None, 1, get("s01:1", Format::Text)).reply
    else {
        panic!("not a turn");
    };
    assert_eq!(turn.turn_id, "s01:1");
    assert_eq!(&content[..], b"journaled, not stored\n");
    // A turn with no message from hooks, asked for its message.
    assert!(matches!(
        answer(
            &mut db,
            Some(&journal),
            None,
            2,
            get("reviewer", Format::Message)
        )
        .reply,
        Message::Error {
            reason: ErrorReason::NoMessage,
            ..
        }
    ));
    // Neither in the journal nor in the store: memory's answer stands.
    assert_eq!(
        answer(&mut db, Some(&journal), None, 3, get("s01:9", Format::Raw)).reply,
        Message::error(3, ErrorReason::NoTurn, "not in memory")
    );

    let status = |skipped, holding| HistoryQuery::Status { skipped, holding };
    let Message::HistoryState { history, .. } =
        answer(&mut db, Some(&journal), None, 4, status(0, false)).reply
    else {
        panic!("not a status");
    };
    assert!(history.enabled);
    assert_eq!((history.turns, history.events), (1, 1));
    assert_eq!(history.problem, None);
    // The write problem comes first; without one, what the backlog says.
    let Message::HistoryState { history, .. } = answer(
        &mut db,
        Some(&journal),
        Some("disk full".to_owned()),
        5,
        status(3, true),
    )
    .reply
    else {
        panic!("not a status");
    };
    assert_eq!(history.problem.as_deref(), Some("disk full"));
    let Message::HistoryState { history, .. } =
        answer(&mut db, Some(&journal), None, 6, status(3, true)).reply
    else {
        panic!("not a status");
    };
    assert_eq!(
        history.problem,
        clippy_broker_core::history_backlog_problem(3, true)
    );
}

#[test]
fn events_are_read_back_filtered_and_only_turns_and_the_status_skip_the_journal_wait() {
    let scratch = Scratch::new("broker-events");
    let mut db = Store::open(&scratch.store_dir()).expect("open");
    store(
        &mut db,
        &[
            event(1, "session.registered", "s01"),
            event(2, "turn.completed", "s01"),
            event(3, "route.handoff", "s01"),
        ],
    );
    let events = HistoryQuery::Events {
        since: 1,
        types: vec!["turn".to_owned()],
    };
    assert!(waits_for_journal(&events));
    let Message::Events { events, .. } = answer(&mut db, None, None, 1, events).reply else {
        panic!("not events");
    };
    let kinds: Vec<_> = events.iter().map(|e| (e.id, e.kind.as_str())).collect();
    assert_eq!(kinds, [(2, "turn.completed")]);
    assert!(!waits_for_journal(&HistoryQuery::Status {
        skipped: 0,
        holding: false
    }));
}
