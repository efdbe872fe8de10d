//! The response shapes, serialized straight from typed structs. Pulled and
//! peeked messages are serialized field by field here, and their bodies
//! piece by piece in [`stream`](super::stream).

use std::collections::BTreeMap;

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::super::state::{BodyKind, Metrics};
use super::failure::Failure;

// The response shapes, serialized straight to bytes: building a JSON tree
// first copied every pulled message several times (a third of pull's cost).

/// `{success, errors, messages, result}` around a result.
#[derive(Serialize)]
pub(super) struct Success<'a, T> {
    pub(super) success: bool,
    pub(super) errors: [(); 0],
    pub(super) messages: [(); 0],
    pub(super) result: &'a T,
}

pub(super) fn success<T: Serialize>(result: &T) -> Result<Vec<u8>, Failure> {
    let envelope = Success {
        success: true,
        errors: [],
        messages: [],
        result,
    };
    serde_json::to_vec(&envelope).map_err(Failure::internal)
}

#[derive(Serialize)]
pub(super) struct MetricsOut {
    pub(super) backlog_count: u64,
    pub(super) backlog_bytes: u64,
    pub(super) oldest_message_timestamp_ms: u64,
}

#[derive(Serialize)]
pub(super) struct ResultMetadata {
    pub(super) metrics: MetricsOut,
}

impl ResultMetadata {
    pub(super) fn new(m: Metrics) -> ResultMetadata {
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
pub(super) struct PushResult {
    pub(super) metadata: ResultMetadata,
}

impl PushResult {
    pub(super) fn new(metrics: Metrics) -> PushResult {
        PushResult {
            metadata: ResultMetadata::new(metrics),
        }
    }
}

#[derive(Serialize)]
pub(super) struct MessageMetadata {
    #[serde(rename = "CF-sourceMessageSource")]
    pub(super) source: &'static str,
    #[serde(rename = "CF-Content-Type")]
    pub(super) content_type: &'static str,
}

impl MessageMetadata {
    pub(super) fn new(kind: BodyKind) -> MessageMetadata {
        MessageMetadata {
            source: "api",
            content_type: kind.as_str(),
        }
    }
}

/// A pulled message but its body.
#[derive(Serialize)]
pub(super) struct PulledFields {
    pub(super) id: String,
    pub(super) attempts: u32,
    pub(super) lease_id: String,
    pub(super) metadata: MessageMetadata,
    pub(super) timestamp_ms: u64,
}

/// The pull result but its messages.
#[derive(Serialize)]
pub(super) struct PullRest {
    pub(super) message_backlog_count: u64,
    pub(super) metadata: ResultMetadata,
}

#[derive(Serialize)]
pub(super) struct AckResult {
    #[serde(rename = "ackCount")]
    pub(super) ack_count: u32,
    #[serde(rename = "retryCount")]
    pub(super) retry_count: u32,
    pub(super) warnings: BTreeMap<String, String>,
}

/// A peeked message but its body.
#[derive(Serialize)]
pub(super) struct PeekedFields {
    pub(super) id: String,
    pub(super) attempts: u32,
    #[serde(rename = "ref")]
    pub(super) peek_ref: String,
    pub(super) metadata: MessageMetadata,
    pub(super) timestamp_ms: u64,
}

/// The peek result has nothing but its messages.
#[derive(Serialize)]
pub(super) struct PeekRest {}

#[derive(Serialize)]
pub(super) struct PurgeResult {
    pub(super) errors: [(); 0],
    pub(super) warnings: BTreeMap<String, String>,
}

pub(crate) fn json_response(status: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body.into(),
    )
        .into_response()
}
