//! End-to-end: a real `clippy-broker` process per test, fake wrappers and clients on its socket.

mod common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clippy_proto::{
    Client, ErrorReason, Format, HookStats, Message, PROTOCOL_VERSION, Progress, ProtoError, Role,
    SessionSummary, TurnData, WaitingState,
};
use common::{
    BROKER, Broker, Raw, Val, WAIT, builder, frame_of, raw_frame, report, runtime_dir, session_info,
};

/// Sends a request that must fail; returns the reason and message.
fn refused(client: &mut Client, make: impl FnOnce(u32) -> Message) -> (ErrorReason, String) {
    match client.request(make) {
        Err(ProtoError::Broker {
            reason, message, ..
        }) => (reason, message),
        other => panic!("expected an error reply, got {other:?}"),
    }
}

fn sessions(client: &mut Client) -> Vec<SessionSummary> {
    match client
        .request(|id| Message::ListSessions { id })
        .expect("list_sessions")
    {
        Message::Sessions { sessions, .. } => SessionSummary::unshare(sessions),
        other => panic!("{other:?}"),
    }
}

fn get_turn(client: &mut Client, arg: &str, format: Format) -> (String, Vec<u8>) {
    let turn_id = arg.to_owned();
    match client
        .request(|id| Message::GetTurn {
            id,
            turn_id,
            format,
        })
        .expect("get_turn")
    {
        Message::Turn { turn, content, .. } => (turn.turn_id, content.into_vec()),
        other => panic!("{other:?}"),
    }
}

fn capture(client: &mut Client, session: &str) -> Message {
    let session = session.to_owned();
    client
        .request(|id| Message::Capture { id, session })
        .expect("capture")
}

fn paste(client: &mut Client, session: &str, format: Format) -> Result<Message, ProtoError> {
    let session = session.to_owned();
    client.request(|id| Message::Paste {
        id,
        session,
        format,
    })
}

/// The next `inject` a fake wrapper receives.
fn next_inject(wrapper: &mut Client) -> (String, Vec<u8>) {
    match wrapper.recv().expect("an inject") {
        Message::Inject { id, session, data } => {
            assert_eq!(id, 0, "unsolicited commands use id 0");
            (session, data)
        }
        other => panic!("expected inject, got {other:?}"),
    }
}

