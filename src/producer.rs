//! An auto-batching producer (feature `producer`): many callers send one
//! message each; the producer packs them into as few batch pushes as the
//! limits allow, and gives each caller its own outcome.
//!
//! A batch is cut by a [`BatchPlanner`] (at most 100 messages and 256 KB,
//! counted as the API counts them) and sent as soon as it is full, or once
//! its first message has waited the linger. Up to
//! [`ProducerBuilder::max_concurrent_batches`] batches are in flight at
//! once; a bounded buffer in front of the batches makes senders wait
//! (backpressure) instead of growing without bound.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cf_queues::Message;
//! use cf_queues::producer::Producer;
//! # let emulator = cf_queues_emulator::Emulator::new().start().await?;
//! # let queue = emulator.client()?.queue("events")?;
//!
//! let producer = Producer::builder(queue).build()?;
//! // 250 concurrent sends: three requests (100, 100, 50), each caller its own outcome.
//! let sends = (0..250).map(|i| producer.send(Message::text(format!("event {i}"))));
//! for outcome in futures_util::future::join_all(sends).await {
//!     outcome?;
//! }
//! let stats = producer.close().await;
//! assert_eq!((stats.landed, stats.batches), (250, 3));
//! # Ok(()) }
//! ```
//!
//! # Settings
//!
//! | setting | default | why |
//! |---|---|---|
//! | [`linger`](ProducerBuilder::linger) | 5 ms | little latency next to a push, time for a batch to fill |
//! | [`max_buffered`](ProducerBuilder::max_buffered) | 1,000 messages | ten batches: keeps the batches in flight busy, bounds memory |
//! | [`max_concurrent_batches`](ProducerBuilder::max_concurrent_batches) | 4 | hides a push's round trip, far from 429s |
//!
//! # Retries
//!
//! Each batch goes through the queue's own call path, so it is retried as
//! [`Queue::push_batch`] is: by default only when it surely did not land
//! ([`PushRetries`](crate::retry::PushRetries)), so that no message is duplicated
//! unless the queue's retry policy chose at-least-once. The producer adds
//! no retries of its own.
//!
//! # Close and drop
//!
//! [`Producer::close`] stops taking messages, sends everything it holds and
//! waits for every outcome. Dropping the last handle does the same in the
//! background: the messages already sent to it are still pushed, and their
//! callers still get their outcomes. If the runtime shuts down first, every
//! message without an outcome yet, buffered or in a batch on its way, is
//! counted in a `tracing` error (batches on their way may have landed), and
//! its caller gets [`ProducerError::Dropped`]: never a silent loss.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::batch::{BatchPlanner, PlannedBatch, Rejected};
use crate::counters::add;
use crate::error::{Error, Result};
use crate::message::Message;
use crate::queue::Queue;
use crate::response::PushReceipt;
use crate::time::{after, sleep_until};

/// The default linger: a push takes tens of milliseconds, so 5 ms adds
/// little latency while letting concurrent senders fill a batch.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(5);
/// The default buffer: ten full batches wait at most, enough to keep the
/// default four batches in flight busy.
pub const DEFAULT_MAX_BUFFERED: usize = 1_000;
/// The default number of batches in flight at once.
pub const DEFAULT_MAX_CONCURRENT_BATCHES: usize = 4;

/// Why a message sent to a [`Producer`] did not land.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProducerError {
    /// The message breaks a limit on its own (its size, its delay): it was
    /// not sent, and the other messages were not held up.
    #[error("the message was refused before sending: {0}")]
    Rejected(Arc<Error>),
    /// The batch carrying the message failed; every message of that batch
    /// gets this error. [`Error::retry_class`] tells whether it may have
    /// landed anyway.
    #[error("the batch carrying the message failed: {0}")]
    Failed(Arc<Error>),
    /// The producer was closed before it took the message, which is handed back.
    #[error("the producer is closed")]
    Closed(Box<Message>),
    /// The producer's task ended (its runtime shut down) before the
    /// message's outcome was known: it may or may not have landed.
    #[error("the producer stopped before the message's outcome was known")]
    Dropped,
}

impl ProducerError {
    /// The error behind a rejected message or a failed batch.
    pub fn error(&self) -> Option<&Error> {
        match self {
            ProducerError::Rejected(error) | ProducerError::Failed(error) => Some(error),
            ProducerError::Closed(_) | ProducerError::Dropped => None,
        }
    }
}

