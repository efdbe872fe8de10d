//! The consumer's main task: pulls as flow control allows, hands messages
//! to handlers (or a stream), backs off on empty pulls and failures, and
//! shuts down in order.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::acker;
use super::lease_keeper;
use super::shared::{Action, ConsumerState, Part};
use super::stream::Leased;
use super::summary::Summary;
use super::{ConsumerError, MESSAGING_SYSTEM};
use crate::counters::add;
use crate::error::{BodyError, Error};
use crate::message::{ContentType, PulledMessage};
use crate::request::PullOptions;
use crate::time::{after, sleep_until};

/// Spawns the handler of one message; the handle cancels it. It spawns
/// itself so that the handler's future is not boxed on top of its task.
pub(crate) type EachFn = Arc<dyn Fn(Leased) -> tokio::task::AbortHandle + Send + Sync>;
/// Handles the messages of one pull.
pub(crate) type BatchFn = Arc<dyn Fn(Vec<Leased>) -> BoxFuture<'static, ()> + Send + Sync>;
/// Handles a message whose body cannot be decoded.
pub(crate) type PoisonFn = Arc<dyn Fn(Leased, BodyError) -> BoxFuture<'static, ()> + Send + Sync>;

/// Where pulled messages go.
pub(crate) enum Mode {
    Each(EachFn),
    Batch(BatchFn),
    Stream(mpsc::UnboundedSender<Leased>),
}

/// Runs the consumer until it is told to stop, or a pull fails for good;
/// then shuts down: grace period, release, last flush.
pub(crate) async fn drive(
    shared: Arc<ConsumerState>,
    mode: Mode,
    poison: PoisonFn,
) -> Result<Summary, ConsumerError> {
    let stop_keeper = CancellationToken::new();
    let keeper = spawn_part(
        &shared,
        Part::Keeper,
        lease_keeper::keep(Arc::clone(&shared), stop_keeper.clone()),
    );
    let acker = spawn_part(&shared, Part::Acker, acker::run(Arc::clone(&shared)));

    let fatal = pull_loop(&shared, &mode, &poison).await;
    shared.stopping.cancel();
    // A stream ends here: its holder gets no more messages.
    drop(mode);
    tracing::info!(queue = shared.queue.id(), "consumer shutting down");

    grace(&shared).await;
    let (released, aborts) = shared.table().release_all();
    for abort in aborts {
        abort.abort();
    }
    if !released.is_empty() {
        tracing::info!(
            queue = shared.queue.id(),
            messages = released.len(),
            "releasing messages whose handlers did not finish within the grace period"
        );
    }
    for key in released {
        shared.send_settlement(key, Action::Release);
    }
    let (done, flushed) = oneshot::channel();
    shared.inbox.finish(done);
    // Dropped unanswered when the acker panicked; that panic is resumed below.
    let _ = flushed.await;
    // These tasks catch their own panics: an error here is the runtime
    // shutting down, which cancels this task too.
    let _ = acker.await;
    stop_keeper.cancel();
    let _ = keeper.await;
    if let Some(panic) = shared.take_crash() {
        // A bug of the consumer's own must not pass for a clean summary.
        std::panic::resume_unwind(panic);
    }

    let summary = shared.counters.snapshot();
    tracing::info!(queue = shared.queue.id(), ?summary, "consumer stopped");
    match fatal {
        Some(error) => Err(ConsumerError::Stopped {
            error,
            summary: Box::new(summary),
        }),
        None => Ok(summary),
    }
}

/// Spawns a task of the consumer's own. A panic in it stops the consumer,
/// whose driver resumes it after the shutdown, instead of the task dying
/// unnoticed while the consumer runs on without it.
fn spawn_part(
    shared: &Arc<ConsumerState>,
    part: Part,
    task: impl Future<Output = ()> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        if let Err(panic) = CatchUnwind(Box::pin(task)).await {
            shared.crashed(part, panic);
        }
    })
}

/// A future whose panic while polled becomes `Err` with its payload.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.get_mut().0.as_mut();
        // The state these tasks share is behind locks that stay consistent
        // when poisoned; the task itself is never polled again.
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// Waits until every handler settled, or the grace period is over.
async fn grace(shared: &ConsumerState) {
    // A grace period too long for the clock waits for every handler.
    let end = after(Instant::now(), shared.settings.grace_period);
    loop {
        let mut idle = pin!(shared.idle.notified());
        idle.as_mut().enable();
        if shared.table().handling() == 0 {
            return;
        }
        tokio::select! {
            () = idle => {}
            () = sleep_until(end) => return,
        }
    }
}

