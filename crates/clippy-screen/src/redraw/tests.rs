//! Round trips: a program's output fed to one screen, its redraw fed to another of the same
//! size in some prior state, and the two compared cell by cell and mode by mode.

use alacritty_terminal::index::{Column, Point};
use alacritty_terminal::term::cell::Cell;

use super::*;

/// The modes a redraw reproduces (urgency hints and vi mode are not the program's).
const REPRODUCED: TermMode = TermMode::SHOW_CURSOR
    .union(TermMode::APP_CURSOR)
    .union(TermMode::APP_KEYPAD)
    .union(TermMode::MOUSE_MODE)
    .union(TermMode::BRACKETED_PASTE)
    .union(TermMode::SGR_MOUSE)
    .union(TermMode::UTF8_MOUSE)
    .union(TermMode::LINE_WRAP)
    .union(TermMode::LINE_FEED_NEW_LINE)
    .union(TermMode::ORIGIN)
    .union(TermMode::INSERT)
    .union(TermMode::FOCUS_IN_OUT)
    .union(TermMode::ALT_SCREEN)
    .union(TermMode::ALTERNATE_SCROLL)
    .union(TermMode::KITTY_KEYBOARD_PROTOCOL);

/// States a terminal may be in when a redraw comes: fresh; text on the normal screen with the
/// cursor waiting past the last column in red; the alternate screen with every mode a program
/// sets, a scroll region, origin mode, line drawing and an open hyperlink; kitty flags on both
/// screens with another region; a synchronized update left open.
const PRIOR: &[&[u8]] = &[
    b"",
    b"$ old prompt\r\nold output \x1b[1;31mred\x1b[999;999Hx",
    b"\x1b[?1049h\x1b[2;3rjunk\x1b[?1;1000;1006;2004;1004h\x1b[?1007l\x1b=\x1b[>5u\x1b[4h\
      \x1b[20h\x1b[?25l\x1b[5 q\x1b(0\x1b)0\x0e\x1b[?6h\x1b[?7l\x1b[>4;2m\
      \x1b]8;;http://old\x1b\\\x1b[7;4:3;58:5:3;38;5;9mxx\x1b7\x1b[1;1Hq",
    b"\x1b[>1u\x1b[>3u\x1b[3;4r\x1b[?6h\x1b[?1003;1005h\x1b[2;2Hq\x1b(0q\x1b[?1049h\x1b[>2u\
      \x1b[?1049l\x1b[999;999H\x1b[4h",
    b"\x1b[?1049h\x1b[?1049l\x1b[?2026h\x1b[2 q",
];

/// A cell as a terminal shows it.
#[derive(Debug, PartialEq)]
struct Shown {
    c: char,
    fg: Color,
    bg: Color,
    flags: Flags,
    marks: Vec<char>,
    underline: Option<Color>,
    link: Option<(String, String)>,
}

fn shown(cell: &Cell) -> Shown {
    Shown {
        c: cell.c,
        fg: cell.fg,
        bg: cell.bg,
        flags: cell.flags,
        marks: cell.zerowidth().unwrap_or_default().to_vec(),
        underline: cell.underline_color(),
        link: cell
            .hyperlink()
            .map(|link| (link.id().to_owned(), link.uri().to_owned())),
    }
}

