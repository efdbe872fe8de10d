//! [`RecentlyEnabled`]: the queues a client enabled HTTP pull on within
//! Cloudflare's propagation window.
//!
//! Right after HTTP pull is enabled, Cloudflare can still answer a pull
//! with "not enabled" (405, code 0) while the consumer's configuration
//! spreads (`queues-facts.md`, "Queues and consumers as resources"). A pull
//! within [`PROPAGATION_WINDOW`] of this client enabling it is tried again
//! instead of failing; any other such answer is the queue's real state.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How long after enabling HTTP pull a "not enabled" answer is taken for
/// propagation: Cloudflare gives no figure, and reports speak of seconds;
/// a minute covers them without hiding a real misconfiguration for long.
pub const PROPAGATION_WINDOW: Duration = Duration::from_secs(60);

/// The most queues remembered at once: expired entries are dropped first,
/// then the oldest, so the memory stays bounded whatever a caller does.
const MAX_REMEMBERED: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct RecentlyEnabled {
    until: Mutex<HashMap<String, Instant>>,
}

impl RecentlyEnabled {
    /// Notes that HTTP pull was enabled on `queue_id` now.
    pub(crate) fn note(&self, queue_id: &str) {
        let now = Instant::now();
        let mut until = self.until.lock().unwrap_or_else(PoisonError::into_inner);
        if until.len() >= MAX_REMEMBERED {
            until.retain(|_, ends| *ends > now);
        }
        let oldest = (until.len() >= MAX_REMEMBERED)
            .then(|| {
                until
                    .iter()
                    .min_by_key(|(_, ends)| **ends)
                    .map(|(q, _)| q.clone())
            })
            .flatten();
        if let Some(oldest) = oldest {
            until.remove(&oldest);
        }
        until.insert(queue_id.to_owned(), now + PROPAGATION_WINDOW);
    }

    /// Forgets `queue_id`: HTTP pull was disabled, so "not enabled" is true.
    pub(crate) fn forget(&self, queue_id: &str) {
        self.until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(queue_id);
    }

    /// Until when a "not enabled" answer on `queue_id` is propagation.
    pub(crate) fn until(&self, queue_id: &str) -> Option<Instant> {
        let now = Instant::now();
        self.until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(queue_id)
            .copied()
            .filter(|ends| *ends > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_queue_is_remembered_for_the_window_and_the_memory_is_bounded() {
        let recent = RecentlyEnabled::default();
        recent.note("q");
        assert!(recent.until("q").is_some());
        assert!(recent.until("other").is_none());
        tokio::time::advance(PROPAGATION_WINDOW).await;
        assert!(recent.until("q").is_none());
        for i in 0..MAX_REMEMBERED + 10 {
            recent.note(&format!("q{i}"));
        }
        let len = recent.until.lock().map(|m| m.len()).unwrap_or(0);
        assert_eq!(len, MAX_REMEMBERED);
        recent.forget(&format!("q{}", MAX_REMEMBERED + 9));
        assert!(recent.until(&format!("q{}", MAX_REMEMBERED + 9)).is_none());
    }
}
