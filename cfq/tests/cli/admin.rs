//! `cfq metrics`, `extend` and `purge --all`: against an httpmock server
//! pinned to Cloudflare's wire shapes (and answers the emulator does not
//! give, such as warnings and server errors), then against the emulator.

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::{
    Pty, TOKEN, cfq, cfq_on_wire, emulator, emulator_with_queues, push_each, queue_of, run,
    run_cfq, run_cfq_typing, run_with_stdin,
};
use cf_queues_emulator::Fault;
use cf_queues_testkit::wire::{QUEUE, answer_with, path, success};
use httpmock::Method::{GET, POST};
use httpmock::MockServer;
use serde_json::{Value, json};

/// `GET /purge` answers that the purge started at a fixed time, and has
/// or has not `completed`.
async fn purge_status(server: &MockServer, completed: bool) -> httpmock::Mock<'_> {
    let status = json!({"completed": completed, "started_at": "2026-11-29T10:00:00Z"});
    answer_with(server, (GET, "/purge"), None, status).await
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_for_scripts_and_for_people() {
    let server = MockServer::start_async().await;
    let oldest = now_ms() - 192_000;
    let mock = server
        .mock_async(|when, then| {
            when.method(GET)
                .path(path("/metrics"))
                .header("authorization", format!("Bearer {TOKEN}"));
            then.status(200).json_body(success(json!({
                "backlog_count": 1234, "backlog_bytes": 5_600_000, "oldest_message_timestamp_ms": oldest
            })));
        })
        .await;
    let mut metrics = cfq_on_wire(&server.base_url());
    metrics.args(["metrics", "--queue", QUEUE]);
    let read = run(metrics).await;
    let line = read.expect_code(0).one();
    assert_eq!(line["backlog_count"], 1234);
    assert_eq!(line["backlog_bytes"], 5_600_000);
    assert_eq!(line["oldest_message_timestamp_ms"], oldest);
    assert!(
        line["oldest_message_age_ms"]
            .as_u64()
            .is_some_and(|age| age >= 192_000)
    );

    let mut people = cfq_on_wire(&server.base_url());
    people.args(["metrics", "--queue", QUEUE, "--output", "table"]);
    let read = run(people).await;
    read.expect_code(0);
    assert!(
        read.stdout
            .contains("1234 messages, 5.6 MB, oldest pushed 3m"),
        "{read:?}"
    );
    assert_eq!(mock.calls_async().await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_watch_prints_until_interrupted() {
    let server = MockServer::start_async().await;
    let empty = json!({"backlog_count": 0, "backlog_bytes": 0, "oldest_message_timestamp_ms": 0});
    answer_with(&server, (GET, "/metrics"), None, empty).await;
    let mut watch = cfq_on_wire(&server.base_url());
    watch
        .args(["metrics", "--queue", QUEUE, "--watch", "100ms"])
        .stdout(Stdio::piped());
    let lines = tokio::task::spawn_blocking(move || {
        let mut child = watch.spawn().expect("cfq starts");
        let stdout = child.stdout.take().expect("stdout");
        let lines: Vec<String> = BufReader::new(stdout)
            .lines()
            .take(3)
            .map(|l| l.expect("utf-8"))
            .collect();
        child.kill().expect("kill");
        child.wait().expect("reaped");
        lines
    })
    .await
    .expect("no panic");
    assert_eq!(lines.len(), 3);
    let mut read_at = Vec::new();
    for line in lines {
        let sample: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(sample["backlog_count"], 0);
        assert!(
            sample.get("oldest_message_age_ms").is_none(),
            "none when unknown"
        );
        read_at.push(sample["at_ms"].as_u64().expect("at_ms"));
    }
    // 100ms is below the floor that keeps a watch within a quarter of the
    // token's budget: one reading a second at most.
    for pair in read_at.windows(2) {
        assert!(pair[1] - pair[0] >= 1_000, "{read_at:?}");
    }
}

/// A metrics call that fails in a way worth trying again (a 503 through
/// every retry of the library) is reported on stderr, and the watch goes
/// on; a refusal that would only repeat (bad credentials) ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_watch_keeps_watching_through_transient_errors() {
    let emulator = emulator_with_queues(&["watched"]).await;
    // The first call and its two retries.
    emulator.inject(
        Fault::status(503)
            .times(3)
            .only(cf_queues_emulator::Operation::Metrics),
    );
    let mut watch = cfq(&emulator);
    watch
        .args(["metrics", "--queue", "watched", "--watch", "100ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (first, stderr) = tokio::task::spawn_blocking(move || {
        let mut child = watch.spawn().expect("cfq starts");
        let stdout = child.stdout.take().expect("stdout");
        let first = BufReader::new(stdout).lines().next();
        child.kill().expect("kill");
        let output = child.wait_with_output().expect("reaped");
        (first, String::from_utf8_lossy(&output.stderr).into_owned())
    })
    .await
    .expect("no panic");
    let first = first.expect("a sample after the error").expect("utf-8");
    let sample: Value = serde_json::from_str(&first).expect("json");
    assert_eq!(sample["backlog_count"], 0);
    assert_eq!(
        stderr.matches("cfq: error: ").count(),
        1,
        "one line for the failed call: {stderr}"
    );
    assert!(stderr.contains("HTTP 503"), "{stderr}");

    let mut refused = cfq(&emulator);
    refused
        .env("CLOUDFLARE_API_TOKEN", "not-the-token")
        .args(["metrics", "--queue", "watched", "--watch", "100ms"]);
    run(refused).await.expect_code(3);
}

/// A purge that started but did not complete in time is partial (7): it
/// goes on, on Cloudflare's side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_all_that_does_not_complete_in_time_is_partial() {
    let server = MockServer::start_async().await;
    let started = json!({"queue_id": QUEUE, "queue_name": "orders"});
    answer_with(&server, (POST, "/purge"), None, started).await;
    purge_status(&server, false).await;
    let mut purge = cfq_on_wire(&server.base_url());
    purge.args([
        "purge",
        "--all",
        "--yes",
        "--timeout",
        "300ms",
        "--queue",
        QUEUE,
    ]);
    let late = run(purge).await;
    late.expect_stderr(
        7,
        &format!("the purge of {QUEUE} started but did not complete within 300ms"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extend_sends_the_leases_and_reports_warnings() {
    let server = MockServer::start_async().await;
    let request = json!({
        "extend": [{"lease_id": "lease-1"}, {"lease_id": "lease-2"}],
        "visibility_timeout_ms": 120_000
    });
    let answer = json!({
        "extendCount": 1, "warnings": {"lease-2": "message was delivered again"}
    });
    let mock = answer_with(&server, (POST, "/messages/extend"), Some(request), answer).await;
    let mut extend = cfq_on_wire(&server.base_url());
    extend.args([
        "extend",
        "--queue",
        QUEUE,
        "--visibility",
        "2m",
        "lease-1",
        "lease-2",
    ]);
    let extended = run(extend).await;
    mock.assert_async().await;
    let report = extended.expect_code(7).one();
    assert_eq!(report["extended"], 1);
    assert_eq!(report["warnings"][0]["subject"], "lease-2");
    assert!(
        extended
            .stderr
            .contains("lease-2: message was delivered again")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_all_asks_for_the_queue_id_then_waits_for_completion() {
    let server = MockServer::start_async().await;
    let confirmed = json!({"delete_messages_permanently": true});
    let started = json!({"queue_id": QUEUE, "queue_name": "orders"});
    let purge = answer_with(&server, (POST, "/purge"), Some(confirmed), started).await;
    let status = purge_status(&server, true).await;

    let mut refused = cfq_on_wire(&server.base_url());
    refused.args(["purge", "--all", "--queue", QUEUE]);
    let refused = run_with_stdin(refused, "orders\n").await;
    refused.expect_stderr(1, "Type the queue id");
    assert!(refused.stderr.contains("nothing was purged"), "{refused:?}");
    assert_eq!(
        purge.calls_async().await,
        0,
        "no request without confirmation"
    );

    let mut confirmed = cfq_on_wire(&server.base_url());
    confirmed.args(["purge", "--all", "--queue", QUEUE]);
    let confirmed = run_with_stdin(confirmed, &format!("{QUEUE}\n")).await;
    confirmed.expect_code(0);
    assert_eq!(
        confirmed.one(),
        json!({"queue": QUEUE, "purge": "completed", "started_at": "2026-11-29T10:00:00Z"})
    );
    assert_eq!(
        (purge.calls_async().await, status.calls_async().await),
        (1, 1)
    );

    let mut unattended = cfq_on_wire(&server.base_url());
    unattended.args(["purge", "--all", "--yes", "--no-wait", "--queue", QUEUE]);
    let unattended = run(unattended).await;
    unattended.expect_code(0);
    assert_eq!(unattended.one()["purge"], "started");
    assert_eq!(
        (purge.calls_async().await, status.calls_async().await),
        (2, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_all_is_not_sent_twice_after_a_server_error() {
    let server = MockServer::start_async().await;
    let purge = server
        .mock_async(|when, then| {
            when.method(POST).path(path("/purge"));
            then.status(503).json_body(json!({
                "success": false, "errors": [{"code": 15000, "message": "UnknownInternalError"}]
            }));
        })
        .await;
    let mut purge_all = cfq_on_wire(&server.base_url());
    purge_all.args(["purge", "--all", "--yes", "--queue", QUEUE]);
    let failed = run(purge_all).await;
    failed.expect_code(5);
    assert!(
        failed.stderr.contains("HTTP 503") && failed.stderr.contains("15000"),
        "{failed:?}"
    );
    assert_eq!(purge.calls_async().await, 1);
}

/// The same three against the emulator, which serves them since the
/// merge of its newer operations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_extend_and_purge_all_against_the_emulator() {
    let emulator = emulator().await;
    let queue = queue_of(&emulator, "newer");
    push_each(&queue, &["first", "second", "third"]).await;

    let read = run_cfq(&emulator, ["metrics", "--queue", "newer"]).await;
    let line = read.expect_code(0).one();
    assert_eq!(line["backlog_count"], 3);
    assert!(
        line["backlog_bytes"].as_u64().is_some_and(|b| b > 0),
        "{line}"
    );
    assert!(line["oldest_message_age_ms"].is_u64(), "{line}");

    // A lease extended past the visibility timeout keeps its message away.
    let pulled = run_cfq(
        &emulator,
        "pull --queue newer --batch 1 --visibility 1s".split_whitespace(),
    )
    .await
    .one();
    let lease = pulled["lease_id"].as_str().expect("lease").to_owned();
    let extended = run_cfq(
        &emulator,
        ["extend", "--queue", "newer", "--visibility", "5m", &lease],
    )
    .await;
    extended.expect_code(0);
    assert_eq!(extended.one()["extended"], 1);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let rest = run_cfq(
        &emulator,
        "pull --queue newer --batch 10 --retry-after 0s".split_whitespace(),
    )
    .await;
    let bodies: Vec<Value> = rest.json().iter().map(|r| r["body"].clone()).collect();
    assert_eq!(bodies, [json!("second"), json!("third")], "{rest:?}");

    run_cfq(
        &emulator,
        "extend --queue newer --visibility 1m no-such-lease".split_whitespace(),
    )
    .await
    .expect_code(7);

    let purged = run_cfq_typing(&emulator, "purge --all --queue newer", "newer\n").await;
    purged.expect_code(0);
    assert_eq!(purged.one()["purge"], "completed");
    assert_eq!(emulator.metrics("newer").backlog_count, 0);
}

/// `metrics --watch` on a terminal (a pseudo-terminal made by `script`):
/// a live view redrawn in place, with the backlog and its sparkline, that
/// Ctrl-C stops cleanly (exit 0, the cursor shown again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_watch_on_a_terminal_redraws_in_place_until_ctrl_c() {
    let emulator = emulator_with_queues(&["watched"]).await;
    let queue = queue_of(&emulator, "watched");
    for i in 0..3 {
        queue
            .push(cf_queues::Message::text(format!("m{i}")))
            .await
            .expect("push");
    }
    let watch = cfq(&emulator);
    // `--watch` alone: every 2s.
    let (status, seen, _) = tokio::task::spawn_blocking(move || {
        let mut pty = Pty::start(&watch, "metrics --queue watched --watch", 80);
        // Two frames, a second apart, then Ctrl-C through the terminal.
        pty.wait_for("the last 2 readings\r\n", Duration::from_secs(30));
        pty.type_keys(b"\x03");
        pty.exit_within(Duration::from_secs(10))
    })
    .await
    .expect("no panic");
    assert!(status.success(), "{status:?}: {seen:?}");
    // Hidden while drawing, and shown again at the end.
    assert!(seen.starts_with("\x1b[?25l"), "{seen:?}");
    assert!(seen.trim_end().ends_with("\x1b[?25h"), "{seen:?}");
    // The second frame is drawn over the first: five lines up.
    let (first, second) = seen
        .split_once("\x1b[5A")
        .unwrap_or_else(|| panic!("no redraw: {seen:?}"));
    assert!(
        first.contains("watched: every 2s, the last 1 readings"),
        "{first:?}"
    );
    for frame in [first, second] {
        assert!(frame.contains("backlog       3 messages"), "{frame:?}");
        assert!(frame.contains("Ctrl-C to stop"), "{frame:?}");
    }
    assert!(
        second.contains("+0/s  ▁▁"),
        "two readings, the same: {second:?}"
    );
    // No JSON on a terminal.
    assert!(!seen.contains("backlog_count"), "{seen:?}");
}
