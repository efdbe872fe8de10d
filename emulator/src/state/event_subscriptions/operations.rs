//! The operations on event subscriptions, on the broker: created into an
//! existing queue, at most one per source in an account, listed (all, or
//! one queue's) in the order asked, read, changed and deleted.
//!
//! What the emulator decides where Cloudflare's sources are silent (see
//! `semantics.md`): a second subscription to the same source (its type
//! and the field that names its resource) is refused, as users report the
//! live API doing and a third-party provider documents; deleting a queue
//! deletes the subscriptions into it; a change of destination moves the
//! subscription to the other queue, which must exist.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::records::SubscriptionRecord;
use crate::state::management::resources::AccountError;
use crate::state::{At, Broker, Page};

/// A subscription to create, its fields checked for shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewSubscription {
    /// `None`: the queue's name, a space and the source's type, wrangler's default.
    pub name: Option<String>,
    pub enabled: bool,
    pub source: BTreeMap<String, String>,
    pub queue_id: String,
    pub events: Vec<String>,
}

/// The fields a `PATCH` changes; `None` keeps one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SubscriptionChange {
    pub name: Option<String>,
    pub enabled: Option<bool>,
    pub events: Option<Vec<String>>,
    pub queue_id: Option<String>,
}

/// What a list is ordered by (the published description's `order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Order {
    CreatedAt,
    #[default]
    Name,
    Enabled,
    Source,
}

/// A list's filter, order and page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListQuery {
    /// Only the subscriptions into this queue (wrangler's `queue_id`).
    pub queue_id: Option<String>,
    pub order: Order,
    pub descending: bool,
    pub page: usize,
    pub per_page: usize,
}

impl Broker {
    /// One page of the account's subscriptions; a page past the end is
    /// empty (the SDK pages until it gets one).
    pub(crate) fn list_subscriptions(
        &self,
        account: &str,
        query: &ListQuery,
    ) -> Page<SubscriptionRecord> {
        let per_page = query.per_page.max(1);
        let mut kept: Vec<&SubscriptionRecord> = self
            .subscriptions
            .of_account(account)
            .filter(|s| query.queue_id.as_ref().is_none_or(|q| &s.queue_id == q))
            .collect();
        kept.sort_by(|a, b| {
            // Ties in creation order: a stable page for every order.
            let by = compare(query.order, a, b).then(a.order.cmp(&b.order));
            if query.descending { by.reverse() } else { by }
        });
        let total_count = kept.len();
        let skip = query.page.saturating_sub(1).saturating_mul(per_page);
        Page {
            items: kept
                .into_iter()
                .skip(skip)
                .take(per_page)
                .cloned()
                .collect(),
            page: query.page,
            per_page,
            total_count,
            total_pages: total_count.div_ceil(per_page),
        }
    }

    /// Creates a subscription into an existing queue, refused when the
    /// account has one to the same source.
    pub(crate) fn create_subscription(
        &mut self,
        account: &str,
        new: NewSubscription,
        now_ms: u64,
    ) -> Result<SubscriptionRecord, AccountError> {
        let queue = self
            .registry
            .record(account, &new.queue_id)
            .ok_or(AccountError::QueueNotFound)?;
        if let Some(taken) = self
            .subscriptions
            .of_account(account)
            .find(|s| s.source == new.source)
        {
            return Err(AccountError::SourceTaken {
                subscription: taken.id.clone(),
            });
        }
        let source_type = new.source.get("type").map_or("", String::as_str);
        let name = new
            .name
            .unwrap_or_else(|| format!("{} {source_type}", queue.name));
        // A lax queue idle for long is forgotten: not one a subscription names.
        self.keep(At {
            account,
            queue: &new.queue_id,
        });
        let record = SubscriptionRecord {
            id: self.tokens.resource_id(),
            name,
            enabled: new.enabled,
            source: new.source,
            queue_id: new.queue_id,
            events: new.events,
            created_ms: now_ms,
            modified_ms: now_ms,
            order: self.registry.next_order(),
        };
        self.subscriptions.insert(account, record.clone());
        Ok(record)
    }

    pub(crate) fn get_subscription(
        &self,
        account: &str,
        id: &str,
    ) -> Result<SubscriptionRecord, AccountError> {
        self.subscriptions
            .get(account, id)
            .cloned()
            .ok_or(AccountError::SubscriptionNotFound)
    }

    /// Changes the fields given; a new destination must exist. A change
    /// that changes nothing leaves `modified_ms` alone.
    pub(crate) fn update_subscription(
        &mut self,
        account: &str,
        id: &str,
        change: SubscriptionChange,
        now_ms: u64,
    ) -> Result<SubscriptionRecord, AccountError> {
        let current = self.get_subscription(account, id)?;
        if let Some(queue) = &change.queue_id {
            if self.registry.record(account, queue).is_none() {
                return Err(AccountError::QueueNotFound);
            }
            self.keep(At { account, queue });
        }
        let mut changed = current.clone();
        if let Some(name) = change.name {
            changed.name = name;
        }
        if let Some(enabled) = change.enabled {
            changed.enabled = enabled;
        }
        if let Some(events) = change.events {
            changed.events = events;
        }
        if let Some(queue) = change.queue_id {
            changed.queue_id = queue;
        }
        if changed == current {
            return Ok(current);
        }
        changed.modified_ms = now_ms.max(current.modified_ms);
        let record = self
            .subscriptions
            .get_mut(account, id)
            .ok_or(AccountError::SubscriptionNotFound)?;
        *record = changed.clone();
        Ok(changed)
    }

    /// Deletes a subscription; returns it as it was.
    pub(crate) fn delete_subscription(
        &mut self,
        account: &str,
        id: &str,
    ) -> Result<SubscriptionRecord, AccountError> {
        self.subscriptions
            .remove(account, id)
            .ok_or(AccountError::SubscriptionNotFound)
    }

    /// The subscriptions into `queue`, by name (the dashboard's queue page).
    pub(crate) fn subscriptions_into(&self, account: &str, queue: &str) -> Vec<SubscriptionRecord> {
        let query = ListQuery {
            queue_id: Some(queue.to_owned()),
            order: Order::Name,
            descending: false,
            page: 1,
            per_page: usize::MAX,
        };
        self.list_subscriptions(account, &query).items
    }

    /// Deletes the subscriptions into a queue that is being deleted: none
    /// is left naming a queue that does not exist, and the source is free
    /// for a subscription into another.
    pub(crate) fn delete_subscriptions_into(&mut self, account: &str, queue: &str) {
        let ids: Vec<String> = self
            .subscriptions
            .of_account(account)
            .filter(|s| s.queue_id == queue)
            .map(|s| s.id.clone())
            .collect();
        for id in ids {
            self.subscriptions.remove(account, &id);
        }
    }
}

/// How two subscriptions compare by the field `order` names.
fn compare(order: Order, a: &SubscriptionRecord, b: &SubscriptionRecord) -> Ordering {
    match order {
        Order::CreatedAt => a.created_ms.cmp(&b.created_ms),
        Order::Name => a.name.cmp(&b.name),
        Order::Enabled => a.enabled.cmp(&b.enabled),
        Order::Source => a.source_type().cmp(b.source_type()),
    }
}
