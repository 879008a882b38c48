//! Routes between sessions (CONTRACTS/ROUTING.md): every completed turn of a route's source
//! becomes a handoff to its target, queued in the target's inbox and typed in at the target's
//! next prompt — never over a running turn unless the route interrupts — with a hop limit and
//! stall detection against agents talking in circles, and optional approval.

use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};

use clippy_proto::{
    ErrorReason, EventRecord, Format as WireFormat, INBOX_TEXT_LIMIT, InboxItem, Message, Mode,
    RouteInfo, RouteKind, RouteSpec,
};
use clippy_registry::{TurnRecord, inject_payload};

use super::{Action, ConnId, Outcome, Refusal, State, refuse};

/// Handoffs a route may make since the last human input into either of its sessions.
pub const DEFAULT_MAX_HOPS: u32 = 16;
/// The same content handed over this many times in a row on a route is a stall.
const STALL_REPEATS: usize = 3;
/// Handoffs a session's inbox holds; more are refused with an event (the oldest stay).
const INBOX_LIMIT: usize = 256;

const HANDOFF_TEMPLATE: &str = "{turn}";
const REPORT_TEMPLATE: &str = "[report from {name} ({turn_id})]\n{turn}";

/// A route.
#[derive(Debug)]
pub(super) struct Route {
    from: String,
    to: String,
    kind: RouteKind,
    template: String,
    format: WireFormat,
    interrupt: bool,
    max_hops: u32,
    gated: bool,
    submit: bool,
    paused: Option<String>,
    hops: u32,
    handoffs: u64,
    /// The latest handoffs' content hashes and turn ids, newest last.
    recent: VecDeque<(u64, String)>,
}

/// A turn on its way to a target.
#[derive(Debug, Clone)]
pub(super) struct Handoff {
    id: u64,
    route: u64,
    turn_id: String,
    text: String,
    created: u64,
    submit: bool,
    interrupt: bool,
}

/// Routes, parked approvals and the counters that name them.
#[derive(Debug)]
pub(super) struct Routing {
    routes: BTreeMap<u64, Route>,
    approvals: BTreeMap<u64, Handoff>,
    next_route: u64,
    next_handoff: u64,
    next_approval: u64,
    /// Pause between text and the Enter that submits it ([`State::submit_later`]).
    pub(super) submit_delay_ms: u64,
}

/// A session's side of routing: what waits for it, and what is being typed into it.
#[derive(Debug, Default)]
pub(super) struct Inbox {
    queue: VecDeque<Handoff>,
    /// A handoff was typed and submitted: the next waits for the prompt after submission
    /// number `inputs_at + 1`.
    delivering: Option<u64>,
    /// Ctrl+C was sent for an interrupting handoff; its prompt is awaited.
    interrupted: bool,
}

impl Inbox {
    /// A handoff was typed into the session and the prompt after it has not come back yet (its
    /// Enter may still be waiting for the settle delay).
    pub(super) fn in_flight(&self) -> bool {
        self.delivering.is_some()
    }
}

/// A pending timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Timer {
    /// Press Enter in `session`, `submit_delay_ms` after the text it submits was written (a
    /// handoff's submit, `send` with `enter`, `exec`'s command), then answer `reply` (the
    /// connection and request id of a `send` that waits for its Enter) with `done`.
    Submit {
        session: String,
        reply: Option<(ConnId, u32)>,
    },
}

impl Routing {
    pub(super) fn new(submit_delay_ms: u64) -> Self {
        Self {
            routes: BTreeMap::new(),
            approvals: BTreeMap::new(),
            next_route: 0,
            next_handoff: 0,
            next_approval: 0,
            submit_delay_ms,
        }
    }
}

fn route_name(id: u64) -> String {
    format!("r{id}")
}

fn parse_id(prefix: char, arg: &str) -> Option<u64> {
    arg.strip_prefix(prefix)?.parse().ok()
}

fn content_hash(text: &str) -> u64 {
    // Fixed keys: the same content hashes the same for the broker's whole life.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The template with its placeholders replaced, in one pass (a turn containing `{name}` stays
/// as it is).
fn apply_template(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    'outer: while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        for (key, value) in values {
            if let Some(after) = rest
                .strip_prefix('{')
                .and_then(|r| r.strip_prefix(key))
                .and_then(|r| r.strip_prefix('}'))
            {
                out.push_str(value);
                rest = after;
                continue 'outer;
            }
        }
        out.push('{');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out
}

impl Route {
    fn info(&self, id: u64) -> RouteInfo {
        RouteInfo {
            route: route_name(id),
            from: self.from.clone(),
            to: self.to.clone(),
            kind: self.kind,
            template: self.template.clone(),
            format: self.format,
            interrupt: self.interrupt,
            max_hops: self.max_hops,
            gated: self.gated,
            submit: self.submit,
            paused: self.paused.is_some(),
            paused_reason: self.paused.clone(),
            hops: self.hops,
            handoffs: self.handoffs,
        }
    }
}

impl State {
    pub(super) fn route_add(
        &mut self,
        id: u32,
        spec: RouteSpec,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let from = self.resolve(&spec.from)?;
        let to = self.resolve(&spec.to)?;
        if from == to {
            return Err(refuse(
                ErrorReason::InvalidArgument,
                format!("a route from session {from} to itself would feed it its own answers"),
            ));
        }
        let max_hops = spec.max_hops.unwrap_or(DEFAULT_MAX_HOPS);
        if max_hops == 0 {
            return Err(refuse(
                ErrorReason::InvalidArgument,
                "max_hops must be at least 1",
            ));
        }
        let template = spec.template.unwrap_or_else(|| {
            match spec.kind {
                RouteKind::Handoff => HANDOFF_TEMPLATE,
                RouteKind::Report => REPORT_TEMPLATE,
            }
            .to_owned()
        });
        if !template.contains("{turn}") {
            return Err(refuse(
                ErrorReason::InvalidArgument,
                "the template must contain {turn}, or the turn would not be handed over",
            ));
        }
        self.routing.next_route += 1;
        let key = self.routing.next_route;
        let route = Route {
            from: from.clone(),
            to: to.clone(),
            kind: spec.kind,
            template,
            format: spec.format.unwrap_or(WireFormat::Text),
            interrupt: spec.interrupt,
            max_hops,
            gated: spec.gated,
            submit: spec.submit.unwrap_or(true),
            paused: None,
            hops: 0,
            handoffs: 0,
            recent: VecDeque::new(),
        };
        let info = route.info(key);
        self.routing.routes.insert(key, route);
        self.emit(
            EventRecord {
                kind: "route.added".into(),
                session: Some(from),
                to: Some(to),
                route: Some(info.route.clone()),
                ..EventRecord::default()
            },
            out,
        );
        Ok(Outcome::Reply(Message::Route { id, route: info }))
    }

