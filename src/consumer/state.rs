//! The state the consumer's tasks share: the queue, the settings, the
//! counters, the lease table, the flow-control slots, and the way to the
//! acker. Also the [`Ticket`] each pulled message carries until it is settled.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::allowance::AllowanceShare;
use super::lease_table::LeaseTable;
use super::round_trip::RoundTrip;
use super::settings::Settings;
use super::settlement::{Inbox, Settlement, SettlementKind};
use super::summary::ConsumerCounters;
use crate::codes;
use crate::counters::{Tally, add, sub};
use crate::error::Error;
use crate::instance::Instance;
use crate::message::PulledMessage;
use crate::queue::Queue;
use crate::token_budget::{LONGEST_SERVER_WAIT, server_wait, server_wait_ends};

pub(crate) struct ConsumerState {
    pub queue: Queue,
    pub settings: Settings,
    pub counters: Arc<ConsumerCounters>,
    table: Mutex<LeaseTable>,
    /// Woken when leases are added, so that the keeper looks at the new due times.
    pub keeper_wake: Notify,
    /// Flow-control slots free: messages that may still be asked for.
    /// Below zero while pulls that returned more than they asked for owe
    /// slots. Only the puller takes slots, so an atomic is enough: what is
    /// free when it looks stays free until it takes it.
    free_slots: AtomicI64,
    /// Woken when a pull may start: a full batch of slots is free (or the
    /// first one, when no pull is on its way), or, while the puller waits
    /// for them, bytes in flight or settlements on their way went down.
    pub room: Notify,
    /// The puller waits for bytes in flight or settlements on their way to
    /// go down, not for slots: every settlement must wake it.
    pub wants_room: AtomicBool,
    /// Set by a [`PullSwitch`](super::PullSwitch): no pull starts while it
    /// is (pulls on their way still land). Cleared, it wakes `room`.
    pub pulls_paused: AtomicBool,
    /// This replica's share of the queue's allowance of messages pulled.
    pub pulled_share: AllowanceShare,
    /// This replica's share of the queue's allowance of leases settled or
    /// extended.
    pub leases_share: AllowanceShare,
    /// The round trip observed on the consumer's calls.
    pub round_trip: RoundTrip,
    /// Cancelled when the grace period of the shutdown is over: a stream
    /// yields nothing more.
    pub grace_over: CancellationToken,
    /// Woken when the last handler settles.
    pub idle: Notify,
    /// Settlements on their way to the acker.
    pub inbox: Inbox,
    /// Cancelled when the consumer starts shutting down.
    pub stopping: CancellationToken,
    /// The panic of the consumer's own task (the acker, the keeper), to be
    /// resumed once the consumer has shut down.
    crash: Mutex<Option<Box<dyn Any + Send>>>,
    /// When the API's block of the credential ends (429 / 971 with a long
    /// `Retry-After`), as last reported.
    blocked_until: Mutex<Option<Instant>>,
    /// The label of its gauges, held (and its number with it) while the
    /// consumer lives.
    _instance: Instance,
}

/// The consumer's own tasks besides the puller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Acker,
    Keeper,
}

impl ConsumerState {
    pub(crate) fn new(
        queue: Queue,
        settings: Settings,
        stopping: CancellationToken,
        instance: Instance,
    ) -> ConsumerState {
        let free_slots = AtomicI64::new(slots(settings.max_in_flight));
        // The first pulls (half the most on their way) go at once, as a
        // consumer alone would send them; past that, the share's pace.
        let first_pulls = settings.batch_size as usize * settings.max_pulls_in_flight.div_ceil(2);
        let pulled_share =
            AllowanceShare::of_pulls(settings.queue_allowance, settings.queue_limit, first_pulls);
        let leases_share = AllowanceShare::new(settings.queue_allowance, settings.ack_batch_size);
        let counters = Arc::new(ConsumerCounters::new(queue.id(), instance.label()));
        counters.pace.set(u64::from(settings.queue_allowance));
        ConsumerState {
            queue,
            settings,
            counters,
            table: Mutex::default(),
            keeper_wake: Notify::new(),
            free_slots,
            room: Notify::new(),
            wants_room: AtomicBool::new(false),
            pulls_paused: AtomicBool::new(false),
            pulled_share,
            leases_share,
            round_trip: RoundTrip::default(),
            grace_over: CancellationToken::new(),
            idle: Notify::new(),
            inbox: Inbox::default(),
            stopping,
            crash: Mutex::default(),
            blocked_until: Mutex::default(),
            _instance: instance,
        }
    }

