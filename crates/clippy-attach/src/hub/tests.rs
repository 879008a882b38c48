use clippy_proto::FrameDecoder;
use clippy_proto::attach::{AttachFrame, AttachMode, DetachReason, decode, encode_into};

use super::*;

const RESTORE: Restore = Restore {
    normal: b"\x1b[?25h",
    alternate: b"\x1b[?1049l\x1b[?25h",
};

fn wire(frames: &[AttachFrame]) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames {
        encode_into(frame, &mut out).expect("encodes");
    }
    out
}

fn hello(mode: AttachMode, cols: u16, rows: u16) -> AttachFrame {
    AttachFrame::Hello {
        version: ATTACH_VERSION,
        mode,
        cols,
        rows,
    }
}

/// Everything queued for `client`, as frames, marked written.
fn take(hub: &mut Hub, client: ClientId) -> Vec<AttachFrame> {
    let bytes = hub.unsent(client).to_vec();
    hub.wrote(client, bytes.len());
    frames_of(&bytes)
}

fn frames_of(bytes: &[u8]) -> Vec<AttachFrame> {
    let mut decoder = FrameDecoder::default();
    decoder.push(bytes);
    let mut frames = Vec::new();
    while let Some(payload) = decoder.next_frame().expect("well framed") {
        frames.push(decode(&payload).expect("decodes"));
    }
    assert_eq!(decoder.buffered(), 0, "a frame was cut");
    frames
}

fn attach(hub: &mut Hub, mode: AttachMode, size: (u16, u16)) -> (ClientId, Vec<HubAction>) {
    let client = hub.accept(true);
    let actions = hub.received(client, &wire(&[hello(mode, size.0, size.1)]));
    (client, actions)
}

fn output(data: &[u8]) -> AttachFrame {
    AttachFrame::Output {
        data: data.to_vec(),
    }
}

#[test]
fn a_client_gets_the_screen_then_the_output_that_came_meanwhile_in_order() {
    let mut hub = Hub::new("s1", Some("sh".into()), (80, 24), RESTORE);
    let (client, actions) = attach(&mut hub, AttachMode::Interactive, (80, 24));
    // Same size: no resize, just the screen.
    assert_eq!(
        actions,
        [HubAction::Redraw {
            client,
            generation: 1
        }]
    );
    assert!(hub.output(b"one ").is_empty());
    assert!(hub.output(b"two").is_empty());
    assert_eq!(hub.redrawn(client, 1, b"SCREEN".to_vec()), None);
    assert!(hub.output(b" three").is_empty());
    assert_eq!(
        take(&mut hub, client),
        [
            AttachFrame::Welcome {
                session: "s1".into(),
                name: Some("sh".into()),
                cols: 80,
                rows: 24,
                restore: RESTORE.normal.to_vec(),
                restore_alternate: RESTORE.alternate.to_vec(),
            },
            AttachFrame::Redraw {
                data: b"SCREEN".to_vec(),
                skipped: 0
            },
            output(b"one two"),
            output(b" three"),
        ]
    );
}

#[test]
fn frames_split_anywhere_are_taken_whole() {
    let mut hub = Hub::new("s1", None, (80, 24), RESTORE);
    let client = hub.accept(true);
    let bytes = wire(&[
        hello(AttachMode::Interactive, 80, 24),
        AttachFrame::Input {
            data: b"ls\r".to_vec(),
        },
        AttachFrame::Input {
            data: b"pwd\r".to_vec(),
        },
    ]);
    let mut inputs = Vec::new();
    for byte in &bytes {
        for action in hub.received(client, std::slice::from_ref(byte)) {
            if let HubAction::Input(data) = action {
                inputs.push(data);
            }
        }
    }
    assert_eq!(inputs, [b"ls\r".to_vec(), b"pwd\r".to_vec()]);
}

