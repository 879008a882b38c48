//! The broker's turn registry (CONTRACT_REGISTRY): per-session rings of completed turns
//! addressed by [`TurnId`]s, the [`RelayBuffer`] that holds the captured turn, and the [`Sink`]s
//! a turn can be delivered to.
//!
//! ```
//! use clippy_registry::{Format, Registry, RelayBuffer, TurnId, TurnRecord, inject_payload};
//!
//! let mut registry = Registry::default(); // 32 turns per session, 4 MiB per turn
//! registry.add_session("s1")?;
//! registry.add_session("s2")?;
//!
//! // The wrapper of s1 reports its first turn; seqs come from the wrapper.
//! let record = TurnRecord::new(TurnId::new("s1", 1)?, 1_700_000_000_000, &b"\x1b[1mdone\x1b[0m\n"[..], "done\n");
//! let id = registry.insert(record)?.into_turn_id();
//! assert_eq!(id.to_string(), "s1:1");
//!
//! // Capture it, then paste its text into s2, which has bracketed paste on.
//! let mut relay = RelayBuffer::new();
//! relay.capture(registry.get(&id)?);
//! let captured = relay.get().expect("just captured");
//! let bytes = inject_payload(Format::Text.select(captured), true);
//! assert_eq!(bytes, b"\x1b[200~done\n\x1b[201~");
//! # Ok::<(), clippy_registry::RegistryError>(())
//! ```
//!
//! Why it is shaped like this: the broker's request handling is a pure state machine, so
//! everything here but [`FileSink`] is sans-I/O — no clock (timestamps arrive with each record),
//! no sockets, no threads. [`InjectSink`] builds the bytes for a PTY and hands them to a function
//! the broker supplies. Turn content is reference-counted, so listing turns, capturing one and
//! delivering it never copy the bytes; only the registry's size limit copies (a cut prefix).
//! Seqs are assigned by the wrappers, not here, so turn IDs stay stable across broker restarts;
//! the registry keeps the highest seq per session and ignores re-sent turns.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod config;
mod error;
mod format;
mod id;
mod record;
mod registry;
mod relay;
mod sink;

pub use config::{DEFAULT_MAX_TURN_BYTES, DEFAULT_RING_DEPTH, RegistryConfig};
pub use error::{RegistryError, SinkError};
pub use format::Format;
pub use id::TurnId;
pub use record::{TurnMeta, TurnRecord};
pub use registry::{InsertOutcome, Registry, Turns};
pub use relay::RelayBuffer;
pub use sink::{
    CLIPBOARD_SINK, FILE_SINK, FileSink, INJECT_SINK, InjectSink, PASTE_END, PASTE_START, Sink,
    inject_payload,
};
