//! `--focused` and the clipboard on the ctl side: which desktop is in use, which registered
//! session the user is looking at, and the tmux paste buffer as the clipboard.
//!
//! Focus is resolved here, not in the broker: `clippy-ctl` asks the broker for its sessions
//! (each carries its child's pid), asks the desktop which process has the focus, and sends
//! the usual request with the session id it found (`CONTRACTS/RESOLVER.md`).

use std::path::PathBuf;

use clippy_client::{Connection, Sink};
use clippy_desktop::{
    ClipboardProvider, DesktopError, Environment, FocusError, SessionRef, Tmux, TmuxClipboard,
};
use clippy_proto::Format;

use crate::cli::Cli;
use crate::config::Config;
use crate::error::CtlError;

/// The desktop in use: `--resolver`, else `desktop.resolver`, else detected.
pub fn environment(cli: &Cli, config: &Config) -> Result<Environment, CtlError> {
    let setting = cli
        .resolver
        .map(|r| r.as_str().to_owned())
        .or_else(|| config.resolver.clone())
        .unwrap_or_else(|| "detect".to_owned());
    Environment::from_setting(&setting, &|name| std::env::var(name).ok()).map_err(desktop)
}

/// A desktop failure as a ctl error, with its stable reason.
pub fn desktop(error: DesktopError) -> CtlError {
    let reason = match &error {
        DesktopError::Focus(FocusError::Ambiguous { .. }) => "ambiguous_session",
        DesktopError::Focus(_) => "no_focused_session",
        DesktopError::Unavailable(_) => "desktop_unavailable",
        DesktopError::GrabConflict { .. } | DesktopError::NoKeycode { .. } => "grab_failed",
        DesktopError::Binding(_) => return CtlError::Usage(error.to_string()),
        _ => "desktop_error",
    };
    CtlError::Desktop {
        reason,
        message: error.to_string(),
    }
}

/// The broker's sessions, as the resolvers take them.
pub fn session_refs(broker: &mut Connection) -> Result<Vec<SessionRef>, CtlError> {
    Ok(broker
        .list_sessions()?
        .into_iter()
        .map(|s| SessionRef {
            session: s.session,
            name: s.name,
            pid: s.pid,
        })
        .collect())
}

/// The session the user is looking at in `env`.
pub fn focused(env: Environment, broker: &mut Connection) -> Result<SessionRef, CtlError> {
    let sessions = session_refs(broker)?;
    let mut resolver = env.resolver().map_err(desktop)?;
    resolver.focused_session(&sessions).map_err(desktop)
}

/// The session a command names: the argument, or with `--focused` the one in focus. Returns
/// the id to send and the label to report (the name when it has one).
pub fn target(
    session: Option<&str>,
    focused_flag: bool,
    cli: &Cli,
    config: &Config,
    broker: &mut Connection,
) -> Result<(String, String), CtlError> {
    match session {
        Some(session) if !focused_flag => Ok((session.to_owned(), session.to_owned())),
        _ => {
            let env = environment(cli, config)?;
            let found = focused(env, broker)?;
            let label = found.label().to_owned();
            Ok((found.session, label))
        }
    }
}

/// `deliver clipboard` in tmux: the relay buffer into tmux's paste buffer.
///
/// The protocol has no request that returns the relay buffer, and the broker may not run
/// inside tmux (a systemd service, say), so the broker cannot reach the right tmux server. So
/// the broker delivers the relay buffer to its file sink, into a private folder of ours (0700,
/// under `$XDG_RUNTIME_DIR` when set), and we load that file with `tmux load-buffer -`. The
/// file is removed at once.
pub fn deliver_tmux_clipboard(broker: &mut Connection, format: Format) -> Result<(), CtlError> {
    let dir = PrivateDir::new()?;
    let file = dir.0.join("relay");
    let path = file
        .to_str()
        .ok_or_else(|| CtlError::Usage("the runtime folder is not valid UTF-8".into()))?
        .to_owned();
    broker.deliver(&Sink::File(path), format)?;
    let content = std::fs::read(&file).map_err(|source| CtlError::Io {
        context: format!("cannot read {}", file.display()),
        source,
    })?;
    TmuxClipboard::new(Tmux::new())
        .write(&content)
        .map_err(desktop)
}

/// A folder only we can read, removed on drop.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new() -> Result<PrivateDir, CtlError> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(std::env::temp_dir);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!("clippy-ctl-{}-{nanos}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|source| CtlError::Io {
                context: format!("cannot create {}", dir.display()),
                source,
            })?;
        Ok(PrivateDir(dir))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dirs_are_0700_and_go_away() {
        use std::os::unix::fs::PermissionsExt;
        let dir = PrivateDir::new().unwrap();
        let path = dir.0.clone();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("clippy-ctl-"), "{name}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn desktop_errors_keep_a_stable_reason() {
        let ambiguous = DesktopError::Focus(FocusError::Ambiguous {
            pid: 1,
            candidates: vec!["a".into(), "b".into()],
        });
        assert!(matches!(
            desktop(ambiguous),
            CtlError::Desktop {
                reason: "ambiguous_session",
                ..
            }
        ));
        assert!(matches!(
            desktop(DesktopError::Unavailable("x".into())),
            CtlError::Desktop {
                reason: "desktop_unavailable",
                ..
            }
        ));
    }
}
