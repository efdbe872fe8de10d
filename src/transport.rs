//! The hooks the generated client calls around every request: credentials
//! go on, the `api-version` header comes off, and the response is read
//! (capped) and recorded so that errors keep their status and body.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use progenitor_client::{ClientHooks, ClientInfo, OperationInfo};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_LENGTH, HeaderMap};
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::auth::Credentials;
use crate::raw;
use crate::retry::{Attempt, RetryPolicy, should_retry};

/// Default cap on a response body: a full pull of 100 messages of 128 KB,
/// base64-encoded, stays well below it.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// What the generated client ([`raw::Client`]) needs from cf-queues on every
/// request: the credentials, the retry policy and the response size cap.
///
/// Users of the ergonomic [`Client`](crate::Client) never touch it; it is
/// public so that [`raw::Client::new_with_client`] can be called directly.
#[derive(Clone)]
pub struct Transport {
    credentials: Arc<Credentials>,
    max_response_bytes: usize,
    retry: RetryPolicy,
    deadline: Option<Duration>,
}

impl Transport {
    /// Hooks that authenticate with `credentials`, retry with the default
    /// [`RetryPolicy`] and cap response bodies at [`DEFAULT_MAX_RESPONSE_BYTES`].
    pub fn new(credentials: Credentials) -> Transport {
        Transport {
            credentials: Arc::new(credentials),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            retry: RetryPolicy::default(),
            deadline: None,
        }
    }

    /// Changes the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Transport {
        self.retry = retry;
        self
    }

    /// Stops retrying when the next wait would end past `deadline` from the first attempt.
    pub fn with_deadline(mut self, deadline: Option<Duration>) -> Transport {
        self.deadline = deadline;
        self
    }

    /// Changes the response body cap.
    pub fn with_max_response_bytes(mut self, max: usize) -> Transport {
        self.max_response_bytes = max;
        self
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("credentials", &self.credentials)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("retry", &self.retry)
            .field("deadline", &self.deadline)
            .finish()
    }
}

/// The response of the last attempt, as seen on the wire.
#[derive(Debug, Default)]
pub(crate) struct Exchange {
    pub status: Option<StatusCode>,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub truncated: bool,
    /// The cap in force, for the error message.
    pub limit: usize,
    /// How many attempts were made.
    pub attempts: u32,
}

tokio::task_local! {
    static EXCHANGE: RefCell<Exchange>;
}

/// Runs one generated call and returns its outcome with the recorded exchange.
///
/// The record is task-local, so concurrent calls on one client never mix.
pub(crate) async fn recorded<F: Future>(call: F) -> (F::Output, Exchange) {
    EXCHANGE
        .scope(RefCell::new(Exchange::default()), async {
            let output = call.await;
            let exchange = EXCHANGE.try_with(RefCell::take).unwrap_or_default();
            (output, exchange)
        })
        .await
}

impl ClientHooks<Transport> for raw::Client {
    async fn pre<E>(
        &self,
        request: &mut reqwest::Request,
        _info: &OperationInfo,
    ) -> Result<(), progenitor_client::Error<E>> {
        let headers = request.headers_mut();
        // progenitor sends the fragment's own version; Cloudflare's API is
        // versioned by its path and documents no such header.
        headers.remove("api-version");
        self.inner.credentials.apply(headers);
        Ok(())
    }