#[test]
fn the_newest_interactive_client_sets_the_size_and_gives_it_back_when_it_leaves() {
    let mut hub = Hub::new("s1", None, (80, 24), RESTORE);
    let (first, actions) = attach(&mut hub, AttachMode::Interactive, (100, 30));
    assert_eq!(
        actions[0],
        HubAction::Resize {
            cols: 100,
            rows: 30
        }
    );
    let (second, actions) = attach(&mut hub, AttachMode::Interactive, (120, 40));
    assert_eq!(
        actions[0],
        HubAction::Resize {
            cols: 120,
            rows: 40
        }
    );
    // A read-only client neither resizes nor types.
    let (watcher, actions) = attach(&mut hub, AttachMode::ReadOnly, (50, 10));
    assert!(matches!(actions[..], [HubAction::Redraw { .. }]));
    let typed = wire(&[
        AttachFrame::Input {
            data: b"rm -rf /\r".to_vec(),
        },
        AttachFrame::Resize { cols: 10, rows: 5 },
    ]);
    assert!(hub.received(watcher, &typed).is_empty());
    // Once it has its screen, a resize gets it the screen again, still at the session's size.
    assert_eq!(hub.redrawn(watcher, 1, b"S".to_vec()), None);
    let resized = wire(&[AttachFrame::Resize { cols: 60, rows: 12 }]);
    assert_eq!(
        hub.received(watcher, &resized),
        [HubAction::Redraw {
            client: watcher,
            generation: 2
        }]
    );
    assert_eq!(hub.size(), (120, 40));
    // The first client resizes: it is the newest to set the size now.
    assert_eq!(
        hub.received(first, &wire(&[AttachFrame::Resize { cols: 90, rows: 20 }])),
        [HubAction::Resize { cols: 90, rows: 20 }]
    );
    // The second leaves: not in force, nothing changes.
    assert!(hub.closed(second).is_empty());
    let (third, _) = attach(&mut hub, AttachMode::Interactive, (70, 20));
    // The third detaches with its key: the first's size comes back.
    let actions = hub.received(third, &wire(&[AttachFrame::Detach]));
    assert_eq!(actions, [HubAction::Resize { cols: 90, rows: 20 }]);
    assert_eq!(hub.size(), (90, 20));
    assert!(!hub.finished(third));
    let frames = take(&mut hub, third);
    assert_eq!(
        frames.last(),
        Some(&AttachFrame::Detached {
            reason: DetachReason::Asked
        })
    );
    assert!(hub.finished(third));
    // The session's own terminal resized: its size is in force.
    hub.resized(132, 43);
    assert!(hub.closed(first).is_empty());
    assert_eq!(hub.size(), (132, 43));
}

/// Output bytes in `frames`, and the last redraw's screen and `skipped`.
fn tally(frames: &[AttachFrame]) -> (usize, Option<(Vec<u8>, u64)>) {
    let mut output = 0;
    let mut redraw = None;
    for frame in frames {
        match frame {
            AttachFrame::Output { data } => output += data.len(),
            AttachFrame::Redraw { data, skipped } => redraw = Some((data.clone(), *skipped)),
            _ => {}
        }
    }
    (output, redraw)
}

