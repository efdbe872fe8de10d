//! The puller: keeps several pulls on their way, as many as keep the
//! handlers fed within flow control and this replica's share of the
//! queue's allowance, and adapts that
//! number while the consumer runs: more while pulls come back full, fewer
//! after partial or empty pulls, 429s and errors.
//!
//! One call at a time gets at most 100 messages per round trip (1,000 a
//! second at 100 ms); Cloudflare serves a queue 5,000 a second. So pulls
//! overlap, and the replica's share of the queue's allowance
//! ([`AllowanceShare`](super::allowance::AllowanceShare)), not the round trip, paces a busy
//! consumer.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;
use tracing::Instrument as _;

use super::dispatch::{Mode, PoisonFn, dispatch, settleable};
use super::state::ConsumerState;
use crate::backoff::Backoff;
use crate::counters::{add, sub};
use crate::error::{Error, Result};
use crate::request::PullOptions;
use crate::response::PulledBatch;
use crate::retry_loop::QueueRefusal;
use crate::time::after_or_far;

/// A pull that came back: how many messages it asked for, when it was
/// sent, and its answer.
pub(crate) struct Landed {
    asked: u32,
    sent: Instant,
    result: Result<PulledBatch>,
}

/// The pulls on their way, and what decides the next ones.
pub(crate) struct Puller {
    shared: Arc<ConsumerState>,
    pulls: FuturesUnordered<BoxFuture<'static, Landed>>,
    /// How many pulls to keep on their way now.
    target: usize,
    /// No pull starts before this (after a partial or empty pull, a
    /// failure, a 429).
    next_launch: Instant,
    empty: Backoff,
    failing: Backoff,
    /// Messages asked for by the pulls on their way.
    asked_in_flight: usize,
    /// The mean body size of the messages pulled so far, to estimate what
    /// the pulls on their way will bring against the byte limit.
    mean_bytes: f64,
    /// Messages the mean is over (it stops moving much after a few thousand).
    sized: f64,
}

impl Puller {
    pub(crate) fn new(shared: Arc<ConsumerState>) -> Puller {
        let settings = &shared.settings;
        // Half the maximum: a busy queue reaches full speed within a round
        // trip, an empty one costs a few empty pulls before backing off.
        let target = settings.max_pulls_in_flight.div_ceil(2).max(1);
        let (empty, failing) = (settings.empty_backoff, settings.error_backoff);
        Puller {
            shared,
            pulls: FuturesUnordered::new(),
            target,
            next_launch: Instant::now(),
            empty,
            failing,
            asked_in_flight: 0,
            mean_bytes: 0.0,
            sized: 0.0,
        }
    }

    /// Pulls until the consumer stops (`None`) or a pull fails in a way
    /// that retrying cannot fix (`Some`). The pulls still on their way stay
    /// here, for [`Puller::land_in_flight`].
    pub(crate) async fn run(&mut self, mode: &Mode, poison: &PoisonFn) -> Option<Error> {
        let shared = Arc::clone(&self.shared);
        loop {
            // Enabled before the last look, so that room freed after it wakes us.
            let mut room = pin!(shared.room.notified());
            room.as_mut().enable();
            while self.launch() {}
            let waiting = self.next_launch > Instant::now();
            tokio::select! {
                biased;
                () = shared.stopping.cancelled() => return None,
                Some(landed) = self.pulls.next(), if !self.pulls.is_empty() => {
                    if let Err(fatal) = self.landed(landed, mode, poison) {
                        return Some(fatal);
                    }
                }
                () = room => {}
                () = tokio::time::sleep_until(self.next_launch), if waiting => {}
            }
        }
    }

    /// Whether pulls are still on their way.
    pub(crate) fn has_pulls_in_flight(&self) -> bool {
        !self.pulls.is_empty()
    }

