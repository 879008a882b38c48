//! `clippy-session`: wrap one interactive agent in a PTY and detect its turns — or, with
//! `--replay`, run turn detection over an asciicast recording to check a preset offline.

mod agent_hooks;
mod attach_server;
mod broker_link;
mod cpu_share;
mod live;
mod replay;
mod shell_integration;
mod sink;
mod tap;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use clippy_turn::{DetectorConfig, PRESETS};
use clippy_wrapper::preset::DetectorChoice;

/// Exit code for invalid arguments or configuration (SPEC §10).
const EXIT_USAGE: u8 = 4;

#[derive(Debug, Parser)]
#[command(name = "clippy-session", version, about, after_help = presets_help())]
struct Args {
    /// Prompt preset: which agent-emitted signals mean "waiting for input". Default: the preset
    /// configured for the command's name (`claude` → claude, `python3` → python, …), else generic.
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// A custom prompt regex, matched anywhere in each ANSI-stripped line (replaces the preset's
    /// line pattern; the preset's other signals stay).
    #[arg(long, value_name = "REGEX")]
    pattern: Option<String>,
    /// Largest turn kept, in bytes; longer turns are cut and marked truncated (default: the
    /// configuration's `session.max_turn_bytes`, 4 MiB).
    #[arg(long, value_name = "N")]
    max_turn_bytes: Option<usize>,
    /// Configuration file, over ./clippy.toml, ~/.config/clippy/config.toml, /etc/clippy/config.toml.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Read an asciicast v2 recording and print the turns detected in it, instead of running a command.
    #[arg(long, value_name = "FILE.cast")]
    replay: Option<PathBuf>,
    /// With --replay: one JSON object per turn instead of a readable listing.
    #[arg(long, requires = "replay")]
    json: bool,
    /// With --replay: what to do with the agent's hook reports in the recording (`h` events):
    /// ignore them (off), let them end turns as in a live session with hooks (on), or let only
    /// them and input end turns (only). Default: on when the recording has any, else off.
    #[arg(long, value_name = "MODE", requires = "replay", value_enum)]
    replay_hooks: Option<replay::ReplayHooks>,
    /// A name for the session, accepted wherever a session ID is.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Keep the session's spool file in DIR (as `<session-id>.spool`) when the session ends.
    #[arg(long, value_name = "DIR")]
    keep_spool: Option<PathBuf>,
    /// Do not start or contact a broker (turns are still detected and logged).
    #[arg(long)]
    no_broker: bool,
    /// Set CLIPPY_SESSION_ID in the child's environment (nothing is set otherwise).
    #[arg(long)]
    export_session_id: bool,
    /// Do not wire the agent's own hooks (Claude Code, Codex, Gemini CLI) for this run, nor
    /// offer them the session's hook socket: the screen alone ends turns.
    #[arg(long)]
    no_agent_hooks: bool,
    /// Keep this session's turns out of the broker's history store: they stay in memory only
    /// and never touch the disk (the spool in the runtime folder aside, removed at the end).
    #[arg(long)]
    no_history: bool,
    /// Start bash or zsh with OSC 133/OSC 7 marks, for exact turn boundaries, exit codes and cwd.
    #[arg(long)]
    shell_integration: bool,
    /// Append every detected turn to FILE as one JSON object per line.
    #[arg(long, value_name = "FILE")]
    turn_log: Option<PathBuf>,
    /// Run with no terminal, as `clippy-ctl spawn` does: a session (setsid) of its own, stdin
    /// and stdout away, stderr to `session.log` in the session's folder. Stdout carries one
    /// line first: `ready <session-id>` once the broker knows the session, or `error <why>`.
    #[arg(long, hide = true, conflicts_with = "replay")]
    detached: bool,
    /// PTY size when stdin is not a terminal.
    #[arg(long, value_name = "COLSxROWS", default_value = "120x40", value_parser = parse_size)]
    size: clippy_pty::WinSize,
    /// The command to wrap, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

fn parse_size(text: &str) -> Result<clippy_pty::WinSize, String> {
    let (cols, rows) = text
        .split_once('x')
        .ok_or("expected COLSxROWS, e.g. 120x40")?;
    let cols: u16 = cols
        .parse()
        .map_err(|_| format!("bad column count {cols:?}"))?;
    let rows: u16 = rows
        .parse()
        .map_err(|_| format!("bad row count {rows:?}"))?;
    if cols == 0 || rows == 0 {
        return Err("the size must be at least 1x1".into());
    }
    Ok(clippy_pty::WinSize::new(cols, rows))
}

fn presets_help() -> String {
    let mut help = String::from("Presets:\n");
    for spec in PRESETS {
        help.push_str(&format!("  {:<8} {}\n", spec.name, spec.description));
    }
    help
}

fn main() -> ExitCode {
    let mut args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let mut ready = None;
    if args.detached {
        match live::detach_from_terminal() {
            Ok(channel) => ready = Some(channel),
            Err(e) => {
                eprintln!("clippy-session: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    // A session that cannot start says why on the ready channel too.
    let failed = |code: u8, message: String, ready: Option<&std::fs::File>| {
        eprintln!("clippy-session: {message}");
        if let Some(mut ready) = ready {
            let _ = std::io::Write::write_all(&mut ready, format!("error {message}\n").as_bytes());
        }
        ExitCode::from(code)
    };
    let settings = match clippy_config::Config::load(args.config.as_deref()) {
        Ok((settings, _layers)) => settings,
        Err(e) => return failed(EXIT_USAGE, e.to_string(), ready.as_ref()),
    };
    let mut command = std::mem::take(&mut args.command);
    if command.is_empty() && args.shell_integration {
        command.push(std::env::var_os("SHELL").unwrap_or_else(|| "bash".into()));
    }
    let config = match detector_config(&args, &settings, command.first()) {
        Ok(config) => config,
        Err(e) => return failed(EXIT_USAGE, e.to_string(), ready.as_ref()),
    };
    if let Some(path) = &args.replay {
        let out = &mut std::io::stdout().lock();
        return match replay::run(path, config, args.replay_hooks, args.json, out) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("clippy-session: {e}");
                ExitCode::from(EXIT_USAGE)
            }
        };
    }
    let options = live::Options {
        command,
        detector: config,
        name: args.name,
        keep_spool: args.keep_spool,
        export_session_id: args.export_session_id,
        shell_integration: args.shell_integration,
        turn_log: args.turn_log,
        no_broker: args.no_broker,
        headless_size: args.size,
        agent_hooks: settings.session.agent_hooks && !args.no_agent_hooks,
        no_history: args.no_history,
        detached: args.detached,
        submit_delay: std::time::Duration::from_millis(settings.broker.submit_delay_ms),
    };
    match live::run(options, &mut ready) {
        Ok(status) => match status.signal() {
            Some(signal) => clippy_pty::reraise(signal),
            None => ExitCode::from(status.code_for_shell().clamp(0, 255) as u8),
        },
        Err(e @ live::SessionError::Usage(_)) => failed(EXIT_USAGE, e.to_string(), ready.as_ref()),
        Err(e) => failed(1, e.to_string(), ready.as_ref()),
    }
}

/// The detector for this run: the preset asked for, else the one configured for the command's
/// name, else `generic`; `--pattern` over it; the turn cap asked for, else the configured one
/// (`clippy_wrapper::preset`).
fn detector_config(
    args: &Args,
    settings: &clippy_config::Config,
    program: Option<&OsString>,
) -> Result<DetectorConfig, clippy_turn::TurnError> {
    DetectorChoice {
        preset: args.preset.as_deref(),
        configured: program.and_then(|p| settings.preset_for_command(p)),
        pattern: args.pattern.as_deref(),
        max_turn_bytes: args.max_turn_bytes,
        configured_max_turn_bytes: settings.session.max_turn_bytes,
    }
    .config()
}
