//! [`RecordingTarget`]: an HTTP service that records every request (its
//! method, path, headers and raw body) and answers as a test scripts it,
//! for `cfq relay`'s tests: a target that is up, slow, busy, down (its
//! port refusing connections) and back on the same port.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};

/// The most body bytes recorded of one request.
const MAX_RECORDED_BYTES: usize = 16 * 1024 * 1024;

/// One request as it came.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// When it arrived (its head).
    pub at: Instant,
    /// Its method, `POST`.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Every header, as sent.
    pub headers: HeaderMap,
    /// The raw body.
    pub body: Vec<u8>,
}

impl Recorded {
    /// Header `name`, when present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// How the target answers one request.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// Headers, by name and value.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// How long it takes before answering.
    pub delay: Duration,
    /// How the body ends.
    pub end: BodyEnd,
}

/// How a reply's body ends: whole, or short of the `Content-Length` the
/// reply declares (its body's length and 100 bytes more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// Sent whole.
    Whole,
    /// The body sent, then silence: the rest never comes.
    Stalls,
    /// The body sent, then the connection closed mid-body.
    Cut,
}

impl Reply {
    /// `200` with no body, at once.
    pub fn ok() -> Reply {
        Reply::status(200)
    }

    /// `status` with no body, at once.
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: Duration::ZERO,
            end: BodyEnd::Whole,
        }
    }

    /// `status` with `Retry-After: seconds`.
    pub fn retry_after(status: u16, seconds: u64) -> Reply {
        Reply::status(status).header("retry-after", &seconds.to_string())
    }

    /// This reply with a header more.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// This reply with a body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Reply {
        self.body = body.into();
        self
    }

    /// This reply after `delay`.
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// This reply with its body ending as `end` says: the headers and the
    /// body go at once, and a `Content-Length` 100 bytes longer than it.
    pub fn ending(mut self, end: BodyEnd) -> Reply {
        self.end = end;
        self
    }
}

type Script = Box<dyn FnMut(&Recorded) -> Reply + Send>;

struct Shared {
    recorded: Mutex<Vec<Recorded>>,
    /// Whether requests are kept ([`RecordingTarget::counting`] keeps none).
    keep: bool,
    /// Every request so far, kept or not.
    seen: AtomicUsize,
    script: Mutex<Script>,
    in_progress: AtomicUsize,
    arrived: Notify,
}

/// A recording HTTP target on loopback. Dropping it stops it.
pub struct RecordingTarget {
    address: SocketAddr,
    shared: Arc<Shared>,
    serving: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for RecordingTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingTarget")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl RecordingTarget {
    /// A target answering 200 to everything, on a free loopback port.
    pub async fn start() -> RecordingTarget {
        RecordingTarget::started(true).await
    }

    /// A target that counts requests and keeps none: a service doing
    /// nothing, for benchmarks of hundreds of thousands of requests.
    pub async fn counting() -> RecordingTarget {
        RecordingTarget::started(false).await
    }

    async fn started(keep: bool) -> RecordingTarget {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            recorded: Mutex::new(Vec::new()),
            keep,
            seen: AtomicUsize::new(0),
            script: Mutex::new(Box::new(|_: &Recorded| Reply::ok())),
            in_progress: AtomicUsize::new(0),
            arrived: Notify::new(),
        });
        let serving = tokio::spawn(serve(listener, Arc::clone(&shared)));
        RecordingTarget {
            address,
            shared,
            serving: Mutex::new(Some(serving)),
        }
    }

    /// Its base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Answers from now on by `script`, called with each request as it came.
    pub fn script(&self, script: impl FnMut(&Recorded) -> Reply + Send + 'static) {
        *lock(&self.shared.script) = Box::new(script);
    }

    /// How many requests arrived so far (kept or not).
    pub fn seen(&self) -> usize {
        self.shared.seen.load(Ordering::SeqCst)
    }

    /// Every request so far, in the order they arrived.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.recorded).clone()
    }

    /// Requests being answered now (their reply's delay not over).
    pub fn in_progress(&self) -> usize {
        self.shared.in_progress.load(Ordering::SeqCst)
    }

    /// Waits until `n` requests arrived, or `limit` passed; the requests.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Recorded> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.shared.arrived.notified();
            let seen = self.requests();
            if seen.len() >= n {
                return seen;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.requests();
            }
        }
    }

    /// Stops listening and closes every connection: connecting is refused
    /// until [`RecordingTarget::come_back`].
    pub fn go_down(&self) {
        if let Some(serving) = lock(&self.serving).take() {
            serving.abort();
        }
    }

    /// Listens again on the same port.
    pub async fn come_back(&self) {
        self.go_down();
        let listener = TcpListener::bind(self.address)
            .await
            .expect("the same port again");
        *lock(&self.serving) = Some(tokio::spawn(serve(listener, Arc::clone(&self.shared))));
    }
}

