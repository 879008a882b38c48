//! The keys a terminal sends, decoded from its bytes (raw mode): printable characters, Enter,
//! Esc, Backspace, Tab, the arrows and the page keys, Ctrl+letter, and a bracketed paste as
//! one piece of text. Sans-I/O: fed the bytes as they are read, it keeps an incomplete
//! sequence for the next read.
//!
//! An Esc byte that ends a read is the Esc key (a terminal writes an escape sequence in one
//! write); Esc followed by another character is Alt+that character, reported as [`Key::Esc`]
//! then the character.

/// A key press (or a paste).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// Ctrl and a letter (lowercase), `Ctrl+C` included.
    Ctrl(char),
    /// Enter (`\r` or `\n`).
    Enter,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Tab.
    Tab,
    /// Shift+Tab.
    BackTab,
    /// The arrow up.
    Up,
    /// The arrow down.
    Down,
    /// The arrow left.
    Left,
    /// The arrow right.
    Right,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Home.
    Home,
    /// End.
    End,
    /// Delete.
    Delete,
    /// Text pasted with bracketed paste on (line breaks kept).
    Paste(String),
}

/// Start and end of a bracketed paste.
const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// Decodes a terminal's bytes into [`Key`]s.
#[derive(Debug, Default)]
pub struct KeyDecoder {
    pending: Vec<u8>,
    /// How much of `pending` is decoded already.
    decoded: usize,
}

impl KeyDecoder {
    /// The keys in `bytes` (after what an earlier call left incomplete).
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        self.push(bytes);
        std::iter::from_fn(|| self.next_key()).collect()
    }

    /// Adds `bytes` to what waits to be decoded, key by key, with [`next_key`](Self::next_key).
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.drain(..self.decoded);
        self.decoded = 0;
        self.pending.extend_from_slice(bytes);
    }

    /// The next whole key among the bytes pushed, if one is there.
    pub fn next_key(&mut self) -> Option<Key> {
        while self.decoded < self.pending.len() {
            match decode_one(&self.pending[self.decoded..]) {
                Decoded::Key(key, used) => {
                    self.decoded += used;
                    if key.is_some() {
                        return key;
                    }
                }
                Decoded::Incomplete => return None,
            }
        }
        None
    }

    /// Takes the bytes pushed and not decoded yet: what was typed after a key that hands the
    /// terminal over (the dashboard's Enter, which attaches), for whoever takes it.
    pub fn take_undecoded(&mut self) -> Vec<u8> {
        let rest = self.pending.split_off(self.decoded);
        self.pending.clear();
        self.decoded = 0;
        rest
    }
}

enum Decoded {
    /// A key (or nothing, for a sequence that means no key here) and the bytes it took.
    Key(Option<Key>, usize),
    Incomplete,
}

fn decode_one(bytes: &[u8]) -> Decoded {
    let first = bytes[0];
    match first {
        0x1b => decode_escape(bytes),
        b'\r' | b'\n' => Decoded::Key(Some(Key::Enter), 1),
        b'\t' => Decoded::Key(Some(Key::Tab), 1),
        0x7f | 0x08 => Decoded::Key(Some(Key::Backspace), 1),
        0x01..=0x1a => Decoded::Key(Some(Key::Ctrl(char::from(b'a' + first - 1))), 1),
        0x00 | 0x1c..=0x1f => Decoded::Key(None, 1),
        _ => decode_char(bytes),
    }
}

fn decode_char(bytes: &[u8]) -> Decoded {
    let len = match bytes[0] {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return Decoded::Key(None, 1),
    };
    if bytes.len() < len {
        return Decoded::Incomplete;
    }
    match std::str::from_utf8(&bytes[..len]) {
        Ok(s) => Decoded::Key(s.chars().next().map(Key::Char), len),
        Err(_) => Decoded::Key(None, 1),
    }
}

fn decode_escape(bytes: &[u8]) -> Decoded {
    let Some(&second) = bytes.get(1) else {
        return Decoded::Key(Some(Key::Esc), 1);
    };
    if bytes.starts_with(PASTE_START) {
        let body = &bytes[PASTE_START.len()..];
        return match find(body, PASTE_END) {
            Some(end) => Decoded::Key(
                Some(Key::Paste(
                    String::from_utf8_lossy(&body[..end]).into_owned(),
                )),
                PASTE_START.len() + end + PASTE_END.len(),
            ),
            None => Decoded::Incomplete,
        };
    }
    match second {
        b'[' => decode_csi(bytes),
        b'O' => match bytes.get(2) {
            None => Decoded::Incomplete,
            Some(&last) => Decoded::Key(final_key(last, None), 3),
        },
        // Alt+key: the Esc, then the key on its own.
        _ => Decoded::Key(Some(Key::Esc), 1),
    }
}

