//! Loading real files from temporary directories: layer discovery, precedence, merging and the
//! error cases, with search paths and environment injected (nothing here reads the real `$HOME`,
//! the real environment or `/etc`).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use clippy_config::{Config, ConfigError, Layers, OutputFormat, SearchPaths};
use clippy_testkit::TempDir;

/// A fake environment: `XDG_CONFIG_HOME` inside the temp dir plus `extra`.
fn fake_env(
    dir: &TempDir,
    extra: &'static [(&'static str, &'static str)],
) -> impl Fn(&str) -> Option<String> {
    let xdg = dir.join("xdg").to_string_lossy().into_owned();
    move |name| {
        if name == "XDG_CONFIG_HOME" {
            return Some(xdg.clone());
        }
        extra
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    }
}

/// The four layers' paths inside `dir`: `explicit.toml`, `cwd/clippy.toml`,
/// `xdg/clippy/config.toml`, `etc/clippy/config.toml`.
fn search_paths(
    dir: &TempDir,
    explicit: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> SearchPaths {
    SearchPaths {
        system: Some(dir.join("etc/clippy/config.toml")),
        ..SearchPaths::new(explicit, &dir.join("cwd"), env)
    }
}

fn load(
    dir: &TempDir,
    explicit: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Config, Vec<PathBuf>), ConfigError> {
    Config::load_from(&search_paths(dir, explicit, env), env)
}

/// Loads a single `--config` layer with `text`, expecting an error.
fn load_err(name: &str, text: &str) -> (ConfigError, PathBuf) {
    let dir = TempDir::new(name);
    let file = dir.write("explicit.toml", text);
    let env = fake_env(&dir, &[]);
    let err = load(&dir, Some(&file), &env).expect_err("must fail");
    (err, file)
}

#[test]
fn no_files_means_defaults() {
    let dir = TempDir::new("none");
    std::fs::create_dir_all(dir.join("cwd")).expect("mkdir");
    let env = fake_env(&dir, &[]);
    let (config, used) = load(&dir, None, &env).expect("loads");
    assert_eq!(config, Config::default());
    assert!(used.is_empty());
}

#[test]
fn precedence_across_four_layers() {
    let dir = TempDir::new("precedence");
    let system = dir.write(
        "etc/clippy/config.toml",
        "[broker]\nring_depth = 4\nmax_turn_bytes = 4000\n\
         [session]\nmax_turn_bytes = 4000\n[ctl]\nformat = \"text\"\n",
    );
    let user = dir.write(
        "xdg/clippy/config.toml",
        "[broker]\nring_depth = 3\nmax_turn_bytes = 3000\n[session]\nmax_turn_bytes = 3000\n",
    );
    let local = dir.write(
        "cwd/clippy.toml",
        "[broker]\nring_depth = 2\nmax_turn_bytes = 2000\n",
    );
    let explicit = dir.write("explicit.toml", "[broker]\nring_depth = 1\n");
    let env = fake_env(&dir, &[]);

    let (config, used) = load(&dir, Some(&explicit), &env).expect("loads");
    assert_eq!(
        used,
        [
            explicit.clone(),
            local.clone(),
            user.clone(),
            system.clone()
        ]
    );
    assert_eq!(config.broker.ring_depth, 1, "from --config");
    assert_eq!(config.broker.max_turn_bytes, 2000, "from ./clippy.toml");
    assert_eq!(config.session.max_turn_bytes, 3000, "from the user layer");
    assert_eq!(
        config.ctl.format,
        OutputFormat::Text,
        "from the system layer"
    );

    // Without --config, ./clippy.toml is on top.
    let (config, used) = load(&dir, None, &env).expect("loads");
    assert_eq!(used, [local.clone(), user.clone(), system.clone()]);
    assert_eq!(config.broker.ring_depth, 2);

    // Implicit layers that do not exist are skipped.
    std::fs::remove_file(&local).expect("rm");
    std::fs::remove_file(&user).expect("rm");
    let (config, used) = load(&dir, None, &env).expect("loads");
    assert_eq!(used, [system]);
    assert_eq!(config.broker.ring_depth, 4);
}

#[test]
fn user_layer_falls_back_to_home_dot_config() {
    let dir = TempDir::new("home");
    let home = dir.join("home").to_string_lossy().into_owned();
    let user = dir.write(
        "home/.config/clippy/config.toml",
        "[broker]\nring_depth = 9\n",
    );
    let env = move |name: &str| match name {
        "XDG_CONFIG_HOME" => Some(String::new()),
        "HOME" => Some(home.clone()),
        _ => None,
    };
    let (config, used) = load(&dir, None, &env).expect("loads");
    assert_eq!(used, [user]);
    assert_eq!(config.broker.ring_depth, 9);
}

#[test]
fn merge_is_per_key_and_presets_merge_over_the_builtins() {
    let dir = TempDir::new("merge");
    dir.write(
        "etc/clippy/config.toml",
        "[session.presets]\nipython = \"python\"\nfish = \"shell\"\nbash = \"generic\"\n",
    );
    dir.write(
        "xdg/clippy/config.toml",
        "[session]\npresets = { fish = \"generic\", zsh = \"\" }\n",
    );
    let env = fake_env(&dir, &[]);
    let (config, _) = load(&dir, None, &env).expect("loads");

    let mut expected: BTreeMap<String, String> = Config::default().session.presets;
    expected.insert("ipython".into(), "python".into()); // system adds
    expected.insert("bash".into(), "generic".into()); // system replaces a built-in
    expected.insert("fish".into(), "generic".into()); // user replaces system's
    expected.remove("zsh"); // user removes a built-in with ""
    assert_eq!(config.session.presets, expected);
    assert_eq!(config.preset_for_command(OsStr::new("zsh")), None);
    assert_eq!(
        config.preset_for_command(OsStr::new("/opt/bin/ipython")),
        Some("python")
    );
    // Keys a layer does not set keep the lower layer's (here: the default) value.
    assert_eq!(config.broker, Config::default().broker);
}

#[test]
fn variables_expand_from_the_injected_environment() {
    let dir = TempDir::new("expand");
    let file = dir.write(
        "explicit.toml",
        "[ctl]\nformat = \"${CLIPPY_FMT}\"\n\
         [session.presets]\nagent = \"${AGENT_PRESET}\"\nliteral = \"$${AGENT_PRESET}\"\n\
         bare = \"$AGENT_PRESET\"\ncost = \"$$5\"\n",
    );
    let env = fake_env(&dir, &[("CLIPPY_FMT", "text"), ("AGENT_PRESET", "claude")]);
    let (config, _) = load(&dir, Some(&file), &env).expect("loads");
    assert_eq!(config.ctl.format, OutputFormat::Text);
    let presets = &config.session.presets;
    assert_eq!(presets["agent"], "claude");
    assert_eq!(presets["literal"], "${AGENT_PRESET}", "$${{ is the escape");
    assert_eq!(
        presets["bare"], "$AGENT_PRESET",
        "$NAME without braces is literal"
    );
    assert_eq!(presets["cost"], "$5", "$$ is one $");
}

#[test]
fn unresolved_variable_names_var_layer_and_key() {
    let (err, file) = load_err(
        "unresolved",
        "[session.presets]\nagent = \"x-${NOPE_NOT_SET}\"\n",
    );
    let ConfigError::UnresolvedVariable { var, layer, key } = &err else {
        panic!("wrong error: {err:?}");
    };
    assert_eq!(var, "NOPE_NOT_SET");
    assert_eq!(layer, &file);
    assert_eq!(key, "session.presets.agent");
    let text = err.to_string();
    for part in [
        "NOPE_NOT_SET",
        &file.display().to_string(),
        "session.presets.agent",
    ] {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }
}

#[test]
fn unresolved_variable_in_a_lower_layer_names_that_layer() {
    let dir = TempDir::new("unresolved-lower");
    let system = dir.write("etc/clippy/config.toml", "[ctl]\nformat = \"${FMT}\"\n");
    dir.write("xdg/clippy/config.toml", "[ctl]\nformat = \"raw\"\n");
    let env = fake_env(&dir, &[]);
    let err = load(&dir, None, &env).expect_err("unset in a lower layer");
    assert!(
        matches!(&err, ConfigError::UnresolvedVariable { layer, key, .. } if layer == &system && key == "ctl.format"),
        "{err:?}"
    );
}

#[test]
fn unknown_key_names_layer_and_key() {
    let (err, file) = load_err("unknown", "[broker]\nring_dept = 8\n");
    assert!(
        matches!(&err, ConfigError::UnknownKey { key, layer, .. } if key == "broker.ring_dept" && layer == &file),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}: unknown key `broker.ring_dept` (expected one of: ring_depth, max_turn_bytes, submit_delay_ms, event_history)",
            file.display()
        )
    );

    let (err, _) = load_err("unknown-top", "[brokr]\nring_depth = 8\n");
    assert!(
        err.to_string().contains(
            "unknown key `brokr` (expected one of: broker, session, ctl, desktop, hotkeys, mcp, history)"
        ),
        "{err}"
    );
    let (err, _) = load_err("unknown-ctl", "[ctl]\nfromat = \"raw\"\n");
    assert!(
        err.to_string().contains("unknown key `ctl.fromat`"),
        "{err}"
    );
}

