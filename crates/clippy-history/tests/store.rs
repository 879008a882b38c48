//! The store on real SQLite files: what goes in comes back exactly, listed, searched, forgotten
//! and pruned as documented.
#![allow(missing_docs)]

mod common;

use std::time::Duration;

use clippy_history::{
    Deleted, HistoryQuery, QuerySyntax, Record, SearchQuery, SessionEnd, Store, TurnRecord,
};
use common::{Scratch, command, event, files_holding, session, turn};

fn open(scratch: &Scratch) -> Store {
    Store::open(&scratch.store_dir()).expect("open the store")
}

#[test]
fn a_turn_comes_back_byte_for_byte() {
    let scratch = Scratch::new("round-trip");
    let mut store = open(&scratch);
    let cmd = command();
    store
        .record_session(&session("s1", Some("rev"), &cmd, 100))
        .expect("session");

    let mut content: Vec<u8> = (0..=255u8).collect();
    content.extend_from_slice(b"\xff\xfe\x80 invalid \0 utf-8 \xc3\x28 \x1b[31mred\x1b[0m\r\n");
    let text = "text with a NUL \0 in it, ünïcödé, 日本語, 👩‍💻\r\n\ttrailing  ";
    let message = "**bold** and `code`\0";
    let record = TurnRecord {
        turn_id: "s1:1",
        session: "s1",
        seq: 1,
        started_at: Some(1_000),
        ended_at: 2_000,
        input: Some("line one\nline two"),
        content: &content,
        text,
        message: Some(message),
        interrupted: true,
        truncated: true,
        exit_code: Some(-3),
        cwd: Some("/tmp/ü"),
        spool_span: Some((17, 17 + content.len() as u64)),
    };
    store.record_turn(&record).expect("turn");
    let empty = TurnRecord {
        turn_id: "s1:2",
        seq: 2,
        content: b"",
        text: "",
        message: None,
        input: None,
        cwd: None,
        spool_span: None,
        exit_code: None,
        started_at: None,
        interrupted: false,
        truncated: false,
        ..record
    };
    store.record_turn(&empty).expect("empty turn");
    let big: Vec<u8> = (0..4 << 20)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    store
        .record_turn(&turn("s1:3", "s1", 3, 3_000, "big", &big))
        .expect("4 MiB turn");

    let stored = store.get_turn("s1:1").expect("read").expect("stored");
    assert_eq!(stored.content, content);
    assert_eq!(stored.text, text);
    assert_eq!(stored.message.as_deref(), Some(message));
    let s = &stored.summary;
    assert_eq!(s.turn_id, "s1:1");
    assert_eq!((s.session.as_str(), s.seq), ("s1", 1));
    assert_eq!(s.session_name.as_deref(), Some("rev"));
    assert_eq!(s.command, cmd);
    assert_eq!(s.cwd.as_deref(), Some("/tmp/ü"), "the turn's own cwd first");
    assert_eq!((s.started_at, s.ended_at), (Some(1_000), 2_000));
    assert_eq!(s.input.as_deref(), Some("line one\nline two"));
    assert_eq!(s.exit_code, Some(-3));
    assert!(s.interrupted && s.truncated);
    assert_eq!(s.spool_span, Some((17, 17 + content.len() as u64)));
    assert_eq!(s.content_bytes, content.len() as u64);
    assert_eq!(s.text_bytes, text.len() as u64);
    assert_eq!(s.message_bytes, Some(message.len() as u64));
    assert_eq!(s.session_ended_at, None);

    let stored = store.get_turn("s1:2").expect("read").expect("stored");
    assert_eq!(stored.content, b"");
    assert_eq!(stored.text, "");
    assert_eq!(stored.message, None);
    assert_eq!(
        stored.summary.cwd.as_deref(),
        Some("/src/app"),
        "else the session's"
    );
    assert_eq!(stored.summary.started_at, None);
    assert_eq!(stored.summary.spool_span, None);

    let stored = store.get_turn("s1:3").expect("read").expect("stored");
    assert!(stored.content == big, "4 MiB content differs");
}

