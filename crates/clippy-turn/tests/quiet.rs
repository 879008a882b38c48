//! Agents without a preset (CONTRACTS/TURN.md, *Agents without a preset*): the caller says when
//! output went quiet, and the detector ends a turn when its screen shows the agent at rest.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use clippy_turn::{DetectorConfig, Event, Phase, Preset, Turn, TurnDetector};

/// A detector plus everything it reported.
struct Session {
    detector: TurnDetector,
    events: Vec<Event>,
    /// Rows of the live area an Ink-like agent drew last (it erases them before the next frame).
    live: usize,
}

impl Session {
    fn new(preset: &str, cols: u16, rows: u16) -> Self {
        let config = DetectorConfig::new(Preset::named(preset).unwrap())
            .size(cols, rows)
            .unwrap();
        Self {
            detector: TurnDetector::new(config),
            events: Vec::new(),
            live: 0,
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

    fn quiet(&mut self) -> &mut Self {
        self.events.extend(self.detector.quiet());
        self
    }

    /// As Ink draws: erase the live area, print what goes into the transcript above it, then
    /// the live area again, the (hidden) cursor left under it.
    fn ink(&mut self, transcript: &[&str], live: &[&str]) -> &mut Self {
        let mut bytes = Vec::new();
        for _ in 0..self.live {
            bytes.extend_from_slice(b"\x1b[1A\x1b[2K");
        }
        bytes.extend_from_slice(b"\r");
        for row in transcript.iter().chain(live) {
            bytes.extend_from_slice(row.as_bytes());
            bytes.extend_from_slice(b"\r\n");
        }
        self.live = live.len();
        self.out(&bytes)
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

    fn ready(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Ready { .. }))
    }
}

const REST: &[&str] = &[
    "────────────────────",
    ">   Type your message",
    "────────────────────",
    "  ? for shortcuts",
];

/// An inline Ink TUI: no title, no prompt line any preset knows, its input box kept on screen
/// while it works and its cursor hidden under the live area.
fn ink_agent(preset: &str) -> Session {
    let mut s = Session::new(preset, 40, 12);
    s.out(b"\x1b[?25l");
    s.ink(&["Agent 1.0", ""], REST);
    s
}

#[test]
fn an_inline_tui_at_rest_ends_its_turn_when_output_goes_quiet() {
    let mut s = ink_agent("generic");
    assert_eq!(s.detector.phase(), Phase::Starting);
    assert!(!s.detector.prompt_recognised());
    s.quiet();
    assert!(s.ready(), "{:?}", s.events);
    s.ink(&[], &[REST[0], "> hello", REST[2], REST[3]]);
    s.input(b"hello\r");
    // The echo printed, the live area moved down, nothing else yet (no spinner either).
    s.ink(&["  > hello", ""], REST);
    s.quiet();
    assert!(s.turns().is_empty(), "{:?}", s.events);
    s.ink(
        &[],
        &["⠋ Thinking (0s)", REST[0], REST[1], REST[2], REST[3]],
    );
    // Its output stalled with a spinner on screen (a loaded machine): still at work.
    s.quiet();
    assert!(s.turns().is_empty(), "{:?}", s.events);
    s.ink(&["  ✦ Hi there.", "    Second line.", ""], REST);
    assert!(s.turns().is_empty(), "nothing ends before the quiet");
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].input, "hello");
    assert_eq!(turns[0].text(), "  ✦ Hi there.\n    Second line.");
    assert_eq!(s.detector.phase(), Phase::Idle);
    // Quiet again, at rest with nothing submitted: no turn.
    s.quiet();
    assert_eq!(s.turns().len(), 1);
    // The next question, its input row learned again.
    s.ink(&[], &[REST[0], "> again", REST[2], REST[3]]);
    s.input(b"again\r");
    s.ink(&["  > again", "", "  ✦ Once more.", ""], REST);
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 2, "{:?}", s.events);
    assert_eq!(turns[1].text(), "  ✦ Once more.");
}

