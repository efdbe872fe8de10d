//! [`EmulatorConfig`]: the emulator's account declared in a file (TOML) or
//! in code: queues with their ids, settings and consumers, the round trip
//! and the rate limits.
//!
//! The file's fields are the API's (`queue_name`, `queue_id`, `settings`,
//! `delivery_delay`, `type = "http_pull"`, `dead_letter_queue`,
//! `visibility_timeout_ms`, ...), so that what a management call would
//! write reads the same here:
//!
//! ```toml
//! # Only the queues declared here (and those the API creates) exist:
//! # a messages request to any other id gets 404 instead of a new queue.
//! strict = true
//!
//! [latency]               # the round trip added to every request
//! round_trip_ms = 100
//! jitter_ms = 20
//!
//! [rate_limits]           # Cloudflare's figures; each table overrides some
//! per_credential = { requests = 1200, window_seconds = 300, block_seconds = 300 }
//! per_queue = { per_second = 5000, burst = 5000 }
//! per_ip = { per_second = 200, burst = 200 }
//!
//! [[queues]]
//! queue_name = "orders"
//! # Kept across restarts, so that CLOUDFLARE_QUEUE_ID stays valid;
//! # a fresh one (32 lowercase hex digits) at every start when left out.
//! queue_id = "9a7806061c88ada191ed06f989cc3dac"
//! settings = { delivery_delay = 0, delivery_paused = false, message_retention_period = 345600 }
//!
//! [queues.consumer]       # one per queue; none: pulls get 405
//! type = "http_pull"
//! dead_letter_queue = "orders-dlq"   # a queue NAME; created if missing
//! settings = { batch_size = 10, max_retries = 5, retry_delay = 30, visibility_timeout_ms = 60000 }
//!
//! [[queues.subscriptions]]  # other products' events into the queue
//! events = ["instance.errored", "instance.terminated"]
//! source = { type = "workflows.workflow", workflow_name = "checkout" }
//! # name = "orders workflows.workflow"  (the default); enabled = true
//!
//! [[queues]]
//! queue_name = "orders-dlq"
//! consumer = { type = "http_pull" }
//!
//! [[queues]]
//! queue_name = "emails"
//! consumer = { type = "worker", script_name = "mailer", settings = { batch_size = 50, max_wait_time_ms = 2000 } }
//! ```
//!
//! Every table and field is optional but `queue_name`, a consumer's `type`
//! and a Worker's `script_name`; unknown fields are refused, so that a typo is not
//! silently ignored. Bounds are Cloudflare's: `batch_size` 1 to 100,
//! `max_retries` 0 to 100, `retry_delay` and `delivery_delay` 0 to 86,400
//! s, `visibility_timeout_ms` 1 to 43,200,000, `message_retention_period`
//! 60 to 1,209,600 s, a Worker's `max_concurrency` 1 to 250 and
//! `max_wait_time_ms` 0 to 60,000. An event subscription needs at least one
//! event and a source `type` of the published description, with the field
//! that names its resource (`model_name`, `worker_name`, `script_tag`,
//! `workflow_name`) and no other; at most one per source in the account.
//! A queue name is Cloudflare's: 1 to 63
//! lowercase letters, digits and dashes, starting and ending with a letter
//! or digit; a `queue_id` is 1 to 32 ASCII letters and digits. Errors name
//! the file, the line and the field.
//!
//! Declared queues belong to [`EMULATOR_ACCOUNT_ID`](crate::EMULATOR_ACCOUNT_ID).
//! An HTTP pull consumer that leaves `max_retries` or `dead_letter_queue`
//! out takes [`Emulator::max_retries`](crate::Emulator::max_retries) and
//! [`Emulator::dead_letter_queue`](crate::Emulator::dead_letter_queue)
//! (by the queue's id), which are shorthands for exactly that.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::latency::Latency;
use super::ratelimit::RateLimitModel;
use super::state::{
    ConsumerKind, ConsumerSpec, Declared, MAX_RETENTION_S, MIN_RETENTION_S, NewSubscription,
    PullSettings, QueueSettings, WorkerSettings, check_queue_name, checked_source,
};

