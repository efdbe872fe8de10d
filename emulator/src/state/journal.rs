//! The journal a data directory is kept by: what changed since it last
//! looked, as rows to write, and the way back from those rows to a broker.
//!
//! The broker stays pure: queue states note which messages they touched
//! (only when `tracking`, so the in-memory emulator notes nothing), and
//! [`Broker::take_journal`] turns the notes into [`Change`]s by reading each
//! touched message's current state. Whoever holds the broker's lock takes
//! the journal before releasing it, so journals leave in the order the
//! changes were made, and the store (`crate::store`) writes them in that
//! order with one commit for many requests.
//!
//! What is not written, because a restart rebuilds it: leases (they end
//! with a crash; the messages are loaded as leased until the load time, so
//! the next touch expires them by the usual rule), peek refs and preview
//! ids, the name and order indexes of the registry. Event subscriptions
//! are written as queue records are, one JSON row each.

use std::sync::Arc;

use super::broker::Broker;
use super::{At, BodyKind, len_u64};
use crate::state::event_subscriptions::records::SubscriptionRecord;
use crate::state::management::resources::QueueRecord;
use crate::state::messages::queue::{Lease, QueueState, Stored};

/// One row to write, in the order the changes were made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// A message's record, or `None`: it was deleted.
    Message {
        account: String,
        queue: String,
        seq: u64,
        record: Option<MessageRow>,
    },
    /// Every message of a queue deleted at once.
    Clear { account: String, queue: String },
    /// A queue state's figures (creation, dead-letter count, purge), or
    /// `None`: the state was dropped.
    QueueMeta {
        account: String,
        queue: String,
        meta: Option<Vec<u8>>,
    },
    /// A queue record as JSON, or `None`: forgotten (an idle lax queue).
    Record {
        account: String,
        id: String,
        record: Option<Vec<u8>>,
    },
    /// A queue deleted by the API: its id never springs back.
    Deleted { account: String, id: String },
    /// An event subscription as JSON, or `None`: deleted.
    Subscription {
        account: String,
        id: String,
        record: Option<Vec<u8>>,
    },
}

/// A message as stored: its header, and its body when it is new (a pull
/// or a retry rewrites the header only, so a body is written once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MessageRow {
    pub header: Vec<u8>,
    /// Shared with the broker: taking the journal copies no body.
    pub body: Option<Arc<[u8]>>,
}

/// What one operation (or one start) changed.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    pub changes: Vec<Change>,
    /// The next message sequence number, so that ids are never reused.
    pub next_seq: u64,
}

impl Journal {
    pub(crate) fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

const KIND_TEXT: u8 = 0;
const KIND_JSON: u8 = 1;
const KIND_BYTES: u8 = 2;
const KIND_V8: u8 = 3;
const FLAG_LEASED: u8 = 1;
const FLAG_RELEASED: u8 = 2;
/// kind, flags, attempts, timestamp, visible at, delay, lease id count.
const HEADER: usize = 1 + 1 + 4 + 8 + 8 + 8 + 4;

/// A message's header row: the fixed fields, then its lease ids (so that a
/// lease from before a restart still acks, as late acks are accepted).
/// The body is stored apart.
pub(super) fn encode(stored: &Stored) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + stored.issued.len() * 16);
    out.push(match stored.kind {
        BodyKind::Text => KIND_TEXT,
        BodyKind::Json => KIND_JSON,
        BodyKind::Bytes => KIND_BYTES,
        BodyKind::V8 => KIND_V8,
    });
    let mut flags = 0;
    if stored.lease.is_some() {
        flags |= FLAG_LEASED;
    }
    if stored.released {
        flags |= FLAG_RELEASED;
    }
    out.push(flags);
    out.extend_from_slice(&stored.attempts.to_le_bytes());
    out.extend_from_slice(&stored.timestamp_ms.to_le_bytes());
    out.extend_from_slice(&stored.visible_at_ms.to_le_bytes());
    out.extend_from_slice(&stored.delay_ms.to_le_bytes());
    let issued = u32::try_from(stored.issued.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&issued.to_le_bytes());
    for key in stored.issued.iter().take(issued as usize) {
        out.extend_from_slice(&key.to_le_bytes());
    }
    out
}

