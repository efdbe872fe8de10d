//! What the client, the consumer and the producer record through the
//! [`metrics`](https://docs.rs/metrics) facade (the `metrics` feature).
//!
//! The library records; the application installs a recorder (an
//! exporter: Prometheus, OpenTelemetry, StatsD, …) and the figures go
//! there. With no recorder installed a record costs next to nothing, and
//! the library depends on no exporter.
//!
//! ```ignore
//! // First the recorder: here `metrics-exporter-prometheus`, which serves
//! // the scrape page on 0.0.0.0:9000 …
//! metrics_exporter_prometheus::PrometheusBuilder::new().install()?;
//! // … then the client, its consumers and producers.
//! let client = cf_queues::Client::from_env()?;
//! ```
//!
//! The example `examples/prometheus.rs` runs a consumer and a producer on
//! the embedded emulator and serves their figures. For OpenTelemetry,
//! install a `metrics` recorder that forwards to an OpenTelemetry meter
//! the same way: the names above are already OpenTelemetry's.
//!
//! # Install the recorder first
//!
//! A consumer or a producer takes its handles (one per metric and label
//! set) when it is built, so that recording is an increment on a handle,
//! never a lookup. Handles taken before a recorder is installed record
//! nowhere, for the life of that consumer or producer: install the
//! recorder at the start of `main`, before building them. The client's own
//! figures (per call) look the recorder up on each call and are recorded
//! from the first call after it is installed.
//!
//! # What is recorded
//!
//! Names follow OpenTelemetry's [messaging semantic conventions] where they
//! have one, and carry a `cf_queues.` prefix otherwise. Durations are in
//! seconds. Every consumer and producer metric is labelled with the queue
//! (`messaging.destination.name`, its id); the client's are labelled with
//! the operation (`messaging.operation.name`, its operation id such as
//! `pull_messages`) and, for a queue's operations, the queue. No label ever
//! carries a credential, a body or any other unbounded value: a failure is
//! labelled with its kind (`error.type`) and, when Cloudflare's answer
//! named one this crate knows ([`codes`](crate::codes)), its code
//! (`cloudflare.code`, else `other`). An exporter may rewrite the names
//! (Prometheus's: `messaging_client_operation_duration`, with labels such
//! as `messaging_destination_name`).
//!
//! Every gauge of a consumer or producer (a level, which two of them would
//! overwrite) is also labelled with its instance (`cf_queues.instance`):
//! see [Telling instances apart](#telling-instances-apart). The queue's own
//! gauges (`cf_queues.queue.*`) carry none: every reader of a queue reads
//! the same figure, and an autoscaler takes the `max()` across the series
//! of its replicas.
//!
//! | name | kind | unit | labels besides the queue | what for |
//! |---|---|---|---|---|
//! | `messaging.client.operation.duration` | histogram | s | operation, `error.type`, `cloudflare.code` | each call, its retries and waits included |
//! | `cf_queues.client.requests` | counter | {request} | operation, `error.type`, `cloudflare.code` | each request sent (an attempt of a call) |
//! | `cf_queues.client.token.remaining` | gauge | {request} | `cf_queues.instance` (the client's), no queue | the token's budget left in its window (`r` of the last `Ratelimit` header) |
//! | `messaging.client.consumed.messages` | counter | {message} | | messages the consumer leased |
//! | `cf_queues.consumer.pulls` | counter | {request} | `cf_queues.outcome` = `ok`, `empty`, `error` | the consumer's pulls (`ok` counts the empty ones too) |
//! | `messaging.process.duration` | histogram | s | `cf_queues.outcome` = `ack`, `retry`, `leave`, `error` (`run`), `batch`, `batch_error` (`run_batch`) | each handler call and how it ended: its count is the messages (for `run_batch`, the batches) handled by outcome |
//! | `cf_queues.consumer.poisoned` | counter | {message} | | bodies that could not be decoded |
//! | `cf_queues.consumer.settlements` | counter | {message} | `cf_queues.outcome` = `ack`, `retry`, `release`, `leave` | messages settled (accepted by the API), released at shutdown, or left to expire |
//! | `cf_queues.consumer.settlement.resends` | counter | {message} | | settlements sent again after a failed flush |
//! | `cf_queues.consumer.settlement.errors` | counter | {request} | | ack and retry calls that failed |
//! | `cf_queues.consumer.settlement.warnings` | counter | {message} | `cf_queues.outcome` = `first`, `resend` | settlements the API answered with a warning |
//! | `cf_queues.consumer.settlement.unflushed` | counter | {message} | | settlements given up |
//! | `cf_queues.consumer.leases.extended` | counter | {message} | | lease extensions accepted |
//! | `cf_queues.consumer.leases.extension_errors` | counter | {request} | | extension calls that failed |
//! | `cf_queues.consumer.leases.lost` | counter | {message} | | leases lost before settling: possible duplicates |
//! | `cf_queues.consumer.leases.max_reached` | counter | {message} | | leases that reached the maximum lease time |
//! | `cf_queues.consumer.refusals` | counter | {request} | `cf_queues.limit` = `queue` (10250), `token` (971) | calls refused for a limit |
//! | `cf_queues.consumer.blocks` | counter | {block} | | blocks of the credential waited out |
//! | `cf_queues.consumer.pace` | gauge | {message}/s | `cf_queues.instance` | this replica's pace: the messages a second its share of the queue's allowance allows now |
//! | `cf_queues.consumer.pulls_in_flight` | gauge | {request} | `cf_queues.instance` | pulls on their way |
//! | `cf_queues.consumer.messages_in_flight` | gauge | {message} | `cf_queues.instance` | messages leased and not settled |
//! | `cf_queues.consumer.bytes_in_flight` | gauge | By | `cf_queues.instance` | their body bytes |
//! | `cf_queues.consumer.lag` | gauge | s | `cf_queues.instance` | the age of the oldest message of the last pull that brought any |
//! | `cf_queues.consumer.pulled_backlog` | gauge | {message} | `cf_queues.instance` | the backlog the last pull reported (0 until a pull reports one: not for autoscaling) |
//! | `cf_queues.queue.backlog.messages` | gauge | {message} | no instance | the queue's unacknowledged messages, read by a [`BacklogReader`](crate::consumer::BacklogReader) (`ConsumerBuilder::read_backlog`, `cfq relay --listen`, `cfq metrics --listen`); absent until its first reading |
//! | `cf_queues.queue.backlog.bytes` | gauge | By | no instance | their bytes, read likewise |
//! | `cf_queues.queue.oldest_message.age` | gauge | s | no instance | the age of the oldest at the reading (0 for an empty queue), read likewise |
//! | `messaging.client.sent.messages` | counter | {message} | `cf_queues.outcome` = `landed`, `failed`, `rejected` | the producer's messages, by what became of them |
//! | `cf_queues.producer.batches` | counter | {request} | | batch pushes started |
//! | `cf_queues.producer.batch.size` | histogram | {message} | | messages per batch push |
//! | `cf_queues.producer.budget_wait` | histogram | s | | each batch's wait for the token's budget |
//! | `cf_queues.producer.throttled` | counter | {request} | | push attempts refused with a 429 |
//! | `cf_queues.producer.messages_in_flight` | gauge | {message} | `cf_queues.instance` | messages in batches on their way |
//!
//! # Telling instances apart
//!
//! Two consumers of one queue in one process, or two clients on one
//! token, would write the same gauge and show whichever wrote last; the
//! `cf_queues.instance` label keeps them apart. Its value is the name
//! given to [`ClientBuilder::instance`](crate::ClientBuilder::instance),
//! [`ConsumerBuilder::instance`](crate::consumer::ConsumerBuilder::instance)
//! or [`ProducerBuilder::instance`](crate::producer::ProducerBuilder::instance)
//! (1 to 64 ASCII letters, digits, `.`, `_`, `-`), else the smallest number
//! of its kind that no living one of the process holds (`"1"`, `"2"`, …),
//! given back when it is dropped, so that a process that rebuilds its
//! clients keeps the same few label values. Counters and histograms carry
//! no instance: they add up across instances, and a dashboard sums them by
//! queue as before. Sum a gauge over `cf_queues.instance` for a process's
//! total (messages in flight), or read it per instance (a replica's pace).
//!
//! The same counters are read, as numbers, by
//! [`ConsumerMonitor::snapshot`](crate::consumer::ConsumerMonitor::snapshot)
//! and [`ProducerMonitor::snapshot`](crate::producer::ProducerMonitor::snapshot):
//! a metric and the snapshot's field it mirrors never disagree.
//!
//! [messaging semantic conventions]: https://opentelemetry.io/docs/specs/semconv/messaging/messaging-metrics/

