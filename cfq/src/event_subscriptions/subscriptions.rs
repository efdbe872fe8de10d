//! `cfq subscriptions`: the account's event subscriptions, listed (all,
//! or one queue's), shown, created, changed and deleted.

use cf_queues::event_subscriptions::{
    EventSource, EventSubscription, EventSubscriptionChange, NewEventSubscription,
    resource_field_of,
};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::args::{
    QueueRef, SubscriptionCreateArgs, SubscriptionDeleteArgs, SubscriptionInfoArgs,
    SubscriptionListArgs, SubscriptionUpdateArgs,
};
use crate::exit::{Code, Failure};
use crate::output::{Output, text, yes_no};
use crate::session::{Account, Session, resolve};
use crate::stderr::note;

/// A subscription as `list`, `info`, `create` and `update` print it in
/// JSON: the API's fields, with the source as the client reads it (its
/// type and resource; an unknown source whole).
#[derive(Debug, Serialize)]
struct SubscriptionLine<'a> {
    id: Option<&'a str>,
    name: Option<&'a str>,
    enabled: Option<bool>,
    source: Map<String, Value>,
    destination: DestinationLine<'a>,
    events: &'a [String],
    created_at: Option<&'a str>,
    modified_at: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct DestinationLine<'a> {
    #[serde(rename = "type")]
    kind: Option<&'a str>,
    queue_id: Option<&'a str>,
}

impl<'a> SubscriptionLine<'a> {
    fn of(s: &'a EventSubscription) -> SubscriptionLine<'a> {
        SubscriptionLine {
            id: s.id.as_deref(),
            name: s.name.as_deref(),
            enabled: s.enabled,
            source: s.source.fields(),
            destination: DestinationLine {
                kind: s.destination_type.as_deref(),
                queue_id: s.queue_id.as_deref(),
            },
            events: &s.events,
            created_at: s.created_at.as_deref(),
            modified_at: s.modified_at.as_deref(),
        }
    }
}

/// Every subscription of the account.
pub async fn list(account: &Account, _args: &SubscriptionListArgs) -> Result<Code, Failure> {
    let listed = account.answer(account.client.event_subscriptions().await)?;
    print_list(account.out, &listed, None)
}

/// The subscriptions into the session's queue.
pub async fn list_of_queue(
    session: &Session,
    _args: &SubscriptionListArgs,
) -> Result<Code, Failure> {
    let listed = session.answer(session.queue.event_subscriptions().await)?;
    let queue = session.queue.name().unwrap_or(session.queue.id());
    print_list(session.out, &listed, Some(queue))
}

fn print_list(
    out: Output,
    listed: &[EventSubscription],
    queue: Option<&str>,
) -> Result<Code, Failure> {
    if out.json() {
        for subscription in listed {
            out.json_line(&SubscriptionLine::of(subscription))?;
        }
        return Ok(Code::Ok);
    }
    if listed.is_empty() {
        match queue {
            Some(queue) => note(format_args!("no event subscriptions into queue {queue}")),
            None => note("no event subscriptions in the account"),
        }
        return Ok(Code::Ok);
    }
    let rows: Vec<Vec<String>> = listed
        .iter()
        .map(|s| {
            vec![
                text(s.id.as_deref()),
                text(s.name.as_deref()),
                text(Some(s.source.type_name())),
                text(s.source.resource()),
                yes_no(s.enabled),
                text(s.queue_id.as_deref()),
                s.events.join(","),
            ]
        })
        .collect();
    out.table(
        &[
            "ID", "NAME", "SOURCE", "RESOURCE", "ENABLED", "QUEUE", "EVENTS",
        ],
        &rows,
    )?;
    Ok(Code::Ok)
}

/// One subscription by its id.
pub async fn info(account: &Account, args: &SubscriptionInfoArgs) -> Result<Code, Failure> {
    let subscription = account.answer(account.client.event_subscription(&args.id).await)?;
    print_one(account.out, &subscription)
}

/// A subscription into the session's queue.
pub async fn create(session: &Session, args: &SubscriptionCreateArgs) -> Result<Code, Failure> {
    let source = source_of(&args.source, args.resource.as_deref())?;
    let events = args.events.iter().map(|e| e.trim().to_owned());
    let mut new = NewEventSubscription::new(source, events.filter(|e| !e.is_empty()));
    if let Some(name) = &args.name {
        new = new.name(name);
    }
    if args.disabled {
        new = new.enabled(false);
    }
    let created = session.answer(session.queue.create_event_subscription(new).await)?;
    print_one(session.out, &created)
}

/// The source a type and a resource name: the resource is required by the
/// sources of one resource (as wrangler's flags are), and refused by the
/// others.
fn source_of(kind: &str, resource: Option<&str>) -> Result<EventSource, Failure> {
    let mut fields = Map::new();
    fields.insert("type".to_owned(), Value::from(kind));
    match (resource_field_of(kind), resource) {
        (Some(field), Some(resource)) => {
            fields.insert(field.to_owned(), Value::from(resource));
        }
        (Some(field), None) => {
            return Err(Failure::usage(format_args!(
                "--resource is required for a {kind} source (its {field})"
            )));
        }
        (None, Some(_)) => {
            return Err(Failure::usage(format_args!(
                "--resource does not apply to a {kind} source, which names no resource"
            )));
        }
        (None, None) => {}
    }
    Ok(EventSource::from_fields(fields))
}

/// Changes the fields given of a subscription.
pub async fn update(account: &Account, args: &SubscriptionUpdateArgs) -> Result<Code, Failure> {
    let mut change = EventSubscriptionChange::new();
    if let Some(name) = &args.name {
        change = change.name(name);
    }
    if let Some(events) = &args.events {
        change = change.events(events.iter().map(|e| e.trim().to_owned()));
    }
    if args.enable || args.disable {
        change = change.enabled(args.enable);
    }
    if let Some(to) = &args.to {
        let queue = resolve(&account.client, &QueueRef::Either(to.clone())).await?;
        change = change.destination(queue.id());
    }
    let changed = account.answer(
        account
            .client
            .update_event_subscription(&args.id, change)
            .await,
    )?;
    print_one(account.out, &changed)
}

#[derive(Debug, Serialize)]
struct Deleted<'a> {
    id: &'a str,
    deleted: bool,
}

