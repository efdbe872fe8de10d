//! Extend, preview, deleting previewed messages, metrics, purging the whole
//! queue and its status over raw HTTP: Cloudflare's shapes field by field,
//! its codes for bad requests, methods and routes, and the shared steps
//! (auth, faults, the request counter) applied as for the other operations.

use std::collections::BTreeSet;
use std::time::Duration;

use cf_queues_emulator::{
    EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle, Fault, ManualClock, Operation,
};
use reqwest::Method;
use serde_json::{Value, json};

use cf_queues_testkit::emulators::{START_MS, emulator_on_manual_clock as emulator_with};
use cf_queues_testkit::raw_http::{self, call_with, queue_path};

async fn emulator() -> (EmulatorHandle, ManualClock) {
    emulator_with(|emulator| emulator.token("right-token")).await
}

/// The path of `op` on `queue` of the emulator's account.
fn op_path(queue: &str, op: Operation) -> String {
    op.path()
        .replace("{account_id}", EMULATOR_ACCOUNT_ID)
        .replace("{queue_id}", queue)
}

/// A request with the accepted token and `body` (`None`: no body at all):
/// the status and the body (JSON when it parses, the text otherwise).
async fn send(
    handle: &EmulatorHandle,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let answer = raw_http::call(handle, method, path, body).await;
    (answer.status, answer.body)
}

/// A `POST` of `body` to `op` on `queue`, as [`send`].
async fn post(handle: &EmulatorHandle, queue: &str, op: &str, body: Option<Value>) -> (u16, Value) {
    send(handle, Method::POST, &queue_path(queue, op), body).await
}

/// A `GET` of `op` on `queue`, as [`send`].
async fn get(handle: &EmulatorHandle, queue: &str, op: &str) -> (u16, Value) {
    send(handle, Method::GET, &queue_path(queue, op), None).await
}

/// The `result` of a success envelope, with the envelope checked.
fn result(status: u16, body: &Value) -> Value {
    assert_eq!(status, 200, "{body}");
    assert_eq!(keys(body), ["errors", "messages", "result", "success"]);
    assert_eq!(body["success"], true);
    assert_eq!(
        (&body["errors"], &body["messages"]),
        (&json!([]), &json!([]))
    );
    body["result"].clone()
}

fn keys(object: &Value) -> Vec<&str> {
    let keys: BTreeSet<&str> = object
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.into_iter().collect()
}

fn failure(body: &Value) -> (Option<u64>, Option<&str>) {
    assert_eq!(body["success"], false, "{body}");
    (
        body["errors"][0]["code"].as_u64(),
        body["errors"][0]["source"]["pointer"].as_str(),
    )
}

async fn push(handle: &EmulatorHandle, queue: &str, body: &str) {
    let message = json!({"body": body, "content_type": "text"});
    assert_eq!(raw_http::push(handle, queue, message).await.status, 200);
}

