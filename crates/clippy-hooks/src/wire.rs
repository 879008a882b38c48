//! How a hook hands its payload to the wrapper: one connection to the session's hook socket,
//! one report, then end of stream.
//!
//! A report is a header line, `clippy-hook 1 <agent>\n`, followed by the agent's payload as
//! it was given, up to [`MAX_REPORT_BYTES`] in all. The hook writes it and closes; the wrapper
//! reads to the end and parses the payload ([`parse`](crate::parse)). Nothing is answered, so a
//! hook never waits on the wrapper's reading.

use crate::error::HooksError;
use crate::report::Agent;

/// The environment variable the wrapper sets in the agent's environment: the path of its
/// session's hook socket. A hook without it has no session to report to and ends at once.
pub const SOCKET_ENV: &str = "CLIPPY_HOOK_SOCKET";

/// The largest report accepted, header included: 16 MiB (a final message is text).
pub const MAX_REPORT_BYTES: usize = 16 * 1024 * 1024;

const MAGIC: &str = "clippy-hook 1 ";

/// The report `agent`'s hook sends for `payload`.
///
/// ```
/// use clippy_hooks::{Agent, decode, encode};
///
/// let frame = encode(Agent::Gemini, br#"{"hook_event_name":"AfterAgent"}"#);
/// let (agent, payload) = decode(&frame)?;
/// assert_eq!(agent, Agent::Gemini);
/// assert_eq!(payload, br#"{"hook_event_name":"AfterAgent"}"#);
/// # Ok::<(), clippy_hooks::HooksError>(())
/// ```
pub fn encode(agent: Agent, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(MAGIC.len() + 8 + payload.len());
    frame.extend_from_slice(MAGIC.as_bytes());
    frame.extend_from_slice(agent.name().as_bytes());
    frame.push(b'\n');
    frame.extend_from_slice(payload);
    frame
}

/// The agent and payload of a whole report, as read to the end of its connection.
pub fn decode(frame: &[u8]) -> Result<(Agent, &[u8]), HooksError> {
    if frame.len() > MAX_REPORT_BYTES {
        return Err(HooksError::TooLarge);
    }
    let newline = frame
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| HooksError::Frame("no header line".into()))?;
    let header = std::str::from_utf8(&frame[..newline])
        .map_err(|_| HooksError::Frame("the header is not UTF-8".into()))?;
    let agent = header
        .strip_prefix(MAGIC)
        .ok_or_else(|| HooksError::Frame(format!("header {header:?}")))?;
    Ok((Agent::from_name(agent)?, &frame[newline + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_that_are_not_reports_are_refused() {
        for bad in [
            &b""[..],
            b"GET / HTTP/1.1\r\n",
            b"clippy-hook 2 claude\n{}",
            b"no newline",
        ] {
            assert!(matches!(decode(bad), Err(HooksError::Frame(_))), "{bad:?}");
        }
        assert!(matches!(
            decode(b"clippy-hook 1 aider\n{}"),
            Err(HooksError::UnknownAgent(_))
        ));
        let huge = vec![b'x'; MAX_REPORT_BYTES + 1];
        assert!(matches!(decode(&huge), Err(HooksError::TooLarge)));
    }
}
