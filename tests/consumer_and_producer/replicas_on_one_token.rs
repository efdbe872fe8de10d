//! Producer replicas on one token, each with a client of its own as
//! separate processes would have, against the emulator's per-credential
//! window (Cloudflare's 1,200 requests per 300 s, then a 300 s block) on
//! tokio's paused clock with a 100 ms round trip: each paces to the share
//! of the budget the `Ratelimit` figures show it, and none starts a block.

use std::time::Duration;

use cf_queues::Message;
use cf_queues::producer::{Producer, ProducerStats};
use cf_queues::ratelimit::RateLimits;
use cf_queues_emulator::{Emulator, EmulatorClock, EmulatorHandle, Latency, RateLimitModel};
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::support::client;

const WINDOW: Duration = Duration::from_secs(300);
const QUOTA: u64 = 1_200;
/// Sends outstanding at once: more than a window's worth of full batches.
const BACKLOG: usize = 2_000;

/// An emulator on the test's paused clock with a 100 ms round trip, and
/// `model`'s limits (none, and no `Ratelimit` headers, without one).
async fn emulator(model: Option<RateLimitModel>) -> EmulatorHandle {
    let emulator = Emulator::new()
        .clock(EmulatorClock::tokio(1_700_000_000_000))
        .latency(Latency::round_trip(Duration::from_millis(100)));
    let emulator = match model {
        Some(model) => emulator.rate_limits(model),
        None => emulator,
    };
    emulator.start().await.expect("emulator")
}

/// A backlogged producer of its own client from `from` to `until` (after
/// the start): its stats at `until`.
fn replica(
    emulator: &EmulatorHandle,
    limits: RateLimits,
    from: Duration,
    until: Duration,
) -> JoinHandle<ProducerStats> {
    let start = Instant::now();
    let queue = client(emulator, limits).queue("fleet").expect("queue");
    tokio::spawn(async move {
        tokio::time::sleep_until(start + from).await;
        let producer = Producer::builder(queue).build().expect("producer");
        let end = start + until;
        let mut sends = FuturesUnordered::new();
        let mut sent = 0u64;
        loop {
            while Instant::now() < end && sends.len() < BACKLOG {
                sends.push(producer.send(Message::text(format!("{sent}"))));
                sent += 1;
            }
            tokio::select! {
                _ = sends.next(), if !sends.is_empty() => {}
                () = tokio::time::sleep_until(end) => break,
            }
        }
        producer.stats()
    })
}

/// What a fleet did: the requests that landed (full batches of 100) as a
/// share of the budget over `windows`, and the 429s its replicas saw.
async fn fleet(
    replicas: Vec<JoinHandle<ProducerStats>>,
    windows: u32,
) -> (f64, u64, Vec<ProducerStats>) {
    let mut stats = Vec::new();
    for replica in replicas {
        stats.push(replica.await.expect("replica"));
    }
    let landed: u64 = stats.iter().map(|s| s.landed).sum();
    let refused = stats.iter().map(|s| s.throttled).sum();
    let share = landed as f64 / 100.0 / (QUOTA * u64::from(windows)) as f64;
    (share, refused, stats)
}

