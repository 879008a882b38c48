//! Emoji joined by U+200D (ZWJ) kept in one cell, as the programs that draw them count them.
//!
//! A terminal emulator that gives each emoji of `👨‍👩‍👧` its own two cells places every later
//! character of the row further right than the program (which counts the sequence as one
//! two-cell character) put it, and the program's next absolute cursor move draws over the
//! family. The screen therefore joins a character that follows a ZWJ onto the cell of the one
//! before, and hands everything else to the emulator unchanged, noting on the way what the
//! emulator keeps to itself and a redraw needs (see [`Shadow`]).

use alacritty_terminal::Term;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::Column;
use alacritty_terminal::term::TermMode;
use alacritty_terminal::term::cell::Flags;
use alacritty_terminal::vte::ansi::cursor_icon::CursorIcon;
use alacritty_terminal::vte::ansi::{
    Attr, CharsetIndex, ClearMode, CursorShape, CursorStyle, Handler, Hyperlink, KeyboardModes,
    KeyboardModesApplyBehavior, LineClearMode, Mode, ModifyOtherKeys, NamedPrivateMode,
    PrivateMode, Rgb, ScpCharPath, ScpUpdateMode, StandardCharset, TabulationClearMode,
};

use crate::Listener;
use crate::redraw::Shadow;

const ZWJ: char = '\u{200d}';

/// The emulator, fed through the joining of ZWJ sequences.
pub(crate) struct Joining<'a> {
    pub(crate) term: &'a mut Term<Listener>,
    /// The last character drawn was a ZWJ.
    pub(crate) after_zwj: &'a mut bool,
    /// What the emulator keeps to itself.
    pub(crate) shadow: &'a mut Shadow,
}

impl Joining<'_> {
    /// Whether the alternate screen is shown.
    fn alternate(&self) -> bool {
        self.term.mode().contains(TermMode::ALT_SCREEN)
    }

    /// Adds `c` to the cell of the character drawn last (where the emulator put the ZWJ).
    fn join(&mut self, c: char) {
        let grid = self.term.grid_mut();
        let cursor = &grid.cursor;
        let line = cursor.point.line;
        let mut column = cursor.point.column;
        if !cursor.input_needs_wrap {
            column = Column(column.0.saturating_sub(1));
        }
        if grid[line][column].flags.contains(Flags::WIDE_CHAR_SPACER) {
            column = Column(column.0.saturating_sub(1));
        }
        grid[line][column].push_zerowidth(c);
    }
}

