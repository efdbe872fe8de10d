//! `cfq subscriptions`: the account's event subscriptions, listed (all,
//! or one queue's) and shown.

use cf_queues::event_subscriptions::EventSubscription;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::args::{SubscriptionInfoArgs, SubscriptionListArgs};
use crate::exit::{Code, Failure};
use crate::output::{Output, text, yes_no};
use crate::session::{Account, Session};
use crate::stderr::note;

/// A subscription as `list` and `info` print it in JSON: the API's own
/// object, field for field.
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
    let out = account.out;
    if out.json() {
        out.json_line(&SubscriptionLine::of(&subscription))?;
        return Ok(Code::Ok);
    }
    let s = &subscription;
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
