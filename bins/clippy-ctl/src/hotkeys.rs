//! `clippy-ctl hotkeys` (the long-running X11 hotkey client), `tmux-bindings`, and `--notify`
//! feedback (`CONTRACTS/HOTKEY.md`).
//!
//! One action at a time: a press is resolved, sent and reported before the next key event is
//! read. Feedback is a desktop notification; when there is none, the bell and stderr, so an
//! error is never silent.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clippy_desktop::{
    Binding, Environment, HotkeyAction, HotkeyEvent, HotkeyProvider, Regrab, SessionResolver, Tmux,
    X11Hotkeys, X11Resolver, tmux_bindings,
};
use clippy_proto::Format;

use clippy_client::{Connection, Sink};

use crate::cli::{BindingArgs, Cli};
use crate::commands::Report;
use crate::config::Config;
use crate::error::CtlError;
use crate::focus::{desktop, environment, session_refs};

/// How often the loop looks at the broker connection and the signal flags.
const TICK: Duration = Duration::from_millis(200);

/// What the hotkeys paste and copy: the agent's own final message where its hooks gave one,
/// else the text a person saw (the broker falls back; SPEC §4: the text view is for relaying
/// into another agent), whatever `ctl.format` says. Raw bytes carry the reply's escapes and its
/// final CR LF, which the receiving program would read as keys and as Enter.
const RELAY_FORMAT: Format = Format::Message;

/// The bindings in effect: the command line over `[hotkeys]`; `""` unbinds. Each is parsed;
/// a bad one is a usage error naming where it came from.
pub fn bindings(
    args: &BindingArgs,
    config: &Config,
) -> Result<Vec<(HotkeyAction, Binding)>, CtlError> {
    let hk = &config.hotkeys;
    let pairs = [
        (HotkeyAction::Capture, &args.capture, &hk.capture),
        (HotkeyAction::Paste, &args.paste, &hk.paste),
        (
            HotkeyAction::DeliverClipboard,
            &args.deliver_clipboard,
            &hk.deliver_clipboard,
        ),
        (
            HotkeyAction::CaptureAndCopy,
            &args.capture_and_copy,
            &hk.capture_and_copy,
        ),
    ];
    let mut out = Vec::new();
    for (action, flag, configured) in pairs {
        let (text, origin) = match (flag, configured) {
            (Some(text), _) => (
                text.as_str(),
                format!("--{}", action.as_str().replace('_', "-")),
            ),
            (None, Some(text)) => (text.as_str(), format!("hotkeys.{action}")),
            (None, None) => continue,
        };
        if text.is_empty() {
            continue;
        }
        let binding = text
            .parse::<Binding>()
            .map_err(|e| CtlError::Usage(format!("{origin}: {e}")))?;
        if let Some((other, _)) = out.iter().find(|(_, b)| *b == binding) {
            return Err(CtlError::Usage(format!(
                "{origin}: {binding} is already the binding of {other}"
            )));
        }
        out.push((action, binding));
    }
    if out.is_empty() {
        return Err(CtlError::Usage(
            "no key bindings: set [hotkeys] in the configuration or pass --capture/--paste".into(),
        ));
    }
    Ok(out)
}

/// `tmux-bindings`.
pub fn tmux_bindings_report(args: &BindingArgs, config: &Config) -> Result<Report, CtlError> {
    let bindings = bindings(args, config)?;
    let ctl = std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
        .unwrap_or_else(|| "clippy-ctl".to_owned());
    Ok(Report::TmuxBindings(tmux_bindings(&ctl, &bindings)))
}

