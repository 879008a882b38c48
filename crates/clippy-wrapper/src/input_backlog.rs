//! How much injected input waits in the wrapper, wherever it is: decoded from the broker and on
//! its way through the sink thread to the byte loop, or in the loop's queue for the child.
//!
//! The broker refuses `paste`, `send` and `exec` with `busy` while this is over
//! [`clippy_proto::INPUT_BACKLOG_LIMIT`] (the wrapper reports `input_blocked`), so the input it
//! queues for a program that reads slowly, or a wrapper that a saturated machine runs slowly,
//! stays bounded. Counting only the loop's own queue missed what waited before it: on a loaded
//! machine a sink session's wrapper grew by every paste sent to it (issue 29's soak).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use clippy_proto::INPUT_BACKLOG_LIMIT;

/// Injected bytes on their way to the child, shared by the broker link's reader thread, the
/// sink thread and the byte loop.
///
/// ```
/// use clippy_proto::INPUT_BACKLOG_LIMIT;
/// use clippy_wrapper::InputBacklog;
///
/// let backlog = InputBacklog::default();
/// // Read from the broker, not yet queued for the child: it counts already.
/// assert!(backlog.injected(INPUT_BACKLOG_LIMIT + 1), "blocked: tell the broker");
/// backlog.taken(INPUT_BACKLOG_LIMIT + 1);
/// assert!(!backlog.queued(INPUT_BACKLOG_LIMIT + 1), "as much waits as before");
/// assert!(backlog.queued(0), "the child read it: unblocked");
/// assert!(!backlog.is_blocked());
/// ```
#[derive(Debug, Default)]
pub struct InputBacklog {
    /// Decoded from the broker, not yet in the loop's queue.
    in_flight: AtomicUsize,
    /// In the loop's queue for the child (typed and injected alike).
    queued: AtomicUsize,
    /// Whether the total was over the limit when last looked at.
    blocked: AtomicBool,
}

impl InputBacklog {
    /// `len` injected bytes left the broker's connection. `true` when that changed whether input
    /// is blocked: tell the sink thread, which reports [`InputBacklog::is_blocked`].
    pub fn injected(&self, len: usize) -> bool {
        self.in_flight.fetch_add(len, Ordering::AcqRel);
        self.refresh()
    }

    /// `len` injected bytes reached the loop's queue.
    pub fn taken(&self, len: usize) {
        let _ = self
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(len))
            });
    }

    /// The loop's queue now holds `len` bytes. `true` when that changed whether input is blocked.
    pub fn queued(&self, len: usize) -> bool {
        self.queued.store(len, Ordering::Release);
        self.refresh()
    }

    /// Whether more than the limit waits.
    pub fn is_blocked(&self) -> bool {
        self.blocked.load(Ordering::Acquire)
    }

    fn refresh(&self) -> bool {
        let total = self
            .in_flight
            .load(Ordering::Acquire)
            .saturating_add(self.queued.load(Ordering::Acquire));
        let blocked = total > INPUT_BACKLOG_LIMIT;
        self.blocked.swap(blocked, Ordering::AcqRel) != blocked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_on_its_way_counts_as_much_as_input_queued() {
        let backlog = InputBacklog::default();
        assert!(!backlog.injected(INPUT_BACKLOG_LIMIT));
        assert!(!backlog.is_blocked());
        // One byte more, still before the loop: blocked, and the change is told once.
        assert!(backlog.injected(1));
        assert!(backlog.is_blocked());
        assert!(!backlog.injected(10));
        // The loop takes it into its queue: still as much waiting.
        backlog.taken(INPUT_BACKLOG_LIMIT + 11);
        assert!(!backlog.queued(INPUT_BACKLOG_LIMIT + 11));
        assert!(backlog.is_blocked());
        // The child read it.
        assert!(backlog.queued(0));
        assert!(!backlog.is_blocked());
        // Taking more than was counted never wraps around.
        backlog.taken(5);
        assert!(!backlog.queued(0));
    }
}