/// Reads `N` bytes at `*at`, moving past them.
fn take<const N: usize>(row: &[u8], at: &mut usize) -> Result<[u8; N], String> {
    let end = at.checked_add(N).ok_or("row too short")?;
    let bytes = row
        .get(*at..end)
        .and_then(|b| <[u8; N]>::try_from(b).ok())
        .ok_or("row too short")?;
    *at = end;
    Ok(bytes)
}

/// A decoded message, and whether it was leased when written.
pub(super) fn decode(row: &[u8], body: &[u8]) -> Result<(Stored, bool), String> {
    let mut at = 0;
    let [kind] = take::<1>(row, &mut at)?;
    let kind = match kind {
        KIND_TEXT => BodyKind::Text,
        KIND_JSON => BodyKind::Json,
        KIND_BYTES => BodyKind::Bytes,
        KIND_V8 => BodyKind::V8,
        other => return Err(format!("unknown body kind {other}")),
    };
    let [flags] = take::<1>(row, &mut at)?;
    let attempts = u32::from_le_bytes(take(row, &mut at)?);
    let timestamp_ms = u64::from_le_bytes(take(row, &mut at)?);
    let visible_at_ms = u64::from_le_bytes(take(row, &mut at)?);
    let delay_ms = u64::from_le_bytes(take(row, &mut at)?);
    let count = u32::from_le_bytes(take(row, &mut at)?);
    let mut issued = Vec::new();
    for _ in 0..count {
        issued.push(u128::from_le_bytes(take(row, &mut at)?));
    }
    if at != row.len() {
        return Err("trailing bytes after the header".into());
    }
    let body: Arc<[u8]> = Arc::from(body);
    let stored = Stored {
        kind,
        body,
        timestamp_ms,
        attempts,
        visible_at_ms,
        lease: None,
        issued,
        generation: 0,
        released: flags & FLAG_RELEASED != 0,
        delay_ms,
    };
    Ok((stored, flags & FLAG_LEASED != 0))
}

fn encode_meta(q: &QueueState) -> Vec<u8> {
    let mut out = Vec::with_capacity(25);
    out.extend_from_slice(&q.created_ms.to_le_bytes());
    out.extend_from_slice(&q.dead_lettered.to_le_bytes());
    out.push(u8::from(q.purged_at_ms.is_some()));
    out.extend_from_slice(&q.purged_at_ms.unwrap_or(0).to_le_bytes());
    out
}

impl Broker {
    /// Makes every queue state journal its changes from now on: the
    /// emulator has a data directory.
    pub(crate) fn track_changes(&mut self) {
        self.tokens.tracking = true;
        self.accounts.track_all(|q| {
            q.meta_dirty = true;
            q.touched.extend(q.messages.keys().map(|&seq| (seq, true)));
        });
        self.registry.tracking = true;
        self.subscriptions.track_all();
        for (id, account) in &self.registry.accounts {
            let ids = account.queues.keys().chain(&account.deleted).cloned();
            self.registry
                .dirty
                .entry(id.clone())
                .or_default()
                .extend(ids);
        }
    }

