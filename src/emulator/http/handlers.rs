//! One handler per operation. Each gets a request that already passed the
//! shared steps of [`Call::read`](super::Call::read), and answers with the
//! `result` envelope: serialized at once, or streamed for pull and peek.

use serde_json::Value;

use super::failure::Failure;
use super::parse::{batch_size, delay_ms, leases, number, parse_message};
use super::stream::{Item, Listing};
use super::wire::{
    AckResult, MessageMetadata, PeekRest, PeekedFields, PullRest, PulledFields, PurgeResult,
    PushResult, ResultMetadata, success,
};
use super::{App, Call, Reply};
use crate::codes;

/// `POST /messages`.
pub(super) fn push(app: &App, call: Call) -> Result<Reply, Failure> {
    let (message, _) = parse_message(&call.request, "", None, &app.limits)?;
    let metrics = app.with_broker(|broker, now| broker.push(call.at(), vec![message], now));
    success(&PushResult::new(metrics)).map(Reply::Json)
}

/// `POST /messages/batch`.
pub(super) fn batch(app: &App, call: Call) -> Result<Reply, Failure> {
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
        return Err(Failure::invalid("/messages", "messages must be an array"));
    };
    if items.is_empty() || items.len() > limits.max_batch_messages {
        return Err(Failure::bad_request(
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
            return Err(Failure::invalid(&pointer, "a message must be an object"));
        };
        let (message, counted) = parse_message(item, &pointer, batch_delay, limits)?;
        total = total.saturating_add(counted);
        messages.push(message);
    }
    if total > limits.max_batch_bytes {
        return Err(Failure::bad_request(
            codes::BATCH_SIZE_OUT_OF_BOUNDS,
            format!(
                "BatchSizeOutOfBounds: {total} bytes exceed the limit of {}",
                limits.max_batch_bytes
            ),
        ));
    }
    let metrics = app.with_broker(|broker, now| broker.push(call.at(), messages, now));
    success(&PushResult::new(metrics)).map(Reply::Json)
}

/// `POST /messages/pull`.
pub(super) fn pull(app: &App, call: Call) -> Result<Reply, Failure> {
    let limits = &app.limits;
    let request = &call.request;
    let batch_size = batch_size(request, limits)?;
    let visibility = match number(request, "visibility_timeout_ms", "/visibility_timeout_ms")? {
        None => 30_000,
        Some(ms) => {
            let max = limits.max_visibility_timeout.as_millis() as f64;
            // Below 1 ms a lease ends as it is granted: every ack would
            // come late, and the message would be redelivered at once until
            // its retries ran out. The client refuses 0 already; over raw
            // HTTP the code is an assumption (see "Assumptions").
            if !(0.0..=max).contains(&ms) || ms.round() < 1.0 {
                return Err(Failure::invalid(
                    "/visibility_timeout_ms",
                    format!("visibility_timeout_ms must be from 1 to {max}"),
                ));
            }
            ms.round() as u64
        }
    };
    let (deliveries, metrics) =
        app.with_broker(|broker, now| broker.pull(call.at(), batch_size, visibility, now));
    let mut items = Vec::with_capacity(deliveries.len());
    for d in deliveries {
        let fields = PulledFields {
            metadata: MessageMetadata::new(d.kind),
            id: d.id,
            attempts: d.attempts,
            lease_id: d.lease_id,
            timestamp_ms: d.timestamp_ms,
        };
        items.push(Item::new(&fields, d.kind, d.body).map_err(Failure::internal)?);
    }
    let rest = PullRest {
        message_backlog_count: metrics.backlog_count,
        metadata: ResultMetadata::new(metrics),
    };
    Listing::new(items, &rest, app.chunk_bytes, call.conn)
        .map(Reply::Listing)
        .map_err(Failure::internal)
}

/// `POST /messages/ack`.
pub(super) fn ack(app: &App, call: Call) -> Result<Reply, Failure> {
    let request = &call.request;
    let acks = leases(request, "acks")?
        .into_iter()
        .map(|(lease, _)| lease)
        .collect::<Vec<_>>();
    let mut retries = Vec::new();
    for (i, (lease, item)) in leases(request, "retries")?.into_iter().enumerate() {
        let pointer = format!("/retries/{i}/delay_seconds");
        let code = codes::MESSAGE_METADATA_INVALID;
        let delay = delay_ms(item, "delay_seconds", &pointer, code, &app.limits)?.unwrap_or(0);
        retries.push((lease, delay));
    }
    let report = app.with_broker(|broker, now| broker.ack(call.at(), &acks, &retries, now));
    success(&AckResult {
        ack_count: report.ack_count,
        retry_count: report.retry_count,
        warnings: report.warnings,
    })
    .map(Reply::Json)
}

/// `POST /messages/peek`.
pub(super) fn peek(app: &App, call: Call) -> Result<Reply, Failure> {
    let batch_size = batch_size(&call.request, &app.limits)?;
    let peeked = app.with_broker(|broker, now| broker.peek(call.at(), batch_size, now));
    let mut items = Vec::with_capacity(peeked.len());
    for p in peeked {
        let fields = PeekedFields {
            metadata: MessageMetadata::new(p.kind),
            id: p.id,
            attempts: p.attempts,
            peek_ref: p.peek_ref,
            timestamp_ms: p.timestamp_ms,
        };
        items.push(Item::new(&fields, p.kind, p.body).map_err(Failure::internal)?);
    }
    Listing::new(items, &PeekRest {}, app.chunk_bytes, call.conn)
        .map(Reply::Listing)
        .map_err(Failure::internal)
}

/// `POST /messages/purge`.
pub(super) fn purge(app: &App, call: Call) -> Result<Reply, Failure> {
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
    let report = app.with_broker(|broker, now| broker.purge(call.at(), &refs, now));
    success(&PurgeResult {
        errors: [],
        warnings: report.warnings,
    })
    .map(Reply::Json)
}
