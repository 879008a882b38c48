//! The rules of a turn (CONTRACTS/TURN.md), one scenario each.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use clippy_turn::{DetectorConfig, Event, Phase, Preset, Turn, TurnDetector};

/// A detector plus everything it reported, fed as a session would be.
struct Session {
    detector: TurnDetector,
    events: Vec<Event>,
}

impl Session {
    fn new(preset: Preset) -> Self {
        Self::with(DetectorConfig::new(preset))
    }

    fn with(config: DetectorConfig) -> Self {
        Self {
            detector: TurnDetector::new(config),
            events: Vec::new(),
        }
    }

    fn out(&mut self, bytes: &[u8]) -> &mut Self {
        self.events.extend(self.detector.feed_output(bytes));
        self
    }

    fn input(&mut self, bytes: &[u8]) -> &mut Self {
        self.events.extend(self.detector.feed_input(bytes));
        self
    }

    /// Each completed turn as its input and its text view.
    fn inputs_and_texts(&self) -> Vec<(String, String)> {
        self.turns()
            .iter()
            .map(|t| (t.input.clone(), t.text()))
            .collect()
    }

    fn turns(&self) -> Vec<&Turn> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::TurnCompleted(turn) => Some(turn),
                _ => None,
            })
            .collect()
    }
}

fn shell() -> Preset {
    Preset::custom(r"^\$ $").unwrap()
}

#[test]
fn first_prompt_is_ready_not_a_turn() {
    let mut s = Session::new(shell());
    s.out(b"welcome\r\n$ ");
    assert!(matches!(s.events[0], Event::Ready { offset: 9 }));
    assert!(s.turns().is_empty());
    assert_eq!(s.detector.phase(), Phase::Idle);
}

#[test]
fn a_turn_excludes_the_echo_and_the_prompt_line_and_is_byte_exact() {
    let mut s = Session::new(shell());
    s.out(b"$ ")
        .input(b"ls\r")
        .out(b"ls\r\n\x1b[34mdir\x1b[0m  file\r\n$ ");
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].content, b"\x1b[34mdir\x1b[0m  file\r\n");
    assert_eq!(turns[0].input, "ls");
    assert_eq!((turns[0].start, turns[0].end), (6, 26));
    assert!(!turns[0].interrupted && !turns[0].truncated);
    assert_eq!(turns[0].text(), "dir  file");
}

#[test]
fn echo_typed_key_by_key_is_excluded_too() {
    let mut s = Session::new(shell());
    s.out(b"$ ");
    for key in [b'e', b'c', b'h', b'o'] {
        s.input(&[key]).out(&[key]);
    }
    s.input(b"\r").out(b"\r\n\r\n$ ");
    assert!(s.turns().is_empty(), "no output: no turn");
    s.input(b"date\r").out(b"date\r\nMon\r\n$ ");
    assert_eq!(s.turns()[0].content, b"Mon\r\n");
}

#[test]
fn consecutive_prompts_without_output_make_no_empty_turn() {
    let mut s = Session::new(shell());
    s.out(b"$ ")
        .input(b"\r")
        .out(b"\r\n$ ")
        .input(b"\r")
        .out(b"\r\n$ ");
    assert!(s.turns().is_empty());
    let prompts = s
        .events
        .iter()
        .filter(|e| matches!(e, Event::Prompt { .. }))
        .count();
    assert_eq!(prompts, 3, "{:?}", s.events);
}

#[test]
fn ctrl_c_marks_the_turn_interrupted() {
    let mut s = Session::new(shell());
    s.out(b"$ ")
        .input(b"yes\r")
        .out(b"yes\r\ny\r\ny\r\n")
        .input(b"\x03")
        .out(b"^C\r\n$ ");
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert!(turns[0].interrupted);
    assert_eq!(turns[0].content, b"y\r\ny\r\n^C\r\n");
    // The next turn is not interrupted.
    s.input(b"true\r").out(b"true\r\nok\r\n$ ");
    assert!(!s.turns()[1].interrupted);
}

#[test]
fn a_prompt_pattern_matches_anywhere_in_the_line_on_stripped_text() {
    let mut s = Session::new(Preset::custom(r"\(venv\) \S+>").unwrap());
    s.out(b"\x1b[1m(venv)\x1b[0m \x1b[32mC:>\x1b[0m ");
    assert!(matches!(s.events[0], Event::Ready { .. }));
}

#[test]
fn multi_line_input_in_a_repl_is_one_turn() {
    let mut s = Session::new(Preset::named("python").unwrap());
    s.out(b">>> ")
        .input(b"for i in range(2):\r")
        .out(b"for i in range(2):\r\n... ");
    s.input(b"  print(i)\r")
        .out(b"  print(i)\r\n... ")
        .input(b"\r")
        .out(b"\r\n0\r\n1\r\n>>> ");
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].content, b"0\r\n1\r\n");
    assert_eq!(turns[0].input, "for i in range(2):\n  print(i)");
}

