//! What a server says about trying again: `retry-after-ms`, `Retry-After`
//! and `x-should-retry`. Read once per attempt by the classifier; the
//! policy in the parent module decides what to do with it.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// The wait a server asked for: `retry-after-ms` (milliseconds), then
/// `Retry-After` (seconds or an HTTP date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
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
}
