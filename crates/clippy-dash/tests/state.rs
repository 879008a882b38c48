//! The dashboard's state: what it asks for, how it sorts, filters and marks, and what its keys
//! do — fed events, replies and keys as the binary feeds them.

mod common;

use clippy_dash::{Action, Decision, Detail, Input, Key, Overlay, Reply, View};
use clippy_proto::Format;
use common::{T0, app_with, event, order, status, summary};
use serde_json::json;

fn keys(app: &mut clippy_dash::App, typed: &str) -> Vec<Action> {
    typed
        .chars()
        .flat_map(|c| app.handle(Input::Key(Key::Char(c)), T0))
        .collect()
}

#[test]
fn connecting_asks_for_the_sessions_then_each_ones_status_and_the_routes() {
    let mut app = clippy_dash::App::new(true);
    assert_eq!(app.handle(Input::Broker(true), T0), [Action::Refresh]);
    let actions = app.handle(
        Input::Reply(Reply::Sessions(vec![
            summary("s1", "one", "bash"),
            summary("s2", "two", "python3"),
        ])),
        T0,
    );
    assert!(
        actions.contains(&Action::Status("s1".into())),
        "{actions:?}"
    );
    assert!(actions.contains(&Action::Status("s2".into())));
    assert!(actions.contains(&Action::Routes));
    // The first session is selected: its output followed, its screen asked for.
    assert!(actions.contains(&Action::Watch(Some("s1".into()))));
    assert!(actions.contains(&Action::Screen("s1".into())));
}

#[test]
fn what_needs_a_person_comes_first_then_busy_starting_idle_and_ended() {
    let mut app = app_with(
        &[
            ("a", "idle", "idle"),
            ("b", "busy", "busy"),
            ("c", "starting", "starting"),
            ("d", "waits", "busy"),
            ("e", "gone", "idle"),
        ],
        false,
    );
    app.handle(
        Input::Event(event(
            "session.waiting",
            "d",
            json!({"reason": "permission", "tool": "Bash", "input": "{\"command\":\"ls\"}"}),
        )),
        T0 + 10,
    );
    app.handle(
        Input::Event(event("session.exited", "e", json!({"exit_code": 3}))),
        T0 + 20,
    );
    assert_eq!(order(&app), ["d", "b", "c", "a", "e"]);
    // The turn ends and the wait is over: the session goes down with the idle ones.
    app.handle(
        Input::Event(event(
            "session.resumed",
            "d",
            json!({"reason": "permission"}),
        )),
        T0 + 30,
    );
    app.handle(
        Input::Event(event("session.mode", "d", json!({"reason": "idle"}))),
        T0 + 30,
    );
    assert_eq!(order(&app), ["b", "c", "d", "a", "e"]);
    // A session that starts a turn goes up with the busy ones.
    app.handle(
        Input::Event(event(
            "session.mode",
            "a",
            json!({"reason": "busy", "message": "make"}),
        )),
        T0 + 40,
    );
    assert_eq!(order(&app), ["a", "b", "c", "d", "e"]);
    let a = app.session("a").expect("a");
    assert_eq!(a.busy_since, Some(T0 + 40));
    assert_eq!(a.input.as_deref(), Some("make"));
    assert_eq!(app.session("e").expect("e").exited, Some(Some(3)));
}

#[test]
fn typing_after_f_filters_the_list_and_esc_clears_it() {
    let mut app = app_with(
        &[
            ("s1", "web", "idle"),
            ("s2", "pyrepl", "idle"),
            ("s3", "pytest", "idle"),
        ],
        false,
    );
    keys(&mut app, "f");
    assert_eq!(app.overlay(), Some(&Overlay::Filter));
    keys(&mut app, "py");
    assert_eq!(order(&app), ["s2", "s3"]);
    app.handle(Input::Key(Key::Char('t')), T0);
    assert_eq!(order(&app), ["s3"]);
    assert_eq!(
        app.selected(),
        Some("s3"),
        "the selection follows the filter"
    );
    app.handle(Input::Key(Key::Enter), T0);
    assert_eq!(app.overlay(), None);
    assert_eq!(order(&app), ["s3"], "Enter keeps the filter");
    // Keys act again once the filter is kept (q would quit).
    app.handle(Input::Key(Key::Esc), T0);
    assert_eq!(order(&app).len(), 3);
}

