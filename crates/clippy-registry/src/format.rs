//! Which view of a turn to deliver.

use std::fmt;
use std::str::FromStr;

use crate::{RegistryError, TurnRecord};

/// A view of a turn's content: the raw bytes as the agent wrote them (escape sequences
/// preserved) or the rendered text.
///
/// ```
/// use clippy_registry::{Format, TurnId, TurnRecord};
///
/// let record = TurnRecord::new(TurnId::new("s", 1)?, 0, &b"\x1b[31mred\x1b[0m"[..], "red");
/// let format: Format = "text".parse()?;
/// assert_eq!(format.select(&record), b"red");
/// assert_eq!(Format::Raw.select(&record), b"\x1b[31mred\x1b[0m");
/// assert_eq!(Format::Raw.to_string(), "raw");
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// The raw bytes, escape sequences and all.
    Raw,
    /// The rendered text view (UTF-8, no escape sequences).
    Text,
}

impl Format {
    /// The bytes of `record` in this format. Borrowed from the record, never copied.
    #[must_use]
    pub fn select(self, record: &TurnRecord) -> &[u8] {
        match self {
            Format::Raw => record.content(),
            Format::Text => record.text().as_bytes(),
        }
    }

    /// The format's name: `raw` or `text`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Raw => "raw",
            Format::Text => "text",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = RegistryError;

    /// `raw` or `text`, in any ASCII case.
    fn from_str(s: &str) -> Result<Format, RegistryError> {
        if s.eq_ignore_ascii_case("raw") {
            Ok(Format::Raw)
        } else if s.eq_ignore_ascii_case("text") {
            Ok(Format::Text)
        } else {
            Err(RegistryError::UnknownFormat {
                input: s.to_owned(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TurnId;

    #[test]
    fn names_round_trip() {
        for f in [Format::Raw, Format::Text] {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert_eq!("TEXT".parse::<Format>(), Ok(Format::Text));
    }

    #[test]
    fn unknown_names_are_refused() {
        let err = "html".parse::<Format>().expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "unknown format \"html\": expected \"raw\" or \"text\""
        );
        assert!("".parse::<Format>().is_err());
    }

    #[test]
    fn select_borrows_the_right_view() {
        let r = TurnRecord::new(
            TurnId::new("s", 1).expect("id"),
            0,
            &b"\x1b[1mB\x1b[0m"[..],
            "B",
        );
        assert_eq!(Format::Raw.select(&r), b"\x1b[1mB\x1b[0m");
        assert_eq!(Format::Text.select(&r), b"B");
        assert!(std::ptr::eq(Format::Raw.select(&r), r.content()));
    }
}
