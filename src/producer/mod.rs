//! An auto-batching producer (feature `producer`): many callers send one
//! message each; the producer packs them into as few batch pushes as the
//! limits allow, and gives each caller its own outcome.
//!
//! A batch is cut by a [`BatchPlanner`] (at most 100 messages and 256 KB,
//! counted as the API counts them) and sent as soon as it is full, or once
//! its first message has waited the linger, and a slot and the token's budget
//! are there. Up to [`ProducerBuilder::max_concurrent_batches`] batches are
//! in flight at once; a bounded buffer in front of the batches makes
//! senders wait (backpressure) instead of growing without bound.
//!
//! # Within the token's budget
//!
//! Pushes over the REST API count against Cloudflare's limit of 1,200
//! requests per five minutes per token (or user), and going over it blocks
//! every call of that token, the pulls and acks of a consumer sharing it
//! included, for five minutes. The client paces its calls by the server's
//! `Ratelimit` headers (see [`RateLimits`](crate::ratelimit::RateLimits)),
//! so a producer never goes over on its own: it sends about 3.86 batches a
//! second at most, which with full batches of 100 is about **386 messages
//! a second per token**, whatever the concurrency. To push more, use more
//! tokens (one client, and so one producer, per token), or push from a
//! Worker binding, which this limit does not cover.
//!
//! While a batch waits for the budget or for a free slot, it keeps filling,
//! up to 100 messages or 256 KB: under a steady load the budget goes to
//! full batches rather than to small ones sent early.
//!
//! # Running several replicas
//!
//! Replicas of one service (a Kubernetes deployment, a few VMs), each with
//! its own client, on one token share its budget with no coordinator and
//! no setting. Every answer's `Ratelimit: r=..` counts the whole token's
//! calls in the window, so each client rebuilds, from how `r` moves
//! between its own answers, what the others spend; it keeps to its share
//! of what the window has room for (its calls over the token's, over the
//! last 0.4 of the window), with its calls on their way bounded by that
//! share and no burst from stale figures, and holds when the window has no
//! room for one call of its share until, by the window's history, calls
//! leave it. A client that sees no one else paces as one alone.
//! [`ProducerStats::token_budget`] shows the figures it last saw, its share
//! and its pace; [`ProducerStats::budget_wait`] how long its batches waited.
//!
//! Backlogged producers, each its own client, through a 100 ms round trip
//! (BENCHMARKS.md, "Producer replicas on one token"):
//!
//! | replicas | Cloudflare's window (1,200 / 300 s, paused time) | window scaled to 120 / 30 s (wall clock) | 429s |
//! |---:|---:|---:|---:|
//! | 1 | 96.8 % of the budget | 96.1 % | 0 |
//! | 4 | 97.3 % | 96.9 % | 0 |
//! | 16 | 98.1 % | 94.2 % | 0 |
//!
//! Where it stops: each client sees the others only at its own answers, so
//! with many replicas its figures are sparse (sixteen replicas see an answer
//! each every four seconds) and it keeps a margin below the quota of one
//! call per replica its share implies (at most a tenth of the quota). It
//! was measured up to 16 replicas; beyond that, or with a window much
//! shorter than Cloudflare's, give each group of replicas a token of its
//! own. A process that does not pace (an unpaced client, another tool)
//! is seen as spending, and left room as long as it spends less than the
//! whole budget; a block it starts anyway is held through, as below.
//!
//! # Refused for the rate: held and sent again
//!
//! A 429 with code 971 (the token's budget, up to Cloudflare's five-minute
//! block) or 10250 (the queue's own rate) says that nothing landed. The
//! batch is then held and sent again, for as long as its
//! [`send_timeout`](ProducerBuilder::send_timeout) allows, counted from
//! when the producer took its oldest message; past it, each of its senders
//! gets [`ProducerError::TimedOut`] (nothing landed, and how many attempts
//! were refused). What one refusal does to everything behind it:
//!
//! - the refused batch waits for what the refusal asked (its
//!   `Retry-After`, never less than the retry policy's backoff, which
//!   doubles, and never more than five minutes: see [the caps on a server's
//!   wait](crate::retry#the-caps-on-a-servers-wait)) and then for the pacer
//!   (which holds every counted call of the token through a block), so that
//!   resends never come faster than the server asked nor back to back;
//! - each refusal halves the batches in flight (at least one; it climbs
//!   back by one after as many successes as it allows), and the held batch
//!   keeps its place: after two refusals it is the only one on its way,
//!   and the later batches wait behind it, still filling, while the buffer
//!   holds senders back. Nothing is dropped; batches in flight together may
//!   land in any order, as always;
//! - the send timeout of a message runs while it waits behind a held
//!   batch: a batch that reaches its first attempt after its timeout still
//!   gets that one attempt, but no resend.
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
//! | [`max_concurrent_batches`](ProducerBuilder::max_concurrent_batches) | 4 | hides a push's round trip; the token's budget, not this, bounds the pace |
//! | [`send_timeout`](ProducerBuilder::send_timeout) | 10 min | a batch refused for the rate outlasts a five-minute block; its senders still learn within a bound |
//!
//! # Retries
//!
//! Each batch goes through the queue's own call path, so it is retried as
//! [`Queue::push_batch`] is: by default only when it surely did not land
//! ([`PushRetries`](crate::retry::PushRetries)), so that no message is duplicated
//! unless the queue's retry policy chose at-least-once. The producer adds
//! one kind of resend of its own, which cannot duplicate either: a batch
//! refused for the rate is sent again until its send timeout (above).
//!
//! # Close and drop
//!
//! [`Producer::close`] stops taking messages, sends everything it holds and
//! waits for every outcome. Dropping the last handle does the same in the
//! background: the messages already sent to it are still pushed, and their
//! callers still get their outcomes. If the runtime shuts down first, every
//! message without an outcome yet, buffered or in a batch on its way, is
//! counted in a `tracing` error (batches on their way may have landed), and
//! its caller gets [`ProducerError::Dropped`], which says whether it may
//! have landed: never a silent loss.
//!
//! # Did it land?
//!
//! [`ProducerError::may_have_landed`] tells each sender whether its message
//! may have been pushed all the same (a batch whose answer was lost, a 5xx,
//! a timeout), so that it can choose to send it again and risk a
//! duplicate, or not.

