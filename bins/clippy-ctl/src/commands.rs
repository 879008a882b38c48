//! One function per subcommand: check the arguments, ask the broker, return a [`Report`] for
//! [`crate::output`] to render. Nothing here prints.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::CommandFactory;
use clippy_client::{Connection, Sink};
use clippy_proto::{
    EventRecord, Format, HistoryEntry, HistoryInfo, InboxItem, PROTOCOL_VERSION, RouteInfo,
    ScreenData, SearchHit, SessionState, SessionSummary, TurnMeta,
};

use crate::broker::{connect_starting, endpoint};
use crate::cli::{Cli, Command, FormatArg, SinkArg, SpoolCommand};
use crate::config::Config;
use crate::error::CtlError;
use crate::spool::{Executed, Found};
use crate::{focus, hotkeys};
use clippy_desktop::Environment;

/// What a command found out, ready to render.
// One per run of the program, rendered and dropped: the size of its largest variant (a session's
// state) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Report {
    /// `list-sessions`.
    Sessions(Vec<SessionSummary>),
    /// `list-turns`.
    Turns {
        /// The session as given.
        session: String,
        /// Newest first.
        turns: Vec<TurnMeta>,
    },
    /// `get-turn`.
    Turn {
        /// Its metadata.
        meta: TurnMeta,
        /// The format of `content`.
        format: Format,
        /// The content, exact bytes.
        content: Vec<u8>,
    },
    /// `capture`, `capture-by-id`.
    Captured {
        /// The captured turn.
        turn_id: String,
        /// Its size.
        byte_length: u32,
    },
    /// `paste`.
    Pasted {
        /// The target session as given.
        session: String,
        /// The format pasted.
        format: Format,
    },
    /// `deliver`.
    Delivered {
        /// The sink.
        sink: SinkArg,
        /// The target session, for `inject`.
        session: Option<String>,
        /// The absolute target path, for `file`.
        path: Option<String>,
        /// The format delivered.
        format: Format,
    },
    /// `status`.
    Status(Status),
    /// `hotkeys`, after a signal stopped it.
    HotkeysStopped,
    /// `tmux-bindings`: the lines for `.tmux.conf`.
    TmuxBindings(String),
    /// `status SESSION`.
    SessionStatus(SessionState),
    /// `screen`.
    Screen {
        /// The session id, as the broker resolved it.
        session: String,
        /// The screen and its history lines.
        screen: ScreenData,
    },
    /// `read`.
    SpoolData {
        /// The bytes.
        data: Vec<u8>,
        /// Where they start.
        cursor: u64,
        /// Where the next read starts.
        resume_cursor: u64,
    },
    /// `wait-for`, `wait-prompt`, `expect-send`.
    Found(Found),
    /// `send`.
    Sent {
        /// The target session as given.
        session: String,
        /// How many bytes were typed.
        bytes: usize,
    },
    /// `exec`.
    Executed(Executed),
    /// `route add`, `route pause`, `route resume`.
    Route {
        /// The route now.
        route: RouteInfo,
        /// `added`, `paused` or `resumed`.
        verb: &'static str,
    },
    /// `route list`.
    Routes(Vec<RouteInfo>),
    /// `route rm`.
    RouteRemoved(String),
    /// `answer`.
    Answered(clippy_client::Answered),
    /// `inbox`.
    Inbox {
        /// The session id.
        session: String,
        /// Oldest first.
        items: Vec<InboxItem>,
    },
    /// `approve`, `deny`.
    Resolved {
        /// The approval id.
        approval: String,
        /// Approved (else denied).
        approved: bool,
        /// With new text.
        edited: bool,
    },
    /// `events` (without `--follow`).
    Events(Vec<EventRecord>),
    /// `history`.
    History {
        /// The session asked for, as given.
        session: Option<String>,
        /// Newest first.
        turns: Vec<HistoryEntry>,
    },
    /// `search`.
    SearchHits {
        /// The words, as sent.
        query: String,
        /// Best match first.
        hits: Vec<SearchHit>,
    },
    /// `history --forget`.
    Forgotten {
        /// The session whose turns went, as given; `None` for `--all`.
        session: Option<String>,
        /// How many turns went.
        turns: u64,
    },
    /// `end-session`.
    Ended {
        /// The session as given.
        session: String,
        /// `idle`, `interrupted` or `killed`.
        outcome: String,
        /// The spool size then.
        resume_cursor: u64,
    },
    /// `completions`.
    Completions {
        /// The shell.
        shell: String,
        /// The script.
        script: String,
    },
    /// `man`.
    Man(String),
}

