//! The management of queues and consumers on the wire: the requests the
//! generated client sends, made from the crate's types, and the crate's
//! types made from its answers. The one place these conversions are
//! written; the operations (`queues.rs`, `consumers.rs`) call them.

use crate::error::{Error, Result, built};
use crate::limits::Limits;
use crate::message::received::known_u32;
use crate::raw::types;
use crate::resources::settings::{
    MAX_RETENTION, MAX_RETRIES_LIMIT, MIN_RETENTION, check_new_name, millis, seconds,
};
use crate::resources::{
    ConsumerInfo, HttpPullConsumer, HttpPullSettings, QueueSettings, WorkerConsumer,
};
use crate::response::QueueInfo;

/// `PATCH .../queues/{id}`: these settings.
pub(crate) fn queue_update_request(
    settings: types::QueueSettingsRequest,
) -> Result<types::QueueUpdateRequest> {
    built(types::QueueUpdateRequest::builder().settings(Some(settings)))
}

/// `POST .../queues`: a queue named `name`, with `settings` if any.
pub(crate) fn create_queue_request(
    name: &str,
    settings: Option<types::QueueSettingsRequest>,
) -> Result<types::CreateQueueRequest> {
    built(
        types::CreateQueueRequest::builder()
            .queue_name(name.to_owned())
            .settings(settings),
    )
}

impl From<types::QueueDetails> for QueueInfo {
    fn from(q: types::QueueDetails) -> Self {
        let consumers: Vec<ConsumerInfo> = q
            .consumers
            .unwrap_or_default()
            .into_iter()
            .map(ConsumerInfo::from)
            .collect();
        let listed = u32::try_from(consumers.len()).unwrap_or(u32::MAX);
        let listed_producers =
            u32::try_from(q.producers.as_ref().map_or(0, Vec::len)).unwrap_or(u32::MAX);
        QueueInfo {
            queue_id: q.queue_id.filter(|id| !id.is_empty()),
            queue_name: q.queue_name,
            created_on: q.created_on,
            modified_on: q.modified_on,
            settings: q.settings.map(QueueSettings::from).unwrap_or_default(),
            consumers_total_count: known_u32(q.consumers_total_count).unwrap_or(listed),
            producers_total_count: known_u32(q.producers_total_count).unwrap_or(listed_producers),
            consumers,
        }
    }
}

impl From<types::QueueConsumer> for ConsumerInfo {
    fn from(c: types::QueueConsumer) -> Self {
        let settings = c.settings.unwrap_or_default();
        let consumer_id = c.consumer_id.filter(|id| !id.is_empty());
        let dead_letter_queue = c.dead_letter_queue.filter(|name| !name.is_empty());
        match c.type_.as_deref() {
            Some("http_pull") => ConsumerInfo::HttpPull(HttpPullConsumer {
                consumer_id,
                queue_name: c.queue_name,
                created_on: c.created_on,
                settings: HttpPullSettings {
                    batch_size: known_u32(settings.batch_size),
                    max_retries: known_u32(settings.max_retries),
                    retry_delay: seconds(settings.retry_delay),
                    visibility_timeout: millis(settings.visibility_timeout_ms),
                    dead_letter_queue,
                },
            }),
            Some("worker") => ConsumerInfo::Worker(WorkerConsumer {
                consumer_id,
                queue_name: c.queue_name,
                created_on: c.created_on,
                script_name: c
                    .script_name
                    .filter(|name| !name.is_empty())
                    .or_else(|| c.script.filter(|name| !name.is_empty())),
                service: c.service.filter(|name| !name.is_empty()),
                dead_letter_queue,
                batch_size: known_u32(settings.batch_size),
                max_retries: known_u32(settings.max_retries),
                retry_delay: seconds(settings.retry_delay),
                max_concurrency: known_u32(settings.max_concurrency),
                max_wait_time: millis(settings.max_wait_time_ms),
            }),
            other => ConsumerInfo::Other {
                kind: other.unwrap_or_default().to_owned(),
                consumer_id,
            },
        }
    }
}

/// Whether a queue's settings as the API answered them show every setting
/// of `wire` with the value sent. A setting left out of the answer, or an
/// answer without settings, shows nothing.
pub(crate) fn shows_applied(
    wire: &types::QueueSettingsRequest,
    answer: Option<&types::QueueSettings>,
) -> bool {
    let Some(answer) = answer else {
        return wire == &types::QueueSettingsRequest::default();
    };
    // Exactly the value sent: 3600.5 is not the 3600 asked for.
    let same =
        |sent: Option<u32>, got: Option<f64>| sent.is_none_or(|sent| got == Some(f64::from(sent)));
    same(wire.delivery_delay, answer.delivery_delay)
        && same(
            wire.message_retention_period,
            answer.message_retention_period,
        )
        && (wire.delivery_paused.is_none() || wire.delivery_paused == answer.delivery_paused)
}

