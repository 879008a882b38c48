//! What the wrapper's tap does with every output chunk — append it to the spool and feed it to
//! the turn detector — checked as a property over arbitrary streams and arbitrary chunkings: the
//! turns are exact sub-slices of the stream, and the spool is the stream with every `\r\n`
//! turned into `\n`, both from the same bytes in the same pieces.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use std::fs::OpenOptions;

use clippy_spool::SpoolWriter;
use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
use proptest::prelude::*;

/// One record of a session: output bytes from the child, or input bytes to it.
#[derive(Debug, Clone)]
enum Record {
    Output(Vec<u8>),
    Input(Vec<u8>),
}

/// Output drawn from what matters to both sides: prompts, CR, LF and CRLF, escapes, text.
fn output() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop::sample::select(vec![
        &b"$ "[..],
        b"\r\n",
        b"\r",
        b"\n",
        b"\r\r\n",
        b"\x1b[1;31m",
        b"\x1b[2K",
        b"\x1b[A",
        b"\x1b]0;title\x07",
        b"hello",
        b" world",
        b"x",
        "日本".as_bytes(),
    ]);
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        3 => output().prop_map(Record::Output),
        1 => prop::sample::select(vec![&b"ls\r"[..], b"echo hi\r", b"\x03", b"\r"])
            .prop_map(|bytes| Record::Input(bytes.to_vec())),
    ]
}

/// The stream with every `\r\n` replaced by `\n`.
fn normalise(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.iter().peekable();
    while let Some(&b) = bytes.next() {
        if b == b'\r' && bytes.peek() == Some(&&b'\n') {
            continue;
        }
        out.push(b);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn turns_are_slices_of_the_stream_and_the_spool_is_the_stream_normalised(
        records in prop::collection::vec(record(), 1..24),
        cuts in prop::collection::vec(1usize..48, 1..16),
    ) {
        let dir = std::env::temp_dir().join(format!(
            "clippy-stream-prop-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("output.spool");
        let _ = std::fs::remove_file(&path);
        let file = OpenOptions::new().append(true).create_new(true).open(&path).unwrap();
        let mut spool = SpoolWriter::with_file(file);
        let preset = Preset::custom(r"^\$ $").unwrap();
        let mut detector = TurnDetector::new(DetectorConfig::new(preset).max_turn_bytes(256));

        let mut stream = Vec::new();
        let mut turns = Vec::new();
        let mut cut = cuts.iter().cycle();
        for record in &records {
            match record {
                Record::Input(bytes) => turns.extend(detector.feed_input(bytes)),
                Record::Output(bytes) => {
                    let mut rest = &bytes[..];
                    while !rest.is_empty() {
                        let n = (*cut.next().unwrap()).min(rest.len());
                        let (chunk, after) = rest.split_at(n);
                        // The tap's order: the spool first, then the detector.
                        spool.append(chunk).unwrap();
                        stream.extend_from_slice(chunk);
                        for event in detector.feed_output(chunk) {
                            if let Event::TurnCompleted(turn) = event {
                                let start = spool.spool_offset_of(turn.start);
                                let end = spool.spool_offset_of(turn.end);
                                turns.push(Event::TurnCompleted(turn));
                                prop_assert!(start.is_some() && end.is_some());
                                prop_assert!(start <= end);
                            }
                        }
                        rest = after;
                    }
                }
            }
        }
        // One more byte settles a held-back `\r`.
        spool.append(b"!").unwrap();
        stream.push(b'!');

        for event in &turns {
            if let Event::TurnCompleted(turn) = event {
                let (start, end) = (turn.start as usize, turn.end as usize);
                prop_assert!(start <= end && end <= stream.len());
                prop_assert_eq!(&turn.content[..], &stream[start..start + turn.content.len()]);
                prop_assert_eq!(turn.truncated, end - start > turn.content.len());
            }
        }
        let written = std::fs::read(&path).unwrap();
        prop_assert_eq!(written, normalise(&stream));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
