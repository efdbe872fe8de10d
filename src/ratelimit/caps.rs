//! [`ClientCaps`]: the caps a user sets on a client's pushes
//! ([`RateLimits::push_requests`], [`RateLimits::messages_per_second`]),
//! kept on every sliding window by the crate's one bucket.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::RateLimits;
use crate::bucket::Bucket;

/// The burst of a per-queue message limit: one full batch goes at once.
const MESSAGES_BURST: f64 = crate::limits::MAX_BATCH_MESSAGES as f64;

/// The caps of one client: its buckets.
#[derive(Debug)]
pub(crate) struct ClientCaps {
    requests: Option<Mutex<Bucket>>,
    messages_per_second: Option<f64>,
    queues: Mutex<HashMap<String, Bucket>>,
}

impl ClientCaps {
    pub(crate) fn new(limits: RateLimits) -> Option<ClientCaps> {
        if limits.push_requests.is_none() && limits.messages_per_second.is_none() {
            return None;
        }
        let now = Instant::now();
        Some(ClientCaps {
            requests: limits.push_requests.map(|(count, period)| {
                let count = f64::from(count);
                Mutex::new(Bucket::within(count, period, count / 100.0, now))
            }),
            messages_per_second: limits.messages_per_second.map(f64::from),
            queues: Mutex::new(HashMap::new()),
        })
    }

    /// Reserves one push request of `messages` messages to `queue` and
    /// returns how long the caller must wait before sending it. A caller
    /// that gives up instead of waiting hands the reservation back with
    /// [`ClientCaps::refund`].
    pub(crate) fn reserve(&self, queue: &str, messages: usize, now: Instant) -> Duration {
        let mut wait = Duration::ZERO;
        if let Some(requests) = &self.requests {
            let mut bucket = requests.lock().unwrap_or_else(PoisonError::into_inner);
            wait = wait.max(bucket.reserve(1.0, now));
        }
        if let Some(rate) = self.messages_per_second {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            let bucket = queues.entry(queue.to_owned()).or_insert_with(|| {
                // A burst of one full batch, or half the count if smaller.
                let burst = (rate / 2.0).min(MESSAGES_BURST);
                Bucket::within(rate, Duration::from_secs(1), burst, now)
            });
            wait = wait.max(bucket.reserve(messages as f64, now));
        }
        wait
    }

    /// How long one push request to `queue` would wait now, without
    /// reserving anything: for a sender that keeps filling its batch
    /// meanwhile (the producer).
    #[cfg(feature = "producer")]
    pub(crate) fn peek(&self, queue: &str, now: Instant) -> Duration {
        let mut wait = Duration::ZERO;
        if let Some(requests) = &self.requests {
            let mut bucket = *requests.lock().unwrap_or_else(PoisonError::into_inner);
            wait = wait.max(bucket.reserve(1.0, now));
        }
        if self.messages_per_second.is_some() {
            let queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(mut bucket) = queues.get(queue).copied() {
                // Room for one more message: the batch's own size is not known yet.
                wait = wait.max(bucket.reserve(1.0, now));
            }
        }
        wait
    }

    /// Gives back a reservation that was not used.
    pub(crate) fn refund(&self, queue: &str, messages: usize) {
        if let Some(requests) = &self.requests {
            let mut bucket = requests.lock().unwrap_or_else(PoisonError::into_inner);
            bucket.refund(1.0);
        }
        if self.messages_per_second.is_some() {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(bucket) = queues.get_mut(queue) {
                bucket.refund(messages as f64);
            }
        }
    }

    /// Waits until one push request of `messages` messages to `queue` may go.
    #[cfg(test)]
    async fn acquire(&self, queue: &str, messages: usize) {
        let wait = self.reserve(queue, messages, Instant::now());
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The send times of `count` pushes all asked for at once.
    fn send_times(caps: &ClientCaps, count: usize, now: Instant) -> Vec<Duration> {
        (0..count).map(|_| caps.reserve("q", 1, now)).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn cloudflare_s_figures_never_exceed_the_window() {
        let caps = ClientCaps::new(RateLimits::cloudflare()).expect("a limit");
        let times = send_times(&caps, 3_000, Instant::now());
        // No 300 s holds more than 1,200: the 1,201st after any push is
        // 300 s or more after it. (Before 0.3: 2,400 in the first window.)
        let window = Duration::from_secs(300);
        for (first, later) in times.iter().zip(&times[1_200..]) {
            assert!(*later - *first >= window, "{first:?} .. {later:?}");
        }
        assert_eq!(times[11], Duration::ZERO, "a burst of 12");
        assert!(times[12] > Duration::ZERO);
        // The rest at 1,188 per 300 s.
        let last = times[2_999].as_secs_f64();
        assert!((last - 2_988.0 * 300.0 / 1_188.0).abs() < 0.01, "{last}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_small_count_is_kept_over_every_window() {
        let caps = ClientCaps::new(RateLimits::none().push_requests(2, Duration::from_secs(1)))
            .expect("a limit");
        let start = Instant::now();
        for _ in 0..6 {
            caps.acquire("q", 1).await;
        }
        // One at once, then one a second: never three in a second.
        assert_eq!(start.elapsed().as_millis(), 5000);
    }

    #[tokio::test(start_paused = true)]
    async fn message_bucket_is_per_queue() {
        let caps = ClientCaps::new(RateLimits::none().messages_per_second(200)).expect("a limit");
        let start = Instant::now();
        caps.acquire("a", 100).await;
        caps.acquire("b", 100).await;
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "separate queues have separate buckets, of one full batch each"
        );
        caps.acquire("a", 50).await;
        assert_eq!(
            start.elapsed().as_millis(),
            500,
            "100 a second after the burst"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_refund_returns_the_tokens() {
        let caps = ClientCaps::new(RateLimits::none().push_requests(1, Duration::from_secs(10)))
            .expect("a limit");
        let now = Instant::now();
        assert_eq!(caps.reserve("q", 1, now), Duration::ZERO);
        assert_eq!(caps.reserve("q", 1, now), Duration::from_secs(10));
        caps.refund("q", 1);
        assert_eq!(caps.reserve("q", 1, now), Duration::from_secs(10));
    }

    #[test]
    fn no_limits_no_caps() {
        assert!(ClientCaps::new(RateLimits::none()).is_none());
        assert!(ClientCaps::new(RateLimits::default()).is_none());
        assert!(
            ClientCaps::new(RateLimits::none().push_requests(0, Duration::from_secs(1))).is_none()
        );
        assert!(RateLimits::default().paces() && RateLimits::cloudflare().paces());
        assert!(!RateLimits::none().paces());
    }
}
