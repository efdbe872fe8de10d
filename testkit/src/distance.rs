//! Queues for measurements at a distance: filled at no distance and with
//! the limits off (filling through the API would spend the
//! per-credential budget, which pulls and acks do not draw on), then
//! measured with a round trip and Cloudflare's limits switched on. Shared
//! by the consumer's benches and `cfq relay`'s.

use std::time::{Duration, Instant};

use cf_queues::batch::Batch;
use cf_queues::{Client, Message, Queue};
use cf_queues_emulator::{EmulatorHandle, Latency, RateLimitModel};

use crate::bench::{BATCH, Result, thousands};

/// Tasks pushing at once while a queue is filled: enough to keep the
/// emulator busy at no latency, few enough not to crowd two cores.
const PUSHERS: usize = 8;

/// What Cloudflare serves a queue, messages a second: the most any
/// consumer can pull, and what a steady-state queue must hold per second.
pub const CLOUDFLARE_RATE: usize = 5_000;

/// Fills `queue` with `messages` small text messages, in batches of
/// [`BATCH`] from eight tasks. Untimed; the caller switches latency
/// and limits off first (filling would spend the per-credential budget).
pub async fn fill(queue: &Queue, messages: usize) -> Result<()> {
    let batches = messages.div_ceil(BATCH);
    let tasks: Vec<_> = (0..PUSHERS)
        .map(|pusher| {
            let queue = queue.clone();
            tokio::spawn(async move {
                for b in (pusher..batches).step_by(PUSHERS) {
                    let n = (messages - b * BATCH).min(BATCH);
                    let batch = Batch::new((0..n).map(|i| Message::text(format!("m{b}.{i}"))));
                    queue.push_batch(batch).await?;
                }
                Ok::<_, cf_queues::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// A fresh queue of `messages`, filled at no distance and without limits.
pub async fn filled(
    emulator: &EmulatorHandle,
    client: &Client,
    name: &str,
    messages: usize,
) -> Result<Queue> {
    emulator.set_latency(None);
    emulator.set_rate_limits(None);
    let queue = client.queue(name)?;
    // Filled by a client of its own that does not pace itself: the
    // measuring client's pacing remembers the last figures it read (the
    // limits were on then), which an emulator without limits never updates.
    let filler = emulator
        .client_builder()?
        .rate_limits(cf_queues::ratelimit::RateLimits::none())
        .build()?
        .queue(name)?;
    let started = Instant::now();
    fill(&filler, messages).await?;
    check_filled(emulator, name, messages, started)?;
    Ok(queue)
}

/// Checks that all `messages` landed in `name`, filled since `started`, and
/// says how long it took.
pub fn check_filled(
    emulator: &EmulatorHandle,
    name: &str,
    messages: usize,
    started: Instant,
) -> Result<()> {
    let landed = emulator.metrics(name).backlog_count;
    if landed != messages as u64 {
        return Err(format!("{name}: {landed} of {messages} messages landed").into());
    }
    println!(
        "  filled {name} with {} messages in {:.1} s",
        thousands(messages as f64),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Latency and limits as a measurement runs: Cloudflare's limits, but
/// for a per-queue rate set by `CFQ_BENCH_QUEUE_RATE` (messages a second,
/// and as much burst). The consumer paces itself below 5,000 a second, so
/// a lower rate is how the 429 accounting is seen working.
pub fn at_distance(emulator: &EmulatorHandle, round_trip: Duration, limits: bool) {
    let rate = crate::bench::env_count("CFQ_BENCH_QUEUE_RATE", CLOUDFLARE_RATE)
        .ok()
        .and_then(|rate| u32::try_from(rate).ok())
        .unwrap_or(CLOUDFLARE_RATE as u32);
    emulator.set_rate_limits(limits.then(|| RateLimitModel::cloudflare().per_queue(rate, rate)));
    emulator.set_latency(Some(Latency::round_trip(round_trip)));
}
