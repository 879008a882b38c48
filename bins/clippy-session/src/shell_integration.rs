//! `--shell-integration`: bash or zsh started with OSC 133/OSC 7 marks. What to run and which
//! files to write is `clippy_wrapper::shell_integration`'s; here they are written, private to
//! the user, in the session's folder.

use std::ffi::OsString;
use std::path::Path;

use clippy_wrapper::shell_integration::plan;

/// The command to run instead, and the environment it needs (zsh: `ZDOTDIR`).
#[derive(Debug)]
pub struct Wrapped {
    pub command: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

/// The command to run instead of `command` so the shell loads the hooks, or `None` when the
/// command is not an interactive bash or zsh (then nothing changes). Files go into `dir`.
pub fn wrap(command: &[OsString], dir: &Path) -> std::io::Result<Option<Wrapped>> {
    let Some(plan) = plan(command, dir, &|name| std::env::var_os(name)) else {
        return Ok(None);
    };
    for folder in &plan.dirs {
        std::fs::create_dir_all(folder)?;
    }
    for (path, text) in &plan.files {
        write_private(path, text)?;
    }
    Ok(Some(Wrapped {
        command: plan.command,
        env: plan.env,
    }))
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    std::io::Write::write_all(&mut file, text.as_bytes())
}
