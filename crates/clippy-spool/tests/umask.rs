//! Modes are set explicitly, whatever the umask. Alone in its binary: the umask is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers may panic

mod common;

use clippy_spool::{SpoolDir, SpoolWriter};
use common::{TempDir, mode};
use nix::sys::stat::{Mode, umask};

#[test]
fn modes_do_not_depend_on_the_umask() {
    let runtime = TempDir::new("umask");
    // Strips even the owner's write bit from what mkdir/open ask for.
    let old = umask(Mode::from_bits_truncate(0o277));
    let result = SpoolDir::create(runtime.path(), "u1").and_then(SpoolWriter::create);
    umask(old);
    let mut writer = result.unwrap();
    writer.append(b"ok\r\n").unwrap();
    assert_eq!(mode(&runtime.path().join("clippy")), 0o700);
    assert_eq!(mode(&runtime.path().join("clippy/sessions")), 0o700);
    assert_eq!(mode(&runtime.path().join("clippy/sessions/u1")), 0o700);
    assert_eq!(mode(writer.path().unwrap()), 0o600);
    writer.finish(None).unwrap();
}
