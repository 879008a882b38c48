//! Where configuration layers are looked for, and reading them.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::ConfigError;
use crate::config::Config;
use crate::schema;

/// The project-local layer's file name, looked for in the working directory.
pub const LOCAL_FILE: &str = "clippy.toml";
/// The system layer.
pub const SYSTEM_FILE: &str = "/etc/clippy/config.toml";

/// Which layer a file is, highest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LayerKind {
    /// `--config FILE`: must exist.
    Explicit,
    /// `./clippy.toml` in the working directory.
    Local,
    /// `$XDG_CONFIG_HOME/clippy/config.toml` (or `$HOME/.config/clippy/config.toml`).
    User,
    /// `/etc/clippy/config.toml`.
    System,
}

impl LayerKind {
    /// A short description for messages: `--config`, `./clippy.toml`, `user`, `system`.
    pub fn describe(self) -> &'static str {
        match self {
            LayerKind::Explicit => "--config",
            LayerKind::Local => "./clippy.toml",
            LayerKind::User => "user",
            LayerKind::System => "system",
        }
    }
}

/// The files to look at, one per layer; `None` means the layer is not looked for.
///
/// [`SearchPaths::new`] computes them from `--config`, the working directory and the
/// environment. The fields are public so tests can point a layer elsewhere (or nowhere):
///
/// ```
/// use std::path::{Path, PathBuf};
/// use clippy_config::SearchPaths;
///
/// let env = |name: &str| (name == "HOME").then(|| "/home/ada".to_owned());
/// let paths = SearchPaths::new(None, Path::new("/work"), &env);
/// assert_eq!(paths.local, Some(PathBuf::from("/work/clippy.toml")));
/// assert_eq!(paths.user, Some(PathBuf::from("/home/ada/.config/clippy/config.toml")));
/// assert_eq!(paths.system, Some(PathBuf::from("/etc/clippy/config.toml")));
///
/// // In a test: no system layer.
/// let paths = SearchPaths { system: None, ..paths };
/// assert_eq!(paths.candidates().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPaths {
    /// `--config FILE`.
    pub explicit: Option<PathBuf>,
    /// `<cwd>/clippy.toml`.
    pub local: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME/clippy/config.toml` or `$HOME/.config/clippy/config.toml`.
    pub user: Option<PathBuf>,
    /// `/etc/clippy/config.toml`.
    pub system: Option<PathBuf>,
}

impl SearchPaths {
    /// The standard search paths. A relative `explicit` path is taken relative to `cwd`.
    /// `env` looks up environment variables (`XDG_CONFIG_HOME`, `HOME`); see [`user_file`].
    pub fn new(
        explicit: Option<&Path>,
        cwd: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> SearchPaths {
        SearchPaths {
            explicit: explicit.map(|path| cwd.join(path)),
            local: Some(cwd.join(LOCAL_FILE)),
            user: user_file(env),
            system: Some(PathBuf::from(SYSTEM_FILE)),
        }
    }

    /// The layers to look at, highest precedence first.
    pub fn candidates(&self) -> Vec<(LayerKind, &Path)> {
        [
            (LayerKind::Explicit, &self.explicit),
            (LayerKind::Local, &self.local),
            (LayerKind::User, &self.user),
            (LayerKind::System, &self.system),
        ]
        .into_iter()
        .filter_map(|(kind, path)| path.as_deref().map(|path| (kind, path)))
        .collect()
    }
}

/// The user layer's path: `$XDG_CONFIG_HOME/clippy/config.toml` when `XDG_CONFIG_HOME` is set to
/// an absolute path (the XDG Base Directory rules ignore a relative one), otherwise
/// `$HOME/.config/clippy/config.toml` when `HOME` is set and not empty, otherwise none.
pub fn user_file(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let absolute = |name: &str| {
        env(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let config_home = absolute("XDG_CONFIG_HOME").or_else(|| {
        env("HOME")
            .filter(|home| !home.is_empty())
            .map(|home| Path::new(&home).join(".config"))
    })?;
    Some(config_home.join("clippy").join("config.toml"))
}

/// One configuration file, parsed (not yet checked against the schema).
#[derive(Debug, Clone)]
pub struct Layer {
    kind: LayerKind,
    path: PathBuf,
    table: toml::Table,
}

impl Layer {
    /// Parses `text` as the layer `kind` found at `path` (the path only names it in errors).
    ///
    /// # Errors
    /// [`ConfigError::Parse`] when `text` is not valid TOML.
    pub fn parse(
        kind: LayerKind,
        path: impl Into<PathBuf>,
        text: &str,
    ) -> Result<Layer, ConfigError> {
        let path = path.into();
        match text.parse::<toml::Table>() {
            Ok(table) => Ok(Layer { kind, path, table }),
            Err(err) => Err(ConfigError::Parse {
                layer: path,
                message: err.to_string().trim_end().to_owned(),
            }),
        }
    }

    /// Reads and parses the file; `Ok(None)` when it does not exist.
    fn read(kind: LayerKind, path: &Path) -> Result<Option<Layer>, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Layer::parse(kind, path, &text).map(Some),
            // ENOTDIR: a path component is a file (`$XDG_CONFIG_HOME/clippy` is a file), so the
            // layer cannot exist either.
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Ok(None)
            }
            Err(source) => Err(ConfigError::Read {
                layer: path.to_owned(),
                source,
            }),
        }
    }

    /// Which layer this is.
    pub fn kind(&self) -> LayerKind {
        self.kind
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when this looks like Rust Clippy's lint configuration rather than ours: Rust Clippy
    /// also reads `./clippy.toml`, and its keys (`msrv = "1.85"`, `allow-unwrap-in-tests = true`,
    /// `disallowed-methods = […]`) all sit at the top level, while every one of ours is inside a
    /// table (`[broker]`, `[session]`, `[ctl]`). A file with top-level keys but no table cannot be
    /// a valid clippy layer, so it is Rust Clippy's.
    fn is_rust_clippy_lint_config(&self) -> bool {
        !self.table.is_empty() && !self.table.values().any(toml::Value::is_table)
    }
}

/// The layers found, highest precedence first.
///
/// ```
/// use std::path::Path;
/// use clippy_config::{Layer, LayerKind, Layers};
///
/// let env = |_: &str| None;
/// let layers = Layers::new(vec![
///     Layer::parse(LayerKind::Local, "/work/clippy.toml", "[broker]\nring_depth = 4\n")?,
///     Layer::parse(LayerKind::System, "/etc/clippy/config.toml", "[broker]\nring_depth = 64\nmax_turn_bytes = 1024\n")?,
/// ]);
/// let config = layers.resolve(&env)?;
/// assert_eq!((config.broker.ring_depth, config.broker.max_turn_bytes), (4, 1024));
/// # Ok::<(), clippy_config::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Layers {
    layers: Vec<Layer>,
    skipped: Vec<PathBuf>,
}

