//! [`Queue`]: the six operations on one queue, and their options.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tracing::Instrument as _;

use crate::client::Client;
use crate::envelope::{Envelope, RawOutcome, call};
use crate::error::{Error, Result};
use crate::limits::check_token;
use crate::message::{LeaseId, Message, PeekRef, PeekedMessage};
use crate::raw::types;
use crate::response::{AckOutcome, PulledBatch, PurgeOutcome, PushReceipt, peeked};

/// A handle on one queue of a [`Client`]'s account.
///
/// Every method checks its input against the client's [`Limits`](crate::Limits)
/// before sending anything, then unwraps the API's envelope.
#[derive(Clone, Debug)]
pub struct Queue {
    client: Client,
    queue_id: String,
}

impl Queue {
    pub(crate) fn new(client: Client, queue_id: String) -> Queue {
        Queue { client, queue_id }
    }

    /// The queue's id.
    pub fn id(&self) -> &str {
        &self.queue_id
    }

    /// The client this handle belongs to.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Pushes one message.
    ///
    /// By default a failed push is retried only when it surely did not land
    /// (connection refused, 429), so a retry never duplicates the message;
    /// [`PushRetries::AtLeastOnce`](crate::PushRetries::AtLeastOnce) also
    /// retries after 5xx and timeouts.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use cf_queues::Message;
    /// queue.push(Message::text("hello")).await?;
    /// queue.push(Message::json(&serde_json::json!({"id": 1}))?).await?;
    /// # Ok(()) }
    /// ```
    pub async fn push(&self, message: Message) -> Result<PushReceipt> {
        let (wire, _) = message.to_wire(&"message", self.client.limits())?;
        let raw = self.client.raw();
        let result = self
            .send(
                "push_message",
                1,
                raw.push_message(self.client.account_id(), &self.queue_id, &wire),
            )
            .await?;
        Ok(result.into())
    }

    /// Pushes up to 100 messages (256 KB in total) in one request.
    ///
    /// Retried like [`Queue::push`]. For more messages than fit in one
    /// batch, use [`Queue::push_all`].
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use std::time::Duration;
    /// use cf_queues::{Batch, Message};
    /// let batch = Batch::new([Message::text("a"), Message::text("b")])
    ///     .with_delay(Duration::from_secs(10));
    /// queue.push_batch(batch).await?;
    /// # Ok(()) }
    /// ```
    pub async fn push_batch(&self, batch: impl Into<Batch>) -> Result<PushReceipt> {
        let batch = batch.into();
        let limits = self.client.limits();
        let mut messages = Vec::with_capacity(batch.messages.len());
        let mut bytes = 0;
        for (i, message) in batch.messages.iter().enumerate() {
            let (wire, counted) = message.to_wire(&format_args!("messages[{i}]"), limits)?;
            bytes += counted;
            messages.push(wire);
        }
        limits.check_batch(messages.len(), bytes)?;
        let delay_seconds = batch
            .delay
            .map(|d| limits.delay_seconds(&"delay", d))
            .transpose()?;
        self.send_batch(types::BatchRequest {
            messages,
            delay_seconds,
        })
        .await
    }

    async fn send_batch(&self, body: types::BatchRequest) -> Result<PushReceipt> {
        let raw = self.client.raw();
        let result = self
            .send(
                "push_batch",
                body.messages.len(),
                raw.push_batch(self.client.account_id(), &self.queue_id, &body),
            )
            .await?;
        Ok(result.into())
    }

