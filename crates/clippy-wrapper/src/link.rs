//! The broker link's memory, with no I/O: what the wrapper still has to tell the broker, in
//! order, and what it keeps to tell a new connection.
//!
//! The wrapper's link thread (in `clippy-session`) owns the connection: it connects (starting a
//! broker if asked), registers with [`Outbox::registration`], and writes what [`Outbox::next`]
//! gives; its reader thread passes the broker's commands on ([`command_of`]) and hands the outbox
//! the acknowledgements (`turn_recorded`) and the requests to send turns again (`resend_turns`)
//! ([`to_outbox`]). The outbox decides everything else: the turns kept until the broker
//! acknowledges them — once they are in its history store — to be sent again on a new
//! connection or when asked (the broker accepts a re-sent turn idempotently, so turn ids stay
//! stable), at most [`KEEP_TURNS`] turns or [`KEEP_BYTES`] bytes (past that the oldest is let go
//! and counted in the progress report, `unkept_turns`), progress reports queued behind a slow
//! write collapsing into the latest, a screen answered only on the connection that asked, the
//! goodbye written last, and when the broker counts as gone: more unsent than [`UNSENT_TURNS`]
//! turns or [`UNSENT_BYTES`] bytes ([`Overflow`]).
//!
//! ```
//! use clippy_proto::{Message, Progress, SessionInfo};
//! use clippy_wrapper::link::{Next, Outbox};
//!
//! let info = SessionInfo {
//!     session: "k3f9a2".into(),
//!     name: None,
//!     pid: 7,
//!     command: vec!["bash".into()],
//!     preset: "shell".into(),
//!     bracketed_paste: false,
//!     spool: None,
//!     cwd: None,
//!     no_history: false,
//! };
//! let mut outbox = Outbox::new(info);
//! assert_eq!(outbox.next(), Next::Connect);
//! // Reports made while no connection is up are carried by the next registration.
//! outbox.progress(Progress { spool_size: 10, ..Progress::default() });
//! let registration = outbox.registration();
//! assert_eq!(registration.1.as_ref().map(|p| p.spool_size), Some(10));
//! outbox.connected(&registration);
//! assert_eq!(outbox.next(), Next::Wait);
//! // Progress queued behind a slow write collapses into the latest.
//! outbox.progress(Progress { spool_size: 20, ..Progress::default() });
//! outbox.progress(Progress { spool_size: 30, ..Progress::default() });
//! let Next::Write(message) = outbox.next() else { panic!("a progress is queued") };
//! assert!(matches!(*message, Message::Progress { ref progress, .. } if progress.spool_size == 30));
//! assert_eq!(outbox.next(), Next::Wait);
//! ```

use std::collections::VecDeque;
use std::sync::Arc;

use clippy_proto::{Message, Progress, ScreenData, SessionInfo, TurnData};

/// Turns sent again on every new connection, acknowledged or not (the broker's default ring
/// depth: a restarted broker's ring is as full as before); and the unsent turns that cost
/// nothing more: the connection is not given up for fewer than this.
pub const HELD_TURNS: usize = 32;
/// Turns kept until the broker acknowledges them, at most: past this (or [`KEEP_BYTES`]) the
/// oldest is let go and counted.
pub const KEEP_TURNS: usize = 4096;
/// Content and text bytes of the turns kept until acknowledged, at most.
pub const KEEP_BYTES: usize = 64 * 1024 * 1024;
/// Turns not yet written, at most: past this the broker counts as gone.
pub const UNSENT_TURNS: usize = 1024;
/// Content and text bytes of the turns not yet written, at most, once they are more than the
/// [`HELD_TURNS`] (which are kept anyway): past this the broker counts as gone.
pub const UNSENT_BYTES: usize = 32 * 1024 * 1024;

/// How the session's command ended, as `deregister` tells the broker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExitReport {
    /// The code a shell shows: the exit code, or 128 + N for signal N.
    pub exit_code: Option<i32>,
    /// The signal that killed the command, when one did.
    pub signal: Option<i32>,
}

/// What the reader thread passes to the sink thread.
#[derive(Debug)]
pub enum FromBroker {
    /// Bytes to write into the child's PTY.
    Inject(Vec<u8>),
    /// Kill the child's process group.
    Terminate,
    /// Report the screen with up to `history` lines of history (`screen_request` number
    /// `request`).
    Screen {
        /// The broker's number for the request, to answer with.
        request: u64,
        /// Lines of history asked for.
        history: u32,
    },
    /// Answer the session's wait (`answer_request` number `request`).
    Answer(crate::tap::AnswerAsk),
}

