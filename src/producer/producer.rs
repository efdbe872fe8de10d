//! [`Producer`]: the handle senders use (send, flush, close), and the
//! reply each queued message waits on.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{mpsc, oneshot};

use crate::error::Result;
use crate::message::Message;
use crate::response::PushReceipt;

use super::error::ProducerError;
use super::summary::{ProducerMonitor, ProducerStats};

pub(super) type SenderReply = oneshot::Sender<Result<PushReceipt, ProducerError>>;

/// A reply for a message that will not be sent: its producer stopped
/// before sending it.
pub(super) fn not_sent(reply: SenderReply) {
    let _ = reply.send(Err(ProducerError::Dropped {
        may_have_landed: false,
    }));
}

pub(super) enum Queued {
    Message(Message, SenderReply),
    Flush(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
}

/// An auto-batching producer for one queue; see [the module](super).
///
/// Cheap to clone: clones share the buffer, the batches and the counters.
///
/// # Drop
///
/// When the last handle is dropped, what the producer holds is pushed in
/// the background and its senders still get their outcomes; see
/// [Close and drop](super#close-and-drop).
#[derive(Clone, Debug)]
pub struct Producer {
    pub(super) sender: mpsc::Sender<Queued>,
    pub(super) closed: Arc<AtomicBool>,
    pub(super) monitor: ProducerMonitor,
}

impl std::fmt::Debug for Queued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Queued::Message(..) => "Message",
            Queued::Flush(_) => "Flush",
            Queued::Close(_) => "Close",
        })
    }
}

impl Producer {
    /// Sends one message; the future resolves to that message's own outcome.
    ///
    /// The message is handed to the producer when the future is first
    /// polled, after waiting for room in the buffer (backpressure): create
    /// many of these futures and await them together to let them share
    /// batches. The future is `'static`: it can be spawned.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use cf_queues::Message;
    /// use cf_queues::producer::{Producer, ProducerError};
    /// # let emulator = cf_queues_emulator::Emulator::new().start().await?;
    /// # let queue = emulator.client()?.queue("events")?;
    /// let producer = Producer::builder(queue).build()?;
    /// // Spawned: the outcome is awaited elsewhere, the message batched meanwhile.
    /// let pending = tokio::spawn(producer.send(Message::text("hello")));
    /// match producer.send(Message::text("x".repeat(200_000))).await {
    ///     Err(ProducerError::Rejected(error)) => println!("refused alone: {error}"),
    ///     other => panic!("{other:?}"),
    /// }
    /// pending.await??;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ProducerError::Rejected`] for a message that breaks a limit on its
    /// own, [`ProducerError::Failed`] when its batch failed,
    /// [`ProducerError::TimedOut`] when it was refused for the rate until
    /// its send timeout,
    /// [`ProducerError::Closed`] after [`Producer::close`], and
    /// [`ProducerError::Dropped`] when the runtime shut down first. Each
    /// says whether the message may have landed
    /// ([`ProducerError::may_have_landed`]).
    ///
    /// # Cancellation
    ///
    /// Dropping the future before the producer took the message sends
    /// nothing; after, the message is still pushed, and only its outcome is
    /// lost.
    pub fn send(
        &self,
        message: Message,
    ) -> impl Future<Output = Result<PushReceipt, ProducerError>> + Send + use<> {
        let sender = self.sender.clone();
        let closed = Arc::clone(&self.closed);
        async move {
            if closed.load(Ordering::Acquire) {
                return Err(ProducerError::Closed(Box::new(message)));
            }
            let Ok(permit) = sender.reserve().await else {
                return Err(ProducerError::Closed(Box::new(message)));
            };
            let (reply, outcome) = oneshot::channel();
            permit.send(Queued::Message(message, reply));
            // Only the handles keep the producer open: once they are all
            // dropped it flushes, even while outcomes are awaited.
            drop(sender);
            // A reply dropped unsent: the producer's task died with its
            // runtime, maybe with the batch on its way.
            outcome.await.unwrap_or(Err(ProducerError::Dropped {
                may_have_landed: true,
            }))
        }
    }

    /// Sends what is buffered now, without waiting for the linger, and
    /// waits until every message handed over before this call has its
    /// outcome. After [`Producer::close`] it returns at once.
    ///
    /// # Cancellation
    ///
    /// Dropping the future stops the wait only: the messages are sent.
    pub async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.sender.send(Queued::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
    }

    /// Closes the producer for every handle: later sends fail with
    /// [`ProducerError::Closed`]; everything handed over before is pushed,
    /// and this waits until all of it has its outcome. Returns the counts.
    pub async fn close(&self) -> ProducerStats {
        self.closed.store(true, Ordering::Release);
        let (done, closed) = oneshot::channel();
        if self.sender.send(Queued::Close(done)).await.is_ok() {
            let _ = closed.await;
        } else {
            // Closed already: wait for the producer's task to finish.
            self.sender.closed().await;
        }
        self.stats()
    }

    /// What the producer did so far: its [monitor](Producer::monitor)'s
    /// snapshot now.
    pub fn stats(&self) -> ProducerStats {
        self.monitor.snapshot()
    }

    /// A handle that reads the producer's counters while it runs; see
    /// [`ProducerMonitor`].
    pub fn monitor(&self) -> ProducerMonitor {
        self.monitor.clone()
    }
}
