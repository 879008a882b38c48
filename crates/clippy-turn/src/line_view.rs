//! The ANSI-stripped line view of an output stream, with exact byte offsets.
//!
//! Lines are cut the way a terminal draws them: a line ends at LF, VT, FF and CR, and at any
//! vertical cursor movement or absolute positioning; a horizontal cursor movement counts as a
//! space (TUIs draw the gaps between words with `ESC[nG`); backspace deletes the last character.
//!
//! Why not hand everything to `vte`: its ground state executes C0 controls in the middle of a
//! printable run, so the offset of a line break inside a run is lost, and with `std` its OSC
//! buffer grows without bound. So this view handles ground-state text and C0 controls itself
//! (a fast path for printable runs, exact offsets for every line break) and hands only escape
//! sequences to `vte`, stopping it as soon as a sequence is dispatched. OSC strings longer than
//! [`MAX_OSC_BYTES`] are abandoned and skipped, so memory stays bounded whatever the stream.

use std::fmt::Write as _;

use clippy_lanes::{WINDOW, splat};

/// OSC payloads longer than this are skipped unparsed (titles and marks are far shorter).
pub(crate) const MAX_OSC_BYTES: usize = 8 * 1024;
/// The line buffer keeps at most this many bytes of a line's text (the most recent ones).
const MAX_LINE_BYTES: usize = 8 * 1024;

/// One finished line of the view.
#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// The stripped text of the line, as bytes (UTF-8 unless the program wrote invalid UTF-8).
    pub text: &'a [u8],
    /// Offset of the line's first byte in the stream.
    pub start: u64,
}

/// What the view reports while it is fed.
pub(crate) trait ViewSink {
    /// A line ended.
    fn line(&mut self, line: &Line<'_>);
    /// An OSC was dispatched: `payload` is its parameters joined with `;`, `start..end` its bytes.
    fn osc(&mut self, payload: &str, start: u64, end: u64);
    /// A DEC private mode was set or reset (`ESC[?Nh` / `ESC[?Nl`); its sequence ends at `end`.
    fn private_mode(&mut self, mode: u16, set: bool, end: u64);
}

/// What one dispatched escape sequence (or a C0 inside one) means for the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    LineBreak,
    Space,
    Backspace,
    Osc,
    Mode(u16, bool),
}

/// The `vte::Perform` half: turns dispatches into [`Action`]s for the view to apply.
#[derive(Debug, Default)]
struct Performer {
    /// True from an ESC until `vte` dispatches the sequence it started.
    in_escape: bool,
    /// Actions of the bytes fed since the last drain (at most a few: modes come in lists), each
    /// with how much of `printed` came before it: `vte` hands a run of plain text to `print`
    /// and `execute` in one go, and the view must apply them in that order.
    actions: Vec<(usize, Action)>,
    /// The last OSC payload, joined with `;`.
    osc: String,
    /// Text `vte` printed itself: it only prints in its ground state, so the escape sequence
    /// ended, whether or not `vte` dispatched it.
    printed: Vec<u8>,
}

impl Performer {
    fn act(&mut self, action: Action) {
        self.actions.push((self.printed.len(), action));
    }
}

impl vte::Perform for Performer {
    fn print(&mut self, c: char) {
        self.in_escape = false;
        self.printed
            .extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    }

    fn execute(&mut self, byte: u8) {
        // CAN and SUB abort whatever sequence or string `vte` was in: it is back in its ground
        // state, without a dispatch to say so.
        if matches!(byte, 0x18 | 0x1a) {
            self.in_escape = false;
        }
        if let Some(action) = c0_action(byte) {
            self.act(action);
        }
    }

    fn unhook(&mut self) {
        // A DCS string ended (by ST, CAN, SUB, or the ESC of the next sequence, which starts an
        // escape of its own: `LineView::feed` sees that ESC).
        self.in_escape = false;
    }

    fn csi_dispatch(
        &mut self,
        params: &vte::Params,
        intermediates: &[u8],
        _ignore: bool,
        action: char,
    ) {
        self.in_escape = false;
        match (intermediates, action) {
            ([], _) => {
                if let Some(action) = csi_action(action) {
                    self.act(action);
                }
            }
            ([b'?'], 'h' | 'l') => {
                for param in params.iter() {
                    if let Some(&mode) = param.first() {
                        self.act(Action::Mode(mode, action == 'h'));
                    }
                }
            }
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _ignore: bool, byte: u8) {
        self.in_escape = false;
        if intermediates.is_empty() && matches!(byte, b'D' | b'E' | b'M' | b'8' | b'c') {
            self.act(Action::LineBreak);
        }
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], bell_terminated: bool) {
        // Terminated by ESC, `vte` is now inside the `ESC \` that ends the string: the escape
        // goes on until that is dispatched.
        self.in_escape = !bell_terminated;
        self.osc.clear();
        for (i, param) in params.iter().enumerate() {
            if i > 0 {
                self.osc.push(';');
            }
            let _ = write!(self.osc, "{}", String::from_utf8_lossy(param));
        }
        self.act(Action::Osc);
    }

