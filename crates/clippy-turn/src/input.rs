//! Parsing what is written to the agent: keystrokes, pastes and terminal replies.
//!
//! Only three things matter for turns: a *submit* (Enter outside escape sequences and outside
//! a bracketed paste), an *interrupt* (Ctrl+C) and the text of the line being typed. Escape
//! sequences — arrow keys, focus events, and the terminal's own replies such as cursor-position
//! reports and device attributes — are never keystrokes. Enter inside a bracketed paste
//! (`ESC[200~ … ESC[201~`) is part of the pasted text, not a submit.
//!
//! Whether a person pressed anything at all is told apart too: text, Enter, Ctrl+C, Esc, cursor
//! and function keys and pastes are keys; what the terminal sends by itself — cursor-position
//! (`CSI r;c R`) and device-attribute (`CSI ? … c`) replies, status and mode reports (`CSI … n`,
//! `CSI … $ y`, `CSI … t`, `CSI ? … u`), focus events (`CSI I`, `CSI O`), mouse reports (SGR,
//! urxvt and X10 encodings) and OSC/DCS/APC strings — is not.

/// The typed line keeps at most this many bytes; the rest of a huge paste is dropped.
const MAX_INPUT_BYTES: usize = 16 * 1024;
/// CSI parameters longer than this are not keys we know; the sequence is still consumed.
const MAX_CSI_BYTES: usize = 32;

/// What one key (or reply) in the input means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    /// Enter: the line typed so far was submitted.
    Submit(String),
    /// Ctrl+C.
    Interrupt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Ground,
    Escape,
    Csi,
    Ss3,
    /// An OSC/DCS/APC reply from the terminal; `true` after an ESC (awaiting `\`).
    String(bool),
    /// Inside a bracketed paste.
    Paste,
    /// Inside a bracketed paste, after an ESC: collecting to see whether it is `[201~`.
    PasteEscape,
    /// The raw bytes of an X10 mouse report (`ESC [ M b x y`) still to skip.
    X10Mouse(u8),
}

/// A sans-I/O parser of the input stream.
#[derive(Debug, Default)]
pub(crate) struct InputParser {
    state: State,
    /// The line being typed.
    line: String,
    /// CSI parameter and intermediate bytes of the sequence being read.
    csi: Vec<u8>,
    /// The previous byte was a CR (so an LF right after it is the same Enter).
    after_cr: bool,
    /// Bytes of an incomplete UTF-8 character.
    carry: Vec<u8>,
}

impl InputParser {
    /// The line being typed (keys pressed since the last submit or interrupt).
    #[cfg(feature = "text")]
    pub(crate) fn line(&self) -> &str {
        &self.line
    }

    /// Forgets the line typed so far (the keys were not the start of a question).
    pub(crate) fn forget_line(&mut self) {
        self.line.clear();
    }

    /// Feeds input bytes, reporting submits and interrupts in order; `true` when the bytes hold
    /// at least one key a person pressed (not only the terminal's own reports). A lone ESC at
    /// the end counts as the Esc key: terminals write their reports whole.
    pub(crate) fn feed(&mut self, bytes: &[u8], mut on_key: impl FnMut(Key)) -> bool {
        let mut pressed = false;
        for &byte in bytes {
            pressed |= self.byte(byte, &mut on_key);
        }
        pressed || self.state == State::Escape
    }

