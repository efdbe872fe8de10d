//! The producer against batches refused for the rate (a 429 with code 971
//! or 10250: nothing landed), on tokio's paused clock: such a batch is held
//! and sent again until its send timeout, each send lands exactly once, and
//! a send whose timeout passes says so, and that nothing landed.

use std::time::Duration;

use cf_queues::Message;
use cf_queues::producer::{Producer, ProducerError};
use cf_queues_emulator::{EmulatorHandle, Fault, Operation};
use futures_util::future::join_all;
use tokio::time::Instant;

use crate::support::fresh;
use cf_queues_testkit::clients::queue;
use cf_queues_testkit::emulators::emulator;

/// The two refusals that say nothing landed: the token's budget and the
/// queue's own rate.
const REFUSALS: [(u32, &str); 2] = [
    (
        971,
        "Please wait and consider throttling your request speed",
    ),
    (10250, "QueueOverloaded"),
];

fn refusals(code: u32, message: &str, times: usize) -> Fault {
    Fault::status(429)
        .cloudflare_error(code, message)
        .retry_after(Duration::from_secs(1))
        .only(Operation::Batch)
        .times(times)
}

/// Sends `count` messages named `{prefix}{i}` from `tasks` spawned tasks,
/// each sending its share one after another, and returns every outcome.
async fn send_from_tasks(
    producer: &Producer,
    prefix: &str,
    tasks: usize,
    count: usize,
) -> Vec<Result<cf_queues::response::PushReceipt, ProducerError>> {
    let per_task = count / tasks;
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let producer = producer.clone();
            let prefix = prefix.to_owned();
            tokio::spawn(async move {
                let sends = (0..per_task).map(|i| {
                    producer.send(Message::text(format!("{prefix}{}", task * per_task + i)))
                });
                join_all(sends).await
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(count);
    for handle in handles {
        outcomes.extend(handle.await.expect("task"));
    }
    outcomes
}

fn backlog(emulator: &EmulatorHandle, queue: &str) -> u64 {
    emulator.metrics(queue).backlog_count
}

#[tokio::test(start_paused = true)]
async fn five_refusals_in_a_row_then_every_send_lands_once() {
    for (code, message) in REFUSALS {
        let emulator = emulator().await;
        // No retries in the call path: every resend is the producer's.
        let queue = queue(&emulator, "refused");
        emulator.inject(refusals(code, message, 5));
        let producer = Producer::builder(queue).build().expect("settings");
        let outcomes = send_from_tasks(&producer, "m", 24, 6_000).await;
        for outcome in &outcomes {
            outcome.as_ref().unwrap_or_else(|e| panic!("{code}: {e}"));
        }
        let stats = producer.close().await;
        assert_eq!((stats.landed, stats.failed), (6_000, 0), "{code}");
        assert_eq!(stats.held, 5, "{code}: one resend per refusal");
        assert_eq!(
            emulator.requests_received(),
            stats.batches + 5,
            "{code}: nothing sent but the batches and their resends"
        );
        assert_eq!(backlog(&emulator, "refused"), 6_000, "{code}: exactly once");
    }
}

/// Sends `count` messages, `{prefix}0`, `{prefix}1`, ..., each of which
/// must land despite the refusals of `code`.
async fn all_sent_land(producer: &Producer, prefix: &str, count: usize, code: u32) {
    let send = |i| producer.send(Message::text(format!("{prefix}{i}")));
    for outcome in join_all((0..count).map(send)).await {
        outcome.unwrap_or_else(|e| panic!("{code}: {e}"));
    }
}

#[tokio::test(start_paused = true)]
async fn each_resend_waits_for_the_retry_after() {
    for (code, message) in REFUSALS {
        let (emulator, queue) = fresh("patient").await;
        emulator.inject(refusals(code, message, 3));
        let producer = Producer::builder(queue).build().expect("settings");
        let started = Instant::now();
        all_sent_land(&producer, "m", 100, code).await;
        // Three refusals, each asking for a second: the first two resends
        // wait it, the third the retry policy's backoff of 2 s (1.5 to 2 s
        // with its jitter), which the server's figure never shortens.
        let took = started.elapsed();
        assert!(
            (Duration::from_millis(3_500)..=Duration::from_secs(4)).contains(&took),
            "{code}: {took:?}"
        );
        let stats = producer.close().await;
        assert_eq!((stats.landed, stats.held, stats.batches), (100, 3, 1));
        assert_eq!(
            emulator.requests_received(),
            4,
            "{code}: 1 batch, 3 resends"
        );
        assert_eq!(backlog(&emulator, "patient"), 100, "{code}");
    }
}

#[tokio::test(start_paused = true)]
async fn refusals_past_the_send_timeout_fail_and_later_sends_land() {
    for (code, message) in REFUSALS {
        let (emulator, queue) = fresh("late").await;
        // Five refusals fill the first batch's ten seconds (resent after
        // 1, 1, 2 and 4 s: the second each refusal asks for, or the retry
        // policy's backoff when longer; the next would go after 8 s); the
        // next batch meets the last two, then lands.
        emulator.inject(refusals(code, message, 7));
        let producer = Producer::builder(queue)
            .send_timeout(Duration::from_secs(10))
            .build()
            .expect("settings");
        let started = Instant::now();
        let outcomes = join_all((0..100).map(|i| producer.send(Message::text(format!("a{i}")))));
        for outcome in outcomes.await {
            let error = outcome.expect_err("refused until the timeout");
            let ProducerError::TimedOut {
                timeout,
                attempts,
                last,
                ..
            } = &error
            else {
                panic!("{code}: expected TimedOut, got {error:?}");
            };
            assert_eq!((*timeout, *attempts), (Duration::from_secs(10), 5));
            assert_eq!((last.status(), last.codes()), (Some(429), vec![code]));
            assert!(!error.may_have_landed(), "{code}: {error}");
            assert_eq!(error.error().map(cf_queues::Error::status), Some(Some(429)));
        }
        // At 1 + 1 + 2 + 4 s (less the backoff's jitter, at most a quarter
        // of each backoff).
        let failed_after = started.elapsed();
        assert!(
            (Duration::from_millis(6_500)..=Duration::from_secs(8)).contains(&failed_after),
            "{code}: failed as soon as no resend could go in time, not after {failed_after:?}"
        );
        all_sent_land(&producer, "b", 100, code).await;
        let stats = producer.close().await;
        assert_eq!((stats.landed, stats.failed), (100, 100), "{code}");
        assert_eq!(emulator.requests_received(), 8, "{code}: 5 + 2 + 1");
        assert_eq!(backlog(&emulator, "late"), 100, "{code}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_send_timeout_of_zero_sends_each_batch_once() {
    let (emulator, queue) = fresh("once").await;
    emulator.inject(refusals(10250, "QueueOverloaded", 1));
    let producer = Producer::builder(queue)
        .send_timeout(Duration::ZERO)
        .build()
        .expect("settings");
    let outcomes = join_all((0..3).map(|i| producer.send(Message::text(format!("m{i}")))));
    for outcome in outcomes.await {
        let error = outcome.expect_err("not resent");
        assert!(
            matches!(error, ProducerError::TimedOut { attempts: 1, .. }),
            "{error:?}"
        );
        assert!(!error.may_have_landed());
    }
    assert_eq!(emulator.requests_received(), 1);
    assert_eq!(backlog(&emulator, "once"), 0);
}
