//! `clippy-ctl`: the command line over the clippy broker (SPEC §10, `CONTRACTS/CLI.md`).
//!
//! This file parses the arguments and dispatches; [`commands`] talks to the broker, [`output`]
//! renders, [`exit`] decides the exit code.
// The argument docs are clap's help text, where `[hotkeys]` and `[ and ]` are literal.
#![allow(rustdoc::broken_intra_doc_links)]
#![forbid(unsafe_code)]

mod agent_hooks;
mod attach;
mod broker;
mod cli;
mod commands;
mod config;
mod dash;
mod error;
mod exit;
mod focus;
mod history;
mod hotkeys;
mod notify;
mod output;
mod routing;
mod spawn;
mod spool;
mod stop;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;
use crate::exit::Exit;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().collect();
    // Agents run `hook` at every hook event: before clap, silent, exit 0 (agent_hooks.rs).
    if let Some(exit) = agent_hooks::hook_entry(&args) {
        return exit;
    }
    let stdout = io::stdout();
    let stderr = io::stderr();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(clap_error) => {
            // --help and --version are not errors: clap says so by choosing stdout.
            if !clap_error.use_stderr() {
                let written = out.write_all(clap_error.render().to_string().as_bytes());
                return finish(written, Exit::Ok);
            }
            let message = clap_error.render().to_string();
            let written =
                output::render_usage_error(&message, cli::wants_json(&args), &mut out, &mut err);
            return finish(written, Exit::Usage);
        }
    };
    if let cli::Command::Hooks(command) = &cli.command {
        let (written, exit) = agent_hooks::hooks(command, cli.json, &mut out, &mut err);
        return finish(written, exit);
    }
    // `notify` streams notices until a signal, as `events --follow` streams events.
    if let cli::Command::Notify(args) = &cli.command {
        return match notify::run(&cli, args, &mut out, &mut err) {
            Ok(()) => finish(Ok(()), Exit::Ok),
            Err(error) => {
                let written = output::render_error(&error, cli.json, &mut out, &mut err);
                finish(written, exit::exit_code(&error))
            }
        };
    }
    if cli.notify && !cli.json {
        return notified(&cli);
    }
    // The commands that start, join or leave a session's terminal.
    if let Some(result) = terminal_commands(&cli) {
        return match result {
            Ok(printed) => finish(out.write_all(&printed), Exit::Ok),
            Err(error) => {
                let written = output::render_error(&error, cli.json, &mut out, &mut err);
                finish(written, exit::exit_code(&error))
            }
        };
    }
    // The one command that streams: each event is printed as it arrives.
    if let cli::Command::Events {
        follow: true,
        since,
        types,
    } = &cli.command
    {
        let json = cli.json;
        let followed = commands::follow_events(&cli, *since, types, &mut |event| {
            routing::write_event(&mut out, event, json)
        });
        return match followed {
            Ok(()) => finish(Ok(()), Exit::Ok),
            Err(error) => {
                let written = output::render_error(&error, cli.json, &mut out, &mut err);
                finish(written, exit::exit_code(&error))
            }
        };
    }
    match commands::run(&cli) {
        Ok(report) => {
            let written = output::render(&report, cli.json, &mut out, &mut err);
            finish(written, exit::report_exit(&report))
        }
        Err(error) => {
            let written = output::render_error(&error, cli.json, &mut out, &mut err);
            finish(written, exit::exit_code(&error))
        }
    }
}

