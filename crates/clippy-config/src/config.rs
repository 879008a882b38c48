//! The typed, validated configuration and its defaults.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::ConfigError;
use crate::layers::{Layer, LayerKind, Layers, SearchPaths};
use crate::schema::Partial;

/// Default `broker.ring_depth`: turns kept per session.
pub const DEFAULT_RING_DEPTH: usize = 32;
/// Default `broker.max_turn_bytes` and `session.max_turn_bytes`: 4 MiB per turn.
pub const DEFAULT_MAX_TURN_BYTES: usize = 4 * 1024 * 1024;
/// The largest `max_turn_bytes` accepted: a turn's byte length is a `u32` in the registry.
pub const MAX_TURN_BYTES_LIMIT: usize = u32::MAX as usize;
/// Built-in `session.presets`: command file name → turn-detection preset name.
pub const DEFAULT_PRESETS: &[(&str, &str)] = &[
    ("aider", "aider"),
    ("bash", "shell"),
    ("claude", "claude"),
    ("codex", "codex"),
    ("fish", "fish"),
    ("gemini", "gemini"),
    ("python", "python"),
    ("python3", "python"),
    ("sh", "shell"),
    ("sqlite3", "sqlite"),
    ("zsh", "shell"),
];

/// The whole configuration, after merging every layer over the defaults.
///
/// `Default` is the built-in configuration (what you get with no file at all). The structs are
/// `#[non_exhaustive]` so that new keys are not breaking changes: start from
/// [`Config::default`] and assign fields.
///
/// ```
/// use std::ffi::OsStr;
/// use std::path::Path;
/// use clippy_config::{Config, OutputFormat};
///
/// let env = |name: &str| (name == "FMT").then(|| "text".to_owned());
/// let config = Config::from_toml(
///     "[broker]\nring_depth = 8\n[ctl]\nformat = \"${FMT}\"\n[session.presets]\nipython = \"python\"\n",
///     Path::new("inline.toml"),
///     &env,
/// )?;
/// assert_eq!(config.broker.ring_depth, 8);
/// assert_eq!(config.broker.max_turn_bytes, 4 << 20); // default kept
/// assert_eq!(config.ctl.format, OutputFormat::Text);
/// assert_eq!(config.preset_for_command(OsStr::new("/usr/bin/ipython")), Some("python"));
/// assert_eq!(config.preset_for_command(OsStr::new("claude")), Some("claude")); // built-in kept
/// # Ok::<(), clippy_config::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Config {
    /// `[broker]`: the per-user daemon.
    pub broker: BrokerConfig,
    /// `[session]`: the wrapper, `clippy-session`.
    pub session: SessionConfig,
    /// `[ctl]`: the command-line client, `clippy-ctl`.
    pub ctl: CtlConfig,
    /// `[desktop]`: which desktop integration `clippy-ctl` uses.
    pub desktop: DesktopConfig,
    /// `[hotkeys]`: the key bindings of `clippy-ctl hotkeys` (and `tmux-bindings`).
    pub hotkeys: HotkeysConfig,
    /// `[mcp]`: the MCP server, `clippy-mcp`.
    pub mcp: McpConfig,
    /// `[history]`: the broker's store of turns and events.
    pub history: HistoryConfig,
}

/// `[history]` settings: the broker's durable store of turns and events
/// (`$XDG_STATE_HOME/clippy/`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryConfig {
    /// Whether the broker stores every completed turn and event. Default true.
    pub enabled: bool,
    /// Turns and events older than this many days are deleted in the background; 0 keeps
    /// them for ever. Default [`DEFAULT_HISTORY_MAX_AGE_DAYS`].
    pub max_age_days: u64,
    /// The store is kept under this many bytes, oldest turns deleted first; 0: no limit.
    /// Default [`DEFAULT_HISTORY_MAX_BYTES`].
    pub max_bytes: u64,
}

/// Default `history.max_age_days`: 90.
pub const DEFAULT_HISTORY_MAX_AGE_DAYS: u64 = 90;
/// Default `history.max_bytes`: 1 GiB.
pub const DEFAULT_HISTORY_MAX_BYTES: u64 = 1024 * 1024 * 1024;

impl Default for HistoryConfig {
    fn default() -> HistoryConfig {
        HistoryConfig {
            enabled: true,
            max_age_days: DEFAULT_HISTORY_MAX_AGE_DAYS,
            max_bytes: DEFAULT_HISTORY_MAX_BYTES,
        }
    }
}

/// `[mcp]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpConfig {
    /// The most content bytes one tool result carries (a turn's text, spool data, `exec`
    /// output, screen lines); past it the result says it was cut and how to read on. From
    /// [`MIN_REPLY_BYTES`] to [`MAX_REPLY_BYTES_LIMIT`]. Default [`DEFAULT_MAX_REPLY_BYTES`].
    pub max_reply_bytes: usize,
}