/// Sleeps, unless the consumer stops first; true if it stopped.
async fn sleep_or_stop(shared: &ConsumerState, wait: Duration) -> bool {
    if wait.is_zero() {
        return shared.stopping.is_cancelled();
    }
    tokio::select! {
        () = shared.stopping.cancelled() => true,
        () = tokio::time::sleep(wait) => false,
    }
}

/// Waits until at least one message may be pulled; how many may be, or
/// `None` when the consumer stops first.
async fn reserve(shared: &ConsumerState) -> Option<u32> {
    let settings = &shared.settings;
    // Sizes are known only after a pull: the byte limit is soft.
    loop {
        let mut freed = pin!(shared.bytes_freed.notified());
        freed.as_mut().enable();
        let bytes = shared
            .counters
            .in_flight_bytes
            .load(std::sync::atomic::Ordering::Relaxed);
        if bytes < settings.max_bytes_in_flight as u64 {
            break;
        }
        tokio::select! {
            () = shared.stopping.cancelled() => return None,
            () = freed => {}
        }
    }
    let first = tokio::select! {
        () = shared.stopping.cancelled() => return None,
        permit = shared.slots.acquire() => permit.ok()?,
    };
    first.forget();
    let mut count: u32 = 1;
    // Only this task takes slots: what is free now stays free until taken.
    let free = shared.slots.available_permits();
    let extra = (settings.batch_size - 1).min(u32::try_from(free).unwrap_or(u32::MAX));
    if extra > 0
        && let Ok(more) = shared.slots.try_acquire_many(extra)
    {
        more.forget();
        count += extra;
    }
    Some(count)
}

/// Pulls until the consumer stops (`None`) or a pull fails in a way that
/// retrying cannot fix (`Some`).
async fn pull_loop(shared: &Arc<ConsumerState>, mode: &Mode, poison: &PoisonFn) -> Option<Error> {
    let settings = &shared.settings;
    let mut empty = settings.empty_backoff;
    let mut failing = settings.error_backoff;
    loop {
        let count = reserve(shared).await?;
        let span = tracing::info_span!(
            "receive",
            otel.name = %format_args!("receive {}", shared.queue.id()),
            otel.kind = "client",
            messaging.system = MESSAGING_SYSTEM,
            messaging.destination.name = shared.queue.id(),
            messaging.operation.type = "receive",
            messaging.operation.name = "pull",
            messaging.batch.message_count = tracing::field::Empty,
        );
        let options = PullOptions::new()
            .batch_size(count)
            .visibility_timeout(settings.visibility_timeout);
        // Lease expiries are estimated from here: the server cannot have
        // started a lease before the request was sent.
        let sent = Instant::now();
        // A pull in flight is not cancelled at shutdown: what it leased is
        // released with the shutdown's flush instead of coming back only
        // after its lease.
        let result = shared.queue.pull(options).instrument(span.clone()).await;
        if let Ok(batch) = &result {
            span.record("messaging.batch.message_count", batch.messages.len());
        }
        // The receive span ends with the pull, not after a wait.
        drop(span);
        let wait = match result {
            Err(error) => {
                shared.return_slots(count as usize);
                add(&shared.counters.pull_errors, 1);
                if !error.is_retryable() {
                    tracing::error!(queue = shared.queue.id(), %error, "pull failed for good; the consumer stops");
                    return Some(error);
                }
                let wait = error
                    .retry_after()
                    .filter(|d| *d <= Duration::from_secs(60))
                    .unwrap_or_else(|| failing.next_wait());
                tracing::warn!(
                    queue = shared.queue.id(),
                    %error,
                    wait_ms = wait.as_millis() as u64,
                    "pull failed; backing off"
                );
                wait
            }
            Ok(batch) => {
                failing.reset();
                let got = batch.messages.len();
                let counters = &shared.counters;
                add(&counters.pulls, 1);
                add(&counters.received, got as u64);
                // An answer that does not say keeps the last known backlog.
                if let Some(backlog) = batch.backlog_count {
                    counters
                        .backlog
                        .store(backlog, std::sync::atomic::Ordering::Relaxed);
                }
                let messages = settleable(shared, batch.messages);
                // The slots were reserved for `count` messages: give back
                // what is unused, take (or owe) what a longer answer needs.
                let used = messages.len();
                let reserved = count as usize;
                if used < reserved {
                    shared.return_slots(reserved - used);
                } else if used > reserved {
                    shared.take_slots(used - reserved);
                }
                dispatch(shared, mode, poison, messages, sent);
                if got == 0 {
                    add(&counters.empty_pulls, 1);
                    empty.next_wait()
                } else if got < count as usize {
                    // The queue had fewer visible messages than asked for.
                    empty.reset();
                    empty.initial
                } else {
                    empty.reset();
                    Duration::ZERO
                }
            }
        };
        if sleep_or_stop(shared, wait).await {
            return None;
        }
    }
}

