//! The fast `Scanner` against two references, on arbitrary byte streams with arbitrary escape
//! sequences, fed in arbitrary chunks (split inside escapes and inside matches alike):
//!
//! - a straightforward one: strip the bytes fed so far, whole, one byte at a time, keeping each
//!   kept byte's offset, and find the first match in that text;
//! - the byte-by-byte scanner the fast one replaced, kept here verbatim: same matches, same
//!   text held (a regex scanner: one byte of context more, for its anchors) and same regex
//!   search windows after memory is bounded, on inputs long enough for text to be forgotten.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use clippy_spool::{MAX_MATCH_BYTES, Match, Pattern, Scanner};
use proptest::prelude::*;

/// The stripper's states, as the contract describes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    Escape,
    Csi,
    /// OSC/DCS/SOS/PM/APC string; `true` just after an ESC.
    String(bool),
}

/// One byte through the stripper: the next state, and whether the byte is kept.
fn step(state: State, byte: u8) -> (State, bool) {
    match (state, byte) {
        (State::Ground, 0x1b) => (State::Escape, false),
        (State::Ground, b'\n' | b'\t' | 0x20..=0x7e | 0x80..=0xff) => (State::Ground, true),
        (State::Ground, _) => (State::Ground, false),
        (State::Escape, b'[') => (State::Csi, false),
        (State::Escape, b']' | b'P' | b'X' | b'^' | b'_') => (State::String(false), false),
        (State::Escape, 0x1b) => (State::Escape, false),
        (State::Escape, _) => (State::Ground, false),
        (State::Csi, 0x40..=0x7e) => (State::Ground, false),
        (State::Csi, 0x1b) => (State::Escape, false),
        (State::Csi, _) => (State::Csi, false),
        (State::String(_), 0x07 | 0x18 | 0x1a) => (State::Ground, false),
        (State::String(true), b'\\') => (State::Ground, false),
        (State::String(_), 0x1b) => (State::String(true), false),
        (State::String(_), _) => (State::String(false), false),
    }
}

/// The whole of `bytes` stripped: the kept bytes and the spool offset of each.
fn strip_with_offsets(bytes: &[u8], base: u64) -> (Vec<u8>, Vec<u64>) {
    let mut state = State::Ground;
    let (mut text, mut offsets) = (Vec::new(), Vec::new());
    for (index, &byte) in bytes.iter().enumerate() {
        let (next, kept) = step(state, byte);
        if kept {
            text.push(byte);
            offsets.push(base + index as u64);
        }
        state = next;
    }
    (text, offsets)
}

/// The first match in the stripped text of `bytes`, with its span mapped back to spool offsets.
fn first_match_in(bytes: &[u8], base: u64, pattern: &Pattern) -> Option<Match> {
    let (text, offsets) = strip_with_offsets(bytes, base);
    let (start, end) = match pattern {
        Pattern::Literal(literal) => {
            let literal = literal.as_bytes();
            let start = text.windows(literal.len()).position(|w| w == literal)?;
            (start, start + literal.len())
        }
        Pattern::Regex(regex) => {
            let found = regex.find(&text)?;
            (found.start(), found.end())
        }
    };
    let span = (offsets[start], offsets[end - 1] + 1);
    Some(Match {
        text: String::from_utf8_lossy(&text[start..end]).into_owned(),
        span,
        resume_cursor: span.1,
    })
}

/// What the scanner must report, straightforwardly: after each chunk, the first match in all
/// the bytes fed so far. Exact while nothing is forgotten (stripped text under
/// `MAX_MATCH_BYTES`); a regex is matched against what has arrived, so it is checked after every
/// chunk, not once on the whole input.
fn reference(spool: &[u8], cuts: &[usize], base: u64, pattern: &Pattern) -> (Option<Match>, u64) {
    let mut fed = 0;
    for piece in pieces(spool, cuts) {
        fed += piece.len();
        if let Some(found) = first_match_in(&spool[..fed], base, pattern) {
            return (Some(found), base + fed as u64);
        }
    }
    (None, base + fed as u64)
}

/// `spool` cut into pieces of the sizes in `cuts`, repeated as needed.
fn pieces<'a>(spool: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut rest = spool;
    cuts.iter().cycle().map_while(move |&cut| {
        if rest.is_empty() {
            return None;
        }
        let (piece, after) = rest.split_at(cut.clamp(1, rest.len()));
        rest = after;
        Some(piece)
    })
}

/// What [`scan_with`] drives: the fast scanner and the old one alike.
trait FedScanner {
    fn start(pattern: Pattern, from_cursor: u64) -> Self;
    fn feed(&mut self, bytes: &[u8]) -> Option<Match>;
    fn position(&self) -> u64;
    fn held_bytes(&self) -> usize;
}