use std::time::Duration;

use crate::error::Error;
use crate::operation::Operation;
use ::metrics::{Key, Label, Level, Metadata};

/// Where the records say they come from.
pub(crate) const METADATA: Metadata<'static> =
    Metadata::new("cf_queues", Level::INFO, Some("cf_queues"));

/// The queue's label.
const DESTINATION: &str = "messaging.destination.name";
const OPERATION: &str = "messaging.operation.name";
const ERROR_TYPE: &str = "error.type";
const CODE: &str = "cloudflare.code";

/// The label that tells instances apart on a gauge.
const INSTANCE: &str = "cf_queues.instance";

/// The key of a consumer's or producer's metric: its name, its queue, for
/// a gauge (a level, which two instances would overwrite) the instance,
/// and its other labels.
#[cfg(any(feature = "consumer", feature = "producer"))]
pub(crate) fn key(
    queue_id: &str,
    instance: Option<&str>,
    name: &'static str,
    labels: &[(&'static str, &'static str)],
) -> Key {
    let mut all = Vec::with_capacity(labels.len() + 2);
    all.push(Label::new(DESTINATION, queue_id.to_owned()));
    if let Some(instance) = instance {
        all.push(Label::new(INSTANCE, instance.to_owned()));
    }
    all.extend(labels.iter().map(|&(k, v)| Label::from_static_parts(k, v)));
    Key::from_parts(name, all)
}

