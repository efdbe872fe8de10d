//! Retries, timeouts, deadlines, rate limits and faults, against the
//! emulator's fault injection and small hand-made TCP servers.

use std::net::TcpListener;
use std::time::Duration;

use cf_queues::retry::{PushRetries, RetryPolicy};
use cf_queues::{Error, Message, PullOptions};
use cf_queues_emulator::{EmulatorHandle, Fault, Operation};
use cf_queues_testkit::clients::{client, configured_queue, quick, without_timers};
use cf_queues_testkit::scripted::{Scripted, Step};
use cf_queues_testkit::wire::{pulled_nothing, success};
use serde_json::json;

async fn emulator() -> EmulatorHandle {
    cf_queues_testkit::emulators::emulator_with(|e| e.token("reliability-secret-token")).await
}

#[tokio::test]
async fn two_500s_then_success_takes_three_attempts() {
    let emulator = emulator().await;
    emulator.inject(Fault::status(500).times(2).only(Operation::Pull));
    let queue = client(&emulator, quick()).queue("q").expect("id");
    let batch = queue
        .pull(PullOptions::new())
        .await
        .expect("third attempt succeeds");
    assert!(batch.messages.is_empty());
    assert_eq!(emulator.requests_received(), 3);
}

#[tokio::test]
async fn retries_give_up_after_the_limit_and_say_how_often_they_tried() {
    let emulator = emulator().await;
    emulator.inject(Fault::status(503).times(10));
    let queue = client(&emulator, quick()).queue("q").expect("id");
    let error = queue
        .pull(PullOptions::new())
        .await
        .expect_err("always 503");
    let api = error.as_api().expect("api error");
    assert_eq!((api.status, api.attempts), (503, 3));
    assert!(error.to_string().contains("after 3 attempts"), "{error}");
    assert!(error.is_retryable());
    assert_eq!(emulator.requests_received(), 3);
}

#[tokio::test]
async fn with_retries_off_exactly_one_request_is_sent() {
    let emulator = emulator().await;
    emulator.inject(Fault::status(500).times(5));
    let queue = client(&emulator, RetryPolicy::none())
        .queue("q")
        .expect("id");
    let error = queue.pull(PullOptions::new()).await.expect_err("500");
    assert_eq!(error.status(), Some(500));
    assert_eq!(emulator.requests_received(), 1);
}

/// A push is retried only when it did not land: not after a 500 by
/// default, but after one under at-least-once pushes; after a 429 that
/// says the queue is overloaded, but not after one that says the queue is
/// disabled (not a rate limit), nor after a 429 without a rate-limit code
/// (not known to be refused).
#[tokio::test]
async fn a_push_is_retried_only_when_it_did_not_land() {
    let overloaded = Fault::status(429).cloudflare_error(10250, "QueueOverloaded");
    let disabled = Fault::status(429).cloudflare_error(10252, "QueueDisabled");
    let html = Fault::status(429).html("<html>slow down</html>");
    let no_wait = quick().max_retry_after(Duration::ZERO);
    let at_least_once = quick().pushes(PushRetries::AtLeastOnce);
    // (the fault, the policy, the messages, the requests, and the backlog
    // after, or the error's status, whether it is a rate limit and whether
    // it is retryable)
    let cases = [
        (
            Fault::status(500).only(Operation::Push),
            quick(),
            1,
            1,
            Err((500, false, None)),
        ),
        (
            Fault::status(500).only(Operation::Batch),
            at_least_once,
            2,
            2,
            Ok(2),
        ),
        (
            overloaded.only(Operation::Push),
            no_wait.clone(),
            1,
            2,
            Ok(1),
        ),
        (disabled, no_wait, 1, 1, Err((429, false, Some(false)))),
        (
            html.only(Operation::Push),
            quick(),
            1,
            1,
            Err((429, true, None)),
        ),
    ];
    for (fault, retry, count, requests, expected) in cases {
        let emulator = emulator().await;
        emulator.inject(fault);
        let queue = client(&emulator, retry).queue("q").expect("id");
        let messages: Vec<Message> = (0..count).map(|i| Message::text(format!("m{i}"))).collect();
        let pushed = match count {
            1 => queue.push(Message::text("m0")).await.map(|_| ()),
            _ => queue.push_batch(messages).await.map(|_| ()),
        };
        let backlog = emulator.metrics("q").backlog_count;
        match (pushed, expected) {
            (Ok(()), Ok(landed)) => assert_eq!(backlog, landed),
            (Err(error), Err((status, rate_limited, retryable))) => {
                assert_eq!(error.status(), Some(status), "{error:?}");
                assert_eq!(error.is_rate_limited(), rate_limited, "{error:?}");
                if let Some(retryable) = retryable {
                    assert_eq!(error.is_retryable(), retryable, "{error:?}");
                }
                assert_eq!(backlog, 0);
            }
            (got, _) => panic!("{got:?}"),
        }
        assert_eq!(emulator.requests_received(), requests);
    }
}

