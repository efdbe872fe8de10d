//! Unwrapping `{success, errors, messages, result}` into a typed result or an [`Error`].

use std::future::Future;
use std::time::{Duration, SystemTime};

use progenitor_client::ResponseValue;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::{ApiError, ApiErrorDetail, Error, Result, snippet};
use crate::raw::types;
use crate::transport::{Exchange, recorded};

/// The parts every success envelope shares.
pub(crate) trait Envelope {
    type Result: Default;
    fn into_parts(
        self,
    ) -> (
        Option<bool>,
        Vec<types::ResponseInfo>,
        Vec<Value>,
        Option<Self::Result>,
    );
}

macro_rules! envelope {
    ($($envelope:ident => $result:ident),* $(,)?) => {$(
        impl Envelope for types::$envelope {
            type Result = types::$result;
            fn into_parts(self) -> (Option<bool>, Vec<types::ResponseInfo>, Vec<Value>, Option<Self::Result>) {
                (
                    self.success,
                    self.errors.unwrap_or_default(),
                    self.messages.unwrap_or_default(),
                    self.result,
                )
            }
        }
    )*};
}
envelope!(
    PushEnvelope => PushResult,
    PullEnvelope => PullResult,
    AckEnvelope => AckResult,
    PeekEnvelope => PeekResult,
    PurgeEnvelope => PurgeResult,
);

pub(crate) type RawOutcome<E> =
    std::result::Result<ResponseValue<E>, progenitor_client::Error<types::FailureEnvelope>>;

