//! `cfq relay`'s options beyond one message per POST: batches and their
//! answers, signed requests, `--max-age`, `--wait-for-target`, and the
//! health and metrics endpoint of `--listen`.

use std::time::{Duration, SystemTime};

use cf_queues::Message;
use cf_queues_emulator::{Fault, Operation};
use cf_queues_testkit::recording_target::{RecordingTarget, Reply};
use hmac::{Hmac, Mac as _};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::relay::{
    DLQ, QUEUE, SECOND, counts, eventually, figures, once_each, pushed, start, stop, text,
    with_dead_letter_queue,
};
use crate::support::{cfq, emulator_with_queues, pull_all_texts, queue_of};

/// A free loopback address for `--listen`.
pub(crate) fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    listener.local_addr().expect("its address").to_string()
}

/// GET `path` of the relay's own server: the status and the body.
pub(crate) async fn get(address: &str, path: &str) -> (u16, String) {
    let response = reqwest::get(format!("http://{address}{path}"))
        .await
        .expect("the relay's server answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

/// Waits until GET `path` answers `status`.
pub(crate) async fn until_status(address: &str, path: &str, status: u16) -> String {
    let started = std::time::Instant::now();
    loop {
        if let Ok(response) = reqwest::get(format!("http://{address}{path}")).await
            && response.status().as_u16() == status
        {
            return response.text().await.expect("a body");
        }
        assert!(
            started.elapsed() < 20 * SECOND,
            "{path} never answered {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The records of a batch request's body.
fn records(body: &[u8]) -> Vec<Value> {
    match serde_json::from_slice(body) {
        Ok(Value::Array(records)) => records,
        other => panic!("not a JSON array: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_of_records_and_the_ids_their_answer_retries() {
    let emulator = emulator_with_queues(&["batches"]).await;
    let bodies = pushed(&emulator, "batches", 25).await;
    let service = RecordingTarget::start().await;
    let mut first = true;
    service.script(move |request| {
        let records = records(&request.body);
        // The first batch holding "batches 3" asks for it again, and for an id it never had.
        let third = records.iter().find(|r| r["body"] == "batches 3");
        match third {
            Some(record) if std::mem::take(&mut first) => Reply::ok().body(
                json!({"retry": [{"id": record["id"], "delay_seconds": 0}, {"id": "never-sent"}]})
                    .to_string(),
            ),
            _ => Reply::status(204),
        }
    });
    let child = start(&emulator, "batches", &service.url(), &["--batch", "10"]);
    eventually("all acked", 20 * SECOND, || {
        emulator.metrics("batches").backlog_count == 0
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    let requests = service.requests();
    let mut seen = Vec::new();
    for request in &requests {
        assert_eq!(request.header("content-type"), Some("application/json"));
        assert_eq!(request.header("cfq-queue-id"), Some("batches"));
        let records = records(&request.body);
        assert!((1..=10).contains(&records.len()), "{}", records.len());
        assert_eq!(
            request.header("cfq-batch-size"),
            Some(records.len().to_string().as_str())
        );
        for record in records {
            assert_eq!(record["cfq"], 1);
            assert_eq!(record["content_type"], "text");
            assert!(record.get("lease_id").is_none(), "no lease in a record");
            seen.push((
                record["body"].as_str().expect("a text body").to_owned(),
                record["attempts"].as_u64().expect("attempts"),
            ));
        }
    }
    let retried: Vec<_> = seen.iter().filter(|(b, _)| b == "batches 3").collect();
    assert_eq!(retried.len(), 2, "asked again once: {seen:?}");
    assert_eq!((retried[0].1, retried[1].1), (1, 2));
    let mut distinct: Vec<String> = seen.into_iter().map(|(b, _)| b).collect();
    distinct.sort();
    distinct.dedup();
    let mut all = bodies.clone();
    all.sort();
    assert_eq!(distinct, all);
    assert_eq!(
        figures(&summary, ["delivered", "refused", "unknown_ids", "acked"]),
        [25, 1, 1, 25]
    );
    assert!(
        run.stderr
            .contains("asked to retry 1 id that the batch did not hold (ignored): never-sent"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_batch_answer_retries_the_whole_batch() {
    let emulator = emulator_with_queues(&["unreadable"]).await;
    let bodies = pushed(&emulator, "unreadable", 3).await;
    let service = RecordingTarget::start().await;
    let mut first = true;
    service.script(move |_| {
        if std::mem::take(&mut first) {
            Reply::ok().body("OK")
        } else {
            Reply::ok()
        }
    });
    let child = start(
        &emulator,
        "unreadable",
        &service.url(),
        &["--batch", "10", "--retry-delay", "0s", "--concurrency", "1"],
    );
    eventually("all acked", 20 * SECOND, || {
        emulator.metrics("unreadable").backlog_count == 0
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    let mut delivered: Vec<String> = Vec::new();
    for request in service.requests() {
        for record in records(&request.body) {
            delivered.push(record["body"].as_str().unwrap_or_default().to_owned());
        }
    }
    let twice: Vec<&String> = bodies
        .iter()
        .filter(|b| delivered.iter().filter(|d| d == b).count() == 2)
        .collect();
    assert_eq!(
        twice.len(),
        delivered.len() - 3,
        "the first batch again, whole: {delivered:?}"
    );
    assert_eq!(figures(&summary, ["acked"]), [3]);
    assert!(
        run.stderr
            .contains("that cannot be read (the answer is not a JSON object)"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_keeps_to_its_byte_cap_and_a_large_message_goes_alone() {
    let emulator = emulator_with_queues(&["cap"]).await;
    let queue = queue_of(&emulator, "cap");
    let small = "s".repeat(300);
    let large = "L".repeat(3_000);
    for body in [&small, &small, &small, &large, &small] {
        queue
            .push(Message::text(body.as_str()))
            .await
            .expect("push");
    }
    let service = RecordingTarget::start().await;
    let child = start(
        &emulator,
        "cap",
        &service.url(),
        &[
            "--batch",
            "10",
            "--batch-bytes",
            "2048",
            "--concurrency",
            "1",
        ],
    );
    eventually("all acked", 20 * SECOND, || {
        emulator.metrics("cap").backlog_count == 0
    })
    .await;
    let (run, _) = stop(child).await;
    run.expect_code(0);
    let requests = service.requests();
    for request in &requests {
        let records = records(&request.body);
        let holds_large = records.iter().any(|r| r["body"] == large.as_str());
        if holds_large {
            assert_eq!(records.len(), 1, "the large one alone");
        } else {
            assert!(request.body.len() <= 2048, "{} bytes", request.body.len());
        }
    }
    let total: usize = requests.iter().map(|r| records(&r.body).len()).sum();
    assert_eq!(total, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_request_checks_out_as_the_service_checks_it() {
    let emulator = emulator_with_queues(&["signed"]).await;
    pushed(&emulator, "signed", 2).await;
    let service = RecordingTarget::start().await;
    let child = cfq(&emulator)
        .env("RELAY_SECRET", "whsec-a-long-shared-secret")
        .args(["relay", "--queue", "signed", "--to", &service.url()])
        .args(["--sign-secret-env", "RELAY_SECRET"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cfq starts");
    let requests = service.wait_for(2, 20 * SECOND).await;
    let (run, _) = stop(child).await;
    run.expect_code(0);
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    for request in &requests {
        // What the service does: split the header, refuse an old time,
        // compute the HMAC of "<t>." + the body, compare.
        let header = request.header("cfq-signature").expect("signed");
        let (t, v1) = header
            .split_once(',')
            .and_then(|(t, v1)| Some((t.strip_prefix("t=")?, v1.strip_prefix("v1=")?)))
            .expect("t=…,v1=…");
        let t: u64 = t.parse().expect("seconds");
        assert!(now.abs_diff(t) < 60, "signed now");
        let mut mac = Hmac::<Sha256>::new_from_slice(b"whsec-a-long-shared-secret").expect("a key");
        mac.update(format!("{t}.").as_bytes());
        mac.update(&request.body);
        let expected: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(v1, expected, "{}", text(request));
        assert!(
            !format!("{:?}", request.headers).contains("whsec"),
            "the secret never sent"
        );
    }
    assert!(!run.stderr.contains("whsec") && !run.stdout.contains("whsec"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_past_max_age_are_acked_unsent() {
    let emulator = emulator_with_queues(&["aged"]).await;
    pushed(&emulator, "aged", 2).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    crate::support::push_each(&queue_of(&emulator, "aged"), &["fresh"]).await;
    let service = RecordingTarget::start().await;
    let child = start(
        &emulator,
        "aged",
        &service.url(),
        &["--max-age", "1s", "--max-age-action", "ack"],
    );
    eventually("all settled", 20 * SECOND, || {
        emulator.metrics("aged").backlog_count == 0
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert_eq!(
        counts(&service.requests()),
        once_each(&["fresh".to_owned()])
    );
    assert_eq!(
        figures(&summary, ["expired", "delivered", "acked"]),
        [2, 1, 3]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_past_max_age_go_to_the_dead_letter_queue_unsent() {
    let emulator = with_dead_letter_queue("aging", 2).await;
    crate::support::push_each(&queue_of(&emulator, QUEUE), &["old"]).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let service = RecordingTarget::start().await;
    let child = start(&emulator, "aging", &service.url(), &["--max-age", "1s"]);
    eventually("dead-lettered", 20 * SECOND, || {
        emulator.metrics(DLQ).backlog_count == 1
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert!(service.requests().is_empty(), "never POSTed");
    assert_eq!(pull_all_texts(&emulator, DLQ).await, ["old"]);
    assert_eq!(
        figures(&summary, ["expired", "delivered"]),
        [2, 0],
        "once per delivery"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_target_pulls_nothing_until_the_service_answers_and_readyz_says_why() {
    let emulator = emulator_with_queues(&["waiting"]).await;
    let bodies = pushed(&emulator, "waiting", 3).await;
    let service = RecordingTarget::start().await;
    service.go_down();
    let address = free_address();
    let child = start(
        &emulator,
        "waiting",
        &service.url(),
        &[
            "--wait-for-target",
            "--backoff",
            "200ms..1s",
            "--listen",
            &address,
        ],
    );
    let why = until_status(&address, "/readyz", 503).await;
    assert_eq!(
        why,
        "not ready: waiting for the service's first answer (--wait-for-target)\n"
    );
    assert_eq!(get(&address, "/healthz").await, (200, "ok\n".to_owned()));
    let before = emulator.requests_received();
    tokio::time::sleep(2 * SECOND).await;
    assert_eq!(
        emulator.requests_received(),
        before,
        "no pull while waiting"
    );
    service.come_back().await;
    assert_eq!(until_status(&address, "/readyz", 200).await, "ready\n");
    eventually("all acked", 20 * SECOND, || {
        emulator.metrics("waiting").backlog_count == 0
    })
    .await;
    let (_, metrics) = get(&address, "/metrics").await;
    assert!(
        metrics.contains("cfq_relay_delivered_total{queue=\"waiting\"} 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cfq_relay_ready{queue=\"waiting\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cf_queues_consumer_"),
        "the consumer's figures: {metrics}"
    );
    let (run, _) = stop(child).await;
    run.expect_code(0);
    let posts: Vec<_> = service
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(counts(&posts), once_each(&bodies));
    assert!(
        run.stderr
            .contains("waiting for the service to answer before pulling"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_target_asks_the_health_url_for_a_2xx() {
    let emulator = emulator_with_queues(&["health"]).await;
    pushed(&emulator, "health", 1).await;
    let service = RecordingTarget::start().await;
    let healthy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&healthy);
    service.script(move |request| match request.path.as_str() {
        "/health" if flag.load(std::sync::atomic::Ordering::SeqCst) => Reply::ok(),
        "/health" => Reply::status(500),
        _ => Reply::ok(),
    });
    let health_url = format!("{}/health", service.url());
    let child = start(
        &emulator,
        "health",
        &format!("{}/in", service.url()),
        &[
            "--wait-for-target",
            "--health-url",
            &health_url,
            "--backoff",
            "200ms..1s",
        ],
    );
    tokio::time::sleep(2 * SECOND).await;
    let asked = service.requests();
    assert!(
        asked.len() >= 3
            && asked
                .iter()
                .all(|r| r.path == "/health" && r.method == "GET")
    );
    healthy.store(true, std::sync::atomic::Ordering::SeqCst);
    eventually("delivered", 20 * SECOND, || {
        service.requests().iter().any(|r| r.path == "/in")
    })
    .await;
    let (run, summary) = stop(child).await;
    run.expect_code(0);
    assert_eq!(figures(&summary, ["delivered"]), [1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_says_when_the_service_is_down_and_when_cloudflare_blocks_the_token() {
    let emulator = emulator_with_queues(&["ready"]).await;
    pushed(&emulator, "ready", 1).await;
    let service = RecordingTarget::start().await;
    service.script(|_| Reply::status(503));
    let address = free_address();
    let child = start(&emulator, "ready", &service.url(), &["--listen", &address]);
    assert_eq!(
        until_status(&address, "/readyz", 503).await,
        "not ready: the service is down or busy: the relay is paused\n"
    );
    service.script(|_| Reply::ok());
    assert_eq!(until_status(&address, "/readyz", 200).await, "ready\n");
    eventually("acked", 20 * SECOND, || {
        emulator.metrics("ready").backlog_count == 0
    })
    .await;
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(
                971,
                "Please wait and consider throttling your request speed",
            )
            .retry_after(Duration::from_secs(120))
            .only(Operation::Pull),
    );
    let why = until_status(&address, "/readyz", 503).await;
    assert!(
        why.starts_with("not ready: Cloudflare blocked the token's requests (429, code 971) for "),
        "{why}"
    );
    let (run, _) = stop(child).await;
    run.expect_code(0);
}
