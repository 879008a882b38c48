//! Cleaning up the processes a test started, found by what only they carry: the test's private
//! `XDG_RUNTIME_DIR` in their environment.

use std::path::{Path, PathBuf};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// The pids of every process (but this one) whose environment holds `XDG_RUNTIME_DIR=runtime`,
/// and whose executable's name is `exe` when one is given.
pub fn processes_carrying(runtime: &Path, exe: Option<&str>) -> Vec<u32> {
    let mut entry = b"XDG_RUNTIME_DIR=".to_vec();
    entry.extend_from_slice(runtime.as_os_str().as_encoded_bytes());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter(|&pid| {
            exe.is_none_or(|exe| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p.ends_with(exe))
            })
        })
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.split(|&b| b == 0).any(|e| e == entry))
        })
        .collect()
}

/// Kills (SIGKILL) the process group led by `pid`, if `pid` still carries `runtime` (a pid
/// reused by another program is left alone).
pub fn kill_tree_of(pid: u32, runtime: &Path) {
    if processes_carrying(runtime, None).contains(&pid) {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// On drop, kills (SIGKILL) every process still carrying the test's runtime folder — the
/// brokers and wrappers the test's programs started on their own, not only the ones it holds —
/// so none outlives its test, pass or fail. Declare it after the [`TempDir`](crate::TempDir)
/// (dropped before the folder) and before what it should outlive.
#[derive(Debug)]
pub struct Reaper {
    runtime: PathBuf,
    exe: Option<String>,
}

impl Reaper {
    /// Every process carrying `runtime`.
    pub fn new(runtime: &Path) -> Reaper {
        Reaper {
            runtime: runtime.to_owned(),
            exe: None,
        }
    }

    /// Only the processes of executable `exe` (e.g. `clippy-broker`).
    pub fn only(mut self, exe: &str) -> Reaper {
        self.exe = Some(exe.to_owned());
        self
    }

    /// Kills them now.
    pub fn reap(&self) {
        for pid in processes_carrying(&self.runtime, self.exe.as_deref()) {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.reap();
    }
}
