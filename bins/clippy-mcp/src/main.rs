//! `clippy-mcp`: the MCP server (CONTRACTS/MCP.md). Parses the arguments and serves stdio.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use clippy_mcp::calls::Limits;
use clippy_mcp::{Options, serve_stdio};

/// An MCP server over stdio: clippy's sessions, turns, screens and spools as tools, so one
/// agent can drive the others. Register it with an agent, e.g. `claude mcp add clippy --
/// clippy-mcp`; it talks MCP on stdin/stdout and logs nothing there.
#[derive(Debug, Parser)]
#[command(name = "clippy-mcp", version)]
struct Cli {
    /// The broker's socket [default: $XDG_RUNTIME_DIR/clippy/broker.sock, where a broker is
    /// started when none answers].
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// A configuration file, over ./clippy.toml and the user's and system's.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The most content bytes one tool result carries [default: mcp.max_reply_bytes, 65536].
    #[arg(long, value_name = "BYTES",
          value_parser = clap::value_parser!(u32).range(1024..=8 * 1024 * 1024))]
    max_reply_bytes: Option<u32>,
    /// How long connecting to the broker, and a quick request's reply, may take, in ms.
    #[arg(long, value_name = "MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match clippy_config::Config::load(cli.config.as_deref()) {
        Ok((config, _used)) => config,
        Err(e) => {
            eprintln!("clippy-mcp: {e}");
            return ExitCode::from(4);
        }
    };
    let options = Options {
        socket: cli.socket,
        timeout: Duration::from_millis(cli.timeout_ms),
        limits: Limits {
            max_reply_bytes: cli
                .max_reply_bytes
                .map_or(config.mcp.max_reply_bytes, |bytes| bytes as usize),
            submit_delay: Duration::from_millis(config.broker.submit_delay_ms),
        },
    };
    match serve_stdio(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("clippy-mcp: {e}");
            ExitCode::from(match e {
                clippy_mcp::McpError::NoRuntimeDir => 4,
                _ => 1,
            })
        }
    }
}
