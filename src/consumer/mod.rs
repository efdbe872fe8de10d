//! A pull-consumer runtime (feature `consumer`): pulls within flow-control
//! limits, runs handlers concurrently, keeps their leases alive, batches
//! acks and retries, backs off on empty queues and failures, and shuts down
//! without losing a message.
//!
//! Build a [`Consumer`] from a [`Queue`] with [`Consumer::builder`], then
//! give it a handler of one message ([`Consumer::run`]), of one pull's
//! messages ([`Consumer::run_batch`]), or take its messages as a
//! [`Stream`](futures_util::Stream) ([`Consumer::stream`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cf_queues::Message;
//! use cf_queues::consumer::{Consumer, Outcome};
//! # let emulator = cf_queues_emulator::Emulator::new().start().await?;
//! # let queue = emulator.client()?.queue("orders")?;
//! queue.push(Message::text("hello")).await?;
//!
//! let consumer = Consumer::builder(queue).build()?;
//! let stop = consumer.shutdown_token();
//! let summary = consumer
//!     .run(move |message| {
//!         let stop = stop.clone();
//!         async move {
//!             let text = message.body().text()?.to_owned();
//!             println!("{text}");
//!             stop.cancel(); // one message is enough for this example
//!             Ok::<_, cf_queues::BodyError>(Outcome::Ack)
//!         }
//!     })
//!     .await?;
//! assert_eq!((summary.handled, summary.acked), (1, 1));
//! # Ok(()) }
//! ```
//!
//! # Settings
//!
//! | setting | default | why |
//! |---|---|---|
//! | [`batch_size`](ConsumerBuilder::batch_size) | 100 | the API's maximum: fewest requests |
//! | [`visibility_timeout`](ConsumerBuilder::visibility_timeout) | 30 s | Cloudflare's default; extended while handlers run |
//! | [`max_in_flight`](ConsumerBuilder::max_in_flight) | 1,000 messages | Pub/Sub's default; pulls and flushes overlap |
//! | [`max_bytes_in_flight`](ConsumerBuilder::max_bytes_in_flight) | 100 MB (soft) | Pub/Sub's default; bounds memory |
//! | [`ack_batch_size`](ConsumerBuilder::ack_batch_size) | 100 | like a pull; no documented limit |
//! | [`ack_interval`](ConsumerBuilder::ack_interval) | 100 ms | short next to a lease, gathers acks under load |
//! | [`retry_delay`](ConsumerBuilder::retry_delay) | 1 s, doubling, at most 5 min | spares a failing dependency |
//! | [`empty_backoff`](ConsumerBuilder::empty_backoff) | 100 ms to 5 s | short polling only; bounded latency |
//! | [`error_backoff`](ConsumerBuilder::error_backoff) | 1 s to 30 s | after the client's own retries, outages last |
//! | [`max_lease`](ConsumerBuilder::max_lease) | 1 hour | Pub/Sub's default; slower is likely stuck |
//! | [`extend_margin`](ConsumerBuilder::extend_margin) | a third of the visibility timeout | room for an extension and its retries |
//! | [`grace_period`](ConsumerBuilder::grace_period) | 10 s | fits Kubernetes' 30 s termination grace |
//! | [`max_flush_attempts`](ConsumerBuilder::max_flush_attempts) | 5 | about 15 s of trying, then reported |
//!
//! # Leases
//!
//! Each message's lease is extended while its handler runs, a margin
//! before it expires (a third of the visibility timeout by default), up to
//! a maximum total lease ([`ConsumerBuilder::max_lease`]). Expiry is
//! estimated on tokio's monotonic clock from when the pull (or the
//! extension) was sent, never from wall-clock time. A lease that runs out
//! before its message is settled (an extension failed, the maximum was
//! reached, a flush came late) is still settled, since Cloudflare accepts
//! late acks, and is counted in [`Summary::leases_lost`] and logged as a
//! possible duplicate delivery.
//!
//! # Failures
//!
//! Rate limits (429), server errors and network failures on pull back off
//! (honouring `Retry-After` up to 60 s) and carry on. Acks and retries that
//! fail are flushed again with backoff, up to
//! [`ConsumerBuilder::max_flush_attempts`], then reported in
//! [`Summary::unflushed`]. A pull that fails in a way retrying cannot fix
//! (bad credentials, a missing queue) stops the consumer with
//! [`ConsumerError::Stopped`], after the same orderly shutdown.
//!
//! Settlements are at least once on the wire. A flush that failed in a way
//! that may have reached the API anyway (a timeout, a 5xx) is sent again,
//! as the client's own retries do, and the API answers a repeat of an ack
//! it applied with a warning, not an error. A warning on such a resend is
//! counted in [`Summary::resend_warnings`]: most likely settled already,
//! else the lease was lost. A warning on a first send (the client's own
//! retries included, which the consumer cannot tell apart) is counted in
//! [`Summary::settle_warnings`] and [`Summary::leases_lost`].
//!
//! A pulled message without a lease id can be neither settled nor
//! extended: it is not handled, but logged, counted in
//! [`Summary::unsettleable`] and delivered again after the visibility
//! timeout; it never goes into an ack, where the API would refuse the rest.
//!
//! # Shutdown
//!
//! Cancel the token ([`Consumer::shutdown_token`], or the one given to
//! [`ConsumerBuilder::shutdown_token`]): the consumer stops pulling, lets
//! the handlers in flight finish within the grace period (their leases are
//! still extended), then releases the rest (retried with no delay, their
//! handler tasks cancelled), flushes every pending ack and retry, and
//! returns a [`Summary`].
//!
//! A pull already on its way is awaited, not cancelled, so that what it
//! leased is released rather than hidden until its lease expires: the
//! shutdown can take as long as that pull, which the client's timeouts and
//! retries bound. The messages it brings are released, never handled.
//!
//! # Poison messages
//!
//! A body that cannot be decoded (`v8`, an unknown content type, bad base64
//! or JSON) never reaches the handler: it goes to the poison callback
//! ([`ConsumerBuilder::on_poison`]), which decides its outcome. Without one,
//! it is retried with the retry delay, towards the queue's dead-letter queue,
//! and counted in [`Summary::poisoned`].
//!
//! # Tracing
//!
//! Spans `receive` (each pull), `process` (each handler call) and `settle`
//! (each ack call), and `extend`, carry OpenTelemetry's messaging attributes:
//! `messaging.system = "cloudflare_queues"`, `messaging.destination.name`,
//! `messaging.operation.type`, `messaging.batch.message_count`, with
//! `otel.name` and `otel.kind` for `tracing-opentelemetry`.

