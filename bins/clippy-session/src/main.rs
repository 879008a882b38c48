//! `clippy-session`: wrap one interactive agent in a PTY and detect its turns — or, with
//! `--replay`, run turn detection over an asciicast recording to check a preset offline.

mod asciicast;
mod replay;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use clippy_turn::{DEFAULT_MAX_TURN_BYTES, DetectorConfig, PRESETS, Preset};

/// Exit code for invalid arguments or configuration (SPEC §10).
const EXIT_USAGE: u8 = 4;

#[derive(Debug, Parser)]
#[command(name = "clippy-session", version, about, after_help = presets_help())]
struct Args {
    /// Prompt preset: which agent-emitted signals mean "waiting for input".
    #[arg(long, value_name = "NAME", default_value = "generic")]
    preset: String,
    /// A custom prompt regex, matched anywhere in each ANSI-stripped line (replaces the preset's
    /// line pattern; the preset's other signals stay).
    #[arg(long, value_name = "REGEX")]
    pattern: Option<String>,
    /// Largest turn kept, in bytes; longer turns are cut and marked truncated.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TURN_BYTES)]
    max_turn_bytes: usize,
    /// Read an asciicast v2 recording and print the turns detected in it, instead of running a command.
    #[arg(long, value_name = "FILE.cast")]
    replay: Option<PathBuf>,
    /// With --replay: one JSON object per turn instead of a readable listing.
    #[arg(long, requires = "replay")]
    json: bool,
}

fn presets_help() -> String {
    let mut help = String::from("Presets:\n");
    for spec in PRESETS {
        help.push_str(&format!("  {:<8} {}\n", spec.name, spec.description));
    }
    help
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let config = match detector_config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("clippy-session: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let Some(path) = &args.replay else {
        eprintln!("clippy-session: nothing to do: give --replay FILE.cast");
        return ExitCode::from(EXIT_USAGE);
    };
    match replay::run(path, config, args.json, &mut std::io::stdout().lock()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("clippy-session: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

fn detector_config(args: &Args) -> Result<DetectorConfig, clippy_turn::TurnError> {
    let mut preset = Preset::named(&args.preset)?;
    if let Some(pattern) = &args.pattern {
        preset = preset.with_prompt(pattern)?;
    }
    Ok(DetectorConfig::new(preset).max_turn_bytes(args.max_turn_bytes))
}
