//! The exact request each operation sends, and the decoded result, pinned with httpmock.

use std::time::Duration;

use cf_queues::batch::Batch;
use cf_queues::message::ContentType;
use cf_queues::response::{Metrics, Warning};
use cf_queues::{Acks, Client, Error, Message, PullOptions, Queue};
use httpmock::Method::POST;
use httpmock::{Mock, MockServer};
use serde_json::{Value, json};

use cf_queues_testkit::wire::{Auth, BOTH, QUEUE, success};

/// The path of a `/messages` operation: `suffix` is `""`, `"/pull"`, ...
fn path(suffix: &str) -> String {
    cf_queues_testkit::wire::path(&format!("/messages{suffix}"))
}

fn client(server: &MockServer) -> Client {
    Auth::Token
        .builder(&server.base_url())
        .build()
        .expect("valid test configuration")
}

/// The success example from Cloudflare's reference, `errors` included.
fn push_example() -> serde_json::Value {
    json!({
        "errors": [{"code": 7003, "message": "No route for the URI", "documentation_url": "documentation_url", "source": {"pointer": "pointer"}}],
        "messages": ["string"],
        "result": {"metadata": {"metrics": {"backlog_bytes": 1024, "backlog_count": 5, "oldest_message_timestamp_ms": 1710950954154u64}}},
        "success": true
    })
}

fn metrics_tuple(m: Option<Metrics>) -> Option<(u64, u64, u64)> {
    m.map(|m| {
        (
            m.backlog_count,
            m.backlog_bytes,
            m.oldest_message_timestamp_ms,
        )
    })
}

const EXAMPLE_METRICS: Option<(u64, u64, u64)> = Some((5, 1024, 1_710_950_954_154));

/// A mock of `POST /messages{suffix}` with `auth`'s headers and exactly
/// the JSON `request` (any body when `None`), answering `answer` whole.
async fn posted<'a>(
    server: &'a MockServer,
    auth: Auth,
    (suffix, request): (&str, Option<Value>),
    answer: Value,
) -> Mock<'a> {
    server
        .mock_async(|when, then| {
            let when = auth.authenticated(when.method(POST).path(path(suffix)));
            if let Some(request) = request {
                when.header("content-type", "application/json")
                    .json_body(request);
            }
            then.status(200).json_body(answer);
        })
        .await
}

/// The field an [`Error::InvalidInput`] names; panics on anything else.
fn field<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    match result {
        Err(Error::InvalidInput { field, .. }) => field,
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

/// A mock of any request, answering `status`: one that should not be sent
/// shows in its count.
async fn any_request(server: &MockServer, status: u16) -> Mock<'_> {
    server
        .mock_async(|when, then| {
            when.any_request();
            then.status(status);
        })
        .await
}

/// [`QUEUE`] on `server`, with a token.
fn queue(server: &MockServer) -> Queue {
    client(server).queue(QUEUE).expect("valid queue id")
}

/// A push's exact request and answer, with a token or the global key (the
/// base URL given with a trailing slash), and the metrics it reads.
#[tokio::test]
async fn push_text_sends_bearer_and_exact_body() {
    let json = json!({"order": 42, "items": ["a"]});
    let delayed = Message::json(&json)
        .expect("serializable")
        .with_delay(Duration::from_millis(29_001));
    let pushed = json!({"body": json, "content_type": "json", "delay_seconds": 30});
    let cases = [
        (
            Auth::Token,
            Message::text("hello"),
            json!({"body": "hello", "content_type": "text"}),
            push_example(),
            EXAMPLE_METRICS,
        ),
        (Auth::GlobalKey, delayed, pushed, success(json!({})), None),
    ];
    for (auth, message, request, answer, metrics) in cases {
        let server = MockServer::start_async().await;
        let mock = posted(&server, auth, ("", Some(request)), answer).await;
        let base_url = format!("{}/", server.base_url());
        let client = auth
            .builder(&base_url)
            .build()
            .expect("valid configuration");
        let receipt = client.queue(QUEUE).expect("id").push(message).await;
        mock.assert_async().await;
        assert_eq!(
            metrics_tuple(receipt.expect("push succeeds").metrics),
            metrics,
            "{auth:?}"
        );
    }
}

