//! Routing end to end (CONTRACTS/ROUTING.md): a real broker in the test's own
//! `XDG_RUNTIME_DIR`, agents (`tests/programs/echo_agent.py`) wrapped by `clippy-session` on real
//! PTYs, `clippy-ctl` run as a process — and a raw `clippy_proto::Client` where the wire is
//! clearer (a subscriber that never reads, a flood of requests).
//!
//! Nothing here sleeps to synchronise: every wait polls something (an agent's log, its turn log,
//! the broker's event history, `session_status`) with a deadline.
//!
//! The agents log CLOCK_MONOTONIC times (`time.monotonic_ns()`): when the source printed its
//! reply and when the target read the handed-over line. The handoff latency is printed from
//! those and from the events' timestamps (run with `--nocapture` to see it).

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clippy_proto::{Message, Mode};
use nix::sys::signal::Signal;
use serde_json::Value;
use support::broker::{self, Fixture, p50_max};
use support::{Spawn, Term, now_ms, parse_iso8601_ms, program, python, settle};

/// How long a `clippy-ctl` run may take before the test fails.
const CTL_DEADLINE: Duration = clippy_testkit::DEADLINE;

// ---------------------------------------------------------------------------------------------
// The broker and the agents
// ---------------------------------------------------------------------------------------------

/// What these tests add to the shared fixture.
impl Fixture {
    fn ctl_command(&self, args: &[&str]) -> Command {
        broker::ctl_command(&self.dir, args)
    }

    /// `clippy-ctl ARGS…` run to its end: exit code, stdout, stderr.
    fn ctl(&self, args: &[&str]) -> (i32, String, String) {
        let run = broker::ctl(&self.dir, args, CTL_DEADLINE);
        (run.code, run.stdout, run.stderr)
    }

    /// `clippy-ctl --json ARGS…`: the exit code and the one JSON document on stdout.
    fn ctl_json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let (code, stdout, stderr) = self.ctl(&all);
        let value: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "clippy-ctl {all:?} (exit {code}) did not print one JSON document ({e}):\n\
                 {stdout}\nstderr: {stderr}"
            )
        });
        (code, value)
    }

    /// `clippy-ctl --json ARGS…` that must succeed.
    fn ok_json(&self, args: &[&str]) -> Value {
        let (code, value) = self.ctl_json(args);
        assert_eq!(code, 0, "clippy-ctl {args:?}: {value}");
        value
    }

    /// `clippy-ctl --json events ARGS…` (the history): one event per line.
    fn events(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["--json", "events"];
        all.extend_from_slice(args);
        let (code, stdout, stderr) = self.ctl(&all);
        assert_eq!(code, 0, "clippy-ctl {all:?}: {stdout}\n{stderr}");
        jsonl(&stdout)
    }

    /// Polls the event history until an event satisfies `ok`; returns it.
    fn wait_event(&self, what: &str, mut ok: impl FnMut(&Value) -> bool) -> Value {
        let mut found = None;
        settle(what, || {
            found = self.events(&[]).into_iter().find(|e| ok(e));
            found.is_some()
        });
        found.unwrap()
    }

    /// `echo_agent.py NAME ARGS…` wrapped (prompt `^NAME> $`, turns logged), returned once the
    /// broker knows it idle at its first prompt.
    fn agent(&self, name: &str, args: &[&str]) -> Agent {
        let log = self.dir.join(format!("{name}.log"));
        let turns = self.dir.join(format!("{name}.turns"));
        let pattern = format!("^{name}> $");
        let script = program("echo_agent.py");
        let mut argv: Vec<&str> = vec![
            "--name",
            name,
            "--preset",
            "generic",
            "--pattern",
            &pattern,
            "--turn-log",
            turns.to_str().unwrap(),
            "--",
            python(),
            script.to_str().unwrap(),
            name,
        ];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["--log", log.to_str().unwrap()]);
        // Wide enough that the growing lines of a ping-pong never wrap.
        let mut term = Spawn::wrapper(&self.dir, argv).size(200, 40).start();
        term.expect(format!("{name}> "));
        let state = self.wait_state(name, "idle at its first prompt", |s| {
            s.connected && s.mode == Mode::Idle
        });
        Agent {
            term,
            name: name.to_owned(),
            id: state.session,
            log,
            turns,
        }
    }
}

/// A wrapped `echo_agent.py`.
struct Agent {
    term: Term,
    name: String,
    /// The session id.
    id: String,
    log: PathBuf,
    turns: PathBuf,
}

/// One line of an agent's `--log`.
#[derive(Debug, Clone)]
struct Note {
    kind: String,
    ns: u64,
    text: String,
}

impl Agent {
    /// Types a line as a person would.
    fn say(&mut self, line: &str) {
        self.term.send(format!("{line}\r"));
    }

    /// The agent's log, complete lines only.
    fn notes(&self) -> Vec<Note> {
        complete_lines(&self.log)
            .into_iter()
            .map(|line| {
                let mut parts = line.splitn(3, ' ');
                Note {
                    kind: parts.next().unwrap().to_owned(),
                    ns: parts.next().unwrap().parse().unwrap(),
                    text: parts.next().unwrap_or("").to_owned(),
                }
            })
            .collect()
    }

    /// The lines the agent read, in order.
    fn received(&self) -> Vec<String> {
        self.notes()
            .into_iter()
            .filter(|n| n.kind == "recv")
            .map(|n| n.text)
            .collect()
    }

    /// Waits until the agent has read `count` lines; returns them.
    fn wait_received(&self, count: usize) -> Vec<String> {
        let mut lines = Vec::new();
        settle(&format!("{} to read {count} lines", self.name), || {
            lines = self.received();
            lines.len() >= count
        });
        lines
    }

