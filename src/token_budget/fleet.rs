//! The fleet's spending of the token's budget, as one process sees it, and
//! the pace that leaves this process only its share.
//!
//! # How it works
//!
//! Every answer's `Ratelimit: r=..` counts the **whole token's** calls in
//! the server's sliding window: `N = q - r` is how many calls of every
//! process the window held when the server counted this one. Between two
//! answers, `N` rises by the calls the fleet made and falls by the calls
//! that left the window. Calls leave the window `w` after they came, so
//! this process rebuilds the fleet's arrivals, bin by bin (`w / 300`
//! wide), from the rise of `N` plus the departures, which are the arrivals
//! it rebuilt `w` earlier (or, for what the window held at the first
//! answer, as late as the quota lets them have come). From that history:
//!
//! - **its share**: its own counted calls over the fleet's, in the last
//!   [`HISTORY`] of the window (0.4 `w`: 120 s at Cloudflare's figures,
//!   long enough that a share of one in sixteen is a few dozen calls);
//! - **the room**: the calls the fleet may make a second without taking the
//!   window past its aim (`q` less a margin): at most the aim over `w`,
//!   and at no point of the next [`HORIZON`] of the window (`w / 15`:
//!   20 s) more than the room left now plus the calls that will have left
//!   it by then (calls leave when they leave, not evenly: a window filled
//!   in a burst empties in one);
//! - **its pace**: the room times its share, a little more ([`PROBE`]) so
//!   that shares can move, and a little of the room more for every
//!   process ([`FAIR`]), the same for all, so that a share knocked low
//!   grows back (it is a larger part of a small share) while the room,
//!   read from the window, takes back from all what they took together. A
//!   lower pace applies at once; a higher one grows at most twofold a
//!   horizon, so no burst comes from one fresh figure;
//! - **a hold**: when the window has no room for one call of its share
//!   (every replica may make one on the same figures), none goes until, by
//!   the history, enough calls have left it. A pace floor of half its
//!   share of the aim's rate keeps a share knocked low by a passing lack
//!   of room from starving.
//!
//! The margin is the pacer's (2.5 % of the quota), or, when larger, one
//! call for each replica the share implies (a process's figures are as
//! old as the gap between its answers, in which every other replica may
//! have made a call), up to [`MAX_MARGIN`].
//!
//! A process that sees no other spending (under [`ALONE`] of the quota's
//! rate, from at least [`ALONE_AFTER`] calls of its own) has no pace from
//! here: it keeps the pacer's own rules, by which one process alone never
//! goes over. So does a process before its second answer with figures.
//!
//! # Why this design
//!
//! Every process sees the same window, so the room is one figure for the
//! whole fleet, read with more or less delay; what each takes of it is
//! proportional to what it took (its share), which sums to the room
//! without any process knowing how many there are. A rule that probed
//! upward until refused (as the consumer's share of the queue's allowance
//! must, having no such figure) would find the limit by going over it:
//! here going over blocks the whole token for five minutes.
//!
//! # Where it stops
//!
//! Every process sees the fleet only at its own answers: with many
//! replicas each one's figures are sparse (sixteen replicas sharing 4 calls
//! a second each see an answer every four seconds) and its share is
//! estimated from few calls. It was measured for 1 to 16 replicas on
//! Cloudflare's window and on a window ten times shorter (BENCHMARKS.md).
//! A fleet larger than that, or one whose window is so short that a margin
//! of one call per replica is a large part of it, should use more tokens:
//! one per group of replicas.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// The part of the window over which the share is measured.
pub(crate) const HISTORY: f64 = 0.4;
/// The part of the window over which the room is spread.
pub(crate) const HORIZON: f64 = 1.0 / 15.0;
/// How much above its share a process paces, so that shares can move.
pub(crate) const PROBE: f64 = 0.01;
/// What every process adds to its share, as a part of the room: the same
/// for all, so that shares drift toward equal (a small share grows by it
/// faster than a large one), while the room, read from the window, takes
/// back from all what they took together.
pub(crate) const FAIR: f64 = 0.005;
/// The largest margin kept below the quota for the fleet, as a part of it.
pub(crate) const MAX_MARGIN: f64 = 0.10;
/// Others' spending under this part of the quota's rate is none.
pub(crate) const ALONE: f64 = 0.02;
/// The own calls in the history before a process takes itself as alone.
pub(crate) const ALONE_AFTER: f64 = 8.0;
/// Bins of the rebuilt history per window.
const BINS_PER_WINDOW: f64 = 300.0;