#[test]
fn a_session_that_waits_or_ends_a_turn_unseen_is_marked_and_rings_once_seen_it_is_not() {
    let mut app = app_with(&[("s1", "one", "idle"), ("s2", "two", "idle")], true);
    assert_eq!(app.selected(), Some("s1"));
    let actions = app.handle(
        Input::Event(event(
            "turn.completed",
            "s2",
            json!({"turn_id": "s2:1", "byte_length": 4}),
        )),
        T0 + 5,
    );
    assert!(actions.contains(&Action::Bell), "{actions:?}");
    assert!(app.session("s2").expect("s2").attention);
    assert_eq!(app.session("s2").expect("s2").turns, 1);
    // The selected one is seen: no mark, no bell.
    let actions = app.handle(
        Input::Event(event(
            "session.waiting",
            "s1",
            json!({"reason": "question"}),
        )),
        T0 + 6,
    );
    assert!(!actions.contains(&Action::Bell), "{actions:?}");
    assert!(!app.session("s1").expect("s1").attention);
    // Looking at the marked one clears its mark.
    let s2_at = order(&app).iter().position(|id| id == "s2").expect("shown");
    let s1_at = order(&app).iter().position(|id| id == "s1").expect("shown");
    let key = if s2_at > s1_at { Key::Down } else { Key::Up };
    app.handle(Input::Key(key), T0 + 7);
    assert_eq!(app.selected(), Some("s2"));
    assert!(!app.session("s2").expect("s2").attention);
}

#[test]
fn without_the_bell_a_mark_is_silent() {
    let mut app = app_with(&[("s1", "one", "idle"), ("s2", "two", "idle")], false);
    let actions = app.handle(
        Input::Event(event(
            "session.waiting",
            "s2",
            json!({"reason": "permission"}),
        )),
        T0,
    );
    assert!(!actions.contains(&Action::Bell));
    assert!(app.session("s2").expect("s2").attention);
}

#[test]
fn a_and_d_answer_the_selected_sessions_wait_naming_it_and_nothing_when_it_waits_for_nothing() {
    let mut app = app_with(&[("s1", "agent", "busy")], false);
    assert!(keys(&mut app, "a").is_empty());
    assert!(
        app.status()
            .is_some_and(|s| s.contains("waits for nothing"))
    );
    app.handle(
        Input::Reply(Reply::Status(status(
            "s1",
            "busy",
            json!({"waiting": {"id": 3, "kind": "permission", "tool": "Bash", "input": "{}", "since": 5}}),
        ))),
        T0,
    );
    assert_eq!(
        keys(&mut app, "a"),
        [Action::Answer {
            session: "s1".into(),
            decision: Decision::Allow,
            waiting_id: Some(3),
        }]
    );
    // The next wait, as its event names it: the answer names that one.
    app.handle(
        Input::Event(event(
            "session.waiting",
            "s1",
            json!({"reason": "permission", "tool": "Edit", "waiting_id": 4}),
        )),
        T0,
    );
    assert!(matches!(
        keys(&mut app, "a")[..],
        [Action::Answer {
            waiting_id: Some(4),
            ..
        }]
    ));
    assert!(matches!(
        keys(&mut app, "d")[..],
        [Action::Answer {
            decision: Decision::Deny,
            ..
        }]
    ));
    assert!(matches!(
        keys(&mut app, "A")[..],
        [Action::Answer {
            decision: Decision::Always,
            ..
        }]
    ));
}

