//! Framing: a 4-byte big-endian length, then a MessagePack map.
//!
//! [`FrameDecoder`] is sans-I/O, like mini-redis's `Connection::read_frame`: feed it whatever
//! bytes arrived, ask for the next whole frame. It checks an announced length against
//! [`MAX_FRAME`] before buffering the payload, so a hostile length never allocates.

use std::io::Read;

use serde::Deserialize;

use crate::error::ProtoError;
use crate::message::Message;
use crate::payload::Payload;

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

/// One encoded frame, ready to be written: `head`, then the shared bytes of a large binary
/// field, if the message had one ([`encode_frame`]). Written in order, the parts are byte for
/// byte what [`encode`] makes of the same message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    head: Vec<u8>,
    body: Option<Payload>,
}

impl Frame {
    /// The frame's bytes, in two parts (the second empty unless a field was left shared).
    pub fn parts(&self) -> [&[u8]; 2] {
        [&self.head, self.body.as_deref().unwrap_or_default()]
    }

    /// Its length on the wire, header included.
    pub fn len(&self) -> usize {
        self.head.len() + self.body.as_ref().map_or(0, |body| body.len())
    }

    /// Whether it has no bytes (never true of an encoded frame).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<Vec<u8>> for Frame {
    /// A frame already encoded in one buffer (by [`encode`]).
    fn from(head: Vec<u8>) -> Self {
        Frame { head, body: None }
    }
}

/// Encodes `message` as one frame, leaving a shared [`Payload`] (a `turn` reply's content) out
/// of the encoded head: a writer sends both parts (`writev`) and the content is never copied.
///
/// ```
/// use std::sync::Arc;
/// use clippy_proto::{Message, Payload, TurnMeta, encode, encode_frame};
///
/// let turn = TurnMeta { turn_id: "a1b2c3:1".into(), timestamp: 0, byte_length: 5, ..Default::default() };
/// let content = Payload::from(Arc::<[u8]>::from(&b"hello"[..]));
/// let reply = Message::Turn { id: 7, turn, content };
/// let frame = encode_frame(&reply)?;
/// assert_eq!(frame.parts()[1], b"hello");
/// assert_eq!(frame.parts().concat(), encode(&reply)?);
/// # Ok::<(), clippy_proto::ProtoError>(())
/// ```
pub fn encode_frame(message: &Message) -> Result<Frame, ProtoError> {
    let Message::Turn { id, turn, content } = message else {
        return encode(message).map(Frame::from);
    };
    if !content.is_shared() {
        return encode(message).map(Frame::from);
    }
    let mut head = encode(&Message::Turn {
        id: *id,
        turn: turn.clone(),
        content: Payload::default(),
    })?;
    // The content is the map's last value: an empty `bin 8` (`c4 00`), replaced by the header
    // of the real length, in the smallest form, as the MessagePack encoder writes it.
    if !head.ends_with(&[0xc4, 0]) {
        return encode(message).map(Frame::from);
    }
    head.truncate(head.len() - 2);
    let len = content.len();
    match (u8::try_from(len), u16::try_from(len), u32::try_from(len)) {
        (Ok(len), _, _) => head.extend_from_slice(&[0xc4, len]),
        (_, Ok(len), _) => {
            head.push(0xc5);
            head.extend_from_slice(&len.to_be_bytes());
        }
        (_, _, Ok(len)) => {
            head.push(0xc6);
            head.extend_from_slice(&len.to_be_bytes());
        }
        _ => {
            return Err(ProtoError::FrameTooLarge {
                len,
                max: MAX_FRAME,
            });
        }
    }
    let payload = head.len() - HEADER_LEN + len;
    if payload > MAX_FRAME {
        return Err(ProtoError::FrameTooLarge {
            len: payload,
            max: MAX_FRAME,
        });
    }
    let announced = u32::try_from(payload).map_err(|_| ProtoError::FrameTooLarge {
        len: payload,
        max: MAX_FRAME,
    })?;
    head[..HEADER_LEN].copy_from_slice(&announced.to_be_bytes());
    Ok(Frame {
        head,
        body: Some(content.clone()),
    })
}

/// Bytes asked of a reader at least, when no frame is known to need more.
const READ_AT_LEAST: usize = 64 * 1024;

/// Reassembles frames from a byte stream.
///
/// Its buffer is kept between frames (a connection that received a large frame once does not
/// allocate and fault it in again), and [`FrameDecoder::read_from`] reads into it directly.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    /// Initialised bytes; `buf[start..end]` are buffered and unread, `buf[end..]` is room.
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl FrameDecoder {
    /// Adds bytes read from the connection.
    pub fn push(&mut self, bytes: &[u8]) {
        self.make_room(bytes.len());
        self.buf[self.end..self.end + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }

    /// Reads once from `reader` straight into the buffer (as much as the frame being received
    /// still needs, at least 64 KiB) and returns how many bytes came (0 at end of stream).
    pub fn read_from(&mut self, reader: &mut impl Read) -> std::io::Result<usize> {
        let wanted = self
            .announced()
            .map_or(0, |len| (HEADER_LEN + len).saturating_sub(self.buffered()));
        self.make_room(wanted.max(READ_AT_LEAST));
        let n = reader.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// Bytes buffered and not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// The next whole frame's payload, or `None` until more bytes arrive. An announced length
    /// over [`MAX_FRAME`] is an error: the stream cannot be trusted after it, close it.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, ProtoError> {
        Ok(self.next_payload()?.map(<[u8]>::to_vec))
    }

    /// As [`FrameDecoder::next_frame`], but the payload is borrowed from the buffer (valid until
    /// the decoder is used again): nothing is copied.
    pub fn next_payload(&mut self) -> Result<Option<&[u8]>, ProtoError> {
        let Some(len) = self.announced() else {
            return Ok(None);
        };
        if len > MAX_FRAME {
            return Err(ProtoError::FrameTooLarge {
                len,
                max: MAX_FRAME,
            });
        }
        if self.buffered() < HEADER_LEN + len {
            return Ok(None);
        }
        let from = self.start + HEADER_LEN;
        self.start = from + len;
        Ok(Some(&self.buf[from..from + len]))
    }

    /// The payload length the next frame's header announces, once the header is in.
    fn announced(&self) -> Option<usize> {
        let header = self.buf.get(self.start..self.end)?.get(..HEADER_LEN)?;
        Some(u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize)
    }

    /// Makes room for `more` bytes after the buffered ones: what was read is dropped first, and
    /// the buffer grows only when that is not enough (a hostile announced length is refused by
    /// `next_payload` before anyone asks for room for it: room is at most a frame's).
    fn make_room(&mut self, more: usize) {
        let more = more.min(HEADER_LEN + MAX_FRAME);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end >= more {
            return;
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < more {
            self.buf.resize(self.end + more, 0);
        }
    }
}

/// The two fields every message has, read from a payload that does not decode so that even an
/// unknown or broken message can be answered with its id.
#[derive(Deserialize)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
    id: u32,
}

/// Decodes one frame's payload.
///
/// The message is decoded in one pass; only a payload that does not decode is read again, for
/// its `type` and `id`, to say which error it is (every message has both, so a payload that
/// decodes as a message has them too).
pub fn decode(payload: &[u8]) -> Result<Message, ProtoError> {
    rmp_serde::from_slice(payload).map_err(|e| {
        let header: Header = match rmp_serde::from_slice(payload) {
            Ok(header) => header,
            Err(e) => {
                return ProtoError::Malformed(format!(
                    "{e} (a frame must hold a map with a string `type` and an integer `id`)"
                ));
            }
        };
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
