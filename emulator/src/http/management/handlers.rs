//! One handler per management operation: queues and their consumers,
//! created, read, changed and deleted. Each gets a request that passed the
//! shared steps of [`Incoming::read`](crate::http::Incoming::read) (the queue of
//! the path, if any, exists).

use axum::http::StatusCode;
use serde_json::Value;

use super::wire::{ConsumerOut, QueueOut, consumer_spec, page_answer, settings_change, string};
use crate::http::error_answer::ErrorAnswer;
use crate::http::event_subscriptions::handlers::{source_taken, subscription_not_found};
use crate::http::messages::wire::success;
use crate::http::parse::page_number;
use crate::http::{Answer, App, Incoming};
use crate::state::{AccountError, DEFAULT_PER_PAGE, MAX_PER_PAGE, QueueRecord, SettingsChange};
use cf_queues::codes;

impl From<AccountError> for ErrorAnswer {
    fn from(error: AccountError) -> ErrorAnswer {
        match error {
            AccountError::QueueNotFound => queue_not_found(),
            AccountError::ConsumerNotFound => ErrorAnswer::new(
                StatusCode::NOT_FOUND,
                codes::NO_ROUTE,
                "Could not route to the consumer, perhaps your object identifier is invalid?",
            ),
            AccountError::NameTaken(name) => ErrorAnswer::new(
                StatusCode::CONFLICT,
                codes::QUEUE_NAME_TAKEN,
                format!("queue name already taken: {name}"),
            ),
            AccountError::InvalidName { field, name } => ErrorAnswer::bad_request(
                codes::INVALID_QUEUE_NAME,
                format!(
                    "Invalid queue name: invalid queue name: {}. Must match \
                     ^[a-z0-9]([a-z0-9-]{{0,61}}[a-z0-9])?$",
                    shown_name(&name)
                ),
            )
            .at(&format!("/{field}")),
            AccountError::ConsumerExists => ErrorAnswer::new(
                StatusCode::CONFLICT,
                codes::CONSUMER_EXISTS,
                "workers.api.error.consumer_exists: a queue has one consumer; delete it first",
            ),
            AccountError::Invalid { pointer, message } => ErrorAnswer::invalid(&pointer, message),
            AccountError::SubscriptionNotFound => subscription_not_found(),
            AccountError::SourceTaken { subscription } => source_taken(&subscription),
        }
    }
}

/// A refused name as an error shows it: cut after 80 characters (a name
/// may be up to the body limit, 2 MiB, and the answer should not echo it
/// all), so that the field still says which one it was.
fn shown_name(name: &str) -> String {
    const SHOWN: usize = 80;
    match name.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}... ({} bytes)", &name[..cut], name.len()),
        None => name.to_owned(),
    }
}

/// 404 with 10104: no queue of that id in the account.
pub(crate) fn queue_not_found() -> ErrorAnswer {
    ErrorAnswer::new(
        StatusCode::NOT_FOUND,
        codes::QUEUE_NOT_FOUND,
        "QueueNotFound",
    )
}

fn queue_answer(record: &QueueRecord) -> Result<Answer, ErrorAnswer> {
    success(&QueueOut::new(record)).map(Answer::Json)
}

/// The answer of a deletion: `result: null`.
fn deleted() -> Result<Answer, ErrorAnswer> {
    success(&Value::Null).map(Answer::Json)
}

/// `GET /accounts/{account_id}/queues?page&per_page&name`.
pub(crate) fn list_queues(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let query = &call.query;
    let page = page_number(query, "page", u64::from(u32::MAX))?.unwrap_or(1);
    let per_page = page_number(query, "per_page", MAX_PER_PAGE as u64)?.unwrap_or(DEFAULT_PER_PAGE);
    let name = query.get("name").map(String::as_str);
    let listed =
        app.with_broker(|broker, _| broker.list_queues(&call.account, name, page, per_page));
    page_answer(&listed, QueueOut::new)
}

