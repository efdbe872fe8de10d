//! The settings of a queue and of its HTTP pull consumer: one type each,
//! read from the API and written to it.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::message::known_u32;

/// The longest `message_retention_period`: 14 days (Cloudflare's limits page
/// and `wrangler queues create --help`).
pub const MAX_RETENTION: Duration = Duration::from_secs(14 * 24 * 3600);
/// The shortest `message_retention_period`: 60 seconds (same sources).
pub const MIN_RETENTION: Duration = Duration::from_secs(60);
/// The most retries a consumer may have: 100 (Cloudflare's limits page).
pub const MAX_RETRIES_LIMIT: u32 = 100;

/// A queue's settings: what [`Queue::info`](crate::Queue::info) reads and
/// [`Queue::edit`](crate::Queue::edit) writes.
///
/// Every field is optional: when read, `None` is a setting the API left
/// out; when written, `None` leaves the setting as it is.
///
/// ```
/// use std::time::Duration;
/// use cf_queues::resources::QueueSettings;
/// let settings = QueueSettings::new()
///     .delivery_delay(Duration::from_secs(30))
///     .message_retention_period(Duration::from_secs(24 * 3600));
/// assert_eq!(settings.delivery_paused, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueSettings {
    /// The delay of every message pushed without one (at most 24 hours like
    /// any delay, rounded up to whole seconds).
    pub delivery_delay: Option<Duration>,
    /// Whether delivery to consumers is paused: pushes are kept, pulls get
    /// nothing until it is resumed.
    pub delivery_paused: Option<bool>,
    /// How long an unconsumed message is kept (60 s to 14 days, rounded up
    /// to whole seconds; Cloudflare's default is 4 days).
    pub message_retention_period: Option<Duration>,
}

impl QueueSettings {
    /// No setting: written, it changes nothing.
    pub fn new() -> QueueSettings {
        QueueSettings::default()
    }

    crate::__setters! {
        /// Sets the delay of messages pushed without one.
        delivery_delay(delay: Duration) => self.delivery_delay = Some;

        /// Pauses (`true`) or resumes (`false`) delivery.
        delivery_paused(paused: bool) => self.delivery_paused = Some;

        /// Sets how long an unconsumed message is kept.
        message_retention_period(period: Duration) => self.message_retention_period = Some;
    }

    /// Whether no setting is given.
    pub fn is_empty(&self) -> bool {
        self == &QueueSettings::default()
    }
}

/// How a queue's HTTP pull consumer delivers: what
/// [`Queue::enable_http_pull`](crate::Queue::enable_http_pull) writes and
/// [`HttpPullConsumer::settings`](crate::resources::HttpPullConsumer) reads.
///
/// Every field is optional: `None` leaves the setting to Cloudflare's
/// default (batch size 5 … see the table), and, when read, is a setting the
/// API left out.
///
/// | setting | Cloudflare's default | limit |
/// |---|---|---|
/// | `batch_size` | 5 (pulls that give none) | 1 to 100 |
/// | `max_retries` | 3 | 0 to 100 |
/// | `retry_delay` | 0 (retries that give none) | at most 24 h, rounded up to whole seconds |
/// | `visibility_timeout` | 30 s (pulls that give none) | 1 ms to 12 h, rounded up to whole milliseconds |
/// | `dead_letter_queue` | none: messages out of retries are deleted | a queue **name**: 1 to 63 lowercase letters, digits and dashes, no dash first or last |
///
/// ```
/// use std::time::Duration;
/// use cf_queues::resources::HttpPullSettings;
/// let settings = HttpPullSettings::new()
///     .max_retries(5)
///     .visibility_timeout(Duration::from_secs(60))
///     .dead_letter_queue("orders-dlq");
/// assert_eq!(settings.batch_size, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpPullSettings {
    /// The messages a pull that gives no `batch_size` returns at most.
    pub batch_size: Option<u32>,
    /// The retries before a message is deleted or dead-lettered.
    pub max_retries: Option<u32>,
    /// The delay of a retry that gives none.
    pub retry_delay: Option<Duration>,
    /// The lease of a pull that gives no visibility timeout.
    pub visibility_timeout: Option<Duration>,
    /// The **name** of the queue that receives messages out of retries.
    pub dead_letter_queue: Option<String>,
}

