//! Waits a server asks for, however hostile (`Retry-After` of 2⁶⁴ s, a
//! year, a date in 2100 or in the past, `0`, garbage), on pulls, acks,
//! extensions and batch pushes: no panic, no frozen consumer, never more
//! requests than the backoff allows, a shutdown within its bound, nothing
//! lost. Each runs against the kit's scripted server on paused time; the
//! caps are documented in `cf_queues::retry` ("The caps on a server's
//! wait"). And the shutdown's account of every settlement when acks are
//! refused as it begins, against the emulator.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cf_queues::consumer::{Consumer, Summary};
use cf_queues::producer::Producer;
use cf_queues::retry::LONGEST_SERVER_WAIT;
use cf_queues::{Message, PullOptions};
use cf_queues_emulator::{Fault, Operation};
use cf_queues_testkit::emulators::emulator_on_tokio_time;
use cf_queues_testkit::scripted::{Answer, scripted_answers};
use cf_queues_testkit::wire::{acked, failure, pulled, pulled_once, success};
use serde_json::json;
use tokio::time::Instant;

use crate::ack_now;
use crate::support::{Running, STEP, acks_after, assert_backlog, assert_counts, pushed_to};

const S: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3600);

/// `Retry-After` values no server should send, and what each is read as.
const HOSTILE: [(&str, Read); 6] = [
    ("18446744073709551615", Read::Longest),
    ("31536000", Read::Longest),
    ("Fri, 31 Dec 2100 23:59:59 GMT", Read::Longest),
    ("Sun, 06 Nov 1994 08:49:37 GMT", Read::Nothing),
    ("0", Read::Nothing),
    ("soon", Read::Nothing),
];

/// What a hostile value is read as: five minutes at the most, or no wait.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Read {
    Longest,
    Nothing,
}

/// When each request of an operation came, on the paused clock.
#[derive(Clone, Default)]
struct Stamps(Arc<Mutex<Vec<(String, Instant)>>>);

impl Stamps {
    fn note(&self, operation: &str) {
        let mut stamps = self.0.lock().expect("not poisoned");
        stamps.push((operation.to_owned(), Instant::now()));
    }

    /// The times of `operation`'s requests, in order.
    fn of(&self, operation: &str) -> Vec<Instant> {
        let stamps = self.0.lock().expect("not poisoned");
        stamps
            .iter()
            .filter(|(o, _)| o == operation)
            .map(|(_, at)| *at)
            .collect()
    }