/// The labels of one call's or one attempt's figures.
fn call_labels(operation: Operation, queue_id: &str, error: Option<&Error>) -> Vec<Label> {
    let mut labels = Vec::with_capacity(4);
    labels.push(Label::from_static_parts(
        OPERATION,
        operation.operation_id(),
    ));
    if !queue_id.is_empty() {
        labels.push(Label::new(DESTINATION, queue_id.to_owned()));
    }
    if let Some(error) = error {
        labels.push(Label::from_static_parts(ERROR_TYPE, error_type(error)));
        if let Some(&code) = error.codes().first() {
            labels.push(code_label(code));
        }
    }
    labels
}

/// One request of a call was answered (or failed): `error` is its failure.
pub(crate) fn attempt(operation: Operation, queue_id: &str, error: Option<&Error>) {
    let key = Key::from_parts(
        "cf_queues.client.requests",
        call_labels(operation, queue_id, error),
    );
    ::metrics::with_recorder(|recorder| recorder.register_counter(&key, &METADATA).increment(1));
}

/// One call ended after `took`, with `error` if it failed.
pub(crate) fn call(operation: Operation, queue_id: &str, took: Duration, error: Option<&Error>) {
    let key = Key::from_parts(
        "messaging.client.operation.duration",
        call_labels(operation, queue_id, error),
    );
    ::metrics::with_recorder(|recorder| {
        recorder
            .register_histogram(&key, &METADATA)
            .record(took.as_secs_f64());
    });
}

/// The key of the token gauge of the client labelled `instance`, made
/// once per client.
pub(crate) fn token_gauge(instance: &str) -> Key {
    Key::from_parts(
        "cf_queues.client.token.remaining",
        vec![Label::new(INSTANCE, instance.to_owned())],
    )
}

/// An answer to the client whose token gauge is `key` said the token has
/// `remaining` requests left in its window.
pub(crate) fn token_remaining(key: &Key, remaining: u64) {
    ::metrics::with_recorder(|recorder| {
        recorder
            .register_gauge(key, &METADATA)
            .set(remaining as f64);
    });
}

/// A failure's kind, as a bounded label.
fn error_type(error: &Error) -> &'static str {
    match error {
        Error::InvalidInput { .. } => "invalid_input",
        Error::Config(_) => "config",
        Error::Api(_) => "api",
        Error::Transport { .. } => "transport",
        Error::Decode { .. } => "decode",
        Error::ResponseTooLarge { .. } => "response_too_large",
        Error::Timeout { .. } => "timeout",
        Error::RateLimited { .. } => "rate_limited",
        Error::Body(_) => "body",
        Error::UnknownQueueName { .. } => "unknown_queue_name",
        Error::AmbiguousQueueName { .. } => "ambiguous_queue_name",
        Error::OtherConsumer { .. } => "other_consumer",
    }
}

/// A Cloudflare code as a label: the codes this crate names, else `other`
/// (an answer's codes are the server's to choose, and a label's values
/// must stay few).
fn code_label(code: u32) -> Label {
    if crate::codes::NAMED.contains(&code) {
        Label::new(CODE, code.to_string())
    } else {
        Label::from_static_parts(CODE, "other")
    }
}
