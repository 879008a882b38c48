//! Window sizes.

use std::fmt;
use std::os::fd::BorrowedFd;

use nix::libc;

use crate::sys;

/// A terminal window size, as carried by `TIOCGWINSZ` / `TIOCSWINSZ`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WinSize {
    /// Columns (characters per line).
    pub cols: u16,
    /// Rows (lines).
    pub rows: u16,
    /// Width in pixels; 0 when unknown (most programs ignore it).
    pub pixel_width: u16,
    /// Height in pixels; 0 when unknown.
    pub pixel_height: u16,
}

impl WinSize {
    /// A size of `cols` × `rows` characters with unknown pixel dimensions.
    #[must_use]
    pub const fn new(cols: u16, rows: u16) -> Self {
        WinSize {
            cols,
            rows,
            pixel_width: 0,
            pixel_height: 0,
        }
    }

    pub(crate) fn to_raw(self) -> libc::winsize {
        libc::winsize {
            ws_row: self.rows,
            ws_col: self.cols,
            ws_xpixel: self.pixel_width,
            ws_ypixel: self.pixel_height,
        }
    }

    pub(crate) fn from_raw(ws: libc::winsize) -> Self {
        WinSize {
            cols: ws.ws_col,
            rows: ws.ws_row,
            pixel_width: ws.ws_xpixel,
            pixel_height: ws.ws_ypixel,
        }
    }
}

/// `COLSxROWS`, the form `--size` takes.
impl fmt::Display for WinSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.cols, self.rows)
    }
}

/// The window size of the terminal on `fd` (`TIOCGWINSZ`).
///
/// Returns `None` when `fd` is not a terminal (a pipe, a file, `/dev/null`) or when the terminal
/// reports zero columns or rows (a PTY nobody sized yet): in both cases there is no size to
/// follow and the caller uses its own default.
#[must_use]
pub fn terminal_size(fd: BorrowedFd<'_>) -> Option<WinSize> {
    let size = WinSize::from_raw(sys::get_winsize(fd).ok()?);
    (size.cols > 0 && size.rows > 0).then_some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_cols_x_rows() {
        assert_eq!(WinSize::new(120, 40).to_string(), "120x40");
    }

    #[test]
    fn raw_round_trip() {
        let size = WinSize {
            cols: 1,
            rows: 2,
            pixel_width: 3,
            pixel_height: 4,
        };
        assert_eq!(WinSize::from_raw(size.to_raw()), size);
    }

    #[test]
    fn not_a_tty_has_no_size() {
        let file = std::fs::File::open("/dev/null").unwrap();
        use std::os::fd::AsFd;
        assert_eq!(terminal_size(file.as_fd()), None);
    }
}
