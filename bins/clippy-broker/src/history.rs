//! The history store's thread: the state machine's [`HistoryJob`]s run in order against a
//! [`clippy_history::Store`] — records batched into one transaction with whatever else queued up
//! meanwhile, queries answered after every record asked for before them — and the replies sent
//! back to the event loop through a channel and its [`Waker`]. Nothing here runs on the event
//! loop's thread, so a slow disk never stalls a request.
//!
//! A store that cannot be written (a read-only folder, a full disk) is a warning in the log and
//! in `history_status`, never a crash: turns are still acknowledged and live operation goes on;
//! writes are tried again with the next records, and the warning clears once one succeeds.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clippy_history::{DrainPace, HistoryError, Journal, PORTION_BYTES, Store};
use clippy_proto::Message;
use mio::Waker;

use crate::log::Level;
use clippy_broker_core::{ConnId, HistoryJob, HistoryQuery, HistoryRecord, history_weight};

/// How often the store is pruned to its age and size limits.
const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// The store thread's scheduling priority (nice): below the event loop and the sessions, so
/// under load the store falls behind rather than slowing requests; what it has not written
/// waits in the journal on disk. The journaling thread, whose work per record is a copy into
/// the page cache, runs at the broker's own priority: what it has not journaled waits in
/// memory, and turns the broker cannot acknowledge wait in their wrappers. (At nice 10 it fell
/// 11 MiB behind under the soak on a quiet machine, and the held turns took the broker and a
/// wrapper over their memory bounds.)
pub const NICE: i32 = 10;

/// A test's hold on the history thread: when set to a FIFO's path, the thread reads one byte
/// from it before each batch of jobs (`o`: from then on, never again), so a test can stall the
/// store and let it go at points it chooses, with no clock involved. Unset in normal use.
pub const TEST_GATE_ENV: &str = "CLIPPY_BROKER_TEST_HISTORY_GATE";

/// A test's hold on the journal: when set (to anything), the history thread journals records
/// and acknowledges them but never writes the journal into the store, and queries answer from
/// the store as it is, so a test can stop a broker with a backlog. Unset in normal use.
pub const TEST_NO_DRAIN_ENV: &str = "CLIPPY_BROKER_TEST_HISTORY_NO_DRAIN";

/// The gate of [`TEST_GATE_ENV`], if the environment names one (opened for reading and
/// writing, so opening never waits for a writer).
fn test_gate() -> Option<std::fs::File> {
    let path = std::env::var_os(TEST_GATE_ENV)?;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .ok()
}

/// Waits at the test gate, if there is one; closes it for good on `o` or an error.
fn pass_gate(gate: &mut Option<std::fs::File>) {
    use std::io::Read;
    if let Some(file) = gate {
        let mut byte = [0u8];
        if !matches!(file.read(&mut byte), Ok(1)) || byte[0] == b'o' {
            *gate = None;
        }
    }
}

/// The journal grows to this at most; past it, records go straight into the store (and turns
/// are acknowledged once stored, held while the store is behind).
const JOURNAL_MAX: u64 = 4 << 30;
/// How long a store that failed waits for the next try when no job comes.
const RETRY: Duration = Duration::from_secs(1);
/// How long a stopping broker goes on writing its journal into the store; the rest is written
/// by the next broker.
const DRAIN_AT_EXIT: Duration = Duration::from_secs(5);

/// What the thread sends back to the event loop.
#[allow(clippy::large_enum_variant)] // moved through a channel one at a time
#[derive(Debug)]
pub enum HistoryOutput {
    /// Send this message to this connection.
    Reply(ConnId, Message),
    /// Log this.
    Log(Level, String),
    /// Records weighing this much ([`history_weight`]) were written, or failed to be: the
    /// state machine's backlog is that much lighter.
    Written(usize),
}

/// The limits the store is kept to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Turns and events older than this many days are deleted (0: kept for ever).
    pub max_age_days: u64,
    /// The store is kept under this many bytes, oldest first (0: no limit).
    pub max_bytes: u64,
}

