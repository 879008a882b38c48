//! Which registered session lives under a process: the sans-I/O half of every resolver.
//!
//! A resolver finds the process the user is looking at (the terminal of the focused X window,
//! the active tmux pane's shell). The session is then the registered one whose child descends
//! from that process. The decision is made on a [`ProcessTable`], a snapshot of `/proc`, so the
//! rules are unit-tested on made-up tables.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use crate::error::FocusError;

/// What a resolver needs to know about a registered session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    /// The session id.
    pub session: String,
    /// Its name, if any.
    pub name: Option<String>,
    /// The pid of the wrapped child (the wrapper is its parent).
    pub pid: u32,
}

impl SessionRef {
    /// The name when it has one, else the id: how people know the session.
    #[must_use]
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.session)
    }
}

/// One process, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcInfo {
    /// Its pid.
    pub pid: u32,
    /// Its parent's pid (0 for the kernel's children).
    pub ppid: u32,
    /// Its process group.
    pub pgrp: i32,
    /// Its controlling terminal (device number; 0: none).
    pub tty_nr: i32,
    /// The foreground process group of its controlling terminal (-1: none).
    pub tpgid: i32,
}

impl ProcInfo {
    /// Parses the contents of `/proc/<pid>/stat`. The command name (field 2) is in parentheses
    /// and may itself contain spaces and parentheses, so the fields are counted from the last
    /// `)`.
    ///
    /// ```
    /// use clippy_desktop::ProcInfo;
    /// let p = ProcInfo::parse_stat("42 (my (odd) name) S 7 42 42 34816 42 4194560 0").expect("parses");
    /// assert_eq!((p.pid, p.ppid, p.pgrp, p.tty_nr, p.tpgid), (42, 7, 42, 34816, 42));
    /// ```
    #[must_use]
    pub fn parse_stat(stat: &str) -> Option<ProcInfo> {
        let open = stat.find(" (")?;
        let close = stat.rfind(')')?;
        let pid = stat.get(..open)?.trim().parse().ok()?;
        let mut rest = stat.get(close + 1..)?.split_ascii_whitespace();
        let _state = rest.next()?;
        let ppid = rest.next()?.parse().ok()?;
        let pgrp = rest.next()?.parse().ok()?;
        let _session = rest.next()?;
        let tty_nr = rest.next()?.parse().ok()?;
        let tpgid = rest.next()?.parse().ok()?;
        Some(ProcInfo {
            pid,
            ppid,
            pgrp,
            tty_nr,
            tpgid,
        })
    }
}

/// A snapshot of the process table.
#[derive(Debug, Clone, Default)]
pub struct ProcessTable {
    procs: HashMap<u32, ProcInfo>,
}

impl ProcessTable {
    /// A table of the given processes (for tests, or another source than `/proc`).
    pub fn from_procs(procs: impl IntoIterator<Item = ProcInfo>) -> ProcessTable {
        ProcessTable {
            procs: procs.into_iter().map(|p| (p.pid, p)).collect(),
        }
    }

    /// Reads `/proc`. Processes that end while it is read are skipped.
    ///
    /// # Errors
    ///
    /// When `/proc` cannot be listed.
    pub fn snapshot() -> io::Result<ProcessTable> {
        ProcessTable::read(Path::new("/proc"))
    }

    /// Reads a proc file system mounted at `root`.
    ///
    /// # Errors
    ///
    /// When `root` cannot be listed.
    pub fn read(root: &Path) -> io::Result<ProcessTable> {
        let mut procs = HashMap::new();
        for entry in std::fs::read_dir(root)? {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            if let Some(info) = ProcInfo::parse_stat(&stat) {
                procs.insert(info.pid, info);
            }
        }
        Ok(ProcessTable { procs })
    }

    /// The process `pid`, if it was there.
    #[must_use]
    pub fn get(&self, pid: u32) -> Option<&ProcInfo> {
        self.procs.get(&pid)
    }

    /// Whether `ancestor` is `pid` or one of its ancestors.
    #[must_use]
    pub fn descends_from(&self, pid: u32, ancestor: u32) -> bool {
        let mut current = pid;
        // A snapshot is not atomic: bound the walk so a reused pid cannot make a cycle.
        for _ in 0..=self.procs.len() {
            if current == ancestor {
                return true;
            }
            match self.procs.get(&current) {
                Some(info) if info.ppid != 0 && info.ppid != current => current = info.ppid,
                _ => return false,
            }
        }
        false
    }

