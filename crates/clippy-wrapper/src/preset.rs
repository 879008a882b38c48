//! Which detector a session runs: the preset asked for, else the one configured for the
//! command's name (`claude` → claude, `python3` → python, …), else `generic`; a custom prompt
//! pattern over it; the turn cap asked for, else the configured one.

use clippy_turn::{DetectorConfig, Preset, TurnError};

/// What decides a session's detector: what the command line asked for and what the
/// configuration says for this command.
#[derive(Debug, Clone, Copy, Default)]
pub struct DetectorChoice<'a> {
    /// `--preset`.
    pub preset: Option<&'a str>,
    /// The preset the configuration names for the command's program, if any.
    pub configured: Option<&'a str>,
    /// `--pattern`: a prompt regex that replaces the preset's line pattern.
    pub pattern: Option<&'a str>,
    /// `--max-turn-bytes`.
    pub max_turn_bytes: Option<usize>,
    /// The configuration's `session.max_turn_bytes`.
    pub configured_max_turn_bytes: usize,
}

impl DetectorChoice<'_> {
    /// The detector's configuration; an unknown preset or a bad pattern is an error.
    ///
    /// ```
    /// use clippy_wrapper::preset::DetectorChoice;
    ///
    /// let choice = DetectorChoice {
    ///     configured: Some("python"),
    ///     configured_max_turn_bytes: 1024,
    ///     ..DetectorChoice::default()
    /// };
    /// assert_eq!(choice.config()?.preset().name(), "python");
    /// let asked = DetectorChoice { preset: Some("shell"), ..choice };
    /// assert_eq!(asked.config()?.preset().name(), "shell");
    /// assert_eq!(DetectorChoice::default().config()?.preset().name(), "generic");
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn config(&self) -> Result<DetectorConfig, TurnError> {
        let name = self.preset.or(self.configured).unwrap_or("generic");
        let mut preset = Preset::named(name)?;
        if let Some(pattern) = self.pattern {
            preset = preset.with_prompt(pattern)?;
        }
        let max_turn_bytes = self
            .max_turn_bytes
            .unwrap_or(self.configured_max_turn_bytes);
        Ok(DetectorConfig::new(preset).max_turn_bytes(max_turn_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_preset_or_pattern_is_refused() {
        let bad = DetectorChoice {
            preset: Some("no-such-agent"),
            ..DetectorChoice::default()
        };
        assert!(bad.config().is_err());
        let bad = DetectorChoice {
            pattern: Some("(unclosed"),
            ..DetectorChoice::default()
        };
        assert!(bad.config().is_err());
        assert!(
            DetectorChoice {
                pattern: Some(r"^>>> $"),
                ..DetectorChoice::default()
            }
            .config()
            .is_ok()
        );
    }

    /// Whether a python turn of 100 bytes of output comes out cut with this choice.
    fn cut(choice: DetectorChoice<'_>) -> bool {
        use clippy_turn::{Event, TurnDetector};
        let mut detector = TurnDetector::new(choice.config().expect("a detector"));
        detector.feed_output(b"Python 3\r\n>>> ").for_each(drop);
        detector.feed_input(b"'x'*100\r").for_each(drop);
        let output = format!("'x'*100\r\n{}\r\n>>> ", "x".repeat(100));
        let turns: Vec<_> = detector
            .feed_output(output.as_bytes())
            .filter_map(|e| match e {
                Event::TurnCompleted(turn) => Some(turn),
                _ => None,
            })
            .collect();
        assert_eq!(turns.len(), 1, "{turns:?}");
        turns[0].truncated
    }

    #[test]
    fn the_turn_cap_asked_for_wins_over_the_configured_one() {
        let configured = DetectorChoice {
            configured: Some("python"),
            configured_max_turn_bytes: 1000,
            ..DetectorChoice::default()
        };
        assert!(!cut(configured));
        assert!(cut(DetectorChoice {
            max_turn_bytes: Some(10),
            ..configured
        }));
        assert!(cut(DetectorChoice {
            configured_max_turn_bytes: 10,
            ..configured
        }));
    }
}
