//! The accept loop: a cap on connections, timeouts on every connection,
//! responses bounded per connection, and a shutdown that ends in time.
//!
//! `axum::serve` has none of these, so the loop drives hyper's HTTP/1
//! connections itself. Each connection's socket is wrapped
//! ([`conn::Watched`]) so that reads and writes are timed and the bytes a
//! response has produced but the socket has not taken are counted.

mod conn;

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

pub(crate) use conn::Conn;

use super::latency::LatencyState;

/// How often the accept loop, at the cap, looks again for an idle
/// connection to close when none was idle.
const EVICT_RETRY: Duration = Duration::from_millis(50);

/// How long the loop pauses after a failed accept (out of descriptors, for
/// one), so that it does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The per-connection limits, as configured on the [`Emulator`](super::Emulator).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub write_timeout: Duration,
    pub response_buffer_bytes: usize,
    pub shutdown_grace: Duration,
}

/// Figures about the emulator's connections, for tests and for the abuse
/// script: what the limits did, not what the machine's memory did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Connections open now.
    pub open_connections: u64,
    /// Connections accepted since the start.
    pub accepted_connections: u64,
    /// Connections closed because a header, idle or write timeout ran out.
    pub timed_out_connections: u64,
    /// Idle connections closed to make room for a new one at the cap.
    pub evicted_connections: u64,
    /// Response bytes serialized but not yet taken by a socket, over all
    /// connections, now.
    pub buffered_response_bytes: u64,
    /// The most response bytes any one connection has held unsent.
    pub peak_buffered_response_bytes: u64,
}

/// Reads the server's [`ServerStats`] while it serves; from
/// [`EmulatorHandle::monitor`](crate::EmulatorHandle::monitor).
#[derive(Debug, Clone)]
pub struct ServerMonitor {
    pub(crate) server: Arc<ServerState>,
}

impl ServerMonitor {
    /// The counters as they are now.
    pub fn snapshot(&self) -> ServerStats {
        self.server.stats()
    }
}

/// State shared by the accept loop, the connections and the handle.
#[derive(Debug)]
pub(crate) struct ServerState {
    epoch: Instant,
    pub(crate) limits: ConnectionLimits,
    /// The round trip added to every request, switchable while serving.
    pub(crate) latency: LatencyState,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    accepted: AtomicU64,
    timed_out: AtomicU64,
    evicted: AtomicU64,
    buffered: AtomicU64,
    peak_buffered: AtomicU64,
}

impl ServerState {
    pub(crate) fn new(limits: ConnectionLimits, latency: LatencyState) -> ServerState {
        ServerState {
            epoch: Instant::now(),
            limits,
            latency,
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            accepted: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            buffered: AtomicU64::new(0),
            peak_buffered: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> ServerStats {
        ServerStats {
            open_connections: u64::try_from(self.open().len()).unwrap_or(u64::MAX),
            accepted_connections: self.accepted.load(Ordering::Relaxed),
            timed_out_connections: self.timed_out.load(Ordering::Relaxed),
            evicted_connections: self.evicted.load(Ordering::Relaxed),
            buffered_response_bytes: self.buffered.load(Ordering::Relaxed),
            peak_buffered_response_bytes: self.peak_buffered.load(Ordering::Relaxed),
        }
    }

    /// Milliseconds since the server started, the unit of the connections'
    /// timestamps.
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn instant(&self, ms: u64) -> Instant {
        conn::later(self.epoch, Duration::from_millis(ms))
    }

    fn open(&self) -> MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        // Only inserts and removes happen under this lock: a poisoned map is still whole.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn register(self: &Arc<Self>, peer: IpAddr) -> Arc<Conn> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn::new(id, Arc::clone(self), peer));
        self.open().insert(id, Arc::clone(&conn));
        self.accepted.fetch_add(1, Ordering::Relaxed);
        conn
    }

    fn unregister(&self, conn: &Conn) {
        self.open().remove(&conn.id);
        conn.release_buffered();
    }

    /// Asks the connection that has waited longest without a request in
    /// progress to close. Slow or silent clients are the ones waiting, so
    /// they give way to new connections instead of locking them out.
    fn evict_longest_idle(&self) {
        let victim = self
            .open()
            .values()
            .filter(|conn| conn.is_idle())
            .min_by_key(|conn| conn.idle_since_ms())
            .cloned();
        if let Some(conn) = victim {
            conn.evict();
        }
    }
}

/// Serves `router` on `listener` until `stop` fires (or its sender is
/// dropped), then closes: no new connections, keep-alive off for the open
/// ones, and after `shutdown_grace` whatever is left is dropped.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    shared: Arc<ServerState>,
    mut stop: oneshot::Receiver<()>,
) -> io::Result<()> {
    let limits = shared.limits;
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (closing, closing_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let (stream, peer) = tokio::select! {
            biased;
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "emulator: accept failed");
                    tokio::select! {
                        _ = &mut stop => break,
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    }
                }
            },
        };
        let Some(slot) = wait_for_slot(&slots, &shared, &mut stop).await else {
            break;
        };
        // Responses are written in small chunks; Nagle's delay would hold each.
        let _ = stream.set_nodelay(true);
        let conn = shared.register(peer.ip());
        let router = router.clone();
        let closing = closing_rx.clone();
        connections.spawn(async move {
            conn::serve_connection(stream, Arc::clone(&conn), router, closing).await;
            conn.server().unregister(&conn);
            drop(slot);
        });
    }
    drop(listener);
    let _ = closing.send(true);
    let drained = tokio::time::timeout(limits.shutdown_grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        // Past the grace period: drop the connections still open, a client
        // holding a half-sent request included.
        connections.shutdown().await;
        for conn in shared.open().drain().map(|(_, conn)| conn) {
            conn.release_buffered();
        }
    }
    Ok(())
}

/// A connection slot; at the cap, idle connections are closed to make one,
/// and otherwise the new connection waits (the ones behind it wait in the
/// listen backlog). `None` when the server stops meanwhile.
async fn wait_for_slot(
    slots: &Arc<Semaphore>,
    shared: &ServerState,
    stop: &mut oneshot::Receiver<()>,
) -> Option<OwnedSemaphorePermit> {
    if let Ok(slot) = Arc::clone(slots).try_acquire_owned() {
        return Some(slot);
    }
    loop {
        shared.evict_longest_idle();
        tokio::select! {
            biased;
            _ = &mut *stop => return None,
            slot = Arc::clone(slots).acquire_owned() => return slot.ok(),
            () = tokio::time::sleep(EVICT_RETRY) => {}
        }
    }
}
