//! Resource notifications driven by the broker's event stream: a session registered or gone
//! changes the resource list (`notifications/resources/list_changed`); a completed turn updates
//! the session's `…/turn/latest` (`notifications/resources/updated`, to a client that
//! subscribed to it). A thread follows the stream on a connection of its own; it never starts a
//! broker (a broker stopped on purpose stays stopped) and looks again every second while none
//! answers.

use std::path::PathBuf;
use std::time::Duration;

use clippy_client::{ClientError, Connection, Endpoint, Events};
use clippy_proto::EventRecord;
use tokio::sync::mpsc::UnboundedSender;

/// The events that change what the resources say.
const TYPES: [&str; 3] = ["session.registered", "session.exited", "turn.completed"];

/// How often the follower looks for a broker, and for its server having ended.
const PAUSE: Duration = Duration::from_secs(1);

/// What changed, for the notifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Sessions came or went (or the broker did): the resource list changed.
    Sessions,
    /// A session completed a turn: its latest-turn resource changed. The names it goes by in
    /// resource URIs: its id, and its name when it has one.
    Turn(Vec<String>),
}

/// What an event means for the resources.
pub fn change_of(event: &EventRecord) -> Option<Change> {
    match event.kind.as_str() {
        "session.registered" | "session.exited" => Some(Change::Sessions),
        "turn.completed" => {
            let mut names: Vec<String> = event.session.iter().cloned().collect();
            names.extend(event.name.iter().cloned());
            Some(Change::Turn(names))
        }
        _ => None,
    }
}

/// Follows the broker at `socket` for as long as `changes` has a receiver, sending what the
/// resources' readers should hear about. Blocking: run it on a thread of its own.
pub fn follow(socket: PathBuf, timeout: Duration, changes: UnboundedSender<Change>) {
    let mut connected_before = false;
    while !changes.is_closed() {
        let Ok(mut events) = subscribe(&socket, timeout) else {
            std::thread::sleep(PAUSE);
            continue;
        };
        // Sessions may have come and gone while no broker answered.
        if connected_before && changes.send(Change::Sessions).is_err() {
            return;
        }
        connected_before = true;
        loop {
            match events.next_event() {
                Ok(event) => {
                    if let Some(change) = change_of(&event)
                        && changes.send(change).is_err()
                    {
                        return;
                    }
                }
                Err(ClientError::NoAnswer { .. }) => {
                    if changes.is_closed() {
                        return;
                    }
                }
                // The broker went away: its sessions with it.
                Err(_) => {
                    if changes.send(Change::Sessions).is_err() {
                        return;
                    }
                    break;
                }
            }
        }
    }
}

/// A connection subscribed to [`TYPES`] from now on, reading with a [`PAUSE`] timeout.
fn subscribe(socket: &std::path::Path, timeout: Duration) -> Result<Events, ClientError> {
    let types: Vec<String> = TYPES.iter().map(|t| (*t).to_owned()).collect();
    Connection::connect(&Endpoint::new(socket, timeout))?.subscribe(None, &types, Some(PAUSE))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, session: Option<&str>, name: Option<&str>) -> EventRecord {
        serde_json::from_value(serde_json::json!({
            "id": 1,
            "ts": "2026-11-26T00:00:00.000Z",
            "type": kind,
            "session": session,
            "name": name,
        }))
        .expect("an event")
    }

    #[test]
    fn sessions_change_the_list_and_turns_their_latest_turn() {
        assert_eq!(
            change_of(&event("session.registered", Some("k3"), Some("rev"))),
            Some(Change::Sessions)
        );
        assert_eq!(
            change_of(&event("session.exited", Some("k3"), None)),
            Some(Change::Sessions)
        );
        assert_eq!(
            change_of(&event("turn.completed", Some("k3"), Some("rev"))),
            Some(Change::Turn(vec!["k3".into(), "rev".into()]))
        );
        assert_eq!(change_of(&event("route.handoff", Some("k3"), None)), None);
    }
}