/// The visible rows, cell by cell, as a terminal can show them. A wrap is a row's last cell's:
/// elsewhere (where deleting characters moves it) it means nothing, and the last row's cannot be
/// drawn without scrolling. A wide character is its cell and the spacer after it: the emulator
/// shifts cells for insertions and deletions without regard to them, and the halves it leaves
/// are blank. A wide character that did not fit at the end of a row leaves a spacer there only
/// if it is on the next, in the same colours. A spacer is blank. The row of a cursor waiting past
/// its last column does not wrap, and the cell under it is no tab (the cell drawn again to put
/// the cursor there takes the row's wrap and the tab's mark); nor is the last cell of a row that
/// wraps (the wrap is drawn, not the tab).
fn rows(screen: &mut Screen) -> Vec<Vec<Shown>> {
    screen.catch_up();
    let grid = screen.term.grid();
    let lines = grid.screen_lines();
    let cursor = &grid.cursor;
    let waits = cursor
        .input_needs_wrap
        .then_some(cursor.point.line.0 as usize);
    let starts_wide = |row: usize, spacer: &Cell| {
        let first = &grid[Line(row as i32)][Column(0)];
        let second = &grid[Line(row as i32)][Column(1)];
        first.flags.contains(Flags::WIDE_CHAR)
            && second.flags.contains(Flags::WIDE_CHAR_SPACER)
            && Pen::of(first) == Pen::of(spacer)
    };
    (0..lines)
        .map(|row| {
            let grid_cells = &grid[Line(row as i32)][..];
            let mut cells: Vec<Shown> = grid_cells.iter().map(shown).collect();
            let wraps =
                row + 1 < lines && crate::wraps(&grid[Line(row as i32)]) && waits != Some(row);
            let len = cells.len();
            for column in 0..len {
                let wide = |flags: Flags| flags.contains(Flags::WIDE_CHAR);
                let spacer = |flags: Flags| flags.contains(Flags::WIDE_CHAR_SPACER);
                let next = cells.get(column + 1).map(|cell| cell.flags);
                let before = column.checked_sub(1).map(|before| cells[before].flags);
                let cell = &mut cells[column];
                cell.flags.remove(Flags::WRAPLINE);
                if wide(cell.flags) && !next.is_some_and(spacer) {
                    cell.flags.remove(Flags::WIDE_CHAR);
                    cell.c = ' ';
                    cell.marks.clear();
                }
                if spacer(cell.flags) && !before.is_some_and(wide) {
                    cell.flags.remove(Flags::WIDE_CHAR_SPACER);
                }
                let leading = Flags::LEADING_WIDE_CHAR_SPACER;
                if cell.flags.contains(leading)
                    && !(column + 1 == len && wraps && starts_wide(row + 1, &grid_cells[column]))
                {
                    cell.flags.remove(leading);
                }
                let under_cursor = waits == Some(row) && column == cursor.point.column.0;
                let wrap = wraps && column + 1 == len;
                if (cell.flags.intersects(Flags::WIDE_CHAR_SPACER | leading)
                    || under_cursor
                    || wrap)
                    && cell.c == '\t'
                {
                    cell.c = ' ';
                }
            }
            if let Some(last) = cells.last_mut().filter(|_| wraps) {
                last.flags.insert(Flags::WRAPLINE);
            }
            cells
        })
        .collect()
}

/// Everything but the cells that a redraw reproduces.
#[derive(Debug, PartialEq)]
struct State {
    size: (u16, u16),
    modes: TermMode,
    /// Row, column, waiting past the last column.
    cursor: (Point, bool),
    pen: Pen,
    charsets: Charsets,
    charset: CharsetIndex,
    saved: (Point, Pen, Charsets),
    region: Option<(usize, usize)>,
    modify_other_keys: ModifyOtherKeys,
    cursor_style: CursorStyle,
}

fn state(screen: &mut Screen) -> State {
    screen.catch_up();
    let grid = screen.term.grid();
    let cursor = &grid.cursor;
    let saved = &grid.saved_cursor;
    State {
        size: screen.size(),
        modes: *screen.term.mode() & REPRODUCED,
        cursor: (cursor.point, cursor.input_needs_wrap),
        pen: Pen::of(&cursor.template),
        charsets: cursor.charsets,
        charset: screen.shadow.charset,
        saved: (saved.point, Pen::of(&saved.template), saved.charsets),
        region: screen.shadow.region(),
        modify_other_keys: screen.shadow.modify_other_keys,
        cursor_style: screen.term.cursor_style(),
    }
}

/// Asserts that `b` shows and behaves as `a`.
fn assert_same(a: &mut Screen, b: &mut Screen, context: &str) {
    for (row, (a_row, b_row)) in rows(a).iter().zip(rows(b)).enumerate() {
        if let Some(column) = (0..a_row.len()).find(|&column| a_row[column] != b_row[column]) {
            panic!(
                "{context}: row {row} column {column}: {:?} != {:?}\n{:?}\n{:?}",
                a_row[column],
                b_row[column],
                a.snapshot(0).lines,
                b.snapshot(0).lines,
            );
        }
    }
    assert_eq!(state(a), state(b), "{context}");
}

