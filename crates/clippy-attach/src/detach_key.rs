//! The attached client's detach key, found in what the person types.

use std::fmt;
use std::str::FromStr;

/// A detach key: one key, or a prefix key then a key, as tmux writes them (`C-\ d`, `C-]`,
/// `C-a d`). Keys are `C-x` (Control with a letter or one of `@[\]^_?`), `^x` (the same), or a
/// single printable character.
///
/// ```
/// use clippy_attach::{DetachKey, Keys};
///
/// let key: DetachKey = "C-\\ d".parse()?;
/// let mut keys = key.matcher();
/// // Typed text goes through; the prefix is held until the next key says what it was.
/// assert_eq!(keys.feed(b"ls\x1c"), Keys::Forward(b"ls".to_vec()));
/// assert_eq!(keys.feed(b"d"), Keys::Detach(Vec::new()));
/// // The prefix twice sends it once.
/// let mut keys = key.matcher();
/// assert_eq!(keys.feed(b"\x1c\x1c"), Keys::Forward(b"\x1c".to_vec()));
/// # Ok::<(), clippy_attach::DetachKeyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetachKey {
    prefix: Option<u8>,
    key: u8,
}

/// A detach key that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad detach key {given:?}: {why} (write one key or two separated by a space, each `C-x`, \
     `^x` or one printable character, e.g. \"C-\\\\ d\" or \"C-]\")"
)]
pub struct DetachKeyError {
    given: String,
    why: &'static str,
}

impl Default for DetachKey {
    /// `Ctrl+\` then `d`.
    fn default() -> Self {
        DetachKey {
            prefix: Some(0x1c),
            key: b'd',
        }
    }
}

impl FromStr for DetachKey {
    type Err = DetachKeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |why| DetachKeyError {
            given: text.to_owned(),
            why,
        };
        let keys = text
            .split_whitespace()
            .map(|word| key_byte(word).ok_or_else(|| error("unknown key")))
            .collect::<Result<Vec<u8>, _>>()?;
        match keys[..] {
            [key] => Ok(DetachKey { prefix: None, key }),
            [prefix, key] => Ok(DetachKey {
                prefix: Some(prefix),
                key,
            }),
            [] => Err(error("no key")),
            _ => Err(error("more than two keys")),
        }
    }
}

impl fmt::Display for DetachKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(prefix) = self.prefix {
            write!(f, "{} ", KeyName(prefix))?;
        }
        write!(f, "{}", KeyName(self.key))
    }
}

struct KeyName(u8);

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0x7f => write!(f, "C-?"),
            byte if byte < 0x20 => write!(f, "C-{}", char::from(byte + 0x40).to_ascii_lowercase()),
            byte => write!(f, "{}", char::from(byte)),
        }
    }
}

fn key_byte(word: &str) -> Option<u8> {
    let control = word.strip_prefix("C-").or_else(|| word.strip_prefix('^'));
    let mut chars = control.unwrap_or(word).chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return None;
    };
    if !c.is_ascii() || c.is_ascii_control() {
        return None;
    }
    let byte = c as u8;
    match control {
        None if byte == b' ' => None,
        None => Some(byte),
        Some(_) if byte == b'?' => Some(0x7f),
        Some(_) => match byte.to_ascii_uppercase() {
            upper @ b'@'..=b'_' => Some(upper - 0x40),
            _ => None,
        },
    }
}

impl DetachKey {
    /// A matcher that finds this key in typed input.
    pub fn matcher(self) -> DetachMatcher {
        DetachMatcher {
            key: self,
            after_prefix: false,
        }
    }
}

/// Finds a [`DetachKey`] in typed input, read by read.
#[derive(Debug, Clone)]
pub struct DetachMatcher {
    key: DetachKey,
    /// The prefix was the last key read.
    after_prefix: bool,
}

/// What [`DetachMatcher::feed`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keys {
    /// Send these bytes to the session (possibly none, while a prefix is held).
    Forward(Vec<u8>),
    /// The detach key was typed: send these bytes first (what came before it), then detach.
    /// What was typed after it is dropped.
    Detach(Vec<u8>),
}

impl DetachMatcher {
    /// Takes one read of typed input.
    pub fn feed(&mut self, input: &[u8]) -> Keys {
        let key = self.key;
        let mut out = Vec::with_capacity(input.len());
        for &byte in input {
            match key.prefix {
                None if byte == key.key => return Keys::Detach(out),
                None => out.push(byte),
                Some(prefix) if self.after_prefix => {
                    self.after_prefix = false;
                    if byte == key.key {
                        return Keys::Detach(out);
                    }
                    // The prefix twice sends it; a prefix then another key sends both.
                    out.push(prefix);
                    if byte != prefix {
                        out.push(byte);
                    }
                }
                Some(prefix) if byte == prefix => self.after_prefix = true,
                Some(_) => out.push(byte),
            }
        }
        Keys::Forward(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detach(text: &str) -> DetachKey {
        text.parse().expect("a key")
    }

    #[test]
    fn keys_are_read_as_tmux_writes_them() {
        assert_eq!(detach("C-\\ d"), DetachKey::default());
        assert_eq!(
            detach("C-]"),
            DetachKey {
                prefix: None,
                key: 0x1d
            }
        );
        assert_eq!(
            detach("^a x"),
            DetachKey {
                prefix: Some(1),
                key: b'x'
            }
        );
        assert_eq!(detach("C-? q").prefix, Some(0x7f));
        for bad in ["", "C-", "C-ab", "é", "a b c", "C-1", "ctrl-a"] {
            let err = bad.parse::<DetachKey>().expect_err(bad);
            assert!(err.to_string().contains("C-\\\\ d"), "{err}");
        }
        for text in ["C-\\ d", "C-]", "C-a x", "C-? q"] {
            assert_eq!(detach(text).to_string(), text);
        }
    }

    #[test]
    fn the_prefix_is_held_across_reads() {
        let mut keys = DetachKey::default().matcher();
        assert_eq!(keys.feed(b"a\x1c"), Keys::Forward(b"a".to_vec()));
        assert_eq!(keys.feed(b"x"), Keys::Forward(b"\x1cx".to_vec()));
        assert_eq!(keys.feed(b"\x1c"), Keys::Forward(Vec::new()));
        assert_eq!(keys.feed(b"dafter"), Keys::Detach(Vec::new()));
    }

    #[test]
    fn a_single_key_detaches_at_once() {
        let mut keys = detach("C-]").matcher();
        assert_eq!(keys.feed(b"ls\r"), Keys::Forward(b"ls\r".to_vec()));
        assert_eq!(keys.feed(b"q\x1dmore"), Keys::Detach(b"q".to_vec()));
    }
}
