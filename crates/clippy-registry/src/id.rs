//! Turn IDs: `<session>:<seq>`.

use std::fmt;
use std::str::FromStr;

use crate::RegistryError;

/// The ID of a completed turn: its session and its per-session sequence number, written
/// `<session>:<seq>` (CONTRACT_REGISTRY).
///
/// The seq is assigned by the session's wrapper (its detector numbers turns 1, 2, 3…), so an ID
/// is stable across broker restarts. IDs order by session, then by seq (numerically), so within a
/// session a higher ID is a more recent turn.
///
/// A valid ID has a non-empty session without `:` and a seq of 1 or more; [`TurnId::new`] and
/// parsing enforce it, so every `TurnId` prints as text that parses back to itself.
///
/// ```
/// use clippy_registry::TurnId;
///
/// let id: TurnId = "rdzmi70:12".parse()?;
/// assert_eq!(id.session(), "rdzmi70");
/// assert_eq!(id.seq(), 12);
/// assert_eq!(id.to_string(), "rdzmi70:12");
/// assert!("rdzmi70:0".parse::<TurnId>().is_err());
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TurnId {
    // Field order is the ordering: session, then seq.
    session: String,
    seq: u64,
}

impl TurnId {
    /// A turn ID from its parts.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidSessionId`] when `session` is empty or contains `:`;
    /// [`RegistryError::InvalidTurnId`] when `seq` is 0 (seqs start at 1).
    pub fn new(session: impl Into<String>, seq: u64) -> Result<TurnId, RegistryError> {
        let session = session.into();
        check_session_id(&session)?;
        if seq == 0 {
            return Err(RegistryError::InvalidTurnId {
                input: format!("{session}:{seq}"),
                reason: "seq is 0",
            });
        }
        Ok(TurnId { session, seq })
    }

    /// The session ID.
    #[must_use]
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The per-session sequence number, from 1.
    #[must_use]
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The parts, by value.
    #[must_use]
    pub fn into_parts(self) -> (String, u64) {
        (self.session, self.seq)
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.session, self.seq)
    }
}

impl FromStr for TurnId {
    type Err = RegistryError;

    /// Parses `<session>:<seq>`, splitting at the last `:`. The seq must be decimal digits only
    /// (no sign, no spaces) and at least 1.
    fn from_str(s: &str) -> Result<TurnId, RegistryError> {
        let invalid = |reason| RegistryError::InvalidTurnId {
            input: s.to_owned(),
            reason,
        };
        let (session, seq) = s.rsplit_once(':').ok_or_else(|| invalid("no ':'"))?;
        if session.is_empty() {
            return Err(invalid("session is empty"));
        }
        if session.contains(':') {
            return Err(invalid("session contains ':'"));
        }
        if seq.is_empty() {
            return Err(invalid("seq is empty"));
        }
        // `u64::from_str` accepts a leading '+'; a turn ID does not.
        if !seq.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid("seq is not a decimal number"));
        }
        let seq: u64 = seq.parse().map_err(|_| invalid("seq is too large"))?;
        if seq == 0 {
            return Err(invalid("seq is 0"));
        }
        Ok(TurnId {
            session: session.to_owned(),
            seq,
        })
    }
}

/// Session IDs must be non-empty and free of `:` so that `<session>:<seq>` is unambiguous.
pub(crate) fn check_session_id(session: &str) -> Result<(), RegistryError> {
    let reason = if session.is_empty() {
        "it is empty"
    } else if session.contains(':') {
        "it contains ':', which separates session and seq in turn ids"
    } else {
        return Ok(());
    };
    Err(RegistryError::InvalidSessionId {
        session: session.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str, n: u64) -> TurnId {
        TurnId::new(s, n).expect("valid id")
    }

    #[test]
    fn display_and_parse_round_trip() {
        let t = id("rdzmi70", 42);
        assert_eq!(t.to_string(), "rdzmi70:42");
        assert_eq!("rdzmi70:42".parse::<TurnId>(), Ok(t));
        assert_eq!(
            format!("a:{}", u64::MAX).parse::<TurnId>(),
            Ok(id("a", u64::MAX))
        );
    }

    #[test]
    fn parse_rejects_malformed_ids() {
        for bad in [
            "",
            "abc",
            ":1",
            "abc:",
            "abc:0",
            "abc:00",
            "abc:x",
            "abc:+1",
            "abc:-1",
            "abc: 1",
            "abc:1 ",
            "abc:1.0",
            "a:b:1",
            "abc:18446744073709551616",
        ] {
            assert!(
                matches!(
                    bad.parse::<TurnId>(),
                    Err(RegistryError::InvalidTurnId { .. })
                ),
                "{bad:?} parsed"
            );
        }
    }

    #[test]
    fn parse_error_messages_say_what_is_wrong() {
        let err = "abc:0".parse::<TurnId>().expect_err("seq 0");
        assert_eq!(
            err.to_string(),
            "invalid turn id \"abc:0\": seq is 0 (expected <session>:<seq>, seq from 1)"
        );
    }

    #[test]
    fn new_validates_parts() {
        assert!(matches!(
            TurnId::new("", 1),
            Err(RegistryError::InvalidSessionId { .. })
        ));
        assert!(matches!(
            TurnId::new("a:b", 1),
            Err(RegistryError::InvalidSessionId { .. })
        ));
        assert!(matches!(
            TurnId::new("a", 0),
            Err(RegistryError::InvalidTurnId { .. })
        ));
        assert_eq!(id("a", 3).into_parts(), ("a".to_owned(), 3));
    }

    #[test]
    fn orders_by_session_then_numeric_seq() {
        let mut ids = vec![id("b", 1), id("a", 10), id("a", 9), id("a", 2)];
        ids.sort();
        assert_eq!(ids, vec![id("a", 2), id("a", 9), id("a", 10), id("b", 1)]);
    }
}
