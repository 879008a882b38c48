//! Private temporary folders.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh private folder (mode 0700) under the system's temporary folder, removed with all it
/// holds on drop. Its name is short (a socket path inside must fit in 108 bytes) and unique in
/// the machine: the tag, the test process's pid and a counter.
///
/// [`TempDir::with_runtime`] lays out a folder for programs: `run/` is their `XDG_RUNTIME_DIR`
/// (the broker's socket is `run/clippy/broker.sock`), `home/` their `HOME`.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// An empty folder named after `tag`.
    pub fn new(tag: &str) -> TempDir {
        TempDir::new_in(&std::env::temp_dir(), tag)
    }

    /// An empty folder named after `tag` inside `parent`.
    pub fn new_in(parent: &Path, tag: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("{tag}-{}-{n}", std::process::id()));
        // A folder of that name is a leftover of an earlier process with the same pid.
        let _ = fs::remove_dir_all(&path);
        private_dir(&path);
        TempDir { path }
    }

    /// A folder with `run/` (the `XDG_RUNTIME_DIR`) and `home/` (the `HOME`) of the programs a
    /// test starts, both 0700.
    pub fn with_runtime(tag: &str) -> TempDir {
        let dir = TempDir::new(tag);
        private_dir(&dir.runtime());
        private_dir(&dir.home());
        dir
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name` inside the folder.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }

    /// A new folder `name` (0700, with its parents) inside this one.
    pub fn subdir(&self, name: impl AsRef<Path>) -> PathBuf {
        let path = self.path.join(name);
        private_dir(&path);
        path
    }

    /// `run/`: the `XDG_RUNTIME_DIR` of the test's programs (made by [`TempDir::with_runtime`]).
    pub fn runtime(&self) -> PathBuf {
        self.path.join("run")
    }

    /// `home/`: the `HOME` of the test's programs (made by [`TempDir::with_runtime`]).
    pub fn home(&self) -> PathBuf {
        self.path.join("home")
    }

    /// The broker's socket for the runtime folder `run/`.
    pub fn socket(&self) -> PathBuf {
        crate::socket_in(&self.runtime())
    }

    /// Writes `contents` at `relative` inside the folder (creating the missing folders on the
    /// way); returns the file's path.
    pub fn write(&self, relative: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        }
        fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// The names of the folder's entries, sorted.
    pub fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.path)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", self.path.display()))
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if fs::remove_dir_all(&self.path).is_err() {
            // A test may have left a folder read-only: open them all up, then remove.
            open_up(&self.path);
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Gives `dir` and every folder below it (not following links) mode 0700, parents first (a
/// folder's entries can be listed once it is open).
fn open_up(dir: &Path) {
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o700));
        if let Ok(entries) = fs::read_dir(&dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    todo.push(entry.path());
                }
            }
        }
    }
}

/// Creates `path` and its missing parents with mode 0700, and narrows `path` to 0700 whatever
/// the umask (or an earlier mode) made it.
pub fn private_dir(path: &Path) {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    fs::set_permissions(path, fs::Permissions::from_mode(0o700))
        .unwrap_or_else(|e| panic!("cannot chmod {}: {e}", path.display()));
}
