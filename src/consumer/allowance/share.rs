//! [`AllowanceShare`]: one replica's share of a queue's allowance, for one of the
//! queue's two limits (messages pulled; leases settled or extended).
//!
//! # The queue's allowance, and why replicas must share it
//!
//! The queue's limit: Cloudflare serves each queue 5,000 pulled messages
//! and 5,000 settled or extended leases a second, whoever asks: every
//! consumer of the queue, in every process, draws on the same two. A call
//! over one is refused whole (429, code 10250) with a `Retry-After` in
//! whole seconds, and no header says how much is left. The replicas aim
//! under it together at the queue's allowance, each at its share; a
//! replica cannot see the others, and what it sees is its own refusals
//! and the backlog count.
//!
//! # How a share adapts
//!
//! Each replica paces its calls with a token bucket at its current rate,
//! at most the allowance it is configured with
//! ([`ConsumerBuilder::queue_allowance`](crate::consumer::ConsumerBuilder::queue_allowance),
//! 4,900 a second). With no coordinator and no setting:
//!
//! - **A replica's pulls start at a quarter of it** (its acks and
//!   extensions at half), doubling every half second until it reads the
//!   backlog's signal or meets its first refusal: alone, it is at full
//!   speed within a second.
//! - **While the backlog's signal is read and trusted** (pulls only; see
//!   [`backlog`](super::backlog)): every pull answer's backlog count
//!   says how fast the queue's consumers take messages all together, and
//!   gives every replica the same price; each replica's rate follows
//!   `dr/dt = a − price · r`, with `a` 3 % of the queue's limit a second.
//!   Every replica climbs by the same `a` and gives back in proportion to
//!   its rate, so the shares meet (a share far from `a / price` comes back
//!   to it in about `share / a` seconds: 8 s at a quarter of the limit),
//!   and the price settles where the replicas together take 95.5 % of the
//!   queue's limit, whether there are two or thirty. All of them slow down
//!   as soon as they together go over it, before any refusal: there is
//!   little left to refuse. A refusal keeps four fifths of the rate.
//! - **Without the signal** (leases always; pulls while the count is
//!   distrusted or not given) the share goes by refusals alone. **A
//!   refusal lowers the rate by a fixed amount**: a tenth of the
//!   allowance (490 a second), or half the rate when that is less. The
//!   queue refuses whichever call comes when its limit is spent, so a
//!   replica that asks more often is refused more often: a fixed step
//!   takes more from the replicas above an equal share than from those
//!   below it, and the shares converge (a step in proportion to the rate
//!   would keep their ratios as they are). **Between refusals the rate
//!   climbs back**, by a twentieth a second of what it is below the
//!   allowance (at least a hundredth of the allowance a second), so a
//!   replica below an equal share climbs faster than one above it. Each
//!   replica learns only from its own refusals, so these rules leave more
//!   refused the more replicas there are (see the figures).
//! - Either way, never below a fiftieth of the allowance, and **once per
//!   refusal episode**: a refusal of a call sent (an ack or an extension:
//!   reserved) before the last lowering says nothing new (it went at the
//!   pace already lowered for) and lowers nothing: the pulls already on
//!   their way when the first refusal comes would otherwise cut the rate
//!   several times for one excess. Pulls are sent only once the share
//!   allows them, so a lower pace applies at once to every pull not sent
//!   yet.
//! - **A `Retry-After` over a second is kept in full**: the server says its
//!   limit will not serve this replica before then. One second is the
//!   least the header can say (it rounds up), so it is no more than "now
//!   the limit is spent", which the lower rate already answers.
//!
//! Why the signal and not refusals alone: at 1 % of about 100 requests a
//! second, eight replicas meet a refusal each every eight seconds or more,
//! too few for every replica to learn its share from; and the backlog
//! count, which every replica reads in every pull answer, is the only
//! figure they all see. It is the consumers' pace only while nothing is
//! pushed meanwhile (a queue being drained): pushes make the count fall
//! slower than the replicas take, the replicas meet the limit again and
//! again, and the signal is distrusted for a minute at a time. The
//! figures of both, measured against the emulator at a 100 ms round trip
//! with Cloudflare's limits, are in BENCHMARKS.md ("Replicas sharing a
//! queue").

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::backlog::Fall;
use crate::bucket::Bucket;
use crate::token_budget::server_wait_ends;

