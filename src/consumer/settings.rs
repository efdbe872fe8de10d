//! The consumer's settings, their defaults, and the delay policies.

use std::time::Duration;

use crate::backoff::Backoff;

use super::RetryDelay;
use crate::error::{Error, Result};
use crate::limits::Limits;

/// The default pull batch size: the API's maximum, so that a busy queue is
/// drained with the fewest requests.
pub const DEFAULT_BATCH_SIZE: u32 = 100;
/// The default visibility timeout: Cloudflare's own default. Leases are
/// extended while handlers run, so a short lease costs nothing for slow
/// handlers and lets the messages of a crashed consumer come back soon.
pub const DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);
/// The default limit on messages in flight (asked for by pulls on their
/// way, or with their handlers): Pub/Sub's default flow control. A message
/// frees its slot when its handler settles it, not when the ack's answer
/// comes back, so at a 200 ms round trip the pulls on their way hold about
/// 1,000 slots at Cloudflare's 5,000 messages a second: twice that leaves
/// the handlers as much again.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 2_000;
/// The default number of pulls on their way at once: 16 full pulls every
/// 200 ms round trip are 8,000 messages a second, above what Cloudflare
/// serves one queue, so the queue's allowance, not the round trip, is what paces a
/// busy consumer.
pub const DEFAULT_MAX_PULLS_IN_FLIGHT: usize = 16;
/// The default queue's limit: the messages a queue serves a second, pulled
/// and (separately) settled or extended, to all its consumers together, as
/// Cloudflare documents it. Replicas of one consumer keep under it together;
/// nothing checks it before sending (the server decides).
pub const DEFAULT_QUEUE_LIMIT: u32 = 5_000;
/// The default most of the queue's allowance one consumer takes, per
/// second, of messages pulled and of leases settled or extended: 98 % of
/// Cloudflare's 5,000 of each, so that a consumer alone does not find the
/// limit by hitting it. Replicas of one queue share it on their own (see
/// the module docs, "Running several replicas").
pub const DEFAULT_QUEUE_ALLOWANCE: u32 = 4_900;
/// The former name of [`DEFAULT_QUEUE_ALLOWANCE`].
#[deprecated(since = "0.3.0", note = "renamed DEFAULT_QUEUE_ALLOWANCE")]
pub const DEFAULT_QUEUE_BUDGET: u32 = DEFAULT_QUEUE_ALLOWANCE;
/// The default limit on settlements on their way to the API (handled, not
/// yet answered): a second of Cloudflare's per-queue rate. Past it, pulling
/// waits, so that a failing ack endpoint does not let leases pile up.
pub const DEFAULT_MAX_PENDING_SETTLEMENTS: usize = 5_000;
/// The default time the last flushes get at shutdown, after the grace
/// period: `run` returns within `grace_period + flush_timeout`.
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// The shortest visibility timeout a consumer takes: the keeper extends a
/// lease a margin before it ends, and below a second that margin is less
/// than the round trip to Cloudflare, so leases would be extended back to
/// back, or lost.
pub const MIN_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(1);
/// The default soft limit on bytes in flight (100 MB): Pub/Sub's default;
/// bounds memory when bodies are large (up to 128 KB each).
pub const DEFAULT_MAX_BYTES_IN_FLIGHT: usize = 100_000_000;
/// The default ack batch size: like a pull. No limit per call is documented.
pub const DEFAULT_ACK_BATCH_SIZE: usize = 100;
/// The default ack flush interval: short next to any lease, so that a
/// handled message is deleted soon, yet long enough to gather acks under load.
pub const DEFAULT_ACK_INTERVAL: Duration = Duration::from_millis(100);
/// The default total lease of one message (1 hour): Pub/Sub's default
/// maximum lease; a handler slower than that is more likely stuck than busy.
pub const DEFAULT_MAX_LEASE: Duration = Duration::from_secs(3600);
/// The default grace period at shutdown: handlers get 10 s to finish, which
/// leaves time to release and flush within Kubernetes' default 30 s
/// termination grace.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(10);

/// Everything a consumer is configured with; built by
/// [`ConsumerBuilder`](super::ConsumerBuilder), checked once in `build`.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub batch_size: u32,
    pub visibility_timeout: Duration,
    pub max_in_flight: usize,
    pub max_bytes_in_flight: usize,
    pub ack_batch_size: usize,
    pub ack_interval: Duration,
    pub retry_delay: RetryDelay,
    pub empty_backoff: Backoff,
    pub error_backoff: Backoff,
    pub max_lease: Duration,
    pub extend_margin: Option<Duration>,
    pub grace_period: Duration,
    pub flush_timeout: Duration,
    pub max_pulls_in_flight: usize,
    pub queue_allowance: u32,
    pub queue_limit: u32,
    pub max_pending_settlements: usize,
    pub max_delay: Duration,
    /// Reading the backlog for its gauges, every this long; off by default.
    pub backlog_interval: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            batch_size: DEFAULT_BATCH_SIZE,
            visibility_timeout: DEFAULT_VISIBILITY_TIMEOUT,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_bytes_in_flight: DEFAULT_MAX_BYTES_IN_FLIGHT,
            ack_batch_size: DEFAULT_ACK_BATCH_SIZE,
            ack_interval: DEFAULT_ACK_INTERVAL,
            retry_delay: RetryDelay::default(),
            empty_backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(5)),
            error_backoff: Backoff::new(Duration::from_secs(1), Duration::from_secs(30)),
            max_lease: DEFAULT_MAX_LEASE,
            extend_margin: None,
            grace_period: DEFAULT_GRACE_PERIOD,
            flush_timeout: DEFAULT_FLUSH_TIMEOUT,
            max_pulls_in_flight: DEFAULT_MAX_PULLS_IN_FLIGHT,
            queue_allowance: DEFAULT_QUEUE_ALLOWANCE,
            queue_limit: DEFAULT_QUEUE_LIMIT,
            max_pending_settlements: DEFAULT_MAX_PENDING_SETTLEMENTS,
            max_delay: Limits::default().max_delay,
            backlog_interval: None,
        }
    }
}

