//! The broker's request handling (the pure state machine) under arbitrary sequences of messages
//! from several connections, wrappers and clients, with the clock moving.
//!
//! Input layout: a sequence of records `[op, conn, len_hi, len_lo, payload…]`. `op % 8` picks:
//! 0 open a connection, 1 close it, 2–5 a message (the payload, decoded as MessagePack; an
//! undecodable one is a decode failure), 6 advance the clock by `len` ms and expire waits,
//! 7 continue scans. `conn % 4` picks one of four connections. Connections start with a valid
//! `hello` half the time (as a wrapper or a client), so the fuzzer reaches the requests.
//! Checks: no panic, whatever arrives; every action names a connection that was opened.
#![no_main]

use std::collections::HashSet;

use clippy_broker_core::{Action, ConnId, State};
use clippy_proto::{Message, PROTOCOL_VERSION, Role, decode};
use clippy_registry::RegistryConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let config = RegistryConfig {
        ring_depth: 4,
        max_turn_bytes: 256,
    };
    let Ok(mut state) = State::new(config) else {
        return;
    };
    let mut opened = HashSet::new();
    let mut now = 1_700_000_000_000u64;
    let mut rest = data;
    while let [op, conn, hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])).min(tail.len());
        let (payload, after) = tail.split_at(len);
        rest = after;
        let conn = ConnId(u64::from(*conn % 4) + 16);
        let actions = match op % 8 {
            0 => {
                opened.insert(conn);
                let mut actions = state.connection_opened(conn, true);
                if op & 0x10 != 0 {
                    let role = if op & 0x20 != 0 { Role::Wrapper } else { Role::Client };
                    let hello = Message::Hello {
                        id: 1,
                        version: PROTOCOL_VERSION,
                        role,
                    };
                    actions.extend(state.handle(conn, hello, now));
                }
                actions
            }
            1 => state.connection_closed(conn),
            2..=5 => match decode(payload) {
                Ok(message) => state.handle(conn, message, now),
                Err(error) => state.decode_failed(conn, &error),
            },
            6 => {
                now += len as u64;
                state.expire(now)
            }
            _ => state.continue_scans(),
        };
        for action in &actions {
            let target = match action {
                Action::Send(c, _) | Action::Close(c) | Action::Publish(c, _) => Some(*c),
                Action::Deliver { reply_to, .. } => Some(*reply_to),
                _ => None,
            };
            if let Some(target) = target {
                assert!(opened.contains(&target), "action for a connection never opened");
            }
        }
    }
});