    /// Pushes any number of messages: splits them into batches within the
    /// limits (by count and bytes), sends up to `concurrency` batches at
    /// once, and reports for each batch whether it landed.
    ///
    /// A message that breaks a limit on its own fails alone, before sending;
    /// the others still go. Each batch is retried like [`Queue::push_batch`].
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) {
    /// use cf_queues::Message;
    /// let report = queue.push_all((0..1_000).map(|i| Message::text(format!("event {i}"))), 4).await;
    /// for (index, error) in report.failed() {
    ///     eprintln!("message {index} was not pushed: {error}");
    /// }
    /// # }
    /// ```
    pub async fn push_all(
        &self,
        messages: impl IntoIterator<Item = Message>,
        concurrency: usize,
    ) -> PushAllReport {
        let limits = *self.client.limits();
        let mut reports = Vec::new();
        let mut batches: Vec<(Vec<usize>, Vec<types::QueueMessage>)> = Vec::new();
        let (mut indices, mut wires, mut bytes) = (Vec::new(), Vec::new(), 0usize);
        for (index, message) in messages.into_iter().enumerate() {
            let (wire, counted) = match message.to_wire(&format_args!("messages[{index}]"), &limits)
            {
                Ok(encoded) => encoded,
                Err(error) => {
                    reports.push(BatchReport {
                        indices: vec![index],
                        result: Err(error),
                    });
                    continue;
                }
            };
            let full = wires.len() >= limits.max_batch_messages
                || bytes + counted > limits.max_batch_bytes;
            if !wires.is_empty() && full {
                batches.push((std::mem::take(&mut indices), std::mem::take(&mut wires)));
                bytes = 0;
            }
            indices.push(index);
            wires.push(wire);
            bytes += counted;
        }
        if !wires.is_empty() {
            batches.push((indices, wires));
        }

        let sends = batches.into_iter().map(|(indices, messages)| async move {
            let body = types::BatchRequest {
                messages,
                delay_seconds: None,
            };
            let result = self.send_batch(body).await;
            BatchReport { indices, result }
        });
        reports.extend(at_most(concurrency.max(1), sends).await);
        reports.sort_by_key(|r| r.indices.first().copied());
        PushAllReport { batches: reports }
    }

    /// Leases up to `batch_size` visible messages for the visibility timeout.
    ///
    /// An empty queue answers at once with no messages.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use std::time::Duration;
    /// use cf_queues::{Acks, PullOptions};
    /// let batch = queue
    ///     .pull(PullOptions::new().batch_size(10).visibility_timeout(Duration::from_secs(60)))
    ///     .await?;
    /// let mut acks = Acks::new();
    /// for message in &batch.messages {
    ///     println!("{}: {:?}", message.id, message.body().raw());
    ///     acks = acks.ack(message);
    /// }
    /// queue.ack(acks).await?;
    /// # Ok(()) }
    /// ```
    pub async fn pull(&self, options: PullOptions) -> Result<PulledBatch> {
        let limits = self.client.limits();
        let body = types::PullRequest {
            batch_size: options
                .batch_size
                .map(|n| limits.batch_size(&"batch_size", n))
                .transpose()?,
            visibility_timeout_ms: options
                .visibility_timeout
                .map(|t| limits.visibility_timeout_ms(t))
                .transpose()?,
        };
        let raw = self.client.raw();
        let result = self
            .send(
                "pull_messages",
                0,
                raw.pull_messages(self.client.account_id(), &self.queue_id, &body),
            )
            .await?;
        Ok(result.into())
    }

    /// Acknowledges and retries leased messages in one call.
    ///
    /// Acks are permissive: a stale or unknown lease id comes back as a
    /// warning in [`AckOutcome::warnings`], not as an error. An empty
    /// [`Acks`] sends no request.
    ///
    /// Acks are retried after 5xx answers and broken connections. When the
    /// first attempt did land but its answer was lost, the retry finds the
    /// leases already used: they come back as warnings and the counts are
    /// lower than what was acknowledged. Treat a lease-id warning as "not
    /// acknowledged by this call", never as "still on the queue".
    pub async fn ack(&self, acks: Acks) -> Result<AckOutcome> {
        if acks.acks.is_empty() && acks.retries.is_empty() {
            return Ok(AckOutcome::default());
        }
        let limits = self.client.limits();
        let mut body = types::AckRequest::default();
        for (i, lease) in acks.acks.iter().enumerate() {
            check_token(&format_args!("acks[{i}].lease_id"), lease.as_str())?;
            body.acks.push(types::AckLease {
                lease_id: lease.as_str().to_owned(),
            });
        }
        for (i, (lease, delay)) in acks.retries.iter().enumerate() {
            check_token(&format_args!("retries[{i}].lease_id"), lease.as_str())?;
            body.retries.push(types::RetryLease {
                lease_id: lease.as_str().to_owned(),
                delay_seconds: delay
                    .map(|d| limits.delay_seconds(&format_args!("retries[{i}].delay"), d))
                    .transpose()?,
            });
        }
        let raw = self.client.raw();
        let result = self
            .send(
                "ack_messages",
                0,
                raw.ack_messages(self.client.account_id(), &self.queue_id, &body),
            )
            .await?;
        Ok(result.into())
    }

    /// Returns up to `batch_size` messages (1 to 100) without leasing them.
    pub async fn peek(&self, batch_size: u32) -> Result<Vec<PeekedMessage>> {
        let body = types::PeekRequest {
            batch_size: Some(self.client.limits().batch_size(&"batch_size", batch_size)?),
        };
        let raw = self.client.raw();
        let result = self
            .send(
                "peek_messages",
                0,
                raw.peek_messages(self.client.account_id(), &self.queue_id, &body),
            )
            .await?;
        Ok(peeked(result))
    }

    /// Deletes peeked messages by their refs, at once.
    ///
    /// Unknown refs come back as warnings in [`PurgeOutcome::warnings`]. A purge is retried
    /// after 5xx answers; refs purged by an attempt whose answer was lost come
    /// back from the retry as warnings too.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// let peeked = queue.peek(10).await?;
    /// let outcome = queue.purge(&peeked).await?;
    /// # Ok(()) }
    /// ```
    pub async fn purge<I>(&self, refs: I) -> Result<PurgeOutcome>
    where
        I: IntoIterator,
        I::Item: Into<PeekRef>,
    {
        let mut body = types::PurgeRequest { refs: Vec::new() };
        for (i, peek_ref) in refs.into_iter().enumerate() {
            let peek_ref: PeekRef = peek_ref.into();
            check_token(&format_args!("refs[{i}].ref"), peek_ref.as_str())?;
            body.refs.push(types::PurgeRef {
                ref_: peek_ref.as_str().to_owned(),
            });
        }
        if body.refs.is_empty() {
            return Err(Error::invalid("refs", "purge needs at least one ref"));
        }
        let raw = self.client.raw();
        let result = self
            .send(
                "purge_messages",
                0,
                raw.purge_messages(self.client.account_id(), &self.queue_id, &body),
            )
            .await?;
        Ok(result.into())
    }

    /// Sends one generated call in a tracing span, within the client's
    /// deadline; a push first waits for the client-side rate limits
    /// (`pushed` messages, 0 for other operations), inside the deadline too.
    async fn send<E, F>(
        &self,
        operation: &'static str,
        pushed: usize,
        request: F,
    ) -> Result<E::Result>
    where
        E: Envelope,
        F: Future<Output = RawOutcome<E>>,
    {
        let span = tracing::info_span!("cf_queues", operation, queue_id = %self.queue_id);
        let call = async {
            if pushed > 0 {
                self.throttle(pushed).await;
            }
            call(operation, request).await
        }
        .instrument(span);
        match self.client.deadline() {
            Some(deadline) => {
                tokio::time::timeout(deadline, call)
                    .await
                    .unwrap_or(Err(Error::Timeout {
                        operation,
                        deadline,
                    }))
            }
            None => call.await,
        }
    }

    async fn throttle(&self, messages: usize) {
        if let Some(limiter) = self.client.limiter() {
            limiter.acquire(&self.queue_id, messages).await;
        }
    }
}

