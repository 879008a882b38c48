//! The wrapper's side of attaching: clients, their outboxes, the size, slow clients.

use std::collections::BTreeMap;

use clippy_proto::FrameDecoder;
use clippy_proto::attach::{ATTACH_VERSION, AttachFrame, AttachMode, DetachReason, decode};

use crate::outbox::Outbox;

/// The bytes that put a client's terminal back in order when it leaves: for a terminal showing
/// its normal screen then, and for one showing the alternate screen (see
/// [`AlternateScreen`](crate::AlternateScreen)). The wrapper's screen model knows them.
#[derive(Debug, Clone, Copy)]
pub struct Restore {
    /// On the normal screen.
    pub normal: &'static [u8],
    /// On the alternate screen.
    pub alternate: &'static [u8],
}

/// A client of the hub, numbered by the hub in the order they connect.
pub type ClientId = u64;

/// How much may wait in one client's outbox before the client skips to the current screen.
pub const DEFAULT_OUTBOX_LIMIT: usize = 4 * 1024 * 1024;

/// What the wrapper does for the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubAction {
    /// Keys from an interactive client: write them to the program, as typed input.
    Input(Vec<u8>),
    /// Resize the session's PTY (and its screen) to this.
    Resize {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// Render the session's screen, behind all the output handed to the hub so far, and give
    /// it back with [`Hub::redrawn`] and this generation.
    Redraw {
        /// For whom.
        client: ClientId,
        /// Which request this is (an older one's answer is ignored).
        generation: u64,
    },
}

/// The clients attached to one session, with no I/O.
///
/// The wrapper [`accept`](Hub::accept)s each connection, hands over what it reads with
/// [`received`](Hub::received) and the program's output with [`output`](Hub::output), writes
/// [`unsent`](Hub::unsent) bytes as each socket takes them and reports them with
/// [`wrote`](Hub::wrote), and closes a connection once [`finished`](Hub::finished) says so (or
/// when its peer went away, then [`closed`](Hub::closed)). Nothing here blocks or waits: a
/// client that does not keep up loses output, never the program.
#[derive(Debug)]
pub struct Hub {
    session: String,
    name: Option<String>,
    restore: Restore,
    size: (u16, u16),
    clients: BTreeMap<ClientId, Client>,
    next_id: ClientId,
    /// Interactive clients that gave a size, oldest first: the last one's size is in force.
    sizers: Vec<(ClientId, (u16, u16))>,
    outbox_limit: usize,
}

#[derive(Debug)]
struct Client {
    state: State,
    decoder: FrameDecoder,
    outbox: Outbox,
    /// Waiting for the screen: the output that came meanwhile, to follow it.
    redraw: Option<PendingRedraw>,
    /// Its outbox overflowed: the output bytes skipped since, until it has read what it had
    /// begun to (then it gets the current screen).
    lagging: Option<u64>,
    generation: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Connected, no hello yet.
    Greeting,
    Attached(AttachMode),
    /// Its last frames are queued; closed once they are written.
    Closing,
}

#[derive(Debug, Default)]
struct PendingRedraw {
    generation: u64,
    held: Vec<u8>,
    /// Output skipped before the redraw.
    skipped: u64,
    /// Output had to be dropped while waiting: this redraw is too old to follow, and another
    /// is asked for when it comes (never more than one at a time per client).
    stale: bool,
}

impl Hub {
    /// A hub for session `session` (named `name`), whose PTY is `size` (columns, rows);
    /// `restore`: the bytes each client is given to put its terminal back when it leaves.
    pub fn new(
        session: impl Into<String>,
        name: Option<String>,
        size: (u16, u16),
        restore: Restore,
    ) -> Self {
        Hub {
            session: session.into(),
            name,
            restore,
            size,
            clients: BTreeMap::new(),
            next_id: 1,
            sizers: Vec::new(),
            outbox_limit: DEFAULT_OUTBOX_LIMIT,
        }
    }

    /// The same, with another bound on each client's outbox (and on the output held for a
    /// client while its screen is rendered).
    pub fn with_outbox_limit(mut self, limit: usize) -> Self {
        self.outbox_limit = limit.max(1);
        self
    }

