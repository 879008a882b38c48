//! The agent's own word (CONTRACTS/TURN.md, "Signal precedence"), one scenario each.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use clippy_turn::{
    AgentHooks, AgentSignal, DetectorConfig, Event, Phase, Preset, Turn, TurnDetector,
};

struct Session {
    detector: TurnDetector,
    events: Vec<Event>,
}

impl Session {
    fn new(hooks: AgentHooks) -> Self {
        let preset = Preset::custom(r"^\$ $").unwrap();
        let mut session = Self {
            detector: TurnDetector::new(DetectorConfig::new(preset).agent_hooks(hooks)),
            events: Vec::new(),
        };
        session.out(b"$ ");
        session
    }

    fn out(&mut self, bytes: &[u8]) -> &mut Self {
        self.events.extend(self.detector.feed_output(bytes));
        self
    }

    fn input(&mut self, bytes: &[u8]) -> &mut Self {
        self.events.extend(self.detector.feed_input(bytes));
        self
    }

    fn ended(&mut self, message: Option<&str>) -> &mut Self {
        let message = message.map(str::to_owned);
        self.events
            .extend(self.detector.feed_agent(AgentSignal::TurnEnded {
                message,
                prompts: Vec::new(),
            }));
        self
    }

    fn settle(&mut self) -> &mut Self {
        self.events.extend(self.detector.settle());
        self
    }

    /// Submits `question`, and the agent echoes it and answers `answer` (no prompt yet).
    fn ask(&mut self, question: &str, answer: &str) -> &mut Self {
        self.input(format!("{question}\r").as_bytes());
        self.out(format!("{question}\r\n{answer}\r\n").as_bytes())
    }

    fn turns(&self) -> Vec<&Turn> {
        completed(&self.events)
    }

    fn count(&self, wanted: fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|e| wanted(e)).count()
    }
}

/// The turns among `events`.
fn completed(events: &[Event]) -> Vec<&Turn> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TurnCompleted(turn) => Some(turn),
            _ => None,
        })
        .collect()
}

fn awaiting(e: &Event) -> bool {
    matches!(e, Event::AwaitingAgreement)
}

fn disagreement(e: &Event) -> bool {
    matches!(e, Event::Disagreement { .. })
}

#[test]
fn with_hooks_a_prompt_waits_for_the_agents_word_and_the_turn_carries_its_message() {
    let mut s = Session::new(AgentHooks::On);
    s.ask("q", "Answer *one*").out(b"$ ");
    assert!(s.turns().is_empty(), "the screen alone does not end it");
    assert_eq!(s.count(awaiting), 1);
    assert_eq!(s.detector.phase(), Phase::Busy);
    s.ended(Some("Answer *one*"));
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].message.as_deref(), Some("Answer *one*"));
    assert!(turns[0].ended_by_agent);
    assert_eq!(
        turns[0].content, b"Answer *one*\r\n",
        "it ends where the screen said"
    );
    assert_eq!(s.count(disagreement), 0);
}

#[test]
fn a_hook_before_the_screen_shows_the_message_ends_the_turn_with_the_chunk_that_shows_it() {
    let mut s = Session::new(AgentHooks::On);
    s.ask("q", "first line");
    s.ended(Some("first line\nlast line"));
    assert!(s.turns().is_empty(), "the last line is not drawn yet");
    assert_eq!(s.count(awaiting), 1);
    s.out(b"last line\r\n");
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].content, b"first line\r\nlast line\r\n");
    assert_eq!(turns[0].text(), "first line\nlast line");
    assert!(turns[0].ended_by_agent);
    // The prompt that follows is the next prompt, not a second end.
    s.out(b"$ ");
    assert_eq!(s.turns().len(), 1);
    assert_eq!(s.detector.phase(), Phase::Idle);
}

#[test]
fn settling_ends_a_turn_no_hook_spoke_for_and_three_in_a_row_mean_the_hooks_are_silent() {
    let mut s = Session::new(AgentHooks::On);
    for n in 1..=3 {
        s.ask("q", &format!("answer {n}")).out(b"$ ");
        assert_eq!(s.turns().len(), n - 1, "turn {n} waits");
        s.settle();
        let turns = s.turns();
        assert_eq!(turns.len(), n);
        assert!(!turns[n - 1].ended_by_agent);
        assert_eq!(turns[n - 1].message, None);
    }
    assert_eq!(s.count(disagreement), 3);
    // Silent hooks: the screen ends the fourth turn by itself.
    s.ask("q", "answer 4").out(b"$ ");
    assert_eq!(s.turns().len(), 4);
    assert_eq!(s.count(awaiting), 3);
    // The agent speaks again: its word is awaited again.
    s.ask("q", "answer 5");
    s.ended(Some("answer 5"));
    assert_eq!(s.turns().len(), 5);
    s.ask("q", "answer 6").out(b"$ ");
    assert_eq!(s.turns().len(), 5, "waiting again");
}

