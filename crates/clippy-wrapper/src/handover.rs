//! When the byte loop hands the child's output to the tap thread: when it would wait, at most
//! once every [`TAP_INTERVAL`], or as soon as [`TAP_BATCH`] bytes wait. The first bytes after a
//! pause go at once and a flood goes in batches, so the tap thread wakes about a thousand
//! times a second under a flood rather than once per PTY read (a wake-up per read would cost
//! the byte path a CPU's share on a small machine).
//!
//! Whatever else the loop hands the tap (input, a resize, a screen request) goes behind the
//! output read before it: the loop takes the batch first ([`Handover::take`]).

use std::time::{Duration, Instant};

/// Output handed to the tap thread at most this much at a time.
pub const TAP_BATCH: usize = 32 * 1024;
/// Output is handed over when the loop would wait, but not more often than this.
pub const TAP_INTERVAL: Duration = Duration::from_millis(1);

/// The output read and not handed to the tap yet, and when output was last handed over.
///
/// ```
/// use std::time::{Duration, Instant};
/// use clippy_wrapper::handover::{Handover, TAP_INTERVAL};
///
/// let start = Instant::now();
/// let mut handover = Handover::new(start);
/// assert!(!handover.push(b"first"));
/// // After a pause the first bytes go as soon as the loop would wait.
/// assert_eq!(handover.wait_at_most(start + TAP_INTERVAL), Some(Duration::ZERO));
/// assert_eq!(handover.take(), Some(b"first".to_vec()));
/// handover.handed_over(start + TAP_INTERVAL);
/// // Right behind them, more waits for the interval.
/// handover.push(b"more");
/// assert_eq!(handover.wait_at_most(start + TAP_INTERVAL), Some(TAP_INTERVAL));
/// assert!(!handover.due(start + TAP_INTERVAL));
/// assert!(handover.due(start + 2 * TAP_INTERVAL));
/// ```
#[derive(Debug)]
pub struct Handover {
    pending: Vec<u8>,
    handed_at: Instant,
}

impl Handover {
    /// Nothing read yet; `now` counts as the last hand-over.
    pub fn new(now: Instant) -> Self {
        Self {
            pending: Vec::new(),
            handed_at: now,
        }
    }

    /// Output read from the child: `true` when a batch is full and should go now.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        self.pending.extend_from_slice(bytes);
        self.pending.len() >= TAP_BATCH
    }

    /// The output waiting, to hand over now (sized to what it holds: a batch waiting in the
    /// tap's channel costs its bytes, not a whole batch's room); `None` when nothing waits.
    /// Say when it is handed over ([`Handover::handed_over`]).
    pub fn take(&mut self) -> Option<Vec<u8>> {
        (!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending))
    }

    /// What [`Handover::take`] gave is with the tap, at `now` (after a wait for room in its
    /// channel, if there was one): the interval counts from here.
    pub fn handed_over(&mut self, now: Instant) {
        self.handed_at = now;
    }

    /// How long the loop may wait before output waiting should go (`None`: nothing waits).
    pub fn wait_at_most(&self, now: Instant) -> Option<Duration> {
        (!self.pending.is_empty())
            .then(|| (self.handed_at + TAP_INTERVAL).saturating_duration_since(now))
    }

    /// Whether output waits and the interval since the last hand-over has passed: the loop,
    /// with nothing else to do, hands it over.
    pub fn due(&self, now: Instant) -> bool {
        !self.pending.is_empty() && now.saturating_duration_since(self.handed_at) >= TAP_INTERVAL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_batch_goes_at_once_whatever_the_interval() {
        let start = Instant::now();
        let mut handover = Handover::new(start);
        assert!(!handover.push(&[b'x'; TAP_BATCH - 1]));
        assert!(handover.push(b"y"));
        let batch = handover.take().expect("a batch");
        handover.handed_over(start);
        assert_eq!(batch.len(), TAP_BATCH);
        assert_eq!(handover.take(), None, "nothing left");
        assert_eq!(handover.wait_at_most(start), None, "nothing to wait for");
        assert!(!handover.due(start + TAP_INTERVAL));
    }

    #[test]
    fn waiting_output_goes_once_the_interval_since_the_last_hand_over_passed() {
        let start = Instant::now();
        let mut handover = Handover::new(start);
        handover.push(b"a");
        handover.take();
        handover.handed_over(start + Duration::from_millis(10));
        handover.push(b"b");
        let half = TAP_INTERVAL / 2;
        let now = start + Duration::from_millis(10) + half;
        assert_eq!(handover.wait_at_most(now), Some(TAP_INTERVAL - half));
        assert!(!handover.due(now));
        let now = start + Duration::from_millis(10) + TAP_INTERVAL;
        assert_eq!(handover.wait_at_most(now), Some(Duration::ZERO));
        assert!(handover.due(now));
        assert_eq!(handover.take(), Some(b"b".to_vec()));
    }
}
