//! clippy's wire protocol, and the only crate that knows it.
//!
//! A frame is a 4-byte big-endian length followed by that many bytes of MessagePack: one map
//! with string keys. Every map has `type` (a string) and `id` (an unsigned integer). A request's
//! reply carries the same `id`; its `type` says what it is (`done`, `captured`, `turn`, …, or
//! `error` with a `reason`). The broker's unsolicited commands to a wrapper (`inject`) use id 0.
//! Binary fields (turn content, injected bytes) are MessagePack `bin`. Frames are at most
//! [`MAX_FRAME`] bytes: the decoder refuses a larger length before allocating anything.
//!
//! Any stock MessagePack library can speak this protocol; `CONTRACTS/BROKER.md` documents every
//! message for implementers in other languages.
//!
//! ```
//! use clippy_proto::{FrameDecoder, Message, Role, decode, encode};
//!
//! let frame = encode(&Message::Hello { id: 1, version: clippy_proto::PROTOCOL_VERSION, role: Role::Client })?;
//! let mut decoder = FrameDecoder::default();
//! decoder.push(&frame);
//! let payload = decoder.next_frame()?.expect("a whole frame");
//! assert!(matches!(decode(&payload)?, Message::Hello { id: 1, role: Role::Client, .. }));
//! # Ok::<(), clippy_proto::ProtoError>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod attach;
mod client;
mod codec;
mod error;
mod message;
mod payload;
mod time;

pub use client::{
    Client, REPLY_SPIN, broker_program, socket_path, start_broker, start_broker_for, with_broker,
};
pub use codec::{
    Frame, FrameDecoder, HEADER_LEN, MAX_FRAME, decode, encode, encode_frame, encode_into,
};
pub use error::{ErrorReason, ProtoError};
pub use message::{
    AnswerRecord, DEFAULT_ANSWER_WAIT_MS, DEFAULT_END_WAIT_MS, DEFAULT_SCREEN_WAIT_MS,
    DEFAULT_WAIT_MS, Decision, EventRecord, Format, HistoryEntry, HistoryInfo, HookStats,
    INBOX_TEXT_LIMIT, INPUT_BACKLOG_LIMIT, InboxItem, MAX_SCREEN_BYTES, MAX_SCREEN_HISTORY,
    Message, Mode, PROTOCOL_VERSION, PatternKind, Progress, Role, RouteInfo, RouteKind, RouteSpec,
    ScreenData, SearchHit, SessionExit, SessionInfo, SessionState, SessionSummary, TurnData,
    TurnMeta, WaitingState,
};
pub use payload::Payload;
pub use time::{iso8601_utc, unix_ms_now};
