//! `cfq relay` against the emulator and the kit's recording service:
//! exact requests, the answers' table, a service down and back, slow,
//! refusing and redirecting, signals, two relays on one queue, and what
//! it refuses at start.

use std::collections::BTreeMap;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use cf_queues::Message;
use cf_queues_emulator::{EmulatorHandle, Fault, Operation, WorkerBody};
use cf_queues_testkit::recording_target::{Recorded, RecordingTarget, Reply};
use serde_json::{Value, json};

use crate::support::{
    Run, TOKEN, cfq, emulator_from_toml, emulator_with_queues, finish, numbered, pull_all_texts,
    push_each, queue_of, run, signal,
};

pub(crate) const SECOND: Duration = Duration::from_secs(1);

/// `cfq relay` on `queue` to `to`, with `extra` options; JSON on stdout.
pub(crate) fn start(emulator: &EmulatorHandle, queue: &str, to: &str, extra: &[&str]) -> Child {
    cfq(emulator)
        .args(["relay", "--queue", queue, "--to", to])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cfq starts")
}

/// SIGTERM, then what the relay did: its run and its summary.
pub(crate) async fn stop(child: Child) -> (Run, Value) {
    signal(&child, "TERM");
    let run = finish(child).await;
    let summary = run
        .json()
        .pop()
        .unwrap_or_else(|| panic!("a summary: {run:?}"));
    (run, summary)
}