/// What the wrapper does with a message from the broker: a command for the sink thread, or
/// nothing (a reply to a report, or something it does not know).
pub fn command_of(message: Message) -> Option<FromBroker> {
    match message {
        Message::Inject { data, .. } => Some(FromBroker::Inject(data)),
        Message::Terminate { .. } => Some(FromBroker::Terminate),
        Message::ScreenRequest {
            request, history, ..
        } => Some(FromBroker::Screen { request, history }),
        Message::AnswerRequest {
            request,
            decision,
            reason,
            waiting_id,
            by,
            ..
        } => Some(FromBroker::Answer(crate::tap::AnswerAsk {
            request,
            decision,
            reason,
            waiting_id,
            by,
        })),
        _ => None,
    }
}

/// What the reader thread hands the outbox ([`Outbox::take`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToOutbox {
    /// `turn_recorded` of this seq: the turn is in the broker's store (or it keeps none).
    Recorded(u64),
    /// `resend_turns` from, to.
    Resend(u64, u64),
}

/// What the outbox takes from a message of the broker, if anything: an acknowledgement or a
/// request to send turns again.
pub fn to_outbox(message: &Message) -> Option<ToOutbox> {
    match message {
        Message::TurnRecorded { turn_id, .. } => turn_id
            .rsplit_once(':')
            .and_then(|(_, seq)| seq.parse().ok())
            .map(ToOutbox::Recorded),
        Message::ResendTurns { from, to, .. } => Some(ToOutbox::Resend(*from, *to)),
        _ => None,
    }
}

/// One report waiting for the connection.
#[derive(Debug, Clone)]
enum Pending {
    /// A turn, and whether it is sent again (a replay, a `resend_turns`).
    Turn(Arc<TurnData>, bool),
    /// The latest progress, whatever it is when this is written.
    Progress,
    BracketedPaste(bool),
    /// The answer to a `screen_request`: written on the connection that asked, never replayed
    /// (the broker fails the request when that connection goes).
    Screen(u64, Box<ScreenData>),
    /// The report on an `answer_request`: like a screen, for the connection that asked.
    Answer(crate::tap::AnswerReport),
    Deregister(ExitReport),
}

/// What the link thread does next, as [`Outbox::next`] says.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Write this.
    Write(Box<Message>),
    /// Nothing to write: wait for a report.
    Wait,
    /// Not connected: (re)connect.
    Connect,
    /// The session ended and its goodbye is written (or there is no connection to write it to).
    Finished,
}

/// More is unsent than the outbox allows: the broker is not reading. Drop the connection; the
/// next one starts from the turns kept (every unacknowledged one, and the newest
/// [`HELD_TURNS`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Overflow;

/// The link's memory, without I/O: the session as it registers, the turns not acknowledged yet
/// (kept to be sent again), the latest progress, and what the current connection still has to
/// be sent, in order.
#[derive(Debug)]
pub struct Outbox {
    info: SessionInfo,
    /// The newest [`HELD_TURNS`] turns, acknowledged or not: a new connection (a broker
    /// restarted) gets them again, so the session's ring is as full as before.
    recent: VecDeque<Arc<TurnData>>,
    /// The turns the broker has not acknowledged, oldest (lowest seq) first.
    unacked: VecDeque<Arc<TurnData>>,
    /// Their content and text bytes.
    unacked_bytes: usize,
    /// Turns let go unacknowledged (past the bound), since the session started.
    unkept: u64,
    /// The latest progress from the tap, without `input_blocked`, which the loop tells the link
    /// directly.
    progress: Option<Progress>,
    input_blocked: bool,
    /// `None` while there is no connection.
    queue: Option<VecDeque<Pending>>,
    unsent_turns: usize,
    unsent_bytes: usize,
    /// Of the unsent turns, those sent again (a replay on a new connection, a `resend_turns`):
    /// they do not count towards giving the connection up.
    resent_turns: usize,
    resent_bytes: usize,
    /// The session ended (its command as this says): say goodbye, then stop.
    ending: Option<ExitReport>,
    /// The link thread is connecting and registering: a session that ends meanwhile says
    /// goodbye on that connection once it is made.
    connecting: bool,
    /// The goodbye is written, or there was no connection to write it to.
    finished: bool,
    /// The latest turn seq written to a connection: a broker announced it (told in the next
    /// registration's `announced_turns`).
    written_turns: u64,
}

fn turn_bytes(turn: &TurnData) -> usize {
    turn.content.len() + turn.text.len()
}

impl Outbox {
    /// An outbox for `info`, not connected.
    pub fn new(info: SessionInfo) -> Self {
        Self {
            info,
            recent: VecDeque::new(),
            unacked: VecDeque::new(),
            unacked_bytes: 0,
            unkept: 0,
            progress: None,
            input_blocked: false,
            queue: None,
            unsent_turns: 0,
            unsent_bytes: 0,
            resent_turns: 0,
            resent_bytes: 0,
            ending: None,
            connecting: false,
            finished: false,
            written_turns: 0,
        }
    }