/// What `status` found.
#[derive(Debug)]
pub struct Status {
    /// The socket asked, when one could be determined.
    pub socket: Option<PathBuf>,
    /// The broker's state, or why it does not answer.
    pub broker: Result<BrokerState, CtlError>,
}

/// A broker that answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerState {
    /// The protocol version spoken (the broker refuses any other in `hello`).
    pub protocol_version: u32,
    /// Registered sessions.
    pub sessions: usize,
    /// Of which have their wrapper connected.
    pub connected: usize,
    /// Turns held over all sessions' rings.
    pub turns: u64,
    /// The history store, or why the broker did not say.
    pub history: Result<HistoryInfo, crate::history::NotReported>,
}

/// Runs the command of `cli`.
pub fn run(cli: &Cli) -> Result<Report, CtlError> {
    let config = match &cli.command {
        // Generated from the definitions alone: no configuration, no broker.
        Command::Completions { shell } => return Ok(completions(*shell)),
        Command::Man { command } => return man(command.as_deref()),
        _ => Config::load(cli.config.as_deref())?,
    };
    let format = |arg: &Option<FormatArg>| arg.map_or_else(|| config.format(), Format::from);
    let timeout = Duration::from_millis(cli.timeout);
    let connect = || crate::broker::connect(cli);
    match &cli.command {
        Command::ListSessions => Ok(Report::Sessions(connect()?.list_sessions()?)),
        Command::ListTurns { session, limit } => Ok(Report::Turns {
            session: session.clone(),
            turns: connect()?.list_turns(session, *limit)?,
        }),
        Command::GetTurn {
            target,
            format: arg,
        } => {
            // A turn id (it has a ':') and a session (its latest turn) travel in the same field;
            // the broker tells them apart the same way.
            let turn = connect()?.get_turn(target, format(arg))?;
            Ok(Report::Turn {
                meta: turn.meta,
                format: turn.format,
                content: turn.content.into_vec(),
            })
        }
        Command::Capture { session, focused } => {
            let mut broker = connect()?;
            let (session, _) =
                focus::target(session.as_deref(), *focused, cli, &config, &mut broker)?;
            captured(broker.capture(&session)?)
        }
        Command::CaptureById { turn_id } => captured(connect()?.capture_by_id(turn_id)?),
        Command::Paste {
            session,
            focused,
            format: arg,
        } => {
            let format = format(arg);
            let mut broker = connect()?;
            let (session, label) =
                focus::target(session.as_deref(), *focused, cli, &config, &mut broker)?;
            broker.paste(&session, format)?;
            Ok(Report::Pasted {
                session: label,
                format,
            })
        }
        Command::Deliver {
            sink,
            session,
            focused,
            path,
            format: arg,
        } => {
            // A usage error is a usage error, broker or not: check before connecting.
            let named = session.as_deref().or(focused.then_some("(focused)"));
            check_deliver(*sink, named, path.as_deref())?;
            let format = format(arg);
            let path = path.as_deref().map(absolute_utf8).transpose()?;
            let mut broker = connect()?;
            if *sink == SinkArg::Clipboard
                && focus::environment(cli, &config).ok() == Some(Environment::Tmux)
            {
                focus::deliver_tmux_clipboard(&mut broker, format)?;
                return Ok(Report::Delivered {
                    sink: *sink,
                    session: None,
                    path: None,
                    format,
                });
            }
            let session = match named {
                Some(given) => {
                    Some(focus::target(Some(given), *focused, cli, &config, &mut broker)?.0)
                }
                None => None,
            };
            let to = match (sink, &session, &path) {
                (SinkArg::Inject, Some(session), _) => Sink::Inject(session.clone()),
                (SinkArg::File, _, Some(path)) => Sink::File(path.clone()),
                _ => Sink::Clipboard,
            };
            broker.deliver(&to, format)?;
            Ok(Report::Delivered {
                sink: *sink,
                session,
                path,
                format,
            })
        }
        Command::Status { session: None } => status(cli),
        Command::Status {
            session: Some(session),
        } => crate::spool::session_status(&connect, session),
        Command::Screen {
            session,
            focused,
            history,
        } => {
            let mut broker = connect()?;
            let (session, _) =
                focus::target(session.as_deref(), *focused, cli, &config, &mut broker)?;
            let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
            let screen = broker.screen(&session, *history, Some(timeout_ms))?;
            Ok(Report::Screen {
                session: screen.session,
                screen: screen.screen,
            })
        }
        // What a script runs right after starting a session in the background, whose wrapper
        // may not have started the broker yet (or registered: the broker then waits for it).
        Command::Spool(
            command @ (SpoolCommand::WaitFor { .. }
            | SpoolCommand::WaitPrompt { .. }
            | SpoolCommand::ExpectSend { .. }
            | SpoolCommand::Exec { .. }),
        ) => crate::spool::run(command, timeout, &|| connect_starting(cli)),
        Command::Spool(command) => crate::spool::run(command, timeout, &connect),
        Command::Route(command) => crate::routing::route(command, &connect),
        Command::Answer {
            session,
            decision,
            reason,
            waiting_id,
        } => answer(
            &connect,
            session,
            (*decision).into(),
            reason.clone(),
            *waiting_id,
        ),
        Command::Inbox { session } => crate::routing::inbox(&connect, session),
        Command::Approve { approval, edit } => {
            crate::routing::resolve(&connect, approval, true, edit.as_deref())
        }
        Command::Deny { approval } => crate::routing::resolve(&connect, approval, false, None),
        Command::Events { since, types, .. } => crate::routing::events(&connect, *since, types),
        Command::History(args) => crate::history::history(args, &connect),
        Command::Search(args) => crate::history::search(args, &connect),
        Command::Hotkeys(args) => hotkeys::run(cli, args, &config),
        Command::TmuxBindings(args) => hotkeys::tmux_bindings_report(args, &config),
        Command::Completions { shell } => Ok(completions(*shell)),
        Command::Man { command } => man(command.as_deref()),
        // Dispatched by main before any broker command (agent_hooks.rs, spawn.rs, attach.rs).
        Command::Hook { .. }
        | Command::Hooks(_)
        | Command::Spawn(_)
        | Command::Attach { .. }
        | Command::Detach { .. }
        | Command::Notify(_)
        | Command::Dash { .. } => Err(CtlError::Usage(
            "hook, hooks, spawn, attach, detach, notify and dash are run by main, not here".into(),
        )),
    }
}

