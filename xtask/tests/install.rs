//! `cargo xtask install --prefix TMP --from DIR`, then `uninstall`: the files where their tools
//! look, the units pointing at the installed binaries, a second install replacing the first,
//! and the prefix empty again afterwards. Cheap: `--from` takes stand-in binaries (a
//! `clippy-ctl` script that prints a man page naming one command's page, and completions), so
//! nothing is built.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clippy_testkit::TempDir;

/// What stands in for `clippy-ctl`: a man page whose SUBCOMMANDS section names
/// `clippy-ctl-get-turn(1)`, that page, and a completion script per shell.
const FAKE_CTL: &str = r#"#!/bin/sh
case "$1" in
  man)
    if [ -z "$2" ]; then
      printf '.TH clippy-ctl 1\n.SH SUBCOMMANDS\n.TP\nclippy\\-ctl\\-get\\-turn(1)\nRead a turn\n'
    else
      printf '.TH clippy-ctl-%s 1\n' "$2"
    fi ;;
  completions) printf '# %s completion for clippy-ctl\n' "$2" ;;
  *) exit 2 ;;
esac
"#;

/// A folder with the four binaries (stand-ins).
fn stand_ins(dir: &Path) -> PathBuf {
    let bins = dir.join("build");
    std::fs::create_dir_all(&bins).unwrap();
    for name in ["clippy-session", "clippy-broker", "clippy-mcp"] {
        std::fs::write(bins.join(name), format!("#!/bin/sh\necho {name}\n")).unwrap();
    }
    std::fs::write(bins.join("clippy-ctl"), FAKE_CTL).unwrap();
    for entry in std::fs::read_dir(&bins).unwrap() {
        let path = entry.unwrap().path();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bins
}

fn xtask(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap()
}

fn describe(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file and folder under `dir`, relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(next) = todo.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            all.push(path.strip_prefix(dir).unwrap().display().to_string());
            if path.is_dir() {
                todo.push(path);
            }
        }
    }
    all.sort();
    all
}

#[test]
fn install_into_a_prefix_then_uninstall_leaves_it_empty() {
    let dir = TempDir::new("install");
    let bins = stand_ins(dir.path());
    let home = dir.join("home");
    let prefix = dir.join("prefix");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&prefix).unwrap();
    let (p, b) = (prefix.to_str().unwrap(), bins.to_str().unwrap());

    let out = xtask(&["install", "--prefix", p, "--from", b], &home);
    assert!(out.status.success(), "{}", describe(&out));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let warned = String::from_utf8_lossy(&out.stderr).into_owned();

    let mut want = vec![
        "bin",
        "bin/clippy-broker",
        "bin/clippy-ctl",
        "bin/clippy-mcp",
        "bin/clippy-session",
        "lib",
        "lib/systemd",
        "lib/systemd/user",
        "share",
        "share/bash-completion",
        "share/bash-completion/completions",
        "share/bash-completion/completions/clippy-ctl",
        "share/clippy",
        "share/clippy/install-manifest",
        "share/fish",
        "share/fish/vendor_completions.d",
        "share/fish/vendor_completions.d/clippy-ctl.fish",
        "share/man",
        "share/man/man1",
        "share/man/man1/clippy-ctl-get-turn.1",
        "share/man/man1/clippy-ctl.1",
        "share/zsh",
        "share/zsh/site-functions",
        "share/zsh/site-functions/_clippy-ctl",
    ];
    // Every unit of contrib/systemd, pointing at the installed binaries.
    let contrib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contrib/systemd");
    let mut units: Vec<String> = std::fs::read_dir(&contrib)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".service"))
        .collect();
    units.sort();
    assert!(
        units.iter().any(|u| u == "clippy-broker.service"),
        "{units:?}"
    );
    let unit_paths: Vec<String> = units
        .iter()
        .map(|u| format!("lib/systemd/user/{u}"))
        .collect();
    want.extend(unit_paths.iter().map(String::as_str));
    want.sort_unstable();
    assert_eq!(tree(&prefix), want, "{said}");
    // Nothing outside the prefix: HOME is untouched.
    assert!(tree(&home).is_empty(), "{:?}", tree(&home));

    for unit in &units {
        let text = std::fs::read_to_string(prefix.join("lib/systemd/user").join(unit)).unwrap();
        let exec: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("ExecStart="))
            .collect();
        assert!(!exec.is_empty(), "{unit}");
        for line in exec {
            let program = line["ExecStart=".len()..].split(' ').next().unwrap();
            assert!(
                program.starts_with(&format!("{p}/bin/clippy-")),
                "{unit}: {line}"
            );
            assert!(Path::new(program).is_file(), "{unit}: {line}");
        }
    }
    let mode = |rel: &str| {
        std::fs::metadata(prefix.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("bin/clippy-ctl"), 0o755);
    assert_eq!(mode("share/man/man1/clippy-ctl.1"), 0o644);
    assert_eq!(
        std::fs::read_to_string(prefix.join("share/man/man1/clippy-ctl-get-turn.1")).unwrap(),
        ".TH clippy-ctl-get-turn 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(prefix.join("share/zsh/site-functions/_clippy-ctl")).unwrap(),
        "# zsh completion for clippy-ctl\n"
    );
    // It says what it did, file by file, and that PREFIX/bin is not on the PATH.
    assert!(
        said.contains(&format!("installed binary: {p}/bin/clippy-mcp\n")),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "installed bash completion: {p}/share/bash-completion/completions/clippy-ctl\n"
        )),
        "{said}"
    );
    assert!(
        warned.contains(&format!("{p}/bin is not on your PATH")),
        "{warned}"
    );

    // Again: every file replaced, nothing added.
    let out = xtask(&["install", "--prefix", p, "--from", b], &home);
    assert!(out.status.success(), "{}", describe(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("replaced binary: {p}/bin/clippy-ctl\n")),
        "{said}"
    );
    assert_eq!(tree(&prefix), want);

    let out = xtask(&["uninstall", "--prefix", p], &home);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(tree(&prefix).is_empty(), "{:?}", tree(&prefix));
    assert!(prefix.is_dir(), "the prefix was there before: it stays");
    // Nothing left to uninstall.
    let out = xtask(&["uninstall", "--prefix", p], &home);
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing is installed"),
        "{}",
        describe(&out)
    );
}

#[test]
fn a_file_put_beside_the_installed_ones_is_kept_with_its_folder() {
    let dir = TempDir::new("install-kept");
    let bins = stand_ins(dir.path());
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The prefix does not exist yet: install creates it, uninstall removes it.
    let prefix = dir.join("new-prefix");
    let (p, b) = (prefix.to_str().unwrap(), bins.to_str().unwrap());
    let out = xtask(&["install", "--prefix", p, "--from", b], &home);
    assert!(out.status.success(), "{}", describe(&out));
    std::fs::write(prefix.join("bin/mine"), "not clippy's").unwrap();

    let out = xtask(&["uninstall", "--prefix", p], &home);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(tree(&prefix), ["bin", "bin/mine"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("kept folder {p}/bin (not empty)")),
        "{said}"
    );
    std::fs::remove_file(prefix.join("bin/mine")).unwrap();
}

#[test]
fn missing_binaries_are_named_and_nothing_is_written() {
    let dir = TempDir::new("install-missing");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let prefix = dir.join("prefix");
    let out = xtask(
        &[
            "install",
            "--prefix",
            prefix.to_str().unwrap(),
            "--from",
            empty.to_str().unwrap(),
        ],
        &home,
    );
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("clippy-session is missing"),
        "{}",
        describe(&out)
    );
    assert!(!prefix.exists());
}