/// The open store, and what the broker needs to start with it.
pub struct Opened {
    /// The store.
    pub store: Store,
    /// The journal beside it, where records wait to be written into the store; `None` when it
    /// cannot be opened (records are then written straight into the store).
    pub journal: Option<Journal>,
    /// Why the journal could not be opened.
    pub journal_problem: Option<String>,
    /// Its folder.
    pub dir: PathBuf,
    /// The newest event id stored or journaled: the broker's ids go on after it.
    pub last_event_id: u64,
}

/// Opens the store in `dir`, and its journal.
///
/// # Errors
///
/// The store's error (a folder that cannot be made, a file that is not a database…): the
/// broker runs without history and says why. A journal that cannot be opened is no error:
/// records then go straight into the store.
pub fn open(dir: PathBuf) -> Result<Opened, HistoryError> {
    let store = Store::open(&dir)?;
    let (journal, journal_problem) = match Journal::open(&dir, JOURNAL_MAX) {
        Ok(journal) => (Some(journal), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let last_event_id = store
        .max_event_seq()?
        .max(journal.as_ref().map_or(0, Journal::max_event_seq));
    Ok(Opened {
        store,
        journal,
        journal_problem,
        dir,
        last_event_id,
    })
}

/// Runs the thread: takes jobs until the sender is gone.
pub fn run(
    opened: Opened,
    limits: Limits,
    jobs: &Receiver<HistoryJob>,
    output: &Sender<HistoryOutput>,
    waker: &Arc<Waker>,
) {
    let journal = opened.journal.map(|j| Arc::new(Mutex::new(j)));
    let journal_problem = Arc::new(Mutex::new(None::<String>));
    let (store_jobs, store_rx) = mpsc::channel::<StoreJob>();
    let worker = Worker {
        store: opened.store,
        journal: journal.clone(),
        journal_problem: Arc::clone(&journal_problem),
        dir: opened.dir,
        limits,
        problem: None,
        output: output.clone(),
        waker: Arc::clone(waker),
        last_prune: None,
        drain: std::env::var_os(TEST_NO_DRAIN_ENV).is_none(),
        pace: DrainPace::default(),
        pause_until: None,
    };
    if let Some(problem) = opened.journal_problem {
        worker.log(
            Level::Warn,
            format!(
                "history: no journal ({problem}); records go straight into the store, and turns \
                 are acknowledged once stored"
            ),
        );
    }
    if let Some(journal) = &journal {
        let len = lock(journal).len();
        if len > 0 {
            worker.log(
                Level::Info,
                format!(
                    "history: {} KiB of records journaled by an earlier broker are written into \
                     the store",
                    len / 1024
                ),
            );
        }
    }
    let store_thread = std::thread::Builder::new()
        .name("clippy-broker-store".into())
        .spawn(move || worker.run(&store_rx));
    let mut journaler = Journaler {
        journal,
        problem: journal_problem,
        store: store_jobs,
        output: output.clone(),
        waker: Arc::clone(waker),
        unwoken: std::cell::Cell::new(false),
    };
    if let Err(e) = store_thread {
        journaler.log(
            Level::Warn,
            format!("history: cannot start the store's thread: {e}; nothing is stored"),
        );
    }
    let mut gate = test_gate();
    while let Ok(first) = jobs.recv() {
        pass_gate(&mut gate);
        // Whatever queued up behind the first job goes with it: records in one append.
        let mut batch = vec![first];
        let mut gone = false;
        loop {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    gone = true;
                    break;
                }
            }
        }
        journaler.run_batch(batch);
        if gone {
            break;
        }
    }
    // Dropping the journaler closes the store thread's channel: it writes what is journaled
    // for a while, then ends; the rest stays in the journal for the next broker.
}

/// Takes the lock, whatever a panicking holder left.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the journaling thread hands the store's thread.
enum StoreJob {
    /// Records were journaled.
    Journaled,
    /// Answer this query (once everything journaled before it is in the store).
    Query {
        conn: ConnId,
        id: u32,
        query: HistoryQuery,
    },
    /// Records that could not be journaled: store them (after what is journaled), then send
    /// these acknowledgements.
    Direct(Vec<HistoryRecord>, Vec<(ConnId, Message)>),
}

