//! Cloudflare's rate limits as the emulator models them ([`RateLimitModel`]),
//! over raw HTTP on a manual clock: each bucket and the window at their
//! edges, the five-minute block over every call, the headers counting down,
//! the per-address bucket, and switching the limits while serving.

use std::time::Duration;

use cf_queues::{Message, PullOptions};
use cf_queues_emulator::{EmulatorHandle, ManualClock, RateLimitModel};
use reqwest::Method;
use serde_json::{Value, json};

use cf_queues_testkit::emulators::emulator_on_manual_clock as emulator_with;
use cf_queues_testkit::raw_http::{self, Answer, lease_ids, queue_path};

const FIVE_MINUTES: Duration = Duration::from_secs(300);

/// `method` on `op` (`"/messages"`, `"/metrics"`, ...) of queue `q`.
async fn call(handle: &EmulatorHandle, method: Method, op: &str, body: Option<Value>) -> Answer {
    raw_http::call(handle, method, &queue_path("q", op), body).await
}

/// `POST` of `body` to `op` of queue `q`.
async fn post(handle: &EmulatorHandle, op: &str, body: Value) -> Answer {
    call(handle, Method::POST, op, Some(body)).await
}

/// The `RateLimit` header of `answer`.
fn ratelimit(answer: &Answer) -> Option<String> {
    answer.header("ratelimit")
}

async fn push(handle: &EmulatorHandle) -> Answer {
    raw_http::push(handle, "q", json!({"body": "m"})).await
}

async fn push_many(handle: &EmulatorHandle, n: usize) {
    raw_http::push_many(handle, "q", n).await;
}

async fn pull(handle: &EmulatorHandle, batch_size: usize) -> Answer {
    raw_http::pull(
        handle,
        "q",
        json!({ "batch_size": batch_size, "visibility_timeout_ms": 60_000 }),
    )
    .await
}

fn ok(answer: &Answer) {
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(
        answer.header("retry-after"),
        None,
        "Retry-After only on a 429"
    );
}

fn refused(answer: &Answer, code: u64, retry_after: u64) {
    assert_eq!(
        (
            answer.status,
            answer.code(),
            answer.header("retry-after").as_deref()
        ),
        (429, Some(code), Some(retry_after.to_string().as_str())),
        "{:?}",
        answer.body
    );
    assert_eq!(answer.body["success"], false);
}

async fn limited(model: RateLimitModel) -> (EmulatorHandle, ManualClock) {
    emulator_with(|emulator| emulator.rate_limits(model)).await
}

