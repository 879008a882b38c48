//! The history store (`clippy-history`) on a generated corpus of 100,000 agent turns: how fast
//! turns go in, how fast full-text search answers, how big the store gets, and what forgetting a
//! session and pruning cost.
//!
//! Corpus: [`SESSIONS`] sessions of [`TURNS_PER_SESSION`] turns, made by a fixed-seed generator
//! (no network, no clock): each turn's text view is English-like prose — sentences of common
//! English words and words of a 40,000-word generated vocabulary drawn with a Zipf-like skew,
//! some bullet lists, paths and commands — of a length drawn log-uniformly from 200 B to 8 KiB;
//! its raw content is the same text with `\r\n` line ends and SGR colours on some words, as an
//! agent's terminal output. Each turn also stores a `turn.completed` event (JSON, ~200 B), as
//! the broker will.
//!
//! Measured, in one run, on a store in the target folder (a disk, as `~/.local/state` is):
//! - **insert**: the corpus through [`Store::apply`] in batches of [`BATCH`] turns and their
//!   events (one transaction each: how the broker's writer thread batches what queued up);
//!   then [`SINGLES`] more turns one transaction each (a broker that is never behind). Turns/s
//!   and MB/s of turn bytes (content + text view); the baseline is appending the same bytes to
//!   a plain file (`write_all`, no sync) in the same run.
//! - **size**: the database's pages after a checkpoint, per 1,000 turns, and over the turn
//!   bytes stored.
//! - **search**: [`QUERIES`] queries (common, medium and rare words, 2–3 words, a word found
//!   nowhere, hostile syntax, session and time filters), each run once untimed and then
//!   [`SEARCH_RUNS`] times, limit 20 with snippets; p50/p99 over all runs and per query. The
//!   baseline is a linear scan for the query's first word (`memchr::memmem` over every text view
//!   held in memory) in the same run, for the single-word queries.
//! - **reads**: `history` (newest 50, and one session's) and `get_turn` of random turns.
//! - **forget**: one session's 500 turns (with the index rewrite it implies); **prune**: down
//!   to 90 % of the size (likewise).
//!
//! It prints a markdown report and writes it to `target/history-bench.md`; about 2 minutes. It
//! ignores its arguments and asserts no timing.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clippy_benches::wrapper::{Error, percentile};
use clippy_benches::{Rng, machine, target_dir, write_report};
use clippy_history::{
    EventRecord, HistoryQuery, QuerySyntax, Record, SearchQuery, SessionRecord, Store, TurnRecord,
};

/// Sessions in the corpus.
const SESSIONS: usize = 200;
/// Turns per session.
const TURNS_PER_SESSION: usize = 500;
/// Turns per transaction while loading the corpus.
const BATCH: usize = 64;
/// Turns inserted one per transaction after the corpus.
const SINGLES: usize = 2_000;
/// Shortest and longest text view.
const TEXT_BYTES: (usize, usize) = (200, 8 * 1024);
/// Generated vocabulary size.
const VOCABULARY: usize = 40_000;
/// Timed runs per query.
const SEARCH_RUNS: usize = 25;
/// Timed runs of each read.
const READ_RUNS: usize = 200;
/// First turn's completion time (Unix ms) and the gap between turns.
const T0: u64 = 1_700_000_000_000;
const GAP_MS: u64 = 30_000;

fn main() {
    if let Err(e) = run() {
        eprintln!("history bench: {e}");
        std::process::exit(1);
    }
}

/// A generated turn.
struct Turn {
    id: String,
    session: usize,
    seq: u64,
    ended_at: u64,
    text: String,
    content: Vec<u8>,
    event: String,
}

/// A query and its timed runs.
struct Query {
    label: String,
    query: SearchQuery,
    hits: usize,
    runs: Vec<Duration>,
    /// The linear scan's runs for the query's word, for single-word queries.
    scan: Vec<Duration>,
    scan_word: Option<String>,
}

/// The vocabulary: common English words, then generated ones by rank (rank 0 most frequent).
struct Words {
    common: Vec<&'static str>,
    vocab: Vec<String>,
}

