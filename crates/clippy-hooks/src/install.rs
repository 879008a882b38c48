//! Persistent hooks: clippy's entries in an agent's own settings file, for agents started
//! without the wrapper's per-run wiring (`claude` typed in a shell that `clippy-session`
//! wraps). `clippy-ctl hooks install|uninstall|status` does the file I/O; this module only
//! turns a file's text into its new text, so every case is a unit test.
//!
//! What is clippy's must be found again without a record of it:
//! - in Claude's and Gemini's JSON settings, every hook command line clippy adds ends with the
//!   shell comment [`MARKER`];
//! - in Codex's `config.toml`, clippy's `notify` sits in a block between [`BLOCK_BEGIN`] and
//!   [`BLOCK_END`] lines, and the user's own single-line `notify`, which the block replaces,
//!   is kept commented out behind [`CHAINED_PREFIX`] (and run after clippy's hook, through
//!   `--chain`).
//!
//! JSON settings are rewritten as two-space indented JSON (what Claude and Gemini write
//! themselves), keeping the user's key order. Uninstall gives back the user's file byte for
//! byte when nothing but clippy's entries changed since install: the caller passes the backup
//! it kept of the file as it was before.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use crate::error::HooksError;
use crate::report::Agent;
use crate::wiring::{
    HookCommand, claude_hooks, codex_notify, codex_notify_argv, gemini_hooks, toml_array,
};

/// The shell comment that ends every hook command line clippy installs in JSON settings.
pub const MARKER: &str = "# clippy-hooks";
/// The first line of clippy's block in Codex's `config.toml`.
pub const BLOCK_BEGIN: &str = "# >>> clippy hooks >>>";
/// The last line of clippy's block in Codex's `config.toml`.
pub const BLOCK_END: &str = "# <<< clippy hooks <<<";
/// What a user's own Codex `notify` line is commented out with while clippy's block is in.
pub const CHAINED_PREFIX: &str = "# clippy-hooks chained: ";
/// The line inside clippy's Codex block that says what it is.
const BLOCK_NOTE: &str =
    "# Added by `clippy-ctl hooks install codex`; `clippy-ctl hooks uninstall codex` removes it.";

/// What to do with a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Nothing: it already is as it should be.
    Unchanged,
    /// Replace its text with this.
    Write(String),
    /// Remove it: clippy created it, and nothing but clippy's entries was ever in it.
    Remove,
}

/// What [`install`] makes of a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The change to make.
    pub edit: Edit,
    /// Codex: the user's own `notify` program, commented out and chained after clippy's hook.
    pub chained: Option<Vec<String>>,
}

/// What [`uninstall`] makes of a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uninstalled {
    /// The change to make.
    pub edit: Edit,
    /// The edit gives back the file as it was before install, byte for byte (the backup's
    /// text, or no file where there was none), so the backup has served.
    pub restored: bool,
}