#[test]
fn the_screen_is_asked_again_for_output_but_never_twice_at_once() {
    let mut app = app_with(&[("s1", "sh", "idle")], false);
    // Asked when selected; output meanwhile is remembered, not asked again.
    assert!(app.handle(Input::Output("s1".into()), T0).is_empty());
    assert!(app.handle(Input::Output("s1".into()), T0).is_empty());
    let actions = app.handle(
        Input::Reply(Reply::Screen {
            session: "s1".into(),
            lines: vec!["$ ls".into()],
        }),
        T0,
    );
    assert_eq!(
        actions,
        [Action::Screen("s1".into())],
        "once more, for the output"
    );
    let actions = app.handle(
        Input::Reply(Reply::Screen {
            session: "s1".into(),
            lines: vec!["$ ls".into(), "a b".into()],
        }),
        T0,
    );
    assert!(actions.is_empty(), "nothing new came: {actions:?}");
    assert!(matches!(app.detail().1, Detail::Lines { lines, .. } if lines.len() == 2));
    assert_eq!(
        app.handle(Input::Output("s1".into()), T0),
        [Action::Screen("s1".into())]
    );
}

#[test]
fn nothing_needs_a_redraw_while_nothing_changes_and_a_busy_session_ticks_each_second() {
    let mut app = app_with(&[("s1", "sh", "idle")], false);
    app.drawn();
    assert!(!app.changed());
    assert_eq!(app.next_tick(T0 + 500), None, "idle: no tick");
    app.handle(
        Input::Event(event("session.mode", "s1", json!({"reason": "busy"}))),
        T0 + 1000,
    );
    assert!(app.changed());
    assert_eq!(app.next_tick(T0 + 1200), Some(T0 + 2000));
    app.handle(
        Input::Event(event("session.mode", "s1", json!({"reason": "idle"}))),
        T0 + 3000,
    );
    assert_eq!(app.next_tick(T0 + 3000), None);
}

#[test]
fn v_cycles_the_detail_and_t_toggles_text_and_message() {
    let mut app = app_with(&[("s1", "agent", "idle")], false);
    assert_eq!(
        keys(&mut app, "v"),
        [Action::Turn {
            target: "s1".into(),
            format: Format::Text
        }]
    );
    assert_eq!(
        keys(&mut app, "t"),
        [Action::Turn {
            target: "s1".into(),
            format: Format::Message
        }]
    );
    app.handle(
        Input::Reply(Reply::Turn {
            target: "s1".into(),
            turn_id: "s1:2".into(),
            format: Format::Message,
            text: "done\nall good".into(),
        }),
        T0,
    );
    assert!(
        matches!(app.detail().1, Detail::Lines { title, lines } if title.contains("s1:2") && lines.len() == 2)
    );
    // A new turn is fetched as it completes.
    let actions = app.handle(
        Input::Event(event("turn.completed", "s1", json!({"turn_id": "s1:3"}))),
        T0,
    );
    assert!(actions.contains(&Action::Turn {
        target: "s1".into(),
        format: Format::Message
    }));
    assert_eq!(keys(&mut app, "v"), [Action::Turns("s1".into())]);
    assert_eq!(keys(&mut app, "v"), [Action::Screen("s1".into())]);
}

#[test]
fn the_editor_sends_its_lines_as_one_bracketed_paste() {
    let mut app = app_with(&[("s1", "agent", "idle")], false);
    keys(&mut app, "s");
    keys(&mut app, "one");
    app.handle(Input::Key(Key::Enter), T0);
    keys(&mut app, "two");
    let actions = app.handle(Input::Key(Key::Ctrl('s')), T0);
    assert_eq!(
        actions,
        [Action::Send {
            session: "s1".into(),
            data: b"\x1b[200~one\ntwo\x1b[201~".to_vec()
        }]
    );
    assert_eq!(app.overlay(), None);
    assert_eq!(clippy_dash::typed("a\nb\n", false), b"a\rb");
}

