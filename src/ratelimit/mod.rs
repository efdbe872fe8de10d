//! Rate limits: the pacing every client follows by default, read from the
//! server's `Ratelimit` headers ([`pacer`](self) in `pacer.rs`), and the
//! client-side limits a user may add ([`RateLimits`], the buckets below).

#[cfg(feature = "consumer")]
mod backlog;
mod bucket;
mod fleet;
mod headers;
mod pacer;
#[cfg(feature = "consumer")]
mod share;

use bucket::Bucket;
#[cfg(feature = "consumer")]
pub(crate) use share::Share;

pub(crate) use headers::Figures;
pub use pacer::{BURST_PER_CENT, MARGIN_PER_CENT, TokenBudget};
pub(crate) use pacer::{Denied, Pacer, Pass};

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How a client limits its calls; see
/// [`ClientBuilder::rate_limits`](crate::ClientBuilder::rate_limits).
///
/// # Pacing by the server's headers (on by default)
///
/// Cloudflare answers every API call with `Ratelimit` (`r`, the requests
/// the credential may still make in the window; `t`, the seconds until it
/// may make more) and `Ratelimit-Policy` (`q` requests per `w` seconds:
/// 1,200 per 300). Going over the window blocks every call of the
/// credential, pulls and acks included, for five minutes. So every client
/// reads these headers on every answer and, before each call that counts
/// against the limit ([`Operation::counts_against_api_limit`]: every call
/// but pulls, acks and lease extensions, which are never held back):
///
/// - sends no more than `r` before the next answer;
/// - keeps to at most q/w calls a second on average, aiming
///   [`MARGIN_PER_CENT`] below the window, with bursts of
///   [`BURST_PER_CENT`] of the quota: about 3.86 calls a second at
///   Cloudflare's figures, so about 386 messages a second for full batch
///   pushes of 100, per credential;
/// - waits while a 429 with code 971 asked it to (its `Retry-After`).
///
/// A client that follows them never exceeds the window on its own. Clones of
/// a client share its pacing. Clients built separately, or in other
/// processes (replicas of one service) using the same token, each read in
/// `r` what the others spend (the window counts the whole token's calls)
/// and keep to their share of the room it leaves, with no coordinator and
/// no setting: measured for up to 16 replicas without a block (the
/// producer's docs, feature `producer`, say how and with what figures;
/// more replicas than that, or a window much shorter than Cloudflare's,
/// want a token per group of replicas). A server that sends no such headers is
/// not paced (a missing header means no information, not zero); when it
/// starts sending them (limits switched back on), its own count (`r`)
/// says what is spent, not the calls this client sent while it did not
/// limit.
///
/// A call whose budget, by the server's figures, comes back only after
/// longer than the retry policy honours
/// ([`RetryPolicy::max_retry_after`](crate::retry::RetryPolicy::max_retry_after),
/// 60 s), such as during a five-minute block, fails at once with
/// [`Error::RateLimited`](crate::Error::RateLimited) without being sent.
///
/// # Client-side limits
///
/// Limits of your own on pushes come on top: each one is kept over every
/// sliding window, never letting more through in any period than it
/// allows (a burst of 1 % of the count, and a refill of the rest over the
/// period).
///
/// ```
/// use std::time::Duration;
/// use cf_queues::ratelimit::RateLimits;
///
/// let paced = RateLimits::default(); // the server's headers only
/// let documented = RateLimits::cloudflare(); // and 1,200 pushes / 5 min, 5,000 messages/s per queue
/// let custom = RateLimits::default().push_requests(100, Duration::from_secs(60));
/// let off = RateLimits::none(); // nothing at all, not even the headers
/// # let _ = (paced, documented, custom, off);
/// ```
///
/// [`Operation::counts_against_api_limit`]: crate::operation::Operation::counts_against_api_limit
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct RateLimits {
    headers: bool,
    push_requests: Option<(u32, Duration)>,
    messages_per_second: Option<u32>,
}

