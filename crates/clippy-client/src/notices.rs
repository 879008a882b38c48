//! What to tell a person about the broker's events (`clippy-ctl notify`), decided with no I/O:
//! events and the time go in, notices (a title and a body) come out. The front end follows the
//! event stream, reads a turn's text when asked to, and shows each notice (a desktop
//! notification, a terminal bell, a line).
//!
//! - `session.waiting`: "NAME is waiting", with what for (a permission for a tool and its input,
//!   or a question) and the agent's own sentence. A wait is what a person must see: it is never
//!   held back.
//! - `turn.completed`: "NAME finished a turn", with the turn's first line (the front end reads
//!   it: [`Step::Turn`]). Turns are rate-limited: at most [`Rules::burst`] notices at once, then
//!   one more per [`Rules::interval_ms`]; the turns held back meanwhile are summed up in one
//!   notice ("3 more turns completed: rev, py") once the limit allows it ([`Notifier::tick`]).

use std::collections::BTreeSet;

use clippy_proto::EventRecord;

/// The longest body line, in characters (a tool's input, a turn's first line), cut with `…`.
pub const MAX_LINE_CHARS: usize = 200;

/// Which events of which sessions become notices, and how fast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Sessions by name, id or id prefix; none: every session.
    pub sessions: Vec<String>,
    /// Notify when an agent waits (`session.waiting`).
    pub waiting: bool,
    /// Notify when a turn completes (`turn.completed`).
    pub turns: bool,
    /// Notices allowed at once before the rate limit holds turns back.
    pub burst: u32,
    /// One more notice allowed per this many milliseconds.
    pub interval_ms: u64,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            sessions: Vec::new(),
            waiting: true,
            turns: true,
            burst: 3,
            interval_ms: 10_000,
        }
    }
}

impl Rules {
    /// The event types these rules listen to (for a subscription's `types`).
    pub fn event_types(&self) -> Vec<String> {
        let mut types = Vec::new();
        if self.waiting {
            types.push("session.waiting".to_owned());
        }
        if self.turns {
            types.push("turn.completed".to_owned());
        }
        types
    }

    /// Whether the event's session is one of the chosen.
    fn chosen(&self, event: &EventRecord) -> bool {
        if self.sessions.is_empty() {
            return true;
        }
        let id = event.session.as_deref().unwrap_or_default();
        let name = event.name.as_deref();
        self.sessions.iter().any(|wanted| {
            name == Some(wanted.as_str()) || (!id.is_empty() && id.starts_with(wanted.as_str()))
        })
    }
}

/// What kind of thing a notice tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An agent waits for the person.
    Waiting,
    /// A turn completed.
    Turn,
    /// Turns held back by the rate limit, summed up.
    Summary,
}

impl Kind {
    /// Its name in a JSON line: `waiting`, `turn`, `summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Waiting => "waiting",
            Self::Turn => "turn",
            Self::Summary => "summary",
        }
    }
}

/// One notice to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// What it tells.
    pub kind: Kind,
    /// The session's id (none for a summary).
    pub session: Option<String>,
    /// The turn, for a turn's notice.
    pub turn_id: Option<String>,
    /// The title: `NAME is waiting`, `NAME finished a turn`.
    pub title: String,
    /// The body: what it waits for, the turn's first line.
    pub body: String,
}

/// A turn's notice that needs the turn's text: the front end reads the turn ([`Self::turn_id`])
/// and finishes it with [`Self::with_text`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnNotice {
    session: String,
    label: String,
    turn_id: String,
    exit_code: Option<i32>,
}

impl TurnNotice {
    /// The turn to read.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The notice, with the turn's text (`None`: it could not be read); its first line that is
    /// not blank is the body.
    pub fn with_text(self, text: Option<&str>) -> Notice {
        let first = text
            .and_then(|text| text.lines().map(str::trim).find(|line| !line.is_empty()))
            .map(|line| cut(line, MAX_LINE_CHARS));
        let mut body = first.unwrap_or_else(|| format!("turn {}", self.turn_id));
        if let Some(code) = self.exit_code.filter(|code| *code != 0) {
            body.push_str(&format!(" (exit code {code})"));
        }
        Notice {
            kind: Kind::Turn,
            title: format!("{} finished a turn", self.label),
            session: Some(self.session),
            turn_id: Some(self.turn_id),
            body,
        }
    }
}

/// What an event asks of the front end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing to show (another session, another type, or held back by the rate limit).
    Nothing,
    /// Show this.
    Show(Notice),
    /// Read the turn, then show [`TurnNotice::with_text`].
    Turn(TurnNotice),
}

/// The decision: rules, and the rate limit's state.
#[derive(Debug, Clone)]
pub struct Notifier {
    rules: Rules,
    /// Notices allowed now (a token bucket of [`Rules::burst`]).
    tokens: u32,
    /// When the bucket last gained a token (or started), Unix ms.
    refilled_at: Option<u64>,
    /// Turns held back since the last notice of turns, and their sessions' labels.
    held: u64,
    held_sessions: BTreeSet<String>,
}

