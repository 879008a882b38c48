//! Presets: the agent-emitted signals that say "waiting for input" and "still working".
//!
//! A preset is data, not code. Each signal is a regular expression matched against something
//! the agent itself prints — a line of the ANSI-stripped line view, or the payload of an
//! operating-system command (OSC) such as a window title — so detection never depends on
//! timing. See `CONTRACTS/TURN.md` for how each preset was derived.

// Byte regexes (still Unicode-aware): lines are matched where they lie in the output, without
// copying or validating them first; invalid UTF-8 simply matches no character class.
use regex::bytes::Regex;

use crate::error::TurnError;

/// The source form of a preset: plain strings, so presets can live in tables and config files.
///
/// Every field except `name` is optional; a preset needs at least one of `prompt` or
/// `osc_idle` to ever detect a turn (OSC 133 marks work with any preset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetSpec {
    /// The preset's name, as given to `--preset`.
    pub name: &'static str,
    /// One line of help for listings.
    pub description: &'static str,
    /// Regex on one ANSI-stripped line: a match anywhere in the line is a prompt.
    pub prompt: Option<&'static str>,
    /// Regex on a line meaning "still working" (spinner, "esc to interrupt"): vetoes the next prompt match.
    pub busy_line: Option<&'static str>,
    /// Regex on a screen row the agent shows only when it is idle (a footer that says "esc to
    /// interrupt" while it works and something else once it is done): once the agent was busy,
    /// the turn ends where a chunk of output leaves the screen showing such a row and no busy
    /// line. For agents that do not always set a status title (Claude Code under tmux); needs
    /// the `text` feature (the live screen).
    pub idle_line: Option<&'static str>,
    /// Regex on a line the agent draws once a reply is over (Claude Code's `✻ Churned for 11s ·
    /// done 11:48 AM`): with a question typed ahead, the turn ends where that question is drawn
    /// next, as after an idle title. For agents that do not always set a status title.
    pub done_line: Option<&'static str>,
    /// Regex on an OSC payload (`"<code>;<rest>"`, e.g. `"0;✳ Claude Code"`) meaning idle.
    pub osc_idle: Option<&'static str>,
    /// Regex on an OSC payload meaning busy; vetoes prompts until an idle OSC is seen.
    pub osc_busy: Option<&'static str>,
    /// Regex on an OSC payload meaning the turn is over (Codex's `state=done`): the turn ends
    /// there, without waiting for the prompt line an idle OSC waits for.
    pub osc_done: Option<&'static str>,
    /// A line submitted while the agent works is a question of its own, answered in a turn of
    /// its own after the running one (Claude Code, Gemini CLI, aider, shells, REPLs); false
    /// where the agent folds it into the running turn.
    pub queues_typed_ahead: bool,
    /// A question typed ahead (`queues_typed_ahead`) is taken at once: the agent cuts the
    /// running reply short and answers it (Codex steers). The running turn ends where the agent
    /// draws that question's echo, with what it drew of the reply; the question is a turn of its
    /// own, which the agent's one turn-end report then belongs to.
    pub steers_typed_ahead: bool,
    /// A line submitted before the program's output began belongs to the running turn's input
    /// (a REPL's multi-line statement, a shell's open quote; Codex folds it into the running
    /// turn): true for shells, REPLs and Codex; false where every line is a question of its own
    /// (aider, whose `Waiting for model` spinner is not output the line view sees, Claude Code,
    /// Gemini CLI).
    pub continuation_lines: bool,
    /// When true, a turn only ends after a busy signal was seen since the input was submitted.
    ///
    /// For TUIs that repaint their idle screen right after a submit, before going busy.
    pub require_busy: bool,
    /// Regex on a line of the *text view* that is the agent's chrome (status bars, tips, "worked
    /// for 3s"): left out of [`Turn::text`](crate::Turn::text), no effect on detection.
    pub chrome: Option<&'static str>,
    /// The agent redraws the reply's last lines in place while it streams and prints the whole
    /// reply once more at its end (aider's live markdown). Keys typed meanwhile are echoed by
    /// the terminal and shift the redraw, which then leaves stale copies behind; in a turn with
    /// such keys (a question typed ahead, Ctrl+C) the text view drops a line that a later line
    /// repeats or continues. No effect on detection.
    pub redraws_live_lines: bool,
    /// Regex on a line the agent draws when it asks the user something in the middle of a turn
    /// (a permission dialog's question): reported as [`Event::Asking`](crate::Event::Asking),
    /// for agents whose hooks do not say it (Codex, aider). No effect on turn boundaries.
    pub waiting_line: Option<&'static str>,
    /// Regex on a line the agent draws when it stops the running turn itself (Claude Code's
    /// `⎿  Interrupted · What should Claude do instead?` after a refused permission), as much
    /// of it as the agent draws (it may leave a marker drawn earlier in place and write only
    /// the words after it): when a dialog held the turn, the turn is interrupted and ends at
    /// the prompt the agent draws next, whatever status title stands (it may have come before
    /// a dialog the agent then took down without a new one).
    pub stopped_line: Option<&'static str>,
}

