//! The wire protocol's frame decoder and message codec under arbitrary bytes, cut anywhere.
//!
//! Input layout: `[cut, bytes…]`. The bytes are pushed into a [`FrameDecoder`] in pieces of
//! `1 + cut % 64` bytes (so headers and payloads split everywhere), and every frame it yields is
//! decoded. Checks: no panic; a frame error ends the stream (as the broker closes the
//! connection); a payload that decodes is a message that encodes and decodes back to itself
//! (what the broker sends is what it read); `buffered()` never exceeds one frame plus a piece.
#![no_main]

use clippy_proto::{FrameDecoder, HEADER_LEN, MAX_FRAME, decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [cut, bytes @ ..] = data else {
        return;
    };
    let piece = 1 + usize::from(*cut % 64);
    let mut decoder = FrameDecoder::default();
    for chunk in bytes.chunks(piece) {
        decoder.push(chunk);
        loop {
            match decoder.next_frame() {
                Ok(Some(payload)) => {
                    if let Ok(message) = decode(&payload) {
                        let frame = encode(&message).expect("a decoded message encodes");
                        let again = decode(&frame[HEADER_LEN..]).expect("and decodes again");
                        assert_eq!(again, message);
                    }
                }
                Ok(None) => break,
                // The stream cannot be trusted after a bad header: the broker closes.
                Err(_) => return,
            }
        }
        assert!(decoder.buffered() <= HEADER_LEN + MAX_FRAME + piece);
    }
});
