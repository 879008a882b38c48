//! The one error type of this crate.

/// Why a detector configuration was refused.
///
/// Every variant is raised at configuration time, never while bytes are fed: once a
/// [`TurnDetector`](crate::TurnDetector) exists, feeding it cannot fail.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The pattern is not a valid regular expression (Rust `regex` syntax).
    #[error("invalid {what} pattern {pattern:?}: {source}")]
    InvalidPattern {
        /// Which signal the pattern was for (`prompt`, `busy`, `osc idle`, …).
        what: &'static str,
        /// The pattern as given.
        pattern: String,
        /// The regex compiler's explanation.
        #[source]
        source: Box<regex::Error>,
    },
    /// The pattern could match across a line break; prompts are matched one line at a time.
    #[error(
        "{what} pattern {pattern:?} can match a line break, but patterns are matched one line at a time; \
         remove the literal newline (use `$` to anchor at the end of the line)"
    )]
    MultiLinePattern {
        /// Which signal the pattern was for.
        what: &'static str,
        /// The pattern as given.
        pattern: String,
    },
    /// The pattern matches an empty line, so every blank line would count as a prompt.
    #[error(
        "{what} pattern {pattern:?} matches an empty line, so every blank line would be a prompt"
    )]
    MatchesEmptyLine {
        /// Which signal the pattern was for.
        what: &'static str,
        /// The pattern as given.
        pattern: String,
    },
    /// No preset has this name.
    #[error("unknown preset {name:?}; known presets: {known}")]
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// The names that exist, comma separated.
        known: String,
    },
    /// A screen size with zero columns or rows.
    #[error("invalid screen size {cols}x{rows}: both must be at least 1")]
    InvalidSize {
        /// Columns asked for.
        cols: u16,
        /// Rows asked for.
        rows: u16,
    },
}
