//! Sessions before they register and after they end.
//!
//! **After**: a session that ends is remembered (the newest [`super::DEPARTED_MEMORY`]): its
//! registration, how far it got, when it ended and how its command ended, as its wrapper said in
//! `deregister`. `session_status` answers for it (mode `exited`) by id, unique id prefix, or name
//! when no live session has that name (the newest ended one of that name); every other request
//! keeps saying that it ended.
//!
//! **Before**: a wait (`wait_for`, `wait_prompt`, `expect_send`) or an `exec` whose session
//! argument names no live session is parked as an [`Awaiting`] with the request's deadline —
//! a script may start `clippy-session --name sh` and ask `clippy-ctl wait-prompt sh` at once,
//! before the wrapper has registered. When a session registers whose id, name or id prefix
//! matches the argument, the request goes on as if it had been asked then, within what is left
//! of its deadline. An `exec` also waits for the session's first prompt, as it does for a
//! session that registered but has not shown one yet. An argument that is exactly the id of an
//! ended session is refused at once (that session will not come back); a name whose only
//! session ended parks (names are reused by the next session).

use clippy_proto::{ErrorReason, Message, Mode, Progress, SessionExit, SessionInfo, SessionState};

use super::{
    Action, ConnId, DEPARTED_MEMORY, Level, MAX_CANDIDATES, Outcome, Refusal, State, refuse,
    spool_ops::{DEFAULT_WAIT_MS, MAX_WAIT_MS},
};

/// How a session's command ended, as its wrapper said in `deregister` (nothing when its
/// connection just closed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ExitReport {
    /// The code a shell shows: the exit code, or 128 + N for signal N.
    pub(super) exit_code: Option<i32>,
    /// The signal that killed it.
    pub(super) signal: Option<i32>,
}

impl ExitReport {
    /// For the log: `exit code 3`, `killed by signal 9 (exit code 137)`, `exit status unknown`.
    pub(super) fn describe(&self) -> String {
        match (self.exit_code, self.signal) {
            (Some(code), Some(signal)) => format!("killed by signal {signal} (exit code {code})"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (Some(code), None) => format!("exit code {code}"),
            (None, None) => "exit status unknown".to_owned(),
        }
    }
}

/// What is remembered of an ended session.
#[derive(Debug)]
pub(super) struct Ended {
    info: SessionInfo,
    /// Its wrapper's last report.
    progress: Progress,
    /// Its latest turn when it ended (no longer held).
    last_turn_id: Option<String>,
    exit: ExitReport,
    /// When it ended, Unix ms by the state machine's clock.
    ended_at: u64,
}

impl Ended {
    pub(super) fn new(
        info: SessionInfo,
        progress: Progress,
        last_turn_id: Option<String>,
        exit: ExitReport,
        ended_at: u64,
    ) -> Self {
        Self {
            info,
            progress,
            last_turn_id,
            exit,
            ended_at,
        }
    }

