//! `clippy-mcp`: an MCP server over stdio that gives a model every clippy session, turn, screen
//! and spool operation as a tool (CONTRACTS/MCP.md), so one agent can drive the others.
//!
//! - [`tools`]: the catalogue (names, descriptions for a model, argument types whose JSON
//!   schemas the client sees).
//! - [`calls`]: a call run against the broker (blocking), its reply shaped into the tool's
//!   JSON; over-long content is cut with the total and how to read on, never silently.
//! - [`bridge`]: the broker connections (kept for the next call; a wait has its own).
//! - [`server`]: the `rmcp` handler: tools, and the sessions as resources.
//! - [`notifications`]: the broker's event stream followed, so resource readers hear of new
//!   sessions and turns.
//!
//! tokio (which `rmcp` needs) lives in this binary only, on a current-thread runtime; the
//! broker is reached through `clippy-proto`'s blocking client, as `clippy-ctl` reaches it.
#![forbid(unsafe_code)]

pub mod bridge;
pub mod calls;
pub mod error;
pub mod notifications;
pub mod server;
pub mod tools;

use std::time::Duration;

use rmcp::ServiceExt as _;

pub use crate::error::McpError;

/// How `clippy-mcp` was asked to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The broker's socket (`None`: `$XDG_RUNTIME_DIR/clippy/broker.sock`, where a broker is
    /// started when none answers).
    pub socket: Option<std::path::PathBuf>,
    /// How long connecting to the broker, and a quick request's reply, may take.
    pub timeout: Duration,
    /// What the tools allow themselves.
    pub limits: calls::Limits,
}

/// Serves MCP on stdin/stdout until the client closes it.
///
/// # Errors
///
/// No socket can be named, the runtime cannot start, or the MCP session fails to start.
pub fn serve_stdio(options: Options) -> Result<(), McpError> {
    let bridge = bridge::Bridge::new(options.socket.as_deref(), options.timeout)?;
    let server = server::Server::new(bridge, options.limits);
    grow_stdout_pipe(options.limits.max_reply_bytes);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(McpError::Runtime)?;
    runtime.block_on(async move {
        // Pipes (as MCP clients start their servers) are read and written on the runtime's own
        // thread; anything else falls back to tokio's blocking stdio.
        let running = server
            .serve(rmcp::transport::stdio_pipes())
            .await
            .map_err(|e| McpError::Initialize(e.to_string()))?;
        running
            .waiting()
            .await
            .map(drop)
            .map_err(|e| McpError::Session(e.to_string()))
    })
}

/// The most a pipe is grown to: Linux's default `/proc/sys/fs/pipe-max-size`, what any user may
/// ask for.
#[cfg(target_os = "linux")]
const MAX_PIPE: usize = 1024 * 1024;

/// When stdout is a pipe (as MCP clients start servers), grows it to hold a whole reply: a
/// result carries its content twice, JSON-escaped (`structuredContent` and the text block), so
/// up to about three times `max_reply_bytes` (a 62 KiB turn of short lines is a 166 KB line).
/// A pipe's default 64 KiB takes such a line in three writes, each waiting for the client to read
/// the one before; grown, it is one write. Best effort: a pipe that cannot grow (the system's
/// limit is lower, or stdout is not a pipe) stays as it is.
#[cfg(target_os = "linux")]
fn grow_stdout_pipe(max_reply_bytes: usize) {
    use nix::fcntl::{FcntlArg, fcntl};
    let stdout = std::io::stdout();
    let Ok(now) = fcntl(&stdout, FcntlArg::F_GETPIPE_SZ) else {
        return; // Not a pipe.
    };
    let wanted = max_reply_bytes
        .saturating_mul(3)
        .saturating_add(64 * 1024)
        .min(MAX_PIPE);
    let mut size = wanted.next_power_of_two().min(MAX_PIPE);
    while usize::try_from(now).is_ok_and(|now| size > now) {
        let Ok(asked) = i32::try_from(size) else {
            return;
        };
        // Refused (EPERM) above the system's limit: try half as much.
        if fcntl(&stdout, FcntlArg::F_SETPIPE_SZ(asked)).is_ok() {
            return;
        }
        size /= 2;
    }
}

#[cfg(not(target_os = "linux"))]
fn grow_stdout_pipe(_max_reply_bytes: usize) {}
