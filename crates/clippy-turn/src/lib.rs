//! Turn detection for interactive terminal agents, with no I/O.
//!
//! A *turn* is what an agent prints between the input a user submitted and the agent's next
//! prompt. [`TurnDetector`] is a state machine in the style of the `vte` parser: feed it the
//! bytes the agent wrote to its terminal ([`TurnDetector::feed_output`]) and the bytes written to
//! the agent ([`TurnDetector::feed_input`]), in the order they happened, and it returns
//! [`Event`]s — [`Event::Ready`] at the first prompt, [`Event::Submitted`],
//! [`Event::TurnCompleted`] and [`Event::Prompt`]. It owns no sockets, files, clocks or threads,
//! so the same bytes always give the same turns, however they are chunked.
//!
//! What counts as a prompt is a [`Preset`]: signals the agent itself emits — a regex on the
//! ANSI-stripped line view, a regex on OSC payloads such as the window title, and a "still busy"
//! veto for TUIs that keep their input box on screen while they work. OSC 133 shell-integration
//! marks, when the stream carries them, are authoritative and carry exit codes. There are no
//! timeouts: a turn completes only when the agent shows its prompt again.
//!
//! ```
//! use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
//!
//! let preset = Preset::custom(r"^\$ $")?;
//! let mut detector = TurnDetector::new(DetectorConfig::new(preset));
//! let mut turns = Vec::new();
//! for (output, input) in [(&b"$ "[..], &b"echo hi\r"[..]), (b"echo hi\r\nhi\r\n$ ", b"")] {
//!     turns.extend(detector.feed_output(output).filter_map(|e| match e {
//!         Event::TurnCompleted(turn) => Some(turn),
//!         _ => None,
//!     }));
//!     detector.feed_input(input).for_each(drop);
//! }
//! assert_eq!(turns.len(), 1);
//! assert_eq!(turns[0].content, b"hi\r\n");
//! # Ok::<(), clippy_turn::TurnError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod agent;
mod detector;
mod error;
mod input;
mod line_view;
mod preset;
#[cfg(feature = "text")]
mod text;
mod turn;

pub use agent::{AgentHooks, AgentSignal};
#[cfg(feature = "text")]
pub use clippy_screen::Snapshot;
pub use detector::{DEFAULT_MAX_TURN_BYTES, DetectorConfig, Event, Phase, TurnDetector};
pub use error::TurnError;
pub use preset::{PRESETS, Preset, PresetSpec};
pub use turn::Turn;
