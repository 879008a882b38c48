//! Wiring an agent's hooks to clippy for one run, without touching the user's files: extra
//! arguments (Claude's `--settings`, Codex's `-c notify=[…]`), environment (Gemini's
//! system-defaults layer) and the files they name, all under the session's folder.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::error::HooksError;
use crate::report::Agent;

/// The hook entry the agents are pointed at: a program (`clippy-ctl`) and the arguments that
/// come before the agent's name (`hook`), so an agent runs `clippy-ctl hook claude`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// The program, an absolute path (agents run hooks from their own working directory).
    pub program: PathBuf,
    /// Arguments before the agent's name.
    pub args: Vec<String>,
}

impl HookCommand {
    /// `program args… agent` as an argument vector.
    pub fn argv(&self, agent: Agent) -> Vec<String> {
        let mut argv = vec![self.program.to_string_lossy().into_owned()];
        argv.extend(self.args.iter().cloned());
        argv.push(agent.name().to_owned());
        argv
    }

    /// The same as a shell command line (Claude and Gemini run hooks through a shell), each
    /// word single-quoted where it needs to be.
    pub fn shell_line(&self, agent: Agent) -> String {
        self.argv(agent)
            .iter()
            .map(|word| shell_quote(word))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `word` as one shell word.
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// What the wrapper adds to one run of an agent so its hooks report to clippy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunWiring {
    /// Arguments to put right after the agent's program name.
    pub args: Vec<OsString>,
    /// Environment variables to set for the agent.
    pub env: Vec<(OsString, OsString)>,
    /// Files to write before the agent starts (under the session's folder), with their text.
    pub files: Vec<(PathBuf, String)>,
}

/// Where an agent's existing settings are that a run's wiring must keep: Codex's `notify`
/// program (which `-c notify=[…]` replaces) and Gemini's system-defaults file (which
/// `GEMINI_CLI_SYSTEM_DEFAULTS_PATH` replaces). Read from the environment and the files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExistingSettings {
    /// The user's Codex `notify` command, chained after clippy's.
    pub codex_notify: Option<Vec<String>>,
    /// The Gemini system-defaults file in force, and its text (merged into clippy's).
    pub gemini_defaults: Option<(PathBuf, String)>,
}

impl ExistingSettings {
    /// Reads what `agent` has, with `env` for the environment (`HOME`, `CODEX_HOME`,
    /// `GEMINI_CLI_SYSTEM_DEFAULTS_PATH`). A file that does not exist is nothing to keep; one
    /// that cannot be read or parsed is an error, so the run is not wired over it blindly.
    pub fn read(agent: Agent, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Self, HooksError> {
        let mut existing = Self::default();
        match agent {
            Agent::Claude => {}
            Agent::Codex => {
                let home = env("CODEX_HOME")
                    .map(PathBuf::from)
                    .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".codex")));
                if let Some(path) = home.map(|home| home.join("config.toml"))
                    && let Some(text) = read_if_exists(&path)?
                {
                    existing.codex_notify =
                        codex_notify(&text).map_err(|reason| HooksError::Settings {
                            path: path.display().to_string(),
                            reason,
                        })?;
                }
            }
            Agent::Gemini => {
                let path = env("GEMINI_CLI_SYSTEM_DEFAULTS_PATH").map_or_else(
                    || PathBuf::from("/etc/gemini-cli/system-defaults.json"),
                    PathBuf::from,
                );
                if let Some(text) = read_if_exists(&path)? {
                    existing.gemini_defaults = Some((path, text));
                }
            }
        }
        Ok(existing)
    }
}

fn read_if_exists(path: &Path) -> Result<Option<String>, HooksError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HooksError::Settings {
            path: path.display().to_string(),
            reason: format!("cannot read it: {e}"),
        }),
    }
}

/// The top-level `notify` array of a Codex `config.toml`, if it sets one.
pub(crate) fn codex_notify(config: &str) -> Result<Option<Vec<String>>, String> {
    let table: toml::Table = config
        .parse()
        .map_err(|e: toml::de::Error| format!("invalid TOML: {}", e.message()))?;
    let Some(notify) = table.get("notify") else {
        return Ok(None);
    };
    let words = notify
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or("`notify` is not an array of strings")?;
    Ok((!words.is_empty()).then_some(words))
}

/// Claude hook events clippy listens to, with the `Notification` types that mean waiting. Not
/// `UserPromptSubmit`: Claude Code 2.1.332 names it in its spinner row while it runs, even in
/// the background (`running UserPromptSubmit hook`), and the keys already say when a prompt
/// is submitted.
const CLAUDE_EVENTS: [&str; 3] = ["Stop", "StopFailure", "PermissionRequest"];
const CLAUDE_NOTIFICATIONS: &str = "permission_prompt|elicitation_dialog";
/// Gemini hook events clippy listens to.
const GEMINI_EVENTS: [&str; 3] = ["BeforeAgent", "AfterAgent", "Notification"];
/// Seconds Claude gives a hook (clippy's ends in well under one).
const CLAUDE_TIMEOUT_S: u64 = 5;
/// Milliseconds Gemini gives a hook.
const GEMINI_TIMEOUT_MS: u64 = 5000;

