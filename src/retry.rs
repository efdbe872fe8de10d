//! When a failed attempt is tried again, and after how long.
//!
//! The defaults match Cloudflare's official SDKs (2 retries, backoff
//! `min(0.5 s × 2ⁿ, 8 s)` with jitter, `retry-after-ms` then `Retry-After`
//! honoured up to 60 s, `x-should-retry` obeyed), with one difference that
//! matters for a queue: a push is only retried when it surely did not land,
//! so a retry never duplicates a message unless you ask for at-least-once.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::envelope::retry_after;

/// Cloudflare codes of 429 answers that waiting does not fix: storage
/// limit exceeded, queue disabled, free tier limit exceeded.
pub(crate) const PERMANENT_429_CODES: [u32; 3] = [10251, 10252, 10253];

/// Codes that say a request was refused for its rate: the queue's
/// throughput limit (10250 QueueOverloaded) and the API's own (971).
pub(crate) const RATE_LIMIT_CODES: [u32; 2] = [10250, 971];

/// How pushes (single and batch) are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PushRetries {
    /// Retry only when the message surely did not land: the connection was
    /// refused, or the API refused the request for its rate (429 with code
    /// 10250 or 971). A push is never duplicated by a retry, whatever the
    /// server's `x-should-retry` says. The default.
    #[default]
    OnlyIfNotLanded,
    /// Also retry after 5xx answers, 408, 409, timeouts and broken
    /// connections, when the push may have landed: no message is lost to a
    /// transient failure, but one may arrive twice.
    AtLeastOnce,
}

/// The client's retry policy; see [`ClientBuilder::retry`](crate::ClientBuilder::retry).
///
/// Pull, peek, ack and purge are retried after connection errors, timeouts,
/// 408, 409, 429 and 5xx. Push and batch push follow [`PushRetries`].
///
/// ```
/// use std::time::Duration;
/// use cf_queues::{PushRetries, RetryPolicy};
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
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            pushes: PushRetries::OnlyIfNotLanded,
        }
    }
}

impl RetryPolicy {
    /// No retries: every call sends exactly one request.
    pub fn none() -> RetryPolicy {
        RetryPolicy::default().max_retries(0)
    }

    /// How many times a failed request is sent again (default 2).
    pub fn max_retries(mut self, retries: u32) -> RetryPolicy {
        self.max_retries = retries;
        self
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

    /// The longest server-requested wait (`retry-after-ms`, `Retry-After`)
    /// that is honoured (default 60 s); a longer one falls back to the backoff.
    pub fn max_retry_after(mut self, max: Duration) -> RetryPolicy {
        self.max_retry_after = max;
        self
    }

    /// How pushes are retried (default [`PushRetries::OnlyIfNotLanded`]).
    pub fn pushes(mut self, pushes: PushRetries) -> RetryPolicy {
        self.pushes = pushes;
        self
    }

    /// How long to wait before retry number `retry` (1-based), given the
    /// failed answer's headers.
    pub(crate) fn delay(&self, retry: u32, headers: Option<&HeaderMap>) -> Duration {
        if let Some(asked) = headers.and_then(retry_after)
            && asked <= self.max_retry_after
        {
            return asked;
        }
        let exponent = retry.saturating_sub(1).min(30);
        let backoff = self
            .initial_backoff
            .saturating_mul(1u32 << exponent)
            .min(self.max_backoff);
        backoff.mul_f64(jitter())
    }
}

/// What an attempt ended with, as far as retrying is concerned.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Attempt<'a> {
    /// The connection could not be made: the request was never sent.
    ConnectFailed,
    /// A timeout or broken connection after the request may have been sent.
    Interrupted,
    /// An answer arrived.
    Answered {
        status: u16,
        headers: &'a HeaderMap,
        codes: &'a [u32],
    },
}

/// Whether an attempt of an operation should be tried again.
pub(crate) fn should_retry(policy: &RetryPolicy, is_push: bool, attempt: Attempt<'_>) -> bool {
    // Whether a retry may repeat a request that already took effect.
    let may_repeat = !is_push || policy.pushes == PushRetries::AtLeastOnce;
    match attempt {
        Attempt::ConnectFailed => true,
        Attempt::Interrupted => may_repeat,
        Attempt::Answered {
            status,
            headers,
            codes,
        } => {
            let refused_for_rate =
                status == 429 && codes.iter().any(|c| RATE_LIMIT_CODES.contains(c));
            match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
                Some(v) if v.eq_ignore_ascii_case("false") => return false,
                // The server vouches for a retry, but only we know whether a
                // repeated push would duplicate a message.
                Some(v) if v.eq_ignore_ascii_case("true") => return may_repeat || refused_for_rate,
                _ => {}
            }
            match status {
                429 if codes.iter().any(|c| PERMANENT_429_CODES.contains(c)) => false,
                // A request refused for its rate did not land, even a push.
                429 => may_repeat || refused_for_rate,
                408 | 409 | 500..=599 => may_repeat,
                _ => false,
            }
        }
    }
}

