//! Framing: a 4-byte big-endian length, then a MessagePack map.
//!
//! [`FrameDecoder`] is sans-I/O, like mini-redis's `Connection::read_frame`: feed it whatever
//! bytes arrived, ask for the next whole frame. It checks an announced length against
//! [`MAX_FRAME`] before buffering the payload, so a hostile length never allocates.

use serde::Deserialize;

use crate::error::ProtoError;
use crate::message::Message;

/// Length of the frame header.
pub const HEADER_LEN: usize = 4;
/// Largest payload a frame may carry: 16 MiB.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// Encodes `message` as one frame (header and payload in one buffer, so it goes out in one write).
pub fn encode(message: &Message) -> Result<Vec<u8>, ProtoError> {
    let mut out = Vec::new();
    encode_into(message, &mut out)?;
    Ok(out)
}

/// Appends `message` as one frame to `out` (reusing its allocation). On error `out` is unchanged.
pub fn encode_into(message: &Message, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    if let Err(e) = rmp_serde::encode::write_named(out, message) {
        out.truncate(start);
        return Err(ProtoError::Encode(e.to_string()));
    }
    let len = out.len() - start - HEADER_LEN;
    if len > MAX_FRAME {
        out.truncate(start);
        return Err(ProtoError::FrameTooLarge {
            len,
            max: MAX_FRAME,
        });
    }
    let header = u32::try_from(len).map_err(|_| ProtoError::FrameTooLarge {
        len,
        max: MAX_FRAME,
    })?;
    out[start..start + HEADER_LEN].copy_from_slice(&header.to_be_bytes());
    Ok(())
}

/// Reassembles frames from a byte stream.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    start: usize,
}

impl FrameDecoder {
    /// Adds bytes read from the connection.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes buffered and not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next whole frame's payload, or `None` until more bytes arrive. An announced length
    /// over [`MAX_FRAME`] is an error: the stream cannot be trusted after it, close it.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, ProtoError> {
        let unread = &self.buf[self.start..];
        let Some(header) = unread.get(..HEADER_LEN) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if len > MAX_FRAME {
            return Err(ProtoError::FrameTooLarge {
                len,
                max: MAX_FRAME,
            });
        }
        let Some(payload) = unread.get(HEADER_LEN..HEADER_LEN + len) else {
            return Ok(None);
        };
        let payload = payload.to_vec();
        self.start += HEADER_LEN + len;
        Ok(Some(payload))
    }
}

/// The two fields every message has, read first so that even an unknown or broken message can
/// be answered with its id.
#[derive(Deserialize)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
    id: u32,
}

/// Decodes one frame's payload.
pub fn decode(payload: &[u8]) -> Result<Message, ProtoError> {
    let header: Header = rmp_serde::from_slice(payload).map_err(|e| {
        ProtoError::Malformed(format!(
            "{e} (a frame must hold a map with a string `type` and an integer `id`)"
        ))
    })?;
    rmp_serde::from_slice(payload).map_err(|e| {
        if Message::TYPES.contains(&header.kind.as_str()) {
            ProtoError::MissingField {
                id: header.id,
                kind: header.kind,
                detail: e.to_string(),
            }
        } else {
            ProtoError::UnknownType {
                id: header.id,
                kind: header.kind,
            }
        }
    })
}