/// Awaits a generated call and unwraps its envelope.
///
/// `success: false` is a failure even inside a 2xx; a non-empty `errors`
/// next to `success: true` is not (Cloudflare's own examples do that).
pub(crate) async fn call<E, F>(operation: &'static str, call: F) -> Result<E::Result>
where
    E: Envelope,
    F: Future<Output = RawOutcome<E>>,
{
    let (outcome, exchange) = recorded(call).await;
    tracing::debug!(
        status = exchange.status.map(|s| s.as_u16()),
        attempts = exchange.attempts,
        "answered"
    );
    finish(operation, outcome, exchange)
}

/// Turns what the generated client returned, and what went over the wire,
/// into the typed result or the error.
fn finish<E: Envelope>(
    operation: &'static str,
    outcome: RawOutcome<E>,
    exchange: Exchange,
) -> Result<E::Result> {
    match outcome {
        Ok(value) => {
            let status = value.status().as_u16();
            let retry_after = retry_after(value.headers());
            let (success, errors, messages, result) = value.into_inner().into_parts();
            if success == Some(false) {
                let failure = Failure {
                    status,
                    errors,
                    messages,
                    body_snippet: None,
                    retry_after,
                };
                return Err(failure.into_error(operation, exchange.attempts));
            }
            Ok(result.unwrap_or_default())
        }
        Err(error) => Err(map_error(operation, error, exchange)),
    }
}

fn map_error(
    operation: &'static str,
    error: progenitor_client::Error<types::FailureEnvelope>,
    exchange: Exchange,
) -> Error {
    use progenitor_client::Error as Raw;
    let status = exchange.status.map_or(0, |s| s.as_u16());
    let attempts = exchange.attempts;
    let unparsed = |status: u16, body: &[u8]| Failure {
        status,
        errors: Vec::new(),
        messages: Vec::new(),
        body_snippet: Some(snippet(body)),
        retry_after: retry_after(&exchange.headers),
    };
    match error {
        Raw::ErrorResponse(value) => {
            let status = value.status().as_u16();
            let retry_after = retry_after(value.headers());
            let envelope = value.into_inner();
            let errors = envelope.errors.unwrap_or_default();
            let body_snippet = errors.is_empty().then(|| snippet(&exchange.body));
            Failure {
                status,
                errors,
                messages: envelope.messages.unwrap_or_default(),
                body_snippet,
                retry_after,
            }
            .into_error(operation, attempts)
        }
        Raw::CommunicationError(source)
        | Raw::ResponseBodyError(source)
        | Raw::InvalidUpgrade(source) => Error::Transport { operation, source },
        _ if exchange.truncated => Error::ResponseTooLarge {
            operation,
            status,
            limit: exchange.limit,
        },
        Raw::InvalidResponsePayload(body, _) if status >= 300 || status == 0 => {
            unparsed(status, &body).into_error(operation, attempts)
        }
        Raw::InvalidResponsePayload(body, source) => Error::Decode {
            operation,
            status,
            reason: source.to_string(),
            snippet: snippet(&body),
        },
        Raw::UnexpectedResponse(response) => {
            unparsed(response.status().as_u16(), &exchange.body).into_error(operation, attempts)
        }
        Raw::InvalidRequest(reason) | Raw::Custom(reason) => Error::InvalidInput {
            field: "request".into(),
            reason,
        },
    }
}

/// A failure answer, before it becomes an [`Error::Api`].
struct Failure {
    status: u16,
    errors: Vec<types::ResponseInfo>,
    messages: Vec<Value>,
    body_snippet: Option<String>,
    retry_after: Option<Duration>,
}

impl Failure {
    fn into_error(self, operation: &'static str, attempts: u32) -> Error {
        Error::Api(Box::new(ApiError {
            operation,
            status: self.status,
            errors: self.errors.into_iter().map(detail).collect(),
            messages: self
                .messages
                .into_iter()
                .map(|m| match m {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
                .collect(),
            body_snippet: self.body_snippet,
            retry_after: self.retry_after,
            attempts: attempts.max(1),
        }))
    }
}

fn detail(info: types::ResponseInfo) -> ApiErrorDetail {
    ApiErrorDetail {
        code: info
            .code
            .filter(|c| c.is_finite() && *c >= 0.0 && *c <= f64::from(u32::MAX))
            .map(|c| c as u32),
        message: info.message.unwrap_or_default(),
        documentation_url: info.documentation_url.filter(|u| !u.is_empty()),
        pointer: info.source.and_then(|s| s.pointer),
    }
}

/// `retry-after-ms` (milliseconds), then `Retry-After` (seconds or an HTTP date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Entry points for fuzzing and property tests: the decoders a response
/// body goes through, callable on arbitrary bytes. Not part of the stable API.
#[doc(hidden)]
pub mod fuzzing {
    use bytes::Bytes;
    use progenitor_client::{Error as Raw, ResponseValue};
    use reqwest::StatusCode;
    use reqwest::header::HeaderMap;
    use serde::de::DeserializeOwned;

    use super::{Envelope, RawOutcome, finish, retry_after};
    use crate::message::Body;
    use crate::raw::types;
    use crate::response::{AckOutcome, PulledBatch, PurgeOutcome, PushReceipt, peeked};
    use crate::transport::Exchange;

    /// Runs `body`, answered with `status`, through everything the client does
    /// with a response (the generated client's decoding, envelope unwrapping,
    /// error mapping, result conversion and message-body decoding) for every
    /// operation; returns how many operations decoded it as a success.
    pub fn decode_response(status: u16, body: &[u8]) -> usize {
        let mut succeeded = 0;
        succeeded += usize::from(
            decode::<types::PushEnvelope>(status, body)
                .map(PushReceipt::from)
                .is_ok(),
        );
        if let Ok(result) = decode::<types::PullEnvelope>(status, body) {
            PulledBatch::from(result)
                .messages
                .iter()
                .for_each(|m| decode_body(m.body()));
            succeeded += 1;
        }
        succeeded += usize::from(
            decode::<types::AckEnvelope>(status, body)
                .map(AckOutcome::from)
                .is_ok(),
        );
        if let Ok(result) = decode::<types::PeekEnvelope>(status, body) {
            peeked(result).iter().for_each(|m| decode_body(m.body()));
            succeeded += 1;
        }
        succeeded += usize::from(
            decode::<types::PurgeEnvelope>(status, body)
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
        status: u16,
        body: &[u8],
    ) -> crate::Result<E::Result> {
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let exchange = Exchange {
            status: Some(code),
            headers: HeaderMap::new(),
            body: Bytes::copy_from_slice(body),
            truncated: false,
            limit: body.len(),
            attempts: 1,
        };
        finish::<E>("fuzz", generated_outcome(code, body), exchange)
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
        retry_after(&headers)
    }

    fn decode_body(body: &Body) {
        let _ = (body.text(), body.bytes(), body.json::<serde_json::Value>());
    }
}
