//! Shared helpers.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub use clippy_testkit::TempDir;

/// The permission bits of `path` (not following a symlink).
pub fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// The stream with every `\r\n` replaced by `\n`.
pub fn normalise(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\r' && raw.get(i + 1) == Some(&b'\n') {
            out.push(b'\n');
            i += 2;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    out
}
