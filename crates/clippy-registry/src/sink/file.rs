//! The file sink: write a turn to a file, atomically, mode 0600.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{FILE_SINK, Sink};
use crate::{SinkError, TurnMeta};

/// Mode of every file the sink writes.
const FILE_MODE: u32 = 0o600;
/// How many temporary names to try before giving up (another writer holding each one).
const TEMP_ATTEMPTS: u32 = 32;
/// Longest piece of the target's name reused in the temporary name, in bytes (names are limited
/// to 255 bytes on most file systems).
const TEMP_STEM_MAX: usize = 64;

/// Writes turn content to a file, replacing it whole (CONTRACT_REGISTRY sink `file`).
///
/// The write is atomic: the content goes into a new temporary file in the same folder (created
/// exclusively, `O_EXCL`, mode 0600), is synced to disk, and is then renamed over the target. A
/// reader sees the old file or the new one, never a partial one. The result is mode 0600 whatever
/// the umask and whatever mode an existing target had, since it is a new file. On any error the
/// temporary file is removed and the target is untouched.
///
/// Refused, with a clear [`SinkError`]: a relative path (the broker's working directory is not
/// the client's), a path without a file name, a missing parent folder (none is created), a target
/// that is a directory, a symlink (never followed — and `rename` replaces a link rather than
/// writing through it, so a link planted after the check cannot redirect the write either) or any
/// other non-regular file.
///
/// ```
/// use clippy_registry::{FileSink, Sink, TurnId, TurnRecord};
///
/// let dir = std::env::temp_dir().join(format!("clippy-registry-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("answer.txt");
///
/// let record = TurnRecord::new(TurnId::new("s1", 1)?, 0, &b"hello\n"[..], "hello\n");
/// let mut sink = FileSink::new(&path);
/// sink.deliver(record.content(), record.meta()).unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello\n");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSink {
    path: PathBuf,
}

impl FileSink {
    /// A sink writing to `path` (an absolute path to a file). Nothing is checked until
    /// [`deliver`](Sink::deliver) or [`write`](Self::write), since the file system can change
    /// in between.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> FileSink {
        FileSink { path: path.into() }
    }

    /// The target path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the target file's content with `content`, atomically (see the type's docs).
    /// This is what [`deliver`](Sink::deliver) does; it needs no turn metadata.
    ///
    /// # Errors
    ///
    /// [`SinkError::RelativePath`], [`SinkError::NoFileName`], [`SinkError::ParentMissing`],
    /// [`SinkError::ParentNotDirectory`], [`SinkError::IsDirectory`], [`SinkError::Symlink`],
    /// [`SinkError::NotRegularFile`] for a target it refuses; [`SinkError::FolderNotWritable`]
    /// for a folder it may not write in (named with links resolved); [`SinkError::Io`] naming
    /// the step that failed otherwise.
    pub fn write(&self, content: &[u8]) -> Result<(), SinkError> {
        let (parent, target) = check_target(&self.path)?;
        write_via_temp(parent, &target, content)
    }
}

impl Sink for FileSink {
    fn name(&self) -> &str {
        FILE_SINK
    }

    fn deliver(&mut self, content: &[u8], _meta: &TurnMeta) -> Result<(), SinkError> {
        self.write(content)
    }
}

