//! The "not enabled" answer of a pull (405, code 0) and the pulls retried
//! within the propagation window after enabling HTTP pull. A submodule of
//! `wire_resources`, beside `http_pull`, whose helpers it shares.

use super::http_pull::{
    CONSUMER, consumer_path, consumers_mock, consumers_path, consumers_read_back,
    example_http_pull, pull_disabled, pulled,
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
    let error = queue(&server, Auth::Token).disable_http_pull().await;
    assert!(matches!(error, Err(Error::Decode { .. })), "{error:?}");
    assert_calls("no id", &[(&list, 1), (&others, 0)]).await;
}

// ---------------------------------------------------------------------------
// Pulling from a queue without HTTP pull
// ---------------------------------------------------------------------------

/// The mocks of enabling HTTP pull on [`QUEUE`]: the consumers read (none,
/// then the consumer once created) and its creation.
async fn enabling(server: &MockServer) -> (Mock<'_>, Mock<'_>) {
    let created = json!([example_http_pull(CONSUMER)]);
    let list = consumers_read_back(server, Auth::Token, json!([]), created).await;
    let answer = success(example_http_pull(CONSUMER));
    let create = answering(server, POST, consumers_path(), 200, answer).await;
    (list, create)
}

/// A mock of the pull of `queue_id` answering "not enabled" to the first
/// `disabled` requests, and a batch of one message (`m1`) after.
async fn pulls<'a>(server: &'a MockServer, queue_id: &str, disabled: usize) -> Mock<'a> {
    let hits = Arc::new(AtomicUsize::new(0));
    let path = format!("/accounts/{ACCOUNT}/queues/{queue_id}/messages/pull");
    server
        .mock_async(|when, then| {
            when.method(POST).path(path);
            then.respond_with(sequenced(
                disabled,
                (405, pull_disabled()),
                (200, pulled()),
                hits,
            ));
        })
        .await
}

/// A client on `server` for paused time, retrying by `retry`, which has
/// enabled HTTP pull on [`QUEUE`]; and that queue.
async fn enabled(server: &MockServer, retry: RetryPolicy) -> (Client, cf_queues::Queue) {
    let client = paused_client(server, retry);
    let queue = client.queue(QUEUE).expect("queue id");
    let settings = HttpPullSettings::new();
    queue.enable_http_pull(settings).await.expect("enabled");
    (client, queue)
}

/// The live API's answer to a pull without HTTP pull (405, code 0) is
/// recognised, named in the error's text with the way out, and, with no
/// enable before it, not retried. A proxy that dropped the code still
/// leaves the message, which names `http_pull` mode: it is recognised too.
/// Other 405s are not taken for it, and carry no hint.
#[tokio::test]
async fn a_pull_without_http_pull_fails_at_once_with_the_hint() {
    assert_eq!(codes::HTTP_PULL_NOT_ENABLED, 0);
    let without_code = json!({
        "success": false,
        "errors": [{"message": "messages cannot be pulled unless http_pull mode is enabled"}],
        "messages": [],
        "result": null
    });
    let not_allowed = failure(codes::METHOD_NOT_ALLOWED, "Method not allowed");
    // (the answer, its codes, whether it is "not enabled")
    let cases = [
        (pull_disabled(), vec![codes::HTTP_PULL_NOT_ENABLED], true),
        (without_code, vec![], true),
        (not_allowed, vec![codes::METHOD_NOT_ALLOWED], false),
    ];
    for (answer, codes, disabled) in cases {
        let server = MockServer::start_async().await;
        let pull = answering(&server, POST, path("/messages/pull"), 405, answer).await;
        let error = queue(&server, Auth::Token).pull(PullOptions::new()).await;
        let error = error.expect_err("405");
        assert_eq!(error.is_pull_disabled(), disabled, "{error:?}");
        assert_eq!((error.status(), error.codes()), (Some(405), codes));
        assert!(!error.is_not_found() && !error.is_retryable());
        let text = error.to_string();
        assert_eq!(text.contains("enable_http_pull"), disabled, "{text}");
        assert_eq!(text.contains("Queue::enable_http_pull"), disabled, "{text}");
        assert_eq!(
            text.contains("wrangler queues consumer http add"),
            disabled,
            "{text}"
        );
        assert_eq!(error.attempts(), 1);
        assert_calls(&text, &[(&pull, 1)]).await;
    }
}

