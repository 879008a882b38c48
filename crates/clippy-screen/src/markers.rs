//! Finds the few sequences the screen acts on besides emulating them, across any chunking.

/// A sequence the screen acts on once it has been emulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    /// `ESC [ 3 J`: the program cleared the terminal's history (it is about to reprint it).
    ClearHistory,
    /// Synchronized output begins (`ESC [ ? 2026 h`): a full-screen TUI starts drawing a frame.
    SyncBegin,
    /// Synchronized output ends (`ESC [ ? 2026 l`): a full-screen TUI's frame is complete.
    SyncEnd,
    /// The cursor goes home (`ESC [ H`, `ESC [ 1 ; 1 H`): a TUI without synchronized output
    /// starts its next frame.
    Home,
    /// `ESC [ 2 K`: the program erases the cursor's row (redrawing its live area in place).
    EraseLine,
}

const PATTERNS: [(&[u8], Marker); 6] = [
    (b"\x1b[3J", Marker::ClearHistory),
    (b"\x1b[?2026h", Marker::SyncBegin),
    (b"\x1b[?2026l", Marker::SyncEnd),
    (b"\x1b[H", Marker::Home),
    (b"\x1b[1;1H", Marker::Home),
    (b"\x1b[2K", Marker::EraseLine),
];

/// How much of each pattern the bytes so far end with.
#[derive(Debug, Default)]
pub(crate) struct MarkerScan {
    matched: [usize; PATTERNS.len()],
}

impl MarkerScan {
    /// Scans `bytes` up to the end of the first marker they complete: returns how many bytes
    /// that is (all of them when none completes) and the marker.
    pub(crate) fn next(&mut self, bytes: &[u8]) -> (usize, Option<Marker>) {
        let mut at = 0;
        while at < bytes.len() {
            if self.matched.iter().all(|&m| m == 0) {
                // Nothing under way: jump to the next ESC.
                match bytes[at..].iter().position(|&b| b == 0x1b) {
                    Some(skip) => at += skip,
                    None => return (bytes.len(), None),
                }
            }
            let byte = bytes[at];
            at += 1;
            let mut found = None;
            for (matched, (pattern, marker)) in self.matched.iter_mut().zip(PATTERNS) {
                *matched = if pattern[*matched] == byte {
                    *matched + 1
                } else {
                    usize::from(byte == 0x1b)
                };
                if *matched == pattern.len() {
                    *matched = 0;
                    found = Some(marker);
                }
            }
            if found.is_some() {
                self.matched = [0; PATTERNS.len()];
                return (at, found);
            }
        }
        (bytes.len(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn markers(chunks: &[&[u8]]) -> Vec<(usize, Marker)> {
        let mut scan = MarkerScan::default();
        let mut found = Vec::new();
        let mut offset = 0;
        for chunk in chunks {
            let mut rest = *chunk;
            while !rest.is_empty() {
                let (cut, marker) = scan.next(rest);
                offset += cut;
                if let Some(marker) = marker {
                    found.push((offset, marker));
                }
                rest = &rest[cut..];
            }
        }
        found
    }

    #[test]
    fn markers_are_found_however_the_bytes_are_cut() {
        let stream = b"ab\x1b[2J\x1b[3J\x1b[H\x1b[?2026hxy\x1b[?2026lz\x1b\x1b[1;1H";
        let whole = markers(&[stream]);
        assert_eq!(
            whole,
            [
                (10, Marker::ClearHistory),
                (13, Marker::Home),
                (21, Marker::SyncBegin),
                (31, Marker::SyncEnd),
                (39, Marker::Home)
            ]
        );
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(markers(&[a, b]), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(markers(&bytes), whole);
    }

    #[test]
    fn near_misses_are_not_markers() {
        assert!(markers(&[b"\x1b[13J\x1b[2H\x1b[?2025h\x1b[?2026[3J"]).is_empty());
    }
}
