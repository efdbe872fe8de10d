//! The management operations on the broker: queues and consumers created,
//! read, changed and deleted; queues springing into being on a messages
//! request; queues declared before serving.
//!
//! A deleted queue takes its messages with it, and its id never springs
//! back into being. A queue has at most one consumer, a Worker or an HTTP
//! pull consumer (Cloudflare's "how queues work" page: "each queue can only
//! have one active consumer").

use crate::state::management::resources::{
    AccountError, ConsumerKind, ConsumerRecord, ConsumerSpec, PullSettings, QueueRecord,
    QueueSettings, check_name_in, check_queue_name,
};
use crate::state::{At, Broker, NewSubscription, Page};

/// The settings an update of a queue writes; `None` keeps (PATCH) or
/// resets (PUT) a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SettingsChange {
    pub delivery_delay_s: Option<u32>,
    pub delivery_paused: Option<bool>,
    pub retention_s: Option<u32>,
}

impl SettingsChange {
    fn apply(self, to: &mut QueueSettings) {
        if let Some(delay) = self.delivery_delay_s {
            to.delivery_delay_s = delay;
        }
        if let Some(paused) = self.delivery_paused {
            to.delivery_paused = paused;
        }
        if let Some(retention) = self.retention_s {
            to.retention_s = retention;
        }
    }
}

/// A queue declared before serving (a configuration file, the builder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declared {
    /// Its id; a fresh one when `None`.
    pub id: Option<String>,
    pub name: String,
    pub settings: QueueSettings,
    pub consumer: Option<ConsumerSpec>,
    /// The event subscriptions into it (their `queue_id` is set when it is declared).
    pub subscriptions: Vec<NewSubscription>,
}