#[test]
fn wrong_type_names_layer_and_key() {
    let (err, file) = load_err("wrong-type", "[broker]\nring_depth = \"32\"\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: `broker.ring_depth` must be an integer, found string",
            file.display()
        )
    );
    let (err, _) = load_err("wrong-type-float", "[session]\nmax_turn_bytes = 1.5\n");
    assert!(
        err.to_string()
            .contains("`session.max_turn_bytes` must be an integer, found float"),
        "{err}"
    );
    let (err, _) = load_err("wrong-type-bool", "[ctl]\nformat = true\n");
    assert!(
        err.to_string()
            .contains("`ctl.format` must be a string, found boolean"),
        "{err}"
    );
}

#[test]
fn invalid_values_name_layer_and_key() {
    let (err, file) = load_err("depth0", "[broker]\nring_depth = 0\n");
    assert!(matches!(err, ConfigError::InvalidValue { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: `broker.ring_depth` must be at least 1, found 0",
            file.display()
        )
    );

    let (err, file) = load_err("html", "[ctl]\nformat = \"html\"\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: `ctl.format` must be one of raw, text, found \"html\"",
            file.display()
        )
    );

    let (err, _) = load_err("bytes0", "[broker]\nmax_turn_bytes = 0\n");
    assert!(
        err.to_string()
            .contains("`broker.max_turn_bytes` must be between 1 and"),
        "{err}"
    );
}