    pub(super) fn route_list(&self, id: u32) -> Outcome {
        Outcome::Reply(Message::Routes {
            id,
            routes: self
                .routing
                .routes
                .iter()
                .map(|(&key, route)| route.info(key))
                .collect(),
        })
    }

    fn route_key(&self, arg: &str) -> Result<u64, Refusal> {
        parse_id('r', arg)
            .filter(|key| self.routing.routes.contains_key(key))
            .ok_or_else(|| {
                refuse(
                    ErrorReason::RouteNotFound,
                    format!("no route {arg:?} (route ids look like r1; see route list)"),
                )
            })
    }

    pub(super) fn route_remove(
        &mut self,
        id: u32,
        arg: &str,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let key = self.route_key(arg)?;
        self.drop_route(key, "removed", out);
        Ok(Outcome::Reply(Message::Done { id }))
    }

    /// Removes route `key`, its queued handoffs and its parked approvals.
    fn drop_route(&mut self, key: u64, why: &str, out: &mut Vec<Action>) {
        let Some(route) = self.routing.routes.remove(&key) else {
            return;
        };
        if let Some(entry) = self.sessions.get_mut(&route.to) {
            entry.live.inbox.queue.retain(|h| h.route != key);
        }
        self.routing.approvals.retain(|_, h| h.route != key);
        self.emit(
            EventRecord {
                kind: "route.removed".into(),
                session: Some(route.from),
                to: Some(route.to),
                route: Some(route_name(key)),
                reason: Some(why.into()),
                ..EventRecord::default()
            },
            out,
        );
    }

    pub(super) fn route_pause(
        &mut self,
        id: u32,
        arg: &str,
        pause: bool,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let key = self.route_key(arg)?;
        let Some(route) = self.routing.routes.get_mut(&key) else {
            return Err(refuse(
                ErrorReason::RouteNotFound,
                format!("no route {arg:?}"),
            ));
        };
        if pause {
            route.paused = Some("paused".into());
        } else {
            route.paused = None;
            route.hops = 0;
            route.recent.clear();
        }
        let info = route.info(key);
        self.emit(
            EventRecord {
                kind: if pause {
                    "route.paused"
                } else {
                    "route.resumed"
                }
                .into(),
                session: Some(info.from.clone()),
                to: Some(info.to.clone()),
                route: Some(info.route.clone()),
                ..EventRecord::default()
            },
            out,
        );
        Ok(Outcome::Reply(Message::Route { id, route: info }))
    }

    pub(super) fn inbox(&self, id: u32, session: &str) -> Result<Outcome, Refusal> {
        let session = self.resolve(session)?;
        let item = |h: &Handoff, approval: Option<u64>| InboxItem {
            handoff: format!("h{}", h.id),
            route: route_name(h.route),
            turn_id: h.turn_id.clone(),
            byte_length: u32::try_from(h.text.len()).unwrap_or(u32::MAX),
            state: if approval.is_some() {
                "awaiting_approval"
            } else {
                "queued"
            }
            .into(),
            approval: approval.map(|a| format!("a{a}")),
            created: h.created,
            // What an approval with an edited text starts from, while it stays small.
            text: (approval.is_some() && h.text.len() <= INBOX_TEXT_LIMIT).then(|| h.text.clone()),
        };
        let mut items: Vec<InboxItem> = self
            .routing
            .approvals
            .iter()
            .filter(|(_, h)| {
                self.routing
                    .routes
                    .get(&h.route)
                    .is_some_and(|r| r.to == session)
            })
            .map(|(&a, h)| item(h, Some(a)))
            .collect();
        if let Some(entry) = self.sessions.get(&session) {
            items.extend(entry.live.inbox.queue.iter().map(|h| item(h, None)));
        }
        items.sort_by_key(|i| i.created);
        Ok(Outcome::Reply(Message::InboxItems { id, session, items }))
    }

    pub(super) fn resolve_approval(
        &mut self,
        id: u32,
        arg: &str,
        approved: bool,
        text: Option<String>,
        out: &mut Vec<Action>,
    ) -> Result<Outcome, Refusal> {
        let Some(key) = parse_id('a', arg).filter(|k| self.routing.approvals.contains_key(k))
        else {
            return Err(refuse(
                ErrorReason::ApprovalNotFound,
                format!("no approval {arg:?} is pending (see inbox SESSION)"),
            ));
        };
        let Some(mut handoff) = self.routing.approvals.remove(&key) else {
            return Err(refuse(
                ErrorReason::ApprovalNotFound,
                format!("no approval {arg:?}"),
            ));
        };
        let edited = text.is_some();
        if let Some(text) = text {
            handoff.text = text;
        }
        let (from, to) = self
            .routing
            .routes
            .get(&handoff.route)
            .map(|r| (r.from.clone(), r.to.clone()))
            .unzip();
        self.emit(
            EventRecord {
                kind: "approval.resolved".into(),
                session: from,
                to: to.clone(),
                route: Some(route_name(handoff.route)),
                approval: Some(format!("a{key}")),
                handoff: Some(format!("h{}", handoff.id)),
                turn_id: Some(handoff.turn_id.clone()),
                reason: Some(
                    match (approved, edited) {
                        (false, _) => "denied",
                        (true, false) => "approved",
                        (true, true) => "approved_edited",
                    }
                    .into(),
                ),
                ..EventRecord::default()
            },
            out,
        );
        if approved && let Some(to) = to {
            self.enqueue(&to, handoff, out);
        }
        Ok(Outcome::Reply(Message::Done { id }))
    }