    fn terminated(&self) -> bool {
        !self.in_escape || !self.actions.is_empty()
    }
}

/// What a CSI sequence without private marker or intermediates does to the line view.
fn csi_action(action: char) -> Option<Action> {
    match action {
        'A' | 'B' | 'E' | 'F' | 'H' | 'f' | 'd' | 'r' | 'u' => Some(Action::LineBreak),
        'C' | 'D' | 'G' | '`' | 'a' | 'I' | 'Z' => Some(Action::Space),
        _ => None,
    }
}

/// The most common escape sequences — SGR, cursor moves, mode set/reset: `ESC [ [?] digits;… final`
/// — parsed directly when they lie whole in the chunk, sparing `vte`'s byte-at-a-time state
/// machine. `rest` starts just after the ESC. Anything else (intermediates, sub-parameters,
/// other private markers, a sequence cut by the chunk's end) is left to `vte`.
struct SimpleCsi<'a> {
    /// Bytes after the ESC, final byte included.
    len: usize,
    private: bool,
    params: &'a [u8],
    action: u8,
}

impl<'a> SimpleCsi<'a> {
    const MAX_PARAMS: usize = 32;

    fn parse(rest: &'a [u8]) -> Option<Self> {
        let body = rest.strip_prefix(b"[")?;
        let private = body.first() == Some(&b'?');
        let params_start = usize::from(private);
        let params_len = body[params_start..]
            .iter()
            .take(Self::MAX_PARAMS + 1)
            .position(|b| !matches!(b, b'0'..=b'9' | b';'))?;
        if params_len > Self::MAX_PARAMS {
            return None;
        }
        let action = *body.get(params_start + params_len)?;
        if !(0x40..=0x7e).contains(&action) {
            return None;
        }
        Some(Self {
            len: 1 + params_start + params_len + 1,
            private,
            params: &body[params_start..params_start + params_len],
            action,
        })
    }

    /// Applies the sequence to the view; `end` is the offset just after it.
    fn apply(&self, view: &mut LineView, end: u64, sink: &mut impl ViewSink) {
        match (self.private, self.action) {
            (false, action) => {
                if let Some(action) = csi_action(char::from(action)) {
                    view.apply(action, end, sink);
                }
            }
            (true, action @ (b'h' | b'l')) => {
                for param in self.params.split(|&b| b == b';') {
                    let mode = param.iter().try_fold(0u16, |n, &d| {
                        n.checked_mul(10)?.checked_add(u16::from(d - b'0'))
                    });
                    if let Some(mode) = mode.filter(|_| !param.is_empty()) {
                        view.apply(Action::Mode(mode, action == b'h'), end, sink);
                    }
                }
            }
            _ => {}
        }
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 character that does not end there (what a
/// UTF-8 decoder holds back for the next read).
fn incomplete_utf8_tail(bytes: &[u8]) -> usize {
    let Some(lead) = (1..=bytes.len().min(3))
        .map(|back| bytes.len() - back)
        .find(|&i| bytes[i] & 0xc0 != 0x80)
    else {
        return 0;
    };
    match std::str::from_utf8(&bytes[lead..]) {
        Err(e) if e.error_len().is_none() => bytes.len() - lead - e.valid_up_to(),
        _ => 0,
    }
}

fn c0_action(byte: u8) -> Option<Action> {
    match byte {
        b'\n' | 0x0b | 0x0c | b'\r' => Some(Action::LineBreak),
        0x08 => Some(Action::Backspace),
        b'\t' => Some(Action::Space),
        _ => None,
    }
}

/// What an escape sequence is, by the first byte after the ESC that `vte` does not skip (it
/// executes C0 controls there and ignores DEL, ESC and bytes from 0x80).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum EscapeKind {
    #[default]
    Undecided,
    /// `ESC [`: it ends at its final byte even when `vte` drops it without a dispatch (a
    /// malformed one), which is then up to the view to see.
    Csi,
    /// `ESC ]`: an OSC string, cut at [`MAX_OSC_BYTES`].
    Osc,
    Other,
}

/// Where the view is between escape sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Plain text and C0 controls, handled here.
    Ground,
    /// Inside an escape sequence, handled by `vte`.
    Escape,
    /// Skipping an over-long OSC string until BEL, ESC or CAN/SUB.
    SkipString,
}

/// The line view: fed bytes with their stream offsets, reports lines, OSCs and modes.
#[derive(Default)]
pub(crate) struct LineView {
    parser: vte::Parser,
    performer: Performer,
    mode: ModeCell,
    /// Offset of the ESC that started the current escape sequence.
    escape_start: u64,
    /// Bytes of the current escape sequence fed so far.
    escape_len: usize,
    /// What the current escape sequence is, once its introducing byte has come.
    escape_kind: EscapeKind,
    /// The current line's text, as bytes: a character split across chunks rejoins here.
    line: Vec<u8>,
    /// Offset of the current line's first byte.
    line_start: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ModeCell(Mode);

impl Default for ModeCell {
    fn default() -> Self {
        Self(Mode::Ground)
    }
}

impl std::fmt::Debug for LineView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineView")
            .field("mode", &self.mode)
            .field("line", &String::from_utf8_lossy(&self.line))
            .field("line_start", &self.line_start)
            .finish_non_exhaustive()
    }
}