/// The presets that ship with clippy, in listing order. `generic` is the fallback.
pub const PRESETS: &[PresetSpec] = &[
    PresetSpec {
        name: "generic",
        description: "a line that is only a prompt character: `>`, `$`, `#`, `%`, `❯` or `›`, with an optional label",
        prompt: Some(r"^\s*(?:[\w.@:~/-]+\s*)?[>$#%❯›»]\s*$"),
        busy_line: None,
        idle_line: None,
        done_line: None,
        osc_idle: None,
        osc_busy: None,
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: true,
        require_busy: false,
        chrome: None,
        redraws_live_lines: false,
        waiting_line: None,
        stopped_line: None,
    },
    PresetSpec {
        name: "shell",
        description: "bash/zsh/sh prompts ending in `$`, `#` or `%` (exact with --shell-integration OSC 133 marks)",
        prompt: Some(r"[$#%]\s*$"),
        busy_line: None,
        idle_line: None,
        done_line: None,
        osc_idle: None,
        osc_busy: None,
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: true,
        require_busy: false,
        chrome: None,
        redraws_live_lines: false,
        waiting_line: None,
        stopped_line: None,
    },
    PresetSpec {
        name: "fish",
        description: "fish prompts ending in `>` (a user's `user@host ~> `), `#`, `$` or `%`: fish has no continuation prompt",
        prompt: Some(r"[$#%>]\s*$"),
        busy_line: None,
        idle_line: None,
        done_line: None,
        osc_idle: None,
        osc_busy: None,
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: true,
        require_busy: false,
        chrome: None,
        redraws_live_lines: false,
        waiting_line: None,
        stopped_line: None,
    },
    PresetSpec {
        name: "python",
        description: "the Python REPL's `>>> ` primary prompt (`... ` continuation lines are not prompts)",
        prompt: Some(r"^>>> ?$"),
        busy_line: None,
        idle_line: None,
        done_line: None,
        osc_idle: None,
        osc_busy: None,
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: true,
        require_busy: false,
        chrome: Some(r"^\.\.\.\s*$"),
        redraws_live_lines: false,
        waiting_line: None,
        stopped_line: None,
    },
    PresetSpec {
        name: "sqlite",
        description: "the sqlite3 shell's `sqlite> ` prompt (`   ...> ` continuation lines are not prompts)",
        prompt: Some(r"^sqlite> ?$"),
        busy_line: None,
        idle_line: None,
        done_line: None,
        osc_idle: None,
        osc_busy: None,
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: true,
        require_busy: false,
        chrome: None,
        redraws_live_lines: false,
        waiting_line: None,
        stopped_line: None,
    },
    PresetSpec {
        name: "aider",
        description: "Aider's `> ` prompt, optionally prefixed by the chat mode or edit format (`ask> `, `code> `, `architect> `, `multi> `, `diff> `, …)",
        prompt: Some(r"^(?:[\w-]+ ?)?>\s*$"),
        busy_line: None,
        idle_line: None,
        done_line: None,
        osc_idle: None,
        osc_busy: None,
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: false,
        require_busy: false,
        chrome: Some(r"^Tokens: \S+ sent, \S+ received|^[\s░█]*Waiting for \S+\s*$"),
        redraws_live_lines: true,
        // The question with nothing typed after it yet: redrawn with the answer (`[Yes]: y`),
        // it asks no more.
        waiting_line: Some(r"\(Y\)es/\(N\)o.*:\s*$"),
        stopped_line: None,
    },
    PresetSpec {
        name: "claude",
        description: "Claude Code: title `✳ …` when idle (braille or half-circle spinner while working), then its `❯` input line",
        prompt: Some(r"^\s*❯(?:\x{a0}|[ \t]*$)"),
        busy_line: Some(r"^\s*[·✢✳✶✻✽*]\s+\S+…|esc to interrupt|^\s*❯\s*\d+\.\s"),
        // 2.1.332's footer; its busy form adds `· esc to interrupt`.
        idle_line: Some(r"^\s*(?:⏵⏵|⏸) \w+ mode on"),
        done_line: Some(r"^\s*✻\s+\w+ for \d+\w* · done"),
        osc_idle: Some(r"^(?:[02];✳|7501;.*state=(?:idle|done))"),
        osc_busy: Some(r"^(?:[02];[⠀-⣿◐◑◒◓]|7501;.*state=(?:working|blocked))"),
        // Its `state=done` comes before the frame that draws the reply's end: it only arms.
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: false,
        require_busy: true,
        chrome: Some(
            r"^\s*(?:[·✢✳✶✻✽*]\s+\w+ for \d|⎿\s+(?:Tip:|Queued ·)|\? for shortcuts|Press Ctrl-C again to exit|tmux focus-events off|(?:⏵⏵|⏸) \w+ mode on|(?:[◐◑◒◓○●]\s+)?\w+ · /effort\s*$)",
        ),
        redraws_live_lines: false,
        waiting_line: None,
        stopped_line: Some(r"^\s*(?:⎿\s+)?Interrupted\b"),
    },
    PresetSpec {
        name: "codex",
        description: "Codex CLI: its idle composer and OSC 7501 state marks; `esc to interrupt` while working",
        prompt: Some(r"^\s*›(?:\s|$)"),
        busy_line: Some(r"esc to interrupt"),
        idle_line: None,
        done_line: None,
        osc_idle: Some(r"^7501;.*state=(?:idle|done)"),
        osc_busy: Some(r"^7501;.*state=(?:working|blocked)"),
        osc_done: Some(r"^7501;.*state=done"),
        queues_typed_ahead: true,
        steers_typed_ahead: true,
        continuation_lines: true,
        require_busy: true,
        chrome: Some(
            r"^\s*(?:─*\s*Worked for \d|.*\? for shortcuts|tab to queue message|↳ |└ Tip: )",
        ),
        redraws_live_lines: false,
        waiting_line: Some(r"^\s*Would you like to .+\?\s*$"),
        stopped_line: None,
    },
    PresetSpec {
        name: "gemini",
        description: "Gemini CLI: window title `◇  Ready` when idle, `✦  Working…` while working",
        prompt: None,
        busy_line: Some(r"esc to cancel"),
        idle_line: None,
        done_line: None,
        osc_idle: Some(r"^[02];◇"),
        osc_busy: Some(r"^[02];✦"),
        osc_done: None,
        queues_typed_ahead: true,
        steers_typed_ahead: false,
        continuation_lines: false,
        require_busy: true,
        chrome: Some(
            r"^\s*(?:\? for shortcuts|Shift\+Tab to accept edits|>\s+Type your message|workspace \(/directory\)|Queued \(press|Press Ctrl\+C again to exit)|^\W*Executing Hooks?: |\s(?:no sandbox|sandbox-exec)\s",
        ),
        redraws_live_lines: false,
        waiting_line: None,
        stopped_line: None,
    },
];

