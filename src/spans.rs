//! Every span the crate opens, in one place beside the metrics
//! ([`metrics`](crate::metrics), feature `metrics`): their names and
//! fields are part of what operators rely on, so they are decided here and
//! nowhere else.
//!
//! - the call (`cf_queues`, one per call, its attempt count recorded) and
//!   each attempt inside it (`attempt`, twice: the retry loop's, with the
//!   attempt's number, and the hook's, with the status and duration);
//! - the consumer's and the producer's, after OpenTelemetry's messaging
//!   conventions: `receive` (a pull), `process` (a handler call, for one
//!   message or a batch), `settle` (an ack), `extend` (lease extensions)
//!   and `send` (the producer's batch).
//!
//! Each span keeps the target it had when the task that opens it wrote it
//! (`cf_queues::call` for the call and its attempt, `cf_queues::attempt`
//! for the exchange, `cf_queues::consumer::puller` for `receive`, and so
//! on): a filter written for them keeps working.

#[cfg(feature = "consumer")]
use crate::PulledMessage;

/// `messaging.system` of every messaging span.
#[cfg(any(feature = "consumer", feature = "producer"))]
const MESSAGING_SYSTEM: &str = "cloudflare_queues";

/// The span of one call, around all its attempts and waits.
pub(crate) fn call(operation_id: &str, queue_id: &str) -> tracing::Span {
    tracing::info_span!(
        target: "cf_queues::call",
        "cf_queues",
        operation = operation_id,
        queue_id = %queue_id,
        attempts = tracing::field::Empty,
    )
}

/// The retry loop's span of one attempt of a call.
pub(crate) fn attempt(attempt: u32) -> tracing::Span {
    tracing::debug_span!(target: "cf_queues::call", "attempt", attempt)
}

/// The hook's span of one attempt's exchange: its status and duration
/// recorded once known.
pub(crate) fn exchange() -> tracing::Span {
    tracing::debug_span!(
        target: "cf_queues::attempt",
        "attempt",
        status = tracing::field::Empty,
        duration_ms = tracing::field::Empty
    )
}

/// A messaging span after OpenTelemetry's conventions: its target, its name (also
/// `messaging.operation.type`), kind, queue, operation name and the fields
/// of its own.
#[cfg(any(feature = "consumer", feature = "producer"))]
macro_rules! messaging_span {
    // A handler's span, for one message or a batch.
    (process, $queue:expr, $($field:tt)*) => {
        messaging_span!("cf_queues::consumer::driver", "process", "consumer", $queue, "process", $($field)*)
    };
    ($target:literal, $name:literal, $kind:literal, $queue:expr, $operation:literal, $($field:tt)*) => {
        tracing::info_span!(
            target: $target,
            $name,
            otel.name = %format_args!(concat!($name, " {}"), $queue),
            otel.kind = $kind,
            messaging.system = MESSAGING_SYSTEM,
            messaging.destination.name = $queue,
            messaging.operation.type = $name,
            messaging.operation.name = $operation,
            $($field)*
        )
    };
}

/// The span of one pull of the consumer; its message count recorded once
/// the pull lands.
#[cfg(feature = "consumer")]
pub(crate) fn receive(queue: &str) -> tracing::Span {
    messaging_span!(
        "cf_queues::consumer::puller",
        "receive",
        "client",
        queue,
        "pull",
        messaging.batch.message_count = tracing::field::Empty
    )
}

/// The span of one handler call.
#[cfg(feature = "consumer")]
pub(crate) fn process(queue: &str, message: &PulledMessage) -> tracing::Span {
    messaging_span!(
        process,
        queue,
        messaging.message.id = %message.id,
        messaging.cloudflare_queues.attempts = message.attempts
    )
}

/// The span of one batch handler call.
#[cfg(feature = "consumer")]
pub(crate) fn process_batch(queue: &str, count: usize) -> tracing::Span {
    messaging_span!(process, queue, messaging.batch.message_count = count)
}

/// The span of one ack call of the consumer's, for `count` settlements.
#[cfg(feature = "consumer")]
pub(crate) fn settle(queue: &str, count: usize) -> tracing::Span {
    messaging_span!(
        "cf_queues::consumer::flush",
        "settle",
        "client",
        queue,
        "ack",
        messaging.batch.message_count = count
    )
}

/// The span of one extension call of the consumer's, for `count` leases.
/// "extend" is not one of OpenTelemetry's well-known operation types, which
/// allow custom ones of low cardinality: an extension neither receives nor
/// settles.
#[cfg(feature = "consumer")]
pub(crate) fn extend(queue: &str, count: usize) -> tracing::Span {
    messaging_span!(
        "cf_queues::consumer::lease_keeper",
        "extend",
        "client",
        queue,
        "extend",
        messaging.batch.message_count = count
    )
}

/// The span of one batch the producer sends, of `count` messages.
#[cfg(feature = "producer")]
pub(crate) fn send(queue: &str, count: u64) -> tracing::Span {
    messaging_span!(
        "cf_queues::producer::worker",
        "send",
        "producer",
        queue,
        "send",
        messaging.batch.message_count = count
    )
}
