//! The pacer: the one place that decides when a call that counts against
//! the token's window may be sent, from the server's own figures
//! (`Ratelimit`, `Ratelimit-Policy`, and a 429 with code 971).
//!
//! # What it guarantees, and how
//!
//! Two rules, both checked before every counted attempt:
//!
//! - **Never more than `r` before the next answer.** Each answer says how
//!   many requests the server still admits (`r`) as of when it counted
//!   that request. Calls the server may not have counted by then are those
//!   in flight when the answered call was sent, and those sent after it, so
//!   the answer allows `r` minus those. Counted calls are numbered as they
//!   are sent; an answer turns into a cap on that number, and the freshest
//!   answer (the one sent last) sets it. Past the cap, nothing goes until
//!   a new answer raises it or `t` passes, after which one call goes to
//!   learn the new figures. Each cap is sound on its own while this client
//!   is the credential's only user (the third rule, below, is for when
//!   it is not).
//! - **At most q/w per second on average, a few per cent below the window.**
//!   A token bucket of [`BURST_PER_CENT`] of the quota that refills so that
//!   the burst plus a window's refill is the quota less [`MARGIN_PER_CENT`]:
//!   no window of `w` seconds ever holds more than that, so a steady sender
//!   is never stopped by the window (as one that spent its quota in a burst
//!   would be for the rest of it), and the margin absorbs the difference
//!   between when a call is sent and when the server counts it.
//!
//! A third rule applies when other users of the token spend too (other
//! processes, replicas of the same service): **only this client's share of
//! what the window has room for**. How `r` moves between this client's own
//! answers shows what the rest of the token spends; the share and the room
//! that leaves are worked out in `fleet.rs`. The share is a pace of its own,
//! a bucket of one call (no burst from stale figures), with the calls on
//! their way bounded by what that pace sends in two round trips; when the
//! window has no room for one call of the share, nothing goes until, by the
//! calls the window's history says leave it, it has.
//!
//! When the bucket is built (the first `Ratelimit-Policy`, or the first
//! after the figures were forgotten), it starts short of the calls that can
//! still be in the server's window, and only those:
//!
//! - with a `Ratelimit` in the same answer, the server's own count: `q - r`,
//!   plus the calls it may not have counted yet (as for the cap). The
//!   server's figure wins over anything this client counted itself: a
//!   server that says its whole budget is there gets the whole burst, at
//!   once, however many calls went before;
//! - with the policy alone, this client's counted calls since the last
//!   success without figures (before it, the server said it limited
//!   nothing);
//!
//! and in either case the bucket never owes more than it refills in `t`
//! (the server's word for when its budget is back) or, without one, in `w`:
//! by then every call now in the window has left it, so a longer wait would
//! only idle. (Before 0.3, every counted call ever sent was subtracted: a
//! client that sent 10,000 calls while the limits were switched off waited
//! about 43 minutes once they came back, with the whole budget there.)
//!
//! Until the first answer, only one counted call is in flight: its answer
//! says whether the server sends the headers at all. A server that sends
//! none is not paced (a missing header is no information, not zero). A
//! success that carries neither header, as the freshest answer, says the
//! server stopped sending them (an emulator whose limits were switched
//! off, say): the figures read before are forgotten, so that they do not
//! pace a server that no longer limits by them. A block still runs out.
//! Calls that do not count ([`Operation::counts_against_api_limit`]) are
//! never held, but their answers are read: they carry the same figures.
//!
//! [`Operation::counts_against_api_limit`]: crate::operation::Operation::counts_against_api_limit

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use reqwest::StatusCode;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::fleet::Fleet;
use super::headers::server_wait_ends;
use super::headers::{self, Figures, Policy};
use crate::bucket::Bucket;
use crate::codes;