const COMMON: &[&str] = &[
    "the", "a", "of", "to", "and", "in", "is", "it", "that", "for", "on", "with", "as", "this",
    "be", "are", "was", "by", "not", "or", "from", "at", "an", "but", "we", "can", "if", "will",
    "which", "all", "so", "one", "now", "then", "there", "when", "what", "more", "here", "out",
    "up", "into", "only", "also", "should", "because", "file", "test", "build", "error", "change",
    "function", "module", "value", "return", "call", "line", "type", "check", "run", "fix",
    "update", "add", "remove", "config", "path", "review", "commit", "branch", "merge",
];

const SYLLABLES: &[&str] = &[
    "ka", "ro", "mi", "ten", "sol", "ver", "dan", "pre", "lin", "gor", "tu", "mas", "el", "ix",
    "quor", "fen", "bal", "tri", "nok", "sta", "lum", "per", "vad", "cho", "rel", "sig", "ten",
    "ber", "al", "on", "ul", "ar", "es", "im", "ot", "um",
];

impl Words {
    fn new() -> Words {
        let mut rng = Rng(0x5deece66d_u64 | 1);
        let mut seen = std::collections::HashSet::new();
        let mut vocab = Vec::with_capacity(VOCABULARY);
        while vocab.len() < VOCABULARY {
            let n = 2 + rng.below(3);
            let word: String = (0..n).map(|_| rng.pick(SYLLABLES)).collect();
            if seen.insert(word.clone()) {
                vocab.push(word);
            }
        }
        Words {
            common: COMMON.to_vec(),
            vocab,
        }
    }

    /// A word: a common one 45 % of the time, else a vocabulary word of a log-uniform rank
    /// (Zipf-like: rank r about as likely as all of r..2r).
    fn pick<'a>(&'a self, rng: &mut Rng) -> &'a str {
        if rng.below(100) < 45 {
            return rng.pick(&self.common);
        }
        let u = rng.below(1_000_000) as f64 / 1_000_000.0;
        let rank = ((VOCABULARY as f64).powf(u) as usize).saturating_sub(1);
        &self.vocab[rank.min(VOCABULARY - 1)]
    }
}

/// A text view of about `len` bytes.
fn text(words: &Words, rng: &mut Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 64);
    while out.len() < len {
        match rng.below(20) {
            0 => {
                let _ = write!(
                    out,
                    "src/{}/{}.rs:{}: ",
                    words.pick(rng),
                    words.pick(rng),
                    rng.below(900) + 1
                );
            }
            1 => {
                let _ = writeln!(
                    out,
                    "$ cargo test -p {} {}",
                    words.pick(rng),
                    words.pick(rng)
                );
            }
            2..=4 => out.push_str("- "),
            _ => {}
        }
        let n = 6 + rng.below(15);
        for i in 0..n {
            let word = words.pick(rng);
            if i == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    out.extend(first.to_uppercase());
                    out.push_str(chars.as_str());
                }
            } else {
                out.push(' ');
                out.push_str(word);
            }
        }
        out.push_str(if rng.below(8) == 0 { ":\n" } else { ".\n" });
    }
    out
}

/// The raw content for `text`: `\r\n` line ends, some words in colour.
fn content(text: &str, rng: &mut Rng) -> Vec<u8> {
    const SGR: &[&str] = &[
        "\x1b[1m",
        "\x1b[32m",
        "\x1b[38;5;208m",
        "\x1b[2m",
        "\x1b[34m",
    ];
    let mut out = Vec::with_capacity(text.len() + text.len() / 8);
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        let coloured = rng.below(12) == 0;
        if coloured {
            out.extend_from_slice(rng.pick(SGR).as_bytes());
        }
        for &b in word.as_bytes() {
            if b == b'\n' {
                out.push(b'\r');
            }
            out.push(b);
        }
        if coloured {
            out.extend_from_slice(b"\x1b[0m");
        }
    }
    out
}