/// Without the backlog's signal, a refusal lowers the rate by this share
/// of the allowance...
const STEP: f64 = 0.10;
/// ...or by this share of the rate, when that is less...
const MOST_OF_RATE: f64 = 0.5;
/// ...never below this share of the allowance (98 a second at the
/// default: about one full pull a second, so that a replica never stops).
const FLOOR: f64 = 0.02;
/// Without the signal, between refusals, the rate climbs by this share of
/// the allowance a second...
const CLIMB_PER_SECOND: f64 = 0.01;
/// ...or by this share of what it is below the allowance, when that is more.
const CLIMB_OF_GAP_PER_SECOND: f64 = 0.05;
/// With the signal, every replica climbs by this share of the queue's
/// limit a second (the `a` of the backlog module's docs): the larger, the
/// sooner unequal shares meet (in about `share / a` seconds), the more the
/// replicas give back together at the price.
const SHARED_CLIMB_PER_SECOND: f64 = 0.03;
/// With the signal, a refusal keeps this share of the rate.
const KEPT_AFTER_REFUSAL: f64 = 0.8;
/// A share of the leases starts at this part of the allowance...
const START: f64 = 0.5;
/// ...and one of the pulls at this part: replicas started together (a
/// deployment) add this much each before they read the backlog's signal
/// (half a second); four at half the allowance would spend the queue's
/// burst at once.
const START_OF_PULLS: f64 = 0.25;
/// ...and, until its first refusal or the signal, grows this many times a
/// second (doubling every half second).
const START_GROWTH_PER_SECOND: f64 = 4.0;
/// The burst, in seconds of the current rate: short, so that a replica
/// does not spend a burst the queue's bucket may not hold for it...
const BURST_SECONDS: f64 = 0.1;
/// The shortest `Retry-After` that is more than "the limit is spent now".
const HOLD_OVER: Duration = Duration::from_secs(1);

/// One replica's share of one of a queue's allowances.
#[derive(Debug)]
pub(crate) struct AllowanceShare {
    allowance: f64,
    /// The queue's limit, which the replicas aim under together.
    limit: f64,
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
    /// When the rate last moved.
    moved_at: Instant,
    /// The backlog count's fall (pulls only), and the price it gives.
    fall: Fall,
}

impl AllowanceShare {
    /// A share of the leases settled or extended: by refusals alone,
    /// starting at half the `allowance`, with a burst of at least
    /// `least_burst` tokens (one whole call).
    pub(crate) fn new(allowance: u32, least_burst: usize) -> AllowanceShare {
        AllowanceShare::starting(allowance, allowance, least_burst, START)
    }

    /// A share of the messages pulled from a queue whose limit is `limit`:
    /// by the backlog's signal while it is trusted ([`AllowanceShare::observe`]).
    pub(crate) fn of_pulls(allowance: u32, limit: u32, least_burst: usize) -> AllowanceShare {
        AllowanceShare::starting(allowance, limit, least_burst, START_OF_PULLS)
    }

