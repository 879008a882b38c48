//! When the byte loop hands the child's output to the tap thread: when it would wait, at most
//! once every [`TAP_INTERVAL`], or as soon as [`TAP_BATCH`] bytes wait. The first bytes after a
//! pause go at once and a flood goes in batches, so the tap thread wakes about a thousand
//! times a second under a flood rather than once per PTY read (a wake-up per read would cost
//! the byte path a CPU's share on a small machine).
//!
//! Under a flood (the tap's rule: [`crate::tap::FLOOD_BYTES`] at [`crate::tap::FLOOD_RATE`] or
//! faster) the batches grow to [`FLOOD_BATCH`], at most every [`FLOOD_INTERVAL`], in buffers the
//! tap gives back once it took them ([`Handover::give_back`]): [`FLOOD_BUFFERS`] of them at most,
//! so the loop neither allocates nor grows a buffer per batch, and what waits in the tap's
//! channel stays bounded (when none is free, batches are ordinary ones).
//!
//! Whatever else the loop hands the tap (input, a resize, a screen request) goes behind the
//! output read before it: the loop takes the batch first ([`Handover::take`]).

use std::time::{Duration, Instant};

use crate::tap::Run;

/// Output handed to the tap thread at most this much at a time.
pub const TAP_BATCH: usize = 32 * 1024;
/// Output is handed over when the loop would wait, but not more often than this.
pub const TAP_INTERVAL: Duration = Duration::from_millis(1);
/// Under a flood, output is handed over at most this much at a time.
pub const FLOOD_BATCH: usize = 256 * 1024;
/// Under a flood, output is handed over when the loop would wait, but not more often than this.
pub const FLOOD_INTERVAL: Duration = Duration::from_millis(5);
/// The buffers of [`FLOOD_BATCH`] the loop uses, in its hands or the tap's.
pub const FLOOD_BUFFERS: usize = 4;

/// Whether a batch the loop handed over is in one of its flood buffers, which the tap gives back
/// ([`Handover::give_back`]) once it took it.
#[must_use]
pub fn is_flood_buffer(batch: &Vec<u8>) -> bool {
    batch.capacity() >= FLOOD_BATCH
}

/// The output read and not handed to the tap yet, and when output was last handed over.
///
/// ```
/// use std::time::{Duration, Instant};
/// use clippy_wrapper::handover::{Handover, TAP_INTERVAL};
///
/// let start = Instant::now();
/// let mut handover = Handover::new(start);
/// assert!(!handover.push(b"first", start));
/// // After a pause the first bytes go as soon as the loop would wait.
/// assert_eq!(handover.wait_at_most(start + TAP_INTERVAL), Some(Duration::ZERO));
/// assert_eq!(handover.take(), Some(b"first".to_vec()));
/// handover.handed_over(start + TAP_INTERVAL);
/// // Right behind them, more waits for the interval.
/// handover.push(b"more", start + TAP_INTERVAL);
/// assert_eq!(handover.wait_at_most(start + TAP_INTERVAL), Some(TAP_INTERVAL));
/// assert!(!handover.due(start + TAP_INTERVAL));
/// assert!(handover.due(start + 2 * TAP_INTERVAL));
/// ```
#[derive(Debug)]
pub struct Handover {
    pending: Vec<u8>,
    handed_at: Instant,
    /// The output read since it last paused: whether it is a flood.
    run: Run,
    /// Flood buffers given back, emptied.
    spares: Vec<Vec<u8>>,
    /// Flood buffers made so far (never more than [`FLOOD_BUFFERS`]).
    made: usize,
}

impl Handover {
    /// Nothing read yet; `now` counts as the last hand-over.
    pub fn new(now: Instant) -> Self {
        Self {
            pending: Vec::new(),
            handed_at: now,
            run: Run::default(),
            spares: Vec::new(),
            made: 0,
        }
    }

    /// Output read from the child at `now`: `true` when a batch is full and should go now.
    pub fn push(&mut self, bytes: &[u8], now: Instant) -> bool {
        self.run.add(bytes.len(), now);
        if !self.run.flood() {
            // The flood is over: its buffers go.
            self.made = self.made.saturating_sub(self.spares.len());
            self.spares.clear();
        } else if self.pending.is_empty()
            && let Some(buffer) = self.flood_buffer()
        {
            self.pending = buffer;
        }
        self.pending.extend_from_slice(bytes);
        self.pending.len() >= self.batch()
    }

    /// A flood buffer given back, or a new one while fewer than [`FLOOD_BUFFERS`] were made.
    fn flood_buffer(&mut self) -> Option<Vec<u8>> {
        if let Some(buffer) = self.spares.pop() {
            return Some(buffer);
        }
        (self.made < FLOOD_BUFFERS).then(|| {
            self.made += 1;
            Vec::with_capacity(FLOOD_BATCH + TAP_BATCH)
        })
    }

    /// Whether the batch waiting is a flood's (in a flood buffer).
    fn flood_batch(&self) -> bool {
        is_flood_buffer(&self.pending)
    }

    fn batch(&self) -> usize {
        if self.flood_batch() {
            FLOOD_BATCH
        } else {
            TAP_BATCH
        }
    }

    fn interval(&self) -> Duration {
        if self.flood_batch() {
            FLOOD_INTERVAL
        } else {
            TAP_INTERVAL
        }
    }

