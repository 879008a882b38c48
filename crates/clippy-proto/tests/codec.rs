//! The wire format: round trips, framing under any chunking, and bad input.

#![allow(clippy::unwrap_used)] // Tests may panic on setup failures.

use clippy_proto::{
    AnswerRecord, Decision, ErrorReason, EventRecord, Format, FrameDecoder, HistoryEntry,
    HistoryInfo, HookStats, InboxItem, MAX_FRAME, MAX_SCREEN_BYTES, Message, Mode, PatternKind,
    Progress, ProtoError, Role, RouteInfo, RouteKind, RouteSpec, ScreenData, SearchHit,
    SessionExit, SessionInfo, SessionState, SessionSummary, TurnData, TurnMeta, WaitingState,
    decode, encode,
};
use clippy_proto::{Frame, Payload, encode_frame};
use std::io::Read;
use std::sync::Arc;

fn meta() -> TurnMeta {
    TurnMeta {
        turn_id: "abc:3".into(),
        message_length: Some(8),
        timestamp: 1_700_000_000_000,
        byte_length: 5,
        interrupted: true,
        truncated: false,
        exit_code: Some(-1),
        cwd: Some("/tmp".into()),
        input: None,
        spool_span: Some((10, 15)),
    }
}

fn route_info() -> RouteInfo {
    RouteInfo {
        route: "r1".into(),
        from: "abc".into(),
        to: "def".into(),
        kind: RouteKind::Handoff,
        template: "{turn}".into(),
        format: Format::Text,
        interrupt: false,
        max_hops: 16,
        gated: false,
        submit: true,
        paused: true,
        paused_reason: Some("hop_limit".into()),
        hops: 16,
        handoffs: 40,
    }
}

fn event() -> EventRecord {
    EventRecord {
        id: 7,
        ts: "2023-11-14T22:13:20.000Z".into(),
        kind: "route.stalled".into(),
        session: Some("abc".into()),
        route: Some("r1".into()),
        reason: Some("repeated".into()),
        hashes: vec!["00ff".into(); 3],
        turn_ids: vec!["abc:4".into(), "abc:5".into(), "abc:6".into()],
        ..EventRecord::default()
    }
}

