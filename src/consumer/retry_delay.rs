//! [`RetryDelay`]: the user's knob for how long a failed message waits
//! before it is delivered again.

use std::time::Duration;

use crate::backoff;

/// How long a message waits before it is delivered again after a failed or
/// retried attempt, keyed on its `attempts`.
///
/// The default is exponential: 1 s after the first attempt, doubling each
/// attempt, at most 5 minutes. Delays are sent in whole seconds (rounded
/// up) and capped at the API's 24 hours.
///
/// ```
/// use std::time::Duration;
/// use cf_queues::consumer::RetryDelay;
///
/// let policy = RetryDelay::exponential(Duration::from_secs(2), Duration::from_secs(60));
/// assert_eq!(policy.delay_for(1), Duration::from_secs(2));
/// assert_eq!(policy.delay_for(3), Duration::from_secs(8));
/// assert_eq!(policy.delay_for(30), Duration::from_secs(60));
/// assert_eq!(RetryDelay::none().delay_for(5), Duration::ZERO);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct RetryDelay {
    initial: Duration,
    max: Duration,
}

impl Default for RetryDelay {
    fn default() -> Self {
        RetryDelay::exponential(Duration::from_secs(1), Duration::from_secs(300))
    }
}

impl RetryDelay {
    /// `initial` after the first attempt, doubling with each attempt, at most `max`.
    pub fn exponential(initial: Duration, max: Duration) -> RetryDelay {
        RetryDelay {
            initial,
            max: max.max(initial),
        }
    }

    /// The same delay whatever the attempt.
    pub fn fixed(delay: Duration) -> RetryDelay {
        // Doubling capped at the start: the same delay every time.
        RetryDelay {
            initial: delay,
            max: delay,
        }
    }

    /// Retried messages are visible again at once.
    pub fn none() -> RetryDelay {
        RetryDelay::fixed(Duration::ZERO)
    }

    /// The delay after a message's `attempts`-th delivery failed (1-based).
    pub fn delay_for(&self, attempts: u32) -> Duration {
        backoff::doubling(self.initial, self.max, attempts.saturating_sub(1))
    }
}
