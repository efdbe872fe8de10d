//! One queue: its messages, the indexes over them, leases and peek refs.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use super::tokens::KeyMap;
use super::{
    BodyKind, LEASED_ELSEWHERE, Metrics, PEEK_REF_CAP, PEEK_REF_TTL_MS, SHRINK_ABOVE, len_u64,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Lease {
    pub(super) key: u128,
    pub(super) expiry_ms: u64,
}

#[derive(Debug)]
pub(super) struct Stored {
    pub(super) kind: BodyKind,
    pub(super) body: Arc<[u8]>,
    pub(super) timestamp_ms: u64,
    pub(super) attempts: u32,
    /// Meaningful only while `lease` is `None`: the key in `Queue::ready`.
    pub(super) visible_at_ms: u64,
    /// The live lease, if the message is in flight.
    pub(super) lease: Option<Lease>,
    /// Every lease id issued for this message, the live one included: a
    /// stale lease stays usable while its message exists, and all of them
    /// leave `Queue::leases` when it is deleted.
    pub(super) issued: Vec<u128>,
}

/// A message on its way to a dead-letter queue.
#[derive(Debug)]
pub(super) struct Moved {
    pub(super) kind: BodyKind,
    pub(super) body: Arc<[u8]>,
    pub(super) timestamp_ms: u64,
    pub(super) visible_at_ms: u64,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct PeekRef {
    pub(super) seq: u64,
    pub(super) created_ms: u64,
}

impl PeekRef {
    /// Measured as elapsed time so refs issued near `u64::MAX` still live,
    /// and a clock that steps back never expires them early.
    pub(super) fn expired(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.created_ms) >= PEEK_REF_TTL_MS
    }
}

/// One queue. Every message sits in exactly one of `ready` (unleased, keyed by
/// the time it becomes visible) or `inflight` (leased, keyed by lease expiry),
/// so pulls and expiries only walk the entries they act upon.
#[derive(Debug, Default)]
pub(super) struct Queue {
    pub(super) messages: KeyMap<u64, Stored>,
    pub(super) ready: BTreeSet<(u64, u64)>,
    pub(super) inflight: BTreeSet<(u64, u64)>,
    /// Every lease id issued for a message that still exists -> its seq.
    pub(super) leases: KeyMap<u128, u64>,
    /// (push timestamp, seq) so the oldest message is found in O(log n).
    pub(super) oldest: BTreeSet<(u64, u64)>,
    pub(super) bytes: u64,
    pub(super) dead_lettered: u64,
    pub(super) refs: KeyMap<u128, PeekRef>,
    /// Ref keys in issue order, for cap and age eviction; always holds exactly
    /// the keys of `refs`.
    pub(super) ref_order: VecDeque<u128>,
    /// When the broker's sweep will next trim this queue's refs, if it is
    /// scheduled to.
    pub(super) sweep_due_ms: Option<u64>,
}

impl Queue {
    pub(super) fn metrics(&self) -> Metrics {
        Metrics {
            backlog_count: len_u64(self.messages.len()),
            backlog_bytes: self.bytes,
            oldest_message_timestamp_ms: self.oldest.first().map_or(0, |&(ts, _)| ts),
        }
    }

    /// Nothing in it that anyone can still read: no message (so no lease
    /// and no ref either) and no dead-letter count. Such a queue is dropped,
    /// so that a stream of new queue ids costs nothing once they are empty.
    pub(super) fn is_reclaimable(&self) -> bool {
        self.messages.is_empty() && self.refs.is_empty() && self.dead_lettered == 0
    }

    pub(super) fn insert(&mut self, seq: u64, moved: Moved) {
        self.bytes = self.bytes.saturating_add(len_u64(moved.body.len()));
        self.oldest.insert((moved.timestamp_ms, seq));
        self.ready.insert((moved.visible_at_ms, seq));
        self.messages.insert(
            seq,
            Stored {
                kind: moved.kind,
                body: moved.body,
                timestamp_ms: moved.timestamp_ms,
                attempts: 0,
                visible_at_ms: moved.visible_at_ms,
                lease: None,
                issued: Vec::new(),
            },
        );
    }

    /// Deletes a message from every index, and forgets all its lease ids.
    pub(super) fn remove(&mut self, seq: u64) -> Option<Stored> {
        let stored = self.messages.remove(&seq)?;
        match stored.lease {
            Some(lease) => {
                self.inflight.remove(&(lease.expiry_ms, seq));
            }
            None => {
                self.ready.remove(&(stored.visible_at_ms, seq));
            }
        }
        for key in &stored.issued {
            self.leases.remove(key);
        }
        self.oldest.remove(&(stored.timestamp_ms, seq));
        self.bytes = self.bytes.saturating_sub(len_u64(stored.body.len()));
        if self.messages.is_empty() {
            self.release_memory();
        }
        Some(stored)
    }

    /// Gives back what a drained backlog held, so a burst does not pin memory.
    fn release_memory(&mut self) {
        self.bytes = 0;
        if self.messages.capacity() > SHRINK_ABOVE {
            self.messages.shrink_to_fit();
        }
        if self.leases.capacity() > SHRINK_ABOVE {
            self.leases.shrink_to_fit();
        }
    }

    /// Drops a message that ran out of attempts, counting it and keeping its
    /// content when a dead-letter queue will receive it.
    pub(super) fn dead_letter(
        &mut self,
        seq: u64,
        visible_at_ms: u64,
        keep: bool,
        moved: &mut Vec<Moved>,
    ) {
        if let Some(stored) = self.remove(seq) {
            self.dead_lettered = self.dead_lettered.saturating_add(1);
            if keep {
                moved.push(Moved {
                    kind: stored.kind,
                    body: stored.body,
                    timestamp_ms: stored.timestamp_ms,
                    visible_at_ms,
                });
            }
        }
    }

    /// Ends every lease that expired by `now_ms`: the message becomes visible
    /// at its expiry time, or is dead-lettered if out of attempts. The lease
    /// id goes stale but stays known while the message exists.
    pub(super) fn expire(
        &mut self,
        now_ms: u64,
        max_retries: u32,
        keep: bool,
        moved: &mut Vec<Moved>,
    ) {
        while let Some(&(expiry_ms, seq)) = self.inflight.first() {
            if expiry_ms > now_ms {
                break;
            }
            self.inflight.pop_first();
            let Some(stored) = self.messages.get_mut(&seq) else {
                continue;
            };
            stored.lease = None;
            stored.visible_at_ms = expiry_ms;
            if out_of_attempts(stored.attempts, max_retries) {
                self.dead_letter(seq, expiry_ms, keep, moved);
            } else {
                self.ready.insert((expiry_ms, seq));
            }
        }
    }

    /// Retries the message behind lease `key` (live or stale) of message
    /// `seq`: it becomes visible after `delay_ms`, or is dead-lettered if out
    /// of attempts.
    ///
    /// A stale lease may retry a message only while no one else holds it:
    /// Cloudflare's pull-consumer page accepts late acks "even if the message
    /// was delivered to another consumer", and says nothing of late retries,
    /// so a late retry must not pull a message out from under its current
    /// holder.
    pub(super) fn retry(
        &mut self,
        key: u128,
        seq: u64,
        delay_ms: u64,
        now_ms: u64,
        (max_retries, keep): (u32, bool),
        moved: &mut Vec<Moved>,
    ) -> Result<(), &'static str> {
        let Some(stored) = self.messages.get_mut(&seq) else {
            return Err(super::LEASE_UNKNOWN);
        };
        match stored.lease {
            Some(lease) if lease.key != key => return Err(LEASED_ELSEWHERE),
            Some(lease) => {
                self.inflight.remove(&(lease.expiry_ms, seq));
                stored.lease = None;
            }
            None => {
                self.ready.remove(&(stored.visible_at_ms, seq));
            }
        }
        if out_of_attempts(stored.attempts, max_retries) {
            self.dead_letter(seq, now_ms, keep, moved);
        } else {
            let visible_at_ms = now_ms.saturating_add(delay_ms);
            stored.visible_at_ms = visible_at_ms;
            self.ready.insert((visible_at_ms, seq));
        }
        Ok(())
    }

    /// Forgets refs beyond the cap or TTL, and all of them once the queue is
    /// empty (they could only point at deleted messages).
    pub(super) fn trim_refs(&mut self, now_ms: u64) {
        if self.messages.is_empty() {
            if !self.refs.is_empty() || self.ref_order.capacity() > 0 {
                self.refs = KeyMap::default();
                self.ref_order = VecDeque::new();
            }
            return;
        }
        while let Some(&key) = self.ref_order.front() {
            let too_old = self.refs.get(&key).is_none_or(|r| r.expired(now_ms));
            if !too_old && self.ref_order.len() <= PEEK_REF_CAP {
                break;
            }
            self.ref_order.pop_front();
            self.refs.remove(&key);
        }
        if self.refs.capacity() > SHRINK_ABOVE && self.refs.len() < self.refs.capacity() / 4 {
            self.refs.shrink_to_fit();
            self.ref_order.shrink_to_fit();
        }
    }

    /// When the oldest ref left expires, if any is left.
    pub(super) fn next_ref_expiry(&self) -> Option<u64> {
        let oldest = self.ref_order.front()?;
        let created = self.refs.get(oldest)?.created_ms;
        Some(created.saturating_add(PEEK_REF_TTL_MS))
    }
}

/// Whether a message that has been delivered `attempts` times is done with.
///
/// Cloudflare's docs give two readings of `max_retries`. The pull-consumer
/// page (developers.cloudflare.com/queues/configuration/pull-consumers/)
/// says a message is deleted or dead-lettered "when `attempts` reaches
/// `max_retries`"; the dead-letter page ("after retrying delivery, by
/// default, 3 times") and Miniflare allow `max_retries + 1` deliveries. This
/// emulator serves pull consumers, so it follows the pull-consumer page:
/// with the default of 3, a message is delivered at most 3 times.
fn out_of_attempts(attempts: u32, max_retries: u32) -> bool {
    attempts >= max_retries
}
