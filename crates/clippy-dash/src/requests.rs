//! The dashboard's requests as client-layer calls: which `clippy-client` call each
//! [`Action`] is, what its reply says, and which label a failure gets. The binary runs
//! [`Requests::serve`] on its own thread and hands each [`Reply`] back to the
//! [`App`](crate::App); the rules (the labels, which failures drop the connection, which queued
//! requests are made once) are the functions here, with no I/O.

use std::time::Duration;

use clippy_client::{ClientError, Connection, Endpoint, SearchQuery};
use clippy_proto::Format;

use crate::app::{Action, Reply};

/// The name [`Requests::serve`] gives the broker as who answered a waiting permission.
pub const ANSWERED_BY: &str = "clippy-ctl dash";
/// How long a `send` waits for the wrapper to take the text.
const SEND_WAIT: Duration = Duration::from_secs(5);
/// How many turns the turn list asks for.
const TURNS_SHOWN: u32 = 200;

/// The dashboard's requests, made one at a time over one connection that is made again when
/// the broker went away.
#[derive(Debug)]
pub struct Requests {
    endpoint: Endpoint,
    timeout: Duration,
    connection: Option<Connection>,
}

impl Requests {
    /// Requests to the broker at `endpoint`; `timeout` bounds starting a session.
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Self {
        Self {
            endpoint,
            timeout,
            connection: None,
        }
    }

    /// Makes `action`'s request and returns what the dashboard is told: its reply, or a
    /// [`Reply::Failed`] line ([`failure`]). `None` for the actions that are no request
    /// ([`Action::Watch`], [`Action::Attach`], [`Action::Bell`], [`Action::Quit`]).
    pub fn serve(&mut self, action: &Action) -> Option<Reply> {
        if !is_request(action) {
            return None;
        }
        if let Action::Spawn { command, name, cwd } = action {
            let spawn = clippy_client::Spawn {
                command: command.iter().map(Into::into).collect(),
                name: name.clone(),
                cwd: cwd.as_ref().map(Into::into),
                size: clippy_client::TermSize::DETACHED.spec(),
                ..clippy_client::Spawn::default()
            };
            return Some(match clippy_client::spawn(&spawn, self.timeout) {
                Ok(id) => Reply::Done(format!("started {id}")),
                Err(e) => failure(action, &e),
            });
        }
        if self.connection.as_ref().is_none_or(|c| !c.is_open()) {
            self.connection = Connection::connect(&self.endpoint).ok();
        }
        let Some(conn) = self.connection.as_mut() else {
            return Some(Reply::Failed(UNREACHABLE.into()));
        };
        match ask(conn, action) {
            Ok(reply) => Some(reply),
            Err(e) => {
                if drops_connection(&e) {
                    self.connection = None;
                }
                Some(failure(action, &e))
            }
        }
    }
}

/// What a request says when no broker answers the connection.
pub const UNREACHABLE: &str = "the broker is not reachable";

/// Whether `action` is a request to the broker (the others are the binary's: following the
/// output, attaching, the bell, quitting).
pub fn is_request(action: &Action) -> bool {
    !matches!(
        action,
        Action::Watch(_) | Action::Attach(_) | Action::Bell | Action::Quit
    )
}

/// Whether a failure means the connection is gone (no broker, or one that stopped
/// answering), so the next request connects again; a refusal keeps it.
pub fn drops_connection(e: &ClientError) -> bool {
    matches!(
        e,
        ClientError::Unreachable { .. } | ClientError::NoAnswer { .. }
    )
}

/// The line a failed request shows: what was asked, of which session (or approval, or
/// search), then the client's error.
pub fn failure(action: &Action, e: &ClientError) -> Reply {
    let what = match action {
        Action::Status(s) => format!("status {s}"),
        Action::Screen(s) => format!("screen {s}"),
        Action::Turn { target, .. } => format!("turn {target}"),
        Action::Turns(s) => format!("turns {s}"),
        Action::Send { session, .. } => format!("send {session}"),
        Action::Capture(s) => format!("capture {s}"),
        Action::Paste(s) => format!("paste {s}"),
        Action::End(s) => format!("end {s}"),
        Action::Approve(a) | Action::ApproveEdited { approval: a, .. } => format!("approve {a}"),
        Action::Deny(a) => format!("deny {a}"),
        Action::Search(q) => format!("search {q:?}"),
        Action::Answer { session, .. } => format!("answer {session}"),
        Action::Inbox(s) => format!("inbox {s}"),
        Action::Spawn { .. } => "start".into(),
        Action::Refresh
        | Action::Routes
        | Action::Watch(_)
        | Action::Attach(_)
        | Action::Bell
        | Action::Quit => "request".into(),
    };
    Reply::Failed(format!("{what}: {e}"))
}

