//! The exact request of each operation beyond the original six (extend,
//! preview, delete previewed, metrics, purge queue, purge status), with both
//! auth schemes, and the decoded result, pinned with httpmock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cf_queues::Error;
use cf_queues::operation::Operation;
use cf_queues::request::{PreviewedChanges, PurgeConfirmation};
use cf_queues::response::{ExtendOutcome, PurgeStatus, Warning};
use httpmock::Method::POST;
use httpmock::{Mock, MockServer};
use serde_json::{Value, json};

use cf_queues_testkit::wire::{Auth, BOTH, QUEUE, path, success};

fn queue(server: &MockServer, auth: Auth) -> cf_queues::Queue {
    auth.builder(&server.base_url())
        .build()
        .and_then(|c| c.queue(QUEUE))
        .expect("valid test configuration")
}

/// An operation of these tests, with its arguments.
#[derive(Debug)]
enum Call {
    Extend(&'static [&'static str], Duration),
    Preview(u32),
    DeletePreviewed(PreviewedChanges),
    Metrics,
    PurgeStatus,
}

/// What `call` decoded: the fields the tests check, as JSON.
async fn call(queue: &cf_queues::Queue, call: &Call) -> Result<Value, Error> {
    let warnings = |warnings: &[Warning]| -> Vec<Value> {
        warnings
            .iter()
            .map(|w| json!([w.subject, w.message]))
            .collect()
    };
    Ok(match call {
        Call::Extend(leases, timeout) => {
            let outcome = queue.extend(leases.iter().copied(), *timeout).await?;
            json!({"extended": outcome.extended, "warnings": warnings(&outcome.warnings)})
        }
        Call::Preview(batch_size) => {
            let previewed = queue.preview(*batch_size).await?;
            let previewed = previewed.iter().map(|m| {
                let (text, json) = (m.body().text().ok(), m.body().json::<Value>().ok());
                json!([
                    m.id,
                    m.preview_id.as_str(),
                    m.attempts,
                    m.timestamp_ms,
                    text,
                    json
                ])
            });
            json!(previewed.collect::<Vec<_>>())
        }
        Call::DeletePreviewed(changes) => {
            let outcome = queue.delete_previewed(changes.clone()).await?;
            json!({"warnings": warnings(&outcome.warnings)})
        }
        Call::Metrics => {
            let m = queue.metrics().await?;
            json!([
                m.backlog_count,
                m.backlog_bytes,
                m.oldest_message_timestamp_ms
            ])
        }
        Call::PurgeStatus => {
            let PurgeStatus {
                completed,
                started_at,
                ..
            } = queue.purge_status().await?;
            json!([completed, started_at])
        }
    })
}

/// A mock of `method suffix` with `auth`'s headers and exactly the JSON
/// `request` (or no body at all), answering `result` in Cloudflare's
/// success envelope.
async fn exact<'a>(
    server: &'a MockServer,
    auth: Auth,
    (method, suffix): (&str, &str),
    request: Option<Value>,
    result: Value,
) -> Mock<'a> {
    server
        .mock_async(|when, then| {
            let when = auth.authenticated(when.method(method).path(path(suffix)));
            match request {
                Some(body) => when
                    .header("content-type", "application/json")
                    .json_body(body),
                None => when.header_missing("content-type"),
            };
            then.status(200).json_body(success(result));
        })
        .await
}