/// The hooks object of Claude settings that reports every event clippy uses to `hook`; each
/// command line ends with `suffix` (empty per run; the install marker in the user's files).
pub(crate) fn claude_hooks(hook: &HookCommand, suffix: &str) -> Value {
    let handler = json!([{
        "type": "command",
        "command": format!("{}{suffix}", hook.shell_line(Agent::Claude)),
        "timeout": CLAUDE_TIMEOUT_S,
        // In the background: Claude Code shows a hook it waits for in its spinner row
        // (`running Stop hook`) and draws its idle frame only after it; clippy needs neither.
        "async": true,
    }]);
    let mut hooks = serde_json::Map::new();
    for event in CLAUDE_EVENTS {
        hooks.insert(event.into(), json!([{ "hooks": handler }]));
    }
    hooks.insert(
        "Notification".into(),
        json!([{ "matcher": CLAUDE_NOTIFICATIONS, "hooks": handler }]),
    );
    Value::Object(hooks)
}

/// The hooks object of Gemini settings that reports every event clippy uses to `hook`; each
/// command line ends with `suffix` (empty per run; the install marker in the user's files).
pub(crate) fn gemini_hooks(hook: &HookCommand, suffix: &str) -> Value {
    let handler = json!([{
        "type": "command",
        "name": "clippy",
        "command": format!("{}{suffix}", hook.shell_line(Agent::Gemini)),
        "timeout": GEMINI_TIMEOUT_MS,
    }]);
    let mut hooks = serde_json::Map::new();
    for event in GEMINI_EVENTS {
        hooks.insert(event.into(), json!([{ "hooks": handler }]));
    }
    Value::Object(hooks)
}

/// The wiring for one run of `agent` whose session folder is `dir`.
///
/// ```
/// use std::path::{Path, PathBuf};
/// use clippy_hooks::{Agent, ExistingSettings, HookCommand, per_run};
///
/// let hook = HookCommand { program: PathBuf::from("/usr/bin/clippy-ctl"), args: vec!["hook".into()] };
/// let codex = per_run(Agent::Codex, &hook, Path::new("/run/s1"), &ExistingSettings::default())?;
/// assert_eq!(codex.args, ["-c", r#"notify=["/usr/bin/clippy-ctl", "hook", "codex"]"#]);
/// let claude = per_run(Agent::Claude, &hook, Path::new("/run/s1"), &ExistingSettings::default())?;
/// assert_eq!(claude.args[0], "--settings");
/// # Ok::<(), clippy_hooks::HooksError>(())
/// ```
pub fn per_run(
    agent: Agent,
    hook: &HookCommand,
    dir: &Path,
    existing: &ExistingSettings,
) -> Result<RunWiring, HooksError> {
    let mut wiring = RunWiring::default();
    match agent {
        Agent::Claude => {
            let settings = json!({ "hooks": claude_hooks(hook, "") });
            wiring.args = vec!["--settings".into(), settings.to_string().into()];
        }
        Agent::Codex => {
            let argv = codex_notify_argv(hook, existing.codex_notify.as_deref());
            wiring.args = vec!["-c".into(), format!("notify={}", toml_array(&argv)).into()];
        }
        Agent::Gemini => {
            let mut defaults = match &existing.gemini_defaults {
                Some((path, text)) => {
                    serde_json::from_str::<Value>(text).map_err(|e| HooksError::Settings {
                        path: path.display().to_string(),
                        reason: format!(
                            "not plain JSON ({e}); clippy cannot merge its hooks into it"
                        ),
                    })?
                }
                None => json!({}),
            };
            merge_hooks(&mut defaults, gemini_hooks(hook, "")).map_err(|reason| {
                HooksError::Settings {
                    path: existing
                        .gemini_defaults
                        .as_ref()
                        .map_or_else(String::new, |(path, _)| path.display().to_string()),
                    reason,
                }
            })?;
            let path = dir.join("gemini-system-defaults.json");
            wiring.env.push((
                "GEMINI_CLI_SYSTEM_DEFAULTS_PATH".into(),
                path.clone().into_os_string(),
            ));
            wiring.files.push((path, format!("{defaults:#}\n")));
        }
    }
    Ok(wiring)
}