#[test]
fn an_unknown_turn_is_none() {
    let scratch = Scratch::new("unknown");
    let store = open(&scratch);
    assert_eq!(store.get_turn("nope:1").expect("read"), None);
    assert_eq!(store.get_turn("").expect("read"), None);
    assert_eq!(store.latest_turn("nope").expect("read"), None);
}

#[test]
fn recording_again_changes_nothing() {
    let scratch = Scratch::new("idempotent");
    let mut store = open(&scratch);
    let first = turn("s:1", "s", 1, 10, "first words", b"first");
    store.record_turn(&first).expect("turn");
    let again = turn("s:1", "s", 1, 99, "other words", b"other");
    store.record_turn(&again).expect("the same id again");
    let same_seq = turn("s:1-bis", "s", 1, 99, "other words", b"other");
    store
        .record_turn(&same_seq)
        .expect("the same session and seq again");
    let batch = [
        Record::Turn(turn("s:2", "s", 2, 20, "second", b"2")),
        Record::Event(event(1, Some("s"), "{\"id\":1}")),
        Record::Event(event(2, None, "{\"id\":2}")),
    ];
    store.apply(&batch).expect("batch");
    store.apply(&batch).expect("the batch again");
    store
        .record_event(&event(1, None, "changed"))
        .expect("event again");

    let stats = store.stats().expect("stats");
    assert_eq!((stats.turns, stats.events, stats.sessions), (2, 2, 1));
    let stored = store.get_turn("s:1").expect("read").expect("stored");
    assert_eq!(
        (stored.text.as_str(), stored.summary.ended_at),
        ("first words", 10)
    );
    assert!(
        store
            .search(&SearchQuery::new("other"))
            .expect("search")
            .is_empty()
    );
    let events = store.events_since(0, 10).expect("events");
    assert_eq!(events[0].payload, "{\"id\":1}");
}