/// What [`Queue::push_all`] did with each batch.
#[derive(Debug)]
#[non_exhaustive]
pub struct PushAllReport {
    /// One entry per batch sent (or per message refused before sending), in input order.
    pub batches: Vec<BatchReport>,
}

/// One batch of [`Queue::push_all`].
#[derive(Debug)]
#[non_exhaustive]
pub struct BatchReport {
    /// The positions of the batch's messages in the input.
    pub indices: Vec<usize>,
    /// Whether the batch landed.
    pub result: Result<PushReceipt>,
}

impl PushAllReport {
    /// The positions of the messages that landed, in input order.
    pub fn landed(&self) -> Vec<usize> {
        let mut landed: Vec<usize> = self
            .batches
            .iter()
            .filter(|b| b.result.is_ok())
            .flat_map(|b| b.indices.iter().copied())
            .collect();
        landed.sort_unstable();
        landed
    }

    /// The positions of the messages that did not land, each with its batch's error.
    pub fn failed(&self) -> Vec<(usize, &Error)> {
        let mut failed: Vec<(usize, &Error)> = self
            .batches
            .iter()
            .filter_map(|b| b.result.as_ref().err().map(|e| (b, e)))
            .flat_map(|(b, e)| b.indices.iter().map(move |&i| (i, e)))
            .collect();
        failed.sort_unstable_by_key(|(i, _)| *i);
        failed
    }