#[test]
fn an_error_in_an_overridden_layer_is_still_reported() {
    let dir = TempDir::new("overridden");
    let system = dir.write("etc/clippy/config.toml", "[broker]\nring_depth = 0\n");
    dir.write("xdg/clippy/config.toml", "[broker]\nring_depth = 5\n");
    let env = fake_env(&dir, &[]);
    let err = load(&dir, None, &env).expect_err("system layer is invalid");
    assert!(
        matches!(&err, ConfigError::InvalidValue { layer, .. } if layer == &system),
        "{err:?}"
    );
}

#[test]
fn missing_explicit_file_is_an_error() {
    let dir = TempDir::new("missing");
    let env = fake_env(&dir, &[]);
    let missing = dir.join("nope.toml");
    let err = load(&dir, Some(&missing), &env).expect_err("missing --config");
    assert!(
        matches!(&err, ConfigError::MissingExplicit { path } if path == &missing),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "configuration file {} (given with --config) does not exist",
            missing.display()
        )
    );
}

#[test]
fn relative_explicit_path_is_taken_from_cwd() {
    let dir = TempDir::new("relative");
    let file = dir.write("cwd/conf/mine.toml", "[broker]\nring_depth = 7\n");
    let env = fake_env(&dir, &[]);
    let (config, used) = load(&dir, Some(Path::new("conf/mine.toml")), &env).expect("loads");
    assert_eq!(used, [file]);
    assert_eq!(config.broker.ring_depth, 7);
}