/// Each operation's exact request, with both schemes, and what its answer
/// decodes to: `extendCount` is optional in the published description (an
/// answer without it leaves the count unknown, and only its warnings name
/// the leases it did not extend); a preview returns its own ids and decodes
/// bodies; metrics and the purge status are GETs without a body, and the
/// status reads strings and booleans; counts sent as floats decode to
/// exact integers.
#[tokio::test]
async fn extend_sends_leases_and_whole_milliseconds() {
    let two_leases = json!([{"lease_id": "lease-1"}, {"lease_id": "lease-2"}]);
    let delivered_again = json!({"lease-2": "message was delivered again"});
    let warned = json!([["lease-2", "message was delivered again"]]);
    let previewed = json!({"messages": [
        {"id": "m1", "attempts": 2, "body": "hello", "lease_id": "preview-1",
         "metadata": {"CF-sourceMessageSource": "api", "CF-Content-Type": "text"}, "timestamp_ms": 1_710_950_954_154u64},
        {"id": "m2", "attempts": 0, "body": "eyJhIjoxfQ==", "lease_id": "preview-2",
         "metadata": {"CF-Content-Type": "json"}, "timestamp_ms": 7, "future_field": true}
    ]});
    let previewed_decoded = json!([
        ["m1", "preview-1", 2, 1_710_950_954_154u64, "hello", null],
        ["m2", "preview-2", 0, 7, null, {"a": 1}]
    ]);
    let float_preview = json!({"messages": [
        {"id": "m1", "attempts": 2.0, "body": "hi", "lease_id": "preview-1",
         "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 1_710_950_954_154.0}
    ]});
    let changes = PreviewedChanges::new()
        .delete("preview-1")
        .retry_after("preview-2", Duration::from_millis(2_500))
        .retry("preview-3");
    let changes_request = json!({
        "acks": [{"lease_id": "preview-1"}],
        "retries": [{"lease_id": "preview-2", "delay_seconds": 3}, {"lease_id": "preview-3"}]
    });
    let extend = ("POST", "/messages/extend");
    let preview = ("POST", "/messages/preview");
    let (metrics, purge) = (("GET", "/metrics"), ("GET", "/purge"));
    let status =
        |completed: Value| json!({"completed": completed, "started_at": "2026-11-29T10:00:00Z"});
    // (the call, its method and path, the exact request, the answer's
    // result, what it decodes to)
    let cases = [
        (
            Call::Extend(&["lease-1", "lease-2"], Duration::from_micros(60_000_001)),
            extend,
            Some(json!({"extend": two_leases, "visibility_timeout_ms": 60_001})),
            json!({"extendCount": 1, "warnings": delivered_again}),
            json!({"extended": 1, "warnings": warned}),
        ),
        (
            Call::Extend(&["lease-1", "lease-2"], Duration::from_secs(30)),
            extend,
            Some(json!({"extend": two_leases, "visibility_timeout_ms": 30_000})),
            json!({"warnings": delivered_again}),
            json!({"extended": null, "warnings": warned}),
        ),
        (
            Call::Extend(&["lease-1"], Duration::from_secs(30)),
            extend,
            Some(json!({"extend": [{"lease_id": "lease-1"}], "visibility_timeout_ms": 30_000})),
            json!({"extendCount": 1.0, "warnings": {}}),
            json!({"extended": 1, "warnings": []}),
        ),
        (
            Call::Preview(3),
            preview,
            Some(json!({"batch_size": 3})),
            previewed,
            previewed_decoded,
        ),
        (
            Call::Preview(1),
            preview,
            Some(json!({"batch_size": 1})),
            float_preview,
            json!([["m1", "preview-1", 2, 1_710_950_954_154u64, "hi", null]]),
        ),
        (
            Call::DeletePreviewed(changes),
            ("POST", "/messages/preview/ack"),
            Some(changes_request),
            json!({"warnings": ["preview-9 unknown"]}),
            json!({"warnings": [[null, "preview-9 unknown"]]}),
        ),
        (
            Call::Metrics,
            metrics,
            None,
            json!({"backlog_count": 5, "backlog_bytes": 1024, "oldest_message_timestamp_ms": 1_710_950_954_154u64}),
            json!([5, 1024, 1_710_950_954_154u64]),
        ),
        (
            Call::Metrics,
            metrics,
            None,
            json!({"backlog_count": 5.0, "backlog_bytes": 1024.0, "oldest_message_timestamp_ms": 1_710_950_954_154.0}),
            json!([5, 1024, 1_710_950_954_154u64]),
        ),
        (
            Call::PurgeStatus,
            purge,
            None,
            status(json!("true")),
            json!([true, "2026-11-29T10:00:00Z"]),
        ),
        (
            Call::PurgeStatus,
            purge,
            None,
            status(json!(false)),
            json!([false, "2026-11-29T10:00:00Z"]),
        ),
        (
            Call::PurgeStatus,
            purge,
            None,
            status(json!("pending")),
            json!([null, "2026-11-29T10:00:00Z"]),
        ),
    ];
    for (operation, route, request, result, expected) in cases {
        for auth in BOTH {
            let server = MockServer::start_async().await;
            let mock = exact(&server, auth, route, request.clone(), result.clone()).await;
            let decoded = call(&queue(&server, auth), &operation).await;
            mock.assert_async().await;
            assert_eq!(
                decoded.expect("answered"),
                expected,
                "{operation:?} {auth:?}"
            );
        }
    }
}

/// Answers anything with a 500, so that a request that should never have
/// been sent shows up in its count (and fails the call).
async fn catch_all(server: &MockServer) -> Mock<'_> {
    server
        .mock_async(|_, then| {
            then.status(500);
        })
        .await
}

