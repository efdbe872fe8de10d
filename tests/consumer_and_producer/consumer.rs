//! The consumer runtime against the emulator, on tokio's paused clock: the
//! consumer's timers, backoffs and flush intervals are exact, and faults are
//! injected into the emulator.
//!
//! The emulator runs in the test's own (current-thread) runtime: loopback I/O
//! is ready as soon as it is written, so paused time only moves when every
//! task waits on a timer, never in the middle of a request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues::consumer::{CancellationToken, Consumer, ConsumerError, RetryDelay, Verdict};
use cf_queues::error::BodyError;
use cf_queues::{Message, PullOptions};
use cf_queues_emulator::{Fault, Operation, WorkerBody};
use tokio::time::Instant;

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

use crate::ack_now;
use crate::support::{
    Running, STEP, acks_after, assert_counts, assert_drained, fresh, gated, noting_the_first,
    pushed, pushed_to,
};
use cf_queues_testkit::clients::{LONG_LEASE, push_texts, queue};
use cf_queues_testkit::emulators::emulator_with;
use cf_queues_testkit::wait::eventually;

#[tokio::test(start_paused = true)]
async fn each_message_is_handled_and_acked_exactly_once_across_consumers() {
    let (emulator, queue) = pushed("orders", 600).await;
    emulator.inject(Fault::status(503).times(2).only(Operation::Pull));
    emulator.inject(Fault::status(500).times(2).only(Operation::Ack));
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .only(Operation::Pull),
    );

    let seen: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let token = CancellationToken::new();
    let mut runs = Vec::new();
    for _ in 0..3 {
        let consumer = Consumer::builder(queue.clone())
            .batch_size(50)
            .max_in_flight(120)
            .visibility_timeout(LONG_LEASE)
            .max_lease(LONG_LEASE)
            .shutdown_token(token.clone())
            .build()
            .expect("valid settings");
        let seen = Arc::clone(&seen);
        runs.push(tokio::spawn(consumer.run(move |message| {
            let seen = Arc::clone(&seen);
            async move {
                let body = message.body().text()?.to_owned();
                // Handlers overlap and finish out of order.
                let n: u64 = body[1..].parse().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(n % 17)).await;
                *seen.lock().expect("lock").entry(body).or_default() += 1;
                Ok::<_, BodyError>(Verdict::Ack)
            }
        })));
    }
    while emulator.metrics("orders").backlog_count > 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    token.cancel();
    let mut total = cf_queues::consumer::Summary::default();
    for run in runs {
        let s = run.await.expect("task").expect("no fatal error");
        total.handled += s.handled;
        total.acked += s.acked;
        total.received += s.received;
        total.pull_errors += s.pull_errors;
        total.settle_errors += s.settle_errors;
        total.settle_warnings += s.settle_warnings;
        total.leases_lost += s.leases_lost;
        total.retried += s.retried + s.released + s.unflushed;
        assert_eq!((s.in_flight, s.in_flight_bytes), (0, 0));
    }
    let seen = seen.lock().expect("lock");
    assert_eq!(seen.len(), 600);
    assert!(
        seen.values().all(|&n| n == 1),
        "a message was handled twice"
    );
    assert_eq!(
        (total.received, total.handled, total.acked),
        (600, 600, 600)
    );
    assert_eq!((total.pull_errors, total.settle_errors), (3, 2));
    assert_eq!(
        (total.settle_warnings, total.leases_lost, total.retried),
        (0, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_handler_three_times_the_visibility_timeout_keeps_its_lease() {
    let (emulator, _clock) = cf_queues_testkit::emulators::emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "slow", 1).await;
    let attempts: Arc<Mutex<Vec<u32>>> = Arc::default();
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(Duration::from_secs(3))
        .build()
        .expect("valid settings");
    let seen = Arc::clone(&attempts);
    let running = Running::start(consumer, move |message| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock().expect("lock").push(message.attempts);
            tokio::time::sleep(Duration::from_secs(9)).await;
            Ok::<_, BodyError>(Verdict::Ack)
        }
    });
    // Long enough for a redelivery after any expiry to have been pulled.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let summary = running.finish().await;
    assert_eq!(*attempts.lock().expect("lock"), [1], "delivered once");
    // Extended 2 s, 4 s, 6 s and 8 s after the pull, a second before each expiry.
    assert_eq!(
        (summary.extended, summary.extend_errors, summary.leases_lost),
        (4, 0, 0)
    );
    assert_eq!((summary.acked, summary.settle_warnings), (1, 0));
    assert_drained(&emulator, "slow");
}

