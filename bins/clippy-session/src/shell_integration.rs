//! `--shell-integration`: start bash or zsh with an rc snippet that marks prompts with OSC 133
//! (`A` prompt start, `B` input start, `C` output start, `D;<exit>` command end) and reports the
//! working directory with OSC 7, as shells set up for iTerm2, WezTerm, kitty or VS Code do.
//! The marks give exact turn boundaries, exit codes and cwd, and print nothing visible.

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// The bash snippet: hooks added after the user's own rc file.
const BASH_HOOKS: &str = r#"
__clippy_prompt_command() {
    local status=$?
    printf '\e]133;D;%s\a\e]7;file://%s%s\a' "$status" "${HOSTNAME:-localhost}" "$PWD"
    return $status
}
PROMPT_COMMAND="__clippy_prompt_command${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
PS1='\[\e]133;A\a\]'"$PS1"'\[\e]133;B\a\]'
PS0='\e]133;C\a'"${PS0:-}"
"#;

/// The zsh snippet, using zsh's hook arrays.
const ZSH_HOOKS: &str = r#"
__clippy_precmd() { printf '\e]133;D;%s\a\e]7;file://%s%s\a' "$?" "${HOST:-localhost}" "$PWD"; }
__clippy_preexec() { printf '\e]133;C\a'; }
precmd_functions=(__clippy_precmd $precmd_functions)
preexec_functions=(__clippy_preexec $preexec_functions)
PS1=$'%{\e]133;A\a%}'"$PS1"$'%{\e]133;B\a%}'
"#;

/// The command to run instead, and the environment it needs (zsh: `ZDOTDIR`).
#[derive(Debug)]
pub struct Wrapped {
    pub command: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

/// Which shell a command starts, judged by the program's file name.
fn shell_of(program: &OsStr) -> Option<&'static str> {
    match Path::new(program).file_name()?.to_str()? {
        "bash" => Some("bash"),
        "zsh" => Some("zsh"),
        _ => None,
    }
}

/// The command to run instead of `command` so the shell loads the hooks, or `None` when the
/// command is not an interactive bash or zsh (then nothing changes). Files go into `dir`.
pub fn wrap(command: &[OsString], dir: &Path) -> std::io::Result<Option<Wrapped>> {
    let Some((program, args)) = command.split_first() else {
        return Ok(None);
    };
    // `-c CMD` (alone or in a cluster such as `-lc`) runs a command, not an interactive shell.
    let runs_a_command = args.iter().any(|a| {
        a.to_str()
            .is_some_and(|s| s.starts_with('-') && !s.starts_with("--") && s.contains('c'))
    });
    if runs_a_command {
        return Ok(None);
    }
    match shell_of(program) {
        Some("bash") => {
            // The user's own rc file, unless they asked for none: `--rcfile F` / `--init-file F`
            // name it, `--norc` drops it.
            let mut user_rc = Some("~/.bashrc".to_owned());
            let mut norc = false;
            let mut kept = vec![program.clone()];
            let mut rest = args.iter();
            while let Some(arg) = rest.next() {
                if arg == "--norc" {
                    norc = true;
                    user_rc = None;
                    kept.push(arg.clone());
                } else if arg == "--rcfile" || arg == "--init-file" {
                    user_rc = rest.next().map(|f| shell_quote(f));
                } else {
                    kept.push(arg.clone());
                }
            }
            let rc = dir.join("bashrc");
            if norc {
                // `--rcfile` cannot honour `--norc`: bash (on Debian, say) still reads its
                // system-wide rc. So bash keeps `--norc` and loads the hooks itself on its first
                // prompt, through PROMPT_COMMAND, which the hooks then replace and un-export.
                let text = format!("PROMPT_COMMAND=\n{BASH_HOOKS}export -n PROMPT_COMMAND\n");
                write_private(&rc, &text)?;
                let load = format!(". {}", shell_quote(rc.as_os_str()));
                return Ok(Some(Wrapped {
                    command: kept,
                    env: vec![("PROMPT_COMMAND".into(), load.into())],
                }));
            }
            let mut text = String::from("# clippy shell integration for bash\n");
            if let Some(user_rc) = user_rc {
                text.push_str(&format!("[ -f {user_rc} ] && . {user_rc}\n"));
            }
            text.push_str(BASH_HOOKS);
            write_private(&rc, &text)?;
            kept.push("--rcfile".into());
            kept.push(rc.into_os_string());
            Ok(Some(Wrapped {
                command: kept,
                env: Vec::new(),
            }))
        }
        Some("zsh") => {
            let zdotdir = dir.join("zsh");
            std::fs::create_dir_all(&zdotdir)?;
            let original = std::env::var_os("ZDOTDIR");
            let home = original
                .clone()
                .or_else(|| std::env::var_os("HOME"))
                .unwrap_or_default();
            let mut text = String::from("# clippy shell integration for zsh\n");
            match &original {
                Some(dir) => text.push_str(&format!("ZDOTDIR={}\n", shell_quote(dir))),
                None => text.push_str("unset ZDOTDIR\n"),
            }
            if !args.iter().any(|a| a == "-f" || a == "--no-rcs") {
                text.push_str(&format!(
                    "[ -f {0}/.zshrc ] && . {0}/.zshrc\n",
                    shell_quote(&home)
                ));
            }
            text.push_str(ZSH_HOOKS);
            write_private(&zdotdir.join(".zshrc"), &text)?;
            Ok(Some(Wrapped {
                command: command.to_vec(),
                env: vec![("ZDOTDIR".into(), zdotdir.into_os_string())],
            }))
        }
        _ => Ok(None),
    }
}

fn shell_quote(value: &OsStr) -> String {
    format!("'{}'", value.to_string_lossy().replace('\'', r"'\''"))
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    std::io::Write::write_all(&mut file, text.as_bytes())
}
