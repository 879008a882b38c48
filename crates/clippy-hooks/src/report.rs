//! What an agent's hook says, read from the payload the agent hands its hook.

use serde_json::{Map, Value};

use crate::error::HooksError;

/// An agent whose hooks clippy understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Claude Code: hooks from `--settings` (per run) or `~/.claude/settings.json`; JSON on stdin.
    Claude,
    /// Codex CLI: the `notify` program (`-c notify=[…]` per run, or `~/.codex/config.toml`),
    /// called with the JSON as its last argument; Codex's own hooks send Claude-style JSON on
    /// stdin.
    Codex,
    /// Gemini CLI: hooks from its settings layers (a system-defaults file per run, or
    /// `~/.gemini/settings.json`); JSON on stdin.
    Gemini,
}

impl Agent {
    /// Every agent, in a fixed order.
    pub const ALL: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Gemini];

    /// The agent's name, which is also its command's name and its preset's name.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// The agent called `name` (`claude`, `codex`, `gemini`).
    ///
    /// ```
    /// use clippy_hooks::Agent;
    ///
    /// assert_eq!(Agent::from_name("codex")?, Agent::Codex);
    /// assert!(Agent::from_name("aider").is_err());
    /// # Ok::<(), clippy_hooks::HooksError>(())
    /// ```
    pub fn from_name(name: &str) -> Result<Agent, HooksError> {
        Agent::ALL
            .into_iter()
            .find(|agent| agent.name() == name)
            .ok_or_else(|| HooksError::UnknownAgent(name.to_owned()))
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a hook reported, the same for every agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A prompt went to the model (Claude `UserPromptSubmit`, Gemini `BeforeAgent`).
    PromptSubmitted {
        /// The prompt as the agent sends it.
        prompt: String,
    },
    /// The agent finished its turn (Claude `Stop`/`StopFailure`, Codex `agent-turn-complete`,
    /// Gemini `AfterAgent`).
    TurnEnded {
        /// The agent's own final message: the markdown the model wrote, when the hook gives it.
        message: Option<String>,
        /// The turn ended on an error (Claude `StopFailure`).
        failed: bool,
        /// The prompts the agent says this turn answered, when it says (Codex's
        /// `input-messages`): a report whose prompts are not the running turn's belongs to
        /// another conversation of the agent's (Codex's title thread).
        prompts: Vec<String>,
    },
    /// The agent waits for the user: a permission request or a question.
    Waiting(Waiting),
    /// An event clippy does not act on (a session start, an idle reminder, …), by its name.
    Other {
        /// The event's name as the agent gave it.
        event: String,
    },
}

/// An agent waiting for the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waiting {
    /// `permission` (a tool needs approval) or `question` (the agent asks the user).
    pub kind: String,
    /// The tool asking, when the hook names it (`Bash`, `run_shell_command`, …).
    pub tool: Option<String>,
    /// The tool's input as compact JSON, when the hook gives it.
    pub input: Option<String>,
    /// The agent's own sentence about it, when it gives one.
    pub message: Option<String>,
}

/// Reads what `agent`'s hook was handed: the JSON object on its stdin (Claude, Gemini, Codex
/// hooks) or in its last argument (Codex `notify`).
///
/// ```
/// use clippy_hooks::{Agent, Report, parse};
///
/// let stop = br#"{"hook_event_name":"Stop","session_id":"s","last_assistant_message":"Done."}"#;
/// assert_eq!(
///     parse(Agent::Claude, stop)?,
///     Report::TurnEnded { message: Some("Done.".into()), failed: false, prompts: vec![] },
/// );
/// let notify = br#"{"type":"agent-turn-complete","turn-id":"1","last-assistant-message":"Hi"}"#;
/// assert!(matches!(parse(Agent::Codex, notify)?, Report::TurnEnded { .. }));
/// # Ok::<(), clippy_hooks::HooksError>(())
/// ```
pub fn parse(agent: Agent, payload: &[u8]) -> Result<Report, HooksError> {
    let bad = |reason: String| HooksError::Payload {
        agent: agent.name(),
        reason,
    };
    let value: Value = serde_json::from_slice(payload).map_err(|e| bad(e.to_string()))?;
    let Value::Object(object) = value else {
        return Err(bad("not an object".into()));
    };
    let event = text(&object, "hook_event_name");
    Ok(match (agent, event.as_deref()) {
        (Agent::Codex, None) => codex_notify(&object)
            .ok_or_else(|| bad("neither a hook_event_name nor a known notify type".into()))?,
        (_, None) => return Err(bad("no hook_event_name".into())),
        (Agent::Gemini, Some(event)) => gemini(event, &object),
        // Codex's own hooks take Claude's event names and fields.
        (Agent::Claude | Agent::Codex, Some(event)) => claude(event, &object),
    })
}

