//! What the consumer tests share: a consumer run in a task of its own,
//! with its monitor and shutdown token at hand.

use cf_queues::PulledMessage;
use cf_queues::consumer::{
    CancellationToken, Consumer, ConsumerBuilder, ConsumerError, ConsumerMonitor, Summary, Verdict,
};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues::producer::{Producer, ProducerError};
use cf_queues::ratelimit::RateLimits;
use cf_queues::response::PushReceipt;
use cf_queues::{Client, Message, Queue};
use cf_queues_emulator::EmulatorHandle;
use cf_queues_testkit::clients::{push_texts, queue, texts};
use cf_queues_testkit::emulators::emulator;
use cf_queues_testkit::wait::{eventually, until};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Asserts counters of a [`Summary`] at once, naming them when they
/// differ: `assert_counts!(summary, acked: 5, leases_lost: 0)`.
macro_rules! assert_counts {
    ($summary:expr, $($field:ident: $value:expr),+ $(,)?) => {{
        let summary = &$summary;
        assert_eq!(
            ($(summary.$field,)+),
            ($($value,)+),
            concat!("(", $(stringify!($field), ", ",)+ ")")
        );
    }};
}
pub(crate) use assert_counts;

/// How far paused time moves at a time while a test waits for the
/// consumer's counters: a tenth of a second, finer than any interval the
/// tests check.
pub const STEP: Duration = Duration::from_millis(100);

/// A consumer running in a task: its monitor, its shutdown token and the run.
pub struct Running {
    /// The running consumer's counters.
    pub monitor: ConsumerMonitor,
    /// Cancelling it starts the consumer's shutdown.
    pub stop: CancellationToken,
    run: JoinHandle<Result<Summary, ConsumerError>>,
}

/// What [`Running`] runs: a consumer, or a builder whose settings the test
/// holds valid.
pub trait IntoConsumer {
    fn into_consumer(self) -> Consumer;
}

impl IntoConsumer for Consumer {
    fn into_consumer(self) -> Consumer {
        self
    }
}

impl IntoConsumer for ConsumerBuilder {
    fn into_consumer(self) -> Consumer {
        self.build().expect("valid settings")
    }
}

impl Running {
    /// Runs `consumer` with `handler`, one message a call, in a task.
    pub fn start<H, Fut, E>(consumer: impl IntoConsumer, handler: H) -> Running
    where
        H: Fn(PulledMessage) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Verdict, E>> + Send + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        let consumer = consumer.into_consumer();
        let (monitor, stop) = (consumer.monitor(), consumer.shutdown_token());
        let run = tokio::spawn(consumer.run(handler));
        Running { monitor, stop, run }
    }

    /// Runs `consumer` with `handler`, a batch a call, in a task.
    pub fn start_batch<H, Fut, E>(consumer: impl IntoConsumer, handler: H) -> Running
    where
        H: Fn(Vec<PulledMessage>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Verdict>, E>> + Send + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        let consumer = consumer.into_consumer();
        let (monitor, stop) = (consumer.monitor(), consumer.shutdown_token());
        let run = tokio::spawn(consumer.run_batch(handler));
        Running { monitor, stop, run }
    }

    /// Waits until the counters satisfy `done`, letting paused time move by
    /// `step` whenever nothing else can happen, up to `limit`.
    pub async fn eventually(
        &self,
        what: &str,
        step: Duration,
        limit: Duration,
        done: impl Fn(&Summary) -> bool,
    ) {
        eventually(what, step, limit, || done(&self.monitor.snapshot())).await;
    }

    /// Waits until the counters satisfy `done`, without letting paused time
    /// move.
    pub async fn until(&self, what: &str, done: impl Fn(&Summary) -> bool) {
        until(what, || done(&self.monitor.snapshot())).await;
    }

    /// Waits for the run to end (by itself, or after a cancel), with its
    /// result.
    pub async fn join(self) -> Result<Summary, ConsumerError> {
        self.run.await.expect("task")
    }

    /// Stops the consumer, and gives the summary of a run that ended
    /// without a fatal error.
    pub async fn finish(self) -> Summary {
        self.stop.cancel();
        self.join().await.expect("no fatal error")
    }
}

/// What the handlers below give back for each message.
pub type Handled = Pin<Box<dyn Future<Output = Result<Verdict, Infallible>> + Send>>;

/// A handler that acks each message after `took` (of the paused clock).
pub fn acks_after(took: Duration) -> impl Fn(PulledMessage) -> Handled + Send + Sync + 'static {
    move |_message| {
        Box::pin(async move {
            tokio::time::sleep(took).await;
            Ok(Verdict::Ack)
        })
    }
}

