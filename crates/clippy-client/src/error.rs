//! The one error type of the client layer: what went wrong, sorted by what a user can do about
//! it, with the broker's own reason when it refused.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clippy_proto::{ErrorReason, ProtoError};

/// How to get a broker running, for a user told none answers.
pub const START_HINT: &str =
    "start one with `clippy-broker --foreground`, or run a `clippy-session` (it starts one)";

/// A failure of an operation on the broker.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No socket was named and `XDG_RUNTIME_DIR` is not set to an absolute path, so there is
    /// no broker socket to find.
    #[error(
        "XDG_RUNTIME_DIR is not set (or not absolute), so there is no broker socket to find (or pass --socket)"
    )]
    NoRuntimeDir,
    /// Nothing answers at the socket: missing, refused, no broker could be started, or the
    /// connection broke.
    #[error("the broker is not reachable at {}: {detail}", socket.display())]
    Unreachable {
        /// The socket tried.
        socket: PathBuf,
        /// What the system (or the attempt to start a broker) said.
        detail: String,
    },
    /// The broker accepted the connection but did not answer in time.
    #[error("the broker at {} did not answer within {timeout_ms} ms", socket.display())]
    NoAnswer {
        /// The socket tried.
        socket: PathBuf,
        /// The time allowed that ran out.
        timeout_ms: u64,
    },
    /// The broker refused the request: its reason (`session_not_found`, `busy`, `timeout`, …,
    /// CONTRACTS/BROKER.md) and its sentence, which names what it could not find or do.
    #[error("{reason}: {message}")]
    Broker {
        /// The wire reason.
        reason: ErrorReason,
        /// The broker's explanation.
        message: String,
        /// For a wait that timed out: where to wait on from (the spool's size then).
        resume_cursor: Option<u64>,
    },
    /// The broker's reply could not be understood: malformed, or not a reply to this request.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// An argument is refused before anything is asked of the broker.
    #[error(transparent)]
    Argument(#[from] ArgumentError),
    /// An event follower read too slowly: the broker dropped it after a `subscriber.lagged`
    /// event.
    #[error(
        "the broker dropped this follower for not reading its events fast enough (subscriber.lagged); follow again, from the last event id seen, to catch up"
    )]
    Lagged,
    /// A session could not be started ([`crate::spawn`]).
    #[error("{0}")]
    Spawn(String),
    /// Local I/O failed (running a program, a thread).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

/// An argument refused before anything is asked of the broker: the checks every front end
/// shares, written once. Each front end may word them for its own arguments (a flag, a field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    /// `exec` runs one command line: not empty, no line break.
    #[error("exec runs one non-empty command line; type anything else with send")]
    NotOneLine,
    /// Text to type that is empty, with no Enter after it.
    #[error("nothing to send: the text is empty and no Enter follows")]
    NothingToSend,
    /// A history search without words.
    #[error("search needs words to find (the query is empty)")]
    EmptyQuery,
    /// A time range whose start is not before its end: no turn could match.
    #[error(
        "since ({}) is not before until ({}): no turn could match",
        clippy_proto::iso8601_utc(*since),
        clippy_proto::iso8601_utc(*until)
    )]
    EmptyRange {
        /// The start, Unix milliseconds.
        since: u64,
        /// The end, Unix milliseconds.
        until: u64,
    },
    /// A TIME that is none of [`crate::when::FORMS`].
    #[error(
        "{text:?} is not a TIME{}: give {}",
        .why.as_ref().map(|why| format!(" ({why})")).unwrap_or_default(),
        crate::when::FORMS
    )]
    NotATime {
        /// What was given.
        text: String,
        /// Why it is not one, where that can be said (`it is empty`, `too large`).
        why: Option<String>,
    },
    /// A session to start without a command.
    #[error("no command given: a session runs a command")]
    NoCommand,
    /// A session's working directory that is not a directory.
    #[error("{}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// `clippy-session` refused the arguments of a session to start (its exit code 4): what it
    /// said.
    #[error("{0}")]
    SessionRefused(String),
    /// A terminal size with no columns or no rows.
    #[error("a terminal size is at least 1 column by 1 row, not {cols}x{rows}")]
    BadSize {
        /// The columns given.
        cols: u16,
        /// The rows given.
        rows: u16,
    },
    /// A command line of a session to start that cannot be split into words (an unclosed quote).
    #[error(
        "cannot split the command line {0:?} into words (an unclosed quote?): give the words as a list"
    )]
    BadCommandLine(String),
    /// A variable for a session's environment with an empty name, `=` or NUL in its name, or
    /// NUL in its value.
    #[error("{0:?} is not a variable name (not empty; no '=' and no NUL)")]
    BadVariable(String),
}

