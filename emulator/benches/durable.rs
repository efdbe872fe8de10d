//! End-to-end throughput with a data directory beside the in-memory
//! emulator, in the same run: 4 workers on one shared queue, each cycling
//! batch push 100, pull 100, ack 100 over loopback with pre-built JSON,
//! as `benches/throughput` of the root crate does with its bare baseline.
//! Prints messages/s of both, their ratio, and the synced commits per
//! changing request (group commit).
//!
//! `cargo bench -p cf-queues-emulator --bench durable`; the message count
//! per worker can be lowered with `CFQ_BENCH_MESSAGES` (default 20,000).
#![allow(missing_docs)]

use std::time::Instant;

use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle};
use serde_json::{Value, json};

const WORKERS: usize = 4;
const BATCH: usize = 100;

async fn cycle(http: reqwest::Client, base: String, token: String, batches: usize) -> usize {
    let messages: Vec<Value> = (0..BATCH)
        .map(|i| json!({"body": format!("{i:0>100}"), "content_type": "text"}))
        .collect();
    let push = serde_json::to_vec(&json!({ "messages": messages })).unwrap_or_default();
    let pull = serde_json::to_vec(&json!({"batch_size": BATCH, "visibility_timeout_ms": 60_000}))
        .unwrap_or_default();
    let mut moved = 0;
    for _ in 0..batches {
        let post = |path: &str, body: Vec<u8>| {
            http.post(format!("{base}/messages/{path}"))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(body)
                .send()
        };
        let pushed = post("batch", push.clone()).await;
        assert!(pushed.is_ok_and(|r| r.status().is_success()), "push");
        let pulled: Value = match post("pull", pull.clone()).await {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(e) => panic!("pull: {e}"),
        };
        let acks: Vec<Value> = pulled["result"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| json!({"lease_id": m["lease_id"]}))
            .collect();
        moved += acks.len();
        let body = serde_json::to_vec(&json!({"acks": acks})).unwrap_or_default();
        let acked = post("ack", body).await;
        assert!(acked.is_ok_and(|r| r.status().is_success()), "ack");
    }
    moved
}

/// Messages per second through `handle`, and the changing requests sent.
async fn run(handle: &EmulatorHandle, per_worker: usize) -> (f64, u64) {
    let base = format!(
        "{}/accounts/{EMULATOR_ACCOUNT_ID}/queues/bench",
        handle.base_url()
    );
    let token = handle.token().unwrap_or_default().to_owned();
    let http = reqwest::Client::new();
    let batches = per_worker / BATCH;
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| tokio::spawn(cycle(http.clone(), base.clone(), token.clone(), batches)))
        .collect();
    let mut moved = 0;
    for worker in workers {
        moved += worker.await.unwrap_or(0);
    }
    let rate = moved as f64 / started.elapsed().as_secs_f64();
    (rate, (WORKERS * batches * 3) as u64)
}

fn main() {
    let per_worker: usize = std::env::var("CFQ_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let runtime = cf_queues_testkit::bench::runtime();
    runtime.block_on(async {
        let memory = Emulator::new().start().await.expect("in-memory emulator");
        let (in_memory, _) = run(&memory, per_worker).await;
        memory.shutdown().await.expect("shutdown");

        let dir = std::env::temp_dir().join(format!("cfq-durable-bench-{}", std::process::id()));
        let durable = Emulator::new()
            .data_dir(&dir)
            .reset_data_dir(true)
            .start()
            .await
            .expect("durable emulator");
        let commits_before = durable.data_commits();
        let (on_disk, requests) = run(&durable, per_worker).await;
        let commits = durable.data_commits() - commits_before;
        durable.shutdown().await.expect("shutdown");
        let _ = std::fs::remove_dir_all(&dir);

        println!("{WORKERS} workers, batch push {BATCH} / pull {BATCH} / ack {BATCH}, {per_worker} messages each");
        println!("in memory:          {in_memory:>10.0} messages/s");
        println!("data directory:     {on_disk:>10.0} messages/s");
        println!("ratio:              {:>10.2}", on_disk / in_memory);
        println!(
            "synced commits:     {commits} for {requests} changing requests ({:.2} per request)",
            commits as f64 / requests as f64
        );
    });
}