#[test]
fn a_busy_line_vetoes_the_prompt_drawn_below_it() {
    let preset = Preset::from_spec(&clippy_turn::PresetSpec {
        name: "tui",
        description: "test",
        prompt: Some(r"^│ > "),
        busy_line: Some(r"esc to interrupt"),
        idle_line: None,
        done_line: None,
        osc_idle: None,
        osc_busy: None,
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: true,
        require_busy: false,
        chrome: None,
        redraws_live_lines: false,
        waiting_line: None,
        stopped_line: None,
    })
    .unwrap();
    let frame = |status: &str, body: &str| {
        format!("\x1b[H\x1b[2J{body}\x1b[5;1H{status}\x1b[6;1H│ > \x1b[6;20H│").into_bytes()
    };
    let mut s = Session::new(preset);
    s.out(&frame("", "")).input(b"hi\r");
    s.out(&frame("⠋ Working (esc to interrupt)", "thinking"));
    assert!(
        s.turns().is_empty(),
        "busy frame ended the turn: {:?}",
        s.events
    );
    s.out(&frame("", "Hello there"));
    assert_eq!(s.turns().len(), 1);
    assert!(s.turns()[0].text().contains("Hello there"));
}

#[test]
fn osc_133_marks_are_authoritative_and_carry_exit_code_and_cwd() {
    let prompt = b"\x1b]133;D;1\x07\x1b]7;file://host/tmp/a%20b\x07\x1b]133;A\x07> \x1b]133;B\x07";
    // A preset whose line pattern would match the output: OSC 133 overrides it.
    let mut s = Session::new(Preset::custom("^out").unwrap());
    s.out(b"\x1b]133;A\x07> \x1b]133;B\x07");
    assert!(matches!(s.events[0], Event::Ready { .. }));
    s.input(b"false\r")
        .out(b"false\r\n\x1b]133;C\x07out 1\r\nout 2\r\n")
        .out(prompt);
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].content, b"out 1\r\nout 2\r\n");
    assert_eq!(turns[0].exit_code, Some(1));
    assert_eq!(turns[0].cwd.as_deref(), Some("/tmp/a b"));
    assert_eq!(s.detector.cwd(), Some("/tmp/a b"));
    // A command with no output is no turn, but its prompt still reports the exit code.
    s.input(b"true\r")
        .out(b"true\r\n\x1b]133;C\x07\x1b]133;D;0\x07\x1b]133;A\x07> ");
    assert_eq!(s.turns().len(), 1);
    assert!(
        matches!(
            s.events.last(),
            Some(Event::Prompt {
                exit_code: Some(0),
                ..
            })
        ),
        "{:?}",
        s.events.last()
    );
}

#[test]
fn with_osc_133_an_answer_read_by_a_command_is_not_the_next_turns_input() {
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(b"\x1b]133;A\x07$ \x1b]133;B\x07");
    // A program that asks a question; the line typed while it runs is its answer.
    s.input(b"./guess\r")
        .out(b"./guess\r\n\x1b]133;C\x07Guess: ")
        .input(b"7\r")
        .out(b"7\r\nCorrect!\r\n\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07");
    // The next line typed at the prompt is the next turn's input, not the answer.
    s.input(b"./guess\r")
        .out(b"./guess\r\n\x1b]133;C\x07Guess: ")
        .input(b"11\r")
        .out(b"11\r\nOut of range\r\n\x1b]133;D;2\x07\x1b]133;A\x07$ \x1b]133;B\x07");
    let inputs: Vec<&str> = s.turns().iter().map(|t| t.input.as_str()).collect();
    assert_eq!(inputs, ["./guess", "./guess"]);
}

#[test]
fn an_idle_osc_arms_and_the_prompt_line_completes() {
    let preset = Preset::named("claude").unwrap();
    let mut s = Session::new(preset);
    s.out("\x1b]0;✳ Claude Code\x07❯\u{a0}\r\n".as_bytes());
    assert!(matches!(s.events[0], Event::Ready { .. }));
    s.input(b"hello\r");
    s.out(
        "\x1b]0;⠂ Claude Code\x07\x1b[2A❯ hello\r\n\x1b[1B✽ Wibbling… (1s)\r\n❯\u{a0}\r\n"
            .as_bytes(),
    );
    assert!(s.turns().is_empty(), "busy: {:?}", s.events);
    // The idle title comes mid-frame, before the reply is drawn.
    s.out("\x1b[3A\x1b]0;✳ Claude Code\x07● Hi there.\r\n\x1b[1B❯\u{a0}\r\n".as_bytes());
    let turns = s.turns();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].text(), "● Hi there.");
}

/// Codex, ready, streaming the first line of its answer to `tell me` in a synchronized frame.
fn codex_telling_a_story() -> Session {
    let mut s = Session::new(Preset::named("codex").unwrap());
    s.out(b"\x1b]7501;state=idle\x1b\\\x1b[?2026h\x1b[H\x1b[J\xe2\x80\xba \x1b[?2026l");
    s.input(b"tell me\r");
    s.out(b"\x1b]7501;state=working\x1b\\\x1b[?2026h\x1b[H\x1b[J\xe2\x80\xba tell me\r\n\xe2\x80\xa2 Slow line 1\x1b[?2026l");
    s
}

/// One interrupted turn: the streamed line and Codex's notice.
fn assert_interrupted_with_its_notice(s: &Session) {
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert!(turns[0].interrupted);
    assert_eq!(
        turns[0].text(),
        "\u{2022} Slow line 1\n\u{25a0} Conversation interrupted"
    );
}

