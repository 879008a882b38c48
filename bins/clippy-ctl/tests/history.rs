//! End-to-end: the history store (CONTRACTS/HISTORY.md) through `clippy-ctl history`, `search`,
//! `get-turn`, `events` and `status`. Real brokers (started by the test, so it knows their pids
//! and kills only those), real wrappers around bash with shell integration (`clippy-ctl spawn`),
//! in a private `XDG_RUNTIME_DIR` and a private `XDG_STATE_HOME` where the store lives. Every
//! wait is for a condition; the deadlines only fail a test that hangs.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use desktop::{Broker, TempDir, wait_for};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::Value;

/// A test's folders, brokers and sessions. Dropping it kills the programs of the sessions it
/// spawned (their wrappers then end) and its broker.
struct History {
    dir: TempDir,
    broker: Option<Broker>,
    /// The pids of the sessions' programs (each leads its process group).
    programs: Vec<i32>,
}

impl History {
    fn new(tag: &str) -> History {
        let dir = TempDir::with_runtime(tag);
        let mut history = History {
            dir,
            broker: None,
            programs: Vec::new(),
        };
        history.start_broker();
        history
    }

    /// `$XDG_STATE_HOME`: the store is in `clippy/` under it.
    fn state_home(&self) -> PathBuf {
        self.dir.join("state")
    }

    fn store(&self) -> PathBuf {
        self.state_home().join("clippy")
    }

    fn env(&self) -> [(String, String); 1] {
        [(
            "XDG_STATE_HOME".to_owned(),
            self.state_home().display().to_string(),
        )]
    }

    /// Starts a broker (none may run) and waits for it to answer.
    fn start_broker(&mut self) {
        assert!(self.broker.is_none(), "a broker of this test still runs");
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.broker = Some(desktop::broker(&self.dir, &env));
    }

    /// Stops the broker with `signal` and waits for it to be gone.
    fn stop_broker(&mut self, signal: Signal) {
        let mut broker = self.broker.take().expect("a broker runs");
        broker.signal(signal);
        broker.wait();
    }

    /// `clippy-ctl ARGS…` with the test's environment.
    fn ctl(&self, args: &[&str]) -> Output {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        desktop::ctl(&self.dir, &env, args)
    }