/// The same reply twice, each longer than the screen: at rest the second leaves every row
/// above the input box as the first left it (Qwen Code's 80-line reply asked again, in the live
/// matrix with a resize while it streamed). Its echo went into history under the turn, and the
/// reply under it: it answered, and ends at the quiet. Stalled after its echo scrolled away, it
/// has not.
#[test]
fn a_reply_that_leaves_the_screen_as_the_last_one_did_still_ends_at_the_quiet() {
    let mut s = ink_agent("generic");
    s.quiet();
    assert!(s.ready(), "{:?}", s.events);
    let reply: Vec<String> = (1..=20)
        .map(|n| format!("  {n}. Line {n} of 20."))
        .collect();
    let reply: Vec<&str> = reply.iter().map(String::as_str).collect();
    for (n, question) in ["write twenty lines", "write twenty lines again"]
        .into_iter()
        .enumerate()
    {
        s.ink(&[], &[REST[0], &format!("> {question}"), REST[2], REST[3]]);
        s.input(format!("{question}\r").as_bytes());
        s.ink(&[&format!("  > {question}"), ""], REST);
        s.ink(&reply, REST);
        s.quiet();
        let turns = s.turns();
        assert_eq!(turns.len(), n + 1, "{question}: {:?}", s.events);
        assert!(
            turns[n].text().ends_with("20. Line 20 of 20."),
            "{:?}",
            turns[n]
        );
    }
    // A third question: its echo scrolled away under blank rows, nothing under it yet.
    s.ink(&[], &[REST[0], "> once more", REST[2], REST[3]]);
    s.input(b"once more\r");
    let blank = [""; 12];
    s.ink(&["  > once more"], &[]).ink(&blank, REST);
    s.quiet();
    assert_eq!(s.turns().len(), 2, "{:?}", s.events);
}

#[test]
fn a_command_that_paused_with_the_cursor_on_an_empty_row_is_not_at_rest() {
    let mut s = Session::new("generic", 40, 12);
    s.out(b"$ ");
    assert!(s.ready());
    s.input(b"echo a; sleep 3; echo b\r");
    s.out(b"echo a; sleep 3; echo b\r\na\r\n");
    s.quiet();
    assert!(s.turns().is_empty(), "{:?}", s.events);
    s.out(b"b\r\n$ ");
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].text(), "a\nb");
}

/// A REPL whose prompt no preset names: the cursor right after a short prompt.
fn repl(preset: &str) -> Session {
    let mut s = Session::new(preset, 40, 12);
    s.out(b"$ ");
    s.input(b"calc\r");
    s.out(b"calc\r\ncalc 1.0\r\n>>> ");
    s
}

#[test]
fn the_cursor_right_after_a_short_prompt_is_at_rest_for_generic() {
    let mut s = repl("generic");
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].text(), "calc 1.0");
}

#[test]
fn once_a_presets_own_signals_were_seen_quiet_output_ends_nothing() {
    // The shell preset recognised its `$ ` prompt: from then on it decides alone.
    let mut s = repl("shell");
    assert!(s.detector.prompt_recognised());
    s.quiet();
    assert!(s.turns().is_empty(), "{:?}", s.events);
}

#[test]
fn a_preset_whose_signals_never_show_still_gets_turns_from_quiet_output() {
    // Gemini CLI's preset on an agent that sets no title and draws no prompt line it knows: its
    // busy line (`esc to cancel`) wrapped over two rows keeps the turn running at a quiet; the
    // screen at rest ends it.
    let mut s = ink_agent("gemini");
    s.quiet();
    assert!(s.ready(), "{:?}", s.events);
    s.ink(&[], &[REST[0], "> hello", REST[2], REST[3]]);
    s.input(b"hello\r");
    s.ink(
        &["  > hello", "", "  ✦ Partial"],
        &[
            "⠋ Thinking hard (0s, esc to",
            "cancel)",
            REST[0],
            REST[1],
            REST[2],
            REST[3],
        ],
    );
    s.quiet();
    assert!(s.turns().is_empty(), "{:?}", s.events);
    s.ink(&["  answer.", ""], REST);
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].text(), "  ✦ Partial\n  answer.");
    assert!(!s.detector.prompt_recognised());
}

