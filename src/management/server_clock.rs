//! [`ServerClock`]: the server's clock against ours, read from the `Date`
//! headers of the answers one call received, to tell whether a queue found
//! after a lost create answer was created by that create.
//!
//! A create whose answer is lost (a 5xx, a timeout, a broken connection)
//! may have landed, so the name is looked up; but a queue of that name may
//! also be someone else's, created earlier. A queue's `created_on` is the
//! server's clock, our send time is ours: the two are compared through the
//! `Date` headers.
//!
//! # The bound, and the tolerance
//!
//! An answer stamped `Date: D` and received at our time `R` was stamped at
//! a server time of at least `D` (the header is cut to whole seconds) at
//! our time at most `R`: the server's clock is at least `D - R` ahead of
//! ours (behind when negative). The largest such bound over the answers
//! is kept. A queue that the create made was created, in server time, at
//! or after our send time plus that bound; one created earlier than that,
//! less [`CREATION_TOLERANCE`], was someone else's.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{DATE, HeaderMap};

/// How much earlier than the bound a queue's `created_on` may be and still
/// be taken for the create's: 2 s. The bound itself is sound (see the
/// module docs); the tolerance covers what it does not see: a `created_on`
/// cut to whole seconds (up to 1 s early), and the gap between the clock
/// of the machine that stamps `created_on` and the one that writes `Date`
/// (synchronised machines, well under a second). A queue of the same name
/// created by someone else within these 2 s is indistinguishable from a
/// concurrent create anyway.
pub(crate) const CREATION_TOLERANCE: Duration = Duration::from_secs(2);

/// The least the server's clock is ahead of ours, from the answers seen.
#[derive(Debug, Default)]
pub(crate) struct ServerClock {
    ahead_ms: Mutex<Option<i64>>,
}

impl ServerClock {
    pub(crate) fn new() -> ServerClock {
        ServerClock::default()
    }

    /// Reads an answer's `Date` header, received now.
    pub(crate) fn observe(&self, headers: &HeaderMap) {
        let Some(date) = headers
            .get(DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v.trim()).ok())
        else {
            return;
        };
        let bound = unix_ms(date).saturating_sub(unix_ms(SystemTime::now()));
        let mut ahead = self.ahead_ms.lock().unwrap_or_else(PoisonError::into_inner);
        *ahead = Some(ahead.map_or(bound, |known| known.max(bound)));
    }

    /// Whether a queue whose `created_on` is this was created at or after
    /// `sent` (our clock), within [`CREATION_TOLERANCE`]. `false` when it
    /// cannot tell: no answer carried a `Date`, or `created_on` is absent
    /// or not an RFC 3339 timestamp.
    pub(crate) fn created_since(&self, sent: SystemTime, created_on: Option<&str>) -> bool {
        let ahead = *self.ahead_ms.lock().unwrap_or_else(PoisonError::into_inner);
        created_after(unix_ms(sent), ahead, created_on.and_then(rfc3339_unix_ms))
    }
}

/// The decision, apart from the clocks: a queue created at `created_ms`
/// (server clock) is the create's, sent at `sent_ms` (ours), when the
/// server is at least `ahead_ms` ahead of us.
fn created_after(sent_ms: i64, ahead_ms: Option<i64>, created_ms: Option<i64>) -> bool {
    let tolerance = i64::try_from(CREATION_TOLERANCE.as_millis()).unwrap_or(i64::MAX);
    match (ahead_ms, created_ms) {
        (Some(ahead), Some(created)) => {
            created >= sent_ms.saturating_add(ahead).saturating_sub(tolerance)
        }
        _ => false,
    }
}

