//! The one error type of the crate.

use std::fmt;
use std::time::Duration;

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when talking to the Queues API.
///
/// Input is checked before any request is sent ([`Error::InvalidInput`]);
/// what the server answers is sorted into API failures ([`Error::Api`]),
/// undecodable answers ([`Error::Decode`], [`Error::ResponseTooLarge`]) and
/// transport failures ([`Error::Transport`]). Message bodies that cannot be
/// decoded give [`Error::Body`].
///
/// No variant ever carries a credential.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument broke a documented limit; no request was sent.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// The argument or field at fault, such as `queue_id` or `messages[3].body`.
        field: String,
        /// What is wrong with it, naming the limit.
        reason: String,
    },

    /// The client could not be configured (a missing environment variable, a bad base URL).
    #[error("configuration error: {0}")]
    Config(String),

    /// The API answered with a failure: a 4xx or 5xx status, or `success: false`.
    #[error(transparent)]
    Api(Box<ApiError>),

    /// The request did not complete: DNS, connect, TLS, reset connection or timeout.
    #[error("transport error during {operation}: {source}")]
    Transport {
        /// The operation, such as `pull_messages`.
        operation: &'static str,
        /// The underlying HTTP client error.
        #[source]
        source: reqwest::Error,
    },

    /// A successful status came with a body that is not the documented envelope.
    #[error(
        "could not decode the {operation} response (HTTP {status}): {reason}; body: {snippet:?}"
    )]
    Decode {
        /// The operation, such as `pull_messages`.
        operation: &'static str,
        /// The HTTP status of the response.
        status: u16,
        /// Why decoding failed.
        reason: String,
        /// The start of the body, at most 256 characters.
        snippet: String,
    },

    /// The response body was larger than the client accepts.
    #[error("the {operation} response (HTTP {status}) is larger than the limit of {limit} bytes")]
    ResponseTooLarge {
        /// The operation, such as `pull_messages`.
        operation: &'static str,
        /// The HTTP status of the response.
        status: u16,
        /// The configured limit, in bytes.
        limit: usize,
    },

    /// The call did not finish within the client's overall deadline
    /// ([`ClientBuilder::deadline`](crate::ClientBuilder::deadline)), retries included.
    #[error("{operation} did not finish within the deadline of {deadline:?}")]
    Timeout {
        /// The operation, such as `pull_messages`.
        operation: &'static str,
        /// The deadline in force.
        deadline: std::time::Duration,
    },

    /// A received message body could not be decoded as asked.
    #[error(transparent)]
    Body(#[from] BodyError),
}

impl Error {
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The HTTP status of the response behind this error, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api(api) => Some(api.status),
            Error::Decode { status, .. } | Error::ResponseTooLarge { status, .. } => Some(*status),
            Error::Transport { source, .. } => source.status().map(|s| s.as_u16()),
            _ => None,
        }
    }

    /// The Cloudflare error codes of an API failure (empty for other errors).
    pub fn codes(&self) -> Vec<u32> {
        match self {
            Error::Api(api) => api.errors.iter().filter_map(|e| e.code).collect(),
            _ => Vec::new(),
        }
    }

    /// Whether trying the same call again later may succeed: connection
    /// failures, timeouts, and API answers 408, 409, 429 (unless the queue is
    /// disabled or over a storage or free-tier limit) and 5xx.
    ///
    /// For a push, a retry after anything but a refused connection or a 429
    /// may deliver the message twice.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Transport { source, .. } => {
                source.is_connect()
                    || source.is_timeout()
                    || source.is_request()
                    || source.is_body()
            }
            Error::Timeout { .. } => true,
            Error::Api(api) => match api.status {
                429 => !api
                    .errors
                    .iter()
                    .any(|e| matches!(e.code, Some(10251..=10253))),
                408 | 409 | 500..=599 => true,
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether the API refused the call for its rate: code 10250
    /// (QueueOverloaded) or 971, or a 429 without a code that names a
    /// lasting condition (a disabled queue, a storage or free-tier limit).
    pub fn is_rate_limited(&self) -> bool {
        use crate::retry::{PERMANENT_429_CODES, RATE_LIMIT_CODES};
        self.as_api().is_some_and(|api| {
            let codes: Vec<u32> = api.errors.iter().filter_map(|e| e.code).collect();
            codes.iter().any(|c| RATE_LIMIT_CODES.contains(c))
                || (api.status == 429 && !codes.iter().any(|c| PERMANENT_429_CODES.contains(c)))
        })
    }

    /// How long the server asked to wait before trying again, if it said.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.as_api().and_then(|api| api.retry_after)
    }

    /// The API failure behind this error, if it is one.
    pub fn as_api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(api) => Some(api),
            _ => None,
        }
    }
}

