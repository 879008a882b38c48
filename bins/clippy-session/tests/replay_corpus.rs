//! Every recording of a real agent in `crates/clippy-turn/tests/corpus/`, replayed with
//! `clippy-session --replay FILE --preset P --json`, gives exactly the turns its sidecar lists:
//! their count, interrupted flags, the question absent from the text view, and every line of
//! the model's reply in it exactly once. Where the whole reply is known (an agent answering the
//! corpus mock, `tools/corpus/replies.json`), nothing else is in the text view either, apart
//! from the agent's own decorations and its tool and interrupt notices.
//!
//! Recordings made with the agent's hooks wired (`h` events, sidecar `"hooks": true`) give the
//! same turns from the agent's word alone (`--replay-hooks only`) as from the screen alone
//! (`--replay-hooks off`), and every turn then carries the agent's final message: exactly the
//! text the mock sent.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The corpus: `crates/clippy-turn/tests/corpus`, or `$CLIPPY_CORPUS_DIR` (to check new
/// recordings before they go there).
fn corpus_dir() -> PathBuf {
    std::env::var_os("CLIPPY_CORPUS_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/clippy-turn/tests/corpus"),
        PathBuf::from,
    )
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

/// The corpus mock's rule for `question`: the first whose `match` it contains.
fn reply_rule<'a>(replies: &'a serde_json::Value, question: &str) -> Option<&'a serde_json::Value> {
    let question = question.to_lowercase();
    replies["rules"]
        .as_array()?
        .iter()
        .find(|rule| rule["match"].as_str().is_some_and(|m| question.contains(m)))
}

