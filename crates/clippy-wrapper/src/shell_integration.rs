//! `--shell-integration`: start bash or zsh with an rc snippet that marks prompts with OSC 133
//! (`A` prompt start, `B` input start, `C` output start, `D;<exit>` command end) and reports the
//! working directory with OSC 7, as shells set up for iTerm2, WezTerm, kitty or VS Code do.
//! The marks give exact turn boundaries, exit codes and cwd, and print nothing visible.
//!
//! [`plan`] decides, from the command and the environment, what to run and which files to
//! write (CONTRACTS/PTY.md, "Shell integration"); the wrapper writes them (private to the
//! user) in the session's folder and starts the command.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

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

/// What to do instead of running the command as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The command to run instead.
    pub command: Vec<OsString>,
    /// The environment it needs (zsh: `ZDOTDIR`; bash with `--norc`: `PROMPT_COMMAND`).
    pub env: Vec<(OsString, OsString)>,
    /// Folders to create first.
    pub dirs: Vec<PathBuf>,
    /// Files to write (private to the user), each with its text.
    pub files: Vec<(PathBuf, String)>,
}

/// Which shell a command starts, judged by the program's file name.
fn shell_of(program: &OsStr) -> Option<&'static str> {
    match Path::new(program).file_name()?.to_str()? {
        "bash" => Some("bash"),
        "zsh" => Some("zsh"),
        _ => None,
    }
}

/// What to run instead of `command` so the shell loads the hooks, or `None` when the command
/// is not an interactive bash or zsh (then nothing changes). Its files go into `dir`; `env`
/// reads the wrapper's environment (`ZDOTDIR`, `HOME`).
///
/// ```
/// use std::ffi::OsString;
/// use std::path::Path;
///
/// let dir = Path::new("/run/user/1000/clippy/sessions/k3f9a2");
/// let plan = clippy_wrapper::shell_integration::plan(&["bash".into()], dir, &|_| None)
///     .expect("an interactive bash");
/// assert_eq!(plan.command, [OsString::from("bash"), "--rcfile".into(), dir.join("bashrc").into()]);
/// assert!(plan.files[0].1.contains("[ -f ~/.bashrc ] && . ~/.bashrc"));
/// assert!(plan.files[0].1.contains("133;D"));
/// // A command, not an interactive shell: left alone.
/// let command: [OsString; 3] = ["bash".into(), "-lc".into(), "ls".into()];
/// assert_eq!(clippy_wrapper::shell_integration::plan(&command, dir, &|_| None), None);
/// ```
pub fn plan(
    command: &[OsString],
    dir: &Path,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Option<Plan> {
    let (program, args) = command.split_first()?;
    // `-c CMD` (alone or in a cluster such as `-lc`) runs a command, not an interactive shell.
    let runs_a_command = args.iter().any(|a| {
        a.to_str()
            .is_some_and(|s| s.starts_with('-') && !s.starts_with("--") && s.contains('c'))
    });
    if runs_a_command {
        return None;
    }
    match shell_of(program)? {
        "bash" => {
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
                let load = format!(". {}", shell_quote(rc.as_os_str()));
                return Some(Plan {
                    command: kept,
                    env: vec![("PROMPT_COMMAND".into(), load.into())],
                    dirs: Vec::new(),
                    files: vec![(rc, text)],
                });
            }
            let mut text = String::from("# clippy shell integration for bash\n");
            if let Some(user_rc) = user_rc {
                text.push_str(&format!("[ -f {user_rc} ] && . {user_rc}\n"));
            }
            text.push_str(BASH_HOOKS);
            kept.push("--rcfile".into());
            kept.push(rc.clone().into_os_string());
            Some(Plan {
                command: kept,
                env: Vec::new(),
                dirs: Vec::new(),
                files: vec![(rc, text)],
            })
        }
        "zsh" => {
            let zdotdir = dir.join("zsh");
            let original = env("ZDOTDIR");
            let home = original.clone().or_else(|| env("HOME")).unwrap_or_default();
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
            Some(Plan {
                command: command.to_vec(),
                env: vec![("ZDOTDIR".into(), zdotdir.clone().into_os_string())],
                files: vec![(zdotdir.join(".zshrc"), text)],
                dirs: vec![zdotdir],
            })
        }
        _ => None,
    }
}

