//! Helpers shared by the property tests (`properties.rs`) and the hostile-input tests
//! (`hostile.rs`).

use clippy_turn::{Event, TurnDetector};

/// Feeds `records` (`(true, bytes)`: the program wrote them; `(false, bytes)`: the user typed
/// them) to `detector`, cutting output records at `splits` (cycled; none: whole
/// records); the events, and the output stream (every output record, in order).
pub fn feed_records(
    detector: &mut TurnDetector,
    records: &[(bool, Vec<u8>)],
    splits: &[usize],
) -> (Vec<Event>, Vec<u8>) {
    let mut events = Vec::new();
    let mut stream = Vec::new();
    let mut cuts = splits.iter().cycle();
    for (is_output, bytes) in records {
        if *is_output {
            stream.extend_from_slice(bytes);
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let n = cuts.next().map_or(rest.len(), |&c| c.clamp(1, rest.len()));
                events.extend(detector.feed_output(&rest[..n]));
                rest = &rest[n..];
            }
        } else {
            events.extend(detector.feed_input(bytes));
        }
    }
    (events, stream)
}
