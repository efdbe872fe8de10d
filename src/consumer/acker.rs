//! The acker: gathers acks and retries, and sends them by size or after
//! the flush interval, retrying failed flushes before it gives up on them.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tracing::Instrument as _;

use super::shared::{Action, Shared};
use super::summary::add;
use crate::error::Error;
use crate::message::LeaseId;
use crate::request::Acks;

/// The longest server-requested wait honoured between flush attempts; a
/// longer one falls back to the backoff (as the client's retry policy does).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// One message's settlement, on its way to the API.
#[derive(Debug)]
pub(crate) struct Settlement {
    pub key: u64,
    pub lease_id: LeaseId,
    pub action: Action,
    pub queued_at: Instant,
}

#[derive(Debug)]
pub(crate) enum AckerMsg {
    Settle(Settlement),
    /// Send everything pending, then answer and stop.
    Finish(oneshot::Sender<()>),
}

/// Runs until told to finish.
pub(crate) async fn run(shared: Arc<Shared>, mut inbox: mpsc::UnboundedReceiver<AckerMsg>) {
    let batch = shared.settings.ack_batch_size;
    let interval = shared.settings.ack_interval;
    let mut pending: Vec<Settlement> = Vec::new();
    let mut finished: Option<oneshot::Sender<()>> = None;
    loop {
        let deadline = pending.first().map(|s| s.queued_at + interval);
        tokio::select! {
            biased;
            message = inbox.recv() => {
                if message.is_none() {
                    // Every sender is gone: nothing more can come.
                    finished = Some(oneshot::channel().0);
                }
                let mut next = message;
                // Take whatever else is waiting: one wake-up for many settlements.
                while let Some(message) = next {
                    match message {
                        AckerMsg::Settle(settlement) => pending.push(settlement),
                        AckerMsg::Finish(reply) => {
                            finished = Some(reply);
                            break;
                        }
                    }
                    next = inbox.try_recv().ok();
                }
            }
            () = sleep_until(deadline) => {
                let all: Vec<Settlement> = std::mem::take(&mut pending);
                for chunk in chunks(all, batch) {
                    flush(&shared, chunk).await;
                }
                continue;
            }
        }
        while pending.len() >= batch {
            let rest = pending.split_off(batch);
            let chunk = std::mem::replace(&mut pending, rest);
            flush(&shared, chunk).await;
        }
        if let Some(reply) = finished.take() {
            // Settlements queued before the finish request are in `pending` now.
            while let Ok(AckerMsg::Settle(settlement)) = inbox.try_recv() {
                pending.push(settlement);
            }
            for chunk in chunks(std::mem::take(&mut pending), batch) {
                flush(&shared, chunk).await;
            }
            let _ = reply.send(());
            return;
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
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
async fn flush(shared: &Shared, chunk: Vec<Settlement>) {
    let settings = &shared.settings;
    let mut backoff = settings.error_backoff;
    backoff.reset();
    for attempt in 1..=settings.max_flush_attempts {
        let error = match send(shared, &chunk).await {
            Ok(()) => return,
            Err(error) => error,
        };
        add(&shared.counters.settle_errors, 1);
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

fn give_up(shared: &Shared, chunk: &[Settlement], error: &Error) {
    tracing::error!(
        queue = shared.queue.id(),
        settlements = chunk.len(),
        %error,
        "acks and retries could not be flushed: their messages will be delivered again when their leases expire"
    );
    add(&shared.counters.unflushed, chunk.len() as u64);
    shared.finish_many(chunk.iter().map(|s| s.key));
}

async fn send(shared: &Shared, chunk: &[Settlement]) -> Result<(), Error> {
    let now = Instant::now();
    {
        let mut table = shared.table();
        for settlement in chunk {
            if table.newly_lost_at(settlement.key, now) {
                add(&shared.counters.leases_lost, 1);
                tracing::warn!(
                    queue = shared.queue.id(),
                    lease = ?settlement.lease_id,
                    "settling a message whose lease ran out: it may have been delivered again"
                );
            }
        }
    }
    let acks = chunk.iter().fold(Acks::new(), |acks, s| match s.action {
        Action::Ack => acks.ack(&s.lease_id),
        Action::Retry(delay) if !delay.is_zero() => acks.retry_after(&s.lease_id, delay),
        Action::Retry(_) | Action::Release => acks.retry(&s.lease_id),
    });
    let span = tracing::info_span!(
        "settle",
        otel.name = format!("settle {}", shared.queue.id()),
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
    for settlement in chunk {
        if warned.contains(settlement.lease_id.as_str()) {
            add(&counters.settle_warnings, 1);
            if shared.table().mark_lost(settlement.key) {
                add(&counters.leases_lost, 1);
            }
            tracing::warn!(
                queue = shared.queue.id(),
                lease = ?settlement.lease_id,
                "the API did not apply a settlement (the message was gone or delivered again): it may be handled twice"
            );
        } else {
            let counter = match settlement.action {
                Action::Ack => &counters.acked,
                Action::Retry(_) => &counters.retried,
                Action::Release => &counters.released,
            };
            add(counter, 1);
        }
    }
    shared.finish_many(chunk.iter().map(|s| s.key));
    if unattributed > 0 {
        add(&counters.settle_warnings, unattributed as u64);
        tracing::warn!(
            queue = shared.queue.id(),
            warnings = unattributed,
            acked = outcome.acked,
            retried = outcome.retried,
            "the API warned about settlements without naming them"
        );
    }
    Ok(())
}