    /// Whether `pid` is in the foreground process group of its controlling terminal; `None`
    /// when that cannot be told (gone, or no controlling terminal).
    #[must_use]
    pub fn in_foreground(&self, pid: u32) -> Option<bool> {
        let info = self.procs.get(&pid)?;
        (info.tty_nr != 0 && info.tpgid > 0).then_some(info.pgrp == info.tpgid)
    }
}

/// The session under the process `focus` (a terminal's pid, a tmux pane's pid).
///
/// The candidates are the sessions whose child descends from `focus`. Several candidates are
/// narrowed down before giving up:
///
/// 1. by the foreground: a wrapper that is not in the foreground process group of its terminal
///    (suspended with Ctrl+Z, started with `&`) is not what the user sees — dropped, where
///    `/proc` tells;
/// 2. by nesting: a session wrapped inside another's child (`clippy-session -- bash`, then
///    `clippy-session -- python` in that bash) hides the outer one — the innermost wins.
///
/// What is left must be one session, else [`FocusError::Ambiguous`] lists the candidates.
///
/// ```
/// use clippy_desktop::{ProcInfo, ProcessTable, SessionRef, resolve_focus};
/// let p = |pid, ppid| ProcInfo { pid, ppid, pgrp: pid as i32, tty_nr: 0, tpgid: -1 };
/// // xterm 10 → wrapper 11 → child 12; another xterm 20 → wrapper 21 → child 22.
/// let table = ProcessTable::from_procs([p(10, 1), p(11, 10), p(12, 11), p(20, 1), p(21, 20), p(22, 21)]);
/// let sessions = [
///     SessionRef { session: "aaa".into(), name: None, pid: 12 },
///     SessionRef { session: "bbb".into(), name: None, pid: 22 },
/// ];
/// assert_eq!(resolve_focus(20, &sessions, &table)?.session, "bbb");
/// assert!(resolve_focus(30, &sessions, &table).is_err());
/// # Ok::<(), clippy_desktop::FocusError>(())
/// ```
///
/// # Errors
///
/// [`FocusError::NoSession`] when no session runs under `focus`, [`FocusError::Ambiguous`]
/// when several do and nothing tells them apart.
pub fn resolve_focus<'s>(
    focus: u32,
    sessions: &'s [SessionRef],
    table: &ProcessTable,
) -> Result<&'s SessionRef, FocusError> {
    let mut candidates: Vec<&SessionRef> = sessions
        .iter()
        .filter(|s| table.descends_from(s.pid, focus))
        .collect();
    if candidates.len() > 1 {
        let wrapper = |s: &SessionRef| table.get(s.pid).map(|child| child.ppid);
        let foreground: Vec<&SessionRef> = candidates
            .iter()
            .copied()
            .filter(|s| wrapper(s).and_then(|w| table.in_foreground(w)) == Some(true))
            .collect();
        if !foreground.is_empty() {
            candidates = foreground;
        }
    }
    if candidates.len() > 1 {
        // Drop every candidate inside whose child another candidate runs.
        let all = candidates.clone();
        candidates.retain(|outer| {
            !all.iter()
                .any(|inner| inner.pid != outer.pid && table.descends_from(inner.pid, outer.pid))
        });
    }
    match candidates.as_slice() {
        [one] => Ok(one),
        [] => Err(FocusError::NoSession { pid: focus }),
        several => Err(FocusError::Ambiguous {
            pid: focus,
            candidates: several
                .iter()
                .map(|s| match &s.name {
                    Some(name) => format!("{} ({name})", s.session),
                    None => s.session.clone(),
                })
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const TTY1: i32 = 34816;
    const TTY2: i32 = 34817;

    fn p(pid: u32, ppid: u32, pgrp: i32, tty_nr: i32, tpgid: i32) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgrp,
            tty_nr,
            tpgid,
        }
    }

    fn s(session: &str, pid: u32) -> SessionRef {
        SessionRef {
            session: session.into(),
            name: None,
            pid,
        }
    }

    #[test]
    fn stat_lines_parse() {
        let info =
            ProcInfo::parse_stat("1234 (bash) S 1000 1234 1234 34817 5678 4194304 99 0 0").unwrap();
        assert_eq!(info, p(1234, 1000, 1234, TTY2, 5678));
        assert!(ProcInfo::parse_stat("garbage").is_none());
        assert!(ProcInfo::parse_stat("1 (x) S").is_none());
        // Our own entry in the real /proc parses.
        let me = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert!(ProcInfo::parse_stat(&me).is_some());
    }

    #[test]
    fn the_real_table_knows_our_ancestry() {
        let table = ProcessTable::snapshot().unwrap();
        let me = std::process::id();
        let parent = table.get(me).unwrap().ppid;
        assert!(table.descends_from(me, parent));
        assert!(table.descends_from(me, me));
        assert!(!table.descends_from(parent, me));
    }

    #[test]
    fn descent_walks_up_and_stops() {
        let table = ProcessTable::from_procs([p(2, 1, 2, 0, -1), p(3, 2, 3, 0, -1)]);
        assert!(table.descends_from(3, 1));
        assert!(!table.descends_from(3, 4));
        assert!(!table.descends_from(99, 1));
        // A cycle (pid reuse during the snapshot) ends.
        let cyclic = ProcessTable::from_procs([p(5, 6, 5, 0, -1), p(6, 5, 6, 0, -1)]);
        assert!(!cyclic.descends_from(5, 7));
    }

    #[test]
    fn no_session_under_the_focus() {
        let table = ProcessTable::from_procs([p(10, 1, 10, 0, -1), p(12, 11, 12, 0, -1)]);
        let err = resolve_focus(10, &[s("a", 12)], &table).unwrap_err();
        assert!(matches!(err, FocusError::NoSession { pid: 10 }), "{err:?}");
    }

    /// Two wrappers in one terminal (tabs of one terminal process), both in the foreground of
    /// their own tty: nothing tells them apart.
    #[test]
    fn tabs_of_one_terminal_are_ambiguous() {
        let table = ProcessTable::from_procs([
            p(10, 1, 10, 0, -1),
            p(11, 10, 11, TTY1, 11),
            p(12, 11, 12, 0, -1),
            p(21, 10, 21, TTY2, 21),
            p(22, 21, 22, 0, -1),
        ]);
        let mut named = s("bbb", 22);
        named.name = Some("reviewer".into());
        let err = resolve_focus(10, &[s("aaa", 12), named], &table).unwrap_err();
        match &err {
            FocusError::Ambiguous { pid, candidates } => {
                assert_eq!(*pid, 10);
                assert_eq!(candidates, &["aaa".to_owned(), "bbb (reviewer)".to_owned()]);
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("aaa, bbb (reviewer)"), "{err}");
    }

    /// Two wrappers in one terminal, one suspended (Ctrl+Z): the foreground one is focused.
    #[test]
    fn the_foreground_wrapper_wins() {
        let table = ProcessTable::from_procs([
            p(10, 1, 10, 0, -1),     // terminal
            p(15, 10, 15, TTY1, 21), // its shell
            p(11, 15, 11, TTY1, 21), // wrapper A, stopped: not the foreground group
            p(12, 11, 12, 0, -1),    // child A
            p(21, 15, 21, TTY1, 21), // wrapper B, foreground
            p(22, 21, 22, 0, -1),    // child B
        ]);
        let sessions = [s("aaa", 12), s("bbb", 22)];
        assert_eq!(resolve_focus(10, &sessions, &table).unwrap().session, "bbb");
    }

    /// A session wrapped inside another session's shell: the inner one is what shows.
    #[test]
    fn the_innermost_session_wins() {
        let table = ProcessTable::from_procs([
            p(10, 1, 10, 0, -1),     // pane shell
            p(11, 10, 11, TTY1, 11), // outer wrapper (foreground of the pane's tty)
            p(12, 11, 12, 0, -1),    // outer child: bash
            p(13, 12, 13, TTY2, 13), // inner wrapper (foreground of the outer PTY)
            p(14, 13, 14, 0, -1),    // inner child
        ]);
        let sessions = [s("outer", 12), s("inner", 14)];
        assert_eq!(
            resolve_focus(10, &sessions, &table).unwrap().session,
            "inner"
        );
        // Focused on the inner wrapper's terminal itself: the same.
        assert_eq!(
            resolve_focus(12, &sessions, &table).unwrap().session,
            "inner"
        );
    }

    /// Wrappers without a controlling terminal (headless) cannot be told apart by foreground.
    #[test]
    fn unknown_foreground_does_not_hide_candidates() {
        let table = ProcessTable::from_procs([
            p(10, 1, 10, 0, -1),
            p(11, 10, 11, 0, -1),
            p(12, 11, 12, 0, -1),
            p(21, 10, 21, 0, -1),
            p(22, 21, 22, 0, -1),
        ]);
        let err = resolve_focus(10, &[s("a", 12), s("b", 22)], &table).unwrap_err();
        assert!(matches!(err, FocusError::Ambiguous { .. }));
    }
}