    /// A new turn was stored: hand it over on every active route from its session.
    pub(super) fn route_turn(&mut self, record: &TurnRecord, out: &mut Vec<Action>) {
        let session = record.turn_id().session().to_owned();
        let name = self
            .sessions
            .get(&session)
            .and_then(|e| e.info.name.clone())
            .unwrap_or_else(|| session.clone());
        let turn_id = record.turn_id().to_string();
        let keys: Vec<u64> = self
            .routing
            .routes
            .iter()
            .filter(|(_, r)| r.from == session && r.paused.is_none())
            .map(|(&k, _)| k)
            .collect();
        for key in keys {
            let Some(route) = self.routing.routes.get_mut(&key) else {
                continue;
            };
            // Raw bytes as UTF-8, lossily; a message the turn does not have (an agent without
            // hooks) is its text view: a route never stops for want of hooks.
            let turn =
                String::from_utf8_lossy(super::format_of(route.format).select(record)).into_owned();
            // A turn with nothing to read (its text view is blank) is not worth a handoff.
            if turn.trim().is_empty() {
                continue;
            }
            let input = record.meta().input.clone().unwrap_or_default();
            let text = apply_template(
                &route.template,
                &[
                    ("turn_id", &turn_id),
                    ("turn", &turn),
                    ("session", &session),
                    ("name", &name),
                    ("input", &input),
                ],
            );
            // The turn's own view, not the templated text: a template with `{turn_id}` (the
            // report default has it) differs on every turn and would hide any repetition.
            let hash = content_hash(&turn);
            let stall = if route.hops >= route.max_hops {
                Some("hop_limit")
            } else if route.recent.len() + 1 >= STALL_REPEATS
                && route
                    .recent
                    .iter()
                    .rev()
                    .take(STALL_REPEATS - 1)
                    .all(|(h, _)| *h == hash)
            {
                Some("repeated")
            } else {
                None
            };
            if let Some(reason) = stall {
                route.paused = Some(reason.into());
                let mut evidence: Vec<(u64, String)> = route
                    .recent
                    .iter()
                    .rev()
                    .take(STALL_REPEATS - 1)
                    .rev()
                    .cloned()
                    .collect();
                evidence.push((hash, turn_id.clone()));
                let hops = route.hops;
                let (from, to) = (route.from.clone(), route.to.clone());
                self.emit(
                    EventRecord {
                        kind: "route.stalled".into(),
                        session: Some(from),
                        to: Some(to),
                        route: Some(route_name(key)),
                        turn_id: Some(turn_id.clone()),
                        reason: Some(reason.into()),
                        hops: Some(hops),
                        hashes: evidence.iter().map(|(h, _)| format!("{h:016x}")).collect(),
                        turn_ids: evidence.into_iter().map(|(_, t)| t).collect(),
                        message: Some(match reason {
                            "hop_limit" => format!(
                                "{hops} handoffs since the last human input: the route is paused \
                                 (route resume {} to go on)",
                                route_name(key)
                            ),
                            _ => format!(
                                "the same content {STALL_REPEATS} times in a row: the route is \
                                 paused (route resume {} to go on)",
                                route_name(key)
                            ),
                        }),
                        ..EventRecord::default()
                    },
                    out,
                );
                continue;
            }
            route.hops += 1;
            route.handoffs += 1;
            if route.recent.len() == STALL_REPEATS {
                route.recent.pop_front();
            }
            route.recent.push_back((hash, turn_id.clone()));
            self.routing.next_handoff += 1;
            let handoff = Handoff {
                id: self.routing.next_handoff,
                route: key,
                turn_id: turn_id.clone(),
                text,
                created: self.clock,
                submit: route.submit,
                interrupt: route.interrupt,
            };
            let (gated, to) = (route.gated, route.to.clone());
            if gated {
                self.routing.next_approval += 1;
                let approval = self.routing.next_approval;
                let byte_length = u32::try_from(handoff.text.len()).unwrap_or(u32::MAX);
                let handoff_name = format!("h{}", handoff.id);
                self.routing.approvals.insert(approval, handoff);
                self.emit(
                    EventRecord {
                        kind: "approval.requested".into(),
                        session: Some(session.clone()),
                        to: Some(to),
                        route: Some(route_name(key)),
                        turn_id: Some(turn_id.clone()),
                        handoff: Some(handoff_name),
                        approval: Some(format!("a{approval}")),
                        byte_length: Some(byte_length),
                        ..EventRecord::default()
                    },
                    out,
                );
            } else {
                self.enqueue(&to, handoff, out);
            }
        }
    }

    /// Puts `handoff` in `to`'s inbox and delivers what can be delivered now; a handoff that has
    /// to wait is a `route.queued` event.
    fn enqueue(&mut self, to: &str, handoff: Handoff, out: &mut Vec<Action>) {
        // Route events are about the route's source (CONTRACTS/ROUTING.md, Events).
        let from = self
            .routing
            .routes
            .get(&handoff.route)
            .map(|r| r.from.clone());
        let Some(entry) = self.sessions.get_mut(to) else {
            return;
        };
        let inbox = &mut entry.live.inbox;
        if inbox.queue.len() >= INBOX_LIMIT {
            let record = EventRecord {
                kind: "route.dropped".into(),
                session: from,
                to: Some(to.to_owned()),
                route: Some(route_name(handoff.route)),
                handoff: Some(format!("h{}", handoff.id)),
                turn_id: Some(handoff.turn_id),
                message: Some(format!(
                    "the inbox of {to} holds {INBOX_LIMIT} handoffs already"
                )),
                ..EventRecord::default()
            };
            self.emit(record, out);
            return;
        }
        // An interrupting handoff goes before the ones that wait politely.
        let at = if handoff.interrupt {
            inbox.queue.iter().take_while(|h| h.interrupt).count()
        } else {
            inbox.queue.len()
        };
        let record = EventRecord {
            kind: "route.queued".into(),
            session: from,
            to: Some(to.to_owned()),
            route: Some(route_name(handoff.route)),
            handoff: Some(format!("h{}", handoff.id)),
            turn_id: Some(handoff.turn_id.clone()),
            byte_length: Some(u32::try_from(handoff.text.len()).unwrap_or(u32::MAX)),
            ..EventRecord::default()
        };
        let id = handoff.id;
        inbox.queue.insert(at, handoff);
        self.pump_inbox(to, out);
        // Delivered at once, or left waiting for the target's prompt: only the latter is news.
        let waiting = self
            .sessions
            .get(to)
            .is_some_and(|e| e.live.inbox.queue.iter().any(|h| h.id == id));
        if waiting {
            self.emit(record, out);
        }
    }

