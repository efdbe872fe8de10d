//! The consumer at a distance: under slow answers (round trips of
//! hundreds of ms), failing acks and extensions, a five-minute block and
//! answers the emulator never gives, each test named for the promise it
//! checks: pulls, flushes and extensions overlap instead of waiting on one
//! another, no message is handled twice, and shutdown is bounded.
//!
//! The tests of the settings and counters that serve these promises are in
//! `settings_and_counters` at the bottom.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues::consumer::{Consumer, RetryDelay, Summary, Verdict};
use cf_queues::{Acks, PulledMessage};
use cf_queues_emulator::{EmulatorHandle, Fault, Operation, RateLimitModel, TokioClock};

use crate::support::{Running, STEP, acks_after, assert_drained, fresh, pushed, pushed_to};
use cf_queues_testkit::clients::{LONG_LEASE, push_texts, queue};
use cf_queues_testkit::emulators::{emulator, emulator_on_tokio_time, emulator_with};
use cf_queues_testkit::scripted::scripted;
use cf_queues_testkit::wait::eventually;
use cf_queues_testkit::wire::{acked, failure, lease_ids, pulled, success};

const SECOND: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3600);

/// Handler calls per message id: more than one is a message handled twice.
type Seen = Arc<Mutex<HashMap<String, u32>>>;

type Handled = Pin<Box<dyn Future<Output = Result<Verdict, Infallible>> + Send>>;

/// A handler that counts its calls per message id, takes `took`, and acks.
fn counting(
    seen: &Seen,
    took: Duration,
) -> impl Fn(PulledMessage) -> Handled + Send + Sync + use<> {
    let seen = Arc::clone(seen);
    move |message: PulledMessage| {
        *seen
            .lock()
            .expect("not poisoned")
            .entry(message.id.clone())
            .or_default() += 1;
        Box::pin(async move {
            tokio::time::sleep(took).await;
            Ok(Verdict::Ack)
        })
    }
}

/// The message ids handled more than once, sorted.
fn twice(seen: &Seen) -> Vec<String> {
    let mut ids: Vec<String> = seen
        .lock()
        .expect("not poisoned")
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id.clone())
        .collect();
    ids.sort();
    ids
}

fn handled_once(seen: &Seen) -> usize {
    seen.lock().expect("not poisoned").len()
}

/// What `Summary` promises: each message pulled ends in exactly one of these.
fn terminal(s: &Summary) -> u64 {
    s.acked
        + s.retried
        + s.released
        + s.left
        + s.unflushed
        + s.unsettleable
        + s.settle_warnings
        + s.resend_warnings
}

/// Finding 1: the keeper made one extension call at a time, with the
/// client's 60 s timeout, so one slow answer let every other lease expire,
/// and the pull loop leased the same messages again while their first
/// handlers still ran.
#[tokio::test(start_paused = true)]
async fn one_slow_extension_answer_loses_no_lease() {
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "slowextend", 20).await;
    // Longer than the whole 3 s lease: only a second call in time keeps it.
    emulator.inject(Fault::stall_only(5 * SECOND).only(Operation::Extend));
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(3 * SECOND)
        .build()
        .expect("valid settings");
    let seen = Seen::default();
    let running = Running::start(consumer, counting(&seen, 8 * SECOND));
    // Past the handlers, and past any redelivery of an expired lease.
    tokio::time::sleep(30 * SECOND).await;
    let s = running.finish().await;
    assert_eq!(twice(&seen), Vec::<String>::new(), "handled twice: {s:?}");
    assert_eq!(handled_once(&seen), 20);
    assert_eq!((s.leases_lost, s.acked, s.received), (0, 20, 20), "{s:?}");
    assert_drained(&emulator, "slowextend");
}

/// Finding 2: one flush at a time, given up after `max_flush_attempts`
/// (about 15 s) while the keeper let go of the leases: the messages came
/// back and were handled twice, and the acks were counted unflushed.
#[tokio::test(start_paused = true)]
async fn acks_failing_for_25_seconds_handle_no_message_twice() {
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "failingacks", 50).await;
    // Lifted by time, not by count: the consumer decides how often it tries.
    emulator.inject(Fault::status(503).times(1_000_000).only(Operation::Ack));
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(3 * SECOND)
        .build()
        .expect("valid settings");
    let seen = Seen::default();
    let running = Running::start(consumer, counting(&seen, Duration::ZERO));
    tokio::time::sleep(25 * SECOND).await;
    emulator.clear_faults();
    // Long enough for the longest error backoff (30 s) and then some.
    eventually("the queue drained", STEP, 120 * SECOND, || {
        emulator.metrics("failingacks").backlog_count == 0
            && running.monitor.snapshot().in_flight == 0
    })
    .await;
    let s = running.finish().await;
    assert_eq!(twice(&seen), Vec::<String>::new(), "handled twice: {s:?}");
    assert_eq!(handled_once(&seen), 50);
    assert_eq!((s.unflushed, s.acked, s.leases_lost), (0, 50, 0), "{s:?}");
    assert_drained(&emulator, "failingacks");
}

