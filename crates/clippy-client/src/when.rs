//! The TIME of `history --since/--until` and `search --since/--until`, as Unix milliseconds (the
//! protocol's timestamps): a time ago (`90s`, `15m`, `2h`, `3d`, `1w`, `1h30m`), an ISO-8601 date
//! or date-time (UTC unless it gives an offset), or Unix milliseconds. No date crate: the
//! calendar arithmetic is Howard Hinnant's `days_from_civil`, the inverse of what
//! `clippy_proto::iso8601_utc` uses to print.

use crate::ArgumentError;

/// The accepted forms, for the error message (and `--help`).
pub const FORMS: &str = "a time ago (90s, 15m, 2h, 3d, 1w, or combined: 1h30m), an ISO-8601 \
    date or date-time, UTC unless it gives an offset (2026-11-26, 2026-11-26T10:00, \
    2026-11-26T10:00:00Z, 2026-11-26T10:00:00+01:00), or Unix milliseconds (1795687200000)";

const SECOND: u64 = 1000;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
const WEEK: u64 = 7 * DAY;

/// `text` as Unix milliseconds, a time ago counted back from `now` (Unix milliseconds). A time
/// ago further back than 1970 is 1970.
///
/// ```
/// use clippy_client::when;
///
/// let now = 1_795_687_200_000; // 2026-11-26T10:00:00Z
/// assert_eq!(when::parse("1h30m", now), Ok(now - 90 * 60 * 1000));
/// assert_eq!(when::parse("2026-11-26T10:00Z", now), Ok(now));
/// assert!(when::parse("yesterday", now).is_err());
/// ```
///
/// # Errors
///
/// [`ArgumentError::NotATime`]: none of the forms in [`FORMS`], saying why where it can.
pub fn parse(text: &str, now: u64) -> Result<u64, ArgumentError> {
    let bad = |why: &str| {
        Err(ArgumentError::NotATime {
            text: text.to_owned(),
            why: (!why.is_empty()).then(|| why.to_owned()),
        })
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return bad("it is empty");
    }
    if trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return match trimmed.parse::<u64>() {
            Ok(ms) => Ok(ms),
            Err(_) => bad("too large"),
        };
    }
    let first = trimmed.as_bytes()[0];
    // A date starts with its four-digit year and a dash; a time ago with a number and a unit.
    if trimmed.len() >= 5 && trimmed.as_bytes()[4] == b'-' {
        return match iso(trimmed) {
            Ok(ms) => Ok(ms),
            Err(why) => bad(&why),
        };
    }
    if first.is_ascii_digit() {
        return match ago(trimmed) {
            Ok(span) => Ok(now.saturating_sub(span)),
            Err(why) => bad(&why),
        };
    }
    bad("")
}

/// `1h30m`: a sum of numbers with units (s, m, h, d, w), in milliseconds.
fn ago(text: &str) -> Result<u64, String> {
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!("a number is missing before {rest:?}"));
        }
        let (number, after) = rest.split_at(digits);
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at(unit_len);
        let per = match unit {
            "s" => SECOND,
            "m" => MINUTE,
            "h" => HOUR,
            "d" => DAY,
            "w" => WEEK,
            "" => return Err(format!("{number} needs a unit: s, m, h, d or w")),
            other => return Err(format!("unknown unit {other:?}: use s, m, h, d or w")),
        };
        let span = number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(per))
            .and_then(|span| total.checked_add(span));
        total = span.ok_or_else(|| "too long ago".to_owned())?;
        rest = after;
    }
    Ok(total)
}

