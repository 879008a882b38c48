//! The dashboard's state: every session the broker knows, what the person looks at and types,
//! and what needs them. Fed [`Input`]s — broker events, replies to the requests it asked for,
//! keys, resizes, the broker connection coming and going — each with the time it arrived
//! (Unix milliseconds, by the caller's clock: this module reads none); returns the
//! [`Action`]s to carry out. [`App::changed`] says whether anything shown changed since the
//! last draw; [`App::next_tick`] when the shown time next needs a redraw (only while a busy
//! session shows its elapsed time), so nothing is redrawn while nothing changes.

use std::collections::BTreeMap;

use clippy_proto::{
    Decision, EventRecord, Format, InboxItem, Mode, RouteInfo, SearchHit, SessionState,
    SessionSummary, TurnMeta,
};

use crate::keys::Key;

/// Something the dashboard is told.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The broker's event stream: one event.
    Event(Box<EventRecord>),
    /// The answer to an [`Action`] it asked for.
    Reply(Reply),
    /// A key pressed (or text pasted).
    Key(Key),
    /// The terminal's new size.
    Resize {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// The broker is reachable again (`true`, after which everything is asked for again) or
    /// went away (`false`).
    Broker(bool),
    /// The selected session wrote output (its screen may have changed).
    Output(String),
    /// The person came back from attaching to a session.
    Detached(String),
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `list_sessions`.
    Sessions(Vec<SessionSummary>),
    /// `session_status` of one session.
    Status(Box<SessionState>),
    /// `route_list`.
    Routes(Vec<RouteInfo>),
    /// `inbox` of a session.
    Inbox {
        /// The session (as asked).
        session: String,
        /// What waits for it.
        items: Vec<InboxItem>,
    },
    /// `screen` of a session.
    Screen {
        /// The session, as asked.
        session: String,
        /// Its lines, history first.
        lines: Vec<String>,
    },
    /// `get_turn`: a turn's content.
    Turn {
        /// The session (or turn id) asked for.
        target: String,
        /// The turn.
        turn_id: String,
        /// The format asked for.
        format: Format,
        /// Its text (lossy UTF-8).
        text: String,
    },
    /// `list_turns` of a session.
    Turns {
        /// The session, as asked.
        session: String,
        /// Newest first.
        turns: Vec<TurnMeta>,
    },
    /// `search`.
    Hits(Vec<SearchHit>),
    /// An action succeeded: a sentence for the status line.
    Done(String),
    /// An action failed: why, for the status line.
    Failed(String),
}

/// A request to make (by the binary, through the client layer), or something to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `list_sessions` (then [`Action::Status`] for each new session) and `route_list`.
    Refresh,
    /// `session_status` of one session.
    Status(String),
    /// `route_list`.
    Routes,
    /// `inbox` of one session.
    Inbox(String),
    /// `screen` of one session.
    Screen(String),
    /// Follow this session's output ([`Input::Output`]), or none.
    Watch(Option<String>),
    /// `get_turn` of a session's latest turn, or of a turn id.
    Turn {
        /// A session or a turn id.
        target: String,
        /// `text` or `message`.
        format: Format,
    },
    /// `list_turns` of a session.
    Turns(String),
    /// Answer the session's waiting permission request.
    Answer {
        /// The session.
        session: String,
        /// How.
        decision: Decision,
        /// The wait answered, so that a wait that changed meanwhile is not answered in its
        /// place (`None`: a wrapper that does not number its waits; the current one).
        waiting_id: Option<u64>,
    },
    /// `send`: `data` typed into the session, then Enter.
    Send {
        /// The session.
        session: String,
        /// The bytes (a bracketed paste when the session has it on).
        data: Vec<u8>,
    },
    /// `capture` of a session's latest turn.
    Capture(String),
    /// `paste` of the relay buffer into a session.
    Paste(String),
    /// Start a session (`clippy_client::spawn`).
    Spawn {
        /// The command and its arguments.
        command: Vec<String>,
        /// Its name.
        name: Option<String>,
        /// Its working directory.
        cwd: Option<String>,
    },
    /// `end_session` (Ctrl+C, then the process group killed if no prompt comes).
    End(String),
    /// `approve` a gated handoff.
    Approve(String),
    /// `approve` a gated handoff with an edited text.
    ApproveEdited {
        /// The approval.
        approval: String,
        /// The text to hand over instead.
        text: String,
    },
    /// `deny` a gated handoff.
    Deny(String),
    /// `search` the history.
    Search(String),
    /// Suspend the dashboard and attach this terminal to the session.
    Attach(String),
    /// Ring the terminal's bell.
    Bell,
    /// Leave.
    Quit,
}

/// Where a session is, as the dashboard shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Its agent waits for the person (a permission, a question).
    Waiting,
    /// A turn runs.
    Busy,
    /// No prompt seen yet.
    Starting,
    /// At its prompt.
    Idle,
    /// Ended.
    Exited,
}

/// What an agent waits for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wait {
    /// `permission` or `question`.
    pub kind: String,
    /// The tool, when given.
    pub tool: Option<String>,
    /// The tool's input (compact JSON), when given.
    pub input: Option<String>,
    /// The agent's sentence.
    pub message: Option<String>,
    /// The wait's id, to name in an answer, when the broker gives it.
    pub id: Option<u64>,
}

