//! Session IDs: opaque, unique on the host, never reused, short enough to type.
//!
//! An ID is the number of milliseconds since 2025-01-01 in base 36 (8 characters until the
//! 2080s), so IDs only grow with time and are never reused; two sessions started in the same
//! millisecond are told apart because the session folder is created exclusively — the loser
//! takes the next millisecond's ID (`bump`). The wrapper reads the clock.

/// Unix time of 2025-01-01T00:00:00Z, in milliseconds.
const EPOCH_MS: u64 = 1_735_689_600_000;

/// The ID for Unix time `unix_ms` (milliseconds), plus `bump` milliseconds (to step past a
/// taken ID).
///
/// ```
/// assert_eq!(clippy_wrapper::session_id::at(1_735_689_600_000 + 36, 0), "10");
/// ```
pub fn at(unix_ms: u64, bump: u64) -> String {
    encode(unix_ms.saturating_sub(EPOCH_MS).saturating_add(bump))
}

fn encode(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_and_grow() {
        assert_eq!(encode(0), "0");
        assert_eq!(encode(35), "z");
        assert_eq!(encode(36), "10");
        // 2026-11-28, and the next millisecond.
        let now = 1_795_830_000_000;
        let a = at(now, 0);
        let b = at(now, 1);
        assert!(a.len() <= 8, "{a}");
        assert!((a.len(), &a) < (b.len(), &b), "{a} < {b}");
        assert_eq!(at(now + 1, 0), b);
        // Until the 2080s.
        assert_eq!(at(EPOCH_MS + 36u64.pow(8) - 1, 0).len(), 8);
        assert_eq!(
            at(0, 0),
            "0",
            "a clock before 2025 gives the first ID, never a panic"
        );
    }
}
