//! The data directory ([`Emulator::data_dir`](crate::Emulator::data_dir)):
//! the lock, the format version, the redb database, loading it into a
//! broker, and the store thread that writes journals with group commit.
//!
//! Layout: `LOCK` (held with an OS lock while an emulator runs; the kernel
//! releases it when the process dies, so a crash never leaves the
//! directory locked), `FORMAT` (the on-disk format version, one line), and
//! `queues.redb`.
//!
//! Why redb: it is an embedded, pure-Rust, ACID store whose every commit
//! with the default durability is synced before `commit` returns, with
//! copy-on-write pages, so a crash at any point leaves the last committed
//! state; freed pages are reused, so acked messages give their space back;
//! and it needs no C toolchain, unlike SQLite through rusqlite's `bundled`.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use redb::{Database, ReadableTable, TableDefinition};
use tokio::sync::watch;

use crate::state::{Broker, Change, Journal};

/// The on-disk format this emulator reads and writes. A directory of
/// another version is refused, naming both.
pub const DATA_FORMAT_VERSION: u32 = 1;

const LOCK_FILE: &str = "LOCK";
const FORMAT_FILE: &str = "FORMAT";
const DB_FILE: &str = "queues.redb";

/// (account, queue id, seq) -> the message's header (`state::journal`).
const MESSAGES: TableDefinition<(&str, &str, u64), &[u8]> = TableDefinition::new("messages");
/// (account, queue id, seq) -> the message's body, written once.
const BODIES: TableDefinition<(&str, &str, u64), &[u8]> = TableDefinition::new("bodies");
/// (account, queue id) -> a queue state's figures.
const QUEUE_META: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("queue_meta");
/// (account, queue id) -> the queue record as JSON.
const RECORDS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("records");
/// (account, queue id) of queues deleted by the API.
const DELETED: TableDefinition<(&str, &str), ()> = TableDefinition::new("deleted");
/// (account, subscription id) -> the event subscription as JSON. Created
/// when a directory is opened, so that one written before subscriptions
/// existed opens as it is (no new format version).
const SUBSCRIPTIONS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("subscriptions");
/// "message_key", "next_seq".
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

fn storage(error: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("data directory store: {error}"))
}

/// An opened, locked data directory, before the store thread takes it.
pub(crate) struct DataDir {
    path: PathBuf,
    /// Held for the emulator's life: the OS lock lives with this handle.
    lock: File,
    db: Database,
}

impl std::fmt::Debug for DataDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataDir").field("path", &self.path).finish()
    }
}

/// Empties a data directory (the lock file stays), as
/// [`Emulator::reset_data_dir`](crate::Emulator::reset_data_dir) does at
/// start. Refused while another emulator runs on it.
///
/// # Errors
///
/// The directory is in use, or a file cannot be removed.
pub fn reset_data_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    fs::create_dir_all(path)?;
    let _lock = lock(path)?;
    clear(path)
}

fn clear(path: &Path) -> io::Result<()> {
    for name in [DB_FILE, FORMAT_FILE] {
        match fs::remove_file(path.join(name)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

fn lock(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.join(LOCK_FILE))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "data directory {} is in use by another running emulator",
                path.display()
            ),
        )),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

