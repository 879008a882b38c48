//! Drawing a screen on another terminal.
//!
//! A client that attaches to a running session needs the program's screen drawn on the
//! person's terminal before the program's output flows on: [`Screen::redraw`] gives the bytes
//! that do it, whatever that terminal showed before, and [`RESTORE_TERMINAL`] the bytes that
//! put a terminal back in order when the client leaves. The emulator keeps some of what a
//! redraw needs to itself (the scroll region, the character set in use) or does not keep it at
//! all (xterm's modifyOtherKeys): [`Shadow`] follows it from the calls that change it.

use std::fmt::Write as _;

use alacritty_terminal::grid::{Charsets, Cursor, Dimensions, Grid};
use alacritty_terminal::index::Line;
use alacritty_terminal::term::TermMode;
use alacritty_terminal::term::cell::{Cell, Flags, Hyperlink};
use alacritty_terminal::vte::ansi::{
    CharsetIndex, Color, CursorShape, CursorStyle, ModifyOtherKeys, NamedColor, StandardCharset,
};

use crate::Screen;

/// Resets, to the state a terminal starts in, what a program may have set and a redraw sets
/// again: shared by a redraw's preamble and [`RESTORE_TERMINAL`]. Neither the cursor nor what
/// the screen shows moves.
macro_rules! baseline {
    () => {
        concat!(
            // Kitty keyboard flags: every entry of the stack popped.
            "\x1b[<65535u",
            // xterm's modifyOtherKeys, to the terminal's initial value (before the SGR reset:
            // a terminal that took it for SGR 4 has that undone).
            "\x1b[>4m",
            // Attributes, hyperlink.
            "\x1b[0m\x1b]8;;\x1b\\",
            // G0 to G3 designated ASCII, G0 invoked.
            "\x1b(B\x1b)B\x1b*B\x1b+B\x0f",
            // Insert mode, automatic newline.
            "\x1b[4;20l",
            // Application cursor keys, mouse reporting and its encodings, focus reporting,
            // bracketed paste.
            "\x1b[?1;1000;1002;1003;1004;1005;1006;2004l",
            // Auto-wrap on, numeric keypad.
            "\x1b[?7h\x1b>",
            // The terminal's own cursor style.
            "\x1b[0 q",
        )
    };
}

/// The bytes that put a terminal showing its normal screen back in order after a client
/// leaves a session: the synchronized update a program left open ended, kitty keyboard flags
/// popped, the scroll region reset, xterm's modifyOtherKeys reset, SGR attributes and
/// hyperlink reset, ASCII character sets, insert and automatic-newline modes off, application
/// cursor keys, mouse reporting and its encodings, focus reporting and bracketed paste off,
/// auto-wrap on, the numeric keypad, the terminal's own cursor style, the cursor shown, and
/// what the program drew below the cursor (an inline TUI's footer) erased.
///
/// The cursor stays where the program left it: it moves neither for the scroll region
/// (`ESC [ r` homes it, so it is saved and restored around it) nor for an exit from the
/// alternate screen, which xterm and tmux answer by restoring a cursor saved long ago even when
/// the normal screen is already shown. Origin mode is left as the program set it: harmless
/// once the scroll region is the whole screen, and resetting it would home the cursor. A
/// terminal on the alternate screen takes [`RESTORE_TERMINAL_FROM_ALTERNATE`] instead.
pub const RESTORE_TERMINAL: &[u8] = concat!(
    "\x1b[?2026l",
    "\x1b7\x1b[r\x1b8",
    baseline!(),
    "\x1b[?25h\x1b[J",
)
.as_bytes();

/// [`RESTORE_TERMINAL`] for a terminal showing the alternate screen (a full-screen program's):
/// the alternate screen left, which brings back the normal screen and the cursor as they were
/// when the alternate screen was entered (by the program or by the redraw that showed it),
/// then everything else reset the same way, with kitty keyboard flags popped on both screens.
pub const RESTORE_TERMINAL_FROM_ALTERNATE: &[u8] = concat!(
    "\x1b[?2026l",
    "\x1b[<65535u",
    "\x1b[r\x1b[?1049l",
    baseline!(),
    "\x1b[?25h",
)
.as_bytes();

