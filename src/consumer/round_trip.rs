//! [`RoundTrip`]: the round trip the consumer observes, and the extension
//! margin and call deadlines that follow from it.
//!
//! A lease is extended a margin before it ends; the margin must cover the
//! extension's round trip (and a retry of it), which is tens of
//! milliseconds on one network and hundreds on another. The configured
//! margin is a floor; the observed round trip raises it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The margin covers this many round trips: the extension, a retry of it,
/// and room for a slow answer.
const TRIPS_IN_MARGIN: u32 = 4;
/// A slower sample counts at once; a faster one pulls the estimate down by
/// this share only, so that one quick answer does not shrink the margin.
const DECAY: f64 = 0.9;

/// A decaying maximum of the calls' durations.
#[derive(Debug, Default)]
pub(crate) struct RoundTrip {
    micros: AtomicU64,
    warned: AtomicBool,
}

impl RoundTrip {
    /// A call took `took`.
    pub(crate) fn observe(&self, took: Duration) {
        let sample = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let _ = self
            .micros
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(sample.max((old as f64 * DECAY) as u64))
            });
    }

    /// The estimate now.
    pub(crate) fn estimate(&self) -> Duration {
        Duration::from_micros(self.micros.load(Ordering::Relaxed))
    }

    /// The margin to extend leases by: the configured one, raised to cover
    /// [`TRIPS_IN_MARGIN`] round trips, and at most half the visibility
    /// timeout (an extension due sooner after the last would be wasted).
    /// Warns once when the visibility timeout is too short for that.
    pub(crate) fn margin(&self, configured: Duration, visibility: Duration) -> Duration {
        let wanted = self.estimate().saturating_mul(TRIPS_IN_MARGIN);
        let half = visibility / 2;
        if wanted > half && !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                round_trip_ms = self.estimate().as_millis() as u64,
                visibility_timeout_ms = visibility.as_millis() as u64,
                "the visibility timeout is short for the observed round trip: leases may run out before their extensions land"
            );
        }
        configured
            .max(wanted.min(half))
            .max(Duration::from_millis(1))
    }

    /// The latest an extension call may be sent before its lease ends:
    /// half the margin, so that a retry still lands in time.
    pub(crate) fn extension_deadline(margin: Duration) -> Duration {
        (margin / 2).max(Duration::from_millis(1))
    }

    /// How long one extension call may take before it is given up and
    /// tried again: [`RoundTrip::extension_deadline`], but never less than
    /// two observed round trips while the lease lasts that long. A lease
    /// short for the round trip leaves no room for a retry, and a deadline
    /// under the round trip would give up every call, and the lease with it.
    pub(crate) fn call_deadline(&self, margin: Duration, lease_left: Duration) -> Duration {
        let room = self.estimate().saturating_mul(2).min(lease_left);
        Self::extension_deadline(margin).max(room)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_follows_the_slowest_recent_round_trip() {
        let rtt = RoundTrip::default();
        let visibility = Duration::from_secs(30);
        let configured = Duration::from_secs(10);
        assert_eq!(rtt.margin(configured, visibility), configured);
        rtt.observe(Duration::from_secs(3));
        assert_eq!(rtt.margin(configured, visibility), Duration::from_secs(12));
        rtt.observe(Duration::from_millis(10));
        assert_eq!(rtt.estimate(), Duration::from_millis(2_700));
        rtt.observe(Duration::from_secs(20));
        assert_eq!(
            rtt.margin(configured, visibility),
            Duration::from_secs(15),
            "at most half"
        );
        assert_eq!(
            RoundTrip::extension_deadline(Duration::from_secs(10)),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn a_call_may_take_two_round_trips_while_the_lease_lasts() {
        let ms = Duration::from_millis;
        let rtt = RoundTrip::default();
        assert_eq!(rtt.call_deadline(ms(500), ms(500)), ms(250));
        rtt.observe(ms(400));
        // 1 s leases at 400 ms: half the margin would give up every call.
        assert_eq!(rtt.call_deadline(ms(500), ms(500)), ms(500));
        assert_eq!(rtt.call_deadline(ms(500), ms(2_000)), ms(800));
        assert_eq!(rtt.call_deadline(ms(10_000), ms(10_000)), ms(5_000));
    }
}