/// `hotkeys`: runs until a signal (Ok) or the broker goes away (Err, exit 3).
pub fn run(cli: &Cli, args: &BindingArgs, config: &Config) -> Result<Report, CtlError> {
    let bindings = bindings(args, config)?;
    let env = environment(cli, config)?;
    if env == Environment::Tmux {
        return Err(CtlError::Usage(
            "in tmux, the hotkeys are tmux key bindings: load them with \
             `clippy-ctl tmux-bindings | tmux source-file -` (or add them to ~/.tmux.conf)"
                .into(),
        ));
    }
    let mut broker = crate::broker::connect(cli)?;
    let mut keys = X11Hotkeys::connect(None).map_err(desktop)?;
    let mut resolver = X11Resolver::connect(None).map_err(desktop)?;

    let stop = crate::stop::on_term_or_interrupt()?;

    let results = keys.register(&bindings);
    let mut grabbed = Vec::new();
    for ((action, binding), result) in bindings.iter().zip(results) {
        match result {
            Ok(()) => grabbed.push(format!("{action} = {binding}")),
            Err(error) => tell(
                &mut keys,
                "clippy: hotkey not available",
                &format!("{action} ({binding}): {error}"),
                true,
            ),
        }
    }
    if grabbed.is_empty() {
        return Err(CtlError::Desktop {
            reason: "grab_failed",
            message: "no hotkey could be grabbed (see above)".into(),
        });
    }
    log(&format!(
        "listening: {} (SIGINT or SIGTERM to stop)",
        grabbed.join(", ")
    ));

    // The actions whose binding a keyboard mapping change took away.
    let mut lost = BTreeSet::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            keys.unregister().map_err(desktop)?;
            return Ok(Report::HotkeysStopped);
        }
        if !broker.is_open() {
            let error = CtlError::Client(clippy_client::ClientError::Unreachable {
                socket: broker.socket().to_owned(),
                detail: "the broker closed the connection".into(),
            });
            return Err(stopped(&mut keys, error));
        }
        let action = match keys.next_event(Some(TICK)) {
            Ok(None) => continue,
            Ok(Some(HotkeyEvent::Pressed(action))) => action,
            Ok(Some(HotkeyEvent::Regrabbed(results))) => {
                let (notes, any_grabbed) = after_regrab(&mut lost, &results);
                for note in notes {
                    tell(&mut keys, note.summary, &note.body, note.error);
                }
                if !any_grabbed {
                    let error = CtlError::Desktop {
                        reason: "grab_failed",
                        message: "no hotkey is grabbed any more: the keyboard mapping changed \
                                  and none of the bindings could be grabbed again (see above)"
                            .into(),
                    };
                    return Err(stopped(&mut keys, error));
                }
                continue;
            }
            // The X server went away (or broke the connection): nothing more can be grabbed.
            Err(error) => return Err(stopped(&mut keys, desktop(error))),
        };
        match perform(action, RELAY_FORMAT, &mut broker, &mut resolver) {
            Ok(message) => tell(&mut keys, "clippy", &message, false),
            Err(error) if error.is_unreachable() => return Err(stopped(&mut keys, error)),
            Err(error) => tell(
                &mut keys,
                &format!("clippy: {action} failed"),
                &error.to_string(),
                true,
            ),
        }
    }
}

/// A message for the user: a notification's summary and body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Note {
    summary: &'static str,
    body: String,
    error: bool,
}

/// Reads the results of grabbing again after a keyboard mapping change: what to tell the user,
/// and whether any binding is still grabbed. `lost` holds the actions whose binding is not
/// grabbed now; a binding is reported when it stops working and when it works again, not on
/// every mapping change in between.
fn after_regrab(lost: &mut BTreeSet<HotkeyAction>, results: &[Regrab]) -> (Vec<Note>, bool) {
    let mut notes = Vec::new();
    for Regrab {
        action,
        binding,
        result,
    } in results
    {
        match result {
            Err(error) if lost.insert(*action) => notes.push(Note {
                summary: "clippy: hotkey lost",
                body: format!(
                    "{action} ({binding}) no longer works after the keyboard mapping changed: \
                     {error}"
                ),
                error: true,
            }),
            Ok(()) if lost.remove(action) => notes.push(Note {
                summary: "clippy",
                body: format!("{action} ({binding}) works again"),
                error: false,
            }),
            _ => {}
        }
    }
    (notes, results.iter().any(|r| r.result.is_ok()))
}