    /// A connection was accepted. `peer_ok`: it comes from the wrapper's own user (checked
    /// with `SO_PEERCRED`); any other is refused.
    pub fn accept(&mut self, peer_ok: bool) -> ClientId {
        let id = self.next_id;
        self.next_id += 1;
        let mut client = Client {
            state: State::Greeting,
            decoder: FrameDecoder::default(),
            outbox: Outbox::default(),
            redraw: None,
            lagging: None,
            generation: 0,
        };
        if !peer_ok {
            client.refuse("this session belongs to another user".into());
        }
        self.clients.insert(id, client);
        id
    }

    /// Bytes read from `client`'s connection.
    pub fn received(&mut self, client: ClientId, bytes: &[u8]) -> Vec<HubAction> {
        let mut actions = Vec::new();
        let Some(c) = self.clients.get_mut(&client) else {
            return actions;
        };
        if c.state == State::Closing {
            return actions;
        }
        c.decoder.push(bytes);
        // Frame by frame, until one closes the connection.
        while let Some(c) = self.clients.get_mut(&client)
            && c.state != State::Closing
        {
            let frame = match c.decoder.next_frame() {
                Ok(Some(payload)) => decode(&payload),
                Ok(None) => break,
                Err(e) => Err(e),
            };
            match frame {
                Ok(frame) => self.on_frame(client, frame, &mut actions),
                Err(e) => {
                    c.refuse(format!("not an attach frame: {e}"));
                    self.forget_size_of(client, &mut actions);
                }
            }
        }
        actions
    }

    fn on_frame(&mut self, client: ClientId, frame: AttachFrame, actions: &mut Vec<HubAction>) {
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        match (c.state, frame) {
            (
                State::Greeting,
                AttachFrame::Hello {
                    version,
                    mode,
                    cols,
                    rows,
                },
            ) => {
                if version != ATTACH_VERSION {
                    c.refuse(format!(
                        "attach protocol version {version} is not spoken here (this session speaks \
                         {ATTACH_VERSION}): use the clippy-ctl of the same release"
                    ));
                    return;
                }
                c.state = State::Attached(mode);
                if mode == AttachMode::Control {
                    return;
                }
                if mode == AttachMode::Interactive && cols > 0 && rows > 0 {
                    self.sizers.push((client, (cols, rows)));
                    self.set_size((cols, rows), actions);
                }
                let welcome = AttachFrame::Welcome {
                    session: self.session.clone(),
                    name: self.name.clone(),
                    cols: self.size.0,
                    rows: self.size.1,
                    restore: self.restore.normal.to_vec(),
                    restore_alternate: self.restore.alternate.to_vec(),
                };
                if let Some(c) = self.clients.get_mut(&client) {
                    // It carries the restore bytes and the size: never skipped.
                    c.outbox.push_kept(&welcome);
                    actions.push(c.request_redraw(client, 0));
                }
            }
            (State::Greeting, _) => {
                c.refuse("the first frame must be a hello".into());
            }
            (State::Attached(AttachMode::Interactive), AttachFrame::Input { data }) => {
                if !data.is_empty() {
                    actions.push(HubAction::Input(data));
                }
            }
            (State::Attached(AttachMode::Interactive), AttachFrame::Resize { cols, rows }) => {
                if cols > 0 && rows > 0 {
                    self.sizers.retain(|(id, _)| *id != client);
                    self.sizers.push((client, (cols, rows)));
                    self.set_size((cols, rows), actions);
                }
            }
            // A read-only client's keys are not the session's, nor is its size: resized, it
            // gets the current screen again (unless one is on its way or it lags).
            (State::Attached(AttachMode::ReadOnly), AttachFrame::Input { .. }) => {}
            (State::Attached(AttachMode::ReadOnly), AttachFrame::Resize { .. }) => {
                if c.redraw.is_none() && c.lagging.is_none() {
                    actions.push(c.request_redraw(client, 0));
                }
            }
            (State::Attached(mode), AttachFrame::Detach) if mode != AttachMode::Control => {
                c.detach(DetachReason::Asked);
                self.forget_size_of(client, actions);
            }
            (State::Attached(AttachMode::Control), AttachFrame::DetachAll) => {
                let detached = self.detach_all(DetachReason::Command, actions);
                if let Some(c) = self.clients.get_mut(&client) {
                    c.outbox
                        .push(&AttachFrame::DetachedAll { clients: detached }, 0);
                    c.state = State::Closing;
                }
            }
            (_, frame) => {
                c.refuse(format!(
                    "a {} frame is not taken on this connection",
                    frame_name(&frame)
                ));
                self.forget_size_of(client, actions);
            }
        }
    }

