//! The consumer's life on tokio's paused clock, beside `consumer.rs`:
//! settings too long for the clock, panics of its own tasks, the empty-pull
//! backoff, `Verdict::Leave`, `Leased::extend`, and a shutdown that meets a
//! pull on its way.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues::PullOptions;
use cf_queues::consumer::{Consumer, Verdict};
use cf_queues::error::BodyError;
use cf_queues_emulator::{Fault, Operation};
use tokio::time::Instant;

use crate::ack_now;
use crate::support::{
    Running, STEP, assert_backlog, assert_counts, assert_drained, fresh, pushed, pushed_to,
};
use cf_queues_testkit::clients::{LONG_LEASE, push_texts};
use cf_queues_testkit::emulators::emulator_on_tokio_time;
use cf_queues_testkit::wait::until;

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn durations_too_long_for_the_clock_mean_never() {
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "forever", 5).await;
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(Duration::from_secs(3))
        .ack_batch_size(2)
        // Flushed by size only, never capped, every handler waited for.
        .ack_interval(Duration::MAX)
        .max_lease(Duration::MAX)
        .grace_period(Duration::MAX)
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let running = Running::start(consumer, |message| async move {
        // m0 outlives three leases; the others are acked at once.
        if message.body().text()? == "m0" {
            tokio::time::sleep(Duration::from_secs(9)).await;
        }
        Ok::<_, BodyError>(Verdict::Ack)
    });
    running.until("four acked by size", |s| s.acked == 4).await;
    assert_eq!(running.monitor.snapshot().settle_requests, 2);
    let summary = running.finish().await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(9),
        "grace waited for m0"
    );
    // Extended at 2, 4, 6 and 8 s; its ack went with the shutdown's flush.
    assert_counts!(
        summary,
        acked: 5, settle_requests: 3, extended: 4, leases_lost: 0, max_lease_reached: 0,
        released: 0
    );
    assert_drained(&emulator, "forever");
}

#[tokio::test(start_paused = true)]
async fn empty_pulls_back_off_to_the_cap_and_full_ones_pull_again_at_once() {
    let (_emulator, queue) = fresh("idle").await;
    let consumer = Consumer::builder(queue.clone())
        // One pull at a time: this test pins the single puller's waits.
        .max_pulls_in_flight(1)
        .empty_backoff(Duration::from_millis(100), Duration::from_millis(800))
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let running = Running::start(consumer, ack_now);
    // Waits of 100, 200, 400, then 800 ms at most.
    let empty_at = [0, 100, 300, 700, 1_500, 2_300, 3_100];
    for (n, at) in empty_at.into_iter().enumerate() {
        if at > 0 {
            tokio::time::sleep_until(started + Duration::from_millis(at - 1)).await;
            assert_eq!(
                running.monitor.snapshot().empty_pulls,
                n as u64,
                "before {at} ms"
            );
            tokio::time::sleep(MS).await;
        }
        until("an empty pull", || {
            running.monitor.snapshot().empty_pulls == n as u64 + 1
        })
        .await;
    }
    push_texts(&queue, 250).await;
    tokio::time::sleep_until(started + Duration::from_millis(3_899)).await;
    assert_eq!(running.monitor.snapshot().received, 0, "still backing off");
    tokio::time::sleep(MS).await;
    // 100 and 100 (full: pulled again at once) and 50, without time passing.
    running.until("all received", |s| s.received == 250).await;
    assert_eq!(started.elapsed(), Duration::from_millis(3_900));
    let s = running.monitor.snapshot();
    assert_eq!((s.pulls, s.empty_pulls), (10, 7));
    // After a partial pull the backoff starts over at 100 ms.
    tokio::time::sleep(Duration::from_millis(99)).await;
    assert_eq!(running.monitor.snapshot().pulls, 10);
    tokio::time::sleep(MS).await;
    running.until("pulled again", |s| s.pulls == 11).await;
    let summary = running.finish().await;
    assert_eq!((summary.acked, summary.empty_pulls), (250, 8));
}

#[tokio::test(start_paused = true)]
async fn a_paused_consumer_starts_no_pull_until_resumed() {
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "paused", 3).await;
    let consumer = Consumer::builder(queue.clone())
        .empty_backoff(Duration::from_millis(100), Duration::from_millis(100))
        .build()
        .expect("valid settings");
    let switch = consumer.pull_switch();
    switch.pause();
    let running = Running::start(consumer, ack_now);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let s = running.monitor.snapshot();
    assert_counts!(s, pulls: 0, received: 0);
    assert_backlog(&emulator, "paused", 3);
    switch.resume();
    assert!(!switch.is_paused());
    running
        .eventually("acked", STEP, Duration::from_secs(5), |s| s.acked == 3)
        .await;
    // Paused again: the pulls stop, the consumer still shuts down in order.
    switch.pause();
    let pulls = running.monitor.snapshot().pulls;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        running.monitor.snapshot().pulls,
        pulls,
        "no pull while paused"
    );
    let s = running.finish().await;
    assert_counts!(s, acked: 3, released: 0);
    assert_drained(&emulator, "paused");
}

