//! Clients and queues as the tests want them: one request per call, or
//! retrying as by default with a backoff that does not slow the suite.

use std::time::Duration;

use cf_queues::retry::RetryPolicy;
use cf_queues::{Client, ClientBuilder, Message, Queue};
use cf_queues_emulator::EmulatorHandle;

/// Fast backoff so retries do not slow the suite; the schedule itself is
/// unit-tested.
pub fn quick() -> RetryPolicy {
    RetryPolicy::default().backoff(Duration::from_millis(1), Duration::from_millis(2))
}

/// The client `builder` makes, with no timers of its own (pool reaping)
/// that would move paused time.
pub fn without_timers(builder: ClientBuilder) -> ClientBuilder {
    builder.http_client(reqwest::Client::builder().pool_idle_timeout(None))
}

/// Queue `id` of the client `builder` makes, set to send one request per
/// call and to keep no timers of its own that would move paused time.
pub fn one_request_per_call(builder: ClientBuilder, id: &str) -> Queue {
    without_timers(builder)
        .retry(RetryPolicy::none())
        .build()
        .expect("client")
        .queue(id)
        .expect("queue id")
}

/// Queue `id` on `emulator`, whose client makes exactly one request per call.
pub fn queue(emulator: &EmulatorHandle, id: &str) -> Queue {
    one_request_per_call(emulator.client_builder().expect("builder"), id)
}

/// A queue created by name on `emulator` through the client (no retries),
/// with HTTP pull enabled: a queue as an owner sets one up.
pub async fn created_pull_queue(emulator: &EmulatorHandle, name: &str) -> Queue {
    let queue = client(emulator, RetryPolicy::none())
        .create_queue(name)
        .await
        .expect("created");
    queue
        .enable_http_pull(cf_queues::resources::HttpPullSettings::new())
        .await
        .expect("HTTP pull enabled");
    queue
}

/// A client on `emulator` that retries by `retry`.
pub fn client(emulator: &EmulatorHandle, retry: RetryPolicy) -> Client {
    emulator
        .client_builder()
        .expect("builder")
        .retry(retry)
        .build()
        .expect("client")
}

/// A client on `emulator`, set up by `configure` from the emulator's
/// builder (its retries, deadline, limits, credentials...).
pub fn configured_client(
    emulator: &EmulatorHandle,
    configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> Client {
    let builder = emulator.client_builder().expect("builder");
    configure(builder).build().expect("client")
}

/// Queue `id` on `emulator`, of a client set up by `configure` (see
/// [`configured_client`]).
pub fn configured_queue(
    emulator: &EmulatorHandle,
    id: &str,
    configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> Queue {
    configured_client(emulator, configure)
        .queue(id)
        .expect("queue id")
}

/// A client builder for `base_url` with the wire tests' account and token
/// ([`ACCOUNT`](crate::wire::ACCOUNT), [`TOKEN`](crate::wire::TOKEN)).
pub fn builder_for(base_url: &str) -> ClientBuilder {
    Client::builder()
        .api_token(crate::wire::TOKEN)
        .account_id(crate::wire::ACCOUNT)
        .base_url(base_url)
}

/// `count` text messages, `m0`, `m1`, ...
pub fn texts(count: usize) -> Vec<Message> {
    (0..count).map(|i| Message::text(format!("m{i}"))).collect()
}

/// Pushes `m0`, `m1`, ... in batches, and checks that all landed.
pub async fn push_texts(queue: &Queue, count: usize) {
    let report = queue.push_all(texts(count), 1).await;
    assert!(report.all_landed(), "{report:?}");
}

/// A lease no test outlives, so that no extension is due.
pub const LONG_LEASE: Duration = Duration::from_secs(600);
