//! The messages operations on the wire: the requests the generated client
//! sends, made from the crate's types, and the crate's types made from
//! its answers. The one place these conversions are written; the
//! operations beside it call them, and the crate's types know nothing of
//! the generated ones.

use std::fmt;

use serde_json::{Map, Value};

use crate::error::{Error, Result, built};
use crate::message::outgoing::OutgoingBody;
use crate::message::received::{body, count_u32, count_u64, known_u32, known_u64};
use crate::message::{
    LeaseId, Message, PeekRef, PeekedMessage, PreviewId, PreviewedMessage, PulledMessage,
};
use crate::raw::types;
use crate::response::{
    AckOutcome, ExtendOutcome, Metrics, PreviewedOutcome, PulledBatch, PurgeOutcome, PurgeStatus,
    PushReceipt, Warning,
};

/// `POST .../messages/pull`: up to `batch_size` messages (the server's
/// default when `None`), leased for `visibility_timeout_ms`.
pub(crate) fn pull_request(
    batch_size: Option<u32>,
    visibility_timeout_ms: Option<u64>,
) -> Result<types::PullRequest> {
    built(
        types::PullRequest::builder()
            .batch_size(batch_size)
            .visibility_timeout_ms(visibility_timeout_ms),
    )
}

/// One lease of an ack.
pub(crate) fn ack_lease(id: String) -> Result<types::AckLease> {
    built(types::AckLease::builder().lease_id(id))
}

/// One lease of an ack's retries, with its delay (`None`: the queue's).
pub(crate) fn retry_lease(id: String, delay_seconds: Option<u32>) -> Result<types::RetryLease> {
    built(
        types::RetryLease::builder()
            .lease_id(id)
            .delay_seconds(delay_seconds),
    )
}

/// `POST .../messages/ack`.
pub(crate) fn ack_request(
    acks: Vec<types::AckLease>,
    retries: Vec<types::RetryLease>,
) -> Result<types::AckRequest> {
    built(types::AckRequest::builder().acks(acks).retries(retries))
}

/// One lease of an extension.
pub(crate) fn extend_lease(id: String) -> Result<types::ExtendLease> {
    built(types::ExtendLease::builder().lease_id(id))
}

/// `POST .../messages/extend`: these leases, `visibility_timeout_ms` from now.
pub(crate) fn extend_request(
    leases: Vec<types::ExtendLease>,
    visibility_timeout_ms: u64,
) -> Result<types::ExtendRequest> {
    built(
        types::ExtendRequest::builder()
            .extend(leases)
            .visibility_timeout_ms(visibility_timeout_ms),
    )
}

/// `POST .../messages/peek`.
pub(crate) fn peek_request(batch_size: Option<u32>) -> Result<types::PeekRequest> {
    built(types::PeekRequest::builder().batch_size(batch_size))
}

/// One ref of a purge by ref.
pub(crate) fn purge_ref(peek_ref: &str) -> Result<types::PurgeRef> {
    built(types::PurgeRef::builder().ref_(peek_ref.to_owned()))
}

/// `POST .../messages/purge`.
pub(crate) fn purge_request(refs: Vec<types::PurgeRef>) -> Result<types::PurgeRequest> {
    built(types::PurgeRequest::builder().refs(refs))
}

/// `POST .../messages/preview`.
pub(crate) fn preview_request(batch_size: Option<u32>) -> Result<types::PreviewRequest> {
    built(types::PreviewRequest::builder().batch_size(batch_size))
}

/// One preview id to delete.
pub(crate) fn preview_ack_lease(id: String) -> Result<types::PreviewAckLease> {
    built(types::PreviewAckLease::builder().lease_id(id))
}

/// One preview id to delay.
pub(crate) fn preview_retry_lease(
    id: String,
    delay_seconds: Option<u32>,
) -> Result<types::PreviewRetryLease> {
    built(
        types::PreviewRetryLease::builder()
            .lease_id(id)
            .delay_seconds(delay_seconds),
    )
}

