//! [`PullOptions`] for a pull and [`Acks`] for acknowledging and retrying:
//! what a pull consumer sends most.

use std::time::Duration;

use crate::message::LeaseId;

/// How many messages to pull and for how long to lease them.
///
/// Unset values take the server's defaults (5 messages, 30 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[must_use]
pub struct PullOptions {
    pub(crate) batch_size: Option<u32>,
    pub(crate) visibility_timeout: Option<Duration>,
}

impl PullOptions {
    /// The server's defaults.
    pub fn new() -> PullOptions {
        PullOptions::default()
    }

    crate::__setters! {
        /// How many messages to lease at most (1 to 100).
        batch_size(batch_size: u32) => self.batch_size = Some;

        /// How long the lease lasts (at most 12 hours; rounded up to whole milliseconds).
        visibility_timeout(timeout: Duration) => self.visibility_timeout = Some;
    }
}

/// Leases to acknowledge and leases to retry, sent with [`Queue::ack`](crate::Queue::ack).
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
    pub(crate) acks: Vec<LeaseId>,
    pub(crate) retries: Vec<(LeaseId, Option<Duration>)>,
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

    /// Puts a message back on the queue, with no `delay_seconds`: the
    /// queue's consumer setting `retry_delay` then applies (none, by
    /// default). To make it visible at once whatever that setting says,
    /// use [`Acks::retry_after`] with [`Duration::ZERO`], which sends
    /// `delay_seconds: 0`.
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
