//! What to run on the PTY.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// A program to start on a PTY slave with [`PtySlave::spawn`](crate::PtySlave::spawn): program,
/// arguments, working directory and environment overrides.
///
/// The child inherits the parent's environment as it is at spawn time; only the overrides given
/// here are applied, in the order given (so `env("A", "1")` then `env_remove("A")` removes `A`).
/// Nothing else is added: the wrapper stays invisible to the program unless asked.
///
/// The program is looked up on `PATH` (the child's `PATH` if overridden) unless it contains a `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct CommandSpec {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, Option<OsString>)>,
}

impl CommandSpec {
    /// A command running `program` with no arguments, in the parent's working directory.
    pub fn new(program: impl Into<OsString>) -> Self {
        CommandSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs the child in `dir` instead of the parent's working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets (or replaces) one environment variable in the child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    /// Removes one environment variable from the child's environment.
    pub fn env_remove(mut self, key: impl Into<OsString>) -> Self {
        self.env.push((key.into(), None));
        self
    }

    /// The program.
    #[must_use]
    pub fn get_program(&self) -> &OsStr {
        &self.program
    }

    /// The arguments (without the program name).
    pub fn get_args(&self) -> impl ExactSizeIterator<Item = &OsStr> {
        self.args.iter().map(OsString::as_os_str)
    }

    /// The working directory, if one was set.
    #[must_use]
    pub fn get_cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The environment overrides in the order given: `(key, Some(value))` sets, `(key, None)`
    /// removes.
    pub fn get_envs(&self) -> impl ExactSizeIterator<Item = (&OsStr, Option<&OsStr>)> {
        self.env
            .iter()
            .map(|(key, value)| (key.as_os_str(), value.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_records_everything_in_order() {
        let spec = CommandSpec::new("sh")
            .arg("-c")
            .args(["echo", "x"])
            .cwd("/tmp")
            .env("A", "1")
            .env_remove("B");
        assert_eq!(spec.get_program(), "sh");
        assert_eq!(spec.get_args().collect::<Vec<_>>(), ["-c", "echo", "x"]);
        assert_eq!(spec.get_cwd(), Some(Path::new("/tmp")));
        let envs: Vec<_> = spec.get_envs().collect();
        assert_eq!(
            envs,
            [
                (OsStr::new("A"), Some(OsStr::new("1"))),
                (OsStr::new("B"), None)
            ]
        );
    }
}