#[tokio::test]
async fn push_batch_sends_messages_and_batch_delay() {
    let server = MockServer::start_async().await;
    let request = json!({
        "messages": [
            {"body": "first", "content_type": "text"},
            {"body": {"ids": [1, 2, 3]}, "content_type": "json", "delay_seconds": 5}
        ],
        "delay_seconds": 10
    });
    let mock = posted(
        &server,
        Auth::Token,
        ("/batch", Some(request)),
        push_example(),
    )
    .await;
    let second = Message::json(&json!({"ids": [1, 2, 3]})).expect("serializable");
    let batch = Batch::new([
        Message::text("first"),
        second.with_delay(Duration::from_secs(5)),
    ]);
    let batch = batch.with_delay(Duration::from_secs(10));
    let receipt = queue(&server)
        .push_batch(batch)
        .await
        .expect("batch succeeds");
    mock.assert_async().await;
    assert_eq!(metrics_tuple(receipt.metrics), EXAMPLE_METRICS);
}

#[tokio::test]
async fn pull_sends_options_and_decodes_every_body_kind() {
    let server = MockServer::start_async().await;
    let result = json!({
                    "message_backlog_count": 7,
                    "metadata": {"metrics": {"backlog_bytes": 300, "backlog_count": 7, "oldest_message_timestamp_ms": 1710950954154u64}},
                    "messages": [
                        {"id": "m1", "attempts": 1, "body": "hello", "lease_id": "lease-1",
                         "metadata": {"CF-sourceMessageSource": "api", "CF-Content-Type": "text"}, "timestamp_ms": 1710950954154u64},
                        {"id": "m2", "attempts": 2, "body": "eyJvcmRlciI6NDJ9", "lease_id": "lease-2",
                         "metadata": {"CF-Content-Type": "json"}, "timestamp_ms": 1710950954155u64},
                        {"id": "m3", "attempts": 1, "body": "{\"order\":43}", "lease_id": "lease-3",
                         "metadata": {"CF-Content-Type": "json"}, "timestamp_ms": 1710950954156u64},
                        {"id": "m4", "attempts": 1, "body": "AAEC/w==", "lease_id": "lease-4",
                         "metadata": {"CF-Content-Type": "bytes"}, "timestamp_ms": 1710950954157u64, "unknown_field": true},
                        {"id": "m5", "attempts": 3, "body": "/w8iBWhlbGxv", "lease_id": "lease-5",
                         "metadata": {"CF-Content-Type": "v8"}, "timestamp_ms": 1710950954158u64}
                    ]
    });
    let request = json!({"batch_size": 10, "visibility_timeout_ms": 60000});
    let route = ("/pull", Some(request));
    let mock = posted(&server, Auth::Token, route, success(result)).await;
    let options = PullOptions::new()
        .batch_size(10)
        .visibility_timeout(Duration::from_secs(60));
    let batch = queue(&server).pull(options).await.expect("pull succeeds");
    mock.assert_async().await;

    assert_eq!(batch.backlog_count, Some(7));
    assert_eq!(batch.metrics.map(|m| m.backlog_bytes), Some(300));
    let m = &batch.messages;
    assert_eq!(m.len(), 5);
    assert_eq!(
        (m[0].id.as_str(), m[0].attempts, m[0].timestamp_ms),
        ("m1", 1, 1_710_950_954_154)
    );
    assert_eq!(m[0].lease_id.as_str(), "lease-1");
    assert_eq!(m[0].metadata["CF-sourceMessageSource"], "api");
    assert_eq!(m[0].body().text().expect("text"), "hello");
    assert_eq!(m[1].content_type(), &ContentType::Json);
    assert_eq!(
        m[1].body()
            .json::<serde_json::Value>()
            .expect("base64 json"),
        json!({"order": 42})
    );
    assert_eq!(m[1].body().raw(), "eyJvcmRlciI6NDJ9");
    assert_eq!(
        m[2].body().json::<serde_json::Value>().expect("plain json"),
        json!({"order": 43})
    );
    assert_eq!(m[3].body().bytes().expect("bytes"), vec![0u8, 1, 2, 255]);
    assert!(matches!(
        m[4].body().json::<serde_json::Value>(),
        Err(cf_queues::error::BodyError::UnsupportedContentType { ref content_type, .. }) if content_type == "v8"
    ));
}

