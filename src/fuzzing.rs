//! Entry points for fuzzing and property tests (feature `fuzzing`): the
//! decoders a response body goes through, callable on arbitrary bytes.
//! Not part of the stable API.

use bytes::Bytes;
use progenitor_client::{Error as Raw, ResponseValue};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::de::DeserializeOwned;

use crate::envelope::{Envelope, RawOutcome, finish};
use crate::hooks::Exchange;
use crate::message::Body;
use crate::operation::Operation;
use crate::raw::types;
use crate::response::{AckOutcome, PulledBatch, PurgeOutcome, PushReceipt, peeked};

/// Runs `body`, answered with `status`, through everything the client does
/// with a response (the generated client's decoding, envelope unwrapping,
/// error mapping and classification, result conversion and message-body
/// decoding) for every operation; returns how many operations decoded it
/// as a success.
pub fn decode_response(status: u16, body: &[u8]) -> usize {
    let mut succeeded = 0;
    succeeded += usize::from(
        decode::<types::PushEnvelope>(Operation::Push, status, body)
            .map(PushReceipt::from)
            .is_ok(),
    );
    if let Ok(result) = decode::<types::PullEnvelope>(Operation::Pull, status, body) {
        PulledBatch::from(result)
            .messages
            .iter()
            .for_each(|m| decode_body(m.body()));
        succeeded += 1;
    }
    succeeded += usize::from(
        decode::<types::AckEnvelope>(Operation::Ack, status, body)
            .map(AckOutcome::from)
            .is_ok(),
    );
    if let Ok(result) = decode::<types::PeekEnvelope>(Operation::Peek, status, body) {
        peeked(result).iter().for_each(|m| decode_body(m.body()));
        succeeded += 1;
    }
    succeeded += usize::from(
        decode::<types::PurgeEnvelope>(Operation::Purge, status, body)
            .map(PurgeOutcome::from)
            .is_ok(),
    );
    succeeded
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
    crate::retry::retry_after(&headers)
}

fn decode_body(body: &Body) {
    let _ = (body.text(), body.bytes(), body.json::<serde_json::Value>());
}
