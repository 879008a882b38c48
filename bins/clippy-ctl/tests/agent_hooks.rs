//! End-to-end tests of the agents' hooks: the real `clippy-ctl hook` against a real Unix
//! listener standing in for the wrapper, and `clippy-ctl hooks install|uninstall|status` on
//! settings files in a private home directory.
//!
//! No assertion is about time: a test asserts that `hook` finishes (a generous guard kills it
//! and fails the test otherwise), never how fast.

use std::ffi::OsStr;
use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_hooks::{Agent, MAX_REPORT_BYTES, encode};
use serde_json::Value;

mod support;

use support::{TempDir, test_dir};

/// How long anything may take before the test fails: a guard against hanging, not a timing.
const GUARD: Duration = Duration::from_secs(60);

const CLAUDE_STOP: &[u8] =
    br#"{"hook_event_name":"Stop","session_id":"s1","last_assistant_message":"Done."}"#;
const CODEX_NOTIFY: &str =
    r#"{"type":"agent-turn-complete","turn-id":"1","last-assistant-message":"Hi there"}"#;

/// What a `clippy-ctl` run left.
#[derive(Debug)]
struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Output {
    fn expect_silent_success(&self) {
        assert_eq!(
            (self.code, self.stdout.as_str(), self.stderr.as_str()),
            (0, "", ""),
            "a hook exits 0 and prints nothing"
        );
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.stdout))
    }
}