/// The settings file where `agent`'s persistent hooks go, with `env` for the environment:
/// Claude `$CLAUDE_CONFIG_DIR/settings.json` else `~/.claude/settings.json`; Codex
/// `$CODEX_HOME/config.toml` else `~/.codex/config.toml`; Gemini
/// `$GEMINI_CLI_HOME/.gemini/settings.json` else `~/.gemini/settings.json`. `None` when
/// neither the override nor `HOME` is set.
///
/// ```
/// use std::path::Path;
/// use clippy_hooks::{Agent, install::settings_path};
///
/// let env = |name: &str| (name == "HOME").then(|| "/home/u".into());
/// assert_eq!(
///     settings_path(Agent::Codex, &env).as_deref(),
///     Some(Path::new("/home/u/.codex/config.toml"))
/// );
/// ```
pub fn settings_path(agent: Agent, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |name: &str| {
        env(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    let home = || var("HOME");
    match agent {
        Agent::Claude => var("CLAUDE_CONFIG_DIR")
            .or_else(|| home().map(|home| home.join(".claude")))
            .map(|dir| dir.join("settings.json")),
        Agent::Codex => var("CODEX_HOME")
            .or_else(|| home().map(|home| home.join(".codex")))
            .map(|dir| dir.join("config.toml")),
        // Gemini takes GEMINI_CLI_HOME for the home directory, `.gemini` inside it.
        Agent::Gemini => var("GEMINI_CLI_HOME")
            .or_else(home)
            .map(|home| home.join(".gemini").join("settings.json")),
    }
}

/// `current` (the file's text, `None` when there is none) with `agent`'s hooks installed,
/// running `hook`. Installing again changes nothing; an install made by another `hook` program
/// is replaced. `path` only names the file in errors.
///
/// A file clippy cannot read back exactly (JSON with comments, invalid JSON or TOML, a Codex
/// `notify` over several lines) is an error, so it is never rewritten.
///
/// ```
/// use std::path::{Path, PathBuf};
/// use clippy_hooks::{Agent, HookCommand, install::{Edit, install}};
///
/// let hook = HookCommand { program: PathBuf::from("/bin/clippy-ctl"), args: vec!["hook".into()] };
/// let path = Path::new("config.toml");
/// let once = install(Agent::Codex, &hook, path, Some("model = \"o3\"\n[tui]\n"))?;
/// let Edit::Write(text) = once.edit else { panic!("installed") };
/// assert!(text.contains("notify = [\"/bin/clippy-ctl\", \"hook\", \"codex\"]\n# <<< clippy hooks <<<\n[tui]\n"));
/// assert_eq!(install(Agent::Codex, &hook, path, Some(&text))?.edit, Edit::Unchanged);
/// # Ok::<(), clippy_hooks::HooksError>(())
/// ```
pub fn install(
    agent: Agent,
    hook: &HookCommand,
    path: &Path,
    current: Option<&str>,
) -> Result<Installed, HooksError> {
    match agent {
        Agent::Claude | Agent::Gemini => Ok(Installed {
            edit: install_json(agent, hook, path, current)?,
            chained: None,
        }),
        Agent::Codex => install_codex(hook, path, current),
    }
}

/// `current` without clippy's hooks. When what is left is the file as it was before install
/// (`backup`, or no file when `backup` is `None` and nothing is left), that is what is given
/// back, byte for byte; otherwise only clippy's entries go and the rest stays as it is.
///
/// ```
/// use std::path::{Path, PathBuf};
/// use clippy_hooks::{Agent, HookCommand, install::{Edit, install, uninstall}};
///
/// let hook = HookCommand { program: PathBuf::from("/bin/clippy-ctl"), args: vec!["hook".into()] };
/// let path = Path::new("settings.json");
/// let mine = "{\"model\": \"opus\"}";
/// let Edit::Write(installed) = install(Agent::Claude, &hook, path, Some(mine))?.edit else { panic!() };
/// let undone = uninstall(Agent::Claude, path, Some(&installed), Some(mine))?;
/// assert_eq!(undone.edit, Edit::Write(mine.into()));
/// assert!(undone.restored);
/// # Ok::<(), clippy_hooks::HooksError>(())
/// ```
pub fn uninstall(
    agent: Agent,
    path: &Path,
    current: Option<&str>,
    backup: Option<&str>,
) -> Result<Uninstalled, HooksError> {
    let unchanged = Uninstalled {
        edit: Edit::Unchanged,
        restored: false,
    };
    let Some(current) = current else {
        return Ok(unchanged);
    };
    match agent {
        Agent::Claude | Agent::Gemini => {
            let mut root = parse_json(path, Some(current))?;
            if remove_ours(&mut root) == 0 {
                return Ok(unchanged);
            }
            let before = backup.and_then(|text| parse_json(path, Some(text)).ok());
            let as_before = before.map(normalized) == Some(normalized(root.clone()));
            Ok(match backup {
                Some(text) if as_before => Uninstalled {
                    edit: Edit::Write(text.to_owned()),
                    restored: true,
                },
                None if root == Json::Object(Vec::new()) => Uninstalled {
                    edit: Edit::Remove,
                    restored: true,
                },
                _ => Uninstalled {
                    edit: Edit::Write(json_text(&root)),
                    restored: false,
                },
            })
        }
        Agent::Codex => {
            let stripped = strip_codex_block(path, current)?;
            if stripped == current {
                return Ok(unchanged);
            }
            stripped
                .parse::<toml::Table>()
                .map_err(|e| settings_error(path, format!(
                    "without clippy's block it would not be valid TOML ({}); remove the block between `{BLOCK_BEGIN}` and `{BLOCK_END}` by hand",
                    e.message()
                )))?;
            Ok(match backup {
                // Install adds a line end to a last line that has none.
                Some(before) if stripped == before || stripped == format!("{before}\n") => {
                    Uninstalled {
                        edit: Edit::Write(before.to_owned()),
                        restored: true,
                    }
                }
                None if stripped.is_empty() => Uninstalled {
                    edit: Edit::Remove,
                    restored: true,
                },
                _ => Uninstalled {
                    edit: Edit::Write(stripped),
                    restored: false,
                },
            })
        }
    }
}

/// Whether `text`, an agent's settings file, holds clippy's hooks. A file that cannot be read
/// as its agent's settings is an error.
pub fn is_installed(agent: Agent, path: &Path, text: &str) -> Result<bool, HooksError> {
    match agent {
        Agent::Claude | Agent::Gemini => {
            let mut root = parse_json(path, Some(text))?;
            Ok(remove_ours(&mut root) > 0)
        }
        Agent::Codex => {
            text.parse::<toml::Table>()
                .map_err(|e| invalid_toml(path, &e))?;
            Ok(text.lines().any(|line| line.trim_end() == BLOCK_BEGIN))
        }
    }
}

fn settings_error(path: &Path, reason: impl Into<String>) -> HooksError {
    HooksError::Settings {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

fn invalid_toml(path: &Path, e: &toml::de::Error) -> HooksError {
    settings_error(
        path,
        format!(
            "not valid TOML ({}); clippy does not rewrite a file it cannot read: fix it and run again",
            e.message().trim_end()
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// Claude and Gemini: JSON settings
// ---------------------------------------------------------------------------------------------

fn install_json(
    agent: Agent,
    hook: &HookCommand,
    path: &Path,
    current: Option<&str>,
) -> Result<Edit, HooksError> {
    let suffix = format!(" {MARKER}");
    let ours = Json::from(match agent {
        Agent::Gemini => gemini_hooks(hook, &suffix),
        _ => claude_hooks(hook, &suffix),
    });
    let mut root = parse_json(path, current)?;
    if current.is_some() && exactly_ours(&root, &ours) {
        return Ok(Edit::Unchanged);
    }
    remove_ours(&mut root);
    add_ours(&mut root, ours).map_err(|reason| settings_error(path, reason))?;
    let text = json_text(&root);
    Ok(if current == Some(text.as_str()) {
        Edit::Unchanged
    } else {
        Edit::Write(text)
    })
}

/// The settings in `text`; no file, or only white space, is an empty object.
fn parse_json(path: &Path, text: Option<&str>) -> Result<Json, HooksError> {
    let text = text.unwrap_or_default();
    if text.trim().is_empty() {
        return Ok(Json::Object(Vec::new()));
    }
    let root: Json = serde_json::from_str(text).map_err(|e| {
        settings_error(
            path,
            format!(
                "not plain JSON ({e}); clippy does not rewrite a file it cannot read back exactly \
                 (comments included): fix it, or add the hooks by hand"
            ),
        )
    })?;
    if !matches!(root, Json::Object(_)) {
        return Err(settings_error(path, "the settings are not a JSON object"));
    }
    Ok(root)
}

/// Whether the settings hold exactly clippy's hooks `ours`, each group where it should be.
fn exactly_ours(root: &Json, ours: &Json) -> bool {
    let mut rest = root.clone();
    let found = remove_ours(&mut rest);
    let Json::Object(ours) = ours else {
        return false;
    };
    let wanted: usize = ours
        .iter()
        .map(|(_, groups)| match groups {
            Json::Array(groups) => groups.iter().map(|g| handlers(g).len()).sum(),
            _ => 0,
        })
        .sum();
    let hooks = root.get("hooks");
    found == wanted
        && ours.iter().all(|(event, groups)| {
            let have = hooks.and_then(|hooks| hooks.get(event));
            match (groups, have) {
                (Json::Array(groups), Some(Json::Array(have))) => {
                    groups.iter().all(|group| have.contains(group))
                }
                _ => false,
            }
        })
}

fn handlers(group: &Json) -> &[Json] {
    match group.get("hooks") {
        Some(Json::Array(handlers)) => handlers,
        _ => &[],
    }
}

fn is_ours(handler: &Json) -> bool {
    matches!(handler.get("command"), Some(Json::String(command)) if command.trim_end().ends_with(MARKER))
}

/// Removes clippy's handlers, and the groups, event lists and `hooks` object that removing
/// them emptied (never ones that were empty already). Returns how many handlers went.
fn remove_ours(root: &mut Json) -> usize {
    let mut removed = 0;
    let Json::Object(entries) = root else {
        return 0;
    };
    let mut hooks_emptied = false;
    if let Some((_, Json::Object(events))) = entries.iter_mut().rev().find(|(k, _)| k == "hooks") {
        let mut emptied_events = Vec::new();
        for (event, groups) in events.iter_mut() {
            let Json::Array(groups) = groups else {
                continue;
            };
            let before = removed;
            groups.retain_mut(|group| {
                let Json::Object(fields) = group else {
                    return true;
                };
                let Some((_, Json::Array(handlers))) =
                    fields.iter_mut().rev().find(|(k, _)| k == "hooks")
                else {
                    return true;
                };
                let had = handlers.len();
                handlers.retain(|handler| !is_ours(handler));
                removed += had - handlers.len();
                !(had > 0 && handlers.is_empty())
            });
            if removed > before && groups.is_empty() {
                emptied_events.push(event.clone());
            }
        }
        let had = events.len();
        events.retain(|(event, _)| !emptied_events.contains(event));
        hooks_emptied = had > 0 && events.is_empty();
    }
    if hooks_emptied {
        entries.retain(|(k, _)| k != "hooks");
    }
    removed
}

/// Appends each event's groups of `ours` to the same event's list in `root.hooks`.
fn add_ours(root: &mut Json, ours: Json) -> Result<(), String> {
    let Json::Object(entries) = root else {
        return Err("the settings are not a JSON object".into());
    };
    let Json::Object(events) = entry(entries, "hooks", || Json::Object(Vec::new())) else {
        return Err("`hooks` is not an object; clippy cannot add its hooks to it".into());
    };
    let Json::Object(ours) = ours else {
        return Ok(());
    };
    for (event, groups) in ours {
        let Json::Array(list) = entry(events, &event, || Json::Array(Vec::new())) else {
            return Err(format!(
                "`hooks.{event}` is not an array; clippy cannot add its hook to it"
            ));
        };
        if let Json::Array(groups) = groups {
            list.extend(groups);
        }
    }
    Ok(())
}

/// The value at `key` (the last one, as JSON readers take it), inserted at the end when absent.
fn entry<'a>(
    entries: &'a mut Vec<(String, Json)>,
    key: &str,
    new: impl Fn() -> Json,
) -> &'a mut Json {
    let at = match entries.iter().rposition(|(k, _)| k == key) {
        Some(at) => at,
        None => {
            entries.push((key.to_owned(), new()));
            entries.len() - 1
        }
    };
    &mut entries[at].1
}

/// The settings with empty event lists and an empty `hooks` object left out: they mean no
/// hooks, whether the user wrote them or clippy's removal left them.
fn normalized(mut root: Json) -> Json {
    if let Json::Object(entries) = &mut root {
        for (key, value) in entries.iter_mut() {
            if let (true, Json::Object(events)) = (key == "hooks", value) {
                events.retain(|(_, groups)| !matches!(groups, Json::Array(g) if g.is_empty()));
            }
        }
        entries.retain(|(key, value)| !(key == "hooks" && *value == Json::Object(Vec::new())));
    }
    root
}

/// Two-space indented JSON and a final line end.
fn json_text(root: &Json) -> String {
    // A `Json` holds strings, numbers and containers only: serialising it cannot fail.
    let mut text = serde_json::to_string_pretty(root).unwrap_or_default();
    text.push('\n');
    text
}

/// A JSON value whose objects keep their keys in the file's order (`serde_json::Value` sorts
/// them), so a rewritten settings file reads like the one the user wrote.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The member `key` of an object (the last one, as JSON readers take it).
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl From<Value> for Json {
    fn from(value: Value) -> Self {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(b),
            Value::Number(n) => Json::Number(n),
            Value::String(s) => Json::String(s),
            Value::Array(items) => Json::Array(items.into_iter().map(Json::from).collect()),
            Value::Object(map) => {
                Json::Object(map.into_iter().map(|(k, v)| (k, Json::from(v))).collect())
            }
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

// ---------------------------------------------------------------------------------------------
// Codex: config.toml
// ---------------------------------------------------------------------------------------------

fn install_codex(
    hook: &HookCommand,
    path: &Path,
    current: Option<&str>,
) -> Result<Installed, HooksError> {
    let text = current.unwrap_or_default();
    let base = strip_codex_block(path, text)?;
    let table: toml::Table = base.parse().map_err(|e| invalid_toml(path, &e))?;
    let chained = codex_notify(&base).map_err(|reason| settings_error(path, reason))?;
    let mut lines: Vec<String> = base.split_inclusive('\n').map(str::to_owned).collect();
    let header = first_header(&lines);
    if table.contains_key("notify") {
        let at = lines[..header]
            .iter()
            .position(|line| is_notify_line(line))
            .ok_or_else(|| {
                settings_error(
                    path,
                    "clippy cannot find the line of its top-level `notify`; write it as one \
                     line `notify = [\"program\", \"arg\"]` and run again",
                )
            })?;
        let alone = lines[at].parse::<toml::Table>();
        if !alone.is_ok_and(|t| t.contains_key("notify")) {
            return Err(settings_error(
                path,
                "its `notify` spans several lines; put it on one line (clippy comments it out \
                 and runs it after its own hook) and run again",
            ));
        }
        lines[at].insert_str(0, CHAINED_PREFIX);
    }
    let argv = codex_notify_argv(hook, chained.as_deref());
    let array = toml_array(&argv);
    let block = format!("{BLOCK_BEGIN}\n{BLOCK_NOTE}\nnotify = {array}\n{BLOCK_END}\n");
    // A comment right above the first table is that table's: the block goes above it.
    let mut at = header;
    while at > 0 && at < lines.len() && {
        let line = lines[at - 1].trim_start();
        line.starts_with('#') && !line.starts_with(CHAINED_PREFIX.trim_start())
    } {
        at -= 1;
    }
    if at == lines.len()
        && let Some(last) = lines.last_mut()
        && !last.ends_with('\n')
    {
        last.push('\n');
    }
    lines.insert(at, block);
    let new = lines.concat();
    // What Codex will read: clippy's hook, nothing else, or the file is not touched.
    let check = codex_notify(&new).map_err(|reason| {
        settings_error(path, format!("clippy's block would break it ({reason})"))
    })?;
    if check.as_ref() != Some(&argv) {
        return Err(settings_error(
            path,
            "clippy's block would not be the `notify` Codex reads; add it by hand",
        ));
    }
    Ok(Installed {
        edit: if current == Some(new.as_str()) {
            Edit::Unchanged
        } else {
            Edit::Write(new)
        },
        chained,
    })
}

/// `text` without clippy's block, and with the user's `notify` lines it commented out back.
fn strip_codex_block(path: &Path, text: &str) -> Result<String, HooksError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let is = |line: &str, marker: &str| line.trim_end() == marker;
    let mut out = String::with_capacity(text.len());
    let mut inside: Option<usize> = None;
    for (n, line) in lines.iter().enumerate() {
        match inside {
            None if is(line, BLOCK_BEGIN) => inside = Some(n),
            None if is(line, BLOCK_END) => {
                return Err(settings_error(
                    path,
                    format!(
                        "line {}: `{BLOCK_END}` without its `{BLOCK_BEGIN}`; remove it by hand",
                        n + 1
                    ),
                ));
            }
            None => out.push_str(line.strip_prefix(CHAINED_PREFIX).unwrap_or(line)),
            Some(_) if is(line, BLOCK_END) => inside = None,
            Some(_) => {}
        }
    }
    if let Some(begin) = inside {
        return Err(settings_error(
            path,
            format!(
                "line {}: clippy's block has no end line `{BLOCK_END}`; remove it by hand",
                begin + 1
            ),
        ));
    }
    Ok(out)
}

/// The index of the first `[table]` or `[[array]]` header line (`lines.len()` when none): the
/// first line opening with `[` that all lines before it parse as a whole TOML document, so a
/// line of a multi-line array or string is not taken for one.
fn first_header(lines: &[String]) -> usize {
    let mut before = String::new();
    for (n, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with('[') && before.parse::<toml::Table>().is_ok() {
            return n;
        }
        before.push_str(line);
    }
    lines.len()
}

/// Whether `line` sets the top-level key `notify`.
fn is_notify_line(line: &str) -> bool {
    let line = line.trim_start();
    ["notify", "\"notify\"", "'notify'"].iter().any(|key| {
        line.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook() -> HookCommand {
        HookCommand {
            program: PathBuf::from("/opt/clippy/clippy-ctl"),
            args: vec!["hook".into()],
        }
    }

    fn path() -> &'static Path {
        Path::new("/home/u/settings")
    }

    fn written(edit: Edit) -> String {
        match edit {
            Edit::Write(text) => text,
            other => panic!("expected a write, got {other:?}"),
        }
    }

    fn installed(agent: Agent, current: Option<&str>) -> String {
        written(
            install(agent, &hook(), path(), current)
                .expect("installs")
                .edit,
        )
    }

    const CLAUDE_USER: &str = r#"{
  "model": "opus",
  "hooks": {
    "Stop": [
      { "hooks": [ { "type": "command", "command": "notify-send done" } ] }
    ]
  },
  "env": { "A": "1" },
  "permissions": { "allow": ["Bash(ls:*)"] }
}"#;

    #[test]
    fn claude_hooks_are_appended_after_the_users_own_in_their_order() {
        let text = installed(Agent::Claude, Some(CLAUDE_USER));
        let keys: Vec<usize> = ["\"model\"", "\"hooks\"", "\"env\"", "\"permissions\""]
            .iter()
            .map(|key| text.find(key).expect("key kept"))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "order kept: {text}");
        let value: Value = serde_json::from_str(&text).expect("json");
        let stop = value["hooks"]["Stop"].as_array().expect("Stop");
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0]["hooks"][0]["command"], "notify-send done");
        assert_eq!(
            stop[1]["hooks"][0]["command"],
            "/opt/clippy/clippy-ctl hook claude # clippy-hooks"
        );
        for event in ["StopFailure", "PermissionRequest", "Notification"] {
            assert_eq!(
                value["hooks"][event].as_array().map(Vec::len),
                Some(1),
                "{event}"
            );
        }
        assert_eq!(
            value["hooks"]["Notification"][0]["matcher"],
            "permission_prompt|elicitation_dialog"
        );
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn installing_twice_changes_nothing_and_a_moved_program_is_replaced() {
        for (agent, user) in [
            (Agent::Claude, Some(CLAUDE_USER)),
            (Agent::Gemini, None),
            (Agent::Codex, Some("model = \"o3\"\n")),
            (Agent::Codex, None),
        ] {
            let once = installed(agent, user);
            let again = install(agent, &hook(), path(), Some(&once)).expect("installs");
            assert_eq!(again.edit, Edit::Unchanged, "{agent}");
            let moved = HookCommand {
                program: PathBuf::from("/usr/bin/clippy-ctl"),
                args: vec!["hook".into()],
            };
            let replaced = written(
                install(agent, &moved, path(), Some(&once))
                    .expect("installs")
                    .edit,
            );
            assert!(!replaced.contains("/opt/clippy"), "{agent}: {replaced}");
            assert!(is_installed(agent, path(), &replaced).expect("reads"));
            let back = written(
                install(agent, &hook(), path(), Some(&replaced))
                    .expect("installs")
                    .edit,
            );
            assert_eq!(back, once, "{agent}");
        }
    }

    #[test]
    fn uninstall_gives_back_the_file_byte_for_byte() {
        let odd = "{\"model\":\"opus\",   \"hooks\": {\"Stop\": []}}";
        for (agent, user) in [
            (Agent::Claude, CLAUDE_USER),
            (Agent::Claude, odd),
            (Agent::Gemini, "{\"ui\": {\"theme\": \"GitHub\"}}\n"),
            (Agent::Gemini, ""),
            (
                Agent::Codex,
                "model = \"o3\"\n\n# profiles\n[profiles.fast]\nmodel = \"mini\"\n",
            ),
            (Agent::Codex, "model = \"o3\""),
            (
                Agent::Codex,
                "notify = [\"notify-send\", \"Codex\"] # mine\n[tui]\n",
            ),
        ] {
            let on = installed(agent, Some(user));
            assert!(
                is_installed(agent, path(), &on).expect("reads"),
                "{agent}: {on}"
            );
            let off = uninstall(agent, path(), Some(&on), Some(user)).expect("uninstalls");
            assert_eq!(off.edit, Edit::Write(user.to_owned()), "{agent}: {on}");
            assert!(off.restored);
        }
    }

    #[test]
    fn a_file_clippy_created_is_removed_again() {
        for agent in Agent::ALL {
            let on = installed(agent, None);
            let off = uninstall(agent, path(), Some(&on), None).expect("uninstalls");
            assert_eq!(off.edit, Edit::Remove, "{agent}");
        }
    }

    #[test]
    fn uninstall_keeps_what_the_user_changed_since() {
        let on = installed(Agent::Claude, Some(CLAUDE_USER));
        let mut value: Value = serde_json::from_str(&on).expect("json");
        value["model"] = "sonnet".into();
        value["hooks"]["Stop"][0]["hooks"]
            .as_array_mut()
            .expect("array")
            .push(serde_json::json!({"type": "command", "command": "say hi"}));
        let edited = serde_json::to_string_pretty(&value).expect("json");
        let off = uninstall(Agent::Claude, path(), Some(&edited), Some(CLAUDE_USER)).expect("ok");
        assert!(!off.restored);
        let left: Value = serde_json::from_str(&written(off.edit)).expect("json");
        assert_eq!(left["model"], "sonnet");
        let stop = left["hooks"]["Stop"].as_array().expect("Stop");
        assert_eq!(stop.len(), 1, "{left}");
        assert_eq!(stop[0]["hooks"].as_array().map(Vec::len), Some(2));
        assert!(left["hooks"].get("UserPromptSubmit").is_none(), "{left}");
        assert!(!left.to_string().contains(MARKER));

        let codex = "model = \"o3\"\n[tui]\n";
        let on = installed(Agent::Codex, Some(codex));
        let edited = format!("# my note\n{on}");
        let off = uninstall(Agent::Codex, path(), Some(&edited), Some(codex)).expect("ok");
        assert_eq!(off.edit, Edit::Write(format!("# my note\n{codex}")));
        assert!(!off.restored);
    }

    #[test]
    fn nothing_to_uninstall_is_no_change() {
        for (agent, text) in [
            (Agent::Claude, CLAUDE_USER),
            (Agent::Gemini, "{}"),
            (Agent::Codex, "model = \"o3\"\n"),
        ] {
            let off = uninstall(agent, path(), Some(text), Some(text)).expect("ok");
            assert_eq!(off.edit, Edit::Unchanged, "{agent}");
            assert!(!is_installed(agent, path(), text).expect("reads"));
        }
        let none = uninstall(Agent::Codex, path(), None, None).expect("ok");
        assert_eq!(none.edit, Edit::Unchanged);
    }

    #[test]
    fn files_clippy_cannot_read_back_are_refused_with_their_name() {
        for (agent, text) in [
            (Agent::Claude, "// mine\n{}"),
            (Agent::Claude, "{\"hooks\": {\"Stop\": []},}"),
            (Agent::Gemini, "[1, 2]"),
            (Agent::Gemini, "{\"hooks\": []}"),
            (Agent::Gemini, "{\"hooks\": {\"AfterAgent\": {}}}"),
            (Agent::Codex, "model = "),
            (Agent::Codex, "notify = [\n  \"notify-send\",\n]\n"),
            (Agent::Codex, "notify = \"notify-send\"\n"),
            (Agent::Codex, "# >>> clippy hooks >>>\nnotify = []\n"),
            (Agent::Codex, "a = 1\n# <<< clippy hooks <<<\n"),
        ] {
            let err = install(agent, &hook(), path(), Some(text)).expect_err(text);
            assert!(err.to_string().starts_with("/home/u/settings: "), "{err}");
        }
    }

    #[test]
    fn codex_block_goes_before_the_first_table_and_chains_the_users_notify() {
        let user = "model = \"o3\"\nnotify = [\"notify-send\", \"Codex\"]\nlist = [\n  [1, 2],\n]\n\n# the fast one\n[profiles.fast]\nmodel = \"mini\"\n";
        let done = install(Agent::Codex, &hook(), path(), Some(user)).expect("installs");
        assert_eq!(
            done.chained,
            Some(vec!["notify-send".to_owned(), "Codex".to_owned()])
        );
        let text = written(done.edit);
        assert_eq!(
            text,
            "model = \"o3\"\n\
             # clippy-hooks chained: notify = [\"notify-send\", \"Codex\"]\n\
             list = [\n  [1, 2],\n]\n\n\
             # >>> clippy hooks >>>\n\
             # Added by `clippy-ctl hooks install codex`; `clippy-ctl hooks uninstall codex` removes it.\n\
             notify = [\"/opt/clippy/clippy-ctl\", \"hook\", \"codex\", \"--chain\", \"[\\\"notify-send\\\",\\\"Codex\\\"]\"]\n\
             # <<< clippy hooks <<<\n\
             # the fast one\n[profiles.fast]\nmodel = \"mini\"\n"
        );
        assert_eq!(
            codex_notify(&text).expect("toml"),
            Some(vec![
                "/opt/clippy/clippy-ctl".to_owned(),
                "hook".into(),
                "codex".into(),
                "--chain".into(),
                r#"["notify-send","Codex"]"#.into(),
            ])
        );
        let off = uninstall(Agent::Codex, path(), Some(&text), None).expect("ok");
        assert_eq!(off.edit, Edit::Write(user.to_owned()));
    }

    #[test]
    fn an_empty_codex_notify_is_commented_out_but_not_chained() {
        let done = install(Agent::Codex, &hook(), path(), Some("notify = []\n")).expect("ok");
        assert_eq!(done.chained, None);
        let text = written(done.edit);
        assert!(
            text.starts_with("# clippy-hooks chained: notify = []\n"),
            "{text}"
        );
    }

    #[test]
    fn settings_paths_follow_the_agents_overrides() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let home = env(&[("HOME", "/h")]);
        let over = env(&[
            ("HOME", "/h"),
            ("CLAUDE_CONFIG_DIR", "/c"),
            ("CODEX_HOME", "/x"),
            ("GEMINI_CLI_HOME", "/g"),
        ]);
        let empty = env(&[("HOME", "/h"), ("CODEX_HOME", "")]);
        let nothing = env(&[]);
        let at = |agent, env: &dyn Fn(&str) -> Option<OsString>| settings_path(agent, env);
        assert_eq!(
            at(Agent::Claude, &home),
            Some("/h/.claude/settings.json".into())
        );
        assert_eq!(
            at(Agent::Gemini, &home),
            Some("/h/.gemini/settings.json".into())
        );
        assert_eq!(at(Agent::Claude, &over), Some("/c/settings.json".into()));
        assert_eq!(at(Agent::Codex, &over), Some("/x/config.toml".into()));
        assert_eq!(
            at(Agent::Gemini, &over),
            Some("/g/.gemini/settings.json".into())
        );
        assert_eq!(
            at(Agent::Codex, &empty),
            Some("/h/.codex/config.toml".into())
        );
        assert_eq!(at(Agent::Codex, &nothing), None);
    }

    #[test]
    fn json_keeps_numbers_strings_and_duplicate_free_order() {
        let text = "{\"z\": 1.5, \"a\": [true, null, -3, \"é\\n\"], \"m\": {}}";
        let value: Json = serde_json::from_str(text).expect("json");
        assert_eq!(
            json_text(&value),
            "{\n  \"z\": 1.5,\n  \"a\": [\n    true,\n    null,\n    -3,\n    \"é\\n\"\n  ],\n  \"m\": {}\n}\n"
        );
    }
}
