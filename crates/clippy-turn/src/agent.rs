//! The agent's own word: what its hooks say about its turns, fed to the detector in order
//! with its output, and how much the detector leans on it.

/// What an agent said about its turn through its hooks (Claude Code's `UserPromptSubmit`,
/// `Stop` and `PermissionRequest`, Codex's `agent-turn-complete`, Gemini CLI's `BeforeAgent`
/// and `AfterAgent`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentSignal {
    /// A prompt went to the model.
    PromptSubmitted {
        /// The prompt as the agent sent it.
        prompt: String,
    },
    /// The agent finished its turn.
    TurnEnded {
        /// The agent's own final message, when its hook gave one.
        message: Option<String>,
        /// The prompts the agent says the turn answered, when it says (empty: not said). A
        /// turn end whose prompts are not the running turn's is another conversation's (Codex
        /// reports its title thread's turns too) and is ignored.
        prompts: Vec<String>,
    },
    /// The agent waits on the user in a dialog of its own (a permission request): the running
    /// turn is held by it, and a refusal may stop the turn with no further word from the agent
    /// (no turn-end hook, no new title), only the preset's `stopped_line` on its screen.
    Waiting,
}

/// How far the detector relies on the agent's hooks (CONTRACTS/TURN.md, "Signal precedence").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AgentHooks {
    /// No hooks: the screen alone ends turns (the default; every agent without hooks).
    #[default]
    Off,
    /// The agent's hooks are wired: a turn ends at the agent's word. When the screen says a
    /// turn ended first, the turn waits for that word ([`Event::AwaitingAgreement`]) until the
    /// caller gives up on it ([`TurnDetector::settle`]); after three turns in a row without
    /// it, the hooks are taken as silent and the screen decides again until the agent speaks.
    ///
    /// [`Event::AwaitingAgreement`]: crate::Event::AwaitingAgreement
    /// [`TurnDetector::settle`]: crate::TurnDetector::settle
    On,
    /// Only the agent's word, input and [`TurnDetector::settle`] end turns; the screen's
    /// signals never do (to check the two sources against each other).
    ///
    /// [`TurnDetector::settle`]: crate::TurnDetector::settle
    Only,
}

/// Turns in a row the screen ended and no hook spoke for, after which the hooks are taken as
/// silent (disabled in the agent's settings, an untrusted folder, an old release).
pub(crate) const SILENT_TURNS: u32 = 3;

/// The end of `message` as a screen would show it: the last characters of its last line with
/// letters or digits, reduced to letters and digits (markdown marks, bullets and wrapping
/// differ between the source and what the agent draws).
pub(crate) fn message_tail(message: &str) -> Option<String> {
    const TAIL_CHARS: usize = 24;
    let line = message
        .lines()
        .rev()
        .find(|line| line.chars().any(char::is_alphanumeric))?;
    let letters: Vec<char> = line.chars().filter(|c| c.is_alphanumeric()).collect();
    Some(
        letters[letters.len().saturating_sub(TAIL_CHARS)..]
            .iter()
            .collect(),
    )
}

#[cfg(feature = "text")]
/// How many times `rows` (a screen, top to bottom) show `tail` ([`message_tail`]), possibly
/// wrapped over consecutive rows.
pub(crate) fn tail_count(rows: &[String], tail: &str) -> usize {
    let joined: String = rows
        .iter()
        .flat_map(|row| row.chars().filter(|c| c.is_alphanumeric()))
        .collect();
    joined.matches(tail).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_survives_markdown_and_wrapping() {
        let tail = message_tail("Here:\n\n- **Slow line 80**: done.\n\n```\n```\n").expect("tail");
        assert_eq!(tail, "Slowline80done");
        let rows = [
            "⏺ Here:".to_owned(),
            "  • Slow line".to_owned(),
            "  80: done.".to_owned(),
        ];
        assert_eq!(tail_count(&rows, &tail), 1);
        assert_eq!(tail_count(&rows[..2], &tail), 0);
        assert_eq!(message_tail("---\n\n"), None);
    }
}