/// A server that answers a 503 saying `x-should-retry: {value}`, then a
/// pull that found nothing.
fn should_retry(value: &str) -> Scripted {
    let refused = json!({"success": false, "errors": []});
    let header = vec![("x-should-retry", value.into())];
    Scripted::steps(vec![
        Step::RespondWith(503, header, refused),
        Step::Respond(200, pulled_nothing()),
    ])
}

#[tokio::test]
async fn x_should_retry_false_stops_retries() {
    // The emulator sends no such header; a one-shot TCP server does.
    let server = should_retry("false");
    let error = server
        .queue_retrying(quick())
        .pull(PullOptions::new())
        .await
        .expect_err("told not to retry");
    assert_eq!(error.status(), Some(503));
    assert_eq!(server.connections(), 1);
}

#[test]
fn retry_after_is_honoured_with_paused_time() {
    // The emulator runs on its own real-time runtime; the client runs on a
    // paused clock, so the 30 s wait passes instantly but is measured exactly.
    let server_runtime = tokio::runtime::Runtime::new().expect("runtime");
    let emulator = server_runtime.block_on(emulator());
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .retry_after(Duration::from_secs(30))
            .only(Operation::Pull),
    );
    // No timers of its own (timeouts, pool reaping) to race the paused clock.
    let client = without_timers(emulator.client_builder().expect("builder"))
        .retry(RetryPolicy::default())
        .build()
        .expect("client");
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    let waited = paused.block_on(async {
        let start = tokio::time::Instant::now();
        client
            .queue("q")
            .expect("id")
            .pull(PullOptions::new())
            .await
            .expect("succeeds after waiting");
        start.elapsed()
    });
    assert!(
        waited >= Duration::from_secs(30) && waited < Duration::from_secs(31),
        "waited {waited:?}"
    );
    assert_eq!(emulator.requests_received(), 2);
    drop(emulator);
}

