//! Read-only views of the account for the dashboard: a row per queue and
//! the messages of a queue, as they stand at a given time, without leasing
//! a message, using an attempt or changing anything (expired leases count
//! as available, as the next operation on the queue would make them).
//!
//! Also what the dashboard's charts count: the messages pushed, pulled,
//! acked and retried on the queues someone watches ([`Activity`]), counted
//! only for them, so that an unwatched emulator counts nothing.

use std::collections::HashMap;
use std::sync::Arc;

use super::account::{ConsumerKind, QueueRecord};
use super::queue::{QueueState, Stored};
use super::{At, BodyKind, Broker};

/// One queue of the account page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueRow {
    pub id: String,
    pub name: String,
    /// Visible now: a pull would lease them.
    pub available: u64,
    /// Pushed with a delay, or retried with one, not visible yet.
    pub delayed: u64,
    /// Leased, and the lease not expired.
    pub leased: u64,
    pub backlog_bytes: u64,
    /// The oldest message's push time (Unix ms); 0 when empty.
    pub oldest_ms: u64,
    /// `http_pull`, `worker` or `none`.
    pub consumer: &'static str,
    pub paused: bool,
}

/// Where a message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    Available,
    /// Not visible until this time (Unix ms).
    Delayed(u64),
    /// Leased until this time (Unix ms).
    Leased(u64),
}

/// One message of a queue's list.
#[derive(Debug, Clone)]
pub(crate) struct MessageRow {
    pub id: String,
    pub kind: BodyKind,
    pub body: Arc<[u8]>,
    pub timestamp_ms: u64,
    pub attempts: u32,
    pub delay_ms: u64,
    pub standing: Standing,
}

/// Cumulative counts of what happened to a watched queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub pushed: u64,
    pub pulled: u64,
    pub acked: u64,
    pub retried: u64,
}

/// The watched queues' counts, by (account, queue id).
#[derive(Debug, Default)]
pub(crate) struct Activity {
    watched: HashMap<(String, String), Counts>,
}

impl Activity {
    /// Adds to the counts of `at`, if someone watches it.
    pub(super) fn note(&mut self, at: At<'_>, change: impl FnOnce(&mut Counts)) {
        if self.watched.is_empty() {
            return;
        }
        if let Some(counts) = self
            .watched
            .get_mut(&(at.account.to_owned(), at.queue.to_owned()))
        {
            change(counts);
        }
    }
}

fn standing(stored: &Stored, now_ms: u64) -> Standing {
    match stored.lease {
        Some(lease) if lease.expiry_ms > now_ms => Standing::Leased(lease.expiry_ms),
        Some(_) => Standing::Available,
        None if stored.visible_at_ms > now_ms => Standing::Delayed(stored.visible_at_ms),
        None => Standing::Available,
    }
}

/// (available, delayed, leased) of a queue at `now_ms`, from its indexes:
/// O(log n) for the visible split, O(expired leases) for the rest.
fn counts(q: &QueueState, now_ms: u64) -> (u64, u64, u64) {
    let ready = q.ready.len() as u64;
    let visible = q.ready.range(..(now_ms.saturating_add(1), 0)).count() as u64;
    let expired = q.inflight.range(..(now_ms.saturating_add(1), 0)).count() as u64;
    let inflight = q.inflight.len() as u64;
    (visible + expired, ready - visible, inflight - expired)
}

fn row(record: &QueueRecord, q: Option<&QueueState>, now_ms: u64) -> QueueRow {
    let (available, delayed, leased) = q.map_or((0, 0, 0), |q| counts(q, now_ms));
    QueueRow {
        id: record.id.clone(),
        name: record.name.clone(),
        available,
        delayed,
        leased,
        backlog_bytes: q.map_or(0, |q| q.bytes),
        oldest_ms: q.and_then(|q| q.oldest.first()).map_or(0, |&(ts, _)| ts),
        consumer: match record.consumer.as_ref().map(|c| &c.spec.kind) {
            Some(ConsumerKind::HttpPull(_)) => "http_pull",
            Some(ConsumerKind::Worker { .. }) => "worker",
            None => "none",
        },
        paused: record.settings.delivery_paused,
    }
}

impl Broker {
    /// Every queue of `account`, in creation order.
    pub(crate) fn queue_rows(&self, account: &str, now_ms: u64) -> Vec<QueueRow> {
        let Some(records) = self.registry.accounts.get(account) else {
            return Vec::new();
        };
        let states = self.accounts.get(account);
        records
            .order
            .values()
            .filter_map(|id| records.queues.get(id))
            .map(|record| row(record, states.and_then(|s| s.get(&record.id)), now_ms))
            .collect()
    }

    /// The row of one queue of the local account.
    pub(crate) fn queue_row(&self, record: &QueueRecord, now_ms: u64) -> QueueRow {
        let q = self
            .accounts
            .get(crate::EMULATOR_ACCOUNT_ID)
            .and_then(|s| s.get(&record.id));
        row(record, q, now_ms)
    }

    /// Up to `take` messages of the queue at `at` after the first `skip`,
    /// in push order, and how many it holds.
    pub(crate) fn message_rows(
        &self,
        at: At<'_>,
        now_ms: u64,
        skip: usize,
        take: usize,
    ) -> (u64, Vec<MessageRow>) {
        let Some(q) = self.accounts.get(at.account).and_then(|s| s.get(at.queue)) else {
            return (0, Vec::new());
        };
        let rows = q
            .oldest
            .iter()
            .skip(skip)
            .take(take)
            .filter_map(|&(_, seq)| {
                let stored = q.messages.get(&seq)?;
                Some(MessageRow {
                    id: self.tokens.message_id(seq),
                    kind: stored.kind,
                    body: Arc::clone(&stored.body),
                    timestamp_ms: stored.timestamp_ms,
                    attempts: stored.attempts,
                    delay_ms: stored.delay_ms,
                    standing: standing(stored, now_ms),
                })
            })
            .collect();
        (q.messages.len() as u64, rows)
    }

    /// Starts (or keeps) counting what happens to the queue at `at`, and
    /// gives its counts so far and the messages it dead-lettered.
    pub(crate) fn watch(&mut self, at: At<'_>) -> (Counts, u64) {
        let counts = *self
            .activity
            .watched
            .entry((at.account.to_owned(), at.queue.to_owned()))
            .or_default();
        (counts, self.dead_lettered(at))
    }

    /// Stops counting for the queue at `at`.
    pub(crate) fn unwatch(&mut self, at: At<'_>) {
        self.activity
            .watched
            .remove(&(at.account.to_owned(), at.queue.to_owned()));
    }
}
