//! Envelope handling and error mapping: Cloudflare error bodies, HTML, empty
//! and invalid bodies, `success: false` inside a 2xx, and transport failures.

use std::time::Duration;

use cf_queues::operation::Operation;
use cf_queues::{Client, Error, Message, PullOptions};
use httpmock::Method::POST;
use httpmock::MockServer;
use serde_json::json;

use cf_queues_testkit::wire::{ACCOUNT, QUEUE};

/// A token the tests look for in every error text.
const TOKEN: &str = "secret-token-that-must-not-leak";

fn queue(base_url: &str) -> cf_queues::Queue {
    queue_with(base_url, |builder| builder)
}

fn queue_with(
    base_url: &str,
    configure: impl FnOnce(cf_queues::ClientBuilder) -> cf_queues::ClientBuilder,
) -> cf_queues::Queue {
    configure(
        Client::builder()
            .api_token(TOKEN)
            .account_id(ACCOUNT)
            .base_url(base_url)
            // One request per call: these tests pin how each answer maps to an error.
            .retry(cf_queues::retry::RetryPolicy::none()),
    )
    .build()
    .and_then(|c| c.queue(QUEUE))
    .expect("valid test configuration")
}

/// A mock of every POST, answering 200 with `body` as it is.
async fn answering_200<'a>(server: &'a MockServer, body: &str) -> httpmock::Mock<'a> {
    server
        .mock_async(|when, then| {
            when.method(POST);
            then.status(200).body(body);
        })
        .await
}

/// A mock of every POST, answering 200 with the JSON `body`.
async fn answering_200_json(server: &MockServer, body: serde_json::Value) -> httpmock::Mock<'_> {
    server
        .mock_async(|when, then| {
            when.method(POST);
            then.status(200).json_body(body);
        })
        .await
}

/// Serves `status` with `body` for a push and returns the error the push gives.
async fn push_error(status: u16, content_type: &str, body: &str, extra: &[(&str, &str)]) -> Error {
    let server = MockServer::start_async().await;
    server
        .mock_async(|when, then| {
            when.method(POST);
            let mut then = then
                .status(status)
                .header("content-type", content_type)
                .body(body);
            for (name, value) in extra {
                then = then.header(*name, *value);
            }
        })
        .await;
    let error = queue(&server.base_url())
        .push(Message::text("hi"))
        .await
        .expect_err("the server answers with a failure");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(TOKEN), "the token leaked into {shown}");
    error
}

/// The error a push gives when the server answers `status` with
/// Cloudflare's failure envelope of `code` and `message`.
async fn cloudflare_error(status: u16, code: u32, message: &str) -> Error {
    push_error(
        status,
        "application/json",
        &cloudflare_failure(code, message),
        &[],
    )
    .await
}

fn cloudflare_failure(code: u32, message: &str) -> String {
    json!({
        "success": false,
        "errors": [{"code": code, "message": message, "documentation_url": "https://developers.cloudflare.com/queues/", "source": {"pointer": "/body"}}],
        "messages": [],
        "result": null
    })
    .to_string()
}

#[tokio::test]
async fn cloudflare_error_bodies_keep_status_and_every_detail() {
    for (status, code, message) in [
        (400, 10207, "JSONRequestBodyInvalid"),
        (401, 10000, "Authentication error"),
        (403, 10000, "Authentication error"),
        (404, 10104, "QueueNotFound"),
        (429, 10250, "QueueOverloaded"),
        (500, 15000, "UnknownInternalError"),
    ] {
        let error = cloudflare_error(status, code, message).await;
        assert_eq!(error.status(), Some(status));
        assert_eq!(error.codes(), vec![code]);
        let api = error.as_api().expect("an API error");
        assert_eq!(api.operation, Operation::Push);
        assert_eq!(error.is_auth(), matches!(status, 401 | 403), "{status}");
        assert_eq!(error.is_not_found(), status == 404, "{status}");
        assert_eq!(error.attempts(), 1);
        assert_eq!(api.errors.len(), 1);
        assert_eq!(api.errors[0].message, message);
        assert_eq!(api.errors[0].pointer.as_deref(), Some("/body"));
        assert_eq!(
            api.errors[0].documentation_url.as_deref(),
            Some("https://developers.cloudflare.com/queues/")
        );
        assert_eq!(api.body_snippet, None);
        assert_eq!(
            error.to_string(),
            format!("Cloudflare API error in push (HTTP {status}): [{code}] {message} (at /body)")
        );
    }
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    let error = push_error(
        429,
        "application/json",
        &cloudflare_failure(10250, "QueueOverloaded"),
        &[("retry-after", "7")],
    )
    .await;
    assert_eq!(
        error.as_api().and_then(|a| a.retry_after),
        Some(Duration::from_secs(7))
    );
    assert!(error.is_rate_limited() && error.is_retryable());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    let error = push_error(
        429,
        "application/json",
        &cloudflare_failure(10250, "QueueOverloaded"),
        &[("retry-after-ms", "1500"), ("retry-after", "7")],
    )
    .await;
    assert_eq!(
        error.as_api().and_then(|a| a.retry_after),
        Some(Duration::from_millis(1500))
    );
}