/// `POST .../messages/preview/ack`.
pub(crate) fn preview_ack_request(
    deletions: Vec<types::PreviewAckLease>,
    retries: Vec<types::PreviewRetryLease>,
) -> Result<types::PreviewAckRequest> {
    built(
        types::PreviewAckRequest::builder()
            .acks(deletions)
            .retries(retries),
    )
}

/// `POST .../purge`: every message, permanently (the only purge the API has).
pub(crate) fn purge_queue_request() -> Result<types::PurgeQueueRequest> {
    built(types::PurgeQueueRequest::builder().delete_messages_permanently(true))
}

/// `POST .../messages/batch`.
pub(crate) fn batch_request(
    messages: Vec<types::QueueMessage>,
    delay_seconds: Option<u32>,
) -> Result<types::BatchRequest> {
    built(
        types::BatchRequest::builder()
            .messages(messages)
            .delay_seconds(delay_seconds),
    )
}

impl From<types::Metrics> for Metrics {
    fn from(m: types::Metrics) -> Self {
        Metrics {
            backlog_count: count_u64(m.backlog_count),
            backlog_bytes: count_u64(m.backlog_bytes),
            oldest_message_timestamp_ms: count_u64(m.oldest_message_timestamp_ms),
        }
    }
}

fn metrics(metadata: Option<types::ResultMetadata>) -> Option<Metrics> {
    metadata.and_then(|m| m.metrics).map(Metrics::from)
}

impl From<types::PushResult> for PushReceipt {
    fn from(r: types::PushResult) -> Self {
        PushReceipt {
            metrics: metrics(r.metadata),
        }
    }
}

impl From<types::PullResult> for PulledBatch {
    fn from(r: types::PullResult) -> Self {
        PulledBatch {
            messages: r
                .messages
                .unwrap_or_default()
                .into_iter()
                .map(PulledMessage::from)
                .collect(),
            backlog_count: known_u64(r.message_backlog_count),
            metrics: metrics(r.metadata),
        }
    }
}

fn warnings(w: Option<types::AckWarnings>) -> Vec<Warning> {
    match w {
        None => Vec::new(),
        Some(types::AckWarnings::Object(map)) => {
            let mut list: Vec<Warning> = map
                .into_iter()
                .map(|(subject, message)| Warning {
                    subject: Some(subject),
                    message,
                })
                .collect();
            // The map has no order on the wire: sort for stable output.
            list.sort_by(|a, b| a.subject.cmp(&b.subject));
            list
        }
        Some(types::AckWarnings::Array(list)) => list
            .into_iter()
            .map(|message| Warning {
                subject: None,
                message,
            })
            .collect(),
    }
}

impl From<types::AckResult> for AckOutcome {
    fn from(r: types::AckResult) -> Self {
        AckOutcome {
            acked: known_u32(r.ack_count),
            retried: known_u32(r.retry_count),
            warnings: warnings(r.warnings),
        }
    }
}

impl From<types::ExtendResult> for ExtendOutcome {
    fn from(r: types::ExtendResult) -> Self {
        ExtendOutcome {
            extended: known_u32(r.extend_count),
            warnings: warnings(r.warnings),
        }
    }
}

impl From<types::PreviewAckResult> for PreviewedOutcome {
    fn from(r: types::PreviewAckResult) -> Self {
        PreviewedOutcome {
            warnings: warnings(r.warnings),
        }
    }
}

impl From<types::PurgeStatusResult> for PurgeStatus {
    fn from(r: types::PurgeStatusResult) -> Self {
        let completed = match r.completed {
            Some(types::PurgeCompleted::Boolean(done)) => Some(done),
            Some(types::PurgeCompleted::String(text)) => match text.trim() {
                t if t.eq_ignore_ascii_case("true") => Some(true),
                t if t.eq_ignore_ascii_case("false") => Some(false),
                _ => None,
            },
            None => None,
        };
        PurgeStatus {
            completed,
            started_at: r.started_at.filter(|s| !s.is_empty()),
        }
    }
}

