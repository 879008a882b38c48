//! The spool operations (seeds/002, CONTRACTS/SPOOL.md): `read`, the waits (`wait_for`,
//! `wait_prompt`, `expect_send`), `send`, `exec`, `end_session` and `session_status`.
//!
//! What the broker knows of a session's spool comes from its wrapper's `progress` reports: the
//! spool's size (every byte below it is written) and the session's mode and prompt counters.
//! A wait is parked as a [`Waiter`] with a deadline — no thread, no polling: it is looked at again
//! when its session reports progress, when [`State::expire`] finds its deadline passed, and, for
//! a pattern wait with a long way to scan, in slices by [`State::continue_scans`] so one large
//! scan never holds up the other connections.
//!
//! Everything that writes to a session — `send`, the send half of `expect_send`, `exec`'s
//! command, `end_session`'s Ctrl+C, pastes — is queued to the one wrapper connection in the
//! order the broker decides it, and the broker decides one thing at a time: an `expect_send`'s
//! match and its send come out of the same step, so nothing can be written in between.

use std::path::{Path, PathBuf};

use clippy_proto::{ErrorReason, EventRecord, Message, Mode, PatternKind, Progress, SessionState};
use clippy_spool::{Pattern, Scanner};

use super::{Action, ConnId, Level, Outcome, Refusal, State, refuse};

/// Default wait, when a request gives none.
pub const DEFAULT_WAIT_MS: u64 = clippy_proto::DEFAULT_WAIT_MS;
/// Default wait for the prompt after `end_session`'s Ctrl+C.
pub const DEFAULT_END_WAIT_MS: u64 = clippy_proto::DEFAULT_END_WAIT_MS;
/// The longest wait a request may ask for (a day).
pub const MAX_WAIT_MS: u64 = 24 * 60 * 60 * 1000;
/// `read`'s default and largest `max_bytes`.
pub const MAX_READ_BYTES: u32 = 1024 * 1024;
/// Spool bytes read by a wait's first file read: most waits find their match close to their
/// cursor, and a whole chunk is stripped of escapes before it is searched.
const FIRST_SCAN_CHUNK: usize = 4 * 1024;
/// The most spool bytes read per file read while scanning (each read doubles, up to this).
const SCAN_CHUNK: usize = 1024 * 1024;
/// Spool bytes scanned per step of the event loop, across all waits: a wait with more to scan
/// goes on in the next step, after the other connections had their turn.
const SCAN_BUDGET: usize = 8 * 1024 * 1024;
/// The most of a prompt line quoted as its `match_text`.
const PROMPT_TEXT_BYTES: usize = 4096;

/// What the broker knows of a session beyond its registration.
#[derive(Debug, Default)]
pub(super) struct Live {
    /// The wrapper's latest report.
    pub(super) progress: Progress,
    /// An `exec` is in flight.
    pub(super) exec_running: bool,
    /// An `exec` whose client stopped waiting (it went away, or its deadline passed) before the
    /// wrapper reported the command submitted (submission number `inputs_at + 1`): the session
    /// stays reserved until that report, after which its busy mode refuses what comes next.
    pub(super) exec_unreported: Option<u64>,
    /// Handoffs waiting for this session.
    pub(super) inbox: super::routing::Inbox,
}

impl Live {
    /// Nobody waits for the `exec` typed after submission number `inputs_at` any more. Once the
    /// wrapper has reported it submitted, the session's own mode (busy until its prompt) guards
    /// it; before that, the session stays reserved until the report comes.
    fn stop_waiting_for_exec(&mut self, inputs_at: u64) {
        if self.progress.inputs > inputs_at {
            self.exec_running = false;
        } else {
            self.exec_unreported = Some(inputs_at);
        }
    }
}

/// A parked wait.
#[derive(Debug)]
pub(super) struct Waiter {
    /// Who asked, and the id of the request.
    pub(super) conn: ConnId,
    pub(super) id: u32,
    /// The session id (resolved).
    pub(super) session: String,
    /// When it gives up, in the state machine's milliseconds.
    deadline: u64,
    pub(super) kind: WaitKind,
}

#[derive(Debug)]
pub(super) enum WaitKind {
    /// `wait_for` / `expect_send` with a pattern: `send` goes out on the match.
    Pattern {
        scanner: Box<Scanner>,
        send: Option<Vec<u8>>,
    },
    /// `wait_prompt` (and `wait_for`/`expect_send` of kind `prompt`).
    Prompt { from: u64, send: Option<Vec<u8>> },
    /// `exec`: the prompt after submission number `inputs_at + 1`.
    Exec { inputs_at: u64, last_seq_at: u64 },
    /// `end_session`: a prompt after the Ctrl+C.
    End { prompts_at: u64, force: bool },
    /// `screen`: the wrapper's `screen_report` for the `screen_request` numbered as this wait's
    /// key (the report, not the spool, finishes it: `screen.rs`).
    Screen,
    /// `answer`: the wrapper's `answer_report` for the `answer_request` numbered as this wait's
    /// key (`answer.rs`).
    Answer { decision: clippy_proto::Decision },
}

/// What a finished wait replies, and what it sends to the session first.
struct Finish {
    reply: Message,
    send: Option<Vec<u8>>,
}

impl State {
    /// The earliest deadline of a parked wait, a timer, a connection owing its `hello` or turns
    /// asked for again (history), if any
    /// (the I/O layer wakes up for it and calls [`State::expire`]).
    #[must_use]
    pub fn next_deadline(&self) -> Option<u64> {
        let waits = self.waiters.values().map(|w| w.deadline).min();
        let timers = self.timers.keys().next().copied();
        let awaiting = self.next_awaiting_deadline();
        let hellos = self.next_hello_deadline();
        let resends = self.next_resend_deadline();
        waits
            .into_iter()
            .chain(timers)
            .chain(awaiting)
            .chain(hellos)
            .chain(resends)
            .min()
    }

    /// Whether a pattern wait has spool left to scan ([`State::continue_scans`] should run
    /// without waiting for I/O).
    #[must_use]
    pub fn has_scan_work(&self) -> bool {
        !self.scan_queue.is_empty()
    }

    /// Scans on for the waits that had more spool than one step's budget.
    pub fn continue_scans(&mut self) -> Vec<Action> {
        let mut out = Vec::new();
        let mut budget = SCAN_BUDGET;
        while budget > 0 {
            let Some(waiter) = self.scan_queue.pop_front() else {
                break;
            };
            budget = self.advance(waiter, budget, &mut out);
        }
        out
    }