    /// A task of the consumer's own panicked: the consumer stops, and the
    /// panic is kept for [`ConsumerState::take_crash`]. Without its acker nothing
    /// can be flushed: what waits for it is given up, and so is what comes later.
    pub(crate) fn crashed(&self, part: Part, panic: Box<dyn Any + Send>) {
        tracing::error!(
            queue = self.queue.id(),
            ?part,
            "a task of the consumer panicked: the consumer stops, and the panic is resumed in its caller"
        );
        self.crash
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(panic);
        self.stopping.cancel();
        if part == Part::Acker {
            let lost = self.inbox.abandon();
            add(&self.counters.unflushed, lost.len() as u64);
            self.finish_many(lost.into_iter().map(|s| s.key));
        }
    }

    /// How long to wait after `error` before the next call of its kind,
    /// where `floor` is the caller's own backoff: the one decision of the
    /// consumer's waits after a failure (see the
    /// [caps](crate::retry#the-caps-on-a-servers-wait)). A block of the
    /// credential is waited out, at most
    /// [`LONGEST_SERVER_WAIT`](crate::retry::LONGEST_SERVER_WAIT); another
    /// server-asked wait is honoured up to the queue's
    /// [`max_retry_after`](crate::retry::RetryPolicy::max_retry_after), a
    /// longer one falls back to the backoff; never under `floor`.
    pub(crate) fn pause_after(&self, error: &Error, floor: Duration) -> Duration {
        if let Some(block) = self.blocked_for(error) {
            return block;
        }
        let cap = self.queue.retry_policy().max_retry_after;
        server_wait(self.asked_wait(error), floor, cap)
    }

    /// The wait `error`'s answer asked for, if the consumer honours it: up
    /// to the queue's `max_retry_after`.
    fn asked_wait(&self, error: &Error) -> Option<Duration> {
        let cap = self.queue.retry_policy().max_retry_after;
        error.retry_after().filter(|wait| *wait <= cap)
    }

    /// The block of the credential this error reports, if it is one (429
    /// with code 971, or [`Error::RateLimited`], and a `Retry-After` longer
    /// than a minute, up to the five minutes Cloudflare blocks for, which
    /// [`LONGEST_SERVER_WAIT`](crate::retry::LONGEST_SERVER_WAIT) bounds):
    /// how long to wait. The first call to report a block counts it in
    /// `Summary::blocked`.
    fn blocked_for(&self, error: &Error) -> Option<Duration> {
        let asked = error.retry_after()?;
        // Refused by the API (429 / 971), or held back unsent by the
        // client's pacing, which knows of the block from an earlier answer.
        let refused =
            error.status() == Some(429) && error.codes().contains(&codes::API_RATE_LIMITED);
        let held = matches!(error, Error::RateLimited { .. });
        let block = (refused || held) && asked > Duration::from_secs(60);
        if !block {
            return None;
        }
        let wait = asked.min(LONGEST_SERVER_WAIT);
        let now = Instant::now();
        let until = server_wait_ends(now, wait);
        let mut blocked = self
            .blocked_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if blocked.is_none_or(|end| end <= now) {
            add(&self.counters.blocked, 1);
            tracing::warn!(
                queue = self.queue.id(),
                wait_s = wait.as_secs(),
                "the API blocks this credential: pulling stops and settlements wait until the block ends"
            );
        }
        *blocked = Some(blocked.map_or(until, |end| end.max(until)));
        Some(wait)
    }

    /// When the block of the credential ends, if one runs.
    pub(crate) fn block_ends(&self) -> Option<Instant> {
        let blocked = self
            .blocked_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        blocked.filter(|end| *end > Instant::now())
    }

