//! [`Operation`]: the twelve operations of Cloudflare's published Queues
//! messages API, named once for the whole crate.

use std::fmt;

/// One operation of the Queues messages API.
///
/// Errors name the operation they come from, the retry rules read whether
/// it is safe to repeat, and the emulator aims faults at one.
///
/// ```
/// use cf_queues::operation::Operation;
/// assert_eq!(Operation::Pull.path(), "/messages/pull");
/// assert_eq!(Operation::Pull.to_string(), "pull");
/// assert_eq!(Operation::from_operation_id("pull_messages"), Some(Operation::Pull));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Operation {
    /// `POST /messages`: push one message.
    Push,
    /// `POST /messages/batch`: push up to 100 messages.
    Batch,
    /// `POST /messages/pull`: lease messages.
    Pull,
    /// `POST /messages/ack`: acknowledge and retry leased messages.
    Ack,
    /// `POST /messages/peek`: look at messages without leasing them.
    Peek,
    /// `POST /messages/purge`: delete peeked messages by ref.
    Purge,
    /// `POST /messages/extend`: extend leases.
    Extend,
    /// `POST /messages/preview`: look at messages, with lease ids, without leasing them.
    Preview,
    /// `POST /messages/preview/ack`: delete (or delay) previewed messages.
    DeletePreviewed,
    /// `GET /metrics`: the queue's backlog.
    Metrics,
    /// `POST /purge`: delete every message of the queue.
    PurgeQueue,
    /// `GET /purge`: the status of the last purge of the whole queue.
    PurgeStatus,
}

impl Operation {
    /// Every operation, in the order of Cloudflare's published description.
    pub const ALL: [Operation; 12] = [
        Operation::Push,
        Operation::Batch,
        Operation::Pull,
        Operation::Ack,
        Operation::Peek,
        Operation::Purge,
        Operation::Extend,
        Operation::Preview,
        Operation::DeletePreviewed,
        Operation::Metrics,
        Operation::PurgeQueue,
        Operation::PurgeStatus,
    ];

    /// The `operationId` of the operation in the crate's OpenAPI fragment,
    /// which is also the name of its method in [`raw::Client`](crate::raw::Client).
    pub const fn operation_id(self) -> &'static str {
        match self {
            Operation::Push => "push_message",
            Operation::Batch => "push_batch",
            Operation::Pull => "pull_messages",
            Operation::Ack => "ack_messages",
            Operation::Peek => "peek_messages",
            Operation::Purge => "purge_messages",
            Operation::Extend => "extend_messages",
            Operation::Preview => "preview_messages",
            Operation::DeletePreviewed => "ack_preview_messages",
            Operation::Metrics => "get_metrics",
            Operation::PurgeQueue => "purge_queue",
            Operation::PurgeStatus => "get_purge_status",
        }
    }

    /// The operation with this `operationId`; `None` for one the crate does not know.
    pub fn from_operation_id(id: &str) -> Option<Operation> {
        Operation::ALL
            .into_iter()
            .find(|op| op.operation_id() == id)
    }

    /// The HTTP method: `GET` or `POST`.
    pub const fn method(self) -> &'static str {
        match self {
            Operation::Metrics | Operation::PurgeStatus => "GET",
            _ => "POST",
        }
    }

    /// The path under `/accounts/{account_id}/queues/{queue_id}`.
    pub const fn path(self) -> &'static str {
        match self {
            Operation::Push => "/messages",
            Operation::Batch => "/messages/batch",
            Operation::Pull => "/messages/pull",
            Operation::Ack => "/messages/ack",
            Operation::Peek => "/messages/peek",
            Operation::Purge => "/messages/purge",
            Operation::Extend => "/messages/extend",
            Operation::Preview => "/messages/preview",
            Operation::DeletePreviewed => "/messages/preview/ack",
            Operation::Metrics => "/metrics",
            Operation::PurgeQueue | Operation::PurgeStatus => "/purge",
        }
    }

    /// A short readable name, as `Display` shows it: `push`, `batch push`, `pull`, …
    pub const fn name(self) -> &'static str {
        match self {
            Operation::Push => "push",
            Operation::Batch => "batch push",
            Operation::Pull => "pull",
            Operation::Ack => "ack",
            Operation::Peek => "peek",
            Operation::Purge => "purge by ref",
            Operation::Extend => "lease extension",
            Operation::Preview => "preview",
            Operation::DeletePreviewed => "delete previewed",
            Operation::Metrics => "metrics",
            Operation::PurgeQueue => "purge queue",
            Operation::PurgeStatus => "purge status",
        }
    }

    /// Whether sending the request twice has the effect of sending it once.
    ///
    /// A push repeated after a lost answer can duplicate a message, and a
    /// purge of the whole queue repeated later deletes what was pushed in
    /// between; the others are safe (a repeated ack or purge by ref finds
    /// its leases or refs used and reports them as warnings).
    pub const fn is_idempotent(self) -> bool {
        !matches!(
            self,
            Operation::Push | Operation::Batch | Operation::PurgeQueue
        )
    }

    /// Whether the call counts against Cloudflare's per-credential API limit
    /// (1,200 requests per five minutes per user or token, see
    /// developers.cloudflare.com/fundamentals/api/reference/limits).
    ///
    /// Every call does but pulls, acks and lease extensions: since April
    /// 2025 these are limited per queue instead (5,000 messages a second,
    /// Cloudflare's pull-consumer page). Cloudflare names pulls and acks;
    /// that extensions, which a pull consumer sends beside them, go with
    /// them is an assumption.
    ///
    /// ```
    /// use cf_queues::operation::Operation;
    /// assert!(Operation::Batch.counts_against_api_limit());
    /// assert!(!Operation::Pull.counts_against_api_limit());
    /// ```
    pub const fn counts_against_api_limit(self) -> bool {
        !matches!(self, Operation::Pull | Operation::Ack | Operation::Extend)
    }

    /// Whether the operation sends messages, so client-side push rate limits apply.
    pub(crate) const fn is_push(self) -> bool {
        matches!(self, Operation::Push | Operation::Batch)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_none() {
        for op in Operation::ALL {
            assert_eq!(Operation::from_operation_id(op.operation_id()), Some(op));
        }
        assert_eq!(Operation::from_operation_id("delete_queue"), None);
    }

    #[test]
    fn only_pushes_and_purge_queue_are_unsafe_to_repeat() {
        let unsafe_ops: Vec<Operation> = Operation::ALL
            .into_iter()
            .filter(|op| !op.is_idempotent())
            .collect();
        assert_eq!(
            unsafe_ops,
            [Operation::Push, Operation::Batch, Operation::PurgeQueue]
        );
    }

    #[test]
    fn only_lease_calls_are_outside_the_api_limit() {
        let outside: Vec<Operation> = Operation::ALL
            .into_iter()
            .filter(|op| !op.counts_against_api_limit())
            .collect();
        assert_eq!(
            outside,
            [Operation::Pull, Operation::Ack, Operation::Extend]
        );
    }
}
