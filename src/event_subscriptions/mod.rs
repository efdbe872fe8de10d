//! Event subscriptions: the events of another Cloudflare product (R2, KV,
//! Workers AI, Workers Builds, Workflows, Vectorize, Super Slurper, ...)
//! delivered as messages into a queue, which a consumer pulls like any
//! other message.
//!
//! A subscription names its [`EventSource`], the event types it delivers
//! (plain strings; [`events`] has the documented ones) and its destination
//! queue. The five operations of Cloudflare's published description are
//! methods of [`Client`](crate::Client) and [`Queue`](crate::Queue):
//!
//! | call | operation | after a lost answer |
//! |---|---|---|
//! | [`Client::event_subscriptions`](crate::Client::event_subscriptions) | `GET /event_subscriptions/subscriptions?page=` | retried (reads change nothing) |
//! | [`Queue::event_subscriptions`](crate::Queue::event_subscriptions) | the same, with `queue_id=` (wrangler's filter) | retried |
//! | [`Queue::create_event_subscription`](crate::Queue::create_event_subscription) | `POST /event_subscriptions/subscriptions` | not repeated: the queue's subscriptions are read back, and one of the same name, source and destination created after sending is adopted |
//! | [`Client::event_subscription`](crate::Client::event_subscription) | `GET .../subscriptions/{id}` | retried |
//! | [`Client::update_event_subscription`](crate::Client::update_event_subscription) | `PATCH .../subscriptions/{id}` | retried (writes the same values) |
//! | [`Client::delete_event_subscription`](crate::Client::delete_event_subscription) | `DELETE .../subscriptions/{id}` | not repeated: the subscription is read back |
//!
//! ```no_run
//! # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
//! use cf_queues::event_subscriptions::{EventSource, EventSubscriptionChange, NewEventSubscription, events};
//! let queue = client.queue_by_name("namespaces").await?;
//! let created = queue
//!     .create_event_subscription(NewEventSubscription::new(EventSource::Kv, events::kv::ALL))
//!     .await?;
//! let id = created.id.as_deref().unwrap_or_default();
//! client.update_event_subscription(id, EventSubscriptionChange::new().enabled(false)).await?;
//! client.delete_event_subscription(id).await?;
//! # Ok(()) }
//! ```
//!
//! Input is checked before anything is sent: at least one event type and
//! none empty, a name that is not empty (any other text: wrangler's default
//! holds a space), the field that names a source's resource, ids. Answers
//! are read tolerantly: a source this crate does not know is kept whole in
//! [`EventSource::Other`].
//!
//! Cloudflare's published description answers 405, "Multiple subscriptions
//! on same resource not supported", to a create; users report the live API
//! refusing a second subscription to a source (workers-sdk#15340), and a
//! third-party provider documents at most one subscription per source per
//! account. Cloudflare's own pages say nothing either way; the emulator
//! follows that rule. Every call counts against the token's window.
//!
//! - `source.rs`: [`EventSource`];
//! - `subscription.rs`: [`EventSubscription`], [`NewEventSubscription`],
//!   [`EventSubscriptionChange`];
//! - `events.rs`: the documented event types;
//! - `operations.rs`: the calls;
//! - `wire.rs`: the requests made from these types, checked, and these
//!   types made from the answers.

pub mod events;
mod operations;
mod source;
mod subscription;
mod wire;

pub use source::{EventSource, SOURCE_TYPES, resource_field_of};
pub use subscription::{EventSubscription, EventSubscriptionChange, NewEventSubscription};