#[test]
fn input_while_the_turn_waits_for_the_agent_ends_it_before_the_input() {
    let mut s = Session::new(AgentHooks::On);
    s.ask("q", "answer").out(b"$ ");
    s.input(b"n");
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].content, b"answer\r\n");
}

#[test]
fn with_only_the_agents_word_the_screen_never_ends_a_turn_and_settling_reports_it() {
    let mut s = Session::new(AgentHooks::Only);
    for _ in 0..5 {
        s.ask("q", "answer").out(b"$ ");
        s.settle();
    }
    assert_eq!(s.turns().len(), 5);
    s.ask("q", "answer").out(b"$ ");
    assert_eq!(s.turns().len(), 5, "still waiting after five silent turns");
    s.ended(None);
    assert_eq!(s.turns().len(), 6);
}

#[test]
fn a_prompt_the_keys_did_not_submit_starts_a_turn_with_the_agents_prompt() {
    let mut s = Session::new(AgentHooks::On);
    let prompt = "Tell me a story".to_owned();
    s.events.extend(
        s.detector
            .feed_agent(AgentSignal::PromptSubmitted { prompt }),
    );
    assert!(
        matches!(&s.events[..], [.., Event::Submitted { input }] if input == "Tell me a story")
    );
    s.out(b"Once upon a time\r\n")
        .ended(Some("Once upon a time"));
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].input, "Tell me a story");
}

#[test]
fn a_turn_end_with_no_turn_running_is_a_disagreement_not_a_turn() {
    let mut s = Session::new(AgentHooks::On);
    s.ended(Some("nothing ran"));
    assert!(s.turns().is_empty());
    assert_eq!(s.count(disagreement), 1);
}

#[test]
fn the_message_is_kept_when_the_screen_showed_no_text() {
    let mut s = Session::new(AgentHooks::On);
    s.input(b"q\r").out(b"q\r\n");
    s.ended(None);
    assert!(
        s.turns().is_empty(),
        "no text and no message: nothing to keep"
    );
    s.ask("q2", "")
        .ended(Some("The answer, drawn nowhere we read"));
    s.settle();
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(
        turns[0].message.as_deref(),
        Some("The answer, drawn nowhere we read")
    );
}

#[test]
fn without_hooks_agent_signals_still_carry_the_message_but_the_screen_ends_turns() {
    let mut s = Session::new(AgentHooks::Off);
    s.ask("q", "answer").out(b"$ ");
    assert_eq!(s.turns().len(), 1);
    assert_eq!(s.count(awaiting), 0);
}

#[test]
fn with_hooks_a_line_submitted_before_any_recognised_prompt_runs_at_once() {
    let preset = Preset::custom(r"^\$ $").unwrap();
    let config = DetectorConfig::new(preset).agent_hooks(AgentHooks::On);
    let mut detector = TurnDetector::new(config);
    let mut events: Vec<Event> = detector
        .feed_output(b"welcome, new prompt style: >> ")
        .collect();
    events.extend(detector.feed_input(b"q\r"));
    events.extend(detector.feed_output(b"q\r\nanswer\r\n>> "));
    let message = Some("answer".to_owned());
    events.extend(detector.feed_agent(AgentSignal::TurnEnded {
        message,
        prompts: Vec::new(),
    }));
    let turns = completed(&events);
    assert_eq!(turns.len(), 1, "{events:?}");
    assert_eq!(turns[0].input, "q");
    assert_eq!(turns[0].message.as_deref(), Some("answer"));
    // The screen could not tell the prompt: the text view keeps what it cannot tell apart.
    assert!(
        turns[0].text().contains("q\nanswer"),
        "{:?}",
        turns[0].text()
    );
}