    /// `clippy-ctl ARGS…`, which must succeed: its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.ctl(args);
        assert!(out.status.success(), "{args:?}: {}", describe(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// `clippy-ctl --json ARGS…`, which must succeed: its one JSON document.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let text = self.ok(&all);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"))
    }

    /// `clippy-ctl spawn --name NAME [EXTRA…] --shell-integration -- bash`: the session id.
    fn bash(&mut self, name: &str, extra: &[&str]) -> String {
        let mut args = vec!["--timeout", "30000", "spawn", "--name", name];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--shell-integration", "--", "bash", "--norc", "--noprofile"]);
        let id = self.ok(&args).trim().to_owned();
        assert!(
            !id.is_empty() && !id.contains(char::is_whitespace),
            "{id:?}"
        );
        let status = self.json(&["status", name]);
        let pid = status["session_status"]["pid"].as_i64().unwrap();
        self.programs.push(i32::try_from(pid).unwrap());
        id
    }

    /// `clippy-ctl exec NAME LINE`: the turn id and the output.
    fn exec(&self, name: &str, line: &str) -> (String, String) {
        let doc = self.json(&["--timeout", "30000", "exec", name, line]);
        let turn = doc["turn_id"].as_str().unwrap_or_else(|| panic!("{doc}"));
        (turn.to_owned(), doc["output"].as_str().unwrap().to_owned())
    }

    /// `get-turn ID --format FORMAT`: the bytes.
    fn turn(&self, id: &str, format: &str) -> Vec<u8> {
        let out = self.ctl(&["get-turn", id, "--format", format]);
        assert!(out.status.success(), "get-turn {id}: {}", describe(&out));
        out.stdout
    }

    /// `history --json ARGS…`: turn id → entry.
    fn history(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["history"];
        all.extend_from_slice(args);
        let doc = self.json(&all);
        doc["turns"]
            .as_array()
            .unwrap_or_else(|| panic!("{doc}"))
            .clone()
    }

    /// Waits until `history` lists every one of `turns`: the store has them.
    fn wait_stored(&self, turns: &[&str]) -> BTreeMap<String, Value> {
        wait_for(&format!("{turns:?} in the history"), || {
            let listed: BTreeMap<String, Value> = self
                .history(&["--limit", "1000"])
                .into_iter()
                .map(|e| (e["turn_id"].as_str().unwrap().to_owned(), e))
                .collect();
            turns
                .iter()
                .all(|t| listed.contains_key(*t))
                .then_some(listed)
        })
    }

    /// `search --json ARGS…`: the hits.
    fn search(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["search"];
        all.extend_from_slice(args);
        let doc = self.json(&all);
        doc["hits"]
            .as_array()
            .unwrap_or_else(|| panic!("{doc}"))
            .clone()
    }

    /// The turn ids `search` finds for `word`.
    fn found(&self, word: &str) -> Vec<String> {
        self.search(&[word])
            .iter()
            .map(|hit| hit["turn_id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Ends every session's program (SIGKILL to its process group) and waits for each wrapper
    /// to be gone.
    fn end_sessions(&mut self) {
        let wrappers: Vec<i32> = self.programs.iter().filter_map(|&p| parent(p)).collect();
        for program in self.programs.drain(..) {
            let _ = killpg(Pid::from_raw(program), Signal::SIGKILL);
        }
        for wrapper in wrappers {
            wait_for(&format!("wrapper {wrapper} to end"), || {
                (!alive(wrapper)).then_some(())
            });
        }
    }

    /// Every file of the store (the database and its -wal and -shm), and what each holds.
    fn store_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut dirs = vec![self.store()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    files.push((path, bytes));
                }
            }
        }
        files
    }

    /// The store's files that hold `needle`.
    fn files_holding(&self, needle: &str) -> Vec<PathBuf> {
        self.store_files()
            .into_iter()
            .filter(|(_, bytes)| contains(bytes, needle.as_bytes()))
            .map(|(path, _)| path)
            .collect()
    }
}

impl Drop for History {
    fn drop(&mut self) {
        for &program in &self.programs {
            let _ = killpg(Pid::from_raw(program), Signal::SIGKILL);
        }
    }
}

fn describe(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The fields of `/proc/PID/stat` after the command name: state, ppid, …
fn stat(pid: i32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

fn parent(pid: i32) -> Option<i32> {
    stat(pid)?.get(1)?.parse().ok()
}

/// Runs, neither gone nor a zombie.
fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|fields| !matches!(fields[0].as_str(), "Z" | "X"))
}

/// The JSON list of `events --json ARGS…` (one object per line).
fn events(history: &History, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--json", "events"];
    all.extend_from_slice(args);
    history
        .ok(&all)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn turns_of_two_sessions_outlive_a_killed_broker_and_their_sessions() {
    let mut h = History::new("history-kill");
    let cwd_one = h.dir.join("work-one");
    let cwd_two = h.dir.join("work-two");
    std::fs::create_dir_all(&cwd_one).unwrap();
    std::fs::create_dir_all(&cwd_two).unwrap();
    let one = h.bash("one", &["--cwd", cwd_one.to_str().unwrap()]);
    let two = h.bash("two", &["--cwd", cwd_two.to_str().unwrap()]);
    // The words are made by the shell: the typed lines do not hold them.
    let (turn_one, out) = h.exec(
        "one",
        r"printf 'xylophone%s \033[1mbold\033[0m\n' $((40+2))",
    );
    assert!(out.contains("xylophone42"), "{out:?}");
    let (turn_two, out) = h.exec("two", "echo zeppelin$((6*7)) tab$'\\t'end");
    assert!(out.contains("zeppelin42"), "{out:?}");
    assert!(turn_one.starts_with(&format!("{one}:")), "{turn_one}");
    assert!(turn_two.starts_with(&format!("{two}:")), "{turn_two}");
    let raw_one = h.turn(&turn_one, "raw");
    let raw_two = h.turn(&turn_two, "raw");
    let text_one = h.turn(&turn_one, "text");
    assert!(contains(&raw_one, b"\x1b[1mbold"), "raw keeps the escapes");
    // Committed (history lists them) before the broker is killed: nothing committed is lost.
    h.wait_stored(&[&turn_one, &turn_two]);

    h.stop_broker(Signal::SIGKILL);
    h.end_sessions();
    h.start_broker();

    // The sessions are gone, their turns are not.
    assert!(!h.ok(&["list-sessions"]).contains("one"));
    let listed = h.wait_stored(&[&turn_one, &turn_two]);
    let (e1, e2) = (&listed[&turn_one], &listed[&turn_two]);
    assert_eq!(e1["name"], "one", "{e1}");
    assert_eq!(e1["session"], one.as_str());
    assert_eq!(e2["name"], "two", "{e2}");
    assert_eq!(
        e1["command"],
        serde_json::json!(["bash", "--norc", "--noprofile"])
    );
    assert_eq!(e1["cwd"], cwd_one.to_str().unwrap(), "{e1}");
    assert_eq!(e2["cwd"], cwd_two.to_str().unwrap(), "{e2}");
    assert_eq!(e1["live"], false);
    assert_eq!(e1["byte_length"], raw_one.len());
    assert_eq!(e1["exit_code"], 0);
    assert!(
        e1["input"].as_str().unwrap().contains("xylophone%s"),
        "{e1}"
    );
    // Newest first.
    let order: Vec<&str> = h
        .history(&[])
        .iter()
        .map(|e| e["turn_id"].as_str().unwrap().to_owned())
        .filter(|t| *t == turn_one || *t == turn_two)
        .map(|t| if t == turn_one { "one" } else { "two" })
        .collect();
    assert_eq!(order, ["two", "one"]);
    // For people: one line per turn, with the name, the turn and the command.
    let table = h.ok(&["history"]);
    let line = table
        .lines()
        .find(|l| l.contains(&turn_one))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        line.contains(" one ") && line.contains("bash --norc --noprofile"),
        "{line}"
    );
    assert!(!table.contains('\x1b'), "{table:?}");
    // Each session's history alone, by name.
    let only_two: Vec<String> = h
        .history(&["two"])
        .iter()
        .map(|e| e["session"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        !only_two.is_empty() && only_two.iter().all(|s| *s == two),
        "{only_two:?}"
    );

    // Search finds a word of each, with the word marked.
    assert_eq!(h.found("xylophone42"), [turn_one.as_str()]);
    assert_eq!(h.found("zeppelin42"), [turn_two.as_str()]);
    let hits = h.search(&["xylophone42"]);
    assert!(
        hits[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("[xylophone42]"),
        "{hits:?}"
    );
    let human = h.ok(&["search", "zeppelin42"]);
    assert!(
        human.contains(&turn_two) && human.contains("[zeppelin42]"),
        "{human}"
    );

    // The same bytes as before the kill.
    assert_eq!(h.turn(&turn_one, "raw"), raw_one);
    assert_eq!(h.turn(&turn_two, "raw"), raw_two);
    assert_eq!(h.turn(&turn_one, "text"), text_one);
    // And `status` tells the store.
    let status = h.json(&["status"]);
    let store = &status["status"]["history"];
    assert_eq!(store["enabled"], true, "{status}");
    assert_eq!(store["path"], h.store().to_str().unwrap(), "{status}");
    assert!(store["turns"].as_u64().unwrap() >= 2, "{status}");
    assert!(store["bytes"].as_u64().unwrap() > 0, "{status}");
    let text = h.ok(&["status"]);
    assert!(
        text.contains(&format!("history:  {} (", h.store().display())),
        "{text}"
    );
}

#[test]
fn an_ended_session_stays_searchable_and_readable() {
    let mut h = History::new("history-ended");
    h.bash("brief", &[]);
    let (turn, _) = h.exec("brief", "echo narwhal$((6*7))");
    let raw = h.turn(&turn, "raw");
    h.ok(&["send", "brief", "exit", "--enter"]);
    wait_for("the session to end", || {
        let status = h.json(&["status", "brief"]);
        (status["session_status"]["mode"] == "exited").then_some(())
    });
    h.programs.clear();

    let listed = h.wait_stored(&[&turn]);
    assert_eq!(listed[&turn]["live"], false, "{}", listed[&turn]);
    assert_eq!(h.found("narwhal42"), [turn.as_str()]);
    assert_eq!(h.turn(&turn, "raw"), raw);
    assert!(String::from_utf8_lossy(&h.turn(&turn, "text")).contains("narwhal42"));
    let mine = h.history(&["brief"]);
    assert!(
        mine.iter().any(|e| e["turn_id"] == turn.as_str()),
        "{mine:?}"
    );
}

#[test]
fn a_name_is_its_live_session_even_before_its_first_turn() {
    let mut h = History::new("history-renamed");
    h.bash("x", &[]);
    let (old_turn, _) = h.exec("x", "echo first$((6*7))life");
    h.wait_stored(&[&old_turn]);
    // The agent is restarted under the same name: the first ends, a new one registers.
    h.end_sessions();
    let new = h.bash("x", &[]);
    assert_eq!(h.json(&["status", "x"])["session_status"]["session"], new);

    // Every command that takes a session means the new one, which has no turn yet: never the
    // ended namesake's turn, which the store still holds.
    let refused = |args: &[&str], reason: &str| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = h.ctl(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["error"]["reason"], reason, "{args:?}: {doc}");
    };
    refused(&["get-turn", "x"], "no_turn");
    refused(&["get-turn", "x", "--format", "text"], "no_turn");
    refused(&["get-turn", "x:1"], "turn_not_found");
    refused(&["capture", "x"], "no_turn");
    assert_eq!(h.json(&["list-turns", "x"])["turns"], serde_json::json!([]));
    // The ended session's turn is still there by its id.
    assert!(String::from_utf8_lossy(&h.turn(&old_turn, "text")).contains("first42life"));

    // Its first turn is what the name gives from then on.
    let (turn, _) = h.exec("x", "echo second$((6*7))life");
    assert!(turn.starts_with(&format!("{new}:")), "{turn}");
    assert!(String::from_utf8_lossy(&h.turn("x", "text")).contains("second42life"));
}

#[test]
fn a_session_without_history_never_reaches_the_disk() {
    let mut h = History::new("history-private");
    let secret = h.bash("secret", &["--no-history"]);
    h.bash("public", &[]);
    let (secret_turn, out) = h.exec("secret", "echo wombat$((6*7))qq");
    assert!(out.contains("wombat42qq"), "{out:?}");
    let (public_turn, out) = h.exec("public", "echo platypus$((6*7))qq");
    assert!(out.contains("platypus42qq"), "{out:?}");
    // The public turn is stored; the secret one, taken after it was made, is not.
    h.wait_stored(&[&public_turn]);

    // In memory while the session lives.
    assert!(String::from_utf8_lossy(&h.turn(&secret_turn, "raw")).contains("wombat42qq"));
    // Never in the history or the search.
    let all = h.history(&["--limit", "1000"]);
    assert!(
        all.iter().all(|e| e["session"] != secret.as_str()),
        "{all:?}"
    );
    assert!(h.found("wombat42qq").is_empty());
    assert_eq!(h.found("platypus42qq"), [public_turn.as_str()]);
    let human = h.ctl(&["search", "wombat42qq"]);
    assert_eq!(human.status.code(), Some(0), "{}", describe(&human));
    assert_eq!(
        String::from_utf8_lossy(&human.stdout),
        "nothing found for \"wombat42qq\"\n"
    );

    // Nothing of it in the store's files, while the broker runs…
    check(&h, &secret, "while the broker runs");
    // … and after it stopped cleanly (its last writes and checkpoint done).
    h.stop_broker(Signal::SIGTERM);
    check(&h, &secret, "after the broker stopped");
    // The store is private: its folder 0700, its files 0600.
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&h.store()), 0o700);
    for (path, _) in h.store_files() {
        assert_eq!(mode(&path) & 0o077, 0, "{}", path.display());
    }
}