#[test]
fn a_turn_that_ends_inside_a_synchronized_frame_ends_with_the_frame() {
    let mut s = codex_telling_a_story();
    // Ctrl+C: Codex says done, then draws its notice in the same frame.
    s.input(b"\x03");
    s.out(b"\x1b[?2026h\x1b]7501;state=done\x1b\\\x1b[3;1H\xe2\x96\xa0 Conversation interrupted");
    assert!(
        s.turns().is_empty(),
        "the frame is still open: {:?}",
        s.events
    );
    s.out(b"\x1b[?2026l");
    assert_interrupted_with_its_notice(&s);
}

#[test]
fn codex_interrupted_ends_with_its_idle_mark_even_without_redrawing_its_prompt() {
    let mut s = codex_telling_a_story();
    s.input(b"\x03");
    // Only the changed row is drawn, then the idle mark; the composer is not drawn again.
    s.out(b"\x1b[?2026h\x1b[3;1H\xe2\x96\xa0 Conversation interrupted\x1b[?2026l\x1b]7501;state=idle\x1b\\");
    assert_interrupted_with_its_notice(&s);
}

/// Codex at 80x24 answering `tell me` while `what is the largest planet` is typed into its
/// composer (the bottom rows, each key a frame) and submitted: it drops the first stream, draws
/// the question's echo under what it had drawn of the reply, and answers it in a later frame,
/// before its one done mark. (Each frame draws the rows it changed: the echo's, the row under it.)
fn codex_steered(hooks: clippy_turn::AgentHooks) -> Session {
    let mut s =
        Session::with(DetectorConfig::new(Preset::named("codex").unwrap()).agent_hooks(hooks));
    s.out(b"\x1b]7501;state=idle\x1b\\\x1b[?2026h\x1b[H\x1b[J\x1b[23;1H\xe2\x80\xba Ask Codex to do anything\x1b[?2026l");
    s.input(b"tell me\r");
    s.out(b"\x1b]7501;state=working\x1b\\\x1b[?2026h\x1b[H\x1b[J\xe2\x80\xba tell me\x1b[3;1H\xe2\x80\xa2 Slow line 1\x1b[5;1H  Slow line 2\x1b[21;1H\xe2\x80\xa2 Working (1s \xe2\x80\xa2 esc to interrupt)\x1b[23;1H\xe2\x80\xba Ask Codex to do anything\x1b[?2026l");
    let question = "what is the largest planet";
    for (i, _) in question.char_indices() {
        s.input(&question.as_bytes()[i..=i]);
        s.out(
            format!(
                "\x1b[?2026h\x1b[23;1H\x1b[2K\u{203a} {}\x1b[?2026l",
                &question[..=i]
            )
            .as_bytes(),
        );
    }
    s.input(b"\r");
    s.out(b"\x1b[?2026h\x1b[23;1H\x1b[2K\xe2\x80\xba Ask Codex to do anything\x1b[7;1H\xe2\x80\xba what is the largest planet\x1b[8;1H \x1b[?2026l");
    s.out(b"\x1b[?2026h\x1b[9;1H\xe2\x80\xa2 Jupiter is the largest planet.\x1b[10;1H \x1b[?2026l");
    s.out(b"\x1b]7501;state=done\x1b\\");
    s
}

#[test]
fn a_question_codex_takes_while_it_answers_ends_the_answer_it_cut_short() {
    let s = codex_steered(clippy_turn::AgentHooks::Off);
    assert_eq!(
        s.inputs_and_texts(),
        [
            (
                "tell me".into(),
                "\u{2022} Slow line 1\n\n  Slow line 2".into()
            ),
            (
                "what is the largest planet".into(),
                "\u{2022} Jupiter is the largest planet.".into()
            ),
        ],
        "{:?}",
        s.events
    );
}

#[test]
fn codexs_one_turn_end_report_after_it_steered_is_the_typed_questions() {
    let mut s = codex_steered(clippy_turn::AgentHooks::On);
    // The answer it cut short ended at the echo: Codex reports no end for it.
    assert_eq!(s.turns().len(), 1, "{:?}", s.events);
    s.events
        .extend(s.detector.feed_agent(clippy_turn::AgentSignal::TurnEnded {
            message: Some("Jupiter is the largest planet.".into()),
            prompts: vec!["what is the largest planet".into()],
        }));
    let turns = s.turns();
    assert_eq!(turns.len(), 2, "{:?}", s.events);
    assert_eq!(turns[0].input, "tell me");
    assert!(!turns[0].ended_by_agent);
    assert_eq!(turns[1].input, "what is the largest planet");
    assert!(turns[1].ended_by_agent);
    assert_eq!(turns[1].text(), "\u{2022} Jupiter is the largest planet.");
}

#[test]
fn a_frame_that_is_never_closed_does_not_hold_the_turn() {
    let mut s = Session::new(Preset::named("codex").unwrap());
    s.out(b"\x1b]7501;state=idle\x1b\\");
    s.input(b"tell me\r");
    s.out(b"\x1b]7501;state=working\x1b\\\xe2\x80\xba tell me\r\n\xe2\x80\xa2 answer\r\n");
    s.out(b"\x1b[?2026h\x1b]7501;state=done\x1b\\");
    assert!(s.turns().is_empty());
    s.out(&b"x".repeat(1024 * 1024 + 1));
    assert_eq!(s.turns().len(), 1, "{:?}", s.events);
}

