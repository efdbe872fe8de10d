//! HTTP pull as a resource: listing a queue's consumers, enabling HTTP pull
//! (create or update of the `http_pull` consumer, never over a Worker) and
//! disabling it. A submodule of `wire_resources`, whose helpers and
//! published examples it shares; `pull_window` uses its own helpers.

use super::*;

use cf_queues::resources::{HttpPullConsumer, HttpPullSettings};
use httpmock::Method::PUT;

/// A consumer id as the live API writes them, distinct from the account
/// id (which the published example of an identifier also is).
pub(super) const CONSUMER: &str = "e4dc8d4d6cee4b1ba5c2b5a0a26a0b2f";

pub(super) fn consumers_path() -> String {
    path("/consumers")
}

pub(super) fn consumer_path(id: &str) -> String {
    path(&format!("/consumers/{id}"))
}

/// An HTTP pull consumer built from the published examples
/// (`mq_http-consumer-response` and the schemas it refers to), with id `id`.
pub(super) fn example_http_pull(id: &str) -> Value {
    json!({
        "type": "http_pull",
        "consumer_id": id,
        "created_on": "2024-03-20T16:09:14.154Z",
        "queue_name": NAME,
        "dead_letter_queue": "example-dlq",
        "settings": {
            "batch_size": 50,
            "max_retries": 3,
            "retry_delay": 10,
            "visibility_timeout_ms": 6000
        }
    })
}

/// The settings of [`example_http_pull`].
fn example_settings() -> HttpPullSettings {
    HttpPullSettings::new()
        .batch_size(50)
        .max_retries(3)
        .retry_delay(Duration::from_secs(10))
        .visibility_timeout(Duration::from_millis(6000))
        .dead_letter_queue("example-dlq")
}

/// [`example_http_pull`] decoded.
fn example_http_pull_decoded(id: &str) -> HttpPullConsumer {
    let mut consumer = HttpPullConsumer::default();
    consumer.consumer_id = Some(id.into());
    consumer.created_on = Some("2024-03-20T16:09:14.154Z".into());
    consumer.queue_name = Some(NAME.into());
    consumer.settings = example_settings();
    consumer
}

/// The request body that writes [`example_settings`].
fn example_request() -> Value {
    json!({
        "type": "http_pull",
        "settings": {"batch_size": 50, "max_retries": 3, "retry_delay": 10, "visibility_timeout_ms": 6000},
        "dead_letter_queue": "example-dlq"
    })
}

/// A mock of `GET .../consumers` answering these consumers.
pub(super) async fn consumers_mock(server: &MockServer, consumers: Value) -> Mock<'_> {
    server
        .mock_async(|when, then| {
            Auth::Token.authenticated(when.method(GET).path(consumers_path()));
            then.status(200).json_body(success(consumers));
        })
        .await
}

/// The answer of a pull on a queue without HTTP pull, as seen on the live API.
pub(super) fn pull_disabled() -> Value {
    failure(
        codes::HTTP_PULL_NOT_ENABLED,
        "messages cannot be pulled unless http_pull mode is enabled",
    )
}

/// A pull's answer with one message.
pub(super) fn pulled() -> Value {
    success(json!({
        "messages": [{
            "id": "m1", "lease_id": "lease-1", "attempts": 1, "body": "hello",
            "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 1_710_950_954_154u64
        }],
        "message_backlog_count": 0
    }))
}

// ---------------------------------------------------------------------------
// Reading consumers
// ---------------------------------------------------------------------------

#[tokio::test]
async fn consumers_decodes_the_published_examples_and_odd_shapes() {
    let server = MockServer::start_async().await;
    let list = server
        .mock_async(|when, then| {
            Auth::GlobalKey.authenticated(when.method(GET).path(consumers_path()));
            then.status(200).json_body(success(json!([
                example_http_pull(EXAMPLE_ID),
                example_worker(),
                // Floats, an empty dead-letter queue, settings partly left out.
                {
                    "type": "http_pull", "consumer_id": CONSUMER, "dead_letter_queue": "",
                    "settings": {"batch_size": 10.0, "visibility_timeout_ms": 30000.0}
                },
                {"type": "r2_bucket", "consumer_id": "r1"},
                {"type": "http_pull"}
            ])));
        })
        .await;
    let consumers = queue(&server, Auth::GlobalKey)
        .consumers()
        .await
        .expect("listed");
    let mut odd = HttpPullConsumer::default();
    odd.consumer_id = Some(CONSUMER.into());
    odd.settings = HttpPullSettings::new()
        .batch_size(10)
        .visibility_timeout(Duration::from_secs(30));
    assert_eq!(
        consumers,
        vec![
            ConsumerInfo::HttpPull(example_http_pull_decoded(EXAMPLE_ID)),
            example_worker_decoded(),
            ConsumerInfo::HttpPull(odd),
            ConsumerInfo::Other {
                kind: "r2_bucket".into(),
                consumer_id: Some("r1".into())
            },
            ConsumerInfo::HttpPull(HttpPullConsumer::default()),
        ]
    );
    assert_eq!(list.calls_async().await, 1);
}