/// The requests of a queue to make, in order, each once: a request queued again while the
/// first waited its turn is not made twice.
pub fn distinct(queue: impl IntoIterator<Item = Action>) -> Vec<Action> {
    let mut kept: Vec<Action> = Vec::new();
    for action in queue {
        if !kept.contains(&action) {
            kept.push(action);
        }
    }
    kept
}

/// One request over `conn`, and the reply the dashboard is told.
fn ask(conn: &mut Connection, action: &Action) -> Result<Reply, ClientError> {
    Ok(match action {
        Action::Refresh => Reply::Sessions(conn.list_sessions()?),
        Action::Status(session) => Reply::Status(Box::new(conn.session_status(session)?)),
        Action::Routes => Reply::Routes(conn.route_list()?),
        Action::Inbox(session) => Reply::Inbox {
            session: session.clone(),
            items: conn.inbox(session)?.items,
        },
        Action::Screen(session) => Reply::Screen {
            session: session.clone(),
            lines: conn.screen(session, 0, None)?.screen.lines,
        },
        Action::Turn { target, format } => {
            let turn = conn.get_turn(target, *format)?;
            Reply::Turn {
                target: target.clone(),
                turn_id: turn.meta.turn_id,
                format: *format,
                text: String::from_utf8_lossy(&turn.content.into_vec()).into_owned(),
            }
        }
        Action::Turns(session) => Reply::Turns {
            session: session.clone(),
            turns: conn.list_turns(session, Some(TURNS_SHOWN))?,
        },
        Action::Answer {
            session,
            decision,
            waiting_id,
        } => {
            let answered = conn.answer(&clippy_client::Answer {
                waiting_id: *waiting_id,
                by: Some(ANSWERED_BY.into()),
                ..clippy_client::Answer::new(session.clone(), *decision)
            })?;
            Reply::Done(format!(
                "answered {session}: {}",
                answered.decision.as_str()
            ))
        }
        Action::Send { session, data } => {
            let input = clippy_client::Input::new(data.clone(), true)?;
            let bytes = conn.send(session, input, SEND_WAIT)?;
            Reply::Done(format!("sent {bytes} bytes to {session}"))
        }
        Action::Capture(session) => {
            let captured = conn.capture(session)?;
            Reply::Done(format!(
                "captured {} ({} bytes): p pastes it",
                captured.turn_id, captured.byte_length
            ))
        }
        Action::Paste(session) => {
            conn.paste(session, Format::Text)?;
            Reply::Done(format!("pasted the captured turn into {session}"))
        }
        Action::End(session) => {
            let ended = conn.end_session(session, true, None)?;
            Reply::Done(format!("{session}: {}", ended.outcome))
        }
        Action::Approve(approval) => {
            conn.approve(approval, None)?;
            Reply::Done(format!("approved {approval}"))
        }
        Action::ApproveEdited { approval, text } => {
            conn.approve(approval, Some(text.clone()))?;
            Reply::Done(format!("approved {approval} with the edited text"))
        }
        Action::Deny(approval) => {
            conn.deny(approval)?;
            Reply::Done(format!("denied {approval}"))
        }
        Action::Search(words) => Reply::Hits(conn.search(&SearchQuery::new(words.clone())?)?),
        // Not requests: `serve` returns before asking.
        Action::Spawn { .. }
        | Action::Watch(_)
        | Action::Attach(_)
        | Action::Bell
        | Action::Quit => {
            return Err(ClientError::Protocol(format!(
                "{action:?} is not a broker request"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clippy_proto::{Decision, ErrorReason};
    use std::path::PathBuf;

    fn refused(reason: ErrorReason) -> ClientError {
        ClientError::Broker {
            reason,
            message: "no such session: k9".into(),
            resume_cursor: None,
        }
    }

    fn gone() -> ClientError {
        ClientError::Unreachable {
            socket: PathBuf::from("/run/x/clippy.sock"),
            detail: "connection refused".into(),
        }
    }

    fn line(reply: Reply) -> String {
        match reply {
            Reply::Failed(line) => line,
            other => panic!("not a failure: {other:?}"),
        }
    }

    #[test]
    fn a_failure_names_what_was_asked_of_which_session_then_the_error() {
        let e = refused(ErrorReason::SessionNotFound);
        let cases = [
            (Action::Status("k1".into()), "status k1: "),
            (Action::Screen("k1".into()), "screen k1: "),
            (
                Action::Turn {
                    target: "k1-t3".into(),
                    format: Format::Text,
                },
                "turn k1-t3: ",
            ),
            (Action::Turns("k1".into()), "turns k1: "),
            (
                Action::Send {
                    session: "k1".into(),
                    data: b"hi".to_vec(),
                },
                "send k1: ",
            ),
            (Action::Capture("k1".into()), "capture k1: "),
            (Action::Paste("k1".into()), "paste k1: "),
            (Action::End("k1".into()), "end k1: "),
            (Action::Approve("a7".into()), "approve a7: "),
            (
                Action::ApproveEdited {
                    approval: "a7".into(),
                    text: "x".into(),
                },
                "approve a7: ",
            ),
            (Action::Deny("a7".into()), "deny a7: "),
            (Action::Search("two words".into()), "search \"two words\": "),
            (
                Action::Answer {
                    session: "k1".into(),
                    decision: Decision::Allow,
                    waiting_id: Some(3),
                },
                "answer k1: ",
            ),
            (Action::Inbox("k1".into()), "inbox k1: "),
            (
                Action::Spawn {
                    command: vec!["bash".into()],
                    name: None,
                    cwd: None,
                },
                "start: ",
            ),
            (Action::Refresh, "request: "),
            (Action::Routes, "request: "),
        ];
        for (action, label) in cases {
            let shown = line(failure(&action, &e));
            assert_eq!(shown, format!("{label}{e}"), "{action:?}");
            assert!(shown.contains("no such session: k9"), "{shown}");
        }
    }

    #[test]
    fn only_a_gone_or_silent_broker_drops_the_connection() {
        assert!(drops_connection(&gone()));
        assert!(drops_connection(&ClientError::NoAnswer {
            socket: PathBuf::from("/run/x/clippy.sock"),
            timeout_ms: 5000,
        }));
        assert!(!drops_connection(&refused(ErrorReason::SessionNotFound)));
        assert!(!drops_connection(&ClientError::Protocol("bad".into())));
        assert!(!drops_connection(&ClientError::Lagged));
    }

    #[test]
    fn a_request_queued_twice_is_made_once_in_its_first_place() {
        let queue = vec![
            Action::Refresh,
            Action::Status("k1".into()),
            Action::Refresh,
            Action::Screen("k1".into()),
            Action::Status("k1".into()),
            Action::Status("k2".into()),
        ];
        assert_eq!(
            distinct(queue),
            vec![
                Action::Refresh,
                Action::Status("k1".into()),
                Action::Screen("k1".into()),
                Action::Status("k2".into()),
            ]
        );
    }

    #[test]
    fn the_binarys_own_actions_are_no_request_and_are_not_served() {
        for action in [
            Action::Watch(Some("k1".into())),
            Action::Attach("k1".into()),
            Action::Bell,
            Action::Quit,
        ] {
            assert!(!is_request(&action), "{action:?}");
            // No broker is asked (the endpoint does not exist): nothing comes back.
            let mut requests = Requests::new(
                Endpoint::new("/nonexistent/clippy.sock", Duration::from_millis(10)),
                Duration::from_millis(10),
            );
            assert_eq!(requests.serve(&action), None);
        }
        assert!(is_request(&Action::Refresh));
    }

    #[test]
    fn with_no_broker_a_request_fails_as_unreachable() {
        let mut requests = Requests::new(
            Endpoint::new("/nonexistent/clippy.sock", Duration::from_millis(10)),
            Duration::from_millis(10),
        );
        assert_eq!(
            requests.serve(&Action::Status("k1".into())),
            Some(Reply::Failed(UNREACHABLE.into()))
        );
    }
}
