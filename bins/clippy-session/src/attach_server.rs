//! The session's attach socket (`attach.sock` in its folder): the I/O around a
//! [`clippy_attach::Hub`], inside the byte loop. Terminals attached with `clippy-ctl attach`
//! get the program's output straight from the loop, never through the broker; each has a
//! bounded outbox, so a slow one skips output instead of slowing the program
//! (CONTRACTS/ATTACH.md).

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use clippy_attach::{ClientId, Hub, HubAction, Restore};
use clippy_proto::attach::ATTACH_SOCKET;
use mio::net::{UnixListener, UnixStream};
use mio::{Interest, Registry, Token};
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};

/// The listener's token in the loop.
pub const LISTENER: Token = Token(4);
/// Clients' tokens are this plus their id.
const CLIENT_BASE: usize = 1 << 20;
/// Read from a client at a time.
const READ_CHUNK: usize = 16 * 1024;
/// Read from one client before the others (and the program's output) get a turn.
const READ_BUDGET: usize = 64 * 1024;
/// How long the last frames (the program's exit) may take to reach clients when the session
/// ends.
const LAST_WORDS: Duration = Duration::from_secs(1);

/// The attach socket and the clients connected to it.
pub struct AttachServer {
    listener: UnixListener,
    hub: Hub,
    streams: HashMap<ClientId, UnixStream>,
    uid: u32,
}

impl AttachServer {
    /// Listens on `dir/attach.sock` (mode 0600) for session `session`, whose PTY is `size`.
    pub fn bind(
        dir: &Path,
        session: &str,
        name: Option<String>,
        size: (u16, u16),
        registry: &Registry,
    ) -> std::io::Result<Self> {
        let path = dir.join(ATTACH_SOCKET);
        let mut listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        registry.register(&mut listener, LISTENER, Interest::READABLE)?;
        Ok(AttachServer {
            listener,
            hub: Hub::new(
                session,
                name,
                size,
                Restore {
                    normal: clippy_screen::RESTORE_TERMINAL,
                    alternate: clippy_screen::RESTORE_TERMINAL_FROM_ALTERNATE,
                },
            ),
            streams: HashMap::new(),
            uid: nix::unistd::getuid().as_raw(),
        })
    }

    /// The client a token is for.
    pub fn client_of(token: Token) -> Option<ClientId> {
        token.0.checked_sub(CLIENT_BASE).map(|id| id as ClientId)
    }

    /// Takes every connection waiting on the listener.
    pub fn accept(&mut self, registry: &Registry) {
        loop {
            let mut stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // Out of descriptors and the like: the connection waits in the backlog.
                Err(_) => return,
            };
            let peer_ok = getsockopt(&stream, PeerCredentials).is_ok_and(|c| c.uid() == self.uid);
            let id = self.hub.accept(peer_ok);
            let token = Token(CLIENT_BASE + id as usize);
            if registry
                .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                .is_err()
            {
                self.hub.closed(id);
                continue;
            }
            self.streams.insert(id, stream);
            // A refused peer's answer goes out now.
            self.flush(id, registry);
        }
    }

    /// Reads what `client` sent, up to [`READ_BUDGET`]: the actions for the loop, and whether
    /// more may wait (then the loop calls again, as the socket will not say so again).
    pub fn read(&mut self, client: ClientId, registry: &Registry) -> (Vec<HubAction>, bool) {
        let mut actions = Vec::new();
        let mut buf = [0u8; READ_CHUNK];
        let mut budget = READ_BUDGET;
        let more = loop {
            let Some(stream) = self.streams.get_mut(&client) else {
                return (actions, false);
            };
            if budget == 0 {
                break true;
            }
            match stream.read(&mut buf) {
                Ok(0) => {
                    actions.extend(self.close(client, registry));
                    return (actions, false);
                }
                Ok(n) => {
                    budget = budget.saturating_sub(n);
                    actions.extend(self.hub.received(client, &buf[..n]));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    actions.extend(self.close(client, registry));
                    return (actions, false);
                }
            }
        };
        // An answer goes out at once: a refusal, a detach, or (`detach_all`) every client's.
        actions.extend(self.flush_all(registry));
        (actions, more)
    }

    /// The program wrote `bytes`: queued for, and written as far as they take it to, every
    /// attached client.
    pub fn output(&mut self, bytes: &[u8], registry: &Registry) -> Vec<HubAction> {
        if self.hub.attached() == 0 {
            return Vec::new();
        }
        let mut actions = self.hub.output(bytes);
        actions.extend(self.flush_all(registry));
        actions
    }

    /// The tap rendered a screen for a client.
    pub fn redrawn(
        &mut self,
        client: ClientId,
        generation: u64,
        screen: Vec<u8>,
        registry: &Registry,
    ) -> Vec<HubAction> {
        let again = self.hub.redrawn(client, generation, screen);
        let mut actions = self.flush(client, registry);
        actions.extend(again);
        actions
    }

    /// Clients attached (interactive or read-only), past their greeting.
    pub fn attached(&self) -> usize {
        self.hub.attached()
    }

    /// Clients attached that type (whose terminals answer the program's queries).
    pub fn interactive(&self) -> usize {
        self.hub.interactive()
    }

    /// The session's own terminal was resized.
    pub fn resized(&mut self, cols: u16, rows: u16) {
        self.hub.resized(cols, rows);
    }

    /// Writes what `client` has queued, as far as its socket takes it; closes it once it is
    /// detached and told, or gone.
    pub fn flush(&mut self, client: ClientId, registry: &Registry) -> Vec<HubAction> {
        let mut actions = Vec::new();
        let Some(stream) = self.streams.get_mut(&client) else {
            return actions;
        };
        loop {
            let unsent = self.hub.unsent(client);
            if unsent.is_empty() {
                break;
            }
            match stream.write(unsent) {
                Ok(0) => return self.close(client, registry),
                // A lagging client that caught up asks for the screen.
                Ok(n) => actions.extend(self.hub.wrote(client, n)),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.close(client, registry),
            }
        }
        if self.hub.finished(client) {
            actions.extend(self.close(client, registry));
        }
        actions
    }

    fn flush_all(&mut self, registry: &Registry) -> Vec<HubAction> {
        let clients: Vec<ClientId> = self.streams.keys().copied().collect();
        clients
            .into_iter()
            .flat_map(|client| self.flush(client, registry))
            .collect()
    }

    fn close(&mut self, client: ClientId, registry: &Registry) -> Vec<HubAction> {
        if let Some(mut stream) = self.streams.remove(&client) {
            let _ = registry.deregister(&mut stream);
        }
        self.hub.closed(client)
    }

    /// The program ended: every client is told how (best effort, for at most a second in
    /// all), then let go.
    pub fn exited(mut self, exit_code: i32, signal: Option<i32>, registry: &Registry) {
        self.hub.exited(exit_code, signal);
        let deadline = Instant::now() + LAST_WORDS;
        while !self.streams.is_empty() && Instant::now() < deadline {
            self.flush_all(registry);
            let Some(stream) = self.streams.values().next() else {
                break;
            };
            let mut fds = [nix::poll::PollFd::new(
                std::os::fd::AsFd::as_fd(stream),
                nix::poll::PollFlags::POLLOUT,
            )];
            let left = deadline.saturating_duration_since(Instant::now());
            let timeout =
                nix::poll::PollTimeout::try_from(left).unwrap_or(nix::poll::PollTimeout::ZERO);
            let _ = nix::poll::poll(&mut fds, timeout);
        }
    }
}