/// One session as the dashboard knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: Option<String>,
    /// Its command line.
    pub command: Vec<String>,
    /// Its preset.
    pub preset: String,
    /// Its wrapper's mode.
    pub mode: Option<Mode>,
    /// When its running turn started, while busy: the wrapper's time when the broker gives
    /// it (so a restarted broker or dashboard keeps it), else when the dashboard heard.
    pub busy_since: Option<u64>,
    /// The running turn's submitted line, while busy.
    pub input: Option<String>,
    /// What its agent waits for.
    pub waiting: Option<Wait>,
    /// How it ended: the exit code, when known; `Some(None)`: ended, code unknown.
    pub exited: Option<Option<i32>>,
    /// Turns its ring holds.
    pub turns: u32,
    /// Its latest turn.
    pub last_turn_id: Option<String>,
    /// When something last happened in it (by the dashboard's clock).
    pub last_activity: Option<u64>,
    /// Times its hooks and its screen disagreed.
    pub disagreements: u64,
    /// Handoffs waiting in its inbox.
    pub inbox: u32,
    /// Whether its child has bracketed paste on.
    pub bracketed_paste: bool,
    /// It started waiting or finished a turn while not selected.
    pub attention: bool,
    /// Terminals attached to it (`clippy-ctl attach`).
    pub attached: u32,
}

impl Session {
    /// Where it is.
    pub fn phase(&self) -> Phase {
        if self.exited.is_some() || self.mode == Some(Mode::Exited) {
            Phase::Exited
        } else if self.waiting.is_some() {
            Phase::Waiting
        } else {
            match self.mode {
                Some(Mode::Busy) => Phase::Busy,
                Some(Mode::Idle) => Phase::Idle,
                _ => Phase::Starting,
            }
        }
    }

    /// Its name, else its id.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.id)
    }

    fn matches(&self, filter: &str) -> bool {
        let filter = filter.to_lowercase();
        [
            self.id.as_str(),
            self.name.as_deref().unwrap_or(""),
            self.preset.as_str(),
            &self.command.join(" "),
        ]
        .iter()
        .any(|field| field.to_lowercase().contains(&filter))
    }
}

/// What the detail pane shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum View {
    /// The selected session's live screen.
    Screen,
    /// Its latest turn, as text or the agent's message.
    LastTurn(Format),
    /// Its turns.
    Turns,
    /// A turn opened from its turn list, as text or the agent's message (Esc: back to the
    /// list).
    Opened {
        /// The turn.
        turn: String,
        /// `text` or `message`.
        format: Format,
    },
    /// A turn found by a search.
    Found(String),
}

/// What the detail pane holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Detail {
    /// Nothing yet.
    #[default]
    Empty,
    /// Lines of a screen or a turn.
    Lines {
        /// What they are (a title).
        title: String,
        /// The lines.
        lines: Vec<String>,
    },
    /// A session's turns.
    Turns(Vec<TurnMeta>),
    /// Why there is nothing.
    Failed(String),
}

/// A window over the dashboard (one at a time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    /// Every key.
    Help,
    /// Typing the filter.
    Filter,
    /// End this session? (`y` ends it.)
    ConfirmEnd(String),
    /// Writing a message for a session.
    Editor {
        /// The session.
        session: String,
        /// The text.
        text: String,
    },
    /// Editing the text of a handoff awaiting approval (the same editor; Ctrl+S approves it
    /// with the text, Esc goes back to the routes).
    EditApproval {
        /// The approval.
        approval: String,
        /// The text.
        text: String,
        /// The inbox item it was chosen at in the routes window.
        at: usize,
    },
    /// Choosing the session to paste the captured turn into.
    PastePick {
        /// The one chosen, by position among the shown sessions.
        at: usize,
    },
    /// Starting a session: command, name, folder.
    Spawn {
        /// The fields.
        fields: [String; 3],
        /// The field being typed.
        focus: usize,
    },
    /// Routes and what waits in the inboxes.
    Routes {
        /// The chosen inbox item.
        at: usize,
    },
    /// Searching the history.
    Search {
        /// The words.
        query: String,
        /// Still typing them.
        typing: bool,
        /// The chosen hit.
        at: usize,
    },
}

/// The dashboard.
#[derive(Debug)]
pub struct App {
    sessions: BTreeMap<String, Session>,
    routes: Vec<RouteInfo>,
    inboxes: BTreeMap<String, Vec<InboxItem>>,
    hits: Vec<SearchHit>,
    selected: Option<String>,
    filter: String,
    view: View,
    detail: Detail,
    /// Scrolled up this many lines from the bottom of the detail.
    scroll: u16,
    /// The chosen turn in the turn list.
    turn_at: usize,
    /// The keys move in the turn list (not the sessions list).
    turns_focus: bool,
    /// Every session's status is asked again at the next list (the event stream was away:
    /// what changed meanwhile was not heard).
    restatus: bool,
    /// The newest turn heard of per session (its seq), kept when a session leaves the list:
    /// a wrapper registering again with a restarted broker hands it its turns again, and
    /// those are not news.
    seen_turns: BTreeMap<String, u64>,
    overlay: Option<Overlay>,
    status: Option<String>,
    connected: bool,
    bell: bool,
    /// A screen request is out for this session, and whether output came meanwhile.
    screen_asked: Option<(String, bool)>,
    size: (u16, u16),
    changed: bool,
    quit: bool,
}

