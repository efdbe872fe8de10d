//! The data directory: what survives a restart, what is refused, a failed
//! store never answering success, space given back, the backlog limit.
#![allow(missing_docs, unreachable_pub)]

#[cfg(feature = "dashboard")]
mod dashboard;
mod support;

use cf_queues_emulator::config::EmulatorConfig;
use cf_queues_emulator::{ManualClock, reset_data_dir};
use cf_queues_testkit::dashboard::Session;
use cf_queues_testkit::raw_http::Raw;
use reqwest::Method;
use serde_json::json;
use support::{dir_bytes, on_a_fresh_dir, refusal_on, start_on};

fn bodies(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_queues_and_attempts_survive_a_restart_and_old_leases_still_ack() {
    let (dir, handle, raw) = on_a_fresh_dir(|e| e.max_retries(5)).await;
    let before = handle.data_commits();
    assert_eq!(raw.push("work", &bodies("m", 4)).await, 200);
    // Every answered change was synced before its answer left.
    assert!(handle.data_commits() > before);
    let leased = raw.pull("work", 2, 60_000).await;
    assert_eq!(leased.len(), 2);
    let (status, acked) = raw.ack("work", &[leased[0].1.clone()]).await;
    assert_eq!((status, acked), (200, 1));
    // A queue created by the API, with settings and a consumer.
    let (status, created) = raw.post("/queues", json!({"queue_name": "orders"})).await;
    assert_eq!(status, 200, "{created}");
    let orders = created["result"]["queue_id"].as_str().unwrap().to_owned();
    let (status, _) = raw
        .call(
            Method::PATCH,
            &format!("/queues/{orders}"),
            json!({"settings": {"delivery_delay": 7}}),
        )
        .await;
    assert_eq!(status, 200);
    let consumer = json!({"type": "http_pull", "settings": {"max_retries": 9}});
    let (status, _) = raw
        .post(&format!("/queues/{orders}/consumers"), consumer)
        .await;
    assert_eq!(status, 200);
    handle.shutdown().await.expect("shutdown");

    let handle = start_on(dir.path(), |e| e.max_retries(5)).await;
    let raw = Raw::new(&handle);
    assert_eq!(raw.backlog("work").await, 3);
    // The lease that was live ended with the restart, and its message is
    // visible again with its attempt counted.
    let again = raw.pull("work", 10, 60_000).await;
    let mut seen: Vec<(String, u64)> = again.iter().map(|m| (m.0.clone(), m.2)).collect();
    seen.sort();
    let expected = vec![
        ("m-1".to_owned(), 2),
        ("m-2".to_owned(), 1),
        ("m-3".to_owned(), 1),
    ];
    assert_eq!(seen, expected);
    // A lease id from before the restart still acks its message (late acks).
    let (status, acked) = raw.ack("work", &[leased[1].1.clone()]).await;
    assert_eq!((status, acked), (200, 1));
    assert_eq!(raw.backlog("work").await, 2);
    let (status, queue) = raw
        .call(Method::GET, &format!("/queues/{orders}"), json!(null))
        .await;
    assert_eq!(status, 200);
    assert_eq!(queue["result"]["queue_name"], "orders");
    assert_eq!(queue["result"]["settings"]["delivery_delay"], 7);
    assert_eq!(
        queue["result"]["consumers"][0]["settings"]["max_retries"],
        9
    );
    // A deleted queue stays deleted across a restart.
    let (status, _) = raw
        .call(Method::DELETE, &format!("/queues/{orders}"), json!(null))
        .await;
    assert_eq!(status, 200);
    handle.shutdown().await.expect("shutdown");
    let handle = start_on(dir.path(), |e| e).await;
    let raw = Raw::new(&handle);
    let (status, _) = raw
        .call(
            Method::GET,
            &format!("/queues/{orders}/metrics"),
            json!(null),
        )
        .await;
    assert_eq!(status, 404);
    handle.shutdown().await.expect("shutdown");
}

/// Event subscriptions are kept as queue records are: a created one, a
/// changed one and a deletion each survive a restart, as does the deletion
/// of the subscriptions into a deleted queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_subscriptions_survive_a_restart() {
    let (dir, handle, raw) = on_a_fresh_dir(|e| e).await;
    let path = "/event_subscriptions/subscriptions";
    let mut ids = Vec::new();
    for (name, source) in [("orders", "kv"), ("billing", "r2"), ("models", "vectorize")] {
        let (status, created) = raw.post("/queues", json!({"queue_name": name})).await;
        assert_eq!(status, 200, "{created}");
        let queue = created["result"]["queue_id"].as_str().unwrap().to_owned();
        let body = json!({"source": {"type": source}, "events": ["x.created"],
                          "destination": {"type": "queues.queue", "queue_id": queue}});
        let (status, subscribed) = raw.post(path, body).await;
        assert_eq!(status, 200, "{subscribed}");
        ids.push((
            queue,
            subscribed["result"]["id"].as_str().unwrap().to_owned(),
        ));
    }
    let (orders_sub, billing_sub, models_sub) = (&ids[0].1, &ids[1].1, &ids[2].1);
    let (status, _) = raw
        .call(
            Method::PATCH,
            &format!("{path}/{orders_sub}"),
            json!({"enabled": false}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = raw
        .call(
            Method::DELETE,
            &format!("{path}/{billing_sub}"),
            json!(null),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = raw
        .call(
            Method::DELETE,
            &format!("/queues/{}", ids[2].0),
            json!(null),
        )
        .await;
    assert_eq!(status, 200);
    let (_, before) = raw.call(Method::GET, path, json!(null)).await;
    handle.shutdown().await.expect("shutdown");

    let handle = start_on(dir.path(), |e| e).await;
    let raw = Raw::new(&handle);
    let (status, after) = raw.call(Method::GET, path, json!(null)).await;
    assert_eq!(status, 200);
    assert_eq!(after["result"], before["result"]);
    let kept: Vec<(&str, bool)> = after["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| (s["id"].as_str().unwrap_or(""), s["enabled"] == json!(true)))
        .collect();
    assert_eq!(kept, [(orders_sub.as_str(), false)]);
    for gone in [billing_sub, models_sub] {
        let (status, _) = raw
            .call(Method::GET, &format!("{path}/{gone}"), json!(null))
            .await;
        assert_eq!(status, 404, "{gone}");
    }
    handle.shutdown().await.expect("shutdown");
}

/// An emitted event is a message like any other: kept in the directory
/// before the emit returns, there after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emitted_event_survives_a_restart() {
    let (dir, handle, raw) = on_a_fresh_dir(|e| e).await;
    let (status, created) = raw.post("/queues", json!({"queue_name": "buckets"})).await;
    assert_eq!(status, 200, "{created}");
    let queue = created["result"]["queue_id"].as_str().unwrap().to_owned();
    let body = json!({"source": {"type": "r2"}, "events": ["bucket.created"],
                      "destination": {"type": "queues.queue", "queue_id": queue}});
    let (status, _) = raw.post("/event_subscriptions/subscriptions", body).await;
    assert_eq!(status, 200);
    let (status, _) = raw
        .post(
            &format!("/queues/{queue}/consumers"),
            json!({"type": "http_pull"}),
        )
        .await;
    assert_eq!(status, 200);
    let emit = cf_queues_emulator::EventToEmit::new("r2", "bucket.created").field("name", "photos");
    assert_eq!(handle.emit_event(emit).expect("emitted").len(), 1);
    handle.shutdown().await.expect("shutdown");

    let handle = start_on(dir.path(), |e| e).await;
    let client = handle.client().expect("client");
    let pulled = client
        .queue(&queue)
        .expect("an id")
        .pull(cf_queues::PullOptions::new().batch_size(10))
        .await
        .expect("pulled");
    assert_eq!(pulled.messages.len(), 1);
    let message: serde_json::Value = pulled.messages[0].body().json().expect("the event's JSON");
    assert_eq!(message["type"], "cf.r2.bucket.created");
    assert_eq!(message["payload"]["name"], "photos");
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_and_purge_status_survive_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let handle = start_on(dir.path(), |e| {
        e.max_retries(1).dead_letter_queue("work", "dlq")
    })
    .await;
    let raw = Raw::new(&handle);
    assert_eq!(raw.push("work", &bodies("d", 2)).await, 200);
    let leased = raw.pull("work", 2, 60_000).await;
    let retries: Vec<_> = leased.iter().map(|m| json!({"lease_id": m.1})).collect();
    let (status, _) = raw
        .post("/queues/work/messages/ack", json!({"retries": retries}))
        .await;
    assert_eq!(status, 200);
    let (status, _) = raw
        .post(
            "/queues/other/purge",
            json!({"delete_messages_permanently": true}),
        )
        .await;
    assert_eq!(status, 200);
    handle.shutdown().await.expect("shutdown");

    let handle = start_on(dir.path(), |e| {
        e.max_retries(1).dead_letter_queue("work", "dlq")
    })
    .await;
    let raw = Raw::new(&handle);
    assert_eq!(raw.backlog("dlq").await, 2);
    assert_eq!(handle.dead_lettered("work"), 2);
    let (status, answer) = raw
        .call(Method::GET, "/queues/other/purge", json!(null))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["completed"], "true");
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_in_use_of_another_version_or_with_a_manual_clock_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let handle = start_on(dir.path(), |e| e).await;
    let message = refusal_on(dir.path(), |e| e).await;
    assert!(
        message.contains("in use by another running emulator"),
        "{message}"
    );
    assert!(reset_data_dir(dir.path()).is_err());
    handle.shutdown().await.expect("shutdown");

    let message = refusal_on(dir.path(), |e| e.clock(ManualClock::new(1_000))).await;
    assert!(message.contains("system clock"), "{message}");

    std::fs::write(
        dir.path().join("FORMAT"),
        "cf-queues-emulator data format 0\n",
    )
    .unwrap();
    let message = refusal_on(dir.path(), |e| e).await;
    assert!(
        message.contains("version 0") && message.contains("reads version 1"),
        "{message}"
    );
    assert!(
        message.contains("cfq drain") && message.contains("cfq replay"),
        "{message}"
    );
    // The reset clears it, and a fresh directory starts empty.
    let handle = start_on(dir.path(), |e| e.reset_data_dir(true)).await;
    assert_eq!(Raw::new(&handle).backlog("work").await, 0);
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_seeds_only_a_new_directory_and_the_directory_is_the_truth() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = |delay: u32| {
        EmulatorConfig::from_toml(&format!(
            "[[queues]]\nqueue_name = \"orders\"\nqueue_id = \"ordersid\"\n\
             settings = {{ delivery_delay = {delay} }}\nconsumer = {{ type = \"http_pull\" }}\n"
        ))
        .expect("config")
    };
    let handle = start_on(dir.path(), |e| e.config(config(3))).await;
    assert_eq!(
        handle.start_notes(),
        [] as [String; 0],
        "a new directory is seeded"
    );
    let raw = Raw::new(&handle);
    assert_eq!(raw.push("ordersid", &bodies("c", 1)).await, 200);
    // The declared queue changed through the API.
    let (status, _) = raw
        .call(
            Method::PATCH,
            "/queues/ordersid",
            json!({"settings": {"delivery_delay": 9}}),
        )
        .await;
    assert_eq!(status, 200);
    handle.shutdown().await.expect("shutdown");
    // The same start command starts, keeps the directory's queue as it is,
    // and says that the configuration was not applied.
    for declared in [3, 4] {
        let handle = start_on(dir.path(), |e| e.config(config(declared))).await;
        let raw = Raw::new(&handle);
        assert_eq!(raw.backlog("ordersid").await, 1);
        let (status, queue) = raw.call(Method::GET, "/queues/ordersid", json!(null)).await;
        assert_eq!(status, 200);
        assert_eq!(queue["result"]["settings"]["delivery_delay"], 9);
        let notes = handle.start_notes().join("\n");
        assert!(
            notes.contains("already holds an account") && notes.contains("not applied"),
            "{notes}"
        );
        handle.shutdown().await.expect("shutdown");
    }
    // Nothing declared, nothing to say.
    let handle = start_on(dir.path(), |e| e).await;
    assert!(handle.start_notes().is_empty());
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_store_answers_503_and_never_a_success() {
    let (dir, handle, raw) = on_a_fresh_dir(|e| e).await;
    assert_eq!(raw.push("work", &bodies("f", 1)).await, 200);
    handle.fail_data_writes();
    assert_eq!(raw.push("work", &bodies("lost", 1)).await, 503);
    // Everything after answers 503: memory may hold what the disk does not.
    let (status, _) = raw.post("/queues/work/messages/pull", json!({})).await;
    assert_eq!(status, 503);
    handle.shutdown().await.expect("shutdown");
    let handle = start_on(dir.path(), |e| e).await;
    let raw = Raw::new(&handle);
    let pulled = raw.pull("work", 10, 1000).await;
    let left: Vec<String> = pulled.into_iter().map(|m| m.0).collect();
    assert_eq!(left, ["f-0"]);
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_messages_give_their_space_back() {
    let (dir, handle, raw) = on_a_fresh_dir(|e| e).await;
    let body = "x".repeat(100_000);
    let mut after_first = 0;
    for round in 0..2 {
        // 50 MB: 500 messages of 100 kB, pushed and acked in batches of 2
        // (a batch is at most 256 kB).
        for batch in 0..250 {
            let bodies: Vec<String> = (0..2)
                .map(|i| format!("{round}-{batch}-{i}{body}"))
                .collect();
            assert_eq!(raw.push("big", &bodies).await, 200);
            let leased = raw.pull("big", 2, 60_000).await;
            let leases: Vec<String> = leased.into_iter().map(|m| m.1).collect();
            assert_eq!(raw.ack("big", &leases).await, (200, 2));
        }
        if round == 0 {
            after_first = dir_bytes(dir.path());
        }
    }
    let grown = dir_bytes(dir.path()).saturating_sub(after_first);
    assert!(
        grown < 10_000_000,
        "the second 50 MB grew the directory by {grown} bytes"
    );
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_beyond_the_limit_is_refused_with_10251() {
    let (_dir, handle, raw) = on_a_fresh_dir(|e| e.max_backlog_bytes(10)).await;
    assert_eq!(raw.push("work", &["12345".to_owned()]).await, 200);
    let path = "/queues/work/messages";
    let (status, answer) = raw
        .post(path, json!({"body": "123456", "content_type": "text"}))
        .await;
    assert_eq!(status, 429);
    assert_eq!(
        answer["errors"][0]["code"],
        cf_queues::codes::QUEUE_STORAGE_LIMIT_EXCEEDED
    );
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delays_count_while_the_emulator_is_stopped() {
    let (dir, handle, raw) = on_a_fresh_dir(|e| e).await;
    let message = json!({"body": "later", "content_type": "text", "delay_seconds": 1});
    assert_eq!(raw.post("/queues/work/messages", message).await.0, 200);
    assert!(raw.pull("work", 1, 1000).await.is_empty());
    handle.shutdown().await.expect("shutdown");
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let handle = start_on(dir.path(), |e| e).await;
    let pulled = Raw::new(&handle).pull("work", 1, 1000).await;
    assert_eq!(
        pulled.len(),
        1,
        "the delay ran out while the emulator was stopped"
    );
    handle.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answered_change_was_synced_before_its_answer_left() {
    let (_dir, handle, raw) = on_a_fresh_dir(|e| e).await;
    // One request at a time, so no commit is shared: each answered change
    // must have moved the counter of synced commits by the time it arrived.
    let mut commits = handle.data_commits();
    let mut synced = |what: &str| {
        let now = handle.data_commits();
        assert!(now > commits, "{what} was answered before a commit");
        commits = now;
    };
    assert_eq!(raw.push("work", &bodies("s", 6)).await, 200);
    synced("a push");
    let leased = raw.pull("work", 3, 60_000).await;
    assert_eq!(leased.len(), 3);
    synced("a pull (its attempts)");
    assert_eq!(raw.ack("work", &[leased[0].1.clone()]).await, (200, 1));
    synced("an ack");
    let retry = json!({"retries": [{"lease_id": leased[1].1}]});
    assert_eq!(raw.post("/queues/work/messages/ack", retry).await.0, 200);
    synced("a retry");
    let peek_ref = first_shown(&raw, "peek", "ref").await;
    let purge = json!({"refs": [{"ref": peek_ref}]});
    assert_eq!(raw.post("/queues/work/messages/purge", purge).await.0, 200);
    synced("a purge by ref");
    let preview_id = first_shown(&raw, "preview", "lease_id").await;
    let delete = json!({"acks": [{"lease_id": preview_id}]});
    let (status, answer) = raw.post("/queues/work/messages/preview/ack", delete).await;
    assert_eq!(status, 200, "{answer}");
    synced("a preview deletion");
    let (_, created) = raw.post("/queues", json!({"queue_name": "made"})).await;
    synced("a queue created");
    let id = created["result"]["queue_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let edit = json!({"settings": {"delivery_paused": true}});
    let path = format!("/queues/{id}");
    assert_eq!(raw.call(Method::PATCH, &path, edit).await.0, 200);
    synced("a queue edited");
    let consumer = json!({"type": "http_pull"});
    let (status, made) = raw.post(&format!("{path}/consumers"), consumer).await;
    assert_eq!(status, 200, "{made}");
    synced("a consumer created");
    let consumer_id = made["result"]["consumer_id"].as_str().unwrap_or_default();
    let consumer_path = format!("{path}/consumers/{consumer_id}");
    let deleted = raw.call(Method::DELETE, &consumer_path, json!(null)).await;
    assert_eq!(deleted.0, 200);
    synced("a consumer deleted");
    let purge_all = json!({"delete_messages_permanently": true});
    assert_eq!(raw.post("/queues/work/purge", purge_all).await.0, 200);
    synced("a purge of the whole queue");
    assert_eq!(raw.call(Method::DELETE, &path, json!(null)).await.0, 200);
    synced("a queue deleted");
    handle.shutdown().await.expect("shutdown");
}

/// Field `key` of the first message that a peek or a preview (`op`) of
/// queue `work` shows.
async fn first_shown(raw: &Raw, op: &str, key: &str) -> serde_json::Value {
    let path = format!("/queues/work/messages/{op}");
    let (_, shown) = raw.post(&path, json!({"batch_size": 1})).await;
    shown["result"]["messages"][0][key].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_waits_for_the_commit_of_the_deletion_it_reveals() {
    use std::sync::Arc;
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("temp dir");
    let handle = Arc::new(start_on(dir.path(), |e| e).await);
    let raw = Arc::new(Raw::new(&handle));
    let http = reqwest::Client::new();
    let account = format!(
        "{}/accounts/{}",
        handle.base_url(),
        cf_queues_emulator::EMULATOR_ACCOUNT_ID
    );
    for (case, refusal) in ["the deleted id", "no route", "a wrong token"]
        .into_iter()
        .enumerate()
    {
        let name = format!("doomed-{case}");
        let (status, created) = raw.post("/queues", json!({ "queue_name": name })).await;
        assert_eq!(status, 200, "{created}");
        let id = created["result"]["queue_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();

        handle.hold_data_writes(true);
        let deleting = {
            let (raw, path) = (Arc::clone(&raw), format!("/queues/{id}"));
            tokio::spawn(async move { raw.call(Method::DELETE, &path, json!(null)).await.0 })
        };
        // The deletion is applied in memory; its commit is held.
        while handle.queue_id(&name).is_some() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let committed_before = handle.data_commits();
        let releasing = {
            let handle = Arc::clone(&handle);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                handle.hold_data_writes(false);
            })
        };
        let (url, token) = match refusal {
            "the deleted id" => (format!("{account}/queues/{id}"), handle.token()),
            "no route" => (format!("{account}/nowhere/{id}"), handle.token()),
            _ => (format!("{account}/queues/{id}"), Some("wrong-token")),
        };
        let answer = http
            .get(url)
            .bearer_auth(token.unwrap_or_default())
            .send()
            .await
            .expect("answered");
        assert!(
            answer.status().is_client_error(),
            "{refusal}: {}",
            answer.status()
        );
        assert!(
            handle.data_commits() > committed_before,
            "{refusal}: answered before the deletion handed in before it was committed"
        );
        releasing.await.expect("released");
        assert_eq!(deleting.await.expect("deleted"), 200);
    }
}

/// The names of the account's queues, in creation order, with their ids.
async fn listed(raw: &Raw) -> Vec<(String, String)> {
    let (status, list) = raw
        .call(Method::GET, "/queues?per_page=100", json!(null))
        .await;
    assert_eq!(status, 200, "{list}");
    list["result"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            let field = |k: &str| q[k].as_str().unwrap_or_default().to_owned();
            (field("queue_name"), field("queue_id"))
        })
        .collect()
}

/// Pushes one message to `queue`, pulls it and retries it: with a
/// `max_retries` of 1, it is dead-lettered at once.
async fn dead_letter_one(raw: &Raw, queue: &str, body: &str) {
    assert_eq!(raw.push(queue, &[body.to_owned()]).await, 200);
    let leased = raw.pull(queue, 1, 60_000).await;
    assert_eq!(leased.len(), 1);
    let retry = json!({"retries": [{"lease_id": leased[0].1}]});
    let (status, answer) = raw
        .post(&format!("/queues/{queue}/messages/ack"), retry)
        .await;
    assert_eq!(status, 200, "{answer}");
}

/// The bodies a queue holds, by peeking (which any queue allows).
async fn held(raw: &Raw, queue: &str) -> Vec<String> {
    let (status, answer) = raw
        .post(
            &format!("/queues/{queue}/messages/peek"),
            json!({"batch_size": 100}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    answer["result"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["body"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn dead_letters_to_a_deleted_or_renamed_queue_land_in_a_new_one(
    dir: Option<&std::path::Path>,
) {
    let start = || async {
        let emulator = cf_queues_emulator::Emulator::new();
        match dir {
            Some(dir) => emulator.data_dir(dir),
            None => emulator,
        }
        .start()
        .await
        .expect("emulator starts")
    };
    let handle = start().await;
    let raw = Raw::new(&handle);
    let (_, created) = raw.post("/queues", json!({"queue_name": "work"})).await;
    let work = created["result"]["queue_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let consumer = json!({"type": "http_pull", "dead_letter_queue": "work-dlq", "settings": {"max_retries": 1}});
    let (status, _) = raw
        .post(&format!("/queues/{work}/consumers"), consumer)
        .await;
    assert_eq!(status, 200);
    let first = handle
        .queue_id("work-dlq")
        .expect("the dead-letter queue, created by name");

    // Deleted: the next dead letter creates a queue of that name, anew.
    let first_path = format!("/queues/{first}");
    let deleted = raw.call(Method::DELETE, &first_path, json!(null)).await;
    assert_eq!(deleted.0, 200);
    dead_letter_one(&raw, &work, "after-delete").await;
    let second = handle
        .queue_id("work-dlq")
        .expect("created again by the dead letter");
    assert_ne!(
        second, first,
        "a fresh id: the deleted one never comes back"
    );
    assert_eq!(held(&raw, &second).await, ["after-delete"]);

    // Renamed: the renamed queue keeps what it holds, and the next dead
    // letter goes to a new queue of the name the consumer gives.
    let rename = json!({"queue_name": "old-dlq"});
    let second_path = format!("/queues/{second}");
    let renamed = raw.call(Method::PATCH, &second_path, rename).await;
    assert_eq!(renamed.0, 200);
    dead_letter_one(&raw, &work, "after-rename").await;
    let third = handle
        .queue_id("work-dlq")
        .expect("created by the dead letter");
    assert!(third != second && third != first);
    assert_eq!(held(&raw, &third).await, ["after-rename"]);
    assert_eq!(held(&raw, &second).await, ["after-delete"]);
    let expected = vec![
        ("work".to_owned(), work.clone()),
        ("old-dlq".to_owned(), second.clone()),
        ("work-dlq".to_owned(), third.clone()),
    ];
    assert_eq!(
        listed(&raw).await,
        expected,
        "every dead letter is in a listed queue"
    );
    handle.shutdown().await.expect("shutdown");

    if dir.is_some() {
        let handle = start().await;
        let raw = Raw::new(&handle);
        assert_eq!(listed(&raw).await, expected);
        assert_eq!(held(&raw, &second).await, ["after-delete"]);
        assert_eq!(held(&raw, &third).await, ["after-rename"]);
        // Nothing is kept under the name as if it were an id.
        assert_eq!(
            handle
                .metrics_in(cf_queues_emulator::EMULATOR_ACCOUNT_ID, "work-dlq")
                .backlog_count,
            0
        );
        handle.shutdown().await.expect("shutdown");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_to_a_deleted_or_renamed_queue_land_in_a_new_one_in_memory() {
    dead_letters_to_a_deleted_or_renamed_queue_land_in_a_new_one(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_to_a_deleted_or_renamed_queue_land_in_a_new_one_across_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    dead_letters_to_a_deleted_or_renamed_queue_land_in_a_new_one(Some(dir.path())).await;
}

/// A dead-letter redrive from the dashboard moves its messages in one
/// commit: after a restart they are all in the work queue, none left in
/// the dead-letter queue, none twice.
#[cfg(feature = "dashboard")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dashboard_redrive_survives_a_restart_whole() {
    let lax =
        |e: cf_queues_emulator::Emulator| e.max_retries(1).dead_letter_queue("work", "workdlq");
    let (dir, handle, raw) = on_a_fresh_dir(lax).await;
    assert_eq!(raw.push("work", &bodies("w", 5)).await, 200);
    let dlq = "workdlq".to_owned();
    let leased = raw.pull("work", 10, 60_000).await;
    let retries: Vec<serde_json::Value> = leased
        .iter()
        .map(|(_, lease, _)| json!({"lease_id": lease}))
        .collect();
    let (status, _) = raw
        .post(
            "/queues/work/messages/ack",
            json!({"acks": [], "retries": retries}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!((raw.backlog("work").await, raw.backlog(&dlq).await), (0, 5));

    let session = Session::login(&handle).await;
    let page = format!("/_dashboard/queues/{dlq}");
    let token = session.form_token(&page).await;
    let moved = session
        .post_form(
            &format!("{page}/messages"),
            format!("token={token}&action=redrive_all&to=work"),
            true,
        )
        .send()
        .await
        .expect("redrive");
    assert_eq!(moved.status(), 303);
    handle.shutdown().await.expect("shutdown");

    let handle = start_on(dir.path(), lax).await;
    let raw = Raw::new(&handle);
    assert_eq!((raw.backlog("work").await, raw.backlog(&dlq).await), (5, 0));
    let mut back: Vec<String> = raw
        .pull("work", 10, 60_000)
        .await
        .into_iter()
        .map(|(body, _, attempts)| {
            assert_eq!(attempts, 1, "a new message: its first delivery");
            body
        })
        .collect();
    back.sort();
    assert_eq!(back, bodies("w", 5));
}
