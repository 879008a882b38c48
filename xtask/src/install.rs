//! `cargo xtask install [--prefix DIR] [--from DIR]` and `cargo xtask uninstall [--prefix DIR]`:
//! the four binaries on the `PATH`, `clippy-ctl`'s man pages and shell completions, and the
//! systemd user units, where their tools look; and exactly that removed again.
//!
//! Under PREFIX (default `~/.local`):
//! - `bin/`: `clippy-session`, `clippy-broker`, `clippy-ctl`, `clippy-mcp` (release builds, or
//!   those in `--from DIR`);
//! - `share/man/man1/`: `clippy-ctl.1` and the `clippy-ctl-COMMAND.1` pages its SUBCOMMANDS
//!   section names (rendered by `clippy-ctl man`; the other binaries have no page);
//! - `share/bash-completion/completions/clippy-ctl`, `share/zsh/site-functions/_clippy-ctl`,
//!   `share/fish/vendor_completions.d/clippy-ctl.fish` (`clippy-ctl completions SHELL`);
//! - `share/clippy/install-manifest`: every file written and every folder created, which
//!   `uninstall` removes (folders only once empty) and a later `install` replaces.
//!
//! The systemd user units of `contrib/systemd/` go, with `ExecStart` pointing at PREFIX/bin,
//! to `$XDG_CONFIG_HOME/systemd/user` (`~/.config/systemd/user`) for the default prefix — where
//! `systemctl --user` finds a user's own units — and to PREFIX/lib/systemd/user for any other
//! prefix, so that an install under a prefix stays under it (systemd looks there for
//! `/usr/local`; elsewhere `systemctl --user link` them).
//!
//! The pure parts — arguments, where each file goes, the units' rewriting, the manifest — are
//! functions of their inputs, tested below; the rest copies files and runs `clippy-ctl`.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::{Failure, Result, cargo, root, run, target_dir};

/// The binaries installed (each its package's name).
pub const BINARIES: [&str; 4] = [
    "clippy-session",
    "clippy-broker",
    "clippy-ctl",
    "clippy-mcp",
];

/// The manifest, under the prefix.
const MANIFEST: &str = "share/clippy/install-manifest";

/// The shells whose completions are installed, as `clippy-ctl completions` names them.
const SHELLS: [&str; 3] = ["bash", "zsh", "fish"];

/// What `install` and `uninstall` were asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `--prefix DIR`; `None`: `~/.local`.
    pub prefix: Option<PathBuf>,
    /// `--from DIR` (install only): take the binaries from DIR instead of a release build.
    pub from: Option<PathBuf>,
}

/// Reads `install`'s arguments (`uninstall`'s when `install` is false: no `--from`).
pub fn parse(args: &[String], install: bool) -> Result<Options> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let slot = match flag {
            "--prefix" => &mut options.prefix,
            "--from" if install => &mut options.from,
            _ => return Err(Failure::other(format!("unknown argument {arg:?}"))),
        };
        let value = match inline {
            Some(value) => value,
            None => args
                .next()
                .cloned()
                .ok_or_else(|| Failure::other(format!("{flag} needs a folder")))?,
        };
        if value.is_empty() {
            return Err(Failure::other(format!("{flag} needs a folder")));
        }
        if slot.replace(PathBuf::from(value)).is_some() {
            return Err(Failure::other(format!("{flag} given twice")));
        }
    }
    Ok(options)
}

/// Where everything goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// PREFIX, absolute.
    pub prefix: PathBuf,
    /// Whether PREFIX is the default, `~/.local`.
    pub default_prefix: bool,
    /// PREFIX/bin.
    pub bin: PathBuf,
    /// PREFIX/share/man/man1.
    pub man1: PathBuf,
    /// The systemd user units' folder.
    pub units: PathBuf,
    /// PREFIX/share/clippy/install-manifest.
    pub manifest: PathBuf,
}

