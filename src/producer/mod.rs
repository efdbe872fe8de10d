//! An auto-batching producer (feature `producer`): many callers send one
//! message each; the producer packs them into as few batch pushes as the
//! limits allow, and gives each caller its own outcome.
//!
//! A batch is cut by a [`BatchPlanner`](crate::batch::BatchPlanner) (at most 100 messages and 256 KB,
//! counted as the API counts them) and sent as soon as it is full, or once
//! its first message has waited the linger, and a slot and the token's budget
//! are there. Up to [`ProducerBuilder::max_concurrent_batches`] batches are
//! in flight at once; a bounded buffer in front of the batches makes
//! senders wait (backpressure) instead of growing without bound.
//!
//! # Within the token's budget
//!
//! Pushes over the REST API count against Cloudflare's limit of 1,200
//! requests per five minutes per token (or user), and going over it blocks
//! every call of that token, the pulls and acks of a consumer sharing it
//! included, for five minutes. The client paces its calls by the server's
//! `Ratelimit` headers (see [`RateLimits`](crate::ratelimit::RateLimits)),
//! so a producer never goes over on its own: it sends about 3.86 batches a
//! second at most, which with full batches of 100 is about **386 messages
//! a second per token**, whatever the concurrency. To push more, use more
//! tokens (one client, and so one producer, per token), or push from a
//! Worker binding, which this limit does not cover.
//!
//! While a batch waits for the budget or for a free slot, it keeps filling,
//! up to 100 messages or 256 KB: under a steady load the budget goes to
//! full batches rather than to small ones sent early.
//!
//! # Running several replicas
//!
//! Replicas of one service (a Kubernetes deployment, a few VMs), each with
//! its own client, on one token share its budget with no coordinator and
//! no setting. Every answer's `Ratelimit: r=..` counts the whole token's
//! calls in the window, so each client rebuilds, from how `r` moves
//! between its own answers, what the others spend; it keeps to its share
//! of what the window has room for (its calls over the token's, over the
//! last 0.4 of the window), with its calls on their way bounded by that
//! share and no burst from stale figures, and holds when the window has no
//! room for one call of its share until, by the window's history, calls
//! leave it. A client that sees no one else paces as one alone.
//! [`ProducerStats::token_budget`] shows the figures it last saw, its share
//! and its pace; [`ProducerStats::budget_wait`] how long its batches waited.
//!
//! Backlogged producers, each its own client, through a 100 ms round trip
//! (BENCHMARKS.md, "Producer replicas on one token"):
//!
//! | replicas | Cloudflare's window (1,200 / 300 s, paused time) | window scaled to 120 / 30 s (wall clock) | 429s |
//! |---:|---:|---:|---:|
//! | 1 | 96.8 % of the budget | 96.1 % | 0 |
//! | 4 | 97.3 % | 96.9 % | 0 |
//! | 16 | 98.1 % | 94.2 % | 0 |
//!
//! Where it stops: each client sees the others only at its own answers, so
//! with many replicas its figures are sparse (sixteen replicas see an answer
//! each every four seconds) and it keeps a margin below the quota of one
//! call per replica its share implies (at most a tenth of the quota). It
//! was measured up to 16 replicas; beyond that, or with a window much
//! shorter than Cloudflare's, give each group of replicas a token of its
//! own. A process that does not pace (an unpaced client, another tool)
//! is seen as spending, and left room as long as it spends less than the
//! whole budget; a block it starts anyway is held through, as below.
//!
//! # Refused for the rate: held and sent again
//!
//! A 429 with code 971 (the token's budget, up to Cloudflare's five-minute
//! block) or 10250 (the queue's own rate) says that nothing landed. The
//! batch is then held and sent again, for as long as its
//! [`send_timeout`](ProducerBuilder::send_timeout) allows, counted from
//! when the producer took its oldest message; past it, each of its senders
//! gets [`ProducerError::TimedOut`] (nothing landed, and how many attempts
//! were refused). What one refusal does to everything behind it:
//!
//! - the refused batch waits for what the refusal asked (its
//!   `Retry-After`, never less than the retry policy's backoff, which
//!   doubles, and never more than five minutes: see [the caps on a server's
//!   wait](crate::retry#the-caps-on-a-servers-wait)) and then for the pacer
//!   (which holds every counted call of the token through a block), so that
//!   resends never come faster than the server asked nor back to back;
//! - each refusal halves the batches in flight (at least one; it climbs
//!   back by one after as many successes as it allows), and the held batch
//!   keeps its place: after two refusals it is the only one on its way,
//!   and the later batches wait behind it, still filling, while the buffer
//!   holds senders back. Nothing is dropped; batches in flight together may
//!   land in any order, as always;
//! - the send timeout of a message runs while it waits behind a held
//!   batch: a batch that reaches its first attempt after its timeout still
//!   gets that one attempt, but no resend.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cf_queues::Message;
//! use cf_queues::producer::Producer;
//! # let emulator = cf_queues_emulator::Emulator::new().start().await?;
//! # let queue = emulator.client()?.queue("events")?;
//!
//! let producer = Producer::builder(queue).build()?;
//! // 250 concurrent sends: three requests (100, 100, 50), each caller its own outcome.
//! let sends = (0..250).map(|i| producer.send(Message::text(format!("event {i}"))));
//! for outcome in futures_util::future::join_all(sends).await {
//!     outcome?;
//! }
//! let stats = producer.close().await;
//! assert_eq!((stats.landed, stats.batches), (250, 3));
//! # Ok(()) }
//! ```
//!
//! # Settings
//!
//! | setting | default | why |
//! |---|---|---|
//! | [`linger`](ProducerBuilder::linger) | 5 ms | little latency next to a push, time for a batch to fill |
//! | [`max_buffered`](ProducerBuilder::max_buffered) | 1,000 messages | ten batches: keeps the batches in flight busy, bounds memory |
//! | [`max_concurrent_batches`](ProducerBuilder::max_concurrent_batches) | 4 | hides a push's round trip; the token's budget, not this, bounds the pace |
//! | [`send_timeout`](ProducerBuilder::send_timeout) | 10 min | a batch refused for the rate outlasts a five-minute block; its senders still learn within a bound |
//!
//! # Retries
//!
//! Each batch goes through the queue's own call path, so it is retried as
//! [`Queue::push_batch`](crate::Queue::push_batch) is: by default only when it surely did not land
//! ([`PushRetries`](crate::retry::PushRetries)), so that no message is duplicated
//! unless the queue's retry policy chose at-least-once. The producer adds
//! one kind of resend of its own, which cannot duplicate either: a batch
//! refused for the rate is sent again until its send timeout (above).
//!
//! # Close and drop
//!
//! [`Producer::close`] stops taking messages, sends everything it holds and
//! waits for every outcome. Dropping the last handle does the same in the
//! background: the messages already sent to it are still pushed, and their
//! callers still get their outcomes. If the runtime shuts down first, every
//! message without an outcome yet, buffered or in a batch on its way, is
//! counted in a `tracing` error (batches on their way may have landed), and
//! its caller gets [`ProducerError::Dropped`], which says whether it may
//! have landed: never a silent loss.
//!
//! # Did it land?
//!
//! [`ProducerError::may_have_landed`] tells each sender whether its message
//! may have been pushed all the same (a batch whose answer was lost, a 5xx,
//! a timeout), so that it can choose to send it again and risk a
//! duplicate, or not.

mod builder;
mod error;
#[allow(clippy::module_inception)]
mod producer;
mod settings;
mod summary;
mod worker;

pub use builder::ProducerBuilder;
pub use error::ProducerError;
pub use producer::Producer;
pub use settings::{
    DEFAULT_LINGER, DEFAULT_MAX_BUFFERED, DEFAULT_MAX_CONCURRENT_BATCHES, DEFAULT_SEND_TIMEOUT,
};
pub use summary::{ProducerMonitor, ProducerStats};
