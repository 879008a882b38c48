//! `screen`: a session's screen as text right now, like `tmux capture-pane -p`.
//!
//! Only the wrapper has the screen (its detector's terminal emulator), so the broker asks it:
//! the client's request is parked as a wait with a deadline, a `screen_request` numbered with the
//! wait's key goes to the session's wrapper, and the wrapper's `screen_report` with that number
//! finishes the wait. The broker never sees the session's bytes for this. A wrapper that goes
//! away fails the wait (`session_disconnected`), a client that goes away cancels it, and a
//! report that comes after either, or after the deadline, is dropped.

use clippy_proto::{MAX_SCREEN_HISTORY, Message, ScreenData};

use super::spool_ops::{WaitKind, disconnected};
use super::{Action, ConnId, Outcome, Refusal, State};

/// How long the wrapper may take to report its screen, when the request gives no `timeout_ms`.
const DEFAULT_SCREEN_WAIT_MS: u64 = clippy_proto::DEFAULT_SCREEN_WAIT_MS;

impl State {
    /// `screen`: asks the session's wrapper for its screen and parks the request until it
    /// answers.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn screen(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        history: u32,
        timeout_ms: Option<u64>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let session = self.resolve(session)?;
        let owner = self
            .connected_owner(&session)
            .ok_or_else(|| disconnected(&session))?;
        let request = self.park(
            conn,
            id,
            session.clone(),
            timeout_ms,
            DEFAULT_SCREEN_WAIT_MS,
            now_ms,
            WaitKind::Screen,
        );
        out.push(Action::Send(
            owner,
            Message::ScreenRequest {
                id: 0,
                session,
                request,
                history: history.min(MAX_SCREEN_HISTORY),
            },
        ));
        Ok(Outcome::Parked)
    }

    /// `screen_report` from a wrapper: answers the `screen` it was asked for, if its client
    /// still waits.
    pub(super) fn screen_report(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        request: u64,
        screen: ScreenData,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        self.owned(conn, session)?;
        let waiting = self
            .waiters
            .get(&request)
            .is_some_and(|w| matches!(w.kind, WaitKind::Screen) && w.session == session);
        if waiting && let Some(waiter) = self.waiters.remove(&request) {
            out.push(Action::Send(
                waiter.conn,
                Message::ScreenSnapshot {
                    id: waiter.id,
                    session: waiter.session,
                    lines: screen.lines,
                    history: screen.history,
                    cols: screen.cols,
                    rows: screen.rows,
                    cursor_row: screen.cursor_row,
                    cursor_col: screen.cursor_col,
                    alternate: screen.alternate,
                },
            ));
        }
        Ok(Outcome::Reply(Message::Done { id }))
    }
}

#[cfg(test)]
mod tests {
    use clippy_proto::{ErrorReason, Role};

    use super::*;
    use crate::tests::{NOW, connect, refused, req, sent_to, state, wrapper};

    /// Whether `message` is an `error` reply of `reason` (without a resume cursor).
    fn is_error(message: &Message, reason: ErrorReason) -> bool {
        matches!(message, Message::Error { reason: r, resume_cursor: None, .. } if *r == reason)
    }

    fn ask(history: u32, timeout_ms: Option<u64>) -> Message {
        Message::Screen {
            id: 9,
            session: "coder".into(),
            history,
            timeout_ms,
        }
    }

    fn screen() -> ScreenData {
        ScreenData {
            lines: vec!["line 49".into(), "Allow? [y/n]".into(), String::new()],
            history: 1,
            cols: 80,
            rows: 2,
            cursor_row: 0,
            cursor_col: 12,
            alternate: false,
        }
    }

    /// The `request` number of the one `screen_request` in `messages`.
    fn requested(messages: &[Message]) -> (u64, u32) {
        match messages {
            [
                Message::ScreenRequest {
                    id: 0,
                    session,
                    request,
                    history,
                },
            ] if session == "s1" => (*request, *history),
            other => panic!("expected one screen_request, got {other:?}"),
        }
    }

    fn report(st: &mut State, conn: ConnId, request: u64) -> Vec<Action> {
        st.handle(
            conn,
            Message::ScreenReport {
                id: 5,
                session: "s1".into(),
                request,
                screen: screen(),
            },
            NOW + 10,
        )
    }