#[test]
fn a_key_a_dialog_took_does_not_count_as_typing_when_the_idle_screen_ends_the_turn() {
    // Claude Code under tmux: no status title after the first, its footer says when it is idle.
    let mut s = Session::new(Preset::named("claude").unwrap());
    s.out("\x1b]0;✳ Claude Code\x07❯\u{a0}\r\n  ⏵⏵ auto mode on\r\n".as_bytes());
    s.input(b"do it\r");
    s.out("\x1b[2J\x1b[H❯ do it\r\n● Bash(touch x)\r\n❯ 1. Yes\r\n  2. No\r\n  ⏵⏵ auto mode on · esc to interrupt\r\n".as_bytes());
    // `1` answers the dialog without Enter: the dialog takes it, the input box never shows it.
    s.input(b"1");
    s.out("\x1b[2J\x1b[H❯ do it\r\n● Done.\r\n\r\n❯\u{a0}\r\n  ⏵⏵ auto mode on\r\n".as_bytes());
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].text(), "● Done.");
}

#[test]
fn a_question_a_tui_dropped_at_start_up_gives_way_to_the_next() {
    let mut s = Session::new(Preset::named("gemini").unwrap());
    s.out("Gemini CLI v0.61.0\r\n".as_bytes());
    // Typed before the agent is ready: it waits, and the agent never runs it.
    s.input(b"too early\r");
    s.out(
        "\x1b]0;◇  Ready\x07\x1b[2J\x1b[HGemini CLI v0.61.0\r\n\r\n > Type your message\r\n"
            .as_bytes(),
    );
    s.input(b"what is the capital\r");
    s.out("\x1b]0;✦  Working\x07\x1b[2J\x1b[H > what is the capital\r\n\r\n⠋ Thinking (esc to cancel)\r\n".as_bytes());
    s.out("\x1b[2J\x1b[H > what is the capital\r\n\r\n✦ Paris.\r\n\r\n > Type your message\r\n\x1b]0;◇  Ready\x07".as_bytes());
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].input, "what is the capital");
    assert_eq!(turns[0].text(), "✦ Paris.");
}

#[test]
fn a_question_typed_ahead_is_sent_under_this_replys_done_line_not_an_older_one() {
    // Claude Code under tmux: no status titles; its footer and `✻ … · done` lines say the rest.
    let mut s = Session::new(Preset::named("claude").unwrap());
    let idle = "❯\u{a0}\r\n  ⏵⏵ auto mode on\r\n";
    let busy = "✽ Working…\r\n  ⏵⏵ auto mode on · esc to interrupt\r\n";
    s.out(format!("\x1b]0;✳ Claude Code\x07{idle}").as_bytes());
    let old = "● X.\r\n✻ Baked for 1s · done 10:00 AM\r\n❯ q\r\n● A.\r\n✻ Brewed for 1s · done 10:00 AM\r\n";
    s.input(b"q\r");
    s.out(
        format!("\x1b[2J\x1b[H● X.\r\n✻ Baked for 1s · done 10:00 AM\r\n❯ q\r\n{busy}").as_bytes(),
    );
    s.out(format!("\x1b[2J\x1b[H{old}{idle}").as_bytes());
    assert_eq!(s.turns().len(), 1, "{:?}", s.events);
    s.input(b"story\r");
    s.out(format!("\x1b[2J\x1b[H{old}❯ story\r\n● Line 1\r\n{busy}❯\u{a0}q\r\n").as_bytes());
    // `q` again, typed ahead while the story streams.
    s.input(b"q\r");
    s.out(
        format!(
            "\x1b[2J\x1b[H{old}❯ story\r\n● Line 1\r\n  Line 2\r\n❯ q\r\n  ⎿  Queued\r\n{busy}"
        )
        .as_bytes(),
    );
    assert_eq!(
        s.turns().len(),
        1,
        "an older done line over an older `❯ q` sends nothing"
    );
    s.out(format!("\x1b[2J\x1b[H{old}❯ story\r\n● Line 1\r\n  Line 2\r\n  Line 3\r\n✻ Churned for 9s · done 10:01 AM\r\n❯ q\r\n{busy}").as_bytes());
    s.out(format!("\x1b[2J\x1b[H❯ story\r\n● Line 1\r\n  Line 2\r\n  Line 3\r\n✻ Churned for 9s · done 10:01 AM\r\n❯ q\r\n● A.\r\n✻ Baked for 1s · done 10:01 AM\r\n{idle}").as_bytes());
    let turns = s.turns();
    assert_eq!(turns.len(), 3, "{:?}", s.events);
    assert_eq!(turns[1].input, "story");
    assert_eq!(turns[1].text(), "● Line 1\n  Line 2\n  Line 3");
    assert_eq!(turns[2].input, "q");
    assert_eq!(turns[2].text(), "● A.");
}

#[test]
fn typing_ahead_holds_the_idle_screen_check_while_the_tui_is_still_drawing_the_keys() {
    let mut s = Session::new(Preset::named("claude").unwrap());
    s.out("\x1b]0;✳ Claude Code\x07❯\u{a0}\r\n  ⏵⏵ auto mode on\r\n".as_bytes());
    s.input(b"story\r");
    s.out("\x1b[2J\x1b[H❯ story\r\n● Line 1\r\n✽ Working…\r\n❯\u{a0}\r\n  ⏵⏵ auto mode on · esc to interrupt\r\n".as_bytes());
    // A person types ahead; the agent hides its busy hints and has drawn only part of the keys.
    s.input(b"what is");
    s.out(
        "\x1b[2J\x1b[H❯ story\r\n● Line 1\r\n  Line 2\r\n❯\u{a0}what i\r\n  ⏵⏵ auto mode on\r\n"
            .as_bytes(),
    );
    assert!(
        s.turns().is_empty(),
        "the story is still being told: {:?}",
        s.events
    );
}

