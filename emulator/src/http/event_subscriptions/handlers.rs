//! One handler per operation on event subscriptions: listed (all, or one
//! queue's), created, read, changed and deleted. Account resources: no
//! queue in the path, so no queue is checked before the body is read.

use axum::http::StatusCode;

use super::wire::{SubscriptionOut, new_subscription, subscription_change};
use crate::http::error_answer::ErrorAnswer;
use crate::http::management::wire::page_answer;
use crate::http::messages::wire::success;
use crate::http::parse::page_number;
use crate::http::{Answer, App, Incoming};
use crate::state::{ListQuery, Order, SubscriptionRecord};
use cf_queues::codes;

/// Subscriptions per page when `per_page` is absent, and the most served:
/// the published description's default and maximum.
const DEFAULT_PER_PAGE: usize = 20;
const MAX_PER_PAGE: u64 = 100;

/// 404 for a subscription the account does not have, with the published
/// description's text; the code is the emulator's choice (Cloudflare's is
/// not documented), the one a consumer of a path that does not exist gets.
pub(crate) fn subscription_not_found() -> ErrorAnswer {
    ErrorAnswer::new(
        StatusCode::NOT_FOUND,
        codes::NO_ROUTE,
        "Event subscription does not exist",
    )
}

/// 405 for a second subscription to a source: the status of the published
/// description, the text users report from the live API
/// (cloudflare/workers-sdk#15340); the code is the emulator's choice.
pub(crate) fn source_taken(subscription: &str) -> ErrorAnswer {
    ErrorAnswer::new(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::INVALID_REQUEST_BODY,
        format!(
            "We currently do not support multiple subscriptions on the same resource \
             (the account's subscription {subscription} has this source)"
        ),
    )
}

fn answer(record: &SubscriptionRecord) -> Result<Answer, ErrorAnswer> {
    success(&SubscriptionOut::new(record)).map(Answer::Json)
}

/// `GET /accounts/{account_id}/event_subscriptions/subscriptions?page&per_page&order&direction&queue_id`.
pub(crate) fn list_event_subscriptions(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let query = &call.query;
    let order = match query.get("order").map(String::as_str) {
        None => Order::default(),
        Some("created_at") => Order::CreatedAt,
        Some("name") => Order::Name,
        Some("enabled") => Order::Enabled,
        Some("source") => Order::Source,
        Some(_) => {
            return Err(refused_query(
                "order",
                "created_at, name, enabled or source",
            ));
        }
    };
    let descending = match query.get("direction").map(String::as_str) {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(_) => return Err(refused_query("direction", "asc or desc")),
    };
    let list = ListQuery {
        queue_id: query.get("queue_id").cloned(),
        order,
        descending,
        page: page_number(query, "page", u64::from(u32::MAX))?.unwrap_or(1),
        per_page: page_number(query, "per_page", MAX_PER_PAGE)?.unwrap_or(DEFAULT_PER_PAGE),
    };
    let listed = app.with_broker(|broker, _| broker.list_subscriptions(&call.account, &list));
    page_answer(&listed, SubscriptionOut::new)
}

fn refused_query(key: &str, allowed: &str) -> ErrorAnswer {
    ErrorAnswer::bad_request(
        codes::JSON_REQUEST_BODY_INVALID,
        format!("{key} must be {allowed}"),
    )
}

/// `POST .../event_subscriptions/subscriptions`.
pub(crate) fn create_event_subscription(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let new = new_subscription(&call.request)?;
    let record =
        app.with_broker(|broker, now| broker.create_subscription(&call.account, new, now))?;
    answer(&record)
}

/// `GET .../subscriptions/{subscription_id}`.
pub(crate) fn get_event_subscription(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let id = call.subscription.as_deref().unwrap_or_default();
    let record = app.with_broker(|broker, _| broker.get_subscription(&call.account, id))?;
    answer(&record)
}

/// `PATCH .../subscriptions/{subscription_id}`.
pub(crate) fn update_event_subscription(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let change = subscription_change(&call.request)?;
    let id = call.subscription.as_deref().unwrap_or_default();
    let record =
        app.with_broker(|broker, now| broker.update_subscription(&call.account, id, change, now))?;
    answer(&record)
}

/// `DELETE .../subscriptions/{subscription_id}`: the answer carries the
/// subscription deleted, as the published description has it.
pub(crate) fn delete_event_subscription(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let id = call.subscription.as_deref().unwrap_or_default();
    let record = app.with_broker(|broker, _| broker.delete_subscription(&call.account, id))?;
    answer(&record)
}