    /// Whether every message landed.
    pub fn all_landed(&self) -> bool {
        self.batches.iter().all(|b| b.result.is_ok())
    }
}

/// Messages to push together, with an optional delay for the whole batch.
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct Batch {
    messages: Vec<Message>,
    delay: Option<Duration>,
}

impl Batch {
    /// A batch of `messages`.
    pub fn new(messages: impl IntoIterator<Item = Message>) -> Batch {
        Batch {
            messages: messages.into_iter().collect(),
            delay: None,
        }
    }

    /// Delays delivery of the whole batch (at most 24 hours; rounded up to whole seconds).
    pub fn with_delay(mut self, delay: Duration) -> Batch {
        self.delay = Some(delay);
        self
    }

    /// The messages in the batch.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }
}

impl From<Vec<Message>> for Batch {
    fn from(messages: Vec<Message>) -> Self {
        Batch::new(messages)
    }
}

/// How many messages to pull and for how long to lease them.
///
/// Unset values take the server's defaults (5 messages, 30 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[must_use]
pub struct PullOptions {
    batch_size: Option<u32>,
    visibility_timeout: Option<Duration>,
}

impl PullOptions {
    /// The server's defaults.
    pub fn new() -> PullOptions {
        PullOptions::default()
    }

    /// How many messages to lease at most (1 to 100).
    pub fn batch_size(mut self, batch_size: u32) -> PullOptions {
        self.batch_size = Some(batch_size);
        self
    }

    /// How long the lease lasts (at most 12 hours; rounded up to whole milliseconds).
    pub fn visibility_timeout(mut self, timeout: Duration) -> PullOptions {
        self.visibility_timeout = Some(timeout);
        self
    }
}

/// Leases to acknowledge and leases to retry, sent with [`Queue::ack`].
///
/// Each method takes a [`PulledMessage`](crate::PulledMessage) reference or a [`LeaseId`].
///
/// ```
/// use std::time::Duration;
/// use cf_queues::Acks;
/// let acks = Acks::new()
///     .ack("lease-1")
///     .retry("lease-2")
///     .retry_after("lease-3", Duration::from_secs(60));
/// assert_eq!(acks.len(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[must_use]
pub struct Acks {
    acks: Vec<LeaseId>,
    retries: Vec<(LeaseId, Option<Duration>)>,
}

impl Acks {
    /// Nothing to acknowledge yet.
    pub fn new() -> Acks {
        Acks::default()
    }

    /// Acknowledges (deletes) a message.
    pub fn ack(mut self, lease: impl Into<LeaseId>) -> Acks {
        self.acks.push(lease.into());
        self
    }

    /// Puts a message back on the queue at once.
    pub fn retry(mut self, lease: impl Into<LeaseId>) -> Acks {
        self.retries.push((lease.into(), None));
        self
    }

    /// Puts a message back on the queue after `delay` (at most 24 hours).
    pub fn retry_after(mut self, lease: impl Into<LeaseId>, delay: Duration) -> Acks {
        self.retries.push((lease.into(), Some(delay)));
        self
    }

    /// How many acks and retries there are.
    pub fn len(&self) -> usize {
        self.acks.len() + self.retries.len()
    }

    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Runs the futures with at most `limit` in flight at once, on the caller's
/// task: no spawning, so every outcome is returned and a batch can never go
/// missing from a report.
async fn at_most<F: Future>(limit: usize, futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut waiting = futures.into_iter();
    let mut running: Vec<Pin<Box<F>>> = Vec::new();
    let mut done = Vec::new();
    std::future::poll_fn(|cx| {
        loop {
            while running.len() < limit {
                match waiting.next() {
                    Some(future) => running.push(Box::pin(future)),
                    None => break,
                }
            }
            if running.is_empty() {
                return Poll::Ready(());
            }
            let before = running.len();
            running.retain_mut(|future| match future.as_mut().poll(cx) {
                Poll::Ready(output) => {
                    done.push(output);
                    false
                }
                Poll::Pending => true,
            });
            if running.len() == before {
                return Poll::Pending;
            }
        }
    })
    .await;
    done
}