#[test]
fn a_busy_line_wrapped_over_two_rows_vetoes_a_prompt_line() {
    // aider's prompt line with Gemini CLI's busy line: a custom pattern keeps the preset's busy
    // line, which the agent wrapped.
    let preset = Preset::named("gemini")
        .unwrap()
        .with_prompt(r"^>\s+Type your message")
        .unwrap();
    let mut d = TurnDetector::new(DetectorConfig::new(preset));
    let mut events: Vec<Event> = d.feed_output(b">   Type your message\r\n").collect();
    events.extend(d.feed_input(b"hello\r"));
    events.extend(d.feed_output(
        b"> hello\r\n\r\nPartial answer\r\n\xe2\xa0\x8b Working (esc to\r\ncancel, 1s)\r\n>   Type your message\r\n",
    ));
    assert!(
        !events.iter().any(|e| matches!(e, Event::TurnCompleted(_))),
        "{events:?}"
    );
    events.extend(d.feed_output(b"the rest.\r\n>   Type your message\r\n"));
    let turn = events
        .iter()
        .find_map(|e| match e {
            Event::TurnCompleted(turn) => Some(turn),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no turn: {events:?}"));
    assert!(turn.text().contains("Partial answer"), "{}", turn.text());
}

#[test]
fn a_full_screen_tui_with_its_cursor_in_the_input_box() {
    let mut s = Session::new("generic", 40, 12);
    // The start screen: a logo, the input box with a placeholder, the cursor in it.
    s.out(b"\x1b[?1049h\x1b[H\x1b[2J\x1b[3;10HLOGO\x1b[8;3H\xe2\x94\x83  Ask anything\x1b[10;3Hctrl+p commands\x1b[8;6H");
    s.quiet();
    assert!(s.ready(), "{:?}", s.events);
    s.out(b"\x1b[8;6H\x1b[Khello\x1b[8;11H");
    s.input(b"hello\r");
    // It empties its input box and stalls before it draws anything else: nothing new yet.
    s.out(b"\x1b[8;6H\x1b[K");
    s.quiet();
    assert!(s.turns().is_empty(), "{:?}", s.events);
    // It draws the question's echo, what was above moved up to make room, and stalls again
    // before its spinner (a starved machine): the rows that moved are no answer.
    s.out(b"\x1b[H\x1b[2J\x1b[1;10HLOGO\x1b[3;3H\xe2\x94\x83  hello\x1b[8;3H\xe2\x94\x83\x1b[10;3Hctrl+p commands\x1b[8;6H");
    s.quiet();
    assert!(s.turns().is_empty(), "{:?}", s.events);
    // The session view: the question, the answer, an empty input box, a busy footer.
    s.out(b"\x1b[H\x1b[2J\x1b[1;3H\xe2\x94\x83  hello\x1b[3;6HHi there.\x1b[8;3H\xe2\x94\x83\x1b[10;3Hesc interrupt\x1b[8;6H");
    s.out(b"\x1b[4;6HA second line.\x1b[10;3H\x1b[K/tmp/work   ctrl+p commands\x1b[8;6H");
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].input, "hello");
    assert_eq!(turns[0].text(), "     Hi there.\n     A second line.");
}

#[test]
fn a_frame_cut_short_after_the_input_rows_prompt_character_ends_no_turn() {
    // Ink's frame, its write cut right after the input row's `>` (a stalled process): the line
    // at the chunk's end is a bare prompt character, but the spinner is on screen.
    let mut s = ink_agent("generic");
    s.quiet();
    s.ink(&[], &[REST[0], "> hello", REST[2], REST[3]]);
    s.input(b"hello\r");
    s.ink(
        &["  > hello", "", "  \u{2726} Partial"],
        &["\u{2819} Working (1s \u{b7} esc to cancel)", REST[0]],
    );
    s.out(b"> ");
    assert!(s.turns().is_empty(), "{:?}", s.events);
    s.out(b"  Type your message\r\n");
    s.live = 3;
    s.ink(&["  answer."], REST);
    s.quiet();
    assert_eq!(s.turns().len(), 1, "{:?}", s.events);
}

