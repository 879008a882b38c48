//! Which view of a turn to deliver.

use std::fmt;
use std::str::FromStr;

use crate::{RegistryError, TurnRecord};

/// A view of a turn's content: the raw bytes as the agent wrote them (escape sequences
/// preserved), the rendered text, or the agent's own final message as its hooks reported it.
///
/// Not every turn has a message (an agent without hooks, or with them off), so there are two
/// ways to ask: [`Format::view`] is exact and says `None` when the turn has no such view, and
/// [`Format::select`] always gives bytes, falling back from a missing message to the text view —
/// what relaying wants, so that a paste or a route never fails because an agent lacks hooks.
///
/// ```
/// use clippy_registry::{Format, TurnId, TurnRecord};
///
/// let record = TurnRecord::new(TurnId::new("s", 1)?, 0, &b"\x1b[31mred\x1b[0m"[..], "red");
/// let format: Format = "text".parse()?;
/// assert_eq!(format.select(&record), b"red");
/// assert_eq!(Format::Raw.select(&record), b"\x1b[31mred\x1b[0m");
/// assert_eq!(Format::Raw.to_string(), "raw");
///
/// // No message from the agent's hooks: `view` says so, `select` falls back to the text.
/// assert_eq!(Format::Message.view(&record), None);
/// assert_eq!(Format::Message.select(&record), b"red");
/// let record = record.with_message("Red.");
/// assert_eq!(Format::Message.view(&record), Some(&b"Red."[..]));
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// The raw bytes, escape sequences and all.
    Raw,
    /// The rendered text view (UTF-8, no escape sequences).
    Text,
    /// The agent's own final message (UTF-8 markdown), when its hooks reported one.
    Message,
}

impl Format {
    /// The bytes of `record` in this format, or `None` when the record has no such view (a
    /// message asked of a turn without one). Borrowed from the record, never copied.
    #[must_use]
    pub fn view(self, record: &TurnRecord) -> Option<&[u8]> {
        match self {
            Format::Raw => Some(record.content()),
            Format::Text => Some(record.text().as_bytes()),
            Format::Message => record.message().map(str::as_bytes),
        }
    }

    /// The bytes of `record` in this format, a missing message replaced by the text view (see
    /// the type's docs). Borrowed from the record, never copied.
    #[must_use]
    pub fn select(self, record: &TurnRecord) -> &[u8] {
        self.view(record)
            .unwrap_or_else(|| record.text().as_bytes())
    }

    /// The format [`select`](Self::select) actually gives for `record`: this one, or
    /// [`Format::Text`] for a message the record does not have.
    #[must_use]
    pub fn effective(self, record: &TurnRecord) -> Format {
        match self {
            Format::Message if record.message().is_none() => Format::Text,
            other => other,
        }
    }

    /// The format's name: `raw`, `text` or `message`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Raw => "raw",
            Format::Text => "text",
            Format::Message => "message",
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

    /// `raw`, `text` or `message`, in any ASCII case.
    fn from_str(s: &str) -> Result<Format, RegistryError> {
        [Format::Raw, Format::Text, Format::Message]
            .into_iter()
            .find(|f| s.eq_ignore_ascii_case(f.as_str()))
            .ok_or_else(|| RegistryError::UnknownFormat {
                input: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TurnId;

    #[test]
    fn names_round_trip() {
        for f in [Format::Raw, Format::Text, Format::Message] {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert_eq!("TEXT".parse::<Format>(), Ok(Format::Text));
        assert_eq!("Message".parse::<Format>(), Ok(Format::Message));
    }

    #[test]
    fn unknown_names_are_refused() {
        let err = "html".parse::<Format>().expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "unknown format \"html\": expected \"raw\", \"text\" or \"message\""
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

    #[test]
    fn a_message_is_its_own_view_and_falls_back_to_the_text_in_select() {
        let bare = TurnRecord::new(TurnId::new("s", 1).expect("id"), 0, &b"raw"[..], "text");
        assert_eq!(Format::Message.view(&bare), None);
        assert_eq!(Format::Message.select(&bare), b"text");
        assert_eq!(Format::Message.effective(&bare), Format::Text);
        assert_eq!(Format::Raw.effective(&bare), Format::Raw);

        let told = bare.with_message("# Done\n");
        assert_eq!(Format::Message.view(&told), Some(&b"# Done\n"[..]));
        assert_eq!(Format::Message.select(&told), b"# Done\n");
        assert_eq!(Format::Message.effective(&told), Format::Message);
        assert_eq!(Format::Text.view(&told), Some(&b"text"[..]));
        let message = told.message().expect("message");
        assert!(std::ptr::eq(
            Format::Message.select(&told),
            message.as_bytes()
        ));
    }
}
