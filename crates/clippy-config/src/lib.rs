//! Configuration for clippy's binaries (`clippy-session`, `clippy-broker`, `clippy-ctl`,
//! `clippy-mcp`).
//!
//! Configuration is TOML, read from up to four layers, highest precedence first:
//!
//! 1. `--config FILE` (must exist),
//! 2. `./clippy.toml` in the working directory,
//! 3. `$XDG_CONFIG_HOME/clippy/config.toml` (or `$HOME/.config/clippy/config.toml`),
//! 4. `/etc/clippy/config.toml`.
//!
//! Implicit layers that do not exist are skipped. Layers merge key by key over the built-in
//! defaults: a higher layer's `broker.ring_depth` replaces a lower one's, tables merge (so
//! `[session.presets]` adds to the built-in map), arrays and scalars replace. `${VAR}` in a
//! string value expands from the environment, and `$$` is a literal `$`. Unknown keys, wrong
//! types, out-of-range values and unset variables are errors naming the layer's path and the key:
//! a typo is never silently ignored. `CONFIG.md` next to this crate documents every key.
//!
//! Why the search paths and the environment are parameters ([`SearchPaths`], `env: &dyn Fn`)
//! rather than read inside: tests (and embedders) must not depend on the real `$HOME` or
//! `/etc`. [`Config::load`] is the convenience that uses the real ones.
//!
//! ```
//! use std::ffi::OsStr;
//! use clippy_config::{Config, SearchPaths};
//!
//! # let dir = std::env::temp_dir().join(format!("clippy-config-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).expect("temp dir");
//! std::fs::write(dir.join("clippy.toml"), "[broker]\nring_depth = 8\n").expect("write");
//! let env = |name: &str| (name == "HOME").then(|| "/nonexistent".to_owned());
//! let paths = SearchPaths { system: None, ..SearchPaths::new(None, &dir, &env) };
//!
//! let (config, used) = Config::load_from(&paths, &env)?;
//! assert_eq!(config.broker.ring_depth, 8);
//! assert_eq!(used, [dir.join("clippy.toml")]);
//! assert_eq!(config.preset_for_command(OsStr::new("/usr/bin/python3")), Some("python"));
//! # std::fs::remove_dir_all(&dir).expect("clean up");
//! # Ok::<(), clippy_config::ConfigError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod config;
mod error;
mod expand;
mod layers;
mod schema;

pub use config::{
    BrokerConfig, Config, CtlConfig, DEFAULT_EVENT_HISTORY, DEFAULT_HISTORY_MAX_AGE_DAYS,
    DEFAULT_HISTORY_MAX_BYTES, DEFAULT_MAX_REPLY_BYTES, DEFAULT_MAX_TURN_BYTES, DEFAULT_PRESETS,
    DEFAULT_RING_DEPTH, DEFAULT_SUBMIT_DELAY_MS, DesktopConfig, HistoryConfig, HotkeysConfig,
    MAX_REPLY_BYTES_LIMIT, MAX_TURN_BYTES_LIMIT, MIN_REPLY_BYTES, McpConfig, OutputFormat,
    SessionConfig,
};
pub use error::ConfigError;
pub use layers::{LOCAL_FILE, Layer, LayerKind, Layers, SYSTEM_FILE, SearchPaths, user_file};
