//! One connection: its state as the accept loop sees it, the timed socket
//! under hyper, and the service that marks requests in progress.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, Sleep};
use tower::ServiceExt as _;

use super::ServerState;

/// hyper refuses a buffer limit below this.
const HYPER_MIN_BUF: usize = 8192;

/// Marks "no time": no first byte of a request head seen yet.
const NONE: u64 = u64::MAX;

/// A connection as the accept loop, the handlers and its socket share it.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(super) id: u64,
    server: Arc<ServerState>,
    /// The client's address, which the per-address rate limit counts by.
    peer: IpAddr,
    /// Whether a request has come on it yet: the first pays for the
    /// connection's set-up when the emulator adds a round trip.
    used: AtomicBool,
    /// Requests between "head parsed" and "response body done or dropped".
    busy: AtomicU32,
    /// When the connection last became idle: opened, or a response finished.
    idle_since_ms: AtomicU64,
    /// When the first byte of the next request head came, [`NONE`] before.
    head_started_ms: AtomicU64,
    evict: Notify,
    /// Response bytes serialized, and how many of them the socket has taken.
    produced: AtomicU64,
    taken: AtomicU64,
}

impl Conn {
    pub(super) fn new(id: u64, server: Arc<ServerState>, peer: IpAddr) -> Conn {
        let now = server.now_ms();
        Conn {
            id,
            server,
            peer,
            used: AtomicBool::new(false),
            busy: AtomicU32::new(0),
            idle_since_ms: AtomicU64::new(now),
            // A new connection owes its first request head at once, so the
            // header timeout runs from the connect.
            head_started_ms: AtomicU64::new(now),
            evict: Notify::new(),
            produced: AtomicU64::new(0),
            taken: AtomicU64::new(0),
        }
    }

    pub(super) fn server(&self) -> &ServerState {
        &self.server
    }

    /// The client's address.
    pub(crate) fn peer_ip(&self) -> IpAddr {
        self.peer
    }

    pub(super) fn is_idle(&self) -> bool {
        self.busy.load(Ordering::Relaxed) == 0
    }

    pub(super) fn idle_since_ms(&self) -> u64 {
        self.idle_since_ms.load(Ordering::Relaxed)
    }

    pub(super) fn evict(&self) {
        self.evict.notify_one();
    }

    fn begin_request(&self) {
        self.busy.fetch_add(1, Ordering::Relaxed);
        self.head_started_ms.store(NONE, Ordering::Relaxed);
    }

    fn end_request(&self) {
        self.idle_since_ms
            .store(self.server.now_ms(), Ordering::Relaxed);
        self.busy.fetch_sub(1, Ordering::Relaxed);
    }

    /// Records `n` more response bytes handed to hyper.
    pub(crate) fn produced(&self, n: usize) {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        let produced = self
            .produced
            .fetch_add(n, Ordering::Relaxed)
            .saturating_add(n);
        self.server.buffered.fetch_add(n, Ordering::Relaxed);
        let held = produced.saturating_sub(self.taken.load(Ordering::Relaxed));
        self.server.peak_buffered.fetch_max(held, Ordering::Relaxed);
    }

    /// Records `n` bytes taken by the socket. They are counted against the
    /// response bytes produced, never beyond them, so a response head (which
    /// hyper writes, not our body) is at worst counted as body: the figure
    /// errs low by at most one head.
    fn written(&self, n: usize) {
        let held = self
            .produced
            .load(Ordering::Relaxed)
            .saturating_sub(self.taken.load(Ordering::Relaxed));
        let taken = u64::try_from(n).unwrap_or(u64::MAX).min(held);
        self.taken.fetch_add(taken, Ordering::Relaxed);
        self.server.buffered.fetch_sub(taken, Ordering::Relaxed);
    }

    /// Gives the connection's unsent bytes back to the server-wide figure.
    pub(super) fn release_buffered(&self) {
        let produced = self.produced.load(Ordering::Relaxed);
        let taken = self.taken.swap(produced, Ordering::Relaxed);
        self.server
            .buffered
            .fetch_sub(produced.saturating_sub(taken), Ordering::Relaxed);
    }

    /// When the socket may stay silent until: the header timeout from the
    /// first byte of a request head (or from the connect), the idle timeout
    /// from the end of the last response. `None` while a request is in
    /// progress: the body timeout and the write timeout cover that.
    fn read_deadline(&self) -> Option<Instant> {
        if !self.is_idle() {
            return None;
        }
        let limits = &self.server.limits;
        let started = self.head_started_ms.load(Ordering::Relaxed);
        let ms = if started == NONE {
            self.idle_since_ms()
                .saturating_add(millis(limits.idle_timeout))
        } else {
            started.saturating_add(millis(limits.header_timeout))
        };
        Some(self.server.instant(ms))
    }

