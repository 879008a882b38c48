//! Exit codes (SPEC §10) and the machine-readable reason of each failure: one mapping, here.

use clippy_client::ClientError;
use clippy_proto::ErrorReason;

use crate::commands::{Report, Status};
use crate::error::CtlError;

/// The process exit codes of `clippy-ctl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Success (also `--help`, `--version`).
    Ok = 0,
    /// The operation failed; the broker's reason is printed.
    Failed = 1,
    /// No broker answers: no socket, connection refused, no `XDG_RUNTIME_DIR`, no reply in time.
    Unreachable = 3,
    /// Invalid arguments or configuration, clap usage errors included.
    Usage = 4,
    /// Protocol or schema error: malformed reply, unexpected message, version mismatch.
    Protocol = 5,
    /// A wait ran out of time (the broker's `timeout` reason).
    Timeout = 124,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        Self::from(exit as u8)
    }
}

/// The exit code for `err`.
pub fn exit_code(err: &CtlError) -> Exit {
    match err {
        CtlError::Usage(_) | CtlError::Config(_) => Exit::Usage,
        err if err.is_unreachable() => Exit::Unreachable,
        CtlError::Protocol(_) | CtlError::Client(ClientError::Protocol(_)) => Exit::Protocol,
        CtlError::Client(ClientError::Broker { reason, .. }) => match reason {
            ErrorReason::Timeout => Exit::Timeout,
            // Arguments the broker refused: a route to itself, a template without {turn}, …
            ErrorReason::InvalidArgument => Exit::Usage,
            // The broker did not understand us, or we may not ask: a protocol problem, not
            // a failed operation.
            ErrorReason::VersionMismatch
            | ErrorReason::UnknownType
            | ErrorReason::MissingField
            | ErrorReason::NotAllowed => Exit::Protocol,
            _ => Exit::Failed,
        },
        CtlError::Io { .. }
        | CtlError::Session(_)
        | CtlError::Desktop { .. }
        | CtlError::Lagged
        | CtlError::Client(_) => Exit::Failed,
    }
}

/// The exit code after `report` was printed: 0, except a `status` that found no broker.
pub fn report_exit(report: &Report) -> Exit {
    match report {
        Report::Status(Status {
            broker: Err(err), ..
        }) => exit_code(err),
        _ => Exit::Ok,
    }
}

/// The `reason` of `err` in a JSON error object: the broker's wire reason when it gave one.
pub fn reason(err: &CtlError) -> &'static str {
    match err {
        CtlError::Usage(_) => "invalid_arguments",
        CtlError::Config(_) => "invalid_configuration",
        err if err.is_unreachable() => "broker_unreachable",
        CtlError::Protocol(_) | CtlError::Client(ClientError::Protocol(_)) => "protocol_error",
        CtlError::Io { .. } => "io_error",
        CtlError::Session(_) => "session_failed",
        CtlError::Desktop { reason, .. } => reason,
        CtlError::Lagged => "subscriber_lagged",
        CtlError::Client(ClientError::Broker { reason, .. }) => reason.as_str(),
        // Connection failures are unreachable, arguments usage errors: nothing else is left.
        CtlError::Client(_) => "broker_unreachable",
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn broker(reason: ErrorReason) -> CtlError {
        CtlError::Client(ClientError::Broker {
            reason,
            message: String::new(),
            resume_cursor: None,
        })
    }

    #[test]
    fn every_error_maps_to_its_code() {
        let socket = PathBuf::from("/run/user/1/clippy/broker.sock");
        let cases = [
            (CtlError::Usage("x".into()), Exit::Usage),
            (CtlError::Config("x".into()), Exit::Usage),
            (
                CtlError::Client(ClientError::NoRuntimeDir),
                Exit::Unreachable,
            ),
            (
                CtlError::Client(ClientError::Unreachable {
                    socket: socket.clone(),
                    detail: "refused".into(),
                }),
                Exit::Unreachable,
            ),
            (
                CtlError::Client(ClientError::NoAnswer {
                    socket,
                    timeout_ms: 5,
                }),
                Exit::Unreachable,
            ),
            (CtlError::Protocol("x".into()), Exit::Protocol),
            (
                CtlError::Client(ClientError::Protocol("x".into())),
                Exit::Protocol,
            ),
            (
                CtlError::Io {
                    context: "x".into(),
                    source: std::io::Error::other("y"),
                },
                Exit::Failed,
            ),
            (
                CtlError::Desktop {
                    reason: "ambiguous_session",
                    message: "x".into(),
                },
                Exit::Failed,
            ),
            (broker(ErrorReason::SessionNotFound), Exit::Failed),
            (broker(ErrorReason::NoTurn), Exit::Failed),
            (broker(ErrorReason::BufferEmpty), Exit::Failed),
            (broker(ErrorReason::SessionDisconnected), Exit::Failed),
            (broker(ErrorReason::DuplicateSession), Exit::Failed),
            (broker(ErrorReason::PayloadTooLarge), Exit::Failed),
            (broker(ErrorReason::TurnNotFound), Exit::Failed),
            (broker(ErrorReason::Busy), Exit::Failed),
            (broker(ErrorReason::InvalidPattern), Exit::Failed),
            (broker(ErrorReason::SinkFailed), Exit::Failed),
            (broker(ErrorReason::Timeout), Exit::Timeout),
            (broker(ErrorReason::VersionMismatch), Exit::Protocol),
            (broker(ErrorReason::UnknownType), Exit::Protocol),
            (broker(ErrorReason::MissingField), Exit::Protocol),
            (broker(ErrorReason::InvalidArgument), Exit::Usage),
            (broker(ErrorReason::NotAllowed), Exit::Protocol),
            // The broker keeps no history, or its store could not answer: refused.
            (broker(ErrorReason::HistoryOff), Exit::Failed),
            (broker(ErrorReason::HistoryFailed), Exit::Failed),
        ];
        for (err, want) in cases {
            assert_eq!(exit_code(&err), want, "{err:?}");
        }
    }

    #[test]
    fn codes_are_the_documented_numbers() {
        let codes = [
            Exit::Ok,
            Exit::Failed,
            Exit::Unreachable,
            Exit::Usage,
            Exit::Protocol,
            Exit::Timeout,
        ]
        .map(|exit| exit as u8);
        assert_eq!(codes, [0, 1, 3, 4, 5, 124]);
    }

    #[test]
    fn broker_reasons_pass_through_to_json() {
        assert_eq!(
            reason(&broker(ErrorReason::SessionNotFound)),
            "session_not_found"
        );
        assert_eq!(reason(&broker(ErrorReason::HistoryOff)), "history_off");
        assert_eq!(
            reason(&broker(ErrorReason::HistoryFailed)),
            "history_failed"
        );
        assert_eq!(
            reason(&CtlError::Client(ClientError::NoRuntimeDir)),
            "broker_unreachable"
        );
        assert_eq!(reason(&CtlError::Usage("x".into())), "invalid_arguments");
        assert_eq!(reason(&CtlError::Protocol("x".into())), "protocol_error");
    }
}
