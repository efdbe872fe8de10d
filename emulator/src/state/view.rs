//! Read-only views of the account for the dashboard: a row per queue and
//! the messages of a queue, as they stand at a given time, without leasing
//! a message, using an attempt or changing anything (expired leases count
//! as available, as the next operation on the queue would make them).
//!
//! Also what the dashboard's charts count: the messages pushed, pulled,
//! acked and retried on the queues someone watches ([`Activity`]), counted
//! only for them, so that an unwatched emulator counts nothing.

use std::sync::Arc;

pub(crate) use super::watched::Counts;
use super::watched::NameIndex;
use super::{At, BodyKind, Broker};
use crate::state::management::resources::{ConsumerKind, QueueRecord};
use crate::state::messages::queue::{QueueState, Stored};

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
    /// Its place in the emulator (what the dashboard's actions name it by).
    pub seq: u64,
    pub id: String,
    pub kind: BodyKind,
    pub body: Arc<[u8]>,
    pub timestamp_ms: u64,
    pub attempts: u32,
    pub delay_ms: u64,
    pub standing: Standing,
}

fn standing(stored: &Stored, now_ms: u64) -> Standing {
    match stored.lease {
        Some(lease) if lease.expiry_ms > now_ms => Standing::Leased(lease.expiry_ms),
        Some(_) => Standing::Available,
        None if stored.visible_at_ms > now_ms => Standing::Delayed(stored.visible_at_ms),
        None => Standing::Available,
    }
}

/// (available, delayed, leased) of a queue at `now_ms`, from its indexes,
/// walking only the delayed messages and the expired leases (few, as a
/// rule): a backlog of 100,000 visible messages is not walked.
fn counts(q: &QueueState, now_ms: u64) -> (u64, u64, u64) {
    let after_now = (now_ms.saturating_add(1), 0);
    let delayed = q.ready.range(after_now..).count() as u64;
    let expired = q.inflight.range(..after_now).count() as u64;
    let ready = q.ready.len() as u64;
    let inflight = q.inflight.len() as u64;
    (ready - delayed + expired, delayed, inflight - expired)
}

/// What the account page sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SortBy {
    Name,
    Id,
    Available,
    Delayed,
    Leased,
    Bytes,
    /// The oldest message's age: the youngest first.
    Oldest,
    Consumer,
    Delivery,
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

/// The key a queue sorts by (names break ties).
fn sort_key(sort: SortBy, record: &QueueRecord, q: Option<&QueueState>, now_ms: u64) -> u64 {
    match sort {
        SortBy::Available | SortBy::Delayed | SortBy::Leased => {
            let (available, delayed, leased) = q.map_or((0, 0, 0), |q| counts(q, now_ms));
            match sort {
                SortBy::Available => available,
                SortBy::Delayed => delayed,
                _ => leased,
            }
        }
        SortBy::Bytes => q.map_or(0, |q| q.bytes),
        SortBy::Oldest => q
            .and_then(|q| q.oldest.first())
            .map_or(0, |&(ts, _)| now_ms.saturating_sub(ts)),
        SortBy::Consumer => match record.consumer.as_ref().map(|c| &c.spec.kind) {
            None => 0,
            Some(ConsumerKind::HttpPull(_)) => 1,
            Some(ConsumerKind::Worker { .. }) => 2,
        },
        SortBy::Delivery => u64::from(record.settings.delivery_paused),
        SortBy::Name | SortBy::Id => 0,
    }
}

impl Broker {
    /// The row of one queue of the local account.
    pub(crate) fn queue_row(&self, record: &QueueRecord, now_ms: u64) -> QueueRow {
        let q = self
            .accounts
            .get(crate::EMULATOR_ACCOUNT_ID)
            .and_then(|s| s.get(&record.id));
        row(record, q, now_ms)
    }

    /// One page of the queues of `account` whose name contains `filter`
    /// (ASCII case ignored), sorted, and how many passed the filter. The
    /// names are scanned in an index of their own (rebuilt only when a
    /// queue is created, deleted or renamed), and only the page's rows are
    /// built: filtering 10,000 queues reads 10,000 short names in a row.
    #[allow(clippy::too_many_arguments)] // One call site, the account page's.
    pub(crate) fn queue_page(
        &mut self,
        account: &str,
        now_ms: u64,
        filter: &str,
        sort: SortBy,
        descending: bool,
        skip: usize,
        take: usize,
    ) -> (Vec<QueueRow>, usize) {
        let Some(records) = self.registry.accounts.get(account) else {
            return (Vec::new(), 0);
        };
        let fresh = self
            .names
            .as_ref()
            .is_some_and(|n| n.account == account && n.changes == records.names_changed);
        if !fresh {
            self.names = Some(NameIndex::of(account, records));
        }
        let Some(index) = self.names.as_ref() else {
            return (Vec::new(), 0);
        };
        let states = self.accounts.get(account);
        let filter = filter.to_ascii_lowercase();
        let mut matched: Vec<(u64, &QueueRecord, Option<&QueueState>)> = index
            .matching(&filter)
            .filter_map(|id| records.queues.get(id))
            .map(|record| {
                let q = states.and_then(|s| s.get(&record.id));
                (sort_key(sort, record, q, now_ms), record, q)
            })
            .collect();
        let total = matched.len();
        match sort {
            SortBy::Id => matched.sort_unstable_by(|a, b| a.1.id.cmp(&b.1.id)),
            // Names are unique in an account: the order is total.
            _ => {
                matched.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)))
            }
        }
        if descending {
            matched.reverse();
        }
        let rows = matched
            .into_iter()
            .skip(skip)
            .take(take)
            .map(|(_, record, q)| row(record, q, now_ms))
            .collect();
        (rows, total)
    }

    /// The message `seq` of the queue at `at`, if it is still there.
    pub(crate) fn message_row(&self, at: At<'_>, seq: u64, now_ms: u64) -> Option<MessageRow> {
        let q = self
            .accounts
            .get(at.account)
            .and_then(|s| s.get(at.queue))?;
        let stored = q.messages.get(&seq)?;
        Some(MessageRow {
            seq,
            id: self.tokens.message_id(seq),
            kind: stored.kind,
            body: Arc::clone(&stored.body),
            timestamp_ms: stored.timestamp_ms,
            attempts: stored.attempts,
            delay_ms: stored.delay_ms,
            standing: standing(stored, now_ms),
        })
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
            .filter_map(|&(_, seq)| self.message_row(at, seq, now_ms))
            .collect();
        (q.messages.len() as u64, rows)
    }

    /// The queues of `account` whose consumer names the queue `name` as its
    /// dead-letter queue: (id, name), by name.
    pub(crate) fn dead_letter_sources(&self, account: &str, name: &str) -> Vec<(String, String)> {
        let Some(records) = self.registry.accounts.get(account) else {
            return Vec::new();
        };
        let mut sources: Vec<(String, String)> = records
            .queues
            .values()
            .filter(|r| {
                r.consumer
                    .as_ref()
                    .and_then(|c| c.spec.dead_letter_queue.as_deref())
                    == Some(name)
            })
            .map(|r| (r.id.clone(), r.name.clone()))
            .collect();
        sources.sort_by(|a, b| a.1.cmp(&b.1));
        sources
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
