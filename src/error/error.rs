//! [`Error`]: the one error of every call, and what it knows (the HTTP
//! status and codes, the attempts, why it was or was not retried).

use std::fmt;
use std::time::Duration;

use crate::classify::RetryClass;
use crate::codes;
use crate::operation::Operation;

use super::wording::{after_attempts, escape_controls};
use super::{ApiError, BodyError};

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
        "could not decode the {operation} response (HTTP {status}): {}; body: {snippet:?}",
        escape_controls(reason)
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
    /// a wait for the client's caps was still running when it passed.
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
        /// the deadline passed in the wait for the client's caps).
        attempts: u32,
        /// When the cut-off attempt was a retry: the failure of the attempt
        /// before it, the error the caller would have got without the retry.
        #[source]
        last_error: Option<Box<Error>>,
    },

    /// The call was not sent: by the server's own figures (its `Ratelimit`
    /// header, or a 429 with code 971 and its `Retry-After`), the
    /// token's budget comes back only after `retry_after`, longer
    /// than the retry policy waits
    /// ([`RetryPolicy::max_retry_after`](crate::retry::RetryPolicy::max_retry_after)),
    /// as during Cloudflare's five-minute block. See
    /// [`RateLimits`](crate::ratelimit::RateLimits).
    #[error(
        "{operation} not sent: the token's budget comes back in {}s, longer than the retry policy waits{}",
        retry_after.as_secs(),
        after_attempts(*attempts)
    )]
    #[non_exhaustive]
    RateLimited {
        /// The operation.
        operation: Operation,
        /// How long until the budget comes back.
        retry_after: Duration,
        /// How many requests were sent before, retries included (0 when it
        /// was the first attempt that was held).
        attempts: u32,
    },

    /// A received message body could not be decoded as asked.
    #[error(transparent)]
    Body(#[from] BodyError),

    /// No queue of the account has this name
    /// ([`Client::queue_by_name`](crate::Client::queue_by_name)).
    #[error("no queue is named {name:?} in this account")]
    #[non_exhaustive]
    UnknownQueueName {
        /// The name looked up.
        name: String,
    },

    /// Several queues answered to one name, which Cloudflare does not
    /// allow: the handle would be a guess, so none is given.
    #[error("{} queues are named {name:?}: {}", queue_ids.len(), escape_controls(&queue_ids.join(", ")))]
    #[non_exhaustive]
    AmbiguousQueueName {
        /// The name looked up.
        name: String,
        /// The ids of the queues of that name.
        queue_ids: Vec<String>,
    },

    /// The queue's consumer is a Worker (or another kind than HTTP pull),
    /// and a queue has one consumer: HTTP pull cannot be enabled, and is
    /// not, until that consumer is removed. Nothing was replaced.
    #[error(
        "queue {} is consumed by {}: a queue has one consumer, so HTTP pull cannot be enabled; \
         remove that consumer first (wrangler queues consumer remove), nothing was changed",
        escape_controls(queue_id),
        escape_controls(consumer)
    )]
    #[non_exhaustive]
    OtherConsumer {
        /// The queue.
        queue_id: String,
        /// What consumes it, such as `the Worker "shop"`.
        consumer: String,
    },
}

