//! Races between a request and a deletion: a call whose body arrives
//! slowly, its queue deleted meanwhile, must not act on the deleted queue
//! (a push there would land where no call can ever reach it), in memory
//! and with a data directory.

use std::time::Duration;

use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, EmulatorHandle};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use cf_queues_testkit::emulators::emulator_with;
use cf_queues_testkit::raw_http::{self, Raw};

use crate::support::{post_head, read_response};

const TOKEN: &str = "race-token";

async fn start(dir: Option<&std::path::Path>) -> EmulatorHandle {
    emulator_with(|emulator| {
        let emulator = emulator.token(TOKEN);
        match dir {
            Some(dir) => emulator.data_dir(dir),
            None => emulator,
        }
    })
    .await
}

/// Deletes queue `id` by the API, as a well-behaved client; the status.
async fn delete_queue(handle: &EmulatorHandle, id: &str) -> u16 {
    let path = format!("/queues/{id}");
    Raw::new(handle)
        .call(Method::DELETE, &path, Value::Null)
        .await
        .0
}

/// A queue created by the API with an HTTP pull consumer, holding one
/// message; its id.
async fn queue_with_a_message(handle: &EmulatorHandle, name: &str) -> String {
    let id = raw_http::create(handle, name).await;
    raw_http::enable_http_pull(handle, &id, json!({})).await;
    let push = json!({"body": "before", "content_type": "text"});
    assert_eq!(raw_http::push(handle, &id, push).await.status, 200);
    id
}

/// `op` (`/messages/pull`, `/purge`, ...) on queue `id` with `body`, sent
/// as a slow client sends it: the head and half the body, then (once the
/// server has checked the head) the queue's deletion by another client,
/// then the rest. The status.
async fn slow_call_racing_the_deletion(
    handle: &EmulatorHandle,
    id: &str,
    op: &str,
    body: &[u8],
) -> u16 {
    let path = format!("/accounts/{EMULATOR_ACCOUNT_ID}/queues/{id}{op}");
    let mut stream = TcpStream::connect(handle.local_addr())
        .await
        .expect("connect");
    let received = handle.requests_received();
    let head = post_head(&path, Some(&format!("Bearer {TOKEN}")), body.len());
    stream.write_all(head.as_bytes()).await.expect("head");
    let (first, rest) = body.split_at(body.len() / 2);
    stream.write_all(first).await.expect("half a body");
    stream.flush().await.expect("flush");
    while handle.requests_received() == received {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The head passed its checks (the queue was there) and the server
    // waits for the body.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(delete_queue(handle, id).await, 200);
    stream.write_all(rest).await.expect("the rest of the body");
    let mut pending = Vec::new();
    let (status, _) = read_response(&mut stream, &mut pending)
        .await
        .expect("answered");
    status
}

/// The race of each call with its queue's deletion, on an emulator in
/// memory or on a fresh data directory (`on_disk`), which is then started
/// again to show that nothing of the deleted queues came back.
async fn a_call_racing_its_queues_deletion_acts_on_nothing(on_disk: bool) {
    let temp = on_disk.then(|| tempfile::tempdir().expect("temp dir"));
    let dir = temp.as_ref().map(|temp| temp.path());
    let handle = start(dir).await;
    let batch =
        serde_json::to_vec(&json!({"messages": [{"body": "lost?", "content_type": "text"}]}))
            .unwrap_or_default();
    let push =
        serde_json::to_vec(&json!({"body": "lost?", "content_type": "text"})).unwrap_or_default();
    let pull = serde_json::to_vec(&json!({"batch_size": 10, "visibility_timeout_ms": 60_000}))
        .unwrap_or_default();
    let purge =
        serde_json::to_vec(&json!({"delete_messages_permanently": true})).unwrap_or_default();
    let mut ids = Vec::new();
    // The purge of the whole queue is no messages call: its own path.
    let calls = [
        ("/messages/batch", &batch),
        ("/messages", &push),
        ("/messages/pull", &pull),
        ("/purge", &purge),
    ];
    for (n, (op, body)) in calls.into_iter().enumerate() {
        let id = queue_with_a_message(&handle, &format!("racing-{n}")).await;
        let status = slow_call_racing_the_deletion(&handle, &id, op, body).await;
        assert_eq!(status, 404, "{op}: answered as any call to a deleted queue");
        assert_eq!(
            handle.metrics_in(EMULATOR_ACCOUNT_ID, &id).backlog_count,
            0,
            "{op}: nothing held for the deleted id"
        );
        ids.push(id);
    }
    handle.shutdown().await.expect("shutdown");

    if let Some(dir) = dir {
        // Nothing of the deleted queues is on disk to come back.
        let handle = start(Some(dir)).await;
        for id in &ids {
            assert_eq!(
                handle.metrics_in(EMULATOR_ACCOUNT_ID, id).backlog_count,
                0,
                "{id}"
            );
            assert_eq!(handle.dead_lettered_in(EMULATOR_ACCOUNT_ID, id), 0, "{id}");
            let metrics = format!("/queues/{id}/metrics");
            let (status, _) = Raw::new(&handle)
                .call(Method::GET, &metrics, Value::Null)
                .await;
            assert_eq!(status, 404);
        }
        handle.shutdown().await.expect("shutdown");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_call_racing_its_queues_deletion_acts_on_nothing_in_memory() {
    a_call_racing_its_queues_deletion_acts_on_nothing(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_call_racing_its_queues_deletion_leaves_nothing_on_disk() {
    a_call_racing_its_queues_deletion_acts_on_nothing(true).await;
}