/// Carries out one hotkey; the sentence to show.
fn perform(
    action: HotkeyAction,
    format: Format,
    broker: &mut Connection,
    resolver: &mut dyn SessionResolver,
) -> Result<String, CtlError> {
    let focused = if action.needs_focus() {
        let sessions = session_refs(broker)?;
        Some(resolver.focused_session(&sessions).map_err(desktop)?)
    } else {
        None
    };
    let capture = |broker: &mut Connection, session: &clippy_desktop::SessionRef| {
        let captured = broker.capture(&session.session)?;
        let seq = captured
            .turn_id
            .rsplit(':')
            .next()
            .unwrap_or_default()
            .to_owned();
        Ok::<_, CtlError>(format!(
            "captured {}:{seq}, {}",
            session.label(),
            human_size(captured.byte_length)
        ))
    };
    let copy = |broker: &mut Connection| broker.deliver(&Sink::Clipboard, format);
    match (action, focused) {
        (HotkeyAction::Capture, Some(session)) => capture(broker, &session),
        (HotkeyAction::Paste, Some(session)) => {
            broker.paste(&session.session, format)?;
            Ok(format!("pasted into {}", session.label()))
        }
        (HotkeyAction::CaptureAndCopy, Some(session)) => {
            let captured = capture(broker, &session)?;
            copy(broker)?;
            Ok(format!("{captured}, copied to the clipboard"))
        }
        _ => {
            copy(broker)?;
            Ok("copied the relay buffer to the clipboard".into())
        }
    }
}

