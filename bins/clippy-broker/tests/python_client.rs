//! Interop: a Python client using a stock MessagePack library (tests/python/client.py, written
//! from CONTRACTS/BROKER.md) reads a turn a Rust fake wrapper registered.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Broker, report};

/// A Python interpreter that can `import msgpack`: /usr/bin/python3 first, then python3.
fn python_with_msgpack() -> Option<&'static str> {
    ["/usr/bin/python3", "python3"].into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import msgpack"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn a_python_client_lists_sessions_and_fetches_a_turn() {
    let Some(python) = python_with_msgpack() else {
        println!("SKIPPED: python3-msgpack not installed");
        return;
    };
    let broker = Broker::start(&[]);
    let mut wrapper = broker.wrapper("py1x", Some("snake"), false);
    report(&mut wrapper, "py1x", 1, b"first\n", "first\n");
    // Escapes, a NUL and a byte that is not UTF-8: content is bytes, not text.
    let content = b"\x1b[1mhello\x1b[0m \x00\xff\n";
    let turn_id = report(&mut wrapper, "py1x", 2, content, "hello \n");
    let hex: String = content.iter().map(|b| format!("{b:02x}")).collect();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client.py");
    let output = Command::new(python)
        .arg(&script)
        .arg(&broker.socket)
        .args(["snake", &turn_id, &hex])
        .output()
        .expect("run the python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{python}: {stdout}{stderr}");
    assert_eq!(stdout.trim(), "OK", "{stderr}");
}