fn previously(last_error: Option<&Error>) -> String {
    last_error.map_or_else(String::new, |e| format!(", retrying after: {e}"))
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

    /// Whether the queue's allowance refused the call (429, code 10250
    /// QueueOverloaded): the queue's own limit, not the token's budget.
    pub(crate) fn refused_by_queue(&self) -> bool {
        self.status() == Some(429) && self.codes().contains(&crate::codes::QUEUE_OVERLOADED)
    }

    /// The operation the error comes from; `None` for errors raised before
    /// a call (bad input, configuration) or while decoding a message body.
    pub fn operation(&self) -> Option<Operation> {
        match self {
            Error::Api(api) => Some(api.operation),
            Error::Transport { operation, .. }
            | Error::Decode { operation, .. }
            | Error::ResponseTooLarge { operation, .. }
            | Error::Timeout { operation, .. }
            | Error::RateLimited { operation, .. } => Some(*operation),
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
            | Error::Timeout { attempts, .. }
            | Error::RateLimited { attempts, .. } => *attempts,
            _ => 0,
        }
    }

    /// How the failure was classified for retrying: the one verdict the
    /// retry loop read. Bad input, configuration, undecodable answers and
    /// body errors are [`RetryClass::Permanent`]; a missed deadline is
    /// [`RetryClass::Transient`] (the cut-off request may have landed), or
    /// [`RetryClass::NotSent`] when it passed before any request was sent;
    /// a call held back by [`Error::RateLimited`] is
    /// [`RetryClass::Throttled`], refused before taking effect.
    pub fn retry_class(&self) -> RetryClass {
        match self {
            Error::Api(api) => api.class,
            Error::RateLimited { retry_after, .. } => RetryClass::Throttled {
                after: Some(*retry_after),
                refused: true,
            },
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

    /// Whether the queue (or the path) does not exist: HTTP 404, code
    /// 10104, or a name no queue has ([`Error::UnknownQueueName`]).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::UnknownQueueName { .. })
            || self.as_api().is_some_and(|api| {
                api.status == 404 || api.codes().any(|c| c == codes::QUEUE_NOT_FOUND)
            })
    }

    /// Whether the queue cannot be pulled from because HTTP pull is not
    /// enabled on it: HTTP 405 with code 0 and "messages cannot be pulled
    /// unless http_pull mode is enabled". Enable it with
    /// [`Queue::enable_http_pull`](crate::Queue::enable_http_pull) (or
    /// `wrangler queues consumer http add`).
    /// Cloudflare also answers so for a short while after it was enabled;
    /// a pull within 60 s after this client enabled it is tried again.
    pub fn is_pull_disabled(&self) -> bool {
        self.as_api().is_some_and(ApiError::is_pull_disabled)
    }

    /// How long the server asked to wait before trying again, if it said:
    /// its `Retry-After`, or for [`Error::RateLimited`] how long until the
    /// budget comes back.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::RateLimited { retry_after, .. } => Some(*retry_after),
            _ => self.as_api().and_then(|api| api.retry_after),
        }
    }

    /// Whether the request may have taken effect (for a push: whether the
    /// message may have landed), so that sending it again may duplicate it.
    ///
    /// `false` when it surely did not: bad input or configuration (nothing
    /// was sent), a refused connection, a call held back by the rate limits,
    /// a 429 with code 10250 or 971, or any other 4xx answer but 408 and
    /// 409. `true` for 5xx, 408, 409 and code-less 429 answers (whatever
    /// `x-should-retry` says), timeouts after sending, broken connections,
    /// and successes whose answer could not be read.
    pub fn may_have_landed(&self) -> bool {
        match self {
            Error::Api(api) => {
                // The status and codes, not `x-should-retry`: the server's
                // advice on retrying says nothing about what happened.
                let codes: Vec<u32> = api.codes().collect();
                let class = RetryClass::of_answer(api.status, &codes, None, None);
                matches!(
                    class,
                    RetryClass::Transient | RetryClass::Throttled { refused: false, .. }
                )
            }
            Error::Transport { class, .. } => *class != RetryClass::NotSent,
            Error::Timeout { attempts, .. } => *attempts > 0,
            Error::Decode { status, .. } | Error::ResponseTooLarge { status, .. } => {
                (200..300).contains(status)
            }
            Error::InvalidInput { .. }
            | Error::Config(_)
            | Error::RateLimited { .. }
            | Error::Body(_)
            | Error::UnknownQueueName { .. }
            | Error::AmbiguousQueueName { .. }
            | Error::OtherConsumer { .. } => false,
        }
    }

    /// The API failure behind this error, if it is one.
    pub fn as_api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(api) => Some(api),
            _ => None,
        }
    }
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
