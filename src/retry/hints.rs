//! What a server says about trying again (`retry-after-ms`, `Retry-After`,
//! `x-should-retry`), and the one bound on every wait a server asks for.
//! Read once per attempt by the classifier; the policy in the parent
//! module decides what to do with it.
//!
//! A server's figure is never acted on as it stands: `Retry-After:
//! 18446744073709551615` added to an instant panics, a year (or a date in
//! 2100) freezes whoever waits it out, and `0` turns a refusal into a loop
//! of back-to-back requests. Every wait a server asks for, and every
//! instant computed from one, goes through [`server_wait`] or
//! [`server_wait_ends`]: never past [`LONGEST_SERVER_WAIT`], never under
//! the caller's own backoff. The table of which cap applies where is in the
//! [parent module](super#the-caps-on-a-servers-wait).

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio::time::Instant;

/// The longest wait any server figure is taken for: five minutes, the
/// longest Cloudflare documents (its rate-limit window and the block of a
/// credential that went over it). A longer `Retry-After`, `retry-after-ms`
/// or `Ratelimit` `t` is read as five minutes: after them one request
/// learns whether the wait goes on, which costs one request per five
/// minutes, where believing a mistaken figure of days would stop the
/// client for days.
pub const LONGEST_SERVER_WAIT: Duration = Duration::from_secs(300);

/// How long to wait when a server asked for `asked` (`None`: it said
/// nothing): what it asked, at most `cap` and never more than
/// [`LONGEST_SERVER_WAIT`], but never less than `floor`, the backoff the
/// caller waits anyway, so that a figure of 0 never makes a loop of
/// requests. The caps bound the server's figure, not the caller's own
/// backoff: a server can lengthen a wait, never shorten it.
pub(crate) fn server_wait(asked: Option<Duration>, floor: Duration, cap: Duration) -> Duration {
    let cap = cap.min(LONGEST_SERVER_WAIT);
    asked.map_or(floor, |asked| asked.min(cap).max(floor))
}

/// When a wait a server asked for, starting at `now`, ends: at most
/// [`LONGEST_SERVER_WAIT`] later, an instant that never overflows.
pub(crate) fn server_wait_ends(now: Instant, wait: Duration) -> Instant {
    crate::time::after_or_far(now, wait.min(LONGEST_SERVER_WAIT))
}

/// The wait a server asked for: `retry-after-ms` (milliseconds), then
/// `Retry-After` (seconds or an HTTP date; a date in the past is no wait),
/// at most [`LONGEST_SERVER_WAIT`].
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    asked(headers).map(|asked| server_wait(Some(asked), Duration::ZERO, LONGEST_SERVER_WAIT))
}

/// The wait the headers name, as they name it.
fn asked(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The server's `x-should-retry` header: `Some(true)`, `Some(false)` or absent.
pub(crate) fn should_retry_header(headers: &HeaderMap) -> Option<bool> {
    let value = headers.get("x-should-retry")?.to_str().ok()?.trim();
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        headers.insert("x-should-retry", HeaderValue::from_static("FALSE"));
        assert_eq!(should_retry_header(&headers), Some(false));
        headers.insert("x-should-retry", HeaderValue::from_static("maybe"));
        assert_eq!(should_retry_header(&headers), None);
    }

    #[test]
    fn absurd_and_hostile_waits_are_bounded() {
        let wait = |name: &'static str, value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(value).expect("a header value"));
            retry_after(&headers)
        };
        let longest = Some(LONGEST_SERVER_WAIT);
        assert_eq!(wait("retry-after", "18446744073709551615"), longest);
        assert_eq!(wait("retry-after", "31536000"), longest);
        assert_eq!(
            wait("retry-after", "Fri, 31 Dec 2100 23:59:59 GMT"),
            longest
        );
        assert_eq!(wait("retry-after-ms", "1e300"), longest);
        assert_eq!(
            wait("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(wait("retry-after", "0"), Some(Duration::ZERO));
        assert_eq!(wait("retry-after", "soon"), None);
        assert_eq!(wait("retry-after", "-5"), None);
        assert_eq!(wait("retry-after-ms", "NaN"), None);
    }

    #[test]
    fn a_server_wait_is_floored_by_the_backoff_and_capped() {
        let (s, floor) = (Duration::from_secs(1), Duration::from_millis(500));
        assert_eq!(server_wait(Some(Duration::ZERO), floor, 60 * s), floor);
        assert_eq!(server_wait(None, floor, 60 * s), floor);
        assert_eq!(server_wait(Some(7 * s), floor, 60 * s), 7 * s);
        assert_eq!(server_wait(Some(Duration::MAX), floor, 60 * s), 60 * s);
        assert_eq!(
            server_wait(Some(Duration::MAX), floor, Duration::MAX),
            LONGEST_SERVER_WAIT
        );
        // The caller's own backoff is never shortened, by the cap either.
        assert_eq!(server_wait(Some(s), 90 * s, 60 * s), 90 * s);
        assert_eq!(server_wait(None, 90 * s, 60 * s), 90 * s);
        assert_eq!(server_wait(Some(Duration::MAX), 90 * s, 60 * s), 90 * s);
        let now = Instant::now();
        let ends = server_wait_ends(now, Duration::MAX);
        assert_eq!(ends, now + LONGEST_SERVER_WAIT);
    }
}