/// `events --follow`: every event, as it happens, to `write`.
pub fn follow_events(
    cli: &Cli,
    since: Option<u64>,
    types: &[String],
    write: &mut dyn FnMut(&EventRecord) -> std::io::Result<()>,
) -> Result<(), CtlError> {
    Config::load(cli.config.as_deref())?;
    crate::routing::follow(crate::broker::connect(cli)?, since, types, write)
}

fn captured(captured: clippy_client::Captured) -> Result<Report, CtlError> {
    Ok(Report::Captured {
        turn_id: captured.turn_id,
        byte_length: captured.byte_length,
    })
}

/// `deliver` needs `--session` for `inject` and `--path` for `file`, and nothing else.
fn check_deliver(
    sink: SinkArg,
    session: Option<&str>,
    path: Option<&Path>,
) -> Result<(), CtlError> {
    let usage = |message: &str| Err(CtlError::Usage(message.to_owned()));
    match sink {
        SinkArg::Inject if session.is_none() => usage("deliver inject needs --session SESSION"),
        SinkArg::File if path.is_none() => usage("deliver file needs --path PATH"),
        SinkArg::Inject | SinkArg::Clipboard if path.is_some() => {
            usage("--path is only for the file sink")
        }
        SinkArg::File | SinkArg::Clipboard if session.is_some() => {
            usage("--session and --focused are only for the inject sink")
        }
        _ => Ok(()),
    }
}

/// `path` made absolute against the current directory (the broker refuses relative paths), as
/// UTF-8 (the protocol carries paths as strings).
fn absolute_utf8(path: &Path) -> Result<String, CtlError> {
    let absolute = std::path::absolute(path).map_err(|source| CtlError::Io {
        context: format!("cannot make {} absolute", path.display()),
        source,
    })?;
    absolute.into_os_string().into_string().map_err(|raw| {
        CtlError::Usage(format!(
            "--path {} is not valid UTF-8, which the protocol cannot carry",
            Path::new(&raw).display()
        ))
    })
}

/// `status`: whether the broker answers, and what it holds. An unreachable broker is a status
/// to report; any other failure (a protocol error) is an error.
fn status(cli: &Cli) -> Result<Report, CtlError> {
    let endpoint = match endpoint(cli) {
        Ok(endpoint) => endpoint,
        Err(err) => {
            return Ok(Report::Status(Status {
                socket: None,
                broker: Err(err),
            }));
        }
    };
    let broker = Connection::connect(&endpoint)
        .map_err(CtlError::from)
        .and_then(|mut broker| {
            let sessions = broker.list_sessions()?;
            Ok(BrokerState {
                protocol_version: PROTOCOL_VERSION,
                sessions: sessions.len(),
                connected: sessions.iter().filter(|s| s.connected).count(),
                turns: sessions.iter().map(|s| u64::from(s.turns)).sum(),
                history: crate::history::status(&mut broker),
            })
        });
    match broker {
        Err(err) if !err.is_unreachable() => Err(err),
        broker => Ok(Report::Status(Status {
            socket: Some(endpoint.socket().to_owned()),
            broker,
        })),
    }
}

