//! Entry points for fuzzing and property tests (feature `fuzzing`): the
//! decoders a response body goes through, callable on arbitrary bytes.
//! Not part of the stable API.

use bytes::Bytes;
use progenitor_client::{Error as Raw, ResponseValue};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::de::DeserializeOwned;

use crate::envelope::{Envelope, RawOutcome, finish};
use crate::event_subscriptions::EventSubscription;
use crate::hooks::Exchange;
use crate::management::server_clock::rfc3339_unix_ms;
use crate::management::wire::shows_applied;
use crate::message::Body;
use crate::messages::wire::{peeked, previewed};
use crate::operation::Operation;
use crate::raw::types;
use crate::resources::{ConsumerInfo, QueueSettings};
use crate::response::{
    AckOutcome, ExtendOutcome, Metrics, PreviewedOutcome, PulledBatch, PurgeOutcome, PurgeStatus,
    PushReceipt, QueueInfo,
};

/// Runs `body`, answered with `status`, through everything the client does
/// with a response (the generated client's decoding, envelope unwrapping,
/// error mapping and classification, result conversion and message-body
/// decoding) for every operation of [`Operation::ALL`]; returns how many
/// operations decoded it as a success.
pub fn decode_response(status: u16, body: &[u8]) -> usize {
    Operation::ALL
        .into_iter()
        .filter(|&operation| decode_as(operation, status, body))
        .count()
}

/// Runs `body`, answered with `status`, through everything the client does
/// with a response to `operation`, as [`decode_response`] does for all of
/// them; returns whether it decoded as a success.
pub fn decode_as(operation: Operation, status: u16, body: &[u8]) -> bool {
    /// Whether the answer decodes as `E` and reads as `T`.
    fn reads<E, T>(operation: Operation, status: u16, body: &[u8]) -> bool
    where
        E: Envelope + DeserializeOwned,
        T: From<E::Result>,
    {
        decode::<E>(operation, status, body).map(T::from).is_ok()
    }

    // No wildcard arm: an operation added to `Operation` does not compile
    // here until it is fuzzed too.
    match operation {
        // Both pushes answer the same envelope.
        Operation::Push | Operation::Batch => {
            reads::<types::PushEnvelope, PushReceipt>(operation, status, body)
        }
        Operation::Pull => decode::<types::PullEnvelope>(operation, status, body)
            .map(|result| {
                let batch = PulledBatch::from(result);
                batch.messages.iter().for_each(|m| decode_body(m.body()));
            })
            .is_ok(),
        Operation::Ack => reads::<types::AckEnvelope, AckOutcome>(operation, status, body),
        Operation::Peek => decode::<types::PeekEnvelope>(operation, status, body)
            .map(|result| peeked(result).iter().for_each(|m| decode_body(m.body())))
            .is_ok(),
        Operation::Purge => reads::<types::PurgeEnvelope, PurgeOutcome>(operation, status, body),
        Operation::Extend => reads::<types::ExtendEnvelope, ExtendOutcome>(operation, status, body),
        Operation::Preview => decode::<types::PreviewEnvelope>(operation, status, body)
            .map(|result| previewed(result).iter().for_each(|m| decode_body(m.body())))
            .is_ok(),
        Operation::DeletePreviewed => {
            reads::<types::PreviewAckEnvelope, PreviewedOutcome>(operation, status, body)
        }
        Operation::Metrics => reads::<types::MetricsEnvelope, Metrics>(operation, status, body),
        Operation::PurgeQueue => {
            reads::<types::PurgeQueueEnvelope, QueueInfo>(operation, status, body)
        }
        Operation::PurgeStatus => {
            reads::<types::PurgeStatusEnvelope, PurgeStatus>(operation, status, body)
        }
        Operation::ListQueues => decode::<types::QueueListEnvelope>(operation, status, body)
            .map(|page| page.items.into_iter().for_each(|q| drop(queue_info(q))))
            .is_ok(),
        Operation::CreateQueue
        | Operation::GetQueue
        | Operation::UpdateQueue
        | Operation::EditQueue => decode::<types::QueueEnvelope>(operation, status, body)
            .map(queue_info)
            .is_ok(),
        Operation::ListConsumers => decode::<types::ConsumerListEnvelope>(operation, status, body)
            .map(|list| list.into_iter().for_each(|c| drop(ConsumerInfo::from(c))))
            .is_ok(),
        Operation::CreateConsumer | Operation::GetConsumer | Operation::UpdateConsumer => {
            reads::<types::ConsumerEnvelope, ConsumerInfo>(operation, status, body)
        }
        Operation::DeleteQueue | Operation::DeleteConsumer => {
            decode::<types::DeleteEnvelope>(operation, status, body).is_ok()
        }
        Operation::ListEventSubscriptions => {
            decode::<types::EventSubscriptionListEnvelope>(operation, status, body)
                .map(|page| {
                    page.items
                        .into_iter()
                        .for_each(|s| drop(EventSubscription::from(s)))
                })
                .is_ok()
        }
        Operation::CreateEventSubscription
        | Operation::GetEventSubscription
        | Operation::UpdateEventSubscription
        | Operation::DeleteEventSubscription => {
            reads::<types::EventSubscriptionEnvelope, EventSubscription>(operation, status, body)
        }
    }
}

