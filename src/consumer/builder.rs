//! [`ConsumerBuilder`]: every setting, its default and why, checked once
//! in `build`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::instance::{Instance, Kind};

/// Configures a [`Consumer`]. Every setting has a default, given with its
/// reason on each method.
#[must_use]
pub struct ConsumerBuilder {
    pub(super) queue: Queue,
    pub(super) settings: Settings,
    pub(super) token: Option<CancellationToken>,
    pub(super) poison: Option<PoisonFn>,
    pub(super) instance: Option<String>,
}

impl fmt::Debug for ConsumerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsumerBuilder")
            .field("queue", &self.queue.id())
            .field("settings", &self.settings)
            .field("on_poison", &self.poison.is_some())
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl ConsumerBuilder {
    crate::__setters! {
        /// Messages asked for per pull, 1 to 100; fewer when fewer slots are
        /// free. Default [`DEFAULT_BATCH_SIZE`] (100), the API's maximum: the
        /// fewest requests to drain a busy queue.
        batch_size(batch_size: u32) => self.settings.batch_size;

        /// The lease each pull asks for, and each extension adds. Default
        /// [`DEFAULT_VISIBILITY_TIMEOUT`] (30 s, Cloudflare's default): leases
        /// are extended while handlers run, so a short one costs slow handlers
        /// nothing and brings back a crashed consumer's messages soon.
        visibility_timeout(timeout: Duration) => self.settings.visibility_timeout;

        /// The most messages leased and not yet settled at once; pulls ask for
        /// no more than the free slots. Default [`DEFAULT_MAX_IN_FLIGHT`]
        /// (2,000): at a 200 ms round trip the pulls on their way hold 1,000
        /// at Cloudflare's rate, and as many again wait for handlers.
        max_in_flight(messages: usize) => self.settings.max_in_flight;

        /// A soft limit on the body bytes in flight: no pull starts while it
        /// is reached (sizes are known only after a pull, so one pull may pass
        /// it). Default [`DEFAULT_MAX_BYTES_IN_FLIGHT`] (100 MB, Pub/Sub's
        /// default), which bounds memory when bodies are large.
        max_bytes_in_flight(bytes: usize) => self.settings.max_bytes_in_flight;

        /// Acks and retries per ack call: a flush starts as soon as this many
        /// wait. Default [`DEFAULT_ACK_BATCH_SIZE`] (100, like a pull; no limit
        /// per call is documented).
        ack_batch_size(size: usize) => self.settings.ack_batch_size;

        /// The longest an ack or retry waits for others before it is flushed.
        /// Default [`DEFAULT_ACK_INTERVAL`] (100 ms): short next to any lease,
        /// long enough to gather acks under load. [`Duration::MAX`] flushes by
        /// size only (and at shutdown).
        ack_interval(interval: Duration) => self.settings.ack_interval;

        /// The delay of retried messages, keyed on their attempts. Default
        /// [`RetryDelay::default`]: 1 s, doubling per attempt, at most 5
        /// minutes, so that a failing dependency is not hammered and a message
        /// is not held back long.
        retry_delay(policy: RetryDelay) => self.settings.retry_delay;
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
    /// `max`. A server's `Retry-After` that is longer is honoured instead, up
    /// to the queue's [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after)
    /// (60 s), and one shorter never shortens it (see
    /// [the caps](crate::retry#the-caps-on-a-servers-wait)).
    /// Default 1 s to 30 s: past the client's own quick retries, an outage
    /// is likely to last.
    pub fn error_backoff(mut self, initial: Duration, max: Duration) -> ConsumerBuilder {
        self.settings.error_backoff = Backoff::new(initial, max);
        self
    }

    /// Reads the queue's backlog with its `metrics()` call every `every`
    /// while the consumer runs, for the gauges an autoscaler reads
    /// (`cf_queues.queue.backlog.messages`, `.bytes`, and
    /// `cf_queues.queue.oldest_message.age`, with the `metrics` feature;
    /// see [`BacklogReader`](super::BacklogReader)). Off by default: each
    /// reading is a call of the token's 1,200 in five minutes
    /// ([`DEFAULT_BACKLOG_INTERVAL`](super::DEFAULT_BACKLOG_INTERVAL), 30 s,
    /// costs 10 of them); at least
    /// [`MIN_BACKLOG_INTERVAL`](super::MIN_BACKLOG_INTERVAL) (5 s). One
    /// replica reading is enough for an autoscaler: every reader reads the
    /// same queue.
    pub fn read_backlog(mut self, every: Duration) -> ConsumerBuilder {
        self.settings.backlog_interval = Some(every);
        self
    }

    crate::__setters! {
        /// The longest a message's lease is extended to, from its pull: past
        /// it the lease runs out, which is counted in
        /// [`Summary::max_lease_reached`] and, once expired, in
        /// [`Summary::leases_lost`]. Default [`DEFAULT_MAX_LEASE`] (1 hour,
        /// Pub/Sub's default): a handler slower than that is more likely stuck.
        /// [`Duration::MAX`] extends leases for as long as handlers run.
        max_lease(max: Duration) => self.settings.max_lease;

        /// How long before its estimated expiry a lease is extended; less than
        /// the visibility timeout. Default a third of the visibility timeout
        /// (10 s of 30 s): room for an extension call and its retries.
        extend_margin(margin: Duration) => self.settings.extend_margin = Some;

        /// How long handlers in flight may run after shutdown starts before
        /// their messages are released. Default [`DEFAULT_GRACE_PERIOD`]
        /// (10 s): leaves time to release and flush within Kubernetes' default
        /// 30 s termination grace. [`Duration::MAX`] waits for every handler,
        /// however long it runs.
        grace_period(grace: Duration) => self.settings.grace_period;

        /// How long the last acks and retries get at shutdown, after the grace
        /// period; what is still unsent then is counted in
        /// [`Summary::unflushed`]. Default [`DEFAULT_FLUSH_TIMEOUT`] (10 s):
        /// [`Consumer::run`] returns within `grace_period + flush_timeout`,
        /// inside Kubernetes' default 30 s termination grace.
        flush_timeout(timeout: Duration) => self.settings.flush_timeout;

        /// The most pulls on their way at once. The consumer adapts how many it
        /// keeps in flight: more while pulls come back full and handlers keep
        /// up, fewer after partial or empty pulls, 429s and errors. Default
        /// [`DEFAULT_MAX_PULLS_IN_FLIGHT`] (16): at a 200 ms round trip, above
        /// what Cloudflare serves one queue.
        max_pulls_in_flight(pulls: usize) => self.settings.max_pulls_in_flight;

        /// The most of the queue's allowance this consumer takes: the messages
        /// a second it pulls, and separately the leases a second it settles or
        /// extends, at most. Default [`DEFAULT_QUEUE_ALLOWANCE`] (4,900, 98 % of
        /// Cloudflare's per-queue limit of 5,000 of each), so that a consumer
        /// alone stays under the limit instead of finding it.
        ///
        /// Replicas of one queue (several processes, each with its own client)
        /// need no setting to share the allowance: each reads how fast the
        /// queue's backlog falls and adapts its pace below this, so that
        /// together they stay under the queue's limit; see "Running several
        /// replicas" in the [module docs](super). This stays one replica's
        /// upper bound.
        /// `u32::MAX` paces nothing (against a local server, say).
        queue_allowance(per_second: u32) => self.settings.queue_allowance;

        /// The queue's limit the replicas keep under together: the messages a
        /// second the queue serves, pulled and (separately) settled or extended,
        /// to all its consumers. Default [`DEFAULT_QUEUE_LIMIT`] (5,000, what
        /// Cloudflare documents); the share of the allowance reads the
        /// backlog's fall against it. Set it when the server's limit differs
        /// (an emulator with scaled-down limits, say); nothing checks it before
        /// sending.
        queue_limit(per_second: u32) => self.settings.queue_limit;
    }

    /// The former name of [`queue_allowance`](ConsumerBuilder::queue_allowance).
    #[deprecated(since = "0.3.0", note = "renamed queue_allowance")]
    pub fn queue_budget(self, per_second: u32) -> ConsumerBuilder {
        self.queue_allowance(per_second)
    }

    crate::__setters! {
        /// The most settlements on their way to the API at once (handled, not
        /// yet answered); past it, pulling waits. Default
        /// [`DEFAULT_MAX_PENDING_SETTLEMENTS`] (5,000, a second of Cloudflare's
        /// per-queue rate): a failing ack endpoint does not let leases pile up.
        /// At least [`ack_batch_size`](ConsumerBuilder::ack_batch_size).
        max_pending_settlements(settlements: usize) => self.settings.max_pending_settlements;

        /// Shuts the consumer down when `token` is cancelled. Default: a token
        /// of its own, from [`Consumer::shutdown_token`].
        shutdown_token(token: CancellationToken) => self.token = Some;
    }

    /// What to do with messages whose body cannot be decoded (`v8`, an
    /// unknown content type, bad base64 or JSON): `callback` gets the
    /// message and why, and returns its outcome. Default: retry with the
    /// retry delay, so that the message reaches the dead-letter queue after
    /// the queue's `max_retries`.
    ///
    /// ```no_run
    /// # fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use cf_queues::consumer::{Consumer, Verdict};
    /// let consumer = Consumer::builder(queue)
    ///     .on_poison(|message, error| async move {
    ///         eprintln!("dropping undecodable message {}: {error}", message.id);
    ///         Verdict::Ack
    ///     })
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn on_poison<F, Fut>(mut self, callback: F) -> ConsumerBuilder
    where
        F: Fn(PulledMessage, BodyError) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Verdict> + Send + 'static,
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

    /// The consumer's label in its gauges (`cf_queues.instance`, under the
    /// `metrics` feature), which tells two consumers of one queue in one
    /// process apart: 1 to 64 ASCII letters, digits, `.`, `_` or `-`, never
    /// a secret. Default: the smallest number no other living consumer of
    /// the process holds (`"1"`, `"2"`, …), given back when it is dropped.
    pub fn instance(mut self, name: impl Into<String>) -> ConsumerBuilder {
        self.instance = Some(name.into());
        self
    }

    /// The consumer.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`], naming the setting, for a batch size
    /// outside 1 to 100, a visibility timeout under
    /// [`MIN_VISIBILITY_TIMEOUT`] (1 s) or over 12 hours, a zero limit, an
    /// ack batch size above `max_pending_settlements`, a maximum lease
    /// shorter than the visibility timeout, an extension margin not
    /// below it, or an [`instance`](ConsumerBuilder::instance) name that is
    /// not a short label.
    pub fn build(self) -> Result<Consumer> {
        let mut settings = self.settings;
        settings.check(self.queue.client().limits())?;
        let instance = Instance::new(Kind::Consumer, self.instance.as_deref())?;
        let token = self.token.unwrap_or_default();
        let shared = Arc::new(ConsumerState::new(
            self.queue,
            settings,
            token.child_token(),
            instance,
        ));
        let poison = self.poison.unwrap_or_else(|| {
            Arc::new(|leased: Leased, _error: BodyError| {
                Box::pin(async move {
                    let (_, ticket) = leased.into_parts();
                    stream::settle_ticket(ticket, Verdict::Retry(None));
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
