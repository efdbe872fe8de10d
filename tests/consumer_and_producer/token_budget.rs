//! The client and the producer within a token's budget, against
//! the emulator's per-credential window on tokio's paused clock (the
//! emulator's limits follow it, so windows and blocks pass at once): the
//! pacing by the `Ratelimit` headers, the five-minute block, the producer
//! filling its batches while it waits, and what a failed batch says.

use std::time::Duration;

use cf_queues::producer::{Producer, ProducerError};
use cf_queues::ratelimit::RateLimits;
use cf_queues::retry::RetryPolicy;
use cf_queues::{Client, Error, Message, Queue};
use cf_queues_emulator::{EmulatorHandle, Fault, Latency, Operation, RateLimitModel};
use cf_queues_testkit::clients::texts;
use cf_queues_testkit::emulators::{emulator, emulator_on_tokio_clock, emulator_with};
use futures_util::future::join_all;

use crate::support::{all_landed, client, sends_every};
use tokio::time::Instant;

const BLOCK: Duration = Duration::from_secs(300);

/// An emulator on the test's paused clock with a window of `requests` per
/// `window` and Cloudflare's five-minute block.
async fn limited(requests: u32, window: Duration) -> EmulatorHandle {
    let model = RateLimitModel::cloudflare().per_credential(requests, window, BLOCK);
    emulator_on_tokio_clock(1_700_000_000_000, |e| e.rate_limits(model)).await
}

fn queue(client: &Client, id: &str) -> Queue {
    client.queue(id).expect("queue id")
}

/// Triggers the block from another "process": a client that does not pace.
async fn trigger_block(emulator: &EmulatorHandle, requests: u32) -> Error {
    let rogue = queue(&client(emulator, RateLimits::none()), "rogue");
    for _ in 0..requests {
        rogue
            .push(Message::text("x"))
            .await
            .expect("within the window");
    }
    rogue
        .push(Message::text("over"))
        .await
        .expect_err("over the window")
}

#[tokio::test(start_paused = true)]
async fn a_follower_reads_the_headers_and_never_exceeds_the_window() {
    // 20 per 10 s: the pacer aims at 19, a burst of 1 and 1.8 a second.
    let emulator = limited(20, Duration::from_secs(10)).await;
    let paced = queue(&client(&emulator, RateLimits::default()), "paced");
    let started = Instant::now();
    let pushes = (0..60).map(|i| paced.push(Message::text(format!("m{i}"))));
    let outcomes = join_all(pushes).await;
    for outcome in &outcomes {
        outcome
            .as_ref()
            .expect("never refused: the window is never exceeded");
    }
    // The first goes alone, then 59 at 1.8 a second.
    let took = started.elapsed().as_secs_f64();
    assert!((32.0..34.0).contains(&took), "{took} s");
    assert_eq!(emulator.metrics("paced").backlog_count, 60);

    // Without the pacing, the same burst is blocked at the 21st request.
    let unpaced = queue(&client(&emulator, RateLimits::none()), "unpaced");
    tokio::time::advance(Duration::from_secs(10)).await;
    let outcomes = join_all((0..30).map(|_| unpaced.push(Message::text("x")))).await;
    let refused = outcomes.iter().filter(|o| o.is_err()).count();
    assert_eq!(refused, 10, "20 admitted, then the block");
}

#[tokio::test(start_paused = true)]
async fn a_block_fails_the_call_at_once_and_the_next_ones_unsent() {
    let emulator = limited(3, Duration::from_secs(60)).await;
    let blocked = trigger_block(&emulator, 3).await;
    assert_eq!((blocked.status(), blocked.codes()), (Some(429), vec![971]));

    // Another client of the token, with the default retries.
    let paced = queue(&client(&emulator, RateLimits::default()), "paced");
    let started = Instant::now();
    let error = paced.push(Message::text("a")).await.expect_err("blocked");
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "not retried within the block"
    );
    assert!(error.is_rate_limited(), "{error}");
    assert_eq!(error.retry_after(), Some(BLOCK));
    assert_eq!(error.attempts(), 1);
    assert!(!error.may_have_landed());

    // The pacer read the block: the next counted call is not even sent.
    let sent = emulator.requests_received();
    tokio::time::advance(Duration::from_secs(10)).await;
    let error = paced.push(Message::text("b")).await.expect_err("held");
    let Error::RateLimited {
        retry_after,
        attempts: 0,
        ..
    } = &error
    else {
        panic!("expected RateLimited, got {error:?}");
    };
    assert_eq!(*retry_after, BLOCK - Duration::from_secs(10));
    assert_eq!(error.retry_after(), Some(*retry_after));
    assert_eq!(emulator.requests_received(), sent, "nothing sent");
    // Calls that do not count are not held by the client (the server
    // refuses them during the block).
    let pulled = paced.pull(cf_queues::PullOptions::new()).await;
    assert_eq!(pulled.map(drop).map_err(|e| e.status()), Err(Some(429)));
    assert_eq!(emulator.requests_received(), sent + 1);

    tokio::time::advance(BLOCK).await;
    paced
        .push(Message::text("c"))
        .await
        .expect("the block is over");
}