#[tokio::test(start_paused = true)]
async fn a_message_left_comes_back_after_its_visibility_timeout() {
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "left", 1).await;
    let deliveries: Arc<Mutex<Vec<(u32, Duration)>>> = Arc::default();
    let seen = Arc::clone(&deliveries);
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(Duration::from_secs(3))
        .empty_backoff(Duration::from_millis(100), Duration::from_millis(100))
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let running = Running::start(consumer, move |message| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock()
                .expect("lock")
                .push((message.attempts, started.elapsed()));
            Ok::<_, BodyError>(if message.attempts == 1 {
                Verdict::Leave
            } else {
                Verdict::Ack
            })
        }
    });
    running
        .eventually("acked", STEP, Duration::from_secs(10), |s| s.acked == 1)
        .await;
    let s = running.finish().await;
    assert_eq!(
        *deliveries.lock().expect("lock"),
        [(1, Duration::ZERO), (2, Duration::from_secs(3))],
        "back once its lease ran out, never extended"
    );
    assert_counts!(
        s,
        received: 2, left: 1, acked: 1, retried: 0, extended: 0, leases_lost: 0,
        settle_requests: 1
    );
    assert_drained(&emulator, "left");
}

#[tokio::test(start_paused = true)]
async fn a_stream_handle_extends_its_lease_on_the_server() {
    use futures_util::StreamExt as _;
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "handextended", 1).await;
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(Duration::from_secs(3))
        .build()
        .expect("valid settings");
    let monitor = consumer.monitor();
    let mut stream = consumer.stream();
    let leased = stream.next().await.expect("a message");
    assert!(
        leased
            .extend(Duration::from_secs(60))
            .await
            .expect("extended")
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    // The keeper's next extension is due a margin before the new expiry,
    // at 59 s; the server holds the lease meanwhile.
    assert_eq!(monitor.snapshot().extended, 1);
    let other = queue
        .pull(PullOptions::new().batch_size(10))
        .await
        .expect("pull");
    assert!(other.messages.is_empty(), "still leased");
    assert!(leased.ack());
    let s = stream.finish().await.expect("no fatal error");
    assert_counts!(s, received: 1, extended: 1, acked: 1, leases_lost: 0, settle_warnings: 0);
    assert_drained(&emulator, "handextended");
}

#[tokio::test(start_paused = true)]
async fn a_shutdown_hands_what_the_pull_on_its_way_brings_to_the_handlers() {
    let (emulator, queue) = pushed("inflightpull", 5).await;
    emulator.inject(Fault::stall_only(Duration::from_secs(5)).only(Operation::Pull));
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        // The one pull is the stalled one.
        .max_pulls_in_flight(1)
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let running = Running::start(consumer, ack_now);
    tokio::time::sleep(SECOND).await;
    assert_eq!(
        running.monitor.snapshot().received,
        0,
        "the pull is stalled"
    );
    let s = running.finish().await;
    // The pull lands at 5 s, within the 10 s grace period; the acks go at once.
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(5),
        "the pull was awaited"
    );
    assert_eq!(
        (s.received, s.handled, s.released, s.acked, s.in_flight),
        (5, 5, 0, 5, 0),
        "handled, not released unseen"
    );
    assert_drained(&emulator, "inflightpull");
}

#[tokio::test(start_paused = true)]
async fn a_pull_on_its_way_past_the_grace_period_is_dropped() {
    let (emulator, queue) = pushed("slowpull", 5).await;
    emulator.inject(Fault::stall_only(Duration::from_secs(30)).only(Operation::Pull));
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        .max_pulls_in_flight(1)
        .grace_period(Duration::from_secs(2))
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let running = Running::start(consumer, ack_now);
    tokio::time::sleep(SECOND).await;
    let s = running.finish().await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(3),
        "the grace period bounds it"
    );
    assert_eq!((s.received, s.released, s.unflushed), (0, 0, 0));
    // Nothing was deleted unseen: the messages come back when the leases
    // the dropped pull took expire.
    assert_eq!(emulator.metrics("slowpull").backlog_count, 5);
    assert_eq!(emulator.dead_lettered("slowpull"), 0);
}
