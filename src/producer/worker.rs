//! The producer's task: takes messages from the buffer into the open batch,
//! and sends a batch once it is due (full, lingered, flushed or closing) and
//! a slot and the token's budget are there, filling it meanwhile.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::time::Instant;
use tracing::Instrument as _;

use super::error::ProducerError;
use super::producer::{Queued, SenderReply, not_sent};
use super::summary::ProducerCounters;
use crate::batch::{BatchPlanner, PlannedBatch, Rejected};
use crate::client::Client;
use crate::codes;
use crate::counters::add;
use crate::error::Error;
use crate::instance::Instance;
use crate::queue::Queue;
use crate::response::PushReceipt;
use crate::time::{after, sleep_until};
use crate::token_budget::Pass;
use crate::token_budget::server_wait;

/// A message's sender, and when the producer took the message: its send
/// timeout runs from then.
pub(super) struct Taken {
    reply: SenderReply,
    at: Instant,
}

/// How many batches may be in flight now: the setting, halved after a 429
/// with code 971 or 10250, and raised back by one after as many successes
/// as it allows.
#[derive(Debug)]
pub(super) struct Flow {
    max: usize,
    limit: AtomicUsize,
    in_flight: AtomicUsize,
    successes: AtomicUsize,
    freed: Notify,
}

impl Flow {
    pub(super) fn new(max: usize) -> Flow {
        Flow {
            max,
            limit: AtomicUsize::new(max),
            in_flight: AtomicUsize::new(0),
            successes: AtomicUsize::new(0),
            freed: Notify::new(),
        }
    }

    /// Halves the limit (at least 1); whether it was lowered.
    fn slow_down(&self) -> bool {
        self.successes.store(0, Ordering::Relaxed);
        self.limit
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |limit| {
                (limit > 1).then_some(limit / 2)
            })
            .is_ok()
    }

    fn succeeded(&self) {
        let limit = self.limit.load(Ordering::Acquire);
        if limit >= self.max {
            return;
        }
        if self.successes.fetch_add(1, Ordering::AcqRel) + 1 >= limit {
            self.successes.store(0, Ordering::Relaxed);
            let _ = self
                .limit
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |limit| {
                    (limit < self.max).then_some(limit + 1)
                });
        }
    }

    fn finished(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.freed.notify_waiters();
    }

    /// Waits until one more batch may be in flight.
    async fn slot(&self) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.in_flight.load(Ordering::Acquire) < self.limit.load(Ordering::Acquire) {
                return;
            }
            freed.await;
        }
    }
}

/// What a batch due to go needs: its slot, and the pacer's pass when the
/// client paces.
type Ready = (OwnedSemaphorePermit, Option<Pass>);

/// Waits until a batch may go now: a slot under the flow's limit, a
/// permit, the client's caps and the pacing by the token's budget (as
/// long as that takes: the producer holds its batches through a block).
/// Takes the pass only as it returns, so it may be dropped (a message came
/// in) and started again without spending anything.
async fn ready(
    flow: Arc<Flow>,
    permits: Arc<Semaphore>,
    client: Client,
    queue_id: Arc<str>,
    budget_wait: Arc<AtomicU64>,
    counters: Arc<ProducerCounters>,
) -> Option<Ready> {
    flow.slot().await;
    let permit = permits.acquire_owned().await.ok()?;
    if let Some(caps) = client.caps() {
        loop {
            let wait = caps.peek(&queue_id, Instant::now());
            if wait.is_zero() {
                break;
            }
            tokio::time::sleep(wait).await;
        }
    }
    let pass = match client.pacer() {
        Some(pacer) => {
            let _waiting = Waiting::since_now(&budget_wait, &counters);
            Some(pacer.admit(true, None, Duration::MAX).await.ok()?)
        }
        None => None,
    };
    Some((permit, pass))
}

/// Adds the time from its making to its drop, in microseconds, to a
/// counter, and records it as one wait for the budget: a wait that ends,
/// or is dropped, is counted either way.
struct Waiting<'a> {
    since: Instant,
    total: &'a AtomicU64,
    counters: &'a ProducerCounters,
}

