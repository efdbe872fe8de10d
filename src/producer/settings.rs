//! The producer's defaults, each with its reason.

use std::time::Duration;

/// The default linger: a push takes tens of milliseconds, so 5 ms adds
/// little latency while letting concurrent senders fill a batch.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(5);
/// The default buffer: ten full batches wait at most, enough to keep the
/// default four batches in flight busy.
pub const DEFAULT_MAX_BUFFERED: usize = 1_000;
/// The default number of batches in flight at once.
pub const DEFAULT_MAX_CONCURRENT_BATCHES: usize = 4;
/// The default send timeout: ten minutes, so that a batch outlasts one of
/// Cloudflare's five-minute blocks and the pacing after it, while a token
/// blocked again and again (shared with a process that does not pace
/// itself) or a queue overloaded for minutes fails its senders within a
/// bound they can plan for.
pub const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(600);