/// Redraws `a` onto screens of its size in each of the [`PRIOR`] states and asserts that each
/// shows and behaves as `a`. Returns the redraw.
fn assert_redraws(a: &mut Screen) -> Vec<u8> {
    let redraw = a.redraw();
    let (cols, rows) = a.size();
    for prior in PRIOR {
        let mut b = Screen::new(cols, rows);
        b.feed(prior);
        b.feed(&redraw);
        let context = format!(
            "prior {:?}, redraw {:?}",
            String::from_utf8_lossy(prior),
            String::from_utf8_lossy(&redraw)
        );
        assert_same(a, &mut b, &context);
    }
    redraw
}

fn fed(cols: u16, rows: u16, bytes: &[u8]) -> Screen {
    let mut screen = Screen::new(cols, rows);
    screen.feed(bytes);
    screen.catch_up();
    screen
}

#[test]
fn a_shell_prompt_round_trips() {
    let mut a = fed(
        40,
        6,
        b"\x1b[?2004h\x1b[1;32muser@host\x1b[0m:\x1b[1;34m~/src\x1b[0m$ ls\r\n\
          file1  file2\r\n\x1b[1;32muser@host\x1b[0m:\x1b[1;34m~/src\x1b[0m$ ",
    );
    let redraw = assert_redraws(&mut a);
    assert!(redraw.ends_with(b"\x1b[?2026l"));
    assert_eq!(a.snapshot(0).cursor, (2, 17));
}

#[test]
fn colored_output_with_every_attribute_round_trips() {
    let mut a = fed(
        60,
        8,
        "\x1b[31mred\x1b[0m \x1b[91mbright\x1b[0m \x1b[1;34mdir/\x1b[0m \x1b[38;5;208morange\
         \x1b[0m \x1b[38;2;10;200;30mrgb\x1b[48;2;1;2;3m on rgb\x1b[0m \x1b[44;97mbg\x1b[0m\r\n\
         \x1b[1mbold\x1b[2m+dim\x1b[22;2mdim\x1b[0m \x1b[3mitalic\x1b[0m \x1b[4munder\x1b[4:2m\
         double\x1b[4:3mcurl\x1b[4:4mdot\x1b[4:5mdash\x1b[24m \x1b[7minverse\x1b[27m \
         \x1b[8mhidden\x1b[28m \x1b[9mstrike\x1b[0m\r\n\
         \x1b[4;58:2::255:0:0mred underline\x1b[58:5:33m indexed\x1b[59m plain\x1b[0m\r\n\
         \x1b]8;;https://example.com/a;b\x1b\\link\x1b]8;;\x1b\\ \
         \x1b]8;id=x1;https://example.com\x1b\\\x1b[32mgreen link\x1b]8;;\x1b\\\x1b[0m\r\n\
         \x1b[48;5;236m\x1b[Kgrey to the end\r\n\x1b[0m\x1b[100m  \x1b[0m two\r\n\
         \x1b[38;5;3;48;5;250mstill on\x1b[1;4m"
            .as_bytes(),
    );
    assert_redraws(&mut a);
}

#[test]
fn a_full_screen_tui_on_the_alternate_screen_round_trips() {
    let mut tui = String::from(
        "$ top\r\n\x1b[?1049h\x1b[?25l\x1b[?1h\x1b=\x1b[?1002;1006h\x1b[?2004h\x1b[?1004h\
         \x1b[>1u\x1b[>4;1m\x1b[6 q\x1b[H\x1b[44;97m\x1b[2K header\x1b[0m\x1b[10;1H\x1b[7m\x1b[2K\
         footer\x1b[0m\x1b[2;9r\x1b[9;1H",
    );
    for n in 0..12 {
        tui.push_str(&format!("\r\n\x1b[3{}mline {n}\x1b[0m", n % 8));
    }
    tui.push_str("\x1b7\x1b[5;20H\x1b[1mhere");
    let mut a = fed(30, 10, tui.as_bytes());
    assert!(a.snapshot(0).alternate);
    let redraw = assert_redraws(&mut a);
    assert!(!String::from_utf8_lossy(&redraw).contains("line 0"));

    // In origin mode, the cursor is placed relative to the scroll region.
    a.feed(b"\x1b[?6h\x1b[3;4H\x1b[1;2r\x1b[3;5r\x1b[2;2Hx");
    assert_redraws(&mut a);
}