#[test]
fn a_search_opens_the_turn_found() {
    let mut app = app_with(&[("s1", "agent", "idle")], false);
    keys(&mut app, "/");
    let actions = keys(&mut app, "migration");
    assert!(actions.is_empty(), "q and the others are letters here");
    assert_eq!(
        app.handle(Input::Key(Key::Enter), T0),
        [Action::Search("migration".into())]
    );
    let hit = serde_json::from_value(json!({
        "entry": {"turn_id": "old1:4", "session": "old1", "name": "coder", "timestamp": T0,
        "byte_length": 10, "live": false}, "snippet": "the [migration] runs",
    }))
    .expect("a hit");
    app.handle(Input::Reply(Reply::Hits(vec![hit])), T0);
    assert_eq!(
        app.handle(Input::Key(Key::Enter), T0),
        [Action::Turn {
            target: "old1:4".into(),
            format: Format::Text
        }]
    );
    assert_eq!(app.detail().0, &View::Found("old1:4".into()));
    app.handle(
        Input::Reply(Reply::Turn {
            target: "old1:4".into(),
            turn_id: "old1:4".into(),
            format: Format::Text,
            text: "the migration runs".into(),
        }),
        T0,
    );
    assert!(
        matches!(app.detail().1, Detail::Lines { lines, .. } if lines[0] == "the migration runs")
    );
}

#[test]
fn routes_show_the_inboxes_and_a_and_d_resolve_an_approval() {
    let mut app = app_with(&[("s1", "from", "idle"), ("s2", "to", "idle")], false);
    app.handle(
        Input::Reply(Reply::Status(status("s2", "idle", json!({"inbox": 1})))),
        T0,
    );
    let actions = keys(&mut app, "r");
    assert!(actions.contains(&Action::Routes));
    assert!(actions.contains(&Action::Inbox("s2".into())));
    let item = serde_json::from_value(json!({
        "handoff": "h1", "route": "r1", "turn_id": "s1:1", "byte_length": 3,
        "state": "awaiting_approval", "approval": "a1", "created": T0,
    }))
    .expect("an item");
    app.handle(
        Input::Reply(Reply::Inbox {
            session: "s2".into(),
            items: vec![item],
        }),
        T0,
    );
    assert_eq!(keys(&mut app, "a"), [Action::Approve("a1".into())]);
    assert_eq!(keys(&mut app, "d"), [Action::Deny("a1".into())]);
    // An approval event refreshes the routes, the target's count and its inbox.
    let actions = app.handle(
        Input::Event(event(
            "approval.resolved",
            "s1",
            json!({"to": "s2", "approval": "a1", "reason": "approved"}),
        )),
        T0,
    );
    assert!(actions.contains(&Action::Inbox("s2".into())), "{actions:?}");
    assert!(actions.contains(&Action::Status("s2".into())));
}

#[test]
fn n_starts_a_session_from_its_command_name_and_folder() {
    let mut app = app_with(&[], false);
    keys(&mut app, "n");
    keys(&mut app, "python3 -q");
    app.handle(Input::Key(Key::Tab), T0);
    keys(&mut app, "py");
    app.handle(Input::Key(Key::Tab), T0);
    keys(&mut app, "/tmp");
    assert_eq!(
        app.handle(Input::Key(Key::Enter), T0),
        [Action::Spawn {
            command: vec!["python3".into(), "-q".into()],
            name: Some("py".into()),
            cwd: Some("/tmp".into()),
        }]
    );
}

#[test]
fn x_ends_a_session_only_once_confirmed_and_enter_attaches() {
    let mut app = app_with(&[("s1", "sh", "idle")], false);
    assert!(keys(&mut app, "x").is_empty());
    assert!(keys(&mut app, "n").is_empty(), "not confirmed");
    keys(&mut app, "x");
    assert_eq!(keys(&mut app, "y"), [Action::End("s1".into())]);
    assert_eq!(
        app.handle(Input::Key(Key::Enter), T0),
        [Action::Attach("s1".into())]
    );
    assert_eq!(keys(&mut app, "c"), [Action::Capture("s1".into())]);
    keys(&mut app, "p");
    assert_eq!(
        app.handle(Input::Key(Key::Enter), T0),
        [Action::Paste("s1".into())]
    );
}

