//! The stream interface: [`LeaseStream`] yields [`Leased`] messages, each
//! with the handle that settles it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::settlement::SettlementKind;
use super::state::Ticket;
use super::summary::Summary;
use super::{ConsumerError, Verdict};
use crate::counters::add;
use crate::error::Result;
use crate::message::PulledMessage;
use crate::retry_loop::QueueRefusal;

/// A leased message and the handle that settles it.
///
/// Settle it once: [`ack`](Leased::ack), [`retry`](Leased::retry),
/// [`retry_after`](Leased::retry_after), [`leave`](Leased::leave) or
/// [`settle`](Leased::settle). Until then the consumer keeps its lease
/// alive, as for a handler.
///
/// # Drop
///
/// Dropping a `Leased` without settling it retries the message with the
/// consumer's retry delay, as a handler's `Err` does (and as Pub/Sub nacks
/// a message whose handle is dropped). During shutdown it releases it (a
/// retry with no delay).
///
/// ```no_run
/// # async fn demo(queue: cf_queues::Queue) -> Result<(), Box<dyn std::error::Error>> {
/// use futures_util::StreamExt as _;
/// use cf_queues::consumer::Consumer;
///
/// let consumer = Consumer::builder(queue).build()?;
/// let stop = consumer.shutdown_token();
/// let mut stream = consumer.stream();
/// while let Some(leased) = stream.next().await {
///     match leased.message().body().text() {
///         Ok(text) if text == "stop" => { leased.ack(); stop.cancel(); }
///         Ok(_) => { leased.ack(); }
///         Err(_) => { leased.retry(); }
///     }
/// }
/// let summary = stream.finish().await?;
/// println!("acked {}", summary.acked);
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a Leased dropped unsettled is retried"]
pub struct Leased {
    message: PulledMessage,
    ticket: Ticket,
}

impl Leased {
    pub(crate) fn new(message: PulledMessage, ticket: Ticket) -> Leased {
        Leased { message, ticket }
    }

    pub(crate) fn into_parts(self) -> (PulledMessage, Ticket) {
        (self.message, self.ticket)
    }

    /// The message.
    pub fn message(&self) -> &PulledMessage {
        &self.message
    }

    /// Acknowledges the message (sent with the next flush).
    ///
    /// Returns false, and sends nothing, when the consumer released the
    /// message already at the end of its shutdown grace period.
    pub fn ack(self) -> bool {
        self.settle(Verdict::Ack)
    }

    /// Retries the message with the consumer's retry delay for its attempts.
    ///
    /// Returns false as for [`Leased::ack`].
    pub fn retry(self) -> bool {
        self.settle(Verdict::Retry(None))
    }

    /// Retries the message after `delay` (capped at 24 hours).
    ///
    /// Returns false as for [`Leased::ack`].
    pub fn retry_after(self, delay: Duration) -> bool {
        self.settle(Verdict::Retry(Some(delay)))
    }

    /// Stops extending the lease and lets it expire: the message comes back
    /// after the visibility timeout, with an attempt used.
    ///
    /// Returns false as for [`Leased::ack`].
    pub fn leave(self) -> bool {
        self.settle(Verdict::Leave)
    }

    /// Settles the message with `outcome`; returns false as for [`Leased::ack`].
    pub fn settle(self, outcome: Verdict) -> bool {
        let shared = std::sync::Arc::clone(&self.ticket.shared);
        let taken = settle_ticket(self.ticket, outcome);
        if taken {
            add(&shared.counters.handled, 1);
        }
        taken
    }