    /// The program wrote `bytes`: queued for every attached client. A client whose outbox
    /// would pass the limit drops what it has not begun to receive and skips output until it
    /// has read the rest; then it gets the current screen (a [`HubAction::Redraw`] for it, from
    /// [`wrote`](Hub::wrote)). A client that never reads costs nothing more.
    pub fn output(&mut self, bytes: &[u8]) -> Vec<HubAction> {
        let mut actions = Vec::new();
        if bytes.is_empty() {
            return actions;
        }
        let (len, limit) = (bytes.len() as u64, self.outbox_limit);
        for (&id, c) in &mut self.clients {
            if !matches!(
                c.state,
                State::Attached(AttachMode::Interactive | AttachMode::ReadOnly)
            ) {
                continue;
            }
            if let Some(skipped) = &mut c.lagging {
                *skipped += len;
                continue;
            }
            if let Some(pending) = &mut c.redraw {
                if pending.stale {
                    pending.skipped += len;
                } else if pending.held.len() + bytes.len() > limit {
                    pending.skipped += pending.held.len() as u64 + len;
                    pending.held = Vec::new();
                    pending.stale = true;
                } else {
                    pending.held.extend_from_slice(bytes);
                }
                continue;
            }
            if c.outbox.len() + bytes.len() > limit {
                let skipped = c.outbox.drop_unstarted() + len;
                if c.outbox.len() == 0 {
                    actions.push(c.request_redraw(id, skipped));
                } else {
                    c.lagging = Some(skipped);
                }
                continue;
            }
            c.outbox.push(
                &AttachFrame::Output {
                    data: bytes.to_vec(),
                },
                len,
            );
        }
        actions
    }

    /// The screen asked for by [`HubAction::Redraw`]: queued for `client`, with the output
    /// that came meanwhile after it. An answer to an older request is ignored; one that output
    /// had to be dropped after is too, and a newer screen is asked for instead.
    pub fn redrawn(
        &mut self,
        client: ClientId,
        generation: u64,
        screen: Vec<u8>,
    ) -> Option<HubAction> {
        let c = self.clients.get_mut(&client)?;
        if c.state == State::Closing
            || c.redraw
                .as_ref()
                .is_none_or(|pending| pending.generation != generation)
        {
            return None;
        }
        let pending = c.redraw.take()?;
        if pending.stale {
            return Some(c.request_redraw(client, pending.skipped));
        }
        c.outbox.push(
            &AttachFrame::Redraw {
                data: screen,
                skipped: pending.skipped,
            },
            0,
        );
        if !pending.held.is_empty() {
            let len = pending.held.len() as u64;
            c.outbox
                .push(&AttachFrame::Output { data: pending.held }, len);
        }
        None
    }

    /// The session's PTY now has this size (its own terminal was resized): the size in force
    /// until an attached client sets another.
    pub fn resized(&mut self, cols: u16, rows: u16) {
        self.size = (cols, rows);
        self.sizers.clear();
    }

    /// `clippy-ctl detach`, from elsewhere: every attached client leaves. Returns how many.
    pub fn detach_everyone(&mut self) -> (u32, Vec<HubAction>) {
        let mut actions = Vec::new();
        let n = self.detach_all(DetachReason::Command, &mut actions);
        (n, actions)
    }

    /// The program ended: every client is told how, then detached.
    pub fn exited(&mut self, exit_code: i32, signal: Option<i32>) {
        for c in self.clients.values_mut() {
            match c.state {
                State::Attached(AttachMode::Interactive | AttachMode::ReadOnly) => {
                    c.redraw = None;
                    c.lagging = None;
                    c.outbox.push(&AttachFrame::Exited { exit_code, signal }, 0);
                    c.detach(DetachReason::Exited);
                }
                State::Attached(AttachMode::Control) | State::Greeting => {
                    c.refuse("the session has ended".into());
                }
                State::Closing => {}
            }
        }
        self.sizers.clear();
    }

    /// Bytes queued for `client` and not yet written.
    pub fn unsent(&self, client: ClientId) -> &[u8] {
        self.clients
            .get(&client)
            .map_or(&[][..], |c| c.outbox.unsent())
    }