    fn saw_bytes(&self) {
        if self.is_idle() && self.head_started_ms.load(Ordering::Relaxed) == NONE {
            self.head_started_ms
                .store(self.server.now_ms(), Ordering::Relaxed);
        }
    }

    fn timed_out(&self, what: &str) -> io::Error {
        self.server.timed_out.fetch_add(1, Ordering::Relaxed);
        io::Error::new(io::ErrorKind::TimedOut, format!("{what} timeout"))
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `start + by`, or about thirty years on where that overflows (a timeout
/// configured as `Duration::MAX` means "never").
pub(super) fn later(start: Instant, by: Duration) -> Instant {
    start
        .checked_add(by)
        .or_else(|| start.checked_add(Duration::from_secs(30 * 365 * 86_400)))
        .unwrap_or(start)
}

/// Serves one connection until it closes, is evicted while idle, or the
/// server closes (then keep-alive goes off and the current request may end).
pub(super) async fn serve_connection(
    stream: TcpStream,
    conn: Arc<Conn>,
    router: Router,
    mut closing: watch::Receiver<bool>,
) {
    let limits = conn.server.limits;
    let io = TokioIo::new(Watched::new(stream, Arc::clone(&conn)));
    let service_conn = Arc::clone(&conn);
    let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let conn = Arc::clone(&service_conn);
        let router = router.clone();
        async move {
            conn.begin_request();
            let first = !conn.used.swap(true, Ordering::Relaxed);
            let wait = conn.server.latency.wait(first);
            if let Some(wait) = wait {
                tokio::time::sleep(wait.before).await;
            }
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(Arc::clone(&conn));
            let response = match router.oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            if let Some(wait) = wait {
                tokio::time::sleep(wait.after).await;
            }
            Ok::<_, Infallible>(response.map(|body| Tracked {
                body,
                conn: Some(conn),
            }))
        }
    });
    let mut builder = http1::Builder::new();
    // The same figure bounds what hyper buffers of a response before it
    // stops polling the body, and the size of a request head.
    builder
        .keep_alive(true)
        .max_buf_size(limits.response_buffer_bytes.max(HYPER_MIN_BUF));
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = connection.as_mut() => break,
            () = conn.evict.notified(), if !draining => {
                // Dropping the connection closes the socket; a request that
                // began meanwhile is let finish.
                if conn.is_idle() {
                    conn.server.evicted.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
            _ = closing.changed(), if !draining => {
                connection.as_mut().graceful_shutdown();
                draining = true;
            }
        }
    }
}

/// A response body that marks its request finished when hyper is done
/// with it (written out, or dropped with the connection).
struct Tracked {
    body: Body,
    conn: Option<Arc<Conn>>,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.end_request();
        }
    }
}

/// The socket, with the header, idle and write timeouts, and the count of
/// bytes written for [`Conn::written`].
pub(super) struct Watched {
    stream: TcpStream,
    conn: Arc<Conn>,
    read_timer: Pin<Box<Sleep>>,
    read_deadline: Option<Instant>,
    write_timer: Pin<Box<Sleep>>,
    write_deadline: Option<Instant>,
}

impl Watched {
    fn new(stream: TcpStream, conn: Arc<Conn>) -> Watched {
        let now = Instant::now();
        Watched {
            stream,
            conn,
            read_timer: Box::pin(tokio::time::sleep_until(now)),
            read_deadline: None,
            write_timer: Box::pin(tokio::time::sleep_until(now)),
            write_deadline: None,
        }
    }

    /// A pending write makes no progress: fails once the write timeout has
    /// passed since the first pending attempt, so a client that never reads
    /// its response loses the connection instead of holding it.
    fn poll_write_stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.write_deadline.is_none() {
            let deadline = later(Instant::now(), self.conn.server.limits.write_timeout);
            self.write_timer.as_mut().reset(deadline);
            self.write_deadline = Some(deadline);
        }
        ready!(self.write_timer.as_mut().poll(cx));
        Poll::Ready(Err(self.conn.timed_out("write")))
    }

    fn wrote(
        &mut self,
        result: Poll<io::Result<usize>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        match result {
            Poll::Ready(Ok(n)) => {
                self.write_deadline = None;
                self.conn.written(n);
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => self.poll_write_stall(cx),
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.conn.saw_bytes();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => {
                let Some(deadline) = self.conn.read_deadline() else {
                    return Poll::Pending;
                };
                if self.read_deadline != Some(deadline) {
                    self.read_timer.as_mut().reset(deadline);
                    self.read_deadline = Some(deadline);
                }
                ready!(self.read_timer.as_mut().poll(cx));
                let what = if self.conn.head_started_ms.load(Ordering::Relaxed) == NONE {
                    "idle"
                } else {
                    "header"
                };
                Poll::Ready(Err(self.conn.timed_out(what)))
            }
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.wrote(result, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.wrote(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
