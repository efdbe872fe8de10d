//! Failed requests, answered with Cloudflare's failure envelope, and
//! injected faults.

use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::super::faults::{Fault, FaultBody};
use super::super::ratelimit::Refused;
use super::json::json_response;
use cf_queues::codes;

/// A failed request, answered with Cloudflare's failure envelope.
pub(crate) enum ErrorAnswer {
    Api {
        status: StatusCode,
        code: u32,
        message: String,
        pointer: Option<String>,
        /// The causes Cloudflare lists under `error_chain`, such as 6111
        /// under 6003.
        chain: Vec<(u32, &'static str)>,
    },
    Injected(Fault),
    /// Over a rate limit: 429 with `Retry-After`.
    RateLimited(Refused),
}

impl ErrorAnswer {
    /// What it says, for a person: its message and, for a field, where.
    pub(crate) fn text(&self) -> String {
        match self {
            ErrorAnswer::Api {
                message, pointer, ..
            } => match pointer {
                Some(pointer) => format!("{message} ({pointer})"),
                None => message.clone(),
            },
            ErrorAnswer::Injected(_) => "an injected fault".to_owned(),
            ErrorAnswer::RateLimited(refused) => refused.message.clone(),
        }
    }

    /// The Cloudflare code it answers with, if it names one.
    #[cfg(feature = "dashboard")]
    pub(crate) fn code(&self) -> Option<u32> {
        match self {
            ErrorAnswer::Api { code, .. } => Some(*code),
            ErrorAnswer::RateLimited(refused) => Some(refused.code),
            ErrorAnswer::Injected(_) => None,
        }
    }

    /// The HTTP status it answers with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            ErrorAnswer::Api { status, .. } => status.as_u16(),
            ErrorAnswer::Injected(fault) => fault.status.unwrap_or(500),
            ErrorAnswer::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS.as_u16(),
        }
    }

    pub(crate) fn new(status: StatusCode, code: u32, message: impl Into<String>) -> ErrorAnswer {
        ErrorAnswer::Api {
            status,
            code,
            message: message.into(),
            pointer: None,
            chain: Vec::new(),
        }
    }

    pub(crate) fn bad_request(code: u32, message: impl Into<String>) -> ErrorAnswer {
        ErrorAnswer::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// A body that parses but does not match the operation's schema (10207).
    pub(crate) fn invalid(pointer: &str, message: impl Into<String>) -> ErrorAnswer {
        ErrorAnswer::bad_request(
            codes::JSON_REQUEST_BODY_INVALID,
            format!("JSONRequestBodyInvalid: {}", message.into()),
        )
        .at(pointer)
    }

    /// The data directory could not be written: 503, and the change the
    /// request asked for is not confirmed (it may be lost).
    pub(crate) fn storage(why: Option<std::sync::Arc<str>>) -> ErrorAnswer {
        let why = why.as_deref().unwrap_or("unknown failure").to_owned();
        ErrorAnswer::new(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::UNKNOWN_INTERNAL_ERROR,
            format!(
                "the emulator's data directory could not be written ({why}); restart it once the cause is fixed"
            ),
        )
    }

    pub(crate) fn no_route() -> ErrorAnswer {
        ErrorAnswer::new(
            StatusCode::NOT_FOUND,
            codes::NO_ROUTE,
            "No route for the URI",
        )
    }

    pub(crate) fn method_not_allowed() -> ErrorAnswer {
        ErrorAnswer::new(
            StatusCode::METHOD_NOT_ALLOWED,
            codes::METHOD_NOT_ALLOWED,
            "Method not allowed",
        )
    }

    /// An answer that could not be serialized; no input leads here.
    pub(crate) fn internal(error: serde_json::Error) -> ErrorAnswer {
        ErrorAnswer::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            codes::UNKNOWN_INTERNAL_ERROR,
            error.to_string(),
        )
    }

    pub(crate) fn at(mut self, at: &str) -> ErrorAnswer {
        if let ErrorAnswer::Api { pointer, .. } = &mut self {
            *pointer = Some(at.to_owned());
        }
        self
    }

    /// Adds a cause under `error_chain`.
    pub(crate) fn caused_by(mut self, code: u32, message: &'static str) -> ErrorAnswer {
        if let ErrorAnswer::Api { chain, .. } = &mut self {
            chain.push((code, message));
        }
        self
    }
}

impl IntoResponse for ErrorAnswer {
    fn into_response(self) -> Response {
        match self {
            ErrorAnswer::Api {
                status,
                code,
                message,
                pointer,
                chain,
            } => {
                let mut error = json!({ "code": code, "message": message });
                if let Some(object) = error.as_object_mut() {
                    if let Some(pointer) = pointer {
                        object.insert("source".into(), json!({ "pointer": pointer }));
                    }
                    if !chain.is_empty() {
                        let chain: Vec<_> = chain
                            .iter()
                            .map(|(code, message)| json!({ "code": code, "message": message }))
                            .collect();
                        object.insert("error_chain".into(), chain.into());
                    }
                }
                let body = json!({ "success": false, "errors": [error], "messages": [] });
                json_response(status, body.to_string().into_bytes())
            }
            ErrorAnswer::Injected(fault) => fault_response(&fault),
            ErrorAnswer::RateLimited(refused) => {
                let mut response =
                    ErrorAnswer::new(StatusCode::TOO_MANY_REQUESTS, refused.code, refused.message)
                        .into_response();
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(refused.retry_after_seconds));
                response
            }
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
            ErrorAnswer::new(status, *code, message.clone()).into_response()
        }
        FaultBody::Raw { content_type, body } => (
            status,
            [(CONTENT_TYPE, HeaderValue::from_static(content_type))],
            body.clone(),
        )
            .into_response(),
    };
    if let Some(after) = fault.retry_after {
        let seconds = after
            .as_secs()
            .saturating_add(u64::from(after.subsec_nanos() > 0));
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