/// Checks `path` and returns its parent folder and the normalised target path.
fn check_target(path: &Path) -> Result<(&Path, PathBuf), SinkError> {
    if !path.is_absolute() {
        return Err(SinkError::RelativePath {
            path: path.to_owned(),
        });
    }
    let no_file_name = || SinkError::NoFileName {
        path: path.to_owned(),
    };
    // `Path` ignores a trailing '/' or '/.', but the user meant a folder there.
    let raw = path.as_os_str().as_bytes();
    if raw.ends_with(b"/") || raw.ends_with(b"/.") {
        return Err(no_file_name());
    }
    let file_name = path.file_name().ok_or_else(no_file_name)?;
    let parent = path.parent().ok_or_else(no_file_name)?;
    match fs::metadata(parent) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(SinkError::ParentNotDirectory {
                path: path.to_owned(),
                parent: parent.to_owned(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(SinkError::ParentMissing {
                path: path.to_owned(),
                parent: parent.to_owned(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            return Err(SinkError::ParentNotDirectory {
                path: path.to_owned(),
                parent: parent.to_owned(),
            });
        }
        Err(source) => {
            return Err(SinkError::Io {
                path: path.to_owned(),
                op: "inspect folder",
                source,
            });
        }
    }
    let target = parent.join(file_name);
    // Never follow a symlink at the target itself.
    match fs::symlink_metadata(&target) {
        Ok(meta) => {
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(SinkError::Symlink { path: target });
            }
            if kind.is_dir() {
                return Err(SinkError::IsDirectory { path: target });
            }
            if !kind.is_file() {
                return Err(SinkError::NotRegularFile { path: target });
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(SinkError::Io {
                path: target,
                op: "inspect",
                source,
            });
        }
    }
    Ok((parent, target))
}

/// Writes `content` to a fresh temporary file in `parent` and renames it over `target`. Removes
/// the temporary file on any error.
fn write_via_temp(parent: &Path, target: &Path, content: &[u8]) -> Result<(), SinkError> {
    let io_err = |op: &'static str| {
        move |source| SinkError::Io {
            path: target.to_owned(),
            op,
            source,
        }
    };
    let (temp, mut file) = create_temp(parent, target).map_err(|source| {
        if matches!(
            source.kind(),
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
        ) {
            SinkError::FolderNotWritable {
                path: target.to_owned(),
                folder: fs::canonicalize(parent).unwrap_or_else(|_| parent.to_owned()),
                source,
            }
        } else {
            io_err("create temporary file")(source)
        }
    })?;
    let written = (|| {
        // The umask may have narrowed the creation mode; make it exact.
        file.set_permissions(Permissions::from_mode(FILE_MODE))
            .map_err(io_err("set mode"))?;
        file.write_all(content).map_err(io_err("write"))?;
        file.sync_all().map_err(io_err("sync"))?;
        drop(file);
        fs::rename(&temp, target).map_err(io_err("rename"))
    })();
    if written.is_err() {
        // Best effort: the error being reported is the first one.
        let _ = fs::remove_file(&temp);
        return written;
    }
    // Make the rename itself durable. Best effort: the content is in place either way.
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Creates `.<name>.clippy-<pid>-<n>.tmp` next to `target`, exclusively and mode 0600.
fn create_temp(parent: &Path, target: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let stem = temp_stem(target.file_name().unwrap_or_else(|| OsStr::new("file")));
    let pid = std::process::id();
    let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
    for _ in 0..TEMP_ATTEMPTS {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = parent.join(format!(".{stem}.clippy-{pid}-{n}.tmp"));
        // `create_new` is O_CREAT|O_EXCL: it fails on any existing entry, symlinks included.
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The target's name, made printable and cut to [`TEMP_STEM_MAX`] bytes at a char boundary.
fn temp_stem(name: &OsStr) -> String {
    let lossy = name.to_string_lossy();
    let mut end = lossy.len().min(TEMP_STEM_MAX);
    while !lossy.is_char_boundary(end) {
        end -= 1;
    }
    lossy[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::os::unix::net::UnixListener;

    use super::*;
    use crate::sink::test_util::{TempDir, meta};

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path)
            .expect("stat")
            .permissions()
            .mode()
            & 0o7777
    }

    fn deliver(path: &Path, content: &[u8]) -> Result<(), SinkError> {
        FileSink::new(path).deliver(content, &meta())
    }

    #[test]
    fn writes_a_new_file_0600_and_leaves_no_temp() {
        let dir = TempDir::new("new");
        let path = dir.path().join("out.txt");
        deliver(&path, b"hello\n").expect("deliver");
        assert_eq!(fs::read(&path).expect("read"), b"hello\n");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(dir.entries(), ["out.txt"]);
        assert_eq!(FileSink::new(&path).name(), "file");
    }

    #[test]
    fn replaces_an_existing_0644_file_and_makes_it_0600() {
        let dir = TempDir::new("existing");
        let path = dir.path().join("out.txt");
        fs::write(&path, b"old content that is longer").expect("seed");
        fs::set_permissions(&path, Permissions::from_mode(0o644)).expect("chmod");
        deliver(&path, b"new").expect("deliver");
        assert_eq!(fs::read(&path).expect("read"), b"new");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(dir.entries(), ["out.txt"]);
    }

    #[test]
    fn an_empty_turn_gives_an_empty_file() {
        let dir = TempDir::new("empty");
        let path = dir.path().join("out");
        deliver(&path, b"").expect("deliver");
        assert_eq!(fs::read(&path).expect("read"), b"");
    }

    #[test]
    fn refuses_a_symlink_and_does_not_follow_it() {
        let dir = TempDir::new("symlink");
        let real = dir.path().join("real.txt");
        fs::write(&real, b"untouched").expect("seed");
        let link = dir.path().join("link.txt");
        symlink(&real, &link).expect("symlink");
        let err = deliver(&link, b"evil").expect_err("symlink refused");
        assert!(matches!(err, SinkError::Symlink { .. }), "{err}");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(fs::read(&real).expect("read"), b"untouched");
        assert!(
            fs::symlink_metadata(&link)
                .expect("stat")
                .file_type()
                .is_symlink()
        );
        assert_eq!(dir.entries(), ["link.txt", "real.txt"]);

        // A dangling link is refused too (it would otherwise create its target).
        let dangling = dir.path().join("dangling");
        symlink(dir.path().join("nowhere"), &dangling).expect("symlink");
        assert!(matches!(
            deliver(&dangling, b"x"),
            Err(SinkError::Symlink { .. })
        ));
        assert!(!dir.path().join("nowhere").exists());
    }

    /// A folder the current user cannot write in: a read-only tmpfs when root (who ignores
    /// permission bits), unmounted on drop; mode 0500 otherwise.
    struct Locked(Option<PathBuf>);

    impl Locked {
        /// Makes `path`; `None` when, as root, no read-only tmpfs can be mounted on it.
        fn new(path: &Path) -> Option<Locked> {
            fs::create_dir(path).expect("mkdir");
            let root = fs::read_to_string("/proc/self/status").is_ok_and(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|ids| ids.split_whitespace().nth(1))
                    == Some("0")
            });
            if !root {
                fs::set_permissions(path, Permissions::from_mode(0o500)).expect("chmod");
                return Some(Locked(None));
            }
            std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"])
                .arg(path)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
                .then(|| Locked(Some(path.to_owned())))
        }
    }

    impl Drop for Locked {
        fn drop(&mut self) {
            if let Some(mount) = &self.0 {
                let _ = std::process::Command::new("umount")
                    .arg("-l")
                    .arg(mount)
                    .status();
            }
        }
    }

    #[test]
    fn a_path_through_a_link_into_an_unwritable_folder_is_refused_by_name() {
        let dir = TempDir::new("linked");
        let locked = dir.path().join("locked");
        let Some(_locked) = Locked::new(&locked) else {
            eprintln!("skipped: as root, a read-only tmpfs is needed and mount refused");
            return;
        };
        let link = dir.path().join("link");
        symlink(&locked, &link).expect("symlink");
        let path = link.join("answer.txt");
        let err = deliver(&path, b"secret").expect_err("an unwritable folder");
        assert!(matches!(err, SinkError::FolderNotWritable { .. }), "{err}");
        let message = err.to_string();
        assert!(
            message.contains(&path.display().to_string())
                && message.contains(&locked.display().to_string()),
            "the message names the path and where it leads: {message}"
        );
        assert_eq!(fs::read_dir(&locked).expect("read").count(), 0);
        assert_eq!(
            dir.entries(),
            ["link", "locked"],
            "nothing written beside it"
        );
    }

    #[test]
    fn refuses_a_directory() {
        let dir = TempDir::new("dir");
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).expect("mkdir");
        let err = deliver(&sub, b"x").expect_err("directory refused");
        assert!(matches!(err, SinkError::IsDirectory { .. }), "{err}");
        assert_eq!(dir.entries(), ["sub"]);
        assert_eq!(fs::read_dir(&sub).expect("read").count(), 0);
        // A trailing slash names a folder, even one that does not exist.
        let slash = PathBuf::from(format!("{}/new/", dir.path().display()));
        assert!(matches!(
            deliver(&slash, b"x"),
            Err(SinkError::NoFileName { .. })
        ));
        assert!(matches!(
            deliver(&sub.join("."), b"x"),
            Err(SinkError::NoFileName { .. })
        ));
        assert!(matches!(
            deliver(&sub.join(".."), b"x"),
            Err(SinkError::NoFileName { .. })
        ));
        assert!(matches!(
            deliver(Path::new("/"), b"x"),
            Err(SinkError::NoFileName { .. })
        ));
        assert_eq!(dir.entries(), ["sub"]);
    }

    #[test]
    fn refuses_a_missing_parent_without_creating_it() {
        let dir = TempDir::new("noparent");
        let path = dir.path().join("missing").join("out.txt");
        let err = deliver(&path, b"x").expect_err("missing parent");
        assert!(matches!(err, SinkError::ParentMissing { .. }), "{err}");
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn refuses_a_parent_that_is_a_file() {
        let dir = TempDir::new("fileparent");
        let file = dir.path().join("file");
        fs::write(&file, b"").expect("seed");
        assert!(matches!(
            deliver(&file.join("out"), b"x"),
            Err(SinkError::ParentNotDirectory { .. })
        ));
    }

    #[test]
    fn refuses_a_relative_path() {
        assert!(matches!(
            deliver(Path::new("out.txt"), b"x"),
            Err(SinkError::RelativePath { .. })
        ));
    }

    #[test]
    fn refuses_a_socket() {
        let dir = TempDir::new("socket");
        let path = dir.path().join("sock");
        let _listener = UnixListener::bind(&path).expect("bind");
        assert!(matches!(
            deliver(&path, b"x"),
            Err(SinkError::NotRegularFile { .. })
        ));
        assert_eq!(dir.entries(), ["sock"]);
    }

    #[test]
    fn a_failure_after_the_temp_file_exists_removes_it() {
        // The checks passed, then the target became a (non-empty) directory: the rename fails.
        let dir = TempDir::new("race");
        let target = dir.path().join("out");
        fs::create_dir(&target).expect("mkdir");
        fs::write(target.join("keep"), b"").expect("seed");
        let err = write_via_temp(dir.path(), &target, b"content").expect_err("rename fails");
        assert!(matches!(err, SinkError::Io { op: "rename", .. }), "{err}");
        assert_eq!(dir.entries(), ["out"], "no temporary file left");
    }

    #[test]
    fn temp_names_stay_short() {
        let long = "x".repeat(250);
        assert_eq!(temp_stem(OsStr::new(&long)).len(), TEMP_STEM_MAX);
        let wide = "é".repeat(40); // 80 bytes, 2 per char
        let stem = temp_stem(OsStr::new(&wide));
        assert!(stem.len() <= TEMP_STEM_MAX && stem.chars().all(|c| c == 'é'));

        let dir = TempDir::new("longname");
        let path = dir.path().join(&long);
        deliver(&path, b"ok").expect("a 250-byte name works");
        assert_eq!(dir.entries(), [long]);
    }
}