#[test]
fn invalid_toml_names_the_layer() {
    let dir = TempDir::new("syntax");
    let local = dir.write("cwd/clippy.toml", "[broker]\nring_depth = = 3\n");
    let env = fake_env(&dir, &[]);
    let err = load(&dir, None, &env).expect_err("bad TOML");
    assert!(matches!(err, ConfigError::Parse { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}: invalid TOML", local.display())),
        "{text}"
    );
    assert!(text.contains("line 2"), "{text}");
}

#[test]
fn unreadable_layer_is_an_error_not_skipped() {
    let dir = TempDir::new("unreadable");
    // A directory where the user layer's file should be: it exists but cannot be read.
    std::fs::create_dir_all(dir.join("xdg/clippy/config.toml")).expect("mkdir");
    let env = fake_env(&dir, &[]);
    let err = load(&dir, None, &env).expect_err("a directory");
    assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
    assert!(err.to_string().contains("xdg/clippy/config.toml"), "{err}");
}

#[test]
fn same_file_twice_is_used_once() {
    let dir = TempDir::new("twice");
    let local = dir.write("cwd/clippy.toml", "[broker]\nring_depth = 6\n");
    let env = fake_env(&dir, &[]);
    let (config, used) = load(&dir, Some(Path::new("clippy.toml")), &env).expect("loads");
    assert_eq!(used, [local]);
    assert_eq!(config.broker.ring_depth, 6);
}

#[test]
fn rust_clippy_lint_config_in_cwd_is_skipped_not_an_error() {
    let dir = TempDir::new("lint-config");
    let local = dir.write(
        "cwd/clippy.toml",
        "allow-unwrap-in-tests = true\nallow-expect-in-tests = true\n",
    );
    let env = fake_env(&dir, &[]);
    let paths = search_paths(&dir, None, &env);
    let layers = Layers::discover(&paths).expect("discovers");
    assert!(layers.layers().is_empty());
    assert_eq!(layers.skipped(), std::slice::from_ref(&local));
    assert_eq!(layers.resolve(&env).expect("resolves"), Config::default());

    // Given explicitly, the same file is an error: --config is always ours.
    let err = load(&dir, Some(&local), &env).expect_err("explicit is strict");
    assert!(
        err.to_string()
            .contains("unknown key `allow-expect-in-tests`"),
        "{err}"
    );
}

#[test]
fn preset_lookup_by_command_file_name() {
    let config = Config::default();
    for (program, preset) in [
        ("/usr/bin/python3", Some("python")),
        ("python", Some("python")),
        ("/home/ada/.local/bin/claude", Some("claude")),
        ("codex", Some("codex")),
        ("aider", Some("aider")),
        ("gemini", Some("gemini")),
        ("/bin/bash", Some("shell")),
        ("zsh", Some("shell")),
        ("/bin/sh", Some("shell")),
        ("sqlite3", Some("sqlite")),
        ("/usr/bin/vim", None),
    ] {
        assert_eq!(
            config.preset_for_command(OsStr::new(program)),
            preset,
            "{program}"
        );
    }
}

#[test]
fn example_file_parses_and_equals_the_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("clippy.example.toml");
    let text = std::fs::read_to_string(&path).expect("read the example");
    let env = |_: &str| None;
    let config = Config::from_toml(&text, &path, &env).expect("the example is valid");
    assert_eq!(config, Config::default());
}
