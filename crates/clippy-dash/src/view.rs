//! Drawing the dashboard with ratatui: a header that counts what waits, the sessions list
//! (what needs a person first), the detail of the selected session, a footer with the keys,
//! and the window open over them. Pure: it draws [`App`] as it is at `now` (Unix ms, for the
//! elapsed times), into any ratatui buffer.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState, Wrap};

use clippy_proto::Format;

use crate::app::{App, Detail, Overlay, Phase, Session, View};

/// The colours: none with `NO_COLOR` (then emphasis is bold and reverse video only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether to use colours.
    pub colour: bool,
}

impl Theme {
    /// Colours unless `no_color` (the `NO_COLOR` convention: set and not empty).
    pub fn new(no_color: bool) -> Self {
        Self { colour: !no_color }
    }

    fn fg(self, color: Color) -> Style {
        if self.colour {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    fn phase(self, phase: Phase) -> Style {
        match phase {
            Phase::Waiting => self.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Phase::Busy => self.fg(Color::Cyan),
            Phase::Starting => self.fg(Color::Blue),
            Phase::Idle => self.fg(Color::Green),
            Phase::Exited => self.fg(Color::DarkGray),
        }
    }

    fn selected(self) -> Style {
        if self.colour {
            Style::new()
                .bg(Color::DarkGray)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
}

/// Draws `app` at `now` into `frame`.
pub fn render(app: &App, theme: Theme, now: u64, frame: &mut Frame<'_>) {
    let area = frame.area();
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(header_line(app, theme)), header);
    let shown = app.shown();
    let wide = area.width >= 140;
    let (list_area, detail_area) = if wide {
        // The list takes 65 % of the width, or more when a state's text needs it (a long
        // waiting text and its tool input), leaving the detail at least DETAIL_LEAST columns.
        let needed = shown
            .iter()
            .map(|s| state_text(s, now).chars().count())
            .max()
            .unwrap_or(0);
        let wanted = u16::try_from(needed)
            .unwrap_or(u16::MAX)
            .saturating_add(WIDE_FIXED);
        let list = u16::try_from(u32::from(area.width) * 65 / 100)
            .unwrap_or(area.width)
            .max(wanted.min(area.width.saturating_sub(DETAIL_LEAST)));
        let [l, d] = Layout::horizontal([Constraint::Length(list), Constraint::Min(1)]).areas(body);
        (l, d)
    } else {
        let want = u16::try_from(shown.len())
            .unwrap_or(u16::MAX)
            .saturating_add(3);
        let most = (body.height * 11 / 20).max(4);
        let [l, d] =
            Layout::vertical([Constraint::Length(want.min(most)), Constraint::Min(1)]).areas(body);
        (l, d)
    };
    render_list(app, &shown, theme, now, frame, list_area);
    render_detail(app, theme, frame, detail_area);
    frame.render_widget(Paragraph::new(footer_line(app, theme)), footer);
    if let Some(overlay) = app.overlay() {
        render_overlay(app, overlay, theme, now, frame, area);
    }
}

fn header_line(app: &App, theme: Theme) -> Line<'static> {
    let shown = app.shown();
    let count = |p: Phase| shown.iter().filter(|s| s.phase() == p).count();
    let marked = shown.iter().filter(|s| s.attention).count();
    let mut spans = vec![
        Span::styled(" clippy dash ", Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(format!("{} sessions", shown.len())),
    ];
    let waiting = count(Phase::Waiting);
    if waiting > 0 {
        spans.push(Span::raw(" · "));
        spans.push(Span::styled(
            format!("{waiting} waiting"),
            theme.phase(Phase::Waiting),
        ));
    }
    let busy = count(Phase::Busy);
    if busy > 0 {
        spans.push(Span::raw(format!(" · {busy} busy")));
    }
    if marked > 0 {
        spans.push(Span::raw(format!(" · {marked} new")));
    }
    if !app.filter().is_empty() {
        spans.push(Span::raw(format!(" · filter \"{}\"", app.filter())));
    }
    if !app.connected() {
        spans.push(Span::raw(" · "));
        spans.push(Span::styled(
            "broker unreachable, reconnecting",
            theme.fg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    }
    Line::from(spans)
}

fn footer_line(app: &App, theme: Theme) -> Line<'static> {
    if let Some(status) = app.status() {
        return Line::from(Span::styled(
            format!(" {}", one_line(status)),
            theme.fg(Color::Yellow),
        ));
    }
    let keys = match app.overlay() {
        Some(Overlay::Editor { .. }) => "Ctrl+S send  Enter new line  Esc cancel",
        Some(Overlay::EditApproval { .. }) => "Ctrl+S approve with this text  Esc back",
        Some(Overlay::Filter) => "type to filter  Enter keep  Esc clear",
        Some(Overlay::Search { typing: true, .. }) => "type words  Enter search  Esc close",
        Some(Overlay::Search { .. }) => "↑↓ choose  Enter open  / new search  Esc close",
        Some(Overlay::Routes { .. }) => {
            "↑↓ choose  a approve  e edit, then approve  d deny  Esc close"
        }
        Some(Overlay::PastePick { .. }) => "↑↓ choose the session  Enter paste  Esc cancel",
        Some(Overlay::Spawn { .. }) => "Tab next field  Enter start  Esc cancel",
        Some(Overlay::ConfirmEnd(_)) => "y end it  any other key: keep it",
        Some(Overlay::Help) => "any key closes",
        None if app.turn_cursor().1 => {
            "↑↓ choose a turn  Enter open it  Esc/Tab back to the sessions  v view  ? help"
        }
        None if matches!(app.detail().0, View::Opened { .. }) => {
            "t text/message  Esc back to the turns  PgUp PgDn scroll  v view  ? help"
        }
        None => {
            "? help  q quit  ↑↓ select  Enter attach  a/d answer  s send  v view  / search  r routes  n new  x end  f filter"
        }
    };
    Line::from(Span::styled(
        format!(" {keys}"),
        Style::new().add_modifier(Modifier::DIM),
    ))
}

/// `1m03s`, `12s`, `2h05m`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The time of day of `ms` (Unix ms), UTC: `14:03:27` — when a session was last active (an
/// absolute time stays true without redrawing).
pub fn clock(ms: u64) -> String {
    let s = ms / 1000 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

/// What a session's state column says.
pub fn state_text(s: &Session, now: u64) -> String {
    match s.phase() {
        Phase::Waiting => {
            let w = s.waiting.clone().unwrap_or_default();
            let what = match (&w.tool, &w.input, &w.message) {
                (Some(tool), Some(input), _) => format!("{tool} {input}"),
                (Some(tool), None, _) => tool.clone(),
                (None, _, Some(message)) => message.clone(),
                (None, _, None) => String::new(),
            };
            one_line(&format!("waiting {}: {what}", w.kind))
        }
        Phase::Busy => match s.busy_since {
            Some(since) => format!("busy {}", duration(now.saturating_sub(since))),
            None => "busy".into(),
        },
        Phase::Starting => "starting".into(),
        Phase::Idle => "idle".into(),
        Phase::Exited => match s.exited.flatten() {
            Some(code) => format!("exited {code}"),
            None => "exited".into(),
        },
    }
}

/// The columns of the wide list besides the state (mark, name, preset, turns, last, hooks,
/// routes, command) and the spaces between its nine columns.
const WIDE_FIXED: u16 = 1 + 14 + 8 + 5 + 8 + 5 + 7 + 12 + 8;
/// The width of the command column and the space before it.
const COMMAND_WIDTH: u16 = 12 + 1;
/// The least width the detail keeps beside the list.
const DETAIL_LEAST: u16 = 40;

fn render_list(
    app: &App,
    shown: &[&Session],
    theme: Theme,
    now: u64,
    frame: &mut Frame<'_>,
    area: Rect,
) {
    let narrow = area.width < 86;
    // The command column gives its width to the state when a state's text needs it.
    let needed = shown
        .iter()
        .map(|s| state_text(s, now).chars().count())
        .max()
        .unwrap_or(0);
    let state_room = usize::from(area.width.saturating_sub(WIDE_FIXED));
    let command = !narrow && needed <= state_room;
    let header = if !command {
        vec![
            "", "NAME", "PRESET", "STATE", "TURNS", "LAST", "HOOKS", "ROUTES",
        ]
    } else {
        vec![
            "", "NAME", "PRESET", "STATE", "TURNS", "LAST", "HOOKS", "ROUTES", "COMMAND",
        ]
    };
    let rows = shown.iter().map(|s| {
        let (into, out) = app.routes_of(&s.id);
        let routes = if into + out == 0 && s.inbox == 0 {
            "-".to_owned()
        } else if s.inbox > 0 {
            format!("{into}/{out} +{}", s.inbox)
        } else {
            format!("{into}/{out}")
        };
        let mark = if s.attention { "●" } else { " " };
        let mut cells = vec![
            Cell::from(mark).style(theme.fg(Color::Yellow)),
            name_cell(s, if narrow { 12 } else { 14 }, theme),
            Cell::from(if s.preset.is_empty() {
                "-".to_owned()
            } else {
                s.preset.clone()
            }),
            Cell::from(state_text(s, now)).style(theme.phase(s.phase())),
            Cell::from(s.turns.to_string()),
            Cell::from(s.last_activity.map_or("-".to_owned(), clock)),
            Cell::from(if s.disagreements > 0 {
                format!("!{}", s.disagreements)
            } else {
                "ok".to_owned()
            }),
            Cell::from(routes),
        ];
        if command {
            cells.push(Cell::from(one_line(&s.command.join(" "))));
        }
        Row::new(cells)
    });
    let widths: Vec<Constraint> = if narrow {
        vec![
            Constraint::Length(1),
            Constraint::Length(12),
            Constraint::Length(7),
            Constraint::Fill(1),
            Constraint::Length(5),
            Constraint::Length(8),
            Constraint::Length(5),
            Constraint::Length(6),
        ]
    } else {
        let mut widths = vec![
            Constraint::Length(1),
            Constraint::Length(14),
            Constraint::Length(8),
            Constraint::Fill(1),
            Constraint::Length(5),
            Constraint::Length(8),
            Constraint::Length(5),
            Constraint::Length(7),
        ];
        if command {
            widths.push(Constraint::Length(COMMAND_WIDTH - 1));
        }
        widths
    };
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(Style::new().add_modifier(Modifier::BOLD)))
        .row_highlight_style(theme.selected())
        .block(
            Block::new()
                .borders(Borders::TOP | Borders::BOTTOM)
                .title(" sessions "),
        );
    let mut state = TableState::default();
    state.select(
        app.selected()
            .and_then(|id| shown.iter().position(|s| s.id == id)),
    );
    if shown.is_empty() {
        let empty = Paragraph::new(if app.connected() {
            "no sessions: start one with `n`, `clippy-ctl spawn` or `clippy-session`"
        } else {
            "waiting for the broker"
        })
        .block(
            Block::new()
                .borders(Borders::TOP | Borders::BOTTOM)
                .title(" sessions "),
        );
        frame.render_widget(empty, area);
    } else {
        frame.render_stateful_widget(table, area, &mut state);
    }
}

/// A session's name, and `⧉N` after it when N terminals are attached (the name cut so that
/// the count always shows).
fn name_cell(s: &Session, width: usize, theme: Theme) -> Cell<'static> {
    let label = s.label();
    if s.attached == 0 {
        return Cell::from(label.to_owned());
    }
    let count = format!("⧉{}", s.attached);
    let room = width.saturating_sub(count.chars().count() + 1);
    let name: String = label.chars().take(room).collect();
    Cell::from(Line::from(vec![
        Span::raw(format!("{name} ")),
        Span::styled(count, theme.fg(Color::Magenta)),
    ]))
}

fn render_detail(app: &App, theme: Theme, frame: &mut Frame<'_>, area: Rect) {
    let (view, detail, scroll) = app.detail();
    let who = app
        .selected()
        .and_then(|id| app.session(id))
        .map_or(String::new(), |s| s.label().to_owned());
    let title = match (view, detail) {
        (View::Found(turn), _) => format!(" found: turn {turn} (v: back) "),
        (_, Detail::Lines { title, .. }) => format!(" {who}: {title} "),
        (View::Screen, _) => format!(" {who}: screen "),
        (View::LastTurn(Format::Message), _) => format!(" {who}: last turn (message) "),
        (View::LastTurn(_), _) => format!(" {who}: last turn (text) "),
        (View::Turns, _) => format!(" {who}: turns "),
        (View::Opened { turn, .. }, _) => format!(" {who}: turn {turn} "),
    };
    let block = Block::new()
        .borders(Borders::TOP)
        .title(title)
        .title_style(theme.fg(Color::Cyan));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let height = usize::from(inner.height);
    let lines: Vec<Line<'_>> = match detail {
        Detail::Empty => vec![Line::from("…")],
        Detail::Failed(why) => vec![Line::from(one_line(why))],
        Detail::Lines { lines, .. } => {
            let end = lines
                .iter()
                .rposition(|l| !l.trim().is_empty())
                .map_or(0, |i| i + 1);
            let end = end.saturating_sub(usize::from(scroll)).max(height.min(end));
            let start = end.saturating_sub(height);
            lines[start..end]
                .iter()
                .map(|l| Line::from(l.replace('\t', "    ")))
                .collect()
        }
        Detail::Turns(turns) => {
            let (at, focused) = app.turn_cursor();
            let mut out = vec![Line::styled(
                "TURN        BYTES  EXIT  INPUT",
                Style::new().add_modifier(Modifier::BOLD),
            )];
            // The chosen turn stays in sight.
            let rows = height.saturating_sub(1).max(1);
            let skip = usize::from(scroll).max((at + 1).saturating_sub(rows));
            out.extend(turns.iter().enumerate().skip(skip).map(|(i, t)| {
                let line = Line::from(format!(
                    "{:<11} {:>5}  {:>4}  {}",
                    t.turn_id,
                    t.byte_length,
                    t.exit_code.map_or("-".to_owned(), |c| c.to_string()),
                    one_line(t.input.as_deref().unwrap_or("-"))
                ));
                if focused && i == at {
                    line.style(theme.selected())
                } else {
                    line
                }
            }));
            out
        }
    };
    frame.render_widget(Paragraph::new(lines), inner);
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

fn window(title: String, theme: Theme) -> Block<'static> {
    Block::new()
        .borders(Borders::ALL)
        .title(title)
        .border_style(theme.fg(Color::Cyan))
}

/// Every key, for `?`.
pub const HELP: &[(&str, &str)] = &[
    ("↑ ↓ / k j", "select a session (Home, End: first, last)"),
    (
        "Enter",
        "attach this terminal to it; the detach key comes back",
    ),
    (
        "a  A  d",
        "answer its waiting permission: allow, always, deny",
    ),
    (
        "s",
        "send it a message (editor: Enter new line, Ctrl+S send)",
    ),
    ("c", "capture its last turn"),
    (
        "p",
        "paste the captured turn into a session chosen from the list",
    ),
    ("v", "detail: live screen → last turn → turn list"),
    (
        "Tab",
        "turn list: ↑↓ choose a turn, Enter opens it, Esc back",
    ),
    ("t", "last or opened turn: text ↔ the agent's own message"),
    ("PgUp PgDn", "scroll the detail"),
    ("/", "search the history; Enter opens the turn found"),
    (
        "r",
        "routes and inboxes: approve (a), edit then approve (e), deny (d)",
    ),
    ("n", "start a new session: command, name, folder"),
    ("x", "end the session (asks first)"),
    ("f", "filter the list by typing (Esc clears)"),
    ("q  Ctrl+C", "quit"),
];

fn render_overlay(
    app: &App,
    overlay: &Overlay,
    theme: Theme,
    now: u64,
    frame: &mut Frame<'_>,
    area: Rect,
) {
    match overlay {
        Overlay::Help => {
            let rect = centered(area, 76, u16::try_from(HELP.len()).unwrap_or(20) + 2);
            let lines: Vec<Line<'_>> = HELP
                .iter()
                .map(|(k, what)| {
                    Line::from(vec![
                        Span::styled(
                            format!("{k:<11}"),
                            Style::new().add_modifier(Modifier::BOLD),
                        ),
                        Span::raw(*what),
                    ])
                })
                .collect();
            frame.render_widget(Clear, rect);
            frame.render_widget(
                Paragraph::new(lines).block(window(" keys ".into(), theme)),
                rect,
            );
        }
        Overlay::Filter => {
            let rect = Rect::new(area.x, area.bottom().saturating_sub(2), area.width, 1);
            frame.render_widget(Clear, rect);
            frame.render_widget(Paragraph::new(format!(" filter: {}▏", app.filter())), rect);
        }
        Overlay::ConfirmEnd(id) => {
            let label = app.session(id).map_or(id.as_str(), Session::label);
            let rect = centered(area, 60, 3);
            frame.render_widget(Clear, rect);
            frame.render_widget(
                Paragraph::new(format!(
                    "End {label}? Ctrl+C, then killed if no prompt (y/n)"
                ))
                .block(window(" end session ".into(), theme)),
                rect,
            );
        }
        Overlay::Editor { session, text } => {
            let label = app
                .session(session)
                .map_or(session.as_str(), Session::label);
            let rect = centered(area, area.width.saturating_sub(8).max(40), 12);
            frame.render_widget(Clear, rect);
            let mut shown = text.clone();
            shown.push('▏');
            frame.render_widget(
                Paragraph::new(shown)
                    .wrap(Wrap { trim: false })
                    .block(window(
                        format!(" message to {label} (Ctrl+S sends) "),
                        theme,
                    )),
                rect,
            );
        }
        Overlay::EditApproval { approval, text, .. } => {
            let rect = centered(area, area.width.saturating_sub(8).max(40), 12);
            frame.render_widget(Clear, rect);
            let mut shown = text.clone();
            shown.push('▏');
            // The end of a long text, where the cursor is.
            let inner_width = usize::from(rect.width.saturating_sub(2)).max(1);
            let rows: usize = shown
                .split('\n')
                .map(|l| l.chars().count().div_ceil(inner_width).max(1))
                .sum();
            let scroll = rows.saturating_sub(usize::from(rect.height.saturating_sub(2)));
            frame.render_widget(
                Paragraph::new(shown)
                    .wrap(Wrap { trim: false })
                    .scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0))
                    .block(window(
                        format!(" edit the handoff of {approval} (Ctrl+S approves it) "),
                        theme,
                    )),
                rect,
            );
        }
        Overlay::PastePick { at } => {
            let shown = app.shown();
            let rect = centered(
                area,
                50,
                u16::try_from(shown.len()).unwrap_or(20).min(16) + 2,
            );
            let lines: Vec<Line<'_>> = shown
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let line = Line::from(format!(" {} ({})", s.label(), state_text(s, now)));
                    if i == *at {
                        line.style(theme.selected())
                    } else {
                        line
                    }
                })
                .collect();
            frame.render_widget(Clear, rect);
            frame.render_widget(
                Paragraph::new(lines).block(window(" paste the captured turn into ".into(), theme)),
                rect,
            );
        }
        Overlay::Spawn { fields, focus } => {
            let rect = centered(area, 70, 5);
            let names = ["command", "name   ", "folder "];
            let lines: Vec<Line<'_>> = names
                .iter()
                .zip(fields)
                .enumerate()
                .map(|(i, (name, value))| {
                    let cursor = if i == *focus { "▏" } else { "" };
                    let line = Line::from(format!(" {name}: {value}{cursor}"));
                    if i == *focus {
                        line.style(Style::new().add_modifier(Modifier::BOLD))
                    } else {
                        line
                    }
                })
                .collect();
            frame.render_widget(Clear, rect);
            frame.render_widget(
                Paragraph::new(lines).block(window(" new session ".into(), theme)),
                rect,
            );
        }
        Overlay::Routes { at } => {
            let rect = centered(
                area,
                area.width.saturating_sub(4),
                area.height.saturating_sub(4),
            );
            let mut lines = vec![Line::styled(
                "ROUTE  FROM → TO                  KIND     STATE",
                Style::new().add_modifier(Modifier::BOLD),
            )];
            let label = |id: &str| {
                app.session(id)
                    .map_or(id.to_owned(), |s| s.label().to_owned())
            };
            for r in app.routes() {
                let state = match (&r.paused, &r.paused_reason) {
                    (true, Some(why)) => format!("paused ({why})"),
                    (true, None) => "paused".into(),
                    (false, _) => "active".into(),
                };
                let gated = if r.gated { " gated" } else { "" };
                lines.push(Line::from(format!(
                    "{:<6} {:<24} {:<8} {state}{gated}",
                    r.route,
                    format!("{} → {}", label(&r.from), label(&r.to)),
                    format!("{:?}", r.kind).to_lowercase(),
                )));
            }
            if app.routes().is_empty() {
                lines.push(Line::from("no routes (clippy-ctl route add FROM TO)"));
            }
            lines.push(Line::from(""));
            lines.push(Line::styled(
                "INBOX        HANDOFF  ROUTE  TURN          BYTES  STATE",
                Style::new().add_modifier(Modifier::BOLD),
            ));
            let items = app.inbox_items();
            if items.is_empty() {
                lines.push(Line::from("nothing waits in any inbox"));
            }
            for (i, (session, item)) in items.iter().enumerate() {
                let approval = item
                    .approval
                    .as_deref()
                    .map_or(String::new(), |a| format!(" ({a})"));
                let line = Line::from(format!(
                    "{:<12} {:<8} {:<6} {:<13} {:>5}  {}{approval}",
                    label(session),
                    item.handoff,
                    item.route,
                    item.turn_id,
                    item.byte_length,
                    item.state
                ));
                lines.push(if i == *at {
                    line.style(theme.selected())
                } else {
                    line
                });
            }
            frame.render_widget(Clear, rect);
            frame.render_widget(
                Paragraph::new(lines).block(window(" routes and inboxes ".into(), theme)),
                rect,
            );
        }
        Overlay::Search { query, typing, at } => {
            let rect = centered(
                area,
                area.width.saturating_sub(4),
                area.height.saturating_sub(4),
            );
            let cursor = if *typing { "▏" } else { "" };
            let mut lines = vec![
                Line::from(format!(" search: {query}{cursor}")),
                Line::from(""),
            ];
            for (i, hit) in app.hits().iter().enumerate() {
                let who = hit.entry.name.as_deref().unwrap_or(&hit.entry.session);
                let line = Line::from(format!(
                    " {:<12} {:<12} {}",
                    who,
                    hit.entry.turn_id,
                    one_line(&hit.snippet)
                ));
                lines.push(if i == *at && !*typing {
                    line.style(theme.selected())
                } else {
                    line
                });
            }
            frame.render_widget(Clear, rect);
            frame.render_widget(
                Paragraph::new(lines).block(window(" search the history ".into(), theme)),
                rect,
            );
        }
    }
}

/// Text on one line: line breaks and tabs as spaces, other control characters dropped.
pub fn one_line(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if c.is_control() => None,
            c => Some(c),
        })
        .collect()
}
