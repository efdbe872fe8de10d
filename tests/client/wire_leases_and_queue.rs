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
use httpmock::Method::{GET, POST};
use httpmock::{Mock, MockServer};
use serde_json::json;

use cf_queues_testkit::wire::{Auth, BOTH, QUEUE, path, success};

fn queue(server: &MockServer, auth: Auth) -> cf_queues::Queue {
    auth.builder(&server.base_url())
        .build()
        .and_then(|c| c.queue(QUEUE))
        .expect("valid test configuration")
}

#[tokio::test]
async fn extend_sends_leases_and_whole_milliseconds() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let mock = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(POST).path(path("/messages/extend")))
                    .header("content-type", "application/json")
                    .json_body(json!({
                        "extend": [{"lease_id": "lease-1"}, {"lease_id": "lease-2"}],
                        "visibility_timeout_ms": 60_001
                    }));
                then.status(200).json_body(success(json!({
                    "extendCount": 1,
                    "warnings": {"lease-2": "message was delivered again"}
                })));
            })
            .await;
        let outcome = queue(&server, auth)
            .extend(["lease-1", "lease-2"], Duration::from_micros(60_000_001))
            .await
            .expect("extend succeeds");
        mock.assert_async().await;
        assert_eq!(outcome.extended, Some(1), "{auth:?}");
        assert_eq!(
            outcome.warnings,
            vec![Warning {
                subject: Some("lease-2".into()),
                message: "message was delivered again".into()
            }]
        );
    }
}

/// `extendCount` is optional in the published description: an answer
/// without it leaves the count unknown, and only its warnings name the
/// leases it did not extend.
#[tokio::test]
async fn extend_answers_without_a_count_read_as_unknown() {
    let server = MockServer::start_async().await;
    let mock = server
        .mock_async(|when, then| {
            when.method(POST)
                .path(path("/messages/extend"))
                .json_body(json!({
                    "extend": [{"lease_id": "lease-1"}, {"lease_id": "lease-2"}],
                    "visibility_timeout_ms": 30_000
                }));
            then.status(200).json_body(success(json!({
                "warnings": {"lease-2": "message was delivered again"}
            })));
        })
        .await;
    let outcome = queue(&server, Auth::Token)
        .extend(["lease-1", "lease-2"], Duration::from_secs(30))
        .await
        .expect("extend succeeds");
    mock.assert_async().await;
    assert_eq!(outcome.extended, None);
    assert_eq!(
        outcome.warnings,
        vec![Warning {
            subject: Some("lease-2".into()),
            message: "message was delivered again".into()
        }]
    );
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

/// The field an [`Error::InvalidInput`] names, or the whole error when it is another.
fn invalid_field(error: &Error) -> Result<&str, String> {
    match error {
        Error::InvalidInput { field, .. } => Ok(field),
        other => Err(format!("{other:?}")),
    }
}

#[tokio::test]
async fn extend_checks_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let queue = queue(&server, Auth::Token);
    let no_leases: [&str; 0] = [];
    // No leases, nothing to extend: answered without a request.
    assert_eq!(
        queue
            .extend(no_leases, Duration::from_secs(1))
            .await
            .expect("nothing to send"),
        ExtendOutcome::default()
    );
    for (leases, timeout, field) in [
        // The timeout is checked even when there is nothing to extend.
        (vec![], Duration::ZERO, "visibility_timeout"),
        (vec!["l"], Duration::ZERO, "visibility_timeout"),
        (vec!["l"], Duration::from_secs(43_201), "visibility_timeout"),
        (vec!["l", ""], Duration::from_secs(1), "extend[1].lease_id"),
    ] {
        let error = queue.extend(leases, timeout).await.expect_err("refused");
        assert_eq!(invalid_field(&error), Ok(field));
        assert_eq!(error.attempts(), 0);
    }
    assert_eq!(sent.calls_async().await, 0);
}

#[tokio::test]
async fn preview_checks_the_batch_size_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let queue = queue(&server, Auth::Token);
    for batch_size in [0, 101] {
        let error = queue.preview(batch_size).await.expect_err("refused");
        assert_eq!(invalid_field(&error), Ok("batch_size"), "{batch_size}");
        assert_eq!(error.attempts(), 0);
    }
    assert_eq!(sent.calls_async().await, 0);
}

