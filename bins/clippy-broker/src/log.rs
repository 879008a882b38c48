//! Log lines: `<UTC timestamp> <LEVEL> <message>`, to stderr or to a file.
//!
//! The broker is a small daemon with one thread that logs, so this is a few lines rather than a
//! logging framework: a level filter and a target.

use std::fs::File;
use std::io::Write;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

pub use clippy_broker_core::Level;

/// Where log lines go.
#[derive(Debug, Clone)]
enum Target {
    Stderr,
    File(Arc<File>),
}

/// Writes log lines at or above a level. Write errors are ignored: a full disk must not stop
/// the broker. Clones write to the same place.
#[derive(Debug, Clone)]
pub struct Logger {
    level: Level,
    target: Target,
}

impl Logger {
    /// Logs to stderr.
    #[must_use]
    pub fn stderr(level: Level) -> Logger {
        Logger {
            level,
            target: Target::Stderr,
        }
    }

    /// Logs to an open file (appended to).
    #[must_use]
    pub fn file(level: Level, file: File) -> Logger {
        Logger {
            level,
            target: Target::File(Arc::new(file)),
        }
    }

    /// Whether lines at `level` are written.
    #[must_use]
    pub fn enabled(&self, level: Level) -> bool {
        level <= self.level
    }

    /// Writes one line, if `level` is enabled.
    pub fn log(&self, level: Level, message: &str) {
        if !self.enabled(level) {
            return;
        }
        let line = format!("{} {level} {message}\n", utc_timestamp(SystemTime::now()));
        // One write per line, so lines from concurrent writers of the file do not interleave.
        let _ = match &self.target {
            Target::Stderr => std::io::stderr().lock().write_all(line.as_bytes()),
            Target::File(file) => (&**file).write_all(line.as_bytes()),
        };
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for `time` (UTC).
#[must_use]
pub fn utc_timestamp(time: SystemTime) -> String {
    let ms = time
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    clippy_proto::iso8601_utc(u64::try_from(ms).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timestamps_are_utc_iso8601_with_millis() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_789);
        assert_eq!(utc_timestamp(t), "2024-02-29T12:34:56.789Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(utc_timestamp(t), "2000-02-29T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_secs(4_102_444_799);
        assert_eq!(utc_timestamp(t), "2099-12-31T23:59:59.000Z");
    }

    #[test]
    fn levels_parse_and_filter() {
        assert_eq!("WARN".parse::<Level>(), Ok(Level::Warn));
        assert_eq!("debug".parse::<Level>(), Ok(Level::Debug));
        assert!("verbose".parse::<Level>().is_err());
        let logger = Logger::stderr(Level::Info);
        assert!(logger.enabled(Level::Error) && logger.enabled(Level::Info));
        assert!(!logger.enabled(Level::Debug));
    }
}