/// Default `mcp.max_reply_bytes`: 64 KiB, about 16,000 tokens, within what agents accept from
/// one tool call.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 64 * 1024;
/// The least `mcp.max_reply_bytes`.
pub const MIN_REPLY_BYTES: usize = 1024;
/// The most `mcp.max_reply_bytes`: 8 MiB.
pub const MAX_REPLY_BYTES_LIMIT: usize = 8 * 1024 * 1024;

impl Default for McpConfig {
    fn default() -> McpConfig {
        McpConfig {
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
        }
    }
}

/// `[desktop]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DesktopConfig {
    /// Which focus resolver, hotkey and clipboard adapters: `"detect"` (default: tmux when
    /// `$TMUX` is set, else X11 when `$DISPLAY` is set), `"x11"` or `"tmux"`.
    pub resolver: String,
}

impl Default for DesktopConfig {
    fn default() -> DesktopConfig {
        DesktopConfig {
            resolver: "detect".to_owned(),
        }
    }
}

/// `[hotkeys]` settings: a binding per action, like `"super+shift+c"`; `None` (or `""` in a
/// file) is no binding. The syntax is checked by `clippy-ctl`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HotkeysConfig {
    /// Capture the focused session's latest turn. Default `"super+shift+c"`.
    pub capture: Option<String>,
    /// Paste the relay buffer into the focused session. Default `"super+shift+v"`.
    pub paste: Option<String>,
    /// Deliver the relay buffer to the clipboard. Default none.
    pub deliver_clipboard: Option<String>,
    /// Capture the focused session's latest turn and copy it to the clipboard. Default none.
    pub capture_and_copy: Option<String>,
}

impl Default for HotkeysConfig {
    fn default() -> HotkeysConfig {
        HotkeysConfig {
            capture: Some("super+shift+c".to_owned()),
            paste: Some("super+shift+v".to_owned()),
            deliver_clipboard: None,
            capture_and_copy: None,
        }
    }
}

/// `[broker]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrokerConfig {
    /// Turns kept per session; older ones are evicted. At least 1. Default 32.
    pub ring_depth: usize,
    /// Content bytes the broker keeps per turn; longer turns are cut and marked truncated.
    /// From 1 to [`MAX_TURN_BYTES_LIMIT`]. Default 4 MiB.
    pub max_turn_bytes: usize,
    /// Milliseconds between text and the Enter that submits it, written on its own (a route's
    /// pasted handoff, `send` with `enter`, `exec`). 0 to 10000. Default 150.
    pub submit_delay_ms: u64,
    /// Events kept for late subscribers (`clippy-ctl events --since`). At least 1. Default 4096.
    pub event_history: usize,
}

/// Default `broker.submit_delay_ms`.
pub const DEFAULT_SUBMIT_DELAY_MS: u64 = 150;
/// Default `broker.event_history`.
pub const DEFAULT_EVENT_HISTORY: usize = 4096;

impl Default for BrokerConfig {
    fn default() -> BrokerConfig {
        BrokerConfig {
            ring_depth: DEFAULT_RING_DEPTH,
            max_turn_bytes: DEFAULT_MAX_TURN_BYTES,
            submit_delay_ms: DEFAULT_SUBMIT_DELAY_MS,
            event_history: DEFAULT_EVENT_HISTORY,
        }
    }
}

/// `[session]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionConfig {
    /// Content bytes the wrapper sends per turn. From 1 to [`MAX_TURN_BYTES_LIMIT`]. Default 4 MiB.
    pub max_turn_bytes: usize,
    /// Default preset per command file name (`python3` → `python`): [`DEFAULT_PRESETS`] with
    /// every layer's `[session.presets]` merged over it key by key. An entry set to `""` in a
    /// file removes the mapping, so it never appears here.
    pub presets: BTreeMap<String, String>,
    /// Whether `clippy-session` wires a known agent's own hooks (Claude Code, Codex, Gemini
    /// CLI) for each run, so turns end at the agent's word (CONTRACTS/HOOKS.md). Default true.
    pub agent_hooks: bool,
}

impl Default for SessionConfig {
    fn default() -> SessionConfig {
        SessionConfig {
            max_turn_bytes: DEFAULT_MAX_TURN_BYTES,
            agent_hooks: true,
            presets: DEFAULT_PRESETS
                .iter()
                .map(|&(command, preset)| (command.to_owned(), preset.to_owned()))
                .collect(),
        }
    }
}