mod worker;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::Client;
use crate::batch::BatchPlanner;
use crate::error::{Error, Result};
use crate::instance::{Instance, Kind};
use crate::message::Message;
use crate::queue::Queue;
use crate::ratelimit::TokenBudget;
use crate::response::PushReceipt;
use worker::{Flow, Worker};

/// The default linger: a push takes tens of milliseconds, so 5 ms adds
/// little latency while letting concurrent senders fill a batch.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(5);
/// The default buffer: ten full batches wait at most, enough to keep the
/// default four batches in flight busy.
pub const DEFAULT_MAX_BUFFERED: usize = 1_000;
/// The default number of batches in flight at once.
pub const DEFAULT_MAX_CONCURRENT_BATCHES: usize = 4;
/// The default send timeout: ten minutes, so that a batch outlasts one of
/// Cloudflare's five-minute blocks and the pacing after it, while a token
/// blocked again and again (shared with a process that does not pace
/// itself) or a queue overloaded for minutes fails its senders within a
/// bound they can plan for.
pub const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a message sent to a [`Producer`] did not land.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProducerError {
    /// The message breaks a limit on its own (its size, its delay): it was
    /// not sent, and the other messages were not held up.
    #[error("the message was refused before sending: {0}")]
    Rejected(Arc<Error>),
    /// The batch carrying the message failed; every message of that batch
    /// gets this error. [`ProducerError::may_have_landed`] tells whether it
    /// may have landed anyway.
    #[error("the batch carrying the message failed: {0}")]
    Failed(Arc<Error>),
    /// The message's batch was refused for the rate on every attempt (a 429
    /// with code 971 or 10250, or held back by the pacer: nothing landed)
    /// until its [send timeout](ProducerBuilder::send_timeout) passed, or
    /// would have before the next attempt could go.
    #[error(
        "not pushed within the send timeout of {timeout:?}: {attempts} attempts refused for the rate, nothing landed; the last: {last}"
    )]
    #[non_exhaustive]
    TimedOut {
        /// The send timeout in force.
        timeout: Duration,
        /// How many requests carried the batch, every one refused.
        attempts: u32,
        /// The last refusal.
        last: Arc<Error>,
    },
    /// The producer was closed before it took the message, which is handed back.
    #[error("the producer is closed")]
    Closed(Box<Message>),
    /// The producer's task ended (its runtime shut down) before the
    /// message's outcome was known.
    #[error("the producer stopped before the message's outcome was known{}", if *may_have_landed { " (it may have landed)" } else { " (it was not sent)" })]
    #[non_exhaustive]
    Dropped {
        /// Whether its batch was on its way (it may have landed), rather
        /// than the message still waiting in the producer (it did not).
        may_have_landed: bool,
    },
}

