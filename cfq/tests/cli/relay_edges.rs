//! `cfq relay`'s promises at their edges: a batch answer whose body never
//! comes whole, a slow service behind one POST slot, `Retry-After: 0`, a
//! lease short for the round trip, durations past every bound, SIGHUP.

use std::time::Duration;

use cf_queues_emulator::Latency;
use cf_queues_testkit::recording_target::{BodyEnd, Recorded, RecordingTarget, Reply};
use serde_json::Value;

use crate::relay::{
    SECOND, assert_first_attempts, counts, eventually, figures, once_each, pushed, start, stop,
};
use crate::support::{cfq, emulator_with_queues, finish, signal};

/// Each record of `requests` (batches): its body and attempts.
fn batched_bodies(requests: &[Recorded]) -> Vec<(String, String)> {
    let mut bodies = Vec::new();
    for request in requests {
        let records: Vec<Value> = serde_json::from_slice(&request.body).expect("a JSON array");
        for record in records {
            let body = record["body"].as_str().unwrap_or_default().to_owned();
            bodies.push((body, record["attempts"].to_string()));
        }
    }
    bodies
}

fn sorted(mut list: Vec<(String, String)>) -> Vec<(String, String)> {
    list.sort();
    list
}

/// A batch answered 200 whose body stalls until `--timeout` is a busy
/// service: the batch is held and sent again with no attempt used; one
/// whose connection is cut mid-body is unreadable: retried, an attempt used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_answer_that_stalls_is_busy_and_one_cut_short_is_retried() {
    for (end, attempts_again, said) in [
        (BodyEnd::Stalls, "1", "then no whole body within --timeout"),
        (BodyEnd::Cut, "2", "the answer's body was cut short"),
    ] {
        let queue = format!("{end:?}").to_lowercase();
        let emulator = emulator_with_queues(&[&queue]).await;
        let bodies = pushed(&emulator, &queue, 4).await;
        let service = RecordingTarget::start().await;
        let mut first = true;
        service.script(move |_| {
            if std::mem::take(&mut first) {
                Reply::ok().body("{\"retry\":[").ending(end)
            } else {
                Reply::ok()
            }
        });
        let child = start(
            &emulator,
            &queue,
            &service.url(),
            &[
                "--batch",
                "10",
                "--concurrency",
                "1",
                "--timeout",
                "1s",
                "--backoff",
                "100ms..200ms",
                "--retry-delay",
                "0s",
            ],
        );
        eventually("all acked", 20 * SECOND, || {
            emulator.metrics(&queue).backlog_count == 0
        })
        .await;
        let (run, summary) = stop(child).await;
        run.expect_code(0);
        let requests = service.requests();
        let first = batched_bodies(&requests[..1]);
        let again = batched_bodies(&requests[1..]);
        let all_at = |attempts: &str| -> Vec<(String, String)> {
            sorted(
                bodies
                    .iter()
                    .map(|b| (b.clone(), attempts.to_owned()))
                    .collect(),
            )
        };
        assert_eq!(sorted(first), all_at("1"), "{end:?}: the first batch whole");
        assert_eq!(
            sorted(again),
            all_at(attempts_again),
            "{end:?}: sent again once each, at attempt {attempts_again}"
        );
        assert!(run.stderr.contains(said), "{end:?}: {run:?}");
        assert_eq!(figures(&summary, ["acked"]), [4], "{end:?}: {summary}");
    }
}

