//! Event subscriptions on the wire: the requests of the generated client
//! made from the crate's types, checked before anything is sent, and the
//! crate's types made from its answers. The one place these conversions
//! are written; the operations (`operations.rs`) call them.

use super::source::{EventSource, SOURCE_TYPES};
use super::subscription::{EventSubscription, EventSubscriptionChange, NewEventSubscription};
use crate::error::{Error, Result, built};
use crate::limits::Limits;
use crate::raw::types;

/// `POST .../event_subscriptions/subscriptions`: `new` into the queue
/// `queue_id`, named `default_name` unless `new` names it.
pub(crate) fn create_request(
    new: &NewEventSubscription,
    queue_id: &str,
    default_name: String,
    limits: &Limits,
) -> Result<types::CreateEventSubscriptionRequest> {
    let name = match &new.name {
        Some(name) => check_name(name)?.to_owned(),
        None => default_name,
    };
    built(
        types::CreateEventSubscriptionRequest::builder()
            .name(Some(name))
            .enabled(new.enabled)
            .source(source_request(&new.source)?)
            .destination(destination(queue_id, limits)?)
            .events(check_events(&new.events)?.to_vec()),
    )
}

/// `PATCH .../subscriptions/{id}`: the fields `change` sets.
pub(crate) fn update_request(
    change: &EventSubscriptionChange,
    limits: &Limits,
) -> Result<types::UpdateEventSubscriptionRequest> {
    if change.is_empty() {
        return Err(Error::invalid(
            "change",
            "no field to change was given (name, enabled, events or destination)",
        ));
    }
    let name = change.name.as_deref().map(check_name).transpose()?;
    let events = match &change.events {
        Some(events) => check_events(events)?.to_vec(),
        None => Vec::new(),
    };
    let destination = change
        .queue_id
        .as_deref()
        .map(|id| destination(id, limits))
        .transpose()?;
    built(
        types::UpdateEventSubscriptionRequest::builder()
            .name(name.map(str::to_owned))
            .enabled(change.enabled)
            .events(events)
            .destination(destination),
    )
}

/// A name is any text but an empty one (wrangler's default holds a space,
/// so the queue-name rule does not apply).
fn check_name(name: &str) -> Result<&str> {
    if name.trim().is_empty() {
        return Err(Error::invalid("name", "must not be empty"));
    }
    Ok(name)
}

/// At least one event type, none empty.
fn check_events(events: &[String]) -> Result<&[String]> {
    if events.is_empty() {
        return Err(Error::invalid(
            "events",
            "at least one event type is needed, such as namespace.created",
        ));
    }
    if let Some(i) = events.iter().position(|e| e.trim().is_empty()) {
        return Err(Error::invalid(format!("events[{i}]"), "must not be empty"));
    }
    Ok(events)
}

fn destination(queue_id: &str, limits: &Limits) -> Result<types::EventDestination> {
    limits.check_id("destination.queue_id", queue_id)?;
    built(
        types::EventDestination::builder()
            .queue_id(queue_id.to_owned())
            .type_(types::EventDestinationType::QueuesQueue),
    )
}