    /// Delivers the next handoff in `session`'s inbox if the session can take it now: idle at
    /// a prompt with its turns recorded, no `exec` and no earlier handoff in flight. A busy
    /// session gets Ctrl+C first when the next handoff interrupts.
    pub(super) fn pump_inbox(&mut self, session: &str, out: &mut Vec<Action>) {
        let Some(owner) = self.connected_owner(session) else {
            return;
        };
        // The target's turns so far are recorded first (the wrapper sends a turn once its text
        // is rendered, which can be after the prompt that ended it): the story stays in order.
        let recorded = self
            .registry
            .latest(session)
            .map_or(0, |r| r.turn_id().seq());
        let Some(entry) = self.sessions.get_mut(session) else {
            return;
        };
        if recorded < entry.live.progress.turns {
            return;
        }
        let progress = &entry.live.progress;
        let inbox = &mut entry.live.inbox;
        // A handoff in flight is done once a prompt follows its submission.
        if let Some(inputs_at) = inbox.delivering
            && progress.mode == Mode::Idle
            && progress.prompt_inputs > inputs_at
        {
            inbox.delivering = None;
        }
        if inbox.delivering.is_some() || entry.live.exec_running || progress.input_blocked {
            return;
        }
        let Some(next) = inbox.queue.front() else {
            return;
        };
        if progress.mode != Mode::Idle {
            if next.interrupt && !inbox.interrupted && progress.mode == Mode::Busy {
                inbox.interrupted = true;
                out.push(Action::Send(
                    owner,
                    Message::Inject {
                        id: 0,
                        session: session.to_owned(),
                        data: vec![0x03],
                    },
                ));
            }
            return;
        }
        let Some(handoff) = inbox.queue.pop_front() else {
            return;
        };
        inbox.interrupted = false;
        let bracketed = entry.info.bracketed_paste;
        let mut data = inject_payload(handoff.text.as_bytes(), bracketed);
        let submit_later = handoff.submit && bracketed;
        if handoff.submit {
            inbox.delivering = Some(progress.inputs);
            if !bracketed {
                data.push(b'\r');
            }
        }
        let byte_length = u32::try_from(handoff.text.len()).unwrap_or(u32::MAX);
        out.push(Action::Send(
            owner,
            Message::Inject {
                id: 0,
                session: session.to_owned(),
                data,
            },
        ));
        if submit_later {
            self.submit_later(session, None);
        }
        let from = self
            .routing
            .routes
            .get(&handoff.route)
            .map(|r| r.from.clone());
        let hops = self.routing.routes.get(&handoff.route).map(|r| r.hops);
        self.emit(
            EventRecord {
                kind: "route.handoff".into(),
                session: from,
                to: Some(session.to_owned()),
                route: Some(route_name(handoff.route)),
                handoff: Some(format!("h{}", handoff.id)),
                turn_id: Some(handoff.turn_id),
                byte_length: Some(byte_length),
                hops,
                ..EventRecord::default()
            },
            out,
        );
    }

    /// Handoffs waiting for `session`, approvals pending for it included.
    pub(super) fn inbox_len(&self, session: &str) -> u32 {
        let queued = self
            .sessions
            .get(session)
            .map_or(0, |e| e.live.inbox.queue.len());
        let parked = self
            .routing
            .approvals
            .values()
            .filter(|h| {
                self.routing
                    .routes
                    .get(&h.route)
                    .is_some_and(|r| r.to == session)
            })
            .count();
        u32::try_from(queued + parked).unwrap_or(u32::MAX)
    }

    /// A person typed into `session`: the routes touching it count their hops from here.
    pub(super) fn human_input(&mut self, session: &str) {
        for route in self.routing.routes.values_mut() {
            if route.from == session || route.to == session {
                route.hops = 0;
            }
        }
    }

    /// A session ended: the routes from or to it go, with their handoffs.
    pub(super) fn drop_routes_of(&mut self, session: &str, out: &mut Vec<Action>) {
        let keys: Vec<u64> = self
            .routing
            .routes
            .iter()
            .filter(|(_, r)| r.from == session || r.to == session)
            .map(|(&k, _)| k)
            .collect();
        for key in keys {
            self.drop_route(key, "session_ended", out);
        }
    }

    /// Presses Enter in `session` as a write of its own, `submit_delay_ms` from now: an agent
    /// that reads a fast burst of text and Enter as a paste (Gemini CLI) takes the Enter inside
    /// it as a newline, and submits only an Enter that comes after a pause. The one way text is
    /// submitted: handoffs, `send` with `enter` and `exec` all come here. `reply`: the `send`
    /// to answer with `done` once the Enter is written.
    pub(super) fn submit_later(&mut self, session: &str, reply: Option<(ConnId, u32)>) {
        let at = self.clock.saturating_add(self.routing.submit_delay_ms);
        self.timers.entry(at).or_default().push(Timer::Submit {
            session: session.to_owned(),
            reply,
        });
    }

