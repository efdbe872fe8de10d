//! The throughput measurement: rounds of push 100 / pull 100 / ack 100, run
//! through the client and through the bare-reqwest baseline, with one worker
//! and several, each timed per phase.

use std::time::{Duration, Instant};

use cf_queues::batch::Batch;
use cf_queues::{Client, Message, Queue};
use cf_queues_emulator::EmulatorHandle;

use crate::baseline::RawQueue;
use cf_queues_testkit::bench::{BATCH, BoxError, Result, ack_all, drain, pull_options, thousands};

/// Measured repetitions of each throughput figure; the median is reported.
pub(crate) const REPEATS: usize = 3;
/// Unmeasured rounds per driver before measuring.
const WARMUP_ROUNDS: usize = 100;

/// The medians of the measured runs.
pub(crate) struct Throughput {
    /// One worker through the client.
    pub client: CycleRun,
    /// One worker through the baseline.
    pub raw: CycleRun,
    /// Several workers, each named for the report.
    pub variants: Vec<(&'static str, CycleRun)>,
}

/// Warms up, then measures `rounds` rounds per run, [`REPEATS`] times, of
/// each way of driving the emulator; prints each run as it ends.
pub(crate) async fn measure(
    emulator: &EmulatorHandle,
    client: &Client,
    rounds: usize,
) -> Result<Throughput> {
    let bodies: Vec<String> = (0..BATCH).map(|i| format!("m{i}")).collect();
    let via_client = vec![Driver::Client(client.queue("e2e")?)];
    let via_raw = vec![Driver::Raw(RawQueue::new(emulator, "e2eraw", &bodies)?)];
    let own_queues = |n: usize, raw: bool| -> Result<Vec<Driver>> {
        (0..n)
            .map(|i| {
                let name = format!("w{n}q{i}");
                Ok(if raw {
                    Driver::Raw(RawQueue::new(emulator, &format!("{name}raw"), &bodies)?)
                } else {
                    Driver::Client(client.queue(name)?)
                })
            })
            .collect()
    };
    let shared = |n: usize| -> Result<Vec<Driver>> {
        (0..n)
            .map(|_| Ok(Driver::Client(client.queue("shared")?)))
            .collect()
    };
    let variants = [
        ("2 workers, own queues, client", own_queues(2, false)?),
        ("4 workers, own queues, client", own_queues(4, false)?),
        ("4 workers, one shared queue, client", shared(4)?),
        ("4 workers, own queues, bare reqwest", own_queues(4, true)?),
    ];

    let warmup = rounds.min(WARMUP_ROUNDS);
    println!(
        "warming up ({} rounds per driver, then {REPEATS} measured runs of {} messages each)...",
        warmup,
        rounds * BATCH
    );
    cycle(emulator, &via_client, warmup, &bodies).await?;
    cycle(emulator, &via_raw, warmup, &bodies).await?;
    for (_, drivers) in &variants {
        cycle(emulator, drivers, drivers.len() * 5, &bodies).await?;
    }

    // Client and baseline runs alternate so that noise hits both alike.
    let mut client_runs = Vec::with_capacity(REPEATS);
    let mut raw_runs = Vec::with_capacity(REPEATS);
    for repeat in 1..=REPEATS {
        let c = cycle(emulator, &via_client, rounds, &bodies).await?;
        let r = cycle(emulator, &via_raw, rounds, &bodies).await?;
        println!(
            "  run {repeat}: client {:>9} msg/s   bare reqwest {:>9} msg/s",
            thousands(c.rate()),
            thousands(r.rate())
        );
        client_runs.push(c);
        raw_runs.push(r);
    }
    let mut variant_runs = Vec::with_capacity(variants.len());
    for (name, drivers) in &variants {
        let mut runs = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            runs.push(cycle(emulator, drivers, rounds, &bodies).await?);
        }
        let run = median(runs);
        println!("  {name}: {} msg/s", thousands(run.rate()));
        variant_runs.push((*name, run));
    }

    Ok(Throughput {
        client: median(client_runs),
        raw: median(raw_runs),
        variants: variant_runs,
    })
}

/// Time spent in each phase, summed over rounds (and over workers).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Phases {
    push: Duration,
    pull: Duration,
    ack: Duration,
    rounds: u32,
}

impl Phases {
    fn add(&mut self, other: Phases) {
        self.push += other.push;
        self.pull += other.pull;
        self.ack += other.ack;
        self.rounds += other.rounds;
    }

    fn total(&self) -> Duration {
        self.push + self.pull + self.ack
    }