    /// The changes since the last call, to be written before any answer
    /// that reveals them leaves. It looks at the queue states and records
    /// lent mutably since the last call (not only the operation's own: a
    /// queue's expiries move messages to its dead-letter queue and the
    /// other way round), never at every queue: a state or a record can
    /// only change through the accessors that note it, so none is missed,
    /// and a request costs the same with 10,000 queues as with one.
    pub(crate) fn take_journal(&mut self) -> Journal {
        let mut changes = Vec::new();
        for (account, queue) in self.orphans.drain(..) {
            changes.push(Change::Clear {
                account: account.clone(),
                queue: queue.clone(),
            });
            changes.push(Change::QueueMeta {
                account,
                queue,
                meta: None,
            });
        }
        for (account, ids) in self.accounts.take_lent() {
            for id in ids {
                let Some(q) = self.accounts.get_mut(At {
                    account: &account,
                    queue: &id,
                }) else {
                    continue;
                };
                if q.cleared {
                    q.cleared = false;
                    changes.push(Change::Clear {
                        account: account.clone(),
                        queue: id.clone(),
                    });
                }
                if !q.touched.is_empty() {
                    let mut touched = std::mem::take(&mut q.touched);
                    touched.sort_unstable();
                    // One change per message, with its body if any of its
                    // notes says the body is new.
                    let mut at = 0;
                    while let Some(&(seq, _)) = touched.get(at) {
                        let mut body = false;
                        while let Some(&(same, new)) = touched.get(at)
                            && same == seq
                        {
                            body |= new;
                            at += 1;
                        }
                        let record = q.messages.get(&seq).map(|stored| MessageRow {
                            header: encode(stored),
                            body: body.then(|| Arc::clone(&stored.body)),
                        });
                        changes.push(Change::Message {
                            account: account.clone(),
                            queue: id.clone(),
                            seq,
                            record,
                        });
                    }
                }
                if q.meta_dirty {
                    q.meta_dirty = false;
                    changes.push(Change::QueueMeta {
                        account: account.clone(),
                        queue: id.clone(),
                        meta: Some(encode_meta(q)),
                    });
                }
            }
        }
        // Taken again: the lookups above noted what they looked at.
        self.accounts.clear_lent();
        for (account_id, ids) in std::mem::take(&mut self.registry.dirty) {
            let account = self.registry.accounts.get(&account_id);
            for id in ids {
                let record = account.and_then(|a| a.queues.get(&id));
                let deleted = account.is_some_and(|a| a.deleted.contains(&id));
                let change = match record {
                    Some(record) => Change::Record {
                        account: account_id.clone(),
                        record: Some(serde_json::to_vec(record).unwrap_or_default()),
                        id,
                    },
                    None if deleted => Change::Deleted {
                        account: account_id.clone(),
                        id,
                    },
                    None => Change::Record {
                        account: account_id.clone(),
                        id,
                        record: None,
                    },
                };
                changes.push(change);
            }
        }
        for (account, ids) in std::mem::take(&mut self.subscriptions.dirty) {
            for id in ids {
                let record = self
                    .subscriptions
                    .get(&account, &id)
                    .map(|record| serde_json::to_vec(record).unwrap_or_default());
                changes.push(Change::Subscription {
                    account: account.clone(),
                    id,
                    record,
                });
            }
        }
        Journal {
            changes,
            next_seq: self.tokens.next_seq,
        }
    }

    /// Restores the message id key and the next sequence number.
    pub(crate) fn restore_tokens(&mut self, message_key: Option<u64>, next_seq: u64) {
        if let Some(key) = message_key {
            self.tokens.message_key = key;
        }
        self.tokens.next_seq = self.tokens.next_seq.max(next_seq);
    }

    /// The key message ids are derived with, to be stored once.
    pub(crate) fn message_key(&self) -> u64 {
        self.tokens.message_key
    }

    /// Restores a queue record from its JSON row.
    pub(crate) fn restore_record(&mut self, account: &str, row: &[u8]) -> Result<(), String> {
        let record: QueueRecord = serde_json::from_slice(row).map_err(|e| e.to_string())?;
        let entry = self
            .registry
            .accounts
            .entry(account.to_owned())
            .or_default();
        if record.pristine {
            self.registry.pristine = self.registry.pristine.saturating_add(1);
        }
        self.registry.next_order = self.registry.next_order.max(record.order.saturating_add(1));
        entry.insert(record);
        Ok(())
    }

    /// Restores an event subscription from its JSON row.
    pub(crate) fn restore_subscription(&mut self, account: &str, row: &[u8]) -> Result<(), String> {
        let record: SubscriptionRecord = serde_json::from_slice(row).map_err(|e| e.to_string())?;
        self.registry.next_order = self.registry.next_order.max(record.order.saturating_add(1));
        self.subscriptions.restore(account, record);
        Ok(())
    }

    /// Restores the id of a queue deleted by the API.
    pub(crate) fn restore_deleted(&mut self, account: &str, id: &str) {
        let entry = self
            .registry
            .accounts
            .entry(account.to_owned())
            .or_default();
        entry.deleted.insert(id.to_owned());
    }

