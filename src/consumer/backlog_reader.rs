//! [`BacklogReader`]: the queue's backlog, read with the `metrics()` call
//! at an interval, for autoscalers and progress lines.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::queue::Queue;
use crate::response::Metrics;

/// How often a [`BacklogReader`] reads by default: 10 calls of the token's
/// 1,200 in each 5-minute window (0.8 %), and as often as a KEDA
/// Prometheus scaler looks (its default polling interval is 30 s).
pub const DEFAULT_BACKLOG_INTERVAL: Duration = Duration::from_secs(30);

/// The shortest interval a [`BacklogReader`] takes: 60 calls of the
/// token's 1,200 in each 5-minute window (5 %) per queue, where a reader
/// per replica, per queue, adds up.
pub const MIN_BACKLOG_INTERVAL: Duration = Duration::from_secs(5);

/// The queue's backlog at one reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backlog {
    /// Unacknowledged messages.
    pub messages: u64,
    /// Their bytes.
    pub bytes: u64,
    /// When the oldest of them was pushed, in Unix milliseconds; `None`
    /// for an empty queue, or when the API did not say.
    pub oldest_timestamp_ms: Option<u64>,
    /// When the reading was taken.
    pub read_at: SystemTime,
}

impl Backlog {
    /// The backlog a `metrics()` answer read at `read_at` tells.
    pub fn from_metrics(metrics: Metrics, read_at: SystemTime) -> Backlog {
        Backlog {
            messages: metrics.backlog_count,
            bytes: metrics.backlog_bytes,
            oldest_timestamp_ms: (metrics.backlog_count > 0
                && metrics.oldest_message_timestamp_ms > 0)
                .then_some(metrics.oldest_message_timestamp_ms),
            read_at,
        }
    }

    /// The age of the oldest message when the reading was taken: zero for
    /// an empty queue, `None` when the API did not say.
    pub fn oldest_age(&self) -> Option<Duration> {
        if self.messages == 0 {
            return Some(Duration::ZERO);
        }
        let read_ms = self
            .read_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .ok()?
            .as_millis();
        let oldest = u128::from(self.oldest_timestamp_ms?);
        let age = u64::try_from(read_ms.saturating_sub(oldest)).unwrap_or(u64::MAX);
        Some(Duration::from_millis(age))
    }
}

/// Reads a queue's backlog with its `metrics()` call every interval, in a
/// task of its own, and keeps the last reading; with the `metrics`
/// feature, records it as the gauges `cf_queues.queue.backlog.messages`,
/// `cf_queues.queue.backlog.bytes` and `cf_queues.queue.oldest_message.age`
/// (see [`crate::metrics`]), registered at the first reading: absent
/// until then, never a default 0.
///
/// Every reading is a call of the token, paced with the client's other
/// calls by its budget: at the [default interval](DEFAULT_BACKLOG_INTERVAL)
/// 10 of the 1,200 of each five-minute window. A failed reading keeps the
/// last one (and its time); the next is tried an interval later.
///
/// Cheap to clone; the task stops when the last clone is dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use cf_queues::Message;
/// use cf_queues::consumer::BacklogReader;
/// # let emulator = cf_queues_emulator::Emulator::new().start().await?;
/// # let queue = emulator.client()?.queue("orders")?;
/// queue.push(Message::text("hello")).await?;
/// let mut reader = BacklogReader::start(queue, Duration::from_secs(30))?;
/// let backlog = reader.next_reading().await.expect("read");
/// assert_eq!(backlog.messages, 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BacklogReader {
    latest: watch::Receiver<Option<Backlog>>,
    _task: Arc<AbortOnDrop>,
}

