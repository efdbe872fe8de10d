//! Queues and consumers on the wire: the `mq_queue` and consumer objects
//! the management answers carry (and a purge of the whole queue), and the
//! request bodies that create or change them, read with Cloudflare's field
//! names and checked against the bounds of its documentation.

use serde::Serialize;
use serde_json::Value;

use crate::clock::rfc3339_ms;
use crate::http::Answer;
use crate::http::error_answer::ErrorAnswer;
use crate::http::parse::Object;
use crate::state::{
    ConsumerKind, ConsumerSpec, MAX_RETENTION_S, MIN_RETENTION_S, Page, PullSettings, QueueRecord,
    SettingsChange, WorkerSettings, bounded,
};

/// `mq_queue`: a queue with its settings and consumer. The emulator knows
/// no producers (Workers bound to the queue): the list is empty.
#[derive(Serialize)]
pub(crate) struct QueueOut<'a> {
    queue_id: &'a str,
    queue_name: &'a str,
    created_on: String,
    modified_on: String,
    producers: [(); 0],
    producers_total_count: u32,
    consumers: Vec<ConsumerOut<'a>>,
    consumers_total_count: usize,
    settings: SettingsOut,
}

#[derive(Serialize)]
struct SettingsOut {
    delivery_delay: u32,
    delivery_paused: bool,
    message_retention_period: u32,
}

impl<'a> QueueOut<'a> {
    pub(crate) fn new(record: &'a QueueRecord) -> QueueOut<'a> {
        let consumers: Vec<ConsumerOut<'a>> = record
            .consumer
            .iter()
            .map(|consumer| ConsumerOut::new(record, consumer))
            .collect();
        QueueOut {
            queue_id: &record.id,
            queue_name: &record.name,
            created_on: rfc3339_ms(record.created_ms),
            modified_on: rfc3339_ms(record.modified_ms),
            producers: [],
            producers_total_count: 0,
            consumers_total_count: consumers.len(),
            consumers,
            settings: SettingsOut {
                delivery_delay: record.settings.delivery_delay_s,
                delivery_paused: record.settings.delivery_paused,
                message_retention_period: record.settings.retention_s,
            },
        }
    }
}

/// A consumer: `mq_http-consumer-response` or `mq_worker-consumer-response`.
#[derive(Serialize)]
pub(crate) struct ConsumerOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    consumer_id: &'a str,
    created_on: String,
    queue_name: &'a str,
    /// A Worker's script under both names: `script_name` (the published
    /// description) and `script` (the live API; wrangler finds a Worker
    /// consumer by `script` or `service`).
    #[serde(skip_serializing_if = "Option::is_none")]
    script_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    script: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<&'a str>,
    /// The dead-letter queue's name, `""` when none (as the description says).
    dead_letter_queue: &'a str,
    settings: ConsumerSettingsOut,
}

#[derive(Serialize)]
#[serde(untagged)]
enum ConsumerSettingsOut {
    HttpPull {
        batch_size: u32,
        max_retries: u32,
        retry_delay: u32,
        visibility_timeout_ms: u64,
    },
    Worker {
        batch_size: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_concurrency: Option<u32>,
        max_retries: u32,
        max_wait_time_ms: u64,
        retry_delay: u32,
    },
}

impl<'a> ConsumerOut<'a> {
    pub(crate) fn new(
        record: &'a QueueRecord,
        consumer: &'a crate::state::ConsumerRecord,
    ) -> ConsumerOut<'a> {
        let (script_name, service, settings) = match &consumer.spec.kind {
            ConsumerKind::HttpPull(s) => (
                None,
                None,
                ConsumerSettingsOut::HttpPull {
                    batch_size: s.batch_size,
                    max_retries: s.max_retries,
                    retry_delay: s.retry_delay_s,
                    visibility_timeout_ms: s.visibility_timeout_ms,
                },
            ),
            ConsumerKind::Worker {
                script_name,
                service,
                settings: s,
            } => (
                Some(script_name.as_str()),
                service.as_deref(),
                ConsumerSettingsOut::Worker {
                    batch_size: s.batch_size,
                    max_concurrency: s.max_concurrency,
                    max_retries: s.max_retries,
                    max_wait_time_ms: s.max_wait_time_ms,
                    retry_delay: s.retry_delay_s,
                },
            ),
        };
        ConsumerOut {
            kind: consumer.spec.kind.type_name(),
            consumer_id: &consumer.id,
            created_on: rfc3339_ms(consumer.created_ms),
            queue_name: &record.name,
            script_name,
            script: script_name,
            service,
            dead_letter_queue: consumer.spec.dead_letter_queue.as_deref().unwrap_or(""),
            settings,
        }
    }
}