#[test]
fn keys_typed_across_a_replys_end_do_not_hold_the_turn_once_its_done_line_is_drawn() {
    // Claude Code under tmux: the reply is over (`✻ … · done`) while a person is typing the
    // next question; the turn ends there, not at the Enter.
    let mut s = Session::new(Preset::named("claude").unwrap());
    s.out("\x1b]0;✳ Claude Code\x07● X.\r\n✻ Baked for 1s · done 10:00 AM\r\n❯\u{a0}\r\n  ⏵⏵ auto mode on\r\n".as_bytes());
    s.input(b"story\r");
    s.out("\x1b[2J\x1b[H❯ story\r\n● Line 1\r\n✽ Working…\r\n❯\u{a0}\r\n  ⏵⏵ auto mode on · esc to interrupt\r\n".as_bytes());
    s.input(b"what is");
    s.out(
        "\x1b[2J\x1b[H❯ story\r\n● Line 1\r\n  Line 2\r\n❯\u{a0}what is\r\n  ⏵⏵ auto mode on\r\n"
            .as_bytes(),
    );
    assert!(s.turns().is_empty(), "still telling: {:?}", s.events);
    s.out("\x1b[2J\x1b[H❯ story\r\n● Line 1\r\n  Line 2\r\n✻ Churned for 3s · done 10:01 AM\r\n❯\u{a0}what is\r\n  ⏵⏵ auto mode on\r\n".as_bytes());
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].text(), "● Line 1\n  Line 2");
}

#[test]
fn long_turns_are_truncated_to_the_limit_and_flagged() {
    let mut s = Session::with(DetectorConfig::new(shell()).max_turn_bytes(10));
    s.out(b"$ ")
        .input(b"cat\r")
        .out(b"cat\r\n0123456789abcdef\r\n$ ");
    let turns = s.turns();
    assert_eq!(turns[0].content, b"0123456789");
    assert!(turns[0].truncated);
    assert_eq!(turns[0].end - turns[0].start, 18);
}

#[test]
fn bracketed_paste_mode_is_tracked_and_enter_inside_a_paste_is_not_a_submit() {
    let mut s = Session::new(shell());
    s.out(b"\x1b[?2004h$ ");
    assert!(s.detector.bracketed_paste());
    s.input(b"\x1b[200~echo a\recho b\x1b[201~");
    assert!(
        !s.events
            .iter()
            .any(|e| matches!(e, Event::Submitted { .. }))
    );
    s.input(b"\r");
    assert!(
        s.events
            .iter()
            .any(|e| matches!(e, Event::Submitted { input } if input == "echo a\necho b"))
    );
    s.out(b"\x1b[?2004l");
    assert!(s.events.contains(&Event::BracketedPaste { enabled: false }));
}

#[test]
fn the_text_view_keeps_a_reply_longer_than_the_screen() {
    let mut s = Session::with(DetectorConfig::new(shell()).size(40, 5).unwrap());
    s.out(b"old line\r\n$ ")
        .input(b"seq 20\r")
        .out(b"seq 20\r\n");
    for i in 1..=20 {
        s.out(format!("{i}\r\n").as_bytes());
    }
    s.out(b"$ ");
    let text = s.turns()[0].text();
    let want: Vec<String> = (1..=20).map(|i| i.to_string()).collect();
    assert_eq!(text, want.join("\n"));
}

#[test]
fn a_resize_during_a_turn_is_replayed_into_the_text_view() {
    let mut s = Session::with(DetectorConfig::new(shell()).size(60, 10).unwrap());
    s.out(b"$ ").input(b"draw\r").out(b"draw\r\n");
    // A TUI draws five rows by absolute position on a 10-row screen...
    s.out(b"\x1b[3;1Hline 3\x1b[4;1Hline 4\x1b[5;1Hline 5\x1b[6;1Hline 6\x1b[7;1Hline 7\r\n");
    // ...then the terminal shrinks to 3 rows before the prompt: rendering everything at 3 rows
    // would clamp those moves onto the last row and lose lines.
    s.detector.resize(60, 3).unwrap();
    s.out(b"$ ");
    assert_eq!(
        s.turns()[0].text(),
        "line 3\nline 4\nline 5\nline 6\nline 7"
    );
}

#[test]
fn lines_typed_ahead_are_attributed_to_the_commands_that_run_them() {
    let prompt = b"\x1b]133;A\x07$ \x1b]133;B\x07";
    let mut s = Session::new(Preset::named("shell").unwrap());
    // Everything is piped in before the shell has printed anything.
    s.input(b"echo hi\nstty size\nexit 0\n");
    s.out(prompt)
        .out(b"echo hi\r\n\x1b]133;C\x07hi\r\n\x1b]133;D;0\x07");
    s.out(prompt)
        .out(b"stty size\r\n\x1b]133;C\x0720 90\r\n\x1b]133;D;0\x07")
        .out(prompt);
    let turns = s.turns();
    assert_eq!(turns.len(), 2);
    assert_eq!(
        (turns[0].input.as_str(), &turns[0].content[..]),
        ("echo hi", &b"hi\r\n"[..])
    );
    assert_eq!(
        (turns[1].input.as_str(), &turns[1].content[..]),
        ("stty size", &b"20 90\r\n"[..])
    );
}

