//! A token bucket counted in thousandths of a token, so that a refill of
//! `per_second` tokens a second adds exactly `per_second` thousandths each
//! millisecond: integer arithmetic, no drift, exact edges in tests.

/// A bucket's figures: how fast it refills and how much it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BucketRate {
    /// Tokens added per second (at least 1).
    pub per_second: u64,
    /// Tokens the bucket holds when full (at least 1).
    pub burst: u64,
}

impl BucketRate {
    pub(crate) fn new(per_second: u32, burst: u32) -> BucketRate {
        BucketRate {
            per_second: u64::from(per_second.max(1)),
            burst: u64::from(burst.max(1)),
        }
    }

    fn capacity_milli(self) -> i64 {
        milli(self.burst)
    }
}

/// One bucket's level, full when made.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    /// Thousandths of a token; below zero only after a call larger than the
    /// whole burst (see [`Bucket::take`]).
    level_milli: i64,
    /// When the level was last brought up to date.
    at_ms: u64,
}

impl Bucket {
    pub(crate) fn full(rate: BucketRate, now_ms: u64) -> Bucket {
        Bucket {
            level_milli: rate.capacity_milli(),
            at_ms: now_ms,
        }
    }

    fn refill(&mut self, rate: BucketRate, now_ms: u64) {
        let elapsed = now_ms.saturating_sub(self.at_ms);
        // `per_second` thousandths of a token per millisecond.
        let gained = i64::try_from(elapsed.saturating_mul(rate.per_second)).unwrap_or(i64::MAX);
        self.level_milli = self
            .level_milli
            .saturating_add(gained)
            .min(rate.capacity_milli());
        self.at_ms = self.at_ms.max(now_ms);
    }

    /// Takes `n` tokens, or none: `Err` with the whole seconds (rounded up,
    /// at least 1) until the bucket holds enough. A call that needs more
    /// than the whole burst is let through once the bucket is full, and
    /// leaves it in debt, so a configuration with a burst smaller than one
    /// call still serves it rather than refusing it for ever.
    pub(crate) fn take(&mut self, rate: BucketRate, n: u64, now_ms: u64) -> Result<(), u64> {
        self.refill(rate, now_ms);
        if n == 0 {
            return Ok(());
        }
        let needed = milli(n);
        let enough = needed.min(rate.capacity_milli());
        if self.level_milli >= enough {
            self.level_milli = self.level_milli.saturating_sub(needed);
            return Ok(());
        }
        let missing = u64::try_from(enough.saturating_sub(self.level_milli)).unwrap_or(u64::MAX);
        Err(whole_seconds(missing.div_ceil(rate.per_second)))
    }

    /// Whether the bucket is full at `now_ms`, so that forgetting it changes nothing.
    pub(crate) fn is_full(&self, rate: BucketRate, now_ms: u64) -> bool {
        let mut copy = self.clone();
        copy.refill(rate, now_ms);
        copy.level_milli >= rate.capacity_milli()
    }
}

fn milli(tokens: u64) -> i64 {
    i64::try_from(tokens.saturating_mul(1000)).unwrap_or(i64::MAX)
}

/// Milliseconds as whole seconds for `Retry-After`: rounded up, at least 1.
pub(crate) fn whole_seconds(ms: u64) -> u64 {
    ms.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bucket of `rate`, full at `start_ms`, after these takes: each
    /// `(tokens, at_ms, answer)` checked in turn.
    fn after_takes(
        rate: BucketRate,
        start_ms: u64,
        takes: &[(u64, u64, Result<(), u64>)],
    ) -> Bucket {
        let mut bucket = Bucket::full(rate, start_ms);
        for (i, &(tokens, at_ms, answer)) in takes.iter().enumerate() {
            let got = bucket.take(rate, tokens, at_ms);
            assert_eq!(got, answer, "take {i}: {tokens} at {at_ms} ms");
        }
        bucket
    }

    #[test]
    fn a_full_bucket_serves_its_burst_then_refuses_until_refilled() {
        let rate = BucketRate::new(5_000, 5_000);
        let takes = [
            (4_900, 0, Ok(())),
            (100, 0, Ok(())),
            // Empty: 100 tokens come back in 20 ms, which rounds up to 1 s.
            (100, 0, Err(1)),
            (100, 19, Err(1)),
            (100, 20, Ok(())),
            // Nothing taken is nothing refused, even from an empty bucket.
            (0, 20, Ok(())),
        ];
        let bucket = after_takes(rate, 0, &takes);
        assert!(!bucket.is_full(rate, 20));
        assert!(bucket.is_full(rate, 1_020));
    }

    #[test]
    fn retry_after_counts_the_seconds_until_enough_is_back() {
        // 25 tokens at 10 a second: 2.5 s, so 3.
        let takes = [
            (100, 0, Ok(())),
            (25, 0, Err(3)),
            (25, 2_499, Err(1)),
            (25, 2_500, Ok(())),
        ];
        after_takes(BucketRate::new(10, 100), 0, &takes);
    }

    #[test]
    fn a_call_larger_than_the_burst_waits_for_a_full_bucket() {
        let rate = BucketRate::new(10, 50);
        // 50 tokens in debt: one token is back after 5.1 s, so 6; full after 10 s.
        let takes = [
            (1, 0, Ok(())),
            (100, 0, Err(1)),
            (100, 100, Ok(())),
            (1, 100, Err(6)),
        ];
        let bucket = after_takes(rate, 0, &takes);
        assert!(bucket.is_full(rate, 10_100));
    }

    #[test]
    fn time_running_backwards_refills_nothing() {
        let takes = [(1, 5_000, Ok(())), (1, 1_000, Err(1)), (1, 6_000, Ok(()))];
        after_takes(BucketRate::new(1, 1), 5_000, &takes);
    }
}
