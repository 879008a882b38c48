//! This crate's error type.

use std::path::PathBuf;

/// What can go wrong loading the configuration.
///
/// Every variant names the layer (the file's path) it comes from, and every variant about a
/// setting names its key in dotted form (`broker.ring_depth`, `session.presets.python3`), so the
/// message alone says what to fix and where. The binaries exit with code 4 on any of them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file named by `--config` does not exist (implicit layers that do not exist are skipped).
    #[error("configuration file {} (given with --config) does not exist", path.display())]
    MissingExplicit {
        /// The path as given (joined to the working directory when relative).
        path: PathBuf,
    },
    /// A layer exists but could not be read (permissions, a directory, not UTF-8, …).
    #[error("cannot read configuration file {}: {source}", layer.display())]
    Read {
        /// The layer's path.
        layer: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// A layer is not valid TOML.
    #[error("{}: invalid TOML: {message}", layer.display())]
    Parse {
        /// The layer's path.
        layer: PathBuf,
        /// The parser's explanation, with line and column.
        message: String,
    },
    /// A key clippy does not know: most likely a typo, never silently ignored.
    #[error("{}: unknown key `{key}` (expected one of: {})", layer.display(), known.join(", "))]
    UnknownKey {
        /// The layer's path.
        layer: PathBuf,
        /// The unknown key, dotted (`broker.ring_dept`).
        key: String,
        /// The keys allowed where it was found.
        known: Vec<&'static str>,
    },
    /// A value of the wrong TOML type (`ring_depth = "32"`).
    #[error("{}: `{key}` must be {expected}, found {found}", layer.display())]
    WrongType {
        /// The layer's path.
        layer: PathBuf,
        /// The key, dotted.
        key: String,
        /// What the key takes (`an integer`, `a table`, …).
        expected: &'static str,
        /// The TOML type found (`string`, `float`, …).
        found: &'static str,
    },
    /// A value of the right type but out of range, or not one of the allowed choices.
    #[error("{}: `{key}` {problem}", layer.display())]
    InvalidValue {
        /// The layer's path.
        layer: PathBuf,
        /// The key, dotted.
        key: String,
        /// What is wrong, e.g. `must be at least 1, found 0`.
        problem: String,
    },
    /// A string refers to `${VAR}` and `VAR` is not set in the environment.
    #[error(
        "{}: `{key}` refers to ${{{var}}}, but the environment variable {var} is not set \
         (write $${{ for a literal ${{)",
        layer.display()
    )]
    UnresolvedVariable {
        /// The variable's name.
        var: String,
        /// The layer's path.
        layer: PathBuf,
        /// The key whose value refers to it, dotted.
        key: String,
    },
    /// A string holds a malformed placeholder: `${` without `}`, or `${…}` that is not a name.
    #[error("{}: `{key}` has a malformed placeholder: {problem}", layer.display())]
    BadPlaceholder {
        /// The layer's path.
        layer: PathBuf,
        /// The key, dotted.
        key: String,
        /// What is wrong with it.
        problem: String,
    },
}
