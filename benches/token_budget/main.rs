//! The producer within Cloudflare's API budget, on paused (virtual) time:
//! the emulator enforces Cloudflare's per-credential window (1,200
//! requests per sliding 300 s, then a 300 s block), its per-IP bucket
//! (200 a second) and its per-queue buckets, on tokio's paused clock, with
//! a 100 ms round trip; so whole five-minute windows pass in seconds of
//! wall time, and every figure below is virtual time, the same on any
//! machine.
//!
//! Run with `cargo bench --bench token_budget --features consumer,producer`.
//!
//! - Backlogged producer (always more to send than the budget allows), paced
//!   by the headers (the default) and, as the baseline of the same run,
//!   with `RateLimits::none()`: messages a second over `CFQ_BUDGET_WINDOWS`
//!   windows (default 3), against the bound of 400 a second (1,200 full
//!   batches of 100 per 300 s). Goal: at least 95 % of it, and no 429.
//! - Steady offered load of 100 messages a second: every message
//!   delivered, at most 1,200 requests in any 300 s, p99 send latency at
//!   most 1 s, no 429.
//! - A backlogged producer and a consumer on one token (clones of one
//!   client): the consumer is never refused (no pull error), paced and
//!   unpaced.
//! - Replicas: 2, 4, 8 and 16 backlogged producers on one token, each with
//!   a client of its own (as separate processes would have), beside one
//!   producer alone: the share of the budget they get together, the 429s
//!   they see and the p99 send latency. On paused time with Cloudflare's
//!   window, then on the wall clock with the window scaled to 120 requests
//!   per 30 s (three windows each: about 8 minutes). Goal: no 429 at all,
//!   and together at least 90 % of the budget (one alone: 96 %).
//!   `CFQ_BUDGET_ONLY=replicas` runs only these tables (`wall`: only the
//!   wall-clock one);
//!   `CFQ_BUDGET_REPLICAS=8` only eight replicas (and one);
//!   `CFQ_BUDGET_WALL=0` skips the wall-clock table.

use std::process::ExitCode;
use std::time::Duration;

use cf_queues::consumer::{Consumer, Verdict};
use cf_queues::producer::{Producer, ProducerStats};
use cf_queues::ratelimit::RateLimits;
use cf_queues::{Client, Message};
use cf_queues_emulator::EmulatorHandle;
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;

mod replicas;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