#[test]
fn a_slow_client_skips_to_the_current_screen_and_never_holds_more_than_the_limit() {
    let mut hub = Hub::new("s1", None, (80, 24), RESTORE).with_outbox_limit(1000);
    let (slow, _) = attach(&mut hub, AttachMode::ReadOnly, (80, 24));
    let (fast, _) = attach(&mut hub, AttachMode::ReadOnly, (80, 24));
    assert_eq!(hub.redrawn(slow, 1, b"S0".to_vec()), None);
    assert_eq!(hub.redrawn(fast, 1, b"F0".to_vec()), None);
    take(&mut hub, fast);
    // The slow client has begun reading its first frame, then stops.
    let mut slow_stream = hub.unsent(slow)[..2].to_vec();
    assert_eq!(hub.wrote(slow, 2), None);
    let chunk = [b'x'; 300];
    let mut fast_got = 0;
    for _ in 0..10 {
        // While it does not read, nothing is asked for it: no screen is rendered in vain.
        assert!(hub.output(&chunk).is_empty());
        fast_got += tally(&take(&mut hub, fast)).0;
        assert!(hub.unsent(slow).len() <= 1000, "{}", hub.unsent(slow).len());
    }
    // The fast client lost nothing.
    assert_eq!(fast_got, 3000);
    // The slow one reads the rest of the frame it had begun: now it gets the current screen.
    slow_stream.extend_from_slice(hub.unsent(slow));
    let rest = hub.unsent(slow).len();
    assert_eq!(
        hub.wrote(slow, rest),
        Some(HubAction::Redraw {
            client: slow,
            generation: 2
        })
    );
    // Output while the screen is rendered follows it.
    assert!(hub.output(&chunk).is_empty());
    assert_eq!(hub.redrawn(slow, 2, b"NOW".to_vec()), None);
    slow_stream.extend_from_slice(hub.unsent(slow));
    let (output, redraw) = tally(&frames_of(&slow_stream));
    let (screen, skipped) = redraw.expect("a redraw");
    assert_eq!(screen, b"NOW");
    // Every byte is either delivered or counted as skipped.
    assert_eq!(output as u64 + skipped, 3300);
    // Only what came after the screen: what it had queued but not begun went too.
    assert_eq!(output, 300, "{output}");
}

#[test]
fn one_screen_at_a_time_is_asked_for_a_client_and_an_outdated_one_is_asked_again() {
    let mut hub = Hub::new("s1", None, (80, 24), RESTORE).with_outbox_limit(1000);
    let (client, _) = attach(&mut hub, AttachMode::Interactive, (80, 24));
    // More output than the limit while its first screen is rendered: the held output is
    // dropped, and the screen, once it comes, is too old to follow.
    for _ in 0..3 {
        assert!(hub.output(&[b'y'; 400]).is_empty());
    }
    // An answer to no request is ignored.
    assert_eq!(hub.redrawn(client, 7, b"?".to_vec()), None);
    assert_eq!(
        hub.redrawn(client, 1, b"OLD".to_vec()),
        Some(HubAction::Redraw {
            client,
            generation: 2
        })
    );
    assert!(hub.output(&[b'z'; 10]).is_empty());
    assert_eq!(hub.redrawn(client, 2, b"NEW".to_vec()), None);
    let (output, redraw) = tally(&take(&mut hub, client));
    assert_eq!(redraw, Some((b"NEW".to_vec(), 1200)));
    assert_eq!(output, 10);
}

#[test]
fn clippy_ctl_detach_lets_every_client_go_and_says_how_many() {
    let mut hub = Hub::new("s1", None, (80, 24), RESTORE);
    let (a, _) = attach(&mut hub, AttachMode::Interactive, (80, 24));
    let (b, _) = attach(&mut hub, AttachMode::ReadOnly, (80, 24));
    let control = hub.accept(true);
    let actions = hub.received(
        control,
        &wire(&[hello(AttachMode::Control, 0, 0), AttachFrame::DetachAll]),
    );
    assert!(actions.is_empty());
    assert_eq!(
        take(&mut hub, control),
        [AttachFrame::DetachedAll { clients: 2 }]
    );
    for client in [a, b] {
        assert_eq!(
            take(&mut hub, client).last(),
            Some(&AttachFrame::Detached {
                reason: DetachReason::Command
            })
        );
        assert!(hub.finished(client));
    }
    assert_eq!(hub.attached(), 0);
    // Output after that goes nowhere.
    hub.output(b"late");
    assert!(hub.unsent(a).is_empty());
}

