//! The permission dialogs of real agents, read from the screens of their recordings
//! (`crates/clippy-turn/tests/corpus/*-permission*`): each recording is replayed into a live
//! screen, and at the first key the person pressed at the dialog, the dialog clippy reads must
//! offer what the agent offers, with the keys the agent draws, and the person's key must read as
//! the allowing answer they gave.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may panic on setup failures.

use std::path::{Path, PathBuf};

use clippy_proto::Decision;
use clippy_turn::{DetectorConfig, Preset, TurnDetector};
use clippy_wrapper::asciicast::{self, CastEvent};
use clippy_wrapper::dialog::{self, Dialog, Meaning};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../clippy-turn/tests/corpus")
}

/// The dialog on screen when the person first pressed a key at one, and that key.
fn dialog_at_first_answer(name: &str) -> (Dialog, Vec<u8>) {
    let file = std::fs::File::open(corpus().join(format!("{name}.cast"))).unwrap();
    let (header, events) = asciicast::read(std::io::BufReader::new(file)).unwrap();
    let config = DetectorConfig::new(Preset::named("generic").unwrap())
        .size(header.cols, header.rows)
        .unwrap();
    let mut detector = TurnDetector::new(config);
    for (_, event) in events {
        match event {
            CastEvent::Output(text) => {
                let _ = detector.feed_output(text.as_bytes()).count();
            }
            CastEvent::Resize { cols, rows } => detector.resize(cols, rows).unwrap(),
            CastEvent::Input(keys) => {
                let screen = detector.screen(0);
                if let Some(dialog) = dialog::read(&screen.lines, usize::from(screen.cursor.0)) {
                    return (dialog, keys.into_bytes());
                }
                let _ = detector.feed_input(keys.as_bytes()).count();
            }
            CastEvent::Marker | CastEvent::Hook(_) => {}
        }
    }
    panic!("{name}: no dialog read before any key");
}

fn keys(dialog: &Dialog, decision: Decision) -> Result<Vec<u8>, String> {
    dialog.press(decision).map(|p| p.keys)
}

/// Claude Code: a numbered menu, `❯` on the selected option, no keys drawn (its number picks
/// it); "always" is its "Yes, and always allow access to … from this project"; No is last.
#[test]
fn claude_codes_numbered_menu() {
    for name in [
        "claude-permission",
        "claude-permission-80x24",
        "claude-hooks-permission-80x24",
        "claude-hooks-permission-120x40",
        "claude-tmux-permission-key-80x24",
    ] {
        let (dialog, pressed) = dialog_at_first_answer(name);
        let no = dialog.choices.len().to_string().into_bytes();
        assert_eq!(keys(&dialog, Decision::Allow), Ok(b"1".to_vec()), "{name}");
        assert_eq!(keys(&dialog, Decision::Always), Ok(b"2".to_vec()), "{name}");
        assert_eq!(keys(&dialog, Decision::Deny), Ok(no), "{name}");
        assert_eq!(dialog.selected, Some(0), "{name}");
        assert_eq!(
            dialog.meaning_of_keys(&pressed),
            Some(Meaning::Allow),
            "{name}: {pressed:?}"
        );
        // Esc cancels: it reads as the refusal.
        assert_eq!(
            dialog.meaning_of_keys(b"\x1b"),
            Some(Meaning::Deny),
            "{name}"
        );
    }
}

/// Codex: a numbered menu whose options draw their keys, `(y)`, `(p)`, `(esc)`, the second
/// one's label wrapped onto the next line.
#[test]
fn codexs_menu_with_its_own_keys() {
    for name in [
        "codex-permission",
        "codex-permission-80x24",
        "codex-hooks-permission-80x24",
        "codex-hooks-permission-120x40",
    ] {
        let (dialog, pressed) = dialog_at_first_answer(name);
        assert_eq!(keys(&dialog, Decision::Allow), Ok(b"y".to_vec()), "{name}");
        assert_eq!(keys(&dialog, Decision::Always), Ok(b"p".to_vec()), "{name}");
        assert_eq!(
            keys(&dialog, Decision::Deny),
            Ok(b"\x1b".to_vec()),
            "{name}"
        );
        let always = &dialog.choices[1].label;
        assert!(
            always.contains("don't ask again") && always.ends_with('`'),
            "{name}: {always}"
        );
        assert_eq!(
            dialog.meaning_of_keys(&pressed),
            Some(Meaning::Allow),
            "{name}: {pressed:?}"
        );
    }
}

/// Gemini CLI: a numbered menu in a box, `●` on the selected option; "always" is its "Allow
/// for this session"; No is `(esc)`.
#[test]
fn gemini_clis_boxed_menu() {
    for name in ["gemini-permission", "gemini-permission-80x24"] {
        let (dialog, pressed) = dialog_at_first_answer(name);
        assert_eq!(keys(&dialog, Decision::Allow), Ok(b"1".to_vec()), "{name}");
        assert_eq!(keys(&dialog, Decision::Always), Ok(b"2".to_vec()), "{name}");
        assert_eq!(
            keys(&dialog, Decision::Deny),
            Ok(b"\x1b".to_vec()),
            "{name}"
        );
        assert_eq!(dialog.choices[0].label, "Allow once", "{name}");
        assert_eq!(
            dialog.meaning_of_keys(&pressed),
            Some(Meaning::Allow),
            "{name}: {pressed:?}"
        );
    }
}

/// aider: an inline question, the letter and Enter; its "(D)on't ask again" is a lasting
/// refusal, so it offers no "always".
#[test]
fn aiders_inline_question() {
    for name in ["aider-permission", "aider-permission-80x24"] {
        let (dialog, pressed) = dialog_at_first_answer(name);
        assert!(dialog.inline, "{name}");
        assert_eq!(
            keys(&dialog, Decision::Allow),
            Ok(b"y\r".to_vec()),
            "{name}"
        );
        assert_eq!(keys(&dialog, Decision::Deny), Ok(b"n\r".to_vec()), "{name}");
        let refused = keys(&dialog, Decision::Always).unwrap_err();
        assert!(refused.contains("no \"always\""), "{name}: {refused}");
        assert_eq!(
            dialog.meaning_of_keys(&pressed),
            Some(Meaning::Allow),
            "{name}: {pressed:?}"
        );
    }
}