fn every_message() -> Vec<Message> {
    let bytes = b"\x1b[1mhi\xff\x00".to_vec();
    vec![
        Message::Hello {
            id: 1,
            version: 1,
            role: Role::Wrapper,
        },
        Message::Register {
            id: 2,
            session: SessionInfo {
                session: "abc".into(),
                name: Some("coder".into()),
                pid: 42,
                command: vec!["claude".into()],
                preset: "claude".into(),
                bracketed_paste: true,
                spool: Some("/run/user/1/clippy/sessions/abc/spool".into()),
                cwd: None,
                no_history: false,
            },
            progress: Some(Progress {
                spool_size: 4096,
                prompts: 3,
                turns: 2,
                ..Progress::default()
            }),
            resends: true,
        },
        Message::Deregister {
            id: 3,
            session: "abc".into(),
            exit_code: Some(137),
            signal: Some(9),
        },
        Message::TurnCompleted {
            id: 4,
            session: "abc".into(),
            turn: TurnData {
                seq: 3,
                message: Some("**done**".into()),
                timestamp: 5,
                content: bytes.clone(),
                text: "hi".into(),
                interrupted: false,
                truncated: true,
                exit_code: None,
                cwd: None,
                input: Some("say hi".into()),
                spool_span: None,
            },
        },
        Message::BracketedPaste {
            id: 5,
            session: "abc".into(),
            enabled: false,
        },
        Message::Capture {
            id: 6,
            session: "abc".into(),
        },
        Message::CaptureById {
            id: 7,
            turn_id: "abc:3".into(),
        },
        Message::Paste {
            id: 8,
            session: "def".into(),
            format: Format::Text,
        },
        Message::Deliver {
            id: 9,
            sink: "file".into(),
            session: None,
            path: Some("/tmp/x".into()),
            format: Format::Raw,
        },
        Message::ListSessions { id: 10 },
        Message::GetTurn {
            id: 11,
            turn_id: "abc:3".into(),
            format: Format::Raw,
        },
        Message::ListTurns {
            id: 12,
            session: "abc".into(),
            limit: Some(2),
        },
        Message::Progress {
            id: 14,
            session: "abc".into(),
            progress: Progress {
                spool_size: 120,
                waiting: Some(WaitingState {
                    id: 4,
                    kind: "permission".into(),
                    tool: Some("Bash".into()),
                    input: Some(r#"{"command":"ls"}"#.into()),
                    message: None,
                    since: 7,
                }),
                answered: Some(AnswerRecord {
                    waiting_id: 3,
                    decision: Some(Decision::Always),
                    by: "terminal".into(),
                }),
                hooks: HookStats {
                    wired: true,
                    reports: 3,
                    turn_ends: 1,
                    rejected: 0,
                    disagreements: 1,
                    last_disagreement: Some("late".into()),
                },
                mode: Mode::Idle,
                prompts: 3,
                inputs: 2,
                prompt_inputs: 2,
                keystrokes: 5,
                turns: 1,
                announced_turns: 0,
                prompt_cursor: Some(100),
                exit_code: Some(1),
                cwd: Some("/home/me".into()),
                prompt_timestamp: Some(1_700_000_000_000),
                prompt_text: Some("\u{276f}".into()),
                unkept_turns: 2,
                input: None,
                input_blocked: true,
                prompt_unrecognised: true,
                attached: 2,
                busy_since: None,
            },
        },
        Message::Read {
            id: 15,
            session: "abc".into(),
            from_cursor: 7,
            max_bytes: Some(100),
        },
        Message::WaitFor {
            id: 16,
            session: "abc".into(),
            pattern: "hel+o".into(),
            kind: PatternKind::Regex,
            from_cursor: 0,
            timeout_ms: Some(500),
        },
        Message::WaitPrompt {
            id: 17,
            session: "abc".into(),
            from_cursor: 9,
            timeout_ms: None,
        },
        Message::Send {
            id: 18,
            session: "abc".into(),
            data: b"7".to_vec(),
            enter: true,
        },
        Message::ExpectSend {
            id: 19,
            session: "abc".into(),
            pattern: "[y/n]".into(),
            kind: PatternKind::Literal,
            from_cursor: 3,
            timeout_ms: Some(1000),
            data: b"y\r".to_vec(),
        },
        Message::SessionStatus {
            id: 20,
            session: "abc".into(),
        },
        Message::Exec {
            id: 21,
            session: "abc".into(),
            command: "ls".into(),
            timeout_ms: Some(2000),
        },
        Message::EndSession {
            id: 22,
            session: "abc".into(),
            force: true,
            timeout_ms: None,
        },
        Message::Screen {
            id: 23,
            session: "abc".into(),
            history: 100,
            timeout_ms: Some(1000),
        },
        Message::ScreenReport {
            id: 24,
            session: "abc".into(),
            request: 7,
            screen: screen(),
        },
        Message::RouteAdd {
            id: 31,
            route: RouteSpec {
                from: "abc".into(),
                to: "def".into(),
                kind: RouteKind::Report,
                template: Some("from {name}: {turn}".into()),
                format: Some(Format::Text),
                interrupt: true,
                max_hops: Some(4),
                gated: true,
                submit: Some(false),
            },
        },
        Message::RouteList { id: 32 },
        Message::RouteRemove {
            id: 33,
            route: "r1".into(),
        },
        Message::RoutePause {
            id: 34,
            route: "r1".into(),
        },
        Message::RouteResume {
            id: 35,
            route: "r1".into(),
        },
        Message::Inbox {
            id: 36,
            session: "def".into(),
        },
        Message::Approve {
            id: 37,
            approval: "a1".into(),
            text: Some("edited".into()),
        },
        Message::Deny {
            id: 38,
            approval: "a2".into(),
        },
        Message::ListEvents {
            id: 39,
            since: Some(10),
            types: vec!["route.handoff".into()],
        },
        Message::Subscribe {
            id: 40,
            since: None,
            types: Vec::new(),
        },
        Message::HelloAck { id: 1, version: 1 },
        Message::Done { id: 2 },
        Message::TurnRecorded {
            id: 4,
            turn_id: "abc:3".into(),
        },
        Message::Captured {
            id: 6,
            turn_id: "abc:3".into(),
            byte_length: 5,
        },
        Message::Sessions {
            id: 10,
            sessions: vec![Arc::new(SessionSummary {
                session: "abc".into(),
                waiting: Some("permission".into()),
                waiting_id: Some(3),
                name: None,
                pid: 42,
                command: vec![],
                preset: "generic".into(),
                connected: true,
                turns: 1,
                last_turn_id: Some("abc:3".into()),
                bracketed_paste: false,
                attached: 1,
            })],
        },
        Message::Turn {
            id: 11,
            turn: meta(),
            content: bytes.clone().into(),
        },
        Message::Turns {
            id: 12,
            turns: vec![meta(), meta()],
        },
        Message::SpoolData {
            id: 15,
            data: b"ello".to_vec(),
            cursor: 7,
            resume_cursor: 11,
        },
        Message::Matched {
            id: 16,
            matched: true,
            match_text: "hello".into(),
            match_cursor: 4,
            match_span: (4, 13),
            resume_cursor: 13,
            exit_code: None,
            cwd: None,
            timestamp: None,
            turn_id: None,
        },
        Message::Status {
            id: 20,
            status: SessionState {
                session: "abc".into(),
                waiting: None,
                hooks: HookStats::default(),
                name: None,
                pid: 42,
                connected: true,
                mode: Mode::Busy,
                exec_running: true,
                resume_cursor: 120,
                prompt_cursor: Some(100),
                current_input: Some("ls".into()),
                last_turn_id: Some("abc:3".into()),
                exit_code: None,
                cwd: None,
                bracketed_paste: false,
                waiters: 2,
                inbox: 1,
                spool: None,
                input_blocked: true,
                prompt_unrecognised: true,
                exited: None,
                attached: 2,
                busy_since: Some(1_700_000_000_000),
            },
        },
        Message::ExecResult {
            id: 21,
            turn_id: Some("abc:4".into()),
            output: "a b\n".into(),
            exit_code: Some(0),
            cwd: Some("/tmp".into()),
            resume_cursor: 130,
        },
        Message::SessionEnded {
            id: 22,
            outcome: "interrupted".into(),
            resume_cursor: 140,
        },
        Message::Answer {
            id: 61,
            session: "coder".into(),
            decision: Decision::Deny,
            reason: Some("use ls -la instead".into()),
            waiting_id: Some(3),
            by: Some("dash".into()),
        },
        Message::AnswerRequest {
            id: 0,
            session: "abc".into(),
            request: 12,
            decision: Decision::Always,
            reason: None,
            waiting_id: None,
            by: "client 4".into(),
        },
        Message::AnswerReport {
            id: 62,
            session: "abc".into(),
            request: 12,
            waiting_id: 3,
            refused: Some(ErrorReason::Unsupported),
            message: "this dialog offers no \"always\": press 1 (Yes) or Esc".into(),
        },
        Message::Answered {
            id: 61,
            session: "abc".into(),
            waiting_id: 3,
            decision: Decision::Allow,
            message: "pressed 1 (Yes)".into(),
        },
        Message::ScreenSnapshot {
            id: 23,
            session: "abc".into(),
            lines: vec!["line 1".into(), "Allow? [y/n]".into(), String::new()],
            history: 1,
            cols: 80,
            rows: 2,
            cursor_row: 0,
            cursor_col: 12,
            alternate: false,
        },
        Message::Route {
            id: 31,
            route: route_info(),
        },
        Message::Routes {
            id: 32,
            routes: vec![route_info()],
        },
        Message::InboxItems {
            id: 36,
            session: "def".into(),
            items: vec![InboxItem {
                handoff: "h3".into(),
                route: "r1".into(),
                turn_id: "abc:4".into(),
                byte_length: 12,
                state: "awaiting_approval".into(),
                approval: Some("a1".into()),
                created: 1_700_000_000_000,
                text: Some("the handoff".into()),
            }],
        },
        Message::Events {
            id: 39,
            events: vec![event()],
        },
        Message::Subscribed {
            id: 40,
            last_event_id: 7,
        },
        Message::History {
            id: 41,
            session: Some("rev".into()),
            since: Some(1_700_000_000_000),
            until: None,
            limit: Some(5),
        },
        Message::Search {
            id: 42,
            query: "migration \"lock".into(),
            session: None,
            since: None,
            until: Some(1_800_000_000_000),
            limit: None,
        },
        Message::ForgetHistory {
            id: 43,
            session: None,
            all: true,
        },
        Message::HistoryStatus { id: 44 },
        Message::HistoryTurns {
            id: 41,
            turns: vec![history_entry()],
        },
        Message::SearchHits {
            id: 42,
            hits: vec![SearchHit {
                entry: history_entry(),
                snippet: "the [migration] takes a [lock]".into(),
            }],
        },
        Message::Forgotten { id: 43, turns: 12 },
        Message::HistoryState {
            id: 44,
            history: HistoryInfo {
                enabled: true,
                path: Some("/home/u/.local/state/clippy".into()),
                turns: 1234,
                events: 5678,
                bytes: 5_600_000,
                problem: Some("disk full".into()),
            },
        },
        Message::error(13, ErrorReason::SessionNotFound, "no session \"zzz\""),
        Message::timeout(16, "nothing matched", 120),
        Message::Inject {
            id: 0,
            session: "def".into(),
            data: bytes,
        },
        Message::Terminate {
            id: 0,
            session: "abc".into(),
        },
        Message::Event {
            id: 0,
            event: event(),
        },
        Message::ScreenRequest {
            id: 0,
            session: "abc".into(),
            request: 7,
            history: 100,
        },
        Message::ResendTurns {
            id: 0,
            session: "abc".into(),
            from: 12,
            to: 15,
        },
    ]
}

fn screen() -> ScreenData {
    ScreenData {
        lines: vec!["old".into(), "$ ls".into(), "a  b".into()],
        history: 1,
        cols: 80,
        rows: 2,
        cursor_row: 1,
        cursor_col: 4,
        alternate: true,
    }
}

#[test]
fn a_screen_request_defaults_to_no_history_and_no_timeout() {
    use rmp_value::Value::*;
    let payload = map(&[
        ("type", Str("screen")),
        ("id", Uint(3)),
        ("session", Str("abc")),
    ]);
    assert_eq!(
        decode(&payload).unwrap(),
        Message::Screen {
            id: 3,
            session: "abc".into(),
            history: 0,
            timeout_ms: None,
        }
    );
}

#[test]
fn a_send_without_enter_is_the_send_of_older_clients() {
    use rmp_value::Value::*;
    let payload = map(&[
        ("type", Str("send")),
        ("id", Uint(4)),
        ("session", Str("abc")),
        ("data", Binary(b"7\r".to_vec())),
    ]);
    let send = Message::Send {
        id: 4,
        session: "abc".into(),
        data: b"7\r".to_vec(),
        enter: false,
    };
    assert_eq!(decode(&payload).unwrap(), send);
    // And a send without Enter is written without the field, as before it existed.
    let frame = encode(&send).unwrap();
    assert!(!String::from_utf8_lossy(&frame).contains("enter"));
}

#[test]
fn a_screen_too_large_for_a_frame_loses_its_oldest_lines_first() {
    let mut small = screen();
    assert_eq!(small.fit(MAX_SCREEN_BYTES), 0);
    assert_eq!(small, screen());

    // 3000 history lines of 4 KiB and 2 rows: over half a frame.
    let line = "x".repeat(4096);
    let mut big = ScreenData {
        lines: (0..3002).map(|i| format!("{i} {line}")).collect(),
        history: 3000,
        rows: 2,
        ..ScreenData::default()
    };
    let cut = big.fit(MAX_SCREEN_BYTES);
    assert!(cut > 0);
    assert_eq!(big.lines.len(), 3002 - cut);
    assert_eq!(big.history as usize, 3000 - cut);
    assert!(
        big.lines[0].starts_with(&format!("{cut} ")),
        "the oldest went"
    );
    assert!(
        big.lines.last().unwrap().starts_with("3001 "),
        "the rows stay"
    );
    let frame = encode(&Message::ScreenReport {
        id: 1,
        session: "abc".into(),
        request: 1,
        screen: big,
    })
    .unwrap();
    assert!(frame.len() <= MAX_FRAME);

    // Rows alone over the limit: cut from the top, history none.
    let mut rows = ScreenData {
        lines: vec!["a".repeat(10), "b".repeat(10)],
        history: 1,
        rows: 1,
        ..ScreenData::default()
    };
    assert_eq!(rows.fit(16), 1);
    assert_eq!((rows.lines.len(), rows.history), (1, 0));
    assert_eq!(rows.fit(4), 1);
    assert_eq!((rows.lines.len(), rows.history), (0, 0));
}

fn history_entry() -> HistoryEntry {
    HistoryEntry {
        turn_id: "abc:7".into(),
        session: "abc".into(),
        name: Some("rev".into()),
        command: vec!["claude".into()],
        cwd: Some("/src/app".into()),
        timestamp: 1_700_000_000_123,
        byte_length: 1834,
        input: Some("look at the migration".into()),
        exit_code: None,
        live: false,
    }
}

#[test]
fn every_message_round_trips() {
    let messages = every_message();
    let kinds: std::collections::BTreeSet<&str> = Message::TYPES.iter().copied().collect();
    // One example per type, and a second `error`: a timeout with its resume cursor.
    assert_eq!(messages.len(), kinds.len() + 1, "one example per type");
    let named: std::collections::BTreeSet<&str> = messages.iter().map(Message::kind).collect();
    assert_eq!(named, kinds, "`kind()` names every type, as on the wire");
    for message in messages {
        let frame = encode(&message).unwrap();
        let text = String::from_utf8_lossy(&frame);
        assert!(
            text.contains(message.kind()),
            "{} is written as its type",
            message.kind()
        );
        let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        assert_eq!(decode(&frame[4..]).unwrap(), message);
    }
}

#[test]
fn frames_reassemble_under_any_chunking() {
    let mut stream = Vec::new();
    for message in every_message() {
        stream.extend(encode(&message).unwrap());
    }
    for chunk in [1, 2, 3, 7, 64, 4096] {
        let mut decoder = FrameDecoder::default();
        let mut got = Vec::new();
        for piece in stream.chunks(chunk) {
            decoder.push(piece);
            while let Some(payload) = decoder.next_frame().unwrap() {
                got.push(decode(&payload).unwrap());
            }
        }
        assert_eq!(got, every_message(), "chunks of {chunk}");
        assert_eq!(decoder.buffered(), 0);
    }
}

/// A reader that hands out at most `step` bytes per read (a socket under load).
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn frames_read_straight_into_the_decoder_reassemble_under_any_chunking() {
    let mut stream = Vec::new();
    for message in every_message() {
        stream.extend(encode(&message).unwrap());
    }
    // A large frame among small ones: the decoder grows to it once, and keeps its buffer.
    let big = Message::Turn {
        id: 9,
        turn: meta(),
        content: (0..3_000_000u32)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<_>>()
            .into(),
    };
    stream.extend(encode(&big).unwrap());
    stream.extend(encode(&every_message()[0]).unwrap());
    let mut want = every_message();
    want.push(big);
    want.push(every_message()[0].clone());
    for step in [1, 3, 4096, 65_536, usize::MAX] {
        // One byte at a time over 3 MB takes long in a debug build: the small steps only go
        // as far as the big frame's head.
        let upto = if step < 100 {
            stream.len() - 3_000_100
        } else {
            stream.len()
        };
        let mut reader = Trickle {
            bytes: &stream[..upto],
            step,
        };
        let mut decoder = FrameDecoder::default();
        let mut got = Vec::new();
        loop {
            while let Some(payload) = decoder.next_payload().unwrap() {
                got.push(decode(payload).unwrap());
            }
            if decoder.read_from(&mut reader).unwrap() == 0 {
                break;
            }
        }
        assert_eq!(got[..], want[..got.len()], "reads of {step}");
        if step >= 100 {
            assert_eq!(got.len(), want.len(), "reads of {step}");
            assert_eq!(decoder.buffered(), 0);
        }
    }
}

#[test]
fn a_shared_turn_frame_is_byte_for_byte_the_encoded_one() {
    for len in [0, 1, 255, 256, 65_535, 65_536, 4 << 20] {
        let bytes: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        let text: String = (0..len)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        for content in [
            Payload::from(Arc::<[u8]>::from(bytes.clone())),
            Payload::from(Arc::<str>::from(text)),
        ] {
            let message = Message::Turn {
                id: 77,
                turn: meta(),
                content: content.clone(),
            };
            let frame = encode_frame(&message).unwrap();
            let whole = encode(&message).unwrap();
            assert_eq!(frame.parts().concat(), whole, "{len} bytes");
            assert_eq!(frame.len(), whole.len());
            // The content is not in the head: it is written from where it lies.
            assert_eq!(frame.parts()[1], &content[..]);
            assert_eq!(frame.parts()[0].len(), whole.len() - len);
            // And it decodes as any frame does, into owned bytes.
            let mut decoder = FrameDecoder::default();
            decoder.push(&whole);
            let decoded = decode(decoder.next_payload().unwrap().unwrap()).unwrap();
            assert_eq!(decoded, message);
            assert!(matches!(
                decoded,
                Message::Turn {
                    content: Payload::Owned(_),
                    ..
                }
            ));
        }
    }
    // Owned content and other messages stay in one buffer.
    let owned = Message::Turn {
        id: 1,
        turn: meta(),
        content: b"abc".to_vec().into(),
    };
    assert_eq!(
        encode_frame(&owned).unwrap(),
        Frame::from(encode(&owned).unwrap())
    );
    // A shared content too large for a frame is refused, as `encode` refuses it.
    let huge = Message::Turn {
        id: 1,
        turn: meta(),
        content: Payload::from(Arc::<[u8]>::from(vec![0; MAX_FRAME])),
    };
    assert!(matches!(
        encode_frame(&huge),
        Err(ProtoError::FrameTooLarge { .. })
    ));
}

#[test]
fn an_oversize_frame_is_refused_from_its_header() {
    let mut decoder = FrameDecoder::default();
    decoder.push(&((MAX_FRAME + 1) as u32).to_be_bytes());
    assert!(matches!(
        decoder.next_frame(),
        Err(ProtoError::FrameTooLarge { .. })
    ));
    // Exactly the limit is allowed (and waits for its payload).
    let mut decoder = FrameDecoder::default();
    decoder.push(&(MAX_FRAME as u32).to_be_bytes());
    assert!(decoder.next_frame().unwrap().is_none());
    // Read from a stream, a hostile length is refused before its payload is asked for.
    let hostile = u32::MAX.to_be_bytes();
    let mut decoder = FrameDecoder::default();
    decoder
        .read_from(&mut Trickle {
            bytes: &hostile,
            step: 4,
        })
        .unwrap();
    assert!(matches!(
        decoder.next_payload(),
        Err(ProtoError::FrameTooLarge { .. })
    ));
    // Encoding refuses what the peer would refuse.
    let huge = Message::Inject {
        id: 0,
        session: "a".into(),
        data: vec![0; MAX_FRAME],
    };
    assert!(matches!(
        encode(&huge),
        Err(ProtoError::FrameTooLarge { .. })
    ));
}

/// A MessagePack map, written by hand the way another language's library would.
fn map(entries: &[(&str, rmp_value::Value)]) -> Vec<u8> {
    rmp_value::encode(entries)
}

mod rmp_value {
    /// The few MessagePack values these tests need.
    pub enum Value {
        Str(&'static str),
        Uint(u32),
        Binary(Vec<u8>),
    }

    pub fn encode(entries: &[(&str, Value)]) -> Vec<u8> {
        let mut out = vec![0x80 | entries.len() as u8];
        for (key, value) in entries {
            str(&mut out, key);
            match value {
                Value::Str(s) => str(&mut out, s),
                Value::Uint(n) => {
                    out.push(0xce);
                    out.extend(n.to_be_bytes());
                }
                Value::Binary(bytes) => {
                    out.push(0xc4);
                    out.push(bytes.len() as u8);
                    out.extend(bytes);
                }
            }
        }
        out
    }

    fn str(out: &mut Vec<u8>, s: &str) {
        out.push(0xa0 | s.len() as u8);
        out.extend(s.as_bytes());
    }
}

#[test]
fn an_unknown_type_keeps_its_id_for_the_answer() {
    use rmp_value::Value::*;
    let payload = map(&[
        ("type", Str("frobnicate")),
        ("id", Uint(77)),
        ("extra", Str("x")),
    ]);
    match decode(&payload) {
        Err(ProtoError::UnknownType { id: 77, kind }) => assert_eq!(kind, "frobnicate"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_known_type_with_a_missing_field_says_so() {
    use rmp_value::Value::*;
    let payload = map(&[("type", Str("capture")), ("id", Uint(9))]);
    match decode(&payload) {
        Err(ProtoError::MissingField {
            id: 9,
            kind,
            detail,
        }) => {
            assert_eq!(kind, "capture");
            assert!(detail.contains("session"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    // Optional fields may be left out; unknown fields are ignored.
    let payload = map(&[
        ("type", Str("paste")),
        ("id", Uint(3)),
        ("session", Str("s")),
        ("color", Str("red")),
    ]);
    assert_eq!(
        decode(&payload).unwrap(),
        Message::Paste {
            id: 3,
            session: "s".into(),
            format: Format::Raw
        }
    );
}

#[test]
fn a_payload_that_is_not_a_message_is_malformed() {
    for payload in [&b""[..], b"\xc1", b"\x93\x01\x02\x03", b"\x81\xa4type\x01"] {
        assert!(
            matches!(decode(payload), Err(ProtoError::Malformed(_))),
            "{payload:?}"
        );
    }
}

#[test]
fn the_wire_form_is_a_plain_map_with_string_keys_and_bin_content() {
    let frame = encode(&Message::Inject {
        id: 0,
        session: "s".into(),
        data: vec![1, 2],
    })
    .unwrap();
    let payload = &frame[4..];
    assert_eq!(
        payload[0], 0x84,
        "a fixmap of 4 entries: type, id, session, data"
    );
    let text = String::from_utf8_lossy(payload);
    assert!(text.contains("type") && text.contains("inject") && text.contains("data"));
    // `data` is MessagePack bin 8 (0xc4), not an array of integers.
    let at = payload.windows(4).position(|w| w == b"data").unwrap();
    assert_eq!(&payload[at + 4..at + 7], &[0xc4, 2, 1]);
    assert_eq!(ErrorReason::SessionNotFound.as_str(), "session_not_found");
}

#[test]
fn the_answer_reasons_and_decisions_have_their_wire_strings() {
    for (reason, wire) in [
        (ErrorReason::NotWaiting, "not_waiting"),
        (ErrorReason::StaleAnswer, "stale_answer"),
        (ErrorReason::Unsupported, "unsupported"),
    ] {
        assert_eq!(reason.as_str(), wire);
        let error = Message::error(1, reason, "m");
        let frame = encode(&error).unwrap();
        assert!(String::from_utf8_lossy(&frame).contains(wire), "{wire}");
        assert_eq!(decode(&frame[4..]).unwrap(), error);
    }
    for (decision, wire) in [
        (Decision::Allow, "allow"),
        (Decision::Deny, "deny"),
        (Decision::Always, "always"),
    ] {
        assert_eq!(decision.as_str(), wire);
    }
    // An `answer` from an older or smaller client: no reason, no id, no `by`.
    let frame = encode(&Message::Answer {
        id: 2,
        session: "s".into(),
        decision: Decision::Allow,
        reason: None,
        waiting_id: None,
        by: None,
    })
    .unwrap();
    let back = decode(&frame[4..]).unwrap();
    assert!(matches!(
        back,
        Message::Answer {
            waiting_id: None,
            decision: Decision::Allow,
            ..
        }
    ));
}

#[test]
fn a_deregister_without_an_exit_status_is_still_read_and_one_with_it_stays_small() {
    use rmp_value::Value::*;
    // An older wrapper says nothing of how its command ended.
    let payload = map(&[
        ("type", Str("deregister")),
        ("id", Uint(4)),
        ("session", Str("abc")),
    ]);
    assert_eq!(
        decode(&payload).unwrap(),
        Message::Deregister {
            id: 4,
            session: "abc".into(),
            exit_code: None,
            signal: None,
        }
    );
    // Absent fields are left out on the wire, so an older broker reads the same map.
    let frame = encode(&Message::Deregister {
        id: 4,
        session: "abc".into(),
        exit_code: Some(3),
        signal: None,
    })
    .unwrap();
    let payload = &frame[4..];
    assert_eq!(payload[0], 0x84, "type, id, session, exit_code");
    assert!(!String::from_utf8_lossy(payload).contains("signal"));
}

#[test]
fn the_status_of_an_ended_session_round_trips() {
    let message = Message::Status {
        id: 20,
        status: SessionState {
            session: "abd".into(),
            waiting: None,
            hooks: HookStats::default(),
            name: Some("sh".into()),
            pid: 43,
            connected: false,
            mode: Mode::Exited,
            exec_running: false,
            resume_cursor: 120,
            prompt_cursor: None,
            current_input: None,
            last_turn_id: None,
            exit_code: None,
            cwd: None,
            bracketed_paste: false,
            waiters: 0,
            inbox: 0,
            spool: None,
            input_blocked: false,
            prompt_unrecognised: false,
            exited: Some(SessionExit {
                exit_code: Some(130),
                signal: Some(2),
                ended_at: 1_700_000_000_000,
            }),
            attached: 0,
            busy_since: None,
        },
    };
    let frame = encode(&message).unwrap();
    assert_eq!(decode(&frame[4..]).unwrap(), message);
}

#[test]
fn resends_and_unkept_turns_are_left_out_when_unsaid_so_older_peers_read_the_same_maps() {
    let session = SessionInfo {
        session: "abc".into(),
        name: None,
        pid: 1,
        command: vec![],
        preset: String::new(),
        bracketed_paste: false,
        spool: None,
        cwd: None,
        no_history: false,
    };
    let register = |resends| {
        let frame = encode(&Message::Register {
            id: 2,
            session: session.clone(),
            progress: Some(Progress::default()),
            resends,
        })
        .unwrap();
        String::from_utf8_lossy(&frame[4..]).into_owned()
    };
    let old = register(false);
    assert!(
        !old.contains("resends") && !old.contains("unkept_turns"),
        "{old}"
    );
    assert!(register(true).contains("resends"));
    // A map without the field (an older wrapper's) is read as not re-sending.
    let frame = encode(&Message::Register {
        id: 2,
        session: session.clone(),
        progress: None,
        resends: false,
    })
    .unwrap();
    assert!(matches!(
        decode(&frame[4..]).unwrap(),
        Message::Register { resends: false, .. }
    ));
    // A count of turns let go is said once there is one.
    let frame = encode(&Message::Progress {
        id: 3,
        session: "abc".into(),
        progress: Progress {
            unkept_turns: 4,
            ..Progress::default()
        },
    })
    .unwrap();
    assert!(String::from_utf8_lossy(&frame[4..]).contains("unkept_turns"));
}
