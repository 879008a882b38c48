//! The agents' own word about their turns: Claude Code, Codex and Gemini CLI hooks.
//!
//! Agents run programs of the user's choosing at points of their turn: a prompt submitted, a
//! turn ended (with the final message the model wrote), a permission asked. clippy points those
//! hooks at `clippy-ctl hook AGENT`, which hands the payload, unread, to its session's wrapper
//! over the socket named in [`SOCKET_ENV`]; the wrapper [`decode`]s and [`parse`]s it into a
//! [`Report`] the turn detector takes in order with the agent's output.
//!
//! This crate knows the agents' payloads and settings and nothing of sessions, sockets or
//! turns:
//! - [`parse`]: a payload to a [`Report`], the same for every agent;
//! - [`encode`] / [`decode`]: the hook-to-wrapper report;
//! - [`per_run`]: the arguments, environment and files that wire an agent's hooks for one run
//!   without touching the user's files;
//! - [`install`]: the same hooks kept in the user's own settings files, added and removed as
//!   text.
//!
//! ```
//! use clippy_hooks::{Agent, Report, decode, encode, parse};
//!
//! // What `clippy-ctl hook gemini` sends, and what the wrapper makes of it.
//! let frame = encode(Agent::Gemini, br#"{"hook_event_name":"BeforeAgent","prompt":"hi"}"#);
//! let (agent, payload) = decode(&frame)?;
//! assert_eq!(parse(agent, payload)?, Report::PromptSubmitted { prompt: "hi".into() });
//! # Ok::<(), clippy_hooks::HooksError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
pub mod install;
mod report;
mod wire;
mod wiring;

pub use error::HooksError;
pub use report::{Agent, Report, Waiting, parse};
pub use wire::{MAX_REPORT_BYTES, SOCKET_ENV, decode, encode};
pub use wiring::{ExistingSettings, HookCommand, RunWiring, per_run};