impl HttpPullSettings {
    /// No setting: Cloudflare's defaults.
    pub fn new() -> HttpPullSettings {
        HttpPullSettings::default()
    }

    crate::__setters! {
        /// Sets the default batch size of pulls.
        batch_size(size: u32) => self.batch_size = Some;

        /// Sets the retries before a message is deleted or dead-lettered.
        max_retries(retries: u32) => self.max_retries = Some;

        /// Sets the default delay of retries.
        retry_delay(delay: Duration) => self.retry_delay = Some;

        /// Sets the default lease of pulls.
        visibility_timeout(timeout: Duration) => self.visibility_timeout = Some;
    }

    /// Sets the dead-letter queue, by its **name** (not its id).
    ///
    /// The name is checked when the settings are sent, before anything is
    /// sent, with the rule queue creation follows (the one the live API
    /// states when it refuses a name, code 11003): a name no queue can
    /// have is an [`Error::InvalidInput`] naming `dead_letter_queue`,
    /// rather than a consumer whose dead letters go nowhere.
    pub fn dead_letter_queue(mut self, name: impl Into<String>) -> HttpPullSettings {
        self.dead_letter_queue = Some(name.into());
        self
    }
}

/// Checks a queue name before it is looked up or sent: not empty. A name
/// that no queue can have is then simply unknown.
pub(crate) fn check_name(field: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(field, "a queue name cannot be empty"));
    }
    Ok(())
}

/// Checks the name of a queue to create, or of a dead-letter queue to
/// name, against the rule the live API
/// states when it refuses one (11003 InvalidQueueName, quoted in
/// cloudflare/workers-sdk#2522): `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`,
/// that is 1 to 63 lowercase letters, digits and dashes, not starting or
/// ending with a dash. Cloudflare's documentation states no rule.
pub(crate) fn check_new_name(field: &str, name: &str) -> Result<()> {
    check_name(field, name)?;
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    let problem = if name.len() > 63 {
        Some(format!(
            "{} characters, over the 63 Cloudflare allows",
            name.len()
        ))
    } else if let Some(c) = name.chars().find(|c| !allowed(*c)) {
        Some(format!(
            "{c:?} is not a lowercase letter, a digit or a dash"
        ))
    } else if name.starts_with('-') || name.ends_with('-') {
        Some("it starts or ends with a dash".to_owned())
    } else {
        None
    };
    match problem {
        Some(problem) => Err(Error::invalid(
            field,
            format!(
                "{} is not a queue name Cloudflare accepts ({problem}): a name is 1 to 63 \
                 lowercase letters, digits and dashes, not starting or ending with a dash \
                 (^[a-z0-9]([a-z0-9-]{{0,61}}[a-z0-9])?$)",
                quoted_start(name)
            ),
        )),
        None => Ok(()),
    }
}

/// A name quoted for an error message, cut after 64 characters: a name of
/// megabytes must not make an error of megabytes.
fn quoted_start(name: &str) -> String {
    const SHOWN: usize = 64;
    match name.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}...", &name[..cut]),
        None => format!("{name:?}"),
    }
}

/// A number of seconds the API wrote, as a duration; `None` when absent or
/// not a count.
pub(crate) fn seconds(n: Option<f64>) -> Option<Duration> {
    known_u32(n).map(|s| Duration::from_secs(u64::from(s)))
}

/// A number of milliseconds the API wrote, as a duration.
pub(crate) fn millis(n: Option<f64>) -> Option<Duration> {
    crate::message::known_u64(n).map(Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_names_follow_the_rule_the_live_api_states() {
        for good in ["a", "orders", "orders-dlq", "0", &"a".repeat(63)] {
            assert!(check_new_name("queue_name", good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "Orders", "a_b", "a.b", "ä", &"a".repeat(64)] {
            let error = check_new_name("queue_name", bad).expect_err(bad);
            assert!(
                matches!(&error, Error::InvalidInput { field, .. } if field == "queue_name"),
                "{error:?}"
            );
        }
    }

    #[test]
    fn a_huge_name_is_not_copied_into_the_error() {
        let huge = "a".repeat(2 << 20);
        let error = check_new_name("dead_letter_queue", &huge).expect_err("too long");
        let text = error.to_string();
        assert!(text.len() < 400, "{} bytes", text.len());
        assert!(text.contains("2097152 characters, over the 63"), "{text}");
    }
}
