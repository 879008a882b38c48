//! The attach protocol: a person's terminal (or `clippy-ctl detach`) talking to one session's
//! wrapper directly, over the session's `attach.sock`, so the broker stays off the byte path.
//!
//! Frames are framed as on the broker's socket (a 4-byte big-endian length, then one
//! MessagePack map with a string `type`; [`FrameDecoder`](crate::FrameDecoder) reassembles
//! them), but carry no request ids: a client says [`AttachFrame::Hello`] first, the wrapper
//! answers [`AttachFrame::Welcome`] (or [`AttachFrame::Refused`] and closes), then output flows
//! one way and keys, resizes and a detach the other. `CONTRACTS/ATTACH.md` is the reference.
//!
//! ```
//! use clippy_proto::FrameDecoder;
//! use clippy_proto::attach::{AttachFrame, AttachMode, decode, encode_into};
//!
//! let mut wire = Vec::new();
//! encode_into(&AttachFrame::Hello { version: 1, mode: AttachMode::Interactive, cols: 80, rows: 24 }, &mut wire)?;
//! encode_into(&AttachFrame::Input { data: b"ls\r".to_vec() }, &mut wire)?;
//! let mut decoder = FrameDecoder::default();
//! decoder.push(&wire);
//! let first = decode(&decoder.next_frame()?.expect("a whole frame"))?;
//! assert!(matches!(first, AttachFrame::Hello { mode: AttachMode::Interactive, cols: 80, .. }));
//! let second = decode(&decoder.next_frame()?.expect("a whole frame"))?;
//! assert_eq!(second, AttachFrame::Input { data: b"ls\r".to_vec() });
//! # Ok::<(), clippy_proto::ProtoError>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::codec::{HEADER_LEN, MAX_FRAME};
use crate::error::ProtoError;

/// The attach protocol's version, sent in [`AttachFrame::Hello`].
pub const ATTACH_VERSION: u32 = 1;

/// The file name of a session's attach socket, in its folder
/// (`$XDG_RUNTIME_DIR/clippy/sessions/<id>/`).
pub const ATTACH_SOCKET: &str = "attach.sock";

/// What an attaching client may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachMode {
    /// See the output, type, and set the session's size.
    Interactive,
    /// See the output only: keys and sizes are ignored.
    ReadOnly,
    /// Neither: a control connection that sends [`AttachFrame::DetachAll`].
    Control,
}

/// Why the wrapper let a client go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetachReason {
    /// The client asked (its detach key).
    Asked,
    /// `clippy-ctl detach` asked for every client.
    Command,
    /// The session's command ended ([`AttachFrame::Exited`] came first).
    Exited,
}