/// How far below the quota the pacer aims, in per cent of the quota (at
/// least one request): 2.5 % of 1,200 is 30 requests, or the time a
/// backlogged sender spends on 30 requests (about 8 s at Cloudflare's
/// figures) of difference between when calls are sent and when they are
/// counted, before the window could be exceeded.
pub const MARGIN_PER_CENT: f64 = 2.5;
/// The burst the pacer lets through at once, in per cent of the quota (at
/// least one request): 12 of 1,200, so that a few calls in a row (a
/// command-line tool's) do not wait, while a steady sender still gets
/// 96.5 % of the quota.
pub const BURST_PER_CENT: f64 = 1.0;
/// When an exhausted quota says nothing about when it comes back (no `t`),
/// the wait before one call goes to learn it.
const UNKNOWN_RESET: Duration = Duration::from_secs(1);

/// The calls the pacer keeps below a quota: [`MARGIN_PER_CENT`] of it, at
/// least one.
fn margin(quota: f64) -> f64 {
    (quota * MARGIN_PER_CENT / 100.0).ceil().max(1.0)
}

/// `wait` after `now`: the server's figures (`t`, `Retry-After`) and the
/// pacer's own waits from them, bounded as every server-asked wait is
/// ([`LONGEST_SERVER_WAIT`](crate::retry::LONGEST_SERVER_WAIT), which is
/// still "exhausted" to every caller).
fn later(now: Instant, wait: Duration) -> Instant {
    server_wait_ends(now, wait)
}

/// The shared pacing state of one client and its clones.
#[derive(Debug, Default)]
pub(crate) struct Pacer {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// Counted calls sent so far; the last one's number.
    sent: u64,
    /// Counted calls sent and not answered.
    in_flight: u64,
    /// Whether any answer came back.
    answered: bool,
    /// The freshest answer's figures: the calls numbered up to `cap` may go.
    cap: Option<Cap>,
    /// The average pace, once the policy is known.
    bucket: Option<Paced>,
    /// A 429 with code 971 asked every counted call to wait until then.
    paused_until: Option<Instant>,
    /// The number of the last counted call sent before a success without
    /// figures (the server did not limit it): a policy announced later
    /// counts only the calls after it.
    forgotten: u64,
    /// What the token's other users spend, and this client's share.
    fleet: Option<Fleet>,
    /// The pace of this client's share, while it sees others spend:
    /// a bucket of one call, so no burst comes from stale figures.
    fleet_pace: Option<Bucket>,
    /// The round trip of counted calls, smoothed.
    round_trip: Option<f64>,
    /// The freshest answer's `r`, as the token's figures last seen.
    remaining: Option<u64>,
}

/// The token's budget as a client last saw it, and the share of it the
/// client allows itself; see
/// [`ProducerStats::token_budget`](crate::producer::ProducerStats::token_budget).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct TokenBudget {
    /// Requests per window (`q` of `Ratelimit-Policy`).
    pub quota: u64,
    /// The window (`w`).
    pub window: Duration,
    /// Requests the token had left, by the freshest answer (`r`).
    pub remaining: Option<u64>,
    /// The part of the token's calls that are this client's, over the
    /// last 0.4 of the window, once two answers showed it.
    pub share: Option<f64>,
    /// The calls a second this client allows itself from its share, while
    /// it sees other users of the token spend; `None` when it sees itself
    /// alone (then it paces to the whole budget).
    pub pace: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Cap {
    /// The number of the last counted call sent before the answered one
    /// was (or the answered one itself): fresher answers have larger ones.
    basis: u64,
    last: u64,
    /// When the server admits more than the cap: then one more call goes.
    reset_at: Instant,
}

/// The average pace of one policy: the client's one [`Bucket`] type.
#[derive(Debug, Clone, Copy)]
struct Paced {
    policy: Policy,
    bucket: Bucket,
}

