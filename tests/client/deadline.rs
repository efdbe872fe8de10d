//! One owner of the deadline: the rate-limit wait, every attempt and every
//! retry wait end inside it, and every error says how many requests it took.

use std::time::Duration;

use cf_queues::ratelimit::RateLimits;
use cf_queues::retry::{RetryClass, RetryPolicy};
use cf_queues::{Error, Message, PullOptions, Queue};
use cf_queues_emulator::{EmulatorHandle, Fault, Operation};

use cf_queues_testkit::clients::{configured_client, configured_queue, quick};
use cf_queues_testkit::emulators::emulator;

/// Queue `q` on `emulator`, allowed one push a minute, with `deadline`.
fn one_push_a_minute(emulator: &EmulatorHandle, deadline: Duration) -> Queue {
    let limits = RateLimits::none().push_requests(1, Duration::from_secs(60));
    configured_queue(emulator, "q", |b| b.rate_limits(limits).deadline(deadline))
}

#[tokio::test]
async fn a_rate_limit_wait_past_the_deadline_is_not_started() {
    let emulator = emulator().await;
    let queue = one_push_a_minute(&emulator, Duration::from_secs(2));
    queue
        .push(Message::text("first"))
        .await
        .expect("within the budget");
    let started = std::time::Instant::now();
    let error = queue
        .push(Message::text("second"))
        .await
        .expect_err("the next token is 60 s away");
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert_eq!(error.operation(), Some(Operation::Push));
    assert_eq!(error.attempts(), 0);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "no wait started"
    );
    assert_eq!(emulator.requests_received(), 1, "nothing sent");
    assert_eq!(emulator.metrics("q").backlog_count, 1);
}

#[tokio::test]
async fn a_retry_after_past_the_deadline_returns_the_real_error_with_its_attempts() {
    let emulator = emulator().await;
    emulator.inject(Fault::status(503).times(1));
    let ten_seconds = Duration::from_secs(10);
    emulator.inject(Fault::status(503).retry_after(ten_seconds).times(5));
    let queue = configured_queue(&emulator, "q", |b| {
        b.retry(quick()).deadline(Duration::from_secs(3))
    });
    let error = queue.pull(PullOptions::new()).await.expect_err("503");
    let api = error.as_api().expect("the last real answer, not a timeout");
    assert_eq!((api.status, api.attempts), (503, 2));
    assert_eq!(api.retry_after, Some(Duration::from_secs(10)));
    assert_eq!(api.class, RetryClass::Transient);
    assert_eq!(error.attempts(), 2);
    assert_eq!(emulator.requests_received(), 2);
}

#[tokio::test]
async fn a_stall_in_a_retry_ends_in_a_timeout_naming_both_attempts() {
    let emulator = emulator().await;
    emulator.inject(Fault::status(500).only(Operation::Pull));
    emulator.inject(Fault::stall_only(Duration::from_secs(30)).only(Operation::Pull));
    let queue = configured_queue(&emulator, "q", |b| {
        b.retry(quick()).deadline(Duration::from_millis(500))
    });
    let started = std::time::Instant::now();
    let error = queue.pull(PullOptions::new()).await.expect_err("stalled");
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert_eq!(error.operation(), Some(Operation::Pull));
    assert_eq!(error.attempts(), 2);
    assert!(error.to_string().contains("after 2 attempts"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The 500 that caused the retry is kept, not replaced by the timeout.
    let Error::Timeout { last_error, .. } = &error else {
        unreachable!("matched above")
    };
    let previous = last_error.as_deref().and_then(Error::as_api);
    assert_eq!(
        previous.map(|api| (api.status, api.attempts)),
        Some((500, 1))
    );
    assert!(error.to_string().contains("HTTP 500"), "{error}");
    assert!(std::error::Error::source(&error).is_some());
}

#[tokio::test]
async fn a_deadline_too_far_to_represent_means_none() {
    let emulator = emulator().await;
    emulator.inject(Fault::status(503).times(1).only(Operation::Pull));
    emulator.inject(
        Fault::status(503)
            .retry_after(Duration::from_secs(u64::MAX))
            .times(1)
            .only(Operation::Pull),
    );
    let queue = configured_queue(&emulator, "q", |b| {
        b.retry(quick().max_retry_after(Duration::MAX))
            .deadline(Duration::from_secs(5))
    });
    queue.push(Message::text("m")).await.expect("push");
    // The first 503 is retried at once; the second asks for a wait no clock
    // can hold: it does not fit the deadline, is not started, and the caller
    // gets that 503.
    let started = std::time::Instant::now();
    let error = queue.pull(PullOptions::new()).await.expect_err("503");
    assert_eq!(error.status(), Some(503));
    assert_eq!(error.attempts(), 2);
    assert!(started.elapsed() < Duration::from_secs(4));
    let batch = queue
        .with_deadline(Duration::MAX)
        .pull(PullOptions::new())
        .await
        .expect("a deadline of Duration::MAX is none");
    assert_eq!(batch.messages.len(), 1);
}

#[tokio::test]
async fn a_deadline_passed_before_sending_is_classed_not_sent() {
    let emulator = emulator().await;
    let queue = one_push_a_minute(&emulator, Duration::from_secs(1));
    queue.push(Message::text("first")).await.expect("first");
    let error = queue
        .push(Message::text("second"))
        .await
        .expect_err("limited");
    assert_eq!(error.attempts(), 0);
    assert_eq!(
        error.retry_class(),
        RetryClass::NotSent,
        "a push that never left cannot have landed"
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn transport_errors_count_their_attempts() {
    // Nothing listens on this port: every attempt is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let queue = cf_queues::Client::builder()
        .api_token("t")
        .account_id("acc")
        .base_url(format!("http://127.0.0.1:{port}"))
        .retry(quick().max_retries(3))
        .build()
        .and_then(|c| c.queue("q"))
        .expect("queue");
    let error = queue.pull(PullOptions::new()).await.expect_err("refused");
    assert!(matches!(&error, Error::Transport { .. }), "{error:?}");
    assert_eq!(error.operation(), Some(Operation::Pull));
    assert_eq!(error.attempts(), 4);
    assert_eq!(error.retry_class(), RetryClass::NotSent);
    assert!(error.to_string().contains("after 4 attempts"), "{error}");
}

#[tokio::test]
async fn a_handle_overrides_the_clients_retry_policy_and_deadline() {
    let emulator = emulator().await;
    let client = configured_client(&emulator, |b| b.retry(quick()));
    let queue = client.queue("q").expect("id");

    emulator.inject(Fault::status(503).times(10));
    let once = queue.clone().with_retry(RetryPolicy::none());
    let error = once.pull(PullOptions::new()).await.expect_err("503");
    assert_eq!((error.attempts(), emulator.requests_received()), (1, 1));
    assert_eq!(
        queue.retry_policy(),
        &quick(),
        "the original handle is unchanged"
    );
    emulator.clear_faults();

    emulator.inject(Fault::stall_only(Duration::from_secs(30)));
    let hasty = queue.clone().with_deadline(Duration::from_millis(200));
    assert_eq!(hasty.deadline(), Some(Duration::from_millis(200)));
    let error = hasty.pull(PullOptions::new()).await.expect_err("deadline");
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert_eq!(hasty.without_deadline().deadline(), None);
}
