//! Terminals attached to a running session, with no I/O.
//!
//! A session's wrapper serves its `attach.sock`: any number of terminals (`clippy-ctl attach`)
//! see the program's output and type into it, and `clippy-ctl detach` lets them all go. This
//! crate holds the decisions, fed bytes and events and returning what to do, like `vte`:
//! - [`Hub`], the wrapper's side: each client's frames in, the program's output out to every
//!   client through a bounded outbox; the newest interactive client sets the session's size;
//!   a client that reads too slowly skips what it missed and, once it has read what it had
//!   begun to, gets the current screen instead, so it never slows the program.
//! - [`DetachKey`], the client's side: finds the detach key (default `Ctrl+\` then `d`) in
//!   what the person types; [`AlternateScreen`] follows whether its terminal shows the
//!   alternate screen, to restore it the right way.
//!
//! ```
//! use clippy_attach::{Hub, HubAction, Restore};
//! use clippy_proto::FrameDecoder;
//! use clippy_proto::attach::{AttachFrame, AttachMode, decode, encode_into};
//!
//! let restore = Restore { normal: b"\x1b[?25h", alternate: b"\x1b[?1049l\x1b[?25h" };
//! let mut hub = Hub::new("ab12", None, (80, 24), restore);
//! let client = hub.accept(true);
//! let mut hello = Vec::new();
//! encode_into(&AttachFrame::Hello { version: 1, mode: AttachMode::Interactive, cols: 100, rows: 30 }, &mut hello)?;
//! // The newest interactive client sets the size, then gets the screen drawn at that size.
//! let actions = hub.received(client, &hello);
//! assert_eq!(actions, [HubAction::Resize { cols: 100, rows: 30 }, HubAction::Redraw { client, generation: 1 }]);
//! hub.output(b"typed before the redraw\r\n");
//! assert_eq!(hub.redrawn(client, 1, b"\x1b[H\x1b[2J$ ".to_vec()), None);
//!
//! let mut decoder = FrameDecoder::default();
//! decoder.push(hub.unsent(client));
//! let mut frames = Vec::new();
//! while let Some(payload) = decoder.next_frame()? {
//!     frames.push(decode(&payload)?);
//! }
//! assert!(matches!(frames[0], AttachFrame::Welcome { cols: 100, rows: 30, .. }));
//! assert!(matches!(frames[1], AttachFrame::Redraw { skipped: 0, .. }));
//! assert_eq!(frames[2], AttachFrame::Output { data: b"typed before the redraw\r\n".to_vec() });
//! # Ok::<(), clippy_proto::ProtoError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod alternate;
mod detach_key;
mod hub;
mod outbox;

pub use alternate::AlternateScreen;
pub use detach_key::{DetachKey, DetachKeyError, DetachMatcher, Keys};
pub use hub::{ClientId, DEFAULT_OUTBOX_LIMIT, Hub, HubAction, Restore};
