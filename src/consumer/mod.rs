//! A pull-consumer runtime (feature `consumer`): pulls within flow-control
//! limits, runs handlers concurrently, keeps their leases alive, batches
//! acks and retries, backs off on empty queues and failures, and shuts down
//! without losing a message.
//!
//! Build a [`Consumer`] from a [`Queue`] with [`Consumer::builder`], then
//! give it a handler of one message ([`Consumer::run`]), of one pull's
//! messages ([`Consumer::run_batch`]), or take its messages as a
//! [`Stream`](futures_util::Stream) ([`Consumer::stream`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cf_queues::Message;
//! use cf_queues::consumer::{Consumer, Outcome};
//! # let emulator = cf_queues_emulator::Emulator::new().start().await?;
//! # let queue = emulator.client()?.queue("orders")?;
//! queue.push(Message::text("hello")).await?;
//!
//! let consumer = Consumer::builder(queue).build()?;
//! let stop = consumer.shutdown_token();
//! let summary = consumer
//!     .run(move |message| {
//!         let stop = stop.clone();
//!         async move {
//!             let text = message.body().text()?.to_owned();
//!             println!("{text}");
//!             stop.cancel(); // one message is enough for this example
//!             Ok::<_, cf_queues::error::BodyError>(Outcome::Ack)
//!         }
//!     })
//!     .await?;
//! assert_eq!((summary.handled, summary.acked), (1, 1));
//! # Ok(()) }
//! ```
//!
//! # Settings
//!
//! | setting | default | why |
//! |---|---|---|
//! | [`batch_size`](ConsumerBuilder::batch_size) | 100 | the API's maximum: fewest requests |
//! | [`visibility_timeout`](ConsumerBuilder::visibility_timeout) | 30 s | Cloudflare's default; extended while handlers run |
//! | [`max_in_flight`](ConsumerBuilder::max_in_flight) | 1,000 messages | Pub/Sub's default; pulls and flushes overlap |
//! | [`max_bytes_in_flight`](ConsumerBuilder::max_bytes_in_flight) | 100 MB (soft) | Pub/Sub's default; bounds memory |
//! | [`ack_batch_size`](ConsumerBuilder::ack_batch_size) | 100 | like a pull; no documented limit |
//! | [`ack_interval`](ConsumerBuilder::ack_interval) | 100 ms | short next to a lease, gathers acks under load |
//! | [`retry_delay`](ConsumerBuilder::retry_delay) | 1 s, doubling, at most 5 min | spares a failing dependency |
//! | [`empty_backoff`](ConsumerBuilder::empty_backoff) | 100 ms to 5 s | short polling only; bounded latency |
//! | [`error_backoff`](ConsumerBuilder::error_backoff) | 1 s to 30 s | after the client's own retries, outages last |
//! | [`max_lease`](ConsumerBuilder::max_lease) | 1 hour | Pub/Sub's default; slower is likely stuck |
//! | [`extend_margin`](ConsumerBuilder::extend_margin) | a third of the visibility timeout | room for an extension and its retries |
//! | [`grace_period`](ConsumerBuilder::grace_period) | 10 s | fits Kubernetes' 30 s termination grace |
//! | [`max_flush_attempts`](ConsumerBuilder::max_flush_attempts) | 5 | about 15 s of trying, then reported |
//!
//! # Leases
//!
//! Each message's lease is extended while its handler runs, a margin
//! before it expires (a third of the visibility timeout by default), up to
//! a maximum total lease ([`ConsumerBuilder::max_lease`]). Expiry is
//! estimated on tokio's monotonic clock from when the pull (or the
//! extension) was sent, never from wall-clock time. A lease that runs out
//! before its message is settled (an extension failed, the maximum was
//! reached, a flush came late) is still settled, since Cloudflare accepts
//! late acks, and is counted in [`Summary::leases_lost`] and logged as a
//! possible duplicate delivery.
//!
//! # Failures
//!
//! Rate limits (429), server errors and network failures on pull back off
//! (honouring `Retry-After` up to 60 s) and carry on. Acks and retries that
//! fail are flushed again with backoff, up to
//! [`ConsumerBuilder::max_flush_attempts`], then reported in
//! [`Summary::unflushed`]. A pull that fails in a way retrying cannot fix
//! (bad credentials, a missing queue) stops the consumer with
//! [`ConsumerError::Stopped`], after the same orderly shutdown.
//!
//! Settlements are at least once on the wire. A flush that failed in a way
//! that may have reached the API anyway (a timeout, a 5xx) is sent again,
//! as the client's own retries do, and the API answers a repeat of an ack
//! it applied with a warning, not an error. A warning on such a resend is
//! counted in [`Summary::resend_warnings`]: most likely settled already,
//! else the lease was lost. A warning on a first send (the client's own
//! retries included, which the consumer cannot tell apart) is counted in
//! [`Summary::settle_warnings`] and [`Summary::leases_lost`].
//!
//! A pulled message without a lease id can be neither settled nor
//! extended: it is not handled, but logged, counted in
//! [`Summary::unsettleable`] and delivered again after the visibility
//! timeout; it never goes into an ack, where the API would refuse the rest.
//!
//! # Shutdown
//!
//! Cancel the token ([`Consumer::shutdown_token`], or the one given to
//! [`ConsumerBuilder::shutdown_token`]): the consumer stops pulling, lets
//! the handlers in flight finish within the grace period (their leases are
//! still extended), then releases the rest (retried with no delay, their
//! handler tasks cancelled), flushes every pending ack and retry, and
//! returns a [`Summary`].
//!
//! A pull already on its way is awaited, not cancelled, so that what it
//! leased is released rather than hidden until its lease expires: the
//! shutdown can take as long as that pull, which the client's timeouts and
//! retries bound. The messages it brings are released, never handled.
//!
//! # Poison messages
//!
//! A body that cannot be decoded (`v8`, an unknown content type, bad base64
//! or JSON) never reaches the handler: it goes to the poison callback
//! ([`ConsumerBuilder::on_poison`]), which decides its outcome. Without one,
//! it is retried with the retry delay, towards the queue's dead-letter queue,
//! and counted in [`Summary::poisoned`].
//!
//! # Tracing
//!
//! Spans `receive` (each pull), `process` (each handler call) and `settle`
//! (each ack call), and `extend`, carry OpenTelemetry's messaging attributes:
//! `messaging.system = "cloudflare_queues"`, `messaging.destination.name`,
//! `messaging.operation.type`, `messaging.batch.message_count`, with
//! `otel.name` and `otel.kind` for `tracing-opentelemetry`.

