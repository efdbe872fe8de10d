//! The round trip the emulator adds ([`Latency`]), on tokio's paused clock:
//! a request takes it, a new connection pays one more, jitter stays in its
//! bound, and it can be switched while serving.

use std::time::Duration;

use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorClock, EmulatorHandle, Latency};
use tokio::time::Instant;

use cf_queues_testkit::emulators::{START_MS, emulator_on_tokio_clock};

const RTT: Duration = Duration::from_millis(100);

async fn far_emulator(latency: Latency) -> EmulatorHandle {
    emulator_on_tokio_clock(START_MS, |emulator| emulator.latency(latency)).await
}

/// A client without timers of its own, so paused time moves only for the
/// emulator's waits; one connection, reused.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_idle_timeout(None)
        .pool_max_idle_per_host(1)
        .build()
        .expect("client")
}

/// How long a metrics call takes, on tokio's clock.
async fn timed_metrics(handle: &EmulatorHandle, http: &reqwest::Client) -> Duration {
    let url = format!(
        "{}/accounts/{EMULATOR_ACCOUNT_ID}/queues/q/metrics",
        handle.base_url()
    );
    let started = Instant::now();
    let response = http
        .get(url)
        .bearer_auth(handle.token().unwrap_or_default())
        .send()
        .await
        .expect("request completes");
    assert_eq!(response.status(), 200);
    response.bytes().await.expect("body");
    started.elapsed()
}

fn within(taken: Duration, least: Duration) -> bool {
    taken >= least && taken < least + Duration::from_millis(5)
}

#[tokio::test(start_paused = true)]
async fn a_request_takes_the_round_trip_and_a_new_connection_one_more() {
    let emulator = far_emulator(Latency::round_trip(RTT)).await;
    let http = http();
    let first = timed_metrics(&emulator, &http).await;
    assert!(
        within(first, 2 * RTT),
        "first request on a new connection: {first:?}"
    );
    for _ in 0..3 {
        let again = timed_metrics(&emulator, &http).await;
        assert!(within(again, RTT), "on the same connection: {again:?}");
    }
    // Another client opens another connection, which pays its set-up.
    let fresh = timed_metrics(&emulator, &self::http()).await;
    assert!(within(fresh, 2 * RTT), "{fresh:?}");
    assert_eq!(emulator.server_stats().accepted_connections, 2);
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test(start_paused = true)]
async fn jitter_adds_up_to_its_bound_and_varies() {
    let jitter = Duration::from_millis(40);
    let emulator = far_emulator(Latency::round_trip(RTT).with_jitter(jitter)).await;
    let http = http();
    timed_metrics(&emulator, &http).await;
    let mut taken = Vec::new();
    for _ in 0..40 {
        taken.push(timed_metrics(&emulator, &http).await);
    }
    assert!(
        taken
            .iter()
            .all(|t| *t >= RTT && *t <= RTT + jitter + Duration::from_millis(5)),
        "{taken:?}"
    );
    let spread = taken.iter().max().copied().unwrap_or_default()
        - taken.iter().min().copied().unwrap_or_default();
    assert!(spread > Duration::from_millis(10), "{taken:?}");
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test(start_paused = true)]
async fn the_latency_is_switched_while_serving() {
    let emulator = Emulator::new()
        .clock(EmulatorClock::tokio(START_MS))
        .start()
        .await
        .expect("emulator starts");
    let http = http();
    assert_eq!(emulator.latency(), None);
    assert!(timed_metrics(&emulator, &http).await < Duration::from_millis(5));
    let far = Latency::round_trip(Duration::from_millis(250));
    emulator.set_latency(Some(far));
    assert_eq!(emulator.latency(), Some(far));
    let taken = timed_metrics(&emulator, &http).await;
    assert!(within(taken, Duration::from_millis(250)), "{taken:?}");
    emulator.set_latency(None);
    assert!(timed_metrics(&emulator, &http).await < Duration::from_millis(5));
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test(start_paused = true)]
async fn a_lease_starts_half_a_round_trip_before_the_client_sees_it() {
    use cf_queues::{Message, PullOptions};

    let emulator = far_emulator(Latency::round_trip(RTT)).await;
    let queue = cf_queues_testkit::clients::queue(&emulator, "leases");
    queue.push(Message::text("m")).await.expect("push");
    let lease = Duration::from_secs(1);
    let pulled = queue
        .pull(PullOptions::new().visibility_timeout(lease))
        .await
        .expect("pull");
    assert_eq!(pulled.messages.len(), 1);
    // The lease began 50 ms before the answer arrived; a pull sent 900 ms
    // later reaches the emulator 50 ms after that, as the lease ends.
    tokio::time::sleep(Duration::from_millis(899)).await;
    let early = queue.pull(PullOptions::new()).await.expect("pull");
    assert!(
        early.messages.is_empty(),
        "still leased when the pull arrives"
    );
    let late = queue.pull(PullOptions::new()).await.expect("pull");
    assert_eq!(
        late.messages.len(),
        1,
        "the lease ended while the pull was on its way"
    );
    assert_eq!(late.messages[0].attempts, 2);
    emulator.shutdown().await.expect("shutdown");
}
