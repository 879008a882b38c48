//! Checking one layer against the schema: every key known, every type right, every value in
//! range, every string expanded. The result holds only what the layer sets.
//!
//! The walk is written out by hand rather than derived with serde so that every error names the
//! key in full (`session.presets.python3`) and the layer, and so that `${VAR}` expansion happens
//! per string with that same context.

use std::collections::BTreeMap;
use std::path::Path;

use toml::{Table, Value};

use crate::ConfigError;
use crate::config::{MAX_REPLY_BYTES_LIMIT, MAX_TURN_BYTES_LIMIT, MIN_REPLY_BYTES, OutputFormat};
use crate::expand::{ExpandError, expand};

const TOP_KEYS: &[&str] = &[
    "broker", "session", "ctl", "desktop", "hotkeys", "mcp", "history",
];
const BROKER_KEYS: &[&str] = &[
    "ring_depth",
    "max_turn_bytes",
    "submit_delay_ms",
    "event_history",
];
const SESSION_KEYS: &[&str] = &["max_turn_bytes", "presets", "agent_hooks"];
const CTL_KEYS: &[&str] = &["format", "detach_key"];
const DESKTOP_KEYS: &[&str] = &["resolver"];
const MCP_KEYS: &[&str] = &["max_reply_bytes"];
const HISTORY_KEYS: &[&str] = &["enabled", "max_age_days", "max_bytes"];
const HOTKEY_KEYS: &[&str] = &["capture", "paste", "deliver_clipboard", "capture_and_copy"];
/// The values of `desktop.resolver`.
pub(crate) const RESOLVERS: &[&str] = &["detect", "x11", "tmux"];

/// What one layer sets.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Partial {
    pub(crate) broker_ring_depth: Option<usize>,
    pub(crate) broker_max_turn_bytes: Option<usize>,
    pub(crate) broker_submit_delay_ms: Option<usize>,
    pub(crate) broker_event_history: Option<usize>,
    pub(crate) session_max_turn_bytes: Option<usize>,
    /// Entries to merge over the lower layers' map; `""` removes a mapping.
    pub(crate) session_presets: BTreeMap<String, String>,
    pub(crate) session_agent_hooks: Option<bool>,
    pub(crate) ctl_format: Option<OutputFormat>,
    pub(crate) ctl_detach_key: Option<String>,
    pub(crate) desktop_resolver: Option<String>,
    /// `[hotkeys]` entries set by this layer: action name → binding (`""`: no binding).
    pub(crate) hotkeys: BTreeMap<String, String>,
    pub(crate) mcp_max_reply_bytes: Option<usize>,
    pub(crate) history_enabled: Option<bool>,
    pub(crate) history_max_age_days: Option<usize>,
    pub(crate) history_max_bytes: Option<usize>,
}