#[test]
fn history_is_newest_first_and_filtered() {
    let scratch = Scratch::new("history");
    let mut store = open(&scratch);
    let cmd = command();
    let other_cmd = vec!["bash".to_owned()];
    store
        .apply(&[
            Record::Session(session("aaa111", Some("rev"), &cmd, 100)),
            Record::Session(session("aaa222", Some("rev"), &cmd, 200)),
            Record::Session(session("bbb333", Some("dev"), &other_cmd, 300)),
        ])
        .expect("sessions");
    let texts: Vec<String> = (0..9).map(|i| format!("turn number {i}")).collect();
    let keys = ["aaa111", "aaa222", "bbb333"];
    let ids: Vec<String> = (0..9)
        .map(|i| format!("{}:{}", keys[i % 3], i / 3 + 1))
        .collect();
    // Completion times out of insertion order: 1000, 1900, 1200, 1300, …
    let records: Vec<Record<'_>> = (0..9)
        .map(|i| {
            let at = if i == 1 {
                1_900
            } else {
                1_000 + 100 * i as u64
            };
            Record::Turn(turn(
                &ids[i],
                keys[i % 3],
                (i / 3 + 1) as u64,
                at,
                &texts[i],
                b"x",
            ))
        })
        .collect();
    store.apply(&records).expect("turns");

    let all = store.history(&HistoryQuery::default()).expect("history");
    let order: Vec<&str> = all.iter().map(|t| t.turn_id.as_str()).collect();
    assert_eq!(
        order,
        [
            "aaa222:1", "bbb333:3", "aaa222:3", "aaa111:3", "bbb333:2", "aaa222:2", "aaa111:2",
            "bbb333:1", "aaa111:1"
        ]
    );
    assert_eq!(all[1].session_name.as_deref(), Some("dev"));
    assert_eq!(all[1].command, other_cmd);
    assert_eq!(all[1].cwd.as_deref(), Some("/src/app"));

    let q = |session: Option<&str>, since, until, limit| {
        store
            .history(&HistoryQuery {
                session: session.map(Into::into),
                since,
                until,
                limit,
            })
            .expect("history")
            .into_iter()
            .map(|t| t.turn_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(q(None, None, None, 2), ["aaa222:1", "bbb333:3"]);
    assert_eq!(q(None, None, None, 0).len(), 1, "a limit of 0 is 1");
    assert_eq!(
        q(Some("bbb333"), None, None, 50),
        ["bbb333:3", "bbb333:2", "bbb333:1"]
    );
    assert_eq!(q(Some("dev"), None, None, 50).len(), 3, "by name");
    assert_eq!(
        q(Some("rev"), None, None, 50).len(),
        6,
        "every session of that name"
    );
    assert_eq!(q(Some("aaa2"), None, None, 50).len(), 3, "by key prefix");
    assert_eq!(
        q(Some("aaa"), None, None, 50).len(),
        6,
        "every key with that prefix"
    );
    assert!(q(Some("zzz"), None, None, 50).is_empty());
    assert!(q(Some(""), None, None, 50).is_empty());
    // since is inclusive, until exclusive.
    assert_eq!(
        q(None, Some(1_600), Some(1_900), 50),
        ["bbb333:3", "aaa222:3", "aaa111:3"]
    );
    assert_eq!(
        q(Some("rev"), Some(1_300), None, 50),
        ["aaa222:1", "aaa222:3", "aaa111:3", "aaa222:2", "aaa111:2"]
    );

    let sessions = store.sessions("rev").expect("sessions");
    assert_eq!(sessions.len(), 2);
    assert_eq!((sessions[0].key.as_str(), sessions[0].turns), ("aaa111", 3));
    assert_eq!(store.sessions("aaa111").expect("sessions").len(), 1);

    let latest = store.latest_turn("rev").expect("latest").expect("a turn");
    assert_eq!(latest.summary.turn_id, "aaa222:1");
    assert_eq!(store.max_turn_seq_for("aaa111").expect("seq"), 3);
    assert_eq!(store.max_turn_seq_for("nope").expect("seq"), 0);
}

#[test]
fn a_session_ends_and_registers_again() {
    let scratch = Scratch::new("session-end");
    let mut store = open(&scratch);
    let cmd = command();
    store
        .record_session(&session("s", Some("a"), &cmd, 500))
        .expect("session");
    store
        .record_session_end(&SessionEnd {
            key: "s",
            ended_at: 900,
            exit_code: Some(130),
            signal: Some(2),
        })
        .expect("end");
    let s = &store.sessions("s").expect("sessions")[0];
    assert_eq!(
        (s.ended_at, s.exit_code, s.signal),
        (Some(900), Some(130), Some(2))
    );
    assert_eq!((s.started_at, s.name.as_deref()), (Some(500), Some("a")));
    assert_eq!(s.command, cmd);

    // A broker restarted: the session registers again, later, without a name.
    store
        .record_session(&clippy_history::SessionRecord {
            name: None,
            command: &[],
            cwd: None,
            ..session("s", None, &cmd, 700)
        })
        .expect("again");
    let s = &store.sessions("s").expect("sessions")[0];
    assert_eq!((s.ended_at, s.exit_code, s.signal), (None, None, None));
    assert_eq!((s.started_at, s.name.as_deref()), (Some(500), Some("a")));
    assert_eq!(
        (s.command.clone(), s.cwd.as_deref()),
        (cmd.clone(), Some("/src/app"))
    );

    // An end for a session never recorded records it.
    store
        .record_session_end(&SessionEnd {
            key: "t",
            ended_at: 1,
            exit_code: None,
            signal: None,
        })
        .expect("end");
    assert_eq!(store.sessions("t").expect("sessions")[0].started_at, None);
}

fn search(store: &Store, query: SearchQuery) -> Vec<(String, String)> {
    store
        .search(&query)
        .expect("search")
        .into_iter()
        .map(|h| (h.turn.turn_id, h.snippet))
        .collect()
}

#[test]
fn search_ranks_by_bm25_and_marks_the_words() {
    let scratch = Scratch::new("search");
    let mut store = open(&scratch);
    let cmd = command();
    let filler = "The build finished and the tests passed without a single warning. ".repeat(20);
    let once = format!("{filler} The reviewer said the migration looks fine. {filler}");
    let texts = [
        "The migration drops the users table; the migration must run first.".to_owned(),
        once,
        "Nothing about it here, only cargo output.".to_owned(),
        "Migrations are applied in order.".to_owned(),
    ];
    let ids = ["a:1", "a:2", "b:1", "b:2"];
    store
        .apply(&[
            Record::Session(session("a", Some("rev"), &cmd, 0)),
            Record::Session(session("b", Some("dev"), &cmd, 0)),
        ])
        .expect("sessions");
    for (i, text) in texts.iter().enumerate() {
        let (key, seq) = ids[i].split_once(':').expect("id");
        store
            .record_turn(&turn(
                ids[i],
                key,
                seq.parse().expect("seq"),
                1_000 * (i as u64 + 1),
                text,
                b"",
            ))
            .expect("turn");
    }

    let hits = store
        .search(&SearchQuery::new("migration"))
        .expect("search");
    let order: Vec<&str> = hits.iter().map(|h| h.turn.turn_id.as_str()).collect();
    assert_eq!(order.len(), 3, "{order:?}");
    assert_eq!(
        order[0], "a:1",
        "two mentions in a short text rank first: {order:?}"
    );
    assert_eq!(
        order[2], "a:2",
        "one mention in a long text ranks last: {order:?}"
    );
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(
        hits[0].snippet.contains("The [migration] drops"),
        "{}",
        hits[0].snippet
    );
    assert!(
        hits[1].snippet.contains("[Migrations] are"),
        "stemmed: {}",
        hits[1].snippet
    );
    assert!(
        hits[2].snippet.contains('…'),
        "a long text is cut: {}",
        hits[2].snippet
    );
    assert_eq!(hits[0].turn.session_name.as_deref(), Some("rev"));

    let mut q = SearchQuery::new("MIGRATION users");
    q.mark_open = "<b>".into();
    q.mark_close = "</b>".into();
    let found = search(&store, q);
    assert_eq!(found.len(), 1, "every word must appear");
    assert!(
        found[0]
            .1
            .contains("<b>migration</b> drops the <b>users</b>"),
        "{}",
        found[0].1
    );

    let mut q = SearchQuery::new("migration");
    q.session = Some("dev".into());
    assert_eq!(
        search(&store, q)
            .iter()
            .map(|h| h.0.as_str())
            .collect::<Vec<_>>(),
        ["b:2"]
    );
    let mut q = SearchQuery::new("migration");
    q.since = Some(2_000);
    q.until = Some(4_000);
    assert_eq!(
        search(&store, q)
            .iter()
            .map(|h| h.0.as_str())
            .collect::<Vec<_>>(),
        ["a:2"]
    );
    let mut q = SearchQuery::new("migration");
    q.limit = 1;
    assert_eq!(search(&store, q).len(), 1);
    let mut q = SearchQuery::new("migration");
    q.session = Some("nobody".into());
    assert!(search(&store, q).is_empty());
    let mut q = SearchQuery::new("reviewer");
    q.snippet_words = 3;
    let found = search(&store, q);
    let snippet = &found[0].1;
    assert!(
        snippet.starts_with('…') && snippet.ends_with('…'),
        "{snippet:?}"
    );
    assert_eq!(
        snippet.replace('…', " ").split_whitespace().count(),
        3,
        "{snippet:?}"
    );

    assert!(search(&store, SearchQuery::new("absentword")).is_empty());
    assert!(search(&store, SearchQuery::new("   ")).is_empty());
}

#[test]
fn no_query_is_an_error() {
    let scratch = Scratch::new("hostile");
    let mut store = open(&scratch);
    let texts = [
        "foo-bar \"x NEAR( the (parens) and col:on AND OR NOT * ^caret",
        "plain words only",
    ];
    store
        .apply(&[
            Record::Turn(turn("s:1", "s", 1, 1, texts[0], b"")),
            Record::Turn(turn("s:2", "s", 2, 2, texts[1], b"")),
        ])
        .expect("turns");
    let long = "word ".repeat(5_000);
    let hostile = [
        "foo-bar \"x",
        "NEAR(",
        "NEAR(a b, 2)",
        "\"",
        "\"\"",
        "'",
        "*",
        "foo*",
        "^foo",
        "-foo",
        "+",
        "(",
        ")",
        "()",
        "{a b}",
        "text:foo",
        "col:on",
        "AND",
        "OR NOT",
        "a OR",
        "NOT",
        ":",
        "\\",
        "%_",
        "\0",
        "a\0b",
        "日本語",
        "👩‍💻",
        "\u{202e}",
        &long,
        "",
    ];
    for text in hostile {
        for syntax in [QuerySyntax::Words, QuerySyntax::Fts5] {
            let mut q = SearchQuery::new(text);
            q.syntax = syntax;
            if let Err(e) = store.search(&q) {
                panic!("{text:?} ({syntax:?}): {e}");
            }
        }
    }
    let words = |text: &str| search(&store, SearchQuery::new(text));
    assert_eq!(words("foo-bar \"x").len(), 1);
    assert_eq!(words("NEAR(").len(), 1, "NEAR is a word here");
    assert_eq!(words("col:on").len(), 1);
    assert_eq!(words("OR NOT").len(), 1);
    assert!(words("plain OR absent").is_empty(), "OR is a word too");

    let fts = |text: &str| {
        let mut q = SearchQuery::new(text);
        q.syntax = QuerySyntax::Fts5;
        search(&store, q)
    };
    assert_eq!(
        fts("plain OR absent").len(),
        1,
        "FTS5 syntax when it parses"
    );
    assert_eq!(fts("plai*").len(), 1);
    assert_eq!(fts("\"plain words\"").len(), 1);
    assert_eq!(fts("foo-bar \"x").len(), 1, "else the words");
}

#[test]
fn events_replay_and_their_ids_continue() {
    let scratch = Scratch::new("events");
    let mut store = open(&scratch);
    assert_eq!(store.max_event_seq().expect("max"), 0);
    let payloads: Vec<String> = (1..=10)
        .map(|i| format!("{{\"id\":{i},\"type\":\"turn.completed\",\"message\":\"é\\u0000\"}}"))
        .collect();
    let records: Vec<Record<'_>> = (1..=10)
        .map(|i| {
            Record::Event(event(
                i,
                (i % 2 == 0).then_some("s"),
                &payloads[i as usize - 1],
            ))
        })
        .collect();
    store.apply(&records).expect("events");

    let page = store.events_since(3, 4).expect("events");
    let seqs: Vec<u64> = page.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [4, 5, 6, 7]);
    assert_eq!(page[0].payload, payloads[3]);
    assert_eq!(page[0].session.as_deref(), Some("s"));
    assert_eq!(page[1].session, None);
    assert_eq!(
        (page[0].time, page[0].kind.as_str()),
        (1_004, "turn.completed")
    );
    assert!(store.events_since(10, 5).expect("events").is_empty());
    assert_eq!(store.max_event_seq().expect("max"), 10);

    store.forget_session("s").expect("forget");
    let left: Vec<u64> = store
        .events_since(0, 100)
        .expect("events")
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(left, [1, 3, 5, 7, 9], "the session's events went with it");
    store.forget_all().expect("forget all");
    assert!(store.events_since(0, 100).expect("events").is_empty());
    assert_eq!(
        store.max_event_seq().expect("max"),
        10,
        "ids continue after forgotten ones"
    );
    drop(store);
    assert_eq!(open(&scratch).max_event_seq().expect("max"), 10);
}

/// Records sessions `keep` and `gone` with turns and events; `gone`'s text, content, input,
/// message and events hold `secret`.
fn two_sessions(store: &mut Store, secret: &str) {
    let cmd = command();
    let gone_text = format!("the password is {secret} do not tell\n");
    let gone_content = format!("\x1b[1m{secret}\x1b[0m in the raw bytes");
    let gone_input = format!("echo {secret}");
    let gone_payload = format!("{{\"input\":\"{secret}\"}}");
    let keep_text = "the keeper remembers keepsake\n";
    let mut gone_turn = turn("gone:1", "gone", 1, 10, &gone_text, gone_content.as_bytes());
    gone_turn.input = Some(&gone_input);
    gone_turn.message = Some(&gone_text);
    let filler = "a filler line so that the pages fill up\n".repeat(100);
    let mut records = vec![
        Record::Session(session("keep", Some("keeper"), &cmd, 1)),
        Record::Session(session("gone", Some("secretive"), &cmd, 2)),
        Record::Turn(gone_turn),
        Record::Turn(turn(
            "keep:1",
            "keep",
            1,
            11,
            keep_text,
            keep_text.as_bytes(),
        )),
        Record::Event(event(1, Some("gone"), &gone_payload)),
        Record::Event(event(2, Some("keep"), "{}")),
    ];
    let ids: Vec<String> = (2..40).map(|i| format!("keep:{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        records.push(Record::Turn(turn(
            id,
            "keep",
            i as u64 + 2,
            20 + i as u64,
            &filler,
            filler.as_bytes(),
        )));
    }
    store.apply(&records).expect("records");
}

