//! What a caller asks of a queue, before it is checked and sent:
//! [`PreviewedChanges`] for previewed messages and [`PurgeConfirmation`] for
//! purging a whole queue. [`PullOptions`] and
//! [`Acks`] are at the crate root.

pub(crate) mod pull_ack;

use std::time::Duration;

use crate::message::PreviewId;

pub(crate) use pull_ack::{Acks, PullOptions};

/// Previewed messages to delete, and previewed messages to delay, sent with
/// [`Queue::delete_previewed`](crate::Queue::delete_previewed).
///
/// A deletion takes effect at once and does not count as a delivery: it
/// leaves the queue's delivery metrics alone, like a purge by ref.
///
/// ```
/// use std::time::Duration;
/// use cf_queues::request::PreviewedChanges;
/// let changes = PreviewedChanges::new()
///     .delete("preview-1")
///     .retry_after("preview-2", Duration::from_secs(60));
/// assert_eq!(changes.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[must_use]
pub struct PreviewedChanges {
    pub(crate) deletions: Vec<PreviewId>,
    pub(crate) retries: Vec<(PreviewId, Option<Duration>)>,
}

impl PreviewedChanges {
    /// Nothing to change yet.
    pub fn new() -> PreviewedChanges {
        PreviewedChanges::default()
    }

    /// Deletes a previewed message at once.
    pub fn delete(mut self, id: impl Into<PreviewId>) -> PreviewedChanges {
        self.deletions.push(id.into());
        self
    }

    /// Leaves a previewed message on the queue (the API's `retries` entry, without a delay).
    pub fn retry(mut self, id: impl Into<PreviewId>) -> PreviewedChanges {
        self.retries.push((id.into(), None));
        self
    }

    /// Hides a previewed message from consumers for `delay` (at most 24 hours).
    pub fn retry_after(mut self, id: impl Into<PreviewId>, delay: Duration) -> PreviewedChanges {
        self.retries.push((id.into(), Some(delay)));
        self
    }

    /// How many deletions and retries there are.
    pub fn len(&self) -> usize {
        self.deletions.len() + self.retries.len()
    }

    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The explicit confirmation [`Queue::purge_all`](crate::Queue::purge_all)
/// needs: the API's `delete_messages_permanently: true`, bound to the id of
/// the queue it is meant for, so that a purge cannot be sent by accident or
/// to the wrong queue.
///
/// ```
/// use cf_queues::request::PurgeConfirmation;
/// let confirm = PurgeConfirmation::delete_messages_permanently("9a7806061c88ada191ed06f989cc3dac");
/// assert_eq!(confirm.queue_id(), "9a7806061c88ada191ed06f989cc3dac");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeConfirmation {
    queue_id: String,
}

impl PurgeConfirmation {
    /// Confirms that every message of queue `queue_id` is to be deleted permanently.
    pub fn delete_messages_permanently(queue_id: impl Into<String>) -> PurgeConfirmation {
        PurgeConfirmation {
            queue_id: queue_id.into(),
        }
    }

    /// The queue the confirmation is for.
    pub fn queue_id(&self) -> &str {
        &self.queue_id
    }
}