/// A page of a list as answered: `{success, errors, messages, result,
/// result_info}`, for the queues and the event subscriptions alike.
pub(crate) fn page_answer<'a, R, T: Serialize>(
    listed: &'a Page<R>,
    out: impl Fn(&'a R) -> T,
) -> Result<Answer, ErrorAnswer> {
    #[derive(Serialize)]
    struct PageEnvelope<T> {
        success: bool,
        errors: [(); 0],
        messages: [(); 0],
        result: Vec<T>,
        result_info: ResultInfo,
    }
    let envelope = PageEnvelope {
        success: true,
        errors: [],
        messages: [],
        result: listed.items.iter().map(out).collect(),
        result_info: ResultInfo {
            count: listed.items.len(),
            page: listed.page,
            per_page: listed.per_page,
            total_count: listed.total_count,
            total_pages: listed.total_pages,
        },
    };
    serde_json::to_vec(&envelope)
        .map(Answer::Json)
        .map_err(ErrorAnswer::internal)
}

/// `result_info` of a list.
#[derive(Serialize)]
struct ResultInfo {
    count: usize,
    page: usize,
    per_page: usize,
    total_count: usize,
    total_pages: usize,
}

/// A whole number of a body within bounds; `None` when absent or `null`.
fn whole(
    object: &Object,
    key: &str,
    pointer: &str,
    (min, max): (u64, u64),
) -> Result<Option<u64>, ErrorAnswer> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let value = n.as_f64().unwrap_or(f64::NAN);
            bounded(key, value, min, max)
                .map(Some)
                .map_err(|message| ErrorAnswer::invalid(pointer, message))
        }
        Some(_) => Err(ErrorAnswer::invalid(
            pointer,
            format!("{key} must be a number"),
        )),
    }
}

fn whole_u32(
    object: &Object,
    key: &str,
    pointer: &str,
    bounds: (u64, u64),
) -> Result<Option<u32>, ErrorAnswer> {
    Ok(whole(object, key, pointer, bounds)?.map(|v| u32::try_from(v).unwrap_or(u32::MAX)))
}

/// An optional string field.
pub(crate) fn string<'a>(
    object: &'a Object,
    key: &str,
    pointer: &str,
) -> Result<Option<&'a str>, ErrorAnswer> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ErrorAnswer::invalid(
            pointer,
            format!("{key} must be a string"),
        )),
    }
}

/// An optional object field.
pub(crate) fn object<'a>(parent: &'a Object, key: &str) -> Result<Option<&'a Object>, ErrorAnswer> {
    match parent.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(ErrorAnswer::invalid(
            &format!("/{key}"),
            format!("{key} must be an object"),
        )),
    }
}

/// Bounds of the settings, from Cloudflare's limits and consumer pages.
pub(crate) mod bounds {
    /// `batch_size`: 1 to 100 messages.
    pub(crate) const BATCH_SIZE: (u64, u64) = (1, 100);
    /// `max_retries`: at most 100.
    pub(crate) const MAX_RETRIES: (u64, u64) = (0, 100);
    /// `retry_delay` and `delivery_delay`: at most 24 h, as message delays.
    pub(crate) const DELAY_S: (u64, u64) = (0, 86_400);
    /// `visibility_timeout_ms`: 1 ms to 12 h.
    pub(crate) const VISIBILITY_MS: (u64, u64) = (1, 43_200_000);
    /// `max_concurrency` of a Worker consumer: 1 to 250.
    pub(crate) const MAX_CONCURRENCY: (u64, u64) = (1, 250);
    /// `max_wait_time_ms` of a Worker consumer: at most 60 s.
    pub(crate) const MAX_WAIT_MS: (u64, u64) = (0, 60_000);
}