/// The source as the create request's union holds it; the field naming
/// its resource must not be empty, and an [`EventSource::Other`] cannot be
/// sent.
fn source_request(source: &EventSource) -> Result<types::EventSourceRequest> {
    if let (Some(field), Some(resource)) = (source.resource_field(), source.resource())
        && resource.trim().is_empty()
    {
        return Err(Error::invalid(
            format!("source.{field}"),
            format!("must not be empty for a {} source", source.type_name()),
        ));
    }
    Ok(match source {
        EventSource::Images => built::<types::EventSourceImages, _>(
            types::EventSourceImages::builder().type_(types::EventSourceImagesType::Images),
        )?
        .into(),
        EventSource::Kv => built::<types::EventSourceKv, _>(
            types::EventSourceKv::builder().type_(types::EventSourceKvType::Kv),
        )?
        .into(),
        EventSource::R2 => built::<types::EventSourceR2, _>(
            types::EventSourceR2::builder().type_(types::EventSourceR2Type::R2),
        )?
        .into(),
        EventSource::SuperSlurper => built::<types::EventSourceSuperSlurper, _>(
            types::EventSourceSuperSlurper::builder()
                .type_(types::EventSourceSuperSlurperType::SuperSlurper),
        )?
        .into(),
        EventSource::Vectorize => built::<types::EventSourceVectorize, _>(
            types::EventSourceVectorize::builder()
                .type_(types::EventSourceVectorizeType::Vectorize),
        )?
        .into(),
        EventSource::WorkersAiModel { model_name } => built::<types::EventSourceWorkersAiModel, _>(
            types::EventSourceWorkersAiModel::builder()
                .model_name(model_name.clone())
                .type_(types::EventSourceWorkersAiModelType::WorkersAiModel),
        )?
        .into(),
        EventSource::WorkersBuildsWorker { worker_name } => {
            built::<types::EventSourceWorkersBuildsWorker, _>(
                types::EventSourceWorkersBuildsWorker::builder()
                    .worker_name(worker_name.clone())
                    .type_(types::EventSourceWorkersBuildsWorkerType::WorkersBuildsWorker),
            )?
            .into()
        }
        EventSource::WorkersScript { script_tag } => built::<types::EventSourceWorkersScript, _>(
            types::EventSourceWorkersScript::builder()
                .script_tag(script_tag.clone())
                .type_(types::EventSourceWorkersScriptType::WorkersScript),
        )?
        .into(),
        EventSource::WorkflowsWorkflow { workflow_name } => {
            built::<types::EventSourceWorkflowsWorkflow, _>(
                types::EventSourceWorkflowsWorkflow::builder()
                    .workflow_name(workflow_name.clone())
                    .type_(types::EventSourceWorkflowsWorkflowType::WorkflowsWorkflow),
            )?
            .into()
        }
        EventSource::Other(_) => {
            return Err(Error::invalid(
                "source",
                format!(
                    "a source of type {:?} cannot be sent by this crate; the known types are {}",
                    source.type_name(),
                    SOURCE_TYPES.join(", ")
                ),
            ));
        }
    })
}

impl From<types::EventSubscription> for EventSubscription {
    fn from(s: types::EventSubscription) -> Self {
        let destination = s.destination.unwrap_or_default();
        EventSubscription {
            id: s.id.filter(|id| !id.is_empty()),
            name: s.name,
            enabled: s.enabled,
            source: EventSource::from_fields(s.source),
            queue_id: destination.queue_id.filter(|id| !id.is_empty()),
            destination_type: destination.type_,
            events: s.events.unwrap_or_default(),
            created_at: s.created_at,
            modified_at: s.modified_at,
        }
    }
}

