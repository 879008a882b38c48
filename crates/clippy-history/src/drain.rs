//! How fast a journal is written into the store while sessions keep appending to it, with no
//! I/O and no clock: the store's thread says when records came and how long each portion
//! took, and is told how many records the next portion takes and how long to rest.

use std::time::Duration;

/// Records in a portion when records came since the last one: on a starved thread, new
/// records are not kept waiting behind a long transaction.
const PORTION_MIN: usize = 4;
/// Records in a portion at most: the portion doubles up to this while none come (fewer, larger
/// transactions catch up faster).
const PORTION_MAX: usize = 256;
/// Bytes of frames a portion is cut at, past its first record.
pub const PORTION_BYTES: u64 = 4 << 20;
/// While records keep coming, the thread rests this many times as long as its last portion
/// took: it writes the journal in a tenth of the time at most (its CPU is charged to the
/// broker's share, which the event loop needs), and at full speed once the sessions are quiet.
const REST: u32 = 9;

/// The pace of writing a journal in.
///
/// ```
/// use std::time::Duration;
/// use clippy_history::DrainPace;
///
/// let mut pace = DrainPace::default();
/// assert_eq!(pace.portion(), 4);
/// // Records are coming: after a portion that took 2 ms, rest 18 ms.
/// assert_eq!(pace.written(Duration::from_millis(2)), Some(Duration::from_millis(18)));
/// // None came since: the next portion is twice as large and no rest follows it.
/// assert_eq!(pace.portion(), 8);
/// assert_eq!(pace.written(Duration::from_millis(2)), None);
/// pace.records_came();
/// assert_eq!(pace.portion(), 4);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainPace {
    portion: usize,
    /// Records came since the last portion written (or none was written yet).
    records_came: bool,
}

impl Default for DrainPace {
    fn default() -> Self {
        Self {
            portion: PORTION_MIN,
            records_came: true,
        }
    }
}

impl DrainPace {
    /// Records in the next portion.
    #[must_use]
    pub fn portion(&self) -> usize {
        self.portion
    }

    /// New records came (or another job needs the thread): the next portion is small.
    pub fn records_came(&mut self) {
        self.portion = PORTION_MIN;
        self.records_came = true;
    }

    /// A portion was written into the store, in `took`: how long to rest before the next, when
    /// records came meanwhile. A portion that failed is not written: it is read again at the
    /// same size.
    pub fn written(&mut self, took: Duration) -> Option<Duration> {
        self.portion = (self.portion * 2).min(PORTION_MAX);
        std::mem::take(&mut self.records_came).then(|| took * REST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_portion_doubles_to_its_most_while_no_records_come_and_rests_only_after_they_did() {
        let mut pace = DrainPace::default();
        let ms = Duration::from_millis;
        assert_eq!(pace.written(ms(1)), Some(ms(9)));
        let mut portions = Vec::new();
        for _ in 0..8 {
            portions.push(pace.portion());
            assert_eq!(pace.written(ms(1)), None);
        }
        assert_eq!(portions, [8, 16, 32, 64, 128, 256, 256, 256]);
        pace.records_came();
        pace.records_came();
        assert_eq!(pace.portion(), PORTION_MIN);
        assert_eq!(pace.written(ms(3)), Some(ms(27)));
        assert_eq!(pace.portion(), 2 * PORTION_MIN);
    }
}