/// `[ctl]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CtlConfig {
    /// Default output format of `get-turn`, `paste` and `deliver`. Default [`OutputFormat::Raw`].
    pub format: OutputFormat,
    /// The key that detaches `clippy-ctl attach`, as tmux writes keys: one key or a prefix
    /// and a key (`"C-\\ d"`, `"C-]"`). Default `"C-\\ d"` (Ctrl+\ then d). The syntax is
    /// checked by `clippy-ctl`.
    pub detach_key: String,
}

impl Default for CtlConfig {
    fn default() -> CtlConfig {
        CtlConfig {
            format: OutputFormat::default(),
            detach_key: "C-\\ d".to_owned(),
        }
    }
}

/// How `clippy-ctl` renders turn content by default (`ctl.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OutputFormat {
    /// The raw bytes, escapes included, byte-exact: `"raw"`.
    #[default]
    Raw,
    /// The text a person saw (the rendered view), UTF-8: `"text"`.
    Text,
}

impl OutputFormat {
    /// Every format, in the order the documentation lists them.
    pub const ALL: [OutputFormat; 2] = [OutputFormat::Raw, OutputFormat::Text];

    /// The name used in configuration files: `raw` or `text`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Raw => "raw",
            OutputFormat::Text => "text",
        }
    }

    /// The format with that configuration name, if any (exact, lowercase).
    pub fn from_name(name: &str) -> Option<OutputFormat> {
        OutputFormat::ALL
            .into_iter()
            .find(|format| format.as_str() == name)
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Config {
    /// Loads the configuration the way the binaries do: the layers found from `explicit`
    /// (`--config`), the current directory and the process environment (see [`SearchPaths::new`]),
    /// merged over the defaults, with `${VAR}` expanded from the process environment.
    ///
    /// Returns the configuration and the paths of the layers used, highest precedence first.
    /// A `./clippy.toml` recognised as Rust Clippy's lint configuration is not among them
    /// (see [`Layers::skipped`]).
    ///
    /// ```no_run
    /// use std::path::Path;
    /// use clippy_config::Config;
    ///
    /// let (config, used) = Config::load(Some(Path::new("my-clippy.toml")))?;
    /// assert_eq!(used.first().map(|p| p.ends_with("my-clippy.toml")), Some(true));
    /// println!("ring depth {}", config.broker.ring_depth);
    /// # Ok::<(), clippy_config::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// Any [`ConfigError`]: a missing `--config` file, an unreadable or invalid layer, an
    /// unknown key, a wrong type, an invalid value, an unset `${VAR}`.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Vec<PathBuf>), ConfigError> {
        let env = |name: &str| std::env::var(name).ok();
        // Without a working directory (it was deleted) `./clippy.toml` cannot exist anyway.
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Config::load_from(&SearchPaths::new(explicit, &cwd, &env), &env)
    }

    /// Like [`Config::load`], with the search paths and the environment given: what tests and
    /// embedders use to stay independent of the real environment and `/etc`.
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn load_from(
        paths: &SearchPaths,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(Config, Vec<PathBuf>), ConfigError> {
        let layers = Layers::discover(paths)?;
        let config = layers.resolve(env)?;
        Ok((config, layers.paths()))
    }

    /// Parses one TOML document as a single layer over the defaults; `origin` is the path
    /// errors name. Useful for tests and for configuration that does not come from a file.
    ///
    /// # Errors
    /// As for a layer file: invalid TOML, unknown key, wrong type, invalid value, unset `${VAR}`.
    pub fn from_toml(
        text: &str,
        origin: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        Layers::new(vec![Layer::parse(LayerKind::Explicit, origin, text)?]).resolve(env)
    }

    /// The default preset for a command, by its file name: `/usr/bin/python3` → `python`.
    /// `None` when the command has no mapping (or its name is not UTF-8): the caller then uses
    /// its own default (`generic`).
    ///
    /// ```
    /// use std::ffi::OsStr;
    /// use clippy_config::Config;
    ///
    /// let config = Config::default();
    /// assert_eq!(config.preset_for_command(OsStr::new("/usr/bin/python3")), Some("python"));
    /// assert_eq!(config.preset_for_command(OsStr::new("zsh")), Some("shell"));
    /// assert_eq!(config.preset_for_command(OsStr::new("vim")), None);
    /// ```
    pub fn preset_for_command(&self, program: &OsStr) -> Option<&str> {
        let name = Path::new(program).file_name()?.to_str()?;
        self.session
            .presets
            .get(name)
            .map(String::as_str)
            .filter(|preset| !preset.is_empty())
    }

    /// Applies one validated layer over `self` (a higher layer over the lower ones).
    pub(crate) fn apply(&mut self, partial: Partial) {
        let Partial {
            broker_ring_depth,
            broker_max_turn_bytes,
            broker_submit_delay_ms,
            broker_event_history,
            session_max_turn_bytes,
            session_presets,
            session_agent_hooks,
            ctl_format,
            ctl_detach_key,
            desktop_resolver,
            hotkeys,
            mcp_max_reply_bytes,
            history_enabled,
            history_max_age_days,
            history_max_bytes,
        } = partial;
        if let Some(value) = history_enabled {
            self.history.enabled = value;
        }
        if let Some(value) = history_max_age_days {
            self.history.max_age_days = value as u64;
        }
        if let Some(value) = history_max_bytes {
            self.history.max_bytes = value as u64;
        }
        if let Some(value) = mcp_max_reply_bytes {
            self.mcp.max_reply_bytes = value;
        }
        if let Some(value) = broker_ring_depth {
            self.broker.ring_depth = value;
        }
        if let Some(value) = broker_submit_delay_ms {
            self.broker.submit_delay_ms = value as u64;
        }
        if let Some(value) = broker_event_history {
            self.broker.event_history = value;
        }
        if let Some(value) = broker_max_turn_bytes {
            self.broker.max_turn_bytes = value;
        }
        if let Some(value) = session_max_turn_bytes {
            self.session.max_turn_bytes = value;
        }
        if let Some(value) = session_agent_hooks {
            self.session.agent_hooks = value;
        }
        // Key by key: a layer's `[session.presets]` adds or replaces entries, never the map.
        self.session.presets.extend(session_presets);
        if let Some(value) = ctl_format {
            self.ctl.format = value;
        }
        if let Some(value) = ctl_detach_key {
            self.ctl.detach_key = value;
        }
        if let Some(value) = desktop_resolver {
            self.desktop.resolver = value;
        }
        for (action, binding) in hotkeys {
            let binding = Some(binding).filter(|b| !b.is_empty());
            match action.as_str() {
                "capture" => self.hotkeys.capture = binding,
                "paste" => self.hotkeys.paste = binding,
                "deliver_clipboard" => self.hotkeys.deliver_clipboard = binding,
                _ => self.hotkeys.capture_and_copy = binding,
            }
        }
    }

    /// Drops preset mappings set to `""` (how a layer removes a built-in one).
    pub(crate) fn finish(&mut self) {
        self.session.presets.retain(|_, preset| !preset.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones() {
        let config = Config::default();
        assert_eq!(config.broker.ring_depth, 32);
        assert_eq!(config.broker.max_turn_bytes, 4_194_304);
        assert_eq!(config.session.max_turn_bytes, 4_194_304);
        assert_eq!(config.ctl.format, OutputFormat::Raw);
        assert_eq!(config.desktop.resolver, "detect");
        assert_eq!(config.hotkeys.capture.as_deref(), Some("super+shift+c"));
        assert_eq!(config.hotkeys.paste.as_deref(), Some("super+shift+v"));
        assert_eq!(config.hotkeys.deliver_clipboard, None);
        assert_eq!(config.session.presets.len(), DEFAULT_PRESETS.len());
        assert_eq!(
            config.session.presets.get("sqlite3").map(String::as_str),
            Some("sqlite")
        );
    }

    #[test]
    fn default_presets_are_sorted_and_unique() {
        assert!(DEFAULT_PRESETS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn output_format_names_round_trip() {
        for format in OutputFormat::ALL {
            assert_eq!(OutputFormat::from_name(format.as_str()), Some(format));
            assert_eq!(format.to_string(), format.as_str());
        }
        assert_eq!(OutputFormat::from_name("RAW"), None);
    }

    #[test]
    fn preset_lookup_uses_the_file_name_only() {
        let config = Config::default();
        assert_eq!(
            config.preset_for_command(OsStr::new("/usr/bin/python3")),
            Some("python")
        );
        assert_eq!(
            config.preset_for_command(OsStr::new("./bin/claude")),
            Some("claude")
        );
        assert_eq!(config.preset_for_command(OsStr::new("bash")), Some("shell"));
        assert_eq!(config.preset_for_command(OsStr::new("/usr/bin/")), None);
        assert_eq!(config.preset_for_command(OsStr::new("")), None);
        assert_eq!(config.preset_for_command(OsStr::new("python3.12")), None);
    }

    #[test]
    fn empty_preset_means_no_mapping() {
        let mut config = Config::default();
        config.session.presets.insert("bash".into(), String::new());
        assert_eq!(config.preset_for_command(OsStr::new("bash")), None);
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_command_has_no_preset() {
        use std::os::unix::ffi::OsStrExt;
        let config = Config::default();
        assert_eq!(
            config.preset_for_command(OsStr::from_bytes(b"/usr/bin/py\xff")),
            None
        );
    }
}