impl ClientError {
    /// Whether no broker answers (no runtime folder, nothing at the socket, no reply in time):
    /// the user has to start one ([`START_HINT`]) or name another socket.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            Self::NoRuntimeDir | Self::Unreachable { .. } | Self::NoAnswer { .. }
        )
    }

    /// The broker's reason, when it refused.
    pub fn reason(&self) -> Option<ErrorReason> {
        match self {
            Self::Broker { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    /// What a user can do next, when there is one thing to say: start a broker when none
    /// answers; wait again from the `resume_cursor` when a wait timed out.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            _ if self.is_unreachable() => Some(START_HINT),
            Self::Broker {
                reason: ErrorReason::Timeout,
                resume_cursor: Some(_),
                ..
            } => Some("nothing matched in time: wait again from the resume_cursor"),
            _ => None,
        }
    }

    /// The error for a reply of the wire type `reply` (`done`, `turn`, …) to `request`, which
    /// expects another.
    pub fn unexpected(request: &str, reply: &str) -> Self {
        Self::Protocol(format!("unexpected reply to {request}: {reply}"))
    }

    /// What a protocol-level failure on the connection to `socket` means for the user;
    /// `timeout` is the time a reply was allowed.
    pub(crate) fn from_proto(err: ProtoError, socket: &Path, timeout: Duration) -> Self {
        match err {
            ProtoError::Broker {
                reason,
                message,
                resume_cursor,
            } => Self::Broker {
                reason,
                message,
                resume_cursor,
            },
            ProtoError::NoRuntimeDir => Self::NoRuntimeDir,
            ProtoError::Io { source, .. }
                if matches!(source.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                Self::no_answer(socket, timeout)
            }
            ProtoError::Io { source, .. } => Self::Unreachable {
                socket: socket.to_owned(),
                detail: source.to_string(),
            },
            ProtoError::Closed => Self::Unreachable {
                socket: socket.to_owned(),
                detail: "the broker closed the connection without answering".into(),
            },
            ProtoError::NoBroker {
                started, detail, ..
            } => Self::Unreachable {
                socket: socket.to_owned(),
                detail: if started {
                    format!("a clippy-broker was started but did not answer in time: {detail}")
                } else {
                    format!(
                        "no broker answers there, and clippy-broker could not be started: {detail}"
                    )
                },
            },
            err @ (ProtoError::FrameTooLarge { .. }
            | ProtoError::Malformed(_)
            | ProtoError::UnknownType { .. }
            | ProtoError::MissingField { .. }
            | ProtoError::Encode(_)
            | ProtoError::Truncated
            | ProtoError::Unexpected(_)) => Self::Protocol(err.to_string()),
        }
    }

    pub(crate) fn no_answer(socket: &Path, timeout: Duration) -> Self {
        Self::NoAnswer {
            socket: socket.to_owned(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use clippy_proto::Message;

    use super::*;

    fn sock() -> PathBuf {
        PathBuf::from("/x/broker.sock")
    }

    fn io(kind: ErrorKind) -> ProtoError {
        ProtoError::Io {
            context: "c".into(),
            source: std::io::Error::from(kind),
        }
    }

    fn sorted(err: ProtoError) -> ClientError {
        ClientError::from_proto(err, &sock(), Duration::from_millis(7))
    }

    #[test]
    fn errors_are_sorted_by_meaning() {
        for kind in [ErrorKind::NotFound, ErrorKind::ConnectionRefused] {
            let err = sorted(io(kind));
            assert!(matches!(err, ClientError::Unreachable { .. }), "{err:?}");
            assert!(err.to_string().contains("/x/broker.sock"), "{err}");
            assert_eq!(err.hint(), Some(START_HINT));
        }
        for kind in [ErrorKind::WouldBlock, ErrorKind::TimedOut] {
            assert!(matches!(
                sorted(io(kind)),
                ClientError::NoAnswer { timeout_ms: 7, .. }
            ));
        }
        assert!(matches!(
            sorted(ProtoError::Closed),
            ClientError::Unreachable { .. }
        ));
        assert!(matches!(
            sorted(ProtoError::Truncated),
            ClientError::Protocol(_)
        ));
        assert!(matches!(
            sorted(ProtoError::Malformed("m".into())),
            ClientError::Protocol(_)
        ));
        assert!(matches!(
            sorted(ProtoError::NoRuntimeDir),
            ClientError::NoRuntimeDir
        ));
        let not_started = sorted(ProtoError::NoBroker {
            socket: sock(),
            started: false,
            detail: "cannot run clippy-broker".into(),
        });
        assert!(not_started.is_unreachable());
        assert!(
            not_started
                .to_string()
                .contains("clippy-broker could not be started: cannot run clippy-broker"),
            "{not_started}"
        );
    }

    #[test]
    fn the_brokers_reason_and_resume_cursor_are_kept() {
        let err = sorted(ProtoError::Broker {
            reason: ErrorReason::Timeout,
            message: "no match for \"x\" within 10 ms".into(),
            resume_cursor: Some(42),
        });
        assert_eq!(err.reason(), Some(ErrorReason::Timeout));
        assert!(!err.is_unreachable());
        assert!(
            err.hint()
                .is_some_and(|hint| hint.contains("resume_cursor"))
        );
        assert_eq!(err.to_string(), "timeout: no match for \"x\" within 10 ms");
        let ClientError::Broker { resume_cursor, .. } = err else {
            panic!("not the broker's");
        };
        assert_eq!(resume_cursor, Some(42));
        let unknown = sorted(ProtoError::Broker {
            reason: ErrorReason::SessionNotFound,
            message: "no session \"rev\"".into(),
            resume_cursor: None,
        });
        assert_eq!(unknown.reason(), Some(ErrorReason::SessionNotFound));
        assert_eq!(unknown.hint(), None);
    }

    #[test]
    fn an_unexpected_reply_is_named_by_its_type() {
        assert_eq!(
            ClientError::unexpected("paste", Message::Done { id: 1 }.kind()).to_string(),
            "protocol error: unexpected reply to paste: done"
        );
    }
}
