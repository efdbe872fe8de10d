//! The consumer at a distance: its throughput against the emulator
//! with a round trip ([`Latency`](cf_queues_emulator::Latency)) and
//! Cloudflare's rate limits, each figure beside the bare pull + ack loop
//! (one call at a time) measured in the same run.
//!
//! Run with `cargo bench --bench consumer_at_a_distance --features consumer`.
//!
//! - Steady state at 100 ms and at 200 ms, per-queue limits on: default
//!   settings, a no-op handler, a warm-up, then 30 s measured. Goal: at
//!   least 4,750 msg/s (95 % of Cloudflare's 5,000 a second per queue), and
//!   429s at most 1 % of the consumer's requests.
//! - A drain of 20,000 messages at 200 ms, no limits, from the consumer's
//!   start to the `Summary` `run` returns (the ramp-up counts). Goal: at
//!   least 4,500 msg/s.
//! - Replicas sharing one queue at 100 ms (`replicas.rs`): K = 2, 4 and 8
//!   consumers, each with a client of its own, no-op handlers, a warm-up,
//!   then 30 s measured, with the per-queue burst at 5,000 and cut to 500.
//!   Goals: combined at least 4,750 msg/s (4,500 with the burst of 500),
//!   refusals at most 1 % of the requests (2 % with the burst of 500), and
//!   over the window's last third each replica within 25 % of an equal
//!   share. Then four replicas, the fourth starting at 20 s (goals: at
//!   least 80 % of an equal share by 30 s, at most 3 % refused from 20 s to
//!   30 s) and one stopping at 60 s (goal: the others at 4,750 msg/s
//!   combined within 10 s). Four replicas with 250 and 1,000 messages a
//!   second pushed meanwhile (no goal: the backlog's fall is not their
//!   pace). `CFQ_BENCH_REPLICAS=0` leaves them out, `churn` runs only the
//!   comings and goings, `pushed` the rows with pushes and the comings and
//!   goings.
//! - `CFQ_BENCH_CALLGRIND=1`: a fixed workload for callgrind (see
//!   `callgrind.rs` and `cargo xtask callgrind-consumer`).
//!
//! Each queue is filled at no distance and with the limits off, then both
//! are switched on: filling it through the API would spend the
//! per-credential budget (1,200 requests per 5 minutes), which pulls and
//! acks do not draw on. The per-credential and per-IP figures stay
//! Cloudflare's.
//!
//! The emulator counts the requests it receives; the 429s among them are
//! counted from the client's own events (`count.rs`).
//!
//! Environment: `CFQ_BENCH_WARMUP_SECS` (default 5), `CFQ_BENCH_STEADY_SECS`
//! (30), `CFQ_BENCH_BARE_SECS` (10, each bare loop's window),
//! `CFQ_BENCH_DRAIN_MESSAGES` (20,000), `CFQ_BENCH_VERBOSE=1` (each
//! consumer run's `Summary`), `CFQ_BENCH_QUEUE_RATE` (5,000: the per-queue
//! limit, lower to see 429s counted). With the defaults a run takes about three
//! minutes, most of it the 30 s windows.

mod callgrind;
mod count;
mod replicas;
mod steady;

use std::process::ExitCode;
use std::time::Duration;

use cf_queues_emulator::Emulator;

use crate::count::RateLimited;
use crate::steady::{Window, bare_steady, consumer_drain, consumer_steady};
use cf_queues_testkit::bench::{Result, env_count, thousands};

const ROUND_TRIPS: [Duration; 2] = [Duration::from_millis(100), Duration::from_millis(200)];
const DRAIN_ROUND_TRIP: Duration = Duration::from_millis(200);