    /// The queue state of `queue`, created (tracking, its figures clean)
    /// if it is not loaded yet.
    fn restored_state(
        &mut self,
        account: &str,
        queue: &str,
        now_ms: u64,
    ) -> Option<&mut QueueState> {
        let at = At { account, queue };
        let fresh = self
            .accounts
            .get(account)
            .is_none_or(|q| !q.contains_key(queue));
        let q = self.accounts.get_or_create(at, now_ms, true)?;
        if fresh {
            q.meta_dirty = false;
        }
        Some(q)
    }

    /// Restores a queue state's figures from its row.
    pub(crate) fn restore_meta(
        &mut self,
        account: &str,
        queue: &str,
        row: &[u8],
        now_ms: u64,
    ) -> Result<(), String> {
        let mut at = 0;
        let created_ms = u64::from_le_bytes(take(row, &mut at)?);
        let dead_lettered = u64::from_le_bytes(take(row, &mut at)?);
        let [purged] = take::<1>(row, &mut at)?;
        let purged_at_ms = u64::from_le_bytes(take(row, &mut at)?);
        let q = self
            .restored_state(account, queue, now_ms)
            .ok_or("no queue state")?;
        q.created_ms = created_ms;
        q.dead_lettered = dead_lettered;
        q.purged_at_ms = (purged != 0).then_some(purged_at_ms);
        Ok(())
    }

    /// Restores one message from its header and body rows. One that was leased when the
    /// emulator stopped is loaded as leased until `now_ms`, so that the
    /// next touch of its queue ends the lease as an expiry would: visible
    /// again, or dead-lettered when out of attempts.
    pub(crate) fn restore_message(
        &mut self,
        account: &str,
        queue: &str,
        seq: u64,
        (header, body): (&[u8], &[u8]),
        now_ms: u64,
    ) -> Result<(), String> {
        let (mut stored, leased) = decode(header, body)?;
        self.tokens.next_seq = self.tokens.next_seq.max(seq.saturating_add(1));
        let q = self
            .restored_state(account, queue, now_ms)
            .ok_or("no queue state")?;
        if q.messages.contains_key(&seq) {
            return Err(format!("message {seq} stored twice"));
        }
        for key in &stored.issued {
            q.leases.insert(*key, seq);
        }
        if leased {
            // Key 0 is no lease id the client holds: the lease is the
            // crash's, and ends at the first touch.
            stored.lease = Some(Lease {
                key: 0,
                expiry_ms: now_ms,
            });
            q.inflight.insert((now_ms, seq));
        } else {
            q.ready.insert((stored.visible_at_ms, seq));
        }
        q.oldest.insert((stored.timestamp_ms, seq));
        q.bytes = q.bytes.saturating_add(len_u64(stored.body.len()));
        q.messages.insert(seq, stored);
        Ok(())
    }

    /// Ends a restore: changes are journaled from now on.
    pub(crate) fn finish_restore(&mut self) {
        self.tokens.tracking = true;
        self.registry.tracking = true;
        self.registry.dirty.clear();
        self.subscriptions.tracking = true;
        self.subscriptions.dirty.clear();
        self.accounts.clear_lent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_rows_round_trip_and_short_rows_are_errors() {
        let stored = Stored {
            kind: BodyKind::Json,
            body: Arc::from(&b"{\"a\":1}"[..]),
            timestamp_ms: 7,
            attempts: 3,
            visible_at_ms: 9,
            lease: Some(Lease {
                key: 5,
                expiry_ms: 10,
            }),
            issued: vec![1, u128::MAX],
            generation: 4,
            released: true,
            delay_ms: 2,
        };
        let row = encode(&stored);
        let (back, leased) = decode(&row, &stored.body).unwrap();
        assert!(leased);
        assert_eq!(
            (back.kind, &*back.body, back.attempts, back.issued.clone()),
            (BodyKind::Json, &b"{\"a\":1}"[..], 3, vec![1, u128::MAX])
        );
        assert_eq!(
            (back.timestamp_ms, back.visible_at_ms, back.delay_ms),
            (7, 9, 2)
        );
        assert!(back.released);
        for cut in 0..HEADER + 32 {
            assert!(decode(&row[..cut], b"").is_err(), "{cut}");
        }
        assert!(decode(&[row.as_slice(), b"x"].concat(), b"").is_err());
    }
}