impl ProducerError {
    /// The error behind a rejected message or a failed batch.
    pub fn error(&self) -> Option<&Error> {
        match self {
            ProducerError::Rejected(error)
            | ProducerError::Failed(error)
            | ProducerError::TimedOut { last: error, .. } => Some(error),
            ProducerError::Closed(_) | ProducerError::Dropped { .. } => None,
        }
    }

    /// Whether the message may have landed despite this error, so that
    /// sending it again may duplicate it: see [`Error::may_have_landed`]
    /// for a failed batch; a rejected message, one whose batch was refused
    /// until its send timeout, one the closed producer handed back, and one
    /// still waiting when the producer stopped did not land.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use cf_queues::Message;
    /// use cf_queues::producer::Producer;
    /// # let emulator = cf_queues_emulator::Emulator::new().start().await?;
    /// # let queue = emulator.client()?.queue("events")?;
    /// let producer = Producer::builder(queue).build()?;
    /// let message = Message::text("order 17");
    /// if let Err(error) = producer.send(message.clone()).await {
    ///     if !error.may_have_landed() {
    ///         // Surely not pushed: sending it again cannot duplicate it.
    ///         producer.send(message).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn may_have_landed(&self) -> bool {
        match self {
            ProducerError::Failed(error) => error.may_have_landed(),
            ProducerError::Dropped { may_have_landed } => *may_have_landed,
            ProducerError::Rejected(_)
            | ProducerError::TimedOut { .. }
            | ProducerError::Closed(_) => false,
        }
    }
}

/// What a producer did, as counts: a snapshot from [`ProducerMonitor::snapshot`]
/// (or [`Producer::stats`], [`Producer::close`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
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
    /// Push attempts refused with a 429 (retried or not).
    pub throttled: u64,
    /// Times the batches in flight allowed were lowered after a 429 with
    /// code 971 or 10250.
    pub slowdowns: u64,
    /// Times a batch refused for the rate (a 429 with code 971 or 10250)
    /// was held and sent again.
    pub held: u64,
    /// How long batches waited for the token's budget, added up: the
    /// pacing by the server's figures (this producer's share of them, when
    /// other users of the token spend too), and its blocks.
    pub budget_wait: Duration,
    /// The token's budget as the producer's client last saw it, and the
    /// share of it the client allows itself; `None` until an answer
    /// carried a `Ratelimit-Policy`, or when the client does not pace.
    /// See [Running several replicas](crate::producer#running-several-replicas).
    pub token_budget: Option<TokenBudget>,
}