/// Finding 3: what the pull in flight at shutdown brought was released
/// unhandled, and each release used an attempt: on its last one a message
/// was dead-lettered (deleted, without a dead-letter queue) unseen.
#[tokio::test(start_paused = true)]
async fn shutdown_deletes_no_message_no_handler_saw() {
    let clock = TokioClock::starting_now();
    let emulator = emulator_with(|e| e.clock(clock).max_retries(1)).await;
    let queue = pushed_to(&emulator, "lastattempt", 50).await;
    emulator.inject(Fault::stall_only(2 * SECOND).only(Operation::Pull));
    let consumer = Consumer::builder(queue.clone())
        .grace_period(10 * SECOND)
        .build()
        .expect("valid settings");
    let seen = Seen::default();
    let running = Running::start(consumer, counting(&seen, Duration::ZERO));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = running.finish().await;
    let unseen_deleted = emulator.dead_lettered("lastattempt");
    let backlog = emulator.metrics("lastattempt").backlog_count;
    assert_eq!(
        (unseen_deleted, backlog),
        (0, 50 - s.acked),
        "every message handled, or still in the queue; handled {}: {s:?}",
        handled_once(&seen)
    );
    assert!(s.acked <= handled_once(&seen) as u64, "{s:?}");
    assert_eq!(twice(&seen), Vec::<String>::new());
}

/// Finding 4: flushing by size only, with fewer slots than an ack batch,
/// took every slot with settlements that never flushed: the consumer
/// stopped. Either `build` refuses it, or the consumer drains the queue.
#[tokio::test(start_paused = true)]
async fn flushing_by_size_only_with_fewer_slots_than_a_batch_still_drains() {
    let (emulator, queue) = pushed("sizeonly", 50).await;
    let built = Consumer::builder(queue.clone())
        .ack_interval(Duration::MAX)
        .max_in_flight(10)
        .ack_batch_size(100)
        .build();
    let consumer = match built {
        Err(cf_queues::Error::InvalidInput { field, reason, .. }) => {
            assert!(
                ["ack_interval", "ack_batch_size", "max_in_flight"].contains(&field.as_str()),
                "refused for {field}: {reason}"
            );
            return;
        }
        Err(other) => panic!("refused, but not as invalid input: {other}"),
        Ok(consumer) => consumer,
    };
    let running = Running::start(consumer, crate::ack_now);
    let drained = tokio::time::timeout(60 * SECOND, async {
        while running.monitor.snapshot().handled < 50 {
            tokio::time::sleep(STEP).await;
        }
    })
    .await;
    let stalled = running.monitor.snapshot();
    let s = running.finish().await;
    assert!(
        drained.is_ok(),
        "deadlocked: {} of 50 handled after 60 s: {stalled:?}",
        stalled.handled
    );
    assert_eq!((s.handled, s.acked, s.unflushed), (50, 50, 0), "{s:?}");
    assert_drained(&emulator, "sizeonly");
}

/// A pull's answer for the first pull, then empty ones.
fn first_pull_then_none(
    pulls: &mut u32,
    messages: &[(&str, Option<&str>)],
) -> (u16, serde_json::Value) {
    *pulls += 1;
    if *pulls == 1 {
        (200, pulled(messages))
    } else {
        (200, pulled(&[]))
    }
}

