//! When a failed attempt is tried again, and after how long.
//!
//! The defaults match Cloudflare's official SDKs (2 retries, backoff
//! `min(0.5 s × 2ⁿ, 8 s)` with jitter, `retry-after-ms` then `Retry-After`
//! honoured up to 60 s, `x-should-retry` obeyed), with one difference that
//! matters for a queue: a push is only retried when it surely did not land,
//! so a retry never duplicates a message unless you ask for at-least-once.
//!
//! This module only decides, from the one `RetryClass` each failure got;
//! the loop that waits and sends again is the call path (`retry_loop.rs`), which
//! also owns the deadline.
//!
//! # The rules
//!
//! Retries (`ClientBuilder::retry`, with a `retry::RetryPolicy`) follow the official SDKs: 2 retries,
//! backoff `min(0.5 s × 2ⁿ, 8 s)` with jitter, `retry-after-ms` then `Retry-After` honoured up to 60 s,
//! `x-should-retry` obeyed (a 429 asking for longer ends the call at once, with `retry_after()`); the idempotent operations (pull, ack, extend, peek, purge by ref, preview,
//! delete previewed, metrics, purge status) retry after connection errors, timeouts, 408, 409, 429 and
//! 5xx. **Pushes, and the purge of a whole queue, are different**: the SDKs retry them blindly, which
//! can duplicate a message (or, for a purge, delete what was pushed in between). Here they are retried
//! only when they surely did not land (connection refused, or a 429 whose code says it was refused for
//! its rate: 10250 or 971), whatever the server's `x-should-retry` says, unless you opt into
//! `retry::PushRetries::AtLeastOnce` (`RetryPolicy::pushes` for pushes, `RetryPolicy::purge_all` for
//! the purge, each on its own). `RetryPolicy::none()` sends exactly one request per call. A retried
//! ack, extension, purge or preview deletion whose first answer was lost reports the already-used
//! leases or refs as warnings. `Queue::with_retry` and `Queue::with_deadline` override the client's
//! policy and deadline for one handle, and so for one call.
//!
//! # Each fault and its default handling (each tested)
//!
//! | fault | default behaviour (tested) |
//! |---|---|
//! | 500, 500, 200 on a pull | succeeds on the 3rd attempt |
//! | 503 forever | `Error::Api` after 3 attempts, `is_retryable()` |
//! | 500 on a push | not retried (it may have landed): one request, `Error::Api` 500 |
//! | 500 on a push, `AtLeastOnce` | retried, lands once |
//! | 429 `QueueOverloaded` on a push | retried (it did not land) |
//! | 429 without a code (a proxy's HTML page) on a push | not retried: it is not known to be refused |
//! | 429 `QueueDisabled` | not retried; neither `is_rate_limited()` nor `is_retryable()` |
//! | 429 with `Retry-After: 30` | waits exactly 30 s (tested on a paused clock), then succeeds |
//! | 429 / 971 with `Retry-After: 300` (Cloudflare's five-minute block) | fails at once, `retry_after()` 300 s, `may_have_landed()` false; the client's next counted calls fail unsent with `Error::RateLimited` until it ends (tested) |
//! | `x-should-retry: false` on a 503 | not retried |
//! | `x-should-retry: true` on a push's 503 | not retried (a pull is) |
//! | a 503 asking to wait 10 s, with a 2 s deadline | the wait is not started: `Error::Api` 503 after one request |
//! | connection reset on a pull | retried on a new connection |
//! | connection reset on a push | not retried: `Error::Transport` |
//! | connection refused, then a server appears | retried, even a push: it never left |
//! | server stalls past the per-attempt timeout | `Error::Transport` (`is_timeout`) |
//! | server stalls past the overall deadline | `Error::Timeout` |
//! | a 500, then a retry that stalls past the deadline | `Error::Timeout` after 2 attempts, keeping the 500 as `last_error` |
//! | `deadline(Duration::MAX)`, or a `Retry-After` of 2⁶⁴ s | no deadline; the `Retry-After` read as five minutes (see the caps below); a wait that does not fit the deadline is not started (never a panic) |
//! | 429 with `Retry-After: 0` | the retry waits the backoff, never less |
//! | HTML 502, empty 503, invalid JSON, truncated JSON, 200 KB over a 64 KB cap | `Error::Api` with snippet, `Error::Decode`, `Error::ResponseTooLarge` |
//!
//! # The caps on a server's wait
//!
//! A server's figure is never acted on as it stands: every wait a server
//! asks for (`Retry-After` in seconds or as an HTTP date, `retry-after-ms`,
//! the `t` of the `Ratelimit` header) is read at most [`LONGEST_SERVER_WAIT`]
//! (five minutes) long, a date in the past as no wait, garbage as no
//! figure; every instant computed from one saturates instead of
//! overflowing. Where a wait is acted on it is never shorter than the
//! backoff its waiter uses without a figure, so that `Retry-After: 0`
//! never makes back-to-back requests, and it is capped as follows.
//!
//! | who waits | cap | floor | why |
//! |---|---|---|---|
//! | anyone reading the figure ([`Error::retry_after`](crate::Error::retry_after), the pacer) | [`LONGEST_SERVER_WAIT`], 5 min | none | Cloudflare's longest: its rate-limit window and its block of a credential. A longer figure is a mistake: one request after five minutes learns whether the wait goes on, where obeying it could stop a client for days |
//! | the retry loop, between two attempts of a call | [`RetryPolicy::max_retry_after`], 60 s: a 429 asking longer ends the call at once (its error says how long), another failure falls back to the backoff | the policy's backoff for that retry | the official SDKs' 60 s: a call is not held for minutes |
//! | the pacer, before a counted call | 5 min; a call that would wait longer than its policy's `max_retry_after` fails unsent with [`Error::RateLimited`](crate::Error::RateLimited) | none (it probes with one call after a second when the window said nothing) | the window is five minutes |
//! | the consumer, after a failed pull, ack or extension | its queue's `max_retry_after`; longer falls back to its backoff | its [`error_backoff`](crate::consumer::ConsumerBuilder::error_backoff) | as the retry loop |
//! | the consumer, while the credential is blocked (429, code 971, over a minute) | 5 min | none | Cloudflare blocks for five minutes: pulls stop, settlements wait |
//! | the consumer's share of the queue, after a 10250 asking over a second | its queue's `max_retry_after`; a longer one holds nothing (the share's lower pace answers it) | the share's pace | the queue's allowance is per second |
//! | the producer, resending a batch refused for the rate | 5 min, within its send timeout | the policy's backoff for that resend | a batch outlasts one block; senders still learn within the send timeout |
//!
//! What no wait overrides: the consumer extends a lease while it can be
//! kept, whatever the share's hold (a refusal then costs a request; waiting
//! would cost the lease); a settlement whose wait would outlast its leases
//! is given up and counted unflushed; and the shutdown's grace period and
//! flush timeout bound every wait of a stopping consumer.
//!
//! # Timeouts and the deadline
//!
//! Timeouts: 60 s per attempt and 5 s to connect by default (`timeout`, `connect_timeout`), and an
//! optional overall `deadline`, owned by one place: it covers the wait for the client's caps, every
//! attempt and every retry wait, and a wait that cannot finish inside it is never started (the call
//! returns its last real error instead). When a retry is itself cut off by the deadline, the
//! `Error::Timeout` keeps the failure that caused the retry (`last_error`, also its `source()`).

