//! [`ConsumerInfo`]: a queue's consumer as the API describes it, read
//! tolerantly: an unknown kind or a missing field never fails a call.

use std::time::Duration;

use super::settings::HttpPullSettings;

/// A queue's consumer: its HTTP pull consumer, a Worker, or a kind this
/// crate does not know. A queue has at most one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsumerInfo {
    /// The queue's messages are pulled over HTTP (`type: "http_pull"`).
    HttpPull(HttpPullConsumer),
    /// A Worker consumes the queue (`type: "worker"`): HTTP pull is off, and
    /// cannot be turned on while it stays.
    Worker(WorkerConsumer),
    /// A kind of consumer this crate does not know.
    Other {
        /// The consumer's `type`, as the API wrote it (empty if absent).
        kind: String,
        /// The consumer's id, if given.
        consumer_id: Option<String>,
    },
}

impl ConsumerInfo {
    /// The consumer's id, if the API gave one.
    pub fn consumer_id(&self) -> Option<&str> {
        match self {
            ConsumerInfo::HttpPull(c) => c.consumer_id.as_deref(),
            ConsumerInfo::Worker(c) => c.consumer_id.as_deref(),
            ConsumerInfo::Other { consumer_id, .. } => consumer_id.as_deref(),
        }
    }

    /// The consumer's kind as the API names it: `http_pull`, `worker`, ...
    pub fn kind(&self) -> &str {
        match self {
            ConsumerInfo::HttpPull(_) => "http_pull",
            ConsumerInfo::Worker(_) => "worker",
            ConsumerInfo::Other { kind, .. } => kind,
        }
    }

    /// The HTTP pull consumer, if this is one.
    pub fn as_http_pull(&self) -> Option<&HttpPullConsumer> {
        match self {
            ConsumerInfo::HttpPull(c) => Some(c),
            _ => None,
        }
    }
}

/// A queue's HTTP pull consumer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpPullConsumer {
    /// The consumer's id.
    pub consumer_id: Option<String>,
    /// The name of the queue it consumes.
    pub queue_name: Option<String>,
    /// When it was created, as the API wrote it.
    pub created_on: Option<String>,
    /// Its settings, with the dead-letter queue (`None` when the API wrote
    /// an empty string: no dead-letter queue).
    pub settings: HttpPullSettings,
}

/// A Worker that consumes a queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerConsumer {
    /// The consumer's id.
    pub consumer_id: Option<String>,
    /// The name of the queue it consumes.
    pub queue_name: Option<String>,
    /// When it was created, as the API wrote it.
    pub created_on: Option<String>,
    /// The Worker's name: the answer's `script_name` (the published
    /// description's field) or, when that is absent or empty, its `script`
    /// (the live API's, which wrangler reads).
    pub script_name: Option<String>,
    /// The Worker service that consumes the queue, when the answer names
    /// one (`service`: wrangler finds a Worker consumer by `script` or
    /// `service`).
    pub service: Option<String>,
    /// The **name** of the dead-letter queue, if any.
    pub dead_letter_queue: Option<String>,
    /// The most messages in a batch.
    pub batch_size: Option<u32>,
    /// The retries before a message is deleted or dead-lettered.
    pub max_retries: Option<u32>,
    /// The delay of a retry.
    pub retry_delay: Option<Duration>,
    /// The most concurrent invocations; `None` for the platform's maximum.
    pub max_concurrency: Option<u32>,
    /// How long a batch may wait to fill up.
    pub max_wait_time: Option<Duration>,
}
