//! `clippy-broker`: the per-user daemon behind `$XDG_RUNTIME_DIR/clippy/broker.sock`.
//!
//! Wrappers (`clippy-session`) register their sessions and report completed turns; clients
//! (`clippy-ctl`, the hotkey client, orchestrators in any language) list sessions and turns,
//! capture a turn into the relay buffer and deliver it to a sink — another session's PTY, a file.
//! CONTRACTS/BROKER.md is the wire contract.
//!
//! The crate is layered so that the rules can be tested without sockets:
//!
//! - `clippy-broker-core` (a crate of its own): the pure state machine — messages in,
//!   [`Action`](clippy_broker_core::Action)s out; no event loop, no SQLite, no clock.
//! - [`server`]: the mio event loop that carries those actions out: accept (with the SO_PEERCRED
//!   check), framing, bounded output queues, the file-sink worker, signals.
//! - [`startup`]: the runtime folder, the lock, "already running" and stale sockets, binding.
//! - [`history`]: the history store's thread (`clippy-history`), fed by the state machine's
//!   history jobs.
//! - [`log`]: timestamped log lines to stderr or `broker.log`.
//!
//! The broker never detaches itself (that would need `fork`, which is `unsafe` in a program
//! with threads): whoever starts it — `clippy-session`, systemd, a shell with `setsid` — puts it
//! in the background. `--foreground` only chooses stderr over the log file.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod clipboard;
pub mod error;
pub mod history;
pub mod log;
pub mod server;
pub mod startup;

use clippy_broker_core::State;
use clippy_pty::{Signal, SignalPipe};
use clippy_registry::RegistryConfig;

pub use error::BrokerError;
use log::{Level, Logger};
use server::{Server, ServerConfig};

/// Largest `--max-turn-bytes`: a turn's content plus its metadata must fit one 16 MiB frame.
pub const MAX_TURN_BYTES_LIMIT: usize = 15 * 1024 * 1024;

/// Where and how the broker keeps its history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryOptions {
    /// The store's folder (`$XDG_STATE_HOME/clippy`).
    pub dir: std::path::PathBuf,
    /// Age and size limits.
    pub limits: history::Limits,
}

/// How the broker runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Log to stderr (otherwise to `$XDG_RUNTIME_DIR/clippy/broker.log`).
    pub foreground: bool,
    /// Ring depth and turn size limit.
    pub registry: RegistryConfig,
    /// Lowest level logged.
    pub log_level: Level,
    /// Event loop limits.
    pub server: ServerConfig,
    /// Milliseconds between text and the Enter that submits it (handoffs, `send` with
    /// `enter`, `exec`).
    pub submit_delay_ms: u64,
    /// Events kept for late subscribers.
    pub event_history: usize,
    /// The history store (`None`: no history, or no folder to keep it in — `history_unavailable`
    /// says why).
    pub history: Option<HistoryOptions>,
    /// Why there is no history store although the configuration asks for one.
    pub history_unavailable: Option<String>,
}

/// Starts the broker and serves until SIGTERM or SIGINT.
///
/// # Errors
///
/// Any [`BrokerError`]; [`BrokerError::exit_code`] says how the process should end.
pub fn run(options: &Options) -> Result<(), BrokerError> {
    options
        .registry
        .validate()
        .map_err(|e| BrokerError::Config(e.to_string()))?;
    if options.registry.max_turn_bytes > MAX_TURN_BYTES_LIMIT {
        return Err(BrokerError::Config(format!(
            "max turn bytes {} is over {MAX_TURN_BYTES_LIMIT} (a turn must fit in one 16 MiB frame)",
            options.registry.max_turn_bytes
        )));
    }
    if !options.foreground {
        startup::own_session();
    }
    let runtime = startup::runtime_dir()?;
    // Everything the broker creates is for this user only.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let paths = startup::Paths::new(&runtime);
    let note = startup::prepare_dir(&paths.dir)?;
    let logger = if options.foreground {
        Logger::stderr(options.log_level)
    } else {
        Logger::file(options.log_level, startup::open_log(&paths.log)?)
    };
    if let Some(note) = note {
        logger.log(Level::Warn, &note);
    }
    let result = serve(&paths, options, logger.clone());
    if let Err(e) = &result {
        logger.log(Level::Error, &e.to_string());
    }
    result
}

fn serve(paths: &startup::Paths, options: &Options, logger: Logger) -> Result<(), BrokerError> {
    let _lock = startup::take_lock(paths)?;
    match startup::probe(&paths.socket)? {
        startup::Probe::Absent => {}
        startup::Probe::Stale => {
            std::fs::remove_file(&paths.socket).map_err(BrokerError::io(format!(
                "cannot remove the stale socket {}",
                paths.socket.display()
            )))?;
            logger.log(
                Level::Info,
                &format!("removed a stale socket at {}", paths.socket.display()),
            );
        }
        startup::Probe::Running { pid } => return Err(BrokerError::AlreadyRunning { pid }),
        startup::Probe::NotAnswering => {
            return Err(BrokerError::NotAnswering(paths.socket.clone()));
        }
        startup::Probe::NotASocket => return Err(BrokerError::NotASocket(paths.socket.clone())),
    }
    for line in startup::sweep_stale_sessions(paths) {
        match line {
            Ok(removed) => logger.log(Level::Info, &removed),
            Err(failed) => logger.log(Level::Warn, &failed),
        }
    }
    // Handlers go in before the socket exists, so a SIGTERM right after binding still removes it.
    let signals = SignalPipe::with_signals(&[Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP])
        .map_err(|e| BrokerError::Io {
            context: "cannot install signal handlers".into(),
            source: std::io::Error::other(e.to_string()),
        })?;
    let mut state = State::new(options.registry).map_err(|e| BrokerError::Config(e.to_string()))?;
    state.set_routing_options(options.submit_delay_ms, options.event_history);
    if let Some(why) = &options.history_unavailable {
        logger.log(Level::Warn, &format!("history: not kept: {why}"));
        state.history_unavailable(why.clone());
    }
    let store = match &options.history {
        Some(history) => match history::open(history.dir.clone()) {
            Ok(opened) => {
                logger.log(
                    Level::Info,
                    &format!(
                        "history: {} (events go on after {})",
                        history.dir.display(),
                        opened.last_event_id
                    ),
                );
                state.enable_history(opened.last_event_id);
                Some((opened, history.limits))
            }
            Err(e) => {
                logger.log(
                    Level::Warn,
                    &format!("history: not kept: {e}; live operation goes on"),
                );
                state.history_unavailable(e.to_string());
                None
            }
        },
        None => None,
    };
    let (listener, socket_id) = startup::bind(&paths.socket)?;
    logger.log(
        Level::Info,
        &format!(
            "listening on {} (pid {}, protocol {}, ring depth {}, max turn {} bytes)",
            paths.socket.display(),
            std::process::id(),
            clippy_proto::PROTOCOL_VERSION,
            options.registry.ring_depth,
            options.registry.max_turn_bytes
        ),
    );
    Server::new(
        listener,
        paths.socket.clone(),
        socket_id,
        signals,
        state,
        logger,
        options.server,
        store,
    )
    .inspect_err(|_| {
        startup::remove_socket(&paths.socket, socket_id);
    })?
    .run()
}
