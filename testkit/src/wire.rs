//! The ids and token of the wire tests, the paths they pin and Cloudflare's
//! envelopes, whole or shaped as one answer (a pull, an ack).

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

/// Cloudflare's failure envelope with one error.
pub fn failure(code: u32, message: &str) -> Value {
    json!({"success": false, "errors": [{"code": code, "message": message}], "messages": [], "result": null})
}

/// The answer to a pull that found nothing.
pub fn pulled_nothing() -> Value {
    success(json!({"messages": [], "message_backlog_count": 0}))
}

/// A pull's answer: text messages, each an id and a lease id (or none).
pub fn pulled(messages: &[(&str, Option<&str>)]) -> Value {
    let messages: Vec<Value> = messages
        .iter()
        .map(|(id, lease)| {
            let mut message = json!({
                "id": id, "attempts": 1, "body": format!("body of {id}"),
                "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 1_710_950_954_154u64,
            });
            if let Some(lease) = lease {
                message["lease_id"] = (*lease).into();
            }
            message
        })
        .collect();
    success(json!({"messages": messages, "message_backlog_count": 0}))
}

/// An ack's answer for `request`: everything applied, but for the lease
/// ids in `warned`, which get a warning each.
pub fn acked(request: &Value, warned: &[&str]) -> Value {
    let count = |key: &str| {
        request[key].as_array().map_or(0, |list| {
            list.iter()
                .filter(|e| !warned.contains(&e["lease_id"].as_str().unwrap_or_default()))
                .count()
        })
    };
    let warnings: serde_json::Map<String, Value> = warned
        .iter()
        .map(|lease| ((*lease).to_owned(), "lease not found".into()))
        .collect();
    success(json!({
        "ackCount": count("acks"), "retryCount": count("retries"), "warnings": warnings,
    }))
}

/// The lease ids of an ack request's `acks` (or `retries`).
pub fn lease_ids(request: &Value, key: &str) -> Vec<String> {
    request[key]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|e| e["lease_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The e-mail of the legacy auth scheme in the wire tests.
pub const EMAIL: &str = "user@example.com";
/// The global API key of the legacy auth scheme in the wire tests.
pub const KEY: &str = "144c9defac04969c7bfad8efaa8ea194";

/// The two auth schemes: a token, and the legacy e-mail with global key.
#[derive(Clone, Copy, Debug)]
pub enum Auth {
    /// `Authorization: Bearer` [`TOKEN`].
    Token,
    /// `X-Auth-Email: ` [`EMAIL`] and `X-Auth-Key: ` [`KEY`].
    GlobalKey,
}

/// Both schemes, for a test to run once with each.
pub const BOTH: [Auth; 2] = [Auth::Token, Auth::GlobalKey];

impl Auth {
    /// A client builder for `base_url` with [`ACCOUNT`] and this scheme.
    pub fn builder(self, base_url: &str) -> cf_queues::ClientBuilder {
        let builder = cf_queues::Client::builder()
            .account_id(ACCOUNT)
            .base_url(base_url);
        match self {
            Auth::Token => builder.api_token(TOKEN),
            Auth::GlobalKey => builder.global_api_key(EMAIL, KEY),
        }
    }

    /// `when` matching the headers every request carries with this scheme.
    /// Every one asks for JSON: `GET /metrics` also answers
    /// `text/event-stream`, so the `Accept` header decides what comes back.
    pub fn authenticated(self, when: httpmock::When) -> httpmock::When {
        let when = when
            .header_missing("api-version")
            .header("accept", "application/json");
        match self {
            Auth::Token => when
                .header("authorization", format!("Bearer {TOKEN}"))
                .header_missing("x-auth-key")
                .header_missing("x-auth-email"),
            Auth::GlobalKey => when
                .header("x-auth-email", EMAIL)
                .header("x-auth-key", KEY)
                .header_missing("authorization"),
        }
    }
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
    let by = std::time::Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 { now + by } else { now - by }
}

/// Mocks `method` on [`path`]`(suffix)`, matching exactly `request` as the
/// JSON body when one is given, answering 200 with `result` in
/// Cloudflare's envelope ([`success`]).
pub async fn answer_with<'a>(
    server: &'a httpmock::MockServer,
    (method, suffix): (httpmock::Method, &str),
    request: Option<Value>,
    result: Value,
) -> httpmock::Mock<'a> {
    server
        .mock_async(|when, then| {
            let when = when.method(method).path(path(suffix));
            if let Some(request) = request {
                when.json_body(request);
            }
            then.status(200).json_body(success(result));
        })
        .await
}

/// A pull's answer ([`pulled`]) with `messages` on the first pull, and
/// none after it; `pulls` counts the pulls.
pub fn pulled_once(pulls: &mut u32, messages: &[(&str, Option<&str>)]) -> Value {
    *pulls += 1;
    if *pulls == 1 {
        pulled(messages)
    } else {
        pulled(&[])
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_formats_as_the_api_writes() {
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        assert_eq!(super::rfc3339(at(0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::rfc3339(at(1_710_950_954_154)),
            "2024-03-20T16:09:14.154Z"
        );
        assert_eq!(
            super::rfc3339(at(951_868_799_999)),
            "2000-02-29T23:59:59.999Z"
        );
    }
}
