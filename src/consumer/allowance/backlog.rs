//! [`Fall`]: the signal the replicas of a consumer share, read from the
//! backlog count every pull answer carries, and the price each replica
//! sets its pace by.
//!
//! Every pull answer says how many messages the queue holds
//! (`message_backlog_count`, leased ones included). While the queue is
//! drained and nothing is pushed, the count falls as fast as the queue's
//! consumers settle what they pulled: all of them together, whoever asks.
//! So every replica reads the same figure, the combined pace, without
//! seeing the others. From it each computes one **price**, the same in
//! every replica:
//!
//! - a part in proportion to how far the combined pace is over (or under)
//!   the target, 95.5 % of the queue's limit (or the replica's own
//!   allowance when it pulls nearly all of what the count loses: alone);
//! - a part that adds up that difference over time and slowly forgets it
//!   (a leaky integral), so that the combined pace settles at the target
//!   whatever the number of replicas.
//!
//! A replica's pace `r` then follows `dr/dt = a − price · r` (see
//! [`AllowanceShare`](super::AllowanceShare)): every replica climbs by the same `a` and gives
//! back in proportion to its pace, so the replicas above an equal share
//! give back more and the shares meet at `a / price`; the price rises until
//! `a` times the number of replicas is given back. A negative price (the
//! combined pace far under the target) is a climb in proportion to the
//! pace, at most doubling every half second.
//!
//! # When the count is not the replicas' pace
//!
//! The count falls by what the consumers settle less what is pushed
//! meanwhile, and Cloudflare calls it best effort. So the signal is
//! **distrusted** for a minute, and the share goes by refusals alone (its
//! rules without the signal; twice as long, up to 8 minutes, when
//! distrusted again within as long of trusting it again), when:
//!
//! - the count has not moved for two seconds while pulls brought messages
//!   (a count that is not kept live);
//! - the queue refuses a pull (code 10250) while the count, over the last
//!   five seconds, fell more than 6 % of the limit slower than the limit:
//!   at a refusal the consumers pull at the limit, so the difference is
//!   being pushed (or the count lags), and the signal would have the
//!   replicas pull that much over the limit;
//! - the queue refuses this replica's pulls 8 times within 20 seconds
//!   (less pushed meanwhile, so the limit is met again and again).
//!
//! A fall over three times the limit (a purge, a deletion) is not a pace:
//! the samples start again after it.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// The combined pace the replicas aim at, as a share of the queue's limit:
/// room for the count's noise and for a joining replica's first pulls.
const TARGET: f64 = 0.955;
/// The price per unit of relative difference from the target.
const PROPORTIONAL: f64 = 2.0;
/// How fast the difference adds up, per second, into the price...
const INTEGRAL: f64 = 0.5;
/// ...counting a difference as at most this much (a start's overshoot
/// would otherwise keep the price high, and the pace low, for a minute)...
const MOST_INTEGRATED: f64 = 0.2;
/// ...and how fast what it added up is forgotten (a share per second): the
/// integral of a replica that joined late meets the others' within about
/// as long as its inverse.
const LEAK: f64 = 0.0125;
/// The most the integral adds to the price: enough for 30 replicas.
const MOST_INTEGRAL: f64 = 1.0;
/// The lowest price: a climb of at most 4 times a second, as fast as a
/// share's start.
const LOWEST_PRICE: f64 = -1.386_294_361_119_890_6; // −ln 4
/// The pace is read over this much of the count's history...
const WINDOW: Duration = Duration::from_secs(1);
/// ...and, for telling a refusal the signal did not foresee, over this much.
const LONG_WINDOW: Duration = Duration::from_secs(5);
/// A count unchanged this long while pulls bring messages is not live.
const STALE: Duration = Duration::from_secs(2);
/// How long a distrusted signal is not used...
const DISTRUST: Duration = Duration::from_secs(60);
/// ...at first; at most this long when distrusted again and again.
const LONGEST_DISTRUST: Duration = Duration::from_secs(480);
/// A refusal while the count falls this much of the limit slower than the
/// limit means the count is not the consumers' pace.
const MISSING: f64 = 0.06;
/// This many refusals within [`REFUSALS_WITHIN`] while the count is read
/// mean it does not foresee them (a little pushed meanwhile, under
/// [`MISSING`]); a few, of pulls that happened to come together, do not.
const REFUSALS: usize = 8;
const REFUSALS_WITHIN: Duration = Duration::from_secs(20);
/// A fall faster than this many times the limit is not pulls.
const NOT_PULLS: f64 = 3.0;
/// Above this part of the count's fall, a replica counts as alone...
const ALONE_FROM: f64 = 0.80;
/// ...and this much above it, wholly alone: it aims at its own allowance.
const ALONE_OVER: f64 = 0.15;

