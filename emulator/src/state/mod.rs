//! The pure state machine behind the local Cloudflare Queues emulator.
//!
//! Everything here is synchronous and free of I/O, clocks and OS randomness so
//! that the HTTP layer can wrap one [`Broker`] in a `Mutex` and so that tests
//! can drive time explicitly: every operation takes `now_ms` (Unix
//! milliseconds) from the caller.
//!
//! Time is processed lazily: a lease that has run out is only acted upon the
//! next time its queue (or the dead-letter queue it feeds) is touched. Every
//! operation costs O(k log n) in the number k of messages it touches, never a
//! scan of the backlog, and no input can make it panic.
//!
//! Queues belong to an account: the same queue id under two account ids
//! names two queues ([`At`]). A queue exists while it holds something a
//! client can still read (messages, a dead-letter count, the status of a
//! purge); an empty one is dropped after the operation that emptied it, and
//! expired peek refs and preview ids are swept even from queues no one
//! touches any more, so memory follows what is stored, not what was asked.
//!
//! - [`broker`]: the service as a whole, routing operations to queues and
//!   dead letters between them, and the lease operations;
//! - [`messages`]: one queue's indexes and leases, its peek refs and
//!   preview ids, the tokens that name them, preview and the purge of a
//!   whole queue;
//! - [`management`]: queues and consumers as resources, and their
//!   operations;
//! - [`journal`]: the changes a data directory writes, and loading them back.

mod broker;
#[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
mod dashboard_moves;
mod event_subscriptions;
mod journal;
mod management;
mod messages;
mod queue_states;
#[cfg(test)]
mod tests;
#[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
pub(crate) mod view;
mod watched;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub(crate) use broker::Broker;
pub(crate) use event_subscriptions::emit::event_message;
pub(crate) use event_subscriptions::operations::{
    ListQuery, NewSubscription, Order, SubscriptionChange,
};
pub(crate) use event_subscriptions::records::{SubscriptionRecord, checked_source};
pub(crate) use journal::{Change, Journal};
pub(crate) use management::operations::{Declared, SettingsChange};
pub(crate) use management::resources::{
    AccountError, ConsumerKind, ConsumerRecord, ConsumerSpec, DEFAULT_PER_PAGE, MAX_PER_PAGE,
    MAX_RETENTION_S, MIN_RETENTION_S, PullSettings, QueueRecord, QueueSettings, Springs,
    WorkerSettings, bounded, check_queue_name,
};
pub(crate) use messages::tokens::RandomSource;

/// Most peek refs, and most preview ids, remembered per queue; older ones
/// are forgotten first so the maps cannot grow without bound however often
/// clients peek or preview. (A single peek larger than this keeps only its
/// last refs; the API caps peeks at 100.) All of a queue's refs and preview
/// ids are also dropped once it drains.
pub(crate) const PEEK_REF_CAP: usize = 100_000;

/// How long a peek ref stays usable for a purge, and a preview id for
/// deleting or delaying its message, in milliseconds (one hour).
pub(crate) const PEEK_REF_TTL_MS: u64 = 3_600_000;

/// How long the status of a purge of the whole queue is kept, in
/// milliseconds (one hour, as refs): long enough for any caller polling it,
/// and bounded, so that purges of queue ids never used again leave nothing
/// behind for ever.
pub(crate) const PURGE_STATUS_TTL_MS: u64 = 3_600_000;

/// Maps above this capacity are shrunk when their queue drains; small ones
/// keep their allocation so steady push/pull/ack cycles do not churn memory.
pub(super) const SHRINK_ABOVE: usize = 1024;

/// Upper bound on eager `Vec` reservations, because `batch_size` is caller
/// controlled and may be absurdly large.
pub(super) const MAX_PREALLOC: usize = 1024;

pub(super) const LEASE_UNKNOWN: &str = "lease unknown, or its message was already deleted";
pub(super) const LEASE_DUPLICATE: &str = "lease already acknowledged or retried in this request";
pub(super) const REF_UNKNOWN: &str = "peek reference unknown or expired";
pub(super) const REF_GONE: &str = "message already deleted";
pub(super) const LEASED_ELSEWHERE: &str =
    "message is leased to another consumer now; the retry of an expired lease was not applied";
pub(super) const MESSAGE_ALREADY_RETRIED: &str =
    "message already retried in this request by another of its lease ids";
pub(super) const EXTEND_DUPLICATE: &str = "lease already extended in this request";
pub(super) const DELIVERED_AGAIN: &str =
    "message was delivered again since this lease was granted; the lease was not extended";
pub(super) const RELEASED_BY_RETRY: &str =
    "message was given back by a retry since this lease was granted; the lease was not extended";
pub(super) const PREVIEW_UNKNOWN: &str = "preview id unknown or expired";
pub(super) const PREVIEW_STALE: &str =
    "message was delivered, retried or deleted since it was previewed; preview it again";

/// One page of a list (the queues, the event subscriptions), with what
/// `result_info` says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page<T> {
    pub items: Vec<T>,
    pub page: usize,
    pub per_page: usize,
    /// What the list holds on every page.
    pub total_count: usize,
    pub total_pages: usize,
}

