//! Finding a pattern in a spool, deterministically (seeds/002 §3.3).
//!
//! A [`Scanner`] is fed the spool's bytes from a cursor onwards, in chunks of any size, and
//! reports the first match of a literal or a regular expression in the *ANSI-stripped* text:
//! escape sequences (CSI, OSC, DCS and the like) and control characters other than `\n` and `\t`
//! are left out, so `hel\x1b[1mlo` matches `hello`. The match's span is given in spool offsets —
//! from the first byte of the match to just past its last byte, escapes inside it included —
//! and the `resume_cursor` to continue from is the span's end.
//!
//! No match present in the bytes fed is ever skipped: the stripped text is kept across chunks,
//! so a match split between two chunks is found once the second arrives. To bound memory, text
//! more than [`MAX_MATCH_BYTES`] behind the newest byte is dropped once it cannot be part of a
//! match that is still incomplete: a literal longer than that, or a regex match spanning more
//! stripped text than that, is not supported. A regex is matched leftmost-first against what
//! has arrived: a pattern whose match can grow (`\d+`) may match a shorter run if the rest has
//! not arrived yet — anchor or delimit such patterns (`\d+\n`).

use regex::bytes::Regex;

use crate::error::SpoolError;

/// The longest stripped text a match may span.
pub const MAX_MATCH_BYTES: usize = 64 * 1024;

/// What to look for.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// These exact bytes (UTF-8 text), anywhere in the stripped text.
    Literal(String),
    /// A regular expression (Rust `regex` syntax, multi-line mode: `^`/`$` match at lines).
    Regex(Regex),
}

impl Pattern {
    /// A literal pattern; empty is refused (it would match everywhere).
    pub fn literal(text: &str) -> Result<Self, SpoolError> {
        if text.is_empty() || text.len() > MAX_MATCH_BYTES {
            return Err(SpoolError::InvalidPattern {
                pattern: text.to_owned(),
                reason: format!("a literal must be 1 to {MAX_MATCH_BYTES} bytes long"),
            });
        }
        Ok(Self::Literal(text.to_owned()))
    }

    /// A regex pattern, compiled in multi-line mode; one that matches the empty string is
    /// refused (it would match at once, wherever the cursor is).
    pub fn regex(pattern: &str) -> Result<Self, SpoolError> {
        let regex = regex::bytes::RegexBuilder::new(pattern)
            .multi_line(true)
            .build()
            .map_err(|e| SpoolError::InvalidPattern {
                pattern: pattern.to_owned(),
                reason: e.to_string(),
            })?;
        if regex.is_match(b"") {
            return Err(SpoolError::InvalidPattern {
                pattern: pattern.to_owned(),
                reason: "it matches the empty string".into(),
            });
        }
        Ok(Self::Regex(regex))
    }
}

/// A match found by a [`Scanner`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// The matched stripped text (lossy UTF-8).
    pub text: String,
    /// `[start, end)` in spool offsets.
    pub span: (u64, u64),
    /// Where to continue reading or waiting: the span's end.
    pub resume_cursor: u64,
}

/// Where the stripper is between chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strip {
    Ground,
    /// After ESC.
    Escape,
    /// Inside `ESC [ …` until a final byte.
    Csi,
    /// Inside an OSC/DCS/SOS/PM/APC string; `true` just after an ESC (awaiting `\`).
    String(bool),
}

/// Feeds on spool bytes from a cursor and finds the first match.
#[derive(Debug)]
pub struct Scanner {
    pattern: Pattern,
    /// Stripped text kept for matching.
    text: Vec<u8>,
    /// The spool offset of each byte of `text`.
    offsets: Vec<u64>,
    /// Where in `text` the next search starts.
    search_from: usize,
    /// The spool offset of the next byte to be fed.
    position: u64,
    strip: Strip,
}

