//! The one error type of the crate.

use std::fmt;
use std::time::Duration;

use crate::classify::RetryClass;
use crate::codes;
use crate::operation::Operation;

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when talking to the Queues API.
///
/// Input is checked before any request is sent ([`Error::InvalidInput`]);
/// what the server answers is sorted into API failures ([`Error::Api`]),
/// undecodable answers ([`Error::Decode`], [`Error::ResponseTooLarge`]) and
/// transport failures ([`Error::Transport`]). Every error from a call says
/// how many requests it sent ([`Error::attempts`]) and how it was classified
/// for retrying ([`Error::retry_class`]).
///
/// No variant ever carries a credential.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument broke a documented limit; no request was sent.
    #[error("invalid {field}: {reason}")]
    #[non_exhaustive]
    InvalidInput {
        /// The argument or field at fault, such as `queue_id` or `messages[3].body`.
        field: String,
        /// What is wrong with it, naming the limit.
        reason: String,
    },

    /// The client could not be configured (a missing environment variable, a bad base URL).
    #[error("configuration error: {0}")]
    Config(String),

    /// The API answered with a failure: a 3xx, 4xx or 5xx status, or `success: false`.
    #[error(transparent)]
    Api(Box<ApiError>),

    /// The request did not complete: DNS, connect, TLS, reset connection or timeout.
    #[error("transport error during {operation}{}: {source}", after_attempts(*attempts))]
    #[non_exhaustive]
    Transport {
        /// The operation.
        operation: Operation,
        /// The underlying HTTP client error.
        #[source]
        source: reqwest::Error,
        /// How many requests were sent, retries included.
        attempts: u32,
        /// How the failure was classified for retrying.
        class: RetryClass,
    },

    /// A successful status came with a body that is not the documented envelope.
    #[error(
        "could not decode the {operation} response (HTTP {status}): {reason}; body: {snippet:?}"
    )]
    #[non_exhaustive]
    Decode {
        /// The operation.
        operation: Operation,
        /// The HTTP status of the response.
        status: u16,
        /// Why decoding failed.
        reason: String,
        /// The start of the body, at most 256 characters.
        snippet: String,
        /// How many requests were sent, retries included.
        attempts: u32,
    },

    /// The response body was larger than the client accepts.
    #[error("the {operation} response (HTTP {status}) is larger than the limit of {limit} bytes")]
    #[non_exhaustive]
    ResponseTooLarge {
        /// The operation.
        operation: Operation,
        /// The HTTP status of the response.
        status: u16,
        /// The limit in force, in bytes.
        limit: usize,
        /// How many requests were sent, retries included.
        attempts: u32,
    },

    /// The call did not finish within its deadline
    /// ([`ClientBuilder::deadline`](crate::ClientBuilder::deadline),
    /// [`Queue::with_deadline`](crate::Queue::with_deadline)): an attempt or
    /// a client-side rate-limit wait was still running when it passed.
    #[error(
        "{operation} did not finish within the deadline of {deadline:?}{}{}",
        after_attempts(*attempts),
        previously(last_error.as_deref())
    )]
    #[non_exhaustive]
    Timeout {
        /// The operation.
        operation: Operation,
        /// The deadline in force.
        deadline: Duration,
        /// How many requests were sent, the cut-off one included (0 when
        /// the deadline passed in the client-side rate-limit wait).
        attempts: u32,
        /// When the cut-off attempt was a retry: the failure of the attempt
        /// before it, the error the caller would have got without the retry.
        #[source]
        last_error: Option<Box<Error>>,
    },

    /// A received message body could not be decoded as asked.
    #[error(transparent)]
    Body(#[from] BodyError),
}

fn previously(last_error: Option<&Error>) -> String {
    last_error.map_or_else(String::new, |e| format!(", retrying after: {e}"))
}

fn after_attempts(attempts: u32) -> String {
    if attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    }
}