#[derive(Debug, Clone, Copy)]
struct Sample {
    /// When the server answered (half way through the round trip).
    at: Instant,
    backlog: u64,
    /// This replica's messages pulled, up to this answer.
    pulled: u64,
}

/// The queue's backlog as one replica sees it, and the price it gives.
#[derive(Debug, Default)]
pub(crate) struct Fall {
    recent: VecDeque<Sample>,
    long: VecDeque<Sample>,
    pulled: u64,
    unchanged_since: Option<Instant>,
    integral: f64,
    integrated_at: Option<Instant>,
    price: Option<f64>,
    priced_since: Option<Instant>,
    /// This replica's refusals since the price has been read for twice
    /// [`LONG_WINDOW`], within [`REFUSALS_WITHIN`].
    refusals: VecDeque<Instant>,
    distrusted_until: Option<Instant>,
    /// How long the last distrust lasted.
    distrusted_for: Duration,
}

impl Fall {
    /// The price now, if the signal is read and trusted.
    pub(crate) fn price(&self) -> Option<f64> {
        self.price
    }

    /// Takes in a pull answered at `at` (its round trip's midpoint) that
    /// brought `got` messages and said the queue held `backlog`; `limit`
    /// is the queue's, `allowance` this replica's most.
    pub(crate) fn observe(
        &mut self,
        at: Instant,
        backlog: u64,
        got: usize,
        limit: f64,
        allowance: f64,
        now: Instant,
    ) {
        if self.distrusted_until.is_some_and(|until| now < until) {
            return;
        }
        self.pulled += got as u64;
        // An empty queue says nothing about the pace (nor does an answer
        // overtaken by a later one).
        if got == 0 || self.recent.back().is_some_and(|last| at <= last.at) {
            return;
        }
        if self
            .recent
            .back()
            .is_some_and(|last| last.backlog == backlog)
        {
            let since = *self.unchanged_since.get_or_insert(at);
            if at.saturating_duration_since(since) > STALE {
                self.distrust(now);
            }
            return;
        }
        self.unchanged_since = None;
        let sample = Sample {
            at,
            backlog,
            pulled: self.pulled,
        };
        keep_within(&mut self.recent, sample, WINDOW);
        keep_within(&mut self.long, sample, LONG_WINDOW);
        let Some((first, last, seconds)) = span(&self.recent, WINDOW / 2) else {
            return;
        };
        let pace = (first.backlog as f64 - last.backlog as f64) / seconds;
        if pace > NOT_PULLS * limit {
            self.recent.clear();
            self.long.clear();
            self.recent.push_back(sample);
            self.long.push_back(sample);
            return;
        }
        let own = last.pulled.saturating_sub(first.pulled) as f64 / seconds;
        let target = target(pace, own, limit, allowance);
        let difference = ((pace - target) / target).clamp(-1.0, 1.0);
        if let Some(last) = self.integrated_at {
            let seconds = at.saturating_duration_since(last).as_secs_f64();
            let counted = difference.clamp(-MOST_INTEGRATED, MOST_INTEGRATED);
            self.integral += (INTEGRAL * counted - LEAK * self.integral) * seconds;
            self.integral = self.integral.clamp(0.0, MOST_INTEGRAL);
        }
        self.integrated_at = Some(at);
        self.price = Some((PROPORTIONAL * difference + self.integral).max(LOWEST_PRICE));
        self.priced_since.get_or_insert(at);
    }

    /// The queue refused a pull: whether that shows the count is not the
    /// consumers' pace (it is then distrusted, and the price is gone).
    pub(crate) fn refused(&mut self, limit: f64, now: Instant) -> bool {
        let Some(since) = self.priced_since else {
            return false;
        };
        // A start's refusals (several replicas doubling at once) say
        // nothing of the count, nor does a long window that still holds
        // the start's climb.
        if now.saturating_duration_since(since) < 2 * LONG_WINDOW {
            return false;
        }
        self.refusals.push_back(now);
        while self
            .refusals
            .front()
            .is_some_and(|at| now.saturating_duration_since(*at) > REFUSALS_WITHIN)
        {
            self.refusals.pop_front();
        }
        let slow = pace(&self.long, LONG_WINDOW.mul_f64(0.8))
            .is_some_and(|pace| limit - pace > MISSING * limit);
        if slow || self.refusals.len() >= REFUSALS {
            self.distrust(now);
            return true;
        }
        false
    }