/// A run of blank cells this long or longer between two drawn cells is skipped with a cursor
/// move rather than drawn as spaces.
const MIN_SKIP: usize = 4;
/// A run of erased cells in one background colour this long or longer at the end of a row is
/// erased (`ESC [ K`, which fills with the background colour) rather than drawn.
const MIN_ERASE: usize = 4;
/// Kitty keyboard flags deeper than this in a stack replace its top entry: the emulator's own
/// bound (4096) evicts from the wrong stack and panics when that one is empty.
const MAX_KEYBOARD_DEPTH: usize = 1024;
/// The zero-width joiner.
const ZWJ: char = '\u{200d}';

impl Screen {
    /// The bytes that make a terminal of the same size show what the program's terminal shows
    /// now and behave as it does, whatever that terminal showed and whatever modes it was in
    /// before: for a client attaching to a running session, which then passes the program's
    /// output on. Renders what waits first.
    ///
    /// In order (xterm and tmux sequences):
    /// - A preamble that does not depend on the terminal's state: a synchronized update begins
    ///   (`ESC [ ? 2026 h`, so that the terminal shows the result at once), the kitty keyboard
    ///   flags are popped on both screens, the alternate screen is entered or left as the
    ///   program's is (`ESC [ ? 1049 h/l`), then the modes below are reset (as by
    ///   [`RESTORE_TERMINAL`]), origin mode off, the cursor hidden while drawing, the scroll
    ///   region the whole screen (`ESC [ r`), the screen cleared (`ESC [ H ESC [ 2 J`). No
    ///   `ESC c`, which resizes or flashes some terminals.
    /// - Every visible row of the grid shown (the alternate one when the program is on it),
    ///   each cell with its attributes as SGR, sent only where they change: default, named (the
    ///   16 colours), indexed (256) and RGB foreground and background, bold, dim, italic,
    ///   underline (double, curly, dotted and dashed as `4:n` after a plain `4`, which
    ///   terminals that know no `4:n` keep), underline colour (`58:…`), inverse, hidden,
    ///   strikethrough, and OSC 8 hyperlinks. Wide characters, combining marks and joined emoji
    ///   are drawn as in the cell; blank cells are skipped with cursor moves and a run of cells
    ///   erased in one background colour at the end of a row is erased again (`ESC [ K`). A row
    ///   that wraps onto the next is drawn to its end and the next one's first character wraps
    ///   there, so the terminal knows them for one line (selection, reflow). Rows are reached
    ///   by absolute cursor moves, and a cursor move follows the last column of the last row:
    ///   nothing scrolls.
    /// - The cursor saved by `ESC 7` (position, attributes, character sets), saved again.
    /// - The modes that change what keys send or how the terminal behaves: application cursor
    ///   keys (`?1`), application keypad (`ESC =`), bracketed paste (`?2004`), mouse reporting
    ///   (`?1000`, `?1002`, `?1003`) and its encodings (`?1006` SGR, `?1005` UTF-8), focus
    ///   reporting (`?1004`), alternate scroll (`?1007`, set or reset), auto-wrap off (`?7l`),
    ///   the kitty keyboard flags (pushed with `ESC [ > flags u`), xterm's modifyOtherKeys
    ///   (`ESC [ > 4 ; n m`) and a cursor style other than the default (`ESC [ n SP q`).
    /// - The scroll region when it is not the whole screen, origin mode, then the cursor's
    ///   position. A cursor waiting past the last column (the next character wraps first) is
    ///   put there by drawing the cell under it again.
    /// - Insert mode (`ESC [ 4 h`) and automatic newline (`ESC [ 20 h`), the character sets
    ///   designated (DEC line drawing) and the one invoked (`SO`), the attributes and hyperlink
    ///   the program draws with next, the cursor shown if it is, and the synchronized update
    ///   ended — unless the program is in the middle of one of its own: the terminal then shows
    ///   the result when the program ends it.
    ///
    /// Not reproduced, because the emulator does not keep it or does not show it: the history
    /// (only the visible rows are drawn; the terminal's scrollback keeps what it had), the
    /// normal screen under the alternate one (the terminal's own comes back when the program
    /// leaves it), the window title and its stack, the colour palette (OSC 4, 10, 11, 12),
    /// tab stops (a tab's cell is marked as one by drawing a tab there, on the terminal's
    /// stops), blinking text, the kitty keyboard flags below the top of the stack and those of
    /// the screen not shown, the cursor saved on the screen not shown, modes the emulator does
    /// not implement (urgency hints `?1042`, the urxvt and SGR-pixel mouse encodings `?1015`
    /// and `?1016`, meta-key modes, left and right margins, reverse video `?5`), the difference
    /// between the default cursor style and an explicit steady block, a wrap from the last row
    /// (which cannot be redrawn without scrolling) or from the row of a cursor waiting past its
    /// end (the cell drawn again there ends it), halves of wide characters that the emulator's
    /// insertions and deletions split (drawn blank, as terminals show them), and a cursor outside
    /// the scroll region in origin mode (it is put inside).
    ///
    /// ```
    /// use clippy_screen::Screen;
    ///
    /// let mut program = Screen::new(20, 3);
    /// program.feed(b"\x1b[?1049h\x1b[2;3H\x1b[1;31mhello\x1b[m\x1b[?2004h");
    /// let redraw = program.redraw();
    ///
    /// // A terminal of the same size, whatever it showed, shows the same after the redraw.
    /// let mut terminal = Screen::new(20, 3);
    /// terminal.feed(b"old text\x1b[31m\x1b[?25l");
    /// terminal.feed(&redraw);
    /// assert_eq!(terminal.snapshot(0), program.snapshot(0));
    /// assert_eq!(terminal.snapshot(0).lines, ["", "  hello", ""]);
    /// ```
    pub fn redraw(&mut self) -> Vec<u8> {
        self.catch_up();
        let mode = *self.term.mode();
        let grid = self.term.grid();
        let mut painter = Painter::new(grid.columns());
        painter.push("\x1b[?2026h\x1b[<65535u");
        painter.push(if mode.contains(TermMode::ALT_SCREEN) {
            "\x1b[?1049h"
        } else {
            "\x1b[?1049l"
        });
        painter.push(concat!(baseline!(), "\x1b[?6;25l\x1b[r\x1b[H\x1b[2J"));
        painter.rows(grid);
        painter.saved_cursor(&grid.saved_cursor);
        painter.modes(mode, self.term.cursor_style(), &self.shadow);
        painter.cursor(grid, mode, &self.shadow);
        if !self.mid_frame {
            painter.push("\x1b[?2026l");
        }
        painter.out.into_bytes()
    }
}

