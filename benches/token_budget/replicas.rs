//! Producer replicas on one token: K backlogged producers, each with a
//! client of its own as K processes would have (so each its own pacer), on
//! one emulator, whose per-credential window all their pushes count
//! against. What the fleet gets of the budget, and how many of its
//! requests were refused (a 429 with code 971: the request that went over,
//! and every counted call during the five-minute block it starts).

use std::time::Duration;

use cf_queues::Message;
use cf_queues::producer::Producer;
use cf_queues_emulator::{Emulator, EmulatorClock, EmulatorHandle, Latency, RateLimitModel};
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;

use super::{QUOTA, ROUND_TRIP, Result, WINDOW, client};

/// Where the replicas run: the token's window, and whose clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setting {
    pub(crate) quota: u32,
    pub(crate) window: Duration,
    /// On the wall clock (else on the runtime's paused clock).
    pub(crate) wall: bool,
}

/// Cloudflare's window, on paused time: three windows in seconds.
pub(crate) const PAUSED: Setting = Setting {
    quota: QUOTA as u32,
    window: WINDOW,
    wall: false,
};

/// The window scaled ten times down (the same rate, 4 calls a second), on
/// the wall clock: a round trip is a real one, and the figures a replica
/// reads are as old as they would be.
pub(crate) const WALL: Setting = Setting {
    quota: 120,
    window: Duration::from_secs(30),
    wall: true,
};

/// A fresh emulator with the setting's window (and a block as long), a
/// 100 ms round trip, and Cloudflare's other limits.
pub(crate) async fn emulator(setting: Setting) -> Result<EmulatorHandle> {
    let clock = if setting.wall {
        EmulatorClock::System
    } else {
        EmulatorClock::tokio(1_700_000_000_000)
    };
    let model =
        RateLimitModel::cloudflare().per_credential(setting.quota, setting.window, setting.window);
    Ok(Emulator::new()
        .clock(clock)
        .latency(Latency::round_trip(ROUND_TRIP))
        .rate_limits(model)
        .start()
        .await?)
}

/// Sends outstanding at once for each replica's backlog.
const BACKLOG: usize = 1_000;

/// What K replicas did over the run: messages landed within it, the 429s
/// they saw (971: a block, or a call refused during one), the sends that
/// failed (a block outlasting the send timeout), the 99th percentile of the
/// time from `send` to its outcome, and the wall time the run took.
pub(crate) struct Fleet {
    replicas: usize,
    quota: u64,
    landed: u64,
    refused: u64,
    failed: u64,
    p99: Duration,
    wall: Duration,
}

impl Fleet {
    /// The share of the token's budget (requests over the run's windows)
    /// that landed, in full batches of 100.
    fn share_of_budget(&self, windows: u32) -> f64 {
        self.landed as f64 / 100.0 / (self.quota * u64::from(windows)) as f64
    }

    /// The goal: no 429 at all, and at least 90 % of the budget together
    /// (96 % for one producer alone, today's figure).
    pub(crate) fn met(&self, windows: u32) -> bool {
        let least = if self.replicas == 1 { 0.96 } else { 0.90 };
        self.refused == 0 && self.share_of_budget(windows) >= least
    }

    /// The table's row.
    pub(crate) fn row(&self, windows: u32) -> String {
        format!(
            "| {} | {:.1} % | {} | {} | {} ms | {:.1} s |",
            self.replicas,
            100.0 * self.share_of_budget(windows),
            self.refused,
            self.failed,
            self.p99.as_millis(),
            self.wall.as_secs_f64()
        )
    }
}

/// `replicas` producers, each always given more than the budget allows,
/// for `windows` windows.
pub(crate) async fn backlogged(replicas: usize, windows: u32, setting: Setting) -> Result<Fleet> {
    let wall = std::time::Instant::now();
    let emulator = emulator(setting).await?;
    let start = Instant::now();
    let end = start + setting.window * windows;
    let (mut runs, mut ends) = (Vec::new(), Vec::new());
    for replica in 0..replicas {
        let queue = client(&emulator, Default::default())?.queue("fleet")?;
        let producer = Producer::builder(queue).build()?;
        let watch = producer.clone();
        let at_end = tokio::spawn(async move {
            tokio::time::sleep_until(end).await;
            watch.stats().landed
        });
        runs.push(tokio::spawn(async move {
            let mut sends = FuturesUnordered::new();
            let mut latencies = Vec::new();
            let (mut sent, mut failed) = (0u64, 0u64);
            loop {
                while Instant::now() < end && sends.len() < BACKLOG {
                    let send = producer.send(Message::text(format!("{replica}: {sent}")));
                    let at = Instant::now();
                    sends.push(async move { (send.await, at.elapsed()) });
                    sent += 1;
                }
                let Some((outcome, latency)) = sends.next().await else {
                    break;
                };
                latencies.push(latency);
                failed += u64::from(outcome.is_err());
            }
            let stats = producer.close().await;
            (stats, latencies, failed)
        }));
        ends.push(at_end);
    }
    let (mut landed, mut refused, mut failed, mut latencies) = (0, 0, 0, Vec::new());
    for at_end in ends {
        landed += at_end.await?;
    }
    for run in runs {
        let (stats, mut run_latencies, run_failed) = run.await?;
        refused += stats.throttled;
        failed += run_failed;
        latencies.append(&mut run_latencies);
    }
    latencies.sort();
    let index = ((latencies.len() as f64 * 0.99).ceil() as usize).saturating_sub(1);
    Ok(Fleet {
        replicas,
        quota: u64::from(setting.quota),
        landed,
        refused,
        failed,
        p99: latencies.get(index).copied().unwrap_or_default(),
        wall: wall.elapsed(),
    })
}
