//! Event subscriptions as account resources: the model, and where each
//! account's are kept, noting for a data directory's journal which
//! changed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cf_queues::event_subscriptions::{SOURCE_TYPES, resource_field_of};

/// An event subscription: the events of `source` delivered into the queue
/// `queue_id`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SubscriptionRecord {
    pub id: String,
    pub name: String,
    pub enabled: bool,
    /// The source as kept: its `type` and, for a source of one resource,
    /// the field that names it (`model_name`, ...). Two subscriptions with
    /// the same map subscribe to the same source.
    pub source: BTreeMap<String, String>,
    /// The destination queue's id.
    pub queue_id: String,
    pub events: Vec<String>,
    pub created_ms: u64,
    pub modified_ms: u64,
    /// Creation order, which breaks ties of the list's order: two
    /// subscriptions created in one millisecond list as they were made.
    #[serde(default)]
    pub order: u64,
}

impl SubscriptionRecord {
    /// The source's `type`.
    pub(crate) fn source_type(&self) -> &str {
        self.source.get("type").map_or("", String::as_str)
    }

    /// The resource its source names (a model, a Worker, a script, a
    /// Workflow), if it names one: the one field beside `type`.
    pub(crate) fn resource(&self) -> Option<&str> {
        self.source
            .iter()
            .find(|(key, _)| key.as_str() != "type")
            .map(|(_, value)| value.as_str())
    }
}

/// Why a source is refused: its field (`type`, `model_name`, ...) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceRefusal {
    pub field: String,
    pub why: String,
}

/// The source of a new subscription, checked as Cloudflare's tools expect
/// it, the one place the API and a configuration file are checked: a
/// `type` of the published description, the field that names the
/// resource of a source of one (wrangler requires `--model-name`,
/// `--worker-name`, `--workflow-name`; `script_tag` likewise), and no
/// other field. `fields` holds each field given, as text (`None`: not
/// text).
pub(crate) fn checked_source(
    fields: &BTreeMap<&str, Option<&str>>,
) -> Result<BTreeMap<String, String>, SourceRefusal> {
    let refuse = |field: &str, why: String| SourceRefusal {
        field: field.to_owned(),
        why,
    };
    let kind = match fields.get("type") {
        Some(Some(kind)) => *kind,
        Some(None) => return Err(refuse("type", "source.type must be a string".to_owned())),
        None => "",
    };
    if !SOURCE_TYPES.contains(&kind) {
        let shown: String = kind.chars().take(80).collect();
        return Err(refuse(
            "type",
            format!(
                "source.type {shown:?} is not one of {}",
                SOURCE_TYPES.join(", ")
            ),
        ));
    }
    let mut source = BTreeMap::from([("type".to_owned(), kind.to_owned())]);
    let resource = resource_field_of(kind);
    if let Some(field) = resource {
        match fields.get(field) {
            Some(Some(value)) if !value.trim().is_empty() => {
                source.insert(field.to_owned(), (*value).to_owned());
            }
            Some(None) => {
                return Err(refuse(field, format!("source.{field} must be a string")));
            }
            _ => {
                return Err(refuse(
                    field,
                    format!("source.{field} is required for a {kind} source"),
                ));
            }
        }
    }
    if let Some(other) = fields
        .keys()
        .find(|k| **k != "type" && Some(**k) != resource)
    {
        let shown: String = other.chars().take(80).collect();
        return Err(refuse(
            other,
            format!("source.{shown} is not a field of a {kind} source"),
        ));
    }
    Ok(source)
}

/// Every account's subscriptions.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    /// Account -> id -> subscription.
    accounts: HashMap<String, BTreeMap<String, SubscriptionRecord>>,
    /// Whether changes are noted for a data directory's journal.
    pub(crate) tracking: bool,
    /// Account -> ids changed since the journal last took them.
    pub(crate) dirty: HashMap<String, BTreeSet<String>>,
}

impl Subscriptions {
    pub(crate) fn get(&self, account: &str, id: &str) -> Option<&SubscriptionRecord> {
        self.accounts.get(account)?.get(id)
    }

    /// The subscription, noted as changed: a mutable borrow is taken to
    /// change it.
    pub(crate) fn get_mut(&mut self, account: &str, id: &str) -> Option<&mut SubscriptionRecord> {
        self.get(account, id)?;
        self.note(account, id);
        self.accounts.get_mut(account)?.get_mut(id)
    }

    pub(crate) fn insert(&mut self, account: &str, record: SubscriptionRecord) {
        self.note(account, &record.id);
        self.accounts
            .entry(account.to_owned())
            .or_default()
            .insert(record.id.clone(), record);
    }

    pub(crate) fn remove(&mut self, account: &str, id: &str) -> Option<SubscriptionRecord> {
        let subscriptions = self.accounts.get_mut(account)?;
        let record = subscriptions.remove(id)?;
        if subscriptions.is_empty() {
            self.accounts.remove(account);
        }
        self.note(account, id);
        Some(record)
    }

    /// The account's subscriptions, by id.
    pub(crate) fn of_account(&self, account: &str) -> impl Iterator<Item = &SubscriptionRecord> {
        self.accounts
            .get(account)
            .into_iter()
            .flat_map(BTreeMap::values)
    }

    /// Restores a subscription from a data directory, not noted.
    pub(crate) fn restore(&mut self, account: &str, record: SubscriptionRecord) {
        self.accounts
            .entry(account.to_owned())
            .or_default()
            .insert(record.id.clone(), record);
    }

    /// Notes every subscription as changed: a data directory starts.
    pub(crate) fn track_all(&mut self) {
        self.tracking = true;
        for (account, subscriptions) in &self.accounts {
            self.dirty
                .entry(account.clone())
                .or_default()
                .extend(subscriptions.keys().cloned());
        }
    }

    fn note(&mut self, account: &str, id: &str) {
        if self.tracking {
            self.dirty
                .entry(account.to_owned())
                .or_default()
                .insert(id.to_owned());
        }
    }
}
