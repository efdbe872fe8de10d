//! Replicas of one consumer sharing the queue's allowance: K consumers on
//! one queue, each with a `Client` of its own as K processes would have,
//! no-op handlers, 100 ms away, Cloudflare's limits (the per-queue bucket's
//! burst at 5,000, or cut to 500 so that no design lives off it).
//! Refusals are counted per attempt from the replicas' own `Summary`
//! (`refused_by_queue`: the consumer's calls are not retried by the client
//! on a 10250), against every request the emulator received.

use std::time::{Duration, Instant};

use cf_queues::consumer::{Consumer, ConsumerMonitor, Summary};
use cf_queues_emulator::{EmulatorHandle, Latency, RateLimitModel, WorkerBody};
use tokio::task::JoinHandle;

use crate::steady::{CLOUDFLARE_RATE, check_filled, no_op};
use cf_queues_testkit::bench::{Result, percent};
use cf_queues_testkit::emulators::push_meanwhile;

pub(crate) const ROUND_TRIP: Duration = Duration::from_millis(100);

/// One replica: its own client and consumer.
struct Replica {
    monitor: ConsumerMonitor,
    stop: cf_queues::consumer::CancellationToken,
    run: JoinHandle<std::result::Result<Summary, cf_queues::consumer::ConsumerError>>,
}

impl Replica {
    fn start(emulator: &EmulatorHandle, name: &str) -> Result<Replica> {
        let queue = emulator.client()?.queue(name)?;
        let consumer = Consumer::builder(queue).build()?;
        let monitor = consumer.monitor();
        let stop = consumer.shutdown_token();
        let run = tokio::spawn(consumer.run(no_op));
        Ok(Replica { monitor, stop, run })
    }

    async fn stop(self) -> Result<Summary> {
        self.stop.cancel();
        Ok(self.run.await??)
    }
}

/// What the replicas did between two looks.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    /// Messages acked, per replica.
    pub acked: Vec<u64>,
    pub refused: u64,
    pub requests: u64,
    pub seconds: f64,
}

impl Shared {
    pub(crate) fn combined(&self) -> f64 {
        self.acked.iter().sum::<u64>() as f64 / self.seconds
    }

    pub(crate) fn refused_percent(&self) -> f64 {
        percent(self.refused, self.requests)
    }

    /// The largest distance of a replica from an equal share, in per cent of it.
    pub(crate) fn spread_percent(&self) -> f64 {
        let equal = self.acked.iter().sum::<u64>() as f64 / self.acked.len() as f64;
        self.acked
            .iter()
            .map(|a| (*a as f64 - equal).abs() / equal * 100.0)
            .fold(0.0, f64::max)
    }

    fn rate_of(&self, replica: usize) -> f64 {
        self.acked[replica] as f64 / self.seconds
    }
}

struct Look {
    summaries: Vec<Summary>,
    requests: u64,
    at: Instant,
}

fn look(emulator: &EmulatorHandle, replicas: &[&Replica]) -> Look {
    Look {
        summaries: replicas.iter().map(|r| r.monitor.snapshot()).collect(),
        requests: emulator.requests_received(),
        at: Instant::now(),
    }
}

fn between(before: &Look, after: &Look) -> Shared {
    let pairs = || before.summaries.iter().zip(&after.summaries);
    Shared {
        acked: pairs().map(|(b, a)| a.acked - b.acked).collect(),
        refused: pairs()
            .map(|(b, a)| a.refused_by_queue - b.refused_by_queue)
            .sum(),
        requests: after.requests - before.requests,
        seconds: after.at.duration_since(before.at).as_secs_f64(),
    }
}

/// A queue of `messages` for `seconds` of Cloudflare's rate and a tenth
/// more, written as a Worker would (no API calls, no limits spent), and the
/// limits switched on with a per-queue burst of `burst`.
fn prepare(emulator: &EmulatorHandle, name: &str, seconds: u64, burst: u32) -> Result<()> {
    emulator.set_latency(None);
    emulator.set_rate_limits(None);
    let messages = CLOUDFLARE_RATE * seconds as usize * 11 / 10;
    let started = Instant::now();
    for i in 0..messages {
        emulator.push_from_worker(name, WorkerBody::Bytes(i.to_be_bytes().to_vec()));
    }
    check_filled(emulator, name, messages, started)?;
    emulator.set_rate_limits(Some(
        RateLimitModel::cloudflare().per_queue(CLOUDFLARE_RATE as u32, burst),
    ));
    emulator.set_latency(Some(Latency::round_trip(ROUND_TRIP)));
    Ok(())
}

