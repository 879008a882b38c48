//! What an agent's own hooks tell about its session (issue 15, CONTRACTS/ROUTING.md events): the
//! wrapper reports in `progress` whether the agent waits for the user (a permission request, a
//! question) and how its hooks have fared; the broker keeps the latest report (it is the
//! session's `progress`), shows it in `session_status` and `list_sessions`, and turns the
//! changes of the waiting state into events — `session.waiting` when the agent starts waiting
//! (or waits for something else), `session.resumed` when it no longer waits — and the changes
//! of its mode into `session.mode` (a turn starts, ends).
//!
//! The broker decides nothing from these reports: turn detection, routes and waits go by the
//! wrapper's mode as before. The events are for whoever watches (a desktop notifier, an
//! orchestrator that answers permission prompts).

use clippy_proto::{AnswerRecord, EventRecord, Mode, WaitingState};

use super::{Action, Level, State};

/// The most of a tool's input (compact JSON) a `session.waiting` event carries: events are kept
/// in a history thousands long, and a tool's input may be a whole file. A longer input is cut at
/// a character boundary and ends with `…` (it is then not valid JSON); `session_status` has it
/// whole.
pub(super) const EVENT_INPUT_LIMIT: usize = 4096;

/// Whether `now` is another wait than `before`: another kind, tool, input, or a wait that
/// started at another time. A changed sentence alone is the same wait.
fn is_new_wait(before: Option<&WaitingState>, now: &WaitingState) -> bool {
    before.is_none_or(|b| {
        (&b.kind, &b.tool, &b.input, b.since) != (&now.kind, &now.tool, &now.input, now.since)
    })
}

/// A mode as the wire writes it.
fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Starting => "starting",
        Mode::Idle => "idle",
        Mode::Busy => "busy",
        Mode::Exited => "exited",
    }
}

/// `input` cut to [`EVENT_INPUT_LIMIT`] bytes at a character boundary, `…` added when cut.
fn event_input(input: &str) -> String {
    if input.len() <= EVENT_INPUT_LIMIT {
        return input.to_owned();
    }
    let mut end = EVENT_INPUT_LIMIT;
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &input[..end])
}

impl State {
    /// A `progress` report of `session` replaced its waiting state `before`: emit
    /// `session.waiting` for a new wait, `session.resumed` when the wait is over.
    pub(super) fn waiting_changed(
        &mut self,
        session: &str,
        before: Option<WaitingState>,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.sessions.get(session) else {
            return;
        };
        let name = entry.info.name.clone();
        let record = match (before, &entry.live.progress.waiting) {
            (before, Some(now)) if is_new_wait(before.as_ref(), now) => EventRecord {
                kind: "session.waiting".into(),
                session: Some(session.to_owned()),
                name,
                reason: Some(now.kind.clone()),
                tool: now.tool.clone(),
                input: now.input.as_deref().map(event_input),
                message: now.message.clone(),
                waiting_id: Some(now.id),
                ..EventRecord::default()
            },
            (Some(before), None) => EventRecord {
                kind: "session.resumed".into(),
                session: Some(session.to_owned()),
                name,
                reason: Some(before.kind),
                tool: before.tool,
                waiting_id: Some(before.id),
                ..EventRecord::default()
            },
            _ => return,
        };
        self.emit(record, out);
    }

    /// A `progress` report of `session` changed its mode from `before` (`starting`, `idle`,
    /// `busy`): emit `session.mode` with the new one, so that a watcher (the dashboard) knows
    /// when a turn starts without asking.
    pub(super) fn mode_changed(&mut self, session: &str, before: Mode, out: &mut Vec<Action>) {
        let Some(entry) = self.sessions.get(session) else {
            return;
        };
        let now = entry.live.progress.mode;
        if now == before {
            return;
        }
        let record = EventRecord {
            kind: "session.mode".into(),
            session: Some(session.to_owned()),
            name: entry.info.name.clone(),
            reason: Some(mode_name(now).to_owned()),
            message: entry
                .live
                .progress
                .input
                .clone()
                .filter(|_| now == Mode::Busy),
            since: entry.live.progress.busy_since.filter(|_| now == Mode::Busy),
            ..EventRecord::default()
        };
        self.emit(record, out);
    }

