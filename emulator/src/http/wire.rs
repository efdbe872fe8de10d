//! The response shapes, serialized straight from typed structs. Pulled and
//! peeked messages are serialized field by field here, and their bodies
//! piece by piece in [`stream`](super::stream).

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::clock::rfc3339_ms;
use super::super::state::{BodyKind, QueueStats};
use super::error_answer::ErrorAnswer;

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

pub(super) fn success<T: Serialize>(result: &T) -> Result<Vec<u8>, ErrorAnswer> {
    let envelope = Success {
        success: true,
        errors: [],
        messages: [],
        result,
    };
    serde_json::to_vec(&envelope).map_err(ErrorAnswer::internal)
}

/// `mq_queue-metrics`: the result of `GET /metrics`, and the metrics in
/// push and pull results.
#[derive(Serialize)]
pub(super) struct MetricsOut {
    pub(super) backlog_count: u64,
    pub(super) backlog_bytes: u64,
    pub(super) oldest_message_timestamp_ms: u64,
}

impl From<QueueStats> for MetricsOut {
    fn from(m: QueueStats) -> MetricsOut {
        MetricsOut {
            backlog_count: m.backlog_count,
            backlog_bytes: m.backlog_bytes,
            oldest_message_timestamp_ms: m.oldest_message_timestamp_ms,
        }
    }
}

#[derive(Serialize)]
pub(super) struct ResultMetadata {
    pub(super) metrics: MetricsOut,
}

impl ResultMetadata {
    pub(super) fn new(m: QueueStats) -> ResultMetadata {
        ResultMetadata {
            metrics: MetricsOut::from(m),
        }
    }
}

#[derive(Serialize)]
pub(super) struct PushResult {
    pub(super) metadata: ResultMetadata,
}

impl PushResult {
    pub(super) fn new(metrics: QueueStats) -> PushResult {
        PushResult {
            metadata: ResultMetadata::new(metrics),
        }
    }
}

/// A message's `metadata`, as the live API shows it: where it came from,
/// its content type, and the delay it was pushed with, if any, as a string
/// of seconds (`"20"`).
#[derive(Serialize)]
pub(super) struct MessageMetadata {
    #[serde(rename = "CF-sourceMessageSource")]
    pub(super) source: &'static str,
    #[serde(rename = "CF-Content-Type")]
    pub(super) content_type: &'static str,
    #[serde(rename = "CF-msg-delay-secs", skip_serializing_if = "Option::is_none")]
    pub(super) delay_secs: Option<String>,
}

impl MessageMetadata {
    pub(super) fn new(kind: BodyKind, delay_ms: u64) -> MessageMetadata {
        let delay_secs = match delay_ms {
            0 => None,
            ms if ms % 1000 == 0 => Some((ms / 1000).to_string()),
            ms => Some(format!("{}", ms as f64 / 1000.0)),
        };
        MessageMetadata {
            source: "api",
            content_type: kind.as_str(),
            delay_secs,
        }
    }
}

/// A pulled or previewed message but its body (the pull shape).
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

/// The peek and preview results have nothing but their messages.
#[derive(Serialize)]
pub(super) struct MessagesOnly {}

#[derive(Serialize)]
pub(super) struct PurgeResult {
    pub(super) errors: [(); 0],
    pub(super) warnings: BTreeMap<String, String>,
}

#[derive(Serialize)]
pub(super) struct ExtendResult {
    #[serde(rename = "extendCount")]
    pub(super) extend_count: u32,
    pub(super) warnings: BTreeMap<String, String>,
}

#[derive(Serialize)]
pub(super) struct PreviewAckResult {
    pub(super) warnings: BTreeMap<String, String>,
}

/// The result of `GET /purge`: both fields strings, as in Cloudflare's
/// published schema and its SDKs.
#[derive(Serialize)]
pub(super) struct PurgeStatusResult {
    pub(super) completed: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) started_at: Option<String>,
}

impl PurgeStatusResult {
    /// Purges complete at once in the emulator: one that started is
    /// completed. Never purged: `"false"` and no `started_at` (see the
    /// Assumptions in the module docs).
    pub(super) fn new(started_ms: Option<u64>) -> PurgeStatusResult {
        PurgeStatusResult {
            completed: if started_ms.is_some() {
                "true"
            } else {
                "false"
            },
            started_at: started_ms.map(rfc3339_ms),
        }
    }
}
