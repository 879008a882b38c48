//! The workspace's binaries, for tests that run one package's binary against another's.
//!
//! Cargo gives a test the path of its own package's binaries only (`CARGO_BIN_EXE_<name>`), and
//! `cargo test -p clippy-ctl` builds no other package. So the first time a test process asks for
//! a binary, [`bin`] runs `cargo build -p <name> --bin <name>` with the profile and target folder
//! the test itself was built with (a no-op when it is up to date, as under
//! `cargo test --workspace`, which builds every binary before running any test), then hands out
//! its path in that folder. Later calls in the same process build nothing.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// The folder holding the binaries of the build the running test belongs to (`target/debug`,
/// `target/release`, `$CARGO_TARGET_DIR/<triple>/debug`…): the test executable lives in its
/// `deps/`.
pub fn program_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let deps = exe.parent().expect("the test is in a folder");
    let dir = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps/ is in the profile folder")
    } else {
        deps
    };
    dir.to_owned()
}

/// The workspace binary `name` (`clippy-broker`, `clippy-session`, `clippy-ctl`, `clippy-mcp`;
/// each is its package's name), up to date: built on the first call in this process (see the
/// module's documentation).
///
/// When that build fails (someone's unfinished edit elsewhere in the tree) and a binary is
/// there, it is used with a warning, except where `CI` is set: there the tree is what is tested.
pub fn bin(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let dir = program_dir();
    let path = dir.join(name);
    // Held while building: two threads asking at once build once.
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if !built.iter().any(|b| b == name) {
        let out = build_command(&dir, name)
            .output()
            .unwrap_or_else(|e| panic!("cannot run cargo to build {name}: {e}"));
        if !out.status.success() {
            assert!(
                path.is_file() && std::env::var_os("CI").is_none(),
                "cannot build {}:\n{}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!(
                "warning: `cargo build -p {name}` failed; testing the existing {}",
                path.display()
            );
        }
        built.push(name.to_owned());
    }
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// `cargo build -q -p NAME --bin NAME` into the build folder `dir` belongs to.
fn build_command(dir: &Path, name: &str) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut command = Command::new(cargo);
    command
        .args(["build", "-q", "-p", name, "--bin", name])
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .current_dir(&workspace);
    let profile = dir
        .file_name()
        .map_or_else(OsString::new, ToOwned::to_owned);
    match profile.to_str() {
        Some("debug") => {}
        Some("release") => {
            command.arg("--release");
        }
        _ => {
            command.arg("--profile").arg(&profile);
        }
    }
    // `target/<profile>`, or `target/<triple>/<profile>` for a cross build.
    if let Some(parent) = dir.parent() {
        let cross = !parent.join("CACHEDIR.TAG").exists()
            && parent
                .parent()
                .is_some_and(|p| p.join("CACHEDIR.TAG").exists());
        match (cross, parent.parent(), parent.file_name()) {
            (true, Some(target), Some(triple)) => {
                command
                    .arg("--target-dir")
                    .arg(target)
                    .arg("--target")
                    .arg(triple);
            }
            _ => {
                command.arg("--target-dir").arg(parent);
            }
        }
    }
    command
}