/// The emulator's account, declared: read from TOML with
/// [`EmulatorConfig::from_toml`] or [`Emulator::config_file`](crate::Emulator::config_file),
/// or built in code, and given to [`Emulator::config`](crate::Emulator::config).
/// The file format is in the [module docs](self).
///
/// ```
/// use cf_queues_emulator::config::{ConsumerConfig, EmulatorConfig, QueueConfig};
///
/// let mut orders = QueueConfig::new("orders");
/// orders.queue_id = Some("9a7806061c88ada191ed06f989cc3dac".into());
/// orders.consumer = Some(ConsumerConfig::http_pull());
/// let mut config = EmulatorConfig::default();
/// config.queues.push(orders);
/// # let _ = config;
/// let parsed = EmulatorConfig::from_toml("[[queues]]\nqueue_name = \"orders\"\n").unwrap();
/// assert_eq!(parsed.queues[0].queue_name, "orders");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EmulatorConfig {
    /// Only declared (and API-created) queues exist: no queue springs into
    /// being on a messages request.
    #[serde(default)]
    pub strict: bool,
    /// The queues, in order.
    #[serde(default)]
    pub queues: Vec<QueueConfig>,
    /// The round trip added to every request.
    pub latency: Option<LatencyConfig>,
    /// Cloudflare's rate limits, with the figures overridden here.
    pub rate_limits: Option<RateLimitsConfig>,
}

/// A declared queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct QueueConfig {
    /// Its name (Cloudflare's rules).
    pub queue_name: String,
    /// Its id; a fresh one at each start when `None`.
    pub queue_id: Option<String>,
    /// Its settings; those left out have Cloudflare's defaults.
    #[serde(default)]
    pub settings: QueueSettingsConfig,
    /// Its consumer, if any: without one, pulls get 405.
    pub consumer: Option<ConsumerConfig>,
    /// The event subscriptions into it.
    #[serde(default)]
    pub subscriptions: Vec<SubscriptionConfig>,
}

/// An event subscription into a declared queue, with the API's fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SubscriptionConfig {
    /// Its name; wrangler's default (the queue's name, a space, the
    /// source's type) when left out.
    pub name: Option<String>,
    /// Whether it delivers events (the default).
    pub enabled: Option<bool>,
    /// Its source: `type`, and the field that names the resource.
    pub source: BTreeMap<String, String>,
    /// The event types it delivers; at least one.
    pub events: Vec<String>,
}

impl SubscriptionConfig {
    /// A subscription to these events of `source`.
    pub fn new(source: BTreeMap<String, String>, events: Vec<String>) -> SubscriptionConfig {
        SubscriptionConfig {
            source,
            events,
            ..SubscriptionConfig::default()
        }
    }

    /// What the API would refuse in it, as the API checks it.
    fn check(&self) -> Result<(), String> {
        if self.events.is_empty() || self.events.iter().any(|e| e.trim().is_empty()) {
            return Err("events must hold at least one event type, none empty".to_owned());
        }
        if self.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err("name must not be empty".to_owned());
        }
        let fields = self
            .source
            .iter()
            .map(|(key, value)| (key.as_str(), Some(value.as_str())))
            .collect();
        checked_source(&fields).map_err(|refused| refused.why)?;
        Ok(())
    }
}

impl QueueConfig {
    /// A queue of this name, with a fresh id, the default settings and no
    /// consumer.
    pub fn new(queue_name: impl Into<String>) -> QueueConfig {
        QueueConfig {
            queue_name: queue_name.into(),
            ..QueueConfig::default()
        }
    }
}

/// A queue's settings (`mq_queue-settings`), in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct QueueSettingsConfig {
    /// Delays every message pushed without a delay (0 to 86,400 s).
    #[serde(default, deserialize_with = "delivery_delay")]
    pub delivery_delay: Option<u32>,
    /// Pauses delivery: pulls get 409.
    pub delivery_paused: Option<bool>,
    /// Messages older than this are gone (60 to 1,209,600 s; 4 days).
    #[serde(default, deserialize_with = "retention_s")]
    pub message_retention_period: Option<u32>,
}

/// The kind of a consumer, its `type`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub enum ConsumerType {
    /// `http_pull`: enables pulling over HTTP.
    #[default]
    #[serde(rename = "http_pull")]
    HttpPull,
    /// `worker`: a Worker, which the emulator never runs.
    #[serde(rename = "worker")]
    Worker,
}

/// A queue's consumer, with the fields of both kinds; the ones of the
/// other kind are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ConsumerConfig {
    /// `http_pull` or `worker`: required, as in the API.
    #[serde(rename = "type")]
    pub kind: ConsumerType,
    /// The Worker (Worker consumers only, required there).
    pub script_name: Option<String>,
    /// The NAME of the queue that receives messages out of retries.
    pub dead_letter_queue: Option<String>,
    /// Its settings; those left out have their defaults.
    #[serde(default)]
    pub settings: ConsumerSettingsConfig,
}

impl ConsumerConfig {
    /// An HTTP pull consumer with the default settings.
    pub fn http_pull() -> ConsumerConfig {
        ConsumerConfig::default()
    }

