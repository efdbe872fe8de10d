//! The messages area of the API: the twelve operations under
//! `/accounts/{account_id}/queues/{queue_id}/messages` and the queue's
//! metrics and purge, as methods of [`Queue`](crate::Queue), beside their
//! wire conversions. The management area ([`management`](crate::management)
//! in the source: queues and consumers as resources) is laid out alike, and
//! so are the emulator's and `cfq`'s areas of the same names.
//!
//! - `push.rs`: pushes, one message or a batch;
//! - `pull.rs`: leasing: pull, ack and retry, extend;
//! - `browse.rs`: peek and preview, and acting on what was previewed;
//! - `metrics_and_purge.rs`: the whole queue: its metrics, purging it;
//! - `wire.rs`: the requests of the generated client made from the crate's
//!   types, and the crate's types made from its answers (the public types
//!   are in [`request`](crate::request) and [`response`](crate::response)).

mod browse;
mod metrics_and_purge;
mod pull;
mod push;
pub(crate) mod wire;