/// Finding 5, on extensions: a warning in the old list form names no
/// lease, so the keeper tried the whole chunk again until its leases ran
/// out and counted every one lost. Here the server answers the list form
/// to every call of more than one lease, and extends single leases.
#[tokio::test(start_paused = true)]
async fn a_list_form_extension_warning_marks_no_lease_lost() {
    let mut pulls = 0;
    let server = scripted(move |operation, body| match operation {
        "pull" => first_pull_then_none(
            &mut pulls,
            &[("a", Some("la")), ("b", Some("lb")), ("c", Some("lc"))],
        ),
        "extend" => {
            let leases = lease_ids(body, "extend");
            if leases.len() > 1 {
                (
                    200,
                    success(serde_json::json!({
                        "extendCount": leases.len() - 1,
                        "warnings": ["a lease could not be extended"],
                    })),
                )
            } else {
                (
                    200,
                    success(serde_json::json!({"extendCount": 1, "warnings": {}})),
                )
            }
        }
        "ack" => (200, acked(body, &[])),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let consumer = Consumer::builder(server.queue())
        .visibility_timeout(3 * SECOND)
        .build()
        .expect("valid settings");
    let seen = Seen::default();
    let running = Running::start(consumer, counting(&seen, 8 * SECOND));
    tokio::time::sleep(12 * SECOND).await;
    let s = running.finish().await;
    assert_eq!(
        (s.leases_lost, s.max_lease_reached, s.acked),
        (0, 0, 3),
        "{s:?}"
    );
    assert_eq!(terminal(&s), s.received, "one counter each: {s:?}");
}

/// Finding 5, on acks: a list-form warning was counted in
/// `settle_warnings` on top of the acks it came with, so three messages
/// ended in four counters.
#[tokio::test(start_paused = true)]
async fn a_list_form_ack_warning_keeps_each_message_in_one_counter() {
    let mut pulls = 0;
    let mut acks = 0;
    let server = scripted(move |operation, body| match operation {
        "pull" => first_pull_then_none(
            &mut pulls,
            &[("a", Some("la")), ("b", Some("lb")), ("c", Some("lc"))],
        ),
        "ack" => {
            acks += 1;
            if acks == 1 {
                let listed = lease_ids(body, "acks").len();
                (
                    200,
                    success(serde_json::json!({
                        "ackCount": listed.saturating_sub(1),
                        "retryCount": 0,
                        "warnings": ["a lease was not found"],
                    })),
                )
            } else {
                (200, acked(body, &[]))
            }
        }
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let running = Running::start(
        Consumer::builder(server.queue())
            .ack_batch_size(3)
            .ack_interval(HOUR),
        crate::ack_now,
    );
    running.until("the three handled", |s| s.handled == 3).await;
    tokio::time::sleep(10 * SECOND).await;
    let s = running.finish().await;
    assert_eq!((s.received, s.in_flight), (3, 0), "{s:?}");
    assert_eq!(terminal(&s), s.received, "one counter each: {s:?}");
}

/// Finding 6: an ack applied but answered with a 500 is sent again; while
/// it waits, its lease is extended, and the API warns (the message is
/// gone). That warning says "most likely settled already", as a warning on
/// the resend does: a resend warning, not a lost lease.
#[tokio::test(start_paused = true)]
async fn a_warning_on_extending_a_lease_whose_ack_may_have_applied_is_a_resend_warning() {
    let mut pulls = 0;
    let mut applied = false;
    // Resends fail too until an extension came: however soon the consumer
    // sends again, the extension of a pending settlement is what is tested.
    let mut extended_since = false;
    let server = scripted(move |operation, body| match operation {
        "pull" => first_pull_then_none(&mut pulls, &[("a", Some("la"))]),
        "ack" if !applied => {
            applied = true;
            (500, failure(15000, "UnknownInternalError"))
        }
        "ack" if !extended_since => (500, failure(15000, "UnknownInternalError")),
        "ack" => (200, acked(body, &["la"])),
        "extend" if applied => {
            extended_since = true;
            (
                200,
                success(serde_json::json!({
                    "extendCount": 0, "warnings": {"la": "lease not found"},
                })),
            )
        }
        "extend" => (
            200,
            success(serde_json::json!({"extendCount": 1, "warnings": {}})),
        ),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let running = Running::start(
        Consumer::builder(server.queue())
            .visibility_timeout(3 * SECOND)
            .ack_batch_size(1)
            // Fewer resends while the extension, due 2 s after the pull, comes.
            .error_backoff(5 * SECOND, 5 * SECOND),
        crate::ack_now,
    );
    tokio::time::sleep(20 * SECOND).await;
    let s = running.finish().await;
    assert!(
        !server.bodies("extend").is_empty(),
        "the lease of a pending settlement is extended"
    );
    assert_eq!(
        (s.leases_lost, s.resend_warnings, s.settle_warnings, s.acked),
        (0, 1, 0, 0),
        "{s:?}"
    );
    assert_eq!(terminal(&s), s.received, "one counter each: {s:?}");
}

/// Finding 7: a visibility timeout of a few milliseconds made the keeper
/// extend all the time (here every 3.3 ms, 600 calls for a 2 s handler;
/// at any real distance, back to back). Either `build` refuses it, or the
/// keeper sends at most one extension per 100 ms: no lease that short can
/// be kept over a network anyway, so more calls only flood the API.
#[tokio::test(start_paused = true)]
async fn a_visibility_timeout_of_a_few_milliseconds_does_not_flood_extensions() {
    let mut pulls = 0;
    let server = scripted(move |operation, body| match operation {
        "pull" => first_pull_then_none(&mut pulls, &[("a", Some("la"))]),
        "extend" => (
            200,
            success(serde_json::json!({"extendCount": 1, "warnings": {}})),
        ),
        "ack" => (200, acked(body, &[])),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let built = Consumer::builder(server.queue())
        .visibility_timeout(Duration::from_millis(5))
        .build();
    let consumer = match built {
        Err(cf_queues::Error::InvalidInput { field, reason, .. }) => {
            assert_eq!(field, "visibility_timeout", "{reason}");
            return;
        }
        Err(other) => panic!("refused, but not as invalid input: {other}"),
        Ok(consumer) => consumer,
    };
    let running = Running::start(consumer, acks_after(2 * SECOND));
    tokio::time::sleep(3 * SECOND).await;
    let s = running.finish().await;
    let extensions = server.bodies("extend").len();
    assert!(
        extensions <= 20,
        "{extensions} extension calls for one lease over 2 s: {s:?}"
    );
}

/// The `retries` entries of every ack call, sorted by lease id.
fn retries_sent(server: &cf_queues_testkit::scripted::Scripted) -> Vec<serde_json::Value> {
    let mut entries: Vec<serde_json::Value> = server
        .bodies("ack")
        .iter()
        .filter_map(|body| body["retries"].as_array().cloned())
        .flatten()
        .collect();
    entries.sort_by_key(|entry| entry["lease_id"].as_str().unwrap_or_default().to_owned());
    entries
}

/// Finding 8: a retry with no delay was sent without `delay_seconds`, so on
/// Cloudflare the queue's own `retry_delay` applied instead of "visible at
/// once": a release at shutdown, and a retry under `RetryDelay::none()`.
#[tokio::test(start_paused = true)]
async fn releases_and_zero_delay_retries_send_delay_seconds_zero() {
    let mut pulls = 0;
    let server = scripted(move |operation, body| match operation {
        "pull" => first_pull_then_none(&mut pulls, &[("a", Some("la")), ("b", Some("lb"))]),
        "ack" => (200, acked(body, &[])),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let consumer = Consumer::builder(server.queue())
        .retry_delay(RetryDelay::none())
        .grace_period(SECOND)
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        .build()
        .expect("valid settings");
    let running = Running::start(consumer, |message: PulledMessage| async move {
        if message.id == "a" {
            Ok::<_, Infallible>(Verdict::Retry(None))
        } else {
            // Past the grace period: released at shutdown.
            tokio::time::sleep(HOUR).await;
            Ok(Verdict::Ack)
        }
    });
    running.until("a handled", |s| s.handled == 1).await;
    let s = running.finish().await;
    assert_eq!((s.retried, s.released), (1, 1), "{s:?}");
    assert_eq!(
        retries_sent(&server),
        [
            serde_json::json!({"lease_id": "la", "delay_seconds": 0}),
            serde_json::json!({"lease_id": "lb", "delay_seconds": 0}),
        ]
    );
}

/// The other side of finding 8, true before and after: `Acks::retry`
/// without a delay sends none, so that the queue's `retry_delay` applies.
#[tokio::test(start_paused = true)]
async fn acks_retry_without_a_delay_still_sends_no_delay_seconds() {
    let server = scripted(|operation, body| match operation {
        "ack" => (200, acked(body, &[])),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    server
        .queue()
        .ack(Acks::new().retry("lx"))
        .await
        .expect("acked");
    assert_eq!(
        retries_sent(&server),
        [serde_json::json!({"lease_id": "lx"})]
    );
}

/// What a five-minute block of the credential did to a consumer.
struct Blocked {
    summary: Summary,
    /// Pull calls sent while the credential was blocked.
    pulls_during: u64,
    seen: Seen,
    emulator: EmulatorHandle,
}

/// 20 messages leased by a consumer whose handlers take a second, then a
/// call of the same credential over a window of one request: every call is
/// refused for five minutes (429, code 971, `Retry-After` up to 300 s).
async fn through_a_five_minute_block() -> Blocked {
    let clock = TokioClock::starting_now();
    let emulator = emulator_with(|e| e.clock(clock)).await;
    let queue = pushed_to(&emulator, "blocked", 20).await;
    emulator.set_rate_limits(Some(RateLimitModel::cloudflare().per_credential(
        1,
        300 * SECOND,
        300 * SECOND,
    )));
    let consumer = Consumer::builder(queue.clone())
        // Longer than the block: what is tested is the waiting, not the leases.
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        .build()
        .expect("valid settings");
    let seen = Seen::default();
    let running = Running::start(consumer, counting(&seen, SECOND));
    running.until("the 20 leased", |s| s.received == 20).await;
    // Another process on the same token that does not pace itself goes
    // over the window, and the API blocks the token for every caller (this
    // consumer's client, which paces by the headers, would not have).
    let elsewhere = cf_queues_testkit::clients::one_request_per_call(
        emulator
            .client_builder()
            .expect("builder")
            .rate_limits(cf_queues::ratelimit::RateLimits::none()),
        "blocked",
    );
    elsewhere
        .metrics()
        .await
        .expect("the one request of the window");
    let refused = elsewhere.metrics().await.expect_err("over the window");
    assert_eq!(refused.codes(), vec![971], "{refused}");
    let before = running.monitor.snapshot();
    tokio::time::sleep(299 * SECOND).await;
    let during = running.monitor.snapshot();
    // The block ends a second from now: time to settle, and to come back.
    tokio::time::sleep(120 * SECOND).await;
    let summary = running.finish().await;
    Blocked {
        summary,
        pulls_during: (during.pulls + during.pull_errors) - (before.pulls + before.pull_errors),
        seen,
        emulator,
    }
}

/// Finding 9: the retry layer honours a `Retry-After` up to 60 s; a block
/// of five minutes made every call fail, pulls kept being sent through it,
/// and the acks were given up before it ended.
#[tokio::test(start_paused = true)]
async fn a_five_minute_block_stops_pulling_until_it_ends_then_acks_everything() {
    let Blocked {
        summary: s,
        pulls_during,
        seen,
        emulator,
    } = through_a_five_minute_block().await;
    assert!(
        pulls_during <= 3,
        "{pulls_during} pulls during the block: {s:?}"
    );
    assert_eq!((s.acked, s.unflushed), (20, 0), "{s:?}");
    assert_eq!(twice(&seen), Vec::<String>::new());
    assert_drained(&emulator, "blocked");
}

/// What the rework added to the public API: `flush_timeout`,
/// `max_pulls_in_flight`, `queue_allowance`, `max_pending_settlements`,
/// `MIN_VISIBILITY_TIMEOUT` and the new `Summary` fields.
mod settings_and_counters {
    use super::*;
    use cf_queues::consumer::MIN_VISIBILITY_TIMEOUT;
    use cf_queues_emulator::Latency;
    use tokio::time::Instant;

    #[tokio::test(start_paused = true)]
    async fn settings_that_cannot_work_are_refused_by_build() {
        let (_emulator, queue) = fresh("refused").await;
        let refused = |built: cf_queues::Result<Consumer>| match built {
            Err(cf_queues::Error::InvalidInput { field, reason, .. }) => (field, reason),
            Err(other) => panic!("refused, but not as invalid input: {other}"),
            Ok(_) => panic!("accepted"),
        };
        let (field, reason) = refused(
            Consumer::builder(queue.clone())
                .ack_batch_size(200)
                .max_pending_settlements(100)
                .build(),
        );
        assert!(
            ["ack_batch_size", "max_pending_settlements"].contains(&field.as_str()),
            "{field}: {reason}"
        );
        let (field, reason) = refused(
            Consumer::builder(queue.clone())
                .visibility_timeout(MIN_VISIBILITY_TIMEOUT - Duration::from_millis(1))
                .build(),
        );
        assert_eq!(field, "visibility_timeout", "{reason}");
        assert_eq!(MIN_VISIBILITY_TIMEOUT, SECOND);
        Consumer::builder(queue.clone())
            .visibility_timeout(MIN_VISIBILITY_TIMEOUT)
            .ack_batch_size(100)
            .max_pending_settlements(100)
            .build()
            .expect("at the limits");
    }

    #[tokio::test(start_paused = true)]
    async fn a_queue_limit_or_allowance_of_zero_is_refused_naming_the_setting() {
        let emulator = emulator().await;
        for (built, setting) in [
            (
                Consumer::builder(queue(&emulator, "nolimit"))
                    .queue_limit(0)
                    .build(),
                "queue_limit",
            ),
            (
                Consumer::builder(queue(&emulator, "noallowance"))
                    .queue_allowance(0)
                    .build(),
                "queue_allowance",
            ),
        ] {
            match built {
                Err(cf_queues::Error::InvalidInput { field, reason, .. }) => {
                    assert_eq!(
                        (field.as_str(), reason.as_str()),
                        (setting, "must be at least 1")
                    );
                }
                other => panic!("{setting} 0: {:?}", other.err()),
            }
        }
        Consumer::builder(queue(&emulator, "limited"))
            .queue_limit(1)
            .queue_allowance(1)
            .build()
            .expect("the least of each");
    }

    #[tokio::test(start_paused = true)]
    async fn a_visibility_timeout_of_a_few_milliseconds_is_refused() {
        let emulator = emulator().await;
        let built = Consumer::builder(queue(&emulator, "short"))
            .visibility_timeout(Duration::from_millis(5))
            .build();
        assert!(
            matches!(&built, Err(cf_queues::Error::InvalidInput { field, .. }) if field == "visibility_timeout"),
            "{:?}",
            built.err()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_five_minute_block_is_counted() {
        let blocked = through_a_five_minute_block().await;
        assert_eq!(blocked.summary.blocked, 1, "{:?}", blocked.summary);
    }

    /// However the acks stall, `run` returns within the grace period plus
    /// the flush timeout, and what was not sent is counted unflushed.
    #[tokio::test(start_paused = true)]
    async fn run_returns_within_grace_period_plus_flush_timeout_when_every_ack_stalls() {
        let (emulator, queue) = pushed("stalledacks", 10).await;
        emulator.inject(
            Fault::stall_only(24 * HOUR)
                .times(1_000_000)
                .only(Operation::Ack),
        );
        let running = Running::start(
            Consumer::builder(queue.clone())
                .grace_period(2 * SECOND)
                .flush_timeout(3 * SECOND)
                .visibility_timeout(LONG_LEASE)
                .max_lease(LONG_LEASE),
            crate::ack_now,
        );
        running.until("the 10 handled", |s| s.handled == 10).await;
        tokio::time::sleep(SECOND).await;
        let started = Instant::now();
        let s = running.finish().await;
        assert!(
            started.elapsed() <= 5 * SECOND,
            "returned after {:?}: {s:?}",
            started.elapsed()
        );
        assert_eq!((s.acked, s.unflushed, s.in_flight), (0, 10, 0), "{s:?}");
        emulator.clear_faults();
    }

    /// At a 200 ms round trip one pull at a time cannot keep up: several
    /// are in flight, and `Summary` says so.
    #[tokio::test(start_paused = true)]
    async fn pulls_overlap_at_a_200_ms_round_trip() {
        let (emulator, _clock) = emulator_on_tokio_time().await;
        let queue = queue(&emulator, "farpulls");
        push_texts(&queue, 5_000).await;
        emulator.set_latency(Some(Latency::round_trip(Duration::from_millis(200))));
        let consumer = Consumer::builder(queue.clone())
            .build()
            .expect("valid settings");
        let monitor = consumer.monitor();
        let stop = consumer.shutdown_token();
        let run = tokio::spawn(consumer.run(crate::ack_now));
        let mut most_now = 0;
        eventually("drained", Duration::from_millis(10), 60 * SECOND, || {
            let s = monitor.snapshot();
            most_now = most_now.max(s.pulls_in_flight);
            s.acked == 5_000
        })
        .await;
        stop.cancel();
        let s = run.await.expect("task").expect("no fatal error");
        assert!(most_now > 1, "at most {most_now} pulls in flight seen");
        assert!(s.max_pulls_in_flight > 1, "{s:?}");
        // The default of `max_pulls_in_flight`.
        assert!(s.max_pulls_in_flight <= 16, "{s:?}");
        assert_eq!((s.pulls_in_flight, s.acked), (0, 5_000), "{s:?}");
    }
}
