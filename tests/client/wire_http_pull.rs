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

/// An HTTP pull consumer as decoded: this id, queue name and settings.
fn http_pull_decoded(
    id: &str,
    queue_name: Option<&str>,
    settings: HttpPullSettings,
) -> HttpPullConsumer {
    let mut consumer = HttpPullConsumer::default();
    consumer.consumer_id = Some(id.into());
    consumer.queue_name = queue_name.map(Into::into);
    consumer.settings = settings;
    consumer
}

/// A mock of `GET .../consumers` answering `first` to the first read and
/// `after` to the read-back after a lost write.
pub(super) async fn consumers_read_back(
    server: &MockServer,
    auth: Auth,
    first: Value,
    after: Value,
) -> Mock<'_> {
    let reads = Arc::new(AtomicUsize::new(0));
    server
        .mock_async(|when, then| {
            auth.authenticated(when.method(GET).path(consumers_path()));
            then.respond_with(sequenced(
                1,
                (200, success(first)),
                (200, success(after)),
                reads,
            ));
        })
        .await
}

/// No consumer yet: the consumers are read, then the `http_pull` consumer
/// is created with exactly the settings given, durations rounded up, the
/// limits themselves accepted; without settings only the type is sent
/// (Cloudflare's defaults apply). Create answers may leave out
/// `dead_letter_queue` (or the settings, or the type): the consumer
/// returned has the settings asked for. An answer that says
/// `dead_letter_queue: ""` says, by the published description, that no
/// dead-letter queue is configured, and is believed. A 500 may hide a
/// create that landed: it is not repeated; the consumers are read back,
/// and an HTTP pull consumer found is the create's success, none the
/// create's error.
#[tokio::test]
async fn enable_http_pull_creates_the_consumer() {
    let rounded = HttpPullSettings::new()
        .batch_size(50)
        .max_retries(3)
        .retry_delay(Duration::from_millis(10_001))
        .visibility_timeout(Duration::from_micros(6_000_001))
        .dead_letter_queue("example-dlq");
    let mut rounded_request = example_request();
    rounded_request["settings"]["retry_delay"] = json!(11);
    rounded_request["settings"]["visibility_timeout_ms"] = json!(6001);
    let limits = HttpPullSettings::new()
        .batch_size(100)
        .max_retries(100)
        .retry_delay(Duration::from_secs(86_400))
        .visibility_timeout(Duration::from_secs(12 * 3600));
    let limits_request = json!({
        "type": "http_pull",
        "settings": {"batch_size": 100, "max_retries": 100, "retry_delay": 86_400, "visibility_timeout_ms": 43_200_000u64}
    });
    let defaults = json!({
        "type": "http_pull", "consumer_id": CONSUMER, "queue_name": NAME,
        "settings": {"batch_size": 5, "max_retries": 3, "visibility_timeout_ms": 30000}
    });
    let defaults_settings = HttpPullSettings::new()
        .batch_size(5)
        .max_retries(3)
        .visibility_timeout(Duration::from_secs(30));
    let defaults_decoded = http_pull_decoded(CONSUMER, Some(NAME), defaults_settings);
    // Only the id in the answer: everything else is what was asked.
    let asked = |settings: &HttpPullSettings| http_pull_decoded(CONSUMER, None, settings.clone());
    let mut no_dlq = example_http_pull(CONSUMER);
    no_dlq["dead_letter_queue"] = json!("");
    let mut no_dlq_decoded = example_http_pull_decoded(CONSUMER);
    no_dlq_decoded.settings.dead_letter_queue = None;
    let mut dlq_left_out = example_http_pull(CONSUMER);
    dlq_left_out
        .as_object_mut()
        .map(|o| o.remove("dead_letter_queue"));
    let mut floats = dlq_left_out.clone();
    floats["settings"] = json!({"batch_size": 50.0, "max_retries": 3.0, "retry_delay": 10.0, "visibility_timeout_ms": 6000.0});
    let example = || Ok(example_http_pull_decoded(CONSUMER));
    let ok = |answer| (200, success(answer));
    let lost = (
        500,
        failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
    );
    // A JSON string stands for a body that is not JSON.
    let bad_gateway = (502, json!("<html>bad gateway</html>"));
    let found_after = json!([example_http_pull(CONSUMER)]);
    // (scheme, settings, the exact request, the create's answer, the
    // consumers read back after it, the consumer or the error's status)
    let cases = [
        (
            Auth::Token,
            rounded.clone(),
            rounded_request.clone(),
            ok(example_http_pull(CONSUMER)),
            None,
            example(),
        ),
        (
            Auth::GlobalKey,
            rounded,
            rounded_request,
            ok(example_http_pull(CONSUMER)),
            None,
            example(),
        ),
        (
            Auth::Token,
            HttpPullSettings::new(),
            json!({"type": "http_pull"}),
            ok(defaults),
            None,
            Ok(defaults_decoded),
        ),
        (
            Auth::Token,
            example_settings(),
            example_request(),
            ok(dlq_left_out),
            None,
            example(),
        ),
        (
            Auth::Token,
            example_settings(),
            example_request(),
            ok(floats),
            None,
            example(),
        ),
        (
            Auth::Token,
            example_settings(),
            example_request(),
            ok(json!({"consumer_id": CONSUMER})),
            None,
            Ok(asked(&example_settings())),
        ),
        (
            Auth::Token,
            example_settings(),
            example_request(),
            ok(no_dlq),
            None,
            Ok(no_dlq_decoded),
        ),
        (
            Auth::Token,
            limits.clone(),
            limits_request,
            ok(json!({"type": "http_pull", "consumer_id": CONSUMER})),
            None,
            Ok(asked(&limits)),
        ),
        (
            Auth::Token,
            example_settings(),
            example_request(),
            lost,
            Some(found_after),
            example(),
        ),
        (
            Auth::Token,
            example_settings(),
            example_request(),
            bad_gateway,
            Some(json!([])),
            Err(502),
        ),
    ];
    for (auth, settings, request, (status, answer), read_back, expected) in cases {
        let context = (auth, &request, &answer);
        let server = MockServer::start_async().await;
        let reads = 1 + usize::from(read_back.is_some());
        let list =
            consumers_read_back(&server, auth, json!([]), read_back.unwrap_or_default()).await;
        let create = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(POST).path(consumers_path()))
                    .header("content-type", "application/json")
                    .json_body(request.clone());
                match answer.as_str() {
                    Some(text) => then.status(status).body(text),
                    None => then.status(status).json_body(answer.clone()),
                };
            })
            .await;
        let others = catch_all(&server).await;
        match (
            queue(&server, auth).enable_http_pull(settings).await,
            expected,
        ) {
            (Ok(enabled), Ok(expected)) => assert_eq!(enabled, expected, "{context:?}"),
            (Err(error), Err(status)) => {
                assert_eq!(error.status(), Some(status), "{error:?}");
                assert_eq!(error.operation(), Some(Operation::CreateConsumer));
                assert!(error.may_have_landed());
            }
            (got, _) => panic!("{context:?}: {got:?}"),
        }
        assert_calls(context, &[(&list, reads), (&create, 1), (&others, 0)]).await;
    }
}