/// The `settings` of a queue update.
pub(crate) fn settings_change(request: &Object) -> Result<SettingsChange, ErrorAnswer> {
    let Some(settings) = object(request, "settings")? else {
        return Ok(SettingsChange::default());
    };
    let delivery_paused = match settings.get("delivery_paused") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(ErrorAnswer::invalid(
                "/settings/delivery_paused",
                "delivery_paused must be a boolean",
            ));
        }
    };
    let retention = (u64::from(MIN_RETENTION_S), u64::from(MAX_RETENTION_S));
    Ok(SettingsChange {
        delivery_delay_s: whole_u32(
            settings,
            "delivery_delay",
            "/settings/delivery_delay",
            bounds::DELAY_S,
        )?,
        delivery_paused,
        retention_s: whole_u32(
            settings,
            "message_retention_period",
            "/settings/message_retention_period",
            retention,
        )?,
    })
}

/// A Worker consumer's script and service. The script is `script_name`
/// (the published description) or `script` (the live API's name, which
/// its answers carry), or else the `service` named; two names that
/// disagree are refused rather than one silently chosen.
fn worker_script(request: &Object) -> Result<(String, Option<String>), ErrorAnswer> {
    let given = |key: &str| -> Result<Option<&str>, ErrorAnswer> {
        Ok(string(request, key, &format!("/{key}"))?.filter(|name| !name.is_empty()))
    };
    let (script_name, script, service) =
        (given("script_name")?, given("script")?, given("service")?);
    if let (Some(a), Some(b)) = (script_name, script)
        && a != b
    {
        return Err(ErrorAnswer::invalid(
            "/script",
            format!("script {b:?} and script_name {a:?} name two scripts; give one"),
        ));
    }
    let script = script_name.or(script).or(service).ok_or_else(|| {
        ErrorAnswer::invalid(
            "/script_name",
            "a worker consumer needs a script_name (or script, or service)",
        )
    })?;
    Ok((script.to_owned(), service.map(str::to_owned)))
}

/// A consumer as a create or an update writes it: `type` decides which
/// settings apply; those left out take their defaults.
pub(crate) fn consumer_spec(request: &Object) -> Result<ConsumerSpec, ErrorAnswer> {
    let settings = object(request, "settings")?;
    let empty = Object::new();
    let s = settings.unwrap_or(&empty);
    // Each setting's pointer comes from its key; one left out takes its default.
    let at = |key: &str| format!("/settings/{key}");
    let setting_u32 = |key: &str, bounds| whole_u32(s, key, &at(key), bounds);
    let u32_or = |key: &str, bounds, default| {
        Ok::<_, ErrorAnswer>(setting_u32(key, bounds)?.unwrap_or(default))
    };
    let u64_or = |key: &str, bounds, default| {
        Ok::<_, ErrorAnswer>(whole(s, key, &at(key), bounds)?.unwrap_or(default))
    };
    let kind = match string(request, "type", "/type")? {
        Some("http_pull") => {
            let d = PullSettings::default();
            ConsumerKind::HttpPull(PullSettings {
                batch_size: u32_or("batch_size", bounds::BATCH_SIZE, d.batch_size)?,
                max_retries: u32_or("max_retries", bounds::MAX_RETRIES, d.max_retries)?,
                retry_delay_s: u32_or("retry_delay", bounds::DELAY_S, d.retry_delay_s)?,
                visibility_timeout_ms: u64_or(
                    "visibility_timeout_ms",
                    bounds::VISIBILITY_MS,
                    d.visibility_timeout_ms,
                )?,
            })
        }
        Some("worker") => {
            let (script_name, service) = worker_script(request)?;
            let d = WorkerSettings::default();
            ConsumerKind::Worker {
                script_name,
                service,
                settings: WorkerSettings {
                    batch_size: u32_or("batch_size", bounds::BATCH_SIZE, d.batch_size)?,
                    max_concurrency: setting_u32("max_concurrency", bounds::MAX_CONCURRENCY)?,
                    max_retries: u32_or("max_retries", bounds::MAX_RETRIES, d.max_retries)?,
                    max_wait_time_ms: u64_or(
                        "max_wait_time_ms",
                        bounds::MAX_WAIT_MS,
                        d.max_wait_time_ms,
                    )?,
                    retry_delay_s: u32_or("retry_delay", bounds::DELAY_S, d.retry_delay_s)?,
                },
            }
        }
        _ => {
            return Err(ErrorAnswer::invalid(
                "/type",
                "type must be \"http_pull\" or \"worker\"",
            ));
        }
    };
    let dead_letter_queue = string(request, "dead_letter_queue", "/dead_letter_queue")?
        .filter(|name| !name.is_empty())
        .map(str::to_owned);
    Ok(ConsumerSpec {
        kind,
        dead_letter_queue,
    })
}
