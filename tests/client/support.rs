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