impl DataDir {
    /// Locks the directory (creating it if needed), clears it when `reset`,
    /// checks its format version, and opens the store.
    pub(crate) fn open(path: &Path, reset: bool) -> io::Result<DataDir> {
        fs::create_dir_all(path)?;
        let lock = lock(path)?;
        if reset {
            clear(path)?;
        }
        let format = path.join(FORMAT_FILE);
        let db_path = path.join(DB_FILE);
        match fs::read_to_string(&format) {
            Ok(text) => {
                let version = text
                    .trim()
                    .strip_prefix("cf-queues-emulator data format ")
                    .and_then(|v| v.parse::<u32>().ok());
                if version != Some(DATA_FORMAT_VERSION) {
                    let found =
                        version.map_or_else(|| format!("{:?}", text.trim()), |v| v.to_string());
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "data directory {} is in on-disk format version {found}; this \
                             emulator reads version {DATA_FORMAT_VERSION}. Move its messages with \
                             `cfq drain` run by the old version and `cfq replay` by this one, \
                             or start afresh with --reset",
                            path.display()
                        ),
                    ));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if db_path.exists() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "data directory {} has a store but no FORMAT file",
                            path.display()
                        ),
                    ));
                }
                // Written and synced before the store, so a store never
                // exists without its version.
                let mut file = File::create(&format)?;
                writeln!(file, "cf-queues-emulator data format {DATA_FORMAT_VERSION}")?;
                file.sync_all()?;
                File::open(path)?.sync_all()?;
            }
            Err(e) => return Err(e),
        }
        let db = Database::create(&db_path).map_err(storage)?;
        let txn = db.begin_write().map_err(storage)?;
        {
            // Created up front, so that reads never meet a missing table.
            txn.open_table(MESSAGES).map_err(storage)?;
            txn.open_table(BODIES).map_err(storage)?;
            txn.open_table(QUEUE_META).map_err(storage)?;
            txn.open_table(RECORDS).map_err(storage)?;
            txn.open_table(DELETED).map_err(storage)?;
            txn.open_table(SUBSCRIPTIONS).map_err(storage)?;
            txn.open_table(META).map_err(storage)?;
        }
        txn.commit().map_err(storage)?;
        // The store's own syncs cover its contents, not its name in the
        // directory: synced here, so a power cut cannot lose the file.
        File::open(path)?.sync_all()?;
        Ok(DataDir {
            path: path.to_owned(),
            lock,
            db,
        })
    }

    /// Whether nothing was ever stored: a configuration seeds only such a
    /// directory.
    pub(crate) fn is_empty(&self) -> io::Result<bool> {
        let txn = self.db.begin_read().map_err(storage)?;
        let meta = txn.open_table(META).map_err(storage)?;
        Ok(meta.get("message_key").map_err(storage)?.is_none())
    }

    /// Loads everything stored into `broker`; `now_ms` ends the leases
    /// the emulator held when it stopped.
    pub(crate) fn load(&self, broker: &mut Broker, now_ms: u64) -> io::Result<()> {
        let bad = |what: &str, why: String| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("data directory: {what}: {why}"),
            )
        };
        let txn = self.db.begin_read().map_err(storage)?;
        let meta = txn.open_table(META).map_err(storage)?;
        let key = meta.get("message_key").map_err(storage)?.map(|v| v.value());
        let next = meta
            .get("next_seq")
            .map_err(storage)?
            .map_or(0, |v| v.value());
        broker.restore_tokens(key, next);
        let bad_queue = |id: &str, why: String| bad(&format!("queue {id}"), why);
        each_row(&txn, RECORDS, |(account, id), record| {
            broker
                .restore_record(account, record)
                .map_err(|why| bad_queue(id, why))
        })?;
        each_row(&txn, DELETED, |(account, id), ()| {
            broker.restore_deleted(account, id);
            Ok(())
        })?;
        each_row(&txn, SUBSCRIPTIONS, |(account, id), record| {
            broker
                .restore_subscription(account, record)
                .map_err(|why| bad(&format!("event subscription {id}"), why))
        })?;
        each_row(&txn, QUEUE_META, |(account, id), meta| {
            let restored = broker.restore_meta(account, id, meta, now_ms);
            restored.map_err(|why| bad_queue(id, why))
        })?;
        let bodies = txn.open_table(BODIES).map_err(storage)?;
        each_row(&txn, MESSAGES, |(account, id, seq), header| {
            let body = bodies.get((account, id, seq)).map_err(storage)?;
            let body = body.as_ref().map_or(&[][..], |b| b.value());
            broker
                .restore_message(account, id, seq, (header, body), now_ms)
                .map_err(|why| bad(&format!("queue {id}, message {seq}"), why))
        })?;
        broker.finish_restore();
        Ok(())
    }

    /// Writes a journal at once, synced (the declarations of a start).
    pub(crate) fn write_now(&self, journal: &Journal, message_key: u64) -> io::Result<()> {
        write(&self.db, std::slice::from_ref(journal), message_key)
    }

    /// Hands the directory to a store thread.
    pub(crate) fn spawn(self, message_key: u64) -> io::Result<Store> {
        let (tx, rx) = mpsc::channel::<(u64, Journal)>();
        let (progress_tx, progress) = watch::channel(Progress::default());
        let counters = Arc::new(Counters::default());
        let thread_counters = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name("cf-queues-emulator-store".into())
            .spawn(move || run(self, message_key, rx, progress_tx, &thread_counters))?;
        Ok(Store {
            tx: Mutex::new(Some(tx)),
            submitted: AtomicU64::new(0),
            progress,
            counters,
            thread: Mutex::new(Some(thread)),
        })
    }
}