const WINDOW: Duration = Duration::from_secs(300);
const QUOTA: u64 = 1_200;
/// Full batches of 100 at 1,200 requests per 300 s.
const BOUND_PER_SECOND: f64 = 400.0;
const ROUND_TRIP: Duration = Duration::from_millis(100);
/// Sends outstanding at once for a backlog: twice the producer's buffer.
const BACKLOG: usize = 2_000;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("budget bench: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let paused = runtime.block_on(run());
    let wall = match paused {
        Ok(true) if std::env::var("CFQ_BUDGET_WALL").as_deref() != Ok("0") => {
            match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => {
                    runtime.block_on(async { replicas_table(windows()?, replicas::WALL).await })
                }
                Err(e) => Err(e.into()),
            }
        }
        other => other,
    };
    match wall {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("budget bench: a goal was missed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("budget bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn windows() -> Result<u32> {
    match std::env::var("CFQ_BUDGET_WINDOWS") {
        Ok(text) => Ok(text.parse()?),
        Err(_) => Ok(3),
    }
}

/// A fresh emulator (a fresh window) on this runtime's paused clock.
async fn emulator() -> Result<EmulatorHandle> {
    replicas::emulator(replicas::PAUSED).await
}

fn client(emulator: &EmulatorHandle, limits: RateLimits) -> Result<Client> {
    Ok(emulator.client_builder()?.rate_limits(limits).build()?)
}

/// The producer's batches a moment apart: the requests in any window.
#[derive(Default)]
struct Samples {
    at: Vec<(Instant, u64)>,
}

impl Samples {
    /// The most requests the samples show in any `WINDOW` (sampled every
    /// 100 ms: exact to the requests of one sample).
    fn most_in_a_window(&self) -> u64 {
        let mut most = 0;
        let mut first = 0;
        for &(at, count) in &self.at {
            while at.duration_since(self.at[first].0) >= WINDOW {
                first += 1;
            }
            let before = if first == 0 { 0 } else { self.at[first - 1].1 };
            most = most.max(count - before);
        }
        most
    }
}

struct Backlog {
    per_second: f64,
    stats: ProducerStats,
    most_in_window: u64,
    consumer: Option<ConsumerFigures>,
    wall: Duration,
}

struct ConsumerFigures {
    acked: u64,
    pull_errors: u64,
    pulls: u64,
}

/// A producer always given more than the budget allows, for `windows`
/// windows; with a consumer on the same token when `consume`.
async fn backlogged(limits: RateLimits, windows: u32, consume: bool) -> Result<Backlog> {
    let wall = std::time::Instant::now();
    let emulator = emulator().await?;
    let client = client(&emulator, limits)?;
    let queue = client.queue("backlog")?;
    let producer = Producer::builder(queue.clone()).build()?;
    let consumer = if consume {
        let consumer = Consumer::builder(client.clone().queue("backlog")?).build()?;
        let monitor = consumer.monitor();
        let stop = consumer.shutdown_token();
        let run = tokio::spawn(
            consumer.run(|_message| async { Ok::<_, std::convert::Infallible>(Verdict::Ack) }),
        );
        Some((monitor, stop, run))
    } else {
        None
    };
    let start = Instant::now();
    let end = start + WINDOW * windows;
    let mut sends = FuturesUnordered::new();
    let mut samples = Samples::default();
    let mut next_sample = start;
    let mut landed_in_time = 0u64;
    let mut sent = 0u64;
    loop {
        while Instant::now() < end && sends.len() < BACKLOG {
            sends.push(producer.send(Message::text(format!("message {sent}"))));
            sent += 1;
        }
        let Some(outcome) = sends.next().await else {
            break;
        };
        outcome?;
        let now = Instant::now();
        if now <= end {
            landed_in_time += 1;
        }
        while next_sample <= now {
            samples.at.push((next_sample, producer.stats().batches));
            next_sample += Duration::from_millis(100);
        }
    }
    let stats = producer.close().await;
    let consumer = match consumer {
        Some((monitor, stop, run)) => {
            while monitor.snapshot().acked < stats.landed {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            stop.cancel();
            let summary = run.await??;
            Some(ConsumerFigures {
                acked: summary.acked,
                pull_errors: summary.pull_errors,
                pulls: summary.pulls,
            })
        }
        None => None,
    };
    Ok(Backlog {
        per_second: landed_in_time as f64 / (WINDOW * windows).as_secs_f64(),
        stats,
        most_in_window: samples.most_in_a_window(),
        consumer,
        wall: wall.elapsed(),
    })
}

struct Steady {
    offered: u64,
    delivered: u64,
    stats: ProducerStats,
    most_in_window: u64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    wall: Duration,
}

/// 100 messages a second, one every 10 ms, for `windows` windows.
async fn steady(windows: u32) -> Result<Steady> {
    let wall = std::time::Instant::now();
    let emulator = emulator().await?;
    let client = client(&emulator, RateLimits::default())?;
    let producer = Producer::builder(client.queue("steady")?).build()?;
    let start = Instant::now();
    let end = start + WINDOW * windows;
    let mut ticks = tokio::time::interval(Duration::from_millis(10));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut sends = FuturesUnordered::new();
    let mut latencies = Vec::new();
    let mut samples = Samples::default();
    let mut next_sample = start;
    let mut offered = 0u64;
    loop {
        tokio::select! {
            _ = ticks.tick(), if Instant::now() < end => {
                let send = producer.send(Message::text(format!("message {offered}")));
                let sent = Instant::now();
                sends.push(async move { send.await.map(|_| sent.elapsed()) });
                offered += 1;
            }
            Some(outcome) = sends.next() => latencies.push(outcome?),
            else => break,
        }
        let now = Instant::now();
        while next_sample <= now {
            samples.at.push((next_sample, producer.stats().batches));
            next_sample += Duration::from_millis(100);
        }
    }
    let stats = producer.close().await;
    latencies.sort();
    let at = |share: f64| {
        let index = ((latencies.len() as f64 * share).ceil() as usize).saturating_sub(1);
        latencies.get(index).copied().unwrap_or_default()
    };
    Ok(Steady {
        offered,
        delivered: emulator.metrics("steady").backlog_count,
        stats,
        most_in_window: samples.most_in_a_window(),
        p50: at(0.50),
        p99: at(0.99),
        max: latencies.last().copied().unwrap_or_default(),
        wall: wall.elapsed(),
    })
}

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

async fn run() -> Result<bool> {
    let windows = windows()?;
    if std::env::var("CFQ_BUDGET_ONLY").as_deref() == Ok("wall") {
        return Ok(true);
    }
    if std::env::var("CFQ_BUDGET_ONLY").as_deref() == Ok("replicas") {
        return replicas_table(windows, replicas::PAUSED).await;
    }
    println!(
        "The producer within Cloudflare's API budget: paused time, {windows} windows of 300 s, \
         emulator with RateLimitModel::cloudflare() and a {} ms round trip",
        ROUND_TRIP.as_millis()
    );
    let mut met = true;

    let paced = backlogged(RateLimits::default(), windows, false).await?;
    let unpaced = backlogged(RateLimits::none(), windows, false).await?;
    table_head(
        "| backlogged producer | msg/s | of 400 msg/s | batches | most requests in 300 s | 429s | refused batches sent again | wall |",
    );
    for (name, run) in [
        ("paced by the headers (default)", &paced),
        ("baseline: RateLimits::none()", &unpaced),
    ] {
        println!(
            "| {name} | {:.1} | {:.1} % | {} | {} | {} | {} | {:.1} s |",
            run.per_second,
            100.0 * run.per_second / BOUND_PER_SECOND,
            run.stats.batches,
            run.most_in_window,
            run.stats.throttled,
            run.stats.held,
            run.wall.as_secs_f64()
        );
    }
    let share = paced.per_second / BOUND_PER_SECOND;
    if share < 0.95 || paced.stats.throttled > 0 || paced.stats.failed > 0 {
        met = false;
    }
    println!(
        "ratio paced/unpaced: {:.2}",
        paced.per_second / unpaced.per_second
    );

    let steady = steady(windows).await?;
    table_head(
        "| steady 100 msg/s | offered | delivered | batches | messages per batch | most requests in 300 s | p50 | p99 | max | 429s | wall |",
    );
    println!(
        "| paced by the headers (default) | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {:.1} s |",
        steady.offered,
        steady.delivered,
        steady.stats.batches,
        steady.stats.landed as f64 / steady.stats.batches.max(1) as f64,
        steady.most_in_window,
        ms(steady.p50),
        ms(steady.p99),
        ms(steady.max),
        steady.stats.throttled,
        steady.wall.as_secs_f64()
    );
    if steady.delivered != steady.offered
        || steady.most_in_window > QUOTA
        || steady.p99 > Duration::from_secs(1)
        || steady.stats.throttled > 0
    {
        met = false;
    }

    let shared = backlogged(RateLimits::default(), windows, true).await?;
    let shared_unpaced = backlogged(RateLimits::none(), windows, true).await?;
    table_head(
        "| producer + consumer, one token | produced msg/s | consumer acked | pulls | pulls refused | producer 429s | wall |",
    );
    for (name, run) in [
        ("paced by the headers (default)", &shared),
        ("baseline: RateLimits::none()", &shared_unpaced),
    ] {
        let consumer = run.consumer.as_ref().ok_or("no consumer figures")?;
        println!(
            "| {name} | {:.1} | {} | {} | {} | {} | {:.1} s |",
            run.per_second,
            consumer.acked,
            consumer.pulls,
            consumer.pull_errors,
            run.stats.throttled,
            run.wall.as_secs_f64()
        );
    }
    let consumer = shared.consumer.as_ref().ok_or("no consumer figures")?;
    if consumer.pull_errors > 0 || shared.stats.throttled > 0 {
        met = false;
    }

    let replicas_met = replicas_table(windows, replicas::PAUSED).await?;
    Ok(met && replicas_met)
}

/// Producer replicas on one token, each its own client: whether every
/// row met the goal.
async fn replicas_table(windows: u32, setting: replicas::Setting) -> Result<bool> {
    println!();
    println!(
        "Producer replicas on one token: {} requests per {} s, {}, {windows} windows, {} ms round trip",
        setting.quota,
        setting.window.as_secs(),
        if setting.wall {
            "wall clock"
        } else {
            "paused time"
        },
        ROUND_TRIP.as_millis()
    );
    table_head(
        "| producers on one token, each its own client | share of the budget | 429s | failed sends | p99 send | wall | goal |",
    );
    let only: Option<usize> = match std::env::var("CFQ_BUDGET_REPLICAS") {
        Ok(text) => Some(text.parse()?),
        Err(_) => None,
    };
    let mut met = true;
    for replicas in [1, 2, 4, 8, 16] {
        if only.is_some_and(|only| replicas != 1 && replicas != only) {
            continue;
        }
        let fleet = replicas::backlogged(replicas, windows, setting).await?;
        let goal = fleet.met(windows);
        met &= goal;
        println!(
            "{} {} |",
            fleet.row(windows),
            if goal { "met" } else { "**missed**" }
        );
    }
    Ok(met)
}

/// Prints a blank line, then the head of a Markdown table with `columns`
/// (`| a | b |`) and its rule.
fn table_head(columns: &str) {
    let rule = "---|".repeat(columns.matches('|').count().saturating_sub(1));
    println!("\n{columns}\n|{rule}");
}
