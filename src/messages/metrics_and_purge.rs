//! The whole queue: metrics, and purging every message.

use super::wire as messages;
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::queue::{Queue, send};
use crate::request::PurgeConfirmation;
use crate::response::{Metrics, PurgeStatus, QueueInfo};

impl Queue {
    /// The queue's backlog: how many messages, how many bytes, and when the
    /// oldest was pushed (`GET /metrics`). Best effort: queues are
    /// distributed, and the figures may lag.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// let metrics = queue.metrics().await?;
    /// println!("{} messages, {} bytes", metrics.backlog_count, metrics.backlog_bytes);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// What the call met: [`Error::Api`] (404 for an unknown queue),
    /// [`Error::Transport`], [`Error::Timeout`], ... Retried like a pull.
    ///
    /// # Cancellation
    ///
    /// Reading metrics changes nothing; dropping the future is safe.
    pub async fn metrics(&self) -> Result<Metrics> {
        self.call(Operation::Metrics, 0, self.small_response_cap())
            .run(send!(self, get_metrics))
            .await
            .map(Into::into)
    }

    /// Deletes every message of the queue, permanently (`POST /purge`).
    ///
    /// The purge runs asynchronously on Cloudflare's side: watch it with
    /// [`Queue::purge_status`]. It needs an explicit confirmation for this
    /// very queue, so it cannot be sent by accident or to the wrong queue.
    ///
    /// Like a push, it is not retried after an ambiguous failure (a 5xx, a
    /// timeout, a broken connection): a repeat made later would also delete
    /// what was pushed in between. Retries happen only when the request
    /// surely did not take effect, unless the caller asks for more with
    /// [`Queue::with_retry`] and
    /// [`RetryPolicy::purge_all`](crate::retry::RetryPolicy::purge_all)`(`[`PushRetries::AtLeastOnce`](crate::retry::PushRetries::AtLeastOnce)`)`;
    /// at-least-once pushes ([`RetryPolicy::pushes`](crate::retry::RetryPolicy::pushes)) do not change it.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use cf_queues::request::PurgeConfirmation;
    /// let confirm = PurgeConfirmation::delete_messages_permanently(queue.id());
    /// queue.purge_all(confirm).await?;
    /// while queue.purge_status().await?.completed != Some(true) {
    ///     tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] when the confirmation names another queue,
    /// before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// A purge dropped after it was sent may have started: check
    /// [`Queue::purge_status`].
    pub async fn purge_all(&self, confirmation: PurgeConfirmation) -> Result<QueueInfo> {
        if confirmation.queue_id() != self.queue_id {
            return Err(Error::invalid(
                "confirmation",
                format!(
                    "confirms a purge of queue {:?}, not of this queue {:?}",
                    confirmation.queue_id(),
                    self.queue_id
                ),
            ));
        }
        let body = messages::purge_queue_request()?;
        self.call(Operation::PurgeQueue, 0, self.small_response_cap())
            .run(send!(self, purge_queue, body))
            .await
            .map(Into::into)
    }

    /// The status of the last purge of the whole queue (`GET /purge`).
    ///
    /// # Errors
    ///
    /// What the call met. Retried like a pull.
    ///
    /// # Cancellation
    ///
    /// Reading the status changes nothing; dropping the future is safe.
    pub async fn purge_status(&self) -> Result<PurgeStatus> {
        self.call(Operation::PurgeStatus, 0, self.small_response_cap())
            .run(send!(self, get_purge_status))
            .await
            .map(Into::into)
    }
}
