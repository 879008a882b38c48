//! The broker's injections in order, with a lone Enter kept a write of its own: an Enter that
//! submits injected text (`send --enter`, `exec`, a route's handoff: the broker sends the text,
//! then `\r` on its own after its submit delay) is written to the child no sooner than the
//! submit delay after the wrapper itself wrote the text. The broker spaces them by its clock;
//! a wrapper that was starved (a loaded machine, a stopped process) may read both at once, and
//! an agent that takes a fast burst of text and Enter as one paste (Gemini CLI) then does not
//! submit. No I/O: the byte loop pushes what the broker sent, says when its input queue ran
//! dry, asks what may be written now, and wakes at [`SubmitSpacing::next_at`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The Enter that submits: a carriage return on its own.
pub const ENTER: &[u8] = b"\r";

/// Where the last text injected stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    /// None since the last Enter (or ever): an Enter now is not held.
    None,
    /// Queued for the child, not all written yet.
    Queued,
    /// All written to the child at this time.
    Written(Instant),
}

/// The broker's injections on their way to the byte loop's input queue.
#[derive(Debug)]
pub struct SubmitSpacing {
    delay: Duration,
    waiting: VecDeque<Vec<u8>>,
    text: Text,
}

impl SubmitSpacing {
    /// Spacing of `delay` between injected text and its Enter (the broker's
    /// `broker.submit_delay_ms`).
    pub fn new(delay: Duration) -> Self {
        Self {
            delay,
            waiting: VecDeque::new(),
            text: Text::None,
        }
    }

    /// The broker asked to inject `data`: it waits behind whatever waits already.
    pub fn push(&mut self, data: Vec<u8>) {
        self.waiting.push_back(data);
    }

    /// The byte loop's input queue is empty at `now`: the text handed out last is written.
    pub fn drained(&mut self, now: Instant) {
        if self.text == Text::Queued {
            self.text = Text::Written(now);
        }
    }

    /// What may go into the input queue at `now`, in order: everything up to an Enter that
    /// follows text not yet written, or written less than the delay ago.
    pub fn release(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(front) = self.waiting.front() {
            let enter = front.as_slice() == ENTER;
            if enter {
                match self.text {
                    Text::Queued => break,
                    Text::Written(at) if now < at + self.delay => break,
                    Text::Written(_) | Text::None => self.text = Text::None,
                }
            } else {
                self.text = Text::Queued;
            }
            out.extend(self.waiting.pop_front());
        }
        out
    }

    /// When an Enter held back may be written (`None`: nothing is held by time; an Enter
    /// behind text still queued waits for [`SubmitSpacing::drained`]).
    pub fn next_at(&self) -> Option<Instant> {
        match (self.waiting.front(), self.text) {
            (Some(front), Text::Written(at)) if front.as_slice() == ENTER => Some(at + self.delay),
            _ => None,
        }
    }

    /// Whether anything waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELAY: Duration = Duration::from_millis(150);

    #[test]
    fn text_and_its_enter_read_together_are_written_the_delay_apart() {
        let t0 = Instant::now();
        let mut spacing = SubmitSpacing::new(DELAY);
        spacing.push(b"hello".to_vec());
        spacing.push(ENTER.to_vec());
        // The text goes; the Enter waits for the text to be written.
        assert_eq!(spacing.release(t0), vec![b"hello".to_vec()]);
        assert_eq!(spacing.next_at(), None);
        assert!(spacing.release(t0 + DELAY * 10).is_empty());
        // Written at t1: the Enter is due the delay after, not before.
        let t1 = t0 + Duration::from_millis(30);
        spacing.drained(t1);
        assert_eq!(spacing.next_at(), Some(t1 + DELAY));
        assert!(
            spacing
                .release(t1 + DELAY - Duration::from_millis(1))
                .is_empty()
        );
        assert_eq!(spacing.release(t1 + DELAY), vec![ENTER.to_vec()]);
        assert!(spacing.is_empty());
        assert_eq!(spacing.next_at(), None);
    }

    #[test]
    fn an_enter_that_comes_the_delay_after_its_text_is_written_at_once() {
        let t0 = Instant::now();
        let mut spacing = SubmitSpacing::new(DELAY);
        spacing.push(b"ls".to_vec());
        assert_eq!(spacing.release(t0), vec![b"ls".to_vec()]);
        spacing.drained(t0);
        spacing.push(ENTER.to_vec());
        assert_eq!(spacing.release(t0 + DELAY), vec![ENTER.to_vec()]);
    }

    #[test]
    fn a_lone_enter_with_no_text_before_it_is_not_held() {
        let t0 = Instant::now();
        let mut spacing = SubmitSpacing::new(DELAY);
        spacing.push(ENTER.to_vec());
        assert_eq!(spacing.release(t0), vec![ENTER.to_vec()]);
        // Nor a second one: the first Enter submitted the text.
        spacing.push(b"a".to_vec());
        assert_eq!(spacing.release(t0), vec![b"a".to_vec()]);
        spacing.drained(t0);
        spacing.push(ENTER.to_vec());
        spacing.push(ENTER.to_vec());
        assert!(spacing.release(t0).is_empty());
        assert_eq!(
            spacing.release(t0 + DELAY),
            vec![ENTER.to_vec(), ENTER.to_vec()]
        );
    }

    #[test]
    fn what_follows_a_held_enter_waits_behind_it_in_order() {
        let t0 = Instant::now();
        let mut spacing = SubmitSpacing::new(DELAY);
        for data in [&b"one"[..], ENTER, b"two", ENTER] {
            spacing.push(data.to_vec());
        }
        assert_eq!(spacing.release(t0), vec![b"one".to_vec()]);
        spacing.drained(t0);
        assert_eq!(
            spacing.release(t0 + DELAY),
            vec![ENTER.to_vec(), b"two".to_vec()]
        );
        // `two` is queued; its Enter waits for it to be written, then the delay.
        let t1 = t0 + DELAY + Duration::from_millis(5);
        assert!(spacing.release(t1).is_empty());
        spacing.drained(t1);
        assert!(spacing.release(t1 + DELAY / 2).is_empty());
        assert_eq!(spacing.release(t1 + DELAY), vec![ENTER.to_vec()]);
    }

    #[test]
    fn drained_before_anything_was_handed_out_holds_nothing() {
        let t0 = Instant::now();
        let mut spacing = SubmitSpacing::new(DELAY);
        spacing.drained(t0);
        spacing.push(ENTER.to_vec());
        assert_eq!(spacing.release(t0), vec![ENTER.to_vec()]);
    }
}
