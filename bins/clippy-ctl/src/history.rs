//! `history`, `history --forget` and `search`: the broker's history store (CONTRACTS/HISTORY.md),
//! the turns of live and ended sessions that outlive broker restarts. And the `history` line of
//! `status`.

use clippy_client::{Connection, HistoryQuery, SearchQuery, TimeRange};
use clippy_proto::HistoryInfo;

use crate::cli::{HistoryArgs, SearchArgs};
use crate::commands::Report;
use crate::error::CtlError;

/// `history [SESSION] …` and `history --forget SESSION|--all`.
pub fn history(
    args: &HistoryArgs,
    connect: &dyn Fn() -> Result<Connection, CtlError>,
) -> Result<Report, CtlError> {
    if args.forget {
        return forget(args, connect);
    }
    let query = HistoryQuery {
        session: args.session.clone(),
        range: range_of(args.range)?,
        limit: args.limit,
    };
    Ok(Report::History {
        session: args.session.clone(),
        turns: connect()?.history(&query)?,
    })
}

/// `history --forget SESSION` or `history --forget --all` (clap has checked it is one of them).
fn forget(
    args: &HistoryArgs,
    connect: &dyn Fn() -> Result<Connection, CtlError>,
) -> Result<Report, CtlError> {
    let session = if args.all {
        None
    } else {
        Some(args.session.clone().ok_or_else(|| {
            CtlError::Usage("history --forget needs a SESSION, or --all for everything".into())
        })?)
    };
    let turns = connect()?.forget_history(session.clone(), args.all)?;
    Ok(Report::Forgotten { session, turns })
}

/// `search QUERY… [--session S] …`.
pub fn search(
    args: &SearchArgs,
    connect: &dyn Fn() -> Result<Connection, CtlError>,
) -> Result<Report, CtlError> {
    let mut query = query_of(&args.query)?;
    query.session = args.session.clone();
    query.range = range_of(args.range)?;
    query.limit = args.limit;
    Ok(Report::SearchHits {
        hits: connect()?.search(&query)?,
        query: query.words().to_owned(),
    })
}

/// The words of `search`, joined with spaces; some must be there.
fn query_of(words: &[String]) -> Result<SearchQuery, CtlError> {
    Ok(SearchQuery::new(words.join(" "))?)
}

/// `--since` must come before `--until`, or nothing could match.
fn range_of(range: crate::cli::TimeRange) -> Result<TimeRange, CtlError> {
    Ok(TimeRange::new(range.since, range.until)?)
}

/// Why `status` has no history to show: the reason and message of the failed
/// `history_status`, as in an error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReported {
    /// The wire reason (`unknown_type` from a broker older than the history store), or
    /// `clippy-ctl`'s own (`protocol_error`, `broker_unreachable`).
    pub reason: &'static str,
    /// What it said.
    pub message: String,
}

/// `status`'s history: the store's state, or why the broker did not say (an older broker does
/// not know `history_status`). Never an error: `status` reports what it can.
pub fn status(broker: &mut Connection) -> Result<HistoryInfo, NotReported> {
    broker
        .history_status()
        .map_err(|error| not_reported(&CtlError::from(error)))
}

fn not_reported(error: &CtlError) -> NotReported {
    NotReported {
        reason: crate::exit::reason(error),
        message: match error.refusal() {
            Some((_, message, _)) => message.to_owned(),
            None => error.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("clippy-ctl").chain(args.iter().copied()))
    }

    fn history_args(args: &[&str]) -> HistoryArgs {
        match parse(args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .command
        {
            Command::History(args) => args,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn history_takes_a_session_and_filters() {
        let args = history_args(&["history"]);
        assert_eq!(args.session, None);
        assert!(!args.forget && !args.all);
        let args = history_args(&[
            "history",
            "alpha",
            "--since",
            "2026-11-26",
            "--until",
            "1795687200000",
            "--limit",
            "3",
            "--json",
        ]);
        assert_eq!(args.session.as_deref(), Some("alpha"));
        assert_eq!(args.range.since, Some(1_795_651_200_000));
        assert_eq!(args.range.until, Some(1_795_687_200_000));
        assert_eq!(args.limit, Some(3));
    }

    #[test]
    fn forget_needs_a_session_or_all_and_nothing_else() {
        let args = history_args(&["history", "--forget", "alpha"]);
        assert!(args.forget && !args.all);
        assert_eq!(args.session.as_deref(), Some("alpha"));
        let args = history_args(&["history", "alpha", "--forget"]);
        assert!(args.forget);
        let args = history_args(&["history", "--forget", "--all"]);
        assert!(args.forget && args.all && args.session.is_none());
        for bad in [
            &["history", "--forget"][..],
            &["history", "--all"],
            &["history", "alpha", "--all"],
            &["history", "--forget", "--all", "alpha"],
            &["history", "--forget", "alpha", "--since", "1h"],
            &["history", "--forget", "alpha", "--limit", "2"],
            &["history", "--forget", "--all", "--until", "1h"],
            &["history", "--forget-all"],
            &["history", "--limit", "0"],
        ] {
            let err = parse(bad).expect_err(&format!("{bad:?}"));
            assert_eq!(
                crate::exit::exit_code(&CtlError::Usage(err.to_string())),
                crate::exit::Exit::Usage
            );
        }
    }

    #[test]
    fn a_bad_time_is_a_usage_error_naming_the_forms() {
        let err = parse(&["history", "--since", "yesterday"]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("--since <TIME>"), "{text}");
        assert!(text.contains("90s, 15m, 2h"), "{text}");
        assert!(err.use_stderr());
        let err = parse(&["search", "x", "--until", "2026-02-30"]).unwrap_err();
        assert!(err.to_string().contains("no day 30"), "{err}");
    }

    #[test]
    fn search_joins_its_words_and_keeps_hostile_ones() {
        let Command::Search(args) = parse(&["search", "migration", "lock", "--session", "rev"])
            .unwrap()
            .command
        else {
            panic!("not search");
        };
        assert_eq!(query_of(&args.query).unwrap().words(), "migration lock");
        assert_eq!(args.session.as_deref(), Some("rev"));
        for hostile in ["\"", "NEAR(", "a-b", "*", "'", "a OR b", "col:x", "^x"] {
            let Command::Search(args) = parse(&["search", hostile]).unwrap().command else {
                panic!("not search");
            };
            assert_eq!(query_of(&args.query).unwrap().words(), hostile);
        }
        // A word that starts with '-' comes after `--`.
        let Command::Search(args) = parse(&["search", "--", "-x"]).unwrap().command else {
            panic!("not search");
        };
        assert_eq!(query_of(&args.query).unwrap().words(), "-x");
        assert!(parse(&["search"]).is_err());
        assert!(matches!(query_of(&["  ".into()]), Err(CtlError::Usage(_))));
    }

    #[test]
    fn since_must_come_before_until() {
        let range = |since, until| crate::cli::TimeRange { since, until };
        assert!(range_of(range(Some(1), Some(2))).is_ok());
        assert!(range_of(range(Some(1), None)).is_ok());
        assert!(range_of(range(None, Some(1))).is_ok());
        let err = range_of(range(Some(2), Some(2))).unwrap_err();
        assert!(matches!(err, CtlError::Usage(_)));
        assert!(err.to_string().contains("--since"), "{err}");
    }
}