use std::time::Duration;

pub use crate::classify::RetryClass;

pub use crate::backoff::Backoff;
pub use crate::token_budget::{LONGEST_SERVER_WAIT, retry_after, server_wait};

use crate::backoff;
use crate::operation::Operation;

/// How calls that are not safe to repeat are retried: pushes (single and
/// batch, set by [`RetryPolicy::pushes`]), and the purge of a whole queue
/// (a repeat deletes what was pushed in between; set on its own by
/// [`RetryPolicy::purge_all`], so that asking for at-least-once pushes never
/// makes a purge repeat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PushRetries {
    /// Retry only when the request surely did not land: the connection was
    /// refused, or the API refused the request for its rate (429 with code
    /// 10250 or 971). A push is never duplicated by a retry, whatever the
    /// server's `x-should-retry` says. The default.
    #[default]
    OnlyIfNotLanded,
    /// Also retry after 5xx answers, 408, 409, timeouts and broken
    /// connections, when the request may have landed: no message is lost to
    /// a transient failure, but one may arrive twice.
    AtLeastOnce,
}

/// The client's retry policy; see [`ClientBuilder::retry`](crate::ClientBuilder::retry).
///
/// Idempotent operations (pull, ack, peek, purge by ref, extend, preview,
/// metrics, purge status) are retried after connection errors, timeouts,
/// 408, 409, 429 and 5xx. Push and batch push follow
/// [`RetryPolicy::pushes`], the purge of a whole queue
/// [`RetryPolicy::purge_all`]. Each failure is classified once
/// ([`RetryClass`]); this policy decides what to do with the verdict.
///
/// Set it for a client with [`ClientBuilder::retry`](crate::ClientBuilder::retry),
/// or for one queue handle (and so one call) with
/// [`Queue::with_retry`](crate::Queue::with_retry).
///
/// ```
/// use std::time::Duration;
/// use cf_queues::retry::{PushRetries, RetryPolicy};
///
/// let patient = RetryPolicy::default()
///     .max_retries(5)
///     .backoff(Duration::from_millis(200), Duration::from_secs(10))
///     .pushes(PushRetries::AtLeastOnce);
/// let off = RetryPolicy::none();
/// # let _ = (patient, off);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct RetryPolicy {
    pub(crate) max_retries: u32,
    pub(crate) initial_backoff: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) max_retry_after: Duration,
    pub(crate) pushes: PushRetries,
    pub(crate) purges: PushRetries,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            pushes: PushRetries::OnlyIfNotLanded,
            purges: PushRetries::OnlyIfNotLanded,
        }
    }
}