/// A pull with the defaults sends an empty object. An answer without
/// `message_backlog_count` says nothing about the backlog: unknown, not an
/// empty queue.
#[tokio::test]
async fn pull_with_defaults_sends_empty_object() {
    let empty = json!({"messages": [], "message_backlog_count": 0});
    for (answer, backlog) in [(empty, Some(0)), (json!({"messages": []}), None)] {
        let server = MockServer::start_async().await;
        let mock = posted(
            &server,
            Auth::Token,
            ("/pull", Some(json!({}))),
            success(answer),
        )
        .await;
        let batch = queue(&server).pull(PullOptions::new()).await.expect("pull");
        mock.assert_async().await;
        assert_eq!((batch.messages.len(), batch.backlog_count), (0, backlog));
    }
}

/// Acks and retries go in one call; warnings come as a map or as a list.
/// The live API has been seen answering an ack without `ackCount` and
/// `retryCount` (see the facts sheet): the counts are unknown, not 0.
/// Present and `null` reads the same; a present 0 stays a known 0. An
/// empty ack sends nothing, and its counts are known, not left out.
#[tokio::test]
async fn ack_and_retry_in_one_call_with_map_warnings() {
    let three = || Acks::new().ack("lease-1").ack("lease-2").retry("lease-3");
    let three_request = || {
        let acks = json!([{"lease_id": "lease-1"}, {"lease_id": "lease-2"}]);
        Some(json!({"acks": acks, "retries": [{"lease_id": "lease-3"}]}))
    };
    let in_one = Acks::new()
        .ack("lease-1")
        .retry("lease-2")
        .retry_after("lease-3", Duration::from_secs(60));
    let in_one_request = json!({
        "acks": [{"lease_id": "lease-1"}],
        "retries": [{"lease_id": "lease-2"}, {"lease_id": "lease-3", "delay_seconds": 60}]
    });
    let map = json!({"ackCount": 1, "retryCount": 1, "warnings": {"lease-3": "lease expired", "lease-2": "x"}});
    let listed = json!({"ackCount": 0, "retryCount": 0, "warnings": ["lease lease-9 not found"]});
    type Warned = Vec<(Option<&'static str>, &'static str)>;
    // (the acks, the exact request, or none sent; the answer's result,
    // the counts and warnings it decodes to)
    type Case = (
        Acks,
        Option<Value>,
        Value,
        (Option<u32>, Option<u32>),
        Warned,
    );
    let cases: Vec<Case> = vec![
        (
            in_one,
            Some(in_one_request),
            map,
            (Some(1), Some(1)),
            vec![(Some("lease-2"), "x"), (Some("lease-3"), "lease expired")],
        ),
        (
            Acks::new().ack("lease-9"),
            Some(json!({"acks": [{"lease_id": "lease-9"}]})),
            listed,
            (Some(0), Some(0)),
            vec![(None, "lease lease-9 not found")],
        ),
        (three(), three_request(), json!({}), (None, None), vec![]),
        (
            three(),
            three_request(),
            json!({"ackCount": null, "retryCount": null}),
            (None, None),
            vec![],
        ),
        (
            three(),
            three_request(),
            json!({"ackCount": 2}),
            (Some(2), None),
            vec![],
        ),
        (
            three(),
            three_request(),
            json!({"retryCount": 0, "warnings": {}}),
            (None, Some(0)),
            vec![],
        ),
        (
            three(),
            three_request(),
            json!({"ackCount": -1, "retryCount": 1}),
            (None, Some(1)),
            vec![],
        ),
        (Acks::new(), None, json!({}), (Some(0), Some(0)), vec![]),
    ];
    for (acks, request, result, counts, warned) in cases {
        let server = MockServer::start_async().await;
        let sends = usize::from(request.is_some());
        let mock = match request {
            Some(request) => {
                posted(
                    &server,
                    Auth::Token,
                    ("/ack", Some(request)),
                    success(result.clone()),
                )
                .await
            }
            None => any_request(&server, 500).await,
        };
        let outcome = queue(&server)
            .ack(acks)
            .await
            .expect("an answer without counts is a success");
        assert_eq!(mock.calls_async().await, sends, "{result}");
        assert_eq!((outcome.acked, outcome.retried), counts, "{result}");
        let warnings: Vec<_> = outcome
            .warnings
            .iter()
            .map(|w| (w.subject.as_deref(), w.message.as_str()))
            .collect();
        assert_eq!(warnings, warned, "{result}");
    }
}

