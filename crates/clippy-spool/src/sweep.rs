//! Stale session folders: the folders of wrappers that died without cleaning up (SIGKILL, a
//! crash, a power cut of the process), removed at the next broker or session start.
//!
//! A folder records its owner when it is created: the file [`OWNER_FILE_NAME`] holds the
//! wrapper's pid, its start time (field 22 of `/proc/<pid>/stat`, which tells a reused pid
//! apart), the boot id and the pid namespace. A folder is stale only when that owner is
//! certainly gone; [`verdict`] decides it from the record and what `/proc` says (no I/O), and
//! [`sweep_stale`] does the I/O. A folder without a readable owner record (made by an older
//! clippy, half-created, or disowned because keeping its spool failed) is left alone.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Name of the owner record inside a session folder.
pub const OWNER_FILE_NAME: &str = "owner";
/// The temporary name the record is written under before it is renamed into place.
const OWNER_TMP_NAME: &str = "owner.tmp";
/// An owner record is a few lines; anything longer is not one.
const OWNER_MAX_BYTES: u64 = 4096;

/// Who created a session folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The wrapper's pid.
    pub pid: u32,
    /// Its start time, in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
    pub start_time: u64,
    /// `/proc/sys/kernel/random/boot_id` when it was created, if readable.
    pub boot_id: Option<String>,
    /// Its pid namespace (`readlink /proc/self/ns/pid`, e.g. `pid:[4026531836]`), if readable.
    pub pid_ns: Option<String>,
}

impl Owner {
    /// The record's text: `key value` lines.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = format!("pid {}\nstart {}\n", self.pid, self.start_time);
        if let Some(boot) = &self.boot_id {
            text.push_str(&format!("boot {boot}\n"));
        }
        if let Some(ns) = &self.pid_ns {
            text.push_str(&format!("pidns {ns}\n"));
        }
        text
    }

    /// Parses a record; `None` when `pid` (non-zero) or `start` is missing or malformed, or a
    /// key repeats. Unknown keys are ignored.
    #[must_use]
    pub fn parse(text: &str) -> Option<Owner> {
        let (mut pid, mut start, mut boot, mut ns) = (None, None, None, None);
        for line in text.lines().filter(|line| !line.is_empty()) {
            let (key, value) = line.split_once(' ')?;
            let slot = match key {
                "pid" => &mut pid,
                "start" => &mut start,
                "boot" => &mut boot,
                "pidns" => &mut ns,
                _ => continue,
            };
            if slot.replace(value.to_owned()).is_some() || value.is_empty() {
                return None;
            }
        }
        let pid = pid?.parse().ok().filter(|&pid: &u32| pid != 0)?;
        let start_time = start?.parse().ok()?;
        Some(Owner {
            pid,
            start_time,
            boot_id: boot,
            pid_ns: ns,
        })
    }

    /// This process as an owner; `None` when `/proc/self/stat` cannot be read.
    #[must_use]
    pub fn current() -> Option<Owner> {
        let host = Host::current()?;
        Some(Owner {
            pid: std::process::id(),
            start_time: host.start_time,
            boot_id: host.boot_id,
            pid_ns: host.pid_ns,
        })
    }
}

/// What the sweeping process knows of its own system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The sweeper's own start time (reading it proves `/proc` works).
    pub start_time: u64,
    /// The current boot id, if readable.
    pub boot_id: Option<String>,
    /// The sweeper's pid namespace, if readable.
    pub pid_ns: Option<String>,
}

impl Host {
    /// Reads `/proc`; `None` when `/proc/self/stat` cannot be read (no `/proc`: nothing can be
    /// judged, so nothing is swept).
    #[must_use]
    pub fn current() -> Option<Host> {
        let stat = fs::read_to_string("/proc/self/stat").ok()?;
        let (_, start_time) = parse_stat(&stat)?;
        let boot_id = fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|id| id.trim().to_owned())
            .filter(|id| !id.is_empty() && !id.contains(char::is_whitespace));
        let pid_ns = fs::read_link("/proc/self/ns/pid")
            .ok()
            .and_then(|link| link.to_str().map(str::to_owned))
            .filter(|ns| !ns.is_empty() && !ns.contains(char::is_whitespace));
        Some(Host {
            start_time,
            boot_id,
            pid_ns,
        })
    }
}