    /// Its `session_status`: as it last stood, `mode: exited`, nothing running or waiting, and
    /// `exit_code` the session's own (not its last command's).
    fn status(&self) -> SessionState {
        let progress = &self.progress;
        SessionState {
            session: self.info.session.clone(),
            name: self.info.name.clone(),
            pid: self.info.pid,
            connected: false,
            mode: Mode::Exited,
            exec_running: false,
            resume_cursor: progress.spool_size,
            prompt_cursor: progress.prompt_cursor,
            current_input: None,
            last_turn_id: self.last_turn_id.clone(),
            // What ended is the session's own command: its code, as a shell shows it.
            exit_code: self.exit.exit_code,
            cwd: progress.cwd.clone(),
            bracketed_paste: self.info.bracketed_paste,
            waiters: 0,
            inbox: 0,
            spool: self.info.spool.clone(),
            waiting: None,
            hooks: progress.hooks.clone(),
            input_blocked: false,
            prompt_unrecognised: progress.prompt_unrecognised,
            exited: Some(SessionExit {
                exit_code: self.exit.exit_code,
                signal: self.exit.signal,
                ended_at: self.ended_at,
            }),
            attached: 0,
            busy_since: None,
        }
    }
}

/// What a session argument names among the live sessions.
#[derive(Debug)]
pub(super) enum Lookup {
    /// This session (its id).
    Found(String),
    /// Nothing matches: a session of that name or id may still register.
    Missing(Refusal),
    /// It is exactly the id of a session that ended.
    Ended(Refusal),
    /// Several sessions match (the refusal lists them).
    Ambiguous(Refusal),
}

/// A request waiting for its session: to register, or (an `exec`) to show its first prompt.
#[derive(Debug)]
pub(super) struct Awaiting {
    /// Who asked.
    pub(super) conn: ConnId,
    /// The request as asked (for one waiting for a first prompt: with the session's id).
    request: Message,
    /// When it gives up, in the state machine's milliseconds.
    deadline: u64,
    /// `None` while no session matches; the session's id once one registered and the request
    /// waits for its first prompt.
    session: Option<String>,
}

/// The session argument of a request that may wait for its session, its timeout and its
/// cursor (where a timeout answer resumes).
fn session_of(request: &Message) -> Option<(&str, Option<u64>, u64)> {
    match request {
        Message::WaitFor {
            session,
            timeout_ms,
            from_cursor,
            ..
        }
        | Message::WaitPrompt {
            session,
            timeout_ms,
            from_cursor,
            ..
        }
        | Message::ExpectSend {
            session,
            timeout_ms,
            from_cursor,
            ..
        } => Some((session, *timeout_ms, *from_cursor)),
        Message::Exec {
            session,
            timeout_ms,
            ..
        } => Some((session, *timeout_ms, 0)),
        _ => None,
    }
}

/// Sets the request's timeout to what is left of it.
fn set_timeout(request: &mut Message, left_ms: u64) {
    match request {
        Message::WaitFor { timeout_ms, .. }
        | Message::WaitPrompt { timeout_ms, .. }
        | Message::ExpectSend { timeout_ms, .. }
        | Message::Exec { timeout_ms, .. } => *timeout_ms = Some(left_ms),
        _ => {}
    }
}

/// Whether the session `id` named `name` answers to the argument `arg`.
fn answers_to(arg: &str, id: &str, name: Option<&str>) -> bool {
    !arg.is_empty() && (id.starts_with(arg) || name == Some(arg))
}

impl State {
    /// A wait or an `exec`: answered (or parked) now when its session argument names a live
    /// session, refused when it is ambiguous or the id of an ended session, and otherwise parked
    /// until a session of that id, name or id prefix registers.
    pub(super) fn session_request(
        &mut self,
        conn: ConnId,
        request: Message,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let Some((arg, timeout_ms, _)) = session_of(&request) else {
            return Err(refuse(
                ErrorReason::NotAllowed,
                format!("{} does not wait for a session", request.kind()),
            ));
        };
        match self.lookup(arg) {
            Lookup::Found(_) => self.run_session_request(conn, request, now_ms, out),
            Lookup::Missing(refusal) if arg.is_empty() => Err(refusal),
            Lookup::Missing(_) => {
                out.push(Action::Log(
                    Level::Debug,
                    format!(
                        "connection {conn}: {} for {arg:?} waits for that session to register",
                        request.kind()
                    ),
                ));
                let deadline = deadline(now_ms, timeout_ms);
                self.park_awaiting(conn, request, deadline, None);
                Ok(Outcome::Parked)
            }
            Lookup::Ended(refusal) | Lookup::Ambiguous(refusal) => Err(refusal),
        }
    }

    fn run_session_request(
        &mut self,
        conn: ConnId,
        request: Message,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        match request {
            Message::Exec {
                id,
                session,
                command,
                timeout_ms,
            } => self.exec(conn, id, &session, &command, timeout_ms, now_ms, out),
            wait => self.wait(conn, wait, now_ms, out),
        }
    }

    fn park_awaiting(
        &mut self,
        conn: ConnId,
        request: Message,
        deadline: u64,
        session: Option<String>,
    ) {
        let key = self.next_waiter;
        self.next_waiter += 1;
        self.awaiting.insert(
            key,
            Awaiting {
                conn,
                request,
                deadline,
                session,
            },
        );
    }

    /// `exec` (`request`, naming `session` by its id) into a session that has not shown its
    /// first prompt: parked until it has, within the request's deadline.
    pub(super) fn await_first_prompt(
        &mut self,
        conn: ConnId,
        request: Message,
        session: String,
        now_ms: u64,
        out: &mut Vec<Action>,
    ) {
        let timeout_ms = session_of(&request).and_then(|(_, timeout, _)| timeout);
        out.push(Action::Log(
            Level::Debug,
            format!("connection {conn}: exec waits for session {session}'s first prompt"),
        ));
        self.park_awaiting(conn, request, deadline(now_ms, timeout_ms), Some(session));
    }

