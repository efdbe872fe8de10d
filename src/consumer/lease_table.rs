//! [`LeaseTable`]: the leases a consumer holds, how far each has got, and
//! when each next needs the keeper's attention.
//!
//! Every time here is read from tokio's monotonic clock. A lease's expiry is
//! estimated from when its pull (or extension) was *sent*: the server
//! started the lease no earlier than that, so the estimate is never later
//! than the real expiry, whatever the network's delay.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::message::LeaseId;
use crate::time::{after, after_or_far};

/// How far a lease has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Pulled; a handler (or a stream's holder) has it.
    Handling,
    /// Settled by the handler, or released; its ack or retry is on its way.
    Settling,
}

/// One lease held.
#[derive(Debug)]
pub(crate) struct LeaseEntry {
    pub lease_id: LeaseId,
    pub bytes: u64,
    pulled_at: Instant,
    expires_at: Instant,
    pub(crate) state: State,
    /// Still counted against `max_in_flight` (and its bytes in flight).
    pub(crate) holds_slot: bool,
    /// Counted in `leases_lost` already.
    lost: bool,
    /// A flush of its settlement failed in a way that may have applied it:
    /// a warning about the lease then most likely means "settled already".
    maybe_applied: bool,
    /// No longer extended: the maximum total lease was reached, or the
    /// lease was lost.
    capped: bool,
    /// The key of this entry in the due set, if any.
    due: Option<Instant>,
    /// The task handling the message (a batch's task for each of its messages).
    abort: Option<AbortHandle>,
}

/// What the keeper does with a lease that came due.
pub(crate) enum Due {
    Extend(Duration),
    Expired,
    Capped,
}

/// Hashes the table's keys, which this table hands out in sequence: a
/// multiplication spreads them, where SipHash would cost more than the
/// lookup (keys are not chosen by anyone, so flooding is not a concern).
#[derive(Debug, Default, Clone, Copy)]
struct LeaseKeyHasher(u64);

impl Hasher for LeaseKeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The leases held, with the time each next needs attention.
#[derive(Debug, Default)]
pub(crate) struct LeaseTable {
    entries: HashMap<u64, LeaseEntry, BuildHasherDefault<LeaseKeyHasher>>,
    due: BTreeSet<(Instant, u64)>,
    next_key: u64,
    handling: usize,
    settling: usize,
}

impl LeaseTable {
    /// Registers a lease pulled by a request sent at `pulled_at`; returns its key.
    pub(crate) fn insert(
        &mut self,
        lease_id: LeaseId,
        bytes: u64,
        pulled_at: Instant,
        lease: Duration,
        margin: Duration,
    ) -> u64 {
        let key = self.next_key;
        self.next_key += 1;
        let expires_at = after_or_far(pulled_at, lease);
        let due = expires_at.checked_sub(margin).unwrap_or(pulled_at);
        self.due.insert((due, key));
        self.entries.insert(
            key,
            LeaseEntry {
                lease_id,
                bytes,
                pulled_at,
                expires_at,
                state: State::Handling,
                holds_slot: true,
                lost: false,
                maybe_applied: false,
                capped: false,
                due: Some(due),
                abort: None,
            },
        );
        self.handling += 1;
        key
    }

    /// Remembers the task handling `key`, to cancel it if it outlives the grace period.
    pub(crate) fn set_abort(&mut self, key: u64, abort: AbortHandle) {
        match self.entries.get_mut(&key) {
            Some(entry) if entry.state == State::Handling => entry.abort = Some(abort),
            _ => {}
        }
    }

    /// How many leases are still with their handlers.
    pub(crate) fn handling(&self) -> usize {
        self.handling
    }

    /// How many settlements are on their way to the API.
    pub(crate) fn settling(&self) -> usize {
        self.settling
    }

