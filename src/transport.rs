//! The hooks the generated client calls around every request: credentials
//! go on, the `api-version` header comes off, and the response is read
//! (capped) and recorded so that errors keep their status and body.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use progenitor_client::{ClientHooks, ClientInfo, OperationInfo};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_LENGTH, HeaderMap};

use crate::auth::Credentials;
use crate::raw;

/// Default cap on a response body: a full pull of 100 messages of 128 KB,
/// base64-encoded, stays well below it.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// What the generated client ([`raw::Client`]) needs from cf-queues on every
/// request: the credentials and the response size cap.
///
/// Users of the ergonomic [`Client`](crate::Client) never touch it; it is
/// public so that [`raw::Client::new_with_client`] can be called directly.
#[derive(Clone)]
pub struct Transport {
    credentials: Arc<Credentials>,
    max_response_bytes: usize,
}

impl Transport {
    /// Hooks that authenticate with `credentials` and cap response bodies at
    /// [`DEFAULT_MAX_RESPONSE_BYTES`].
    pub fn new(credentials: Credentials) -> Transport {
        Transport {
            credentials: Arc::new(credentials),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
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
        request: reqwest::Request,
        _info: &OperationInfo,
    ) -> reqwest::Result<reqwest::Response> {
        let mut response = self.client().execute(request).await?;
        let status = response.status();
        let version = response.version();
        let headers = response.headers().clone();
        let limit = self.inner.max_response_bytes;

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
        // A truncated body must never be decoded: hand on an empty one.
        let body = if truncated {
            Bytes::new()
        } else {
            body.freeze()
        };

        let _ = EXCHANGE.try_with(|exchange| {
            *exchange.borrow_mut() = Exchange {
                status: Some(status),
                headers: headers.clone(),
                body: body.clone(),
                truncated,
                limit,
            };
        });

        let mut rebuilt = http::Response::new(body);
        *rebuilt.status_mut() = status;
        *rebuilt.version_mut() = version;
        *rebuilt.headers_mut() = headers;
        Ok(reqwest::Response::from(rebuilt))
    }
}
