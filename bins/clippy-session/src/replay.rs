//! `clippy-session --replay`: run the turn detector over an asciicast recording and print the
//! turns it finds.
//!
//! Reading the recording and feeding it to the detector as the live tap does are
//! `clippy_wrapper`'s (`asciicast`, `replay::detect`: the hooks' reports in order with the
//! output, quiet output from the recording's timestamps, no settling without a clock); this
//! file opens the file and renders the listing (text, or `--json`).

use std::io::Write;

use clippy_turn::{AgentHooks, DetectorConfig, Turn};
use clippy_wrapper::asciicast;
use clippy_wrapper::replay::{detect, has_hook_reports};

/// How a replay takes the agent's hook reports (`h` events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayHooks {
    /// Ignore them: the screen alone ends turns, as without hooks.
    Off,
    /// Feed them: a turn ends at the agent's word, as in a live session with hooks wired.
    On,
    /// Feed them, and let the screen end no turn the agent has not said ended: only its word
    /// and input do (to check the two sources against each other).
    Only,
}

impl ReplayHooks {
    fn detector_mode(self) -> AgentHooks {
        match self {
            ReplayHooks::Off => AgentHooks::Off,
            ReplayHooks::On => AgentHooks::On,
            ReplayHooks::Only => AgentHooks::Only,
        }
    }
}

/// One detected turn as printed by `--replay --json`.
#[derive(serde::Serialize)]
struct TurnRecord<'a> {
    seq: u64,
    interrupted: bool,
    truncated: bool,
    byte_length: usize,
    input: &'a str,
    exit_code: Option<i32>,
    cwd: Option<&'a str>,
    text: String,
    /// The agent's own final message, from its hook.
    message: Option<&'a str>,
    /// The agent's word ended the turn.
    ended_by_agent: bool,
}

/// Replays `path` through a detector built from `config`, printing each turn to `out`. `hooks`:
/// how to take the recording's hook reports; by default `on` when it has any, else `off`.
pub fn run(
    path: &std::path::Path,
    config: DetectorConfig,
    hooks: Option<ReplayHooks>,
    json: bool,
    out: &mut impl Write,
) -> Result<usize, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let (header, events) = asciicast::read(std::io::BufReader::new(file))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let hooks = hooks.unwrap_or_else(|| {
        if has_hook_reports(&events) {
            ReplayHooks::On
        } else {
            ReplayHooks::Off
        }
    });
    let config = config
        .size(header.cols, header.rows)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .agent_hooks(hooks.detector_mode());
    let turns = detect(config, &events, hooks != ReplayHooks::Off);
    for turn in &turns {
        print_turn(turn, json, out).map_err(|e| format!("cannot write the listing: {e}"))?;
    }
    Ok(turns.len())
}

