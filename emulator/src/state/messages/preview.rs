//! Preview, and deleting or delaying previewed messages.
//!
//! Cloudflare's published description: preview shows messages "without
//! leasing them. Messages remain available for subsequent preview or pull
//! operations"; messages deleted through `preview/ack` "aren't considered
//! delivered, they are instantly deleted from this queue and do not affect
//! metrics".

use crate::state::broker::{delivery, queue_mut, schedule_sweep};
use crate::state::messages::queue::QueueState;
use crate::state::messages::refs::{Named, Names};
use crate::state::messages::tokens::parse_token;
use crate::state::{
    At, Broker, Delivery, MAX_PREALLOC, PREVIEW_STALE, PREVIEW_UNKNOWN, PreviewedReport, REF_GONE,
};

impl Broker {
    /// Shows up to `batch_size` visible, unleased messages in delivery
    /// order, in the pull shape, without leasing them: `attempts` stays as
    /// it is and the messages stay visible to pull, peek and preview. Each
    /// comes with a fresh preview id (as its `lease_id`) for
    /// [`Broker::delete_previewed`]; it is good while the message stays as
    /// it was shown (no delivery, retry or deletion since), for at most
    /// [`PEEK_REF_TTL_MS`](crate::state::PEEK_REF_TTL_MS).
    pub(crate) fn preview<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        batch_size: usize,
        now_ms: u64,
    ) -> Vec<Delivery> {
        self.show(at.into(), batch_size, now_ms, Names::PreviewIds)
    }

    /// Up to `batch_size` visible, unleased messages in delivery order,
    /// leasing none, each under a fresh name from `names` (in the
    /// `lease_id` field): the one walk behind peek and preview.
    pub(crate) fn show(
        &mut self,
        at: At<'_>,
        batch_size: usize,
        now_ms: u64,
        names: Names,
    ) -> Vec<Delivery> {
        self.prepare(at, now_ms);
        let Broker {
            accounts,
            tokens,
            sweeps,
            ..
        } = self;
        let Some(q) = queue_mut(accounts, at) else {
            return Vec::new();
        };
        // Drawn from the same source as lease ids, but kept apart: a peek
        // ref or preview id is no lease, and a lease id neither of them.
        let book = match names {
            Names::PeekRefs => &mut q.refs,
            Names::PreviewIds => &mut q.previews,
        };
        let mut out = Vec::with_capacity(batch_size.min(q.ready.len()).min(MAX_PREALLOC));
        for &(_, seq) in q.ready.range(..=(now_ms, u64::MAX)).take(batch_size) {
            let Some(stored) = q.messages.get(&seq) else {
                continue;
            };
            let key = tokens.fresh(book.keys());
            out.push(delivery(tokens, seq, stored, key));
            book.insert(
                key,
                Named {
                    seq,
                    created_ms: now_ms,
                    generation: stored.generation,
                },
            );
        }
        q.trim_refs(now_ms);
        schedule_sweep(sweeps, q, at);
        out
    }

    /// Deletes previewed messages at once (`acks`), and puts others back
    /// after a delay (`retries`: preview id and delay), by the preview ids
    /// [`Broker::preview`] returned. Deletions are applied first, so an id
    /// listed in both gets a warning for the retry.
    ///
    /// A deletion is not a delivery: it leaves no lease, counts as neither
    /// acked nor dead-lettered, as a purge by ref. A retry keeps `attempts`
    /// (the message was never delivered) and makes the message visible
    /// `delay` after now; this is the emulator's reading of a retry of a
    /// message no one leased, which Cloudflare does not describe further.
    /// An id that is unknown, expired, or whose message was delivered,
    /// retried or deleted since it was previewed only gets a warning.
    pub(crate) fn delete_previewed<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        acks: &[String],
        retries: &[(String, u64)],
        now_ms: u64,
    ) -> PreviewedReport {
        self.change_queue(at.into(), now_ms, |q| {
            let mut report = PreviewedReport::default();
            for id in acks {
                match current(q, id, now_ms) {
                    Ok(seq) => {
                        q.remove(seq);
                        report.deleted = report.deleted.saturating_add(1);
                    }
                    Err(reason) => warn(&mut report, id, reason),
                }
            }
            for (id, delay_ms) in retries {
                match current(q, id, now_ms) {
                    Ok(seq) => {
                        q.delay_previewed(seq, *delay_ms, now_ms);
                        report.delayed = report.delayed.saturating_add(1);
                    }
                    Err(reason) => warn(&mut report, id, reason),
                }
            }
            q.trim_refs(now_ms);
            report
        })
    }
}

fn warn(report: &mut PreviewedReport, id: &str, reason: &str) {
    report
        .warnings
        .entry(id.to_owned())
        .or_insert_with(|| reason.to_owned());
}

/// The message a preview id names, if it is still as it was previewed.
fn current(q: &QueueState, id: &str, now_ms: u64) -> Result<u64, &'static str> {
    let named = parse_token(id)
        .and_then(|key| q.previews.get(key, now_ms))
        .ok_or(PREVIEW_UNKNOWN)?;
    let stored = q.messages.get(&named.seq).ok_or(REF_GONE)?;
    if stored.generation != named.generation || stored.lease.is_some() {
        return Err(PREVIEW_STALE);
    }
    Ok(named.seq)
}