/// The journaling thread: appends records to the journal and acknowledges them, at the event
/// loop's priority (see [`NICE`]).
struct Journaler {
    journal: Option<Arc<Mutex<Journal>>>,
    /// Why the journal cannot be written now, once an append failed (shown by `history_status`).
    problem: Arc<Mutex<Option<String>>>,
    store: Sender<StoreJob>,
    output: Sender<HistoryOutput>,
    waker: Arc<Waker>,
    /// Output was queued since the last wake.
    unwoken: std::cell::Cell<bool>,
}

impl Journaler {
    /// Runs `batch` in order: consecutive records in one append, each query after them.
    fn run_batch(&mut self, batch: Vec<HistoryJob>) {
        let mut records = Vec::new();
        let mut acks = Vec::new();
        for job in batch {
            match job {
                HistoryJob::Record(record) => {
                    if let HistoryRecord::Turn { ack: Some(ack), .. } = &record {
                        acks.push(ack.clone());
                    }
                    records.push(record);
                }
                HistoryJob::Ack(conn, reply) => acks.push((conn, reply)),
                HistoryJob::Query { conn, id, query } => {
                    self.write(&mut records, &mut acks);
                    let _ = self.store.send(StoreJob::Query { conn, id, query });
                }
            }
        }
        self.write(&mut records, &mut acks);
        self.wake();
    }

    /// Journals `records` and sends the acknowledgements; without a journal, or when it cannot
    /// be written, the store's thread stores them and then acknowledges.
    fn write(&mut self, records: &mut Vec<HistoryRecord>, acks: &mut Vec<(ConnId, Message)>) {
        if records.is_empty() && acks.is_empty() {
            return;
        }
        let owned: Vec<HistoryRecord> = std::mem::take(records);
        let acks: Vec<(ConnId, Message)> = std::mem::take(acks);
        let appended = match &self.journal {
            Some(journal) if !owned.is_empty() => {
                let texts = clippy_history::texts_of(&owned);
                let rows = clippy_history::rows_of(&owned, &texts);
                let appended = lock(journal).append(&rows);
                match appended {
                    Ok(()) => {
                        if let Some(problem) = lock(&self.problem).take() {
                            self.log(
                                Level::Info,
                                format!(
                                    "history: the journal takes writes again (after: {problem})"
                                ),
                            );
                        }
                        true
                    }
                    Err(e) => {
                        let problem = e.to_string();
                        let mut held = lock(&self.problem);
                        if held.as_deref() != Some(problem.as_str()) {
                            *held = Some(problem.clone());
                            drop(held);
                            self.log(
                                Level::Warn,
                                format!(
                                    "history: cannot journal {} records: {problem}; they go \
                                     straight into the store, and turns are acknowledged once \
                                     stored",
                                    owned.len()
                                ),
                            );
                        }
                        false
                    }
                }
            }
            Some(_) => true,
            None => false,
        };
        if appended {
            for (conn, reply) in acks {
                self.send(HistoryOutput::Reply(conn, reply));
            }
            if !owned.is_empty() {
                self.send(HistoryOutput::Written(
                    owned.iter().map(history_weight).sum(),
                ));
                let _ = self.store.send(StoreJob::Journaled);
            }
        } else if self.store.send(StoreJob::Direct(owned, acks)).is_err() {
            // No store thread: nothing is stored, as a failed write.
        }
    }

    fn log(&self, level: Level, line: String) {
        self.send(HistoryOutput::Log(level, line));
        self.wake();
    }

    /// Queues `output` for the event loop; [`Journaler::wake`] tells it, once per batch.
    fn send(&self, output: HistoryOutput) {
        if self.output.send(output).is_ok() {
            self.unwoken.set(true);
        }
    }

    /// Wakes the event loop if something was queued for it since the last wake: one wake per
    /// batch, not per acknowledgement (a wake costs the loop a turn of its poll).
    fn wake(&self) {
        if self.unwoken.replace(false) {
            let _ = self.waker.wake();
        }
    }
}