/// Deletes a subscription; nothing it delivered is touched.
pub async fn delete(account: &Account, args: &SubscriptionDeleteArgs) -> Result<Code, Failure> {
    account.answer(account.client.delete_event_subscription(&args.id).await)?;
    let out = account.out;
    if out.json() {
        out.json_line(&Deleted {
            id: &args.id,
            deleted: true,
        })?;
    } else {
        out.line(&format!("deleted event subscription {}", args.id))?;
    }
    Ok(Code::Ok)
}

/// One subscription: a JSON line, or its fields one a line for people.
fn print_one(out: Output, subscription: &EventSubscription) -> Result<Code, Failure> {
    if out.json() {
        out.json_line(&SubscriptionLine::of(subscription))?;
        return Ok(Code::Ok);
    }
    let s = subscription;
    let fields = [
        ("name", text(s.name.as_deref())),
        ("id", text(s.id.as_deref())),
        ("source", text(Some(s.source.type_name()))),
        ("resource", text(s.source.resource())),
        ("queue", text(s.queue_id.as_deref())),
        ("events", s.events.join(", ")),
        ("enabled", yes_no(s.enabled)),
        ("created", text(s.created_at.as_deref())),
        ("modified", text(s.modified_at.as_deref())),
    ];
    for (key, value) in fields {
        out.line(&format!("{key:<10} {value}"))?;
    }
    Ok(Code::Ok)
}