#[tokio::test]
async fn html_error_page_keeps_status_and_snippet() {
    let page = "<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>";
    let error = push_error(502, "text/html", page, &[]).await;
    let api = error.as_api().expect("an API error");
    assert_eq!(api.status, 502);
    assert!(api.errors.is_empty());
    assert_eq!(api.body_snippet.as_deref(), Some(page));
    assert!(error.to_string().contains("HTTP 502"), "{error}");
}

#[tokio::test]
async fn empty_and_invalid_error_bodies() {
    let error = push_error(503, "text/plain", "", &[]).await;
    let api = error.as_api().expect("an API error");
    assert_eq!((api.status, api.body_snippet.as_deref()), (503, Some("")));
    assert_eq!(
        error.to_string(),
        "Cloudflare API error in push (HTTP 503): empty body"
    );

    let error = push_error(
        400,
        "application/json",
        "{\"success\": false, \"errors\": [",
        &[],
    )
    .await;
    let api = error.as_api().expect("an API error");
    assert_eq!(
        (api.status, api.body_snippet.as_deref()),
        (400, Some("{\"success\": false, \"errors\": ["))
    );
}

#[tokio::test]
async fn success_false_inside_200_is_an_error() {
    let error = cloudflare_error(200, 10104, "QueueNotFound").await;
    assert_eq!(error.status(), Some(200));
    assert_eq!(error.codes(), vec![10104]);
}

#[tokio::test]
async fn errors_next_to_success_true_are_not_a_failure() {
    let server = MockServer::start_async().await;
    answering_200_json(&server, json!({
                "success": true,
                "errors": [{"code": 7003, "message": "No route for the URI"}],
                "messages": [{"code": 1, "message": "an object, not a string"}],
                "result": {"metadata": {"metrics": {"backlog_count": 1, "backlog_bytes": 2, "oldest_message_timestamp_ms": 0}}, "extra": 1},
                "unknown_top_level": {"a": 1}
            })).await;
    let receipt = queue(&server.base_url())
        .push(Message::text("hi"))
        .await
        .expect("success");
    assert_eq!(
        receipt.metrics.map(|m| (m.backlog_count, m.backlog_bytes)),
        Some((1, 2))
    );
}

