//! `clippy-session --replay`'s detection: an asciicast recording's events fed through the turn
//! detector as the live wrapper feeds it.
//!
//! A recording made with the agent's hooks wired holds their reports (`h` events, see
//! [`crate::asciicast`]); they are fed to the detector in order with the output, as the live
//! tap does, when asked. A replay has no clock, so it never calls [`TurnDetector::settle`]:
//! where the live wrapper gives up after [`AGREEMENT_GRACE`] on a turn one source says ended
//! and the other does not, the replayed turn waits until the other source speaks or the next
//! input ends it, and a last turn still waiting when the recording ends is not listed. For the
//! same reason the hooks are never taken as silent.
//!
//! Quiet output is the one clock a replay does keep: the recording's timestamps say where
//! output stopped for [`QUIET`] or more, and there the detector is told so
//! ([`TurnDetector::quiet`]), as the live tap would have, before the next event.
//!
//! [`AGREEMENT_GRACE`]: crate::tap::AGREEMENT_GRACE

use clippy_turn::{DetectorConfig, Event, Turn, TurnDetector};

use crate::asciicast::CastEvent;
use crate::tap::{QUIET, signal_of};

/// Whether a recording holds any of the agent's hook reports (then a replay feeds them unless
/// told not to).
pub fn has_hook_reports(events: &[(f64, CastEvent)]) -> bool {
    events.iter().any(|(_, e)| matches!(e, CastEvent::Hook(_)))
}

/// Feeds the recording's events (each with its time in seconds), in order, to a fresh detector
/// and collects its turns; the hook reports only when `feed_hooks`. As in the live wrapper, the
/// detector takes the prompts, turn ends and waits the hooks report ([`signal_of`]); a report of
/// an event clippy does not act on is not the detector's; and where output that moved the
/// screen ([`clippy_turn::TurnDetector::screen_moved`]) stopped for [`QUIET`] before the next
/// event, the detector is told it went quiet.
///
/// ```
/// use clippy_turn::{DetectorConfig, Preset};
/// use clippy_wrapper::asciicast::CastEvent;
/// use clippy_wrapper::replay::detect;
///
/// let events = [
///     (0.1, CastEvent::Output("$ ".into())),
///     (0.2, CastEvent::Input("ls\r".into())),
///     (0.3, CastEvent::Output("ls\r\nfile\r\n$ ".into())),
/// ];
/// let turns = detect(DetectorConfig::new(Preset::named("shell")?), &events, false);
/// assert_eq!(turns.len(), 1);
/// assert_eq!((turns[0].input.as_str(), turns[0].text()), ("ls", "file".to_owned()));
/// # Ok::<(), clippy_turn::TurnError>(())
/// ```
pub fn detect(config: DetectorConfig, events: &[(f64, CastEvent)], feed_hooks: bool) -> Vec<Turn> {
    let mut detector = TurnDetector::new(config);
    let mut turns = Vec::new();
    let mut keep = |events: std::vec::Drain<'_, Event>| {
        turns.extend(events.filter_map(|event| match event {
            Event::TurnCompleted(turn) => Some(turn),
            _ => None,
        }));
    };
    // When output last came, while the detector has not been told it went quiet since.
    let mut output_at: Option<f64> = None;
    for (time, event) in events {
        if output_at.is_some_and(|at| time - at >= QUIET.as_secs_f64()) {
            output_at = None;
            keep(detector.quiet());
        }
        match event {
            CastEvent::Output(data) => {
                keep(detector.feed_output(data.as_bytes()));
                // As live: the quiet clock runs from the last output that moved the screen.
                if detector.screen_moved() {
                    output_at = Some(*time);
                }
            }
            CastEvent::Input(data) => keep(detector.feed_input(data.as_bytes())),
            CastEvent::Resize { cols, rows } => {
                // A recording's sizes were checked non-zero when it was read.
                let _ = detector.resize(*cols, *rows);
            }
            CastEvent::Marker => {}
            CastEvent::Hook(report) if feed_hooks => {
                if let Some(signal) = signal_of(report) {
                    keep(detector.feed_agent(signal));
                }
            }
            CastEvent::Hook(_) => {}
        }
    }
    turns
}

#[cfg(test)]
mod tests {
    use clippy_turn::{AgentHooks, Preset};

    use super::*;

    /// An agent no preset knows: a prompt decoration and the cursor after it, then a reply; the
    /// output stops `pause` seconds before the recording's last event.
    fn unknown_agent(pause: f64) -> Vec<(f64, CastEvent)> {
        vec![
            (0.1, CastEvent::Output("Agent 1.0\r\n\r\n: ".into())),
            (1.0, CastEvent::Output("hello".into())),
            (1.1, CastEvent::Input("hello\r".into())),
            (1.2, CastEvent::Output("\r\n\r\nHi there.\r\n\r\n: ".into())),
            (1.2 + pause, CastEvent::Input("x".into())),
        ]
    }

    #[test]
    fn output_quiet_for_the_live_threshold_ends_a_turn_as_live() {
        let quiet = QUIET.as_secs_f64();
        let config = || DetectorConfig::new(Preset::named("generic").expect("a preset"));
        let ended = detect(config(), &unknown_agent(quiet + 0.1), false);
        assert_eq!(ended.len(), 1, "{ended:?}");
        assert_eq!(
            (ended[0].input.as_str(), ended[0].text()),
            ("hello", "Hi there.".into())
        );
        assert!(detect(config(), &unknown_agent(quiet / 2.0), false).is_empty());
    }

    #[test]
    fn hook_reports_are_fed_only_when_asked() {
        let ended = clippy_hooks::Report::TurnEnded {
            message: Some("Done.".into()),
            failed: false,
            prompts: Vec::new(),
        };
        let events = [
            (0.1, CastEvent::Output("$ ".into())),
            (0.2, CastEvent::Input("ask\r".into())),
            (0.3, CastEvent::Output("ask\r\nDone.\r\n".into())),
            (0.35, CastEvent::Hook(ended)),
        ];
        assert!(has_hook_reports(&events));
        assert!(!has_hook_reports(&events[..3]));
        let config = DetectorConfig::new(Preset::named("shell").expect("a preset"))
            .agent_hooks(AgentHooks::On);
        let turns = detect(config.clone(), &events, true);
        assert_eq!(turns.len(), 1, "{turns:?}");
        assert!(turns[0].ended_by_agent);
        assert_eq!(turns[0].message.as_deref(), Some("Done."));
        assert!(
            detect(config, &events, false).is_empty(),
            "the turn waits for the hook"
        );
    }
}
