//! The completed turn.

/// A completed turn: what the agent output between the submitted input and its next prompt.
///
/// `content` is the raw bytes, escapes preserved, byte-exact: the stored and relayed form.
/// [`Turn::text`] is the text a person saw, made from the session's live screen.
#[derive(Debug, Clone)]
pub struct Turn {
    /// 1 for the first turn of a detector, then 2, 3, …
    pub seq: u64,
    /// The raw output of the turn (at most the configured maximum; see `truncated`).
    pub content: Vec<u8>,
    /// Stream offset of the first content byte.
    pub start: u64,
    /// Stream offset just past the last content byte (where the prompt line begins).
    pub end: u64,
    /// The submitted line(s) that started the turn, joined with `\n`; empty when the agent
    /// went busy on input that was not seen as a submit.
    pub input: String,
    /// The user pressed Ctrl+C while the turn ran.
    pub interrupted: bool,
    /// The content was longer than the maximum and was cut.
    pub truncated: bool,
    /// The command's exit code, when the shell reported it (OSC 133 `D;<code>`).
    pub exit_code: Option<i32>,
    /// The working directory last reported by the agent (OSC 7), when known.
    pub cwd: Option<String>,
    /// The agent's own final message, when its hooks gave one
    /// ([`TurnDetector::feed_agent`](crate::TurnDetector::feed_agent)).
    pub message: Option<String>,
    /// The turn ended at the agent's word (its hook), not at the screen's alone.
    pub ended_by_agent: bool,
    /// The text view, made from the live screen when the turn ended.
    #[cfg(feature = "text")]
    pub(crate) text: String,
}

impl PartialEq for Turn {
    /// Turns are equal when their data is; the text view is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
            && self.content == other.content
            && self.start == other.start
            && self.end == other.end
            && self.input == other.input
            && self.interrupted == other.interrupted
            && self.truncated == other.truncated
            && self.exit_code == other.exit_code
            && self.cwd == other.cwd
            && self.message == other.message
            && self.ended_by_agent == other.ended_by_agent
    }
}

#[cfg(feature = "text")]
impl Turn {
    /// The turn as a person saw it: the lines the agent added to the terminal's history and
    /// screen between the submitted input and the turn's end, as they stood at the end, without
    /// old transcript, the agent's input area, prompt, busy and status lines, box rules or the
    /// echo of the input.
    ///
    /// It is made when the turn completes, from the detector's live screen, so the detector
    /// must be fed every output byte from the session's start and told every resize
    /// ([`TurnDetector::resize`](crate::TurnDetector::resize)) in order with the output.
    /// Lines are joined with `\n`, trailing spaces trimmed, blank lines at both ends removed;
    /// spacing characters a terminal shows as blanks (U+00A0 and the like) are plain spaces.
    ///
    /// ```
    /// use clippy_turn::{DetectorConfig, Event, Preset, TurnDetector};
    ///
    /// let mut detector = TurnDetector::new(DetectorConfig::new(Preset::named("python")?));
    /// detector.feed_output(b">>> ").for_each(drop);
    /// detector.feed_input(b"print('a\\nb')\r").for_each(drop);
    /// let events: Vec<Event> =
    ///     detector.feed_output(b"print('a\\nb')\r\n\x1b[1ma\x1b[0m\r\nb\r\n>>> ").collect();
    /// let Some(Event::TurnCompleted(turn)) = events.first() else { panic!() };
    /// assert_eq!(turn.text(), "a\nb");
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn text(&self) -> String {
        self.text.clone()
    }
}
