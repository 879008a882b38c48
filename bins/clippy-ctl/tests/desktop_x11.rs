//! End-to-end: the hotkeys on a real X server (Xvfb + openbox), two xterms each running a
//! wrapped REPL, a private broker and `clippy-ctl hotkeys`. There is no session bus, so errors
//! come as the bell fallback: BEL and the message on stderr. Skipped (saying so on stderr)
//! when Xvfb or one of the X tools is not installed; `.ci/run` installs them and sets
//! `CLIPPY_REQUIRE_DESKTOP_TESTS=1`, so in CI a skip fails.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::path::Path;

use desktop::x11::{Display, keysym};
use desktop::{TempDir, read, wait_for};
use nix::sys::signal::Signal;

/// The X tools the test drives.
const TOOLS: &[&str] = &["Xvfb", "openbox", "xterm", "xdotool", "xclip", "xprop"];

fn log_says(log: &Path, needle: &str) -> Option<()> {
    String::from_utf8_lossy(&read(log))
        .contains(needle)
        .then_some(())
}

#[test]
fn hotkeys_move_a_turn_between_two_xterms() {
    if !desktop::tools_present(TOOLS) {
        return;
    }
    let dir = TempDir::with_runtime("x11");
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
    let mut hotkeys = display.hotkeys(&dir, &hotkeys_log, &[], &[]);

    // An answer in a.
    let turn = display.answer(&dir, &win_a, "a", "say hello from a");
    assert!(
        String::from_utf8_lossy(&turn).contains("answer: hello from a"),
        "{turn:?}"
    );
    // The hotkeys relay the text a person saw: no escapes, no final CR LF (an Enter in b).
    let text = desktop::ctl(&dir, &[], &["get-turn", "--format", "text", "a"]).stdout;
    assert_eq!(text, b"answer: hello from a", "{turn:?}");

    // Super+Shift+C in a, Super+Shift+V in b, with Num Lock on (the lock variants are
    // grabbed too; Num Lock does not change the `z` typed below).
    display.xdotool(&dir, &["key", "Num_Lock"]);
    wait_for("Num Lock to be on", || display.num_lock().then_some(()));
    display.xdotool(&dir, &["key", "super+shift+c"]);
    wait_for("the capture", || log_says(&hotkeys_log, "captured a:1"));
    display.press(&dir, &win_b, "super+shift+v");
    wait_for("the paste", || log_says(&hotkeys_log, "pasted into b"));
    wait_for("b to receive the turn's text", || {
        (read(&log_b) == text).then_some(())
    });
    // A plain key reaches the xterm; the hotkeys never did.
    display.xdotool(&dir, &["key", "z"]);
    let mut expected = text.clone();
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

    // Capture with --focused from the command line, a resolves (xterm → wrapper → REPL): its
    // turn 1 is captured.
    display.focus(&dir, &win_a);
    let out = desktop::ctl(
        &dir,
        &[("DISPLAY", &display.name)],
        &["--json", "capture", "--focused"],
    );
    assert!(out.status.success(), "{out:?}");
    let id_a = desktop::sessions(&dir)
        .into_iter()
        .find(|(_, name, _)| name.as_deref() == Some("a"))
        .map(|(id, _, _)| id)
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["captured"]["turn_id"].as_str(),
        Some(format!("{id_a}:1").as_str()),
        "{json}"
    );

    // A second client: its capture binding is held by the first and is reported, its other
    // binding works.
    let second_log = dir.join("second.log");
    let second = display.hotkeys(
        &dir,
        &second_log,
        &["--capture", "super+shift+c", "--paste", "ctrl+alt+p"],
        &[],
    );
    assert!(
        log_says(
            &second_log,
            "capture (super+shift+c): super+shift+c is already grabbed"
        )
        .is_some(),
        "{}",
        String::from_utf8_lossy(&read(&second_log))
    );
    // No session bus here, so no notification: the error rang the bell and wrote BEL.
    assert!(
        read(&second_log).contains(&0x07),
        "BEL in {:?}",
        String::from_utf8_lossy(&read(&second_log))
    );
    display.press(&dir, &win_b, "ctrl+alt+p");
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
    assert_eq!(status.code(), Some(3), "broker gone: exit 3: {log}");
}

