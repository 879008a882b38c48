//! The turn detector under arbitrary interleavings of output and input, with every shipped
//! preset and a small turn cap, checking after every call that turns are exact slices of the
//! output stream.
//!
//! Input layout: `[preset, limit, record…]`. `preset` picks among `clippy_turn::PRESETS`;
//! `limit` sets `max_turn_bytes` to `16 << (limit % 9)` (16 B … 4 KiB, so truncation is
//! reached) and the agent hooks mode to `(limit / 9) % 3` (off, on, only). Each record is
//! `[header, len, len bytes…]`: header ≥ 0xC0 resizes the screen to `len` × `header & 0x3F`
//! columns × rows (no bytes follow); 0xA0–0xBF is the agent's word (`feed_agent`): bit 0 a turn
//! end whose message is the bytes (none when there are none), else a prompt; 0x80–0x9F
//! `settle()` (no bytes follow); otherwise the low bit says output (0) or input (1). A short
//! last record takes what is left.
#![no_main]

use std::sync::LazyLock;

use clippy_turn::{AgentHooks, AgentSignal, DetectorConfig, Event, PRESETS, Preset, TurnDetector};
use libfuzzer_sys::fuzz_target;

/// Compiled once: compiling the regexes on every run would dominate the run time.
static COMPILED: LazyLock<Vec<Preset>> = LazyLock::new(|| {
    PRESETS
        .iter()
        .map(|spec| Preset::from_spec(spec).expect("shipped presets compile"))
        .collect()
});

fuzz_target!(|data: &[u8]| {
    let [preset, limit, records @ ..] = data else {
        return;
    };
    let mut records = records;
    let preset = COMPILED[usize::from(*preset) % COMPILED.len()].clone();
    let max = 16usize << (limit % 9);
    let hooks = [AgentHooks::Off, AgentHooks::On, AgentHooks::Only][usize::from(limit / 9) % 3];
    let mut detector = TurnDetector::new(
        DetectorConfig::new(preset)
            .max_turn_bytes(max)
            .agent_hooks(hooks),
    );
    // Every output byte fed so far: bounded by the fuzz input.
    let mut output = Vec::with_capacity(records.len());
    let mut seq = 0;
    while let [header, len, rest @ ..] = records {
        if *header >= 0xC0 {
            let (cols, rows) = (u16::from(*len), u16::from(header & 0x3F));
            let resized = detector.resize(cols, rows);
            assert_eq!(resized.is_ok(), cols > 0 && rows > 0);
            records = rest;
            continue;
        }
        if (0x80..0xA0).contains(header) {
            let events: Vec<Event> = detector.settle().collect();
            for event in &events {
                check(event, &output, max, &mut seq);
            }
            records = &records[1..];
            continue;
        }
        let (bytes, next) = rest.split_at(usize::from(*len).min(rest.len()));
        records = next;
        let events: Vec<Event> = if (0xA0..0xC0).contains(header) {
            let text = String::from_utf8_lossy(bytes).into_owned();
            let signal = if header & 1 == 1 {
                AgentSignal::TurnEnded {
                    prompts: vec![text.chars().take(8).collect()],
                    message: (!text.is_empty()).then_some(text),
                }
            } else {
                AgentSignal::PromptSubmitted { prompt: text }
            };
            detector.feed_agent(signal).collect()
        } else if header & 1 == 0 {
            output.extend_from_slice(bytes);
            detector.feed_output(bytes).collect()
        } else {
            detector.feed_input(bytes).collect()
        };
        assert_eq!(detector.output_offset(), output.len() as u64);
        for event in &events {
            check(event, &output, max, &mut seq);
        }
    }
});

fn check(event: &Event, output: &[u8], max: usize, seq: &mut u64) {
    let fed = output.len() as u64;
    match event {
        Event::Ready { offset } | Event::Prompt { offset, .. } => {
            assert!(*offset <= fed, "{event:?} past the {fed} bytes fed");
        }
        Event::TurnCompleted(turn) => {
            *seq += 1;
            assert_eq!(turn.seq, *seq, "turns are numbered 1, 2, 3, …");
            assert!(
                turn.content.len() <= max,
                "content over max_turn_bytes {max}"
            );
            assert!(
                turn.start <= turn.end,
                "start {} > end {}",
                turn.start,
                turn.end
            );
            assert!(turn.end <= fed, "end {} past the {fed} bytes fed", turn.end);
            let start = turn.start as usize;
            assert_eq!(
                &turn.content[..],
                &output[start..start + turn.content.len()],
                "content is not the output at [{start}, {start} + len)"
            );
            assert_eq!(
                turn.truncated,
                turn.end - turn.start > turn.content.len() as u64,
                "truncated flag disagrees with the offsets: {turn:?}"
            );
            std::hint::black_box(turn.text());
        }
        _ => {}
    }
}