#[test]
fn a_forgotten_session_leaves_no_trace_in_the_files() {
    let scratch = Scratch::new("forget");
    let dir = scratch.store_dir();
    let secret = "zqxjkvtoken";
    let mut store = open(&scratch);
    two_sessions(&mut store, secret);
    assert!(
        !files_holding(&dir, secret.as_bytes()).is_empty(),
        "the scan finds it before"
    );
    assert_eq!(search(&store, SearchQuery::new(secret)).len(), 1);

    let deleted = store.forget_session("secretive").expect("forget");
    assert_eq!(
        deleted,
        Deleted {
            sessions: 1,
            turns: 1,
            events: 1
        }
    );
    // The stemmed index term is a prefix of the word.
    let needle = &secret.as_bytes()[..8];
    assert_eq!(
        files_holding(&dir, needle),
        Vec::<std::path::PathBuf>::new(),
        "while open"
    );
    assert!(search(&store, SearchQuery::new(secret)).is_empty());
    assert_eq!(store.get_turn("gone:1").expect("read"), None);
    assert!(store.sessions("gone").expect("sessions").is_empty());
    assert_eq!(
        search(&store, SearchQuery::new("keepsake")).len(),
        1,
        "the other stays"
    );
    assert!(store.integrity_problems().expect("check").is_empty());
    drop(store);
    assert_eq!(
        files_holding(&dir, needle),
        Vec::<std::path::PathBuf>::new(),
        "closed"
    );
    assert!(
        !files_holding(&dir, b"keepsake").is_empty(),
        "the scan still works"
    );

    let store = open(&scratch);
    assert!(search(&store, SearchQuery::new(secret)).is_empty());
    assert_eq!(store.stats().expect("stats").turns, 39);
}

