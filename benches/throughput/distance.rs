//! The bare pull + ack loop at a distance: the emulator adds a 100 ms round
//! trip ([`Latency`]), as between a server and Cloudflare, and one worker
//! pulls 100 and acks them, one call at a time, until its queue is empty.
//! Through the client and through the bare-reqwest baseline, alternating.
//!
//! One call in flight at a time gets at most 100 messages per two round
//! trips: 500 msg/s at 100 ms, a tenth of the 5,000 a second Cloudflare
//! serves a queue. This is the baseline later work on overlapping calls is
//! measured against.

use std::time::{Duration, Instant};

use cf_queues::batch::Batch;
use cf_queues::{Client, Message, Queue};
use cf_queues_emulator::{EmulatorHandle, Latency};

use crate::baseline::RawQueue;
use crate::cycle::REPEATS;
use cf_queues_testkit::bench::{BATCH, Result, drain, thousands};

/// The round trip the emulator adds.
pub(crate) const ROUND_TRIP: Duration = Duration::from_millis(100);

/// The medians of the runs, in messages a second.
pub(crate) struct Distance {
    pub messages: usize,
    pub client: f64,
    pub raw: f64,
}

/// Fills two queues with `messages` each (at no distance), then drains them
/// at [`ROUND_TRIP`]: [`REPEATS`] times each, alternating.
pub(crate) async fn measure(
    emulator: &EmulatorHandle,
    client: &Client,
    messages: usize,
) -> Result<Distance> {
    let bodies: Vec<String> = (0..BATCH).map(|i| format!("m{i}")).collect();
    let queue = client.queue("far")?;
    let raw = RawQueue::new(emulator, "farraw", &bodies)?;
    let raw_as_queue = client.queue(raw.name.as_str())?;
    println!(
        "at a {} ms round trip: {REPEATS} drains of {} messages per driver...",
        ROUND_TRIP.as_millis(),
        thousands(messages as f64)
    );
    let mut client_rates = Vec::with_capacity(REPEATS);
    let mut raw_rates = Vec::with_capacity(REPEATS);
    for repeat in 1..=REPEATS {
        emulator.set_latency(None);
        fill(&queue, messages, &bodies).await?;
        fill(&raw_as_queue, messages, &bodies).await?;
        emulator.set_latency(Some(Latency::round_trip(ROUND_TRIP)));
        let c = timed(messages, drain(&queue)).await?;
        let r = timed(messages, drain_raw(&raw)).await?;
        println!(
            "  run {repeat}: client {:>6} msg/s   bare reqwest {:>6} msg/s",
            thousands(c),
            thousands(r)
        );
        client_rates.push(c);
        raw_rates.push(r);
    }
    emulator.set_latency(None);
    Ok(Distance {
        messages,
        client: median(client_rates),
        raw: median(raw_rates),
    })
}

async fn fill(queue: &Queue, messages: usize, bodies: &[String]) -> Result<()> {
    let mut left = messages;
    while left > 0 {
        let n = left.min(BATCH);
        let batch = Batch::new(bodies[..n].iter().map(|b| Message::text(b.as_str())));
        queue.push_batch(batch).await?;
        left -= n;
    }
    Ok(())
}

/// Messages a second of a drain that must move `expected` messages.
async fn timed(
    expected: usize,
    drain: impl std::future::Future<Output = Result<usize>>,
) -> Result<f64> {
    let started = Instant::now();
    let drained = drain.await?;
    let seconds = started.elapsed().as_secs_f64();
    if drained != expected {
        return Err(format!("drained {drained} of {expected} messages").into());
    }
    Ok(drained as f64 / seconds)
}

async fn drain_raw(raw: &RawQueue) -> Result<usize> {
    let mut drained = 0;
    loop {
        match raw.pull_and_ack().await? {
            0 => return Ok(drained),
            n => drained += n,
        }
    }
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates.get(rates.len() / 2).copied().unwrap_or(0.0)
}
