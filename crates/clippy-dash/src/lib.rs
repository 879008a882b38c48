//! The dashboard of `clippy-ctl dash` (issue 31): every session at a glance, what needs a
//! person first, and one key to act.
//!
//! - [`App`]: the application state, sans-I/O. Fed [`Input`]s (broker events as the client
//!   layer delivers them, replies, keys, resizes, the broker coming and going) with the time
//!   they arrived; returns [`Action`]s (the requests to make, attach, the bell, quit). It says
//!   when something shown changed ([`App::changed`]) and when the shown time next needs a
//!   redraw ([`App::next_tick`]: only while a busy session's elapsed time is shown).
//! - [`render`]: draws the state with ratatui into any buffer (the tests use
//!   `ratatui::backend::TestBackend`).
//! - [`requests`]: each [`Action`] that is a request as its `clippy-client` call
//!   ([`Requests::serve`], run on the binary's thread), the [`Reply`] it makes, and the rules
//!   with no I/O: the label a failure gets ([`requests::failure`]), which failures drop the
//!   connection, which queued requests are made once.
//! - [`AnsiBackend`]: a ratatui backend that writes ANSI escape sequences, and
//!   [`KeyDecoder`]: a terminal's bytes as [`Key`]s — so no terminal library is linked; the
//!   binary owns the terminal (raw mode, size, signals).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod ansi;
mod app;
mod keys;
pub mod requests;
mod view;

pub use ansi::{AnsiBackend, BELL, ENTER_SCREEN, LEAVE_SCREEN};
pub use app::{
    Action, App, Detail, Input, Overlay, Pacer, Phase, Reply, Session, View, Wait, typed,
};
/// How a waiting permission is answered (`a`, `A`, `d`): the broker's own decision.
pub use clippy_proto::Decision;
pub use keys::{Key, KeyDecoder};
pub use requests::Requests;
pub use view::{HELP, Theme, clock, duration, one_line, render, state_text};
