//! An event subscription as answered ([`EventSubscription`]), a new one
//! ([`NewEventSubscription`]) and a change to one
//! ([`EventSubscriptionChange`]).

use super::source::EventSource;

/// An event subscription, as the API answers it: events of `source` are
/// delivered as messages into the queue `queue_id`.
///
/// Read tolerantly: a field the answer leaves out is `None` (or empty), and
/// a source this crate does not know is kept in [`EventSource::Other`].
/// Timestamps are the strings the server sent (RFC 3339).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EventSubscription {
    /// The subscription's id, which [`Client::event_subscription`](crate::Client::event_subscription),
    /// [`Client::update_event_subscription`](crate::Client::update_event_subscription)
    /// and [`Client::delete_event_subscription`](crate::Client::delete_event_subscription) take.
    pub id: Option<String>,
    /// Its name (wrangler's default: the queue's name, a space, the source's type).
    pub name: Option<String>,
    /// Whether its events are delivered.
    pub enabled: Option<bool>,
    /// Where its events come from.
    pub source: EventSource,
    /// The destination queue's id (`destination.queue_id`).
    pub queue_id: Option<String>,
    /// The destination's kind (`destination.type`), `queues.queue`.
    pub destination_type: Option<String>,
    /// The event types delivered, such as `namespace.created` (see
    /// [`events`](super::events) for the documented ones).
    pub events: Vec<String>,
    /// When it was created, as the server wrote it.
    pub created_at: Option<String>,
    /// When it last changed, as the server wrote it.
    pub modified_at: Option<String>,
}

/// A subscription to create on a queue with
/// [`Queue::create_event_subscription`](crate::Queue::create_event_subscription):
/// its source and event types, and optionally its name and whether it
/// starts enabled.
///
/// ```
/// use cf_queues::event_subscriptions::{EventSource, NewEventSubscription, events};
/// let new = NewEventSubscription::new(EventSource::Kv, [events::kv::NAMESPACE_CREATED])
///     .name("orders kv")
///     .enabled(false);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NewEventSubscription {
    pub(crate) source: EventSource,
    pub(crate) events: Vec<String>,
    pub(crate) name: Option<String>,
    pub(crate) enabled: Option<bool>,
}

impl NewEventSubscription {
    /// A subscription to these event types of `source`; at least one type
    /// is needed (checked when it is created).
    pub fn new<I, S>(source: EventSource, events: I) -> NewEventSubscription
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        NewEventSubscription {
            source,
            events: events.into_iter().map(Into::into).collect(),
            name: None,
            enabled: None,
        }
    }

    /// Its name. Left out, the name is wrangler's default: the queue's name
    /// (its id when the handle does not know the name), a space, and the
    /// source's type, such as `orders kv`.
    pub fn name(mut self, name: impl Into<String>) -> NewEventSubscription {
        self.name = Some(name.into());
        self
    }

    /// Whether it starts delivering events. Left out, it is not sent, and
    /// the server's default (enabled) applies.
    pub fn enabled(mut self, enabled: bool) -> NewEventSubscription {
        self.enabled = Some(enabled);
        self
    }
}

/// The fields of a subscription to change with
/// [`Client::update_event_subscription`](crate::Client::update_event_subscription);
/// the others keep their values. Its source cannot change: delete the
/// subscription and create another.
///
/// ```
/// use cf_queues::event_subscriptions::EventSubscriptionChange;
/// let change = EventSubscriptionChange::new().enabled(false).name("paused");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventSubscriptionChange {
    pub(crate) name: Option<String>,
    pub(crate) enabled: Option<bool>,
    pub(crate) events: Option<Vec<String>>,
    pub(crate) queue_id: Option<String>,
}

impl EventSubscriptionChange {
    /// A change of nothing yet: at least one field must be set before it is
    /// sent.
    pub fn new() -> EventSubscriptionChange {
        EventSubscriptionChange::default()
    }

    /// A new name.
    pub fn name(mut self, name: impl Into<String>) -> EventSubscriptionChange {
        self.name = Some(name.into());
        self
    }

    /// Whether events are delivered.
    pub fn enabled(mut self, enabled: bool) -> EventSubscriptionChange {
        self.enabled = Some(enabled);
        self
    }

    /// The event types delivered from now on, replacing the list; at least one.
    pub fn events<I, S>(mut self, events: I) -> EventSubscriptionChange
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.events = Some(events.into_iter().map(Into::into).collect());
        self
    }

    /// Another destination queue, by id: the subscription's events go
    /// there from now on.
    pub fn destination(mut self, queue_id: impl Into<String>) -> EventSubscriptionChange {
        self.queue_id = Some(queue_id.into());
        self
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self == &EventSubscriptionChange::default()
    }
}
