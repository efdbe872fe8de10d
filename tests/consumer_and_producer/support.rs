//! What the consumer and producer tests share: an emulator on the test's
//! runtime, a client that does not retry on its own (so that the helpers'
//! own backoff is what the tests see), and a way to wait without letting
//! paused time move.
#![allow(dead_code)]

use std::convert::Infallible;
use std::time::Duration;

use cf_queues::{Message, PulledMessage, Queue};
use cf_queues_emulator::{Emulator, EmulatorHandle, TokioClock};

#[path = "../support/scripted_server.rs"]
mod scripted_server;
pub use scripted_server::*;

/// A lease no test outlives, so that no extension is due.
pub const LONG_LEASE: Duration = Duration::from_secs(600);

/// An emulator on the system clock: on paused tokio time, its leases never
/// expire during a test.
pub async fn emulator() -> EmulatorHandle {
    Emulator::new().start().await.expect("emulator starts")
}

/// An emulator whose clock is tokio's (paused) clock, so that its leases
/// expire on the test's time: one clock drives both the consumer's timers
/// and the emulator's lease expiry.
pub async fn emulator_on_tokio_time() -> (EmulatorHandle, TokioClock) {
    let clock = TokioClock::starting_now();
    let handle = Emulator::new()
        .clock(clock)
        .start()
        .await
        .expect("emulator starts");
    (handle, clock)
}

/// A queue whose client makes exactly one request per call.
pub fn queue(emulator: &EmulatorHandle, id: &str) -> Queue {
    one_request_per_call(emulator.client_builder().expect("builder"), id)
}

/// Pushes `m0`, `m1`, ... in batches.
pub async fn push_texts(queue: &Queue, count: usize) {
    let report = queue
        .push_all((0..count).map(|i| Message::text(format!("m{i}"))), 1)
        .await;
    assert!(report.all_landed(), "{report:?}");
}

/// Waits until `done` holds, yielding to the other tasks and the I/O
/// driver without ever letting paused time move.
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("gave up waiting for {what}");
}

/// Waits until `done` holds, letting paused time move by `step` whenever
/// the other tasks have nothing left to do without it, up to `limit`.
pub async fn eventually(
    what: &str,
    step: Duration,
    limit: Duration,
    mut done: impl FnMut() -> bool,
) {
    let end = tokio::time::Instant::now() + limit;
    loop {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(step).await;
    }
}

/// A handler that acknowledges at once.
#[cfg(feature = "consumer")]
pub async fn ack_now(_message: PulledMessage) -> Result<cf_queues::consumer::Outcome, Infallible> {
    Ok(cf_queues::consumer::Outcome::Ack)
}

/// A log sink a test can read back.
#[derive(Clone, Default)]
pub struct SharedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl SharedLog {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("not poisoned")).into_owned()
    }
}

impl std::io::Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for SharedLog {
    type Writer = SharedLog;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A TCP gate in front of an emulator: while shut, it accepts connections
/// and drops them at once, as a network failure would; while open, it
/// forwards them. Connections forwarded earlier stay up.
pub struct Gate {
    pub base_url: String,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Gate {
    pub fn open(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// A queue through this gate, whose client makes one request per call.
    pub fn queue(&self, emulator: &EmulatorHandle, id: &str) -> Queue {
        let builder = emulator.client_builder().expect("builder");
        one_request_per_call(builder.base_url(&self.base_url), id)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A gate in front of `emulator`, shut.
pub async fn shut_gate(emulator: &EmulatorHandle) -> Gate {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("address");
    let target = emulator.local_addr();
    let base_url = emulator
        .base_url()
        .replace(&target.to_string(), &address.to_string());
    let open = Arc::new(AtomicBool::new(false));
    let is_open = Arc::clone(&open);
    let task = tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            if !is_open.load(Ordering::SeqCst) {
                drop(inbound);
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    Gate {
        base_url,
        open,
        task,
    }
}

/// Makes a subscriber set with `tracing::subscriber::set_default` see every
/// callsite. Tests on other threads may have been registering the crate's
/// callsites as the subscriber was set, and tracing can cache the interest
/// they computed without it (a race of thread-local subscribers), which
/// drops spans at random. Call it once the subscriber is set, just before
/// the code under test starts.
pub fn refresh_tracing_interest() {
    tracing::callsite::rebuild_interest_cache();
}

/// Captures this thread's INFO events and closed spans, with their fields,
/// until the guard is dropped. Tests on a current-thread runtime see every
/// task's spans this way.
pub fn capture_spans() -> (SharedLog, tracing::subscriber::DefaultGuard) {
    let log = SharedLog::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(log.clone())
        .with_ansi(false)
        .finish();
    (log, tracing::subscriber::set_default(subscriber))
}
