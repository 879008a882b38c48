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