impl From<types::QueueSettings> for QueueSettings {
    fn from(s: types::QueueSettings) -> Self {
        QueueSettings {
            delivery_delay: seconds(s.delivery_delay),
            delivery_paused: s.delivery_paused,
            message_retention_period: seconds(s.message_retention_period),
        }
    }
}

impl QueueSettings {
    /// The wire form, after checking every value against its limit.
    pub(crate) fn to_wire(&self, limits: &Limits) -> Result<types::QueueSettingsRequest> {
        let delivery_delay = self
            .delivery_delay
            .map(|d| limits.delay_seconds(&"settings.delivery_delay", d))
            .transpose()?;
        let message_retention_period = self
            .message_retention_period
            .map(|period| {
                if !(MIN_RETENTION..=MAX_RETENTION).contains(&period) {
                    return Err(Error::invalid(
                        "settings.message_retention_period",
                        format!(
                            "{} s is outside Cloudflare's range of 60 s to 14 days (1,209,600 s)",
                            period.as_secs_f64()
                        ),
                    ));
                }
                // Rounded up, as delays are; within range, it fits a u32.
                let secs = period.as_secs() + u64::from(period.subsec_nanos() > 0);
                Ok(u32::try_from(secs).unwrap_or(u32::MAX))
            })
            .transpose()?;
        built(
            types::QueueSettingsRequest::builder()
                .delivery_delay(delivery_delay)
                .delivery_paused(self.delivery_paused)
                .message_retention_period(message_retention_period),
        )
    }
}

impl HttpPullSettings {
    /// The wire form of a create or update, after checking every value.
    pub(crate) fn to_wire(&self, limits: &Limits) -> Result<types::HttpPullConsumerRequest> {
        let batch_size = self
            .batch_size
            .map(|n| limits.batch_size(&"settings.batch_size", n))
            .transpose()?;
        if let Some(retries) = self.max_retries.filter(|r| *r > MAX_RETRIES_LIMIT) {
            return Err(Error::invalid(
                "settings.max_retries",
                format!("{retries} is over Cloudflare's limit of {MAX_RETRIES_LIMIT}"),
            ));
        }
        let retry_delay = self
            .retry_delay
            .map(|d| limits.delay_seconds(&"settings.retry_delay", d))
            .transpose()?;
        let visibility_timeout_ms = self
            .visibility_timeout
            .map(|t| {
                limits.visibility_timeout_ms(t).map_err(|e| match e {
                    Error::InvalidInput { reason, .. } => Error::InvalidInput {
                        field: "settings.visibility_timeout".into(),
                        reason,
                    },
                    other => other,
                })
            })
            .transpose()?;
        let dead_letter_queue = self
            .dead_letter_queue
            .as_deref()
            .map(|name| check_new_name("dead_letter_queue", name).map(|()| name.to_owned()))
            .transpose()?;
        let settings: types::HttpPullConsumerSettings = built(
            types::HttpPullConsumerSettings::builder()
                .batch_size(batch_size)
                .max_retries(self.max_retries)
                .retry_delay(retry_delay)
                .visibility_timeout_ms(visibility_timeout_ms),
        )?;
        // No settings object at all when none is given, as wrangler sends it.
        let empty = settings == types::HttpPullConsumerSettings::default();
        built(
            types::HttpPullConsumerRequest::builder()
                .dead_letter_queue(dead_letter_queue)
                .settings((!empty).then_some(settings))
                .type_(types::HttpPullConsumerRequestType::HttpPull),
        )
    }
}

/// The answer to a create or update, read tolerantly: an answer that does
/// not say `type: http_pull` (or says nothing) still describes the
/// consumer just written, and a setting it leaves out (create answers may
/// omit `dead_letter_queue`) is the one asked for. A setting it gives,
/// even `dead_letter_queue: ""` (none), is believed.
pub(crate) fn as_written(
    answer: types::QueueConsumer,
    asked: &HttpPullSettings,
) -> HttpPullConsumer {
    let given = answer.settings.clone().unwrap_or_default();
    let dead_letter_given = answer.dead_letter_queue.is_some();
    let mut consumer = match ConsumerInfo::from(answer) {
        ConsumerInfo::HttpPull(c) => c,
        other => HttpPullConsumer {
            consumer_id: other.consumer_id().map(str::to_owned),
            ..HttpPullConsumer::default()
        },
    };
    let got = &mut consumer.settings;
    if given.batch_size.is_none() {
        got.batch_size = asked.batch_size;
    }
    if given.max_retries.is_none() {
        got.max_retries = asked.max_retries;
    }
    if given.retry_delay.is_none() {
        got.retry_delay = asked.retry_delay;
    }
    if given.visibility_timeout_ms.is_none() {
        got.visibility_timeout = asked.visibility_timeout;
    }
    if !dead_letter_given {
        got.dead_letter_queue.clone_from(&asked.dead_letter_queue);
    }
    consumer
}