/// `spawn`, `attach`, `detach`: what they print on stdout; `None` for the other commands.
fn terminal_commands(cli: &Cli) -> Option<Result<Vec<u8>, error::CtlError>> {
    let timeout = std::time::Duration::from_millis(cli.timeout);
    let connect = || broker::connect(cli);
    let result = match &cli.command {
        cli::Command::Spawn(args) => spawn::spawn(cli, args).and_then(|id| {
            if cli.json {
                let report = spool::session_status(&connect, &id)?;
                let mut printed = Vec::new();
                let _ = output::render(&report, true, &mut printed, &mut io::stderr());
                Ok(printed)
            } else {
                Ok(format!("{id}\n").into_bytes())
            }
        }),
        cli::Command::Attach {
            session,
            read_only,
            detach_key,
        } => attach(cli, &connect, session, *read_only, detach_key.as_deref()).map(|()| Vec::new()),
        cli::Command::Dash {
            no_bell,
            detach_key,
        } => dash::dash(cli, !*no_bell, detach_key.as_deref()).map(|()| Vec::new()),
        cli::Command::Detach { session } => attach::socket_of(&connect, session)
            .and_then(|(id, name, path)| {
                let clients = attach::detach(&path, timeout)?;
                let printed = if cli.json {
                    serde_json::json!({"detached": {"session": id, "name": name, "clients": clients}})
                        .to_string()
                } else {
                    format!("detached {clients} client(s) from {}", name.unwrap_or(id))
                };
                Ok(format!("{printed}\n").into_bytes())
            }),
        _ => return None,
    };
    Some(result)
}

/// `attach`: until detached; says how it ended on stderr.
fn attach(
    cli: &Cli,
    connect: &dyn Fn() -> Result<clippy_client::Connection, error::CtlError>,
    session: &str,
    read_only: bool,
    detach_key: Option<&str>,
) -> Result<(), error::CtlError> {
    let key = detach_key_of(cli, detach_key)?;
    let (id, name, path) = attach::socket_of(connect, session)?;
    let label = name.unwrap_or(id);
    let said = match attach::attach(&path, read_only, key, None, &[])? {
        attach::Ended::Detached(clippy_proto::attach::DetachReason::Command) => {
            format!("[detached from {label} (clippy-ctl detach)]")
        }
        attach::Ended::Detached(_) => format!("[detached from {label}]"),
        attach::Ended::Exited { exit_code } => format!("[{label} exited with code {exit_code}]"),
        attach::Ended::Closed => format!("[{label} closed the connection]"),
        attach::Ended::Signalled(signal) => format!("[detached from {label}: {signal}]"),
    };
    eprintln!("{said}");
    Ok(())
}

/// The detach key: `--detach-key`, else `ctl.detach_key`, else Ctrl+\ then d.
pub(crate) fn detach_key_of(
    cli: &Cli,
    detach_key: Option<&str>,
) -> Result<clippy_attach::DetachKey, error::CtlError> {
    let config = config::Config::load(cli.config.as_deref())?;
    Ok(match detach_key.or(config.detach_key.as_deref()) {
        Some(text) => text
            .parse()
            .map_err(|e: clippy_attach::DetachKeyError| error::CtlError::Usage(e.to_string()))?,
        None => clippy_attach::DetachKey::default(),
    })
}

/// `--notify`: the result goes to the desktop (or tmux's status line) instead of stdout; it
/// falls back to stderr and the bell when neither can show it.
fn notified(cli: &Cli) -> ExitCode {
    let config = config::Config::load(cli.config.as_deref()).unwrap_or_default();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (written, exit) = match commands::run(cli) {
        Ok(report) => (
            output::render(&report, false, &mut out, &mut err),
            exit::report_exit(&report),
        ),
        Err(error) => (
            output::render_error(&error, false, &mut out, &mut err),
            exit::exit_code(&error),
        ),
    };
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.push_str(&String::from_utf8_lossy(&err));
    let text = text.trim_start_matches("clippy-ctl: ");
    hotkeys::notify(cli, &config, text, exit != Exit::Ok);
    finish(written, exit)
}

/// The exit code once the output is written: a reader that went away (`| head`) is not an
/// error; any other write failure is.
fn finish(written: io::Result<()>, exit: Exit) -> ExitCode {
    let flushed = written.and_then(|()| io::stdout().flush());
    match flushed {
        Err(error) if error.kind() != io::ErrorKind::BrokenPipe => {
            let _ = writeln!(io::stderr(), "clippy-ctl: cannot write the output: {error}");
            ExitCode::from(Exit::Failed)
        }
        _ => ExitCode::from(exit),
    }
}