/// A failure reported by the API.
///
/// Carries the HTTP status and every entry of the envelope's `errors`. When
/// the body was not a Cloudflare envelope (an HTML page from a proxy, an
/// empty body) `errors` is empty and `body_snippet` holds its start.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApiError {
    /// The operation, such as `push_message`.
    pub operation: &'static str,
    /// The HTTP status; a 2xx when the envelope said `success: false`.
    pub status: u16,
    /// The envelope's `errors`, in order.
    pub errors: Vec<ApiErrorDetail>,
    /// The envelope's `messages`, rendered as text.
    pub messages: Vec<String>,
    /// The start of a body that was not a Cloudflare envelope (at most 256 characters).
    pub body_snippet: Option<String>,
    /// How long the server asked the client to wait (`retry-after-ms` or `Retry-After`).
    pub retry_after: Option<Duration>,
    /// How many requests were sent, retries included.
    pub attempts: u32,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Cloudflare API error in {} (HTTP {})",
            self.operation, self.status
        )?;
        if self.attempts > 1 {
            write!(f, " after {} attempts", self.attempts)?;
        }
        if self.errors.is_empty() {
            match &self.body_snippet {
                Some(snippet) if !snippet.is_empty() => write!(f, ": body {snippet:?}")?,
                Some(_) => f.write_str(": empty body")?,
                None => f.write_str(": no error details")?,
            }
        }
        for (i, detail) in self.errors.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { "; " })?;
            write!(f, "{detail}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

/// One entry of an envelope's `errors`: `{code, message, documentation_url, source.pointer}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ApiErrorDetail {
    /// The Cloudflare error code, such as 10104 (queue not found).
    pub code: Option<u32>,
    /// The error message.
    pub message: String,
    /// A page documenting the error.
    pub documentation_url: Option<String>,
    /// A JSON pointer to the part of the request at fault.
    pub pointer: Option<String>,
}

impl fmt::Display for ApiErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "[{code}] {}", self.message)?,
            None => f.write_str(&self.message)?,
        }
        if let Some(pointer) = &self.pointer {
            write!(f, " (at {pointer})")?;
        }
        Ok(())
    }
}

/// Why a received message body could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The body's content type cannot be decoded outside Workers (`v8`) or is unknown.
    #[error("message body of content type {content_type:?} cannot be decoded here")]
    UnsupportedContentType {
        /// The `CF-Content-Type` metadata value (empty when absent).
        content_type: String,
    },
    /// The caller asked for a form the content type does not have.
    #[error("message body is {actual:?}, not {requested}")]
    ContentTypeMismatch {
        /// What the caller asked for: `text`, `json` or `bytes`.
        requested: &'static str,
        /// The message's `CF-Content-Type`.
        actual: String,
    },
    /// A `bytes` body that is not valid base64.
    #[error("message body is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// A `json` body that does not deserialize into the requested type.
    #[error("message body is not the expected JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// The start of a body, for error messages: at most 256 characters, lossy UTF-8.
pub(crate) fn snippet(body: &[u8]) -> String {
    const MAX_CHARS: usize = 256;
    let head = &body[..body.len().min(MAX_CHARS * 4)];
    String::from_utf8_lossy(head)
        .chars()
        .take(MAX_CHARS)
        .collect()
}