/// A factor in [0.75, 1], from the standard library's random hash keys.
fn jitter() -> f64 {
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    0.75 + 0.25 * (random >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn answered(status: u16, headers: &HeaderMap, codes: &[u32]) -> bool {
        should_retry(
            &RetryPolicy::default(),
            false,
            Attempt::Answered {
                status,
                headers,
                codes,
            },
        )
    }

    fn push_answered(policy: &RetryPolicy, status: u16, codes: &[u32]) -> bool {
        should_retry(
            policy,
            true,
            Attempt::Answered {
                status,
                headers: &HeaderMap::new(),
                codes,
            },
        )
    }

    #[test]
    fn x_should_retry_true_never_duplicates_a_push() {
        let mut yes = HeaderMap::new();
        yes.insert("x-should-retry", HeaderValue::from_static("true"));
        let answered = |policy: &RetryPolicy, status, codes: &[u32]| {
            let headers = &yes;
            should_retry(
                policy,
                true,
                Attempt::Answered {
                    status,
                    headers,
                    codes,
                },
            )
        };
        assert!(!answered(&RetryPolicy::default(), 503, &[]));
        assert!(answered(&RetryPolicy::default(), 429, &[10250]));
        let eager = RetryPolicy::default().pushes(PushRetries::AtLeastOnce);
        assert!(answered(&eager, 503, &[]));
    }

    #[test]
    fn huge_backoffs_are_capped_not_panicking() {
        let policy = RetryPolicy::default().backoff(Duration::MAX, Duration::MAX);
        assert!(policy.delay(60, None) <= Duration::from_secs(3600));
    }

    #[test]
    fn which_statuses_retry() {
        let none = HeaderMap::new();
        for status in [408, 409, 429, 500, 502, 503, 504] {
            assert!(answered(status, &none, &[]), "{status}");
        }
        for status in [200, 400, 401, 403, 404, 413] {
            assert!(!answered(status, &none, &[]), "{status}");
        }
        assert!(
            !answered(429, &none, &[10252]),
            "a disabled queue stays disabled"
        );
        assert!(answered(429, &none, &[10250]));
    }

    #[test]
    fn x_should_retry_overrides() {
        let mut yes = HeaderMap::new();
        yes.insert("x-should-retry", HeaderValue::from_static("true"));
        let mut no = HeaderMap::new();
        no.insert("x-should-retry", HeaderValue::from_static("false"));
        assert!(answered(400, &yes, &[]));
        assert!(!answered(503, &no, &[]));
    }

    #[test]
    fn pushes_retry_only_when_not_landed_by_default() {
        let safe = RetryPolicy::default();
        let eager = RetryPolicy::default().pushes(PushRetries::AtLeastOnce);
        assert!(!push_answered(&safe, 500, &[]));
        assert!(push_answered(&eager, 500, &[]));
        assert!(push_answered(&safe, 429, &[10250]));
        assert!(push_answered(&safe, 429, &[971]));
        assert!(
            !push_answered(&safe, 429, &[]),
            "a 429 without a rate-limit code may come from a proxy"
        );
        assert!(push_answered(&eager, 429, &[]));
        assert!(should_retry(&safe, true, Attempt::ConnectFailed));
        assert!(!should_retry(&safe, true, Attempt::Interrupted));
        assert!(should_retry(&eager, true, Attempt::Interrupted));
        assert!(should_retry(&safe, false, Attempt::Interrupted));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let policy = RetryPolicy::default();
        for (retry, full_ms) in [(1, 500), (2, 1000), (3, 2000), (5, 8000), (40, 8000)] {
            let d = policy.delay(retry, None).as_millis();
            assert!(
                d >= full_ms * 3 / 4 && d <= full_ms,
                "retry {retry}: {d} ms"
            );
        }
    }

    #[test]
    fn server_waits_are_honoured_up_to_the_cap() {
        let policy = RetryPolicy::default();
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(policy.delay(1, Some(&headers)), Duration::from_secs(7));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(policy.delay(1, Some(&headers)), Duration::from_millis(250));
        let mut long = HeaderMap::new();
        long.insert("retry-after", HeaderValue::from_static("120"));
        assert!(policy.delay(1, Some(&long)) <= Duration::from_millis(500));
    }
}