#[tokio::test]
async fn delete_previewed_checks_before_sending() {
    let server = MockServer::start_async().await;
    let sent = catch_all(&server).await;
    let queue = queue(&server, Auth::Token);
    let over_a_day = Duration::from_secs(86_400) + Duration::from_millis(1);
    for (changes, field) in [
        (PreviewedChanges::new().delete(""), "acks[0].lease_id"),
        (
            PreviewedChanges::new().delete("preview-1").delete(""),
            "acks[1].lease_id",
        ),
        (PreviewedChanges::new().retry(""), "retries[0].lease_id"),
        (
            PreviewedChanges::new().retry_after("", Duration::from_secs(1)),
            "retries[0].lease_id",
        ),
        (
            PreviewedChanges::new()
                .retry("preview-1")
                .retry_after("preview-2", over_a_day),
            "retries[1].delay",
        ),
        // A valid deletion does not carry an invalid retry with it.
        (
            PreviewedChanges::new()
                .delete("preview-1")
                .retry_after("preview-2", over_a_day),
            "retries[0].delay",
        ),
    ] {
        let error = queue.delete_previewed(changes).await.expect_err("refused");
        assert_eq!(invalid_field(&error), Ok(field));
        assert_eq!(error.attempts(), 0);
    }
    assert_eq!(sent.calls_async().await, 0);
}

#[tokio::test]
async fn preview_returns_its_own_ids_and_decodes_bodies() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let mock = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(POST).path(path("/messages/preview")))
                    .header("content-type", "application/json")
                    .json_body(json!({"batch_size": 3}));
                then.status(200).json_body(success(json!({"messages": [
                    {"id": "m1", "attempts": 2, "body": "hello", "lease_id": "preview-1",
                     "metadata": {"CF-sourceMessageSource": "api", "CF-Content-Type": "text"}, "timestamp_ms": 1_710_950_954_154u64},
                    {"id": "m2", "attempts": 0, "body": "eyJhIjoxfQ==", "lease_id": "preview-2",
                     "metadata": {"CF-Content-Type": "json"}, "timestamp_ms": 7, "future_field": true}
                ]})));
            })
            .await;
        let previewed = queue(&server, auth).preview(3).await.expect("preview");
        mock.assert_async().await;
        assert_eq!(previewed.len(), 2);
        assert_eq!(previewed[0].preview_id.as_str(), "preview-1");
        assert_eq!(
            (previewed[0].attempts, previewed[0].timestamp_ms),
            (2, 1_710_950_954_154)
        );
        assert_eq!(previewed[0].body().text().ok(), Some("hello"));
        assert_eq!(
            previewed[1].body().json::<serde_json::Value>().ok(),
            Some(json!({"a": 1}))
        );
    }
}

#[tokio::test]
async fn delete_previewed_sends_acks_and_retries() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let mock = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(POST).path(path("/messages/preview/ack")))
                    .header("content-type", "application/json")
                    .json_body(json!({
                        "acks": [{"lease_id": "preview-1"}],
                        "retries": [{"lease_id": "preview-2", "delay_seconds": 3}, {"lease_id": "preview-3"}]
                    }));
                then.status(200)
                    .json_body(success(json!({"warnings": ["preview-9 unknown"]})));
            })
            .await;
        let changes = PreviewedChanges::new()
            .delete("preview-1")
            .retry_after("preview-2", Duration::from_millis(2_500))
            .retry("preview-3");
        let outcome = queue(&server, auth)
            .delete_previewed(changes)
            .await
            .expect("delete previewed");
        mock.assert_async().await;
        assert_eq!(
            outcome.warnings,
            vec![Warning {
                subject: None,
                message: "preview-9 unknown".into()
            }]
        );
    }
}

