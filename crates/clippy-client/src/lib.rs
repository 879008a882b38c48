//! One client layer over the clippy broker, for every front end (`clippy-ctl`, `clippy-mcp`, a
//! dashboard): the broker's operations as typed calls, so each front end keeps only its
//! argument parsing and its rendering.
//!
//! - [`Endpoint`] and [`Connection`]: where the broker is, and a connection past `hello`
//!   within a deadline, starting a broker where one may be started
//!   ([`Connection::connect_starting`]).
//! - [`ops`]: one method of [`Connection`] per broker request (`list_sessions`, `get_turn`,
//!   `screen`, `wait_for`, `exec`, `send`, routes, events, history, search, …), each returning
//!   a typed result; the waits' defaults are the broker's, from `clippy-proto`.
//! - [`ClientError`]: the one error type, with the broker's reason when it refused and the
//!   socket when none answers; [`ArgumentError`]: what is refused before asking.
//! - [`args`]: the argument checks every front end shares, written once; [`when`]: the times
//!   `--since`/`--until` take (`2h`, an ISO-8601 date), with the clock passed in.
//! - [`spawn()`]: a session started with no terminal, returned once the broker knows it.
//! - [`notices`]: which events become notifications for a person (`clippy-ctl notify`), decided
//!   with no I/O, rate-limited.
//!
//! Blocking, with no async runtime: a front end that has one runs these calls on its own
//! threads. Only `clippy-proto` knows the wire encoding.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod args;
mod connection;
mod error;
pub mod notices;
pub mod ops;
mod spawn;
pub mod when;

pub use args::{
    CommandLine, HistoryQuery, Input, SearchQuery, TermSize, TimeRange, bytes_field, command_words,
    variable,
};
pub use connection::{Connection, Endpoint, REPLY_GRACE};
pub use error::{ArgumentError, ClientError, START_HINT};
pub use ops::{
    Answer, Answered, AttachTarget, Captured, Ended, Events, Executed, Found, Inbox, Screen, Sink,
    SpoolData, Turn,
};
pub use spawn::{Spawn, spawn, spawn_child};