fn claude(event: &str, object: &Map<String, Value>) -> Report {
    match event {
        "UserPromptSubmit" => Report::PromptSubmitted {
            prompt: text(object, "prompt").unwrap_or_default(),
        },
        "Stop" | "StopFailure" => Report::TurnEnded {
            message: text(object, "last_assistant_message"),
            failed: event == "StopFailure",
            prompts: Vec::new(),
        },
        "PermissionRequest" => Report::Waiting(Waiting {
            kind: "permission".into(),
            tool: text(object, "tool_name"),
            input: object.get("tool_input").map(Value::to_string),
            message: None,
        }),
        "Notification" => {
            let kind = match text(object, "notification_type").as_deref() {
                Some("permission_prompt") => "permission",
                Some("elicitation_dialog") => "question",
                _ => {
                    return Report::Other {
                        event: event.to_owned(),
                    };
                }
            };
            Report::Waiting(Waiting {
                kind: kind.into(),
                message: text(object, "message"),
                ..Waiting::default()
            })
        }
        _ => Report::Other {
            event: event.to_owned(),
        },
    }
}

fn codex_notify(object: &Map<String, Value>) -> Option<Report> {
    (text(object, "type").as_deref() == Some("agent-turn-complete")).then(|| Report::TurnEnded {
        message: text(object, "last-assistant-message"),
        failed: false,
        prompts: object
            .get("input-messages")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn gemini(event: &str, object: &Map<String, Value>) -> Report {
    match event {
        "BeforeAgent" => Report::PromptSubmitted {
            prompt: text(object, "prompt").unwrap_or_default(),
        },
        "AfterAgent" => Report::TurnEnded {
            message: text(object, "prompt_response").map(|r| without_gemini_echoes(&r)),
            failed: false,
            prompts: Vec::new(),
        },
        "Notification"
            if text(object, "notification_type").as_deref() == Some("ToolPermission") =>
        {
            let details = object.get("details");
            let tool = details.and_then(|d| {
                ["title", "type"]
                    .into_iter()
                    .find_map(|key| d.get(key).and_then(Value::as_str))
                    .map(str::to_owned)
            });
            Report::Waiting(Waiting {
                kind: "permission".into(),
                tool,
                input: details.map(Value::to_string),
                message: text(object, "message"),
            })
        }
        _ => Report::Other {
            event: event.to_owned(),
        },
    }
}

/// Gemini CLI 0.61's `prompt_response` as it really is: each model response since the prompt
/// (the text before a tool call, the text after it), joined with a newline, each followed by
/// its own echo: every streamed chunk after the first again, each followed by a space (`"The
/// capital of France is Paris. capital  of  France  is  Paris. "`). This is the text without
/// the echoes: each response ends at the first newline (or the end) before which
/// [`without_gemini_echo`] finds one.
pub(crate) fn without_gemini_echoes(response: &str) -> String {
    const MAX_TRIES: usize = 64;
    let mut cleaned = String::with_capacity(response.len());
    let mut start = 0;
    let mut tries = 0;
    let ends = response.match_indices('\n').map(|(at, _)| at);
    for end in ends.chain([response.len()]) {
        let segment = &response[start..end];
        // An echo ends with the space after its last chunk. (A reply has a few responses:
        // past 64 tries, only the last one is looked at, so the work stays linear.)
        if end < response.len() && (!segment.ends_with(' ') || tries == MAX_TRIES) {
            continue;
        }
        tries += 1;
        let kept = without_gemini_echo(segment);
        if kept.len() < segment.len() || end == response.len() {
            cleaned.push_str(kept);
            if end < response.len() {
                cleaned.push('\n');
            }
            start = end + 1;
        }
    }
    cleaned
}

/// One model response without its echo ([`without_gemini_echoes`]): the shortest prefix, cut
/// at white space, whose letters (white space aside) end with all the letters after it, when
/// those are at least 16 and at least the prefix's last third and come with doubled spacing. A
/// response with no echo is returned unchanged.
pub(crate) fn without_gemini_echo(response: &str) -> &str {
    const MIN_ECHO: usize = 16;
    // The letters of the response and where each is in it.
    let letters: Vec<(usize, char)> = response
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .collect();
    let len = letters.len();
    // The letters end with an echo of `e` letters when they end with the same `e` letters
    // twice: the reversed letters then start with them twice, which the Z-function of the
    // reversed letters says for every `e` at once (linear time, whatever the input).
    let reversed: Vec<char> = letters.iter().rev().map(|&(_, c)| c).collect();
    let z = z_function(&reversed);
    let last_spaced = response.rfind("  ").max(response.rfind(" \n"));
    // The longest echo first: the shortest reply. At least 16 letters, and a third of the reply.
    for echo in (MIN_ECHO..=len / 2).rev() {
        if echo * 4 < len {
            break;
        }
        if z[echo] < echo {
            continue;
        }
        let cut = letters[len - echo].0;
        let at_space = response[..cut].ends_with(char::is_whitespace);
        // The echo's chunks each begin with white space and are joined with a space.
        let spaced = last_spaced.is_some_and(|at| at >= cut);
        if at_space && spaced {
            return response[..cut].trim_end();
        }
    }
    response
}

/// `z[i]`: how many items from `i` on are the same as from the start (`z[0]` is the length).
fn z_function(items: &[char]) -> Vec<usize> {
    let n = items.len();
    let mut z = vec![0; n.max(1)];
    if n == 0 {
        return z;
    }
    z[0] = n;
    let (mut left, mut right) = (0, 0);
    for i in 1..n {
        let mut k = if i < right {
            z[i - left].min(right - i)
        } else {
            0
        };
        while i + k < n && items[k] == items[i + k] {
            k += 1;
        }
        z[i] = k;
        if i + k > right {
            (left, right) = (i, i + k);
        }
    }
    z
}

/// The string at `key`, when there is one.
fn text(object: &Map<String, Value>, key: &str) -> Option<String> {
    object.get(key).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(agent: Agent, json: &str) -> Report {
        parse(agent, json.as_bytes()).expect("parses")
    }

    #[test]
    fn claude_events_map_to_reports() {
        assert_eq!(
            parsed(
                Agent::Claude,
                r#"{"hook_event_name":"UserPromptSubmit","prompt":"Tell me a story"}"#
            ),
            Report::PromptSubmitted {
                prompt: "Tell me a story".into()
            }
        );
        assert_eq!(
            parsed(
                Agent::Claude,
                r#"{"hook_event_name":"StopFailure","error":"rate_limit"}"#
            ),
            Report::TurnEnded {
                message: None,
                failed: true,
                prompts: Vec::new(),
            }
        );
        assert_eq!(
            parsed(
                Agent::Claude,
                r#"{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}"#
            ),
            Report::Waiting(Waiting {
                kind: "permission".into(),
                tool: Some("Bash".into()),
                input: Some(r#"{"command":"ls"}"#.into()),
                message: None,
            })
        );
        assert_eq!(
            parsed(
                Agent::Claude,
                r#"{"hook_event_name":"Notification","notification_type":"idle_prompt","message":"waiting"}"#
            ),
            Report::Other {
                event: "Notification".into()
            }
        );
        assert!(matches!(
            parsed(
                Agent::Claude,
                r#"{"hook_event_name":"Notification","notification_type":"elicitation_dialog"}"#
            ),
            Report::Waiting(Waiting { kind, .. }) if kind == "question"
        ));
    }

    #[test]
    fn codex_notify_and_hooks_are_both_read() {
        assert_eq!(
            parsed(
                Agent::Codex,
                r#"{"type":"agent-turn-complete","last-assistant-message":null,"input-messages":["hi"]}"#
            ),
            Report::TurnEnded {
                message: None,
                failed: false,
                prompts: vec!["hi".into()],
            }
        );
        assert!(matches!(
            parsed(
                Agent::Codex,
                r#"{"hook_event_name":"UserPromptSubmit","prompt":"x"}"#
            ),
            Report::PromptSubmitted { .. }
        ));
    }

    #[test]
    fn gemini_events_map_to_reports() {
        assert_eq!(
            parsed(
                Agent::Gemini,
                r#"{"hook_event_name":"AfterAgent","prompt":"q","prompt_response":"a\nb"}"#
            ),
            Report::TurnEnded {
                message: Some("a\nb".into()),
                failed: false,
                prompts: Vec::new(),
            }
        );
        // Gemini CLI 0.61 repeats the streamed chunks after the reply (recorded payloads).
        assert_eq!(
            parsed(
                Agent::Gemini,
                r#"{"hook_event_name":"AfterAgent","prompt_response":"Jupiter is the largest planet in the solar system. is  the  largest  planet  in  the  solar  system. "}"#
            ),
            Report::TurnEnded {
                message: Some("Jupiter is the largest planet in the solar system.".into()),
                failed: false,
                prompts: Vec::new(),
            }
        );
        assert!(matches!(
            parsed(
                Agent::Gemini,
                r#"{"hook_event_name":"Notification","notification_type":"ToolPermission","message":"ok?","details":{"type":"exec","title":"Shell"}}"#
            ),
            Report::Waiting(Waiting { tool: Some(tool), .. }) if tool == "Shell"
        ));
    }

    #[test]
    fn a_reply_that_repeats_itself_is_kept_unless_it_has_geminis_echo() {
        for kept in [
            "ha ha",
            "Yes. Yes.",
            "Line one.\nLine two.\nLine two.",
            "abcdefghijklmnopqrstuvwxyz and again abcdefghijklmnopqrstuvwxyz",
            "I agree with that completely. I agree with that completely.",
            "",
        ] {
            assert_eq!(without_gemini_echo(kept), kept);
        }
        let long = "Here:\n\n1. Numbered line 1 of 2.\n2. Numbered line 2 of 2.\n\nThat was all.";
        let echoed = format!(
            "{long} \n1.  Numbered  line  1  of  2.\n 2.  Numbered  line  2  of  2.\n \nThat  was  all. "
        );
        assert_eq!(without_gemini_echo(&echoed), long);
        // Text before a tool call and after it, each with its echo (a recorded payload).
        let tool = "I will create the marker file with a shell command. will  create  the  \
            marker  file  with  a  shell  command.  \nDone: corpus-marker.txt now exists in the \
            working directory. corpus-marker.txt  now  exists  in  the  working  directory. ";
        assert_eq!(
            without_gemini_echoes(tool),
            "I will create the marker file with a shell command.\n\
             Done: corpus-marker.txt now exists in the working directory."
        );
        assert_eq!(without_gemini_echoes(&echoed), long);
        assert_eq!(without_gemini_echoes("a\nb\n"), "a\nb\n");
        // Linear whatever the input: a megabyte made to match everywhere is done at once.
        let hostile = "a  ".repeat(400_000);
        assert_eq!(
            without_gemini_echoes(&hostile),
            "a  ".repeat(200_000).trim_end()
        );
        // Many lines that each could end a response: still linear (64 tries at most).
        let lines = "a \n".repeat(300_000);
        assert!(without_gemini_echoes(&lines).len() <= lines.len());
    }

    #[test]
    fn malformed_payloads_are_errors_that_name_the_agent() {
        for bad in ["", "[]", "{", r#"{"session_id":"s"}"#] {
            let err = parse(Agent::Claude, bad.as_bytes()).expect_err(bad);
            assert!(err.to_string().starts_with("claude hook payload"), "{err}");
        }
        assert!(parse(Agent::Codex, br#"{"type":"approval-requested"}"#).is_err());
    }
}
