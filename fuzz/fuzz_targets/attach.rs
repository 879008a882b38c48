//! The attach protocol (`clippy-proto`'s attach frames, `clippy-attach`'s `Hub`) under arbitrary
//! bytes from clients and arbitrary program output.
//!
//! Input layout: `[cut, limit, records…]`, each record `[op, arg, len, payload…]` (`len` bytes of
//! payload at most). First the whole input is pushed through a `FrameDecoder` in pieces of
//! `1 + cut % 64` bytes and every frame decoded as an attach frame, as both ends of the attach
//! socket decode what they read. Then the records drive one `Hub` (outbox limit `64 + limit * 16`
//! bytes, so slow clients skip) with `arg % 4` picking one of four connections; `op % 8`:
//! 0 accept (refused from another user when `arg & 0x80`), 1 the payload read from the client
//! (cut in two at `arg`), 2 the payload as the program's output, 3 the screen for the client's
//! latest redraw request (or a stale generation when `arg & 0x80`), 4 `arg` bytes written to the
//! client, 5 the client's connection closed, 6 the session resized, `detach` from elsewhere, or
//! the program exited, 7 a well-formed frame built from the payload (hello, input, resize,
//! detach, detach all), so the fuzzer reaches attached states quickly.
//!
//! Checks: no panic; a decoded frame encodes and decodes to itself; every action names a client
//! the hub holds; a size set is never zero; and what the hub queues for a client is a stream of
//! whole attach frames (each client's written bytes are decoded as `clippy-ctl attach` does,
//! and must never fail), that begins with `welcome` or `refused`.
#![no_main]

use std::collections::BTreeMap;

use clippy_attach::{ClientId, Hub, HubAction, Restore};
use clippy_proto::FrameDecoder;
use clippy_proto::attach::{ATTACH_VERSION, AttachFrame, AttachMode, decode, encode_into};
use clippy_proto::{HEADER_LEN, MAX_FRAME};
use libfuzzer_sys::fuzz_target;

const RESTORE: Restore = Restore {
    normal: b"\x1b[?25h",
    alternate: b"\x1b[?1049l\x1b[?25h",
};

/// A client as its far end sees it: what it has read so far.
#[derive(Default)]
struct Reader {
    decoder: FrameDecoder,
    frames: usize,
    /// The latest redraw the hub asked the wrapper for, for this client.
    redraw: Option<u64>,
}

