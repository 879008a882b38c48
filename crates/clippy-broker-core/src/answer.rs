//! `answer`: answers the permission request a session waits on (issue 30).
//!
//! Only the wrapper has the live screen and knows which wait is current, so the broker asks it,
//! as for `screen`: the client's request is parked as a wait with a deadline, an
//! `answer_request` numbered with the wait's key goes to the session's wrapper, and the
//! wrapper's `answer_report` with that number finishes the wait — `answered`, or the wrapper's
//! refusal (`not_waiting`, `stale_answer`, `unsupported`). The wrapper alone decides, in order
//! with the session's output and keys, so two answers racing, or an answer racing a person at
//! the terminal, are told apart where the keys are written: the first one wins.
//!
//! `session.answered` is not emitted here but from the wrapper's `progress` (its `answered`),
//! so an answer given at the terminal is reported the same way (`hooks.rs`).

use clippy_proto::{Decision, ErrorReason, Message};

use super::spool_ops::{WaitKind, disconnected};
use super::{Action, ConnId, Outcome, Refusal, State};

/// How long the wrapper may take to report: it gives a dialog the agent's hooks announced a
/// moment to be drawn, so this is well over that.
const ANSWER_WAIT_MS: u64 = clippy_proto::DEFAULT_ANSWER_WAIT_MS;

/// What `answer` asks.
pub(super) struct AnswerAsked {
    pub(super) session: String,
    pub(super) decision: Decision,
    pub(super) reason: Option<String>,
    pub(super) waiting_id: Option<u64>,
    pub(super) by: Option<String>,
}

impl State {
    /// `answer`: asks the session's wrapper to answer its wait, and parks the request until it
    /// reports.
    pub(super) fn answer(
        &mut self,
        conn: ConnId,
        id: u32,
        asked: AnswerAsked,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let session = self.resolve(&asked.session)?;
        let owner = self
            .connected_owner(&session)
            .ok_or_else(|| disconnected(&session))?;
        let by = asked
            .by
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| format!("client {}", conn.0));
        let request = self.park(
            conn,
            id,
            session.clone(),
            None,
            ANSWER_WAIT_MS,
            now_ms,
            WaitKind::Answer {
                decision: asked.decision,
            },
        );
        out.push(Action::Send(
            owner,
            Message::AnswerRequest {
                id: 0,
                session,
                request,
                decision: asked.decision,
                reason: asked.reason,
                waiting_id: asked.waiting_id,
                by,
            },
        ));
        Ok(Outcome::Parked)
    }

    /// `answer_report` from a wrapper: finishes the `answer` it was asked, if its client still
    /// waits.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn answer_report(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        request: u64,
        waiting_id: u64,
        refused: Option<ErrorReason>,
        message: String,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        self.owned(conn, session)?;
        let decision = match self.waiters.get(&request) {
            Some(w) if w.session == session => match w.kind {
                WaitKind::Answer { decision } => Some(decision),
                _ => None,
            },
            _ => None,
        };
        if let Some(decision) = decision
            && let Some(waiter) = self.waiters.remove(&request)
        {
            let reply = match refused {
                Some(reason) => Message::error(waiter.id, reason, message),
                None => Message::Answered {
                    id: waiter.id,
                    session: waiter.session,
                    waiting_id,
                    decision,
                    message,
                },
            };
            out.push(Action::Send(waiter.conn, reply));
        }
        Ok(Outcome::Reply(Message::Done { id }))
    }
}

#[cfg(test)]
mod tests {
    use clippy_proto::{Decision, ErrorReason, Message, Role};

    use super::*;
    use crate::tests::{NOW, connect, sent_to, state, wrapper};

    fn ask(by: Option<&str>) -> Message {
        Message::Answer {
            id: 9,
            session: "coder".into(),
            decision: Decision::Deny,
            reason: Some("not that".into()),
            waiting_id: Some(2),
            by: by.map(Into::into),
        }
    }

    /// The `request` number of the one `answer_request` in `messages`, and its `by`.
    fn requested(messages: &[Message]) -> (u64, String) {
        match messages {
            [
                Message::AnswerRequest {
                    id: 0,
                    session,
                    request,
                    decision: Decision::Deny,
                    reason: Some(reason),
                    waiting_id: Some(2),
                    by,
                },
            ] if session == "s1" && reason == "not that" => (*request, by.clone()),
            other => panic!("expected one answer_request, got {other:?}"),
        }
    }

    fn report(
        st: &mut State,
        conn: ConnId,
        request: u64,
        refused: Option<ErrorReason>,
    ) -> Vec<Action> {
        st.handle(
            conn,
            Message::AnswerReport {
                id: 5,
                session: "s1".into(),
                request,
                waiting_id: 2,
                refused,
                message: "pressed Esc (No)".into(),
            },
            NOW + 10,
        )
    }

    #[test]
    fn the_wrapper_is_asked_and_its_report_answers_the_client_once() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "s1", Some("coder"));
        let c = connect(&mut st, 2, Role::Client);
        let actions = st.handle(c, ask(None), NOW);
        assert!(sent_to(&actions, c).is_empty(), "parked: {actions:?}");
        let (request, by) = requested(&sent_to(&actions, w));
        assert_eq!(
            by,
            format!("client {}", c.0),
            "the connection, when no `by` is given"
        );
        assert_eq!(st.next_deadline(), Some(NOW + ANSWER_WAIT_MS));
        let actions = report(&mut st, w, request, None);
        assert_eq!(sent_to(&actions, w), [Message::Done { id: 5 }]);
        assert_eq!(
            sent_to(&actions, c),
            [Message::Answered {
                id: 9,
                session: "s1".into(),
                waiting_id: 2,
                decision: Decision::Deny,
                message: "pressed Esc (No)".into(),
            }]
        );
        // The same report again answers nobody.
        let actions = report(&mut st, w, request, None);
        assert!(sent_to(&actions, c).is_empty());
    }

    #[test]
    fn a_refusal_is_the_wrappers_reason_and_a_silent_wrapper_times_out() {
        let mut st = state();
        let w = wrapper(&mut st, 1, "s1", Some("coder"));
        let c = connect(&mut st, 2, Role::Client);
        let (request, by) = requested(&sent_to(&st.handle(c, ask(Some("dash")), NOW), w));
        assert_eq!(by, "dash");
        let actions = report(&mut st, w, request, Some(ErrorReason::StaleAnswer));
        assert!(matches!(
            sent_to(&actions, c).as_slice(),
            [Message::Error {
                id: 9,
                reason: ErrorReason::StaleAnswer,
                ..
            }]
        ));
        let _ = st.handle(c, ask(None), NOW);
        let actions = st.expire(NOW + ANSWER_WAIT_MS);
        assert!(matches!(
            sent_to(&actions, c).as_slice(),
            [Message::Error {
                id: 9,
                reason: ErrorReason::Timeout,
                ..
            }]
        ));
    }
}
