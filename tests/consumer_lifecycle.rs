//! The consumer's life on tokio's paused clock, beside `consumer.rs`:
//! settings too long for the clock, panics of its own tasks, the empty-pull
//! backoff, `Outcome::Leave`, `Leased::extend`, and a shutdown that meets a
//! pull on its way.
#![cfg(all(feature = "emulator", feature = "consumer"))]

mod helpers_support;

use std::time::Duration;

use cf_queues::consumer::{Consumer, Outcome};
use cf_queues::{BodyError, PullOptions};
use tokio::time::Instant;

use helpers_support::{
    LONG_LEASE, ack_now, emulator, emulator_on_tokio_time, push_texts, queue, until,
};

#[tokio::test(start_paused = true)]
async fn durations_too_long_for_the_clock_mean_never() {
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = queue(&emulator, "forever");
    push_texts(&queue, 5).await;
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(Duration::from_secs(3))
        .ack_batch_size(2)
        // Flushed by size only, never capped, every handler waited for.
        .ack_interval(Duration::MAX)
        .max_lease(Duration::MAX)
        .grace_period(Duration::MAX)
        .build()
        .expect("valid settings");
    let monitor = consumer.monitor();
    let stop = consumer.shutdown_token();
    let started = Instant::now();
    let run = tokio::spawn(consumer.run(|message| async move {
        // m0 outlives three leases; the others are acked at once.
        if message.body().text()? == "m0" {
            tokio::time::sleep(Duration::from_secs(9)).await;
        }
        Ok::<_, BodyError>(Outcome::Ack)
    }));
    until("four acked by size", || monitor.snapshot().acked == 4).await;
    assert_eq!(monitor.snapshot().settle_requests, 2);
    stop.cancel();
    let summary = run.await.expect("task").expect("no fatal error");
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(9),
        "grace waited for m0"
    );
    // Extended at 2, 4, 6 and 8 s; its ack went with the shutdown's flush.
    assert_eq!(
        (
            summary.acked,
            summary.settle_requests,
            summary.extended,
            summary.leases_lost,
            summary.max_lease_reached,
            summary.released
        ),
        (5, 3, 4, 0, 0, 0)
    );
    assert_eq!(emulator.metrics("forever").backlog_count, 0);
}

/// A subscriber that panics when the consumer opens a span of one name:
/// a bug inside one of the consumer's own tasks, for the tests.
struct PanicOn(&'static str);

impl tracing::Subscriber for PanicOn {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let metadata = span.metadata();
        if metadata.name() == self.0 && metadata.target().starts_with("cf_queues::consumer") {
            panic!("injected panic in the {} span", self.0);
        }
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn panic_text(error: tokio::task::JoinError) -> String {
    assert!(error.is_panic(), "{error}");
    let payload = error.into_panic();
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_acker_reaches_the_caller_instead_of_a_clean_summary() {
    // The test's runtime is current-thread: every task runs on this thread.
    let _guard = tracing::subscriber::set_default(PanicOn("settle"));
    let emulator = emulator().await;
    let queue = queue(&emulator, "ackerpanic");
    push_texts(&queue, 3).await;
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        .build()
        .expect("valid settings");
    let monitor = consumer.monitor();
    let stop = consumer.shutdown_token();
    let run = tokio::spawn(consumer.run(ack_now));
    until("handled", || monitor.snapshot().handled == 3).await;
    // The acker panics on the shutdown's flush: nothing was acked.
    stop.cancel();
    let error = run.await.expect_err("the panic is resumed");
    assert_eq!(panic_text(error), "injected panic in the settle span");
    assert_eq!(monitor.snapshot().acked, 0);
    assert_eq!(emulator.metrics("ackerpanic").backlog_count, 3);
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_lease_keeper_stops_the_consumer_and_reaches_the_caller() {
    let _guard = tracing::subscriber::set_default(PanicOn("extend"));
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = queue(&emulator, "keeperpanic");
    push_texts(&queue, 1).await;
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(Duration::from_secs(3))
        .grace_period(Duration::from_secs(5))
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let run = tokio::spawn(consumer.run(|_message| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok::<_, BodyError>(Outcome::Ack)
    }));
    // Nobody cancels the token: the keeper's panic at its first extension
    // (2 s) stops the consumer, which gives the handler its grace period.
    let ended = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the consumer stopped on its own");
    let error = ended.expect_err("the panic is resumed");
    assert_eq!(panic_text(error), "injected panic in the extend span");
    assert_eq!(started.elapsed(), Duration::from_secs(7), "2 s + grace");
    // The acker still worked: the message was released, not left to expire.
    let back = queue
        .pull(PullOptions::new().batch_size(10))
        .await
        .expect("pull");
    let attempts: Vec<u32> = back.messages.iter().map(|m| m.attempts).collect();
    assert_eq!(attempts, [2]);
}