impl App {
    /// An empty dashboard; `bell`: ring the terminal's bell for what needs attention.
    pub fn new(bell: bool) -> Self {
        Self {
            sessions: BTreeMap::new(),
            routes: Vec::new(),
            inboxes: BTreeMap::new(),
            hits: Vec::new(),
            selected: None,
            filter: String::new(),
            view: View::Screen,
            detail: Detail::Empty,
            scroll: 0,
            turn_at: 0,
            turns_focus: false,
            restatus: false,
            seen_turns: BTreeMap::new(),
            overlay: None,
            status: None,
            connected: false,
            bell,
            screen_asked: None,
            size: (80, 24),
            changed: true,
            quit: false,
        }
    }

    /// Takes in `input`, arrived at `now` (Unix ms); what to do.
    pub fn handle(&mut self, input: Input, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        let before = self.selected.clone();
        match input {
            Input::Event(event) => self.on_event(*event, now, &mut out),
            Input::Reply(reply) => self.on_reply(reply, now, &mut out),
            Input::Key(key) => self.on_key(key, &mut out),
            Input::Resize { cols, rows } => {
                self.size = (cols, rows);
                self.changed = true;
            }
            Input::Broker(up) => {
                self.connected = up;
                self.changed = true;
                if up {
                    self.restatus = true;
                    out.push(Action::Refresh);
                } else {
                    self.screen_asked = None;
                }
            }
            Input::Output(session) => {
                if self.selected.as_deref() == Some(session.as_str()) && self.view == View::Screen {
                    self.ask_screen(&session, &mut out);
                }
                if let Some(s) = self.sessions.get_mut(&session) {
                    s.last_activity = Some(now);
                }
            }
            Input::Detached(session) => {
                self.changed = true;
                out.push(Action::Status(session));
                self.refetch_detail(&mut out);
            }
        }
        if self.selected.is_none() || !self.visible_contains(self.selected.as_deref()) {
            self.selected = self.shown().first().map(|s| s.id.clone());
        }
        if self.selected != before {
            self.selection_changed(&mut out);
        }
        if self.quit {
            out.push(Action::Quit);
        }
        out
    }

    /// Whether anything shown changed since the last [`App::drawn`].
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// The state was drawn.
    pub fn drawn(&mut self) {
        self.changed = false;
    }

    /// When (Unix ms) the shown time needs the next redraw: the next whole second of a busy
    /// session's elapsed time; `None` when no busy session is shown (nothing then changes by
    /// itself).
    pub fn next_tick(&self, now: u64) -> Option<u64> {
        self.shown()
            .iter()
            .filter(|s| s.phase() == Phase::Busy)
            .filter_map(|s| s.busy_since)
            .map(|since| now + 1000 - (now.saturating_sub(since) % 1000))
            .min()
    }

    /// The sessions shown, in order: those waiting for the person first, then busy, starting,
    /// idle, exited; within each, the most recently active first.
    pub fn shown(&self) -> Vec<&Session> {
        let mut shown: Vec<&Session> = self
            .sessions
            .values()
            .filter(|s| self.filter.is_empty() || s.matches(&self.filter))
            .collect();
        shown.sort_by(|a, b| {
            (a.phase(), std::cmp::Reverse(a.last_activity), &a.id).cmp(&(
                b.phase(),
                std::cmp::Reverse(b.last_activity),
                &b.id,
            ))
        });
        shown
    }

    /// A session by id.
    pub fn session(&self, id: &str) -> Option<&Session> {
        self.sessions.get(id)
    }

    /// The selected session's id.
    pub fn selected(&self) -> Option<&str> {
        self.selected.as_deref()
    }

    /// The filter typed.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// What the detail pane shows, and holds.
    pub fn detail(&self) -> (&View, &Detail, u16) {
        (&self.view, &self.detail, self.scroll)
    }

    /// The chosen turn in the turn list, and whether the keys move in it.
    pub fn turn_cursor(&self) -> (usize, bool) {
        (self.turn_at, self.turns_focus && self.view == View::Turns)
    }

