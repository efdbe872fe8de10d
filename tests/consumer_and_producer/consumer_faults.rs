//! The consumer under failures, beside `consumer.rs`: extensions that fail,
//! a network that is down for a while, a rate-limited ack, and answers the
//! emulator never gives (served by a scripted server): a message without a
//! lease id, more messages than asked for, an ack applied behind a 500.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues::PulledMessage;
use cf_queues::consumer::{Consumer, Verdict};
use cf_queues::error::BodyError;
use cf_queues_emulator::{Fault, Operation};
use tokio::time::Instant;

use crate::ack_now;
use crate::support::{
    Running, STEP, acks_after, assert_counts, assert_drained, noting_the_first, pushed, pushed_to,
};
use cf_queues_testkit::clients::{push_texts, queue};
use cf_queues_testkit::emulators::{emulator, emulator_on_tokio_time};
use cf_queues_testkit::gate::Gate;
use cf_queues_testkit::scripted::scripted;
use cf_queues_testkit::wire::{acked, failure, lease_ids, pulled, pulled_once};

const MS: Duration = Duration::from_millis(1);
const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test(start_paused = true)]
async fn a_message_without_a_lease_id_stays_out_of_every_ack() {
    // The first pull brings these; the ones after, nothing.
    let mut first = Some(pulled(&[
        ("a", Some("lease-a")),
        ("b", None),
        ("c", Some("lease-c")),
    ]));
    let server = scripted(move |operation, body| match operation {
        "pull" => (200, first.take().unwrap_or_else(|| pulled(&[]))),
        "ack" => (200, acked(body, &[])),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let handled: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&handled);
    let consumer = Consumer::builder(server.queue())
        .ack_batch_size(2)
        .ack_interval(HOUR)
        .build()
        .expect("valid settings");
    let running = Running::start(consumer, move |message: PulledMessage| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock().expect("lock").push(message.id.clone());
            Ok::<_, BodyError>(Verdict::Ack)
        }
    });
    running.until("both acked", |s| s.acked == 2).await;
    let summary = running.finish().await;
    let mut handled = handled.lock().expect("lock").clone();
    handled.sort();
    assert_eq!(handled, ["a", "c"], "b cannot be settled: not handled");
    assert_counts!(
        summary,
        received: 3, unsettleable: 1, handled: 2, acked: 2, unflushed: 0, in_flight: 0
    );
    let acks = server.bodies("ack");
    assert_eq!(acks.len(), 1);
    let mut leases = lease_ids(&acks[0], "acks");
    leases.sort();
    assert_eq!(leases, ["lease-a", "lease-c"]);
    assert!(lease_ids(&acks[0], "retries").is_empty());
}

