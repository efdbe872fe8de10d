//! `cfq consumer`: enable, show and disable a queue's HTTP pull consumer.

use std::time::Duration;

use cf_queues::resources::{ConsumerInfo, HttpPullConsumer, HttpPullSettings, WorkerConsumer};
use serde::Serialize;

use crate::args::{ConsumerInfoArgs, DisableArgs, EnableArgs};
use crate::confirm::confirm;
use crate::exit::{Code, Failure};
use crate::flag_defaults::Optionally;
use crate::session::Session;
use crate::shell_words::QueueFlag;
use crate::shell_words::{command_line, looks_like_id};
use crate::stderr::note;

/// A queue's consumer as `consumer enable` and `consumer info` print it in
/// JSON: the API's field names (`type`, `dead_letter_queue`, `settings`
/// with `retry_delay` in seconds and `visibility_timeout_ms`).
#[derive(Debug, Serialize)]
struct ConsumerLine<'a> {
    queue: &'a str,
    queue_name: Option<&'a str>,
    /// Whether HTTP pull is enabled: the queue's consumer is its HTTP pull
    /// consumer.
    http_pull: bool,
    /// The queue's consumer, of whatever kind; `null` for none.
    consumer: Option<ConsumerFields<'a>>,
    /// For `enable`: `enabled` (it was not) or `updated` (its settings).
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<&'static str>,
}

#[derive(Debug, Serialize)]
struct ConsumerFields<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    consumer_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_on: Option<&'a str>,
    /// A Worker's script (`null` when the API gave none); absent for
    /// other kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    script_name: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dead_letter_queue: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    settings: Option<SettingsFields>,
}

/// Every setting the API gives for the kind, `null` when it gave none.
#[derive(Debug, Serialize)]
struct SettingsFields {
    batch_size: Option<u32>,
    max_retries: Option<u32>,
    retry_delay: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    visibility_timeout_ms: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_concurrency: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_wait_time_ms: Option<Option<u64>>,
}

