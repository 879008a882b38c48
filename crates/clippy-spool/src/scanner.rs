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

use std::sync::Arc;

use clippy_lanes::{WINDOW, splat};
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
    /// Shared, so that scanners of the same pattern share its search caches too.
    Regex(Arc<Regex>),
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
        compile(pattern).map(|regex| Self::Regex(Arc::new(regex)))
    }
}

/// `pattern` compiled as [`Pattern::regex`] takes it.
fn compile(pattern: &str) -> Result<Regex, SpoolError> {
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
    Ok(regex)
}

/// Regular expressions compiled lately, by their source, so that a server answering the same
/// wait again and again (an orchestrator's prompt pattern, a client waiting for each marker in
/// turn) compiles it once: compiling costs far more than a scan of a few kilobytes. Holds the
/// [`RecentRegexes::CAPACITY`] most recently used; a pattern that does not compile is refused
/// each time and never kept.
///
/// ```
/// use clippy_spool::{Pattern, RecentRegexes, Scanner};
///
/// let mut recent = RecentRegexes::default();
/// for _ in 0..3 {
///     let pattern = recent.pattern(r"MARK-\d+\.")?; // compiled on the first call only
///     let found = Scanner::new(pattern, 0).feed(b"MARK-7.\n").expect("a match");
///     assert_eq!(found.text, "MARK-7.");
/// }
/// assert_eq!(recent.len(), 1);
/// assert!(recent.pattern("(").is_err());
/// # Ok::<(), clippy_spool::SpoolError>(())
/// ```
#[derive(Debug, Default)]
pub struct RecentRegexes {
    /// Most recently used last.
    compiled: Vec<(String, Arc<Regex>)>,
}

impl RecentRegexes {
    /// How many compiled patterns are kept.
    pub const CAPACITY: usize = 32;

    /// The pattern [`Pattern::regex`] makes of `source`, compiled now or earlier.
    ///
    /// # Errors
    ///
    /// What [`Pattern::regex`] refuses.
    pub fn pattern(&mut self, source: &str) -> Result<Pattern, SpoolError> {
        if let Some(at) = self.compiled.iter().rposition(|(kept, _)| kept == source) {
            let used = self.compiled.remove(at);
            let regex = Arc::clone(&used.1);
            self.compiled.push(used);
            return Ok(Pattern::Regex(regex));
        }
        let regex = Arc::new(compile(source)?);
        if self.compiled.len() == Self::CAPACITY {
            self.compiled.remove(0);
        }
        self.compiled.push((source.to_owned(), Arc::clone(&regex)));
        Ok(Pattern::Regex(regex))
    }

