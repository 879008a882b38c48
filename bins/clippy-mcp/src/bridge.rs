//! The way to the broker: `clippy-client` connections, kept for the next tool call once a
//! request is answered, so a quick tool costs one round trip and no connection set-up. A wait
//! takes a connection of its own for as long as it waits, so waits never hold up other calls.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use clippy_client::{ClientError, Connection, Endpoint};

use crate::error::McpError;

/// Connections kept idle at most (more than this many concurrent calls open and close their own).
const MAX_IDLE: usize = 8;

/// The broker connections of one `clippy-mcp` process.
#[derive(Debug)]
pub struct Bridge {
    endpoint: Endpoint,
    idle: Mutex<Vec<Connection>>,
}

impl Bridge {
    /// A bridge to the broker at `socket` (`None`: `$XDG_RUNTIME_DIR/clippy/broker.sock`;
    /// without `XDG_RUNTIME_DIR`, as some MCP clients start their servers, the login session's
    /// `/run/user/UID/clippy/broker.sock`; [`Endpoint::resolve_or_login`]). Nothing is
    /// connected yet: the first call connects, starting a broker when none answers at the
    /// default socket.
    ///
    /// # Errors
    ///
    /// No `socket`, no usable `XDG_RUNTIME_DIR` and no `/run/user/UID` of this user.
    pub fn new(socket: Option<&Path>, timeout: Duration) -> Result<Self, McpError> {
        let endpoint =
            Endpoint::resolve_or_login(socket, timeout).map_err(|_| McpError::NoRuntimeDir)?;
        Ok(Self {
            endpoint,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// The broker's socket.
    pub fn socket(&self) -> &Path {
        self.endpoint.socket()
    }

    /// How long connecting, and a quick request's reply, may take.
    pub fn timeout(&self) -> Duration {
        self.endpoint.timeout()
    }

    /// Runs `call` on a connection (one kept from an earlier call that is still open, or a new
    /// one, starting a broker when none answers at the default socket). The connection is kept
    /// for the next call when `call` left it in a known state: answered, or refused by the
    /// broker.
    ///
    /// # Errors
    ///
    /// No broker could be reached, or `call`'s own error.
    pub fn with<T>(
        &self,
        call: impl FnOnce(&mut Connection) -> Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        let mut connection = self.take()?;
        let result = call(&mut connection);
        if matches!(result, Ok(_) | Err(ClientError::Broker { .. })) {
            self.give_back(connection);
        }
        result
    }

    /// An idle connection that is still open, or a new one.
    fn take(&self) -> Result<Connection, ClientError> {
        loop {
            let kept = self.idle.lock().ok().and_then(|mut idle| idle.pop());
            match kept {
                Some(connection) if connection.is_open() => return Ok(connection),
                Some(_closed) => continue,
                None => return Connection::connect_starting(&self.endpoint),
            }
        }
    }

    fn give_back(&self, connection: Connection) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(connection);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_socket_is_never_a_place_to_start_a_broker() {
        let bridge = Bridge::new(
            Some(Path::new("/nonexistent/clippy/broker.sock")),
            Duration::from_millis(200),
        )
        .expect("an explicit socket needs no runtime dir");
        assert!(!bridge.endpoint.may_start());
        match bridge.with(Connection::list_sessions) {
            Err(why @ ClientError::Unreachable { .. }) => {
                assert!(
                    why.to_string().contains("/nonexistent/clippy/broker.sock"),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