#[test]
fn q_and_ctrl_c_quit_and_a_lost_broker_is_shown_and_asked_again_when_back() {
    let mut app = app_with(&[("s1", "sh", "idle")], false);
    app.handle(Input::Broker(false), T0);
    assert!(!app.connected());
    assert_eq!(app.handle(Input::Broker(true), T0), [Action::Refresh]);
    // A broker restarted without the session: it goes.
    app.handle(Input::Reply(Reply::Sessions(vec![])), T0);
    assert!(app.shown().is_empty());
    assert_eq!(keys(&mut app, "q"), [Action::Quit]);
    assert_eq!(app.handle(Input::Key(Key::Ctrl('c')), T0), [Action::Quit]);
}

#[test]
fn the_pacer_lets_a_frame_through_at_most_once_an_interval() {
    let mut pacer = clippy_dash::Pacer::new(25);
    assert_eq!(pacer.wait(T0), None, "the first frame at once");
    pacer.drew(T0);
    assert_eq!(pacer.wait(T0 + 10), Some(T0 + 40));
    assert_eq!(pacer.wait(T0 + 40), None);
}

#[test]
fn the_turn_list_opens_the_chosen_turn_as_text_or_message_and_esc_goes_back() {
    let mut app = app_with(&[("s1", "agent", "idle"), ("s2", "other", "idle")], false);
    keys(&mut app, "v");
    assert_eq!(keys(&mut app, "v"), [Action::Turns("s1".into())]);
    let turns = ["s1:3", "s1:2", "s1:1"]
        .iter()
        .map(|id| {
            serde_json::from_value(json!({"turn_id": id, "timestamp": T0, "byte_length": 5,
            "interrupted": false, "truncated": false}))
            .expect("a turn")
        })
        .collect();
    app.handle(
        Input::Reply(Reply::Turns {
            session: "s1".into(),
            turns,
        }),
        T0,
    );
    // The arrows move in the turn list, not the sessions.
    assert_eq!(app.turn_cursor(), (0, true));
    app.handle(Input::Key(Key::Down), T0);
    app.handle(Input::Key(Key::Down), T0);
    app.handle(Input::Key(Key::Down), T0);
    assert_eq!(app.turn_cursor(), (2, true));
    app.handle(Input::Key(Key::Up), T0);
    assert_eq!(app.selected(), Some("s1"));
    assert_eq!(
        app.handle(Input::Key(Key::Enter), T0),
        [Action::Turn {
            target: "s1:2".into(),
            format: Format::Text
        }]
    );
    app.handle(
        Input::Reply(Reply::Turn {
            target: "s1:2".into(),
            turn_id: "s1:2".into(),
            format: Format::Text,
            text: "second turn".into(),
        }),
        T0,
    );
    assert!(
        matches!(app.detail().1, Detail::Lines { title, lines } if title.contains("s1:2") && lines[0] == "second turn")
    );
    assert_eq!(
        keys(&mut app, "t"),
        [Action::Turn {
            target: "s1:2".into(),
            format: Format::Message
        }]
    );
    // A reply for the other format is not shown in its place.
    app.handle(
        Input::Reply(Reply::Turn {
            target: "s1:2".into(),
            turn_id: "s1:2".into(),
            format: Format::Text,
            text: "late text".into(),
        }),
        T0,
    );
    assert!(
        matches!(app.detail().1, Detail::Lines { lines, .. } if lines[0] == "second turn"),
        "{:?}",
        app.detail()
    );
    // Esc: back to the list, the same turn chosen.
    assert_eq!(
        app.handle(Input::Key(Key::Esc), T0),
        [Action::Turns("s1".into())]
    );
    assert_eq!(app.detail().0, &View::Turns);
    assert_eq!(app.turn_cursor(), (1, true));
    // Esc again gives the arrows back to the sessions; Tab takes them again.
    app.handle(Input::Key(Key::Esc), T0);
    assert_eq!(app.turn_cursor(), (1, false));
    app.handle(Input::Key(Key::Down), T0);
    assert_eq!(app.selected(), Some("s2"));
    app.handle(Input::Key(Key::Tab), T0);
    assert_eq!(app.turn_cursor(), (0, true));
}

