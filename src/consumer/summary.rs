//! What a consumer counted: live counters, a [`Summary`] of them, and the
//! [`ConsumerMonitor`] that reads them while the consumer runs.

use std::sync::Arc;

/// What a consumer did, as counts: returned by
/// [`Consumer::run`](super::Consumer::run) at the end, and read at any time
/// with [`ConsumerMonitor::snapshot`].
///
/// Each message pulled ends in exactly one of `acked`, `retried`,
/// `released`, `left`, `unflushed`, `unsettleable`, `settle_warnings` or
/// `resend_warnings` (a settlement the API answered with a warning);
/// `in_flight` counts those not yet there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Summary {
    /// Pull requests that succeeded.
    pub pulls: u64,
    /// Pulls that came back empty.
    pub empty_pulls: u64,
    /// Pull calls that failed (after the client's own retries).
    pub pull_errors: u64,
    /// Messages leased by pulls.
    pub received: u64,
    /// Handler calls that finished (with an outcome or an error), and
    /// messages settled through a [`Leased`](super::Leased) handle.
    pub handled: u64,
    /// Handler calls that returned `Err` (each retried with the retry delay).
    pub handler_errors: u64,
    /// Messages whose body could not be decoded (`v8`, unknown content
    /// types, bad base64 or JSON), given to the poison callback.
    pub poisoned: u64,
    /// Acknowledgements the API accepted.
    pub acked: u64,
    /// Retries the API accepted (handler retries, errors, dropped handles).
    pub retried: u64,
    /// Messages given back at shutdown (retried with no delay).
    pub released: u64,
    /// Messages left to expire on purpose ([`Verdict::Leave`](super::Verdict::Leave)).
    pub left: u64,
    /// Lease extensions the API accepted, one per lease per call.
    pub extended: u64,
    /// Extension calls that failed.
    pub extend_errors: u64,
    /// Messages whose lease reached the maximum total lease time
    /// while still held: no longer extended.
    pub max_lease_reached: u64,
    /// Leases that expired, or were taken over, before their message was
    /// settled (an extension failed, the maximum was reached, or a flush was
    /// late): each is a possible duplicate delivery. The message was still
    /// settled, as Cloudflare accepts late acks.
    #[doc(alias = "expired")]
    pub leases_lost: u64,
    /// Acks and retries the API answered with a warning on their first
    /// send (the message was gone or delivered again): not applied by this
    /// consumer, and counted in `leases_lost` too. The client's own retries
    /// of a call happen within one send: a warning after them lands here.
    pub settle_warnings: u64,
    /// Acks and retries sent again by the consumer after a flush failed in
    /// a way that may have applied them (a timeout, a 5xx), which the API
    /// then answered with a warning: most likely the first send applied
    /// them and the message is gone; else its lease was lost meanwhile.
    /// Counted neither in `acked` nor in `leases_lost`.
    pub resend_warnings: u64,
    /// Pulled messages without a lease id, which cannot be settled or
    /// extended: not handled, logged, and delivered again after the
    /// visibility timeout.
    pub unsettleable: u64,
    /// Ack and retry calls sent (each carrying up to the ack batch size).
    pub settle_requests: u64,
    /// Ack and retry calls that failed (after the client's own retries); their
    /// acks were tried again.
    pub settle_errors: u64,
    /// Acks and retries sent more than once by the consumer (each resend
    /// counts the settlements it carried), after a flush failed.
    pub settlement_resends: u64,
    /// Acks and retries given up: their flush failed in a way retrying
    /// cannot fix, their lease could no longer be kept (the maximum lease
    /// passed), or the shutdown's flush timeout ran out. Their messages come
    /// back after their leases expire.
    pub unflushed: u64,
    /// Pulls refused with 429 (the queue's limit, code 10250, or the API's,
    /// code 971), after the client's own retries.
    pub rate_limited_pulls: u64,
    /// Ack and retry calls refused with 429.
    pub rate_limited_settles: u64,
    /// Extension calls refused with 429.
    pub rate_limited_extends: u64,
    /// Calls refused for the queue's allowance (429, code 10250), pulls,
    /// settlements and extensions alike, each attempt counted. Each one
    /// lowers this replica's share; see "Running several replicas" in the
    /// [module docs](super).
    pub refused_by_queue: u64,
    /// Calls refused for the token's budget (429, code 971): the API's
    /// limit on the credential, which pulls and acks do not draw on but
    /// which blocks every call of the credential when spent.
    pub refused_by_token: u64,
    /// This replica's pace now: the messages a second its share of the
    /// queue's allowance lets it pull (at most
    /// [`queue_allowance`](super::ConsumerBuilder::queue_allowance)),
    /// as of the last refusal or pull. Not a count: a snapshot's value.
    pub pace: u64,
    /// Blocks of the credential waited out: a 429 with code 971 whose
    /// `Retry-After` (up to five minutes) is longer than the client's retries
    /// wait. Pulling stops until it ends; settlements are sent after it.
    pub blocked: u64,
    /// Pulls on their way now.
    pub pulls_in_flight: u64,
    /// The most pulls on their way at once so far.
    pub max_pulls_in_flight: u64,
    /// The queue's backlog as reported by the last pull that reported one
    /// (an answer without `message_backlog_count` leaves it as it was).
    pub backlog: u64,
    /// Messages leased and not settled yet.
    pub in_flight: u64,
    /// Body bytes of the messages in flight.
    pub in_flight_bytes: u64,
}