fn shell_quote(value: &OsStr) -> String {
    format!("'{}'", value.to_string_lossy().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn no_env(_: &str) -> Option<OsString> {
        None
    }

    #[test]
    fn bash_loads_the_users_rc_file_then_the_hooks() {
        let dir = Path::new("/s");
        let wrapped = plan(&command(&["/bin/bash", "-l"]), dir, &no_env).expect("wrapped");
        assert_eq!(
            wrapped.command,
            command(&["/bin/bash", "-l", "--rcfile", "/s/bashrc"])
        );
        let (path, text) = &wrapped.files[0];
        assert_eq!(path, Path::new("/s/bashrc"));
        let user = text.find(". ~/.bashrc").expect("the user's rc");
        assert!(user < text.find("__clippy_prompt_command()").expect("the hooks"));
        // A file of the user's own, quoted for the shell.
        let wrapped =
            plan(&command(&["bash", "--rcfile", "my rc's"]), dir, &no_env).expect("wrapped");
        assert_eq!(wrapped.command, command(&["bash", "--rcfile", "/s/bashrc"]));
        assert!(
            wrapped.files[0]
                .1
                .contains(r"[ -f 'my rc'\''s' ] && . 'my rc'\''s'")
        );
    }

    #[test]
    fn bash_without_rc_files_loads_the_hooks_at_its_first_prompt() {
        let wrapped =
            plan(&command(&["bash", "--norc"]), Path::new("/s"), &no_env).expect("wrapped");
        assert_eq!(wrapped.command, command(&["bash", "--norc"]));
        assert_eq!(
            wrapped.env,
            [(
                OsString::from("PROMPT_COMMAND"),
                OsString::from(". '/s/bashrc'")
            )]
        );
        let text = &wrapped.files[0].1;
        assert!(text.starts_with("PROMPT_COMMAND=\n"), "{text}");
        assert!(text.ends_with("export -n PROMPT_COMMAND\n"), "{text}");
        assert!(!text.contains(".bashrc"));
    }

    #[test]
    fn zsh_gets_a_zdotdir_that_loads_the_users_zshrc() {
        let env = |name: &str| (name == "HOME").then(|| OsString::from("/home/u"));
        let wrapped = plan(&command(&["zsh"]), Path::new("/s"), &env).expect("wrapped");
        assert_eq!(wrapped.command, command(&["zsh"]));
        assert_eq!(
            wrapped.env,
            [(OsString::from("ZDOTDIR"), OsString::from("/s/zsh"))]
        );
        assert_eq!(wrapped.dirs, [PathBuf::from("/s/zsh")]);
        let (path, text) = &wrapped.files[0];
        assert_eq!(path, Path::new("/s/zsh/.zshrc"));
        assert!(text.contains("unset ZDOTDIR\n[ -f '/home/u'/.zshrc ] && . '/home/u'/.zshrc"));
        // The user's own ZDOTDIR is put back; `-f` reads no rc file.
        let env = |name: &str| (name == "ZDOTDIR").then(|| OsString::from("/z"));
        let wrapped = plan(&command(&["zsh", "-f"]), Path::new("/s"), &env).expect("wrapped");
        assert!(wrapped.files[0].1.contains("ZDOTDIR='/z'\n"));
        assert!(!wrapped.files[0].1.contains(".zshrc"));
    }

    #[test]
    fn commands_and_other_programs_are_left_alone() {
        for args in [
            &["bash", "-c", "ls"][..],
            &["bash", "-lc", "ls"],
            &["zsh", "-c", "ls"],
            &["fish"],
            &["python3"],
            &[],
        ] {
            assert_eq!(
                plan(&command(args), Path::new("/s"), &no_env),
                None,
                "{args:?}"
            );
        }
        // A long option with a `c` in it is no `-c`.
        assert!(plan(&command(&["bash", "--noediting"]), Path::new("/s"), &no_env).is_some());
    }
}