/// What `/proc/<pid>` says about the owner's pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// No such process, or a zombie (dead, never to run again).
    Gone,
    /// A live process with this start time.
    Running {
        /// Field 22 of its `/proc/<pid>/stat`.
        start_time: u64,
    },
    /// `/proc/<pid>/stat` could not be read or parsed for another reason.
    Unknown,
}

impl Process {
    /// Looks `pid` up in `/proc`.
    #[must_use]
    pub fn probe(pid: u32) -> Process {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Process::Gone,
            Err(_) => Process::Unknown,
            Ok(stat) => Process::from_stat(&stat),
        }
    }

    /// From the text of a `/proc/<pid>/stat`.
    #[must_use]
    pub fn from_stat(stat: &str) -> Process {
        match parse_stat(stat) {
            Some(('Z' | 'X' | 'x', _)) => Process::Gone,
            Some((_, start_time)) => Process::Running { start_time },
            None => Process::Unknown,
        }
    }
}

/// The state letter and start time (fields 3 and 22) of a `/proc/<pid>/stat` line. The command
/// name (field 2) may hold spaces and parentheses, so fields are counted after the last `)`.
fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(22 - 3)?.parse().ok()?;
    Some((state, start))
}

/// Whether a session folder may be removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Its owner is certainly gone.
    Stale(&'static str),
    /// Keep it (its owner lives, or that cannot be told).
    Keep(&'static str),
}

/// Decides whether the folder `owner` recorded is stale, from what `host` and `process` (the
/// probe of `owner.pid`) say. Stale only when certain: another boot, or (in the same pid
/// namespace) no such pid, a zombie, or a pid reused by a process started at another time.
#[must_use]
pub fn verdict(owner: &Owner, host: &Host, process: Process) -> Verdict {
    if let (Some(then), Some(now)) = (&owner.boot_id, &host.boot_id)
        && then != now
    {
        return Verdict::Stale("created before the last boot");
    }
    match (&owner.pid_ns, &host.pid_ns) {
        (Some(then), Some(now)) if then == now => {}
        _ => return Verdict::Keep("owner in another or unknown pid namespace"),
    }
    match process {
        Process::Gone => Verdict::Stale("owner process is gone"),
        Process::Running { start_time } if start_time != owner.start_time => {
            Verdict::Stale("owner's pid now belongs to another process")
        }
        Process::Running { .. } => Verdict::Keep("owner is alive"),
        Process::Unknown => Verdict::Keep("owner's state is unknown"),
    }
}

/// Records this process as the owner of the session folder `dir`, atomically (written under a
/// temporary name, then renamed). Best effort: a folder without a record is never swept.
pub(crate) fn write_owner(dir: &Path) -> io::Result<()> {
    let owner = Owner::current().ok_or_else(|| io::Error::other("/proc/self/stat unreadable"))?;
    let tmp = dir.join(OWNER_TMP_NAME);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(crate::FILE_MODE)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&tmp)
        .and_then(|mut file| file.write_all(owner.to_text().as_bytes()))
        .and_then(|()| fs::rename(&tmp, dir.join(OWNER_FILE_NAME)));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Removes the owner record of `dir`, so the folder is never swept (used when a spool that
/// could not be kept is left in place).
pub(crate) fn disown(dir: &Path) {
    let _ = fs::remove_file(dir.join(OWNER_FILE_NAME));
}

/// Reads `dir`'s owner record without following a symlink; `None` unless it is a small regular
/// file of this user holding a well-formed record.
fn read_owner(dir: &Path, uid: u32) -> Option<Owner> {
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(dir.join(OWNER_FILE_NAME))
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != uid || meta.len() > OWNER_MAX_BYTES {
        return None;
    }
    let mut text = String::new();
    file.take(OWNER_MAX_BYTES).read_to_string(&mut text).ok()?;
    Owner::parse(&text)
}

/// Removes the stale session folders under `<runtime_dir>/clippy/sessions/`: each entry that is
/// a real folder (not a symlink) of this user, whose owner record says its wrapper is certainly
/// gone ([`verdict`]). Returns the folders it tried to remove, each with the outcome (a folder
/// already gone counts as removed); everything else is left alone without a word. Never fails
/// as a whole: a `sessions/` folder that is missing, a symlink or not this user's, or a system
/// without `/proc`, sweeps nothing.
#[must_use]
pub fn sweep_stale(runtime_dir: &Path) -> Vec<(PathBuf, io::Result<()>)> {
    let uid = nix::unistd::geteuid().as_raw();
    let sessions = runtime_dir.join("clippy").join("sessions");
    let ours = |path: &Path| {
        fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_dir() && meta.uid() == uid)
    };
    if !ours(&runtime_dir.join("clippy")) || !ours(&sessions) {
        return Vec::new();
    }
    let Some(host) = Host::current() else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir(&sessions) else {
        return Vec::new();
    };
    let mut swept = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if !ours(&path) {
            continue;
        }
        let Some(owner) = read_owner(&path, uid) else {
            continue;
        };
        if let Verdict::Stale(_) = verdict(&owner, &host, Process::probe(owner.pid)) {
            let outcome = match fs::remove_dir_all(&path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                outcome => outcome,
            };
            swept.push((path, outcome));
        }
    }
    swept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(pid: u32, start_time: u64) -> Owner {
        Owner {
            pid,
            start_time,
            boot_id: Some("b1".into()),
            pid_ns: Some("pid:[1]".into()),
        }
    }

    fn host() -> Host {
        Host {
            start_time: 7,
            boot_id: Some("b1".into()),
            pid_ns: Some("pid:[1]".into()),
        }
    }

    #[test]
    fn alive_gone_and_reused() {
        let o = owner(42, 1000);
        let alive = Process::Running { start_time: 1000 };
        assert!(matches!(verdict(&o, &host(), alive), Verdict::Keep(_)));
        assert!(matches!(
            verdict(&o, &host(), Process::Gone),
            Verdict::Stale(_)
        ));
        let reused = Process::Running { start_time: 2000 };
        assert!(matches!(verdict(&o, &host(), reused), Verdict::Stale(_)));
        assert!(matches!(
            verdict(&o, &host(), Process::Unknown),
            Verdict::Keep(_)
        ));
    }

    #[test]
    fn another_boot_is_stale_another_namespace_is_kept() {
        let mut o = owner(42, 1000);
        let alive = Process::Running { start_time: 1000 };
        o.boot_id = Some("b0".into());
        assert!(matches!(verdict(&o, &host(), alive), Verdict::Stale(_)));
        let mut o = owner(42, 1000);
        o.pid_ns = Some("pid:[2]".into());
        assert!(matches!(
            verdict(&o, &host(), Process::Gone),
            Verdict::Keep(_)
        ));
        o.pid_ns = None;
        assert!(matches!(
            verdict(&o, &host(), Process::Gone),
            Verdict::Keep(_)
        ));
    }

    #[test]
    fn stat_lines() {
        let fields = |state: &str| {
            let mut line = format!("123 (a ) (b) {state}");
            for n in 4..=21 {
                line.push_str(&format!(" {n}"));
            }
            line.push_str(" 555 23 24\n");
            line
        };
        assert_eq!(
            Process::from_stat(&fields("S")),
            Process::Running { start_time: 555 }
        );
        assert_eq!(Process::from_stat(&fields("Z")), Process::Gone);
        assert_eq!(Process::from_stat("123 (x) S 1 2"), Process::Unknown);
        assert_eq!(Process::from_stat("garbage"), Process::Unknown);
        let me = fs::read_to_string("/proc/self/stat").unwrap();
        assert!(matches!(Process::from_stat(&me), Process::Running { .. }));
    }

    #[test]
    fn records_round_trip_and_malformed_ones_are_refused() {
        let o = owner(42, 1000);
        assert_eq!(Owner::parse(&o.to_text()), Some(o));
        let bare = Owner::parse("pid 7\nstart 9\nfuture thing\n").unwrap();
        assert_eq!((bare.pid, bare.start_time, bare.boot_id), (7, 9, None));
        for bad in [
            "",
            "pid 7\n",
            "start 9\n",
            "pid 0\nstart 9\n",
            "pid -1\nstart 9\n",
            "pid x\nstart 9\n",
            "pid 7\nstart 9\npid 8\n",
            "pid 7 start 9",
            "pid7\nstart 9\n",
            "\u{0}\u{1}",
        ] {
            assert_eq!(Owner::parse(bad), None, "{bad:?}");
        }
    }

    struct TempRun(PathBuf);
    impl TempRun {
        fn new(tag: &str) -> TempRun {
            let path = std::env::temp_dir().join(format!(
                "clippy-sweep-{tag}-{}-{:?}",
                std::process::id(),
                std::time::SystemTime::now()
            ));
            fs::create_dir_all(path.join("clippy/sessions")).unwrap();
            TempRun(path)
        }
        fn session(&self, id: &str, record: Option<&str>) -> PathBuf {
            let dir = self.0.join("clippy/sessions").join(id);
            fs::create_dir(&dir).unwrap();
            if let Some(record) = record {
                fs::write(dir.join(OWNER_FILE_NAME), record).unwrap();
            }
            dir
        }
    }
    impl Drop for TempRun {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn sweep_removes_only_dead_owners_folders() {
        let run = TempRun::new("sweep");
        let me = Owner::current().unwrap();
        // A pid that cannot exist (above the kernel's pid_max limit of 2^22).
        let dead = Owner {
            pid: 4_194_305,
            ..me.clone()
        };
        let reused = Owner {
            start_time: me.start_time + 1,
            ..me.clone()
        };
        let alive = run.session("alive", Some(&me.to_text()));
        let gone = run.session("gone", Some(&dead.to_text()));
        let reused = run.session("reused", Some(&reused.to_text()));
        let legacy = run.session("legacy", None);
        let malformed = run.session("malformed", Some("pid nope\n"));
        // An owner record that is a symlink to a dead owner's record is not read.
        let linked = run.session("linked", None);
        std::os::unix::fs::symlink(gone.join(OWNER_FILE_NAME), linked.join(OWNER_FILE_NAME))
            .unwrap();
        // A symlink in place of a folder, to a dead owner's folder outside: never followed.
        let outside = TempRun::new("outside");
        let target = outside.session("target", Some(&dead.to_text()));
        let link = run.0.join("clippy/sessions/link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        // A plain file.
        fs::write(run.0.join("clippy/sessions/file"), dead.to_text()).unwrap();

        let mut swept: Vec<PathBuf> = sweep_stale(&run.0)
            .into_iter()
            .map(|(path, outcome)| {
                outcome.unwrap();
                path
            })
            .collect();
        swept.sort();
        assert_eq!(swept, vec![gone.clone(), reused.clone()]);
        assert!(!gone.exists() && !reused.exists());
        for kept in [&alive, &legacy, &malformed, &linked, &link, &target] {
            assert!(kept.exists(), "{}", kept.display());
        }
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(target.join(OWNER_FILE_NAME).exists());
    }

    #[test]
    fn sweep_of_a_missing_or_symlinked_sessions_folder_does_nothing() {
        let run = TempRun::new("missing");
        assert!(sweep_stale(&run.0.join("nowhere")).is_empty());
        let other = TempRun::new("other");
        fs::remove_dir(other.0.join("clippy/sessions")).unwrap();
        std::os::unix::fs::symlink(
            run.0.join("clippy/sessions"),
            other.0.join("clippy/sessions"),
        )
        .unwrap();
        let dead = Owner {
            pid: 4_194_305,
            ..Owner::current().unwrap()
        };
        let gone = run.session("gone", Some(&dead.to_text()));
        assert!(sweep_stale(&other.0).is_empty());
        assert!(gone.exists());
    }

    #[test]
    fn write_owner_records_this_process() {
        let run = TempRun::new("write");
        let dir = run.session("mine", None);
        write_owner(&dir).unwrap();
        assert_eq!(
            read_owner(&dir, nix::unistd::geteuid().as_raw()),
            Owner::current()
        );
        assert!(!dir.join(OWNER_TMP_NAME).exists());
        disown(&dir);
        assert!(!dir.join(OWNER_FILE_NAME).exists());
    }
}
