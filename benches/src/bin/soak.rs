//! `soak [--seconds N] [--sessions N] [--clients N] [--ring-depth N] [--think-ms N] [--bin-dir DIR]
//! [--out DIR] [--no-history]`: the soak test of `clippy_benches::soak` (run by `cargo xtask soak` in release).
//! Writes `soak-report.json` and `soak-report.md` to `--out` (default: the target directory) and
//! prints the table; exits 1 when a turn was lost, a wait skipped a marker, a request failed, a
//! request type's p99 passed 1 s or the broker's memory went over its bound, 2 when the run could
//! not be set up, 4 on bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clippy_benches::soak::{self, Config};

const USAGE: &str = "usage: soak [--seconds N] [--sessions N] [--clients N] [--ring-depth N] \
                     [--think-ms N] [--bin-dir DIR] [--out DIR] [--no-history]";

fn main() -> ExitCode {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    let mut config = Config::new(exe_dir);
    let mut out = clippy_benches::target_dir();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--no-history" {
            config.history = false;
            i += 1;
            continue;
        }
        let value = args.get(i + 1);
        let number = value.and_then(|v| v.parse::<u64>().ok()).filter(|&n| n > 0);
        let ok = match (args[i].as_str(), number) {
            ("--seconds", Some(n)) => {
                config.duration = Duration::from_secs(n);
                true
            }
            ("--sessions", Some(n)) => {
                config.sessions = n as usize;
                true
            }
            ("--clients", Some(n)) => {
                config.clients = n as usize;
                true
            }
            ("--ring-depth", Some(n)) => {
                config.ring_depth = n as usize;
                true
            }
            ("--think-ms", _) if value.is_some_and(|v| v.parse::<u64>().is_ok()) => {
                config.think = Duration::from_millis(value.map_or(0, |v| v.parse().unwrap_or(0)));
                true
            }
            ("--bin-dir", _) if value.is_some() => {
                config.bin_dir = value.map(PathBuf::from).unwrap_or_default();
                true
            }
            ("--out", _) if value.is_some() => {
                out = value.map(PathBuf::from).unwrap_or_default();
                true
            }
            _ => false,
        };
        if !ok {
            eprintln!("soak: bad argument {:?}\n{USAGE}", args[i]);
            return ExitCode::from(4);
        }
        i += 2;
    }
    let report = match soak::run(&config, &|line| eprintln!("{line}")) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report.table());
    match soak::write_report(&report, &out) {
        Ok((json, md)) => eprintln!("soak: wrote {} and {}", json.display(), md.display()),
        Err(e) => eprintln!("soak: cannot write the report: {e}"),
    }
    if report.failures().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
