//! `clippy-broker`: argument parsing, then [`clippy_broker::run`].
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use clippy_broker::log::Level;
use clippy_broker::server::ServerConfig;
use clippy_broker::{HistoryOptions, MAX_TURN_BYTES_LIMIT, Options, history};
use clippy_registry::RegistryConfig;

/// The per-user clippy broker: sessions, turns, the relay buffer and sinks behind
/// $XDG_RUNTIME_DIR/clippy/broker.sock.
///
/// It does not detach itself: whoever starts it (clippy-session, systemd) puts it in the
/// background. Exit codes: 0 stopped by SIGTERM/SIGINT, 1 failure (already running included),
/// 4 invalid arguments or no usable XDG_RUNTIME_DIR.
#[derive(Debug, Parser)]
#[command(name = "clippy-broker", version)]
struct Cli {
    /// Log to stderr instead of $XDG_RUNTIME_DIR/clippy/broker.log.
    #[arg(long)]
    foreground: bool,
    /// Turns kept per session, at least 1 (default: the configuration's `broker.ring_depth`, 32).
    #[arg(long, value_name = "N")]
    ring_depth: Option<usize>,
    #[arg(long, value_name = "N",
          help = format!("Content bytes kept per turn, at most {MAX_TURN_BYTES_LIMIT}; longer turns are cut and marked truncated (default: the configuration's `broker.max_turn_bytes`, 4 MiB)"))]
    max_turn_bytes: Option<usize>,
    /// Configuration file, over ./clippy.toml, ~/.config/clippy/config.toml, /etc/clippy/config.toml.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Lowest level logged: error, warn, info or debug.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    log_level: Level,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 4 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let settings = match clippy_config::Config::load(cli.config.as_deref()) {
        Ok((settings, _layers)) => settings,
        Err(e) => {
            eprintln!("clippy-broker: {e}");
            return ExitCode::from(4);
        }
    };
    let (history, history_unavailable) = if settings.history.enabled {
        match clippy_history::Store::default_dir() {
            Ok(dir) => (
                Some(HistoryOptions {
                    dir,
                    limits: history::Limits {
                        max_age_days: settings.history.max_age_days,
                        max_bytes: settings.history.max_bytes,
                    },
                }),
                None,
            ),
            Err(e) => (None, Some(e.to_string())),
        }
    } else {
        (None, None)
    };
    let options = Options {
        foreground: cli.foreground,
        registry: RegistryConfig {
            ring_depth: cli.ring_depth.unwrap_or(settings.broker.ring_depth),
            max_turn_bytes: cli.max_turn_bytes.unwrap_or(settings.broker.max_turn_bytes),
        },
        log_level: cli.log_level,
        server: ServerConfig::default(),
        submit_delay_ms: settings.broker.submit_delay_ms,
        event_history: settings.broker.event_history,
        history,
        history_unavailable,
    };
    match clippy_broker::run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("clippy-broker: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
