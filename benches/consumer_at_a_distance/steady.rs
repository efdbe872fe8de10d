//! The measurements at a distance: the consumer's steady state under the
//! per-queue limits, its drain from start to `Summary`, and the bare pull +
//! ack loop (one call at a time) they are set beside.

use std::time::{Duration, Instant};

use cf_queues::consumer::{Consumer, Summary, Verdict};
use cf_queues::{Client, Queue};
use cf_queues_emulator::EmulatorHandle;

use crate::count::RateLimited;
use cf_queues_testkit::bench::{BATCH, Result, ack_all, pull_options};
pub(crate) use cf_queues_testkit::distance::{
    CLOUDFLARE_RATE, at_distance, check_filled, fill, filled,
};

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