    /// The window open over the dashboard.
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlay.as_ref()
    }

    /// The latest result or error, for the status line.
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// Whether the broker answers.
    pub fn connected(&self) -> bool {
        self.connected
    }

    /// The routes.
    pub fn routes(&self) -> &[RouteInfo] {
        &self.routes
    }

    /// Every inbox item known, with its session.
    pub fn inbox_items(&self) -> Vec<(&str, &InboxItem)> {
        self.inboxes
            .iter()
            .flat_map(|(s, items)| items.iter().map(move |i| (s.as_str(), i)))
            .collect()
    }

    /// The search hits.
    pub fn hits(&self) -> &[SearchHit] {
        &self.hits
    }

    /// Routes into and out of a session.
    pub fn routes_of(&self, id: &str) -> (usize, usize) {
        let into = self.routes.iter().filter(|r| r.to == id).count();
        let out = self.routes.iter().filter(|r| r.from == id).count();
        (into, out)
    }

    /// The terminal's size.
    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    fn visible_contains(&self, id: Option<&str>) -> bool {
        id.is_some_and(|id| self.shown().iter().any(|s| s.id == id))
    }

    fn entry(&mut self, id: &str) -> &mut Session {
        self.sessions
            .entry(id.to_owned())
            .or_insert_with(|| Session {
                id: id.to_owned(),
                ..Session::default()
            })
    }

    /// Marks a session that needs the person, unless they are looking at it.
    fn attention(&mut self, id: &str, out: &mut Vec<Action>) {
        if self.selected.as_deref() == Some(id) {
            return;
        }
        let bell = self.bell;
        let s = self.entry(id);
        s.attention = true;
        if bell {
            out.push(Action::Bell);
        }
    }

    fn on_event(&mut self, e: EventRecord, now: u64, out: &mut Vec<Action>) {
        self.changed = true;
        let kind = e.kind.as_str();
        if kind == "subscriber.lagged" || kind == "events.missed" {
            out.push(Action::Refresh);
            return;
        }
        let category = kind.split('.').next().unwrap_or("");
        if category == "route" || category == "approval" {
            out.push(Action::Routes);
            if let Some(to) = &e.to {
                out.push(Action::Status(to.clone()));
                if matches!(self.overlay, Some(Overlay::Routes { .. })) {
                    out.push(Action::Inbox(to.clone()));
                }
            }
            return;
        }
        let Some(id) = e.session.clone() else {
            return;
        };
        if kind == "session.registered" {
            let s = self.entry(&id);
            s.name = e.name.clone();
            s.last_activity = Some(now);
            out.push(Action::Refresh);
            return;
        }
        if !self.sessions.contains_key(&id) && kind != "session.exited" {
            // A session this dashboard has not heard of yet: ask.
            out.push(Action::Refresh);
        }
        match kind {
            "session.exited" => {
                let s = self.entry(&id);
                s.exited = Some(e.exit_code);
                s.waiting = None;
                s.busy_since = None;
                s.last_activity = Some(now);
                if let Some(name) = e.name {
                    s.name = Some(name);
                }
                self.routes.retain(|r| r.from != id && r.to != id);
            }
            "session.mode" => {
                let mode = match e.reason.as_deref() {
                    Some("busy") => Mode::Busy,
                    Some("idle") => Mode::Idle,
                    _ => Mode::Starting,
                };
                let s = self.entry(&id);
                s.busy_since = match mode {
                    // The wrapper's time when given (a broker restart keeps it).
                    Mode::Busy => e.since.or(s.busy_since).or(Some(now)),
                    _ => None,
                };
                s.mode = Some(mode);
                s.input = e.message;
                s.last_activity = Some(now);
            }
            "session.waiting" => {
                let s = self.entry(&id);
                s.waiting = Some(Wait {
                    kind: e.reason.unwrap_or_default(),
                    tool: e.tool,
                    input: e.input,
                    message: e.message,
                    id: e.waiting_id,
                });
                s.last_activity = Some(now);
                self.attention(&id, out);
            }
            "session.resumed" => {
                let s = self.entry(&id);
                s.waiting = None;
                s.last_activity = Some(now);
            }
            "session.disagreement" => out.push(Action::Status(id)),
            "session.attached" => {
                let s = self.entry(&id);
                s.attached = e.attached.unwrap_or(0);
            }
            "turn.completed" => {
                if !self.new_turn(&id, e.turn_id.as_deref()) {
                    // A turn handed again to a restarted broker: no news.
                    return;
                }
                let s = self.entry(&id);
                s.turns += 1;
                s.last_turn_id = e.turn_id;
                s.last_activity = Some(now);
                self.attention(&id, out);
                if self.selected.as_deref() == Some(id.as_str())
                    && matches!(self.view, View::LastTurn(_) | View::Turns)
                {
                    self.refetch_detail(out);
                }
            }
            _ => {
                if let Some(s) = self.sessions.get_mut(&id) {
                    s.last_activity = Some(now);
                }
            }
        }
    }

    /// Whether `turn` (`<session>:<seq>`) of session `id` is newer than every turn heard of
    /// it; it is then the newest.
    fn new_turn(&mut self, id: &str, turn: Option<&str>) -> bool {
        let Some(seq) = turn.and_then(turn_seq) else {
            return true;
        };
        let newest = self.seen_turns.entry(id.to_owned()).or_insert(0);
        let new = seq > *newest;
        *newest = (*newest).max(seq);
        new
    }

    fn on_reply(&mut self, reply: Reply, now: u64, out: &mut Vec<Action>) {
        self.changed = true;
        match reply {
            Reply::Sessions(list) => {
                let listed: Vec<&str> = list.iter().map(|s| s.session.as_str()).collect();
                // Gone without a word (a broker restarted, say): only ended sessions stay.
                self.sessions
                    .retain(|id, s| listed.contains(&id.as_str()) || s.exited.is_some());
                let restatus = std::mem::take(&mut self.restatus);
                for summary in list {
                    let new = restatus
                        || !self.sessions.contains_key(&summary.session)
                        || self.sessions[&summary.session].mode.is_none();
                    let s = self.entry(&summary.session);
                    s.name = summary.name;
                    s.command = summary.command;
                    s.preset = summary.preset;
                    s.turns = summary.turns;
                    s.last_turn_id = summary.last_turn_id;
                    s.bracketed_paste = summary.bracketed_paste;
                    s.attached = summary.attached;
                    let last = s.last_turn_id.clone();
                    self.new_turn(&summary.session, last.as_deref());
                    if new {
                        out.push(Action::Status(summary.session));
                    }
                }
                out.push(Action::Routes);
            }
            Reply::Status(st) => {
                let s = self.entry(&st.session);
                if st.name.is_some() {
                    s.name = st.name;
                }
                s.busy_since = match st.mode {
                    // The wrapper's time when given: a dashboard started, or a broker
                    // restarted, during a turn shows how long it has really run.
                    Mode::Busy => st.busy_since.or(s.busy_since).or(Some(now)),
                    _ => None,
                };
                s.attached = st.attached;
                s.mode = Some(st.mode);
                s.input = st.current_input;
                s.waiting = st.waiting.map(|w| Wait {
                    kind: w.kind,
                    tool: w.tool,
                    input: w.input,
                    message: w.message,
                    // 0: a wrapper older than waiting ids.
                    id: (w.id > 0).then_some(w.id),
                });
                s.disagreements = st.hooks.disagreements;
                s.inbox = st.inbox;
                s.bracketed_paste = st.bracketed_paste;
                if let Some(turn) = st.last_turn_id {
                    s.last_turn_id = Some(turn);
                }

                s.exited = st.exited.map(|x| x.exit_code);
                let (id, last) = (s.id.clone(), s.last_turn_id.clone());
                self.new_turn(&id, last.as_deref());
            }
            Reply::Routes(routes) => self.routes = routes,
            Reply::Inbox { session, items } => {
                if items.is_empty() {
                    self.inboxes.remove(&session);
                } else {
                    self.inboxes.insert(session, items);
                }
            }
            Reply::Screen { session, lines } => {
                let again = match self.screen_asked.take() {
                    Some((asked, output_came)) if asked == session => output_came,
                    other => {
                        self.screen_asked = other;
                        false
                    }
                };
                if self.selected.as_deref() == Some(session.as_str()) && self.view == View::Screen {
                    self.detail = Detail::Lines {
                        title: "screen".into(),
                        lines,
                    };
                    if again {
                        self.ask_screen(&session, out);
                    }
                }
            }
            Reply::Turn {
                target,
                turn_id,
                format,
                text,
            } => {
                let wanted = match &self.view {
                    View::LastTurn(f) => *f == format && self.selected.as_deref() == Some(&target),
                    View::Opened { turn, format: f } => *turn == target && *f == format,
                    View::Found(id) => *id == target,
                    _ => false,
                };
                if wanted {
                    let how = if format == Format::Message {
                        "message"
                    } else {
                        "text"
                    };
                    self.detail = Detail::Lines {
                        title: format!("turn {turn_id} ({how})"),
                        lines: text.lines().map(str::to_owned).collect(),
                    };
                }
            }
            Reply::Turns { session, turns } => {
                if self.view == View::Turns && self.selected.as_deref() == Some(&session) {
                    self.turn_at = self.turn_at.min(turns.len().saturating_sub(1));
                    self.detail = Detail::Turns(turns);
                }
            }
            Reply::Hits(hits) => {
                self.status = Some(format!("{} found", hits.len()));
                self.hits = hits;
            }
            Reply::Done(sentence) => self.status = Some(sentence),
            Reply::Failed(why) => {
                if self.screen_asked.is_some() && self.view == View::Screen {
                    self.screen_asked = None;
                }
                if matches!(self.detail, Detail::Empty) {
                    self.detail = Detail::Failed(why.clone());
                }
                self.status = Some(why);
            }
        }
    }

    fn ask_screen(&mut self, session: &str, out: &mut Vec<Action>) {
        match &mut self.screen_asked {
            Some((asked, output_came)) if asked == session => *output_came = true,
            _ => {
                self.screen_asked = Some((session.to_owned(), false));
                out.push(Action::Screen(session.to_owned()));
            }
        }
    }

    fn selection_changed(&mut self, out: &mut Vec<Action>) {
        self.changed = true;
        self.scroll = 0;
        if let Some(id) = self.selected.clone()
            && let Some(s) = self.sessions.get_mut(&id)
        {
            s.attention = false;
        }
        if matches!(self.view, View::Found(_)) {
            self.view = View::Screen;
        }
        if matches!(self.view, View::Opened { .. }) {
            self.view = View::Turns;
        }
        self.turn_at = 0;
        self.detail = Detail::Empty;
        self.screen_asked = None;
        let live = self
            .selected
            .as_deref()
            .and_then(|id| self.sessions.get(id))
            .filter(|s| s.phase() != Phase::Exited)
            .map(|s| s.id.clone());
        out.push(Action::Watch(live));
        self.refetch_detail(out);
    }

    fn refetch_detail(&mut self, out: &mut Vec<Action>) {
        let Some(id) = self.selected.clone() else {
            return;
        };
        match self.view.clone() {
            View::Screen => {
                if self
                    .sessions
                    .get(&id)
                    .is_some_and(|s| s.phase() != Phase::Exited)
                {
                    self.screen_asked = None;
                    self.ask_screen(&id, out);
                }
            }
            View::LastTurn(format) => out.push(Action::Turn { target: id, format }),
            View::Turns => out.push(Action::Turns(id)),
            View::Opened { turn, format } => out.push(Action::Turn {
                target: turn,
                format,
            }),
            View::Found(turn) => out.push(Action::Turn {
                target: turn,
                format: Format::Text,
            }),
        }
    }

    fn select_by(&mut self, step: isize) {
        let shown: Vec<String> = self.shown().iter().map(|s| s.id.clone()).collect();
        if shown.is_empty() {
            return;
        }
        let at = self
            .selected
            .as_ref()
            .and_then(|id| shown.iter().position(|s| s == id))
            .unwrap_or(0);
        let last = shown.len() - 1;
        let next = at.saturating_add_signed(step).min(last);
        self.selected = Some(shown[next].clone());
        self.changed = true;
    }

    fn on_key(&mut self, key: Key, out: &mut Vec<Action>) {
        self.changed = true;
        if key == Key::Ctrl('c') {
            self.quit = true;
            return;
        }
        match self.overlay.take() {
            None if self.turns_focus && self.view == View::Turns => self.on_turns_key(key, out),
            None => self.on_list_key(key, out),
            Some(overlay) => self.overlay = self.on_overlay_key(overlay, key, out),
        }
    }

    fn on_list_key(&mut self, key: Key, out: &mut Vec<Action>) {
        let selected = self.selected.clone();
        let waiting = selected
            .as_deref()
            .and_then(|id| self.sessions.get(id))
            .and_then(|s| s.waiting.clone());
        match key {
            Key::Char('q') => self.quit = true,
            Key::Char('?') => self.overlay = Some(Overlay::Help),
            Key::Up | Key::Char('k') => self.select_by(-1),
            Key::Down | Key::Char('j') => self.select_by(1),
            Key::Home => self.select_by(isize::MIN / 2),
            Key::End => self.select_by(isize::MAX / 2),
            Key::PageUp => self.scroll = self.scroll.saturating_add(self.page()),
            Key::PageDown => self.scroll = self.scroll.saturating_sub(self.page()),
            Key::Char('f') => self.overlay = Some(Overlay::Filter),
            Key::Esc if matches!(self.view, View::Opened { .. }) => {
                self.back_to_turns(out);
                return;
            }
            Key::Esc => {
                self.filter.clear();
                self.status = None;
            }
            Key::Char('v') => {
                self.view = match self.view {
                    View::Screen => View::LastTurn(Format::Text),
                    View::LastTurn(_) => View::Turns,
                    View::Turns | View::Opened { .. } | View::Found(_) => View::Screen,
                };
                // The turn list takes the arrows at once (Esc or Tab gives them back).
                self.turns_focus = self.view == View::Turns;
                self.turn_at = 0;
                self.detail = Detail::Empty;
                self.scroll = 0;
                self.refetch_detail(out);
            }
            Key::Tab if self.view == View::Turns => self.turns_focus = true,
            Key::Char('t') => {
                let toggle = |f: Format| {
                    if f == Format::Message {
                        Format::Text
                    } else {
                        Format::Message
                    }
                };
                match self.view.clone() {
                    View::LastTurn(format) => {
                        self.view = View::LastTurn(toggle(format));
                        self.refetch_detail(out);
                    }
                    View::Opened { turn, format } => {
                        self.view = View::Opened {
                            turn,
                            format: toggle(format),
                        };
                        self.refetch_detail(out);
                    }
                    _ => {}
                }
            }
            Key::Char('/') => {
                self.overlay = Some(Overlay::Search {
                    query: String::new(),
                    typing: true,
                    at: 0,
                });
            }
            Key::Char('n') => {
                self.overlay = Some(Overlay::Spawn {
                    fields: Default::default(),
                    focus: 0,
                });
            }
            Key::Char('r') => {
                out.push(Action::Routes);
                for s in self.sessions.values().filter(|s| s.inbox > 0) {
                    out.push(Action::Inbox(s.id.clone()));
                }
                self.overlay = Some(Overlay::Routes { at: 0 });
            }
            _ => {}
        }
        let Some(id) = selected else {
            return;
        };
        let live = self
            .sessions
            .get(&id)
            .is_some_and(|s| s.phase() != Phase::Exited);
        match key {
            Key::Enter if live => out.push(Action::Attach(id)),
            Key::Char(c @ ('a' | 'A' | 'd')) => match waiting {
                Some(wait) => out.push(Action::Answer {
                    session: id,
                    decision: match c {
                        'a' => Decision::Allow,
                        'A' => Decision::Always,
                        _ => Decision::Deny,
                    },
                    waiting_id: wait.id,
                }),
                None => self.status = Some(format!("{id} waits for nothing to answer")),
            },
            Key::Char('s') if live => {
                self.overlay = Some(Overlay::Editor {
                    session: id,
                    text: String::new(),
                });
            }
            Key::Char('c') => out.push(Action::Capture(id)),
            Key::Char('p') => {
                let at = self.shown().iter().position(|s| s.id == id).unwrap_or(0);
                self.overlay = Some(Overlay::PastePick { at });
            }
            Key::Char('x') if live => self.overlay = Some(Overlay::ConfirmEnd(id)),
            _ => {}
        }
    }

    /// A key while the turn list has the arrows: move in it, Enter opens the chosen turn, Esc
    /// or Tab gives the arrows back to the sessions; the other keys act as in the list.
    fn on_turns_key(&mut self, key: Key, out: &mut Vec<Action>) {
        let count = match &self.detail {
            Detail::Turns(turns) => turns.len(),
            _ => 0,
        };
        match key {
            Key::Up | Key::Char('k') => self.turn_at = self.turn_at.saturating_sub(1),
            Key::Down | Key::Char('j') => {
                self.turn_at = (self.turn_at + 1).min(count.saturating_sub(1));
            }
            Key::Home => self.turn_at = 0,
            Key::End => self.turn_at = count.saturating_sub(1),
            Key::Enter => {
                let chosen = match &self.detail {
                    Detail::Turns(turns) => turns.get(self.turn_at).map(|t| t.turn_id.clone()),
                    _ => None,
                };
                if let Some(turn) = chosen {
                    self.view = View::Opened {
                        turn,
                        format: Format::Text,
                    };
                    self.detail = Detail::Empty;
                    self.scroll = 0;
                    self.refetch_detail(out);
                }
            }
            Key::Esc | Key::Tab => self.turns_focus = false,
            other => self.on_list_key(other, out),
        }
    }

    /// From an opened turn back to the turn list, the arrows in it, the same turn chosen.
    fn back_to_turns(&mut self, out: &mut Vec<Action>) {
        self.view = View::Turns;
        self.turns_focus = true;
        self.detail = Detail::Empty;
        self.scroll = 0;
        self.refetch_detail(out);
    }

    fn page(&self) -> u16 {
        (self.size.1 / 2).max(1)
    }

    fn on_overlay_key(
        &mut self,
        overlay: Overlay,
        key: Key,
        out: &mut Vec<Action>,
    ) -> Option<Overlay> {
        match overlay {
            Overlay::Help => None,
            Overlay::Filter => match key {
                Key::Enter => None,
                Key::Esc => {
                    self.filter.clear();
                    None
                }
                Key::Backspace => {
                    self.filter.pop();
                    Some(Overlay::Filter)
                }
                Key::Char(c) => {
                    self.filter.push(c);
                    Some(Overlay::Filter)
                }
                Key::Paste(text) => {
                    self.filter.push_str(text.lines().next().unwrap_or(""));
                    Some(Overlay::Filter)
                }
                Key::Up | Key::Down => {
                    self.select_by(if key == Key::Up { -1 } else { 1 });
                    Some(Overlay::Filter)
                }
                _ => Some(Overlay::Filter),
            },
            Overlay::ConfirmEnd(id) => {
                if matches!(key, Key::Char('y' | 'Y')) {
                    out.push(Action::End(id));
                }
                None
            }
            Overlay::Editor { session, mut text } => match key {
                Key::Esc => None,
                Key::Ctrl('s') => {
                    if text.is_empty() {
                        return None;
                    }
                    let bracketed = self
                        .sessions
                        .get(&session)
                        .is_some_and(|s| s.bracketed_paste);
                    out.push(Action::Send {
                        session,
                        data: typed(&text, bracketed),
                    });
                    None
                }
                Key::Enter => {
                    text.push('\n');
                    Some(Overlay::Editor { session, text })
                }
                Key::Backspace => {
                    text.pop();
                    Some(Overlay::Editor { session, text })
                }
                Key::Char(c) => {
                    text.push(c);
                    Some(Overlay::Editor { session, text })
                }
                Key::Tab => {
                    text.push('\t');
                    Some(Overlay::Editor { session, text })
                }
                Key::Paste(pasted) => {
                    text.push_str(&pasted.replace("\r\n", "\n").replace('\r', "\n"));
                    Some(Overlay::Editor { session, text })
                }
                _ => Some(Overlay::Editor { session, text }),
            },
            Overlay::EditApproval {
                approval,
                mut text,
                at,
            } => {
                match key {
                    Key::Esc => return Some(Overlay::Routes { at }),
                    Key::Ctrl('s') => {
                        out.push(Action::ApproveEdited { approval, text });
                        return Some(Overlay::Routes { at });
                    }
                    Key::Enter => text.push('\n'),
                    Key::Backspace => {
                        text.pop();
                    }
                    Key::Char(c) => text.push(c),
                    Key::Tab => text.push('\t'),
                    Key::Paste(pasted) => {
                        text.push_str(&pasted.replace("\r\n", "\n").replace('\r', "\n"));
                    }
                    _ => {}
                }
                Some(Overlay::EditApproval { approval, text, at })
            }
            Overlay::PastePick { at } => {
                let shown: Vec<String> = self.shown().iter().map(|s| s.id.clone()).collect();
                match key {
                    Key::Up | Key::Char('k') => Some(Overlay::PastePick {
                        at: at.saturating_sub(1),
                    }),
                    Key::Down | Key::Char('j') => Some(Overlay::PastePick {
                        at: (at + 1).min(shown.len().saturating_sub(1)),
                    }),
                    Key::Enter => {
                        if let Some(id) = shown.get(at) {
                            out.push(Action::Paste(id.clone()));
                        }
                        None
                    }
                    Key::Esc => None,
                    _ => Some(Overlay::PastePick { at }),
                }
            }
            Overlay::Spawn { mut fields, focus } => match key {
                Key::Esc => None,
                Key::Tab | Key::Down => Some(Overlay::Spawn {
                    fields,
                    focus: (focus + 1) % 3,
                }),
                Key::BackTab | Key::Up => Some(Overlay::Spawn {
                    fields,
                    focus: (focus + 2) % 3,
                }),
                Key::Enter => {
                    let command: Vec<String> =
                        fields[0].split_whitespace().map(str::to_owned).collect();
                    if command.is_empty() {
                        self.status = Some("no command to start".into());
                        return Some(Overlay::Spawn { fields, focus: 0 });
                    }
                    let opt = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_owned());
                    out.push(Action::Spawn {
                        command,
                        name: opt(&fields[1]),
                        cwd: opt(&fields[2]),
                    });
                    None
                }
                Key::Backspace => {
                    fields[focus].pop();
                    Some(Overlay::Spawn { fields, focus })
                }
                Key::Char(c) => {
                    fields[focus].push(c);
                    Some(Overlay::Spawn { fields, focus })
                }
                Key::Paste(text) => {
                    fields[focus].push_str(text.lines().next().unwrap_or(""));
                    Some(Overlay::Spawn { fields, focus })
                }
                _ => Some(Overlay::Spawn { fields, focus }),
            },
            Overlay::Routes { at } => {
                let items: Vec<Option<String>> = self
                    .inbox_items()
                    .iter()
                    .map(|(_, i)| i.approval.clone())
                    .collect();
                if key == Key::Char('e') {
                    let chosen = self
                        .inbox_items()
                        .get(at)
                        .map(|(_, i)| (i.approval.clone(), i.text.clone(), i.byte_length));
                    match chosen {
                        Some((Some(approval), Some(text), _)) => {
                            return Some(Overlay::EditApproval { approval, text, at });
                        }
                        Some((Some(approval), None, bytes)) => {
                            self.status = Some(format!(
                                "{approval} hands over {bytes} bytes, too many to edit here: \
                                 clippy-ctl approve {approval} --edit FILE"
                            ));
                        }
                        _ => self.status = Some("nothing there awaits approval".into()),
                    }
                    return Some(Overlay::Routes { at });
                }
                match key {
                    Key::Esc | Key::Char('q' | 'r') => None,
                    Key::Up | Key::Char('k') => Some(Overlay::Routes {
                        at: at.saturating_sub(1),
                    }),
                    Key::Down | Key::Char('j') => Some(Overlay::Routes {
                        at: (at + 1).min(items.len().saturating_sub(1)),
                    }),
                    Key::Char(c @ ('a' | 'd')) => {
                        match items.get(at).cloned().flatten() {
                            Some(approval) if c == 'a' => out.push(Action::Approve(approval)),
                            Some(approval) => out.push(Action::Deny(approval)),
                            None => self.status = Some("nothing there awaits approval".into()),
                        }
                        Some(Overlay::Routes { at })
                    }
                    _ => Some(Overlay::Routes { at }),
                }
            }
            Overlay::Search {
                mut query,
                typing,
                at,
            } => {
                if typing {
                    match key {
                        Key::Esc => return None,
                        Key::Enter if !query.trim().is_empty() => {
                            out.push(Action::Search(query.trim().to_owned()));
                            self.hits.clear();
                            return Some(Overlay::Search {
                                query,
                                typing: false,
                                at: 0,
                            });
                        }
                        Key::Backspace => {
                            query.pop();
                        }
                        Key::Char(c) => query.push(c),
                        Key::Paste(text) => query.push_str(text.lines().next().unwrap_or("")),
                        _ => {}
                    }
                    return Some(Overlay::Search { query, typing, at });
                }
                match key {
                    Key::Esc => None,
                    Key::Char('/') => Some(Overlay::Search {
                        query,
                        typing: true,
                        at: 0,
                    }),
                    Key::Up | Key::Char('k') => Some(Overlay::Search {
                        query,
                        typing,
                        at: at.saturating_sub(1),
                    }),
                    Key::Down | Key::Char('j') => Some(Overlay::Search {
                        query,
                        typing,
                        at: (at + 1).min(self.hits.len().saturating_sub(1)),
                    }),
                    Key::Enter => match self.hits.get(at) {
                        Some(hit) => {
                            let turn = hit.entry.turn_id.clone();
                            self.view = View::Found(turn.clone());
                            self.detail = Detail::Empty;
                            self.scroll = 0;
                            out.push(Action::Turn {
                                target: turn,
                                format: Format::Text,
                            });
                            None
                        }
                        None => Some(Overlay::Search { query, typing, at }),
                    },
                    _ => Some(Overlay::Search { query, typing, at }),
                }
            }
        }
    }
}

