//! Instants that settings of `Duration::MAX` cannot overflow, and sleeps
//! that may last forever: the consumer's, the producer's and the pacer's timers.
//!
//! `Instant + Duration` panics past what the clock can represent, and a
//! user may well say "never" with `Duration::MAX`.

use std::time::Duration;

use tokio::time::Instant;

/// `wait` after `at`, or `None` ("never") when that is past what the clock
/// can represent.
pub(crate) fn after(at: Instant, wait: Duration) -> Option<Instant> {
    at.checked_add(wait)
}

/// `wait` after `at`, or a time decades away when that is past what the
/// clock can represent: for expiries, which must stay comparable.
pub(crate) fn after_or_far(at: Instant, wait: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 3600);
    // The monotonic clock counts from boot in 64-bit seconds: 30 years fit.
    after(at, wait).or_else(|| after(at, FAR)).unwrap_or(at)
}

/// Sleeps until `at`, or forever.
#[cfg(any(feature = "consumer", feature = "producer"))]
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
