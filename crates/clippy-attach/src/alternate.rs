//! Whether a client's terminal shows the alternate screen, from what was written to it.

use vte::{Params, Parser, Perform};

/// Follows the alternate screen switches (`CSI ? 1049 h/l`, `? 1047`, `? 47`) in the bytes a
/// client writes to its terminal, however they are split, so that it leaves the terminal with
/// the right restore bytes ([`Restore`](crate::Restore)).
///
/// ```
/// use clippy_attach::AlternateScreen;
///
/// let mut screen = AlternateScreen::default();
/// screen.feed(b"\x1b[?10");
/// screen.feed(b"49h full-screen program");
/// assert!(screen.shown());
/// screen.feed(b"\x1b[?1049l$ ");
/// assert!(!screen.shown());
/// ```
#[derive(Default)]
pub struct AlternateScreen {
    parser: Parser,
    switches: Switches,
}

impl std::fmt::Debug for AlternateScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlternateScreen")
            .field("shown", &self.switches.shown)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Switches {
    shown: bool,
}

impl Perform for Switches {
    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], ignore: bool, action: char) {
        if ignore || intermediates != b"?" || !matches!(action, 'h' | 'l') {
            return;
        }
        if params
            .iter()
            .any(|param| matches!(param.first(), Some(47 | 1047 | 1049)))
        {
            self.shown = action == 'h';
        }
    }
}

impl AlternateScreen {
    /// Takes bytes written to the terminal.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.parser.advance(&mut self.switches, bytes);
    }

    /// Whether the terminal shows the alternate screen now.
    pub fn shown(&self) -> bool {
        self.switches.shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_is_followed_whatever_the_chunking() {
        let stream = b"a\x1b[?1;1049hb\x1b[?25lc\x1b[?1049ld\x1b[?47he\x1b[?1047l\x1b[?1049h";
        let expected = [true, false, true, false, true];
        for split in 0..stream.len() {
            let mut screen = AlternateScreen::default();
            screen.feed(&stream[..split]);
            screen.feed(&stream[split..]);
            assert!(screen.shown(), "split at {split}");
        }
        let mut screen = AlternateScreen::default();
        let mut seen = Vec::new();
        for &byte in stream {
            let before = screen.shown();
            screen.feed(&[byte]);
            if screen.shown() != before {
                seen.push(screen.shown());
            }
        }
        assert_eq!(seen, expected);
        // Other modes, and a switch without `?`, change nothing.
        let mut screen = AlternateScreen::default();
        screen.feed(b"\x1b[1049h\x1b[?25h\x1b[?2004h");
        assert!(!screen.shown());
    }
}