impl Paced {
    fn new(policy: Policy, now: Instant) -> Paced {
        let quota = policy.quota as f64;
        let aim = (quota - margin(quota)).max(1.0);
        let burst = (quota * BURST_PER_CENT / 100.0).floor().clamp(1.0, aim);
        // A quota of a request or two leaves no room for a burst and a
        // refill: the refill wins, and the cap on `r` stays the guard.
        Paced {
            policy,
            bucket: Bucket::within(aim, policy.window, burst, now),
        }
    }

    /// Starts a fresh bucket with `in_window` calls already in the server's
    /// window, but owing no more than `horizon` of refill: every call in
    /// the window now has left it by then (`w`), or the server said its
    /// budget comes back by then (`t`), so a longer wait would only idle.
    fn start_spent(&mut self, in_window: f64, horizon: Duration) {
        let bucket = &mut self.bucket;
        let floor = 1.0 - bucket.per_second * horizon.as_secs_f64();
        bucket.tokens = (bucket.capacity - in_window)
            .max(floor)
            .min(bucket.capacity);
    }
}

/// Why a counted call may not go yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Until an answer comes back (the first one, or one that raises the cap).
    Answer,
    /// Until `at`; `server` when it is the server's figure (an exhausted
    /// quota or a 429), not the client's own pace.
    Until { at: Instant, server: bool },
}

/// Why [`Pacer::admit`] gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denied {
    /// The wait would outlast the deadline, or did.
    Deadline,
    /// The server's figures say the budget comes back only after this
    /// long, longer than the caller waits.
    Exhausted(Duration),
}

/// A call let through: it must report its answer with [`Pass::answered`].
/// Dropped unanswered (no answer came, or the call was dropped while in
/// flight), it still counts as sent, and frees its place in flight.
#[derive(Debug)]
pub(crate) struct Pass {
    pacer: Arc<Pacer>,
    counted: bool,
    sent_at: Instant,
    basis: u64,
    in_flight_before: u64,
    done: bool,
}

impl Pacer {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The token's figures as last seen, once a policy was.
    #[cfg(feature = "producer")]
    pub(crate) fn token_budget(&self) -> Option<TokenBudget> {
        let state = self.lock();
        let paced = state.bucket.as_ref()?;
        Some(TokenBudget {
            quota: paced.policy.quota,
            window: paced.policy.window,
            remaining: state.remaining,
            share: state.fleet.as_ref().and_then(Fleet::share),
            pace: state.fleet_pace.map(|bucket| bucket.per_second),
        })
    }

    /// Lets one call through now, or says how long it must wait. A call
    /// that does not count always goes.
    pub(crate) fn try_admit(self: &Arc<Self>, counted: bool, now: Instant) -> Result<Pass, Wait> {
        let mut state = self.lock();
        if counted {
            state.check(now)?;
            state.take(now);
        }
        let in_flight_before = state.in_flight - u64::from(counted);
        Ok(Pass {
            pacer: Arc::clone(self),
            counted,
            sent_at: now,
            basis: state.sent,
            in_flight_before,
            done: false,
        })
    }

    /// Waits until a counted call (or any call, when `counted` is false)
    /// may go, within the deadline `ends`, and lets it through. A wait the
    /// server's figures impose that is longer than `max_server_wait` is not
    /// started.
    ///
    /// # Cancellation
    ///
    /// Nothing is taken until the call is let through, so a call dropped
    /// while it waits leaves the budget as it was.
    pub(crate) async fn admit(
        self: &Arc<Self>,
        counted: bool,
        ends: Option<Instant>,
        max_server_wait: Duration,
    ) -> Result<Pass, Denied> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = Instant::now();
            let wait = match self.try_admit(counted, now) {
                Ok(pass) => return Ok(pass),
                Err(wait) => wait,
            };
            let (until, to_deadline) = match wait {
                Wait::Answer => (ends, true),
                Wait::Until { at, server } => {
                    let long = at.saturating_duration_since(now);
                    if server && long > max_server_wait {
                        return Err(Denied::Exhausted(long));
                    }
                    if ends.is_some_and(|end| at >= end) {
                        return Err(Denied::Deadline);
                    }
                    (Some(at), false)
                }
            };
            tracing::debug!(?wait, "waiting for the token's budget");
            match until {
                None => changed.await,
                Some(at) => {
                    let timed_out = tokio::time::timeout_at(at, &mut changed).await.is_err();
                    if timed_out && to_deadline {
                        return Err(Denied::Deadline);
                    }
                }
            }
        }
    }
}

