//! Purging a whole queue, and the status of its last purge.
//!
//! Cloudflare's purge runs asynchronously ("Deletes all messages from the
//! QueueState", with a separate status call); here it is done by the time the
//! call returns, so its status says completed at once.

use crate::state::broker::{queue_or_create, schedule_sweep};
use crate::state::{At, Broker, PurgedQueue};

impl Broker {
    /// Deletes every message of the queue at once, whatever its state
    /// (visible, delayed or leased): every lease id, peek ref and preview id
    /// of the queue goes stale. The dead-letter count stays. Records the
    /// purge's start for [`Broker::purge_status`], which keeps the queue's
    /// state alive even when it holds nothing else, for
    /// [`PURGE_STATUS_TTL_MS`](crate::state::PURGE_STATUS_TTL_MS).
    pub(crate) fn purge_all<'a>(&mut self, at: impl Into<At<'a>>, now_ms: u64) -> PurgedQueue {
        let at = at.into();
        // Settled first: messages a feeding queue dead-lettered before now
        // are part of what is purged.
        self.prepare(at, now_ms);
        let outcome = match queue_or_create(&mut self.accounts, at, now_ms, self.tokens.tracking) {
            Some(q) => {
                let purged = q.clear();
                q.purged_at_ms = Some(now_ms);
                q.meta_dirty = q.tracking;
                schedule_sweep(&mut self.sweeps, q, at);
                PurgedQueue {
                    purged,
                    created_ms: q.created_ms,
                    started_ms: now_ms,
                }
            }
            None => PurgedQueue {
                purged: 0,
                created_ms: now_ms,
                started_ms: now_ms,
            },
        };
        // The queue object the purge answers with says it changed now.
        if let Some(record) = self.registry.record_mut(at.account, at.queue) {
            record.modified_ms = now_ms;
        }
        self.finish(at);
        outcome
    }

    /// When the last purge of the whole queue started, `None` if it was
    /// never purged. Purges complete at once, so a purge that started has
    /// completed.
    pub(crate) fn purge_status<'a>(&mut self, at: impl Into<At<'a>>, now_ms: u64) -> Option<u64> {
        let at = at.into();
        self.prepare(at, now_ms);
        let started = self
            .accounts
            .get(at.account)
            .and_then(|queues| queues.get(at.queue))
            .and_then(|q| q.purged_at_ms);
        self.finish(at);
        started
    }
}