mod acker;
mod driver;
mod lease_keeper;
mod settings;
mod shared;
mod stream;
mod summary;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tracing::Instrument as _;

pub use settings::{
    DEFAULT_ACK_BATCH_SIZE, DEFAULT_ACK_INTERVAL, DEFAULT_BATCH_SIZE, DEFAULT_GRACE_PERIOD,
    DEFAULT_MAX_BYTES_IN_FLIGHT, DEFAULT_MAX_FLUSH_ATTEMPTS, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_LEASE, DEFAULT_VISIBILITY_TIMEOUT, RetryDelay,
};
pub use stream::{LeaseStream, Leased};
pub use summary::{ConsumerMonitor, Summary};
/// The token that shuts a consumer down, re-exported from `tokio-util`.
pub use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::counters::add;
use crate::error::{BodyError, Error, Result};
use crate::message::PulledMessage;
use crate::queue::Queue;
use driver::{BatchFn, EachFn, Mode, PoisonFn};
use settings::Settings;
use shared::{ConsumerState, Ticket};

/// `messaging.system` of every span.
const MESSAGING_SYSTEM: &str = "cloudflare_queues";

/// What to do with a handled message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Acknowledge it: it is deleted.
    Ack,
    /// Put it back: after this delay (at most 24 hours), or, with `None`,
    /// after the consumer's [`RetryDelay`] for its attempts.
    Retry(Option<Duration>),
    /// Stop extending its lease and let it expire: it comes back after the
    /// visibility timeout, with an attempt used.
    Leave,
}