/// `YYYY-MM-DD[(T| )HH:MM[:SS[.fff…]][Z|±HH[:MM]]]`, in milliseconds since 1970 UTC.
fn iso(text: &str) -> Result<u64, String> {
    let mut p = Cursor { text, at: 0 };
    let year = p.number(4, "the year")?;
    p.expect(b'-', "a '-' after the year")?;
    let month = p.number(2, "the month")?;
    p.expect(b'-', "a '-' after the month")?;
    let day = p.number(2, "the day")?;
    if !(1..=12).contains(&month) {
        return Err(format!("there is no month {month}"));
    }
    if day == 0 || day > days_in_month(year, month) {
        return Err(format!("there is no day {day} in {year:04}-{month:02}"));
    }
    let mut ms_of_day: i64 = 0;
    let mut offset_ms: i64 = 0;
    if !p.done() {
        if !matches!(p.peek(), Some(b'T' | b't' | b' ')) {
            return Err("a 'T' must come between the date and the time".into());
        }
        p.at += 1;
        let hour = p.number(2, "the hour")?;
        p.expect(b':', "a ':' after the hour")?;
        let minute = p.number(2, "the minutes")?;
        let mut second = 0;
        let mut millis = 0;
        if p.peek() == Some(b':') {
            p.at += 1;
            second = p.number(2, "the seconds")?;
            if matches!(p.peek(), Some(b'.' | b',')) {
                p.at += 1;
                let digits = p.rest().bytes().take_while(u8::is_ascii_digit).count();
                if digits == 0 {
                    return Err("digits must follow the decimal point".into());
                }
                // Milliseconds: the first three digits, the rest cut off.
                let fraction = &p.rest()[..digits];
                let padded = format!("{:0<3}", &fraction[..digits.min(3)]);
                millis = padded.parse::<i64>().unwrap_or(0);
                p.at += digits;
            }
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(format!(
                "there is no time {hour:02}:{minute:02}:{second:02}"
            ));
        }
        ms_of_day = ((hour * 60 + minute) * 60 + second) * 1000 + millis;
        match p.peek() {
            None => {}
            Some(b'Z' | b'z') => p.at += 1,
            Some(sign @ (b'+' | b'-')) => {
                p.at += 1;
                let hours = p.number(2, "the offset's hours")?;
                let minutes = match p.peek() {
                    Some(b':') => {
                        p.at += 1;
                        p.number(2, "the offset's minutes")?
                    }
                    Some(_) => p.number(2, "the offset's minutes")?,
                    None => 0,
                };
                if hours > 23 || minutes > 59 {
                    return Err("the offset is out of range".into());
                }
                let magnitude = (hours * 60 + minutes) * 60_000;
                offset_ms = if sign == b'+' { magnitude } else { -magnitude };
            }
            Some(_) => return Err(format!("unexpected {:?} after the time", p.rest())),
        }
        if !p.done() {
            return Err(format!("unexpected {:?} at the end", p.rest()));
        }
    }
    let days = days_from_civil(year, month, day);
    let ms = days * 86_400_000 + ms_of_day - offset_ms;
    u64::try_from(ms).map_err(|_| "it is before 1970".to_owned())
}