#[test]
fn a_reply_that_repeats_an_earlier_one_is_still_its_text() {
    let mut s = Session::new(shell());
    s.out(b"$ ");
    for _ in 0..3 {
        s.input(b"echo OK\r").out(b"echo OK\r\nOK\r\n$ ");
    }
    let texts: Vec<String> = s.turns().iter().map(|t| t.text()).collect();
    assert_eq!(texts, ["OK", "OK", "OK"]);
}

#[test]
fn a_repl_answering_with_its_input_is_a_turn() {
    // `>>> 42` evaluates to `42`: the echo is on the prompt line, the bare `42` below is the
    // answer. A decorated line shaped like the echo is still echo, as before.
    let mut s = Session::new(Preset::named("python").unwrap());
    s.out(b">>> ").input(b"42\r").out(b"42\r\n42\r\n>>> ");
    s.input(b"'x'\r").out(b"'x'\r\n'x'\r\n>>> ");
    s.input(b"7\r").out(b"7\r\n... 7\r\n>>> ");
    let turns = s.turns();
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert_eq!(turns[0].content, b"42\r\n");
    assert_eq!(turns[0].text(), "42");
    assert_eq!(turns[1].content, b"'x'\r\n");
    assert_eq!(turns[1].text(), "'x'");
}

#[test]
fn a_dialog_question_mid_turn_is_reported_once_until_keys_and_ends_nothing() {
    let mut s = Session::new(Preset::named("codex").unwrap());
    s.out("› ".as_bytes()).input(b"make the file\r");
    let question = "  Would you like to run the following command?\r\n";
    s.out(format!("\r\n• Running touch x\r\n{question}  › 1. Yes, proceed (y)\r\n").as_bytes());
    // Redrawn while it waits: still the one question.
    s.out(question.as_bytes());
    let asked = |s: &Session| {
        s.events
            .iter()
            .filter(|e| matches!(e, Event::Asking { question } if question == "Would you like to run the following command?"))
            .count()
    };
    assert_eq!(asked(&s), 1, "{:?}", s.events);
    assert!(s.turns().is_empty(), "asking ends no turn");
    assert_eq!(s.detector.phase(), Phase::Busy);
    // Answered, then asked again: a second question.
    s.input(b"y").out(question.as_bytes());
    assert_eq!(asked(&s), 2);
}

#[test]
fn aiders_question_redrawn_with_its_answer_asks_no_more() {
    let mut s = Session::new(Preset::named("aider").unwrap());
    s.out(b"> ").input(b"make the file\r");
    let question = "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: ";
    s.out(format!("make the file\r\n\r\ntouch x\r\n{question}").as_bytes());
    s.input(b"y").out(format!("\r{question}y").as_bytes());
    s.input(b"\r").out(b"\r\n\r\nRunning touch x\r\n");
    let asked: Vec<&Event> = s
        .events
        .iter()
        .filter(|e| matches!(e, Event::Asking { .. }))
        .collect();
    assert_eq!(asked.len(), 1, "{:?}", s.events);
}

#[test]
fn a_program_that_reads_lines_and_never_answers_holds_a_bounded_input() {
    // A REPL's continuation lines extend the turn's input until output comes; a program that
    // reads on and never answers (a sink for pastes) gets the first 64 of them, not all.
    let mut s = Session::new(Preset::named("python").unwrap());
    s.out(b">>> ");
    for n in 0..1000 {
        s.input(format!("line {n}\r").as_bytes());
    }
    s.out(b"line 999\r\nanswer\r\n>>> ");
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    let lines: Vec<&str> = turns[0].input.lines().collect();
    assert_eq!(lines.len(), 64);
    assert_eq!(lines[0], "line 0");
    assert_eq!(lines[63], "line 63");
}

/// bash without shell integration, its prompt coloured and a root's (`# `).
const ROOT_PROMPT: &[u8] = b"\x1b[?2004h\x1b[1;31mroot@box\x1b[0m:~# ";

#[test]
fn a_command_typed_ahead_while_the_last_one_runs_is_a_turn_of_its_own() {
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(ROOT_PROMPT);
    s.input(b"sleep 3; echo first-21\r")
        .out(b"sleep 3; echo first-21\r\n\x1b[?2004l\r");
    // Typed while it sleeps: the terminal echoes it on a row of its own (cooked mode).
    for key in b"echo second-42" {
        s.input(&[*key]).out(&[*key]);
    }
    s.input(b"\r").out(b"\r\n");
    // Then the first command's output, and readline echoes the line again behind the prompt.
    s.out(b"first-21\r\n")
        .out(ROOT_PROMPT)
        .out(b"echo second-42\r\n\x1b[?2004l\rsecond-42\r\n")
        .out(ROOT_PROMPT);
    let turns = s.turns();
    let shape: Vec<(&str, String)> = turns.iter().map(|t| (t.input.as_str(), t.text())).collect();
    assert_eq!(
        shape,
        [
            ("sleep 3; echo first-21", "first-21".to_owned()),
            ("echo second-42", "second-42".to_owned())
        ]
    );
    assert_eq!(turns[1].content, b"second-42\r\n");
}

