//! Throughput and memory of the emulator, driven through the `cf_queues`
//! client on loopback.
//!
//! Run with `cargo bench --bench throughput --features emulator`.
//!
//! Every figure is reported next to a baseline measured in the same run (the
//! machine is shared and noisy): the same push / pull / ack cycle sent with a
//! bare `reqwest::Client` and pre-built JSON, without the client layer.
//!
//! Memory is the process's RSS while a backlog is filled and drained, twice:
//! once in this process with the default allocator settings, then again in a
//! child process (this executable, same arguments) whose glibc is tuned to
//! hand free heap back to the kernel: what the second run returns and the
//! first does not is free heap that glibc keeps by default. (The tunables
//! return the heap's top and large blocks, not free chunks below live ones.)
//!
//! Environment:
//! - `CFQ_BENCH_MESSAGES`: messages cycled per measured run (default 30,000);
//! - `CFQ_BENCH_BACKLOG`: messages in the memory backlog (default 100,000);
//! - `CFQ_BENCH_MEMORY_ONLY=1`: set by the bench for its child: run only the
//!   memory measurement and print it as one `MEMORY key=value ...` line.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cf_queues::emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle};
use cf_queues::{Acks, Batch, Message, PullOptions, Queue};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = BoxError> = std::result::Result<T, E>;

/// Messages per push, pull and ack.
const BATCH: usize = 100;
const VISIBILITY: Duration = Duration::from_secs(60);
const DEFAULT_MESSAGES: usize = 30_000;
const DEFAULT_BACKLOG: usize = 100_000;
/// Body size of the memory backlog's messages.
const BACKLOG_BODY_BYTES: usize = 100;
/// Measured repetitions of each throughput figure; the median is reported.
const REPEATS: usize = 3;
/// The goal for the end-to-end figure on a 2-core machine.
const GOAL_MSG_PER_S: f64 = 50_000.0;
/// Unmeasured rounds per driver before measuring.
const WARMUP_ROUNDS: usize = 100;
const PAGE_BYTES: u64 = 4096;
const MB: f64 = 1024.0 * 1024.0;
/// Set to `1` in the child that only measures memory.
const MEMORY_ONLY_ENV: &str = "CFQ_BENCH_MEMORY_ONLY";
/// One malloc arena, blocks of 128 KiB and more in their own mappings, and
/// the heap's top trimmed once 128 KiB of it are free: free heap goes back to
/// the kernel instead of staying in the process.
const GLIBC_TUNABLES: &str = "glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072";
/// How the child reports, on stdout.
const MEMORY_LINE_TAG: &str = "MEMORY";
const DEFAULT_MEMORY_LABEL: &str = if cfg!(target_env = "gnu") {
    "memory, default glibc malloc"
} else {
    "memory, default allocator"
};
const TUNED_MEMORY_LABEL: &str = "memory, glibc tunables (arena_max=1…)";

fn main() -> ExitCode {
    // Arguments (`cargo bench` passes `--bench`) are ignored.
    let memory_only = std::env::var_os(MEMORY_ONLY_ENV).is_some_and(|v| v == "1");
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("throughput bench: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (outcome, what) = if memory_only {
        (
            runtime.block_on(memory_only_run()),
            "throughput bench (memory-only child)",
        )
    } else {
        (runtime.block_on(run()), "throughput bench")
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{what} failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn env_count(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(value) => match value.trim().replace('_', "").parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{name}={value:?}: expected a positive whole number").into()),
        },
    }
}