#[tokio::test]
async fn http_pull_finds_the_http_pull_consumer_or_none() {
    for (listed, expected) in [
        (
            json!([example_http_pull(CONSUMER)]),
            Some(example_http_pull_decoded(CONSUMER)),
        ),
        (json!([]), None),
        (json!(null), None),
        (json!([example_worker()]), None),
    ] {
        let server = MockServer::start_async().await;
        let list = consumers_mock(&server, listed.clone()).await;
        let found = queue(&server, Auth::Token)
            .http_pull()
            .await
            .expect("listed");
        assert_eq!(found, expected, "{listed}");
        assert_eq!(list.calls_async().await, 1);
    }
}

// ---------------------------------------------------------------------------
// Enabling
// ---------------------------------------------------------------------------

/// No consumer yet: the consumers are read, then the `http_pull` consumer
/// is created with exactly the settings given, durations rounded up.
#[tokio::test]
async fn enable_http_pull_creates_the_consumer() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let list = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(GET).path(consumers_path()));
                then.status(200).json_body(success(json!([])));
            })
            .await;
        let create = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(POST).path(consumers_path()))
                    .header("content-type", "application/json")
                    .json_body(json!({
                        "type": "http_pull",
                        "settings": {"batch_size": 50, "max_retries": 3, "retry_delay": 11, "visibility_timeout_ms": 6001},
                        "dead_letter_queue": "example-dlq"
                    }));
                then.status(200)
                    .json_body(success(example_http_pull(CONSUMER)));
            })
            .await;
        let others = catch_all(&server).await;
        let settings = HttpPullSettings::new()
            .batch_size(50)
            .max_retries(3)
            .retry_delay(Duration::from_millis(10_001))
            .visibility_timeout(Duration::from_micros(6_000_001))
            .dead_letter_queue("example-dlq");
        let enabled = queue(&server, auth)
            .enable_http_pull(settings)
            .await
            .expect("enabled");
        assert_eq!(enabled, example_http_pull_decoded(CONSUMER), "{auth:?}");
        assert_eq!(list.calls_async().await, 1, "{auth:?}");
        assert_eq!(create.calls_async().await, 1, "{auth:?}");
        assert_eq!(others.calls_async().await, 0, "{auth:?}");
    }
}

/// Without settings, only the type is sent: Cloudflare's defaults apply.
#[tokio::test]
async fn enable_http_pull_without_settings_sends_only_the_type() {
    let server = MockServer::start_async().await;
    let list = consumers_mock(&server, json!([])).await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST)
                .path(consumers_path())
                .json_body(json!({"type": "http_pull"}));
            then.status(200).json_body(success(json!({
                "type": "http_pull", "consumer_id": CONSUMER, "queue_name": NAME,
                "settings": {"batch_size": 5, "max_retries": 3, "visibility_timeout_ms": 30000}
            })));
        })
        .await;
    let others = catch_all(&server).await;
    let enabled = queue(&server, Auth::Token)
        .enable_http_pull(HttpPullSettings::new())
        .await
        .expect("enabled");
    let mut expected = HttpPullConsumer::default();
    expected.consumer_id = Some(CONSUMER.into());
    expected.queue_name = Some(NAME.into());
    expected.settings = HttpPullSettings::new()
        .batch_size(5)
        .max_retries(3)
        .visibility_timeout(Duration::from_secs(30));
    assert_eq!(enabled, expected);
    assert_eq!(list.calls_async().await, 1);
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

