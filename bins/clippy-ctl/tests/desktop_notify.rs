//! End-to-end: the hotkeys' desktop notifications, seen on a real session bus. A private X
//! server (Xvfb + openbox), a private D-Bus session bus (`dbus-daemon` with a configuration of
//! the test's own: no service activation, so nothing starts that the test does not own), a real
//! notification server on it (`dunst`), and `dbus-monitor` recording every `Notify` call and the
//! server's answers. Two xterms run wrapped REPLs, a third a plain program; `clippy-ctl hotkeys`
//! runs with `DBUS_SESSION_BUS_ADDRESS` set to the private bus. Every outcome must arrive as a
//! `Notify` call that dunst answers: two errors (paste with an empty relay buffer, capture in a
//! window without a session), a capture, a paste, a capture-and-copy, a binding lost to a
//! keyboard remap, and the broker going away. Skipped (saying so on stderr) when one of the
//! tools is not installed or clippy-ctl is built without its `notify` feature; `.ci/run`
//! installs the tools and sets `CLIPPY_REQUIRE_DESKTOP_TESTS=1`, so in CI a skip fails.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use desktop::x11::{Display, keysym};
use desktop::{Proc, TempDir, base_env, read, wait_for};

/// The tools the test drives.
const TOOLS: &[&str] = &[
    "Xvfb",
    "openbox",
    "xterm",
    "xdotool",
    "xprop",
    "xclip",
    "dbus-daemon",
    "dbus-monitor",
    "dunst",
];

/// The freedesktop notification service's well-known bus name.
const SERVICE: &str = "org.freedesktop.Notifications";

/// `(urgency, expire_timeout)` of an error: critical, never expires.
const CRITICAL: (Option<u8>, Option<i32>) = (Some(2), Some(0));
/// `(urgency, expire_timeout)` of a success: normal, for 4 s.
const NORMAL: (Option<u8>, Option<i32>) = (Some(1), Some(4000));

/// A private D-Bus session bus, and `dbus-monitor` on it writing to [`Bus::log`].
struct Bus {
    address: String,
    log: PathBuf,
    // Dropped in this order: the monitor, then the bus.
    _monitor: Proc,
    _daemon: Proc,
}

