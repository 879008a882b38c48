//! The tmux adapters: the focused session is the one under the active pane's process, the
//! clipboard is the tmux paste buffer, and hotkeys are `tmux bind-key` lines (tmux runs the
//! command itself, so no process of ours has to listen for keys).
//!
//! tmux is run as a command. Without a socket option it finds its server the way it always does:
//! through `$TMUX` inside tmux (also in commands a key binding runs), else the default socket.

use std::ffi::OsString;
use std::io::Write;
use std::process::{Command, Stdio};

use crate::binding::{Binding, HotkeyAction};
use crate::error::{DesktopError, FocusError};
use crate::process::{ProcessTable, SessionRef, resolve_focus};
use crate::{ClipboardProvider, Located, SessionResolver};

/// How to reach a tmux server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tmux {
    /// Extra arguments before the command: `-L name` or `-S path`; empty for the default.
    socket_args: Vec<OsString>,
}

impl Tmux {
    /// The server tmux finds by itself (`$TMUX`, else the default socket).
    #[must_use]
    pub fn new() -> Tmux {
        Tmux::default()
    }

    /// The server on the named socket (`tmux -L name`).
    #[must_use]
    pub fn with_socket_name(name: &str) -> Tmux {
        Tmux {
            socket_args: vec!["-L".into(), name.into()],
        }
    }

    /// A `tmux` command for this server.
    #[must_use]
    pub fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(&self.socket_args);
        command
    }

    /// Runs `tmux ARGS` (with `input` on stdin) and returns its stdout.
    ///
    /// # Errors
    ///
    /// [`DesktopError::Unavailable`] when tmux is not installed; [`DesktopError::Tmux`] with
    /// tmux's message when it fails.
    pub fn run(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, DesktopError> {
        let mut command = self.command();
        command
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                DesktopError::Unavailable("tmux is not installed".into())
            } else {
                DesktopError::Tmux(format!("cannot run tmux: {e}"))
            }
        })?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(input)
                .map_err(|e| DesktopError::Tmux(format!("cannot write to tmux: {e}")))?;
        }
        let output = child
            .wait_with_output()
            .map_err(|e| DesktopError::Tmux(format!("cannot run tmux: {e}")))?;
        if !output.status.success() {
            let message = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            return Err(DesktopError::Tmux(format!(
                "`tmux {}` failed: {}",
                args.first().copied().unwrap_or_default(),
                if message.is_empty() {
                    output.status.to_string()
                } else {
                    message
                }
            )));
        }
        Ok(output.stdout)
    }

    /// The pid of the process in the active pane (`#{pane_pid}`): the pane's shell or command.
    ///
    /// # Errors
    ///
    /// As [`Tmux::run`]; [`DesktopError::Tmux`] when the answer is not a pid.
    pub fn active_pane_pid(&self) -> Result<u32, DesktopError> {
        let out = self.run(&["display-message", "-p", "#{pane_pid}"], None)?;
        let text = String::from_utf8_lossy(&out);
        text.trim()
            .parse()
            .map_err(|_| DesktopError::Tmux(format!("#{{pane_pid}} is not a pid: {text:?}")))
    }

    /// Shows `message` in the status line of the attached clients (`display-message`), for
    /// 4 s where tmux can be told (`-d`, tmux 3.2 and later), else for tmux's `display-time`.
    ///
    /// # Errors
    ///
    /// As [`Tmux::run`], the error of the try without `-d`.
    pub fn display_message(&self, message: &str) -> Result<(), DesktopError> {
        // `#` starts a tmux format: double it so the message is shown as it is.
        let escaped = message.replace('#', "##");
        display_with_fallback(|args| self.run(args, None).map(drop), &escaped)
    }
}

/// Runs `display-message -d 4000 MESSAGE` with `run`; if that fails (a tmux before 3.2 refuses
/// the unknown flag `-d`), `display-message MESSAGE`.
fn display_with_fallback(
    mut run: impl FnMut(&[&str]) -> Result<(), DesktopError>,
    message: &str,
) -> Result<(), DesktopError> {
    run(&["display-message", "-d", "4000", message]).or_else(|_| run(&["display-message", message]))
}

