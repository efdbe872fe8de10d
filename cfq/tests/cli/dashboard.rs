//! `cfq emulator`'s dashboard as a process: a change from the page is on
//! disk before its answer (SIGKILL right after it loses nothing), and the
//! process's peak memory stays bounded under requests, bodies and sends
//! made to blow it up. (The emulator's own tests check the same pages in
//! process; memory can only be read from a process of its own.)

use std::ffi::OsStr;
use std::path::Path;

use cf_queues_testkit::dashboard::Session;
use cf_queues_testkit::raw_http::Raw;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Served, TOKEN, temp_dir};

/// `cfq emulator` on `dir`, giving a message up to `workdlq` after one
/// delivery of `work`.
fn on(dir: &Path) -> Served {
    let args: Vec<&OsStr> = vec![
        "--data-dir".as_ref(),
        dir.as_os_str(),
        "--max-retries".as_ref(),
        "1".as_ref(),
        "--dead-letter".as_ref(),
        "work=workdlq".as_ref(),
    ];
    Served::start(&args)
}

fn bodies(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("w{i}")).collect()
}

/// Every message of `queue` into its dead-letter queue: pulled once and
/// retried.
async fn dead_letter_all(raw: &Raw, queue: &str) {
    let leased = raw.pull(queue, 100, 60_000).await;
    let retries: Vec<Value> = leased
        .iter()
        .map(|(_, lease, _)| json!({"lease_id": lease}))
        .collect();
    let path = format!("/queues/{queue}/messages/ack");
    let (status, _) = raw
        .post(&path, json!({"acks": [], "retries": retries}))
        .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_from_the_page_survives_a_sigkill_right_after_its_answer() {
    let work = "/_dashboard/queues/work";
    let dlq = "/_dashboard/queues/workdlq";
    for case in ["send", "delete", "retry", "settings", "purge", "redrive"] {
        let dir = temp_dir(&format!("dashboard-kill-{case}"));
        let served = on(&dir);
        let raw = Raw::at(&served.base_url, TOKEN);
        assert_eq!(raw.push("work", &bodies(5)).await, 200);
        if case == "redrive" {
            dead_letter_all(&raw, "work").await;
        }
        let session = Session::login_link(served.dashboard.as_deref().expect("a link")).await;
        let seqs = session.listed(work).await;
        let (page, action, fields) = match case {
            "send" => (
                work,
                "send",
                "body=s{n}&count=3&content_type=text".to_owned(),
            ),
            "delete" => (
                work,
                "messages",
                format!("action=delete&m={}&m={}", seqs[0], seqs[1]),
            ),
            "retry" => (
                work,
                "messages",
                format!("action=retry&delay=600&m={}", seqs[0]),
            ),
            "settings" => (
                work,
                "settings",
                "delivery_delay=9&retention=7200".to_owned(),
            ),
            "purge" => (work, "purge", "confirm=work".to_owned()),
            _ => (dlq, "messages", "action=redrive_all&to=work".to_owned()),
        };
        let token = session.form_token(page).await;
        let answer = session
            .post_form(
                &format!("{page}/{action}"),
                format!("token={token}&{fields}"),
                true,
            )
            .send()
            .await
            .expect("answered");
        assert_eq!(answer.status(), 303, "{case}");
        // Killed as the answer arrives: what it says was done must be on disk.
        served.kill();

        let again = on(&dir);
        let raw = Raw::at(&again.base_url, TOKEN);
        match case {
            "send" => assert_eq!(raw.backlog("work").await, 8, "{case}"),
            "delete" => assert_eq!(raw.backlog("work").await, 3, "{case}"),
            "retry" => {
                let visible = raw.pull("work", 10, 60_000).await;
                assert_eq!(visible.len(), 4, "{case}: one held back for 600 s");
            }
            "settings" => {
                let (_, info) = raw.call(Method::GET, "/queues/work", Value::Null).await;
                assert_eq!(
                    info["result"]["settings"]["delivery_delay"],
                    json!(9),
                    "{info}"
                );
            }
            "purge" => assert_eq!(raw.backlog("work").await, 0, "{case}"),
            _ => assert_eq!(
                (raw.backlog("work").await, raw.backlog("workdlq").await),
                (5, 0),
                "{case}"
            ),
        }
        again.stop();
    }
}

/// The peak memory of `cfq emulator` (a debug build) under the dashboard
/// abuse of the review that found these: a request log written with
/// 60,000-byte paths without a token, a page of JSON bodies that
/// pretty-print to about 15 MB each, a "send" of a 1.9 MB body 1,000 times.
/// Before, they took it to 727 MB, 1.4 GB and 1.8 GB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_keeps_the_emulators_memory_bounded_whatever_it_is_shown() {
    const MOST: u64 = 100 << 20;
    let served = Served::start(&[]);
    let http = reqwest::Client::new();
    let huge = format!(
        "{}/accounts/{}/queues/{}",
        served.base_url,
        cf_queues_emulator::EMULATOR_ACCOUNT_ID,
        "x".repeat(60_000)
    );
    for _ in 0..1_000 {
        let answer = http.get(&huge).send().await.expect("answered");
        assert!(answer.status().is_client_error());
    }
    let raw = Raw::at(&served.base_url, TOKEN);
    let numbers = vec!["12345"; 20_000].join(",");
    let nested: Value =
        serde_json::from_str(&format!("{}{numbers}{}", "[".repeat(120), "]".repeat(120)))
            .expect("JSON");
    for _ in 0..40 {
        let (status, answer) = raw
            .post(
                "/queues/blowup/messages",
                json!({"body": nested, "content_type": "json"}),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    let session = Session::login_link(served.dashboard.as_deref().expect("a link")).await;
    for page in ["/_dashboard/requests", "/_dashboard/queues/blowup"] {
        let html = session.page(page).await;
        assert!(html.len() < 3_000_000, "{page}: {} bytes", html.len());
    }
    let (status, note) = session
        .act(
            "/_dashboard/queues/blowup",
            "/_dashboard/queues/blowup/send",
            &format!("body={}&count=1000", "b".repeat(1_900_000)),
        )
        .await;
    assert_eq!(status, 303);
    assert!(
        note.starts_with("Nothing sent: the body is 1.9 MB"),
        "{note}"
    );
    let peak = served.peak_memory();
    assert!(peak <= MOST, "peak memory {} MB", peak >> 20);
    println!("peak memory of cfq emulator: {} MB", peak >> 20);
    served.stop();
}
