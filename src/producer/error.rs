//! [`ProducerError`]: why a message sent to a producer did not land.

use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::message::Message;

/// Why a message sent to a [`Producer`](super::Producer) did not land.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProducerError {
    /// The message breaks a limit on its own (its size, its delay): it was
    /// not sent, and the other messages were not held up.
    #[error("the message was refused before sending: {0}")]
    Rejected(Arc<Error>),
    /// The batch carrying the message failed; every message of that batch
    /// gets this error. [`ProducerError::may_have_landed`] tells whether it
    /// may have landed anyway.
    #[error("the batch carrying the message failed: {0}")]
    Failed(Arc<Error>),
    /// The message's batch was refused for the rate on every attempt (a 429
    /// with code 971 or 10250, or held back by the pacer: nothing landed)
    /// until its [send timeout](super::ProducerBuilder::send_timeout) passed, or
    /// would have before the next attempt could go.
    #[error(
        "not pushed within the send timeout of {timeout:?}: {attempts} attempts refused for the rate, nothing landed; the last: {last}"
    )]
    #[non_exhaustive]
    TimedOut {
        /// The send timeout in force.
        timeout: Duration,
        /// How many requests carried the batch, every one refused.
        attempts: u32,
        /// The last refusal.
        last: Arc<Error>,
    },
    /// The producer was closed before it took the message, which is handed back.
    #[error("the producer is closed")]
    Closed(Box<Message>),
    /// The producer's task ended (its runtime shut down) before the
    /// message's outcome was known.
    #[error("the producer stopped before the message's outcome was known{}", if *may_have_landed { " (it may have landed)" } else { " (it was not sent)" })]
    #[non_exhaustive]
    Dropped {
        /// Whether its batch was on its way (it may have landed), rather
        /// than the message still waiting in the producer (it did not).
        may_have_landed: bool,
    },
}

impl ProducerError {
    /// The error behind a rejected message or a failed batch.
    pub fn error(&self) -> Option<&Error> {
        match self {
            ProducerError::Rejected(error)
            | ProducerError::Failed(error)
            | ProducerError::TimedOut { last: error, .. } => Some(error),
            ProducerError::Closed(_) | ProducerError::Dropped { .. } => None,
        }
    }

    /// Whether the message may have landed despite this error, so that
    /// sending it again may duplicate it: see [`Error::may_have_landed`]
    /// for a failed batch; a rejected message, one whose batch was refused
    /// until its send timeout, one the closed producer handed back, and one
    /// still waiting when the producer stopped did not land.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use cf_queues::Message;
    /// use cf_queues::producer::Producer;
    /// # let emulator = cf_queues_emulator::Emulator::new().start().await?;
    /// # let queue = emulator.client()?.queue("events")?;
    /// let producer = Producer::builder(queue).build()?;
    /// let message = Message::text("order 17");
    /// if let Err(error) = producer.send(message.clone()).await {
    ///     if !error.may_have_landed() {
    ///         // Surely not pushed: sending it again cannot duplicate it.
    ///         producer.send(message).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn may_have_landed(&self) -> bool {
        match self {
            ProducerError::Failed(error) => error.may_have_landed(),
            ProducerError::Dropped { may_have_landed } => *may_have_landed,
            ProducerError::Rejected(_)
            | ProducerError::TimedOut { .. }
            | ProducerError::Closed(_) => false,
        }
    }
}
