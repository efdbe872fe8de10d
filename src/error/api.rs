//! [`ApiError`]: a failure answered by the API, with every Cloudflare error.

use std::fmt;
use std::time::Duration;

use crate::classify::RetryClass;
use crate::codes;
use crate::operation::Operation;

use super::wording::{after_attempts, escape_controls};

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

    /// Whether this is the answer to a pull on a queue without HTTP pull:
    /// 405 with code 0 (as seen on the live API), or a 405 whose message
    /// names `http_pull` mode when a proxy dropped the code.
    pub fn is_pull_disabled(&self) -> bool {
        self.status == 405
            && self.errors.iter().any(|e| {
                e.code == Some(codes::HTTP_PULL_NOT_ENABLED) || e.message.contains("http_pull")
            })
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
        if self.is_pull_disabled() {
            f.write_str(
                "; HTTP pull is not enabled on this queue: enable it with Queue::enable_http_pull, \
                 `cfq consumer enable --queue <queue>` or \
                 `wrangler queues consumer http add <queue>` \
                 (Cloudflare may answer so for a short while after it was enabled)",
            )?;
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
    /// The error message, as the server sent it (`Display` escapes its
    /// control characters: see [`escape_controls`]).
    pub message: String,
    /// A page documenting the error.
    pub documentation_url: Option<String>,
    /// A JSON pointer to the part of the request at fault.
    pub pointer: Option<String>,
}

impl fmt::Display for ApiErrorDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = escape_controls(&self.message);
        match self.code {
            Some(code) => write!(f, "[{code}] {message}")?,
            None => f.write_str(&message)?,
        }
        if let Some(pointer) = &self.pointer {
            write!(f, " (at {})", escape_controls(pointer))?;
        }
        Ok(())
    }
}