impl LineView {
    /// The text of the line being drawn, not yet ended.
    pub(crate) fn current_text(&self) -> &[u8] {
        &self.line
    }

    /// Offset of the current line's first byte.
    pub(crate) fn current_start(&self) -> u64 {
        self.line_start
    }

    /// Whether the view is between escape sequences: what it is fed next is read afresh.
    pub(crate) fn at_ground(&self) -> bool {
        self.mode.0 == Mode::Ground
    }

    /// Starts the view afresh at stream offset `offset`, as the start of a line outside any
    /// escape sequence (what it held is dropped): for a caller that skipped the output before
    /// (see [`only_lines`]) and resumes at a line's start.
    pub(crate) fn restart_at(&mut self, offset: u64) {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        *self = Self {
            line,
            line_start: offset,
            ..Self::default()
        };
    }

    /// Feeds `bytes`, which start at stream offset `base`.
    pub(crate) fn feed(&mut self, bytes: &[u8], base: u64, sink: &mut impl ViewSink) {
        let mut pos = 0;
        while pos < bytes.len() {
            let offset = base + pos as u64;
            match self.mode.0 {
                Mode::Ground => {
                    let rest = &bytes[pos..];
                    let run = find_control(rest);
                    if run > 0 {
                        // The common case — a whole line of plain text ending in a line break —
                        // is matched where it lies, without copying it into the line buffer.
                        if self.line.is_empty()
                            && let Some(&end) = rest.get(run)
                            && matches!(end, b'\n' | b'\r' | 0x0b | 0x0c)
                        {
                            sink.line(&Line {
                                text: &rest[..run],
                                start: self.line_start,
                            });
                            pos += run + 1;
                            self.line_start = base + pos as u64;
                            continue;
                        }
                        self.append(&rest[..run]);
                        pos += run;
                        continue;
                    }
                    let byte = rest[0];
                    pos += 1;
                    if byte == 0x1b {
                        if let Some(csi) = SimpleCsi::parse(&bytes[pos..]) {
                            pos += csi.len;
                            csi.apply(self, base + pos as u64, sink);
                            continue;
                        }
                        self.mode.0 = Mode::Escape;
                        self.begin_escape(offset);
                        self.parser.advance(&mut self.performer, &[byte]);
                    } else if let Some(action) = c0_action(byte) {
                        self.apply(action, offset + 1, sink);
                    }
                }
                Mode::Escape => {
                    let rest = &bytes[pos..];
                    // The kind, and where the bytes after the introducing one begin in `rest`.
                    let (kind, after_intro) = match self.escape_kind {
                        EscapeKind::Undecided => rest
                            .iter()
                            .position(|b| (0x20..=0x7e).contains(b))
                            .map_or((EscapeKind::Undecided, 0), |i| {
                                let kind = match rest[i] {
                                    b'[' => EscapeKind::Csi,
                                    b']' => EscapeKind::Osc,
                                    _ => EscapeKind::Other,
                                };
                                (kind, i + 1)
                            }),
                        kind => (kind, 0),
                    };
                    // A CSI is fed up to the byte that ends it (a final byte; CAN or SUB abort
                    // it; an ESC starts another sequence), so that its end is known here even
                    // when `vte` drops it without a dispatch.
                    let csi_end = (kind == EscapeKind::Csi)
                        .then(|| {
                            rest.get(after_intro..)?
                                .iter()
                                .position(|&b| matches!(b, 0x40..=0x7e | 0x18 | 0x1a | 0x1b))
                                .map(|i| after_intro + i)
                        })
                        .flatten();
                    let limit = if kind == EscapeKind::Osc {
                        rest.len()
                            .min(MAX_OSC_BYTES.saturating_sub(self.escape_len).max(1))
                    } else {
                        csi_end.map_or(rest.len(), |end| end + 1)
                    };
                    // Nor past an ESC: one starts a new escape, at its own offset, below.
                    let limit = rest[..limit]
                        .iter()
                        .position(|&b| b == 0x1b)
                        .map_or(limit, |esc| esc + 1);
                    let used = self
                        .parser
                        .advance_until_terminated(&mut self.performer, &rest[..limit]);
                    pos += used;
                    self.escape_len += used;
                    if used >= after_intro {
                        // `vte` has read the introducing byte (a control before it may have
                        // stopped it short).
                        self.escape_kind = kind;
                    }
                    if csi_end.is_some_and(|end| used == end + 1 && rest[end] != 0x1b) {
                        // Dispatched, dropped or aborted: the CSI is over either way.
                        self.performer.in_escape = false;
                    }
                    let end = base + pos as u64;
                    let printed = !self.performer.printed.is_empty();
                    self.drain_performer(end, sink);
                    if printed && !self.performer.in_escape {
                        // `vte` printed, so it is in its ground state, perhaps holding the start
                        // of a character cut by the end of what it was fed: the view takes that
                        // over, and `vte` starts afresh (the view's own text handling goes on).
                        let held = incomplete_utf8_tail(&rest[..used]);
                        if held > 0 {
                            self.parser = vte::Parser::new();
                            self.append(&rest[used - held..used]);
                        }
                    }
                    if used > 0 && rest[used - 1] == 0x1b {
                        // Whatever `vte` was in — a sequence, a string, or text it printed after
                        // dropping a sequence — an ESC starts a new escape there, and `vte` is
                        // in it now.
                        self.begin_escape(end - 1);
                    }
                    if !self.performer.in_escape {
                        self.mode.0 = Mode::Ground;
                    } else if self.escape_kind == EscapeKind::Osc
                        && self.escape_len >= MAX_OSC_BYTES
                    {
                        // Abandon the string: CAN makes `vte` dispatch what it has and return to
                        // ground; that partial payload is dropped, and the rest is skipped.
                        self.parser.advance(&mut self.performer, &[0x18]);
                        self.performer.actions.clear();
                        self.performer.in_escape = false;
                        self.mode.0 = Mode::SkipString;
                    }
                }
                Mode::SkipString => {
                    let rest = &bytes[pos..];
                    match rest
                        .iter()
                        .position(|&b| matches!(b, 0x07 | 0x18 | 0x1a | 0x1b))
                    {
                        Some(i) => {
                            // BEL, CAN and SUB end the string; ESC starts the `ESC \` that does.
                            pos += i + usize::from(rest[i] != 0x1b);
                            self.mode.0 = Mode::Ground;
                        }
                        None => pos = bytes.len(),
                    }
                }
            }
        }
    }