impl From<types::PurgeResult> for PurgeOutcome {
    fn from(r: types::PurgeResult) -> Self {
        PurgeOutcome {
            errors: r
                .errors
                .unwrap_or_default()
                .into_iter()
                .filter_map(|e| e.message)
                .collect(),
            warnings: warnings(r.warnings),
        }
    }
}

pub(crate) fn previewed(r: types::PreviewResult) -> Vec<PreviewedMessage> {
    r.messages
        .unwrap_or_default()
        .into_iter()
        .map(PreviewedMessage::from)
        .collect()
}

pub(crate) fn peeked(r: types::PeekResult) -> Vec<PeekedMessage> {
    r.messages
        .unwrap_or_default()
        .into_iter()
        .map(PeekedMessage::from)
        .collect()
}

/// Metadata as the API sent it: an object in practice, anything else read as empty.
fn metadata(raw: Option<Value>) -> Map<String, Value> {
    match raw {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

impl From<types::PulledMessage> for PulledMessage {
    fn from(m: types::PulledMessage) -> Self {
        let metadata = metadata(m.metadata);
        PulledMessage {
            body: body(m.body, &metadata),
            id: m.id.unwrap_or_default(),
            attempts: count_u32(m.attempts),
            timestamp_ms: count_u64(m.timestamp_ms),
            lease_id: LeaseId::from(m.lease_id.unwrap_or_default()),
            metadata,
        }
    }
}

impl From<types::PeekedMessage> for PeekedMessage {
    fn from(m: types::PeekedMessage) -> Self {
        let metadata = metadata(m.metadata);
        PeekedMessage {
            body: body(m.body, &metadata),
            id: m.id.unwrap_or_default(),
            attempts: count_u32(m.attempts),
            timestamp_ms: count_u64(m.timestamp_ms),
            peek_ref: PeekRef::from(m.ref_.unwrap_or_default()),
            metadata,
        }
    }
}

impl From<types::PreviewedMessage> for PreviewedMessage {
    fn from(m: types::PreviewedMessage) -> Self {
        let metadata = metadata(m.metadata);
        PreviewedMessage {
            body: body(m.body, &metadata),
            id: m.id.unwrap_or_default(),
            attempts: count_u32(m.attempts),
            timestamp_ms: count_u64(m.timestamp_ms),
            preview_id: PreviewId::from(m.lease_id.unwrap_or_default()),
            metadata,
        }
    }
}

impl Message {
    /// Checks the limits and builds the wire message; returns it with the bytes it counts for.
    pub(crate) fn to_wire(
        &self,
        field: &dyn fmt::Display,
        limits: &crate::limits::Limits,
    ) -> Result<(types::QueueMessage, usize)> {
        let delay_seconds = self
            .delay
            .map(|d| limits.delay_seconds(&format_args!("{field}.delay"), d))
            .transpose()?;
        let (wire, body_bytes) = match &self.body {
            OutgoingBody::Text(text) => (
                types::QueueMessage::TextMessage(built(
                    types::TextMessage::builder()
                        .body(text.clone())
                        .content_type(types::TextMessageContentType::Text)
                        .delay_seconds(delay_seconds),
                )?),
                text.len(),
            ),
            OutgoingBody::Json(value) => {
                let encoded = serde_json::to_vec(value).map_err(|e| {
                    Error::invalid(format!("{field}.body"), format!("cannot be encoded: {e}"))
                })?;
                (
                    types::QueueMessage::JsonMessage(built(
                        types::JsonMessage::builder()
                            .body(value.clone())
                            .content_type(types::JsonMessageContentType::Json)
                            .delay_seconds(delay_seconds),
                    )?),
                    encoded.len(),
                )
            }
        };
        let counted = limits.check_message_size(&format_args!("{field}.body"), body_bytes)?;
        Ok((wire, counted))
    }
}