/// Create answers may leave out `dead_letter_queue` (or the settings, or
/// the type): the consumer returned has the settings asked for.
#[tokio::test]
async fn a_create_answer_without_the_dead_letter_queue_keeps_the_one_asked() {
    for answer in [
        json!({
            "type": "http_pull", "consumer_id": CONSUMER, "created_on": "2024-03-20T16:09:14.154Z", "queue_name": NAME,
            "settings": {"batch_size": 50, "max_retries": 3, "retry_delay": 10, "visibility_timeout_ms": 6000}
        }),
        json!({
            "type": "http_pull", "consumer_id": CONSUMER, "created_on": "2024-03-20T16:09:14.154Z", "queue_name": NAME,
            "settings": {"batch_size": 50.0, "max_retries": 3.0, "retry_delay": 10.0, "visibility_timeout_ms": 6000.0}
        }),
    ] {
        let server = MockServer::start_async().await;
        let list = consumers_mock(&server, json!([])).await;
        let create = server
            .mock_async(|when, then| {
                when.method(POST)
                    .path(consumers_path())
                    .json_body(example_request());
                then.status(200).json_body(success(answer.clone()));
            })
            .await;
        let enabled = queue(&server, Auth::Token)
            .enable_http_pull(example_settings())
            .await
            .expect("enabled");
        assert_eq!(enabled, example_http_pull_decoded(CONSUMER), "{answer}");
        assert_eq!(list.calls_async().await, 1);
        assert_eq!(create.calls_async().await, 1);
    }

    // Nothing but the id: everything else is what was asked.
    let server = MockServer::start_async().await;
    let _list = consumers_mock(&server, json!([])).await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST)
                .path(consumers_path())
                .json_body(example_request());
            then.status(200)
                .json_body(success(json!({"consumer_id": CONSUMER})));
        })
        .await;
    let enabled = queue(&server, Auth::Token)
        .enable_http_pull(example_settings())
        .await
        .expect("enabled");
    let mut expected = HttpPullConsumer::default();
    expected.consumer_id = Some(CONSUMER.into());
    expected.settings = example_settings();
    assert_eq!(enabled, expected);
    assert_eq!(create.calls_async().await, 1);
}

/// An answer that says `dead_letter_queue: ""` says, by the published
/// description, that no dead-letter queue is configured: that is not an
/// answer that left the field out, and the consumer returned should say
/// none, not the one asked for.
#[tokio::test]
async fn a_create_answer_with_no_dead_letter_queue_is_believed() {
    let server = MockServer::start_async().await;
    let _list = consumers_mock(&server, json!([])).await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST)
                .path(consumers_path())
                .json_body(example_request());
            let mut answer = example_http_pull(CONSUMER);
            answer["dead_letter_queue"] = json!("");
            then.status(200).json_body(success(answer));
        })
        .await;
    let enabled = queue(&server, Auth::Token)
        .enable_http_pull(example_settings())
        .await
        .expect("enabled");
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(enabled.settings.dead_letter_queue, None);
}

/// HTTP pull enabled already: the consumer is updated in place (`PUT` with
/// its id), never created a second time.
#[tokio::test]
async fn enable_http_pull_updates_an_existing_consumer() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let list = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(GET).path(consumers_path()));
                then.status(200)
                    .json_body(success(json!([example_http_pull(CONSUMER)])));
            })
            .await;
        let update = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(PUT).path(consumer_path(CONSUMER)))
                    .header("content-type", "application/json")
                    .json_body(json!({
                        "type": "http_pull",
                        "settings": {"max_retries": 5, "visibility_timeout_ms": 60000},
                        "dead_letter_queue": "orders-dlq"
                    }));
                // The answer leaves out the id: the one updated is kept.
                then.status(200).json_body(success(json!({
                    "type": "http_pull", "queue_name": NAME, "dead_letter_queue": "orders-dlq",
                    "settings": {"batch_size": 5, "max_retries": 5, "visibility_timeout_ms": 60000}
                })));
            })
            .await;
        let create = server
            .mock_async(|when, then| {
                when.method(POST).path(consumers_path());
                then.status(500);
            })
            .await;
        let others = catch_all(&server).await;
        let settings = HttpPullSettings::new()
            .max_retries(5)
            .visibility_timeout(Duration::from_secs(60))
            .dead_letter_queue("orders-dlq");
        let enabled = queue(&server, auth)
            .enable_http_pull(settings)
            .await
            .expect("updated");
        let mut expected = HttpPullConsumer::default();
        expected.consumer_id = Some(CONSUMER.into());
        expected.queue_name = Some(NAME.into());
        expected.settings = HttpPullSettings::new()
            .batch_size(5)
            .max_retries(5)
            .visibility_timeout(Duration::from_secs(60))
            .dead_letter_queue("orders-dlq");
        assert_eq!(enabled, expected, "{auth:?}");
        assert_eq!(list.calls_async().await, 1, "{auth:?}");
        assert_eq!(update.calls_async().await, 1, "{auth:?}");
        assert_eq!(create.calls_async().await, 0, "no POST: {auth:?}");
        assert_eq!(others.calls_async().await, 0, "{auth:?}");
    }
}