impl Layers {
    /// Layers given directly, highest precedence first.
    pub fn new(layers: Vec<Layer>) -> Layers {
        Layers {
            layers,
            skipped: Vec::new(),
        }
    }

    /// Reads every candidate of `paths` that exists. The `--config` file must exist; the other
    /// layers are skipped when they do not. A file reached twice (`--config ./clippy.toml`) is
    /// used once, at its highest place. A `./clippy.toml` that is Rust Clippy's lint
    /// configuration is skipped and listed in [`Layers::skipped`].
    ///
    /// # Errors
    /// [`ConfigError::MissingExplicit`], [`ConfigError::Read`] for a layer that exists but cannot
    /// be read, [`ConfigError::Parse`] for one that is not TOML.
    pub fn discover(paths: &SearchPaths) -> Result<Layers, ConfigError> {
        let mut found = Layers::default();
        let mut seen: Vec<PathBuf> = Vec::new();
        for (kind, path) in paths.candidates() {
            let Some(layer) = Layer::read(kind, path)? else {
                if kind == LayerKind::Explicit {
                    return Err(ConfigError::MissingExplicit {
                        path: path.to_owned(),
                    });
                }
                continue;
            };
            let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
            if seen.contains(&canonical) {
                continue;
            }
            seen.push(canonical);
            if kind == LayerKind::Local && layer.is_rust_clippy_lint_config() {
                found.skipped.push(path.to_owned());
                continue;
            }
            found.layers.push(layer);
        }
        Ok(found)
    }

