//! Leasing: pull, acknowledge and retry, and extend leases.

use super::wire as messages;
use crate::error::Result;
use crate::operation::Operation;
use crate::queue::{Queue, send};
use crate::retry_loop::QueueRefusal;
use std::time::Duration;

use crate::message::LeaseId;
use crate::request::{Acks, PullOptions};
use crate::response::{AckOutcome, ExtendOutcome, PulledBatch};

impl Queue {
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
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for a `batch_size` outside 1 to 100, a
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
        self.pull_with(options, QueueRefusal::Retried).await
    }

    /// [`Queue::pull`], with who answers a refusal for the queue's limit.
    pub(crate) async fn pull_with(
        &self,
        options: PullOptions,
        queue_refusal: QueueRefusal,
    ) -> Result<PulledBatch> {
        let limits = self.client.limits();
        let (batch_size, cap) = self.messages_batch(options.batch_size)?;
        let visibility_timeout_ms = options
            .visibility_timeout
            .map(|t| limits.visibility_timeout_ms(t))
            .transpose()?;
        let body = messages::pull_request(batch_size, visibility_timeout_ms)?;
        self.call(Operation::Pull, 0, cap)
            .answering(queue_refusal)
            .run(send!(self, pull_messages, body))
            .await
            .map(Into::into)
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
    /// acknowledged by this call", never as "still on the queue". A count
    /// the answer leaves out (the live API has been seen to) is `None`:
    /// unknown, not 0; the warnings still name what was not applied.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for an empty lease id or a retry delay over
    /// 24 hours, before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// Acks sent before the drop may have been applied; send them again
    /// (a repeat only adds warnings).
    pub async fn ack(&self, acks: Acks) -> Result<AckOutcome> {
        self.ack_with(acks, QueueRefusal::Retried).await
    }

    /// [`Queue::ack`], with who answers a refusal for the queue's limit.
    pub(crate) async fn ack_with(
        &self,
        acks: Acks,
        queue_refusal: QueueRefusal,
    ) -> Result<AckOutcome> {
        if acks.acks.is_empty() && acks.retries.is_empty() {
            return Ok(AckOutcome::default());
        }
        let (ack_leases, retry_leases, cap) = self.settle_entries(
            acks.acks.iter().map(LeaseId::as_str),
            acks.retries
                .iter()
                .map(|(lease, delay)| (lease.as_str(), *delay)),
            messages::ack_lease,
            messages::retry_lease,
        )?;
        let body = messages::ack_request(ack_leases, retry_leases)?;
        self.call(Operation::Ack, 0, cap)
            .answering(queue_refusal)
            .run(send!(self, ack_messages, body))
            .await
            .map(Into::into)
    }

    /// Extends leases: each message stays leased to its holder for
    /// `visibility_timeout` from now, without using an attempt.
    ///
    /// # Semantics
    ///
    /// Cloudflare's text says an extension "creates a new lease ID", but
    /// the answer carries none: the lease id the caller holds stays the one
    /// to acknowledge, retry or extend again with, and it now expires
    /// `visibility_timeout` after the extension (measured from now, as SQS's
    /// ChangeMessageVisibility does, not added to the old expiry).
    ///
    /// A lease comes back as a warning, not extended, when since it was
    /// granted its message was:
    ///
    /// - delivered again, to any consumer, this one included: every
    ///   delivery issues a new lease id, and only the newest can extend;
    /// - given back by a retry: the holder's own ([`Acks::retry`]) while the
    ///   lease was live, or, once it ran out, a retry with any of the
    ///   message's lease ids or a delay set through
    ///   [`Queue::delete_previewed`];
    /// - deleted: acknowledged (with any of its lease ids), purged, deleted
    ///   after a preview, or dropped or dead-lettered when its lease ran out
    ///   with no attempts left.
    ///
    /// A lease that ran out while none of that happened is extended, and
    /// takes its message back from the visible set, as late acks are
    /// accepted. A lease listed twice in one call is extended once; the
    /// repeat is a warning. The emulator behaves the same way, and its
    /// warning says which case it met.
    ///
    /// No limit on leases per call is documented, and none is imposed here;
    /// the consumer sends at most 100 at a time, like a pull. An empty list
    /// sends no request.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use std::time::Duration;
    /// use cf_queues::PullOptions;
    /// let batch = queue.pull(PullOptions::new().visibility_timeout(Duration::from_secs(30))).await?;
    /// // Still working: keep the leases for another minute.
    /// let outcome = queue.extend(&batch.messages, Duration::from_secs(60)).await?;
    /// // `extendCount` is optional: without it, the leases not warned about were extended.
    /// let extended = outcome.extended.map_or(batch.messages.len() - outcome.warnings.len(), |n| n as usize);
    /// assert_eq!(extended + outcome.warnings.len(), batch.messages.len());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for an empty
    /// lease id or a visibility timeout of 0 or over 12 hours, before
    /// sending; otherwise what the call met. Extensions are retried like
    /// pulls: a repeat only extends again.
    ///
    /// # Cancellation
    ///
    /// An extension dropped after it was sent may have been applied.
    pub async fn extend<I>(&self, leases: I, visibility_timeout: Duration) -> Result<ExtendOutcome>
    where
        I: IntoIterator,
        I::Item: Into<LeaseId>,
    {
        self.extend_with(leases, visibility_timeout, QueueRefusal::Retried)
            .await
    }

    /// [`Queue::extend`], with who answers a refusal for the queue's limit.
    pub(crate) async fn extend_with<I>(
        &self,
        leases: I,
        visibility_timeout: Duration,
        queue_refusal: QueueRefusal,
    ) -> Result<ExtendOutcome>
    where
        I: IntoIterator,
        I::Item: Into<LeaseId>,
    {
        let leases: Vec<LeaseId> = leases.into_iter().map(Into::into).collect();
        let visibility_timeout_ms = self
            .client
            .limits()
            .visibility_timeout_ms(visibility_timeout)?;
        if leases.is_empty() {
            return Ok(ExtendOutcome::default());
        }
        let wire = self.lease_entries(
            "extend",
            leases.iter().map(LeaseId::as_str),
            messages::extend_lease,
        )?;
        let body = messages::extend_request(wire, visibility_timeout_ms)?;
        let cap = self.tokens_response_cap(leases.iter().map(LeaseId::as_str));
        self.call(Operation::Extend, 0, cap)
            .answering(queue_refusal)
            .run(send!(self, extend_messages, body))
            .await
            .map(Into::into)
    }
}
