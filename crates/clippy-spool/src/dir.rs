//! The per-session spool folder under `$XDG_RUNTIME_DIR/clippy/sessions/`.

use std::fs::{self, DirBuilder, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::SpoolError;

/// Mode of every folder on the spool path.
pub const DIR_MODE: u32 = 0o700;
/// Mode of the spool file.
pub const FILE_MODE: u32 = 0o600;
/// Name of the spool file inside a session folder.
pub const SPOOL_FILE_NAME: &str = "output.spool";

/// `<runtime_dir>/clippy/sessions/<session_id>`: where a session's spool folder lives.
/// Does not check anything; readers use it to find a session's spool.
#[must_use]
pub fn session_dir(runtime_dir: &Path, session_id: &str) -> PathBuf {
    runtime_dir.join("clippy").join("sessions").join(session_id)
}

/// `$XDG_RUNTIME_DIR`, when set to a non-empty value.
///
/// # Errors
///
/// [`SpoolError::RuntimeDirUnset`] when it is unset or empty (there is no `/tmp` fallback).
pub fn runtime_dir_from_env() -> Result<PathBuf, SpoolError> {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => Err(SpoolError::RuntimeDirUnset),
    }
}

/// A session's private spool folder, `<runtime_dir>/clippy/sessions/<session_id>/`.
///
/// Creating it creates `clippy/` and `clippy/sessions/` as needed. Every folder on that path is
/// mode `0700`, set explicitly (the umask plays no part): an existing `clippy/` or `sessions/`
/// with a looser mode is tightened if it belongs to this user, and refused with
/// [`SpoolError::NotOwned`] if it does not; symlinks and non-directories are refused. The session
/// folder itself must not exist yet. The creating process records itself in it as the owner
/// (the file `owner`, see [`sweep_stale`](crate::sweep_stale)), best effort.
#[derive(Debug)]
pub struct SpoolDir {
    path: PathBuf,
    session_id: String,
}

impl SpoolDir {
    /// Creates the session folder under `runtime_dir` (which must exist and be absolute).
    ///
    /// # Errors
    ///
    /// [`SpoolError::InvalidSessionId`] for an empty ID, `.`/`..`, or one containing `/` or NUL;
    /// [`SpoolError::RuntimeDirRelative`] / [`SpoolError::RuntimeDir`] when `runtime_dir` is
    /// relative or missing; [`SpoolError::NotADirectory`], [`SpoolError::NotOwned`],
    /// [`SpoolError::CreateDir`], [`SpoolError::Chmod`] for the folders on the way;
    /// [`SpoolError::SessionExists`] when the session folder already exists.
    pub fn create(runtime_dir: &Path, session_id: &str) -> Result<SpoolDir, SpoolError> {
        check_session_id(session_id)?;
        if !runtime_dir.is_absolute() {
            return Err(SpoolError::RuntimeDirRelative {
                path: runtime_dir.to_owned(),
            });
        }
        let meta = fs::metadata(runtime_dir).map_err(|source| SpoolError::RuntimeDir {
            path: runtime_dir.to_owned(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(SpoolError::RuntimeDir {
                path: runtime_dir.to_owned(),
                source: io::Error::from(io::ErrorKind::NotADirectory),
            });
        }
        let uid = nix::unistd::geteuid().as_raw();
        let clippy = runtime_dir.join("clippy");
        ensure_private_dir(&clippy, uid)?;
        let sessions = clippy.join("sessions");
        ensure_private_dir(&sessions, uid)?;
        let path = sessions.join(session_id);
        match DirBuilder::new().mode(DIR_MODE).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(SpoolError::SessionExists { path });
            }
            Err(source) => return Err(SpoolError::CreateDir { path, source }),
        }
        chmod(&path, DIR_MODE)?;
        // Best effort: a folder without an owner record is simply never swept as stale.
        let _ = crate::sweep::write_owner(&path);
        Ok(SpoolDir {
            path,
            session_id: session_id.to_owned(),
        })
    }

    /// Like [`create`](Self::create), under `$XDG_RUNTIME_DIR`.
    ///
    /// # Errors
    ///
    /// [`SpoolError::RuntimeDirUnset`] when `XDG_RUNTIME_DIR` is unset or empty; otherwise as
    /// [`create`](Self::create).
    pub fn from_env(session_id: &str) -> Result<SpoolDir, SpoolError> {
        SpoolDir::create(&runtime_dir_from_env()?, session_id)
    }

    /// The session folder.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session ID.
    #[must_use]
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The spool file's path in the folder.
    #[must_use]
    pub fn spool_path(&self) -> PathBuf {
        self.path.join(SPOOL_FILE_NAME)
    }
}

fn check_session_id(id: &str) -> Result<(), SpoolError> {
    let reason = if id.is_empty() {
        "it is empty"
    } else if id == "." || id == ".." {
        "it is . or .."
    } else if id.contains('/') {
        "it contains '/'"
    } else if id.contains('\0') {
        "it contains a NUL byte"
    } else {
        return Ok(());
    };
    Err(SpoolError::InvalidSessionId {
        id: id.to_owned(),
        reason,
    })
}

/// Makes sure `path` is a directory of ours with mode 0700, creating it if missing.
fn ensure_private_dir(path: &Path, uid: u32) -> Result<(), SpoolError> {
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        // The umask can only have narrowed 0700; set it exactly anyway.
        Ok(()) => return chmod(path, DIR_MODE),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(SpoolError::CreateDir {
                path: path.to_owned(),
                source,
            });
        }
    }
    // Existing: inspect without following a symlink.
    let meta = fs::symlink_metadata(path).map_err(|source| SpoolError::CreateDir {
        path: path.to_owned(),
        source,
    })?;
    if !meta.file_type().is_dir() {
        return Err(SpoolError::NotADirectory {
            path: path.to_owned(),
        });
    }
    if meta.uid() != uid {
        return Err(SpoolError::NotOwned {
            path: path.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    if meta.mode() & 0o7777 != DIR_MODE {
        chmod(path, DIR_MODE)?;
    }
    Ok(())
}

fn chmod(path: &Path, mode: u32) -> Result<(), SpoolError> {
    fs::set_permissions(path, Permissions::from_mode(mode)).map_err(|source| SpoolError::Chmod {
        path: path.to_owned(),
        mode,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_that_cannot_name_a_folder() {
        for bad in ["", ".", "..", "a/b", "a\0b"] {
            assert!(
                matches!(
                    check_session_id(bad),
                    Err(SpoolError::InvalidSessionId { .. })
                ),
                "{bad:?}"
            );
        }
        check_session_id("k3x9").unwrap();
    }

    #[test]
    fn layout() {
        assert_eq!(
            session_dir(Path::new("/run/user/1000"), "ab12"),
            Path::new("/run/user/1000/clippy/sessions/ab12")
        );
    }

    #[test]
    fn relative_runtime_dir_is_refused() {
        assert!(matches!(
            SpoolDir::create(Path::new("relative/dir"), "x"),
            Err(SpoolError::RuntimeDirRelative { .. })
        ));
    }
}