fn print_turn(turn: &Turn, json: bool, out: &mut impl Write) -> std::io::Result<()> {
    let record = TurnRecord {
        seq: turn.seq,
        interrupted: turn.interrupted,
        truncated: turn.truncated,
        byte_length: turn.content.len(),
        input: &turn.input,
        exit_code: turn.exit_code,
        cwd: turn.cwd.as_deref(),
        text: turn.text(),
        message: turn.message.as_deref(),
        ended_by_agent: turn.ended_by_agent,
    };
    if json {
        serde_json::to_writer(&mut *out, &record)?;
        return writeln!(out);
    }
    let mut flags = Vec::new();
    if record.interrupted {
        flags.push("interrupted".to_owned());
    }
    if record.truncated {
        flags.push("truncated".to_owned());
    }
    if let Some(code) = record.exit_code {
        flags.push(format!("exit {code}"));
    }
    if record.ended_by_agent {
        flags.push("ended by the agent".to_owned());
    }
    let flags = if flags.is_empty() {
        String::new()
    } else {
        format!(", {}", flags.join(", "))
    };
    writeln!(
        out,
        "── turn {} ({} bytes{flags}) ──",
        record.seq, record.byte_length
    )?;
    writeln!(out, "input: {}", record.input.replace('\n', "⏎"))?;
    writeln!(out, "{}", record.text)?;
    if let Some(message) = record.message {
        writeln!(out, "message: {}", message.replace('\n', "⏎"))?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell session at 80x24 where the agent's hook says the turn ended.
    fn recording(dir: &std::path::Path) -> std::path::PathBuf {
        let frame = clippy_hooks::encode(
            clippy_hooks::Agent::Claude,
            br#"{"hook_event_name":"Stop","last_assistant_message":"The answer is **42**."}"#,
        );
        let events = [
            serde_json::json!([0.1, "o", "$ "]),
            serde_json::json!([0.2, "i", "ask\r"]),
            serde_json::json!([0.3, "o", "ask\r\nThe answer is **42**.\r\n"]),
            serde_json::json!([0.4, "h", String::from_utf8(frame).unwrap()]),
            serde_json::json!([0.5, "o", "$ "]),
        ];
        let mut cast = String::from("{\"version\": 2, \"width\": 80, \"height\": 24}\n");
        for event in events {
            cast.push_str(&event.to_string());
            cast.push('\n');
        }
        let path = dir.join("hooked.cast");
        std::fs::write(&path, cast).unwrap();
        path
    }

    fn turns(path: &std::path::Path, hooks: Option<ReplayHooks>) -> Vec<serde_json::Value> {
        let config = DetectorConfig::new(clippy_turn::Preset::named("shell").unwrap());
        let mut out = Vec::new();
        run(path, config, hooks, true, &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// An agent no preset knows: a prompt decoration and the cursor after it, then a reply; the
    /// output stops `pause` seconds before the recording's last event.
    fn unknown_agent(dir: &std::path::Path, pause: f64) -> std::path::PathBuf {
        let events = [
            serde_json::json!([0.1, "o", "Agent 1.0\r\n\r\n: "]),
            serde_json::json!([1.0, "o", "hello"]),
            serde_json::json!([1.1, "i", "hello\r"]),
            serde_json::json!([1.2, "o", "\r\n\r\nHi there.\r\n\r\n: "]),
            serde_json::json!([1.2 + pause, "i", "x"]),
        ];
        let mut cast = String::from("{\"version\": 2, \"width\": 80, \"height\": 24}\n");
        for event in events {
            cast.push_str(&event.to_string());
            cast.push('\n');
        }
        let path = dir.join(format!("unknown-{pause}.cast"));
        std::fs::write(&path, cast).unwrap();
        path
    }

    #[test]
    fn output_quiet_for_the_live_threshold_ends_a_turn_as_live() {
        let dir = std::env::temp_dir().join(format!("clippy-replay-quiet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let quiet = clippy_wrapper::tap::QUIET.as_secs_f64();
        let run = |pause: f64| {
            let config = DetectorConfig::new(clippy_turn::Preset::named("generic").unwrap());
            let mut out = Vec::new();
            run(&unknown_agent(&dir, pause), config, None, true, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let ended = run(quiet + 0.1);
        assert!(ended.contains(r#""text":"Hi there.""#), "{ended}");
        assert!(ended.contains(r#""input":"hello""#), "{ended}");
        assert_eq!(run(quiet / 2.0), "", "a shorter pause is no end");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hook_reports_end_turns_unless_turned_off() {
        let dir = std::env::temp_dir().join(format!("clippy-replay-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = recording(&dir);
        for hooks in [None, Some(ReplayHooks::On), Some(ReplayHooks::Only)] {
            let turns = turns(&path, hooks);
            assert_eq!(turns.len(), 1, "{hooks:?}: {turns:?}");
            assert_eq!(turns[0]["message"], "The answer is **42**.", "{hooks:?}");
            assert_eq!(turns[0]["ended_by_agent"], true, "{hooks:?}");
            assert_eq!(turns[0]["text"], "The answer is **42**.", "{hooks:?}");
        }
        let off = turns(&path, Some(ReplayHooks::Off));
        assert_eq!(off.len(), 1, "{off:?}");
        assert_eq!(off[0]["message"], serde_json::Value::Null);
        assert_eq!(off[0]["ended_by_agent"], false);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