#[test]
fn e_in_the_routes_edits_the_handoff_in_the_editor_and_approves_it_with_the_new_text() {
    let mut app = app_with(&[("s1", "from", "idle"), ("s2", "to", "idle")], false);
    app.handle(
        Input::Reply(Reply::Status(status("s2", "idle", json!({"inbox": 2})))),
        T0,
    );
    keys(&mut app, "r");
    let item = |n: u32, text: Option<&str>| {
        serde_json::from_value::<clippy_proto::InboxItem>(json!({
            "handoff": format!("h{n}"), "route": "r1", "turn_id": format!("s1:{n}"),
            "byte_length": 70_000, "state": "awaiting_approval", "approval": format!("a{n}"),
            "created": T0 + u64::from(n), "text": text,
        }))
        .expect("an item")
    };
    app.handle(
        Input::Reply(Reply::Inbox {
            session: "s2".into(),
            items: vec![item(1, Some("draft")), item(2, None)],
        }),
        T0,
    );
    assert!(keys(&mut app, "e").is_empty());
    assert!(
        matches!(app.overlay(), Some(Overlay::EditApproval { approval, text, .. }) if approval == "a1" && text == "draft")
    );
    // The editor's keys: a, d and q are letters here.
    app.handle(Input::Key(Key::Backspace), T0);
    keys(&mut app, "y and done");
    app.handle(Input::Key(Key::Enter), T0);
    keys(&mut app, "q");
    assert_eq!(
        app.handle(Input::Key(Key::Ctrl('s')), T0),
        [Action::ApproveEdited {
            approval: "a1".into(),
            text: "drafy and done\nq".into()
        }]
    );
    assert!(matches!(app.overlay(), Some(Overlay::Routes { at: 0 })));
    // A text too long to carry is said, with the command that edits it.
    app.handle(Input::Key(Key::Down), T0);
    assert!(keys(&mut app, "e").is_empty());
    assert!(matches!(app.overlay(), Some(Overlay::Routes { at: 1 })));
    assert!(
        app.status()
            .is_some_and(|s| s.contains("approve a2 --edit")),
        "{:?}",
        app.status()
    );
    // Esc in the editor goes back to the routes, approving nothing.
    app.handle(Input::Key(Key::Up), T0);
    keys(&mut app, "e");
    assert!(app.handle(Input::Key(Key::Esc), T0).is_empty());
    assert!(matches!(app.overlay(), Some(Overlay::Routes { at: 0 })));
}

#[test]
fn the_attached_terminals_follow_the_list_the_status_and_their_event() {
    let mut app = clippy_dash::App::new(false);
    app.handle(Input::Broker(true), T0);
    let mut listed = summary("s1", "sh", "bash");
    listed.attached = 1;
    app.handle(Input::Reply(Reply::Sessions(vec![listed])), T0);
    assert_eq!(app.session("s1").map(|s| s.attached), Some(1));
    app.handle(
        Input::Event(event("session.attached", "s1", json!({"attached": 2}))),
        T0,
    );
    assert_eq!(app.session("s1").map(|s| s.attached), Some(2));
    app.handle(
        Input::Reply(Reply::Status(status("s1", "idle", json!({"attached": 0})))),
        T0,
    );
    assert_eq!(app.session("s1").map(|s| s.attached), Some(0));
}

