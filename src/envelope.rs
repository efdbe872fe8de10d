//! Unwrapping `{success, errors, messages, result}` into a typed result or an [`Error`].
//!
//! Each attempt's outcome comes here once, with what went over the wire
//! ([`Exchange`]); a failure is classified for retrying here, once, and the
//! verdict travels in the error.

use progenitor_client::ResponseValue;
use reqwest::header::{HeaderMap, LOCATION};
use serde_json::Value;

use crate::classify::RetryClass;
use crate::error::{ApiError, ApiErrorDetail, Error, Result, snippet};
use crate::hooks::Exchange;
use crate::operation::Operation;
use crate::raw::types;
use crate::token_budget::{retry_after, should_retry_header};

/// The parts every success envelope shares.
pub(crate) trait Envelope {
    type Result: Default;
    fn into_parts(self) -> Parts<Self::Result>;
}

pub(crate) struct Parts<R> {
    success: Option<bool>,
    errors: Vec<types::ResponseInfo>,
    messages: Vec<Value>,
    result: Option<R>,
}

macro_rules! envelope {
    ($($envelope:ident => $result:ident),* $(,)?) => {$(
        impl Envelope for types::$envelope {
            type Result = types::$result;
            fn into_parts(self) -> Parts<Self::Result> {
                Parts {
                    success: self.success,
                    errors: self.errors.unwrap_or_default(),
                    messages: self.messages.unwrap_or_default(),
                    result: self.result,
                }
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
    ExtendEnvelope => ExtendResult,
    PreviewEnvelope => PreviewResult,
    PreviewAckEnvelope => PreviewAckResult,
    MetricsEnvelope => Metrics,
    PurgeQueueEnvelope => QueueDetails,
    PurgeStatusEnvelope => PurgeStatusResult,
    QueueEnvelope => QueueDetails,
    ConsumerEnvelope => QueueConsumer,
    EventSubscriptionEnvelope => EventSubscription,
);

/// The envelopes whose `result` is a list (or, for a deletion, nothing of
/// use): `null` or absent decodes as empty.
macro_rules! list_envelope {
    ($($envelope:ident => $result:ty),* $(,)?) => {$(
        impl Envelope for types::$envelope {
            type Result = $result;
            fn into_parts(self) -> Parts<Self::Result> {
                Parts {
                    success: self.success,
                    errors: self.errors.unwrap_or_default(),
                    messages: self.messages.unwrap_or_default(),
                    result: self.result.map(Into::into),
                }
            }
        }
    )*};
}
list_envelope!(
    ConsumerListEnvelope => Vec<types::QueueConsumer>,
    DeleteEnvelope => Value,
);

/// One page of a list: its items and where the page stands, which the
/// list envelope carries beside `result`.
#[derive(Debug)]
pub(crate) struct Page<T> {
    pub items: Vec<T>,
    pub info: Option<types::ResultInfo>,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page {
            items: Vec::new(),
            info: None,
        }
    }
}

/// One page of the queue list.
pub(crate) type QueuePage = Page<types::QueueDetails>;

/// The envelopes of a paged list: `result` (`null` or absent decodes as
/// empty) and `result_info`.
macro_rules! page_envelope {
    ($($envelope:ident => $item:ident),* $(,)?) => {$(
        impl Envelope for types::$envelope {
            type Result = Page<types::$item>;
            fn into_parts(self) -> Parts<Self::Result> {
                Parts {
                    success: self.success,
                    errors: self.errors.unwrap_or_default(),
                    messages: self.messages.unwrap_or_default(),
                    result: Some(Page {
                        items: self.result.unwrap_or_default(),
                        info: self.result_info,
                    }),
                }
            }
        }
    )*};
}
page_envelope!(
    QueueListEnvelope => QueueDetails,
    EventSubscriptionListEnvelope => EventSubscription,
);

pub(crate) type RawOutcome<E> =
    std::result::Result<ResponseValue<E>, progenitor_client::Error<types::FailureEnvelope>>;

/// Turns what the generated client returned for attempt number `attempts`,
/// and what went over the wire, into the typed result or the error.
///
/// `success: false` is a failure even inside a 2xx; a non-empty `errors`
/// next to `success: true` is not (Cloudflare's own examples do that).
pub(crate) fn finish<E: Envelope>(
    operation: Operation,
    attempts: u32,
    outcome: RawOutcome<E>,
    exchange: Exchange,
) -> Result<E::Result> {
    match outcome {
        Ok(value) => {
            let status = value.status().as_u16();
            let headers = value.headers().clone();
            let parts = value.into_inner().into_parts();
            if parts.success == Some(false) {
                let failure = ErrorEnvelope {
                    status,
                    errors: parts.errors,
                    messages: parts.messages,
                    body_snippet: None,
                };
                return Err(failure.into_error(operation, attempts, &headers));
            }
            Ok(parts.result.unwrap_or_default())
        }
        Err(error) => Err(map_error(operation, attempts, error, exchange)),
    }
}

fn map_error(
    operation: Operation,
    attempts: u32,
    error: progenitor_client::Error<types::FailureEnvelope>,
    exchange: Exchange,
) -> Error {
    use progenitor_client::Error as Raw;
    let status = exchange.status.map_or(0, |s| s.as_u16());
    let unparsed = |status: u16, body: &[u8]| ErrorEnvelope {
        status,
        errors: Vec::new(),
        messages: Vec::new(),
        body_snippet: Some(snippet(body)),
    };
    match error {
        Raw::ErrorResponse(value) => {
            let status = value.status().as_u16();
            let headers = value.headers().clone();
            let envelope = value.into_inner();
            let errors = envelope.errors.unwrap_or_default();
            let body_snippet = errors.is_empty().then(|| snippet(&exchange.body));
            ErrorEnvelope {
                status,
                errors,
                messages: envelope.messages.unwrap_or_default(),
                body_snippet,
            }
            .into_error(operation, attempts, &headers)
        }
        Raw::CommunicationError(source)
        | Raw::ResponseBodyError(source)
        | Raw::InvalidUpgrade(source) => Error::Transport {
            operation,
            class: RetryClass::of_transport(&source),
            source,
            attempts,
        },
        _ if exchange.truncated => Error::ResponseTooLarge {
            operation,
            status,
            limit: exchange.cap,
            attempts,
        },
        Raw::InvalidResponsePayload(body, _) if status >= 300 || status == 0 => {
            unparsed(status, &body).into_error(operation, attempts, &exchange.headers)
        }
        Raw::InvalidResponsePayload(body, source) => Error::Decode {
            operation,
            status,
            reason: source.to_string(),
            snippet: snippet(&body),
            attempts,
        },
        Raw::UnexpectedResponse(response) => unparsed(response.status().as_u16(), &exchange.body)
            .into_error(operation, attempts, &exchange.headers),
        Raw::InvalidRequest(reason) | Raw::Custom(reason) => Error::InvalidInput {
            field: "request".into(),
            reason,
        },
    }
}

/// A failure answer, before it becomes an [`Error::Api`].
struct ErrorEnvelope {
    status: u16,
    errors: Vec<types::ResponseInfo>,
    messages: Vec<Value>,
    body_snippet: Option<String>,
}

impl ErrorEnvelope {
    fn into_error(self, operation: Operation, attempts: u32, headers: &HeaderMap) -> Error {
        let errors: Vec<ApiErrorDetail> = self.errors.into_iter().map(detail).collect();
        let codes: Vec<u32> = errors.iter().filter_map(|e| e.code).collect();
        let retry_after = retry_after(headers);
        let should_retry = should_retry_header(headers);
        let location = (300..400)
            .contains(&self.status)
            .then(|| headers.get(LOCATION))
            .flatten()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        Error::Api(Box::new(ApiError {
            operation,
            status: self.status,
            class: RetryClass::of_answer(self.status, &codes, should_retry, retry_after),
            errors,
            messages: self
                .messages
                .into_iter()
                .map(|m| match m {
                    Value::String(s) => s,
                    other => other.to_string(),
                })
                .collect(),
            body_snippet: self.body_snippet,
            retry_after,
            should_retry,
            location,
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
