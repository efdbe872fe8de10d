//! The acker: gathers acks and retries, and sends them by size or after
//! the flush interval. Each chunk is flushed by a task of its own
//! ([`flush`](super::flush)), so a failing chunk never holds up the others;
//! at shutdown the last flushes get the flush timeout, no more.

use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::flush;
use super::shared::{Action, ConsumerState};
use crate::time::{after, sleep_until};

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

/// Runs until told to finish; then gives the flushes still on their way
/// the flush timeout, and what is unsent after it is counted unflushed.
pub(crate) async fn run(shared: Arc<ConsumerState>) {
    let batch = shared.settings.ack_batch_size;
    let interval = shared.settings.ack_interval;
    let inbox = &shared.inbox;
    let mut flushes = JoinSet::new();
    loop {
        while let Some(joined) = flushes.try_join_next() {
            resume_panic(joined);
        }
        let mut woken = pin!(inbox.wake.notified());
        woken.as_mut().enable();
        match inbox.next(batch, interval) {
            Next::Finish(done, all) => {
                for chunk in chunks(all, batch) {
                    flushes.spawn(flush::flush(Arc::clone(&shared), chunk));
                }
                let timeout = shared.settings.flush_timeout;
                let drained = tokio::time::timeout(timeout, async {
                    while let Some(joined) = flushes.join_next().await {
                        resume_panic(joined);
                    }
                })
                .await;
                if drained.is_err() {
                    tracing::error!(
                        queue = shared.queue.id(),
                        flushes = flushes.len(),
                        timeout_ms = timeout.as_millis() as u64,
                        "the last acks and retries were not sent within the flush timeout: their messages will be delivered again when their leases expire"
                    );
                    // Each cancelled flush counts its settlements as unflushed.
                    flushes.shutdown().await;
                }
                let _ = done.send(());
                return;
            }
            Next::Flush(chunk) => {
                flushes.spawn(flush::flush(Arc::clone(&shared), chunk));
            }
            Next::Wait(deadline) => {
                tokio::select! {
                    () = woken => {}
                    Some(joined) = flushes.join_next(), if !flushes.is_empty() => resume_panic(joined),
                    () = sleep_until(deadline) => {
                        let all = std::mem::take(&mut inbox.lock().pending);
                        for chunk in chunks(all, batch) {
                            flushes.spawn(flush::flush(Arc::clone(&shared), chunk));
                        }
                    }
                }
            }
        }
    }
}

/// A flush that panicked takes the acker down with it, which the consumer
/// reports as a crash rather than counting the flush as done.
fn resume_panic(joined: Result<(), tokio::task::JoinError>) {
    if let Err(error) = joined
        && error.is_panic()
    {
        std::panic::resume_unwind(error.into_panic());
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
