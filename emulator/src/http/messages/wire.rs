//! The response shapes, serialized straight from typed structs. Pulled and
//! peeked messages are serialized field by field here, and their bodies
//! piece by piece in [`stream`](super::stream).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::clock::rfc3339_ms;
use crate::http::error_answer::ErrorAnswer;
use crate::state::{BodyKind, QueueStats};

// The response shapes, serialized straight to bytes: building a JSON tree
// first copied every pulled message several times (a third of pull's cost).

/// `{success, errors, messages, result}` around a result.
#[derive(Serialize)]
pub(crate) struct Success<'a, T> {
    pub(crate) success: bool,
    pub(crate) errors: [(); 0],
    pub(crate) messages: [(); 0],
    pub(crate) result: &'a T,
}

pub(crate) fn success<T: Serialize>(result: &T) -> Result<Vec<u8>, ErrorAnswer> {
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
pub(crate) struct MetricsOut {
    pub(crate) backlog_count: u64,
    pub(crate) backlog_bytes: u64,
    pub(crate) oldest_message_timestamp_ms: u64,
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
pub(crate) struct ResultMetadata {
    pub(crate) metrics: MetricsOut,
}

impl ResultMetadata {
    pub(crate) fn new(m: QueueStats) -> ResultMetadata {
        ResultMetadata {
            metrics: MetricsOut::from(m),
        }
    }
}

#[derive(Serialize)]
pub(crate) struct PushResult {
    pub(crate) metadata: ResultMetadata,
}

impl PushResult {
    pub(crate) fn new(metrics: QueueStats) -> PushResult {
        PushResult {
            metadata: ResultMetadata::new(metrics),
        }
    }
}

/// A message's `metadata`, as the live API shows it: where it came from,
/// its content type, and the delay it was pushed with, if any, as a string
/// of seconds (`"20"`).
#[derive(Serialize)]
pub(crate) struct MessageMetadata {
    #[serde(rename = "CF-sourceMessageSource")]
    pub(crate) source: &'static str,
    #[serde(rename = "CF-Content-Type")]
    pub(crate) content_type: &'static str,
    #[serde(rename = "CF-msg-delay-secs", skip_serializing_if = "Option::is_none")]
    pub(crate) delay_secs: Option<String>,
}

impl MessageMetadata {
    pub(crate) fn new(kind: BodyKind, delay_ms: u64) -> MessageMetadata {
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
pub(crate) struct PulledFields {
    pub(crate) id: String,
    pub(crate) attempts: u32,
    pub(crate) lease_id: String,
    pub(crate) metadata: MessageMetadata,
    pub(crate) timestamp_ms: u64,
}

/// The pull result but its messages.
#[derive(Serialize)]
pub(crate) struct PullRest {
    pub(crate) message_backlog_count: u64,
    pub(crate) metadata: ResultMetadata,
}

#[derive(Serialize)]
pub(crate) struct AckResult {
    #[serde(rename = "ackCount")]
    pub(crate) ack_count: u32,
    #[serde(rename = "retryCount")]
    pub(crate) retry_count: u32,
    pub(crate) warnings: BTreeMap<String, String>,
}

/// A peeked message but its body.
#[derive(Serialize)]
pub(crate) struct PeekedFields {
    pub(crate) id: String,
    pub(crate) attempts: u32,
    #[serde(rename = "ref")]
    pub(crate) peek_ref: String,
    pub(crate) metadata: MessageMetadata,
    pub(crate) timestamp_ms: u64,
}

/// The peek and preview results have nothing but their messages.
#[derive(Serialize)]
pub(crate) struct MessagesOnly {}

#[derive(Serialize)]
pub(crate) struct PurgeResult {
    pub(crate) errors: [(); 0],
    pub(crate) warnings: BTreeMap<String, String>,
}

#[derive(Serialize)]
pub(crate) struct ExtendResult {
    #[serde(rename = "extendCount")]
    pub(crate) extend_count: u32,
    pub(crate) warnings: BTreeMap<String, String>,
}

#[derive(Serialize)]
pub(crate) struct PreviewAckResult {
    pub(crate) warnings: BTreeMap<String, String>,
}

/// The result of `GET /purge`: both fields strings, as in Cloudflare's
/// published schema and its SDKs.
#[derive(Serialize)]
pub(crate) struct PurgeStatusResult {
    pub(crate) completed: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) started_at: Option<String>,
}

impl PurgeStatusResult {
    /// Purges complete at once in the emulator: one that started is
    /// completed. Never purged: `"false"` and no `started_at` (see the
    /// Assumptions in the module docs).
    pub(crate) fn new(started_ms: Option<u64>) -> PurgeStatusResult {
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