/// What the emulator keeps to itself, or does not keep, and a redraw needs: followed from the
/// calls that change it (the emulator is fed through `Joining`, which tells this).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shadow {
    /// The scroll region's rows, first and past the last (0-based), as the emulator has it;
    /// `None` when it is the whole screen.
    region: Option<(usize, usize)>,
    /// The character set invoked for drawing (`SI` invokes G0, `SO` G1).
    charset: CharsetIndex,
    /// xterm's modifyOtherKeys.
    modify_other_keys: ModifyOtherKeys,
    /// How deep the kitty keyboard flag stacks of the normal and the alternate screen are.
    keyboard_depth: [usize; 2],
}

impl Default for Shadow {
    fn default() -> Self {
        Self {
            region: None,
            charset: CharsetIndex::G0,
            modify_other_keys: ModifyOtherKeys::Reset,
            keyboard_depth: [0; 2],
        }
    }
}

impl Shadow {
    /// `ESC [ top ; bottom r` on a screen of `lines` rows (`top` 1-based, as parsed), as the
    /// emulator takes it: an empty region is refused, one past the bottom is cut there.
    pub(crate) fn set_region(&mut self, top: usize, bottom: Option<usize>, lines: usize) {
        let bottom = bottom.unwrap_or(lines);
        if top >= bottom {
            return;
        }
        let start = top.saturating_sub(1).min(lines);
        let end = bottom.min(lines);
        self.region = (start > 0 || end < lines).then_some((start, end));
    }

    /// The scroll region is the whole screen again (a resize, `ESC [ ? 3 h/l`).
    pub(crate) fn reset_region(&mut self) {
        self.region = None;
    }