    fn distrust(&mut self, now: Instant) {
        // Distrusted again soon after it was trusted again (messages are
        // still pushed): twice as long, up to [`LONGEST_DISTRUST`].
        let again = self
            .distrusted_until
            .is_some_and(|until| now.saturating_duration_since(until) < self.distrusted_for);
        let distrusted_for = if again {
            (self.distrusted_for * 2).min(LONGEST_DISTRUST)
        } else {
            DISTRUST
        };
        tracing::debug!(
            "the queue's backlog count is not its consumers' pace: pacing by refusals alone for {distrusted_for:?}"
        );
        *self = Fall {
            pulled: self.pulled,
            distrusted_until: Some(now + distrusted_for),
            distrusted_for,
            ..Fall::default()
        };
    }
}

/// Adds `sample` and forgets what is older than `window`, keeping the
/// newest sample at least `window` old (the span the pace is read over).
fn keep_within(samples: &mut VecDeque<Sample>, sample: Sample, window: Duration) {
    samples.push_back(sample);
    while samples.len() > 2
        && samples
            .get(1)
            .is_some_and(|second| sample.at.saturating_duration_since(second.at) >= window)
    {
        samples.pop_front();
    }
}

/// The first and last of `samples` and the seconds between them, if at
/// least `least`.
fn span(samples: &VecDeque<Sample>, least: Duration) -> Option<(Sample, Sample, f64)> {
    let (first, last) = (*samples.front()?, *samples.back()?);
    let span = last.at.saturating_duration_since(first.at);
    if span < least || span.is_zero() {
        return None;
    }
    Some((first, last, span.as_secs_f64()))
}

/// Messages a second the count lost across `samples`, if they span at
/// least `least`.
fn pace(samples: &VecDeque<Sample>, least: Duration) -> Option<f64> {
    let (first, last, seconds) = span(samples, least)?;
    Some((first.backlog as f64 - last.backlog as f64) / seconds)
}