async fn run() -> Result<()> {
    let messages = env_count("CFQ_BENCH_MESSAGES", DEFAULT_MESSAGES)?;
    let backlog = env_count("CFQ_BENCH_BACKLOG", DEFAULT_BACKLOG)?;
    let rounds = messages.div_ceil(BATCH);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let started = Instant::now();

    let emulator = Emulator::new().start().await?;
    let client = emulator.client()?;
    let bodies: Vec<String> = (0..BATCH).map(|i| format!("m{i}")).collect();
    let via_client = vec![Driver::Client(client.queue("e2e")?)];
    let via_raw = vec![Driver::Raw(RawQueue::new(&emulator, "e2eraw", &bodies)?)];
    let own_queues = |n: usize, raw: bool| -> Result<Vec<Driver>> {
        (0..n)
            .map(|i| {
                let name = format!("w{n}q{i}");
                Ok(if raw {
                    Driver::Raw(RawQueue::new(&emulator, &format!("{name}raw"), &bodies)?)
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
    cycle(&emulator, &via_client, warmup, &bodies).await?;
    cycle(&emulator, &via_raw, warmup, &bodies).await?;
    for (_, drivers) in &variants {
        cycle(&emulator, drivers, drivers.len() * 5, &bodies).await?;
    }

    // Client and baseline runs alternate so that noise hits both alike.
    let mut client_runs = Vec::with_capacity(REPEATS);
    let mut raw_runs = Vec::with_capacity(REPEATS);
    for repeat in 1..=REPEATS {
        let c = cycle(&emulator, &via_client, rounds, &bodies).await?;
        let r = cycle(&emulator, &via_raw, rounds, &bodies).await?;
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
            runs.push(cycle(&emulator, drivers, rounds, &bodies).await?);
        }
        let run = median(runs);
        println!("  {name}: {} msg/s", thousands(run.rate()));
        variant_runs.push((*name, run));
    }

    println!("filling and draining a backlog of {backlog} messages, twice...");
    let memory_started = Instant::now();
    let memory = memory(&emulator, &client.queue("memory")?, backlog).await?;
    let tuned = match memory {
        None => None,
        Some(_) => {
            println!("again in a child process with GLIBC_TUNABLES={GLIBC_TUNABLES}...");
            let timeout = memory_started.elapsed() * 10 + Duration::from_secs(60);
            let tuned = memory_with_tunables(timeout).await;
            if let Err(e) = &tuned {
                println!("  note: no memory figures with glibc tunables: {e}");
            }
            Some(tuned.map_err(|e| e.to_string()))
        }
    };

    let client_run = median(client_runs);
    let raw_run = median(raw_runs);
    report(&Report {
        cores,
        messages: rounds * BATCH,
        rounds,
        client: &client_run,
        raw: &raw_run,
        variants: &variant_runs,
        memory: &memory,
        tuned: &tuned,
    });
    println!("(bench took {:.1} s)", started.elapsed().as_secs_f64());
    emulator.shutdown().await?;
    Ok(())
}

/// Time spent in each phase, summed over rounds (and over workers).
#[derive(Debug, Default, Clone, Copy)]
struct Phases {
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
    fn micros_per_request(&self) -> [f64; 3] {
        let n = f64::from(self.rounds.max(1));
        [self.push, self.pull, self.ack].map(|d| d.as_secs_f64() * 1e6 / n)
    }

    fn percentages(&self) -> [f64; 3] {
        let total = self.total().as_secs_f64().max(f64::MIN_POSITIVE);
        [self.push, self.pull, self.ack].map(|d| 100.0 * d.as_secs_f64() / total)
    }
}

#[derive(Debug, Clone, Copy)]
struct Run {
    messages: usize,
    wall: Duration,
    phases: Phases,
}

impl Run {
    fn rate(&self) -> f64 {
        self.messages as f64 / self.wall.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

fn median(mut runs: Vec<Run>) -> Run {
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
        let Driver::Client(queue) = self else {
            return Ok(0);
        };
        let mut drained = 0;
        loop {
            let batch = queue
                .pull(pull_options())
                .await
                .map_err(|e| format!("pull from {}: {e}", queue.id()))?;
            if batch.messages.is_empty() {
                return Ok(drained);
            }
            drained += ack_all(queue, &batch.messages).await?;
        }
    }
}

fn pull_options() -> PullOptions {
    PullOptions::new()
        .batch_size(BATCH as u32)
        .visibility_timeout(VISIBILITY)
}

async fn ack_all(queue: &Queue, messages: &[cf_queues::PulledMessage]) -> Result<usize> {
    let acks = messages.iter().fold(Acks::new(), Acks::ack);
    let outcome = queue
        .ack(acks)
        .await
        .map_err(|e| format!("ack on {}: {e}", queue.id()))?;
    if outcome.acked as usize != messages.len() || !outcome.warnings.is_empty() {
        return Err(format!(
            "ack on {}: acked {} of {} leases, warnings {:?}",
            queue.id(),
            outcome.acked,
            messages.len(),
            outcome.warnings
        )
        .into());
    }
    Ok(messages.len())
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
) -> Result<Run> {
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
    Ok(Run {
        messages: acked,
        wall,
        phases,
    })
}

/// The baseline: the same cycle with a bare `reqwest::Client`, pre-built JSON,
/// and a parse of the pull response just deep enough to find the lease ids.
#[derive(Clone)]
struct RawQueue {
    name: String,
    http: reqwest::Client,
    auth: HeaderValue,
    batch_url: String,
    pull_url: String,
    ack_url: String,
    batch_body: Bytes,
    pull_body: Bytes,
}

#[derive(Deserialize)]
struct Envelope<T> {
    success: bool,
    result: Option<T>,
}

#[derive(Deserialize)]
struct PullResult {
    messages: Vec<Leased>,
}

#[derive(Deserialize)]
struct Leased {
    lease_id: String,
}

#[derive(Deserialize)]
struct AckResult {
    #[serde(rename = "ackCount")]
    ack_count: usize,
}

#[derive(Serialize)]
struct AckBody<'a> {
    acks: Vec<AckLease<'a>>,
}

#[derive(Serialize)]
struct AckLease<'a> {
    lease_id: &'a str,
}

#[derive(Serialize)]
struct BatchBody<'a> {
    messages: Vec<TextMessage<'a>>,
}

#[derive(Serialize)]
struct TextMessage<'a> {
    body: &'a str,
    content_type: &'static str,
}

impl RawQueue {
    fn new(emulator: &EmulatorHandle, name: &str, bodies: &[String]) -> Result<RawQueue> {
        let token = emulator
            .token()
            .ok_or("the emulator accepts any token; expected a generated one")?;
        let root = format!(
            "{}/accounts/{EMULATOR_ACCOUNT_ID}/queues/{name}/messages",
            emulator.base_url()
        );
        let batch = BatchBody {
            messages: bodies
                .iter()
                .map(|body| TextMessage {
                    body,
                    content_type: "text",
                })
                .collect(),
        };
        let pull = serde_json::json!({
            "batch_size": BATCH,
            "visibility_timeout_ms": VISIBILITY.as_millis() as u64,
        });
        Ok(RawQueue {
            name: name.to_owned(),
            http: reqwest::Client::new(),
            auth: HeaderValue::from_str(&format!("Bearer {token}"))?,
            batch_url: format!("{root}/batch"),
            pull_url: format!("{root}/pull"),
            ack_url: format!("{root}/ack"),
            batch_body: serde_json::to_vec(&batch)?.into(),
            pull_body: serde_json::to_vec(&pull)?.into(),
        })
    }

    async fn post<T: for<'de> Deserialize<'de>>(&self, url: &str, body: Bytes) -> Result<T> {
        let response = self
            .http
            .post(url)
            .header(AUTHORIZATION, self.auth.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body)
            .send()
            .await
            .map_err(|e| format!("POST {url}: {e}"))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| format!("POST {url}: reading the response: {e}"))?;
        let snippet = || String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
        if !status.is_success() {
            return Err(format!("POST {url}: HTTP {status}: {}", snippet()).into());
        }
        let envelope: Envelope<T> = serde_json::from_slice(&bytes)
            .map_err(|e| format!("POST {url}: unexpected response ({e}): {}", snippet()))?;
        match envelope {
            Envelope {
                success: true,
                result: Some(result),
            } => Ok(result),
            _ => Err(format!("POST {url}: not a success: {}", snippet()).into()),
        }
    }

    async fn round(&self) -> Result<(Duration, Duration, Duration, usize)> {
        let t0 = Instant::now();
        self.post::<IgnoredAny>(&self.batch_url, self.batch_body.clone())
            .await?;
        let t1 = Instant::now();
        let pulled: PullResult = self.post(&self.pull_url, self.pull_body.clone()).await?;
        let t2 = Instant::now();
        let expected = pulled.messages.len();
        if expected > 0 {
            let acks = AckBody {
                acks: pulled
                    .messages
                    .iter()
                    .map(|m| AckLease {
                        lease_id: &m.lease_id,
                    })
                    .collect(),
            };
            let body = Bytes::from(serde_json::to_vec(&acks)?);
            let result: AckResult = self.post(&self.ack_url, body).await?;
            if result.ack_count != expected {
                return Err(format!(
                    "ack on {}: acked {} of {expected} leases",
                    self.name, result.ack_count
                )
                .into());
            }
        }
        let t3 = Instant::now();
        Ok((t1 - t0, t2 - t1, t3 - t2, expected))
    }
}

