//! The HTTP shell around the [`Broker`](super::state::Broker): routing, auth,
//! request validation with Cloudflare's error codes, and Cloudflare's
//! response envelopes.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use base64::Engine as _;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::Operation;
use super::clock::Clock;
use super::faults::{Fault, FaultBody, Faults};
use super::state::{BodyKind, Broker, Metrics, NewMessage};
use crate::limits::Limits;

/// Everything the handlers share.
pub(crate) struct App {
    pub broker: Mutex<Broker>,
    pub clock: Clock,
    pub faults: Faults,
    pub auth: Option<AcceptedAuth>,
    pub strict_queues: Option<HashSet<String>>,
    pub limits: Limits,
    pub max_body_bytes: usize,
    /// Requests received on the six operations, faulty ones included.
    pub requests: std::sync::atomic::AtomicU64,
}

impl App {
    /// Runs `operation` on the locked broker with the current time, read
    /// under the lock so that concurrent requests apply in time order.
    pub(crate) fn with_broker<T>(&self, operation: impl FnOnce(&mut Broker, u64) -> T) -> T {
        let mut broker = self.broker();
        let now = self.clock.now_ms();
        operation(&mut broker, now)
    }

    pub(crate) fn broker(&self) -> MutexGuard<'_, Broker> {
        // The broker never panics mid-update; a poisoned lock still holds a consistent state.
        self.broker.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The credentials the emulator accepts.
#[derive(Clone)]
pub(crate) struct AcceptedAuth {
    pub token: Option<String>,
    pub global_key: Option<(String, String)>,
}

pub(crate) fn router(app: Arc<App>) -> Router {
    const MESSAGES: &str = "/accounts/{account_id}/queues/{queue_id}/messages";
    let routes = [
        ("", Operation::Push),
        ("/batch", Operation::Batch),
        ("/pull", Operation::Pull),
        ("/ack", Operation::Ack),
        ("/peek", Operation::Peek),
        ("/purge", Operation::Purge),
    ];
    let operations = routes
        .into_iter()
        .fold(Router::new(), |router, (suffix, op)| {
            router.route(&format!("{MESSAGES}{suffix}"), operation(op))
        });
    Router::new()
        .merge(operations.clone())
        .nest("/client/v4", operations)
        .fallback(|| async { Failure::no_route().into_response() })
        .with_state(app)
}

fn operation(op: Operation) -> MethodRouter<Arc<App>> {
    post(
        move |State(app): State<Arc<App>>,
              path: Result<Path<(String, String)>, PathRejection>,
              headers: HeaderMap,
              body: Body| async move {
            match handle(&app, op, path, &headers, body).await {
                Ok(body) => json_response(StatusCode::OK, body),
                Err(failure) => failure.into_response(),
            }
        },
    )
    .fallback(|| async {
        Failure::new(StatusCode::METHOD_NOT_ALLOWED, 7001, "Method not allowed").into_response()
    })
}

async fn handle(
    app: &App,
    op: Operation,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Vec<u8>, Failure> {
    app.requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Some(fault) = app.faults.take(op) {
        if let Some(stall) = fault.stall {
            tokio::time::sleep(stall).await;
        }
        if fault.status.is_some() {
            return Err(Failure::Injected(fault));
        }
    }
    let Ok(Path((account_id, queue_id))) = path else {
        return Err(Failure::no_route());
    };
    authenticate(app.auth.as_ref(), headers)?;
    if !valid_id(&account_id, &app.limits) {
        return Err(Failure::bad_request(
            10107,
            "account ids are 1 to 32 letters and digits",
        ));
    }
    if !valid_id(&queue_id, &app.limits) {
        return Err(Failure::bad_request(
            10107,
            "QueueIDMalformed: queue ids are 1 to 32 letters and digits",
        ));
    }
    if app
        .strict_queues
        .as_ref()
        .is_some_and(|known| !known.contains(&queue_id))
    {
        return Err(Failure::new(StatusCode::NOT_FOUND, 10104, "QueueNotFound"));
    }

    let bytes = axum::body::to_bytes(body, app.max_body_bytes)
        .await
        .map_err(|_| {
            let code = if op == Operation::Batch { 10205 } else { 10204 };
            Failure::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                code,
                format!("request body exceeds {} bytes", app.max_body_bytes),
            )
        })?;
    // An absent body reads as `{}`: every field of pull, peek and ack is optional.
    let request: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Map::new())
    } else {
        serde_json::from_slice(&bytes)
            .map_err(|e| Failure::bad_request(10208, format!("JSONRequestBodyMalformed: {e}")))?
    };
    let Value::Object(request) = request else {
        return Err(Failure::invalid(
            "",
            "the request body must be a JSON object",
        ));
    };

    let limits = &app.limits;
    match op {
        Operation::Push => {
            let (message, _) = parse_message(&request, "", None, limits)?;
            let metrics = app.with_broker(|broker, now| broker.push(&queue_id, vec![message], now));
            success(&PushResult::new(metrics))
        }
        Operation::Batch => {
            let batch_delay = delay_ms(&request, "delay_seconds", "/delay_seconds", 10202, limits)?;
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
            let metrics = app.with_broker(|broker, now| broker.push(&queue_id, messages, now));
            success(&PushResult::new(metrics))
        }
        Operation::Pull => {
            let batch_size = batch_size(&request, limits)?;
            let visibility =
                match number(&request, "visibility_timeout_ms", "/visibility_timeout_ms")? {
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
                app.with_broker(|broker, now| broker.pull(&queue_id, batch_size, visibility, now));
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
        Operation::Ack => {
            let acks = leases(&request, "acks")?
                .into_iter()
                .map(|(lease, _)| lease)
                .collect::<Vec<_>>();
            let mut retries = Vec::new();
            for (i, (lease, item)) in leases(&request, "retries")?.into_iter().enumerate() {
                let pointer = format!("/retries/{i}/delay_seconds");
                let delay = delay_ms(item, "delay_seconds", &pointer, 10203, limits)?.unwrap_or(0);
                retries.push((lease, delay));
            }
            let report = app.with_broker(|broker, now| broker.ack(&queue_id, &acks, &retries, now));
            success(&AckResult {
                ack_count: report.ack_count,
                retry_count: report.retry_count,
                warnings: report.warnings,
            })
        }
        Operation::Peek => {
            let batch_size = batch_size(&request, limits)?;
            let peeked = app.with_broker(|broker, now| broker.peek(&queue_id, batch_size, now));
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
        Operation::Purge => {
            let Some(Value::Array(items)) = request.get("refs") else {
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
            let report = app.with_broker(|broker, now| broker.purge(&queue_id, &refs, now));
            success(&PurgeResult {
                errors: [],
                warnings: report.warnings,
            })
        }
        // Not routed yet: the router only serves the six operations above.
        _ => Err(Failure::no_route()),
    }
}

/// Parses one pushed message; returns it with the bytes it counts for.
fn parse_message(
    item: &Map<String, Value>,
    pointer: &str,
    default_delay_ms: Option<u64>,
    limits: &Limits,
) -> Result<(NewMessage, usize), Failure> {
    let kind = match item.get("content_type") {
        Some(Value::String(t)) if t == "text" => BodyKind::Text,
        Some(Value::String(t)) if t == "json" => BodyKind::Json,
        None | Some(Value::Null) => BodyKind::Json,
        Some(_) => {
            return Err(Failure::invalid(
                &format!("{pointer}/content_type"),
                "content_type must be \"text\" or \"json\"",
            ));
        }
    };
    let body = match (kind, item.get("body")) {
        (_, None) => {
            return Err(Failure::invalid(
                &format!("{pointer}/body"),
                "body is required",
            ));
        }
        (BodyKind::Text, Some(Value::String(text))) => text.clone().into_bytes(),
        (BodyKind::Text, Some(_)) => {
            return Err(Failure::invalid(
                &format!("{pointer}/body"),
                "a text body must be a string",
            ));
        }
        (_, Some(value)) => value.to_string().into_bytes(),
    };
    let counted = body.len().saturating_add(limits.message_metadata_bytes);
    if counted > limits.max_message_bytes {
        return Err(Failure::bad_request(
            10204,
            format!(
                "MessageSizeOutOfBounds: {counted} bytes exceed the limit of {}",
                limits.max_message_bytes
            ),
        ));
    }
    let delay = delay_ms(
        item,
        "delay_seconds",
        &format!("{pointer}/delay_seconds"),
        10203,
        limits,
    )?;
    Ok((
        NewMessage {
            kind,
            body,
            delay_ms: delay.or(default_delay_ms).unwrap_or(0),
        },
        counted,
    ))
}

fn number(object: &Map<String, Value>, key: &str, pointer: &str) -> Result<Option<f64>, Failure> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(Failure::invalid(pointer, format!("{key} must be a number"))),
    }
}

fn delay_ms(
    object: &Map<String, Value>,
    key: &str,
    pointer: &str,
    code: u32,
    limits: &Limits,
) -> Result<Option<u64>, Failure> {
    let Some(seconds) = number(object, key, pointer)? else {
        return Ok(None);
    };
    let max = limits.max_delay.as_secs_f64();
    if !(0.0..=max).contains(&seconds) {
        let name = if code == 10202 {
            "BatchDelayInvalid"
        } else {
            "MessageMetadataInvalid"
        };
        return Err(
            Failure::bad_request(code, format!("{name}: {key} must be from 0 to {max}"))
                .at(pointer),
        );
    }
    Ok(Some((seconds * 1000.0).round() as u64))
}

fn batch_size(request: &Map<String, Value>, limits: &Limits) -> Result<usize, Failure> {
    let Some(n) = number(request, "batch_size", "/batch_size")? else {
        return Ok(5);
    };
    let max = f64::from(limits.max_pull_batch_size);
    if n.fract() != 0.0 || !(1.0..=max).contains(&n) {
        return Err(Failure::invalid(
            "/batch_size",
            format!("batch_size must be a whole number from 1 to {max}"),
        ));
    }
    Ok(n as usize)
}

type Object = Map<String, Value>;

/// The `lease_id`s of `acks` or `retries`, each with its object.
fn leases<'a>(request: &'a Object, key: &str) -> Result<Vec<(String, &'a Object)>, Failure> {
    let items = match request.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(Failure::invalid(
                &format!("/{key}"),
                format!("{key} must be an array"),
            ));
        }
    };
    let mut leases = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::Object(object) => match object.get("lease_id") {
                Some(Value::String(lease)) => leases.push((lease.clone(), object)),
                _ => {
                    return Err(Failure::invalid(
                        &format!("/{key}/{i}/lease_id"),
                        "lease_id must be a string",
                    ));
                }
            },
            _ => {
                return Err(Failure::invalid(
                    &format!("/{key}/{i}"),
                    "must be an object",
                ));
            }
        }
    }
    Ok(leases)
}

