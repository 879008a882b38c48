//! The X11 adapters, on x11rb (pure Rust, no C library): global hotkeys with `XGrabKey` on the
//! root window, the focused session through `_NET_ACTIVE_WINDOW` and `_NET_WM_PID`, and the
//! CLIPBOARD selection through arboard.
//!
//! Facts this is built on (measured): a fresh X server sends a `MappingNotify` on the first
//! synthetic key press, so the keycode map is re-read and every grab re-made (never dropped in
//! between) when one arrives;
//! a passive grab is keyed on keycode *and* the exact modifier state, so each binding is grabbed
//! four times (with and without Caps Lock and Num Lock); a grab another client holds is refused
//! with `BadAccess` for that binding only.

use std::os::fd::AsFd;
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use x11rb::connection::Connection;
use x11rb::errors::ReplyError;
use x11rb::protocol::ErrorKind;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    Atom, AtomEnum, ConnectionExt as _, GrabMode, Keycode, Mapping, ModMask, Window,
};
use x11rb::rust_connection::RustConnection;

use crate::binding::{Binding, HotkeyAction, lock_variants, mask};
use crate::error::{DesktopError, FocusError};
use crate::process::{ProcessTable, SessionRef, resolve_focus};
use crate::{ClipboardProvider, HotkeyEvent, HotkeyProvider, Located, Regrab, SessionResolver};

/// Keysyms the modifier map is searched for.
const NUM_LOCK: u32 = 0xff7f;
const ALT_L: u32 = 0xffe9;
const ALT_R: u32 = 0xffea;
const SUPER_L: u32 = 0xffeb;
const SUPER_R: u32 = 0xffec;

fn x11_err(error: impl std::fmt::Display) -> DesktopError {
    DesktopError::X11(error.to_string())
}

/// A connection to the X server named by `$DISPLAY` (or `display`).
fn connect(display: Option<&str>) -> Result<(RustConnection, Window), DesktopError> {
    if display.is_none() && std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
        return Err(DesktopError::Unavailable(
            "no X display: $DISPLAY is not set".into(),
        ));
    }
    let (conn, screen) = x11rb::connect(display)
        .map_err(|e| DesktopError::Unavailable(format!("cannot connect to the X display: {e}")))?;
    let root = conn
        .setup()
        .roots
        .get(screen)
        .map(|s| s.root)
        .ok_or_else(|| x11_err("the X server has no such screen"))?;
    Ok((conn, root))
}

/// The keyboard as the server maps it now: keysyms per keycode and the modifier masks of Alt,
/// Super and Num Lock.
#[derive(Debug, Clone)]
struct Keymap {
    min_keycode: Keycode,
    per_keycode: usize,
    keysyms: Vec<u32>,
    alt: u16,
    super_: u16,
    numlock: u16,
}

impl Keymap {
    fn read(conn: &RustConnection) -> Result<Keymap, DesktopError> {
        let setup = conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let reply = conn
            .get_keyboard_mapping(min, max - min + 1)
            .map_err(x11_err)?
            .reply()
            .map_err(x11_err)?;
        let keymap = Keymap {
            min_keycode: min,
            per_keycode: usize::from(reply.keysyms_per_keycode).max(1),
            keysyms: reply.keysyms,
            alt: mask::MOD1,
            super_: mask::MOD4,
            numlock: mask::MOD2,
        };
        let modmap = conn
            .get_modifier_mapping()
            .map_err(x11_err)?
            .reply()
            .map_err(x11_err)?;
        let per_mod = usize::from(modmap.keycodes_per_modifier()).max(1);
        let find = |wanted: &[u32]| -> Option<u16> {
            // Mod1..Mod5 are modifier indexes 3..8.
            (3..8).find_map(|index| {
                let codes = modmap
                    .keycodes
                    .get(index * per_mod..(index + 1) * per_mod)?;
                codes
                    .iter()
                    .filter(|&&code| code != 0)
                    .any(|&code| keymap.keysyms_of(code).any(|sym| wanted.contains(&sym)))
                    .then_some(1 << index)
            })
        };
        let (alt, super_, numlock) = (
            find(&[ALT_L, ALT_R]),
            find(&[SUPER_L, SUPER_R]),
            find(&[NUM_LOCK]),
        );
        Ok(Keymap {
            alt: alt.unwrap_or(keymap.alt),
            super_: super_.unwrap_or(keymap.super_),
            numlock: numlock.unwrap_or(keymap.numlock),
            ..keymap
        })
    }