/// The subscription's id as a string for the logs: never more than the
/// answer held, and `?` for none.
pub(crate) fn id_or_unknown(subscription: &EventSubscription) -> &str {
    subscription.id.as_deref().unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The source an answer's `source` object reads as.
    fn reads(value: Value) -> EventSource {
        match value {
            Value::Object(map) => EventSource::from_fields(map),
            _ => EventSource::Other(serde_json::Map::new()),
        }
    }

    fn limits() -> Limits {
        Limits::default()
    }

    #[test]
    fn a_create_request_is_written_as_wrangler_writes_it() {
        let new = NewEventSubscription::new(
            EventSource::WorkersAiModel {
                model_name: "@cf/meta/m".into(),
            },
            ["batch.succeeded", "batch.failed"],
        );
        let body = create_request(&new, "0123abcd", "orders workersAi.model".into(), &limits())
            .expect("valid");
        assert_eq!(
            serde_json::to_value(&body).expect("serializes"),
            json!({
                "name": "orders workersAi.model",
                "source": {"type": "workersAi.model", "model_name": "@cf/meta/m"},
                "destination": {"type": "queues.queue", "queue_id": "0123abcd"},
                "events": ["batch.succeeded", "batch.failed"]
            })
        );
        let named = NewEventSubscription::new(EventSource::Kv, ["namespace.created"])
            .name("kv feed")
            .enabled(false);
        let body = create_request(&named, "q1", "unused".into(), &limits()).expect("valid");
        assert_eq!(
            serde_json::to_value(&body).expect("serializes"),
            json!({
                "name": "kv feed", "enabled": false, "source": {"type": "kv"},
                "destination": {"type": "queues.queue", "queue_id": "q1"},
                "events": ["namespace.created"]
            })
        );
    }

    fn refused(result: Result<impl std::fmt::Debug>) -> (String, String) {
        match result {
            Err(Error::InvalidInput { field, reason }) => (field, reason),
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn bad_input_is_refused_naming_the_field() {
        let create = |new: NewEventSubscription, queue: &str| {
            create_request(&new, queue, "d".into(), &limits())
        };
        let none: [&str; 0] = [];
        assert_eq!(
            refused(create(
                NewEventSubscription::new(EventSource::Kv, none),
                "q"
            ))
            .0,
            "events"
        );
        assert_eq!(
            refused(create(
                NewEventSubscription::new(EventSource::Kv, ["a", " "]),
                "q"
            ))
            .0,
            "events[1]"
        );
        assert_eq!(
            refused(create(
                NewEventSubscription::new(EventSource::Kv, ["a"]).name(""),
                "q"
            ))
            .0,
            "name"
        );
        assert_eq!(
            refused(create(
                NewEventSubscription::new(EventSource::Kv, ["a"]),
                "not/an id"
            ))
            .0,
            "destination.queue_id"
        );
        let blank = EventSource::WorkflowsWorkflow {
            workflow_name: String::new(),
        };
        assert_eq!(
            refused(create(NewEventSubscription::new(blank, ["a"]), "q")).0,
            "source.workflow_name"
        );
        let email = reads(json!({"type": "email.sending", "zone_id": "z"}));
        let (field, reason) = refused(create(NewEventSubscription::new(email, ["a"]), "q"));
        assert_eq!(field, "source");
        assert!(
            reason.contains("\"email.sending\"") && reason.contains("workflows.workflow"),
            "{reason}"
        );
        assert_eq!(
            refused(update_request(&EventSubscriptionChange::new(), &limits())).0,
            "change"
        );
        let no_events: [&str; 0] = [];
        assert_eq!(
            refused(update_request(
                &EventSubscriptionChange::new().events(no_events),
                &limits()
            ))
            .0,
            "events"
        );
    }

    #[test]
    fn an_update_sends_only_the_fields_set() {
        let change = EventSubscriptionChange::new().enabled(false);
        let body = update_request(&change, &limits()).expect("valid");
        assert_eq!(
            serde_json::to_value(&body).expect("serializes"),
            json!({"enabled": false})
        );
        let change = EventSubscriptionChange::new()
            .name("renamed")
            .events(["a"])
            .destination("q2");
        let body = update_request(&change, &limits()).expect("valid");
        assert_eq!(
            serde_json::to_value(&body).expect("serializes"),
            json!({"name": "renamed", "events": ["a"],
                   "destination": {"type": "queues.queue", "queue_id": "q2"}})
        );
    }

    #[test]
    fn an_answer_reads_tolerantly() {
        let answer: types::EventSubscription = serde_json::from_value(json!({
            "id": "s1", "name": "orders kv", "enabled": true,
            "source": {"type": "kv"},
            "destination": {"type": "queues.queue", "queue_id": "q1"},
            "events": ["namespace.created"],
            "created_at": "2026-12-06T10:00:00.000Z", "modified_at": "2026-12-06T10:00:00.000Z"
        }))
        .expect("decodes");
        let read = EventSubscription::from(answer);
        assert_eq!(read.id.as_deref(), Some("s1"));
        assert_eq!(read.source, EventSource::Kv);
        assert_eq!(read.queue_id.as_deref(), Some("q1"));
        assert_eq!(read.destination_type.as_deref(), Some("queues.queue"));
        assert_eq!(read.events, ["namespace.created"]);
        let bare = EventSubscription::from(types::EventSubscription::default());
        assert_eq!(bare.id, None);
        assert_eq!(bare.source, EventSource::Other(serde_json::Map::new()));
        assert!(bare.events.is_empty());
        assert_eq!(id_or_unknown(&bare), "?");
    }
}