/// The combined pace to aim at, for a combined `pace` of which this
/// replica pulls `own` a second: the queue's target, or up to this
/// replica's allowance when it pulls nearly all the count loses.
fn target(pace: f64, own: f64, limit: f64, allowance: f64) -> f64 {
    let target = TARGET * limit;
    if pace <= 0.0 {
        return target;
    }
    let alone = ((own / pace - ALONE_FROM) / ALONE_OVER).clamp(0.0, 1.0);
    target + (allowance - target).max(0.0) * alone
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: f64 = 5_000.0;
    const ALLOWANCE: f64 = 4_900.0;

    /// A count as the server reports it, with one answer every 40 ms.
    struct Queue {
        at: Instant,
        backlog: u64,
    }

    impl Queue {
        fn new() -> Queue {
            Queue {
                at: Instant::now(),
                backlog: 10_000_000,
            }
        }

        /// The count falls `per_second` for `seconds`; each answer brings
        /// this replica `got` messages.
        /// The price a fresh replica reads after the count fell at
        /// `per_second` for `seconds`, `got` of each 40 ms its own pulls.
        fn price_after(per_second: f64, got: usize, seconds: f64) -> Option<f64> {
            let (mut fall, mut queue) = (Fall::default(), Queue::new());
            queue.falls(&mut fall, per_second, got, seconds);
            fall.price()
        }

        fn falls(&mut self, fall: &mut Fall, per_second: f64, got: usize, seconds: f64) {
            let step = (per_second * 0.04).round() as i64;
            for _ in 0..(seconds / 0.04).round() as usize {
                self.at += Duration::from_millis(40);
                self.backlog = self.backlog.saturating_add_signed(-step);
                fall.observe(self.at, self.backlog, got, LIMIT, ALLOWANCE, self.at);
            }
        }
    }

    #[test]
    fn the_price_is_nothing_at_the_target_and_rises_and_falls_with_the_difference() {
        let (mut fall, mut queue) = (Fall::default(), Queue::new());
        queue.falls(&mut fall, 4_775.0, 2, 0.4);
        assert_eq!(fall.price(), None, "not half a window of history yet");
        queue.falls(&mut fall, 4_775.0, 2, 2.0);
        let at_target = fall.price().expect("a price");
        assert!(at_target.abs() < 1e-9, "{at_target}");
        queue.falls(&mut fall, 5_300.0, 2, 2.0);
        let over = fall.price().expect("a price");
        // 11 % over: 0.22 in proportion, and what the integral added up.
        assert!((0.23..0.35).contains(&over), "{over}");
        queue.falls(&mut fall, 2_400.0, 2, 3.0);
        let under = fall.price().expect("a price");
        assert!((-1.0..-0.99).contains(&under), "half the target: {under}");
        queue.falls(&mut fall, -10_000.0, 2, 3.0);
        assert_eq!(
            fall.price(),
            Some(LOWEST_PRICE),
            "a growing queue: the fastest climb"
        );
    }

    #[test]
    fn the_integral_settles_the_pace_at_the_target_and_stays_within_bounds() {
        let (mut fall, mut queue) = (Fall::default(), Queue::new());
        queue.falls(&mut fall, 5_300.0, 2, 60.0);
        let price = fall.price().expect("a price");
        // 11 % over for a minute: the integral at its most, 1, plus 0.22.
        assert!((1.21..1.23).contains(&price), "{price}");
        queue.falls(&mut fall, 4_500.0, 2, 60.0);
        let price = fall.price().expect("a price");
        assert!(
            (-0.12..-0.11).contains(&price),
            "the integral back to 0: {price}"
        );
    }

    #[test]
    fn a_replica_that_pulls_what_the_count_loses_aims_at_its_own_allowance() {
        // 192 of the 194 lost each 40 ms are this replica's.
        let price = Queue::price_after(4_850.0, 192, 3.0).expect("a price");
        assert!(price < 0.0, "under its allowance of 4,900: {price}");
        let price = Queue::price_after(4_850.0, 96, 3.0).expect("a price");
        assert!(price > 0.0, "one of two, over 95.5 % of the limit: {price}");
    }

    #[test]
    fn a_count_that_does_not_move_while_pulls_bring_messages_is_distrusted_for_a_minute() {
        let (mut fall, mut queue) = (Fall::default(), Queue::new());
        queue.falls(&mut fall, 4_750.0, 2, 2.0);
        assert!(fall.price().is_some());
        queue.falls(&mut fall, 0.0, 2, 1.9);
        assert!(fall.price().is_some(), "two seconds unchanged are allowed");
        queue.falls(&mut fall, 0.0, 2, 0.2);
        assert_eq!(fall.price(), None);
        queue.falls(&mut fall, 4_750.0, 2, 55.0);
        assert_eq!(fall.price(), None, "not read for a minute");
        queue.falls(&mut fall, 4_750.0, 2, 6.0);
        assert!(fall.price().is_some(), "read again after it");
        // Empty answers leave the count as it is: that is no sign.
        queue.falls(&mut fall, 0.0, 0, 10.0);
        assert!(fall.price().is_some());
    }

    #[test]
    fn a_refusal_the_count_did_not_foresee_distrusts_it() {
        let (mut fall, mut queue) = (Fall::default(), Queue::new());
        queue.falls(&mut fall, 4_750.0, 2, 4.0);
        assert!(
            !fall.refused(LIMIT, queue.at),
            "not five seconds of history yet"
        );
        queue.falls(&mut fall, 4_750.0, 2, 2.0);
        // 250 under the limit: 5 %, what the target leaves.
        assert!(!fall.refused(LIMIT, queue.at));
        assert!(fall.price().is_some());
        queue.falls(&mut fall, 4_000.0, 2, 6.0);
        // 1,000 under: as much is being pushed meanwhile.
        assert!(fall.refused(LIMIT, queue.at));
        assert_eq!(fall.price(), None);
    }

    #[test]
    fn refusals_again_and_again_distrust_the_count_and_a_few_do_not() {
        let (mut fall, mut queue) = (Fall::default(), Queue::new());
        queue.falls(&mut fall, 4_800.0, 2, 11.0);
        // One every 3 s: never 8 within 20 s.
        for refusal in 0..12 {
            assert!(!fall.refused(LIMIT, queue.at), "refusal {refusal}");
            queue.falls(&mut fall, 4_800.0, 2, 3.0);
        }
        // One every 2 s: the eighth within 20 s of the first.
        let mut refusals = 0;
        while !fall.refused(LIMIT, queue.at) {
            refusals += 1;
            queue.falls(&mut fall, 4_800.0, 2, 2.0);
        }
        assert_eq!(fall.price(), None);
        assert!(refusals <= 7, "{refusals}");
    }

    #[test]
    fn a_purge_is_not_a_pace() {
        let (mut fall, mut queue) = (Fall::default(), Queue::new());
        queue.falls(&mut fall, 4_750.0, 2, 2.0);
        let before = fall.price();
        queue.at += Duration::from_millis(40);
        queue.backlog -= 1_000_000;
        fall.observe(queue.at, queue.backlog, 2, LIMIT, ALLOWANCE, queue.at);
        assert_eq!(fall.price(), before, "no price from it");
        queue.falls(&mut fall, 4_750.0, 2, 0.6);
        let price = fall.price().expect("a price from what came after");
        assert!(price.abs() < 0.05, "{price}");
    }
}
