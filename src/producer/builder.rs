//! [`ProducerBuilder`]: the producer's settings, checked once in `build`,
//! which starts its worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};

use crate::batch::BatchPlanner;
use crate::error::{Error, Result};
use crate::instance::{Instance, Kind};
use crate::queue::Queue;

use super::producer::Producer;
use super::settings::{
    DEFAULT_LINGER, DEFAULT_MAX_BUFFERED, DEFAULT_MAX_CONCURRENT_BATCHES, DEFAULT_SEND_TIMEOUT,
};
use super::summary::{ProducerCounters, ProducerMonitor};
use super::worker::{Flow, Worker};

/// Configures a [`Producer`]. Every setting has a default, given with its
/// reason on each method.
#[derive(Debug, Clone)]
#[must_use]
pub struct ProducerBuilder {
    queue: Queue,
    linger: Duration,
    max_buffered: usize,
    max_concurrent_batches: usize,
    send_timeout: Duration,
    instance: Option<String>,
}

impl Producer {
    /// A builder for a producer pushing to `queue`, with the defaults.
    pub fn builder(queue: Queue) -> ProducerBuilder {
        ProducerBuilder {
            queue,
            linger: DEFAULT_LINGER,
            max_buffered: DEFAULT_MAX_BUFFERED,
            max_concurrent_batches: DEFAULT_MAX_CONCURRENT_BATCHES,
            send_timeout: DEFAULT_SEND_TIMEOUT,
            instance: None,
        }
    }
}

impl ProducerBuilder {
    crate::__setters! {
        /// How long the first message of a batch waits for others before the
        /// batch is sent anyway; a full batch goes at once. Default
        /// [`DEFAULT_LINGER`] (5 ms): a push takes tens of milliseconds, so it
        /// adds little latency while concurrent senders fill a batch.
        /// [`Duration::MAX`] sends a batch only when it is full, at
        /// [`Producer::flush`] and at close.
        linger(linger: Duration) => self.linger;

        /// How many messages may wait for a batch before senders wait too
        /// (backpressure); at least 1. Default [`DEFAULT_MAX_BUFFERED`] (1,000):
        /// ten full batches, enough to keep the default batches in flight busy.
        max_buffered(messages: usize) => self.max_buffered;

        /// How many batches may be on their way at once; at least 1. Default
        /// [`DEFAULT_MAX_CONCURRENT_BATCHES`] (4): enough to hide a push's round
        /// trip under load. It does not set the pace: the client's pacing by
        /// the token's budget does (about 3.86 batches a second per token at
        /// Cloudflare's figures). A 429 with code 971 or 10250 halves it for a
        /// while.
        max_concurrent_batches(batches: usize) => self.max_concurrent_batches;

        /// How long a message may take to land, from when the producer takes it
        /// from the buffer, as far as refusals for the rate go: a batch refused
        /// with a 429 with code 971 or 10250 (nothing landed) is sent again,
        /// after the wait the refusal asked and the pacer's, until the timeout
        /// of its oldest message passes; then its senders get
        /// [`ProducerError::TimedOut`](super::ProducerError::TimedOut). A resend that could only start after
        /// the timeout is not waited for. Default [`DEFAULT_SEND_TIMEOUT`] (10
        /// minutes): a batch outlasts one of Cloudflare's five-minute blocks,
        /// and its senders still learn within a bound. [`Duration::ZERO`] sends
        /// each batch once (the queue's retry policy aside); [`Duration::MAX`]
        /// until it lands. Other failures are not resent: see
        /// [Retries](super#retries).
        send_timeout(timeout: Duration) => self.send_timeout;
    }

    /// The producer's label in its gauges (`cf_queues.instance`, under the
    /// `metrics` feature), which tells two producers of one queue in one
    /// process apart: 1 to 64 ASCII letters, digits, `.`, `_` or `-`, never
    /// a secret. Default: the smallest number no other living producer of
    /// the process holds (`"1"`, `"2"`, …), given back when its task ends.
    pub fn instance(mut self, name: impl Into<String>) -> ProducerBuilder {
        self.instance = Some(name.into());
        self
    }

    /// Starts the producer's task.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a buffer or a concurrency of 0, or an
    /// [`instance`](ProducerBuilder::instance) name that is not a short label.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn build(self) -> Result<Producer> {
        if self.max_buffered == 0 {
            return Err(Error::invalid("max_buffered", "must be at least 1"));
        }
        let max_batches = self
            .max_concurrent_batches
            .min(Semaphore::MAX_PERMITS)
            .min(u32::MAX as usize);
        if max_batches == 0 {
            return Err(Error::invalid(
                "max_concurrent_batches",
                "must be at least 1",
            ));
        }
        let instance = Instance::new(Kind::Producer, self.instance.as_deref())?;
        let (sender, receiver) = mpsc::channel(self.max_buffered);
        let counters = Arc::new(ProducerCounters::new(self.queue.id(), instance.label()));
        let budget_wait = Arc::new(AtomicU64::new(0));
        let client = self.queue.client().clone();
        let worker = Worker {
            budget_wait: Arc::clone(&budget_wait),
            planner: BatchPlanner::new(*self.queue.client().limits()),
            queue_id: Arc::from(self.queue.id()),
            queue: self.queue,
            receiver,
            linger: self.linger,
            flow: Arc::new(Flow::new(max_batches)),
            permits: Arc::new(Semaphore::new(max_batches)),
            max_batches: max_batches as u32,
            send_timeout: self.send_timeout,
            counters: Arc::clone(&counters),
            sealed: None,
            linger_ends: None,
            linger_over: false,
            flushes: Vec::new(),
            closers: Vec::new(),
            drained: false,
            finished: false,
            _instance: instance,
        };
        tokio::spawn(worker.run());
        Ok(Producer {
            sender,
            closed: Arc::new(AtomicBool::new(false)),
            monitor: ProducerMonitor {
                counters,
                budget_wait,
                client,
            },
        })
    }
}