    /// A full reset (`ESC c`).
    pub(crate) fn reset(&mut self) {
        *self = Self::default();
    }

    /// `SI` or `SO`.
    pub(crate) fn set_charset(&mut self, charset: CharsetIndex) {
        self.charset = charset;
    }

    /// `ESC [ > 4 ; n m`.
    pub(crate) fn set_modify_other_keys(&mut self, modify: ModifyOtherKeys) {
        self.modify_other_keys = modify;
    }

    /// Kitty keyboard flags pushed on the (alternate) screen's stack. Says whether the stack is
    /// full and its top entry has to go first.
    pub(crate) fn push_keyboard_mode(&mut self, alternate: bool) -> bool {
        let depth = &mut self.keyboard_depth[usize::from(alternate)];
        if *depth >= MAX_KEYBOARD_DEPTH {
            return true;
        }
        *depth += 1;
        false
    }

    /// Kitty keyboard flags popped from the (alternate) screen's stack.
    pub(crate) fn pop_keyboard_modes(&mut self, alternate: bool, count: u16) {
        let depth = &mut self.keyboard_depth[usize::from(alternate)];
        *depth = depth.saturating_sub(usize::from(count));
    }

    /// The scroll region, when it is not the whole screen and a terminal takes it.
    fn region(&self) -> Option<(usize, usize)> {
        self.region.filter(|&(start, end)| start < end)
    }
}

/// What a cell is drawn with: what SGR and OSC 8 set.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pen {
    fg: Color,
    bg: Color,
    /// Of [`STYLE`] only.
    flags: Flags,
    underline: Option<Color>,
    link: Option<Hyperlink>,
}

/// The flags SGR sets (the others say how a cell takes part in a wide character or a wrap).
const STYLE: Flags = Flags::INVERSE
    .union(Flags::BOLD)
    .union(Flags::ITALIC)
    .union(Flags::ALL_UNDERLINES)
    .union(Flags::DIM)
    .union(Flags::HIDDEN)
    .union(Flags::STRIKEOUT);

impl Default for Pen {
    fn default() -> Self {
        Self::of(&Cell::default())
    }
}

impl Pen {
    fn of(cell: &Cell) -> Self {
        Self {
            fg: cell.fg,
            bg: cell.bg,
            flags: cell.flags & STYLE,
            underline: cell.underline_color(),
            link: cell.hyperlink(),
        }
    }
}

/// Where the terminal's cursor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// On a cell: row and column.
    Cell(usize, usize),
    /// Past the last column of a row: the next character wraps first.
    PastEnd(usize),
}

/// A redraw being written, and where it leaves the terminal.
struct Painter {
    out: String,
    columns: usize,
    /// What the terminal draws with.
    pen: Pen,
    /// Where the terminal's cursor is, when that is known.
    at: Option<At>,
}

impl Painter {
    fn new(columns: usize) -> Self {
        Self {
            out: String::new(),
            columns,
            pen: Pen::default(),
            at: None,
        }
    }

    fn push(&mut self, text: &str) {
        self.out.push_str(text);
    }

