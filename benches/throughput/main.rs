//! Throughput and memory of the emulator, driven through the `cf_queues`
//! client on loopback.
//!
//! Run with `cargo bench --bench throughput`.
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
//! - `CFQ_BENCH_DISTANT_MESSAGES`: messages per drain at a 100 ms round trip
//!   (default 2,000; each run takes about a second per 500);
//! - `CFQ_BENCH_MEMORY_ONLY=1`: set by the bench for its child: run only the
//!   memory measurement and print it as one `MEMORY key=value ...` line.
//!
//! Layout: each measurement is a module that prints its progress and returns
//! its figures ([`cycle`], [`distance`], [`memory`]); [`baseline`] is the bare-reqwest
//! driver, `cf_queues_testkit::bench` what any measurement can use, and [`report`] the final
//! table, a section per measurement. A new measurement over the same emulator
//! is one more module, one call in [`run`] and one section in [`report`].

mod baseline;
mod cycle;
mod distance;
mod memory;
mod report;

use std::process::ExitCode;
use std::time::Instant;

use cf_queues_emulator::Emulator;

use cf_queues_testkit::bench::{BATCH, Result, env_count};

const DEFAULT_MESSAGES: usize = 30_000;
const DEFAULT_DISTANT_MESSAGES: usize = 2_000;

fn main() -> ExitCode {
    // Arguments (`cargo bench` passes `--bench`) are ignored.
    let memory_only = std::env::var_os(memory::MEMORY_ONLY_ENV).is_some_and(|v| v == "1");
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
            runtime.block_on(memory::child_run()),
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

async fn run() -> Result<()> {
    let messages = env_count("CFQ_BENCH_MESSAGES", DEFAULT_MESSAGES)?;
    let backlog = memory::backlog_from_env()?;
    let distant = env_count("CFQ_BENCH_DISTANT_MESSAGES", DEFAULT_DISTANT_MESSAGES)?;
    let rounds = messages.div_ceil(BATCH);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let started = Instant::now();

    let emulator = Emulator::new().start().await?;
    let client = emulator.client()?;
    let throughput = cycle::measure(&emulator, &client, rounds).await?;
    let distance = distance::measure(&emulator, &client, distant).await?;
    let memory = memory::measure(&emulator, &client, backlog).await?;

    report::print(&report::Report {
        cores,
        messages: rounds * BATCH,
        rounds,
        throughput: &throughput,
        distance: &distance,
        memory: &memory,
    });
    println!("(bench took {:.1} s)", started.elapsed().as_secs_f64());
    emulator.shutdown().await?;
    Ok(())
}