fn corpus(words: &Words) -> Vec<Turn> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let total = SESSIONS * TURNS_PER_SESSION;
    let (lo, hi) = (TEXT_BYTES.0 as f64, TEXT_BYTES.1 as f64);
    (0..total)
        .map(|i| {
            // Sessions interleave, as concurrent agents do.
            let session = i % SESSIONS;
            let seq = (i / SESSIONS + 1) as u64;
            let u = rng.below(1_000_000) as f64 / 1_000_000.0;
            let len = (lo * (hi / lo).powf(u)) as usize;
            let text = text(words, &mut rng, len);
            let content = content(&text, &mut rng);
            let id = format!("{}:{seq}", key(session));
            let ended_at = T0 + i as u64 * GAP_MS;
            let event = format!(
                "{{\"id\":{},\"ts\":\"2023-11-14T22:13:20.000Z\",\"type\":\"turn.completed\",\
                 \"session\":\"{}\",\"name\":\"{}\",\"turn_id\":\"{id}\",\"byte_length\":{}}}",
                i + 1,
                key(session),
                name(session),
                content.len()
            );
            Turn {
                id,
                session,
                seq,
                ended_at,
                text,
                content,
                event,
            }
        })
        .collect()
}

fn key(session: usize) -> String {
    format!("s{:06x}", 0x10_0000 + session)
}

fn name(session: usize) -> &'static str {
    [
        "reviewer", "dev", "tests", "docs", "planner", "ops", "research", "triage",
    ][session % 8]
}

fn turn_record<'a>(t: &'a Turn, key: &'a str) -> TurnRecord<'a> {
    TurnRecord {
        turn_id: &t.id,
        session: key,
        seq: t.seq,
        started_at: Some(t.ended_at - GAP_MS / 2),
        ended_at: t.ended_at,
        input: None,
        content: &t.content,
        text: &t.text,
        message: None,
        interrupted: false,
        truncated: false,
        exit_code: None,
        cwd: None,
        spool_span: None,
    }
}

fn event_record<'a>(t: &'a Turn, key: &'a str, seq: u64) -> EventRecord<'a> {
    EventRecord {
        seq,
        time: t.ended_at,
        kind: "turn.completed",
        session: Some(key),
        payload: &t.event,
    }
}

/// The store's folder, removed when dropped.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Measured figures.
#[derive(Default)]
struct Figures {
    turns: usize,
    turn_bytes: u64,
    text_bytes: u64,
    generate: Duration,
    insert: Duration,
    singles: Duration,
    file_append: Duration,
    db_bytes: u64,
    file_bytes: u64,
    history_newest: Vec<Duration>,
    history_session: Vec<Duration>,
    get_turn: Vec<Duration>,
    forget: Duration,
    forgotten: u64,
    prune: Duration,
    pruned: u64,
    bytes_after_prune: u64,
}

