//! A private X server for the desktop tests (`desktop_x11.rs`, `desktop_notify.rs`): Xvfb with
//! openbox (which maintains `_NET_ACTIVE_WINDOW`), the X tools the tests drive it with, and
//! `clippy-ctl hotkeys` started on it.

use std::path::Path;
use std::process::{Command, Stdio};

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, KeyButMask, Keycode};
use x11rb::rust_connection::RustConnection;

use super::{Proc, TempDir, base_env, read, wait_for};

/// Keysyms the tests remap.
pub mod keysym {
    pub const LOWER_C: u32 = 0x63;
    pub const UPPER_C: u32 = 0x43;
    pub const LOWER_V: u32 = 0x76;
    pub const UPPER_V: u32 = 0x56;
    pub const LOWER_X: u32 = 0x78;
    pub const UPPER_X: u32 = 0x58;
}

/// A private X server with a window manager; both are killed when it is dropped.
pub struct Display {
    /// `:N`, for `$DISPLAY`.
    pub name: String,
    wm: Proc,
    _server: Proc,
}

impl Display {
    /// Starts Xvfb on a free display, then openbox, and waits until openbox manages the screen.
    pub fn start(dir: &TempDir) -> Display {
        // -displayfd: the server picks a free display and writes its number to fd 1.
        let mut command = Command::new("Xvfb");
        base_env(&mut command, dir);
        command
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("xvfb.log")).unwrap());
        let mut server = Proc::spawn("Xvfb", &mut command);
        let number = super::read_line(&mut server.child);
        let name = format!(":{}", number.trim());
        assert!(number.trim().parse::<u32>().is_ok(), "display {number:?}");
        let mut command = Command::new("openbox");
        base_env(&mut command, dir);
        command
            .env("DISPLAY", &name)
            .arg("--sm-disable")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("openbox.log")).unwrap());
        let wm = Proc::spawn("openbox", &mut command);
        let mut display = Display {
            name,
            wm,
            _server: server,
        };
        wait_for("openbox to manage the screen", || {
            let out = display.tool(dir, "xprop", &["-root", "_NET_SUPPORTING_WM_CHECK"]);
            if String::from_utf8_lossy(&out).contains("window id") {
                return Some(());
            }
            // A window manager that ended will never manage the screen: say so, with its log
            // and the server's, rather than wait out the deadline.
            if let Ok(Some(status)) = display.wm.child.try_wait() {
                let log = |file: &str| String::from_utf8_lossy(&read(&dir.join(file))).into_owned();
                panic!(
                    "openbox ended ({status}) before managing the screen; openbox.log: {:?}; \
                     xvfb.log: {:?}",
                    log("openbox.log"),
                    log("xvfb.log"),
                );
            }
            None
        });
        display
    }

    fn connect(&self) -> RustConnection {
        x11rb::connect(Some(&self.name)).unwrap().0
    }

    /// Whether the server's modifier state has Num Lock (Mod2) locked, as QueryPointer reports.
    pub fn num_lock(&self) -> bool {
        let conn = self.connect();
        let root = conn.setup().roots[0].root;
        let reply = conn.query_pointer(root).unwrap().reply().unwrap();
        reply.mask.contains(KeyButMask::MOD2)
    }

    /// The keycodes that produce `keysym` (in any column), and the keysyms per keycode.
    pub fn keycodes_of(&self, keysym: u32) -> Vec<Keycode> {
        self.keymap()
            .into_iter()
            .filter(|(_, syms)| syms.contains(&keysym))
            .map(|(code, _)| code)
            .collect()
    }

    /// A keycode that produces nothing: room to move a key to.
    pub fn free_keycode(&self) -> Keycode {
        self.keymap()
            .into_iter()
            .find(|(_, syms)| syms.iter().all(|&s| s == 0))
            .map(|(code, _)| code)
            .expect("a keycode without keysyms")
    }

    fn keymap(&self) -> Vec<(Keycode, Vec<u32>)> {
        let conn = self.connect();
        let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
        let reply = conn
            .get_keyboard_mapping(min, max - min + 1)
            .unwrap()
            .reply()
            .unwrap();
        let per = usize::from(reply.keysyms_per_keycode);
        reply
            .keysyms
            .chunks(per)
            .zip(min..=max)
            .map(|(syms, code)| (code, syms.to_vec()))
            .collect()
    }

    /// Makes `keycode` produce `keysyms` (none: nothing), as `xmodmap -e 'keycode K = …'`
    /// does: every client gets a `MappingNotify`. Returns once the server has done it.
    pub fn set_keysyms(&self, keycode: Keycode, keysyms: &[u32]) {
        let conn = self.connect();
        let per = conn
            .get_keyboard_mapping(keycode, 1)
            .unwrap()
            .reply()
            .unwrap()
            .keysyms_per_keycode;
        let mut row = keysyms.to_vec();
        row.resize(usize::from(per), 0);
        conn.change_keyboard_mapping(1, keycode, per, &row)
            .unwrap()
            .check()
            .unwrap();
    }

    /// Runs an X tool on this display; its stdout.
    pub fn tool(&self, dir: &TempDir, program: &str, args: &[&str]) -> Vec<u8> {
        let mut command = Command::new(program);
        base_env(&mut command, dir);
        let out = command
            .env("DISPLAY", &self.name)
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        out.stdout
    }

    /// `xdotool ARGS`, which must succeed.
    pub fn xdotool(&self, dir: &TempDir, args: &[&str]) {
        let mut command = Command::new("xdotool");
        base_env(&mut command, dir);
        let status = command
            .env("DISPLAY", &self.name)
            .args(args)
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "xdotool {args:?}");
    }

    /// An xterm titled `title` running `argv`.
    pub fn xterm(&self, dir: &TempDir, title: &str, argv: &[String]) -> Proc {
        let mut command = Command::new("xterm");
        base_env(&mut command, dir);
        command
            .env("DISPLAY", &self.name)
            .args(["-T", title, "-xrm", "XTerm*allowTitleOps: false", "-e"])
            .args(argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("{title}.log"))).unwrap());
        Proc::spawn(title, &mut command)
    }

    /// The window titled exactly `title`.
    pub fn window(&self, dir: &TempDir, title: &str) -> String {
        wait_for(&format!("the window {title}"), || {
            let out = self.tool(dir, "xdotool", &["search", "--name", &format!("^{title}$")]);
            let text = String::from_utf8_lossy(&out).into_owned();
            text.lines().next().map(str::to_owned)
        })
    }

    /// Focuses `window` and waits until the window manager says it is active.
    pub fn focus(&self, dir: &TempDir, window: &str) {
        self.xdotool(dir, &["windowactivate", "--sync", window]);
        wait_for("the window to be active", || {
            let out = self.tool(dir, "xdotool", &["getactivewindow"]);
            (String::from_utf8_lossy(&out).trim() == window).then_some(())
        });
    }

    /// Focuses `window` and presses `keys` (`xdotool key` syntax) there.
    pub fn press(&self, dir: &TempDir, window: &str, keys: &str) {
        self.focus(dir, window);
        self.xdotool(dir, &["key", keys]);
    }

    /// Types `line` and Enter into `window`, the wrapped REPL of session `session` (its first
    /// input), and returns the turn it answers with.
    pub fn answer(&self, dir: &TempDir, window: &str, session: &str, line: &str) -> Vec<u8> {
        self.focus(dir, window);
        self.xdotool(dir, &["type", "--delay", "10", line]);
        self.xdotool(dir, &["key", "Return"]);
        wait_for(&format!("{session}'s turn"), || {
            (super::turns_of(dir, session) >= Some(1)).then_some(())
        });
        super::latest_turn(dir, session)
    }

    /// `clippy-ctl hotkeys ARGS` on this display with `env` added, logging to `log`; waits
    /// until it listens.
    pub fn hotkeys(&self, dir: &TempDir, log: &Path, args: &[&str], env: &[(&str, &str)]) -> Proc {
        let mut command = Command::new(super::ctl_bin());
        base_env(&mut command, dir);
        command
            .env("DISPLAY", &self.name)
            .envs(env.iter().copied())
            .arg("hotkeys")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap());
        let mut proc = Proc::spawn("clippy-ctl hotkeys", &mut command);
        wait_for("the hotkey client to listen", || {
            assert!(
                proc.exited().is_none(),
                "hotkeys exited: {}",
                String::from_utf8_lossy(&read(log))
            );
            String::from_utf8_lossy(&read(log))
                .contains("listening")
                .then_some(())
        });
        proc
    }
}