    /// Ends the waits whose deadline is at or before `now_ms`: a pattern wait first scans what
    /// the spool holds (a match that is there is never lost to a timeout), then times out with
    /// `resume_cursor` = the spool's size; `end_session --force` kills the child. Connections
    /// that have not said `hello` by their deadline are closed. Turns asked for again that did
    /// not come in time count in flight no more.
    pub fn expire(&mut self, now_ms: u64) -> Vec<Action> {
        self.clock = self.clock.max(now_ms);
        let mut out = Vec::new();
        while let Some(entry) = self.timers.first_entry() {
            if *entry.key() > now_ms {
                break;
            }
            for timer in entry.remove() {
                self.fire(timer, &mut out);
            }
        }
        let due: Vec<u64> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.deadline <= now_ms)
            .map(|(&key, _)| key)
            .collect();
        for key in due {
            self.scan_queue.retain(|&k| k != key);
            self.advance(key, usize::MAX, &mut out);
            if let Some(waiter) = self.waiters.remove(&key) {
                self.time_out(waiter, &mut out);
            }
        }
        self.expire_awaiting(now_ms, &mut out);
        self.expire_hellos(now_ms, &mut out);
        self.expire_resends(now_ms, &mut out);
        out
    }

    pub(super) fn progress(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        progress: Progress,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let entry = self.owned(conn, session)?;
        // The spool only grows: a report that says otherwise is stale or wrong, not a truncation.
        let spool_size = progress.spool_size.max(entry.live.progress.spool_size);
        let typed = progress.keystrokes > entry.live.progress.keystrokes;
        let was_waiting = entry.live.progress.waiting.take();
        let mode_before = entry.live.progress.mode;
        let was_answered = entry.live.progress.answered.take();
        let disagreements = entry.live.progress.hooks.disagreements;
        let attached = entry.live.progress.attached;
        let unkept = (entry.live.progress.unkept_turns, progress.unkept_turns);
        entry.live.progress = Progress {
            spool_size,
            ..progress
        };
        if entry
            .live
            .exec_unreported
            .is_some_and(|inputs_at| entry.live.progress.inputs > inputs_at)
        {
            entry.live.exec_unreported = None;
            entry.live.exec_running = false;
        }
        if typed {
            self.human_input(session);
        }
        self.mode_changed(session, mode_before, out);
        self.answered(session, was_answered, out);
        self.waiting_changed(session, was_waiting, out);
        self.disagreed(session, disagreements, out);
        self.attached_changed(session, attached, out);
        self.turns_unkept(session, unkept.0, unkept.1, out);
        self.wake(session, out);
        self.first_prompt_seen(session, out);
        self.pump_inbox(session, out);
        Ok(Outcome::Reply(Message::Done { id }))
    }

    pub(super) fn read(
        &mut self,
        id: u32,
        session: &str,
        from_cursor: u64,
        max_bytes: Option<u32>,
    ) -> Result<Outcome, Refusal> {
        let session = self.resolve(session)?;
        let (path, size) = self.spool_of(&session, from_cursor)?;
        let want = u64::from(max_bytes.unwrap_or(MAX_READ_BYTES).min(MAX_READ_BYTES))
            .min(size - from_cursor);
        let mut data = vec![0; usize::try_from(want).unwrap_or(0)];
        let filled = self.read_spool(&session, &path, from_cursor, &mut data)?;
        data.truncate(filled);
        Ok(Outcome::Reply(Message::SpoolData {
            id,
            cursor: from_cursor,
            resume_cursor: from_cursor + filled as u64,
            data,
        }))
    }

    /// Parks `request`, a `wait_for`, `wait_prompt` or `expect_send` (which types its data on
    /// the match), and answers it at once if it can.
    pub(super) fn wait(
        &mut self,
        conn: ConnId,
        request: Message,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let (id, session, pattern, kind, from_cursor, timeout_ms, send) = match request {
            Message::WaitFor {
                id,
                session,
                pattern,
                kind,
                from_cursor,
                timeout_ms,
            } => (id, session, pattern, kind, from_cursor, timeout_ms, None),
            Message::WaitPrompt {
                id,
                session,
                from_cursor,
                timeout_ms,
            } => {
                let kind = PatternKind::Prompt;
                (
                    id,
                    session,
                    String::new(),
                    kind,
                    from_cursor,
                    timeout_ms,
                    None,
                )
            }
            Message::ExpectSend {
                id,
                session,
                pattern,
                kind,
                from_cursor,
                timeout_ms,
                data,
            } => (
                id,
                session,
                pattern,
                kind,
                from_cursor,
                timeout_ms,
                Some(data),
            ),
            other => {
                return Err(refuse(
                    ErrorReason::NotAllowed,
                    format!("{} is not a wait", other.kind()),
                ));
            }
        };
        let session = self.resolve(&session)?;
        let connected = self.connected_owner(&session).is_some();
        if send.is_some() && !connected {
            return Err(disconnected(&session));
        }
        self.spool_of(&session, from_cursor)?;
        let kind = match kind {
            PatternKind::Prompt => WaitKind::Prompt {
                from: from_cursor,
                send,
            },
            PatternKind::Literal | PatternKind::Regex => {
                let compiled = if kind == PatternKind::Regex {
                    self.regexes.pattern(&pattern)
                } else {
                    Pattern::literal(&pattern)
                }
                .map_err(|e| refuse(ErrorReason::InvalidPattern, e.to_string()))?;
                WaitKind::Pattern {
                    scanner: Box::new(Scanner::new(compiled, from_cursor)),
                    send,
                }
            }
        };
        let key = self.park(conn, id, session, timeout_ms, DEFAULT_WAIT_MS, now_ms, kind);
        self.advance(key, SCAN_BUDGET, out);
        Ok(Outcome::Parked)
    }

    /// `send`: `data` as typed; with `enter` (and text), Enter follows as a write of its own
    /// after the submit delay, and the reply waits for it ([`State::delivery_finished`]).
    pub(super) fn send(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        mut data: Vec<u8>,
        enter: bool,
    ) -> Result<Outcome, Refusal> {
        let session = self.resolve(session)?;
        if data.is_empty() && !enter {
            return Err(refuse(
                ErrorReason::MissingField,
                "send: `data` is empty and `enter` is not set",
            ));
        }
        let target = self.input_target(&session)?;
        if data.is_empty() {
            // A bare Enter: there is no text for it to follow.
            data.push(b'\r');
        } else if enter {
            self.enter_after.insert((conn, id), session.clone());
        }
        Ok(Outcome::Deliver(super::Delivery::Inject {
            conn: target,
            session: session.clone(),
            message: Message::Inject {
                id: 0,
                session,
                data,
            },
        }))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        command: &str,
        timeout_ms: Option<u64>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let session = self.resolve(session)?;
        if command.trim().is_empty() || command.contains(['\n', '\r']) {
            return Err(refuse(
                ErrorReason::InvalidArgument,
                "exec: the command must be one non-empty line (send it with `send` otherwise)",
            ));
        }
        let owner = self.input_target(&session)?;
        let last_seq_at = self
            .registry
            .latest(&session)
            .map_or(0, |r| r.turn_id().seq());
        let Some(entry) = self.sessions.get_mut(&session) else {
            return Err(disconnected(&session));
        };
        let live = &mut entry.live;
        if live.exec_running {
            return Err(refuse(
                ErrorReason::Busy,
                format!("session {session} is busy: another exec is running in it"),
            ));
        }
        if live.inbox.in_flight() {
            return Err(refuse(
                ErrorReason::Busy,
                format!("session {session} is busy: a route's handoff is being typed into it"),
            ));
        }
        match live.progress.mode {
            Mode::Idle => {}
            Mode::Busy => {
                let running = live
                    .progress
                    .input
                    .as_deref()
                    .map_or_else(|| "a turn".to_owned(), |input| format!("{input:?}"));
                return Err(refuse(
                    ErrorReason::Busy,
                    format!(
                        "session {session} is busy: {running} is running; exec runs only at an \
                         idle prompt (wait-prompt first)"
                    ),
                ));
            }
            Mode::Exited => {
                return Err(refuse(
                    ErrorReason::Busy,
                    format!("session {session} is not at a prompt: its wrapper says it ended"),
                ));
            }
            // Not yet at its first prompt (a script runs `exec` right after starting the
            // session): the command waits for it, within the same deadline.
            Mode::Starting => {
                let request = Message::Exec {
                    id,
                    session: session.clone(),
                    command: command.to_owned(),
                    timeout_ms,
                };
                self.await_first_prompt(conn, request, session, now_ms, out);
                return Ok(Outcome::Parked);
            }
        }
        live.exec_running = true;
        let inputs_at = live.progress.inputs;
        out.push(Action::Send(
            owner,
            Message::Inject {
                id: 0,
                session: session.clone(),
                data: command.as_bytes().to_vec(),
            },
        ));
        self.submit_later(&session, None);
        let kind = WaitKind::Exec {
            inputs_at,
            last_seq_at,
        };
        self.park(conn, id, session, timeout_ms, DEFAULT_WAIT_MS, now_ms, kind);
        Ok(Outcome::Parked)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn end_session(
        &mut self,
        conn: ConnId,
        id: u32,
        session: &str,
        force: bool,
        timeout_ms: Option<u64>,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let session = self.resolve(session)?;
        let owner = self
            .connected_owner(&session)
            .ok_or_else(|| disconnected(&session))?;
        let Some(entry) = self.sessions.get(&session) else {
            return Err(disconnected(&session));
        };
        let progress = &entry.live.progress;
        if progress.mode == Mode::Idle && !entry.live.exec_running {
            return Ok(Outcome::Reply(Message::SessionEnded {
                id,
                outcome: "idle".into(),
                resume_cursor: progress.spool_size,
            }));
        }
        let prompts_at = progress.prompts;
        out.push(Action::Send(
            owner,
            Message::Inject {
                id: 0,
                session: session.clone(),
                data: vec![0x03],
            },
        ));
        let kind = WaitKind::End { prompts_at, force };
        self.park(
            conn,
            id,
            session,
            timeout_ms,
            DEFAULT_END_WAIT_MS,
            now_ms,
            kind,
        );
        Ok(Outcome::Parked)
    }

    pub(super) fn session_status(&self, id: u32, session: &str) -> Result<Outcome, Refusal> {
        let session = match self.lookup(session) {
            super::lifecycle::Lookup::Found(session) => session,
            super::lifecycle::Lookup::Ambiguous(refusal) => return Err(refusal),
            // No live session: an ended one answers, with how it ended.
            super::lifecycle::Lookup::Missing(refusal)
            | super::lifecycle::Lookup::Ended(refusal) => {
                let status = self.ended_status(session)?.ok_or(refusal)?;
                return Ok(Outcome::Reply(Message::Status { id, status }));
            }
        };
        let Some(entry) = self.sessions.get(&session) else {
            return Err(disconnected(&session));
        };
        let progress = &entry.live.progress;
        let mode = if entry.live.exec_running {
            Mode::Busy
        } else {
            progress.mode
        };
        let waiters = self
            .waiters
            .values()
            .filter(|w| w.session == session)
            .count()
            + self.awaiting_on(&session);
        Ok(Outcome::Reply(Message::Status {
            id,
            status: SessionState {
                session: session.clone(),
                name: entry.info.name.clone(),
                pid: entry.info.pid,
                connected: self.conns.contains_key(&entry.owner),
                mode,
                exec_running: entry.live.exec_running,
                resume_cursor: progress.spool_size,
                prompt_cursor: progress.prompt_cursor,
                current_input: progress.input.clone(),
                last_turn_id: self
                    .registry
                    .latest(&session)
                    .ok()
                    .map(|r| r.turn_id().to_string()),
                exit_code: progress.exit_code,
                cwd: progress.cwd.clone(),
                bracketed_paste: entry.info.bracketed_paste,
                waiters: u32::try_from(waiters).unwrap_or(u32::MAX),
                inbox: self.inbox_len(&session),
                spool: entry.info.spool.clone(),
                waiting: progress.waiting.clone(),
                hooks: progress.hooks.clone(),
                input_blocked: progress.input_blocked,
                prompt_unrecognised: progress.prompt_unrecognised,
                exited: None,
                attached: progress.attached,
                busy_since: progress.busy_since.filter(|_| progress.mode == Mode::Busy),
            },
        }))
    }

    /// A connection went away: its waits are cancelled (an `exec` it started stays running in
    /// the session, which is busy until its prompt).
    pub(super) fn cancel_waiters_of(&mut self, conn: ConnId) {
        self.awaiting.retain(|_, awaiting| awaiting.conn != conn);
        let cancelled: Vec<u64> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.conn == conn)
            .map(|(&key, _)| key)
            .collect();
        for key in cancelled {
            if let Some(waiter) = self.waiters.remove(&key) {
                self.scan_queue.retain(|&k| k != key);
                if let WaitKind::Exec { inputs_at, .. } = waiter.kind
                    && let Some(entry) = self.sessions.get_mut(&waiter.session)
                {
                    entry.live.stop_waiting_for_exec(inputs_at);
                }
            }
        }
    }

    /// A session is gone: its waits fail with `session_disconnected` (an `end_session` got
    /// what it asked for: `exited`, at `spool_size`, the last size its wrapper reported), and
    /// its spool is let go.
    pub(super) fn fail_waiters_of(
        &mut self,
        session: &str,
        spool: Option<&str>,
        spool_size: u64,
        out: &mut Vec<Action>,
    ) {
        let failed: Vec<u64> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.session == session)
            .map(|(&key, _)| key)
            .collect();
        for key in failed {
            self.scan_queue.retain(|&k| k != key);
            if let Some(waiter) = self.waiters.remove(&key) {
                let reply = match waiter.kind {
                    WaitKind::End { .. } => Message::SessionEnded {
                        id: waiter.id,
                        outcome: "exited".into(),
                        resume_cursor: spool_size,
                    },
                    _ => Message::error(
                        waiter.id,
                        ErrorReason::SessionDisconnected,
                        format!("session {session} ended while waiting"),
                    ),
                };
                out.push(Action::Send(waiter.conn, reply));
            }
        }
        if let Some(path) = spool {
            self.spool_files.forget(Path::new(path));
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn park(
        &mut self,
        conn: ConnId,
        id: u32,
        session: String,
        timeout_ms: Option<u64>,
        default_ms: u64,
        now_ms: u64,
        kind: WaitKind,
    ) -> u64 {
        let timeout = timeout_ms.unwrap_or(default_ms).min(MAX_WAIT_MS);
        let key = self.next_waiter;
        self.next_waiter += 1;
        self.waiters.insert(
            key,
            Waiter {
                conn,
                id,
                session,
                deadline: now_ms.saturating_add(timeout),
                kind,
            },
        );
        key
    }

    /// Looks at every wait on `session` again after its progress changed.
    pub(super) fn wake(&mut self, session: &str, out: &mut Vec<Action>) {
        let keys: Vec<u64> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.session == session)
            .map(|(&key, _)| key)
            .collect();
        let mut budget = SCAN_BUDGET;
        for key in keys {
            budget = self.advance(key, budget, out);
        }
    }

    /// Moves wait `key` on as far as `budget` bytes of scanning allow: finishes it when it is
    /// satisfied, queues it for [`State::continue_scans`] when the budget ran out first. Returns
    /// the budget left.
    fn advance(&mut self, key: u64, mut budget: usize, out: &mut Vec<Action>) -> usize {
        let Some(waiter) = self.waiters.get_mut(&key) else {
            return budget;
        };
        let Some(entry) = self.sessions.get_mut(&waiter.session) else {
            return budget;
        };
        let progress = &entry.live.progress;
        let finish = match &mut waiter.kind {
            WaitKind::Pattern { scanner, send } => {
                let Some(path) = entry.info.spool.as_deref().map(PathBuf::from) else {
                    return budget;
                };
                let size = progress.spool_size;
                let mut found = None;
                let mut failure = None;
                let mut chunk = FIRST_SCAN_CHUNK;
                while found.is_none() && scanner.position() < size {
                    if budget == 0 {
                        if !self.scan_queue.contains(&key) {
                            self.scan_queue.push_back(key);
                        }
                        return 0;
                    }
                    let want = usize::try_from(size - scanner.position())
                        .unwrap_or(usize::MAX)
                        .min(chunk)
                        .min(budget);
                    chunk = (chunk * 2).min(SCAN_CHUNK);
                    self.scratch.resize(want, 0);
                    match self
                        .spool_files
                        .read_at(&path, scanner.position(), &mut self.scratch)
                    {
                        Ok(0) => {
                            failure = Some(format!(
                                "the spool {} ends before the {size} bytes its wrapper reported",
                                path.display()
                            ));
                            break;
                        }
                        Ok(n) => {
                            budget = budget.saturating_sub(n);
                            found = scanner.feed(&self.scratch[..n]);
                        }
                        Err(e) => {
                            failure =
                                Some(format!("cannot read the spool {}: {e}", path.display()));
                            break;
                        }
                    }
                }
                match (found, failure) {
                    (Some(found), _) => Finish {
                        reply: Message::Matched {
                            id: waiter.id,
                            matched: true,
                            match_text: found.text,
                            match_cursor: found.span.0,
                            match_span: found.span,
                            resume_cursor: found.resume_cursor,
                            exit_code: None,
                            cwd: None,
                            timestamp: None,
                            turn_id: None,
                        },
                        send: send.take(),
                    },
                    (None, Some(message)) => Finish {
                        reply: Message::error(waiter.id, ErrorReason::SpoolUnavailable, message),
                        send: None,
                    },
                    (None, None) => return budget,
                }
            }
            WaitKind::Prompt { from, send } => {
                let Some(prompt) = progress
                    .prompt_cursor
                    .filter(|&at| progress.mode == Mode::Idle && at >= *from)
                else {
                    return budget;
                };
                // Every turn up to this prompt recorded first (the wrapper sends a turn once its
                // text is rendered, which may be after the prompt): a `get_turn` right after the
                // reply reads the turn that ended here, not the one before.
                let latest = self.registry.latest(&waiter.session).ok();
                if latest.map_or(0, |r| r.turn_id().seq()) < progress.turns {
                    return budget;
                }
                let turn_id = latest.map(|r| r.turn_id().to_string());
                let end = progress.spool_size.max(prompt);
                let (id, send) = (waiter.id, send.take());
                let (exit_code, cwd, timestamp) = (
                    progress.exit_code,
                    progress.cwd.clone(),
                    progress.prompt_timestamp,
                );
                let session = waiter.session.clone();
                // A TUI's prompt line as its wrapper's screen showed it; else the first line of
                // text the spool holds from the prompt on (a shell's or REPL's prompt).
                let match_text = match progress.prompt_text.clone().filter(|t| !t.is_empty()) {
                    Some(text) => text,
                    None => self.prompt_text(&session, prompt, end),
                };
                Finish {
                    reply: Message::Matched {
                        id,
                        matched: true,
                        match_text,
                        match_cursor: prompt,
                        match_span: (prompt, end),
                        resume_cursor: end,
                        exit_code,
                        cwd,
                        timestamp,
                        turn_id,
                    },
                    send,
                }
            }
            WaitKind::Exec {
                inputs_at,
                last_seq_at,
            } => {
                // The prompt after the command, and every turn before it recorded (the wrapper
                // sends a turn once its text is rendered, which may be after the prompt).
                let recorded = self
                    .registry
                    .latest(&waiter.session)
                    .map_or(0, |r| r.turn_id().seq());
                if progress.mode != Mode::Idle
                    || progress.prompt_inputs <= *inputs_at
                    || recorded < progress.turns
                {
                    return budget;
                }
                entry.live.exec_running = false;
                let progress = &entry.live.progress;
                let turn = self
                    .registry
                    .latest(&waiter.session)
                    .ok()
                    .filter(|r| r.turn_id().seq() > *last_seq_at);
                Finish {
                    reply: Message::ExecResult {
                        id: waiter.id,
                        turn_id: turn.map(|r| r.turn_id().to_string()),
                        output: turn.map(|r| r.text().to_owned()).unwrap_or_default(),
                        exit_code: progress.exit_code,
                        cwd: progress.cwd.clone(),
                        resume_cursor: progress.prompt_cursor.unwrap_or(progress.spool_size),
                    },
                    send: None,
                }
            }
            WaitKind::Screen | WaitKind::Answer { .. } => return budget,
            WaitKind::End { prompts_at, .. } => {
                if progress.mode != Mode::Idle || progress.prompts <= *prompts_at {
                    return budget;
                }
                Finish {
                    reply: Message::SessionEnded {
                        id: waiter.id,
                        outcome: "interrupted".into(),
                        resume_cursor: progress.spool_size,
                    },
                    send: None,
                }
            }
        };
        if let Some(waiter) = self.waiters.remove(&key) {
            self.scan_queue.retain(|&k| k != key);
            self.finish(&waiter, finish, out);
        }
        budget
    }

    /// Sends a finished wait's data to its session (first: nothing else can come between the
    /// match and it), then its reply.
    fn finish(&mut self, waiter: &Waiter, finish: Finish, out: &mut Vec<Action>) {
        if let Some(data) = finish.send {
            match self.connected_owner(&waiter.session) {
                Some(owner) => out.push(Action::Send(
                    owner,
                    Message::Inject {
                        id: 0,
                        session: waiter.session.clone(),
                        data,
                    },
                )),
                None => {
                    out.push(Action::Send(waiter.conn, disconnected_error(waiter)));
                    return;
                }
            }
        }
        out.push(Action::Send(waiter.conn, finish.reply));
    }

    fn time_out(&mut self, waiter: Waiter, out: &mut Vec<Action>) {
        let Some(entry) = self.sessions.get_mut(&waiter.session) else {
            out.push(Action::Send(waiter.conn, disconnected_error(&waiter)));
            return;
        };
        let size = entry.live.progress.spool_size;
        let session = &waiter.session;
        let reply = match waiter.kind {
            WaitKind::Pattern { .. } => Message::timeout(
                waiter.id,
                format!("no match in session {session}'s output in time"),
                size,
            ),
            WaitKind::Prompt { .. } => Message::timeout(
                waiter.id,
                format!("session {session} showed no prompt in time"),
                size,
            ),
            WaitKind::Exec { inputs_at, .. } => {
                entry.live.stop_waiting_for_exec(inputs_at);
                Message::timeout(
                    waiter.id,
                    format!(
                        "the command still runs in session {session}: no prompt came back in time"
                    ),
                    size,
                )
            }
            WaitKind::Screen => Message::error(
                waiter.id,
                ErrorReason::Timeout,
                format!("session {session}'s wrapper did not report its screen in time"),
            ),
            WaitKind::Answer { .. } => Message::error(
                waiter.id,
                ErrorReason::Timeout,
                format!("session {session}'s wrapper did not report on the answer in time"),
            ),
            WaitKind::End { force: false, .. } => Message::timeout(
                waiter.id,
                format!(
                    "session {session} did not come back to a prompt after Ctrl+C; \
                     end-session --force kills its process group"
                ),
                size,
            ),
            WaitKind::End { force: true, .. } => {
                if let Some(owner) = self.connected_owner(session) {
                    out.push(Action::Send(
                        owner,
                        Message::Terminate {
                            id: 0,
                            session: session.clone(),
                        },
                    ));
                }
                let message = format!(
                    "session {session} did not come back to a prompt after Ctrl+C; its process \
                     group is killed (end-session --force)"
                );
                out.push(Action::Log(
                    Level::Info,
                    format!("session.reset: {message}"),
                ));
                let name = self.sessions.get(session).and_then(|e| e.info.name.clone());
                self.emit(
                    EventRecord {
                        kind: "session.reset".into(),
                        session: Some(session.clone()),
                        name,
                        message: Some(message),
                        ..EventRecord::default()
                    },
                    out,
                );
                Message::SessionEnded {
                    id: waiter.id,
                    outcome: "killed".into(),
                    resume_cursor: size,
                }
            }
        };
        out.push(Action::Send(waiter.conn, reply));
    }

    /// The spool path of `session`, and its size, once `cursor` is checked against it.
    fn spool_of(&self, session: &str, cursor: u64) -> Result<(PathBuf, u64), Refusal> {
        let Some(entry) = self.sessions.get(session) else {
            return Err(disconnected(session));
        };
        let Some(path) = entry.info.spool.as_deref() else {
            return Err(refuse(
                ErrorReason::SpoolUnavailable,
                format!("session {session} has no spool (its wrapper could not create one)"),
            ));
        };
        let size = entry.live.progress.spool_size;
        if cursor > size {
            return Err(refuse(
                ErrorReason::InvalidCursor,
                format!(
                    "cursor {cursor} is past the end of session {session}'s spool ({size} bytes): \
                     cursors come from earlier reads and waits"
                ),
            ));
        }
        Ok((PathBuf::from(path), size))
    }

    fn read_spool(
        &mut self,
        session: &str,
        path: &Path,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<usize, Refusal> {
        self.spool_files.read_full(path, offset, buf).map_err(|e| {
            refuse(
                ErrorReason::SpoolUnavailable,
                format!(
                    "cannot read session {session}'s spool {}: {e}",
                    path.display()
                ),
            )
        })
    }

    /// The prompt's first line of text, for a prompt wait's `match_text` ("" if unreadable).
    fn prompt_text(&mut self, session: &str, start: u64, end: u64) -> String {
        let Some(path) = self
            .sessions
            .get(session)
            .and_then(|e| e.info.spool.as_deref())
            .map(PathBuf::from)
        else {
            return String::new();
        };
        let len = usize::try_from(end - start)
            .unwrap_or(usize::MAX)
            .min(PROMPT_TEXT_BYTES);
        let mut bytes = vec![0; len];
        let Ok(filled) = self.read_spool(session, &path, start, &mut bytes) else {
            return String::new();
        };
        bytes.truncate(filled);
        // The scanner strips escapes; its first line of visible text is the prompt. The pattern is
        // compiled once, with the waits' own.
        let Ok(line) = self.regexes.pattern(r"[^\s][^\n]*") else {
            return String::new();
        };
        Scanner::new(line, start)
            .feed(&bytes)
            .map(|found| found.text.trim_end().to_owned())
            .unwrap_or_default()
    }

    /// The connection of `session`'s wrapper, while it is connected.
    pub(super) fn connected_owner(&self, session: &str) -> Option<ConnId> {
        self.sessions
            .get(session)
            .map(|e| e.owner)
            .filter(|owner| self.conns.contains_key(owner))
    }

    /// The connection to inject into `session` through: refused `session_disconnected` when its
    /// wrapper is gone, and `busy` while its program has not taken the input it was already
    /// given ([`Progress::input_blocked`]), so that input waits nowhere without bound.
    pub(super) fn input_target(&self, session: &str) -> Result<ConnId, Refusal> {
        let owner = self
            .connected_owner(session)
            .ok_or_else(|| disconnected(session))?;
        if self
            .sessions
            .get(session)
            .is_some_and(|entry| entry.live.progress.input_blocked)
        {
            return Err(refuse(
                ErrorReason::Busy,
                format!(
                    "session {session}'s program has not taken the input it was given (over {} \
                     KiB wait in its wrapper); try again once it has",
                    clippy_proto::INPUT_BACKLOG_LIMIT / 1024
                ),
            ));
        }
        Ok(owner)
    }
}

