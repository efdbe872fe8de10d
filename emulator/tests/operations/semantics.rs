//! The emulator end to end, through our client and through raw HTTP.

use std::time::Duration;

use cf_queues::batch::Batch;
use cf_queues::{Acks, Client, ClientBuilder, Error, Message, PullOptions, Queue};
use cf_queues_emulator::{Emulator, EmulatorHandle, Fault, Operation};
use serde_json::{Value, json};

use cf_queues_testkit::emulators::{START_MS, emulator_on_manual_clock as emulator_with};
use cf_queues_testkit::pulls::{pull, pull_first, pulls_nothing};
use cf_queues_testkit::raw_http::{post_text, queue_path};

fn queue(handle: &EmulatorHandle, id: &str) -> Queue {
    handle
        .client()
        .and_then(|c| c.queue(id))
        .expect("valid client and queue")
}

/// A client of `handle` that `configure` sets up.
fn client_where(
    handle: &EmulatorHandle,
    configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> Client {
    let builder = handle.client_builder().expect("builder");
    configure(builder).build().expect("client")
}

#[tokio::test]
async fn push_pull_ack_roundtrip_with_exact_metrics() {
    let (emulator, clock) = emulator_with(|e| e).await;
    let q = queue(&emulator, "orders");
    let receipt = q.push(Message::text("hello")).await.expect("push");
    let metrics = receipt.metrics.expect("metrics sent");
    assert_eq!(
        (
            metrics.backlog_count,
            metrics.backlog_bytes,
            metrics.oldest_message_timestamp_ms
        ),
        (1, 5, START_MS)
    );
    clock.advance(Duration::from_millis(5));
    q.push(Message::json(&json!({"order": 42})).expect("json"))
        .await
        .expect("push json");

    let batch = pull(&q, PullOptions::new().batch_size(10)).await;
    assert_eq!(batch.messages.len(), 2);
    assert_eq!(batch.backlog_count, Some(2));
    let (text, order) = (&batch.messages[0], &batch.messages[1]);
    assert_eq!(text.body().text().expect("text"), "hello");
    assert_eq!(text.attempts, 1);
    assert_eq!(text.timestamp_ms, START_MS);
    assert_eq!(text.metadata["CF-Content-Type"], "text");
    assert_eq!(
        order.body().raw(),
        "eyJvcmRlciI6NDJ9",
        "json bodies travel base64-encoded"
    );
    assert_eq!(
        order.body().json::<Value>().expect("json"),
        json!({"order": 42})
    );
    assert_eq!(order.timestamp_ms, START_MS + 5);

    let outcome = q.ack(Acks::new().ack(text).ack(order)).await.expect("ack");
    assert_eq!(
        (outcome.acked, outcome.retried, outcome.warnings.len()),
        (Some(2), Some(0), 0)
    );
    let m = emulator.metrics("orders");
    assert_eq!(
        (
            m.backlog_count,
            m.backlog_bytes,
            m.oldest_message_timestamp_ms
        ),
        (0, 0, 0)
    );
    assert!(pulls_nothing(&q).await);
}

#[tokio::test]
async fn delayed_messages_appear_after_their_delay() {
    let (emulator, clock) = emulator_with(|e| e).await;
    let q = queue(&emulator, "delays");
    q.push(Message::text("later").with_delay(Duration::from_secs(10)))
        .await
        .expect("push");
    q.push_batch(Batch::new([Message::text("batch")]).with_delay(Duration::from_secs(20)))
        .await
        .expect("batch");
    assert!(pulls_nothing(&q).await);
    assert_eq!(q.peek(10).await.expect("peek").len(), 0);
    assert_eq!(
        emulator.metrics("delays").backlog_count,
        2,
        "delayed messages are in the backlog"
    );
    clock.advance(Duration::from_secs(10));
    let first = q.pull(PullOptions::new()).await.expect("pull");
    assert_eq!(first.messages.len(), 1);
    assert_eq!(first.messages[0].body().text().expect("text"), "later");
    clock.advance(Duration::from_secs(10));
    let second = q.pull(PullOptions::new()).await.expect("pull");
    assert_eq!(second.messages[0].body().text().expect("text"), "batch");
}

#[tokio::test]
async fn expired_leases_redeliver_and_late_acks_are_accepted() {
    let (emulator, clock) = emulator_with(|e| e).await;
    let q = queue(&emulator, "leases");
    q.push(Message::text("m")).await.expect("push");
    let options = PullOptions::new().visibility_timeout(Duration::from_secs(30));
    let first = q.pull(options).await.expect("pull").messages.remove(0);
    assert!(
        q.pull(options).await.expect("pull").messages.is_empty(),
        "a live lease hides the message"
    );
    clock.advance(Duration::from_secs(30));
    let second = q.pull(options).await.expect("pull").messages.remove(0);
    assert_eq!(second.attempts, 2);
    assert_ne!(first.lease_id, second.lease_id);

    // Cloudflare accepts an ack after the visibility timeout, even though
    // the message went to another consumer meanwhile.
    let late = q
        .ack(Acks::new().ack(&first))
        .await
        .expect("late acks are accepted");
    assert_eq!((late.acked, late.warnings.len()), (Some(1), 0));
    assert_eq!(emulator.metrics("leases").backlog_count, 0);
    let unknown = q
        .ack(Acks::new().ack("no-such-lease").retry("another"))
        .await
        .expect("unknown leases");
    assert_eq!(
        (unknown.acked, unknown.retried, unknown.warnings.len()),
        (Some(0), Some(0), 2)
    );
    // The other consumer's ack finds the message gone: a warning, not an error.
    let second_ack = q.ack(Acks::new().ack(&second)).await.expect("ack");
    assert_eq!((second_ack.acked, second_ack.warnings.len()), (Some(0), 1));
    assert_eq!(
        second_ack.warnings[0].subject.as_deref(),
        Some(second.lease_id.as_str())
    );
}

#[tokio::test]
async fn concurrent_pulls_get_disjoint_messages() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    let q = queue(&emulator, "disjoint");
    q.push_batch(Batch::new((0..50).map(|i| Message::text(i.to_string()))))
        .await
        .expect("batch");
    let pulls = (0..10).map(|_| {
        let q = q.clone();
        tokio::spawn(async move { q.pull(PullOptions::new().batch_size(7)).await })
    });
    let mut seen = std::collections::HashSet::new();
    let mut total = 0;
    for pull in pulls {
        for m in pull.await.expect("task").expect("pull").messages {
            total += 1;
            assert!(
                seen.insert(m.body().text().expect("text").to_owned()),
                "delivered twice"
            );
        }
    }
    assert_eq!(total, 50);
}

