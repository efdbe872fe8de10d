//! One queue: its messages, the indexes over them, leases, peek refs and
//! preview ids.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::state::messages::refs::RefBook;
use crate::state::messages::tokens::KeyMap;
use crate::state::{
    BodyKind, DELIVERED_AGAIN, LEASE_UNKNOWN, LEASED_ELSEWHERE, PURGE_STATUS_TTL_MS, QueueStats,
    RELEASED_BY_RETRY, SHRINK_ABOVE, len_u64,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lease {
    pub(crate) key: u128,
    pub(crate) expiry_ms: u64,
}

#[derive(Debug)]
pub(crate) struct Stored {
    pub(crate) kind: BodyKind,
    pub(crate) body: Arc<[u8]>,
    pub(crate) timestamp_ms: u64,
    pub(crate) attempts: u32,
    /// Meaningful only while `lease` is `None`: the key in `QueueState::ready`.
    pub(crate) visible_at_ms: u64,
    /// The live lease, if the message is in flight.
    pub(crate) lease: Option<Lease>,
    /// Every lease id issued for this message, the live one included: a
    /// stale lease stays usable while its message exists, and all of them
    /// leave `QueueState::leases` when it is deleted.
    pub(crate) issued: Vec<u128>,
    /// Counts the changes that make preview ids stale: deliveries (by a
    /// pull, or by an extension taking an expired lease back) and retries.
    pub(crate) generation: u64,
    /// Whether a retry gave the message back since its last delivery, so
    /// that the last lease can no longer take it back by an extension.
    pub(crate) released: bool,
    /// The delay it was pushed with, for its `CF-msg-delay-secs`.
    pub(crate) delay_ms: u64,
}

/// A message on its way to a dead-letter queue.
#[derive(Debug)]
pub(crate) struct DeadLetterMove {
    pub(crate) kind: BodyKind,
    pub(crate) body: Arc<[u8]>,
    pub(crate) timestamp_ms: u64,
    pub(crate) visible_at_ms: u64,
    /// The delay it was pushed with (0 for a dead-lettered message, which
    /// enters its new queue at once).
    pub(crate) delay_ms: u64,
}

/// One queue. Every message sits in exactly one of `ready` (unleased, keyed by
/// the time it becomes visible) or `inflight` (leased, keyed by lease expiry),
/// so pulls and expiries only walk the entries they act upon.
#[derive(Debug, Default)]
pub(crate) struct QueueState {
    pub(crate) messages: KeyMap<u64, Stored>,
    pub(crate) ready: BTreeSet<(u64, u64)>,
    pub(crate) inflight: BTreeSet<(u64, u64)>,
    /// Every lease id issued for a message that still exists -> its seq.
    pub(crate) leases: KeyMap<u128, u64>,
    /// (push timestamp, seq) so the oldest message is found in O(log n).
    pub(crate) oldest: BTreeSet<(u64, u64)>,
    pub(crate) bytes: u64,
    pub(crate) dead_lettered: u64,
    pub(crate) refs: RefBook,
    pub(crate) previews: RefBook,
    /// When the broker's sweep will next trim this queue's refs and preview
    /// ids, if it is scheduled to.
    pub(crate) sweep_due_ms: Option<u64>,
    /// When this queue's state was created (Unix ms), for the queue object
    /// a purge of the whole queue answers with.
    pub(crate) created_ms: u64,
    /// When the last purge of the whole queue started, if one did.
    pub(crate) purged_at_ms: Option<u64>,
    /// Whether changes are journaled for a data directory: only then do
    /// `touched`, `cleared` and `meta_dirty` fill, so that the in-memory
    /// emulator keeps nothing it would never drain.
    pub(crate) tracking: bool,
    /// Messages stored, changed or deleted since the journal last took
    /// them, each with whether its body is new (may repeat; the journal
    /// reads each one's current state).
    pub(crate) touched: Vec<(u64, bool)>,
    /// Every message was deleted at once since the journal last looked.
    pub(crate) cleared: bool,
    /// `created_ms`, `dead_lettered` or `purged_at_ms` changed.
    pub(crate) meta_dirty: bool,
}

impl QueueState {
    /// An empty queue whose state starts at `now_ms`.
    pub(crate) fn new(now_ms: u64, tracking: bool) -> QueueState {
        QueueState {
            created_ms: now_ms,
            tracking,
            meta_dirty: tracking,
            ..QueueState::default()
        }
    }

    /// Notes that message `seq` must be written (or deleted) again; its
    /// body too when `body` (a new message), otherwise its header only.
    pub(crate) fn touch(&mut self, seq: u64, body: bool) {
        if self.tracking {
            self.touched.push((seq, body));
        }
    }

    pub(crate) fn metrics(&self) -> QueueStats {
        QueueStats {
            backlog_count: len_u64(self.messages.len()),
            backlog_bytes: self.bytes,
            oldest_message_timestamp_ms: self.oldest.first().map_or(0, |&(ts, _)| ts),
        }
    }

    /// Nothing in it that anyone can still read: no message (so no lease,
    /// ref or preview id either), no dead-letter count and no purge status.
    /// Such a queue is dropped, so that a stream of new queue ids costs
    /// nothing once they are empty.
    pub(crate) fn is_reclaimable(&self) -> bool {
        self.messages.is_empty()
            && self.refs.is_empty()
            && self.previews.is_empty()
            && self.dead_lettered == 0
            && self.purged_at_ms.is_none()
    }

    pub(crate) fn insert(&mut self, seq: u64, moved: DeadLetterMove) {
        self.touch(seq, true);
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
                generation: 0,
                released: false,
                delay_ms: moved.delay_ms,
            },
        );
    }

    /// Deletes every message pushed at or before `cutoff_ms`: the queue's
    /// retention period is over for them (Cloudflare's pause-and-purge
    /// page: messages "older than the queue message retention period"
    /// expire, delivered or not). Their leases, refs and preview ids go
    /// stale; they are not dead-lettered.
    pub(crate) fn drop_older_than(&mut self, cutoff_ms: u64) {
        while let Some(&(timestamp_ms, seq)) = self.oldest.first() {
            if timestamp_ms > cutoff_ms {
                break;
            }
            self.remove(seq);
        }
    }

    /// Deletes a message from every index, and forgets all its lease ids.
    pub(crate) fn remove(&mut self, seq: u64) -> Option<Stored> {
        let stored = self.messages.remove(&seq)?;
        self.touch(seq, false);
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
    pub(crate) fn dead_letter(
        &mut self,
        seq: u64,
        visible_at_ms: u64,
        keep: bool,
        moved: &mut Vec<DeadLetterMove>,
    ) {
        if let Some(stored) = self.remove(seq) {
            self.dead_lettered = self.dead_lettered.saturating_add(1);
            self.meta_dirty = self.tracking;
            if keep {
                moved.push(DeadLetterMove {
                    kind: stored.kind,
                    body: stored.body,
                    timestamp_ms: stored.timestamp_ms,
                    visible_at_ms,
                    delay_ms: 0,
                });
            }
        }
    }

    /// Ends every lease that expired by `now_ms`: the message becomes visible
    /// at its expiry time, or is dead-lettered if out of attempts. The lease
    /// id goes stale but stays known while the message exists.
    pub(crate) fn expire(
        &mut self,
        now_ms: u64,
        max_retries: u32,
        keep: bool,
        moved: &mut Vec<DeadLetterMove>,
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
    pub(crate) fn retry(
        &mut self,
        key: u128,
        seq: u64,
        delay_ms: u64,
        now_ms: u64,
        (max_retries, keep): (u32, bool),
        moved: &mut Vec<DeadLetterMove>,
    ) -> Result<(), &'static str> {
        let Some(stored) = self.messages.get_mut(&seq) else {
            return Err(LEASE_UNKNOWN);
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
        stored.released = true;
        stored.generation = stored.generation.wrapping_add(1);
        if self.tracking {
            self.touched.push((seq, false));
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

    /// Makes message `seq` visible at `visible_at_ms`, ending its lease if
    /// it has one (a retry by hand: no attempt used, never dead-lettered);
    /// `false` when there is no such message.
    pub(crate) fn make_visible(&mut self, seq: u64, visible_at_ms: u64) -> bool {
        let Some(stored) = self.messages.get_mut(&seq) else {
            return false;
        };
        match stored.lease.take() {
            Some(lease) => {
                self.inflight.remove(&(lease.expiry_ms, seq));
            }
            None => {
                self.ready.remove(&(stored.visible_at_ms, seq));
            }
        }
        stored.released = true;
        stored.generation = stored.generation.wrapping_add(1);
        stored.visible_at_ms = visible_at_ms;
        self.ready.insert((visible_at_ms, seq));
        if self.tracking {
            self.touched.push((seq, false));
        }
        true
    }

    /// Extends lease `key` of message `seq` until `expiry_ms`, keeping its
    /// attempts; see [`Broker::extend`](crate::state::Broker::extend) for the rules.
    pub(crate) fn extend(
        &mut self,
        key: u128,
        seq: u64,
        expiry_ms: u64,
    ) -> Result<(), &'static str> {
        let Some(stored) = self.messages.get_mut(&seq) else {
            return Err(LEASE_UNKNOWN);
        };
        match stored.lease {
            Some(lease) if lease.key != key => return Err(DELIVERED_AGAIN),
            Some(lease) => {
                self.inflight.remove(&(lease.expiry_ms, seq));
            }
            // Expired: taken back only by the last lease granted, and only
            // while no retry has given the message back since.
            None if stored.issued.last() != Some(&key) => return Err(DELIVERED_AGAIN),
            None if stored.released => return Err(RELEASED_BY_RETRY),
            None => {
                self.ready.remove(&(stored.visible_at_ms, seq));
                // It leaves the visible set as a delivery would, so the
                // preview ids it was shown with go stale.
                stored.generation = stored.generation.wrapping_add(1);
            }
        }
        stored.lease = Some(Lease { key, expiry_ms });
        self.inflight.insert((expiry_ms, seq));
        Ok(())
    }

    /// Puts a previewed, unleased message back after `delay_ms`, keeping
    /// its attempts: it was not delivered.
    pub(crate) fn delay_previewed(&mut self, seq: u64, delay_ms: u64, now_ms: u64) {
        let Some(stored) = self.messages.get_mut(&seq) else {
            return;
        };
        if stored.lease.is_some() {
            return;
        }
        self.ready.remove(&(stored.visible_at_ms, seq));
        stored.released = true;
        stored.generation = stored.generation.wrapping_add(1);
        stored.visible_at_ms = now_ms.saturating_add(delay_ms);
        self.ready.insert((stored.visible_at_ms, seq));
        self.touch(seq, false);
    }

    /// Deletes every message at once, with its leases, refs and preview
    /// ids, and gives back the memory they held. Returns how many there were.
    pub(crate) fn clear(&mut self) -> u64 {
        let purged = len_u64(self.messages.len());
        self.messages = KeyMap::default();
        self.ready = BTreeSet::new();
        self.inflight = BTreeSet::new();
        self.leases = KeyMap::default();
        self.oldest = BTreeSet::new();
        self.bytes = 0;
        self.refs = RefBook::default();
        self.previews = RefBook::default();
        if self.tracking {
            // Supersedes every change noted before it.
            self.touched.clear();
            self.cleared = true;
        }
        purged
    }

    /// Forgets refs and preview ids beyond the cap or TTL, and all of them
    /// once the queue is empty (they could only name deleted messages); and
    /// the status of a purge older than [`PURGE_STATUS_TTL_MS`].
    pub(crate) fn trim_refs(&mut self, now_ms: u64) {
        let drained = self.messages.is_empty();
        self.refs.trim(now_ms, drained);
        self.previews.trim(now_ms, drained);
        if self
            .purged_at_ms
            .is_some_and(|at| now_ms.saturating_sub(at) >= PURGE_STATUS_TTL_MS)
        {
            self.purged_at_ms = None;
            self.meta_dirty = self.tracking;
        }
    }

    /// When the oldest ref or preview id left expires, or the purge status
    /// is forgotten, if there is any of them.
    pub(crate) fn next_ref_expiry(&self) -> Option<u64> {
        let purge = self
            .purged_at_ms
            .map(|at| at.saturating_add(PURGE_STATUS_TTL_MS));
        [self.refs.next_expiry(), self.previews.next_expiry(), purge]
            .into_iter()
            .flatten()
            .min()
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