/// Checks the layer at `layer` (its parsed `table`).
pub(crate) fn read(
    table: &Table,
    layer: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Partial, ConfigError> {
    let cx = Cx { layer, env };
    let mut partial = Partial::default();
    for (name, value) in table {
        match name.as_str() {
            "broker" => {
                for (name, value) in cx.table("broker", value)? {
                    let key = dotted("broker", name);
                    match name.as_str() {
                        "ring_depth" => {
                            partial.broker_ring_depth =
                                Some(cx.count(&key, value, 1, usize::MAX)?);
                        }
                        "max_turn_bytes" => {
                            partial.broker_max_turn_bytes =
                                Some(cx.count(&key, value, 1, MAX_TURN_BYTES_LIMIT)?);
                        }
                        "submit_delay_ms" => {
                            partial.broker_submit_delay_ms =
                                Some(cx.count(&key, value, 0, 10_000)?);
                        }
                        "event_history" => {
                            partial.broker_event_history =
                                Some(cx.count(&key, value, 1, 1_000_000)?);
                        }
                        _ => return Err(cx.unknown(key, BROKER_KEYS)),
                    }
                }
            }
            "session" => {
                for (name, value) in cx.table("session", value)? {
                    let key = dotted("session", name);
                    match name.as_str() {
                        "max_turn_bytes" => {
                            partial.session_max_turn_bytes =
                                Some(cx.count(&key, value, 1, MAX_TURN_BYTES_LIMIT)?);
                        }
                        "presets" => partial.session_presets = cx.presets(&key, value)?,
                        "agent_hooks" => {
                            let Value::Boolean(on) = *value else {
                                return Err(cx.wrong_type(&key, "true or false", value));
                            };
                            partial.session_agent_hooks = Some(on);
                        }
                        _ => return Err(cx.unknown(key, SESSION_KEYS)),
                    }
                }
            }
            "ctl" => {
                for (name, value) in cx.table("ctl", value)? {
                    let key = dotted("ctl", name);
                    match name.as_str() {
                        "format" => {
                            let format = cx.string(&key, value)?;
                            partial.ctl_format =
                                Some(OutputFormat::from_name(&format).ok_or_else(|| {
                                    cx.invalid(
                                        &key,
                                        format!(
                                            "must be one of {}, found {format:?}",
                                            OutputFormat::ALL.map(OutputFormat::as_str).join(", ")
                                        ),
                                    )
                                })?);
                        }
                        "detach_key" => {
                            partial.ctl_detach_key = Some(cx.string(&key, value)?);
                        }
                        _ => return Err(cx.unknown(key, CTL_KEYS)),
                    }
                }
            }
            "desktop" => {
                for (name, value) in cx.table("desktop", value)? {
                    let key = dotted("desktop", name);
                    match name.as_str() {
                        "resolver" => {
                            let resolver = cx.string(&key, value)?;
                            if !RESOLVERS.contains(&resolver.as_str()) {
                                return Err(cx.invalid(
                                    &key,
                                    format!(
                                        "must be one of {}, found {resolver:?}",
                                        RESOLVERS.join(", ")
                                    ),
                                ));
                            }
                            partial.desktop_resolver = Some(resolver);
                        }
                        _ => return Err(cx.unknown(key, DESKTOP_KEYS)),
                    }
                }
            }
            "hotkeys" => {
                for (name, value) in cx.table("hotkeys", value)? {
                    let key = dotted("hotkeys", name);
                    if !HOTKEY_KEYS.contains(&name.as_str()) {
                        return Err(cx.unknown(key, HOTKEY_KEYS));
                    }
                    // The binding's syntax is checked by its user (`clippy-ctl`), which knows keys.
                    partial
                        .hotkeys
                        .insert(name.clone(), cx.string(&key, value)?);
                }
            }
            "mcp" => {
                for (name, value) in cx.table("mcp", value)? {
                    let key = dotted("mcp", name);
                    match name.as_str() {
                        "max_reply_bytes" => {
                            partial.mcp_max_reply_bytes = Some(cx.count(
                                &key,
                                value,
                                MIN_REPLY_BYTES,
                                MAX_REPLY_BYTES_LIMIT,
                            )?);
                        }
                        _ => return Err(cx.unknown(key, MCP_KEYS)),
                    }
                }
            }
            "history" => {
                for (name, value) in cx.table("history", value)? {
                    let key = dotted("history", name);
                    match name.as_str() {
                        "enabled" => {
                            let Value::Boolean(on) = *value else {
                                return Err(cx.wrong_type(&key, "true or false", value));
                            };
                            partial.history_enabled = Some(on);
                        }
                        "max_age_days" => {
                            partial.history_max_age_days = Some(cx.count(&key, value, 0, 36_500)?);
                        }
                        "max_bytes" => {
                            partial.history_max_bytes =
                                Some(cx.count(&key, value, 0, usize::MAX)?);
                        }
                        _ => return Err(cx.unknown(key, HISTORY_KEYS)),
                    }
                }
            }
            _ => return Err(cx.unknown(dotted("", name), TOP_KEYS)),
        }
    }
    Ok(partial)
}

/// The context every check needs to name what it found.
struct Cx<'a> {
    layer: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Cx<'_> {
    fn table<'v>(&self, key: &str, value: &'v Value) -> Result<&'v Table, ConfigError> {
        value
            .as_table()
            .ok_or_else(|| self.wrong_type(key, "a table", value))
    }

    /// An integer in `min..=max`.
    fn count(
        &self,
        key: &str,
        value: &Value,
        min: usize,
        max: usize,
    ) -> Result<usize, ConfigError> {
        let Value::Integer(n) = *value else {
            return Err(self.wrong_type(key, "an integer", value));
        };
        match usize::try_from(n) {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ if max == usize::MAX => {
                Err(self.invalid(key, format!("must be at least {min}, found {n}")))
            }
            _ => Err(self.invalid(key, format!("must be between {min} and {max}, found {n}"))),
        }
    }

    /// A string, `${VAR}` expanded.
    fn string(&self, key: &str, value: &Value) -> Result<String, ConfigError> {
        let text = value
            .as_str()
            .ok_or_else(|| self.wrong_type(key, "a string", value))?;
        expand(text, self.env).map_err(|err| match err {
            ExpandError::Unresolved(var) => ConfigError::UnresolvedVariable {
                var,
                layer: self.layer.to_owned(),
                key: key.to_owned(),
            },
            ExpandError::Malformed(problem) => ConfigError::BadPlaceholder {
                layer: self.layer.to_owned(),
                key: key.to_owned(),
                problem,
            },
        })
    }

    /// `session.presets`: command file name → preset name (`""` removes a mapping).
    fn presets(&self, key: &str, value: &Value) -> Result<BTreeMap<String, String>, ConfigError> {
        let mut presets = BTreeMap::new();
        for (command, preset) in self.table(key, value)? {
            let entry = dotted(key, command);
            if command.is_empty() || command.contains('/') || command.contains('\0') {
                return Err(self.invalid(
                    &entry,
                    "names a command by its file name (`python3`, not `/usr/bin/python3`), \
                     so the key cannot be empty or contain `/`"
                        .to_owned(),
                ));
            }
            presets.insert(command.clone(), self.string(&entry, preset)?);
        }
        Ok(presets)
    }

    fn wrong_type(&self, key: &str, expected: &'static str, found: &Value) -> ConfigError {
        ConfigError::WrongType {
            layer: self.layer.to_owned(),
            key: key.to_owned(),
            expected,
            found: found.type_str(),
        }
    }

    fn invalid(&self, key: &str, problem: String) -> ConfigError {
        ConfigError::InvalidValue {
            layer: self.layer.to_owned(),
            key: key.to_owned(),
            problem,
        }
    }

    fn unknown(&self, key: String, known: &[&'static str]) -> ConfigError {
        ConfigError::UnknownKey {
            layer: self.layer.to_owned(),
            key,
            known: known.to_vec(),
        }
    }
}

