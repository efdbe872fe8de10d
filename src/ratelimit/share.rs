//! [`Share`]: one replica's share of a queue's allowance, for one of the
//! queue's two limits (messages pulled; leases settled or extended).
//!
//! # The queue's allowance, and why replicas must share it
//!
//! Cloudflare serves each queue 5,000 pulled messages and 5,000 settled or
//! extended leases a second, whoever asks: every consumer of the queue, in
//! every process, draws on the same two allowances. A call over one is
//! refused whole (429, code 10250) with a `Retry-After` in whole seconds,
//! and no header says how much of the allowance is left. A replica cannot
//! see the others; what it sees is its own refusals.
//!
//! # How a share adapts
//!
//! Each replica paces its calls with a token bucket at its current rate,
//! at most the allowance it is configured with
//! ([`ConsumerBuilder::queue_allowance`](crate::consumer::ConsumerBuilder::queue_allowance),
//! 4,900 a second). With no coordinator and no setting:
//!
//! - **A replica starts at half of it**, doubling every half second until
//!   its first refusal: alone, it is at full speed after half a second and
//!   never refused; joining others, it meets the limit with half the
//!   excess a start at full speed would bring.
//! - **A refusal lowers the rate by a fixed amount**: a tenth of the
//!   allowance (490 a second), or half the rate when that is less, never
//!   below a fiftieth of the allowance. The queue refuses whichever call
//!   comes when its allowance is spent, so a replica that asks more often
//!   is refused more often: a fixed step takes more from the replicas above
//!   an equal share than from those below it, and the shares converge. (A
//!   step in proportion to the rate would keep their ratios as they are.)
//! - **Once per refusal episode**: a refusal of a call sent (an ack or an
//!   extension: reserved) before the last lowering says nothing new (it
//!   went at the pace already lowered for) and lowers nothing: the pulls
//!   already on their way when the first refusal comes would otherwise cut
//!   the rate several times for one excess. Pulls are sent only once the
//!   share allows them, so a lower pace applies at once to every pull not
//!   sent yet.
//! - **Between refusals the rate climbs back**, by a twentieth a second of
//!   what it is below the allowance (at least a hundredth of the allowance
//!   a second), up to the allowance: a replica below an equal share climbs
//!   faster than one above it, so the shares even out between refusals
//!   too; when one replica stops, the others take up its share within
//!   seconds; and the refusals stay rare, as each one removes a tenth of
//!   the allowance of excess.
//! - **A `Retry-After` over a second is kept in full**: the server says its
//!   allowance will not serve this replica before then. One second is the
//!   least the header can say (it rounds up), so it is no more than "now
//!   the allowance is spent", which the lower rate already answers.
//!
//! The queue's own bucket lends a burst (Cloudflare's is not documented;
//! the emulator's is a second of the allowance), so that a combined rate a
//! little over the allowance is found only once that burst is spent, and
//! the time below it refills the burst: the sawtooth between costs almost
//! nothing of the throughput. The figures, measured against the emulator
//! at a 100 ms round trip with Cloudflare's limits, are in BENCHMARKS.md
//! ("Replicas sharing a queue").

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::Bucket;

/// A refusal lowers the rate by this share of the allowance...
const STEP: f64 = 0.10;
/// ...or by this share of the rate, when that is less...
const MOST_OF_RATE: f64 = 0.5;
/// ...never below this share of the allowance (98 a second at the
/// default: about one full pull a second, so that a replica never stops).
const FLOOR: f64 = 0.02;
/// Between refusals, the rate climbs by this share of the allowance a
/// second...
const CLIMB_PER_SECOND: f64 = 0.01;
/// ...or by this share of what it is below the allowance, when that is more.
const CLIMB_OF_GAP_PER_SECOND: f64 = 0.05;
/// A share starts at this part of the allowance...
const START: f64 = 0.5;
/// ...and, until its first refusal, grows this many times a second (doubling
/// every half second): at the whole allowance within half a second when
/// alone, at an empty queue's half when not.
const START_GROWTH_PER_SECOND: f64 = 4.0;
/// The burst, in seconds of the current rate: short, so that a replica
/// does not spend a burst the queue's bucket may not hold for it...
const BURST_SECONDS: f64 = 0.1;
/// The shortest `Retry-After` that is more than "the allowance is spent now".
const HOLD_OVER: Duration = Duration::from_secs(1);

