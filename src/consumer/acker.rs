//! The acker: gathers acks and retries, and sends them by size or after
//! the flush interval, retrying failed flushes before it gives up on them.

use std::collections::HashSet;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tracing::Instrument as _;

use super::shared::{Action, ConsumerState};
use crate::counters::add;
use crate::error::Error;
use crate::request::Acks;
use crate::time::{after, sleep_until};

/// The longest server-requested wait honoured between flush attempts; a
/// longer one falls back to the backoff (as the client's retry policy does).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// One message's settlement, on its way to the API.
#[derive(Debug)]
pub(crate) struct Settlement {
    pub key: u64,
    pub action: Action,
    pub queued_at: Instant,
}

/// Settlements waiting for the acker. Whoever settles pushes here under a
/// lock, and wakes the acker only for the first settlement (to start the
/// interval) and for each full batch: a wake-up per settlement would cost
/// more than the settlement.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
    wake: Notify,
}

#[derive(Debug, Default)]
struct InboxState {
    pending: Vec<Settlement>,
    finish: Option<oneshot::Sender<()>>,
    closed: bool,
}

/// What the acker does next.
enum Next {
    Finish(oneshot::Sender<()>, Vec<Settlement>),
    Flush(Vec<Settlement>),
    Wait(Option<Instant>),
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, InboxState> {
        // Pushes and takes are single steps: a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a settlement for a flush of up to `batch`; false once the
    /// acker has finished.
    pub(crate) fn push(&self, settlement: Settlement, batch: usize) -> bool {
        let wake = {
            let mut state = self.lock();
            if state.closed {
                return false;
            }
            state.pending.push(settlement);
            let n = state.pending.len();
            n == 1 || n.is_multiple_of(batch)
        };
        if wake {
            self.wake.notify_one();
        }
        true
    }

    /// Asks the acker to flush everything and stop; `done` is answered then,
    /// or dropped when the acker is gone.
    pub(crate) fn finish(&self, done: oneshot::Sender<()>) {
        {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            state.finish = Some(done);
        }
        self.wake.notify_one();
    }

    /// Closes the inbox of an acker that died: later pushes fail, a waiting
    /// `finish` is dropped; returns what was still waiting to be flushed.
    pub(crate) fn abandon(&self) -> Vec<Settlement> {
        let mut state = self.lock();
        state.closed = true;
        state.finish = None;
        std::mem::take(&mut state.pending)
    }

    fn next(&self, batch: usize, interval: Duration) -> Next {
        let mut state = self.lock();
        if let Some(done) = state.finish.take() {
            state.closed = true;
            return Next::Finish(done, std::mem::take(&mut state.pending));
        }
        if state.pending.len() >= batch {
            // The common case is exactly one batch: hand it over whole and
            // start the next at its full size, instead of growing it again.
            let rest = if state.pending.len() == batch {
                Vec::with_capacity(batch)
            } else {
                state.pending.split_off(batch)
            };
            return Next::Flush(std::mem::replace(&mut state.pending, rest));
        }
        // An interval too long for the clock means flushes by size only.
        Next::Wait(
            state
                .pending
                .first()
                .and_then(|s| after(s.queued_at, interval)),
        )
    }
}

/// Runs until told to finish.
pub(crate) async fn run(shared: Arc<ConsumerState>) {
    let batch = shared.settings.ack_batch_size;
    let interval = shared.settings.ack_interval;
    let inbox = &shared.inbox;
    loop {
        let mut woken = pin!(inbox.wake.notified());
        woken.as_mut().enable();
        match inbox.next(batch, interval) {
            Next::Finish(done, all) => {
                for chunk in chunks(all, batch) {
                    flush(&shared, chunk).await;
                }
                let _ = done.send(());
                return;
            }
            Next::Flush(chunk) => flush(&shared, chunk).await,
            Next::Wait(deadline) => {
                tokio::select! {
                    () = woken => {}
                    () = sleep_until(deadline) => {
                        let all = std::mem::take(&mut inbox.lock().pending);
                        for chunk in chunks(all, batch) {
                            flush(&shared, chunk).await;
                        }
                    }
                }
            }
        }
    }
}

fn chunks(mut all: Vec<Settlement>, size: usize) -> Vec<Vec<Settlement>> {
    let mut out = Vec::with_capacity(all.len().div_ceil(size));
    while all.len() > size {
        let rest = all.split_off(size);
        out.push(std::mem::replace(&mut all, rest));
    }
    if !all.is_empty() {
        out.push(all);
    }
    out
}

/// Sends one chunk, trying again after failures; gives up and reports after
/// the last attempt, or at once after a failure that retrying cannot fix.
async fn flush(shared: &ConsumerState, chunk: Vec<Settlement>) {
    let settings = &shared.settings;
    let mut backoff = settings.error_backoff;
    backoff.reset();
    // Whether an earlier attempt may have been applied: a repeat of an
    // applied ack gets a warning, which then means "settled already" more
    // likely than "lease lost".
    let mut resend = false;
    for attempt in 1..=settings.max_flush_attempts {
        let error = match send(shared, &chunk, resend).await {
            Ok(()) => return,
            Err(error) => error,
        };
        add(&shared.counters.settle_errors, 1);
        resend |= may_have_applied(&error);
        let last = attempt == settings.max_flush_attempts || !error.is_retryable();
        if last {
            give_up(shared, &chunk, &error);
            return;
        }
        let wait = error
            .retry_after()
            .filter(|d| *d <= MAX_RETRY_AFTER)
            .unwrap_or_else(|| backoff.next_wait());
        tracing::warn!(
            queue = shared.queue.id(),
            settlements = chunk.len(),
            attempt,
            wait_ms = wait.as_millis() as u64,
            %error,
            "flushing acks failed; trying again"
        );
        tokio::time::sleep(wait).await;
    }
}

/// Whether a failed call may have taken effect all the same: a timeout, a
/// broken connection, a 5xx, a 429 from something other than the API's
/// rate limiter. Not a refused connection or the API's own rate limit.
fn may_have_applied(error: &Error) -> bool {
    let class = error.retry_class();
    class.is_retryable() && !class.may_repeat(false, false)
}

fn give_up(shared: &ConsumerState, chunk: &[Settlement], error: &Error) {
    tracing::error!(
        queue = shared.queue.id(),
        settlements = chunk.len(),
        %error,
        "acks and retries could not be flushed: their messages will be delivered again when their leases expire"
    );
    add(&shared.counters.unflushed, chunk.len() as u64);
    shared.finish_many(chunk.iter().map(|s| s.key));
}

/// Sends one chunk; `resend` when an earlier send of it may have been applied.
async fn send(shared: &ConsumerState, chunk: &[Settlement], resend: bool) -> Result<(), Error> {
    let now = Instant::now();
    // The lease ids stay in the table until the API answered: one lock for
    // the chunk, and no copy per settlement on its way.
    let acks = {
        let mut table = shared.table();
        let mut acks = Acks::new();
        for settlement in chunk {
            let Some((lease, newly_lost)) = table.settling_at(settlement.key, now) else {
                continue;
            };
            if newly_lost {
                add(&shared.counters.leases_lost, 1);
                tracing::warn!(
                    queue = shared.queue.id(),
                    ?lease,
                    "settling a message whose lease ran out: it may have been delivered again"
                );
            }
            acks = match settlement.action {
                Action::Ack => acks.ack(lease),
                Action::Retry(delay) if !delay.is_zero() => acks.retry_after(lease, delay),
                Action::Retry(_) | Action::Release => acks.retry(lease),
            };
        }
        acks
    };
    let span = tracing::info_span!(
        "settle",
        otel.name = %format_args!("settle {}", shared.queue.id()),
        otel.kind = "client",
        messaging.system = super::MESSAGING_SYSTEM,
        messaging.destination.name = shared.queue.id(),
        messaging.operation.type = "settle",
        messaging.operation.name = "ack",
        messaging.batch.message_count = chunk.len(),
    );
    add(&shared.counters.settle_requests, 1);
    let outcome = shared.queue.ack(acks).instrument(span).await?;
    let warned: HashSet<&str> = outcome
        .warnings
        .iter()
        .filter_map(|w| w.subject.as_deref())
        .collect();
    let unattributed = outcome
        .warnings
        .iter()
        .filter(|w| w.subject.is_none())
        .count();
    let counters = &shared.counters;
    let mut table = shared.table();
    for settlement in chunk {
        let Some(lease) = table.lease_id(settlement.key) else {
            continue;
        };
        if warned.contains(lease.as_str()) && resend {
            add(&counters.resend_warnings, 1);
            tracing::info!(
                queue = shared.queue.id(),
                lease = ?lease,
                "a settlement sent again after an uncertain failure got a warning: most likely the first send applied it"
            );
        } else if warned.contains(lease.as_str()) {
            add(&counters.settle_warnings, 1);
            tracing::warn!(
                queue = shared.queue.id(),
                lease = ?lease,
                "the API did not apply a settlement (the message was gone or delivered again): it may be handled twice"
            );
            if table.mark_lost(settlement.key) {
                add(&counters.leases_lost, 1);
            }
        } else {
            let counter = match settlement.action {
                Action::Ack => &counters.acked,
                Action::Retry(_) => &counters.retried,
                Action::Release => &counters.released,
            };
            add(counter, 1);
        }
    }
    drop(table);
    shared.finish_many(chunk.iter().map(|s| s.key));
    if unattributed > 0 {
        let counter = if resend {
            &counters.resend_warnings
        } else {
            &counters.settle_warnings
        };
        add(counter, unattributed as u64);
        tracing::warn!(
            queue = shared.queue.id(),
            warnings = unattributed,
            acked = ?outcome.acked,
            retried = ?outcome.retried,
            "the API warned about settlements without naming them"
        );
    }
    Ok(())
}
