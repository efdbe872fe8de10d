//! One chunk of acks and retries on its way: sent, tried again after
//! failures for as long as its leases can be kept, and accounted for
//! exactly once, whatever happens to it (given up, cancelled at the
//! shutdown's flush timeout).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument as _;

use super::settlement::{Settlement, SettlementKind};
use super::state::ConsumerState;
use crate::counters::add;
use crate::error::Error;
use crate::request::Acks;
use crate::retry_loop::QueueRefusal;
use crate::time::after_or_far;

/// The settlements of a chunk not yet accounted for: dropped armed (the
/// flush given up, or cancelled at the flush timeout), they are counted
/// unflushed and their leases forgotten.
struct Unsent<'a> {
    shared: &'a ConsumerState,
    keys: Vec<u64>,
    armed: bool,
}

impl Drop for Unsent<'_> {
    fn drop(&mut self) {
        if self.armed {
            add(&self.shared.counters.unflushed, self.keys.len() as u64);
            self.shared.finish_many(self.keys.iter().copied());
        }
    }
}

/// Sends one chunk, trying again after failures while its leases can be
/// kept (`max_lease` after the earliest pull among them); gives up at once
/// after a failure that retrying cannot fix.
pub(crate) async fn flush(shared: Arc<ConsumerState>, chunk: Vec<Settlement>) {
    let shared = &*shared;
    let settings = &shared.settings;
    let mut unsent = Unsent {
        shared,
        keys: chunk.iter().map(|s| s.key).collect(),
        armed: true,
    };
    let give_up_at = {
        let table = shared.table();
        chunk
            .iter()
            .filter_map(|s| table.give_up_at(s.key, settings.max_lease))
            .min()
    };
    let mut backoff = settings.error_backoff;
    backoff.reset();
    // Whether an earlier attempt may have been applied: a repeat of an
    // applied ack gets a warning, which then means "settled already" more
    // likely than "lease lost".
    let mut resend = false;
    for attempt in 1u32.. {
        if attempt > 1 {
            add(&shared.counters.settlement_resends, chunk.len() as u64);
        }
        let reserved = Instant::now();
        tokio::time::sleep(shared.leases_share.reserve(chunk.len())).await;
        // Boxed, so that the flush task spawned per chunk stays small: the
        // ack call's future is large, and spawning copies the task's.
        let error = match Box::pin(send(shared, &chunk, resend)).await {
            Ok(()) => {
                unsent.armed = false;
                return;
            }
            Err(error) => error,
        };
        add(&shared.counters.settle_errors, 1);
        if error.refused_by_queue() {
            // Nothing was applied: the tokens go back, and the share's
            // lower pace spaces the resend.
            shared.leases_share.refund(chunk.len());
        }
        shared.note_refusal(
            &error,
            &shared.counters.rate_limited_settles,
            &shared.leases_share,
            reserved,
        );
        if may_have_applied(&error) {
            resend = true;
            shared
                .table()
                .mark_maybe_applied(unsent.keys.iter().copied());
        }
        if !error.is_retryable() {
            give_up(shared, chunk.len(), &error, "retrying cannot fix it");
            return;
        }
        let wait = if error.refused_by_queue() {
            // The share's lower pace, and its hold for a longer
            // `Retry-After`, space the resend.
            Duration::ZERO
        } else {
            shared.pause_after(&error, backoff.next_wait())
        };
        // Waiting past the leases would make the settlements worthless.
        if give_up_at.is_some_and(|at| after_or_far(Instant::now(), wait) >= at) {
            give_up(
                shared,
                chunk.len(),
                &error,
                "their leases can no longer be kept",
            );
            return;
        }
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

fn give_up(shared: &ConsumerState, settlements: usize, error: &Error, why: &str) {
    tracing::error!(
        queue = shared.queue.id(),
        settlements,
        %error,
        "acks and retries given up ({why}): their messages will be delivered again when their leases expire"
    );
}

/// Whether a failed call may have taken effect all the same: a timeout, a
/// broken connection, a 5xx, a 429 from something other than the API's
/// rate limiter. Not a refused connection or the API's own rate limit.
fn may_have_applied(error: &Error) -> bool {
    let class = error.retry_class();
    class.is_retryable() && !class.may_repeat(false, false)
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
            // Every retry carries its delay, 0 included: without one, the
            // queue's own retry delay would apply instead.
            acks = match settlement.action {
                SettlementKind::Ack => acks.ack(lease),
                SettlementKind::Retry(delay) => acks.retry_after(lease, delay),
                SettlementKind::Release => acks.retry_after(lease, Duration::ZERO),
            };
        }
        acks
    };
    let span = crate::spans::settle(shared.queue.id(), chunk.len());
    add(&shared.counters.settle_requests, 1);
    let outcome = shared
        .queue
        .ack_with(acks, QueueRefusal::Returned)
        .instrument(span)
        .await?;
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
    let warning_counter = if resend {
        &counters.resend_warnings
    } else {
        &counters.settle_warnings
    };
    // Warnings of the old list form name no lease: the answer's counts (or,
    // without them, the number of warnings) say how many of the others were
    // not applied, and those are counted as warnings, so that each message
    // still ends in exactly one counter.
    let mut applied_acks = outcome.acked.map(|n| n as usize);
    let mut applied_retries = outcome.retried.map(|n| n as usize);
    let mut unnamed_left = unattributed;
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
            let applied = unattributed == 0 || {
                let count = match settlement.action {
                    SettlementKind::Ack => &mut applied_acks,
                    SettlementKind::Retry(_) | SettlementKind::Release => &mut applied_retries,
                };
                match count {
                    Some(0) => false,
                    Some(n) => {
                        *n -= 1;
                        true
                    }
                    None if unnamed_left > 0 => {
                        unnamed_left -= 1;
                        false
                    }
                    None => true,
                }
            };
            let counter = match (applied, settlement.action) {
                (false, _) => warning_counter,
                (true, SettlementKind::Ack) => &counters.acked,
                (true, SettlementKind::Retry(_)) => &counters.retried,
                (true, SettlementKind::Release) => &counters.released,
            };
            add(counter, 1);
        }
    }
    drop(table);
    shared.finish_many(chunk.iter().map(|s| s.key));
    if unattributed > 0 {
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