    /// The output waiting, to hand over now (sized to what it holds, but for a flood's, which
    /// comes back: a batch waiting in the tap's channel costs its bytes, not a whole batch's
    /// room); `None` when nothing waits. Say when it is handed over
    /// ([`Handover::handed_over`]).
    pub fn take(&mut self) -> Option<Vec<u8>> {
        (!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending))
    }

    /// A batch the tap is done with: a flood buffer is kept to be filled again while the flood
    /// goes on, and freed after it.
    pub fn give_back(&mut self, mut buffer: Vec<u8>) {
        if !is_flood_buffer(&buffer) {
            return;
        }
        if self.run.flood() && self.spares.len() < FLOOD_BUFFERS {
            buffer.clear();
            self.spares.push(buffer);
        } else {
            self.made = self.made.saturating_sub(1);
        }
    }

    /// What [`Handover::take`] gave is with the tap, at `now` (after a wait for room in its
    /// channel, if there was one): the interval counts from here.
    pub fn handed_over(&mut self, now: Instant) {
        self.handed_at = now;
    }

    /// How long the loop may wait before output waiting should go (`None`: nothing waits).
    pub fn wait_at_most(&self, now: Instant) -> Option<Duration> {
        (!self.pending.is_empty())
            .then(|| (self.handed_at + self.interval()).saturating_duration_since(now))
    }

    /// Whether output waits and the interval since the last hand-over has passed: the loop,
    /// with nothing else to do, hands it over.
    pub fn due(&self, now: Instant) -> bool {
        !self.pending.is_empty() && now.saturating_duration_since(self.handed_at) >= self.interval()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_batch_goes_at_once_whatever_the_interval() {
        let start = Instant::now();
        let mut handover = Handover::new(start);
        assert!(!handover.push(&[b'x'; TAP_BATCH - 1], start));
        assert!(handover.push(b"y", start));
        let batch = handover.take().expect("a batch");
        handover.handed_over(start);
        assert_eq!(batch.len(), TAP_BATCH);
        assert_eq!(handover.take(), None, "nothing left");
        assert_eq!(handover.wait_at_most(start), None, "nothing to wait for");
        assert!(!handover.due(start + TAP_INTERVAL));
    }

    /// Pushes `pieces` pieces of 4 KiB, 250 µs apart (16 MiB a second) from `from`, handing
    /// each full batch over and giving it back at once when `give_back`; returns the batches'
    /// lengths and capacities, and when the last piece came.
    fn stream(
        handover: &mut Handover,
        from: Instant,
        pieces: u32,
        give_back: bool,
    ) -> (Vec<(usize, usize)>, Instant) {
        let mut batches = Vec::new();
        let mut at = from;
        for piece in 0..pieces {
            at = from + Duration::from_micros(250) * piece;
            if handover.push(&[b'x'; 4096], at) {
                let batch = handover.take().expect("a full batch");
                handover.handed_over(at);
                batches.push((batch.len(), batch.capacity()));
                if give_back {
                    handover.give_back(batch);
                }
            }
        }
        (batches, at)
    }

    #[test]
    fn a_flood_goes_in_big_batches_in_buffers_that_come_back_and_ordinary_ones_after_it() {
        let start = Instant::now();
        let mut handover = Handover::new(start);
        // 4 MiB at 16 MiB a second: the first MiB in ordinary batches, the rest in big ones.
        let (batches, last) = stream(&mut handover, start, 1024, true);
        let flood_bytes = crate::tap::FLOOD_BYTES as usize;
        let ordinary = batches
            .iter()
            .take_while(|(len, _)| *len == TAP_BATCH)
            .count();
        assert_eq!(ordinary, flood_bytes / TAP_BATCH);
        assert!(
            batches[ordinary..]
                .iter()
                .all(|&(len, capacity)| len == FLOOD_BATCH && capacity >= FLOOD_BATCH)
        );
        assert_eq!(
            batches.len(),
            ordinary + (4 * flood_bytes - flood_bytes) / FLOOD_BATCH
        );
        assert_eq!(handover.made, 1, "the one buffer, given back each time");
        // A flood batch waits for the flood's interval.
        handover.push(b"more", last);
        assert_eq!(handover.wait_at_most(last), Some(FLOOD_INTERVAL));
        let held = handover.take().expect("the batch");
        // After a pause it is over: batches are ordinary again, and its buffer goes when the
        // tap gives it back.
        let later = last + crate::tap::FLOOD_PAUSE;
        assert!(!handover.push(b"after", later));
        assert!(
            handover
                .take()
                .is_some_and(|batch| batch.capacity() < FLOOD_BATCH)
        );
        handover.give_back(held);
        assert_eq!((handover.made, handover.spares.len()), (0, 0));
    }

    #[test]
    fn a_flood_whose_buffers_the_tap_still_holds_goes_in_ordinary_batches() {
        let start = Instant::now();
        let mut handover = Handover::new(start);
        // Nothing given back: `FLOOD_BUFFERS` big batches, then ordinary ones.
        let (batches, _) = stream(&mut handover, start, 1024, false);
        let big = batches
            .iter()
            .filter(|(len, _)| *len == FLOOD_BATCH)
            .count();
        assert_eq!(big, FLOOD_BUFFERS);
        assert_eq!(handover.made, FLOOD_BUFFERS);
        assert_eq!(batches.last().map(|(len, _)| *len), Some(TAP_BATCH));
    }

    #[test]
    fn waiting_output_goes_once_the_interval_since_the_last_hand_over_passed() {
        let start = Instant::now();
        let mut handover = Handover::new(start);
        handover.push(b"a", start);
        handover.take();
        handover.handed_over(start + Duration::from_millis(10));
        handover.push(b"b", start + Duration::from_millis(10));
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