impl RetryPolicy {
    /// No retries: every call sends exactly one request.
    pub fn none() -> RetryPolicy {
        RetryPolicy::default().max_retries(0)
    }

    crate::__setters! {
        /// How many times a failed request is sent again (default 2).
        max_retries(retries: u32) => self.max_retries;
    }

    /// The first backoff and its cap (default 0.5 s and 8 s); the backoff
    /// doubles each retry and is scaled by a random factor in [0.75, 1].
    /// Both are capped at one hour.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> RetryPolicy {
        const CAP: Duration = Duration::from_secs(3600);
        self.initial_backoff = initial.min(CAP);
        self.max_backoff = max.max(initial).min(CAP);
        self
    }

    crate::__setters! {
        /// The longest server-requested wait (`retry-after-ms`, `Retry-After`)
        /// that is honoured (default 60 s). After a 429, a longer one ends the
        /// call at once (retrying within it would be refused too; the error's
        /// [`retry_after`](crate::Error::retry_after) says how long); after any
        /// other failure, it falls back to the backoff. The pacing by the
        /// server's headers does not wait longer than this either.
        max_retry_after(max: Duration) => self.max_retry_after;

        /// How pushes are retried (default [`PushRetries::OnlyIfNotLanded`]).
        /// It does not change how [`Queue::purge_all`](crate::Queue::purge_all)
        /// is retried: see [`RetryPolicy::purge_all`].
        pushes(pushes: PushRetries) => self.pushes;

        /// How the purge of a whole queue
        /// ([`Queue::purge_all`](crate::Queue::purge_all)) is retried (default
        /// [`PushRetries::OnlyIfNotLanded`]). With
        /// [`PushRetries::AtLeastOnce`], a purge whose answer was lost is sent
        /// again, and the repeat also deletes what was pushed in between; set it
        /// for one call with [`Queue::with_retry`](crate::Queue::with_retry).
        purge_all(purges: PushRetries) => self.purges;
    }

    /// How long to wait before retry number `retry` (1-based) of
    /// `operation` after a failure classified as `class`, whose answer
    /// asked for a wait of `asked`; `None` when it is not retried (out of
    /// retries, not retryable, or unsafe to repeat).
    pub(crate) fn wait_before(
        &self,
        retry: u32,
        operation: Operation,
        class: RetryClass,
        asked: Option<Duration>,
    ) -> Option<Duration> {
        // Creates and deletes of queues and consumers are never repeated
        // after an ambiguous failure: their callers read back what happened.
        let repeat_unsafe = if operation.is_push() {
            self.pushes == PushRetries::AtLeastOnce
        } else if operation == Operation::PurgeQueue {
            self.purges == PushRetries::AtLeastOnce
        } else {
            false
        };
        if retry > self.max_retries || !class.may_repeat(operation.is_idempotent(), repeat_unsafe) {
            return None;
        }
        match asked {
            // Never sooner than the backoff: a `Retry-After: 0` does not
            // make the retries back-to-back.
            Some(asked) if asked <= self.max_retry_after => Some(crate::token_budget::server_wait(
                Some(asked),
                self.backoff_for(retry),
                Duration::MAX,
            )),
            // A rate limit that lasts longer than we wait (Cloudflare's
            // five-minute block) refuses every attempt until it ends: the
            // call fails at once, with the wait in `Error::retry_after`.
            Some(_) if matches!(class, RetryClass::Throttled { .. }) => None,
            _ => Some(self.backoff_for(retry)),
        }
    }

    /// The backoff before retry number `retry`, as the policy sets it.
    pub(crate) fn backoff_for(&self, retry: u32) -> Duration {
        backoff::doubling(
            self.initial_backoff,
            self.max_backoff,
            retry.saturating_sub(1),
        )
        .mul_f64(backoff::jitter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits(policy: &RetryPolicy, operation: Operation, class: RetryClass) -> bool {
        policy.wait_before(1, operation, class, None).is_some()
    }

    #[test]
    fn pushes_retry_only_when_not_landed_by_default() {
        let safe = RetryPolicy::default();
        let code_less_429 = RetryClass::of_answer(429, &[], None, None);
        let overloaded = RetryClass::of_answer(429, &[10250], None, None);
        for push in [Operation::Push, Operation::Batch, Operation::PurgeQueue] {
            let eager = if push == Operation::PurgeQueue {
                RetryPolicy::default().purge_all(PushRetries::AtLeastOnce)
            } else {
                RetryPolicy::default().pushes(PushRetries::AtLeastOnce)
            };
            assert!(!waits(&safe, push, RetryClass::Transient));
            assert!(waits(&eager, push, RetryClass::Transient));
            assert!(waits(&safe, push, overloaded));
            assert!(!waits(&safe, push, code_less_429));
            assert!(waits(&eager, push, code_less_429));
            assert!(waits(&safe, push, RetryClass::NotSent));
        }
        assert!(waits(&safe, Operation::Pull, RetryClass::Transient));
        assert!(!waits(&safe, Operation::Pull, RetryClass::Permanent));
        // Each choice covers its own operations only.
        let pushes = RetryPolicy::default().pushes(PushRetries::AtLeastOnce);
        assert!(!waits(
            &pushes,
            Operation::PurgeQueue,
            RetryClass::Transient
        ));
        let purges = RetryPolicy::default().purge_all(PushRetries::AtLeastOnce);
        assert!(!waits(&purges, Operation::Push, RetryClass::Transient));
    }

    #[test]
    fn retries_stop_at_the_limit() {
        let policy = RetryPolicy::default().max_retries(2);
        let class = RetryClass::Transient;
        assert!(
            policy
                .wait_before(2, Operation::Pull, class, None)
                .is_some()
        );
        assert!(
            policy
                .wait_before(3, Operation::Pull, class, None)
                .is_none()
        );
        assert!(
            RetryPolicy::none()
                .wait_before(1, Operation::Pull, class, None)
                .is_none()
        );
    }

    #[test]
    fn huge_backoffs_are_capped_not_panicking() {
        let policy = RetryPolicy::default().backoff(Duration::MAX, Duration::MAX);
        assert!(policy.backoff_for(60) <= Duration::from_secs(3600));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let policy = RetryPolicy::default();
        for (retry, full_ms) in [(1, 500), (2, 1000), (3, 2000), (5, 8000), (40, 8000)] {
            let d = policy.backoff_for(retry).as_millis();
            assert!(
                d >= full_ms * 3 / 4 && d <= full_ms,
                "retry {retry}: {d} ms"
            );
        }
    }

    #[test]
    fn server_waits_are_honoured_up_to_the_cap() {
        let policy = RetryPolicy::default().max_retries(60);
        let wait =
            |after| policy.wait_before(1, Operation::Pull, RetryClass::Transient, Some(after));
        assert_eq!(wait(Duration::from_secs(7)), Some(Duration::from_secs(7)));
        assert!(
            wait(Duration::from_secs(120)) <= Some(Duration::from_millis(500)),
            "a longer wait falls back to the backoff"
        );
        let block = policy.wait_before(
            1,
            Operation::Batch,
            RetryClass::of_answer(429, &[971], None, Some(Duration::from_secs(300))),
            Some(Duration::from_secs(300)),
        );
        assert_eq!(block, None, "a five-minute block is not waited out");
        let short = policy.wait_before(
            1,
            Operation::Batch,
            RetryClass::of_answer(429, &[971], None, Some(Duration::from_secs(2))),
            Some(Duration::from_secs(2)),
        );
        assert_eq!(short, Some(Duration::from_secs(2)));
    }
}