    /// A `progress` report of `session` changed how many terminals are attached to it from
    /// `before`: emit `session.attached` with the new count, so that a watcher (the dashboard)
    /// shows it without asking.
    pub(super) fn attached_changed(&mut self, session: &str, before: u32, out: &mut Vec<Action>) {
        let Some(entry) = self.sessions.get(session) else {
            return;
        };
        let now = entry.live.progress.attached;
        if now == before {
            return;
        }
        let record = EventRecord {
            kind: "session.attached".into(),
            session: Some(session.to_owned()),
            name: entry.info.name.clone(),
            attached: Some(now),
            message: Some(format!("{now} terminal(s) attached")),
            ..EventRecord::default()
        };
        self.emit(record, out);
    }

    /// A `progress` report of `session` replaced its latest answer `before`: emit
    /// `session.answered` for a wait answered since (by `answer` or at the terminal).
    pub(super) fn answered(
        &mut self,
        session: &str,
        before: Option<AnswerRecord>,
        out: &mut Vec<Action>,
    ) {
        let Some(entry) = self.sessions.get(session) else {
            return;
        };
        let Some(now) = &entry.live.progress.answered else {
            return;
        };
        if before.is_some_and(|b| b.waiting_id == now.waiting_id) {
            return;
        }
        let record = EventRecord {
            kind: "session.answered".into(),
            session: Some(session.to_owned()),
            name: entry.info.name.clone(),
            waiting_id: Some(now.waiting_id),
            decision: now.decision.map(|d| d.as_str().to_owned()),
            by: Some(now.by.clone()),
            ..EventRecord::default()
        };
        self.emit(record, out);
    }

    /// A `progress` report of `session` counts more disagreements between the agent's hooks and
    /// the screen than `before`: emit `session.disagreement` with the latest one, so that a
    /// changed agent release shows in the event stream (and the log) as it happens.
    pub(super) fn disagreed(&mut self, session: &str, before: u64, out: &mut Vec<Action>) {
        let Some(entry) = self.sessions.get(session) else {
            return;
        };
        let hooks = &entry.live.progress.hooks;
        if hooks.disagreements <= before {
            return;
        }
        let reason = hooks.last_disagreement.clone().unwrap_or_default();
        out.push(Action::Log(
            Level::Warn,
            format!("session {session}: the agent's hooks and the screen disagreed: {reason}"),
        ));
        let record = EventRecord {
            kind: "session.disagreement".into(),
            session: Some(session.to_owned()),
            name: entry.info.name.clone(),
            reason: hooks.last_disagreement.clone(),
            message: Some(format!(
                "{} disagreement(s) between the agent's hooks and the screen so far",
                hooks.disagreements
            )),
            ..EventRecord::default()
        };
        self.emit(record, out);
    }
}

#[cfg(test)]
mod tests {
    use clippy_proto::{ErrorReason, HookStats, Message, Mode, Progress, Role, SessionState};

    use super::*;
    use crate::tests::{NOW, connect, req, state, wrapper};

    /// Session `s1` (named `coder`, wrapper connection 1) and a client (connection 2).
    struct Fixture {
        st: State,
        wrapper: super::super::ConnId,
        client: super::super::ConnId,
        progress: Progress,
    }

    impl Fixture {
        fn new() -> Self {
            let mut st = state();
            let wrapper = wrapper(&mut st, 1, "s1", Some("coder"));
            let client = connect(&mut st, 2, Role::Client);
            let mut fx = Self {
                st,
                wrapper,
                client,
                progress: Progress {
                    mode: Mode::Busy,
                    ..Progress::default()
                },
            };
            // The session's turn is running before the reports under test.
            assert_eq!(kinds(&fx.report()), ["session.mode"]);
            fx
        }