    /// An escape sequence begins with the ESC at offset `at` (`vte` is fed or has read it).
    fn begin_escape(&mut self, at: u64) {
        self.performer.in_escape = true;
        self.escape_start = at;
        self.escape_len = 1;
        self.escape_kind = EscapeKind::Undecided;
    }

    /// Applies what `vte` reported for the bytes up to `end`.
    fn drain_performer(&mut self, end: u64, sink: &mut impl ViewSink) {
        let start = self.escape_start;
        let mut actions = std::mem::take(&mut self.performer.actions);
        let mut printed = std::mem::take(&mut self.performer.printed);
        let mut appended = 0;
        for (printed_before, action) in actions.drain(..) {
            self.append(&printed[appended..printed_before]);
            appended = printed_before;
            match action {
                Action::Osc => sink.osc(&self.performer.osc, start, end),
                other => self.apply(other, end, sink),
            }
        }
        self.append(&printed[appended..]);
        printed.clear();
        self.performer.printed = printed;
        self.performer.actions = actions;
    }

    /// Applies one action whose bytes end at `end`.
    fn apply(&mut self, action: Action, end: u64, sink: &mut impl ViewSink) {
        match action {
            Action::LineBreak => {
                sink.line(&Line {
                    text: &self.line,
                    start: self.line_start,
                });
                self.line.clear();
                self.line_start = end;
            }
            Action::Space => {
                if self.line.last().is_some_and(|b| !b.is_ascii_whitespace()) {
                    self.line.push(b' ');
                }
            }
            Action::Backspace => {
                // One character: its continuation bytes, then its first byte.
                while self.line.pop().is_some_and(|b| b & 0xc0 == 0x80) {}
            }
            Action::Mode(mode, set) => sink.private_mode(mode, set, end),
            // Reported by `drain_performer`, which has the payload.
            Action::Osc => {}
        }
    }

    /// Appends printable bytes to the line, keeping at most the last `MAX_LINE_BYTES`.
    fn append(&mut self, bytes: &[u8]) {
        self.line.extend_from_slice(bytes);
        if self.line.len() > MAX_LINE_BYTES {
            // Keep the most recent half (a prompt is drawn last), cut at a character boundary.
            let mut cut = self.line.len() - MAX_LINE_BYTES / 2;
            while self.line.get(cut).is_some_and(|b| b & 0xc0 == 0x80) {
                cut += 1;
            }
            self.line.drain(..cut);
        }
    }
}

