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
//! use cf_queues::consumer::{Consumer, Verdict};
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
//!             Ok::<_, cf_queues::error::BodyError>(Verdict::Ack)
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
//! | [`visibility_timeout`](ConsumerBuilder::visibility_timeout) | 30 s (at least 1 s) | Cloudflare's default; extended while handlers run |
//! | [`max_in_flight`](ConsumerBuilder::max_in_flight) | 2,000 messages | at 200 ms, the pulls on their way hold 1,000 at Cloudflare's rate; as many again for handlers |
//! | [`max_pulls_in_flight`](ConsumerBuilder::max_pulls_in_flight) | 16 | 8,000 messages a second at 200 ms: the queue's allowance, not the round trip, paces |
//! | [`queue_allowance`](ConsumerBuilder::queue_allowance) | 4,900 a second | 98 % of Cloudflare's per-queue limit, for pulls and for settlements; one replica's most |
//! | [`max_bytes_in_flight`](ConsumerBuilder::max_bytes_in_flight) | 100 MB (soft) | Pub/Sub's default; bounds memory |
//! | [`ack_batch_size`](ConsumerBuilder::ack_batch_size) | 100 | like a pull; no documented limit |
//! | [`ack_interval`](ConsumerBuilder::ack_interval) | 100 ms | short next to a lease, gathers acks under load |
//! | [`max_pending_settlements`](ConsumerBuilder::max_pending_settlements) | 5,000 | a second of Cloudflare's rate; a failing ack endpoint stops pulling |
//! | [`retry_delay`](ConsumerBuilder::retry_delay) | 1 s, doubling, at most 5 min | spares a failing dependency |
//! | [`empty_backoff`](ConsumerBuilder::empty_backoff) | 100 ms to 5 s | short polling only; bounded latency |
//! | [`error_backoff`](ConsumerBuilder::error_backoff) | 1 s to 30 s | after the client's own retries, outages last |
//! | [`max_lease`](ConsumerBuilder::max_lease) | 1 hour | Pub/Sub's default; slower is likely stuck |
//! | [`extend_margin`](ConsumerBuilder::extend_margin) | a third of the visibility timeout, raised to 4 round trips | room for an extension and its retries |
//! | [`grace_period`](ConsumerBuilder::grace_period) | 10 s | with `flush_timeout`, fits Kubernetes' 30 s termination grace |
//! | [`flush_timeout`](ConsumerBuilder::flush_timeout) | 10 s | the last acks' time after the grace period |
//! | [`read_backlog`](ConsumerBuilder::read_backlog) | off; 30 s when on, at least 5 s | the backlog gauges an autoscaler reads cost calls of the token: 10 of its 1,200 in five minutes at 30 s |
//!
//! # At a distance
//!
//! Cloudflare is tens to hundreds of milliseconds away, and one call at a
//! time gets at most 100 messages per round trip (1,000 a second at 100 ms)
//! where Cloudflare serves a queue 5,000. So every kind of call overlaps:
//!
//! - **Pulls.** Up to [`max_pulls_in_flight`](ConsumerBuilder::max_pulls_in_flight)
//!   are on their way at once. The consumer starts with half, adds one for
//!   each pull that comes back full, drops one after a partial pull (and
//!   waits the first step of `empty_backoff`), falls back to one after an
//!   empty pull (backing off as the empty pulls go on), and halves after an
//!   error. Full pulls follow each other without a pause.
//! - **The queue's allowance.** Cloudflare serves a queue 5,000 pulled
//!   messages and 5,000 settled or extended leases a second, and refuses a
//!   call over either whole (429, code 10250), so the consumer paces itself
//!   below it: each pull reserves the messages it asks for (and gets back
//!   what it did not receive), each ack and extension the leases it lists,
//!   from its share of the allowance, at most
//!   [`queue_allowance`](ConsumerBuilder::queue_allowance) a second each.
//!   The share adapts to the other replicas on the queue (see below); a
//!   refusal is not retried by the client, so that the next call waits
//!   for the lower pace rather than a second of `Retry-After`.
//! - **Flow control.** `max_in_flight` counts the messages asked for by
//!   pulls on their way and those with their handlers. A message frees its
//!   slot when its handler settles it, so an ack's round trip is not charged
//!   to the handlers (a message whose lease ran out keeps its slot until
//!   its late ack lands, so the consumer does not pull it again first);
//!   settlements on their way are bounded by `max_pending_settlements`.
//!   The byte limit is soft: what the pulls on their way bring is estimated
//!   from the sizes seen so far, so it can be passed by what they bring
//!   beyond the estimate, at most `max_pulls_in_flight × batch_size`
//!   messages.
//! - **Acks and retries** are flushed by size or after the interval, each
//!   chunk by a task of its own, so a failing chunk is tried again on its
//!   own (with `error_backoff`) and never holds up other settlements,
//!   pulls or the shutdown beyond its bound. A settlement is tried as long
//!   as its lease can be kept (`max_lease` after its pull); its lease keeps
//!   being extended while it waits.
//! - **Extensions** overlap too, each with a deadline of half the margin:
//!   a slow or failed one is tried again before its leases expire. The
//!   margin grows to cover four observed round trips, and the consumer
//!   warns when the visibility timeout is too short for that.
//!
//! # Running several replicas
//!
//! Replicas of one service (a Kubernetes deployment, a few VMs), each with
//! its own [`Client`](crate::Client) and consumer on one queue, share the
//! queue's allowance with no coordinator and no setting. Every pull answer
//! carries the queue's backlog count; while the queue is drained, the
//! count falls as fast as all the replicas together take messages, and
//! every replica reads the same figure. From it each sets its pace: all
//! slow down as soon as they together pass 95.5 % of the queue's limit
//! ([`queue_limit`](ConsumerBuilder::queue_limit)),
//! before the queue refuses any of them, and all climb by the same step
//! while under it, so that the shares meet and a replica that starts or
//! stops is made room for, or its share taken up, within seconds. A
//! replica alone (it pulls nearly all the count loses) goes up to its
//! `queue_allowance`. Its pulls start at a quarter of `queue_allowance`,
//! doubling every half second until it reads the count.
//!
//! When the count is not the replicas' pace (messages pushed meanwhile,
//! or a count that does not move), the queue keeps refusing them at the
//! limit, and each replica then goes by its refusals alone for a minute
//! (longer each time it happens again, up to eight minutes):
//! a refusal lowers its pace by a tenth of the allowance, and it climbs
//! back between refusals, the faster the further below the allowance it
//! is. A replica learns only from its own refusals, so that way the more
//! replicas, the more are refused. A `Retry-After` over a second holds the
//! replica's calls until then. [`Summary::pace`] says a replica's pace now,
//! [`Summary::refused_by_queue`] and [`Summary::refused_by_token`] its
//! refusals by limit (also live, through [`ConsumerMonitor::snapshot`]).
//!
//! Measured at a 100 ms round trip against the emulator's model of
//! Cloudflare's limits, draining a queue: two, four and eight replicas
//! together pull 4,773, 4,810 and 4,980 messages a second, with none,
//! none and 0.57 % of their requests refused, each within 8 % of an equal
//! share; one that joins three others is at 140 % of an equal share
//! 10 s later (its price's memory starts empty; the shares meet over a
//! minute or two), and when one stops the others are back at the limit
//! within 3 s. With 1,000 messages a second pushed meanwhile, four
//! replicas have 2.8 % of their requests refused, most in the seconds
//! before they turn to their refusals.
//!
//! Replicas that know their number and want no refusal at all can take
//! their share by hand (`queue_allowance(4_900 / replicas)`). How the
//! share works: `consumer/allowance/`; every figure: BENCHMARKS.md
//! ("Replicas sharing a queue").
//!
//! # Leases
//!
//! Each message's lease is extended while its handler runs and while its
//! settlement is on its way, a margin before it expires, up to a maximum
//! total lease ([`ConsumerBuilder::max_lease`]). Expiry is estimated on
//! tokio's monotonic clock from when the pull (or the extension) was sent,
//! never from wall-clock time. A lease that runs out before its message is
//! settled (an extension failed, the maximum was reached, a flush came
//! late) is still settled, since Cloudflare accepts late acks, and is
//! counted in [`Summary::leases_lost`] and logged as a possible duplicate
//! delivery.
//!
//! # Failures
//!
//! Rate limits (429), server errors and network failures on pull back off
//! (honouring a longer `Retry-After` up to the queue's `max_retry_after`,
//! 60 s, never a shorter one) and carry on; 429s are counted by call in
//! [`Summary`]. A block of the credential (429 with code 971 and a
//! `Retry-After` of minutes, after 1,200 other requests of the token in
//! five minutes) stops pulling until it ends, at most five minutes whatever
//! the server says; settlements are sent after it, and it is counted in
//! [`Summary::blocked`]. No server figure can panic the consumer or hold it
//! past these caps: see [the caps on a server's
//! wait](crate::retry#the-caps-on-a-servers-wait). Acks and retries that
//! fail are flushed again with backoff while their leases can be kept,
//! then reported in [`Summary::unflushed`]. A pull that fails in a way
//! retrying cannot fix (bad credentials, a missing queue) stops the
//! consumer with [`ConsumerError::Stopped`], after the same orderly
//! shutdown.
//!
//! Settlements are at least once on the wire. A flush that failed in a way
//! that may have reached the API anyway (a timeout, a 5xx) is sent again,
//! as the client's own retries do, and the API answers a repeat of an ack
//! it applied with a warning, not an error. A warning on such a resend is
//! counted in [`Summary::resend_warnings`]: most likely settled already,
//! else the lease was lost (a warning on extending such a lease stops its
//! extensions and is left for the resend to count). A warning on a first
//! send (the client's own retries included, which the consumer cannot tell
//! apart) is counted in [`Summary::settle_warnings`] and
//! [`Summary::leases_lost`]. Warnings in the old list form name no lease:
//! an extension is sent again in halves until each answer is about one
//! lease, and an ack's counts say how many of its settlements were not
//! applied.
//!
//! Every retry the consumer sends carries its delay, `delay_seconds: 0`
//! included (releases, [`RetryDelay::none`]): without one, the queue's own
//! retry delay would apply.
//!
//! A pulled message without a lease id can be neither settled nor
//! extended: it is not handled, but logged, counted in
//! [`Summary::unsettleable`] and delivered again after the visibility
//! timeout; it never goes into an ack, where the API would refuse the rest.
//!
//! # Pausing pulls
//!
//! A handler whose downstream is down can hold its messages (their leases
//! are extended, which uses no attempt) and stop the consumer leasing more
//! meanwhile with [`Consumer::pull_switch`]: while paused, no pull starts,
//! and the messages the others could take stay on the queue for them.
//! `cfq relay` pauses this way while its target is down.
//!
//! # Shutdown
//!
//! Cancel the token ([`Consumer::shutdown_token`], or the one given to
//! [`ConsumerBuilder::shutdown_token`]): the consumer stops pulling, and
//! for the grace period lets the handlers in flight finish (their leases
//! are still extended) and the pulls on their way land; what they bring
//! goes to the handlers too (a stream keeps yielding until the grace
//! period ends), rather than being released unseen. Then the pulls still
//! on their way are dropped (their messages come back when their leases
//! expire), the messages still with handlers are released (retried with no
//! delay, their handler tasks cancelled), and the pending acks and retries
//! get the flush timeout; what is unsent after it is counted in
//! [`Summary::unflushed`].
//!
//! So [`Consumer::run`] returns within `grace_period + flush_timeout` (20 s
//! by default), plus the time the last answers take to be read.
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
mod allowance;
mod backlog_reader;
mod builder;
#[allow(clippy::module_inception)]
mod consumer;
mod dispatch;
mod driver;
mod error;
mod flush;
mod lease_keeper;
mod lease_table;
mod pull_switch;
mod puller;
mod retry_delay;
mod round_trip;
mod settings;
mod settlement;
mod state;
mod stream;
mod summary;

