//! A settled message, from the handler's word to the API: the handler's
//! [`Verdict`] (public), what is sent for it ([`SettlementKind`]), and the
//! acker's inbox of each message's [`Settlement`] on its way to the API
//! (whose request is an [`Acks`](crate::Acks) and whose answer an
//! [`AckOutcome`](crate::response::AckOutcome)). Whoever settles pushes here (the consumer's shared state),
//! the acker takes from here, and a flush sends what it took: the one
//! thing all three read, in a file that needs none of them.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::time::after;

/// What to do with a handled message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Acknowledge it: it is deleted.
    Ack,
    /// Put it back: after this delay (at most 24 hours), or, with `None`,
    /// after the consumer's [`RetryDelay`](crate::consumer::RetryDelay) for its attempts.
    Retry(Option<Duration>),
    /// Stop extending its lease and let it expire: it comes back after the
    /// visibility timeout, with an attempt used.
    Leave,
}

/// What is sent for a settled message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SettlementKind {
    Ack,
    /// A retry after this delay (already within the API's limit).
    Retry(Duration),
    /// Given back at shutdown: a retry with no delay.
    Release,
}

/// One message's settlement, on its way to the API.
#[derive(Debug)]
pub(crate) struct Settlement {
    pub key: u64,
    pub action: SettlementKind,
    pub queued_at: Instant,
}

/// Settlements waiting for the acker. Whoever settles pushes here under a
/// lock, and wakes the acker only for the first settlement (to start the
/// interval) and for each full batch: a wake-up per settlement would cost
/// more than the settlement.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    state: Mutex<InboxState>,
    pub(super) wake: Notify,
}

#[derive(Debug, Default)]
pub(super) struct InboxState {
    pub(super) pending: Vec<Settlement>,
    finish: Option<oneshot::Sender<()>>,
    closed: bool,
}

/// What the acker does next.
pub(super) enum Next {
    Finish(oneshot::Sender<()>, Vec<Settlement>),
    Flush(Vec<Settlement>),
    Wait(Option<Instant>),
}

impl Inbox {
    pub(super) fn lock(&self) -> MutexGuard<'_, InboxState> {
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

    pub(super) fn next(&self, batch: usize, interval: Duration) -> Next {
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