#[test]
fn wide_characters_combining_marks_and_emoji_round_trip() {
    let mut a = fed(
        24,
        4,
        "日本語 👍 👨\u{200d}👩\u{200d}👧 e\u{301}\r\n\u{301}a\u{20dd} 🇫🇷 x\
         \x1b[3;1H12345678901234567890123日本\x1b[4;23H한"
            .as_bytes(),
    );
    assert_redraws(&mut a);
    // The wide character that did not fit at the end of row 3 wrapped onto row 4.
    assert!(
        a.term.grid()[Line(2)][Column(23)]
            .flags
            .contains(Flags::LEADING_WIDE_CHAR_SPACER)
    );
}

#[test]
fn a_row_ending_in_a_joiner_does_not_join_what_comes_next() {
    let mut a = fed(10, 2, "a\u{200d}\x1b[1;2H👍b".as_bytes());
    assert_redraws(&mut a);
}

#[test]
fn the_last_cell_of_the_last_row_is_drawn_without_scrolling() {
    let mut a = fed(10, 3, b"top\x1b[3;1H0123456789");
    assert!(a.term.grid().cursor.input_needs_wrap);
    assert_redraws(&mut a);
    let mut a = fed(10, 3, "top\x1b[3;1H12345678日".as_bytes());
    assert!(a.term.grid().cursor.input_needs_wrap);
    assert_redraws(&mut a);
    // A row that wraps is drawn whole and the next wraps from it.
    let mut a = fed(10, 3, b"0123456789abcdefghijklmnopq");
    assert_redraws(&mut a);
    assert_eq!(a.snapshot(0).lines[0], "0123456789");
}

#[test]
fn a_screen_right_after_a_resize_round_trips() {
    let mut a = fed(
        40,
        10,
        "\x1b[33ma long line that will wrap when the screen gets narrower, twice over\x1b[0m\r\n\
         日本語のテキストも折り返す日本語のテキストも折り返す\r\n$ "
            .as_bytes(),
    );
    a.resize(17, 6);
    assert_redraws(&mut a);
    a.resize(50, 12);
    assert_redraws(&mut a);
    let mut tui = fed(30, 10, b"\x1b[?1049h\x1b[3;8r\x1b[5;5Hbox");
    tui.resize(20, 8);
    assert_redraws(&mut tui);
}

#[test]
fn tabs_charsets_and_the_saved_cursor_round_trip() {
    let mut a = fed(
        30,
        4,
        b"a\tb\t\x1b[41m\tc\x1b[0m\r\n\x1b(0lqqk\x1b(B\x1b)0\x0elqk\x0f \x1b[2;20H\x1b[4m\x1b7\
          \x1b[0m\x1b[4;1Hdone\x0e",
    );
    assert_eq!(a.shadow.charset, CharsetIndex::G1);
    assert_redraws(&mut a);
}

#[test]
fn a_redraw_in_the_middle_of_a_synchronized_frame_leaves_it_open() {
    let mut a = fed(10, 2, b"\x1b[?2026h\x1b[Hhalf");
    let redraw = assert_redraws(&mut a);
    assert!(!redraw.ends_with(b"\x1b[?2026l"));
    a.feed(b" done\x1b[?2026l");
    assert!(a.redraw().ends_with(b"\x1b[?2026l"));
}

#[test]
fn a_redraw_of_a_screen_full_of_colored_text_stays_small() {
    // An `ls --color` or a syntax-highlighted file: a colour change every word or so.
    let colors = [
        "31",
        "1;34",
        "32",
        "38;5;208",
        "38;2;200;120;50",
        "90",
        "36;4",
        "35",
    ];
    let mut text = String::new();
    for row in 0..24 {
        text.push_str(&format!("\x1b[{};1H", row + 1));
        let mut width = 0;
        let mut word = row;
        while width < 80 {
            let len = (3 + word * 7 % 9).min(80 - width);
            let color = colors[word % colors.len()];
            text.push_str(&format!("\x1b[{color}m{}\x1b[0m", "x".repeat(len)));
            width += len;
            if width < 80 {
                text.push(' ');
                width += 1;
            }
            word += 1;
        }
    }
    let mut a = fed(80, 24, text.as_bytes());
    let redraw = assert_redraws(&mut a);
    println!("80x24 coloured redraw: {} bytes", redraw.len());
    assert!(redraw.len() < 16 * 1024, "{} bytes", redraw.len());
    assert!(redraw.len() < text.len(), "{} bytes", redraw.len());
}

