//! A wrapper speaking the protocol: registers a session with a real broker and reports its
//! turns and progress, as `clippy-session` does, with every field the test chooses.

use std::path::Path;

use clippy_proto::{Client, Message, Progress, Role, SessionInfo, TurnData};

use crate::DEADLINE;

/// A client connection to the broker at `socket` (hello done), whose reads fail after
/// [`DEADLINE`] rather than hang.
pub fn client(socket: &Path) -> Client {
    let client = Client::connect(socket, Role::Client)
        .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", socket.display()));
    client
        .set_read_timeout(Some(DEADLINE))
        .expect("a read timeout");
    client
}

/// What a wrapper registers: `session`, named `name`, run by this process, `fake-agent`, preset
/// `custom`, no spool; change the fields a test cares about.
pub fn session_info(session: &str, name: Option<&str>) -> SessionInfo {
    SessionInfo {
        session: session.into(),
        name: name.map(Into::into),
        pid: std::process::id(),
        command: vec!["fake-agent".into()],
        preset: "custom".into(),
        bracketed_paste: false,
        spool: None,
        cwd: None,
        no_history: false,
    }
}

/// Turn `seq` with `content` and its text view, completed at `1_700_000_000_000 + seq` ms;
/// change the fields a test cares about.
pub fn turn(seq: u64, content: &[u8], text: &str) -> TurnData {
    TurnData {
        seq,
        timestamp: 1_700_000_000_000 + seq,
        content: content.to_vec(),
        text: text.into(),
        interrupted: false,
        truncated: false,
        exit_code: None,
        cwd: None,
        input: None,
        spool_span: None,
        message: None,
    }
}

/// A registered session's wrapper connection. Dropping it closes the connection: the broker
/// then shows the session disconnected.
pub struct Wrapper {
    /// The connection (reads time out after [`DEADLINE`]).
    pub client: Client,
    /// The session's id.
    pub session: String,
}

impl Wrapper {
    /// Connects as a wrapper and registers `info`.
    pub fn register(socket: &Path, info: SessionInfo) -> Wrapper {
        let mut client = Client::connect(socket, Role::Wrapper)
            .unwrap_or_else(|e| panic!("a wrapper cannot connect to {}: {e}", socket.display()));
        client
            .set_read_timeout(Some(DEADLINE))
            .expect("a read timeout");
        let session = info.session.clone();
        let reply = client
            .request(|id| Message::Register {
                id,
                session: info,
                progress: None,
                resends: false,
            })
            .expect("register");
        assert!(matches!(reply, Message::Done { .. }), "register: {reply:?}");
        Wrapper { client, session }
    }

    /// Reports `turn` as completed; returns its turn id.
    pub fn report(&mut self, turn: TurnData) -> String {
        let session = self.session.clone();
        match self
            .client
            .request(|id| Message::TurnCompleted { id, session, turn })
            .expect("turn_completed")
        {
            Message::TurnRecorded { turn_id, .. } => turn_id,
            other => panic!("expected turn_recorded, got {other:?}"),
        }
    }

    /// Reports `progress`, as the wrapper's sink thread would.
    pub fn progress(&mut self, progress: Progress) {
        let session = self.session.clone();
        let reply = self
            .client
            .request(|id| Message::Progress {
                id,
                session,
                progress,
            })
            .expect("progress");
        assert!(matches!(reply, Message::Done { .. }), "progress: {reply:?}");
    }

    /// The bytes of the next `inject` the broker sends.
    pub fn next_inject(&mut self) -> Vec<u8> {
        match self.client.recv().expect("an inject") {
            Message::Inject { data, .. } => data,
            other => panic!("expected an inject, got {other:?}"),
        }
    }
}