/// A keyboard remap: the client grabs a binding again where its key went, reports a binding
/// whose key is gone (BEL and stderr: no session bus here) and keeps the others, says so when
/// it is back, and exits 1 once no binding is left.
#[test]
fn hotkeys_follow_keyboard_remaps_and_report_lost_bindings() {
    if !desktop::tools_present(TOOLS) {
        return;
    }
    let dir = TempDir::with_runtime("x11-remap");
    let display = Display::start(&dir);
    let _broker = desktop::broker(&dir, &[("DISPLAY", &display.name)]);
    // A window with no session in it: a press there is answered with an error, which shows
    // that the press was grabbed.
    let _plain = display.xterm(&dir, "plain", &["sleep".to_owned(), "600".to_owned()]);
    let plain = display.window(&dir, "plain");
    display.focus(&dir, &plain);
    let log = dir.join("hotkeys.log");
    let mut hotkeys = display.hotkeys(&dir, &log, &[], &[]);
    let text = || String::from_utf8_lossy(&read(&log)).into_owned();

    // c moves to another key (first added there, then taken from its own): the capture binding
    // is grabbed where c is now.
    let key_c = display.keycodes_of(keysym::LOWER_C);
    let key_v = display.keycodes_of(keysym::LOWER_V);
    assert!(
        !key_c.is_empty() && !key_v.is_empty(),
        "{key_c:?} {key_v:?}"
    );
    let spare = display.free_keycode();
    display.set_keysyms(spare, &[keysym::LOWER_C, keysym::UPPER_C]);
    for &code in &key_c {
        display.set_keysyms(code, &[keysym::LOWER_X, keysym::UPPER_X]);
    }
    display.xdotool(&dir, &["key", "super+shift+c"]);
    wait_for("the capture on the moved key", || {
        log_says(&log, "no clippy session runs in the focused window")
    });
    assert!(!text().contains("no longer works"), "{}", text());

    // c is on no key: the capture binding is lost and said to be, paste still listens.
    display.set_keysyms(spare, &[]);
    wait_for("the lost binding to be reported", || {
        log_says(
            &log,
            "capture (super+shift+c) no longer works after the keyboard mapping changed: \
             super+shift+c: no key of this keyboard produces c",
        )
    });
    assert!(read(&log).contains(&0x07), "BEL: {}", text());
    assert!(hotkeys.exited().is_none(), "{}", text());

    // c is back on its key.
    display.set_keysyms(key_c[0], &[keysym::LOWER_C, keysym::UPPER_C]);
    wait_for("the binding to come back", || {
        log_says(&log, "capture (super+shift+c) works again")
    });

    // Neither c nor v on any key: nothing is grabbed, so the client stops with exit 1.
    display.set_keysyms(key_c[0], &[]);
    for &code in &key_v {
        display.set_keysyms(code, &[]);
    }
    let status = hotkeys.wait();
    assert_eq!(status.code(), Some(1), "{}", text());
    assert!(
        text().contains("paste (super+shift+v) no longer works")
            && text().contains("no hotkey is grabbed any more"),
        "{}",
        text()
    );
}

/// What needs no X server: bindings are checked first (4), a missing desktop is reported (1),
/// tmux gets its bindings printed.
#[test]
fn hotkeys_check_their_arguments_and_environment() {
    let dir = TempDir::with_runtime("hotkeys-args");
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
    // `deliver` checks its flags before anything else: --focused is for the inject sink.
    let out = desktop::ctl(&dir, &[], &["deliver", "clipboard", "--focused"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--focused are only for the inject sink"),
        "{out:?}"
    );
    // With a broker (else the commands would stop at connecting, exit 3): neither $DISPLAY nor
    // $TMUX, then a $DISPLAY with no X server behind it.
    let _broker = desktop::broker(&dir, &[]);
    for env in [&[][..], &[("DISPLAY", ":4242")][..]] {
        for args in [
            &["--json", "hotkeys"][..],
            &["--json", "capture", "--focused"][..],
        ] {
            let out = desktop::ctl(&dir, env, args);
            assert_eq!(out.status.code(), Some(1), "{env:?} {args:?}: {out:?}");
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("desktop_unavailable"),
                "{env:?} {args:?}: {out:?}"
            );
        }
    }
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