/// Right after this client enabled HTTP pull, Cloudflare may still answer
/// "not enabled": the pull is tried again with backoff (on paused time)
/// and succeeds once the consumer has spread.
#[tokio::test(start_paused = true)]
async fn a_pull_soon_after_enabling_is_retried_until_it_succeeds() {
    let server = MockServer::start_async().await;
    let (_list, create) = enabling(&server).await;
    let pull = pulls(&server, QUEUE, 3).await;
    let (_, queue) = enabled(&server, RetryPolicy::default()).await;
    let start = tokio::time::Instant::now();
    let batch = queue.pull(PullOptions::new()).await;
    let waited = start.elapsed();
    let ids: Vec<String> = batch
        .expect("pulled once spread")
        .messages
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, ["m1"]);
    assert_calls("three 405s, then the batch", &[(&create, 1), (&pull, 4)]).await;
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
    let _enabling = enabling(&server).await;
    let pull = pulls(&server, QUEUE, usize::MAX).await;
    let enabled_at = tokio::time::Instant::now();
    let retry = RetryPolicy::default().backoff(Duration::from_secs(2), Duration::from_secs(8));
    let (_, queue) = enabled(&server, retry).await;
    let error = queue
        .pull(PullOptions::new())
        .await
        .expect_err("never spread");
    let waited = enabled_at.elapsed();
    assert!(error.is_pull_disabled(), "{error:?}");
    let window = PROPAGATION_WINDOW..PROPAGATION_WINDOW + Duration::from_secs(1);
    assert!(window.contains(&waited), "waited {waited:?}");
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
    assert_calls("one more request only", &[(&pull, tried + 1)]).await;
}

/// The window is the enabling client's, shared by its clones: another
/// client on the same account fails at once.
#[tokio::test(start_paused = true)]
async fn the_window_is_the_enabling_clients_and_its_clones() {
    let server = MockServer::start_async().await;
    let _enabling = enabling(&server).await;
    let pull = pulls(&server, QUEUE, 2).await;
    let (enabling, _) = enabled(&server, RetryPolicy::default()).await;

    let another = paused_client(&server, RetryPolicy::default());
    let error = another
        .queue(QUEUE)
        .expect("queue id")
        .pull(PullOptions::new())
        .await;
    assert!(error.expect_err("another client").is_pull_disabled());
    assert_calls("another client: not retried", &[(&pull, 1)]).await;

    let clone = enabling.clone().queue(QUEUE).expect("queue id");
    let batch = clone
        .pull(PullOptions::new())
        .await
        .expect("a clone is retried");
    assert_eq!(batch.messages.len(), 1);
    assert_calls("one 405, then the batch", &[(&pull, 3)]).await;
}

/// The window is the enabled queue's only, and disabling ends it.
#[tokio::test(start_paused = true)]
async fn the_window_is_per_queue_and_ends_with_a_disable() {
    const OTHER: &str = "0123456789abcdef0123456789abcdef";
    let server = MockServer::start_async().await;
    let _enabling = enabling(&server).await;
    let deleted = success(json!(null));
    let delete = answering(&server, DELETE, consumer_path(CONSUMER), 200, deleted).await;
    let pull = pulls(&server, QUEUE, usize::MAX).await;
    let other_pull = pulls(&server, OTHER, usize::MAX).await;
    let (client, queue) = enabled(&server, RetryPolicy::default()).await;

    let other = client.queue(OTHER).expect("queue id");
    let error = other
        .pull(PullOptions::new())
        .await
        .expect_err("another queue");
    assert!(error.is_pull_disabled());
    assert_calls("another queue: not retried", &[(&other_pull, 1)]).await;

    assert!(queue.disable_http_pull().await.expect("disabled"));
    assert_calls("disabled", &[(&delete, 1)]).await;
    let start = tokio::time::Instant::now();
    let error = queue.pull(PullOptions::new()).await.expect_err("disabled");
    assert!(error.is_pull_disabled());
    assert_eq!(start.elapsed(), Duration::ZERO, "no wait");
    assert_calls("not retried after a disable", &[(&pull, 1)]).await;
}

/// `RetryPolicy::none()` promises that every call sends exactly one
/// request (`Queue::with_retry`'s example says so too): a caller who turned
/// retries off, to retry in its own way, should get the first "not
/// enabled" answer at once, even right after enabling.
#[tokio::test(start_paused = true)]
async fn a_pull_with_retries_off_sends_one_request_even_after_enabling() {
    let server = MockServer::start_async().await;
    let _enabling = enabling(&server).await;
    let pull = pulls(&server, QUEUE, usize::MAX).await;
    let (_, queue) = enabled(&server, RetryPolicy::default()).await;
    let error = queue
        .with_retry(RetryPolicy::none())
        .pull(PullOptions::new())
        .await;
    let error = error.expect_err("not enabled yet");
    assert!(error.is_pull_disabled(), "{error:?}");
    assert_eq!(error.attempts(), 1);
    assert_calls("exactly one request", &[(&pull, 1)]).await;
}
