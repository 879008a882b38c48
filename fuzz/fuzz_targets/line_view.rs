//! The `shell` preset's line view on arbitrary output, fed whole and in arbitrary chunks: no
//! panic, and the same turns either way.
//!
//! Input layout: `[k, split × (k % 16), stream…]`. The split bytes are chunk lengths, used in a
//! cycle (0 feeds an empty chunk); `stream` is output only. Without input, turns come only from
//! OSC 133 marks — exactly the escape parsing that chunk boundaries could break.
#![no_main]

use std::sync::LazyLock;

use clippy_turn::{DetectorConfig, Event, Preset, Turn, TurnDetector};
use libfuzzer_sys::fuzz_target;

/// Compiled once: compiling the regexes on every run would dominate the run time.
static SHELL: LazyLock<Preset> = LazyLock::new(|| Preset::named("shell").expect("shipped preset"));

fuzz_target!(|data: &[u8]| {
    let [k, rest @ ..] = data else {
        return;
    };
    let (splits, stream) = rest.split_at(usize::from(k % 16).min(rest.len()));
    let whole = turns(stream, &[]);
    let chunked = turns(stream, splits);
    assert_eq!(whole, chunked, "chunks {splits:?} change the turns");
    for turn in &whole {
        std::hint::black_box(turn.text());
    }
});

/// The turns from feeding `stream` in chunks of the `splits` lengths (cycled); all of it at
/// once when there are none.
fn turns(stream: &[u8], splits: &[u8]) -> Vec<Turn> {
    let mut detector = TurnDetector::new(DetectorConfig::new(SHELL.clone()));
    let mut events = Vec::new();
    let mut rest = stream;
    let mut cuts = splits.iter().cycle();
    let mut empty_in_a_row = 0;
    while !rest.is_empty() {
        let n = match cuts.next() {
            // Every split is zero: stop cycling and feed the rest.
            Some(_) if empty_in_a_row >= splits.len() => rest.len(),
            Some(&n) => usize::from(n).min(rest.len()),
            None => rest.len(),
        };
        empty_in_a_row = if n == 0 { empty_in_a_row + 1 } else { 0 };
        let (chunk, next) = rest.split_at(n);
        events.extend(detector.feed_output(chunk));
        rest = next;
    }
    assert_eq!(detector.output_offset(), stream.len() as u64);
    events
        .into_iter()
        .filter_map(|event| match event {
            Event::TurnCompleted(turn) => Some(turn),
            _ => None,
        })
        .collect()
}