/// The focused session in tmux: the session under the active pane's process.
#[derive(Debug, Clone, Default)]
pub struct TmuxResolver {
    tmux: Tmux,
}

impl TmuxResolver {
    /// A resolver for the server `tmux` reaches.
    #[must_use]
    pub fn new(tmux: Tmux) -> TmuxResolver {
        TmuxResolver { tmux }
    }
}

impl SessionResolver for TmuxResolver {
    fn focused_session(&mut self, sessions: &[SessionRef]) -> Result<SessionRef, DesktopError> {
        let pid = self.tmux.active_pane_pid()?;
        let table = ProcessTable::snapshot().map_err(DesktopError::io("cannot read /proc"))?;
        match resolve_focus(pid, sessions, &table) {
            Ok(session) => Ok(session.clone()),
            Err(FocusError::NoSession { pid }) => Err(FocusError::NoFocus(format!(
                "no clippy session runs in the active tmux pane (process {pid})"
            ))
            .into()),
            Err(other) => Err(other.into()),
        }
    }

    fn discover_sessions(&mut self, sessions: &[SessionRef]) -> Result<Vec<Located>, DesktopError> {
        let out = self.tmux.run(
            &[
                "list-panes",
                "-a",
                "-F",
                "#{pane_pid} #{session_name}:#{window_index}.#{pane_index}",
            ],
            None,
        )?;
        let table = ProcessTable::snapshot().map_err(DesktopError::io("cannot read /proc"))?;
        let mut found = Vec::new();
        for line in String::from_utf8_lossy(&out).lines() {
            let Some((pid, pane)) = line.split_once(' ') else {
                continue;
            };
            let Ok(pid) = pid.parse::<u32>() else {
                continue;
            };
            for session in sessions {
                if table.descends_from(session.pid, pid) {
                    found.push(Located {
                        session: session.clone(),
                        place: format!("tmux pane {pane} (process {pid})"),
                    });
                }
            }
        }
        Ok(found)
    }
}

/// The tmux paste buffer as the clipboard: `load-buffer -` to write (no size limit of a
/// command line), `save-buffer -` to read. What is written is pasted with the usual
/// `prefix ]`.
#[derive(Debug, Clone, Default)]
pub struct TmuxClipboard {
    tmux: Tmux,
}

impl TmuxClipboard {
    /// The paste buffer of the server `tmux` reaches.
    #[must_use]
    pub fn new(tmux: Tmux) -> TmuxClipboard {
        TmuxClipboard { tmux }
    }
}

impl ClipboardProvider for TmuxClipboard {
    fn write(&mut self, content: &[u8]) -> Result<(), DesktopError> {
        self.tmux
            .run(&["load-buffer", "-"], Some(content))
            .map(drop)
    }

    fn read(&mut self) -> Result<Vec<u8>, DesktopError> {
        self.tmux.run(&["save-buffer", "-"], None)
    }
}

/// The `bind-key` lines for `.tmux.conf` that run `ctl` (the path of `clippy-ctl`) for each
/// binding: `capture --focused`, `paste --focused`, and so on, with `--notify` so the result
/// shows in tmux's status line. Keys are in the root table (no prefix), named as
/// [`Binding::tmux_key`] says. Paste and copy relay the agent's own message (`--format message`, the text a person saw when it has none),
/// as the X11 hotkeys do: raw bytes would bring the reply's escapes and final Enter along.
///
/// ```
/// use clippy_desktop::{HotkeyAction, tmux_bindings};
/// let lines = tmux_bindings("/usr/bin/clippy-ctl", &[(HotkeyAction::Capture, "super+shift+c".parse()?)]);
/// assert!(lines.contains("bind-key -n M-C run-shell -b \"'/usr/bin/clippy-ctl' --notify capture --focused\""));
/// # Ok::<(), clippy_desktop::BindingError>(())
/// ```
#[must_use]
pub fn tmux_bindings(ctl: &str, bindings: &[(HotkeyAction, Binding)]) -> String {
    let mut out = String::from(
        "# clippy: capture and paste between wrapped agents with two key presses.\n\
         # Add to ~/.tmux.conf, or load now: clippy-ctl tmux-bindings | tmux source-file -\n",
    );
    let ctl = shell_quote(ctl);
    for (action, binding) in bindings {
        let command = match action {
            HotkeyAction::Capture => format!("{ctl} --notify capture --focused"),
            HotkeyAction::Paste => format!("{ctl} --notify paste --focused --format message"),
            HotkeyAction::DeliverClipboard => {
                format!("{ctl} --notify deliver clipboard --format message")
            }
            HotkeyAction::CaptureAndCopy => format!(
                "{ctl} --notify capture --focused && {ctl} --notify deliver clipboard --format message"
            ),
        };
        // The command line is in double quotes for tmux; `ctl` is single-quoted for the shell
        // and escaped for tmux by `shell_quote`.
        out.push_str(&format!(
            "bind-key -n {} run-shell -b \"{command}\"\n",
            binding.tmux_key()
        ));
    }
    out
}