    /// A Worker consumer of this script.
    pub fn worker(script_name: impl Into<String>) -> ConsumerConfig {
        ConsumerConfig {
            kind: ConsumerType::Worker,
            script_name: Some(script_name.into()),
            ..ConsumerConfig::default()
        }
    }
}

/// A consumer's settings: `visibility_timeout_ms` for HTTP pull,
/// `max_concurrency` and `max_wait_time_ms` for a Worker, the rest for both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ConsumerSettingsConfig {
    /// Messages a pull without `batch_size` leases (1 to 100; 5, a Worker's 10).
    #[serde(default, deserialize_with = "batch_size")]
    pub batch_size: Option<u32>,
    /// Deliveries before a message is dropped or dead-lettered (0 to 100; 3).
    #[serde(default, deserialize_with = "max_retries")]
    pub max_retries: Option<u32>,
    /// Seconds before a message retried without a delay is visible again (0 to 86,400; 0).
    #[serde(default, deserialize_with = "retry_delay")]
    pub retry_delay: Option<u32>,
    /// The lease of a pull without `visibility_timeout_ms` (1 to 43,200,000 ms; 30,000).
    #[serde(default, deserialize_with = "visibility_ms")]
    pub visibility_timeout_ms: Option<u64>,
    /// A Worker's concurrent invocations (1 to 250; the platform's maximum).
    #[serde(default, deserialize_with = "max_concurrency")]
    pub max_concurrency: Option<u32>,
    /// A Worker's wait for a full batch (0 to 60,000 ms; 5,000).
    #[serde(default, deserialize_with = "max_wait_ms")]
    pub max_wait_time_ms: Option<u64>,
}

/// `[latency]`: the round trip added to every request, as [`Latency`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LatencyConfig {
    /// The fixed part of each round trip, in milliseconds.
    pub round_trip_ms: u64,
    /// The most jitter added to it, in milliseconds.
    #[serde(default)]
    pub jitter_ms: u64,
}

impl LatencyConfig {
    /// As a [`Latency`].
    pub fn latency(&self) -> Latency {
        Latency::round_trip(Duration::from_millis(self.round_trip_ms))
            .with_jitter(Duration::from_millis(self.jitter_ms))
    }
}

/// `[rate_limits]`: Cloudflare's limits ([`RateLimitModel::cloudflare`]),
/// each table overriding one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RateLimitsConfig {
    /// Each queue's two buckets.
    pub per_queue: Option<BucketConfig>,
    /// Each credential's sliding window and block.
    pub per_credential: Option<WindowConfig>,
    /// Each client address's bucket.
    pub per_ip: Option<BucketConfig>,
}

/// A token bucket: `per_second` tokens a second, `burst` at most.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BucketConfig {
    /// Tokens a second.
    pub per_second: u32,
    /// The most tokens held.
    pub burst: u32,
}

/// A sliding window of requests, and the block after one over it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct WindowConfig {
    /// Requests per window.
    pub requests: u32,
    /// The window, in seconds.
    pub window_seconds: u64,
    /// The block after a request over the window, in seconds.
    pub block_seconds: u64,
}

impl RateLimitsConfig {
    /// As a [`RateLimitModel`].
    pub fn model(&self) -> RateLimitModel {
        let mut model = RateLimitModel::cloudflare();
        if let Some(b) = self.per_queue {
            model = model.per_queue(b.per_second, b.burst);
        }
        if let Some(w) = self.per_credential {
            model = model.per_credential(
                w.requests,
                Duration::from_secs(w.window_seconds),
                Duration::from_secs(w.block_seconds),
            );
        }
        if let Some(b) = self.per_ip {
            model = model.per_ip(b.per_second, b.burst);
        }
        model
    }
}

/// A configuration that cannot be used: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    path: Option<PathBuf>,
    message: String,
}

impl ConfigError {
    fn new(message: impl Into<String>) -> ConfigError {
        ConfigError {
            path: None,
            message: message.into(),
        }
    }

    /// What is wrong, with the line and field where the file has them.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}: {}", path.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl EmulatorConfig {
    /// Parses and checks a configuration in TOML (the format in the
    /// [module docs](self)).
    ///
    /// # Errors
    ///
    /// TOML that does not parse, an unknown field, a value out of its
    /// bounds (each with its line and column), or queues that contradict
    /// each other (naming `queues[i]` and its line).
    pub fn from_toml(text: &str) -> Result<EmulatorConfig, ConfigError> {
        let config: EmulatorConfig = toml::from_str(text)
            .map_err(|e| ConfigError::new(e.to_string().trim_end().to_owned()))?;
        config.check().map_err(|(index, why)| {
            let line = queue_line(text, index)
                .map(|n| format!("line {n}: "))
                .unwrap_or_default();
            ConfigError::new(format!("{line}queues[{index}]: {why}"))
        })?;
        Ok(config)
    }