/// This process's resident set (client and emulator together), in bytes.
fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * PAGE_BYTES)
}

#[derive(Debug, Clone, Copy)]
struct FillDrain {
    before: u64,
    filled: u64,
    drained: u64,
    backlog_bytes: u64,
    fill_time: Duration,
    drain_time: Duration,
}

impl FillDrain {
    fn growth(&self) -> u64 {
        self.filled.saturating_sub(self.before)
    }

    fn returned(&self) -> u64 {
        self.filled.saturating_sub(self.drained)
    }
}

struct Memory {
    /// Messages in the backlog.
    messages: usize,
    cycles: [FillDrain; 2],
}

impl Memory {
    /// The child's report: `MEMORY messages=.. before=.. full=.. drained=..
    /// full2=.. drained2=.. ...`, byte counts and microseconds.
    fn to_line(&self) -> String {
        let mut line = format!("{MEMORY_LINE_TAG} messages={}", self.messages);
        for (c, n) in self.cycles.iter().zip(["", "2"]) {
            let _ = write!(
                line,
                " before{n}={} full{n}={} drained{n}={} body_bytes{n}={} fill_us{n}={} drain_us{n}={}",
                c.before,
                c.filled,
                c.drained,
                c.backlog_bytes,
                c.fill_time.as_micros(),
                c.drain_time.as_micros()
            );
        }
        line
    }

