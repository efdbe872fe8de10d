//! Queues and consumers as resources: each account's queues with their
//! names, ids, settings and consumer, apart from the messages they hold
//! ([`queue`](crate::state::messages::queue)). The management operations are in
//! [`manage`](crate::state::management::operations); this file holds the model, how a queue comes
//! into being, and what a queue's consumer decides about delivery.
//!
//! A queue exists here once it was created (by the API, a configuration
//! file or the builder), or once a messages request named an unknown id
//! that may spring into being (the lax mode, [`Springs`]). Its messages
//! live in the broker's message state, which is dropped whenever it holds
//! nothing readable; the record stays until the queue is deleted.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Cloudflare's default retention, 4 days (the Queues limits page), and
/// its bounds, 60 s to 14 days.
pub(crate) const DEFAULT_RETENTION_S: u32 = 345_600;
pub(crate) const MIN_RETENTION_S: u32 = 60;
pub(crate) const MAX_RETENTION_S: u32 = 1_209_600;

/// Queues per page of a list when `per_page` is absent: the figure of
/// Cloudflare's example `result_info`.
pub(crate) const DEFAULT_PER_PAGE: usize = 20;
/// The largest `per_page` served.
pub(crate) const MAX_PER_PAGE: usize = 1000;

/// How many queues that sprang into being and were never changed the
/// registry keeps, beyond those holding messages, before it forgets the
/// idle ones: a client naming a new queue id in every request must not
/// make it grow without bound. (Cloudflare allows 10,000 queues per
/// account.)
pub(crate) const MAX_PRISTINE_LAX: usize = 10_000;

/// What queues may spring into being on a messages request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Springs {
    /// Any valid id not deleted before (the lax mode).
    #[default]
    Any,
    /// Only these ids, in any account (the strict queues).
    Only(HashSet<String>),
}

impl Springs {
    pub(crate) fn allows(&self, id: &str) -> bool {
        match self {
            Springs::Any => true,
            Springs::Only(ids) => ids.contains(id),
        }
    }
}

/// A queue's settings, `mq_queue-settings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct QueueSettings {
    /// Seconds by which a message pushed without a delay is delayed.
    pub delivery_delay_s: u32,
    /// Whether delivery to consumers is paused.
    pub delivery_paused: bool,
    /// Seconds after its push for which a message is kept.
    pub retention_s: u32,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            delivery_delay_s: 0,
            delivery_paused: false,
            retention_s: DEFAULT_RETENTION_S,
        }
    }
}

/// An HTTP pull consumer's settings: what a pull, an extension or a retry
/// that leaves a field out gets, and when a message runs out of retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PullSettings {
    pub batch_size: u32,
    pub max_retries: u32,
    pub retry_delay_s: u32,
    pub visibility_timeout_ms: u64,
}

impl Default for PullSettings {
    /// The defaults of a pull request: 5 messages leased for 30 s, 3
    /// retries, retried at once.
    fn default() -> Self {
        PullSettings {
            batch_size: 5,
            max_retries: 3,
            retry_delay_s: 0,
            visibility_timeout_ms: 30_000,
        }
    }
}

/// A Worker consumer's settings, kept and shown; the Worker never runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct WorkerSettings {
    pub batch_size: u32,
    pub max_concurrency: Option<u32>,
    pub max_retries: u32,
    pub max_wait_time_ms: u64,
    pub retry_delay_s: u32,
}

impl Default for WorkerSettings {
    /// The defaults of Cloudflare's consumer configuration page: batches of
    /// 10, 5 s to fill one, 3 retries.
    fn default() -> Self {
        WorkerSettings {
            batch_size: 10,
            max_concurrency: None,
            max_retries: 3,
            max_wait_time_ms: 5_000,
            retry_delay_s: 0,
        }
    }
}

/// What kind of consumer, with its settings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum ConsumerKind {
    HttpPull(PullSettings),
    Worker {
        /// The Worker's script, shown as both `script_name` (the published
        /// description) and `script` (the live API, which wrangler reads).
        script_name: String,
        /// The Worker service, when the request named one (the live API's
        /// `service`); absent from rows written before it was kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        service: Option<String>,
        settings: WorkerSettings,
    },
}

