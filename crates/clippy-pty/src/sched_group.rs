//! The wrapper's weight where Linux schedules each session as one group (autogroup,
//! `kernel.sched_autogroup_enabled`, on by default in many distributions).
//!
//! There, CPU time is shared between sessions first, and a thread's nice value only counts
//! inside its own session. Every wrapped agent runs in a session of its own and so does its
//! wrapper's terminal; the broker that serves them all is one session among them. With 64 busy
//! wrappers the broker got about 1/130 of the CPU and its requests took seconds (issue 29). A
//! process may lower the weight of its own group (`/proc/self/autogroup`, never raise it without
//! privilege): the wrapper lowers its own while it runs, so that its detection yields to the
//! programs and to the broker, and puts it back as it was when it ends. The wrapped program's
//! session is a group of its own and is left alone.

use std::io;

/// Where the kernel shows and takes the nice value of the calling process's group.
const AUTOGROUP: &str = "/proc/self/autogroup";
/// Whether the kernel schedules sessions as groups.
const ENABLED: &str = "/proc/sys/kernel/sched_autogroup_enabled";

/// The nice value in `/proc/self/autogroup`'s text (`/autogroup-123 nice 5`).
pub fn parse_autogroup_nice(text: &str) -> Option<i32> {
    let mut words = text.split_whitespace();
    let group = words.next()?;
    if !group.starts_with("/autogroup-") || words.next()? != "nice" {
        return None;
    }
    words.next()?.parse().ok()
}

/// The calling process's session group lowered to a nice value, put back when dropped (unless
/// something else changed it meanwhile).
#[derive(Debug)]
pub struct GroupNice {
    previous: i32,
    lowered_to: i32,
}

impl GroupNice {
    /// Lowers the calling process's session group to `nice` when the kernel schedules sessions
    /// as groups and the group is above it.
    ///
    /// `Ok(None)`: nothing to do (autogroup off or absent, or the group already at `nice` or
    /// lower).
    ///
    /// # Errors
    ///
    /// The kernel's refusal. `WouldBlock` means "not now": unprivileged changes are limited to
    /// about ten a second on the whole machine, so many wrappers starting at once try again.
    pub fn lower_to(nice: i32) -> io::Result<Option<GroupNice>> {
        if !std::fs::read_to_string(ENABLED).is_ok_and(|enabled| enabled.trim() == "1") {
            return Ok(None);
        }
        let Some(previous) = current()? else {
            return Ok(None);
        };
        if previous >= nice {
            return Ok(None);
        }
        std::fs::write(AUTOGROUP, nice.to_string())?;
        Ok(Some(GroupNice {
            previous,
            lowered_to: nice,
        }))
    }
}

impl Drop for GroupNice {
    fn drop(&mut self) {
        // Only what this changed is put back. A raise to the previous value needs no privilege
        // when that value is not negative; otherwise the kernel refuses and it stays lowered.
        if current().ok().flatten() == Some(self.lowered_to) {
            let _ = std::fs::write(AUTOGROUP, self.previous.to_string());
        }
    }
}

/// Whether the calling process leads its session, and so owns the session group
/// [`GroupNice`] would lower.
///
/// Inside a PID namespace whose session leader lives outside it (a container started from a
/// shell), the kernel reports the session as 0: that is "not the leader", never an error.
pub fn leads_its_session() -> bool {
    nix::unistd::getsid(None).is_ok_and(|sid| sid == nix::unistd::getpid())
}

/// Sets the calling *thread's* nice value (a thread id names one thread to `setpriority` on
/// Linux). Best effort: where it is refused, the thread competes as an equal.
pub fn lower_this_thread(nice: i32) {
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice);
}

/// The calling process's group's nice value; `None` without autogroup support.
fn current() -> io::Result<Option<i32>> {
    match std::fs::read_to_string(AUTOGROUP) {
        Ok(text) => Ok(parse_autogroup_nice(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_process_is_not_its_sessions_leader_unless_it_is() {
        // Whatever runs the tests, the answer agrees with the kernel's own view and never panics
        // (a session reported as 0 inside a PID namespace once did, in rustix's getsid).
        let sid = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|stat| {
                let after_name = stat.rsplit_once(')')?.1.to_owned();
                after_name.split_whitespace().nth(4)?.parse::<i32>().ok()
            });
        if let Some(sid) = sid {
            assert_eq!(leads_its_session(), sid == std::process::id() as i32);
        }
    }

    #[test]
    fn reads_the_kernels_line() {
        assert_eq!(parse_autogroup_nice("/autogroup-1 nice 0\n"), Some(0));
        assert_eq!(parse_autogroup_nice("/autogroup-4711 nice 10"), Some(10));
        assert_eq!(parse_autogroup_nice("/autogroup-2 nice -5\n"), Some(-5));
        assert_eq!(parse_autogroup_nice(""), None);
        assert_eq!(parse_autogroup_nice("/autogroup-2 nice"), None);
        assert_eq!(parse_autogroup_nice("something else"), None);
    }
}