/// The lines the corpus mock sends for one question (its first matching rule), as an agent
/// would show them: markdown table pipes, fences and list numbers left to the agent.
fn model_lines(replies: &serde_json::Value, preset: &str, question: &str) -> Option<Vec<String>> {
    let rule = reply_rule(replies, question)?;
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

/// The turns `clippy-session --replay CAST --preset PRESET --json` lists, with
/// `--replay-hooks MODE` when `hooks` is given.
fn replay(cast: &Path, preset: &str, hooks: Option<&str>) -> Vec<serde_json::Value> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_clippy-session"));
    command.args([
        "--replay".as_ref(),
        cast.as_os_str(),
        "--preset".as_ref(),
        preset.as_ref(),
        "--json".as_ref(),
    ]);
    if let Some(mode) = hooks {
        command.args(["--replay-hooks", mode]);
    }
    let out = command.output().expect("run clippy-session");
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

/// Replays `cast` (with `--replay-hooks` `hooks` when given) and adds to `failures` where its
/// turns differ from the sidecar `expected`.
fn check(
    name: &str,
    cast: &Path,
    hooks: Option<&str>,
    expected: &serde_json::Value,
    failures: &mut Vec<String>,
) {
    let replies = replies();
    let preset = expected["preset"].as_str().expect("preset");
    let want = expected["turns"].as_array().expect("turns");
    let lost = lost_on_screen(cast);
    let got = replay(cast, preset, hooks);
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
            if !line.is_empty() && count != 1 && !(count == 0 && lost.contains(&line)) {
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
        // Every line the mock sent (for all questions of the turn), once; nothing else but
        // decorations and notices.
        let questions = want["input"].as_str().unwrap_or_default();
        if !questions.starts_with('/') {
            // Questions an agent sent as one message (`sent_as_one`: Claude Code's queue, or a
            // question of several lines pasted at once) got one answer, to the whole message.
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
                // A reply the agent cut short itself to take a question typed ahead (Codex
                // steers): its turn ends where the agent drew that question.
                let steered = want["cut_short"] == true;
                let shown = reply_view(got["text"].as_str().unwrap_or_default());
                let last = replies.len() - 1;
                for (n, reply) in replies.iter().enumerate() {
                    // A reply the user cut short, by Ctrl+C or by asking the next question
                    // (the agent stops answering the first), may lack its last lines: only
                    // lines after the first one missing.
                    let cut_short = interrupted || steered || n < last;
                    let mut missing = None;
                    for line in reply {
                        let count = occurrences(&shown, line);
                        let may_lack = cut_short || lost.contains(line);
                        if count > 1 || (count == 0 && !may_lack) {
                            failures.push(format!(
                                "{name} turn {}: the model's line {line:?} {count} times in \
                                 {shown:?}",
                                i + 1
                            ));
                        } else if count == 0 && !lost.contains(line) {
                            missing.get_or_insert(line);
                        } else if let Some(gap) = missing.filter(|_| count == 1) {
                            failures.push(format!(
                                "{name} turn {}: the model's line {gap:?} is missing before \
                                 {line:?}, which is there (a reply cut short lacks its end, \
                                 not its middle)",
                                i + 1
                            ));
                            missing = None;
                        }
                    }
                }
                let reply = replies.concat();
                let extra = besides_the_reply(&shown, &reply, interrupted || steered || last > 0);
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
        // A reply longer than the screen, sent whole, is whole in the text view, each line once.
        if want["reply"]
            .as_str()
            .unwrap_or_default()
            .contains("Numbered line 80 of 80 for the scrolling test")
        {
            let raw_text = got["text"].as_str().unwrap_or_default();
            for n in 1..=80 {
                let needle = format!("Numbered line {n} of 80 ");
                let count = raw_text.matches(&needle).count();
                let lost_here = lost.iter().any(|line| line.starts_with(&needle));
                if count != 1 && !(count == 0 && lost_here) {
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
            None,
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

/// Reply lines the agent's own screen lost in the recording `cast`: its turns may lack them
/// (each is still there at most once). Compared folded, as [`as_shown`] gives them. None at
/// present: the lines Gemini CLI 0.61.0 erases above its live area when its AfterAgent hook
/// starts (`gemini-hooks-long-*`: line 77, then `That was all 80 lines.` on its screen) were
/// on the screen before, and the screen keeps them in the turn (`clippy_screen`'s seams).
fn lost_on_screen(_cast: &Path) -> Vec<String> {
    Vec::new()
}

/// `text` without its lines that are `lost` lines (a numbered list item's number aside) and,
/// when some are, without blank lines (the blank line under the lost ones went with them).
fn without_lost(text: &str, lost: &[String]) -> String {
    if lost.is_empty() {
        return text.to_owned();
    }
    text.lines()
        .filter(|line| !line.trim().is_empty() && !lost.contains(&as_shown(line)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pieces of text the corpus mock streams for `question` (`plan1` in
/// `tools/corpus/mock_model.py`; `gemini`: its Gemini flavour, five list lines a chunk), the
/// final answer's after a tool call.
fn mock_chunks(replies: &serde_json::Value, question: &str, gemini: bool) -> Option<Vec<String>> {
    let rule = reply_rule(replies, question)?;
    let field = |key: &str| rule[key].as_str().unwrap_or_default().to_owned();
    let numbered = |n: u64| field("template").replace("{n}", &n.to_string());
    let count = rule["lines"].as_u64().unwrap_or(0);
    let words = |text: &str| -> Vec<String> {
        let token = regex::Regex::new(r"\S+\s*|\s+").expect("token pattern");
        token
            .find_iter(text)
            .map(|m| m.as_str().to_owned())
            .collect()
    };
    Some(match rule["kind"].as_str().unwrap_or("text") {
        "long" => {
            let lines: Vec<String> = (1..=count).map(|n| numbered(n) + "\n").collect();
            let per = if gemini { 5 } else { 1 };
            std::iter::once(field("intro") + "\n\n")
                .chain(lines.chunks(per).map(|group| group.concat()))
                .chain(std::iter::once(format!("\n{}", field("outro"))))
                .collect()
        }
        "slow" => words(&(1..=count).map(numbered).collect::<Vec<_>>().join("\n\n")),
        "tool" => words(&field("after")),
        _ => words(&field("reply")),
    })
}

/// The agent's final message for `question` as clippy keeps it: the whole text the mock sent.
/// (Gemini CLI 0.61.0's `AfterAgent` `prompt_response` adds each streamed chunk after the first
/// again, joined with spaces; `clippy_hooks::parse` takes that echo off, so its message is exact
/// too.)
fn hook_message(replies: &serde_json::Value, question: &str, preset: &str) -> Option<String> {
    let chunks = mock_chunks(replies, question, preset == "gemini")?;
    Some(chunks.concat())
}

/// `text` cut to its first 120 characters, for a failure message.
fn shortened(text: Option<&str>) -> Option<String> {
    text.map(|text| match text.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    })
}

/// How many `h` events (hook reports) a recording holds.
fn hook_events(cast: &Path) -> usize {
    std::fs::read_to_string(cast)
        .expect("read cast")
        .lines()
        .skip(1)
        .filter(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .is_ok_and(|event| event.get(1).and_then(|c| c.as_str()) == Some("h"))
        })
        .count()
}

#[test]
fn with_hooks_the_agents_word_alone_gives_the_turns_the_screen_alone_gives() {
    let replies = replies();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut sidecars: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("corpus directory")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    sidecars.sort();
    for sidecar in &sidecars {
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(sidecar).expect("read sidecar"))
                .expect("sidecar JSON");
        let cast = sidecar.with_extension("cast");
        let reports = hook_events(&cast);
        if expected["hooks"] != true {
            assert_eq!(reports, 0, "{}: h events without \"hooks\"", cast.display());
            continue;
        }
        let name = sidecar
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if reports == 0 {
            failures.push(format!("{name}: recorded with hooks, but no h events"));
            continue;
        }
        checked += 1;
        let preset = expected["preset"].as_str().expect("preset");
        let screen = replay(&cast, preset, Some("off"));
        let word = replay(&cast, preset, Some("only"));
        let inputs = |turns: &[serde_json::Value]| -> Vec<String> {
            turns.iter().map(|t| t["input"].to_string()).collect()
        };
        // (a) The same turns: as many, the same inputs, the same text views.
        if screen.len() != word.len() {
            failures.push(format!(
                "{name}: the screen alone gives {} turns {:?}, the agent's word alone {} {:?}",
                screen.len(),
                inputs(&screen),
                word.len(),
                inputs(&word)
            ));
        } else {
            let lost = lost_on_screen(&cast);
            let kept = |turn: &serde_json::Value, field: &str| match turn[field].as_str() {
                Some(text) if field == "text" => without_lost(text, &lost).into(),
                _ => turn[field].clone(),
            };
            for (i, (s, w)) in screen.iter().zip(&word).enumerate() {
                for field in ["input", "text", "interrupted"] {
                    if kept(s, field) != kept(w, field) {
                        failures.push(format!(
                            "{name} turn {}: {field} is {} from the screen alone, {} from the \
                             agent's word alone",
                            i + 1,
                            s[field],
                            w[field]
                        ));
                    }
                }
            }
        }
        // (b) With the hooks, every turn is the agent's, with the mock's text as its message;
        // without them, none is. A turn the agent stopped itself (Claude Code after a refused
        // permission) has no word from it: the screen ends it, interrupted, with no message. Nor
        // has a reply the agent cut short to take a question typed ahead (`cut_short`: Codex
        // reports one turn end, for that question): it ends where the question is drawn.
        for (mode, turns) in [("only", &word), ("on", &replay(&cast, preset, None))] {
            for (i, turn) in turns.iter().enumerate() {
                let want = &expected["turns"][i];
                if want["interrupted"] == true || want["cut_short"] == true {
                    if turn["ended_by_agent"] != false || !turn["message"].is_null() {
                        failures.push(format!(
                            "{name} turn {} ({mode}): the agent stopped it without a word, \
                             yet it is the agent's: {turn}",
                            i + 1
                        ));
                    }
                    continue;
                }
                if turn["ended_by_agent"] != true {
                    failures.push(format!(
                        "{name} turn {} ({mode}): not ended by the agent",
                        i + 1
                    ));
                }
                // The question answered last: the last line of the sidecar's input.
                let sidecar = &expected["turns"][i]["input"];
                let question = sidecar.as_str().unwrap_or_default().lines().last();
                let want = question.and_then(|q| hook_message(&replies, q, preset));
                if want.is_none() || turn["message"].as_str() != want.as_deref() {
                    failures.push(format!(
                        "{name} turn {} ({mode}): message {:?} is not the mock's {:?}",
                        i + 1,
                        shortened(turn["message"].as_str()),
                        shortened(want.as_deref()),
                    ));
                }
            }
        }
        for (i, turn) in screen.iter().enumerate() {
            if turn["ended_by_agent"] != false || !turn["message"].is_null() {
                failures.push(format!(
                    "{name} turn {} (off): the hooks were not to be heard: {turn}",
                    i + 1
                ));
            }
        }
        // (c) The sidecar's strict checks hold in each mode (`on`, the default, is checked by
        // every_recording_gives_the_turns_its_sidecar_lists).
        for mode in ["off", "only"] {
            check(
                &format!("{name} (hooks {mode})"),
                &cast,
                Some(mode),
                &expected,
                &mut failures,
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements in {checked} recordings with hook reports:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        checked >= 20,
        "only {checked} recordings with hook reports in the corpus"
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
            None,
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

    let bad_hook = dir.join("bad-hook.cast");
    std::fs::write(
        &bad_hook,
        "{\"version\": 2, \"width\": 80, \"height\": 24}\n[0.1, \"o\", \"> \"]\n\
         [0.5, \"h\", \"clippy-hook 1 claude\\n{\\\"session_id\\\": \\\"s\\\"}\"]\n",
    )
    .expect("write");
    for hooks in ["off", "only"] {
        let out = run(&[
            "--replay".as_ref(),
            bad_hook.as_os_str(),
            "--replay-hooks".as_ref(),
            hooks.as_ref(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{stderr}");
        assert!(
            stderr.contains("line 3") && stderr.contains("bad hook report"),
            "{stderr}"
        );
    }

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