impl State {
    fn check(&mut self, now: Instant) -> Result<(), Wait> {
        if let Some(at) = self.paused_until {
            if at > now {
                return Err(Wait::Until { at, server: true });
            }
            self.paused_until = None;
        }
        if !self.answered && self.in_flight > 0 {
            return Err(Wait::Answer);
        }
        if let Some(cap) = &mut self.cap
            && self.sent >= cap.last
        {
            if cap.reset_at > now {
                return Err(Wait::Until {
                    at: cap.reset_at,
                    server: true,
                });
            }
            // The server admits more by now: one call goes to learn how many.
            cap.last = self.sent + 1;
            cap.reset_at = later(now, UNKNOWN_RESET);
        }
        if let Some(paced) = &mut self.bucket {
            let wait = paced.bucket.wait_for(1.0, now);
            if !wait.is_zero() {
                return Err(Wait::Until {
                    at: later(now, wait),
                    server: false,
                });
            }
        }
        if let Some(at) = self.fleet.as_ref().and_then(Fleet::hold_until)
            && at > now
        {
            return Err(Wait::Until { at, server: false });
        }
        if let Some(pace) = &mut self.fleet_pace {
            // Calls on their way within the share too: what a round trip
            // at its pace sends, twice over for the round trip's jitter.
            let round_trip = self.round_trip.unwrap_or(0.0);
            let allowed = (pace.per_second * round_trip * 2.0).ceil().max(1.0);
            if self.in_flight as f64 >= allowed {
                return Err(Wait::Answer);
            }
            let wait = pace.wait_for(1.0, now);
            if !wait.is_zero() {
                return Err(Wait::Until {
                    at: later(now, wait),
                    server: false,
                });
            }
        }
        Ok(())
    }

    /// Reads the fleet's spending from an answer the server counted at
    /// `at` that left `remaining`, and sets this client's share from it.
    fn observe_fleet(&mut self, at: Instant, remaining: u64, own: bool, now: Instant) {
        let Some(paced) = &self.bucket else {
            return;
        };
        let policy = paced.policy;
        let fleet = self.fleet.get_or_insert_with(|| {
            Fleet::new(
                policy.quota,
                policy.window,
                margin(policy.quota as f64),
                now,
            )
        });
        if own {
            fleet.sent(at);
        }
        fleet.observe(at, policy.quota.saturating_sub(remaining));
        self.fleet_pace = match (fleet.pace(), self.fleet_pace.take()) {
            (None, _) => None,
            (Some(pace), Some(mut bucket)) => {
                bucket.set_rate(pace, 1.0, now);
                Some(bucket)
            }
            (Some(pace), None) => Some(Bucket::full(1.0, pace, now)),
        };
    }

    fn take(&mut self, now: Instant) {
        self.sent += 1;
        self.in_flight += 1;
        if let Some(paced) = &mut self.bucket {
            paced.bucket.reserve(1.0, now);
        }
        if let Some(pace) = &mut self.fleet_pace {
            pace.reserve(1.0, now);
        }
    }
}