fn millis(d: Option<Duration>) -> Option<u64> {
    d.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl<'a> ConsumerFields<'a> {
    fn http_pull(c: &'a HttpPullConsumer) -> ConsumerFields<'a> {
        let s = &c.settings;
        ConsumerFields {
            kind: "http_pull",
            consumer_id: c.consumer_id.as_deref(),
            created_on: c.created_on.as_deref(),
            script_name: None,
            dead_letter_queue: Some(s.dead_letter_queue.as_deref()),
            settings: Some(SettingsFields {
                batch_size: s.batch_size,
                max_retries: s.max_retries,
                retry_delay: s.retry_delay.map(|d| d.as_secs()),
                visibility_timeout_ms: Some(millis(s.visibility_timeout)),
                max_concurrency: None,
                max_wait_time_ms: None,
            }),
        }
    }

    fn worker(w: &'a WorkerConsumer) -> ConsumerFields<'a> {
        ConsumerFields {
            kind: "worker",
            consumer_id: w.consumer_id.as_deref(),
            created_on: w.created_on.as_deref(),
            script_name: Some(w.script_name.as_deref()),
            dead_letter_queue: Some(w.dead_letter_queue.as_deref()),
            settings: Some(SettingsFields {
                batch_size: w.batch_size,
                max_retries: w.max_retries,
                retry_delay: w.retry_delay.map(|d| d.as_secs()),
                visibility_timeout_ms: None,
                max_concurrency: Some(w.max_concurrency),
                max_wait_time_ms: Some(millis(w.max_wait_time)),
            }),
        }
    }

    fn of(consumer: &'a ConsumerInfo) -> ConsumerFields<'a> {
        match consumer {
            ConsumerInfo::HttpPull(c) => ConsumerFields::http_pull(c),
            ConsumerInfo::Worker(w) => ConsumerFields::worker(w),
            other => ConsumerFields {
                kind: other.kind(),
                consumer_id: other.consumer_id(),
                created_on: None,
                script_name: None,
                dead_letter_queue: None,
                settings: None,
            },
        }
    }
}

/// The queue's name when the handle or its consumer knows it.
fn queue_name<'a>(session: &'a Session, consumer: Option<&'a HttpPullConsumer>) -> Option<&'a str> {
    session
        .queue
        .name()
        .or_else(|| consumer.and_then(|c| c.queue_name.as_deref()))
        .filter(|n| !n.is_empty())
}

/// How the queue is named for people: `orders (9a78…)`, or its id.
fn shown(session: &Session, name: Option<&str>) -> String {
    let id = session.queue.id();
    match name {
        Some(name) if name != id => format!("{name} ({id})"),
        _ => id.to_owned(),
    }
}

/// The name of the dead-letter queue given, as the API takes it.
///
/// `--dead-letter-queue` with an id's shape that is the id of one of the
/// account's queues stands for that queue: sent as an id, it would name a
/// new queue after the id (Cloudflare creates a missing dead-letter queue).
/// One GET for such a value, none for a plain name.
async fn dead_letter_name(session: &Session, args: &EnableArgs) -> Result<Option<String>, Failure> {
    if let Some(name) = &args.dead_letter_queue_name {
        return Ok(Some(name.clone()));
    }
    let (value, forced_id) = match (&args.dead_letter_queue, &args.dead_letter_queue_id) {
        (Some(value), _) if looks_like_id(value) => (value, false),
        (Some(name), _) => return Ok(Some(name.clone())),
        (None, Some(id)) => (id, true),
        (None, None) => return Ok(None),
    };
    let queue = session.client.queue(value).map_err(|e| {
        Failure::call(&e, &session.context()).with_hint("--dead-letter-queue-id takes a queue id")
    })?;
    let context = session.context_for(&queue);
    match queue.info().await {
        Ok(info) => match info.queue_name.filter(|n| !n.is_empty()) {
            Some(name) => Ok(Some(name)),
            None => Err(Failure::new(
                Code::Api,
                format_args!("the API gave no name for the dead-letter queue {value}"),
            )
            .with_hint("name it with --dead-letter-queue-name")),
        },
        Err(e) if e.is_not_found() && !forced_id => Ok(Some(value.clone())),
        Err(e) => {
            let failure = Failure::call(&e, &context);
            Err(if e.is_not_found() {
                failure.with_hint(format!(
                    "no queue has the id {value} given as the dead-letter queue: `cfq queues \
                     list` shows the account's queues; --dead-letter-queue-name NAME names (and \
                     creates) one by name"
                ))
            } else {
                failure
            })
        }
    }
}

pub async fn enable(session: &Session, args: &EnableArgs) -> Result<Code, Failure> {
    // The settings not given are kept, as `queues update` keeps them: the
    // library's enable sets exactly the settings it is handed, and a
    // forgotten --dead-letter-queue would otherwise drop the dead-letter
    // queue, and with it every message that runs out of retries.
    let current = session.answer(session.queue.http_pull().await)?;
    let mut settings = current
        .as_ref()
        .map_or_else(HttpPullSettings::new, |c| c.settings.clone())
        .optionally(args.batch_size, HttpPullSettings::batch_size)
        .optionally(args.max_retries, HttpPullSettings::max_retries)
        .optionally(args.retry_delay, HttpPullSettings::retry_delay)
        .optionally(
            args.visibility_timeout,
            HttpPullSettings::visibility_timeout,
        );
    if let Some(name) = dead_letter_name(session, args).await? {
        settings = settings.dead_letter_queue(name);
    }
    let enabled = session.answer(session.queue.enable_http_pull(settings).await)?;
    let action = if current.is_some() {
        "updated"
    } else {
        "enabled"
    };
    let name = queue_name(session, Some(&enabled));
    if session.out.json() {
        session.out.json_line(&ConsumerLine {
            queue: session.queue.id(),
            queue_name: name,
            http_pull: true,
            consumer: Some(ConsumerFields::http_pull(&enabled)),
            action: Some(action),
        })?;
    } else {
        let verb = if current.is_some() {
            "HTTP pull settings changed on"
        } else {
            "HTTP pull enabled on"
        };
        session
            .out
            .line(&format!("{verb} queue {}", shown(session, name)))?;
        print_http_pull(session, &enabled)?;
    }
    if current.is_none() {
        note(
            "Cloudflare can answer pulls with \"HTTP pull not enabled\" for up to a minute after \
             it was enabled",
        );
    }
    Ok(Code::Ok)
}

pub async fn info(session: &Session, _args: &ConsumerInfoArgs) -> Result<Code, Failure> {
    let consumers = session.answer(session.queue.consumers().await)?;
    let consumer = consumers.first();
    let name = queue_name(session, consumer.and_then(ConsumerInfo::as_http_pull));
    if session.out.json() {
        session.out.json_line(&ConsumerLine {
            queue: session.queue.id(),
            queue_name: name,
            http_pull: consumer.and_then(ConsumerInfo::as_http_pull).is_some(),
            consumer: consumer.map(ConsumerFields::of),
            action: None,
        })?;
        return Ok(Code::Ok);
    }
    let queue = shown(session, name);
    match consumer {
        Some(ConsumerInfo::HttpPull(c)) => {
            session
                .out
                .line(&format!("queue {queue}: HTTP pull enabled"))?;
            print_http_pull(session, c)?;
        }
        Some(ConsumerInfo::Worker(w)) => {
            let worker = match &w.script_name {
                Some(script) => format!("the Worker {script:?}"),
                None => "a Worker".to_owned(),
            };
            session.out.line(&format!(
                "queue {queue}: consumed by {worker}; HTTP pull is not enabled (a queue has one \
                 consumer)"
            ))?;
            let fields = [
                ("batch size", number(w.batch_size)),
                ("max retries", number(w.max_retries)),
                ("retry delay", duration(w.retry_delay)),
                ("max concurrency", number(w.max_concurrency)),
                ("max wait time", duration(w.max_wait_time)),
                dead_letter(w.dead_letter_queue.as_deref()),
            ];
            print_fields(session, &fields)?;
        }
        Some(other) => {
            session.out.line(&format!(
                "queue {queue}: consumed by a consumer of type {:?}; HTTP pull is not enabled",
                other.kind()
            ))?;
        }
        None => {
            session.out.line(&format!(
                "queue {queue}: no consumer; HTTP pull is not enabled (`cfq consumer enable {}` \
                 enables it)",
                command_line(&session.queue_words(QueueFlag::Queue))
            ))?;
        }
    }
    Ok(Code::Ok)
}

#[derive(Debug, Serialize)]
struct Disabled<'a> {
    queue: &'a str,
    queue_name: Option<&'a str>,
    /// Whether an HTTP pull consumer was deleted; `false` when HTTP pull
    /// was not enabled (nothing was changed).
    disabled: bool,
}

pub async fn disable(session: &Session, args: &DisableArgs) -> Result<Code, Failure> {
    let consumers = session.answer(session.queue.consumers().await)?;
    let current = consumers.first().and_then(ConsumerInfo::as_http_pull);
    let name = queue_name(session, current);
    if current.is_none() {
        // Nothing to ask about: nothing would change.
        return report_disabled(session, name, false, consumers.first());
    }
    if !args.yes {
        let (what, expected) = match name {
            Some(name) => ("the queue's name", name),
            None => ("the queue id", session.queue.id()),
        };
        confirm(
            &format!(
                "This disables HTTP pull on queue {}: pulls fail until it is enabled again, and \
                 its settings (retries, dead-letter queue, ...) are lost.",
                shown(session, name)
            ),
            what,
            expected,
            "HTTP pull stays enabled",
        )?;
    }
    let disabled = session.answer(session.queue.disable_http_pull().await)?;
    report_disabled(session, name, disabled, None)
}

fn report_disabled(
    session: &Session,
    name: Option<&str>,
    disabled: bool,
    other: Option<&ConsumerInfo>,
) -> Result<Code, Failure> {
    if session.out.json() {
        session.out.json_line(&Disabled {
            queue: session.queue.id(),
            queue_name: name,
            disabled,
        })?;
    } else if disabled {
        session.out.line(&format!(
            "HTTP pull disabled on queue {}",
            shown(session, name)
        ))?;
    } else {
        session.out.line(&format!(
            "HTTP pull was not enabled on queue {}; nothing was changed",
            shown(session, name)
        ))?;
    }
    if let Some(other) = other {
        note(format_args!(
            "the queue is consumed by a consumer of type {:?}, which cfq does not remove",
            other.kind()
        ));
    }
    Ok(Code::Ok)
}

fn print_http_pull(session: &Session, c: &HttpPullConsumer) -> Result<(), Failure> {
    let s = &c.settings;
    let fields = [
        ("batch size", number(s.batch_size)),
        ("max retries", number(s.max_retries)),
        ("retry delay", duration(s.retry_delay)),
        ("visibility timeout", duration(s.visibility_timeout)),
        dead_letter(s.dead_letter_queue.as_deref()),
    ];
    print_fields(session, &fields)
}

fn print_fields(session: &Session, fields: &[(&str, String)]) -> Result<(), Failure> {
    for (key, value) in fields {
        session.out.line(&format!("  {key:<18} {value}"))?;
    }
    Ok(())
}

/// A setting the API left out is Cloudflare's default.
fn number(value: Option<u32>) -> String {
    value.map_or_else(|| "default".to_owned(), |n| n.to_string())
}

fn duration(value: Option<Duration>) -> String {
    value.map_or_else(
        || "default".to_owned(),
        |d| humantime::format_duration(d).to_string(),
    )
}

/// The dead-letter queue's line of a consumer's table.
fn dead_letter(name: Option<&str>) -> (&'static str, String) {
    let shown = name.map_or_else(
        || "none (messages out of retries are deleted)".to_owned(),
        str::to_owned,
    );
    ("dead-letter queue", shown)
}