    /// The panic of a task of the consumer's own, if one panicked.
    pub(crate) fn take_crash(&self) -> Option<Box<dyn Any + Send>> {
        self.crash
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    pub(crate) fn table(&self) -> MutexGuard<'_, LeaseTable> {
        // Every update of the table is complete before it can panic: a
        // poisoned lock still holds a consistent table.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the messages of a pull sent at `pulled_at`; each comes back
    /// with its ticket, and with them their body bytes in all. Their
    /// flow-control slots were taken by the puller.
    pub(crate) fn register(
        self: &Arc<Self>,
        messages: Vec<PulledMessage>,
        pulled_at: Instant,
    ) -> (Vec<(PulledMessage, Ticket)>, u64) {
        let margin = self.margin();
        let lease = self.settings.visibility_timeout;
        let mut registered = Vec::with_capacity(messages.len());
        let mut bytes_total = 0;
        {
            let mut table = self.table();
            for message in messages {
                let bytes = message.body().raw().len() as u64;
                bytes_total += bytes;
                let key = table.insert(message.lease_id.clone(), bytes, pulled_at, lease, margin);
                let ticket = Ticket {
                    shared: Arc::clone(self),
                    key,
                    attempts: message.attempts,
                    done: false,
                };
                registered.push((message, ticket));
            }
        }
        add(&self.counters.in_flight, registered.len() as u64);
        add(&self.counters.in_flight_bytes, bytes_total);
        self.keeper_wake.notify_one();
        (registered, bytes_total)
    }

    /// Sends a handled message's settlement to the acker, and frees its
    /// slot: the ack's round trip is not charged to the handlers. False when
    /// it was settled or released already.
    pub(crate) fn settle(&self, key: u64, action: SettlementKind) -> bool {
        let (idle, freed) = {
            let mut table = self.table();
            let Some(freed) = table.begin_settle(key, Instant::now()) else {
                return false;
            };
            (table.handling() == 0, freed)
        };
        if let Some(bytes) = freed {
            self.handed_back(1, bytes);
        }
        self.send_settlement(key, action);
        if idle {
            self.idle.notify_waiters();
        }
        true
    }

    /// Messages whose handlers are done with them: their slots and bytes
    /// are free.
    pub(crate) fn handed_back(&self, count: usize, bytes: u64) {
        if count == 0 {
            return;
        }
        self.return_slots(count);
        sub(&self.counters.in_flight_bytes, bytes);
        // A wake-up per settled message would cost more than the message,
        // and would start pulls of one: the puller is woken when a pull is
        // worth starting.
        let free = self.free_slots();
        let before = free.saturating_sub(count);
        let batch = self.settings.batch_size as usize;
        if before == 0
            || (before < batch && free >= batch)
            || self.wants_room.load(Ordering::Relaxed)
        {
            self.room.notify_waiters();
        }
    }

    /// The margin to extend leases by, for the round trip observed so far.
    pub(crate) fn margin(&self) -> Duration {
        self.round_trip
            .margin(self.settings.margin(), self.settings.visibility_timeout)
    }

    /// Counts a refused call in `counter` and by limit when it was a 429,
    /// and tells `share` when the queue's limit refused it (code
    /// 10250) for a call reserved at `reserved`.
    pub(crate) fn note_refusal(
        &self,
        error: &Error,
        counter: &Tally,
        share: &AllowanceShare,
        reserved: Instant,
    ) {
        if error.status() != Some(429) {
            return;
        }
        add(counter, 1);
        if error.refused_by_queue() {
            add(&self.counters.refused_by_queue, 1);
            share.refused(reserved, self.asked_wait(error));
            self.note_pace();
        } else if error.codes().contains(&codes::API_RATE_LIMITED) {
            add(&self.counters.refused_by_token, 1);
        }
    }

    /// Reserves a pull of `n` messages from this replica's share; how long
    /// to wait before sending it.
    pub(crate) fn reserve_pull(&self, n: usize) -> Duration {
        let wait = self.pulled_share.reserve(n);
        self.note_pace();
        wait
    }

    /// Keeps the pulled share's pace where the monitor reads it.
    fn note_pace(&self) {
        self.counters.pace.set(self.pulled_share.pace() as u64);
    }

    pub(crate) fn send_settlement(&self, key: u64, action: SettlementKind) {
        let settlement = Settlement {
            key,
            action,
            queued_at: Instant::now(),
        };
        if !self.inbox.push(settlement, self.settings.ack_batch_size) {
            // The acker only ends after the consumer stopped and flushed:
            // this settlement came too late to be sent.
            tracing::warn!(
                queue = self.queue.id(),
                "a settlement came after the consumer finished; the message will be delivered again"
            );
            add(&self.counters.unflushed, 1);
            self.finish(key);
        }
    }

    /// Lets a lease expire on purpose; false when it was settled already.
    pub(crate) fn leave(&self, key: u64) -> bool {
        let Some(freed) = self.table().begin_settle(key, Instant::now()) else {
            return false;
        };
        if let Some(bytes) = freed {
            self.handed_back(1, bytes);
        }
        add(&self.counters.left, 1);
        self.finish(key);
        if self.table().handling() == 0 {
            self.idle.notify_waiters();
        }
        true
    }

    /// Forgets a lease whose fate is known, and frees its slot.
    pub(crate) fn finish(&self, key: u64) {
        self.finish_many([key]);
    }

    /// Forgets leases whose fate is known, and frees the slots of those
    /// still with a handler together: freed one by one, they would wake the
    /// puller for pulls of one.
    pub(crate) fn finish_many(&self, keys: impl IntoIterator<Item = u64>) {
        let (mut count, mut handling, mut bytes) = (0, 0, 0);
        {
            let mut table = self.table();
            for key in keys {
                if let Some(entry) = table.remove(key) {
                    count += 1;
                    if entry.holds_slot {
                        handling += 1;
                        bytes += entry.bytes;
                    }
                }
            }
        }
        if count == 0 {
            return;
        }
        sub(&self.counters.in_flight, count as u64);
        self.handed_back(handling, bytes);
        if self.wants_room.load(Ordering::Relaxed) {
            // Settlements on their way went down.
            self.room.notify_waiters();
        }
    }

    /// Frees `n` flow-control slots; what over-full pulls owe is paid first.
    pub(crate) fn return_slots(&self, n: usize) {
        self.free_slots.fetch_add(slots(n), Ordering::Relaxed);
    }

    /// Takes `n` slots beyond those reserved, for messages a pull returned
    /// beyond what it asked for: owed when none are free (the count goes
    /// below zero), so that `max_in_flight` holds once they are settled.
    pub(crate) fn take_slots(&self, n: usize) {
        self.free_slots.fetch_sub(slots(n), Ordering::Relaxed);
    }

    /// How many slots are free now.
    pub(crate) fn free_slots(&self) -> usize {
        usize::try_from(self.free_slots.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// The retry delay of a message delivered `attempts` times.
    pub(crate) fn retry_delay(&self, attempts: u32) -> Duration {
        self.settings.delay_for(attempts)
    }
}

/// The right to settle one pulled message, once.
///
/// Dropped unsettled, it retries the message with the retry delay; during
/// shutdown it releases it (a retry with no delay).
pub(crate) struct Ticket {
    pub shared: Arc<ConsumerState>,
    pub key: u64,
    pub attempts: u32,
    done: bool,
}

impl Ticket {
    /// Settles with `action`; false if the message was settled or released already.
    pub(crate) fn settle(mut self, action: SettlementKind) -> bool {
        self.done = true;
        self.shared.settle(self.key, action)
    }

    /// Lets the lease expire; false if the message was settled already.
    pub(crate) fn leave(mut self) -> bool {
        self.done = true;
        self.shared.leave(self.key)
    }

    /// A retry with the policy's delay for this message.
    pub(crate) fn policy_retry(&self) -> SettlementKind {
        SettlementKind::Retry(self.shared.retry_delay(self.attempts))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let action = if self.shared.stopping.is_cancelled() {
            SettlementKind::Release
        } else {
            self.policy_retry()
        };
        if self.shared.settle(self.key, action) {
            tracing::debug!(
                queue = self.shared.queue.id(),
                ?action,
                "a message was dropped unsettled"
            );
        }
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("key", &self.key)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// A count of slots as the signed counter holds it.
fn slots(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