impl Pass {
    /// Reads an answer's figures: its `status`, what its headers said, and
    /// the Cloudflare codes of a failure.
    pub(crate) fn answered(mut self, status: StatusCode, figures: Figures, codes: &[u32]) {
        let now = Instant::now();
        let pacer = Arc::clone(&self.pacer);
        let mut state = pacer.lock();
        self.release(&mut state);
        state.answered = true;
        let (sent, forgotten) = (state.sent, state.forgotten);
        if let Some(policy) = figures.policy {
            match &mut state.bucket {
                Some(bucket) if bucket.policy == policy => {}
                bucket => {
                    let mut fresh = Paced::new(policy, now);
                    match bucket {
                        Some(old) => {
                            old.bucket.refill(now);
                            fresh.bucket.tokens = old.bucket.tokens.min(fresh.bucket.capacity);
                        }
                        None => {
                            // Only the calls that can still be in the
                            // server's window count: by its own figures
                            // when it sent them, else this client's calls
                            // since it last heard the server does not limit.
                            let (in_window, horizon) = match figures.quota {
                                Some(quota) => {
                                    let unseen =
                                        (sent - self.basis).saturating_add(self.in_flight_before);
                                    let counted = policy.quota.saturating_sub(quota.remaining);
                                    (
                                        counted.saturating_add(unseen),
                                        quota.reset.unwrap_or(policy.window),
                                    )
                                }
                                None => (sent - forgotten, policy.window),
                            };
                            fresh.start_spent(in_window as f64, horizon);
                        }
                    }
                    *bucket = Some(fresh);
                    state.fleet = None;
                    state.fleet_pace = None;
                }
            }
        }
        let silent = figures.quota.is_none() && figures.policy.is_none();
        if silent && status.is_success() && state.cap.is_none_or(|cap| self.basis >= cap.basis) {
            state.cap = None;
            state.bucket = None;
            state.fleet = None;
            state.fleet_pace = None;
            state.remaining = None;
            // The calls sent up to this one were answered by a server
            // that said nothing of a limit: a policy announced later does
            // not count them.
            state.forgotten = state.forgotten.max(self.basis);
        }
        let asked = figures.retry_after;
        let blocked =
            status == StatusCode::TOO_MANY_REQUESTS && codes.contains(&codes::API_RATE_LIMITED);
        let quota = figures.quota.or_else(|| {
            // A block announced without the header: nothing is left until
            // the `Retry-After` it gives.
            blocked.then_some(headers::Quota {
                remaining: 0,
                reset: asked,
            })
        });
        if let Some(quota) = quota
            && state.cap.is_none_or(|cap| self.basis >= cap.basis)
        {
            let mut reset = quota.reset.unwrap_or(UNKNOWN_RESET);
            if quota.remaining == 0 {
                // "Nothing left, more now" would have one call after
                // another probe the server at the pace of its answers.
                reset = reset.max(UNKNOWN_RESET);
            }
            state.cap = Some(Cap {
                basis: self.basis,
                last: self
                    .basis
                    .saturating_add(quota.remaining)
                    .saturating_sub(self.in_flight_before),
                reset_at: later(now, reset),
            });
        }
        if self.counted {
            let took = now.saturating_duration_since(self.sent_at).as_secs_f64();
            state.round_trip = Some(state.round_trip.map_or(took, |rtt| 0.8 * rtt + 0.2 * took));
        }
        if let Some(quota) = figures.quota
            && !blocked
        {
            if state.cap.is_none_or(|cap| self.basis >= cap.basis) {
                state.remaining = Some(quota.remaining);
            }
            // The server counted the call about half way through its round trip.
            let at = self.sent_at + now.saturating_duration_since(self.sent_at) / 2;
            state.observe_fleet(at, quota.remaining, self.counted, now);
        }
        if blocked && let Some(asked) = asked {
            let until = later(now, asked);
            state.paused_until = Some(state.paused_until.map_or(until, |at| at.max(until)));
        }
        drop(state);
        pacer.changed.notify_waiters();
    }