#[derive(Debug)]
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl BacklogReader {
    /// Starts reading `queue`'s backlog now and every `interval` after.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for an interval under
    /// [`MIN_BACKLOG_INTERVAL`]; [`Error::Config`] outside a tokio runtime.
    pub fn start(queue: Queue, interval: Duration) -> Result<BacklogReader> {
        BacklogReader::spawn(queue, interval, None)
    }

    /// Starts with a reading already made (`metrics`, read at `read_at`):
    /// the first call is an interval later.
    ///
    /// # Errors
    ///
    /// As [`BacklogReader::start`].
    pub fn start_seeded(
        queue: Queue,
        interval: Duration,
        metrics: Metrics,
        read_at: SystemTime,
    ) -> Result<BacklogReader> {
        BacklogReader::spawn(
            queue,
            interval,
            Some(Backlog::from_metrics(metrics, read_at)),
        )
    }

    fn spawn(queue: Queue, interval: Duration, seed: Option<Backlog>) -> Result<BacklogReader> {
        if interval < MIN_BACKLOG_INTERVAL {
            return Err(Error::invalid(
                "backlog interval",
                format!(
                    "must be at least {MIN_BACKLOG_INTERVAL:?}: each reading is a call of the \
                     token's 1,200 in five minutes"
                ),
            ));
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::Config("a BacklogReader starts inside a tokio runtime".to_owned())
        })?;
        let (sender, latest) = watch::channel(None);
        if let Some(seed) = seed {
            record(&queue, &seed);
            sender.send_replace(Some(seed));
        }
        let task = runtime.spawn(read_every(queue, interval, sender, seed.is_some()));
        Ok(BacklogReader {
            latest,
            _task: Arc::new(AbortOnDrop(task.abort_handle())),
        })
    }

    /// The last reading, if one succeeded yet.
    pub fn latest(&self) -> Option<Backlog> {
        *self.latest.borrow()
    }

    /// Waits for a successful reading this handle has not returned yet (the
    /// seed or the latest, at once, the first time), and returns it; `None`
    /// once the reader stopped.
    pub async fn next_reading(&mut self) -> Option<Backlog> {
        // `changed` returns at once for a value not seen yet, and marks it
        // seen: what it returned for is read right after.
        loop {
            self.latest.changed().await.ok()?;
            if let Some(reading) = *self.latest.borrow_and_update() {
                return Some(reading);
            }
        }
    }
}

async fn read_every(
    queue: Queue,
    interval: Duration,
    sender: watch::Sender<Option<Backlog>>,
    seeded: bool,
) {
    if seeded {
        tokio::time::sleep(interval).await;
    }
    loop {
        let asked = tokio::time::Instant::now();
        match queue.metrics().await {
            Ok(metrics) => {
                let backlog = Backlog::from_metrics(metrics, SystemTime::now());
                record(&queue, &backlog);
                sender.send_replace(Some(backlog));
            }
            Err(error) => tracing::debug!(
                queue = queue.id(),
                %error,
                "reading the backlog failed; the last reading stays"
            ),
        }
        tokio::time::sleep_until(asked + interval).await;
    }
}

/// The gauges of a reading (with the `metrics` feature).
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
fn record(queue: &Queue, backlog: &Backlog) {
    #[cfg(feature = "metrics")]
    {
        use crate::metrics::{METADATA, key};
        let set = |name: &'static str, value: f64| {
            let key = key(queue.id(), None, name, &[]);
            ::metrics::with_recorder(|recorder| {
                recorder.register_gauge(&key, &METADATA).set(value);
            });
        };
        set("cf_queues.queue.backlog.messages", backlog.messages as f64);
        set("cf_queues.queue.backlog.bytes", backlog.bytes as f64);
        if let Some(age) = backlog.oldest_age() {
            set("cf_queues.queue.oldest_message.age", age.as_secs_f64());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_and_its_age() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let metrics = |count, bytes, oldest| Metrics {
            backlog_count: count,
            backlog_bytes: bytes,
            oldest_message_timestamp_ms: oldest,
        };
        let full = Backlog::from_metrics(metrics(3, 30, 40_000), at);
        assert_eq!(
            (full.messages, full.bytes, full.oldest_timestamp_ms),
            (3, 30, Some(40_000))
        );
        assert_eq!(full.oldest_age(), Some(Duration::from_secs(60)));
        let empty = Backlog::from_metrics(metrics(0, 0, 40_000), at);
        assert_eq!(
            (empty.oldest_timestamp_ms, empty.oldest_age()),
            (None, Some(Duration::ZERO))
        );
        let unsaid = Backlog::from_metrics(metrics(2, 20, 0), at);
        assert_eq!(unsaid.oldest_age(), None);
        // A clock behind the queue's is no negative age.
        let ahead = Backlog::from_metrics(metrics(1, 1, 200_000), at);
        assert_eq!(ahead.oldest_age(), Some(Duration::ZERO));
    }
}