#[test]
fn a_line_typed_ahead_in_the_middle_of_a_repls_output_is_not_its_text() {
    let mut s = Session::new(Preset::named("python").unwrap());
    s.out(b">>> ")
        .input(b"print(1); time.sleep(3); print(2)\r")
        .out(b"print(1); time.sleep(3); print(2)\r\n1\r\n");
    s.input(b"print(3)\r").out(b"print(3)\r\n");
    s.out(b"2\r\n>>> print(3)\r\n3\r\n>>> ");
    let turns = s.turns();
    let shape: Vec<(&str, String)> = turns.iter().map(|t| (t.input.as_str(), t.text())).collect();
    assert_eq!(
        shape,
        [
            ("print(1); time.sleep(3); print(2)", "1\n2".to_owned()),
            ("print(3)", "3".to_owned())
        ]
    );
}

#[test]
fn output_glued_behind_the_echo_of_a_line_typed_ahead_is_the_commands_text() {
    // The line is typed while the command runs, its Enter only after the command wrote on:
    // the terminal echoed the keys where the cursor stood, and the output went on right
    // behind them on the same row (`echo second-42first-21`).
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(ROOT_PROMPT);
    s.input(b"sleep 3; echo first-21\r")
        .out(b"sleep 3; echo first-21\r\n\x1b[?2004l\r");
    for key in b"echo second-42" {
        s.input(&[*key]).out(&[*key]);
    }
    s.out(b"first-21\r\n");
    s.input(b"\r").out(b"\r\n");
    s.out(ROOT_PROMPT)
        .out(b"echo second-42\r\n\x1b[?2004l\rsecond-42\r\n")
        .out(ROOT_PROMPT);
    assert_eq!(
        s.inputs_and_texts(),
        [
            ("sleep 3; echo first-21".to_owned(), "first-21".to_owned()),
            ("echo second-42".to_owned(), "second-42".to_owned())
        ]
    );
    // The same in a REPL, the answer's row shared with the echo.
    let mut s = Session::new(Preset::named("python").unwrap());
    s.out(b">>> ")
        .input(b"print(1); time.sleep(3); print(2)\r")
        .out(b"print(1); time.sleep(3); print(2)\r\n1\r\n");
    s.input(b"print(3)").out(b"print(3)");
    s.out(b"2\r\n");
    s.input(b"\r").out(b"\r\n");
    s.out(b">>> print(3)\r\n3\r\n>>> ");
    assert_eq!(
        s.inputs_and_texts(),
        [
            (
                "print(1); time.sleep(3); print(2)".to_owned(),
                "1\n2".to_owned()
            ),
            ("print(3)".to_owned(), "3".to_owned())
        ]
    );
}

#[test]
fn two_commands_sent_in_one_write_are_two_turns() {
    // Both lines reach bash before it reads the first: nothing echoes the second until
    // readline reads it behind the next prompt.
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(ROOT_PROMPT);
    s.input(b"echo one\recho two\r")
        .out(b"echo one\r\n\x1b[?2004l\rone\r\n")
        .out(ROOT_PROMPT)
        .out(b"echo two\r\n\x1b[?2004l\rtwo\r\n")
        .out(ROOT_PROMPT);
    assert_eq!(
        s.inputs_and_texts(),
        [
            ("echo one".to_owned(), "one".to_owned()),
            ("echo two".to_owned(), "two".to_owned())
        ]
    );
}

#[test]
fn a_command_interrupted_before_it_printed_anything_is_an_interrupted_turn() {
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(ROOT_PROMPT);
    s.input(b"sleep 10\r").out(b"sleep 10\r\n\x1b[?2004l\r");
    s.input(b"\x03").out(b"^C").out(b"\r\n").out(ROOT_PROMPT);
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert!(turns[0].interrupted);
    assert_eq!(turns[0].input, "sleep 10");
    assert_eq!(turns[0].content, b"^C\r\n");
    assert_eq!(turns[0].text(), "");
    // Ctrl+C at a prompt, with no command running, is no turn.
    s.input(b"\x03").out(b"^C\r\n").out(ROOT_PROMPT);
    assert_eq!(s.turns().len(), 1);
}

#[test]
fn a_line_typed_ahead_then_interrupted_is_dropped_with_its_echo() {
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(ROOT_PROMPT);
    s.input(b"echo started; sleep 10\r")
        .out(b"echo started; sleep 10\r\n\x1b[?2004l\rstarted\r\n");
    s.input(b"echo dropped\r").out(b"echo dropped\r\n");
    s.input(b"\x03").out(b"^C\r\n").out(ROOT_PROMPT);
    s.input(b"echo after\r")
        .out(b"echo after\r\n\x1b[?2004l\rafter\r\n")
        .out(ROOT_PROMPT);
    let shape: Vec<(String, String, bool)> = s
        .turns()
        .iter()
        .map(|t| (t.input.clone(), t.text(), t.interrupted))
        .collect();
    assert_eq!(
        shape,
        [
            (
                "echo started; sleep 10".to_owned(),
                "started".to_owned(),
                true
            ),
            ("echo after".to_owned(), "after".to_owned(), false)
        ]
    );
}

/// bash's two-line prompt: `root@box /dir` over `# `.
const TWO_LINE_PROMPT: &[u8] = b"\x1b[?2004h\x1b[1;32mroot@box\x1b[0m /tmp\r\r\n# ";

