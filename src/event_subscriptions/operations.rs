//! The five operations on event subscriptions, as methods of
//! [`Client`] (the account's subscriptions, one by id) and [`Queue`] (the
//! subscriptions into it, a new one).

use std::num::NonZeroU64;
use std::time::SystemTime;

use super::subscription::{EventSubscription, EventSubscriptionChange, NewEventSubscription};
use super::wire::{self, id_or_unknown};
use crate::client::Client;
use crate::envelope::Page;
use crate::error::{Error, Result};
use crate::management::ServerClock;
use crate::management::lookup::every_page;
use crate::operation::Operation;
use crate::queue::Queue;
use crate::raw::types;

/// Subscriptions asked for per page: the most the API serves (the
/// published description's maximum), so that an account's list costs the
/// fewest calls against the token's window.
const PER_PAGE: NonZeroU64 = match NonZeroU64::new(100) {
    Some(n) => n,
    None => NonZeroU64::MIN,
};

impl Client {
    /// Every event subscription of the account, read page by page (`GET
    /// /event_subscriptions/subscriptions?page=N&per_page=100`) until the
    /// list ends.
    ///
    /// ```no_run
    /// # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
    /// for subscription in client.event_subscriptions().await? {
    ///     println!("{:?}: {} -> {:?}", subscription.name, subscription.source.type_name(), subscription.queue_id);
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// What a list call met; each is retried like any read. The list ends
    /// at an empty page, at the last page `result_info` names, at a page
    /// served twice, or after 1,000 pages.
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn event_subscriptions(&self) -> Result<Vec<EventSubscription>> {
        self.every_subscription(None, None).await
    }

    /// The event subscription with this id (`GET .../subscriptions/{id}`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) before sending
    /// for an id that is empty, longer than 32 characters or not
    /// alphanumeric; an [`Error::Api`](crate::Error::Api) with 404
    /// ([`Error::is_not_found`](crate::Error::is_not_found)) for an unknown
    /// subscription; otherwise what the call met (retried like any read).
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn event_subscription(&self, id: &str) -> Result<EventSubscription> {
        self.limits().check_id("subscription_id", id)?;
        let subscription = self
            .account_call(Operation::GetEventSubscription)
            .run(|| {
                self.raw()
                    .get_event_subscription()
                    .account_id(self.account_id())
                    .subscription_id(id)
                    .send()
            })
            .await?;
        identified(Operation::GetEventSubscription, subscription)
    }

    /// Changes the fields `change` sets and keeps the others (`PATCH
    /// .../subscriptions/{id}`); returns the subscription as changed.
    ///
    /// ```no_run
    /// # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
    /// use cf_queues::event_subscriptions::EventSubscriptionChange;
    /// let id = "0f8c…";
    /// client.update_event_subscription(id, EventSubscriptionChange::new().enabled(false)).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) before sending,
    /// naming the field: no field set (`change`), an empty name, no event
    /// type or an empty one, a destination id or subscription id that is
    /// not an id; otherwise what the call met (404 for an unknown
    /// subscription or destination queue). Retried like a read: writing
    /// the same values twice is writing them once.
    ///
    /// # Cancellation
    ///
    /// A change dropped after it was sent may have landed: read it back
    /// with [`Client::event_subscription`].
    pub async fn update_event_subscription(
        &self,
        id: &str,
        change: EventSubscriptionChange,
    ) -> Result<EventSubscription> {
        self.limits().check_id("subscription_id", id)?;
        let body = wire::update_request(&change, self.limits())?;
        let subscription = self
            .account_call(Operation::UpdateEventSubscription)
            .run(|| {
                self.raw()
                    .update_event_subscription()
                    .account_id(self.account_id())
                    .subscription_id(id)
                    .body(body.clone())
                    .send()
            })
            .await?;
        identified(Operation::UpdateEventSubscription, subscription)
    }