fn valid_id(id: &str, limits: &Limits) -> bool {
    !id.is_empty() && id.len() <= limits.max_id_len && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn authenticate(accepted: Option<&AcceptedAuth>, headers: &HeaderMap) -> Result<(), Failure> {
    let Some(accepted) = accepted else {
        return Ok(());
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let granted = if let Some(authorization) = header(AUTHORIZATION.as_str()) {
        let token = authorization
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        matches!((token, &accepted.token), (Some(given), Some(expected)) if constant_time_eq(given, expected))
    } else if let (Some(email), Some(key)) = (header("x-auth-email"), header("x-auth-key")) {
        matches!(&accepted.global_key, Some((e, k)) if constant_time_eq(email, e) & constant_time_eq(key, k))
    } else {
        return Err(Failure::new(
            StatusCode::UNAUTHORIZED,
            10000,
            "Authentication error",
        ));
    };
    if granted {
        Ok(())
    } else {
        Err(Failure::new(
            StatusCode::FORBIDDEN,
            10000,
            "Authentication error",
        ))
    }
}

/// Compares secrets without an early exit, so timing does not reveal how much matched.
fn constant_time_eq(given: &str, expected: &str) -> bool {
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for (i, byte) in b.iter().enumerate() {
        diff |= byte ^ a.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

fn encode_body(kind: BodyKind, body: &[u8]) -> String {
    match kind {
        BodyKind::Text => String::from_utf8_lossy(body).into_owned(),
        BodyKind::Json | BodyKind::Bytes | BodyKind::V8 => {
            base64::engine::general_purpose::STANDARD.encode(body)
        }
    }
}

// The response shapes, serialized straight to bytes: building a JSON tree
// first copied every pulled message several times (a third of pull's cost).

/// `{success, errors, messages, result}` around a result.
#[derive(Serialize)]
struct Success<'a, T> {
    success: bool,
    errors: [(); 0],
    messages: [(); 0],
    result: &'a T,
}

fn success<T: Serialize>(result: &T) -> Result<Vec<u8>, Failure> {
    let envelope = Success {
        success: true,
        errors: [],
        messages: [],
        result,
    };
    serde_json::to_vec(&envelope)
        .map_err(|e| Failure::new(StatusCode::INTERNAL_SERVER_ERROR, 15000, e.to_string()))
}

#[derive(Serialize)]
struct MetricsOut {
    backlog_count: u64,
    backlog_bytes: u64,
    oldest_message_timestamp_ms: u64,
}

#[derive(Serialize)]
struct ResultMetadata {
    metrics: MetricsOut,
}

impl ResultMetadata {
    fn new(m: Metrics) -> ResultMetadata {
        ResultMetadata {
            metrics: MetricsOut {
                backlog_count: m.backlog_count,
                backlog_bytes: m.backlog_bytes,
                oldest_message_timestamp_ms: m.oldest_message_timestamp_ms,
            },
        }
    }
}

#[derive(Serialize)]
struct PushResult {
    metadata: ResultMetadata,
}

impl PushResult {
    fn new(metrics: Metrics) -> PushResult {
        PushResult {
            metadata: ResultMetadata::new(metrics),
        }
    }
}

#[derive(Serialize)]
struct MessageMetadata {
    #[serde(rename = "CF-sourceMessageSource")]
    source: &'static str,
    #[serde(rename = "CF-Content-Type")]
    content_type: &'static str,
}

impl MessageMetadata {
    fn new(kind: BodyKind) -> MessageMetadata {
        MessageMetadata {
            source: "api",
            content_type: kind.as_str(),
        }
    }
}

#[derive(Serialize)]
struct PulledMessage {
    id: String,
    attempts: u32,
    body: String,
    lease_id: String,
    metadata: MessageMetadata,
    timestamp_ms: u64,
}

#[derive(Serialize)]
struct PullResult {
    messages: Vec<PulledMessage>,
    message_backlog_count: u64,
    metadata: ResultMetadata,
}

#[derive(Serialize)]
struct AckResult {
    #[serde(rename = "ackCount")]
    ack_count: u32,
    #[serde(rename = "retryCount")]
    retry_count: u32,
    warnings: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct PeekedMessage {
    id: String,
    attempts: u32,
    body: String,
    #[serde(rename = "ref")]
    peek_ref: String,
    metadata: MessageMetadata,
    timestamp_ms: u64,
}

#[derive(Serialize)]
struct PeekResult {
    messages: Vec<PeekedMessage>,
}

#[derive(Serialize)]
struct PurgeResult {
    errors: [(); 0],
    warnings: BTreeMap<String, String>,
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body,
    )
        .into_response()
}

/// A failed request, answered with Cloudflare's failure envelope.
enum Failure {
    Api {
        status: StatusCode,
        code: u32,
        message: String,
        pointer: Option<String>,
    },
    Injected(Fault),
}

impl Failure {
    fn new(status: StatusCode, code: u32, message: impl Into<String>) -> Failure {
        Failure::Api {
            status,
            code,
            message: message.into(),
            pointer: None,
        }
    }

    fn bad_request(code: u32, message: impl Into<String>) -> Failure {
        Failure::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// A body that parses but does not match the operation's schema (10207).
    fn invalid(pointer: &str, message: impl Into<String>) -> Failure {
        Failure::bad_request(10207, format!("JSONRequestBodyInvalid: {}", message.into()))
            .at(pointer)
    }

    fn no_route() -> Failure {
        Failure::new(StatusCode::NOT_FOUND, 7003, "No route for the URI")
    }

    fn at(mut self, at: &str) -> Failure {
        if let Failure::Api { pointer, .. } = &mut self {
            *pointer = Some(at.to_owned());
        }
        self
    }

    fn into_response(self) -> Response {
        match self {
            Failure::Api {
                status,
                code,
                message,
                pointer,
            } => {
                let mut error = json!({ "code": code, "message": message });
                if let (Some(pointer), Some(object)) = (pointer, error.as_object_mut()) {
                    object.insert("source".into(), json!({ "pointer": pointer }));
                }
                let body = json!({ "success": false, "errors": [error], "messages": [] });
                json_response(status, body.to_string().into_bytes())
            }
            Failure::Injected(fault) => fault_response(&fault),
        }
    }
}

fn fault_response(fault: &Fault) -> Response {
    let status = fault
        .status
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match &fault.body {
        FaultBody::Envelope { code, message } => {
            Failure::new(status, *code, message.clone()).into_response()
        }
        FaultBody::Raw { content_type, body } => (
            status,
            [(CONTENT_TYPE, HeaderValue::from_static(content_type))],
            body.clone(),
        )
            .into_response(),
    };
    if let Some(after) = fault.retry_after {
        let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq("secret", "secret"));
        assert!(!constant_time_eq("secret", "secreT"));
        assert!(!constant_time_eq("secret", "secret2"));
        assert!(!constant_time_eq("", "secret"));
        assert!(!constant_time_eq("secret\0", "secret"));
    }

    #[test]
    fn ids() {
        let limits = Limits::default();
        assert!(valid_id("abc123", &limits));
        assert!(!valid_id("", &limits));
        assert!(!valid_id(&"a".repeat(33), &limits));
        assert!(!valid_id("a-b", &limits));
    }
}
