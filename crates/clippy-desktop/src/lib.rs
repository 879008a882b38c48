//! clippy's desktop side (SPEC §8): which clippy session the user is looking at, global
//! hotkeys, and the clipboard — for an X11 desktop and for tmux.
//!
//! Three traits, one adapter of each active at a time:
//!
//! | trait | X11 | tmux |
//! |---|---|---|
//! | [`SessionResolver`] | [`X11Resolver`]: `_NET_ACTIVE_WINDOW` → `_NET_WM_PID` → `/proc` | [`TmuxResolver`]: the active pane's process → `/proc` |
//! | [`HotkeyProvider`] | [`X11Hotkeys`]: `XGrabKey` on the root window | none: tmux runs `clippy-ctl` from `bind-key` ([`tmux_bindings`]) |
//! | [`ClipboardProvider`] | [`X11Clipboard`]: CLIPBOARD via arboard | [`TmuxClipboard`]: the paste buffer |
//!
//! Which one is active is the [`Environment`]: chosen by configuration, or detected
//! ([`Environment::detect`]: tmux when `$TMUX` is set, else X11 when `$DISPLAY` is set).
//!
//! Why it is shaped like this: the decisions are sans-I/O and unit-tested — parsing bindings and
//! their lock-mask variants ([`Binding`], [`lock_variants`]), and finding the session under a
//! process on a `/proc` snapshot ([`resolve_focus`] on a [`ProcessTable`]). The adapters only
//! fetch facts (a window's pid, a pane's pid, key events) and hand them to those functions.
//! The resolvers take the registered sessions as an argument rather than asking the broker:
//! this crate knows nothing of the wire.
//!
//! ```
//! use clippy_desktop::{Environment, HotkeyAction, ProcInfo, ProcessTable, SessionRef, resolve_focus};
//!
//! // Which adapters: explicit configuration wins over detection.
//! let env = |name: &str| (name == "TMUX").then(|| "/tmp/tmux-1000/default,42,0".to_owned());
//! assert_eq!(Environment::detect(&env), Some(Environment::Tmux));
//! assert_eq!(Environment::from_setting("x11", &env)?, Environment::X11);
//!
//! // The session under the focused terminal (pid 10): its child 12 descends from it.
//! let p = |pid, ppid| ProcInfo { pid, ppid, pgrp: pid as i32, tty_nr: 0, tpgid: -1 };
//! let table = ProcessTable::from_procs([p(10, 1), p(11, 10), p(12, 11)]);
//! let sessions = [SessionRef { session: "k3f9a2".into(), name: Some("coder".into()), pid: 12 }];
//! assert_eq!(resolve_focus(10, &sessions, &table)?.label(), "coder");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod binding;
mod error;
mod notify;
mod process;
mod tmux;
mod x11;

use std::time::Duration;

pub use binding::{Binding, HotkeyAction, Key, Modifiers, lock_variants, mask};
pub use error::{BindingError, DesktopError, FocusError};
pub use notify::notify;
pub use process::{ProcInfo, ProcessTable, SessionRef, resolve_focus};
pub use tmux::{Tmux, TmuxClipboard, TmuxResolver, tmux_bindings};
pub use x11::{X11Clipboard, X11Hotkeys, X11Resolver};

/// Default binding of [`HotkeyAction::Capture`].
pub const DEFAULT_CAPTURE: &str = "super+shift+c";
/// Default binding of [`HotkeyAction::Paste`].
pub const DEFAULT_PASTE: &str = "super+shift+v";

/// Finds which registered session the user is looking at.
pub trait SessionResolver {
    /// The session in the focused window (X11) or active pane (tmux), among `sessions` (the
    /// broker's list).
    ///
    /// # Errors
    ///
    /// [`DesktopError::Focus`] when no session, or several, are there; an adapter error when
    /// the desktop cannot be asked.
    fn focused_session(&mut self, sessions: &[SessionRef]) -> Result<SessionRef, DesktopError>;

    /// Every session of `sessions` found in a window or pane, with where it is.
    ///
    /// # Errors
    ///
    /// An adapter error when the desktop cannot be asked.
    fn discover_sessions(&mut self, sessions: &[SessionRef]) -> Result<Vec<Located>, DesktopError>;
}

/// A session and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The session.
    pub session: SessionRef,
    /// Where, for people: `X11 window 0x1a00007 (process 4242)`, `tmux pane main:1.0 …`.
    pub place: String,
}

/// What a [`HotkeyProvider`] reports while it waits.
#[derive(Debug)]
pub enum HotkeyEvent {
    /// A bound key combination was pressed.
    Pressed(HotkeyAction),
    /// The keyboard mapping changed (a new layout, `xmodmap`; a fresh X server sends one on the
    /// first synthetic key) and every binding [`HotkeyProvider::register`] grabbed was grabbed
    /// again, on the keys that produce it now: one result per such binding, in the order they
    /// were registered. A binding whose key is gone, or that another program took meanwhile,
    /// fails here and stops working; it is tried again on the next mapping change.
    Regrabbed(Vec<Regrab>),
}

/// One binding's result of grabbing again after a keyboard mapping change.
#[derive(Debug)]
pub struct Regrab {
    /// The binding's action.
    pub action: HotkeyAction,
    /// The binding.
    pub binding: Binding,
    /// Whether it is grabbed now.
    pub result: Result<(), DesktopError>,
}