        /// Reports [`Fixture::progress`]; the events it caused, by type.
        fn report(&mut self) -> Vec<EventRecord> {
            let before = self.st.events.since(None, &[]).count();
            let reply = req(
                &mut self.st,
                self.wrapper,
                Message::Progress {
                    id: 9,
                    session: "s1".into(),
                    progress: self.progress.clone(),
                },
            );
            assert_eq!(reply, Message::Done { id: 9 });
            self.st
                .events
                .since(None, &[])
                .skip(before)
                .cloned()
                .collect()
        }

        fn status(&mut self) -> SessionState {
            match req(
                &mut self.st,
                self.client,
                Message::SessionStatus {
                    id: 30,
                    session: "coder".into(),
                },
            ) {
                Message::Status { status, .. } => status,
                other => panic!("{other:?}"),
            }
        }

        fn listed_waiting(&mut self) -> Option<String> {
            match req(&mut self.st, self.client, Message::ListSessions { id: 6 }) {
                Message::Sessions { sessions, .. } => sessions[0].waiting.clone(),
                other => panic!("{other:?}"),
            }
        }
    }

    fn permission(tool: &str, input: &str, since: u64) -> WaitingState {
        WaitingState {
            id: since,
            kind: "permission".into(),
            tool: Some(tool.into()),
            input: Some(input.into()),
            message: Some(format!("Claude needs your permission to use {tool}")),
            since,
        }
    }

    fn kinds(events: &[EventRecord]) -> Vec<&str> {
        events.iter().map(|e| e.kind.as_str()).collect()
    }