/// A full-screen TUI that keeps its input row (`> `) on screen while it works, a spinner row
/// with its interrupt hint above it: `rows` of the transcript, then that live area.
fn full_screen_frame(rows: &[&str], busy: bool) -> Vec<u8> {
    let mut bytes = b"\x1b[H\x1b[2J".to_vec();
    for row in rows {
        bytes.extend_from_slice(row.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"\x1b[8;1H");
    if busy {
        bytes.extend_from_slice("\u{2819} Generating (1s esc to interrupt)".as_bytes());
    }
    bytes.extend_from_slice(
        "\x1b[9;1H────────────────────\r\n> \r\n\r\n/tmp/work\x1b[10;3H".as_bytes(),
    );
    bytes
}

#[test]
fn a_full_screen_redraw_while_the_agent_works_does_not_end_its_turn() {
    let mut s = Session::new("generic", 40, 12);
    s.out(b"\x1b[?1049h");
    s.out(&full_screen_frame(&["Agent 1.0"], false));
    s.quiet();
    assert!(s.ready(), "{:?}", s.events);
    s.out(b"hello");
    s.input(b"hello\r");
    s.out(b"\x1b[10;3H\x1b[K");
    s.out(&full_screen_frame(
        &["Agent 1.0", "> hello", "  Line one."],
        true,
    ));
    // The window is resized: the agent draws its whole screen again, its empty input row (a
    // bare prompt line) with it, and works on.
    s.detector.resize(40, 12).unwrap();
    s.out(&full_screen_frame(
        &["Agent 1.0", "> hello", "  Line one."],
        true,
    ));
    assert!(s.turns().is_empty(), "{:?}", s.events);
    // A question typed ahead in its input row while it works: a turn of its own, later.
    s.out(b"\x1b[10;3Hnext\x1b[10;7H");
    s.input(b"next\r");
    s.out(b"\x1b[10;3H\x1b[K");
    s.out(&full_screen_frame(
        &["Agent 1.0", "> hello", "  Line one.", "  Line two."],
        true,
    ));
    s.quiet();
    assert!(s.turns().is_empty(), "{:?}", s.events);
    s.out(&full_screen_frame(
        &[
            "Agent 1.0",
            "> hello",
            "  Line one.",
            "  Line two.",
            "  Done.",
        ],
        false,
    ));
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 1, "{:?}", s.events);
    assert_eq!(turns[0].input, "hello");
    assert_eq!(turns[0].text(), "  Line one.\n  Line two.\n  Done.");
    // The agent takes the question typed ahead.
    s.out(&full_screen_frame(
        &["  Line two.", "  Done.", "> next", "  Next answer."],
        false,
    ));
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 2, "{:?}", s.events);
    assert_eq!(turns[1].input, "next");
    assert_eq!(turns[1].text(), "  Next answer.");
}

/// A full-screen agent's frame drawn in place, row by row from the top (no clear), as Textual
/// draws: `rows` at the top of a 40x16 screen, the rows under them blank down to the input
/// box ([`INPUT_BOX`], not drawn again), a spinner row above it while `busy`, the cursor left
/// in the input row.
fn in_place_frame(rows: &[&str], busy: bool) -> Vec<u8> {
    let mut bytes = b"\x1b[?2026h".to_vec();
    for at in 0..11 {
        bytes.extend_from_slice(format!("\x1b[{};1H", at + 1).as_bytes());
        bytes.extend_from_slice(rows.get(at).copied().unwrap_or("").as_bytes());
        bytes.extend_from_slice(b"\x1b[K");
    }
    bytes.extend_from_slice(b"\x1b[12;1H");
    if busy {
        bytes.extend_from_slice("\u{2819} Thinking (2s esc to interrupt)".as_bytes());
    }
    bytes.extend_from_slice(b"\x1b[K\x1b[14;3H\x1b[?2026l");
    bytes
}

