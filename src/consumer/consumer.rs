//! [`Consumer`]: the runs (`run`, `run_batch`, `stream`) and what they
//! share: starting the tasks, handing out messages, joining at the end.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::*;

/// A pull consumer of one queue; see [the module](crate::consumer).
///
/// Made with [`Consumer::builder`]; started with [`Consumer::run`],
/// [`Consumer::run_batch`] or [`Consumer::stream`], which take it. A
/// consumer dropped before it was started has pulled nothing and leaves
/// nothing behind.
pub struct Consumer {
    pub(super) shared: Arc<ConsumerState>,
    pub(super) token: CancellationToken,
    pub(super) poison: PoisonFn,
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
            instance: None,
        }
    }

    /// The token that shuts the consumer down when cancelled.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// A switch that pauses and resumes the consumer's pulls while it runs
    /// (a downstream down, say); see [`PullSwitch`].
    pub fn pull_switch(&self) -> PullSwitch {
        PullSwitch {
            shared: Arc::clone(&self.shared),
        }
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
    /// The handler's [`Verdict`] settles the message; an `Err` retries it
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
        Fut: Future<Output = Result<Verdict, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let handler = Arc::new(handler);
        let each: EachFn = Arc::new(move |leased: Leased| {
            let handler = Arc::clone(&handler);
            let task = tokio::spawn(async move {
                let (message, ticket) = leased.into_parts();
                let span = crate::spans::process(ticket.shared.queue.id(), &message);
                let started = ticket.shared.counters.processed_ack.start();
                // A disabled span still costs its enter and exit on every poll.
                let result = if span.is_disabled() {
                    handler(message).await
                } else {
                    handler(message).instrument(span.clone()).await
                };
                finish_one(ticket, result, &span, started);
            });
            task.abort_handle()
        });
        self.start(Mode::Each(each)).await
    }

    /// Runs `handler` on the messages of each pull together, until the
    /// shutdown token is cancelled; returns what the consumer did.
    ///
    /// The handler returns one [`Verdict`] per message, in order. Messages
    /// without an outcome (a shorter list), and all of them after an `Err`
    /// or a panic, are retried with the [`RetryDelay`] for their attempts.
    /// Bodies that cannot be decoded go to the poison callback instead.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> Result<(), Box<dyn std::error::Error>> {
    /// use cf_queues::consumer::{Consumer, Verdict};
    /// let summary = Consumer::builder(queue)
    ///     .build()?
    ///     .run_batch(|messages| async move {
    ///         // One insert for the whole pull, say.
    ///         Ok::<_, std::convert::Infallible>(vec![Verdict::Ack; messages.len()])
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
        Fut: Future<Output = Result<Vec<Verdict>, E>> + Send + 'static,
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
                let span = crate::spans::process_batch(shared.queue.id(), messages.len());
                let started = shared.counters.processed_batch.start();
                let result = handler(messages).instrument(span.clone()).await;
                add(&shared.counters.handled, tickets.len() as u64);
                match &result {
                    Ok(_) => shared.counters.processed_batch.since(started),
                    Err(_) => shared.counters.processed_batch_error.since(started),
                }
                match result {
                    Ok(outcomes) => {
                        if outcomes.len() != tickets.len() {
                            tracing::warn!(parent: &span, messages = tickets.len(), outcomes = outcomes.len(),
                                "the batch handler returned a different number of outcomes; messages without one are retried");
                        }
                        let mut outcomes = outcomes.into_iter();
                        for ticket in tickets {
                            let outcome = outcomes.next().unwrap_or(Verdict::Retry(None));
                            stream::settle_ticket(ticket, outcome);
                        }
                    }
                    Err(error) => {
                        add(&shared.counters.handler_errors, 1);
                        tracing::warn!(parent: &span, %error, "the batch handler failed; its messages are retried");
                        for ticket in tickets {
                            stream::settle_ticket(ticket, Verdict::Retry(None));
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
        let grace_over = self.shared.grace_over.clone();
        let task = tokio::spawn(driver::drive(
            self.shared,
            Mode::Stream(sender),
            self.poison,
        ));
        LeaseStream {
            receiver,
            token,
            grace_over,
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
pub(super) fn joined(
    result: std::result::Result<Result<Summary, ConsumerError>, tokio::task::JoinError>,
) -> Result<Summary, ConsumerError> {
    match result {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => Err(ConsumerError::Cancelled),
    }
}

fn finish_one<E: fmt::Display>(
    ticket: Ticket,
    result: Result<Verdict, E>,
    span: &tracing::Span,
    started: Option<std::time::Instant>,
) {
    let counters = &ticket.shared.counters;
    add(&counters.handled, 1);
    let processed = match &result {
        Ok(Verdict::Ack) => &counters.processed_ack,
        Ok(Verdict::Retry(_)) => &counters.processed_retry,
        Ok(Verdict::Leave) => &counters.processed_leave,
        Err(_) => &counters.processed_error,
    };
    processed.since(started);
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(error) => {
            add(&counters.handler_errors, 1);
            tracing::warn!(parent: span, %error, "the handler failed; the message is retried");
            Verdict::Retry(None)
        }
    };
    stream::settle_ticket(ticket, outcome);
}
