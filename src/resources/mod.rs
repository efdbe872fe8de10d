//! Queues and consumers as resources: names, settings, and HTTP pull.
//!
//! The messages API takes a queue's 32-hex id, while people know their
//! queues by name; a queue must have an HTTP pull consumer before it can be
//! pulled from; and how messages are delivered (retries, default leases,
//! the dead-letter queue) is configured on that consumer. This module holds
//! the types those calls read and write; the calls are methods of
//! [`Client`](crate::Client) and [`Queue`](crate::Queue):
//!
//! | call | operation | after a lost answer |
//! |---|---|---|
//! | [`Client::queue_by_name`](crate::Client::queue_by_name) | `GET /queues?name=` | retried (reads change nothing) |
//! | [`Client::queues`](crate::Client::queues) | `GET /queues?page=` | retried |
//! | [`Client::create_queue`](crate::Client::create_queue) | `POST /queues` | not repeated: the name is looked up |
//! | [`Queue::info`](crate::Queue::info) | `GET /queues/{id}` | retried |
//! | [`Queue::edit`](crate::Queue::edit) | `PATCH /queues/{id}` | retried (writes the same values) |
//! | [`Queue::delete`](crate::Queue::delete) | `DELETE /queues/{id}` | not repeated: the queue is read back |
//! | [`Queue::consumers`](crate::Queue::consumers) | `GET .../consumers` | retried |
//! | [`Queue::enable_http_pull`](crate::Queue::enable_http_pull) | `POST .../consumers` or `PUT .../consumers/{id}` | create: the consumers are read back; update: retried |
//! | [`Queue::disable_http_pull`](crate::Queue::disable_http_pull) | `DELETE .../consumers/{id}` | not repeated: the consumers are read back |
//!
//! Every one of these calls counts against Cloudflare's per-credential API
//! limit (1,200 requests per five minutes), and the client's pacing by the
//! rate-limit headers covers them like pushes.

mod consumer;
pub(crate) mod lookup;
mod recent;
pub(crate) mod settings;

pub use recent::PROPAGATION_WINDOW;
pub(crate) use recent::RecentlyEnabled;

pub use consumer::{Consumer, HttpPullConsumer, WorkerConsumer};
pub use settings::{
    HttpPullSettings, MAX_RETENTION, MAX_RETRIES_LIMIT, MIN_RETENTION, QueueSettings,
};