fn completions(shell: clap_complete::Shell) -> Report {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "clippy-ctl", &mut script);
    Report::Completions {
        shell: shell.to_string(),
        script: String::from_utf8_lossy(&script).into_owned(),
    }
}

/// The man page of `clippy-ctl`, or of one of its subcommands (`clippy-ctl-<command>(1)`, the
/// pages the main page's SUBCOMMANDS section names).
fn man(command: Option<&str>) -> Result<Report, CtlError> {
    let mut cli = Cli::command().disable_help_subcommand(true);
    // Building gives subcommands their full names (`clippy-ctl-get-turn`).
    cli.build();
    let page = match command {
        None => cli,
        Some(name) => cli.find_subcommand(name).cloned().ok_or_else(|| {
            CtlError::Usage(format!(
                "no command {name:?}; the commands are: {}",
                cli.get_subcommands()
                    .map(|sub| sub.get_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .map_err(|source| CtlError::Io {
            context: "cannot render the man page".into(),
            source,
        })?;
    Ok(Report::Man(title_first(&String::from_utf8_lossy(&roff))))
}

/// The page with its `.TH` line first. `roff` puts a preamble before it (defining the `Aq`
/// string for apostrophes); a page conventionally opens with `.TH`, and the definitions work the
/// same after it, as long as they precede the text that uses them.
fn title_first(page: &str) -> String {
    let mut lines: Vec<&str> = page.split_inclusive('\n').collect();
    if let Some(at) = lines.iter().position(|line| line.starts_with(".TH")) {
        let title = lines.remove(at);
        lines.insert(0, title);
    }
    lines.concat()
}

/// `answer`: the wait named, else the session's current one as the broker knows it (so an
/// answer meant for this dialog never reaches the next one: the wrapper refuses it as stale).
fn answer(
    connect: &dyn Fn() -> Result<Connection, CtlError>,
    session: &str,
    decision: clippy_proto::Decision,
    reason: Option<String>,
    waiting_id: Option<u64>,
) -> Result<Report, CtlError> {
    let answered = connect()?.answer(&clippy_client::Answer {
        session: session.to_owned(),
        decision,
        reason,
        waiting_id,
        by: Some("clippy-ctl".into()),
    })?;
    Ok(Report::Answered(answered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliver_arguments_are_checked_per_sink() {
        let p = Some(Path::new("out.txt"));
        assert!(check_deliver(SinkArg::Inject, Some("s"), None).is_ok());
        assert!(check_deliver(SinkArg::File, None, p).is_ok());
        assert!(check_deliver(SinkArg::Clipboard, None, None).is_ok());
        for (sink, session, path) in [
            (SinkArg::Inject, None, None),
            (SinkArg::Inject, Some("s"), p),
            (SinkArg::File, None, None),
            (SinkArg::File, Some("s"), p),
            (SinkArg::Clipboard, Some("s"), None),
            (SinkArg::Clipboard, None, p),
        ] {
            let err = check_deliver(sink, session, path).unwrap_err();
            assert!(matches!(err, CtlError::Usage(_)), "{sink:?}: {err:?}");
        }
    }

    #[test]
    fn relative_paths_become_absolute() {
        let cwd = std::env::current_dir().unwrap();
        let got = absolute_utf8(Path::new("sub/out.txt")).unwrap();
        assert_eq!(Path::new(&got), cwd.join("sub/out.txt"));
        assert_eq!(absolute_utf8(Path::new("/a/b")).unwrap(), "/a/b");
    }

    #[test]
    fn completions_and_man_are_generated() {
        let Report::Completions { script, .. } = completions(clap_complete::Shell::Bash) else {
            panic!("not completions");
        };
        assert!(script.contains("list-sessions"));
        let Report::Man(roff) = man(None).unwrap() else {
            panic!("not a man page");
        };
        assert!(roff.starts_with(".TH clippy-ctl 1"), "{roff}");
        assert!(roff.contains(".ds Aq"), "the apostrophe preamble stays");
        let Report::Man(roff) = man(Some("get-turn")).unwrap() else {
            panic!("not a man page");
        };
        assert!(roff.starts_with(".TH clippy-ctl-get-turn 1"), "{roff}");
        assert!(matches!(man(Some("nope")), Err(CtlError::Usage(_))));
    }

    #[test]
    fn the_title_line_moves_first() {
        assert_eq!(
            title_first(".ie x\n.el y\n.TH t 1\n.SH NAME\n"),
            ".TH t 1\n.ie x\n.el y\n.SH NAME\n"
        );
        assert_eq!(title_first("no title\n"), "no title\n");
    }
}
