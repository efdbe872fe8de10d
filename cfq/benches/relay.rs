//! `cfq relay` at a distance: its steady throughput to a local service
//! that does nothing, beside the consumer runtime's with a no-op handler,
//! both against the emulator with a 100 ms round trip and Cloudflare's
//! limits (`RateLimitModel::cloudflare()`), measured in the same run; and
//! the relay's CPU time per message.
//!
//! Run with `cargo bench -p cfq --bench relay` (a release build of `cfq`).
//!
//! Each run: a queue filled at no distance (`cf_queues_testkit::distance`),
//! then the round trip and the limits on, a warm-up of 5 s, then 30 s
//! measured: the messages acked in the window, from the queue's backlog
//! (the relay's) or the consumer's counters. The relay is the `cfq`
//! binary, a child process, with its defaults and then `--batch 10`; its
//! CPU time is read from `/proc/PID/stat` over the window. Goal: each relay
//! at least 90 % of the consumer's throughput.
//!
//! Environment: `CFQ_BENCH_WARMUP_SECS` (5), `CFQ_BENCH_STEADY_SECS` (30).

use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use cf_queues::consumer::{Consumer, Verdict};
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle};
use cf_queues_testkit::bench::{Result, env_count, thousands};
use cf_queues_testkit::distance::{CLOUDFLARE_RATE, at_distance, filled};
use cf_queues_testkit::recording_target::{RecordingTarget, Reply};

const ROUND_TRIP: Duration = Duration::from_millis(100);
const TOKEN: &str = "relay-bench-token";

fn main() -> ExitCode {
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Into::into)
        .and_then(|runtime| runtime.block_on(run()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relay bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One measured window.
struct Window {
    messages: u64,
    seconds: f64,
    /// The relay's CPU time in the window (user + system), when measured.
    cpu: Option<Duration>,
}

impl Window {
    fn rate(&self) -> f64 {
        self.messages as f64 / self.seconds
    }
}

async fn run() -> Result<()> {
    let warm_up = Duration::from_secs(env_count("CFQ_BENCH_WARMUP_SECS", 5)? as u64);
    let steady = Duration::from_secs(env_count("CFQ_BENCH_STEADY_SECS", 30)? as u64);
    let emulator = Emulator::new().token(TOKEN).start().await?;
    let service = RecordingTarget::counting().await;
    service.script(|_| Reply::status(204));
    println!(
        "cfq relay at a {} ms round trip, Cloudflare's limits, a no-op service; {} s warm-up, {} s measured",
        ROUND_TRIP.as_millis(),
        warm_up.as_secs(),
        steady.as_secs()
    );
    let consumer = consumer_steady(&emulator, warm_up, steady).await?;
    println!(
        "  consumer runtime, no-op handler: {} msg/s",
        thousands(consumer.rate())
    );
    for extra in [&[][..], &["--batch", "10"][..]] {
        let relay = relay_steady(&emulator, &service, extra, warm_up, steady).await?;
        let cpu = relay.cpu.unwrap_or_default();
        println!(
            "  cfq relay {}: {} msg/s, {:.1} % of the consumer's (goal ≥ 90 %); CPU {:.0} µs a message ({:.2} s in {:.0} s)",
            if extra.is_empty() {
                "(one message a POST)".to_owned()
            } else {
                extra.join(" ")
            },
            thousands(relay.rate()),
            100.0 * relay.rate() / consumer.rate(),
            cpu.as_secs_f64() * 1e6 / relay.messages.max(1) as f64,
            cpu.as_secs_f64(),
            relay.seconds
        );
    }
    Ok(())
}

/// What a steady window needs: Cloudflare's rate for the whole run, and a
/// tenth more, so that the queue never runs dry.
fn needed(warm_up: Duration, steady: Duration) -> usize {
    CLOUDFLARE_RATE * (warm_up + steady).as_secs() as usize * 11 / 10
}

async fn consumer_steady(
    emulator: &EmulatorHandle,
    warm_up: Duration,
    steady: Duration,
) -> Result<Window> {
    let client = emulator.client()?;
    let queue = filled(emulator, &client, "consumer", needed(warm_up, steady)).await?;
    at_distance(emulator, ROUND_TRIP, true);
    let consumer = Consumer::builder(queue).build()?;
    let (monitor, stop) = (consumer.monitor(), consumer.shutdown_token());
    let run = tokio::spawn(
        consumer.run(|_message| async { Ok::<_, std::convert::Infallible>(Verdict::Ack) }),
    );
    tokio::time::sleep(warm_up).await;
    let before = monitor.snapshot().acked;
    let started = Instant::now();
    tokio::time::sleep(steady).await;
    let window = Window {
        messages: monitor.snapshot().acked - before,
        seconds: started.elapsed().as_secs_f64(),
        cpu: None,
    };
    stop.cancel();
    run.await??;
    emulator.set_latency(None);
    emulator.set_rate_limits(None);
    Ok(window)
}

async fn relay_steady(
    emulator: &EmulatorHandle,
    service: &RecordingTarget,
    extra: &[&str],
    warm_up: Duration,
    steady: Duration,
) -> Result<Window> {
    let client = emulator.client()?;
    let name = format!("relay{}", extra.len());
    filled(emulator, &client, &name, needed(warm_up, steady)).await?;
    at_distance(emulator, ROUND_TRIP, true);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cfq"))
        .env_remove("CLOUDFLARE_API_KEY")
        .env_remove("CLOUDFLARE_EMAIL")
        .env("CLOUDFLARE_BASE_URL", emulator.base_url())
        .env("CLOUDFLARE_API_TOKEN", TOKEN)
        .env("CLOUDFLARE_ACCOUNT_ID", EMULATOR_ACCOUNT_ID)
        .args(["relay", "--queue-id", &name, "--to", &service.url()])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()?;
    tokio::time::sleep(warm_up).await;
    let (backlog, cpu) = (emulator.metrics(&name).backlog_count, cpu_time(&child)?);
    let started = Instant::now();
    tokio::time::sleep(steady).await;
    let window = Window {
        messages: backlog - emulator.metrics(&name).backlog_count,
        seconds: started.elapsed().as_secs_f64(),
        cpu: Some(cpu_time(&child)? - cpu),
    };
    stop(&mut child)?;
    emulator.set_latency(None);
    emulator.set_rate_limits(None);
    if emulator.metrics(&name).backlog_count == 0 {
        return Err(format!("{name} ran dry: the figure would be low").into());
    }
    Ok(window)
}

/// A process's user + system CPU time so far, from `/proc/PID/stat`.
fn cpu_time(child: &Child) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id()))?;
    // The command name (2nd field) may hold spaces: count from after it.
    let after_name = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or("no ) in stat")?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15, so 11 and 12 after the name.
    let ticks: u64 = fields.get(11).ok_or("no utime")?.parse::<u64>()?
        + fields.get(12).ok_or("no stime")?.parse::<u64>()?;
    let per_second: u64 =
        String::from_utf8(Command::new("getconf").arg("CLK_TCK").output()?.stdout)?
            .trim()
            .parse()?;
    Ok(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// SIGTERM, and the child's exit.
fn stop(child: &mut Child) -> Result<()> {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("cfq relay exited {status}").into());
    }
    Ok(())
}
