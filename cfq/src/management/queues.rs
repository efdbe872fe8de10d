//! `cfq queues`: list, show, create, update and delete queues.

use std::time::Duration;

use cf_queues::resources::{ConsumerInfo, QueueSettings};
use cf_queues::response::QueueInfo;
use serde::Serialize;

use crate::args::{CreateArgs, DeleteArgs, InfoArgs, ListArgs, UpdateArgs};
use crate::confirm::confirm;
use crate::exit::{Code, Failure};
use crate::flag_defaults::Optionally;
use crate::output::{Output, text, yes_no};
use crate::session::{Account, Session};
use crate::shell_words::command_line;
use crate::shell_words::{QueueFlag, queue_words};
use crate::stderr::note;

/// A queue as `list`, `info`, `create` and `update` print it in JSON: the
/// API's own field names, the durations in seconds as the API has them.
#[derive(Debug, Serialize)]
struct QueueLine<'a> {
    queue_id: Option<&'a str>,
    queue_name: Option<&'a str>,
    created_on: Option<&'a str>,
    modified_on: Option<&'a str>,
    /// The kind of its consumer (`http_pull`, `worker`, or another kind
    /// the API names); `null` when the API listed none.
    consumer: Option<&'a str>,
    settings: SettingsLine,
    consumers_total_count: u32,
    producers_total_count: u32,
}

#[derive(Debug, Serialize)]
struct SettingsLine {
    delivery_delay: Option<u64>,
    delivery_paused: Option<bool>,
    message_retention_period: Option<u64>,
}

impl<'a> QueueLine<'a> {
    fn of(info: &'a QueueInfo) -> QueueLine<'a> {
        let settings = &info.settings;
        QueueLine {
            queue_id: info.queue_id.as_deref(),
            queue_name: info.queue_name.as_deref(),
            created_on: info.created_on.as_deref(),
            modified_on: info.modified_on.as_deref(),
            consumer: info.consumers.first().map(ConsumerInfo::kind),
            settings: SettingsLine {
                delivery_delay: settings.delivery_delay.map(|d| d.as_secs()),
                delivery_paused: settings.delivery_paused,
                message_retention_period: settings.message_retention_period.map(|d| d.as_secs()),
            },
            consumers_total_count: info.consumers_total_count,
            producers_total_count: info.producers_total_count,
        }
    }
}

pub async fn list(account: &Account, _args: &ListArgs) -> Result<Code, Failure> {
    let queues = account.answer(account.client.queues().await)?;
    let out = account.out;
    if out.json() {
        for info in &queues {
            out.json_line(&QueueLine::of(info))?;
        }
        return Ok(Code::Ok);
    }
    if queues.is_empty() {
        note("no queues; `cfq queues create NAME` creates one");
        return Ok(Code::Ok);
    }
    let rows: Vec<Vec<String>> = queues
        .iter()
        .map(|info| {
            let settings = &info.settings;
            vec![
                text(info.queue_id.as_deref()),
                text(info.queue_name.as_deref()),
                consumer_kind(info),
                duration(settings.delivery_delay),
                duration(settings.message_retention_period),
                yes_no(settings.delivery_paused),
            ]
        })
        .collect();
    out.table(
        &["ID", "NAME", "CONSUMER", "DELAY", "RETENTION", "PAUSED"],
        &rows,
    )?;
    Ok(Code::Ok)
}

pub async fn info(session: &Session, _args: &InfoArgs) -> Result<Code, Failure> {
    let info = session.answer(session.queue.info().await)?;
    print_queue(session.out, &info)?;
    Ok(Code::Ok)
}

/// The delay and retention flags `create` and `update` share.
fn timing(delivery_delay: Option<Duration>, retention: Option<Duration>) -> QueueSettings {
    QueueSettings::new()
        .optionally(delivery_delay, QueueSettings::delivery_delay)
        .optionally(retention, QueueSettings::message_retention_period)
}

pub async fn create(account: &Account, args: &CreateArgs) -> Result<Code, Failure> {
    let mut context = account.context();
    context.queue_name = Some(args.name.clone());
    let mut settings = timing(args.delivery_delay, args.retention);
    if args.paused {
        settings = settings.delivery_paused(true);
    }
    let with_settings = !settings.is_empty();
    // The settings travel in the create, as wrangler sends them; the client
    // applies them with one edit when the answer does not show them.
    let queue = account
        .client
        .create_queue_with(&args.name, settings)
        .await
        .map_err(|e| {
            let failure = Failure::call(&e, &context);
            if with_settings {
                failure.with_hint(format_args!(
                    "if queue {} was created, its settings may not be set: `cfq queues info \
                     --queue {}` shows them, and `cfq queues update --queue {}` with the same \
                     flags sets them",
                    args.name, args.name, args.name
                ))
            } else {
                failure
            }
        })?;
    context.queue = Some(queue.id().to_owned());
    // The settings as the API has them are one read away, and a failed read
    // fails nothing: the queue exists.
    let info = match queue.info().await {
        Ok(info) => info,
        Err(e) => {
            note(format_args!(
                "warning: the queue was created, but reading it back failed: {}",
                Failure::call(&e, &context).message
            ));
            created_only(queue.id(), &args.name)
        }
    };
    let out = account.out;
    if out.json() {
        out.json_line(&QueueLine::of(&info))?;
    } else {
        out.line(&format!("created queue {}: {}", args.name, queue.id()))?;
        out.line(&format!(
            "  export CFQ_QUEUE={}",
            command_line(&[queue.id().to_owned()])
        ))?;
    }
    note(format_args!(
        "next: `cfq consumer enable {}` enables HTTP pull, which pulling needs",
        command_line(&queue_words(QueueFlag::Queue, Some(&args.name), queue.id()))
    ));
    Ok(Code::Ok)
}

/// A queue known only by the create's answer.
fn created_only(id: &str, name: &str) -> QueueInfo {
    let mut info = QueueInfo::default();
    info.queue_id = Some(id.to_owned());
    info.queue_name = Some(name.to_owned());
    info
}

pub async fn update(session: &Session, args: &UpdateArgs) -> Result<Code, Failure> {
    let mut settings = timing(args.delivery_delay, args.retention);
    if args.paused || args.resume {
        settings = settings.delivery_paused(args.paused);
    }
    let info = session.answer(session.queue.edit(settings).await)?;
    print_queue(session.out, &info)?;
    Ok(Code::Ok)
}

#[derive(Debug, Serialize)]
struct Deleted<'a> {
    queue: &'a str,
    queue_name: Option<&'a str>,
    deleted: bool,
}