    /// The layers, highest precedence first.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The layers' paths, highest precedence first.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.layers.iter().map(|layer| layer.path.clone()).collect()
    }

    /// Files found but not used: a `./clippy.toml` holding Rust Clippy's lint configuration.
    pub fn skipped(&self) -> &[PathBuf] {
        &self.skipped
    }

    /// Checks every layer (unknown keys, types, values, `${VAR}` expanded with `env`) and merges
    /// them over the defaults, key by key: a higher layer's value replaces a lower one's, tables
    /// merge. Every layer is checked, even where a higher one overrides it.
    ///
    /// # Errors
    /// The first problem found, naming its layer and key.
    pub fn resolve(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let partials = self
            .layers
            .iter()
            .map(|layer| schema::read(&layer.table, &layer.path, env))
            .collect::<Result<Vec<_>, _>>()?;
        let mut config = Config::default();
        for partial in partials.into_iter().rev() {
            config.apply(partial);
        }
        config.finish();
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn user_file_prefers_xdg_config_home() {
        let env = env_of(&[("XDG_CONFIG_HOME", "/x/cfg"), ("HOME", "/home/ada")]);
        assert_eq!(
            user_file(&env),
            Some(PathBuf::from("/x/cfg/clippy/config.toml"))
        );
    }

    #[test]
    fn user_file_falls_back_to_home_when_xdg_is_empty_or_relative() {
        for xdg in ["", "relative/cfg"] {
            let vars: &'static [(&str, &str)] = if xdg.is_empty() {
                &[("XDG_CONFIG_HOME", ""), ("HOME", "/home/ada")]
            } else {
                &[("XDG_CONFIG_HOME", "relative/cfg"), ("HOME", "/home/ada")]
            };
            assert_eq!(
                user_file(&env_of(vars)),
                Some(PathBuf::from("/home/ada/.config/clippy/config.toml")),
                "XDG_CONFIG_HOME={xdg:?}"
            );
        }
        assert_eq!(
            user_file(&env_of(&[("HOME", "/home/ada")])),
            Some(PathBuf::from("/home/ada/.config/clippy/config.toml"))
        );
    }

    #[test]
    fn no_user_file_without_xdg_or_home() {
        assert_eq!(user_file(&env_of(&[])), None);
        assert_eq!(user_file(&env_of(&[("HOME", "")])), None);
    }

    #[test]
    fn explicit_path_is_relative_to_cwd() {
        let paths = SearchPaths::new(
            Some(Path::new("conf/c.toml")),
            Path::new("/w"),
            &env_of(&[]),
        );
        assert_eq!(paths.explicit, Some(PathBuf::from("/w/conf/c.toml")));
        let paths = SearchPaths::new(Some(Path::new("/abs.toml")), Path::new("/w"), &env_of(&[]));
        assert_eq!(paths.explicit, Some(PathBuf::from("/abs.toml")));
        let kinds: Vec<_> = paths.candidates().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [LayerKind::Explicit, LayerKind::Local, LayerKind::System]
        );
    }

    #[test]
    fn rust_clippy_lint_config_is_recognised() {
        let lint = |text: &str| {
            Layer::parse(LayerKind::Local, "clippy.toml", text)
                .expect("parses")
                .is_rust_clippy_lint_config()
        };
        assert!(lint(
            "allow-unwrap-in-tests = true\nallow-expect-in-tests = true\n"
        ));
        assert!(lint(
            "msrv = \"1.85\"\n[[disallowed-methods]]\npath = \"std::process::exit\"\n"
        ));
        assert!(!lint(""));
        assert!(!lint("[broker]\nring_depth = 4\n"));
        assert!(!lint("[brokr]\nring_depth = 4\n"));
        assert!(!lint("msrv = \"1.85\"\n[broker]\nring_depth = 4\n"));
    }

    #[test]
    fn parse_error_names_the_layer() {
        let err = Layer::parse(
            LayerKind::User,
            "/h/.config/clippy/config.toml",
            "[broker\n",
        )
        .expect_err("not TOML");
        assert!(matches!(err, ConfigError::Parse { .. }));
        let text = err.to_string();
        assert!(
            text.starts_with("/h/.config/clippy/config.toml: invalid TOML"),
            "{text}"
        );
        assert!(text.contains("line 1"), "{text}");
    }
}
