//! A push's cost with a data directory does not grow with the account:
//! the median time of one push (1 message, over loopback, answered after
//! its synced commit) to a queue of an emulator that holds nothing else,
//! against one whose account holds 10,000 other queues with messages, and
//! one holding 10,000 other accounts with a queue of messages each. The
//! three emulators run at once and are pushed to in turn, so that the
//! machine's noise falls on all three alike; the ratios are taken within
//! the run. The goal is each ratio at most 1.2.
//!
//! `cargo bench -p cf-queues-emulator --bench account_scale`; the sizes can
//! be lowered with `CFQ_BENCH_OTHERS` (default 10,000) and
//! `CFQ_BENCH_SAMPLES` (pushes per emulator, default 400).
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use cf_queues_emulator::{Emulator, EmulatorHandle, WorkerBody};
use cf_queues_testkit::bench::{Result, env_count, median, time_to_answer};
use cf_queues_testkit::raw_http::queue_path;

const GOAL: f64 = 1.2;

async fn start(dir: &std::path::Path) -> EmulatorHandle {
    Emulator::new()
        .data_dir(dir)
        .reset_data_dir(true)
        .start()
        .await
        .expect("emulator starts on its data directory")
}

/// The time of one push of one message to the `bench` queue.
async fn push(http: &reqwest::Client, handle: &EmulatorHandle, body: &'static [u8]) -> Duration {
    let url = format!("{}{}", handle.base_url(), queue_path("bench", "/messages"));
    let push = http
        .post(url)
        .bearer_auth(handle.token().unwrap_or_default())
        .header("content-type", "application/json")
        .body(body);
    time_to_answer(push).await.expect("push answered")
}

fn main() -> Result<()> {
    let others = env_count("CFQ_BENCH_OTHERS", 10_000)?;
    let samples = env_count("CFQ_BENCH_SAMPLES", 400)?;
    let runtime = cf_queues_testkit::bench::runtime();
    runtime.block_on(async {
        let dirs: Vec<tempfile::TempDir> = (0..3)
            .map(|_| tempfile::tempdir().expect("temp dir"))
            .collect();
        let alone = start(dirs[0].path()).await;
        let many_queues = start(dirs[1].path()).await;
        let many_accounts = start(dirs[2].path()).await;
        let filling = Instant::now();
        for i in 0..others {
            let body = || WorkerBody::Bytes(b"held".to_vec());
            many_queues.push_from_worker(&format!("other{i}"), body());
            many_accounts.push_from_worker_in(&format!("{i:032x}"), "other", body());
        }
        let http = reqwest::Client::new();
        let body: &'static [u8] = br#"{"body":"measured","content_type":"text"}"#;
        let emulators = [&alone, &many_queues, &many_accounts];
        // Warm up each (and wait for the filling's commits, which the
        // first answer waits for).
        for handle in emulators {
            for _ in 0..10 {
                push(&http, handle, body).await;
            }
        }
        let filled = filling.elapsed();
        let mut times = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..samples {
            for (handle, times) in emulators.iter().zip(&mut times) {
                times.push(push(&http, handle, body).await);
            }
        }
        let [alone_t, queues_t, accounts_t] = times.map(median);
        let ratio = |t: Duration| t.as_secs_f64() / alone_t.as_secs_f64();
        println!(
            "median push with a data directory, {samples} pushes each, interleaved \
             (filled in {:.1} s)",
            filled.as_secs_f64()
        );
        println!("{:<44} {:>12} {:>8}", "account", "median", "ratio");
        let rows = [
            ("1 queue (baseline)".to_owned(), alone_t),
            (format!("1 queue + {others} non-empty queues"), queues_t),
            (
                format!("1 queue + {others} accounts with a queue"),
                accounts_t,
            ),
        ];
        for (name, t) in &rows {
            println!(
                "{name:<44} {:>9.3} ms {:>8.2}",
                t.as_secs_f64() * 1e3,
                ratio(*t)
            );
        }
        let worst = ratio(queues_t).max(ratio(accounts_t));
        println!(
            "goal: each ratio <= {GOAL}: {}",
            if worst <= GOAL { "met" } else { "NOT met" }
        );
        for handle in [alone, many_queues, many_accounts] {
            handle.shutdown().await.expect("shutdown");
        }
    });
    Ok(())
}