/// A consumer as written by a create or an update.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ConsumerSpec {
    pub kind: ConsumerKind,
    /// The NAME of the queue that receives messages out of retries.
    pub dead_letter_queue: Option<String>,
}

impl ConsumerSpec {
    /// An HTTP pull consumer with these settings and dead-letter queue.
    pub(crate) fn http_pull(settings: PullSettings, dead_letter_queue: Option<String>) -> Self {
        ConsumerSpec {
            kind: ConsumerKind::HttpPull(settings),
            dead_letter_queue,
        }
    }

    fn max_retries(&self) -> u32 {
        match &self.kind {
            ConsumerKind::HttpPull(s) => s.max_retries,
            ConsumerKind::Worker { settings, .. } => settings.max_retries,
        }
    }
}

/// A queue's consumer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ConsumerRecord {
    pub id: String,
    pub created_ms: u64,
    pub spec: ConsumerSpec,
}

/// A queue as a resource.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct QueueRecord {
    pub id: String,
    pub name: String,
    pub created_ms: u64,
    pub modified_ms: u64,
    pub settings: QueueSettings,
    pub consumer: Option<ConsumerRecord>,
    /// It sprang into being and was never changed since: the registry may
    /// forget it while it holds no message ([`MAX_PRISTINE_LAX`]).
    pub(crate) pristine: bool,
    /// Creation order, for listing.
    pub(crate) order: u64,
}

impl QueueRecord {
    /// The HTTP pull consumer's settings, if HTTP pull is enabled.
    pub(crate) fn http_pull(&self) -> Option<PullSettings> {
        match self.consumer.as_ref().map(|c| &c.spec.kind) {
            Some(ConsumerKind::HttpPull(settings)) => Some(*settings),
            _ => None,
        }
    }
}

/// Why a management call, or a messages call on a queue, is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AccountError {
    /// No queue of that id (or it was deleted).
    QueueNotFound,
    /// The queue has no consumer of that id.
    ConsumerNotFound,
    /// Another queue of the account has that name.
    NameTaken(String),
    /// A name Cloudflare would refuse, in the request's field `field`
    /// (`queue_name`, or `dead_letter_queue` for a consumer's).
    InvalidName { field: &'static str, name: String },
    /// The queue has a consumer already: one per queue.
    ConsumerExists,
    /// A field out of its bounds, with its JSON pointer.
    Invalid { pointer: String, message: String },
    /// No event subscription of that id.
    SubscriptionNotFound,
    /// The account has a subscription to that source already (this one).
    SourceTaken { subscription: String },
}

/// The queues of one account.
#[derive(Debug, Default)]
pub(crate) struct Account {
    pub(crate) queues: HashMap<String, QueueRecord>,
    /// Counts the changes to the set of names (a queue created, deleted or
    /// renamed), so that an index of them knows when it is stale.
    pub(crate) names_changed: u64,
    /// Name -> id: names are unique in an account.
    pub(crate) names: HashMap<String, String>,
    /// Creation order -> id.
    pub(crate) order: BTreeMap<u64, String>,
    /// Ids deleted, which never spring back into being.
    pub(crate) deleted: HashSet<String>,
    /// Dead-letter queue name -> the queues whose consumer names it, so that
    /// a dead-letter queue is brought up to date before it is observed.
    pub(crate) dlq_sources: HashMap<String, BTreeSet<String>>,
}

impl Account {
    /// The name of a queue, its id when it has no record (message state
    /// only, as in the broker's unit tests).
    pub(crate) fn name_of<'a>(&'a self, id: &'a str) -> &'a str {
        self.queues.get(id).map_or(id, |q| q.name.as_str())
    }

    /// Whether it holds nothing: no queue, and none deleted (whose ids must
    /// be kept so that they never spring back).
    pub(crate) fn is_empty(&self) -> bool {
        self.queues.is_empty() && self.deleted.is_empty()
    }

