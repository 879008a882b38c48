//! `bare-server [--epoll] SOCKET [FRAME_FILE]`: the broker benchmark's baseline as a process of
//! its own (`benches/benches/broker.rs`, `clippy_benches::broker::BareServer::spawn`).
//!
//! Binds the Unix socket `SOCKET`, accepts one connection and answers every length-prefixed
//! frame it reads in one write: with the frame itself, or with the whole frame (header
//! included) stored in `FRAME_FILE`. It waits for each request blocked in `read`, or with
//! `--epoll` in `epoll_wait` as the broker does. Exits 0 when the peer closes the connection, 1
//! on any failure.

use std::path::PathBuf;
use std::process::ExitCode;

use clippy_benches::broker::{BareReply, BareWait, serve_at};

fn main() -> ExitCode {
    let mut args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let wait = if args.first().is_some_and(|a| a.as_os_str() == "--epoll") {
        args.remove(0);
        BareWait::Epoll
    } else {
        BareWait::Read
    };
    let reply = match args.get(1) {
        None => Ok(BareReply::Echo),
        Some(file) => std::fs::read(file)
            .map(BareReply::Fixed)
            .map_err(|e| format!("cannot read {}: {e}", file.display())),
    };
    let result = match (args.first(), reply) {
        (Some(socket), Ok(reply)) if args.len() <= 2 => {
            serve_at(socket, &reply, wait).map_err(|e| format!("{}: {e}", socket.display()))
        }
        (_, Err(e)) => Err(e),
        _ => Err("usage: bare-server [--epoll] SOCKET [FRAME_FILE]".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bare-server: {e}");
            ExitCode::FAILURE
        }
    }
}