#[tokio::test]
async fn retry_now_and_after_a_delay() {
    let (emulator, clock) = emulator_with(|e| e).await;
    let q = queue(&emulator, "retries");
    q.push_batch(Batch::new([Message::text("a"), Message::text("b")]))
        .await
        .expect("batch");
    let batch = q.pull(PullOptions::new()).await.expect("pull");
    let acks = Acks::new()
        .retry(&batch.messages[0])
        .retry_after(&batch.messages[1], Duration::from_secs(60));
    let outcome = q.ack(acks).await.expect("retry");
    assert_eq!(outcome.retried, Some(2));
    let again = q.pull(PullOptions::new()).await.expect("pull");
    assert_eq!(again.messages.len(), 1);
    assert_eq!(
        (
            again.messages[0].body().text().expect("text"),
            again.messages[0].attempts
        ),
        ("a", 2)
    );
    q.ack(Acks::new().ack(&again.messages[0]))
        .await
        .expect("ack");
    clock.advance(Duration::from_secs(59));
    assert!(pulls_nothing(&q).await);
    clock.advance(Duration::from_secs(1));
    let later = q.pull(PullOptions::new()).await.expect("pull");
    assert_eq!(later.messages[0].body().text().expect("text"), "b");
}

#[tokio::test]
async fn exhausted_messages_move_to_the_dead_letter_queue_or_are_dropped() {
    let (emulator, clock) =
        emulator_with(|e| e.max_retries(2).dead_letter_queue("work", "dlq")).await;
    let work = queue(&emulator, "work");
    let dlq = queue(&emulator, "dlq");
    work.push(Message::json(&json!({"poison": true})).expect("json"))
        .await
        .expect("push");
    let first = pull_first(&work).await;
    work.ack(Acks::new().retry(&first)).await.expect("retry");
    let second = pull_first(&work).await;
    assert_eq!(second.attempts, 2);
    clock.advance(Duration::from_secs(31)); // the lease of the last allowed delivery expires
    assert!(pulls_nothing(&work).await);
    assert_eq!(emulator.dead_lettered("work"), 1);
    assert_eq!(emulator.metrics("work").backlog_count, 0);
    let moved = pull_first(&dlq).await;
    assert_eq!(moved.attempts, 1);
    assert_eq!(moved.timestamp_ms, START_MS);
    assert_eq!(
        moved.body().json::<Value>().expect("json"),
        json!({"poison": true})
    );

    let dropping = queue(&emulator, "nodlq");
    dropping.push(Message::text("x")).await.expect("push");
    for _ in 0..2 {
        let m = pull_first(&dropping).await;
        dropping.ack(Acks::new().retry(&m)).await.expect("retry");
    }
    assert_eq!(emulator.dead_lettered("nodlq"), 1);
    assert_eq!(emulator.metrics("nodlq").backlog_count, 0);
}

