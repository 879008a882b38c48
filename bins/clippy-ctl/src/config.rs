//! Configuration: the layers of `crates/clippy-config` (see its `CONFIG.md`), as `clippy-ctl`
//! uses them — today, the default turn format (`ctl.format`).

use std::path::Path;

use clippy_config::{HotkeysConfig, OutputFormat};
use clippy_proto::Format;

use crate::error::CtlError;

/// The configuration in effect.
#[derive(Debug, Clone, Default)]
pub struct Config {
    format: Option<Format>,
    /// `desktop.resolver`.
    pub resolver: Option<String>,
    /// `[hotkeys]`.
    pub hotkeys: HotkeysConfig,
    /// `ctl.detach_key` (checked when `attach` reads it).
    pub detach_key: Option<String>,
}

impl Config {
    /// Loads the layers: `explicit` is `--config FILE`, which must exist. Any layer's error
    /// (unknown key, unresolved `${VAR}`, bad value) is a configuration error, exit 4.
    pub fn load(explicit: Option<&Path>) -> Result<Self, CtlError> {
        let (config, _layers) = clippy_config::Config::load(explicit)
            .map_err(|err| CtlError::Config(err.to_string()))?;
        Ok(Self {
            // Exhaustive, so that a format the configuration learns (`message`) is mapped here
            // rather than read as raw.
            format: Some(match config.ctl.format {
                OutputFormat::Text => Format::Text,
                OutputFormat::Raw => Format::Raw,
            }),
            resolver: Some(config.desktop.resolver),
            hotkeys: config.hotkeys,
            detach_key: Some(config.ctl.detach_key),
        })
    }

    /// The turn format used when a command has no `--format`.
    pub fn format(&self) -> Format {
        self.format.unwrap_or_else(default_format)
    }
}

/// The turn format when neither the command line nor the configuration says: raw.
pub fn default_format() -> Format {
    Format::Raw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_format_is_raw() {
        assert_eq!(default_format(), Format::Raw);
        assert_eq!(Config::default().format(), Format::Raw);
    }

    #[test]
    fn a_missing_config_file_is_a_configuration_error() {
        let err = Config::load(Some(Path::new("/nonexistent/clippy.toml"))).unwrap_err();
        assert!(matches!(err, CtlError::Config(_)), "{err:?}");
    }

    #[test]
    fn the_configured_format_is_the_default() {
        let dir = std::env::temp_dir().join(format!("clippy-ctl-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.toml");
        std::fs::write(&file, "[ctl]\nformat = \"text\"\n").unwrap();
        assert_eq!(Config::load(Some(&file)).unwrap().format(), Format::Text);
        std::fs::write(&file, "[ctl]\nformat = \"html\"\n").unwrap();
        let err = Config::load(Some(&file)).unwrap_err().to_string();
        assert!(
            err.contains("ctl.format") && err.contains("config.toml"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