    /// Mean microseconds per request of each phase.
    pub(crate) fn micros_per_request(&self) -> [f64; 3] {
        let n = f64::from(self.rounds.max(1));
        [self.push, self.pull, self.ack].map(|d| d.as_secs_f64() * 1e6 / n)
    }

    pub(crate) fn percentages(&self) -> [f64; 3] {
        let total = self.total().as_secs_f64().max(f64::MIN_POSITIVE);
        [self.push, self.pull, self.ack].map(|d| 100.0 * d.as_secs_f64() / total)
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CycleRun {
    messages: usize,
    wall: Duration,
    pub phases: Phases,
}

impl CycleRun {
    pub(crate) fn rate(&self) -> f64 {
        self.messages as f64 / self.wall.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

fn median(mut runs: Vec<CycleRun>) -> CycleRun {
    runs.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
    runs[runs.len() / 2]
}

/// One way of driving a queue: through the client, or with bare reqwest.
#[derive(Clone)]
enum Driver {
    Client(Queue),
    Raw(RawQueue),
}

impl Driver {
    fn name(&self) -> &str {
        match self {
            Driver::Client(queue) => queue.id(),
            Driver::Raw(raw) => &raw.name,
        }
    }

    /// Pushes 100, pulls up to 100 and acks what it pulled; returns how many
    /// messages it acked.
    async fn round(&self, bodies: &[String], phases: &mut Phases) -> Result<usize> {
        let (push, pull, ack, acked) = match self {
            Driver::Client(queue) => client_round(queue, bodies).await?,
            Driver::Raw(raw) => raw.round().await?,
        };
        phases.push += push;
        phases.pull += pull;
        phases.ack += ack;
        phases.rounds += 1;
        Ok(acked)
    }

    /// Pulls and acks until the queue is empty; returns how many it acked.
    async fn drain(&self) -> Result<usize> {
        match self {
            Driver::Client(queue) => drain(queue).await,
            // The baseline's queues are never shared, so nothing is left.
            Driver::Raw(_) => Ok(0),
        }
    }
}

async fn client_round(
    queue: &Queue,
    bodies: &[String],
) -> Result<(Duration, Duration, Duration, usize)> {
    let t0 = Instant::now();
    let batch = Batch::new(bodies.iter().map(|b| Message::text(b.as_str())));
    queue
        .push_batch(batch)
        .await
        .map_err(|e| format!("push_batch to {}: {e}", queue.id()))?;
    let t1 = Instant::now();
    let pulled = queue
        .pull(pull_options())
        .await
        .map_err(|e| format!("pull from {}: {e}", queue.id()))?;
    let t2 = Instant::now();
    let acked = if pulled.messages.is_empty() {
        0
    } else {
        ack_all(queue, &pulled.messages).await?
    };
    let t3 = Instant::now();
    Ok((t1 - t0, t2 - t1, t3 - t2, acked))
}

/// Runs `rounds` cycles spread over the drivers, one task each, then drains
/// what a shared queue may have left; checks every queue ends empty.
async fn cycle(
    emulator: &EmulatorHandle,
    drivers: &[Driver],
    rounds: usize,
    bodies: &[String],
) -> Result<CycleRun> {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(drivers.len());
    for (i, driver) in drivers.iter().enumerate() {
        let mine = rounds / drivers.len() + usize::from(i < rounds % drivers.len());
        let driver = driver.clone();
        let bodies = bodies.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut phases = Phases::default();
            let mut acked = 0;
            for _ in 0..mine {
                acked += driver.round(&bodies, &mut phases).await?;
            }
            Ok::<_, BoxError>((phases, acked))
        }));
    }
    let mut phases = Phases::default();
    let mut acked = 0;
    for task in tasks {
        let (p, a) = task.await??;
        phases.add(p);
        acked += a;
    }
    if acked < rounds * bodies.len() {
        // Workers sharing a queue can pull each other's messages, or none.
        for driver in drivers {
            acked += driver.drain().await?;
        }
    }
    let wall = started.elapsed();
    if acked != rounds * bodies.len() {
        return Err(format!(
            "pushed {} messages but acked {acked}",
            rounds * bodies.len()
        )
        .into());
    }
    for driver in drivers {
        let backlog = emulator.metrics(driver.name()).backlog_count;
        if backlog != 0 {
            return Err(format!("queue {} still holds {backlog} messages", driver.name()).into());
        }
    }
    Ok(CycleRun {
        messages: acked,
        wall,
        phases,
    })
}