#[tokio::test]
async fn peek_does_not_lease_and_purge_deletes_by_ref() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    let q = queue(&emulator, "peeking");
    q.push_batch(Batch::new([
        Message::text("a"),
        Message::text("b"),
        Message::text("c"),
    ]))
    .await
    .expect("batch");
    let peeked = q.peek(2).await.expect("peek");
    assert_eq!(
        peeked
            .iter()
            .map(|m| m.body().text().expect("text"))
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(peeked[0].attempts, 0);
    let pulled = pull(&q, PullOptions::new().batch_size(1)).await;
    assert_eq!(
        pulled.messages[0].attempts, 1,
        "peek does not count as a delivery"
    );

    let outcome = q.purge(&peeked).await.expect("purge");
    assert!(outcome.warnings.is_empty(), "{:?}", outcome.warnings);
    let m = emulator.metrics("peeking");
    assert_eq!((m.backlog_count, m.backlog_bytes), (1, 1));
    let stale = q
        .ack(Acks::new().ack(&pulled.messages[0]))
        .await
        .expect("ack of a purged message");
    assert_eq!((stale.acked, stale.warnings.len()), (Some(0), 1));
    let unknown = q
        .purge(["no-such-ref"])
        .await
        .expect("unknown refs are warnings");
    assert_eq!(unknown.warnings.len(), 1);
    assert_eq!(unknown.warnings[0].subject.as_deref(), Some("no-such-ref"));
}

#[tokio::test]
async fn serves_with_and_without_the_client_v4_prefix() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    let bare = emulator
        .base_url()
        .trim_end_matches("/client/v4")
        .to_owned();
    let client = client_where(&emulator, |b| b.base_url(bare));
    client
        .queue("bare")
        .expect("id")
        .push(Message::text("x"))
        .await
        .expect("push without prefix");
    assert_eq!(emulator.metrics("bare").backlog_count, 1);
}