    /// Reads what [`Memory::to_line`] wrote.
    fn from_line(line: &str) -> Result<Memory> {
        let fields = line
            .strip_prefix(MEMORY_LINE_TAG)
            .ok_or_else(|| format!("not a {MEMORY_LINE_TAG} line: {line:?}"))?
            .split_whitespace()
            .map(|field| {
                let (key, value) = field
                    .split_once('=')
                    .ok_or_else(|| format!("{field:?} is not key=value"))?;
                let value: u64 = value
                    .parse()
                    .map_err(|e| format!("{field:?} is not key=number: {e}"))?;
                Ok((key, value))
            })
            .collect::<Result<HashMap<&str, u64>>>()?;
        let get = |key: String| {
            fields
                .get(key.as_str())
                .copied()
                .ok_or_else(|| format!("no {key}= in {line:?}"))
        };
        let cycle = |n: &str| -> Result<FillDrain> {
            Ok(FillDrain {
                before: get(format!("before{n}"))?,
                filled: get(format!("full{n}"))?,
                drained: get(format!("drained{n}"))?,
                backlog_bytes: get(format!("body_bytes{n}"))?,
                fill_time: Duration::from_micros(get(format!("fill_us{n}"))?),
                drain_time: Duration::from_micros(get(format!("drain_us{n}"))?),
            })
        };
        Ok(Memory {
            messages: usize::try_from(get("messages".to_owned())?)?,
            cycles: [cycle("")?, cycle("2")?],
        })
    }
}

/// Fills `queue` with `backlog` messages of ~100 bytes and drains it, twice,
/// reading RSS before, when full and when empty. `None` without `/proc`.
async fn memory(
    emulator: &EmulatorHandle,
    queue: &Queue,
    backlog: usize,
) -> Result<Option<Memory>> {
    if rss_bytes().is_none() {
        return Ok(None);
    }
    let mut cycles = Vec::with_capacity(2);
    for _ in 0..2 {
        let before = rss_bytes().ok_or("/proc/self/statm became unreadable")?;
        let started = Instant::now();
        let mut pushed = 0;
        while pushed < backlog {
            let n = BATCH.min(backlog - pushed);
            let batch = Batch::new(
                (pushed..pushed + n)
                    .map(|i| Message::text(format!("{i:0>width$}", width = BACKLOG_BODY_BYTES))),
            );
            queue
                .push_batch(batch)
                .await
                .map_err(|e| format!("push_batch to {}: {e}", queue.id()))?;
            pushed += n;
        }
        let fill_time = started.elapsed();
        let full = emulator.metrics(queue.id());
        if full.backlog_count != backlog as u64 {
            return Err(format!(
                "backlog holds {} messages, expected {backlog}",
                full.backlog_count
            )
            .into());
        }
        let filled = rss_bytes().ok_or("/proc/self/statm became unreadable")?;

        let started = Instant::now();
        let drained_count = Driver::Client(queue.clone()).drain().await?;
        let drain_time = started.elapsed();
        if drained_count != backlog {
            return Err(format!("drained {drained_count} messages, expected {backlog}").into());
        }
        let empty = emulator.metrics(queue.id());
        if empty.backlog_count != 0 || empty.backlog_bytes != 0 {
            return Err(format!("after draining, metrics show {empty:?}").into());
        }
        let drained = rss_bytes().ok_or("/proc/self/statm became unreadable")?;
        cycles.push(FillDrain {
            before,
            filled,
            drained,
            backlog_bytes: full.backlog_bytes,
            fill_time,
            drain_time,
        });
    }
    Ok(Some(Memory {
        messages: backlog,
        cycles: [cycles[0], cycles[1]],
    }))
}