    /// Inserts a record, indexing its name, order and dead-letter queue
    /// (the registry notes it for the journal: [`Registry::insert`]).
    pub(crate) fn insert(&mut self, record: QueueRecord) {
        self.names_changed = self.names_changed.wrapping_add(1);
        self.names.insert(record.name.clone(), record.id.clone());
        self.order.insert(record.order, record.id.clone());
        if let Some(dlq) = record
            .consumer
            .as_ref()
            .and_then(|c| c.spec.dead_letter_queue.clone())
        {
            self.dlq_sources
                .entry(dlq)
                .or_default()
                .insert(record.id.clone());
        }
        self.queues.insert(record.id.clone(), record);
    }

    /// Removes a record and its indexes; `None` if there was none.
    pub(crate) fn remove(&mut self, id: &str) -> Option<QueueRecord> {
        let record = self.queues.remove(id)?;
        self.names_changed = self.names_changed.wrapping_add(1);
        self.names.remove(&record.name);
        self.order.remove(&record.order);
        self.unlink_dlq(&record);
        Some(record)
    }

    /// Forgets that `record`'s consumer feeds a dead-letter queue.
    pub(crate) fn unlink_dlq(&mut self, record: &QueueRecord) {
        let Some(dlq) = record
            .consumer
            .as_ref()
            .and_then(|c| c.spec.dead_letter_queue.as_ref())
        else {
            return;
        };
        if let Some(sources) = self.dlq_sources.get_mut(dlq) {
            sources.remove(&record.id);
            if sources.is_empty() {
                self.dlq_sources.remove(dlq);
            }
        }
    }
}

/// What a queue's consumer decides about delivery, when its leases run
/// out or are retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    pub(crate) max_retries: u32,
    /// The NAME of the queue its exhausted messages go to, resolved to
    /// an id (or created) only when a message goes there
    /// ([`Broker::deliver_dead_letters`](crate::state::Broker)).
    pub(crate) dead_letter: Option<String>,
    /// Messages pushed longer ago than this are gone.
    pub(crate) retention_ms: u64,
}

/// Every account's queues, and how new ones spring into being.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) accounts: HashMap<String, Account>,
    pub(crate) springs: Springs,
    pub(crate) next_order: u64,
    /// Records that are [`QueueRecord::pristine`].
    pub(crate) pristine: usize,
    /// Above this many pristine records, the idle ones are forgotten.
    pub(crate) sweep_above: usize,
    /// Whether changes are noted for a data directory's journal.
    pub(crate) tracking: bool,
    /// Account -> ids whose record changed since the journal last took
    /// them ([`Broker::take_journal`](crate::state::Broker::take_journal)): only
    /// what was touched is looked at, never every account.
    pub(crate) dirty: HashMap<String, BTreeSet<String>>,
}

impl Registry {
    pub(crate) fn new(springs: Springs) -> Registry {
        Registry {
            springs,
            sweep_above: MAX_PRISTINE_LAX,
            ..Registry::default()
        }
    }

    pub(crate) fn record(&self, account: &str, id: &str) -> Option<&QueueRecord> {
        self.accounts.get(account)?.queues.get(id)
    }

    pub(crate) fn record_mut(&mut self, account: &str, id: &str) -> Option<&mut QueueRecord> {
        if !self.accounts.get(account)?.queues.contains_key(id) {
            return None;
        }
        // Conservatively dirty: a mutable borrow is taken to change it.
        self.note(account, id);
        self.accounts.get_mut(account)?.queues.get_mut(id)
    }

    /// Notes that the record `id` of `account` changed, for the journal.
    fn note(&mut self, account: &str, id: &str) {
        if !self.tracking {
            return;
        }
        match self.dirty.get_mut(account) {
            Some(ids) => {
                if !ids.contains(id) {
                    ids.insert(id.to_owned());
                }
            }
            None => {
                self.dirty
                    .insert(account.to_owned(), BTreeSet::from([id.to_owned()]));
            }
        }
    }

