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
                (self.success, self.errors, self.messages, self.result)
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
            let body_snippet = envelope.errors.is_empty().then(|| snippet(&exchange.body));
            Failure {
                status,
                errors: envelope.errors,
                messages: envelope.messages,
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
    use super::{Envelope, detail, retry_after};
    use crate::message::Body;
    use crate::raw::types;
    use crate::response::{AckOutcome, PulledBatch, PurgeOutcome, PushReceipt, peeked};

    /// Decodes `body` as every envelope and failure the client reads, and
    /// every message body in it in every form; returns how many parts decoded.
    pub fn decode_everything(body: &[u8]) -> usize {
        let mut decoded = 0;
        if let Ok(e) = serde_json::from_slice::<types::PushEnvelope>(body) {
            let _ = PushReceipt::from(e.into_parts().3.unwrap_or_default());
            decoded += 1;
        }
        if let Ok(e) = serde_json::from_slice::<types::PullEnvelope>(body) {
            let batch = PulledBatch::from(e.into_parts().3.unwrap_or_default());
            batch.messages.iter().for_each(|m| decode_body(m.body()));
            decoded += 1;
        }
        if let Ok(e) = serde_json::from_slice::<types::AckEnvelope>(body) {
            let _ = AckOutcome::from(e.into_parts().3.unwrap_or_default());
            decoded += 1;
        }
        if let Ok(e) = serde_json::from_slice::<types::PeekEnvelope>(body) {
            peeked(e.into_parts().3.unwrap_or_default())
                .iter()
                .for_each(|m| decode_body(m.body()));
            decoded += 1;
        }
        if let Ok(e) = serde_json::from_slice::<types::PurgeEnvelope>(body) {
            let _ = PurgeOutcome::from(e.into_parts().3.unwrap_or_default());
            decoded += 1;
        }
        if let Ok(e) = serde_json::from_slice::<types::FailureEnvelope>(body) {
            let _: Vec<_> = e.errors.into_iter().map(detail).collect();
            decoded += 1;
        }
        let _ = crate::error::snippet(body);
        decoded
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
