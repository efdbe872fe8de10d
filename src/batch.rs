//! Batches of messages to push: [`Batch`], given by the caller, and
//! [`BatchPlanner`], which cuts any number of messages into batches within
//! the count and byte limits.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::message::Message;
use crate::raw::types;

/// Messages to push together, with an optional delay for the whole batch.
///
/// ```
/// use std::time::Duration;
/// use cf_queues::Message;
/// use cf_queues::batch::Batch;
/// let batch = Batch::new([Message::text("a"), Message::text("b")]).with_delay(Duration::from_secs(10));
/// assert_eq!(batch.messages().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct Batch {
    pub(crate) messages: Vec<Message>,
    pub(crate) delay: Option<Duration>,
}

impl Batch {
    /// A batch of `messages`.
    pub fn new(messages: impl IntoIterator<Item = Message>) -> Batch {
        Batch {
            messages: messages.into_iter().collect(),
            delay: None,
        }
    }

    /// Delays delivery of the whole batch (at most 24 hours; rounded up to whole seconds).
    pub fn with_delay(mut self, delay: Duration) -> Batch {
        self.delay = Some(delay);
        self
    }

    /// The messages in the batch.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }
}

impl From<Vec<Message>> for Batch {
    fn from(messages: Vec<Message>) -> Self {
        Batch::new(messages)
    }
}

/// Cuts messages into batches within the limits, one message at a time.
///
/// Each message goes in with a tag of the caller's (an index, a line
/// number, a reply channel); a batch comes out as soon as the next message
/// would not fit in it, by count ([`Limits::max_batch_messages`]) or by
/// bytes ([`Limits::max_batch_bytes`], counted as the API counts them).
/// A message that breaks a limit on its own is refused alone, with its
/// tag. The planner sends nothing: give what comes out to
/// [`Queue::push_planned`](crate::Queue::push_planned).
///
/// ```
/// use cf_queues::Message;
/// use cf_queues::batch::BatchPlanner;
/// use cf_queues::limits::Limits;
///
/// let mut planner = BatchPlanner::new(Limits::default());
/// let mut batches = Vec::new();
/// for i in 0..250 {
///     if let Some(full) = planner.add(i, Message::text(format!("event {i}")))? {
///         batches.push(full);
///     }
/// }
/// batches.extend(planner.finish());
/// let sizes: Vec<usize> = batches.iter().map(|b| b.len()).collect();
/// assert_eq!(sizes, [100, 100, 50]);
/// # Ok::<(), cf_queues::Error>(())
/// ```
#[derive(Debug)]
pub struct BatchPlanner<T> {
    limits: Limits,
    open: PlannedBatch<T>,
}

/// A batch cut by [`BatchPlanner`]: messages already checked and encoded,
/// with their tags in order.
#[derive(Debug)]
#[must_use]
pub struct PlannedBatch<T> {
    tags: Vec<T>,
    pub(crate) wires: Vec<types::QueueMessage>,
    bytes: usize,
}

impl<T> PlannedBatch<T> {
    fn empty() -> PlannedBatch<T> {
        PlannedBatch {
            tags: Vec::new(),
            wires: Vec::new(),
            bytes: 0,
        }
    }

    /// The tags of the batch's messages, in the order they were added.
    pub fn tags(&self) -> &[T] {
        &self.tags
    }

    /// Takes the tags out, leaving the batch empty.
    pub fn into_tags(self) -> Vec<T> {
        self.tags
    }

    /// How many messages the batch holds.
    pub fn len(&self) -> usize {
        self.tags.len()
    }

