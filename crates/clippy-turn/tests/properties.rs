//! Property tests of the turn machine: chunking invariance, escapes never change detection,
//! no empty turns, byte-exact contents.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
use proptest::prelude::*;

mod common;

use common::feed_records;

/// One step of a generated shell-like session.
#[derive(Debug, Clone)]
struct Step {
    /// What the user types (submitted with `\r`).
    input: String,
    /// The lines the program prints in answer (none: the prompt comes straight back).
    lines: Vec<String>,
    /// The user presses Ctrl+C before the prompt returns.
    interrupt: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (
        "[a-z]{0,8}",
        prop::collection::vec("[ -#%-~é✳日]{0,30}", 0..5),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(input, lines, interrupt)| Step {
            input,
            lines,
            interrupt,
        })
}

/// Escape sequences that do not move the cursor vertically: they must never change detection.
fn decoration() -> impl Strategy<Value = &'static [u8]> {
    prop::sample::select(vec![
        &b"\x1b[1;31m"[..],
        b"\x1b[0m",
        b"\x1b[38;5;174m",
        b"\x1b]0;title\x07",
        b"\x1b]8;;http://x\x1b\\",
        b"\x1b[?25l",
        b"\x1b[K",
        b"",
    ])
}

/// The session as (is_output, bytes) records, the prompt being `$ `.
fn records(steps: &[Step], decorate: &[&[u8]]) -> Vec<(bool, Vec<u8>)> {
    let mut deco = decorate.iter().cycle();
    let mut out = vec![(true, b"\x1b[?2004hwelcome\r\n$ ".to_vec())];
    for step in steps {
        out.push((false, format!("{}\r", step.input).into_bytes()));
        let mut bytes = format!("{}\r\n", step.input).into_bytes();
        for line in &step.lines {
            bytes.extend_from_slice(deco.next().copied().unwrap_or_default());
            bytes.extend_from_slice(line.as_bytes());
            bytes.extend_from_slice(deco.next().copied().unwrap_or_default());
            bytes.extend_from_slice(b"\r\n");
        }
        out.push((true, bytes));
        if step.interrupt {
            out.push((false, b"\x03".to_vec()));
            out.push((true, b"^C\r\n".to_vec()));
        }
        out.push((true, b"$ ".to_vec()));
    }
    out
}

/// Whether a printed line is an echo of `input` by the rule of `CONTRACTS/TURN.md`: the input
/// behind a short decoration (at most 12 characters, ending where a word would), inside box
/// edges. The bare input printed again after the prompt line echoed it is an answer.
fn echo_shaped(line: &str, input: &str) -> bool {
    let input = input.trim();
    if input.is_empty() || line.trim() == input {
        return false;
    }
    let line = line.trim_matches(|c: char| c.is_whitespace() || "│┃|".contains(c));
    line == input
        || line.strip_suffix(input).is_some_and(|decoration| {
            decoration.trim().chars().count() <= 12
                && decoration
                    .chars()
                    .next_back()
                    .is_some_and(|c| !c.is_alphanumeric())
        })
}

fn detector() -> TurnDetector {
    TurnDetector::new(DetectorConfig::new(Preset::custom(r"^\$ $").unwrap()).max_turn_bytes(64))
}

/// Feeds the records, cutting every output record at the given split points.
fn run(records: &[(bool, Vec<u8>)], splits: &[usize]) -> (Vec<Event>, Vec<u8>) {
    feed_records(&mut detector(), records, splits)
}

fn turns(events: &[Event]) -> Vec<&clippy_turn::Turn> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TurnCompleted(t) => Some(t),
            _ => None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_chunking_gives_the_same_events(
        steps in prop::collection::vec(step(), 1..8),
        splits in prop::collection::vec(1usize..12, 1..20),
    ) {
        let records = records(&steps, &[]);
        let (whole, _) = run(&records, &[]);
        let (split, _) = run(&records, &splits);
        prop_assert_eq!(whole, split);
    }

    #[test]
    fn escapes_never_change_which_lines_match(
        steps in prop::collection::vec(step(), 1..8),
        decorations in prop::collection::vec(decoration(), 1..10),
    ) {
        let (plain, _) = run(&records(&steps, &[]), &[]);
        let (decorated, _) = run(&records(&steps, &decorations), &[]);
        let shape = |events: &[Event]| -> Vec<(String, bool)> {
            turns(events).iter().map(|t| (t.input.clone(), t.interrupted)).collect()
        };
        prop_assert_eq!(shape(&plain), shape(&decorated));
        let prompts = |events: &[Event]| events.iter().filter(|e| matches!(e, Event::Prompt { .. })).count();
        prop_assert_eq!(prompts(&plain), prompts(&decorated));
    }

    #[test]
    fn turns_are_never_empty_and_are_exact_slices_of_the_stream(
        steps in prop::collection::vec(step(), 1..8),
        decorations in prop::collection::vec(decoration(), 1..10),
        splits in prop::collection::vec(1usize..40, 1..10),
    ) {
        let (events, stream) = run(&records(&steps, &decorations), &splits);
        let mut last_end = 0;
        for turn in turns(&events) {
            prop_assert!(turn.start >= last_end && turn.start <= turn.end);
            last_end = turn.end;
            let (start, end) = (turn.start as usize, turn.end as usize);
            // Byte-exact: the content is the stream's bytes at its offsets (cut at the limit).
            prop_assert_eq!(&turn.content[..], &stream[start..start + turn.content.len()]);
            prop_assert!(turn.content.len() <= 64);
            prop_assert_eq!(turn.truncated, end - start > turn.content.len());
            // The prompt line is excluded: what follows the content is the prompt.
            prop_assert!(stream[end..].starts_with(b"$ "));
            // Never empty: the agent said something that is not the echo of a keystroke, or
            // the user interrupted it.
            prop_assert!(
                !turn.text().trim().is_empty() || turn.truncated || turn.interrupted,
                "{:?}",
                turn
            );
        }
        // Every step that printed a visible line other than an echo of its input, or that was
        // interrupted, produced exactly one turn.
        let expected = steps
            .iter()
            .filter(|s| {
                s.interrupt
                    || s.lines.iter().any(|l| !l.trim().is_empty() && !echo_shaped(l, &s.input))
            })
            .count();
        prop_assert_eq!(turns(&events).len(), expected);
    }
}
