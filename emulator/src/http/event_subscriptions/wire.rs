//! Event subscriptions on the wire: `mq_event-subscription` as the answers
//! carry it, and the bodies that create or change one, read with
//! Cloudflare's field names and checked as its tools expect (wrangler's
//! required flags, the published description's shapes).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::clock::rfc3339_ms;
use crate::http::error_answer::ErrorAnswer;
use crate::http::management::wire::{object, string};
use crate::http::parse::Object;
use crate::state::{NewSubscription, SubscriptionChange, SubscriptionRecord, checked_source};

/// The only kind of destination: a queue.
const QUEUE_DESTINATION: &str = "queues.queue";

/// `mq_event-subscription`.
#[derive(Serialize)]
pub(crate) struct SubscriptionOut<'a> {
    id: &'a str,
    name: &'a str,
    enabled: bool,
    source: &'a BTreeMap<String, String>,
    destination: DestinationOut<'a>,
    events: &'a [String],
    created_at: String,
    modified_at: String,
}

#[derive(Serialize)]
struct DestinationOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    queue_id: &'a str,
}

impl<'a> SubscriptionOut<'a> {
    pub(crate) fn new(record: &'a SubscriptionRecord) -> SubscriptionOut<'a> {
        SubscriptionOut {
            id: &record.id,
            name: &record.name,
            enabled: record.enabled,
            source: &record.source,
            destination: DestinationOut {
                kind: QUEUE_DESTINATION,
                queue_id: &record.queue_id,
            },
            events: &record.events,
            created_at: rfc3339_ms(record.created_ms),
            modified_at: rfc3339_ms(record.modified_ms),
        }
    }
}

/// The body of `POST .../subscriptions`: `source`, `destination` and
/// `events` are required (a subscription cannot exist without them, and
/// wrangler always sends them); `name` defaults to wrangler's, `enabled`
/// to true.
pub(crate) fn new_subscription(request: &Object) -> Result<NewSubscription, ErrorAnswer> {
    let source = object(request, "source")?
        .ok_or_else(|| ErrorAnswer::invalid("/source", "source is required"))?;
    let destination = object(request, "destination")?
        .ok_or_else(|| ErrorAnswer::invalid("/destination", "destination is required"))?;
    let events =
        events(request)?.ok_or_else(|| ErrorAnswer::invalid("/events", "events is required"))?;
    Ok(NewSubscription {
        name: name(request)?,
        enabled: boolean(request, "enabled")?.unwrap_or(true),
        source: source_fields(source)?,
        queue_id: queue_id(destination)?,
        events,
    })
}

/// The body of `PATCH .../subscriptions/{id}`: the fields given. Its
/// source cannot change (the published description has no `source`
/// there): one sent is refused rather than ignored, so that a test
/// against the emulator never believes it changed.
pub(crate) fn subscription_change(request: &Object) -> Result<SubscriptionChange, ErrorAnswer> {
    if request.get("source").is_some_and(|v| !v.is_null()) {
        return Err(ErrorAnswer::invalid(
            "/source",
            "the source of a subscription cannot change; delete it and create another",
        ));
    }
    let queue_id = match object(request, "destination")? {
        Some(destination) => Some(queue_id(destination)?),
        None => None,
    };
    Ok(SubscriptionChange {
        name: name(request)?,
        enabled: boolean(request, "enabled")?,
        events: events(request)?,
        queue_id,
    })
}

/// `name`: any text but an empty one (wrangler's default holds a space).
fn name(request: &Object) -> Result<Option<String>, ErrorAnswer> {
    match string(request, "name", "/name")? {
        Some(name) if name.trim().is_empty() => {
            Err(ErrorAnswer::invalid("/name", "name must not be empty"))
        }
        name => Ok(name.map(str::to_owned)),
    }
}

fn boolean(request: &Object, key: &str) -> Result<Option<bool>, ErrorAnswer> {
    match request.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ErrorAnswer::invalid(
            &format!("/{key}"),
            format!("{key} must be a boolean"),
        )),
    }
}

/// `events`: at least one event type, each a string that is not empty.
fn events(request: &Object) -> Result<Option<Vec<String>>, ErrorAnswer> {
    let list = match request.get("events") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(ErrorAnswer::invalid("/events", "events must be an array")),
    };
    if list.is_empty() {
        return Err(ErrorAnswer::invalid(
            "/events",
            "events must hold at least one event type",
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, event)| match event.as_str() {
            Some(event) if !event.trim().is_empty() => Ok(event.to_owned()),
            _ => Err(ErrorAnswer::invalid(
                &format!("/events/{i}"),
                "each event type must be a string that is not empty",
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `destination`: `{"type": "queues.queue", "queue_id"}`, both required.
fn queue_id(destination: &Object) -> Result<String, ErrorAnswer> {
    match string(destination, "type", "/destination/type")? {
        Some(QUEUE_DESTINATION) => {}
        Some(_) | None => {
            return Err(ErrorAnswer::invalid(
                "/destination/type",
                format!("destination.type must be {QUEUE_DESTINATION:?}"),
            ));
        }
    }
    match string(destination, "queue_id", "/destination/queue_id")? {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err(ErrorAnswer::invalid(
            "/destination/queue_id",
            "destination.queue_id is required",
        )),
    }
}

/// `source`, checked by [`checked_source`]; a field `null` is absent.
fn source_fields(source: &Object) -> Result<BTreeMap<String, String>, ErrorAnswer> {
    let fields: BTreeMap<&str, Option<&str>> = source
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    checked_source(&fields)
        .map_err(|refused| ErrorAnswer::invalid(&format!("/source/{}", refused.field), refused.why))
}