fn decode_csi(bytes: &[u8]) -> Decoded {
    let mut at = 2;
    while let Some(&b) = bytes.get(at) {
        if (0x40..=0x7e).contains(&b) {
            let params = std::str::from_utf8(&bytes[2..at]).unwrap_or("");
            let first: Option<u32> = params.split(';').next().and_then(|p| p.parse().ok());
            return Decoded::Key(final_key(b, first), at + 1);
        }
        if !(0x20..=0x3f).contains(&b) {
            // Not a sequence after all: the Esc alone.
            return Decoded::Key(Some(Key::Esc), 1);
        }
        at += 1;
    }
    Decoded::Incomplete
}

fn final_key(last: u8, param: Option<u32>) -> Option<Key> {
    Some(match (last, param) {
        (b'A', _) => Key::Up,
        (b'B', _) => Key::Down,
        (b'C', _) => Key::Right,
        (b'D', _) => Key::Left,
        (b'H', _) | (b'~', Some(1 | 7)) => Key::Home,
        (b'F', _) | (b'~', Some(4 | 8)) => Key::End,
        (b'Z', _) => Key::BackTab,
        (b'~', Some(3)) => Key::Delete,
        (b'~', Some(5)) => Key::PageUp,
        (b'~', Some(6)) => Key::PageDown,
        _ => return None,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_controls_and_sequences_are_keys() {
        let mut d = KeyDecoder::default();
        assert_eq!(
            d.feed("aé\r\x7f\t\x03".as_bytes()),
            [
                Key::Char('a'),
                Key::Char('é'),
                Key::Enter,
                Key::Backspace,
                Key::Tab,
                Key::Ctrl('c')
            ]
        );
        assert_eq!(
            d.feed(b"\x1b[A\x1b[B\x1bOC\x1b[5~\x1b[6~\x1b[3~\x1b[Z\x1b[1;5D"),
            [
                Key::Up,
                Key::Down,
                Key::Right,
                Key::PageUp,
                Key::PageDown,
                Key::Delete,
                Key::BackTab,
                Key::Left
            ]
        );
        assert_eq!(d.feed(b"\x1b"), [Key::Esc]);
        assert_eq!(d.feed(b"\x1bx"), [Key::Esc, Key::Char('x')]);
    }

    #[test]
    fn a_sequence_or_character_split_over_reads_is_kept_for_the_next() {
        let mut d = KeyDecoder::default();
        assert_eq!(d.feed(b"\x1b["), []);
        assert_eq!(d.feed(b"A"), [Key::Up]);
        let e = "é".as_bytes();
        assert_eq!(d.feed(&e[..1]), []);
        assert_eq!(d.feed(&e[1..]), [Key::Char('é')]);
    }

    #[test]
    fn a_bracketed_paste_is_one_piece_of_text_with_its_line_breaks() {
        let mut d = KeyDecoder::default();
        assert_eq!(d.feed(b"\x1b[200~one\rtwo"), []);
        assert_eq!(
            d.feed(b"\x1b[201~q"),
            [Key::Paste("one\rtwo".into()), Key::Char('q')]
        );
    }

    #[test]
    fn the_bytes_after_a_key_are_kept_as_typed_for_whoever_takes_them() {
        let mut d = KeyDecoder::default();
        d.push(b"\rls -l\r\x1c");
        assert_eq!(d.next_key(), Some(Key::Enter));
        assert_eq!(d.take_undecoded(), b"ls -l\r\x1c");
        assert_eq!(d.next_key(), None);
        // What is left incomplete is typed too; the decoder starts afresh after.
        d.push(b"q\x1b[");
        assert_eq!(d.next_key(), Some(Key::Char('q')));
        assert_eq!(d.next_key(), None);
        assert_eq!(d.take_undecoded(), b"\x1b[");
        assert_eq!(d.feed(b"A"), [Key::Char('A')]);
    }
}