/// The input box and footer under [`in_place_frame`]'s rows, drawn once.
const INPUT_BOX: &str = "\x1b[13;1H────────────────────\x1b[14;1H> \x1b[16;1H~/work\x1b[14;3H";

/// A full-screen agent drawing [`in_place_frame`]s over its [`INPUT_BOX`], ready at its first
/// quiet.
fn in_place_agent() -> Session {
    let mut s = Session::new("generic", 40, 16);
    s.out(b"\x1b[?1049h");
    s.out(INPUT_BOX.as_bytes());
    s.out(&in_place_frame(&["Agent 2.0"], false));
    s.quiet();
    assert!(s.ready(), "{:?}", s.events);
    s
}

#[test]
fn a_full_screen_reply_that_leaves_the_screen_as_the_last_one_did_still_ends_at_the_quiet() {
    // The same long reply twice on the alternate screen, scrolled three rows a frame, each
    // frame judged as the tap judges it once output pauses: the second ends on the very rows
    // the first left, so no row is new where it stands; a frame showed its echo with text under.
    let mut s = in_place_agent();
    let reply: Vec<String> = (1..=20).map(|n| format!("  Line {n} of 20.")).collect();
    let mut transcript: Vec<String> = vec!["Agent 2.0".into()];
    let questions = ["write lines", "write lines again", "and once more"];
    for (n, question) in questions.into_iter().enumerate() {
        s.out(format!("\x1b[14;3H{question}").as_bytes());
        s.input(format!("{question}\r").as_bytes());
        s.out(b"\x1b[14;3H\x1b[K");
        let from = transcript.len().saturating_sub(2);
        transcript.push(format!("> {question}"));
        if n == 2 {
            // The echo drawn, and the agent stalls before its spinner: no answer.
            let rows: Vec<&str> = transcript[from..].iter().map(String::as_str).collect();
            s.out(&in_place_frame(&rows, false));
            s.detector.screen_moved();
            s.quiet();
            assert_eq!(s.turns().len(), 2, "{question}: {:?}", s.events);
            break;
        }
        transcript.extend(reply.iter().cloned());
        let rows: Vec<&str> = transcript.iter().map(String::as_str).collect();
        let last = rows.len() - 11;
        for top in (from..last).step_by(3) {
            s.out(&in_place_frame(&rows[top..top + 11], true));
            s.detector.screen_moved();
        }
        s.out(&in_place_frame(&rows[last..], false));
        s.detector.screen_moved();
        s.quiet();
        let turns = s.turns();
        assert_eq!(turns.len(), n + 1, "{question}: {:?}", s.events);
    }
}