#[test]
fn forgetting_everything_leaves_no_trace_and_gives_the_space_back() {
    let scratch = Scratch::new("forget-all");
    let dir = scratch.store_dir();
    let secret = "qwxzvbtoken";
    let mut store = open(&scratch);
    two_sessions(&mut store, secret);
    let before = store.stats().expect("stats");
    assert!(store.forget_session("nobody").expect("forget") == Deleted::default());
    let deleted = store.forget_all().expect("forget all");
    assert_eq!(
        deleted,
        Deleted {
            sessions: 2,
            turns: 40,
            events: 2
        }
    );
    let after = store.stats().expect("stats");
    assert_eq!((after.turns, after.events, after.sessions), (0, 0, 0));
    assert!(after.bytes < before.bytes / 2, "{before:?} → {after:?}");
    assert_eq!(after.free_bytes, 0);
    for needle in [&secret.as_bytes()[..8], b"keepsake", b"filler line"] {
        assert!(
            files_holding(&dir, needle).is_empty(),
            "{:?}",
            String::from_utf8_lossy(needle)
        );
    }
    assert!(
        store
            .search(&SearchQuery::new("keepsake"))
            .expect("search")
            .is_empty()
    );
    // Still usable.
    store
        .record_turn(&turn("n:1", "n", 1, 5, "anew", b""))
        .expect("turn");
    assert_eq!(search(&store, SearchQuery::new("anew")).len(), 1);
    drop(store);
    assert!(files_holding(&dir, b"keepsake").is_empty());
}