#[tokio::test]
async fn invalid_and_truncated_success_bodies_are_decode_errors() {
    for body in [
        "not json at all",
        "{\"success\": true, \"result\": {\"messages\": [",
        "",
    ] {
        let server = MockServer::start_async().await;
        answering_200(&server, body).await;
        let error = queue(&server.base_url())
            .pull(PullOptions::new())
            .await
            .expect_err("garbage");
        match error {
            Error::Decode {
                operation,
                status,
                snippet,
                ..
            } => {
                assert_eq!(
                    (operation, status, snippet.as_str()),
                    (Operation::Pull, 200, body)
                );
            }
            other => panic!("expected Decode, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn wrong_types_in_a_success_body_are_decode_errors() {
    let server = MockServer::start_async().await;
    let not_a_list = json!({"success": true, "result": {"messages": "not a list"}});
    answering_200_json(&server, not_a_list).await;
    let error = queue(&server.base_url())
        .pull(PullOptions::new())
        .await
        .expect_err("wrong shape");
    assert!(
        matches!(error, Error::Decode { status: 200, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn huge_bodies_are_cut_off() {
    let server = MockServer::start_async().await;
    let huge = format!(
        "{{\"success\":true,\"result\":{{\"metadata\":{{}},\"pad\":\"{}\"}}}}",
        "x".repeat(200_000)
    );
    answering_200(&server, huge.as_str()).await;
    let error = queue_with(&server.base_url(), |b| b.max_response_bytes(64 * 1024))
        .push(Message::text("hi"))
        .await
        .expect_err("too large");
    assert!(
        matches!(
            error,
            Error::ResponseTooLarge {
                operation: Operation::Push,
                status: 200,
                limit: 65_536,
                attempts: 1,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_cap_too_small_for_a_pull_is_refused_before_anything_is_leased() {
    let server = MockServer::start_async().await;
    let mock = answering_200(&server, "{}").await;
    let error = queue_with(&server.base_url(), |b| b.max_response_bytes(64 * 1024))
        .pull(PullOptions::new().batch_size(10))
        .await
        .expect_err("refused");
    match &error {
        Error::InvalidInput { field, reason, .. } => {
            assert_eq!(field, "batch_size");
            assert!(reason.contains("max_response_bytes of 65536"), "{reason}");
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    assert_eq!(mock.calls_async().await, 0);
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    drop(listener);
    let error = queue(&format!("http://{address}"))
        .push(Message::text("hi"))
        .await
        .expect_err("refused");
    assert!(matches!(error, Error::Transport { .. }), "{error:?}");
    assert_eq!(error.operation(), Some(Operation::Push));
    assert!(!format!("{error} {error:?}").contains(TOKEN));
}

#[test]
fn configuration_errors_name_what_to_set() {
    let incomplete = [
        (
            Client::builder().account_id(ACCOUNT),
            "CLOUDFLARE_API_TOKEN",
        ),
        (Client::builder().api_token("t"), "CLOUDFLARE_ACCOUNT_ID"),
    ];
    for (builder, named) in incomplete {
        let missing = builder.build().expect_err("incomplete");
        assert!(missing.to_string().contains(named), "{missing}");
    }
    let bad_url = Client::builder()
        .api_token("t")
        .account_id(ACCOUNT)
        .base_url("ftp://x")
        .build()
        .expect_err("bad url");
    assert!(matches!(bad_url, Error::Config(_)), "{bad_url:?}");
    let client = Client::builder()
        .api_token(TOKEN)
        .account_id(ACCOUNT)
        .build()
        .expect("valid");
    assert!(!format!("{client:?}").contains(TOKEN));
    let builder = Client::builder().api_token(TOKEN);
    assert!(!format!("{builder:?}").contains(TOKEN));
}

#[tokio::test]
async fn auth_failures_are_classified_whatever_their_status() {
    // Cloudflare answers a missing or malformed auth header with 400, a
    // token without permission with 403: a client checking `is_auth` works
    // against both.
    for (status, code) in [
        (400, cf_queues::codes::MISSING_AUTH_HEADERS),
        (400, cf_queues::codes::INVALID_REQUEST_HEADERS),
        (400, cf_queues::codes::INVALID_AUTH_FORMAT),
        (403, cf_queues::codes::AUTHENTICATION_ERROR),
        (403, cf_queues::codes::UNAUTHORIZED),
        // The codes decide even where the status would not.
        (400, cf_queues::codes::AUTHENTICATION_ERROR),
        (400, cf_queues::codes::UNAUTHORIZED),
        (400, cf_queues::codes::INVALID_AUTH_EMAIL_FORMAT),
        (400, cf_queues::codes::INVALID_AUTH_KEY_FORMAT),
        (200, cf_queues::codes::AUTHENTICATION_ERROR),
    ] {
        let error = cloudflare_error(status, code, "auth").await;
        assert!(error.is_auth(), "{status}/{code}");
        assert!(
            !error.is_retryable() && !error.is_not_found(),
            "{status}/{code}"
        );
    }
    let error = cloudflare_error(400, 10207, "JSONRequestBodyInvalid").await;
    assert!(!error.is_auth());
    for status in [404, 400] {
        let error = cloudflare_error(status, 10104, "QueueNotFound").await;
        assert!(error.is_not_found() && !error.is_auth(), "{status}");
    }
    let error = push_error(404, "text/html", "<html>Not Found</html>", &[]).await;
    assert!(error.is_not_found(), "a code-less 404 is not found too");
}
