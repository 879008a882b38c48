//! What a session's hook socket reads: a `clippy-hook 1 <agent>` line and the agent's JSON
//! payload, read to the end of the connection, decoded and parsed into a `Report` as the wrapper
//! does (`bins/clippy-session/src/agent_hooks.rs`; the detector's share of it,
//! `clippy_wrapper::tap::signal_of`).
//!
//! Input layout: `[mode, bytes…]`. `mode & 1`: the bytes are the whole report, as any program
//! that connects may send them; else they are the payload after a valid header for agent
//! `(mode >> 1) % 3` (Claude, Codex, Gemini), so the fuzzer spends its time in the JSON reading.
//! `mode & 4` with a valid header: the payload is wrapped as `{"hook_event_name":…,<key>:…}`
//! with the event and key picked by `mode >> 3` and the bytes as the string value, to reach each
//! event's fields.
//!
//! Checks: no panic; a report that decodes is the one `encode` makes of its agent and payload;
//! an error names what it is about; a parsed report's strings come from the payload (no text
//! longer than it).
#![no_main]

use clippy_hooks::{Agent, Report, decode, encode, parse};
use libfuzzer_sys::fuzz_target;

/// Events and the field each reads, across the three agents.
const SHAPES: &[(&str, &str)] = &[
    ("UserPromptSubmit", "prompt"),
    ("Stop", "last_assistant_message"),
    ("StopFailure", "last_assistant_message"),
    ("PermissionRequest", "tool_name"),
    ("Notification", "notification_type"),
    ("Notification", "message"),
    ("BeforeAgent", "prompt"),
    ("AfterAgent", "prompt_response"),
];

fuzz_target!(|data: &[u8]| {
    let [mode, bytes @ ..] = data else {
        return;
    };
    let frame = if mode & 1 != 0 {
        bytes.to_vec()
    } else {
        let agent = Agent::ALL[usize::from(mode >> 1) % 3];
        if mode & 4 != 0 {
            let (event, key) = SHAPES[usize::from(mode >> 3) % SHAPES.len()];
            let value = serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned());
            let payload = serde_json::json!({ "hook_event_name": event, key: value });
            encode(agent, payload.to_string().as_bytes())
        } else {
            encode(agent, bytes)
        }
    };
    let (agent, payload) = match decode(&frame) {
        Ok(decoded) => decoded,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    assert_eq!(encode(agent, payload), frame);
    match parse(agent, payload) {
        Ok(report) => {
            let longest = match &report {
                Report::PromptSubmitted { prompt } => prompt.len(),
                Report::TurnEnded {
                    message, prompts, ..
                } => message
                    .as_ref()
                    .map_or(0, String::len)
                    .max(prompts.iter().map(String::len).max().unwrap_or(0)),
                Report::Waiting(waiting) => waiting.message.as_ref().map_or(0, String::len),
                Report::Other { event } => event.len(),
            };
            assert!(longest <= payload.len(), "{report:?}");
        }
        Err(e) => assert!(e.to_string().starts_with(agent.name()), "{e}"),
    }
});
