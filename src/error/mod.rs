//! Errors: [`Error`] (at the crate root) is the one error of
//! every call; this module holds what it carries: [`ApiError`] for a
//! failure the API answered, with each [`ApiErrorDetail`], and
//! [`BodyError`] for a body that cannot be decoded or pushed.
//!
//! # What each failure becomes
//!
//! | case | error |
//! |---|---|
//! | bad input (id over 32 characters, message over 128 KB, batch over 100 messages or 256 KB, delay over 24 h, `batch_size` outside 1..=100, visibility timeout over 12 h) | `Error::InvalidInput { field, reason }`, before any request |
//! | 4xx/5xx with a Cloudflare envelope, or `success: false` in a 2xx | `Error::Api` with status, every `{code, message, documentation_url, source.pointer}`, `Retry-After` and the attempt count |
//! | HTML or empty error page from a proxy | `Error::Api` with the status and a body snippet |
//! | invalid or truncated JSON in a 2xx | `Error::Decode` with status and snippet |
//! | a redirect (Cloudflare sends none on these paths) | `Error::Api` with the status and `Location`; never followed |
//! | body over the call's cap (the crate docs' [Limits, caps and redirects](crate#limits-caps-and-redirects)) | `Error::ResponseTooLarge` |
//! | connection refused, reset, timeout | `Error::Transport`, with its attempt count |
//! | the overall deadline passed during an attempt or a rate-limit wait | `Error::Timeout`, with its attempt count |
//! | `v8` or unknown body type, wrong decoding asked | `Error::Body` |
//! | a pull on a queue without HTTP pull (405, code 0) | `Error::Api`, `is_pull_disabled()`, with a hint naming `Queue::enable_http_pull`; tried again for 60 s after this client enabled it, when it is Cloudflare's propagation delay |
//! | a name no queue has, or several have | `Error::UnknownQueueName`, `Error::AmbiguousQueueName` |
//! | HTTP pull asked on a queue a Worker consumes | `Error::OtherConsumer`, with nothing changed |
//!
//! `Error::is_retryable()`, `is_rate_limited()`, `is_auth()`, `is_not_found()`, `retry_after()`,
//! `status()`, `codes()` and `attempts()` classify them. Each failed attempt is classified once, as a
//! `retry::RetryClass` (`NotSent`, `Throttled`, `Transient`, `Permanent`) kept in the error: the retry
//! loop and these methods all read that one verdict, and `error::ApiError` keeps what the server said
//! (`Retry-After`, `x-should-retry`) so you can see why a call was or was not retried.
//!
//! Text from the network (an error's message, a pointer, a queue id, a
//! decoder's complaint) is shown by `Display` with its control characters
//! escaped ([`escape_controls`]): printing an error cannot drive a
//! terminal. The fields keep the text as it came.

mod api;
mod body;
// The one error type in a file of its name: `error/error.rs`.
#[allow(clippy::module_inception)]
pub(crate) mod error;
mod wording;

pub use api::{ApiError, ApiErrorDetail};
pub use body::BodyError;
pub use wording::escape_controls;

pub(crate) use error::{Error, Result, built, snippet};
