//! [`Queue`]: the operations on one queue.
//!
//! Every method takes the same path: check the input against the client's
//! [`Limits`](crate::Limits), build the generated request, run it through
//! the one call path (rate limit, attempts, retries, deadline), unwrap the
//! envelope into a typed result.

use std::time::Duration;

use futures_util::StreamExt as _;

use crate::batch::{Batch, BatchPlanner, PlannedBatch};
use crate::call::Call;
use crate::client::Client;
use crate::error::{Error, Result, built};
use crate::limits::check_token;
use crate::message::{Message, PeekRef, PeekedMessage};
use crate::operation::Operation;
use crate::raw::types;
use crate::request::{Acks, PullOptions};
use crate::response::{
    AckOutcome, BatchReport, PulledBatch, PurgeOutcome, PushAllReport, PushReceipt, peeked,
};
use crate::retry::RetryPolicy;

/// The batch size Cloudflare pulls and peeks when none is given.
const SERVER_DEFAULT_BATCH_SIZE: u32 = 5;

/// A handle on one queue of a [`Client`]'s account.
///
/// Cheap to clone. Every method checks its input against the client's
/// [`Limits`](crate::Limits) before sending anything, then unwraps the API's
/// envelope. [`Queue::with_retry`] and [`Queue::with_deadline`] give a
/// handle with its own retry policy or deadline, for one call or many.
///
/// # Cancellation
///
/// Dropping a call's future stops it at once, between or during attempts.
/// What was already sent may still take effect: a push may have landed
/// (see [`Queue::push`]), and a pull may have leased messages, which come
/// back after their visibility timeout with an attempt used.
#[derive(Clone, Debug)]
pub struct Queue {
    client: Client,
    queue_id: String,
    retry: Option<RetryPolicy>,
    deadline: Option<Option<Duration>>,
}

impl Queue {
    pub(crate) fn new(client: Client, queue_id: String) -> Queue {
        Queue {
            client,
            queue_id,
            retry: None,
            deadline: None,
        }
    }

    /// The queue's id.
    pub fn id(&self) -> &str {
        &self.queue_id
    }

    /// The client this handle belongs to.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// This handle with its own retry policy, in place of the client's.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use cf_queues::{Message, RetryPolicy};
    /// // Exactly one request for this call.
    /// queue.with_retry(RetryPolicy::none()).push(Message::text("once")).await?;
    /// # Ok(()) }
    /// ```
    pub fn with_retry(mut self, retry: RetryPolicy) -> Queue {
        self.retry = Some(retry);
        self
    }

    /// This handle with its own overall deadline per call, in place of the
    /// client's: the rate-limit wait, every attempt and every retry wait of
    /// one call end within it.
    pub fn with_deadline(mut self, deadline: Duration) -> Queue {
        self.deadline = Some(Some(deadline));
        self
    }

    /// This handle with no overall deadline, whatever the client's.
    pub fn without_deadline(mut self) -> Queue {
        self.deadline = Some(None);
        self
    }

    /// The retry policy calls on this handle follow.
    pub fn retry_policy(&self) -> &RetryPolicy {
        self.retry.as_ref().unwrap_or(self.client.retry_policy())
    }