#[tokio::test]
async fn bad_input_gets_cloudflare_codes() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    let push = queue_path("q1", "/messages");
    let cases: Vec<(String, String, u16, u64)> = vec![
        (push.clone(), "{not json".into(), 400, 10208),
        (push.clone(), json!({"body": 5, "content_type": "text"}).to_string(), 400, 10207),
        (push.clone(), json!({"body": "x", "content_type": "xml"}).to_string(), 400, 10203),
        (push.clone(), json!({"body": "x", "content_type": 1}).to_string(), 400, 10203),
        (push.clone(), json!({"content_type": "text"}).to_string(), 400, 10207),
        (push.clone(), json!([1, 2]).to_string(), 400, 10207),
        (push.clone(), json!({"body": "x".repeat(128_000), "content_type": "text"}).to_string(), 400, 10204),
        (push.clone(), json!({"body": "x", "content_type": "text", "delay_seconds": 86_401}).to_string(), 400, 10203),
        (push.clone(), json!({"body": "x", "content_type": "text", "delay_seconds": -1}).to_string(), 400, 10203),
        (queue_path("q1", "/messages/batch"), json!({"messages": (0..101).map(|_| json!({"body": "x", "content_type": "text"})).collect::<Vec<_>>()}).to_string(), 400, 10206),
        (queue_path("q1", "/messages/batch"), json!({"messages": (0..3).map(|_| json!({"body": "x".repeat(100_000), "content_type": "text"})).collect::<Vec<_>>()}).to_string(), 400, 10205),
        (queue_path("q1", "/messages/batch"), json!({"messages": [{"body": "x", "content_type": "text"}], "delay_seconds": 90_000}).to_string(), 400, 10202),
        (queue_path("q1", "/messages/pull"), json!({"batch_size": 0}).to_string(), 400, 10207),
        (queue_path("q1", "/messages/pull"), json!({"batch_size": 101}).to_string(), 400, 10207),
        (queue_path("q1", "/messages/pull"), json!({"visibility_timeout_ms": 43_200_001}).to_string(), 400, 10207),
        (queue_path("q1", "/messages/pull"), json!({"visibility_timeout_ms": 0}).to_string(), 400, 10207),
        (queue_path("q1", "/messages/pull"), json!({"visibility_timeout_ms": 0.4}).to_string(), 400, 10207),
        (queue_path("q1", "/messages/ack"), json!({"acks": [{"lease": "x"}]}).to_string(), 400, 10207),
        (queue_path("q1", "/messages/ack"), json!({"retries": [{"lease_id": "x", "delay_seconds": 100_000}]}).to_string(), 400, 10203),
        (queue_path("q1", "/messages/purge"), json!({}).to_string(), 400, 10207),
        (queue_path(&"a".repeat(33), "/messages"), json!({"body": "x", "content_type": "text"}).to_string(), 400, 10107),
        (queue_path("not-alnum", "/messages/pull"), "{}".into(), 400, 10107),
        ("/accounts/x/queues/q1/nothing".into(), "{}".into(), 404, 7003),
        ("/accounts/not-an-account/queues/q1/messages/pull".into(), "{}".into(), 400, 10107),
        (push.clone(), "x".repeat(3 * 1024 * 1024), 413, 10204),
    ];
    for (path, body, status, code) in cases {
        let got = post_text(&emulator, &path, body).await;
        assert_eq!(
            (got.status, got.code()),
            (status, Some(code)),
            "{path}: {}",
            got.body
        );
        assert_eq!(got.body["success"], false);
    }
    assert_eq!(
        emulator.metrics("q1").backlog_count,
        0,
        "nothing invalid was stored"
    );
    for (path, body, pointer) in [
        (
            queue_path("q1", "/messages/pull"),
            json!({"visibility_timeout_ms": 0}),
            "/visibility_timeout_ms",
        ),
        (
            push.clone(),
            json!({"body": "x", "content_type": "xml"}),
            "/content_type",
        ),
    ] {
        let got = post_text(&emulator, &path, body.to_string()).await.body;
        assert_eq!(got["errors"][0]["source"]["pointer"], pointer, "{got}");
    }
}

#[tokio::test]
async fn auth_is_required_and_checked() {
    let (emulator, _clock) = emulator_with(|e| {
        e.token("right-token")
            .global_api_key("me@example.com", "right-key")
    })
    .await;
    let url = format!(
        "{}{}",
        emulator.base_url(),
        queue_path("q1", "/messages/pull")
    );
    let http = reqwest::Client::new();
    let send = |request: reqwest::RequestBuilder| async move {
        let response = request.body("{}").send().await.expect("request");
        let status = response.status().as_u16();
        (
            status,
            response.json::<Value>().await.expect("json")["errors"][0]["code"].as_u64(),
        )
    };
    // Missing and malformed credentials: 400, as Cloudflare's v4 API answers.
    assert_eq!(send(http.post(&url)).await, (400, Some(9106)));
    for malformed in ["right-token", "Basic right-token", "Bearer "] {
        let request = http.post(&url).header("authorization", malformed);
        assert_eq!(send(request).await, (400, Some(6003)), "{malformed:?}");
    }
    let unprefixed = http.post(&url).header("authorization", "right-token");
    let response = unprefixed.send().await.expect("request");
    let chained: Value = response.json().await.expect("json");
    assert_eq!(chained["errors"][0]["error_chain"][0]["code"], 6111);
    let global_key = |key: &str| {
        (http.post(&url))
            .header("x-auth-email", "me@example.com")
            .header("x-auth-key", key)
    };
    let wrong_ones = [
        http.post(&url).bearer_auth("wrong-token"),
        global_key("wrong"),
    ];
    for request in wrong_ones {
        assert_eq!(send(request).await, (403, Some(10000)));
    }
    let right_ones = [
        http.post(&url).bearer_auth("right-token"),
        global_key("right-key"),
    ];
    for request in right_ones {
        assert_eq!(send(request).await.0, 200);
    }

    let wrong = client_where(&emulator, |b| b.api_token("wrong-token"));
    let forbidden = wrong.queue("q1").expect("id");
    let error = forbidden
        .pull(PullOptions::new())
        .await
        .expect_err("forbidden");
    assert_eq!((error.status(), error.codes()), (Some(403), vec![10000]));
    assert!(!format!("{error:?}").contains("wrong-token"));
}

