//! How important a log line is: the state machine says it with each [`Action::Log`](crate::Action::Log).

use std::fmt;
use std::str::FromStr;

/// How important a log line is; a logger writes the lines at or above its level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Something failed that the broker cannot work around.
    Error,
    /// A peer misbehaved or was refused; the broker carries on.
    Warn,
    /// Lifecycle: start, stop, sessions registered and gone.
    Info,
    /// Every connection and request.
    Debug,
}

impl Level {
    /// The name as written in log lines: `ERROR`, `WARN`, `INFO`, `DEBUG`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Level {
    type Err = String;

    /// `error`, `warn`, `info` or `debug`, in any ASCII case.
    fn from_str(s: &str) -> Result<Level, String> {
        [Level::Error, Level::Warn, Level::Info, Level::Debug]
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown log level {s:?}: expected error, warn, info or debug"))
    }
}