    /// The overall deadline of each call on this handle, if any.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline.unwrap_or(self.client.deadline())
    }

    /// Pushes one message.
    ///
    /// By default a failed push is retried only when it surely did not land
    /// (connection refused, a 429 with code 10250 or 971), so a retry never
    /// duplicates the message;
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
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a message over the size limit or a delay
    /// over 24 hours, before sending; otherwise what the call met:
    /// [`Error::Api`], [`Error::Transport`], [`Error::Timeout`], ...
    ///
    /// # Cancellation
    ///
    /// A push whose future is dropped, or whose deadline passed, after the
    /// request was sent may still have landed.
    pub async fn push(&self, message: Message) -> Result<PushReceipt> {
        let (wire, _) = message.to_wire(&"message", self.client.limits())?;
        let raw = self.client.raw();
        let result = self
            .call(Operation::Push, 1, self.small_response_cap())
            .run(|| {
                raw.push_message()
                    .account_id(self.client.account_id())
                    .queue_id(&self.queue_id)
                    .body(wire.clone())
                    .send()
            })
            .await?;
        Ok(result.into())
    }

    /// Pushes up to 100 messages (256 KB in total) in one request.
    ///
    /// Retried like [`Queue::push`]. For more messages than fit in one
    /// batch, use [`Queue::push_all`] or a [`BatchPlanner`].
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
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for an empty batch, more than 100 messages,
    /// over 256 KB, a message over its limit or a delay over 24 hours,
    /// before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// As for [`Queue::push`]: a batch sent before the drop may have landed.
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
        self.send_batch(messages, delay_seconds).await
    }

    /// Pushes a batch cut by a [`BatchPlanner`]; returns its tags with the outcome.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) {
    /// use cf_queues::{BatchPlanner, Message};
    /// let mut planner = BatchPlanner::new(*queue.client().limits());
    /// for line in 1..=1_000 {
    ///     if let Ok(Some(full)) = planner.add(line, Message::text(format!("line {line}"))) {
    ///         let (lines, result) = queue.push_planned(full).await;
    ///         if let Err(e) = result { eprintln!("lines {lines:?} not pushed: {e}"); }
    ///     }
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The result holds what the call met, as for [`Queue::push_batch`].
    ///
    /// # Cancellation
    ///
    /// As for [`Queue::push`].
    pub async fn push_planned<T>(&self, batch: PlannedBatch<T>) -> (Vec<T>, Result<PushReceipt>) {
        let PlannedBatch { wires, .. } = &batch;
        let result = self.send_batch(wires.clone(), None).await;
        (batch.into_tags(), result)
    }

    async fn send_batch(
        &self,
        messages: Vec<types::QueueMessage>,
        delay_seconds: Option<u32>,
    ) -> Result<PushReceipt> {
        let count = messages.len();
        let body: types::BatchRequest = built(
            types::BatchRequest::builder()
                .messages(messages)
                .delay_seconds(delay_seconds),
        )?;
        let raw = self.client.raw();
        let result = self
            .call(Operation::Batch, count, self.small_response_cap())
            .run(|| {
                raw.push_batch()
                    .account_id(self.client.account_id())
                    .queue_id(&self.queue_id)
                    .body(body.clone())
                    .send()
            })
            .await?;
        Ok(result.into())
    }

    /// Pushes any number of messages: cuts them into batches within the
    /// limits (by count and bytes), sends up to `concurrency` batches at
    /// once, and reports for each batch whether it landed.
    ///
    /// A message that breaks a limit on its own fails alone, before sending;
    /// the others still go. Each batch is retried like [`Queue::push_batch`].
    /// Nothing is spawned: every batch's outcome is in the report.
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
    ///
    /// # Cancellation
    ///
    /// Batches sent before the future is dropped may have landed; the
    /// report is lost with the future.
    pub async fn push_all(
        &self,
        messages: impl IntoIterator<Item = Message>,
        concurrency: usize,
    ) -> PushAllReport {
        let mut planner = BatchPlanner::new(*self.client.limits());
        let mut reports = Vec::new();
        let mut batches = Vec::new();
        for (index, message) in messages.into_iter().enumerate() {
            match planner.add(index, message) {
                Ok(Some(full)) => batches.push(full),
                Ok(None) => {}
                Err(rejected) => reports.push(BatchReport {
                    indices: vec![rejected.tag],
                    result: Err(rejected.error),
                }),
            }
        }
        batches.extend(planner.finish());
        let sent: Vec<BatchReport> = futures_util::stream::iter(batches)
            .map(|batch| async move {
                let (indices, result) = self.push_planned(batch).await;
                BatchReport { indices, result }
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        reports.extend(sent);
        reports.sort_by_key(|r| r.indices.first().copied());
        PushAllReport { batches: reports }
    }

    /// Leases up to `batch_size` visible messages for the visibility timeout.
    ///
    /// An empty queue answers at once with no messages (short polling).
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
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a `batch_size` outside 1 to 100, a
    /// visibility timeout of 0 or over 12 hours, or a `batch_size` whose
    /// largest legal answer is over the client's
    /// [`max_response_bytes`](crate::ClientBuilder::max_response_bytes),
    /// all before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// A pull dropped after it was sent may have leased messages: they come
    /// back after their visibility timeout, with an attempt used.
    pub async fn pull(&self, options: PullOptions) -> Result<PulledBatch> {
        let limits = self.client.limits();
        let batch_size = options
            .batch_size
            .map(|n| limits.batch_size(&"batch_size", n))
            .transpose()?;
        let cap = self.messages_response_cap(batch_size)?;
        let body: types::PullRequest = built(
            types::PullRequest::builder()
                .batch_size(batch_size)
                .visibility_timeout_ms(
                    options
                        .visibility_timeout
                        .map(|t| limits.visibility_timeout_ms(t))
                        .transpose()?,
                ),
        )?;
        let raw = self.client.raw();
        let result = self
            .call(Operation::Pull, 0, cap)
            .run(|| {
                raw.pull_messages()
                    .account_id(self.client.account_id())
                    .queue_id(&self.queue_id)
                    .body(body.clone())
                    .send()
            })
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
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for an empty lease id or a retry delay over
    /// 24 hours, before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// Acks sent before the drop may have been applied; send them again
    /// (a repeat only adds warnings).
    pub async fn ack(&self, acks: Acks) -> Result<AckOutcome> {
        if acks.acks.is_empty() && acks.retries.is_empty() {
            return Ok(AckOutcome::default());
        }
        let limits = self.client.limits();
        let mut ack_leases = Vec::with_capacity(acks.acks.len());
        for (i, lease) in acks.acks.iter().enumerate() {
            check_token(&format_args!("acks[{i}].lease_id"), lease.as_str())?;
            ack_leases.push(built(
                types::AckLease::builder().lease_id(lease.as_str().to_owned()),
            )?);
        }
        let mut retry_leases = Vec::with_capacity(acks.retries.len());
        for (i, (lease, delay)) in acks.retries.iter().enumerate() {
            check_token(&format_args!("retries[{i}].lease_id"), lease.as_str())?;
            let delay_seconds = delay
                .map(|d| limits.delay_seconds(&format_args!("retries[{i}].delay"), d))
                .transpose()?;
            retry_leases.push(built(
                types::RetryLease::builder()
                    .lease_id(lease.as_str().to_owned())
                    .delay_seconds(delay_seconds),
            )?);
        }
        let body: types::AckRequest = built(
            types::AckRequest::builder()
                .acks(ack_leases)
                .retries(retry_leases),
        )?;
        let tokens = acks.acks.iter().chain(acks.retries.iter().map(|(l, _)| l));
        let cap = self.tokens_response_cap(tokens.map(|l| l.as_str()));
        let raw = self.client.raw();
        let result = self
            .call(Operation::Ack, 0, cap)
            .run(|| {
                raw.ack_messages()
                    .account_id(self.client.account_id())
                    .queue_id(&self.queue_id)
                    .body(body.clone())
                    .send()
            })
            .await?;
        Ok(result.into())
    }

    /// Returns up to `batch_size` messages (1 to 100) without leasing them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a `batch_size` outside 1 to 100, or one
    /// whose largest answer is over the client's `max_response_bytes`,
    /// before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// Peeking changes nothing on the queue; dropping the future is safe.
    pub async fn peek(&self, batch_size: u32) -> Result<Vec<PeekedMessage>> {
        let batch_size = self.client.limits().batch_size(&"batch_size", batch_size)?;
        let cap = self.messages_response_cap(Some(batch_size))?;
        let body: types::PeekRequest =
            built(types::PeekRequest::builder().batch_size(Some(batch_size)))?;
        let raw = self.client.raw();
        let result = self
            .call(Operation::Peek, 0, cap)
            .run(|| {
                raw.peek_messages()
                    .account_id(self.client.account_id())
                    .queue_id(&self.queue_id)
                    .body(body.clone())
                    .send()
            })
            .await?;
        Ok(peeked(result))
    }

    /// Deletes peeked messages by their refs, at once.
    ///
    /// Unknown refs come back as warnings in [`PurgeOutcome::warnings`]. A
    /// purge is retried after 5xx answers; refs purged by an attempt whose
    /// answer was lost come back from the retry as warnings too.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// let peeked = queue.peek(10).await?;
    /// let outcome = queue.purge(&peeked).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for no refs or an empty ref, before sending;
    /// otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// Refs sent before the drop may have been purged.
    pub async fn purge<I>(&self, refs: I) -> Result<PurgeOutcome>
    where
        I: IntoIterator,
        I::Item: Into<PeekRef>,
    {
        let refs: Vec<PeekRef> = refs.into_iter().map(Into::into).collect();
        if refs.is_empty() {
            return Err(Error::invalid("refs", "purge needs at least one ref"));
        }
        let mut wire = Vec::with_capacity(refs.len());
        for (i, peek_ref) in refs.iter().enumerate() {
            check_token(&format_args!("refs[{i}].ref"), peek_ref.as_str())?;
            wire.push(built(
                types::PurgeRef::builder().ref_(peek_ref.as_str().to_owned()),
            )?);
        }
        let body: types::PurgeRequest = built(types::PurgeRequest::builder().refs(wire))?;
        let cap = self.tokens_response_cap(refs.iter().map(PeekRef::as_str));
        let raw = self.client.raw();
        let result = self
            .call(Operation::Purge, 0, cap)
            .run(|| {
                raw.purge_messages()
                    .account_id(self.client.account_id())
                    .queue_id(&self.queue_id)
                    .body(body.clone())
                    .send()
            })
            .await?;
        Ok(result.into())
    }

    /// The call settings of this handle for one operation.
    fn call(&self, operation: Operation, messages: usize, response_cap: usize) -> Call<'_> {
        Call {
            operation,
            queue_id: &self.queue_id,
            retry: self.retry_policy(),
            deadline: self.deadline(),
            limiter: self.client.limiter(),
            messages,
            response_cap,
        }
    }

    /// The response cap of a call returning up to `batch_size` messages:
    /// the largest legal answer, so that leased messages are never dropped
    /// unread. A cap set by the user that is lower fails here, before the
    /// messages are leased.
    fn messages_response_cap(&self, batch_size: Option<u32>) -> Result<usize> {
        let batch_size = batch_size.unwrap_or(SERVER_DEFAULT_BATCH_SIZE);
        let needed = self.client.limits().max_messages_response_bytes(batch_size);
        match self.client.max_response_bytes() {
            None => Ok(needed),
            Some(cap) if cap >= needed => Ok(cap),
            Some(cap) => Err(Error::invalid(
                "batch_size",
                format!(
                    "an answer of {batch_size} messages can legally take {needed} bytes, over the client's max_response_bytes of {cap}: \
                     the messages would be leased and then not read; lower batch_size or raise max_response_bytes"
                ),
            )),
        }
    }

    /// The response cap of a call whose answer carries no messages or tokens.
    fn small_response_cap(&self) -> usize {
        self.client
            .max_response_bytes()
            .unwrap_or(crate::limits::SMALL_RESPONSE_BYTES)
    }

    fn tokens_response_cap<'a>(&self, tokens: impl Iterator<Item = &'a str>) -> usize {
        self.client
            .max_response_bytes()
            .unwrap_or_else(|| self.client.limits().tokens_response_bytes(tokens))
    }
}