    /// Reads and parses a configuration file.
    ///
    /// # Errors
    ///
    /// The file cannot be read, or as [`EmulatorConfig::from_toml`]; the
    /// error names the file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<EmulatorConfig, ConfigError> {
        let path = path.as_ref();
        let named = |mut e: ConfigError| {
            e.path = Some(path.to_owned());
            e
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| named(ConfigError::new(format!("cannot read it: {e}"))))?;
        EmulatorConfig::from_toml(&text).map_err(named)
    }

    /// Checks what serde cannot: names and ids, fields of the other kind
    /// of consumer, duplicates. The error names the queue by its index.
    pub(crate) fn check(&self) -> Result<(), (usize, String)> {
        let limits = cf_queues::limits::Limits::default();
        for (i, queue) in self.queues.iter().enumerate() {
            if check_queue_name(&queue.queue_name).is_err() {
                return Err((i, not_a_queue_name("queue_name", &queue.queue_name)));
            }
            if let Some(id) = &queue.queue_id
                && let Err(e) = limits.check_id("queue_id", id)
            {
                return Err((i, format!("queue_id {id:?}: {e}")));
            }
            let earlier = &self.queues[..i];
            if earlier.iter().any(|q| q.queue_name == queue.queue_name) {
                return Err((
                    i,
                    format!("queue_name {:?} is declared twice", queue.queue_name),
                ));
            }
            if queue.queue_id.is_some() && earlier.iter().any(|q| q.queue_id == queue.queue_id) {
                return Err((
                    i,
                    format!("queue_id {:?} is declared twice", queue.queue_id),
                ));
            }
            if let Some(consumer) = &queue.consumer {
                consumer.check(&queue.queue_name).map_err(|why| (i, why))?;
            }
            for (j, subscription) in queue.subscriptions.iter().enumerate() {
                subscription
                    .check()
                    .map_err(|why| (i, format!("subscriptions[{j}]: {why}")))?;
            }
        }
        Ok(())
    }

    /// The queues as the broker declares them, with the builder's
    /// shorthands for what a pull consumer leaves out.
    pub(crate) fn declarations(
        &self,
        max_retries: u32,
        dead_letter_of: impl Fn(&str) -> Option<String>,
    ) -> Vec<Declared> {
        self.queues
            .iter()
            .map(|queue| {
                let by_id = queue.queue_id.as_deref().and_then(&dead_letter_of);
                let defaults = QueueSettings::default();
                Declared {
                    id: queue.queue_id.clone(),
                    name: queue.queue_name.clone(),
                    settings: QueueSettings {
                        delivery_delay_s: queue
                            .settings
                            .delivery_delay
                            .unwrap_or(defaults.delivery_delay_s),
                        delivery_paused: queue
                            .settings
                            .delivery_paused
                            .unwrap_or(defaults.delivery_paused),
                        retention_s: queue
                            .settings
                            .message_retention_period
                            .unwrap_or(defaults.retention_s),
                    },
                    consumer: queue.consumer.as_ref().map(|c| c.spec(max_retries, by_id)),
                    subscriptions: queue
                        .subscriptions
                        .iter()
                        .map(|s| NewSubscription {
                            name: s.name.clone(),
                            enabled: s.enabled.unwrap_or(true),
                            source: s.source.clone(),
                            queue_id: String::new(),
                            events: s.events.clone(),
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

impl ConsumerConfig {
    fn check(&self, queue_name: &str) -> Result<(), String> {
        let s = &self.settings;
        match self.kind {
            ConsumerType::HttpPull => {
                let foreign = [
                    ("script_name", self.script_name.is_some()),
                    ("settings.max_concurrency", s.max_concurrency.is_some()),
                    ("settings.max_wait_time_ms", s.max_wait_time_ms.is_some()),
                ];
                if let Some((field, _)) = foreign.iter().find(|(_, set)| *set) {
                    return Err(format!(
                        "consumer.{field} is not a field of an http_pull consumer"
                    ));
                }
            }
            ConsumerType::Worker => {
                if self.script_name.as_deref().is_none_or(str::is_empty) {
                    return Err("consumer.script_name is required for a worker consumer".into());
                }
                if s.visibility_timeout_ms.is_some() {
                    return Err(
                        "consumer.settings.visibility_timeout_ms is not a field of a worker consumer"
                            .into(),
                    );
                }
            }
        }
        if let Some(dlq) = self.dead_letter_queue.as_deref().filter(|n| !n.is_empty())
            && check_queue_name(dlq).is_err()
        {
            return Err(not_a_queue_name("consumer.dead_letter_queue", dlq));
        }
        if self.dead_letter_queue.as_deref() == Some(queue_name) {
            return Err(format!(
                "consumer.dead_letter_queue: {queue_name:?} cannot be its own dead-letter queue: \
                 its exhausted messages would come back forever"
            ));
        }
        Ok(())
    }

    fn spec(&self, max_retries: u32, dead_letter_by_id: Option<String>) -> ConsumerSpec {
        let s = &self.settings;
        let kind = match self.kind {
            ConsumerType::HttpPull => {
                let d = PullSettings::default();
                ConsumerKind::HttpPull(PullSettings {
                    batch_size: s.batch_size.unwrap_or(d.batch_size),
                    max_retries: s.max_retries.unwrap_or(max_retries),
                    retry_delay_s: s.retry_delay.unwrap_or(d.retry_delay_s),
                    visibility_timeout_ms: s
                        .visibility_timeout_ms
                        .unwrap_or(d.visibility_timeout_ms),
                })
            }
            ConsumerType::Worker => {
                let d = WorkerSettings::default();
                ConsumerKind::Worker {
                    script_name: self.script_name.clone().unwrap_or_default(),
                    service: None,
                    settings: WorkerSettings {
                        batch_size: s.batch_size.unwrap_or(d.batch_size),
                        max_concurrency: s.max_concurrency,
                        max_retries: s.max_retries.unwrap_or(d.max_retries),
                        max_wait_time_ms: s.max_wait_time_ms.unwrap_or(d.max_wait_time_ms),
                        retry_delay_s: s.retry_delay.unwrap_or(d.retry_delay_s),
                    },
                }
            }
        };
        let dead_letter_queue = match (self.kind, &self.dead_letter_queue) {
            (_, Some(name)) => Some(name.clone()),
            (ConsumerType::HttpPull, None) => dead_letter_by_id,
            (ConsumerType::Worker, None) => None,
        };
        ConsumerSpec {
            kind,
            dead_letter_queue: dead_letter_queue.filter(|name| !name.is_empty()),
        }
    }
}

/// The error of a field holding a name no queue can have.
fn not_a_queue_name(field: &str, name: &str) -> String {
    format!(
        "{field} {name:?} is not a queue name (1 to 63 lowercase letters, digits and dashes, \
         starting and ending with a letter or digit)"
    )
}

/// The line of the `i`-th `[[queues]]` header of `text`, from 1, for
/// errors about that queue (none for queues written as an inline array).
fn queue_line(text: &str, index: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with("[[queues]]"))
        .nth(index)
        .map(|(n, _)| n + 1)
}

/// A whole number within bounds, refused by serde (so with its line) when
/// outside them.
fn within<'de, D, T>(
    deserializer: D,
    field: &str,
    (min, max): (u64, u64),
) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64>,
{
    let Some(value) = Option::<u64>::deserialize(deserializer)? else {
        return Ok(None);
    };
    if !(min..=max).contains(&value) {
        return Err(serde::de::Error::custom(format!(
            "{field} must be from {min} to {max}, not {value}"
        )));
    }
    T::try_from(value)
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("{field} is too large")))
}

macro_rules! bounded_field {
    ($name:ident, $field:literal, $ty:ty, $bounds:expr) => {
        fn $name<'de, D: serde::Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<$ty>, D::Error> {
            within(deserializer, $field, $bounds)
        }
    };
}

use super::http::bounds;
bounded_field!(batch_size, "batch_size", u32, bounds::BATCH_SIZE);
bounded_field!(max_retries, "max_retries", u32, bounds::MAX_RETRIES);
bounded_field!(delivery_delay, "delivery_delay", u32, bounds::DELAY_S);
bounded_field!(retry_delay, "retry_delay", u32, bounds::DELAY_S);
bounded_field!(
    visibility_ms,
    "visibility_timeout_ms",
    u64,
    bounds::VISIBILITY_MS
);
bounded_field!(
    max_concurrency,
    "max_concurrency",
    u32,
    bounds::MAX_CONCURRENCY
);
bounded_field!(max_wait_ms, "max_wait_time_ms", u64, bounds::MAX_WAIT_MS);
bounded_field!(
    retention_s,
    "message_retention_period",
    u32,
    (MIN_RETENTION_S as u64, MAX_RETENTION_S as u64)
);