impl Notifier {
    /// A notifier following `rules`, with its whole burst allowed.
    pub fn new(rules: Rules) -> Self {
        Self {
            tokens: rules.burst.max(1),
            rules,
            refilled_at: None,
            held: 0,
            held_sessions: BTreeSet::new(),
        }
    }

    /// The rules.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// An event, at `now` (Unix ms): what to do about it.
    pub fn event(&mut self, event: &EventRecord, now: u64) -> Step {
        self.refill(now);
        if !self.rules.chosen(event) {
            return Step::Nothing;
        }
        let session = event.session.clone().unwrap_or_default();
        let label = event
            .name
            .clone()
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| session.clone());
        match event.kind.as_str() {
            "session.waiting" if self.rules.waiting => {
                // Never held back; it uses a notice of the budget all the same.
                self.tokens = self.tokens.saturating_sub(1);
                Step::Show(waiting(event, session, &label))
            }
            "turn.completed" if self.rules.turns => {
                let Some(turn_id) = event.turn_id.clone() else {
                    return Step::Nothing;
                };
                if self.tokens == 0 {
                    self.held += 1;
                    self.held_sessions.insert(label);
                    return Step::Nothing;
                }
                self.tokens -= 1;
                Step::Turn(TurnNotice {
                    session,
                    label,
                    turn_id,
                    exit_code: event.exit_code,
                })
            }
            _ => Step::Nothing,
        }
    }

    /// Time passing with no event: the summary of the turns held back, once the rate limit
    /// allows a notice again.
    pub fn tick(&mut self, now: u64) -> Option<Notice> {
        self.refill(now);
        if self.held == 0 || self.tokens == 0 {
            return None;
        }
        self.tokens -= 1;
        let count = std::mem::take(&mut self.held);
        let sessions: Vec<String> = std::mem::take(&mut self.held_sessions)
            .into_iter()
            .collect();
        Some(Notice {
            kind: Kind::Summary,
            session: None,
            turn_id: None,
            title: if count == 1 {
                "1 more turn completed".to_owned()
            } else {
                format!("{count} more turns completed")
            },
            body: sessions.join(", "),
        })
    }

    /// One token more per interval passed since the last one, up to the burst.
    fn refill(&mut self, now: u64) {
        let Some(at) = self.refilled_at else {
            self.refilled_at = Some(now);
            return;
        };
        let interval = self.rules.interval_ms.max(1);
        let burst = self.rules.burst.max(1);
        let gained = now.saturating_sub(at) / interval;
        if gained == 0 {
            return;
        }
        let gained = u32::try_from(gained).unwrap_or(u32::MAX);
        self.tokens = self.tokens.saturating_add(gained).min(burst);
        self.refilled_at = Some(if self.tokens == burst {
            now
        } else {
            at + u64::from(gained) * interval
        });
    }
}