/// `POST /accounts/{account_id}/queues`.
pub(crate) fn create_queue(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let name = string(&call.request, "queue_name", "/queue_name")?
        .ok_or_else(|| ErrorAnswer::invalid("/queue_name", "queue_name is required"))?;
    let settings = settings_change(&call.request)?;
    let record =
        app.with_broker(|broker, now| broker.create_queue(&call.account, name, settings, now))?;
    queue_answer(&record)
}

/// `GET .../queues/{queue_id}`.
pub(crate) fn get_queue(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let record = app.with_broker(|broker, _| broker.get_queue(call.at()))?;
    queue_answer(&record)
}

/// `PUT` (replace) and `PATCH` (change) of `.../queues/{queue_id}`.
fn update(app: &App, call: &Incoming, replace: bool) -> Result<Answer, ErrorAnswer> {
    let name = string(&call.request, "queue_name", "/queue_name")?;
    let change: SettingsChange = settings_change(&call.request)?;
    let record =
        app.with_broker(|broker, now| broker.update_queue(call.at(), name, change, replace, now))?;
    queue_answer(&record)
}

/// `PUT .../queues/{queue_id}`: settings left out are reset.
pub(crate) fn update_queue(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    update(app, &call, true)
}

/// `PATCH .../queues/{queue_id}`: settings left out are kept.
pub(crate) fn edit_queue(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    update(app, &call, false)
}

/// `DELETE .../queues/{queue_id}`.
pub(crate) fn delete_queue(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    app.with_broker(|broker, _| broker.delete_queue(call.at()))?;
    deleted()
}

/// `GET .../queues/{queue_id}/consumers`.
pub(crate) fn list_consumers(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let record = app.with_broker(|broker, _| broker.get_queue(call.at()))?;
    let consumers: Vec<ConsumerOut<'_>> = record
        .consumer
        .iter()
        .map(|consumer| ConsumerOut::new(&record, consumer))
        .collect();
    success(&consumers).map(Answer::Json)
}

/// The consumer of the path, as the answer shows it after `change`.
fn consumer_answer(
    app: &App,
    call: &Incoming,
    change: impl FnOnce(&mut crate::state::Broker, u64) -> Result<(), AccountError>,
) -> Result<Answer, ErrorAnswer> {
    let record = app.with_broker(|broker, now| {
        change(broker, now)?;
        broker.get_queue(call.at())
    })?;
    let consumer = record
        .consumer
        .as_ref()
        .ok_or(AccountError::ConsumerNotFound)?;
    success(&ConsumerOut::new(&record, consumer)).map(Answer::Json)
}

/// `POST .../queues/{queue_id}/consumers`.
pub(crate) fn create_consumer(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let spec = consumer_spec(&call.request)?;
    consumer_answer(app, &call, |broker, now| {
        broker.create_consumer(call.at(), spec, now).map(drop)
    })
}

/// `GET .../consumers/{consumer_id}`.
pub(crate) fn get_consumer(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let id = call.consumer.clone().unwrap_or_default();
    consumer_answer(app, &call, |broker, _| {
        broker.get_consumer(call.at(), &id).map(drop)
    })
}

/// `PUT .../consumers/{consumer_id}`.
pub(crate) fn update_consumer(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let spec = consumer_spec(&call.request)?;
    let id = call.consumer.clone().unwrap_or_default();
    consumer_answer(app, &call, |broker, now| {
        broker.update_consumer(call.at(), &id, spec, now).map(drop)
    })
}

/// `DELETE .../consumers/{consumer_id}`.
pub(crate) fn delete_consumer(app: &App, call: Incoming) -> Result<Answer, ErrorAnswer> {
    let id = call.consumer.clone().unwrap_or_default();
    app.with_broker(|broker, now| broker.delete_consumer(call.at(), &id, now))?;
    deleted()
}