impl FedScanner for Scanner {
    fn start(pattern: Pattern, from_cursor: u64) -> Self {
        Scanner::new(pattern, from_cursor)
    }
    fn feed(&mut self, bytes: &[u8]) -> Option<Match> {
        Scanner::feed(self, bytes)
    }
    fn position(&self) -> u64 {
        Scanner::position(self)
    }
    fn held_bytes(&self) -> usize {
        Scanner::held_bytes(self)
    }
}

/// Feeds `spool` to a new scanner of kind `S` in pieces of the sizes in `cuts` until the first
/// match; the match, the position after it was fed, and the largest `held_bytes` seen.
fn scan_with<S: FedScanner>(
    spool: &[u8],
    cuts: &[usize],
    base: u64,
    pattern: &Pattern,
) -> (Option<Match>, u64, usize) {
    let mut scanner = S::start(pattern.clone(), base);
    let mut held = 0;
    for piece in pieces(spool, cuts) {
        let found = scanner.feed(piece);
        held = held.max(scanner.held_bytes());
        if found.is_some() {
            return (found, scanner.position(), held);
        }
    }
    (None, scanner.position(), held)
}

/// [`scan_with`] the fast scanner.
fn scan(spool: &[u8], cuts: &[usize], base: u64, pattern: &Pattern) -> (Option<Match>, u64, usize) {
    scan_with::<Scanner>(spool, cuts, base, pattern)
}

/// The scanner as it was before the fast path: stripped byte by byte, the offset of every kept
/// byte in a vector of its own. Its observable behaviour is the contract the fast one keeps.
///
/// A deliberate verbatim copy of the old `src/scanner.rs` (with `State`/`step` above standing in
/// for its stripper), kept as the reference implementation: that it repeats code of
/// `src/scanner.rs` is the point. Do not change it to share code with the crate, or it stops
/// being an independent reference.
mod byte_by_byte {
    use clippy_spool::{MAX_MATCH_BYTES, Match, Pattern};

    use super::{State, step};

    pub struct OldScanner {
        pattern: Pattern,
        text: Vec<u8>,
        offsets: Vec<u64>,
        search_from: usize,
        position: u64,
        strip: State,
    }

    impl OldScanner {
        pub fn new(pattern: Pattern, from_cursor: u64) -> Self {
            Self {
                pattern,
                text: Vec::new(),
                offsets: Vec::new(),
                search_from: 0,
                position: from_cursor,
                strip: State::Ground,
            }
        }

        pub fn position(&self) -> u64 {
            self.position
        }

        pub fn held_bytes(&self) -> usize {
            self.text.len()
        }

        pub fn feed(&mut self, bytes: &[u8]) -> Option<Match> {
            for &byte in bytes {
                let (next, kept) = step(self.strip, byte);
                if kept {
                    self.text.push(byte);
                    self.offsets.push(self.position);
                }
                self.strip = next;
                self.position += 1;
            }
            let found = self.search();
            if found.is_none() {
                self.forget_old_text();
            }
            found
        }