/// Each operation checks its arguments before sending: no leases, nothing
/// to extend, is answered without a request, but the timeout is checked
/// even then; a valid deletion does not carry an invalid retry with it.
#[tokio::test]
async fn extend_checks_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let queue = queue(&server, Auth::Token);
    let no_leases: [&str; 0] = [];
    let nothing = queue.extend(no_leases, Duration::from_secs(1)).await;
    assert_eq!(nothing.expect("nothing to send"), ExtendOutcome::default());
    let over_a_day = Duration::from_secs(86_400) + Duration::from_millis(1);
    let changes = PreviewedChanges::new;
    let timeout = "visibility_timeout";
    for (operation, field) in [
        (Call::Extend(&[], Duration::ZERO), timeout),
        (Call::Extend(&["l"], Duration::ZERO), timeout),
        (Call::Extend(&["l"], Duration::from_secs(43_201)), timeout),
        (
            Call::Extend(&["l", ""], Duration::from_secs(1)),
            "extend[1].lease_id",
        ),
        (Call::Preview(0), "batch_size"),
        (Call::Preview(101), "batch_size"),
        (
            Call::DeletePreviewed(changes().delete("")),
            "acks[0].lease_id",
        ),
        (
            Call::DeletePreviewed(changes().delete("preview-1").delete("")),
            "acks[1].lease_id",
        ),
        (
            Call::DeletePreviewed(changes().retry("")),
            "retries[0].lease_id",
        ),
        (
            Call::DeletePreviewed(changes().retry_after("", Duration::from_secs(1))),
            "retries[0].lease_id",
        ),
        (
            Call::DeletePreviewed(
                changes()
                    .retry("preview-1")
                    .retry_after("preview-2", over_a_day),
            ),
            "retries[1].delay",
        ),
        (
            Call::DeletePreviewed(
                changes()
                    .delete("preview-1")
                    .retry_after("preview-2", over_a_day),
            ),
            "retries[0].delay",
        ),
    ] {
        let error = call(&queue, &operation).await.expect_err("refused");
        let named = matches!(&error, Error::InvalidInput { field: named, .. } if named == field);
        assert!(named, "{operation:?}: {error:?}");
        assert_eq!(error.attempts(), 0);
    }
    assert_eq!(sent.calls_async().await, 0);
}

#[tokio::test]
async fn purge_all_sends_the_confirmation_and_reads_the_queue() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let mock = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(POST).path(path("/purge")))
                    .header("content-type", "application/json")
                    .json_body(json!({"delete_messages_permanently": true}));
                then.status(200).json_body(success(json!({
                    "queue_id": QUEUE, "queue_name": "orders", "created_on": "2026-01-01T00:00:00Z",
                    "modified_on": "2026-11-29T00:00:00Z", "consumers": [], "consumers_total_count": 1,
                    "producers": [{"type": "worker", "script": "shop"}], "producers_total_count": 1,
                    "settings": {"delivery_delay": 0}
                })));
            })
            .await;
        let queue = queue(&server, auth);
        let another = PurgeConfirmation::delete_messages_permanently("another");
        let wrong = queue.purge_all(another).await;
        let refused =
            matches!(&wrong, Err(Error::InvalidInput { field, .. }) if field == "confirmation");
        assert!(refused, "a confirmation for another queue: {wrong:?}");
        let info = queue
            .purge_all(PurgeConfirmation::delete_messages_permanently(QUEUE))
            .await
            .expect("purge");
        mock.assert_async().await;
        assert_eq!(info.queue_name.as_deref(), Some("orders"));
        assert_eq!(
            (info.consumers_total_count, info.producers_total_count),
            (1, 1)
        );
    }
}

#[tokio::test]
async fn purge_all_is_not_retried_after_an_ambiguous_failure() {
    let server = MockServer::start_async().await;
    let mock = server
        .mock_async(|when, then| {
            when.method(POST).path(path("/purge"));
            then.status(503).json_body(json!({"success": false, "errors": [{"code": 15000, "message": "UnknownInternalError"}]}));
        })
        .await;
    let quick = cf_queues::retry::RetryPolicy::default()
        .backoff(Duration::from_millis(1), Duration::from_millis(1));
    let queue = queue(&server, Auth::Token).with_retry(quick.clone());
    let at_least_once = cf_queues::retry::PushRetries::AtLeastOnce;
    // At-least-once pushes say nothing about purges; asked for, the same
    // failure is retried. (the handle, its attempts, the calls so far)
    let handles = [
        (queue.clone(), 1, 1),
        (
            queue
                .clone()
                .with_retry(quick.clone().pushes(at_least_once)),
            1,
            2,
        ),
        (queue.with_retry(quick.purge_all(at_least_once)), 3, 5),
    ];
    for (handle, attempts, calls) in handles {
        let confirmation = PurgeConfirmation::delete_messages_permanently(QUEUE);
        let error = handle.purge_all(confirmation).await.expect_err("503");
        assert_eq!((error.status(), error.attempts()), (Some(503), attempts));
        assert_eq!(error.operation(), Some(Operation::PurgeQueue));
        assert_eq!(mock.calls_async().await, calls);
    }
}

