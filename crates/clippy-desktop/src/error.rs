//! What can go wrong on the desktop side.

/// A binding that cannot be used, with the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the key binding {binding:?} {problem}")]
pub struct BindingError {
    /// The binding as written.
    pub binding: String,
    /// What is wrong with it.
    pub problem: String,
}

/// Why the focused session could not be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FocusError {
    /// No registered session runs under the focused process.
    #[error("no clippy session runs in the focused window (process {pid})")]
    NoSession {
        /// The focused process.
        pid: u32,
    },
    /// Several sessions run under the focused process and nothing tells them apart.
    #[error(
        "the focused window (process {pid}) holds several clippy sessions: {}; name one instead",
        candidates.join(", ")
    )]
    Ambiguous {
        /// The focused process.
        pid: u32,
        /// The candidates, `id` or `id (name)`.
        candidates: Vec<String>,
    },
    /// Nothing has the focus, or the focused window tells no process.
    #[error("{0}")]
    NoFocus(String),
}

/// A failure of a desktop adapter.
#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    /// A binding is invalid.
    #[error(transparent)]
    Binding(#[from] BindingError),
    /// The focused session could not be resolved.
    #[error(transparent)]
    Focus(#[from] FocusError),
    /// Another X client holds a grab on this key combination.
    #[error("{binding} is already grabbed by another program")]
    GrabConflict {
        /// The binding, as written by [`crate::Binding`]'s `Display`.
        binding: String,
    },
    /// The key of a binding is on no key of this keyboard.
    #[error("{binding}: no key of this keyboard produces {key}")]
    NoKeycode {
        /// The binding.
        binding: String,
        /// The key name.
        key: String,
    },
    /// The environment has no such desktop (no `$DISPLAY`, no `$TMUX`, no tmux server).
    #[error("{0}")]
    Unavailable(String),
    /// Talking to the X server failed.
    #[error("X11: {0}")]
    X11(String),
    /// Running tmux failed.
    #[error("tmux: {0}")]
    Tmux(String),
    /// The clipboard refused.
    #[error("clipboard: {0}")]
    Clipboard(String),
    /// Local I/O failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

impl DesktopError {
    /// An [`DesktopError::Io`] maker for `map_err`.
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> DesktopError {
        let context = context.into();
        move |source| DesktopError::Io { context, source }
    }
}
