//! The consumer and the producer against the emulator, each beside a
//! baseline measured in the same run (the machine is shared and noisy, so
//! only the ratios travel).
//!
//! Run with
//! `cargo bench --bench consumer_producer --features consumer,producer`.
//!
//! - Consumer: drain a backlog with `Consumer::run` and a no-op handler,
//!   against the bare loop of `Queue::pull` (100) then `Queue::ack` of the
//!   batch. Goal: at least 25,000 messages/s, and at least 0.8× the loop.
//! - Producer: single `Producer::send` calls from 64 concurrent tasks,
//!   against single `Queue::push` calls (one request each) from 64 tasks.
//!   Goal: at most 1,100 requests for 100,000 messages, and at least 10×
//!   the throughput.
//!
//! Environment: `CFQ_HELPERS_MESSAGES` (default 100,000) messages per run,
//! `CFQ_HELPERS_ROUNDS` (default 3) runs of each, alternating with their
//! baseline; the median of each is reported. `CFQ_HELPERS_VERBOSE=1` prints
//! each consumer run's summary; `CFQ_HELPERS_ONLY=bare` or `consumer` runs
//! that measurement alone (for profiling).
//!
//! Besides messages/s, the consumer and its baseline report the process's
//! CPU time per message: on a machine shared with other work, throughput
//! follows the CPU the process gets, and the CPU ratio tells the consumer's
//! own cost apart from that.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cf_queues::consumer::{Consumer, Verdict};
use cf_queues::producer::Producer;
use cf_queues::{Client, Message, Queue};
use cf_queues_emulator::{Emulator, EmulatorHandle};

use cf_queues_testkit::bench::{Result, drain, env_count, thousands};

const TASKS: usize = 64;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("consumer_producer bench: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("consumer_producer bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<()> {
    let messages = env_count("CFQ_HELPERS_MESSAGES", 100_000)?;
    let rounds = env_count("CFQ_HELPERS_ROUNDS", 3)?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let emulator = Emulator::new().start().await?;
    let client = emulator.client()?;

    let mut bare: Vec<DrainRun> = Vec::new();
    let mut consumer: Vec<DrainRun> = Vec::new();
    let mut unbatched = Vec::new();
    let mut batched = Vec::new();
    if let Ok(only) = std::env::var("CFQ_HELPERS_ONLY") {
        // One measurement alone, for profiling: no report.
        for round in 1..=rounds {
            let run = match only.as_str() {
                "bare" => bare_loop(&client, round, messages).await?,
                "consumer" => consumer_run(&client, round, messages).await?,
                other => return Err(format!("CFQ_HELPERS_ONLY={other:?}: bare or consumer").into()),
            };
            println!(
                "{only}: {} msg/s ({} CPU/msg)",
                thousands(run.rate),
                cpu_text(&run)
            );
        }
        return Ok(());
    }
    for round in 1..=rounds {
        let b = bare_loop(&client, round, messages).await?;
        let c = consumer_run(&client, round, messages).await?;
        println!(
            "round {round}: bare loop {} msg/s ({} CPU/msg), consumer {} msg/s ({} CPU/msg)",
            thousands(b.rate),
            cpu_text(&b),
            thousands(c.rate),
            cpu_text(&c)
        );
        bare.push(b);
        consumer.push(c);
        let u = pushes(&emulator, client.queue(format!("pushes{round}"))?, messages).await?;
        let p = producer_sends(
            &emulator,
            client.queue(format!("producer{round}"))?,
            messages,
        )
        .await?;
        println!(
            "round {round}: unbatched pushes {} msg/s ({} requests), producer {} msg/s ({} requests)",
            thousands(u.rate),
            thousands(u.requests as f64),
            thousands(p.rate),
            thousands(p.requests as f64)
        );
        unbatched.push(u);
        batched.push(p);
    }

    let rates = |runs: &[DrainRun]| median(&runs.iter().map(|r| r.rate).collect::<Vec<_>>());
    let cpus = |runs: &[DrainRun]| {
        let cpu: Vec<f64> = runs.iter().filter_map(|r| r.cpu_us_per_message).collect();
        (!cpu.is_empty()).then(|| median(&cpu))
    };
    let (b, c) = (rates(&bare), rates(&consumer));
    let cpu_ratio = cpus(&bare)
        .zip(cpus(&consumer))
        .map_or_else(|| "n/a".to_owned(), |(b, c)| format!("{:.2}", b / c));
    let u = median(&unbatched.iter().map(|r| r.rate).collect::<Vec<_>>());
    let p = median(&batched.iter().map(|r| r.rate).collect::<Vec<_>>());
    let most_requests = batched.iter().map(|r| r.requests).max().unwrap_or(0);
    let pushed_requests = unbatched.iter().map(|r| r.requests).max().unwrap_or(0);
    println!();
    println!(
        "consumer_producer bench: {} messages per run, {rounds} rounds (medians), {cores} cores",
        thousands(messages as f64)
    );
    println!(
        "| consumer drain, no-op handler | {} msg/s | bare pull+ack loop {} msg/s | ratio {:.2} (goal >= 25,000 msg/s and >= 0.8); CPU per message, bare/consumer {cpu_ratio} |",
        thousands(c),
        thousands(b),
        c / b
    );
    println!(
        "| producer, {TASKS} tasks of single sends | {} msg/s, at most {} requests | unbatched pushes {} msg/s, {} requests | ratio {:.1} (goal <= 1,100 requests and >= 10) |",
        thousands(p),
        thousands(most_requests as f64),
        thousands(u),
        thousands(pushed_requests as f64),
        p / u
    );
    emulator.shutdown().await?;
    Ok(())
}

/// The process's CPU time (user and system) from `/proc/self/stat`, in
/// seconds; `None` where there is no such file. On a shared machine, CPU
/// time per message tells how much work each side does, whatever the other
/// processes take.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which ends with the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // The kernel reports in clock ticks, 100 per second on Linux.
    Some(ticks / 100.0)
}