/// `2.1 KiB`, `512 B`, `3.4 MiB`.
fn human_size(bytes: u32) -> String {
    let b = f64::from(bytes);
    if bytes < 1024 {
        format!("{bytes} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    }
}

fn log(line: &str) {
    let _ = writeln!(std::io::stderr(), "clippy-ctl hotkeys: {line}");
}

/// Ungrabs the hotkeys and says that they stopped, and why: `error`, which is returned.
fn stopped(keys: &mut dyn HotkeyProvider, error: CtlError) -> CtlError {
    let _ = keys.unregister();
    tell(keys, "clippy: hotkeys stopped", &error.to_string(), true);
    error
}

/// Tells the user: a notification; errors also ring the bell when no notification could be
/// shown. Every line also goes to stderr (the hotkey client's log).
fn tell(keys: &mut dyn HotkeyProvider, summary: &str, body: &str, error: bool) {
    log(body);
    if clippy_desktop::notify(summary, body, error).is_err() && error {
        keys.bell();
        let _ = std::io::stderr().write_all(b"\x07");
    }
}

/// `--notify`: shows `text` (the command's human output, or its error) where the user looks:
/// tmux's status line in tmux, else a desktop notification, else the bell and stderr.
/// Returns whether it was shown somewhere other than stderr.
pub fn notify(cli: &Cli, config: &Config, text: &str, error: bool) -> bool {
    let text = text.trim();
    if matches!(environment(cli, config), Ok(Environment::Tmux))
        && Tmux::new()
            .display_message(&format!("clippy: {text}"))
            .is_ok()
    {
        return true;
    }
    if clippy_desktop::notify(if error { "clippy: failed" } else { "clippy" }, text, error).is_ok()
    {
        return true;
    }
    let mut err = std::io::stderr();
    if error {
        let _ = err.write_all(b"\x07");
    }
    let _ = writeln!(err, "{text}");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_people_write_them() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(2150), "2.1 KiB");
        assert_eq!(human_size(3 * 1024 * 1024 + 400_000), "3.4 MiB");
    }

    #[test]
    fn flags_override_the_configuration_and_empty_unbinds() {
        let config = Config::default();
        let got = bindings(&BindingArgs::default(), &config).unwrap();
        let names: Vec<String> = got.iter().map(|(a, b)| format!("{a}={b}")).collect();
        assert_eq!(names, ["capture=super+shift+c", "paste=super+shift+v"]);
        let args = BindingArgs {
            paste: Some(String::new()),
            capture_and_copy: Some("ctrl+alt+x".into()),
            ..BindingArgs::default()
        };
        let got = bindings(&args, &config).unwrap();
        let names: Vec<String> = got.iter().map(|(a, b)| format!("{a}={b}")).collect();
        assert_eq!(
            names,
            ["capture=super+shift+c", "capture_and_copy=ctrl+alt+x"]
        );
    }

    fn regrab(action: HotkeyAction, binding: &str, key_gone: bool) -> Regrab {
        let binding: Binding = binding.parse().unwrap();
        let result = if key_gone {
            Err(clippy_desktop::DesktopError::NoKeycode {
                binding: binding.to_string(),
                key: binding.key.name.to_owned(),
            })
        } else {
            Ok(())
        };
        Regrab {
            action,
            binding,
            result,
        }
    }

    #[test]
    fn a_binding_lost_to_a_remap_is_reported_once_and_again_when_it_is_back() {
        use HotkeyAction::{Capture, Paste};
        let mut lost = BTreeSet::new();
        // Every binding grabbed again: nothing to say.
        let all = [
            regrab(Capture, "super+shift+c", false),
            regrab(Paste, "super+shift+v", false),
        ];
        assert_eq!(after_regrab(&mut lost, &all), (vec![], true));

        // c is on no key any more: capture is lost, an error; paste still works.
        let no_c = [
            regrab(Capture, "super+shift+c", true),
            regrab(Paste, "super+shift+v", false),
        ];
        let (notes, any) = after_regrab(&mut lost, &no_c);
        assert!(any);
        assert_eq!(
            notes,
            [Note {
                summary: "clippy: hotkey lost",
                body: "capture (super+shift+c) no longer works after the keyboard mapping \
                       changed: super+shift+c: no key of this keyboard produces c"
                    .into(),
                error: true,
            }]
        );
        // Another mapping change with c still gone: not said again.
        assert_eq!(after_regrab(&mut lost, &no_c), (vec![], true));

        // c is back.
        let (notes, any) = after_regrab(&mut lost, &all);
        assert!(any && lost.is_empty());
        assert_eq!(
            notes,
            [Note {
                summary: "clippy",
                body: "capture (super+shift+c) works again".into(),
                error: false,
            }]
        );

        // Neither key is left: both reported, and nothing is grabbed (the client exits 1).
        let none = [
            regrab(Capture, "super+shift+c", true),
            regrab(Paste, "super+shift+v", true),
        ];
        let (notes, any) = after_regrab(&mut lost, &none);
        assert!(!any);
        assert_eq!(notes.len(), 2);
        assert!(notes.iter().all(|n| n.error), "{notes:?}");
        assert!(
            notes[1]
                .body
                .starts_with("paste (super+shift+v) no longer works")
        );
    }

    #[test]
    fn bad_or_duplicate_bindings_are_usage_errors() {
        let config = Config::default();
        let bare = BindingArgs {
            capture: Some("c".into()),
            ..BindingArgs::default()
        };
        let err = bindings(&bare, &config).unwrap_err();
        assert!(matches!(err, CtlError::Usage(_)));
        assert!(err.to_string().starts_with("--capture: "), "{err}");
        let twice = BindingArgs {
            paste: Some("super+shift+c".into()),
            ..BindingArgs::default()
        };
        assert!(bindings(&twice, &config).is_err());
        let none = BindingArgs {
            capture: Some(String::new()),
            paste: Some(String::new()),
            ..BindingArgs::default()
        };
        assert!(bindings(&none, &config).is_err());
    }
}
