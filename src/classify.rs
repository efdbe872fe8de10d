//! [`RetryClass`]: what a finished attempt means for trying again, decided
//! once from what the server said (status, codes, headers) or how the
//! connection failed. The retry loop, [`Error::is_retryable`] and
//! [`Error::is_rate_limited`] all read this one verdict.
//!
//! [`Error::is_retryable`]: crate::Error::is_retryable
//! [`Error::is_rate_limited`]: crate::Error::is_rate_limited

use std::time::Duration;

use crate::codes;

/// What a failed attempt says about sending the same request again.
///
/// Computed once per attempt, kept in the [`Error`](crate::Error), and read
/// by the retry loop. Whether a retry is actually sent also depends on the
/// operation: see [`RetryClass::may_repeat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryClass {
    /// The request never reached the server (connection refused, DNS
    /// failure): sending it again cannot repeat anything.
    NotSent,
    /// The request was refused for its rate (HTTP 429).
    Throttled {
        /// How long the server asked to wait, if it said.
        after: Option<Duration>,
        /// Whether the answer says the request was refused before taking
        /// effect (Cloudflare codes 10250 QueueOverloaded and 971). A 429
        /// without such a code, from a proxy say, is a rate limit too, but a
        /// push behind it may have landed.
        refused: bool,
    },
    /// Trying later may succeed, but the request may have taken effect: a
    /// 5xx, 408 or 409 answer, a timeout, a connection broken mid-request.
    Transient,
    /// Trying again will fail the same way: bad input, auth, not found, a
    /// disabled queue, an undecodable success, or the server said
    /// `x-should-retry: false`.
    Permanent,
}

impl RetryClass {
    /// Classifies an answer from its status, its Cloudflare codes, the
    /// server's `x-should-retry` and its requested wait.
    pub(crate) fn of_answer(
        status: u16,
        codes: &[u32],
        should_retry: Option<bool>,
        after: Option<Duration>,
    ) -> RetryClass {
        let has = |list: &[u32]| codes.iter().any(|c| list.contains(c));
        let by_status = match status {
            429 if has(&codes::LASTING_429) => RetryClass::Permanent,
            409 if has(&codes::LASTING_409) => RetryClass::Permanent,
            429 => RetryClass::Throttled {
                after,
                refused: has(&codes::RATE_LIMITED),
            },
            408 | 409 | 500..=599 => RetryClass::Transient,
            _ => RetryClass::Permanent,
        };
        // The server's own verdict wins on whether to try again, but not on
        // whether a repeat is safe: that stays with `may_repeat`.
        match (should_retry, by_status) {
            (Some(false), _) => RetryClass::Permanent,
            (Some(true), RetryClass::Permanent) => RetryClass::Transient,
            (_, class) => class,
        }
    }

    /// Classifies an attempt that got no answer.
    pub(crate) fn of_transport(error: &reqwest::Error) -> RetryClass {
        if error.is_connect() {
            RetryClass::NotSent
        } else if error.is_timeout() || error.is_request() || error.is_body() || error.is_decode() {
            RetryClass::Transient
        } else {
            // Builder and redirect errors: the same request fails the same way.
            RetryClass::Permanent
        }
    }

    /// Whether trying again later may succeed.
    pub fn is_retryable(self) -> bool {
        !matches!(self, RetryClass::Permanent)
    }

    /// Whether sending the request again is safe for an operation: always
    /// when it surely did not take effect, and otherwise only for an
    /// idempotent operation or when the caller accepts duplicates
    /// (`repeat_unsafe`, from [`PushRetries::AtLeastOnce`](crate::retry::PushRetries::AtLeastOnce)).
    pub fn may_repeat(self, idempotent: bool, repeat_unsafe: bool) -> bool {
        match self {
            RetryClass::NotSent | RetryClass::Throttled { refused: true, .. } => true,
            RetryClass::Throttled { refused: false, .. } | RetryClass::Transient => {
                idempotent || repeat_unsafe
            }
            RetryClass::Permanent => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, codes: &[u32], should_retry: Option<bool>) -> RetryClass {
        RetryClass::of_answer(status, codes, should_retry, None)
    }

    #[test]
    fn statuses() {
        for status in [408, 409, 500, 502, 503, 504] {
            assert_eq!(answer(status, &[], None), RetryClass::Transient, "{status}");
        }
        for status in [200, 301, 400, 401, 403, 404, 413] {
            assert_eq!(answer(status, &[], None), RetryClass::Permanent, "{status}");
        }
    }

    #[test]
    fn rate_limits() {
        let refused = RetryClass::Throttled {
            after: None,
            refused: true,
        };
        assert_eq!(answer(429, &[codes::QUEUE_OVERLOADED], None), refused);
        assert_eq!(answer(429, &[codes::API_RATE_LIMITED], None), refused);
        assert_eq!(
            answer(429, &[], None),
            RetryClass::Throttled {
                after: None,
                refused: false
            },
            "a code-less 429 may come from a proxy"
        );
        assert_eq!(
            answer(429, &[codes::QUEUE_DISABLED], None),
            RetryClass::Permanent,
            "a disabled queue stays disabled"
        );
    }

    #[test]
    fn x_should_retry_decides_whether_but_not_whether_safe() {
        assert_eq!(answer(503, &[], Some(false)), RetryClass::Permanent);
        let forced = answer(400, &[], Some(true));
        assert_eq!(forced, RetryClass::Transient);
        assert!(forced.may_repeat(true, false));
        assert!(
            !answer(503, &[], Some(true)).may_repeat(false, false),
            "the server cannot know whether a repeated push duplicates"
        );
        assert!(answer(429, &[codes::QUEUE_OVERLOADED], Some(true)).may_repeat(false, false));
    }

    #[test]
    fn safety_of_repeats() {
        let code_less = answer(429, &[], None);
        assert!(RetryClass::NotSent.may_repeat(false, false));
        assert!(!code_less.may_repeat(false, false));
        assert!(code_less.may_repeat(false, true));
        assert!(!RetryClass::Transient.may_repeat(false, false));
        assert!(RetryClass::Transient.may_repeat(true, false));
        assert!(!RetryClass::Permanent.may_repeat(true, true));
    }
}
