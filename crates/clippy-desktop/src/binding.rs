//! Key bindings as people write them (`"super+shift+c"`), and the actions they trigger.
//!
//! Sans-I/O: parsing, the X11 modifier masks a binding needs (with the lock-mask variants), and
//! the tmux key name of a binding. Nothing here talks to a server.

use std::fmt;
use std::str::FromStr;

use crate::error::BindingError;

/// X11 core modifier bits (`KeyButMask`), the ones a binding can name or must tolerate.
pub mod mask {
    /// Shift.
    pub const SHIFT: u16 = 1;
    /// Caps Lock.
    pub const LOCK: u16 = 2;
    /// Control.
    pub const CONTROL: u16 = 4;
    /// Mod1: Alt on every common keymap.
    pub const MOD1: u16 = 8;
    /// Mod2: Num Lock on every common keymap.
    pub const MOD2: u16 = 16;
    /// Mod4: Super on every common keymap.
    pub const MOD4: u16 = 64;
}

/// The modifiers of a binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Modifiers {
    /// Shift.
    pub shift: bool,
    /// Control.
    pub control: bool,
    /// Alt (X11 Mod1 on common keymaps).
    pub alt: bool,
    /// Super, the "Windows" or logo key (X11 Mod4 on common keymaps).
    pub super_: bool,
}

impl Modifiers {
    /// The core X11 modifier mask, given which masks Alt and Super are on this server.
    #[must_use]
    pub fn x11_mask(self, alt_mask: u16, super_mask: u16) -> u16 {
        let mut bits = 0;
        if self.shift {
            bits |= mask::SHIFT;
        }
        if self.control {
            bits |= mask::CONTROL;
        }
        if self.alt {
            bits |= alt_mask;
        }
        if self.super_ {
            bits |= super_mask;
        }
        bits
    }
}

/// A key: its X11 keysym and the name it was given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// The X11 keysym (lowercase for letters: `c` is 0x63).
    pub keysym: u32,
    /// The canonical name (`c`, `F5`, `Return`).
    pub name: &'static str,
}

/// A parsed key binding: at least one of Control, Alt and Super, maybe Shift, and one key.
///
/// ```
/// use clippy_desktop::{Binding, mask};
///
/// let binding: Binding = "Super+Shift+C".parse()?;
/// assert_eq!(binding.key.keysym, 0x63); // keysym `c`
/// assert_eq!(binding.x11_mask(mask::MOD1, mask::MOD4), mask::SHIFT | mask::MOD4);
/// assert_eq!(binding.to_string(), "super+shift+c");
/// assert_eq!(binding.tmux_key(), "M-C");
/// assert!("c".parse::<Binding>().is_err()); // a bare key would be taken from every program
/// # Ok::<(), clippy_desktop::BindingError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The modifiers.
    pub modifiers: Modifiers,
    /// The key.
    pub key: Key,
}

impl Binding {
    /// The X11 modifier mask of the binding (see [`Modifiers::x11_mask`]).
    #[must_use]
    pub fn x11_mask(&self, alt_mask: u16, super_mask: u16) -> u16 {
        self.modifiers.x11_mask(alt_mask, super_mask)
    }

    /// The key as `tmux bind-key` names it. A terminal cannot send Super, so Super is mapped to
    /// Meta (Alt) there: the default `super+shift+c` is `M-C` in tmux. Shift with a letter is
    /// the capital letter; with another key it is tmux's `S-` prefix.
    #[must_use]
    pub fn tmux_key(&self) -> String {
        let m = self.modifiers;
        let mut out = String::new();
        if m.control {
            out.push_str("C-");
        }
        if m.alt || m.super_ {
            out.push_str("M-");
        }
        let letter = self.key.name.len() == 1 && self.key.name.as_bytes()[0].is_ascii_lowercase();
        if m.shift && !letter {
            out.push_str("S-");
        }
        let name = tmux_key_name(self.key.name);
        if m.shift && letter {
            out.push_str(&name.to_ascii_uppercase());
        } else {
            out.push_str(&name);
        }
        out
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.modifiers;
        for (on, name) in [
            (m.control, "ctrl+"),
            (m.alt, "alt+"),
            (m.super_, "super+"),
            (m.shift, "shift+"),
        ] {
            if on {
                f.write_str(name)?;
            }
        }
        f.write_str(self.key.name)
    }
}

impl FromStr for Binding {
    type Err = BindingError;