    /// A completed turn: kept until acknowledged, and queued if connected.
    pub fn turn(&mut self, turn: TurnData) -> Result<(), Overflow> {
        let turn = Arc::new(turn);
        if self.recent.len() == HELD_TURNS {
            self.recent.pop_front();
        }
        self.recent.push_back(Arc::clone(&turn));
        self.unacked_bytes += turn_bytes(&turn);
        self.unacked.push_back(Arc::clone(&turn));
        let mut let_go = false;
        while self.unacked.len() > KEEP_TURNS
            || (self.unacked_bytes > KEEP_BYTES && self.unacked.len() > 1)
        {
            let Some(oldest) = self.unacked.pop_front() else {
                break;
            };
            self.unacked_bytes -= turn_bytes(&oldest);
            self.unkept += 1;
            let_go = true;
        }
        let pushed = self.push(Pending::Turn(turn, false));
        if let_go && self.progress.is_some() {
            self.queue_progress();
        }
        pushed
    }

    /// The broker acknowledged turn `seq` (`turn_recorded`): it is in the store (or the broker
    /// keeps none), and is not kept any longer.
    pub fn acknowledged(&mut self, seq: u64) {
        if let Ok(index) = self.unacked.binary_search_by_key(&seq, |t| t.seq)
            && let Some(turn) = self.unacked.remove(index)
        {
            self.unacked_bytes -= turn_bytes(&turn);
        }
    }

    /// The broker asks for turns `from` to `to` again (`resend_turns`): those still kept are
    /// queued, unless already queued.
    pub fn resend(&mut self, from: u64, to: u64) {
        let Some(queue) = &self.queue else {
            return;
        };
        let queued: std::collections::HashSet<u64> = queue
            .iter()
            .filter_map(|p| match p {
                Pending::Turn(turn, _) => Some(turn.seq),
                _ => None,
            })
            .collect();
        let again: Vec<Arc<TurnData>> = self
            .unacked
            .iter()
            .filter(|t| (from..=to).contains(&t.seq) && !queued.contains(&t.seq))
            .cloned()
            .collect();
        for turn in again {
            self.push_resent(turn);
        }
    }

    /// Takes what a reader thread hands it ([`to_outbox`]), read on the current connection or
    /// (`current` false) on an earlier one: an acknowledgement holds whichever connection it
    /// came on (the turn is in the store), a request to send turns again is for its own
    /// connection only (a new one sends every unacknowledged turn anyway).
    pub fn take(&mut self, reply: ToOutbox, current: bool) {
        match reply {
            ToOutbox::Recorded(seq) => self.acknowledged(seq),
            ToOutbox::Resend(from, to) if current => self.resend(from, to),
            ToOutbox::Resend(..) => {}
        }
    }

    /// Turns kept until acknowledged, now.
    #[cfg(test)]
    fn unacknowledged(&self) -> usize {
        self.unacked.len()
    }

    /// The spool grew or the mode changed: queued once however often it changes before it is
    /// written.
    pub fn progress(&mut self, progress: Progress) {
        self.progress = Some(progress);
        self.queue_progress();
    }

    /// The child stopped taking its input, or took it again: sent with the progress.
    pub fn input_blocked(&mut self, blocked: bool) {
        self.input_blocked = blocked;
        if self.progress.is_some() {
            self.queue_progress();
        }
    }

    /// The progress to report: the tap's, with whether the input is blocked and how many
    /// turns were let go unacknowledged.
    fn current_progress(&self) -> Option<Progress> {
        self.progress.clone().map(|progress| Progress {
            input_blocked: self.input_blocked,
            unkept_turns: self.unkept,
            ..progress
        })
    }

    fn queue_progress(&mut self) {
        let queued = self
            .queue
            .as_ref()
            .is_some_and(|q| q.iter().any(|p| matches!(p, Pending::Progress)));
        if !queued {
            let _ = self.push(Pending::Progress);
        }
    }

    /// The child turned bracketed paste on or off.
    pub fn bracketed_paste(&mut self, enabled: bool) {
        self.info.bracketed_paste = enabled;
        if let Some(queue) = &mut self.queue {
            // Only the latest state matters.
            queue.retain(|p| !matches!(p, Pending::BracketedPaste(_)));
        }
        let _ = self.push(Pending::BracketedPaste(enabled));
    }

    /// The screen the broker asked for: queued if connected (a request of a connection that has
    /// gone is answered on no other).
    pub fn screen(&mut self, request: u64, screen: ScreenData) {
        let _ = self.push(Pending::Screen(request, Box::new(screen)));
    }

    /// The report on the broker's `answer_request`: queued if connected, behind the progress
    /// that says the wait is answered.
    pub fn answer(&mut self, report: crate::tap::AnswerReport) {
        let _ = self.push(Pending::Answer(report));
    }