/// The seq of a turn id `<session>:<seq>`.
fn turn_seq(turn: &str) -> Option<u64> {
    turn.rsplit_once(':').and_then(|(_, seq)| seq.parse().ok())
}

/// What `send` types for `text`: one bracketed paste when the program has it on (markers in
/// the text removed), else the lines with a carriage return between them; the Enter that
/// submits it is the broker's, written after it.
pub fn typed(text: &str, bracketed: bool) -> Vec<u8> {
    let text = text.trim_end_matches('\n');
    if bracketed {
        let clean = text.replace("\x1b[200~", "").replace("\x1b[201~", "");
        let mut data = b"\x1b[200~".to_vec();
        data.extend_from_slice(clean.as_bytes());
        data.extend_from_slice(b"\x1b[201~");
        data
    } else {
        text.replace('\n', "\r").into_bytes()
    }
}

/// How often the dashboard may redraw: at most `per_second` frames, so a burst of events (200
/// a second over 100 sessions) costs a few frames, not one each; the state's own changes stay
/// at most one frame interval behind. Sans-I/O: the caller passes the time (Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacer {
    interval: u64,
    last: Option<u64>,
}

impl Pacer {
    /// At most `per_second` frames a second (at least one).
    pub fn new(per_second: u64) -> Self {
        Self {
            interval: 1000 / per_second.max(1),
            last: None,
        }
    }

    /// `None`: a frame may be drawn at `now`; else the time it may.
    pub fn wait(&self, now: u64) -> Option<u64> {
        let next = self.last? + self.interval;
        (next > now).then_some(next)
    }

    /// A frame was drawn at `now`.
    pub fn drew(&mut self, now: u64) {
        self.last = Some(now);
    }
}