#[tokio::test]
async fn metrics_is_a_get_without_a_body() {
    for auth in BOTH {
        let server = MockServer::start_async().await;
        let mock = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(GET).path(path("/metrics")))
                    .header_missing("content-type");
                then.status(200).json_body(success(json!({
                    "backlog_count": 5, "backlog_bytes": 1024, "oldest_message_timestamp_ms": 1_710_950_954_154u64
                })));
            })
            .await;
        let metrics = queue(&server, auth).metrics().await.expect("metrics");
        mock.assert_async().await;
        assert_eq!(
            (
                metrics.backlog_count,
                metrics.backlog_bytes,
                metrics.oldest_message_timestamp_ms
            ),
            (5, 1024, 1_710_950_954_154)
        );
    }
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
        let wrong = queue
            .purge_all(PurgeConfirmation::delete_messages_permanently("another"))
            .await
            .expect_err("a confirmation for another queue");
        assert!(
            matches!(&wrong, Error::InvalidInput { field, .. } if field == "confirmation"),
            "{wrong:?}"
        );
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
    let queue = queue(&server, Auth::Token).with_retry(
        cf_queues::retry::RetryPolicy::default()
            .backoff(Duration::from_millis(1), Duration::from_millis(1)),
    );
    let error = queue
        .purge_all(PurgeConfirmation::delete_messages_permanently(QUEUE))
        .await
        .expect_err("503");
    assert_eq!((error.status(), error.attempts()), (Some(503), 1));
    assert_eq!(mock.calls_async().await, 1);
    assert_eq!(error.operation(), Some(Operation::PurgeQueue));

    // At-least-once pushes say nothing about purges.
    let quick = cf_queues::retry::RetryPolicy::default()
        .backoff(Duration::from_millis(1), Duration::from_millis(1));
    let pushes_eager = queue.clone().with_retry(
        quick
            .clone()
            .pushes(cf_queues::retry::PushRetries::AtLeastOnce),
    );
    let error = pushes_eager
        .purge_all(PurgeConfirmation::delete_messages_permanently(QUEUE))
        .await
        .expect_err("503");
    assert_eq!(error.attempts(), 1);
    assert_eq!(mock.calls_async().await, 2);

    // Asked for, the same failure is retried.
    let eager = queue.with_retry(quick.purge_all(cf_queues::retry::PushRetries::AtLeastOnce));
    let error = eager
        .purge_all(PurgeConfirmation::delete_messages_permanently(QUEUE))
        .await
        .expect_err("503");
    assert_eq!(error.attempts(), 3);
    assert_eq!(mock.calls_async().await, 5);
}