impl Layout {
    /// The layout for `prefix` (relative: to `cwd`; `None`: `$HOME/.local`), with `env` looking
    /// up `HOME` and `XDG_CONFIG_HOME`.
    pub fn new(
        prefix: Option<&Path>,
        env: &dyn Fn(&str) -> Option<OsString>,
        cwd: &Path,
    ) -> Result<Layout> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = var("HOME").filter(|h| h.is_absolute());
        let default = home.as_ref().map(|h| h.join(".local"));
        let prefix = match (prefix, &default) {
            (Some(p), _) => normal(&cwd.join(p)),
            (None, Some(d)) => d.clone(),
            (None, None) => {
                return Err(Failure::other(
                    "HOME is not set to an absolute path: give --prefix DIR",
                ));
            }
        };
        if prefix.to_str().is_none_or(|p| p.contains('\n')) {
            return Err(Failure::other(format!(
                "{} is not a prefix this installer can record (not UTF-8, or a newline in it)",
                prefix.display()
            )));
        }
        let default_prefix = default.as_ref() == Some(&prefix);
        let units = match (default_prefix, var("XDG_CONFIG_HOME"), &home) {
            (true, Some(config), _) if config.is_absolute() => config.join("systemd/user"),
            (true, _, Some(home)) => home.join(".config/systemd/user"),
            _ => prefix.join("lib/systemd/user"),
        };
        Ok(Layout {
            bin: prefix.join("bin"),
            man1: prefix.join("share/man/man1"),
            manifest: prefix.join(MANIFEST),
            units,
            default_prefix,
            prefix,
        })
    }

    /// Where `shell`'s completion script goes.
    fn completion(&self, shell: &str) -> PathBuf {
        let share = self.prefix.join("share");
        match shell {
            "bash" => share.join("bash-completion/completions/clippy-ctl"),
            "zsh" => share.join("zsh/site-functions/_clippy-ctl"),
            _ => share.join("fish/vendor_completions.d/clippy-ctl.fish"),
        }
    }
}

/// `path` with `.` and `..` taken out, as written (no symlinks followed).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What a planned file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A copy of this file.
    Copy(PathBuf),
    /// This text.
    Text(String),
}

/// One file install writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// What it is, for the report (`binary`, `man page`, …).
    pub what: &'static str,
    /// Where it goes.
    pub dest: PathBuf,
    /// What it holds.
    pub content: Content,
    /// Its mode.
    pub mode: u32,
}

/// What install is given to lay out: the binaries' folder and what was rendered from them.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The folder holding the four binaries.
    pub bins: PathBuf,
    /// Man pages: file name (`clippy-ctl.1`) and roff.
    pub man: Vec<(String, String)>,
    /// Completion scripts: shell and script.
    pub completions: Vec<(String, String)>,
    /// The units of `contrib/systemd`: file name and text.
    pub units: Vec<(String, String)>,
}

/// Every file install writes, in the order it writes them.
pub fn plan(layout: &Layout, sources: &Sources) -> Vec<Planned> {
    let mut files: Vec<Planned> = BINARIES
        .iter()
        .map(|name| Planned {
            what: "binary",
            dest: layout.bin.join(name),
            content: Content::Copy(sources.bins.join(name)),
            mode: 0o755,
        })
        .collect();
    files.extend(sources.man.iter().map(|(name, roff)| Planned {
        what: "man page",
        dest: layout.man1.join(name),
        content: Content::Text(roff.clone()),
        mode: 0o644,
    }));
    files.extend(sources.completions.iter().map(|(shell, script)| Planned {
        what: match shell.as_str() {
            "bash" => "bash completion",
            "zsh" => "zsh completion",
            _ => "fish completion",
        },
        dest: layout.completion(shell),
        content: Content::Text(script.clone()),
        mode: 0o644,
    }));
    files.extend(sources.units.iter().map(|(name, text)| Planned {
        what: "systemd user unit",
        dest: layout.units.join(name),
        content: Content::Text(unit_for(text, &layout.bin)),
        mode: 0o644,
    }));
    files
}