impl Error {
    /// This error of a retry, given the error of the attempt before it: a
    /// timeout keeps that earlier, real failure; any other error replaces it.
    pub(crate) fn after(self, previous: Option<Error>) -> Self {
        match (self, previous) {
            (
                Error::Timeout {
                    operation,
                    deadline,
                    attempts,
                    last_error: None,
                },
                Some(previous),
            ) => Error::Timeout {
                operation,
                deadline,
                attempts,
                last_error: Some(Box::new(previous)),
            },
            (error, _) => error,
        }
    }

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
            Error::Api(api) => api.codes().collect(),
            _ => Vec::new(),
        }
    }

    /// The operation the error comes from; `None` for errors raised before
    /// a call (bad input, configuration) or while decoding a message body.
    pub fn operation(&self) -> Option<Operation> {
        match self {
            Error::Api(api) => Some(api.operation),
            Error::Transport { operation, .. }
            | Error::Decode { operation, .. }
            | Error::ResponseTooLarge { operation, .. }
            | Error::Timeout { operation, .. } => Some(*operation),
            _ => None,
        }
    }

    /// How many requests the failed call sent, retries included (0 when it
    /// failed before sending anything).
    pub fn attempts(&self) -> u32 {
        match self {
            Error::Api(api) => api.attempts,
            Error::Transport { attempts, .. }
            | Error::Decode { attempts, .. }
            | Error::ResponseTooLarge { attempts, .. }
            | Error::Timeout { attempts, .. } => *attempts,
            _ => 0,
        }
    }

    /// How the failure was classified for retrying: the one verdict the
    /// retry loop read. Bad input, configuration, undecodable answers and
    /// body errors are [`RetryClass::Permanent`]; a missed deadline is
    /// [`RetryClass::Transient`] (the cut-off request may have landed), or
    /// [`RetryClass::NotSent`] when it passed before any request was sent.
    pub fn retry_class(&self) -> RetryClass {
        match self {
            Error::Api(api) => api.class,
            Error::Transport { class, .. } => *class,
            Error::Timeout { attempts: 0, .. } => RetryClass::NotSent,
            Error::Timeout { .. } => RetryClass::Transient,
            _ => RetryClass::Permanent,
        }
    }

    /// Whether trying the same call again later may succeed: connection
    /// failures, timeouts, and API answers 408, 409, 429 (unless the queue
    /// is disabled or over a storage or free-tier limit) and 5xx, unless the
    /// server said `x-should-retry: false`.
    ///
    /// For a push, a retry after anything but a refused connection or a 429
    /// with code 10250 or 971 may deliver the message twice:
    /// [`RetryClass::may_repeat`] tells.
    pub fn is_retryable(&self) -> bool {
        self.retry_class().is_retryable()
    }

    /// Whether the call was refused for its rate: HTTP 429, unless its code
    /// names a lasting condition (a disabled queue, a storage or free-tier
    /// limit) or the server said `x-should-retry: false` (both make it
    /// [`RetryClass::Permanent`]).
    pub fn is_rate_limited(&self) -> bool {
        matches!(self.retry_class(), RetryClass::Throttled { .. })
    }

    /// Whether the credentials were refused or lack a permission: HTTP 401
    /// or 403, or the codes 9106 (missing credentials), 6003, 6111, 6102 and
    /// 6103 (a malformed auth header, which Cloudflare answers with 400),
    /// 10000 (authentication error) or 10106 (unauthorized).
    pub fn is_auth(&self) -> bool {
        self.as_api().is_some_and(|api| {
            matches!(api.status, 401 | 403) || api.codes().any(|c| codes::AUTH.contains(&c))
        })
    }

    /// Whether the queue (or the path) does not exist: HTTP 404, or code 10104.
    pub fn is_not_found(&self) -> bool {
        self.as_api().is_some_and(|api| {
            api.status == 404 || api.codes().any(|c| c == codes::QUEUE_NOT_FOUND)
        })
    }

    /// How long the server asked to wait before trying again, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
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
/// Carries the HTTP status, every entry of the envelope's `errors`, and what
/// the server said about retrying. When the body was not a Cloudflare
/// envelope (an HTML page from a proxy, an empty body) `errors` is empty and
/// `body_snippet` holds its start.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApiError {
    /// The operation.
    pub operation: Operation,
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
    /// The server's `x-should-retry` header, when it sent one.
    pub should_retry: Option<bool>,
    /// Where a redirect pointed (`Location`). The client never follows
    /// redirects: Cloudflare's API does not send them for these paths, and
    /// following one would hand the credentials to another origin.
    pub location: Option<String>,
    /// How the answer was classified for retrying.
    pub class: RetryClass,
    /// How many requests were sent, retries included.
    pub attempts: u32,
}

impl ApiError {
    /// The Cloudflare codes of `errors`, in order.
    pub fn codes(&self) -> impl Iterator<Item = u32> + '_ {
        self.errors.iter().filter_map(|e| e.code)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Cloudflare API error in {} (HTTP {}){}",
            self.operation,
            self.status,
            after_attempts(self.attempts)
        )?;
        if let Some(location) = &self.location {
            write!(f, ": redirected to {location:?}, which is not followed")?;
            return Ok(());
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

/// Why a received message body could not be decoded, or cannot be pushed again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The body's content type cannot be decoded outside Workers (`v8`) or is unknown.
    #[error("message body of content type {content_type:?} cannot be decoded here")]
    #[non_exhaustive]
    UnsupportedContentType {
        /// The `CF-Content-Type` metadata value (empty when absent).
        content_type: String,
    },
    /// The caller asked for a form the content type does not have.
    #[error("message body is {actual:?}, not {requested}")]
    #[non_exhaustive]
    ContentTypeMismatch {
        /// What the caller asked for: `text`, `json` or `bytes`.
        requested: &'static str,
        /// The message's `CF-Content-Type`.
        actual: String,
    },
    /// The body cannot be pushed over HTTP, which writes only `text` and
    /// `json` (an object): `bytes` and `v8` bodies, and JSON that is not an
    /// object, stay where they are.
    #[error("message body of content type {content_type:?} cannot be pushed over HTTP: {reason}")]
    #[non_exhaustive]
    NotPushable {
        /// The `CF-Content-Type` metadata value.
        content_type: String,
        /// Why not.
        reason: String,
    },
    /// A `bytes` body that is not valid base64.
    #[error("message body is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// A `json` body that does not deserialize into the requested type.
    #[error("message body is not the expected JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Finishes a generated builder. It fails only when the fragment gained a
/// required field that the hand-written layer does not set yet.
pub(crate) fn built<T, B>(builder: B) -> Result<T>
where
    T: TryFrom<B>,
    T::Error: fmt::Display,
{
    T::try_from(builder).map_err(|e| Error::invalid("request", e.to_string()))
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