fn main() -> ExitCode {
    let result = if std::env::var_os("CFQ_BENCH_SERVE").is_some() {
        callgrind::serve()
    } else if std::env::var_os("CFQ_BENCH_CALLGRIND").is_some() {
        callgrind::measure()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(Into::into)
            .and_then(|runtime| runtime.block_on(run()))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("consumer_at_a_distance bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn seconds(name: &str, default: usize) -> Result<Duration> {
    Ok(Duration::from_secs(env_count(name, default)? as u64))
}

/// One round trip's figures.
struct AtDistance {
    round_trip: Duration,
    bare: Window,
    consumer: Window,
}

async fn run() -> Result<()> {
    let warm_up = seconds("CFQ_BENCH_WARMUP_SECS", 5)?;
    let window = seconds("CFQ_BENCH_STEADY_SECS", 30)?;
    let bare_window = seconds("CFQ_BENCH_BARE_SECS", 10)?;
    let drain_messages = env_count("CFQ_BENCH_DRAIN_MESSAGES", 20_000)?;
    let verbose = std::env::var_os("CFQ_BENCH_VERBOSE").is_some();
    let counter = RateLimited::install()?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let emulator = Emulator::new().start().await?;
    let client = emulator.client()?;

    let mut rows = Vec::new();
    for round_trip in ROUND_TRIPS {
        let ms = round_trip.as_millis();
        println!("at a {ms} ms round trip, per-queue limits on:");
        let bare = bare_steady(&emulator, &client, round_trip, bare_window, &counter).await?;
        println!(
            "  bare pull + ack loop: {} msg/s, {} requests, {} 429s",
            thousands(bare.rate()),
            bare.requests,
            bare.rate_limited
        );
        let (consumer, summary) =
            consumer_steady(&emulator, &client, round_trip, warm_up, window, &counter).await?;
        println!(
            "  consumer: {} msg/s over {:.0} s after {} s of warm-up, {} requests, {} 429s ({:.2} %)",
            thousands(consumer.rate()),
            consumer.seconds,
            warm_up.as_secs(),
            thousands(consumer.requests as f64),
            consumer.rate_limited,
            consumer.rate_limited_percent()
        );
        if verbose {
            println!("  consumer summary: {summary:?}");
        }
        rows.push(AtDistance {
            round_trip,
            bare,
            consumer,
        });
    }

    println!(
        "a drain of {} messages at {} ms, no limits:",
        thousands(drain_messages as f64),
        DRAIN_ROUND_TRIP.as_millis()
    );
    let (drain, summary) =
        consumer_drain(&emulator, &client, DRAIN_ROUND_TRIP, drain_messages).await?;
    println!(
        "  consumer: {} msg/s, {:.1} s from start to Summary, {} requests",
        thousands(drain.rate()),
        drain.seconds,
        thousands(drain.requests as f64)
    );
    if verbose {
        println!("  consumer summary: {summary:?}");
    }
    let replica_rows = if std::env::var("CFQ_BENCH_REPLICAS").as_deref() == Ok("0") {
        None
    } else {
        Some(run_replicas(&emulator, warm_up, window).await?)
    };
    // The bare loop has no ramp-up: its steady rate at the same round trip
    // is its drain rate.
    let drain_baseline = rows
        .iter()
        .find(|row| row.round_trip == DRAIN_ROUND_TRIP)
        .map(|row| row.bare.rate())
        .unwrap_or_default();

    println!();
    println!(
        "consumer_at_a_distance bench: {} s of warm-up, {} s windows (bare loop {} s), {cores} cores",
        warm_up.as_secs(),
        window.as_secs(),
        bare_window.as_secs()
    );
    println!("| measurement | consumer | bare pull + ack loop, same run | ratio | goal |");
    println!("|---|---:|---:|---:|---|");
    for row in &rows {
        println!(
            "| steady state, {} ms, per-queue limits | {} msg/s, 429s {:.2} % of {} requests | {} msg/s | {:.2} | >= 4,750 msg/s, 429s <= 1 % |",
            row.round_trip.as_millis(),
            thousands(row.consumer.rate()),
            row.consumer.rate_limited_percent(),
            thousands(row.consumer.requests as f64),
            thousands(row.bare.rate()),
            row.consumer.rate() / row.bare.rate()
        );
    }
    println!(
        "| drain of {}, {} ms, no limits, start to Summary | {} msg/s ({:.1} s) | {} msg/s | {:.2} | >= 4,500 msg/s |",
        thousands(drain_messages as f64),
        DRAIN_ROUND_TRIP.as_millis(),
        thousands(drain.rate()),
        drain.seconds,
        thousands(drain_baseline),
        drain.rate() / drain_baseline
    );
    if let Some((steady, churn)) = replica_rows {
        let single = rows
            .iter()
            .find(|row| row.round_trip == replicas::ROUND_TRIP)
            .map(|row| row.consumer.rate())
            .unwrap_or_default();
        println!();
        println!(
            "replicas sharing one queue, {} ms, each its own client; one consumer alone in the same run: {} msg/s",
            replicas::ROUND_TRIP.as_millis(),
            thousands(single)
        );
        println!(
            "| replicas | queue's burst | pushed meanwhile | combined | ratio to one alone | refused | spread, last third | goal |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|---|");
        for (k, burst, pushed, whole, last) in &steady {
            let goal = match (*burst, *pushed) {
                (_, 1..) => "none: the backlog falls by less than the replicas take",
                (5_000, 0) => ">= 4,750 msg/s, refused <= 1 %, spread <= 25 %",
                _ => ">= 4,500 msg/s, refused <= 2 %, spread <= 25 %",
            };
            println!(
                "| {k} | {} | {} msg/s | {} msg/s | {:.2} | {:.2} % of {} | {:.0} % | {goal} |",
                thousands(f64::from(*burst)),
                thousands(f64::from(*pushed)),
                thousands(whole.combined()),
                whole.combined() / single,
                whole.refused_percent(),
                thousands(whole.requests as f64),
                last.spread_percent()
            );
        }
        println!(
            "| 4, the fourth from 20 s | 5,000 | 0 msg/s | {} msg/s (20-30 s) | {:.2} | {:.2} % of {} | newcomer at {:.0} % of an equal share by 30 s | >= 80 %, refused <= 3 % |",
            thousands(churn.joining.combined()),
            churn.joining.combined() / single,
            churn.joining.refused_percent(),
            thousands(churn.joining.requests as f64),
            churn.newcomer_share_percent
        );
        println!(
            "| 4, one stopping at 60 s | 5,000 | 0 msg/s | {} | | | | >= 4,750 msg/s within 10 s |",
            churn.recovered_after.map_or_else(
                || "not back at 4,750 msg/s within 20 s".to_owned(),
                |s| format!("back at 4,750 msg/s after {s} s")
            )
        );
    }
    emulator.shutdown().await?;
    Ok(())
}

/// Each steady row: replicas, burst, pushed a second, the whole window, its last third.
type SteadyRow = (usize, u32, u32, replicas::Shared, replicas::Shared);

async fn run_replicas(
    emulator: &cf_queues_emulator::EmulatorHandle,
    warm_up: Duration,
    window: Duration,
) -> Result<(Vec<SteadyRow>, replicas::Churn)> {
    let mut rows = Vec::new();
    let only = std::env::var("CFQ_BENCH_REPLICAS").ok();
    let churn_only = only.as_deref() == Some("churn");
    let pushed_only = only.as_deref() == Some("pushed");
    let runs = [5_000, 500]
        .into_iter()
        .flat_map(|burst| [2, 4, 8].map(|k| (k, burst, 0)))
        // Pushed meanwhile: under and over what tells the backlog's fall
        // from the replicas' pace.
        .chain([(4, 5_000, 250), (4, 5_000, 1_000)]);
    for (k, burst, pushed) in
        runs.filter(|(_, _, pushed)| !churn_only && (*pushed > 0 || !pushed_only))
    {
        println!(
            "{k} replicas at 100 ms, per-queue burst {burst}, {pushed} msg/s pushed meanwhile:"
        );
        let (whole, last) = replicas::steady(emulator, k, burst, pushed, warm_up, window).await?;
        println!(
            "  {} msg/s combined, {:.2} % refused of {} requests, spread {:.0} % over the last third",
            thousands(whole.combined()),
            whole.refused_percent(),
            thousands(whole.requests as f64),
            last.spread_percent()
        );
        rows.push((k, burst, pushed, whole, last));
    }
    println!("4 replicas, the fourth from 20 s, one stopping at 60 s:");
    let churn = replicas::churn(emulator).await?;
    println!("  {churn:?}");
    Ok((rows, churn))
}
