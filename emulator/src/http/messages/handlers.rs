//! One handler per operation. Each gets a request that already passed the
//! shared steps of [`Incoming::read`](crate::http::Incoming::read), and answers with the
//! `result` envelope: serialized at once, or streamed for pull, peek and
//! preview.

use std::sync::Arc;

use serde_json::Value;

use super::stream::{Chunk, Listing};
use super::wire::{
    AckResult, ExtendResult, MessageMetadata, MessagesOnly, MetricsOut, PeekedFields,
    PreviewAckResult, PullRest, PulledFields, PurgeResult, PurgeStatusResult, PushResult,
    ResultMetadata, success,
};
use crate::http::error_answer::ErrorAnswer;
use crate::http::management::wire::QueueOut;
use crate::http::parse::{
    Object, Pushed, Size, batch_size, delay_ms, leases, parse_message, too_large, visibility_ms,
};
use crate::http::{Answer, App, Incoming};
use crate::ratelimit::QueueBucket;
use crate::state::Delivery;
use crate::state::{At, BodyKind, Broker, PullSettings, QueueStats};
use axum::http::StatusCode;
use cf_queues::codes;

/// Peek and preview show 5 messages when `batch_size` is absent, as a pull
/// without a consumer setting does.
const DEFAULT_BROWSE_BATCH: usize = 5;

/// The HTTP pull consumer of the call's queue, or the refusal of a queue
/// without one: 405 with code 0, as the live API answers a pull there.
fn http_pull(broker: &Broker, call: &Incoming) -> Result<PullSettings, ErrorAnswer> {
    broker.access(call.at()).0.ok_or_else(|| {
        ErrorAnswer::new(
            StatusCode::METHOD_NOT_ALLOWED,
            codes::HTTP_PULL_NOT_ENABLED,
            "messages cannot be pulled unless http_pull mode is enabled",
        )
    })
}