    /// Session `session` registered: the requests waiting for a session of its id, name or id
    /// prefix go on.
    pub(super) fn session_registered(&mut self, session: &str, out: &mut Vec<Action>) {
        let Some(entry) = self.sessions.get(session) else {
            return;
        };
        let name = entry.info.name.as_deref();
        let ready: Vec<u64> = self
            .awaiting
            .iter()
            .filter(|(_, a)| {
                a.session.is_none()
                    && session_of(&a.request)
                        .is_some_and(|(arg, _, _)| answers_to(arg, session, name))
            })
            .map(|(&key, _)| key)
            .collect();
        self.resume_awaiting(ready, out);
    }

    /// Session `session` reported progress: the `exec`s waiting for its first prompt go on once
    /// it is past starting.
    pub(super) fn first_prompt_seen(&mut self, session: &str, out: &mut Vec<Action>) {
        let started = self
            .sessions
            .get(session)
            .is_some_and(|e| e.live.progress.mode != Mode::Starting);
        if !started {
            return;
        }
        let ready: Vec<u64> = self
            .awaiting
            .iter()
            .filter(|(_, a)| a.session.as_deref() == Some(session))
            .map(|(&key, _)| key)
            .collect();
        self.resume_awaiting(ready, out);
    }

    /// Runs the waiting requests `keys` (in arrival order) as if they had been asked now, with
    /// what is left of their deadlines.
    fn resume_awaiting(&mut self, keys: Vec<u64>, out: &mut Vec<Action>) {
        let now = self.clock;
        for key in keys {
            let Some(Awaiting {
                conn,
                mut request,
                deadline,
                ..
            }) = self.awaiting.remove(&key)
            else {
                continue;
            };
            set_timeout(&mut request, deadline.saturating_sub(now));
            let id = request.id();
            let action = match self.session_request(conn, request, now, out) {
                Ok(Outcome::Reply(reply)) => Action::Send(conn, reply),
                Ok(Outcome::Deliver(delivery)) => Action::Deliver {
                    delivery,
                    reply_to: conn,
                    reply_id: id,
                },
                Ok(Outcome::Parked) => continue,
                Err(refusal) => {
                    Action::Send(conn, Message::error(id, refusal.reason, refusal.message))
                }
            };
            out.push(action);
        }
    }

    /// The earliest deadline of a request waiting for its session.
    pub(super) fn next_awaiting_deadline(&self) -> Option<u64> {
        self.awaiting.values().map(|a| a.deadline).min()
    }

    /// Answers `timeout` to the requests whose session did not come (or, for an `exec`, did not
    /// show its first prompt) by `now_ms`.
    pub(super) fn expire_awaiting(&mut self, now_ms: u64, out: &mut Vec<Action>) {
        let due: Vec<u64> = self
            .awaiting
            .iter()
            .filter(|(_, a)| a.deadline <= now_ms)
            .map(|(&key, _)| key)
            .collect();
        for key in due {
            let Some(awaiting) = self.awaiting.remove(&key) else {
                continue;
            };
            let Some((arg, _, from_cursor)) = session_of(&awaiting.request) else {
                continue;
            };
            let id = awaiting.request.id();
            let reply = match &awaiting.session {
                None => Message::timeout(
                    id,
                    format!(
                        "session {arg:?} never registered: no session with that id, name or id \
                         prefix came before the deadline"
                    ),
                    from_cursor,
                ),
                Some(session) => Message::timeout(
                    id,
                    format!(
                        "session {session} did not show its first prompt in time; the command \
                         was not run"
                    ),
                    self.sessions
                        .get(session)
                        .map_or(0, |e| e.live.progress.spool_size),
                ),
            };
            out.push(Action::Send(awaiting.conn, reply));
        }
    }

    /// Session `session` ended: the `exec`s waiting for its first prompt fail.
    pub(super) fn fail_awaiting_of(&mut self, session: &str, out: &mut Vec<Action>) {
        let failed: Vec<u64> = self
            .awaiting
            .iter()
            .filter(|(_, a)| a.session.as_deref() == Some(session))
            .map(|(&key, _)| key)
            .collect();
        for key in failed {
            if let Some(awaiting) = self.awaiting.remove(&key) {
                out.push(Action::Send(
                    awaiting.conn,
                    Message::error(
                        awaiting.request.id(),
                        ErrorReason::SessionDisconnected,
                        format!("session {session} ended before its first prompt"),
                    ),
                ));
            }
        }
    }

