//! The content of a `turn` reply: bytes owned by the message, or shared with whoever keeps them.
//!
//! The broker keeps each turn once, behind an `Arc`. A reply that copied it would cost a fresh
//! buffer the size of the turn, twice (the copy, then the encoded frame); a [`Payload::Shared`]
//! reply is written from where the turn lies instead ([`crate::encode_frame`] leaves it out of
//! the encoded head). On the wire nothing changes: it is a MessagePack `bin` either way, and a
//! decoded message always holds [`Payload::Owned`] bytes.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Binary content of a message (MessagePack `bin`): owned, or shared with its keeper.
///
/// It derefs to `[u8]`, compares by content, and converts from the usual byte containers.
///
/// ```
/// use std::sync::Arc;
/// use clippy_proto::Payload;
///
/// let kept: Arc<[u8]> = Arc::from(&b"a turn"[..]);
/// let shared = Payload::from(Arc::clone(&kept));
/// assert_eq!(&*shared, b"a turn");
/// assert_eq!(shared, Payload::from(b"a turn".to_vec()));
/// assert_eq!(shared.into_vec(), b"a turn");
/// ```
#[derive(Clone)]
pub enum Payload {
    /// Bytes of this message alone (what decoding gives).
    Owned(Vec<u8>),
    /// Bytes kept elsewhere too, not copied.
    Shared(Arc<[u8]>),
    /// Text kept elsewhere too, not copied (its UTF-8 bytes).
    SharedText(Arc<str>),
}

impl Payload {
    /// The bytes as a vector: free for [`Payload::Owned`], a copy otherwise.
    #[must_use]
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Payload::Owned(bytes) => bytes,
            shared => shared.to_vec(),
        }
    }

    /// Whether the bytes are shared (an encoder may write them from where they lie).
    #[must_use]
    pub fn is_shared(&self) -> bool {
        !matches!(self, Payload::Owned(_))
    }
}

impl Default for Payload {
    fn default() -> Self {
        Payload::Owned(Vec::new())
    }
}

impl std::ops::Deref for Payload {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Payload::Owned(bytes) => bytes,
            Payload::Shared(bytes) => bytes,
            Payload::SharedText(text) => text.as_bytes(),
        }
    }
}

impl AsRef<[u8]> for Payload {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // As the bytes they hold, whoever holds them.
        <[u8] as std::fmt::Debug>::fmt(self, f)
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Payload {}

impl PartialEq<[u8]> for Payload {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<&[u8]> for Payload {
    fn eq(&self, other: &&[u8]) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for Payload {
    fn eq(&self, other: &[u8; N]) -> bool {
        **self == other[..]
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Payload {
    fn eq(&self, other: &&[u8; N]) -> bool {
        **self == other[..]
    }
}

impl PartialEq<Vec<u8>> for Payload {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == other[..]
    }
}

impl From<Vec<u8>> for Payload {
    fn from(bytes: Vec<u8>) -> Self {
        Payload::Owned(bytes)
    }
}

impl From<&[u8]> for Payload {
    fn from(bytes: &[u8]) -> Self {
        Payload::Owned(bytes.to_vec())
    }
}

impl From<Arc<[u8]>> for Payload {
    fn from(bytes: Arc<[u8]>) -> Self {
        Payload::Shared(bytes)
    }
}

impl From<Arc<str>> for Payload {
    fn from(text: Arc<str>) -> Self {
        Payload::SharedText(text)
    }
}

impl From<Payload> for Vec<u8> {
    fn from(payload: Payload) -> Self {
        payload.into_vec()
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_bytes::ByteBuf::deserialize(deserializer)
            .map(|bytes| Payload::Owned(bytes.into_vec()))
    }
}
