//! Reading request bodies, bounded in size and time.
//!
//! A body is read to its end even when the request is refused before its
//! body matters (bad credentials, an unknown queue): an answer sent while
//! body bytes are still on the way leaves them where the next request on a
//! keep-alive connection should start, and hyper then closes the
//! connection, or not, depending on timing. Refusal bodies are drained, not
//! kept, so they cost no memory.

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body::Body as _;

/// How reading a body ended.
#[derive(Debug)]
pub(super) enum Read {
    /// The whole body (empty when it was drained).
    Complete(Bytes),
    /// More than the limit: the rest is unread.
    TooLarge,
    /// The body did not arrive within the body timeout.
    TimedOut,
    /// The client went away, or sent a malformed body.
    Broken,
}

/// Reads `body` to its end, keeping it when `keep`: at most `limit` bytes,
/// within `timeout`.
pub(super) async fn read(mut body: Body, limit: usize, timeout: Duration, keep: bool) -> Read {
    let reading = async {
        let mut kept = BytesMut::new();
        let mut seen = 0usize;
        loop {
            let frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
            match frame {
                None => return Read::Complete(kept.freeze()),
                Some(Err(_)) => return Read::Broken,
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    seen = seen.saturating_add(data.len());
                    if seen > limit {
                        return Read::TooLarge;
                    }
                    if keep {
                        kept.extend_from_slice(&data);
                    }
                }
            }
        }
    };
    tokio::time::timeout(timeout, reading)
        .await
        .unwrap_or(Read::TimedOut)
}
