//! The whole emulated service: queues created on first use, dead letters
//! moved between them, and expiries processed lazily.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::queue::{Lease, Moved, PeekRef, Queue};
use super::tokens::{KeyBuild, LEASE_TAILS, REF_TAILS, Tokens, parse_token, token_string};
use super::{
    AckReport, BrokerConfig, Delivery, LEASE_DUPLICATE, LEASE_UNKNOWN, MAX_PREALLOC, Metrics,
    NewMessage, Peeked, PurgeReport, REF_GONE, REF_UNKNOWN,
};

/// The whole emulated service: every queue plus token issuing.
#[derive(Debug)]
pub struct Broker {
    pub(super) config: BrokerConfig,
    /// Dead-letter queue -> the other queues feeding it, so a DLQ is brought
    /// up to date before it is observed.
    pub(super) feeders: HashMap<String, Vec<String>>,
    pub(super) queues: HashMap<String, Queue>,
    pub(super) tokens: Tokens,
}

impl Broker {
    /// A broker with no queues; they appear on first use.
    pub fn new(config: BrokerConfig) -> Broker {
        let mut feeders: HashMap<String, Vec<String>> = HashMap::new();
        for (source, dlq) in &config.dead_letter_queues {
            if source != dlq {
                feeders.entry(dlq.clone()).or_default().push(source.clone());
            }
        }
        for sources in feeders.values_mut() {
            // Deterministic processing order makes DLQ content reproducible.
            sources.sort_unstable();
        }
        let tokens = Tokens::new(config.seed);
        Broker {
            config,
            feeders,
            queues: HashMap::new(),
            tokens,
        }
    }

    /// The settings the broker was built with.
    #[cfg(test)]
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// Whether any operation has touched (and so created) this queue.
    #[cfg(test)]
    pub fn has_queue(&self, queue: &str) -> bool {
        self.queues.contains_key(queue)
    }

    /// Enqueues messages, creating the queue if needed; returns the metrics
    /// after the push.
    pub fn push(&mut self, queue: &str, messages: Vec<NewMessage>, now_ms: u64) -> Metrics {
        self.settle(queue, now_ms);
        let Broker { queues, tokens, .. } = self;
        let Some(q) = queues.get_mut(queue) else {
            return Metrics::default();
        };
        for message in messages {
            q.insert(
                tokens.seq(),
                Moved {
                    kind: message.kind,
                    body: Arc::from(message.body),
                    timestamp_ms: now_ms,
                    visible_at_ms: now_ms.saturating_add(message.delay_ms),
                },
            );
        }
        q.metrics()
    }

    /// Leases up to `batch_size` visible messages in delivery order (visible
    /// time, then push order), each until `now_ms + visibility_ms`; returns
    /// them with the metrics after the pull.
    pub fn pull(
        &mut self,
        queue: &str,
        batch_size: usize,
        visibility_ms: u64,
        now_ms: u64,
    ) -> (Vec<Delivery>, Metrics) {
        self.settle(queue, now_ms);
        let Broker { queues, tokens, .. } = self;
        let Some(q) = queues.get_mut(queue) else {
            return (Vec::new(), Metrics::default());
        };
        let expiry_ms = now_ms.saturating_add(visibility_ms);
        let mut out = Vec::with_capacity(batch_size.min(q.ready.len()).min(MAX_PREALLOC));
        while out.len() < batch_size {
            let Some(&(visible_at_ms, seq)) = q.ready.first() else {
                break;
            };
            if visible_at_ms > now_ms {
                break;
            }
            q.ready.pop_first();
            let Some(stored) = q.messages.get_mut(&seq) else {
                continue;
            };
            let key = tokens.lease();
            stored.attempts = stored.attempts.saturating_add(1);
            stored.lease = Some(Lease { key, expiry_ms });
            q.inflight.insert((expiry_ms, seq));
            q.leases.insert(key, seq);
            out.push(Delivery {
                id: tokens.message_id(seq),
                attempts: stored.attempts,
                kind: stored.kind,
                body: Arc::clone(&stored.body),
                lease_id: token_string(key, LEASE_TAILS),
                timestamp_ms: stored.timestamp_ms,
            });
        }
        (out, q.metrics())
    }