/// `clippy-ctl` in a clean environment: `PATH`, `HOME` and `XDG_RUNTIME_DIR` of `dir`, plus
/// `env`.
fn ctl(dir: &TempDir, args: &[&str], env: &[(&str, &OsStr)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_clippy-ctl"));
    command
        .args(args)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("HOME", dir.home())
        .env("XDG_RUNTIME_DIR", dir.path())
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// Waits for `child` to finish (killing it and failing after [`GUARD`]), with its output.
fn finish(mut child: Child) -> Output {
    let started = Instant::now();
    // Read the pipes on threads: a chatty child must not block on a full pipe.
    let mut stdout = child.stdout.take().expect("stdout piped");
    let mut stderr = child.stderr.take().expect("stderr piped");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("clippy-ctl did not finish");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        code: status.code().expect("exited, not killed"),
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

/// Runs `clippy-ctl` with `stdin` as its input (written on a thread, then closed).
fn run(dir: &TempDir, args: &[&str], env: &[(&str, &OsStr)], stdin: Option<Vec<u8>>) -> Output {
    let mut command = ctl(dir, args, env);
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().expect("clippy-ctl runs");
    let writer = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("stdin piped");
        // The hook may stop reading (a payload too large) or never start (no socket): a
        // failed write is its business.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    let output = finish(child);
    if let Some(writer) = writer {
        writer.join().expect("stdin writer");
    }
    output
}

/// A listener standing in for the wrapper's hook socket.
struct Wrapper {
    path: PathBuf,
    listener: UnixListener,
}

impl Wrapper {
    fn listen(dir: &TempDir) -> Wrapper {
        let path = dir.path().join("hook.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        Wrapper { path, listener }
    }

    fn env(&self) -> (&'static str, &OsStr) {
        ("CLIPPY_HOOK_SOCKET", self.path.as_os_str())
    }

    /// Accepts one connection on a thread and reads it to its end.
    fn receive(&self) -> JoinHandle<Vec<u8>> {
        let listener = self.listener.try_clone().expect("clone");
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("accept");
            stream.set_read_timeout(Some(GUARD)).expect("read timeout");
            let mut report = Vec::new();
            stream.read_to_end(&mut report).expect("read the report");
            report
        })
    }

    /// Whether a connection is waiting (after the hook ended).
    fn has_connection(&self) -> bool {
        self.listener.set_nonblocking(true).expect("nonblocking");
        let waiting = match self.listener.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        };
        self.listener.set_nonblocking(false).expect("blocking");
        waiting
    }
}

/// Waits until `path` exists (a guard fails the test after [`GUARD`]).
fn wait_for_file(path: &Path) -> String {
    let started = Instant::now();
    loop {
        if let Ok(text) = fs::read_to_string(path) {
            return text;
        }
        assert!(
            started.elapsed() < GUARD,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A shell script that writes its last argument, and whether it saw the hook socket, to
/// `<dir>/chained` (complete when it appears).
fn chained_script(dir: &TempDir) -> PathBuf {
    let script = dir.path().join("notify.sh");
    let out = dir.path().join("chained");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor last; do :; done\nprintf '%s|%s|%s' \"$1\" \"${{CLIPPY_HOOK_SOCKET-unset}}\" \"$last\" > '{out}.tmp'\nmv '{out}.tmp' '{out}'\n",
            out = out.display()
        ),
    )
    .expect("script");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

// ---------------------------------------------------------------------------------------------
// hook
// ---------------------------------------------------------------------------------------------

#[test]
fn hook_sends_the_payload_on_stdin_as_one_report() {
    let dir = test_dir();
    let wrapper = Wrapper::listen(&dir);
    let received = wrapper.receive();
    let out = run(
        &dir,
        &["hook", "claude"],
        &[wrapper.env()],
        Some(CLAUDE_STOP.to_vec()),
    );
    out.expect_silent_success();
    assert_eq!(
        received.join().expect("received"),
        encode(Agent::Claude, CLAUDE_STOP)
    );
}

#[test]
fn hook_sends_codex_notify_payload_from_its_last_argument() {
    let dir = test_dir();
    let wrapper = Wrapper::listen(&dir);
    let received = wrapper.receive();
    let out = run(
        &dir,
        &["hook", "codex", CODEX_NOTIFY],
        &[wrapper.env()],
        None,
    );
    out.expect_silent_success();
    assert_eq!(
        received.join().expect("received"),
        encode(Agent::Codex, CODEX_NOTIFY.as_bytes())
    );
}

#[test]
fn hook_runs_the_chained_program_with_the_payload_last_and_without_the_socket() {
    let dir = test_dir();
    let script = chained_script(&dir);
    let chain =
        serde_json::to_string(&[script.to_str().expect("utf-8"), "first word"]).expect("json");
    let wrapper = Wrapper::listen(&dir);
    let received = wrapper.receive();
    let out = run(
        &dir,
        &["hook", "codex", "--chain", &chain, CODEX_NOTIFY],
        &[wrapper.env()],
        None,
    );
    out.expect_silent_success();
    assert_eq!(
        received.join().expect("received"),
        encode(Agent::Codex, CODEX_NOTIFY.as_bytes())
    );
    assert_eq!(
        wait_for_file(&dir.path().join("chained")),
        format!("first word|unset|{CODEX_NOTIFY}")
    );
}

#[test]
fn hook_runs_the_chained_program_outside_any_session_too() {
    let dir = test_dir();
    let script = chained_script(&dir);
    let chain = serde_json::to_string(&[script.to_str().expect("utf-8")]).expect("json");
    let dead = dir.path().join("gone.sock");
    for env in [vec![], vec![("CLIPPY_HOOK_SOCKET", dead.as_os_str())]] {
        let _ = fs::remove_file(dir.path().join("chained"));
        let out = run(
            &dir,
            &["hook", "codex", "--chain", &chain, CODEX_NOTIFY],
            &env,
            None,
        );
        out.expect_silent_success();
        assert_eq!(
            wait_for_file(&dir.path().join("chained")),
            format!("{CODEX_NOTIFY}|unset|{CODEX_NOTIFY}")
        );
    }
}

#[test]
fn hook_without_a_session_or_with_a_dead_socket_ends_quietly() {
    let dir = test_dir();
    let missing = dir.path().join("missing.sock");
    // A socket file nobody listens on any more: connecting is refused.
    let stale = dir.path().join("stale.sock");
    drop(UnixListener::bind(&stale).expect("bind"));
    let empty = OsStr::new("");
    for env in [
        vec![],
        vec![("CLIPPY_HOOK_SOCKET", empty)],
        vec![("CLIPPY_HOOK_SOCKET", missing.as_os_str())],
        vec![("CLIPPY_HOOK_SOCKET", stale.as_os_str())],
        vec![("CLIPPY_HOOK_SOCKET", dir.path().as_os_str())],
    ] {
        for (args, stdin) in [
            (vec!["hook", "claude"], Some(CLAUDE_STOP.to_vec())),
            (vec!["hook", "gemini"], None),
            (vec!["hook", "codex", CODEX_NOTIFY], None),
        ] {
            run(&dir, &args, &env, stdin).expect_silent_success();
        }
    }
}

#[test]
fn hook_gives_up_on_a_wrapper_that_never_accepts_a_large_report() {
    let dir = test_dir();
    // Bound and listening, never accepting: the report fills the socket's buffer, and the
    // hook's write runs out of time.
    let wrapper = Wrapper::listen(&dir);
    let payload = vec![b'x'; 4 << 20];
    let out = run(&dir, &["hook", "claude"], &[wrapper.env()], Some(payload));
    out.expect_silent_success();
}

#[test]
fn hook_with_bad_arguments_does_nothing_and_says_nothing() {
    let dir = test_dir();
    let wrapper = Wrapper::listen(&dir);
    for args in [
        &["hook"][..],
        &["hook", "aider", "{}"],
        &["hook", "--chain"],
        &["--json", "hook", "nobody"],
    ] {
        run(&dir, args, &[wrapper.env()], Some(b"{}".to_vec())).expect_silent_success();
    }
    assert!(
        !wrapper.has_connection(),
        "no report for an unknown agent or a missing payload"
    );
    // A chain that is not a JSON array is not run; the report still goes.
    let received = wrapper.receive();
    let args = ["hook", "--chain", "not json", "codex", CODEX_NOTIFY];
    run(&dir, &args, &[wrapper.env()], None).expect_silent_success();
    assert_eq!(
        received.join().expect("received"),
        encode(Agent::Codex, CODEX_NOTIFY.as_bytes())
    );
}

#[test]
fn hook_sends_nothing_for_a_payload_over_the_limit() {
    let dir = test_dir();
    let wrapper = Wrapper::listen(&dir);
    let payload = vec![b' '; MAX_REPORT_BYTES];
    run(&dir, &["hook", "gemini"], &[wrapper.env()], Some(payload)).expect_silent_success();
    assert!(!wrapper.has_connection(), "an oversized report is dropped");
}

#[test]
fn hook_sends_nothing_when_stdin_never_ends() {
    let dir = test_dir();
    let wrapper = Wrapper::listen(&dir);
    let mut command = ctl(&dir, &["hook", "claude"], &[wrapper.env()]);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().expect("clippy-ctl runs");
    // Written, but never closed until the hook is done.
    let mut stdin = child.stdin.take().expect("stdin piped");
    stdin.write_all(b"{\"hook_event_name\":").expect("write");
    let out = finish(child);
    drop(stdin);
    out.expect_silent_success();
    assert!(
        !wrapper.has_connection(),
        "an unfinished payload is not sent"
    );
}

#[test]
fn hook_help_is_for_people_who_ask() {
    let dir = test_dir();
    let out = run(&dir, &["hook", "--help"], &[], None);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("Run by agents' hooks; not for people"),
        "{}",
        out.stdout
    );
    let top = run(&dir, &["--help"], &[], None);
    assert!(top.stdout.contains("not for people"), "{}", top.stdout);
}

// ---------------------------------------------------------------------------------------------
// hooks install / uninstall / status
// ---------------------------------------------------------------------------------------------

const CLAUDE_USER: &str = "{\"model\":\"opus\",\n \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}]},\n \"env\": {\"A\": \"1\"}}";

fn write_mode(path: &Path, text: &str, mode: u32) {
    fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    fs::write(path, text).expect("write");
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("metadata").permissions().mode() & 0o7777
}

fn backup(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.clippy-backup", path.display()))
}

/// The installed hook command lines of a JSON settings file, one per event.
fn commands(settings: &Value) -> Vec<String> {
    settings["hooks"]
        .as_object()
        .expect("hooks")
        .values()
        .flat_map(|groups| groups.as_array().expect("groups").iter())
        .flat_map(|group| group["hooks"].as_array().expect("handlers").iter())
        .filter_map(|handler| handler["command"].as_str())
        .filter(|command| command.ends_with("# clippy-hooks"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn claude_install_is_idempotent_keeps_a_backup_and_uninstall_restores_the_file() {
    let dir = test_dir();
    let settings = dir.home().join(".claude/settings.json");
    write_mode(&settings, CLAUDE_USER, 0o640);

    let out = run(&dir, &["hooks", "install", "claude"], &[], None);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with(&format!(
            "installed the claude hooks in {}",
            settings.display()
        )),
        "{}",
        out.stdout
    );
    assert_eq!(
        fs::read_to_string(backup(&settings)).expect("backup"),
        CLAUDE_USER
    );
    let installed = fs::read_to_string(&settings).expect("settings");
    assert_eq!(mode(&settings), 0o640, "the file keeps its mode");
    let value: Value = serde_json::from_str(&installed).expect("json");
    assert_eq!(value["model"], "opus");
    assert_eq!(
        value["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    let ctl = env!("CARGO_BIN_EXE_clippy-ctl");
    let ours = commands(&value);
    assert_eq!(
        ours.len(),
        4,
        "Stop, StopFailure, PermissionRequest, Notification: {ours:?}"
    );
    assert!(
        ours.iter()
            .all(|c| c == &format!("{ctl} hook claude # clippy-hooks")),
        "{ours:?}"
    );

    let again = run(&dir, &["--json", "hooks", "install", "claude"], &[], None);
    assert_eq!(again.code, 0, "{again:?}");
    let report = again.json();
    assert_eq!(report["changed"], false);
    assert_eq!(report["action"], "install");
    assert_eq!(report["path"], settings.display().to_string());
    assert_eq!(report["backup"], backup(&settings).display().to_string());
    assert_eq!(fs::read_to_string(&settings).expect("settings"), installed);

    let status = run(&dir, &["--json", "hooks", "status"], &[], None).json();
    assert_eq!(status["agents"][0]["agent"], "claude");
    assert_eq!(status["agents"][0]["installed"], true);
    assert_eq!(status["agents"][1]["installed"], false);

    let out = run(&dir, &["hooks", "uninstall", "claude"], &[], None);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("back as it was before install"),
        "{}",
        out.stdout
    );
    assert_eq!(
        fs::read_to_string(&settings).expect("settings"),
        CLAUDE_USER
    );
    assert_eq!(mode(&settings), 0o640);
    assert!(!backup(&settings).exists(), "the backup has served");

    let out = run(&dir, &["hooks", "uninstall", "claude"], &[], None);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("nothing changed"), "{}", out.stdout);
}

#[test]
fn the_installed_claude_command_reports_to_the_session() {
    let dir = test_dir();
    let config = dir.path().join("claude-config");
    let env = [("CLAUDE_CONFIG_DIR", config.as_os_str())];
    run(&dir, &["hooks", "install", "claude"], &env, None);
    let value: Value =
        serde_json::from_str(&fs::read_to_string(config.join("settings.json")).expect("file"))
            .expect("json");
    let command = commands(&value).pop().expect("a command");
    // As Claude runs it: through a shell, the payload on stdin.
    let wrapper = Wrapper::listen(&dir);
    let received = wrapper.receive();
    let mut shell = Command::new("/bin/sh")
        .args(["-c", &command])
        .env("CLIPPY_HOOK_SOCKET", &wrapper.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh");
    shell
        .stdin
        .take()
        .expect("stdin")
        .write_all(CLAUDE_STOP)
        .expect("write");
    finish(shell).expect_silent_success();
    assert_eq!(
        received.join().expect("received"),
        encode(Agent::Claude, CLAUDE_STOP)
    );
}

#[test]
fn codex_install_chains_the_users_notify_and_uninstall_gives_it_back() {
    let dir = test_dir();
    let script = chained_script(&dir);
    let codex_home = dir.path().join("codex");
    let config = codex_home.join("config.toml");
    let user = format!(
        "model = \"o3\"\nnotify = [\"{}\", \"mine\"]\n\n[tui]\nnotifications = true\n",
        script.display()
    );
    write_mode(&config, &user, 0o600);
    let env = [("CODEX_HOME", codex_home.as_os_str())];

    let out = run(&dir, &["--json", "hooks", "install", "codex"], &env, None);
    assert_eq!(out.code, 0, "{out:?}");
    let report = out.json();
    assert_eq!(report["changed"], true);
    assert_eq!(
        report["chained"],
        serde_json::json!([script.display().to_string(), "mine"])
    );
    let installed = fs::read_to_string(&config).expect("config");
    assert!(
        installed.contains(&format!(
            "# clippy-hooks chained: notify = [\"{}\", \"mine\"]\n",
            script.display()
        )),
        "{installed}"
    );
    assert!(installed.find("# <<< clippy hooks <<<") < installed.find("[tui]"));
    assert_eq!(fs::read_to_string(backup(&config)).expect("backup"), user);

    // What Codex will run: clippy's notify, the payload appended.
    // (clippy writes TOML strings that are JSON strings too.)
    let line = installed
        .lines()
        .find_map(|line| line.strip_prefix("notify = "))
        .expect("clippy's notify line");
    let argv: Vec<String> = serde_json::from_str(line).expect("an array of strings");
    assert_eq!(
        argv[..3],
        [env!("CARGO_BIN_EXE_clippy-ctl"), "hook", "codex"]
    );
    let wrapper = Wrapper::listen(&dir);
    let received = wrapper.receive();
    let notify = Command::new(&argv[0])
        .args(&argv[1..])
        .arg(CODEX_NOTIFY)
        .env("CLIPPY_HOOK_SOCKET", &wrapper.path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("notify runs");
    finish(notify).expect_silent_success();
    assert_eq!(
        received.join().expect("received"),
        encode(Agent::Codex, CODEX_NOTIFY.as_bytes())
    );
    assert_eq!(
        wait_for_file(&dir.path().join("chained")),
        format!("mine|unset|{CODEX_NOTIFY}")
    );

    let again = run(&dir, &["hooks", "install", "codex"], &env, None);
    assert!(again.stdout.contains("nothing changed"), "{again:?}");
    assert_eq!(fs::read_to_string(&config).expect("config"), installed);

    let out = run(&dir, &["hooks", "uninstall", "codex"], &env, None);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(fs::read_to_string(&config).expect("config"), user);
    assert_eq!(mode(&config), 0o600);
}

#[test]
fn gemini_install_follows_gemini_cli_home_and_uninstall_keeps_later_changes() {
    let dir = test_dir();
    let gemini_home = dir.path().join("g");
    let settings = gemini_home.join(".gemini/settings.json");
    let user = "{\n  \"ui\": {\n    \"theme\": \"GitHub\"\n  }\n}\n";
    write_mode(&settings, user, 0o644);
    let env = [("GEMINI_CLI_HOME", gemini_home.as_os_str())];

    let out = run(&dir, &["hooks", "install", "gemini"], &env, None);
    assert_eq!(out.code, 0, "{out:?}");
    let mut value: Value =
        serde_json::from_str(&fs::read_to_string(&settings).expect("settings")).expect("json");
    assert_eq!(commands(&value).len(), 3);
    assert_eq!(
        value["hooks"]["AfterAgent"][0]["hooks"][0]["name"],
        "clippy"
    );

    // The user changes their theme while the hooks are in.
    value["ui"]["theme"] = "Dracula".into();
    fs::write(
        &settings,
        serde_json::to_string_pretty(&value).expect("json"),
    )
    .expect("write");
    let out = run(&dir, &["hooks", "uninstall", "gemini"], &env, None);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("stays as you left it"),
        "{}",
        out.stdout
    );
    let left: Value =
        serde_json::from_str(&fs::read_to_string(&settings).expect("settings")).expect("json");
    assert_eq!(left, serde_json::json!({ "ui": { "theme": "Dracula" } }));
    assert_eq!(
        fs::read_to_string(backup(&settings)).expect("backup kept"),
        user
    );
}

#[test]
fn a_file_clippy_created_goes_again_and_a_linked_file_stays_linked() {
    let dir = test_dir();
    let settings = dir.home().join(".gemini/settings.json");
    run(&dir, &["hooks", "install", "gemini"], &[], None);
    assert_eq!(mode(&settings), 0o600);
    assert!(!backup(&settings).exists(), "nothing to back up");
    let out = run(&dir, &["hooks", "uninstall", "gemini"], &[], None);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!settings.exists(), "{out:?}");

    let real = dir.path().join("dotfiles/claude.json");
    write_mode(&real, CLAUDE_USER, 0o644);
    let link = dir.home().join(".claude/settings.json");
    fs::create_dir_all(link.parent().expect("parent")).expect("dir");
    symlink(&real, &link).expect("symlink");
    run(&dir, &["hooks", "install", "claude"], &[], None);
    assert!(fs::symlink_metadata(&link).expect("link").is_symlink());
    assert!(
        fs::read_to_string(&real)
            .expect("real")
            .contains("# clippy-hooks")
    );
    run(&dir, &["hooks", "uninstall", "claude"], &[], None);
    assert!(fs::symlink_metadata(&link).expect("link").is_symlink());
    assert_eq!(fs::read_to_string(&real).expect("real"), CLAUDE_USER);
}

#[test]
fn broken_settings_are_refused_and_left_untouched() {
    let dir = test_dir();
    let claude = dir.home().join(".claude/settings.json");
    let commented = "// my settings\n{\"model\": \"opus\"}\n";
    write_mode(&claude, commented, 0o644);
    let codex = dir.home().join(".codex/config.toml");
    let multi = "notify = [\n  \"notify-send\",\n  \"Codex\",\n]\n";
    write_mode(&codex, multi, 0o644);

    for (agent, path, text) in [("claude", &claude, commented), ("codex", &codex, multi)] {
        let out = run(&dir, &["hooks", "install", agent], &[], None);
        assert_eq!(out.code, 1, "{out:?}");
        assert_eq!(out.stdout, "");
        assert!(
            out.stderr
                .starts_with(&format!("clippy-ctl: {}: ", path.display())),
            "{}",
            out.stderr
        );
        assert_eq!(fs::read_to_string(path).expect("file"), text);
        assert!(!backup(path).exists());
    }
    let out = run(&dir, &["--json", "hooks", "install", "claude"], &[], None);
    assert_eq!(out.code, 1);
    let error = &out.json()["error"];
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("not plain JSON")),
        "{error}"
    );

    let status = run(&dir, &["hooks", "status"], &[], None);
    assert_eq!(status.code, 0);
    assert!(
        status
            .stdout
            .lines()
            .any(|l| l.starts_with("claude  unreadable")),
        "{}",
        status.stdout
    );

    let out = run(&dir, &["hooks", "install", "aider"], &[], None);
    assert_eq!(out.code, 4, "{out:?}");
}