#[tokio::test(start_paused = true)]
async fn a_lease_past_the_maximum_is_reported_and_still_acked() {
    let (emulator, _clock) = cf_queues_testkit::emulators::emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "capped", 1).await;
    let running = Running::start(
        Consumer::builder(queue.clone())
            .visibility_timeout(Duration::from_secs(3))
            .max_lease(Duration::from_secs(3))
            .max_in_flight(1),
        acks_after(Duration::from_secs(5)),
    );
    tokio::time::sleep(Duration::from_secs(4)).await;
    // Reported while the handler still runs: capped at 2 s, expired at 3 s.
    let s = running.monitor.snapshot();
    assert_eq!(
        (s.max_lease_reached, s.leases_lost, s.handled, s.in_flight),
        (1, 1, 0, 1)
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let summary = running.finish().await;
    // Cloudflare accepts the late ack: the message is gone, and was not
    // delivered again.
    assert_eq!(
        (summary.acked, summary.settle_warnings, summary.received),
        (1, 0, 1),
        "late ack accepted"
    );
    assert_counts!(summary, max_lease_reached: 1, leases_lost: 1, extended: 0);
    assert_drained(&emulator, "capped");
}

#[tokio::test(start_paused = true)]
async fn acks_flush_at_once_by_size_and_the_rest_after_the_interval() {
    let (emulator, queue) = pushed("sized", 25).await;
    let consumer = Consumer::builder(queue.clone())
        .batch_size(25)
        .ack_batch_size(10)
        .ack_interval(Duration::from_secs(60))
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let running = Running::start(consumer, ack_now);
    running.until("two full flushes", |s| s.acked == 20).await;
    assert_eq!(started.elapsed(), Duration::ZERO, "no time passed");
    let s = running.monitor.snapshot();
    assert_eq!((s.handled, s.settle_requests, s.in_flight), (25, 2, 5));

    tokio::time::sleep(Duration::from_millis(59_900)).await;
    assert_eq!(
        running.monitor.snapshot().acked,
        20,
        "not before the interval"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    running.until("the interval flush", |s| s.acked == 25).await;
    assert_eq!(running.monitor.snapshot().settle_requests, 3);
    let summary = running.finish().await;
    assert_eq!((summary.acked, summary.settle_requests), (25, 3));
    assert_drained(&emulator, "sized");
}

#[tokio::test(start_paused = true)]
async fn a_few_acks_wait_for_the_interval() {
    let (_emulator, queue) = pushed("timed", 3).await;
    let running = Running::start(
        Consumer::builder(queue.clone()).ack_interval(Duration::from_millis(200)),
        ack_now,
    );
    running.until("handled", |s| s.handled == 3).await;
    let handled_at = Instant::now();
    tokio::time::sleep(Duration::from_millis(199)).await;
    assert_eq!(running.monitor.snapshot().settle_requests, 0);
    running
        .eventually("flushed", MS, SECOND, |s| s.acked == 3)
        .await;
    assert_eq!(handled_at.elapsed(), Duration::from_millis(200));
    assert_eq!(running.monitor.snapshot().settle_requests, 1);
    running.finish().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_lets_handlers_finish_then_releases_the_rest_and_flushes() {
    let (_emulator, queue) = pushed("draining", 30).await;
    let finished: Arc<Mutex<Vec<String>>> = Arc::default();
    let consumer = Consumer::builder(queue.clone())
        .batch_size(20)
        .max_in_flight(20)
        .grace_period(Duration::from_secs(5))
        .ack_interval(Duration::from_secs(3600))
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        .build()
        .expect("valid settings");
    let done = Arc::clone(&finished);
    let running = Running::start(consumer, move |message| {
        let done = Arc::clone(&done);
        async move {
            let body = message.body().text()?.to_owned();
            let n: u64 = body[1..].parse().unwrap_or(0);
            // Even messages take 1 s, odd ones 100 s: past the grace period.
            let took = if n.is_multiple_of(2) { 1 } else { 100 };
            tokio::time::sleep(Duration::from_secs(took)).await;
            done.lock().expect("lock").push(body);
            Ok::<_, BodyError>(Verdict::Ack)
        }
    });
    running.until("a full pull", |s| s.received == 20).await;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let summary = running.finish().await;
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(5_500),
        "0.5 s + grace"
    );
    assert_counts!(summary, received: 20, handled: 10, acked: 10, released: 10);
    // The acks waited for an interval of an hour: the shutdown sent them,
    // with the releases, in one call.
    assert_eq!((summary.settle_requests, summary.in_flight), (1, 0));
    tokio::time::sleep(Duration::from_secs(200)).await;
    assert_eq!(
        finished.lock().expect("lock").len(),
        10,
        "cancelled handlers stay cancelled"
    );

    let rest = queue
        .pull(PullOptions::new().batch_size(100))
        .await
        .expect("pull");
    let mut attempts: HashMap<u32, usize> = HashMap::new();
    for message in &rest.messages {
        *attempts.entry(message.attempts).or_default() += 1;
    }
    // 10 released (their second delivery) and 10 never pulled.
    assert_eq!(attempts, HashMap::from([(2, 10), (1, 10)]));
}

#[tokio::test(start_paused = true)]
async fn pulls_back_off_on_429_and_5xx_and_recover() {
    let (emulator, queue) = pushed("throttled", 5).await;
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .retry_after(Duration::from_secs(3))
            .times(2)
            .only(Operation::Pull),
    );
    emulator.inject(Fault::status(503).times(2).only(Operation::Pull));
    let consumer = Consumer::builder(queue.clone())
        // One pull at a time: this test pins the single puller's waits.
        .max_pulls_in_flight(1)
        .build()
        .expect("settings");
    let started = Instant::now();
    let (first, handler) = noting_the_first(started);
    let running = Running::start(consumer, handler);
    running
        .eventually("all acked", STEP, Duration::from_secs(20), |s| s.acked == 5)
        .await;
    // Retry-After 3 s twice, then the backoff: 1 s, 2 s.
    assert_eq!(*first.lock().expect("lock"), Some(Duration::from_secs(9)));
    let summary = running.finish().await;
    assert_eq!((summary.pull_errors, summary.acked), (4, 5));
}

