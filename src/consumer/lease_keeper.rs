//! Lease keeping: the table of leases held, and the keeper task that
//! extends them before they expire.
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
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::shared::ConsumerState;
use crate::counters::add;
use crate::message::LeaseId;
use crate::time::{after, after_or_far, sleep_until};

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
    state: State,
    /// Counted in `leases_lost` already.
    lost: bool,
    /// No longer extended: the maximum total lease was reached, or the
    /// lease was lost.
    capped: bool,
    /// The key of this entry in the due set, if any.
    due: Option<Instant>,
    /// The task handling the message (a batch's task for each of its messages).
    abort: Option<AbortHandle>,
}

/// What the keeper does with a lease that came due.
enum Due {
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
                lost: false,
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

    /// Moves a lease from its handler to settling; false when it was
    /// settled or released already.
    pub(crate) fn begin_settle(&mut self, key: u64) -> bool {
        let Some(entry) = self.entries.get_mut(&key) else {
            return false;
        };
        if entry.state != State::Handling {
            return false;
        }
        entry.state = State::Settling;
        entry.abort = None;
        self.handling -= 1;
        true
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
        if entry.state == State::Handling {
            self.handling -= 1;
        }
        Some(entry)
    }

    /// Moves every lease still with its handler to settling: their keys
    /// and the tasks to cancel.
    pub(crate) fn release_all(&mut self) -> (Vec<u64>, Vec<AbortHandle>) {
        let mut released = Vec::new();
        let mut aborts = Vec::new();
        for (&key, entry) in &mut self.entries {
            if entry.state == State::Handling {
                entry.state = State::Settling;
                aborts.extend(entry.abort.take());
                released.push(key);
            }
        }
        self.handling = 0;
        released.sort_unstable();
        (released, aborts)
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
    fn take_due(
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
    fn retry_later(&mut self, key: u64, now: Instant) {
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

/// Extends leases as they come due, until `stop`.
pub(crate) async fn keep(shared: std::sync::Arc<ConsumerState>, stop: CancellationToken) {
    loop {
        let wake = shared.keeper_wake.notified();
        let next = shared.table().next_due();
        tokio::select! {
            biased;
            () = stop.cancelled() => return,
            () = wake => {}
            () = sleep_until(next) => extend_due(&shared).await,
        }
    }
}

async fn extend_due(shared: &ConsumerState) {
    let settings = &shared.settings;
    let margin = settings.margin();
    let now = Instant::now();
    // Leases due a little later go along: one call instead of several.
    let taken = shared.table().take_due(
        now,
        now + margin / 4,
        settings.max_lease,
        settings.visibility_timeout,
        margin,
    );
    let mut groups: HashMap<Duration, Vec<(u64, LeaseId)>> = HashMap::new();
    for (key, lease_id, due) in taken {
        match due {
            Due::Extend(by) => groups.entry(by).or_default().push((key, lease_id)),
            Due::Capped => {
                add(&shared.counters.max_lease_reached, 1);
                tracing::warn!(
                    queue = shared.queue.id(),
                    lease = ?lease_id,
                    max_lease_ms = settings.max_lease.as_millis() as u64,
                    "the handler still runs at the maximum lease time: the lease is no longer extended"
                );
            }
            Due::Expired => {
                add(&shared.counters.leases_lost, 1);
                tracing::warn!(
                    queue = shared.queue.id(),
                    lease = ?lease_id,
                    "a lease expired before its message was settled: it may be delivered again"
                );
            }
        }
    }
    for (by, leases) in groups {
        for chunk in leases.chunks(100) {
            extend_chunk(shared, chunk, by, margin).await;
        }
    }
}

async fn extend_chunk(
    shared: &ConsumerState,
    chunk: &[(u64, LeaseId)],
    by: Duration,
    margin: Duration,
) {
    let span = tracing::info_span!(
        "extend",
        otel.name = %format_args!("extend {}", shared.queue.id()),
        otel.kind = "client",
        messaging.system = super::MESSAGING_SYSTEM,
        messaging.destination.name = shared.queue.id(),
        // Not one of OpenTelemetry's well-known types, which allow custom
        // ones of low cardinality: an extension neither receives nor settles.
        messaging.operation.type = "extend",
        messaging.operation.name = "extend",
        messaging.batch.message_count = chunk.len(),
    );
    let sent = Instant::now();
    let result = shared
        .queue
        .extend(chunk.iter().map(|(_, lease)| lease), by)
        .instrument(span)
        .await;
    let mut table = shared.table();
    match result {
        Ok(outcome) => {
            let warned: std::collections::HashSet<&str> = outcome
                .warnings
                .iter()
                .filter_map(|w| w.subject.as_deref())
                .collect();
            let unattributed = outcome.warnings.iter().any(|w| w.subject.is_none());
            let mut extended = 0;
            for (key, lease) in chunk {
                if warned.contains(lease.as_str()) {
                    if table.mark_lost(*key) {
                        add(&shared.counters.leases_lost, 1);
                        tracing::warn!(
                            queue = shared.queue.id(),
                            lease = ?lease,
                            "a lease could not be extended (its message was delivered again or deleted): it may be handled twice"
                        );
                    }
                } else if unattributed {
                    // Which leases the old list form is about is unknown: keep the
                    // estimate and try again soon, which is safe either way.
                    table.retry_later(*key, Instant::now());
                } else {
                    table.extended(*key, sent, by, margin);
                    extended += 1;
                }
            }
            add(&shared.counters.extended, extended);
        }
        Err(error) => {
            add(&shared.counters.extend_errors, 1);
            tracing::warn!(
                queue = shared.queue.id(),
                leases = chunk.len(),
                %error,
                "extending leases failed; trying again while they last"
            );
            let now = Instant::now();
            for (key, _) in chunk {
                table.retry_later(*key, now);
            }
        }
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
        assert!(t.begin_settle(a));
        assert_eq!(t.lease_id(a).map(LeaseId::as_str), Some("a"));
        assert!(!t.begin_settle(a), "settled once");
        assert!(t.remove(b).is_some());
        let (released, _) = t.release_all();
        assert_eq!(released, [c]);
        assert_eq!(t.handling(), 0);
        assert!(!t.begin_settle(c), "released already");
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