impl Bus {
    fn start(dir: &TempDir) -> Bus {
        let socket = dir.join("bus");
        let socket = socket.to_str().unwrap();
        assert!(
            !socket.contains(['<', '>', '&', '\'', '"', ',', ';']),
            "{socket}: not for an XML file or a D-Bus address"
        );
        // A session bus with no <servicedir>: no name is ever activated, so the notification
        // server is the one the test starts, or none.
        let config = dir.join("bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#
            ),
        )
        .unwrap();
        let mut command = Command::new("dbus-daemon");
        base_env(&mut command, dir);
        command
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("dbus-daemon.log")).unwrap());
        let mut daemon = Proc::spawn("dbus-daemon", &mut command);
        // Printed once it listens.
        let address = desktop::read_line(&mut daemon.child).trim().to_owned();
        assert!(
            address.starts_with("unix:path="),
            "dbus-daemon's address: {address:?}: {}",
            String::from_utf8_lossy(&read(&dir.join("dbus-daemon.log")))
        );

        // The Notify calls, the notification server's answers to them (they carry the ids it
        // gave), and the service's owner changing.
        let log = dir.join("dbus-monitor.log");
        let mut command = Command::new("dbus-monitor");
        base_env(&mut command, dir);
        command
            .args(["--address", &address])
            .arg(format!(
                "type='method_call',interface='{SERVICE}',member='Notify'"
            ))
            .arg(format!("type='method_return',sender='{SERVICE}'"))
            .arg(format!(
                "type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='{SERVICE}'"
            ))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(dir.join("dbus-monitor.err")).unwrap());
        let mut monitor = Proc::spawn("dbus-monitor", &mut command);
        // BecomeMonitor takes the monitor's names away: once it has lost its unique name, its
        // match rules are in effect.
        wait_for("dbus-monitor to monitor", || {
            assert!(
                monitor.exited().is_none(),
                "dbus-monitor exited: {}",
                String::from_utf8_lossy(&read(&dir.join("dbus-monitor.err")))
            );
            messages(&log)
                .iter()
                .any(|m| m.kind == "signal" && m.member == "NameLost")
                .then_some(())
        });
        Bus {
            address,
            log,
            _monitor: monitor,
            _daemon: daemon,
        }
    }

    /// Starts `dunst` on `display` and waits until it owns the notification service.
    fn dunst(&self, dir: &TempDir, display: &Display) -> Proc {
        // A configuration of its own (empty: the defaults), not the machine's or the user's.
        let config = dir.join("dunstrc");
        std::fs::write(&config, "").unwrap();
        let mut command = Command::new("dunst");
        base_env(&mut command, dir);
        command
            .env("DISPLAY", &display.name)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .arg("-config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("dunst.log")).unwrap());
        let mut dunst = Proc::spawn("dunst", &mut command);
        wait_for("dunst to own the notification service", || {
            assert!(
                dunst.exited().is_none(),
                "dunst exited: {}",
                String::from_utf8_lossy(&read(&dir.join("dunst.log")))
            );
            messages(&self.log)
                .iter()
                .any(|m| {
                    m.member == "NameOwnerChanged"
                        && m.args.first().map(String::as_str) == Some(SERVICE)
                        && m.args.get(2).is_some_and(|owner| !owner.is_empty())
                })
                .then_some(())
        });
        dunst
    }

    /// The notifications asked for so far, in order, each with the server's answer if it came.
    fn notifications(&self) -> Vec<Notification> {
        let messages = messages(&self.log);
        messages
            .iter()
            .filter(|m| m.kind == "method call" && m.member == "Notify")
            .map(|call| {
                let answer = messages.iter().find(|m| {
                    m.kind == "method return"
                        && m.destination == call.sender
                        && m.reply_serial == call.serial
                });
                Notification {
                    app: call.args.first().cloned().unwrap_or_default(),
                    summary: call.args.get(3).cloned().unwrap_or_default(),
                    body: call.args.get(4).cloned().unwrap_or_default(),
                    urgency: call.args.get(6).and_then(|hints| {
                        let (_, after) = hints.split_once("\"urgency\"")?;
                        let (_, after) = after.split_once("byte ")?;
                        after.split_whitespace().next()?.parse().ok()
                    }),
                    timeout: call
                        .args
                        .get(7)
                        .and_then(|t| t.strip_prefix("int32 ").and_then(|n| n.trim().parse().ok())),
                    id: answer.and_then(|m| {
                        m.args
                            .first()
                            .and_then(|id| id.strip_prefix("uint32 "))
                            .and_then(|n| n.trim().parse().ok())
                    }),
                }
            })
            .collect()
    }

    /// Waits for the `n`th notification (from 1) and for the server's answer to it; on a
    /// timeout, fails with `report()`.
    fn nth(&self, n: usize, what: &str, report: impl Fn() -> String) -> Notification {
        let deadline = Instant::now() + desktop::TIMEOUT;
        loop {
            let note = self.notifications().into_iter().nth(n - 1);
            if let Some(note) = note.filter(|note| note.id.is_some()) {
                return note;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for notification {n} ({what}):{}",
                report()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One `Notify` call as `dbus-monitor` showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Notification {
    app: String,
    summary: String,
    body: String,
    /// The `urgency` hint: 0 low, 1 normal, 2 critical.
    urgency: Option<u8>,
    /// `expire_timeout` in ms; 0 is never, -1 the server's default.
    timeout: Option<i32>,
    /// The id the notification server answered with; `None` while it has not answered.
    id: Option<u32>,
}

/// One message of `dbus-monitor`'s output: its header, and its top-level arguments (a string
/// without its quotes, anything else as printed: `uint32 7`, `array [ … ]`).
#[derive(Debug, Default)]
struct Message {
    kind: String,
    sender: String,
    destination: String,
    serial: String,
    reply_serial: String,
    member: String,
    args: Vec<String>,
}

/// The messages `dbus-monitor` has written to `log` so far. Each begins with a header line
/// (`method call time=… sender=… -> destination=… serial=…; interface=…; member=…`); each
/// top-level argument begins with exactly three spaces. A string's text may span lines.
fn messages(log: &Path) -> Vec<Message> {
    const KINDS: &[&str] = &["method call", "method return", "signal", "error"];
    let text = String::from_utf8_lossy(&read(log)).into_owned();
    let mut out: Vec<Message> = Vec::new();
    for line in text.lines() {
        if let Some(kind) = KINDS
            .iter()
            .find(|kind| line.starts_with(&format!("{kind} time=")))
        {
            let field = |name: &str| {
                line.split([' ', ';'])
                    .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
                    .unwrap_or_default()
                    .to_owned()
            };
            out.push(Message {
                kind: (*kind).to_owned(),
                sender: field("sender"),
                destination: field("destination"),
                serial: field("serial"),
                reply_serial: field("reply_serial"),
                member: field("member"),
                args: Vec::new(),
            });
        } else if let Some(message) = out.last_mut() {
            // `   ]` closes a top-level array: not an argument of its own.
            let top_level = line.len() > 3
                && line.starts_with("   ")
                && !line[3..].starts_with(char::is_whitespace)
                && !line[3..].starts_with([']', ')']);
            match message.args.last_mut() {
                Some(arg) if !top_level => {
                    arg.push('\n');
                    arg.push_str(line);
                }
                _ => message.args.push(line.trim_start().to_owned()),
            }
        }
    }
    for message in &mut out {
        for arg in &mut message.args {
            if let Some(text) = arg
                .strip_prefix("string \"")
                .and_then(|rest| rest.strip_suffix('"'))
            {
                *arg = text.to_owned();
            }
        }
    }
    out
}

/// `2.1 KiB`, `512 B`: how the contract writes sizes.
fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!(
            "{:.1} KiB",
            f64::from(u32::try_from(bytes).unwrap()) / 1024.0
        )
    }
}

#[test]
fn hotkeys_report_every_outcome_as_a_desktop_notification() {
    if !cfg!(feature = "notify") {
        desktop::skip("clippy-ctl is built without its `notify` feature");
        return;
    }
    if !desktop::tools_present(TOOLS) {
        return;
    }
    let dir = TempDir::with_runtime("notify");
    let display = Display::start(&dir);
    let bus = Bus::start(&dir);
    let mut dunst = bus.dunst(&dir, &display);
    let broker = desktop::broker(&dir, &[("DISPLAY", &display.name)]);
    let (log_a, log_b) = (dir.join("repl-a.bytes"), dir.join("repl-b.bytes"));
    let _xterm_a = display.xterm(&dir, "clippy-a", &desktop::wrapped_repl("a", &log_a));
    let _xterm_b = display.xterm(&dir, "clippy-b", &desktop::wrapped_repl("b", &log_b));
    // A window with no session in it.
    let plain_argv = ["sleep".to_owned(), "600".to_owned()];
    let _xterm_plain = display.xterm(&dir, "plain", &plain_argv);
    wait_for("both sessions to register", || {
        (desktop::turns_of(&dir, "a").is_some() && desktop::turns_of(&dir, "b").is_some())
            .then_some(())
    });
    let (win_a, win_b, win_plain) = (
        display.window(&dir, "clippy-a"),
        display.window(&dir, "clippy-b"),
        display.window(&dir, "plain"),
    );
    let hotkeys_log = dir.join("hotkeys.log");
    let mut hotkeys = display.hotkeys(
        &dir,
        &hotkeys_log,
        &["--capture-and-copy", "super+shift+x"],
        &[("DBUS_SESSION_BUS_ADDRESS", &bus.address)],
    );
    let report = |bus: &Bus| {
        format!(
            "\n--- notifications ---\n{:#?}\n--- clippy-ctl hotkeys ---\n{}\n--- dunst ---\n{}\n\
             --- typed into a, b ---\n{:?}\n{:?}",
            bus.notifications(),
            String::from_utf8_lossy(&read(&hotkeys_log)),
            String::from_utf8_lossy(&read(&dir.join("dunst.log"))),
            String::from_utf8_lossy(&read(&log_a)),
            String::from_utf8_lossy(&read(&log_b)),
        )
    };

    // An error: paste with the relay buffer still empty. Critical, and never expires.
    display.press(&dir, &win_b, "super+shift+v");
    let note = bus.nth(1, "the failed paste", || report(&bus));
    assert_eq!(note.app, "clippy", "{}", report(&bus));
    assert_eq!(note.summary, "clippy: paste failed", "{}", report(&bus));
    assert!(note.body.starts_with("buffer_empty: "), "{}", report(&bus));
    assert_eq!((note.urgency, note.timeout), CRITICAL, "{}", report(&bus));

    // An error of the desktop side: capture in a window that holds no session.
    display.press(&dir, &win_plain, "super+shift+c");
    let note = bus.nth(2, "the failed capture", || report(&bus));
    assert_eq!(note.summary, "clippy: capture failed", "{}", report(&bus));
    assert!(
        note.body
            .starts_with("no clippy session runs in the focused window (process "),
        "{}",
        report(&bus)
    );
    assert_eq!((note.urgency, note.timeout), CRITICAL, "{}", report(&bus));

    // An answer in a, captured: `captured a:1, <size>`, a normal notification for 4 s.
    let turn = display.answer(&dir, &win_a, "a", "say hello from a");
    display.xdotool(&dir, &["key", "super+shift+c"]);
    let note = bus.nth(3, "the capture", || report(&bus));
    assert_eq!(
        (note.app.as_str(), note.summary.as_str(), note.body.as_str()),
        (
            "clippy",
            "clippy",
            format!("captured a:1, {}", human_size(turn.len())).as_str()
        ),
        "{}",
        report(&bus)
    );
    assert_eq!((note.urgency, note.timeout), NORMAL, "{}", report(&bus));

    // Pasted into b.
    display.press(&dir, &win_b, "super+shift+v");
    let note = bus.nth(4, "the paste", || report(&bus));
    assert_eq!(
        (note.summary.as_str(), note.body.as_str()),
        ("clippy", "pasted into b"),
        "{}",
        report(&bus)
    );
    // The hotkeys relay the text a person saw.
    let text = desktop::ctl(&dir, &[], &["get-turn", "--format", "text", "a"]).stdout;
    wait_for("b to receive the turn's text", || {
        (read(&log_b) == text).then_some(())
    });

    // Capture-and-copy in a: `captured a:1, <size>, copied to the clipboard`, and the
    // clipboard holds the turn's text.
    display.press(&dir, &win_a, "super+shift+x");
    let note = bus.nth(5, "the capture-and-copy", || report(&bus));
    assert_eq!(
        (note.summary.as_str(), note.body.as_str()),
        (
            "clippy",
            format!(
                "captured a:1, {}, copied to the clipboard",
                human_size(turn.len())
            )
            .as_str()
        ),
        "{}",
        report(&bus)
    );
    assert_eq!((note.urgency, note.timeout), NORMAL);
    let clip = display.tool(&dir, "xclip", &["-selection", "clipboard", "-o"]);
    assert_eq!(clip, text, "{}", report(&bus));

    // x is on no key any more: the capture-and-copy binding is lost, critically reported; the
    // others stay.
    for code in display.keycodes_of(keysym::LOWER_X) {
        display.set_keysyms(code, &[]);
    }
    let note = bus.nth(6, "the lost binding", || report(&bus));
    assert_eq!(
        (note.summary.as_str(), note.body.as_str()),
        (
            "clippy: hotkey lost",
            "capture_and_copy (super+shift+x) no longer works after the keyboard mapping \
             changed: super+shift+x: no key of this keyboard produces x"
        ),
        "{}",
        report(&bus)
    );
    assert_eq!((note.urgency, note.timeout), CRITICAL);
    assert!(hotkeys.exited().is_none(), "{}", report(&bus));

    // One notification per event, each answered by dunst with an id of its own.
    let notes = bus.notifications();
    assert_eq!(notes.len(), 6, "{}", report(&bus));
    let mut ids: Vec<u32> = notes.iter().filter_map(|n| n.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6, "{}", report(&bus));
    // The notifications were shown, so the bell fallback never rang; the log still has every
    // outcome.
    let log = read(&hotkeys_log);
    assert!(!log.contains(&0x07), "no BEL: {}", report(&bus));
    let log = String::from_utf8_lossy(&log);
    for note in &notes {
        assert!(
            log.contains(&note.body),
            "{} in the log: {}",
            note.body,
            report(&bus)
        );
    }
    assert!(
        dunst.exited().is_none(),
        "dunst is still up: {}",
        report(&bus)
    );

    // The broker goes away: the client says so, critically, and exits 3.
    drop(broker);
    let note = bus.nth(7, "the hotkeys stopping", || report(&bus));
    assert_eq!(note.summary, "clippy: hotkeys stopped", "{}", report(&bus));
    assert!(
        note.body.starts_with("the broker is not reachable at ")
            && note.body.ends_with("the broker closed the connection"),
        "{}",
        report(&bus)
    );
    assert_eq!((note.urgency, note.timeout), CRITICAL, "{}", report(&bus));
    assert_eq!(hotkeys.wait().code(), Some(3), "{}", report(&bus));
    assert!(
        !read(&hotkeys_log).contains(&0x07),
        "no BEL: {}",
        report(&bus)
    );
}

/// `clippy-ctl notify` (issue 30) on the same private bus: a turn of a bash session and a
/// permission wait of the hooked test agent (as Claude Code, its hooks wired) each arrive as a
/// `Notify` call dunst answers — the turn normal with its first line, the wait critical with the
/// tool and its input.
#[test]
fn notify_turns_a_turn_and_a_wait_into_desktop_notifications() {
    if !cfg!(feature = "notify") {
        desktop::skip("clippy-ctl is built without its `notify` feature");
        return;
    }
    if !desktop::tools_present(&["Xvfb", "openbox", "dbus-daemon", "dbus-monitor", "dunst"]) {
        return;
    }
    let dir = TempDir::with_runtime("notify-desktop");
    let display = Display::start(&dir);
    let bus = Bus::start(&dir);
    let _dunst = bus.dunst(&dir, &display);
    let _broker = desktop::broker(&dir, &[]);
    let ok = |env: &[(&str, &str)], args: &[&str]| {
        let out = desktop::ctl(&dir, env, args);
        assert!(out.status.success(), "clippy-ctl {args:?}: {out:?}");
        out.stdout
    };
    let bin = dir.join("agent-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let agent = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clippy-session/tests/programs/hooked_agent.py");
    std::os::unix::fs::symlink(agent, bin.join("claude")).unwrap();
    std::os::unix::fs::symlink(desktop::ctl_bin(), bin.join("clippy-ctl")).unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let claude = bin.join("claude").display().to_string();
    let mut programs = Vec::new();
    for (name, env, command) in [
        (
            "agent",
            vec![("PATH", path.as_str())],
            vec![claude.as_str()],
        ),
        ("sh", vec![], vec!["bash", "--norc", "--noprofile"]),
    ] {
        let mut args = vec!["--timeout", "30000", "spawn", "--name", name];
        if name == "sh" {
            args.push("--shell-integration");
        }
        args.push("--");
        args.extend(command);
        ok(&env, &args);
        ok(
            &[],
            &["--timeout", "30000", "wait-prompt", name, "--from", "0"],
        );
        let status: serde_json::Value =
            serde_json::from_slice(&ok(&[], &["--json", "status", name])).unwrap();
        programs.push(status["session_status"]["pid"].as_i64().unwrap());
    }
    let _programs = KillGroups(programs);

    let log = dir.join("notify.log");
    let mut command = Command::new(desktop::ctl_bin());
    base_env(&mut command, &dir);
    command
        .env("DISPLAY", &display.name)
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .args(["notify", "sh", "agent"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut notify = Proc::spawn("clippy-ctl notify", &mut command);
    let said = || String::from_utf8_lossy(&read(&log)).into_owned();
    wait_for("notify to follow the broker", || {
        said().contains("following ").then_some(())
    });
    let report = |bus: &Bus| {
        format!(
            "\n--- notifications ---\n{:#?}\n--- clippy-ctl notify ---\n{}\n--- dunst ---\n{}",
            bus.notifications(),
            said(),
            String::from_utf8_lossy(&read(&dir.join("dunst.log"))),
        )
    };

    ok(&[], &["--timeout", "30000", "exec", "sh", "echo desk-turn"]);
    let note = bus.nth(1, "sh's turn", || report(&bus));
    assert_eq!(note.app, "clippy", "{}", report(&bus));
    assert_eq!(note.summary, "sh finished a turn", "{}", report(&bus));
    assert_eq!(note.body, "desk-turn", "{}", report(&bus));
    assert_eq!((note.urgency, note.timeout), NORMAL, "{}", report(&bus));

    ok(&[], &["send", "agent", "perm", "--enter"]);
    let note = bus.nth(2, "the agent's wait", || report(&bus));
    assert_eq!(note.summary, "agent is waiting", "{}", report(&bus));
    assert!(
        note.body
            .contains(r#"permission: Bash {\"command\":\"ls\"}"#)
            || note.body.contains(r#"permission: Bash {"command":"ls"}"#),
        "{}",
        report(&bus)
    );
    assert_eq!((note.urgency, note.timeout), CRITICAL, "{}", report(&bus));
    ok(&[], &["send", "agent", "y", "--enter"]);

    notify.signal(nix::sys::signal::Signal::SIGINT);
    let status = notify.wait();
    assert!(status.success(), "{status}: {}", said());
}

/// Kills the sessions' programs (their process groups) when the test ends.
struct KillGroups(Vec<i64>);

impl Drop for KillGroups {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}
