//! The crash test: an emulator on a data directory, in a child process
//! (`examples/durable_child.rs`), is killed with SIGKILL at random points
//! while clients push, pull and ack through it, and started again on the
//! same directory, `CFQ_CRASH_ROUNDS` times (default 100). The schedule
//! follows `CFQ_CRASH_SEED` (printed; random when unset), so a failure can
//! be rerun. After the last start the queue and its dead-letter queue are
//! drained, and checked: every answered push is stored, acked or
//! dead-lettered; no answered ack comes back; no message is stored twice;
//! no attempt count went down.
#![allow(missing_docs, unreachable_pub)]

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues_testkit::raw_http::leased;
use cf_queues_testkit::rng::Rng;
use serde_json::{Value, json};
use tokio::sync::Notify;

const ACCOUNT: &str = "0123456789abcdef0123456789abcdef";

/// What the clients were told, over every round.
#[derive(Default)]
struct Seen {
    /// Bodies whose push was answered with success.
    pushed: HashSet<String>,
    /// Bodies whose ack was answered with `ackCount` counting them.
    acked: HashSet<String>,
    /// Bodies whose ack was sent but not answered: maybe applied.
    maybe_acked: HashSet<String>,
    /// The highest attempt count a pull answered with, per body.
    attempts: HashMap<String, u64>,
}