    /// Extends the lease by `by` from now, at once, beyond what the
    /// consumer's automatic extension does (and not bound by its maximum
    /// total lease). Returns false when the API did not extend it (the
    /// message was delivered again or deleted): it answered
    /// `extendCount: 0`, or warned about the lease. An answer without
    /// `extendCount` and without a warning extended it.
    ///
    /// # Errors
    ///
    /// What [`Queue::extend`](crate::Queue::extend) met.
    pub async fn extend(&self, by: Duration) -> Result<bool> {
        let shared = &self.ticket.shared;
        let sent = Instant::now();
        let outcome = shared
            .queue
            .extend_with([&self.message.lease_id], by, QueueRefusal::Returned)
            .await?;
        // One lease was sent, so any warning, named or not, is about it.
        let refused = match outcome.extended {
            Some(count) => count == 0,
            None => !outcome.warnings.is_empty(),
        };
        if refused {
            if shared.table().mark_lost(self.ticket.key) {
                add(&shared.counters.leases_lost, 1);
            }
            return Ok(false);
        }
        add(&shared.counters.extended, 1);
        shared
            .table()
            .extended(self.ticket.key, sent, by, shared.margin());
        Ok(true)
    }
}

/// Settles a ticket with a handler's outcome; false if it was settled or released already.
pub(crate) fn settle_ticket(ticket: Ticket, outcome: Verdict) -> bool {
    match outcome {
        Verdict::Ack => ticket.settle(SettlementKind::Ack),
        Verdict::Retry(None) => {
            let action = ticket.policy_retry();
            ticket.settle(action)
        }
        Verdict::Retry(Some(delay)) => {
            let delay = delay.min(ticket.shared.settings.max_delay);
            ticket.settle(SettlementKind::Retry(delay))
        }
        Verdict::Leave => ticket.leave(),
    }
}

/// The leased messages of a consumer, as a [`Stream`](futures_util::Stream).
///
/// Made by [`Consumer::stream`](super::Consumer::stream). The consumer runs
/// in a task of its own: it pulls as the flow-control limits allow, keeps
/// the leases of the messages yielded (and of those waiting to be) alive,
/// and flushes their settlements.
///
/// Poison messages (bodies that cannot be decoded) never reach the stream:
/// they go to [`ConsumerBuilder::on_poison`](super::ConsumerBuilder::on_poison),
/// or are retried towards the dead-letter queue without one.
///
/// The stream ends once the consumer's shutdown token is cancelled. Messages
/// pulled but not yet yielded are then released (retried with no delay)
/// when the stream next polls, is finished or is dropped: sent with the
/// shutdown's last flush, so they are visible again as soon as it is done.
/// Call [`LeaseStream::finish`] to wait for the shutdown to complete and get
/// the summary.
///
/// # Drop
///
/// Dropping the stream shuts the consumer down, as cancelling its token
/// does: the shutdown (the grace period for the `Leased` handles still out,
/// then the release and the last flush) completes in the background.
#[derive(Debug)]
pub struct LeaseStream {
    pub(crate) receiver: mpsc::UnboundedReceiver<Leased>,
    pub(crate) token: CancellationToken,
    pub(crate) grace_over: CancellationToken,
    pub(crate) task: Option<JoinHandle<Result<Summary, ConsumerError>>>,
}

impl LeaseStream {
    /// Shuts the consumer down (if its token was not cancelled yet) and
    /// waits for the shutdown to complete: handles still out get the grace
    /// period, then the rest is released and every settlement flushed.
    ///
    /// # Errors
    ///
    /// As [`Consumer::run`](super::Consumer::run).
    ///
    /// # Panics
    ///
    /// When one of the consumer's own tasks panicked, as
    /// [`Consumer::run`](super::Consumer::run) does; the stream has ended
    /// then. A stream dropped without `finish` logs that panic only.
    pub async fn finish(mut self) -> Result<Summary, ConsumerError> {
        self.token.cancel();
        self.receiver.close();
        // Messages waiting to be yielded are released as they drop.
        while self.receiver.try_recv().is_ok() {}
        match self.task.take() {
            Some(task) => super::consumer::joined(task.await),
            None => Err(ConsumerError::Cancelled),
        }
    }
}

impl futures_util::Stream for LeaseStream {
    type Item = Leased;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Leased>> {
        // During a shutdown the stream yields what it holds and what the
        // pulls on their way bring, until the grace period ends.
        if self.grace_over.is_cancelled() {
            self.receiver.close();
            while self.receiver.try_recv().is_ok() {}
            return Poll::Ready(None);
        }
        self.receiver.poll_recv(cx)
    }
}

impl Drop for LeaseStream {
    fn drop(&mut self) {
        self.token.cancel();
    }
}
