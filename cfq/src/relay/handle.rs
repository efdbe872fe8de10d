//! What the consumer's handlers do with the messages it hands over: the
//! ones past `--max-age` are settled unsent, the others delivered one per
//! request or, with `--batch`, several per request.

use std::time::{Duration, SystemTime};

use cf_queues::PulledMessage;
use cf_queues::consumer::Verdict;
use futures_util::future::join_all;

use super::batch;
use super::deliver::{About, Relay, deliver};
use super::request;
use crate::args::MaxAgeAction;

/// A message run's handler: one message, sent alone.
pub async fn one(relay: &Relay, message: &PulledMessage) -> Verdict {
    if let Some(verdict) = expired(relay, message) {
        return verdict;
    }
    let request = request::decoded(message, &relay.queue)
        .unwrap_or_else(|| request::undecoded(message, &relay.queue));
    first(deliver(relay, &[about(message)], request).await)
}

/// The poison callback: a body cfq cannot decode, sent alone, as raw
/// bytes or (with `--batch`) as a batch of one record with `body_raw`.
pub async fn undecodable(relay: &Relay, message: &PulledMessage) -> Verdict {
    if let Some(verdict) = expired(relay, message) {
        return verdict;
    }
    let request = match relay.batch {
        Some(_) => request::batch(
            &relay.queue,
            batch::body(&[batch::record(message)], &[0]),
            1,
        ),
        None => request::undecoded(message, &relay.queue),
    };
    first(deliver(relay, &[about(message)], request).await)
}

/// A batch run's handler: one pull's messages, in requests of at most
/// `--batch` messages and `--batch-bytes` bytes, sent concurrently; a
/// verdict per message, in order.
pub async fn many(relay: &Relay, messages: &[PulledMessage]) -> Vec<Verdict> {
    let (max_records, max_bytes) = relay.batch.unwrap_or((1, usize::MAX));
    let mut verdicts: Vec<Option<Verdict>> = messages.iter().map(|m| expired(relay, m)).collect();
    let live: Vec<usize> = (0..messages.len())
        .filter(|&i| verdicts[i].is_none())
        .collect();
    let records: Vec<Vec<u8>> = live.iter().map(|&i| batch::record(&messages[i])).collect();
    let chunks = batch::chunks(&records, max_records, max_bytes);
    let sent = chunks.iter().map(|chunk| {
        let about: Vec<About<'_>> = chunk.iter().map(|&n| about(&messages[live[n]])).collect();
        let request = request::batch(&relay.queue, batch::body(&records, chunk), chunk.len());
        async move { deliver(relay, &about, request).await }
    });
    for (chunk, chunk_verdicts) in chunks.iter().zip(join_all(sent).await) {
        for (&n, verdict) in chunk.iter().zip(chunk_verdicts) {
            verdicts[live[n]] = Some(verdict);
        }
    }
    // Every index was filled, expired or sent; a gap would be retried.
    verdicts
        .into_iter()
        .map(|v| v.unwrap_or(Verdict::Retry(None)))
        .collect()
}

/// The verdict of a message past `--max-age`, counted; `None` for one
/// that is not.
fn expired(relay: &Relay, message: &PulledMessage) -> Option<Verdict> {
    let (max_age, action) = relay.max_age?;
    let now_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    let age = Duration::from_millis(
        u64::try_from(now_ms.saturating_sub(u128::from(message.timestamp_ms))).unwrap_or(u64::MAX),
    );
    if age <= max_age {
        return None;
    }
    relay
        .counters
        .expired
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Some(match action {
        MaxAgeAction::Ack => Verdict::Ack,
        // At once and unsent, every delivery, until the queue's
        // max_retries moves it to its dead-letter queue.
        MaxAgeAction::DeadLetter => Verdict::Retry(Some(Duration::ZERO)),
    })
}

fn about(message: &PulledMessage) -> About<'_> {
    About {
        id: &message.id,
        attempts: message.attempts,
    }
}

fn first(verdicts: Vec<Verdict>) -> Verdict {
    verdicts.into_iter().next().unwrap_or(Verdict::Retry(None))
}
