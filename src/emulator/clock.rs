//! Time for the emulator: the system clock, or a clock the tests move by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A clock that only moves when told to, so tests can expire leases and
/// delays without sleeping.
///
/// ```
/// use std::time::Duration;
/// use cf_queues::emulator::ManualClock;
///
/// let clock = ManualClock::new(1_700_000_000_000);
/// clock.advance(Duration::from_secs(30));
/// assert_eq!(clock.now_ms(), 1_700_000_030_000);
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    now_ms: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock standing at `start_ms` Unix milliseconds.
    pub fn new(start_ms: u64) -> ManualClock {
        ManualClock {
            now_ms: Arc::new(AtomicU64::new(start_ms)),
        }
    }

    /// A clock standing at the current system time.
    pub fn starting_now() -> ManualClock {
        ManualClock::new(system_now_ms())
    }

    /// Moves the clock forward (saturating at `u64::MAX` milliseconds).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        let _ = self
            .now_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by))
            });
    }

    /// The current reading, in Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

/// The emulator's source of time.
#[derive(Debug, Clone, Default)]
pub(crate) enum Clock {
    #[default]
    System,
    Manual(ManualClock),
}

impl Clock {
    pub(crate) fn now_ms(&self) -> u64 {
        match self {
            Clock::System => system_now_ms(),
            Clock::Manual(clock) => clock.now_ms(),
        }
    }
}

fn system_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
