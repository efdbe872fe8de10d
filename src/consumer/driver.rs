//! The consumer's main task: starts the acker and the lease keeper, runs
//! the [puller](super::puller), which hands messages over as
//! [`dispatch`](super::dispatch) says, and shuts down in order, within the
//! grace period and the flush timeout.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ConsumerError;
use super::acker;
use super::backlog_reader::BacklogReader;
use super::dispatch::{Mode, PoisonFn};
use super::lease_keeper;
use super::puller::Puller;
use super::settlement::SettlementKind;
use super::state::{ConsumerState, Part};
use super::summary::Summary;
use crate::time::{after, sleep_until};

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
    // Reads for as long as the consumer runs (it stops when dropped).
    let _backlog = shared
        .settings
        .backlog_interval
        .and_then(|every| BacklogReader::start(shared.queue.clone(), every).ok());

    let mut puller = Puller::new(Arc::clone(&shared));
    let fatal = puller.run(&mode, &poison).await;
    shared.stopping.cancel();
    tracing::info!(queue = shared.queue.id(), "consumer shutting down");

    grace(&shared, &mut puller, &mode, &poison).await;
    // What is still on its way is dropped: those messages come back when
    // their leases expire. A stream ends here: its holder gets no more.
    drop(puller);
    shared.grace_over.cancel();
    drop(mode);
    let (released, aborts, bytes) = shared.table().release_all();
    for abort in aborts {
        abort.abort();
    }
    shared.handed_back(released.len(), bytes);
    if !released.is_empty() {
        tracing::info!(
            queue = shared.queue.id(),
            messages = released.len(),
            "releasing messages whose handlers did not finish within the grace period"
        );
    }
    for key in released {
        shared.send_settlement(key, SettlementKind::Release);
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

/// Waits until every handler settled and every pull on its way landed
/// (what it brings goes to the handlers too), or the grace period is over.
async fn grace(shared: &ConsumerState, puller: &mut Puller, mode: &Mode, poison: &PoisonFn) {
    // A grace period too long for the clock waits for every handler.
    let end = after(Instant::now(), shared.settings.grace_period);
    loop {
        let mut idle = pin!(shared.idle.notified());
        idle.as_mut().enable();
        let pulling = puller.has_pulls_in_flight();
        if shared.table().handling() == 0 && !pulling {
            return;
        }
        tokio::select! {
            () = idle => {}
            () = puller.land_next(mode, poison), if pulling => {}
            () = sleep_until(end) => return,
        }
    }
}