#[tokio::test]
async fn purge_status_reads_strings_and_booleans() {
    for (auth, completed, expected) in [
        (Auth::Token, json!("true"), Some(true)),
        (Auth::GlobalKey, json!(false), Some(false)),
        (Auth::Token, json!("pending"), None),
    ] {
        let server = MockServer::start_async().await;
        let mock = server
            .mock_async(|when, then| {
                auth.authenticated(when.method(GET).path(path("/purge")))
                    .header_missing("content-type");
                then.status(200).json_body(success(
                    json!({"completed": completed, "started_at": "2026-11-29T10:00:00Z"}),
                ));
            })
            .await;
        let status = queue(&server, auth).purge_status().await.expect("status");
        mock.assert_async().await;
        let PurgeStatus {
            completed,
            started_at,
            ..
        } = status;
        assert_eq!(
            (completed, started_at.as_deref()),
            (expected, Some("2026-11-29T10:00:00Z"))
        );
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

#[tokio::test]
async fn extend_is_retried_after_a_5xx() {
    let server = MockServer::start_async().await;
    let (unavailable, answered) = unavailable_once(
        &server,
        "POST",
        "/messages/extend",
        Some(json!({"extend": [{"lease_id": "lease-1"}], "visibility_timeout_ms": 30_000})),
        json!({"extendCount": 1, "warnings": {}}),
    )
    .await;
    let outcome = quick_retries(&server)
        .extend(["lease-1"], Duration::from_secs(30))
        .await
        .expect("the retry succeeds");
    retried_once(&unavailable, &answered).await;
    assert_eq!((outcome.extended, outcome.warnings), (Some(1), vec![]));
}

#[tokio::test]
async fn preview_is_retried_after_a_5xx() {
    let server = MockServer::start_async().await;
    let (unavailable, answered) = unavailable_once(
        &server,
        "POST",
        "/messages/preview",
        Some(json!({"batch_size": 1})),
        json!({"messages": [{"id": "m1", "attempts": 0, "body": "hi", "lease_id": "preview-1",
                             "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 7}]}),
    )
    .await;
    let previewed = quick_retries(&server)
        .preview(1)
        .await
        .expect("the retry succeeds");
    retried_once(&unavailable, &answered).await;
    let seen: Vec<(&str, &str)> = previewed
        .iter()
        .map(|m| (m.id.as_str(), m.preview_id.as_str()))
        .collect();
    assert_eq!(seen, [("m1", "preview-1")]);
}

#[tokio::test]
async fn delete_previewed_is_retried_after_a_5xx() {
    let server = MockServer::start_async().await;
    // The first attempt may have landed: the retry finds the id gone and
    // says so in a warning, which the caller gets.
    let (unavailable, answered) = unavailable_once(
        &server,
        "POST",
        "/messages/preview/ack",
        Some(json!({"acks": [{"lease_id": "preview-1"}]})),
        json!({"warnings": {"preview-1": "preview id unknown or expired"}}),
    )
    .await;
    let outcome = quick_retries(&server)
        .delete_previewed(PreviewedChanges::new().delete("preview-1"))
        .await
        .expect("the retry succeeds");
    retried_once(&unavailable, &answered).await;
    assert_eq!(
        outcome.warnings,
        vec![Warning {
            subject: Some("preview-1".into()),
            message: "preview id unknown or expired".into()
        }]
    );
}

#[tokio::test]
async fn metrics_is_retried_after_a_5xx() {
    let server = MockServer::start_async().await;
    let (unavailable, answered) = unavailable_once(
        &server,
        "GET",
        "/metrics",
        None,
        json!({"backlog_count": 3, "backlog_bytes": 30, "oldest_message_timestamp_ms": 9}),
    )
    .await;
    let metrics = quick_retries(&server)
        .metrics()
        .await
        .expect("the retry succeeds");
    retried_once(&unavailable, &answered).await;
    assert_eq!(
        (
            metrics.backlog_count,
            metrics.backlog_bytes,
            metrics.oldest_message_timestamp_ms
        ),
        (3, 30, 9)
    );
}

#[tokio::test]
async fn purge_status_is_retried_after_a_5xx() {
    let server = MockServer::start_async().await;
    let (unavailable, answered) = unavailable_once(
        &server,
        "GET",
        "/purge",
        None,
        json!({"completed": "true", "started_at": "2026-11-29T10:00:00Z"}),
    )
    .await;
    let status = quick_retries(&server)
        .purge_status()
        .await
        .expect("the retry succeeds");
    retried_once(&unavailable, &answered).await;
    assert_eq!(
        (status.completed, status.started_at.as_deref()),
        (Some(true), Some("2026-11-29T10:00:00Z"))
    );
}

#[tokio::test]
async fn counts_sent_as_floats_decode_to_exact_integers() {
    let server = MockServer::start_async().await;
    server
        .mock_async(|when, then| {
            when.method(POST).path(path("/messages/extend"));
            then.status(200)
                .json_body(success(json!({"extendCount": 1.0, "warnings": {}})));
        })
        .await;
    server
        .mock_async(|when, then| {
            when.method(GET).path(path("/metrics"));
            then.status(200).json_body(success(json!({
                "backlog_count": 5.0, "backlog_bytes": 1024.0,
                "oldest_message_timestamp_ms": 1_710_950_954_154.0
            })));
        })
        .await;
    server
        .mock_async(|when, then| {
            when.method(POST).path(path("/messages/preview"));
            then.status(200).json_body(success(json!({"messages": [
                {"id": "m1", "attempts": 2.0, "body": "hi", "lease_id": "preview-1",
                 "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 1_710_950_954_154.0}
            ]})));
        })
        .await;
    let queue = queue(&server, Auth::Token);
    let extended = queue
        .extend(["lease-1"], Duration::from_secs(30))
        .await
        .expect("extend");
    assert_eq!(extended.extended, Some(1));
    let metrics = queue.metrics().await.expect("metrics");
    assert_eq!(
        (
            metrics.backlog_count,
            metrics.backlog_bytes,
            metrics.oldest_message_timestamp_ms
        ),
        (5, 1024, 1_710_950_954_154)
    );
    let previewed = queue.preview(1).await.expect("preview");
    let counts: Vec<(u32, u64)> = previewed
        .iter()
        .map(|m| (m.attempts, m.timestamp_ms))
        .collect();
    assert_eq!(counts, [(2, 1_710_950_954_154)]);
}
