//! [`Operation`]: the twenty-eight operations of Cloudflare's published
//! Queues API that the crate covers (twelve on a queue's messages, eleven
//! managing queues and their consumers, five on event subscriptions), named
//! once for the whole crate.

use std::fmt;

/// One operation of the Queues API: on a queue's messages, managing queues
/// and their consumers, or on the event subscriptions that send other
/// products' events into a queue.
///
/// Errors name the operation they come from, the retry rules read whether
/// it is safe to repeat, and the emulator aims faults at one.
///
/// ```
/// use cf_queues::operation::Operation;
/// assert_eq!(Operation::Pull.path(), "/accounts/{account_id}/queues/{queue_id}/messages/pull");
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
    /// `GET /accounts/{account_id}/queues`: one page of the account's queues.
    ListQueues,
    /// `POST /accounts/{account_id}/queues`: create a queue.
    CreateQueue,
    /// `GET .../queues/{queue_id}`: a queue with its settings.
    GetQueue,
    /// `PUT .../queues/{queue_id}`: replace a queue's configuration.
    UpdateQueue,
    /// `PATCH .../queues/{queue_id}`: change some of a queue's settings.
    EditQueue,
    /// `DELETE .../queues/{queue_id}`: delete a queue and its messages.
    DeleteQueue,
    /// `GET .../queues/{queue_id}/consumers`: a queue's consumers.
    ListConsumers,
    /// `POST .../queues/{queue_id}/consumers`: create a queue's consumer
    /// (`http_pull` enables HTTP pull).
    CreateConsumer,
    /// `GET .../consumers/{consumer_id}`: one consumer.
    GetConsumer,
    /// `PUT .../consumers/{consumer_id}`: replace a consumer's configuration.
    UpdateConsumer,
    /// `DELETE .../consumers/{consumer_id}`: delete a consumer.
    DeleteConsumer,
    /// `GET /accounts/{account_id}/event_subscriptions/subscriptions`: one
    /// page of the account's event subscriptions.
    ListEventSubscriptions,
    /// `POST .../event_subscriptions/subscriptions`: subscribe a queue to
    /// a source's events.
    CreateEventSubscription,
    /// `GET .../subscriptions/{subscription_id}`: one event subscription.
    GetEventSubscription,
    /// `PATCH .../subscriptions/{subscription_id}`: change a subscription's
    /// name, events, destination or whether it is enabled.
    UpdateEventSubscription,
    /// `DELETE .../subscriptions/{subscription_id}`: delete a subscription.
    DeleteEventSubscription,
}

impl Operation {
    /// Every operation: [`Operation::MESSAGES`], then
    /// [`Operation::MANAGEMENT`], then [`Operation::EVENT_SUBSCRIPTIONS`].
    pub const ALL: [Operation; 28] = {
        // Joined from the three lists, so that each operation is listed once.
        let mut all = [Operation::Push; 28];
        let mut i = 0;
        while i < Operation::MESSAGES.len() {
            all[i] = Operation::MESSAGES[i];
            i += 1;
        }
        let mut j = 0;
        while j < Operation::MANAGEMENT.len() {
            all[i + j] = Operation::MANAGEMENT[j];
            j += 1;
        }
        let mut k = 0;
        while k < Operation::EVENT_SUBSCRIPTIONS.len() {
            all[i + j + k] = Operation::EVENT_SUBSCRIPTIONS[k];
            k += 1;
        }
        all
    };

    /// The operations on a queue's messages, under
    /// `/accounts/{account_id}/queues/{queue_id}`, in the order of
    /// Cloudflare's published description.
    pub const MESSAGES: [Operation; 12] = [
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

    /// The operations that manage queues and their consumers, in the order
    /// of Cloudflare's published description of them.
    pub const MANAGEMENT: [Operation; 11] = [
        Operation::ListQueues,
        Operation::CreateQueue,
        Operation::GetQueue,
        Operation::UpdateQueue,
        Operation::EditQueue,
        Operation::DeleteQueue,
        Operation::ListConsumers,
        Operation::CreateConsumer,
        Operation::GetConsumer,
        Operation::UpdateConsumer,
        Operation::DeleteConsumer,
    ];

    /// The operations on event subscriptions, under
    /// `/accounts/{account_id}/event_subscriptions/subscriptions`, in the
    /// order of Cloudflare's published description of them.
    pub const EVENT_SUBSCRIPTIONS: [Operation; 5] = [
        Operation::ListEventSubscriptions,
        Operation::CreateEventSubscription,
        Operation::GetEventSubscription,
        Operation::UpdateEventSubscription,
        Operation::DeleteEventSubscription,
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
            Operation::ListQueues => "list_queues",
            Operation::CreateQueue => "create_queue",
            Operation::GetQueue => "get_queue",
            Operation::UpdateQueue => "update_queue",
            Operation::EditQueue => "edit_queue",
            Operation::DeleteQueue => "delete_queue",
            Operation::ListConsumers => "list_consumers",
            Operation::CreateConsumer => "create_consumer",
            Operation::GetConsumer => "get_consumer",
            Operation::UpdateConsumer => "update_consumer",
            Operation::DeleteConsumer => "delete_consumer",
            Operation::ListEventSubscriptions => "list_event_subscriptions",
            Operation::CreateEventSubscription => "create_event_subscription",
            Operation::GetEventSubscription => "get_event_subscription",
            Operation::UpdateEventSubscription => "update_event_subscription",
            Operation::DeleteEventSubscription => "delete_event_subscription",
        }
    }