    /// The session ended (its command as `exit` says): the goodbye is queued if connected (or
    /// once the connection being made is), and no reconnection follows.
    pub fn end(&mut self, exit: ExitReport) {
        self.ending = Some(exit);
        if self.queue.is_none() && !self.connecting {
            self.finished = true;
        }
        let _ = self.push(Pending::Deregister(exit));
    }

    /// The link thread starts connecting (and registering).
    pub fn connecting(&mut self) {
        self.connecting = true;
    }

    /// The connection being made failed: a session that ended meanwhile has nobody to say
    /// goodbye to.
    pub fn connect_failed(&mut self) {
        self.connecting = false;
        if self.queue.is_none() && self.ending.is_some() {
            self.finished = true;
        }
    }

    /// Whether the goodbye is written (or could not be).
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// The goodbye [`Next::Write`] gave is written.
    pub fn goodbye_written(&mut self) {
        self.finished = true;
    }

    fn push(&mut self, pending: Pending) -> Result<(), Overflow> {
        if !self.push_unchecked(pending) {
            return Ok(());
        }
        // Up to HELD_TURNS unsent turns cost nothing: they are kept for a replay anyway.
        let turns = self.unsent_turns - self.resent_turns;
        let bytes = self.unsent_bytes - self.resent_bytes;
        if turns > HELD_TURNS && (turns > UNSENT_TURNS || bytes > UNSENT_BYTES) {
            self.disconnected();
            return Err(Overflow);
        }
        Ok(())
    }

    /// Queues `pending` if connected (`false` if not), counting what is unsent.
    fn push_unchecked(&mut self, pending: Pending) -> bool {
        let Some(queue) = &mut self.queue else {
            return false;
        };
        if let Pending::Turn(turn, resent) = &pending {
            self.unsent_turns += 1;
            self.unsent_bytes += turn_bytes(turn);
            if *resent {
                self.resent_turns += 1;
                self.resent_bytes += turn_bytes(turn);
            }
        }
        queue.push_back(pending);
        true
    }

    /// Queues a turn sent again: it does not count towards giving the connection up.
    fn push_resent(&mut self, turn: Arc<TurnData>) {
        self.push_unchecked(Pending::Turn(turn, true));
    }

    /// What to send in `register` on a new connection: the session and its progress so far.
    pub fn registration(&self) -> (SessionInfo, Option<Progress>) {
        let progress = self.current_progress().map(|progress| Progress {
            announced_turns: self.written_turns,
            ..progress
        });
        (self.info.clone(), progress)
    }

    /// A new connection registered with `registered` (from [`Outbox::registration`]): queues
    /// every turn not acknowledged yet and the newest [`HELD_TURNS`] (in seq order, each once),
    /// and whatever changed since the registration was taken.
    pub fn connected(&mut self, registered: &(SessionInfo, Option<Progress>)) {
        self.queue = Some(VecDeque::new());
        self.unsent_turns = 0;
        self.unsent_bytes = 0;
        self.resent_turns = 0;
        self.resent_bytes = 0;
        let mut again: Vec<Arc<TurnData>> =
            self.unacked.iter().chain(&self.recent).cloned().collect();
        again.sort_by_key(|t| t.seq);
        again.dedup_by_key(|t| t.seq);
        for turn in again {
            self.push_resent(turn);
        }
        let registered_progress = registered.1.clone().map(|progress| Progress {
            announced_turns: 0,
            ..progress
        });
        if self.current_progress() != registered_progress {
            let _ = self.push(Pending::Progress);
        }
        if self.info.bracketed_paste != registered.0.bracketed_paste {
            let _ = self.push(Pending::BracketedPaste(self.info.bracketed_paste));
        }
        self.connecting = false;
        // The session ended while this connection was being made: its goodbye goes last.
        if let Some(exit) = self.ending {
            let _ = self.push(Pending::Deregister(exit));
        }
    }

    /// The connection is gone: nothing more is written to it.
    pub fn disconnected(&mut self) {
        self.queue = None;
        self.unsent_turns = 0;
        self.unsent_bytes = 0;
        self.resent_turns = 0;
        self.resent_bytes = 0;
        if self.ending.is_some() {
            self.finished = true;
        }
    }