#[test]
fn a_turn_end_for_other_prompts_is_another_conversations_and_is_ignored() {
    let mut s = Session::new(AgentHooks::On);
    s.ask("what is the capital of France", "Paris.");
    let title = AgentSignal::TurnEnded {
        message: Some("Capital of France".into()),
        prompts: vec!["Generate a concise, single-line task title".into()],
    };
    s.events.extend(s.detector.feed_agent(title));
    assert!(s.turns().is_empty(), "Codex's title thread ends no turn");
    assert_eq!(s.count(disagreement), 0);
    let ours = AgentSignal::TurnEnded {
        message: Some("Paris.".into()),
        prompts: vec!["what is the capital of France".into()],
    };
    s.events.extend(s.detector.feed_agent(ours));
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].message.as_deref(), Some("Paris."));
}

#[test]
fn the_same_answer_still_on_screen_from_before_does_not_end_the_turn() {
    let mut s = Session::new(AgentHooks::On);
    s.ask("q", "Paris.").ended(Some("Paris."));
    assert_eq!(s.turns().len(), 1);
    s.out(b"$ ");
    // Asked again: the old answer is on screen when the agent says it is done.
    s.input(b"q\r").out(b"q\r\n");
    s.ended(Some("Paris."));
    assert_eq!(s.turns().len(), 1, "the new answer is not drawn yet");
    s.out(b"Paris.\r\n");
    let turns = s.turns();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].text(), "Paris.");
}

#[test]
fn an_interrupted_turn_ends_with_the_screen_no_hook_awaited() {
    let mut s = Session::new(AgentHooks::On);
    s.ask("q", "partial").input(b"\x03").out(b"^C\r\n$ ");
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert!(turns[0].interrupted && !turns[0].ended_by_agent);
    assert_eq!(s.count(awaiting), 0);
}

/// Claude Code's titles: busy (braille spinner) and idle (`✳`).
const BUSY: &[u8] = b"\x1b]0;\xe2\xa0\x82 Claude Code\x07";
const IDLE: &[u8] = b"\x1b]0;\xe2\x9c\xb3 Claude Code\x07";

/// A Claude Code detector with hooks, asked `q` at its prompt and drawing `answer` busy.
fn claude_answering(answer: &str) -> (TurnDetector, Vec<Event>) {
    let preset = Preset::named("claude").unwrap();
    let config = DetectorConfig::new(preset).agent_hooks(AgentHooks::On);
    let mut detector = TurnDetector::new(config);
    let mut events: Vec<Event> = detector.feed_output(IDLE).collect();
    events.extend(detector.feed_output("\r\n\u{276f}\u{a0}".as_bytes()));
    events.extend(detector.feed_input(b"q\r"));
    events.extend(detector.feed_output(BUSY));
    events.extend(detector.feed_output(format!("\r\n\u{25cf} {answer}\r\n").as_bytes()));
    (detector, events)
}

#[test]
fn a_busy_title_after_the_agent_said_its_turn_ended_starts_no_turn() {
    let (mut detector, mut events) = claude_answering("Paris.");
    events.extend(detector.feed_agent(AgentSignal::TurnEnded {
        message: Some("Paris.".into()),
        prompts: Vec::new(),
    }));
    // The screen catches up: one more busy title, then idle and the prompt.
    events.extend(detector.feed_output(BUSY));
    events.extend(detector.feed_output(IDLE));
    events.extend(detector.feed_output("\r\n\u{276f}\u{a0}".as_bytes()));
    let turns = completed(&events);
    assert_eq!(turns.len(), 1, "{events:?}");
    assert_eq!(detector.phase(), Phase::Idle);
}

#[test]
fn a_screen_end_the_agent_then_shows_busy_after_was_early_and_the_turn_goes_on() {
    let (mut detector, mut events) = claude_answering("Jupiter is the");
    // Looks idle for a moment, then works on.
    events.extend(detector.feed_output(IDLE));
    events.extend(detector.feed_output("\r\n\u{276f}\u{a0}\r\n".as_bytes()));
    assert!(events.iter().any(|e| matches!(e, Event::AwaitingAgreement)));
    events.extend(detector.feed_output(BUSY));
    events.extend(detector.feed_output("largest planet.\r\n".as_bytes()));
    events.extend(detector.settle());
    assert!(
        !events.iter().any(|e| matches!(e, Event::TurnCompleted(_))),
        "nothing waits to end any more: {events:?}"
    );
    events.extend(detector.feed_agent(AgentSignal::TurnEnded {
        message: Some("Jupiter is the largest planet.".into()),
        prompts: Vec::new(),
    }));
    let turn = *completed(&events).first().expect("a turn");
    // It ends at the agent's word, not where the screen looked idle for a moment.
    let content = String::from_utf8_lossy(&turn.content);
    assert!(content.contains("largest planet."), "{content:?}");
}