/// A Worker (or a kind unknown here) consumes the queue: nothing is
/// replaced, nothing but the read is sent.
#[tokio::test]
async fn enable_http_pull_over_another_consumer_changes_nothing() {
    for (listed, consumer) in [
        (example_worker(), "the Worker \"my-consumer-worker\""),
        (json!({"type": "worker", "consumer_id": "w1"}), "a Worker"),
        (
            json!({"type": "r2_bucket", "consumer_id": "r1"}),
            "a consumer of type \"r2_bucket\"",
        ),
    ] {
        let server = MockServer::start_async().await;
        let list = consumers_mock(&server, json!([listed])).await;
        let writes = server
            .mock_async(|when, then| {
                when.is_true(|req: &HttpMockRequest| req.method_str() != "GET");
                then.status(500);
            })
            .await;
        let others = catch_all(&server).await;
        let error = queue(&server, Auth::Token)
            .enable_http_pull(example_settings())
            .await
            .expect_err("another consumer");
        match &error {
            Error::OtherConsumer {
                queue_id,
                consumer: named,
                ..
            } => {
                assert_eq!(queue_id, QUEUE);
                assert_eq!(named, consumer);
            }
            other => panic!("not OtherConsumer: {other:?}"),
        }
        assert!(!error.may_have_landed());
        assert!(error.to_string().contains(consumer), "{error}");
        assert_eq!(list.calls_async().await, 1, "{consumer}");
        assert_eq!(writes.calls_async().await, 0, "no POST or PUT: {consumer}");
        assert_eq!(others.calls_async().await, 0, "{consumer}");
    }
}

/// A 500 may hide a create that landed: it is not repeated; the consumers
/// are read back, and an HTTP pull consumer found is the create's success.
#[tokio::test]
async fn a_lost_enable_answer_is_read_back_not_repeated() {
    let server = MockServer::start_async().await;
    let reads = Arc::new(AtomicUsize::new(0));
    let list = server
        .mock_async(|when, then| {
            when.method(GET).path(consumers_path());
            then.respond_with(sequenced(
                1,
                (200, success(json!([]))),
                (200, success(json!([example_http_pull(CONSUMER)]))),
                Arc::clone(&reads),
            ));
        })
        .await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST)
                .path(consumers_path())
                .json_body(example_request());
            then.status(500)
                .json_body(failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"));
        })
        .await;
    let others = catch_all(&server).await;
    let enabled = queue(&server, Auth::Token)
        .enable_http_pull(example_settings())
        .await
        .expect("found after the 500");
    assert_eq!(enabled, example_http_pull_decoded(CONSUMER));
    assert_eq!(create.calls_async().await, 1, "exactly one POST");
    assert_eq!(list.calls_async().await, 2, "the read, and the read-back");
    assert_eq!(reads.load(Ordering::SeqCst), 2);
    assert_eq!(others.calls_async().await, 0);
}

#[tokio::test]
async fn a_lost_enable_answer_not_found_after_is_the_500() {
    let server = MockServer::start_async().await;
    let list = consumers_mock(&server, json!([])).await;
    let create = server
        .mock_async(|when, then| {
            when.method(POST).path(consumers_path());
            then.status(502).body("<html>bad gateway</html>");
        })
        .await;
    let others = catch_all(&server).await;
    let error = queue(&server, Auth::Token)
        .enable_http_pull(example_settings())
        .await
        .expect_err("not found after the 502");
    assert_eq!(error.status(), Some(502), "{error:?}");
    assert_eq!(error.operation(), Some(Operation::CreateConsumer));
    assert!(error.may_have_landed());
    assert_eq!(create.calls_async().await, 1, "exactly one POST");
    assert_eq!(list.calls_async().await, 2, "the read, and the read-back");
    assert_eq!(others.calls_async().await, 0);
}

#[tokio::test]
async fn enable_http_pull_checks_settings_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let queue = queue(&server, Auth::Token);
    let day = Duration::from_secs(86_400);
    for (settings, field) in [
        (HttpPullSettings::new().batch_size(0), "settings.batch_size"),
        (
            HttpPullSettings::new().batch_size(101),
            "settings.batch_size",
        ),
        (
            HttpPullSettings::new().max_retries(101),
            "settings.max_retries",
        ),
        (
            HttpPullSettings::new().retry_delay(day + Duration::from_millis(1)),
            "settings.retry_delay",
        ),
        (
            HttpPullSettings::new().visibility_timeout(Duration::ZERO),
            "settings.visibility_timeout",
        ),
        (
            HttpPullSettings::new()
                .visibility_timeout(Duration::from_secs(12 * 3600) + Duration::from_millis(1)),
            "settings.visibility_timeout",
        ),
        (
            HttpPullSettings::new().dead_letter_queue(""),
            "dead_letter_queue",
        ),
    ] {
        let error = queue
            .enable_http_pull(settings.clone())
            .await
            .expect_err("refused");
        assert_eq!(invalid_field(&error), Ok(field), "{settings:?}");
        assert_eq!(error.attempts(), 0);
    }
    assert_eq!(sent.calls_async().await, 0, "not even the read");
}

