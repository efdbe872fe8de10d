//! The consumer on a queue without HTTP pull (405, code 0): it stops at its
//! first pull with the hint, unless this client enabled HTTP pull within
//! Cloudflare's propagation window, where the pull is tried again.

use std::time::Duration;

use cf_queues::consumer::{Consumer, ConsumerError};
use cf_queues::resources::{HttpPullSettings, PROPAGATION_WINDOW};
use serde_json::{Value, json};

use crate::ack_now;
use crate::support::{Running, STEP};
use cf_queues_testkit::scripted::scripted;
use cf_queues_testkit::wire::{acked, failure, pulled, success};

const HOUR: Duration = Duration::from_secs(3600);

fn not_enabled() -> (u16, Value) {
    (
        405,
        failure(
            0,
            "messages cannot be pulled unless http_pull mode is enabled",
        ),
    )
}

/// An HTTP pull consumer as Cloudflare's create answer describes it.
fn http_pull_consumer() -> Value {
    json!({
        "type": "http_pull", "consumer_id": "c0ffee00c0ffee00c0ffee00c0ffee00",
        "queue_name": "scripted", "settings": {"max_retries": 5}
    })
}

#[tokio::test(start_paused = true)]
async fn without_http_pull_the_consumer_stops_at_its_first_pull_with_the_hint() {
    let server = scripted(|operation, _| match operation {
        "pull" => not_enabled(),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let consumer = Consumer::builder(server.queue())
        .ack_interval(HOUR)
        .build()
        .expect("valid settings");
    let stopped = consumer.run(ack_now).await.expect_err("the consumer stops");
    let ConsumerError::Stopped { error, summary } = &stopped else {
        panic!("not a stop on the pull's error: {stopped:?}");
    };
    assert!(error.is_pull_disabled(), "{error:?}");
    assert!(!error.is_retryable());
    let text = stopped.to_string();
    assert!(text.contains("Queue::enable_http_pull"), "{text}");
    assert!(text.contains("wrangler queues consumer http add"), "{text}");
    // The consumer starts with 8 pulls in flight: every one of them is
    // answered with the error, and none is tried again.
    let pulls = server.bodies("pull").len();
    assert!((1..=8).contains(&pulls), "{pulls} pulls: none retried");
    assert_eq!(summary.received, 0);
}

#[tokio::test(start_paused = true)]
async fn after_enabling_http_pull_the_not_enabled_answers_of_propagation_are_waited_out() {
    let mut pulls = 0;
    let server = scripted(move |operation, body| match operation {
        // GET .../consumers has no body; POST .../consumers is the create.
        "consumers" if body.is_null() => (200, success(json!([]))),
        "consumers" => (200, success(http_pull_consumer())),
        "pull" => {
            pulls += 1;
            match pulls {
                1..=3 => not_enabled(),
                4 => (200, pulled(&[("m1", Some("lease-1"))])),
                _ => (200, pulled(&[])),
            }
        }
        "ack" => (200, acked(body, &[])),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let queue = server.queue_with_retries();
    let enabled = queue
        .enable_http_pull(HttpPullSettings::new().max_retries(5))
        .await
        .expect("enabled");
    assert_eq!(
        enabled.consumer_id.as_deref(),
        Some("c0ffee00c0ffee00c0ffee00c0ffee00")
    );
    let created = server.bodies("consumers");
    assert_eq!(
        created.last(),
        Some(&json!({"type": "http_pull", "settings": {"max_retries": 5}}))
    );
    let started = tokio::time::Instant::now();
    let running = Running::start(
        Consumer::builder(queue).ack_interval(Duration::from_millis(10)),
        ack_now,
    );
    running
        .eventually("the message acked", STEP, Duration::from_secs(50), |s| {
            s.acked == 1
        })
        .await;
    assert!(
        started.elapsed() < PROPAGATION_WINDOW,
        "{:?}",
        started.elapsed()
    );
    let summary = running.finish().await;
    assert_eq!((summary.received, summary.acked), (1, 1));
    assert!(server.bodies("pull").len() >= 4);
}

#[tokio::test(start_paused = true)]
async fn past_the_propagation_window_a_not_enabled_answer_stops_the_consumer() {
    let server = scripted(|operation, _| match operation {
        "consumers" => (200, success(json!([http_pull_consumer()]))),
        // PUT .../consumers/{consumer_id}
        "c0ffee00c0ffee00c0ffee00c0ffee00" => (200, success(http_pull_consumer())),
        "pull" => not_enabled(),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let queue = server.queue_with_retries();
    // Enabled already: the call sets its settings (PUT), and the window starts.
    queue
        .enable_http_pull(HttpPullSettings::new())
        .await
        .expect("settings set");
    let consumer = Consumer::builder(queue)
        .ack_interval(HOUR)
        .build()
        .expect("valid settings");
    let started = tokio::time::Instant::now();
    let stopped = consumer.run(ack_now).await.expect_err("the consumer stops");
    let ConsumerError::Stopped { error, .. } = &stopped else {
        panic!("not a stop on the pull's error: {stopped:?}");
    };
    assert!(error.is_pull_disabled(), "{error:?}");
    let waited = started.elapsed();
    assert!(
        waited >= PROPAGATION_WINDOW - Duration::from_secs(1)
            && waited <= PROPAGATION_WINDOW + Duration::from_secs(5),
        "tried again within the window only: {waited:?}"
    );
    assert!(
        server.bodies("pull").len() > 1,
        "tried again inside the window"
    );
}