/// A unit whose `ExecStart` runs the program of the same name in `bin` (its arguments kept).
pub fn unit_for(text: &str, bin: &Path) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let Some(command) = line.strip_prefix("ExecStart=") else {
            out.push_str(line);
            continue;
        };
        let (program, rest) = command
            .split_once([' ', '\n'])
            .map_or((command, ""), |(p, _)| (p, &command[p.len()..]));
        let name = program.rsplit('/').next().unwrap_or(program);
        // `%` starts a specifier in a unit file; a path with spaces is quoted.
        let path = bin.join(name).display().to_string().replace('%', "%%");
        let path = if path.contains(char::is_whitespace) {
            format!("\"{path}\"")
        } else {
            path
        };
        out.push_str("ExecStart=");
        out.push_str(&path);
        out.push_str(rest);
    }
    out
}

/// The subcommand pages a main page names in its SUBCOMMANDS section, as lines
/// `clippy\-ctl\-get\-turn(1)`: the commands (`get-turn`).
pub fn named_pages(main_page: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in main_page.lines() {
        let Some(page) = line.trim().strip_suffix("(1)") else {
            continue;
        };
        let page = page.replace("\\-", "-");
        if let Some(command) = page.strip_prefix("clippy-ctl-")
            && !command.is_empty()
            && command
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !names.iter().any(|n| n == command)
        {
            names.push(command.to_owned());
        }
    }
    names
}

/// What one install put under its prefix (and in the units' folder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Folders created (that were not there before), outermost first.
    pub dirs: Vec<PathBuf>,
}

impl Manifest {
    /// The manifest as written: a comment, then `file PATH` and `dir PATH` lines.
    pub fn render(&self) -> String {
        let mut text = String::from(
            "# What `cargo xtask install` put here; `cargo xtask uninstall` removes it.\n",
        );
        for file in &self.files {
            text.push_str(&format!("file {}\n", file.display()));
        }
        for dir in &self.dirs {
            text.push_str(&format!("dir {}\n", dir.display()));
        }
        text
    }

    /// Reads a manifest; only absolute paths are taken.
    pub fn parse(text: &str) -> Result<Manifest> {
        let mut manifest = Manifest::default();
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (kind, path) = line.split_once(' ').unwrap_or((line, ""));
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(Failure::other(format!(
                    "install manifest, line {}: not an absolute path: {line:?}",
                    n + 1
                )));
            }
            match kind {
                "file" => manifest.files.push(path),
                "dir" => manifest.dirs.push(path),
                _ => {
                    return Err(Failure::other(format!(
                        "install manifest, line {}: unknown entry {line:?}",
                        n + 1
                    )));
                }
            }
        }
        Ok(manifest)
    }
}

/// The folders to create for `dest`'s parent, outermost first, given which exist.
pub fn missing_dirs(dest: &Path, exists: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> = dest
        .ancestors()
        .skip(1)
        .take_while(|dir| !dir.as_os_str().is_empty() && !exists(dir))
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    missing
}

