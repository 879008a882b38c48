//! The agent's own hooks for one run: wiring them (arguments, environment and files from
//! `clippy-hooks`) and the socket their reports arrive on (CONTRACTS/HOOKS.md).
//!
//! The socket is `hook.sock` in the session's folder, named to the child in
//! [`clippy_hooks::SOCKET_ENV`]. A thread accepts each hook's connection, reads its one report
//! (bounded in size and time), and hands what it says to the byte loop, which passes it to the
//! tap in order with the output read so far (what the detector takes from it is
//! `clippy_wrapper::tap::signal_of`).

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use clippy_hooks::{Agent, ExistingSettings, HookCommand, MAX_REPORT_BYTES, RunWiring};

use crate::sink::{Injector, LoopCommand};

/// How long a hook may take to send its report once connected.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// The hooks wired for this run.
#[derive(Debug)]
pub struct Wired {
    /// The command to run, with the agent's extra arguments in place.
    pub command: Vec<OsString>,
    /// Environment for the child: the socket, and what the agent's wiring needs.
    pub env: Vec<(OsString, OsString)>,
    /// Whether the agent's own hooks were wired (not only the socket offered).
    pub agent: Option<Agent>,
    listener: UnixListener,
}

/// For an agent's preset (`claude`, `codex`, `gemini`): offers the hook socket in `dir` to the
/// child, and wires the agent's hooks when `command` runs that agent's program (`None` for any
/// other preset: nothing is offered). A wiring that cannot be made (no `clippy-ctl` to point
/// at, an agent setting clippy cannot merge into) leaves the agent unwired and says why in the
/// returned warning; the socket is still offered, for hooks installed in the agent's settings.
pub fn wire(
    command: &[OsString],
    preset: &str,
    dir: &Path,
) -> std::io::Result<Option<(Wired, Option<String>)>> {
    let Ok(agent) = Agent::from_name(preset) else {
        return Ok(None);
    };
    let socket = dir.join("hook.sock");
    let listener = UnixListener::bind(&socket)?;
    let mut wired = Wired {
        command: command.to_vec(),
        env: vec![(clippy_hooks::SOCKET_ENV.into(), socket.into_os_string())],
        agent: None,
        listener,
    };
    if !runs(command, agent) {
        return Ok(Some((wired, None)));
    }
    // Hooks installed in the agent's own settings report already: wiring them again for the
    // run would report every event twice. (Codex's installed `notify` is chained instead.)
    if agent != Agent::Codex && installed_for(agent) {
        wired.agent = Some(agent);
        return Ok(Some((wired, None)));
    }
    if agent == Agent::Gemini
        && let Err(why) = gemini_reads_defaults_in(dir)
    {
        let warning = format!(
            "gemini hooks not wired: {why}; `clippy-ctl hooks install gemini` puts them in your \
             own settings instead"
        );
        return Ok(Some((wired, Some(warning))));
    }
    let wiring = hook_command()
        .ok_or_else(|| "clippy-ctl is neither next to clippy-session nor on PATH".to_owned())
        .and_then(|hook| {
            let existing = ExistingSettings::read(agent, &|name| std::env::var_os(name))
                .map_err(|e| e.to_string())?;
            clippy_hooks::per_run(agent, &hook, dir, &existing).map_err(|e| e.to_string())
        });
    let RunWiring { args, env, files } = match wiring {
        Ok(wiring) => wiring,
        Err(why) => {
            let warning = format!("{agent} hooks not wired: {why}");
            return Ok(Some((wired, Some(warning))));
        }
    };
    for (path, text) in files {
        std::fs::write(path, text)?;
    }
    wired.command.splice(1..1, args);
    wired.env.extend(env);
    wired.agent = Some(agent);
    Ok(Some((wired, None)))
}

/// Whether `agent`'s own settings file holds clippy's hooks (`clippy-ctl hooks install`).
fn installed_for(agent: Agent) -> bool {
    let Some(path) = clippy_hooks::install::settings_path(agent, &|name| std::env::var_os(name))
    else {
        return false;
    };
    std::fs::read_to_string(&path).ok().is_some_and(|text| {
        clippy_hooks::install::is_installed(agent, &path, &text).unwrap_or(false)
    })
}

/// Whether Gemini CLI 0.61 reads a system-defaults file written in `dir`: it skips one unless
/// the file and every folder above it are owned by root and writable by neither group nor
/// others (so per-run wiring works for root, under root-owned private folders).
fn gemini_reads_defaults_in(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // The session's own folder first: clippy made it, so its owner is who runs clippy.
    for folder in dir.ancestors() {
        let meta = std::fs::metadata(folder)
            .map_err(|e| format!("cannot look at {}: {e}", folder.display()))?;
        if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
            return Err(format!(
                "Gemini CLI skips a system-defaults file under {}, which is not root's alone \
                 (owner uid {}, mode {:o})",
                folder.display(),
                meta.uid(),
                meta.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// Whether `command` runs `agent`'s own program (its file name is the agent's name).
fn runs(command: &[OsString], agent: Agent) -> bool {
    command
        .first()
        .and_then(|program| Path::new(program).file_name())
        .is_some_and(|name| name == agent.name())
}

/// `clippy-ctl hook`, by absolute path: next to this program, else on `PATH`.
fn hook_command() -> Option<HookCommand> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("clippy-ctl")))
        .filter(|path| path.is_file());
    let program = beside.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("clippy-ctl"))
            .find(|path| path.is_file() && path.is_absolute())
    })?;
    Some(HookCommand {
        program,
        args: vec!["hook".into()],
    })
}

impl Wired {
    /// Starts the thread that takes the hooks' reports to the loop, for the rest of the
    /// process (it ends with it; the socket goes with the session's folder).
    pub fn listen(self, injector: Injector) -> std::io::Result<()> {
        let listener = self.listener;
        std::thread::Builder::new()
            .name("clippy-session-hooks".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    let Ok(mut stream) = stream else { continue };
                    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
                    let mut frame = Vec::new();
                    let read = (&mut stream)
                        .take(MAX_REPORT_BYTES as u64 + 1)
                        .read_to_end(&mut frame);
                    let report = match read {
                        Ok(_) => clippy_hooks::decode(&frame)
                            .and_then(|(agent, payload)| clippy_hooks::parse(agent, payload))
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(format!("a hook's report could not be read: {e}")),
                    };
                    injector.pass(LoopCommand::AgentReport(report));
                }
            })?;
        Ok(())
    }
}