pub use backlog_reader::{Backlog, BacklogReader, DEFAULT_BACKLOG_INTERVAL, MIN_BACKLOG_INTERVAL};
pub use builder::ConsumerBuilder;
pub use error::ConsumerError;
pub use pull_switch::PullSwitch;
pub use settlement::Verdict;

/// The handler's verdict under its 0.2 name.
#[deprecated(since = "0.3.0", note = "renamed Verdict")]
pub type Outcome = Verdict;
pub use consumer::Consumer;
pub use retry_delay::RetryDelay;
#[allow(deprecated)]
pub use settings::DEFAULT_QUEUE_BUDGET;
pub use settings::{
    DEFAULT_ACK_BATCH_SIZE, DEFAULT_ACK_INTERVAL, DEFAULT_BATCH_SIZE, DEFAULT_FLUSH_TIMEOUT,
    DEFAULT_GRACE_PERIOD, DEFAULT_MAX_BYTES_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LEASE,
    DEFAULT_MAX_PENDING_SETTLEMENTS, DEFAULT_MAX_PULLS_IN_FLIGHT, DEFAULT_QUEUE_ALLOWANCE,
    DEFAULT_QUEUE_LIMIT, DEFAULT_VISIBILITY_TIMEOUT, MIN_VISIBILITY_TIMEOUT,
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
use dispatch::{BatchFn, EachFn, Mode, PoisonFn};
use settings::Settings;
use state::{ConsumerState, Ticket};
