//! End-to-end: the tmux integration. A private tmux server (`-L <unique>`) with two windows,
//! each a wrapped REPL; the bindings of `clippy-ctl tmux-bindings` loaded into it; a client
//! attached from a second tmux server (key bindings fire only for an attached client), and keys
//! typed into that client. Skipped (saying so on stderr) when tmux is not installed; `.ci/run`
//! installs it and sets `CLIPPY_REQUIRE_DESKTOP_TESTS=1`, so in CI a skip fails.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use desktop::{TempDir, base_env, read, wait_for};

/// A tmux server of the test's own, killed (by pid) on drop.
struct Server {
    socket: String,
    pid: u32,
}

impl Server {
    /// A server on a socket name of its own (with `tag` in it), its session `main` running
    /// `first_window`.
    fn start(dir: &TempDir, tag: &str, first_window: &[String]) -> Server {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let socket = format!(
            "clippy-test-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Server::start_at(dir, socket, "main", first_window)
    }

    /// A server on the socket name `socket` (`tmux -L`), its detached 120×40 session `session`
    /// running `first_window`.
    fn start_at(dir: &TempDir, socket: String, session: &str, first_window: &[String]) -> Server {
        let status = tmux_command(dir, &socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                session,
                "-x",
                "120",
                "-y",
                "40",
            ])
            .args(first_window)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "tmux -L {socket} new-session -s {session}"
        );
        let pid = String::from_utf8(run(dir, &socket, &["display-message", "-p", "#{pid}"]))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        Server { socket, pid }
    }

    fn run(&self, dir: &TempDir, args: &[&str]) -> Vec<u8> {
        run(dir, &self.socket, args)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Politely first (the panes get SIGHUP), then by pid in case it hangs.
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stderr(Stdio::null())
            .status();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

fn tmux_command(dir: &TempDir, socket: &str) -> Command {
    let mut command = Command::new("tmux");
    base_env(&mut command, dir);
    command
        .env("TERM", "xterm-256color")
        .args(["-L", socket])
        .stdin(Stdio::null());
    command
}

fn run(dir: &TempDir, socket: &str, args: &[&str]) -> Vec<u8> {
    let out = tmux_command(dir, socket).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "tmux {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn tmux_bindings_move_a_turn_between_two_panes() {
    if !desktop::tools_present(&["tmux"]) {
        return;
    }
    let dir = TempDir::with_runtime("tmux");
    let broker = desktop::broker(&dir, &[]);
    let (log_a, log_b) = (dir.join("repl-a.bytes"), dir.join("repl-b.bytes"));
    let inner = Server::start(&dir, "inner", &desktop::wrapped_repl("a", &log_a));
    let mut window_b = vec!["new-window".to_owned(), "-d".to_owned(), "-t".to_owned()];
    window_b.push("main:1".into());
    window_b.extend(desktop::wrapped_repl("b", &log_b));
    let args: Vec<&str> = window_b.iter().map(String::as_str).collect();
    inner.run(&dir, &args);
    wait_for("both sessions to register", || {
        (desktop::turns_of(&dir, "a").is_some() && desktop::turns_of(&dir, "b").is_some())
            .then_some(())
    });

    // The bindings, as printed for .tmux.conf, loaded into the server.
    let out = desktop::ctl(&dir, &[], &["tmux-bindings"]);
    assert!(out.status.success(), "{out:?}");
    let bindings = String::from_utf8(out.stdout).unwrap();
    assert!(bindings.contains("bind-key -n M-C "), "{bindings}");
    let mut source = tmux_command(&dir, &inner.socket)
        .args(["source-file", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    source
        .stdin
        .take()
        .unwrap()
        .write_all(bindings.as_bytes())
        .unwrap();
    assert!(source.wait().unwrap().success(), "source-file");

    // A client attached from a second server: what is typed into its pane is what a user types.
    let outer = Server::start_at(
        &dir,
        format!("{}-outer", inner.socket),
        "outer",
        &[format!("tmux -L {} attach -t main", inner.socket)],
    );
    wait_for("the attached client", || {
        (!inner.run(&dir, &["list-clients"]).is_empty()).then_some(())
    });
    let keys = |keys: &[&str]| {
        let mut args = vec!["send-keys", "-t", "outer"];
        args.extend_from_slice(keys);
        outer.run(&dir, &args);
    };

    // An answer in a (window 0, active).
    keys(&["say hello from a", "Enter"]);
    wait_for("a's turn", || {
        (desktop::turns_of(&dir, "a") >= Some(1)).then_some(())
    });
    let turn = desktop::latest_turn(&dir, "a");
    assert!(String::from_utf8_lossy(&turn).contains("answer: hello from a"));

    // M-C (the default super+shift+c, as tmux can see it) captures a's turn 1.
    let id_a = desktop::sessions(&dir)
        .into_iter()
        .find(|(_, name, _)| name.as_deref() == Some("a"))
        .map(|(id, _, _)| id)
        .unwrap();
    keys(&["M-C"]);
    wait_for("the capture message", || {
        let log = String::from_utf8_lossy(&inner.run(&dir, &["show-messages"])).into_owned();
        log.contains(&format!("clippy: captured {id_a}:1 ("))
            .then_some(())
    });
    // M-V in window 1 pastes the turn's text into b (as the X11 hotkeys do: no escapes, no
    // final Enter); then z reaches b, and the hotkeys never did.
    let text = desktop::ctl(&dir, &[], &["get-turn", "--format", "text", "a"]).stdout;
    assert_eq!(text, b"answer: hello from a");
    inner.run(&dir, &["select-window", "-t", "main:1"]);
    keys(&["M-V"]);
    wait_for("b to receive the turn's text", || {
        (read(&log_b) == text).then_some(())
    });
    keys(&["z"]);
    let mut expected = text.clone();
    expected.push(b'z');
    wait_for("b to receive z", || {
        (read(&log_b) == expected).then_some(())
    });
    assert_eq!(read(&log_a), b"say hello from a\r");

    // --focused from the command line, inside tmux ($TMUX names the inner server): b.
    let socket_path =
        String::from_utf8(inner.run(&dir, &["display-message", "-p", "#{socket_path}"]))
            .unwrap()
            .trim()
            .to_owned();
    let tmux_env = format!("{socket_path},{},0", inner.pid);
    let out = desktop::ctl(
        &dir,
        &[("TMUX", &tmux_env)],
        &["--json", "paste", "--focused"],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"session\":\"b\""),
        "{out:?}"
    );

    // The clipboard in tmux is the paste buffer.
    let out = desktop::ctl(&dir, &[("TMUX", &tmux_env)], &["deliver", "clipboard"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(inner.run(&dir, &["save-buffer", "-"]), turn);
    drop(broker);
}