/// The store's files hold the public session's word (the scan sees what is stored) and
/// nothing of the `--no-history` session: neither its output, nor its typed line, nor its id.
fn check(h: &History, secret: &str, when: &str) {
    assert!(
        !h.files_holding("platypus42qq").is_empty(),
        "{when}: the scan finds the public turn (else it proves nothing)"
    );
    for needle in ["wombat42qq", "wombat$((6*7))qq", secret] {
        let holding = h.files_holding(needle);
        assert!(holding.is_empty(), "{when}: {needle:?} in {holding:?}");
    }
}

#[test]
fn forget_removes_a_session_then_everything() {
    let mut h = History::new("history-forget");
    h.bash("keep", &[]);
    let drop_id = h.bash("drop", &[]);
    let (keep_turn, _) = h.exec("keep", "echo ocelot$((6*7))");
    let (drop_turn, _) = h.exec("drop", "echo pangolin$((6*7))");
    let (drop_turn2, _) = h.exec("drop", "echo pangolin$((7*7))");
    h.wait_stored(&[&keep_turn, &drop_turn, &drop_turn2]);
    let stored_of_drop = h.history(&["drop"]).len() as u64;
    assert!(stored_of_drop >= 2);

    // `--all` alone is refused, before anything is asked.
    let out = h.ctl(&["history", "--all"]);
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    let out = h.ctl(&["history", "--forget"]);
    assert_eq!(out.status.code(), Some(4), "{}", describe(&out));
    assert_eq!(h.history(&["drop"]).len() as u64, stored_of_drop);

    let doc = h.json(&["history", "--forget", "drop"]);
    assert_eq!(
        doc,
        serde_json::json!({"forgotten": {"session": "drop", "all": false, "turns": stored_of_drop}})
    );
    let left = h.history(&["--limit", "1000"]);
    assert!(
        left.iter().all(|e| e["session"] != drop_id.as_str()),
        "{left:?}"
    );
    assert!(left.iter().any(|e| e["turn_id"] == keep_turn.as_str()));
    assert!(h.found("pangolin42").is_empty());
    // What the live session's ring holds in memory stays (only the store forgets).
    assert!(String::from_utf8_lossy(&h.turn(&drop_turn, "text")).contains("pangolin42"));
    assert!(h.found("pangolin49").is_empty());
    assert_eq!(h.found("ocelot42"), [keep_turn.as_str()]);

    let stored = h.history(&["--limit", "1000"]).len();
    let out = h.ok(&["history", "--forget", "--all"]);
    assert_eq!(
        out,
        format!(
            "forgot {stored} stored turn{} of every session, and every stored event\n",
            if stored == 1 { "" } else { "s" }
        )
    );
    assert!(h.history(&[]).is_empty());
    assert_eq!(h.ok(&["history"]), "no stored turns\n");
    assert!(h.found("ocelot42").is_empty());
}