/// `cargo xtask install`.
pub fn install(options: &Options) -> Result {
    let layout = current_layout(options.prefix.as_deref())?;
    let bins = match &options.from {
        Some(dir) => normal(&cwd()?.join(dir)),
        None => {
            let mut args = vec!["build", "--release", "--bins"];
            for name in BINARIES {
                args.extend(["-p", name]);
            }
            run(cargo(&root(), &args))?;
            target_dir().join("release")
        }
    };
    for name in BINARIES {
        if !bins.join(name).is_file() {
            return Err(Failure::other(format!(
                "{} is missing (build it, or give --from the folder that holds it)",
                bins.join(name).display()
            )));
        }
    }
    let ctl = bins.join("clippy-ctl");
    let main_page = output(&ctl, &["man"])?;
    let mut man = vec![("clippy-ctl.1".to_owned(), main_page.clone())];
    for command in named_pages(&main_page) {
        let page = output(&ctl, &["man", &command])?;
        man.push((format!("clippy-ctl-{command}.1"), page));
    }
    let completions = SHELLS
        .iter()
        .map(|shell| Ok(((*shell).to_owned(), output(&ctl, &["completions", shell])?)))
        .collect::<Result<Vec<_>>>()?;
    let sources = Sources {
        bins,
        man,
        completions,
        units: contrib_units()?,
    };
    let files = plan(&layout, &sources);

    let previous = match std::fs::read_to_string(&layout.manifest) {
        Ok(text) => Manifest::parse(&text)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Manifest::default(),
        Err(e) => return Err(io_failure("read", &layout.manifest, &e)),
    };
    let mut created = previous.dirs.clone();
    // One line per file, but one for the commands' man pages together.
    let command_pages = files
        .iter()
        .filter(|f| f.what == "man page")
        .count()
        .saturating_sub(1);
    let mut pages_said = false;
    for file in &files {
        created.extend(make_dirs(&file.dest)?);
        let verb = if file.dest.exists() {
            "replaced"
        } else {
            "installed"
        };
        write_file(file)?;
        if file.what != "man page" {
            println!("{verb} {}: {}", file.what, file.dest.display());
        } else if !pages_said {
            pages_said = true;
            println!("{verb} man page: {}", file.dest.display());
            if command_pages > 0 {
                println!(
                    "{verb} {command_pages} man pages of its commands: {}",
                    layout.man1.join("clippy-ctl-COMMAND.1").display()
                );
            }
        }
    }
    let written: BTreeSet<&Path> = files.iter().map(|f| f.dest.as_path()).collect();
    for stale in previous
        .files
        .iter()
        .filter(|f| !written.contains(f.as_path()))
    {
        remove_file(stale, "no longer installed")?;
    }
    created.extend(make_dirs(&layout.manifest)?);
    let manifest = Manifest {
        files: files.iter().map(|f| f.dest.clone()).collect(),
        dirs: dedup(created),
    };
    write_file(&Planned {
        what: "manifest",
        dest: layout.manifest.clone(),
        content: Content::Text(manifest.render()),
        mode: 0o644,
    })?;
    println!(
        "wrote the manifest (for `cargo xtask uninstall`): {}",
        layout.manifest.display()
    );
    advise(&layout, &std::env::var_os("PATH").unwrap_or_default());
    Ok(())
}

/// `cargo xtask uninstall`: removes what the manifest lists, then the folders install created
/// once they are empty.
pub fn uninstall(options: &Options) -> Result {
    let layout = current_layout(options.prefix.as_deref())?;
    let manifest = match std::fs::read_to_string(&layout.manifest) {
        Ok(text) => Manifest::parse(&text)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Failure::other(format!(
                "nothing is installed under {} (no {})",
                layout.prefix.display(),
                layout.manifest.display()
            )));
        }
        Err(e) => return Err(io_failure("read", &layout.manifest, &e)),
    };
    for file in &manifest.files {
        remove_file(file, "")?;
    }
    remove_file(&layout.manifest, "")?;
    // Innermost first: a folder is empty only once the ones inside it are gone.
    let mut dirs = manifest.dirs.clone();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for dir in dirs {
        match std::fs::remove_dir(&dir) {
            Ok(()) => println!("removed folder {}", dir.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => println!("kept folder {} (not empty)", dir.display()),
        }
    }
    Ok(())
}

fn current_layout(prefix: Option<&Path>) -> Result<Layout> {
    Layout::new(prefix, &|name| std::env::var_os(name), &cwd()?)
}

fn cwd() -> Result<PathBuf> {
    std::env::current_dir()
        .map_err(|e| Failure::other(format!("cannot read the current folder: {e}")))
}

fn io_failure(doing: &str, path: &Path, error: &std::io::Error) -> Failure {
    Failure::other(format!("cannot {doing} {}: {error}", path.display()))
}