    /// Inserts a record into its account (created if needed).
    pub(crate) fn insert(&mut self, account: &str, record: QueueRecord) {
        self.note(account, &record.id);
        self.accounts
            .entry(account.to_owned())
            .or_default()
            .insert(record);
    }

    /// Removes a record and its indexes; `None` if there was none.
    pub(crate) fn remove(&mut self, account: &str, id: &str) -> Option<QueueRecord> {
        let record = self.accounts.get_mut(account)?.remove(id)?;
        self.note(account, id);
        Some(record)
    }

    /// The id of the queue of this name.
    pub(crate) fn id_of(&self, account: &str, name: &str) -> Option<&str> {
        self.accounts
            .get(account)?
            .names
            .get(name)
            .map(String::as_str)
    }

    pub(crate) fn next_order(&mut self) -> u64 {
        let order = self.next_order;
        self.next_order = order.wrapping_add(1);
        order
    }

    /// Whether an unknown id may spring into being: allowed by the mode,
    /// never deleted, and not another queue's name (a lax queue is named
    /// after its id, so that would make two queues of one name; Cloudflare
    /// answers 404 to a name used as an id, and so does the emulator).
    pub(crate) fn may_spring(&self, account: &str, id: &str) -> bool {
        if !self.springs.allows(id) {
            return false;
        }
        self.accounts.get(account).is_none_or(|a| {
            !a.deleted.contains(id) && !a.names.contains_key(id) && !a.queues.contains_key(id)
        })
    }

    /// The delivery policy of queue `id`: its consumer's, the lax defaults
    /// for a queue without a record, Cloudflare's defaults for a queue
    /// without a consumer.
    pub(crate) fn policy(
        &self,
        account: &str,
        id: &str,
        lax_max_retries: u32,
        lax_dead_letters: &HashMap<String, String>,
    ) -> Policy {
        let record = self.record(account, id);
        let (max_retries, dlq_name, retention_s) = match record {
            None => (
                lax_max_retries,
                lax_dead_letters.get(id).map(String::as_str),
                DEFAULT_RETENTION_S,
            ),
            Some(record) => match &record.consumer {
                Some(consumer) => (
                    consumer.spec.max_retries(),
                    consumer.spec.dead_letter_queue.as_deref(),
                    record.settings.retention_s,
                ),
                None => (
                    PullSettings::default().max_retries,
                    None,
                    record.settings.retention_s,
                ),
            },
        };
        Policy {
            max_retries,
            dead_letter: dlq_name.map(str::to_owned),
            retention_ms: u64::from(retention_s) * 1000,
        }
    }
}

/// Checks a queue name as Cloudflare does (error 11003 InvalidQueueName):
/// 1 to 63 lowercase letters, digits and dashes, starting and ending with a
/// letter or digit.
pub(crate) fn check_queue_name(name: &str) -> Result<(), AccountError> {
    check_name_in("queue_name", name)
}

/// [`check_queue_name`] for a name given in the request's field `field`:
/// the one place the emulator decides what a queue name is, for queues
/// created or renamed and for the dead-letter queues consumers name.
pub(crate) fn check_name_in(field: &'static str, name: &str) -> Result<(), AccountError> {
    let bytes = name.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let valid = (1..=63).contains(&bytes.len())
        && bytes.first().is_some_and(inner)
        && bytes.last().is_some_and(inner)
        && bytes.iter().all(|b| inner(b) || *b == b'-');
    if valid {
        Ok(())
    } else {
        Err(AccountError::InvalidName {
            field,
            name: name.to_owned(),
        })
    }
}

/// Checks a whole number against its bounds, for a setting named `field`.
pub(crate) fn bounded(field: &str, value: f64, min: u64, max: u64) -> Result<u64, String> {
    if value.fract() != 0.0 || value < min as f64 || value > max as f64 {
        return Err(format!(
            "{field} must be a whole number from {min} to {max}, not {value}"
        ));
    }
    Ok(value as u64)
}