impl Broker {
    /// The queue a messages request names: known, or brought into being
    /// now if it may spring into being ([`Springs`](crate::state::Springs)).
    pub(crate) fn open_for_messages<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        now_ms: u64,
    ) -> Result<(), AccountError> {
        let at = at.into();
        if self.registry.record(at.account, at.queue).is_some() {
            return Ok(());
        }
        if !self.registry.may_spring(at.account, at.queue) {
            return Err(AccountError::QueueNotFound);
        }
        self.spring(at, now_ms);
        self.forget_idle_pristine(at);
        Ok(())
    }

    /// What the queue's consumer and settings decide for a messages
    /// request: the HTTP pull consumer's settings (`None`: HTTP pull is
    /// not enabled) and the queue's settings. A queue without a record (in
    /// the broker's own tests) has the lax defaults.
    pub(crate) fn access<'a>(
        &self,
        at: impl Into<At<'a>>,
    ) -> (Option<PullSettings>, QueueSettings) {
        let at = at.into();
        match self.registry.record(at.account, at.queue) {
            Some(record) => (record.http_pull(), record.settings),
            None => (Some(self.lax_pull_settings()), QueueSettings::default()),
        }
    }

    /// The id of the queue of this name.
    pub(crate) fn queue_id(&self, account: &str, name: &str) -> Option<String> {
        self.registry.id_of(account, name).map(str::to_owned)
    }

    fn lax_pull_settings(&self) -> PullSettings {
        PullSettings {
            max_retries: self.config.max_retries,
            ..PullSettings::default()
        }
    }

    /// Brings a queue of id `at.queue` into being: named after its id, with
    /// one HTTP pull consumer of the lax defaults, and its dead-letter
    /// queue if it names one.
    fn spring(&mut self, at: At<'_>, now_ms: u64) {
        let dead_letter_queue = self.config.dead_letter_queues.get(at.queue).cloned();
        let consumer = ConsumerRecord {
            id: self.tokens.resource_id(),
            created_ms: now_ms,
            spec: ConsumerSpec::http_pull(self.lax_pull_settings(), dead_letter_queue.clone()),
        };
        let order = self.registry.next_order();
        let record = QueueRecord {
            id: at.queue.to_owned(),
            name: at.queue.to_owned(),
            created_ms: now_ms,
            modified_ms: now_ms,
            settings: QueueSettings::default(),
            consumer: Some(consumer),
            pristine: true,
            order,
        };
        self.registry.pristine += 1;
        self.registry.insert(at.account, record);
        if let Some(dlq) = dead_letter_queue {
            self.ensure_dead_letter_queue(at.account, &dlq, now_ms);
        }
    }

    /// Creates the dead-letter queue of this name if there is none:
    /// Cloudflare's consumer configuration page, "If there is no Queue with
    /// the specified name, it will be created automatically". A name that
    /// may spring into being as an id does so (a lax queue, pullable);
    /// another gets a fresh id and no consumer, as on Cloudflare.
    pub(crate) fn ensure_dead_letter_queue(&mut self, account: &str, name: &str, now_ms: u64) {
        if self.registry.id_of(account, name).is_some() {
            return;
        }
        let as_id = At {
            account,
            queue: name,
        };
        let valid_id = !name.is_empty()
            && name.len() <= cf_queues::limits::MAX_ID_LEN
            && name.bytes().all(|b| b.is_ascii_alphanumeric());
        if valid_id && self.registry.may_spring(account, name) {
            self.spring(as_id, now_ms);
            return;
        }
        let id = self.tokens.resource_id();
        let order = self.registry.next_order();
        self.registry.insert(
            account,
            QueueRecord {
                id,
                name: name.to_owned(),
                created_ms: now_ms,
                modified_ms: now_ms,
                settings: QueueSettings::default(),
                consumer: None,
                pristine: false,
                order,
            },
        );
    }

    /// Past [`MAX_PRISTINE_LAX`](crate::state::management::resources::MAX_PRISTINE_LAX) queues
    /// that sprang into being and were never changed, forgets those that
    /// hold no message state (all but `keep`): they spring back, anew, when
    /// named again. The bound then doubles past what is left, so that the
    /// scan costs O(1) per queue sprung, amortized.
    fn forget_idle_pristine(&mut self, keep: At<'_>) {
        if self.registry.pristine <= self.registry.sweep_above {
            return;
        }
        let mut idle = Vec::new();
        for (account, queues) in &self.registry.accounts {
            for (id, record) in &queues.queues {
                let holds = self
                    .accounts
                    .get(account)
                    .is_some_and(|state| state.contains_key(id));
                let kept = account == keep.account && id == keep.queue;
                if record.pristine && !holds && !kept {
                    idle.push((account.clone(), id.clone()));
                }
            }
        }
        for (account, id) in idle {
            if self.registry.remove(&account, &id).is_some() {
                self.registry.pristine = self.registry.pristine.saturating_sub(1);
            }
            // An account left holding nothing, never changed (no queue of
            // its own, none deleted), is forgotten with its queues:
            // requests to ever new account ids must not grow the registry.
            if (self.registry.accounts.get(&account)).is_some_and(|a| a.is_empty()) {
                self.registry.accounts.remove(&account);
            }
        }
        self.registry.sweep_above = self
            .registry
            .pristine
            .saturating_mul(2)
            .max(crate::state::management::resources::MAX_PRISTINE_LAX);
    }

    /// Marks a queue as changed by a management call: no longer forgotten
    /// when idle.
    fn touch(&mut self, at: At<'_>, now_ms: u64) {
        self.keep(at);
        if let Some(record) = self.registry.record_mut(at.account, at.queue) {
            record.modified_ms = now_ms;
        }
    }

    /// Keeps a queue that sprang into being when it is idle (an event
    /// subscription names it), without changing it.
    pub(crate) fn keep(&mut self, at: At<'_>) {
        let pristine = self
            .registry
            .record(at.account, at.queue)
            .is_some_and(|record| record.pristine);
        if !pristine {
            return;
        }
        if let Some(record) = self.registry.record_mut(at.account, at.queue) {
            record.pristine = false;
            self.registry.pristine = self.registry.pristine.saturating_sub(1);
        }
    }

    /// One page of the account's queues in creation order, only those
    /// named `name` when it is given (an exact match); `total_count` counts
    /// the account's queues, whatever the filter (as Cloudflare's
    /// description has it: "without any search parameters").
    pub(crate) fn list_queues(
        &self,
        account: &str,
        name: Option<&str>,
        page: usize,
        per_page: usize,
    ) -> Page<QueueRecord> {
        let per_page = per_page.max(1);
        let queues = self.registry.accounts.get(account);
        let total_count = queues.map_or(0, |a| a.queues.len());
        let skip = page.saturating_sub(1).saturating_mul(per_page);
        let listed: Vec<QueueRecord> = match (queues, name) {
            (None, _) => Vec::new(),
            (Some(a), Some(name)) => a
                .names
                .get(name)
                .and_then(|id| a.queues.get(id))
                .into_iter()
                .skip(skip)
                .cloned()
                .collect(),
            (Some(a), None) => a
                .order
                .values()
                .skip(skip)
                .take(per_page)
                .filter_map(|id| a.queues.get(id))
                .cloned()
                .collect(),
        };
        Page {
            items: listed,
            page,
            per_page,
            total_count,
            total_pages: total_count.div_ceil(per_page),
        }
    }

    /// Creates a queue of this name with a fresh id, no consumer, and
    /// the default settings changed by `settings` (the settings a create
    /// gives, checked as an update's: the live API applies them, and
    /// wrangler's `queues create --delivery-delay-secs` sends them).
    pub(crate) fn create_queue(
        &mut self,
        account: &str,
        name: &str,
        settings: SettingsChange,
        now_ms: u64,
    ) -> Result<QueueRecord, AccountError> {
        check_queue_name(name)?;
        if self.registry.id_of(account, name).is_some() {
            return Err(AccountError::NameTaken(name.to_owned()));
        }
        let mut created = QueueSettings::default();
        settings.apply(&mut created);
        let record = QueueRecord {
            id: self.tokens.resource_id(),
            name: name.to_owned(),
            created_ms: now_ms,
            modified_ms: now_ms,
            settings: created,
            consumer: None,
            pristine: false,
            order: self.registry.next_order(),
        };
        self.registry.insert(account, record.clone());
        Ok(record)
    }

    /// A queue, with its settings and consumer.
    pub(crate) fn get_queue<'a>(&self, at: impl Into<At<'a>>) -> Result<QueueRecord, AccountError> {
        let at = at.into();
        self.registry
            .record(at.account, at.queue)
            .cloned()
            .ok_or(AccountError::QueueNotFound)
    }

    /// Renames a queue and changes its settings: those given (`PATCH`), or
    /// all of them, the ones left out back to their defaults (`replace`,
    /// `PUT`).
    pub(crate) fn update_queue<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        name: Option<&str>,
        change: SettingsChange,
        replace: bool,
        now_ms: u64,
    ) -> Result<QueueRecord, AccountError> {
        let at = at.into();
        let current = self.get_queue(at)?;
        if let Some(name) = name.filter(|name| *name != current.name) {
            check_queue_name(name)?;
            if self.registry.id_of(at.account, name).is_some() {
                return Err(AccountError::NameTaken(name.to_owned()));
            }
            if let Some(account) = self.registry.accounts.get_mut(at.account) {
                account.names_changed = account.names_changed.wrapping_add(1);
                account.names.remove(&current.name);
                account.names.insert(name.to_owned(), at.queue.to_owned());
            }
        }
        self.touch(at, now_ms);
        let record = self
            .registry
            .record_mut(at.account, at.queue)
            .ok_or(AccountError::QueueNotFound)?;
        if let Some(name) = name {
            record.name = name.to_owned();
        }
        if replace {
            record.settings = QueueSettings::default();
        }
        change.apply(&mut record.settings);
        Ok(record.clone())
    }

    /// Deletes a queue with every message it holds and the event
    /// subscriptions into it; its id never springs back into being.
    pub(crate) fn delete_queue<'a>(&mut self, at: impl Into<At<'a>>) -> Result<(), AccountError> {
        let at = at.into();
        let record = self
            .registry
            .remove(at.account, at.queue)
            .ok_or(AccountError::QueueNotFound)?;
        self.delete_subscriptions_into(at.account, at.queue);
        if let Some(account) = self.registry.accounts.get_mut(at.account) {
            account.deleted.insert(record.id.clone());
        }
        if record.pristine {
            self.registry.pristine = self.registry.pristine.saturating_sub(1);
        }
        self.drop_queue(at);
        Ok(())
    }

    /// Creates the queue's consumer, which must not have one already.
    pub(crate) fn create_consumer<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        spec: ConsumerSpec,
        now_ms: u64,
    ) -> Result<ConsumerRecord, AccountError> {
        let at = at.into();
        let current = self.get_queue(at)?;
        if current.consumer.is_some() {
            return Err(AccountError::ConsumerExists);
        }
        let consumer = ConsumerRecord {
            id: self.tokens.resource_id(),
            created_ms: now_ms,
            spec,
        };
        self.set_consumer(at, &current, Some(consumer.clone()), now_ms)?;
        Ok(consumer)
    }

    /// The queue's consumer of this id.
    pub(crate) fn get_consumer<'a>(
        &self,
        at: impl Into<At<'a>>,
        consumer_id: &str,
    ) -> Result<ConsumerRecord, AccountError> {
        self.get_queue(at)?
            .consumer
            .filter(|c| c.id == consumer_id)
            .ok_or(AccountError::ConsumerNotFound)
    }

    /// Replaces the configuration of the queue's consumer (its kind
    /// included), keeping its id and creation time; or creates it, with
    /// the id of the path, when the queue has none (Cloudflare's
    /// description: "Updates the consumer for a queue, or creates one if it
    /// does not exist"). Another consumer of the queue: one per queue.
    pub(crate) fn update_consumer<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        consumer_id: &str,
        spec: ConsumerSpec,
        now_ms: u64,
    ) -> Result<ConsumerRecord, AccountError> {
        let at = at.into();
        let current = self.get_queue(at)?;
        let consumer = match &current.consumer {
            Some(existing) if existing.id == consumer_id => ConsumerRecord {
                spec,
                ..existing.clone()
            },
            Some(_) => return Err(AccountError::ConsumerExists),
            None => ConsumerRecord {
                id: consumer_id.to_owned(),
                created_ms: now_ms,
                spec,
            },
        };
        self.set_consumer(at, &current, Some(consumer.clone()), now_ms)?;
        Ok(consumer)
    }

    /// Deletes the queue's consumer; deleting the HTTP pull consumer
    /// disables HTTP pull.
    pub(crate) fn delete_consumer<'a>(
        &mut self,
        at: impl Into<At<'a>>,
        consumer_id: &str,
        now_ms: u64,
    ) -> Result<(), AccountError> {
        let at = at.into();
        let current = self.get_queue(at)?;
        self.get_consumer(at, consumer_id)?;
        self.set_consumer(at, &current, None, now_ms)
    }

    /// Puts `consumer` on the queue, keeping the dead-letter index right
    /// and creating its dead-letter queue if it names one that is missing.
    fn set_consumer(
        &mut self,
        at: At<'_>,
        current: &QueueRecord,
        consumer: Option<ConsumerRecord>,
        now_ms: u64,
    ) -> Result<(), AccountError> {
        let dlq = consumer
            .as_ref()
            .and_then(|c| c.spec.dead_letter_queue.clone());
        if let Some(name) = &dlq {
            // The queue it names may be created by that name: the rule of
            // a queue created by the API.
            check_name_in("dead_letter_queue", name)?;
        }
        if dlq.as_deref() == Some(current.name.as_str()) {
            return Err(AccountError::Invalid {
                pointer: "/dead_letter_queue".into(),
                message: "a queue cannot be its own dead-letter queue: its exhausted messages \
                          would come back forever"
                    .into(),
            });
        }
        let account = self
            .registry
            .accounts
            .get_mut(at.account)
            .ok_or(AccountError::QueueNotFound)?;
        account.unlink_dlq(current);
        if let Some(dlq) = &dlq {
            account
                .dlq_sources
                .entry(dlq.clone())
                .or_default()
                .insert(current.id.clone());
        }
        self.touch(at, now_ms);
        if let Some(record) = self.registry.record_mut(at.account, at.queue) {
            record.consumer = consumer;
        }
        if let Some(dlq) = dlq {
            self.ensure_dead_letter_queue(at.account, &dlq, now_ms);
        }
        Ok(())
    }

    /// Declares a queue before serving, in the order given: a later
    /// queue's dead-letter queue may name an earlier or a later one.
    ///
    /// # Errors
    ///
    /// Its name or id is taken, or its name is one Cloudflare refuses.
    pub(crate) fn declare(
        &mut self,
        account: &str,
        declared: Declared,
        now_ms: u64,
    ) -> Result<String, String> {
        if self.registry.id_of(account, &declared.name).is_some() {
            return Err(format!(
                "the queue name {:?} is declared twice",
                declared.name
            ));
        }
        let id = match declared.id {
            Some(id) if self.registry.record(account, &id).is_some() => {
                return Err(format!("the queue id {id:?} is declared twice"));
            }
            Some(id) => id,
            None => self.tokens.resource_id(),
        };
        let consumer = declared.consumer.map(|spec| ConsumerRecord {
            id: self.tokens.resource_id(),
            created_ms: now_ms,
            spec,
        });
        let order = self.registry.next_order();
        let record = QueueRecord {
            id: id.clone(),
            name: declared.name,
            created_ms: now_ms,
            modified_ms: now_ms,
            settings: declared.settings,
            consumer,
            pristine: false,
            order,
        };
        self.registry.insert(account, record);
        for (j, mut subscription) in declared.subscriptions.into_iter().enumerate() {
            subscription.queue_id = id.clone();
            self.create_subscription(account, subscription, now_ms)
                .map_err(|why| match why {
                    AccountError::SourceTaken { .. } => format!(
                        "subscriptions[{j}]: another subscription of the account has its \
                         source (at most one per source)"
                    ),
                    other => format!("subscriptions[{j}]: {other:?}"),
                })?;
        }
        Ok(id)
    }

    /// After every queue is declared: creates the dead-letter queues they
    /// name that none of them is.
    pub(crate) fn finish_declarations(&mut self, account: &str, now_ms: u64) {
        let names: Vec<String> = self
            .registry
            .accounts
            .get(account)
            .map(|a| a.dlq_sources.keys().cloned().collect())
            .unwrap_or_default();
        for name in names {
            self.ensure_dead_letter_queue(account, &name, now_ms);
        }
    }
}

impl ConsumerKind {
    /// The wire name of the kind.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            ConsumerKind::HttpPull(_) => "http_pull",
            ConsumerKind::Worker { .. } => "worker",
        }
    }
}