/// A queue as every call reads it, with what a create reads besides: its
/// creation time (to tell its own queue after a lost answer) and whether
/// its settings show the ones sent.
fn queue_info(queue: types::QueueDetails) -> QueueInfo {
    let _ = queue.created_on.as_deref().map(rfc3339_unix_ms);
    let sent = QueueSettings::new()
        .delivery_delay(std::time::Duration::from_secs(2))
        .delivery_paused(true)
        .message_retention_period(std::time::Duration::from_secs(3600))
        .to_wire(&crate::limits::Limits::default());
    if let Ok(sent) = sent {
        let _ = shows_applied(&sent, queue.settings.as_ref());
    }
    QueueInfo::from(queue)
}

/// [`decode_response`] as a 200 and as a 500.
pub fn decode_everything(body: &[u8]) -> usize {
    decode_response(200, body) + decode_response(500, body)
}

fn decode<E: Envelope + DeserializeOwned>(
    operation: Operation,
    status: u16,
    body: &[u8],
) -> crate::Result<E::Result> {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let exchange = Exchange {
        cap: body.len(),
        status: Some(code),
        headers: HeaderMap::new(),
        body: Bytes::copy_from_slice(body),
        truncated: false,
    };
    let outcome = finish::<E>(operation, 1, generated_outcome(code, body), exchange);
    if let Err(error) = &outcome {
        // Classification must hold together for any answer.
        let _ = (error.is_retryable(), error.is_auth(), error.to_string());
    }
    outcome
}

/// What the generated client returns for this status and body: the same
/// match on the status, the same `serde_json` decoding.
// The generated client's own error type, as large as it is there.
#[allow(clippy::result_large_err)]
fn generated_outcome<E: DeserializeOwned>(code: StatusCode, body: &[u8]) -> RawOutcome<E> {
    let bytes = || Bytes::copy_from_slice(body);
    match code.as_u16() {
        200..=299 => serde_json::from_slice(body)
            .map(|inner| ResponseValue::new(inner, code, HeaderMap::new()))
            .map_err(|e| Raw::InvalidResponsePayload(bytes(), e)),
        400..=599 => match serde_json::from_slice(body) {
            Ok(failure) => Err(Raw::ErrorResponse(ResponseValue::new(
                failure,
                code,
                HeaderMap::new(),
            ))),
            Err(e) => Err(Raw::InvalidResponsePayload(bytes(), e)),
        },
        _ => {
            let mut response = http::Response::new(bytes());
            *response.status_mut() = code;
            Err(Raw::UnexpectedResponse(reqwest::Response::from(response)))
        }
    }
}

/// Reads `text` as a `Retry-After` header value.
pub fn decode_retry_after(text: &str) -> Option<std::time::Duration> {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = reqwest::header::HeaderValue::from_str(text).ok()?;
    headers.insert(reqwest::header::RETRY_AFTER, value);
    crate::token_budget::retry_after(&headers)
}