crate::counters::live_counters!(
    /// The live counters, one per [`ProducerStats`] field, and the
    /// producer's other metrics (see [`crate::metrics`] under the `metrics`
    /// feature).
    ProducerCounters => ProducerStats {
        tallies {
            accepted,
            batches: counter("cf_queues.producer.batches"),
            landed: counter("messaging.client.sent.messages", "cf_queues.outcome" = "landed"),
            failed: counter("messaging.client.sent.messages", "cf_queues.outcome" = "failed"),
            rejected: counter("messaging.client.sent.messages", "cf_queues.outcome" = "rejected"),
            in_flight: gauge("cf_queues.producer.messages_in_flight"),
            throttled: counter("cf_queues.producer.throttled"),
            slowdowns,
            held,
        }
        filled {
            budget_wait,
            token_budget,
        }
        figures {
            batch_size: histogram("cf_queues.producer.batch.size"),
            budget_waits: histogram("cf_queues.producer.budget_wait"),
        }
    }
);

type SenderReply = oneshot::Sender<Result<PushReceipt, ProducerError>>;

/// A reply for a message that will not be sent: its producer stopped
/// before sending it.
fn not_sent(reply: SenderReply) {
    let _ = reply.send(Err(ProducerError::Dropped {
        may_have_landed: false,
    }));
}

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
    monitor: ProducerMonitor,
}

/// Reads a producer's counters while it runs, as
/// [`ConsumerMonitor`](crate::consumer::ConsumerMonitor) reads a
/// consumer's; cheap to clone, and it does not keep the producer open.
///
/// ```no_run
/// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
/// use cf_queues::producer::Producer;
/// let producer = Producer::builder(queue).build()?;
/// let monitor = producer.monitor();
/// tokio::spawn(async move {
///     loop {
///         tokio::time::sleep(std::time::Duration::from_secs(10)).await;
///         let s = monitor.snapshot();
///         println!("landed {}, in flight {}", s.landed, s.in_flight);
///     }
/// });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ProducerMonitor {
    counters: Arc<ProducerCounters>,
    /// Microseconds batches waited for the token's budget.
    budget_wait: Arc<AtomicU64>,
    client: Client,
}

impl ProducerMonitor {
    /// The counters as they are now.
    pub fn snapshot(&self) -> ProducerStats {
        let mut stats = self.counters.snapshot();
        stats.budget_wait = Duration::from_micros(self.budget_wait.load(Ordering::Relaxed));
        stats.token_budget = self.client.pacer().and_then(|pacer| pacer.token_budget());
        stats
    }
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
            send_timeout: DEFAULT_SEND_TIMEOUT,
            instance: None,
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
    /// [`ProducerError::TimedOut`] when it was refused for the rate until
    /// its send timeout,
    /// [`ProducerError::Closed`] after [`Producer::close`], and
    /// [`ProducerError::Dropped`] when the runtime shut down first. Each
    /// says whether the message may have landed
    /// ([`ProducerError::may_have_landed`]).
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
            // A reply dropped unsent: the producer's task died with its
            // runtime, maybe with the batch on its way.
            outcome.await.unwrap_or(Err(ProducerError::Dropped {
                may_have_landed: true,
            }))
        }
    }

    /// Sends what is buffered now, without waiting for the linger, and
    /// waits until every message handed over before this call has its
    /// outcome. After [`Producer::close`] it returns at once.
    ///
    /// # Cancellation
    ///
    /// Dropping the future stops the wait only: the messages are sent.
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
        self.stats()
    }

    /// What the producer did so far: its [monitor](Producer::monitor)'s
    /// snapshot now.
    pub fn stats(&self) -> ProducerStats {
        self.monitor.snapshot()
    }

    /// A handle that reads the producer's counters while it runs; see
    /// [`ProducerMonitor`].
    pub fn monitor(&self) -> ProducerMonitor {
        self.monitor.clone()
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
    send_timeout: Duration,
    instance: Option<String>,
}