/// The limits themselves are accepted.
#[tokio::test]
async fn enable_http_pull_accepts_the_limits() {
    let server = MockServer::start_async().await;
    let _list = consumers_mock(&server, json!([])).await;
    let body = json!({
        "type": "http_pull",
        "settings": {"batch_size": 100, "max_retries": 100, "retry_delay": 86_400, "visibility_timeout_ms": 43_200_000u64}
    });
    let create = server
        .mock_async(|when, then| {
            when.method(POST).path(consumers_path()).json_body(body);
            then.status(200).json_body(success(
                json!({"type": "http_pull", "consumer_id": CONSUMER}),
            ));
        })
        .await;
    let settings = HttpPullSettings::new()
        .batch_size(100)
        .max_retries(100)
        .retry_delay(Duration::from_secs(86_400))
        .visibility_timeout(Duration::from_secs(12 * 3600));
    queue(&server, Auth::Token)
        .enable_http_pull(settings)
        .await
        .expect("at the limits");
    assert_eq!(create.calls_async().await, 1);
}

// ---------------------------------------------------------------------------
// Disabling
// ---------------------------------------------------------------------------

#[tokio::test]
async fn disable_http_pull_deletes_the_consumer() {
    for answer in [
        json!({"success": true, "errors": [], "messages": [], "result": null}),
        json!({"success": true, "errors": [], "messages": []}),
    ] {
        let server = MockServer::start_async().await;
        let list = consumers_mock(&server, json!([example_http_pull(CONSUMER)])).await;
        let delete = server
            .mock_async(|when, then| {
                Auth::Token.authenticated(when.method(DELETE).path(consumer_path(CONSUMER)));
                then.status(200).json_body(answer.clone());
            })
            .await;
        let others = catch_all(&server).await;
        let disabled = queue(&server, Auth::Token)
            .disable_http_pull()
            .await
            .expect("disabled");
        assert!(disabled, "{answer}");
        assert_eq!(list.calls_async().await, 1);
        assert_eq!(delete.calls_async().await, 1);
        assert_eq!(others.calls_async().await, 0);
    }
}

/// Not enabled (no consumer, or a Worker): `Ok(false)`, and no DELETE.
#[tokio::test]
async fn disable_http_pull_when_not_enabled_sends_no_delete() {
    for listed in [json!([]), json!([example_worker()])] {
        let server = MockServer::start_async().await;
        let list = consumers_mock(&server, listed.clone()).await;
        let others = catch_all(&server).await;
        let disabled = queue(&server, Auth::Token)
            .disable_http_pull()
            .await
            .expect("nothing to disable");
        assert!(!disabled, "{listed}");
        assert_eq!(list.calls_async().await, 1);
        assert_eq!(others.calls_async().await, 0, "no DELETE: {listed}");
    }
}

/// A lost DELETE answer is not repeated: the consumers are read back, and
/// no HTTP pull consumer is the deletion's success.
#[tokio::test]
async fn a_lost_disable_answer_is_read_back_not_repeated() {
    let server = MockServer::start_async().await;
    let reads = Arc::new(AtomicUsize::new(0));
    let list = server
        .mock_async(|when, then| {
            when.method(GET).path(consumers_path());
            then.respond_with(sequenced(
                1,
                (200, success(json!([example_http_pull(CONSUMER)]))),
                (200, success(json!([]))),
                Arc::clone(&reads),
            ));
        })
        .await;
    let delete = answering(
        &server,
        DELETE,
        consumer_path(CONSUMER),
        500,
        failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
    )
    .await;
    let others = catch_all(&server).await;
    let disabled = queue(&server, Auth::Token)
        .disable_http_pull()
        .await
        .expect("gone after the 500");
    assert!(disabled);
    assert_eq!(delete.calls_async().await, 1, "exactly one DELETE");
    assert_eq!(list.calls_async().await, 2);
    assert_eq!(others.calls_async().await, 0);
}