    /// Deletes the event subscription (`DELETE .../subscriptions/{id}`):
    /// its source's events stop reaching the queue. The queue and its
    /// messages stay.
    ///
    /// Not repeated after an ambiguous failure (a 5xx, a timeout, a broken
    /// connection): the subscription is read back instead, and one that is
    /// gone is the deletion's success.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) before sending
    /// for an id that is not an id; an [`Error::Api`](crate::Error::Api)
    /// with 404 when the subscription did not exist; after a lost answer,
    /// the first error when the read-back still finds it (or cannot tell).
    ///
    /// # Cancellation
    ///
    /// A deletion dropped after it was sent may have landed: read it back
    /// with [`Client::event_subscription`].
    pub async fn delete_event_subscription(&self, id: &str) -> Result<()> {
        self.limits().check_id("subscription_id", id)?;
        let deleted = self
            .account_call(Operation::DeleteEventSubscription)
            .run(|| {
                self.raw()
                    .delete_event_subscription()
                    .account_id(self.account_id())
                    .subscription_id(id)
                    .send()
            })
            .await;
        match deleted {
            Ok(_) => Ok(()),
            Err(error) if error.may_have_landed() => {
                tracing::debug!(%error, subscription = id, "delete event subscription may have landed; reading it back");
                match self.event_subscription(id).await {
                    Err(gone) if gone.is_not_found() => Ok(()),
                    _ => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Every subscription, or those into `queue_id`, with the `Date` of
    /// every answer going to `clock`, if given.
    async fn every_subscription(
        &self,
        queue_id: Option<&str>,
        clock: Option<&ServerClock>,
    ) -> Result<Vec<EventSubscription>> {
        let listed = every_page(
            |number| self.subscription_page(number, queue_id, clock),
            |s: &types::EventSubscription| s.id.clone(),
        )
        .await?;
        Ok(listed
            .into_iter()
            .map(EventSubscription::from)
            // `queue_id` is wrangler's filter, not in the published
            // description: a server that ignores it lists every queue's.
            .filter(|s| queue_id.is_none() || s.queue_id.as_deref() == queue_id)
            .collect())
    }

    /// One page of the subscriptions, of one queue if given.
    async fn subscription_page(
        &self,
        number: u32,
        queue_id: Option<&str>,
        clock: Option<&ServerClock>,
    ) -> Result<Page<types::EventSubscription>> {
        let mut call = self.account_call(Operation::ListEventSubscriptions);
        call.server_clock = clock;
        call.run(|| {
            let request = self
                .raw()
                .list_event_subscriptions()
                .account_id(self.account_id())
                .page(NonZeroU64::new(u64::from(number)).unwrap_or(NonZeroU64::MIN))
                .per_page(PER_PAGE);
            match queue_id {
                Some(queue_id) => request.queue_id(queue_id),
                None => request,
            }
            .send()
        })
        .await
    }
}

impl Queue {
    /// The event subscriptions whose destination is this queue (`GET
    /// /event_subscriptions/subscriptions?queue_id=`, the filter wrangler's
    /// `queues subscription list` sends), every page.
    ///
    /// # Errors
    ///
    /// As [`Client::event_subscriptions`].
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn event_subscriptions(&self) -> Result<Vec<EventSubscription>> {
        self.client
            .every_subscription(Some(&self.queue_id), None)
            .await
    }

    /// Subscribes this queue to the events of a source (`POST
    /// /event_subscriptions/subscriptions` with `destination: {"type":
    /// "queues.queue", "queue_id"}`); returns the subscription created.
    ///
    /// The request always names the subscription: `new`'s name, or
    /// wrangler's default, the queue's name (its id when this handle does
    /// not know it), a space, and the source's type (`orders kv`).
    ///
    /// Like a queue's create, it is not repeated after an ambiguous failure
    /// (a 5xx, a timeout, a broken connection): it may have landed, and a
    /// second subscription to the same source is refused. The queue's
    /// subscriptions are read back instead, and one is taken as the one
    /// created only if it has the same name, source and destination and was
    /// created after the request was sent (by the server's clock, read from
    /// the answers' `Date`, as [`Client::create_queue`] does).
    ///
    /// ```no_run
    /// # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
    /// use cf_queues::event_subscriptions::{EventSource, NewEventSubscription, events};
    /// let queue = client.queue_by_name("buckets").await?;
    /// let new = NewEventSubscription::new(
    ///     EventSource::R2,
    ///     [events::r2::BUCKET_CREATED, events::r2::BUCKET_DELETED],
    /// );
    /// let subscription = queue.create_event_subscription(new).await?;
    /// println!("subscribed: {:?}", subscription.id);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) before sending,
    /// naming the field: no event type or an empty one (`events`,
    /// `events[i]`), an empty name, an empty resource (`source.model_name`,
    /// ...), or an [`EventSource::Other`](super::EventSource::Other) (`source`), which cannot be sent;
    /// an [`Error::Api`](crate::Error::Api) when the server refuses it (404
    /// for an unknown queue, 405 for a second subscription to the same
    /// source); after a lost answer, the first error when the read-back
    /// finds no such subscription created since, or cannot tell.
    ///
    /// # Cancellation
    ///
    /// A create dropped after it was sent may have landed: list the queue's
    /// subscriptions with [`Queue::event_subscriptions`].
    pub async fn create_event_subscription(
        &self,
        new: NewEventSubscription,
    ) -> Result<EventSubscription> {
        let client = &self.client;
        let default_name = format!(
            "{} {}",
            self.name().unwrap_or(&self.queue_id),
            new.source.type_name()
        );
        let body = wire::create_request(&new, &self.queue_id, default_name, client.limits())?;
        let clock = ServerClock::new();
        let sent = SystemTime::now();
        let mut call = client.account_call(Operation::CreateEventSubscription);
        call.server_clock = Some(&clock);
        let created = call
            .run(|| {
                client
                    .raw()
                    .create_event_subscription()
                    .account_id(client.account_id())
                    .body(body.clone())
                    .send()
            })
            .await;
        // A success without an id landed too: found as a lost answer is.
        let error = match created {
            Ok(answer) => match identified(Operation::CreateEventSubscription, answer) {
                Ok(subscription) => return Ok(subscription),
                Err(unidentified) => unidentified,
            },
            Err(error) if error.may_have_landed() => error,
            Err(error) => return Err(error),
        };
        tracing::debug!(%error, queue = %self.queue_id, "create event subscription may have landed; reading the queue's back");
        let Ok(listed) = client
            .every_subscription(Some(&self.queue_id), Some(&clock))
            .await
        else {
            return Err(error);
        };
        let mut created: Vec<EventSubscription> = listed
            .into_iter()
            .filter(|s| {
                s.name == body.name
                    && s.source == new.source
                    && clock.created_since(sent, s.created_at.as_deref())
            })
            .collect();
        match created.len() {
            1 => Ok(created.remove(0)),
            found => {
                tracing::debug!(
                    found,
                    "no one subscription of that name and source was created by this create (or cannot be told)"
                );
                if let Some(s) = created.first() {
                    tracing::debug!(subscription = id_or_unknown(s), "one of them");
                }
                Err(error)
            }
        }
    }
}

/// The subscription a create, read or change answered, which must carry its
/// id: a success without one (`result: null`, say) is a decode error, not
/// a subscription of nothing.
fn identified(operation: Operation, answer: types::EventSubscription) -> Result<EventSubscription> {
    let subscription = EventSubscription::from(answer);
    if subscription.id.is_none() {
        return Err(Error::Decode {
            operation,
            status: 200,
            reason: "the answer carries no event subscription (no id)".to_owned(),
            snippet: String::new(),
            attempts: 1,
        });
    }
    Ok(subscription)
}