#[tokio::test(start_paused = true)]
async fn failed_ack_flushes_are_tried_again_then_reported() {
    let (emulator, queue) = pushed("flakyacks", 5).await;
    emulator.inject(Fault::status(500).times(2).only(Operation::Ack));
    let consumer = Consumer::builder(queue.clone())
        .ack_interval(Duration::from_millis(100))
        .build()
        .expect("settings");
    let started = Instant::now();
    let running = Running::start(consumer, ack_now);
    running
        .eventually("acked", MS, Duration::from_secs(5), |s| s.acked == 5)
        .await;
    // The interval, then 1 s and 2 s of backoff.
    assert_eq!(started.elapsed(), Duration::from_millis(3_100));
    let summary = running.finish().await;
    assert_counts!(summary, settle_errors: 2, settle_requests: 3, acked: 5);
    assert_eq!(
        (summary.settle_warnings, summary.unflushed),
        (0, 0),
        "acked once"
    );
    assert_drained(&emulator, "flakyacks");

    // When every attempt fails, the acks are tried while their leases can
    // be kept (the 10 s maximum lease: at 0.1, 1.1, 3.1 and 7.1 s; the next
    // would come at 15.1 s), then reported, not lost silently.
    push_texts(&queue, 4).await;
    emulator.inject(Fault::status(500).times(100).only(Operation::Ack));
    let running = Running::start(
        Consumer::builder(queue.clone())
            .visibility_timeout(Duration::from_secs(10))
            .max_lease(Duration::from_secs(10)),
        ack_now,
    );
    running
        .eventually("given up", STEP, Duration::from_secs(60), |s| {
            s.unflushed == 4
        })
        .await;
    let summary = running.finish().await;
    assert_counts!(
        summary,
        settle_errors: 4, settlement_resends: 12, unflushed: 4, acked: 0, in_flight: 0
    );
    emulator.clear_faults();
}

