//! [`Budget`]: the consumer's pacing to the queue's per-queue limits, one
//! for messages pulled and one for leases settled or extended.
//!
//! Cloudflare limits each queue to 5,000 of each a second, refusing a call
//! over it whole with 429 (code 10250). A refusal costs a round trip and a
//! `Retry-After` of about a second, so the consumer keeps below the limit
//! instead of finding it: each call reserves its tokens before it is sent,
//! and waits while the budget is spent.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How much of a second the budget may spend at once: half, so that a
/// consumer starts at full speed, while the server's bucket (a whole second
/// of burst, refilling faster than this budget) always holds more than this
/// one and absorbs the bunching of a jittery network.
const BURST_SECONDS: f64 = 0.5;
/// After a 10250, the rate drops to this share of what it was...
const LOWERED: f64 = 0.8;
/// ...never below this share of the configured rate...
const FLOOR: f64 = 0.2;
/// ...and climbs back by this share of the configured rate each second
/// without another.
const RECOVERY_PER_SECOND: f64 = 0.02;

/// A token bucket that lends: a reservation is always granted, and the
/// caller waits for the time the bucket takes to refill past it, so that
/// calls queue in time order and never spend more than the rate.
#[derive(Debug)]
pub(crate) struct Budget {
    configured: f64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    rate: f64,
    tokens: f64,
    at: Instant,
}

impl Budget {
    pub(crate) fn new(per_second: u32) -> Budget {
        let configured = f64::from(per_second.max(1));
        Budget {
            configured,
            state: Mutex::new(State {
                rate: configured,
                tokens: burst(configured),
                at: Instant::now(),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Every update is a few arithmetic steps: a poisoned lock is consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `n` tokens; how long to wait before the call may be sent.
    pub(crate) fn reserve(&self, n: usize) -> Duration {
        let mut state = self.state();
        let now = Instant::now();
        state.refill(self.configured, now);
        state.tokens -= n as f64;
        if state.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((-state.tokens / state.rate).min(3_600.0))
        }
    }

    /// Gives back tokens taken for messages a pull did not return.
    pub(crate) fn refund(&self, n: usize) {
        let mut state = self.state();
        let cap = burst(state.rate);
        state.tokens = (state.tokens + n as f64).min(cap);
    }

    /// The queue refused a call for its limit: spend less for a while.
    pub(crate) fn lower(&self) {
        let mut state = self.state();
        state.rate = (state.rate * LOWERED).max(self.configured * FLOOR);
        // What the server saw as too much is spent: start from empty.
        state.tokens = state.tokens.min(0.0);
    }

    /// The rate now, in tokens a second.
    #[cfg(test)]
    fn rate(&self) -> f64 {
        self.state().rate
    }
}

impl State {
    fn refill(&mut self, configured: f64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        if self.rate < configured {
            self.rate = (self.rate + configured * RECOVERY_PER_SECOND * elapsed).min(configured);
        }
        self.tokens = (self.tokens + self.rate * elapsed).min(burst(self.rate));
    }
}

fn burst(rate: f64) -> f64 {
    // At least one full pull, or a budget below 500 a second could never
    // serve one at once.
    (rate * BURST_SECONDS).max(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn reservations_queue_at_the_rate() {
        let budget = Budget::new(1_000);
        // 500 tokens of burst, then a millisecond per token.
        assert_eq!(budget.reserve(500), Duration::ZERO);
        assert_eq!(budget.reserve(100), Duration::from_millis(100));
        assert_eq!(budget.reserve(100), Duration::from_millis(200));
        tokio::time::advance(Duration::from_millis(200)).await;
        assert_eq!(budget.reserve(0), Duration::ZERO);
        budget.refund(100);
        assert_eq!(budget.reserve(100), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_lowers_the_rate_which_recovers() {
        let budget = Budget::new(5_000);
        budget.lower();
        assert!((budget.rate() - 4_000.0).abs() < 1e-6);
        for _ in 0..20 {
            budget.lower();
        }
        assert!((budget.rate() - 1_000.0).abs() < 1e-6, "floored");
        tokio::time::advance(Duration::from_secs(10)).await;
        let _ = budget.reserve(0);
        assert!((budget.rate() - 2_000.0).abs() < 1e-6);
        tokio::time::advance(Duration::from_secs(60)).await;
        let _ = budget.reserve(0);
        assert!((budget.rate() - 5_000.0).abs() < 1e-6);
    }
}