    /// Moves a lease from its handler to settling at `now`; `None` when it
    /// was settled or released already. A live lease frees its slot at
    /// once (`Some(Some(bytes))`): its ack's round trip is not charged to
    /// the handlers. A lease past its expiry keeps its slot until its
    /// settlement is answered (`Some(None)`), so that the consumer does not
    /// pull its own message again before the late ack lands.
    pub(crate) fn begin_settle(&mut self, key: u64, now: Instant) -> Option<Option<u64>> {
        let entry = self.entries.get_mut(&key)?;
        if entry.state != State::Handling {
            return None;
        }
        entry.state = State::Settling;
        entry.abort = None;
        self.handling -= 1;
        self.settling += 1;
        if entry.lost || now >= entry.expires_at {
            return Some(None);
        }
        entry.holds_slot = false;
        Some(Some(entry.bytes))
    }

    /// Marks leases whose settlement may have been applied by a failed flush.
    pub(crate) fn mark_maybe_applied(&mut self, keys: impl IntoIterator<Item = u64>) {
        for key in keys {
            if let Some(entry) = self.entries.get_mut(&key) {
                entry.maybe_applied = true;
            }
        }
    }

    /// Whether a flush of the lease's settlement may have been applied.
    pub(crate) fn maybe_applied(&self, key: u64) -> bool {
        self.entries.get(&key).is_some_and(|e| e.maybe_applied)
    }

    /// When a settlement of `key` stops being worth sending: once its lease
    /// can no longer be kept, `max_lease` after its pull. `None`: never.
    pub(crate) fn give_up_at(&self, key: u64, max_lease: Duration) -> Option<Instant> {
        let entry = self.entries.get(&key)?;
        after(entry.pulled_at, max_lease)
    }

    /// When the first of these leases runs out, as estimated.
    pub(crate) fn expires_first(&self, keys: impl IntoIterator<Item = u64>) -> Option<Instant> {
        keys.into_iter()
            .filter_map(|key| self.entries.get(&key))
            .map(|entry| entry.expires_at)
            .min()
    }

    /// The lease id of a lease held.
    pub(crate) fn lease_id(&self, key: u64) -> Option<&LeaseId> {
        self.entries.get(&key).map(|entry| &entry.lease_id)
    }

    /// Forgets a lease (settled, left to expire or given up); `None` if it
    /// was not held.
    pub(crate) fn remove(&mut self, key: u64) -> Option<LeaseEntry> {
        let entry = self.entries.remove(&key)?;
        if let Some(due) = entry.due {
            self.due.remove(&(due, key));
        }
        match entry.state {
            State::Handling => self.handling -= 1,
            State::Settling => self.settling -= 1,
        }
        Some(entry)
    }

    /// Moves every lease still with its handler to settling: their keys,
    /// the tasks to cancel, and their body bytes.
    pub(crate) fn release_all(&mut self) -> (Vec<u64>, Vec<AbortHandle>, u64) {
        let mut released = Vec::new();
        let mut aborts = Vec::new();
        let mut bytes = 0;
        for (&key, entry) in &mut self.entries {
            if entry.state == State::Handling {
                entry.state = State::Settling;
                aborts.extend(entry.abort.take());
                released.push(key);
                if entry.holds_slot {
                    entry.holds_slot = false;
                    bytes += entry.bytes;
                }
            }
        }
        self.settling += released.len();
        self.handling = 0;
        released.sort_unstable();
        (released, aborts, bytes)
    }

    /// A lease about to be settled at `now`: its lease id, and whether it is
    /// past its estimated expiry and not counted as lost yet (it is marked
    /// lost then).
    pub(crate) fn settling_at(&mut self, key: u64, now: Instant) -> Option<(&LeaseId, bool)> {
        let entry = self.entries.get_mut(&key)?;
        let newly_lost = !entry.lost && now >= entry.expires_at;
        if newly_lost {
            entry.lost = true;
        }
        Some((&entry.lease_id, newly_lost))
    }

    /// Marks a lease lost (taken over or gone); whether it was not yet.
    pub(crate) fn mark_lost(&mut self, key: u64) -> bool {
        let Some(entry) = self.entries.get_mut(&key) else {
            return false;
        };
        entry.capped = true;
        let first = !entry.lost;
        entry.lost = true;
        self.reschedule(key, None);
        first
    }

