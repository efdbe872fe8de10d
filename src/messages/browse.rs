//! Looking without leasing: peek and purge by ref, preview and deleting previewed messages.

use super::wire::{self as messages, peeked, previewed};
use crate::error::{Error, Result};
use crate::limits::check_token;
use crate::message::{PeekRef, PeekedMessage, PreviewId, PreviewedMessage};
use crate::operation::Operation;
use crate::queue::{Queue, send};
use crate::request::PreviewedChanges;
use crate::response::{PreviewedOutcome, PurgeOutcome};

impl Queue {
    /// Returns up to `batch_size` messages (1 to 100) without leasing them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a `batch_size` outside 1 to 100, or one
    /// whose largest answer is over the client's `max_response_bytes`,
    /// before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// Peeking changes nothing on the queue; dropping the future is safe.
    pub async fn peek(&self, batch_size: u32) -> Result<Vec<PeekedMessage>> {
        let (batch_size, cap) = self.messages_batch(Some(batch_size))?;
        let body = messages::peek_request(batch_size)?;
        self.call(Operation::Peek, 0, cap)
            .run(send!(self, peek_messages, body))
            .await
            .map(peeked)
    }

    /// Deletes peeked messages by their refs, at once.
    ///
    /// Unknown refs come back as warnings in [`PurgeOutcome::warnings`]. A
    /// purge is retried after 5xx answers; refs purged by an attempt whose
    /// answer was lost come back from the retry as warnings too.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// let peeked = queue.peek(10).await?;
    /// let outcome = queue.purge(&peeked).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for no refs or an empty ref, before sending;
    /// otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// Refs sent before the drop may have been purged.
    pub async fn purge<I>(&self, refs: I) -> Result<PurgeOutcome>
    where
        I: IntoIterator,
        I::Item: Into<PeekRef>,
    {
        let refs: Vec<PeekRef> = refs.into_iter().map(Into::into).collect();
        if refs.is_empty() {
            return Err(Error::invalid("refs", "purge needs at least one ref"));
        }
        let mut wire = Vec::with_capacity(refs.len());
        for (i, peek_ref) in refs.iter().enumerate() {
            check_token(&format_args!("refs[{i}].ref"), peek_ref.as_str())?;
            wire.push(messages::purge_ref(peek_ref.as_str())?);
        }
        let body = messages::purge_request(wire)?;
        let cap = self.tokens_response_cap(refs.iter().map(PeekRef::as_str));
        self.call(Operation::Purge, 0, cap)
            .run(send!(self, purge_messages, body))
            .await
            .map(Into::into)
    }

    /// Returns up to `batch_size` messages (1 to 100) in the pull shape,
    /// without leasing them: they stay available to pull, and their
    /// `attempts` does not change. Each comes with a [`PreviewId`](crate::message::PreviewId)
    /// to delete or delay it with [`Queue::delete_previewed`].
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use cf_queues::request::PreviewedChanges;
    /// let previewed = queue.preview(10).await?;
    /// let poison = previewed.iter().filter(|m| m.body().text().is_err());
    /// let changes = poison.fold(PreviewedChanges::new(), |c, m| c.delete(m));
    /// queue.delete_previewed(changes).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a `batch_size` outside 1 to 100, or one
    /// whose largest answer is over the client's `max_response_bytes`,
    /// before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// Previewing changes nothing on the queue; dropping the future is safe.
    pub async fn preview(&self, batch_size: u32) -> Result<Vec<PreviewedMessage>> {
        let (batch_size, cap) = self.messages_batch(Some(batch_size))?;
        let body = messages::preview_request(batch_size)?;
        self.call(Operation::Preview, 0, cap)
            .run(send!(self, preview_messages, body))
            .await
            .map(previewed)
    }

    /// Deletes previewed messages at once, and delays others
    /// (`POST /messages/preview/ack`).
    ///
    /// A deletion does not count as a delivery and leaves the delivery
    /// metrics alone. An id whose message is gone comes back as a warning;
    /// when a retried call finds its first attempt already applied, its ids
    /// come back as warnings too. An empty [`PreviewedChanges`] sends no
    /// request.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for an empty id or a delay over 24 hours,
    /// before sending; otherwise what the call met.
    ///
    /// # Cancellation
    ///
    /// Changes sent before the drop may have been applied.
    pub async fn delete_previewed(&self, changes: PreviewedChanges) -> Result<PreviewedOutcome> {
        if changes.is_empty() {
            return Ok(PreviewedOutcome::default());
        }
        let (deletions, retries, cap) = self.settle_entries(
            changes.deletions.iter().map(PreviewId::as_str),
            changes
                .retries
                .iter()
                .map(|(id, delay)| (id.as_str(), *delay)),
            messages::preview_ack_lease,
            messages::preview_retry_lease,
        )?;
        let body = messages::preview_ack_request(deletions, retries)?;
        self.call(Operation::DeletePreviewed, 0, cap)
            .run(send!(self, ack_preview_messages, body))
            .await
            .map(Into::into)
    }
}