fn run() -> Result<(), Error> {
    let started = Instant::now();
    let dir = Dir(target_dir().join(format!("history-bench-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    let mut figures = Figures::default();

    eprintln!(
        "history bench: generating {} turns",
        SESSIONS * TURNS_PER_SESSION
    );
    let t = Instant::now();
    let words = Words::new();
    let turns = corpus(&words);
    figures.generate = t.elapsed();
    figures.turns = turns.len();
    figures.turn_bytes = turns
        .iter()
        .map(|t| (t.content.len() + t.text.len()) as u64)
        .sum();
    figures.text_bytes = turns.iter().map(|t| t.text.len() as u64).sum();
    let keys: Vec<String> = (0..SESSIONS).map(key).collect();

    // Baseline: the same bytes appended to a plain file.
    std::fs::create_dir_all(&dir.0)?;
    let t = Instant::now();
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(dir.0.join("append"))?);
        for turn in &turns {
            file.write_all(&turn.content)?;
            file.write_all(turn.text.as_bytes())?;
            file.write_all(turn.event.as_bytes())?;
        }
        file.flush()?;
    }
    figures.file_append = t.elapsed();
    std::fs::remove_file(dir.0.join("append"))?;

    let store_dir = dir.0.join("store");
    let mut store = Store::open(&store_dir)?;
    let commands: Vec<Vec<String>> = (0..SESSIONS)
        .map(|s| vec![["claude", "codex", "gemini", "bash"][s % 4].to_owned()])
        .collect();
    let sessions: Vec<Record<'_>> = (0..SESSIONS)
        .map(|s| {
            Record::Session(SessionRecord {
                key: &keys[s],
                name: Some(name(s)),
                command: &commands[s],
                cwd: Some("/home/u/src/app"),
                started_at: T0,
            })
        })
        .collect();
    store.apply(&sessions)?;

    eprintln!("history bench: inserting in batches of {BATCH}");
    let t = Instant::now();
    let mut batch = Vec::with_capacity(2 * BATCH);
    for (chunk_index, chunk) in turns.chunks(BATCH).enumerate() {
        batch.clear();
        for (i, turn) in chunk.iter().enumerate() {
            let seq = (chunk_index * BATCH + i + 1) as u64;
            batch.push(Record::Turn(turn_record(turn, &keys[turn.session])));
            batch.push(Record::Event(event_record(turn, &keys[turn.session], seq)));
        }
        store.apply(&batch)?;
        if (chunk_index + 1) % 400 == 0 {
            eprintln!(
                "history bench: {} turns in {:.0} s",
                (chunk_index + 1) * BATCH,
                t.elapsed().as_secs_f64()
            );
        }
    }
    figures.insert = t.elapsed();

    store.checkpoint()?;
    let stats = store.stats()?;
    figures.db_bytes = stats.bytes;
    figures.file_bytes = files_size(&store_dir);

    // One transaction per turn: the corpus's first turns again under new ids.
    let single_ids: Vec<String> = (0..SINGLES).map(|i| format!("single:{}", i + 1)).collect();
    let t = Instant::now();
    for (i, id) in single_ids.iter().enumerate() {
        let mut record = turn_record(&turns[i], "single");
        record.turn_id = id;
        record.seq = i as u64 + 1;
        store.record_turn(&record)?;
    }
    figures.singles = t.elapsed();

    eprintln!("history bench: searching");
    let texts: Vec<&[u8]> = turns.iter().map(|t| t.text.as_bytes()).collect();
    let mut queries = queries(&words, &keys);
    for q in &mut queries {
        q.hits = store.search(&q.query)?.len();
    }
    for _ in 0..SEARCH_RUNS {
        for q in &mut queries {
            let t = Instant::now();
            let hits = store.search(&q.query)?;
            q.runs.push(t.elapsed());
            std::hint::black_box(hits);
            if let Some(word) = &q.scan_word {
                let finder = memchr::memmem::Finder::new(word.as_bytes());
                let t = Instant::now();
                let found = texts.iter().filter(|t| finder.find(t).is_some()).count();
                q.scan.push(t.elapsed());
                std::hint::black_box(found);
            }
        }
    }

    eprintln!("history bench: reads");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..READ_RUNS {
        let t = Instant::now();
        std::hint::black_box(store.history(&HistoryQuery::default())?);
        figures.history_newest.push(t.elapsed());
        let session = rng.below(SESSIONS);
        let t = Instant::now();
        std::hint::black_box(store.history(&HistoryQuery {
            session: Some(keys[session].clone()),
            ..HistoryQuery::default()
        })?);
        figures.history_session.push(t.elapsed());
        let turn = &turns[rng.below(turns.len())];
        let t = Instant::now();
        let got = store.get_turn(&turn.id)?;
        figures.get_turn.push(t.elapsed());
        if got.is_none_or(|g| g.content != turn.content) {
            return Err(format!("get_turn({}) did not give the turn back", turn.id).into());
        }
    }

    eprintln!("history bench: forget and prune");
    let t = Instant::now();
    figures.forgotten = store.forget_session(&keys[7])?.turns;
    figures.forget = t.elapsed();
    let size = store.stats()?.bytes;
    let t = Instant::now();
    figures.pruned = store.prune(None, Some(size - size / 10), 0)?.turns;
    figures.prune = t.elapsed();
    figures.bytes_after_prune = store.stats()?.bytes;
    drop(store);
    drop(dir);

    let report = report(&figures, &queries, started.elapsed());
    write_report("history bench", "history-bench.md", &report)
}

/// The database's files' sizes on disk.
fn files_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn queries(words: &Words, keys: &[String]) -> Vec<Query> {
    let mut out = Vec::new();
    let mut push = |label: String, query: SearchQuery, scan_word: Option<String>| {
        out.push(Query {
            label,
            query,
            hits: 0,
            runs: Vec::with_capacity(SEARCH_RUNS),
            scan: Vec::new(),
            scan_word,
        });
    };
    let v = &words.vocab;
    for (label, word) in [
        ("very common word", "review"),
        ("common generated word (rank 3)", v[3].as_str()),
        ("medium word (rank 300)", v[300].as_str()),
        ("rare word (rank 20,000)", v[20_000].as_str()),
        ("rare word (rank 39,000)", v[39_000].as_str()),
        ("word found nowhere", "zzyzxnotaword"),
    ] {
        push(
            format!("{label}: `{word}`"),
            SearchQuery::new(word),
            Some(word.to_owned()),
        );
    }
    for (label, text) in [
        ("two medium words", format!("{} {}", v[100], v[200])),
        ("common + rare", format!("error {}", v[5_000])),
        ("three words", format!("{} {} {}", v[10], v[50], v[400])),
        ("hostile syntax", format!("{}-\"NEAR( {}*", v[30], v[60])),
    ] {
        push(format!("{label}: `{text}`"), SearchQuery::new(text), None);
    }
    let mut q = SearchQuery::new(v[3].as_str());
    q.session = Some(keys[42].clone());
    push(format!("rank-3 word, one session: `{}`", v[3]), q, None);
    let mut q = SearchQuery::new(v[3].as_str());
    q.since = Some(T0 + 99_000 * GAP_MS);
    push(
        format!("rank-3 word, last 1,000 turns: `{}`", v[3]),
        q,
        None,
    );
    let mut q = SearchQuery::new(format!("{} OR {}", v[1_000], v[2_000]));
    q.syntax = QuerySyntax::Fts5;
    push(
        format!("FTS5 syntax: `{} OR {}`", v[1_000], v[2_000]),
        q,
        None,
    );
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn p(runs: &[Duration], pct: f64) -> f64 {
    let mut sorted = runs.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return f64::NAN;
    }
    ms(percentile(&sorted, pct))
}

fn report(f: &Figures, queries: &[Query], took: Duration) -> String {
    let (cpus, kernel) = machine();
    let mb = |bytes: u64, d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    let mut out = String::from("# History store benchmark\n\n");
    let _ = writeln!(
        out,
        "One run of `cargo bench -p clippy-benches --bench history` ({:.0} s; {cpus} CPUs, Linux \
         {kernel}). Store in the target folder (WAL, `synchronous = NORMAL`). Corpus: {} turns \
         ({SESSIONS} sessions × {TURNS_PER_SESSION}), text views of {}–{} bytes (log-uniform, \
         mean {:.0} B), raw content the same text with `\\r\\n` and colours; {:.1} MB of turn bytes \
         (content + text); generated in {:.1} s.\n",
        took.as_secs_f64(),
        f.turns,
        TEXT_BYTES.0,
        TEXT_BYTES.1,
        f.text_bytes as f64 / f.turns as f64,
        f.turn_bytes as f64 / 1e6,
        f.generate.as_secs_f64(),
    );

    out.push_str("## Insert\n\n| how | turns | s | turns/s | MB/s (turn bytes) | ratio to a file append (MB/s) |\n|---|---:|---:|---:|---:|---:|\n");
    let append_mb = mb(f.turn_bytes, f.file_append);
    let batched_mb = mb(f.turn_bytes, f.insert);
    let _ = writeln!(
        out,
        "| batches of {BATCH} (+ an event each), one transaction per batch | {} | {:.1} | {:.0} | {batched_mb:.1} | {:.3} |",
        f.turns,
        f.insert.as_secs_f64(),
        f.turns as f64 / f.insert.as_secs_f64(),
        batched_mb / append_mb,
    );
    let single_bytes: u64 = f.turn_bytes / f.turns as u64 * SINGLES as u64;
    let single_mb = mb(single_bytes, f.singles);
    let _ = writeln!(
        out,
        "| one turn per transaction, into the 100,000-turn store | {SINGLES} | {:.1} | {:.0} | {single_mb:.1} | {:.3} |",
        f.singles.as_secs_f64(),
        SINGLES as f64 / f.singles.as_secs_f64(),
        single_mb / append_mb,
    );
    let _ = writeln!(
        out,
        "| baseline: the same bytes appended to a file (`BufWriter`, no sync) | {} | {:.1} | — | {append_mb:.1} | 1 |",
        f.turns,
        f.file_append.as_secs_f64(),
    );

    out.push_str("\n## Size\n\n");
    let per_1000 = f.db_bytes as f64 / (f.turns as f64 / 1000.0);
    let _ = writeln!(
        out,
        "After the corpus and a checkpoint: database {:.1} MB (files on disk {:.1} MB), \
         **{:.2} MB per 1,000 turns**; the turn bytes stored are {:.2} MB per 1,000 turns, so the \
         store is {:.2}× them (the full-text index, events, metadata and page slack).\n",
        f.db_bytes as f64 / 1e6,
        f.file_bytes as f64 / 1e6,
        per_1000 / 1e6,
        f.turn_bytes as f64 / (f.turns as f64 / 1000.0) / 1e6,
        f.db_bytes as f64 / f.turn_bytes as f64,
    );

    let all: Vec<Duration> = queries
        .iter()
        .flat_map(|q| q.runs.iter().copied())
        .collect();
    let _ = writeln!(
        out,
        "## Search (limit 20, with snippets)\n\nAll {} runs of the {} queries: **p50 {:.2} ms, \
         p99 {:.2} ms** (max {:.2} ms).\n",
        all.len(),
        queries.len(),
        p(&all, 0.5),
        p(&all, 0.99),
        all.iter().max().copied().map_or(0.0, ms),
    );
    out.push_str(
        "| query | hits | p50 ms | p99 ms | linear scan p50 ms | scan / search (p50) |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for q in queries {
        let (scan, ratio) = if q.scan.is_empty() {
            ("—".to_owned(), "—".to_owned())
        } else {
            let scan = p(&q.scan, 0.5);
            (
                format!("{scan:.2}"),
                format!("{:.1}", scan / p(&q.runs, 0.5)),
            )
        };
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {:.2} | {scan} | {ratio} |",
            q.label,
            q.hits,
            p(&q.runs, 0.5),
            p(&q.runs, 0.99),
        );
    }
    let _ = writeln!(
        out,
        "\nThe linear scan is `memchr::memmem` for the word over every text view held in memory \
         (no I/O, no ranking, no snippet, case-sensitive): what searching without an index costs \
         at best.\n"
    );

    out.push_str("## Reads, forget, prune\n\n| operation | p50 ms | p99 ms |\n|---|---:|---:|\n");
    for (label, runs) in [
        ("`history`, newest 50", &f.history_newest),
        (
            "`history` of one session (500 turns), newest 50",
            &f.history_session,
        ),
        ("`get_turn` of a random turn (content checked)", &f.get_turn),
    ] {
        let _ = writeln!(
            out,
            "| {label} | {:.2} | {:.2} |",
            p(runs, 0.5),
            p(runs, 0.99)
        );
    }
    let _ = writeln!(
        out,
        "\nForgetting one session ({} turns) of the store took **{:.1} s** (deletes, the \
         full-text index rewritten, free pages given back, the WAL emptied). Pruning to 90 % of \
         the size deleted {} turns in **{:.1} s**, leaving {:.1} MB.",
        f.forgotten,
        f.forget.as_secs_f64(),
        f.pruned,
        f.prune.as_secs_f64(),
        f.bytes_after_prune as f64 / 1e6,
    );
    out
}