/// Milliseconds since the Unix epoch (negative before it).
fn unix_ms(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// An RFC 3339 timestamp (`2024-03-20T16:09:14.154Z`, any fraction, `Z` or
/// an offset; `t`, `z` and a space accepted) in Unix milliseconds.
pub(crate) fn rfc3339_unix_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let bytes = text.as_bytes();
    let digits = |from: usize, len: usize| -> Option<i64> {
        let part = bytes.get(from..from + len)?;
        part.iter().all(u8::is_ascii_digit).then_some(())?;
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let at = |i: usize| bytes.get(i).copied();
    if at(4) != Some(b'-') || at(7) != Some(b'-') || at(13) != Some(b':') || at(16) != Some(b':') {
        return None;
    }
    if !matches!(at(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // 60 is a leap second: read as the next second's start.
    if second > 60 {
        return None;
    }
    let mut rest = 19;
    let mut millis = 0;
    if at(rest) == Some(b'.') {
        let start = rest + 1;
        let mut end = start;
        while at(end).is_some_and(|c| c.is_ascii_digit()) {
            end += 1;
        }
        if end == start {
            return None;
        }
        // The first three digits are the milliseconds; finer ones are cut.
        let shown = (end - start).min(3);
        millis = digits(start, shown)? * 10_i64.pow(3 - shown as u32);
        rest = end;
    }
    let offset_minutes = match at(rest) {
        Some(b'Z' | b'z') if rest + 1 == bytes.len() => 0,
        Some(sign @ (b'+' | b'-')) if rest + 6 == bytes.len() && at(rest + 3) == Some(b':') => {
            let (h, m) = (digits(rest + 1, 2)?, digits(rest + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = h * 60 + m;
            if sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1_000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn rfc3339_timestamps_in_unix_milliseconds() {
        for (text, ms) in [
            ("1970-01-01T00:00:00Z", 0),
            ("1970-01-01T00:00:00.000Z", 0),
            ("2024-03-20T16:09:14.154Z", 1_710_950_954_154),
            ("2024-03-20T16:09:14.154789Z", 1_710_950_954_154),
            ("2024-03-20T16:09:14.1Z", 1_710_950_954_100),
            ("2024-03-20t16:09:14z", 1_710_950_954_000),
            ("2024-03-20 17:09:14+01:00", 1_710_950_954_000),
            ("2024-03-20T15:39:14-00:30", 1_710_950_954_000),
            ("2000-02-29T23:59:59.999Z", 951_868_799_999),
            ("2100-03-01T00:00:00.000Z", 4_107_542_400_000),
            ("1969-12-31T23:59:59Z", -1_000),
        ] {
            assert_eq!(rfc3339_unix_ms(text), Some(ms), "{text}");
        }
        for bad in [
            "",
            "2024-03-20",
            "2024-03-20T16:09:14",
            "2024-03-20T16:09:14.Z",
            "2024-13-20T16:09:14Z",
            "2024-03-20T24:09:14Z",
            "2024-03-20T16:09:14+0100",
            "2024-03-20T16:09:14Zjunk",
            "Wed, 20 Mar 2024 16:09:14 GMT",
            "2024-03-2OT16:09:14Z",
            "+024-03-20T16:09:14Z",
        ] {
            assert_eq!(rfc3339_unix_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_queue_is_the_creates_when_created_after_the_send_in_server_time() {
        let sent = 1_000_000;
        // Clocks agreeing: created after the send, or within the tolerance.
        assert!(created_after(sent, Some(0), Some(sent + 300)));
        assert!(created_after(sent, Some(0), Some(sent - 2_000)));
        assert!(!created_after(sent, Some(0), Some(sent - 2_001)));
        // The server an hour ahead: its creation time is an hour on.
        let hour = 3_600_000;
        assert!(created_after(sent, Some(hour), Some(sent + hour + 10)));
        assert!(!created_after(sent, Some(hour), Some(sent + hour - 60_000)));
        // An hour behind.
        assert!(created_after(sent, Some(-hour), Some(sent - hour + 10)));
        assert!(!created_after(
            sent,
            Some(-hour),
            Some(sent - hour - 60_000)
        ));
        // Without a Date or a creation time: cannot tell.
        assert!(!created_after(sent, None, Some(sent + 10)));
        assert!(!created_after(sent, Some(0), None));
    }

    #[test]
    fn the_largest_bound_of_the_dates_is_kept() {
        let clock = ServerClock::new();
        let mut headers = HeaderMap::new();
        clock.observe(&headers); // no Date: nothing learnt
        assert_eq!(*clock.ahead_ms.lock().expect("not poisoned"), None);
        let at = |offset: i64| {
            let now = SystemTime::now();
            let then = if offset >= 0 {
                now + Duration::from_secs(offset.unsigned_abs())
            } else {
                now - Duration::from_secs(offset.unsigned_abs())
            };
            HeaderValue::from_str(&httpdate::fmt_http_date(then)).expect("a date")
        };
        headers.insert(DATE, at(-600));
        clock.observe(&headers);
        headers.insert(DATE, at(300));
        clock.observe(&headers);
        headers.insert(DATE, at(-60));
        clock.observe(&headers);
        headers.insert(DATE, HeaderValue::from_static("yesterday"));
        clock.observe(&headers);
        let ahead = clock
            .ahead_ms
            .lock()
            .expect("not poisoned")
            .expect("a bound");
        assert!((298_000..=300_000).contains(&ahead), "{ahead}");
    }
}