    /// Draws the visible rows on a cleared screen.
    fn rows(&mut self, grid: &Grid<Cell>) {
        let rows = grid.screen_lines();
        // The row before wraps onto this one.
        let mut continued = false;
        for row in 0..rows {
            let cells = &grid[Line(row as i32)][..];
            // The last row's wrap cannot be drawn without scrolling.
            let wrapping = row + 1 < rows && crate::wraps(&grid[Line(row as i32)]);
            let (mut end, erase) = if wrapping {
                (cells.len(), false)
            } else {
                extent(cells)
            };
            if continued {
                // Its first cell is drawn even if blank, for the wrap.
                end = end.max(1);
            }
            let mut column = 0;
            while column < end {
                let cell = &cells[column];
                if column == 0 && continued && self.wraps_onto(row, cell) {
                    // Drawn where the cursor is: the character wraps there from the row before.
                } else if is_blank(cell) {
                    let run = cells[column..end]
                        .iter()
                        .take_while(|cell| is_blank(cell))
                        .count();
                    if run < MIN_SKIP
                        && self.pen == Pen::default()
                        && self.at == Some(At::Cell(row, column))
                    {
                        self.out.extend(std::iter::repeat_n(' ', run));
                        self.at = Some(self.after(row, column + run));
                    }
                    column += run;
                    continue;
                } else if cell.flags.contains(Flags::LEADING_WIDE_CHAR_SPACER)
                    && wrapping
                    && column + 1 == cells.len()
                    && {
                        let next = &grid[Line(row as i32 + 1)][..];
                        width(next, 0) == 2 && Pen::of(&next[0]) == Pen::of(cell)
                    }
                {
                    // The wide character that did not fit here puts it there as it wraps (in
                    // its colours: a spacer in others is drawn as a blank).
                    self.goto(row, column);
                    column += 1;
                    continue;
                } else {
                    self.goto(row, column);
                }
                if cell.c == '\t' && !(wrapping && column + 1 == cells.len()) {
                    self.draw_tab(cell, row, column);
                    column += 1;
                } else {
                    let width = width(cells, column);
                    self.draw(cell, row, column, width);
                    column += width;
                }
            }
            if let Some(erased) = cells.get(end).filter(|_| erase) {
                self.goto(row, end);
                self.set_pen(&Pen::of(erased));
                self.push("\x1b[K");
            }
            continued = wrapping;
        }
    }

    /// Whether drawing `cell` where the cursor is puts it first on `row`, wrapping from the
    /// row before.
    fn wraps_onto(&self, row: usize, cell: &Cell) -> bool {
        match self.at {
            Some(At::PastEnd(before)) => before + 1 == row,
            // A wide character does not fit in the last column: it wraps. (The row before
            // stopped there only for one.)
            Some(At::Cell(before, column)) => {
                before + 1 == row
                    && column + 1 == self.columns
                    && cell.flags.contains(Flags::WIDE_CHAR)
            }
            None => false,
        }
    }

    /// Where the cursor is after drawing up to `column` (excluded) of `row`.
    fn after(&self, row: usize, column: usize) -> At {
        if column < self.columns {
            At::Cell(row, column)
        } else {
            At::PastEnd(row)
        }
    }

    /// Moves the cursor to a cell: along its row when it is there, else absolutely.
    fn goto(&mut self, row: usize, column: usize) {
        match self.at {
            Some(At::Cell(at_row, at_column)) if at_row == row && at_column == column => {}
            Some(At::Cell(at_row, at_column)) if at_row == row && at_column < column => {
                let _ = write!(self.out, "\x1b[{}C", column - at_column);
            }
            _ => {
                let _ = write!(self.out, "\x1b[{};{}H", row + 1, column + 1);
            }
        }
        self.at = Some(At::Cell(row, column));
    }

    /// Draws `cell`, `width` cells wide, where the cursor is (on `row` and `column`).
    fn draw(&mut self, cell: &Cell, row: usize, column: usize, width: usize) {
        self.set_pen(&Pen::of(cell));
        // A tab's cell is blank; so is half a wide character, which no terminal shows.
        let split = width == 1 && cell.flags.contains(Flags::WIDE_CHAR);
        let c = if split || matches!(cell.c, '\0' | '\t') {
            ' '
        } else {
            cell.c
        };
        self.out.push(c);
        let marks = match split {
            true => &[],
            false => cell.zerowidth().unwrap_or_default(),
        };
        self.out.extend(marks);
        self.at = Some(self.after(row, column + width));
        if marks.last() == Some(&ZWJ) {
            // The next character would join this cell: a cursor move in between stops it.
            self.at = None;
        }
    }

    /// Draws a cell a tab went over: blank, in the cell's colours, then marked by a tab from
    /// there (a terminal that keeps tabs copies one).
    fn draw_tab(&mut self, cell: &Cell, row: usize, column: usize) {
        self.draw(cell, row, column, 1);
        let _ = write!(self.out, "\x1b[{}G\t", column + 1);
        self.at = None;
    }