/// Polls `list_sessions` until `pred` holds.
fn wait_sessions(client: &mut Client, pred: impl Fn(&[SessionSummary]) -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        if pred(&sessions(client)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "sessions never changed as expected"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_agents_own_message_and_waiting_state_travel_over_the_socket() {
    let broker = Broker::start(&[]);
    let mut aaa = broker.wrapper("aaa", Some("coder"), false);
    let mut bbb = broker.wrapper("bbb", None, false);
    let mut client = broker.client();
    let turn = TurnData {
        message: Some("**Done.** All tests pass.".into()),
        ..common::turn(1, b"\x1b[1mDone.\x1b[0m", "Done.")
    };
    let session = "aaa".to_owned();
    aaa.request(|id| Message::TurnCompleted { id, session, turn })
        .expect("turn_completed");
    report(&mut aaa, "aaa", 2, b"no hooks", "no hooks");

    assert_eq!(
        get_turn(&mut client, "aaa:1", Format::Message).1,
        b"**Done.** All tests pass."
    );
    let (reason, message) = refused(&mut client, |id| Message::GetTurn {
        id,
        turn_id: "coder".into(),
        format: Format::Message,
    });
    assert_eq!(reason, ErrorReason::NoMessage);
    assert!(message.contains("aaa:2 has no final message"), "{message}");

    // Relaying asks for the message and falls back to the text.
    capture(&mut client, "aaa");
    paste(&mut client, "bbb", Format::Message).expect("paste");
    assert_eq!(next_inject(&mut bbb).1, b"no hooks");

    // A wait reported by the wrapper shows in the status and the listing, and is an event.
    let waiting = WaitingState {
        id: 1,
        kind: "permission".into(),
        tool: Some("Bash".into()),
        input: Some(r#"{"command":"ls"}"#.into()),
        message: None,
        since: 1_700_000_000_000,
    };
    let progress = Progress {
        waiting: Some(waiting.clone()),
        hooks: HookStats {
            wired: true,
            reports: 3,
            ..HookStats::default()
        },
        ..Progress::default()
    };
    aaa.request(|id| Message::Progress {
        id,
        session: "aaa".into(),
        progress,
    })
    .expect("progress");
    match client
        .request(|id| Message::SessionStatus {
            id,
            session: "coder".into(),
        })
        .expect("status")
    {
        Message::Status { status, .. } => {
            assert_eq!(status.waiting, Some(waiting));
            assert!(status.hooks.wired);
            assert_eq!(status.hooks.reports, 3);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        sessions(&mut client)[0].waiting.as_deref(),
        Some("permission")
    );
    assert_eq!(sessions(&mut client)[0].waiting_id, Some(1));
    match client
        .request(|id| Message::ListEvents {
            id,
            since: None,
            types: vec!["session.waiting".into()],
        })
        .expect("list_events")
    {
        Message::Events { events, .. } => {
            assert_eq!(events.len(), 1, "{events:?}");
            assert_eq!(events[0].tool.as_deref(), Some("Bash"));
            assert_eq!(events[0].input.as_deref(), Some(r#"{"command":"ls"}"#));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn turns_are_listed_fetched_captured_and_pasted_with_bracketed_paste() {
    let broker = Broker::start(&[]);
    let mut aaa = broker.wrapper("aaa", Some("coder"), false);
    for seq in 1..=3 {
        let content = format!("\x1b[1manswer {seq}\x1b[0m\nsecond line\n");
        let text = format!("answer {seq}\nsecond line\n");
        assert_eq!(
            report(&mut aaa, "aaa", seq, content.as_bytes(), &text),
            format!("aaa:{seq}")
        );
    }
    let mut bbb = broker.wrapper("bbb", None, true);
    let mut client = broker.client();

    let list = sessions(&mut client);
    assert_eq!(list.len(), 2);
    let a = &list[0];
    assert_eq!(
        (a.session.as_str(), a.name.as_deref(), a.connected, a.turns),
        ("aaa", Some("coder"), true, 3)
    );
    assert_eq!(a.last_turn_id.as_deref(), Some("aaa:3"));
    assert!(list[1].bracketed_paste && list[1].turns == 0);

    match client
        .request(|id| Message::ListTurns {
            id,
            session: "coder".into(),
            limit: None,
        })
        .expect("list_turns")
    {
        Message::Turns { turns, .. } => {
            let ids: Vec<&str> = turns.iter().map(|t| t.turn_id.as_str()).collect();
            assert_eq!(ids, ["aaa:3", "aaa:2", "aaa:1"]);
            assert_eq!(turns[2].timestamp, 1_700_000_000_001);
        }
        other => panic!("{other:?}"),
    }

    let by_id = get_turn(&mut client, "aaa:2", Format::Raw);
    assert_eq!(
        by_id,
        (
            "aaa:2".into(),
            b"\x1b[1manswer 2\x1b[0m\nsecond line\n".to_vec()
        )
    );
    for arg in ["aaa", "coder", "a"] {
        assert_eq!(get_turn(&mut client, arg, Format::Raw).0, "aaa:3", "{arg}");
    }
    assert_eq!(
        get_turn(&mut client, "coder", Format::Text).1,
        b"answer 3\nsecond line\n"
    );

    match capture(&mut client, "coder") {
        Message::Captured {
            turn_id,
            byte_length,
            ..
        } => {
            assert_eq!(turn_id, "aaa:3");
            assert_eq!(
                byte_length as usize,
                "\x1b[1manswer 3\x1b[0m\nsecond line\n".len()
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        paste(&mut client, "bbb", Format::Raw).expect("paste"),
        Message::Done { .. }
    ));
    let (session, data) = next_inject(&mut bbb);
    assert_eq!(session, "bbb");
    assert_eq!(
        data,
        b"\x1b[200~\x1b[1manswer 3\x1b[0m\nsecond line\n\x1b[201~"
    );
    // The relay buffer survives the paste; text format; a target without bracketed paste.
    assert!(paste(&mut client, "aaa", Format::Text).is_ok());
    assert_eq!(next_inject(&mut aaa).1, b"answer 3\nsecond line\n");

    // capture_by_id takes an older turn.
    match client
        .request(|id| Message::CaptureById {
            id,
            turn_id: "aaa:1".into(),
        })
        .expect("capture_by_id")
    {
        Message::Captured { turn_id, .. } => assert_eq!(turn_id, "aaa:1"),
        other => panic!("{other:?}"),
    }
    paste(&mut client, "bbb", Format::Text).expect("paste");
    assert_eq!(
        next_inject(&mut bbb).1,
        b"\x1b[200~answer 1\nsecond line\n\x1b[201~"
    );
}

#[test]
fn the_ring_evicts_beyond_its_depth_and_turns_are_cut_at_the_size_limit() {
    let broker = Broker::start(&["--ring-depth", "2", "--max-turn-bytes", "8"]);
    let mut w = broker.wrapper("aaa", None, false);
    for seq in 1..=3 {
        report(&mut w, "aaa", seq, format!("turn {seq}").as_bytes(), "t");
    }
    let mut client = broker.client();
    // Gone from the ring, read from the history store, byte for byte.
    assert_eq!(get_turn(&mut client, "aaa:1", Format::Raw).1, b"turn 1");
    // The relay buffer takes turns the rings hold.
    let (reason, _) = refused(&mut client, |id| Message::CaptureById {
        id,
        turn_id: "aaa:1".into(),
    });
    assert_eq!(reason, ErrorReason::TurnNotFound);
    assert_eq!(get_turn(&mut client, "aaa:2", Format::Raw).1, b"turn 2");
    assert_eq!(sessions(&mut client)[0].turns, 2);

    report(&mut w, "aaa", 4, b"0123456789abcdef", "t");
    match client
        .request(|id| Message::GetTurn {
            id,
            turn_id: "aaa:4".into(),
            format: Format::Raw,
        })
        .expect("get_turn")
    {
        Message::Turn { turn, content, .. } => {
            assert_eq!(content, b"01234567");
            assert!(turn.truncated);
            assert_eq!(turn.byte_length, 8);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_request_error_reason_is_produced() {
    let broker = Broker::start(&[]);
    let mut w = broker.wrapper("aaa", Some("coder"), false);
    let _ab = broker.wrapper("abc", None, false);
    let mut client = broker.client();

    // session_not_found: unknown, and ambiguous (listing the candidates).
    let (reason, message) = refused(&mut client, |id| Message::Capture {
        id,
        session: "zzz".into(),
    });
    assert_eq!(reason, ErrorReason::SessionNotFound, "{message}");
    let (reason, message) = refused(&mut client, |id| Message::Capture {
        id,
        session: "a".into(),
    });
    assert_eq!(reason, ErrorReason::SessionNotFound);
    assert!(
        message.contains("aaa (coder)") && message.contains("abc"),
        "{message}"
    );
    // no_turn
    let (reason, _) = refused(&mut client, |id| Message::Capture {
        id,
        session: "coder".into(),
    });
    assert_eq!(reason, ErrorReason::NoTurn);
    // buffer_empty
    let (reason, _) = refused(&mut client, |id| Message::Paste {
        id,
        session: "abc".into(),
        format: Format::Raw,
    });
    assert_eq!(reason, ErrorReason::BufferEmpty);
    // turn_not_found
    let (reason, _) = refused(&mut client, |id| Message::GetTurn {
        id,
        turn_id: "aaa:7".into(),
        format: Format::Raw,
    });
    assert_eq!(reason, ErrorReason::TurnNotFound);
    // duplicate_session
    let mut other = Client::connect(&broker.socket, Role::Wrapper).expect("connect");
    let (reason, _) = refused(&mut other, |id| Message::Register {
        id,
        session: session_info("aaa", None, false),
        progress: None,
        resends: false,
    });
    assert_eq!(reason, ErrorReason::DuplicateSession);
    // not_allowed: wrapper messages from a client, a second hello, a reply sent to the broker.
    let (reason, _) = refused(&mut client, |id| Message::Register {
        id,
        session: session_info("ccc", None, false),
        progress: None,
        resends: false,
    });
    assert_eq!(reason, ErrorReason::NotAllowed);
    let (reason, _) = refused(&mut client, |id| Message::Hello {
        id,
        version: PROTOCOL_VERSION,
        role: Role::Wrapper,
    });
    assert_eq!(reason, ErrorReason::NotAllowed);
    let (reason, _) = refused(&mut client, |id| Message::Done { id });
    assert_eq!(reason, ErrorReason::NotAllowed);
    // session_not_found for a wrapper reporting for a session it did not register.
    let (reason, _) = refused(&mut other, |id| Message::TurnCompleted {
        id,
        session: "aaa".into(),
        turn: common::turn(1, b"x", "x"),
    });
    assert_eq!(reason, ErrorReason::SessionNotFound);

    report(&mut w, "aaa", 1, b"body\n", "body\n");
    capture(&mut client, "aaa");
    // missing_field: a sink without its field.
    let (reason, _) = refused(&mut client, |id| Message::Deliver {
        id,
        sink: "inject".into(),
        session: None,
        path: None,
        format: Format::Raw,
    });
    assert_eq!(reason, ErrorReason::MissingField);
    // sink_failed: clipboard (no $DISPLAY for the broker), an unknown sink, a relative file path.
    for (sink, path, needle) in [
        ("clipboard", None, "$DISPLAY is not set"),
        ("printer", None, "unknown sink"),
        ("file", Some("relative.txt"), "relative"),
    ] {
        let (reason, message) = refused(&mut client, |id| Message::Deliver {
            id,
            sink: sink.into(),
            session: None,
            path: path.map(Into::into),
            format: Format::Raw,
        });
        assert_eq!(reason, ErrorReason::SinkFailed, "{sink}");
        assert!(message.contains(needle), "{message}");
    }
    // Sink failures do not touch turn storage.
    assert_eq!(get_turn(&mut client, "aaa:1", Format::Raw).1, b"body\n");
}

#[test]
fn the_file_sink_writes_the_captured_turn() {
    let broker = Broker::start(&[]);
    let mut w = broker.wrapper("aaa", None, false);
    report(&mut w, "aaa", 1, b"\x1b[31mred\x1b[0m\n", "red\n");
    let mut client = broker.client();
    capture(&mut client, "aaa");
    let out = broker.runtime().join("out.txt");
    for (format, expected) in [
        (Format::Raw, &b"\x1b[31mred\x1b[0m\n"[..]),
        (Format::Text, &b"red\n"[..]),
    ] {
        let reply = client
            .request(|id| Message::Deliver {
                id,
                sink: "file".into(),
                session: None,
                path: Some(out.display().to_string()),
                format,
            })
            .expect("deliver");
        assert!(matches!(reply, Message::Done { .. }), "{reply:?}");
        assert_eq!(fs::read(&out).expect("read"), expected);
        let mode = fs::metadata(&out).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn a_hello_with_another_version_is_refused_and_closed() {
    let broker = Broker::start(&[]);
    let mut raw = Raw::connect(&broker.socket);
    raw.send(&Message::Hello {
        id: 3,
        version: PROTOCOL_VERSION + 1,
        role: Role::Client,
    });
    match raw.recv() {
        Some(Message::Error { id, reason, .. }) => {
            assert_eq!((id, reason), (3, ErrorReason::VersionMismatch));
        }
        other => panic!("{other:?}"),
    }
    raw.expect_closed();
    // Anything but hello first: not_allowed, closed.
    let mut raw = Raw::connect(&broker.socket);
    raw.send(&Message::ListSessions { id: 4 });
    assert!(matches!(
        raw.recv(),
        Some(Message::Error {
            id: 4,
            reason: ErrorReason::NotAllowed,
            ..
        })
    ));
    raw.expect_closed();
}

#[test]
fn a_connection_that_never_says_hello_is_closed_after_the_deadline() {
    let broker = Broker::start(&[]);
    let deadline = Duration::from_millis(clippy_broker_core::HELLO_TIMEOUT_MS);
    let started = Instant::now();
    let mut silent = Raw::connect(&broker.socket);
    // Meanwhile a client that said hello is served, and stays.
    let mut greeted = broker.client();
    assert!(sessions(&mut greeted).is_empty());
    // Blocks until EOF (the read timeout, WAIT, bounds it): closed without a reply.
    silent.expect_closed();
    let waited = started.elapsed();
    assert!(
        waited >= deadline,
        "closed after {waited:?}, before the deadline"
    );
    assert!(waited < WAIT, "closed only after {waited:?}");
    assert!(sessions(&mut greeted).is_empty());
}

#[test]
fn unknown_types_and_missing_fields_keep_the_connection_open() {
    let broker = Broker::start(&[]);
    let mut raw = Raw::hello(&broker.socket, Role::Client);
    raw.send_bytes(&raw_frame(&[
        ("type", Val::Str("frobnicate")),
        ("id", Val::Uint(5)),
    ]));
    match raw.recv() {
        Some(Message::Error {
            id,
            reason,
            message,
            ..
        }) => {
            assert_eq!((id, reason), (5, ErrorReason::UnknownType));
            assert!(message.contains("frobnicate"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // `capture` without `session`.
    raw.send_bytes(&raw_frame(&[
        ("type", Val::Str("capture")),
        ("id", Val::Uint(6)),
    ]));
    match raw.recv() {
        Some(Message::Error {
            id,
            reason,
            message,
            ..
        }) => {
            assert_eq!((id, reason), (6, ErrorReason::MissingField));
            assert!(message.contains("session"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Still open and working.
    raw.send_bytes(&raw_frame(&[
        ("type", Val::Str("list_sessions")),
        ("id", Val::Uint(7)),
    ]));
    assert!(matches!(raw.recv(), Some(Message::Sessions { id: 7, .. })));
}

#[test]
fn malformed_and_oversize_frames_close_only_that_connection() {
    let broker = Broker::start(&[]);
    let mut w = broker.wrapper("aaa", None, false);
    report(&mut w, "aaa", 1, b"x", "x");
    let mut good = broker.client();

    // A header announcing 4 GiB: payload_too_large with id 0, then closed.
    let mut oversize = Raw::hello(&broker.socket, Role::Client);
    oversize.send_bytes(&[0xff, 0xff, 0xff, 0xff, 0x00]);
    assert!(matches!(
        oversize.recv(),
        Some(Message::Error {
            id: 0,
            reason: ErrorReason::PayloadTooLarge,
            ..
        })
    ));
    oversize.expect_closed();
    // 16 MiB + 1: also over.
    let mut oversize = Raw::hello(&broker.socket, Role::Client);
    let len = u32::try_from(clippy_proto::MAX_FRAME + 1).expect("len");
    oversize.send_bytes(&len.to_be_bytes());
    assert!(matches!(
        oversize.recv(),
        Some(Message::Error {
            reason: ErrorReason::PayloadTooLarge,
            ..
        })
    ));
    oversize.expect_closed();

    // Not MessagePack at all (0xc1 is never used), and a map without `type`.
    for payload in [&[0xc1_u8][..], &[0x81, 0xa2, b'i', b'd', 0x01][..]] {
        let mut malformed = Raw::hello(&broker.socket, Role::Client);
        malformed.send_bytes(&frame_of(payload));
        assert!(matches!(
            malformed.recv(),
            Some(Message::Error {
                id: 0,
                reason: ErrorReason::MissingField,
                ..
            })
        ));
        malformed.expect_closed();
    }

    // Everyone else carries on.
    assert_eq!(sessions(&mut good).len(), 1);
    assert_eq!(report(&mut w, "aaa", 2, b"y", "y"), "aaa:2");
}

#[test]
fn a_client_that_never_reads_is_disconnected_without_stalling_others() {
    let broker = Broker::start(&[]);
    let mut big = broker.wrapper("big", None, false);
    let megabyte = vec![b'x'; 1024 * 1024];
    report(&mut big, "big", 1, &megabyte, "x");

    // A wrapper flooding turns, and a client timing its requests, meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let mut flooder = broker.wrapper("flood", None, false);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut seq = 0;
            while !stop.load(Ordering::Relaxed) {
                seq += 1;
                report(&mut flooder, "flood", seq, &[b'f'; 4096], "f");
            }
            seq
        })
    };
    let probe = {
        let mut client = broker.client();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut worst = Duration::ZERO;
            let mut count = 0;
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                sessions(&mut client);
                worst = worst.max(start.elapsed());
                count += 1;
            }
            (count, worst)
        })
    };

    // 100 requests for a 1 MiB reply each, never reading: more than the 64 MiB queue bound.
    let mut stuck = Raw::hello(&broker.socket, Role::Client);
    let started = Instant::now();
    for id in 2..102 {
        let request = clippy_proto::encode(&Message::GetTurn {
            id,
            turn_id: "big:1".into(),
            format: Format::Raw,
        })
        .expect("encode");
        if stuck.stream.write_all(&request).is_err() {
            break; // already disconnected
        }
    }
    // The broker drops it: reading now ends (after what the kernel had buffered) well before
    // 100 replies.
    let mut replies = 0;
    while let Some(message) = stuck.recv() {
        assert!(matches!(message, Message::Turn { .. }), "{message:?}");
        replies += 1;
    }
    assert!(
        replies < 100,
        "{replies} replies: the stuck client was not disconnected"
    );
    let elapsed = started.elapsed();

    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let turns_flooded = flood.join().expect("flood thread");
    let (requests, worst) = probe.join().expect("probe thread");
    // The other clients were served all along (how fast is printed, not asserted: on a loaded
    // machine any bound is a guess).
    assert!(turns_flooded > 0 && requests > 0);
    eprintln!(
        "the stuck client was dropped after {elapsed:?}; {requests} requests of another client \
         meanwhile, the slowest answered in {worst:?}"
    );
    assert!(
        broker.stderr().contains("does not read"),
        "{}",
        broker.stderr()
    );
    println!(
        "stuck client dropped after {replies} replies in {elapsed:?}; meanwhile {turns_flooded} turns flooded and {requests} list_sessions, worst {worst:?}"
    );
}

/// A large turn's reply is written from the ring as it lies (the frame's head, then the turn's
/// own bytes): read in small pieces, with the replies to further requests queued behind it, every
/// frame is byte for byte what encoding the whole message makes.
#[test]
fn a_large_turn_is_sent_from_the_ring_byte_exact_however_it_is_read() {
    use std::io::Read;

    let broker = Broker::start(&[]);
    let mut w = broker.wrapper("big", None, false);
    let content: Vec<u8> = (0..3 * 1024 * 1024 + 7u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let text = "the text view\n".repeat(50_000);
    assert_eq!(report(&mut w, "big", 1, &content, &text), "big:1");

    let mut raw = Raw::hello(&broker.socket, Role::Client);
    let requests = [(2, Format::Raw), (3, Format::Text), (4, Format::Raw)];
    for (id, format) in requests {
        raw.send(&Message::GetTurn {
            id,
            turn_id: "big:1".into(),
            format,
        });
    }
    let mut decoder = clippy_proto::FrameDecoder::default();
    let mut piece = [0u8; 997];
    let mut frames = Vec::new();
    while frames.len() < requests.len() {
        let n = raw.stream.read(&mut piece).expect("read");
        assert!(n > 0, "the broker closed the connection");
        decoder.push(&piece[..n]);
        while let Some(payload) = decoder.next_frame().expect("frame") {
            frames.push(payload);
        }
    }
    for ((id, format), payload) in requests.into_iter().zip(frames) {
        let message = clippy_proto::decode(&payload).expect("decode");
        let Message::Turn {
            id: got_id,
            content: got,
            ..
        } = &message
        else {
            panic!("{message:?}");
        };
        assert_eq!(*got_id, id);
        let want: &[u8] = match format {
            Format::Text => text.as_bytes(),
            _ => &content,
        };
        assert!(got == want, "content of reply {id} differs");
        // The same bytes as the whole message encoded in one buffer.
        let whole = clippy_proto::encode(&message).expect("encode");
        assert!(whole[4..] == payload[..], "frame of reply {id} differs");
    }
    assert_eq!(decoder.buffered(), 0);
}

/// A wrapper that stops reading (its program takes no input) is not fed without bound: once
/// about `INPUT_BACKLOG_LIMIT` waits on the way to it, pastes are refused `busy`; the session
/// stays.
#[test]
fn a_wrapper_that_never_reads_its_injections_gets_busy_pastes() {
    let broker = Broker::start(&[]);
    let mut source = broker.wrapper("src", None, false);
    report(&mut source, "src", 1, &vec![b'p'; 256 * 1024], "p");
    // Registered, then never reads again.
    let _deaf = broker.wrapper("deaf", None, false);
    let mut client = broker.client();
    capture(&mut client, "src");
    let mut pasted = 0;
    let outcome = loop {
        match paste(&mut client, "deaf", Format::Raw) {
            Ok(Message::Done { .. }) => pasted += 1,
            Err(ProtoError::Broker {
                reason, message, ..
            }) => break (reason, message),
            other => panic!("{other:?}"),
        }
        assert!(
            pasted < 200,
            "{pasted} pastes of 256 KiB into a wrapper that reads none"
        );
    };
    assert_eq!(outcome.0, ErrorReason::Busy, "{}", outcome.1);
    assert!(
        outcome.1.contains("has not taken the input"),
        "{}",
        outcome.1
    );
    // Everything accepted fits the socket's buffers plus the limit.
    assert!(
        pasted * 256 * 1024 <= clippy_proto::INPUT_BACKLOG_LIMIT + 4 * 1024 * 1024,
        "{pasted} pastes accepted"
    );
    assert!(sessions(&mut client).iter().any(|s| s.session == "deaf"));
}

#[test]
fn a_dropped_wrapper_loses_its_session_but_the_relay_buffer_stays() {
    let broker = Broker::start(&[]);
    let mut aaa = broker.wrapper("aaa", None, false);
    let mut bbb = broker.wrapper("bbb", None, false);
    report(&mut aaa, "aaa", 1, b"keep me\n", "keep me\n");
    let mut client = broker.client();
    capture(&mut client, "aaa");
    drop(aaa); // the socket closes: an implicit deregister
    wait_sessions(&mut client, |list| {
        list.len() == 1 && list[0].session == "bbb"
    });
    // The session's turns are gone from memory; the history store still has them.
    assert_eq!(get_turn(&mut client, "aaa:1", Format::Raw).1, b"keep me\n");
    paste(&mut client, "bbb", Format::Raw).expect("paste");
    assert_eq!(next_inject(&mut bbb).1, b"keep me\n");
    // The wrapper comes back (a reconnect): accepted, its re-sent turn gets the same id.
    let mut again = broker.wrapper("aaa", None, false);
    assert_eq!(
        report(&mut again, "aaa", 1, b"keep me\n", "keep me\n"),
        "aaa:1"
    );
}

#[test]
fn a_second_broker_says_already_running() {
    let broker = Broker::start(&[]);
    let output = Command::new(BROKER)
        .arg("--foreground")
        .env("XDG_RUNTIME_DIR", broker.runtime())
        .env("XDG_STATE_HOME", broker.runtime().join("state"))
        .output()
        .expect("run a second broker");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("already running (pid {})", broker.pid())),
        "{stderr}"
    );
    // The first one is unaffected.
    assert!(broker.socket.exists());
    assert!(sessions(&mut broker.client()).is_empty());
}

#[test]
fn brokers_started_at_once_leave_exactly_one_running() {
    // Two wrappers (or a wrapper and a clippy-ctl) that find no broker each start one.
    let runtime = runtime_dir();
    let mut brokers: Vec<_> = (0..4)
        .map(|n| {
            let stderr = runtime.path().join(format!("broker{n}.stderr"));
            builder(runtime.path()).log(stderr).spawn()
        })
        .collect();
    let deadline = Instant::now() + WAIT;
    let mut exits = vec![None; brokers.len()];
    while exits.iter().filter(|e| e.is_some()).count() < brokers.len() - 1 {
        for (exit, broker) in exits.iter_mut().zip(&mut brokers) {
            if exit.is_none() {
                *exit = broker.try_wait();
            }
        }
        assert!(
            Instant::now() < deadline,
            "more than one broker still runs: {exits:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    for (n, exit) in exits.iter().enumerate() {
        let Some(status) = exit else { continue };
        let stderr = fs::read_to_string(runtime.path().join(format!("broker{n}.stderr")))
            .unwrap_or_default();
        assert_eq!(status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("already running"), "{stderr}");
    }
    // The one left serves.
    let socket = runtime.path().join("clippy").join("broker.sock");
    let deadline = Instant::now() + WAIT;
    let mut client = loop {
        match Client::connect(&socket, Role::Client) {
            Ok(client) => break client,
            Err(e) => assert!(Instant::now() < deadline, "nobody serves: {e}"),
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    client.set_read_timeout(Some(WAIT)).expect("timeout");
    assert!(sessions(&mut client).is_empty());
}

#[test]
fn an_ended_session_tells_how_it_ended_over_the_socket() {
    let broker = Broker::start(&[]);
    let mut w = broker.wrapper("aaa", Some("sh"), false);
    let reply = w
        .request(|id| Message::Deregister {
            id,
            session: "aaa".into(),
            exit_code: Some(3),
            signal: None,
        })
        .expect("deregister");
    assert!(matches!(reply, Message::Done { .. }), "{reply:?}");
    let mut client = broker.client();
    match client.request(|id| Message::SessionStatus {
        id,
        session: "sh".into(),
    }) {
        Ok(Message::Status { status, .. }) => {
            assert_eq!(status.session, "aaa");
            assert_eq!(status.mode, clippy_proto::Mode::Exited);
            let exited = status.exited.expect("how it ended");
            assert_eq!((exited.exit_code, exited.signal), (Some(3), None));
        }
        other => panic!("{other:?}"),
    }
    match client.request(|id| Message::ListEvents {
        id,
        since: None,
        types: vec!["session.exited".into()],
    }) {
        Ok(Message::Events { events, .. }) => {
            assert_eq!(events.len(), 1, "{events:?}");
            assert_eq!(events[0].exit_code, Some(3));
        }
        other => panic!("{other:?}"),
    }
    assert!(sessions(&mut client).is_empty());
}

#[test]
fn a_stale_socket_is_removed_and_the_broker_starts() {
    let runtime = runtime_dir();
    let dir = runtime.path().join("clippy");
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    drop(UnixListener::bind(dir.join("broker.sock")).expect("bind")); // leaves the file
    assert!(UnixStream::connect(dir.join("broker.sock")).is_err());
    let broker = Broker::start_in(runtime, &[]);
    assert!(sessions(&mut broker.client()).is_empty());
    assert!(
        broker.stderr().contains("stale socket"),
        "{}",
        broker.stderr()
    );
}

#[test]
fn sigterm_stops_the_broker_and_removes_the_socket() {
    let mut broker = Broker::start(&[]);
    let _w = broker.wrapper("aaa", None, false);
    let mut raw = Raw::hello(&broker.socket, Role::Client);
    let status = broker.stop();
    assert_eq!(status.code(), Some(0), "{}", broker.stderr());
    assert!(!broker.socket.exists());
    raw.expect_closed();
    assert!(broker.stderr().contains("stopped"), "{}", broker.stderr());
}

#[test]
fn the_socket_is_0600_in_a_0700_folder() {
    let broker = Broker::start(&[]);
    let mode = |p: &Path| fs::symlink_metadata(p).expect("stat").permissions().mode() & 0o7777;
    assert_eq!(mode(&broker.socket), 0o600);
    assert_eq!(mode(broker.socket.parent().expect("folder")), 0o700);
}

#[test]
fn without_a_usable_runtime_dir_or_with_bad_arguments_it_exits_4() {
    let run = |env: Option<&str>, args: &[&str]| {
        let mut command = Command::new(BROKER);
        command
            .arg("--foreground")
            .args(args)
            .env_remove("XDG_RUNTIME_DIR");
        if let Some(value) = env {
            command
                .env("XDG_RUNTIME_DIR", value)
                .env("XDG_STATE_HOME", Path::new(value).join("state"));
        }
        let output = command.output().expect("run");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(None, &[]);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(stderr.contains("XDG_RUNTIME_DIR"), "{stderr}");
    assert!(!stderr.contains("/tmp/clippy"), "no /tmp fallback");
    let (code, _) = run(Some("relative/dir"), &[]);
    assert_eq!(code, Some(4));
    let (code, _) = run(Some("/nonexistent/clippy-test"), &[]);
    assert_eq!(code, Some(4));
    let runtime = runtime_dir();
    let dir = runtime.path().to_str().expect("utf-8");
    for args in [
        &["--ring-depth", "0"][..],
        &["--ring-depth", "x"],
        &["--max-turn-bytes", "0"],
        &["--max-turn-bytes", "99999999999"],
        &["--log-level", "loud"],
    ] {
        let (code, stderr) = run(Some(dir), args);
        assert_eq!(code, Some(4), "{args:?}: {stderr}");
    }
}

#[test]
fn without_foreground_it_logs_to_a_0600_file() {
    let runtime = runtime_dir();
    let stderr = runtime.path().join("stderr");
    let mut child = builder(runtime.path()).background().log(&stderr).spawn();
    let log = runtime.path().join("clippy").join("broker.log");
    let deadline = Instant::now() + WAIT;
    while !fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("listening")
    {
        assert!(Instant::now() < deadline, "no log line");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.signal(nix::sys::signal::Signal::SIGTERM);
    let status = child.wait_timeout(WAIT).expect("stops");
    assert!(status.success());
    let text = fs::read_to_string(&log).expect("log");
    let first = text.lines().next().expect("a line");
    // `2024-01-01T00:00:00.000Z INFO listening on …`
    let mut parts = first.splitn(3, ' ');
    let stamp = parts.next().expect("timestamp");
    assert!(
        stamp.len() == 24 && stamp.ends_with('Z') && stamp.as_bytes()[10] == b'T',
        "{first}"
    );
    assert_eq!(parts.next(), Some("INFO"), "{first}");
    assert!(text.contains("stopped"), "{text}");
    assert_eq!(
        fs::metadata(&log).expect("stat").permissions().mode() & 0o777,
        0o600
    );
    assert!(fs::read_to_string(&stderr).expect("stderr").is_empty());
}

#[test]
fn a_peer_of_another_user_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        println!("SKIPPED: the peer uid test needs root (to connect as nobody)");
        return;
    }
    let python = Path::new("/usr/bin/python3");
    let setpriv_ok = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !setpriv_ok || !python.exists() {
        println!("SKIPPED: the peer uid test needs setpriv and /usr/bin/python3");
        return;
    }
    let broker = Broker::start(&[]);
    // Loosen every mode, so that only the SO_PEERCRED check stands in the way (as ssh-agent's
    // regression test does).
    for (path, mode) in [
        (broker.runtime(), 0o777),
        (broker.socket.parent().expect("folder"), 0o777),
        (broker.socket.as_path(), 0o777),
    ] {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
    }
    let hello = clippy_proto::encode(&Message::Hello {
        id: 1,
        version: PROTOCOL_VERSION,
        role: Role::Client,
    })
    .expect("encode");
    let hex: String = hello.iter().map(|b| format!("{b:02x}")).collect();
    let script = "import socket, sys\n\
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
        s.settimeout(10)\n\
        s.connect(sys.argv[1])\n\
        try:\n    s.sendall(bytes.fromhex(sys.argv[2]))\nexcept OSError:\n    pass\n\
        try:\n    data = s.recv(65536)\nexcept ConnectionResetError:\n    data = b''\n\
        print('closed' if data == b'' else 'answered %d bytes' % len(data))\n";
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(python)
        .args(["-c", script])
        .arg(&broker.socket)
        .arg(&hex)
        .output()
        .expect("run python as nobody");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert_eq!(stdout.trim(), "closed", "{stderr}");
    assert!(
        broker.stderr().contains("refused connection") && broker.stderr().contains("uid 65534"),
        "{}",
        broker.stderr()
    );
    // The broker's own user is still served.
    assert!(sessions(&mut broker.client()).is_empty());
}

#[test]
fn a_client_may_half_close_and_still_get_its_replies() {
    let broker = Broker::start(&[]);
    let mut w = broker.wrapper("aaa", None, false);
    let big = vec![b'z'; 2 * 1024 * 1024];
    report(&mut w, "aaa", 1, &big, "z");
    let mut raw = Raw::hello(&broker.socket, Role::Client);
    raw.send(&Message::GetTurn {
        id: 2,
        turn_id: "aaa:1".into(),
        format: Format::Raw,
    });
    raw.stream
        .shutdown(std::net::Shutdown::Write)
        .expect("half-close");
    match raw.recv() {
        Some(Message::Turn { content, .. }) => assert_eq!(content.len(), big.len()),
        other => panic!("{other:?}"),
    }
    raw.expect_closed();
}

/// A turn over the size limit keeps the beginning of its raw bytes and the end of its text view
/// (what its screen kept of a flood ends where the output did), from a line start.
#[test]
fn an_oversize_turn_keeps_its_first_bytes_and_the_end_of_its_text() {
    let config_dir = runtime_dir();
    let config = config_dir.path().join("config.toml");
    fs::write(&config, "[broker]\nmax_turn_bytes = 1024\n").expect("write config");
    let broker = Broker::start(&["--config", config.to_str().expect("utf-8")]);
    let mut w = broker.wrapper("big", None, false);
    let raw: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let text: String = (1..=500).map(|n| format!("line {n}\n")).collect();
    assert!(text.len() > 1024);
    report(&mut w, "big", 1, &raw, &text);
    let mut client = broker.client();
    assert_eq!(get_turn(&mut client, "big:1", Format::Raw).1, &raw[..1024]);
    let (_, kept) = get_turn(&mut client, "big:1", Format::Text);
    let kept = String::from_utf8(kept).expect("utf-8");
    assert!(kept.len() <= 1024, "{} bytes", kept.len());
    assert!(
        text.ends_with(&kept),
        "the end of the text, whole: {kept:?}"
    );
    assert!(kept.starts_with("line ") && kept.ends_with("line 499\nline 500\n"));
    let turns = match client
        .request(|id| Message::ListTurns {
            id,
            session: "big".into(),
            limit: None,
        })
        .expect("list_turns")
    {
        Message::Turns { turns, .. } => turns,
        other => panic!("{other:?}"),
    };
    assert!(
        turns[0].truncated && turns[0].byte_length == 1024,
        "{turns:?}"
    );
}

#[test]
fn the_configuration_file_sets_the_ring_depth_and_bad_keys_are_refused() {
    let config_dir = runtime_dir();
    let config = config_dir.path().join("config.toml");
    // Without history, what the ring evicted is gone.
    fs::write(
        &config,
        "[broker]\nring_depth = 1\n[history]\nenabled = false\n",
    )
    .expect("write config");
    let broker = Broker::start(&["--config", config.to_str().expect("utf-8")]);
    let mut w = broker.wrapper("aaa", None, false);
    report(&mut w, "aaa", 1, b"one", "t");
    report(&mut w, "aaa", 2, b"two", "t");
    let mut client = broker.client();
    let (reason, _) = refused(&mut client, |id| Message::GetTurn {
        id,
        turn_id: "aaa:1".into(),
        format: Format::Raw,
    });
    assert_eq!(
        reason,
        ErrorReason::TurnNotFound,
        "a ring of depth 1 keeps only turn 2, and no history is kept"
    );
    assert_eq!(get_turn(&mut client, "aaa:2", Format::Raw).1, b"two");

    fs::write(&config, "[broker]\nring_dept = 1\n").expect("write config");
    let runtime = runtime_dir();
    let output = Command::new(BROKER)
        .args(["--foreground", "--config", config.to_str().expect("utf-8")])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env("XDG_STATE_HOME", runtime.path().join("state"))
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("broker.ring_dept") && stderr.contains("config.toml"),
        "{stderr}"
    );
}