/// Throughput and CPU time per message of one measured run.
#[derive(Clone, Copy)]
struct DrainRun {
    rate: f64,
    cpu_us_per_message: Option<f64>,
}

fn measured(messages: usize, elapsed: Duration, cpu_before: Option<f64>) -> DrainRun {
    let cpu = cpu_before
        .zip(cpu_seconds())
        .map(|(before, after)| after - before);
    DrainRun {
        rate: messages as f64 / elapsed.as_secs_f64(),
        cpu_us_per_message: cpu.map(|s| s * 1e6 / messages as f64),
    }
}

fn cpu_text(run: &DrainRun) -> String {
    run.cpu_us_per_message
        .map_or_else(|| "n/a".to_owned(), |us| format!("{us:.1} µs"))
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// Fills a fresh queue with `messages`, untimed.
async fn filled(client: &Client, name: String, messages: usize) -> Result<Queue> {
    let queue = client.queue(name)?;
    let report = queue
        .push_all((0..messages).map(|i| Message::text(format!("m{i}"))), 4)
        .await;
    if !report.all_landed() {
        return Err(format!("filling {}: {:?}", queue.id(), report.failed().first()).into());
    }
    Ok(queue)
}

async fn bare_loop(client: &Client, round: usize, messages: usize) -> Result<DrainRun> {
    let queue = filled(client, format!("bare{round}"), messages).await?;
    let cpu = cpu_seconds();
    let started = Instant::now();
    let drained = drain(&queue).await?;
    let elapsed = started.elapsed();
    if drained != messages {
        return Err(format!("bare loop drained {drained} of {messages}").into());
    }
    Ok(measured(messages, elapsed, cpu))
}

async fn consumer_run(client: &Client, round: usize, messages: usize) -> Result<DrainRun> {
    let queue = filled(client, format!("consumer{round}"), messages).await?;
    // On loopback this bench measures the consumer's own machinery; its
    // default budget (Cloudflare's per-queue rate) would measure that instead.
    let consumer = Consumer::builder(queue).queue_allowance(u32::MAX).build()?;
    let monitor = consumer.monitor();
    let stop = consumer.shutdown_token();
    let cpu = cpu_seconds();
    let started = Instant::now();
    let run = tokio::spawn(
        consumer.run(|_message| async { Ok::<_, std::convert::Infallible>(Verdict::Ack) }),
    );
    while monitor.snapshot().acked < messages as u64 {
        if run.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    let run_figures = measured(messages, elapsed, cpu);
    stop.cancel();
    let summary = run.await??;
    if summary.acked != messages as u64 || summary.leases_lost != 0 || summary.settle_warnings != 0
    {
        return Err(format!("consumer: {summary:?}").into());
    }
    if std::env::var_os("CFQ_HELPERS_VERBOSE").is_some() {
        println!("  consumer: {summary:?}");
    }
    Ok(run_figures)
}

struct Pushed {
    rate: f64,
    requests: u64,
}

async fn pushes(emulator: &EmulatorHandle, queue: Queue, messages: usize) -> Result<Pushed> {
    let before = emulator.requests_received();
    let started = Instant::now();
    let tasks: Vec<_> = shares(messages)
        .map(|(from, to)| {
            let queue = queue.clone();
            tokio::spawn(async move {
                for i in from..to {
                    queue.push(Message::text(format!("m{i}"))).await?;
                }
                Ok::<_, cf_queues::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let elapsed = started.elapsed();
    landed(emulator, queue.id(), messages)?;
    Ok(Pushed {
        rate: messages as f64 / elapsed.as_secs_f64(),
        requests: emulator.requests_received() - before,
    })
}

async fn producer_sends(
    emulator: &EmulatorHandle,
    queue: Queue,
    messages: usize,
) -> Result<Pushed> {
    let before = emulator.requests_received();
    let started = Instant::now();
    let producer = Arc::new(Producer::builder(queue.clone()).build()?);
    let tasks: Vec<_> = shares(messages)
        .map(|(from, to)| {
            let producer = Arc::clone(&producer);
            tokio::spawn(async move {
                let sends = (from..to).map(|i| producer.send(Message::text(format!("m{i}"))));
                for outcome in futures_util::future::join_all(sends).await {
                    outcome?;
                }
                Ok::<_, cf_queues::producer::ProducerError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let elapsed = started.elapsed();
    producer.close().await;
    landed(emulator, queue.id(), messages)?;
    Ok(Pushed {
        rate: messages as f64 / elapsed.as_secs_f64(),
        requests: emulator.requests_received() - before,
    })
}

/// The message ranges of the tasks.
fn shares(messages: usize) -> impl Iterator<Item = (usize, usize)> {
    let per = messages.div_ceil(TASKS);
    (0..TASKS).map(move |t| ((t * per).min(messages), ((t + 1) * per).min(messages)))
}

fn landed(emulator: &EmulatorHandle, queue: &str, messages: usize) -> Result<()> {
    let backlog = emulator.metrics(queue).backlog_count;
    if backlog != messages as u64 {
        return Err(format!("{queue}: {backlog} of {messages} messages landed").into());
    }
    Ok(())
}