/// The child's whole run (`CFQ_BENCH_MEMORY_ONLY=1`): the fill / drain memory
/// measurement alone, printed as one `MEMORY ...` line on stdout.
async fn memory_only_run() -> Result<()> {
    let backlog = env_count("CFQ_BENCH_BACKLOG", DEFAULT_BACKLOG)?;
    let emulator = Emulator::new().start().await?;
    let client = emulator.client()?;
    let memory = memory(&emulator, &client.queue("memory")?, backlog)
        .await?
        .ok_or("/proc/self/statm is unreadable")?;
    println!("{}", memory.to_line());
    emulator.shutdown().await?;
    Ok(())
}

/// Runs the memory measurement again in a child process, this executable with
/// the same arguments, whose glibc gives free heap back to the kernel
/// ([`GLIBC_TUNABLES`]); stops it after `timeout`.
async fn memory_with_tunables(timeout: Duration) -> Result<Memory> {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return Err("not a glibc system".into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut child = Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env(MEMORY_ONLY_ENV, "1")
        .env("GLIBC_TUNABLES", GLIBC_TUNABLES)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let stdout = read_to_end_in_background(child.stdout.take());
    let stderr = read_to_end_in_background(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(None) => {
                // Our own child, stopped through its handle.
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the child ran longer than {} s and was stopped",
                    timeout.as_secs()
                )
                .into());
            }
            Err(e) => return Err(format!("waiting for the child: {e}").into()),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        let said = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!(
            "the child exited with {status}: {}",
            said.unwrap_or("(nothing on stderr)")
        )
        .into());
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("{MEMORY_LINE_TAG} ")))
        .ok_or_else(|| format!("the child printed no {MEMORY_LINE_TAG} line"))?;
    Memory::from_line(line)
}

/// Reads a child's pipe on a thread so that it cannot fill up and block it.
fn read_to_end_in_background(
    pipe: Option<impl Read + Send + 'static>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}

struct Report<'a> {
    cores: usize,
    messages: usize,
    rounds: usize,
    client: &'a Run,
    raw: &'a Run,
    variants: &'a [(&'static str, Run)],
    memory: &'a Option<Memory>,
    /// The child's measurement with [`GLIBC_TUNABLES`], or why there is none.
    tuned: &'a Option<Result<Memory, String>>,
}