fn decode_body(body: &Body) {
    let _ = (body.text(), body.bytes(), body.json::<serde_json::Value>());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn envelope(result: Value) -> Vec<u8> {
        json!({"success": true, "errors": [], "messages": [], "result": result})
            .to_string()
            .into_bytes()
    }

    /// Each operation beyond the original six, with an answer of its
    /// shape and one whose field has a type its result cannot take.
    fn new_operations() -> [(Operation, Value, Value); 6] {
        let message = json!({"id": "m1", "attempts": 1, "body": "hi", "lease_id": "preview-1",
                             "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 7});
        [
            (
                Operation::Extend,
                json!({"extendCount": 1, "warnings": {"lease-2": "delivered again"}}),
                json!({"extendCount": "one"}),
            ),
            (
                Operation::Preview,
                json!({"messages": [message]}),
                json!({"messages": "none"}),
            ),
            (
                Operation::DeletePreviewed,
                json!({"warnings": ["preview-9 unknown"]}),
                json!({"warnings": 9}),
            ),
            (
                Operation::Metrics,
                json!({"backlog_count": 5, "backlog_bytes": 1024, "oldest_message_timestamp_ms": 7}),
                json!({"backlog_count": [5]}),
            ),
            (
                Operation::PurgeQueue,
                json!({"queue_id": "q", "queue_name": "orders", "consumers_total_count": 1}),
                json!({"queue_name": 5}),
            ),
            (
                Operation::PurgeStatus,
                json!({"completed": "true", "started_at": "2026-11-29T10:00:00Z"}),
                json!({"completed": 5}),
            ),
        ]
    }

    /// The management operations, with an answer of their shape and a
    /// mistyped one.
    fn management_operations() -> [(Operation, Value, Value); 4] {
        let queue = json!({"queue_id": "q", "queue_name": "orders",
                           "created_on": "2026-11-29T10:00:00.123456Z",
                           "settings": {"delivery_delay": 5, "delivery_paused": true,
                                        "message_retention_period": 3600},
                           "consumers": [{"type": "worker", "consumer_id": "w",
                                          "script": "mailer", "service": "mailer"}]});
        let consumer = json!({"type": "http_pull", "consumer_id": "c", "dead_letter_queue": "",
                              "settings": {"batch_size": 50.0, "visibility_timeout_ms": 6000}});
        [
            (
                Operation::ListQueues,
                json!([queue]),
                json!({"queue_id": "q"}),
            ),
            (Operation::GetQueue, queue, json!({"settings": [1]})),
            (Operation::ListConsumers, json!([consumer]), json!("none")),
            (Operation::CreateConsumer, consumer, json!({"settings": 3})),
        ]
    }

    #[test]
    fn every_operation_decodes_an_empty_success_and_no_failure() {
        let empty = envelope(json!({}));
        let lists = [
            Operation::ListQueues,
            Operation::ListConsumers,
            Operation::ListEventSubscriptions,
        ];
        // An empty list answer is `[]`; `{}` where a list belongs is a decode error.
        assert_eq!(
            decode_response(200, &empty),
            Operation::ALL.len() - lists.len()
        );
        for list in lists {
            assert!(decode_as(list, 200, &envelope(json!([]))), "{list}");
            assert!(decode_as(list, 200, &envelope(Value::Null)), "{list}");
        }
        assert_eq!(decode_response(500, &empty), 0);
        let failure = json!({"success": false, "errors": [{"code": 15000, "message": "x"}]});
        assert_eq!(decode_response(503, failure.to_string().as_bytes()), 0);
    }

    #[test]
    fn each_new_operation_reads_its_own_result_type() {
        for (operation, answer, mistyped) in
            new_operations().into_iter().chain(management_operations())
        {
            assert!(
                decode_as(operation, 200, &envelope(answer.clone())),
                "{operation}"
            );
            assert!(!decode_as(operation, 500, &envelope(answer)), "{operation}");
            assert!(
                !decode_as(operation, 200, &envelope(mistyped)),
                "{operation}"
            );
        }
    }

    /// Values of any JSON type, nested a little.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The new operations' keys with arbitrary values: deeper into their
        /// result types than random bytes reach.
        #[test]
        fn new_operation_shapes_never_panic(
            count in json_value(),
            text in json_value(),
            warnings in json_value(),
            messages in json_value(),
            status in prop_oneof![Just(200u16), Just(429), Just(503), 0u16..600],
        ) {
            let result = json!({
                "extendCount": count, "warnings": warnings, "messages": messages,
                "backlog_count": count, "backlog_bytes": count, "oldest_message_timestamp_ms": count,
                "queue_id": text, "queue_name": text, "created_on": text, "modified_on": text,
                "consumers_total_count": count, "producers_total_count": count,
                "consumers": messages, "producers": messages, "settings": warnings,
                "completed": text, "started_at": text,
            });
            decode_response(status, &envelope(result));
        }
    }
}
