//! `clippy-ctl spawn`: a session with no terminal, started by the client layer
//! ([`clippy_client::spawn`]), which returns its id once the broker knows it.

use std::time::Duration;

use crate::cli::{Cli, SpawnArgs};
use crate::error::CtlError;

/// Starts the session and returns its id once it is registered.
pub fn spawn(cli: &Cli, args: &SpawnArgs) -> Result<String, CtlError> {
    let request = clippy_client::Spawn {
        command: args.command.clone(),
        name: args.name.clone(),
        preset: args.preset.clone(),
        pattern: args.pattern.clone(),
        config: cli.config.clone(),
        cwd: args.cwd.clone(),
        env: args.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        size: args.size.clone(),
        shell_integration: args.shell_integration,
        no_agent_hooks: args.no_agent_hooks,
        no_history: args.no_history,
    };
    if cli.socket.is_some() && (!args.command.is_empty() || args.shell_integration) {
        return Err(CtlError::Usage(
            "spawn registers its session with the broker of $XDG_RUNTIME_DIR; --socket cannot \
             point it at another"
                .into(),
        ));
    }
    Ok(clippy_client::spawn(
        &request,
        Duration::from_millis(cli.timeout),
    )?)
}