impl Default for RateLimits {
    /// Pacing by the server's headers, no client-side limit.
    fn default() -> Self {
        RateLimits {
            headers: true,
            push_requests: None,
            messages_per_second: None,
        }
    }
}

impl RateLimits {
    /// No limits, and no pacing by the server's headers either: every call
    /// goes at once, and a burst can trigger Cloudflare's five-minute block.
    pub fn none() -> RateLimits {
        RateLimits {
            headers: false,
            push_requests: None,
            messages_per_second: None,
        }
    }

    /// The pacing by the headers, and Cloudflare's documented limits kept on
    /// the client's side as well: 1,200 push requests per 5 minutes (REST
    /// pushes count against the API limit), and 5,000 messages per second
    /// per queue.
    pub fn cloudflare() -> RateLimits {
        RateLimits::default()
            .push_requests(1_200, Duration::from_secs(300))
            .messages_per_second(5_000)
    }

    /// Whether to pace by the server's `Ratelimit` headers (default: yes).
    pub fn pace_by_headers(mut self, on: bool) -> RateLimits {
        self.headers = on;
        self
    }

    /// At most `count` push requests (single or batch) in any `period`,
    /// across the client: a burst of 1 % of `count` (at least 1), the rest
    /// spread over the period.
    pub fn push_requests(mut self, count: u32, period: Duration) -> RateLimits {
        self.push_requests = (count > 0 && !period.is_zero()).then_some((count, period));
        self
    }

    /// At most `count` pushed messages to each queue in any second.
    pub fn messages_per_second(mut self, count: u32) -> RateLimits {
        self.messages_per_second = (count > 0).then_some(count);
        self
    }

    /// Whether the client follows the server's headers.
    pub(crate) fn paces(&self) -> bool {
        self.headers
    }
}

/// The burst of a per-queue message limit: one full batch goes at once.
const MESSAGES_BURST: f64 = crate::limits::MAX_BATCH_MESSAGES as f64;

/// The buckets of one client.
#[derive(Debug)]
pub(crate) struct Limiter {
    requests: Option<Mutex<Bucket>>,
    messages_per_second: Option<f64>,
    queues: Mutex<HashMap<String, Bucket>>,
}

impl Limiter {
    pub(crate) fn new(limits: RateLimits) -> Option<Limiter> {
        if limits.push_requests.is_none() && limits.messages_per_second.is_none() {
            return None;
        }
        let now = Instant::now();
        Some(Limiter {
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
    /// [`Limiter::refund`].
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
    fn send_times(limiter: &Limiter, count: usize, now: Instant) -> Vec<Duration> {
        (0..count).map(|_| limiter.reserve("q", 1, now)).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn cloudflare_s_figures_never_exceed_the_window() {
        let limiter = Limiter::new(RateLimits::cloudflare()).expect("a limit");
        let times = send_times(&limiter, 3_000, Instant::now());
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
        let limiter = Limiter::new(RateLimits::none().push_requests(2, Duration::from_secs(1)))
            .expect("a limit");
        let start = Instant::now();
        for _ in 0..6 {
            limiter.acquire("q", 1).await;
        }
        // One at once, then one a second: never three in a second.
        assert_eq!(start.elapsed().as_millis(), 5000);
    }

    #[tokio::test(start_paused = true)]
    async fn message_bucket_is_per_queue() {
        let limiter = Limiter::new(RateLimits::none().messages_per_second(200)).expect("a limit");
        let start = Instant::now();
        limiter.acquire("a", 100).await;
        limiter.acquire("b", 100).await;
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "separate queues have separate buckets, of one full batch each"
        );
        limiter.acquire("a", 50).await;
        assert_eq!(
            start.elapsed().as_millis(),
            500,
            "100 a second after the burst"
        );
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
        assert!(Limiter::new(RateLimits::default()).is_none());
        assert!(
            Limiter::new(RateLimits::none().push_requests(0, Duration::from_secs(1))).is_none()
        );
        assert!(RateLimits::default().paces() && RateLimits::cloudflare().paces());
        assert!(!RateLimits::none().paces());
    }
}