/// Global hotkeys: key presses taken from every program and turned into actions.
pub trait HotkeyProvider {
    /// Grabs each binding; one result per binding, in order. A binding that fails (another
    /// program holds it, no key produces it) does not stop the others.
    fn register(&mut self, bindings: &[(HotkeyAction, Binding)]) -> Vec<Result<(), DesktopError>>;

    /// Waits for the next hotkey or re-grab, at most `timeout` (`None`: for ever). `Ok(None)`
    /// when the time ran out or a signal interrupted the wait.
    ///
    /// # Errors
    ///
    /// When the desktop connection broke.
    fn next_event(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Option<HotkeyEvent>, DesktopError>;

    /// Releases every binding.
    ///
    /// # Errors
    ///
    /// When the desktop connection broke (the grabs die with it anyway).
    fn unregister(&mut self) -> Result<(), DesktopError>;

    /// Rings the desktop's bell, if it has one (an error the user must notice).
    fn bell(&mut self) {}
}

/// The clipboard, as text.
pub trait ClipboardProvider {
    /// Sets the clipboard to `content`. Bytes that are not UTF-8 become U+FFFD where the
    /// clipboard holds text only (X11).
    ///
    /// # Errors
    ///
    /// When the clipboard refuses.
    fn write(&mut self, content: &[u8]) -> Result<(), DesktopError>;

    /// What the clipboard holds.
    ///
    /// # Errors
    ///
    /// When the clipboard is empty or refuses.
    fn read(&mut self) -> Result<Vec<u8>, DesktopError>;
}

/// Which desktop the adapters are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Environment {
    /// An X11 display (`$DISPLAY`).
    X11,
    /// A tmux server (`$TMUX`, or the default socket).
    Tmux,
}

impl Environment {
    /// The configuration names: `detect` (the default), `x11`, `tmux`.
    pub const SETTINGS: [&'static str; 3] = ["detect", "x11", "tmux"];

    /// Detected from the environment: tmux when `$TMUX` is set (a tmux inside an X terminal is
    /// where the user's focus really is), else X11 when `$DISPLAY` is set, else none.
    pub fn detect(env: &dyn Fn(&str) -> Option<String>) -> Option<Environment> {
        let set = |name| env(name).is_some_and(|v| !v.is_empty());
        if set("TMUX") {
            Some(Environment::Tmux)
        } else if set("DISPLAY") {
            Some(Environment::X11)
        } else {
            None
        }
    }

    /// The environment for a `resolver` setting: `x11` and `tmux` are taken as they are
    /// (explicit always wins), `detect` asks [`Environment::detect`].
    ///
    /// # Errors
    ///
    /// [`DesktopError::Unavailable`] for `detect` with neither `$TMUX` nor `$DISPLAY` set, or
    /// an unknown setting.
    pub fn from_setting(
        setting: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Environment, DesktopError> {
        match setting {
            "x11" => Ok(Environment::X11),
            "tmux" => Ok(Environment::Tmux),
            "detect" => Environment::detect(env).ok_or_else(|| {
                DesktopError::Unavailable(
                    "no desktop to work with: neither $TMUX nor $DISPLAY is set \
                     (set desktop.resolver, or pass --resolver)"
                        .into(),
                )
            }),
            other => Err(DesktopError::Unavailable(format!(
                "unknown resolver {other:?}: expected one of detect, x11, tmux"
            ))),
        }
    }

    /// The name: `x11` or `tmux`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::X11 => "x11",
            Environment::Tmux => "tmux",
        }
    }

    /// The session resolver of this environment.
    ///
    /// # Errors
    ///
    /// As the adapter's constructor (no display, say).
    pub fn resolver(self) -> Result<Box<dyn SessionResolver>, DesktopError> {
        Ok(match self {
            Environment::X11 => Box::new(X11Resolver::connect(None)?),
            Environment::Tmux => Box::new(TmuxResolver::new(Tmux::new())),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn detection_prefers_tmux() {
        let both = env_of(&[("TMUX", "/tmp/t,1,0"), ("DISPLAY", ":0")]);
        assert_eq!(Environment::detect(&both), Some(Environment::Tmux));
        let x = env_of(&[("DISPLAY", ":0"), ("TMUX", "")]);
        assert_eq!(Environment::detect(&x), Some(Environment::X11));
        assert_eq!(Environment::detect(&env_of(&[])), None);
    }

    #[test]
    fn explicit_settings_win() {
        let tmux = env_of(&[("TMUX", "/tmp/t,1,0")]);
        assert_eq!(
            Environment::from_setting("x11", &tmux).unwrap(),
            Environment::X11
        );
        assert_eq!(
            Environment::from_setting("tmux", &env_of(&[])).unwrap(),
            Environment::Tmux
        );
        let err = Environment::from_setting("detect", &env_of(&[])).unwrap_err();
        assert!(
            err.to_string().contains("neither $TMUX nor $DISPLAY"),
            "{err}"
        );
        assert!(Environment::from_setting("wayland", &tmux).is_err());
    }

    #[test]
    fn defaults_parse() {
        assert!(DEFAULT_CAPTURE.parse::<Binding>().is_ok());
        assert!(DEFAULT_PASTE.parse::<Binding>().is_ok());
    }
}