#[test]
fn a_busy_sessions_elapsed_time_is_the_wrappers_across_a_broker_restart_and_a_fresh_start() {
    // Started while the turn runs: the status's start, not the dashboard's.
    let mut app = clippy_dash::App::new(false);
    app.handle(Input::Broker(true), T0);
    app.handle(
        Input::Reply(Reply::Sessions(vec![summary("s1", "agent", "claude")])),
        T0,
    );
    let busy = || {
        Input::Reply(Reply::Status(status(
            "s1",
            "busy",
            json!({"busy_since": T0 - 65_000}),
        )))
    };
    app.handle(busy(), T0);
    let state =
        |app: &clippy_dash::App, now| clippy_dash::state_text(app.session("s1").expect("s1"), now);
    assert_eq!(state(&app, T0), "busy 1m05s");
    // The broker restarts: the session goes from the list and comes back, registered
    // again; every session's status is asked again, and the turn's start is the wrapper's.
    app.handle(Input::Broker(false), T0 + 1_000);
    assert_eq!(
        app.handle(Input::Broker(true), T0 + 2_000),
        [Action::Refresh]
    );
    app.handle(Input::Reply(Reply::Sessions(Vec::new())), T0 + 2_000);
    assert!(app.session("s1").is_none());
    app.handle(
        Input::Event(event("session.registered", "s1", json!({"name": "agent"}))),
        T0 + 3_000,
    );
    let actions = app.handle(
        Input::Reply(Reply::Sessions(vec![summary("s1", "agent", "claude")])),
        T0 + 3_000,
    );
    assert!(
        actions.contains(&Action::Status("s1".into())),
        "{actions:?}"
    );
    app.handle(
        Input::Event(event(
            "session.mode",
            "s1",
            json!({"reason": "busy", "since": T0 - 65_000}),
        )),
        T0 + 3_000,
    );
    assert_eq!(state(&app, T0 + 5_000), "busy 1m10s");
    app.handle(busy(), T0 + 5_000);
    assert_eq!(state(&app, T0 + 5_000), "busy 1m10s");
    // A session still listed after a reconnection is asked again too (events were missed).
    app.handle(Input::Broker(false), T0 + 6_000);
    app.handle(Input::Broker(true), T0 + 7_000);
    let actions = app.handle(
        Input::Reply(Reply::Sessions(vec![summary("s1", "agent", "claude")])),
        T0 + 7_000,
    );
    assert!(
        actions.contains(&Action::Status("s1".into())),
        "{actions:?}"
    );
}

#[test]
fn turns_handed_again_to_a_restarted_broker_are_not_news_and_ring_nothing() {
    let mut app = app_with(&[("s1", "sh", "idle"), ("s2", "agent", "idle")], true);
    for n in 1..=2 {
        app.handle(
            Input::Event(event(
                "turn.completed",
                "s2",
                json!({"turn_id": format!("s2:{n}")}),
            )),
            T0,
        );
    }
    // The broker restarts: the dashboard lists the sessions registered again so far (s1),
    // then s2 registers and hands its turns over again.
    app.handle(Input::Broker(false), T0 + 1_000);
    app.handle(Input::Broker(true), T0 + 2_000);
    app.handle(
        Input::Reply(Reply::Sessions(vec![summary("s1", "sh", "bash")])),
        T0 + 2_000,
    );
    assert!(app.session("s2").is_none());
    app.handle(
        Input::Event(event("session.registered", "s2", json!({"name": "agent"}))),
        T0 + 3_000,
    );
    assert_eq!(app.selected(), Some("s1"));
    let mut actions = Vec::new();
    for n in 1..=2 {
        actions.extend(app.handle(
            Input::Event(event(
                "turn.completed",
                "s2",
                json!({"turn_id": format!("s2:{n}")}),
            )),
            T0 + 3_000,
        ));
    }
    assert!(!actions.contains(&Action::Bell), "{actions:?}");
    assert!(!app.session("s2").expect("s2").attention);
    // A turn that really is new is.
    let actions = app.handle(
        Input::Event(event("turn.completed", "s2", json!({"turn_id": "s2:3"}))),
        T0 + 4_000,
    );
    assert!(actions.contains(&Action::Bell), "{actions:?}");
    assert!(app.session("s2").expect("s2").attention);
}