/// Where an operation applies: a queue of an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct At<'a> {
    /// The account id of the path.
    pub account: &'a str,
    /// The queue id of the path.
    pub queue: &'a str,
}

pub(super) fn len_u64(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// How a message body is encoded, mirroring the service's `content_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// UTF-8 text.
    Text,
    /// Compact JSON.
    Json,
    /// Raw bytes.
    Bytes,
    /// V8 structured-clone serialisation.
    V8,
}

impl BodyKind {
    /// The wire name of the kind, as used in the API's `content_type`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BodyKind::Text => "text",
            BodyKind::Json => "json",
            BodyKind::Bytes => "bytes",
            BodyKind::V8 => "v8",
        }
    }
}

/// A message as sent by a producer, before the broker assigns it an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewMessage {
    /// Encoding of `body`.
    pub kind: BodyKind,
    /// Text bytes or compact JSON bytes.
    pub body: Vec<u8>,
    /// How long the message stays invisible after the push.
    pub delay_ms: u64,
}

/// One message handed to a consumer by [`Broker::pull`], or shown by
/// [`Broker::preview`] in the same shape (its `lease_id` then a preview id,
/// which leases nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// The message id (32 lowercase hex digits), stable across deliveries.
    pub id: String,
    /// Deliveries so far, this one included.
    pub attempts: u32,
    /// Encoding of `body`.
    pub kind: BodyKind,
    /// The body, shared with the broker to avoid copies.
    pub body: Arc<[u8]>,
    /// Opaque id of this delivery's lease, used to ack, retry or extend it;
    /// for a previewed message, its preview id.
    pub lease_id: String,
    /// When the message was originally pushed (Unix ms).
    pub timestamp_ms: u64,
    /// The delay it was pushed with (0: none), for `CF-msg-delay-secs`.
    pub delay_ms: u64,
}

/// One message shown by [`Broker::peek`], which leases nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peeked {
    /// The message id.
    pub id: String,
    /// Deliveries so far.
    pub attempts: u32,
    /// Encoding of `body`.
    pub kind: BodyKind,
    /// The body, shared with the broker to avoid copies.
    pub body: Arc<[u8]>,
    /// Opaque reference that [`Broker::purge`] accepts to delete this message.
    pub peek_ref: String,
    /// When the message was originally pushed (Unix ms).
    pub timestamp_ms: u64,
    /// The delay it was pushed with (0: none), for `CF-msg-delay-secs`.
    pub delay_ms: u64,
}

/// Backlog figures of one queue, exact at the time they are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct QueueStats {
    /// Messages in the queue: delayed, visible and in flight alike.
    pub backlog_count: u64,
    /// Sum of the body lengths of those messages.
    pub backlog_bytes: u64,
    /// Smallest push timestamp among them, 0 when the queue is empty.
    pub oldest_message_timestamp_ms: u64,
}

/// Outcome of [`Broker::ack`]; bad lease ids are reported, never errors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct AckReport {
    /// Messages this call deleted.
    pub ack_count: u32,
    /// Messages this call made visible again later (or dead-lettered).
    pub retry_count: u32,
    /// Lease id -> why it was ignored.
    pub warnings: BTreeMap<String, String>,
}

/// Outcome of [`Broker::extend`]; leases that cannot be extended are
/// reported, never errors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ExtendReport {
    /// Leases this call extended (`extendCount`).
    pub extended: u32,
    /// Lease id -> why it was not extended.
    pub warnings: BTreeMap<String, String>,
}

/// Outcome of [`Broker::delete_previewed`]; stale or unknown preview ids
/// are reported, never errors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PreviewedReport {
    /// Messages deleted.
    pub deleted: u32,
    /// Messages put back after their delay.
    pub delayed: u32,
    /// Preview id -> why it was ignored.
    pub warnings: BTreeMap<String, String>,
}

/// Outcome of [`Broker::purge_all`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PurgedQueue {
    /// Messages deleted.
    pub purged: u64,
    /// When the queue's state was created (Unix ms).
    pub created_ms: u64,
    /// When the purge started, and completed (Unix ms).
    pub started_ms: u64,
}

/// Outcome of [`Broker::purge`]; bad refs are reported, never errors.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PurgeReport {
    /// Messages deleted.
    pub purged: u32,
    /// Peek ref -> why it was ignored.
    pub warnings: BTreeMap<String, String>,
}

/// Broker-wide settings, fixed for the broker's lifetime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrokerConfig {
    /// A message whose lease expires, or which is retried, with at least this
    /// many attempts is dropped or dead-lettered instead of requeued.
    pub max_retries: u32,
    /// Queue id -> the NAME of the queue that receives its dead-lettered
    /// messages, in the same account: the lax defaults of queues that
    /// spring into being (a lax queue's name is its id).
    pub dead_letter_queues: HashMap<String, String>,
    /// Which unknown queue ids a messages request brings into being.
    pub springs: Springs,
}

impl Default for BrokerConfig {
    /// The service's defaults: three retries, no dead-letter queues, and
    /// queues that spring into being on first use.
    fn default() -> Self {
        BrokerConfig {
            max_retries: 3,
            dead_letter_queues: HashMap::new(),
            springs: Springs::Any,
        }
    }
}