pub async fn delete(session: &Session, args: &DeleteArgs) -> Result<Code, Failure> {
    let id = session.queue.id();
    let mut name = session.queue.name().map(str::to_owned);
    if !args.yes {
        // The name to type is the queue's own, read from the API when the
        // queue was named by its id: reading it also stops here, before
        // any question, a queue that does not exist.
        if name.is_none() {
            let info = session.answer(session.queue.info().await)?;
            name = info.queue_name.filter(|n| !n.is_empty());
        }
        let (what, expected) = match &name {
            Some(name) => ("the queue's name", name.as_str()),
            None => ("the queue id", id),
        };
        confirm(
            &format!(
                "This deletes queue {} ({id}) and every message in it, permanently.",
                name.as_deref().unwrap_or(id)
            ),
            what,
            expected,
            "nothing was deleted",
        )?;
    }
    session.answer(session.queue.delete().await)?;
    let out = session.out;
    if out.json() {
        out.json_line(&Deleted {
            queue: id,
            queue_name: name.as_deref(),
            deleted: true,
        })?;
    } else {
        match &name {
            Some(name) => out.line(&format!("deleted queue {name} ({id})"))?,
            None => out.line(&format!("deleted queue {id}"))?,
        }
    }
    Ok(Code::Ok)
}

/// One queue: a JSON line, or its fields one a line for people.
fn print_queue(out: Output, info: &QueueInfo) -> Result<(), Failure> {
    if out.json() {
        return out.json_line(&QueueLine::of(info));
    }
    let settings = &info.settings;
    let delivery = match settings.delivery_paused {
        Some(true) => "paused",
        Some(false) => "active",
        None => "-",
    };
    let consumer = match info.consumers.first() {
        Some(ConsumerInfo::HttpPull(_)) => "http_pull (HTTP pull enabled)".to_owned(),
        Some(ConsumerInfo::Worker(worker)) => match &worker.script_name {
            Some(script) => format!("worker {script}"),
            None => "worker".to_owned(),
        },
        Some(other) => other.kind().to_owned(),
        None => consumer_kind(info),
    };
    let fields = [
        ("name", text(info.queue_name.as_deref())),
        ("id", text(info.queue_id.as_deref())),
        ("consumer", consumer),
        ("delivery", delivery.to_owned()),
        ("delivery delay", duration(settings.delivery_delay)),
        ("retention", duration(settings.message_retention_period)),
        ("producers", info.producers_total_count.to_string()),
        ("created", text(info.created_on.as_deref())),
        ("modified", text(info.modified_on.as_deref())),
    ];
    for (key, value) in fields {
        out.line(&format!("{key:<15} {value}"))?;
    }
    Ok(())
}

/// The consumer column: its kind, `-` for none, `?` when the API counted
/// consumers it did not list.
fn consumer_kind(info: &QueueInfo) -> String {
    match info.consumers.first() {
        Some(consumer) => consumer.kind().to_owned(),
        None if info.consumers_total_count > 0 => "?".to_owned(),
        None => "-".to_owned(),
    }
}

fn duration(value: Option<Duration>) -> String {
    value.map_or_else(
        || "-".to_owned(),
        |d| humantime::format_duration(d).to_string(),
    )
}