    /// How many requests wait for session `session`'s first prompt.
    pub(super) fn awaiting_on(&self, session: &str) -> usize {
        self.awaiting
            .values()
            .filter(|a| a.session.as_deref() == Some(session))
            .count()
    }

    /// Remembers an ended session, forgetting the oldest beyond [`DEPARTED_MEMORY`].
    pub(super) fn remember_ended(&mut self, session: &str, ended: Ended) {
        if self.ended.insert(session.to_owned(), ended).is_none() {
            self.departed.push_back(session.to_owned());
        }
        while self.departed.len() > DEPARTED_MEMORY {
            if let Some(old) = self.departed.pop_front() {
                self.ended.remove(&old);
            }
        }
    }

    /// The `session_status` of the ended session `arg` names, for an argument that names no
    /// live session: its exact id, else the newest ended session of that name, else a unique
    /// prefix of an ended session's id.
    ///
    /// # Errors
    ///
    /// Several ended sessions' ids start with `arg` (the refusal lists them).
    pub(super) fn ended_status(&self, arg: &str) -> Result<Option<SessionState>, Refusal> {
        if let Some(ended) = self.ended.get(arg) {
            return Ok(Some(ended.status()));
        }
        if arg.is_empty() {
            return Ok(None);
        }
        let newest_named = self
            .departed
            .iter()
            .rev()
            .filter_map(|id| self.ended.get(id))
            .find(|e| e.info.name.as_deref() == Some(arg));
        if let Some(ended) = newest_named {
            return Ok(Some(ended.status()));
        }
        let mut prefixed: Vec<&Ended> = self
            .departed
            .iter()
            .filter(|id| id.starts_with(arg))
            .filter_map(|id| self.ended.get(id))
            .collect();
        match prefixed.len() {
            0 => Ok(None),
            1 => Ok(prefixed.pop().map(Ended::status)),
            n => {
                prefixed.sort_by(|a, b| a.info.session.cmp(&b.info.session));
                let mut listed: Vec<String> = prefixed
                    .iter()
                    .take(MAX_CANDIDATES)
                    .map(|e| match &e.info.name {
                        Some(name) => format!("{} ({name})", e.info.session),
                        None => e.info.session.clone(),
                    })
                    .collect();
                if n > MAX_CANDIDATES {
                    listed.push(format!("and {} more", n - MAX_CANDIDATES));
                }
                Err(refuse(
                    ErrorReason::SessionNotFound,
                    format!(
                        "no live session has the id, name or id prefix {arg:?}, and {n} ended \
                         sessions start with it: {}; give the full id",
                        listed.join(", ")
                    ),
                ))
            }
        }
    }
}

/// A request's deadline: `now_ms` plus its timeout (the default when it gives none, at most
/// [`MAX_WAIT_MS`]), as a parked wait computes it.
fn deadline(now_ms: u64, timeout_ms: Option<u64>) -> u64 {
    now_ms.saturating_add(timeout_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_WAIT_MS))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clippy_proto::{PatternKind, Role, SessionSummary};
    use clippy_registry::RegistryConfig;

    use super::*;
    use crate::spool_ops::tests::MemSpools;
    use crate::tests::{NOW, connect, info, refused, report, req, sent_to, wrapper};

    /// A broker with a client (connection 1) and no session; sessions come as the test says.
    struct World {
        st: State,
        spools: MemSpools,
        client: ConnId,
    }

    impl World {
        fn new() -> Self {
            let spools = MemSpools::default();
            let config = RegistryConfig {
                ring_depth: 8,
                max_turn_bytes: 1024,
            };
            let mut st =
                State::with_spool_files(config, Box::new(spools.clone())).expect("valid config");
            let client = connect(&mut st, 1, Role::Client);
            Self { st, spools, client }
        }

        fn ask(&mut self, msg: Message) -> Vec<Message> {
            let actions = self.st.handle(self.client, msg, NOW);
            sent_to(&actions, self.client)
        }

