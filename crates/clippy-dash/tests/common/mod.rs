//! Broker messages for the tests, built from JSON as the wire carries them (fields a newer
//! protocol adds take their defaults).
#![allow(dead_code)]

use clippy_dash::{App, Input, Reply};
use clippy_proto::{EventRecord, SessionState, SessionSummary};
use serde_json::{Value, json};

pub const T0: u64 = 1_800_000_000_000;

pub fn summary(id: &str, name: &str, command: &str) -> SessionSummary {
    serde_json::from_value(json!({
        "session": id, "name": name, "pid": 1, "command": command.split(' ').collect::<Vec<_>>(),
        "preset": "shell", "connected": true, "turns": 0, "bracketed_paste": true,
    }))
    .expect("a summary")
}

pub fn status(id: &str, mode: &str, extra: Value) -> Box<SessionState> {
    let mut v = json!({
        "session": id, "pid": 1, "connected": true, "mode": mode, "exec_running": false,
        "resume_cursor": 0, "bracketed_paste": true, "waiters": 0,
    });
    if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
        v.extend(extra.clone());
    }
    Box::new(serde_json::from_value(v).expect("a status"))
}

pub fn event(kind: &str, session: &str, extra: Value) -> Box<EventRecord> {
    let mut v =
        json!({"id": 1, "ts": "2027-01-15T08:00:00.000Z", "type": kind, "session": session});
    if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
        v.extend(extra.clone());
    }
    Box::new(serde_json::from_value(v).expect("an event"))
}

/// A dashboard with these sessions (id, name, mode), every one's status answered.
pub fn app_with(sessions: &[(&str, &str, &str)], bell: bool) -> App {
    let mut app = App::new(bell);
    app.handle(Input::Broker(true), T0);
    let list = sessions
        .iter()
        .map(|(id, name, _)| summary(id, name, "bash"))
        .collect();
    app.handle(Input::Reply(Reply::Sessions(list)), T0);
    for (id, _, mode) in sessions {
        app.handle(Input::Reply(Reply::Status(status(id, mode, json!({})))), T0);
    }
    app
}

pub fn order(app: &App) -> Vec<String> {
    app.shown().iter().map(|s| s.id.clone()).collect()
}