impl ProducerBuilder {
    crate::__setters! {
        /// How long the first message of a batch waits for others before the
        /// batch is sent anyway; a full batch goes at once. Default
        /// [`DEFAULT_LINGER`] (5 ms): a push takes tens of milliseconds, so it
        /// adds little latency while concurrent senders fill a batch.
        /// [`Duration::MAX`] sends a batch only when it is full, at
        /// [`Producer::flush`] and at close.
        linger(linger: Duration) => self.linger;

        /// How many messages may wait for a batch before senders wait too
        /// (backpressure); at least 1. Default [`DEFAULT_MAX_BUFFERED`] (1,000):
        /// ten full batches, enough to keep the default batches in flight busy.
        max_buffered(messages: usize) => self.max_buffered;

        /// How many batches may be on their way at once; at least 1. Default
        /// [`DEFAULT_MAX_CONCURRENT_BATCHES`] (4): enough to hide a push's round
        /// trip under load. It does not set the pace: the client's pacing by
        /// the token's budget does (about 3.86 batches a second per token at
        /// Cloudflare's figures). A 429 with code 971 or 10250 halves it for a
        /// while.
        max_concurrent_batches(batches: usize) => self.max_concurrent_batches;

        /// How long a message may take to land, from when the producer takes it
        /// from the buffer, as far as refusals for the rate go: a batch refused
        /// with a 429 with code 971 or 10250 (nothing landed) is sent again,
        /// after the wait the refusal asked and the pacer's, until the timeout
        /// of its oldest message passes; then its senders get
        /// [`ProducerError::TimedOut`]. A resend that could only start after
        /// the timeout is not waited for. Default [`DEFAULT_SEND_TIMEOUT`] (10
        /// minutes): a batch outlasts one of Cloudflare's five-minute blocks,
        /// and its senders still learn within a bound. [`Duration::ZERO`] sends
        /// each batch once (the queue's retry policy aside); [`Duration::MAX`]
        /// until it lands. Other failures are not resent: see
        /// [Retries](self#retries).
        send_timeout(timeout: Duration) => self.send_timeout;
    }

    /// The producer's label in its gauges (`cf_queues.instance`, under the
    /// `metrics` feature), which tells two producers of one queue in one
    /// process apart: 1 to 64 ASCII letters, digits, `.`, `_` or `-`, never
    /// a secret. Default: the smallest number no other living producer of
    /// the process holds (`"1"`, `"2"`, …), given back when its task ends.
    pub fn instance(mut self, name: impl Into<String>) -> ProducerBuilder {
        self.instance = Some(name.into());
        self
    }

    /// Starts the producer's task.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a buffer or a concurrency of 0, or an
    /// [`instance`](ProducerBuilder::instance) name that is not a short label.
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
        let instance = Instance::new(Kind::Producer, self.instance.as_deref())?;
        let (sender, receiver) = mpsc::channel(self.max_buffered);
        let counters = Arc::new(ProducerCounters::new(self.queue.id(), instance.label()));
        let budget_wait = Arc::new(AtomicU64::new(0));
        let client = self.queue.client().clone();
        let worker = Worker {
            budget_wait: Arc::clone(&budget_wait),
            planner: BatchPlanner::new(*self.queue.client().limits()),
            queue_id: Arc::from(self.queue.id()),
            queue: self.queue,
            receiver,
            linger: self.linger,
            flow: Arc::new(Flow::new(max_batches)),
            permits: Arc::new(Semaphore::new(max_batches)),
            max_batches: max_batches as u32,
            send_timeout: self.send_timeout,
            counters: Arc::clone(&counters),
            sealed: None,
            linger_ends: None,
            linger_over: false,
            flushes: Vec::new(),
            closers: Vec::new(),
            drained: false,
            finished: false,
            _instance: instance,
        };
        tokio::spawn(worker.run());
        Ok(Producer {
            sender,
            closed: Arc::new(AtomicBool::new(false)),
            monitor: ProducerMonitor {
                counters,
                budget_wait,
                client,
            },
        })
    }
}
