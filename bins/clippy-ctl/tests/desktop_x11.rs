//! End-to-end: the hotkeys on a real X server (Xvfb + openbox), two xterms each running a
//! wrapped REPL, a private broker and `clippy-ctl hotkeys`. Skipped (and passing) when Xvfb or
//! one of the X tools is not installed; `.ci/run` installs them, so CI runs it.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::path::Path;
use std::process::{Command, Stdio};

use desktop::{Proc, TempDir, base_env, read, wait_for};
use nix::sys::signal::Signal;

/// The X tools the test drives.
const TOOLS: &[&str] = &["Xvfb", "openbox", "xterm", "xdotool", "xclip", "xprop"];

/// A private X server with a window manager that maintains `_NET_ACTIVE_WINDOW`.
struct Display {
    name: String,
    _wm: Proc,
    _server: Proc,
}

impl Display {
    fn start(dir: &TempDir) -> Display {
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
        let number = desktop::read_line(&mut server.child);
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
        let display = Display {
            name,
            _wm: wm,
            _server: server,
        };
        wait_for("openbox to manage the screen", || {
            let out = display.tool(dir, "xprop", &["-root", "_NET_SUPPORTING_WM_CHECK"]);
            String::from_utf8_lossy(&out)
                .contains("window id")
                .then_some(())
        });
        display
    }

    /// Whether the server's modifier state has Num Lock (Mod2) locked, as QueryPointer reports.
    fn num_lock(&self) -> bool {
        use x11rb::connection::Connection;
        use x11rb::protocol::xproto::{ConnectionExt as _, KeyButMask};
        let (conn, screen) = x11rb::connect(Some(&self.name)).unwrap();
        let root = conn.setup().roots[screen].root;
        let reply = conn.query_pointer(root).unwrap().reply().unwrap();
        reply.mask.contains(KeyButMask::MOD2)
    }

