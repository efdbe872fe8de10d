//! The one doubling backoff: the client's retry waits, the consumer's waits
//! after empty pulls and failing calls, and [`RetryDelay`] all compute their
//! delays here.
//!
//! [`RetryDelay`]: crate::consumer::RetryDelay

use std::hash::{BuildHasher as _, Hasher as _};
use std::time::Duration;

/// `initial` doubled `doublings` times, at most `max`. Saturating, so that
/// a `Duration::MAX` setting or a count in the millions never overflows.
pub(crate) fn doubling(initial: Duration, max: Duration, doublings: u32) -> Duration {
    let mut delay = initial;
    for _ in 0..doublings.min(64) {
        if delay >= max {
            break;
        }
        delay = delay.saturating_mul(2);
    }
    delay.min(max)
}

/// A factor in [0.75, 1], from the standard library's random hash keys:
/// spreads the retries of many clients (the official SDKs' jitter).
pub(crate) fn jitter() -> f64 {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    0.75 + 0.25 * (random >> 11) as f64 / (1u64 << 53) as f64
}

/// A wait that grows while a condition lasts (empty pulls, failing calls,
/// a service that is down) and starts over when it ends: `initial`, then
/// doubling up to `max`, without jitter. Saturating: a `Duration::MAX`
/// setting never overflows.
///
/// The consumer's waits use it, and so does `cfq relay`'s pause while its
/// service is down; pair it with [`server_wait`](crate::retry::server_wait)
/// when a server may ask for a longer wait.
///
/// ```
/// use std::time::Duration;
/// use cf_queues::retry::Backoff;
///
/// let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(4));
/// let waits: Vec<u64> = (0..4).map(|_| backoff.next_wait().as_secs()).collect();
/// assert_eq!(waits, [1, 2, 4, 4]);
/// backoff.reset();
/// assert_eq!(backoff.next_wait(), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub(crate) initial: Duration,
    pub(crate) max: Duration,
    /// Waits handed out since the last reset.
    waits: u32,
}

impl Backoff {
    /// A backoff from `initial` up to `max` (at least `initial`).
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max: max.max(initial),
            waits: 0,
        }
    }

    /// The next wait: `initial`, then doubling up to `max`.
    pub fn next_wait(&mut self) -> Duration {
        let wait = doubling(self.initial, self.max, self.waits);
        self.waits = self.waits.saturating_add(1);
        wait
    }

    /// Starts over: the next wait is `initial` again.
    pub fn reset(&mut self) {
        self.waits = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn doubling_caps_and_saturates() {
        assert_eq!(doubling(S, 60 * S, 0), S);
        assert_eq!(doubling(S, 60 * S, 3), 8 * S);
        assert_eq!(doubling(S, 60 * S, 6), 60 * S);
        assert_eq!(doubling(S, 60 * S, u32::MAX), 60 * S);
        assert_eq!(doubling(Duration::MAX, Duration::MAX, 5), Duration::MAX);
        // The cap wins over the start.
        assert_eq!(doubling(5 * S, S, 4), S);
        assert_eq!(doubling(Duration::ZERO, Duration::MAX, 40), Duration::ZERO);
    }

    #[test]
    fn jitter_stays_in_its_band() {
        for _ in 0..1000 {
            let factor = jitter();
            assert!((0.75..=1.0).contains(&factor), "{factor}");
        }
    }

    #[test]
    fn a_backoff_doubles_to_its_cap_and_starts_over_on_reset() {
        let mut backoff = Backoff::new(100 * Duration::from_millis(1), S);
        let waits: Vec<_> = (0..6).map(|_| backoff.next_wait().as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        backoff.reset();
        assert_eq!(backoff.next_wait().as_millis(), 100);
    }
}
