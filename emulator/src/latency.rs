//! [`Latency`]: the network round trip the emulator puts in front of every
//! answer, so that clients can be tested and measured at a distance.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// A round trip the emulator adds to every request, on tokio's clock.
///
/// Each request waits half a round trip before it is served (the request
/// travelling) and the rest before its answer is sent (the answer
/// travelling), so that a lease taken by a pull starts half a round trip
/// before the client sees it, as it would at Cloudflare. The first request
/// on a new connection waits one round trip more, for the connection's
/// set-up. Each round trip is `round_trip` plus a jitter drawn uniformly
/// from `[0, jitter]`.
///
/// The wait runs on tokio's clock, so on paused time
/// (`#[tokio::test(start_paused = true)]`) a test of a client at 100 ms
/// takes no real time and stays deterministic without jitter.
///
/// ```
/// use std::time::Duration;
/// use cf_queues_emulator::Latency;
///
/// let far = Latency::round_trip(Duration::from_millis(100))
///     .with_jitter(Duration::from_millis(20));
/// assert_eq!(far.jitter(), Duration::from_millis(20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct Latency {
    round_trip: Duration,
    jitter: Duration,
}

impl Latency {
    /// A fixed round trip, without jitter.
    pub fn round_trip(round_trip: Duration) -> Latency {
        Latency {
            round_trip,
            jitter: Duration::ZERO,
        }
    }

    /// Adds up to `jitter` to each round trip, drawn uniformly.
    pub fn with_jitter(mut self, jitter: Duration) -> Latency {
        self.jitter = jitter;
        self
    }

    /// The fixed part of each round trip.
    pub fn fixed(&self) -> Duration {
        self.round_trip
    }

    /// The most a round trip's jitter adds.
    pub fn jitter(&self) -> Duration {
        self.jitter
    }
}

/// How long one request waits: before it is served, and before its answer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wait {
    pub before: Duration,
    pub after: Duration,
}

/// The latency in force (switchable while the emulator runs) and the
/// jitter's random numbers.
#[derive(Debug)]
pub(crate) struct LatencyState {
    current: Mutex<Option<Latency>>,
    /// A SplitMix64 sequence; the jitter needs spread, not secrecy.
    seed: AtomicU64,
}

impl LatencyState {
    pub(crate) fn new(latency: Option<Latency>) -> LatencyState {
        let seed = std::collections::hash_map::RandomState::new().hash_one(0u8);
        LatencyState {
            current: Mutex::new(latency),
            seed: AtomicU64::new(seed),
        }
    }

    pub(crate) fn set(&self, latency: Option<Latency>) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = latency;
    }

    pub(crate) fn get(&self) -> Option<Latency> {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The wait of one request; `new_connection` when it is the first on
    /// its connection. `None` without a latency.
    pub(crate) fn wait(&self, new_connection: bool) -> Option<Wait> {
        let latency = self.get()?;
        let trip = self.one_round_trip(latency);
        let setup = if new_connection {
            self.one_round_trip(latency)
        } else {
            Duration::ZERO
        };
        let half = trip / 2;
        Some(Wait {
            before: setup.saturating_add(half),
            after: trip.saturating_sub(half),
        })
    }

    fn one_round_trip(&self, latency: Latency) -> Duration {
        let jitter = u64::try_from(latency.jitter.as_nanos()).unwrap_or(u64::MAX);
        if jitter == 0 {
            return latency.round_trip;
        }
        let drawn = self.next_random() % jitter.saturating_add(1);
        latency
            .round_trip
            .saturating_add(Duration::from_nanos(drawn))
    }

    fn next_random(&self) -> u64 {
        const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut z = self
            .seed
            .fetch_add(GAMMA, Ordering::Relaxed)
            .wrapping_add(GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_waits_half_each_way_and_a_new_connection_one_more() {
        let state = LatencyState::new(None);
        assert_eq!(state.wait(true), None);
        state.set(Some(Latency::round_trip(Duration::from_millis(101))));
        let reused = state.wait(false).expect("a latency is set");
        assert_eq!(reused.before, Duration::from_micros(50_500));
        assert_eq!(reused.before + reused.after, Duration::from_millis(101));
        let fresh = state.wait(true).expect("a latency is set");
        assert_eq!(fresh.before + fresh.after, Duration::from_millis(202));
        assert_eq!(fresh.after, reused.after);
    }

    #[test]
    fn jitter_stays_within_its_bound_and_varies() {
        let rtt = Duration::from_millis(100);
        let jitter = Duration::from_millis(20);
        let state = LatencyState::new(Some(Latency::round_trip(rtt).with_jitter(jitter)));
        let trips: Vec<Duration> = (0..1_000)
            .filter_map(|_| state.wait(false))
            .map(|w| w.before + w.after)
            .collect();
        assert_eq!(trips.len(), 1_000);
        assert!(trips.iter().all(|t| *t >= rtt && *t <= rtt + jitter));
        let (min, max) = (trips.iter().min(), trips.iter().max());
        assert!(min < Some(&(rtt + Duration::from_millis(2))), "{min:?}");
        assert!(max > Some(&(rtt + Duration::from_millis(18))), "{max:?}");
    }
}