    /// `modifier+…+key`, case-insensitive, in any order of modifiers. Modifiers: `shift`,
    /// `ctrl`/`control`, `alt`/`mod1`, `super`/`win`/`logo`/`mod4`. At least one of Control,
    /// Alt, Super is required: a bare key (or Shift and a key) would be taken away from every
    /// program.
    fn from_str(text: &str) -> Result<Self, BindingError> {
        let err = |problem: String| BindingError {
            binding: text.to_owned(),
            problem,
        };
        let parts: Vec<&str> = text.split('+').map(str::trim).collect();
        let Some((key, modifiers)) = parts.split_last() else {
            return Err(err("is empty".into()));
        };
        if key.is_empty() {
            return Err(err(
                "names no key (a binding ends with the key: super+shift+c)".into(),
            ));
        }
        let mut m = Modifiers::default();
        for name in modifiers {
            let slot = match name.to_ascii_lowercase().as_str() {
                "shift" => &mut m.shift,
                "ctrl" | "control" => &mut m.control,
                "alt" | "mod1" => &mut m.alt,
                "super" | "win" | "logo" | "mod4" => &mut m.super_,
                other => {
                    return Err(err(format!(
                        "has an unknown modifier {other:?} (known: shift, ctrl, alt, super)"
                    )));
                }
            };
            if *slot {
                return Err(err(format!("names the modifier {name:?} twice")));
            }
            *slot = true;
        }
        if !(m.control || m.alt || m.super_) {
            return Err(err(
                "needs at least one of ctrl, alt, super: a bare key would be taken away from \
                 every program"
                    .into(),
            ));
        }
        let key = key_named(key).ok_or_else(|| {
            err(format!(
                "has an unknown key {key:?} (letters, digits, F1-F24, and names like Return, \
                 space, Tab, Escape, Insert, Delete, Home, End, Page_Up, Left, minus, comma)"
            ))
        })?;
        Ok(Binding { modifiers: m, key })
    }
}

/// Named keys and their keysyms, beyond letters, digits and function keys.
const NAMED_KEYS: &[(&str, u32)] = &[
    ("space", 0x20),
    ("apostrophe", 0x27),
    ("comma", 0x2c),
    ("minus", 0x2d),
    ("period", 0x2e),
    ("slash", 0x2f),
    ("semicolon", 0x3b),
    ("equal", 0x3d),
    ("bracketleft", 0x5b),
    ("backslash", 0x5c),
    ("bracketright", 0x5d),
    ("grave", 0x60),
    ("BackSpace", 0xff08),
    ("Tab", 0xff09),
    ("Return", 0xff0d),
    ("Pause", 0xff13),
    ("Escape", 0xff1b),
    ("Home", 0xff50),
    ("Left", 0xff51),
    ("Up", 0xff52),
    ("Right", 0xff53),
    ("Down", 0xff54),
    ("Page_Up", 0xff55),
    ("Page_Down", 0xff56),
    ("End", 0xff57),
    ("Print", 0xff61),
    ("Insert", 0xff63),
    ("Delete", 0xffff),
];

/// Letters, digits and function keys, by canonical name (static strings, so [`Key`] can hold
/// them).
const LETTERS: [&str; 26] = [
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s",
    "t", "u", "v", "w", "x", "y", "z",
];
const DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
const FUNCTION_KEYS: [&str; 24] = [
    "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12", "F13", "F14", "F15",
    "F16", "F17", "F18", "F19", "F20", "F21", "F22", "F23", "F24",
];

/// The key with that name (case-insensitive), if clippy knows it.
fn key_named(name: &str) -> Option<Key> {
    let lower = name.to_ascii_lowercase();
    if let Some(i) = LETTERS.iter().position(|l| *l == lower) {
        return Some(Key {
            keysym: 0x61 + u32::try_from(i).ok()?,
            name: LETTERS[i],
        });
    }
    if let Some(i) = DIGITS.iter().position(|d| *d == lower) {
        return Some(Key {
            keysym: 0x30 + u32::try_from(i).ok()?,
            name: DIGITS[i],
        });
    }
    if let Some(i) = FUNCTION_KEYS
        .iter()
        .position(|f| f.eq_ignore_ascii_case(name))
    {
        return Some(Key {
            keysym: 0xffbe + u32::try_from(i).ok()?,
            name: FUNCTION_KEYS[i],
        });
    }
    let alias = match lower.as_str() {
        "enter" => "Return",
        "esc" => "Escape",
        "pageup" | "prior" => "Page_Up",
        "pagedown" | "next" => "Page_Down",
        "del" => "Delete",
        "ins" => "Insert",
        _ => name,
    };
    NAMED_KEYS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(alias))
        .map(|&(name, keysym)| Key { keysym, name })
}

/// tmux's name for a key clippy names `name`.
fn tmux_key_name(name: &str) -> String {
    let mapped = match name {
        "space" => "Space",
        "Return" => "Enter",
        "Page_Up" => "PPage",
        "Page_Down" => "NPage",
        "Insert" => "IC",
        "Delete" => "DC",
        "BackSpace" => "BSpace",
        "Escape" => "Escape",
        "apostrophe" => "'",
        "comma" => ",",
        "minus" => "-",
        "period" => ".",
        "slash" => "/",
        "semicolon" => "\\;",
        "equal" => "=",
        "bracketleft" => "[",
        "backslash" => "\\\\",
        "bracketright" => "]",
        "grave" => "`",
        other => other,
    };
    mapped.to_owned()
}