    fn keysyms_of(&self, code: Keycode) -> impl Iterator<Item = u32> + '_ {
        let index = usize::from(code.saturating_sub(self.min_keycode));
        self.keysyms
            .get(index * self.per_keycode..(index + 1) * self.per_keycode)
            .unwrap_or(&[])
            .iter()
            .copied()
    }

    /// The keycodes that produce `keysym` (in any column: `c` and `C` share a key).
    fn keycodes(&self, keysym: u32) -> Vec<Keycode> {
        let upper = if (0x61..=0x7a).contains(&keysym) {
            keysym - 0x20
        } else {
            keysym
        };
        self.keysyms
            .chunks(self.per_keycode)
            .enumerate()
            .filter(|(_, syms)| syms.iter().any(|&s| s == keysym || s == upper))
            .filter_map(|(i, _)| {
                u8::try_from(i)
                    .ok()
                    .and_then(|i| self.min_keycode.checked_add(i))
            })
            .collect()
    }

    /// The modifier bits that never change what a hotkey means.
    fn ignored(&self) -> u16 {
        mask::LOCK | self.numlock
    }
}

/// One registered binding and the grabs it holds.
#[derive(Debug)]
struct Grab {
    action: HotkeyAction,
    binding: Binding,
    /// `(keycode, modifiers)` pairs grabbed.
    held: Vec<(Keycode, u16)>,
}

/// Global hotkeys on X11: passive key grabs on the root window.
///
/// While a binding is grabbed, its key presses go to this client only: the focused program
/// never sees them.
pub struct X11Hotkeys {
    conn: RustConnection,
    root: Window,
    keymap: Keymap,
    grabs: Vec<Grab>,
}

impl std::fmt::Debug for X11Hotkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X11Hotkeys")
            .field("root", &self.root)
            .field("grabs", &self.grabs)
            .finish_non_exhaustive()
    }
}

impl X11Hotkeys {
    /// Connects to `$DISPLAY` (or `display`).
    ///
    /// # Errors
    ///
    /// [`DesktopError::Unavailable`] without a display; [`DesktopError::X11`] when the server
    /// does not answer.
    pub fn connect(display: Option<&str>) -> Result<X11Hotkeys, DesktopError> {
        let (conn, root) = connect(display)?;
        let keymap = Keymap::read(&conn)?;
        Ok(X11Hotkeys {
            conn,
            root,
            keymap,
            grabs: Vec::new(),
        })
    }

    /// Grabs every lock variant of `binding` on every keycode that produces its key. On any
    /// refusal, releases what it took.
    fn grab(&self, binding: &Binding) -> Result<Vec<(Keycode, u16)>, DesktopError> {
        let codes = self.keymap.keycodes(binding.key.keysym);
        if codes.is_empty() {
            return Err(DesktopError::NoKeycode {
                binding: binding.to_string(),
                key: binding.key.name.to_owned(),
            });
        }
        let modifiers = binding.x11_mask(self.keymap.alt, self.keymap.super_);
        let mut held = Vec::new();
        for code in codes {
            for variant in lock_variants(modifiers, self.keymap.numlock) {
                let result = self
                    .conn
                    .grab_key(
                        false,
                        self.root,
                        ModMask::from(variant),
                        code,
                        GrabMode::ASYNC,
                        GrabMode::ASYNC,
                    )
                    .map_err(x11_err)
                    .and_then(|cookie| match cookie.check() {
                        Ok(()) => Ok(()),
                        Err(ReplyError::X11Error(e)) if e.error_kind == ErrorKind::Access => {
                            Err(DesktopError::GrabConflict {
                                binding: binding.to_string(),
                            })
                        }
                        Err(e) => Err(x11_err(e)),
                    });
                match result {
                    Ok(()) => held.push((code, variant)),
                    Err(error) => {
                        self.ungrab(&held);
                        return Err(error);
                    }
                }
            }
        }
        Ok(held)
    }