    /// Fires a due timer.
    pub(super) fn fire(&mut self, timer: Timer, out: &mut Vec<Action>) {
        match timer {
            Timer::Submit { session, reply } => {
                let answer = if let Some(owner) = self.connected_owner(&session) {
                    out.push(Action::Send(
                        owner,
                        Message::Inject {
                            id: 0,
                            session,
                            data: b"\r".to_vec(),
                        },
                    ));
                    reply.map(|(conn, id)| (conn, Message::Done { id }))
                } else {
                    reply.map(|(conn, id)| {
                        let refusal = super::spool_ops::disconnected(&session);
                        (conn, Message::error(id, refusal.reason, refusal.message))
                    })
                };
                if let Some((conn, message)) = answer
                    && self.conns.contains_key(&conn)
                {
                    out.push(Action::Send(conn, message));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clippy_proto::{Progress, Role, TurnData};

    use super::*;
    use crate::ConnId;
    use crate::tests::{NOW, connect, refused, report, req, sent_to, state, wrapper};

    #[test]
    fn templates_replace_known_placeholders_once() {
        let values = [
            ("turn", "a {name} b"),
            ("name", "coder"),
            ("turn_id", "s:1"),
        ];
        assert_eq!(
            apply_template("[{name} {turn_id}] {turn} {nope} {", &values),
            "[coder s:1] a {name} b {nope} {"
        );
        assert_eq!(apply_template("{turn}", &values), "a {name} b");
    }

    #[test]
    fn ids_parse_with_their_prefix() {
        assert_eq!(parse_id('r', "r12"), Some(12));
        assert_eq!(parse_id('r', "a12"), None);
        assert_eq!(parse_id('a', "a"), None);
    }

    /// Two sessions, `a` (wrapper 1) and `b` (wrapper 2), both idle at a prompt, and a client
    /// (3) subscribed to every event.
    struct Pair {
        st: State,
        a: ConnId,
        b: ConnId,
        client: ConnId,
        b_progress: Progress,
        seq: u64,
    }

    impl Pair {
        fn new() -> Self {
            let mut st = state();
            let a = wrapper(&mut st, 1, "a", None);
            Self::around(st, a)
        }

        /// The pair on `st`, where `a` is registered: `b` (idle) and a client join it.
        fn around(mut st: State, a: ConnId) -> Self {
            let b = wrapper(&mut st, 2, "b", None);
            let client = connect(&mut st, 3, Role::Client);
            let mut pair = Self {
                st,
                a,
                b,
                client,
                b_progress: Progress::default(),
                seq: 0,
            };
            pair.b_idle();
            pair
        }

        /// A pair on a broker that `a` registers with after it wrote turns 1 to `announced`
        /// to an earlier broker (restarted since), which announced them.
        fn after_restart(announced: u64) -> Self {
            let mut st = state();
            let a = connect(&mut st, 1, Role::Wrapper);
            let registered = st.handle(
                a,
                Message::Register {
                    id: 2,
                    session: crate::tests::info("a", None, false),
                    progress: Some(Progress {
                        turns: announced,
                        announced_turns: announced,
                        ..Progress::default()
                    }),
                    resends: false,
                },
                NOW,
            );
            assert!(
                sent_to(&registered, a).contains(&Message::Done { id: 2 }),
                "{registered:?}"
            );
            Self::around(st, a)
        }

        fn route(&mut self, spec: RouteSpec) -> RouteInfo {
            match req(
                &mut self.st,
                self.client,
                Message::RouteAdd { id: 5, route: spec },
            ) {
                Message::Route { route, .. } => route,
                other => panic!("{other:?}"),
            }
        }

        fn spec(&self) -> RouteSpec {
            RouteSpec {
                from: "a".into(),
                to: "b".into(),
                ..RouteSpec::default()
            }
        }

        /// `a` completes a turn whose text view is `text of {content}`; the actions.
        fn a_answers(&mut self, content: &str) -> Vec<Action> {
            self.seq += 1;
            let actions = self.st.handle(
                self.a,
                Message::TurnCompleted {
                    id: 3,
                    session: "a".into(),
                    turn: crate::tests::turn_data(self.seq, content),
                },
                NOW,
            );
            assert!(matches!(
                sent_to(&actions, self.a).last(),
                Some(Message::TurnRecorded { .. })
            ));
            actions
        }

        fn b_reports(&mut self) -> Vec<Action> {
            self.st.handle(
                self.b,
                Message::Progress {
                    id: 9,
                    session: "b".into(),
                    progress: self.b_progress.clone(),
                },
                NOW,
            )
        }

        fn b_idle(&mut self) -> Vec<Action> {
            self.b_progress.mode = Mode::Idle;
            self.b_progress.prompts += 1;
            self.b_progress.prompt_inputs = self.b_progress.inputs;
            self.b_reports()
        }

        /// b's program turns bracketed paste on.
        fn b_brackets_pastes(&mut self) {
            req(
                &mut self.st,
                self.b,
                Message::BracketedPaste {
                    id: 4,
                    session: "b".into(),
                    enabled: true,
                },
            );
        }

        fn b_busy(&mut self) -> Vec<Action> {
            self.b_progress.mode = Mode::Busy;
            self.b_progress.inputs += 1;
            self.b_reports()
        }

        /// What was typed into `b` by `actions`.
        fn typed_into_b(&self, actions: &[Action]) -> Vec<Vec<u8>> {
            sent_to(actions, self.b)
                .into_iter()
                .filter_map(|m| match m {
                    Message::Inject { data, .. } => Some(data),
                    _ => None,
                })
                .collect()
        }
    }

    fn events(actions: &[Action]) -> Vec<EventRecord> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Publish(_, Message::Event { event, .. }) => Some(event.clone()),
                _ => None,
            })
            .collect()
    }

    fn kinds(actions: &[Action]) -> Vec<String> {
        events(actions).into_iter().map(|e| e.kind).collect()
    }

    fn subscribe(pair: &mut Pair) {
        let actions = pair.st.handle(
            pair.client,
            Message::Subscribe {
                id: 8,
                since: None,
                types: Vec::new(),
            },
            NOW,
        );
        assert!(matches!(
            sent_to(&actions, pair.client).as_slice(),
            [Message::Subscribed { .. }]
        ));
    }

    #[test]
    fn turns_re_sent_after_a_broker_restart_are_replayed_not_handed_off_again() {
        let mut pair = Pair::after_restart(2);
        subscribe(&mut pair);
        pair.route(pair.spec());
        // The wrapper re-sends the turns the earlier broker announced: stored and served, but
        // `turn.replayed`, and nothing typed into b.
        for content in ["old one", "old two"] {
            let actions = pair.a_answers(content);
            assert!(pair.typed_into_b(&actions).is_empty(), "{actions:?}");
            assert_eq!(kinds(&actions), ["turn.replayed"]);
        }
        let turn = req(
            &mut pair.st,
            pair.client,
            Message::GetTurn {
                id: 9,
                turn_id: "a:2".into(),
                format: WireFormat::Raw,
            },
        );
        assert!(
            matches!(&turn, Message::Turn { content, .. } if content == b"old two"),
            "{turn:?}"
        );
        // The first turn completed since: a new completion, handed off.
        let actions = pair.a_answers("new");
        assert_eq!(pair.typed_into_b(&actions), [b"text of new\r".to_vec()]);
        assert_eq!(kinds(&actions), ["turn.completed", "route.handoff"]);
    }

    #[test]
    fn a_turn_is_typed_into_an_idle_target_with_enter() {
        let mut pair = Pair::new();
        subscribe(&mut pair);
        pair.route(pair.spec());
        let actions = pair.a_answers("42");
        assert_eq!(pair.typed_into_b(&actions), [b"text of 42\r".to_vec()]);
        assert_eq!(kinds(&actions), ["turn.completed", "route.handoff"]);
        let handoff = &events(&actions)[1];
        assert_eq!(handoff.route.as_deref(), Some("r1"));
        assert_eq!(handoff.turn_id.as_deref(), Some("a:1"));
        assert_eq!(handoff.hops, Some(1));
    }

    #[test]
    fn a_target_that_has_not_taken_its_input_gets_its_handoff_once_it_has() {
        let mut pair = Pair::new();
        pair.route(pair.spec());
        pair.b_progress.input_blocked = true;
        pair.b_reports();
        let actions = pair.a_answers("42");
        assert!(
            pair.typed_into_b(&actions).is_empty(),
            "typed into a full input"
        );
        pair.b_progress.input_blocked = false;
        let actions = pair.b_reports();
        assert_eq!(pair.typed_into_b(&actions), [b"text of 42\r".to_vec()]);
    }

    #[test]
    fn a_busy_target_gets_its_handoffs_one_per_prompt_in_order() {
        let mut pair = Pair::new();
        subscribe(&mut pair);
        pair.route(pair.spec());
        pair.b_busy();
        let first = pair.a_answers("one");
        assert!(
            pair.typed_into_b(&first).is_empty(),
            "never over a running turn"
        );
        assert_eq!(kinds(&first), ["turn.completed", "route.queued"]);
        pair.a_answers("two");
        match req(
            &mut pair.st,
            pair.client,
            Message::Inbox {
                id: 6,
                session: "b".into(),
            },
        ) {
            Message::InboxItems { items, .. } => {
                let turns: Vec<&str> = items.iter().map(|i| i.turn_id.as_str()).collect();
                assert_eq!(turns, ["a:1", "a:2"]);
            }
            other => panic!("{other:?}"),
        }
        // B's prompt: the first handoff goes in; the second waits for the prompt after it.
        let actions = pair.b_idle();
        assert_eq!(pair.typed_into_b(&actions), [b"text of one\r".to_vec()]);
        let actions = pair.b_reports();
        assert!(
            pair.typed_into_b(&actions).is_empty(),
            "the first is still running"
        );
        pair.b_busy();
        let actions = pair.b_idle();
        assert_eq!(pair.typed_into_b(&actions), [b"text of two\r".to_vec()]);
    }

    #[test]
    fn a_bracketed_target_gets_a_paste_then_enter_after_the_settle_delay() {
        let mut pair = Pair::new();
        pair.b_brackets_pastes();
        pair.route(pair.spec());
        let actions = pair.a_answers("x");
        assert_eq!(
            pair.typed_into_b(&actions),
            [b"\x1b[200~text of x\x1b[201~".to_vec()]
        );
        assert_eq!(pair.st.next_deadline(), Some(NOW + 150));
        let early = pair.st.expire(NOW + 149);
        assert!(pair.typed_into_b(&early).is_empty());
        let actions = pair.st.expire(NOW + 150);
        assert_eq!(pair.typed_into_b(&actions), [b"\r".to_vec()]);
    }

    #[test]
    fn exec_is_refused_while_a_handoff_is_typed_into_its_session() {
        let mut pair = Pair::new();
        pair.b_brackets_pastes();
        pair.route(pair.spec());
        pair.a_answers("x");
        // Pasted, its Enter not yet pressed: b still says idle, but a command typed now would
        // join the pasted line.
        let exec = Message::Exec {
            id: 9,
            session: "b".into(),
            command: "ls".into(),
            timeout_ms: None,
        };
        let (reason, message) = refused(&mut pair.st, pair.client, exec);
        assert_eq!(reason, ErrorReason::Busy);
        assert!(message.contains("handoff"), "{message}");
    }

    #[test]
    fn an_interrupting_route_sends_ctrl_c_then_waits_for_the_prompt() {
        let mut pair = Pair::new();
        pair.route(RouteSpec {
            interrupt: true,
            ..pair.spec()
        });
        pair.b_busy();
        let actions = pair.a_answers("stop");
        assert_eq!(pair.typed_into_b(&actions), [vec![3u8]]);
        let again = pair.b_reports();
        assert!(pair.typed_into_b(&again).is_empty(), "Ctrl+C once");
        let actions = pair.b_idle();
        assert_eq!(pair.typed_into_b(&actions), [b"text of stop\r".to_vec()]);
    }

    #[test]
    fn the_hop_limit_pauses_the_route_until_a_person_types_and_it_is_resumed() {
        let mut pair = Pair::new();
        subscribe(&mut pair);
        pair.route(RouteSpec {
            max_hops: Some(2),
            ..pair.spec()
        });
        for n in 0..2 {
            pair.b_busy();
            pair.b_idle();
            pair.a_answers(&format!("turn {n}"));
        }
        pair.b_busy();
        pair.b_idle();
        let actions = pair.a_answers("turn 2");
        assert!(pair.typed_into_b(&actions).is_empty());
        let stalled = events(&actions).pop().expect("an event");
        assert_eq!(stalled.kind, "route.stalled");
        assert_eq!(stalled.reason.as_deref(), Some("hop_limit"));
        assert_eq!(stalled.hops, Some(2));
        let routes = match req(&mut pair.st, pair.client, Message::RouteList { id: 7 }) {
            Message::Routes { routes, .. } => routes,
            other => panic!("{other:?}"),
        };
        assert!(routes[0].paused);
        assert_eq!(routes[0].paused_reason.as_deref(), Some("hop_limit"));
        // A person types into b: the count starts again; resuming hands over again.
        pair.b_progress.keystrokes += 1;
        pair.b_reports();
        req(
            &mut pair.st,
            pair.client,
            Message::RouteResume {
                id: 7,
                route: "r1".into(),
            },
        );
        let actions = pair.a_answers("turn 3");
        assert_eq!(pair.typed_into_b(&actions), [b"text of turn 3\r".to_vec()]);
    }

    #[test]
    fn the_same_content_a_third_time_in_a_row_is_a_stall_with_its_evidence() {
        let mut pair = Pair::new();
        subscribe(&mut pair);
        pair.route(pair.spec());
        for _ in 0..2 {
            pair.b_busy();
            pair.b_idle();
            let actions = pair.a_answers("OK");
            assert_eq!(pair.typed_into_b(&actions).len(), 1);
        }
        pair.b_busy();
        pair.b_idle();
        let actions = pair.a_answers("OK");
        assert!(pair.typed_into_b(&actions).is_empty());
        let stalled = events(&actions).pop().expect("an event");
        assert_eq!(stalled.reason.as_deref(), Some("repeated"));
        assert_eq!(stalled.turn_ids, ["a:1", "a:2", "a:3"]);
        assert_eq!(stalled.hashes.len(), 3);
        assert!(stalled.hashes.iter().all(|h| *h == stalled.hashes[0]));
    }

    #[test]
    fn a_gated_route_waits_for_approval_which_may_edit_or_deny() {
        let mut pair = Pair::new();
        subscribe(&mut pair);
        pair.route(RouteSpec {
            gated: true,
            ..pair.spec()
        });
        let actions = pair.a_answers("draft");
        assert!(pair.typed_into_b(&actions).is_empty());
        let requested = events(&actions).pop().expect("an event");
        assert_eq!(requested.kind, "approval.requested");
        assert_eq!(requested.approval.as_deref(), Some("a1"));
        let status = match req(
            &mut pair.st,
            pair.client,
            Message::Inbox {
                id: 6,
                session: "b".into(),
            },
        ) {
            Message::InboxItems { items, .. } => items,
            other => panic!("{other:?}"),
        };
        assert_eq!(status[0].state, "awaiting_approval");
        // The text handed over, to edit before approving.
        let text = status[0]
            .text
            .as_deref()
            .expect("the text awaiting approval");
        assert!(text.contains("draft"), "{text:?}");
        let actions = pair.st.handle(
            pair.client,
            Message::Approve {
                id: 10,
                approval: "a1".into(),
                text: Some("final".into()),
            },
            NOW,
        );
        assert_eq!(pair.typed_into_b(&actions), [b"final\r".to_vec()]);
        assert_eq!(
            events(&actions)[0].reason.as_deref(),
            Some("approved_edited")
        );
        pair.b_busy();
        pair.b_idle();
        pair.a_answers("second");
        let actions = pair.st.handle(
            pair.client,
            Message::Deny {
                id: 11,
                approval: "a2".into(),
            },
            NOW,
        );
        assert!(pair.typed_into_b(&actions).is_empty());
        assert_eq!(events(&actions)[0].reason.as_deref(), Some("denied"));
        let again = Message::Deny {
            id: 12,
            approval: "a2".into(),
        };
        assert_eq!(
            refused(&mut pair.st, pair.client, again).0,
            ErrorReason::ApprovalNotFound
        );
    }

    #[test]
    fn bad_routes_are_refused() {
        let mut pair = Pair::new();
        let cases = [
            (
                RouteSpec {
                    to: "a".into(),
                    ..pair.spec()
                },
                ErrorReason::InvalidArgument,
            ),
            (
                RouteSpec {
                    to: "zz".into(),
                    ..pair.spec()
                },
                ErrorReason::SessionNotFound,
            ),
            (
                RouteSpec {
                    template: Some("no turn here".into()),
                    ..pair.spec()
                },
                ErrorReason::InvalidArgument,
            ),
            (
                RouteSpec {
                    max_hops: Some(0),
                    ..pair.spec()
                },
                ErrorReason::InvalidArgument,
            ),
        ];
        for (spec, want) in cases {
            let got = refused(
                &mut pair.st,
                pair.client,
                Message::RouteAdd { id: 5, route: spec },
            );
            assert_eq!(got.0, want);
        }
        let rm = Message::RouteRemove {
            id: 6,
            route: "r9".into(),
        };
        assert_eq!(
            refused(&mut pair.st, pair.client, rm).0,
            ErrorReason::RouteNotFound
        );
    }

    #[test]
    fn a_session_that_ends_takes_its_routes_and_queued_handoffs_with_it() {
        let mut pair = Pair::new();
        subscribe(&mut pair);
        pair.route(pair.spec());
        pair.b_busy();
        pair.a_answers("queued");
        let actions = pair.st.connection_closed(pair.a);
        assert_eq!(kinds(&actions), ["route.removed", "session.exited"]);
        let actions = pair.b_idle();
        assert!(
            pair.typed_into_b(&actions).is_empty(),
            "the route went with a"
        );
        assert!(matches!(
            req(&mut pair.st, pair.client, Message::RouteList { id: 7 }),
            Message::Routes { routes, .. } if routes.is_empty()
        ));
    }

    #[test]
    fn late_subscribers_catch_up_and_laggards_are_dropped_with_a_last_event() {
        let mut pair = Pair::new();
        report(&mut pair.st, pair.a, "a", 1, "x");
        let late = connect(&mut pair.st, 4, Role::Client);
        let actions = pair.st.handle(
            late,
            Message::Subscribe {
                id: 8,
                since: Some(0),
                types: vec!["turn".into()],
            },
            NOW,
        );
        assert!(actions.contains(&Action::Replay(late)), "{actions:?}");
        assert!(
            events(&actions).is_empty(),
            "the history is pulled, not published"
        );
        let replayed: Vec<EventRecord> = sent_to(&pair.st.replay(late, 100, NOW), late)
            .into_iter()
            .filter_map(|m| match m {
                Message::Event { event, .. } => Some(event),
                _ => None,
            })
            .collect();
        assert_eq!(replayed.len(), 1, "only turn.* events: {replayed:?}");
        assert_eq!(replayed[0].kind, "turn.completed");
        assert!(!pair.st.is_replaying(late), "caught up: live from now on");
        let actions = pair.st.subscriber_lagged(late, NOW);
        assert!(matches!(
            sent_to(&actions, late).as_slice(),
            [Message::Event { event, .. }] if event.kind == "subscriber.lagged"
        ));
        assert!(actions.contains(&Action::Close(late)));
        match req(
            &mut pair.st,
            pair.client,
            Message::ListEvents {
                id: 9,
                since: None,
                types: vec!["subscriber.lagged".into()],
            },
        ) {
            Message::Events { events, .. } => assert_eq!(events.len(), 1),
            other => panic!("{other:?}"),
        }
        // Once dropped, it gets nothing more.
        let actions = pair.a_answers("y");
        assert!(sent_to(&actions, late).is_empty());
    }

    #[test]
    fn a_report_route_stalls_on_the_same_reply_although_its_template_names_each_turn() {
        let mut pair = Pair::new();
        subscribe(&mut pair);
        let added = pair.route(RouteSpec {
            kind: RouteKind::Report,
            ..pair.spec()
        });
        assert!(added.template.contains("{turn_id}"), "{added:?}");
        let mut typed = Vec::new();
        for _ in 0..2 {
            pair.b_busy();
            pair.b_idle();
            let actions = pair.a_answers("LGTM");
            typed.extend(pair.typed_into_b(&actions));
        }
        assert_eq!(
            typed,
            [
                b"[report from a (a:1)]\ntext of LGTM\r".to_vec(),
                b"[report from a (a:2)]\ntext of LGTM\r".to_vec()
            ],
            "each handoff names its turn, so the texts differ"
        );
        pair.b_busy();
        pair.b_idle();
        let actions = pair.a_answers("LGTM");
        assert!(pair.typed_into_b(&actions).is_empty(), "the third is kept");
        let stalled = events(&actions).pop().expect("an event");
        assert_eq!(stalled.kind, "route.stalled");
        assert_eq!(stalled.reason.as_deref(), Some("repeated"));
        assert_eq!(stalled.session.as_deref(), Some("a"));
        assert_eq!(stalled.turn_ids, ["a:1", "a:2", "a:3"]);
        assert_eq!(stalled.hashes.len(), 3);
        assert!(stalled.hashes.iter().all(|h| *h == stalled.hashes[0]));
        // The hash is the turn's own view's: a different reply is not a repeat.
        assert_eq!(
            stalled.hashes[0],
            format!("{:016x}", content_hash("text of LGTM"))
        );
    }

    #[test]
    fn a_message_route_hands_over_the_agents_own_word_or_else_the_text() {
        let mut pair = Pair::new();
        let added = pair.route(RouteSpec {
            format: Some(WireFormat::Message),
            ..pair.spec()
        });
        assert_eq!(added.format, WireFormat::Message);
        // A turn with a message from the agent's hooks: the message goes over.
        pair.seq += 1;
        let turn = TurnData {
            message: Some("**42**".into()),
            ..crate::tests::turn_data(pair.seq, "\u{1b}[1m42\u{1b}[0m")
        };
        let actions = pair.st.handle(
            pair.a,
            Message::TurnCompleted {
                id: 3,
                session: "a".into(),
                turn,
            },
            NOW,
        );
        assert_eq!(pair.typed_into_b(&actions), [b"**42**\r".to_vec()]);
        // A turn without one (hooks off, or another agent): its text view, not nothing.
        pair.b_busy();
        pair.b_idle();
        let actions = pair.a_answers("43");
        assert_eq!(pair.typed_into_b(&actions), [b"text of 43\r".to_vec()]);
    }

    #[test]
    fn route_events_name_the_source_session_as_session() {
        let mut pair = Pair::new();
        subscribe(&mut pair);
        pair.route(RouteSpec {
            max_hops: Some(u32::MAX),
            ..pair.spec()
        });
        pair.b_busy();
        let actions = pair.a_answers("first");
        let queued = events(&actions).pop().expect("an event");
        assert_eq!(queued.kind, "route.queued");
        assert_eq!(queued.session.as_deref(), Some("a"));
        assert_eq!(queued.to.as_deref(), Some("b"));
        // Fill b's inbox: the one after the limit is dropped.
        for n in 1..INBOX_LIMIT {
            pair.a_answers(&format!("more {n}"));
        }
        let actions = pair.a_answers("one too many");
        let dropped = events(&actions).pop().expect("an event");
        assert_eq!(dropped.kind, "route.dropped");
        assert_eq!(dropped.session.as_deref(), Some("a"));
        assert_eq!(dropped.to.as_deref(), Some("b"));

        let mut gated = Pair::new();
        subscribe(&mut gated);
        gated.route(RouteSpec {
            gated: true,
            ..gated.spec()
        });
        gated.a_answers("draft");
        for (n, message) in [
            Message::Approve {
                id: 10,
                approval: "a1".into(),
                text: None,
            },
            Message::Deny {
                id: 11,
                approval: "a2".into(),
            },
        ]
        .into_iter()
        .enumerate()
        {
            if n == 1 {
                gated.b_busy();
                gated.b_idle();
                gated.a_answers("second");
            }
            let actions = gated.st.handle(gated.client, message, NOW);
            let resolved = events(&actions)
                .into_iter()
                .find(|e| e.kind == "approval.resolved")
                .expect("approval.resolved");
            assert_eq!(resolved.session.as_deref(), Some("a"), "{resolved:?}");
            assert_eq!(resolved.to.as_deref(), Some("b"), "{resolved:?}");
        }
    }
}
