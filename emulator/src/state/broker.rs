//! The whole emulated service: accounts and their queues, dead letters moved
//! between queues, expiries processed lazily, queues and peek refs reclaimed
//! once no one can read them any more, and the lease operations (pull, ack
//! and retry, extend) with peek and purge by ref.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::{
    AckReport, At, BrokerConfig, Delivery, EXTEND_DUPLICATE, ExtendReport, LEASE_DUPLICATE,
    LEASE_UNKNOWN, MAX_PREALLOC, MESSAGE_ALREADY_RETRIED, NewMessage, Peeked, PurgeReport,
    QueueStats, REF_GONE, REF_UNKNOWN,
};
use crate::state::event_subscriptions::records::Subscriptions;
use crate::state::management::resources::{Policy, Registry};
use crate::state::messages::queue::{DeadLetterMove, Lease, QueueState, Stored};
use crate::state::messages::tokens::{KeyBuild, RandomSource, Tokens, parse_token, token_string};

use crate::state::messages::refs::Names;
use crate::state::queue_states::States;

/// The whole emulated service: every account's queues plus token issuing.
#[derive(Debug)]
pub(crate) struct Broker {
    pub(super) config: BrokerConfig,
    /// Dead-letter queue -> the other queues feeding it, so a DLQ is brought
    /// up to date before it is observed.
    pub(super) feeders: HashMap<String, Vec<String>>,
    pub(super) accounts: States,
    /// Every account's queues as resources: names, settings, consumers.
    pub(super) registry: Registry,
    /// Every account's event subscriptions.
    pub(super) subscriptions: Subscriptions,
    pub(super) tokens: Tokens,
    /// (due ms, account, queue) for each queue whose peek refs will need
    /// trimming: one entry per queue holding refs, so refs expire even in a
    /// queue that no one touches again.
    pub(super) sweeps: BTreeSet<(u64, String, String)>,
    /// Queue states dropped since the journal last looked (account, id):
    /// their stored messages and figures are to be deleted.
    pub(super) orphans: Vec<(String, String)>,
    /// What happens to the queues the dashboard watches.
    pub(super) activity: super::watched::Activity,
    /// The dashboard's index of one account's queue names.
    pub(super) names: Option<super::watched::NameIndex>,
}

impl Broker {
    /// A broker with no queues; they appear on first push. Lease ids and
    /// peek refs are drawn from `random`.
    pub(crate) fn new(config: BrokerConfig, random: RandomSource) -> Broker {
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
        Broker {
            registry: Registry::new(config.springs.clone()),
            subscriptions: Subscriptions::default(),
            config,
            feeders,
            accounts: States::default(),
            tokens: Tokens::new(random),
            sweeps: BTreeSet::new(),
            orphans: Vec::new(),
            activity: super::watched::Activity::default(),
            names: None,
        }
    }

