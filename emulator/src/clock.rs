//! Time for the emulator: the system clock, a clock the tests move by hand,
//! or one that follows tokio's clock (paused in tests).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A clock that only moves when told to, so tests can expire leases and
/// delays without sleeping.
///
/// ```
/// use std::time::Duration;
/// use cf_queues_emulator::ManualClock;
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

/// A clock that follows tokio's clock: `start_ms` Unix milliseconds when it
/// was made, plus the time [`tokio::time::Instant`] has moved since.
///
/// On tokio's paused clock (`#[tokio::test(start_paused = true)]`, which
/// needs tokio's `test-util` feature), `tokio::time::advance` and the
/// automatic advance of an idle runtime then move the emulator's time too:
/// one clock drives the client's timers (backoff, lease keeping, deadlines)
/// and the emulator's lease expiries and delays. Make it inside the runtime
/// whose clock it should follow, and run the emulator on that runtime.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// use cf_queues_emulator::TokioClock;
///
/// let clock = TokioClock::new(1_700_000_000_000);
/// tokio::time::advance(Duration::from_secs(30)).await;
/// assert_eq!(clock.now_ms(), 1_700_000_030_000);
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start_ms: u64,
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading `start_ms` Unix milliseconds now, and moving with
    /// tokio's clock from here on.
    pub fn new(start_ms: u64) -> TokioClock {
        TokioClock {
            start_ms,
            origin: tokio::time::Instant::now(),
        }
    }

    /// A clock reading the current system time now, and moving with
    /// tokio's clock from here on.
    pub fn starting_now() -> TokioClock {
        TokioClock::new(system_now_ms())
    }

    /// The current reading, in Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.origin);
        let elapsed = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.start_ms.saturating_add(elapsed)
    }
}

/// Where the emulator's time comes from; see [`Emulator::clock`](super::Emulator::clock).
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use cf_queues_emulator::{Emulator, EmulatorClock, ManualClock};
///
/// let by_hand = Emulator::new().clock(ManualClock::new(1_700_000_000_000)).start().await?;
/// let on_tokio_time = Emulator::new().clock(EmulatorClock::tokio(1_700_000_000_000)).start().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum EmulatorClock {
    /// The system clock (the default).
    #[default]
    System,
    /// A clock moved by hand.
    Manual(ManualClock),
    /// A clock that follows tokio's clock.
    Tokio(TokioClock),
}

impl EmulatorClock {
    /// A [`TokioClock`] reading `start_ms` Unix milliseconds now.
    pub fn tokio(start_ms: u64) -> EmulatorClock {
        EmulatorClock::Tokio(TokioClock::new(start_ms))
    }

    /// The current reading, in Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        match self {
            EmulatorClock::System => system_now_ms(),
            EmulatorClock::Manual(clock) => clock.now_ms(),
            EmulatorClock::Tokio(clock) => clock.now_ms(),
        }
    }
}

impl From<ManualClock> for EmulatorClock {
    fn from(clock: ManualClock) -> EmulatorClock {
        EmulatorClock::Manual(clock)
    }
}

impl From<TokioClock> for EmulatorClock {
    fn from(clock: TokioClock) -> EmulatorClock {
        EmulatorClock::Tokio(clock)
    }
}

fn system_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Unix milliseconds as an RFC 3339 timestamp in UTC with milliseconds,
/// such as `2024-03-20T16:09:14.154Z`: the form of Cloudflare's
/// `created_on` and `started_at` strings (timestamps of years past 9999,
/// which only a hand-set clock reaches, get more year digits).
pub(crate) fn rfc3339_ms(unix_ms: u64) -> String {
    let millis = unix_ms % 1000;
    let seconds = unix_ms / 1000;
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (hour, minute, second) = (rest / 3600, rest % 3600 / 60, rest % 60);
    let (year, month, day) = civil_date(days);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
}

/// The proleptic Gregorian date `days` after 1970-01-01, counted in eras of
/// 400 years (146,097 days), after which the calendar repeats exactly.
fn civil_date(days: u64) -> (u64, u64, u64) {
    // Shifted to start on 0000-03-01, so that the leap day ends each year.
    let days = days + 719_468;
    let era = days / 146_097;
    let day_of_era = days % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // 0 = March
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_rfc3339() {
        for (ms, expected) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (1_710_950_954_154, "2024-03-20T16:09:14.154Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (951_868_799_999, "2000-02-29T23:59:59.999Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ] {
            assert_eq!(rfc3339_ms(ms), expected, "{ms}");
        }
        // Far beyond any real clock: still a date, never a panic.
        assert!(rfc3339_ms(u64::MAX).ends_with('Z'));
    }

    #[tokio::test(start_paused = true)]
    async fn the_tokio_clock_follows_paused_time() {
        let clock = EmulatorClock::tokio(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        tokio::time::advance(Duration::from_millis(2_500)).await;
        assert_eq!(clock.now_ms(), 3_500);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(clock.now_ms(), 63_500, "auto-advance moves it too");
    }
}
