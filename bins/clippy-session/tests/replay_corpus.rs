//! Every recording of a real agent in `crates/clippy-turn/tests/corpus/`, replayed with
//! `clippy-session --replay FILE --preset P --json`, gives exactly the turns its sidecar lists:
//! their count, interrupted flags, the question absent from the text view, and every line of
//! the model's reply in it exactly once. Where the whole reply is known (an agent answering the
//! corpus mock, `tools/corpus/replies.json`), nothing else is in the text view either, apart
//! from the agent's own decorations and its tool and interrupt notices.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/clippy-turn/tests/corpus")
}

/// Folds whitespace so that indentation and wrapping do not matter when comparing text.
fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How often `needle` occurs in `haystack` as whole words (not inside a longer word: `line 1`
/// is not in `line 10`).
fn occurrences(haystack: &str, needle: &str) -> usize {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    haystack
        .match_indices(needle)
        .filter(|&(at, _)| {
            !word(haystack[..at].chars().next_back())
                && !word(haystack[at + needle.len()..].chars().next())
        })
        .count()
}

fn replies() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/corpus/replies.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read replies.json"))
        .expect("replies.json")
}

/// The lines the corpus mock sends for one question (its first matching rule), as an agent
/// would show them: markdown table pipes, fences and list numbers left to the agent.
fn model_lines(replies: &serde_json::Value, preset: &str, question: &str) -> Option<Vec<String>> {
    let question = question.to_lowercase();
    let rule = replies["rules"]
        .as_array()?
        .iter()
        .find(|rule| rule["match"].as_str().is_some_and(|m| question.contains(m)))?;
    let field = |key: &str| rule[key].as_str().unwrap_or_default().to_owned();
    let numbered = |n: u64| field("template").replace("{n}", &n.to_string());
    let count = rule["lines"].as_u64().unwrap_or(0);
    let lines: Vec<String> = match rule["kind"].as_str().unwrap_or("text") {
        "long" => std::iter::once(field("intro"))
            .chain((1..=count).map(numbered))
            .chain(std::iter::once(field("outro")))
            .collect(),
        "slow" => (1..=count).map(numbered).collect(),
        "tool" if preset == "aider" => field("aider_reply").lines().map(str::to_owned).collect(),
        "tool" => vec![field("before"), field("after")],
        _ => field("reply").lines().map(str::to_owned).collect(),
    };
    Some(
        lines
            .iter()
            .map(|line| as_shown(line))
            .filter(|line| !line.is_empty())
            .collect(),
    )
}

/// A line folded for comparison, without what agents render their own way: table pipes and
/// rules, code fences, a list item's number.
fn as_shown(line: &str) -> String {
    if line.trim_start().starts_with("```") {
        return String::new();
    }
    let line = line.replace(['|', '│', '┃'], " ");
    let folded = fold(&line);
    if folded.chars().all(|c| c == '-' || c == ' ') {
        return String::new();
    }
    let numbered = folded
        .split_once(". ")
        .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()));
    numbered.map_or(folded.clone(), |(_, rest)| rest.to_owned())
}

/// The agents' own notices that may stand in a turn beside the model's reply (each a whole
/// line, after its bullet): tool calls, approvals and interrupt messages.
const AGENT_NOTICES: &[&str] = &[
    r"^Bash\(.*\)$",
    r"^Ran \d+ shell commands?$",
    r"^Done$",
    r"^Interrupted · What should Claude do instead\?$",
    r"^You approved codex to run .*$",
    r"^Ran .*$",
    r"^\(no output\)$",
    r"^Conversation interrupted - .*$",
    r"^✓ Shell .*$",
    r"^Request cancelled\.$",
    r"^\^C again to exit$",
    r"^Run shell command\? \(Y\)es/\(N\)o/\(D\)on't ask again \[Yes\]: y$",
    r"^Running .*$",
];

/// Characters an agent decorates a reply with: bullets, tree and box rules, list numbers.
fn is_decoration(word: &str) -> bool {
    word.chars().all(|c| {
        matches!(
            c,
            '●' | '•'
                | '✦'
                | '⏺'
                | '⎿'
                | '└'
                | '✔'
                | '✓'
                | '■'
                | 'ℹ'
                | '-'
                | '*'
                | '>'
                | '.'
        ) || ('\u{2500}'..='\u{259f}').contains(&c)
            || c.is_ascii_digit()
    }) && !word.starts_with('.')
}

/// The text view as compared with the model's reply: folded, table pipes gone, without the
/// agent's notices.
fn reply_view(text: &str) -> String {
    let notices: Vec<regex::Regex> = AGENT_NOTICES
        .iter()
        .map(|n| regex::Regex::new(n).expect("notice pattern"))
        .collect();
    let mut kept: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = as_shown(line);
        let bare = line
            .split_once(' ')
            .filter(|(head, _)| is_decoration(head))
            .map_or(line.as_str(), |(_, rest)| rest);
        if bare.starts_with("Run shell command?") {
            // Aider lists the commands it asks to run right above its question.
            while kept.last().is_some_and(|l| !l.is_empty()) {
                kept.pop();
            }
        }
        if !notices
            .iter()
            .any(|n| n.is_match(bare) || n.is_match(&line))
        {
            kept.push(line);
        }
    }
    fold(&kept.join(" "))
}