impl Handler for Joining<'_> {
    fn input(&mut self, c: char) {
        if *self.after_zwj && c != ZWJ {
            *self.after_zwj = false;
            self.join(c);
            return;
        }
        *self.after_zwj = c == ZWJ;
        self.term.input(c);
    }

    fn set_title(&mut self, a0: Option<String>) {
        *self.after_zwj = false;
        self.term.set_title(a0);
    }

    fn set_cursor_style(&mut self, a0: Option<CursorStyle>) {
        *self.after_zwj = false;
        self.term.set_cursor_style(a0);
    }

    fn set_cursor_shape(&mut self, a0: CursorShape) {
        *self.after_zwj = false;
        self.term.set_cursor_shape(a0);
    }

    fn goto(&mut self, a0: i32, a1: usize) {
        *self.after_zwj = false;
        self.term.goto(a0, a1);
    }

    fn goto_line(&mut self, a0: i32) {
        *self.after_zwj = false;
        self.term.goto_line(a0);
    }

    fn goto_col(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.goto_col(a0);
    }

    fn insert_blank(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.insert_blank(a0);
    }

    fn move_up(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.move_up(a0);
    }

    fn move_down(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.move_down(a0);
    }

    fn identify_terminal(&mut self, a0: Option<char>) {
        *self.after_zwj = false;
        self.term.identify_terminal(a0);
    }

    fn device_status(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.device_status(a0);
    }

    fn move_forward(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.move_forward(a0);
    }

    fn move_backward(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.move_backward(a0);
    }

    fn move_down_and_cr(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.move_down_and_cr(a0);
    }

    fn move_up_and_cr(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.move_up_and_cr(a0);
    }

    fn put_tab(&mut self, a0: u16) {
        *self.after_zwj = false;
        self.term.put_tab(a0);
    }

    fn backspace(&mut self) {
        *self.after_zwj = false;
        self.term.backspace();
    }

    fn carriage_return(&mut self) {
        *self.after_zwj = false;
        self.term.carriage_return();
    }

    fn linefeed(&mut self) {
        *self.after_zwj = false;
        self.term.linefeed();
    }

    fn bell(&mut self) {
        *self.after_zwj = false;
        self.term.bell();
    }

    fn substitute(&mut self) {
        *self.after_zwj = false;
        self.term.substitute();
    }

    fn newline(&mut self) {
        *self.after_zwj = false;
        self.term.newline();
    }

    fn set_horizontal_tabstop(&mut self) {
        *self.after_zwj = false;
        self.term.set_horizontal_tabstop();
    }

    fn scroll_up(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.scroll_up(a0);
    }

    fn scroll_down(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.scroll_down(a0);
    }

    fn insert_blank_lines(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.insert_blank_lines(a0);
    }

    fn delete_lines(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.delete_lines(a0);
    }

    fn erase_chars(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.erase_chars(a0);
    }

    fn delete_chars(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.delete_chars(a0);
    }

    fn move_backward_tabs(&mut self, a0: u16) {
        *self.after_zwj = false;
        self.term.move_backward_tabs(a0);
    }

    fn move_forward_tabs(&mut self, a0: u16) {
        *self.after_zwj = false;
        self.term.move_forward_tabs(a0);
    }

    fn save_cursor_position(&mut self) {
        *self.after_zwj = false;
        self.term.save_cursor_position();
    }

    fn restore_cursor_position(&mut self) {
        *self.after_zwj = false;
        self.term.restore_cursor_position();
    }

    fn clear_line(&mut self, a0: LineClearMode) {
        *self.after_zwj = false;
        self.term.clear_line(a0);
    }

    fn clear_screen(&mut self, a0: ClearMode) {
        *self.after_zwj = false;
        self.term.clear_screen(a0);
    }

    fn clear_tabs(&mut self, a0: TabulationClearMode) {
        *self.after_zwj = false;
        self.term.clear_tabs(a0);
    }

    fn set_tabs(&mut self, a0: u16) {
        *self.after_zwj = false;
        self.term.set_tabs(a0);
    }

    fn reset_state(&mut self) {
        *self.after_zwj = false;
        self.shadow.reset();
        self.term.reset_state();
    }

    fn reverse_index(&mut self) {
        *self.after_zwj = false;
        self.term.reverse_index();
    }

    fn terminal_attribute(&mut self, a0: Attr) {
        *self.after_zwj = false;
        self.term.terminal_attribute(a0);
    }

    fn set_mode(&mut self, a0: Mode) {
        *self.after_zwj = false;
        self.term.set_mode(a0);
    }

    fn unset_mode(&mut self, a0: Mode) {
        *self.after_zwj = false;
        self.term.unset_mode(a0);
    }

    fn report_mode(&mut self, a0: Mode) {
        *self.after_zwj = false;
        self.term.report_mode(a0);
    }

    fn set_private_mode(&mut self, a0: PrivateMode) {
        *self.after_zwj = false;
        if a0 == PrivateMode::Named(NamedPrivateMode::ColumnMode) {
            self.shadow.reset_region();
        }
        self.term.set_private_mode(a0);
    }

    fn unset_private_mode(&mut self, a0: PrivateMode) {
        *self.after_zwj = false;
        if a0 == PrivateMode::Named(NamedPrivateMode::ColumnMode) {
            self.shadow.reset_region();
        }
        self.term.unset_private_mode(a0);
    }

    fn report_private_mode(&mut self, a0: PrivateMode) {
        *self.after_zwj = false;
        self.term.report_private_mode(a0);
    }

    fn set_scrolling_region(&mut self, a0: usize, a1: Option<usize>) {
        *self.after_zwj = false;
        self.shadow.set_region(a0, a1, self.term.screen_lines());
        self.term.set_scrolling_region(a0, a1);
    }

    fn set_keypad_application_mode(&mut self) {
        *self.after_zwj = false;
        self.term.set_keypad_application_mode();
    }

    fn unset_keypad_application_mode(&mut self) {
        *self.after_zwj = false;
        self.term.unset_keypad_application_mode();
    }

    fn set_active_charset(&mut self, a0: CharsetIndex) {
        *self.after_zwj = false;
        self.shadow.set_charset(a0);
        self.term.set_active_charset(a0);
    }

    fn configure_charset(&mut self, a0: CharsetIndex, a1: StandardCharset) {
        *self.after_zwj = false;
        self.term.configure_charset(a0, a1);
    }

    fn set_color(&mut self, a0: usize, a1: Rgb) {
        *self.after_zwj = false;
        self.term.set_color(a0, a1);
    }

    fn dynamic_color_sequence(&mut self, a0: String, a1: usize, a2: &str) {
        *self.after_zwj = false;
        self.term.dynamic_color_sequence(a0, a1, a2);
    }

    fn reset_color(&mut self, a0: usize) {
        *self.after_zwj = false;
        self.term.reset_color(a0);
    }

    fn clipboard_store(&mut self, a0: u8, a1: &[u8]) {
        *self.after_zwj = false;
        self.term.clipboard_store(a0, a1);
    }

    fn clipboard_load(&mut self, a0: u8, a1: &str) {
        *self.after_zwj = false;
        self.term.clipboard_load(a0, a1);
    }

    fn decaln(&mut self) {
        *self.after_zwj = false;
        self.term.decaln();
    }

    fn push_title(&mut self) {
        *self.after_zwj = false;
        self.term.push_title();
    }

    fn pop_title(&mut self) {
        *self.after_zwj = false;
        self.term.pop_title();
    }

    fn text_area_size_pixels(&mut self) {
        *self.after_zwj = false;
        self.term.text_area_size_pixels();
    }

    fn text_area_size_chars(&mut self) {
        *self.after_zwj = false;
        self.term.text_area_size_chars();
    }

    fn set_hyperlink(&mut self, a0: Option<Hyperlink>) {
        *self.after_zwj = false;
        self.term.set_hyperlink(a0);
    }

    fn set_mouse_cursor_icon(&mut self, a0: CursorIcon) {
        *self.after_zwj = false;
        self.term.set_mouse_cursor_icon(a0);
    }

    fn report_keyboard_mode(&mut self) {
        *self.after_zwj = false;
        self.term.report_keyboard_mode();
    }

    fn push_keyboard_mode(&mut self, a0: KeyboardModes) {
        *self.after_zwj = false;
        if self.shadow.push_keyboard_mode(self.alternate()) {
            self.term.pop_keyboard_modes(1);
        }
        self.term.push_keyboard_mode(a0);
    }

    fn pop_keyboard_modes(&mut self, a0: u16) {
        *self.after_zwj = false;
        self.shadow.pop_keyboard_modes(self.alternate(), a0);
        self.term.pop_keyboard_modes(a0);
    }

    fn set_keyboard_mode(&mut self, a0: KeyboardModes, a1: KeyboardModesApplyBehavior) {
        *self.after_zwj = false;
        self.term.set_keyboard_mode(a0, a1);
    }

    fn set_modify_other_keys(&mut self, a0: ModifyOtherKeys) {
        *self.after_zwj = false;
        self.shadow.set_modify_other_keys(a0);
        self.term.set_modify_other_keys(a0);
    }

    fn report_modify_other_keys(&mut self) {
        *self.after_zwj = false;
        self.term.report_modify_other_keys();
    }

    fn set_scp(&mut self, a0: ScpCharPath, a1: ScpUpdateMode) {
        *self.after_zwj = false;
        self.term.set_scp(a0, a1);
    }
}
