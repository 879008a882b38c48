//! The wrapper's share of the CPU (CONTRACTS/PTY.md): a wrapper that leads a session of its own
//! (spawned, detached, or started straight on a terminal's PTY) lowers that session's group to
//! [`GROUP_NICE`] while it runs ([`clippy_pty::GroupNice`]), so that on a machine saturated by
//! many busy sessions the wrapped programs and the broker come first; it is put back when the
//! wrapper ends. A wrapper run as a shell's job shares its session with that shell and the
//! shell's other jobs, which are not clippy's to lower: it runs as it is. Many wrappers starting
//! at once meet the kernel's limit on such changes (about ten a second on the whole machine): a
//! thread of its own tries again until it gets through.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clippy_pty::GroupNice;

/// The nice value of a wrapper's session group while it runs (weight 110 against a program's or
/// the broker's 1024).
const GROUP_NICE: i32 = 10;
/// How often the kernel may say "not now" before the wrapper gives up and runs as it is.
const ATTEMPTS: u32 = 200;

#[derive(Default)]
struct Held {
    lowered: Option<GroupNice>,
    ended: bool,
}

/// The lowered group, put back as it was when dropped.
pub struct CpuShare {
    held: Arc<Mutex<Held>>,
}

impl CpuShare {
    /// Lowers the session group, now or on a thread of its own until the kernel takes it, when
    /// this process leads its session.
    pub fn yield_to_programs() -> Self {
        let held = Arc::new(Mutex::new(Held::default()));
        if !clippy_pty::leads_its_session() {
            return Self { held };
        }
        let shared = Arc::clone(&held);
        // Spread the retries of wrappers that started together over the kernel's window.
        let spread = Duration::from_millis(u64::from(std::process::id() % 97));
        let _ = std::thread::Builder::new()
            .name("clippy-session-cpu-share".into())
            .spawn(move || {
                for _ in 0..ATTEMPTS {
                    let mut held = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    if held.ended {
                        return;
                    }
                    match GroupNice::lower_to(GROUP_NICE) {
                        Ok(lowered) => {
                            held.lowered = lowered;
                            return;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        // Refused for good (no /proc, a kernel without it): run as it is.
                        Err(_) => return,
                    }
                    drop(held);
                    std::thread::sleep(Duration::from_millis(100) + spread);
                }
            });
        Self { held }
    }
}

impl Drop for CpuShare {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.ended = true;
        // Dropping the lowered group puts it back.
        held.lowered = None;
    }
}