#[test]
fn a_two_line_prompt_ends_the_turn_where_its_first_line_begins() {
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(TWO_LINE_PROMPT);
    s.input(b"echo hi\r")
        .out(b"echo hi\r\n\x1b[?2004l\rhi\r\n")
        .out(TWO_LINE_PROMPT);
    // A command that prints nothing, then one interrupted before it printed anything.
    s.input(b"true\r")
        .out(b"true\r\n\x1b[?2004l\r")
        .out(TWO_LINE_PROMPT);
    s.input(b"sleep 10\r").out(b"sleep 10\r\n\x1b[?2004l\r");
    s.input(b"\x03")
        .out(b"^C")
        .out(b"\r\n")
        .out(TWO_LINE_PROMPT);
    let turns = s.turns();
    let shape: Vec<(&str, &[u8], String)> = turns
        .iter()
        .map(|t| (t.input.as_str(), &t.content[..], t.text()))
        .collect();
    assert_eq!(
        shape,
        [
            ("echo hi", &b"hi\r\n"[..], "hi".to_owned()),
            ("sleep 10", &b"^C\r\n"[..], String::new())
        ]
    );
    assert!(turns[1].interrupted);
}

#[test]
fn zsh_drawing_its_prompt_again_with_the_line_typed_ahead_starts_that_lines_turn() {
    // zsh marks output that did not end its line (PROMPT_SP: a reverse `#` and spaces, taken for
    // a prompt line), then draws its prompt and the line it read.
    let prompt_sp = b"\x1b[1m\x1b[7m#\x1b[27m\x1b[1m\x1b[0m       \r \r";
    let prompt = b"\r\x1b[0m\x1b[J\x1b[1;31mroot@box\x1b[0m:~# \x1b[K\x1b[?2004h";
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(prompt_sp).out(prompt);
    s.input(b"sleep 3; echo first\r")
        .out(b"sleep 3; echo first\x1b[?2004l\r\r\n");
    for key in b"echo second" {
        s.input(&[*key]).out(&[*key]);
    }
    s.input(b"\r").out(b"\r\n");
    s.out(b"first\r\n")
        .out(prompt_sp)
        .out(prompt)
        .out(b"e\x08echo second\x1b[?2004l\r\r\nsecond\r\n")
        .out(prompt_sp)
        .out(prompt);
    assert_eq!(
        s.inputs_and_texts(),
        [
            ("sleep 3; echo first".to_owned(), "first".to_owned()),
            ("echo second".to_owned(), "second".to_owned())
        ]
    );
}

#[test]
fn a_shells_end_of_output_mark_is_neither_content_nor_text() {
    // fish marks where output ended: a dim `⏎` padded to the screen's width (80), then `⏎ `
    // again, erased; after a `^C` echo the mark stays on screen behind it.
    let prompt = b"\x1b]0;fish\x07root@vm /t# \x1b[K";
    let mark = [
        &b"\x1b[2m\xe2\x8f\x8e\x1b(B\x1b[m"[..],
        &[b' '; 79],
        b"\r\xe2\x8f\x8e \r\x1b[K",
    ]
    .concat();
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(prompt);
    s.input(b"sleep 2\r").out(b"\r\n").out(&mark).out(prompt);
    assert!(s.turns().is_empty(), "nothing printed: no turn");
    s.input(b"sleep 10\r").out(b"\r\n");
    s.input(b"\x03").out(b"^C").out(&mark).out(prompt);
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert!(turns[0].interrupted);
    assert_eq!(turns[0].text(), "");
}

#[test]
fn the_next_prompt_drawing_a_line_typed_ahead_is_not_in_the_text_whatever_the_chunking() {
    // node reads a line typed during a blocking call only when the call returns, and draws it
    // key by key behind its prompt: the turn ends when the line is whole, and the screen may
    // show the prompt with the first keys already.
    let mut s = Session::new(Preset::named("generic").unwrap());
    s.out(b"\x1b[1G\x1b[0J> \x1b[3G");
    s.input(b"sleep(3); log(21)\r").out(b"\r\r\n");
    s.input(b"log(42)").out(b"log(42)");
    s.input(b"\r").out(b"\r\n");
    s.out(b"21\r\nundefined\r\n\x1b[1G\x1b[0J> \x1b[3Gl")
        .out(b"og(42)\r\n42\r\nundefined\r\n\x1b[1G\x1b[0J> \x1b[3G");
    assert_eq!(
        s.inputs_and_texts(),
        [
            ("sleep(3); log(21)".to_owned(), "21\nundefined".to_owned()),
            ("log(42)".to_owned(), "42\nundefined".to_owned())
        ]
    );
}

#[test]
fn a_line_a_command_reads_without_a_prompt_and_prints_back_is_its_output() {
    // `cat` reads the line (the terminal echoes it bare, as it would a line typed ahead) and
    // prints it: the second copy is the command's output.
    let mut s = Session::new(Preset::named("shell").unwrap());
    s.out(ROOT_PROMPT);
    s.input(b"cat\r").out(b"cat\r\n\x1b[?2004l\r");
    s.input(b"hello").out(b"hello");
    s.input(b"\r").out(b"\r\nhello\r\n");
    s.input(b"\x04").out(ROOT_PROMPT);
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_eq!(turns[0].input, "cat");
    assert_eq!(turns[0].content, b"hello\r\n");
    assert_eq!(turns[0].text(), "hello");
}