/// The notice of a `session.waiting` event.
fn waiting(event: &EventRecord, session: String, label: &str) -> Notice {
    let what = match (event.reason.as_deref(), event.tool.as_deref()) {
        (Some("question"), _) => "a question".to_owned(),
        (_, Some(tool)) => {
            let input = event
                .input
                .as_deref()
                .filter(|input| !input.is_empty() && *input != "{}")
                .map(|input| format!(" {}", cut(input, MAX_LINE_CHARS)))
                .unwrap_or_default();
            format!("permission: {tool}{input}")
        }
        (Some(reason), None) => reason.to_owned(),
        (None, None) => "input".to_owned(),
    };
    let mut body = what;
    if let Some(message) = event.message.as_deref().map(str::trim)
        && !message.is_empty()
    {
        body.push('\n');
        body.push_str(&cut(message, MAX_LINE_CHARS));
    }
    Notice {
        kind: Kind::Waiting,
        session: Some(session),
        turn_id: None,
        title: format!("{label} is waiting"),
        body,
    }
}

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, session: &str, name: &str, turn: u32) -> EventRecord {
        EventRecord {
            id: u64::from(turn),
            kind: kind.into(),
            session: Some(session.into()),
            name: Some(name.into()),
            turn_id: Some(format!("{session}:{turn}")),
            ..EventRecord::default()
        }
    }

    fn turn(session: &str, name: &str, n: u32) -> EventRecord {
        event("turn.completed", session, name, n)
    }

    fn waiting_event(tool: &str, input: &str) -> EventRecord {
        EventRecord {
            reason: Some("permission".into()),
            tool: Some(tool.into()),
            input: Some(input.into()),
            message: Some("Claude needs your permission to use Bash".into()),
            turn_id: None,
            ..event("session.waiting", "k3f9a2", "coder", 0)
        }
    }

    #[test]
    fn a_wait_names_the_session_the_tool_and_its_input() {
        let mut notifier = Notifier::new(Rules::default());
        let Step::Show(notice) =
            notifier.event(&waiting_event("Bash", r#"{"command":"ls"}"#), 1000)
        else {
            panic!("a wait is shown");
        };
        assert_eq!(notice.kind, Kind::Waiting);
        assert_eq!(notice.title, "coder is waiting");
        assert_eq!(
            notice.body,
            "permission: Bash {\"command\":\"ls\"}\nClaude needs your permission to use Bash"
        );
        assert_eq!(notice.session.as_deref(), Some("k3f9a2"));
        let question = EventRecord {
            reason: Some("question".into()),
            tool: None,
            message: None,
            ..waiting_event("", "")
        };
        let Step::Show(notice) = notifier.event(&question, 1000) else {
            panic!("a question is shown");
        };
        assert_eq!(notice.body, "a question");
    }

    #[test]
    fn a_turn_is_read_and_its_first_line_shown() {
        let mut notifier = Notifier::new(Rules::default());
        let Step::Turn(pending) = notifier.event(&turn("k3", "rev", 4), 0) else {
            panic!("a turn is read first");
        };
        assert_eq!(pending.turn_id(), "k3:4");
        let notice = pending
            .clone()
            .with_text(Some("\n   \n  All tests pass.  \nmore"));
        assert_eq!(notice.title, "rev finished a turn");
        assert_eq!(notice.body, "All tests pass.");
        assert_eq!(notice.turn_id.as_deref(), Some("k3:4"));
        assert_eq!(pending.with_text(None).body, "turn k3:4");
        let long = "x".repeat(500);
        let Step::Turn(pending) = notifier.event(&turn("k3", "rev", 5), 0) else {
            panic!("a second turn");
        };
        let body = pending.with_text(Some(&long)).body;
        assert_eq!(body.chars().count(), MAX_LINE_CHARS + 1);
        assert!(body.ends_with('…'));
    }

    #[test]
    fn a_nonzero_exit_code_is_told() {
        let mut notifier = Notifier::new(Rules::default());
        let event = EventRecord {
            exit_code: Some(2),
            ..turn("k3", "sh", 1)
        };
        let Step::Turn(pending) = notifier.event(&event, 0) else {
            panic!("a turn");
        };
        assert_eq!(pending.with_text(Some("boom")).body, "boom (exit code 2)");
    }

    #[test]
    fn only_the_chosen_sessions_and_kinds_are_told() {
        let rules = Rules {
            sessions: vec!["rev".into(), "9a".into()],
            turns: false,
            ..Rules::default()
        };
        assert_eq!(rules.event_types(), ["session.waiting"]);
        let mut notifier = Notifier::new(rules);
        assert_eq!(notifier.event(&turn("k3", "rev", 1), 0), Step::Nothing);
        let mut other = waiting_event("Bash", "{}");
        other.name = Some("other".into());
        assert_eq!(notifier.event(&other, 0), Step::Nothing);
        let mut by_name = other.clone();
        by_name.name = Some("rev".into());
        assert!(matches!(notifier.event(&by_name, 0), Step::Show(_)));
        let mut by_prefix = other;
        by_prefix.session = Some("9a41".into());
        let Step::Show(notice) = notifier.event(&by_prefix, 0) else {
            panic!("an id prefix chooses the session");
        };
        assert_eq!(notice.body.lines().next(), Some("permission: Bash"));
        let mut all = Notifier::new(Rules::default());
        assert_eq!(
            all.event(&event("session.exited", "k3", "rev", 1), 0),
            Step::Nothing
        );
    }

    #[test]
    fn a_flood_of_turns_is_held_back_and_summed_up() {
        let rules = Rules {
            burst: 2,
            interval_ms: 1000,
            ..Rules::default()
        };
        let mut notifier = Notifier::new(rules);
        let mut shown = 0;
        for n in 0..50 {
            let name = if n % 2 == 0 { "a" } else { "b" };
            if matches!(notifier.event(&turn(name, name, n), 10), Step::Turn(_)) {
                shown += 1;
            }
        }
        assert_eq!(shown, 2, "the burst, then nothing");
        assert_eq!(notifier.tick(500), None, "not yet: no token");
        let summary = notifier.tick(1010).expect("a token came back");
        assert_eq!(summary.kind, Kind::Summary);
        assert_eq!(summary.title, "48 more turns completed");
        assert_eq!(summary.body, "a, b");
        assert_eq!(notifier.tick(5000), None, "nothing held any more");
        // Tokens came back meanwhile: turns are shown again, up to the burst.
        assert!(matches!(
            notifier.event(&turn("a", "a", 60), 5000),
            Step::Turn(_)
        ));
        assert!(matches!(
            notifier.event(&turn("a", "a", 61), 5000),
            Step::Turn(_)
        ));
        assert_eq!(notifier.event(&turn("a", "a", 62), 5000), Step::Nothing);
    }

    #[test]
    fn a_wait_is_never_held_back() {
        let rules = Rules {
            burst: 1,
            interval_ms: 60_000,
            ..Rules::default()
        };
        let mut notifier = Notifier::new(rules);
        assert!(matches!(
            notifier.event(&turn("a", "a", 1), 0),
            Step::Turn(_)
        ));
        for _ in 0..5 {
            assert!(matches!(
                notifier.event(&waiting_event("Bash", "{}"), 1),
                Step::Show(_)
            ));
        }
        assert_eq!(notifier.event(&turn("a", "a", 2), 2), Step::Nothing);
        let summary = notifier.tick(60_001).expect("one token after the interval");
        assert_eq!(summary.title, "1 more turn completed");
    }
}
