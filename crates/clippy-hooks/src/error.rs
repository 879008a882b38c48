//! This crate's error type.

/// What can go wrong reading a hook's report or an agent's settings.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HooksError {
    /// The agent name is not one clippy wires hooks for.
    #[error("unknown agent {0:?}: clippy wires hooks for claude, codex and gemini")]
    UnknownAgent(String),
    /// A hook's payload is not the JSON object the agent documents.
    #[error("{agent} hook payload is not a JSON object: {reason}")]
    Payload {
        /// The agent whose hook sent it.
        agent: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A report on the hook socket does not start with the `clippy-hook 1 AGENT` line.
    #[error("not a clippy hook report: {0}")]
    Frame(String),
    /// A report is larger than [`MAX_REPORT_BYTES`](crate::MAX_REPORT_BYTES).
    #[error("hook report of more than {max} bytes refused", max = crate::MAX_REPORT_BYTES)]
    TooLarge,
    /// An agent's settings file cannot be read as what it should be.
    #[error("{path}: {reason}")]
    Settings {
        /// The file.
        path: String,
        /// What is wrong with it, and what to do.
        reason: String,
    },
}