/// `program ARGS…`'s standard output, which must be UTF-8; a failure is an error.
fn output(program: &Path, args: &[&str]) -> Result<String> {
    let what = format!("{} {}", program.display(), args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| Failure::other(format!("cannot run `{what}`: {e}")))?;
    if !out.status.success() {
        return Err(Failure::other(format!(
            "`{what}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    String::from_utf8(out.stdout).map_err(|_| Failure::other(format!("`{what}` wrote non-UTF-8")))
}

/// The units of `contrib/systemd/`, by file name.
fn contrib_units() -> Result<Vec<(String, String)>> {
    let dir = root().join("contrib/systemd");
    let entries = std::fs::read_dir(&dir).map_err(|e| io_failure("read", &dir, &e))?;
    let mut units = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| io_failure("read", &dir, &e))?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.ends_with(".service") {
            let text = std::fs::read_to_string(&path).map_err(|e| io_failure("read", &path, &e))?;
            units.push((name.to_owned(), text));
        }
    }
    units.sort();
    Ok(units)
}

/// Creates the folders `dest` needs; those it created.
fn make_dirs(dest: &Path) -> Result<Vec<PathBuf>> {
    let missing = missing_dirs(dest, &|dir| dir.exists());
    for dir in &missing {
        match std::fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_failure("create", dir, &e)),
        }
    }
    Ok(missing)
}

/// Writes `file` beside its destination, then renames it there: a binary that is running is
/// replaced, not overwritten under the running process.
fn write_file(file: &Planned) -> Result {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let name = file
        .dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = file.dest.with_file_name(format!(".{name}.xtask-install"));
    let written = (|| -> std::io::Result<()> {
        let _ = std::fs::remove_file(&temp);
        match &file.content {
            Content::Copy(from) => {
                std::fs::copy(from, &temp)?;
            }
            Content::Text(text) => {
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(file.mode)
                    .open(&temp)?;
                out.write_all(text.as_bytes())?;
            }
        }
        std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(file.mode))?;
        std::fs::rename(&temp, &file.dest)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        io_failure("write", &file.dest, &e)
    })
}

fn remove_file(path: &Path, why: &str) -> Result {
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(" ({why})")
    };
    match std::fs::remove_file(path) {
        Ok(()) => {
            println!("removed {}{why}", path.display());
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("already gone: {}", path.display());
            Ok(())
        }
        Err(e) => Err(io_failure("remove", path, &e)),
    }
}

fn dedup(dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = BTreeSet::new();
    dirs.into_iter()
        .filter(|d| seen.insert(d.clone()))
        .collect()
}

/// What is left for the user to do: PREFIX/bin on the `PATH` (warned on stderr when it is
/// not), zsh's `fpath`, the units.
fn advise(layout: &Layout, path: &OsStr) {
    if !on_path(&layout.bin, path) {
        eprintln!(
            "warning: {} is not on your PATH: add `export PATH=\"{}:$PATH\"` to your shell's \
             profile (e.g. ~/.profile), then log in again",
            layout.bin.display(),
            layout.bin.display()
        );
    }
    println!(
        "zsh: completions load from {} once it is on fpath (before compinit)",
        layout
            .completion("zsh")
            .parent()
            .unwrap_or(&layout.prefix)
            .display()
    );
    let units = layout.units.display();
    if layout.default_prefix || layout.prefix == Path::new("/usr/local") {
        println!(
            "systemd: `systemctl --user daemon-reload`, then `systemctl --user enable --now \
             clippy-broker` (and clippy-hotkeys on a desktop) to run them from {units}"
        );
    } else {
        println!(
            "systemd: the units in {units} are not where systemd looks: `systemctl --user link \
             {units}/clippy-broker.service` to use one"
        );
    }
}