/// The messages that can be settled: those with a lease id. One without
/// can be neither acked, retried nor extended (and would make the API
/// refuse every ack sent with it), so it is counted, logged and left to
/// come back when the lease it was pulled with expires.
fn settleable(shared: &ConsumerState, mut messages: Vec<PulledMessage>) -> Vec<PulledMessage> {
    let before = messages.len();
    messages.retain(|message| {
        let has_lease = !message.lease_id.as_str().is_empty();
        if !has_lease {
            tracing::error!(
                queue = shared.queue.id(),
                message_id = %message.id,
                attempts = message.attempts,
                "a pulled message has no lease id: it cannot be settled, so it is not handled and comes back after the visibility timeout"
            );
        }
        has_lease
    });
    add(
        &shared.counters.unsettleable,
        (before - messages.len()) as u64,
    );
    messages
}

/// Why a body cannot be decoded, if it cannot.
fn undecodable(message: &PulledMessage) -> Option<BodyError> {
    let body = message.body();
    match body.content_type() {
        ContentType::Text => None,
        ContentType::Json => body.json::<serde::de::IgnoredAny>().err(),
        _ => body.bytes().err(),
    }
}

fn dispatch(
    shared: &Arc<ConsumerState>,
    mode: &Mode,
    poison: &PoisonFn,
    messages: Vec<PulledMessage>,
    sent: Instant,
) {
    if messages.is_empty() {
        return;
    }
    let registered = shared.register(messages, sent);
    if shared.stopping.is_cancelled() {
        // Pulled while shutting down: the tickets release them as they drop.
        return;
    }
    let mut batch = Vec::new();
    let mut tasks = Vec::with_capacity(registered.len());
    for (message, ticket) in registered {
        let key = ticket.key;
        if let Some(error) = undecodable(&message) {
            add(&shared.counters.poisoned, 1);
            tracing::warn!(
                queue = shared.queue.id(),
                message_id = %message.id,
                content_type = %message.content_type(),
                %error,
                "a message body cannot be decoded; it goes to the poison callback"
            );
            let task = tokio::spawn(poison(Leased::new(message, ticket), error));
            tasks.push((key, task.abort_handle()));
            continue;
        }
        let leased = Leased::new(message, ticket);
        match mode {
            Mode::Each(spawn_handler) => tasks.push((key, spawn_handler(leased))),
            Mode::Batch(_) => batch.push((key, leased)),
            Mode::Stream(sender) => {
                // A stream that is gone drops the message, which releases it.
                let _ = sender.send(leased);
            }
        }
    }
    if let Mode::Batch(handler) = mode
        && !batch.is_empty()
    {
        let (keys, leased): (Vec<u64>, Vec<Leased>) = batch.into_iter().unzip();
        let task = tokio::spawn(handler(leased));
        tasks.extend(keys.into_iter().map(|key| (key, task.abort_handle())));
    }
    let mut table = shared.table();
    for (key, abort) in tasks {
        table.set_abort(key, abort);
    }
}

/// The span of one handler call, after OpenTelemetry's messaging conventions.
pub(crate) fn process_span(queue: &str, message: &PulledMessage) -> tracing::Span {
    tracing::info_span!(
        "process",
        otel.name = %format_args!("process {queue}"),
        otel.kind = "consumer",
        messaging.system = MESSAGING_SYSTEM,
        messaging.destination.name = queue,
        messaging.operation.type = "process",
        messaging.operation.name = "process",
        messaging.message.id = %message.id,
        messaging.cloudflare_queues.attempts = message.attempts,
    )
}

/// The span of one batch handler call.
pub(crate) fn process_batch_span(queue: &str, count: usize) -> tracing::Span {
    tracing::info_span!(
        "process",
        otel.name = %format_args!("process {queue}"),
        otel.kind = "consumer",
        messaging.system = MESSAGING_SYSTEM,
        messaging.destination.name = queue,
        messaging.operation.type = "process",
        messaging.operation.name = "process",
        messaging.batch.message_count = count,
    )
}