impl Settings {
    /// Checks the settings against the client's limits.
    pub(crate) fn check(&mut self, limits: &Limits) -> Result<()> {
        if self.batch_size == 0 || self.batch_size > limits.max_pull_batch_size {
            return Err(Error::invalid(
                "batch_size",
                format!("must be 1 to {}", limits.max_pull_batch_size),
            ));
        }
        if self.visibility_timeout < MIN_VISIBILITY_TIMEOUT
            || self.visibility_timeout > limits.max_visibility_timeout
        {
            return Err(Error::invalid(
                "visibility_timeout",
                format!(
                    "must be {MIN_VISIBILITY_TIMEOUT:?} to {:?}: a shorter lease cannot be \
                     extended in time across a network round trip",
                    limits.max_visibility_timeout
                ),
            ));
        }
        for (field, value) in [
            ("max_in_flight", self.max_in_flight),
            ("max_bytes_in_flight", self.max_bytes_in_flight),
            ("ack_batch_size", self.ack_batch_size),
            ("max_pulls_in_flight", self.max_pulls_in_flight),
            ("queue_allowance", self.queue_allowance as usize),
            ("queue_limit", self.queue_limit as usize),
            ("max_pending_settlements", self.max_pending_settlements),
        ] {
            if value == 0 {
                return Err(Error::invalid(field, "must be at least 1"));
            }
        }
        if self.ack_batch_size > self.max_pending_settlements {
            return Err(Error::invalid(
                "ack_batch_size",
                format!(
                    "must be at most max_pending_settlements ({}): a batch that cannot fill \
                     would wait for ever when flushes go by size only",
                    self.max_pending_settlements
                ),
            ));
        }
        if self.max_lease < self.visibility_timeout {
            return Err(Error::invalid(
                "max_lease",
                "must be at least the visibility timeout",
            ));
        }
        if self
            .extend_margin
            .is_some_and(|m| m.is_zero() || m >= self.visibility_timeout)
        {
            return Err(Error::invalid(
                "extend_margin",
                "must be more than 0 and less than the visibility timeout",
            ));
        }
        if self
            .backlog_interval
            .is_some_and(|every| every < super::MIN_BACKLOG_INTERVAL)
        {
            return Err(Error::invalid(
                "read_backlog",
                format!(
                    "must be at least {:?}: each reading is a call of the token's 1,200 in \
                     five minutes",
                    super::MIN_BACKLOG_INTERVAL
                ),
            ));
        }
        self.max_delay = limits.max_delay;
        Ok(())
    }

    /// How long before a lease's expiry it is extended, before the round
    /// trip is known: the setting, or a third of the visibility timeout
    /// (10 s for 30 s), room for an extension call and its retries.
    pub(crate) fn margin(&self) -> Duration {
        self.extend_margin
            .unwrap_or(self.visibility_timeout / 3)
            .max(Duration::from_millis(1))
    }

    /// The retry delay after `attempts`, within the API's limit.
    pub(crate) fn delay_for(&self, attempts: u32) -> Duration {
        self.retry_delay.delay_for(attempts).min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_and_caps() {
        let p = RetryDelay::default();
        let secs: Vec<u64> = (1..=11).map(|a| p.delay_for(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(p.delay_for(0), Duration::from_secs(1));
        assert_eq!(p.delay_for(u32::MAX), Duration::from_secs(300));
        let f = RetryDelay::fixed(Duration::from_secs(7));
        assert_eq!(f.delay_for(9), Duration::from_secs(7));
    }

    #[test]
    fn backoff_grows_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let waits: Vec<u128> = (0..4).map(|_| b.next_wait().as_millis()).collect();
        assert_eq!(waits, [100, 200, 350, 350]);
        b.reset();
        assert_eq!(b.next_wait(), Duration::from_millis(100));
    }

    #[test]
    fn checks_refuse_what_the_api_would() {
        let limits = Limits::default();
        let mut s = Settings {
            batch_size: 101,
            ..Settings::default()
        };
        assert!(s.check(&limits).is_err());
        s.batch_size = 10;
        s.max_lease = Duration::from_secs(1);
        assert!(s.check(&limits).is_err());
        s.max_lease = DEFAULT_MAX_LEASE;
        s.extend_margin = Some(Duration::from_secs(30));
        assert!(s.check(&limits).is_err());
        s.extend_margin = None;
        assert!(s.check(&limits).is_ok());
        s.visibility_timeout = Duration::from_millis(999);
        assert!(s.check(&limits).is_err());
        s.visibility_timeout = DEFAULT_VISIBILITY_TIMEOUT;
        s.ack_batch_size = s.max_pending_settlements + 1;
        assert!(s.check(&limits).is_err());
        s.ack_batch_size = DEFAULT_ACK_BATCH_SIZE;
        assert!(s.check(&limits).is_ok());
        assert_eq!(s.margin(), Duration::from_secs(10));
    }
}
