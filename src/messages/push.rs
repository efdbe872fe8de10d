//! Pushing: one message, a batch, a planned batch, or any number of them.

use futures_util::StreamExt as _;

use crate::batch::{Batch, BatchPlanner, PlannedBatch, Rejected};
use crate::error::Result;
use crate::message::Message;
use crate::operation::Operation;
use crate::queue::{Queue, send};
use crate::raw::types;
use crate::response::{BatchReport, PushAllReport, PushReceipt};

impl Queue {
    /// Pushes one message.
    ///
    /// By default a failed push is retried only when it surely did not land
    /// (connection refused, a 429 with code 10250 or 971), so a retry never
    /// duplicates the message;
    /// [`PushRetries::AtLeastOnce`](crate::retry::PushRetries::AtLeastOnce) also
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
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for a message over the size limit or a delay
    /// over 24 hours, before sending; [`Error::RateLimited`](crate::Error::RateLimited), unsent, when the
    /// token's budget comes back only after longer than the retry
    /// policy waits (see [`RateLimits`](crate::ratelimit::RateLimits));
    /// otherwise what the call met:
    /// [`Error::Api`](crate::Error::Api), [`Error::Transport`](crate::Error::Transport), [`Error::Timeout`](crate::Error::Timeout), ...
    /// [`Error::may_have_landed`](crate::Error::may_have_landed) tells whether the message may have
    /// landed all the same.
    ///
    /// # Cancellation
    ///
    /// A push whose future is dropped, or whose deadline passed, after the
    /// request was sent may still have landed. Dropped while it waits for
    /// the token's budget, it was not sent and takes nothing from the budget.
    pub async fn push(&self, message: Message) -> Result<PushReceipt> {
        let (wire, _) = message.to_wire(&"message", self.client.limits())?;
        self.call(Operation::Push, 1, self.small_response_cap())
            .run(send!(self, push_message, wire))
            .await
            .map(Into::into)
    }

    /// Pushes up to 100 messages (256 KB in total) in one request.
    ///
    /// Retried like [`Queue::push`]. For more messages than fit in one
    /// batch, use [`Queue::push_all`] or a [`BatchPlanner`].
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use std::time::Duration;
    /// use cf_queues::Message;
    /// use cf_queues::batch::Batch;
    /// let batch = Batch::new([Message::text("a"), Message::text("b")])
    ///     .with_delay(Duration::from_secs(10));
    /// queue.push_batch(batch).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for an empty batch, more than 100 messages,
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
        self.send_batch(messages, delay_seconds, None, None).await
    }

    /// Pushes a batch cut by a [`BatchPlanner`]; returns its tags with the outcome.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) {
    /// use cf_queues::Message;
    /// use cf_queues::batch::BatchPlanner;
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
        let result = self.send_batch(wires.clone(), None, None, None).await;
        (batch.into_tags(), result)
    }

    /// Pushes a planned batch it does not take, so that it can be sent
    /// again, tells `observe` of every failed attempt, and sends the first
    /// attempt with `pass` when the caller already waited for the pacer.
    #[cfg(feature = "producer")]
    pub(crate) async fn push_planned_observed<T>(
        &self,
        batch: &PlannedBatch<T>,
        observe: &(dyn Fn(&crate::Error) + Send + Sync),
        pass: Option<crate::token_budget::Pass>,
    ) -> Result<PushReceipt> {
        self.send_batch(batch.wires.clone(), None, Some(observe), pass)
            .await
    }

    async fn send_batch(
        &self,
        messages: Vec<types::QueueMessage>,
        delay_seconds: Option<u32>,
        observe: Option<&(dyn Fn(&crate::Error) + Send + Sync)>,
        pass: Option<crate::token_budget::Pass>,
    ) -> Result<PushReceipt> {
        let count = messages.len();
        let body = super::wire::batch_request(messages, delay_seconds)?;
        let mut call = self.call(Operation::Batch, count, self.small_response_cap());
        call.observe = observe;
        call.first_pass = pass;
        let result = call.run(send!(self, push_batch, body)).await?;
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
        // Planned as the batches are sent, so that only the batches in
        // flight are held, however many messages the iterator yields.
        let planned = Planned {
            messages: messages.into_iter().enumerate(),
            planner: Some(BatchPlanner::new(*self.client.limits())),
        };
        let mut reports: Vec<BatchReport> = futures_util::stream::iter(planned)
            .map(|step| async move {
                match step {
                    Ok(batch) => {
                        let (indices, result) = self.push_planned(batch).await;
                        BatchReport { indices, result }
                    }
                    Err(rejected) => BatchReport {
                        indices: vec![rejected.tag],
                        result: Err(rejected.error),
                    },
                }
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        reports.sort_by_key(|r| r.indices.first().copied());
        PushAllReport { batches: reports }
    }
}

/// Messages cut into batches one at a time: a full batch, or a message
/// that fits no batch, as soon as it is known; the last partial batch at
/// the end.
struct Planned<I> {
    messages: I,
    /// `None` once the last batch was handed out.
    planner: Option<BatchPlanner<usize>>,
}

impl<I: Iterator<Item = (usize, Message)>> Iterator for Planned<I> {
    type Item = std::result::Result<PlannedBatch<usize>, Rejected<usize>>;

    fn next(&mut self) -> Option<Self::Item> {
        let planner = self.planner.as_mut()?;
        for (index, message) in self.messages.by_ref() {
            match planner.add(index, message) {
                Ok(Some(full)) => return Some(Ok(full)),
                Ok(None) => {}
                Err(rejected) => return Some(Err(rejected)),
            }
        }
        self.planner.take()?.finish().map(Ok)
    }
}
