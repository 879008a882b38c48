//! End-to-end: `clippy-ctl send --enter` and `clippy-ctl exec` write the text, then Enter as
//! a write of its own after the broker's submit delay (CONTRACTS/CLI.md), so an agent that
//! takes a fast burst of text and Enter for a paste (Gemini CLI) still submits. A real broker,
//! a real `clippy-session` on a terminal of the test's own, wrapping a REPL that logs every
//! read it makes on a line of its own. Every wait is for a condition; the deadlines only fail a
//! test that hangs.
#![allow(clippy::unwrap_used)]

mod desktop;

use std::path::{Path, PathBuf};

use clippy_pty::WinSize;
use desktop::{OnTerminal, TempDir, broker, ctl, wait_for, workspace_bin};

/// The broker's pause before an Enter, for these tests: long enough that the REPL has read the
/// text before the Enter is written however loaded the machine is, so the two cannot arrive in
/// one read (at the default 150 ms a starved REPL could read both at once and the test would
/// say nothing about the broker).
const SUBMIT_DELAY_MS: u64 = 1500;

/// A broker with [`SUBMIT_DELAY_MS`] and the REPL wrapped as `name`, at its prompt; the file
/// its reads are logged to, one line of hex per read.
fn repl_session(dir: &TempDir, name: &str) -> (desktop::Broker, OnTerminal, PathBuf) {
    let config = dir.join("home/.config/clippy");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[broker]\nsubmit_delay_ms = {SUBMIT_DELAY_MS}\n"),
    )
    .unwrap();
    let broker = broker(dir, &[]);
    let reads = dir.join("reads.log");
    let mut argv = desktop::wrapped_repl(name, &dir.join("input.log"));
    argv.push(reads.display().to_string());
    let wrapped = OnTerminal::start(
        dir,
        workspace_bin("clippy-session"),
        &argv[1..],
        WinSize::new(80, 24),
    );
    let out = ctl(dir, &[], &["--timeout", "20000", "wait-prompt", name]);
    assert!(out.status.success(), "{out:?}");
    (broker, wrapped, reads)
}

/// The REPL's reads so far (the lines it has written whole), each as the bytes it got.
fn reads(path: &Path) -> Vec<Vec<u8>> {
    let text = String::from_utf8(desktop::read(path)).unwrap();
    let whole = text.rfind('\n').map_or(0, |end| end + 1);
    text[..whole]
        .lines()
        .map(|line| {
            (0..line.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&line[i..i + 2], 16).unwrap())
                .collect()
        })
        .collect()
}

/// Waits until the REPL has read `text` and an Enter, and checks that the Enter came in a read
/// of its own, after reads that held exactly `text`.
fn assert_enter_read_alone(path: &Path, text: &str) {
    let got = wait_for(&format!("{text:?} and its Enter to be read"), || {
        let got = reads(path);
        got.iter().any(|read| read.contains(&b'\r')).then_some(got)
    });
    let shown: Vec<String> = got
        .iter()
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect();
    let (last, before) = got.split_last().unwrap();
    assert_eq!(last, b"\r", "the Enter is a read of its own: {shown:?}");
    assert_eq!(before.concat(), text.as_bytes(), "{shown:?}");
}

#[test]
fn send_enter_writes_the_enter_on_its_own_after_the_text() {
    let dir = TempDir::with_runtime("submit-send");
    let (_broker, wrapped, reads) = repl_session(&dir, "rs");

    let out = ctl(&dir, &[], &["--json", "send", "rs", "say hello", "--enter"]);
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The Enter counts, as it did when it was part of the text.
    assert_eq!(doc["sent"]["bytes"], 10, "{doc}");
    assert_enter_read_alone(&reads, "say hello");
    // And the REPL took it as a submitted line.
    wrapped.wait_shown("answer: hello", 1);
}

#[test]
fn exec_writes_the_enter_on_its_own_after_the_command() {
    let dir = TempDir::with_runtime("submit-exec");
    let (_broker, _wrapped, reads) = repl_session(&dir, "rx");

    let out = ctl(
        &dir,
        &[],
        &["--json", "--timeout", "20000", "exec", "rx", "say", "there"],
    );
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["output"].as_str().unwrap().contains("answer: there"),
        "{doc}"
    );
    assert_enter_read_alone(&reads, "say there");
}

/// A wrapper that reads the text and its Enter at once (starved, here stopped while the broker
/// sends both) still writes the Enter on its own: the submit delay after it wrote the text
/// itself (`clippy_wrapper::submit`, CONTRACTS/PROTOCOL.md `inject`).
#[test]
fn a_wrapper_that_reads_the_text_and_its_enter_at_once_still_writes_the_enter_on_its_own() {
    let dir = TempDir::with_runtime("submit-starved");
    let (_broker, wrapped, reads) = repl_session(&dir, "rz");

    // The wrapper stopped: the broker writes the text, then (its submit delay later) the
    // Enter into the wrapper's socket, and `send` is answered once both are sent.
    wrapped
        .child
        .signal(nix::sys::signal::Signal::SIGSTOP)
        .unwrap();
    let out = ctl(&dir, &[], &["--json", "send", "rz", "say both", "--enter"]);
    wrapped
        .child
        .signal(nix::sys::signal::Signal::SIGCONT)
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Both are read by the wrapper at once; the REPL still gets the Enter in a read of its own.
    assert_enter_read_alone(&reads, "say both");
    wrapped.wait_shown("answer: both", 1);
}