    /// Acks (deletes) and retries (releases after a delay) leased messages.
    /// Acks are applied first, so a lease listed in both gets a warning for
    /// the retry. Stale, unknown or repeated lease ids only produce warnings.
    pub fn ack(
        &mut self,
        queue: &str,
        acks: &[String],
        retries: &[(String, u64)],
        now_ms: u64,
    ) -> AckReport {
        self.settle(queue, now_ms);
        let mut report = AckReport::default();
        let Broker {
            config,
            queues,
            tokens,
            ..
        } = self;
        let dlq = config.dead_letter_queues.get(queue);
        let mut moved = Vec::new();
        {
            let Some(q) = queues.get_mut(queue) else {
                return report;
            };
            // Only keys of leases consumed here go in, never client input,
            // so the cheap hasher stays safe.
            let mut used: HashSet<u64, KeyBuild> = HashSet::default();
            let mut warn = |used: &HashSet<u64, KeyBuild>, lease_id: &String| {
                let reason = match parse_token(lease_id, LEASE_TAILS) {
                    Some(key) if used.contains(&key) => LEASE_DUPLICATE,
                    _ => LEASE_UNKNOWN,
                };
                report
                    .warnings
                    .entry(lease_id.clone())
                    .or_insert_with(|| reason.to_owned());
            };
            let mut acked = 0u32;
            for lease_id in acks {
                match q.live_lease(lease_id, now_ms) {
                    Some((key, seq)) => {
                        used.insert(key);
                        q.remove(seq);
                        acked = acked.saturating_add(1);
                    }
                    None => warn(&used, lease_id),
                }
            }
            let mut retried = 0u32;
            for (lease_id, delay_ms) in retries {
                let Some((key, seq)) = q.live_lease(lease_id, now_ms) else {
                    warn(&used, lease_id);
                    continue;
                };
                used.insert(key);
                retried = retried.saturating_add(1);
                let Some(stored) = q.messages.get_mut(&seq) else {
                    continue;
                };
                let Some(lease) = stored.lease.take() else {
                    continue;
                };
                q.inflight.remove(&(lease.expiry_ms, seq));
                q.leases.remove(&lease.key);
                if stored.attempts >= config.max_retries {
                    q.dead_letter(seq, now_ms, dlq.is_some(), &mut moved);
                } else {
                    let visible_at_ms = now_ms.saturating_add(*delay_ms);
                    stored.visible_at_ms = visible_at_ms;
                    q.ready.insert((visible_at_ms, seq));
                }
            }
            q.trim_refs(now_ms);
            report.ack_count = acked;
            report.retry_count = retried;
        }
        if let Some(dlq) = dlq {
            deliver_dead_letters(queues, tokens, dlq, moved);
        }
        report
    }

    /// Shows up to `batch_size` visible, unleased messages in delivery order
    /// without leasing them; each comes with a fresh ref for [`Broker::purge`].
    pub fn peek(&mut self, queue: &str, batch_size: usize, now_ms: u64) -> Vec<Peeked> {
        self.settle(queue, now_ms);
        let Broker { queues, tokens, .. } = self;
        let Some(q) = queues.get_mut(queue) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(batch_size.min(q.ready.len()).min(MAX_PREALLOC));
        for &(_, seq) in q.ready.range(..=(now_ms, u64::MAX)).take(batch_size) {
            let Some(stored) = q.messages.get(&seq) else {
                continue;
            };
            let key = tokens.peek_ref();
            q.refs.insert(
                key,
                PeekRef {
                    seq,
                    created_ms: now_ms,
                },
            );
            q.ref_order.push_back(key);
            out.push(Peeked {
                id: tokens.message_id(seq),
                attempts: stored.attempts,
                kind: stored.kind,
                body: Arc::clone(&stored.body),
                peek_ref: token_string(key, REF_TAILS),
                timestamp_ms: stored.timestamp_ms,
            });
        }
        q.trim_refs(now_ms);
        out
    }