    /// The next thing to do.
    // Not an iterator: waiting and connecting are steps, not the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Next {
        if self.finished {
            return Next::Finished;
        }
        let Some(queue) = &mut self.queue else {
            return Next::Connect;
        };
        let Some(pending) = queue.pop_front() else {
            return Next::Wait;
        };
        let session = self.info.session.clone();
        // Ids only need to be non-zero: the replies are read and dropped by the reader thread.
        let id = 1;
        Next::Write(Box::new(match pending {
            Pending::Turn(turn, resent) => {
                self.written_turns = self.written_turns.max(turn.seq);
                self.unsent_turns -= 1;
                self.unsent_bytes -= turn_bytes(&turn);
                if resent {
                    self.resent_turns -= 1;
                    self.resent_bytes -= turn_bytes(&turn);
                }
                Message::TurnCompleted {
                    id,
                    session,
                    turn: Arc::unwrap_or_clone(turn),
                }
            }
            Pending::Progress => Message::Progress {
                id,
                session,
                progress: self.current_progress().unwrap_or_default(),
            },
            Pending::BracketedPaste(enabled) => Message::BracketedPaste {
                id,
                session,
                enabled,
            },
            Pending::Screen(request, screen) => Message::ScreenReport {
                id,
                session,
                request,
                screen: *screen,
            },
            Pending::Answer(report) => Message::AnswerReport {
                id,
                session,
                request: report.request,
                waiting_id: report.waiting_id,
                refused: report.refused,
                message: report.message,
            },
            Pending::Deregister(exit) => Message::Deregister {
                id,
                session,
                exit_code: exit.exit_code,
                signal: exit.signal,
            },
        }))
    }
}

/// The line the readiness pipe of `clippy-ctl spawn` (`--ready-fd`) is told once the broker
/// acknowledged the session's registration: `ready <session-id>`.
pub fn ready_line(session: &str) -> String {
    format!("ready {session}\n")
}

/// The line the readiness pipe is told when the session cannot register: `error <message>`, on
/// one line (control characters become spaces).
///
/// ```
/// assert_eq!(clippy_wrapper::link::failed_line("two\nlines\r"), "error two lines \n");
/// ```
pub fn failed_line(message: &str) -> String {
    let message: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("error {message}\n")
}