/// The one turn, which ended interrupted and not by the agent's word, with the session idle.
fn ended_interrupted_at_its_prompt<'a>(detector: &TurnDetector, events: &'a [Event]) -> &'a Turn {
    let turns = completed(events);
    assert_eq!(turns.len(), 1, "{events:?}");
    assert!(
        turns[0].interrupted && !turns[0].ended_by_agent,
        "{:?}",
        turns[0]
    );
    assert_eq!(detector.phase(), Phase::Idle);
    turns[0]
}

/// A permission refused in Claude Code's dialog: its idle title came while the dialog was
/// drawn (whose menu says busy), then it stops — `⎿  Interrupted · What should Claude do
/// instead?` — and draws its prompt again, with no new title and no `Stop` hook. The turn ends
/// there, interrupted, and the session is idle at its prompt.
#[test]
fn a_turn_the_agent_says_it_stopped_ends_interrupted_at_its_prompt() {
    let (mut detector, mut events) = claude_answering("I will create the marker file.");
    events.extend(detector.feed_output(IDLE));
    events
        .extend(detector.feed_output(
            " Do you want to proceed?\r\n \u{276f} 1. Yes\r\n   2. No\r\n".as_bytes(),
        ));
    events.extend(detector.feed_input(b"2"));
    events.extend(detector.feed_output(
        "\u{25cf} Bash(touch x)\r\n  \u{23bf}  Interrupted \u{b7} What should Claude do instead?\r\n\r\n\u{276f}\u{a0}"
            .as_bytes(),
    ));
    ended_interrupted_at_its_prompt(&detector, &events);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::AwaitingAgreement))
            .count(),
        0
    );
}

/// The same refusal as the agent draws it live: the dialog's menu comes before its idle title
/// (so the title says nothing about a dialog), its hooks say it waits, and after the refusal it
/// writes only the cells that changed — `Interrupted · What should Claude do instead?` after
/// the `⎿` it left in place. The turn ends there, interrupted, its text ending with that line
/// (not the dialog's rows under it).
#[test]
fn a_turn_held_by_a_dialog_the_hooks_reported_ends_where_the_agent_says_it_stopped() {
    let (mut detector, mut events) = claude_answering("I will create the marker file.");
    events.extend(detector.feed_output(
        "\u{25cf} Bash(touch x)\r\n  \u{23bf}  Running\u{2026}\r\n Bash command\r\n   touch x\r\n \u{276f} 1. Yes\r\n   2. No\r\n"
            .as_bytes(),
    ));
    events.extend(detector.feed_agent(AgentSignal::Waiting));
    events.extend(detector.feed_output(IDLE));
    events.extend(detector.feed_input(b"2"));
    // Row 5 (`  ⎿  Running…`) from its sixth column on, then the prompt on row 6, over the
    // dialog's first row (the others are not drawn over yet).
    events.extend(detector.feed_output(
        "\x1b[5;6HInterrupted \u{b7} What should Claude do instead?\x1b[K\x1b[6;1H\u{276f}\u{a0}\x1b[K"
            .as_bytes(),
    ));
    let text = ended_interrupted_at_its_prompt(&detector, &events).text();
    assert!(
        text.trim_end().ends_with("What should Claude do instead?"),
        "{text:?}"
    );
}

/// A dialog allowed: the agent goes busy again and works on, and a line like its stopped line
/// drawn later in the same turn (an old one reprinted) does not end it.
#[test]
fn a_dialog_answered_and_worked_past_does_not_hold_the_turn() {
    let (mut detector, mut events) = claude_answering("I will create the marker file.");
    events.extend(
        detector.feed_output(" Do you want to proceed?\r\n \u{276f} 1. Yes\r\n".as_bytes()),
    );
    events.extend(detector.feed_agent(AgentSignal::Waiting));
    events.extend(detector.feed_output(IDLE));
    events.extend(detector.feed_input(b"1"));
    events.extend(detector.feed_output(BUSY));
    events.extend(detector.feed_output(
        "\u{25cf} Bash(touch y)\r\n  \u{23bf}  Interrupted \u{b7} What should Claude do instead?\r\n\r\n\u{276f}\u{a0}"
            .as_bytes(),
    ));
    assert!(completed(&events).is_empty(), "{events:?}");
    assert_eq!(detector.phase(), Phase::Busy);
}