/// Appends each event's groups of `ours` to the same event's groups in `settings.hooks`.
pub(crate) fn merge_hooks(settings: &mut Value, ours: Value) -> Result<(), String> {
    let Value::Object(settings) = settings else {
        return Err("the settings are not a JSON object".into());
    };
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("`hooks` is not an object")?;
    let Value::Object(ours) = ours else {
        return Ok(());
    };
    for (event, groups) in ours {
        let list = hooks
            .entry(event.clone())
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not an array"))?;
        if let Value::Array(groups) = groups {
            list.extend(groups);
        }
    }
    Ok(())
}

/// Codex's `notify` running `hook`, then the user's own `chained` one.
pub(crate) fn codex_notify_argv(hook: &HookCommand, chained: Option<&[String]>) -> Vec<String> {
    let mut argv = hook.argv(Agent::Codex);
    if let Some(user) = chained {
        argv.push("--chain".into());
        argv.push(Value::from(user.to_vec()).to_string());
    }
    argv
}

/// `words` as a TOML array of strings.
pub(crate) fn toml_array(words: &[String]) -> String {
    let words: Vec<String> = words.iter().map(|word| toml_string(word)).collect();
    format!("[{}]", words.join(", "))
}

/// `text` as a TOML basic string.
pub(crate) fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> HookCommand {
        HookCommand {
            program: PathBuf::from("/opt/my tools/clippy-ctl"),
            args: vec!["hook".into()],
        }
    }

    #[test]
    fn claude_settings_name_every_event_with_a_quoted_command() {
        let wiring = per_run(
            Agent::Claude,
            &hook(),
            Path::new("/d"),
            &ExistingSettings::default(),
        )
        .expect("wires");
        let settings: Value =
            serde_json::from_str(wiring.args[1].to_str().expect("utf-8")).expect("json");
        for event in CLAUDE_EVENTS.iter().chain(&["Notification"]) {
            let command = &settings["hooks"][event][0]["hooks"][0]["command"];
            assert_eq!(command, "'/opt/my tools/clippy-ctl' hook claude", "{event}");
        }
        assert!(wiring.env.is_empty() && wiring.files.is_empty());
    }

    #[test]
    fn codex_chains_the_users_own_notify() {
        let existing = ExistingSettings {
            codex_notify: codex_notify("model = \"x\"\nnotify = [\"notify-send\", \"Codex\"]\n")
                .expect("parses"),
            ..ExistingSettings::default()
        };
        let wiring = per_run(Agent::Codex, &hook(), Path::new("/d"), &existing).expect("wires");
        let value: toml::Table = wiring.args[1]
            .to_str()
            .expect("utf-8")
            .parse()
            .expect("toml");
        let argv: Vec<&str> = value["notify"]
            .as_array()
            .expect("array")
            .iter()
            .filter_map(toml::Value::as_str)
            .collect();
        assert_eq!(
            argv,
            [
                "/opt/my tools/clippy-ctl",
                "hook",
                "codex",
                "--chain",
                r#"["notify-send","Codex"]"#
            ]
        );
    }

    #[test]
    fn a_broken_codex_config_is_an_error_not_a_silent_replacement() {
        assert!(codex_notify("notify = [1, 2]").is_err());
        assert!(codex_notify("notify = ").is_err());
        assert_eq!(codex_notify("notify = []"), Ok(None));
    }

    #[test]
    fn gemini_hooks_are_added_to_the_system_defaults_in_force() {
        let existing = ExistingSettings {
            gemini_defaults: Some((
                PathBuf::from("/etc/gemini-cli/system-defaults.json"),
                r#"{"ui":{"theme":"x"},"hooks":{"AfterAgent":[{"hooks":[{"type":"command","command":"audit"}]}]}}"#.into(),
            )),
            ..ExistingSettings::default()
        };
        let wiring =
            per_run(Agent::Gemini, &hook(), Path::new("/run/s"), &existing).expect("wires");
        assert_eq!(wiring.env[0].1, "/run/s/gemini-system-defaults.json");
        let file: Value = serde_json::from_str(&wiring.files[0].1).expect("json");
        assert_eq!(file["ui"]["theme"], "x");
        let after = file["hooks"]["AfterAgent"].as_array().expect("array");
        assert_eq!(after.len(), 2, "the admin's hook stays first: {after:?}");
        assert_eq!(after[1]["hooks"][0]["name"], "clippy");
        let broken = ExistingSettings {
            gemini_defaults: Some((PathBuf::from("/x.json"), "// comment\n{}".into())),
            ..ExistingSettings::default()
        };
        let err = per_run(Agent::Gemini, &hook(), Path::new("/d"), &broken).expect_err("refused");
        assert!(err.to_string().starts_with("/x.json"), "{err}");
    }

    #[test]
    fn toml_strings_escape_what_they_must() {
        let text = "a\"b\\c\nd\u{1}";
        let table: toml::Table = format!("k = {}", toml_string(text)).parse().expect("toml");
        assert_eq!(table["k"].as_str(), Some(text));
    }
}