#[test]
fn filters_narrow_and_no_query_is_an_error() {
    let mut h = History::new("history-filters");
    h.bash("f", &[]);
    h.bash("g", &[]);
    let turns: Vec<String> = (1..=3)
        .map(|n| h.exec("f", &format!("echo ibex{n}$((6*7))")).0)
        .collect();
    let (other, _) = h.exec("g", "echo ibex9$((6*7))");
    let all: Vec<&str> = turns.iter().map(String::as_str).collect();
    let listed = h.wait_stored(&all);
    let at = |turn: &str| listed[turn]["timestamp"].as_u64().unwrap();
    let ids = |entries: Vec<Value>| -> Vec<String> {
        entries
            .iter()
            .map(|e| e["turn_id"].as_str().unwrap().to_owned())
            .collect()
    };

    let newest = ids(h.history(&["f", "--limit", "1"]));
    assert_eq!(newest, [turns[2].as_str()]);
    let second = at(&turns[1]).to_string();
    // The timestamps are distinct (each turn completed after the previous exec returned).
    assert!(at(&turns[0]) < at(&turns[1]) && at(&turns[1]) < at(&turns[2]));
    let since = ids(h.history(&["f", "--since", &second]));
    assert_eq!(since, [turns[2].as_str(), turns[1].as_str()]);
    let until = ids(h.history(&["f", "--until", &second]));
    assert_eq!(until, [turns[0].as_str()]);
    // The same instant as ISO-8601 UTC.
    let iso = clippy_proto::iso8601_utc(at(&turns[1]));
    assert_eq!(ids(h.history(&["f", "--since", &iso])), since);
    // Times ago: all of them within the hour, none before it.
    assert_eq!(ids(h.history(&["f", "--since", "1h"])).len(), 3);
    assert!(h.history(&["--until", "1h"]).is_empty());
    assert_eq!(
        h.ok(&["history", "f", "--until", "1h"]),
        "no stored turns of f\n"
    );
    // A name nothing was stored under is an error, not an empty past.
    for args in [
        &["history", "nosuch"][..],
        &["search", "ibex242", "--session", "nosuch"],
    ] {
        let out = h.ctl(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("session_not_found"), "{stderr}");
    }

    // Search: ranked hits, filtered the same way.
    assert_eq!(h.found("ibex242"), [turns[1].as_str()]);
    assert_eq!(h.found("ibex942"), [other.as_str()]);
    assert!(h.search(&["ibex942", "--session", "f"]).is_empty());
    assert_eq!(
        ids(h.search(&["ibex242", "--session", "f"])),
        [turns[1].as_str()]
    );
    assert!(h.search(&["ibex342", "--until", &second]).is_empty());
    assert_eq!(
        ids(h.search(&["ibex342", "--since", &second])),
        [turns[2].as_str()]
    );

    // Whatever is typed, search answers (no query syntax to get wrong).
    for hostile in [
        "\"",
        "NEAR(",
        "a-b",
        "*",
        "'",
        "(",
        ")",
        "OR",
        "AND NOT",
        "x:y",
        "^",
        "ibex*",
        "\"ibex",
        "NEAR(ibex242 ibex342, 2)",
        "{f}",
        "\\",
        "ibex242\"",
        "–",
        "ü",
    ] {
        let out = h.ctl(&["--json", "search", hostile]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{hostile:?}: {}",
            describe(&out)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(doc["hits"].is_array(), "{hostile:?}: {doc}");
    }
    let out = h.ctl(&["--json", "search", "--", "-ibex242"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    // An empty query and a bad TIME are usage errors; so is a range that holds nothing.
    for args in [
        &["search", " "][..],
        &["history", "--since", "yesterday"],
        &["search", "x", "--until", "2026-02-30"],
        &["history", "--since", "2h", "--until", "3h"],
    ] {
        let out = h.ctl(args);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {}", describe(&out));
    }
    let out = h.ctl(&["history", "--since", "tomorrow"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("90s, 15m, 2h"),
        "the forms are named: {}",
        describe(&out)
    );
}

#[test]
fn events_reach_back_across_a_restart_and_their_ids_continue() {
    let mut h = History::new("history-events");
    h.bash("ev", &[]);
    h.exec("ev", "echo quetzal$((6*7))");
    let before = events(&h, &["--since", "0"]);
    assert!(!before.is_empty());
    let last = before
        .iter()
        .map(|e| e["id"].as_u64().unwrap())
        .max()
        .unwrap();
    // Stored before the kill: the store counts them all.
    wait_for("the events to be stored", || {
        let status = h.json(&["status"]);
        (status["status"]["history"]["events"].as_u64() >= Some(before.len() as u64)).then_some(())
    });

    h.stop_broker(Signal::SIGKILL);
    h.start_broker();
    // The session's wrapper registers again; a new turn makes new events.
    h.exec("ev", "echo quetzal$((7*7))");
    // (The store may answer before the newest events are committed: wait for them.)
    let after = wait_for("the new turn's event", || {
        let after = events(&h, &["--since", "0"]);
        after
            .iter()
            .any(|e| e["id"].as_u64() > Some(last) && e["type"] == "turn.completed")
            .then_some(after)
    });
    let by_id: BTreeMap<u64, &Value> = after
        .iter()
        .map(|e| (e["id"].as_u64().unwrap(), e))
        .collect();
    for old in &before {
        let id = old["id"].as_u64().unwrap();
        let again = by_id
            .get(&id)
            .unwrap_or_else(|| panic!("event {id} is gone: {after:?}"));
        assert_eq!(again["type"], old["type"], "{old} / {again}");
        assert_eq!(again["ts"], old["ts"], "{old} / {again}");
    }
    let new: Vec<&Value> = after
        .iter()
        .filter(|e| !before.iter().any(|old| old["id"] == e["id"]))
        .collect();
    assert!(!new.is_empty(), "{after:?}");
    assert!(
        new.iter().all(|e| e["id"].as_u64().unwrap() > last),
        "new ids continue after {last}: {new:?}"
    );
    assert!(new.iter().any(|e| e["type"] == "turn.completed"), "{new:?}");
    // Oldest first, as always.
    let ids: Vec<u64> = after.iter().map(|e| e["id"].as_u64().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted);
}

/// The store's file damaged while no broker ran (overwritten with garbage): the broker starts
/// and serves, and `clippy-ctl history` and `search` fail with the store's problem, naming the
/// file, instead of an empty past or a crash. (The broker's own tests damage it in other ways.)
#[test]
fn a_damaged_store_is_reported_by_history_and_the_broker_serves_on() {
    let mut h = History::new("history-damaged");
    h.stop_broker(Signal::SIGTERM);
    let db = h.store().join("history.sqlite3");
    // The database and its write-ahead log (which holds what the broker wrote since the last
    // checkpoint), every byte.
    for file in [db.clone(), h.store().join("history.sqlite3-wal")] {
        if let Ok(meta) = std::fs::metadata(&file) {
            let len = usize::try_from(meta.len()).unwrap().max(4096);
            std::fs::write(&file, vec![0x5a; len]).unwrap();
        }
    }
    let _ = std::fs::remove_file(h.store().join("history.sqlite3-shm"));
    h.start_broker();
    for args in [&["history"][..], &["search", "anything"]] {
        let out = h.ctl(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("history_failed"), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&db.display().to_string()),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("damaged"), "{args:?}: {stderr}");
    }
    // Live operation goes on.
    h.bash("live", &[]);
    let (_, output) = h.exec("live", "echo okapi$((6*7))");
    assert!(output.contains("okapi42"), "{output}");
}
