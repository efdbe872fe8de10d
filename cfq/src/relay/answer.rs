//! What the service's answer means: the relay's table, in one place.
//! Pure: the status and the `Retry-After` header in, the meaning out.
//!
//! | answer | meaning |
//! |---|---|
//! | 2xx | delivered: ack |
//! | no connection, a timeout (decided in `endpoint.rs`), 429, 502, 503, 504 | the service is down or busy: the relay pauses and holds the message |
//! | any other (1xx, 3xx, 4xx, 500, 501, 505...) | this message failed: retry it with its delay |

use std::time::Duration;

/// The meaning of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: the message is acked.
    Delivered,
    /// The service is down or busy: the relay pauses; a `Retry-After` (on
    /// 429 and 503 only) may lengthen the pause.
    Busy { retry_after: Option<Duration> },
    /// The service refused this message: it is retried with its delay.
    Failed,
}

/// The meaning of an answer with `status`, and the wait its headers ask
/// for (read by the library's one reader, `cf_queues::retry::retry_after`:
/// `retry-after-ms`, then `Retry-After` in seconds or as an HTTP date).
/// Not capped or floored here: the gate does both.
pub fn of_status(status: u16, asked: Option<Duration>) -> Answer {
    match status {
        200..=299 => Answer::Delivered,
        429 | 503 => Answer::Busy { retry_after: asked },
        502 | 504 => Answer::Busy { retry_after: None },
        _ => Answer::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table() {
        for status in [200, 201, 202, 204, 299] {
            assert_eq!(of_status(status, None), Answer::Delivered, "{status}");
        }
        for status in [429, 502, 503, 504] {
            assert_eq!(
                of_status(status, None),
                Answer::Busy { retry_after: None },
                "{status}"
            );
        }
        for status in [
            100, 301, 302, 304, 400, 401, 404, 409, 410, 422, 500, 501, 505, 599,
        ] {
            assert_eq!(
                of_status(status, Some(Duration::from_secs(5))),
                Answer::Failed,
                "{status}"
            );
        }
    }

    #[test]
    fn retry_after_counts_on_429_and_503_only() {
        let three = Some(Duration::from_secs(3));
        for status in [429, 503] {
            assert_eq!(
                of_status(status, three),
                Answer::Busy { retry_after: three }
            );
        }
        for status in [502, 504] {
            assert_eq!(of_status(status, three), Answer::Busy { retry_after: None });
        }
    }
}
