//! Session IDs: opaque, unique on the host, never reused, short enough to type.
//!
//! An ID is the number of milliseconds since 2025-01-01 in base 36 (8 characters until the
//! 2080s), so IDs only grow with time and are never reused; two sessions started in the same
//! millisecond are told apart because the session folder is created exclusively — the loser
//! takes the next millisecond's ID.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time of 2025-01-01T00:00:00Z, in milliseconds.
const EPOCH_MS: u128 = 1_735_689_600_000;

/// The ID for the current time, plus `bump` milliseconds (to step past a taken ID).
pub fn generate(bump: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    encode(now.saturating_sub(EPOCH_MS) as u64 + bump)
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
        let a = generate(0);
        let b = generate(1);
        assert!(a.len() <= 8, "{a}");
        assert!((a.len(), &a) < (b.len(), &b), "{a} < {b}");
    }
}