    fn release(&mut self, state: &mut State) {
        if !self.done {
            self.done = true;
            state.in_flight = state.in_flight.saturating_sub(u64::from(self.counted));
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        if !self.done {
            let pacer = Arc::clone(&self.pacer);
            let mut state = pacer.lock();
            self.release(&mut state);
            drop(state);
            pacer.changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    const OK: StatusCode = StatusCode::OK;

    fn figures(r: u64, t: u64, policy: Option<(u64, u64)>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = |text: String| HeaderValue::from_str(&text).expect("a header value");
        headers.insert("ratelimit", value(format!("\"default\";r={r};t={t}")));
        if let Some((q, w)) = policy {
            headers.insert(
                "ratelimit-policy",
                value(format!("\"default\";q={q};w={w}")),
            );
        }
        headers
    }

    fn read(r: u64, t: u64, policy: Option<(u64, u64)>) -> Figures {
        Figures::read(&figures(r, t, policy))
    }

    fn admitted(pacer: &Arc<Pacer>, calls: usize) -> usize {
        let now = Instant::now();
        (0..calls)
            .take_while(|_| pacer.try_admit(true, now).map(std::mem::forget).is_ok())
            .count()
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_allows_r_less_the_calls_it_may_not_have_counted() {
        let pacer = Arc::new(Pacer::default());
        let now = Instant::now();
        let a = pacer.try_admit(true, now).expect("the first goes");
        a.answered(OK, read(10, 5, None), &[]);
        let b = pacer.try_admit(true, now).expect("within r");
        let c = pacer.try_admit(true, now).expect("within r");
        // C was sent while B was in flight: B may come after it at the server.
        c.answered(OK, read(5, 5, None), &[]);
        assert_eq!(admitted(&pacer, 10), 4, "5 left, less B still in flight");
        let at = now + Duration::from_secs(5);
        assert_eq!(
            pacer.try_admit(true, now).map(drop),
            Err(Wait::Until { at, server: true })
        );
        // B's answer is older than C's: it does not raise the cap.
        b.answered(OK, read(9, 5, None), &[]);
        assert!(pacer.try_admit(true, now).is_err());
        // Once `t` passed, one call goes to learn the new figures.
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(admitted(&pacer, 10), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn absurd_figures_do_not_panic() {
        let pacer = Arc::new(Pacer::default());
        let now = Instant::now();
        let first = pacer.try_admit(true, now).expect("first");
        let max = u64::MAX;
        first.answered(OK, read(max, max, Some((max, max))), &[]);
        assert_eq!(
            admitted(&pacer, 1_000),
            1_000,
            "a burst of 1 % of all of them"
        );
        let pass = pacer.try_admit(false, now).expect("uncounted");
        pass.answered(OK, read(0, max, Some((1, 1))), &[]);
        let denied = pacer.admit(true, None, Duration::from_secs(60)).await;
        assert_eq!(
            denied.map(drop),
            Err(Denied::Exhausted(headers::LONGEST_SERVER_WAIT))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn calls_that_do_not_count_are_never_held_but_read() {
        let pacer = Arc::new(Pacer::default());
        let now = Instant::now();
        let first = pacer.try_admit(true, now).expect("first");
        first.answered(OK, read(0, 30, None), &[]);
        assert!(pacer.try_admit(true, now).is_err());
        let pull = pacer.try_admit(false, now).expect("a pull is not held");
        pull.answered(OK, read(3, 30, None), &[]);
        assert_eq!(admitted(&pacer, 10), 3, "the pull's answer raised the cap");
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_call_goes_alone_and_no_headers_mean_no_pacing() {
        let pacer = Arc::new(Pacer::default());
        let now = Instant::now();
        let first = pacer.try_admit(true, now).expect("first");
        assert_eq!(pacer.try_admit(true, now).map(drop), Err(Wait::Answer));
        drop(first); // no answer came: the next one tries
        let second = pacer.try_admit(true, now).expect("second");
        second.answered(OK, Figures::default(), &[]);
        assert_eq!(admitted(&pacer, 5_000), 5_000, "no figures, no pacing");
    }

    #[tokio::test(start_paused = true)]
    async fn figures_gone_from_a_success_pace_no_more() {
        let pacer = Arc::new(Pacer::default());
        let now = Instant::now();
        let first = pacer.try_admit(true, now).expect("first");
        first.answered(OK, read(0, 300, Some((1_200, 300))), &[]);
        assert_eq!(admitted(&pacer, 10), 0, "nothing left");
        // An error without the headers says nothing; a success without them does.
        let ack = pacer.try_admit(false, now).expect("never held");
        ack.answered(StatusCode::BAD_GATEWAY, Figures::default(), &[]);
        assert_eq!(admitted(&pacer, 10), 0, "still nothing left");
        let ack = pacer.try_admit(false, now).expect("never held");
        ack.answered(OK, Figures::default(), &[]);
        assert_eq!(admitted(&pacer, 5_000), 5_000, "no figures, no pacing");
    }

    #[tokio::test(start_paused = true)]
    async fn a_block_holds_every_counted_call_and_is_not_waited_out() {
        let pacer = Arc::new(Pacer::default());
        let start = Instant::now();
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("300"));
        let pass = pacer.try_admit(true, start).expect("first");
        pass.answered(
            StatusCode::TOO_MANY_REQUESTS,
            Figures::read(&headers),
            &[codes::API_RATE_LIMITED],
        );
        let at = start + Duration::from_secs(300);
        assert_eq!(
            pacer.try_admit(true, start).map(drop),
            Err(Wait::Until { at, server: true })
        );
        let denied = pacer.admit(true, None, Duration::from_secs(60)).await;
        assert_eq!(
            denied.map(drop),
            Err(Denied::Exhausted(Duration::from_secs(300)))
        );
        assert_eq!(start.elapsed(), Duration::ZERO, "failed at once");
        assert!(pacer.try_admit(false, start).is_ok(), "pulls still go");
        let waited = pacer.admit(true, None, Duration::from_secs(600)).await;
        assert!(waited.is_ok());
        assert_eq!(start.elapsed(), Duration::from_secs(300));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_dropped_takes_nothing() {
        let pacer = Arc::new(Pacer::default());
        let start = Instant::now();
        let first = pacer.try_admit(true, start).expect("first");
        first.answered(OK, read(0, 5, None), &[]);
        let cut = tokio::time::timeout(
            Duration::from_secs(1),
            pacer.admit(true, None, Duration::from_secs(60)),
        )
        .await;
        assert!(cut.is_err(), "still waiting when dropped");
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(
            admitted(&pacer, 10),
            1,
            "the probe after `t` is still there"
        );
        let ends = Some(Instant::now() + Duration::from_millis(10));
        let late = pacer.admit(true, ends, Duration::from_secs(60)).await;
        assert_eq!(
            late.map(drop),
            Err(Denied::Deadline),
            "a wait past the deadline is not started"
        );
    }

    /// Sends `calls` counted calls one after another, each answered with
    /// `status` and no figures.
    fn answered_without_figures(pacer: &Arc<Pacer>, calls: usize, status: StatusCode) {
        let now = Instant::now();
        for call in 0..calls {
            let pass = pacer.try_admit(true, now);
            let pass = pass.unwrap_or_else(|wait| panic!("call {call} held: {wait:?}"));
            pass.answered(status, Figures::default(), &[]);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn calls_the_server_did_not_limit_do_not_count_against_its_full_budget() {
        let pacer = Arc::new(Pacer::default());
        // The limits switched off: 10,000 calls answered without figures.
        answered_without_figures(&pacer, 10_000, OK);
        // Switched on again, and the server says its whole budget is there.
        let now = Instant::now();
        let pass = pacer.try_admit(true, now).expect("not paced");
        pass.answered(OK, read(1_200, 300, Some((1_200, 300))), &[]);
        assert!(pacer.try_admit(true, now).is_ok(), "goes at once");
        // The whole burst of 12, the call above included: none is in the
        // window by the server's count.
        assert_eq!(admitted(&pacer, 100), 11);
    }

    #[tokio::test(start_paused = true)]
    async fn the_server_s_remaining_budget_sets_a_fresh_bucket() {
        let pacer = Arc::new(Pacer::default());
        answered_without_figures(&pacer, 50, OK);
        let now = Instant::now();
        let pass = pacer.try_admit(true, now).expect("not paced");
        // 1,195 counted in the window (other processes): 5 left, back in 10 s.
        pass.answered(OK, read(5, 10, Some((1_200, 300))), &[]);
        assert_eq!(
            pacer.try_admit(true, now).map(drop),
            Err(Wait::Until {
                at: now + Duration::from_secs(10),
                server: false,
            }),
            "the server's `t`, not a wait for 1,195 calls to be paid back"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_policy_alone_never_owes_more_than_its_window() {
        let pacer = Arc::new(Pacer::default());
        // Failures without figures say nothing: these calls may all count.
        answered_without_figures(&pacer, 1, OK);
        answered_without_figures(&pacer, 10_000, StatusCode::BAD_GATEWAY);
        let now = Instant::now();
        let pass = pacer.try_admit(true, now).expect("not paced");
        let mut headers = HeaderMap::new();
        headers.insert(
            "ratelimit-policy",
            HeaderValue::from_static("\"default\";q=1200;w=300"),
        );
        pass.answered(OK, Figures::read(&headers), &[]);
        // Every one of them has left the window 300 s from now.
        let Err(Wait::Until { at, server: false }) = pacer.try_admit(true, now).map(drop) else {
            panic!("held by the pace");
        };
        let wait = at - now;
        assert!(wait <= Duration::from_secs(300), "{wait:?}");
        assert!(wait > Duration::from_secs(299), "{wait:?}");
        // After a silent success, only the calls since count.
        let pacer = Arc::new(Pacer::default());
        answered_without_figures(&pacer, 10_000, OK);
        let pass = pacer.try_admit(true, now).expect("not paced");
        pass.answered(OK, Figures::read(&headers), &[]);
        assert_eq!(
            admitted(&pacer, 100),
            11,
            "the burst less the call answered"
        );
    }

    /// A follower sending as fast as the pacer lets it, against a server
    /// counting Cloudflare's sliding window and answering at once: over
    /// three windows it never goes over, and gets more than 95 % of the quota.
    #[tokio::test(start_paused = true)]
    async fn a_follower_never_exceeds_the_window_and_uses_most_of_it() {
        const QUOTA: usize = 1_200;
        let window = Duration::from_secs(300);
        let pacer = Arc::new(Pacer::default());
        let start = Instant::now();
        let mut counted: VecDeque<Instant> = VecDeque::new();
        let mut most = 0;
        let mut sent = 0;
        while start.elapsed() < 3 * window {
            let now = Instant::now();
            match pacer.try_admit(true, now) {
                Ok(pass) => {
                    while counted.front().is_some_and(|&at| at + window <= now) {
                        counted.pop_front();
                    }
                    assert!(
                        counted.len() < QUOTA,
                        "over the window at {:?}",
                        start.elapsed()
                    );
                    counted.push_back(now);
                    most = most.max(counted.len());
                    sent += 1;
                    let reset = counted
                        .front()
                        .map_or(0, |&at| (at + window - now).as_secs_f64().ceil() as u64);
                    let left = (QUOTA - counted.len()) as u64;
                    pass.answered(OK, read(left, reset, Some((1_200, 300))), &[]);
                }
                Err(Wait::Until { at, .. }) => tokio::time::advance(at - now).await,
                Err(Wait::Answer) => panic!("nothing is in flight"),
            }
        }
        assert!(most <= 1_170, "2.5 % below the quota: {most}");
        let share = f64::from(sent) / (3.0 * QUOTA as f64);
        assert!(share > 0.95, "{sent} calls, {share:.3} of the quota");
    }
}