        /// Session `session`'s child wrote `bytes`: appended to its spool, reported with
        /// `progress` (whose `spool_size` this sets); what the client is sent.
        fn output(
            &mut self,
            wrapper: ConnId,
            session: &str,
            progress: &mut Progress,
            bytes: &[u8],
        ) -> Vec<Action> {
            let mut spools = self.spools.0.lock().expect("not poisoned");
            let spool = spools
                .entry(PathBuf::from(format!("/spools/{session}")))
                .or_default();
            spool.extend_from_slice(bytes);
            progress.spool_size = spool.len() as u64;
            drop(spools);
            self.st.handle(
                wrapper,
                Message::Progress {
                    id: 9,
                    session: session.into(),
                    progress: progress.clone(),
                },
                NOW,
            )
        }

        /// A prompt drawn at the end of the spool, then `text`.
        fn prompt(
            &mut self,
            wrapper: ConnId,
            session: &str,
            progress: &mut Progress,
            text: &[u8],
        ) -> Vec<Message> {
            progress.prompt_cursor = Some(progress.spool_size);
            progress.prompts += 1;
            progress.prompt_inputs = progress.inputs;
            progress.mode = Mode::Idle;
            progress.input = None;
            let actions = self.output(wrapper, session, progress, text);
            sent_to(&actions, self.client)
        }

        fn status(&mut self, arg: &str) -> SessionState {
            match req(
                &mut self.st,
                self.client,
                Message::SessionStatus {
                    id: 30,
                    session: arg.into(),
                },
            ) {
                Message::Status { status, .. } => status,
                other => panic!("expected a status, got {other:?}"),
            }
        }

        fn sessions(&mut self) -> Vec<SessionSummary> {
            match req(&mut self.st, self.client, Message::ListSessions { id: 31 }) {
                Message::Sessions { sessions, .. } => SessionSummary::unshare(sessions),
                other => panic!("expected sessions, got {other:?}"),
            }
        }

        fn deregister(&mut self, wrapper: ConnId, session: &str, exit: ExitReport, at: u64) {
            let actions = self.st.handle(
                wrapper,
                Message::Deregister {
                    id: 40,
                    session: session.into(),
                    exit_code: exit.exit_code,
                    signal: exit.signal,
                },
                at,
            );
            assert_eq!(sent_to(&actions, wrapper), [Message::Done { id: 40 }]);
        }

        fn last_exit_event(&self) -> clippy_proto::EventRecord {
            self.st
                .events
                .since(None, &[])
                .filter(|e| e.kind == "session.exited")
                .last()
                .cloned()
                .expect("a session.exited event")
        }
    }

    fn wait_prompt(session: &str, timeout_ms: u64) -> Message {
        Message::WaitPrompt {
            id: 20,
            session: session.into(),
            from_cursor: 0,
            timeout_ms: Some(timeout_ms),
        }
    }

    fn exec(session: &str, command: &str, timeout_ms: u64) -> Message {
        Message::Exec {
            id: 21,
            session: session.into(),
            command: command.into(),
            timeout_ms: Some(timeout_ms),
        }
    }