    fn ungrab(&self, held: &[(Keycode, u16)]) {
        for &(code, modifiers) in held {
            // Best effort: the grab goes with the connection anyway.
            let _ = self
                .conn
                .ungrab_key(code, self.root, ModMask::from(modifiers));
        }
        let _ = self.conn.flush();
    }

    /// The keyboard mapping changed: read it again and grab every binding on the keys that
    /// produce it now. A key that still produces it stays grabbed throughout (grabbing it again
    /// replaces this client's own grab), so a key pressed while this runs is never let through
    /// to the focused window; keys that no longer produce it are released afterwards. One result
    /// per binding: a binding whose key is gone (or that another client grabbed meanwhile) holds
    /// nothing until a later mapping change gives it back, and the caller must learn that it
    /// stopped working.
    ///
    /// # Errors
    ///
    /// [`DesktopError::X11`] when the keymap cannot be read (the connection broke).
    fn regrab(&mut self) -> Result<Vec<Regrab>, DesktopError> {
        self.keymap = Keymap::read(&self.conn)?;
        let mut grabs = std::mem::take(&mut self.grabs);
        let results = grabs
            .iter_mut()
            .map(|grab| {
                let result = self.grab(&grab.binding);
                let held = std::mem::take(&mut grab.held);
                let now = result.as_ref().map_or(&[][..], Vec::as_slice);
                let released: Vec<_> = held
                    .into_iter()
                    .filter(|pair| !now.contains(pair))
                    .collect();
                self.ungrab(&released);
                Regrab {
                    action: grab.action,
                    binding: grab.binding.clone(),
                    result: result.map(|held| grab.held = held),
                }
            })
            .collect();
        self.grabs = grabs;
        Ok(results)
    }

    fn action_for(&self, keycode: Keycode, state: u16) -> Option<HotkeyAction> {
        let state = state & !self.keymap.ignored();
        self.grabs
            .iter()
            .find(|g| {
                g.held
                    .iter()
                    .any(|&(code, mods)| code == keycode && mods & !self.keymap.ignored() == state)
            })
            .map(|g| g.action)
    }

    fn handle(&mut self, event: Event) -> Result<Option<HotkeyEvent>, DesktopError> {
        match event {
            Event::KeyPress(press) => Ok(self
                .action_for(press.detail, u16::from(press.state))
                .map(HotkeyEvent::Pressed)),
            Event::MappingNotify(notify)
                if (notify.request == Mapping::KEYBOARD || notify.request == Mapping::MODIFIER)
                    && !self.grabs.is_empty() =>
            {
                Ok(Some(HotkeyEvent::Regrabbed(self.regrab()?)))
            }
            _ => Ok(None),
        }
    }
}

impl HotkeyProvider for X11Hotkeys {
    fn register(&mut self, bindings: &[(HotkeyAction, Binding)]) -> Vec<Result<(), DesktopError>> {
        bindings
            .iter()
            .map(|(action, binding)| {
                let held = self.grab(binding)?;
                self.grabs.push(Grab {
                    action: *action,
                    binding: binding.clone(),
                    held,
                });
                Ok(())
            })
            .collect()
    }