pub(super) fn disconnected(session: &str) -> Refusal {
    refuse(
        ErrorReason::SessionDisconnected,
        format!("session {session}'s wrapper is not connected"),
    )
}

fn disconnected_error(waiter: &Waiter) -> Message {
    Message::error(
        waiter.id,
        ErrorReason::SessionDisconnected,
        format!("session {}'s wrapper is not connected", waiter.session),
    )
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;
    use std::io;
    use std::sync::{Arc, Mutex};

    use clippy_config::DEFAULT_SUBMIT_DELAY_MS;
    use clippy_proto::Role;
    use clippy_registry::{RegistryConfig, SinkError};

    use super::*;
    use crate::tests::{NOW, connect, delivery, info, refused, report, req, sent_to, wrapper};
    use crate::{Delivery, SpoolFiles};

    /// In-memory spools, shared with the test so it can append while the state reads.
    #[derive(Debug, Default, Clone)]
    pub(crate) struct MemSpools(pub(crate) Arc<Mutex<HashMap<PathBuf, Vec<u8>>>>);

    impl SpoolFiles for MemSpools {
        fn read_at(&mut self, path: &Path, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
            let spools = self.0.lock().map_err(|_| io::Error::other("poisoned"))?;
            let spool = spools
                .get(path)
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
            let start = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(spool.len());
            let n = buf.len().min(spool.len() - start);
            buf[..n].copy_from_slice(&spool[start..start + n]);
            Ok(n)
        }

        fn forget(&mut self, path: &Path) {
            if let Ok(mut spools) = self.0.lock() {
                spools.remove(path);
            }
        }
    }

    /// A broker with session `s1` (wrapper connection 1, spool `/spools/s1`) and a client
    /// (connection 2).
    struct Fixture {
        st: State,
        spools: MemSpools,
        wrapper: ConnId,
        client: ConnId,
        progress: Progress,
    }

    impl Fixture {
        fn new() -> Self {
            let spools = MemSpools::default();
            let config = RegistryConfig {
                ring_depth: 8,
                max_turn_bytes: 1024,
            };
            let mut st =
                State::with_spool_files(config, Box::new(spools.clone())).expect("valid config");
            let wrapper = wrapper(&mut st, 1, "s1", None);
            let client = connect(&mut st, 2, Role::Client);
            let mut fixture = Self {
                st,
                spools,
                wrapper,
                client,
                progress: Progress::default(),
            };
            fixture.output(b"");
            fixture
        }

        /// The child wrote `bytes`: append them and report the new size.
        fn output(&mut self, bytes: &[u8]) -> Vec<Action> {
            let mut spools = self.spools.0.lock().expect("not poisoned");
            let spool = spools.entry(PathBuf::from("/spools/s1")).or_default();
            spool.extend_from_slice(bytes);
            self.progress.spool_size = spool.len() as u64;
            drop(spools);
            self.report()
        }

        /// Reports [`Fixture::progress`] as it is.
        fn report(&mut self) -> Vec<Action> {
            let actions = self.st.handle(
                self.wrapper,
                Message::Progress {
                    id: 9,
                    session: "s1".into(),
                    progress: self.progress.clone(),
                },
                NOW,
            );
            assert_eq!(
                sent_to(&actions, self.wrapper).last(),
                Some(&Message::Done { id: 9 }),
                "progress is acknowledged"
            );
            actions
        }

        /// A prompt was drawn at the current end of the spool, after `text`.
        fn prompt(&mut self, text: &[u8], exit_code: Option<i32>) -> Vec<Action> {
            self.progress.prompt_cursor = Some(self.progress.spool_size);
            self.progress.prompts += 1;
            self.progress.prompt_inputs = self.progress.inputs;
            self.progress.mode = Mode::Idle;
            self.progress.exit_code = exit_code;
            self.progress.input = None;
            self.output(text)
        }

        /// A line was submitted: the session runs it.
        fn submitted(&mut self, line: &str) -> Vec<Action> {
            self.progress.inputs += 1;
            self.progress.mode = Mode::Busy;
            self.progress.input = Some(line.into());
            self.report()
        }

        fn ask(&mut self, msg: Message) -> Vec<Action> {
            self.st.handle(self.client, msg, NOW)
        }

        fn wait_for(&mut self, pattern: &str, kind: PatternKind, from: u64) -> Vec<Action> {
            self.ask(Message::WaitFor {
                id: 20,
                session: "s1".into(),
                pattern: pattern.into(),
                kind,
                from_cursor: from,
                timeout_ms: Some(1000),
            })
        }

        fn to_client(&self, actions: &[Action]) -> Vec<Message> {
            sent_to(actions, self.client)
        }

        fn to_wrapper(&self, actions: &[Action]) -> Vec<Message> {
            sent_to(actions, self.wrapper)
        }
    }

    fn matched(messages: &[Message]) -> (String, (u64, u64), u64) {
        match messages {
            [
                Message::Matched {
                    match_text,
                    match_span,
                    resume_cursor,
                    match_cursor,
                    matched: true,
                    ..
                },
            ] => {
                assert_eq!(*match_cursor, match_span.0);
                (match_text.clone(), *match_span, *resume_cursor)
            }
            other => panic!("expected one match, got {other:?}"),
        }
    }

    fn inject(data: &[u8]) -> Message {
        Message::Inject {
            id: 0,
            session: "s1".into(),
            data: data.to_vec(),
        }
    }

    // ── read ────────────────────────────────────────────────────────────────────────────

    #[test]
    fn read_returns_the_reported_bytes_with_one_resume_cursor() {
        let mut fx = Fixture::new();
        fx.output(b"hello\nworld\n");
        let read = |fx: &mut Fixture, from, max| {
            req(
                &mut fx.st,
                fx.client,
                Message::Read {
                    id: 3,
                    session: "s1".into(),
                    from_cursor: from,
                    max_bytes: max,
                },
            )
        };
        assert_eq!(
            read(&mut fx, 6, None),
            Message::SpoolData {
                id: 3,
                data: b"world\n".to_vec(),
                cursor: 6,
                resume_cursor: 12
            }
        );
        assert_eq!(
            read(&mut fx, 0, Some(3)),
            Message::SpoolData {
                id: 3,
                data: b"hel".to_vec(),
                cursor: 0,
                resume_cursor: 3
            }
        );
        // At the end: nothing, and the cursor stays.
        assert_eq!(
            read(&mut fx, 12, None),
            Message::SpoolData {
                id: 3,
                data: Vec::new(),
                cursor: 12,
                resume_cursor: 12
            }
        );
        let past = Message::Read {
            id: 3,
            session: "s1".into(),
            from_cursor: 13,
            max_bytes: None,
        };
        let (reason, message) = refused(&mut fx.st, fx.client, past);
        assert_eq!(reason, ErrorReason::InvalidCursor);
        assert!(message.contains("past the end"), "{message}");
    }

    #[test]
    fn a_session_registered_again_with_its_progress_keeps_its_cursors_valid() {
        let mut fx = Fixture::new();
        fx.output(b"hello\nworld\n");
        fx.st.connection_closed(fx.wrapper);
        // The broker let go of the spool; the wrapper, alive, still has it on disk.
        fx.spools
            .0
            .lock()
            .expect("not poisoned")
            .insert(PathBuf::from("/spools/s1"), b"hello\nworld\n".to_vec());
        let wrapper = connect(&mut fx.st, 3, Role::Wrapper);
        let actions = fx.st.handle(
            wrapper,
            Message::Register {
                id: 2,
                session: info("s1", None, false),
                progress: Some(fx.progress.clone()),
                resends: false,
            },
            NOW,
        );
        assert_eq!(sent_to(&actions, wrapper), [Message::Done { id: 2 }]);
        // Before any `progress` on the new connection, the spool is as far as it was.
        let read = Message::Read {
            id: 3,
            session: "s1".into(),
            from_cursor: 6,
            max_bytes: None,
        };
        assert_eq!(
            req(&mut fx.st, fx.client, read),
            Message::SpoolData {
                id: 3,
                data: b"world\n".to_vec(),
                cursor: 6,
                resume_cursor: 12
            }
        );
    }

    #[test]
    fn a_session_without_a_spool_cannot_be_read_or_waited_on() {
        let mut st = State::with_spool_files(
            RegistryConfig {
                ring_depth: 8,
                max_turn_bytes: 1024,
            },
            Box::new(MemSpools::default()),
        )
        .expect("valid config");
        let wrapper = connect(&mut st, 1, Role::Wrapper);
        let mut info = info("s1", None, false);
        info.spool = None;
        req(
            &mut st,
            wrapper,
            Message::Register {
                id: 2,
                session: info,
                progress: None,
                resends: false,
            },
        );
        let client = connect(&mut st, 2, Role::Client);
        let (reason, _) = refused(
            &mut st,
            client,
            Message::WaitFor {
                id: 3,
                session: "s1".into(),
                pattern: "x".into(),
                kind: PatternKind::Literal,
                from_cursor: 0,
                timeout_ms: None,
            },
        );
        assert_eq!(reason, ErrorReason::SpoolUnavailable);
    }

    // ── wait_for ────────────────────────────────────────────────────────────────────────

    #[test]
    fn wait_for_matches_what_is_there_and_resumes_at_the_match_end() {
        let mut fx = Fixture::new();
        fx.output(b"hello\nworld\n");
        let actions = fx.wait_for("hello", PatternKind::Literal, 0);
        let (text, span, resume) = matched(&fx.to_client(&actions));
        assert_eq!((text.as_str(), span, resume), ("hello", (0, 5), 5));
        let actions = fx.wait_for("world", PatternKind::Literal, resume);
        assert_eq!(matched(&fx.to_client(&actions)).1, (6, 11));
        assert!(fx.st.waiters.is_empty());
    }

    #[test]
    fn a_parked_wait_matches_across_two_reports_and_ignores_escapes() {
        let mut fx = Fixture::new();
        fx.output(b"before ");
        let actions = fx.wait_for(r"abc-\d+-xyz", PatternKind::Regex, 0);
        assert!(fx.to_client(&actions).is_empty(), "parked: {actions:?}");
        let actions = fx.output(b"abc-12");
        assert!(fx.to_client(&actions).is_empty());
        let actions = fx.output(b"\x1b[1m34\x1b[0m-xyz\n");
        let (text, span, resume) = matched(&fx.to_client(&actions));
        assert_eq!(text, "abc-1234-xyz");
        assert_eq!(
            span,
            (7, 27),
            "escapes inside the match are inside its span"
        );
        assert_eq!(resume, 27);
    }

    #[test]
    fn a_timeout_resumes_at_the_spool_size_and_never_skips_a_match_it_holds() {
        let mut fx = Fixture::new();
        fx.output(b"nothing to see\n");
        fx.wait_for("needle", PatternKind::Literal, 0);
        assert_eq!(fx.st.next_deadline(), Some(NOW + 1000));
        assert!(fx.st.expire(NOW + 999).is_empty());
        let actions = fx.st.expire(NOW + 1000);
        assert_eq!(
            fx.to_client(&actions),
            [Message::timeout(
                20,
                "no match in session s1's output in time",
                15
            )]
        );
        assert!(fx.st.waiters.is_empty());
        assert_eq!(fx.st.next_deadline(), None);
    }

    #[test]
    fn a_long_scan_goes_in_slices_and_a_deadline_finishes_it_first() {
        let mut fx = Fixture::new();
        let mut big = vec![b'.'; 3 * SCAN_BUDGET];
        big.extend_from_slice(b"needle");
        fx.output(&big);
        let actions = fx.wait_for("needle", PatternKind::Literal, 0);
        assert!(fx.to_client(&actions).is_empty());
        assert!(fx.st.has_scan_work(), "the first step's budget ran out");
        let actions = fx.st.continue_scans();
        assert!(fx.to_client(&actions).is_empty());
        assert!(fx.st.has_scan_work());
        // The deadline comes before the scan is done: the match is still found.
        let actions = fx.st.expire(NOW + 5000);
        let (_, span, _) = matched(&fx.to_client(&actions));
        assert_eq!(span.0, 3 * SCAN_BUDGET as u64);
        assert!(!fx.st.has_scan_work());
    }

    #[test]
    fn bad_patterns_and_cursors_are_refused_and_nothing_is_parked() {
        let mut fx = Fixture::new();
        fx.output(b"abc");
        for (pattern, kind, from, want) in [
            ("(", PatternKind::Regex, 0, ErrorReason::InvalidPattern),
            ("a*", PatternKind::Regex, 0, ErrorReason::InvalidPattern),
            ("", PatternKind::Literal, 0, ErrorReason::InvalidPattern),
            ("a", PatternKind::Literal, 4, ErrorReason::InvalidCursor),
        ] {
            let msg = Message::WaitFor {
                id: 3,
                session: "s1".into(),
                pattern: pattern.into(),
                kind,
                from_cursor: from,
                timeout_ms: None,
            };
            assert_eq!(refused(&mut fx.st, fx.client, msg).0, want, "{pattern:?}");
        }
        // An empty argument can name no session that will ever register.
        let nameless = Message::WaitPrompt {
            id: 3,
            session: String::new(),
            from_cursor: 0,
            timeout_ms: None,
        };
        assert_eq!(
            refused(&mut fx.st, fx.client, nameless).0,
            ErrorReason::SessionNotFound
        );
        assert!(fx.st.waiters.is_empty());
        assert!(fx.st.awaiting.is_empty());
    }

    #[test]
    fn a_client_that_goes_away_cancels_its_waits() {
        let mut fx = Fixture::new();
        fx.wait_for("x", PatternKind::Literal, 0);
        assert_eq!(fx.st.waiters.len(), 1);
        fx.st.connection_closed(fx.client);
        assert!(fx.st.waiters.is_empty());
        assert!(fx.st.expire(u64::MAX).is_empty());
    }

    #[test]
    fn a_session_that_goes_away_fails_its_waits() {
        let mut fx = Fixture::new();
        fx.wait_for("x", PatternKind::Literal, 0);
        let actions = fx.st.connection_closed(fx.wrapper);
        match fx.to_client(&actions).as_slice() {
            [Message::Error { reason, .. }] => {
                assert_eq!(*reason, ErrorReason::SessionDisconnected);
            }
            other => panic!("{other:?}"),
        }
        assert!(fx.st.waiters.is_empty());
        assert!(
            fx.spools.0.lock().expect("not poisoned").is_empty(),
            "the spool is let go"
        );
    }

    // ── expect_send ─────────────────────────────────────────────────────────────────────

    #[test]
    fn expect_send_sends_in_the_same_step_as_the_match_and_before_its_reply() {
        let mut fx = Fixture::new();
        let actions = fx.ask(Message::ExpectSend {
            id: 21,
            session: "s1".into(),
            pattern: "[y/n]".into(),
            kind: PatternKind::Literal,
            from_cursor: 0,
            timeout_ms: None,
            data: b"y\r".to_vec(),
        });
        assert!(actions.iter().all(|a| matches!(a, Action::Log(..))));
        let actions = fx.output(b"Proceed? [y/n] ");
        let sends: Vec<&Action> = actions
            .iter()
            // Everything sent but the acknowledgement of the progress report.
            .filter(|a| matches!(a, Action::Send(_, m) if !matches!(m, Message::Done { .. })))
            .collect();
        assert_eq!(
            sends,
            [
                &Action::Send(fx.wrapper, inject(b"y\r")),
                &Action::Send(
                    fx.client,
                    Message::Matched {
                        id: 21,
                        matched: true,
                        match_text: "[y/n]".into(),
                        match_cursor: 9,
                        match_span: (9, 14),
                        resume_cursor: 14,
                        exit_code: None,
                        cwd: None,
                        timestamp: None,
                        turn_id: None,
                    }
                ),
            ]
        );
    }

    // ── prompts ─────────────────────────────────────────────────────────────────────────

    #[test]
    fn wait_prompt_needs_a_prompt_at_or_after_the_cursor_and_an_idle_session() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        fx.submitted("make");
        fx.output(b"make\nbuilding\n");
        let from = fx.progress.spool_size;
        let actions = fx.ask(Message::WaitPrompt {
            id: 22,
            session: "s1".into(),
            from_cursor: from,
            timeout_ms: None,
        });
        assert!(
            fx.to_client(&actions).is_empty(),
            "the old prompt is before `from`"
        );
        let actions = fx.prompt(b"\x1b]133;A\x07$ ", Some(2));
        match fx.to_client(&actions).as_slice() {
            [
                Message::Matched {
                    match_text,
                    match_span,
                    resume_cursor,
                    exit_code,
                    ..
                },
            ] => {
                assert_eq!(match_text, "$");
                assert_eq!(*match_span, (from, from + 10));
                assert_eq!(*resume_cursor, from + 10);
                assert_eq!(*exit_code, Some(2));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn wait_prompt_on_a_tui_quotes_the_prompt_line_its_wrapper_saw() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        fx.submitted("what is 2+2");
        fx.output(b"\x1b[2;1H\xe2\x97\x8f 4");
        let from = fx.progress.spool_size;
        // A TUI goes idle redrawing nothing after the prompt's offset but escapes (a title): its
        // prompt line is on its screen, not in the spool from there.
        fx.progress.prompt_text = Some("\u{276f}".into());
        let actions = fx.prompt(b"\x1b]0;idle\x07\x1b[5;3H", None);
        assert!(fx.to_client(&actions).is_empty(), "nobody waits yet");
        let actions = fx.ask(Message::WaitPrompt {
            id: 22,
            session: "s1".into(),
            from_cursor: from,
            timeout_ms: None,
        });
        match fx.to_client(&actions).as_slice() {
            [Message::Matched { match_text, .. }] => assert_eq!(match_text, "\u{276f}"),
            other => panic!("{other:?}"),
        }
    }

    // ── exec ────────────────────────────────────────────────────────────────────────────

    #[test]
    fn exec_types_the_command_and_answers_with_the_turn_at_the_next_prompt() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        let actions = fx.ask(Message::Exec {
            id: 23,
            session: "s1".into(),
            command: "ls".into(),
            timeout_ms: None,
        });
        // The command, then its Enter as a write of its own after the submit delay.
        assert_eq!(fx.to_wrapper(&actions), [inject(b"ls")]);
        assert!(fx.to_client(&actions).is_empty());
        assert_eq!(fx.st.next_deadline(), Some(NOW + DEFAULT_SUBMIT_DELAY_MS));
        assert!(fx.st.expire(NOW + DEFAULT_SUBMIT_DELAY_MS - 1).is_empty());
        let actions = fx.st.expire(NOW + DEFAULT_SUBMIT_DELAY_MS);
        assert_eq!(fx.to_wrapper(&actions), [inject(b"\r")]);
        assert!(fx.to_client(&actions).is_empty());
        // A second exec, from anyone, is refused while the first runs.
        let second = Message::Exec {
            id: 24,
            session: "s1".into(),
            command: "echo SHOULD_FAIL".into(),
            timeout_ms: None,
        };
        assert_eq!(refused(&mut fx.st, fx.client, second).0, ErrorReason::Busy);
        fx.submitted("ls");
        fx.output(b"ls\na b\n");
        report(&mut fx.st, fx.wrapper, "s1", 1, "a b\n");
        let prompt_at = fx.progress.spool_size;
        let actions = fx.prompt(b"$ ", Some(0));
        assert_eq!(
            fx.to_client(&actions),
            [Message::ExecResult {
                id: 23,
                turn_id: Some("s1:1".into()),
                output: "text of a b\n".into(),
                exit_code: Some(0),
                cwd: None,
                resume_cursor: prompt_at,
            }]
        );
    }

    #[test]
    fn exec_waits_for_a_turn_that_is_recorded_after_its_prompt() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        fx.ask(Message::Exec {
            id: 23,
            session: "s1".into(),
            command: "ls".into(),
            timeout_ms: None,
        });
        fx.submitted("ls");
        fx.output(b"ls\na b\n");
        // The prompt is reported before the turn's text is rendered and sent.
        fx.progress.turns = 1;
        let actions = fx.prompt(b"$ ", Some(0));
        assert!(
            fx.to_client(&actions).is_empty(),
            "the turn is not recorded yet"
        );
        let actions = fx.st.handle(
            fx.wrapper,
            Message::TurnCompleted {
                id: 3,
                session: "s1".into(),
                turn: crate::tests::turn_data(1, "a b\n"),
            },
            NOW,
        );
        match fx.to_client(&actions).as_slice() {
            [Message::ExecResult { turn_id, .. }] => assert_eq!(turn_id.as_deref(), Some("s1:1")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_prompt_wait_answers_once_the_turn_that_ended_there_is_recorded() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        fx.submitted("ls");
        fx.output(b"ls\na b\n");
        let cursor = fx.progress.spool_size;
        fx.ask(Message::WaitPrompt {
            id: 24,
            session: "s1".into(),
            from_cursor: cursor,
            timeout_ms: None,
        });
        // The prompt is reported before the turn's text is rendered and sent.
        fx.progress.turns = 1;
        let actions = fx.prompt(b"$ ", Some(0));
        assert!(
            fx.to_client(&actions).is_empty(),
            "the turn is not recorded yet"
        );
        let actions = fx.st.handle(
            fx.wrapper,
            Message::TurnCompleted {
                id: 3,
                session: "s1".into(),
                turn: crate::tests::turn_data(1, "a b\n"),
            },
            NOW,
        );
        match fx.to_client(&actions).as_slice() {
            [
                Message::Matched {
                    id: 24, turn_id, ..
                },
            ] => {
                assert_eq!(turn_id.as_deref(), Some("s1:1"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn exec_is_refused_unless_idle_and_a_command_without_output_has_no_turn() {
        let mut fx = Fixture::new();
        let exec = |command: &str| Message::Exec {
            id: 25,
            session: "s1".into(),
            command: command.into(),
            timeout_ms: None,
        };
        fx.prompt(b"$ ", None);
        fx.submitted("python3 guess.py");
        let (reason, message) = refused(&mut fx.st, fx.client, exec("echo SHOULD_FAIL"));
        assert_eq!(reason, ErrorReason::Busy);
        assert!(message.contains("guess.py"), "{message}");
        fx.prompt(b"$ ", Some(0));
        for bad in ["", "a\nb", "a\r"] {
            assert_eq!(
                refused(&mut fx.st, fx.client, exec(bad)).0,
                ErrorReason::InvalidArgument
            );
        }
        fx.ask(exec("true"));
        fx.submitted("true");
        let actions = fx.prompt(b"$ ", Some(0));
        match fx.to_client(&actions).as_slice() {
            [
                Message::ExecResult {
                    turn_id, output, ..
                },
            ] => {
                assert_eq!((turn_id, output.as_str()), (&None, ""));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_exec_that_times_out_frees_the_session_for_the_next_one() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        fx.ask(Message::Exec {
            id: 26,
            session: "s1".into(),
            command: "sleep 100".into(),
            timeout_ms: Some(50),
        });
        let actions = fx.st.expire(NOW + 50);
        match fx.to_client(&actions).as_slice() {
            [
                Message::Error {
                    reason,
                    resume_cursor,
                    ..
                },
            ] => {
                assert_eq!(*reason, ErrorReason::Timeout);
                assert_eq!(*resume_cursor, Some(fx.progress.spool_size));
            }
            other => panic!("{other:?}"),
        }
        // The wrapper has not reported the command yet: the session stays reserved, so that a
        // second exec cannot be typed onto the first.
        let second = Message::Exec {
            id: 27,
            session: "s1".into(),
            command: "echo next".into(),
            timeout_ms: Some(50),
        };
        assert_eq!(
            refused(&mut fx.st, fx.client, second.clone()).0,
            ErrorReason::Busy
        );
        // Reported: the session is busy by its own mode until its prompt, then free.
        fx.submitted("sleep 100");
        assert!(!fx.st.sessions["s1"].live.exec_running);
        assert_eq!(
            refused(&mut fx.st, fx.client, second.clone()).0,
            ErrorReason::Busy
        );
        fx.prompt(b"$ ", Some(0));
        let actions = fx.ask(second);
        assert_eq!(fx.to_wrapper(&actions), [inject(b"echo next")]);
    }

    // ── send and end_session ────────────────────────────────────────────────────────────

    #[test]
    fn send_is_an_injection_into_the_wrapper() {
        let mut fx = Fixture::new();
        let actions = fx.ask(Message::Send {
            id: 27,
            session: "s1".into(),
            data: b"7\r".to_vec(),
            enter: false,
        });
        let (delivery, reply_to, reply_id) = delivery(&actions);
        assert_eq!((reply_to, reply_id), (fx.client, 27));
        assert!(matches!(
            delivery,
            Delivery::Inject { conn, message, .. } if *conn == fx.wrapper && *message == inject(b"7\r")
        ));
        let empty = Message::Send {
            id: 28,
            session: "s1".into(),
            data: Vec::new(),
            enter: false,
        };
        assert_eq!(
            refused(&mut fx.st, fx.client, empty).0,
            ErrorReason::MissingField
        );
        // A bare Enter is one write, answered at once.
        let actions = fx.ask(Message::Send {
            id: 29,
            session: "s1".into(),
            data: Vec::new(),
            enter: true,
        });
        assert!(matches!(
            super::super::tests::delivery(&actions).0,
            Delivery::Inject { message, .. } if *message == inject(b"\r")
        ));
        let done = fx.st.delivery_finished(fx.client, 29, Ok(()), NOW);
        assert_eq!(fx.to_client(&done), [Message::Done { id: 29 }]);
    }

    #[test]
    fn send_with_enter_writes_the_text_then_enter_on_its_own_and_answers_after_it() {
        let mut fx = Fixture::new();
        let actions = fx.ask(Message::Send {
            id: 30,
            session: "s1".into(),
            data: b"say hi".to_vec(),
            enter: true,
        });
        let (delivery, reply_to, reply_id) = delivery(&actions);
        assert_eq!((reply_to, reply_id), (fx.client, 30));
        assert!(matches!(
            delivery,
            Delivery::Inject { message, .. } if *message == inject(b"say hi")
        ));
        // The text is written: no reply yet, the Enter is due after the submit delay.
        let written = fx.st.delivery_finished(fx.client, 30, Ok(()), NOW);
        assert!(written.is_empty(), "{written:?}");
        assert_eq!(fx.st.next_deadline(), Some(NOW + DEFAULT_SUBMIT_DELAY_MS));
        assert!(fx.st.expire(NOW + DEFAULT_SUBMIT_DELAY_MS - 1).is_empty());
        let actions = fx.st.expire(NOW + DEFAULT_SUBMIT_DELAY_MS);
        assert_eq!(fx.to_wrapper(&actions), [inject(b"\r")]);
        assert_eq!(fx.to_client(&actions), [Message::Done { id: 30 }]);
        // The Enter goes before the reply: a client's next write cannot come between.
        let enter_at = actions
            .iter()
            .position(|a| matches!(a, Action::Send(c, _) if *c == fx.wrapper));
        let done_at = actions
            .iter()
            .position(|a| matches!(a, Action::Send(c, _) if *c == fx.client));
        assert!(enter_at < done_at, "{actions:?}");
    }

    #[test]
    fn send_with_enter_whose_text_could_not_be_written_presses_no_enter() {
        let mut fx = Fixture::new();
        fx.ask(Message::Send {
            id: 31,
            session: "s1".into(),
            data: b"say hi".to_vec(),
            enter: true,
        });
        let failed = fx.st.delivery_finished(
            fx.client,
            31,
            Err(SinkError::SessionDisconnected {
                session: "s1".into(),
            }),
            NOW,
        );
        assert!(matches!(
            fx.to_client(&failed).as_slice(),
            [Message::Error {
                reason: ErrorReason::SessionDisconnected,
                ..
            }]
        ));
        assert_eq!(fx.st.next_deadline(), None);
    }

    #[test]
    fn an_enter_whose_session_went_away_meanwhile_answers_disconnected() {
        let mut fx = Fixture::new();
        fx.ask(Message::Send {
            id: 32,
            session: "s1".into(),
            data: b"say hi".to_vec(),
            enter: true,
        });
        assert!(
            fx.st
                .delivery_finished(fx.client, 32, Ok(()), NOW)
                .is_empty()
        );
        fx.st.connection_closed_at(fx.wrapper, NOW);
        let actions = fx.st.expire(NOW + DEFAULT_SUBMIT_DELAY_MS);
        assert!(fx.to_wrapper(&actions).is_empty());
        assert!(matches!(
            fx.to_client(&actions).as_slice(),
            [Message::Error {
                reason: ErrorReason::SessionDisconnected,
                ..
            }]
        ));
    }

    #[test]
    fn a_program_that_has_not_taken_its_input_gets_no_more_until_it_has() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        fx.progress.input_blocked = true;
        fx.report();
        let send = Message::Send {
            id: 27,
            session: "s1".into(),
            data: b"more\r".to_vec(),
            enter: false,
        };
        let (reason, message) = refused(&mut fx.st, fx.client, send.clone());
        assert_eq!(reason, ErrorReason::Busy);
        assert!(message.contains("has not taken the input"), "{message}");
        // `status` says why.
        let status = |fx: &mut Fixture| match req(
            &mut fx.st,
            fx.client,
            Message::SessionStatus {
                id: 26,
                session: "s1".into(),
            },
        ) {
            Message::Status { status, .. } => status.input_blocked,
            other => panic!("{other:?}"),
        };
        assert!(status(&mut fx));
        let exec = Message::Exec {
            id: 28,
            session: "s1".into(),
            command: "true".into(),
            timeout_ms: None,
        };
        assert_eq!(refused(&mut fx.st, fx.client, exec).0, ErrorReason::Busy);
        // Once the program has taken it, input flows again.
        fx.progress.input_blocked = false;
        fx.report();
        assert!(!status(&mut fx));
        let actions = fx.ask(send);
        assert!(matches!(
            delivery(&actions).0,
            Delivery::Inject { message, .. } if *message == inject(b"more\r")
        ));
    }

    #[test]
    fn end_session_interrupts_and_answers_at_the_prompt() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        let end = |force| Message::EndSession {
            id: 29,
            session: "s1".into(),
            force,
            timeout_ms: Some(100),
        };
        let idle = fx.ask(end(false));
        assert!(matches!(
            fx.to_client(&idle).as_slice(),
            [Message::SessionEnded { outcome, .. }] if outcome == "idle"
        ));
        fx.submitted("sleep 100");
        let actions = fx.ask(end(false));
        assert_eq!(fx.to_wrapper(&actions), [inject(b"\x03")]);
        let actions = fx.prompt(b"^C\n$ ", Some(130));
        assert!(matches!(
            fx.to_client(&actions).as_slice(),
            [Message::SessionEnded { outcome, .. }] if outcome == "interrupted"
        ));
        // Ctrl+C is not enough: --force kills at the deadline.
        fx.submitted("trap '' INT; sleep 100");
        fx.ask(end(true));
        let actions = fx.st.expire(NOW + 100);
        assert_eq!(
            fx.to_wrapper(&actions),
            [Message::Terminate {
                id: 0,
                session: "s1".into()
            }]
        );
        assert!(matches!(
            fx.to_client(&actions).as_slice(),
            [Message::SessionEnded { outcome, .. }] if outcome == "killed"
        ));
        let reset = fx.st.events.since(None, &["session.reset".into()]).count();
        assert_eq!(reset, 1, "the reset is an event");
    }

    #[test]
    fn end_session_of_a_program_that_exits_on_ctrl_c_answers_exited_at_its_spool_size() {
        for force in [false, true] {
            let mut fx = Fixture::new();
            fx.prompt(b"$ ", None);
            fx.submitted("python3 guess.py");
            fx.ask(Message::EndSession {
                id: 30,
                session: "s1".into(),
                force,
                timeout_ms: Some(100),
            });
            let size = fx.st.sessions["s1"].live.progress.spool_size;
            assert!(size > 0);
            let actions = fx.st.connection_closed(fx.wrapper);
            match fx.to_client(&actions).as_slice() {
                [
                    Message::SessionEnded {
                        outcome,
                        resume_cursor,
                        ..
                    },
                ] => assert_eq!((outcome.as_str(), *resume_cursor), ("exited", size)),
                other => panic!("force {force}: {other:?}"),
            }
        }
    }

    #[test]
    fn status_reports_mode_cursors_and_waits() {
        let mut fx = Fixture::new();
        fx.prompt(b"$ ", None);
        fx.submitted("make");
        fx.wait_for("done", PatternKind::Literal, 0);
        match req(
            &mut fx.st,
            fx.client,
            Message::SessionStatus {
                id: 30,
                session: "s1".into(),
            },
        ) {
            Message::Status { status, .. } => {
                assert_eq!(status.mode, Mode::Busy);
                assert_eq!(status.current_input.as_deref(), Some("make"));
                assert_eq!(status.resume_cursor, 2);
                assert_eq!(status.prompt_cursor, Some(0));
                assert_eq!(status.waiters, 1);
                assert_eq!(status.spool.as_deref(), Some("/spools/s1"));
            }
            other => panic!("{other:?}"),
        }
    }
}