/// A handle whose retries wait a millisecond, so that retry tests are quick.
fn quick_retries(server: &MockServer) -> cf_queues::Queue {
    queue(server, Auth::Token).with_retry(
        cf_queues::retry::RetryPolicy::default()
            .backoff(Duration::from_millis(1), Duration::from_millis(1)),
    )
}

/// Mocks `method` on `suffix` to answer 503 once, then `result`; returns
/// the failing mock and the answering one.
///
/// httpmock tries mocks in the order they were created and counts a call
/// only for the one that answers, so the 503 mock, created first, sees
/// every request first, and its custom matcher lets exactly one through.
/// The answering mock pins the request body (when given), so a retry that
/// sent anything else would find no mock.
async fn unavailable_once<'a>(
    server: &'a MockServer,
    method: &'static str,
    suffix: &str,
    body: Option<serde_json::Value>,
    result: serde_json::Value,
) -> (Mock<'a>, Mock<'a>) {
    let failed = Arc::new(AtomicBool::new(false));
    let unavailable = server
        .mock_async(|when, then| {
            when.method(method)
                .path(path(suffix))
                .is_true(move |_| !failed.swap(true, Ordering::SeqCst));
            then.status(503).json_body(json!({
                "success": false, "errors": [{"code": 15000, "message": "UnknownInternalError"}]
            }));
        })
        .await;
    let answered = server
        .mock_async(|when, then| {
            let when = when.method(method).path(path(suffix));
            if let Some(body) = body {
                when.json_body(body);
            }
            then.status(200).json_body(success(result));
        })
        .await;
    (unavailable, answered)
}

/// Both mocks were called once: one 503, then the retry that succeeded.
async fn retried_once(unavailable: &Mock<'_>, answered: &Mock<'_>) {
    assert_eq!(
        (
            unavailable.calls_async().await,
            answered.calls_async().await
        ),
        (1, 1)
    );
}

/// Every operation but a purge is retried after a 503, and the retry's
/// answer is the call's. A deletion's first attempt may have landed: the
/// retry finds the id gone and says so in a warning, which the caller gets.
#[tokio::test]
async fn extend_is_retried_after_a_5xx() {
    let preview = json!({"messages": [{"id": "m1", "attempts": 0, "body": "hi", "lease_id": "preview-1",
                         "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 7}]});
    let unknown = json!({"preview-1": "preview id unknown or expired"});
    let delete = PreviewedChanges::new().delete("preview-1");
    // (the call, its method and path, the exact request, the answer's
    // result, what it decodes to)
    let cases = [
        (
            Call::Extend(&["lease-1"], Duration::from_secs(30)),
            ("POST", "/messages/extend"),
            Some(json!({"extend": [{"lease_id": "lease-1"}], "visibility_timeout_ms": 30_000})),
            json!({"extendCount": 1, "warnings": {}}),
            json!({"extended": 1, "warnings": []}),
        ),
        (
            Call::Preview(1),
            ("POST", "/messages/preview"),
            Some(json!({"batch_size": 1})),
            preview,
            json!([["m1", "preview-1", 0, 7, "hi", null]]),
        ),
        (
            Call::DeletePreviewed(delete),
            ("POST", "/messages/preview/ack"),
            Some(json!({"acks": [{"lease_id": "preview-1"}]})),
            json!({"warnings": unknown}),
            json!({"warnings": [["preview-1", "preview id unknown or expired"]]}),
        ),
        (
            Call::Metrics,
            ("GET", "/metrics"),
            None,
            json!({"backlog_count": 3, "backlog_bytes": 30, "oldest_message_timestamp_ms": 9}),
            json!([3, 30, 9]),
        ),
        (
            Call::PurgeStatus,
            ("GET", "/purge"),
            None,
            json!({"completed": "true", "started_at": "2026-11-29T10:00:00Z"}),
            json!([true, "2026-11-29T10:00:00Z"]),
        ),
    ];
    for (operation, (method, suffix), request, result, expected) in cases {
        let server = MockServer::start_async().await;
        let (unavailable, answered) =
            unavailable_once(&server, method, suffix, request, result).await;
        let decoded = call(&quick_retries(&server), &operation).await;
        retried_once(&unavailable, &answered).await;
        assert_eq!(
            decoded.expect("the retry succeeds"),
            expected,
            "{operation:?}"
        );
    }
}