#[tokio::test]
async fn a_reset_connection_is_retried_for_pull_but_not_for_push() {
    let server = Scripted::steps(vec![Step::HangUp, Step::Respond(200, pulled_nothing())]);
    let batch = server
        .queue_retrying(quick())
        .pull(PullOptions::new())
        .await
        .expect("retried on a new connection");
    assert!(batch.messages.is_empty());
    assert_eq!(server.connections(), 2);

    let server = Scripted::steps(vec![Step::HangUp, Step::Respond(200, pulled_nothing())]);
    let error = server
        .queue_retrying(quick())
        .push(Message::text("maybe landed"))
        .await
        .expect_err("not retried");
    assert!(matches!(error, Error::Transport { .. }), "{error:?}");
    assert_eq!(error.operation(), Some(Operation::Push));
    assert!(error.is_retryable());
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn the_overall_deadline_bounds_a_stalled_call() {
    let emulator = emulator().await;
    emulator.inject(Fault::stall_only(Duration::from_secs(10)));
    let queue = configured_queue(&emulator, "q", |b| b.deadline(Duration::from_millis(300)));
    let started = std::time::Instant::now();
    let error = queue.pull(PullOptions::new()).await.expect_err("deadline");
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    assert_eq!(error.operation(), Some(Operation::Pull));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn push_all_splits_batches_and_reports_each() {
    let emulator = emulator().await;
    let queue = client(&emulator, quick()).queue("bulk").expect("id");
    let mut messages: Vec<Message> = (0..250).map(|i| Message::text(format!("m{i}"))).collect();
    messages[7] = Message::text("x".repeat(200_000)); // too large on its own
    emulator.inject(Fault::status(500).only(Operation::Batch)); // the first batch sent fails, and is not retried
    let report = queue.push_all(messages, 1).await;

    let sizes: Vec<usize> = report.batches.iter().map(|b| b.indices.len()).collect();
    assert_eq!(sizes, vec![100, 1, 100, 49]);
    let failed: Vec<usize> = report.failed().into_iter().map(|(i, _)| i).collect();
    assert_eq!(failed.len(), 101);
    assert!(failed.contains(&7));
    assert!(matches!(report.failed()[7].1, Error::InvalidInput { .. }));
    assert_eq!(report.landed().len(), 149);
    assert!(!report.all_landed());
    assert_eq!(emulator.metrics("bulk").backlog_count, 149);
}

#[tokio::test]
async fn push_all_sends_batches_while_it_reads_the_messages() {
    let emulator = emulator().await;
    let queue = client(&emulator, quick()).queue("bulk").expect("id");
    // With one batch at a time, the first batch has landed before the
    // messages of the third are even made: only what is in flight is held.
    let sent_when_made = std::sync::Mutex::new(Vec::new());
    let messages = (0..300).map(|i| {
        if i % 100 == 50
            && let Ok(mut seen) = sent_when_made.lock()
        {
            seen.push(emulator.requests_received());
        }
        Message::text(format!("m{i}"))
    });
    let report = queue.push_all(messages, 1).await;
    assert!(report.all_landed());
    assert_eq!(
        sent_when_made.lock().map(|s| s.clone()).ok(),
        Some(vec![0, 1, 2]),
        "message 150 was made after batch 1 was sent, message 250 after batch 2"
    );
}

#[tokio::test]
async fn push_all_with_concurrency_lands_everything() {
    let emulator = emulator().await;
    let queue = client(&emulator, quick()).queue("bulk").expect("id");
    // 1,000 messages of 3 KB: the byte limit, not the count, cuts these batches.
    let report = queue
        .push_all((0..1_000).map(|i| Message::text(format!("{i:03000}"))), 4)
        .await;
    assert!(report.all_landed());
    assert!(report.batches.iter().all(|b| b.indices.len() < 100));
    assert_eq!(report.landed(), (0..1_000).collect::<Vec<_>>());
    assert_eq!(emulator.metrics("bulk").backlog_count, 1_000);
}

#[tokio::test]
async fn x_should_retry_true_does_not_duplicate_a_push() {
    let server = should_retry("true");
    let error = server
        .queue_retrying(quick())
        .push(Message::text("once"))
        .await
        .expect_err("503 is final for a push");
    assert_eq!((error.status(), server.connections()), (Some(503), 1));
    let retried = server
        .queue_retrying(quick())
        .pull(PullOptions::new())
        .await;
    assert!(
        retried.is_ok(),
        "a pull does follow x-should-retry: true: {retried:?}"
    );
}

#[tokio::test]
async fn a_wait_past_the_deadline_is_not_started() {
    let emulator = emulator().await;
    emulator.inject(
        Fault::status(503)
            .retry_after(Duration::from_secs(10))
            .times(5),
    );
    let queue = configured_queue(&emulator, "q", |b| {
        b.retry(quick()).deadline(Duration::from_secs(2))
    });
    let started = std::time::Instant::now();
    let error = queue.pull(PullOptions::new()).await.expect_err("503");
    assert_eq!(
        error.status(),
        Some(503),
        "the last answer, not a timeout: {error:?}"
    );
    assert_eq!(emulator.requests_received(), 1);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_refused_push_is_retried_because_it_never_left() {
    // Nothing listens at first; a server appears before the first retry.
    let port = {
        let probe = TcpListener::bind("127.0.0.1:0").expect("bind");
        probe.local_addr().expect("address").port()
    };
    let server = Scripted::steps_on_port_after(
        port,
        Duration::from_millis(100),
        vec![Step::Respond(200, success(json!({})))],
    );
    server
        .queue_retrying(
            RetryPolicy::default().backoff(Duration::from_millis(400), Duration::from_secs(1)),
        )
        .push(Message::text("x"))
        .await
        .expect("lands on the retry");
    assert_eq!(server.connections(), 1);
}