/// What `view` holds besides `reply` (each of its lines once): words that are not the agent's
/// decorations. A reply cut short may end in a line cut short.
fn besides_the_reply(view: &str, reply: &[String], cut_short: bool) -> Vec<String> {
    let mut rest = format!(" {view} ");
    for line in reply {
        if let Some(at) = rest.find(&format!(" {line} ")) {
            rest.replace_range(at..at + line.len() + 2, "  ");
        }
    }
    let mut words: Vec<String> = rest
        .split_whitespace()
        .filter(|w| !is_decoration(w))
        .map(str::to_owned)
        .collect();
    if cut_short {
        // The line being streamed when the user interrupted: a prefix of a reply line.
        let cut = words.join(" ");
        if reply.iter().any(|line| line.starts_with(&cut)) {
            words.clear();
        }
    }
    words
}

fn replay(cast: &Path, preset: &str) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_clippy-session"))
        .args([
            "--replay".as_ref(),
            cast.as_os_str(),
            "--preset".as_ref(),
            preset.as_ref(),
            "--json".as_ref(),
        ])
        .output()
        .expect("run clippy-session");
    assert!(
        out.status.success(),
        "{}: {}",
        cast.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8 output")
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect()
}

/// Replays `cast` and adds to `failures` where its turns differ from the sidecar `expected`.
fn check(name: &str, cast: &Path, expected: &serde_json::Value, failures: &mut Vec<String>) {
    let replies = replies();
    let preset = expected["preset"].as_str().expect("preset");
    let want = expected["turns"].as_array().expect("turns");
    let got = replay(cast, preset);
    if got.len() != want.len() {
        failures.push(format!(
            "{name}: {} turns, expected {}: {:?}",
            got.len(),
            want.len(),
            got.iter().map(|t| &t["input"]).collect::<Vec<_>>()
        ));
        return;
    }
    for (i, (got, want)) in got.iter().zip(want).enumerate() {
        let text = fold(got["text"].as_str().unwrap_or_default());
        let input = fold(want["input"].as_str().unwrap_or_default());
        for line in want["reply"].as_str().unwrap_or_default().lines() {
            let line = fold(line);
            let count = occurrences(&text, &line);
            if !line.is_empty() && count != 1 {
                failures.push(format!(
                    "{name} turn {}: reply line {line:?} {count} times in text {text:?}",
                    i + 1
                ));
            }
        }
        if !input.is_empty() && text.contains(&input) {
            failures.push(format!(
                "{name} turn {}: the typed input {input:?} is in the text {text:?}",
                i + 1
            ));
        }
        // Every line the mock sent (for all questions of the turn: Codex answers questions typed
        // ahead in one turn), once; nothing else but decorations and notices.
        let questions = want["input"].as_str().unwrap_or_default();
        if !questions.starts_with('/') {
            // Questions an agent sent as one message (`sent_as_one`: Claude Code's queue) got
            // one answer, to the whole message.
            let replies: Option<Vec<Vec<String>>> = if want["sent_as_one"] == true {
                model_lines(&replies, preset, questions).map(|reply| vec![reply])
            } else {
                questions
                    .lines()
                    .map(|q| model_lines(&replies, preset, q))
                    .collect()
            };
            if let Some(replies) = replies {
                let interrupted = want["interrupted"] == true;
                let shown = reply_view(got["text"].as_str().unwrap_or_default());
                let last = replies.len() - 1;
                for (n, line) in replies
                    .iter()
                    .enumerate()
                    .flat_map(|(n, r)| r.iter().map(move |l| (n, l)))
                {
                    // A reply the user cut short, by Ctrl+C or by asking the next question
                    // (Codex stops answering the first), may lack its last lines.
                    let may_lack = interrupted || n < last;
                    let count = occurrences(&shown, line);
                    if count > 1 || (count == 0 && !may_lack) {
                        failures.push(format!(
                            "{name} turn {}: the model's line {line:?} {count} times in {shown:?}",
                            i + 1
                        ));
                    }
                }
                let reply = replies.concat();
                let extra = besides_the_reply(&shown, &reply, interrupted || last > 0);
                if !extra.is_empty() {
                    failures.push(format!(
                        "{name} turn {}: besides the reply, the text holds {:?}",
                        i + 1,
                        extra.join(" ")
                    ));
                }
            }
        }
        if got["interrupted"] != want["interrupted"] {
            failures.push(format!(
                "{name} turn {}: interrupted is {}, expected {}",
                i + 1,
                got["interrupted"],
                want["interrupted"]
            ));
        }
        // A reply longer than the screen is whole in the text view, each line once.
        if want["reply"]
            .as_str()
            .unwrap_or_default()
            .contains("of 80 for the scrolling test")
        {
            let raw_text = got["text"].as_str().unwrap_or_default();
            for n in 1..=80 {
                let needle = format!("Numbered line {n} of 80 ");
                let count = raw_text.matches(&needle).count();
                if count != 1 {
                    failures.push(format!(
                        "{name} turn {}: {needle:?} appears {count} times",
                        i + 1
                    ));
                }
            }
        }
        if got["byte_length"].as_u64().unwrap_or(0) == 0 {
            failures.push(format!("{name} turn {}: empty content", i + 1));
        }
    }
}