/// What a producer did, as counts; see [`Producer::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProducerStats {
    /// Messages taken from the buffer into batches (refused ones included).
    pub accepted: u64,
    /// Batch pushes started (one request each, plus the queue's retries).
    pub batches: u64,
    /// Messages whose batch landed.
    pub landed: u64,
    /// Messages whose batch failed.
    pub failed: u64,
    /// Messages refused for breaking a limit on their own.
    pub rejected: u64,
    /// Messages in batches on their way.
    pub in_flight: u64,
}

crate::counters::live_counters!(
    /// The live counters, one atomic per [`ProducerStats`] field.
    ProducerCounters => ProducerStats {
        accepted,
        batches,
        landed,
        failed,
        rejected,
        in_flight,
    }
);

type SenderReply = oneshot::Sender<Result<PushReceipt, ProducerError>>;

enum Queued {
    Message(Message, SenderReply),
    Flush(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
}

/// An auto-batching producer for one queue; see [the module](self).
///
/// Cheap to clone: clones share the buffer, the batches and the counters.
///
/// # Drop
///
/// When the last handle is dropped, what the producer holds is pushed in
/// the background and its senders still get their outcomes; see
/// [Close and drop](self#close-and-drop).
#[derive(Clone, Debug)]
pub struct Producer {
    sender: mpsc::Sender<Queued>,
    closed: Arc<AtomicBool>,
    counters: Arc<ProducerCounters>,
}

impl std::fmt::Debug for Queued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Queued::Message(..) => "Message",
            Queued::Flush(_) => "Flush",
            Queued::Close(_) => "Close",
        })
    }
}

impl Producer {
    /// A builder for a producer pushing to `queue`, with the defaults.
    pub fn builder(queue: Queue) -> ProducerBuilder {
        ProducerBuilder {
            queue,
            linger: DEFAULT_LINGER,
            max_buffered: DEFAULT_MAX_BUFFERED,
            max_concurrent_batches: DEFAULT_MAX_CONCURRENT_BATCHES,
        }
    }

    /// Sends one message; the future resolves to that message's own outcome.
    ///
    /// The message is handed to the producer when the future is first
    /// polled, after waiting for room in the buffer (backpressure): create
    /// many of these futures and await them together to let them share
    /// batches. The future is `'static`: it can be spawned.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use cf_queues::Message;
    /// use cf_queues::producer::{Producer, ProducerError};
    /// # let emulator = cf_queues_emulator::Emulator::new().start().await?;
    /// # let queue = emulator.client()?.queue("events")?;
    /// let producer = Producer::builder(queue).build()?;
    /// // Spawned: the outcome is awaited elsewhere, the message batched meanwhile.
    /// let pending = tokio::spawn(producer.send(Message::text("hello")));
    /// match producer.send(Message::text("x".repeat(200_000))).await {
    ///     Err(ProducerError::Rejected(error)) => println!("refused alone: {error}"),
    ///     other => panic!("{other:?}"),
    /// }
    /// pending.await??;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ProducerError::Rejected`] for a message that breaks a limit on its
    /// own, [`ProducerError::Failed`] when its batch failed,
    /// [`ProducerError::Closed`] after [`Producer::close`], and
    /// [`ProducerError::Dropped`] when the runtime shut down first.
    ///
    /// # Cancellation
    ///
    /// Dropping the future before the producer took the message sends
    /// nothing; after, the message is still pushed, and only its outcome is
    /// lost.
    pub fn send(
        &self,
        message: Message,
    ) -> impl Future<Output = Result<PushReceipt, ProducerError>> + Send + use<> {
        let sender = self.sender.clone();
        let closed = Arc::clone(&self.closed);
        async move {
            if closed.load(Ordering::Acquire) {
                return Err(ProducerError::Closed(Box::new(message)));
            }
            let Ok(permit) = sender.reserve().await else {
                return Err(ProducerError::Closed(Box::new(message)));
            };
            let (reply, outcome) = oneshot::channel();
            permit.send(Queued::Message(message, reply));
            // Only the handles keep the producer open: once they are all
            // dropped it flushes, even while outcomes are awaited.
            drop(sender);
            outcome.await.unwrap_or(Err(ProducerError::Dropped))
        }
    }