    /// Draws with `pen` from now on.
    fn set_pen(&mut self, pen: &Pen) {
        let mut change = String::new();
        sgr_change(&self.pen, pen, &mut change);
        if !change.is_empty() {
            let mut reset = String::from("0");
            sgr_change(&Pen::default(), pen, &mut reset);
            let params = if reset.len() <= change.len() {
                reset
            } else {
                change
            };
            let _ = write!(self.out, "\x1b[{params}m");
        }
        if pen.link != self.pen.link {
            hyperlink(&mut self.out, pen.link.as_ref());
        }
        self.pen = pen.clone();
    }

    /// Saves a cursor as the program's was saved (`ESC 7`).
    fn saved_cursor(&mut self, saved: &Cursor<Cell>) {
        let _ = write!(
            self.out,
            "\x1b[{};{}H",
            saved.point.line.0.max(0) + 1,
            saved.point.column.0 + 1
        );
        self.set_pen(&Pen::of(&saved.template));
        let designated = designations(&saved.charsets);
        self.push(&designated);
        self.push("\x1b7");
        if !designated.is_empty() {
            self.push("\x1b(B\x1b)B\x1b*B\x1b+B");
        }
        self.at = None;
    }

    /// Sets the modes that change what keys send or how the terminal behaves, but for those
    /// that change drawing or move the cursor.
    fn modes(&mut self, mode: TermMode, style: CursorStyle, shadow: &Shadow) {
        let mut set = String::new();
        for (flag, number) in [
            (TermMode::APP_CURSOR, 1),
            (TermMode::MOUSE_REPORT_CLICK, 1000),
            (TermMode::MOUSE_DRAG, 1002),
            (TermMode::MOUSE_MOTION, 1003),
            (TermMode::FOCUS_IN_OUT, 1004),
            (TermMode::UTF8_MOUSE, 1005),
            (TermMode::SGR_MOUSE, 1006),
            (TermMode::ALTERNATE_SCROLL, 1007),
            (TermMode::BRACKETED_PASTE, 2004),
        ] {
            if mode.contains(flag) {
                add(&mut set, number);
            }
        }
        if !set.is_empty() {
            let _ = write!(self.out, "\x1b[?{set}h");
        }
        let mut reset = String::new();
        for (flag, number) in [(TermMode::LINE_WRAP, 7), (TermMode::ALTERNATE_SCROLL, 1007)] {
            if !mode.contains(flag) {
                add(&mut reset, number);
            }
        }
        if !reset.is_empty() {
            let _ = write!(self.out, "\x1b[?{reset}l");
        }
        if mode.contains(TermMode::APP_KEYPAD) {
            self.push("\x1b=");
        }
        let keyboard: u8 = [
            (TermMode::DISAMBIGUATE_ESC_CODES, 1),
            (TermMode::REPORT_EVENT_TYPES, 2),
            (TermMode::REPORT_ALTERNATE_KEYS, 4),
            (TermMode::REPORT_ALL_KEYS_AS_ESC, 8),
            (TermMode::REPORT_ASSOCIATED_TEXT, 16),
        ]
        .into_iter()
        .filter(|&(flag, _)| mode.contains(flag))
        .map(|(_, bit)| bit)
        .sum();
        if keyboard != 0 {
            let _ = write!(self.out, "\x1b[>{keyboard}u");
        }
        match shadow.modify_other_keys {
            ModifyOtherKeys::Reset => {}
            ModifyOtherKeys::EnableExceptWellDefined => self.push("\x1b[>4;1m"),
            ModifyOtherKeys::EnableAll => self.push("\x1b[>4;2m"),
        }
        if style != CursorStyle::default() {
            let shape = match style.shape {
                CursorShape::Block | CursorShape::HollowBlock => Some(1),
                CursorShape::Underline => Some(3),
                CursorShape::Beam => Some(5),
                CursorShape::Hidden => None,
            };
            if let Some(shape) = shape {
                let _ = write!(self.out, "\x1b[{} q", shape + u8::from(!style.blinking));
            }
        }
    }