fn codec(cut: u8, bytes: &[u8]) {
    let piece = 1 + usize::from(cut % 64);
    let mut decoder = FrameDecoder::default();
    for chunk in bytes.chunks(piece) {
        decoder.push(chunk);
        loop {
            match decoder.next_frame() {
                Ok(Some(payload)) => {
                    if let Ok(frame) = decode(&payload) {
                        let mut wire = Vec::new();
                        encode_into(&frame, &mut wire).expect("a decoded frame encodes");
                        let again = decode(&wire[HEADER_LEN..]).expect("and decodes again");
                        assert_eq!(again, frame);
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
        assert!(decoder.buffered() <= HEADER_LEN + MAX_FRAME + piece);
    }
}

fn built(arg: u8, payload: &[u8]) -> AttachFrame {
    let word = |at: usize| {
        u16::from_be_bytes([
            payload.get(at).copied().unwrap_or(0),
            payload.get(at + 1).copied().unwrap_or(0),
        ])
    };
    match (arg >> 2) % 6 {
        0 | 1 => AttachFrame::Hello {
            version: if arg & 0x80 != 0 { 2 } else { ATTACH_VERSION },
            mode: match payload.first().copied().unwrap_or(0) % 3 {
                0 => AttachMode::Interactive,
                1 => AttachMode::ReadOnly,
                _ => AttachMode::Control,
            },
            cols: word(1),
            rows: word(3),
        },
        2 => AttachFrame::Input {
            data: payload.to_vec(),
        },
        3 => AttachFrame::Resize {
            cols: word(0),
            rows: word(2),
        },
        4 => AttachFrame::Detach,
        _ => AttachFrame::DetachAll,
    }
}

fn check(hub: &Hub, readers: &mut BTreeMap<ClientId, Reader>, actions: &[HubAction]) {
    for action in actions {
        match action {
            HubAction::Resize { cols, rows } => assert!(*cols > 0 && *rows > 0, "{action:?}"),
            HubAction::Redraw { client, generation } => {
                let reader = readers
                    .get_mut(client)
                    .expect("a redraw for a client the hub holds");
                reader.redraw = Some(*generation);
            }
            HubAction::Input(data) => assert!(!data.is_empty()),
        }
    }
    for id in hub.clients() {
        assert!(readers.contains_key(&id), "a client never accepted");
    }
}

/// The client reads `n` of the bytes the hub has for it, as `clippy-ctl attach` does.
fn write(hub: &mut Hub, readers: &mut BTreeMap<ClientId, Reader>, id: ClientId, n: usize) {
    let unsent = hub.unsent(id);
    let n = n.min(unsent.len());
    let Some(reader) = readers.get_mut(&id) else {
        return;
    };
    reader.decoder.push(&unsent[..n]);
    while let Some(payload) = reader.decoder.next_frame().expect("whole frames") {
        let frame = decode(&payload).expect("an attach frame");
        if reader.frames == 0 {
            assert!(
                matches!(
                    frame,
                    AttachFrame::Welcome { .. }
                        | AttachFrame::Refused { .. }
                        | AttachFrame::DetachedAll { .. }
                ),
                "first frame {frame:?}"
            );
        }
        reader.frames += 1;
    }
    let action = hub.wrote(id, n);
    check(hub, readers, action.as_slice());
}

fuzz_target!(|data: &[u8]| {
    let [cut, limit, records @ ..] = data else {
        return;
    };
    codec(*cut, data);

    let mut hub = Hub::new("ab12", Some("fuzz".into()), (80, 24), RESTORE)
        .with_outbox_limit(64 + usize::from(*limit) * 16);
    let mut readers: BTreeMap<ClientId, Reader> = BTreeMap::new();
    // Connection slot → client id.
    let mut slots: [Option<ClientId>; 4] = [None; 4];
    let mut rest = records;
    while let [op, arg, len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (payload, after) = tail.split_at(len);
        rest = after;
        let slot = usize::from(*arg % 4);
        let actions = match (op % 8, slots[slot]) {
            (0, _) => {
                let id = hub.accept(arg & 0x80 == 0);
                readers.insert(id, Reader::default());
                slots[slot] = Some(id);
                Vec::new()
            }
            (1, Some(id)) => {
                let at = usize::from(*arg).min(payload.len());
                let mut actions = hub.received(id, &payload[..at]);
                actions.extend(hub.received(id, &payload[at..]));
                actions
            }
            (2, _) => hub.output(payload),
            (3, Some(id)) => {
                let Some(generation) = readers.get(&id).and_then(|r| r.redraw) else {
                    continue;
                };
                let generation = if arg & 0x80 != 0 {
                    generation.wrapping_sub(1)
                } else {
                    generation
                };
                hub.redrawn(id, generation, payload.to_vec())
                    .into_iter()
                    .collect()
            }
            (4, Some(id)) => {
                let n = usize::from(*arg) * 8 + len;
                write(&mut hub, &mut readers, id, n);
                if hub.finished(id) {
                    slots[slot] = None;
                    hub.closed(id)
                } else {
                    Vec::new()
                }
            }
            (5, Some(id)) => {
                slots[slot] = None;
                readers.remove(&id);
                hub.closed(id)
            }
            (6, _) => match arg % 3 {
                0 => {
                    let cols = u16::from(payload.first().copied().unwrap_or(1).max(1));
                    let rows = u16::from(payload.get(1).copied().unwrap_or(1).max(1));
                    hub.resized(cols, rows);
                    Vec::new()
                }
                1 => hub.detach_everyone().1,
                _ => {
                    hub.exited(
                        i32::try_from(len).unwrap_or(0),
                        (arg & 0x80 != 0).then_some(9),
                    );
                    Vec::new()
                }
            },
            (7, Some(id)) => {
                let mut wire = Vec::new();
                if encode_into(&built(*arg, payload), &mut wire).is_err() {
                    continue;
                }
                hub.received(id, &wire)
            }
            _ => continue,
        };
        check(&hub, &mut readers, &actions);
        let (cols, rows) = hub.size();
        assert!(cols > 0 && rows > 0);
    }
    // Every client reads what is left: still whole frames.
    let ids: Vec<ClientId> = hub.clients().collect();
    for id in ids {
        write(&mut hub, &mut readers, id, usize::MAX);
    }
});
