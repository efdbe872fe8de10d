//! The gate every POST passes: open while the service answers, paused
//! while it is down or busy. One per relay, so that an outage costs one
//! pause for all, not one retry per message.
//!
//! Open → (a busy answer) → paused until the pause ends → one request,
//! the probe, goes → its answer opens the gate, or pauses it again for
//! twice as long (at most the backoff's maximum: the library's one
//! [`Backoff`]). A `Retry-After` may lengthen a pause, up to `max_pause`,
//! never shorten it (the library's [`server_wait`]), so that `Retry-After:
//! 0` never makes a loop of requests. Only a busy answer to a request
//! sent under the current pause's generation steps the backoff: the
//! answers of the other requests of the same outage, sent before it
//! began, only push its end out (with their `Retry-After`). While a
//! pause lasts the consumer pulls nothing (its [`PullSwitch`]).
//!
//! The gate also keeps the clock of `--hold`: how long it has been paused
//! in all ([`Gate::paused_total`]), the time the service was down or busy.

use std::pin::pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use cf_queues::consumer::PullSwitch;
use cf_queues::retry::{Backoff, server_wait};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::args::Span;

pub struct Gate {
    state: Mutex<State>,
    changed: Notify,
    max_pause: Duration,
}

struct State {
    /// When the pause ends; `None` while open.
    paused_until: Option<Instant>,
    /// A probe is on its way: the others wait for its answer.
    probing: bool,
    /// Stepped by each pause a current answer starts.
    generation: u64,
    /// The pauses without a `Retry-After`, and the floor of those with one.
    backoff: Backoff,
    /// Since when the gate is paused (a probe on its way included).
    paused_since: Option<Instant>,
    /// The time of the pauses that ended.
    paused_before: Duration,
}

impl State {
    fn open(&mut self, now: Instant) {
        if let Some(since) = self.paused_since.take() {
            self.paused_before = self
                .paused_before
                .saturating_add(now.saturating_duration_since(since));
        }
        self.paused_until = None;
        self.probing = false;
        self.backoff.reset();
    }

    fn pause_until(&mut self, now: Instant, until: Instant) {
        self.paused_since.get_or_insert(now);
        self.paused_until = Some(until);
    }
}

/// Leave to send one request, from [`Gate::pass`]; say what its answer
/// was with [`Pass::busy`] or [`Pass::answered`]. A pass dropped without
/// either (its task cancelled) frees the probe's place.
#[must_use]
pub struct Pass<'a> {
    gate: &'a Gate,
    generation: u64,
    probe: bool,
    told: bool,
}

impl Gate {
    pub fn new(backoff: Span, max_pause: Duration) -> Gate {
        Gate {
            state: Mutex::new(State {
                paused_until: None,
                probing: false,
                generation: 0,
                backoff: Backoff::new(backoff.min, backoff.max),
                paused_since: None,
                paused_before: Duration::ZERO,
            }),
            changed: Notify::new(),
            max_pause,
        }
    }