#[tokio::test(start_paused = true)]
async fn the_producer_holds_its_batches_through_a_block() {
    let emulator = limited(3, Duration::from_secs(60)).await;
    trigger_block(&emulator, 3).await;
    let started = Instant::now();
    let paced = client(&emulator, RateLimits::default());
    let producer = Producer::builder(queue(&paced, "held"))
        .build()
        .expect("settings");
    let outcomes = join_all(texts(250).into_iter().map(|m| producer.send(m))).await;
    for outcome in &outcomes {
        outcome.as_ref().expect("landed after the block");
    }
    assert!(started.elapsed() >= BLOCK, "{:?}", started.elapsed());
    let stats = producer.close().await;
    assert_eq!((stats.landed, stats.failed), (250, 0));
    assert_eq!(
        stats.held, 1,
        "the batch refused by the block, sent again after it"
    );
    assert_eq!(emulator.metrics("held").backlog_count, 250);
}

#[tokio::test(start_paused = true)]
async fn the_producer_fills_its_batch_while_it_waits_for_the_budget() {
    // 20 per 10 s: about 1.8 batches a second after the first.
    let emulator = limited(20, Duration::from_secs(10)).await;
    let paced = client(&emulator, RateLimits::default());
    let producer = Producer::builder(queue(&paced, "steady"))
        .build()
        .expect("settings");
    // 20 messages a second for 30 s, each lingering 5 ms only.
    let sends = sends_every(&producer, 600, Duration::from_millis(50)).await;
    all_landed(sends).await;
    let stats = producer.close().await;
    assert_eq!((stats.landed, stats.throttled), (600, 0));
    // 600 one-message batches without filling; the budget allows about 56.
    assert!(stats.batches <= 60, "{} batches", stats.batches);
    assert_eq!(emulator.metrics("steady").backlog_count, 600);
}

#[tokio::test(start_paused = true)]
async fn the_producer_fills_its_batch_while_it_waits_for_a_slot() {
    let emulator =
        emulator_with(|e| e.latency(Latency::round_trip(Duration::from_millis(100)))).await;
    let producer = Producer::builder(queue(&client(&emulator, RateLimits::none()), "slot"))
        .max_concurrent_batches(1)
        .build()
        .expect("settings");
    // A message every 10 ms, one batch in flight for 100 ms at a time.
    let sends = sends_every(&producer, 200, Duration::from_millis(10)).await;
    all_landed(sends).await;
    let stats = producer.close().await;
    assert_eq!(stats.landed, 200);
    // Each batch fills for the whole round trip of the one before: about
    // ten messages each, where a batch sealed before waiting has one.
    assert!(stats.batches <= 25, "{} batches", stats.batches);
}

#[tokio::test(start_paused = true)]
async fn a_429_lowers_the_batches_in_flight() {
    let emulator =
        emulator_with(|e| e.latency(Latency::round_trip(Duration::from_millis(100)))).await;
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .retry_after(Duration::from_secs(1))
            .only(Operation::Batch)
            .times(1),
    );
    let client = cf_queues_testkit::clients::client(&emulator, RetryPolicy::none());
    let producer = Producer::builder(queue(&client, "overloaded"))
        .build()
        .expect("settings");
    let sends: Vec<_> = texts(2_000)
        .into_iter()
        .map(|m| tokio::spawn(producer.send(m)))
        .collect();
    while producer.stats().slowdowns == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // For the next round trip, two batches at most; the limit climbs back
    // by one after as many successes as it allows.
    let mut most_in_flight = 0;
    for _ in 0..10 {
        most_in_flight = most_in_flight.max(producer.stats().in_flight);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for send in sends {
        send.await
            .expect("task")
            .expect("refused once, nothing landed: sent again");
    }
    let stats = producer.close().await;
    assert_eq!((stats.throttled, stats.slowdowns, stats.held), (1, 1, 1));
    assert_eq!(stats.landed, 2_000);
    assert_eq!(most_in_flight, 200, "halved to 2 batches");
}

#[tokio::test(start_paused = true)]
async fn a_failed_batch_says_whether_its_messages_may_have_landed() {
    let emulator = emulator().await;
    let client = cf_queues_testkit::clients::client(&emulator, RetryPolicy::none());
    // Without resends: a refusal for the rate fails its batch at once.
    let producer = Producer::builder(queue(&client, "landed"))
        .send_timeout(Duration::ZERO)
        .build()
        .expect("settings");
    for (fault, may_have_landed) in [
        (Fault::status(500), true),
        (Fault::status(502).html("<h1>Bad gateway</h1>"), true),
        (Fault::status(429), true), // no code: a proxy's, maybe after the push
        (
            Fault::status(429).cloudflare_error(971, "Please wait"),
            false,
        ),
        (Fault::status(400).cloudflare_error(10207, "invalid"), false),
    ] {
        emulator.inject(fault.only(Operation::Batch).times(1));
        let outcomes = join_all(texts(3).into_iter().map(|m| producer.send(m))).await;
        for outcome in outcomes {
            let error = outcome.expect_err("the batch failed");
            if may_have_landed || error.error().and_then(Error::status) != Some(429) {
                assert!(matches!(error, ProducerError::Failed(_)), "{error:?}");
            } else {
                let refused = matches!(error, ProducerError::TimedOut { attempts: 1, .. });
                assert!(refused, "{error:?}");
            }
            assert_eq!(error.may_have_landed(), may_have_landed, "{error}");
        }
    }
    let rejected = producer.send(Message::text("x".repeat(200_000))).await;
    assert!(!rejected.expect_err("too large").may_have_landed());
    producer.close().await;
    let closed = producer.send(Message::text("late")).await;
    assert!(!closed.expect_err("closed").may_have_landed());
}
