//! The arguments every front end checks the same way, checked once: each type can only be made
//! from arguments that pass, before anything is asked of the broker (so a refused argument is
//! the caller's mistake whether or not a broker runs).

use crate::error::ArgumentError;

/// One command line for `exec`: not blank, no line break (anything else is typed with `send`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine(String);

impl CommandLine {
    /// The command line `line`.
    ///
    /// # Errors
    ///
    /// [`ArgumentError::NotOneLine`]: blank, or more than one line.
    pub fn new(line: impl Into<String>) -> Result<Self, ArgumentError> {
        let line = line.into();
        if line.trim().is_empty() || line.contains(['\n', '\r']) {
            return Err(ArgumentError::NotOneLine);
        }
        Ok(Self(line))
    }

    /// The command line of `words` joined with spaces (a command line's arguments).
    ///
    /// # Errors
    ///
    /// As [`CommandLine::new`].
    pub fn from_words(words: &[String]) -> Result<Self, ArgumentError> {
        Self::new(words.join(" "))
    }

    /// The line.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Input to type into a session: bytes, and whether Enter follows; never nothing at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    text: Vec<u8>,
    enter: bool,
}

impl Input {
    /// `text`, followed by Enter when `enter`.
    ///
    /// # Errors
    ///
    /// [`ArgumentError::NothingToSend`]: no text and no Enter.
    pub fn new(text: impl Into<Vec<u8>>, enter: bool) -> Result<Self, ArgumentError> {
        let text = text.into();
        if text.is_empty() && !enter {
            return Err(ArgumentError::NothingToSend);
        }
        Ok(Self { text, enter })
    }

    /// How many bytes are typed, the Enter included.
    pub fn typed_len(&self) -> usize {
        self.text.len() + usize::from(self.enter)
    }

    /// Whether Enter follows the text.
    pub fn enter(&self) -> bool {
        self.enter
    }

    /// The text without its Enter (`send`: the broker writes the Enter on its own).
    pub fn into_text(self) -> Vec<u8> {
        self.text
    }

    /// The text with its Enter (`\r`) appended: one write (`expect_send`).
    pub fn into_typed(self) -> Vec<u8> {
        let mut bytes = self.text;
        if self.enter {
            bytes.push(b'\r');
        }
        bytes
    }
}

/// A range of times, Unix milliseconds, either end open; never empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeRange {
    since: Option<u64>,
    until: Option<u64>,
}

impl TimeRange {
    /// From `since` (inclusive) to `until` (exclusive).
    ///
    /// # Errors
    ///
    /// [`ArgumentError::EmptyRange`]: `since` is not before `until`, so nothing could match.
    pub fn new(since: Option<u64>, until: Option<u64>) -> Result<Self, ArgumentError> {
        match (since, until) {
            (Some(since), Some(until)) if since >= until => {
                Err(ArgumentError::EmptyRange { since, until })
            }
            _ => Ok(Self { since, until }),
        }
    }

    /// Its start.
    pub fn since(&self) -> Option<u64> {
        self.since
    }

    /// Its end.
    pub fn until(&self) -> Option<u64> {
        self.until
    }
}

/// What `history` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryQuery {
    /// One session's turns (id, prefix or name, live or ended), else every session's.
    pub session: Option<String>,
    /// When the turns completed.
    pub range: TimeRange,
    /// At most this many (the broker's default otherwise).
    pub limit: Option<u32>,
}

/// What `search` asks for: words to find, never none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    words: String,
    /// One session's turns, else every session's.
    pub session: Option<String>,
    /// When the turns completed.
    pub range: TimeRange,
    /// At most this many hits (the broker's default otherwise).
    pub limit: Option<u32>,
}

impl SearchQuery {
    /// A search for `words` (the store quotes them: any text is safe) in every session, at
    /// any time.
    ///
    /// # Errors
    ///
    /// [`ArgumentError::EmptyQuery`]: blank.
    pub fn new(words: impl Into<String>) -> Result<Self, ArgumentError> {
        let words = words.into();
        if words.trim().is_empty() {
            return Err(ArgumentError::EmptyQuery);
        }
        Ok(Self {
            words,
            session: None,
            range: TimeRange::default(),
            limit: None,
        })
    }

    /// The words, as sent.
    pub fn words(&self) -> &str {
        &self.words
    }
}

/// A terminal's size: columns and rows, each at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSize {
    cols: u16,
    rows: u16,
}

impl TermSize {
    /// The size of a session started with no terminal when none is asked for (`clippy-ctl
    /// spawn`, MCP's `spawn_session`, the dashboard's `n`): 120 columns by 40 rows.
    pub const DETACHED: Self = Self {
        cols: 120,
        rows: 40,
    };

    /// `cols` columns by `rows` rows.
    ///
    /// # Errors
    ///
    /// [`ArgumentError::BadSize`]: either is 0.
    pub fn new(cols: u16, rows: u16) -> Result<Self, ArgumentError> {
        if cols == 0 || rows == 0 {
            return Err(ArgumentError::BadSize { cols, rows });
        }
        Ok(Self { cols, rows })
    }

