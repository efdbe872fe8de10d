//! The "not enabled" answer of a pull (405, code 0) and the pulls retried
//! within the propagation window after enabling HTTP pull. A submodule of
//! `wire_resources`, beside `http_pull`, whose helpers it shares.

use super::http_pull::{
    CONSUMER, consumer_path, consumers_mock, consumers_path, example_http_pull, pull_disabled,
    pulled,
};
use super::*;

use cf_queues::PullOptions;
use cf_queues::resources::{HttpPullSettings, PROPAGATION_WINDOW};

/// An HTTP pull consumer listed without its id cannot be deleted: a decode
/// error, and no DELETE to a made-up path.
#[tokio::test]
async fn disable_http_pull_needs_the_consumer_id() {
    let server = MockServer::start_async().await;
    let list = consumers_mock(&server, json!([{"type": "http_pull", "consumer_id": ""}])).await;
    let others = catch_all(&server).await;
    let error = queue(&server, Auth::Token)
        .disable_http_pull()
        .await
        .expect_err("no id");
    assert!(matches!(error, Error::Decode { .. }), "{error:?}");
    assert_eq!(list.calls_async().await, 1);
    assert_eq!(others.calls_async().await, 0);
}

// ---------------------------------------------------------------------------
// Pulling from a queue without HTTP pull
// ---------------------------------------------------------------------------