    fn starting(allowance: u32, limit: u32, least_burst: usize, start: f64) -> AllowanceShare {
        let allowance = f64::from(allowance.max(1));
        let least_burst = least_burst.max(1) as f64;
        let now = Instant::now();
        AllowanceShare {
            allowance,
            limit: f64::from(limit.max(1)),
            least_burst,
            state: Mutex::new(State {
                rate: allowance * start,
                bucket: Bucket::full(burst(allowance, least_burst), allowance * start, now),
                lowered_at: None,
                held_until: None,
                moved_at: now,
                fall: Fall::default(),
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
    /// [`AllowanceShare::refused`]).
    pub(crate) fn reserve(&self, n: usize) -> Duration {
        let now = Instant::now();
        let mut state = self.lock();
        self.moved(&mut state, now);
        let wait = state.bucket.reserve(n as f64, now);
        held(&state, now).map_or(wait, |hold| wait.max(hold))
    }

    /// How long until `n` tokens are there, taking nothing: for a caller
    /// that sends only once it may (the puller), so that a lower pace
    /// applies to every call not sent yet.
    pub(crate) fn wait_for(&self, n: usize) -> Duration {
        let now = Instant::now();
        let mut state = self.lock();
        self.moved(&mut state, now);
        let n = (n as f64).min(state.bucket.capacity);
        let wait = state.bucket.wait_for(n, now);
        held(&state, now).map_or(wait, |hold| wait.max(hold))
    }

    /// Gives back tokens taken for messages a call did not bring or settle.
    pub(crate) fn refund(&self, n: usize) {
        self.lock().bucket.refund(n as f64);
    }

    /// A pull answered at `at` (half way through its round trip) brought
    /// `got` messages and said the queue holds `backlog`.
    pub(crate) fn observe(&self, at: Instant, backlog: u64, got: usize) {
        let now = Instant::now();
        let mut state = self.lock();
        // The rate moves by the old price up to now, by the new one after.
        self.moved(&mut state, now);
        let (limit, allowance) = (self.limit, self.allowance);
        state.fall.observe(at, backlog, got, limit, allowance, now);
    }

    /// The queue refused a call reserved at `reserved` for this allowance
    /// (429, code 10250), asking to wait `retry_after` (as the caller
    /// honours it: bounded, and capped by its policy): lowers the rate,
    /// once per episode (a call reserved before the last lowering went at
    /// the pace already lowered for). Whether it lowered it.
    pub(crate) fn refused(&self, reserved: Instant, retry_after: Option<Duration>) -> bool {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(wait) = retry_after.filter(|wait| *wait > HOLD_OVER) {
            let until = server_wait_ends(now, wait);
            state.held_until = Some(state.held_until.map_or(until, |held| held.max(until)));
        }
        if state.lowered_at.is_some_and(|at| reserved < at) {
            return false;
        }
        self.moved(&mut state, now);
        state.fall.refused(self.limit, now);
        let rate = if state.fall.price().is_some() {
            state.rate * KEPT_AFTER_REFUSAL
        } else {
            state.rate - (self.allowance * STEP).min(state.rate * MOST_OF_RATE)
        };
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
        self.moved(&mut state, now);
        state.rate
    }

    /// Moves the rate on to `now`.
    fn moved(&self, state: &mut State, now: Instant) {
        let seconds = now.saturating_duration_since(state.moved_at).as_secs_f64();
        state.moved_at = state.moved_at.max(now);
        if seconds <= 0.0 {
            return;
        }
        let rate = if let Some(price) = state.fall.price() {
            priced(
                state.rate,
                SHARED_CLIMB_PER_SECOND * self.limit,
                price,
                seconds,
            )
        } else if state.rate >= self.allowance {
            return;
        } else if state.lowered_at.is_none() {
            // Until the first refusal: doubling every half second.
            state.rate * START_GROWTH_PER_SECOND.powf(seconds)
        } else {
            // The further below the allowance, the faster: replicas below
            // an equal share catch up with those above it between refusals.
            let per_second = (self.allowance * CLIMB_PER_SECOND)
                .max(CLIMB_OF_GAP_PER_SECOND * (self.allowance - state.rate));
            state.rate + per_second * seconds
        };
        self.set_rate(state, rate, now);
    }

    fn set_rate(&self, state: &mut State, rate: f64, now: Instant) {
        let floor = self.allowance * FLOOR;
        // NaN (never expected) takes the floor: the slowest, not a stop.
        let rate = if rate.is_nan() {
            floor
        } else {
            rate.clamp(floor, self.allowance)
        };
        state.rate = rate;
        state
            .bucket
            .set_rate(rate, burst(rate, self.least_burst), now);
    }
}

/// Where `dr/dt = climb − price · r` takes `rate` in `seconds`.
fn priced(rate: f64, climb: f64, price: f64, seconds: f64) -> f64 {
    if price.abs() < 1e-9 {
        return rate + climb * seconds;
    }
    let settles_at = climb / price;
    settles_at + (rate - settles_at) * (-price * seconds).exp()
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
        let share = AllowanceShare::new(1_000, 100);
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
        let share = AllowanceShare::new(5_000, 100);
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
        let (low, high) = (
            AllowanceShare::new(1_000, 10),
            AllowanceShare::new(1_000, 10),
        );
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
        let share = AllowanceShare::new(1_000, 10);
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
        let share = AllowanceShare::new(1_000, 100);
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
