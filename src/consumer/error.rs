//! How a consumer stops short.

use super::*;

/// Why a consumer stopped other than by its shutdown token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumerError {
    /// A pull failed in a way that retrying cannot fix (credentials, a
    /// missing queue); the consumer shut down in order first.
    #[error("the consumer stopped: {error}")]
    Stopped {
        /// The pull's error.
        #[source]
        error: Error,
        /// What the consumer did until then, shutdown included.
        summary: Box<Summary>,
    },
    /// The consumer's task was cancelled before it finished: its runtime
    /// is shutting down. What it did is unknown.
    #[error("the consumer's task was cancelled before it finished")]
    Cancelled,
}

impl ConsumerError {
    /// What the consumer did before it stopped, when known.
    pub fn summary(&self) -> Option<&Summary> {
        match self {
            ConsumerError::Stopped { summary, .. } => Some(summary),
            ConsumerError::Cancelled => None,
        }
    }
}
