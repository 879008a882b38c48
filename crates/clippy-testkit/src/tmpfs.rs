//! A small tmpfs of a test's own, to make a disk full or read-only under a program (root only).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for a test, unmounted when dropped.
#[derive(Debug)]
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount -o size=…`, mode 0700) at `at` (made if missing); the
    /// reason when that cannot be done here (not root, no `mount`).
    pub fn mount(at: &Path, size: &str) -> Result<Tmpfs, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("not running as root".into());
        }
        fs::create_dir_all(at).map_err(|e| format!("cannot create {}: {e}", at.display()))?;
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs(at.to_owned()))
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Remounts it with `options` (`ro`, `rw`).
    pub fn remount(&self, options: &str) -> Result<(), String> {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "remount {options} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}

impl Drop for Tmpfs {
    /// Unmounts it and removes the mount point; and its folder when that is left empty: the
    /// test's [`TempDir`](crate::TempDir) holding it, when dropped first, could not remove the
    /// folder while the tmpfs was mounted.
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = fs::remove_dir(&self.0);
        if let Some(parent) = self.0.parent() {
            let _ = fs::remove_dir(parent);
        }
    }
}