#[tokio::test(start_paused = true)]
async fn a_permanent_pull_failure_stops_the_consumer_with_its_summary() {
    let emulator = emulator_with(|e| e.strict_queues(["known"])).await;
    let queue = queue(&emulator, "unknown");
    let consumer = Consumer::builder(queue)
        // One pull at a time: with more, each of the first ones fails alike.
        .max_pulls_in_flight(1)
        .build()
        .expect("settings");
    let error = consumer.run(ack_now).await.expect_err("no such queue");
    let ConsumerError::Stopped { error, summary } = error else {
        panic!("stopped by the pull: {error}");
    };
    assert!(error.is_not_found(), "{error}");
    assert_eq!((summary.pull_errors, summary.pulls), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn flow_control_pulls_only_free_slots_and_stops_over_the_byte_limit() {
    let (emulator, queue) = pushed("flow", 50).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let running = Running::start(
        Consumer::builder(queue.clone())
            // One pull at a time: with more, the byte limit is passed by
            // what the pulls on their way bring (the bound the docs give).
            .max_pulls_in_flight(1)
            .max_in_flight(7)
            .ack_interval(Duration::from_millis(1))
            .visibility_timeout(LONG_LEASE)
            .max_lease(LONG_LEASE),
        gated(&gate),
    );
    running.until("seven leased", |s| s.received == 7).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let s = running.monitor.snapshot();
    assert_eq!(
        (s.received, s.pulls, s.in_flight),
        (7, 1, 7),
        "no pull while full"
    );
    gate.add_permits(3);
    running
        .eventually("three more", MS, SECOND, |s| s.received == 10)
        .await;
    assert_eq!(
        running.monitor.snapshot().pulls,
        2,
        "one pull for the three free slots"
    );
    gate.add_permits(1_000);
    running.finish().await;

    // Over the byte limit, nothing more is pulled until bytes are freed.
    let bulky = queue_with_bulky_messages(&emulator).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let running = Running::start(
        Consumer::builder(bulky)
            // One pull at a time: with more, the byte limit is passed by
            // what the pulls on their way bring (the bound the docs give).
            .max_pulls_in_flight(1)
            .batch_size(2)
            .max_bytes_in_flight(1_000)
            .ack_interval(Duration::from_millis(1)),
        gated(&gate),
    );
    running.until("first pull", |s| s.received == 2).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let s = running.monitor.snapshot();
    assert_eq!((s.pulls, s.in_flight_bytes), (1, 1_200));
    gate.add_permits(1);
    running
        .eventually("pulled again", MS, SECOND, |s| s.received == 4)
        .await;
    assert_eq!(running.monitor.snapshot().pulls, 2);
    gate.add_permits(1_000);
    running.finish().await;
}

async fn queue_with_bulky_messages(
    emulator: &cf_queues_emulator::EmulatorHandle,
) -> cf_queues::Queue {
    let bulky = queue(emulator, "bulky");
    let report = bulky
        .push_all((0..10).map(|_| Message::text("x".repeat(600))), 1)
        .await;
    assert!(report.all_landed());
    bulky
}

#[tokio::test(start_paused = true)]
async fn stream_handles_settle_and_an_unsettled_drop_retries() {
    use futures_util::StreamExt as _;
    let (emulator, queue) = fresh("streamed").await;
    for body in ["a", "b", "c"] {
        queue.push(Message::text(body)).await.expect("push");
    }
    let consumer = Consumer::builder(queue.clone())
        .retry_delay(RetryDelay::none())
        .ack_interval(Duration::from_millis(10))
        .build()
        .expect("settings");
    let stop = consumer.shutdown_token();
    let mut stream = consumer.stream();
    let mut order = Vec::new();
    while let Some(leased) = stream.next().await {
        let body = leased.message().body().text().expect("text").to_owned();
        order.push((body.clone(), leased.message().attempts));
        match (body.as_str(), leased.message().attempts) {
            ("b", 1) => drop(leased),
            _ => assert!(leased.ack()),
        }
        if order.len() == 4 {
            stop.cancel();
        }
    }
    let summary = stream.finish().await.expect("no fatal error");
    let order: Vec<(&str, u32)> = order.iter().map(|(b, a)| (b.as_str(), *a)).collect();
    assert_eq!(order, [("a", 1), ("b", 1), ("c", 1), ("b", 2)]);
    assert_counts!(summary, received: 4, handled: 3, acked: 3, retried: 1);
    assert_drained(&emulator, "streamed");
}

#[tokio::test(start_paused = true)]
async fn poison_messages_go_to_their_callback_never_to_the_handler() {
    let (emulator, queue) = fresh("poisoned").await;
    emulator.push_from_worker("poisoned", WorkerBody::V8(vec![0xff, 0x0d]));
    queue.push(Message::text("fine")).await.expect("push");
    let poisoned: Arc<Mutex<Vec<String>>> = Arc::default();
    let handled: Arc<Mutex<Vec<String>>> = Arc::default();
    let (p, h) = (Arc::clone(&poisoned), Arc::clone(&handled));
    let consumer = Consumer::builder(queue.clone())
        .on_poison(move |message, error| {
            let p = Arc::clone(&p);
            async move {
                assert!(matches!(error, BodyError::UnsupportedContentType { .. }));
                p.lock()
                    .expect("lock")
                    .push(message.content_type().to_string());
                Verdict::Ack
            }
        })
        .build()
        .expect("settings");
    let running = Running::start(consumer, move |message| {
        let h = Arc::clone(&h);
        async move {
            h.lock()
                .expect("lock")
                .push(message.body().text()?.to_owned());
            Ok::<_, BodyError>(Verdict::Ack)
        }
    });
    running
        .eventually("both acked", MS, SECOND, |s| s.acked == 2)
        .await;
    let summary = running.finish().await;
    assert_eq!(*poisoned.lock().expect("lock"), ["v8"]);
    assert_eq!(*handled.lock().expect("lock"), ["fine"]);
    assert_eq!((summary.poisoned, summary.handled), (1, 1));

    // Without a callback, a poison message is retried towards the dead-letter queue.
    emulator.push_from_worker("poisoned", WorkerBody::V8(vec![1]));
    let consumer = Consumer::builder(queue.clone()).build().expect("settings");
    let running = Running::start(consumer, ack_now);
    running
        .eventually("retried", MS, SECOND, |s| s.retried == 1)
        .await;
    let summary = running.finish().await;
    assert_eq!(
        (summary.poisoned, summary.handled, summary.acked),
        (1, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_batch_handler_settles_each_message_of_a_pull() {
    let (emulator, queue) = pushed("batched", 10).await;
    let sizes: Arc<Mutex<Vec<usize>>> = Arc::default();
    let seen = Arc::clone(&sizes);
    let consumer = Consumer::builder(queue.clone())
        .batch_size(10)
        .build()
        .expect("settings");
    let running = Running::start_batch(consumer, move |messages| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock().expect("lock").push(messages.len());
            let mut outcomes = Vec::new();
            for message in &messages {
                let n: u32 = message.body().text()?[1..].parse().unwrap_or(0);
                outcomes.push(if n.is_multiple_of(2) {
                    Verdict::Ack
                } else {
                    Verdict::Retry(Some(Duration::from_secs(600)))
                });
            }
            Ok::<_, BodyError>(outcomes)
        }
    });
    eventually("settled", MS, SECOND, || {
        let s = running.monitor.snapshot();
        s.acked == 5 && s.retried == 5
    })
    .await;
    let summary = running.finish().await;
    assert_eq!(*sizes.lock().expect("lock"), [10]);
    assert_eq!((summary.handled, summary.settle_requests), (10, 1));
    assert_eq!(emulator.metrics("batched").backlog_count, 5);
}

/// A Workflow's event, as Cloudflare documents it, read by a consumer.
#[derive(Debug, PartialEq, serde::Deserialize)]
struct WorkflowEvent {
    #[serde(rename = "type")]
    kind: String,
    source: WorkflowSource,
    payload: WorkflowPayload,
    metadata: EventMetadata,
}

#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkflowSource {
    #[serde(rename = "type")]
    kind: String,
    workflow_name: String,
}

#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkflowPayload {
    version_id: String,
    instance_id: String,
}

#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventMetadata {
    account_id: String,
    event_subscription_id: String,
    event_schema_version: u32,
    event_timestamp: String,
}