fn child_binary() -> PathBuf {
    // Integration tests run from target/<profile>/deps; `cargo test` builds
    // the examples into target/<profile>/examples.
    let exe = std::env::current_exe().expect("test binary path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile directory");
    let binary = profile.join("examples").join("durable_child");
    // Built every time: `cargo test --test crash` alone builds no
    // examples, and leaves an old one stale (a no-op when it is current).
    {
        let mut build = Command::new(env!("CARGO"));
        build.args([
            "build",
            "-p",
            "cf-queues-emulator",
            "--example",
            "durable_child",
        ]);
        if profile.file_name().is_some_and(|name| name == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(
            status.success(),
            "building the durable_child example failed"
        );
    }
    binary
}

/// Starts the child on `dir`; its base URL.
fn start(dir: &Path) -> (Child, String) {
    start_command(Command::new(child_binary()).arg(dir))
}

/// Starts the child on `dir` with files limited to `kib` KiB
/// (RLIMIT_FSIZE) and SIGXFSZ ignored (an ignored signal stays ignored
/// across `exec`), so that a write past the limit fails with EFBIG as on
/// a full disk.
fn start_limited(dir: &Path, kib: u64) -> (Child, String) {
    let script = format!("trap '' XFSZ; ulimit -f {kib} && exec \"$0\" \"$1\"");
    start_command(
        Command::new("bash")
            .arg("-c")
            .arg(script)
            .arg(child_binary())
            .arg(dir),
    )
}

fn start_command(command: &mut Command) -> (Child, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the durable_child example is built (cargo test builds examples)");
    let stdout = child.stdout.take().expect("child stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("child prints its base URL");
    assert!(line.starts_with("http://"), "child said {line:?}");
    (child, line.trim().to_owned())
}

async fn post(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    path: &str,
    body: Value,
) -> Option<Value> {
    let url = format!("{base}/accounts/{ACCOUNT}/queues/{queue}/messages/{path}");
    let response = http
        .post(url)
        .bearer_auth("crash-test")
        .json(&body)
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

/// One client until its requests fail (the child was killed).
async fn client(
    base: String,
    seen: Arc<Mutex<Seen>>,
    mut rng: Rng,
    next: Arc<Mutex<u64>>,
    answered: Arc<Notify>,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("http client");
    loop {
        let bodies: Vec<String> = {
            let mut next = next.lock().expect("counter");
            (0..1 + rng.below(5))
                .map(|_| {
                    *next += 1;
                    format!("m{}", *next)
                })
                .collect()
        };
        let batch: Vec<Value> = bodies
            .iter()
            .map(|b| json!({"body": b, "content_type": "text"}))
            .collect();
        if post(&http, &base, "crash", "batch", json!({"messages": batch}))
            .await
            .is_none()
        {
            return;
        }
        seen.lock().expect("seen").pushed.extend(bodies);
        answered.notify_waiters();
        let pull = json!({"batch_size": 1 + rng.below(10), "visibility_timeout_ms": 60_000});
        let Some(answer) = post(&http, &base, "crash", "pull", pull).await else {
            return;
        };
        let leased = leased(&answer);
        {
            let mut seen = seen.lock().expect("seen");
            for (body, _, attempts) in &leased {
                let before = seen.attempts.get(body).copied().unwrap_or(0);
                assert!(
                    *attempts > before,
                    "{body}: attempts {attempts} after {before}: went back"
                );
                seen.attempts.insert(body.clone(), *attempts);
            }
        }
        // Acks most, leaves some leased for a crash to release.
        let acking: Vec<&(String, String, u64)> =
            leased.iter().filter(|_| rng.below(4) != 0).collect();
        let acks: Vec<Value> = acking.iter().map(|m| json!({"lease_id": m.1})).collect();
        seen.lock()
            .expect("seen")
            .maybe_acked
            .extend(acking.iter().map(|m| m.0.clone()));
        let Some(answer) = post(&http, &base, "crash", "ack", json!({"acks": acks})).await else {
            return;
        };
        let count = answer["result"]["ackCount"].as_u64().unwrap_or(0);
        // Leases are live and distinct, so every ack counts.
        assert_eq!(count, acking.len() as u64, "{answer}");
        let mut seen = seen.lock().expect("seen");
        for m in acking {
            seen.maybe_acked.remove(&m.0);
            seen.acked.insert(m.0.clone());
        }
        drop(seen);
        answered.notify_waiters();
    }
}

/// Pulls and acks everything left in `queue`: (body, attempts) each.
async fn drain(base: &str, queue: &str) -> Vec<(String, u64)> {
    let http = reqwest::Client::new();
    let mut out = Vec::new();
    loop {
        let pull = json!({"batch_size": 100, "visibility_timeout_ms": 600_000});
        let answer = post(&http, base, queue, "pull", pull)
            .await
            .expect("drain pull");
        let leased = leased(&answer);
        if leased.is_empty() {
            return out;
        }
        let acks: Vec<Value> = leased.iter().map(|m| json!({"lease_id": m.1})).collect();
        post(&http, base, queue, "ack", json!({"acks": acks}))
            .await
            .expect("drain ack");
        out.extend(leased.into_iter().map(|m| (m.0, m.2)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_at_random_points_lose_no_answered_push_and_bring_back_no_answered_ack() {
    let seed = std::env::var("CFQ_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    let rounds: u64 = std::env::var("CFQ_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    println!("crash test: CFQ_CRASH_SEED={seed} CFQ_CRASH_ROUNDS={rounds}");
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().expect("temp dir");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let next = Arc::new(Mutex::new(0u64));
    let answered = Arc::new(Notify::new());
    for _ in 0..rounds {
        let (mut child, base) = start(dir.path());
        let clients: Vec<_> = (0..3)
            .map(|_| {
                let rng = Rng::new(rng.next_u64() | 1);
                let answered = Arc::clone(&answered);
                let task = client(
                    base.clone(),
                    Arc::clone(&seen),
                    rng,
                    Arc::clone(&next),
                    answered,
                );
                tokio::spawn(task)
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(10 + rng.below(200))).await;
        // Half the kills land just after an answer reached a client: a
        // change answered before its commit would be lost there.
        if rng.below(2) == 0 {
            let _ = tokio::time::timeout(Duration::from_millis(200), answered.notified()).await;
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        for c in clients {
            if let Err(e) = c.await
                && e.is_panic()
            {
                std::panic::resume_unwind(e.into_panic());
            }
        }
    }
    let (mut child, base) = start(dir.path());
    let left = drain(&base, "crash").await;
    let dead = drain(&base, "crashdlq").await;
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    let seen = seen.lock().expect("seen");
    let mut stored = HashSet::new();
    for (body, attempts) in &left {
        assert!(
            stored.insert(body.clone()),
            "{body} stored twice (seed {seed})"
        );
        let before = seen.attempts.get(body).copied().unwrap_or(0);
        assert!(
            *attempts > before,
            "{body}: attempts {attempts} after {before} (seed {seed})"
        );
    }
    for (body, _) in &dead {
        assert!(
            stored.insert(body.clone()),
            "{body} stored twice (seed {seed})"
        );
    }
    for body in &seen.acked {
        assert!(
            !stored.contains(body),
            "acked {body} came back (seed {seed})"
        );
    }
    for body in &seen.pushed {
        assert!(
            stored.contains(body) || seen.acked.contains(body) || seen.maybe_acked.contains(body),
            "answered push {body} was lost (seed {seed})"
        );
    }
    println!(
        "crash test: {rounds} kills; {} answered pushes, {} answered acks, {} left, {} dead-lettered",
        seen.pushed.len(),
        seen.acked.len(),
        left.len(),
        dead.len()
    );
    assert!(
        seen.pushed.len() > rounds as usize,
        "too little traffic to test anything"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_503_and_loses_no_answered_push() {
    let dir = tempfile::tempdir().expect("temp dir");
    // 6 MiB of file: enough to open the store, not for 100 pushes of 100 kB.
    let (mut child, base) = start_limited(dir.path(), 6 * 1024);
    let http = reqwest::Client::new();
    let filler = "x".repeat(100_000);
    let mut answered = Vec::new();
    let mut refused = 0;
    for i in 0..100 {
        let body = format!("{i}-{filler}");
        let url = format!("{base}/accounts/{ACCOUNT}/queues/crash/messages");
        let response = http
            .post(url)
            .bearer_auth("crash-test")
            .json(&json!({"body": body, "content_type": "text"}))
            .send()
            .await
            .expect("the child answers");
        match response.status().as_u16() {
            200 => {
                assert_eq!(refused, 0, "a success after a failed commit");
                answered.push(i);
            }
            503 => refused += 1,
            other => panic!("push {i} answered {other}"),
        }
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert!(refused > 0, "the file limit was never reached");
    assert!(!answered.is_empty(), "nothing fit under the file limit");
    // Without the limit, every answered push is there.
    let (mut child, base) = start(dir.path());
    let left = drain(&base, "crash").await;
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let mut stored: Vec<u64> = left
        .iter()
        .filter_map(|(body, _)| body.split('-').next()?.parse().ok())
        .collect();
    stored.sort_unstable();
    for i in &answered {
        assert!(
            stored.contains(i),
            "answered push {i} was lost to the full disk"
        );
    }
    println!(
        "full disk: {} pushes answered, {refused} refused with 503, {} stored",
        answered.len(),
        stored.len()
    );
}
