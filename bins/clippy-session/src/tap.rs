//! The tap: turn detection and the spool, on their own thread (the spool written in batches).
//!
//! The thread runs a [`TapModel`] (`clippy_wrapper::tap`: the detector, the spool's batches,
//! the session's [`clippy_proto::Progress`], the quiet and agreement deadlines), reading the
//! clock for it and sending what it returns: progress, turns and screens to the sink thread,
//! redraws and a terminal's answers back to the byte loop. After every spool write it reports
//! the progress whenever that changed, so the broker can serve reads and wake the waits parked
//! on this session without polling the file.
//!
//! The byte-moving loop hands each chunk of output and input here through a bounded channel,
//! in the order they happened, and goes straight back to moving bytes: forwarding never waits
//! on detection or on the spool (SPEC §11). The channel holds up to `CAPACITY` chunks (output
//! goes in batches of about 32 KiB under a flood, so some 8 MiB); only if detection fell that far
//! behind would the loop wait, which bounds memory whatever the child writes, however far a
//! saturated machine lets detection fall behind.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;

use clippy_spool::SpoolWriter;
use clippy_turn::TurnDetector;
use clippy_wrapper::handover::is_flood_buffer;
use clippy_wrapper::tap::{Now, Spool, TapModel, TapOutput};

pub use clippy_wrapper::tap::Tapped;

use crate::sink::{Events, SessionEvent};

/// Chunks the channel holds before the loop has to wait.
const CAPACITY: usize = 256;

/// What the tap hands back to the byte loop.
#[derive(Debug)]
pub enum FromTap {
    /// The screen rendered for an attached client.
    Redrawn {
        client: u64,
        generation: u64,
        screen: Vec<u8>,
    },
    /// What a terminal would have answered the program's queries (cursor position, device
    /// attributes, …): written to it when nobody's terminal answers them (a detached session
    /// with no interactive client).
    TerminalReplies(Vec<u8>),
    /// Write these keys to answer the dialog on screen if exactly `human_inputs` chunks of a
    /// person's input were handed to the tap so far, and tell the tap whether they were.
    AnswerKeys {
        request: u64,
        keys: Vec<u8>,
        human_inputs: u64,
    },
    /// Type this at the agent's prompt, as injected input.
    Type(Vec<u8>),
}

/// The tap's way back to the loop: a channel, and the loop's waker; and the flood buffers it
/// took, given back without waking the loop (`clippy_wrapper::handover`).
pub struct ToLoop {
    pub tx: std::sync::mpsc::Sender<FromTap>,
    pub waker: std::sync::Arc<mio::Waker>,
    pub spares: std::sync::mpsc::Sender<Vec<u8>>,
}

impl ToLoop {
    fn send(&self, message: FromTap) {
        // Gone only when the loop is, and then nobody needs it.
        if self.tx.send(message).is_ok() {
            let _ = self.waker.wake();
        }
    }
}

/// The loop's end of the tap.
pub struct Tap {
    tx: SyncSender<Tapped>,
    thread: JoinHandle<SpoolWriter>,
}

impl Tap {
    /// Starts the tap thread, which owns the detector and the spool and reports to `events`;
    /// `hooks_wired`: the agent's hooks were wired for this run.
    pub fn start(
        detector: TurnDetector,
        spool: SpoolWriter,
        events: Events,
        to_loop: ToLoop,
        hooks_wired: bool,
    ) -> std::io::Result<Self> {
        let (tx, rx) = sync_channel(CAPACITY);
        let thread = std::thread::Builder::new()
            .name("clippy-session-tap".into())
            .spawn(move || {
                clippy_pty::lower_this_thread(NICE);
                let model = TapModel::new(detector, SpoolFile(spool), hooks_wired);
                run(rx, model, &events, &to_loop)
            })?;
        Ok(Self { tx, thread })
    }