impl Waiting<'_> {
    fn since_now<'a>(total: &'a AtomicU64, counters: &'a ProducerCounters) -> Waiting<'a> {
        Waiting {
            since: Instant::now(),
            total,
            counters,
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let waited = self.since.elapsed();
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.total.fetch_add(micros, Ordering::Relaxed);
        self.counters.budget_waits.record(waited.as_secs_f64());
    }
}

/// The producer's task: owns the buffer's receiving end and the open batch.
pub(super) struct Worker {
    pub(super) queue: Queue,
    /// The queue's id, shared: asked for on every turn of the loop.
    pub(super) queue_id: Arc<str>,
    pub(super) receiver: mpsc::Receiver<Queued>,
    pub(super) planner: BatchPlanner<Taken>,
    pub(super) linger: Duration,
    pub(super) flow: Arc<Flow>,
    pub(super) permits: Arc<Semaphore>,
    pub(super) max_batches: u32,
    pub(super) send_timeout: Duration,
    pub(super) counters: Arc<ProducerCounters>,
    /// Microseconds batches waited for the token's budget.
    pub(super) budget_wait: Arc<AtomicU64>,
    /// A batch closed by a message that did not fit in it; it goes first.
    pub(super) sealed: Option<PlannedBatch<Taken>>,
    /// When the open batch's linger ends (`None`: never, or no batch).
    pub(super) linger_ends: Option<Instant>,
    pub(super) linger_over: bool,
    /// Flushes waiting for the batches holding the messages before them to go.
    pub(super) flushes: Vec<oneshot::Sender<()>>,
    pub(super) closers: Vec<oneshot::Sender<()>>,
    /// The buffer is closed and empty.
    pub(super) drained: bool,
    pub(super) finished: bool,
    /// The label of its gauges, held (and its number with it) while the
    /// producer's task runs.
    pub(super) _instance: Instance,
}

impl Worker {
    pub(super) async fn run(mut self) {
        loop {
            if self.sealed.is_none() && self.planner.pending() == 0 {
                self.release_flushes();
                if self.drained {
                    let _all = self.permits.acquire_many(self.max_batches).await;
                    self.finished = true;
                    for done in self.closers.drain(..) {
                        let _ = done.send(());
                    }
                    return;
                }
            }
            let due = self.sealed.is_some()
                || (self.planner.pending() > 0
                    && (self.planner.is_full()
                        || self.linger_over
                        || self.drained
                        || !self.flushes.is_empty()));
            // While a batch waits to go, the open one keeps filling; a full
            // one stops taking messages, and the buffer pushes back.
            let take = !self.drained && self.sealed.is_none() && !self.planner.is_full();
            let lingering = self.linger_ends.is_some() && !self.linger_over;
            let ready = ready(
                Arc::clone(&self.flow),
                Arc::clone(&self.permits),
                self.queue.client().clone(),
                Arc::clone(&self.queue_id),
                Arc::clone(&self.budget_wait),
                Arc::clone(&self.counters),
            );
            tokio::select! {
                biased;
                Some((permit, pass)) = ready, if due => self.dispatch(permit, pass),
                item = self.receiver.recv(), if take => self.take(item),
                () = sleep_until(self.linger_ends), if lingering => self.linger_over = true,
                else => {
                    // Only a closed semaphore gets here, and it is never closed.
                    tracing::error!("the producer's slots are gone; it stops");
                    return;
                }
            }
        }
    }

    fn take(&mut self, item: Option<Queued>) {
        match item {
            Some(Queued::Message(message, reply)) => {
                add(&self.counters.accepted, 1);
                let taken = Taken {
                    reply,
                    at: Instant::now(),
                };
                match self.planner.add(taken, message) {
                    Err(Rejected { tag, error }) => {
                        add(&self.counters.rejected, 1);
                        let _ = tag
                            .reply
                            .send(Err(ProducerError::Rejected(Arc::new(error))));
                    }
                    Ok(Some(full)) => {
                        self.sealed = Some(full);
                        self.start_linger();
                    }
                    Ok(None) if self.planner.pending() == 1 => self.start_linger(),
                    Ok(None) => {}
                }
            }
            Some(Queued::Flush(done)) => self.flushes.push(done),
            Some(Queued::Close(done)) => {
                // What is in the buffer still goes; nothing more comes in.
                self.receiver.close();
                self.closers.push(done);
            }
            None => self.drained = true,
        }
    }