/// Why a consumer stopped other than by its shutdown token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumerError {
    /// A pull failed in a way that retrying cannot fix (credentials, a
    /// missing queue); the consumer shut down in order first.
    #[error("the consumer stopped: {error}")]
    Stopped {
        /// The pull's error.
        #[source]
        error: Error,
        /// What the consumer did until then, shutdown included.
        summary: Box<Summary>,
    },
    /// The consumer's task was cancelled before it finished: its runtime
    /// is shutting down. What it did is unknown.
    #[error("the consumer's task was cancelled before it finished")]
    Cancelled,
}

impl ConsumerError {
    /// What the consumer did before it stopped, when known.
    pub fn summary(&self) -> Option<&Summary> {
        match self {
            ConsumerError::Stopped { summary, .. } => Some(summary),
            ConsumerError::Cancelled => None,
        }
    }
}

/// A pull consumer of one queue; see [the module](self).
///
/// Made with [`Consumer::builder`]; started with [`Consumer::run`],
/// [`Consumer::run_batch`] or [`Consumer::stream`], which take it. A
/// consumer dropped before it was started has pulled nothing and leaves
/// nothing behind.
pub struct Consumer {
    shared: Arc<ConsumerState>,
    token: CancellationToken,
    poison: PoisonFn,
}

impl fmt::Debug for Consumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("queue", &self.shared.queue.id())
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

impl Consumer {
    /// A builder for a consumer of `queue`, with the defaults.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cf_queues::Client;
    /// use cf_queues::consumer::{Consumer, RetryDelay};
    ///
    /// let queue = Client::builder()
    ///     .api_token("token")
    ///     .account_id("023e105f4ecef8ad9ca31a8372d0c353")
    ///     .build()?
    ///     .queue("orders")?;
    /// let consumer = Consumer::builder(queue)
    ///     .batch_size(50)
    ///     .visibility_timeout(Duration::from_secs(60))
    ///     .max_in_flight(200)
    ///     .retry_delay(RetryDelay::exponential(Duration::from_secs(5), Duration::from_secs(600)))
    ///     .build()?;
    /// # drop(consumer);
    /// # Ok::<(), cf_queues::Error>(())
    /// ```
    pub fn builder(queue: Queue) -> ConsumerBuilder {
        ConsumerBuilder {
            queue,
            settings: Settings::default(),
            token: None,
            poison: None,
        }
    }

    /// The token that shuts the consumer down when cancelled.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// A handle reading the consumer's counters while it runs.
    pub fn monitor(&self) -> ConsumerMonitor {
        ConsumerMonitor {
            counters: Arc::clone(&self.shared.counters),
        }
    }