#[test]
fn restoring_a_terminal_resets_its_modes_and_keeps_its_normal_screen_and_cursor() {
    for prior in PRIOR {
        let mut terminal = fed(20, 5, b"\x1b[?1049l$ shell\r\n$ attach\r\n");
        let before = terminal.snapshot(0);
        terminal.feed(prior);
        let mut program = fed(
            20,
            5,
            b"\x1b[?1049h\x1b[?1002;1006;2004;1h\x1b[>1u\x1b[2;4r",
        );
        terminal.feed(&program.redraw());
        terminal.feed(b"\x1b[3;3H\x1b[1;31mlive");
        terminal.feed(RESTORE_TERMINAL_FROM_ALTERNATE);
        assert!(!terminal.term.mode().contains(TermMode::ALT_SCREEN));
        let fresh = fed(20, 5, b"");
        assert_eq!(
            *terminal.term.mode() & REPRODUCED,
            *fresh.term.mode() & REPRODUCED
        );
        assert_eq!(terminal.shadow.region(), None);
        assert_eq!(terminal.shadow.charset, CharsetIndex::G0);
        assert_eq!(terminal.shadow.modify_other_keys, ModifyOtherKeys::Reset);
        assert_eq!(terminal.term.cursor_style(), CursorStyle::default());
        assert_eq!(
            Pen::of(&terminal.term.grid().cursor.template),
            Pen::default()
        );
        if prior.is_empty() {
            // The normal screen the program's redraw was drawn over, cursor where it was.
            assert_eq!(terminal.snapshot(0).lines, before.lines);
        }
    }
    // On the normal screen the cursor stays where the program left it, and what the program
    // drew below it (an inline TUI's footer) goes.
    let mut terminal = fed(20, 5, b"\x1b[2;3r\x1b[4;6Hx\r\nfooter\x1b[4;7H");
    terminal.feed(RESTORE_TERMINAL);
    let after = terminal.snapshot(0);
    assert_eq!(after.cursor, (3, 6));
    assert_eq!(after.lines, ["", "", "", "     x", ""]);
}

#[test]
fn a_program_pushing_keyboard_flags_without_end_does_not_bring_the_screen_down() {
    let mut a = Screen::new(10, 2);
    for _ in 0..5000 {
        a.feed(b"\x1b[>1u");
    }
    a.feed(b"\x1b[>3u");
    assert_redraws(&mut a);
    a.feed(b"\x1b[<1u");
    assert!(a.term.mode().contains(TermMode::DISAMBIGUATE_ESC_CODES));
}