fn report(r: &Report<'_>) {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let [push, pull, ack] = r.client.phases.percentages();
    let [cpush, cpull, cack] = r.client.phases.micros_per_request();
    let [rpush, rpull, rack] = r.raw.phases.micros_per_request();
    let ratio = r.client.rate() / r.raw.rate();
    let width = 38;
    println!();
    println!(
        "cf-queues emulator throughput ({profile}, loopback, {} cores)",
        r.cores
    );
    println!(
        "{:<width$}: {} messages = {} rounds of push {BATCH} / pull {BATCH} / ack {BATCH}; medians of {REPEATS}",
        "per run",
        thousands(r.messages as f64),
        r.rounds
    );
    println!(
        "{:<width$}: {:>7} msg/s   [push {push:.0}% / pull {pull:.0}% / ack {ack:.0}% of time]",
        "end to end via cf_queues client",
        thousands(r.client.rate())
    );
    println!(
        "{:<width$}: {:>7} msg/s   ratio client/base = {ratio:.2}",
        "same cycle via bare reqwest (base)",
        thousands(r.raw.rate())
    );
    println!(
        "{:<width$}: push {cpush:.0} vs {rpush:.0} | pull {cpull:.0} vs {rpull:.0} | ack {cack:.0} vs {rack:.0}",
        "µs per request, client vs base"
    );
    // Client variants scale against the single client; the base variant
    // against the single base, and the 4-worker client against it.
    let base_4 = r
        .variants
        .iter()
        .find(|(name, _)| name.ends_with("bare reqwest"))
        .map(|(_, run)| run.rate());
    for (name, run) in r.variants {
        let rate = run.rate();
        let extra = if name.ends_with("bare reqwest") {
            format!("x{:.2} of 1 base worker", rate / r.raw.rate())
        } else if let (true, Some(base)) = (name.starts_with("4 workers, own"), base_4) {
            format!(
                "x{:.2} of 1 worker; ratio client/base = {:.2}",
                rate / r.client.rate(),
                rate / base
            )
        } else {
            format!("x{:.2} of 1 worker", rate / r.client.rate())
        };
        println!("{name:<width$}: {:>7} msg/s   {extra}", thousands(rate));
    }
    let verdict = if r.client.rate() >= GOAL_MSG_PER_S {
        "met"
    } else {
        "NOT met"
    };
    println!(
        "{:<width$}: {verdict} ({} msg/s end to end; base reaches {:.2}x the goal)",
        format!("goal {} msg/s", thousands(GOAL_MSG_PER_S)),
        thousands(r.client.rate()),
        r.raw.rate() / GOAL_MSG_PER_S
    );
    match r.memory {
        None => println!("memory: skipped, /proc/self/statm is unreadable on this system"),
        Some(memory) => {
            let first = &memory.cycles[0];
            println!(
                "{:<width$}: {} messages, {BACKLOG_BODY_BYTES} B bodies ({:.1} MB of bodies), filled and drained twice; RSS of the whole process, client included",
                "memory backlog",
                thousands(memory.messages as f64),
                first.backlog_bytes as f64 / MB
            );
            memory_rows(DEFAULT_MEMORY_LABEL, memory, width);
            match r.tuned {
                None => {}
                Some(Err(e)) => println!("{TUNED_MEMORY_LABEL:<width$}: not measured ({e})"),
                Some(Ok(tuned)) => {
                    memory_rows(TUNED_MEMORY_LABEL, tuned, width);
                    println!(
                        "  (child process of this bench, GLIBC_TUNABLES={GLIBC_TUNABLES}: \
                         glibc returns the heap top and blocks >= 128 KiB once free; free chunks below live ones still count in RSS)"
                    );
                }
            }
        }
    }
}

/// One memory row of the table, then a line per fill / drain cycle.
fn memory_rows(label: &str, memory: &Memory, width: usize) {
    let [first, second] = &memory.cycles;
    let per_message = first.growth() as f64 / memory.messages.max(1) as f64;
    let peak_change = second.filled as f64 - first.filled as f64;
    println!(
        "{label:<width$}: +{per_message:.0} B RSS per backlog message; returned after drain {:.1} of {:.1} MB ({:.0}%); \
         2nd cycle peak {:+.1} MB vs 1st ({}), ends {:+.1} MB vs start",
        first.returned() as f64 / MB,
        first.growth() as f64 / MB,
        percent(first.returned(), first.growth()),
        peak_change / MB,
        if peak_change <= 0.1 * first.growth() as f64 {
            "memory reused"
        } else {
            "higher peak"
        },
        (second.drained as f64 - first.before as f64) / MB
    );
    for (i, c) in memory.cycles.iter().enumerate() {
        println!(
            "  cycle {}: RSS {:.1} MB -> full {:.1} MB (+{:.1} MB, fill {:.1} s) -> drained {:.1} MB (drain {:.1} s): returned {:.1} MB ({:.0}%)",
            i + 1,
            c.before as f64 / MB,
            c.filled as f64 / MB,
            c.growth() as f64 / MB,
            c.fill_time.as_secs_f64(),
            c.drained as f64 / MB,
            c.drain_time.as_secs_f64(),
            c.returned() as f64 / MB,
            percent(c.returned(), c.growth())
        );
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// `1234567.8` as `1,234,568`.
fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
