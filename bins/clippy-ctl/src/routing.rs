//! The routing commands — `route add|list|rm|pause|resume`, `inbox`, `approve`, `deny` — and
//! `events`, whose `--follow` form streams: it prints each event as it arrives instead of
//! returning one [`Report`].

use std::io::Write;
use std::path::Path;

use clippy_proto::{EventRecord, Message, RouteKind, RouteSpec};

use crate::broker::{Broker, unexpected};
use crate::cli::{RouteCommand, RouteKindArg};
use crate::commands::Report;
use crate::error::CtlError;

/// Runs a `route` subcommand.
pub fn route(
    command: &RouteCommand,
    connect: &dyn Fn() -> Result<Broker, CtlError>,
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
            route_reply(
                "route_add",
                connect()?.request(|id| Message::RouteAdd { id, route: spec })?,
                "added",
            )
        }
        RouteCommand::List => match connect()?.request(|id| Message::RouteList { id })? {
            Message::Routes { routes, .. } => Ok(Report::Routes(routes)),
            other => Err(unexpected("route_list", &other)),
        },
        RouteCommand::Rm { route } => {
            let request = |id| Message::RouteRemove {
                id,
                route: route.clone(),
            };
            match connect()?.request(request)? {
                Message::Done { .. } => Ok(Report::RouteRemoved(route.clone())),
                other => Err(unexpected("route_remove", &other)),
            }
        }
        RouteCommand::Pause { route } => {
            let request = |id| Message::RoutePause {
                id,
                route: route.clone(),
            };
            route_reply("route_pause", connect()?.request(request)?, "paused")
        }
        RouteCommand::Resume { route } => {
            let request = |id| Message::RouteResume {
                id,
                route: route.clone(),
            };
            route_reply("route_resume", connect()?.request(request)?, "resumed")
        }
    }
}

fn route_reply(request: &str, reply: Message, verb: &'static str) -> Result<Report, CtlError> {
    match reply {
        Message::Route { route, .. } => Ok(Report::Route { route, verb }),
        other => Err(unexpected(request, &other)),
    }
}

/// `inbox SESSION`.
pub fn inbox(
    connect: &dyn Fn() -> Result<Broker, CtlError>,
    session: &str,
) -> Result<Report, CtlError> {
    let request = |id| Message::Inbox {
        id,
        session: session.to_owned(),
    };
    match connect()?.request(request)? {
        Message::InboxItems { session, items, .. } => Ok(Report::Inbox { session, items }),
        other => Err(unexpected("inbox", &other)),
    }
}

/// `approve ID [--edit FILE]` and `deny ID`.
pub fn resolve(
    connect: &dyn Fn() -> Result<Broker, CtlError>,
    approval: &str,
    approved: bool,
    edit: Option<&Path>,
) -> Result<Report, CtlError> {
    let text = edit
        .map(|path| read_text(path, "edited handoff"))
        .transpose()?;
    let edited = text.is_some();
    let reply = if approved {
        connect()?.request(|id| Message::Approve {
            id,
            approval: approval.to_owned(),
            text,
        })?
    } else {
        connect()?.request(|id| Message::Deny {
            id,
            approval: approval.to_owned(),
        })?
    };
    match reply {
        Message::Done { .. } => Ok(Report::Resolved {
            approval: approval.to_owned(),
            approved,
            edited,
        }),
        other => Err(unexpected(
            if approved { "approve" } else { "deny" },
            &other,
        )),
    }
}

/// `events` without `--follow`: the history.
pub fn events(
    connect: &dyn Fn() -> Result<Broker, CtlError>,
    since: Option<u64>,
    types: &[String],
) -> Result<Report, CtlError> {
    let request = |id| Message::ListEvents {
        id,
        since,
        types: types.to_vec(),
    };
    match connect()?.request(request)? {
        Message::Events { events, .. } => Ok(Report::Events(events)),
        other => Err(unexpected("list_events", &other)),
    }
}

/// `events --follow`: subscribes and writes each event with `write` as it arrives, until the
/// broker goes away (an error: the stream ended) or writing fails (the reader went away: done).
pub fn follow(
    mut broker: Broker,
    since: Option<u64>,
    types: &[String],
    write: &mut dyn FnMut(&EventRecord) -> std::io::Result<()>,
) -> Result<(), CtlError> {
    broker.wait_forever()?;
    let request = |id| Message::Subscribe {
        id,
        since,
        types: types.to_vec(),
    };
    match broker.request(request)? {
        Message::Subscribed { .. } => {}
        other => return Err(unexpected("subscribe", &other)),
    }
    let mut lagged = false;
    loop {
        let next = match broker.next_unsolicited() {
            Err(_) if lagged => return Err(CtlError::Lagged),
            next => next?,
        };
        match next {
            Message::Event { event, .. } => {
                lagged = event.kind == "subscriber.lagged";
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
            other => return Err(unexpected("an event", &other)),
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
