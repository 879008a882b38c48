//! One client's queue of encoded frames, written out as the socket takes them.

use std::collections::VecDeque;

use clippy_proto::attach::{AttachFrame, encode_into};

/// Encoded frames not yet written, and where each ends, so that what was not started can be
/// dropped without cutting a frame in two.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    bytes: Vec<u8>,
    /// `bytes[..sent]` is written.
    sent: usize,
    /// Each queued frame's end in `bytes`, and how many bytes of program output it carries.
    frames: VecDeque<(usize, u64)>,
    /// Where the first queued frame starts in `bytes` (the end of the last one written).
    front_start: usize,
}

impl Outbox {
    /// Queues `frame`; `output` is how many bytes of the program's output it carries.
    pub(crate) fn push(&mut self, frame: &AttachFrame, output: u64) {
        // Every frame the hub builds is far under the frame limit (output is queued in
        // pieces of at most the outbox limit), so encoding cannot fail; were it to, the
        // frame is left out rather than sent broken.
        if encode_into(frame, &mut self.bytes).is_ok() {
            self.frames.push_back((self.bytes.len(), output));
        }
    }

    /// Bytes queued and not yet written.
    pub(crate) fn unsent(&self) -> &[u8] {
        &self.bytes[self.sent..]
    }

    /// `n` more bytes were written.
    pub(crate) fn wrote(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.bytes.len());
        while let Some(&(end, _)) = self.frames.front()
            && end <= self.sent
        {
            self.front_start = end;
            self.frames.pop_front();
        }
        if self.sent == self.bytes.len() {
            self.bytes.clear();
            self.sent = 0;
            self.front_start = 0;
        } else if self.front_start >= 64 * 1024 && self.front_start > self.bytes.len() / 2 {
            // Whole frames written are let go now and then, not on every write.
            let gone = self.front_start;
            self.bytes.drain(..gone);
            for (end, _) in &mut self.frames {
                *end -= gone;
            }
            self.sent -= gone;
            self.front_start = 0;
        }
    }

    /// Drops every frame not yet begun (a frame partly written stays, so the stream stays
    /// whole); returns how many bytes of program output they carried.
    pub(crate) fn drop_unstarted(&mut self) -> u64 {
        let partly_written = self.sent > self.front_start && !self.frames.is_empty();
        let (keep, kept_frames) = match self.frames.front() {
            Some(&(end, _)) if partly_written => (end, 1),
            _ => (self.sent, 0),
        };
        let skipped = self
            .frames
            .drain(kept_frames..)
            .map(|(_, output)| output)
            .sum();
        self.bytes.truncate(keep);
        if self.sent == self.bytes.len() {
            self.bytes.clear();
            self.sent = 0;
            self.front_start = 0;
        }
        skipped
    }

    /// Bytes queued and not yet written.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len() - self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(n: usize) -> AttachFrame {
        AttachFrame::Output {
            data: vec![b'x'; n],
        }
    }

    #[test]
    fn a_frame_partly_written_is_kept_whole_and_the_rest_dropped() {
        let mut outbox = Outbox::default();
        outbox.push(&output(10), 10);
        outbox.push(&output(20), 20);
        outbox.push(&output(30), 30);
        let first_len = outbox.frames[0].0;
        outbox.wrote(3);
        assert_eq!(outbox.drop_unstarted(), 50);
        assert_eq!(outbox.len(), first_len - 3);
        outbox.wrote(first_len - 3);
        assert_eq!(outbox.len(), 0);
    }

    #[test]
    fn at_a_frame_boundary_everything_unwritten_goes() {
        let mut outbox = Outbox::default();
        outbox.push(&output(10), 10);
        outbox.push(&output(20), 20);
        let first_len = outbox.frames[0].0;
        outbox.wrote(first_len);
        assert_eq!(outbox.drop_unstarted(), 20);
        assert_eq!(outbox.len(), 0);
        assert_eq!(outbox.drop_unstarted(), 0);
    }
}