/// Whether `dir` is one of the `PATH`'s folders (as written, or once symlinks are resolved).
fn on_path(dir: &Path, path: &OsStr) -> bool {
    let real = |d: &Path| std::fs::canonicalize(d).unwrap_or_else(|_| normal(d));
    let wanted = real(dir);
    std::env::split_paths(path).any(|entry| entry == dir || real(&entry) == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn arguments() {
        let install = |a: &[&str]| parse(&strings(a), true).ok();
        assert_eq!(install(&[]), Some(Options::default()));
        assert_eq!(
            install(&["--prefix", "/opt/c", "--from=target/debug"]),
            Some(Options {
                prefix: Some("/opt/c".into()),
                from: Some("target/debug".into()),
            })
        );
        assert_eq!(
            install(&["--prefix=~x"]).and_then(|o| o.prefix),
            Some(PathBuf::from("~x"))
        );
        for bad in [
            &["--prefix"][..],
            &["--prefix="],
            &["--prefix", "a", "--prefix", "b"],
            &["--bogus"],
            &["prefix"],
        ] {
            assert!(install(bad).is_none(), "{bad:?}");
        }
        // uninstall takes no --from.
        assert!(parse(&strings(&["--from", "x"]), false).is_err());
        assert!(parse(&strings(&["--prefix", "x"]), false).is_ok());
    }

    #[test]
    fn the_default_prefix_is_home_dot_local_with_units_in_the_users_config() {
        let vars = [("HOME", "/home/ada")];
        let layout = Layout::new(None, &env(&vars), Path::new("/tmp")).ok();
        let layout = layout.expect("a layout");
        assert_eq!(layout.prefix, Path::new("/home/ada/.local"));
        assert!(layout.default_prefix);
        assert_eq!(layout.bin, Path::new("/home/ada/.local/bin"));
        assert_eq!(layout.units, Path::new("/home/ada/.config/systemd/user"));
        assert_eq!(
            layout.manifest,
            Path::new("/home/ada/.local/share/clippy/install-manifest")
        );
        // XDG_CONFIG_HOME moves the units; the same prefix written out is still the default.
        let vars = [("HOME", "/home/ada"), ("XDG_CONFIG_HOME", "/cfg")];
        let given = Path::new("/home/ada/./.local");
        let layout = Layout::new(Some(given), &env(&vars), Path::new("/")).ok();
        let layout = layout.expect("a layout");
        assert!(layout.default_prefix);
        assert_eq!(layout.units, Path::new("/cfg/systemd/user"));
        // No HOME: a prefix is needed.
        assert!(Layout::new(None, &env(&[]), Path::new("/")).is_err());
    }

    #[test]
    fn another_prefix_keeps_everything_under_it() {
        let vars = [("HOME", "/home/ada")];
        let layout = Layout::new(Some(Path::new("../opt")), &env(&vars), Path::new("/w/x")).ok();
        let layout = layout.expect("a layout");
        assert_eq!(layout.prefix, Path::new("/w/opt"));
        assert!(!layout.default_prefix);
        assert_eq!(layout.units, Path::new("/w/opt/lib/systemd/user"));
    }

    #[test]
    fn the_file_plan() {
        let vars = [("HOME", "/home/ada")];
        let layout = Layout::new(Some(Path::new("/p")), &env(&vars), Path::new("/")).ok();
        let layout = layout.expect("a layout");
        let sources = Sources {
            bins: PathBuf::from("/build"),
            man: vec![
                ("clippy-ctl.1".into(), ".TH clippy-ctl 1\n".into()),
                ("clippy-ctl-get-turn.1".into(), ".TH x 1\n".into()),
            ],
            completions: SHELLS
                .iter()
                .map(|s| ((*s).to_owned(), format!("# {s}\n")))
                .collect(),
            units: vec![(
                "clippy-broker.service".into(),
                "[Service]\nExecStart=%h/.cargo/bin/clippy-broker --foreground\n".into(),
            )],
        };
        let files = plan(&layout, &sources);
        let got: Vec<(&str, &Path, u32)> = files
            .iter()
            .map(|f| (f.what, f.dest.as_path(), f.mode))
            .collect();
        let want: Vec<(&str, &Path, u32)> = vec![
            ("binary", Path::new("/p/bin/clippy-session"), 0o755),
            ("binary", Path::new("/p/bin/clippy-broker"), 0o755),
            ("binary", Path::new("/p/bin/clippy-ctl"), 0o755),
            ("binary", Path::new("/p/bin/clippy-mcp"), 0o755),
            (
                "man page",
                Path::new("/p/share/man/man1/clippy-ctl.1"),
                0o644,
            ),
            (
                "man page",
                Path::new("/p/share/man/man1/clippy-ctl-get-turn.1"),
                0o644,
            ),
            (
                "bash completion",
                Path::new("/p/share/bash-completion/completions/clippy-ctl"),
                0o644,
            ),
            (
                "zsh completion",
                Path::new("/p/share/zsh/site-functions/_clippy-ctl"),
                0o644,
            ),
            (
                "fish completion",
                Path::new("/p/share/fish/vendor_completions.d/clippy-ctl.fish"),
                0o644,
            ),
            (
                "systemd user unit",
                Path::new("/p/lib/systemd/user/clippy-broker.service"),
                0o644,
            ),
        ];
        assert_eq!(got, want);
        assert_eq!(
            files[0].content,
            Content::Copy(PathBuf::from("/build/clippy-session"))
        );
        assert_eq!(
            files[9].content,
            Content::Text("[Service]\nExecStart=/p/bin/clippy-broker --foreground\n".into())
        );
    }

    #[test]
    fn units_run_the_installed_binaries() {
        let unit = "# ExecStart=%h/.cargo/bin/x in a comment stays\n\
                    [Service]\nExecStart=%h/.cargo/bin/clippy-ctl hotkeys\nRestart=on-failure\n";
        assert_eq!(
            unit_for(unit, Path::new("/home/ada/.local/bin")),
            "# ExecStart=%h/.cargo/bin/x in a comment stays\n\
             [Service]\nExecStart=/home/ada/.local/bin/clippy-ctl hotkeys\nRestart=on-failure\n"
        );
        assert_eq!(
            unit_for("ExecStart=clippy-broker", Path::new("/opt/my 100%/bin")),
            "ExecStart=\"/opt/my 100%%/bin/clippy-broker\""
        );
    }

    #[test]
    fn the_pages_the_main_page_names() {
        let page = ".SH SUBCOMMANDS\n.TP\nclippy\\-ctl\\-list\\-sessions(1)\nList the sessions\n\
                    .TP\nclippy\\-ctl\\-get\\-turn(1)\nGet\n.SH SEE ALSO\nman(1)\n\
                    clippy\\-ctl\\-get\\-turn(1)\n";
        assert_eq!(named_pages(page), ["list-sessions", "get-turn"]);
    }

    #[test]
    fn the_manifest_round_trips_and_refuses_what_it_did_not_write() {
        let manifest = Manifest {
            files: vec!["/p/bin/clippy-ctl".into(), "/p/share/a b".into()],
            dirs: vec!["/p/share".into(), "/p/share/clippy".into()],
        };
        assert_eq!(Manifest::parse(&manifest.render()).ok(), Some(manifest));
        assert!(Manifest::parse("file relative/path\n").is_err());
        assert!(Manifest::parse("link /p/x\n").is_err());
    }

    #[test]
    fn the_folders_to_create_are_the_missing_ones_outermost_first() {
        let exists = |d: &Path| d == Path::new("/") || d == Path::new("/p");
        assert_eq!(
            missing_dirs(Path::new("/p/share/man/man1/x.1"), &exists),
            [
                PathBuf::from("/p/share"),
                PathBuf::from("/p/share/man"),
                PathBuf::from("/p/share/man/man1")
            ]
        );
        assert!(missing_dirs(Path::new("/p/x"), &exists).is_empty());
    }

    #[test]
    fn a_prefix_is_on_the_path_as_written_or_resolved() {
        let path = OsString::from("/usr/bin:/home/ada/.local/bin");
        assert!(on_path(Path::new("/home/ada/.local/bin"), &path));
        assert!(!on_path(Path::new("/opt/bin"), &path));
    }
}