    fn next_event(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<Option<HotkeyEvent>, DesktopError> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            while let Some(event) = self.conn.poll_for_event().map_err(x11_err)? {
                if let Some(event) = self.handle(event)? {
                    return Ok(Some(event));
                }
            }
            let wait = match deadline {
                None => PollTimeout::NONE,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX)
                }
            };
            let fd = self.conn.stream().as_fd();
            let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
            match poll(&mut fds, wait) {
                Ok(_) => {}
                // A signal: let the caller look at its flags.
                Err(nix::errno::Errno::EINTR) => return Ok(None),
                Err(e) => return Err(x11_err(e)),
            }
            let hangup = fds[0]
                .revents()
                .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR));
            if hangup {
                return Err(x11_err("the X server closed the connection"));
            }
        }
    }

    fn unregister(&mut self) -> Result<(), DesktopError> {
        for grab in std::mem::take(&mut self.grabs) {
            self.ungrab(&grab.held);
        }
        self.conn.flush().map_err(x11_err)
    }

    fn bell(&mut self) {
        let _ = self.conn.bell(0);
        let _ = self.conn.flush();
    }
}

impl Drop for X11Hotkeys {
    fn drop(&mut self) {
        let _ = self.unregister();
    }
}

/// The focused session on X11: `_NET_ACTIVE_WINDOW` (maintained by EWMH window managers),
/// falling back to the input focus; that window's `_NET_WM_PID` (walking up to the top-level
/// window if needed); then [`resolve_focus`] on `/proc`.
pub struct X11Resolver {
    conn: RustConnection,
    root: Window,
    net_active_window: Atom,
    net_wm_pid: Atom,
    net_client_list: Atom,
}

impl std::fmt::Debug for X11Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X11Resolver")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl X11Resolver {
    /// Connects to `$DISPLAY` (or `display`).
    ///
    /// # Errors
    ///
    /// [`DesktopError::Unavailable`] without a display; [`DesktopError::X11`] when the server
    /// does not answer.
    pub fn connect(display: Option<&str>) -> Result<X11Resolver, DesktopError> {
        let (conn, root) = connect(display)?;
        let atom = |name: &[u8]| -> Result<Atom, DesktopError> {
            Ok(conn
                .intern_atom(false, name)
                .map_err(x11_err)?
                .reply()
                .map_err(x11_err)?
                .atom)
        };
        let net_active_window = atom(b"_NET_ACTIVE_WINDOW")?;
        let net_wm_pid = atom(b"_NET_WM_PID")?;
        let net_client_list = atom(b"_NET_CLIENT_LIST")?;
        Ok(X11Resolver {
            conn,
            root,
            net_active_window,
            net_wm_pid,
            net_client_list,
        })
    }

    fn cardinals(
        &self,
        window: Window,
        property: Atom,
        type_: AtomEnum,
    ) -> Result<Vec<u32>, DesktopError> {
        let reply = self
            .conn
            .get_property(false, window, property, type_, 0, 4096)
            .map_err(x11_err)?
            .reply()
            .map_err(x11_err)?;
        Ok(reply.value32().map(Iterator::collect).unwrap_or_default())
    }

    /// The window that has the focus.
    pub fn focused_window(&self) -> Result<Window, DesktopError> {
        let active = self.cardinals(self.root, self.net_active_window, AtomEnum::WINDOW)?;
        if let Some(&window) = active.first().filter(|&&w| w != 0) {
            return Ok(window);
        }
        let focus = self
            .conn
            .get_input_focus()
            .map_err(x11_err)?
            .reply()
            .map_err(x11_err)?
            .focus;
        if focus <= 1 || focus == self.root {
            return Err(FocusError::NoFocus("no window has the focus".into()).into());
        }
        Ok(focus)
    }

    /// The `_NET_WM_PID` of `window` or of its nearest ancestor that has one.
    pub fn window_pid(&self, window: Window) -> Result<u32, DesktopError> {
        let mut current = window;
        for _ in 0..32 {
            let pid = self.cardinals(current, self.net_wm_pid, AtomEnum::CARDINAL)?;
            if let Some(&pid) = pid.first().filter(|&&p| p != 0) {
                return Ok(pid);
            }
            let parent = self
                .conn
                .query_tree(current)
                .map_err(x11_err)?
                .reply()
                .map_err(x11_err)?
                .parent;
            if parent == 0 || parent == self.root {
                break;
            }
            current = parent;
        }
        Err(FocusError::NoFocus(format!(
            "the focused window 0x{window:x} does not tell its process (_NET_WM_PID)"
        ))
        .into())
    }
}

