//! The callgrind mode (`CFQ_BENCH_CALLGRIND=1`): a fixed workload at no
//! distance and without limits, on a `current_thread` runtime, so that
//! callgrind's instruction count per message compares the consumer with
//! the bare pull + ack loop, and with the consumer of another commit.
//!
//! The emulator serves from a child process (this binary again, with
//! `CFQ_BENCH_SERVE=1`), which valgrind does not follow by default: the
//! count is the client's alone. In-process, the emulator's work per message
//! would be counted on both sides and pull their ratio towards 1.
//!
//! `CFQ_BENCH_ONLY=consumer` or `bare` runs one side (one side per
//! valgrind run); `CFQ_BENCH_MESSAGES` (default 3,000) sets the workload.
//! `cargo xtask callgrind-consumer` runs both, three times each, and against
//! a parent commit. Built with the `metrics` feature, a third side,
//! `prometheus`, is the consumer with the Prometheus exporter's recorder
//! installed first (the example's); `cargo xtask callgrind-metrics` compares
//! the consumer without the feature, with it and no recorder, and with it
//! and that recorder.

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cf_queues::Client;
use cf_queues::consumer::{Consumer, Verdict};
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator};

use crate::steady::fill;
use cf_queues_testkit::bench::{Result, drain, env_count};

/// The queue the child fills.
const QUEUE: &str = "callgrind";
const DEFAULT_MESSAGES: usize = 3_000;

/// The child: an emulator with [`QUEUE`] filled, its base URL and token on
/// one line of stdout, serving until stdin closes.
pub(crate) fn serve() -> Result<()> {
    let messages = env_count("CFQ_BENCH_MESSAGES", DEFAULT_MESSAGES)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let emulator = Emulator::new().start().await?;
        fill(&emulator.client()?.queue(QUEUE)?, messages).await?;
        let token = emulator
            .token()
            .ok_or("the emulator accepts any token; expected a generated one")?;
        println!("{} {token}", emulator.base_url());
        // The parent holds stdin: its end, or its death, ends the child.
        tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        })
        .await?;
        emulator.shutdown().await?;
        Ok(())
    })
}

/// The measured side: one workload per side asked for, on a
/// `current_thread` runtime, each against a freshly filled child emulator.
pub(crate) fn measure() -> Result<()> {
    let messages = env_count("CFQ_BENCH_MESSAGES", DEFAULT_MESSAGES)?;
    let sides: Vec<String> = match std::env::var("CFQ_BENCH_ONLY") {
        Ok(only) if only == "consumer" || only == "bare" => vec![only],
        #[cfg(feature = "metrics")]
        Ok(only) if only == "prometheus" => vec![only],
        Ok(other) => {
            return Err(format!("CFQ_BENCH_ONLY={other:?}: consumer, bare or prometheus").into());
        }
        Err(_) => vec!["consumer".into(), "bare".into()],
    };
    for side in sides {
        let mut child = Command::new(std::env::current_exe()?)
            .env("CFQ_BENCH_SERVE", "1")
            .env("CFQ_BENCH_MESSAGES", messages.to_string())
            .env_remove("CFQ_BENCH_CALLGRIND")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("the child's stdout")?;
        BufReader::new(stdout).read_line(&mut line)?;
        let result = (|| {
            let (base_url, token) = line
                .trim()
                .split_once(' ')
                .ok_or_else(|| format!("the emulator child said {line:?}"))?;
            let client = Client::builder()
                .base_url(base_url)
                .api_token(token)
                .account_id(EMULATOR_ACCOUNT_ID)
                .build()?;
            #[cfg(feature = "metrics")]
            if side == "prometheus" {
                // Before the consumer is built (its handles come from the
                // recorder installed then), and outside the runtime: the
                // metrics script counts only what runs in `block_on`, not
                // the exporter's one-time set-up (its clock's calibration
                // alone is some 12 million instructions). Nothing scrapes it.
                metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let started = Instant::now();
            let drained = runtime.block_on(workload(&side, &client, messages))?;
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "callgrind workload {side}: {drained} messages in {seconds:.2} s ({:.0} msg/s)",
                drained as f64 / seconds
            );
            Ok::<_, cf_queues_testkit::bench::BoxError>(())
        })();
        // Closing stdin ends the child; waiting reaps it.
        drop(child.stdin.take());
        child.wait()?;
        result?;
    }
    Ok(())
}

async fn workload(side: &str, client: &Client, messages: usize) -> Result<usize> {
    let queue = client.queue(QUEUE)?;
    if side == "bare" {
        return drain(&queue).await;
    }

    // A fixed number of pulls in flight, so that runs compare like with
    // like: one, as the consumers before pulls overlapped had.
    let consumer = Consumer::builder(queue)
        .max_pulls_in_flight(1) // callgrind: not in older consumers
        .build()?;
    let stop = consumer.shutdown_token();
    // The last handler stops the consumer: polling a monitor would add a
    // timer's work to the count.
    let handled = Arc::new(AtomicUsize::new(0));
    let run = tokio::spawn(consumer.run(move |_message| {
        if handled.fetch_add(1, Ordering::Relaxed) + 1 == messages {
            stop.cancel();
        }
        std::future::ready(Ok::<_, std::convert::Infallible>(Verdict::Ack))
    }));
    let summary = run.await??;
    if summary.acked != messages as u64 {
        return Err(format!(
            "consumer drained {} of {messages}: {summary:?}",
            summary.acked
        )
        .into());
    }
    Ok(messages)
}