/// One process's view of the fleet on one policy.
#[derive(Debug, Clone)]
pub(crate) struct Fleet {
    quota: f64,
    /// The window, in seconds.
    window: f64,
    /// The margin the pacer keeps on its own, in calls.
    base_margin: f64,
    origin: Instant,
    /// Width of a bin, in seconds.
    bin: f64,
    /// The first answer: when, and the calls the window held.
    first: Option<(f64, f64)>,
    /// The freshest answer used.
    last: Option<(f64, f64)>,
    /// The fleet's rebuilt arrivals per bin, from bin `base` on.
    arrivals: VecDeque<f64>,
    /// This process's counted calls per bin, from bin `base` on.
    own: VecDeque<f64>,
    base: i64,
    /// Calls a second this process allows itself, when it sees others.
    pace: Option<f64>,
    /// Its share of the fleet's calls, as last estimated.
    share: Option<f64>,
    /// When the pace last grew.
    grown: f64,
    /// No call until then: the window has no room.
    hold: Option<f64>,
}

impl Fleet {
    /// A view of a fleet under `quota` calls per `window`, keeping `margin`
    /// calls below the quota as the pacer does.
    pub(crate) fn new(quota: u64, window: Duration, margin: f64, now: Instant) -> Fleet {
        let window = window.as_secs_f64().max(1e-3);
        Fleet {
            quota: quota as f64,
            window,
            base_margin: margin,
            origin: now,
            bin: window / BINS_PER_WINDOW,
            first: None,
            last: None,
            arrivals: VecDeque::new(),
            own: VecDeque::new(),
            base: 0,
            pace: None,
            share: None,
            grown: 0.0,
            hold: None,
        }
    }

    /// The pace from the fleet's figures, in calls a second: `None` while
    /// this process is, as far as it sees, alone.
    pub(crate) fn pace(&self) -> Option<f64> {
        self.pace
    }

    /// Until when no call may go: the window had no room for one at the
    /// last answer, and calls leave it only then.
    pub(crate) fn hold_until(&self) -> Option<Instant> {
        let at = self.hold?;
        Some(self.origin + Duration::from_secs_f64(at.clamp(0.0, 1e9)))
    }

    /// This process's share of the fleet's calls, once estimated.
    #[cfg(any(test, feature = "producer"))]
    pub(crate) fn share(&self) -> Option<f64> {
        self.share
    }