#[tokio::test]
async fn the_new_operations_answer_in_cloudflares_shapes() {
    let (emulator, clock) = emulator().await;
    push(&emulator, "shapes", "hello").await;
    push(&emulator, "shapes", "world").await;

    // Preview: the pull shape, `lease_id` included, nothing else in the result.
    let preview = queue_path("shapes", "/messages/preview");
    let answer = raw_http::call(
        &emulator,
        Method::POST,
        &preview,
        Some(json!({"batch_size": 1})),
    );
    let answer = answer.await;
    assert_eq!(answer.content_type(), "application/json");
    let previewed = result(answer.status, &answer.body);
    assert_eq!(keys(&previewed), ["messages"]);
    let message = &previewed["messages"][0];
    assert_eq!(
        keys(message),
        [
            "attempts",
            "body",
            "id",
            "lease_id",
            "metadata",
            "timestamp_ms"
        ]
    );
    let shown = [
        &message["attempts"],
        &message["body"],
        &message["timestamp_ms"],
    ];
    assert_eq!(shown, [&json!(0), &json!("hello"), &json!(START_MS)]);
    assert_eq!(message["metadata"]["CF-Content-Type"], "text");
    let preview_id = message["lease_id"].as_str().expect("a string").to_owned();
    // `{}` previews 5 (the default, as peek); an empty body too.
    let (status, body) = post(&emulator, "shapes", "/messages/preview", None).await;
    let count = result(status, &body)["messages"].as_array().map(Vec::len);
    assert_eq!(count, Some(2));

    // Deleting previewed messages: `{warnings}`, a map by id.
    let acks = json!({"acks": [{"lease_id": preview_id}, {"lease_id": "unknown"}], "retries": []});
    let (status, body) = post(&emulator, "shapes", "/messages/preview/ack", Some(acks)).await;
    let deleted = result(status, &body);
    assert_eq!(keys(&deleted), ["warnings"]);
    assert_eq!(keys(&deleted["warnings"]), ["unknown"]);

    // Extend: `{extendCount, warnings}`, camelCase like the ack counters.
    let pull = json!({"visibility_timeout_ms": 1000});
    let (status, body) = post(&emulator, "shapes", "/messages/pull", Some(pull)).await;
    let lease = result(status, &body)["messages"][0]["lease_id"].clone();
    let extend = json!({"extend": [{"lease_id": lease}, {"lease_id": "nope"}], "visibility_timeout_ms": 5000});
    let (status, body) = post(&emulator, "shapes", "/messages/extend", Some(extend)).await;
    let extended = result(status, &body);
    assert_eq!(keys(&extended), ["extendCount", "warnings"]);
    assert_eq!(extended["extendCount"], 1);
    assert_eq!(keys(&extended["warnings"]), ["nope"]);
    clock.advance(Duration::from_millis(4_999));
    let (status, body) = post(&emulator, "shapes", "/messages/pull", None).await;
    assert_eq!(
        result(status, &body)["messages"],
        json!([]),
        "extended to 5 s"
    );

    // Metrics: the object itself as the result.
    let (status, body) = get(&emulator, "shapes", "/metrics").await;
    let metrics = result(status, &body);
    assert_eq!(
        metrics,
        json!({"backlog_count": 1, "backlog_bytes": 5, "oldest_message_timestamp_ms": START_MS})
    );

    // Purge status before any purge, the purge, and the status after it.
    let (status, body) = get(&emulator, "shapes", "/purge").await;
    assert_eq!(result(status, &body), json!({"completed": "false"}));
    let confirmed = json!({"delete_messages_permanently": true});
    let (status, body) = post(&emulator, "shapes", "/purge", Some(confirmed)).await;
    let queue = result(status, &body);
    // The queue sprang into being on its first push, with the default HTTP
    // pull consumer of a lax queue.
    let consumer_id = queue["consumers"][0]["consumer_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(raw_http::is_hex32(&consumer_id), "{consumer_id:?}");
    assert_eq!(
        queue,
        json!({
            "queue_id": "shapes",
            "queue_name": "shapes",
            "created_on": "2024-03-20T16:09:14.154Z",
            "modified_on": "2024-03-20T16:09:19.153Z",
            "producers": [],
            "producers_total_count": 0,
            "consumers": [{
                "type": "http_pull",
                "consumer_id": consumer_id,
                "created_on": "2024-03-20T16:09:14.154Z",
                "queue_name": "shapes",
                "dead_letter_queue": "",
                "settings": {
                    "batch_size": 5,
                    "max_retries": 3,
                    "retry_delay": 0,
                    "visibility_timeout_ms": 30_000
                }
            }],
            "consumers_total_count": 1,
            "settings": {
                "delivery_delay": 0,
                "delivery_paused": false,
                "message_retention_period": 345_600
            }
        })
    );
    let (status, body) = get(&emulator, "shapes", "/purge").await;
    let purged = json!({"completed": "true", "started_at": "2024-03-20T16:09:19.153Z"});
    assert_eq!(result(status, &body), purged);
    let (status, body) = get(&emulator, "shapes", "/metrics").await;
    assert_eq!(
        result(status, &body),
        json!({"backlog_count": 0, "backlog_bytes": 0, "oldest_message_timestamp_ms": 0})
    );
}

#[tokio::test]
async fn metrics_stream_as_one_server_sent_event_when_asked() {
    let (emulator, _clock) = emulator().await;
    push(&emulator, "sse", "abc").await;
    for accept in [
        "text/event-stream",
        "application/json;q=0.9, text/event-stream",
    ] {
        let answer = metrics_accepting(&emulator, accept).await;
        let content_type = answer.content_type();
        assert_eq!(
            (answer.status, content_type.as_str()),
            (200, "text/event-stream")
        );
        let text = answer.body.as_str().expect("not JSON as a whole");
        let data = text
            .strip_prefix("data: ")
            .and_then(|rest| rest.strip_suffix("\n\n"))
            .expect("one event");
        let metrics: Value = serde_json::from_str(data).expect("JSON data");
        assert_eq!(
            metrics,
            json!({"backlog_count": 1, "backlog_bytes": 3, "oldest_message_timestamp_ms": START_MS})
        );
    }
    let answer = metrics_accepting(&emulator, "application/json").await;
    assert_eq!(answer.content_type(), "application/json");
}

/// `GET /metrics` of queue `sse` with this `accept` header.
async fn metrics_accepting(handle: &EmulatorHandle, accept: &str) -> raw_http::Answer {
    let path = queue_path("sse", "/metrics");
    let headers = [("accept", accept)];
    call_with(
        handle,
        handle.base_url(),
        Method::GET,
        &path,
        None,
        &headers,
    )
    .await
}

#[tokio::test]
async fn bad_requests_get_cloudflares_codes() {
    let (emulator, _clock) = emulator().await;
    push(&emulator, "codes", "x").await;
    let extend = queue_path("codes", "/messages/extend");
    let preview = queue_path("codes", "/messages/preview");
    let preview_ack = queue_path("codes", "/messages/preview/ack");
    let purge = queue_path("codes", "/purge");
    let lease = json!([{"lease_id": "x"}]);
    // Pointers that several cases share.
    let (vis, size, delay) = (
        "/visibility_timeout_ms",
        "/batch_size",
        "/retries/0/delay_seconds",
    );
    let confirm = "/delete_messages_permanently";
    let cases = [
        (&extend, json!({"extend": "x"}), 10207, "/extend"),
        (&extend, json!({"extend": ["x"]}), 10207, "/extend/0"),
        (
            &extend,
            json!({"extend": [{"lease_id": 1}]}),
            10207,
            "/extend/0/lease_id",
        ),
        (
            &extend,
            json!({"extend": [{}]}),
            10207,
            "/extend/0/lease_id",
        ),
        (
            &extend,
            json!({"extend": lease, "visibility_timeout_ms": 0}),
            10207,
            vis,
        ),
        (
            &extend,
            json!({"extend": lease, "visibility_timeout_ms": 43_200_001}),
            10207,
            vis,
        ),
        (
            &extend,
            json!({"extend": lease, "visibility_timeout_ms": "1000"}),
            10207,
            vis,
        ),
        (&preview, json!({"batch_size": 0}), 10207, size),
        (&preview, json!({"batch_size": 101}), 10207, size),
        (&preview, json!({"batch_size": 1.5}), 10207, size),
        (&preview_ack, json!({"acks": {}}), 10207, "/acks"),
        (
            &preview_ack,
            json!({"acks": [{"id": "x"}]}),
            10207,
            "/acks/0/lease_id",
        ),
        (
            &preview_ack,
            json!({"retries": [{"lease_id": "x", "delay_seconds": 86_401}]}),
            10203,
            delay,
        ),
        (
            &preview_ack,
            json!({"retries": [{"lease_id": "x", "delay_seconds": -1}]}),
            10203,
            delay,
        ),
        (&purge, json!({}), 10207, confirm),
        (
            &purge,
            json!({"delete_messages_permanently": false}),
            10207,
            confirm,
        ),
        (
            &purge,
            json!({"delete_messages_permanently": "true"}),
            10207,
            confirm,
        ),
        (&purge, json!([true]), 10207, ""),
    ];
    for (path, body, code, pointer) in cases {
        let answer = raw_http::call(&emulator, Method::POST, path, Some(body.clone())).await;
        let got = &answer.body;
        assert_eq!(answer.status, 400, "{path} {body}: {got}");
        assert_eq!(
            failure(got),
            (Some(code), Some(pointer)),
            "{path} {body}: {got}"
        );
    }
    // A purge with no body at all is not confirmed either.
    let (status, got) = post(&emulator, "codes", "/purge", None).await;
    assert_eq!((status, failure(&got).0), (400, Some(10207)));
    let (status, got) = post(&emulator, "codes", "/messages/extend", Some(json!("{"))).await;
    assert_eq!((status, failure(&got).0), (400, Some(10207)));
    let json_type = [("content-type", "application/json")];
    let root = emulator.base_url();
    let answer = call_with(&emulator, root, Method::POST, &extend, None, &json_type).await;
    let (status, got) = (answer.status, answer.body);
    assert_eq!(
        (status, result(status, &got)),
        (200, json!({"extendCount": 0, "warnings": {}})),
        "no leases: nothing to extend"
    );
    assert_eq!(emulator.metrics("codes").backlog_count, 1, "nothing purged");

    // Methods each path does not serve: 405 with 7001.
    for (method, op) in [
        (Method::POST, "/metrics"),
        (Method::DELETE, "/purge"),
        (Method::PUT, "/purge"),
        (Method::GET, "/messages/extend"),
        (Method::GET, "/messages/preview"),
        (Method::GET, "/messages/preview/ack"),
    ] {
        let path = queue_path("codes", op);
        let (status, got) = send(&emulator, method.clone(), &path, None).await;
        assert_eq!(
            (status, failure(&got).0),
            (405, Some(7001)),
            "{method} {op}"
        );
    }
}

#[tokio::test]
async fn shared_steps_apply_to_the_new_operations() {
    let (emulator, _clock) = emulator().await;
    let strict = Emulator::new()
        .token("right-token")
        .strict_queues(["known"])
        .start()
        .await
        .expect("emulator starts");
    let operations = [
        (Operation::Extend, json!({"extend": []})),
        (Operation::Preview, json!({})),
        (Operation::DeletePreviewed, json!({})),
        (Operation::Metrics, json!({})),
        (
            Operation::PurgeQueue,
            json!({"delete_messages_permanently": true}),
        ),
        (Operation::PurgeStatus, json!({})),
    ];
    for (op, body) in &operations {
        let method = Method::from_bytes(op.method().as_bytes()).expect("method");
        let target = op_path("shared", *op);
        let body = (method == Method::POST).then(|| body.clone());
        // Served at the bare path too, as the other operations are.
        let bare = emulator
            .base_url()
            .trim_end_matches("/client/v4")
            .to_owned();
        let got = call_with(&emulator, &bare, method.clone(), &target, body.clone(), &[]).await;
        assert_eq!(got.status, 200, "{op}: {:?}", got.body);
        // A fault aimed at this operation hits it, and only it.
        emulator.inject(
            Fault::status(503)
                .cloudflare_error(10250, "QueueOverloaded")
                .only(*op),
        );
        let (status, got) = send(&emulator, method.clone(), &target, body.clone()).await;
        assert_eq!((status, failure(&got).0), (503, Some(10250)), "{op}");
        let (status, _) = send(&emulator, method.clone(), &target, body.clone()).await;
        assert_eq!(status, 200, "{op}: the fault was used up");
        // Credentials, ids and strict queues are checked as for the others.
        let url = format!("{}{target}", emulator.base_url());
        let anonymous = reqwest::Client::new().request(method.clone(), &url);
        let response = anonymous.send().await.expect("request");
        assert_eq!(response.status().as_u16(), 400, "{op}: no credentials");
        let wrong = reqwest::Client::new()
            .request(method.clone(), &url)
            .bearer_auth("wrong-token");
        assert_eq!(wrong.send().await.expect("request").status().as_u16(), 403);
        let bad_id = op_path("not-alnum", *op);
        let (status, got) = send(&emulator, method.clone(), &bad_id, body.clone()).await;
        assert_eq!((status, failure(&got).0), (400, Some(10107)), "{op}");
        let (status, got) = send(&strict, method.clone(), &target, body.clone()).await;
        assert_eq!((status, failure(&got).0), (404, Some(10104)), "{op}");
    }
    // Every request above was counted, refused ones included: six per
    // operation on this emulator.
    assert_eq!(emulator.requests_received(), 6 * operations.len() as u64);
}

#[tokio::test]
async fn preview_ids_and_lease_ids_are_not_interchangeable() {
    let (emulator, _clock) = emulator().await;
    push(&emulator, "apart", "m").await;
    let (status, body) = post(&emulator, "apart", "/messages/preview", None).await;
    let preview_id = result(status, &body)["messages"][0]["lease_id"].clone();
    let named = json!([{"lease_id": preview_id}]);
    for (op, body) in [
        ("/messages/ack", json!({ "acks": named })),
        ("/messages/extend", json!({ "extend": named })),
    ] {
        let (status, got) = post(&emulator, "apart", op, Some(body)).await;
        let warnings = &result(status, &got)["warnings"];
        let id = preview_id.as_str().unwrap_or_default();
        assert!(warnings.get(id).is_some(), "{op}: {got}");
    }
    let (status, body) = post(&emulator, "apart", "/messages/pull", None).await;
    let lease = result(status, &body)["messages"][0]["lease_id"].clone();
    let acks = json!({"acks": [{"lease_id": lease}]});
    let (status, got) = post(&emulator, "apart", "/messages/preview/ack", Some(acks)).await;
    assert_eq!(keys(&result(status, &got)["warnings"]).len(), 1);
    assert_eq!(emulator.metrics("apart").backlog_count, 1);
}
