//! The measurements at a distance: the consumer's steady state under the
//! per-queue limits, its drain from start to `Summary`, and the bare pull +
//! ack loop (one call at a time) they are set beside.

use std::time::{Duration, Instant};

use cf_queues::batch::Batch;
use cf_queues::consumer::{Consumer, Summary, Verdict};
use cf_queues::{Client, Message, Queue};
use cf_queues_emulator::{EmulatorHandle, Latency, RateLimitModel};

use crate::count::RateLimited;
use cf_queues_testkit::bench::{BATCH, Result, ack_all, pull_options, thousands};

/// Tasks pushing at once while a queue is filled: enough to keep the
/// emulator busy at no latency, few enough not to crowd two cores.
const PUSHERS: usize = 8;

/// What Cloudflare serves a queue, messages a second: the most any
/// consumer can pull, and what a steady-state queue must hold per second.
pub(crate) const CLOUDFLARE_RATE: usize = 5_000;

/// Fills `queue` with `messages` small text messages, in batches of
/// [`BATCH`] from [`PUSHERS`] tasks. Untimed; the caller switches latency
/// and limits off first (filling would spend the per-credential budget).
pub(crate) async fn fill(queue: &Queue, messages: usize) -> Result<()> {
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
pub(crate) async fn filled(
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
pub(crate) fn check_filled(
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
pub(crate) fn at_distance(emulator: &EmulatorHandle, round_trip: Duration, limits: bool) {
    let rate = cf_queues_testkit::bench::env_count("CFQ_BENCH_QUEUE_RATE", CLOUDFLARE_RATE)
        .ok()
        .and_then(|rate| u32::try_from(rate).ok())
        .unwrap_or(CLOUDFLARE_RATE as u32);
    emulator.set_rate_limits(limits.then(|| RateLimitModel::cloudflare().per_queue(rate, rate)));
    emulator.set_latency(Some(Latency::round_trip(round_trip)));
}

/// Figures of one timed window.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub messages: u64,
    pub seconds: f64,
    /// Requests the emulator received in the window.
    pub requests: u64,
    /// 429s the client got in the window.
    pub rate_limited: u64,
}

impl Window {
    pub(crate) fn rate(&self) -> f64 {
        self.messages as f64 / self.seconds
    }

    pub(crate) fn rate_limited_percent(&self) -> f64 {
        cf_queues_testkit::bench::percent(self.rate_limited, self.requests)
    }
}

/// The bare loop's steady state: one pull of 100, then one ack of what it
/// got, one call at a time, for `seconds` after one warm-up round (the
/// connection's set-up costs a round trip more).
pub(crate) async fn bare_steady(
    emulator: &EmulatorHandle,
    client: &Client,
    round_trip: Duration,
    seconds: Duration,
    counter: &RateLimited,
) -> Result<Window> {
    // One call at a time moves at most a pull per two round trips: twice
    // that, so that the queue never runs dry.
    let per_second = BATCH as f64 / (2.0 * round_trip.as_secs_f64());
    let needed = (2.0 * per_second * (seconds.as_secs_f64() + 2.0)) as usize;
    let name = format!("bare{}", round_trip.as_millis());
    let queue = filled(emulator, client, &name, needed).await?;
    at_distance(emulator, round_trip, true);
    pull_and_ack(&queue).await?;
    let (requests, limited) = (emulator.requests_received(), counter.get());
    let started = Instant::now();
    let mut messages = 0;
    while started.elapsed() < seconds {
        messages += pull_and_ack(&queue).await? as u64;
    }
    let window = Window {
        messages,
        seconds: started.elapsed().as_secs_f64(),
        requests: emulator.requests_received() - requests,
        rate_limited: counter.get() - limited,
    };
    emulator.set_latency(None);
    emulator.set_rate_limits(None);
    Ok(window)
}

async fn pull_and_ack(queue: &Queue) -> Result<usize> {
    let batch = queue
        .pull(pull_options())
        .await
        .map_err(|e| format!("pull from {}: {e}", queue.id()))?;
    if batch.messages.is_empty() {
        return Err(format!("{} ran dry: the figure would be low", queue.id()).into());
    }
    ack_all(queue, &batch.messages).await
}

/// The consumer's steady state: default settings, a no-op handler, the
/// per-queue limits on; `warm_up`, then `seconds` measured.
pub(crate) async fn consumer_steady(
    emulator: &EmulatorHandle,
    client: &Client,
    round_trip: Duration,
    warm_up: Duration,
    seconds: Duration,
    counter: &RateLimited,
) -> Result<(Window, Summary)> {
    // At Cloudflare's rate for the whole run, and a tenth more: a queue
    // that runs dry would understate the figure.
    let needed = CLOUDFLARE_RATE * (warm_up + seconds).as_secs() as usize * 11 / 10;
    let name = format!("steady{}", round_trip.as_millis());
    let queue = filled(emulator, client, &name, needed).await?;
    at_distance(emulator, round_trip, true);
    let consumer = Consumer::builder(queue).build()?;
    let monitor = consumer.monitor();
    let stop = consumer.shutdown_token();
    let run = tokio::spawn(consumer.run(no_op));
    tokio::time::sleep(warm_up).await;
    let before = monitor.snapshot();
    let (requests, limited) = (emulator.requests_received(), counter.get());
    let started = Instant::now();
    tokio::time::sleep(seconds).await;
    let after = monitor.snapshot();
    let window = Window {
        messages: after.acked - before.acked,
        seconds: started.elapsed().as_secs_f64(),
        requests: emulator.requests_received() - requests,
        rate_limited: counter.get() - limited,
    };
    // The 429s are counted from the client's events, which see each
    // attempt, its own retries included: at least what `Summary`'s
    // `rate_limited_*` counters (calls that failed after those retries) say.
    let visible = emulator.metrics(&name).backlog_count;
    stop.cancel();
    let summary = run.await??;
    emulator.set_latency(None);
    emulator.set_rate_limits(None);
    if after.empty_pulls > before.empty_pulls || visible == 0 {
        return Err(format!("{name} ran dry during the window: {summary:?}").into());
    }
    Ok((window, summary))
}

/// A drain of `messages` at `round_trip`, no limits, default settings,
/// from the consumer's start to the `Summary` its `run` returns.
pub(crate) async fn consumer_drain(
    emulator: &EmulatorHandle,
    client: &Client,
    round_trip: Duration,
    messages: usize,
) -> Result<(Window, Summary)> {
    let name = format!("drain{}", round_trip.as_millis());
    let queue = filled(emulator, client, &name, messages).await?;
    at_distance(emulator, round_trip, false);
    let requests = emulator.requests_received();
    let started = Instant::now();
    let consumer = Consumer::builder(queue).build()?;
    let monitor = consumer.monitor();
    let stop = consumer.shutdown_token();
    let run = tokio::spawn(consumer.run(no_op));
    while monitor.snapshot().acked < messages as u64 && !run.is_finished() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.cancel();
    let summary = run.await??;
    let window = Window {
        messages: summary.acked,
        seconds: started.elapsed().as_secs_f64(),
        requests: emulator.requests_received() - requests,
        rate_limited: 0,
    };
    emulator.set_latency(None);
    if summary.acked != messages as u64 {
        return Err(format!("drained {} of {messages}: {summary:?}", summary.acked).into());
    }
    Ok((window, summary))
}

pub(crate) async fn no_op(
    _message: cf_queues::PulledMessage,
) -> std::result::Result<Verdict, std::convert::Infallible> {
    Ok(Verdict::Ack)
}
