//! The producer against the emulator, on tokio's paused clock: batches are
//! cut and sent as the limits allow, after the linger or at once when
//! full, and every sender gets its own outcome, also under injected faults.

use std::time::Duration;

use cf_queues::producer::{Producer, ProducerError};
use cf_queues::retry::{PushRetries, RetryPolicy};
use cf_queues::{Message, PullOptions, Queue};
use cf_queues_emulator::{Fault, Operation};
use futures_util::future::join_all;
use tokio::time::Instant;

use crate::support::{all_landed, assert_backlog, fresh, handed_over, spawn_sends};
use cf_queues_testkit::clients::{queue, texts};
use cf_queues_testkit::emulators::emulator;
use cf_queues_testkit::wait::until;

/// A producer on `queue` that waits up to `linger` for a batch to fill.
fn lingering(queue: &Queue, linger: Duration) -> Producer {
    let builder = Producer::builder(queue.clone()).linger(linger);
    builder.build().expect("settings")
}

#[tokio::test(start_paused = true)]
async fn sends_the_fewest_requests_the_count_and_byte_limits_allow() {
    let (emulator, queue) = fresh("fewest").await;
    let producer = Producer::builder(queue.clone()).build().expect("settings");
    let outcomes = join_all(texts(250).into_iter().map(|m| producer.send(m))).await;
    assert!(outcomes.iter().all(Result::is_ok));
    assert_eq!(emulator.requests_received(), 3, "100 + 100 + 50");

    // 3,000 bytes and 100 of metadata each: 82 fit in 256,000 bytes.
    let bulky = (0..200).map(|_| Message::text("x".repeat(3_000)));
    let outcomes = join_all(bulky.map(|m| producer.send(m))).await;
    assert!(outcomes.iter().all(Result::is_ok));
    assert_eq!(emulator.requests_received(), 6, "82 + 82 + 36");
    let stats = producer.close().await;
    assert_eq!((stats.landed, stats.batches, stats.failed), (450, 6, 0));
    assert_backlog(&emulator, "fewest", 450);
}

#[tokio::test(start_paused = true)]
async fn a_partial_batch_goes_after_the_linger_and_a_full_one_at_once() {
    let (emulator, queue) = fresh("linger").await;
    let producer = lingering(&queue, Duration::from_millis(20));
    let started = Instant::now();
    let sends = handed_over(&producer, 3, 3).await;
    tokio::time::sleep(Duration::from_millis(19)).await;
    assert_eq!(emulator.requests_received(), 0, "still lingering");
    all_landed(sends).await;
    assert_eq!(started.elapsed(), Duration::from_millis(20));
    assert_eq!(emulator.requests_received(), 1);

    let started = Instant::now();
    let outcomes = join_all(texts(100).into_iter().map(|m| producer.send(m))).await;
    assert!(outcomes.iter().all(Result::is_ok));
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "a full batch does not linger"
    );
    assert_eq!(emulator.requests_received(), 2);
}