/// The turn as the broker is told it (`turn_completed`): the detector's turn, its text view
/// (rendered off the tap's thread), its span in the spool and when it completed (Unix ms). An
/// empty input is told as none.
pub fn turn_data(
    turn: clippy_turn::Turn,
    text: String,
    spool_span: Option<(u64, u64)>,
    timestamp: u64,
) -> TurnData {
    TurnData {
        seq: turn.seq,
        timestamp,
        content: turn.content,
        text,
        interrupted: turn.interrupted,
        truncated: turn.truncated,
        exit_code: turn.exit_code,
        cwd: turn.cwd,
        input: Some(turn.input).filter(|i| !i.is_empty()),
        spool_span,
        message: turn.message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> SessionInfo {
        SessionInfo {
            session: "s1".into(),
            name: None,
            pid: 7,
            command: vec!["bash".into()],
            preset: "shell".into(),
            bracketed_paste: false,
            spool: None,
            cwd: None,
            no_history: false,
        }
    }

    fn turn(seq: u64, bytes: usize) -> TurnData {
        TurnData {
            seq,
            timestamp: 0,
            content: vec![b'x'; bytes],
            text: String::new(),
            interrupted: false,
            truncated: false,
            exit_code: None,
            cwd: None,
            input: None,
            spool_span: None,
            message: None,
        }
    }

    fn progress(spool_size: u64) -> Progress {
        Progress {
            spool_size,
            ..Progress::default()
        }
    }

    /// Connects the outbox with its current registration.
    fn connect(outbox: &mut Outbox) -> (SessionInfo, Option<Progress>) {
        let registration = outbox.registration();
        outbox.connected(&registration);
        registration
    }

    /// What the outbox writes until it has nothing more, in short form.
    fn drain(outbox: &mut Outbox) -> Vec<String> {
        let mut out = Vec::new();
        while let Next::Write(message) = outbox.next() {
            out.push(match *message {
                Message::TurnCompleted { turn, .. } => format!("turn {}", turn.seq),
                Message::Progress { progress, .. } => format!("progress {}", progress.spool_size),
                Message::BracketedPaste { enabled, .. } => format!("bracketed {enabled}"),
                Message::Deregister {
                    exit_code, signal, ..
                } => format!("deregister {exit_code:?} {signal:?}"),
                Message::ScreenReport { request, .. } => format!("screen {request}"),
                other => format!("{other:?}"),
            });
        }
        out
    }

    #[test]
    fn while_disconnected_turns_are_held_and_replayed_after_the_registration() {
        let mut outbox = Outbox::new(info());
        assert_eq!(outbox.next(), Next::Connect);
        for seq in 1..=40 {
            assert_eq!(outbox.turn(turn(seq, 10)), Ok(()));
        }
        outbox.progress(progress(500));
        outbox.bracketed_paste(true);
        assert_eq!(outbox.next(), Next::Connect);

        let (info, progress) = connect(&mut outbox);
        // The registration carries what changed while disconnected.
        assert!(info.bracketed_paste);
        assert_eq!(progress.map(|p| p.spool_size), Some(500));
        // Then every turn not acknowledged, oldest first, and nothing else.
        let want: Vec<String> = (1..=40).map(|seq| format!("turn {seq}")).collect();
        assert_eq!(drain(&mut outbox), want);
        assert_eq!(outbox.next(), Next::Wait);
    }

    #[test]
    fn what_changes_between_the_registration_and_the_connection_is_sent_after_it() {
        let mut outbox = Outbox::new(info());
        outbox.progress(progress(1));
        let registration = outbox.registration();
        outbox.progress(progress(2));
        outbox.bracketed_paste(true);
        outbox.connected(&registration);
        assert_eq!(drain(&mut outbox), ["progress 2", "bracketed true"]);
    }

    #[test]
    fn progress_queued_behind_a_slow_write_collapses_into_the_latest() {
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        outbox.progress(progress(1));
        assert_eq!(outbox.turn(turn(1, 10)), Ok(()));
        outbox.progress(progress(2));
        outbox.progress(progress(3));
        outbox.bracketed_paste(true);
        outbox.bracketed_paste(false);
        assert_eq!(
            drain(&mut outbox),
            ["progress 3", "turn 1", "bracketed false"]
        );
        outbox.progress(progress(4));
        assert_eq!(drain(&mut outbox), ["progress 4"]);
    }

    #[test]
    fn a_broker_too_far_behind_is_dropped_and_the_next_connection_sends_every_kept_turn() {
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        for seq in 1..=UNSENT_TURNS as u64 {
            assert_eq!(outbox.turn(turn(seq, 1)), Ok(()));
        }
        assert_eq!(outbox.turn(turn(1025, 1)), Err(Overflow));
        assert_eq!(outbox.next(), Next::Connect);
        connect(&mut outbox);
        // Every turn, none acknowledged; a replay this long is no overflow…
        assert_eq!(outbox.turn(turn(1026, 1)), Ok(()));
        assert_eq!(drain(&mut outbox).len(), 1026);

        // The byte bound too, once the unsent turns are more than HELD_TURNS.
        for seq in 1..=1026 {
            outbox.acknowledged(seq);
        }
        let big = UNSENT_BYTES / HELD_TURNS + 1;
        for seq in 2000..2000 + HELD_TURNS as u64 {
            assert_eq!(outbox.turn(turn(seq, big)), Ok(()));
        }
        assert_eq!(outbox.turn(turn(3000, big)), Err(Overflow));
        // A replay over the byte bound is no overflow…
        connect(&mut outbox);
        assert!(matches!(outbox.next(), Next::Write(_)));
        // …and written turns no longer count.
        assert_eq!(outbox.turn(turn(3001, big)), Ok(()));
        assert_eq!(drain(&mut outbox).len(), HELD_TURNS + 1);
    }

    #[test]
    fn acknowledged_turns_are_let_go_and_every_other_is_sent_again_on_a_new_connection() {
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        for seq in 1..=100 {
            assert_eq!(outbox.turn(turn(seq, 10)), Ok(()));
        }
        assert_eq!(drain(&mut outbox).len(), 100);
        // Acknowledged out of order (a re-sent turn's acknowledgement comes later), one twice,
        // one never sent.
        for seq in (1..=100).filter(|s| s % 3 != 0) {
            outbox.acknowledged(seq);
        }
        outbox.acknowledged(1);
        outbox.acknowledged(500);
        assert_eq!(outbox.unacknowledged(), 33);
        outbox.disconnected();
        connect(&mut outbox);
        // Every unacknowledged turn, and the newest HELD_TURNS however acknowledged.
        let want: Vec<String> = (1..=100)
            .filter(|s| s % 3 == 0 || *s > 100 - HELD_TURNS as u64)
            .map(|seq| format!("turn {seq}"))
            .collect();
        assert_eq!(drain(&mut outbox), want);
    }

    #[test]
    fn turns_asked_for_again_are_the_kept_ones_in_the_range_queued_once() {
        let mut outbox = Outbox::new(info());
        // Not connected: nobody asked.
        outbox.resend(1, 10);
        connect(&mut outbox);
        for seq in 1..=10 {
            assert_eq!(outbox.turn(turn(seq, 10)), Ok(()));
        }
        assert_eq!(drain(&mut outbox).len(), 10);
        outbox.acknowledged(4);
        outbox.acknowledged(5);
        // 9 and 10 not written yet when the request comes: queued once.
        assert_eq!(outbox.turn(turn(11, 10)), Ok(()));
        outbox.resend(3, 7);
        outbox.resend(11, 11);
        assert_eq!(
            drain(&mut outbox),
            ["turn 11", "turn 3", "turn 6", "turn 7"]
        );
        // Still kept until acknowledged: asked again, sent again.
        outbox.resend(1, 2);
        assert_eq!(drain(&mut outbox), ["turn 1", "turn 2"]);
        // Many asked for again are no overflow.
        for seq in 12..=2000 {
            outbox
                .turn(turn(seq, 1))
                .expect("no overflow while written");
            let _ = outbox.next();
        }
        outbox.resend(1, 2000);
        assert_eq!(outbox.turn(turn(2001, 1)), Ok(()));
        assert_eq!(drain(&mut outbox).len(), 1999);
    }

    #[test]
    fn past_the_bound_the_oldest_unacknowledged_turn_goes_and_the_progress_says_so() {
        let mut outbox = Outbox::new(info());
        outbox.progress(progress(1));
        connect(&mut outbox);
        assert_eq!(drain(&mut outbox), Vec::<String>::new());
        for seq in 1..=KEEP_TURNS as u64 {
            assert_eq!(outbox.turn(turn(seq, 1)), Ok(()));
            let _ = outbox.next();
        }
        assert_eq!(outbox.registration().1.map(|p| p.unkept_turns), Some(0));
        assert_eq!(outbox.turn(turn(5000, 1)), Ok(()));
        assert_eq!(outbox.unacknowledged(), KEEP_TURNS);
        let Next::Write(message) = outbox.next() else {
            panic!("the turn");
        };
        assert!(matches!(*message, Message::TurnCompleted { ref turn, .. } if turn.seq == 5000));
        let Next::Write(message) = outbox.next() else {
            panic!("a progress is queued");
        };
        assert!(
            matches!(*message, Message::Progress { ref progress, .. } if progress.unkept_turns == 1),
            "{message:?}"
        );
        // Turn 1 went; 2 is the oldest kept.
        outbox.disconnected();
        connect(&mut outbox);
        assert_eq!(
            drain(&mut outbox).first().map(String::as_str),
            Some("turn 2")
        );

        // The byte bound: a turn larger than it is kept alone.
        let mut outbox = Outbox::new(info());
        outbox.progress(progress(1));
        assert_eq!(outbox.turn(turn(1, KEEP_BYTES / 2 + 1)), Ok(()));
        assert_eq!(outbox.turn(turn(2, KEEP_BYTES / 2 + 1)), Ok(()));
        assert_eq!(outbox.unacknowledged(), 1);
        assert_eq!(outbox.registration().1.map(|p| p.unkept_turns), Some(1));
        assert_eq!(outbox.turn(turn(3, KEEP_BYTES + 1)), Ok(()));
        assert_eq!(outbox.unacknowledged(), 1);
    }

    #[test]
    fn acknowledgements_and_requests_to_send_again_are_for_the_outbox() {
        let recorded = Message::TurnRecorded {
            id: 1,
            turn_id: "s1:42".into(),
        };
        assert_eq!(to_outbox(&recorded), Some(ToOutbox::Recorded(42)));
        let resend = Message::ResendTurns {
            id: 0,
            session: "s1".into(),
            from: 3,
            to: 9,
        };
        assert_eq!(to_outbox(&resend), Some(ToOutbox::Resend(3, 9)));
        assert_eq!(to_outbox(&Message::Done { id: 1 }), None);
    }

    #[test]
    fn an_earlier_connections_acknowledgement_counts_and_its_request_to_send_again_does_not() {
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        for seq in 1..=3 {
            assert_eq!(outbox.turn(turn(seq, 10)), Ok(()));
        }
        assert_eq!(drain(&mut outbox).len(), 3);
        outbox.take(ToOutbox::Recorded(1), false);
        assert_eq!(outbox.unacknowledged(), 2);
        outbox.take(ToOutbox::Resend(1, 3), false);
        assert_eq!(drain(&mut outbox), Vec::<String>::new());
        outbox.take(ToOutbox::Resend(1, 3), true);
        assert_eq!(drain(&mut outbox), ["turn 2", "turn 3"]);
    }

    #[test]
    fn blocked_input_goes_out_with_the_latest_progress_and_in_the_registration() {
        let mut outbox = Outbox::new(info());
        // Nothing to say before the first progress.
        outbox.input_blocked(true);
        outbox.progress(progress(10));
        assert_eq!(outbox.registration().1.map(|p| p.input_blocked), Some(true));
        connect(&mut outbox);
        assert_eq!(drain(&mut outbox), Vec::<String>::new());
        outbox.input_blocked(false);
        let Next::Write(message) = outbox.next() else {
            panic!("a progress is queued");
        };
        assert!(matches!(
            *message,
            Message::Progress { ref progress, .. }
                if !progress.input_blocked && progress.spool_size == 10
        ));
    }

    #[test]
    fn a_screen_goes_out_in_order_on_the_connection_that_asked_and_is_never_replayed() {
        let mut outbox = Outbox::new(info());
        // No connection: nobody to answer.
        outbox.screen(1, ScreenData::default());
        connect(&mut outbox);
        assert_eq!(drain(&mut outbox), Vec::<String>::new());
        assert_eq!(outbox.turn(turn(1, 1)), Ok(()));
        outbox.screen(2, ScreenData::default());
        outbox.progress(progress(5));
        assert_eq!(drain(&mut outbox), ["turn 1", "screen 2", "progress 5"]);
        outbox.screen(3, ScreenData::default());
        outbox.disconnected();
        connect(&mut outbox);
        assert_eq!(
            drain(&mut outbox),
            ["turn 1"],
            "only the kept turns are sent again"
        );
    }

    #[test]
    fn the_goodbye_is_written_last_and_then_the_link_is_finished() {
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        assert_eq!(outbox.turn(turn(1, 1)), Ok(()));
        outbox.end(ExitReport {
            exit_code: Some(3),
            signal: None,
        });
        assert!(!outbox.finished());
        assert_eq!(drain(&mut outbox), ["turn 1", "deregister Some(3) None"]);
        assert!(!outbox.finished(), "finished before the goodbye is written");
        outbox.goodbye_written();
        assert_eq!(outbox.next(), Next::Finished);

        // Without a connection there is nobody to say goodbye to.
        let mut outbox = Outbox::new(info());
        outbox.end(ExitReport::default());
        assert_eq!(outbox.next(), Next::Finished);

        // A connection lost before the goodbye was written finishes the link too.
        let mut outbox = Outbox::new(info());
        connect(&mut outbox);
        outbox.end(ExitReport::default());
        outbox.disconnected();
        assert_eq!(outbox.next(), Next::Finished);
    }

    #[test]
    fn a_session_that_ends_while_its_link_registers_says_goodbye_on_that_connection() {
        let exit = ExitReport {
            exit_code: Some(3),
            signal: None,
        };
        let mut outbox = Outbox::new(info());
        outbox.connecting();
        outbox.end(exit);
        assert!(
            !outbox.finished(),
            "the connection being made takes the goodbye"
        );
        connect(&mut outbox);
        assert_eq!(drain(&mut outbox), ["deregister Some(3) None"]);
        outbox.goodbye_written();
        assert_eq!(outbox.next(), Next::Finished);

        // The connection could not be made: nobody to say goodbye to.
        let mut outbox = Outbox::new(info());
        outbox.connecting();
        outbox.end(exit);
        outbox.connect_failed();
        assert_eq!(outbox.next(), Next::Finished);
    }

    #[test]
    fn only_the_brokers_commands_are_passed_on() {
        let inject = Message::Inject {
            id: 0,
            session: "s1".into(),
            data: b"ls\r".to_vec(),
        };
        assert!(matches!(command_of(inject), Some(FromBroker::Inject(data)) if data == b"ls\r"));
        assert!(matches!(
            command_of(Message::Terminate {
                id: 0,
                session: "s1".into()
            }),
            Some(FromBroker::Terminate)
        ));
        assert!(matches!(
            command_of(Message::ScreenRequest {
                id: 0,
                session: "s1".into(),
                request: 4,
                history: 10
            }),
            Some(FromBroker::Screen {
                request: 4,
                history: 10
            })
        ));
        assert!(command_of(Message::Done { id: 1 }).is_none());
    }

    #[test]
    fn the_ready_pipe_is_told_one_line() {
        assert_eq!(ready_line("k3f9a2"), "ready k3f9a2\n");
        assert_eq!(failed_line("two\nlines\r"), "error two lines \n");
        assert_eq!(failed_line("plain"), "error plain\n");
    }

    /// The turns a python REPL gives for `inputs`, each submitted at a prompt.
    fn python_turns(inputs: &[&[u8]]) -> Vec<clippy_turn::Turn> {
        use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
        let preset = Preset::named("python").expect("a preset");
        let mut detector = TurnDetector::new(DetectorConfig::new(preset));
        detector.feed_output(b"Python 3\r\n>>> ").for_each(drop);
        let mut turns = Vec::new();
        for input in inputs {
            detector.feed_input(input).for_each(drop);
            detector.feed_output(b"\r\n42\r\n>>> ").for_each(|event| {
                if let Event::TurnCompleted(turn) = event {
                    turns.push(turn);
                }
            });
        }
        turns
    }

    #[test]
    fn a_turn_is_told_with_its_text_span_and_time_and_an_empty_input_as_none() {
        let turns = python_turns(&[b"6*7\r", b"\r"]);
        let [typed, empty] = &turns[..] else {
            panic!("{turns:?}")
        };
        let data = turn_data(typed.clone(), "42".into(), Some((16, 20)), 99);
        assert_eq!(data.input.as_deref(), Some("6*7"));
        assert_eq!(
            (
                data.seq,
                data.text.as_str(),
                data.spool_span,
                data.timestamp
            ),
            (1, "42", Some((16, 20)), 99)
        );
        assert_eq!(data.content, typed.content);
        assert!(empty.input.is_empty(), "{empty:?}");
        assert_eq!(turn_data(empty.clone(), String::new(), None, 0).input, None);
    }
}