crate::counters::live_counters!(
    /// The live counters, one per [`Summary`] field, and the consumer's
    /// other metrics (see [`crate::metrics`] under the `metrics` feature).
    ConsumerCounters => Summary {
        tallies {
            pulls: counter("cf_queues.consumer.pulls", "cf_queues.outcome" = "ok"),
            empty_pulls: counter("cf_queues.consumer.pulls", "cf_queues.outcome" = "empty"),
            pull_errors: counter("cf_queues.consumer.pulls", "cf_queues.outcome" = "error"),
            received: counter("messaging.client.consumed.messages"),
            handled,
            handler_errors,
            poisoned: counter("cf_queues.consumer.poisoned"),
            acked: counter("cf_queues.consumer.settlements", "cf_queues.outcome" = "ack"),
            retried: counter("cf_queues.consumer.settlements", "cf_queues.outcome" = "retry"),
            released: counter("cf_queues.consumer.settlements", "cf_queues.outcome" = "release"),
            left: counter("cf_queues.consumer.settlements", "cf_queues.outcome" = "leave"),
            extended: counter("cf_queues.consumer.leases.extended"),
            extend_errors: counter("cf_queues.consumer.leases.extension_errors"),
            max_lease_reached: counter("cf_queues.consumer.leases.max_reached"),
            leases_lost: counter("cf_queues.consumer.leases.lost"),
            settle_warnings: counter("cf_queues.consumer.settlement.warnings", "cf_queues.outcome" = "first"),
            resend_warnings: counter("cf_queues.consumer.settlement.warnings", "cf_queues.outcome" = "resend"),
            unsettleable,
            settle_requests,
            settle_errors: counter("cf_queues.consumer.settlement.errors"),
            settlement_resends: counter("cf_queues.consumer.settlement.resends"),
            unflushed: counter("cf_queues.consumer.settlement.unflushed"),
            rate_limited_pulls,
            rate_limited_settles,
            rate_limited_extends,
            refused_by_queue: counter("cf_queues.consumer.refusals", "cf_queues.limit" = "queue"),
            refused_by_token: counter("cf_queues.consumer.refusals", "cf_queues.limit" = "token"),
            pace: gauge("cf_queues.consumer.pace"),
            blocked: counter("cf_queues.consumer.blocks"),
            pulls_in_flight: gauge("cf_queues.consumer.pulls_in_flight"),
            max_pulls_in_flight,
            backlog: gauge("cf_queues.consumer.pulled_backlog"),
            in_flight: gauge("cf_queues.consumer.messages_in_flight"),
            in_flight_bytes: gauge("cf_queues.consumer.bytes_in_flight"),
        }
        figures {
            processed_ack: histogram("messaging.process.duration", "cf_queues.outcome" = "ack"),
            processed_retry: histogram("messaging.process.duration", "cf_queues.outcome" = "retry"),
            processed_leave: histogram("messaging.process.duration", "cf_queues.outcome" = "leave"),
            processed_error: histogram("messaging.process.duration", "cf_queues.outcome" = "error"),
            processed_batch: histogram("messaging.process.duration", "cf_queues.outcome" = "batch"),
            processed_batch_error: histogram("messaging.process.duration", "cf_queues.outcome" = "batch_error"),
            lag: gauge("cf_queues.consumer.lag"),
        }
    }
);

/// Reads a consumer's counters while it runs; cheap to clone.
///
/// ```no_run
/// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
/// use cf_queues::consumer::{Consumer, Verdict};
/// let consumer = Consumer::builder(queue).build()?;
/// let monitor = consumer.monitor();
/// tokio::spawn(async move {
///     loop {
///         tokio::time::sleep(std::time::Duration::from_secs(10)).await;
///         let s = monitor.snapshot();
///         println!("in flight {}, acked {}, backlog {}", s.in_flight, s.acked, s.backlog);
///     }
/// });
/// consumer.run(|_message| async { Ok::<_, std::convert::Infallible>(Verdict::Ack) }).await.ok();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ConsumerMonitor {
    pub(crate) counters: Arc<ConsumerCounters>,
}

impl ConsumerMonitor {
    /// The counters as they are now.
    pub fn snapshot(&self) -> Summary {
        self.counters.snapshot()
    }
}
