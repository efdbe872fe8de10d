//! Typed results, unwrapped from the API's envelopes.

use crate::error::{Error, Result};
use crate::message::PulledMessage;
use crate::resources::{ConsumerInfo, QueueSettings};

/// Best-effort queue metrics: returned with pushes and pulls, and by
/// [`Queue::metrics`](crate::Queue::metrics).
///
/// The values may be approximate: queues are distributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// Unacknowledged messages in the queue.
    pub backlog_count: u64,
    /// Bytes of unacknowledged messages in the queue.
    pub backlog_bytes: u64,
    /// Unix milliseconds of the oldest unacknowledged message; 0 if unknown.
    pub oldest_message_timestamp_ms: u64,
}

/// What a push or batch push returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PushReceipt {
    /// Queue metrics after the push, when the API sent them.
    pub metrics: Option<Metrics>,
}

/// The messages leased by a pull.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct PulledBatch {
    /// The leased messages; empty when none were visible.
    pub messages: Vec<PulledMessage>,
    /// Unacknowledged messages in the queue (`message_backlog_count`);
    /// `None` when the answer did not say (the field was absent, `null` or
    /// not a count), which is not the same as an empty queue.
    pub backlog_count: Option<u64>,
    /// Queue metrics, when the API sent them.
    pub metrics: Option<Metrics>,
}

impl IntoIterator for PulledBatch {
    type Item = PulledMessage;
    type IntoIter = std::vec::IntoIter<PulledMessage>;
    fn into_iter(self) -> Self::IntoIter {
        self.messages.into_iter()
    }
}

/// A warning about one lease id or ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The lease id or ref the warning is about; `None` in the older list form.
    pub subject: Option<String>,
    /// The warning text.
    pub message: String,
}

/// What an acknowledge-and-retry call did.
///
/// The counts are what the API said it applied. Third-party tests of the
/// live API have seen answers without `ackCount` or `retryCount`: such a
/// count is `None`, unknown, never a 0 that would read as "nothing was
/// acknowledged". A call with nothing to send ([`Acks::new`](crate::Acks::new)
/// as it is) sends no request and knows its counts: `Some(0)`, as
/// [`AckOutcome::default`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AckOutcome {
    /// Messages acknowledged (`ackCount`); `None` when the API did not say.
    pub acked: Option<u32>,
    /// Messages retried (`retryCount`); `None` when the API did not say.
    pub retried: Option<u32>,
    /// Warnings about single leases, such as a stale lease id.
    pub warnings: Vec<Warning>,
}

/// The outcome of a call with nothing in it: no message acknowledged or
/// retried, known for certain.
impl Default for AckOutcome {
    fn default() -> Self {
        AckOutcome {
            acked: Some(0),
            retried: Some(0),
            warnings: Vec::new(),
        }
    }
}

/// What a lease extension did; see [`Queue::extend`](crate::Queue::extend).
///
/// `extendCount` is optional in Cloudflare's published description: when
/// the answer lacks it, [`ExtendOutcome::extended`] is `None`, and the
/// warnings alone say which leases were not extended. An empty call sends
/// no request and knows its count: `Some(0)`, as
/// [`ExtendOutcome::default`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtendOutcome {
    /// Leases extended (`extendCount`); `None` when the API did not say.
    pub extended: Option<u32>,
    /// Warnings about single leases: a lease whose message was delivered
    /// again, given back by a retry, or deleted is not extended (the cases
    /// are listed on [`Queue::extend`](crate::Queue::extend)).
    pub warnings: Vec<Warning>,
}

/// The outcome of an extension of no lease: none extended, known for certain.
impl Default for ExtendOutcome {
    fn default() -> Self {
        ExtendOutcome {
            extended: Some(0),
            warnings: Vec::new(),
        }
    }
}

/// What [`Queue::delete_previewed`](crate::Queue::delete_previewed) did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PreviewedOutcome {
    /// Warnings about single preview ids, such as one whose message is gone.
    /// An id without a warning was applied.
    pub warnings: Vec<Warning>,
}

/// A queue as the API describes it: what [`Queue::info`](crate::Queue::info),
/// [`Queue::edit`](crate::Queue::edit), [`Client::queues`](crate::Client::queues)
/// and a purge of the whole queue return. Read tolerantly: a field the API
/// leaves out is `None`, empty or zero.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct QueueInfo {
    /// The queue id.
    pub queue_id: Option<String>,
    /// The queue's name.
    pub queue_name: Option<String>,
    /// When the queue was created, as the API wrote it.
    pub created_on: Option<String>,
    /// When the queue was last changed, as the API wrote it.
    pub modified_on: Option<String>,
    /// The queue's settings, as far as the API gave them.
    pub settings: QueueSettings,
    /// The queue's consumer (a queue has at most one), as far as the API
    /// listed it; [`Queue::consumers`](crate::Queue::consumers) asks for it.
    pub consumers: Vec<ConsumerInfo>,
    /// How many consumers the queue has: the API's count, or the consumers
    /// listed when it gave none.
    pub consumers_total_count: u32,
    /// How many producers (Workers, R2 buckets) the queue has.
    pub producers_total_count: u32,
}

/// The status of the last purge of a whole queue; see
/// [`Queue::purge_status`](crate::Queue::purge_status).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PurgeStatus {
    /// Whether the purge completed; `None` when the API's value was neither
    /// a boolean nor `"true"`/`"false"` (the schema types it as a string).
    pub completed: Option<bool>,
    /// When the purge started, as the API wrote it.
    pub started_at: Option<String>,
}

/// What a purge did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PurgeOutcome {
    /// Errors met while purging.
    pub errors: Vec<String>,
    /// Warnings about single refs, such as an unknown ref.
    pub warnings: Vec<Warning>,
}

/// What [`Queue::push_all`](crate::Queue::push_all) did with each batch.
#[derive(Debug)]
#[non_exhaustive]
pub struct PushAllReport {
    /// One entry per batch sent (or per message refused before sending), in input order.
    pub batches: Vec<BatchReport>,
}

/// One batch of [`Queue::push_all`](crate::Queue::push_all).
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