    /// Sends what is buffered now, without waiting for the linger, and
    /// waits until every message handed over before this call has its
    /// outcome. After [`Producer::close`] it returns at once.
    pub async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.sender.send(Queued::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
    }

    /// Closes the producer for every handle: later sends fail with
    /// [`ProducerError::Closed`]; everything handed over before is pushed,
    /// and this waits until all of it has its outcome. Returns the counts.
    pub async fn close(&self) -> ProducerStats {
        self.closed.store(true, Ordering::Release);
        let (done, closed) = oneshot::channel();
        if self.sender.send(Queued::Close(done)).await.is_ok() {
            let _ = closed.await;
        } else {
            // Closed already: wait for the producer's task to finish.
            self.sender.closed().await;
        }
        self.counters.snapshot()
    }

    /// What the producer did so far.
    pub fn stats(&self) -> ProducerStats {
        self.counters.snapshot()
    }
}

/// Configures a [`Producer`]. Every setting has a default, given with its
/// reason on each method.
#[derive(Debug, Clone)]
#[must_use]
pub struct ProducerBuilder {
    queue: Queue,
    linger: Duration,
    max_buffered: usize,
    max_concurrent_batches: usize,
}

impl ProducerBuilder {
    /// How long the first message of a batch waits for others before the
    /// batch is sent anyway; a full batch goes at once. Default
    /// [`DEFAULT_LINGER`] (5 ms): a push takes tens of milliseconds, so it
    /// adds little latency while concurrent senders fill a batch.
    /// [`Duration::MAX`] sends a batch only when it is full, at
    /// [`Producer::flush`] and at close.
    pub fn linger(mut self, linger: Duration) -> ProducerBuilder {
        self.linger = linger;
        self
    }

    /// How many messages may wait for a batch before senders wait too
    /// (backpressure); at least 1. Default [`DEFAULT_MAX_BUFFERED`] (1,000):
    /// ten full batches, enough to keep the default batches in flight busy.
    pub fn max_buffered(mut self, messages: usize) -> ProducerBuilder {
        self.max_buffered = messages;
        self
    }

    /// How many batches may be on their way at once; at least 1. Default
    /// [`DEFAULT_MAX_CONCURRENT_BATCHES`] (4): enough to hide a push's round
    /// trip under load, few enough to stay far from Cloudflare's 429s.
    pub fn max_concurrent_batches(mut self, batches: usize) -> ProducerBuilder {
        self.max_concurrent_batches = batches;
        self
    }

    /// Starts the producer's task.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a buffer or a concurrency of 0.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn build(self) -> Result<Producer> {
        if self.max_buffered == 0 {
            return Err(Error::invalid("max_buffered", "must be at least 1"));
        }
        let max_batches = self
            .max_concurrent_batches
            .min(Semaphore::MAX_PERMITS)
            .min(u32::MAX as usize);
        if max_batches == 0 {
            return Err(Error::invalid(
                "max_concurrent_batches",
                "must be at least 1",
            ));
        }
        let (sender, receiver) = mpsc::channel(self.max_buffered);
        let counters = Arc::new(ProducerCounters::default());
        let worker = Worker {
            planner: BatchPlanner::new(*self.queue.client().limits()),
            queue: self.queue,
            receiver,
            linger: self.linger,
            permits: Arc::new(Semaphore::new(max_batches)),
            max_batches: max_batches as u32,
            counters: Arc::clone(&counters),
            closers: Vec::new(),
            finished: false,
        };
        tokio::spawn(worker.run());
        Ok(Producer {
            sender,
            closed: Arc::new(AtomicBool::new(false)),
            counters,
        })
    }
}

/// The producer's task: owns the buffer's receiving end and the open batch.
struct Worker {
    queue: Queue,
    receiver: mpsc::Receiver<Queued>,
    planner: BatchPlanner<SenderReply>,
    linger: Duration,
    permits: Arc<Semaphore>,
    max_batches: u32,
    counters: Arc<ProducerCounters>,
    closers: Vec<oneshot::Sender<()>>,
    finished: bool,
}