/// A small xorshift generator: the same cases on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Random output: text (wide, combining, joined), SGR, cursor moves, erasing, scroll regions,
/// modes, character sets, saved cursors, keyboard flags, hyperlinks, line and character
/// insertion and deletion, the alternate screen.
fn random_output(rng: &mut Rng, cols: usize, rows: usize) -> String {
    let mut out = String::new();
    for _ in 0..=rng.below(150) {
        match rng.below(22) {
            0..=3 => {
                for _ in 0..=rng.below(cols + 5) {
                    out.push(char::from(b' ' + rng.below(95) as u8));
                }
            }
            4 => out.push_str(rng.pick(&["日", "本", "👍", "한", "語x"])),
            5 => out.push_str(rng.pick(&["e\u{301}", "\u{301}", "a\u{20dd}"])),
            6 => out.push_str("👨\u{200d}👩\u{200d}👧"),
            7 | 8 => {
                let mut params = Vec::new();
                for _ in 0..=rng.below(3) {
                    let param = match rng.below(8) {
                        0 => format!("38;5;{}", rng.below(256)),
                        1 => format!("48;5;{}", rng.below(256)),
                        2 => format!(
                            "{};2;{};{};{}",
                            rng.pick(&["38", "48"]),
                            rng.below(256),
                            rng.below(256),
                            rng.below(256)
                        ),
                        3 => format!("58:2::{}:{}:{}", rng.below(256), 0, rng.below(256)),
                        4 => format!("{}", 30 + rng.below(10)),
                        5 => rng.pick(&["90", "97", "100", "107", "40", "49"]).to_owned(),
                        _ => rng
                            .pick(&[
                                "0", "1", "2", "3", "4", "4:2", "4:3", "4:4", "4:5", "7", "8", "9",
                                "21", "22", "23", "24", "27", "28", "29", "58:5:4", "59",
                            ])
                            .to_owned(),
                    };
                    params.push(param);
                }
                out.push_str(&format!("\x1b[{}m", params.join(";")));
            }
            9 | 10 => out.push_str(&format!(
                "\x1b[{};{}H",
                1 + rng.below(rows + 1),
                1 + rng.below(cols + 1)
            )),
            11 => out.push_str(rng.pick(&["\r\n", "\n", "\r", "\n\n\n"])),
            12 => out.push_str(rng.pick(&[
                "\x1b[K", "\x1b[1K", "\x1b[2K", "\x1b[J", "\x1b[1J", "\x1b[2J", "\x1b[3X",
            ])),
            13 => {
                let top = 1 + rng.below(rows - 1);
                let bottom = top + 1 + rng.below(rows - top);
                out.push_str(&if rng.below(3) == 0 {
                    "\x1b[r".to_owned()
                } else {
                    format!("\x1b[{top};{bottom}r")
                });
            }
            14 => {
                let mode = rng.pick(&[
                    "?1", "?6", "?7", "?25", "?1000", "?1002", "?1003", "?1004", "?1005", "?1006",
                    "?1007", "?2004", "4", "20",
                ]);
                out.push_str(&format!("\x1b[{mode}{}", rng.pick(&["h", "l"])));
            }
            15 => out.push_str(rng.pick(&[
                "\x1b(0", "\x1b(B", "\x1b)0", "\x1b)B", "\x1b*0", "\x0e", "\x0f", "\x1b=", "\x1b>",
            ])),
            16 => out.push_str(rng.pick(&["\x1b7", "\x1b8"])),
            17 => out.push_str(&match rng.below(4) {
                0 => format!("\x1b[>{}u", rng.below(32)),
                1 => "\x1b[<u".to_owned(),
                2 => format!("\x1b[={};{}u", rng.below(32), 1 + rng.below(3)),
                _ => format!("\x1b[>4;{}m", rng.below(3)),
            }),
            18 => out.push_str(&format!("\x1b[{} q", rng.below(7))),
            19 => out.push_str(rng.pick(&[
                "\x1b]8;;https://a.example\x1b\\",
                "\x1b]8;id=7;https://b.example\x1b\\",
                "\x1b]8;;\x1b\\",
            ])),
            20 => out.push_str(rng.pick(&[
                "\x1b[L", "\x1b[2M", "\x1b[@", "\x1b[3P", "\x1b[S", "\x1b[T", "\x1bM", "\x1bD",
                "\t", "\x08", "\x1b[3C", "\x1b[2A", "\x1b[B",
            ])),
            _ => out.push_str(rng.pick(&["\x1b[?1049h", "\x1b[?1049l"])),
        }
    }
    out
}

#[test]
fn random_output_round_trips() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..1000 {
        // At least 4 columns: drawing a wide character again over itself in column 0 or 1
        // (for a cursor waiting past the last column) makes the emulator drop the spacer that
        // one not fitting at the end of the row above left.
        let (width, height) = (4 + rng.below(60), 2 + rng.below(20));
        let output = random_output(&mut rng, width, height);
        let mut a = fed(width as u16, height as u16, output.as_bytes());
        let redraw = a.redraw();
        for prior in PRIOR {
            let mut b = fed(width as u16, height as u16, prior);
            b.feed(&redraw);
            let context = format!(
                "case {case}, {width}x{height}, output {output:?}, prior {:?}",
                String::from_utf8_lossy(prior)
            );
            // A cursor left outside the scroll region in origin mode is put inside it.
            let origin = a.term.mode().contains(TermMode::ORIGIN);
            let line = a.term.grid().cursor.point.line.0 as usize;
            let outside = a
                .shadow
                .region()
                .is_some_and(|(start, end)| line < start || line >= end);
            if origin && outside {
                for (a_row, b_row) in rows(&mut a).iter().zip(rows(&mut b)) {
                    assert_eq!(a_row, &b_row, "{context}");
                }
                let (mut a_state, b_state) = (state(&mut a), state(&mut b));
                a_state.cursor = b_state.cursor;
                assert_eq!(a_state, b_state, "{context}");
                continue;
            }
            assert_same(&mut a, &mut b, &context);
        }
    }
}