    /// Stops extending a lease without counting it lost: its settlement
    /// most likely applied already.
    pub(crate) fn stop_extending(&mut self, key: u64) {
        if let Some(entry) = self.entries.get_mut(&key) {
            entry.capped = true;
            entry.lost = true;
        }
        self.reschedule(key, None);
    }

    /// The earliest time a lease needs attention.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.due.first().map(|(at, _)| *at)
    }

    fn reschedule(&mut self, key: u64, at: Option<Instant>) {
        let Some(entry) = self.entries.get_mut(&key) else {
            return;
        };
        if let Some(old) = entry.due.take() {
            self.due.remove(&(old, key));
        }
        if let Some(at) = at {
            entry.due = Some(at);
            self.due.insert((at, key));
        }
    }

    /// A lease was extended by a call sent at `sent`.
    pub(crate) fn extended(&mut self, key: u64, sent: Instant, by: Duration, margin: Duration) {
        let Some(entry) = self.entries.get_mut(&key) else {
            return;
        };
        entry.expires_at = entry.expires_at.max(after_or_far(sent, by));
        let next = entry.expires_at.checked_sub(margin).unwrap_or(sent);
        self.reschedule(key, Some(next));
    }

    /// Takes the leases due by `until` and says what to do with each.
    pub(crate) fn take_due(
        &mut self,
        now: Instant,
        until: Instant,
        max_lease: Duration,
        extension: Duration,
        margin: Duration,
    ) -> Vec<(u64, LeaseId, Due)> {
        let mut taken = Vec::new();
        // Put back after the loop, or a lease due within `until` would be taken again.
        let mut later = Vec::new();
        while let Some(&(at, key)) = self.due.first() {
            if at > until {
                break;
            }
            self.due.remove(&(at, key));
            let Some(entry) = self.entries.get_mut(&key) else {
                continue;
            };
            entry.due = None;
            let lease_id = entry.lease_id.clone();
            if entry.capped {
                // The due time was the expiry check of a lease no longer extended.
                if now >= entry.expires_at && !entry.lost {
                    entry.lost = true;
                    taken.push((key, lease_id, Due::Expired));
                } else if !entry.lost {
                    later.push((entry.expires_at, key));
                }
                continue;
            }
            // A maximum too long for the clock is no maximum.
            let last = after(entry.pulled_at, max_lease);
            if last.is_some_and(|last| last <= now + margin) {
                entry.capped = true;
                later.push((entry.expires_at, key));
                taken.push((key, lease_id, Due::Capped));
                continue;
            }
            let by = last.map_or(extension, |last| {
                extension.min(last.saturating_duration_since(now))
            });
            taken.push((key, lease_id, Due::Extend(by)));
        }
        for (at, key) in later {
            self.reschedule(key, Some(at));
        }
        taken
    }

    /// After a failed extension: try again soon, while the lease lasts.
    pub(crate) fn retry_later(&mut self, key: u64, now: Instant) {
        let Some(entry) = self.entries.get(&key) else {
            return;
        };
        let left = entry.expires_at.saturating_duration_since(now);
        let at = if left.is_zero() {
            // Out of time: the next look marks it lost.
            if let Some(entry) = self.entries.get_mut(&key) {
                entry.capped = true;
            }
            now
        } else {
            // Half the time left, at most a second; never sooner than
            // 100 ms (a failing server is not hammered as the lease runs
            // out), unless the lease ends sooner.
            let pause = (left / 2)
                .min(Duration::from_secs(1))
                .max(Duration::from_millis(100).min(left));
            now + pause
        };
        self.reschedule(key, Some(at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn extends_before_expiry_up_to_the_maximum() {
        let mut t = LeaseTable::default();
        let t0 = Instant::now();
        let key = t.insert("l".into(), 1, t0, 30 * S, 10 * S);
        assert_eq!(t.next_due(), Some(t0 + 20 * S));
        let due = t.take_due(t0 + 20 * S, t0 + 20 * S, 60 * S, 30 * S, 10 * S);
        assert!(matches!(due[..], [(k, _, Due::Extend(by))] if k == key && by == 30 * S));
        t.extended(key, t0 + 20 * S, 30 * S, 10 * S);
        assert_eq!(t.next_due(), Some(t0 + 40 * S));
        // 20 s of the 60 s maximum are left: the last extension is shorter.
        let due = t.take_due(t0 + 40 * S, t0 + 40 * S, 60 * S, 30 * S, 10 * S);
        assert!(matches!(due[..], [(_, _, Due::Extend(by))] if by == 20 * S));
        t.extended(key, t0 + 40 * S, 20 * S, 10 * S);
        let due = t.take_due(t0 + 50 * S, t0 + 50 * S, 60 * S, 30 * S, 10 * S);
        assert!(matches!(due[..], [(_, _, Due::Capped)]));
        assert_eq!(t.next_due(), Some(t0 + 60 * S));
        let due = t.take_due(t0 + 60 * S, t0 + 60 * S, 60 * S, 30 * S, 10 * S);
        assert!(matches!(due[..], [(_, _, Due::Expired)]));
        assert_eq!(t.next_due(), None);
        assert_eq!(
            t.settling_at(key, t0 + 61 * S).map(|(_, lost)| lost),
            Some(false),
            "counted once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn settle_release_and_remove_keep_counts() {
        let mut t = LeaseTable::default();
        let t0 = Instant::now();
        let a = t.insert("a".into(), 1, t0, 30 * S, 10 * S);
        let b = t.insert("b".into(), 1, t0, 30 * S, 10 * S);
        let c = t.insert("c".into(), 1, t0, 30 * S, 10 * S);
        assert_eq!(t.handling(), 3);
        assert_eq!(t.begin_settle(a, t0), Some(Some(1)));
        assert_eq!(t.settling(), 1);
        assert_eq!(t.lease_id(a).map(LeaseId::as_str), Some("a"));
        assert_eq!(t.begin_settle(a, t0), None, "settled once");
        assert!(t.remove(b).is_some());
        let (released, _, bytes) = t.release_all();
        assert_eq!((bytes, t.settling()), (1, 2));
        let late = t.insert("late".into(), 1, t0, 30 * S, 10 * S);
        assert_eq!(
            t.begin_settle(late, t0 + 30 * S),
            Some(None),
            "an expired lease keeps its slot"
        );
        assert!(t.remove(late).is_some_and(|e| e.holds_slot));
        assert_eq!(released, [c]);
        assert_eq!(t.handling(), 0);
        assert_eq!(t.begin_settle(c, t0), None, "released already");
        assert_eq!(
            t.settling_at(c, t0 + 29 * S).map(|(_, lost)| lost),
            Some(false)
        );
        assert_eq!(
            t.settling_at(c, t0 + 30 * S).map(|(_, lost)| lost),
            Some(true)
        );
        assert_eq!(
            t.settling_at(c, t0 + 31 * S).map(|(_, lost)| lost),
            Some(false),
            "once"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_extension_is_tried_again_until_expiry() {
        let mut t = LeaseTable::default();
        let t0 = Instant::now();
        let key = t.insert("l".into(), 1, t0, 30 * S, 10 * S);
        t.retry_later(key, t0 + 20 * S);
        assert_eq!(t.next_due(), Some(t0 + 21 * S));
        // Close to the end, never sooner than 100 ms, nor after the expiry.
        t.retry_later(key, t0 + 29 * S + Duration::from_millis(850));
        assert_eq!(t.next_due(), Some(t0 + 29 * S + Duration::from_millis(950)));
        t.retry_later(key, t0 + 29 * S + Duration::from_millis(950));
        assert_eq!(t.next_due(), Some(t0 + 30 * S));
        t.retry_later(key, t0 + 30 * S);
        let due = t.take_due(t0 + 30 * S, t0 + 30 * S, 3600 * S, 30 * S, 10 * S);
        assert!(matches!(due[..], [(_, _, Due::Expired)]));
    }
}
