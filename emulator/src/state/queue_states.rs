//! Every account's queue states (the messages), lent out mutably only
//! through methods that note which ones a data directory must look at:
//! the journal ([`Broker::take_journal`](super::Broker::take_journal))
//! takes what the operations touched, never a walk of every queue, so a
//! request costs the same with one queue as with 10,000.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;

use super::At;
use crate::state::messages::queue::QueueState;

/// The queue states of one account, by queue id.
pub(super) type Queues = HashMap<String, QueueState>;

/// Account id -> its queue states, and the tracking states lent mutably
/// since the journal last took them. Reads go through [`Deref`]; there is
/// no `DerefMut`, so that no change can bypass the note.
#[derive(Debug, Default)]
pub(super) struct States {
    map: HashMap<String, Queues>,
    /// Account -> queue ids; only tracking states (a data directory's)
    /// are noted, so the in-memory emulator notes nothing.
    lent: HashMap<String, HashSet<String>>,
}

impl Deref for States {
    type Target = HashMap<String, Queues>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

/// Notes `at` in `lent`, allocating only the first time.
fn note(lent: &mut HashMap<String, HashSet<String>>, at: At<'_>) {
    match lent.get_mut(at.account) {
        Some(ids) => {
            if !ids.contains(at.queue) {
                ids.insert(at.queue.to_owned());
            }
        }
        None => {
            lent.insert(at.account.to_owned(), HashSet::from([at.queue.to_owned()]));
        }
    }
}

impl States {
    /// The queue state of `at`, noted for the journal.
    pub(super) fn get_mut(&mut self, at: At<'_>) -> Option<&mut QueueState> {
        let q = self.map.get_mut(at.account)?.get_mut(at.queue)?;
        if q.tracking {
            note(&mut self.lent, at);
        }
        Some(q)
    }

    /// The queue state of `at`, created (with `tracking`) if there is none,
    /// noted for the journal.
    pub(super) fn get_or_create(
        &mut self,
        at: At<'_>,
        now_ms: u64,
        tracking: bool,
    ) -> Option<&mut QueueState> {
        // Looked up before inserting, so that the common case allocates no keys.
        if !self.map.contains_key(at.account) {
            self.map.insert(at.account.to_owned(), Queues::new());
        }
        let queues = self.map.get_mut(at.account)?;
        if !queues.contains_key(at.queue) {
            queues.insert(at.queue.to_owned(), QueueState::new(now_ms, tracking));
        }
        let q = queues.get_mut(at.queue)?;
        if q.tracking {
            note(&mut self.lent, at);
        }
        Some(q)
    }

    /// Drops the queue state of `at` (and its account's map once empty).
    /// Its stored rows are the caller's to clear (the broker's orphans).
    pub(super) fn remove(&mut self, at: At<'_>) -> Option<QueueState> {
        let queues = self.map.get_mut(at.account)?;
        let dropped = queues.remove(at.queue);
        if queues.is_empty() {
            self.map.remove(at.account);
        }
        dropped
    }

    /// The states lent since the last call, account -> ids.
    pub(super) fn take_lent(&mut self) -> HashMap<String, HashSet<String>> {
        std::mem::take(&mut self.lent)
    }

    /// Forgets what was lent (a restore's states are clean).
    pub(super) fn clear_lent(&mut self) {
        self.lent.clear();
    }

    /// Every state, made tracking and noted: a data directory starts.
    pub(super) fn track_all(&mut self, mut each: impl FnMut(&mut QueueState)) {
        for (account, queues) in &mut self.map {
            for (id, q) in queues.iter_mut() {
                q.tracking = true;
                each(q);
                note(&mut self.lent, At { account, queue: id });
            }
        }
    }
}