    /// The turns of the agent's `--turn-log`, complete lines only.
    fn turns(&self) -> Vec<Value> {
        complete_lines(&self.turns)
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// Waits until the turn log holds `count` turns; returns them.
    fn wait_turns(&self, count: usize) -> Vec<Value> {
        let mut turns = Vec::new();
        settle(&format!("{} to complete {count} turns", self.name), || {
            turns = self.turns();
            turns.len() >= count
        });
        turns
    }

    fn turn_id(&self, seq: u32) -> String {
        format!("{}:{seq}", self.id)
    }
}

/// The complete (newline-terminated) lines of a file; none when it does not exist yet.
fn complete_lines(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// One JSON value per non-empty line.
fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}")))
        .collect()
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("no string {key:?} in {value}"))
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn strings(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// The route `id` in `route list`.
fn route_in_list(fx: &Fixture, id: &str) -> Value {
    let list = fx.ok_json(&["route", "list"]);
    list["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["route"] == id)
        .unwrap_or_else(|| panic!("no route {id} in {list}"))
        .clone()
}

// ---------------------------------------------------------------------------------------------
// A follower of the event stream
// ---------------------------------------------------------------------------------------------

/// `clippy-ctl events --follow …` in the background, its stdout collected line by line as it
/// comes; killed on drop.
struct Follower {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

impl Follower {
    fn start(fx: &Fixture, args: &[&str]) -> Follower {
        let mut all = vec!["--json", "events", "--follow"];
        all.extend_from_slice(args);
        let mut child = fx
            .ctl_command(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let reader = {
            let stdout = child.stdout.take().unwrap();
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    lines
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(line);
                }
            })
        };
        Follower {
            child,
            lines,
            reader: Some(reader),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn events(&self) -> Vec<Value> {
        let lines = self
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        jsonl(&lines.join("\n"))
    }

    /// Waits until an event printed satisfies `ok`; returns everything printed so far.
    fn wait_for(&self, what: &str, mut ok: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut events = Vec::new();
        settle(what, || {
            events = self.events();
            events.iter().any(&mut ok)
        });
        events
    }

    fn stop(self) -> Vec<Value> {
        self.finish().1
    }

    /// Kills it if it still runs; its exit code (`None`: killed by a signal) and what it printed.
    fn finish(mut self) -> (Option<i32>, Vec<Value>) {
        let status = match self.child.try_wait().unwrap() {
            Some(status) => status,
            None => {
                let _ = self.child.kill();
                self.child.wait().unwrap()
            }
        };
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (status.code(), self.events())
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            Signal::SIGCONT,
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------------------------

fn ts_ms(event: &Value) -> u64 {
    parse_iso8601_ms(str_of(event, "ts"))
        .unwrap_or_else(|| panic!("ts is not ISO-8601 UTC with milliseconds: {event}"))
}

// ---------------------------------------------------------------------------------------------
// a. Every turn, once, in order
// ---------------------------------------------------------------------------------------------

#[test]
fn a_route_hands_every_turn_of_its_source_to_its_target_once_and_in_order() {
    let fx = Fixture::new();
    let mut alpha = fx.agent("alpha", &[]);
    let beta = fx.agent("beta", &[]);

    let added = fx.ok_json(&["route", "add", "alpha", "beta"]);
    let route = &added["route"];
    assert_eq!(route["route"], "r1", "{added}");
    assert_eq!(route["from"], alpha.id.as_str(), "{added}");
    assert_eq!(route["to"], beta.id.as_str(), "{added}");
    assert_eq!(route["kind"], "handoff", "{added}");
    assert_eq!(route["template"], "{turn}", "{added}");
    assert_eq!(route["format"], "text", "{added}");
    assert_eq!(route["interrupt"], false, "{added}");
    assert_eq!(route["max_hops"], 16, "{added}");
    assert_eq!(route["gated"], false, "{added}");
    assert_eq!(route["submit"], true, "{added}");
    assert_eq!(route["paused"], false, "{added}");
    assert!(route["paused_reason"].is_null(), "{added}");
    assert_eq!(route["hops"], 0, "{added}");
    assert_eq!(route["handoffs"], 0, "{added}");

    // One at a time, each typed once the previous one has reached beta: the latency measured
    // is the handoff's own, not time spent queued behind beta's previous turn.
    let want: Vec<String> = (1..=5).map(|i| format!("alpha heard: [msg{i}]")).collect();
    for i in 1..=5 {
        alpha.say(&format!("msg{i}"));
        alpha
            .term
            .expect(format!("alpha heard: [msg{i}]\r\nalpha> "));
        beta.wait_received(i);
        let done = beta.turn_id(u32::try_from(i).unwrap());
        fx.wait_state("beta", "idle after the handoff's turn", |s| {
            s.mode == Mode::Idle && s.last_turn_id.as_deref() == Some(done.as_str())
        });
    }
    let turns = beta.wait_turns(5);
    fx.wait_state("beta", "idle after the fifth handoff", |s| {
        s.mode == Mode::Idle && s.inbox == 0
    });

    assert_eq!(
        beta.received(),
        want,
        "beta read each handoff once, in order"
    );
    let inputs: Vec<&str> = turns.iter().map(|t| str_of(t, "input")).collect();
    assert_eq!(inputs, want, "beta's turns");
    for (turn, line) in turns.iter().zip(&want) {
        assert_eq!(str_of(turn, "text"), format!("beta heard: [{line}]"));
    }
    let listed = route_in_list(&fx, "r1");
    assert_eq!(listed["handoffs"], 5, "{listed}");
    assert_eq!(listed["paused"], false, "{listed}");

    let events = fx.events(&[]);
    let handoffs = of_type(&events, "route.handoff");
    let handed: Vec<&str> = handoffs.iter().map(|e| str_of(e, "turn_id")).collect();
    let alpha_turns: Vec<String> = (1..=5).map(|seq| alpha.turn_id(seq)).collect();
    assert_eq!(handed, alpha_turns, "one route.handoff per turn of alpha");
    assert!(
        of_type(&events, "route.queued").is_empty(),
        "beta was idle for each: nothing waited"
    );
    for event in &handoffs {
        assert_eq!(event["route"], "r1", "{event}");
        assert_eq!(event["to"], beta.id.as_str(), "{event}");
    }

    // Latency: the events' clock (ms), and the agents' CLOCK_MONOTONIC (ns).
    let mut by_events = Vec::new();
    for turn_id in &alpha_turns {
        let completed = events
            .iter()
            .find(|e| e["type"] == "turn.completed" && e["turn_id"] == turn_id.as_str())
            .unwrap_or_else(|| panic!("no turn.completed for {turn_id}"));
        let handoff = handoffs
            .iter()
            .find(|e| e["turn_id"] == turn_id.as_str())
            .unwrap();
        assert!(completed["id"].as_u64() < handoff["id"].as_u64());
        by_events.push(Duration::from_millis(
            ts_ms(handoff).saturating_sub(ts_ms(completed)),
        ));
    }
    let replies = alpha.notes();
    let reads = beta.notes();
    let mut by_agents = Vec::new();
    for line in &want {
        let replied = replies
            .iter()
            .find(|n| n.kind == "reply" && &n.text == line)
            .unwrap();
        let read = reads
            .iter()
            .find(|n| n.kind == "recv" && &n.text == line)
            .unwrap();
        by_agents.push(Duration::from_nanos(read.ns.saturating_sub(replied.ns)));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (ev50, evmax) = p50_max(&by_events);
    let (ev50, evmax) = (ms(ev50), ms(evmax));
    let (ag50, agmax) = p50_max(&by_agents);
    let (ag50, agmax) = (ms(ag50), ms(agmax));
    eprintln!(
        "handoff latency over {} handoffs: turn.completed -> route.handoff ts p50 {ev50:.0} ms, \
         max {evmax:.0} ms; alpha's reply printed -> beta read the line (CLOCK_MONOTONIC) \
         p50 {ag50:.1} ms, max {agmax:.1} ms",
        want.len()
    );
}

// ---------------------------------------------------------------------------------------------
// b. A busy target: the handoff waits for its prompt
// ---------------------------------------------------------------------------------------------

#[test]
fn a_handoff_to_a_busy_target_waits_in_its_inbox_for_its_next_prompt() {
    let fx = Fixture::new();
    let gate = fx.dir.join("gate");
    let mut alpha = fx.agent("alpha", &[]);
    let mut beta = fx.agent("beta", &["slow", "--gate", gate.to_str().unwrap()]);
    fx.ok_json(&["route", "add", "alpha", "beta"]);

    // beta works on a long task until the test opens the gate.
    beta.say("long task");
    beta.wait_received(1);
    fx.wait_state("beta", "busy with the long task", |s| s.mode == Mode::Busy);
    alpha.say("ping");
    alpha.term.expect("alpha heard: [ping]\r\nalpha> ");
    let text = "alpha heard: [ping]";

    let queued = fx.wait_event("route.queued", |e| e["type"] == "route.queued");
    assert_eq!(queued["route"], "r1", "{queued}");
    assert_eq!(queued["to"], beta.id.as_str(), "{queued}");
    assert_eq!(queued["turn_id"], alpha.turn_id(1).as_str(), "{queued}");
    assert_eq!(queued["byte_length"], text.len(), "{queued}");
    let inbox = fx.ok_json(&["inbox", "beta"]);
    assert_eq!(inbox["session"], beta.id.as_str(), "{inbox}");
    let items = inbox["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{inbox}");
    let item = &items[0];
    assert_eq!(item["handoff"], queued["handoff"], "{inbox}");
    assert_eq!(item["route"], "r1", "{inbox}");
    assert_eq!(item["turn_id"], alpha.turn_id(1).as_str(), "{inbox}");
    assert_eq!(item["byte_length"], text.len(), "{inbox}");
    assert_eq!(item["state"], "queued", "{inbox}");
    assert!(item["created"].as_u64().is_some(), "{inbox}");
    let status = fx.ok_json(&["status", "beta"]);
    assert_eq!(status["session_status"]["inbox"], 1, "{status}");
    assert_eq!(status["session_status"]["mode"], "busy", "{status}");
    // Nothing was typed into beta while it works.
    assert_eq!(beta.received(), ["long task"]);
    assert!(of_type(&fx.events(&[]), "route.handoff").is_empty());

    std::fs::write(&gate, b"").unwrap();
    beta.wait_received(2);
    let turns = beta.wait_turns(2);
    fx.wait_state("beta", "idle, inbox empty", |s| {
        s.mode == Mode::Idle && s.inbox == 0
    });
    assert_eq!(beta.received(), ["long task", text]);
    assert_eq!(turns[0]["input"], "long task");
    assert_eq!(turns[0]["text"], "beta slept: [long task]");
    assert_eq!(turns[1]["input"], text);
    assert_eq!(turns[1]["text"], format!("beta slept: [{text}]"));
    // On beta's screen the handoff comes right after the prompt that ended the slow reply
    // (the first prompt was matched when beta started).
    beta.term.expect(format!(
        "long task\r\nbeta slept: [long task]\r\nbeta> {text}\r\nbeta slept: [{text}]\r\nbeta> "
    ));

    let events = fx.events(&[]);
    let id_of = |kind: &str, turn: &str| {
        events
            .iter()
            .find(|e| e["type"] == kind && e["turn_id"] == turn)
            .unwrap_or_else(|| panic!("no {kind} for {turn}"))["id"]
            .as_u64()
            .unwrap()
    };
    let handed = id_of("route.handoff", &alpha.turn_id(1));
    assert!(id_of("route.queued", &alpha.turn_id(1)) < handed);
    assert!(
        id_of("turn.completed", &beta.turn_id(1)) < handed,
        "handed over only after beta's slow turn completed"
    );
    assert!(
        fx.ok_json(&["inbox", "beta"])["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// c. --interrupt
// ---------------------------------------------------------------------------------------------

#[test]
fn an_interrupting_route_stops_a_busy_target_with_ctrl_c_then_hands_over() {
    let fx = Fixture::new();
    let gate = fx.dir.join("gate");
    let mut alpha = fx.agent("alpha", &[]);
    let mut beta = fx.agent("beta", &["slow", "--gate", gate.to_str().unwrap()]);
    let added = fx.ok_json(&["route", "add", "alpha", "beta", "--interrupt"]);
    assert_eq!(added["route"]["interrupt"], true, "{added}");

    beta.say("forever");
    beta.wait_received(1);
    fx.wait_state("beta", "busy", |s| s.mode == Mode::Busy);
    alpha.say("urgent");
    let text = "alpha heard: [urgent]";
    beta.term.expect("beta interrupted\r\nbeta> ");
    beta.term.expect(format!("{text}\r\n"));
    beta.wait_received(2);
    // The handoff is read after the interrupt was handled.
    let notes = beta.notes();
    let kinds: Vec<(&str, &str)> = notes
        .iter()
        .map(|n| (n.kind.as_str(), n.text.as_str()))
        .collect();
    assert_eq!(kinds, [("recv", "forever"), ("intr", ""), ("recv", text)]);

    std::fs::write(&gate, b"").unwrap();
    let turns = beta.wait_turns(2);
    assert_eq!(turns[0]["input"], "forever");
    assert_eq!(turns[0]["interrupted"], true, "{}", turns[0]);
    assert!(
        str_of(&turns[0], "text").contains("beta interrupted"),
        "{}",
        turns[0]
    );
    assert_eq!(turns[1]["input"], text);
    assert_eq!(turns[1]["text"], format!("beta slept: [{text}]"));
    assert_eq!(beta.received(), ["forever", text]);
    let events = fx.events(&["--type", "route"]);
    let kinds: Vec<&str> = events.iter().map(|e| str_of(e, "type")).collect();
    assert_eq!(kinds, ["route.added", "route.queued", "route.handoff"]);
}

// ---------------------------------------------------------------------------------------------
// d. Loop safety
// ---------------------------------------------------------------------------------------------

#[test]
fn a_ping_pong_stops_at_the_hop_limit_and_goes_on_after_a_human_and_a_resume() {
    let fx = Fixture::new();
    let mut alpha = fx.agent("alpha", &[]);
    let beta = fx.agent("beta", &[]);
    fx.ok_json(&["route", "add", "alpha", "beta", "--max-hops", "4"]);
    let back = fx.ok_json(&["route", "add", "beta", "alpha", "--max-hops", "4"]);
    assert_eq!(back["route"]["route"], "r2", "{back}");
    assert_eq!(back["route"]["max_hops"], 4, "{back}");

    alpha.say("hi");
    let stalled = fx.wait_event("route.stalled", |e| e["type"] == "route.stalled");
    fx.wait_state("alpha", "idle", |s| s.mode == Mode::Idle);
    fx.wait_state("beta", "idle", |s| s.mode == Mode::Idle && s.inbox == 0);
    // The hop count of each route since the human's line: 1, 2, 3, 4. (A count that starts
    // again after the first handoff means the keystroke reached the broker after the turn it
    // caused: the route then allows one handoff too many, and the other route stalls first.)
    let events = fx.events(&[]);
    let hops = |route: &str| -> Vec<(String, u64)> {
        of_type(&events, "route.handoff")
            .iter()
            .filter(|e| e["route"] == route)
            .map(|e| (str_of(e, "turn_id").to_owned(), e["hops"].as_u64().unwrap()))
            .collect()
    };
    let want = |agent: &Agent| -> Vec<(String, u64)> {
        (1..=4).map(|n| (agent.turn_id(n), u64::from(n))).collect()
    };
    assert_eq!(hops("r1"), want(&alpha), "r1's handoffs and hop counts");
    assert_eq!(hops("r2"), want(&beta), "r2's handoffs and hop counts");
    assert_eq!(stalled["route"], "r1", "{stalled}");
    assert_eq!(stalled["reason"], "hop_limit", "{stalled}");
    assert_eq!(stalled["hops"], 4, "{stalled}");
    assert_eq!(stalled["session"], alpha.id.as_str(), "{stalled}");
    assert_eq!(stalled["turn_id"], alpha.turn_id(5).as_str(), "{stalled}");
    assert!(stalled["message"].as_str().is_some(), "{stalled}");

    // alpha: the human's line and 4 of beta's; beta: 4 of alpha's; alpha's 5th turn stayed.
    let alpha_read = alpha.received();
    let beta_read = beta.received();
    assert_eq!(alpha_read.len(), 5, "{alpha_read:?}");
    assert_eq!(beta_read.len(), 4, "{beta_read:?}");
    assert_eq!(beta_read[0], "alpha heard: [hi]");
    assert_eq!(alpha_read[1], "beta heard: [alpha heard: [hi]]");
    let r1 = route_in_list(&fx, "r1");
    assert_eq!(r1["paused"], true, "{r1}");
    assert_eq!(r1["paused_reason"], "hop_limit", "{r1}");
    assert_eq!(r1["handoffs"], 4, "{r1}");
    let r2 = route_in_list(&fx, "r2");
    assert_eq!(r2["paused"], false, "{r2}");
    assert_eq!(r2["handoffs"], 4, "{r2}");

    // Resume (hops from 0), then a person types into alpha: the loop goes on to the limit again.
    let resumed = fx.ok_json(&["route", "resume", "r1"]);
    assert_eq!(resumed["route"]["paused"], false, "{resumed}");
    assert_eq!(resumed["route"]["hops"], 0, "{resumed}");
    assert!(resumed["route"]["paused_reason"].is_null(), "{resumed}");
    alpha.say("again");
    let mut stalls = Vec::new();
    settle("a second route.stalled", || {
        stalls = fx.events(&["--type", "route.stalled"]);
        stalls.len() >= 2
    });
    // Which route stops first and after how many handoffs was checked above; here: the loop
    // went on from the new line, and stopped again at a hop limit.
    assert_eq!(stalls[1]["reason"], "hop_limit", "{}", stalls[1]);
    fx.wait_state("alpha", "idle", |s| s.mode == Mode::Idle && s.inbox == 0);
    fx.wait_state("beta", "idle", |s| s.mode == Mode::Idle && s.inbox == 0);
    let beta_read = beta.received();
    assert!(beta_read.len() >= 8, "{beta_read:?}");
    assert_eq!(beta_read[4], "alpha heard: [again]");
    let stopped = route_in_list(&fx, str_of(&stalls[1], "route"));
    assert_eq!(stopped["paused_reason"], "hop_limit", "{stopped}");
    let kinds: Vec<String> = fx
        .events(&["--type", "route"])
        .iter()
        .map(|e| str_of(e, "type").to_owned())
        .filter(|k| k != "route.queued" && k != "route.handoff")
        .collect();
    assert_eq!(
        kinds,
        [
            "route.added",
            "route.added",
            "route.stalled",
            "route.resumed",
            "route.stalled"
        ]
    );
}

#[test]
fn the_terminals_own_reports_do_not_reset_the_hop_count_and_a_key_does() {
    let fx = Fixture::new();
    let _alpha = fx.agent("alpha", &[]);
    let mut beta = fx.agent("beta", &[]);
    fx.ok_json(&["route", "add", "alpha", "beta"]);
    let hops = |fx: &Fixture| route_in_list(fx, "r1")["hops"].as_u64().unwrap();

    // A turn of alpha that nobody typed (the broker injects the line): one hop.
    fx.ok_json(&["send", "alpha", "one", "--enter"]);
    beta.wait_received(1);
    beta.wait_turns(1);
    fx.wait_state("beta", "idle after the handoff", |s| {
        s.mode == Mode::Idle && s.inbox == 0
    });
    assert_eq!(hops(&fx), 1);

    // beta's terminal reports things by itself: a cursor position, focus, device attributes,
    // a mouse click, a mode report. beta echoes them (`^[` for ESC); once the echo is in the
    // spool the broker knows of — reported with, or after, the input that caused it — any
    // keystroke counted for them would have reset the count.
    let typed_and_seen = |beta: &mut Agent, bytes: &[u8], echo: &str| {
        let from = fx.ok_json(&["status", "beta"])["session_status"]["resume_cursor"]
            .as_u64()
            .unwrap()
            .to_string();
        beta.term.send(bytes);
        let (code, stdout, stderr) =
            fx.ctl(&["wait-for", "beta", echo, "--literal", "--from", &from]);
        assert_eq!(code, 0, "wait-for {echo:?}: {stdout}\n{stderr}");
    };
    typed_and_seen(
        &mut beta,
        b"\x1b[12;1R\x1b[I\x1b[?64;1;2c\x1b[<0;10;5M\x1b[?2004;1$y\x1b[O",
        "^[[12;1R^[[I^[[?64;1;2c^[[<0;10;5M^[[?2004;1$y^[[O",
    );
    assert_eq!(hops(&fx), 1, "the terminal's reports are not a person");

    // A key is.
    typed_and_seen(&mut beta, b"k", "k");
    assert_eq!(hops(&fx), 0, "a key typed into beta starts the count again");
}

#[test]
fn agents_repeating_themselves_stall_the_route_on_the_third_identical_handoff() {
    let fx = Fixture::new();
    let mut alpha = fx.agent("alpha", &["same"]);
    let beta = fx.agent("beta", &["same"]);
    fx.ok_json(&["route", "add", "alpha", "beta"]);
    fx.ok_json(&["route", "add", "beta", "alpha"]);

    alpha.say("go");
    let stalled = fx.wait_event("route.stalled", |e| e["type"] == "route.stalled");
    fx.wait_state("beta", "idle", |s| s.mode == Mode::Idle && s.inbox == 0);
    fx.wait_state("alpha", "idle", |s| s.mode == Mode::Idle && s.inbox == 0);
    let first_beta_read = beta.received();

    // The mechanism: three equal hashes, three consecutive turns of alpha, the third kept.
    assert_eq!(stalled["route"], "r1", "{stalled}");
    assert_eq!(stalled["reason"], "repeated", "{stalled}");
    assert_eq!(stalled["session"], alpha.id.as_str(), "{stalled}");
    let hashes = strings(stalled["hashes"].as_array().unwrap());
    assert_eq!(hashes.len(), 3, "{stalled}");
    assert!(hashes.iter().all(|h| h == &hashes[0]), "{stalled}");
    assert!(
        hashes[0].len() >= 8 && hashes[0].bytes().all(|b| b.is_ascii_hexdigit()),
        "{stalled}"
    );
    let turn_ids = strings(stalled["turn_ids"].as_array().unwrap());
    let last: u32 = str_of(&stalled, "turn_id")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(last >= 3, "{stalled}");
    assert_eq!(
        turn_ids,
        [
            alpha.turn_id(last - 2),
            alpha.turn_id(last - 1),
            alpha.turn_id(last)
        ],
        "{stalled}"
    );
    let r1 = route_in_list(&fx, "r1");
    assert_eq!(r1["paused"], true, "{r1}");
    assert_eq!(r1["paused_reason"], "repeated", "{r1}");
    assert_eq!(r1["handoffs"], u64::from(last - 1), "{r1}");
    assert_eq!(
        first_beta_read.len(),
        last as usize - 1,
        "{first_beta_read:?}"
    );

    // Resumed and typed into: one more exchange, then beta's side repeats itself a third time.
    fx.ok_json(&["route", "resume", "r1"]);
    alpha.say("go on");
    let stalled_back = fx.wait_event("route.stalled on r2", |e| {
        e["type"] == "route.stalled" && e["route"] == "r2"
    });
    fx.wait_state("alpha", "idle", |s| s.mode == Mode::Idle && s.inbox == 0);
    fx.wait_state("beta", "idle", |s| s.mode == Mode::Idle && s.inbox == 0);
    assert_eq!(stalled_back["reason"], "repeated", "{stalled_back}");
    assert_eq!(beta.received().len(), first_beta_read.len() + 1);
    let r2 = route_in_list(&fx, "r2");
    assert_eq!(r2["paused_reason"], "repeated", "{r2}");

    // The content: what was handed over is the agents' answer, the same each time, so the
    // stall comes on alpha's third turn. (A text view that leaves out a line because it was on
    // screen before turns the repeated answer into an empty handoff, and the stall comes one
    // turn later, on three empty ones.)
    assert_eq!(
        first_beta_read,
        ["OK from alpha", "OK from alpha"],
        "beta should have read alpha's answer twice; alpha's turns: {:#?}",
        alpha.turns()
    );
    assert_eq!(
        turn_ids,
        [alpha.turn_id(1), alpha.turn_id(2), alpha.turn_id(3)]
    );
    assert_eq!(
        strings(stalled_back["turn_ids"].as_array().unwrap()),
        [beta.turn_id(1), beta.turn_id(2), beta.turn_id(3)]
    );
}

// ---------------------------------------------------------------------------------------------
// e. Approvals
// ---------------------------------------------------------------------------------------------

#[test]
fn a_gated_route_hands_over_what_is_approved_edited_text_instead_and_nothing_denied() {
    let fx = Fixture::new();
    let mut alpha = fx.agent("alpha", &[]);
    let beta = fx.agent("beta", &[]);
    let added = fx.ok_json(&["route", "add", "alpha", "beta", "--gated"]);
    assert_eq!(added["route"]["gated"], true, "{added}");
    let edit = fx.dir.join("edited.txt");
    std::fs::write(&edit, "edited by a person").unwrap();

    // Each line typed into alpha parks a handoff; returns its approval id.
    let mut park = |line: &str, seq: u32| -> String {
        alpha.say(line);
        let turn_id = alpha.turn_id(seq);
        let requested = fx.wait_event("approval.requested", |e| {
            e["type"] == "approval.requested" && e["turn_id"] == turn_id.as_str()
        });
        assert_eq!(requested["route"], "r1", "{requested}");
        assert_eq!(requested["to"], beta.id.as_str(), "{requested}");
        let approval = str_of(&requested, "approval").to_owned();
        let inbox = fx.ok_json(&["inbox", "beta"]);
        let items = inbox["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{inbox}");
        assert_eq!(items[0]["state"], "awaiting_approval", "{inbox}");
        assert_eq!(items[0]["approval"], approval.as_str(), "{inbox}");
        assert_eq!(items[0]["turn_id"], turn_id.as_str(), "{inbox}");
        approval
    };
    let resolved = |approval: &str| -> Value {
        fx.wait_event("approval.resolved", |e| {
            e["type"] == "approval.resolved" && e["approval"] == approval
        })
    };

    let a1 = park("one", 1);
    assert!(beta.received().is_empty(), "nothing before the approval");
    let out = fx.ok_json(&["approve", &a1]);
    assert_eq!(out["resolved"]["decision"], "approved", "{out}");
    assert_eq!(beta.wait_received(1), ["alpha heard: [one]"]);
    assert_eq!(resolved(&a1)["reason"], "approved");
    beta.wait_turns(1);

    let a2 = park("two", 2);
    let out = fx.ok_json(&["approve", &a2, "--edit", edit.to_str().unwrap()]);
    assert_eq!(out["resolved"]["edited"], true, "{out}");
    assert_eq!(
        beta.wait_received(2),
        ["alpha heard: [one]", "edited by a person"]
    );
    assert_eq!(resolved(&a2)["reason"], "approved_edited");
    beta.wait_turns(2);

    let a3 = park("three", 3);
    let out = fx.ok_json(&["deny", &a3]);
    assert_eq!(out["resolved"]["decision"], "denied", "{out}");
    assert_eq!(resolved(&a3)["reason"], "denied");
    assert!(
        fx.ok_json(&["inbox", "beta"])["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // The next approved one arrives right after the second: the denied one never did.
    let a4 = park("four", 4);
    fx.ok_json(&["approve", &a4]);
    beta.wait_turns(3);
    assert_eq!(
        beta.received(),
        [
            "alpha heard: [one]",
            "edited by a person",
            "alpha heard: [four]"
        ]
    );
    let (code, value) = fx.ctl_json(&["approve", &a3]);
    assert_eq!(code, 1, "{value}");
}

// ---------------------------------------------------------------------------------------------
// f. The event stream
// ---------------------------------------------------------------------------------------------

#[test]
fn the_event_stream_tells_the_whole_story_in_order_and_filters_and_replays() {
    let fx = Fixture::new();
    let started = now_ms();
    // `--since 0`: the history (empty or not) and then everything live, with no gap whenever the
    // subscription lands — so the follower sees the story from its first event.
    let all = Follower::start(&fx, &["--since", "0"]);
    let routes = Follower::start(&fx, &["--since", "0", "--type", "route"]);

    let mut alpha = fx.agent("alpha", &[]);
    let beta = fx.agent("beta", &[]);
    fx.ok_json(&["route", "add", "alpha", "beta"]);
    alpha.say("one");
    beta.wait_turns(1);
    fx.ok_json(&["route", "pause", "r1"]);
    fx.ok_json(&["route", "resume", "r1"]);
    fx.ok_json(&["route", "rm", "r1"]);

    // The story told here is of sessions, turns and routes: a session's mode changes
    // (`session.mode`, as many as its wrapper's reports make) are left out of every list.
    let story = |events: Vec<Value>| -> Vec<Value> {
        events
            .into_iter()
            .filter(|e| e["type"] != "session.mode")
            .collect()
    };
    let seen = story(all.wait_for("route.removed", |e| e["type"] == "route.removed"));
    let seen_routes = routes.wait_for("route.removed", |e| e["type"] == "route.removed");
    let history = story(fx.events(&[]));
    let kinds: Vec<(&str, Option<&str>)> = seen
        .iter()
        .map(|e| (str_of(e, "type"), e["session"].as_str()))
        .collect();
    let (a, b) = (Some(alpha.id.as_str()), Some(beta.id.as_str()));
    assert_eq!(
        kinds,
        [
            ("session.registered", a),
            ("session.registered", b),
            ("route.added", a),
            ("turn.completed", a),
            ("route.handoff", a),
            ("turn.completed", b),
            ("route.paused", a),
            ("route.resumed", a),
            ("route.removed", a),
        ],
        "{seen:#?}"
    );
    assert_eq!(seen, history, "the follower printed the history's events");
    let mut last_id = 0;
    let mut last_ts = 0;
    for event in &seen {
        let id = event["id"].as_u64().unwrap();
        assert!(id > last_id, "ids increase: {seen:#?}");
        last_id = id;
        let ts = ts_ms(event);
        assert!(ts >= last_ts, "timestamps do not go back: {seen:#?}");
        assert!(ts + 1000 >= started && ts <= now_ms() + 1000, "{event}");
        last_ts = ts;
    }
    assert_eq!(seen[0]["id"], 1);
    assert_eq!(seen[0]["name"], "alpha");
    assert_eq!(seen[3]["turn_id"], alpha.turn_id(1).as_str());
    assert_eq!(seen[4]["to"], beta.id.as_str());
    assert_eq!(seen[4]["hops"], 1);

    // --type route: every route.*, nothing else (live and from the history).
    let route_events: Vec<Value> = seen
        .iter()
        .filter(|e| str_of(e, "type").starts_with("route."))
        .cloned()
        .collect();
    assert_eq!(seen_routes, route_events);
    assert_eq!(fx.events(&["--type", "route"]), route_events);
    let turns = story(fx.events(&["--type", "turn.completed", "--type", "session"]));
    assert_eq!(turns.len(), 4, "{turns:#?}");

    // --since N: only what came after N.
    let n = seen[3]["id"].as_u64().unwrap();
    let later = story(fx.events(&["--since", &n.to_string()]));
    assert_eq!(later, seen[4..]);
    let replayed = Follower::start(&fx, &["--since", &n.to_string()]);
    let replayed = story(replayed.wait_for("the replay", |e| e["type"] == "route.removed"));
    assert_eq!(replayed, seen[4..]);

    // A follower started later without --since sees what happens next, not the history.
    let live = Follower::start(&fx, &[]);
    let mut count = 0;
    settle("the late follower to see a new turn", || {
        // The subscription may land after any one turn: keep producing turns until it shows.
        count += 1;
        alpha.say(&format!("more{count}"));
        alpha
            .term
            .expect(format!("alpha heard: [more{count}]\r\nalpha> "));
        live.events().iter().any(|e| e["type"] == "turn.completed")
    });
    let live = live.stop();
    assert!(
        live.iter().all(|e| e["id"].as_u64().unwrap() > last_id),
        "{live:#?}"
    );
    drop(all.stop());
    drop(routes.stop());
}

// ---------------------------------------------------------------------------------------------
// g. A subscriber that never reads
// ---------------------------------------------------------------------------------------------

#[test]
fn a_subscriber_that_never_reads_is_dropped_and_never_slows_routing() {
    let fx = Fixture::new();
    let mut alpha = fx.agent("alpha", &[]);
    let beta = fx.agent("beta", &[]);
    fx.ok_json(&["route", "add", "alpha", "beta"]);

    // Two subscribers that stop reading: a raw connection, and a follower stopped by SIGSTOP.
    let mut stuck = fx.client();
    broker::subscribe_all(&mut stuck);
    let stopped = Follower::start(&fx, &[]);
    // Stop it once it has shown it is subscribed (it prints a turn of alpha's).
    let mut rounds = 0;
    settle("the follower to print an event", || {
        rounds += 1;
        alpha.say(&format!("warm{rounds}"));
        beta.wait_received(rounds);
        !stopped.events().is_empty()
    });
    support::signal_pid(stopped.pid(), Signal::SIGSTOP);
    settle("the follower stopped", || {
        support::process_state(stopped.pid()) == Some('T')
    });

    // A flood of events (each capture is a relay.captured) with handoffs in between: each
    // handoff still arrives (how fast is printed, not asserted).
    let mut flood = fx.client();
    let mut worst = Duration::ZERO;
    let mut captures = 0;
    let mut handed = rounds;
    let started = Instant::now();
    let lagged = |fx: &Fixture| fx.events(&["--type", "subscriber.lagged"]).len();
    while lagged(&fx) < 2 {
        assert!(
            captures < 40_000,
            "no subscriber.lagged after {captures} events"
        );
        for _ in 0..250 {
            match flood
                .request(|id| Message::Capture {
                    id,
                    session: "alpha".into(),
                })
                .unwrap()
            {
                Message::Captured { .. } => captures += 1,
                other => panic!("{other:?}"),
            }
        }
        handed += 1;
        let sent = Instant::now();
        alpha.say(&format!("during{handed}"));
        beta.wait_received(handed);
        worst = worst.max(sent.elapsed());
    }
    eprintln!(
        "{captures} relay.captured events and {} handoffs in {:?} with two stuck subscribers; \
         slowest line typed into alpha -> read by beta: {worst:?}",
        handed - rounds,
        started.elapsed()
    );
    assert_eq!(
        beta.received().last().map(String::as_str),
        Some(format!("alpha heard: [during{handed}]").as_str())
    );
    let lagged = fx.events(&["--type", "subscriber.lagged"]);
    assert_eq!(lagged.len(), 2, "{lagged:#?}");
    assert!(lagged[0]["message"].as_str().is_some(), "{lagged:#?}");

    // The stopped follower, resumed, reads what was queued for it and ends: the broker closed
    // its connection.
    support::signal_pid(stopped.pid(), Signal::SIGCONT);
    let pid = stopped.pid();
    settle("the resumed follower to end", || {
        support::process_state(pid).is_none_or(|s| s == 'Z')
    });
    let (code, printed) = stopped.finish();
    let kinds: Vec<&str> = printed
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("(not an event)"))
        .collect();
    eprintln!(
        "the stopped follower, resumed, printed {} lines and exited with {code:?}; its last \
         two: {:?}",
        printed.len(),
        &printed[printed.len().saturating_sub(2)..]
    );
    let lagged_at = kinds
        .iter()
        .rposition(|k| *k == "subscriber.lagged")
        .unwrap_or_else(|| panic!("the follower never printed subscriber.lagged: {kinds:?}"));
    assert!(
        printed[lagged_at + 1..]
            .iter()
            .all(|e| e.get("id").is_none()),
        "no event after its subscriber.lagged"
    );
    assert_ne!(
        code,
        Some(0),
        "a dropped follower does not end as if all went well"
    );
    // The raw subscriber's connection was closed too: reading it ends after what was queued.
    stuck.set_read_timeout(Some(support::TIMEOUT)).unwrap();
    let mut received = 0;
    let end = loop {
        match stuck.recv() {
            Ok(Message::Event { event, .. }) => {
                received += 1;
                if event.kind == "subscriber.lagged" {
                    break Some(event);
                }
            }
            Ok(other) => panic!("{other:?}"),
            Err(_) => break None,
        }
    };
    eprintln!("the raw subscriber read {received} events after being dropped");
    let end = end.expect("the raw subscriber's last event is subscriber.lagged");
    assert!(end.message.is_some(), "{end:?}");
    // And then the connection is closed.
    assert!(
        stuck.recv().is_err(),
        "the dropped subscriber's connection is closed"
    );
}

/// Captures alpha's latest turn until the broker's newest event id is at least `until`; returns
/// that id (each capture is one `relay.captured` event).
fn flood_events(fx: &Fixture, until: u64) -> u64 {
    let mut client = fx.client();
    loop {
        let newest = match client
            .request(|id| Message::ListEvents {
                id,
                since: Some(until.saturating_sub(1)),
                types: Vec::new(),
            })
            .unwrap()
        {
            Message::Events { events, .. } => events.last().map_or(0, |e| e.id),
            other => panic!("{other:?}"),
        };
        if newest >= until {
            return newest;
        }
        for _ in 0..250 {
            match client
                .request(|id| Message::Capture {
                    id,
                    session: "alpha".into(),
                })
                .unwrap()
            {
                Message::Captured { .. } => {}
                other => panic!("{other:?}"),
            }
        }
    }
}

#[test]
fn a_late_follower_catches_up_on_thousands_of_events_and_is_told_what_the_history_lost() {
    let fx = Fixture::new();
    let mut alpha = fx.agent("alpha", &[]);
    alpha.say("one");
    alpha.wait_turns(1);
    // The turn log is written before the turn goes to the broker: the captures need it there.
    let first = alpha.turn_id(1);
    fx.wait_event("alpha's turn at the broker", |e| {
        e["type"] == "turn.completed" && e["turn_id"] == first.as_str()
    });

    // 3000 events, all kept (the history holds 4096): --since 0 gets every one, in order,
    // however fast they come — the replay is fed as the follower reads, not dumped at once.
    let newest = flood_events(&fx, 3000);
    let follower = Follower::start(&fx, &["--since", "0"]);
    let seen = follower.wait_for("the follower to reach the newest event", |e| {
        e["id"].as_u64() >= Some(newest)
    });
    let ids: Vec<u64> = seen.iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert_eq!(ids[..], (1..=ids.len() as u64).collect::<Vec<_>>()[..]);
    assert!(of_type(&seen, "subscriber.lagged").is_empty());
    // And it goes on live.
    alpha.say("two");
    let seen = follower.wait_for("the follower to see the live turn", |e| {
        e["type"] == "turn.completed" && e["turn_id"] == alpha.turn_id(2).as_str()
    });
    assert!(of_type(&seen, "subscriber.lagged").is_empty());
    assert!(of_type(&seen, "events.missed").is_empty());
    drop(follower.stop());

    // Past the history's bound, --since 0 starts with what was lost.
    let newest = flood_events(&fx, 5000);
    let late = Follower::start(&fx, &["--since", "0"]);
    let seen = late.wait_for("the late follower to reach the newest event", |e| {
        e["id"].as_u64() >= Some(newest)
    });
    let notice = &seen[0];
    assert_eq!(notice["type"], "events.missed", "{notice}");
    assert_eq!(notice["id"], 0, "{notice}");
    let first = seen[1]["id"].as_u64().unwrap();
    assert_eq!(notice["missed"].as_u64(), Some(first - 1), "{notice}");
    assert!(
        str_of(notice, "message").contains("no longer kept"),
        "{notice}"
    );
    let ids: Vec<u64> = seen[1..]
        .iter()
        .map(|e| e["id"].as_u64().unwrap())
        .collect();
    assert_eq!(
        ids,
        (first..first + ids.len() as u64).collect::<Vec<_>>(),
        "no gap after the notice"
    );
    assert!(ids.len() >= 4096, "the whole history: {}", ids.len());
    // A listing reaches back into the history store: nothing is missed there.
    let listed = fx.events(&["--since", "0", "--type", "turn"]);
    assert!(of_type(&listed, "events.missed").is_empty(), "{listed:?}");
    assert_eq!(listed[0]["type"], "turn.completed", "{}", listed[0]);
    assert_eq!(
        listed[0]["turn_id"],
        alpha.turn_id(1).as_str(),
        "{}",
        listed[0]
    );
    let ids: Vec<u64> = listed.iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first");
    drop(late.stop());
}

// ---------------------------------------------------------------------------------------------
// i. What a handoff costs
// ---------------------------------------------------------------------------------------------

/// A wrapper's side of the wire for one session, without a PTY or a program: it reports turns
/// and a prompt when asked to, and reads what the broker injects.
struct WireSession {
    client: clippy_proto::Client,
    session: String,
    progress: clippy_proto::Progress,
    seq: u64,
}

impl WireSession {
    /// Registers `session` (no bracketed paste: a handoff is its text and Enter in one write),
    /// idle at its first prompt.
    fn register(fx: &Fixture, session: &str) -> WireSession {
        let mut client =
            clippy_proto::Client::connect(&broker::socket(&fx.dir), clippy_proto::Role::Wrapper)
                .unwrap();
        client.set_read_timeout(Some(support::TIMEOUT)).unwrap();
        let info = clippy_proto::SessionInfo {
            session: session.into(),
            name: Some(session.into()),
            pid: std::process::id(),
            command: vec!["agent".into()],
            preset: "generic".into(),
            bracketed_paste: false,
            spool: None,
            cwd: None,
            no_history: false,
        };
        let reply = client.request(|id| Message::Register {
            id,
            session: info,
            progress: None,
            resends: false,
        });
        assert!(matches!(reply, Ok(Message::Done { .. })), "{reply:?}");
        let mut wire = WireSession {
            client,
            session: session.into(),
            progress: clippy_proto::Progress::default(),
            seq: 0,
        };
        wire.prompt();
        wire
    }

    /// Reports a prompt after one more submitted line: idle, ready for the next handoff.
    fn prompt(&mut self) {
        self.progress.mode = Mode::Idle;
        self.progress.prompts += 1;
        self.progress.prompt_inputs = self.progress.inputs;
        let (session, progress) = (self.session.clone(), self.progress.clone());
        let reply = self.client.request(|id| Message::Progress {
            id,
            session,
            progress,
        });
        assert!(matches!(reply, Ok(Message::Done { .. })), "{reply:?}");
    }

    /// Reports a completed turn whose text view is `text`, and waits for the broker to record it.
    fn turn(&mut self, text: &str) {
        self.send_turn(text);
        self.turn_recorded();
    }

    /// Reports a completed turn whose text view is `text`, without waiting for the reply.
    fn send_turn(&mut self, text: &str) {
        self.seq += 1;
        let turn = clippy_proto::TurnData {
            timestamp: 0,
            ..clippy_testkit::turn(self.seq, text.as_bytes(), text)
        };
        let session = self.session.clone();
        self.client
            .send(&Message::TurnCompleted {
                id: 7,
                session,
                turn,
            })
            .unwrap();
    }

    /// Reads the broker's answer to [`WireSession::send_turn`].
    fn turn_recorded(&mut self) {
        let reply = self.client.recv();
        assert!(
            matches!(reply, Ok(Message::TurnRecorded { id: 7, .. })),
            "{reply:?}"
        );
    }

    /// Waits for the next `inject`; its bytes.
    fn injected(&mut self) -> Vec<u8> {
        match self.client.recv().unwrap() {
            Message::Inject { data, .. } => data,
            other => panic!("expected an inject, got {other:?}"),
        }
    }

    /// The target typed the injected line and is back at its prompt.
    fn took_a_line(&mut self) {
        self.progress.inputs += 1;
        self.prompt();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// The latency a route adds, from the source's `turn_completed` to the `inject` reaching the
/// target's wrapper, against pasting the same kind of turn directly — over an open connection
/// (the broker's inject path alone) and with `clippy-ctl paste` (what a script relaying by hand
/// runs) — interleaved in one run on one broker. The wrappers are the wire alone, so PTYs, agents
/// and turn detection (the same whichever way a turn travels) are not in the figures. Asserts no
/// timing; run with `--nocapture` (and `--release`) for the figures.
#[test]
fn handoff_latency_against_a_direct_paste_of_the_same_turn() {
    const SAMPLES: usize = 300;
    let fx = Fixture::new();
    let mut alpha = WireSession::register(&fx, "alpha");
    let mut beta = WireSession::register(&fx, "beta");
    let mut client = fx.client();
    let mut route = |message: fn(u32, String) -> Message| {
        let reply = client.request(|id| message(id, "r1".into()));
        assert!(matches!(reply, Ok(Message::Route { .. })), "{reply:?}");
    };
    fx.ok_json(&["route", "add", "alpha", "beta", "--max-hops", "1000000"]);
    let mut paster = fx.client();

    let (mut routed, mut pasted, mut by_ctl) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..SAMPLES {
        // A: the route hands the turn over.
        route(|id, route| Message::RouteResume { id, route });
        let text = format!("reply {i} from alpha");
        let started = Instant::now();
        alpha.send_turn(&text);
        let data = beta.injected();
        routed.push(started.elapsed());
        alpha.turn_recorded();
        assert_eq!(data, format!("{text}\r").into_bytes());
        beta.took_a_line();
        route(|id, route| Message::RoutePause { id, route });

        // B: the same kind of turn, captured, then pasted over an open connection.
        let text = format!("pasted {i} from alpha");
        alpha.turn(&text);
        let reply = paster.request(|id| Message::Capture {
            id,
            session: "alpha".into(),
        });
        assert!(matches!(reply, Ok(Message::Captured { .. })), "{reply:?}");
        let started = Instant::now();
        paster
            .send(&Message::Paste {
                id: 9,
                session: "beta".into(),
                format: clippy_proto::Format::Text,
            })
            .unwrap();
        let data = beta.injected();
        pasted.push(started.elapsed());
        assert_eq!(data, text.as_bytes());
        assert!(matches!(paster.recv(), Ok(Message::Done { id: 9 })));

        // C: `clippy-ctl paste` of the turn captured for B.
        let mut ctl = fx
            .ctl_command(&["paste", "beta"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let data = beta.injected();
        by_ctl.push(started.elapsed());
        assert_eq!(data, text.as_bytes());
        assert!(ctl.wait().unwrap().success());
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut lines = Vec::new();
    for (label, samples) in [
        ("A route: turn_completed -> inject", &mut routed),
        (
            "B paste on an open connection: paste -> inject",
            &mut pasted,
        ),
        ("C clippy-ctl paste: spawn -> inject", &mut by_ctl),
    ] {
        samples.sort_unstable();
        lines.push(format!(
            "{label}: p50 {:.0} us, p99 {:.0} us, max {:.0} us",
            us(percentile(samples, 0.5)),
            us(percentile(samples, 0.99)),
            us(percentile(samples, 1.0)),
        ));
    }
    eprintln!(
        "handoff latency, {SAMPLES} samples each, interleaved:\n  {}\n  route minus direct \
         paste: p50 {:+.0} us, p99 {:+.0} us",
        lines.join("\n  "),
        us(percentile(&routed, 0.5)) - us(percentile(&pasted, 0.5)),
        us(percentile(&routed, 0.99)) - us(percentile(&pasted, 0.99)),
    );
}

// ---------------------------------------------------------------------------------------------
// h. Bad input
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_route_commands_are_refused_clearly() {
    let fx = Fixture::new();
    let _alpha = fx.agent("alpha", &[]);
    let _beta = fx.agent("beta", &[]);
    // Every check runs; the differences are reported together at the end.
    let mut problems: Vec<String> = Vec::new();
    let mut check = |what: &str, ok: bool, value: &Value, code: i32| {
        if !ok {
            problems.push(format!("{what}: exit {code}, {value}"));
        }
    };
    let reason = |value: &Value| value["error"]["reason"].as_str().unwrap_or("").to_owned();
    let message = |value: &Value| value["error"]["message"].as_str().unwrap_or("").to_owned();

    for args in [
        ["route", "add", "nosuch", "beta"],
        ["route", "add", "alpha", "nosuch"],
    ] {
        let (code, value) = fx.ctl_json(&args);
        check(
            &format!("{args:?}: exit 1, session_not_found"),
            code == 1 && reason(&value) == "session_not_found",
            &value,
            code,
        );
    }

    let (code, value) = fx.ctl_json(&["route", "add", "alpha", "alpha"]);
    check(
        "route add alpha alpha: refused with a message naming the loop",
        code != 0 && message(&value).contains("itself"),
        &value,
        code,
    );
    check(
        "route add alpha alpha: exit 1 or 4",
        code == 1 || code == 4,
        &value,
        code,
    );

    let (code, value) = fx.ctl_json(&[
        "route",
        "add",
        "alpha",
        "beta",
        "--template-text",
        "no placeholder here",
    ]);
    check(
        "a template without {turn}: refused, saying so",
        code != 0 && message(&value).contains("{turn}"),
        &value,
        code,
    );
    let template = fx.dir.join("template.txt");
    std::fs::write(&template, "{name} said something").unwrap();
    let missing = fx.dir.join("no-such-template.txt");
    for (file, what, named) in [
        (
            &template,
            "a template file without {turn}: refused",
            "{turn}",
        ),
        (
            &missing,
            "a template file that does not exist: refused, naming it",
            "no-such-template.txt",
        ),
    ] {
        let (code, value) = fx.ctl_json(&[
            "route",
            "add",
            "alpha",
            "beta",
            "--template",
            file.to_str().unwrap(),
        ]);
        check(
            what,
            code != 0 && message(&value).contains(named),
            &value,
            code,
        );
    }

    for verb in ["rm", "pause", "resume"] {
        let (code, value) = fx.ctl_json(&["route", verb, "r99"]);
        check(
            &format!("route {verb} r99: exit 1, route_not_found"),
            code == 1 && reason(&value) == "route_not_found",
            &value,
            code,
        );
    }
    for verb in ["approve", "deny"] {
        let (code, value) = fx.ctl_json(&[verb, "a99"]);
        check(
            &format!("{verb} a99: exit 1, approval_not_found"),
            code == 1 && reason(&value) == "approval_not_found",
            &value,
            code,
        );
    }
    let (code, value) = fx.ctl_json(&["route", "add", "alpha", "beta", "--max-hops", "0"]);
    check("--max-hops 0: usage error, exit 4", code == 4, &value, code);
    let (code, value) = fx.ctl_json(&["inbox", "nosuch"]);
    check(
        "inbox nosuch: exit 1, session_not_found",
        code == 1 && reason(&value) == "session_not_found",
        &value,
        code,
    );

    // Nothing was added by all that.
    let list = fx.ok_json(&["route", "list"]);
    check(
        "no route was added",
        list["routes"] == serde_json::json!([]),
        &list,
        0,
    );
    let routed = fx.events(&["--type", "route"]);
    check(
        "no route event",
        routed.is_empty(),
        &Value::Array(routed.clone()),
        0,
    );
    assert!(problems.is_empty(), "{problems:#?}");
}