    fn timed_out(messages: &[Message]) -> (String, Option<u64>) {
        match messages {
            [
                Message::Error {
                    reason: ErrorReason::Timeout,
                    message,
                    resume_cursor,
                    ..
                },
            ] => (message.clone(), *resume_cursor),
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    // ── requests before their session registers ────────────────────────────────────────

    #[test]
    fn a_wait_prompt_before_the_session_registers_answers_at_its_first_prompt() {
        let mut w = World::new();
        assert!(w.ask(wait_prompt("sh", 1000)).is_empty(), "parked");
        assert_eq!(w.st.awaiting.len(), 1);
        assert_eq!(w.st.next_deadline(), Some(NOW + 1000));
        // Another session is no answer.
        wrapper(&mut w.st, 2, "zzz", Some("other"));
        assert_eq!(w.st.awaiting.len(), 1);
        // Its registration turns the request into a wait on it, from its start.
        let sh = wrapper(&mut w.st, 3, "k3f9", Some("sh"));
        assert!(w.st.awaiting.is_empty());
        assert_eq!(w.status("sh").waiters, 1);
        let mut progress = Progress::default();
        let actions = w.output(sh, "k3f9", &mut progress, b"starting\r\n");
        assert!(sent_to(&actions, w.client).is_empty(), "no prompt yet");
        match w.prompt(sh, "k3f9", &mut progress, b"$ ").as_slice() {
            [
                Message::Matched {
                    id: 20,
                    match_text,
                    match_cursor: 10,
                    resume_cursor: 12,
                    ..
                },
            ] => assert_eq!(match_text, "$"),
            other => panic!("{other:?}"),
        }
        assert!(w.st.waiters.is_empty());
    }

    #[test]
    fn a_wait_for_before_the_session_registers_looks_from_its_start() {
        let mut w = World::new();
        let parked = w.ask(Message::WaitFor {
            id: 22,
            session: "k3".into(),
            pattern: "ready".into(),
            kind: PatternKind::Literal,
            from_cursor: 0,
            timeout_ms: Some(1000),
        });
        assert!(parked.is_empty());
        // The session printed before it registered (its wrapper reconnected, say): the match
        // is in what its spool already holds.
        w.spools
            .0
            .lock()
            .expect("not poisoned")
            .insert(PathBuf::from("/spools/k3f9"), b"boot\nready\n".to_vec());
        let wrapper_conn = connect(&mut w.st, 2, Role::Wrapper);
        let actions = w.st.handle(
            wrapper_conn,
            Message::Register {
                id: 2,
                session: info("k3f9", None, false),
                progress: Some(Progress {
                    spool_size: 11,
                    ..Progress::default()
                }),
                resends: false,
            },
            NOW,
        );
        assert_eq!(sent_to(&actions, wrapper_conn), [Message::Done { id: 2 }]);
        match sent_to(&actions, w.client).as_slice() {
            [
                Message::Matched {
                    id: 22,
                    match_span: (5, 10),
                    ..
                },
            ] => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_session_that_never_registers_times_the_wait_out_saying_so() {
        let mut w = World::new();
        assert!(
            w.ask(Message::WaitFor {
                id: 23,
                session: "ghost".into(),
                pattern: "x".into(),
                kind: PatternKind::Literal,
                from_cursor: 7,
                timeout_ms: Some(500),
            })
            .is_empty()
        );
        assert!(w.st.expire(NOW + 499).is_empty());
        let actions = w.st.expire(NOW + 500);
        let (message, resume_cursor) = timed_out(&sent_to(&actions, w.client));
        assert!(message.contains("never registered"), "{message}");
        assert!(message.contains("ghost"), "{message}");
        assert_eq!(resume_cursor, Some(7), "the cursor given: nothing was read");
        assert!(w.st.awaiting.is_empty());
        assert_eq!(w.st.next_deadline(), None);
        // A session of that name registering later finds nobody waiting.
        wrapper(&mut w.st, 2, "g1", Some("ghost"));
        assert!(w.st.waiters.is_empty());
    }

    #[test]
    fn an_ambiguous_argument_is_refused_at_once() {
        let mut w = World::new();
        wrapper(&mut w.st, 2, "ab1", Some("twin"));
        wrapper(&mut w.st, 3, "ab2", Some("twin"));
        for (arg, says) in [("twin", "are named"), ("ab", "start with")] {
            let (reason, message) = refused(&mut w.st, w.client, wait_prompt(arg, 1000));
            assert_eq!(reason, ErrorReason::SessionNotFound);
            assert!(
                message.contains(says) && message.contains("ab1") && message.contains("ab2"),
                "{message}"
            );
            let (reason, _) = refused(&mut w.st, w.client, exec(arg, "true", 1000));
            assert_eq!(reason, ErrorReason::SessionNotFound);
        }
        assert!(w.st.awaiting.is_empty() && w.st.waiters.is_empty());
    }

    #[test]
    fn the_id_of_an_ended_session_is_refused_but_its_name_waits_for_the_next_one() {
        let mut w = World::new();
        let old = wrapper(&mut w.st, 2, "old1", Some("sh"));
        w.st.connection_closed(old);
        for request in [wait_prompt("old1", 1000), exec("old1", "true", 1000)] {
            let (reason, message) = refused(&mut w.st, w.client, request);
            assert_eq!(reason, ErrorReason::SessionNotFound);
            assert!(message.contains("has ended"), "{message}");
        }
        // The name is free for the next session: the request waits for it.
        assert!(w.ask(wait_prompt("sh", 1000)).is_empty());
        let new = wrapper(&mut w.st, 3, "new1", Some("sh"));
        let mut progress = Progress::default();
        match w.prompt(new, "new1", &mut progress, b"$ ").as_slice() {
            [Message::Matched { id: 20, .. }] => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_exec_before_the_session_registers_runs_at_its_first_prompt() {
        let mut w = World::new();
        assert!(w.ask(exec("sh", "echo hi", 1000)).is_empty());
        let sh = wrapper(&mut w.st, 2, "k1", Some("sh"));
        // Registered, but no prompt yet: still waiting, nothing typed.
        assert_eq!(w.st.awaiting.len(), 1);
        assert_eq!(w.status("sh").waiters, 1);
        let mut progress = Progress::default();
        let actions = w.output(sh, "k1", &mut progress, b"welcome\r\n");
        assert_eq!(sent_to(&actions, sh), [Message::Done { id: 9 }]);
        // The first prompt: the command is typed (its Enter follows after the submit delay).
        progress.prompt_cursor = Some(progress.spool_size);
        progress.prompts = 1;
        progress.mode = Mode::Idle;
        let actions = w.output(sh, "k1", &mut progress, b"$ ");
        assert!(
            sent_to(&actions, sh).contains(&Message::Inject {
                id: 0,
                session: "k1".into(),
                data: b"echo hi".to_vec(),
            }),
            "{actions:?}"
        );
        assert!(w.st.awaiting.is_empty());
        assert!(w.status("sh").exec_running);
        // It runs, then the prompt comes back: the exec's answer.
        progress.inputs = 1;
        progress.mode = Mode::Busy;
        w.output(sh, "k1", &mut progress, b"echo hi\r\nhi\r\n");
        match w.prompt(sh, "k1", &mut progress, b"$ ").as_slice() {
            [Message::ExecResult { id: 21, .. }] => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_session_registering_at_its_prompt_hears_it_is_registered_then_gets_the_exec() {
        let mut w = World::new();
        assert!(w.ask(exec("sh", "echo hi", 1000)).is_empty());
        // Its wrapper registers once the prompt is there already: the exec runs at once, and
        // the wrapper is told it is registered before it is told what to type.
        let wrapper_conn = connect(&mut w.st, 2, Role::Wrapper);
        let actions = w.st.handle(
            wrapper_conn,
            Message::Register {
                id: 2,
                session: info("k1", Some("sh"), false),
                progress: Some(Progress {
                    spool_size: 2,
                    prompt_cursor: Some(0),
                    prompts: 1,
                    mode: Mode::Idle,
                    ..Progress::default()
                }),
                resends: false,
            },
            NOW,
        );
        assert_eq!(
            sent_to(&actions, wrapper_conn),
            [
                Message::Done { id: 2 },
                Message::Inject {
                    id: 0,
                    session: "k1".into(),
                    data: b"echo hi".to_vec(),
                },
            ]
        );
        assert!(w.st.awaiting.is_empty());
        assert!(w.status("sh").exec_running);
    }

    #[test]
    fn an_exec_waiting_for_a_first_prompt_times_out_or_fails_with_its_session() {
        let mut w = World::new();
        let sh = wrapper(&mut w.st, 2, "k1", Some("sh"));
        // Registered already, no prompt yet: the same wait (not `busy`).
        assert!(w.ask(exec("sh", "true", 300)).is_empty());
        let mut progress = Progress::default();
        w.output(sh, "k1", &mut progress, b"loading");
        let actions = w.st.expire(NOW + 300);
        let (message, resume_cursor) = timed_out(&sent_to(&actions, w.client));
        assert!(message.contains("first prompt"), "{message}");
        assert_eq!(resume_cursor, Some(7));
        assert!(!w.status("sh").exec_running, "nothing was typed");
        // The session ends while an exec waits for its first prompt.
        assert!(w.ask(exec("sh", "true", 300)).is_empty());
        let actions = w.st.connection_closed(sh);
        match sent_to(&actions, w.client).as_slice() {
            [
                Message::Error {
                    id: 21,
                    reason: ErrorReason::SessionDisconnected,
                    ..
                },
            ] => {}
            other => panic!("{other:?}"),
        }
        assert!(w.st.awaiting.is_empty());
    }

    #[test]
    fn a_client_that_goes_away_cancels_what_waits_for_a_session() {
        let mut w = World::new();
        assert!(w.ask(wait_prompt("sh", 1000)).is_empty());
        assert!(w.ask(exec("sh", "true", 1000)).is_empty());
        w.st.connection_closed(w.client);
        assert!(w.st.awaiting.is_empty());
        assert!(w.st.expire(u64::MAX).is_empty());
        wrapper(&mut w.st, 2, "k1", Some("sh"));
        assert!(w.st.waiters.is_empty());
    }

    // ── sessions after they end ───────────────────────────────────────────────────────

    #[test]
    fn an_ended_session_answers_its_status_with_how_it_ended() {
        let mut w = World::new();
        let sh = wrapper(&mut w.st, 2, "aaa1", Some("sh"));
        report(&mut w.st, sh, "aaa1", 1, "out");
        let exit = ExitReport {
            exit_code: Some(3),
            signal: None,
        };
        w.deregister(sh, "aaa1", exit, NOW + 5);
        let event = w.last_exit_event();
        assert_eq!(
            (event.session.as_deref(), event.name.as_deref()),
            (Some("aaa1"), Some("sh"))
        );
        assert_eq!((event.exit_code, event.signal), (Some(3), None));
        // By id, by name, by id prefix.
        for arg in ["aaa1", "sh", "aa"] {
            let status = w.status(arg);
            assert_eq!(status.session, "aaa1", "{arg}");
            assert_eq!(status.mode, Mode::Exited);
            assert!(!status.connected);
            assert_eq!((status.pid, status.name.as_deref()), (4242, Some("sh")));
            assert_eq!(status.last_turn_id.as_deref(), Some("aaa1:1"));
            assert_eq!(status.exit_code, Some(3), "the session's own");
            assert_eq!(
                status.exited,
                Some(SessionExit {
                    exit_code: Some(3),
                    signal: None,
                    ended_at: NOW + 5,
                })
            );
        }
        // Live sessions only in the list; other requests keep saying it ended.
        assert!(w.sessions().is_empty());
        let (reason, message) = refused(
            &mut w.st,
            w.client,
            Message::Capture {
                id: 32,
                session: "aaa1".into(),
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(message.contains("has ended"), "{message}");
        // A live session of that name answers for the name; the ended one for its id.
        let live = wrapper(&mut w.st, 3, "bbb1", Some("sh"));
        assert_eq!(w.status("sh").session, "bbb1");
        assert_eq!(w.status("sh").mode, Mode::Starting);
        assert_eq!(w.status("aaa1").mode, Mode::Exited);
        // Once it ends too, the name means the newest ended session of that name.
        w.deregister(live, "bbb1", ExitReport::default(), NOW + 9);
        assert_eq!(w.status("sh").session, "bbb1");
    }

    #[test]
    fn a_signal_and_a_wrapper_that_just_went_are_told_apart() {
        let mut w = World::new();
        let killed = wrapper(&mut w.st, 2, "k1", Some("killed"));
        w.deregister(
            killed,
            "k1",
            ExitReport {
                exit_code: Some(137),
                signal: Some(9),
            },
            NOW,
        );
        let event = w.last_exit_event();
        assert_eq!((event.exit_code, event.signal), (Some(137), Some(9)));
        let exited = w.status("killed").exited.expect("ended");
        assert_eq!((exited.exit_code, exited.signal), (Some(137), Some(9)));

        let gone = wrapper(&mut w.st, 3, "k2", Some("gone"));
        w.st.connection_closed(gone);
        let event = w.last_exit_event();
        assert_eq!((event.exit_code, event.signal), (None, None));
        let exited = w.status("gone").exited.expect("ended");
        assert_eq!((exited.exit_code, exited.signal), (None, None));
        // Two ended sessions share the prefix "k": ambiguous, both listed.
        let (reason, message) = refused(
            &mut w.st,
            w.client,
            Message::SessionStatus {
                id: 33,
                session: "k".into(),
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(
            message.contains("k1 (killed)") && message.contains("k2 (gone)"),
            "{message}"
        );
        // Never heard of: as before.
        let (reason, message) = refused(
            &mut w.st,
            w.client,
            Message::SessionStatus {
                id: 34,
                session: "zzz".into(),
            },
        );
        assert_eq!(reason, ErrorReason::SessionNotFound);
        assert!(message.contains("no session has"), "{message}");
    }

    #[test]
    fn ended_sessions_are_remembered_up_to_a_bound() {
        let mut w = World::new();
        for n in 0..=DEPARTED_MEMORY {
            let conn = wrapper(&mut w.st, 10 + n as u64, &format!("s{n}"), None);
            w.st.connection_closed(conn);
        }
        assert_eq!(w.st.ended.len(), DEPARTED_MEMORY);
        assert_eq!(w.st.departed.len(), DEPARTED_MEMORY);
        assert!(!w.st.ended.contains_key("s0"), "the oldest is forgotten");
        assert_eq!(w.status(&format!("s{DEPARTED_MEMORY}")).mode, Mode::Exited);
    }
}
