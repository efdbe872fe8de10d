//! Typed results, unwrapped from the API's envelopes.

use crate::error::{Error, Result};
use crate::message::{
    PeekedMessage, PreviewedMessage, PulledMessage, count_u64, known_u32, known_u64,
};
use crate::raw::types;
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

impl From<types::Metrics> for Metrics {
    fn from(m: types::Metrics) -> Self {
        Metrics {
            backlog_count: count_u64(m.backlog_count),
            backlog_bytes: count_u64(m.backlog_bytes),
            oldest_message_timestamp_ms: count_u64(m.oldest_message_timestamp_ms),
        }
    }
}

fn metrics(metadata: Option<types::ResultMetadata>) -> Option<Metrics> {
    metadata.and_then(|m| m.metrics).map(Metrics::from)
}

/// What a push or batch push returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PushReceipt {
    /// Queue metrics after the push, when the API sent them.
    pub metrics: Option<Metrics>,
}

impl From<types::PushResult> for PushReceipt {
    fn from(r: types::PushResult) -> Self {
        PushReceipt {
            metrics: metrics(r.metadata),
        }
    }
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

impl From<types::PullResult> for PulledBatch {
    fn from(r: types::PullResult) -> Self {
        PulledBatch {
            messages: r
                .messages
                .unwrap_or_default()
                .into_iter()
                .map(PulledMessage::from)
                .collect(),
            backlog_count: known_u64(r.message_backlog_count),
            metrics: metrics(r.metadata),
        }
    }
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

fn warnings(w: Option<types::AckWarnings>) -> Vec<Warning> {
    match w {
        None => Vec::new(),
        Some(types::AckWarnings::Object(map)) => {
            let mut list: Vec<Warning> = map
                .into_iter()
                .map(|(subject, message)| Warning {
                    subject: Some(subject),
                    message,
                })
                .collect();
            // The map has no order on the wire: sort for stable output.
            list.sort_by(|a, b| a.subject.cmp(&b.subject));
            list
        }
        Some(types::AckWarnings::Array(list)) => list
            .into_iter()
            .map(|message| Warning {
                subject: None,
                message,
            })
            .collect(),
    }
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

impl From<types::AckResult> for AckOutcome {
    fn from(r: types::AckResult) -> Self {
        AckOutcome {
            acked: known_u32(r.ack_count),
            retried: known_u32(r.retry_count),
            warnings: warnings(r.warnings),
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

impl From<types::ExtendResult> for ExtendOutcome {
    fn from(r: types::ExtendResult) -> Self {
        ExtendOutcome {
            extended: known_u32(r.extend_count),
            warnings: warnings(r.warnings),
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

impl From<types::PreviewAckResult> for PreviewedOutcome {
    fn from(r: types::PreviewAckResult) -> Self {
        PreviewedOutcome {
            warnings: warnings(r.warnings),
        }
    }
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

impl From<types::QueueDetails> for QueueInfo {
    fn from(q: types::QueueDetails) -> Self {
        let consumers: Vec<ConsumerInfo> = q
            .consumers
            .unwrap_or_default()
            .into_iter()
            .map(ConsumerInfo::from)
            .collect();
        let listed = u32::try_from(consumers.len()).unwrap_or(u32::MAX);
        let listed_producers =
            u32::try_from(q.producers.as_ref().map_or(0, Vec::len)).unwrap_or(u32::MAX);
        QueueInfo {
            queue_id: q.queue_id.filter(|id| !id.is_empty()),
            queue_name: q.queue_name,
            created_on: q.created_on,
            modified_on: q.modified_on,
            settings: q.settings.map(QueueSettings::from).unwrap_or_default(),
            consumers_total_count: known_u32(q.consumers_total_count).unwrap_or(listed),
            producers_total_count: known_u32(q.producers_total_count).unwrap_or(listed_producers),
            consumers,
        }
    }
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

impl From<types::PurgeStatusResult> for PurgeStatus {
    fn from(r: types::PurgeStatusResult) -> Self {
        let completed = match r.completed {
            Some(types::PurgeCompleted::Boolean(done)) => Some(done),
            Some(types::PurgeCompleted::String(text)) => match text.trim() {
                t if t.eq_ignore_ascii_case("true") => Some(true),
                t if t.eq_ignore_ascii_case("false") => Some(false),
                _ => None,
            },
            None => None,
        };
        PurgeStatus {
            completed,
            started_at: r.started_at.filter(|s| !s.is_empty()),
        }
    }
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

impl From<types::PurgeResult> for PurgeOutcome {
    fn from(r: types::PurgeResult) -> Self {
        PurgeOutcome {
            errors: r
                .errors
                .unwrap_or_default()
                .into_iter()
                .filter_map(|e| e.message)
                .collect(),
            warnings: warnings(r.warnings),
        }
    }
}

pub(crate) fn previewed(r: types::PreviewResult) -> Vec<PreviewedMessage> {
    r.messages
        .unwrap_or_default()
        .into_iter()
        .map(PreviewedMessage::from)
        .collect()
}

pub(crate) fn peeked(r: types::PeekResult) -> Vec<PeekedMessage> {
    r.messages
        .unwrap_or_default()
        .into_iter()
        .map(PeekedMessage::from)
        .collect()
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
