//! The dashboard's changes go through the API's commit path: each answer
//! leaves only once its change is on disk, and nothing changes after the
//! store failed.

use std::sync::Arc;
use std::time::Duration;

use cf_queues_emulator::EmulatorHandle;
use cf_queues_testkit::dashboard::Session;
use reqwest::Method;
use serde_json::{Value, json};

use crate::bodies;
use crate::support::on_a_fresh_dir;

/// Posts `fields` to `action` from `page` while the data directory's
/// writes are held, releasing them after 300 ms: the answer must come
/// after a commit, never before.
async fn acted_after_a_commit(
    handle: &Arc<EmulatorHandle>,
    session: &Session,
    (page, action, fields): (&str, &str, &str),
) -> String {
    handle.hold_data_writes(true);
    let committed_before = handle.data_commits();
    let releasing = {
        let handle = Arc::clone(handle);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            handle.hold_data_writes(false);
        })
    };
    let (status, note) = session.act(page, action, fields).await;
    assert_eq!(status, 303, "{action}: {note}");
    assert!(
        handle.data_commits() > committed_before,
        "{action} ({fields}) was answered before its change was committed: {note}"
    );
    releasing.await.expect("released");
    note
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_change_is_committed_before_its_answer_leaves() {
    let lax =
        |e: cf_queues_emulator::Emulator| e.max_retries(1).dead_letter_queue("work", "workdlq");
    let (_dir, handle, raw) = on_a_fresh_dir(lax).await;
    let handle = Arc::new(handle);
    assert_eq!(raw.push("work", &bodies("w", 6)).await, 200);
    // Two into the dead-letter queue, for the redrive.
    let leased = raw.pull("work", 2, 60_000).await;
    let retries: Vec<Value> = leased
        .iter()
        .map(|(_, lease, _)| json!({"lease_id": lease}))
        .collect();
    let retried = raw
        .post(
            "/queues/work/messages/ack",
            json!({"acks": [], "retries": retries}),
        )
        .await;
    assert_eq!(retried.0, 200);
    let session = Session::login(&handle).await;
    let work = "/_dashboard/queues/work";
    let seqs = session.listed(work).await;
    assert_eq!(seqs.len(), 4, "{seqs:?}");
    let steps: Vec<(String, String, String, &str)> = vec![
        (
            work.into(),
            format!("{work}/send"),
            "body=s{n}&count=3&content_type=text".into(),
            "Sent 3 messages.",
        ),
        (
            work.into(),
            format!("{work}/messages"),
            format!("action=delete&m={}", seqs[0]),
            "Deleted 1 message.",
        ),
        (
            work.into(),
            format!("{work}/messages"),
            format!("action=retry&delay=60&m={}", seqs[1]),
            "Retried 1 message",
        ),
        (
            work.into(),
            format!("{work}/settings"),
            "delivery_delay=7&retention=7200".into(),
            "Saved: delivery delay 7s, retention 7200s.",
        ),
        (
            work.into(),
            format!("{work}/delivery"),
            "action=pause".into(),
            "Delivery paused",
        ),
        (
            work.into(),
            format!("{work}/consumer"),
            "batch_size=5&max_retries=1&dead_letter_queue=workdlq".into(),
            "HTTP pull",
        ),
        (
            "/_dashboard/queues/workdlq".into(),
            "/_dashboard/queues/workdlq/messages".into(),
            "action=redrive_all&to=work".into(),
            "Moved 2 messages back to work.",
        ),
        (
            work.into(),
            format!("{work}/purge"),
            "confirm=work".into(),
            "Purged work",
        ),
        (
            "/_dashboard/".into(),
            "/_dashboard/queues".into(),
            "name=made".into(),
            "Created the queue made.",
        ),
    ];
    for (page, action, fields, said) in &steps {
        let note = acted_after_a_commit(&handle, &session, (page, action, fields)).await;
        assert!(note.starts_with(said), "{action} {fields}: {note}");
    }
    let (_, info) = raw.call(Method::GET, "/queues/work", Value::Null).await;
    assert_eq!(
        info["result"]["settings"]["delivery_delay"],
        json!(7),
        "{info}"
    );
    assert_eq!(raw.backlog("work").await, 0, "purged last");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_store_failure_the_dashboard_changes_nothing() {
    let (_dir, handle, raw) = on_a_fresh_dir(|e| e).await;
    assert_eq!(raw.push("work", &bodies("w", 2)).await, 200);
    let session = Session::login(&handle).await;
    let work = "/_dashboard/queues/work";
    handle.fail_data_writes();
    // The failing commit: the note says the change may not be kept.
    let (status, note) = session
        .act(work, &format!("{work}/send"), "body=lost&content_type=text")
        .await;
    assert_eq!(status, 303);
    assert!(note.contains("the data directory failed"), "{note}");
    // From then on nothing changes, in memory either.
    let before = handle.metrics("work").backlog_count;
    let (_, note) = session
        .act(work, &format!("{work}/purge"), "confirm=work")
        .await;
    assert!(
        note.starts_with("Nothing changed: the data directory failed"),
        "{note}"
    );
    assert_eq!(handle.metrics("work").backlog_count, before, "not purged");
}
