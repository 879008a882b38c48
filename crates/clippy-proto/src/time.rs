//! Unix milliseconds — the protocol's timestamps — as ISO-8601 UTC (`2024-05-01T12:34:56.789Z`),
//! without a date crate, and the wall clock read as one.

use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock now, as Unix milliseconds (0 for a clock set before 1970): what every
/// program of the workspace stamps turns, events and records with.
///
/// ```
/// assert!(clippy_proto::unix_ms_now() > 1_700_000_000_000);
/// ```
pub fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Formats `ms` since the Unix epoch as ISO-8601 UTC with milliseconds.
///
/// ```
/// assert_eq!(clippy_proto::iso8601_utc(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
/// ```
pub fn iso8601_utc(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day); Howard Hinnant's
/// `civil_from_days`, for non-negative day counts.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601_utc(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso8601_utc(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(iso8601_utc(4_102_444_800_000), "2100-01-01T00:00:00.000Z");
    }
}