#[test]
fn a_question_typed_ahead_is_told_queued_or_taken_by_where_the_agent_writes_next() {
    let mut s = in_place_agent();
    s.out(b"long");
    s.input(b"long\r");
    s.out(b"\x1b[14;3H\x1b[K");
    s.out(&in_place_frame(&["Agent 2.0", "> long", "  Part 1."], true));
    // A question typed ahead: the agent shows it at once, queued between the reply and its
    // spinner with a label right under it, and the reply goes on growing above it.
    s.out(b"\x1b[14;3Hnext\x1b[14;7H");
    s.input(b"next\r");
    s.out(b"\x1b[14;3H\x1b[K");
    let queued = |reply: &[&str]| {
        let mut rows = vec!["Agent 2.0", "> long"];
        rows.extend_from_slice(reply);
        rows.extend_from_slice(&["", "  (waiting)", "> next", "  \u{21b3} edit with \u{2191}"]);
        in_place_frame(&rows, true)
    };
    s.out(&queued(&["  Part 1."]));
    s.out(&queued(&["  Part 1.", "  Part 2."]));
    s.out(&queued(&["  Part 1.", "  Part 2.", "  Part 3."]));
    assert!(s.turns().is_empty(), "{:?}", s.events);
    // The reply is over and the agent takes the question without a pause: the same echo, now
    // under the reply, a spinner, then the answer's words below the echo.
    let taken = [
        "> long",
        "  Part 1.",
        "  Part 2.",
        "  Part 3.",
        "",
        "> next",
    ];
    s.out(&in_place_frame(&taken, true));
    let mut answering = taken.to_vec();
    answering.extend_from_slice(&["", "  Next"]);
    s.out(&in_place_frame(&answering, true));
    answering[7] = "  Next answer.";
    s.out(&in_place_frame(&answering, true));
    assert_eq!(s.turns().len(), 1, "{:?}", s.events);
    s.out(&in_place_frame(&answering, false));
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 2, "{:?}", s.events);
    assert_eq!(turns[0].input, "long");
    assert_eq!(turns[0].text(), "  Part 1.\n  Part 2.\n  Part 3.");
    assert_eq!(turns[1].input, "next");
    assert_eq!(turns[1].text(), "  Next answer.");

    // Again, but the reply's last frame has no spinner, and the question is taken in the same
    // frame that draws the new spinner: the turn ends at the echo, the spinner is not its text.
    s.out(b"\x1b[14;3Hmore\x1b[14;7H");
    s.input(b"more\r");
    s.out(b"\x1b[14;3H\x1b[K");
    s.out(&in_place_frame(&["> more", "  Alpha."], true));
    s.out(b"\x1b[14;3Hlast\x1b[14;7H");
    s.input(b"last\r");
    s.out(b"\x1b[14;3H\x1b[K");
    s.out(&in_place_frame(
        &["> more", "  Alpha.", "", "  (waiting)", "> last"],
        true,
    ));
    s.out(&in_place_frame(
        &["> more", "  Alpha.", "  Beta.", "", "  (waiting)", "> last"],
        false,
    ));
    s.out(&in_place_frame(
        &["> more", "  Alpha.", "  Beta.", "", "> last"],
        true,
    ));
    s.out(&in_place_frame(
        &[
            "> more",
            "  Alpha.",
            "  Beta.",
            "",
            "> last",
            "",
            "  Last answer.",
        ],
        false,
    ));
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 4, "{:?}", s.events);
    assert_eq!(turns[2].input, "more");
    assert_eq!(turns[2].text(), "  Alpha.\n  Beta.");
    assert_eq!(turns[3].input, "last");
    assert_eq!(turns[3].text(), "  Last answer.");
}

/// A frame of a full-screen agent that draws its screen cell run by cell run, as OpenCode does:
/// every run of text is positioned on its own (`ESC[row;colH`), so no line of output holds a
/// decoration and the text after it together. `transcript` fills the pane from the top; under
/// it the input box (`┃` rows, `typed` in its middle one, the cursor parked there) and a
/// footer row that tells how to interrupt while `busy`.
fn cell_run_frame(transcript: &[&str], typed: &str, busy: bool) -> Vec<u8> {
    // The pane shows the transcript's last 18 lines: a long one scrolls.
    let shown = &transcript[transcript.len().saturating_sub(18)..];
    let mut rows: Vec<String> = (0..18)
        .map(|at| shown.get(at).copied().unwrap_or("").to_owned())
        .collect();
    rows.extend([
        "  ┃".to_owned(),
        format!("  ┃  {typed}"),
        "  ┃".to_owned(),
        "  ╹▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀".to_owned(),
        if busy {
            "   ■■⬝⬝  esc interrupt".to_owned()
        } else {
            "   ~/work".to_owned()
        },
    ]);
    let mut bytes = b"\x1b[?2026h\x1b[?25l".to_vec();
    for (at, row) in rows.iter().enumerate() {
        bytes.extend_from_slice(format!("\x1b[{};1H\x1b[K", at + 1).as_bytes());
        let mut col = 0;
        for (i, run) in row.split("  ").enumerate() {
            if i > 0 {
                col += 2;
            }
            if !run.is_empty() {
                bytes.extend_from_slice(format!("\x1b[{};{}H", at + 1, col + 1).as_bytes());
                bytes.extend_from_slice(run.as_bytes());
            }
            col += run.chars().count();
        }
    }
    bytes.extend_from_slice(format!("\x1b[20;{}H\x1b[?25h\x1b[?2026l", 6 + typed.len()).as_bytes());
    bytes
}