    /// Deletes the messages behind peek refs at once, whatever their state;
    /// a lease on a purged message goes stale. Bad refs only produce warnings.
    pub fn purge(&mut self, queue: &str, refs: &[String], now_ms: u64) -> PurgeReport {
        self.settle(queue, now_ms);
        let mut report = PurgeReport::default();
        let Some(q) = self.queues.get_mut(queue) else {
            return report;
        };
        for peek_ref in refs {
            let entry = parse_token(peek_ref, REF_TAILS)
                .and_then(|key| q.refs.get(&key))
                .filter(|r| !r.expired(now_ms))
                .copied();
            let reason = match entry {
                None => REF_UNKNOWN,
                Some(r) if q.remove(r.seq).is_some() => {
                    report.purged = report.purged.saturating_add(1);
                    continue;
                }
                Some(_) => REF_GONE,
            };
            report
                .warnings
                .entry(peek_ref.clone())
                .or_insert_with(|| reason.to_owned());
        }
        q.trim_refs(now_ms);
        report
    }

    /// Exact backlog figures of the queue at `now_ms`.
    pub fn metrics(&mut self, queue: &str, now_ms: u64) -> Metrics {
        self.settle(queue, now_ms);
        self.queues
            .get(queue)
            .map_or_else(Metrics::default, Queue::metrics)
    }

    /// How many messages this queue has dropped or moved to its dead-letter
    /// queue so far. Expiries are processed lazily, so touch the queue first.
    pub fn dead_lettered(&self, queue: &str) -> u64 {
        self.queues.get(queue).map_or(0, |q| q.dead_lettered)
    }

    /// Brings the queue up to `now_ms`: first the queues that dead-letter into
    /// it (their expiries add messages here), then the queue itself. Messages
    /// moved into a DLQ are unleased, so one level of feeders is enough.
    fn settle(&mut self, queue: &str, now_ms: u64) {
        let Broker {
            config,
            feeders,
            queues,
            tokens,
        } = self;
        if let Some(sources) = feeders.get(queue) {
            for source in sources {
                expire_queue(config, queues, tokens, source, now_ms);
            }
        }
        if !queues.contains_key(queue) {
            queues.insert(queue.to_owned(), Queue::default());
        }
        expire_queue(config, queues, tokens, queue, now_ms);
    }
}

pub(super) fn expire_queue(
    config: &BrokerConfig,
    queues: &mut HashMap<String, Queue>,
    tokens: &mut Tokens,
    name: &str,
    now_ms: u64,
) {
    let dlq = config.dead_letter_queues.get(name);
    let mut moved = Vec::new();
    let Some(q) = queues.get_mut(name) else {
        return;
    };
    q.expire(now_ms, config.max_retries, dlq.is_some(), &mut moved);
    q.trim_refs(now_ms);
    if let Some(dlq) = dlq {
        deliver_dead_letters(queues, tokens, dlq, moved);
    }
}

/// Enqueues dead-lettered messages as new messages (fresh id, attempts 0,
/// original timestamp), creating the dead-letter queue if needed.
pub(super) fn deliver_dead_letters(
    queues: &mut HashMap<String, Queue>,
    tokens: &mut Tokens,
    dlq: &str,
    moved: Vec<Moved>,
) {
    if moved.is_empty() {
        return;
    }
    if !queues.contains_key(dlq) {
        queues.insert(dlq.to_owned(), Queue::default());
    }
    let Some(target) = queues.get_mut(dlq) else {
        return;
    };
    for message in moved {
        target.insert(tokens.seq(), message);
    }
}
