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

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use cf_queues::consumer::{CancellationToken, RetryDelay, Verdict};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::answer::Answer;
use super::batch::{self, BatchAnswer};
use super::endpoint::{Endpoint, Posted};
use super::gate::Gate;
use super::report::{Kind, Lines, RelayCounters, quoted};
use super::request::{QueueNames, Request};
use crate::args::MaxAgeAction;
use crate::output::plural;

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
    /// `--batch` and `--batch-bytes`: the most messages and bytes of one
    /// request; `None` sends each message alone, not as a batch.
    pub batch: Option<(usize, usize)>,
    /// `--max-age` and `--max-age-action`.
    pub max_age: Option<(Duration, MaxAgeAction)>,
    /// Set while `--wait-for-target` waits for the service's first answer.
    pub waiting_for_target: AtomicBool,
}

/// A message a delivery is about, for its verdict and its lines.
pub struct About<'a> {
    pub id: &'a str,
    pub attempts: u32,
}

/// POSTs `request` (of the messages `about`, in order) until an answer
/// settles them, the hold runs out, or the relay stops; each message's
/// verdict, in order.
///
/// # Cancellation
///
/// Dropped (the consumer aborting its handler past the grace period), the
/// messages are left to the consumer, which releases them; a POST on its
/// way is cut, and the service may have it.
pub async fn deliver(relay: &Relay, about: &[About<'_>], request: Request) -> Vec<Verdict> {
    let hold_until = Instant::now() + relay.hold;
    // Kept from the first POST to the last: a held message goes again
    // before those that came after it.
    let mut slot = None;
    loop {
        let ready = tokio::select! {
            biased;
            () = relay.stopping.cancelled() => None,
            () = tokio::time::sleep_until(hold_until) => {
                return held_too_long(relay, about);
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
            count(&relay.counters.released, about);
            return vec![Verdict::Retry(Some(Duration::ZERO)); about.len()];
        };
        add(&relay.counters.posting);
        let posted = relay.endpoint.post(request.clone()).await;
        relay.counters.posting.fetch_sub(1, Ordering::Relaxed);
        match posted.answer {
            Answer::Delivered => {
                pass.answered();
                return if request.batch {
                    batch_verdicts(relay, about, &posted)
                } else {
                    count(&relay.counters.delivered, about);
                    vec![Verdict::Ack; about.len()]
                };
            }
            Answer::Failed => {
                pass.answered();
                count(&relay.counters.refused, about);
                relay.lines.say(Kind::Refused, || match about {
                    [one] => format!(
                        "the service refused message {} ({}): retried in {} (attempt {})",
                        one.id,
                        quoted(&posted.detail),
                        humantime::format_duration(relay.retry_delay.delay_for(one.attempts)),
                        one.attempts
                    ),
                    _ => format!(
                        "the service refused a batch of {} messages ({}): each retried after its \
                         delay",
                        about.len(),
                        quoted(&posted.detail)
                    ),
                });
                return vec![Verdict::Retry(None); about.len()];
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
                    return held_too_long(relay, about);
                }
            }
        }
    }
}

/// The verdicts a batch's 2xx answer gives (`batch.rs` reads it).
fn batch_verdicts(relay: &Relay, about: &[About<'_>], posted: &Posted) -> Vec<Verdict> {
    let ids: Vec<&str> = about.iter().map(|a| a.id).collect();
    match batch::answer(&posted.body, &ids, posted.truncated) {
        BatchAnswer::Unreadable(why) => {
            count(&relay.counters.refused, about);
            relay.lines.say(Kind::Unreadable, || {
                format!(
                    "the service answered a batch of {} messages with {} that cannot be read \
                     ({why}): each retried after its delay",
                    about.len(),
                    quoted(&posted.detail)
                )
            });
            vec![Verdict::Retry(None); about.len()]
        }
        BatchAnswer::Each { retry, unknown } => {
            if !unknown.is_empty() {
                relay
                    .counters
                    .unknown_ids
                    .fetch_add(unknown.len() as u64, Ordering::Relaxed);
                relay.lines.say(Kind::Unreadable, || {
                    format!(
                        "the service asked to retry {} that the batch did not hold (ignored): {}",
                        plural(unknown.len() as u64, "id"),
                        quoted(&unknown.join(", "))
                    )
                });
            }
            let retried = retry.iter().filter(|r| r.is_some()).count() as u64;
            relay.counters.refused.fetch_add(retried, Ordering::Relaxed);
            relay
                .counters
                .delivered
                .fetch_add(about.len() as u64 - retried, Ordering::Relaxed);
            retry
                .into_iter()
                .map(|asked| match asked {
                    None => Verdict::Ack,
                    Some(delay) => Verdict::Retry(delay),
                })
                .collect()
        }
    }
}

/// The messages waited `--hold`: back to the queue, with an attempt used,
/// not before the gate's pause ends nor before their retry delay.
fn held_too_long(relay: &Relay, about: &[About<'_>]) -> Vec<Verdict> {
    count(&relay.counters.held_too_long, about);
    let pause_left = relay.gate.pause_left();
    let delays: Vec<Duration> = about
        .iter()
        .map(|a| relay.retry_delay.delay_for(a.attempts).max(pause_left))
        .collect();
    relay.lines.say(Kind::HeldTooLong, || {
        let which = match about {
            [one] => format!("message {}", one.id),
            _ => format!("a batch of {} messages", about.len()),
        };
        format!(
            "{which} was held {} while the service was down or busy: retried in {}",
            humantime::format_duration(relay.hold),
            humantime::format_duration(delays.iter().copied().min().unwrap_or_default())
        )
    });
    delays
        .into_iter()
        .map(|d| Verdict::Retry(Some(d)))
        .collect()
}

fn add(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// One more for each message of `about`.
fn count(counter: &AtomicU64, about: &[About<'_>]) {
    counter.fetch_add(about.len() as u64, Ordering::Relaxed);
}