/// A preset compiled and checked, ready to drive a [`TurnDetector`](crate::TurnDetector).
#[derive(Debug, Clone)]
pub struct Preset {
    name: String,
    prompt: Option<Regex>,
    busy_line: Option<Regex>,
    #[cfg_attr(not(feature = "text"), allow(dead_code))] // read by the text view only
    idle_line: Option<Regex>,
    done_line: Option<Regex>,
    osc_idle: Option<Regex>,
    osc_busy: Option<Regex>,
    osc_done: Option<Regex>,
    queues_typed_ahead: bool,
    steers_typed_ahead: bool,
    continuation_lines: bool,
    require_busy: bool,
    #[cfg_attr(not(feature = "text"), allow(dead_code))] // read by the text view only
    chrome: Option<Regex>,
    #[cfg_attr(not(feature = "text"), allow(dead_code))] // read by the text view only
    redraws_live_lines: bool,
    waiting_line: Option<Regex>,
    stopped_line: Option<Regex>,
}

impl Preset {
    /// Compiles the shipped preset called `name`.
    ///
    /// ```
    /// let python = clippy_turn::Preset::named("python")?;
    /// assert_eq!(python.name(), "python");
    /// assert!(clippy_turn::Preset::named("nope").is_err());
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn named(name: &str) -> Result<Self, TurnError> {
        let spec = PRESETS
            .iter()
            .find(|spec| spec.name == name)
            .ok_or_else(|| TurnError::UnknownPreset {
                name: name.to_owned(),
                known: PRESETS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        Self::from_spec(spec)
    }

    /// Compiles a preset from its source form, checking every pattern.
    pub fn from_spec(spec: &PresetSpec) -> Result<Self, TurnError> {
        Ok(Self {
            name: spec.name.to_owned(),
            prompt: spec.prompt.map(|p| compile("prompt", p)).transpose()?,
            busy_line: spec.busy_line.map(|p| compile("busy", p)).transpose()?,
            idle_line: spec
                .idle_line
                .map(|p| compile("idle line", p))
                .transpose()?,
            done_line: spec
                .done_line
                .map(|p| compile("done line", p))
                .transpose()?,
            osc_idle: spec.osc_idle.map(|p| compile("OSC idle", p)).transpose()?,
            osc_busy: spec.osc_busy.map(|p| compile("OSC busy", p)).transpose()?,
            osc_done: spec.osc_done.map(|p| compile("OSC done", p)).transpose()?,
            queues_typed_ahead: spec.queues_typed_ahead,
            steers_typed_ahead: spec.steers_typed_ahead,
            continuation_lines: spec.continuation_lines,
            require_busy: spec.require_busy,
            chrome: spec.chrome.map(|p| compile("chrome", p)).transpose()?,
            redraws_live_lines: spec.redraws_live_lines,
            waiting_line: spec
                .waiting_line
                .map(|p| compile("waiting line", p))
                .transpose()?,
            stopped_line: spec
                .stopped_line
                .map(|p| compile("stopped line", p))
                .transpose()?,
        })
    }

    /// A preset made of one custom prompt regex, matched anywhere in each stripped line.
    ///
    /// ```
    /// let custom = clippy_turn::Preset::custom(r"^mysql> $")?;
    /// assert_eq!(custom.name(), "custom");
    /// assert!(clippy_turn::Preset::custom("a\nb").is_err());
    /// # Ok::<(), clippy_turn::TurnError>(())
    /// ```
    pub fn custom(prompt: &str) -> Result<Self, TurnError> {
        Ok(Self {
            name: "custom".to_owned(),
            prompt: Some(compile("prompt", prompt)?),
            busy_line: None,
            idle_line: None,
            done_line: None,
            osc_idle: None,
            osc_busy: None,
            osc_done: None,
            queues_typed_ahead: true,
            steers_typed_ahead: false,
            continuation_lines: true,
            require_busy: false,
            chrome: None,
            redraws_live_lines: false,
            waiting_line: None,
            stopped_line: None,
        })
    }

    /// Replaces the line prompt pattern (keeping the preset's other signals).
    pub fn with_prompt(mut self, prompt: &str) -> Result<Self, TurnError> {
        self.prompt = Some(compile("prompt", prompt)?);
        Ok(self)
    }

    /// The preset's name (`custom` for [`Preset::custom`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn prompt(&self) -> Option<&Regex> {
        self.prompt.as_ref()
    }

    pub(crate) fn busy_line(&self) -> Option<&Regex> {
        self.busy_line.as_ref()
    }

    #[cfg_attr(not(feature = "text"), allow(dead_code))] // read by the text view only
    pub(crate) fn idle_line(&self) -> Option<&Regex> {
        self.idle_line.as_ref()
    }

    pub(crate) fn osc_idle(&self) -> Option<&Regex> {
        self.osc_idle.as_ref()
    }

    pub(crate) fn osc_busy(&self) -> Option<&Regex> {
        self.osc_busy.as_ref()
    }

    pub(crate) fn osc_done(&self) -> Option<&Regex> {
        self.osc_done.as_ref()
    }

    pub(crate) fn continuation_lines(&self) -> bool {
        self.continuation_lines
    }

    pub(crate) fn queues_typed_ahead(&self) -> bool {
        self.queues_typed_ahead
    }

    pub(crate) fn steers_typed_ahead(&self) -> bool {
        self.steers_typed_ahead
    }

    pub(crate) fn require_busy(&self) -> bool {
        self.require_busy
    }

    #[cfg_attr(not(feature = "text"), allow(dead_code))]
    pub(crate) fn done_line(&self) -> Option<&Regex> {
        self.done_line.as_ref()
    }

    #[cfg_attr(not(feature = "text"), allow(dead_code))] // read by the text view only
    pub(crate) fn redraws_live_lines(&self) -> bool {
        self.redraws_live_lines
    }

    pub(crate) fn waiting_line(&self) -> Option<&Regex> {
        self.waiting_line.as_ref()
    }

    pub(crate) fn stopped_line(&self) -> Option<&Regex> {
        self.stopped_line.as_ref()
    }

    #[cfg_attr(not(feature = "text"), allow(dead_code))] // read by the text view only
    pub(crate) fn chrome(&self) -> Option<&Regex> {
        self.chrome.as_ref()
    }
}

impl Default for Preset {
    /// The `generic` preset, the fallback when a session names none.
    fn default() -> Self {
        Self::from_spec(&PRESETS[0]).unwrap_or_else(|_| unreachable!("shipped presets compile"))
    }
}

/// Compiles one line pattern, refusing what cannot work one line at a time.
fn compile(what: &'static str, pattern: &str) -> Result<Regex, TurnError> {
    if pattern.contains('\n')
        || pattern.contains("\\n")
        || pattern.contains('\r')
        || pattern.contains("\\r")
    {
        return Err(TurnError::MultiLinePattern {
            what,
            pattern: pattern.to_owned(),
        });
    }
    let regex = Regex::new(pattern).map_err(|source| TurnError::InvalidPattern {
        what,
        pattern: pattern.to_owned(),
        source: Box::new(source),
    })?;
    if regex.is_match(b"") {
        return Err(TurnError::MatchesEmptyLine {
            what,
            pattern: pattern.to_owned(),
        });
    }
    Ok(regex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_preset_compiles() {
        for spec in PRESETS {
            Preset::from_spec(spec).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        }
    }

    #[test]
    fn refuses_patterns_that_cannot_work_per_line() {
        assert!(matches!(
            Preset::custom("a\nb"),
            Err(TurnError::MultiLinePattern { .. })
        ));
        assert!(matches!(
            Preset::custom(r"a\nb"),
            Err(TurnError::MultiLinePattern { .. })
        ));
        assert!(matches!(
            Preset::custom("x*"),
            Err(TurnError::MatchesEmptyLine { .. })
        ));
        assert!(matches!(
            Preset::custom("(unclosed"),
            Err(TurnError::InvalidPattern { .. })
        ));
        let unknown = Preset::named("vim").unwrap_err().to_string();
        assert!(
            unknown.contains("generic") && unknown.contains("claude"),
            "{unknown}"
        );
    }

    #[test]
    fn generic_matches_bare_prompts_only() {
        let generic = Preset::default();
        let prompt = generic.prompt().unwrap();
        for line in ["> ", "$ ", "user@host:~$ ", "❯", "  > "] {
            assert!(prompt.is_match(line.as_bytes()), "{line:?}");
        }
        for line in ["> quoted text", "cost: $5", "50% done"] {
            assert!(!prompt.is_match(line.as_bytes()), "{line:?}");
        }
    }
}