    /// Puts the cursor where the program's is, in the scroll region and origin mode the
    /// program set, then sets up what the program draws with next.
    fn cursor(&mut self, grid: &Grid<Cell>, mode: TermMode, shadow: &Shadow) {
        let region = shadow.region();
        if let Some((start, end)) = region {
            let _ = write!(self.out, "\x1b[{};{}r", start + 1, end);
        }
        let mut top = 0;
        if mode.contains(TermMode::ORIGIN) {
            self.push("\x1b[?6h");
            top = region.map_or(0, |(start, _)| start);
        }
        let cursor = &grid.cursor;
        let row = cursor.point.line.0.max(0) as usize;
        let mut column = cursor.point.column.0;
        let cells = &grid[cursor.point.line][..];
        if cursor.input_needs_wrap
            && column > 0
            && cells
                .get(column)
                .is_some_and(|cell| cell.flags.contains(Flags::WIDE_CHAR_SPACER))
        {
            column -= 1;
        }
        let _ = write!(
            self.out,
            "\x1b[{};{}H",
            row.saturating_sub(top) + 1,
            column + 1
        );
        if cursor.input_needs_wrap
            && let Some(cell) = cells.get(column)
        {
            // Drawn again, the cell under the cursor leaves it past the last column.
            self.draw(cell, row, column, width(cells, column));
        }
        let mut set = String::new();
        for (flag, number) in [(TermMode::INSERT, 4), (TermMode::LINE_FEED_NEW_LINE, 20)] {
            if mode.contains(flag) {
                add(&mut set, number);
            }
        }
        if !set.is_empty() {
            let _ = write!(self.out, "\x1b[{set}h");
        }
        self.push(&designations(&cursor.charsets));
        // The parser invokes G2 and G3 no way: G1 is the only other one.
        if shadow.charset == CharsetIndex::G1 {
            self.push("\x0e");
        }
        self.set_pen(&Pen::of(&cursor.template));
        if mode.contains(TermMode::SHOW_CURSOR) {
            self.push("\x1b[?25h");
        }
    }
}

/// How many cells the character in `cells[column]` takes: two for a wide character followed
/// by its spacer. (The emulator shifts cells for insertions and deletions without regard to
/// wide characters: one can lose its spacer or a spacer its character, and is drawn blank.)
fn width(cells: &[Cell], column: usize) -> usize {
    let wide = cells[column].flags.contains(Flags::WIDE_CHAR)
        && cells
            .get(column + 1)
            .is_some_and(|next| next.flags.contains(Flags::WIDE_CHAR_SPACER));
    if wide { 2 } else { 1 }
}

/// A cell the cleared screen has already.
fn is_blank(cell: &Cell) -> bool {
    *cell == Cell::default()
}

/// How much of a row that does not wrap is drawn: up to its last cell that is not blank, or,
/// when a run of cells erased in one background colour ends it, up to that run, which is then
/// erased.
fn extent(cells: &[Cell]) -> (usize, bool) {
    let end = cells
        .iter()
        .rposition(|cell| !is_blank(cell))
        .map_or(0, |last| last + 1);
    if end < cells.len() {
        return (end, false);
    }
    let Some(last) = cells.last().filter(|cell| **cell == Cell::from(cell.bg)) else {
        return (end, false);
    };
    let start = cells
        .iter()
        .rposition(|cell| cell != last)
        .map_or(0, |before| before + 1);
    if cells.len() - start >= MIN_ERASE {
        (start, true)
    } else {
        (end, false)
    }
}

/// The sequences that designate DEC line drawing where `charsets` have it (the rest is
/// ASCII).
fn designations(charsets: &Charsets) -> String {
    let mut out = String::new();
    for (index, intermediate) in [
        (CharsetIndex::G0, '('),
        (CharsetIndex::G1, ')'),
        (CharsetIndex::G2, '*'),
        (CharsetIndex::G3, '+'),
    ] {
        if charsets[index] == StandardCharset::SpecialCharacterAndLineDrawing {
            out.push('\x1b');
            out.push(intermediate);
            out.push('0');
        }
    }
    out
}

/// Appends one SGR parameter.
fn add(params: &mut String, param: impl std::fmt::Display) {
    if !params.is_empty() {
        params.push(';');
    }
    let _ = write!(params, "{param}");
}