    #[test]
    fn a_wait_is_an_event_with_its_tool_input_and_sentence_and_its_end_another() {
        let mut fx = Fixture::new();
        assert!(fx.report().is_empty(), "no wait, no event");
        fx.progress.waiting = Some(permission("Bash", r#"{"command":"ls"}"#, NOW));
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.waiting"]);
        let waiting = &events[0];
        assert_eq!(waiting.session.as_deref(), Some("s1"));
        assert_eq!(waiting.name.as_deref(), Some("coder"));
        assert_eq!(waiting.reason.as_deref(), Some("permission"));
        assert_eq!(waiting.tool.as_deref(), Some("Bash"));
        assert_eq!(waiting.input.as_deref(), Some(r#"{"command":"ls"}"#));
        assert_eq!(
            waiting.message.as_deref(),
            Some("Claude needs your permission to use Bash")
        );
        // The same wait reported again (the spool grew meanwhile): nothing new.
        fx.progress.spool_size = 100;
        assert!(fx.report().is_empty());
        // Its sentence alone changing is still the same wait.
        if let Some(w) = fx.progress.waiting.as_mut() {
            w.message = Some("still waiting".into());
        }
        assert!(fx.report().is_empty());
        // Answered: the wait is over.
        fx.progress.waiting = None;
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.resumed"]);
        assert_eq!(events[0].reason.as_deref(), Some("permission"));
        assert_eq!(events[0].tool.as_deref(), Some("Bash"));
        assert_eq!(events[0].name.as_deref(), Some("coder"));
        assert!(fx.report().is_empty(), "resumed once");
    }

    #[test]
    fn the_attached_count_and_the_turns_start_are_kept_shown_and_their_changes_are_events() {
        let mut fx = Fixture::new();
        let st = fx.status();
        assert_eq!((st.attached, st.busy_since), (0, None));
        let listed =
            |fx: &mut Fixture| match req(&mut fx.st, fx.client, Message::ListSessions { id: 6 }) {
                Message::Sessions { sessions, .. } => sessions[0].attached,
                other => panic!("{other:?}"),
            };
        assert_eq!(listed(&mut fx), 0);
        // A terminal attaches: one event with the count, shown in the status and the list.
        fx.progress.attached = 1;
        fx.progress.busy_since = Some(NOW - 5_000);
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.attached"]);
        assert_eq!(events[0].attached, Some(1));
        assert_eq!(events[0].name.as_deref(), Some("coder"));
        let st = fx.status();
        assert_eq!((st.attached, st.busy_since), (1, Some(NOW - 5_000)));
        assert_eq!(listed(&mut fx), 1);
        // The same count again: nothing; a second terminal, then both gone: one event each.
        fx.progress.spool_size = 50;
        assert!(fx.report().is_empty());
        fx.progress.attached = 2;
        assert_eq!(fx.report()[0].attached, Some(2));
        fx.progress.attached = 0;
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.attached"]);
        assert_eq!(events[0].attached, Some(0));
        // Idle: no start; busy again: the mode event carries the wrapper's start.
        fx.progress.mode = Mode::Idle;
        fx.progress.busy_since = None;
        assert_eq!(fx.report()[0].since, None);
        assert_eq!(fx.status().busy_since, None);
        fx.progress.mode = Mode::Busy;
        fx.progress.busy_since = Some(NOW + 1_000);
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.mode"]);
        assert_eq!(events[0].since, Some(NOW + 1_000));
        assert_eq!(fx.status().busy_since, Some(NOW + 1_000));
    }

    #[test]
    fn each_change_of_mode_is_an_event_with_the_new_mode_and_a_busy_turns_input() {
        let mut fx = Fixture::new();
        fx.progress.spool_size = 10;
        assert!(fx.report().is_empty(), "still busy: nothing new");
        fx.progress.mode = Mode::Idle;
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.mode"]);
        assert_eq!(events[0].reason.as_deref(), Some("idle"));
        assert_eq!(events[0].name.as_deref(), Some("coder"));
        assert_eq!(events[0].message, None);
        fx.progress.mode = Mode::Busy;
        fx.progress.input = Some("make test".into());
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.mode"]);
        assert_eq!(events[0].reason.as_deref(), Some("busy"));
        assert_eq!(events[0].message.as_deref(), Some("make test"));
    }

    #[test]
    fn each_new_disagreement_is_an_event_with_its_reason() {
        let mut fx = Fixture::new();
        fx.progress.hooks.wired = true;
        fx.progress.hooks.reports = 4;
        assert!(fx.report().is_empty(), "no disagreement, no event");
        fx.progress.hooks.disagreements = 1;
        fx.progress.hooks.last_disagreement = Some("no hook said so".into());
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.disagreement"]);
        assert_eq!(events[0].reason.as_deref(), Some("no hook said so"));
        fx.progress.hooks.disagreements = 2;
        let actions = fx.st.handle(
            fx.wrapper,
            Message::Progress {
                id: 10,
                session: "s1".into(),
                progress: fx.progress.clone(),
            },
            NOW,
        );
        assert!(
            actions.iter().any(|action| matches!(
                action,
                Action::Log(Level::Warn, line) if line.contains("disagreed: no hook said so")
            )),
            "logged as a warning: {actions:?}"
        );
        assert_eq!(events[0].name.as_deref(), Some("coder"));
        fx.progress.spool_size = 10;
        assert!(fx.report().is_empty(), "the same count again: nothing new");
        fx.progress.hooks.disagreements = 3;
        assert_eq!(kinds(&fx.report()), ["session.disagreement"]);
    }

    #[test]
    fn another_kind_tool_or_request_is_a_new_wait_without_a_resume_between() {
        let mut fx = Fixture::new();
        fx.progress.waiting = Some(permission("Bash", r#"{"command":"ls"}"#, NOW));
        fx.report();
        // Coalesced reports: the first request was answered and a second came before the
        // broker heard of it.
        fx.progress.waiting = Some(permission("Bash", r#"{"command":"rm x"}"#, NOW + 5));
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.waiting"]);
        assert_eq!(events[0].input.as_deref(), Some(r#"{"command":"rm x"}"#));
        fx.progress.waiting = Some(permission("Edit", "{}", NOW + 5));
        assert_eq!(kinds(&fx.report()), ["session.waiting"]);
        fx.progress.waiting = Some(WaitingState {
            kind: "question".into(),
            message: Some("Which file?".into()),
            since: NOW + 9,
            ..WaitingState::default()
        });
        let events = fx.report();
        assert_eq!(kinds(&events), ["session.waiting"]);
        assert_eq!(events[0].reason.as_deref(), Some("question"));
        assert_eq!(
            (events[0].tool.as_deref(), events[0].input.as_deref()),
            (None, None)
        );
    }

    #[test]
    fn a_long_input_is_cut_in_the_event_and_whole_in_the_status() {
        let mut fx = Fixture::new();
        let input = format!(r#"{{"content":"{}"}}"#, "é".repeat(EVENT_INPUT_LIMIT));
        fx.progress.waiting = Some(permission("Write", &input, NOW));
        let events = fx.report();
        let cut = events[0].input.as_deref().expect("input");
        assert!(cut.ends_with('…'), "{cut:.40}");
        assert!(cut.len() <= EVENT_INPUT_LIMIT + '…'.len_utf8());
        assert!(input.starts_with(cut.trim_end_matches('…')));
        assert_eq!(
            fx.status().waiting.and_then(|w| w.input).as_deref(),
            Some(input.as_str())
        );
    }

    #[test]
    fn status_and_listing_show_the_wait_and_the_hook_counters() {
        let mut fx = Fixture::new();
        let status = fx.status();
        assert_eq!((status.waiting, status.hooks), (None, HookStats::default()));
        assert_eq!(fx.listed_waiting(), None);

        let waiting = permission("Bash", r#"{"command":"ls"}"#, NOW);
        let hooks = HookStats {
            wired: true,
            reports: 7,
            turn_ends: 2,
            rejected: 1,
            disagreements: 1,
            last_disagreement: Some("the hook said done while the screen was busy".into()),
        };
        fx.progress.waiting = Some(waiting.clone());
        fx.progress.hooks = hooks.clone();
        fx.report();
        let status = fx.status();
        assert_eq!(status.waiting.as_ref(), Some(&waiting));
        assert_eq!(status.hooks, hooks);
        assert_eq!(fx.listed_waiting().as_deref(), Some("permission"));

        fx.progress.waiting = None;
        fx.report();
        assert_eq!(fx.status().waiting, None);
        assert_eq!(fx.status().hooks, hooks, "the counters stay");
        assert_eq!(fx.listed_waiting(), None);
    }

    #[test]
    fn a_session_registered_while_waiting_says_so_once() {
        let mut st = state();
        let conn = connect(&mut st, 1, Role::Wrapper);
        let progress = Progress {
            waiting: Some(permission("Bash", "{}", NOW)),
            ..Progress::default()
        };
        let register = |st: &mut State| {
            req(
                st,
                conn,
                Message::Register {
                    id: 2,
                    session: crate::tests::info("s1", None, false),
                    progress: Some(progress.clone()),
                    resends: false,
                },
            )
        };
        assert_eq!(register(&mut st), Message::Done { id: 2 });
        let waits = |st: &State| {
            st.events
                .since(None, &["session.waiting".to_owned()])
                .count()
        };
        assert_eq!(waits(&st), 1);
        // Registered again on the same connection with the same wait: not a new one.
        assert_eq!(register(&mut st), Message::Done { id: 2 });
        assert_eq!(waits(&st), 1);
    }

    #[test]
    fn waiting_reports_are_for_the_wrapper_of_the_session_only() {
        let mut fx = Fixture::new();
        let other = wrapper(&mut fx.st, 3, "s2", None);
        let reply = req(
            &mut fx.st,
            other,
            Message::Progress {
                id: 9,
                session: "s1".into(),
                progress: Progress {
                    waiting: Some(permission("Bash", "{}", NOW)),
                    ..Progress::default()
                },
            },
        );
        assert!(
            matches!(
                reply,
                Message::Error {
                    reason: ErrorReason::SessionNotFound,
                    ..
                }
            ),
            "{reply:?}"
        );
        assert_eq!(fx.status().waiting, None);
    }
}
