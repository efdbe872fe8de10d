//! What the client's tests share: the ids and token of the wire tests, the
//! paths and envelopes they pin, an emulator, and a retry policy that does
//! not slow the suite.

use std::time::Duration;

use cf_queues::retry::RetryPolicy;
use cf_queues_emulator::{Emulator, EmulatorHandle};
use serde_json::{Value, json};

/// The account id of the wire tests (Cloudflare's example).
pub const ACCOUNT: &str = "023e105f4ecef8ad9ca31a8372d0c353";
/// The queue id of the wire tests (Cloudflare's example).
pub const QUEUE: &str = "9a7806061c88ada191ed06f989cc3dac";
/// The API token of the wire tests.
pub const TOKEN: &str = "Sn3lZJTBX6kkg7OdcBUAxOO963GEIyGQqnFTOFYY";

/// The path of an operation on [`QUEUE`]: `suffix` is `"/messages/pull"`,
/// `"/metrics"`, ...
pub fn path(suffix: &str) -> String {
    format!("/accounts/{ACCOUNT}/queues/{QUEUE}{suffix}")
}

/// Cloudflare's success envelope around `result`.
pub fn success(result: Value) -> Value {
    json!({"success": true, "errors": [], "messages": [], "result": result})
}

/// An emulator on the system clock, with a fresh token.
pub async fn emulator() -> EmulatorHandle {
    Emulator::new().start().await.expect("emulator starts")
}

/// Fast backoff so retries do not slow the suite; the schedule itself is
/// unit-tested.
pub fn quick() -> RetryPolicy {
    RetryPolicy::default().backoff(Duration::from_millis(1), Duration::from_millis(2))
}

/// `time` as an RFC 3339 timestamp in UTC with milliseconds, as the API
/// writes `created_on` (`2024-03-20T16:09:14.154Z`).
pub fn rfc3339(time: std::time::SystemTime) -> String {
    let ms = time
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    let (secs, millis) = ((ms / 1000) as i64, ms % 1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Now moved by `secs` seconds (earlier when negative): a clock that is
/// ahead of ours, or behind it.
pub fn shifted(secs: i64) -> std::time::SystemTime {
    let now = std::time::SystemTime::now();
    let by = Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 { now + by } else { now - by }
}

#[test]
fn rfc3339_formats_as_the_api_writes() {
    let at = |ms: u64| std::time::UNIX_EPOCH + Duration::from_millis(ms);
    assert_eq!(rfc3339(at(0)), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(at(1_710_950_954_154)), "2024-03-20T16:09:14.154Z");
    assert_eq!(rfc3339(at(951_868_799_999)), "2000-02-29T23:59:59.999Z");
}