    /// The gaps between `operation`'s requests.
    fn gaps(&self, operation: &str) -> Vec<Duration> {
        let times = self.of(operation);
        times.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

/// Asserts each gap is the one expected, give or take the paused clock's
/// steps while requests cross loopback (well under 100 ms).
fn assert_gaps(gaps: &[Duration], expected: &[Duration], case: &str) {
    let near = gaps.len() == expected.len()
        && gaps
            .iter()
            .zip(expected)
            .all(|(gap, want)| (*want..*want + Duration::from_millis(100)).contains(gap));
    assert!(near, "{case}: gaps {gaps:?}, expected {expected:?}");
}

/// A refusal with this status, code and `Retry-After`.
fn refused(status: u16, code: u32, retry_after: &str) -> Answer {
    Answer::new(status, failure(code, "refused")).with_header("retry-after", retry_after)
}

/// A consumer, one pull at a time, of a server that refuses every request
/// with `status`, `code` and `retry_after`, run for `run`: the times of
/// its pulls, and its summary once stopped (within the shutdown's bound).
async fn refused_pulls(
    status: u16,
    code: u32,
    retry_after: &'static str,
    run: Duration,
) -> (Stamps, Summary) {
    let stamps = Stamps::default();
    let seen = stamps.clone();
    let server = scripted_answers(move |operation, _| {
        seen.note(operation);
        refused(status, code, retry_after)
    })
    .await;
    let running = Running::start(
        Consumer::builder(server.queue())
            .max_pulls_in_flight(1)
            .error_backoff(S, 30 * S),
        ack_now,
    );
    tokio::time::sleep(run).await;
    let stopped = Instant::now();
    let summary = running.finish().await;
    assert!(stopped.elapsed() <= 20 * S, "{retry_after}");
    (stamps, summary)
}

#[tokio::test(start_paused = true)]
async fn failed_pulls_wait_at_least_the_backoff_and_at_most_a_minute() {
    for (retry_after, _) in HOSTILE {
        let (stamps, summary) = refused_pulls(503, 15000, retry_after, 120 * S).await;
        let gaps = stamps.gaps("pull");
        // The backoff's 1, 2, 4, 8, 16, 30, 30 s: each gap at least the
        // backoff's (never back to back), none longer than its cap.
        let expected = [1, 2, 4, 8, 16, 30, 30].map(|s| s * S);
        assert_gaps(&gaps, &expected, &format!("Retry-After: {retry_after}"));
        assert_counts!(summary, pull_errors: 8, received: 0);
    }
}

#[tokio::test(start_paused = true)]
async fn a_block_of_any_length_holds_the_pulls_five_minutes_at_most() {
    for (retry_after, read) in HOSTILE {
        let (stamps, summary) = refused_pulls(429, 971, retry_after, 11 * 60 * S).await;
        let gaps = stamps.gaps("pull");
        match read {
            // Waited out as a block of five minutes, not of years.
            Read::Longest => {
                assert_eq!(gaps.len(), 2, "Retry-After: {retry_after}: {gaps:?}");
                assert!(
                    gaps.iter()
                        .all(|gap| (LONGEST_SERVER_WAIT..LONGEST_SERVER_WAIT + S).contains(gap)),
                    "Retry-After: {retry_after}: {gaps:?}"
                );
            }
            // No block: the backoff, never back to back, at most its cap.
            Read::Nothing => {
                assert!(gaps.len() >= 20, "Retry-After: {retry_after}: {gaps:?}");
                assert!(
                    gaps.iter().all(|gap| (S..=30 * S + S).contains(gap)),
                    "Retry-After: {retry_after}: {gaps:?}"
                );
            }
        }
        assert_eq!(summary.received, 0);
        let blocks = u64::from(read == Read::Longest) * 3;
        assert_eq!(summary.blocked, blocks, "Retry-After: {retry_after}");
    }
}

/// A pull of the queue's limit refused (10250) with a hostile
/// `Retry-After`: the share answers it (no hold past the policy's
/// `max_retry_after`, a lower pace), at about one pull a second at the
/// most once it is at its floor.
#[tokio::test(start_paused = true)]
async fn pulls_refused_for_the_queue_slow_down_and_never_freeze() {
    for (retry_after, _) in HOSTILE {
        let stamps = Stamps::default();
        let seen = stamps.clone();
        let mut pulls = 0;
        let server = scripted_answers(move |operation, body| {
            seen.note(operation);
            match operation {
                "pull" => {
                    pulls += 1;
                    match pulls {
                        1..=20 => refused(429, 10250, retry_after),
                        21 => Answer::new(200, pulled(&[("a", Some("lease-a"))])),
                        _ => Answer::new(200, pulled(&[])),
                    }
                }
                "ack" => Answer::new(200, acked(body, &[])),
                _ => Answer::new(404, failure(7003, "No route for the URI")),
            }
        })
        .await;
        let running = Running::start(
            Consumer::builder(server.queue())
                .max_pulls_in_flight(1)
                .ack_batch_size(1),
            ack_now,
        );
        running
            .eventually("the message after the refusals", STEP, 120 * S, |s| {
                s.acked == 1
            })
            .await;
        let summary = running.finish().await;
        assert_counts!(summary, refused_by_queue: 20, acked: 1, unflushed: 0);
        let times = stamps.of("pull");
        let refusals = times[19] - times[0];
        // At the share's floor (2 % of 4,900 a second) a pull of 100 goes
        // about once a second; no refusal is answered back to back.
        assert!(refusals >= 5 * S, "Retry-After {retry_after}: {refusals:?}");
        assert!(
            refusals <= 60 * S,
            "Retry-After {retry_after}: {refusals:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn acks_refused_with_any_retry_after_are_accounted_for_at_shutdown() {
    for (code, status) in [(971, 429), (15000, 503)] {
        for (retry_after, read) in HOSTILE {
            let stamps = Stamps::default();
            let seen = stamps.clone();
            let mut pulls = 0;
            let server = scripted_answers(move |operation, _| {
                seen.note(operation);
                match operation {
                    "pull" => Answer::new(
                        200,
                        pulled_once(
                            &mut pulls,
                            &[("a", Some("la")), ("b", Some("lb")), ("c", Some("lc"))],
                        ),
                    ),
                    "ack" => refused(status, code, retry_after),
                    _ => Answer::new(404, failure(7003, "No route for the URI")),
                }
            })
            .await;
            let running = Running::start(
                Consumer::builder(server.queue())
                    .ack_batch_size(3)
                    .ack_interval(HOUR)
                    .error_backoff(S, 30 * S),
                ack_now,
            );
            tokio::time::sleep(20 * S).await;
            let gaps = stamps.gaps("ack");
            let case = format!("{status}/{code}, Retry-After: {retry_after}");
            if code == 971 && read == Read::Longest {
                // A block: the flush waits it out, five minutes at the most.
                assert!(gaps.is_empty(), "{case}: {gaps:?}");
            } else {
                // The backoff: 1, 2, 4, 8 s.
                assert_gaps(&gaps, &[S, 2 * S, 4 * S, 8 * S], &case);
            }
            let stopped = Instant::now();
            let summary = running.finish().await;
            // The grace period (nothing to wait for) and the flush timeout.
            assert!(stopped.elapsed() <= 10 * S + S, "{case}");
            assert_counts!(summary, handled: 3, acked: 0, unflushed: 3, in_flight: 0);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_extension_refused_with_any_retry_after_never_holds_the_acks() {
    for (retry_after, _) in HOSTILE {
        let stamps = Stamps::default();
        let seen = stamps.clone();
        let (mut pulls, mut extensions) = (0, 0);
        let server = scripted_answers(move |operation, body| {
            seen.note(operation);
            match operation {
                "pull" => Answer::new(
                    200,
                    pulled_once(&mut pulls, &[("a", Some("la")), ("b", Some("lb"))]),
                ),
                "extend" => {
                    extensions += 1;
                    if extensions == 1 {
                        refused(429, 10250, retry_after)
                    } else {
                        Answer::new(200, success(json!({"extendCount": 2})))
                    }
                }
                "ack" => Answer::new(200, acked(body, &[])),
                _ => Answer::new(404, failure(7003, "No route for the URI")),
            }
        })
        .await;
        let running = Running::start(
            Consumer::builder(server.queue())
                .visibility_timeout(10 * S)
                .ack_batch_size(2),
            acks_after(25 * S),
        );
        running
            .eventually("both acked", STEP, 60 * S, |s| s.acked == 2)
            .await;
        let summary = running.finish().await;
        assert_counts!(summary, acked: 2, leases_lost: 0, unflushed: 0);
        assert!(
            summary.extended >= 2,
            "Retry-After {retry_after}: {summary:?}"
        );
        let acked_at = stamps.of("ack")[0] - stamps.of("pull")[0];
        assert!(
            acked_at < 26 * S,
            "Retry-After {retry_after}: acked {acked_at:?} after the pull"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_refused_with_any_retry_after_is_resent_after_the_backoff_and_lands() {
    for code in [10250, 971] {
        for (retry_after, read) in HOSTILE {
            let stamps = Stamps::default();
            let seen = stamps.clone();
            let mut batches = 0;
            let server = scripted_answers(move |operation, _| {
                seen.note(operation);
                batches += 1;
                match batches {
                    1..=2 => refused(429, code, retry_after),
                    _ => Answer::new(200, success(json!(null))),
                }
            })
            .await;
            let producer = Producer::builder(server.queue())
                // Three sends of five minutes' wait fit.
                .send_timeout(HOUR)
                .build()
                .expect("valid settings");
            let sends: Vec<_> = (0..3)
                .map(|i| tokio::spawn(producer.send(Message::text(format!("m{i}")))))
                .collect();
            for send in sends {
                send.await
                    .expect("task")
                    .expect("landed once the refusals end");
            }
            let gaps = stamps.gaps("batch");
            let case = format!("{code}, Retry-After: {retry_after}");
            assert_eq!(gaps.len(), 2, "{case}: one batch, sent three times");
            let (least, most) = match read {
                // Five minutes, not a year (nor an hour).
                Read::Longest => (LONGEST_SERVER_WAIT, LONGEST_SERVER_WAIT + 2 * S),
                // The retry policy's backoff (0.5 s, then 1 s, less a
                // quarter at most for the jitter), or the pacer's second
                // after a block that named no end.
                Read::Nothing => (Duration::from_millis(375), 2 * S),
            };
            assert!(
                gaps.iter().all(|gap| (least..=most).contains(gap)),
                "{case}: {gaps:?}"
            );
            producer.close().await;
        }
    }
}

/// The shutdown accounts for every settlement: acks refused (429 for the
/// queue or the token, 503, or never answered) as it begins are either
/// sent or counted unflushed, and the messages of those counted are the
/// only ones left in the queue, to come back when their leases expire.
#[tokio::test(start_paused = true)]
async fn every_settlement_is_sent_or_counted_unflushed_when_acks_fail_at_shutdown() {
    let faults = [
        (
            "429 for the queue",
            Fault::status(429)
                .cloudflare_error(10250, "QueueOverloaded")
                .retry_after(2 * S)
                .times(1_000),
        ),
        (
            "429 for the token",
            Fault::status(429)
                .cloudflare_error(
                    971,
                    "Please wait and consider throttling your request speed",
                )
                .retry_after(300 * S)
                .times(1_000),
        ),
        ("503 forever", Fault::status(503).times(1_000)),
        ("one 503", Fault::status(503).times(1)),
        ("no answer", Fault::stall_only(HOUR).times(1_000)),
    ];
    for (case, fault) in faults {
        let (emulator, _clock) = emulator_on_tokio_time().await;
        // Acks go by fives: the last three wait for the shutdown's flush.
        let queue = pushed_to(&emulator, "refusedatshutdown", 18).await;
        let running = Running::start(
            Consumer::builder(queue.clone())
                .visibility_timeout(30 * S)
                .ack_batch_size(5)
                .ack_interval(HOUR)
                .error_backoff(S, 30 * S),
            acks_after(Duration::ZERO),
        );
        running
            .eventually("15 acked", STEP, 10 * S, |s| {
                s.acked == 15 && s.handled == 18
            })
            .await;
        emulator.inject(fault.only(Operation::Ack));
        let stopped = Instant::now();
        let summary = running.finish().await;
        assert!(
            stopped.elapsed() <= 20 * S,
            "{case}: {:?}",
            stopped.elapsed()
        );
        assert_eq!(summary.handled, 18, "{case}");
        assert_eq!(summary.acked + summary.unflushed, 18, "{case}: {summary:?}");
        let expected_unflushed = if case == "one 503" { 0 } else { 3 };
        assert_eq!(summary.unflushed, expected_unflushed, "{case}: {summary:?}");
        assert_eq!(summary.leases_lost, 0, "{case}");
        // Nothing else is left; what is left comes back once its leases expire.
        emulator.clear_faults();
        assert_backlog(&emulator, "refusedatshutdown", summary.unflushed);
        tokio::time::sleep(31 * S).await;
        let again = queue
            .pull(PullOptions::new().batch_size(100))
            .await
            .expect("pull");
        assert_eq!(again.messages.len() as u64, summary.unflushed, "{case}");
    }
}