        fn search(&mut self) -> Option<Match> {
            let (start, end) = match &self.pattern {
                Pattern::Literal(literal) => {
                    let at =
                        memchr::memmem::find(&self.text[self.search_from..], literal.as_bytes())?;
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

        fn forget_old_text(&mut self) {
            let (keep_from, search_from) = match &self.pattern {
                Pattern::Literal(literal) => {
                    let keep = self.text.len().saturating_sub(literal.len() - 1);
                    (keep, keep)
                }
                Pattern::Regex(_) => (self.text.len().saturating_sub(MAX_MATCH_BYTES), 0),
            };
            self.search_from = search_from;
            if keep_from >= MAX_MATCH_BYTES {
                self.text.drain(..keep_from);
                self.offsets.drain(..keep_from);
                self.search_from = self.search_from.saturating_sub(keep_from);
            }
        }
    }
}

impl FedScanner for byte_by_byte::OldScanner {
    fn start(pattern: Pattern, from_cursor: u64) -> Self {
        byte_by_byte::OldScanner::new(pattern, from_cursor)
    }
    fn feed(&mut self, bytes: &[u8]) -> Option<Match> {
        byte_by_byte::OldScanner::feed(self, bytes)
    }
    fn position(&self) -> u64 {
        byte_by_byte::OldScanner::position(self)
    }
    fn held_bytes(&self) -> usize {
        byte_by_byte::OldScanner::held_bytes(self)
    }
}

/// Like [`scan`], with the old scanner.
fn scan_old(
    spool: &[u8],
    cuts: &[usize],
    base: u64,
    pattern: &Pattern,
) -> (Option<Match>, u64, usize) {
    scan_with::<byte_by_byte::OldScanner>(spool, cuts, base, pattern)
}

/// Pieces of spool: text over a small alphabet (so patterns over it match now and then), every
/// kind of escape — complete, cut short, nested in each other — controls, UTF-8 and raw bytes.
fn token() -> impl Strategy<Value = Vec<u8>> {
    let csi_parameters =
        prop::collection::vec(prop_oneof![0x20u8..=0x3f, Just(0x1b), any::<u8>()], 0..6);
    let string_body = prop::collection::vec(
        prop_oneof![4 => 0x20u8..=0x7e, 1 => Just(0x1b), 1 => any::<u8>()],
        0..8,
    );
    prop_oneof![
        8 => "[ab\n\t -]{1,10}".prop_map(String::into_bytes),
        // CSI: parameters, then a final byte (or anything, or nothing).
        3 => (csi_parameters, prop::option::of(any::<u8>())).prop_map(|(parameters, last)| {
            let mut bytes = b"\x1b[".to_vec();
            bytes.extend(parameters);
            bytes.extend(last);
            bytes
        }),
        // OSC/DCS/SOS/PM/APC: a body, then BEL, ST, CAN, SUB, or nothing.
        2 => (
            prop::sample::select(b"]PX^_".to_vec()),
            string_body,
            prop::sample::select(vec![&b"\x07"[..], b"\x1b\\", b"\x18", b"\x1a", b""]),
        )
            .prop_map(|(kind, body, end)| [&[0x1b, kind][..], &body, end].concat()),
        // ESC and any byte: two-byte escapes, ESC ESC, ESC then text.
        2 => any::<u8>().prop_map(|byte| vec![0x1b, byte]),
        1 => Just(vec![0x1b]),
        1 => prop::sample::select(vec![0x00u8, 0x07, 0x08, 0x0d, 0x18, 0x1a, 0x7f]).prop_map(|b| vec![b]),
        1 => Just("é✳日".as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 1..4),
    ]
}

fn spool_bytes(max_tokens: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(token(), 0..max_tokens).prop_map(|tokens| tokens.concat())
}

/// Literals over the text alphabet, escapes and controls impossible inside them.
fn literal() -> impl Strategy<Value = Pattern> {
    "[ab\n -]{1,4}".prop_map(|text| Pattern::literal(&text).unwrap())
}

/// Regexes whose matches can grow, lines, alternations, classes and multi-byte characters.
fn regex() -> impl Strategy<Value = Pattern> {
    prop::sample::select(vec![
        "ab",
        "a+b",
        "b[ab]*a\n",
        "^a",
        "b$",
        "a.b",
        "(?:ab|ba)a",
        r"-\s*b",
        "é|✳",
        "[^ab\n]{2}",
        r"a\tb?",
    ])
    .prop_map(|regex| Pattern::regex(regex).unwrap())
}

fn pattern() -> impl Strategy<Value = Pattern> {
    prop_oneof![literal(), regex()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Short inputs (nothing forgotten): exactly the straightforward reference, and the old
    /// scanner.
    #[test]
    fn matches_the_straightforward_reference(
        spool in spool_bytes(60),
        // Small pieces split everything; large ones let the fast paths run over many words.
        cuts in prop::collection::vec(prop_oneof![1usize..12, 1usize..300], 1..20),
        pattern in pattern(),
        base in 0u64..1_000_000,
    ) {
        let (found, position, _) = scan(&spool, &cuts, base, &pattern);
        let (expected, expected_position) = reference(&spool, &cuts, base, &pattern);
        prop_assert_eq!(&found, &expected);
        prop_assert_eq!(position, expected_position);
        if let Some(found) = &found {
            // The span starts and ends on kept bytes, and holds exactly the matched text.
            let span = &spool[(found.span.0 - base) as usize..(found.span.1 - base) as usize];
            let (text, _) = strip_with_offsets(span, 0);
            prop_assert_eq!(String::from_utf8_lossy(&text), found.text.as_str());
        }
        let old = scan_old(&spool, &cuts, base, &pattern);
        prop_assert_eq!((found, position), (old.0, old.1));
    }
}

/// A spool of `tokens` repeated to about `len` bytes, with `needle` at `needle_at` (its share of
/// the way), cut short at `len`.
fn long_spool(tokens: &[Vec<u8>], len: usize, needle: &[u8], needle_at: f64) -> Vec<u8> {
    let mut spool = Vec::with_capacity(len + 64);
    let needle_from = (len as f64 * needle_at) as usize;
    let mut placed = false;
    for token in tokens.iter().cycle() {
        if spool.len() >= len {
            break;
        }
        if !placed && spool.len() >= needle_from {
            spool.extend_from_slice(needle);
            placed = true;
        }
        spool.extend_from_slice(token);
    }
    spool
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Long inputs, where text is forgotten to bound memory: the same match as the old scanner
    /// (the same regex search windows), and as the straightforward reference for literals,
    /// which forgetting never changes; memory held alike (a regex: one byte of context more).
    #[test]
    fn matches_the_old_scanner_on_long_inputs(
        tokens in prop::collection::vec(token(), 1..60),
        len in 0usize..(5 * MAX_MATCH_BYTES),
        needle_at in 0.0f64..1.2,
        needle_has_escape in any::<bool>(),
        cuts in prop::collection::vec(
            prop_oneof![1usize..64, 1usize..(2 * MAX_MATCH_BYTES)],
            1..12,
        ),
        pattern in prop_oneof![
            Just("NEEDLE"),
            Just("N[A-Z]+E"),
            Just("b[ab]*a\n"),
            Just("a.b"),
        ],
    ) {
        let needle: &[u8] = if needle_has_escape { b"NEE\x1b[1;31mDLE" } else { b"NEEDLE" };
        let spool = long_spool(&tokens, len, needle, needle_at);
        let base = 7;
        let pattern = if pattern == "NEEDLE" {
            Pattern::literal(pattern).unwrap()
        } else {
            Pattern::regex(pattern).unwrap()
        };
        let new = scan(&spool, &cuts, base, &pattern);
        let old = scan_old(&spool, &cuts, base, &pattern);
        prop_assert_eq!((&new.0, new.1), (&old.0, old.1));
        // Once it has dropped text, a regex scanner keeps the byte before what it still holds,
        // for `^`, `$` and `\b` to look at (none of these patterns has one): one byte more.
        let context = usize::from(matches!(pattern, Pattern::Regex(_)));
        prop_assert!(new.2 == old.2 || new.2 == old.2 + context, "held {} vs {}", new.2, old.2);
        if matches!(pattern, Pattern::Literal(_)) {
            prop_assert_eq!(new.0, first_match_in(&spool, base, &pattern));
        }
    }
}

#[test]
fn escapes_split_at_every_byte_are_stripped_alike() {
    let spool =
        b"a\x1b[1;31mb\x1b]0;t\x1b\\c\x1bPq\x07d\x1b\x1b[me\x1b(Bf\x00g\x7fh\x1b[\x1bXi\x18j";
    // `ESC (` is a two-byte escape: the `B` after it is text; the `i` is inside an SOS string.
    let pattern = Pattern::literal("abcdeBfghj").unwrap();
    let whole = first_match_in(spool, 0, &pattern).unwrap();
    for cut in 1..=spool.len() {
        for first in 1..spool.len() {
            let cuts = [first, cut];
            let (found, _, _) = scan(spool, &cuts, 0, &pattern);
            assert_eq!(found.as_ref(), Some(&whole), "cuts {cuts:?}");
        }
    }
}

#[test]
fn matches_across_the_point_where_text_is_forgotten_are_mapped_exactly() {
    // Junk long enough for the scanner to forget text after the first piece, with escapes at
    // every distance from its end, then the needle split at every point across two pieces.
    let needle = b"NEE\x1b[7mDLE";
    let literal = Pattern::literal("NEEDLE").unwrap();
    // Delimited, so a part of the needle cannot match before the rest arrives.
    let regex = Pattern::regex(r"N[A-Z]+E\n").unwrap();
    for junk_len in [MAX_MATCH_BYTES + 3, 2 * MAX_MATCH_BYTES + 11] {
        for escape_from_end in [0, 1, 2, 3, 5, 8, 13] {
            let mut spool = vec![b'x'; junk_len];
            spool.splice(junk_len - escape_from_end.., b"\x1b[1m".iter().copied());
            spool.extend_from_slice(b"y");
            let junk = spool.len();
            spool.extend_from_slice(needle);
            spool.extend_from_slice(b"\n");
            for split in 0..=needle.len() {
                for pattern in [&literal, &regex] {
                    let cuts = [junk + split, usize::MAX];
                    let (found, _, _) = scan(&spool, &cuts, 3, pattern);
                    let expected = first_match_in(&spool, 3, pattern);
                    assert_eq!(
                        found, expected,
                        "junk {junk_len}, escape {escape_from_end}, split {split}"
                    );
                }
            }
        }
    }
}