/// A handler that acks each message once `gate` gives it a permit, which
/// it keeps.
pub fn gated(gate: &Arc<Semaphore>) -> impl Fn(PulledMessage) -> Handled + Send + Sync + 'static {
    let gate = Arc::clone(gate);
    move |_message| {
        let gate = Arc::clone(&gate);
        Box::pin(async move {
            gate.acquire().await.map(|permit| permit.forget()).ok();
            Ok(Verdict::Ack)
        })
    }
}

/// An emulator, and its queue `name` (one request per call).
pub async fn fresh(name: &str) -> (EmulatorHandle, Queue) {
    let emulator = emulator().await;
    let queue = queue(&emulator, name);
    (emulator, queue)
}

/// An emulator, and its queue `name` (one request per call) with `count`
/// text messages pushed: `m0`, `m1`, ...
pub async fn pushed(name: &str, count: usize) -> (EmulatorHandle, Queue) {
    let emulator = emulator().await;
    let queue = pushed_to(&emulator, name, count).await;
    (emulator, queue)
}

/// Queue `name` on `emulator` (one request per call) with `count` text
/// messages pushed: `m0`, `m1`, ...
pub async fn pushed_to(emulator: &EmulatorHandle, name: &str, count: usize) -> Queue {
    let queue = queue(emulator, name);
    push_texts(&queue, count).await;
    queue
}

/// Checks that queue `name` on `emulator` has nothing left to deliver.
pub fn assert_drained(emulator: &EmulatorHandle, name: &str) {
    assert_backlog(emulator, name, 0);
}

/// Checks that queue `name` on `emulator` has `count` messages to deliver.
pub fn assert_backlog(emulator: &EmulatorHandle, name: &str, count: u64) {
    let backlog = emulator.metrics(name).backlog_count;
    assert_eq!(backlog, count, "the backlog of {name}");
}

/// A send handed to the producer in a task of its own.
pub type Sending = JoinHandle<Result<PushReceipt, ProducerError>>;

/// Hands each of `messages` to `producer` in a task of its own.
pub fn spawn_sends(producer: &Producer, messages: Vec<Message>) -> Vec<Sending> {
    let send = |message| tokio::spawn(producer.send(message));
    messages.into_iter().map(send).collect()
}

/// Sends `count` text messages one `every` apart (on paused time: a steady
/// offered load), each in a task of its own.
pub async fn sends_every(producer: &Producer, count: usize, every: Duration) -> Vec<Sending> {
    let mut sends = Vec::with_capacity(count);
    for i in 0..count {
        sends.push(tokio::spawn(producer.send(Message::text(format!("m{i}")))));
        tokio::time::sleep(every).await;
    }
    sends
}

/// Waits for every send, each of which must land.
pub async fn all_landed(sends: Vec<Sending>) {
    for send in sends {
        send.await.expect("task").expect("landed");
    }
}

/// When, counted from `started`, a handler first ran: `None` until then.
pub type FirstHandled = Arc<Mutex<Option<Duration>>>;

/// A handler that acks each message, and notes when (counted from
/// `started`) it handled the first.
pub fn noting_the_first(
    started: Instant,
) -> (
    FirstHandled,
    impl Fn(PulledMessage) -> Handled + Send + Sync + 'static,
) {
    let first = FirstHandled::default();
    let seen = Arc::clone(&first);
    let handler = move |_message| {
        let seen = Arc::clone(&seen);
        Box::pin(async move {
            seen.lock().expect("lock").get_or_insert(started.elapsed());
            Ok(Verdict::Ack)
        }) as Handled
    };
    (first, handler)
}

/// Hands `count` text messages (`m0`, `m1`, ...) to `producer`, each in a
/// task of its own, and waits, without letting paused time move, until it
/// has accepted `accepted` in all.
pub async fn handed_over(producer: &Producer, count: usize, accepted: u64) -> Vec<Sending> {
    let sends = spawn_sends(producer, texts(count));
    until("taken", || producer.stats().accepted == accepted).await;
    sends
}

/// A client with reqwest's pool timeout (90 s), shorter than the
/// emulator's idle timeout (120 s), so that a block waited out on paused
/// time never meets a connection the emulator closed.
pub fn client(emulator: &EmulatorHandle, limits: RateLimits) -> Client {
    emulator
        .client_builder()
        .expect("builder")
        .rate_limits(limits)
        .build()
        .expect("client")
}
