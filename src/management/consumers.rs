//! HTTP pull: a queue's consumers, and enabling or disabling its HTTP pull
//! consumer, which decides how messages are delivered.

use super::wire::as_written;
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::queue::{Queue, send};
use crate::raw::types;
use crate::resources::{ConsumerInfo, HttpPullConsumer, HttpPullSettings};

impl Queue {
    /// The queue's consumers (`GET .../consumers`): at most one, a Worker
    /// or its HTTP pull consumer.
    ///
    /// # Errors
    ///
    /// What the call met ([`Error::is_not_found`] for an unknown queue).
    /// Retried like any read.
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn consumers(&self) -> Result<Vec<ConsumerInfo>> {
        let consumers = self
            .call(Operation::ListConsumers, 0, self.small_response_cap())
            .run(send!(self, list_consumers))
            .await?;
        Ok(consumers.into_iter().map(ConsumerInfo::from).collect())
    }

    /// The queue's HTTP pull consumer, with its settings; `None` when HTTP
    /// pull is not enabled.
    ///
    /// # Errors
    ///
    /// As [`Queue::consumers`].
    ///
    /// # Cancellation
    ///
    /// Reading changes nothing; dropping the future is safe.
    pub async fn http_pull(&self) -> Result<Option<HttpPullConsumer>> {
        Ok(self.consumers().await?.into_iter().find_map(|c| match c {
            ConsumerInfo::HttpPull(c) => Some(c),
            _ => None,
        }))
    }

    /// Enables HTTP pull on the queue with these settings, or, when it is
    /// enabled already, sets them: afterwards the queue's HTTP pull
    /// consumer has exactly these settings (one left out goes back to
    /// Cloudflare's default, see [`HttpPullSettings`]).
    ///
    /// Reads the consumers first (`GET .../consumers`), then creates the
    /// consumer (`POST .../consumers` with `type: "http_pull"`) or updates
    /// it (`PUT .../consumers/{id}`). A create whose answer is lost is not
    /// repeated: the consumers are read back, and an HTTP pull consumer
    /// found is the create's success. For the next 60 s
    /// ([`PROPAGATION_WINDOW`](crate::resources::PROPAGATION_WINDOW)) a
    /// pull through this client that meets "HTTP pull not enabled"
    /// (Cloudflare's propagation delay) is tried again with backoff.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use std::time::Duration;
    /// use cf_queues::resources::HttpPullSettings;
    /// let settings = HttpPullSettings::new()
    ///     .max_retries(5)
    ///     .visibility_timeout(Duration::from_secs(60))
    ///     .dead_letter_queue("orders-dlq");
    /// queue.enable_http_pull(settings).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] before sending, naming the setting out of
    /// range, or `dead_letter_queue` for a name no queue can have (the rule
    /// [`Client::create_queue`](crate::Client::create_queue) checks: 1 to 63
    /// lowercase letters, digits and dashes, no dash first or last);
    /// [`Error::OtherConsumer`] when a Worker (or another kind)
    /// consumes the queue: a queue has one consumer, and it is never
    /// replaced silently; otherwise what the calls met.
    ///
    /// # Cancellation
    ///
    /// Dropped after the create or update was sent, it may have landed:
    /// read it back with [`Queue::http_pull`].
    pub async fn enable_http_pull(&self, settings: HttpPullSettings) -> Result<HttpPullConsumer> {
        let body = types::ConsumerRequest::from(settings.to_wire(self.client.limits())?);
        let enabled = match self.consumers().await?.into_iter().next() {
            Some(ConsumerInfo::HttpPull(current)) => {
                self.update_http_pull(&current, body, &settings).await?
            }
            Some(other) => return Err(self.other_consumer(&other)),
            None => self.create_http_pull(body, &settings).await?,
        };
        self.client.recently_enabled().note(&self.queue_id);
        Ok(enabled)
    }

    /// Disables HTTP pull by deleting the queue's HTTP pull consumer
    /// (`DELETE .../consumers/{id}`); `Ok(false)` when it was not enabled.
    /// Pulls then fail with [`Error::is_pull_disabled`].
    ///
    /// A deletion whose answer is lost is not repeated: the consumers are
    /// read back, and no HTTP pull consumer is the deletion's success.
    ///
    /// # Errors
    ///
    /// What the calls met; the first error when the read-back still finds
    /// the consumer (or cannot tell).
    ///
    /// # Cancellation
    ///
    /// Dropped after the deletion was sent, it may have landed: read it
    /// back with [`Queue::http_pull`].
    pub async fn disable_http_pull(&self) -> Result<bool> {
        let Some(current) = self.http_pull().await? else {
            return Ok(false);
        };
        let consumer_id = consumer_id(&current)?;
        let deleted = self
            .call(Operation::DeleteConsumer, 0, self.small_response_cap())
            .run(send!(self, delete_consumer[consumer_id]))
            .await;
        match deleted {
            Ok(_) => {}
            Err(error) if error.may_have_landed() => match self.http_pull().await {
                Ok(None) => {}
                _ => return Err(error),
            },
            Err(error) => return Err(error),
        }
        self.client.recently_enabled().forget(&self.queue_id);
        Ok(true)
    }

    async fn create_http_pull(
        &self,
        body: types::ConsumerRequest,
        asked: &HttpPullSettings,
    ) -> Result<HttpPullConsumer> {
        let created = self
            .call(Operation::CreateConsumer, 0, self.small_response_cap())
            .run(send!(self, create_consumer, body))
            .await;
        match created {
            Ok(consumer) => Ok(as_written(consumer, asked)),
            Err(error) if error.may_have_landed() => {
                tracing::debug!(%error, queue = %self.queue_id, "create consumer may have landed; reading it back");
                match self.http_pull().await {
                    Ok(Some(consumer)) => Ok(consumer),
                    _ => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    async fn update_http_pull(
        &self,
        current: &HttpPullConsumer,
        body: types::ConsumerRequest,
        asked: &HttpPullSettings,
    ) -> Result<HttpPullConsumer> {
        let consumer_id = consumer_id(current)?;
        let updated = self
            .call(Operation::UpdateConsumer, 0, self.small_response_cap())
            .run(send!(self, update_consumer[consumer_id], body))
            .await?;
        let mut updated = as_written(updated, asked);
        updated
            .consumer_id
            .get_or_insert_with(|| consumer_id.to_owned());
        Ok(updated)
    }

    fn other_consumer(&self, other: &ConsumerInfo) -> Error {
        let consumer = match other {
            ConsumerInfo::Worker(worker) => match (&worker.script_name, &worker.service) {
                (Some(script), _) => format!("the Worker {script:?}"),
                (None, Some(service)) => format!("the Worker service {service:?}"),
                (None, None) => "a Worker".to_owned(),
            },
            other => format!("a consumer of type {:?}", other.kind()),
        };
        Error::OtherConsumer {
            queue_id: self.queue_id.clone(),
            consumer,
        }
    }
}

/// The consumer's id, which the update and delete paths need.
fn consumer_id(consumer: &HttpPullConsumer) -> Result<&str> {
    consumer
        .consumer_id
        .as_deref()
        .ok_or_else(|| Error::Decode {
            operation: Operation::ListConsumers,
            status: 200,
            reason: "the HTTP pull consumer is listed without its consumer_id".to_owned(),
            snippet: String::new(),
            attempts: 1,
        })
}
