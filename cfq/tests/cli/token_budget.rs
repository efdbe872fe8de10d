//! `cfq push --file` and `cfq replay` under a per-credential window small
//! enough to reach in a test (4 requests a second, then a five-minute
//! block): both are paced by the emulator's `Ratelimit` headers, so they
//! finish without ever being blocked, however many batches they send.

use std::time::{Duration, Instant};

use cf_queues_emulator::RateLimitModel;

use crate::support::{cfq, emulator_with, lax_queues, pull_all_numbered, queue_of, run, temp_dir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_file_and_replay_are_paced_by_the_headers_and_never_blocked() {
    let model = RateLimitModel::cloudflare().per_credential(
        4,
        Duration::from_secs(1),
        Duration::from_secs(300),
    );
    let emulator = emulator_with(|emulator| emulator.rate_limits(model)).await;
    lax_queues(&emulator, &["paced", "replayed"]).await;
    let dir = temp_dir("budget");
    let file = dir.join("lines.txt");
    let lines: Vec<String> = (1..=500).map(|i| format!("line {i}")).collect();
    std::fs::write(&file, lines.join("\n")).expect("write");

    // Five batches at 4 a second, aiming 3: no burst of five goes at once.
    let started = Instant::now();
    let mut push = cfq(&emulator);
    push.args(["push", "--queue", "paced", "--file"]).arg(&file);
    let pushed = run(push).await;
    pushed.expect_code(0);
    assert_eq!(pushed.one()["pushed"], 500);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "paced: {:?}",
        started.elapsed()
    );

    let drained = dir.join("drained.ndjson");
    let mut drain = cfq(&emulator);
    drain
        .args(["drain", "--queue", "paced", "--to"])
        .arg(&drained);
    run(drain).await.expect_code(0);

    let mut replay = cfq(&emulator);
    replay
        .arg("replay")
        .arg(&drained)
        .args(["--to", "replayed"]);
    let replayed = run(replay).await;
    replayed.expect_code(0);
    assert_eq!(replayed.one()["pushed"], 500);

    // Never blocked: a blocked token would refuse these pulls for 300 s.
    let bodies = pull_all_numbered(&emulator, "replayed", "line").await;
    assert_eq!(bodies, lines);
}

/// Four `cfq push --file` processes on one token, as four replicas of a
/// service would run, against a window of 60 requests per 15 s (then a
/// five-minute block): each reads in the `Ratelimit` figures what the
/// others spend and paces to its share, so together they push 100 batches,
/// almost two windows' worth, and none is ever refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_file_processes_on_one_token_share_its_budget() {
    const PROCESSES: usize = 4;
    const LINES: usize = 2_500;
    let model = RateLimitModel::cloudflare().per_credential(
        60,
        Duration::from_secs(15),
        Duration::from_secs(300),
    );
    let emulator = emulator_with(|emulator| emulator.rate_limits(model)).await;
    lax_queues(&emulator, &["shared"]).await;
    let dir = temp_dir("replicas");
    let mut pushes = Vec::new();
    for process in 0..PROCESSES {
        let file = dir.join(format!("{process}.txt"));
        let lines: Vec<String> = (1..=LINES).map(|i| format!("{process}: {i}")).collect();
        std::fs::write(&file, lines.join("\n")).expect("write");
        let mut push = cfq(&emulator);
        push.args(["push", "--queue", "shared", "--file"])
            .arg(&file);
        pushes.push(tokio::spawn(run(push)));
    }
    let started = Instant::now();
    for pushed in pushes {
        let pushed = pushed.await.expect("no panic");
        pushed.expect_code(0);
        assert_eq!(pushed.one()["pushed"], LINES);
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(45), "{took:?}");
    // Two windows' worth: the processes waited for the window, together.
    assert!(took > Duration::from_secs(15), "{took:?}");
    assert_eq!(
        emulator.metrics("shared").backlog_count,
        (PROCESSES * LINES) as u64
    );
    // Never blocked: a blocked token would refuse this pull for 300 s.
    let pulled = queue_of(&emulator, "shared")
        .pull(Default::default())
        .await
        .expect("the token is not blocked");
    assert!(!pulled.messages.is_empty());
}
