//! `clippy-ctl notify`: the broker's events followed, and what [`clippy_client::notices`]
//! decides shown — a desktop notification, a bell, a line on stdout. This file is the I/O edge:
//! the connection (and following the next broker when one goes away), the clock, the signals,
//! reading a turn's text when a notice needs it, and the outputs.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clippy_client::notices::{Kind, Notice, Notifier, Rules, Step};
use clippy_client::{ClientError, Connection, Endpoint};
use clippy_proto::Format;

use crate::cli::{Cli, NotifyArgs, NotifyOn};
use crate::error::CtlError;

/// How long a read of the event stream waits before time is let pass (the rate limit's
/// summary, a signal looked at).
const TICK: Duration = Duration::from_millis(500);
/// How often a broker that is not there is looked for again.
const RETRY: Duration = Duration::from_secs(1);

/// Where the notices go.
struct Outputs<'a> {
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    json: bool,
    bell: bool,
    desktop: bool,
    /// The desktop refused once (said on stderr); it is still tried, silently.
    desktop_failed: bool,
}

/// Runs until SIGINT or SIGTERM (`Ok`), or until stdout is gone (`Ok`).
pub fn run(
    cli: &Cli,
    args: &NotifyArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), CtlError> {
    let rules = Rules {
        sessions: args.sessions.clone(),
        waiting: args.on.contains(&NotifyOn::Waiting),
        turns: args.on.contains(&NotifyOn::Turn),
        burst: args.burst,
        interval_ms: args.interval_ms,
    };
    let endpoint = crate::broker::endpoint(cli)?;
    let stop = crate::stop::on_term_or_interrupt()?;
    let mut outputs = Outputs {
        out,
        err,
        json: cli.json,
        bell: args.bell,
        desktop: !args.no_desktop,
        desktop_failed: false,
    };
    let mut notifier = Notifier::new(rules);
    let types = notifier.rules().event_types();
    let mut lost = false;
    let mut waited_said = false;
    while !stop.load(Ordering::Relaxed) {
        let events = Connection::connect(&endpoint)
            .and_then(|broker| broker.subscribe(None, &types, Some(TICK)));
        let mut events = match events {
            Ok(events) => events,
            Err(error) => {
                if !lost && !waited_said {
                    say(
                        outputs.err,
                        &format!("no broker answers ({error}); waiting for one"),
                    );
                    waited_said = true;
                }
                pause(&stop, RETRY);
                continue;
            }
        };
        let socket = endpoint.socket().display();
        if std::mem::take(&mut lost) {
            say(
                outputs.err,
                &format!("following the broker at {socket} again"),
            );
        } else {
            say(
                outputs.err,
                &format!("following {} at {socket}", types.join(", ")),
            );
        }
        waited_said = false;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let now = clippy_proto::unix_ms_now();
            match events.next_event() {
                Ok(event) => {
                    let notice = match notifier.event(&event, now) {
                        Step::Nothing => None,
                        Step::Show(notice) => Some(notice),
                        Step::Turn(pending) => {
                            let text = turn_text(&endpoint, pending.turn_id());
                            Some(pending.with_text(text.as_deref()))
                        }
                    };
                    if let Some(notice) = notice
                        && !outputs.show(&notice)?
                    {
                        return Ok(());
                    }
                }
                Err(ClientError::NoAnswer { .. }) => {}
                Err(error) => {
                    let why = match error {
                        ClientError::Lagged => {
                            "it dropped this follower for reading too slowly".to_owned()
                        }
                        other => other.to_string(),
                    };
                    say(
                        outputs.err,
                        &format!("the broker went away ({why}); reconnecting"),
                    );
                    lost = true;
                    break;
                }
            }
            if let Some(summary) = notifier.tick(clippy_proto::unix_ms_now())
                && !outputs.show(&summary)?
            {
                return Ok(());
            }
        }
        pause(&stop, RETRY);
    }
    Ok(())
}

/// The turn's text for its notice: the agent's own message when its hooks reported one, else
/// what the screen showed; `None` when neither can be read.
fn turn_text(endpoint: &Endpoint, turn_id: &str) -> Option<String> {
    let mut broker = Connection::connect(endpoint).ok()?;
    let turn = broker
        .get_turn(turn_id, Format::Message)
        .or_else(|_| broker.get_turn(turn_id, Format::Text))
        .ok()?;
    Some(String::from_utf8_lossy(&turn.content).into_owned())
}

impl Outputs<'_> {
    /// Shows one notice; `false` when stdout is gone (the reader left: done).
    fn show(&mut self, notice: &Notice) -> Result<bool, CtlError> {
        if self.bell {
            let _ = self.err.write_all(b"\x07");
            let _ = self.err.flush();
        }
        if self.desktop {
            let shown =
                clippy_desktop::notify(&notice.title, &notice.body, notice.kind == Kind::Waiting);
            if let Err(error) = shown
                && !self.desktop_failed
            {
                self.desktop_failed = true;
                say(
                    self.err,
                    &format!("{error}; going on with the lines on stdout (--no-desktop: quiet)"),
                );
            }
        }
        let line = if self.json {
            serde_json::json!({
                "notice": {
                    "kind": notice.kind.as_str(),
                    "session": notice.session,
                    "turn_id": notice.turn_id,
                    "title": notice.title,
                    "body": notice.body,
                }
            })
            .to_string()
        } else {
            format!("{}: {}", notice.title, notice.body.replace('\n', " — "))
        };
        let written = writeln!(self.out, "{line}").and_then(|()| self.out.flush());
        match written {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
            Err(source) => Err(CtlError::Io {
                context: "cannot write the notice".into(),
                source,
            }),
        }
    }
}

/// A line on stderr, `clippy-ctl notify: …`.
fn say(err: &mut dyn Write, text: &str) {
    let _ = writeln!(err, "clippy-ctl notify: {text}");
    let _ = err.flush();
}

/// Sleeps `span`, or less when a signal came.
fn pause(stop: &AtomicBool, span: Duration) {
    let until = Instant::now() + span;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command, NotifyArgs, NotifyOn};

    fn parse(args: &[&str]) -> Result<NotifyArgs, clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("clippy-ctl").chain(args.iter().copied()))?;
        match cli.command {
            Command::Notify(args) => Ok(args),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn notify_tells_waits_and_turns_of_every_session_by_default() {
        let args = parse(&["notify"]).unwrap();
        assert!(args.sessions.is_empty());
        assert_eq!(args.on, [NotifyOn::Waiting, NotifyOn::Turn]);
        assert!(!args.bell && !args.no_desktop);
        assert_eq!((args.burst, args.interval_ms), (3, 10_000));
    }

    #[test]
    fn notify_takes_sessions_kinds_and_limits() {
        let args = parse(&[
            "notify",
            "coder",
            "k3f9",
            "--on",
            "waiting",
            "--bell",
            "--no-desktop",
            "--burst",
            "5",
            "--interval-ms",
            "2000",
        ])
        .unwrap();
        assert_eq!(args.sessions, ["coder", "k3f9"]);
        assert_eq!(args.on, [NotifyOn::Waiting]);
        assert!(args.bell && args.no_desktop);
        assert_eq!((args.burst, args.interval_ms), (5, 2000));
        let args = parse(&["notify", "--on", "turn,waiting"]).unwrap();
        assert_eq!(args.on, [NotifyOn::Turn, NotifyOn::Waiting]);
        for bad in [
            &["notify", "--on", "exit"][..],
            &["notify", "--burst", "0"],
            &["notify", "--interval-ms", "0"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