    /// A message opened a batch: its linger starts now. A linger too long
    /// for the clock means: only when full, flushed or closed.
    fn start_linger(&mut self) {
        self.linger_ends = after(Instant::now(), self.linger);
        self.linger_over = false;
    }

    /// Lets the flushes waiting for the batches sent so far wait for them:
    /// the semaphore is fair, so this waits for those, not for later ones.
    fn release_flushes(&mut self) {
        for done in self.flushes.drain(..) {
            let all = Arc::clone(&self.permits);
            let max = self.max_batches;
            tokio::spawn(async move {
                let _all = all.acquire_many(max).await;
                let _ = done.send(());
            });
        }
    }

    /// Sends the batch that is due, in a task of its own.
    fn dispatch(&mut self, permit: OwnedSemaphorePermit, pass: Option<Pass>) {
        let batch = match self.sealed.take() {
            Some(sealed) => sealed,
            None => {
                self.linger_ends = None;
                self.linger_over = false;
                let Some(open) = self.planner.take() else {
                    return;
                };
                open
            }
        };
        let count = batch.len() as u64;
        // The oldest message's timeout: a refused batch is sent again until then.
        let oldest = batch.tags().iter().map(|taken| taken.at).min();
        let timeout = self.send_timeout;
        let deadline = oldest.and_then(|at| after(at, timeout));
        add(&self.counters.batches, 1);
        add(&self.counters.in_flight, count);
        self.counters.batch_size.record(count as f64);
        self.flow.in_flight.fetch_add(1, Ordering::AcqRel);
        let queue = self.queue.clone();
        let counters = Arc::clone(&self.counters);
        let budget_wait = Arc::clone(&self.budget_wait);
        let flow = Arc::clone(&self.flow);
        let span = crate::spans::send(queue.id(), count);
        tokio::spawn(
            async move {
                let sending = Sending {
                    queue: &queue,
                    counters: &counters,
                    budget_wait: &budget_wait,
                    flow: &flow,
                    deadline,
                    timeout,
                };
                let result = sending.send(&batch, pass).await;
                let replies = batch.into_tags().into_iter().map(|taken| taken.reply);
                match result {
                    Ok(receipt) => {
                        flow.succeeded();
                        add(&counters.landed, count);
                        for reply in replies {
                            let _ = reply.send(Ok(receipt));
                        }
                    }
                    Err(error) => {
                        add(&counters.failed, count);
                        tracing::warn!(messages = count, %error, may_have_landed = error.may_have_landed(), "a batch push failed");
                        for reply in replies {
                            let _ = reply.send(Err(error.clone()));
                        }
                    }
                }
                counters.in_flight.sub(count);
                flow.finished();
                drop(permit);
            }
            .instrument(span),
        );
    }
}

/// What sending one batch needs, besides the batch.
struct Sending<'a> {
    queue: &'a Queue,
    counters: &'a ProducerCounters,
    budget_wait: &'a AtomicU64,
    flow: &'a Flow,
    /// When its oldest message's send timeout passes (`None`: never).
    deadline: Option<Instant>,
    timeout: Duration,
}