/// Whether a view between escape sequences ([`LineView::at_ground`]), fed `cut` then `bytes`,
/// reports nothing but lines and ends outside any string: every escape sequence in them is one
/// whose meaning for the view is at most a line break or a space (a CSI with no `?` marker,
/// which sets no mode; `ESC ( B` and the like). An OSC, a DCS, SOS, PM or APC string, or a
/// private mode set or reset says no (`None`). `Some(n)`: yes, as far as they go; their last
/// `n` bytes (an ESC, or `ESC [`) begin an escape sequence whose kind the next bytes tell, to be
/// passed as the next call's `cut`.
pub(crate) fn only_lines(cut: &[u8], bytes: &[u8]) -> Option<usize> {
    if !cut.is_empty() {
        // The escape carried over is told by the first bytes of these.
        let head: Vec<u8> = cut.iter().chain(bytes.iter().take(2)).copied().collect();
        match escape_kind(&head) {
            Escape::Refused => return None,
            Escape::Open => return Some(cut.len() + bytes.len()),
            Escape::Line => {}
        }
    }
    if refused_escape(bytes) {
        return None;
    }
    match bytes {
        [.., 0x1b] => Some(1),
        [.., 0x1b, b'['] => Some(2),
        _ => Some(0),
    }
}

/// What the escape sequence `bytes` begins with is, for [`only_lines`].
#[derive(Debug, PartialEq, Eq)]
enum Escape {
    /// One that says more than a line break or a space.
    Refused,
    /// Told by bytes still to come.
    Open,
    /// One [`only_lines`] takes.
    Line,
}

/// What the escape sequence at the start of `bytes` (an ESC) is: refused if an OSC, DCS, SOS,
/// PM or APC string, a private mode (`ESC [ ?`), or a byte `vte` skips or executes before the
/// one that says what the sequence is, comes after the ESC.
fn escape_kind(bytes: &[u8]) -> Escape {
    match (bytes.get(1), bytes.get(2)) {
        (None, _) | (Some(b'['), None) => Escape::Open,
        (Some(b'['), Some(b'?')) => Escape::Refused,
        (Some(&byte), _) if refused_after_escape(byte) => Escape::Refused,
        _ => Escape::Line,
    }
}

/// Whether `byte`, right after an ESC, makes a sequence [`only_lines`] refuses: the strings
/// (OSC, DCS, SOS, PM, APC), and whatever is not ASCII printable (but `[`, which the byte after
/// it tells).
const fn refused_after_escape(byte: u8) -> bool {
    matches!(byte, b']' | b'P' | b'X' | b'^' | b'_') || byte < 0x20 || byte > 0x7e
}

/// Whether an escape sequence in `bytes` is one [`only_lines`] refuses ([`escape_kind`]); one
/// the end of `bytes` leaves open is not. Every ESC is looked at, without a search per ESC (in
/// coloured output one comes every few bytes, and a search afresh for each cost more than the
/// scan): a [`WINDOW`] of bytes is classified at once in vector registers (`clippy_lanes`),
/// and a bit mask per class says where each ESC's next bytes refuse it.
fn refused_escape(bytes: &[u8]) -> bool {
    // ESCs at the end of the last window, for the next one: the last byte's, and the last
    // byte's when it is a `[` after an ESC.
    let mut escape_before = 0;
    let mut bracket_before = 0;
    for window in bytes.chunks(WINDOW) {
        let masks = WindowMasks::of(window);
        // Bit `i`: the byte before byte `i` is an ESC.
        let after_escape = (masks.escape << 1) | escape_before;
        // Bit `i`: bytes `i - 2` and `i - 1` are `ESC [`.
        let bracketed = (((after_escape & masks.bracket) << 1) | bracket_before) & masks.question;
        if after_escape & masks.refused != 0 || bracketed != 0 {
            return true;
        }
        escape_before = masks.escape >> (WINDOW - 1);
        bracket_before = (after_escape & masks.bracket) >> (WINDOW - 1);
    }
    false
}

/// A window of up to [`WINDOW`] bytes classified for [`refused_escape`] (`clippy_lanes`): bit
/// `i` of each mask for byte `i`.
struct WindowMasks {
    escape: u64,
    /// Bytes [`refused_after_escape`].
    refused: u64,
    bracket: u64,
    question: u64,
}