/// `text` single-quoted for sh; a `"`, `\`, `$` or `#` (special inside tmux's double quotes)
/// is escaped for tmux.
fn shell_quote(text: &str) -> String {
    let quoted = format!("'{}'", text.replace('\'', "'\\''"));
    quoted
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('$', "\\$")
        .replace('#', "##")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bindings_name_every_action() {
        let b = |t: &str| t.parse::<Binding>().unwrap();
        let text = tmux_bindings(
            "/opt/clippy ctl/clippy-ctl",
            &[
                (HotkeyAction::Capture, b("super+shift+c")),
                (HotkeyAction::Paste, b("super+shift+v")),
                (HotkeyAction::DeliverClipboard, b("ctrl+alt+y")),
                (HotkeyAction::CaptureAndCopy, b("alt+F5")),
            ],
        );
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "bind-key -n M-C run-shell -b \"'/opt/clippy ctl/clippy-ctl' --notify capture --focused\"",
                "bind-key -n M-V run-shell -b \"'/opt/clippy ctl/clippy-ctl' --notify paste --focused --format message\"",
                "bind-key -n C-M-y run-shell -b \"'/opt/clippy ctl/clippy-ctl' --notify deliver clipboard --format message\"",
                "bind-key -n M-F5 run-shell -b \"'/opt/clippy ctl/clippy-ctl' --notify capture --focused && '/opt/clippy ctl/clippy-ctl' --notify deliver clipboard --format message\"",
            ]
        );
    }

    #[test]
    fn display_message_without_d_on_an_old_tmux() {
        // tmux 3.1 and older: `-d` is an unknown flag, the plain form works.
        let mut calls = Vec::new();
        let old = display_with_fallback(
            |args| {
                calls.push(args.join(" "));
                if args.contains(&"-d") {
                    Err(DesktopError::Tmux(
                        "`tmux display-message` failed: display-message: unknown flag -d".into(),
                    ))
                } else {
                    Ok(())
                }
            },
            "clippy: captured a:1",
        );
        assert!(old.is_ok());
        assert_eq!(
            calls,
            [
                "display-message -d 4000 clippy: captured a:1",
                "display-message clippy: captured a:1"
            ]
        );
        // A tmux that takes `-d` is asked once.
        let mut calls = 0;
        let new = display_with_fallback(
            |_| {
                calls += 1;
                Ok(())
            },
            "x",
        );
        assert!(new.is_ok() && calls == 1);
        // Both fail (no server): the error is the plain form's.
        let err = display_with_fallback(
            |args| {
                Err(DesktopError::Tmux(format!(
                    "{} args: no server running",
                    args.len()
                )))
            },
            "x",
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "tmux: 2 args: no server running");
    }

    #[test]
    fn odd_paths_are_quoted_for_sh_and_tmux() {
        assert_eq!(shell_quote("/a b/c"), "'/a b/c'");
        assert_eq!(shell_quote("it's"), "'it'\\\\''s'");
        assert_eq!(shell_quote("/x$y#z\""), "'/x\\$y##z\\\"'");
    }
}