#[tokio::test(start_paused = true)]
async fn replicas_coming_and_going_never_start_a_block() {
    let emulator = emulator(Some(RateLimitModel::cloudflare())).await;
    let run = WINDOW * 3;
    let paced = RateLimits::default();
    let replicas = vec![
        replica(&emulator, paced, Duration::ZERO, run),
        replica(&emulator, paced, Duration::ZERO, run),
        // One joins a fleet already spending the whole budget ...
        replica(&emulator, paced, Duration::from_secs(100), run),
        // ... and one leaves it: the others take up its share.
        replica(&emulator, paced, Duration::ZERO, Duration::from_secs(450)),
    ];
    let (share, refused, stats) = fleet(replicas, 3).await;
    assert_eq!(refused, 0, "no 971: {stats:#?}");
    assert!(share > 0.9, "the fleet used {share:.3} of the budget");
    let budget = stats[0].token_budget.expect("figures seen");
    assert_eq!((budget.quota, budget.window), (QUOTA, WINDOW));
    let own = budget.share.expect("a share");
    assert!((0.2..0.5).contains(&own), "one of three: {own}");
    assert!(budget.pace.is_some(), "paced to its share");
    assert!(
        stats[0].budget_wait > Duration::from_secs(600),
        "{:?}",
        stats[0].budget_wait
    );
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_does_not_pace_is_left_room() {
    let emulator = emulator(Some(RateLimitModel::cloudflare())).await;
    // A quarter of the budget, sent without pacing, one call a second.
    let rogue = client(&emulator, RateLimits::none())
        .queue("fleet")
        .expect("queue");
    let rogue = tokio::spawn(async move {
        let mut refused = 0u64;
        let mut ticks = tokio::time::interval(Duration::from_secs(1));
        let end = Instant::now() + WINDOW * 2;
        while Instant::now() < end {
            ticks.tick().await;
            refused += u64::from(rogue.push(Message::text("rogue")).await.is_err());
        }
        refused
    });
    let paced = RateLimits::default();
    let replicas = (0..3)
        .map(|_| replica(&emulator, paced, Duration::ZERO, WINDOW * 2))
        .collect();
    let (share, refused, _) = fleet(replicas, 2).await;
    assert_eq!(rogue.await.expect("rogue"), 0, "never blocked");
    assert_eq!(refused, 0);
    // The rogue's 600 calls, and the paced replicas' share of the rest.
    let used = share + 600.0 / 2_400.0;
    assert!(used > 0.9, "{used:.3} of the budget");
}

#[tokio::test(start_paused = true)]
async fn a_block_longer_than_the_window_is_waited_out_and_not_repeated() {
    // The block outlasts the window: when it ends, nothing is in the window.
    let model = RateLimitModel::cloudflare().per_credential(QUOTA as u32, WINDOW, WINDOW * 2);
    let emulator = emulator(Some(model)).await;
    let paced = RateLimits::default();
    let replicas: Vec<_> = (0..2)
        .map(|_| replica(&emulator, paced, Duration::ZERO, WINDOW * 4))
        .collect();
    // A process that does not pace spends the budget at 60 s and goes over.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let rogue = client(&emulator, RateLimits::none())
        .queue("fleet")
        .expect("queue");
    let mut went_over = false;
    for _ in 0..QUOTA {
        if rogue.push(Message::text("rogue")).await.is_err() {
            went_over = true;
            break;
        }
    }
    assert!(went_over, "the rogue started the block");
    let (_, _, stats) = fleet(replicas, 4).await;
    for replica in &stats {
        // Refused only for the batches on their way when the block began
        // (the rest waited for it to end, unsent), then paced again: no
        // second block. A refused batch is held until its send timeout,
        // shorter than this block: only those may have failed.
        assert!(replica.throttled <= 4, "{replica:#?}");
        assert!(replica.failed <= 100 * replica.throttled, "{replica:#?}");
        assert!(
            replica.budget_wait > Duration::from_secs(600),
            "{replica:#?}"
        );
    }
    let landed: u64 = stats.iter().map(|s| s.landed).sum();
    // Before the block, and about 440 s after it at the aim's pace.
    assert!(landed >= 100 * 1_400, "{landed}");
}

#[tokio::test(start_paused = true)]
async fn answers_without_figures_leave_the_pace_to_the_producer() {
    let emulator = emulator(None).await;
    let replicas: Vec<_> = (0..2)
        .map(|_| {
            replica(
                &emulator,
                RateLimits::default(),
                Duration::ZERO,
                Duration::from_secs(10),
            )
        })
        .collect();
    let (_, refused, stats) = fleet(replicas, 1).await;
    assert_eq!(refused, 0);
    for replica in &stats {
        assert_eq!(replica.token_budget, None, "no figures, no budget");
        // Only the wait for the first answer, which says there are none.
        assert!(replica.budget_wait < Duration::from_secs(1), "{replica:#?}");
        // Unpaced: far more than the budget's 40 batches in 10 s (four
        // batches in flight at a 100 ms round trip: up to 400).
        assert!(replica.landed > 100 * 300, "{replica:#?}");
    }
}
