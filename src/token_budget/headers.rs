//! Every header a server sends about when to call again, read in one
//! place, and the one bound on every wait a server asks for:
//!
//! - `Ratelimit` and `Ratelimit-Policy`, the token's budget (the IETF
//!   httpapi draft's structured form, which Cloudflare's API sends:
//!   `Ratelimit: "default";r=50;t=30`, `Ratelimit-Policy: "default";q=1200;w=300`);
//! - `retry-after-ms`, `Retry-After` and `x-should-retry`, read once per
//!   attempt by the classifier; the retry policy decides what to do with
//!   them.
//!
//! Tolerant by design: a header that is missing or that this reader cannot
//! make sense of gives `None`, which the pacer takes as "no information",
//! never as "nothing left". Several policies in one header are allowed; the
//! one named `default` is read, else the first. Parameters may come in any
//! order, unknown ones are skipped.
//!
//! A server's wait is never acted on as it stands: `Retry-After:
//! 18446744073709551615` added to an instant panics, a year (or a date in
//! 2100) freezes whoever waits it out, and `0` turns a refusal into a loop
//! of back-to-back requests. Every wait a server asks for, and every
//! instant computed from one, goes through [`server_wait`] or
//! [`server_wait_ends`]: never past [`LONGEST_SERVER_WAIT`], never under
//! the caller's own backoff. The table of which cap applies where is in the
//! [`retry`](crate::retry#the-caps-on-a-servers-wait) module's docs.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use tokio::time::Instant;

/// What is left of the window, from `Ratelimit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quota {
    /// `r`: the requests the server still admits in the window.
    pub remaining: u64,
    /// `t`: how long until the server admits more, if it said.
    pub reset: Option<Duration>,
}

/// The window itself, from `Ratelimit-Policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// `q`: the requests admitted per window; at least 1.
    pub quota: u64,
    /// `w`: the window; at least one second.
    pub window: Duration,
}

/// What one answer's headers say about the credential's budget, read
/// once, before the answer is consumed: the pacer keeps these three
/// figures, not the headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Figures {
    pub quota: Option<Quota>,
    pub policy: Option<Policy>,
    /// `Retry-After`, as the retry layer reads it.
    pub retry_after: Option<Duration>,
}

impl Figures {
    pub(crate) fn read(headers: &HeaderMap) -> Figures {
        Figures {
            quota: quota(headers),
            policy: policy(headers),
            retry_after: retry_after(headers),
        }
    }
}

/// The quota an answer announces, if it announces one that can be read.
pub(crate) fn quota(headers: &HeaderMap) -> Option<Quota> {
    let item = chosen(headers, "ratelimit")?;
    Some(Quota {
        remaining: param(&item, "r")?,
        // A wait the server asks for: bounded as every one is.
        reset: param(&item, "t")
            .map(|t| server_wait(Some(Duration::from_secs(t)), Duration::ZERO, Duration::MAX)),
    })
}

/// The policy an answer announces, if it announces one that can be read.
pub(crate) fn policy(headers: &HeaderMap) -> Option<Policy> {
    let item = chosen(headers, "ratelimit-policy")?;
    let quota = param(&item, "q").filter(|&q| q > 0)?;
    let window = param(&item, "w").filter(|&w| w > 0)?;
    Some(Policy {
        quota,
        window: Duration::from_secs(window),
    })
}

/// One list member: its name and its `key=value` parameters.
struct Item {
    name: String,
    params: Vec<(String, String)>,
}

/// The member named `default` of every `name` header line together, else
/// the first member.
fn chosen(headers: &HeaderMap, name: &str) -> Option<Item> {
    let mut first = None;
    for value in headers.get_all(name) {
        let Ok(text) = value.to_str() else { continue };
        for item in split_outside_quotes(text, ',').filter_map(item) {
            if item.name == "default" {
                return Some(item);
            }
            first.get_or_insert(item);
        }
    }
    first
}

/// `"name";k=v;k=v` or `name;k=v`: the parts split at `;` outside quotes.
fn item(text: &str) -> Option<Item> {
    let mut parts = split_outside_quotes(text, ';');
    let name = unquote(parts.next()?.trim());
    if name.is_empty() {
        return None;
    }
    let params = parts
        .filter_map(|part| {
            let (key, value) = part.split_once('=')?;
            Some((key.trim().to_ascii_lowercase(), unquote(value.trim())))
        })
        .collect();
    Some(Item { name, params })
}

/// The first parameter `key` that is a non-negative integer.
fn param(item: &Item, key: &str) -> Option<u64> {
    item.params
        .iter()
        .filter(|(k, _)| k == key)
        .find_map(|(_, v)| v.parse::<u64>().ok())
}