    /// The operation with this `operationId`; `None` for one the crate does not know.
    pub fn from_operation_id(id: &str) -> Option<Operation> {
        Operation::ALL
            .into_iter()
            .find(|op| op.operation_id() == id)
    }

    /// The HTTP method: `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub const fn method(self) -> &'static str {
        match self {
            Operation::Metrics
            | Operation::PurgeStatus
            | Operation::ListQueues
            | Operation::GetQueue
            | Operation::ListConsumers
            | Operation::GetConsumer
            | Operation::ListEventSubscriptions
            | Operation::GetEventSubscription => "GET",
            Operation::UpdateQueue | Operation::UpdateConsumer => "PUT",
            Operation::EditQueue | Operation::UpdateEventSubscription => "PATCH",
            Operation::DeleteQueue
            | Operation::DeleteConsumer
            | Operation::DeleteEventSubscription => "DELETE",
            _ => "POST",
        }
    }

    /// The path template, as in Cloudflare's published description (below
    /// the API's base URL `https://api.cloudflare.com/client/v4`), with
    /// `{account_id}`, `{queue_id}`, `{consumer_id}` and `{subscription_id}`
    /// for the parameters.
    pub const fn path(self) -> &'static str {
        match self {
            Operation::Push => "/accounts/{account_id}/queues/{queue_id}/messages",
            Operation::Batch => "/accounts/{account_id}/queues/{queue_id}/messages/batch",
            Operation::Pull => "/accounts/{account_id}/queues/{queue_id}/messages/pull",
            Operation::Ack => "/accounts/{account_id}/queues/{queue_id}/messages/ack",
            Operation::Peek => "/accounts/{account_id}/queues/{queue_id}/messages/peek",
            Operation::Purge => "/accounts/{account_id}/queues/{queue_id}/messages/purge",
            Operation::Extend => "/accounts/{account_id}/queues/{queue_id}/messages/extend",
            Operation::Preview => "/accounts/{account_id}/queues/{queue_id}/messages/preview",
            Operation::DeletePreviewed => {
                "/accounts/{account_id}/queues/{queue_id}/messages/preview/ack"
            }
            Operation::Metrics => "/accounts/{account_id}/queues/{queue_id}/metrics",
            Operation::PurgeQueue | Operation::PurgeStatus => {
                "/accounts/{account_id}/queues/{queue_id}/purge"
            }
            Operation::ListQueues | Operation::CreateQueue => "/accounts/{account_id}/queues",
            Operation::GetQueue
            | Operation::UpdateQueue
            | Operation::EditQueue
            | Operation::DeleteQueue => "/accounts/{account_id}/queues/{queue_id}",
            Operation::ListConsumers | Operation::CreateConsumer => {
                "/accounts/{account_id}/queues/{queue_id}/consumers"
            }
            Operation::GetConsumer | Operation::UpdateConsumer | Operation::DeleteConsumer => {
                "/accounts/{account_id}/queues/{queue_id}/consumers/{consumer_id}"
            }
            Operation::ListEventSubscriptions | Operation::CreateEventSubscription => {
                "/accounts/{account_id}/event_subscriptions/subscriptions"
            }
            Operation::GetEventSubscription
            | Operation::UpdateEventSubscription
            | Operation::DeleteEventSubscription => {
                "/accounts/{account_id}/event_subscriptions/subscriptions/{subscription_id}"
            }
        }
    }

    /// Whether the operation works on a queue's messages (one of
    /// [`Operation::MESSAGES`]).
    pub const fn is_messages(self) -> bool {
        !self.is_management() && !self.is_event_subscription()
    }

    /// Whether the operation manages queues or consumers (one of
    /// [`Operation::MANAGEMENT`]).
    pub const fn is_management(self) -> bool {
        matches!(
            self,
            Operation::ListQueues
                | Operation::CreateQueue
                | Operation::GetQueue
                | Operation::UpdateQueue
                | Operation::EditQueue
                | Operation::DeleteQueue
                | Operation::ListConsumers
                | Operation::CreateConsumer
                | Operation::GetConsumer
                | Operation::UpdateConsumer
                | Operation::DeleteConsumer
        )
    }

    /// Whether the operation works on event subscriptions (one of
    /// [`Operation::EVENT_SUBSCRIPTIONS`]).
    pub const fn is_event_subscription(self) -> bool {
        matches!(
            self,
            Operation::ListEventSubscriptions
                | Operation::CreateEventSubscription
                | Operation::GetEventSubscription
                | Operation::UpdateEventSubscription
                | Operation::DeleteEventSubscription
        )
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
            Operation::ListQueues => "list queues",
            Operation::CreateQueue => "create queue",
            Operation::GetQueue => "get queue",
            Operation::UpdateQueue => "update queue",
            Operation::EditQueue => "edit queue",
            Operation::DeleteQueue => "delete queue",
            Operation::ListConsumers => "list consumers",
            Operation::CreateConsumer => "create consumer",
            Operation::GetConsumer => "get consumer",
            Operation::UpdateConsumer => "update consumer",
            Operation::DeleteConsumer => "delete consumer",
            Operation::ListEventSubscriptions => "list event subscriptions",
            Operation::CreateEventSubscription => "create event subscription",
            Operation::GetEventSubscription => "get event subscription",
            Operation::UpdateEventSubscription => "update event subscription",
            Operation::DeleteEventSubscription => "delete event subscription",
        }
    }

    /// Whether sending the request twice has the effect of sending it once.
    ///
    /// A push repeated after a lost answer can duplicate a message, and a
    /// purge of the whole queue repeated later deletes what was pushed in
    /// between. A create or delete of a queue, consumer or event
    /// subscription repeated after it landed fails (the name or the source
    /// is taken, the queue is gone) where the first
    /// succeeded: the client reads back what happened instead of repeating
    /// it. The others are safe: a repeated ack or purge by ref finds its
    /// leases or refs used and reports them as warnings, and a repeated
    /// update writes the same configuration again.
    pub const fn is_idempotent(self) -> bool {
        !matches!(
            self,
            Operation::Push
                | Operation::Batch
                | Operation::PurgeQueue
                | Operation::CreateQueue
                | Operation::DeleteQueue
                | Operation::CreateConsumer
                | Operation::DeleteConsumer
                | Operation::CreateEventSubscription
                | Operation::DeleteEventSubscription
        )
    }

    /// Whether the call counts against the token's window, Cloudflare's
    /// per-credential API limit (1,200 requests per five minutes per user
    /// or token, see
    /// developers.cloudflare.com/fundamentals/api/reference/limits).
    ///
    /// Every call does, management calls included, but pulls, acks and
    /// lease extensions: since April
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

    /// Whether the operation sends messages, so the client's caps on pushes apply.
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

    /// Every operation `holds` is false for, in [`Operation::ALL`]'s order.
    fn all_but(holds: fn(Operation) -> bool) -> Vec<Operation> {
        Operation::ALL
            .into_iter()
            .filter(|op| !holds(*op))
            .collect()
    }

    #[test]
    fn ids_round_trip_and_unknown_ids_are_none() {
        for op in Operation::ALL {
            assert_eq!(Operation::from_operation_id(op.operation_id()), Some(op));
        }
        assert_eq!(Operation::from_operation_id("queues-delete"), None);
    }

    #[test]
    fn only_pushes_and_purge_queue_are_unsafe_to_repeat() {
        assert_eq!(
            all_but(Operation::is_idempotent),
            [
                Operation::Push,
                Operation::Batch,
                Operation::PurgeQueue,
                Operation::CreateQueue,
                Operation::DeleteQueue,
                Operation::CreateConsumer,
                Operation::DeleteConsumer,
                Operation::CreateEventSubscription,
                Operation::DeleteEventSubscription,
            ]
        );
    }

    #[test]
    fn all_is_messages_then_management_then_subscriptions_and_each_is_one_of_them() {
        let joined: Vec<Operation> = Operation::MESSAGES
            .into_iter()
            .chain(Operation::MANAGEMENT)
            .chain(Operation::EVENT_SUBSCRIPTIONS)
            .collect();
        assert_eq!(joined, Operation::ALL);
        for op in Operation::MESSAGES {
            assert!(
                op.is_messages() && !op.is_management() && !op.is_event_subscription(),
                "{op}"
            );
            assert!(
                op.path()
                    .starts_with("/accounts/{account_id}/queues/{queue_id}/")
            );
        }
        for op in Operation::MANAGEMENT {
            assert!(
                op.is_management() && !op.is_messages() && !op.is_event_subscription(),
                "{op}"
            );
        }
        for op in Operation::EVENT_SUBSCRIPTIONS {
            assert!(
                op.is_event_subscription() && !op.is_messages() && !op.is_management(),
                "{op}"
            );
            assert!(
                op.path()
                    .starts_with("/accounts/{account_id}/event_subscriptions/subscriptions")
            );
        }
    }

    #[test]
    fn only_lease_calls_are_outside_the_api_limit() {
        assert_eq!(
            all_but(Operation::counts_against_api_limit),
            [Operation::Pull, Operation::Ack, Operation::Extend]
        );
    }
}
