//! One handler per operation. Each gets a request that already passed the
//! shared steps of [`Call::read`](super::Call::read), and answers with the
//! serialized `result` envelope.

use serde_json::Value;

use super::failure::Failure;
use super::parse::{batch_size, delay_ms, leases, number, parse_message};
use super::wire::{
    AckResult, MessageMetadata, PeekResult, PeekedMessage, PullResult, PulledMessage, PurgeResult,
    PushResult, ResultMetadata, encode_body, success,
};
use super::{App, Call};

/// `POST /messages`.
pub(super) fn push(app: &App, call: Call) -> Result<Vec<u8>, Failure> {
    let (message, _) = parse_message(&call.request, "", None, &app.limits)?;
    let metrics = app.with_broker(|broker, now| broker.push(&call.queue, vec![message], now));
    success(&PushResult::new(metrics))
}

/// `POST /messages/batch`.
pub(super) fn batch(app: &App, call: Call) -> Result<Vec<u8>, Failure> {
    let limits = &app.limits;
    let request = &call.request;
    let batch_delay = delay_ms(request, "delay_seconds", "/delay_seconds", 10202, limits)?;
    let Some(Value::Array(items)) = request.get("messages") else {
        return Err(Failure::invalid("/messages", "messages must be an array"));
    };
    if items.is_empty() || items.len() > limits.max_batch_messages {
        return Err(Failure::bad_request(
            10206,
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
            return Err(Failure::invalid(&pointer, "a message must be an object"));
        };
        let (message, counted) = parse_message(item, &pointer, batch_delay, limits)?;
        total = total.saturating_add(counted);
        messages.push(message);
    }
    if total > limits.max_batch_bytes {
        return Err(Failure::bad_request(
            10205,
            format!(
                "BatchSizeOutOfBounds: {total} bytes exceed the limit of {}",
                limits.max_batch_bytes
            ),
        ));
    }
    let metrics = app.with_broker(|broker, now| broker.push(&call.queue, messages, now));
    success(&PushResult::new(metrics))
}

/// `POST /messages/pull`.
pub(super) fn pull(app: &App, call: Call) -> Result<Vec<u8>, Failure> {
    let limits = &app.limits;
    let request = &call.request;
    let batch_size = batch_size(request, limits)?;
    let visibility = match number(request, "visibility_timeout_ms", "/visibility_timeout_ms")? {
        None => 30_000,
        Some(ms) => {
            let max = limits.max_visibility_timeout.as_millis() as f64;
            if !(0.0..=max).contains(&ms) {
                return Err(Failure::invalid(
                    "/visibility_timeout_ms",
                    format!("visibility_timeout_ms must be from 0 to {max}"),
                ));
            }
            ms.round() as u64
        }
    };
    let (deliveries, metrics) =
        app.with_broker(|broker, now| broker.pull(&call.queue, batch_size, visibility, now));
    let messages = deliveries
        .into_iter()
        .map(|d| PulledMessage {
            body: encode_body(d.kind, &d.body),
            metadata: MessageMetadata::new(d.kind),
            id: d.id,
            attempts: d.attempts,
            lease_id: d.lease_id,
            timestamp_ms: d.timestamp_ms,
        })
        .collect();
    success(&PullResult {
        messages,
        message_backlog_count: metrics.backlog_count,
        metadata: ResultMetadata::new(metrics),
    })
}

/// `POST /messages/ack`.
pub(super) fn ack(app: &App, call: Call) -> Result<Vec<u8>, Failure> {
    let request = &call.request;
    let acks = leases(request, "acks")?
        .into_iter()
        .map(|(lease, _)| lease)
        .collect::<Vec<_>>();
    let mut retries = Vec::new();
    for (i, (lease, item)) in leases(request, "retries")?.into_iter().enumerate() {
        let pointer = format!("/retries/{i}/delay_seconds");
        let delay = delay_ms(item, "delay_seconds", &pointer, 10203, &app.limits)?.unwrap_or(0);
        retries.push((lease, delay));
    }
    let report = app.with_broker(|broker, now| broker.ack(&call.queue, &acks, &retries, now));
    success(&AckResult {
        ack_count: report.ack_count,
        retry_count: report.retry_count,
        warnings: report.warnings,
    })
}

/// `POST /messages/peek`.
pub(super) fn peek(app: &App, call: Call) -> Result<Vec<u8>, Failure> {
    let batch_size = batch_size(&call.request, &app.limits)?;
    let peeked = app.with_broker(|broker, now| broker.peek(&call.queue, batch_size, now));
    let messages = peeked
        .into_iter()
        .map(|p| PeekedMessage {
            body: encode_body(p.kind, &p.body),
            metadata: MessageMetadata::new(p.kind),
            id: p.id,
            attempts: p.attempts,
            peek_ref: p.peek_ref,
            timestamp_ms: p.timestamp_ms,
        })
        .collect();
    success(&PeekResult { messages })
}

/// `POST /messages/purge`.
pub(super) fn purge(app: &App, call: Call) -> Result<Vec<u8>, Failure> {
    let Some(Value::Array(items)) = call.request.get("refs") else {
        return Err(Failure::invalid("/refs", "refs must be an array"));
    };
    let mut refs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item.get("ref") {
            Some(Value::String(r)) => refs.push(r.clone()),
            _ => {
                return Err(Failure::invalid(
                    &format!("/refs/{i}/ref"),
                    "ref must be a string",
                ));
            }
        }
    }
    let report = app.with_broker(|broker, now| broker.purge(&call.queue, &refs, now));
    success(&PurgeResult {
        errors: [],
        warnings: report.warnings,
    })
}