/// Waits up to `limit` for `done`, checking every 20 ms.
pub(crate) async fn eventually(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub(crate) fn text(request: &Recorded) -> String {
    String::from_utf8_lossy(&request.body).into_owned()
}

/// How often each body was POSTed.
pub(crate) fn counts(requests: &[Recorded]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for request in requests {
        *counts.entry(text(request)).or_default() += 1;
    }
    counts
}

pub(crate) fn once_each(bodies: &[String]) -> BTreeMap<String, usize> {
    bodies.iter().map(|b| (b.clone(), 1)).collect()
}

/// Checks that every request was its message's first delivery.
#[track_caller]
pub(crate) fn assert_first_attempts(requests: &[Recorded]) {
    let attempts: Vec<_> = requests.iter().map(|r| r.header("cfq-attempts")).collect();
    assert!(attempts.iter().all(|a| *a == Some("1")), "{attempts:?}");
}

/// The summary's figures `names`, in order.
pub(crate) fn figures<const N: usize>(summary: &Value, names: [&str; N]) -> [u64; N] {
    names.map(|name| {
        summary[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name} in {summary}"))
    })
}

/// Pushes `count` numbered text messages to `queue` (an id); their bodies.
/// The id of the queue of [`with_dead_letter_queue`], and of its dead-letter queue.
pub(crate) const QUEUE: &str = "0000000000000000000000000000000a";
pub(crate) const DLQ: &str = "0000000000000000000000000000000b";

/// An emulator with queue `name` ([`QUEUE`]), whose HTTP pull consumer
/// dead-letters into `name-dlq` ([`DLQ`]) after `max_retries`.
pub(crate) async fn with_dead_letter_queue(name: &str, max_retries: u32) -> EmulatorHandle {
    emulator_from_toml(&format!(
        r#"
        [[queues]]
        queue_name = "{name}"
        queue_id = "{QUEUE}"
        [queues.consumer]
        type = "http_pull"
        dead_letter_queue = "{name}-dlq"
        settings = {{ max_retries = {max_retries} }}
        [[queues]]
        queue_name = "{name}-dlq"
        queue_id = "{DLQ}"
        consumer = {{ type = "http_pull" }}
        "#
    ))
    .await
}

pub(crate) async fn pushed(emulator: &EmulatorHandle, queue: &str, count: usize) -> Vec<String> {
    let bodies = numbered(queue, count);
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    push_each(&queue_of(emulator, queue), &refs).await;
    bodies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_body_and_header_exactly_acked_on_2xx_and_no_credential_sent() {
    let emulator = emulator_with_queues(&["exact"]).await;
    let queue = queue_of(&emulator, "exact");
    let json_body = json!({"order": 42, "name": "crème brûlée", "items": [1, 2]});
    queue
        .push(Message::json(&json_body).expect("json"))
        .await
        .expect("push");
    queue
        .push(Message::text("héllo\nworld"))
        .await
        .expect("push");
    emulator.push_from_worker("exact", WorkerBody::Bytes(vec![0, 255, 10, 13]));
    emulator.push_from_worker(
        "exact",
        WorkerBody::V8(vec![0xff, 0x0f, 0x22, 0x02, 0x68, 0x69]),
    );
    let service = RecordingTarget::start().await;
    // Each status of the 2xx family acks.
    let mut statuses = [200, 201, 202, 204].into_iter().cycle();
    service.script(move |_| Reply::status(statuses.next().unwrap_or(200)));
    let pushed_before = std::time::SystemTime::now();
    let child = cfq(&emulator)
        .env("SERVICE_KEY", "s3cr3t-of-the-service")
        .args(["relay", "--queue", "exact", "--to"])
        .arg(format!("{}/in?x=1", service.url()))
        .args([
            "--header",
            "X-Team: payments",
            "--header-env",
            "X-Key: SERVICE_KEY",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cfq starts");
    let requests = service.wait_for(4, 20 * SECOND).await;
    assert_eq!(requests.len(), 4, "{requests:?}");
    let by_type: BTreeMap<&str, &Recorded> = requests
        .iter()
        .map(|r| (r.header("cfq-content-type").expect("a type"), r))
        .collect();
    let json_request = by_type["json"];
    // The JSON text as the producer sent it, byte for byte (the library
    // writes it compact, in serde_json's order).
    assert_eq!(
        String::from_utf8_lossy(&json_request.body),
        serde_json::to_string(&json_body).expect("JSON")
    );
    assert_eq!(
        json_request.header("content-type"),
        Some("application/json")
    );
    let text_request = by_type["text"];
    assert_eq!(text_request.body, "héllo\nworld".as_bytes());
    assert_eq!(
        text_request.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(by_type["bytes"].body, [0, 255, 10, 13]);
    assert_eq!(
        by_type["bytes"].header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(by_type["v8"].body, [0xff, 0x0f, 0x22, 0x02, 0x68, 0x69]);
    assert_eq!(
        by_type["v8"].header("content-type"),
        Some("application/octet-stream")
    );
    let since = |r: &Recorded| -> u64 {
        let at: u64 = r
            .header("cfq-timestamp")
            .expect("a timestamp")
            .parse()
            .expect("ms");
        let before = pushed_before
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_millis() as u64;
        before.saturating_sub(at)
    };
    for request in &requests {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/in?x=1");
        assert_eq!(request.header("cfq-attempts"), Some("1"));
        assert_eq!(request.header("cfq-queue-id"), Some(queue.id()));
        assert_eq!(request.header("cfq-queue-name"), Some("exact"));
        assert!(
            !request
                .header("cfq-message-id")
                .unwrap_or_default()
                .is_empty()
        );
        assert!(since(request) < 60_000, "pushed within the last minute");
        let metadata: Value =
            serde_json::from_str(request.header("cfq-metadata").expect("metadata")).expect("JSON");
        assert_eq!(
            metadata["CF-Content-Type"].as_str(),
            request.header("cfq-content-type")
        );
        assert_eq!(request.header("x-team"), Some("payments"));
        assert_eq!(request.header("x-key"), Some("s3cr3t-of-the-service"));
        assert!(
            request
                .header("user-agent")
                .is_some_and(|ua| ua.starts_with("cfq-relay/"))
        );
        // The Cloudflare credentials never leave for the service.
        assert_eq!(request.header("authorization"), None);
        let all_headers = format!("{:?}", request.headers);
        assert!(!all_headers.contains(TOKEN), "{all_headers}");
        assert!(!String::from_utf8_lossy(&request.body).contains(TOKEN));
    }
    let ids: std::collections::BTreeSet<_> = requests
        .iter()
        .map(|r| r.header("cfq-message-id"))
        .collect();
    assert_eq!(ids.len(), 4, "one id per message");
    eventually("all acked", 10 * SECOND, || {
        emulator.metrics("exact").backlog_count == 0
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert!(
        run.stderr.contains("relaying exact to http://127.0.0.1:")
            && run.stderr.contains("/in: 16 POSTs at once"),
        "the start line, without the query: {run:?}"
    );
    assert!(!run.stderr.contains("x=1"), "{run:?}");
    assert_eq!(
        figures(&summary, ["delivered", "acked", "refused"]),
        [4, 4, 0],
        "{summary}"
    );
    assert_eq!(summary["stopped_by"], "SIGTERM");
    assert_eq!(service.requests().len(), 4, "nothing delivered twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_down_for_30_s_costs_no_attempt_and_loses_nothing() {
    let emulator = emulator_with_queues(&["outage"]).await;
    let bodies = pushed(&emulator, "outage", 30).await;
    let service = RecordingTarget::start().await;
    service.go_down();
    let pulls_before = emulator.requests_received();
    let child = start(
        &emulator,
        "outage",
        &service.url(),
        &[
            "--concurrency",
            "4",
            "--backoff",
            "200ms..2s",
            "--visibility",
            "2s",
        ],
    );
    tokio::time::sleep(30 * SECOND).await;
    assert!(service.requests().is_empty());
    // Paused: the relay holds what it leased first (8: 4 POSTs and a pull's
    // worth) and pulls no more; the rest stay on the queue for others.
    let leased = emulator.metrics("outage");
    assert!(
        emulator.requests_received() - pulls_before < 60,
        "a pause, not a loop: {} requests",
        emulator.requests_received() - pulls_before
    );
    service.come_back().await;
    let requests = service.wait_for(30, 30 * SECOND).await;
    assert_eq!(counts(&requests), once_each(&bodies), "each once");
    assert_first_attempts(&requests);
    eventually("all acked", 10 * SECOND, || {
        emulator.metrics("outage").backlog_count == 0
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert_eq!(figures(&summary, ["delivered"]), [30], "{summary}");
    assert_eq!(
        figures(&summary, ["retried", "held_too_long"]),
        [0, 0],
        "{summary}"
    );
    assert_eq!(figures(&summary, ["leases_lost"]), [0], "{summary}");
    assert!(
        summary["extended"].as_u64() > Some(0),
        "leases kept: {summary}"
    );
    assert!(
        summary["pauses"].as_u64() >= Some(5),
        "backed off: {summary}"
    );
    assert!(
        run.stderr
            .contains("the service is down or busy (cannot connect"),
        "{run:?}"
    );
    assert_eq!(leased.backlog_count, 30, "nothing lost while down");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_on_503_pauses_the_relay_that_long() {
    let emulator = emulator_with_queues(&["later"]).await;
    let bodies = pushed(&emulator, "later", 5).await;
    let service = RecordingTarget::start().await;
    let mut first = true;
    service.script(move |_| {
        if std::mem::take(&mut first) {
            Reply::retry_after(503, 3).body("<html>maintenance</html>")
        } else {
            Reply::ok()
        }
    });
    let child = start(&emulator, "later", &service.url(), &["--concurrency", "1"]);
    let requests = service.wait_for(6, 20 * SECOND).await;
    assert_eq!(requests.len(), 6, "{requests:?}");
    let waited = requests[1].at.duration_since(requests[0].at);
    assert!(
        waited >= Duration::from_millis(2_900) && waited < 5 * SECOND,
        "the next request {waited:?} after the 503"
    );
    assert_eq!(
        text(&requests[1]),
        text(&requests[0]),
        "the held message first"
    );
    assert_eq!(counts(&requests[1..]), once_each(&bodies), "then each once");
    assert_first_attempts(&requests);
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert_eq!(
        figures(&summary, ["delivered", "busy_answers", "pauses"]),
        [5, 1, 1],
        "{summary}"
    );
    assert!(
        run.stderr.contains(
            "the service is down or busy (HTTP 503: <html>maintenance</html>): pausing 3s"
        ),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_slower_than_the_lease_keeps_it_and_gets_each_message_once() {
    let emulator = emulator_with_queues(&["slow"]).await;
    let bodies = pushed(&emulator, "slow", 3).await;
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::ok().after(5 * SECOND));
    let child = start(
        &emulator,
        "slow",
        &service.url(),
        &[
            "--visibility",
            "2s",
            "--timeout",
            "10s",
            "--concurrency",
            "4",
        ],
    );
    service.wait_for(3, 10 * SECOND).await;
    eventually("all acked", 20 * SECOND, || {
        emulator.metrics("slow").backlog_count == 0
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert_eq!(counts(&service.requests()), once_each(&bodies));
    assert_eq!(
        figures(&summary, ["delivered", "leases_lost"]),
        [3, 0],
        "{summary}"
    );
    assert!(summary["extended"].as_u64() >= Some(3), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_held_past_hold_is_retried_with_an_attempt_used() {
    let emulator = emulator_with_queues(&["held"]).await;
    push_each(&queue_of(&emulator, "held"), &["h"]).await;
    let service = RecordingTarget::start().await;
    service.go_down();
    let child = start(
        &emulator,
        "held",
        &service.url(),
        &[
            "--hold",
            "2s",
            "--backoff",
            "200ms..500ms",
            "--retry-delay",
            "1s",
        ],
    );
    // Held until 2 s, back on the queue at 3 s, pulled again (the pause
    // over) and held by the next probe when the service comes back.
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    service.come_back().await;
    let requests = service.wait_for(1, 20 * SECOND).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("cfq-attempts"),
        Some("2"),
        "retried once, after --hold"
    );
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert_eq!(
        figures(&summary, ["held_too_long", "delivered", "retried"]),
        [1, 1, 1],
        "{summary}"
    );
    assert!(
        run.stderr.contains("message ") && run.stderr.contains("was held 2s"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_past_its_timeout_means_busy_not_refused() {
    let emulator = emulator_with_queues(&["timeout"]).await;
    push_each(&queue_of(&emulator, "timeout"), &["t"]).await;
    let service = RecordingTarget::start().await;
    let mut first = true;
    service.script(move |_| {
        let delay = if std::mem::take(&mut first) {
            3 * SECOND
        } else {
            Duration::ZERO
        };
        Reply::ok().after(delay)
    });
    let child = start(
        &emulator,
        "timeout",
        &service.url(),
        &["--timeout", "1s", "--backoff", "1s..2s"],
    );
    let requests = service.wait_for(2, 20 * SECOND).await;
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at.duration_since(requests[0].at);
    assert!(
        waited >= 2 * SECOND - Duration::from_millis(100),
        "timed out, then paused: {waited:?}"
    );
    assert_first_attempts(&requests);
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert_eq!(
        figures(&summary, ["busy_answers", "refused", "delivered"]),
        [1, 0, 1],
        "{summary}"
    );
    assert!(
        run.stderr.contains("(no answer within --timeout"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_message_is_retried_then_dead_lettered() {
    let emulator = with_dead_letter_queue("refusing", 3).await;
    push_each(&queue_of(&emulator, QUEUE), &["good 1", "bad", "good 2"]).await;
    let service = RecordingTarget::start().await;
    service.script(|r| {
        if r.body == b"bad" {
            Reply::status(400).body("{\"error\":\"no such order\"}")
        } else {
            Reply::status(204)
        }
    });
    let child = start(
        &emulator,
        "refusing",
        &service.url(),
        &["--retry-delay", "0s"],
    );
    eventually("dead-lettered", 20 * SECOND, || {
        emulator.metrics(DLQ).backlog_count == 1
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    let requests = service.requests();
    let attempts: Vec<&str> = requests
        .iter()
        .filter(|r| r.body == b"bad")
        .filter_map(|r| r.header("cfq-attempts"))
        .collect();
    assert_eq!(attempts, ["1", "2", "3"]);
    assert_eq!(counts(&requests)["good 1"], 1);
    assert_eq!(counts(&requests)["good 2"], 1);
    assert_eq!(pull_all_texts(&emulator, DLQ).await, ["bad"]);
    assert_eq!(
        figures(&summary, ["delivered", "refused"]),
        [2, 3],
        "{summary}"
    );
    assert!(
        run.stderr
            .contains(r#"(HTTP 400: {"error":"no such order"}): retried in 0s (attempt 1)"#),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_posts_in_flight_finish_and_gives_the_rest_back() {
    let emulator = emulator_with_queues(&["stopping"]).await;
    let bodies = pushed(&emulator, "stopping", 10).await;
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::ok().after(3 * SECOND));
    let child = start(
        &emulator,
        "stopping",
        &service.url(),
        &["--concurrency", "2"],
    );
    eventually("two POSTs in flight", 20 * SECOND, || {
        service.in_progress() == 2
    })
    .await;
    let signalled = Instant::now();
    let (run, summary) = stop(child).await;
    let took = signalled.elapsed();
    run.expect_code(0);
    assert!(took < 15 * SECOND, "within the grace period: {took:?}");
    let delivered = service.requests();
    assert_eq!(delivered.len(), 2, "no POST after the signal");
    assert_eq!(
        figures(&summary, ["delivered", "acked"]),
        [2, 2],
        "{summary}"
    );
    assert!(run.stderr.contains("SIGTERM: stopping"), "{run:?}");
    let mut back = pull_all_texts(&emulator, "stopping").await;
    back.extend(delivered.iter().map(text));
    back.sort();
    let mut all = bodies.clone();
    all.sort();
    assert_eq!(back, all, "the rest back on the queue, nothing twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_left_unsent_at_the_stop_exit_7() {
    let emulator = emulator_with_queues(&["unacked"]).await;
    push_each(&queue_of(&emulator, "unacked"), &["a", "b"]).await;
    emulator.inject(Fault::status(500).times(10_000).only(Operation::Ack));
    let service = RecordingTarget::start().await;
    let child = start(&emulator, "unacked", &service.url(), &[]);
    assert_eq!(service.wait_for(2, 20 * SECOND).await.len(), 2);
    let (run, summary) = stop(child).await;
    run.expect_stderr(7, "2 acks or retries were not sent before the stop");
    assert_eq!(
        figures(&summary, ["delivered", "acked", "unflushed"]),
        [2, 0, 2],
        "{summary}"
    );
}

/// A terminal's Ctrl-C reaches `npx cfq`'s launcher and cfq alike, and
/// the launcher passes it on: two signals at once are one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_signals_at_once_count_as_one() {
    let emulator = emulator_with_queues(&["twice"]).await;
    pushed(&emulator, "twice", 1).await;
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::ok().after(2 * SECOND));
    let child = start(&emulator, "twice", &service.url(), &[]);
    eventually("a POST in flight", 20 * SECOND, || {
        service.in_progress() == 1
    })
    .await;
    signal(&child, "INT");
    signal(&child, "INT");
    let run = finish(child).await;
    run.expect_code(0);
    assert_eq!(
        figures(&run.one(), ["delivered", "acked"]),
        [1, 1],
        "stopped in order"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_stops_at_once_and_says_what_was_left() {
    let emulator = emulator_with_queues(&["hurry"]).await;
    push_each(&queue_of(&emulator, "hurry"), &["a", "b"]).await;
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::ok().after(60 * SECOND));
    let child = start(&emulator, "hurry", &service.url(), &[]);
    eventually("POSTs in flight", 20 * SECOND, || {
        service.in_progress() == 2
    })
    .await;
    signal(&child, "TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signalled = Instant::now();
    signal(&child, "INT");
    let run = finish(child).await;
    assert!(signalled.elapsed() < 2 * SECOND, "at once");
    run.expect_stderr_all(
        7,
        &[
            "stopped at once: 2 POSTs cut off",
            "2 messages still leased",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_share_one_queue_and_deliver_each_message_once() {
    let emulator = emulator_with_queues(&["shared"]).await;
    let bodies = numbered("shared", 200);
    let queue = queue_of(&emulator, "shared");
    for chunk in bodies.chunks(100) {
        let batch: Vec<Message> = chunk.iter().map(|b| Message::text(b.as_str())).collect();
        queue.push_batch(batch).await.expect("push");
    }
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::ok().after(Duration::from_millis(10)));
    let one = start(&emulator, "shared", &service.url(), &["--concurrency", "8"]);
    let two = start(&emulator, "shared", &service.url(), &["--concurrency", "8"]);
    let requests = service.wait_for(200, 60 * SECOND).await;
    assert_eq!(counts(&requests), once_each(&bodies));
    eventually("all acked", 10 * SECOND, || {
        emulator.metrics("shared").backlog_count == 0
    })
    .await;
    let ((run_one, one), (run_two, two)) = tokio::join!(stop(one), stop(two));
    run_one.expect_code(0);
    run_two.expect_code(0);
    assert_eq!(
        one["delivered"].as_u64().unwrap_or(0) + two["delivered"].as_u64().unwrap_or(0),
        200
    );
    assert!(one["delivered"].as_u64() > Some(0) && two["delivered"].as_u64() > Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_an_answer_never_followed() {
    let emulator = emulator_with_queues(&["moved"]).await;
    push_each(&queue_of(&emulator, "moved"), &["m"]).await;
    let elsewhere = RecordingTarget::start().await;
    let service = RecordingTarget::start().await;
    let location = format!("{}/stolen", elsewhere.url());
    service.script(move |_| {
        Reply::status(307)
            .header("location", &location)
            .body("\u{1b}]0;pwned\u{7}moved")
    });
    let child = start(&emulator, "moved", &service.url(), &["--retry-delay", "0s"]);
    let requests = service.wait_for(2, 20 * SECOND).await;
    assert_eq!(requests.len(), 2, "retried as a refusal");
    assert_eq!(requests[1].header("cfq-attempts"), Some("2"));
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert!(elsewhere.requests().is_empty(), "never followed");
    assert!(
        run.stderr.contains(r"(HTTP 307: \u{1b}]0;pwned\u{7}moved)")
            && !run.stderr.contains('\u{1b}'),
        "the answer's text escaped: {run:?}"
    );
    assert!(summary["refused"].as_u64() >= Some(2), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_relay_refuses_at_start() {
    let emulator = emulator_with_queues(&["start"]).await;
    let service = RecordingTarget::start().await;
    let url = service.url();
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let cases: [(&[&str], i32, &str); 7] = [
        (
            &["--header-env", "Authorization: CLOUDFLARE_API_TOKEN"],
            2,
            "CLOUDFLARE_API_TOKEN is a Cloudflare variable",
        ),
        (&["--header", &bearer], 2, "holds a Cloudflare credential"),
        (
            &["--header", "Cfq-Attempts: 9"],
            2,
            "set by the relay itself",
        ),
        (
            &["--header-env", "X-Key: CFQ_UNSET_VAR"],
            2,
            "CFQ_UNSET_VAR is not set",
        ),
        (
            &["--hold", "0s"],
            2,
            "'--hold <DURATION>': 0s: must be from 1ms to 1day",
        ),
        (
            &["--retry-delay", "5m..1s"],
            2,
            "the first duration is above the second",
        ),
        (&["--visibility", "0s"], 2, "visibility"),
    ];
    for (extra, code, said) in cases {
        let mut command = cfq(&emulator);
        command
            .args(["relay", "--queue", "start", "--to", &url])
            .args(extra);
        let run = run(command).await;
        run.expect_stderr(code, said);
        assert!(!run.stderr.contains(TOKEN), "{run:?}");
    }
    let mut command = cfq(&emulator);
    command.args([
        "relay",
        "--queue",
        "start",
        "--to",
        "https://user:pw@example.com/",
    ]);
    run(command)
        .await
        .expect_stderr(2, "a user or password in the URL");
    let mut command = cfq(&emulator);
    command.args(["relay", "--queue", "no-such-queue", "--to", &url]);
    run(command).await.expect_code(4);
    let mut command = cfq(&emulator);
    command
        .env("CLOUDFLARE_API_TOKEN", "a-token-the-emulator-refuses")
        .args(["relay", "--queue-id", "start", "--to", &url]);
    run(command).await.expect_code(3);
    assert!(service.requests().is_empty());
}