#[tokio::test]
async fn the_window_counts_down_then_its_block_covers_every_call_for_five_minutes() {
    let (emulator, clock) =
        limited(RateLimitModel::cloudflare().per_credential(5, FIVE_MINUTES, FIVE_MINUTES)).await;
    let first = push(&emulator).await;
    ok(&first);
    assert_eq!(ratelimit(&first).as_deref(), Some("\"default\";r=4;t=300"));
    assert_eq!(
        first.header("ratelimit-policy").as_deref(),
        Some("\"default\";q=5;w=300")
    );
    clock.advance(Duration::from_millis(100_500));
    // Lease calls do not count; metrics and the rest do.
    ok(&pull(&emulator, 10).await);
    let metrics = call(&emulator, Method::GET, "/metrics", None).await;
    ok(&metrics);
    assert_eq!(
        ratelimit(&metrics).as_deref(),
        Some("\"default\";r=3;t=200")
    );
    for r in [2, 1, 0] {
        let answer = push(&emulator).await;
        ok(&answer);
        assert_eq!(
            answer.header("ratelimit"),
            Some(format!("\"default\";r={r};t=200"))
        );
    }
    // The sixth request goes over: it and every call after it, lease calls
    // included, are refused for five minutes.
    let over = push(&emulator).await;
    refused(&over, 971, 300);
    assert_eq!(ratelimit(&over).as_deref(), Some("\"default\";r=0;t=300"));
    assert_eq!(
        over.header("ratelimit-policy").as_deref(),
        Some("\"default\";q=5;w=300")
    );
    assert_eq!(
        emulator.metrics("q").backlog_count,
        4,
        "the refused push was not applied"
    );
    refused(&pull(&emulator, 10).await, 971, 300);
    let ack = post(&emulator, "/messages/ack", json!({"acks": []})).await;
    refused(&ack, 971, 300);
    clock.advance(Duration::from_millis(299_001));
    // Refusals neither count nor move the block.
    let nearly = push(&emulator).await;
    refused(&nearly, 971, 1);
    assert_eq!(ratelimit(&nearly).as_deref(), Some("\"default\";r=0;t=1"));
    clock.advance(Duration::from_millis(999));
    // Over at 400.5 s; every counted request has left the window by then.
    let after = push(&emulator).await;
    ok(&after);
    assert_eq!(ratelimit(&after).as_deref(), Some("\"default\";r=4;t=300"));
    ok(&pull(&emulator, 10).await);
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn the_window_slides_one_request_at_a_time() {
    let (emulator, clock) =
        limited(RateLimitModel::cloudflare().per_credential(2, FIVE_MINUTES, FIVE_MINUTES)).await;
    ok(&push(&emulator).await);
    clock.advance(Duration::from_secs(200));
    let second = push(&emulator).await;
    assert_eq!(ratelimit(&second).as_deref(), Some("\"default\";r=0;t=100"));
    // The first leaves at 300 s: just before, one more would be over.
    clock.advance(Duration::from_millis(99_999));
    let left = call(&emulator, Method::POST, "/messages/pull", Some(json!({}))).await;
    assert_eq!(ratelimit(&left).as_deref(), Some("\"default\";r=0;t=1"));
    clock.advance(Duration::from_millis(1));
    let third = push(&emulator).await;
    ok(&third);
    assert_eq!(ratelimit(&third).as_deref(), Some("\"default\";r=0;t=200"));
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_pull_is_refused_whole_when_its_bucket_holds_fewer_than_it_would_return() {
    let (emulator, clock) = limited(RateLimitModel::cloudflare().per_queue(5, 10)).await;
    push_many(&emulator, 30).await;
    let full = pull(&emulator, 10).await;
    ok(&full);
    assert_eq!(lease_ids(&full).len(), 10);
    // Empty: 10 tokens take 2 s at 5 a second, 3 take 0.6 s (so 1).
    refused(&pull(&emulator, 10).await, 10250, 2);
    refused(&pull(&emulator, 3).await, 10250, 1);
    assert_eq!(emulator.metrics("q").backlog_count, 30);
    let peeked = post(&emulator, "/messages/peek", json!({"batch_size": 100})).await;
    let unleased = peeked.body["result"]["messages"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(unleased, 20, "a refused pull leased nothing");
    clock.advance(Duration::from_millis(600));
    let three = pull(&emulator, 3).await;
    ok(&three);
    assert_eq!(lease_ids(&three).len(), 3);
    clock.advance(Duration::from_millis(199));
    refused(&pull(&emulator, 1).await, 10250, 1);
    clock.advance(Duration::from_millis(1));
    assert_eq!(lease_ids(&pull(&emulator, 1).await).len(), 1);
    // 16 messages are left: more than the burst, so the pull is served
    // from a full bucket and leaves it in debt.
    clock.advance(Duration::from_millis(1_999));
    refused(&pull(&emulator, 100).await, 10250, 1);
    clock.advance(Duration::from_millis(1));
    assert_eq!(lease_ids(&pull(&emulator, 100).await).len(), 16);
    // An empty pull costs nothing, even from a bucket in debt.
    let empty = pull(&emulator, 100).await;
    ok(&empty);
    assert!(lease_ids(&empty).is_empty());
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn acks_retries_and_extensions_draw_on_the_lease_bucket() {
    let (emulator, clock) = limited(RateLimitModel::cloudflare().per_queue(5, 10)).await;
    push_many(&emulator, 10).await;
    let leases = lease_ids(&pull(&emulator, 10).await);
    assert_eq!(leases.len(), 10);
    let extend = call(
        &emulator,
        Method::POST,
        "/messages/extend",
        Some(json!({
            "extend": leases.iter().map(|l| json!({ "lease_id": l })).collect::<Vec<_>>(),
            "visibility_timeout_ms": 60_000,
        })),
    )
    .await;
    ok(&extend);
    assert_eq!(extend.body["result"]["extendCount"], json!(10));
    let ack = |acks: &[String], retries: &[String]| {
        let retries: Vec<Value> = retries.iter().map(|l| json!({ "lease_id": l })).collect();
        json!({ "acks": acks.iter().map(|l| json!({ "lease_id": l })).collect::<Vec<_>>(), "retries": retries })
    };
    let refusal = post(&emulator, "/messages/ack", ack(&leases[..1], &[])).await;
    refused(&refusal, 10250, 1);
    clock.advance(Duration::from_secs(1));
    // Five tokens: six leases are refused whole, five pass.
    let six = post(&emulator, "/messages/ack", ack(&leases[..3], &leases[3..6])).await;
    refused(&six, 10250, 1);
    assert_eq!(emulator.metrics("q").backlog_count, 10, "nothing was acked");
    let five = post(&emulator, "/messages/ack", ack(&leases[..3], &leases[3..5])).await;
    ok(&five);
    assert_eq!(
        (
            &five.body["result"]["ackCount"],
            &five.body["result"]["retryCount"]
        ),
        (&json!(3), &json!(2))
    );
    // The pull bucket is another one: it has refilled meanwhile.
    ok(&pull(&emulator, 2).await);
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn the_address_bucket_counts_every_call_and_starts_no_block() {
    let model =
        RateLimitModel::cloudflare()
            .per_ip(10, 10)
            .per_credential(100, FIVE_MINUTES, FIVE_MINUTES);
    let (emulator, clock) = limited(model).await;
    for _ in 0..5 {
        ok(&pull(&emulator, 1).await);
        ok(&call(&emulator, Method::GET, "/metrics", None).await);
    }
    let over = call(&emulator, Method::GET, "/metrics", None).await;
    refused(&over, 971, 1);
    assert_eq!(
        over.header("ratelimit").as_deref(),
        Some("\"default\";r=95;t=300"),
        "not counted"
    );
    refused(&pull(&emulator, 1).await, 971, 1);
    clock.advance(Duration::from_millis(100));
    let next = call(&emulator, Method::GET, "/metrics", None).await;
    ok(&next);
    assert_eq!(ratelimit(&next).as_deref(), Some("\"default\";r=94;t=300"));
    refused(&pull(&emulator, 1).await, 971, 1);
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn limits_switch_on_and_off_while_serving() {
    let (emulator, _clock) = emulator_with(|emulator| emulator).await;
    push_many(&emulator, 100).await;
    let free = push(&emulator).await;
    ok(&free);
    assert_eq!(
        (free.header("ratelimit"), free.header("ratelimit-policy")),
        (None, None),
        "no limits, no headers"
    );
    emulator.set_rate_limits(Some(RateLimitModel::cloudflare()));
    // On with Cloudflare's figures, from an empty window.
    let counted = push(&emulator).await;
    assert_eq!(
        ratelimit(&counted).as_deref(),
        Some("\"default\";r=1199;t=300")
    );
    assert_eq!(
        counted.header("ratelimit-policy").as_deref(),
        Some("\"default\";q=1200;w=300")
    );
    emulator.set_rate_limits(Some(RateLimitModel::cloudflare().per_queue(1, 1)));
    ok(&pull(&emulator, 1).await);
    refused(&pull(&emulator, 1).await, 10250, 1);
    emulator.set_rate_limits(None);
    let answer = pull(&emulator, 100).await;
    ok(&answer);
    assert_eq!(lease_ids(&answer).len(), 100);
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn the_client_sees_a_typed_rate_limit_error() {
    let model = RateLimitModel::cloudflare().per_queue(5, 10);
    let (emulator, _clock) = limited(model).await;
    let queue = cf_queues_testkit::clients::queue(&emulator, "q");
    queue
        .push_batch(cf_queues::batch::Batch::new(
            (0..20).map(|i| Message::text(i.to_string())),
        ))
        .await
        .expect("push");
    let options = PullOptions::new().batch_size(10);
    assert_eq!(queue.pull(options).await.expect("pull").messages.len(), 10);
    let error = queue
        .pull(options)
        .await
        .expect_err("over the queue's limit");
    assert!(error.is_rate_limited(), "{error}");
    assert_eq!((error.status(), error.codes()), (Some(429), vec![10250]));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
    emulator.shutdown().await.expect("shutdown");
}
