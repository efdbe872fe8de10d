//! [`Bucket`]: the one bucket behind all three scopes of flow control: the
//! pacing by the token's budget (`token_budget/`), the client's caps
//! ([`RateLimits`](crate::ratelimit::RateLimits)), and a consumer's share of
//! the queue's allowance (`consumer/allowance/`).
//!
//! A bucket lends: a reservation is always granted, and the caller waits
//! for the time the bucket takes to refill past it, so that calls queue in
//! time order and never spend more than the rate.

use std::time::Duration;

use tokio::time::Instant;

/// The longest wait a bucket computes: a debt that would take longer (a
/// rate of almost nothing) is still "wait" to every caller.
const LONGEST_WAIT_SECONDS: f64 = 1e9;

/// A token bucket: up to `capacity` tokens, refilled at `per_second`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bucket {
    pub(crate) capacity: f64,
    pub(crate) per_second: f64,
    pub(crate) tokens: f64,
    updated: Instant,
}

impl Bucket {
    /// A full bucket.
    pub(crate) fn full(capacity: f64, per_second: f64, now: Instant) -> Bucket {
        Bucket {
            capacity,
            per_second,
            tokens: capacity,
            updated: now,
        }
    }

    /// A bucket that lets at most `count` through in any `period`: its
    /// burst (`burst`, at least 1) and a period's refill add up to
    /// `count`. (A bucket of `count` refilled at `count` per period lets
    /// twice that through in the first period, and a server counting a
    /// window blocks it.)
    pub(crate) fn within(count: f64, period: Duration, burst: f64, now: Instant) -> Bucket {
        let capacity = burst.floor().clamp(1.0, count.max(1.0));
        // A count of 1 leaves nothing to refill within the period: the
        // refill wins over the exact bound, one call a period.
        let refill = if count > capacity {
            count - capacity
        } else {
            count
        };
        Bucket::full(capacity, refill / period.as_secs_f64(), now)
    }

    /// Adds what was refilled since the last look.
    pub(crate) fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.capacity);
        self.updated = self.updated.max(now);
    }

    /// Takes `n` tokens, going into debt if needed; how long the caller
    /// must wait for the debt to be paid.
    pub(crate) fn reserve(&mut self, n: f64, now: Instant) -> Duration {
        self.refill(now);
        self.tokens -= n;
        self.debt_wait()
    }

    /// How long until `n` tokens are there, without taking them.
    pub(crate) fn wait_for(&mut self, n: f64, now: Instant) -> Duration {
        self.refill(now);
        let missing = n - self.tokens;
        if missing <= 0.0 {
            Duration::ZERO
        } else {
            seconds(missing / self.per_second)
        }
    }

    /// Gives back `n` tokens taken and not used.
    pub(crate) fn refund(&mut self, n: f64) {
        self.tokens = (self.tokens + n).min(self.capacity);
    }

    /// Changes the rate (and the burst) from `now` on; what was refilled
    /// until then was refilled at the old rate.
    pub(crate) fn set_rate(&mut self, per_second: f64, capacity: f64, now: Instant) {
        self.refill(now);
        self.per_second = per_second;
        self.capacity = capacity;
        self.tokens = self.tokens.min(capacity);
    }

    fn debt_wait(&self) -> Duration {
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            seconds(-self.tokens / self.per_second)
        }
    }
}

fn seconds(s: f64) -> Duration {
    if s.is_finite() {
        Duration::from_secs_f64(s.clamp(0.0, LONGEST_WAIT_SECONDS))
    } else {
        Duration::from_secs_f64(LONGEST_WAIT_SECONDS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn reservations_queue_at_the_rate() {
        let now = Instant::now();
        let mut bucket = Bucket::full(500.0, 1_000.0, now);
        // 500 tokens of burst, then a millisecond per token.
        assert_eq!(bucket.reserve(500.0, now), Duration::ZERO);
        assert_eq!(bucket.reserve(100.0, now), Duration::from_millis(100));
        assert_eq!(bucket.reserve(100.0, now), Duration::from_millis(200));
        let later = now + Duration::from_millis(200);
        assert_eq!(bucket.wait_for(0.0, later), Duration::ZERO);
        assert_eq!(bucket.wait_for(100.0, later), Duration::from_millis(100));
        bucket.refund(100.0);
        assert_eq!(bucket.reserve(100.0, later), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn within_never_lets_more_than_the_count_through_a_period() {
        let now = Instant::now();
        let mut bucket = Bucket::within(2.0, Duration::from_secs(1), 1.0, now);
        let waits: Vec<_> = (0..3).map(|_| bucket.reserve(1.0, now)).collect();
        assert_eq!(
            waits,
            [
                Duration::ZERO,
                Duration::from_secs(1),
                Duration::from_secs(2)
            ]
        );
    }

    #[cfg(feature = "consumer")]
    #[tokio::test(start_paused = true)]
    async fn a_new_rate_counts_from_when_it_is_set() {
        let now = Instant::now();
        let mut bucket = Bucket::full(10.0, 10.0, now);
        bucket.reserve(10.0, now);
        let later = now + Duration::from_millis(500);
        bucket.set_rate(100.0, 10.0, later);
        // 5 tokens at the old rate, then 5 more at 100 a second.
        assert_eq!(bucket.wait_for(10.0, later), Duration::from_millis(50));
    }

    #[test]
    fn a_rate_of_nothing_is_a_long_wait_not_a_panic() {
        let now = Instant::now();
        let mut bucket = Bucket::full(0.0, 0.0, now);
        assert_eq!(
            bucket.reserve(1.0, now),
            Duration::from_secs_f64(LONGEST_WAIT_SECONDS)
        );
    }
}