impl Drop for RecordingTarget {
    fn drop(&mut self) {
        self.go_down();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Accepts connections, each served in a task of one set: aborting this
/// task drops the set, which aborts them all (their sockets close).
async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
                let shared = Arc::clone(&shared);
                async move { Ok::<_, Infallible>(answer(&shared, request).await) }
            });
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
        // Finished connections leave the set.
        while connections.try_join_next().is_some() {}
    }
}

async fn answer(shared: &Shared, request: http::Request<Incoming>) -> Response<Body> {
    let at = Instant::now();
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(Body::new(body), MAX_RECORDED_BYTES)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    let recorded = Recorded {
        at,
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned()),
        headers: parts.headers,
        body,
    };
    let reply = (lock(&shared.script))(&recorded);
    if shared.keep {
        lock(&shared.recorded).push(recorded);
    }
    shared.seen.fetch_add(1, Ordering::SeqCst);
    shared.arrived.notify_waiters();
    shared.in_progress.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(reply.delay).await;
    shared.in_progress.fetch_sub(1, Ordering::SeqCst);
    let declared = reply.body.len() + 100;
    let mut response = match reply.end {
        BodyEnd::Whole => Response::new(Body::from(reply.body)),
        end => {
            let sent = futures_util::stream::iter([Ok::<_, std::io::Error>(reply.body)]);
            let rest = futures_util::stream::once(async move {
                if end == BodyEnd::Stalls {
                    std::future::pending::<()>().await;
                }
                // The head and the body's start reach the client first.
                tokio::time::sleep(Duration::from_millis(200)).await;
                Err(std::io::Error::other("cut short"))
            });
            let mut response = Response::new(Body::from_stream(futures_util::StreamExt::chain(
                sent, rest,
            )));
            response
                .headers_mut()
                .insert(http::header::CONTENT_LENGTH, HeaderValue::from(declared));
            response
        }
    };
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn it_records_answers_as_scripted_and_goes_down_and_back() {
        let target = RecordingTarget::start().await;
        let http = reqwest::Client::new();
        let sent = http
            .post(format!("{}/hook?x=1", target.url()))
            .header("x-one", "1")
            .body(vec![0u8, 159, 146, 150])
            .send()
            .await
            .expect("answered");
        assert_eq!(sent.status().as_u16(), 200);
        let seen = target.wait_for(1, Duration::from_secs(5)).await;
        assert_eq!(
            (seen[0].method.as_str(), seen[0].path.as_str()),
            ("POST", "/hook?x=1")
        );
        assert_eq!(seen[0].header("x-one"), Some("1"));
        assert_eq!(seen[0].body, [0u8, 159, 146, 150]);

        target.script(|_| Reply::retry_after(503, 7).body("busy"));
        let busy = http.post(target.url()).send().await.expect("answered");
        assert_eq!(busy.status().as_u16(), 503);
        assert_eq!(busy.headers()["retry-after"], "7");

        target.go_down();
        let refused = http.post(target.url()).send().await;
        assert!(refused.is_err(), "connecting is refused while down");
        target.come_back().await;
        target.script(|_| Reply::status(204));
        let back = http.post(target.url()).send().await.expect("back");
        assert_eq!(back.status().as_u16(), 204);
        assert_eq!(target.requests().len(), 3);
    }
}
