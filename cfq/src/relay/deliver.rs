//! One message's way to the service, from the consumer's handler (or its
//! poison callback) to a [`Verdict`]: wait for a POST slot and the gate,
//! POST, and read the answer by the table (`answer.rs`), holding the
//! message while the service is down or busy.
//!
//! While a message waits, its handler runs, so the consumer keeps its
//! lease (an extension uses no attempt) and its flow-control slot: once
//! every slot is held, nothing more is pulled. The hold is bounded by
//! `--hold`, which the consumer's `max_lease` outlasts (see `mod.rs`), so
//! every message is settled while its lease is still kept.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cf_queues::consumer::{CancellationToken, RetryDelay, Verdict};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::answer::Answer;
use super::endpoint::Endpoint;
use super::gate::Gate;
use super::report::{Kind, Lines, RelayCounters, quoted};
use super::request::{QueueNames, Request};

/// What every delivery shares.
pub struct Relay {
    pub endpoint: Endpoint,
    pub gate: Gate,
    /// `--concurrency` permits: the POSTs on their way.
    pub slots: Semaphore,
    pub queue: QueueNames,
    pub hold: Duration,
    pub retry_delay: RetryDelay,
    /// The consumer's shutdown token: a message still waiting when it is
    /// cancelled is given back unsent.
    pub stopping: CancellationToken,
    pub counters: RelayCounters,
    pub lines: Lines,
}

/// The message a delivery is about, for its verdict and its lines.
pub struct About<'a> {
    pub id: &'a str,
    pub attempts: u32,
}

/// POSTs `request` until an answer settles it, the hold runs out, or the
/// relay stops; the message's verdict.
///
/// # Cancellation
///
/// Dropped (the consumer aborting its handler past the grace period), the
/// message is left to the consumer, which releases it; a POST on its way
/// is cut, and the service may have it.
pub async fn deliver(relay: &Relay, about: About<'_>, request: Request) -> Verdict {
    let hold_until = Instant::now() + relay.hold;
    // Kept from the first POST to the last: a held message goes again
    // before those that came after it.
    let mut slot = None;
    loop {
        let ready = tokio::select! {
            biased;
            () = relay.stopping.cancelled() => None,
            () = tokio::time::sleep_until(hold_until) => {
                return held_too_long(relay, &about);
            }
            pass = async {
                if slot.is_none() {
                    slot = relay.slots.acquire().await.ok();
                }
                relay.gate.pass().await
            } => Some(pass),
        };
        // Stopping, or a closed semaphore (nothing closes it): given back unsent.
        let (Some(pass), Some(_)) = (ready, &slot) else {
            add(&relay.counters.released);
            return Verdict::Retry(Some(Duration::ZERO));
        };
        add(&relay.counters.posting);
        let posted = relay.endpoint.post(request.clone()).await;
        relay.counters.posting.fetch_sub(1, Ordering::Relaxed);
        match posted.answer {
            Answer::Delivered => {
                pass.answered();
                add(&relay.counters.delivered);
                return Verdict::Ack;
            }
            Answer::Failed => {
                pass.answered();
                add(&relay.counters.refused);
                let delay = relay.retry_delay.delay_for(about.attempts);
                relay.lines.say(Kind::Refused, || {
                    format!(
                        "the service refused message {} ({}): retried in {} (attempt {})",
                        about.id,
                        quoted(&posted.detail),
                        humantime::format_duration(delay),
                        about.attempts
                    )
                });
                return Verdict::Retry(None);
            }
            Answer::Busy { retry_after } => {
                add(&relay.counters.busy_answers);
                if let Some(pause) = pass.busy(retry_after) {
                    add(&relay.counters.pauses);
                    relay.lines.say(Kind::Busy, || {
                        format!(
                            "the service is down or busy ({}): pausing {}, holding the messages",
                            quoted(&posted.detail),
                            humantime::format_duration(pause)
                        )
                    });
                }
                if Instant::now() >= hold_until {
                    return held_too_long(relay, &about);
                }
            }
        }
    }
}

/// The message waited `--hold`: back to the queue, with an attempt used,
/// not before the gate's pause ends nor before its retry delay.
fn held_too_long(relay: &Relay, about: &About<'_>) -> Verdict {
    add(&relay.counters.held_too_long);
    let delay = relay
        .retry_delay
        .delay_for(about.attempts)
        .max(relay.gate.pause_left());
    relay.lines.say(Kind::HeldTooLong, || {
        format!(
            "message {} was held {} while the service was down or busy: retried in {}",
            about.id,
            humantime::format_duration(relay.hold),
            humantime::format_duration(delay)
        )
    });
    Verdict::Retry(Some(delay))
}

fn add(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