    /// The settings the broker was built with.
    #[cfg(test)]
    pub(crate) fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// Whether this queue currently holds state.
    #[cfg(test)]
    pub(crate) fn has_queue<'a>(&self, at: impl Into<At<'a>>) -> bool {
        let at = at.into();
        self.accounts
            .get(at.account)
            .is_some_and(|queues| queues.contains_key(at.queue))
    }

    /// Enqueues messages, creating the queue if needed; returns the metrics
    /// after the push.
    pub(crate) fn push<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        messages: Vec<NewMessage>,
        now_ms: u64,
    ) -> QueueStats {
        let at = at.into();
        self.prepare(at, now_ms);
        let Broker {
            accounts, tokens, ..
        } = self;
        let Some(q) = queue_or_create(accounts, at, now_ms, tokens.tracking) else {
            return QueueStats::default();
        };
        let pushed = messages.len() as u64;
        self.activity.note(at, |c| c.pushed += pushed);
        for message in messages {
            q.insert(
                tokens.seq(),
                DeadLetterMove {
                    kind: message.kind,
                    body: Arc::from(message.body),
                    timestamp_ms: now_ms,
                    visible_at_ms: now_ms.saturating_add(message.delay_ms),
                    delay_ms: message.delay_ms,
                },
            );
        }
        let metrics = q.metrics();
        self.finish(at);
        metrics
    }

    /// How many messages [`Broker::pull`] with `batch_size` would lease at
    /// `now_ms`, leasing none: the per-queue rate limit refuses a pull
    /// whole, before it changes anything.
    pub(crate) fn pullable<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        batch_size: usize,
        now_ms: u64,
    ) -> usize {
        let at = at.into();
        self.prepare(at, now_ms);
        queue_mut(&mut self.accounts, at).map_or(0, |q| {
            q.ready
                .iter()
                .take_while(|(visible_at_ms, _)| *visible_at_ms <= now_ms)
                .take(batch_size)
                .count()
        })
    }

    /// Leases up to `batch_size` visible messages in delivery order (visible
    /// time, then push order), each until `now_ms + visibility_ms`; returns
    /// them with the metrics after the pull.
    pub(crate) fn pull<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        batch_size: usize,
        visibility_ms: u64,
        now_ms: u64,
    ) -> (Vec<Delivery>, QueueStats) {
        let at = at.into();
        self.prepare(at, now_ms);
        let Broker {
            accounts, tokens, ..
        } = self;
        let Some(q) = queue_mut(accounts, at) else {
            return (Vec::new(), QueueStats::default());
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
            let key = tokens.fresh(&q.leases);
            let Some(stored) = q.messages.get_mut(&seq) else {
                continue;
            };
            stored.attempts = stored.attempts.saturating_add(1);
            stored.lease = Some(Lease { key, expiry_ms });
            stored.issued.push(key);
            stored.generation = stored.generation.wrapping_add(1);
            stored.released = false;
            // The attempt is written before the answer leaves, so that a
            // crash never gives it back (max_retries holds).
            if q.tracking {
                q.touched.push((seq, false));
            }
            q.inflight.insert((expiry_ms, seq));
            q.leases.insert(key, seq);
            out.push(delivery(tokens, seq, stored, key));
        }
        let pulled = out.len() as u64;
        self.activity.note(at, |c| c.pulled += pulled);
        (out, q.metrics())
    }

    /// Acks (deletes) and retries (makes visible again after a delay)
    /// messages by lease id. Acks are applied first, so a lease listed in
    /// both gets a warning for the retry. Unknown or repeated lease ids, and
    /// retries that cannot apply, only produce warnings; the counts say what
    /// this call changed.
    ///
    /// Late acks are accepted: an expired lease stays usable while its
    /// message exists. Cloudflare's pull-consumer page
    /// (developers.cloudflare.com/queues/configuration/pull-consumers/):
    /// "if a consumer acknowledges a message by its lease ID after the
    /// visibility timeout is reached, Queues will still accept that
    /// acknowledgment. If the message was delivered to another consumer
    /// during the intervening period, it will also be able to acknowledge
    /// the message without an error." So a late ack deletes the message
    /// even while another consumer holds it, and that consumer's ack then
    /// finds nothing: a warning, not an error. A late retry applies only
    /// while no one else holds the message ([`QueueState::retry`]).
    pub(crate) fn ack<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        acks: &[String],
        retries: &[(String, u64)],
        now_ms: u64,
    ) -> AckReport {
        let at = at.into();
        self.prepare(at, now_ms);
        let Policy {
            max_retries,
            dead_letter,
            ..
        } = self.policy(at);
        let policy = (max_retries, dead_letter.is_some());
        let mut moved = Vec::new();
        let mut warnings = std::collections::BTreeMap::new();
        let mut warn = |lease_id: &String, reason: &str| {
            warnings
                .entry(lease_id.clone())
                .or_insert_with(|| reason.to_owned());
        };
        let mut absent = QueueState::default();
        let q = queue_mut(&mut self.accounts, at).unwrap_or(&mut absent);
        // Only keys of leases this call used go in, never client input, so
        // the cheap hasher stays safe.
        let mut used: HashSet<u128, KeyBuild> = HashSet::default();
        let mut acked = 0u32;
        for lease_id in acks {
            match resolve(q, &used, lease_id) {
                Ok((key, seq)) => {
                    used.insert(key);
                    q.remove(seq);
                    acked = acked.saturating_add(1);
                }
                Err(reason) => warn(lease_id, reason),
            }
        }
        let mut retried = 0u32;
        // Messages retried by this call: a second lease id of the same
        // message (a stale one next to the live one) must not retry it again
        // and count twice.
        let mut retried_seqs: HashSet<u64, KeyBuild> = HashSet::default();
        for (lease_id, delay_ms) in retries {
            let outcome = resolve(q, &used, lease_id)
                .and_then(|(key, seq)| {
                    if retried_seqs.contains(&seq) {
                        Err(MESSAGE_ALREADY_RETRIED)
                    } else {
                        Ok((key, seq))
                    }
                })
                .and_then(|(key, seq)| {
                    q.retry(key, seq, *delay_ms, now_ms, policy, &mut moved)
                        .map(|()| (key, seq))
                });
            match outcome {
                Ok((key, seq)) => {
                    used.insert(key);
                    retried_seqs.insert(seq);
                    retried = retried.saturating_add(1);
                }
                Err(reason) => warn(lease_id, reason),
            }
        }
        q.trim_refs(now_ms);
        self.activity.note(at, |c| {
            c.acked += u64::from(acked);
            c.retried += u64::from(retried);
        });
        if let Some(dlq) = &dead_letter {
            self.deliver_dead_letters(at.account, dlq, moved, now_ms);
        }
        self.finish(at);
        AckReport {
            ack_count: acked,
            retry_count: retried,
            warnings,
        }
    }

    /// Extends leases until `now_ms + visibility_ms`, without touching
    /// `attempts`; returns how many were extended, with a warning for each
    /// lease that was not.
    ///
    /// Cloudflare documents extend as "creates a new lease ID on your message
    /// without incrementing the message's `attempts` counter", but its
    /// answer carries no lease id, so the lease id the caller holds stays
    /// the one to use (the crate's `QueueState::extend` docs). The rules:
    ///
    /// - the new expiry counts from now, not from the old expiry, as SQS's
    ///   ChangeMessageVisibility does;
    /// - a lease whose message was delivered again (to anyone), or deleted,
    ///   is not extended: a warning;
    /// - a lease that expired while its message was not delivered again
    ///   takes the message back (it leaves the visible set, leased to the
    ///   same lease id), as late acks are accepted ([`Broker::ack`]); unless
    ///   a retry gave the message back since, or it ran out of attempts at
    ///   its expiry and was dropped or dead-lettered.
    ///
    /// Cloudflare documents no limit on leases per call; none is imposed.
    pub(crate) fn extend<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        leases: &[String],
        visibility_ms: u64,
        now_ms: u64,
    ) -> ExtendReport {
        self.change_queue(at.into(), now_ms, |q| {
            let mut report = ExtendReport::default();
            let expiry_ms = now_ms.saturating_add(visibility_ms);
            // Only keys of leases this call extended go in, never client input.
            let mut used: HashSet<u128, KeyBuild> = HashSet::default();
            for lease_id in leases {
                let outcome = resolve(q, &used, lease_id)
                    .map_err(|reason| match reason {
                        LEASE_DUPLICATE => EXTEND_DUPLICATE,
                        other => other,
                    })
                    .and_then(|(key, seq)| q.extend(key, seq, expiry_ms).map(|()| key));
                match outcome {
                    Ok(key) => {
                        used.insert(key);
                        report.extended = report.extended.saturating_add(1);
                    }
                    Err(reason) => {
                        report
                            .warnings
                            .entry(lease_id.clone())
                            .or_insert_with(|| reason.to_owned());
                    }
                }
            }
            report
        })
    }

    /// Shows up to `batch_size` visible, unleased messages in delivery order
    /// without leasing them; each comes with a fresh ref for [`Broker::purge`].
    pub(crate) fn peek<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        batch_size: usize,
        now_ms: u64,
    ) -> Vec<Peeked> {
        let shown = self.show(at.into(), batch_size, now_ms, Names::PeekRefs);
        shown
            .into_iter()
            .map(|d| Peeked {
                id: d.id,
                attempts: d.attempts,
                kind: d.kind,
                body: d.body,
                peek_ref: d.lease_id,
                timestamp_ms: d.timestamp_ms,
                delay_ms: d.delay_ms,
            })
            .collect()
    }

    /// Deletes the messages behind peek refs at once, whatever their state;
    /// the leases of a purged message become unknown. Bad refs only produce
    /// warnings.
    pub(crate) fn purge<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        refs: &[String],
        now_ms: u64,
    ) -> PurgeReport {
        self.change_queue(at.into(), now_ms, |q| {
            let mut report = PurgeReport::default();
            for peek_ref in refs {
                let entry = parse_token(peek_ref).and_then(|key| q.refs.get(key, now_ms));
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
        })
    }

    /// Exact backlog figures of the queue at `now_ms`.
    pub(crate) fn metrics<'a>(&mut self, at: impl Into<At<'a>>, now_ms: u64) -> QueueStats {
        let at = at.into();
        self.prepare(at, now_ms);
        let metrics =
            queue_mut(&mut self.accounts, at).map_or_else(QueueStats::default, |q| q.metrics());
        self.finish(at);
        metrics
    }

    /// How many messages this queue has dropped or moved to its dead-letter
    /// queue so far. Expiries are processed lazily, so touch the queue first.
    pub(crate) fn dead_lettered<'a>(&self, at: impl Into<At<'a>>) -> u64 {
        let at = at.into();
        self.accounts
            .get(at.account)
            .and_then(|queues| queues.get(at.queue))
            .map_or(0, |q| q.dead_lettered)
    }

    /// What every operation does first: trim refs that expired anywhere,
    /// then bring the queue up to `now_ms`.
    pub(super) fn prepare(&mut self, at: At<'_>, now_ms: u64) {
        self.sweep(now_ms);
        self.settle(at, now_ms);
    }

    /// What every operation does last: drop the queue, and the queues that
    /// feed it, if they hold nothing readable any more.
    /// Brings the queue at `at` up to `now_ms`, runs `change` on it (on an
    /// empty stand-in when it has no state, where every id is unknown),
    /// then reclaims what the change left empty: the frame of every
    /// operation on leases, refs and preview ids.
    pub(super) fn change_queue<R>(
        &mut self,
        at: At<'_>,
        now_ms: u64,
        change: impl FnOnce(&mut QueueState) -> R,
    ) -> R {
        self.prepare(at, now_ms);
        let mut absent = QueueState::default();
        let out = change(queue_mut(&mut self.accounts, at).unwrap_or(&mut absent));
        self.finish(at);
        out
    }

    pub(super) fn finish(&mut self, at: At<'_>) {
        self.reclaim(at);
        for source in &self.feeders_of(at) {
            self.reclaim(At {
                account: at.account,
                queue: source,
            });
        }
    }

    /// Brings the queue up to `now_ms`: first the queues that dead-letter into
    /// it (their expiries add messages here), then the queue itself. Messages
    /// moved into a DLQ are unleased, so one level of feeders is enough.
    fn settle(&mut self, at: At<'_>, now_ms: u64) {
        if !self.accounts.contains_key(at.account) {
            return;
        }
        for source in self.feeders_of(at) {
            self.expire(
                At {
                    account: at.account,
                    queue: &source,
                },
                now_ms,
            );
        }
        self.expire(at, now_ms);
    }

    /// The queues whose consumers dead-letter into this one (by its name),
    /// itself left out: the lax defaults' and those of the queues' consumers.
    pub(super) fn feeders_of(&self, at: At<'_>) -> Vec<String> {
        let account = self.registry.accounts.get(at.account);
        let name = account.map_or(at.queue, |a| a.name_of(at.queue));
        let configured = self.feeders.get(name).into_iter().flatten();
        let dynamic = account
            .and_then(|a| a.dlq_sources.get(name))
            .into_iter()
            .flatten();
        let mut sources: Vec<String> = configured
            .chain(dynamic)
            .filter(|source| source.as_str() != at.queue)
            .cloned()
            .collect();
        sources.sort_unstable();
        sources.dedup();
        sources
    }

    /// The delivery policy of a queue, from its consumer or the defaults.
    pub(super) fn policy(&self, at: At<'_>) -> Policy {
        self.registry.policy(
            at.account,
            at.queue,
            self.config.max_retries,
            &self.config.dead_letter_queues,
        )
    }

    /// Ends the leases of a queue that ran out by `now_ms`, and drops the
    /// messages older than its retention period, dead-lettering what ran
    /// out of attempts by its policy.
    fn expire(&mut self, at: At<'_>, now_ms: u64) {
        let policy = self.policy(at);
        let moved = match self.accounts.get_mut(at) {
            Some(q) => expire_queue(&policy, q, now_ms),
            None => return,
        };
        if let Some(dlq) = &policy.dead_letter {
            self.deliver_dead_letters(at.account, dlq, moved, now_ms);
        }
    }

    /// Enqueues dead-lettered messages in the queue NAMED `dlq` as new
    /// messages (fresh id, attempts 0, original timestamp). While no queue
    /// has that name (the dead-letter queue was deleted or renamed since
    /// its consumer named it), one is created by it, as naming it did
    /// ([`Broker::ensure_dead_letter_queue`]): messages always land in a
    /// queue a client can list and read, never in storage no id reaches.
    pub(super) fn deliver_dead_letters(
        &mut self,
        account: &str,
        dlq: &str,
        moved: Vec<DeadLetterMove>,
        now_ms: u64,
    ) {
        if moved.is_empty() {
            return;
        }
        if self.registry.id_of(account, dlq).is_none() {
            self.ensure_dead_letter_queue(account, dlq, now_ms);
        }
        // `ensure_dead_letter_queue` always leaves a queue of that name.
        let Some(id) = self.registry.id_of(account, dlq).map(str::to_owned) else {
            return;
        };
        let at = At {
            account,
            queue: &id,
        };
        let Some(target) = self
            .accounts
            .get_or_create(at, now_ms, self.tokens.tracking)
        else {
            return;
        };
        for message in moved {
            target.insert(self.tokens.seq(), message);
        }
    }

    /// Trims the refs of every queue whose oldest ref has expired by `now_ms`.
    fn sweep(&mut self, now_ms: u64) {
        // Taken out first: a ref due at `u64::MAX` is rescheduled at the same
        // time, and must wait for the next operation rather than loop here.
        let mut due = Vec::new();
        while self.sweeps.first().is_some_and(|(at, ..)| *at <= now_ms) {
            due.extend(self.sweeps.pop_first());
        }
        for (due_ms, account, queue) in due {
            let at = At {
                account: &account,
                queue: &queue,
            };
            if let Some(q) = queue_mut(&mut self.accounts, at)
                && q.sweep_due_ms == Some(due_ms)
            {
                q.sweep_due_ms = None;
                q.trim_refs(now_ms);
                schedule_sweep(&mut self.sweeps, q, at);
            }
            self.reclaim(at);
        }
    }

    fn reclaim(&mut self, at: At<'_>) {
        let reclaimable = (self.accounts.get(at.account))
            .and_then(|queues| queues.get(at.queue))
            .is_some_and(QueueState::is_reclaimable);
        if !reclaimable {
            return;
        }
        self.drop_queue(at);
    }

    /// Drops a queue's state and its pending sweep; when changes are
    /// journaled, the journal is told to delete what it stored of it.
    pub(super) fn drop_queue(&mut self, at: At<'_>) {
        let dropped = self.accounts.remove(at);
        if dropped.as_ref().is_some_and(|q| q.tracking) {
            self.orphans
                .push((at.account.to_owned(), at.queue.to_owned()));
        }
        if let Some(due) = dropped.and_then(|q| q.sweep_due_ms) {
            self.sweeps
                .remove(&(due, at.account.to_owned(), at.queue.to_owned()));
        }
    }
}

