//! The dashboard's pages stay fast as the account grows: the median time
//! to serve the account page (filtered, sorted by the available count) of
//! an account of 10,000 queues, and the first page of the messages list of
//! a queue of 100,000 messages, against the same pages of an account of
//! 10 queues and a queue of 10 messages. Both emulators run at once and
//! are asked in turn, so that the machine's noise falls on both alike; the
//! ratios are taken within the run. The goal is each ratio at most 2.
//!
//! `cargo bench -p cf-queues-emulator --bench dashboard`; the sizes can be
//! lowered with `CFQ_BENCH_QUEUES` (default 10,000), `CFQ_BENCH_MESSAGES`
//! (default 100,000) and `CFQ_BENCH_SAMPLES` (requests per page, default 300).
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use cf_queues_emulator::{Emulator, EmulatorHandle, WorkerBody};
use cf_queues_testkit::bench::{Result, env_count, median, time_to_answer};
use cf_queues_testkit::dashboard::Session;
use cf_queues_testkit::raw_http::queue_path;

const GOAL: f64 = 2.0;

/// An emulator whose account holds `queues` queues of one message each,
/// and a queue `list` of `messages` messages; logged in: its session cookie.
async fn filled(
    http: &reqwest::Client,
    queues: usize,
    messages: usize,
) -> (EmulatorHandle, String) {
    let emulator = Emulator::new().start().await.expect("emulator starts");
    for i in 0..queues {
        emulator.push_from_worker(&format!("q-{i:05}"), WorkerBody::Bytes(b"held".to_vec()));
    }
    // Text messages, as a program would push them: in batches of 100.
    let url = format!(
        "{}{}",
        emulator.base_url(),
        queue_path("list", "/messages/batch")
    );
    for start in (0..messages).step_by(100) {
        let batch: Vec<serde_json::Value> = (start..(start + 100).min(messages))
            .map(|i| serde_json::json!({ "body": format!("message {i}"), "content_type": "text" }))
            .collect();
        let answer = http
            .post(&url)
            .bearer_auth(emulator.token().unwrap_or_default())
            .json(&serde_json::json!({ "messages": batch }))
            .send()
            .await
            .expect("batch answered");
        assert!(answer.status().is_success(), "batch: {}", answer.status());
    }
    let session = Session::login(&emulator).await;
    (emulator, session.cookie)
}

/// The time to get `path` whole.
async fn get(
    http: &reqwest::Client,
    emulator: &EmulatorHandle,
    cookie: &str,
    path: &str,
) -> Duration {
    let url = format!("http://{}{path}", emulator.local_addr());
    let page = http.get(url).header("cookie", cookie);
    time_to_answer(page)
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn main() -> Result<()> {
    let queues = env_count("CFQ_BENCH_QUEUES", 10_000)?;
    let messages = env_count("CFQ_BENCH_MESSAGES", 100_000)?;
    let samples = env_count("CFQ_BENCH_SAMPLES", 300)?;
    let runtime = cf_queues_testkit::bench::runtime();
    runtime.block_on(async {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("http client");
        let filling = Instant::now();
        let (small, small_cookie) = filled(&http, 10, 10).await;
        let (big, big_cookie) = filled(&http, queues, messages).await;
        let filled_in = filling.elapsed();
        let pages = [
            ("the account page, filtered and sorted by the available count", "/_dashboard/?q=q-0000&sort=available&order=desc"),
            ("a queue's page with its first 100 messages", "/_dashboard/queues/list"),
        ];
        println!(
            "median time to serve a dashboard page over loopback, {samples} requests each, \
             interleaved (filled in {:.1} s)",
            filled_in.as_secs_f64()
        );
        println!("{:<62} {:>12} {:>12} {:>8}", "page", "small", "large", "ratio");
        let mut worst: f64 = 0.0;
        for (name, path) in pages {
            for _ in 0..10 {
                get(&http, &small, &small_cookie, path).await;
                get(&http, &big, &big_cookie, path).await;
            }
            let (mut s, mut b) = (Vec::new(), Vec::new());
            for _ in 0..samples {
                s.push(get(&http, &small, &small_cookie, path).await);
                b.push(get(&http, &big, &big_cookie, path).await);
            }
            let (s, b) = (median(s), median(b));
            let ratio = b.as_secs_f64() / s.as_secs_f64();
            worst = worst.max(ratio);
            println!(
                "{name:<62} {:>9.3} ms {:>9.3} ms {ratio:>8.2}",
                s.as_secs_f64() * 1e3,
                b.as_secs_f64() * 1e3,
            );
        }
        println!(
            "small: 10 queues, a queue of 10 messages; large: {queues} queues, a queue of {messages} messages"
        );
        println!(
            "goal: each ratio <= {GOAL}: {}",
            if worst <= GOAL { "met" } else { "NOT met" }
        );
        for handle in [small, big] {
            handle.shutdown().await.expect("shutdown");
        }
    });
    Ok(())
}
