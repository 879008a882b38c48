//! `clippy-session --replay`: run the turn detector over an asciicast recording.

use std::io::Write;

use clippy_turn::{DetectorConfig, Event, Turn, TurnDetector};

use crate::asciicast::{self, CastEvent};

/// One detected turn as printed by `--replay --json`.
#[derive(serde::Serialize)]
struct TurnRecord<'a> {
    seq: u64,
    interrupted: bool,
    truncated: bool,
    byte_length: usize,
    input: &'a str,
    exit_code: Option<i32>,
    cwd: Option<&'a str>,
    text: String,
}

/// Replays `path` through a detector built from `config`, printing each turn to `out`.
pub fn run(
    path: &std::path::Path,
    config: DetectorConfig,
    json: bool,
    out: &mut impl Write,
) -> Result<usize, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let (header, events) = asciicast::read(std::io::BufReader::new(file))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let config = config
        .size(header.cols, header.rows)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let turns = detect(config, &events);
    for turn in &turns {
        print_turn(turn, json, out).map_err(|e| format!("cannot write the listing: {e}"))?;
    }
    Ok(turns.len())
}

/// Feeds the recording's events, in order, to a fresh detector and collects its turns.
pub fn detect(config: DetectorConfig, events: &[CastEvent]) -> Vec<Turn> {
    let mut detector = TurnDetector::new(config);
    let mut turns = Vec::new();
    let mut keep = |events: std::vec::Drain<'_, Event>| {
        turns.extend(events.filter_map(|event| match event {
            Event::TurnCompleted(turn) => Some(turn),
            _ => None,
        }));
    };
    for event in events {
        match event {
            CastEvent::Output(data) => keep(detector.feed_output(data.as_bytes())),
            CastEvent::Input(data) => keep(detector.feed_input(data.as_bytes())),
            CastEvent::Resize { cols, rows } => {
                // A recording's sizes were checked non-zero when it was read.
                let _ = detector.resize(*cols, *rows);
            }
            CastEvent::Marker => {}
        }
    }
    turns
}

fn print_turn(turn: &Turn, json: bool, out: &mut impl Write) -> std::io::Result<()> {
    let record = TurnRecord {
        seq: turn.seq,
        interrupted: turn.interrupted,
        truncated: turn.truncated,
        byte_length: turn.content.len(),
        input: &turn.input,
        exit_code: turn.exit_code,
        cwd: turn.cwd.as_deref(),
        text: turn.text(),
    };
    if json {
        serde_json::to_writer(&mut *out, &record)?;
        return writeln!(out);
    }
    let mut flags = Vec::new();
    if record.interrupted {
        flags.push("interrupted".to_owned());
    }
    if record.truncated {
        flags.push("truncated".to_owned());
    }
    if let Some(code) = record.exit_code {
        flags.push(format!("exit {code}"));
    }
    let flags = if flags.is_empty() {
        String::new()
    } else {
        format!(", {}", flags.join(", "))
    };
    writeln!(
        out,
        "── turn {} ({} bytes{flags}) ──",
        record.seq, record.byte_length
    )?;
    writeln!(out, "input: {}", record.input.replace('\n', "⏎"))?;
    writeln!(out, "{}", record.text)?;
    writeln!(out)
}