/// One frame of the attach protocol, in either direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AttachFrame {
    // ── Client to wrapper ───────────────────────────────────────────────────────────────
    /// First frame of every connection.
    Hello {
        /// [`ATTACH_VERSION`].
        version: u32,
        /// What the client may do.
        mode: AttachMode,
        /// The client terminal's columns (0: unknown, keep the session's size).
        cols: u16,
        /// The client terminal's rows (0: unknown).
        rows: u16,
    },
    /// Keys typed in the attached terminal, for the program.
    Input {
        /// The bytes, as the terminal sent them.
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    /// The attached terminal was resized.
    Resize {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// This client leaves; the session runs on.
    Detach,
    /// On a control connection: every attached client leaves.
    DetachAll,

    // ── Wrapper to client ───────────────────────────────────────────────────────────────
    /// The client is attached.
    Welcome {
        /// The session's id.
        session: String,
        /// The session's name, if it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The session's size now.
        cols: u16,
        /// Rows.
        rows: u16,
        /// Bytes that put a terminal back in order when the client leaves, whichever way
        /// (cursor shown, attributes and every key and mouse mode reset), for a terminal
        /// showing its normal screen then.
        #[serde(with = "serde_bytes")]
        restore: Vec<u8>,
        /// The same for a terminal showing the alternate screen then (a full-screen
        /// program's): it is left, which brings the normal screen and its cursor back.
        #[serde(with = "serde_bytes")]
        restore_alternate: Vec<u8>,
    },
    /// Bytes that draw the session's current screen on a terminal of its size, whatever that
    /// terminal showed before; sent first, and again when a client that read too slowly skips
    /// the output it missed.
    Redraw {
        /// The bytes.
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        /// Output bytes this client skipped before this redraw (0 for the first).
        skipped: u64,
    },
    /// The program's output, as it wrote it.
    Output {
        /// The bytes.
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },
    /// The client was detached; the wrapper closes the connection after this frame.
    Detached {
        /// Why.
        reason: DetachReason,
    },
    /// The session's command ended; [`AttachFrame::Detached`] follows.
    Exited {
        /// The code a shell shows: the exit code, or 128+N after signal N.
        exit_code: i32,
        /// The signal that ended it, if one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// Answer to a control connection's [`AttachFrame::DetachAll`].
    DetachedAll {
        /// How many clients were detached.
        clients: u32,
    },
    /// The connection is refused (bad hello, another user, a version this wrapper does not
    /// speak); the wrapper closes it after this frame.
    Refused {
        /// Why, for a person.
        message: String,
    },
}

/// Appends `frame` as one length-prefixed frame to `out`. On error `out` is unchanged.
pub fn encode_into(frame: &AttachFrame, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    if let Err(e) = rmp_serde::encode::write_named(out, frame) {
        out.truncate(start);
        return Err(ProtoError::Encode(e.to_string()));
    }
    let len = out.len() - start - HEADER_LEN;
    let header = match u32::try_from(len) {
        Ok(header) if len <= MAX_FRAME => header,
        _ => {
            out.truncate(start);
            return Err(ProtoError::FrameTooLarge {
                len,
                max: MAX_FRAME,
            });
        }
    };
    out[start..start + HEADER_LEN].copy_from_slice(&header.to_be_bytes());
    Ok(())
}

/// Decodes one frame's payload.
pub fn decode(payload: &[u8]) -> Result<AttachFrame, ProtoError> {
    rmp_serde::from_slice(payload).map_err(|e| {
        ProtoError::Malformed(format!(
            "{e} (an attach frame is a map with a string `type`: hello, input, resize, detach, …)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FrameDecoder;

    fn round_trip(frame: AttachFrame) {
        let mut wire = Vec::new();
        encode_into(&frame, &mut wire).expect("encodes");
        let mut decoder = FrameDecoder::default();
        // Byte by byte: any chunking reassembles.
        let mut got = None;
        for byte in &wire {
            decoder.push(std::slice::from_ref(byte));
            if let Some(payload) = decoder.next_frame().expect("within bounds") {
                got = Some(decode(&payload).expect("decodes"));
            }
        }
        assert_eq!(got, Some(frame));
    }

    #[test]
    fn every_frame_survives_the_wire() {
        for frame in [
            AttachFrame::Hello {
                version: ATTACH_VERSION,
                mode: AttachMode::ReadOnly,
                cols: 0,
                rows: 0,
            },
            AttachFrame::Input {
                data: vec![0, 0x1c, 0xff],
            },
            AttachFrame::Resize { cols: 80, rows: 24 },
            AttachFrame::Detach,
            AttachFrame::DetachAll,
            AttachFrame::Welcome {
                session: "abc".into(),
                name: Some("sh".into()),
                cols: 80,
                rows: 24,
                restore: b"\x1b[?25h".to_vec(),
                restore_alternate: b"\x1b[?1049l".to_vec(),
            },
            AttachFrame::Redraw {
                data: b"\x1b[H\x1b[2J$ ".to_vec(),
                skipped: 7,
            },
            AttachFrame::Output {
                data: b"hi\r\n".to_vec(),
            },
            AttachFrame::Detached {
                reason: DetachReason::Command,
            },
            AttachFrame::Exited {
                exit_code: 130,
                signal: Some(2),
            },
            AttachFrame::DetachedAll { clients: 2 },
            AttachFrame::Refused {
                message: "no".into(),
            },
        ] {
            round_trip(frame);
        }
    }

    #[test]
    fn output_is_carried_as_binary_not_as_an_array_of_numbers() {
        let mut wire = Vec::new();
        let data = vec![b'x'; 1000];
        encode_into(&AttachFrame::Output { data }, &mut wire).expect("encodes");
        assert!(wire.len() < 1100, "{} bytes for 1000 of output", wire.len());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode(b"\x81\xa4type\xa5hello").is_err());
        assert!(decode(b"\xc1").is_err());
        assert!(decode(&[]).is_err());
    }
}