/// Events the emulator emits reach a consumer like any message, and
/// decode into the types a consumer of Cloudflare's events would write.
#[tokio::test(start_paused = true)]
async fn emitted_events_are_consumed_and_decoded_into_typed_events() {
    use cf_queues::event_subscriptions::{EventSource, NewEventSubscription, events};
    use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, EventToEmit};

    let (emulator, _clock) = cf_queues_testkit::emulators::emulator_on_tokio_time().await;
    let queue = cf_queues_testkit::clients::created_pull_queue(&emulator, "workflow-events").await;
    let source = EventSource::WorkflowsWorkflow {
        workflow_name: "checkout".into(),
    };
    let subscription = queue
        .create_event_subscription(NewEventSubscription::new(source, events::workflows::ALL))
        .await
        .expect("subscribed");
    for (event, instance) in [("instance.started", "i-1"), ("instance.errored", "i-2")] {
        let emit = EventToEmit::new("workflows.workflow", event).field("instanceId", instance);
        assert_eq!(emulator.emit_event(emit).expect("emitted").len(), 1);
    }

    let seen: Arc<Mutex<Vec<WorkflowEvent>>> = Arc::default();
    let consumer = Consumer::builder(queue.clone())
        .build()
        .expect("valid settings");
    let noted = Arc::clone(&seen);
    let running = Running::start(consumer, move |message| {
        let noted = Arc::clone(&noted);
        async move {
            let event: WorkflowEvent = message.body().json()?;
            noted.lock().expect("lock").push(event);
            Ok::<_, BodyError>(Verdict::Ack)
        }
    });
    eventually("both events handled", STEP, Duration::from_secs(10), || {
        seen.lock().expect("lock").len() == 2
    })
    .await;
    let summary = running.finish().await;
    assert_eq!((summary.handled, summary.acked), (2, 2));
    let mut seen = std::mem::take(&mut *seen.lock().expect("lock"));
    seen.sort_by(|a, b| a.kind.cmp(&b.kind));
    let id = subscription.id.unwrap_or_default();
    let expected = |kind: &str, instance: &str| WorkflowEvent {
        kind: format!("cf.workflows.workflow.{kind}"),
        source: WorkflowSource {
            kind: "workflows.workflow".into(),
            workflow_name: "checkout".into(),
        },
        payload: WorkflowPayload {
            version_id: "v1".into(),
            instance_id: instance.into(),
        },
        metadata: EventMetadata {
            account_id: EMULATOR_ACCOUNT_ID.into(),
            event_subscription_id: id.clone(),
            event_schema_version: 1,
            event_timestamp: seen[0].metadata.event_timestamp.clone(),
        },
    };
    assert_eq!(
        seen,
        [
            expected("instance.errored", "i-2"),
            expected("instance.started", "i-1")
        ]
    );
    assert!(seen[0].metadata.event_timestamp.ends_with('Z'));
}