impl Scanner {
    /// A scanner for `pattern` whose first fed byte is at spool offset `from_cursor`.
    ///
    /// ```
    /// use clippy_spool::{Pattern, Scanner};
    ///
    /// let mut scanner = Scanner::new(Pattern::literal("world")?, 100);
    /// assert!(scanner.feed(b"hello wor").is_none());
    /// let found = scanner.feed(b"\x1b[1mld\x1b[0m!\n").expect("found across the chunks");
    /// assert_eq!((found.text.as_str(), found.span, found.resume_cursor), ("world", (106, 115), 115));
    /// # Ok::<(), clippy_spool::SpoolError>(())
    /// ```
    pub fn new(pattern: Pattern, from_cursor: u64) -> Self {
        Self {
            pattern,
            text: Vec::new(),
            offsets: Vec::new(),
            search_from: 0,
            position: from_cursor,
            strip: Strip::Ground,
        }
    }

    /// The spool offset of the next byte to feed (the cursor after everything fed so far).
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Stripped bytes held for matching: at most about 2 × [`MAX_MATCH_BYTES`] plus the last chunk.
    pub fn held_bytes(&self) -> usize {
        self.text.len()
    }

    /// Feeds the next spool bytes; returns the first match, if there is one by now. After a
    /// match, feeding goes on from where it was (a new scanner from `resume_cursor` finds the
    /// next one).
    pub fn feed(&mut self, bytes: &[u8]) -> Option<Match> {
        for &byte in bytes {
            let offset = self.position;
            self.position += 1;
            self.strip_byte(byte, offset);
        }
        let found = self.search();
        if found.is_none() {
            self.forget_old_text();
        }
        found
    }

    fn strip_byte(&mut self, byte: u8, offset: u64) {
        self.strip = match (self.strip, byte) {
            (Strip::Ground, 0x1b) => Strip::Escape,
            (Strip::Ground, b'\n' | b'\t') | (Strip::Ground, 0x20..=0x7e | 0x80..=0xff) => {
                self.text.push(byte);
                self.offsets.push(offset);
                Strip::Ground
            }
            (Strip::Ground, _) => Strip::Ground,
            (Strip::Escape, b'[') => Strip::Csi,
            (Strip::Escape, b']' | b'P' | b'X' | b'^' | b'_') => Strip::String(false),
            (Strip::Escape, 0x1b) => Strip::Escape,
            (Strip::Escape, _) => Strip::Ground,
            (Strip::Csi, 0x40..=0x7e) => Strip::Ground,
            (Strip::Csi, 0x1b) => Strip::Escape,
            (Strip::Csi, _) => Strip::Csi,
            (Strip::String(_), 0x07 | 0x18 | 0x1a) => Strip::Ground,
            (Strip::String(true), b'\\') => Strip::Ground,
            (Strip::String(_), 0x1b) => Strip::String(true),
            (Strip::String(_), _) => Strip::String(false),
        };
    }

    fn search(&mut self) -> Option<Match> {
        let (start, end) = match &self.pattern {
            Pattern::Literal(literal) => {
                let at = memchr::memmem::find(&self.text[self.search_from..], literal.as_bytes())?;
                let start = self.search_from + at;
                (start, start + literal.len())
            }
            Pattern::Regex(regex) => {
                let found = regex.find_at(&self.text, self.search_from)?;
                (found.start(), found.end())
            }
        };
        let span = (self.offsets[start], self.offsets[end - 1] + 1);
        Some(Match {
            text: String::from_utf8_lossy(&self.text[start..end]).into_owned(),
            span,
            resume_cursor: span.1,
        })
    }

    /// Drops stripped text that can no longer be part of a match.
    fn forget_old_text(&mut self) {
        let (keep_from, search_from) = match &self.pattern {
            // Only the last `len - 1` bytes could start a literal that is still arriving.
            Pattern::Literal(literal) => {
                let keep = self.text.len().saturating_sub(literal.len() - 1);
                (keep, keep)
            }
            // A regex match may start anywhere in the last `MAX_MATCH_BYTES`: search them again.
            Pattern::Regex(_) => (self.text.len().saturating_sub(MAX_MATCH_BYTES), 0),
        };
        self.search_from = search_from;
        // Drop in large steps, so the cost of moving what is kept stays small.
        if keep_from >= MAX_MATCH_BYTES {
            self.text.drain(..keep_from);
            self.offsets.drain(..keep_from);
            self.search_from = self.search_from.saturating_sub(keep_from);
        }
    }
}