#[tokio::test]
async fn peek_then_purge_by_ref() {
    let server = MockServer::start_async().await;
    let peeked = json!({"messages": [
        {"id": "m1", "attempts": 0, "body": "hi", "ref": "ref-1", "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 5},
        {"id": "m2", "attempts": 0, "body": "eyJhIjoxfQ==", "ref": "ref-2", "metadata": {"CF-Content-Type": "json"}, "timestamp_ms": 6}
    ]});
    let peek = posted(
        &server,
        Auth::Token,
        ("/peek", Some(json!({"batch_size": 2}))),
        success(peeked),
    )
    .await;
    let refs = json!({"refs": [{"ref": "ref-1"}, {"ref": "ref-2"}]});
    let purged =
        json!({"errors": [{"message": "partial"}], "warnings": {"ref-2": "message not found"}});
    let route = ("/purge", Some(refs));
    let purge = posted(&server, Auth::Token, route, success(purged)).await;
    let queue = queue(&server);
    let peeked = queue.peek(2).await.expect("peek");
    peek.assert_async().await;
    assert_eq!(peeked.len(), 2);
    assert_eq!(peeked[0].peek_ref.as_str(), "ref-1");
    assert_eq!(peeked[0].body().text().expect("text"), "hi");
    assert_eq!(
        peeked[1].body().json::<serde_json::Value>().expect("json"),
        json!({"a": 1})
    );
    let outcome = queue.purge(&peeked).await.expect("purge");
    purge.assert_async().await;
    assert_eq!(outcome.errors, vec!["partial".to_owned()]);
    assert_eq!(
        outcome.warnings,
        vec![Warning {
            subject: Some("ref-2".into()),
            message: "message not found".into()
        }]
    );
}

#[tokio::test]
async fn invalid_input_is_rejected_before_sending() {
    let server = MockServer::start_async().await;
    let mock = any_request(&server, 200).await;
    let client = client(&server);
    let queue = client.queue(QUEUE).expect("id");
    let big = "x".repeat(128_000 - 100 + 1);
    let late_message = Message::text("a").with_delay(Duration::from_secs(86_401));
    let many = Batch::new((0..101).map(|i| Message::text(i.to_string())));
    let heavy = Batch::new((0..3).map(|_| Message::text("y".repeat(100_000))));
    let bad_member = Batch::new([Message::text("ok"), Message::text("z".repeat(200_000))]);
    let long = PullOptions::new().visibility_timeout(Duration::from_secs(12 * 3600 + 1));
    let late_retry = Acks::new().retry_after("l", Duration::from_secs(90_000));
    let refused = [
        (field(client.queue("")), "queue_id"),
        (field(client.queue("a".repeat(33))), "queue_id"),
        (field(client.queue("not-alnum")), "queue_id"),
        (field(queue.push(Message::text(big)).await), "message.body"),
        (field(queue.push(late_message).await), "message.delay"),
        (field(queue.push_batch(many).await), "messages"),
        (field(queue.push_batch(heavy).await), "messages"),
        (field(queue.push_batch(Batch::new([])).await), "messages"),
        (
            field(queue.push_batch(bad_member).await),
            "messages[1].body",
        ),
        (
            field(queue.pull(PullOptions::new().batch_size(0)).await),
            "batch_size",
        ),
        (
            field(queue.pull(PullOptions::new().batch_size(101)).await),
            "batch_size",
        ),
        (field(queue.pull(long).await), "visibility_timeout"),
        (
            field(queue.ack(Acks::new().ack("")).await),
            "acks[0].lease_id",
        ),
        (field(queue.ack(late_retry).await), "retries[0].delay"),
        (field(queue.peek(0).await), "batch_size"),
        (field(queue.purge(Vec::<&str>::new()).await), "refs"),
    ];
    for (named, field) in refused {
        assert_eq!(named, field);
    }
    let sent = mock.calls_async().await;
    assert_eq!(sent, 0, "no request may be sent for invalid input");
}

#[tokio::test]
async fn every_operation_authenticates_with_either_scheme() {
    let server = MockServer::start_async().await;
    let token_client = client(&server);
    let key_client = Auth::GlobalKey
        .builder(&server.base_url())
        .build()
        .expect("valid configuration");
    let ok = json!({"success": true, "errors": [], "messages": [], "result": {}});
    for suffix in ["", "/batch", "/pull", "/ack", "/peek", "/purge"] {
        for auth in BOTH {
            posted(&server, auth, (suffix, None), ok.clone()).await;
        }
    }
    let unmatched = any_request(&server, 599).await;
    for client in [&token_client, &key_client] {
        let queue = client.queue(QUEUE).expect("id");
        queue.push(Message::text("a")).await.expect("push");
        queue
            .push_batch(vec![Message::text("b")])
            .await
            .expect("batch");
        queue.pull(PullOptions::new()).await.expect("pull");
        queue.ack(Acks::new().ack("lease")).await.expect("ack");
        queue.peek(1).await.expect("peek");
        queue.purge(["ref"]).await.expect("purge");
    }
    let unauthenticated = unmatched.calls_async().await;
    assert_eq!(
        unauthenticated, 0,
        "a request went out without the right headers"
    );
}

#[tokio::test]
async fn odd_messages_do_not_fail_a_pull() {
    let server = MockServer::start_async().await;
    let result = json!({
                    "message_backlog_count": 2,
                    "messages": [
                        {"id": "m1", "attempts": 1, "body": 5, "lease_id": "l1", "metadata": null, "timestamp_ms": 1},
                        {"id": "m2", "attempts": 1, "body": null, "lease_id": "l2", "metadata": "odd", "timestamp_ms": 2},
                        {"id": "m3", "attempts": 1, "body": "ok", "lease_id": "l3",
                         "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 3}
                    ]
    });
    let answer = json!({"success": true, "errors": null, "messages": null, "result": result});
    let _pull = posted(&server, Auth::Token, ("/pull", None), answer).await;
    let batch = queue(&server).pull(PullOptions::new()).await.expect("pull");
    let m = &batch.messages;
    assert_eq!(
        m.len(),
        3,
        "every lease comes back, so every message can be acked or retried"
    );
    assert_eq!((m[0].body().raw(), m[0].lease_id.as_str()), ("5", "l1"));
    assert!(m[0].metadata.is_empty());
    assert_eq!(m[0].content_type(), &ContentType::Other(String::new()));
    assert_eq!(m[1].body().raw(), "");
    assert_eq!(m[2].body().text().expect("text"), "ok");
}

#[test]
fn json_bodies_must_be_objects() {
    for value in [json!([1, 2, 3]), json!("text"), json!(5), json!(null)] {
        match Message::json(&value) {
            Err(Error::InvalidInput { field, reason, .. }) => {
                assert_eq!(field, "body");
                assert!(reason.contains("JSON object"), "{reason}");
            }
            other => panic!("{value} was accepted: {other:?}"),
        }
    }
    assert!(Message::json(&json!({"ok": [1, 2, 3]})).is_ok());
}