/// A position in the text of a date-time.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn done(&self) -> bool {
        self.at == self.text.len()
    }

    /// Exactly `len` digits.
    fn number(&mut self, len: usize, what: &str) -> Result<i64, String> {
        let text = self.text;
        match text.as_bytes().get(self.at..self.at + len) {
            Some(digits) if digits.iter().all(u8::is_ascii_digit) => {
                self.at += len;
                Ok(digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
            }
            _ => Err(format!("{what} must be {len} digits")),
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), String> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("{what} is missing"))
        }
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian `year`-`month`-`day` (negative before it).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use clippy_proto::iso8601_utc;

    use super::*;

    /// 2026-11-26T10:00:00.000Z.
    const NOW: u64 = 1_795_687_200_000;

    fn at(text: &str) -> u64 {
        parse(text, NOW).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn the_reference_instant_is_what_it_says() {
        assert_eq!(iso8601_utc(NOW), "2026-11-26T10:00:00.000Z");
    }

    #[test]
    fn times_ago_count_back_from_now() {
        assert_eq!(at("90s"), NOW - 90_000);
        assert_eq!(at("15m"), NOW - 15 * 60_000);
        assert_eq!(at("2h"), NOW - 2 * 3_600_000);
        assert_eq!(at("3d"), NOW - 3 * 86_400_000);
        assert_eq!(at("1w"), NOW - 7 * 86_400_000);
        assert_eq!(at("1h30m"), NOW - 90 * 60_000);
        assert_eq!(at("0s"), NOW);
        assert_eq!(at(" 2h "), NOW - 2 * 3_600_000);
        // Further back than 1970 is 1970.
        assert_eq!(at("100000w"), 0);
    }

    #[test]
    fn digits_alone_are_unix_milliseconds() {
        assert_eq!(at("0"), 0);
        assert_eq!(at("1795687200000"), 1_795_687_200_000);
        assert!(parse("99999999999999999999999", NOW).is_err());
    }

    #[test]
    fn dates_and_date_times_are_utc() {
        assert_eq!(at("2026-11-26"), NOW - 10 * 3_600_000);
        assert_eq!(at("2026-11-26T10:00"), NOW);
        assert_eq!(at("2026-11-26T10:00:00Z"), NOW);
        assert_eq!(at("2026-11-26 10:00:00"), NOW);
        assert_eq!(at("2026-11-26t10:00:00z"), NOW);
        assert_eq!(at("2026-11-26T10:00:01.5Z"), NOW + 1500);
        assert_eq!(at("2026-11-26T10:00:01.123456789"), NOW + 1123);
        assert_eq!(at("1970-01-01"), 0);
        assert_eq!(at("2000-02-29T00:00:00Z"), 951_782_400_000);
    }

    #[test]
    fn offsets_move_the_instant_to_utc() {
        assert_eq!(at("2026-11-26T11:00:00+01:00"), NOW);
        assert_eq!(at("2026-11-26T11:00+0100"), NOW);
        assert_eq!(at("2026-11-26T11:00+01"), NOW);
        assert_eq!(at("2026-11-26T04:30:00-05:30"), NOW);
        // Across midnight and into the previous day.
        assert_eq!(at("2026-11-27T01:00+15:00"), NOW);
    }

    #[test]
    fn what_iso8601_utc_prints_reads_back() {
        let mut ms = 0u64;
        while ms < 5_000_000_000_000 {
            assert_eq!(at(&iso8601_utc(ms)), ms, "{}", iso8601_utc(ms));
            ms += 86_399_999 * 37 + 12_345;
        }
        for ms in [951_782_400_000, 1_709_251_199_999, 4_102_444_800_000] {
            assert_eq!(at(&iso8601_utc(ms)), ms);
        }
    }

    #[test]
    fn bad_times_are_refused_naming_the_forms() {
        for text in [
            "",
            "  ",
            "yesterday",
            "2h ago",
            "5x",
            "15M",
            "h",
            "1h30",
            "-5m",
            "2026-13-01",
            "2026-02-29",
            "2026-04-31",
            "2026-00-10",
            "2026-11-26T24:00",
            "2026-11-26T10:60",
            "2026-11-26T10:00:60",
            "2026-11-26T10",
            "2026-11-26T10:00:00.",
            "2026-11-26T10:00:00+25:00",
            "2026-11-26T10:00:00Zjunk",
            "2026-11-26X10:00",
            "26-11-26",
            "2026-1-5",
            "1969-12-31",
            "1970-01-01T00:30+01:00",
            "99999999999999999999w",
            "2026-11-26\u{1b}[31m",
        ] {
            let err = parse(text, NOW).expect_err(text).to_string();
            assert!(err.contains("90s, 15m, 2h"), "{text}: {err}");
            assert!(err.contains("2026-11-26T10:00:00Z"), "{text}: {err}");
            assert!(err.contains("Unix milliseconds"), "{text}: {err}");
        }
        // "5" alone is 5 ms after 1970, not five of something: digits are milliseconds.
        assert_eq!(parse("5", NOW), Ok(5));
    }

    #[test]
    fn reasons_are_specific() {
        let err = parse("2026-02-30", NOW).unwrap_err().to_string();
        assert!(err.contains("no day 30 in 2026-02"), "{err}");
        let err = parse("3y", NOW).unwrap_err().to_string();
        assert!(err.contains("unknown unit \"y\""), "{err}");
        let err = parse("1969-07-20", NOW).unwrap_err().to_string();
        assert!(err.contains("before 1970"), "{err}");
    }
}