    /// One byte; `true` when it is, or completes, a key.
    fn byte(&mut self, byte: u8, on_key: &mut impl FnMut(Key)) -> bool {
        let after_cr = std::mem::replace(&mut self.after_cr, false);
        match self.state {
            State::Ground => {
                match byte {
                    b'\r' => {
                        self.after_cr = true;
                        on_key(Key::Submit(self.take_line()));
                    }
                    b'\n' if after_cr => {}
                    b'\n' => on_key(Key::Submit(self.take_line())),
                    0x03 => {
                        self.line.clear();
                        on_key(Key::Interrupt);
                    }
                    0x7f | 0x08 => {
                        self.carry.clear();
                        self.line.pop();
                    }
                    0x15 => self.line.clear(),
                    0x17 => self.delete_word(),
                    0x1b => {
                        self.state = State::Escape;
                        return false;
                    }
                    0x00..=0x1f => {}
                    _ => self.push_byte(byte),
                }
                true
            }
            State::Escape => {
                self.state = State::Ground;
                match byte {
                    b'[' => {
                        self.csi.clear();
                        self.state = State::Csi;
                        false
                    }
                    b'O' => {
                        self.state = State::Ss3;
                        false
                    }
                    b']' | b'P' | b'_' | b'^' | b'X' => {
                        self.state = State::String(false);
                        false
                    }
                    // Alt+Enter: a newline in the composer of most agent TUIs, never a submit.
                    b'\r' | b'\n' => {
                        self.push_str("\n");
                        true
                    }
                    // Esc pressed, then another ESC: the first was a key.
                    0x1b => {
                        self.state = State::Escape;
                        true
                    }
                    // Alt+key.
                    _ => true,
                }
            }
            State::Csi => match byte {
                0x20..=0x3f => {
                    if self.csi.len() < MAX_CSI_BYTES {
                        self.csi.push(byte);
                    }
                    false
                }
                0x40..=0x7e => {
                    self.state = State::Ground;
                    self.csi_key(byte, on_key)
                }
                0x1b => {
                    self.state = State::Escape;
                    false
                }
                _ => {
                    self.state = State::Ground;
                    false
                }
            },
            State::Ss3 => {
                self.state = State::Ground;
                // Keypad Enter in application keypad mode.
                if byte == b'M' {
                    on_key(Key::Submit(self.take_line()));
                }
                true
            }
            State::String(after_esc) => {
                self.state = match byte {
                    0x07 | 0x18 | 0x1a => State::Ground,
                    b'\\' if after_esc => State::Ground,
                    0x1b => State::String(true),
                    _ => State::String(false),
                };
                false
            }
            State::Paste => {
                match byte {
                    0x1b => {
                        self.csi.clear();
                        self.state = State::PasteEscape;
                    }
                    b'\r' => {
                        self.after_cr = true;
                        self.push_str("\n");
                    }
                    b'\n' if after_cr => {}
                    b'\n' | b'\t' => self.push_byte(byte),
                    0x00..=0x1f => {}
                    _ => self.push_byte(byte),
                }
                true
            }
            State::PasteEscape => {
                // Read the whole sequence: `[201~` ends the paste, anything else inside the
                // pasted text is dropped from the line.
                self.csi.push(byte);
                let complete = match self.csi.as_slice() {
                    [b'['] => false,
                    [_] => true,
                    _ => (0x40..=0x7e).contains(&byte) || self.csi.len() >= MAX_CSI_BYTES,
                };
                if complete {
                    self.state = if self.csi == b"[201~" {
                        State::Ground
                    } else {
                        State::Paste
                    };
                }
                true
            }
            State::X10Mouse(left) => {
                self.state = if left > 1 {
                    State::X10Mouse(left - 1)
                } else {
                    State::Ground
                };
                false
            }
        }
    }

