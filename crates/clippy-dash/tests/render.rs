//! The dashboard drawn into ratatui's `TestBackend` at 80x24 and 160x50: what a person reads.

mod common;

use clippy_dash::{App, Input, Key, Reply, Theme, render};
use common::{T0, app_with, event, status};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use serde_json::json;

fn draw(
    app: &App,
    cols: u16,
    rows: u16,
    theme: Theme,
    now: u64,
) -> (Vec<String>, Terminal<TestBackend>) {
    let mut terminal = Terminal::new(TestBackend::new(cols, rows)).expect("a terminal");
    terminal
        .draw(|frame| render(app, theme, now, frame))
        .expect("drawn");
    let buffer = terminal.backend().buffer().clone();
    let lines = (0..rows)
        .map(|y| {
            (0..cols)
                .map(|x| buffer[(x, y)].symbol().to_owned())
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect();
    (lines, terminal)
}

fn fleet() -> App {
    let mut app = app_with(
        &[
            ("k1", "coder", "busy"),
            ("k2", "shell", "idle"),
            ("k3", "repl", "starting"),
            ("k4", "old", "idle"),
        ],
        true,
    );
    app.handle(
        Input::Event(event("session.mode", "k1", json!({"reason": "busy"}))),
        T0,
    );
    app.handle(
        Input::Event(event(
            "session.waiting",
            "k2",
            json!({"reason": "permission", "tool": "Bash", "input": "{\"command\":\"rm -rf build\"}"}),
        )),
        T0 + 1000,
    );
    app.handle(
        Input::Event(event("session.exited", "k4", json!({"exit_code": 137}))),
        T0 + 2000,
    );
    app.handle(
        Input::Reply(Reply::Status(status(
            "k3",
            "starting",
            json!({"hooks": {"wired": true, "reports": 3, "turn_ends": 0, "rejected": 0, "disagreements": 2}}),
        ))),
        T0,
    );
    // The waiting one is first; look at it.
    app.handle(Input::Key(Key::Home), T0);
    assert_eq!(app.selected(), Some("k2"));
    app.handle(
        Input::Reply(Reply::Screen {
            session: "k2".into(),
            lines: vec!["$ make".into(), "Allow Bash? [y/n]".into(), String::new()],
        }),
        T0,
    );
    app
}

fn find(lines: &[String], needle: &str) -> usize {
    lines
        .iter()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not on the screen:\n{}", lines.join("\n")))
}

#[test]
fn at_80x24_every_state_shows_waiting_first_with_the_keys_below() {
    let app = fleet();
    let now = T0 + 65_000;
    let (lines, _) = draw(&app, 80, 24, Theme::new(false), now);
    let text = lines.join("\n");
    assert!(
        lines[0].contains("4 sessions · 1 waiting · 1 busy"),
        "{text}"
    );
    let waiting = find(&lines, "waiting permission: Bash");
    let busy = find(&lines, "busy 1m05s");
    let starting = find(&lines, "starting");
    let exited = find(&lines, "exited 137");
    assert!(
        waiting < busy && busy < starting && starting < exited,
        "{text}"
    );
    assert!(
        lines[starting].contains("!2"),
        "the hooks' disagreements: {text}"
    );
    assert!(
        text.contains("Allow Bash? [y/n]"),
        "the selected one's screen: {text}"
    );
    assert!(lines[23].contains("Enter attach"), "{text}");
    assert!(lines.iter().all(|l| l.chars().count() <= 80));
}

#[test]
fn at_160x50_the_list_and_the_detail_sit_side_by_side_with_the_commands() {
    let app = fleet();
    let (lines, _) = draw(&app, 160, 50, Theme::new(false), T0 + 5000);
    let text = lines.join("\n");
    assert!(lines[2].contains("COMMAND"), "{text}");
    let row = find(&lines, "waiting permission");
    assert!(lines[row].contains("bash"), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("waiting permission") && l.contains("Allow Bash? [y/n]")),
        "the detail beside the list: {text}"
    );
    assert!(lines[49].contains("? help"), "{text}");
}

#[test]
fn the_help_window_lists_every_key() {
    let mut app = fleet();
    app.handle(Input::Key(Key::Char('?')), T0);
    let (lines, _) = draw(&app, 80, 24, Theme::new(false), T0);
    let text = lines.join("\n");
    for key in ["Enter", "a  A  d", "PgUp PgDn", "Ctrl+C"] {
        assert!(text.contains(key), "{key}: {text}");
    }
}

#[test]
fn no_color_draws_no_colour_and_marks_the_selection_in_reverse_video() {
    let app = fleet();
    let (_, terminal) = draw(&app, 80, 24, Theme::new(true), T0);
    let buffer = terminal.backend().buffer();
    assert!(
        buffer
            .content()
            .iter()
            .all(|c| c.fg == Color::Reset && c.bg == Color::Reset),
        "no colour anywhere"
    );
    let (_, terminal) = draw(&app, 80, 24, Theme::new(false), T0);
    assert!(
        terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .any(|c| c.fg == Color::Yellow),
        "colours otherwise"
    );
}

#[test]
fn an_unreachable_broker_is_said_in_the_header() {
    let mut app = fleet();
    app.handle(Input::Broker(false), T0);
    let (lines, _) = draw(&app, 80, 24, Theme::new(true), T0);
    assert!(lines[0].contains("broker unreachable"), "{}", lines[0]);
}

#[test]
fn attached_terminals_show_after_the_name_at_80_and_160_columns_and_only_when_there_are_some() {
    let mut app = fleet();
    app.handle(
        Input::Event(event(
            "session.attached",
            "k1",
            json!({"attached": 2, "name": "coder"}),
        )),
        T0,
    );
    for (cols, rows) in [(80, 24), (160, 50)] {
        let (lines, _) = draw(&app, cols, rows, Theme::new(false), T0 + 1000);
        let text = lines.join("\n");
        let row = find(&lines, "busy 1s");
        assert!(lines[row].contains("coder ⧉2"), "{cols}x{rows}: {text}");
        assert_eq!(text.matches('⧉').count(), 1, "{cols}x{rows}: {text}");
    }
    // A long name is cut so that the count still shows.
    app.handle(
        Input::Event(event(
            "session.registered",
            "k2",
            json!({"name": "a-very-long-session-name"}),
        )),
        T0,
    );
    app.handle(
        Input::Event(event("session.attached", "k2", json!({"attached": 1}))),
        T0,
    );
    let (lines, _) = draw(&app, 80, 24, Theme::new(false), T0 + 1000);
    assert!(
        lines.iter().any(|l| l.contains("a-very-lo ⧉1")),
        "{}",
        lines.join("\n")
    );
}

#[test]
fn the_turn_list_shows_the_chosen_turn_and_the_keys_to_open_it() {
    let mut app = fleet();
    app.handle(Input::Key(Key::Char('v')), T0);
    app.handle(Input::Key(Key::Char('v')), T0);
    let turns = (1..=30)
        .rev()
        .map(|n| {
            serde_json::from_value(json!({"turn_id": format!("k2:{n}"), "timestamp": T0,
                "byte_length": 5, "interrupted": false, "truncated": false, "input": format!("q{n}")}))
            .expect("a turn")
        })
        .collect();
    app.handle(
        Input::Reply(Reply::Turns {
            session: "k2".into(),
            turns,
        }),
        T0,
    );
    for _ in 0..20 {
        app.handle(Input::Key(Key::Down), T0);
    }
    let (lines, terminal) = draw(&app, 80, 24, Theme::new(false), T0);
    let text = lines.join("\n");
    // The 21st turn (k2:10) is chosen, in sight, in reverse video.
    let row = find(&lines, "k2:10 ");
    let buffer = terminal.backend().buffer();
    assert!(
        buffer[(2, u16::try_from(row).expect("a row"))]
            .style()
            .add_modifier
            .contains(ratatui::style::Modifier::BOLD)
            || buffer[(2, u16::try_from(row).expect("a row"))].bg != Color::Reset,
        "{text}"
    );
    assert!(lines[23].contains("Enter open it"), "{text}");
}

#[test]
fn at_160x50_a_long_waiting_text_keeps_its_tool_input_in_the_state_column() {
    let mut app = fleet();
    let input = "{\"command\":\"cargo test -p clippy-dash\"}";
    app.handle(
        Input::Event(event(
            "session.waiting",
            "k2",
            json!({"reason": "permission", "tool": "Bash", "input": input}),
        )),
        T0 + 3000,
    );
    let (lines, _) = draw(&app, 160, 50, Theme::new(false), T0 + 5000);
    let text = lines.join("\n");
    let row = find(&lines, "waiting permission");
    assert!(
        lines[row].contains(&format!("waiting permission: Bash {input}")),
        "the whole tool input in the list's row: {text}"
    );
    // The detail still sits beside the list.
    assert!(
        lines.iter().any(|l| l.contains("Allow Bash? [y/n]")),
        "{text}"
    );
    // A short state keeps the command column.
    let (lines, _) = draw(&fleet(), 160, 50, Theme::new(false), T0 + 5000);
    assert!(lines[2].contains("COMMAND"), "{}", lines.join("\n"));
}