#[test]
fn pruning_by_age_deletes_what_is_older() {
    let scratch = Scratch::new("prune-age");
    let mut store = open(&scratch);
    let cmd = command();
    let day = 86_400_000u64;
    let now = 100 * day;
    let texts: Vec<String> = (0..10).map(|i| format!("day {i} words")).collect();
    let ids: Vec<String> = (0..10).map(|i| format!("old:{}", i + 1)).collect();
    let mut records = vec![
        Record::Session(session("old", None, &cmd, 0)),
        Record::SessionEnd(SessionEnd {
            key: "old",
            ended_at: now - 50 * day,
            exit_code: Some(0),
            signal: None,
        }),
        Record::Session(session("new", None, &cmd, now - 20 * day)),
        Record::Turn(turn("new:1", "new", 1, now - day, "recent words", b"")),
        Record::Event(EventAt::at(1, now - 40 * day)),
        Record::Event(EventAt::at(2, now - day)),
    ];
    for i in 0..10 {
        // 10 turns, 90 days ago to 45 days ago.
        records.push(Record::Turn(turn(
            &ids[i],
            "old",
            i as u64 + 1,
            now - (90 - 5 * i as u64) * day,
            &texts[i],
            b"",
        )));
    }
    store.apply(&records).expect("records");
    let deleted = store
        .prune(Some(Duration::from_secs(30 * 86_400)), None, now)
        .expect("prune");
    assert_eq!(
        deleted,
        Deleted {
            sessions: 1,
            turns: 10,
            events: 1
        }
    );
    let stats = store.stats().expect("stats");
    assert_eq!((stats.turns, stats.events, stats.sessions), (1, 1, 1));
    assert!(
        store
            .search(&SearchQuery::new("day"))
            .expect("search")
            .is_empty()
    );
    assert_eq!(
        store
            .prune(Some(Duration::from_secs(30 * 86_400)), None, now)
            .expect("prune"),
        Deleted::default()
    );
    assert_eq!(store.max_event_seq().expect("max"), 2);
}

