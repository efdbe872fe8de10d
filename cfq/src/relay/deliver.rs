//! One message's way to the service, from the consumer's handler (or its
//! poison callback) to a [`Verdict`]: wait for a POST slot and the gate,
//! POST, and read the answer by the table (`answer.rs`), holding the
//! message while the service is down or busy.
//!
//! While a message waits, its handler runs, so the consumer keeps its
//! lease (an extension uses no attempt) and its flow-control slot: once
//! every slot is held, nothing more is pulled. The wait is bounded by
//! `--hold` (the service down or busy) and the slot wait (the service
//! answering, every POST slot taken), which the consumer's `max_lease`
//! outlasts (see `mod.rs`), so every message is settled while its lease is
//! still kept.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use cf_queues::consumer::{CancellationToken, RetryDelay, Verdict};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::answer::Answer;
use super::batch::{self, BatchAnswer};
use super::endpoint::{Endpoint, Posted};
use super::gate::{Gate, far_after};
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
    /// The longest a message waits for a POST slot while the service
    /// answers, beyond `--hold`: every slot's POST ahead of it may take
    /// all of `--timeout` (see `leases` in `mod.rs`). With the hold, it
    /// bounds every wait, so that each message is settled while the
    /// consumer still keeps its lease.
    pub slot_wait: Duration,
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
/// settles them, the hold or the wait for a slot runs out, or the relay
/// stops; each message's verdict, in order.
///
/// `--hold` counts only the time the service was down or busy: the gate's
/// paused time while the messages wait (for a slot or at the gate), and
/// their own POSTs that came back busy. The wait for a slot of a service
/// that answers is bounded apart, by [`Relay::slot_wait`].
///
/// # Cancellation
///
/// Dropped (the consumer aborting its handler past the grace period), the
/// messages are left to the consumer, which releases them; a POST on its
/// way is cut, and the service may have it.
pub async fn deliver(relay: &Relay, about: &[About<'_>], request: Request) -> Vec<Verdict> {
    let mark = relay.gate.paused_total();
    // Their own busy POSTs while the gate was open (the gate's clock has
    // the rest).
    let mut busy_posting = Duration::ZERO;
    let give_up_at = far_after(Instant::now(), relay.hold.saturating_add(relay.slot_wait));
    // Kept from the first POST to the last: a held message goes again
    // before those that came after it.
    let mut slot = None;
    loop {
        let ready = tokio::select! {
            biased;
            () = relay.stopping.cancelled() => None,
            () = relay.gate.held_out(mark, busy_posting, relay.hold) => {
                return held_too_long(relay, about, Waited::Held);
            }
            () = tokio::time::sleep_until(give_up_at) => {
                return held_too_long(relay, about, Waited::ForSlot);
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
        let (sent, paused_before) = (Instant::now(), relay.gate.paused_total());
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
                // The POST's time the gate did not count already.
                let paused_meanwhile = relay.gate.paused_total().saturating_sub(paused_before);
                busy_posting =
                    busy_posting.saturating_add(sent.elapsed().saturating_sub(paused_meanwhile));
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
            }
        }
    }
}

/// The verdicts a batch's 2xx answer gives (`batch.rs` reads it).
fn batch_verdicts(relay: &Relay, about: &[About<'_>], posted: &Posted) -> Vec<Verdict> {
    let ids: Vec<&str> = about.iter().map(|a| a.id).collect();
    match batch::answer(&posted.body, &ids, posted.unread.as_deref()) {
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

/// What a message waited out before it was given back.
#[derive(Clone, Copy)]
enum Waited {
    /// `--hold` of the service down or busy.
    Held,
    /// `--hold` and the slot wait in all (see [`Relay::slot_wait`]).
    ForSlot,
}

/// The messages waited too long: back to the queue, with an attempt used,
/// not before the gate's pause ends nor before their retry delay.
fn held_too_long(relay: &Relay, about: &[About<'_>], waited: Waited) -> Vec<Verdict> {
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
        let retried_in =
            humantime::format_duration(delays.iter().copied().min().unwrap_or_default());
        match waited {
            Waited::Held => format!(
                "{which} was held {} while the service was down or busy: retried in {retried_in}",
                humantime::format_duration(relay.hold),
            ),
            Waited::ForSlot => format!(
                "{which} waited {} for a POST slot (--hold and the slot wait): retried in \
                 {retried_in}",
                humantime::format_duration(relay.hold.saturating_add(relay.slot_wait)),
            ),
        }
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
