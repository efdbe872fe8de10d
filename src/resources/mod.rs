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
//! | [`Client::create_queue`](crate::Client::create_queue) | `POST /queues` | not repeated: the name is looked up, and the queue found adopted only if created after sending (by the server's clock, read from the answers' `Date`) |
//! | [`Client::create_queue_with`](crate::Client::create_queue_with) | `POST /queues` with `settings`, then `PATCH /queues/{id}` once if the answer does not show them | as `create_queue`; the edit is retried |
//! | [`Queue::info`](crate::Queue::info) | `GET /queues/{id}` | retried |
//! | [`Queue::edit`](crate::Queue::edit) | `PATCH /queues/{id}` | retried (writes the same values) |
//! | [`Queue::delete`](crate::Queue::delete) | `DELETE /queues/{id}` | not repeated: the queue is read back |
//! | [`Queue::consumers`](crate::Queue::consumers) | `GET .../consumers` | retried |
//! | [`Queue::enable_http_pull`](crate::Queue::enable_http_pull) | `POST .../consumers` or `PUT .../consumers/{id}` | create: the consumers are read back; update: retried |
//! | [`Queue::disable_http_pull`](crate::Queue::disable_http_pull) | `DELETE .../consumers/{id}` | not repeated: the consumers are read back |
//!
//! Names are checked before anything is sent: a queue to create, and a
//! dead-letter queue ([`HttpPullSettings::dead_letter_queue`]), by the rule
//! the live API states when it refuses one (1 to 63 lowercase letters,
//! digits and dashes, no dash first or last). Answers are read tolerantly:
//! a Worker consumer's name comes from `script_name` (the published
//! description) or `script` (the live API), see [`WorkerConsumer`].
//!
//! Every one of these calls counts against Cloudflare's per-credential API
//! limit (1,200 requests per five minutes), and the client's pacing by the
//! rate-limit headers covers them like pushes.

mod consumer;
pub(crate) mod settings;

pub use crate::management::PROPAGATION_WINDOW;

pub use consumer::{ConsumerInfo, HttpPullConsumer, WorkerConsumer};
pub use settings::{
    HttpPullSettings, MAX_RETENTION, MAX_RETRIES_LIMIT, MIN_RETENTION, QueueSettings,
};