fn unquote(text: &str) -> String {
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) => inner.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => text.to_owned(),
    }
}

/// Splits at `separator` where it is not inside a quoted string (a name
/// may hold one).
fn split_outside_quotes(text: &str, separator: char) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        let mut quoted = false;
        let mut escaped = false;
        for (i, c) in current.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                c if c == separator && !quoted => {
                    rest = Some(&current[i + c.len_utf8()..]);
                    return Some(&current[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(current)
    })
}

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
pub fn server_wait(asked: Option<Duration>, floor: Duration, cap: Duration) -> Duration {
    let cap = cap.min(LONGEST_SERVER_WAIT);
    asked.map_or(floor, |asked| asked.min(cap).max(floor))
}

/// When a wait a server asked for, starting at `now`, ends: at most
/// [`LONGEST_SERVER_WAIT`] later, an instant that never overflows.
pub(crate) fn server_wait_ends(now: Instant, wait: Duration) -> Instant {
    crate::time::after_or_far(now, wait.min(LONGEST_SERVER_WAIT))
}

/// The wait a server's answer asks for: `retry-after-ms` (milliseconds),
/// then `Retry-After` (seconds or an HTTP date; a date in the past is no
/// wait), at most [`LONGEST_SERVER_WAIT`]; `None` when it names none, or
/// names one that cannot be read. The client reads every server's wait
/// here; act on it through [`server_wait`], which floors and caps it.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
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

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn cloudflare_s_headers() {
        let map = headers(&[
            ("ratelimit", "\"default\";r=1150;t=42"),
            ("ratelimit-policy", "\"default\";q=1200;w=300"),
        ]);
        assert_eq!(
            quota(&map),
            Some(Quota {
                remaining: 1150,
                reset: Some(Duration::from_secs(42))
            })
        );
        assert_eq!(
            policy(&map),
            Some(Policy {
                quota: 1200,
                window: Duration::from_secs(300)
            })
        );
    }

    #[test]
    fn any_order_unknown_parameters_and_spaces() {
        let map = headers(&[
            ("ratelimit", " default ; t=5 ;x=\"y\"; r=7 "),
            ("ratelimit-policy", "default;w=60;pk=:YWJj:;q=100"),
        ]);
        assert_eq!(
            quota(&map),
            Some(Quota {
                remaining: 7,
                reset: Some(Duration::from_secs(5))
            })
        );
        assert_eq!(policy(&map).map(|p| p.quota), Some(100));
    }

    #[test]
    fn default_wins_else_the_first() {
        let map = headers(&[
            ("ratelimit", "\"burst\";r=1;t=1, \"default\";r=900;t=30"),
            ("ratelimit-policy", "\"burst\";q=10;w=1"),
            ("ratelimit-policy", "\"daily\";q=1000;w=86400"),
        ]);
        assert_eq!(quota(&map).map(|q| q.remaining), Some(900));
        assert_eq!(
            policy(&map).map(|p| (p.quota, p.window)),
            Some((10, Duration::from_secs(1))),
            "no default: the first, across header lines"
        );
        let quoted_comma = headers(&[("ratelimit", "\"a,b\";r=3, \"default\";r=4")]);
        assert_eq!(quota(&quoted_comma).map(|q| q.remaining), Some(4));
    }

    #[test]
    fn missing_or_malformed_is_no_information() {
        assert_eq!(quota(&HeaderMap::new()), None);
        assert_eq!(policy(&HeaderMap::new()), None);
        for bad in [
            "",
            "default",
            ";r=1",
            "default;r=-1",
            "default;r=1.5",
            "default;r",
            "\"default;r=3",
            "default;r=99999999999999999999999",
        ] {
            let mut map = HeaderMap::new();
            map.insert("ratelimit", HeaderValue::from_static(bad));
            assert_eq!(quota(&map), None, "{bad:?}");
        }
        let no_reset = headers(&[("ratelimit", "default;r=3;t=soon")]);
        assert_eq!(
            quota(&no_reset),
            Some(Quota {
                remaining: 3,
                reset: None
            })
        );
        for bad in ["default;q=0;w=300", "default;q=1200;w=0", "default;q=1200"] {
            let mut map = HeaderMap::new();
            map.insert("ratelimit-policy", HeaderValue::from_static(bad));
            assert_eq!(policy(&map), None, "{bad:?}");
        }
        let mut binary = HeaderMap::new();
        binary.insert(
            "ratelimit",
            HeaderValue::from_bytes(b"default;r=\xff").expect("opaque bytes are a header value"),
        );
        assert_eq!(quota(&binary), None);
    }

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