    /// The size as `clippy-session --size` takes it, `COLSxROWS`.
    pub fn spec(&self) -> String {
        format!("{}x{}", self.cols, self.rows)
    }
}

/// The words of a session's command given as one line, split as a POSIX shell splits words
/// (quotes and backslashes; no expansion, no operators): `claude --model "a b"` is three words.
///
/// # Errors
///
/// [`ArgumentError::NoCommand`]: no words; [`ArgumentError::BadCommandLine`]: an unclosed quote
/// or a trailing backslash.
pub fn command_words(line: &str) -> Result<Vec<String>, ArgumentError> {
    let words = shlex::split(line).ok_or_else(|| ArgumentError::BadCommandLine(line.to_owned()))?;
    if words.is_empty() {
        return Err(ArgumentError::NoCommand);
    }
    Ok(words)
}

/// A variable for a session's environment, checked: a name that is not empty and has no `=`
/// or NUL, a value without NUL.
///
/// # Errors
///
/// [`ArgumentError::BadVariable`].
pub fn variable(name: &str, value: &str) -> Result<(String, String), ArgumentError> {
    if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
        return Err(ArgumentError::BadVariable(name.to_owned()));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// Bytes as a JSON field, as every front end's JSON carries them: `(name, text)` when they are
/// UTF-8, else `(name_b64, standard base64)`.
pub fn bytes_field(name: &str, bytes: &[u8]) -> (String, String) {
    use base64::Engine as _;
    match std::str::from_utf8(bytes) {
        Ok(text) => (name.to_owned(), text.to_owned()),
        Err(_) => (
            format!("{name}_b64"),
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn exec_takes_one_line() {
        assert_eq!(
            CommandLine::from_words(&words(&["ls", "-la"]))
                .unwrap()
                .as_str(),
            "ls -la"
        );
        assert_eq!(CommandLine::new("echo é").unwrap().as_str(), "echo é");
        for bad in ["", "  ", "a\nb", "a\r", "\t"] {
            assert_eq!(
                CommandLine::new(bad),
                Err(ArgumentError::NotOneLine),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn enter_is_appended_for_one_write_and_left_to_the_broker_otherwise() {
        let input = Input::new("y", true).unwrap();
        assert_eq!(input.typed_len(), 2);
        assert_eq!(input.clone().into_typed(), b"y\r");
        assert_eq!(input.into_text(), b"y");
        let bare = Input::new("", true).unwrap();
        assert_eq!(bare.typed_len(), 1);
        assert_eq!(bare.into_typed(), b"\r");
        assert_eq!(Input::new("", false), Err(ArgumentError::NothingToSend));
        let text = Input::new(*b"\x03", false).unwrap();
        assert!(!text.enter());
        assert_eq!(text.into_typed(), [3]);
    }

    #[test]
    fn a_range_must_not_be_empty() {
        assert!(TimeRange::new(Some(1), Some(2)).is_ok());
        assert!(TimeRange::new(Some(1), None).is_ok());
        assert!(TimeRange::new(None, Some(1)).is_ok());
        assert_eq!(
            TimeRange::new(Some(2), Some(2)),
            Err(ArgumentError::EmptyRange { since: 2, until: 2 })
        );
        let range = TimeRange::new(Some(5), None).unwrap();
        assert_eq!((range.since(), range.until()), (Some(5), None));
    }

    #[test]
    fn a_search_needs_words_and_keeps_any() {
        assert_eq!(SearchQuery::new(" "), Err(ArgumentError::EmptyQuery));
        for hostile in ["\"", "NEAR(", "a OR b", "-x"] {
            assert_eq!(SearchQuery::new(hostile).unwrap().words(), hostile);
        }
    }

    #[test]
    fn a_size_has_columns_and_rows() {
        assert_eq!(TermSize::new(80, 24).unwrap().spec(), "80x24");
        assert_eq!(
            TermSize::new(0, 24),
            Err(ArgumentError::BadSize { cols: 0, rows: 24 })
        );
        assert!(TermSize::new(80, 0).is_err());
    }

    #[test]
    fn a_command_line_is_split_into_words_as_a_shell_would() {
        assert_eq!(
            command_words(r#"claude --model "a b" 'c d' e\ f"#).unwrap(),
            ["claude", "--model", "a b", "c d", "e f"]
        );
        assert_eq!(command_words("  "), Err(ArgumentError::NoCommand));
        assert!(matches!(
            command_words("echo \"open"),
            Err(ArgumentError::BadCommandLine(_))
        ));
    }

    #[test]
    fn a_variable_needs_a_plain_name() {
        assert_eq!(variable("A", "b=c").unwrap(), ("A".into(), "b=c".into()));
        for (name, value) in [("", "x"), ("A=B", "x"), ("A\0", "x"), ("A", "x\0")] {
            assert!(variable(name, value).is_err(), "{name:?}={value:?}");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_go_as_base64() {
        assert_eq!(
            bytes_field("data", &[0xff, b'a']),
            ("data_b64".into(), "/2E=".into())
        );
        assert_eq!(bytes_field("data", b"ok"), ("data".into(), "ok".into()));
    }
}
