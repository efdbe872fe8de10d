//! Queues as resources: the account's queues (listing them, resolving a
//! name, creating one) and one queue (reading it, changing its settings,
//! deleting it).

use std::time::SystemTime;

use super::lookup::{NameLookup, Next, every_page, page_ids};
use super::server_clock::ServerClock;
use super::wire::{self as management, shows_applied};
use crate::client::Client;
use crate::envelope::QueuePage;
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::queue::{Queue, send};
use crate::raw::types;
use crate::resources::QueueSettings;
use crate::resources::settings::{check_name, check_new_name};
use crate::response::QueueInfo;
use crate::response_cap::SMALL_RESPONSE_BYTES;
use crate::retry_loop::{Call, QueueRefusal};

impl Client {
    /// A handle on the queue of this name, found with the account's queue
    /// list (`GET /queues?name=`, as wrangler does). The handle remembers
    /// the name ([`Queue::name`]).
    ///
    /// One list call with the `name` filter answers it. Only an exact
    /// `queue_name` match counts, whatever the server returns; when the
    /// page holds other names (a server that ignores the filter, which is
    /// not in Cloudflare's published description) the list is paged on
    /// until the name is found or the list ends.
    ///
    /// ```no_run
    /// # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
    /// let queue = client.queue_by_name("orders").await?;
    /// println!("orders is {}", queue.id());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) for an empty name,
    /// before sending; [`Error::UnknownQueueName`](crate::Error::UnknownQueueName)
    /// when no queue has it ([`Error::is_not_found`](crate::Error::is_not_found)
    /// is true); [`Error::AmbiguousQueueName`](crate::Error::AmbiguousQueueName)
    /// when several do; otherwise what the list call met (retried like any
    /// read).
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn queue_by_name(&self, name: &str) -> Result<Queue> {
        check_name("name", name)?;
        let (id, _) = self.find_by_name(name, None).await?;
        Ok(self.queue(id)?.named(name.to_owned()))
    }

    /// The id and the listing of the queue of this name; the `Date` of
    /// every answer goes to `clock`, if given.
    async fn find_by_name(
        &self,
        name: &str,
        clock: Option<&ServerClock>,
    ) -> Result<(String, types::QueueDetails)> {
        let mut lookup = NameLookup::new(name);
        let mut number = 1;
        let mut previous: Option<Vec<Option<String>>> = None;
        loop {
            let page = self.list_page(number, Some(name), clock).await?;
            let ids = page_ids(&page);
            if previous.as_ref() == Some(&ids) {
                break; // the same page again: `page` is ignored too
            }
            match lookup.read(number, &page)? {
                Next::Page(next) => number = next,
                Next::Done => break,
            }
            previous = Some(ids);
        }
        lookup.finish()
    }

    /// Every queue of the account, with its settings and consumers, read
    /// page by page (`GET /queues?page=N`) until the list ends.
    ///
    /// # Errors
    ///
    /// What a list call met; each is retried like any read. At most
    /// 1,000 pages are read (Cloudflare allows 10,000 queues per account,
    /// 500 pages of 20), and the list ends at a page served twice.
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn queues(&self) -> Result<Vec<QueueInfo>> {
        let queues = every_page(
            |number| self.list_page(number, None, None),
            |q: &types::QueueDetails| q.queue_id.clone(),
        )
        .await?;
        Ok(queues.into_iter().map(QueueInfo::from).collect())
    }

    /// Creates a queue of this name (`POST /queues` with `{"queue_name"}`)
    /// and returns a handle on it. Its settings are Cloudflare's defaults:
    /// give others at creation with [`Client::create_queue_with`], change
    /// them later with [`Queue::edit`], and enable HTTP pull with
    /// [`Queue::enable_http_pull`].
    ///
    /// Like a push, a create is not repeated after an ambiguous failure (a
    /// 5xx, a timeout, a broken connection): it may have landed, and a
    /// second create of a taken name fails. The name is looked up instead,
    /// and the queue found is taken as the one created only if it was
    /// created after the create was sent: its `created_on` (the server's
    /// clock) is compared with the time of sending (ours), through the
    /// `Date` headers of the answers this call received, less a tolerance
    /// of 2 s for a `created_on` cut to whole seconds and for the gap
    /// between Cloudflare's own clocks. A queue of that name created
    /// earlier is someone else's, and is never adopted. An answer without
    /// `queue_id` is followed by one lookup too (the create landed: the
    /// queue of that name is the one created).
    ///
    /// ```no_run
    /// # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
    /// use cf_queues::resources::HttpPullSettings;
    /// let queue = client.create_queue("orders").await?;
    /// queue.enable_http_pull(HttpPullSettings::new().max_retries(5)).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) before sending
    /// for a name outside the rule the live API states when it refuses one
    /// (1 to 63 lowercase letters, digits and dashes, no dash first or
    /// last); an [`Error::Api`](crate::Error::Api) when the name is taken
    /// (409, code 11009, not retried) or refused (code 11003,
    /// InvalidQueueName); after a lost answer, the first error when the
    /// lookup does not find the queue, finds one created before the create
    /// was sent, or cannot tell (no answer carried a `Date`, or the queue
    /// has no readable `created_on`).
    ///
    /// # Cancellation
    ///
    /// A create dropped after it was sent may have landed: look the name up.
    pub async fn create_queue(&self, name: &str) -> Result<Queue> {
        self.create_queue_with(name, QueueSettings::new()).await
    }

