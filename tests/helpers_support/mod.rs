//! What the consumer and producer tests share: an emulator on the test's
//! runtime, a client that does not retry on its own (so that the helpers'
//! own backoff is what the tests see), and a way to wait without letting
//! paused time move.
#![allow(dead_code)]

use std::convert::Infallible;
use std::time::Duration;

use cf_queues::emulator::{Emulator, EmulatorHandle, ManualClock};
use cf_queues::{Message, PulledMessage, Queue, RetryPolicy};

/// A lease no test outlives, so that no extension is due.
pub const LONG_LEASE: Duration = Duration::from_secs(600);

/// An emulator on the system clock: on paused tokio time, its leases never
/// expire during a test.
pub async fn emulator() -> EmulatorHandle {
    Emulator::new().start().await.expect("emulator starts")
}

/// An emulator whose clock follows tokio's (paused) clock, to within 10 ms,
/// so that its leases expire on the test's time.
pub async fn emulator_on_tokio_time() -> (EmulatorHandle, ManualClock) {
    let clock = ManualClock::starting_now();
    let handle = Emulator::new()
        .clock(clock.clone())
        .start()
        .await
        .expect("emulator starts");
    let follower = clock.clone();
    tokio::spawn(async move {
        let mut last = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let now = tokio::time::Instant::now();
            follower.advance(now - last);
            last = now;
        }
    });
    (handle, clock)
}

/// A queue whose client makes exactly one request per call.
pub fn queue(emulator: &EmulatorHandle, id: &str) -> Queue {
    emulator
        .client_builder()
        .expect("builder")
        // No timers of its own (pool reaping) to move paused time.
        .http_client(reqwest::Client::builder().pool_idle_timeout(None))
        .retry(RetryPolicy::none())
        .build()
        .expect("client")
        .queue(id)
        .expect("queue id")
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
