//! Pulls through the client that must succeed, for the tests that check
//! what comes back rather than how a pull fails.

use cf_queues::response::PulledBatch;
use cf_queues::{PullOptions, PulledMessage, Queue};

/// A pull from `queue` with `options`, which must succeed.
pub async fn pull(queue: &Queue, options: PullOptions) -> PulledBatch {
    queue.pull(options).await.expect("pull")
}

/// The first message of a pull from `queue` with the default options; the
/// pull must lease at least one.
pub async fn pull_first(queue: &Queue) -> PulledMessage {
    let mut batch = pull(queue, PullOptions::new()).await;
    assert!(!batch.messages.is_empty(), "a pull with nothing in it");
    batch.messages.remove(0)
}

/// Whether a pull from `queue` with the default options leases nothing.
pub async fn pulls_nothing(queue: &Queue) -> bool {
    pull(queue, PullOptions::new()).await.messages.is_empty()
}

/// The text bodies of `messages`, in order.
pub fn texts_of(messages: &[PulledMessage]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m.body().text().expect("a text body"))
        .collect()
}
