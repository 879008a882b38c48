//! One function per subcommand: check the arguments, ask the broker, return a [`Report`] for
//! [`crate::output`] to render. Nothing here prints.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::CommandFactory;
use clippy_proto::{
    EventRecord, Format, HistoryEntry, HistoryInfo, InboxItem, Message, PROTOCOL_VERSION,
    RouteInfo, ScreenData, SearchHit, SessionState, SessionSummary, TurnMeta,
};

use crate::broker::{Broker, resolve_socket, unexpected};
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
    let connect = || Broker::connect(&resolve_socket(cli.socket.as_deref())?, timeout);
    match &cli.command {
        Command::ListSessions => match connect()?.request(|id| Message::ListSessions { id })? {
            Message::Sessions { sessions, .. } => Ok(Report::Sessions(sessions)),
            other => Err(unexpected("list_sessions", &other)),
        },
        Command::ListTurns { session, limit } => {
            let request = |id| Message::ListTurns {
                id,
                session: session.clone(),
                limit: *limit,
            };
            match connect()?.request(request)? {
                Message::Turns { turns, .. } => Ok(Report::Turns {
                    session: session.clone(),
                    turns,
                }),
                other => Err(unexpected("list_turns", &other)),
            }
        }
        Command::GetTurn {
            target,
            format: arg,
        } => {
            let format = format(arg);
            // A turn id (it has a ':') and a session (its latest turn) travel in the same field;
            // the broker tells them apart the same way.
            let request = |id| Message::GetTurn {
                id,
                turn_id: target.clone(),
                format,
            };
            match connect()?.request(request)? {
                Message::Turn { turn, content, .. } => Ok(Report::Turn {
                    meta: turn,
                    format,
                    content: content.into_vec(),
                }),
                other => Err(unexpected("get_turn", &other)),
            }
        }
        Command::Capture { session, focused } => {
            let mut broker = connect()?;
            let (session, _) =
                focus::target(session.as_deref(), *focused, cli, &config, &mut broker)?;
            let request = |id| Message::Capture { id, session };
            captured("capture", broker.request(request)?)
        }
        Command::CaptureById { turn_id } => {
            let request = |id| Message::CaptureById {
                id,
                turn_id: turn_id.clone(),
            };
            captured("capture_by_id", connect()?.request(request)?)
        }
        Command::Paste {
            session,
            focused,
            format: arg,
        } => {
            let format = format(arg);
            let mut broker = connect()?;
            let (session, label) =
                focus::target(session.as_deref(), *focused, cli, &config, &mut broker)?;
            let request = |id| Message::Paste {
                id,
                session,
                format,
            };
            match broker.request(request)? {
                Message::Done { .. } => Ok(Report::Pasted {
                    session: label,
                    format,
                }),
                other => Err(unexpected("paste", &other)),
            }
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
            let request = |id| Message::Deliver {
                id,
                sink: sink.as_str().to_owned(),
                session: session.clone(),
                path: path.clone(),
                format,
            };
            match broker.request(request)? {
                Message::Done { .. } => Ok(Report::Delivered {
                    sink: *sink,
                    session: session.clone(),
                    path,
                    format,
                }),
                other => Err(unexpected("deliver", &other)),
            }
        }
        Command::Status { session: None } => status(cli.socket.as_deref(), timeout),
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
            screen(broker, session, *history, timeout)
        }
        // What a script runs right after starting a session in the background, whose wrapper
        // may not have started the broker yet (or registered: the broker then waits for it).
        Command::Spool(
            command @ (SpoolCommand::WaitFor { .. }
            | SpoolCommand::WaitPrompt { .. }
            | SpoolCommand::ExpectSend { .. }
            | SpoolCommand::Exec { .. }),
        ) => {
            let connect_starting =
                || Broker::connect_starting(&resolve_socket(cli.socket.as_deref())?, timeout);
            crate::spool::run(command, timeout, &connect_starting)
        }
        Command::Spool(command) => crate::spool::run(command, timeout, &connect),
        Command::Route(command) => crate::routing::route(command, &connect),
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
        | Command::Detach { .. } => Err(CtlError::Usage(
            "hook, hooks, spawn, attach and detach are run by main, not here".into(),
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
    let socket = resolve_socket(cli.socket.as_deref())?;
    let broker = Broker::connect(&socket, Duration::from_millis(cli.timeout))?;
    crate::routing::follow(broker, since, types, write)
}

/// `screen`: the broker asks the session's wrapper, which may take up to `timeout` (then the
/// broker answers `timeout`); the reply may take a grace period more to arrive.
fn screen(
    mut broker: Broker,
    session: String,
    history: u32,
    timeout: Duration,
) -> Result<Report, CtlError> {
    broker.allow_reply_after(timeout + crate::spool::REPLY_GRACE)?;
    let request = |id| Message::Screen {
        id,
        session,
        history,
        timeout_ms: Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
    };
    match broker.request(request)? {
        Message::ScreenSnapshot {
            session,
            lines,
            history,
            cols,
            rows,
            cursor_row,
            cursor_col,
            alternate,
            ..
        } => Ok(Report::Screen {
            session,
            screen: ScreenData {
                lines,
                history,
                cols,
                rows,
                cursor_row,
                cursor_col,
                alternate,
            },
        }),
        other => Err(unexpected("screen", &other)),
    }
}

fn captured(request: &str, reply: Message) -> Result<Report, CtlError> {
    match reply {
        Message::Captured {
            turn_id,
            byte_length,
            ..
        } => Ok(Report::Captured {
            turn_id,
            byte_length,
        }),
        other => Err(unexpected(request, &other)),
    }
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
fn status(explicit: Option<&Path>, timeout: Duration) -> Result<Report, CtlError> {
    let socket = match resolve_socket(explicit) {
        Ok(socket) => socket,
        Err(err) => {
            return Ok(Report::Status(Status {
                socket: None,
                broker: Err(err),
            }));
        }
    };
    let broker = Broker::connect(&socket, timeout).and_then(|mut broker| {
        match broker.request(|id| Message::ListSessions { id })? {
            Message::Sessions { sessions, .. } => Ok(BrokerState {
                protocol_version: PROTOCOL_VERSION,
                sessions: sessions.len(),
                connected: sessions.iter().filter(|s| s.connected).count(),
                turns: sessions.iter().map(|s| u64::from(s.turns)).sum(),
                history: crate::history::status(&mut broker),
            }),
            other => Err(unexpected("list_sessions", &other)),
        }
    });
    match broker {
        Err(err) if !err.is_unreachable() => Err(err),
        broker => Ok(Report::Status(Status {
            socket: Some(socket),
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