impl Worker {
    async fn run(mut self) {
        let mut deadline: Option<Instant> = None;
        loop {
            let item = tokio::select! {
                biased;
                item = self.receiver.recv() => item,
                () = sleep_until(deadline) => {
                    deadline = None;
                    self.send_open().await;
                    continue;
                }
            };
            match item {
                Some(Queued::Message(message, reply)) => {
                    add(&self.counters.accepted, 1);
                    match self.planner.add(reply, message) {
                        Err(Rejected { tag, error }) => {
                            add(&self.counters.rejected, 1);
                            let _ = tag.send(Err(ProducerError::Rejected(Arc::new(error))));
                        }
                        Ok(Some(full)) => self.dispatch(full).await,
                        Ok(None) => {}
                    }
                    if self.planner.is_full() {
                        deadline = None;
                        self.send_open().await;
                    } else if self.planner.pending() == 1 {
                        // This message opened a batch: its linger starts now.
                        // A linger too long for the clock means: only when
                        // full, flushed or closed.
                        deadline = after(Instant::now(), self.linger);
                    }
                }
                Some(Queued::Flush(done)) => {
                    deadline = None;
                    self.send_open().await;
                    let all = Arc::clone(&self.permits);
                    let max = self.max_batches;
                    // The semaphore is fair: this waits for the batches sent
                    // so far, not for later ones.
                    tokio::spawn(async move {
                        let _all = all.acquire_many(max).await;
                        let _ = done.send(());
                    });
                }
                Some(Queued::Close(done)) => {
                    // What is in the buffer still goes; nothing more comes in.
                    self.receiver.close();
                    self.closers.push(done);
                }
                None => {
                    self.send_open().await;
                    let _all = self.permits.acquire_many(self.max_batches).await;
                    self.finished = true;
                    for done in self.closers.drain(..) {
                        let _ = done.send(());
                    }
                    return;
                }
            }
        }
    }

    async fn send_open(&mut self) {
        if let Some(batch) = self.planner.take() {
            self.dispatch(batch).await;
        }
    }

    /// Sends a batch once a slot is free, in a task of its own.
    async fn dispatch(&mut self, batch: PlannedBatch<SenderReply>) {
        let Ok(permit) = Arc::clone(&self.permits).acquire_owned().await else {
            return;
        };
        let count = batch.len() as u64;
        add(&self.counters.batches, 1);
        add(&self.counters.in_flight, count);
        let queue = self.queue.clone();
        let counters = Arc::clone(&self.counters);
        let span = tracing::info_span!(
            "send",
            otel.name = %format_args!("send {}", queue.id()),
            otel.kind = "producer",
            messaging.system = "cloudflare_queues",
            messaging.destination.name = queue.id(),
            messaging.operation.type = "send",
            messaging.operation.name = "send",
            messaging.batch.message_count = count,
        );
        tokio::spawn(
            async move {
                let (replies, result) = queue.push_planned(batch).await;
                match result {
                    Ok(receipt) => {
                        add(&counters.landed, count);
                        for reply in replies {
                            let _ = reply.send(Ok(receipt));
                        }
                    }
                    Err(error) => {
                        add(&counters.failed, count);
                        tracing::warn!(messages = count, %error, "a batch push failed");
                        let error = Arc::new(error);
                        for reply in replies {
                            let _ = reply.send(Err(ProducerError::Failed(Arc::clone(&error))));
                        }
                    }
                }
                counters.in_flight.fetch_sub(count, Ordering::Relaxed);
                drop(permit);
            }
            .instrument(span),
        );
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Only a runtime shutting down ends the task early. The buffer's
        // items hold replies too; flushes and closes there are not messages.
        let mut buffered = self.planner.pending() as u64;
        while let Ok(item) = self.receiver.try_recv() {
            if matches!(item, Queued::Message(..)) {
                buffered += 1;
            }
        }
        // Batches already spawned die with the runtime as well: they count
        // until their outcome is sent, which now never happens.
        let in_flight = self.counters.in_flight.load(Ordering::Relaxed);
        let messages = buffered + in_flight;
        if messages > 0 {
            tracing::error!(
                queue = self.queue.id(),
                messages,
                in_flight,
                "the producer stopped with messages whose outcome is unknown (those in flight may have landed); their senders get ProducerError::Dropped"
            );
        }
    }
}