#[tokio::test(start_paused = true)]
async fn every_sender_gets_its_own_outcome_under_failures() {
    let (emulator, queue) = fresh("outcomes").await;
    emulator.inject(Fault::status(500).only(Operation::Batch));
    let producer = Producer::builder(queue.clone()).build().expect("settings");
    let mut messages = texts(151);
    messages[120] = Message::text("x".repeat(200_000));
    let outcomes = join_all(messages.into_iter().map(|m| producer.send(m))).await;

    let mut failed = Vec::new();
    let mut landed = Vec::new();
    for (i, outcome) in outcomes.iter().enumerate() {
        match outcome {
            Ok(_) => landed.push(i),
            Err(ProducerError::Failed(error)) => {
                assert_eq!(error.status(), Some(500));
                failed.push(i);
            }
            Err(ProducerError::Rejected(error)) => {
                assert_eq!(i, 120);
                assert!(matches!(**error, cf_queues::Error::InvalidInput { .. }));
            }
            Err(other) => panic!("message {i}: {other}"),
        }
    }
    // The first batch met the 500 (this client does not retry; how retries
    // treat a 500 is tested below); the second landed.
    assert_eq!(failed, (0..100).collect::<Vec<_>>());
    assert_eq!(landed, (100..151).filter(|&i| i != 120).collect::<Vec<_>>());
    assert_eq!(emulator.requests_received(), 2);
    assert_backlog(&emulator, "outcomes", 50);
    let stats = producer.stats();
    assert_eq!(
        (stats.accepted, stats.landed, stats.failed, stats.rejected),
        (151, 50, 100, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn a_full_buffer_holds_senders_back() {
    let (emulator, queue) = fresh("backpressure").await;
    emulator.inject(Fault::stall_only(Duration::from_secs(10)).only(Operation::Batch));
    let producer = Producer::builder(queue.clone())
        .max_buffered(10)
        .max_concurrent_batches(1)
        .build()
        .expect("settings");
    let sends = spawn_sends(&producer, texts(1_000));
    until("the buffer fills", || producer.stats().accepted == 200).await;
    for _ in 0..1_000 {
        tokio::task::yield_now().await;
    }
    // One batch stalled on its way, a full one waiting for it, ten in the buffer.
    let stats = producer.stats();
    assert_eq!(
        (stats.accepted, stats.batches, stats.in_flight),
        (200, 1, 100)
    );
    all_landed(sends).await;
    assert_eq!(producer.stats().batches, 10);
    assert_backlog(&emulator, "backpressure", 1_000);
}

#[tokio::test(start_paused = true)]
async fn flush_close_and_drop_push_what_was_handed_over() {
    let (emulator, queue) = fresh("closing").await;
    let producer = lingering(&queue, Duration::from_secs(3600));

    let started = Instant::now();
    let pending = handed_over(&producer, 5, 5).await;
    producer.flush().await;
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "flush does not wait for the linger"
    );
    assert_eq!(producer.stats().landed, 5);
    all_landed(pending).await;

    let pending = handed_over(&producer, 3, 8).await;
    let clone = producer.clone();
    let stats = producer.close().await;
    assert_eq!((stats.landed, stats.batches), (8, 2));
    for send in pending {
        send.await
            .expect("task")
            .expect("landed before close returned");
    }
    match clone.send(Message::text("late")).await {
        Err(ProducerError::Closed(message)) => assert_eq!(*message, Message::text("late")),
        other => panic!("closed for every handle: {other:?}"),
    }

    // Dropping the last handle pushes what it holds, in the background.
    let producer = lingering(&queue, Duration::from_secs(3600));
    let pending = handed_over(&producer, 4, 4).await;
    let dropped_at = Instant::now();
    drop(producer);
    for send in pending {
        send.await.expect("task").expect("landed after the drop");
    }
    assert_eq!(
        dropped_at.elapsed(),
        Duration::ZERO,
        "sent at the drop, not after the linger"
    );
    assert_backlog(&emulator, "closing", 12);
    let rest = queue
        .pull(PullOptions::new().batch_size(100))
        .await
        .expect("pull");
    assert_eq!(rest.messages.len(), 12);
}

#[tokio::test(start_paused = true)]
async fn a_linger_too_long_for_the_clock_sends_when_full_or_flushed() {
    let (emulator, queue) = fresh("nolinger").await;
    let producer = lingering(&queue, Duration::MAX);
    let pending = handed_over(&producer, 3, 3).await;
    tokio::time::sleep(Duration::from_secs(86_400)).await;
    assert_eq!(
        emulator.requests_received(),
        0,
        "a day later, still waiting"
    );
    producer.flush().await;
    for send in pending {
        send.await.expect("task").expect("landed at the flush");
    }
    let started = Instant::now();
    let outcomes = join_all(texts(100).into_iter().map(|m| producer.send(m))).await;
    assert!(outcomes.iter().all(Result::is_ok));
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "a full batch goes at once"
    );
    assert_eq!(emulator.requests_received(), 2);
    assert_backlog(&emulator, "nolinger", 103);
}

/// A retrying policy with a short backoff, pushes retried as `pushes` says.
fn retrying(pushes: PushRetries) -> RetryPolicy {
    RetryPolicy::default()
        .backoff(Duration::from_millis(10), Duration::from_millis(10))
        .pushes(pushes)
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_batch_is_retried_and_lands_once() {
    let emulator = emulator().await;
    let queue = queue(&emulator, "throttled").with_retry(retrying(PushRetries::OnlyIfNotLanded));
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .only(Operation::Batch),
    );
    let producer = Producer::builder(queue).build().expect("settings");
    let outcomes = join_all(texts(100).into_iter().map(|m| producer.send(m))).await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    // Refused for its rate, so surely not landed: sent again, once.
    assert_eq!(emulator.requests_received(), 2);
    assert_backlog(&emulator, "throttled", 100);
    let stats = producer.close().await;
    assert_eq!((stats.batches, stats.landed, stats.failed), (1, 100, 0));
}

#[tokio::test(start_paused = true)]
async fn a_batch_that_met_a_500_is_sent_again_only_at_least_once() {
    for (pushes, requests, backlog) in [
        (PushRetries::OnlyIfNotLanded, 1, 0),
        (PushRetries::AtLeastOnce, 2, 100),
    ] {
        let emulator = emulator().await;
        let queue = queue(&emulator, "uncertain").with_retry(retrying(pushes));
        emulator.inject(Fault::status(500).only(Operation::Batch));
        let producer = Producer::builder(queue).build().expect("settings");
        let outcomes = join_all(texts(100).into_iter().map(|m| producer.send(m))).await;
        for outcome in &outcomes {
            match (pushes, outcome) {
                (PushRetries::OnlyIfNotLanded, Err(ProducerError::Failed(error))) => {
                    assert_eq!(error.status(), Some(500));
                }
                (PushRetries::AtLeastOnce, Ok(_)) => {}
                (_, other) => panic!("{pushes:?}: {other:?}"),
            }
        }
        assert_eq!(emulator.requests_received(), requests, "{pushes:?}");
        assert_eq!(
            emulator.metrics("uncertain").backlog_count,
            backlog,
            "{pushes:?}"
        );
    }
}
