//! The MCP server's tool calls: each tool's JSON arguments parsed into its typed arguments and
//! checked (`clippy_mcp::calls::call`), with arbitrary JSON shaped like a model's calls.
//!
//! Input: structure-aware, through `arbitrary`. A tool name (one of the catalogue's, now and
//! then another), then an arguments object whose keys are mostly the tools' own field names
//! (any tool's: a model mixes them up) and sometimes any string, and whose values are arbitrary
//! JSON (null, booleans, numbers of every kind, strings, arrays and objects, nested a few
//! levels). The calls go to a bridge whose broker socket does not exist, so a call whose
//! arguments pass the checks fails with `broker_unavailable` at once, without I/O beyond one
//! refused `connect`.
//!
//! The tools and their arguments are the server's own catalogue's, so a tool added there is
//! fuzzed with no change here.
//!
//! Checks: no panic; an unknown tool name and only that is `UnknownTool`; every call ends in a
//! `{reason, message}` failure that is `invalid_argument` or `broker_unavailable` (for
//! `spawn_session`, `unsupported`: the bridge's socket is not in a runtime folder); an argument
//! the tool does not have is always `invalid_argument` (every argument type denies unknown
//! fields), and so is a missing required one.
#![no_main]

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use clippy_mcp::bridge::Bridge;
use clippy_mcp::calls::{self, Limits, Outcome};
use libfuzzer_sys::arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value};

/// A tool and its arguments (name, required), read from the server's own catalogue: every tool
/// it lists is fuzzed, a new one too.
struct ToolArgs {
    name: String,
    fields: Vec<(String, bool)>,
}

static TOOLS: LazyLock<Vec<ToolArgs>> = LazyLock::new(|| {
    clippy_mcp::tools::catalogue()
        .into_iter()
        .map(|tool| {
            let schema = &tool.input_schema;
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let fields = schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(field, _)| (field.clone(), required.contains(&field.as_str())))
                .collect();
            ToolArgs {
                name: tool.name.to_string(),
                fields,
            }
        })
        .collect()
});

/// Strings a model would send for the enumerations and names.
const WORDS: &[&str] = &[
    "",
    "text",
    "raw",
    "message",
    "handoff",
    "report",
    "aaa",
    "aaa:1",
    "r1",
    "/tmp/x",
    "x\ny",
    "turn.completed",
    "allow",
    "deny",
    "always",
    "2h",
    "2026-11-26",
    "120x40",
    "é",
    "0",
];

static BRIDGE: LazyLock<Bridge> = LazyLock::new(|| {
    Bridge::new(
        Some(Path::new("/nonexistent/clippy-fuzz/broker.sock")),
        Duration::from_millis(100),
    )
    .expect("an explicit socket")
});

const LIMITS: Limits = Limits {
    max_reply_bytes: 4096,
    submit_delay: Duration::from_millis(1),
};

fn value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 8 } else { 10 };
    Ok(match u.choose_index(kinds)? {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => Value::Number(u64::arbitrary(u)?.into()),
        3 => Value::Number(i64::arbitrary(u)?.into()),
        4 => Number::from_f64(f64::arbitrary(u)?).map_or(Value::Null, Value::Number),
        5 => Value::Number(u64::from(u8::arbitrary(u)?).into()),
        6 => Value::String((*u.choose(WORDS)?).to_owned()),
        7 => Value::String(String::arbitrary(u)?),
        8 => {
            let n = u.int_in_range(0..=4)?;
            Value::Array((0..n).map(|_| value(u, depth - 1)).collect::<Result<_>>()?)
        }
        _ => Value::Object(object(u, depth - 1, &[])?),
    })
}

fn object(
    u: &mut Unstructured<'_>,
    depth: u32,
    fields: &[(String, bool)],
) -> Result<Map<String, Value>> {
    let mut map = Map::new();
    let n = u.int_in_range(0..=8)?;
    for _ in 0..n {
        let key = match u.choose_index(8)? {
            0 => String::arbitrary(u)?,
            1 | 2 => {
                let tool = u.choose(&TOOLS)?;
                match tool.fields.len() {
                    0 => "session".to_owned(),
                    _ => u.choose(&tool.fields)?.0.clone(),
                }
            }
            _ if !fields.is_empty() => u.choose(fields)?.0.clone(),
            _ => "session".to_owned(),
        };
        map.insert(key, value(u, depth)?);
    }
    Ok(map)
}

#[derive(Debug)]
struct Call {
    name: String,
    fields: &'static [(String, bool)],
    args: Map<String, Value>,
}

impl<'a> Arbitrary<'a> for Call {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let name = if u.ratio(1, 32)? {
            String::arbitrary(u)?
        } else {
            u.choose(&TOOLS)?.name.clone()
        };
        // An arbitrary name may still be a tool's.
        let fields = TOOLS
            .iter()
            .find(|tool| tool.name == name)
            .map_or(&[][..], |tool| tool.fields.as_slice());
        let args = object(u, 3, fields)?;
        Ok(Call { name, fields, args })
    }
}

fuzz_target!(|call: Call| {
    let known = TOOLS.iter().any(|tool| tool.name == call.name);
    let stranger = call
        .args
        .keys()
        .any(|key| !call.fields.iter().any(|(field, _)| field == key));
    let missing = call
        .fields
        .iter()
        .any(|(field, required)| *required && !call.args.contains_key(field));
    match calls::call(&BRIDGE, &LIMITS, &call.name, call.args) {
        Err(unknown) => assert!(!known, "{unknown}"),
        Ok(Outcome::Done(value)) => panic!("done without a broker: {value}"),
        Ok(Outcome::Failed(failure)) => {
            assert!(known);
            let reason = failure["reason"].as_str().expect("a reason");
            let message = failure["message"].as_str().expect("a message");
            assert!(!message.is_empty());
            match reason {
                "invalid_argument" => {}
                // `spawn_session` refuses a broker socket a session cannot be pointed at before
                // it would start anything: the fuzzing bridge's socket is one.
                "broker_unavailable" | "unsupported"
                    if reason == "broker_unavailable" || call.name == "spawn_session" =>
                {
                    assert!(
                        !stranger && !missing,
                        "arguments taken that are not the tool's: {failure}"
                    );
                }
                other => panic!("reason {other}: {failure}"),
            }
        }
    }
});