    /// The CSI sequence ending in `final_byte` (its parameters in `self.csi`): a key, or one of
    /// the terminal's reports; `true` for a key.
    fn csi_key(&mut self, final_byte: u8, on_key: &mut impl FnMut(Key)) -> bool {
        match (self.csi.as_slice(), final_byte) {
            (b"200", b'~') => {
                self.state = State::Paste;
                return true;
            }
            // Kitty keyboard protocol: Enter and Ctrl+C without other modifiers.
            (b"13" | b"13;1" | b"13;1:1", b'u') => {
                on_key(Key::Submit(self.take_line()));
                return true;
            }
            (b"99;5" | b"99;5:1", b'u') => {
                self.line.clear();
                on_key(Key::Interrupt);
                return true;
            }
            // Shift+Enter in the kitty protocol inserts a newline.
            (b"13;2" | b"13;2:1", b'u') => {
                self.push_str("\n");
                return true;
            }
            _ => {}
        }
        // Everything else is neither text nor a submit: cursor and function keys (keys), or
        // the terminal's own reports (not keys).
        let params = self.csi.as_slice();
        let numeric = params.iter().all(|b| b.is_ascii_digit() || *b == b';');
        let report = match final_byte {
            // Cursor position (`CSI r;c R`, `CSI ? r;c R`). Shift+F3 is `CSI 1;2 R` in some
            // terminals too: a report is the likelier reading.
            b'R' => true,
            // Device attributes: `CSI ? … c`, `CSI > … c`, `CSI = … c`.
            b'c' => true,
            // Focus in and out.
            b'I' | b'O' => params.is_empty(),
            // X10 mouse: `CSI M` and three raw bytes.
            b'M' if params.is_empty() => {
                self.state = State::X10Mouse(3);
                true
            }
            // SGR mouse (`CSI < b;x;y M|m`), urxvt mouse (`CSI b;x;y M`).
            b'M' | b'm' => params.first() == Some(&b'<') || (final_byte == b'M' && numeric),
            // Mode reports (`CSI ? n ; v $ y`).
            b'y' => params.last() == Some(&b'$'),
            // Status reports (`CSI 0 n`, `CSI ? … n`), window reports (`CSI 8;r;c t`), terminal
            // parameters (`CSI … x`), the kitty keyboard flags (`CSI ? flags u`).
            b'n' | b't' | b'x' => true,
            b'u' => params.first() == Some(&b'?'),
            _ => false,
        };
        !report
    }

    fn take_line(&mut self) -> String {
        self.carry.clear();
        std::mem::take(&mut self.line)
    }

    fn delete_word(&mut self) {
        let trimmed = self.line.trim_end_matches(' ').len();
        self.line.truncate(trimmed);
        let start = self.line.rfind(' ').map_or(0, |i| i + 1);
        self.line.truncate(start);
    }

    fn push_byte(&mut self, byte: u8) {
        if byte < 0x80 && self.carry.is_empty() {
            self.push_str(char::from(byte).encode_utf8(&mut [0; 1]));
            return;
        }
        self.carry.push(byte);
        match std::str::from_utf8(&self.carry) {
            Ok(s) => {
                let s = s.to_owned();
                self.carry.clear();
                self.push_str(&s);
            }
            Err(e) if e.error_len().is_some() || self.carry.len() >= 4 => {
                self.carry.clear();
                self.push_str("\u{fffd}");
            }
            Err(_) => {}
        }
    }