    /// How many compiled patterns are kept now.
    pub fn len(&self) -> usize {
        self.compiled.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.compiled.is_empty()
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

impl Strip {
    /// The state after `byte`: the exact stripper, one byte at a time. In `Ground`, the bytes
    /// [`is_kept`] accepts are kept and leave the state as it is; everything else is dropped.
    fn after(self, byte: u8) -> Strip {
        match (self, byte) {
            (Strip::Ground, 0x1b) => Strip::Escape,
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
        }
    }
}

/// Whether a byte in `Ground` is kept: printable ASCII, `\n`, `\t` and every byte of UTF-8
/// beyond ASCII. The rest — ESC, which starts an escape, other C0 controls and DEL — is dropped.
const fn is_kept(byte: u8) -> bool {
    matches!(byte, b'\n' | b'\t' | 0x20..=0x7e | 0x80..=0xff)
}

/// `bytes` as a [`Scanner`] matches against them: escape sequences (CSI, OSC, DCS, …) and the
/// control characters other than `\n` and `\t` removed (so `\r\n` becomes `\n`). `bytes` is
/// taken to begin outside any sequence.
///
/// ```
/// assert_eq!(clippy_spool::strip_escapes(b"\x1b[1mok\x1b[0m\r\n\x1b]0;title\x07$ "), b"ok\n$ ");
/// ```
pub fn strip_escapes(bytes: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(bytes.len());
    let mut state = Strip::Ground;
    for &byte in bytes {
        if state == Strip::Ground && is_kept(byte) {
            text.push(byte);
        } else {
            state = state.after(byte);
        }
    }
    text
}

// The fast paths test eight bytes at once, one per byte lane of a `u64` word, read
// little-endian (the first byte is the lowest lane). Each test leaves the high bit of the lanes
// it accepts set and every other bit clear; the first accepted byte is then the lowest set bit.

/// `0x01` in every byte lane of a `u64`.
const LANES_01: u64 = u64::from_ne_bytes([0x01; 8]);
/// `0x80`, each lane's high bit, in every lane.
const LANES_80: u64 = u64::from_ne_bytes([0x80; 8]);
/// `0x7f` in every lane: a lane's low seven bits.
const LANES_7F: u64 = u64::from_ne_bytes([0x7f; 8]);

/// The word of eight bytes (a piece of `chunks_exact(8)`).
fn word_of(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// The index of the first lane whose high bit is set in `lanes` (not 0).
const fn first_lane(lanes: u64) -> usize {
    (lanes.trailing_zeros() / 8) as usize
}

/// The high bit of every lane of `word` whose byte is `needle`, and no other bit. Exact: adding
/// `0x7f` to a lane's low seven bits cannot carry into the next lane.
const fn lanes_equal(word: u64, needle: u8) -> u64 {
    let diff = word ^ (needle as u64 * LANES_01);
    !(((diff & LANES_7F) + LANES_7F) | diff) & LANES_80
}

/// The high bit of every lane of `word` whose byte is not [`is_kept`], and no other bit.
///
/// Each lane is tested on its own (no sum below can carry across lanes, unlike the classic
/// "has a zero byte" trick), so the lowest set bit marks exactly the first dropped byte.
const fn dropped_lanes(word: u64) -> u64 {
    let low7 = word & LANES_7F;
    let ascii = !word & LANES_80;
    // Below 0x20: ASCII, and adding 0x60 to the low seven bits leaves the high bit clear.
    let control = !(low7 + 0x60 * LANES_01) & ascii;
    // DEL: ASCII, and adding 1 to the low seven bits sets the high bit.
    let delete = (low7 + LANES_01) & ascii;
    let suspicious = control | delete;
    if suspicious == 0 {
        // The common case: no control character at all in these eight bytes.
        return 0;
    }
    suspicious & !(lanes_equal(word, b'\n') | lanes_equal(word, b'\t'))
}

/// Copies the longest prefix of `from` that [`is_kept`] accepts to the front of `to`, and
/// returns its length. `to` must be at least as long as `from`.
///
/// Eight bytes at a time: each word is copied whole before it is tested, which is cheaper than
/// finding the end first and copying then; the bytes copied past the end of the prefix are
/// overwritten or cut off by the caller.
fn copy_kept_prefix(from: &[u8], to: &mut [u8]) -> usize {
    let words = from.chunks_exact(8);
    let tail = words.remainder();
    let tail_start = from.len() - tail.len();
    for (index, (word, to_word)) in words.zip(to.chunks_exact_mut(8)).enumerate() {
        to_word.copy_from_slice(word);
        let dropped = dropped_lanes(word_of(word));
        if dropped != 0 {
            return index * 8 + first_lane(dropped);
        }
    }
    for (index, &byte) in tail.iter().enumerate() {
        if !is_kept(byte) {
            return tail_start + index;
        }
        to[tail_start + index] = byte;
    }
    from.len()
}

/// Bit `i` alone.
const fn bit(i: usize) -> u64 {
    1u64.wrapping_shl(i as u32) & if i < 64 { u64::MAX } else { 0 }
}

/// The bits above bit `i` (none for `i >= 63`; all for `i = usize::MAX`, "above -1").
const fn above(i: usize) -> u64 {
    match i {
        usize::MAX => u64::MAX,
        0..=62 => u64::MAX << (i + 1),
        _ => 0,
    }
}

/// A [`WINDOW`] of bytes classified: bit `i` of each mask for byte `i`.
struct WindowMasks {
    /// Bytes [`is_kept`] refuses (ESC among them).
    dropped: u64,
    /// ESC.
    escape: u64,
    /// Bytes that end a CSI sequence: `0x40..=0x7e`.
    final_byte: u64,
}

impl WindowMasks {
    /// Classifies `window` ([`WINDOW`] bytes) in vector registers (`clippy_lanes`).
    fn of(window: &[u8]) -> Self {
        let [dropped, escape, final_byte] = clippy_lanes::masks(window, |lanes| {
            // C0 controls (ASCII, so not negative, below 0x20) other than `\n` and `\t`; DEL.
            let control = lanes.simd_gt(splat(0xff)) & lanes.simd_lt(splat(0x20));
            let kept_control = lanes.simd_eq(splat(b'\n')) | lanes.simd_eq(splat(b'\t'));
            [
                (control & !kept_control) | lanes.simd_eq(splat(0x7f)),
                lanes.simd_eq(splat(0x1b)),
                lanes.simd_gt(splat(0x3f)) & lanes.simd_lt(splat(0x7f)),
            ]
        });
        Self {
            dropped,
            escape,
            final_byte,
        }
    }
}

/// The high bit of every lane of `word` whose byte ends a CSI sequence in [`Strip::after`] — a
/// final byte (`0x40..=0x7e`) or an ESC — and no other bit.
const fn csi_end_lanes(word: u64) -> u64 {
    let low7 = word & LANES_7F;
    let ascii = !word & LANES_80;
    // At least 0x40: adding 0x40 to the low seven bits sets the high bit; not DEL: adding 1
    // does not.
    let final_byte = (low7 + 0x40 * LANES_01) & !(low7 + LANES_01) & ascii;
    final_byte | lanes_equal(word, 0x1b)
}

/// The length of the CSI sequence `bytes` starts with, if it is complete: `ESC [`, then bytes
/// that leave [`Strip::Csi`] as it is (neither a final byte, `0x40..=0x7e`, nor ESC), then a
/// final byte — the path `Ground → Escape → Csi → … → Ground` of [`Strip::after`].
fn complete_csi_len(bytes: &[u8]) -> Option<usize> {
    let parameters = bytes.strip_prefix(b"\x1b[")?;
    // Eight bytes at a time: most sequences end in the first word.
    let words = parameters.chunks_exact(8);
    let tail = words.remainder();
    let in_words = words.enumerate().find_map(|(index, word)| {
        let ends = csi_end_lanes(word_of(word));
        (ends != 0).then(|| index * 8 + first_lane(ends))
    });
    let end = match in_words {
        Some(end) => end,
        None => {
            let in_tail = tail
                .iter()
                .position(|&byte| matches!(byte, 0x40..=0x7e | 0x1b))?;
            parameters.len() - tail.len() + in_tail
        }
    };
    (parameters[end] != 0x1b).then_some(2 + end + 1)
}

/// A run of kept text whose bytes sit at consecutive spool offsets: from text byte `text_start`
/// (counted from the scanner's first, forgotten ones included) at spool offset `spool_start`,
/// up to the next segment's start.
#[derive(Debug, Clone, Copy)]
struct Segment {
    text_start: u64,
    spool_start: u64,
}

/// Feeds on spool bytes from a cursor and finds the first match.
#[derive(Debug)]
pub struct Scanner {
    pattern: Pattern,
    /// The literal's searcher, built once rather than on every feed.
    literal: Option<memchr::memmem::Finder<'static>>,
    /// Stripped text kept for matching.
    text: Vec<u8>,
    /// How many stripped bytes were dropped from the front of `text` so far: `text[i]` is
    /// stripped byte `forgotten + i`.
    forgotten: u64,
    /// The spool offsets of the stripped bytes: a segment starts wherever a dropped byte
    /// interrupts the kept ones. Ordered by `text_start`; the first holds `text[0]`, if any.
    segments: Vec<Segment>,
    /// Where in `text` the next search starts.
    search_from: usize,
    /// Leading bytes of `text` kept only as what precedes the text a regex may still match:
    /// 1 once text was dropped (a regex's `^`, `$` and `\b` look at the byte before where
    /// `find_at` starts, so a cut in the middle of a line is not taken for a line start).
    context: usize,
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
        let literal = match &pattern {
            Pattern::Literal(literal) => {
                Some(memchr::memmem::Finder::new(literal.as_bytes()).into_owned())
            }
            Pattern::Regex(_) => None,
        };
        Self {
            pattern,
            literal,
            text: Vec::new(),
            forgotten: 0,
            segments: Vec::new(),
            search_from: 0,
            context: 0,
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
        self.strip_chunk(bytes);
        self.position += bytes.len() as u64;
        let found = self.search();
        if found.is_none() {
            self.forget_old_text();
        }
        found
    }

    /// Appends the kept bytes of `bytes` (whose first is at spool offset `self.position`) to
    /// `text`.
    ///
    /// Fast paths: in `Ground`, whole [`WINDOW`]s of bytes at a time with every CSI sequence
    /// inside them (most escapes: colours, cursor moves), see [`Scanner::strip_window`]; where a
    /// window cannot go on, the run of kept bytes up to the next ESC or dropped control is
    /// copied and tested eight bytes at a time, and a complete CSI sequence after it is skipped
    /// whole; in `Csi`, the parameter bytes, which do not change the state, are skipped. Every
    /// other byte — other escapes, dropped controls, sequences split between chunks — goes
    /// through [`Strip::after`], one at a time.
    fn strip_chunk(&mut self, bytes: &[u8]) {
        // Room for every byte of the chunk and a window more, so runs are copied without growing
        // `text` (a window's runs as whole windows); cut back to what was kept at the end.
        let mut written = self.text.len();
        self.text.resize(written + bytes.len() + WINDOW, 0);
        // The state in a local, not in `self`, so it can stay in a register.
        let mut state = self.strip;
        let mut at = 0;
        while at < bytes.len() {
            match state {
                Strip::Ground => loop {
                    // Whole windows while they get somewhere: most text and escapes.
                    while let Some(window) = bytes.get(at..at + WINDOW) {
                        let advanced = self.strip_window(window, at, &mut written);
                        if advanced == 0 {
                            break;
                        }
                        at += advanced;
                    }
                    // `written <= old length + at`, so the room left is at least `bytes[at..]`.
                    let run = copy_kept_prefix(&bytes[at..], &mut self.text[written..]);
                    if run > 0 {
                        // Only the chunk's first run can continue the last segment: any later one
                        // follows a dropped byte.
                        let spool_start = self.position + at as u64;
                        if at > 0 || !self.continues_last_segment(written, spool_start) {
                            self.segments.push(Segment {
                                text_start: self.forgotten + written as u64,
                                spool_start,
                            });
                        }
                        at += run;
                        written += run;
                    }
                    // The usual escape, a CSI sequence, whole in this chunk: back in `Ground`
                    // after it, as its bytes one by one through `Strip::after` would leave us.
                    match complete_csi_len(&bytes[at..]) {
                        Some(csi) => at += csi,
                        None => break,
                    }
                },
                // Parameter and intermediate bytes leave `Csi` as it is: skip to the byte that
                // ends or interrupts the sequence.
                Strip::Csi => {
                    at += bytes[at..]
                        .iter()
                        .position(|&byte| matches!(byte, 0x40..=0x7e | 0x1b))
                        .unwrap_or(bytes.len() - at);
                }
                Strip::Escape | Strip::String(_) => {}
            }
            if let Some(&byte) = bytes.get(at) {
                state = state.after(byte);
                at += 1;
            }
        }
        self.text.truncate(written);
        self.strip = state;
    }

    /// Strips a [`WINDOW`] of bytes that begins in `Ground` at chunk index `at`, as far as its
    /// last escape it can take whole: appends its kept bytes to `text` from `*written` on and
    /// returns how many bytes it took (the state after them is `Ground` again). Returns 0 when
    /// the window begins with an escape it cannot take (not a CSI sequence ending in the window
    /// without an ESC inside): [`Strip::after`] takes that one.
    ///
    /// The window is classified into bit masks (bit `i` for byte `i`) without a branch per
    /// byte, each CSI sequence is found from its ESC and the first final byte after it, and the
    /// kept runs are copied as fixed-size blocks: no loop whose exit depends on where in the
    /// text an escape is, so mispredicted branches are a few per window, not two per escape.
    fn strip_window(&mut self, window: &[u8], at: usize, written: &mut usize) -> usize {
        let masks = WindowMasks::of(window);
        let mut kept = !masks.dropped;
        // Every ESC from the lowest: where the window's taken part ends.
        let mut end = WINDOW;
        let mut escapes = masks.escape;
        while escapes != 0 {
            let start = escapes.trailing_zeros() as usize;
            // A CSI sequence: `ESC [` then, from the byte after the `[`, the first final byte
            // or ESC ends it.
            let ends = if window.get(start + 1) == Some(&b'[') {
                (masks.final_byte | masks.escape) & above(start + 1)
            } else {
                0
            };
            let last = ends.trailing_zeros() as usize;
            if ends == 0 || masks.escape & bit(last) != 0 {
                end = start;
                break;
            }
            // Bits `start..=last` are the sequence.
            let sequence = above(start.wrapping_sub(1)) & !above(last);
            kept &= !sequence;
            escapes &= above(last);
        }
        if end == 0 {
            return 0;
        }
        kept &= !above(end - 1);
        let mut padded = [0; 2 * WINDOW];
        padded[..WINDOW].copy_from_slice(window);
        let mut runs = kept;
        while runs != 0 {
            let start = runs.trailing_zeros() as usize;
            let len = (!(runs >> start)).trailing_zeros() as usize;
            let spool_start = self.position + (at + start) as u64;
            if start > 0 || !self.continues_last_segment(*written, spool_start) {
                self.segments.push(Segment {
                    text_start: self.forgotten + *written as u64,
                    spool_start,
                });
            }
            // The room left in `text` is at least the chunk's bytes from `at + start` on and a
            // window more; what is copied past the run is overwritten or cut off.
            self.text[*written..*written + WINDOW].copy_from_slice(&padded[start..start + WINDOW]);
            *written += len;
            runs &= above((start + len).wrapping_sub(1));
        }
        end
    }

    /// Whether kept bytes copied to `text[index..]` from spool offset `spool_start` on continue
    /// the last segment (so need no segment of their own).
    fn continues_last_segment(&self, index: usize, spool_start: u64) -> bool {
        let text_start = self.forgotten + index as u64;
        self.segments
            .last()
            .is_some_and(|last| last.spool_start + (text_start - last.text_start) == spool_start)
    }

    /// The spool offset of `text[index]`.
    fn spool_offset(&self, index: usize) -> u64 {
        let stripped = self.forgotten + index as u64;
        // The last segment starting at or before it; the first segment starts at or before
        // every byte held, so there is one.
        let after = self
            .segments
            .partition_point(|segment| segment.text_start <= stripped);
        let segment = self.segments[after.saturating_sub(1)];
        segment.spool_start + (stripped - segment.text_start)
    }

    fn search(&mut self) -> Option<Match> {
        let (start, end) = match (&self.pattern, &self.literal) {
            (Pattern::Literal(_), Some(finder)) => {
                let at = finder.find(&self.text[self.search_from..])?;
                let start = self.search_from + at;
                (start, start + finder.needle().len())
            }
            (Pattern::Regex(regex), _) => {
                let found = regex.find_at(&self.text, self.search_from)?;
                (found.start(), found.end())
            }
            // `new` builds the finder of every literal.
            (Pattern::Literal(_), None) => return None,
        };
        let span = (self.spool_offset(start), self.spool_offset(end - 1) + 1);
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
            Pattern::Regex(_) => (
                self.text.len().saturating_sub(MAX_MATCH_BYTES),
                self.context,
            ),
        };
        self.search_from = search_from;
        // Drop in large steps, so the cost of moving what is kept stays small. A regex keeps
        // the byte before what it may still match, as context.
        if keep_from >= MAX_MATCH_BYTES {
            let context = usize::from(matches!(self.pattern, Pattern::Regex(_)));
            let cut = keep_from - context;
            self.text.drain(..cut);
            self.forgotten += cut as u64;
            self.context = context;
            self.search_from = self.search_from.saturating_sub(cut).max(context);
            // Keep the segment holding the new first byte (or, with no text left, the last
            // one, which the next kept bytes may continue) and those after it.
            let first_kept = self
                .segments
                .partition_point(|segment| segment.text_start <= self.forgotten)
                .saturating_sub(1);
            self.segments.drain(..first_kept);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_regexes_keep_the_most_recently_used_and_never_a_refused_one() {
        let mut recent = RecentRegexes::default();
        let source = |i: usize| format!("marker-{i}");
        for i in 0..RecentRegexes::CAPACITY {
            recent.pattern(&source(i)).expect("compiles");
        }
        // Using the oldest makes it the newest: the next new pattern evicts the second oldest.
        recent.pattern(&source(0)).expect("kept");
        recent.pattern("another").expect("compiles");
        assert_eq!(recent.len(), RecentRegexes::CAPACITY);
        let kept = |recent: &RecentRegexes, s: &str| recent.compiled.iter().any(|(k, _)| k == s);
        assert!(kept(&recent, &source(0)));
        assert!(!kept(&recent, &source(1)));
        for refused in ["(", "a*"] {
            assert!(matches!(
                recent.pattern(refused),
                Err(SpoolError::InvalidPattern { .. })
            ));
            assert!(!kept(&recent, refused));
        }
        // A kept pattern matches as a fresh one does.
        let Ok(Pattern::Regex(regex)) = recent.pattern(&source(0)) else {
            panic!("a regex");
        };
        assert!(regex.is_match(b"a marker-0 here") && !regex.is_match(b"marker-1"));
    }

    #[test]
    fn the_word_tests_agree_with_the_byte_tests_for_every_byte_in_every_lane() {
        for byte in 0..=u8::MAX {
            for lane in 0..8 {
                // The byte among fillers of every kind: kept, dropped, ending a CSI or not.
                for filler in [b'a', b';', 0x00, 0xff, 0x1b, b'\n', 0x7f] {
                    let mut bytes = [filler; 8];
                    bytes[lane] = byte;
                    let word = u64::from_le_bytes(bytes);
                    let (dropped, csi_ends) = (dropped_lanes(word), csi_end_lanes(word));
                    for (i, &b) in bytes.iter().enumerate() {
                        let high_bit = 0x80 << (8 * i);
                        let context = format!("byte {b:#04x} in lane {i} of {bytes:02x?}");
                        assert_eq!(dropped & high_bit != 0, !is_kept(b), "dropped: {context}");
                        let ends_csi = Strip::Csi.after(b) != Strip::Csi;
                        assert_eq!(csi_ends & high_bit != 0, ends_csi, "CSI end: {context}");
                    }
                    assert_eq!((dropped | csi_ends) & !LANES_80, 0, "{bytes:02x?}");
                }
            }
        }
    }

    /// The first match of `literal` in `spool` (fed from spool offset 1000) by the exact
    /// stripper, one byte at a time through [`Strip::after`]: the stripped text, each kept byte's
    /// spool offset, and the span of the first match in it.
    #[test]
    fn the_window_masks_agree_with_the_byte_tests_for_every_byte_at_every_position() {
        for byte in 0..=u8::MAX {
            for at in 0..WINDOW {
                for filler in [b'a', b'[', 0x00, 0xff, 0x1b, b'\t', 0x7f] {
                    let mut window = [filler; WINDOW];
                    window[at] = byte;
                    let masks = WindowMasks::of(&window);
                    for (i, &b) in window.iter().enumerate() {
                        let context = format!("byte {b:#04x} at {i}, filler {filler:#04x}");
                        assert_eq!(
                            masks.dropped & bit(i) != 0,
                            !is_kept(b),
                            "dropped: {context}"
                        );
                        assert_eq!(masks.escape & bit(i) != 0, b == 0x1b, "escape: {context}");
                        let final_byte = (0x40..=0x7e).contains(&b);
                        assert_eq!(
                            masks.final_byte & bit(i) != 0,
                            final_byte,
                            "final: {context}"
                        );
                    }
                }
            }
        }
    }

    fn reference_span(spool: &[u8], literal: &str) -> Option<(u64, u64)> {
        let mut state = Strip::Ground;
        let (mut text, mut offsets) = (Vec::new(), Vec::new());
        for (index, &byte) in spool.iter().enumerate() {
            if state == Strip::Ground && is_kept(byte) {
                text.push(byte);
                offsets.push(1000 + index as u64);
            } else {
                state = state.after(byte);
            }
        }
        let start = memchr::memmem::find(&text, literal.as_bytes())?;
        let end = start + literal.len();
        Some((offsets[start], offsets[end - 1] + 1))
    }

    /// Checks that a scanner fed `spool` whole, and cut in two at every point, and cut in three
    /// at every pair of points `step` apart, finds what [`reference_span`] finds.
    fn agrees_at_every_cut(spool: &[u8], literal: &str) {
        let expected = reference_span(spool, literal);
        let scan = |pieces: &[&[u8]]| {
            let mut scanner = Scanner::new(Pattern::literal(literal).expect("a literal"), 1000);
            pieces
                .iter()
                .find_map(|piece| scanner.feed(piece))
                .map(|found| {
                    assert_eq!(found.text, literal);
                    assert_eq!(found.resume_cursor, found.span.1);
                    found.span
                })
        };
        assert_eq!(scan(&[spool]), expected, "whole: {spool:02x?}");
        for cut in 0..=spool.len() {
            let (head, tail) = spool.split_at(cut);
            assert_eq!(scan(&[head, tail]), expected, "cut at {cut}: {spool:02x?}");
            for second in (cut..=spool.len()).step_by(7) {
                let (middle, last) = tail.split_at(second - cut);
                let found = scan(&[head, middle, last]);
                assert_eq!(found, expected, "cut at {cut} and {second}: {spool:02x?}");
            }
        }
    }

    /// `before`, then `filler` repeated so that what follows starts at byte `at`, then `after`.
    fn placed(before: &[u8], at: usize, after: &[u8]) -> Vec<u8> {
        let mut spool = before.to_vec();
        while spool.len() < at {
            spool.push(b"lorem ipsum "[spool.len() % 12]);
        }
        spool.extend_from_slice(after);
        spool
    }

    #[test]
    fn a_match_right_after_an_escape_wherever_it_falls() {
        for at in [0, 1, 7, 8, 30, 56, 60, 62, 63, 64, 65, 100, 126, 127, 128] {
            let spool = placed(b"", at, b"\x1b[1;32mneedle\x1b[0m tail of the line\n");
            agrees_at_every_cut(&spool, "needle");
        }
    }

    #[test]
    fn a_match_split_by_escapes_across_window_and_chunk_boundaries() {
        for at in [0, 50, 58, 60, 61, 62, 63, 64, 120, 126, 127] {
            let spool = placed(
                b"\x1b[31mx\x1b[0m ",
                at,
                b"ne\x1b[1me\x1b[38;2;215;119;87md\x1b[0mle and more text after it\n",
            );
            agrees_at_every_cut(&spool, "needle");
        }
    }

    #[test]
    fn escapes_crossing_a_window_edge_or_longer_than_a_window() {
        let long_csi = [&b"\x1b["[..], &[b'1'; 80], b"m"].concat();
        let long_osc = [&b"\x1b]0;"[..], &[b't'; 90], b"\x07"].concat();
        for escape in [
            &b"\x1b[38;5;208m"[..],
            b"\x1b[1\x1b[0m",
            b"\x1b[?25l",
            b"\x1b]0;title needle\x07",
            b"\x1b]2;needle\x1b\\",
            b"\x1bPneedle\x18",
            b"\x1b_needle\x1a",
            b"\x1b(B",
            b"\x1b\x1b[0m",
            &long_csi,
            &long_osc,
        ] {
            for at in [0, 40, 58, 60, 62, 63, 64, 65] {
                let spool = placed(b"", at, &[escape, b"needle\n"].concat());
                agrees_at_every_cut(&spool, "needle");
                // A match only inside the escape is no match.
                let spool = placed(b"", at, &[escape, b"\n"].concat());
                agrees_at_every_cut(&spool, "needle");
            }
        }
    }

    #[test]
    fn osc_strings_end_at_bel_and_at_st_and_hide_what_they_hold() {
        for (osc, expected) in [
            (&b"\x1b]0;needle\x07needle"[..], Some((1011, 1017))),
            (b"\x1b]0;needle\x1b\\needle", Some((1012, 1018))),
            // An ESC inside the string without `\\` does not end it.
            (b"\x1b]0;x\x1bneedle\x07needle", Some((1013, 1019))),
            (b"\x1b]0;needle", None),
        ] {
            assert_eq!(reference_span(osc, "needle"), expected, "{osc:02x?}");
            agrees_at_every_cut(osc, "needle");
            agrees_at_every_cut(&placed(b"", 60, osc), "needle");
        }
    }

    #[test]
    fn a_lone_esc_at_the_end_of_a_chunk_waits_for_the_next() {
        for at in [0, 5, 63, 64, 100] {
            let spool = placed(b"", at, b"nee\x1b");
            let mut scanner = Scanner::new(Pattern::literal("needle").expect("a literal"), 1000);
            assert_eq!(scanner.feed(&spool), None);
            // The ESC takes the `[` as the start of a CSI sequence: `1m` ends it.
            let found = scanner
                .feed(b"[1mdle\n")
                .expect("the match goes on after the escape");
            let start = 1000 + at as u64;
            assert_eq!(found.span, (start, start + 3 + 4 + 3));
            // And as the next chunk's first byte, another ESC starts a sequence again.
            let mut scanner = Scanner::new(Pattern::literal("needle").expect("a literal"), 1000);
            assert_eq!(scanner.feed(&spool), None);
            assert_eq!(
                scanner.feed(b"\x1b[0mdle"),
                Some(Match {
                    text: "needle".into(),
                    span: (start, start + 3 + 1 + 4 + 3),
                    resume_cursor: start + 3 + 1 + 4 + 3,
                })
            );
            agrees_at_every_cut(&[&spool[..], b"\x1b[0mdle"].concat(), "needle");
        }
    }

    #[test]
    fn stray_controls_and_text_beyond_ascii_between_escapes() {
        let spool = placed(
            b"\r\x07\x08 \x7f\t",
            61,
            "né\x1b[1m\x00e\x0d\x1b[0mdle ✳ 日本語\n".as_bytes(),
        );
        agrees_at_every_cut(&spool, "néedle ✳");
        let spool = placed(b"", 61, "né\x1b[1m\x00e\x0d\x1b[0mdle".as_bytes());
        agrees_at_every_cut(&spool, "néedle");
    }

    #[test]
    fn copy_kept_prefix_stops_at_the_first_dropped_byte() {
        for len in 0..40 {
            for stop in 0..=len {
                let from: Vec<u8> = (0..len)
                    .map(|i| {
                        if i == stop {
                            0x1b
                        } else {
                            b'a' + (i % 26) as u8
                        }
                    })
                    .collect();
                let mut to = vec![0; len];
                assert_eq!(
                    copy_kept_prefix(&from, &mut to),
                    stop,
                    "len {len}, stop {stop}"
                );
                assert_eq!(to[..stop], from[..stop], "len {len}, stop {stop}");
            }
        }
    }

    #[test]
    fn complete_csi_len_follows_the_state_machine() {
        let cases: [(&[u8], Option<usize>); 8] = [
            (b"\x1b[0m", Some(4)),
            (b"\x1b[38;2;215;119;87mtext", Some(18)),
            (b"\x1b[?25l", Some(6)),
            (b"\x1b[1;3", None),
            (b"\x1b[1\x1b[0m", None),
            (b"\x1b]0;title\x07", None),
            (b"x\x1b[0m", None),
            (b"\x1b[\x01\x02 !m", Some(7)),
        ];
        for (bytes, expected) in cases {
            assert_eq!(complete_csi_len(bytes), expected, "{bytes:02x?}");
        }
    }
}