    /// Hands a copy of some bytes or a resize to the tap.
    pub fn send(&self, tapped: Tapped) {
        // The tap only ends when this side is dropped, so a failed send cannot happen while the
        // loop runs; if the thread panicked, detection is lost but the session goes on.
        let _ = self.tx.send(tapped);
    }

    /// Lets the tap finish what it was given and returns the spool.
    pub fn finish(self) -> Option<SpoolWriter> {
        drop(self.tx);
        self.thread.join().ok()
    }
}

/// The tap's scheduling priority (nice), above the byte loop's and the broker's: on a machine
/// saturated by many busy sessions, the CPU goes first to moving bytes and to the broker that
/// serves everyone, and detection catches up behind them (its channel is bounded, so it never
/// falls more than [`CAPACITY`] chunks behind).
const NICE: i32 = 5;

/// The spool file, as the model writes it.
struct SpoolFile(SpoolWriter);

impl Spool for SpoolFile {
    type Error = clippy_spool::SpoolError;

    fn append(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
        self.0.append(bytes)
    }

    fn size(&self) -> u64 {
        self.0.len()
    }

    fn spool_offset_of(&self, raw_offset: u64) -> Option<u64> {
        self.0.spool_offset_of(raw_offset)
    }
}

/// The clocks, read now.
fn now() -> Now {
    Now {
        instant: Instant::now(),
        unix_ms: clippy_proto::unix_ms_now(),
    }
}

fn run(
    rx: Receiver<Tapped>,
    mut model: TapModel<SpoolFile>,
    events: &Events,
    to_loop: &ToLoop,
) -> SpoolWriter {
    let send = |outputs: Vec<TapOutput>| {
        for output in outputs {
            match output {
                TapOutput::Progress(progress) => events.send(SessionEvent::Progress(progress)),
                TapOutput::Turn {
                    turn,
                    spool_span,
                    timestamp,
                } => events.send(SessionEvent::Turn {
                    turn,
                    spool_span,
                    timestamp,
                }),
                TapOutput::BracketedPaste(enabled) => {
                    events.send(SessionEvent::BracketedPaste(enabled));
                }
                TapOutput::Screen { request, screen } => {
                    events.send(SessionEvent::Screen { request, screen });
                }
                TapOutput::SpoolFailed(why) => events.send(SessionEvent::SpoolFailed(why)),
                TapOutput::Redrawn {
                    client,
                    generation,
                    screen,
                } => to_loop.send(FromTap::Redrawn {
                    client,
                    generation,
                    screen,
                }),
                TapOutput::TerminalReplies(replies) => {
                    to_loop.send(FromTap::TerminalReplies(replies));
                }
                TapOutput::AnswerKeys {
                    request,
                    keys,
                    human_inputs,
                } => to_loop.send(FromTap::AnswerKeys {
                    request,
                    keys,
                    human_inputs,
                }),
                TapOutput::Type(keys) => to_loop.send(FromTap::Type(keys)),
                TapOutput::Answer(report) => events.send(SessionEvent::Answer(report)),
            }
        }
    };
    loop {
        send(model.expire(now()));
        let tapped = match rx.try_recv() {
            Ok(tapped) => tapped,
            Err(TryRecvError::Empty) => {
                // Caught up: the model writes the spool, reports, renders in steps.
                let idle = model.caught_up(now());
                send(idle.outputs);
                if idle.more {
                    continue;
                }
                let next = match idle.wake_at {
                    Some(at) => rx.recv_timeout(at.saturating_duration_since(Instant::now())),
                    None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                };
                match next {
                    Ok(tapped) => tapped,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            Err(TryRecvError::Disconnected) => break,
        };
        match tapped {
            Tapped::Output(bytes) => {
                send(model.take_output(&bytes, now()));
                if is_flood_buffer(&bytes) {
                    // A flood buffer, to fill again (gone only when the loop is).
                    let _ = to_loop.spares.send(bytes);
                }
            }
            tapped => send(model.take(tapped, now())),
        }
    }
    let (spool, outputs) = model.finish();
    send(outputs);
    spool.0
}
