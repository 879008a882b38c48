//! The routing commands — `route add|list|rm|pause|resume`, `inbox`, `approve`, `deny` — and
//! `events`, whose `--follow` form streams: it prints each event as it arrives instead of
//! returning one [`Report`].

use std::io::Write;
use std::path::Path;

use clippy_client::Connection;
use clippy_proto::{EventRecord, RouteKind, RouteSpec};

use crate::cli::{RouteCommand, RouteKindArg};
use crate::commands::Report;
use crate::error::CtlError;

/// Runs a `route` subcommand.
pub fn route(
    command: &RouteCommand,
    connect: &dyn Fn() -> Result<Connection, CtlError>,
) -> Result<Report, CtlError> {
    match command {
        RouteCommand::Add {
            from,
            to,
            kind,
            template,
            template_text,
            format,
            interrupt,
            max_hops,
            gated,
            no_submit,
            ..
        } => {
            let template = match (template, template_text) {
                (Some(path), _) => Some(read_text(path, "template")?),
                (None, text) => text.clone(),
            };
            let spec = RouteSpec {
                from: from.clone(),
                to: to.clone(),
                kind: match kind {
                    RouteKindArg::Handoff => RouteKind::Handoff,
                    RouteKindArg::Report => RouteKind::Report,
                },
                template,
                format: format.map(Into::into),
                interrupt: *interrupt,
                max_hops: *max_hops,
                gated: *gated,
                submit: Some(!no_submit),
            };
            Ok(Report::Route {
                route: connect()?.route_add(spec)?,
                verb: "added",
            })
        }
        RouteCommand::List => Ok(Report::Routes(connect()?.route_list()?)),
        RouteCommand::Rm { route } => {
            connect()?.route_remove(route)?;
            Ok(Report::RouteRemoved(route.clone()))
        }
        RouteCommand::Pause { route } => Ok(Report::Route {
            route: connect()?.route_pause(route)?,
            verb: "paused",
        }),
        RouteCommand::Resume { route } => Ok(Report::Route {
            route: connect()?.route_resume(route)?,
            verb: "resumed",
        }),
    }
}

/// `inbox SESSION`.
pub fn inbox(
    connect: &dyn Fn() -> Result<Connection, CtlError>,
    session: &str,
) -> Result<Report, CtlError> {
    let inbox = connect()?.inbox(session)?;
    Ok(Report::Inbox {
        session: inbox.session,
        items: inbox.items,
    })
}

/// `approve ID [--edit FILE]` and `deny ID`.
pub fn resolve(
    connect: &dyn Fn() -> Result<Connection, CtlError>,
    approval: &str,
    approved: bool,
    edit: Option<&Path>,
) -> Result<Report, CtlError> {
    let text = edit
        .map(|path| read_text(path, "edited handoff"))
        .transpose()?;
    let edited = text.is_some();
    let mut broker = connect()?;
    if approved {
        broker.approve(approval, text)?;
    } else {
        broker.deny(approval)?;
    }
    Ok(Report::Resolved {
        approval: approval.to_owned(),
        approved,
        edited,
    })
}

/// `events` without `--follow`: the history.
pub fn events(
    connect: &dyn Fn() -> Result<Connection, CtlError>,
    since: Option<u64>,
    types: &[String],
) -> Result<Report, CtlError> {
    Ok(Report::Events(connect()?.list_events(since, types)?))
}

/// `events --follow`: subscribes and writes each event with `write` as it arrives, until the
/// broker goes away (an error: the stream ended) or writing fails (the reader went away: done).
pub fn follow(
    broker: Connection,
    since: Option<u64>,
    types: &[String],
    write: &mut dyn FnMut(&EventRecord) -> std::io::Result<()>,
) -> Result<(), CtlError> {
    let mut events = broker.subscribe(since, types, None)?;
    loop {
        let event = events.next_event()?;
        if let Err(e) = write(&event) {
            return if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(CtlError::Io {
                    context: "cannot write the event".into(),
                    source: e,
                })
            };
        }
    }
}

fn read_text(path: &Path, what: &str) -> Result<String, CtlError> {
    std::fs::read_to_string(path).map_err(|source| CtlError::Io {
        context: format!("cannot read the {what} {}", path.display()),
        source,
    })
}

/// Writes one event as a JSON line or a line for people, and flushes (a follower shows each
/// event as it happens).
pub fn write_event(out: &mut dyn Write, event: &EventRecord, json: bool) -> std::io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, event)?;
        out.write_all(b"\n")?;
    } else {
        writeln!(out, "{}", crate::output::event_line(event))?;
    }
    out.flush()
}
