//! What the service's answer means: the relay's table, in one place.
//! Pure: the status and the `Retry-After` header in, the meaning out.
//!
//! | answer | meaning |
//! |---|---|
//! | 2xx | delivered: ack |
//! | no connection, a timeout (decided in `endpoint.rs`), 429, 502, 503, 504 | the service is down or busy: the relay pauses and holds the message |
//! | any other (1xx, 3xx, 4xx, 500, 501, 505...) | this message failed: retry it with its delay |

use std::time::{Duration, SystemTime};

/// The meaning of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: the message is acked.
    Delivered,
    /// The service is down or busy: the relay pauses; a `Retry-After` (on
    /// 429 and 503 only) says for how long.
    Busy { retry_after: Option<Duration> },
    /// The service refused this message: it is retried with its delay.
    Failed,
}

/// The meaning of an answer with `status` and, when it has one, the
/// value of its `Retry-After` header, read at `now`.
pub fn of_status(status: u16, retry_after: Option<&str>, now: SystemTime) -> Answer {
    match status {
        200..=299 => Answer::Delivered,
        429 | 503 => Answer::Busy {
            retry_after: retry_after.and_then(|value| parse_retry_after(value, now)),
        },
        502 | 504 => Answer::Busy { retry_after: None },
        _ => Answer::Failed,
    }
}

/// `Retry-After` as seconds or as an HTTP date (RFC 9110, 10.2.3); a date
/// in the past is no wait. `None` for anything else: the relay's own
/// backoff then applies. Not capped here: the gate caps it.
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: SystemTime = SystemTime::UNIX_EPOCH;

    #[test]
    fn the_table() {
        for status in [200, 201, 202, 204, 299] {
            assert_eq!(of_status(status, None, NOW), Answer::Delivered, "{status}");
        }
        for status in [429, 502, 503, 504] {
            assert_eq!(
                of_status(status, None, NOW),
                Answer::Busy { retry_after: None },
                "{status}"
            );
        }
        for status in [
            100, 301, 302, 304, 400, 401, 404, 409, 410, 422, 500, 501, 505, 599,
        ] {
            assert_eq!(
                of_status(status, Some("5"), NOW),
                Answer::Failed,
                "{status}"
            );
        }
    }

    #[test]
    fn retry_after_counts_on_429_and_503_only() {
        let secs = |n| Some(Duration::from_secs(n));
        assert_eq!(
            of_status(503, Some(" 3 "), NOW),
            Answer::Busy {
                retry_after: secs(3)
            }
        );
        assert_eq!(
            of_status(429, Some("Thu, 01 Jan 1970 00:01:00 GMT"), NOW),
            Answer::Busy {
                retry_after: secs(60)
            }
        );
        let later = NOW + Duration::from_secs(120);
        assert_eq!(
            of_status(429, Some("Thu, 01 Jan 1970 00:01:00 GMT"), later),
            Answer::Busy {
                retry_after: secs(0)
            }
        );
        assert_eq!(
            of_status(503, Some("soon"), NOW),
            Answer::Busy { retry_after: None }
        );
        assert_eq!(
            of_status(503, Some("-1"), NOW),
            Answer::Busy { retry_after: None }
        );
        assert_eq!(
            of_status(502, Some("3"), NOW),
            Answer::Busy { retry_after: None }
        );
    }
}