/// Hands every row of `table` to `each`, in key order; the first error
/// (reading, or `each`'s own) ends the walk.
fn each_row<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    table: TableDefinition<K, V>,
    mut each: impl for<'a> FnMut(K::SelfType<'a>, V::SelfType<'a>) -> io::Result<()>,
) -> io::Result<()> {
    for row in txn
        .open_table(table)
        .map_err(storage)?
        .iter()
        .map_err(storage)?
    {
        let (key, value) = row.map_err(storage)?;
        each(key.value(), value.value())?;
    }
    Ok(())
}

/// How far the store thread has got.
#[derive(Debug, Clone, Default)]
struct Progress {
    /// Every journal up to this ticket is committed and synced.
    through: u64,
    /// The first failure; nothing is committed after it.
    failed: Option<Arc<str>>,
}

/// Figures the tests and the bench read.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Synced commits.
    pub commits: AtomicU64,
    /// Journals written (one per changing request).
    pub journals: AtomicU64,
    /// Set by a test: the next commits fail as a full disk would.
    pub fail: AtomicBool,
    /// Set by a test: commits wait while it is set, as a slow disk's
    /// would, so that a test can see what leaves before a commit.
    pub hold: AtomicBool,
}

/// The store thread's side in the app: journals go in under the broker's
/// lock, answers wait for their commit.
#[derive(Debug)]
pub(crate) struct Store {
    tx: Mutex<Option<mpsc::Sender<(u64, Journal)>>>,
    /// The last ticket handed out; only changed under the broker's lock.
    submitted: AtomicU64,
    progress: watch::Receiver<Progress>,
    pub counters: Arc<Counters>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Store {
    /// Queues a journal for the next commit. Called with the broker locked,
    /// so journals are written in the order their changes were made.
    pub(crate) fn submit(&self, journal: Journal) {
        if journal.is_empty() {
            return;
        }
        let ticket = self.submitted.load(Ordering::Acquire).wrapping_add(1);
        self.submitted.store(ticket, Ordering::Release);
        let tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = tx.as_ref() {
            // A closed channel means the thread failed or stopped; `settle`
            // then reports the failure, or waits for nothing.
            let _ = tx.send((ticket, journal));
        }
    }

    /// Waits until every change handed in so far (this request's and any
    /// it may have seen of others) is committed: called before an answer
    /// leaves. `Err` with the failure's text if a commit failed.
    pub(crate) async fn settle(&self) -> Result<(), Arc<str>> {
        let target = self.submitted.load(Ordering::Acquire);
        let mut progress = self.progress.clone();
        let outcome = progress
            .wait_for(|p| p.through >= target || p.failed.is_some())
            .await
            .map(|p| p.failed.clone());
        match outcome {
            Ok(None) => Ok(()),
            Ok(Some(failed)) => Err(failed),
            Err(_) => Err(Arc::from("the store thread stopped")),
        }
    }

    /// The failure that stopped the store, if one did.
    pub(crate) fn failed(&self) -> Option<Arc<str>> {
        self.progress.borrow().failed.clone()
    }

    /// Stops the thread after it wrote what it was handed, releasing the
    /// directory's lock.
    pub(crate) fn close(&self) {
        // A test's hold must not keep the thread from finishing.
        self.counters.hold.store(false, Ordering::Relaxed);
        drop(
            self.tx
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}

/// The store thread: takes every journal waiting, writes them in one
/// transaction, syncs once (group commit), then releases their answers.
fn run(
    dir: DataDir,
    message_key: u64,
    rx: mpsc::Receiver<(u64, Journal)>,
    progress: watch::Sender<Progress>,
    counters: &Counters,
) {
    while let Ok(first) = rx.recv() {
        let mut through = first.0;
        let mut group = vec![first.1];
        while let Ok((ticket, journal)) = rx.try_recv() {
            through = ticket;
            group.push(journal);
        }
        while counters.hold.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let outcome = if counters.fail.load(Ordering::Relaxed) {
            Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "no space left on device (injected)",
            ))
        } else {
            write(&dir.db, &group, message_key)
        };
        match outcome {
            Ok(()) => {
                counters.commits.fetch_add(1, Ordering::Relaxed);
                counters.journals.fetch_add(
                    u64::try_from(group.len()).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                progress.send_modify(|p| p.through = through);
            }
            Err(error) => {
                tracing::error!(%error, "the data directory could not be written; the emulator answers 503 from now on");
                let text: Arc<str> = Arc::from(error.to_string());
                progress.send_modify(|p| p.failed = Some(text));
                break;
            }
        }
    }
    drop(dir.lock);
}

/// Applies journals in order in one write transaction and commits it,
/// synced (redb's default durability).
fn write(db: &Database, group: &[Journal], message_key: u64) -> io::Result<()> {
    let txn = db.begin_write().map_err(storage)?;
    {
        let mut messages = txn.open_table(MESSAGES).map_err(storage)?;
        let mut bodies = txn.open_table(BODIES).map_err(storage)?;
        let mut queue_meta = txn.open_table(QUEUE_META).map_err(storage)?;
        let mut records = txn.open_table(RECORDS).map_err(storage)?;
        let mut deleted = txn.open_table(DELETED).map_err(storage)?;
        let mut subscriptions = txn.open_table(SUBSCRIPTIONS).map_err(storage)?;
        let mut meta = txn.open_table(META).map_err(storage)?;
        let mut next_seq = 0;
        for journal in group {
            next_seq = next_seq.max(journal.next_seq);
            for change in &journal.changes {
                match change {
                    Change::Message {
                        account,
                        queue,
                        seq,
                        record: Some(row),
                    } => {
                        let key = (account.as_str(), queue.as_str(), *seq);
                        messages
                            .insert(key, row.header.as_slice())
                            .map_err(storage)?;
                        if let Some(body) = &row.body {
                            bodies.insert(key, &**body).map_err(storage)?;
                        }
                    }
                    Change::Message {
                        account,
                        queue,
                        seq,
                        record: None,
                    } => {
                        let key = (account.as_str(), queue.as_str(), *seq);
                        messages.remove(key).map_err(storage)?;
                        bodies.remove(key).map_err(storage)?;
                    }
                    Change::Clear { account, queue } => {
                        let (a, q) = (account.as_str(), queue.as_str());
                        let all = (a, q, 0)..=(a, q, u64::MAX);
                        messages
                            .retain_in(all.clone(), |_, _| false)
                            .map_err(storage)?;
                        bodies.retain_in(all, |_, _| false).map_err(storage)?;
                    }
                    Change::QueueMeta {
                        account,
                        queue,
                        meta: Some(row),
                    } => {
                        queue_meta
                            .insert((account.as_str(), queue.as_str()), row.as_slice())
                            .map_err(storage)?;
                    }
                    Change::QueueMeta {
                        account,
                        queue,
                        meta: None,
                    } => {
                        queue_meta
                            .remove((account.as_str(), queue.as_str()))
                            .map_err(storage)?;
                    }
                    Change::Record {
                        account,
                        id,
                        record: Some(row),
                    } => {
                        records
                            .insert((account.as_str(), id.as_str()), row.as_slice())
                            .map_err(storage)?;
                    }
                    Change::Record {
                        account,
                        id,
                        record: None,
                    } => {
                        records
                            .remove((account.as_str(), id.as_str()))
                            .map_err(storage)?;
                    }
                    Change::Deleted { account, id } => {
                        records
                            .remove((account.as_str(), id.as_str()))
                            .map_err(storage)?;
                        deleted
                            .insert((account.as_str(), id.as_str()), ())
                            .map_err(storage)?;
                    }
                    Change::Subscription {
                        account,
                        id,
                        record: Some(row),
                    } => {
                        subscriptions
                            .insert((account.as_str(), id.as_str()), row.as_slice())
                            .map_err(storage)?;
                    }
                    Change::Subscription {
                        account,
                        id,
                        record: None,
                    } => {
                        subscriptions
                            .remove((account.as_str(), id.as_str()))
                            .map_err(storage)?;
                    }
                }
            }
        }
        meta.insert("message_key", message_key).map_err(storage)?;
        meta.insert("next_seq", next_seq).map_err(storage)?;
    }
    txn.commit().map_err(storage)
}
