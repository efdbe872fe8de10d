//! What a handler says to do with its message.

use std::time::Duration;

/// What to do with a handled message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Acknowledge it: it is deleted.
    Ack,
    /// Put it back: after this delay (at most 24 hours), or, with `None`,
    /// after the consumer's [`RetryDelay`](crate::consumer::RetryDelay) for its attempts.
    Retry(Option<Duration>),
    /// Stop extending its lease and let it expire: it comes back after the
    /// visibility timeout, with an attempt used.
    Leave,
}