/// The four variants of `modifiers` to grab so that a binding fires whatever the state of Caps
/// Lock and Num Lock: none, Num Lock, Caps Lock, both.
///
/// ```
/// use clippy_desktop::{lock_variants, mask};
/// let v = lock_variants(mask::MOD4 | mask::SHIFT, mask::MOD2);
/// assert_eq!(v, [0x41, 0x51, 0x43, 0x53]);
/// ```
#[must_use]
pub fn lock_variants(modifiers: u16, numlock_mask: u16) -> [u16; 4] {
    [
        modifiers,
        modifiers | numlock_mask,
        modifiers | mask::LOCK,
        modifiers | numlock_mask | mask::LOCK,
    ]
}

/// What a hotkey does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HotkeyAction {
    /// Capture the focused session's latest turn into the relay buffer.
    Capture,
    /// Paste the relay buffer into the focused session.
    Paste,
    /// Deliver the relay buffer to the clipboard.
    DeliverClipboard,
    /// Capture the focused session's latest turn and put it on the clipboard.
    CaptureAndCopy,
}

impl HotkeyAction {
    /// Every action, in the order the documentation lists them.
    pub const ALL: [HotkeyAction; 4] = [
        HotkeyAction::Capture,
        HotkeyAction::Paste,
        HotkeyAction::DeliverClipboard,
        HotkeyAction::CaptureAndCopy,
    ];

    /// The action's name, as in the configuration (`[hotkeys] capture = …`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            HotkeyAction::Capture => "capture",
            HotkeyAction::Paste => "paste",
            HotkeyAction::DeliverClipboard => "deliver_clipboard",
            HotkeyAction::CaptureAndCopy => "capture_and_copy",
        }
    }

    /// Whether the action needs to know the focused session.
    #[must_use]
    pub fn needs_focus(self) -> bool {
        !matches!(self, HotkeyAction::DeliverClipboard)
    }
}

impl fmt::Display for HotkeyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Binding {
        text.parse().unwrap()
    }

    #[test]
    fn defaults_parse() {
        let c = parse("super+shift+c");
        assert_eq!(c.key.keysym, u32::from(b'c'));
        assert!(c.modifiers.super_ && c.modifiers.shift);
        assert!(!c.modifiers.control && !c.modifiers.alt);
        assert_eq!(parse("Super+Shift+V").key.keysym, u32::from(b'v'));
    }

    #[test]
    fn modifiers_in_any_order_and_case() {
        assert_eq!(parse("SHIFT + Super + c"), parse("super+shift+c"));
        assert_eq!(parse("ctrl+alt+F5").key.keysym, 0xffc2);
        assert_eq!(parse("control+mod1+Return").key.name, "Return");
        assert_eq!(parse("win+enter").key.name, "Return");
        assert_eq!(parse("alt+7").key.keysym, 0x37);
        assert_eq!(parse("ctrl+page_up").key.name, "Page_Up");
    }

    #[test]
    fn bad_bindings_say_why() {
        for (text, needle) in [
            ("c", "at least one"),
            ("shift+c", "at least one"),
            ("", "names no key"),
            ("super+", "names no key"),
            ("hyper+c", "unknown modifier"),
            ("super+super+c", "twice"),
            ("super+pizza", "unknown key"),
        ] {
            let err = text.parse::<Binding>().unwrap_err();
            assert!(err.to_string().contains(needle), "{text}: {err}");
            assert!(err.to_string().contains(&format!("{text:?}")), "{err}");
        }
    }

    #[test]
    fn masks_follow_the_server_modifier_map() {
        let b = parse("alt+super+ctrl+shift+x");
        assert_eq!(
            b.x11_mask(mask::MOD1, mask::MOD4),
            mask::SHIFT | mask::CONTROL | mask::MOD1 | mask::MOD4
        );
        // A keymap with Super on Mod3.
        assert_eq!(parse("super+x").x11_mask(mask::MOD1, 32), 32);
    }

    #[test]
    fn lock_variants_cover_caps_and_num_lock() {
        let v = lock_variants(mask::CONTROL, mask::MOD2);
        assert_eq!(v.len(), 4);
        assert!(v.contains(&mask::CONTROL));
        assert!(v.contains(&(mask::CONTROL | mask::MOD2)));
        assert!(v.contains(&(mask::CONTROL | mask::LOCK)));
        assert!(v.contains(&(mask::CONTROL | mask::MOD2 | mask::LOCK)));
    }

    #[test]
    fn tmux_names() {
        assert_eq!(parse("super+shift+c").tmux_key(), "M-C");
        assert_eq!(parse("super+shift+v").tmux_key(), "M-V");
        assert_eq!(parse("ctrl+alt+c").tmux_key(), "C-M-c");
        assert_eq!(parse("ctrl+shift+F5").tmux_key(), "C-S-F5");
        assert_eq!(parse("alt+space").tmux_key(), "M-Space");
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "super+shift+c",
            "ctrl+alt+F12",
            "alt+Return",
            "ctrl+super+shift+1",
        ] {
            let b = parse(text);
            assert_eq!(parse(&b.to_string()), b, "{text}");
        }
    }

    #[test]
    fn action_names() {
        let names: Vec<_> = HotkeyAction::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(
            names,
            ["capture", "paste", "deliver_clipboard", "capture_and_copy"]
        );
        assert!(!HotkeyAction::DeliverClipboard.needs_focus());
        assert!(HotkeyAction::Paste.needs_focus());
    }
}
