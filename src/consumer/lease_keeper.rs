//! The lease keeper: extends leases before they expire, several calls at
//! once, each with a deadline inside the margin, so that one slow answer
//! never costs the other leases theirs.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::lease_table::Due;
use super::round_trip::RoundTrip;
use super::state::ConsumerState;
use crate::counters::add;
use crate::message::LeaseId;
use crate::retry_loop::QueueRefusal;
use crate::time::sleep_until;

/// Leases per extension call: like a pull.
const CHUNK: usize = 100;

/// Extends leases as they come due, until `stop`. The calls run as tasks
/// of their own, so that the keeper sees new due times, and its stop
/// signal, while they are on their way; stopping cancels the calls.
pub(crate) async fn keep(shared: Arc<ConsumerState>, stop: CancellationToken) {
    let mut calls = JoinSet::new();
    loop {
        let wake = shared.keeper_wake.notified();
        let next = shared.table().next_due();
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            Some(joined) = calls.join_next(), if !calls.is_empty() => {
                if let Err(error) = joined
                    && error.is_panic()
                {
                    // The keeper's own catch reports it as a crash of the consumer.
                    std::panic::resume_unwind(error.into_panic());
                }
            }
            () = wake => {}
            () = sleep_until(next) => extend_due(&shared, &mut calls),
        }
    }
}

fn extend_due(shared: &Arc<ConsumerState>, calls: &mut JoinSet<()>) {
    let settings = &shared.settings;
    let margin = shared.margin();
    let now = Instant::now();
    // Leases due a little later go along: one call instead of several.
    let taken = shared.table().take_due(
        now,
        now + margin / 4,
        settings.max_lease,
        settings.visibility_timeout,
        margin,
    );
    let mut groups: HashMap<Duration, Vec<(u64, LeaseId)>> = HashMap::new();
    for (key, lease_id, due) in taken {
        match due {
            Due::Extend(by) => groups.entry(by).or_default().push((key, lease_id)),
            Due::Capped => {
                add(&shared.counters.max_lease_reached, 1);
                tracing::warn!(
                    queue = shared.queue.id(),
                    lease = ?lease_id,
                    max_lease_ms = settings.max_lease.as_millis() as u64,
                    "the handler still runs at the maximum lease time: the lease is no longer extended"
                );
            }
            Due::Expired => {
                add(&shared.counters.leases_lost, 1);
                tracing::warn!(
                    queue = shared.queue.id(),
                    lease = ?lease_id,
                    "a lease expired before its message was settled: it may be delivered again"
                );
            }
        }
    }
    for (by, leases) in groups {
        for chunk in leases.chunks(CHUNK) {
            let shared = Arc::clone(shared);
            let chunk = chunk.to_vec();
            calls.spawn(async move { extend_chunk(&shared, chunk, by, margin).await });
        }
    }
}

/// One extension call, within its deadline. A slow or failed call is tried
/// again while the leases last; an answer whose warnings name no lease
/// (the old list form) is sent again in halves, so that no lease is
/// counted lost for a warning that may be about another.
fn extend_chunk<'a>(
    shared: &'a ConsumerState,
    chunk: Vec<(u64, LeaseId)>,
    by: Duration,
    margin: Duration,
) -> futures_util::future::BoxFuture<'a, ()> {
    Box::pin(async move {
        let reserved = Instant::now();
        let wait = shared.leases_share.reserve(chunk.len());
        // Keeping the leases wins over the share's pace and over a hold the
        // server asked for: the call goes while the first of them can still
        // be extended (a refusal then costs one request; waiting past it
        // would cost the lease).
        let expires_first = shared
            .table()
            .expires_first(chunk.iter().map(|(key, _)| *key));
        let keepable = expires_first
            .and_then(|expiry| expiry.checked_sub(RoundTrip::extension_deadline(margin)));
        let wait = keepable.map_or(wait, |until| {
            wait.min(until.saturating_duration_since(reserved))
        });
        tokio::time::sleep(wait).await;
        let span = crate::spans::extend(shared.queue.id(), chunk.len());
        let sent = Instant::now();
        let call = shared.queue.extend_with(
            chunk.iter().map(|(_, lease)| lease),
            by,
            QueueRefusal::Returned,
        );
        let lease_left =
            expires_first.map_or(margin, |expiry| expiry.saturating_duration_since(sent));
        let deadline = shared.round_trip.call_deadline(margin, lease_left);
        let result = tokio::time::timeout(deadline, call.instrument(span)).await;
        shared.round_trip.observe(sent.elapsed());
        let outcome = match result {
            Ok(Ok(outcome)) => outcome,
            failed => {
                add(&shared.counters.extend_errors, 1);
                let why = match &failed {
                    Ok(Err(error)) => {
                        if error.refused_by_queue() {
                            shared.leases_share.refund(chunk.len());
                        }
                        shared.note_refusal(
                            error,
                            &shared.counters.rate_limited_extends,
                            &shared.leases_share,
                            reserved,
                        );
                        error.to_string()
                    }
                    _ => "no answer within the deadline".to_owned(),
                };
                tracing::warn!(
                    queue = shared.queue.id(),
                    leases = chunk.len(),
                    error = %why,
                    "extending leases failed; trying again while they last"
                );
                let now = Instant::now();
                let mut table = shared.table();
                for (key, _) in &chunk {
                    table.retry_later(*key, now);
                }
                return;
            }
        };
        let warned: HashSet<&str> = outcome
            .warnings
            .iter()
            .filter_map(|w| w.subject.as_deref())
            .collect();
        let unattributed = outcome.warnings.iter().any(|w| w.subject.is_none());
        if unattributed && chunk.len() > 1 {
            // Which leases the warnings are about is unknown: extend them
            // again in halves until each answer is about one lease.
            let half = chunk.len() / 2;
            let (first, second) = (chunk[..half].to_vec(), chunk[half..].to_vec());
            futures_util::future::join(
                extend_chunk(shared, first, by, margin),
                extend_chunk(shared, second, by, margin),
            )
            .await;
            return;
        }
        let mut extended = 0;
        let mut table = shared.table();
        for (key, lease) in &chunk {
            if warned.contains(lease.as_str()) || unattributed {
                if table.maybe_applied(*key) {
                    // Most likely settled already by a flush whose answer
                    // was lost: the acker's resend counts it.
                    table.stop_extending(*key);
                } else if table.mark_lost(*key) {
                    add(&shared.counters.leases_lost, 1);
                    tracing::warn!(
                        queue = shared.queue.id(),
                        lease = ?lease,
                        "a lease could not be extended (its message was delivered again or deleted): it may be handled twice"
                    );
                }
            } else {
                table.extended(*key, sent, by, margin);
                extended += 1;
            }
        }
        add(&shared.counters.extended, extended);
    })
}
