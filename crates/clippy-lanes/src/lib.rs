//! Bytes classified a window at a time: for each class, a `u64` with bit `i` set when byte `i` of
//! the window is in it. The classes are computed on sixteen bytes at a time in vector registers
//! (`wide`: SSE2 on x86-64, NEON on aarch64, plain lanes elsewhere), and a mask instruction
//! gathers sixteen lanes into sixteen bits; the caller then finds what it looks for with bit
//! operations, with no search per match. The hot paths that scan every byte of a flood use it:
//! the spool's CR LF folding and its escape stripping (`clippy-spool`), and the flood skim's
//! escape test (`clippy-turn`). Where matches come every few bytes (a line's end, an SGR colour),
//! a search per match cost more than the scan.
//!
//! ```
//! use clippy_lanes::{WINDOW, masks, splat};
//!
//! let window = b"two\r\nlines\r\n";
//! let [cr, lf] = masks(window, |lanes| [lanes.simd_eq(splat(b'\r')), lanes.simd_eq(splat(b'\n'))]);
//! assert_eq!((cr, lf), (1 << 3 | 1 << 10, 1 << 4 | 1 << 11));
//! // A CR whose next byte is an LF:
//! assert_eq!(cr & (lf >> 1), 1 << 3 | 1 << 10);
//! assert_eq!(WINDOW, 64);
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use wide::i8x16;

/// Bytes classified at once, one per bit of a `u64`.
pub const WINDOW: usize = 64;

/// `byte` in every lane, read as signed as the lanes are (every byte beyond ASCII is negative).
#[must_use]
pub fn splat(byte: u8) -> i8x16 {
    i8x16::splat(i8::from_ne_bytes([byte]))
}

/// The masks of the classes `classify` computes, over the first [`WINDOW`] bytes of `window`:
/// bit `i` of each for byte `i`. `classify` gets sixteen bytes at a time, read as signed, and
/// returns a lane of all ones where a byte is in a class (what the comparisons of `i8x16` give).
/// Past the end of a shorter window every bit is clear.
#[inline]
pub fn masks<const N: usize>(window: &[u8], classify: impl Fn(i8x16) -> [i8x16; N]) -> [u64; N] {
    let window = &window[..window.len().min(WINDOW)];
    let mut masks = [0; N];
    // Sixteen bytes at `start`, of which the first `len` are the window's.
    let mut add = |bytes: [u8; 16], len: usize, start: usize| {
        let lanes = i8x16::new(bytes.map(|byte| i8::from_ne_bytes([byte])));
        let present = u64::MAX >> (64 - len);
        for (mask, class) in masks.iter_mut().zip(classify(lanes)) {
            *mask |= (u64::from(class.to_bitmask()) & present) << start;
        }
    };
    let sixteens = window.chunks_exact(16);
    let rest = sixteens.remainder();
    for (index, sixteen) in sixteens.enumerate() {
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(sixteen);
        add(bytes, 16, 16 * index);
    }
    if !rest.is_empty() {
        // The last few bytes, in lanes of their own; the lanes past them are no bytes.
        let mut bytes = [0u8; 16];
        bytes[..rest.len()].copy_from_slice(rest);
        add(bytes, rest.len(), window.len() - rest.len());
    }
    masks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_at_every_place_of_windows_of_every_length() {
        for len in 0..=WINDOW + 3 {
            let window: Vec<u8> = (0..len).map(|i| ((i * 37 + 11) % 256) as u8).collect();
            for byte in [0x00, 0x1b, b'\n', b'[', 0x7f, 0x80, 0xff] {
                let [equal, below] = masks(&window, |lanes| {
                    [lanes.simd_eq(splat(byte)), lanes.simd_lt(splat(0x20))]
                });
                for (i, &b) in window.iter().take(WINDOW).enumerate() {
                    assert_eq!(equal >> i & 1 == 1, b == byte, "{b:#x} at {i} of {len}");
                    assert_eq!(
                        below >> i & 1 == 1,
                        i8::from_ne_bytes([b]) < 0x20,
                        "{b:#x} at {i} of {len}"
                    );
                }
                let past = if len >= WINDOW { 0 } else { u64::MAX << len };
                assert_eq!((equal | below) & past, 0, "nothing past the end of {len}");
            }
        }
    }
}