    /// Creates a queue of this name with these settings (`POST /queues`
    /// with `{"queue_name", "settings": {...}}`, as `wrangler queues create
    /// --delivery-delay-secs N --message-retention-period-secs N` sends
    /// it) and returns a handle on it. With no setting given it is
    /// [`Client::create_queue`], and sends no `settings`.
    ///
    /// The live API applies settings given at creation, though Cloudflare's
    /// published description lists only `queue_name`; the answer is read
    /// tolerantly: when it does not show every setting given with the value
    /// sent (an older API that ignored them, an answer without `settings`),
    /// the settings are applied with one [`Queue::edit`] (`PATCH
    /// /queues/{id}`, retried like a read: it writes the same values). A
    /// lost answer is handled as by [`Client::create_queue`] (not repeated;
    /// the queue found is adopted only if created after sending), and the
    /// adopted queue's listing is checked for the settings the same way.
    ///
    /// ```no_run
    /// # async fn demo(client: cf_queues::Client) -> cf_queues::Result<()> {
    /// use std::time::Duration;
    /// use cf_queues::resources::QueueSettings;
    /// let settings = QueueSettings::new()
    ///     .delivery_delay(Duration::from_secs(2))
    ///     .message_retention_period(Duration::from_secs(3600));
    /// let queue = client.create_queue_with("orders", settings).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`Client::create_queue`]; and, before sending, the
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) of
    /// [`Queue::edit`] for a setting out of range (one check decides both:
    /// a delay over 24 hours, a retention outside 60 s to 14 days). When
    /// the edit that applies the settings fails, its error: the queue
    /// exists then, with Cloudflare's defaults; find it with
    /// [`Client::queue_by_name`] and [`Queue::edit`] it.
    ///
    /// # Cancellation
    ///
    /// Dropped after the create was sent, the queue may exist, with or
    /// without the settings: look the name up and read it with
    /// [`Queue::info`].
    pub async fn create_queue_with(&self, name: &str, settings: QueueSettings) -> Result<Queue> {
        check_new_name("queue_name", name)?;
        let wire = if settings.is_empty() {
            None
        } else {
            Some(settings.to_wire(self.limits())?)
        };
        let body = management::create_queue_request(name, wire.clone())?;
        let clock = ServerClock::new();
        let sent = SystemTime::now();
        let mut call = self.account_call(Operation::CreateQueue);
        call.server_clock = Some(&clock);
        let created = call
            .run(|| {
                self.raw()
                    .create_queue()
                    .account_id(self.account_id())
                    .body(body.clone())
                    .send()
            })
            .await;
        let (id, listed) = match created {
            Ok(details) => match details.queue_id.clone().filter(|id| !id.is_empty()) {
                Some(id) => (id, details),
                None => self.find_by_name(name, None).await?,
            },
            Err(error) if error.may_have_landed() => {
                tracing::debug!(%error, name, "create queue may have landed; looking the name up");
                match self.find_by_name(name, Some(&clock)).await {
                    Ok((id, details))
                        if clock.created_since(sent, details.created_on.as_deref()) =>
                    {
                        (id, details)
                    }
                    Ok((id, details)) => {
                        tracing::debug!(
                            name,
                            queue = %id,
                            created_on = ?details.created_on,
                            "the queue of that name was not created by this create (or cannot be told)"
                        );
                        return Err(error);
                    }
                    Err(_) => return Err(error),
                }
            }
            Err(error) => return Err(error),
        };
        let queue = self.queue(id)?.named(name.to_owned());
        if let Some(wire) = &wire
            && !shows_applied(wire, listed.settings.as_ref())
        {
            tracing::debug!(
                name,
                "the create's answer does not show its settings; editing"
            );
            queue.edit(settings).await?;
        }
        Ok(queue)
    }

    /// One page of the queue list, filtered by name if given.
    async fn list_page(
        &self,
        number: u32,
        name: Option<&str>,
        clock: Option<&ServerClock>,
    ) -> Result<QueuePage> {
        let mut call = self.account_call(Operation::ListQueues);
        call.server_clock = clock;
        call.run(|| {
            let request = self
                .raw()
                .list_queues()
                .account_id(self.account_id())
                .page(number);
            match name {
                Some(name) => request.name(name),
                None => request,
            }
            .send()
        })
        .await
    }

    /// The call settings of an account-wide call (no queue id yet).
    pub(crate) fn account_call(&self, operation: Operation) -> Call<'_> {
        Call {
            operation,
            queue_id: "",
            retry: self.retry_policy(),
            deadline: self.deadline(),
            caps: self.caps(),
            pacer: self.pacer(),
            first_pass: None,
            observe: None,
            queue_refusal: QueueRefusal::Retried,
            messages: 0,
            response_cap: self.max_response_bytes().unwrap_or(SMALL_RESPONSE_BYTES),
            pull_grace_until: None,
            server_clock: None,
            #[cfg(feature = "metrics")]
            token_gauge: self.token_gauge(),
        }
    }
}