/// HTTP pull enabled already: the consumer is updated in place (`PUT` with
/// its id), never created a second time.
#[tokio::test]
async fn enable_http_pull_updates_an_existing_consumer() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let listed = json!([example_http_pull(CONSUMER)]);
        let list = consumers_read_back(&server, auth, listed, Value::Null).await;
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
        let settings = HttpPullSettings::new()
            .batch_size(5)
            .max_retries(5)
            .visibility_timeout(Duration::from_secs(60))
            .dead_letter_queue("orders-dlq");
        let expected = http_pull_decoded(CONSUMER, Some(NAME), settings);
        assert_eq!(enabled, expected, "{auth:?}");
        assert_calls(
            auth,
            &[(&list, 1), (&update, 1), (&create, 0), (&others, 0)],
        )
        .await;
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
        assert_calls(consumer, &[(&list, 1), (&writes, 0), (&others, 0)]).await;
    }
}

#[tokio::test]
async fn enable_http_pull_checks_settings_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let queue = queue(&server, Auth::Token);
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
            HttpPullSettings::new().retry_delay(DAY + Duration::from_millis(1)),
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
        let enabled = queue.enable_http_pull(settings.clone()).await;
        assert_refused(enabled, field, settings);
    }
    assert_eq!(sent.calls_async().await, 0, "not even the read");
}

// ---------------------------------------------------------------------------
// Disabling
// ---------------------------------------------------------------------------

/// The HTTP pull consumer is deleted, whatever the success envelope holds.
/// Not enabled (no consumer, or a Worker): `Ok(false)`, and no DELETE. A
/// lost DELETE answer is not repeated: the consumers are read back, and no
/// HTTP pull consumer is the deletion's success.
#[tokio::test]
async fn disable_http_pull_deletes_the_consumer() {
    let enabled = || json!([example_http_pull(CONSUMER)]);
    let envelope = json!({"success": true, "errors": [], "messages": []});
    let mut null = envelope.clone();
    null["result"] = json!(null);
    let lost = (
        500,
        failure(codes::UNKNOWN_INTERNAL_ERROR, "internal error"),
    );
    // (the consumers, those read back, the DELETE's answer, disabled)
    let cases = [
        (enabled(), None, Some((200, null)), true),
        (enabled(), None, Some((200, envelope)), true),
        (json!([]), None, None, false),
        (json!([example_worker()]), None, None, false),
        (enabled(), Some(json!([])), Some(lost), true),
    ];
    for (listed, read_back, deleted, expected) in cases {
        let context = (&listed, &deleted);
        let server = MockServer::start_async().await;
        let reads = 1 + usize::from(read_back.is_some());
        let list = consumers_read_back(
            &server,
            Auth::Token,
            listed.clone(),
            read_back.unwrap_or_default(),
        )
        .await;
        let deletes = usize::from(deleted.is_some());
        let (status, answer) = deleted.clone().unwrap_or((500, Value::Null));
        let delete = server
            .mock_async(|when, then| {
                Auth::Token.authenticated(when.method(DELETE).path(consumer_path(CONSUMER)));
                then.status(status).json_body(answer);
            })
            .await;
        let others = catch_all(&server).await;
        let disabled = queue(&server, Auth::Token).disable_http_pull().await;
        assert_eq!(disabled.expect("disabled"), expected, "{context:?}");
        assert_calls(context, &[(&list, reads), (&delete, deletes), (&others, 0)]).await;
    }
}
