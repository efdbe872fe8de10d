//! [`PullSwitch`]: pausing and resuming a consumer's pulls from outside,
//! for a handler whose downstream is down (a relay's target, say).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::state::ConsumerState;

/// Pauses and resumes a consumer's pulls while it runs, from
/// [`Consumer::pull_switch`](super::Consumer::pull_switch).
///
/// While paused, no pull starts; pulls already on their way still land and
/// hand their messages over, handlers run, leases are extended and
/// settlements flushed as usual. Pausing is for a downstream that is down
/// or busy: the messages already held keep their leases (an extension
/// uses no attempt) while nothing more is leased and hidden from other
/// replicas. Shutdown is not affected. Clones control the same consumer.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use cf_queues::consumer::Consumer;
/// # let emulator = cf_queues_emulator::Emulator::new().start().await?;
/// # let queue = emulator.client()?.queue("orders")?;
/// let consumer = Consumer::builder(queue).build()?;
/// let switch = consumer.pull_switch();
/// switch.pause();
/// assert!(switch.is_paused());
/// switch.resume();
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PullSwitch {
    pub(super) shared: Arc<ConsumerState>,
}

impl fmt::Debug for PullSwitch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PullSwitch")
            .field("paused", &self.is_paused())
            .finish()
    }
}

impl PullSwitch {
    /// Starts no more pulls until [`resume`](PullSwitch::resume).
    pub fn pause(&self) {
        self.shared.pulls_paused.store(true, Ordering::Release);
    }

    /// Lets pulls start again, at once if slots are free.
    pub fn resume(&self) {
        if self.shared.pulls_paused.swap(false, Ordering::AcqRel) {
            self.shared.room.notify_waiters();
        }
    }

    /// Whether pulls are paused (by this switch).
    pub fn is_paused(&self) -> bool {
        self.shared.pulls_paused.load(Ordering::Acquire)
    }

    /// How long pulls stay stopped by a block of the credential (429 with
    /// code 971 and a long `Retry-After`), if one is on: the consumer's
    /// own pause, which neither `pause` nor `resume` changes.
    pub fn blocked_for(&self) -> Option<Duration> {
        self.shared
            .block_ends()
            .map(|end| end.saturating_duration_since(Instant::now()))
    }
}