    /// Whether the batch holds no message.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// The bytes the batch counts for against [`Limits::max_batch_bytes`].
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl<T> BatchPlanner<T> {
    /// A planner for these limits; usually the client's,
    /// [`Client::limits`](crate::Client::limits).
    pub fn new(limits: Limits) -> BatchPlanner<T> {
        BatchPlanner {
            limits,
            open: PlannedBatch::empty(),
        }
    }

    /// Adds a message. Returns the batch it closes, if it did not fit in
    /// it (the message then opens the next batch).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] when the message breaks a limit on its own
    /// (its size, its delay); the tag comes back with it in
    /// [`Rejected`], and the planner is unchanged.
    pub fn add(
        &mut self,
        tag: T,
        message: Message,
    ) -> Result<Option<PlannedBatch<T>>, Rejected<T>> {
        let (wire, counted) = match message.to_wire(&"message", &self.limits) {
            Ok(encoded) => encoded,
            Err(error) => return Err(Rejected { tag, error }),
        };
        let full = self.open.len() >= self.limits.max_batch_messages
            || self.open.bytes + counted > self.limits.max_batch_bytes;
        let closed = (full && !self.open.is_empty())
            .then(|| std::mem::replace(&mut self.open, PlannedBatch::empty()));
        self.open.tags.push(tag);
        self.open.wires.push(wire);
        self.open.bytes += counted;
        Ok(closed)
    }

    /// Whether the open batch is full: no further message can join it.
    pub fn is_full(&self) -> bool {
        self.open.len() >= self.limits.max_batch_messages
            || self.open.bytes + self.limits.message_metadata_bytes > self.limits.max_batch_bytes
    }

    /// How many messages wait in the open batch.
    pub fn pending(&self) -> usize {
        self.open.len()
    }

    /// Closes the open batch early (a linger ran out), if it holds anything.
    pub fn take(&mut self) -> Option<PlannedBatch<T>> {
        (!self.open.is_empty()).then(|| std::mem::replace(&mut self.open, PlannedBatch::empty()))
    }

    /// The last batch, if any message is left.
    pub fn finish(mut self) -> Option<PlannedBatch<T>> {
        self.take()
    }
}

/// A message [`BatchPlanner::add`] refused, with its tag and why.
#[derive(Debug)]
#[non_exhaustive]
pub struct Rejected<T> {
    /// The tag the message came with.
    pub tag: T,
    /// Why it was refused: [`Error::InvalidInput`].
    pub error: Error,
}

impl<T> From<Rejected<T>> for Error {
    fn from(rejected: Rejected<T>) -> Error {
        rejected.error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes<T>(batches: &[PlannedBatch<T>]) -> Vec<usize> {
        batches.iter().map(PlannedBatch::len).collect()
    }

    fn plan(messages: Vec<Message>, limits: Limits) -> (Vec<PlannedBatch<usize>>, Vec<usize>) {
        let mut planner = BatchPlanner::new(limits);
        let (mut batches, mut refused) = (Vec::new(), Vec::new());
        for (i, message) in messages.into_iter().enumerate() {
            match planner.add(i, message) {
                Ok(Some(full)) => batches.push(full),
                Ok(None) => {}
                Err(rejected) => refused.push(rejected.tag),
            }
        }
        batches.extend(planner.finish());
        (batches, refused)
    }

    #[test]
    fn cuts_by_count() {
        let (batches, refused) = plan(
            (0..201).map(|i| Message::text(i.to_string())).collect(),
            Limits::default(),
        );
        assert_eq!(sizes(&batches), [100, 100, 1]);
        assert!(refused.is_empty());
        let tags: Vec<usize> = batches
            .into_iter()
            .flat_map(PlannedBatch::into_tags)
            .collect();
        assert_eq!(tags, (0..201).collect::<Vec<_>>());
    }

    #[test]
    fn cuts_by_bytes_as_the_api_counts_them() {
        // 3,000 bytes of body plus 100 of metadata: 82 fit in 256,000 bytes.
        let (batches, _) = plan(
            (0..200).map(|_| Message::text("x".repeat(3_000))).collect(),
            Limits::default(),
        );
        assert_eq!(sizes(&batches), [82, 82, 36]);
        assert!(batches.iter().all(|b| b.bytes() <= 256_000));
        assert_eq!(batches[0].bytes(), 82 * 3_100);
    }

    #[test]
    fn an_oversized_message_is_refused_alone() {
        let mut messages: Vec<Message> = (0..5).map(|i| Message::text(i.to_string())).collect();
        messages[2] = Message::text("x".repeat(200_000));
        let (batches, refused) = plan(messages, Limits::default());
        assert_eq!(refused, [2]);
        assert_eq!(batches[0].tags(), [0, 1, 3, 4]);
    }

    #[test]
    fn full_and_take() {
        let limits = Limits {
            max_batch_messages: 2,
            ..Limits::default()
        };
        let mut planner = BatchPlanner::new(limits);
        assert!(planner.take().is_none());
        assert!(matches!(planner.add('a', Message::text("a")), Ok(None)));
        assert!(!planner.is_full());
        assert!(matches!(planner.add('b', Message::text("b")), Ok(None)));
        assert!(planner.is_full());
        assert_eq!(planner.take().map(|b| b.into_tags()), Some(vec!['a', 'b']));
        assert_eq!(planner.pending(), 0);
    }
}