    /// Waits for the next pull on its way and hands over what it brought;
    /// for the shutdown's grace period, which launches no more.
    pub(crate) async fn land_next(&mut self, mode: &Mode, poison: &PoisonFn) {
        if let Some(landed) = self.pulls.next().await {
            // A pull that fails for good now changes nothing: the consumer stops anyway.
            let _ = self.landed(landed, mode, poison);
        }
    }

    /// Starts one pull if every limit allows it; whether it did.
    fn launch(&mut self) -> bool {
        let shared = &self.shared;
        let settings = &shared.settings;
        if self.pulls.len() >= self.target || Instant::now() < self.next_launch {
            return false;
        }
        if let Some(end) = shared.block_ends() {
            self.next_launch = end;
            return false;
        }
        if shared.pulls_paused.load(Ordering::Acquire) {
            return false;
        }
        // Sizes are known only after a pull: what the pulls on their way
        // will bring is estimated from the sizes seen so far, so the byte
        // limit is soft by what they bring beyond the estimate.
        let bytes = shared.counters.in_flight_bytes.get() as f64;
        let coming = self.asked_in_flight as f64 * self.mean_bytes;
        let full = bytes + coming >= settings.max_bytes_in_flight as f64
            || shared.table().settling() >= settings.max_pending_settlements;
        shared.wants_room.store(full, Ordering::Relaxed);
        if full {
            return false;
        }
        // Only this task takes slots: what is free now stays free until taken.
        let free = shared.free_slots();
        let asked = settings
            .batch_size
            .min(u32::try_from(free).unwrap_or(u32::MAX));
        // While pulls are on their way, wait for a full batch of slots
        // rather than send pulls of a few messages each.
        if asked == 0 || (asked < settings.batch_size && !self.pulls.is_empty()) {
            return false;
        }
        // Sent only once the share allows it, so that a lower pace after a
        // refusal applies to every pull not sent yet.
        let wait = shared.pulled_share.wait_for(asked as usize);
        if !wait.is_zero() {
            self.next_launch = after_or_far(Instant::now(), wait);
            return false;
        }
        shared.take_slots(asked as usize);
        let wait = shared.reserve_pull(asked as usize);
        self.asked_in_flight += asked as usize;
        let in_flight = self.pulls.len() as u64 + 1;
        add(&shared.counters.pulls_in_flight, 1);
        shared.counters.max_pulls_in_flight.raise_to(in_flight);
        self.pulls
            .push(Box::pin(pull(Arc::clone(shared), asked, wait)));
        true
    }

