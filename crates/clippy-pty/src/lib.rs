//! PTY plumbing for a transparent terminal wrapper: a PTY pair, a child on the slave as session
//! leader with the slave as controlling terminal, the window size, raw mode on the user's
//! terminal, signals for an event loop, and how the child ended.
//!
//! The shape follows wezterm's `portable-pty` — [`openpty`] gives a [`PtyPair`],
//! [`PtySlave::spawn`] starts a [`CommandSpec`], [`PtyMaster::resize`] and [`Child::wait`] —
//! with typed errors ([`PtyError`]) instead of `anyhow`, Linux only, and no threads: the master
//! is a plain fd for the caller's (mio) event loop, and signals arrive on another fd,
//! [`SignalPipe`], in the same loop.
//!
//! A wrapper's life with this crate:
//!
//! 1. [`SignalPipe::new`] first, so no signal between here and the loop is lost;
//!    [`RawModeGuard::install_panic_restore`].
//! 2. [`terminal_size`] of the user's terminal (or a default when headless), [`openpty`] with it,
//!    [`PtySlave::spawn`], drop the slave.
//! 3. [`RawModeGuard::enter`] on stdin (`Ok(None)` when headless).
//! 4. Loop: master readable → user's stdout; stdin readable → master; signal pipe readable →
//!    `SIGWINCH`: [`PtyMaster::resize`]; `SIGINT`/`SIGTERM`/`SIGHUP`/`SIGQUIT`:
//!    [`Child::signal_group`]; `SIGTSTP`: forward, [`RawModeGuard::restore`], [`suspend_self`];
//!    `SIGCONT`: forward, [`RawModeGuard::reenter`]; `SIGCHLD`: [`Child::try_wait`].
//! 5. Master reads end-of-file: drain, drop the guard, then exit with
//!    [`ExitStatus::code_for_shell`] or [`reraise`] the child's signal.
//!
//! The only `unsafe` code is in one private module: three `ioctl`s, the setup between `fork` and
//! `exec`, and the signal handlers.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod child;
mod command;
mod error;
mod pty;
mod raw;
mod sched_group;
mod signals;
mod size;
mod sys;

pub use child::{Child, ExitStatus};
pub use command::CommandSpec;
pub use error::{PtyError, SignalTarget};
/// Signals, as used throughout this crate (nix's type, re-exported).
pub use nix::sys::signal::Signal;
pub use pty::{PtyMaster, PtyPair, PtySlave, openpty};
pub use raw::RawModeGuard;
pub use sched_group::{GroupNice, leads_its_session, lower_this_thread, parse_autogroup_nice};
pub use signals::{SignalPipe, WRAPPER_SIGNALS, reraise, suspend_self};
pub use size::{WinSize, terminal_size};