/// `prefix.name`, with `name` quoted as TOML would need it (`session.presets."python3.12"`).
fn dotted(prefix: &str, name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let name = if bare {
        name.to_owned()
    } else {
        format!("{name:?}")
    };
    if prefix.is_empty() {
        name
    } else {
        format!("{prefix}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str) -> Result<Partial, ConfigError> {
        let table: Table = text.parse().expect("valid TOML");
        read(&table, Path::new("t.toml"), &|name| {
            (name == "V").then(|| "text".to_owned())
        })
    }

    #[test]
    fn empty_layer_sets_nothing() {
        assert_eq!(read_str("").expect("ok"), Partial::default());
        assert_eq!(
            read_str("[broker]\n[session]\n[ctl]\n").expect("ok"),
            Partial::default()
        );
    }

    #[test]
    fn the_history_keys_are_read() {
        let partial = read_str("[history]\nenabled = false\nmax_age_days = 7\nmax_bytes = 1000\n")
            .expect("ok");
        assert_eq!(partial.history_enabled, Some(false));
        assert_eq!(partial.history_max_age_days, Some(7));
        assert_eq!(partial.history_max_bytes, Some(1000));
        for bad in [
            "enabled = 1",
            "max_age_days = -1",
            "max_age_days = 99999",
            "path = \"x\"",
        ] {
            let err = read_str(&format!("[history]\n{bad}\n")).expect_err(bad);
            assert!(err.to_string().contains("history."), "{err}");
        }
    }

    #[test]
    fn the_mcp_reply_limit_is_read_within_its_range() {
        let partial = read_str("[mcp]\nmax_reply_bytes = 4096\n").expect("ok");
        assert_eq!(partial.mcp_max_reply_bytes, Some(4096));
        for bad in [
            "max_reply_bytes = 10",
            "max_reply_bytes = 99999999",
            "reply = 1",
        ] {
            let err = read_str(&format!("[mcp]\n{bad}\n")).expect_err(bad);
            assert!(err.to_string().contains("mcp."), "{err}");
        }
    }

    #[test]
    fn every_key_is_read() {
        let partial = read_str(
            "[broker]\nring_depth = 3\nmax_turn_bytes = 10\n\
             [session]\nmax_turn_bytes = 20\npresets = { ipython = \"python\", bash = \"\" }\n\
             [ctl]\nformat = \"${V}\"\n",
        )
        .expect("ok");
        assert_eq!(partial.broker_ring_depth, Some(3));
        assert_eq!(partial.broker_max_turn_bytes, Some(10));
        assert_eq!(partial.session_max_turn_bytes, Some(20));
        assert_eq!(partial.session_presets.len(), 2);
        assert_eq!(partial.ctl_format, Some(OutputFormat::Text));
    }

    #[test]
    fn the_detach_key_is_read_as_written() {
        let partial = read_str("[ctl]\ndetach_key = \"C-\\\\ d\"\n").expect("ok");
        assert_eq!(partial.ctl_detach_key.as_deref(), Some("C-\\ d"));
        let err = read_str("[ctl]\ndetach_key = 3\n").expect_err("not a string");
        assert!(err.to_string().contains("ctl.detach_key"), "{err}");
    }

    #[test]
    fn desktop_and_hotkeys_are_read() {
        let partial = read_str(
            "[desktop]\nresolver = \"tmux\"\n\
             [hotkeys]\ncapture = \"ctrl+alt+c\"\npaste = \"\"\ncapture_and_copy = \"alt+F5\"\n",
        )
        .expect("ok");
        assert_eq!(partial.desktop_resolver.as_deref(), Some("tmux"));
        assert_eq!(partial.hotkeys.len(), 3);
        assert_eq!(partial.hotkeys["paste"], "");
        let err = read_str("[desktop]\nresolver = \"wayland\"\n").expect_err("unknown");
        assert!(
            err.to_string().ends_with(
                "`desktop.resolver` must be one of detect, x11, tmux, found \"wayland\""
            ),
            "{err}"
        );
        let err = read_str("[hotkeys]\ncopy = \"alt+c\"\n").expect_err("unknown");
        assert!(err.to_string().contains("hotkeys.copy"), "{err}");
    }

    #[test]
    fn dotted_keys_quote_when_needed() {
        assert_eq!(dotted("", "broker"), "broker");
        assert_eq!(
            dotted("session.presets", "python3"),
            "session.presets.python3"
        );
        assert_eq!(
            dotted("session.presets", "python3.12"),
            "session.presets.\"python3.12\""
        );
        assert_eq!(dotted("a", ""), "a.\"\"");
    }

    #[test]
    fn integer_bounds() {
        let err = read_str("[broker]\nring_depth = -1\n").expect_err("negative");
        assert!(
            err.to_string()
                .ends_with("`broker.ring_depth` must be at least 1, found -1"),
            "{err}"
        );
        let err = read_str("[session]\nmax_turn_bytes = 4294967296\n").expect_err("too big");
        assert!(
            err.to_string()
                .ends_with("must be between 1 and 4294967295, found 4294967296"),
            "{err}"
        );
        assert_eq!(
            read_str("[session]\nmax_turn_bytes = 4294967295\n")
                .expect("max")
                .session_max_turn_bytes,
            Some(4_294_967_295)
        );
    }

    #[test]
    fn section_of_wrong_type() {
        let err = read_str("broker = 5\n").expect_err("not a table");
        assert_eq!(
            err.to_string(),
            "t.toml: `broker` must be a table, found integer"
        );
        let err = read_str("[session]\npresets = [\"claude\"]\n").expect_err("not a table");
        assert_eq!(
            err.to_string(),
            "t.toml: `session.presets` must be a table, found array"
        );
    }

    #[test]
    fn preset_keys_must_be_file_names() {
        let err =
            read_str("[session.presets]\n\"/usr/bin/python3\" = \"python\"\n").expect_err("a path");
        assert!(
            err.to_string()
                .starts_with("t.toml: `session.presets.\"/usr/bin/python3\"` names a command"),
            "{err}"
        );
        let err = read_str("[session.presets]\nipython = 3\n").expect_err("not a string");
        assert_eq!(
            err.to_string(),
            "t.toml: `session.presets.ipython` must be a string, found integer"
        );
    }

    #[test]
    fn malformed_placeholder_names_layer_and_key() {
        let err = read_str("[ctl]\nformat = \"${V\"\n").expect_err("unterminated");
        assert!(matches!(err, ConfigError::BadPlaceholder { .. }));
        assert!(
            err.to_string()
                .starts_with("t.toml: `ctl.format` has a malformed placeholder"),
            "{err}"
        );
    }
}
