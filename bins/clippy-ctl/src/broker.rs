//! The way to the broker, through `clippy-client`: the endpoint from `--socket` and
//! `--timeout`, and a connection to it. What each [`ClientError`] means for the user and the
//! exit code is [`CtlError`]'s `From`.

use std::time::Duration;

use clippy_client::{ArgumentError, ClientError, Connection, Endpoint};

use crate::cli::Cli;
use crate::error::CtlError;

/// The broker of `--socket`, else `$XDG_RUNTIME_DIR/clippy/broker.sock`, within `--timeout`.
pub fn endpoint(cli: &Cli) -> Result<Endpoint, CtlError> {
    Ok(Endpoint::resolve(
        cli.socket.as_deref(),
        Duration::from_millis(cli.timeout),
    )?)
}

/// A connection to the broker; none is started.
pub fn connect(cli: &Cli) -> Result<Connection, CtlError> {
    Ok(Connection::connect(&endpoint(cli)?)?)
}

/// A connection to the broker, starting one when none answers at the default socket: for the
/// commands a script runs right after starting a session in the background, whose wrapper may
/// not have started the broker yet.
pub fn connect_starting(cli: &Cli) -> Result<Connection, CtlError> {
    Ok(Connection::connect_starting(&endpoint(cli)?)?)
}

impl From<ClientError> for CtlError {
    fn from(err: ClientError) -> Self {
        match err {
            ClientError::Argument(err) => err.into(),
            ClientError::Lagged => Self::Lagged,
            ClientError::Spawn(message) => Self::Session(message),
            ClientError::Io { context, source } => Self::Io { context, source },
            err => Self::Client(err),
        }
    }
}

impl From<ArgumentError> for CtlError {
    fn from(err: ArgumentError) -> Self {
        Self::Usage(usage(err))
    }
}

/// A refused argument in the words of this command line (its flags and arguments).
fn usage(err: ArgumentError) -> String {
    match err {
        ArgumentError::NothingToSend => {
            "nothing to send: DATA is empty (use --enter for a bare Enter)".into()
        }
        ArgumentError::EmptyQuery => "search needs words to find (QUERY is empty)".into(),
        ArgumentError::EmptyRange { since, until } => format!(
            "--since ({}) is not before --until ({}): no turn could match",
            clippy_proto::iso8601_utc(since),
            clippy_proto::iso8601_utc(until)
        ),
        ArgumentError::NoCommand => {
            "no command given: clippy-ctl spawn [OPTIONS] -- COMMAND [ARGS…]".into()
        }
        ArgumentError::NotADirectory(path) => format!("--cwd {}: not a directory", path.display()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clippy_proto::ErrorReason;

    use super::*;

    #[test]
    fn client_errors_keep_their_meaning() {
        let unreachable = CtlError::from(ClientError::Unreachable {
            socket: PathBuf::from("/x/broker.sock"),
            detail: "refused".into(),
        });
        assert!(unreachable.is_unreachable());
        assert_eq!(
            unreachable.to_string(),
            "the broker is not reachable at /x/broker.sock: refused"
        );
        let refused = CtlError::from(ClientError::Broker {
            reason: ErrorReason::Timeout,
            message: "m".into(),
            resume_cursor: Some(4),
        });
        assert_eq!(
            refused.refusal(),
            Some((ErrorReason::Timeout, "m", Some(4)))
        );
        assert!(matches!(
            CtlError::from(ClientError::Argument(ArgumentError::NotOneLine)),
            CtlError::Usage(_)
        ));
        assert!(matches!(
            CtlError::from(ClientError::Lagged),
            CtlError::Lagged
        ));
    }

    #[test]
    fn refused_arguments_name_the_flags() {
        let said = usage(ArgumentError::EmptyRange { since: 2, until: 2 });
        assert!(said.starts_with("--since ("), "{said}");
        assert!(usage(ArgumentError::NothingToSend).contains("--enter"));
        assert_eq!(
            usage(ArgumentError::NotOneLine),
            "exec runs one non-empty command line; type anything else with send"
        );
    }
}