impl Queue {
    /// The queue with its name, settings and consumers (`GET /queues/{id}`).
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// let info = queue.info().await?;
    /// println!("{:?}: retention {:?}", info.queue_name, info.settings.message_retention_period);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// What the call met: [`Error::Api`] with 404 for an unknown queue
    /// ([`Error::is_not_found`]), ... Retried like any read.
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn info(&self) -> Result<QueueInfo> {
        let details = self
            .call(Operation::GetQueue, 0, self.small_response_cap())
            .run(send!(self, get_queue))
            .await?;
        Ok(details.into())
    }

    /// Changes the settings given and keeps the others (`PATCH
    /// /queues/{id}`); returns the queue as updated.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use cf_queues::resources::QueueSettings;
    /// queue.edit(QueueSettings::new().delivery_paused(true)).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] before sending, naming the setting, when
    /// none is given or one is out of range (a delay over 24 hours, a
    /// retention outside 60 s to 14 days); otherwise what the call met.
    /// Retried like a read: writing the same values twice is writing them
    /// once.
    ///
    /// # Cancellation
    ///
    /// A change dropped after it was sent may have landed: read it back
    /// with [`Queue::info`].
    pub async fn edit(&self, settings: QueueSettings) -> Result<QueueInfo> {
        if settings.is_empty() {
            return Err(Error::invalid("settings", "no setting to change was given"));
        }
        let body = management::queue_update_request(settings.to_wire(self.client.limits())?)?;
        let details = self
            .call(Operation::EditQueue, 0, self.small_response_cap())
            .run(send!(self, edit_queue, body))
            .await?;
        Ok(details.into())
    }

    /// Deletes the queue and every message in it (`DELETE /queues/{id}`).
    ///
    /// Not repeated after an ambiguous failure (a 5xx, a timeout, a broken
    /// connection): the queue is read back instead, and a queue that is
    /// gone is the deletion's success, not the failure it would be
    /// reported as.
    ///
    /// # Errors
    ///
    /// What the call met: [`Error::Api`] with 404 when the queue did not
    /// exist; the first error when the read-back still finds the queue (or
    /// cannot tell).
    ///
    /// # Cancellation
    ///
    /// A deletion dropped after it was sent may have landed: read the
    /// queue with [`Queue::info`].
    pub async fn delete(&self) -> Result<()> {
        let deleted = self
            .call(Operation::DeleteQueue, 0, self.small_response_cap())
            .run(send!(self, delete_queue))
            .await;
        match deleted {
            Ok(_) => {}
            Err(error) if error.may_have_landed() => {
                tracing::debug!(%error, queue = %self.queue_id, "delete queue may have landed; reading it back");
                match self.info().await {
                    Err(gone) if gone.is_not_found() => {}
                    _ => return Err(error),
                }
            }
            Err(error) => return Err(error),
        }
        self.client.recently_enabled().forget(&self.queue_id);
        Ok(())
    }
}