    /// Pauses `switch`'s pulls while a pause lasts, and resumes them when
    /// it ends, before any probe is answered: the relay may hold no
    /// message then (each held past `--hold` went back to the queue), and
    /// a message newly pulled is the probe. Runs until dropped.
    pub async fn drive(&self, switch: PullSwitch) {
        loop {
            let mut changed = pin!(self.changed.notified());
            changed.as_mut().enable();
            let until = self
                .state()
                .paused_until
                .filter(|until| *until > Instant::now());
            match until {
                Some(until) => {
                    switch.pause();
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(until) => {}
                    }
                }
                None => {
                    switch.resume();
                    changed.await;
                }
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A gate closed until [`Gate::open`]: `--wait-for-target`.
    pub fn closed(backoff: Span, max_pause: Duration) -> Gate {
        let gate = Gate::new(backoff, max_pause);
        let now = Instant::now();
        // Far enough never to end by itself; near enough for any clock.
        let never = far_after(now, Duration::from_secs(100 * 365 * 86_400));
        gate.state().pause_until(now, never);
        gate
    }

    /// Opens the gate: the service answered.
    pub fn open(&self) {
        self.state().open(Instant::now());
        self.changed.notify_waiters();
    }

    /// How long the gate has been paused in all, the current pause
    /// included: the time the service was down or busy.
    pub fn paused_total(&self) -> Duration {
        let state = self.state();
        let current = state.paused_since.map_or(Duration::ZERO, |since| {
            Instant::now().saturating_duration_since(since)
        });
        state.paused_before.saturating_add(current)
    }

    /// Returns once the gate has been paused `hold` in all since its
    /// [`Gate::paused_total`] was `mark`, with `more` counted on top (a
    /// message's own busy POSTs): `--hold` running out. Only paused time
    /// counts, so a message waiting for a slot of a service that answers
    /// is never held out.
    ///
    /// # Cancellation
    ///
    /// Safe: it only waits.
    pub async fn held_out(&self, mark: Duration, more: Duration, hold: Duration) {
        loop {
            let mut changed = pin!(self.changed.notified());
            changed.as_mut().enable();
            let held = self
                .paused_total()
                .saturating_sub(mark)
                .saturating_add(more);
            let Some(left) = hold.checked_sub(held).filter(|left| !left.is_zero()) else {
                return;
            };
            if self.is_paused() {
                tokio::select! {
                    () = changed => {}
                    () = tokio::time::sleep(left) => {}
                }
            } else {
                changed.await;
            }
        }
    }

    /// Whether the gate is paused (a probe on its way included).
    pub fn is_paused(&self) -> bool {
        self.state().paused_until.is_some()
    }

    /// How long the pause still lasts (zero while open or probing).
    pub fn pause_left(&self) -> Duration {
        self.state().paused_until.map_or(Duration::ZERO, |until| {
            until.saturating_duration_since(Instant::now())
        })
    }

    /// Waits until a request may go: at once while open; after a pause,
    /// one caller goes as the probe and the others wait for its answer.
    ///
    /// # Cancellation
    ///
    /// Safe: a caller dropped while waiting took nothing.
    pub async fn pass(&self) -> Pass<'_> {
        loop {
            let mut changed = pin!(self.changed.notified());
            changed.as_mut().enable();
            let wake_at = {
                let mut state = self.state();
                match state.paused_until {
                    None => return self.pass_of(&state, false),
                    Some(until) if !state.probing && Instant::now() >= until => {
                        state.probing = true;
                        return self.pass_of(&state, true);
                    }
                    Some(until) => (!state.probing).then_some(until),
                }
            };
            match wake_at {
                Some(at) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    fn pass_of(&self, state: &State, probe: bool) -> Pass<'_> {
        Pass {
            gate: self,
            generation: state.generation,
            probe,
            told: false,
        }
    }
}

impl Pass<'_> {
    /// The answer said the service is down or busy: pauses the gate (a
    /// current answer) or pushes the pause's end out (a stale one with a
    /// `Retry-After`). The pause that follows, when it starts one.
    pub fn busy(mut self, retry_after: Option<Duration>) -> Option<Duration> {
        self.told = true;
        let gate = self.gate;
        let now = Instant::now();
        let mut state = gate.state();
        if self.probe {
            state.probing = false;
        }
        if self.generation != state.generation {
            if let (Some(until), Some(_)) = (state.paused_until, retry_after) {
                let asked = server_wait(retry_after, Duration::ZERO, gate.max_pause);
                state.paused_until = Some(until.max(far_after(now, asked)));
            }
            drop(state);
            gate.changed.notify_waiters();
            return None;
        }
        let floor = state.backoff.next_wait();
        let pause = server_wait(retry_after, floor, gate.max_pause);
        state.generation += 1;
        state.pause_until(now, far_after(now, pause));
        drop(state);
        gate.changed.notify_waiters();
        Some(pause)
    }

    /// Any other answer (2xx, or one that refuses this message alone): the
    /// service is up, so the gate opens and the backoff starts over.
    pub fn answered(mut self) {
        self.told = true;
        self.gate.open();
    }
}

/// `wait` after `now`, or a day after it when that is past what the
/// clock can represent: no duration makes an instant overflow.
pub fn far_after(now: Instant, wait: Duration) -> Instant {
    now.checked_add(wait)
        .or_else(|| now.checked_add(Duration::from_secs(86_400)))
        .unwrap_or(now)
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if self.probe && !self.told {
            self.gate.state().probing = false;
            self.gate.changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn gate() -> Gate {
        let backoff = Span {
            min: SECOND,
            max: 4 * SECOND,
        };
        Gate::new(backoff, 10 * SECOND)
    }

    /// When the next pass is given, from now.
    async fn next_pass(gate: &Gate) -> (Duration, bool) {
        let started = Instant::now();
        let pass = gate.pass().await;
        let probe = pass.probe;
        // Not told: the probe's place is freed on drop.
        drop(pass);
        (started.elapsed(), probe)
    }

    #[tokio::test(start_paused = true)]
    async fn open_until_busy_then_a_probe_after_a_doubling_pause() {
        let gate = gate();
        assert_eq!(next_pass(&gate).await, (Duration::ZERO, false));
        let mut pauses = Vec::new();
        for _ in 0..4 {
            let pass = gate.pass().await;
            pauses.push(pass.busy(None).expect("a current answer pauses"));
        }
        assert_eq!(pauses, [SECOND, 2 * SECOND, 4 * SECOND, 4 * SECOND]);
        assert!(gate.is_paused());
        gate.pass().await.answered();
        assert!(!gate.is_paused());
        assert_eq!(next_pass(&gate).await, (Duration::ZERO, false));
        // The backoff started over.
        assert_eq!(gate.pass().await.busy(None), Some(SECOND));
    }

    #[tokio::test(start_paused = true)]
    async fn one_probe_at_a_time_and_the_others_follow_its_answer() {
        let gate = gate();
        let before = gate.pass().await;
        gate.pass().await.busy(None);
        let probe = gate.pass().await;
        assert!(probe.probe);
        let waiting = async {
            let started = Instant::now();
            let pass = gate.pass().await;
            (started.elapsed(), pass.probe)
        };
        let answering = async {
            tokio::time::sleep(3 * SECOND).await;
            // A stale busy answer neither steps the backoff nor frees the waiters.
            assert_eq!(before.busy(None), None);
            tokio::time::sleep(2 * SECOND).await;
            probe.answered();
        };
        let (waited, ()) = tokio::join!(waiting, answering);
        assert_eq!(
            waited,
            (5 * SECOND, false),
            "went when the probe was answered"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_sets_the_pause_within_its_cap_and_stale_ones_extend_it() {
        let gate = gate();
        let stale = gate.pass().await;
        assert_eq!(gate.pass().await.busy(Some(3 * SECOND)), Some(3 * SECOND));
        assert_eq!(stale.busy(Some(5 * SECOND)), None);
        assert_eq!(next_pass(&gate).await, (5 * SECOND, true));
        assert_eq!(gate.pass().await.busy(Some(60 * SECOND)), Some(10 * SECOND));
        assert_eq!(next_pass(&gate).await, (10 * SECOND, true));
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_after_never_shortens_the_backoff() {
        let gate = gate();
        let mut pauses = Vec::new();
        for _ in 0..4 {
            pauses.push(gate.pass().await.busy(Some(Duration::ZERO)));
        }
        assert_eq!(
            pauses,
            [
                Some(SECOND),
                Some(2 * SECOND),
                Some(4 * SECOND),
                Some(4 * SECOND)
            ],
            "Retry-After: 0 (or a date in the past) waits the doubling backoff"
        );
        // A huge figure is capped, and nothing overflows.
        let huge = Gate::new(
            Span {
                min: SECOND,
                max: SECOND,
            },
            Duration::MAX,
        );
        assert_eq!(
            huge.pass().await.busy(Some(Duration::MAX)),
            Some(cf_queues::retry::LONGEST_SERVER_WAIT)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_hold_counts_paused_time_only() {
        let gate = gate();
        let mark = gate.paused_total();
        let held = async {
            let started = Instant::now();
            gate.held_out(mark, Duration::ZERO, 3 * SECOND).await;
            started.elapsed()
        };
        let outage = async {
            // Open for 10 s: nothing counts.
            tokio::time::sleep(10 * SECOND).await;
            gate.pass().await.busy(None);
            // Paused 1 s, then the probe's answer opens it 1 s later.
            tokio::time::sleep(2 * SECOND).await;
            gate.pass().await.answered();
            tokio::time::sleep(10 * SECOND).await;
            gate.pass().await.busy(None);
        };
        let (waited, ()) = tokio::join!(held, outage);
        // 2 s paused in the first outage, 1 s into the second.
        assert_eq!(waited, 23 * SECOND);
        assert_eq!(gate.paused_total(), 3 * SECOND);
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_gate_waits_for_open() {
        let gate = Gate::closed(
            Span {
                min: SECOND,
                max: SECOND,
            },
            SECOND,
        );
        let opening = async {
            tokio::time::sleep(Duration::from_secs(3_600)).await;
            gate.open();
        };
        let (waited, ()) = tokio::join!(next_pass(&gate), opening);
        assert_eq!(
            waited,
            (Duration::from_secs(3_600), false),
            "no probe: opened"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_dropped_unanswered_lets_another_go() {
        let gate = gate();
        gate.pass().await.busy(None);
        let (waited, probe) = next_pass(&gate).await;
        assert_eq!((waited, probe), (SECOND, true));
        assert_eq!(next_pass(&gate).await, (Duration::ZERO, true));
    }
}
