//! Changes made by hand, from the dashboard: deleting, retrying and moving
//! messages chosen by their place in the queue rather than by a lease.
//! Each runs on the locked broker like any operation, so that with a data
//! directory it is journaled (and a move between two queues is committed
//! as one change: both queues, or neither).

use super::{At, Broker};
use crate::state::messages::queue::DeadLetterMove;

impl Broker {
    /// Deletes the messages of the queue at `at` whose sequence numbers are
    /// listed (those that still exist); how many it deleted. Their leases go
    /// stale: a later ack of one is answered with a warning.
    pub(crate) fn delete_by_hand(&mut self, at: At<'_>, seqs: &[u64], now_ms: u64) -> usize {
        self.prepare(at, now_ms);
        let mut deleted = 0;
        if let Some(q) = self.accounts.get_mut(at) {
            for seq in seqs {
                if q.remove(*seq).is_some() {
                    deleted += 1;
                }
            }
        }
        self.finish(at);
        deleted
    }

    /// Makes the listed messages visible again `delay_ms` from now, ending
    /// their leases; no attempt is used (a retry by hand, not a delivery).
    /// How many it changed.
    pub(crate) fn retry_by_hand(
        &mut self,
        at: At<'_>,
        seqs: &[u64],
        delay_ms: u64,
        now_ms: u64,
    ) -> usize {
        self.prepare(at, now_ms);
        let visible_at_ms = now_ms.saturating_add(delay_ms);
        let mut retried = 0;
        if let Some(q) = self.accounts.get_mut(at) {
            for &seq in seqs {
                if q.make_visible(seq, visible_at_ms) {
                    retried += 1;
                }
            }
        }
        self.finish(at);
        retried
    }

    /// Moves messages from queue `from` to queue `to` of `account`: those
    /// listed, or all of them (`None`), in push order, each a new message
    /// of `to` (visible now, no attempt used, pushed now). Under one lock:
    /// no message is in both queues, or in neither, at any time anyone can
    /// see. How many it moved.
    pub(crate) fn move_by_hand(
        &mut self,
        account: &str,
        from: &str,
        to: &str,
        seqs: Option<&[u64]>,
        now_ms: u64,
    ) -> usize {
        let source = At {
            account,
            queue: from,
        };
        let target = At { account, queue: to };
        self.prepare(source, now_ms);
        let chosen: Vec<u64> = match (self.accounts.get(account).and_then(|s| s.get(from)), seqs) {
            (None, _) => Vec::new(),
            (Some(q), None) => q.oldest.iter().map(|&(_, seq)| seq).collect(),
            (Some(q), Some(seqs)) => {
                let mut listed: Vec<(u64, u64)> = seqs
                    .iter()
                    .filter_map(|seq| q.messages.get(seq).map(|m| (m.timestamp_ms, *seq)))
                    .collect();
                listed.sort_unstable();
                listed.dedup();
                listed.into_iter().map(|(_, seq)| seq).collect()
            }
        };
        let mut taken = Vec::with_capacity(chosen.len());
        if let Some(q) = self.accounts.get_mut(source) {
            for seq in chosen {
                if let Some(stored) = q.remove(seq) {
                    taken.push(DeadLetterMove {
                        kind: stored.kind,
                        body: stored.body,
                        timestamp_ms: now_ms,
                        visible_at_ms: now_ms,
                        delay_ms: 0,
                    });
                }
            }
        }
        self.finish(source);
        let moved = taken.len();
        if moved > 0 {
            self.prepare(target, now_ms);
            let Broker {
                accounts, tokens, ..
            } = self;
            if let Some(q) = accounts.get_or_create(target, now_ms, tokens.tracking) {
                for message in taken {
                    q.insert(tokens.seq(), message);
                }
            }
            self.activity.note(target, |c| c.pushed += moved as u64);
            self.finish(target);
        }
        moved
    }
}