mod acker;
mod budget;
mod builder;
mod driver;
mod error;
mod flush;
mod lease_keeper;
mod lease_table;
mod outcome;
mod puller;
mod retry_delay;
mod round_trip;
mod run;
mod settings;
mod shared;
mod stream;
mod summary;

pub use builder::ConsumerBuilder;
pub use error::ConsumerError;
pub use outcome::Outcome;
pub use retry_delay::RetryDelay;
pub use run::Consumer;
pub use settings::{
    DEFAULT_ACK_BATCH_SIZE, DEFAULT_ACK_INTERVAL, DEFAULT_BATCH_SIZE, DEFAULT_FLUSH_TIMEOUT,
    DEFAULT_GRACE_PERIOD, DEFAULT_MAX_BYTES_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LEASE,
    DEFAULT_MAX_PENDING_SETTLEMENTS, DEFAULT_MAX_PULLS_IN_FLIGHT, DEFAULT_QUEUE_BUDGET,
    DEFAULT_VISIBILITY_TIMEOUT, MIN_VISIBILITY_TIMEOUT,
};
pub use stream::{LeaseStream, Leased};
pub use summary::{ConsumerMonitor, Summary};
/// The token that shuts a consumer down, re-exported from `tokio-util`.
pub use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::counters::add;
use crate::error::{BodyError, Error, Result};
use crate::message::PulledMessage;
use crate::queue::Queue;
use driver::{BatchFn, EachFn, Mode, PoisonFn};
use settings::Settings;
use shared::{ConsumerState, Ticket};

/// `messaging.system` of every span.
const MESSAGING_SYSTEM: &str = "cloudflare_queues";
