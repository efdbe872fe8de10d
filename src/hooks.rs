//! One attempt: the hooks the generated client calls around every request
//! (with the state of [`hook_state`](crate::hook_state)): credentials go
//! on, the `api-version` header comes off, and the response is read with a
//! size cap and recorded.
//!
//! # The side channel
//!
//! progenitor's generated methods decode the body themselves and return
//! only the decoded value or an error, which loses what an error report
//! needs: the status of an unparseable page, a snippet of it, whether it was
//! cut off at the cap. So [`recorded`] opens a task-local [`Exchange`] for
//! one attempt, the `exec` hook reads the call's cap from it and writes back
//! what came over the wire, and the envelope layer reads it after the call.
//! That is the whole channel: one attempt in, one record out, in this file.
//! Retries, deadlines and rate limits are not here: they live in the one
//! call path (`retry_loop.rs`), around the generated call.

use std::cell::RefCell;
use std::future::Future;

use bytes::{Bytes, BytesMut};
use progenitor_client::{ClientHooks, ClientInfo, OperationInfo};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_LENGTH, HeaderMap};
use tracing::Instrument as _;

use crate::hook_state::HookState;
use crate::limits::{Limits, MAX_PULL_BATCH_SIZE};
use crate::raw;

/// The cap on a response body for a call made directly on the raw client,
/// which sees no request to derive a cap from (the ergonomic layer does):
/// the largest legal answer of any operation, a pull of 100 messages of the
/// largest size, so that no legal answer is refused after its messages
/// were leased (about 77 MB).
fn raw_max_response_bytes() -> usize {
    Limits::default().max_messages_response_bytes(MAX_PULL_BATCH_SIZE)
}

/// One attempt as seen on the wire. The caller sets `cap`; the hook fills in the rest.
#[derive(Debug, Default)]
pub(crate) struct Exchange {
    /// The largest body this attempt accepts (0: the raw client's default).
    pub cap: usize,
    pub status: Option<StatusCode>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The body went over `cap`; `body` is then empty.
    pub truncated: bool,
}

tokio::task_local! {
    static EXCHANGE: RefCell<Exchange>;
}

/// Runs one generated call with a response cap of `cap` bytes and returns
/// its outcome with what went over the wire. The record is task-local, so
/// concurrent calls on one client never mix.
pub(crate) async fn recorded<F: Future>(cap: usize, call: F) -> (F::Output, Exchange) {
    let exchange = Exchange {
        cap,
        ..Exchange::default()
    };
    EXCHANGE
        .scope(RefCell::new(exchange), async {
            let output = call.await;
            let exchange = EXCHANGE.try_with(RefCell::take).unwrap_or_default();
            (output, exchange)
        })
        .await
}

impl ClientHooks<HookState> for raw::Client {
    async fn pre<E>(
        &self,
        request: &mut reqwest::Request,
        _info: &OperationInfo,
    ) -> Result<(), progenitor_client::Error<E>> {
        let headers = request.headers_mut();
        // progenitor sends the fragment's own version; Cloudflare's API is
        // versioned by its path and documents no such header.
        headers.remove("api-version");
        self.inner.credentials().apply(headers);
        Ok(())
    }

    async fn exec(
        &self,
        request: reqwest::Request,
        _info: &OperationInfo,
    ) -> reqwest::Result<reqwest::Response> {
        let cap = EXCHANGE
            .try_with(|e| e.borrow().cap)
            .ok()
            .filter(|&cap| cap > 0)
            .unwrap_or_else(raw_max_response_bytes);
        let span = crate::spans::exchange();
        let begun = tokio::time::Instant::now();
        let captured = read_capped(self.client(), request, cap)
            .instrument(span.clone())
            .await;
        span.record("duration_ms", begun.elapsed().as_millis() as u64);
        let captured = captured?;
        span.record("status", captured.status.as_u16());
        let _ = EXCHANGE.try_with(|exchange| {
            let mut exchange = exchange.borrow_mut();
            exchange.status = Some(captured.status);
            exchange.headers = captured.headers.clone();
            exchange.body = captured.body.clone();
            exchange.truncated = captured.truncated;
        });
        let mut rebuilt = http::Response::new(captured.body);
        *rebuilt.status_mut() = captured.status;
        *rebuilt.version_mut() = captured.version;
        *rebuilt.headers_mut() = captured.headers;
        Ok(reqwest::Response::from(rebuilt))
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