/// The live API's answer to a pull without HTTP pull (405, code 0) is
/// recognised, named in the error's text with the way out, and, with no
/// enable before it, not retried.
#[tokio::test]
async fn a_pull_without_http_pull_fails_at_once_with_the_hint() {
    let server = MockServer::start_async().await;
    let pull = answering(&server, POST, path("/messages/pull"), 405, pull_disabled()).await;
    let error = queue(&server, Auth::Token)
        .pull(PullOptions::new())
        .await
        .expect_err("not enabled");
    assert!(error.is_pull_disabled(), "{error:?}");
    assert_eq!(error.status(), Some(405));
    assert_eq!(error.codes(), [codes::HTTP_PULL_NOT_ENABLED]);
    assert_eq!(codes::HTTP_PULL_NOT_ENABLED, 0);
    assert!(!error.is_not_found());
    assert!(!error.is_retryable());
    let text = error.to_string();
    assert!(text.contains("Queue::enable_http_pull"), "{text}");
    assert!(text.contains("wrangler queues consumer http add"), "{text}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(pull.calls_async().await, 1, "exactly one request");
}

/// A proxy that dropped the code still leaves the message, which names
/// `http_pull` mode: it is recognised too.
#[tokio::test]
async fn a_pull_disabled_answer_without_its_code_is_recognised() {
    let server = MockServer::start_async().await;
    let answer = json!({
        "success": false,
        "errors": [{"message": "messages cannot be pulled unless http_pull mode is enabled"}],
        "messages": [],
        "result": null
    });
    let pull = answering(&server, POST, path("/messages/pull"), 405, answer).await;
    let error = queue(&server, Auth::Token)
        .pull(PullOptions::new())
        .await
        .expect_err("not enabled");
    assert!(error.is_pull_disabled(), "{error:?}");
    assert!(error.codes().is_empty(), "{error:?}");
    assert!(
        error.to_string().contains("Queue::enable_http_pull"),
        "{error}"
    );
    assert_eq!(pull.calls_async().await, 1);
}

/// Other 405s are not taken for it, and carry no hint.
#[tokio::test]
async fn another_405_is_not_pull_disabled() {
    let server = MockServer::start_async().await;
    let pull = answering(
        &server,
        POST,
        path("/messages/pull"),
        405,
        failure(codes::METHOD_NOT_ALLOWED, "Method not allowed"),
    )
    .await;
    let error = queue(&server, Auth::Token)
        .pull(PullOptions::new())
        .await
        .expect_err("405");
    assert!(!error.is_pull_disabled(), "{error:?}");
    assert!(!error.to_string().contains("enable_http_pull"), "{error}");
    assert_eq!(pull.calls_async().await, 1);
}

/// Right after this client enabled HTTP pull, Cloudflare may still answer
/// "not enabled": the pull is tried again with backoff (on paused time)
/// and succeeds once the consumer has spread.
#[tokio::test(start_paused = true)]
async fn a_pull_soon_after_enabling_is_retried_until_it_succeeds() {
    let server = MockServer::start_async().await;
    let _list = consumers_mock(&server, json!([])).await;
    let create = answering(
        &server,
        POST,
        consumers_path(),
        200,
        success(example_http_pull(CONSUMER)),
    )
    .await;
    let hits = Arc::new(AtomicUsize::new(0));
    let pull = server
        .mock_async(|when, then| {
            when.method(POST).path(path("/messages/pull"));
            then.respond_with(sequenced(
                3,
                (405, pull_disabled()),
                (200, pulled()),
                Arc::clone(&hits),
            ));
        })
        .await;
    let queue = paused_client(&server, RetryPolicy::default())
        .queue(QUEUE)
        .expect("queue id");
    queue
        .enable_http_pull(HttpPullSettings::new())
        .await
        .expect("enabled");
    let start = tokio::time::Instant::now();
    let batch = queue
        .pull(PullOptions::new())
        .await
        .expect("pulled once spread");
    let waited = start.elapsed();
    let ids: Vec<&str> = batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m1"]);
    assert_eq!(create.calls_async().await, 1);
    assert_eq!(pull.calls_async().await, 4, "three 405s, then the batch");
    assert_eq!(hits.load(Ordering::SeqCst), 4);
    assert!(
        waited > Duration::ZERO && waited < PROPAGATION_WINDOW,
        "waited {waited:?}"
    );
}

/// The retries stop at the window's end: 60 s after the enable, "not
/// enabled" is the queue's state, and a later pull fails at once.
#[tokio::test(start_paused = true)]
async fn a_pull_still_disabled_after_the_window_fails() {
    let server = MockServer::start_async().await;
    let _list = consumers_mock(&server, json!([])).await;
    let _create = answering(
        &server,
        POST,
        consumers_path(),
        200,
        success(example_http_pull(CONSUMER)),
    )
    .await;
    let pull = answering(&server, POST, path("/messages/pull"), 405, pull_disabled()).await;
    let queue = paused_client(
        &server,
        RetryPolicy::default().backoff(Duration::from_secs(2), Duration::from_secs(8)),
    )
    .queue(QUEUE)
    .expect("queue id");
    let enabled_at = tokio::time::Instant::now();
    queue
        .enable_http_pull(HttpPullSettings::new())
        .await
        .expect("enabled");
    let error = queue
        .pull(PullOptions::new())
        .await
        .expect_err("never spread");
    let waited = enabled_at.elapsed();
    assert!(error.is_pull_disabled(), "{error:?}");
    assert!(
        waited >= PROPAGATION_WINDOW && waited < PROPAGATION_WINDOW + Duration::from_secs(1),
        "waited {waited:?}"
    );
    let tried = pull.calls_async().await;
    // At most 8 s between tries over 60 s, at least 1.5 s: 8 to 41 tries.
    assert!((8..=41).contains(&tried), "{tried} pulls");
    assert_eq!(error.attempts() as usize, tried);

    let again = queue
        .pull(PullOptions::new())
        .await
        .expect_err("still disabled");
    assert!(again.is_pull_disabled());
    assert_eq!(again.attempts(), 1);
    assert_eq!(pull.calls_async().await, tried + 1, "one more request only");
}

/// The window is the enabling client's, shared by its clones: another
/// client on the same account fails at once.
#[tokio::test(start_paused = true)]
async fn the_window_is_the_enabling_clients_and_its_clones() {
    let server = MockServer::start_async().await;
    let _list = consumers_mock(&server, json!([])).await;
    let _create = answering(
        &server,
        POST,
        consumers_path(),
        200,
        success(example_http_pull(CONSUMER)),
    )
    .await;
    let hits = Arc::new(AtomicUsize::new(0));
    let pull = server
        .mock_async(|when, then| {
            when.method(POST).path(path("/messages/pull"));
            then.respond_with(sequenced(
                2,
                (405, pull_disabled()),
                (200, pulled()),
                Arc::clone(&hits),
            ));
        })
        .await;
    let enabling = paused_client(&server, RetryPolicy::default());
    enabling
        .queue(QUEUE)
        .expect("queue id")
        .enable_http_pull(HttpPullSettings::new())
        .await
        .expect("enabled");

    let error = paused_client(&server, RetryPolicy::default())
        .queue(QUEUE)
        .expect("queue id")
        .pull(PullOptions::new())
        .await
        .expect_err("another client");
    assert!(error.is_pull_disabled(), "{error:?}");
    assert_eq!(pull.calls_async().await, 1, "another client: not retried");

    let batch = enabling
        .clone()
        .queue(QUEUE)
        .expect("queue id")
        .pull(PullOptions::new())
        .await
        .expect("a clone is retried");
    assert_eq!(batch.messages.len(), 1);
    assert_eq!(pull.calls_async().await, 3, "one 405, then the batch");
}

/// The window is the enabled queue's only, and disabling ends it.
#[tokio::test(start_paused = true)]
async fn the_window_is_per_queue_and_ends_with_a_disable() {
    const OTHER: &str = "0123456789abcdef0123456789abcdef";
    let server = MockServer::start_async().await;
    let reads = Arc::new(AtomicUsize::new(0));
    let _list = server
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
    let _create = answering(
        &server,
        POST,
        consumers_path(),
        200,
        success(example_http_pull(CONSUMER)),
    )
    .await;
    let delete = answering(
        &server,
        DELETE,
        consumer_path(CONSUMER),
        200,
        success(json!(null)),
    )
    .await;
    let pull = answering(&server, POST, path("/messages/pull"), 405, pull_disabled()).await;
    let other_pull = answering(
        &server,
        POST,
        format!("/accounts/{ACCOUNT}/queues/{OTHER}/messages/pull"),
        405,
        pull_disabled(),
    )
    .await;
    let client = paused_client(&server, RetryPolicy::default());
    let queue = client.queue(QUEUE).expect("queue id");
    queue
        .enable_http_pull(HttpPullSettings::new())
        .await
        .expect("enabled");

    let error = client
        .queue(OTHER)
        .expect("queue id")
        .pull(PullOptions::new())
        .await
        .expect_err("another queue");
    assert!(error.is_pull_disabled());
    assert_eq!(other_pull.calls_async().await, 1, "not retried");

    assert!(queue.disable_http_pull().await.expect("disabled"));
    assert_eq!(delete.calls_async().await, 1);
    let start = tokio::time::Instant::now();
    let error = queue.pull(PullOptions::new()).await.expect_err("disabled");
    assert!(error.is_pull_disabled());
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait");
    assert_eq!(pull.calls_async().await, 1, "not retried after a disable");
}

/// `RetryPolicy::none()` promises that every call sends exactly one
/// request (`Queue::with_retry`'s example says so too): a caller who turned
/// retries off, to retry in its own way, should get the first "not
/// enabled" answer at once, even right after enabling.
#[tokio::test(start_paused = true)]
async fn a_pull_with_retries_off_sends_one_request_even_after_enabling() {
    let server = MockServer::start_async().await;
    let _list = consumers_mock(&server, json!([])).await;
    let _create = answering(
        &server,
        POST,
        consumers_path(),
        200,
        success(example_http_pull(CONSUMER)),
    )
    .await;
    let pull = answering(&server, POST, path("/messages/pull"), 405, pull_disabled()).await;
    let queue = paused_client(&server, RetryPolicy::default())
        .queue(QUEUE)
        .expect("queue id");
    queue
        .enable_http_pull(HttpPullSettings::new())
        .await
        .expect("enabled");
    let error = queue
        .with_retry(RetryPolicy::none())
        .pull(PullOptions::new())
        .await
        .expect_err("not enabled yet");
    assert!(error.is_pull_disabled(), "{error:?}");
    assert_eq!(error.attempts(), 1);
    assert_eq!(pull.calls_async().await, 1, "exactly one request");
}