#[test]
fn the_end_of_the_program_is_told_to_every_client() {
    let mut hub = Hub::new("s1", None, (80, 24), RESTORE);
    let (a, _) = attach(&mut hub, AttachMode::Interactive, (80, 24));
    assert_eq!(hub.redrawn(a, 1, Vec::new()), None);
    take(&mut hub, a);
    hub.exited(3, None);
    assert_eq!(
        take(&mut hub, a),
        [
            AttachFrame::Exited {
                exit_code: 3,
                signal: None
            },
            AttachFrame::Detached {
                reason: DetachReason::Exited
            }
        ]
    );
    assert!(hub.finished(a));
}

#[test]
fn strangers_bad_versions_and_garbage_are_refused_with_a_reason() {
    let mut hub = Hub::new("s1", None, (80, 24), RESTORE);
    let stranger = hub.accept(false);
    assert!(matches!(
        &take(&mut hub, stranger)[..],
        [AttachFrame::Refused { message }] if message.contains("another user")
    ));
    assert!(hub.finished(stranger));
    // Nothing a refused client sends is taken.
    assert!(
        hub.received(stranger, &wire(&[hello(AttachMode::Interactive, 9, 9)]))
            .is_empty()
    );

    let old = hub.accept(true);
    let frame = AttachFrame::Hello {
        version: 99,
        mode: AttachMode::Interactive,
        cols: 9,
        rows: 9,
    };
    assert!(hub.received(old, &wire(&[frame])).is_empty());
    assert!(matches!(
        &take(&mut hub, old)[..],
        [AttachFrame::Refused { message }] if message.contains("version 99")
    ));

    let rude = hub.accept(true);
    hub.received(
        rude,
        &wire(&[AttachFrame::Input {
            data: b"x".to_vec(),
        }]),
    );
    assert!(matches!(
        &take(&mut hub, rude)[..],
        [AttachFrame::Refused { message }] if message.contains("hello")
    ));

    let noisy = hub.accept(true);
    hub.received(noisy, &[0, 0, 0, 3, 0xc1, 0xc1, 0xc1]);
    assert!(matches!(
        &take(&mut hub, noisy)[..],
        [AttachFrame::Refused { message }] if message.contains("not an attach frame")
    ));

    let huge = hub.accept(true);
    hub.received(huge, &[0xff, 0xff, 0xff, 0xff]);
    assert!(matches!(
        &take(&mut hub, huge)[..],
        [AttachFrame::Refused { .. }]
    ));

    // A control connection that sends keys is refused too, and nobody was resized.
    let control = hub.accept(true);
    let actions = hub.received(
        control,
        &wire(&[
            hello(AttachMode::Control, 0, 0),
            AttachFrame::Input {
                data: b"x".to_vec(),
            },
        ]),
    );
    assert!(actions.is_empty());
    assert_eq!(hub.size(), (80, 24));
}

/// Found by the `attach` fuzz target (`fuzz/regressions/attach/`): a client that had not read
/// its welcome when the output overflowed its outbox lost the welcome with the rest, so it never
/// had the bytes that restore its terminal, and the first frame it read was another.
#[test]
fn a_client_that_skips_output_still_gets_its_welcome_first() {
    let mut hub = Hub::new("s1", None, (80, 24), RESTORE).with_outbox_limit(64);
    let (client, actions) = attach(&mut hub, AttachMode::Interactive, (0, 0));
    assert_eq!(
        actions,
        [HubAction::Redraw {
            client,
            generation: 1
        }]
    );
    assert_eq!(hub.redrawn(client, 1, b"$ ".to_vec()), None);
    // More than the outbox may hold, none of it read: the client skips to the screen.
    hub.output(&[b'x'; 100]);
    hub.output(&[b'y'; 100]);
    hub.exited(1, None);
    let frames = take(&mut hub, client);
    assert!(
        matches!(frames.first(), Some(AttachFrame::Welcome { restore, .. }) if restore == RESTORE.normal),
        "{frames:?}"
    );
    assert!(
        matches!(
            frames.last(),
            Some(AttachFrame::Detached {
                reason: DetachReason::Exited
            })
        ),
        "{frames:?}"
    );
}