impl SessionResolver for X11Resolver {
    fn focused_session(&mut self, sessions: &[SessionRef]) -> Result<SessionRef, DesktopError> {
        let window = self.focused_window()?;
        let pid = self.window_pid(window)?;
        let table = ProcessTable::snapshot().map_err(DesktopError::io("cannot read /proc"))?;
        Ok(resolve_focus(pid, sessions, &table)?.clone())
    }

    fn discover_sessions(&mut self, sessions: &[SessionRef]) -> Result<Vec<Located>, DesktopError> {
        let table = ProcessTable::snapshot().map_err(DesktopError::io("cannot read /proc"))?;
        let windows = self.cardinals(self.root, self.net_client_list, AtomEnum::WINDOW)?;
        let mut found = Vec::new();
        for window in windows {
            let Ok(pid) = self.window_pid(window) else {
                continue;
            };
            for session in sessions {
                if table.descends_from(session.pid, pid) {
                    found.push(Located {
                        session: session.clone(),
                        place: format!("X11 window 0x{window:x} (process {pid})"),
                    });
                }
            }
        }
        Ok(found)
    }
}

/// The X11 CLIPBOARD selection, through arboard.
///
/// An X selection lives as long as its owner: keep this object alive (in the broker, or the
/// hotkey client) for the text to stay pasteable after the command that set it returns, until
/// another program takes the selection.
pub struct X11Clipboard {
    clipboard: arboard::Clipboard,
}

impl std::fmt::Debug for X11Clipboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X11Clipboard").finish_non_exhaustive()
    }
}

impl X11Clipboard {
    /// Opens the clipboard of `$DISPLAY`.
    ///
    /// # Errors
    ///
    /// [`DesktopError::Unavailable`] without `$DISPLAY`; [`DesktopError::Clipboard`] when the
    /// X server refuses.
    pub fn open() -> Result<X11Clipboard, DesktopError> {
        if std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty()) {
            return Err(DesktopError::Unavailable(
                "no X display for the clipboard: $DISPLAY is not set".into(),
            ));
        }
        let clipboard =
            arboard::Clipboard::new().map_err(|e| DesktopError::Clipboard(e.to_string()))?;
        Ok(X11Clipboard { clipboard })
    }
}

impl ClipboardProvider for X11Clipboard {
    fn write(&mut self, content: &[u8]) -> Result<(), DesktopError> {
        let text = String::from_utf8_lossy(content).into_owned();
        self.clipboard
            .set_text(text)
            .map_err(|e| DesktopError::Clipboard(e.to_string()))
    }

    fn read(&mut self) -> Result<Vec<u8>, DesktopError> {
        self.clipboard
            .get_text()
            .map(String::into_bytes)
            .map_err(|e| DesktopError::Clipboard(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn keymap() -> Keymap {
        // Keycodes 8.. with two columns: 8 = c/C, 9 = v/V, 10 = Num_Lock.
        Keymap {
            min_keycode: 8,
            per_keycode: 2,
            keysyms: vec![0x63, 0x43, 0x76, 0x56, NUM_LOCK, 0],
            alt: mask::MOD1,
            super_: mask::MOD4,
            numlock: mask::MOD2,
        }
    }

    #[test]
    fn keycodes_are_found_by_either_case() {
        let map = keymap();
        assert_eq!(map.keycodes(0x63), [8]);
        assert_eq!(map.keycodes(0x76), [9]);
        assert!(map.keycodes(0x61).is_empty());
        assert_eq!(map.keysyms_of(10).next(), Some(NUM_LOCK));
        assert_eq!(map.ignored(), mask::LOCK | mask::MOD2);
    }
}