    /// Runs `handler` on each message, concurrently, until the shutdown
    /// token is cancelled; returns what the consumer did.
    ///
    /// The handler's [`Outcome`] settles the message; an `Err` retries it
    /// with the [`RetryDelay`] for its attempts (and is logged). A handler
    /// that panics retries its message the same way. Handlers run in tasks
    /// of their own, at most [`ConsumerBuilder::max_in_flight`] at once.
    ///
    /// # Errors
    ///
    /// [`ConsumerError::Stopped`] when a pull failed in a way that retrying
    /// cannot fix, after an orderly shutdown.
    ///
    /// # Cancellation
    ///
    /// Dropping the returned future shuts the consumer down as cancelling
    /// its token does; the shutdown completes in the background.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime. And when one of the consumer's own tasks
    /// (the acker, the lease keeper) panicked, which is a bug: the consumer
    /// then stops, shuts down as far as it can without that task (without
    /// its acker, nothing more is flushed, and unsettled messages come back
    /// when their leases expire), and the panic is resumed here rather than
    /// passed off as a summary.
    pub async fn run<H, Fut, E>(self, handler: H) -> Result<Summary, ConsumerError>
    where
        H: Fn(PulledMessage) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let handler = Arc::new(handler);
        let each: EachFn = Arc::new(move |leased: Leased| {
            let handler = Arc::clone(&handler);
            let task = tokio::spawn(async move {
                let (message, ticket) = leased.into_parts();
                let span = driver::process_span(ticket.shared.queue.id(), &message);
                // A disabled span still costs its enter and exit on every poll.
                let result = if span.is_disabled() {
                    handler(message).await
                } else {
                    handler(message).instrument(span.clone()).await
                };
                finish_one(ticket, result, &span);
            });
            task.abort_handle()
        });
        self.start(Mode::Each(each)).await
    }

    /// Runs `handler` on the messages of each pull together, until the
    /// shutdown token is cancelled; returns what the consumer did.
    ///
    /// The handler returns one [`Outcome`] per message, in order. Messages
    /// without an outcome (a shorter list), and all of them after an `Err`
    /// or a panic, are retried with the [`RetryDelay`] for their attempts.
    /// Bodies that cannot be decoded go to the poison callback instead.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> Result<(), Box<dyn std::error::Error>> {
    /// use cf_queues::consumer::{Consumer, Outcome};
    /// let summary = Consumer::builder(queue)
    ///     .build()?
    ///     .run_batch(|messages| async move {
    ///         // One insert for the whole pull, say.
    ///         Ok::<_, std::convert::Infallible>(vec![Outcome::Ack; messages.len()])
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Consumer::run`].
    ///
    /// # Cancellation
    ///
    /// As [`Consumer::run`].
    ///
    /// # Panics
    ///
    /// As [`Consumer::run`].
    pub async fn run_batch<H, Fut, E>(self, handler: H) -> Result<Summary, ConsumerError>
    where
        H: Fn(Vec<PulledMessage>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Outcome>, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let handler = Arc::new(handler);
        let batch: BatchFn = Arc::new(move |leased: Vec<Leased>| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let (messages, tickets): (Vec<PulledMessage>, Vec<Ticket>) =
                    leased.into_iter().map(Leased::into_parts).unzip();
                let Some(first) = tickets.first() else {
                    return;
                };
                let shared = Arc::clone(&first.shared);
                let span = driver::process_batch_span(shared.queue.id(), messages.len());
                let result = handler(messages).instrument(span.clone()).await;
                add(&shared.counters.handled, tickets.len() as u64);
                match result {
                    Ok(outcomes) => {
                        if outcomes.len() != tickets.len() {
                            tracing::warn!(parent: &span, messages = tickets.len(), outcomes = outcomes.len(),
                                "the batch handler returned a different number of outcomes; messages without one are retried");
                        }
                        let mut outcomes = outcomes.into_iter();
                        for ticket in tickets {
                            let outcome = outcomes.next().unwrap_or(Outcome::Retry(None));
                            stream::settle_ticket(ticket, outcome);
                        }
                    }
                    Err(error) => {
                        add(&shared.counters.handler_errors, 1);
                        tracing::warn!(parent: &span, %error, "the batch handler failed; its messages are retried");
                        for ticket in tickets {
                            stream::settle_ticket(ticket, Outcome::Retry(None));
                        }
                    }
                }
            })
        });
        self.start(Mode::Batch(batch)).await
    }

    /// Starts the consumer in a task of its own and returns its messages
    /// as a stream; see [`LeaseStream`] and [`Leased`].
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn stream(self) -> LeaseStream {
        let (sender, receiver) = mpsc::unbounded_channel();
        let token = self.shared.stopping.clone();
        let task = tokio::spawn(driver::drive(
            self.shared,
            Mode::Stream(sender),
            self.poison,
        ));
        LeaseStream {
            receiver,
            token,
            task: Some(task),
        }
    }

    async fn start(self, mode: Mode) -> Result<Summary, ConsumerError> {
        // If this future is dropped, the consumer shuts down in the background.
        let guard = self.shared.stopping.clone().drop_guard();
        let task = tokio::spawn(driver::drive(self.shared, mode, self.poison));
        let joined_task = task.await;
        guard.disarm();
        joined(joined_task)
    }
}

/// The result of the consumer's task: a panic goes on to the caller.
fn joined(
    result: std::result::Result<Result<Summary, ConsumerError>, tokio::task::JoinError>,
) -> Result<Summary, ConsumerError> {
    match result {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => Err(ConsumerError::Cancelled),
    }
}

fn finish_one<E: fmt::Display>(ticket: Ticket, result: Result<Outcome, E>, span: &tracing::Span) {
    let counters = &ticket.shared.counters;
    add(&counters.handled, 1);
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(error) => {
            add(&counters.handler_errors, 1);
            tracing::warn!(parent: span, %error, "the handler failed; the message is retried");
            Outcome::Retry(None)
        }
    };
    stream::settle_ticket(ticket, outcome);
}

/// Configures a [`Consumer`]. Every setting has a default, given with its
/// reason on each method.
#[must_use]
pub struct ConsumerBuilder {
    queue: Queue,
    settings: Settings,
    token: Option<CancellationToken>,
    poison: Option<PoisonFn>,
}

impl fmt::Debug for ConsumerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsumerBuilder")
            .field("queue", &self.queue.id())
            .field("settings", &self.settings)
            .field("on_poison", &self.poison.is_some())
            .finish_non_exhaustive()
    }
}

impl ConsumerBuilder {
    /// Messages asked for per pull, 1 to 100; fewer when fewer slots are
    /// free. Default [`DEFAULT_BATCH_SIZE`] (100), the API's maximum: the
    /// fewest requests to drain a busy queue.
    pub fn batch_size(mut self, batch_size: u32) -> ConsumerBuilder {
        self.settings.batch_size = batch_size;
        self
    }

    /// The lease each pull asks for, and each extension adds. Default
    /// [`DEFAULT_VISIBILITY_TIMEOUT`] (30 s, Cloudflare's default): leases
    /// are extended while handlers run, so a short one costs slow handlers
    /// nothing and brings back a crashed consumer's messages soon.
    pub fn visibility_timeout(mut self, timeout: Duration) -> ConsumerBuilder {
        self.settings.visibility_timeout = timeout;
        self
    }

    /// The most messages leased and not yet settled at once; pulls ask for
    /// no more than the free slots. Default [`DEFAULT_MAX_IN_FLIGHT`]
    /// (1,000, Pub/Sub's default): ten full pulls, which keeps pulls and
    /// ack flushes overlapping.
    pub fn max_in_flight(mut self, messages: usize) -> ConsumerBuilder {
        self.settings.max_in_flight = messages;
        self
    }

    /// A soft limit on the body bytes in flight: no pull starts while it
    /// is reached (sizes are known only after a pull, so one pull may pass
    /// it). Default [`DEFAULT_MAX_BYTES_IN_FLIGHT`] (100 MB, Pub/Sub's
    /// default), which bounds memory when bodies are large.
    pub fn max_bytes_in_flight(mut self, bytes: usize) -> ConsumerBuilder {
        self.settings.max_bytes_in_flight = bytes;
        self
    }

    /// Acks and retries per ack call: a flush starts as soon as this many
    /// wait. Default [`DEFAULT_ACK_BATCH_SIZE`] (100, like a pull; no limit
    /// per call is documented).
    pub fn ack_batch_size(mut self, size: usize) -> ConsumerBuilder {
        self.settings.ack_batch_size = size;
        self
    }

    /// The longest an ack or retry waits for others before it is flushed.
    /// Default [`DEFAULT_ACK_INTERVAL`] (100 ms): short next to any lease,
    /// long enough to gather acks under load. [`Duration::MAX`] flushes by
    /// size only (and at shutdown).
    pub fn ack_interval(mut self, interval: Duration) -> ConsumerBuilder {
        self.settings.ack_interval = interval;
        self
    }

    /// The delay of retried messages, keyed on their attempts. Default
    /// [`RetryDelay::default`]: 1 s, doubling per attempt, at most 5
    /// minutes, so that a failing dependency is not hammered and a message
    /// is not held back long.
    pub fn retry_delay(mut self, policy: RetryDelay) -> ConsumerBuilder {
        self.settings.retry_delay = policy;
        self
    }

    /// The wait after an empty pull, doubling while pulls stay empty, at
    /// most `max`; after a pull that got fewer messages than asked, the
    /// consumer waits `initial`; after a full one it pulls again at once.
    /// Default 100 ms to 5 s: the API only polls short, and an idle
    /// consumer then sends one pull per 5 s while a new message waits at
    /// most that long.
    pub fn empty_backoff(mut self, initial: Duration, max: Duration) -> ConsumerBuilder {
        self.settings.empty_backoff = Backoff::new(initial, max);
        self
    }

    /// The wait after a failed pull or ack flush (429, 5xx, network; after
    /// the client's own retries), doubling while failures last, at most
    /// `max`; a server's `Retry-After` up to 60 s is honoured instead.
    /// Default 1 s to 30 s: past the client's own quick retries, an outage
    /// is likely to last.
    pub fn error_backoff(mut self, initial: Duration, max: Duration) -> ConsumerBuilder {
        self.settings.error_backoff = Backoff::new(initial, max);
        self
    }

    /// The longest a message's lease is extended to, from its pull: past
    /// it the lease runs out, which is counted in
    /// [`Summary::max_lease_reached`] and, once expired, in
    /// [`Summary::leases_lost`]. Default [`DEFAULT_MAX_LEASE`] (1 hour,
    /// Pub/Sub's default): a handler slower than that is more likely stuck.
    /// [`Duration::MAX`] extends leases for as long as handlers run.
    pub fn max_lease(mut self, max: Duration) -> ConsumerBuilder {
        self.settings.max_lease = max;
        self
    }

    /// How long before its estimated expiry a lease is extended; less than
    /// the visibility timeout. Default a third of the visibility timeout
    /// (10 s of 30 s): room for an extension call and its retries.
    pub fn extend_margin(mut self, margin: Duration) -> ConsumerBuilder {
        self.settings.extend_margin = Some(margin);
        self
    }

    /// How long handlers in flight may run after shutdown starts before
    /// their messages are released. Default [`DEFAULT_GRACE_PERIOD`]
    /// (10 s): leaves time to release and flush within Kubernetes' default
    /// 30 s termination grace. [`Duration::MAX`] waits for every handler,
    /// however long it runs.
    pub fn grace_period(mut self, grace: Duration) -> ConsumerBuilder {
        self.settings.grace_period = grace;
        self
    }

    /// How many times a failed ack flush is sent before its acks and
    /// retries are given up and reported in [`Summary::unflushed`]. Default
    /// [`DEFAULT_MAX_FLUSH_ATTEMPTS`] (5, each with the client's own
    /// retries): with the default backoff, about 15 s of trying.
    pub fn max_flush_attempts(mut self, attempts: u32) -> ConsumerBuilder {
        self.settings.max_flush_attempts = attempts;
        self
    }

    /// Shuts the consumer down when `token` is cancelled. Default: a token
    /// of its own, from [`Consumer::shutdown_token`].
    pub fn shutdown_token(mut self, token: CancellationToken) -> ConsumerBuilder {
        self.token = Some(token);
        self
    }

    /// What to do with messages whose body cannot be decoded (`v8`, an
    /// unknown content type, bad base64 or JSON): `callback` gets the
    /// message and why, and returns its outcome. Default: retry with the
    /// retry delay, so that the message reaches the dead-letter queue after
    /// the queue's `max_retries`.
    ///
    /// ```no_run
    /// # fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use cf_queues::consumer::{Consumer, Outcome};
    /// let consumer = Consumer::builder(queue)
    ///     .on_poison(|message, error| async move {
    ///         eprintln!("dropping undecodable message {}: {error}", message.id);
    ///         Outcome::Ack
    ///     })
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn on_poison<F, Fut>(mut self, callback: F) -> ConsumerBuilder
    where
        F: Fn(PulledMessage, BodyError) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        let callback = Arc::new(callback);
        self.poison = Some(Arc::new(move |leased: Leased, error: BodyError| {
            let callback = Arc::clone(&callback);
            Box::pin(async move {
                let (message, ticket) = leased.into_parts();
                let outcome = callback(message, error).await;
                stream::settle_ticket(ticket, outcome);
            })
        }));
        self
    }

    /// The consumer.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a batch size outside 1 to 100, a
    /// visibility timeout of 0 or over 12 hours, a zero limit, a maximum
    /// lease shorter than the visibility timeout, or an extension margin
    /// not below it.
    pub fn build(self) -> Result<Consumer> {
        let mut settings = self.settings;
        settings.check(self.queue.client().limits())?;
        let token = self.token.unwrap_or_default();
        let shared = Arc::new(ConsumerState::new(
            self.queue,
            settings,
            token.child_token(),
        ));
        let poison = self.poison.unwrap_or_else(|| {
            Arc::new(|leased: Leased, _error: BodyError| {
                Box::pin(async move {
                    let (_, ticket) = leased.into_parts();
                    stream::settle_ticket(ticket, Outcome::Retry(None));
                })
            })
        });
        Ok(Consumer {
            shared,
            token,
            poison,
        })
    }
}