fn check_lossless(name: &str, summaries: &[Summary]) -> Result<()> {
    for s in summaries {
        if s.unflushed + s.leases_lost > 0 || s.refused_by_token > 0 {
            return Err(format!("{name}: a replica lost something: {s:?}").into());
        }
    }
    Ok(())
}

/// K replicas, a warm-up, then the window; and the window's last third
/// on its own, for the spread. `pushed` messages a second are written
/// meanwhile, as a Worker would (so the backlog falls by less than the
/// replicas take).
pub(crate) async fn steady(
    emulator: &EmulatorHandle,
    replicas: usize,
    burst: u32,
    pushed: u32,
    warm_up: Duration,
    window: Duration,
) -> Result<(Shared, Shared)> {
    let name = format!("replicas{replicas}burst{burst}pushed{pushed}");
    prepare(emulator, &name, (warm_up + window).as_secs(), burst)?;
    let running: Vec<Replica> = (0..replicas)
        .map(|_| Replica::start(emulator, &name))
        .collect::<Result<_>>()?;
    let all: Vec<&Replica> = running.iter().collect();
    push_meanwhile(emulator, &name, pushed, warm_up).await;
    let first = look(emulator, &all);
    push_meanwhile(emulator, &name, pushed, window * 2 / 3).await;
    let last_third = look(emulator, &all);
    push_meanwhile(emulator, &name, pushed, window / 3).await;
    let end = look(emulator, &all);
    let mut summaries = Vec::new();
    for replica in running {
        summaries.push(replica.stop().await?);
    }
    emulator.set_latency(None);
    emulator.set_rate_limits(None);
    check_lossless(&name, &summaries)?;
    if end.summaries.iter().any(|s| s.empty_pulls > 0) {
        return Err(format!("{name} ran dry: {summaries:?}").into());
    }
    Ok((between(&first, &end), between(&last_third, &end)))
}

/// Replicas that come and go: four, the fourth starting at 20 s; then one
/// of the first three stopping at 60 s.
#[derive(Debug)]
pub(crate) struct Churn {
    /// 20 s to 30 s, all four.
    pub joining: Shared,
    /// The newcomer's rate over 28 s to 30 s, in per cent of an equal share.
    pub newcomer_share_percent: f64,
    /// Seconds after the stop at 60 s until a whole second at 95 % of
    /// Cloudflare's rate, if within 20 s.
    pub recovered_after: Option<u64>,
}

pub(crate) async fn churn(emulator: &EmulatorHandle) -> Result<Churn> {
    let name = "replicaschurn";
    prepare(emulator, name, 90, 5_000)?;
    let start = Instant::now();
    let first: Vec<Replica> = (0..3)
        .map(|_| Replica::start(emulator, name))
        .collect::<Result<_>>()?;
    tokio::time::sleep_until((start + Duration::from_secs(20)).into()).await;
    let newcomer = Replica::start(emulator, name)?;
    let four: Vec<&Replica> = first.iter().chain([&newcomer]).collect();
    let at_20 = look(emulator, &four);
    tokio::time::sleep_until((start + Duration::from_secs(28)).into()).await;
    let at_28 = look(emulator, &four);
    tokio::time::sleep_until((start + Duration::from_secs(30)).into()).await;
    let at_30 = look(emulator, &four);
    let joining = between(&at_20, &at_30);
    let late = between(&at_28, &at_30);
    let newcomer_share_percent = late.rate_of(3) / (late.combined() / 4.0) * 100.0;

    tokio::time::sleep_until((start + Duration::from_secs(60)).into()).await;
    let mut first = first.into_iter();
    let stopped = first.next().ok_or("three replicas")?;
    let mut summaries = vec![stopped.stop().await?];
    let rest: Vec<Replica> = first.chain([newcomer]).collect();
    let three: Vec<&Replica> = rest.iter().collect();
    let mut recovered_after = None;
    let mut previous = look(emulator, &three);
    for second in 1..=20 {
        tokio::time::sleep_until((start + Duration::from_secs(60 + second)).into()).await;
        let now = look(emulator, &three);
        if between(&previous, &now).combined() >= 0.95 * CLOUDFLARE_RATE as f64 {
            recovered_after = Some(second);
            break;
        }
        previous = now;
    }
    for replica in rest {
        summaries.push(replica.stop().await?);
    }
    emulator.set_latency(None);
    emulator.set_rate_limits(None);
    check_lossless(name, &summaries)?;
    Ok(Churn {
        joining,
        newcomer_share_percent,
        recovered_after,
    })
}
