//! What a producer did: [`ProducerStats`] (a snapshot of its counters) and
//! [`ProducerMonitor`] (reads them while it runs), as the consumer's
//! `Summary` and `ConsumerMonitor` are.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::Client;
use crate::ratelimit::TokenBudget;

/// What a producer did, as counts: a snapshot from [`ProducerMonitor::snapshot`]
/// (or [`Producer::stats`](super::Producer::stats), [`Producer::close`](super::Producer::close)).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct ProducerStats {
    /// Messages taken from the buffer into batches (refused ones included).
    pub accepted: u64,
    /// Batch pushes started (one request each, plus the queue's retries).
    pub batches: u64,
    /// Messages whose batch landed.
    pub landed: u64,
    /// Messages whose batch failed.
    pub failed: u64,
    /// Messages refused for breaking a limit on their own.
    pub rejected: u64,
    /// Messages in batches on their way.
    pub in_flight: u64,
    /// Push attempts refused with a 429 (retried or not).
    pub throttled: u64,
    /// Times the batches in flight allowed were lowered after a 429 with
    /// code 971 or 10250.
    pub slowdowns: u64,
    /// Times a batch refused for the rate (a 429 with code 971 or 10250)
    /// was held and sent again.
    pub held: u64,
    /// How long batches waited for the token's budget, added up: the
    /// pacing by the server's figures (this producer's share of them, when
    /// other users of the token spend too), and its blocks.
    pub budget_wait: Duration,
    /// The token's budget as the producer's client last saw it, and the
    /// share of it the client allows itself; `None` until an answer
    /// carried a `Ratelimit-Policy`, or when the client does not pace.
    /// See [Running several replicas](crate::producer#running-several-replicas).
    pub token_budget: Option<TokenBudget>,
}

crate::counters::live_counters!(
    /// The live counters, one per [`ProducerStats`] field, and the
    /// producer's other metrics (see [`crate::metrics`] under the `metrics`
    /// feature).
    ProducerCounters => ProducerStats {
        tallies {
            accepted,
            batches: counter("cf_queues.producer.batches"),
            landed: counter("messaging.client.sent.messages", "cf_queues.outcome" = "landed"),
            failed: counter("messaging.client.sent.messages", "cf_queues.outcome" = "failed"),
            rejected: counter("messaging.client.sent.messages", "cf_queues.outcome" = "rejected"),
            in_flight: gauge("cf_queues.producer.messages_in_flight"),
            throttled: counter("cf_queues.producer.throttled"),
            slowdowns,
            held,
        }
        filled {
            budget_wait,
            token_budget,
        }
        figures {
            batch_size: histogram("cf_queues.producer.batch.size"),
            budget_waits: histogram("cf_queues.producer.budget_wait"),
        }
    }
);

/// Reads a producer's counters while it runs, as
/// [`ConsumerMonitor`](crate::consumer::ConsumerMonitor) reads a
/// consumer's; cheap to clone, and it does not keep the producer open.
///
/// ```no_run
/// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
/// use cf_queues::producer::Producer;
/// let producer = Producer::builder(queue).build()?;
/// let monitor = producer.monitor();
/// tokio::spawn(async move {
///     loop {
///         tokio::time::sleep(std::time::Duration::from_secs(10)).await;
///         let s = monitor.snapshot();
///         println!("landed {}, in flight {}", s.landed, s.in_flight);
///     }
/// });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ProducerMonitor {
    pub(super) counters: Arc<ProducerCounters>,
    /// Microseconds batches waited for the token's budget.
    pub(super) budget_wait: Arc<AtomicU64>,
    pub(super) client: Client,
}

impl ProducerMonitor {
    /// The counters as they are now.
    pub fn snapshot(&self) -> ProducerStats {
        let mut stats = self.counters.snapshot();
        stats.budget_wait = Duration::from_micros(self.budget_wait.load(Ordering::Relaxed));
        stats.token_budget = self.client.pacer().and_then(|pacer| pacer.token_budget());
        stats
    }
}