impl Sending<'_> {
    /// Pushes one batch through the queue's call path, which retries it as
    /// its policy says; a batch refused for the rate (nothing landed) is
    /// sent again, after the wait the refusal asked and the pacer's, until
    /// the deadline.
    async fn send(
        &self,
        batch: &PlannedBatch<Taken>,
        mut pass: Option<Pass>,
    ) -> Result<PushReceipt, ProducerError> {
        let counters = self.counters;
        let flow = self.flow;
        let observe = |error: &Error| {
            if error.status() == Some(429) {
                add(&counters.throttled, 1);
                if refused_for_rate(error) && flow.slow_down() {
                    add(&counters.slowdowns, 1);
                }
            }
        };
        let mut attempts: u32 = 0;
        let mut resends: u32 = 0;
        loop {
            let result = self
                .queue
                .push_planned_observed(batch, &observe, pass.take())
                .await;
            let error = match result {
                Ok(receipt) => return Ok(receipt),
                Err(error) => error,
            };
            attempts = attempts.saturating_add(error.attempts());
            if !refused_for_rate(&error) {
                return Err(ProducerError::Failed(Arc::new(error)));
            }
            let timed_out = |last: Error| ProducerError::TimedOut {
                timeout: self.timeout,
                attempts,
                last: Arc::new(last),
            };
            resends = resends.saturating_add(1);
            let policy = self.queue.retry_policy();
            // What the refusal asked, never under the policy's backoff (a
            // `Retry-After: 0` must not resend back to back) nor over the
            // longest server wait (a figure of days must not hold senders
            // forever, even with no send timeout).
            let wait = server_wait(
                error.retry_after(),
                policy.backoff_for(resends),
                Duration::MAX,
            );
            let resend_at = after(Instant::now(), wait);
            if self
                .deadline
                .is_some_and(|end| resend_at.is_none_or(|at| at >= end))
            {
                return Err(timed_out(error));
            }
            add(&counters.held, 1);
            tracing::info!(
                messages = batch.len(),
                attempts,
                wait_ms = wait.as_millis() as u64,
                %error,
                "a batch refused for the rate is held and sent again"
            );
            {
                // A block of the token (971) is a wait for its budget; the
                // queue's rate (10250) is not.
                let _waiting = refused_for_budget(&error)
                    .then(|| Waiting::since_now(self.budget_wait, self.counters));
                tokio::time::sleep(wait).await;
            }
            if let Some(pacer) = self.queue.client().pacer() {
                let _waiting = Waiting::since_now(self.budget_wait, self.counters);
                match pacer.admit(true, self.deadline, Duration::MAX).await {
                    Ok(admitted) => pass = Some(admitted),
                    Err(_) => return Err(timed_out(error)),
                }
            }
        }
    }
}

/// A refusal for the token's budget: a 429 with code 971, or a call the
/// pacer held back.
fn refused_for_budget(error: &Error) -> bool {
    matches!(error, Error::RateLimited { .. }) || error.codes().contains(&codes::API_RATE_LIMITED)
}

/// A refusal that says nothing landed and that a later attempt may pass:
/// a 429 with code 971 (the token's budget) or 10250 (the queue's rate),
/// or a call the pacer held back ([`Error::RateLimited`]).
fn refused_for_rate(error: &Error) -> bool {
    matches!(error, Error::RateLimited { .. })
        || (error.status() == Some(429)
            && error
                .codes()
                .iter()
                .any(|c| [codes::API_RATE_LIMITED, codes::QUEUE_OVERLOADED].contains(c)))
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Only a runtime shutting down ends the task early. What it holds
        // was not sent: its senders hear so. Flushes and closes in the
        // buffer are not messages.
        let mut buffered = 0u64;
        let held = self.sealed.take().into_iter().chain(self.planner.take());
        for Taken { reply, .. } in held.flat_map(PlannedBatch::into_tags) {
            buffered += 1;
            not_sent(reply);
        }
        while let Ok(item) = self.receiver.try_recv() {
            if let Queued::Message(_, reply) = item {
                buffered += 1;
                not_sent(reply);
            }
        }
        // Batches already spawned die with the runtime as well: they count
        // until their outcome is sent, which now never happens.
        let in_flight = self.counters.in_flight.get();
        let messages = buffered + in_flight;
        if messages > 0 {
            tracing::error!(
                queue = self.queue.id(),
                messages,
                in_flight,
                "the producer stopped with messages whose outcome is unknown (those in flight may have landed); their senders get ProducerError::Dropped"
            );
        }
    }
}