    /// Runs an X tool on this display; its stdout.
    fn tool(&self, dir: &TempDir, program: &str, args: &[&str]) -> Vec<u8> {
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

    fn xdotool(&self, dir: &TempDir, args: &[&str]) {
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
    fn xterm(&self, dir: &TempDir, title: &str, argv: &[String]) -> Proc {
        let mut command = Command::new("xterm");
        base_env(&mut command, dir);
        command
            .env("DISPLAY", &self.name)
            .args(["-T", title, "-xrm", "XTerm*allowTitleOps: false", "-e"])
            .args(argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(&format!("{title}.log"))).unwrap());
        Proc::spawn(title, &mut command)
    }

    /// The window titled exactly `title`.
    fn window(&self, dir: &TempDir, title: &str) -> String {
        wait_for(&format!("the window {title}"), || {
            let out = self.tool(dir, "xdotool", &["search", "--name", &format!("^{title}$")]);
            let text = String::from_utf8_lossy(&out).into_owned();
            text.lines().next().map(str::to_owned)
        })
    }

    /// Focuses `window` and waits until the window manager says it is active.
    fn focus(&self, dir: &TempDir, window: &str) {
        self.xdotool(dir, &["windowactivate", "--sync", window]);
        wait_for("the window to be active", || {
            let out = self.tool(dir, "xdotool", &["getactivewindow"]);
            (String::from_utf8_lossy(&out).trim() == window).then_some(())
        });
    }

    /// `clippy-ctl hotkeys ARGS`, logging to `log`; waits until it listens.
    fn hotkeys(&self, dir: &TempDir, log: &Path, args: &[&str]) -> Proc {
        let mut command = Command::new(desktop::ctl_bin());
        base_env(&mut command, dir);
        command
            .env("DISPLAY", &self.name)
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

fn log_says(log: &Path, needle: &str) -> Option<()> {
    String::from_utf8_lossy(&read(log))
        .contains(needle)
        .then_some(())
}

#[test]
fn hotkeys_move_a_turn_between_two_xterms() {
    if let Some(missing) = TOOLS.iter().find(|tool| !desktop::have(tool)) {
        println!("skipped: {missing} not found");
        return;
    }
    let dir = TempDir::new("x11");
    let display = Display::start(&dir);
    let _broker = desktop::broker(&dir, &[("DISPLAY", &display.name)]);
    let (log_a, log_b) = (dir.join("repl-a.bytes"), dir.join("repl-b.bytes"));
    let _xterm_a = display.xterm(&dir, "clippy-a", &desktop::wrapped_repl("a", &log_a));
    let _xterm_b = display.xterm(&dir, "clippy-b", &desktop::wrapped_repl("b", &log_b));
    wait_for("both sessions to register", || {
        (desktop::turns_of(&dir, "a").is_some() && desktop::turns_of(&dir, "b").is_some())
            .then_some(())
    });
    let (win_a, win_b) = (
        display.window(&dir, "clippy-a"),
        display.window(&dir, "clippy-b"),
    );
    let hotkeys_log = dir.join("hotkeys.log");
    let mut hotkeys = display.hotkeys(&dir, &hotkeys_log, &[]);

    // An answer in a.
    display.focus(&dir, &win_a);
    display.xdotool(&dir, &["type", "--delay", "10", "say hello from a"]);
    display.xdotool(&dir, &["key", "Return"]);
    wait_for("a's turn", || {
        (desktop::turns_of(&dir, "a") >= Some(1)).then_some(())
    });
    let turn = desktop::latest_turn(&dir, "a");
    assert!(
        String::from_utf8_lossy(&turn).contains("answer: hello from a"),
        "{turn:?}"
    );

    // Super+Shift+C in a, Super+Shift+V in b, with Num Lock on (the lock variants are
    // grabbed too; Num Lock does not change the `z` typed below).
    display.xdotool(&dir, &["key", "Num_Lock"]);
    wait_for("Num Lock to be on", || display.num_lock().then_some(()));
    display.xdotool(&dir, &["key", "super+shift+c"]);
    wait_for("the capture", || log_says(&hotkeys_log, "captured a:1"));
    display.focus(&dir, &win_b);
    display.xdotool(&dir, &["key", "super+shift+v"]);
    wait_for("the paste", || log_says(&hotkeys_log, "pasted into b"));
    wait_for("b to receive the turn", || {
        (read(&log_b) == turn).then_some(())
    });
    // A plain key reaches the xterm; the hotkeys never did.
    display.xdotool(&dir, &["key", "z"]);
    let mut expected = turn.clone();
    expected.push(b'z');
    wait_for("b to receive z", || {
        (read(&log_b) == expected).then_some(())
    });
    let typed_in_a = read(&log_a);
    assert_eq!(
        typed_in_a, b"say hello from a\r",
        "a saw only what was typed"
    );

    // The clipboard sink: the broker owns the selection after clippy-ctl has returned.
    let out = desktop::ctl(&dir, &[], &["deliver", "clipboard"]);
    assert!(out.status.success(), "{out:?}");
    let clip = display.tool(&dir, "xclip", &["-selection", "clipboard", "-o"]);
    assert_eq!(clip, turn, "xclip reads the turn");

    // Capture with --focused from the command line, a resolves (xterm → wrapper → REPL).
    display.focus(&dir, &win_a);
    let out = desktop::ctl(
        &dir,
        &[("DISPLAY", &display.name)],
        &["--json", "capture", "--focused"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"turn_id\""));

    // A second client: its capture binding is held by the first and is reported, its other
    // binding works.
    let second_log = dir.join("second.log");
    let second = display.hotkeys(
        &dir,
        &second_log,
        &["--capture", "super+shift+c", "--paste", "ctrl+alt+p"],
    );
    assert!(
        log_says(&second_log, "already grabbed").is_some(),
        "{}",
        String::from_utf8_lossy(&read(&second_log))
    );
    display.focus(&dir, &win_b);
    display.xdotool(&dir, &["key", "ctrl+alt+p"]);
    wait_for("the second client's paste", || {
        log_says(&second_log, "pasted into b")
    });
    let mut second = second;
    second.signal(Signal::SIGTERM);
    assert_eq!(second.wait().code(), Some(0), "SIGTERM: ungrab, exit 0");

    // The broker goes away: the hotkey client ungrabs and exits non-zero.
    drop(_broker);
    let status = hotkeys.wait();
    let log = String::from_utf8_lossy(&read(&hotkeys_log)).into_owned();
    println!("--- clippy-ctl hotkeys ---\n{log}");
    assert_eq!(status.code(), Some(3), "broker gone: exit 3: {log}");
}

/// What needs no X server: bindings are checked first (4), a missing desktop is reported (1),
/// tmux gets its bindings printed.
#[test]
fn hotkeys_check_their_arguments_and_environment() {
    let dir = TempDir::new("hotkeys-args");
    let out = desktop::ctl(&dir, &[], &["hotkeys", "--capture", "c"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--capture") && stderr.contains("at least one of ctrl, alt, super"),
        "{stderr}"
    );
    let out = desktop::ctl(
        &dir,
        &[],
        &["--json", "hotkeys", "--paste", "super+shift+c"],
    );
    assert_eq!(out.status.code(), Some(4), "duplicate binding: {out:?}");
    // Neither $DISPLAY nor $TMUX.
    let out = desktop::ctl(&dir, &[], &["--json", "hotkeys"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("desktop_unavailable"),
        "{out:?}"
    );
    let out = desktop::ctl(&dir, &[], &["--json", "capture", "--focused"]);
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    // In tmux the hotkeys are tmux bindings.
    let out = desktop::ctl(&dir, &[("TMUX", "/nonexistent,1,0")], &["hotkeys"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("tmux-bindings"),
        "{out:?}"
    );
    let out = desktop::ctl(&dir, &[], &["tmux-bindings", "--capture", "ctrl+alt+c"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bind-key -n C-M-c run-shell -b "), "{text}");
    assert!(text.contains("bind-key -n M-V run-shell -b "), "{text}");
}