/// The store's thread: writes the journal into the store, answers queries, prunes.
struct Worker {
    store: Store,
    /// Where records wait for the store; `None` without one.
    journal: Option<Arc<Mutex<Journal>>>,
    /// The journal's problem, for `history_status`.
    journal_problem: Arc<Mutex<Option<String>>>,
    dir: PathBuf,
    limits: Limits,
    /// Why the store cannot be written now, once a write failed.
    problem: Option<String>,
    output: Sender<HistoryOutput>,
    waker: Arc<Waker>,
    last_prune: Option<Instant>,
    /// Whether the journal is written into the store (always, but in a test of
    /// [`TEST_NO_DRAIN_ENV`]).
    drain: bool,
    /// How many records the next portion written from the journal into the store takes, and
    /// how long the thread rests after it while records keep coming.
    pace: DrainPace,
    /// The store rests until then ([`DrainPace::written`]).
    pause_until: Option<Instant>,
}

impl Worker {
    /// Runs until the journaling thread is gone.
    fn run(mut self, jobs: &Receiver<StoreJob>) {
        // Best effort: at worst the store competes with the sessions as an equal.
        clippy_pty::lower_this_thread(NICE);
        self.prune();
        loop {
            // Records journaled and not in the store yet are written between jobs, a portion
            // at a time.
            let job = if let Some(until) = self.pause_until {
                // Resting after a portion while records keep coming: jobs are still taken.
                match jobs.recv_timeout(until.saturating_duration_since(Instant::now())) {
                    Ok(job) => job,
                    Err(RecvTimeoutError::Timeout) => {
                        self.pause_until = None;
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            } else if self.journal_unread() {
                match jobs.try_recv() {
                    Ok(job) => {
                        self.pace.records_came();
                        job
                    }
                    Err(TryRecvError::Empty) => {
                        if let Some(rest) = self.drain_portion() {
                            // While the sessions keep the journal growing, the store takes
                            // a part of the time only.
                            self.pause_until = rest.map(|rest| Instant::now() + rest);
                            continue;
                        }
                        // The store failed: try again with the next job, or in a while.
                        match jobs.recv_timeout(RETRY) {
                            Ok(job) => job,
                            Err(RecvTimeoutError::Timeout) => continue,
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                    Err(TryRecvError::Disconnected) => break,
                }
            } else {
                match jobs.recv() {
                    Ok(job) => job,
                    Err(_) => break,
                }
            };
            if matches!(job, StoreJob::Journaled) {
                self.pace.records_came();
            }
            match job {
                StoreJob::Journaled => {}
                StoreJob::Query { conn, id, query } => {
                    // A query sees every record asked for before it: it waits for the journal
                    // to be written in, but for a turn (read from the journal, or from the store
                    // when the journal has none) and the status.
                    if clippy_history::waits_for_journal(&query) {
                        while self.journal_unread() && self.drain_portion().is_some() {}
                    }
                    let problem = self
                        .problem
                        .clone()
                        .or_else(|| lock(&self.journal_problem).clone());
                    let answer = clippy_history::answer(
                        &mut self.store,
                        self.journal.as_deref(),
                        problem,
                        id,
                        query,
                    );
                    if let Some(line) = answer.log {
                        self.log(Level::Info, line);
                    }
                    self.send(HistoryOutput::Reply(conn, answer.reply));
                }
                StoreJob::Direct(records, acks) => {
                    // In order: what is journaled before these goes into the store first.
                    while self.journal_unread() && self.drain_portion().is_some() {}
                    let texts = clippy_history::texts_of(&records);
                    let rows = clippy_history::rows_of(&records, &texts);
                    self.store_rows(&rows);
                    for (conn, reply) in acks {
                        self.send(HistoryOutput::Reply(conn, reply));
                    }
                    if !records.is_empty() {
                        self.send(HistoryOutput::Written(
                            records.iter().map(history_weight).sum(),
                        ));
                    }
                }
            }
            if self
                .last_prune
                .is_none_or(|at: Instant| at.elapsed() >= PRUNE_EVERY)
            {
                self.prune();
            }
        }
        // The broker stops: what is journaled goes into the store for a while; the rest stays
        // in the journal for the next broker.
        let deadline = Instant::now() + DRAIN_AT_EXIT;
        while self.journal_unread() && Instant::now() < deadline && self.drain_portion().is_some() {
        }
    }

    /// Whether the journal holds records not in the store yet.
    fn journal_unread(&self) -> bool {
        self.drain && self.journal.as_ref().is_some_and(|j| lock(j).unread() > 0)
    }

    /// Writes the next portion of the journal into the store in one transaction, and empties
    /// the journal once all of it is in: then how long to rest before the next, if at all
    /// ([`DrainPace::written`]). `None` when the store (or the journal) failed: the portion is
    /// read again next time.
    fn drain_portion(&mut self) -> Option<Option<Duration>> {
        let Some(journal) = self.journal.clone() else {
            return Some(None);
        };
        let started = Instant::now();
        let (offset, records) = {
            let mut journal = lock(&journal);
            let offset = journal.read_offset();
            match journal.read(self.pace.portion(), PORTION_BYTES) {
                Ok(records) => (offset, records),
                Err(e) => {
                    drop(journal);
                    self.note_problem(&e.to_string(), 0);
                    return None;
                }
            }
        };
        let rows: Vec<clippy_history::Record<'_>> = records
            .iter()
            .map(clippy_history::JournaledRecord::record)
            .collect();
        if !self.store_rows(&rows) {
            lock(&journal).rewind(offset);
            return None;
        }
        let rest = self.pace.written(started.elapsed());
        let mut journal = lock(&journal);
        // Emptied only when nothing was appended meanwhile.
        if journal.unread() == 0
            && let Err(e) = journal.clear()
        {
            drop(journal);
            self.note_problem(&e.to_string(), 0);
            return None;
        }
        Some(rest)
    }

    /// Writes `rows` into the store in one transaction; logs a failure (once per cause) and
    /// clears it on success.
    fn store_rows(&mut self, rows: &[clippy_history::Record<'_>]) -> bool {
        match self.store.apply(rows) {
            Ok(()) => {
                if let Some(problem) = self.problem.take() {
                    self.log(
                        Level::Info,
                        format!("history: the store takes writes again (after: {problem})"),
                    );
                }
                true
            }
            Err(e) => {
                self.note_problem(&e.to_string(), rows.len());
                false
            }
        }
    }

    /// Logs a failure to write `count` records, once per cause.
    fn note_problem(&mut self, problem: &str, count: usize) {
        if self.problem.as_deref() != Some(problem) {
            self.log(
                Level::Warn,
                format!(
                    "history: cannot store {count} records in {}: {problem}; live operation goes \
                     on",
                    self.dir.display()
                ),
            );
        }
        self.problem = Some(problem.to_owned());
    }

    /// Deletes what is past the age and size limits.
    fn prune(&mut self) {
        self.last_prune = Some(Instant::now());
        let max_age = (self.limits.max_age_days > 0)
            .then(|| Duration::from_secs(self.limits.max_age_days.saturating_mul(86_400)));
        let max_bytes = (self.limits.max_bytes > 0).then_some(self.limits.max_bytes);
        match self
            .store
            .prune(max_age, max_bytes, clippy_proto::unix_ms_now())
        {
            Ok(deleted) if deleted.turns == 0 && deleted.events == 0 => {}
            Ok(deleted) => self.log(
                Level::Info,
                format!(
                    "history: pruned {} turns and {} events past the age or size limit",
                    deleted.turns, deleted.events
                ),
            ),
            Err(e) => self.log(Level::Warn, format!("history: cannot prune: {e}")),
        }
    }

    fn log(&self, level: Level, line: String) {
        self.send(HistoryOutput::Log(level, line));
    }

    fn send(&self, output: HistoryOutput) {
        // The event loop is gone only when the broker stops.
        if self.output.send(output).is_ok() {
            let _ = self.waker.wake();
        }
    }
}
