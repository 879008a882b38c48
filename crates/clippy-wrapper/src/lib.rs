//! The wrapper's rules, with no I/O: what `clippy-session` decides, fed events and the time,
//! returning what to send. The binary keeps the byte loop, the threads, the sockets, the files
//! and the clocks.
//!
//! - [`tap`]: the tap thread's model of a session — the turn detector, the spool's batches,
//!   the session's progress and waiting state, output going quiet and turns waiting for their
//!   two sources to agree, with the clock passed in ([`tap::Now`]).
//! - [`link`]: the broker link's [`link::Outbox`] — what the broker still has to be told, in
//!   order, what is held for a new connection, when the broker counts as gone.
//! - [`InputBacklog`]: injected input on its way to the child, which blocks the broker's
//!   injections past [`clippy_proto::INPUT_BACKLOG_LIMIT`].
//! - [`asciicast`] and [`replay`]: `--replay`, a recording read and fed to the detector as the
//!   live tap feeds it.
//! - [`session_id`]: session IDs from the time.
//! - [`submit`]: the broker's injections in order, an Enter that submits injected text
//!   written no sooner than the submit delay after the wrapper wrote the text.
//!
//! The tap's model, driven as the tap thread drives it:
//!
//! ```
//! use std::time::{Duration, Instant};
//! use clippy_turn::{DetectorConfig, Preset, TurnDetector};
//! use clippy_wrapper::tap::{Now, Spool, TapModel, TapOutput, Tapped};
//!
//! struct Memory(Vec<u8>);
//! impl Spool for Memory {
//!     type Error = std::convert::Infallible;
//!     fn append(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
//!         self.0.extend_from_slice(bytes);
//!         Ok(())
//!     }
//!     fn size(&self) -> u64 { self.0.len() as u64 }
//!     fn spool_offset_of(&self, raw: u64) -> Option<u64> { Some(raw) }
//! }
//!
//! let detector = TurnDetector::new(DetectorConfig::new(Preset::named("shell")?));
//! let mut tap = TapModel::new(detector, Memory(Vec::new()), false);
//! let now = Now { instant: Instant::now(), unix_ms: 1_795_830_000_000 };
//! tap.take(Tapped::Output(b"$ ".to_vec()), now);
//! // Caught up with the byte loop: the progress so far.
//! let idle = tap.caught_up(now);
//! assert!(matches!(&idle.outputs[..], [TapOutput::Progress(p)] if p.spool_size == 2 && p.prompts == 1));
//! tap.take(Tapped::Input { bytes: b"ls\r".to_vec(), human: true }, now);
//! let sent = tap.take(Tapped::Output(b"ls\r\nfile\r\n$ ".to_vec()), now);
//! // The broker hears of the spool's growth first, then of the turn.
//! assert!(matches!(&sent[0], TapOutput::Progress(p) if p.spool_size == 14 && p.keystrokes == 1));
//! assert!(matches!(&sent[1], TapOutput::Turn { turn, spool_span: Some((6, 12)), .. } if turn.input == "ls"));
//! // Caught up: the state after the turn, and when to look again.
//! let idle = tap.caught_up(now);
//! assert!(matches!(&idle.outputs[..], [TapOutput::Progress(p)] if p.turns == 1 && p.prompts == 2));
//! assert!(idle.wake_at.is_some_and(|at| at > now.instant));
//! # Ok::<(), clippy_turn::TurnError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod asciicast;
pub mod dialog;
pub mod handover;
mod input_backlog;
pub mod link;
pub mod preset;
pub mod replay;
pub mod session_id;
pub mod shell_integration;
pub mod submit;
pub mod tap;

pub use asciicast::CastError;
pub use input_backlog::InputBacklog;
