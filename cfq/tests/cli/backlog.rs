//! The queue's backlog for autoscalers: the relay's `/metrics` and `cfq
//! metrics --listen` export what `cfq metrics` shows, the relay's while it
//! pulls nothing yet (`--wait-for-target`), the exporter's with no
//! consumer at all.

use std::process::{Child, Stdio};

use cf_queues_testkit::recording_target::RecordingTarget;
use serde_json::Value;

use crate::relay::{SECOND, pushed, start, stop};
use crate::relay_options::{free_address, get, until_status};
use crate::support::{cfq, emulator_with_queues, finish, run, signal};

/// The value of the series `name{labels}` in a Prometheus page, if any.
fn series(page: &str, name: &str, queue: &str) -> Option<f64> {
    let prefix = format!("{name}{{messaging_destination_name=\"{queue}\"}} ");
    page.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|value| value.trim().parse().ok())
}

/// The three backlog gauges of `queue` on a page: messages, bytes, age.
fn gauges(page: &str, queue: &str) -> (Option<f64>, Option<f64>, Option<f64>) {
    (
        series(page, "cf_queues_queue_backlog_messages", queue),
        series(page, "cf_queues_queue_backlog_bytes", queue),
        series(page, "cf_queues_queue_oldest_message_age", queue),
    )
}

/// `cfq metrics` as JSON: the count, the bytes and the oldest's age in
/// seconds.
async fn shown(emulator: &cf_queues_emulator::EmulatorHandle, queue: &str) -> (f64, f64, f64) {
    let mut command = cfq(emulator);
    command.args(["metrics", "--queue", queue, "--output", "json"]);
    let line: Value = run(command).await.expect_code(0).one();
    let number = |field: &str| line[field].as_f64().unwrap_or(f64::NAN);
    (
        number("backlog_count"),
        number("backlog_bytes"),
        number("oldest_message_age_ms") / 1000.0,
    )
}

fn exporter(
    emulator: &cf_queues_emulator::EmulatorHandle,
    address: &str,
    queues: &[&str],
) -> Child {
    let mut command = cfq(emulator);
    command.args(["metrics", "--queue", queues[0], "--listen", address]);
    for also in &queues[1..] {
        command.args(["--also", also]);
    }
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cfq starts")
}

#[track_caller]
fn assert_same(page: &str, queue: &str, (messages, bytes, age): (f64, f64, f64)) {
    let (m, b, a) = gauges(page, queue);
    assert_eq!((m, b), (Some(messages), Some(bytes)), "{queue}: {page}");
    let a = a.unwrap_or_else(|| panic!("no age gauge for {queue}: {page}"));
    assert!((a - age).abs() < 30.0, "{queue}: age {a} s, shown {age} s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_and_the_exporter_export_the_backlog_cfq_metrics_shows() {
    let emulator = emulator_with_queues(&["scaled", "other"]).await;
    pushed(&emulator, "scaled", 50).await;
    pushed(&emulator, "other", 7).await;
    let scaled = shown(&emulator, "scaled").await;
    let other = shown(&emulator, "other").await;
    assert_eq!((scaled.0, other.0), (50.0, 7.0));

    // A relay held back by its service: it pulls nothing, yet its gauges
    // say 50 (the pulled backlog it also exports stays 0: no pull).
    let service = RecordingTarget::start().await;
    service.go_down();
    let relay_address = free_address();
    let relay = start(
        &emulator,
        "scaled",
        &service.url(),
        &["--wait-for-target", "--listen", &relay_address],
    );
    until_status(&relay_address, "/readyz", 503).await;
    let (status, page) = get(&relay_address, "/metrics").await;
    assert_eq!(status, 200);
    assert_same(&page, "scaled", scaled);

    // The exporter with no consumer: both queues.
    let exporter_address = free_address();
    let child = exporter(&emulator, &exporter_address, &["scaled", "other"]);
    until_status(&exporter_address, "/healthz", 200).await;
    let (_, page) = get(&exporter_address, "/metrics").await;
    assert_same(&page, "scaled", scaled);
    assert_same(&page, "other", other);
    assert_eq!(
        emulator.metrics("scaled").backlog_count,
        50,
        "nothing pulled"
    );

    signal(&child, "TERM");
    let stopped = finish(child).await;
    stopped.expect_code(0);
    assert!(
        stopped
            .stderr
            .contains("serving the backlog of 2 queues on http://"),
        "{stopped:?}"
    );
    let (run, _) = stop(relay).await;
    run.expect_code(0);
}

/// Each reading is a call of the token: an interval under 5 s is refused,
/// and a queue that does not exist ends the exporter before it serves.
#[tokio::test]
async fn the_exporter_refuses_a_short_interval_and_a_missing_queue() {
    let emulator = emulator_with_queues(&["known"]).await;
    let mut short = cfq(&emulator);
    short.args([
        "metrics",
        "--queue",
        "known",
        "--listen",
        "127.0.0.1:0",
        "--backlog-interval",
        "1s",
    ]);
    let refused = run(short).await;
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("must be from 5s to 1h"),
        "{refused:?}"
    );
    let mut missing = cfq(&emulator);
    missing.args([
        "metrics",
        "--queue",
        "known",
        "--also",
        "no-such-queue",
        "--listen",
        "127.0.0.1:0",
    ]);
    let ended = tokio::time::timeout(10 * SECOND, run(missing))
        .await
        .expect("it ends");
    ended.expect_code(4);
}