/// `--hold` counts only the service's down or busy time: twelve messages
/// behind one POST slot of a service that answers in 0.5 s each wait up to
/// 6 s, and none is held out with `--hold 1s`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hold_never_runs_while_a_message_waits_for_a_slot_of_a_working_service() {
    let emulator = emulator_with_queues(&["oneslot"]).await;
    let bodies = pushed(&emulator, "oneslot", 12).await;
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::ok().after(Duration::from_millis(500)));
    let child = start(
        &emulator,
        "oneslot",
        &service.url(),
        &[
            "--concurrency",
            "1",
            "--hold",
            "1s",
            "--max-in-flight",
            "12",
        ],
    );
    service.wait_for(12, 30 * SECOND).await;
    eventually("all acked", 10 * SECOND, || {
        emulator.metrics("oneslot").backlog_count == 0
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    let requests = service.requests();
    assert_eq!(counts(&requests), once_each(&bodies));
    assert_first_attempts(&requests);
    assert_eq!(
        figures(&summary, ["delivered", "held_too_long", "retried"]),
        [12, 0, 0],
        "{summary}"
    );
}

/// `Retry-After: 0` on a 503 never shortens the relay's doubling pause:
/// a service that always says so is asked a handful of times in 4 s, not
/// thousands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_zero_waits_the_backoff() {
    let emulator = emulator_with_queues(&["eager"]).await;
    pushed(&emulator, "eager", 3).await;
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::retry_after(503, 0));
    let child = start(&emulator, "eager", &service.url(), &["--concurrency", "3"]);
    service.wait_for(1, 10 * SECOND).await;
    tokio::time::sleep(4 * SECOND).await;
    let asked = service.seen();
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    // 3 at once, then probes after pauses of 1, 2 and 4 s.
    assert!((3..=8).contains(&asked), "{asked} requests in 4 s");
    assert_eq!(figures(&summary, ["delivered", "held_too_long"]), [0, 0]);
    assert!(run.stderr.contains("pausing 1s"), "{run:?}");
}

/// A lease short for the round trip (1 s at 400 ms) is said at start, and
/// the library still keeps it across a 3 s POST: each message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_short_for_the_round_trip_is_said_and_kept() {
    let emulator = emulator_with_queues(&["far"]).await;
    let bodies = pushed(&emulator, "far", 3).await;
    emulator.set_latency(Some(Latency::round_trip(Duration::from_millis(400))));
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::ok().after(3 * SECOND));
    let child = start(
        &emulator,
        "far",
        &service.url(),
        &["--visibility", "1s", "--concurrency", "3"],
    );
    service.wait_for(3, 20 * SECOND).await;
    eventually("all acked", 20 * SECOND, || {
        emulator.metrics("far").backlog_count == 0
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert_eq!(counts(&service.requests()), once_each(&bodies), "{summary}");
    assert_eq!(figures(&summary, ["delivered", "leases_lost"]), [3, 0]);
    assert!(
        run.stderr
            .contains("warning: --visibility 1s is short for the"),
        "{run:?}"
    );
}

/// Durations past their bounds are usage errors naming the option, before
/// anything starts; none panics.
#[tokio::test]
async fn durations_past_their_bounds_are_usage_errors() {
    let emulator = emulator_with_queues(&["bounds"]).await;
    for flag in [
        "--timeout",
        "--hold",
        "--visibility",
        "--grace",
        "--max-pause",
        "--backoff",
        "--retry-delay",
        "--max-age",
    ] {
        let mut command = cfq(&emulator);
        command.args([
            "relay",
            "--queue",
            "bounds",
            "--to",
            "http://127.0.0.1:9/",
            flag,
            "18446744073709551615s",
        ]);
        let run = crate::support::run(command).await;
        run.expect_code(2);
        assert!(run.stderr.contains(flag), "{flag}: {run:?}");
        assert!(!run.stderr.contains("panicked"), "{flag}: {run:?}");
    }
}

/// SIGHUP (a closing terminal, or the npm launcher passing it on) stops
/// the relay in order: the POSTs in flight are answered and acked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_stops_the_relay_in_order() {
    let emulator = emulator_with_queues(&["hangup"]).await;
    pushed(&emulator, "hangup", 2).await;
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::ok().after(2 * SECOND));
    let child = start(&emulator, "hangup", &service.url(), &[]);
    service.wait_for(2, 10 * SECOND).await;
    signal(&child, "HUP");
    let run = finish(child).await;
    run.expect_code(0);
    let summary = run.json().pop().expect("a summary");
    assert_eq!(figures(&summary, ["delivered", "acked"]), [2, 2], "{run:?}");
    assert_eq!(summary["stopped_by"], "SIGHUP");
    assert_eq!(emulator.metrics("hangup").backlog_count, 0);
}