    /// Takes in a pull that came back: hands its messages over and decides
    /// the next pulls; `Err` when it failed in a way retrying cannot fix.
    fn landed(&mut self, landed: Landed, mode: &Mode, poison: &PoisonFn) -> Result<(), Error> {
        let shared = Arc::clone(&self.shared);
        let settings = &shared.settings;
        let Landed {
            asked,
            sent,
            result,
        } = landed;
        sub(&shared.counters.pulls_in_flight, 1);
        self.asked_in_flight = self.asked_in_flight.saturating_sub(asked as usize);
        let now = Instant::now();
        let batch = match result {
            Ok(batch) => batch,
            Err(error) => {
                shared.return_slots(asked as usize);
                shared.pulled_share.refund(asked as usize);
                add(&shared.counters.pull_errors, 1);
                shared.note_refusal(
                    &error,
                    &shared.counters.rate_limited_pulls,
                    &shared.pulled_share,
                    sent,
                );
                if error.refused_by_queue() {
                    // The share answers it: a lower pace (and a hold for a
                    // `Retry-After` over a second). Halving the pulls on
                    // their way or backing off on top would idle a replica
                    // the others may not make up for.
                    return Ok(());
                }
                if !error.is_retryable() {
                    tracing::error!(queue = shared.queue.id(), %error, "pull failed for good; the consumer stops");
                    return Err(error);
                }
                self.target = (self.target / 2).max(1);
                let wait = shared.pause_after(&error, self.failing.next_wait());
                self.next_launch = self.next_launch.max(after_or_far(now, wait));
                tracing::warn!(
                    queue = shared.queue.id(),
                    %error,
                    wait_ms = wait.as_millis() as u64,
                    "pull failed; backing off"
                );
                return Ok(());
            }
        };
        self.failing.reset();
        shared
            .round_trip
            .observe(now.saturating_duration_since(sent));
        let got = batch.messages.len();
        let counters = &shared.counters;
        add(&counters.pulls, 1);
        add(&counters.received, got as u64);
        // An answer that does not say keeps the last known backlog.
        if let Some(backlog) = batch.backlog_count {
            counters.backlog.set(backlog);
            // The server counted it about half way through the round trip.
            let answered = sent + now.saturating_duration_since(sent) / 2;
            shared.pulled_share.observe(answered, backlog, got);
        }
        if counters.lag.recorded()
            && let Some(oldest) = batch.messages.iter().map(|m| m.timestamp_ms).min()
        {
            counters.lag.record(lag_seconds(oldest));
        }
        let reserved = asked as usize;
        if got < reserved {
            shared.pulled_share.refund(reserved - got);
        }
        let messages = settleable(&shared, batch.messages);
        // The slots were reserved for `asked` messages: give back what is
        // unused, take (or owe) what a longer answer needs.
        let used = messages.len();
        if used < reserved {
            shared.return_slots(reserved - used);
        } else if used > reserved {
            shared.take_slots(used - reserved);
        }
        let bytes = dispatch(&shared, mode, poison, messages, sent);
        if used > 0 {
            self.sized = (self.sized + used as f64).min(10_000.0);
            self.mean_bytes +=
                (bytes as f64 / used as f64 - self.mean_bytes) * (used as f64 / self.sized);
        }
        if got == 0 {
            // The backlog count includes leased and delayed messages, so it
            // cannot say whether more will come: back off, one pull at a time.
            add(&counters.empty_pulls, 1);
            self.target = 1;
            self.next_launch = self
                .next_launch
                .max(after_or_far(now, self.empty.next_wait()));
        } else if got < reserved {
            self.empty.reset();
            self.target = self.target.saturating_sub(1).max(1);
            self.next_launch = self.next_launch.max(after_or_far(now, self.empty.initial));
        } else {
            self.empty.reset();
            self.target = (self.target + 1).min(settings.max_pulls_in_flight);
        }
        Ok(())
    }
}

impl Drop for Puller {
    fn drop(&mut self) {
        // Pulls dropped on their way (past the grace period) are no longer in flight.
        sub(
            &self.shared.counters.pulls_in_flight,
            self.pulls.len() as u64,
        );
    }
}

/// One pull of `asked` messages, sent after `wait` (the share's).
async fn pull(shared: Arc<ConsumerState>, asked: u32, wait: Duration) -> Landed {
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    let span = crate::spans::receive(shared.queue.id());
    let options = PullOptions::new()
        .batch_size(asked)
        .visibility_timeout(shared.settings.visibility_timeout);
    // Lease expiries are estimated from here: the server cannot have
    // started a lease before the request was sent.
    let sent = Instant::now();
    // Boxed, so that the future the puller keeps per pull stays small: the
    // call's own is large, and would be copied as the pull is started.
    let result = Box::pin(shared.queue.pull_with(options, QueueRefusal::Returned))
        .instrument(span.clone())
        .await;
    if let Ok(batch) = &result {
        span.record("messaging.batch.message_count", batch.messages.len());
    }
    Landed {
        asked,
        sent,
        result,
    }
}

/// The seconds since `timestamp_ms` (Unix milliseconds), by this machine's
/// clock; 0 for a time ahead of it.
fn lag_seconds(timestamp_ms: u64) -> f64 {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    now_ms.saturating_sub(timestamp_ms) as f64 / 1000.0
}