impl WindowMasks {
    fn of(window: &[u8]) -> Self {
        let [escape, refused, bracket, question] = clippy_lanes::masks(window, |lanes| {
            [
                lanes.simd_eq(splat(0x1b)),
                // Read as signed, every byte beyond ASCII is negative: below 0x20 takes them in.
                lanes.simd_lt(splat(0x20))
                    | lanes.simd_eq(splat(0x7f))
                    | lanes.simd_eq(splat(b']'))
                    | lanes.simd_eq(splat(b'P'))
                    | lanes.simd_eq(splat(b'X'))
                    | lanes.simd_eq(splat(b'^'))
                    | lanes.simd_eq(splat(b'_')),
                lanes.simd_eq(splat(b'[')),
                lanes.simd_eq(splat(b'?')),
            ]
        });
        Self {
            escape,
            refused,
            bracket,
            question,
        }
    }
}

/// The index of the first C0 control byte or DEL in `bytes` (its length if there is none),
/// eight bytes at a time: the printable runs between controls are most of any output.
fn find_control(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut skipped = 0;
    for chunk in bytes.chunks_exact(8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(word);
        // Some byte below 0x20 (bytes from 0x80 up never count), or some byte equal to 0x7f.
        let below = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
        let del = word ^ (ONES * 0x7f);
        let del = del.wrapping_sub(ONES) & !del & HIGH;
        if below | del != 0 {
            break;
        }
        skipped += 8;
    }
    let rest = &bytes[skipped..];
    skipped
        + rest
            .iter()
            .position(|&b| b < 0x20 || b == 0x7f)
            .unwrap_or(rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        lines: Vec<(String, u64)>,
        oscs: Vec<(String, u64, u64)>,
        modes: Vec<(u16, bool)>,
    }

    impl ViewSink for Collect {
        fn line(&mut self, line: &Line<'_>) {
            self.lines
                .push((String::from_utf8_lossy(line.text).into_owned(), line.start));
        }
        fn osc(&mut self, payload: &str, start: u64, end: u64) {
            self.oscs.push((payload.to_owned(), start, end));
        }
        fn private_mode(&mut self, mode: u16, set: bool, _end: u64) {
            self.modes.push((mode, set));
        }
    }

    fn view(bytes: &[u8]) -> (Collect, String) {
        let mut view = LineView::default();
        let mut sink = Collect::default();
        view.feed(bytes, 0, &mut sink);
        (
            sink,
            String::from_utf8_lossy(view.current_text()).into_owned(),
        )
    }

    fn texts(c: &Collect) -> Vec<&str> {
        c.lines.iter().map(|(t, _)| t.as_str()).collect()
    }

    #[test]
    fn text_after_a_dropped_csi_lands_in_order_whatever_the_chunking() {
        // `1+2A`: a parameter after an intermediate, which `vte` drops without a dispatch. The
        // text and line breaks after it keep their order, and the escape is over.
        let stream = b"x\x1b[1+2Aab\ncd\x1b]133;A\x07";
        let (whole, rest) = view(stream);
        assert_eq!(texts(&whole), ["xab"]);
        assert_eq!(rest, "cd");
        assert_eq!(whole.oscs, [("133;A".to_owned(), 12, 20)]);
        let mut view = LineView::default();
        let mut bytewise = Collect::default();
        for (i, byte) in stream.iter().enumerate() {
            view.feed(std::slice::from_ref(byte), i as u64, &mut bytewise);
        }
        assert_eq!(bytewise.lines, whole.lines);
        assert_eq!(bytewise.oscs, whole.oscs);
    }

    #[test]
    fn a_csi_behind_bytes_vte_skips_is_still_seen_to_end() {
        // `vte` skips a C1 byte after the ESC and executes a CR: `ESC 0x93 \r [ 1 + 2 A` is a
        // (dropped) CSI all the same, and what follows is text again, the CR a line break.
        let (c, rest) = view(b"a\x1b\x93\r[1+2Ab\x1b]133;A\x07");
        assert_eq!(texts(&c), ["a"]);
        assert_eq!(rest, "b");
        assert_eq!(c.oscs, [("133;A".to_owned(), 10, 18)]);
    }

    #[test]
    fn incomplete_utf8_tails_are_measured_as_a_decoder_holds_them() {
        assert_eq!(incomplete_utf8_tail(b"ab\xe2\x94"), 2);
        assert_eq!(incomplete_utf8_tail(b"ab\xf0\x9f\xa6"), 3);
        assert_eq!(incomplete_utf8_tail("ab│".as_bytes()), 0);
        assert_eq!(
            incomplete_utf8_tail(b"ab\xc0"),
            0,
            "never the start of a character"
        );
        assert_eq!(incomplete_utf8_tail(b"\x80\x80"), 0);
        assert_eq!(incomplete_utf8_tail(b""), 0);
    }

    #[test]
    fn lines_end_at_terminal_line_breaks_with_offsets() {
        let (c, rest) = view(b"ab\r\ncd\x1b[2Aef\x1b[5;1Hgh");
        assert_eq!(texts(&c), ["ab", "", "cd", "ef"]);
        let starts: Vec<u64> = c.lines.iter().map(|(_, s)| *s).collect();
        assert_eq!(starts, [0, 3, 4, 10]);
        let mut v = LineView::default();
        v.feed(b"ab\r\ncd\x1b[2Aef\x1b[5;1Hgh", 0, &mut Collect::default());
        assert_eq!(v.current_start(), 18);
        assert_eq!(rest, "gh");
    }

    #[test]
    fn escapes_are_stripped_and_horizontal_moves_are_spaces() {
        let (_, rest) = view(b"\x1b[1;32mhello\x1b[0m\x1b[3Gworld\x1b[K\tx\x1b[?25l");
        assert_eq!(rest, "hello world x");
        let (_, lead) = view(b"\x1b[5G> ");
        assert_eq!(lead, "> ", "no space before the first character");
    }

    #[test]
    fn backspace_is_applied() {
        let (_, rest) = view(b"abc\x08\x08d");
        assert_eq!(rest, "ad");
        let (_, rest) = view("a✳\x08b".as_bytes());
        assert_eq!(rest, "ab", "backspace removes a whole character");
    }

    #[test]
    fn the_control_byte_scan_finds_the_first_one() {
        let filler = [b'a', 0x80, 0xe2, b' ', b'~'];
        for len in 0..40 {
            for at in 0..=len {
                for control in [0u8, b'\n', 0x1b, 0x1f, 0x7f] {
                    let mut bytes: Vec<u8> = (0..len).map(|i| filler[i % filler.len()]).collect();
                    if at < len {
                        bytes[at] = control;
                    }
                    assert_eq!(find_control(&bytes), at, "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn oscs_are_reported_with_their_span() {
        let (c, rest) = view(b"x\x1b]0;\xe2\x9c\xb3 Claude\x07y\x1b]133;D;2\x1b\\z");
        assert_eq!(c.oscs[0], ("0;✳ Claude".into(), 1, 16));
        assert_eq!(c.oscs[1], ("133;D;2".into(), 17, 27));
        assert_eq!(rest, "xyz");
    }

    #[test]
    fn private_modes_are_reported() {
        let (c, _) = view(b"\x1b[?2004h\x1b[?1049;25l");
        assert_eq!(c.modes, [(2004, true), (1049, false), (25, false)]);
    }

    #[test]
    fn utf8_split_across_chunks_and_invalid_bytes() {
        let mut v = LineView::default();
        let mut sink = Collect::default();
        let bytes = "héllo ✳".as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            v.feed(std::slice::from_ref(b), i as u64, &mut sink);
        }
        assert_eq!(v.current_text(), "héllo ✳".as_bytes());
        let (_, rest) = view(b"a\xffb\xe2\x9c");
        assert_eq!(
            rest, "a\u{fffd}b\u{fffd}",
            "invalid bytes are kept, not dropped"
        );
    }

    #[test]
    fn an_endless_osc_is_skipped_in_bounded_memory() {
        let mut v = LineView::default();
        let mut sink = Collect::default();
        v.feed(b"a\x1b]0;", 0, &mut sink);
        let junk = vec![b'x'; 64 * 1024];
        for i in 0..64 {
            v.feed(&junk, 6 + i * junk.len() as u64, &mut sink);
        }
        v.feed(b"\x07b\n", 6 + 64 * 64 * 1024, &mut sink);
        assert!(sink.oscs.is_empty());
        assert_eq!(texts(&sink), ["ab"]);
        assert!(v.performer.osc.capacity() <= MAX_OSC_BYTES * 2);
    }

    /// `only_lines` as it was written first, one search per ESC: the reference for the
    /// windowed one.
    fn only_lines_reference(cut: &[u8], bytes: &[u8]) -> Option<usize> {
        let len = cut.len() + bytes.len();
        let at = |i: usize| {
            cut.get(i)
                .or_else(|| bytes.get(i.wrapping_sub(cut.len())))
                .copied()
        };
        let mut from = 0;
        loop {
            let esc = if from < cut.len() {
                cut[from..]
                    .iter()
                    .position(|&b| b == 0x1b)
                    .map(|i| from + i)
            } else {
                None
            };
            let esc = match esc {
                Some(esc) => esc,
                None => {
                    let skip = from.max(cut.len()) - cut.len();
                    match memchr::memchr(0x1b, &bytes[skip.min(bytes.len())..]) {
                        Some(i) => cut.len() + skip + i,
                        None => return Some(0),
                    }
                }
            };
            match at(esc + 1) {
                Some(b'[') => match at(esc + 2) {
                    None => return Some(len - esc),
                    Some(b'?') => return None,
                    Some(_) => {}
                },
                // Strings: OSC, DCS, SOS, PM, APC.
                Some(b']' | b'P' | b'X' | b'^' | b'_') => return None,
                Some(0x20..=0x7e) => {}
                None => return Some(len - esc),
                // A byte `vte` skips or executes before the one that says what the sequence is.
                Some(_) => return None,
            }
            from = esc + 2;
        }
    }

    #[test]
    fn only_lines_agrees_with_a_search_per_escape_on_every_mix_of_escapes() {
        // Bytes that make or break escapes, mixed at random (a fixed seed) and cut anywhere,
        // with each cut an escape carried over could be.
        let alphabet: &[u8] = b"\x1b\x1b\x1b[[[??]PX^_(B7mx1;\n\r\x07\x7f\x93 ";
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // And each sequence at every place around a window's edges.
        for sequence in [
            &b"\x1b[?25l"[..],
            b"\x1b]0;t\x07",
            b"\x1b\x93",
            b"\x1b[1m",
            b"\x1b(B",
        ] {
            for at in 0..3 * WINDOW {
                let mut bytes = vec![b'x'; at];
                bytes.extend_from_slice(sequence);
                for end in at..=bytes.len() {
                    assert_eq!(
                        only_lines(b"", &bytes[..end]),
                        only_lines_reference(b"", &bytes[..end]),
                        "{:?} at {at}, cut at {end}",
                        String::from_utf8_lossy(sequence)
                    );
                }
            }
        }
        for _ in 0..20_000 {
            let len = (next() % 200) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            for cut in [&b""[..], b"\x1b", b"\x1b["] {
                assert_eq!(
                    only_lines(cut, &bytes),
                    only_lines_reference(cut, &bytes),
                    "{cut:?} then {:?}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }

    #[test]
    fn only_lines_takes_text_and_plain_escapes_and_nothing_that_could_say_more() {
        assert_eq!(
            only_lines(
                b"",
                b"plain\r\n\x1b[1;31mred\x1b[0m\x1b(B\x1b[2K\x1b[5Gx\x1b[>4;1m\x1b7\n"
            ),
            Some(0)
        );
        assert_eq!(only_lines(b"", b""), Some(0));
        for not in [
            &b"a\x1b]0;title\x07"[..],
            b"a\x1b]133;C\x1b\\",
            b"a\x1b[?2004h",
            b"\x1bPq#0\x1b\\",
            b"\x1b_apc\x1b\\",
            b"\x1b\x93]0;t\x07",
            b"\x1b\x1b]0;t\x07",
        ] {
            assert_eq!(
                only_lines(b"", not),
                None,
                "{:?}",
                String::from_utf8_lossy(not)
            );
        }
        // An escape cut by the end of the bytes is told by the next ones, however they come.
        assert_eq!(only_lines(b"", b"x\x1b"), Some(1));
        assert_eq!(only_lines(b"", b"x\x1b["), Some(2));
        assert_eq!(only_lines(b"\x1b", b"[?2004h"), None);
        assert_eq!(only_lines(b"\x1b[", b"?2004h"), None);
        assert_eq!(only_lines(b"\x1b", b"]0;t\x07"), None);
        assert_eq!(only_lines(b"\x1b", b"["), Some(2));
        assert_eq!(only_lines(b"\x1b", b""), Some(1));
        assert_eq!(only_lines(b"\x1b", b"[1mx\x1b"), Some(1));
        assert_eq!(only_lines(b"\x1b[", b"1mx\x1b[?25l"), None);
        assert_eq!(only_lines(b"\x1b[", b"1mx\x1b[0m"), Some(0));
    }

    #[test]
    fn a_view_restarted_at_a_line_start_reads_on_as_one_that_saw_everything() {
        let stream = b"\x1b]0;t\x07one\r\ntwo\x1b[1mbold\x1b[0m\r\nthree\x1b[?2004h\r\n$ ";
        let (whole, rest) = view(stream);
        let mut v = LineView::default();
        v.feed(b"\x1b]0;partial", 0, &mut Collect::default());
        assert!(!v.at_ground());
        // Just after the first line's `\n`.
        let from = 11;
        v.restart_at(from);
        assert!(v.at_ground());
        let mut sink = Collect::default();
        v.feed(&stream[from as usize..], from, &mut sink);
        assert_eq!(texts(&whole)[..2], ["one", ""]);
        assert_eq!(sink.lines, whole.lines[2..]);
        assert_eq!(sink.modes, whole.modes);
        assert_eq!(String::from_utf8_lossy(v.current_text()), rest);
    }

    #[test]
    fn an_endless_line_keeps_its_tail() {
        let mut v = LineView::default();
        let mut sink = Collect::default();
        let junk = vec![b'x'; 100 * 1024];
        v.feed(&junk, 0, &mut sink);
        v.feed(b"$ ", junk.len() as u64, &mut sink);
        assert!(v.current_text().len() <= MAX_LINE_BYTES);
        assert!(v.current_text().ends_with(b"x$ "));
    }
}