    fn push_str(&mut self, s: &str) {
        if self.line.len() + s.len() <= MAX_INPUT_BYTES {
            self.line.push_str(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut parser = InputParser::default();
        let mut keys = Vec::new();
        parser.feed(bytes, |k| keys.push(k));
        keys
    }

    fn submit(s: &str) -> Key {
        Key::Submit(s.to_owned())
    }

    #[test]
    fn enter_submits_the_edited_line() {
        assert_eq!(keys(b"ls -l\r"), [submit("ls -l")]);
        assert_eq!(keys(b"lss\x7f -l\r\n"), [submit("ls -l")]);
        assert_eq!(keys(b"a\nb\n"), [submit("a"), submit("b")]);
        assert_eq!(keys(b"one two\x17three\r"), [submit("one three")]);
        assert_eq!(keys("héllo\r".as_bytes()), [submit("héllo")]);
    }

    #[test]
    fn escapes_and_terminal_replies_are_not_keystrokes() {
        assert_eq!(
            keys(b"\x1b[A\x1b[12;40R\x1b[?1;2c\x1b[Iab\x1b[O\x1b]11;rgb:0/0/0\x07\r"),
            [submit("ab")]
        );
        assert_eq!(keys(b"\x1bOMx"), [submit("")]);
        assert_eq!(keys(b"a\x1b\rb\r"), [submit("a\nb")]);
    }

    #[test]
    fn enter_inside_a_bracketed_paste_is_text() {
        assert_eq!(
            keys(b"\x1b[200~line 1\rline 2\r\n\x1b[201~\r"),
            [submit("line 1\nline 2\n")]
        );
        assert_eq!(keys(b"\x1b[200~a\x1b[31mb\x1b[201~\r"), [submit("ab")]);
    }

    #[test]
    fn ctrl_c_interrupts() {
        assert_eq!(keys(b"abc\x03"), [Key::Interrupt]);
        assert_eq!(keys(b"\x1b[99;5u"), [Key::Interrupt]);
        assert_eq!(keys(b"hi\x1b[13u"), [submit("hi")]);
    }

    /// Whether each chunk, fed in turn, holds a key.
    fn pressed(chunks: &[&[u8]]) -> Vec<bool> {
        let mut parser = InputParser::default();
        chunks.iter().map(|c| parser.feed(c, |_| {})).collect()
    }

    #[test]
    fn the_terminals_own_reports_are_not_keys() {
        for report in [
            &b"\x1b[12;1R"[..],
            b"\x1b[?12;1R",
            b"\x1b[?64;1;2;6;22c",
            b"\x1b[>41;354;0c",
            b"\x1b[I",
            b"\x1b[O",
            b"\x1b[<0;10;5M",
            b"\x1b[<0;10;5m",
            b"\x1b[<35;80;24M",
            b"\x1b[32;10;5M",
            b"\x1b[M !!",
            b"\x1b[?2004;1$y",
            b"\x1b[0n",
            b"\x1b[8;40;120t",
            b"\x1b[?1u",
            b"\x1b]11;rgb:0000/0000/0000\x1b\\",
            b"\x1b]10;rgb:ffff/ffff/ffff\x07",
            b"\x1bP1+r544e=787465726d\x1b\\",
            b"\x1b[I\x1b[12;1R\x1b[O",
        ] {
            assert_eq!(pressed(&[report]), [false], "{report:?}");
        }
    }

    #[test]
    fn keys_are_keys() {
        for key in [
            &b"a"[..],
            b"\r",
            b"\x03",
            b"\x7f",
            b"\x1b",
            b"\x1b[A",
            b"\x1bOP",
            b"\x1b[15~",
            b"\x1b[13u",
            b"\x1b[99;5u",
            b"\x1bb",
            b"\x1b[200~pasted\x1b[201~",
            b"\x1b[12;1Rx",
            b"\x1b[I\x1b[A",
        ] {
            assert_eq!(pressed(&[key]), [true], "{key:?}");
        }
    }

    #[test]
    fn a_report_cut_between_chunks_is_still_a_report() {
        assert_eq!(
            pressed(&[b"\x1b[12", b";1R", b"\x1b]11;rgb:0/0/0", b"\x1b\\"]),
            [false, false, false, false]
        );
        // An X10 mouse report's three raw bytes are neither keys nor typed text.
        assert_eq!(
            pressed(&[b"\x1b[M", b" !", b"!", b"q"]),
            [false, false, false, true]
        );
        assert_eq!(keys(b"\x1b[M !!ok\r"), [submit("ok")]);
    }

    #[test]
    fn chunking_does_not_matter() {
        let stream = b"x\x1b[200~p\rq\x1b[201~\x1b[1;5Ay\r\x03z\n";
        let whole = keys(stream);
        let mut parser = InputParser::default();
        let mut split = Vec::new();
        for b in stream {
            parser.feed(std::slice::from_ref(b), |k| split.push(k));
        }
        assert_eq!(whole, split);
    }
}