    async fn exec(
        &self,
        mut request: reqwest::Request,
        info: &OperationInfo,
    ) -> reqwest::Result<reqwest::Response> {
        let transport = &self.inner;
        let policy = &transport.retry;
        let is_push = matches!(info.operation_id, "push_message" | "push_batch");
        let started = Instant::now();
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            // Bodies are buffered JSON, so a clone always succeeds; without one, no retry.
            let spare = (attempt <= policy.max_retries)
                .then(|| request.try_clone())
                .flatten();
            let span = tracing::debug_span!(
                "attempt",
                attempt,
                status = tracing::field::Empty,
                duration_ms = tracing::field::Empty
            );
            let begun = Instant::now();
            let outcome = read_capped(self.client(), request, transport.max_response_bytes)
                .instrument(span.clone())
                .await;
            span.record("duration_ms", begun.elapsed().as_millis() as u64);

            let codes = match &outcome {
                Ok(captured) if captured.status.as_u16() >= 400 => error_codes(&captured.body),
                _ => Vec::new(),
            };
            let verdict = match &outcome {
                Err(e) if e.is_connect() => Attempt::ConnectFailed,
                Err(_) => Attempt::Interrupted,
                Ok(captured) => {
                    span.record("status", captured.status.as_u16());
                    Attempt::Answered {
                        status: captured.status.as_u16(),
                        headers: &captured.headers,
                        codes: &codes,
                    }
                }
            };
            if let Some(spare) = spare
                && should_retry(policy, is_push, verdict)
            {
                let headers = outcome.as_ref().ok().map(|c| &c.headers);
                let wait = policy.delay(attempt, headers);
                let within_deadline = transport
                    .deadline
                    .is_none_or(|deadline| started.elapsed().saturating_add(wait) < deadline);
                if within_deadline {
                    let reason = match &outcome {
                        Ok(captured) => format!("HTTP {}", captured.status.as_u16()),
                        Err(e) => e.to_string(),
                    };
                    tracing::warn!(
                        operation = info.operation_id,
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        %reason,
                        "retrying"
                    );
                    tokio::time::sleep(wait).await;
                    request = spare;
                    continue;
                }
            }

            let captured = outcome?;
            let _ = EXCHANGE.try_with(|exchange| {
                *exchange.borrow_mut() = Exchange {
                    status: Some(captured.status),
                    headers: captured.headers.clone(),
                    body: captured.body.clone(),
                    truncated: captured.truncated,
                    limit: transport.max_response_bytes,
                    attempts: attempt,
                };
            });
            let mut rebuilt = http::Response::new(captured.body);
            *rebuilt.status_mut() = captured.status;
            *rebuilt.version_mut() = captured.version;
            *rebuilt.headers_mut() = captured.headers;
            return Ok(reqwest::Response::from(rebuilt));
        }
    }
}

/// A response read to the end, or cut off at the cap.
struct Captured {
    status: StatusCode,
    version: http::Version,
    headers: HeaderMap,
    /// Empty when truncated: a cut-off body must never be decoded.
    body: Bytes,
    truncated: bool,
}

async fn read_capped(
    client: &reqwest::Client,
    request: reqwest::Request,
    limit: usize,
) -> reqwest::Result<Captured> {
    let mut response = client.execute(request).await?;
    let status = response.status();
    let version = response.version();
    let headers = response.headers().clone();
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut truncated = declared.is_some_and(|len| len > limit as u64);
    let mut body = BytesMut::new();
    while !truncated {
        match response.chunk().await? {
            Some(chunk) if body.len() + chunk.len() > limit => truncated = true,
            Some(chunk) => body.extend_from_slice(&chunk),
            None => break,
        }
    }
    Ok(Captured {
        status,
        version,
        headers,
        body: if truncated {
            Bytes::new()
        } else {
            body.freeze()
        },
        truncated,
    })
}

/// The Cloudflare codes of a failure body, for retry decisions; empty if it is not one.
fn error_codes(body: &[u8]) -> Vec<u32> {
    #[derive(serde::Deserialize)]
    struct Failure {
        #[serde(default)]
        errors: Vec<Code>,
    }
    #[derive(serde::Deserialize)]
    struct Code {
        code: Option<f64>,
    }
    serde_json::from_slice::<Failure>(body)
        .map(|f| {
            f.errors
                .into_iter()
                .filter_map(|e| e.code)
                .map(|c| c as u32)
                .collect()
        })
        .unwrap_or_default()
}