#[tokio::test]
async fn strict_mode_knows_only_declared_queues() {
    let (emulator, _clock) = emulator_with(|e| e.strict_queues(["known"])).await;
    queue(&emulator, "known")
        .push(Message::text("x"))
        .await
        .expect("declared queue");
    let error = queue(&emulator, "unknown")
        .push(Message::text("x"))
        .await
        .expect_err("undeclared queue");
    assert_eq!((error.status(), error.codes()), (Some(404), vec![10104]));
}

#[tokio::test]
async fn injected_faults_fail_the_next_requests() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    let client = client_where(&emulator, |b| {
        b.retry(cf_queues::retry::RetryPolicy::none())
    });
    let q = client.queue("faulty").expect("id");
    emulator.inject(Fault::status(500).times(2).only(Operation::Push));
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .retry_after(Duration::from_secs(3))
            .only(Operation::Pull),
    );
    emulator.inject(
        Fault::status(502)
            .html("<html>bad gateway</html>")
            .only(Operation::Peek),
    );

    for _ in 0..2 {
        let error = q.push(Message::text("x")).await.expect_err("injected 500");
        assert_eq!((error.status(), error.codes()), (Some(500), vec![15000]));
    }
    q.push(Message::text("x"))
        .await
        .expect("the third push succeeds");
    let limited = q.pull(PullOptions::new()).await.expect_err("injected 429");
    let api = limited.as_api().expect("api error");
    assert_eq!(
        (api.status, api.retry_after),
        (429, Some(Duration::from_secs(3)))
    );
    let page = q.peek(1).await.expect_err("injected 502");
    assert_eq!(
        page.as_api()
            .and_then(|a| a.body_snippet.clone())
            .as_deref(),
        Some("<html>bad gateway</html>")
    );
    assert_eq!(pull(&q, PullOptions::new()).await.messages.len(), 1);
}

#[tokio::test]
async fn a_stalled_request_times_out_in_the_client() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    emulator.inject(Fault::stall_only(Duration::from_secs(5)));
    let client = client_where(&emulator, |b| {
        b.timeout(Duration::from_millis(200))
            .retry(cf_queues::retry::RetryPolicy::none())
    });
    let slow = client.queue("slow").expect("id");
    let error = slow.pull(PullOptions::new()).await.expect_err("timeout");
    match error {
        Error::Transport { source, .. } => assert!(source.is_timeout(), "{source:?}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn worker_written_bodies_decode_or_fail_clearly() {
    use cf_queues::error::BodyError;
    use cf_queues::message::ContentType;
    use cf_queues_emulator::WorkerBody;
    let (emulator, _clock) = emulator_with(|e| e).await;
    emulator.push_from_worker("workers", WorkerBody::Bytes(vec![0, 1, 2, 255]));
    emulator.push_from_worker("workers", WorkerBody::V8(vec![0xff, 0x0f]));
    let batch = pull(&queue(&emulator, "workers"), PullOptions::new()).await;
    assert_eq!(batch.messages[0].content_type(), &ContentType::Bytes);
    assert_eq!(
        batch.messages[0].body().bytes().expect("bytes"),
        vec![0, 1, 2, 255]
    );
    assert_eq!(batch.messages[1].content_type(), &ContentType::V8);
    assert!(matches!(
        batch.messages[1].body().bytes(),
        Err(BodyError::UnsupportedContentType { .. })
    ));
}

#[tokio::test]
async fn dead_letter_settings_that_strand_messages_refuse_to_start() {
    for emulator in [
        Emulator::new().dead_letter_queue("", ""),
        Emulator::new().dead_letter_queue("work", "not-an-id"),
        Emulator::new().dead_letter_queue("work", "work"),
        Emulator::new()
            .strict_queues(["work"])
            .dead_letter_queue("work", "dlq"),
    ] {
        let error = emulator.start().await.expect_err("refused");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput, "{error}");
    }
    let reachable = Emulator::new().strict_queues(["work", "dlq"]);
    let reachable = reachable.dead_letter_queue("work", "dlq").start().await;
    let handle = reachable.expect("a reachable dead-letter queue");
    handle.shutdown().await.expect("shutdown");
}
