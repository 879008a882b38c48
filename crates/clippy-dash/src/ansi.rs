//! A ratatui backend that writes ANSI escape sequences (cursor moves, SGR colours and
//! attributes) to any writer, and the bytes that enter and leave the dashboard's screen. It
//! takes the place of a terminal library: the binary owns the terminal (raw mode, size,
//! signals), this only writes.

use std::io::{self, Write};

use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::style::{Color, Modifier};

/// What turns the dashboard's screen on: the alternate screen, the cursor hidden, bracketed
/// paste on (a paste comes as one [`crate::Key::Paste`]).
pub const ENTER_SCREEN: &[u8] = b"\x1b[?1049h\x1b[?25l\x1b[?2004h\x1b[H\x1b[2J";
/// What puts the terminal back: bracketed paste off, attributes reset, the cursor shown, the
/// alternate screen left (the normal screen as it was comes back).
pub const LEAVE_SCREEN: &[u8] = b"\x1b[?2004l\x1b[0m\x1b[?25h\x1b[?1049l";
/// The terminal bell.
pub const BELL: &[u8] = b"\x07";

/// Draws ratatui's cells as ANSI escape sequences into `W`; its size is what the owner of
/// the terminal says it is ([`AnsiBackend::set_size`]).
#[derive(Debug)]
pub struct AnsiBackend<W: Write> {
    out: W,
    size: Size,
    cursor: Position,
    /// Where the next character written lands, when known.
    at: Option<Position>,
}

impl<W: Write> AnsiBackend<W> {
    /// A backend of `size` writing to `out`.
    pub fn new(out: W, size: Size) -> Self {
        Self {
            out,
            size,
            cursor: Position::ORIGIN,
            at: None,
        }
    }

    /// The terminal's size now (after a resize).
    pub fn set_size(&mut self, size: Size) {
        self.size = size;
        self.at = None;
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut W {
        &mut self.out
    }
}

impl<W: Write> Backend for AnsiBackend<W> {
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let mut style = None;
        let mut buf = Vec::with_capacity(4096);
        for (x, y, cell) in content {
            if self.at != Some(Position { x, y }) {
                write!(buf, "\x1b[{};{}H", y + 1, x + 1)?;
            }
            let this = (cell.fg, cell.bg, cell.modifier);
            if style != Some(this) {
                sgr(&mut buf, this.0, this.1, this.2)?;
                style = Some(this);
            }
            let symbol = cell.symbol();
            buf.extend_from_slice(symbol.as_bytes());
            // An ASCII cell moves the cursor by one; anything else may be wide: move there
            // explicitly next time.
            self.at = (symbol.len() == 1).then_some(Position { x: x + 1, y });
        }
        if style.is_some() {
            buf.extend_from_slice(b"\x1b[0m");
        }
        self.out.write_all(&buf)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.out.write_all(b"\x1b[?25l")
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.out.write_all(b"\x1b[?25h")
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Ok(self.cursor)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let p = position.into();
        self.cursor = p;
        self.at = Some(p);
        write!(self.out, "\x1b[{};{}H", p.y + 1, p.x + 1)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.at = None;
        self.out.write_all(b"\x1b[0m\x1b[2J")
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.out.write_all(match clear_type {
            ClearType::All => b"\x1b[0m\x1b[2J",
            ClearType::AfterCursor => b"\x1b[0m\x1b[J",
            ClearType::BeforeCursor => b"\x1b[0m\x1b[1J",
            ClearType::CurrentLine => b"\x1b[0m\x1b[2K",
            ClearType::UntilNewLine => b"\x1b[0m\x1b[K",
        })
    }

    fn size(&self) -> io::Result<Size> {
        Ok(self.size)
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        Ok(WindowSize {
            columns_rows: self.size,
            pixels: Size::default(),
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn sgr(buf: &mut Vec<u8>, fg: Color, bg: Color, modifier: Modifier) -> io::Result<()> {
    buf.extend_from_slice(b"\x1b[0");
    for (flag, code) in [
        (Modifier::BOLD, 1),
        (Modifier::DIM, 2),
        (Modifier::ITALIC, 3),
        (Modifier::UNDERLINED, 4),
        (Modifier::SLOW_BLINK, 5),
        (Modifier::REVERSED, 7),
        (Modifier::HIDDEN, 8),
        (Modifier::CROSSED_OUT, 9),
    ] {
        if modifier.contains(flag) {
            write!(buf, ";{code}")?;
        }
    }
    colour(buf, fg, 30)?;
    colour(buf, bg, 40)?;
    buf.push(b'm');
    Ok(())
}

/// `base` 30 for the foreground, 40 for the background.
fn colour(buf: &mut Vec<u8>, color: Color, base: u8) -> io::Result<()> {
    let (offset, n) = match color {
        Color::Reset => return Ok(()),
        Color::Indexed(i) => return write!(buf, ";{};5;{i}", base + 8),
        Color::Rgb(r, g, b) => return write!(buf, ";{};2;{r};{g};{b}", base + 8),
        Color::Black => (0, 0),
        Color::Red => (0, 1),
        Color::Green => (0, 2),
        Color::Yellow => (0, 3),
        Color::Blue => (0, 4),
        Color::Magenta => (0, 5),
        Color::Cyan => (0, 6),
        Color::Gray => (0, 7),
        Color::DarkGray => (60, 0),
        Color::LightRed => (60, 1),
        Color::LightGreen => (60, 2),
        Color::LightYellow => (60, 3),
        Color::LightBlue => (60, 4),
        Color::LightMagenta => (60, 5),
        Color::LightCyan => (60, 6),
        Color::White => (60, 7),
    };
    write!(buf, ";{}", base + offset + n)
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::style::{Style, Stylize as _};
    use ratatui::text::Span;

    use super::*;

    #[test]
    fn cells_are_drawn_with_moves_and_their_style_then_only_what_changed() {
        let backend = AnsiBackend::new(Vec::new(), Size::new(10, 2));
        let mut terminal = Terminal::new(backend).expect("a terminal");
        terminal
            .draw(|f| {
                f.render_widget(
                    Span::styled("hi", Style::new().bold().red()),
                    ratatui::layout::Rect::new(0, 1, 2, 1),
                );
            })
            .expect("drawn");
        let out =
            String::from_utf8(std::mem::take(terminal.backend_mut().writer())).expect("utf-8");
        assert!(out.contains("\x1b[2;1H\x1b[0;1;31mhi"), "{out:?}");
        terminal
            .draw(|f| {
                f.render_widget(
                    Span::styled("ho", Style::new().bold().red()),
                    ratatui::layout::Rect::new(0, 1, 2, 1),
                );
            })
            .expect("drawn");
        let out =
            String::from_utf8(std::mem::take(terminal.backend_mut().writer())).expect("utf-8");
        assert!(
            out.contains("\x1b[2;2H\x1b[0;1;31mo"),
            "only the o: {out:?}"
        );
        assert!(!out.contains('h'), "{out:?}");
    }
}
