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
    /// Each queued frame's end in `bytes`, how many bytes of program output it carries, and
    /// whether it is kept when what was not begun is dropped ([`Outbox::push_kept`]).
    frames: VecDeque<(usize, u64, bool)>,
    /// Where the first queued frame starts in `bytes` (the end of the last one written).
    front_start: usize,
}

impl Outbox {
    /// Queues `frame`; `output` is how many bytes of the program's output it carries.
    pub(crate) fn push(&mut self, frame: &AttachFrame, output: u64) {
        self.queue(frame, output, false);
    }

    /// Queues `frame`, which carries no output and must reach the client whatever it skips
    /// (the welcome: the restore bytes and the size): [`drop_unstarted`](Outbox::drop_unstarted)
    /// keeps it.
    pub(crate) fn push_kept(&mut self, frame: &AttachFrame) {
        self.queue(frame, 0, true);
    }

    fn queue(&mut self, frame: &AttachFrame, output: u64, kept: bool) {
        // Every frame the hub builds is far under the frame limit (output is queued in
        // pieces of at most the outbox limit), so encoding cannot fail; were it to, the
        // frame is left out rather than sent broken.
        if encode_into(frame, &mut self.bytes).is_ok() {
            self.frames.push_back((self.bytes.len(), output, kept));
        }
    }

    /// Bytes queued and not yet written.
    pub(crate) fn unsent(&self) -> &[u8] {
        &self.bytes[self.sent..]
    }

    /// `n` more bytes were written.
    pub(crate) fn wrote(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.bytes.len());
        while let Some(&(end, ..)) = self.frames.front()
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
            for (end, ..) in &mut self.frames {
                *end -= gone;
            }
            self.sent -= gone;
            self.front_start = 0;
        }
    }

    /// Drops every frame not yet begun but those pushed with [`push_kept`](Outbox::push_kept)
    /// (a frame partly written stays, so the stream stays whole); returns how many bytes of
    /// program output they carried.
    pub(crate) fn drop_unstarted(&mut self) -> u64 {
        let partly_written = self.sent > self.front_start && !self.frames.is_empty();
        let (keep, kept_frames) = match self.frames.front() {
            Some(&(end, ..)) if partly_written => (end, 1),
            _ => (self.sent, 0),
        };
        let mut skipped = 0;
        let mut start = keep;
        let mut rest = Vec::new();
        let mut kept = VecDeque::new();
        for (end, output, keep_it) in self.frames.drain(kept_frames..) {
            if keep_it {
                rest.extend_from_slice(&self.bytes[start..end]);
                kept.push_back((keep + rest.len(), output, true));
            } else {
                skipped += output;
            }
            start = end;
        }
        self.bytes.truncate(keep);
        self.bytes.extend_from_slice(&rest);
        self.frames.extend(kept);
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
    fn a_kept_frame_not_begun_stays_in_order_and_the_rest_goes() {
        let welcome = AttachFrame::Refused {
            message: "stands for the welcome".into(),
        };
        let mut outbox = Outbox::default();
        outbox.push(&output(10), 10);
        outbox.push_kept(&welcome);
        outbox.push(&output(20), 20);
        outbox.wrote(3);
        assert_eq!(outbox.drop_unstarted(), 20);
        let mut expected = Vec::new();
        encode_into(&output(10), &mut expected).expect("encodes");
        encode_into(&welcome, &mut expected).expect("encodes");
        assert_eq!(outbox.unsent(), &expected[3..]);
        // Dropping again keeps it again; written, it is gone.
        assert_eq!(outbox.drop_unstarted(), 0);
        assert_eq!(outbox.unsent(), &expected[3..]);
        outbox.wrote(expected.len() - 3);
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