#[test]
fn every_recording_gives_the_turns_its_sidecar_lists() {
    let mut sidecars: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("corpus directory")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    sidecars.sort();
    assert!(sidecars.len() >= 5, "the corpus is missing: {sidecars:?}");
    let mut failures = Vec::new();
    for sidecar in &sidecars {
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(sidecar).expect("read sidecar"))
                .expect("sidecar JSON");
        let name = sidecar
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        check(
            &name,
            &sidecar.with_extension("cast"),
            &expected,
            &mut failures,
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} recordings disagree:\n{}",
        failures.len(),
        sidecars.len(),
        failures.join("\n")
    );
}

/// Removes every window title (OSC 0/2) after the first from an asciicast's output events.
fn without_titles_after_the_first(cast: &str) -> String {
    let mut seen = false;
    let mut out = String::new();
    for (n, line) in cast.lines().enumerate() {
        let Ok(serde_json::Value::Array(mut event)) = serde_json::from_str(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        if n > 0 && event.get(1).and_then(|k| k.as_str()) == Some("o") {
            let data = event[2].as_str().unwrap_or_default();
            let mut kept = String::new();
            let mut rest = data;
            while let Some(at) = rest.find("\x1b]0;").or_else(|| rest.find("\x1b]2;")) {
                kept.push_str(&rest[..at]);
                let end = rest[at..]
                    .find(['\x07', '\u{9c}'])
                    .map(|e| at + e + 1)
                    .or_else(|| rest[at..].find("\x1b\\").map(|e| at + e + 2))
                    .unwrap_or(rest.len());
                if !seen {
                    kept.push_str(&rest[at..end]);
                    seen = true;
                }
                rest = &rest[end..];
            }
            kept.push_str(rest);
            event[2] = serde_json::Value::String(kept);
        }
        out.push_str(&serde_json::Value::Array(event).to_string());
        out.push('\n');
    }
    out
}

#[test]
fn claude_codes_turns_are_found_without_its_status_titles() {
    // Claude Code 2.1.332 sets no status title when it runs under tmux ($TMUX set): only its
    // start-up one. Its recordings, replayed without the titles after the first, give the same
    // turns (the idle footer ends them).
    let dir = std::env::temp_dir().join(format!("clippy-notitle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut failures = Vec::new();
    let mut checked = 0;
    for entry in std::fs::read_dir(corpus_dir()).expect("corpus directory") {
        let path = entry.expect("dir entry").path();
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.extension().is_none_or(|e| e != "json") || !name.starts_with("claude-") {
            continue;
        }
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read sidecar"))
                .expect("sidecar JSON");
        if expected["agent_version"] != "2.1.332" || name.contains("osc7501") {
            continue;
        }
        let cast = std::fs::read_to_string(path.with_extension("cast")).expect("read cast");
        let stripped = dir.join(format!("{name}.cast"));
        std::fs::write(&stripped, without_titles_after_the_first(&cast)).expect("write cast");
        check(
            &format!("{name} (no titles)"),
            &stripped,
            &expected,
            &mut failures,
        );
        checked += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        checked >= 5,
        "only {checked} Claude Code 2.1.332 recordings"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_bad_recording_or_pattern_exits_4_with_a_message() {
    let dir = std::env::temp_dir().join(format!("clippy-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.cast");
    std::fs::write(
        &bad,
        "{\"version\": 2, \"width\": 80, \"height\": 24}\n[0.5, \"o\"\n",
    )
    .expect("write");
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_clippy-session"))
            .args(args)
            .output()
            .expect("run")
    };

    let out = run(&["--replay".as_ref(), bad.as_os_str()]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 2"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = run(&["--replay".as_ref(), dir.join("missing.cast").as_os_str()]);
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));

    let good = corpus_dir().join("claude-basic.cast");
    let out = run(&[
        "--replay".as_ref(),
        good.as_os_str(),
        "--pattern".as_ref(),
        "(oops".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid prompt pattern"));

    let out = run(&[
        "--replay".as_ref(),
        good.as_os_str(),
        "--preset".as_ref(),
        "nope".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown preset"));

    let out = run(&["--bogus-flag".as_ref()]);
    assert_eq!(out.status.code(), Some(4), "clap usage errors exit 4");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_readable_listing_shows_each_turn() {
    let out = Command::new(env!("CARGO_BIN_EXE_clippy-session"))
        .args([
            "--replay".as_ref(),
            corpus_dir().join("claude-basic.cast").as_os_str(),
            "--preset".as_ref(),
            "claude".as_ref(),
        ])
        .output()
        .expect("run");
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("── turn 1 (") && listing.contains("── turn 2 ("),
        "{listing}"
    );
    assert!(
        listing.contains("input: what is the capital of France"),
        "{listing}"
    );
}