/// Message `seq` as shown under `name`: its lease id, or the preview id or
/// peek ref of a message shown without a lease.
pub(super) fn delivery(tokens: &Tokens, seq: u64, stored: &Stored, name: u128) -> Delivery {
    Delivery {
        id: tokens.message_id(seq),
        attempts: stored.attempts,
        kind: stored.kind,
        body: Arc::clone(&stored.body),
        lease_id: token_string(name),
        timestamp_ms: stored.timestamp_ms,
        delay_ms: stored.delay_ms,
    }
}

/// Resolves a lease id, live or stale, to its key and message.
fn resolve(
    q: &QueueState,
    used: &HashSet<u128, KeyBuild>,
    lease_id: &str,
) -> Result<(u128, u64), &'static str> {
    let key = parse_token(lease_id).ok_or(LEASE_UNKNOWN)?;
    if used.contains(&key) {
        return Err(LEASE_DUPLICATE);
    }
    q.leases
        .get(&key)
        .map(|&seq| (key, seq))
        .ok_or(LEASE_UNKNOWN)
}

pub(super) fn queue_mut<'q>(accounts: &'q mut States, at: At<'_>) -> Option<&'q mut QueueState> {
    accounts.get_mut(at)
}

pub(super) fn queue_or_create<'q>(
    accounts: &'q mut States,
    at: At<'_>,
    now_ms: u64,
    tracking: bool,
) -> Option<&'q mut QueueState> {
    accounts.get_or_create(at, now_ms, tracking)
}

/// Puts the queue on the sweep list for its oldest ref or preview id,
/// unless it is on it.
pub(super) fn schedule_sweep(
    sweeps: &mut BTreeSet<(u64, String, String)>,
    q: &mut QueueState,
    at: At<'_>,
) {
    if q.sweep_due_ms.is_some() {
        return;
    }
    if let Some(due) = q.next_ref_expiry() {
        q.sweep_due_ms = Some(due);
        sweeps.insert((due, at.account.to_owned(), at.queue.to_owned()));
    }
}

/// Drops a queue's messages past its retention and ends its expired
/// leases; returns the messages its policy sends to its dead-letter queue,
/// for [`Broker::deliver_dead_letters`].
pub(super) fn expire_queue(
    policy: &Policy,
    q: &mut QueueState,
    now_ms: u64,
) -> Vec<DeadLetterMove> {
    let mut moved = Vec::new();
    // A retention period that reaches back before the epoch drops nothing.
    if let Some(cutoff_ms) = now_ms.checked_sub(policy.retention_ms) {
        q.drop_older_than(cutoff_ms);
    }
    q.expire(
        now_ms,
        policy.max_retries,
        policy.dead_letter.is_some(),
        &mut moved,
    );
    q.trim_refs(now_ms);
    moved
}