    #[test]
    fn the_wrapper_is_asked_and_its_report_answers_the_client() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "s1", Some("coder"));
        let c = connect(&mut st, 2, Role::Client);
        let actions = st.handle(c, ask(500_000, None), NOW);
        assert!(sent_to(&actions, c).is_empty(), "parked: {actions:?}");
        let (request, history) = requested(&sent_to(&actions, w));
        assert_eq!(history, MAX_SCREEN_HISTORY, "history is capped");
        assert_eq!(st.next_deadline(), Some(NOW + DEFAULT_SCREEN_WAIT_MS));

        let actions = report(&mut st, w, request);
        assert_eq!(sent_to(&actions, w), [Message::Done { id: 5 }]);
        assert_eq!(
            sent_to(&actions, c),
            [Message::ScreenSnapshot {
                id: 9,
                session: "s1".into(),
                lines: vec!["line 49".into(), "Allow? [y/n]".into(), String::new()],
                history: 1,
                cols: 80,
                rows: 2,
                cursor_row: 0,
                cursor_col: 12,
                alternate: false,
            }]
        );
        assert_eq!(st.next_deadline(), None, "nothing left parked");
        // The same report again answers nobody.
        let actions = report(&mut st, w, request);
        assert_eq!(sent_to(&actions, w), [Message::Done { id: 5 }]);
        assert!(sent_to(&actions, c).is_empty());
    }

    #[test]
    fn unknown_and_ended_sessions_are_refused_without_asking_anyone() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "s1", Some("coder"));
        let c = connect(&mut st, 2, Role::Client);
        let (reason, message) = refused(
            &mut st,
            c,
            Message::Screen {
                id: 3,
                session: "nope".into(),
                history: 0,
                timeout_ms: None,
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(message.contains("\"nope\""), "{message}");

        st.connection_closed(w);
        let (reason, message) = refused(
            &mut st,
            c,
            Message::Screen {
                id: 4,
                session: "s1".into(),
                history: 0,
                timeout_ms: None,
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(message.contains("has ended"), "{message}");
        assert_eq!(st.next_deadline(), None);
    }

    #[test]
    fn a_wrapper_that_does_not_answer_in_time_times_out_and_its_late_report_is_dropped() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "s1", Some("coder"));
        let c = connect(&mut st, 2, Role::Client);
        let actions = st.handle(c, ask(0, Some(250)), NOW);
        let (request, history) = requested(&sent_to(&actions, w));
        assert_eq!(history, 0);
        assert_eq!(
            st.next_deadline(),
            Some(NOW + 250),
            "the request's own timeout"
        );
        assert!(st.expire(NOW + 249).is_empty());
        let actions = st.expire(NOW + 250);
        match sent_to(&actions, c).as_slice() {
            [reply @ Message::Error { id: 9, message, .. }] => {
                assert!(is_error(reply, ErrorReason::Timeout), "{reply:?}");
                assert!(message.contains("did not report its screen"), "{message}");
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        let actions = report(&mut st, w, request);
        assert_eq!(sent_to(&actions, w), [Message::Done { id: 5 }]);
        assert!(sent_to(&actions, c).is_empty(), "nobody waits any more");
    }

    #[test]
    fn a_wrapper_that_goes_away_fails_the_request() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "s1", Some("coder"));
        let c = connect(&mut st, 2, Role::Client);
        st.handle(c, ask(10, None), NOW);
        let actions = st.connection_closed(w);
        match sent_to(&actions, c).as_slice() {
            [reply @ Message::Error { id: 9, .. }] => {
                assert!(
                    is_error(reply, ErrorReason::SessionDisconnected),
                    "{reply:?}"
                );
            }
            other => panic!("expected session_disconnected, got {other:?}"),
        }
        assert_eq!(st.next_deadline(), None);
    }

    #[test]
    fn a_client_that_goes_away_cancels_the_request() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "s1", Some("coder"));
        let c = connect(&mut st, 2, Role::Client);
        let actions = st.handle(c, ask(0, None), NOW);
        let (request, _) = requested(&sent_to(&actions, w));
        st.connection_closed(c);
        assert_eq!(st.next_deadline(), None, "its deadline went with it");
        let actions = report(&mut st, w, request);
        assert_eq!(sent_to(&actions, w), [Message::Done { id: 5 }]);
        assert!(
            !actions
                .iter()
                .any(|a| matches!(a, Action::Send(to, _) if *to != w)),
            "{actions:?}"
        );
    }

    #[test]
    fn only_the_sessions_wrapper_reports_and_only_for_its_own_requests() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "s1", Some("coder"));
        let other = wrapper(&mut st, 3, "s2", None);
        let c = connect(&mut st, 2, Role::Client);
        let actions = st.handle(c, ask(0, None), NOW);
        let (request, _) = requested(&sent_to(&actions, w));

        // A client may not report.
        let (reason, _) = refused(
            &mut st,
            c,
            Message::ScreenReport {
                id: 6,
                session: "s1".into(),
                request,
                screen: screen(),
            },
        );
        assert_eq!(reason, ErrorReason::NotAllowed);
        // Another wrapper may not report for s1…
        let (reason, _) = refused(
            &mut st,
            other,
            Message::ScreenReport {
                id: 6,
                session: "s1".into(),
                request,
                screen: screen(),
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        // …nor answer s1's request with its own session's screen.
        let reply = req(
            &mut st,
            other,
            Message::ScreenReport {
                id: 6,
                session: "s2".into(),
                request,
                screen: screen(),
            },
        );
        assert_eq!(reply, Message::Done { id: 6 });
        assert_eq!(
            st.next_deadline(),
            Some(NOW + DEFAULT_SCREEN_WAIT_MS),
            "still parked"
        );
        // What only the broker sends is refused.
        for message in [
            Message::ScreenRequest {
                id: 7,
                session: "s1".into(),
                request,
                history: 0,
            },
            Message::ScreenSnapshot {
                id: 7,
                session: "s1".into(),
                lines: Vec::new(),
                history: 0,
                cols: 1,
                rows: 1,
                cursor_row: 0,
                cursor_col: 0,
                alternate: false,
            },
        ] {
            assert_eq!(refused(&mut st, c, message).0, ErrorReason::NotAllowed);
        }
        // The right wrapper's report still answers.
        let actions = report(&mut st, w, request);
        assert!(matches!(
            sent_to(&actions, c).as_slice(),
            [Message::ScreenSnapshot { id: 9, .. }]
        ));
    }
}
