//! The queue as a resource: reading it, changing its settings, deleting it.

use super::{Queue, send};
use crate::error::{Error, Result};
use crate::operation::Operation;
use crate::resources::QueueSettings;
use crate::response::QueueInfo;
use crate::wire::management;

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