/// One replica's share of one of a queue's allowances.
#[derive(Debug)]
pub(crate) struct Share {
    allowance: f64,
    /// ...but at least this many tokens: one whole call (a full pull).
    least_burst: f64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    rate: f64,
    bucket: Bucket,
    /// When the rate was last lowered: refusals of calls sent before it
    /// were answered by that lowering.
    lowered_at: Option<Instant>,
    /// A `Retry-After` over a second: no call before then.
    held_until: Option<Instant>,
    /// When the rate last climbed.
    climbed_at: Instant,
}

impl Share {
    /// A share that starts at the whole `allowance` a second, with a burst
    /// of at least `least_burst` tokens (one whole call).
    pub(crate) fn new(allowance: u32, least_burst: usize) -> Share {
        let allowance = f64::from(allowance.max(1));
        let least_burst = least_burst.max(1) as f64;
        let now = Instant::now();
        Share {
            allowance,
            least_burst,
            state: Mutex::new(State {
                rate: allowance * START,
                bucket: Bucket::full(burst(allowance, least_burst), allowance * START, now),
                lowered_at: None,
                held_until: None,
                climbed_at: now,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a few arithmetic steps: a poisoned lock is consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `n` tokens; how long to wait before the call may be sent.
    /// For calls that wait their turn once reserved (acks, extensions): a
    /// refusal of one counts from when it was reserved (see
    /// [`Share::refused`]).
    pub(crate) fn reserve(&self, n: usize) -> Duration {
        let now = Instant::now();
        let mut state = self.lock();
        self.climb(&mut state, now);
        let wait = state.bucket.reserve(n as f64, now);
        held(&state, now).map_or(wait, |hold| wait.max(hold))
    }

    /// How long until `n` tokens are there, taking nothing: for a caller
    /// that sends only once it may (the puller), so that a lower pace
    /// applies to every call not sent yet.
    pub(crate) fn wait_for(&self, n: usize) -> Duration {
        let now = Instant::now();
        let mut state = self.lock();
        self.climb(&mut state, now);
        let n = (n as f64).min(state.bucket.capacity);
        let wait = state.bucket.wait_for(n, now);
        held(&state, now).map_or(wait, |hold| wait.max(hold))
    }

    /// Gives back tokens taken for messages a call did not bring or settle.
    pub(crate) fn refund(&self, n: usize) {
        self.lock().bucket.refund(n as f64);
    }

    /// The queue refused a call reserved at `reserved` for this allowance
    /// (429, code 10250), asking to wait `retry_after`: lowers the rate,
    /// once per episode (a call reserved before the last lowering went at
    /// the pace already lowered for). Whether it lowered it.
    pub(crate) fn refused(&self, reserved: Instant, retry_after: Option<Duration>) -> bool {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(wait) = retry_after.filter(|wait| *wait > HOLD_OVER) {
            let until = now + wait;
            state.held_until = Some(state.held_until.map_or(until, |held| held.max(until)));
        }
        if state.lowered_at.is_some_and(|at| reserved < at) {
            return false;
        }
        self.climb(&mut state, now);
        let step = (self.allowance * STEP).min(state.rate * MOST_OF_RATE);
        let rate = (state.rate - step).max(self.allowance * FLOOR);
        self.set_rate(&mut state, rate, now);
        // What the queue saw as too much is spent: start from empty.
        state.bucket.tokens = state.bucket.tokens.min(0.0);
        state.lowered_at = Some(now);
        true
    }

    /// The rate now, in tokens a second.
    pub(crate) fn pace(&self) -> f64 {
        let now = Instant::now();
        let mut state = self.lock();
        self.climb(&mut state, now);
        state.rate
    }

    fn climb(&self, state: &mut State, now: Instant) {
        let elapsed = now.saturating_duration_since(state.climbed_at);
        state.climbed_at = state.climbed_at.max(now);
        if state.rate < self.allowance && !elapsed.is_zero() && state.lowered_at.is_none() {
            // Until the first refusal: doubling every half second.
            let rate = (state.rate * START_GROWTH_PER_SECOND.powf(elapsed.as_secs_f64()))
                .min(self.allowance);
            self.set_rate(state, rate, now);
        } else if state.rate < self.allowance && !elapsed.is_zero() {
            // The further below the allowance, the faster: replicas below
            // an equal share catch up with those above it between refusals.
            let per_second = (self.allowance * CLIMB_PER_SECOND)
                .max(CLIMB_OF_GAP_PER_SECOND * (self.allowance - state.rate));
            let rate = (state.rate + per_second * elapsed.as_secs_f64()).min(self.allowance);
            self.set_rate(state, rate, now);
        }
    }

    fn set_rate(&self, state: &mut State, rate: f64, now: Instant) {
        state.rate = rate;
        state
            .bucket
            .set_rate(rate, burst(rate, self.least_burst), now);
    }
}

/// How long a `Retry-After` still holds every call, if it does.
fn held(state: &State, now: Instant) -> Option<Duration> {
    state
        .held_until
        .filter(|until| *until > now)
        .map(|until| until - now)
}

fn burst(rate: f64, least: f64) -> f64 {
    (rate * BURST_SECONDS).max(least)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[tokio::test(start_paused = true)]
    async fn a_share_starts_at_half_and_doubles_until_its_first_refusal() {
        let share = Share::new(1_000, 100);
        assert!(close(share.pace(), 500.0));
        // A burst of one call (100 > 0.1 s of 500), then 2 ms a token.
        assert_eq!(share.wait_for(100), Duration::ZERO);
        assert_eq!(share.reserve(100), Duration::ZERO);
        assert_eq!(share.wait_for(100), Duration::from_millis(200));
        tokio::time::advance(Duration::from_millis(250)).await;
        let pace = share.pace();
        assert!((707.0..708.0).contains(&pace), "{pace}: 500 × 4^0.25");
        tokio::time::advance(Duration::from_millis(250)).await;
        assert!(close(share.pace(), 1_000.0), "the allowance, no more");
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(close(share.pace(), 1_000.0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_steps_down_once_per_episode_and_climbs_back() {
        let share = Share::new(5_000, 100);
        tokio::time::advance(Duration::from_secs(1)).await;
        let sent = Instant::now();
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(share.refused(sent, Some(Duration::from_secs(1))));
        assert!(close(share.pace(), 4_500.0), "a tenth of the allowance");
        // Another call sent before the lowering: already answered for.
        assert!(!share.refused(sent, Some(Duration::from_secs(1))));
        assert!(close(share.pace(), 4_500.0));
        // One sent after it lowers again.
        let later = Instant::now();
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(share.refused(later, None));
        assert!(close(share.pace(), 4_005.0), "4,500 + 5 climbed, - 500");
        // 50 a second each second (a hundredth of the allowance: more than
        // a twentieth of the 995 below it), back to the allowance.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(close(share.pace(), 4_505.0));
        tokio::time::advance(Duration::from_secs(60)).await;
        assert!(close(share.pace(), 5_000.0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_share_far_below_the_allowance_climbs_faster() {
        let (low, high) = (Share::new(1_000, 10), Share::new(1_000, 10));
        tokio::time::advance(Duration::from_secs(1)).await;
        for (share, refusals) in [(&low, 8), (&high, 1)] {
            for _ in 0..refusals {
                let sent = Instant::now();
                tokio::time::advance(Duration::from_micros(1)).await;
                share.refused(sent, None);
            }
        }
        let before = (low.pace(), high.pace());
        tokio::time::advance(Duration::from_millis(100)).await;
        let climbed = (low.pace() - before.0, high.pace() - before.1);
        // 5 % of 800 and of 100 below it, a second: 4 and 1 in 100 ms.
        assert!(
            (climbed.0 - 4.0).abs() < 0.05,
            "{climbed:?} from {before:?}"
        );
        assert!(
            (climbed.1 - 1.0).abs() < 0.05,
            "{climbed:?} from {before:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_small_rate_steps_by_half_and_never_below_the_floor() {
        let share = Share::new(1_000, 10);
        for _ in 0..12 {
            let sent = Instant::now();
            tokio::time::advance(Duration::from_millis(1)).await;
            share.refused(sent, None);
        }
        let pace = share.pace();
        assert!((20.0..20.2).contains(&pace), "{pace}: the floor is 2 %");
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_after_over_a_second_holds_every_call() {
        let share = Share::new(1_000, 100);
        let sent = Instant::now();
        share.refused(sent, Some(Duration::from_secs(3)));
        assert_eq!(share.reserve(1), Duration::from_secs(3));
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(share.reserve(1), Duration::ZERO);
        // One second is "spent now": the lower rate answers it, not a hold.
        let sent = Instant::now();
        tokio::time::advance(Duration::from_millis(1)).await;
        share.refused(sent, Some(Duration::from_secs(1)));
        let wait = share.reserve(1);
        assert!(wait < Duration::from_millis(10), "{wait:?}");
    }
}