struct EventAt;
impl EventAt {
    fn at(seq: u64, time: u64) -> clippy_history::EventRecord<'static> {
        clippy_history::EventRecord {
            seq,
            time,
            kind: "x",
            session: None,
            payload: "{}",
        }
    }
}

#[test]
fn pruning_by_size_deletes_the_oldest_until_under() {
    let scratch = Scratch::new("prune-size");
    let dir = scratch.store_dir();
    let mut store = open(&scratch);
    // 300 turns of ~4 KiB of varied words each (and as much raw content).
    let texts: Vec<String> = (0..300u64)
        .map(|i| {
            (0..600u64)
                .map(|w| format!("w{:x}", (i * 7919 + w * 104_729) % 5_000))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let ids: Vec<String> = (0..300).map(|i| format!("s:{}", i + 1)).collect();
    let records: Vec<Record<'_>> = (0..300)
        .map(|i| {
            Record::Turn(turn(
                &ids[i],
                "s",
                i as u64 + 1,
                1_000 + i as u64,
                &texts[i],
                texts[i].as_bytes(),
            ))
        })
        .chain((1..=300).map(|i| Record::Event(EventAt::at(i, 1_000 + i))))
        .collect();
    store.apply(&records).expect("records");
    let before = store.stats().expect("stats");
    assert!(before.bytes > 2_000_000, "{before:?}");
    let file_before = std::fs::metadata(dir.join("history.sqlite3"))
        .expect("file")
        .len()
        + std::fs::metadata(dir.join("history.sqlite3-wal")).map_or(0, |m| m.len());

    let max = 1_000_000;
    let deleted = store.prune(None, Some(max), 0).expect("prune");
    let after = store.stats().expect("stats");
    assert!(after.bytes <= max, "{after:?}");
    assert!(
        after.bytes > max / 2,
        "not much more than needed: {after:?}"
    );
    assert_eq!(after.free_bytes, 0, "free pages given back");
    assert_eq!(after.turns, 300 - deleted.turns);
    assert!(deleted.events > 0);
    // The newest are kept, the oldest gone, nothing in between.
    let kept = store
        .history(&HistoryQuery {
            limit: 1_000,
            ..Default::default()
        })
        .expect("history");
    assert_eq!(kept[0].turn_id, "s:300");
    assert_eq!(kept.last().map(|t| t.seq), Some(deleted.turns + 1));
    // Events go up to the newest turn deleted.
    let oldest_kept = kept.last().map_or(0, |t| t.ended_at);
    assert_eq!(
        store.events_since(0, 1).expect("events")[0].time,
        oldest_kept
    );
    assert!(store.integrity_problems().expect("check").is_empty());
    drop(store);
    let file_after = std::fs::metadata(dir.join("history.sqlite3"))
        .expect("file")
        .len();
    assert!(
        file_after <= max,
        "the file shrank: {file_before} → {file_after}"
    );

    // Under a limit smaller than an empty store, everything goes, and that is all.
    let mut store = open(&scratch);
    store.prune(None, Some(1), 0).expect("prune");
    let stats = store.stats().expect("stats");
    assert_eq!((stats.turns, stats.events), (0, 0));
}

#[test]
fn everything_is_there_after_a_reopen() {
    let scratch = Scratch::new("reopen");
    let secret = "persistentword";
    {
        let mut store = open(&scratch);
        two_sessions(&mut store, secret);
        store
            .record_session_end(&SessionEnd {
                key: "gone",
                ended_at: 99,
                exit_code: Some(1),
                signal: None,
            })
            .expect("end");
    }
    let store = open(&scratch);
    let stats = store.stats().expect("stats");
    assert_eq!((stats.sessions, stats.turns, stats.events), (2, 40, 2));
    let hit = &store.search(&SearchQuery::new(secret)).expect("search")[0];
    assert_eq!(hit.turn.turn_id, "gone:1");
    assert_eq!(hit.turn.session_ended_at, Some(99));
    let turn = store.get_turn("gone:1").expect("read").expect("stored");
    assert_eq!(
        turn.content,
        format!("\x1b[1m{secret}\x1b[0m in the raw bytes").as_bytes()
    );
    assert_eq!(store.max_event_seq().expect("max"), 2);
    assert_eq!(
        store
            .history(&HistoryQuery::default())
            .expect("history")
            .len(),
        40
    );
    assert!(store.integrity_problems().expect("check").is_empty());
}

#[test]
fn a_forgotten_session_leaves_no_trace_after_the_index_merged_its_segments_many_times() {
    // Deleted pages are zeroed only where that costs no more writes (`secure_delete = FAST`):
    // the full-text index's merges, run as turns come in, leave freed pages with old segments
    // (the secret's words among them) on the free list. Forgetting gives every free page back
    // to the file system and empties the WAL, so none of them is in the files afterwards.
    let scratch = Scratch::new("forget-merged");
    let dir = scratch.store_dir();
    let secret = "vxqzjwtoken";
    let mut store = open(&scratch);
    let cmd = command();
    store
        .apply(&[
            Record::Session(session("keep", Some("keeper"), &cmd, 1)),
            Record::Session(session("gone", Some("secretive"), &cmd, 2)),
        ])
        .expect("sessions");
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
    ];
    for i in 0..300u64 {
        // One transaction each, as a broker that is never behind writes: a new index segment
        // each time, merged with the older ones as they pile up.
        let id = format!("keep:{}", i + 1);
        let text = format!(
            "{} turn {i} {}\n",
            words[(i % 7) as usize],
            words[((i / 7) % 7) as usize]
        )
        .repeat(20);
        let mut records = vec![Record::Turn(turn(
            &id,
            "keep",
            i + 1,
            100 + i,
            &text,
            text.as_bytes(),
        ))];
        let gone_id = format!("gone:{}", i / 10 + 1);
        let gone_text = format!("the password is {secret} number {i}\n");
        if i % 10 == 0 {
            records.push(Record::Turn(turn(
                &gone_id,
                "gone",
                i / 10 + 1,
                100 + i,
                &gone_text,
                gone_text.as_bytes(),
            )));
        }
        store.apply(&records).expect("records");
    }
    assert_eq!(search(&store, SearchQuery::new(secret)).len(), 20);
    store.forget_session("secretive").expect("forget");
    let needle = &secret.as_bytes()[..8];
    assert_eq!(
        files_holding(&dir, needle),
        Vec::<std::path::PathBuf>::new(),
        "while open"
    );
    assert!(store.integrity_problems().expect("check").is_empty());
    assert_eq!(search(&store, SearchQuery::new("foxtrot")).len(), 20);
    drop(store);
    assert_eq!(
        files_holding(&dir, needle),
        Vec::<std::path::PathBuf>::new(),
        "closed"
    );
}