/// Pushes messages, delayed by the queue's `delivery_delay` when they give
/// no delay of their own.
fn push_all(app: &App, call: &Incoming, pushed: Vec<Pushed>) -> Result<Answer, ErrorAnswer> {
    let incoming: u64 = pushed
        .iter()
        .map(|p| u64::try_from(p.message.body.len()).unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    let metrics = app.with_queue(call, |broker, now| {
        store(app, broker, call.at(), pushed, incoming, now)
    })?;
    success(&PushResult::new(metrics)).map(Answer::Json)
}

/// Refuses `incoming` more body bytes in the queue at `at` beyond the
/// backlog's cap (429 with 10251).
pub(crate) fn check_room(
    app: &App,
    broker: &mut Broker,
    at: At<'_>,
    incoming: u64,
    now: u64,
) -> Result<(), ErrorAnswer> {
    let held = broker.metrics(at, now).backlog_bytes;
    if held.saturating_add(incoming) > app.max_backlog_bytes {
        return Err(ErrorAnswer::new(
            StatusCode::TOO_MANY_REQUESTS,
            codes::QUEUE_STORAGE_LIMIT_EXCEEDED,
            format!(
                "QueueStorageLimitExceeded: the queue holds {held} bytes of messages, \
                 and may hold at most {}",
                app.max_backlog_bytes
            ),
        ));
    }
    Ok(())
}

/// Stores parsed messages of `incoming` body bytes in the queue at `at`,
/// within the backlog's cap, each delayed by its own delay or the queue's.
pub(crate) fn store(
    app: &App,
    broker: &mut Broker,
    at: At<'_>,
    pushed: Vec<Pushed>,
    incoming: u64,
    now: u64,
) -> Result<QueueStats, ErrorAnswer> {
    check_room(app, broker, at, incoming, now)?;
    let queue_delay_ms = u64::from(broker.access(at).1.delivery_delay_s) * 1000;
    let messages = pushed
        .into_iter()
        .map(|p| p.with_queue_delay(queue_delay_ms))
        .collect();
    Ok(broker.push(at, messages, now))
}

/// Messages given as a batch's objects, checked and made as a push makes
/// them, one at a time (never every object at once): the messages and
/// their body bytes.
pub(crate) fn parse_by_hand(
    app: &App,
    items: impl Iterator<Item = Result<Object, ErrorAnswer>>,
) -> Result<(Vec<Pushed>, u64), ErrorAnswer> {
    let pushed = items
        .enumerate()
        .map(|(i, item)| parse_message(&item?, &format!("/messages/{i}"), None, &app.limits))
        .collect::<Result<Vec<Pushed>, ErrorAnswer>>()?;
    let incoming: u64 = pushed
        .iter()
        .map(|p| u64::try_from(p.message.body.len()).unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    Ok((pushed, incoming))
}

/// Messages pushed by hand (the dashboard, an emitted event): each an
/// object as a batch's messages are, checked and stored as a push's; how
/// many were stored.
pub(crate) fn push_by_hand(
    app: &App,
    at: At<'_>,
    items: impl Iterator<Item = Result<Object, ErrorAnswer>>,
) -> Result<usize, ErrorAnswer> {
    let (pushed, incoming) = parse_by_hand(app, items)?;
    let count = pushed.len();
    app.with_broker(|broker, now| {
        if broker.get_queue(at).is_err() {
            return Err(crate::http::management::handlers::queue_not_found());
        }
        store(app, broker, at, pushed, incoming, now)
    })?;
    Ok(count)
}

/// `POST /messages`.
pub(crate) fn push(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let pushed = parse_message(&call.request, "", None, &app.limits)?;
    push_all(app, &call, vec![pushed])
}

/// `POST /messages/batch`.
pub(crate) fn batch(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let limits = &app.limits;
    let request = &call.request;
    let batch_delay = delay_ms(
        request,
        "delay_seconds",
        "/delay_seconds",
        codes::BATCH_DELAY_INVALID,
        limits,
    )?;
    let Some(Value::Array(items)) = request.get("messages") else {
        return Err(ErrorAnswer::invalid(
            "/messages",
            "messages must be an array",
        ));
    };
    if items.is_empty() || items.len() > limits.max_batch_messages {
        return Err(ErrorAnswer::bad_request(
            codes::BATCH_COUNT_OUT_OF_BOUNDS,
            format!(
                "BatchCountOutOfBounds: a batch holds 1 to {} messages, not {}",
                limits.max_batch_messages,
                items.len()
            ),
        ));
    }
    let mut messages = Vec::with_capacity(items.len());
    let mut total = 0usize;
    for (i, item) in items.iter().enumerate() {
        let pointer = format!("/messages/{i}");
        let Value::Object(item) = item else {
            return Err(ErrorAnswer::invalid(
                &pointer,
                "a message must be an object",
            ));
        };
        let pushed = parse_message(item, &pointer, batch_delay, limits)?;
        total = total.saturating_add(pushed.counted);
        messages.push(pushed);
    }
    if total > limits.max_batch_bytes {
        return Err(too_large(Size::Batch, total, limits.max_batch_bytes));
    }
    push_all(app, &call, messages)
}

/// `POST /messages/pull`: `batch_size` and `visibility_timeout_ms` default
/// to the HTTP pull consumer's. A queue without one answers 405; a queue
/// whose delivery is paused, 409 (Cloudflare's pause-and-purge page: "Requests
/// to pull messages will receive a 409 response, along with an error message
/// stating `queue_delivery_paused`").
pub(crate) fn pull(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let asked_batch = batch_size(&call.request, &app.limits)?;
    let asked_visibility = visibility_ms(&call.request, &app.limits)?;
    let (deliveries, metrics) = app.with_queue(&call, |broker, now| {
        let consumer = http_pull(broker, &call)?;
        if broker.access(call.at()).1.delivery_paused {
            return Err(ErrorAnswer::new(
                StatusCode::CONFLICT,
                codes::QUEUE_DISABLED,
                "queue_delivery_paused",
            ));
        }
        let batch_size = asked_batch.unwrap_or(consumer.batch_size as usize);
        let visibility = asked_visibility.unwrap_or(consumer.visibility_timeout_ms);
        let leased = broker.pullable(call.at(), batch_size, now);
        app.limit_queue(&call, QueueBucket::Pulled, leased, now)?;
        Ok(broker.pull(call.at(), batch_size, visibility, now))
    })?;
    let rest = PullRest {
        message_backlog_count: metrics.backlog_count,
        metadata: ResultMetadata::new(metrics),
    };
    pull_shaped(app, call, deliveries, &rest)
}

/// Pulled or previewed messages, in the pull shape, followed by `rest`.
fn pull_shaped(
    app: &App,
    call: Incoming,
    deliveries: Vec<Delivery>,
    rest: &impl serde::Serialize,
) -> Result<Answer, ErrorAnswer> {
    let messages = deliveries.into_iter().map(|d| {
        let fields = PulledFields {
            metadata: MessageMetadata::new(d.kind, d.delay_ms),
            id: d.id,
            attempts: d.attempts,
            lease_id: d.lease_id,
            timestamp_ms: d.timestamp_ms,
        };
        (fields, d.kind, d.body)
    });
    listed(app, call, messages, rest)
}

/// Messages, each with its fields, streamed as a listing followed by `rest`.
fn listed<F: serde::Serialize>(
    app: &App,
    call: Incoming,
    messages: impl ExactSizeIterator<Item = (F, BodyKind, Arc<[u8]>)>,
    rest: &impl serde::Serialize,
) -> Result<Answer, ErrorAnswer> {
    let mut items = Vec::with_capacity(messages.len());
    for (fields, kind, body) in messages {
        items.push(Chunk::new(&fields, kind, body).map_err(ErrorAnswer::internal)?);
    }
    Listing::new(items, rest, app.chunk_bytes, call.conn)
        .map(Answer::Listing)
        .map_err(ErrorAnswer::internal)
}

/// `POST /messages/ack`: a retry without `delay_seconds` waits the HTTP
/// pull consumer's `retry_delay`. A queue without one answers 405.
pub(crate) fn ack(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let (acks, asked_retries) = acks_and_retries(app, &call.request)?;
    let leases = acks.len().saturating_add(asked_retries.len());
    let report = app.with_queue(&call, |broker, now| {
        let consumer = http_pull(broker, &call)?;
        let retry_delay_ms = u64::from(consumer.retry_delay_s) * 1000;
        let retries: Vec<(String, u64)> = asked_retries
            .into_iter()
            .map(|(lease, delay)| (lease, delay.unwrap_or(retry_delay_ms)))
            .collect();
        app.limit_queue(&call, QueueBucket::Leases, leases, now)?;
        Ok::<_, ErrorAnswer>(broker.ack(call.at(), &acks, &retries, now))
    })?;
    success(&AckResult {
        ack_count: report.ack_count,
        retry_count: report.retry_count,
        warnings: report.warnings,
    })
    .map(Answer::Json)
}

/// The `batch_size` of a peek or a preview, [`DEFAULT_BROWSE_BATCH`] when
/// absent.
fn browse_batch_size(app: &App, call: &Incoming) -> Result<usize, ErrorAnswer> {
    Ok(batch_size(&call.request, &app.limits)?.unwrap_or(DEFAULT_BROWSE_BATCH))
}

/// `POST /messages/peek`.
pub(crate) fn peek(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let batch_size = browse_batch_size(app, &call)?;
    let peeked = app.with_queue(&call, |broker, now| {
        Ok(broker.peek(call.at(), batch_size, now))
    })?;
    let messages = peeked.into_iter().map(|p| {
        let fields = PeekedFields {
            metadata: MessageMetadata::new(p.kind, p.delay_ms),
            id: p.id,
            attempts: p.attempts,
            peek_ref: p.peek_ref,
            timestamp_ms: p.timestamp_ms,
        };
        (fields, p.kind, p.body)
    });
    listed(app, call, messages, &MessagesOnly {})
}

/// `POST /messages/purge`.
pub(crate) fn purge(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let Some(Value::Array(items)) = call.request.get("refs") else {
        return Err(ErrorAnswer::invalid("/refs", "refs must be an array"));
    };
    let mut refs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.get("ref") {
            Some(Value::String(r)) => refs.push(r.clone()),
            _ => {
                return Err(ErrorAnswer::invalid(
                    &format!("/refs/{i}/ref"),
                    "ref must be a string",
                ));
            }
        }
    }
    let report = app.with_queue(&call, |broker, now| Ok(broker.purge(call.at(), &refs, now)))?;
    success(&PurgeResult {
        errors: [],
        warnings: report.warnings,
    })
    .map(Answer::Json)
}

/// `POST /messages/extend`: `visibility_timeout_ms` defaults to the HTTP
/// pull consumer's. A queue without one answers 405.
pub(crate) fn extend(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let ids = lease_ids(&call.request, "extend")?;
    let asked_visibility = visibility_ms(&call.request, &app.limits)?;
    let report = app.with_queue(&call, |broker, now| {
        let consumer = http_pull(broker, &call)?;
        let visibility = asked_visibility.unwrap_or(consumer.visibility_timeout_ms);
        app.limit_queue(&call, QueueBucket::Leases, ids.len(), now)?;
        Ok::<_, ErrorAnswer>(broker.extend(call.at(), &ids, visibility, now))
    })?;
    success(&ExtendResult {
        extend_count: report.extended,
        warnings: report.warnings,
    })
    .map(Answer::Json)
}

/// `POST /messages/preview`.
pub(crate) fn preview(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let batch_size = browse_batch_size(app, &call)?;
    let shown = app.with_queue(&call, |broker, now| {
        Ok(broker.preview(call.at(), batch_size, now))
    })?;
    pull_shaped(app, call, shown, &MessagesOnly {})
}

/// `POST /messages/preview/ack`.
pub(crate) fn delete_previewed(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let (acks, retries) = acks_and_retries(app, &call.request)?;
    // A previewed message retried without a delay is visible again at once.
    let retries: Vec<(String, u64)> = retries
        .into_iter()
        .map(|(id, delay)| (id, delay.unwrap_or(0)))
        .collect();
    let report = app.with_queue(&call, |broker, now| {
        Ok(broker.delete_previewed(call.at(), &acks, &retries, now))
    })?;
    success(&PreviewAckResult {
        warnings: report.warnings,
    })
    .map(Answer::Json)
}

/// `GET /metrics`, as JSON or as one server-sent event.
pub(crate) fn metrics(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let metrics =
        MetricsOut::from(app.with_queue(&call, |broker, now| Ok(broker.metrics(call.at(), now)))?);
    if call.event_stream {
        // The published description streams the bare metrics object, not
        // an envelope.
        let data = serde_json::to_string(&metrics).map_err(ErrorAnswer::internal)?;
        return Ok(Answer::EventStream(
            format!("data: {data}\n\n").into_bytes(),
        ));
    }
    success(&metrics).map(Answer::Json)
}

/// `POST /purge`.
pub(crate) fn purge_queue(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    // Cloudflare's description marks the purge `x-forge-require-confirmation`
    // ("This operation drops every message in the queue"); the code for a
    // missing confirmation is an assumption (see "Assumptions").
    if call.request.get("delete_messages_permanently") != Some(&Value::Bool(true)) {
        return Err(ErrorAnswer::invalid(
            "/delete_messages_permanently",
            "delete_messages_permanently must be true to confirm that every message \
             of the queue is deleted",
        ));
    }
    let record = app.with_queue(&call, |broker, now| {
        broker.purge_all(call.at(), now);
        broker.get_queue(call.at()).map_err(ErrorAnswer::from)
    })?;
    success(&QueueOut::new(&record)).map(Answer::Json)
}

/// `GET /purge`.
pub(crate) fn purge_status(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let started = app.with_queue(&call, |broker, now| Ok(broker.purge_status(call.at(), now)))?;
    success(&PurgeStatusResult::new(started)).map(Answer::Json)
}

/// The `lease_id`s of `acks` or `extend`.
fn lease_ids(request: &Object, key: &str) -> Result<Vec<String>, ErrorAnswer> {
    Ok(leases(request, key)?
        .into_iter()
        .map(|(lease, _)| lease)
        .collect())
}

/// Ids to delete, and ids with the delay (ms) to retry them after, `None`
/// when the request gives none.
type Changes = (Vec<String>, Vec<(String, Option<u64>)>);

/// The `acks` and `retries` of an ack or a deletion of previewed messages.
fn acks_and_retries(app: &App, request: &Object) -> Result<Changes, ErrorAnswer> {
    let acks = lease_ids(request, "acks")?;
    let mut retries = Vec::new();
    for (i, (lease, item)) in leases(request, "retries")?.into_iter().enumerate() {
        let pointer = format!("/retries/{i}/delay_seconds");
        let code = codes::MESSAGE_METADATA_INVALID;
        let delay = delay_ms(item, "delay_seconds", &pointer, code, &app.limits)?;
        retries.push((lease, delay));
    }
    Ok((acks, retries))
}