/// Appends the SGR parameters that take a terminal drawing with `from` to drawing with `to`
/// (hyperlinks aside).
fn sgr_change(from: &Pen, to: &Pen, params: &mut String) {
    let removed = from.flags.difference(to.flags);
    let mut added = to.flags.difference(from.flags);
    // One code ends both bold and dim.
    if removed.intersects(Flags::BOLD | Flags::DIM) {
        add(params, 22);
        added |= to.flags & (Flags::BOLD | Flags::DIM);
    }
    for (flag, off) in [
        (Flags::ITALIC, 23),
        (Flags::INVERSE, 27),
        (Flags::HIDDEN, 28),
        (Flags::STRIKEOUT, 29),
    ] {
        if removed.contains(flag) {
            add(params, off);
        }
    }
    let underline = to.flags & Flags::ALL_UNDERLINES;
    if underline != from.flags & Flags::ALL_UNDERLINES {
        add(params, underline_style(underline));
    }
    for (flag, on) in [
        (Flags::BOLD, 1),
        (Flags::DIM, 2),
        (Flags::ITALIC, 3),
        (Flags::INVERSE, 7),
        (Flags::HIDDEN, 8),
        (Flags::STRIKEOUT, 9),
    ] {
        if added.contains(flag) {
            add(params, on);
        }
    }
    if from.fg != to.fg {
        color(params, 30, to.fg);
    }
    if from.bg != to.bg {
        color(params, 40, to.bg);
    }
    if from.underline != to.underline {
        underline_color(params, to.underline);
    }
}

/// The SGR parameters of an underline style: a plain underline first, which a terminal that
/// does not know `4:n` keeps.
fn underline_style(underline: Flags) -> &'static str {
    if underline.contains(Flags::DOUBLE_UNDERLINE) {
        "4;4:2"
    } else if underline.contains(Flags::UNDERCURL) {
        "4;4:3"
    } else if underline.contains(Flags::DOTTED_UNDERLINE) {
        "4;4:4"
    } else if underline.contains(Flags::DASHED_UNDERLINE) {
        "4;4:5"
    } else if underline.contains(Flags::UNDERLINE) {
        "4"
    } else {
        "24"
    }
}

/// Appends a foreground (`base` 30) or background (`base` 40) colour.
fn color(params: &mut String, base: usize, color: Color) {
    match color {
        Color::Named(named) => {
            let index = named as usize;
            let dim = NamedColor::DimBlack as usize;
            let code = match index {
                0..=7 => base + index,
                8..=15 => base + 60 + index - 8,
                // The dim colours are the normal ones drawn dim.
                _ if (dim..dim + 8).contains(&index) => base + index - dim,
                // The default colours (and those only a renderer uses).
                _ => base + 9,
            };
            add(params, code);
        }
        Color::Indexed(index) => add(params, format_args!("{};5;{index}", base + 8)),
        Color::Spec(rgb) => add(
            params,
            format_args!("{};2;{};{};{}", base + 8, rgb.r, rgb.g, rgb.b),
        ),
    }
}

/// Appends an underline colour (`None`: the foreground's), with colons, which a terminal
/// that does not know SGR 58 skips whole.
fn underline_color(params: &mut String, color: Option<Color>) {
    match color {
        Some(Color::Indexed(index)) => add(params, format_args!("58:5:{index}")),
        Some(Color::Named(named)) if (named as usize) < 16 => {
            add(params, format_args!("58:5:{}", named as usize));
        }
        Some(Color::Spec(rgb)) => add(params, format_args!("58:2::{}:{}:{}", rgb.r, rgb.g, rgb.b)),
        Some(Color::Named(_)) | None => add(params, 59),
    }
}

/// Appends OSC 8 for `link` (none: the end of a link), without the control characters that
/// would end it early.
fn hyperlink(out: &mut String, link: Option<&Hyperlink>) {
    out.push_str("\x1b]8;");
    let uri: String = link
        .map(|link| link.uri().chars().filter(|c| !c.is_control()).collect())
        .unwrap_or_default();
    if let Some(link) = link.filter(|_| !uri.is_empty()) {
        out.push_str("id=");
        out.extend(
            link.id()
                .chars()
                .filter(|&c| !c.is_control() && c != ':' && c != ';'),
        );
    }
    out.push(';');
    out.push_str(&uri);
    out.push_str("\x1b\\");
}

#[cfg(test)]
mod tests;
