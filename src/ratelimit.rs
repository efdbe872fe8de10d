//! Opt-in client-side rate limits for pushes, so a busy producer slows down
//! instead of collecting 429s.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Client-side limits on pushes; see [`ClientBuilder::rate_limits`](crate::ClientBuilder::rate_limits).
///
/// Each limit is a token bucket: bursts up to the limit pass at once, and
/// beyond it calls wait for tokens instead of failing.
///
/// ```
/// use std::time::Duration;
/// use cf_queues::ratelimit::RateLimits;
///
/// let documented = RateLimits::cloudflare(); // 1,200 push requests / 5 min; 5,000 messages/s per queue
/// let custom = RateLimits::none().push_requests(100, Duration::from_secs(60));
/// # let _ = (documented, custom);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct RateLimits {
    push_requests: Option<(u32, Duration)>,
    messages_per_second: Option<u32>,
}

impl RateLimits {
    /// No limits.
    pub fn none() -> RateLimits {
        RateLimits {
            push_requests: None,
            messages_per_second: None,
        }
    }

    /// Cloudflare's documented limits: 1,200 push requests per 5 minutes for
    /// the account (REST pushes count against the API rate limit), and 5,000
    /// messages per second per queue.
    pub fn cloudflare() -> RateLimits {
        RateLimits::none()
            .push_requests(1_200, Duration::from_secs(300))
            .messages_per_second(5_000)
    }

    /// At most `count` push requests (single or batch) per `period`, across the client.
    pub fn push_requests(mut self, count: u32, period: Duration) -> RateLimits {
        self.push_requests = (count > 0 && !period.is_zero()).then_some((count, period));
        self
    }

    /// At most `count` pushed messages per second to each queue.
    pub fn messages_per_second(mut self, count: u32) -> RateLimits {
        self.messages_per_second = (count > 0).then_some(count);
        self
    }
}

/// A token bucket that lets callers reserve tokens ahead and wait their turn.
#[derive(Debug)]
struct Bucket {
    capacity: f64,
    per_second: f64,
    tokens: f64,
    updated: Instant,
}

impl Bucket {
    fn new(capacity: f64, per_second: f64, now: Instant) -> Bucket {
        Bucket {
            capacity,
            per_second,
            tokens: capacity,
            updated: now,
        }
    }

    /// Takes `n` tokens, going into debt if needed; returns how long the
    /// caller must wait for the debt to be paid.
    fn reserve(&mut self, n: f64, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.capacity);
        self.updated = now;
        self.tokens -= n;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((-self.tokens / self.per_second).min(1e9))
        }
    }
}

/// The buckets of one client.
#[derive(Debug)]
pub(crate) struct Limiter {
    requests: Option<Mutex<Bucket>>,
    messages_per_second: Option<f64>,
    queues: Mutex<HashMap<String, Bucket>>,
}

impl Limiter {
    pub(crate) fn new(limits: RateLimits) -> Option<Limiter> {
        if limits == RateLimits::none() {
            return None;
        }
        let now = Instant::now();
        Some(Limiter {
            requests: limits.push_requests.map(|(count, period)| {
                let count = f64::from(count);
                Mutex::new(Bucket::new(count, count / period.as_secs_f64(), now))
            }),
            messages_per_second: limits.messages_per_second.map(f64::from),
            queues: Mutex::new(HashMap::new()),
        })
    }

    /// Reserves one push request of `messages` messages to `queue` and
    /// returns how long the caller must wait before sending it. A caller
    /// that gives up instead of waiting hands the reservation back with
    /// [`Limiter::refund`].
    pub(crate) fn reserve(&self, queue: &str, messages: usize, now: Instant) -> Duration {
        let mut wait = Duration::ZERO;
        if let Some(requests) = &self.requests {
            let mut bucket = requests.lock().unwrap_or_else(PoisonError::into_inner);
            wait = wait.max(bucket.reserve(1.0, now));
        }
        if let Some(rate) = self.messages_per_second {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            let bucket = queues
                .entry(queue.to_owned())
                .or_insert_with(|| Bucket::new(rate, rate, now));
            wait = wait.max(bucket.reserve(messages as f64, now));
        }
        wait
    }

    /// Gives back a reservation that was not used.
    pub(crate) fn refund(&self, queue: &str, messages: usize) {
        if let Some(requests) = &self.requests {
            let mut bucket = requests.lock().unwrap_or_else(PoisonError::into_inner);
            bucket.tokens = (bucket.tokens + 1.0).min(bucket.capacity);
        }
        if self.messages_per_second.is_some() {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(bucket) = queues.get_mut(queue) {
                bucket.tokens = (bucket.tokens + messages as f64).min(bucket.capacity);
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

    #[tokio::test(start_paused = true)]
    async fn request_bucket_spaces_pushes() {
        let limiter = Limiter::new(RateLimits::none().push_requests(2, Duration::from_secs(1)))
            .expect("a limit");
        let start = Instant::now();
        for _ in 0..6 {
            limiter.acquire("q", 1).await;
        }
        // Two pass at once, the other four need two more seconds of tokens.
        assert_eq!(start.elapsed().as_millis(), 2000);
    }

    #[tokio::test(start_paused = true)]
    async fn message_bucket_is_per_queue() {
        let limiter = Limiter::new(RateLimits::none().messages_per_second(100)).expect("a limit");
        let start = Instant::now();
        limiter.acquire("a", 100).await;
        limiter.acquire("b", 100).await;
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "separate queues have separate buckets"
        );
        limiter.acquire("a", 50).await;
        assert_eq!(start.elapsed().as_millis(), 500);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refund_returns_the_tokens() {
        let limiter = Limiter::new(RateLimits::none().push_requests(1, Duration::from_secs(10)))
            .expect("a limit");
        let now = Instant::now();
        assert_eq!(limiter.reserve("q", 1, now), Duration::ZERO);
        assert_eq!(limiter.reserve("q", 1, now), Duration::from_secs(10));
        limiter.refund("q", 1);
        assert_eq!(limiter.reserve("q", 1, now), Duration::from_secs(10));
    }

    #[test]
    fn no_limits_no_limiter() {
        assert!(Limiter::new(RateLimits::none()).is_none());
        assert!(
            Limiter::new(RateLimits::none().push_requests(0, Duration::from_secs(1))).is_none()
        );
    }
}