    /// `n` of [`unsent`](Hub::unsent)'s bytes were written to `client`'s connection. A
    /// lagging client that has read all it had begun to is asked its current screen.
    pub fn wrote(&mut self, client: ClientId, n: usize) -> Option<HubAction> {
        let c = self.clients.get_mut(&client)?;
        c.outbox.wrote(n);
        if c.outbox.len() == 0
            && let Some(skipped) = c.lagging.take()
        {
            return Some(c.request_redraw(client, skipped));
        }
        None
    }

    /// Whether `client`'s connection is to be closed now: it was detached or refused and its
    /// last frames are written.
    pub fn finished(&self, client: ClientId) -> bool {
        self.clients
            .get(&client)
            .is_some_and(|c| c.state == State::Closing && c.outbox.len() == 0)
    }

    /// `client`'s connection is gone (its peer closed it, or it was closed after
    /// [`finished`](Hub::finished)). The size it set, if in force, goes back to the previous
    /// interactive client's.
    pub fn closed(&mut self, client: ClientId) -> Vec<HubAction> {
        let mut actions = Vec::new();
        self.forget_size_of(client, &mut actions);
        self.clients.remove(&client);
        actions
    }

    /// Clients attached to see the output (interactive and read-only).
    pub fn attached(&self) -> usize {
        self.clients
            .values()
            .filter(|c| {
                matches!(
                    c.state,
                    State::Attached(AttachMode::Interactive | AttachMode::ReadOnly)
                )
            })
            .count()
    }

    /// Clients attached to type (interactive): their terminals answer the program's queries.
    pub fn interactive(&self) -> usize {
        self.clients
            .values()
            .filter(|c| c.state == State::Attached(AttachMode::Interactive))
            .count()
    }

    /// The connections the hub holds (attached, greeting or closing).
    pub fn clients(&self) -> impl Iterator<Item = ClientId> + '_ {
        self.clients.keys().copied()
    }

    /// The size in force.
    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    fn detach_all(&mut self, reason: DetachReason, actions: &mut Vec<HubAction>) -> u32 {
        let mut detached = Vec::new();
        for (&id, c) in &mut self.clients {
            if matches!(
                c.state,
                State::Attached(AttachMode::Interactive | AttachMode::ReadOnly)
            ) {
                c.detach(reason);
                detached.push(id);
            }
        }
        for id in &detached {
            self.forget_size_of(*id, actions);
        }
        detached.len() as u32
    }

    fn set_size(&mut self, size: (u16, u16), actions: &mut Vec<HubAction>) {
        if size != self.size {
            self.size = size;
            actions.push(HubAction::Resize {
                cols: size.0,
                rows: size.1,
            });
        }
    }

    fn forget_size_of(&mut self, client: ClientId, actions: &mut Vec<HubAction>) {
        let was_in_force = self.sizers.last().is_some_and(|(id, _)| *id == client);
        self.sizers.retain(|(id, _)| *id != client);
        if was_in_force && let Some(&(_, size)) = self.sizers.last() {
            self.set_size(size, actions);
        }
    }
}

impl Client {
    fn refuse(&mut self, message: String) {
        self.redraw = None;
        self.lagging = None;
        self.outbox.push(&AttachFrame::Refused { message }, 0);
        self.state = State::Closing;
    }

    fn detach(&mut self, reason: DetachReason) {
        self.redraw = None;
        self.lagging = None;
        self.outbox.push(&AttachFrame::Detached { reason }, 0);
        self.state = State::Closing;
    }

    fn request_redraw(&mut self, id: ClientId, skipped: u64) -> HubAction {
        self.generation += 1;
        self.redraw = Some(PendingRedraw {
            generation: self.generation,
            held: Vec::new(),
            skipped,
            stale: false,
        });
        HubAction::Redraw {
            client: id,
            generation: self.generation,
        }
    }
}

fn frame_name(frame: &AttachFrame) -> &'static str {
    match frame {
        AttachFrame::Hello { .. } => "hello",
        AttachFrame::Input { .. } => "input",
        AttachFrame::Resize { .. } => "resize",
        AttachFrame::Detach => "detach",
        AttachFrame::DetachAll => "detach_all",
        AttachFrame::Welcome { .. } => "welcome",
        AttachFrame::Redraw { .. } => "redraw",
        AttachFrame::Output { .. } => "output",
        AttachFrame::Detached { .. } => "detached",
        AttachFrame::Exited { .. } => "exited",
        AttachFrame::DetachedAll { .. } => "detached_all",
        AttachFrame::Refused { .. } => "refused",
    }
}

#[cfg(test)]
mod tests;