    fn seconds(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.origin).as_secs_f64()
    }

    fn index(&self, t: f64) -> i64 {
        (t / self.bin).floor() as i64
    }

    /// The bin at `index`, made if missing; `None` for one already dropped.
    fn slot(bins: &mut VecDeque<f64>, base: i64, index: i64) -> Option<&mut f64> {
        let offset = usize::try_from(index - base).ok()?;
        while bins.len() <= offset {
            bins.push_back(0.0);
        }
        bins.get_mut(offset)
    }

    fn get(bins: &VecDeque<f64>, base: i64, index: i64) -> f64 {
        usize::try_from(index - base)
            .ok()
            .and_then(|offset| bins.get(offset).copied())
            .unwrap_or(0.0)
    }

    /// Spreads `count` evenly over `(from, to]`.
    fn spread(&mut self, from: f64, to: f64, count: f64) {
        for (index, start, end) in self.segments(from, to) {
            let part = count * (end - start) / (to - from);
            if let Some(slot) = Fleet::slot(&mut self.arrivals, self.base, index) {
                *slot += part;
            }
        }
    }

    /// The bins `(from, to]` covers: each one's index and the part of it
    /// covered. Bins are walked by index, not by adding widths, which in
    /// floating point can land short of a bin's end.
    fn segments(&self, from: f64, to: f64) -> impl Iterator<Item = (i64, f64, f64)> + use<> {
        let bin = self.bin;
        let (first, last) = (self.index(from), self.index(to));
        (first..=last).filter_map(move |index| {
            let start = (index as f64 * bin).max(from);
            let end = ((index + 1) as f64 * bin).min(to);
            (end > start).then_some((index, start, end))
        })
    }

    /// The calls leaving the window in `(from, to]`, by the history: what
    /// the window held at the first answer as it came (see below), `w`
    /// later; every later call `w` after it came, a window of bins earlier.
    fn departures(&self, from: f64, to: f64) -> f64 {
        let Some((first_at, first_count)) = self.first else {
            return 0.0;
        };
        // What the window held at the first answer came at most at the
        // quota's pace, and as late as that allows: a fleet that started
        // together filled it just before, and it leaves just as late.
        let held_until = first_at + self.window;
        let filling = (first_count * self.window / self.quota).clamp(self.bin, self.window);
        let held_from = held_until - filling;
        let shift = BINS_PER_WINDOW as i64;
        self.segments(from, to)
            .map(|(index, start, end)| {
                let overlap = (end.min(held_until) - start.max(held_from)).max(0.0);
                let held = overlap * first_count / filling;
                let later = end - start.max(held_until);
                let came = if later > 0.0 {
                    Fleet::get(&self.arrivals, self.base, index - shift) * later / self.bin
                } else {
                    0.0
                };
                held + came
            })
            .sum()
    }

    /// Bin by bin after `t`, up to a window: how far ahead, and the room
    /// the window has by then, `room` now plus the calls the history says
    /// will have left it.
    fn room_ahead(&self, t: f64, room: f64) -> impl Iterator<Item = (f64, f64)> + '_ {
        (1..=BINS_PER_WINDOW as u32).scan(room, move |free, n| {
            let (from, to) = (f64::from(n - 1) * self.bin, f64::from(n) * self.bin);
            *free += self.departures(t + from, t + to);
            Some((to, *free))
        })
    }

    /// Drops the bins older than any figure needs: `w` for departures
    /// plus the horizon, and the history.
    fn trim(&mut self, now: f64) {
        let keep = self.index(now - self.window * (1.0 + HISTORY + HORIZON)) - 1;
        if keep.saturating_sub(self.base) > self.arrivals.len().max(self.own.len()) as i64 {
            self.arrivals.clear();
            self.own.clear();
            self.base = keep;
        }
        while self.base < keep {
            self.arrivals.pop_front();
            self.own.pop_front();
            self.base += 1;
        }
    }

    /// Counts one call of this process that the server counted at `at`.
    pub(crate) fn sent(&mut self, at: Instant) {
        if self.first.is_none() {
            // The first answer's count holds this call among the window's
            // content: counted here too, it would be counted twice.
            return;
        }
        let t = self.seconds(at);
        self.trim(t);
        let index = self.index(t);
        if let Some(slot) = Fleet::slot(&mut self.own, self.base, index) {
            *slot += 1.0;
        }
    }

    /// Reads one answer: at `at` the server's window held `count` calls of
    /// the token (`q - r`).
    pub(crate) fn observe(&mut self, at: Instant, count: u64) {
        let t = self.seconds(at);
        let count = (count as f64).min(self.quota);
        let Some((last_at, last_count)) = self.last else {
            self.first = Some((t, count));
            self.last = Some((t, count));
            self.grown = t;
            return;
        };
        if t <= last_at {
            // Counted before the freshest figures: they say more.
            return;
        }
        if t - last_at > self.window * HISTORY {
            // Figures this old say nothing of what the fleet does now.
            self.first = Some((t, count));
            self.last = Some((t, count));
            self.grown = t;
            self.trim(t);
            return;
        }
        let came = (count - last_count + self.departures(last_at, t)).max(0.0);
        self.spread(last_at, t, came);
        self.last = Some((t, count));
        self.trim(t);

        let history = self.window * HISTORY;
        let (from, to) = (self.index(t - history), self.index(t));
        let total: f64 = (from..=to)
            .map(|i| Fleet::get(&self.arrivals, self.base, i))
            .sum();
        let own: f64 = (from..=to)
            .map(|i| Fleet::get(&self.own, self.base, i))
            .sum();
        if own <= 0.0 {
            return;
        }
        let share = (own / total.max(own)).min(1.0);
        self.share = Some(share);
        let rate = self.quota / self.window;
        let span = history
            .min(t - self.first.map_or(t, |(at, _)| at))
            .max(self.bin);
        let others = (total - own).max(0.0) / span;
        if others < ALONE * rate && own >= ALONE_AFTER {
            self.pace = None;
            self.hold = None;
            self.grown = t;
            return;
        }
        let margin = self
            .base_margin
            .max((1.0 / share).min(self.quota * MAX_MARGIN));
        let aim = (self.quota - margin).max(1.0);
        // Calls leave the window when they leave it, not evenly: every
        // point of the horizon must keep the window under the aim.
        let horizon_bins = (HORIZON * BINS_PER_WINDOW).round() as usize;
        let room = self
            .room_ahead(t, aim - count)
            .take(horizon_bins)
            .map(|(ahead, free)| free / ahead)
            .fold(aim / self.window, f64::min)
            .max(0.0);
        // No room for one call of this process's share now (every replica
        // may make one on the same figures): none goes until, by the
        // history, enough calls have left the window (at most a window
        // from now, when all of them have); then one goes, and its answer
        // says more.
        let mine = 1.0 / share;
        self.hold = {
            let mut ahead = self.room_ahead(t, aim - count);
            match ahead.next() {
                Some((_, now)) if now < mine => {
                    let opens = ahead
                        .find(|(_, free)| *free >= mine)
                        .map_or(self.window, |(ahead, _)| ahead);
                    Some(t + opens - self.bin)
                }
                _ => None,
            }
        };
        let target = room * (share * (1.0 + PROBE) + FAIR);
        let before = self.pace.unwrap_or(aim / self.window);
        // Growth is slow: a share that seems to jump is more likely a
        // figure misread (calls leaving the window unseen) than replicas
        // gone, and those give their room back within a horizon anyway.
        let grow = ((t - self.grown) / (self.window * HORIZON)).clamp(0.0, 1.0);
        let pace = if target <= before {
            target
        } else {
            target.min(before * 2f64.powf(grow))
        };
        // At least half its share of the aim's rate: a share knocked low by
        // a passing lack of room is not left to starve, and the hold, not
        // the floor, keeps the window from overflowing.
        let floor = 0.5 * share * aim / self.window;
        self.pace = Some(pace.max(floor).min(aim / self.window));
        self.grown = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(300);

    /// A server counting a sliding window, and K processes each sending
    /// one call at a time at the pace its fleet view allows.
    struct World {
        counted: VecDeque<f64>,
        over: u32,
    }

    impl World {
        fn count(&mut self, t: f64) -> u64 {
            while self.counted.front().is_some_and(|&at| at + 300.0 <= t) {
                self.counted.pop_front();
            }
            if self.counted.len() >= 1_200 {
                self.over += 1;
            } else {
                self.counted.push_back(t);
            }
            self.counted.len() as u64
        }
    }

    /// `replicas` processes, each sending as fast as its pace and its hold
    /// let it (today's average pace while it sees itself alone), over three
    /// windows: the calls the server counted, and the ones over the quota.
    fn run(replicas: usize) -> (usize, u32) {
        let start = Instant::now();
        let mut world = World {
            counted: VecDeque::new(),
            over: 0,
        };
        let mut fleets: Vec<Fleet> = (0..replicas)
            .map(|_| Fleet::new(1_200, WINDOW, 30.0, start))
            .collect();
        let mut next: Vec<f64> = (0..replicas).map(|k| k as f64 * 0.01).collect();
        let mut total = 0;
        let step = 0.01;
        let mut t = 0.0;
        while t < 900.0 {
            for (k, fleet) in fleets.iter_mut().enumerate() {
                if next[k] <= t {
                    let at = start + Duration::from_secs_f64(t);
                    let before = world.over;
                    let count = world.count(t);
                    if world.over == before {
                        total += 1;
                        fleet.sent(at);
                        fleet.observe(at, count);
                    }
                    let pace = fleet.pace().unwrap_or(1_170.0 / 300.0);
                    let held = fleet
                        .hold_until()
                        .map_or(0.0, |until| (until - start).as_secs_f64());
                    next[k] = (t + 1.0 / pace).max(held);
                }
            }
            t += step;
        }
        (total, world.over)
    }

    #[test]
    fn a_lone_process_has_no_pace_from_the_fleet() {
        let start = Instant::now();
        let mut fleet = Fleet::new(1_200, WINDOW, 30.0, start);
        for call in 0..20u64 {
            let at = start + Duration::from_millis(call * 260);
            fleet.sent(at);
            fleet.observe(at, call + 1);
        }
        assert_eq!(fleet.pace(), None);
        assert_eq!(fleet.share(), Some(1.0));
    }

    #[test]
    fn others_spending_shows_as_a_share_and_a_pace() {
        let start = Instant::now();
        let mut fleet = Fleet::new(1_200, WINDOW, 30.0, start);
        // Every second this process makes one call and three others do.
        for second in 0..60u64 {
            let at = start + Duration::from_secs(second);
            fleet.sent(at);
            fleet.observe(at, 4 * second + 4);
        }
        let share = fleet.share().expect("a share");
        assert!((share - 0.25).abs() < 0.02, "{share}");
        let pace = fleet.pace().expect("a pace");
        // A quarter of 1,170 per 300 s, and the probe.
        assert!((pace - 0.25 * 3.9 * 1.01).abs() < 0.05, "{pace}");
    }

    #[test]
    fn replicas_sharing_the_window_never_go_over_it() {
        for replicas in [2, 4, 8, 16] {
            let (total, over) = run(replicas);
            assert_eq!(over, 0, "{replicas} replicas went over");
            let used = total as f64 / 3_600.0;
            assert!(
                used > 0.9,
                "{replicas} replicas used {used:.3} of the budget"
            );
        }
    }

    #[test]
    fn absurd_figures_do_not_panic() {
        let start = Instant::now();
        let mut fleet = Fleet::new(u64::MAX, Duration::ZERO, 0.0, start);
        fleet.observe(start, u64::MAX);
        fleet.sent(start + Duration::from_secs(1));
        fleet.observe(start + Duration::from_secs(1), 0);
        fleet.observe(start + Duration::from_secs(1_000_000), u64::MAX);
        let mut fleet = Fleet::new(1, Duration::from_secs(u64::MAX / 4), 1.0, start);
        fleet.sent(start);
        fleet.observe(start, 1);
        fleet.observe(start + Duration::from_secs(5), 0);
        assert!(fleet.pace().is_none_or(f64::is_finite));
    }
}