#[test]
fn a_question_typed_ahead_that_a_cell_by_cell_agent_shows_queued_is_a_turn_of_its_own() {
    let mut s = Session::new("generic", 40, 24);
    s.out(b"\x1b[?1049h");
    s.out(&cell_run_frame(&["  Agent 1.0"], "", false));
    s.quiet();
    assert!(s.ready(), "{:?}", s.events);
    s.out(&cell_run_frame(&["  Agent 1.0"], "long", false));
    s.input(b"long\r");
    let asked = ["  ┃", "  ┃  long", "  ┃", ""];
    let earlier: Vec<String> = (1..=16).map(|n| format!("     Banner line {n}.")).collect();
    let reply = |parts: &[&str], trailer: &str, under: &[&str]| {
        let mut rows: Vec<&str> = earlier.iter().map(String::as_str).collect();
        rows.extend_from_slice(&asked);
        rows.extend_from_slice(parts);
        rows.extend_from_slice(&["", trailer]);
        rows.extend_from_slice(under);
        rows.iter().map(|row| row.to_string()).collect::<Vec<_>>()
    };
    let frame = |rows: &[String], typed: &str, busy: bool| {
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        cell_run_frame(&rows, typed, busy)
    };
    let trailer = "     ▣  Build · Model";
    s.out(&frame(&reply(&["     Part 1."], trailer, &[]), "", true));
    s.out(&frame(
        &reply(&["     Part 1.", "     Part 2."], trailer, &[]),
        "",
        true,
    ));
    // A question typed ahead: the agent shows it at once under the reply, in a block of its
    // input decoration with a label, and the reply goes on growing above it.
    s.out(&frame(
        &reply(&["     Part 1.", "     Part 2."], trailer, &[]),
        "next",
        true,
    ));
    s.input(b"next\r");
    let queued = ["", "  ┃", "  ┃  next", "  ┃   QUEUED", "  ┃"];
    let parts = ["     Part 1.", "     Part 2.", "     Part"];
    s.out(&frame(&reply(&parts[..2], trailer, &queued), "", true));
    s.out(&frame(&reply(&parts, trailer, &queued), "", true));
    assert!(s.turns().is_empty(), "{:?}", s.events);
    // The reply is over and the agent takes the question in the frame that completes the
    // reply's last line: the trailer gets its time, the label goes, and the answer's own
    // trailer is drawn below the echo; then the answer's words above that trailer.
    let parts = ["     Part 1.", "     Part 2.", "     Part 3."];
    let taken = |answer: &[&'static str], trailer: &'static str| {
        let mut under = vec!["", "  ┃", "  ┃  next", "  ┃", ""];
        under.extend_from_slice(answer);
        under.extend_from_slice(&["", trailer]);
        under
    };
    let done = "     ▣  Build · Model · 2.5s";
    s.out(&frame(&reply(&parts, done, &taken(&[], trailer)), "", true));
    assert_eq!(s.turns().len(), 1, "{:?}", s.events);
    s.out(&frame(
        &reply(&parts, done, &taken(&["     Next answer."], trailer)),
        "",
        true,
    ));
    let at_rest = reply(
        &parts,
        done,
        &taken(&["     Next answer."], "     ▣  Build · Model · 0.4s"),
    );
    s.out(&frame(&at_rest, "", false));
    s.quiet();
    let turns = s.turns();
    assert_eq!(turns.len(), 2, "{:?}", s.events);
    assert_eq!(turns[0].input, "long");
    assert_eq!(turns[0].text(), "     Part 1.\n     Part 2.\n     Part 3.");
    assert_eq!(turns[1].input, "next");
    assert_eq!(turns[1].text(), "     Next answer.");
}