#[tokio::test(start_paused = true)]
async fn more_messages_than_asked_for_do_not_raise_the_in_flight_limit() {
    let mut served = 0;
    let server = scripted(move |operation, body| match operation {
        // Three messages, whatever the batch size asked for.
        "pull" => {
            let ids: Vec<String> = (0..3).map(|i| format!("m{}", served + i)).collect();
            served += 3;
            let leases: Vec<String> = ids.iter().map(|id| format!("lease-{id}")).collect();
            let messages: Vec<(&str, Option<&str>)> = ids
                .iter()
                .zip(&leases)
                .map(|(id, lease)| (id.as_str(), Some(lease.as_str())))
                .collect();
            (200, pulled(&messages))
        }
        "ack" => (200, acked(body, &[])),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let running = Running::start(
        Consumer::builder(server.queue())
            .max_in_flight(2)
            .ack_batch_size(3)
            .ack_interval(HOUR),
        ack_now,
    );
    running.until("two pulls handled", |s| s.handled >= 6).await;
    let summary = running.finish().await;
    let asked: Vec<u64> = server
        .bodies("pull")
        .iter()
        .map(|body| body["batch_size"].as_u64().unwrap_or_default())
        .collect();
    // Once the three of the first pull are settled, two slots are free, not three.
    assert_eq!(asked[..2], [2, 2], "{asked:?}");
    assert!(asked.iter().all(|&n| n <= 2), "{asked:?}");
    assert_eq!(summary.in_flight, 0);
}

#[tokio::test(start_paused = true)]
async fn warnings_on_a_resent_flush_are_not_counted_as_lost_leases() {
    // The first ack call is applied but answered with a 500; the resend of
    // the same acks then gets the warnings an applied ack gets.
    let mut pulls = 0;
    let mut acks = 0;
    let server = scripted(move |operation, body| match operation {
        "pull" => (
            200,
            pulled_once(
                &mut pulls,
                &[("a", Some("la")), ("b", Some("lb")), ("c", Some("lc"))],
            ),
        ),
        "ack" => {
            acks += 1;
            if acks == 1 {
                (500, failure(15000, "UnknownInternalError"))
            } else {
                (200, acked(body, &["la", "lb", "lc"]))
            }
        }
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let running = Running::start(
        Consumer::builder(server.queue())
            .ack_batch_size(3)
            .ack_interval(HOUR)
            .error_backoff(Duration::from_secs(1), Duration::from_secs(1)),
        ack_now,
    );
    running
        .eventually("resent", STEP, Duration::from_secs(5), |s| {
            s.resend_warnings == 3
        })
        .await;
    let s = running.finish().await;
    assert_counts!(
        s,
        settle_errors: 1, settle_requests: 2, resend_warnings: 3, settle_warnings: 0,
        leases_lost: 0, acked: 0
    );

    // A warning on a first send means the lease was lost.
    let mut pulls = 0;
    let server = scripted(move |operation, body| match operation {
        "pull" => (200, pulled_once(&mut pulls, &[("d", Some("ld"))])),
        "ack" => (200, acked(body, &["ld"])),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let running = Running::start(Consumer::builder(server.queue()).ack_batch_size(1), ack_now);
    running.until("warned", |s| s.settle_warnings == 1).await;
    let s = running.finish().await;
    assert_eq!(
        (s.settle_warnings, s.leases_lost, s.resend_warnings, s.acked),
        (1, 1, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_lease_whose_extensions_fail_is_reported_lost_and_still_acked() {
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "unextended", 1).await;
    emulator.inject(Fault::status(500).times(1_000).only(Operation::Extend));
    let running = Running::start(
        Consumer::builder(queue.clone())
            .visibility_timeout(Duration::from_secs(3))
            // Nothing else pulled while it is held: the late ack is not beaten
            // by a redelivery to this consumer.
            .max_in_flight(1),
        acks_after(Duration::from_secs(5)),
    );
    tokio::time::sleep(Duration::from_secs(4)).await;
    let s = running.monitor.snapshot();
    assert_eq!((s.leases_lost, s.handled), (1, 0), "reported at expiry");
    running
        .eventually("acked late", STEP, Duration::from_secs(5), |s| s.acked == 1)
        .await;
    let s = running.finish().await;
    // Tried at 2 s, then after half the time left (at most 1 s, at least
    // 100 ms or what is left) until expiry: at 2.5, 2.75, 2.875, 2.975 and 3 s.
    assert_counts!(s, extended: 0, extend_errors: 6, leases_lost: 1, acked: 1, settle_warnings: 0);
    assert_drained(&emulator, "unextended");
    emulator.clear_faults();
}

#[tokio::test(start_paused = true)]
async fn pulls_back_off_while_the_network_is_down_and_recover() {
    let emulator = emulator().await;
    push_texts(&queue(&emulator, "cut"), 5).await;
    let gate = Gate::shut(&emulator).await;
    let consumer = Consumer::builder(gate.queue(&emulator, "cut"))
        // One pull at a time: this test pins the single puller's waits.
        .max_pulls_in_flight(1)
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let (first, handler) = noting_the_first(started);
    let running = Running::start(consumer, handler);
    // Connections dropped at 0 s and 1 s; the backoff waits 1 s, then 2 s.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let s = running.monitor.snapshot();
    assert_eq!((s.pull_errors, s.received), (2, 0));
    gate.open();
    running
        .eventually("all acked", STEP, Duration::from_secs(10), |s| s.acked == 5)
        .await;
    assert_eq!(*first.lock().expect("lock"), Some(Duration::from_secs(3)));
    let s = running.finish().await;
    assert_eq!((s.pull_errors, s.received, s.acked), (2, 5, 5));
    assert_drained(&emulator, "cut");
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_ack_is_sent_again_and_lands_once() {
    let (emulator, queue) = pushed("limitedacks", 5).await;
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .retry_after(Duration::from_secs(2))
            .only(Operation::Ack),
    );
    let consumer = Consumer::builder(queue.clone())
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let running = Running::start(consumer, ack_now);
    // The 100 ms interval, then the 2 s the API asked for.
    tokio::time::sleep(Duration::from_millis(2_099)).await;
    let s = running.monitor.snapshot();
    assert_eq!((s.settle_requests, s.acked), (1, 0));
    tokio::time::sleep(MS).await;
    running.until("acked", |s| s.acked == 5).await;
    assert_eq!(started.elapsed(), Duration::from_millis(2_100));
    let s = running.finish().await;
    assert_counts!(
        s,
        settle_errors: 1, settle_requests: 2, acked: 5, settle_warnings: 0, resend_warnings: 0,
        unflushed: 0
    );
    assert_drained(&emulator, "limitedacks");
}

/// `extendCount` is optional in Cloudflare's published description: an
/// extension answered without it, and without a warning about the lease,
/// extended it. Before, the stream read the absent count as 0 and marked
/// the lease lost. A warning about the lease still means it was not.
#[tokio::test(start_paused = true)]
async fn an_extension_answered_without_a_count_keeps_the_lease() {
    use futures_util::StreamExt as _;
    for (answer, kept) in [
        (serde_json::json!({}), true),
        (serde_json::json!({"warnings": {}}), true),
        (
            serde_json::json!({"warnings": {"lease-a": "message was delivered again"}}),
            false,
        ),
        (serde_json::json!({"extendCount": 0}), false),
    ] {
        let mut pulls = 0;
        let reply = answer.clone();
        let server = scripted(move |operation, body| match operation {
            "pull" => (200, pulled_once(&mut pulls, &[("a", Some("lease-a"))])),
            "extend" => (200, cf_queues_testkit::wire::success(reply.clone())),
            "ack" => (200, acked(body, &[])),
            _ => (404, failure(7003, "No route for the URI")),
        })
        .await;
        let consumer = Consumer::builder(server.queue())
            .visibility_timeout(Duration::from_secs(30))
            .build()
            .expect("valid settings");
        let monitor = consumer.monitor();
        let mut stream = consumer.stream();
        let leased = stream.next().await.expect("a message");
        let extended = leased
            .extend(Duration::from_secs(60))
            .await
            .expect("the call succeeds");
        assert_eq!(extended, kept, "{answer}");
        let s = monitor.snapshot();
        assert_eq!(
            (s.extended, s.leases_lost),
            (u64::from(kept), u64::from(!kept)),
            "{answer}"
        );
        let extends = server.bodies("extend");
        assert_eq!(extends.len(), 1, "{answer}");
        assert_eq!(lease_ids(&extends[0], "extend"), ["lease-a"], "{answer}");
        drop(leased);
        stream.finish().await.expect("no fatal error");
    }
}
