//! The acker: gathers acks and retries from its [inbox](super::inbox), and
//! sends them by size or after the flush interval. Each chunk is flushed by a task of its own
//! ([`flush`](super::flush)), so a failing chunk never holds up the others;
//! at shutdown the last flushes get the flush timeout, no more.

use std::pin::pin;
use std::sync::Arc;

use tokio::task::JoinSet;

use super::flush;
use super::settlement::{Next, Settlement};
use super::state::ConsumerState;
use crate::time::sleep_until;

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
