//! The emulator as a Cloudflare account: queues and consumers created,
//! listed, read, changed and deleted over raw HTTP with Cloudflare's shapes
//! and codes; HTTP pull enabled and disabled by the consumer; queues that
//! spring into being (the lax mode) and the strict queues; the shared
//! steps (faults, the rate limits) on the management operations.

use std::time::Duration;

use cf_queues_emulator::{
    EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle, Fault, ManualClock, Operation, RateLimitModel,
};
use reqwest::Method;
use serde_json::{Value, json};

use cf_queues_testkit::emulators::emulator_on_manual_clock as emulator_with;
use cf_queues_testkit::raw_http::{
    Answer, call, create, enable_http_pull, is_hex32, pull, push, queues,
};

use crate::support::{
    DELIVERY_DELAY, PAUSED, RETENTION, delete, error_pointer, get, http_pull_queue, patch, post,
    put, queue_names, text,
};

async fn emulator() -> (EmulatorHandle, ManualClock) {
    emulator_with(|e| e).await
}

/// Creates queues `first` and `second`; the id of `first`.
async fn create_both(emulator: &EmulatorHandle, first: &str, second: &str) -> String {
    let id = create(emulator, first).await;
    create(emulator, second).await;
    id
}

const HTTP_PULL_DISABLED: &str = "messages cannot be pulled unless http_pull mode is enabled";

#[tokio::test]
async fn a_created_queue_has_an_id_a_name_settings_and_no_consumer() {
    let (emulator, _clock) = emulator().await;
    let answer = post(&emulator, &queues(""), json!({"queue_name": "orders"})).await;
    let queue = Answer::result(&answer).clone();
    let id = queue["queue_id"].as_str().unwrap_or_default().to_owned();
    assert!(is_hex32(&id), "{id}");
    assert_eq!(
        queue,
        json!({
            "queue_id": id,
            "queue_name": "orders",
            "created_on": "2024-03-20T16:09:14.154Z",
            "modified_on": "2024-03-20T16:09:14.154Z",
            "producers": [],
            "producers_total_count": 0,
            "consumers": [],
            "consumers_total_count": 0,
            "settings": {"delivery_delay": 0, "delivery_paused": false, "message_retention_period": 345_600}
        })
    );
    assert_eq!(emulator.queue_id("orders"), Some(id.clone()));
    let got = get(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(Answer::result(&got), &queue);

    // The same name again: 409 with 11009; a name Cloudflare refuses: 400 with 11003.
    let again = post(&emulator, &queues(""), json!({"queue_name": "orders"})).await;
    assert_eq!(
        Answer::failure(&again),
        (409, 11009, "queue name already taken: orders".into())
    );
    for bad in [
        "Orders",
        "-orders",
        "orders-",
        "or_ders",
        "",
        &"a".repeat(64),
    ] {
        let answer = post(&emulator, &queues(""), json!({"queue_name": bad})).await;
        let (status, code, message) = Answer::failure(&answer);
        assert_eq!((status, code), (400, 11003), "{bad:?}: {message}");
    }
    let missing = post(&emulator, &queues(""), json!({})).await;
    assert_eq!(Answer::failure(&missing).1, 10207);

    // Management calls on an unknown id answer 404 and bring nothing into being.
    for method in [Method::GET, Method::DELETE] {
        let answer = call(&emulator, method, &queues("/nosuchqueue"), None).await;
        assert_eq!(
            Answer::failure(&answer),
            (404, 10104, "QueueNotFound".into())
        );
    }
    let consumers = get(&emulator, &queues("/nosuchqueue/consumers")).await;
    assert_eq!(Answer::failure(&consumers).0, 404);
    let listed = get(&emulator, &queues("")).await;
    assert_eq!(
        Answer::result(&listed).as_array().map(Vec::len),
        Some(1),
        "only orders"
    );
}

#[tokio::test]
async fn pulls_need_an_http_pull_consumer_and_deleting_it_disables_them_again() {
    let (emulator, _clock) = emulator().await;
    let id = create(&emulator, "work").await;
    assert_eq!(push(&emulator, &id, text("hi")).await.status, 200);

    let refused = pull(&emulator, &id, json!({})).await;
    assert_eq!(
        Answer::failure(&refused),
        (405, 0, HTTP_PULL_DISABLED.into())
    );
    let op = |rest: &str| queues(&format!("/{id}/messages{rest}"));
    let ack = post(&emulator, &op("/ack"), json!({"acks": []})).await;
    assert_eq!(Answer::failure(&ack), (405, 0, HTTP_PULL_DISABLED.into()));
    let extend = post(&emulator, &op("/extend"), json!({"extend": []})).await;
    assert_eq!(
        Answer::failure(&extend),
        (405, 0, HTTP_PULL_DISABLED.into())
    );
    // Looking, and deleting by ref or preview id, need no consumer.
    let peeked = post(&emulator, &op("/peek"), json!({})).await;
    assert_eq!(
        Answer::result(&peeked)["messages"].as_array().map(Vec::len),
        Some(1)
    );
    let previewed = post(&emulator, &op("/preview"), json!({})).await;
    assert_eq!(
        Answer::result(&previewed)["messages"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    let consumer = enable_http_pull(&emulator, &id, json!({})).await;
    assert!(is_hex32(&consumer), "{consumer}");
    let pulled = pull(&emulator, &id, json!({})).await;
    let message = Answer::result(&pulled)["messages"][0].clone();
    assert_eq!(message["body"], json!("hi"));

    let path = queues(&format!("/{id}/consumers/{consumer}"));
    let deleted = delete(&emulator, &path).await;
    assert_eq!(Answer::result(&deleted), &Value::Null);
    let refused = pull(&emulator, &id, json!({})).await;
    assert_eq!(
        Answer::failure(&refused),
        (405, 0, HTTP_PULL_DISABLED.into())
    );
    let again = delete(&emulator, &path).await;
    assert_eq!(Answer::failure(&again).0, 404, "the consumer is gone");
    let listed = get(&emulator, &queues(&format!("/{id}/consumers"))).await;
    assert_eq!(Answer::result(&listed), &json!([]));
}

#[tokio::test]
async fn consumers_read_back_in_cloudflares_shapes_and_a_queue_has_one() {
    let (emulator, clock) = emulator().await;
    let id = create_both(&emulator, "jobs", "jobs-dlq").await;
    clock.advance(Duration::from_secs(1));
    let body = json!({
        "type": "http_pull",
        "dead_letter_queue": "jobs-dlq",
        "settings": {"batch_size": 10, "max_retries": 5, "retry_delay": 30, "visibility_timeout_ms": 60_000}
    });
    let created = post(&emulator, &queues(&format!("/{id}/consumers")), body).await;
    let consumer = Answer::result(&created).clone();
    let consumer_id = consumer["consumer_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        consumer,
        json!({
            "type": "http_pull",
            "consumer_id": consumer_id,
            "created_on": "2024-03-20T16:09:15.154Z",
            "queue_name": "jobs",
            "dead_letter_queue": "jobs-dlq",
            "settings": {"batch_size": 10, "max_retries": 5, "retry_delay": 30, "visibility_timeout_ms": 60_000}
        })
    );
    let path = queues(&format!("/{id}/consumers/{consumer_id}"));
    assert_eq!(Answer::result(&get(&emulator, &path).await), &consumer);
    let listed = get(&emulator, &queues(&format!("/{id}/consumers"))).await;
    assert_eq!(Answer::result(&listed), &json!([consumer.clone()]));
    let queue = get(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(
        Answer::result(&queue)["consumers"],
        json!([consumer.clone()])
    );
    assert_eq!(Answer::result(&queue)["consumers_total_count"], json!(1));

    // One consumer per queue.
    let second = post(
        &emulator,
        &queues(&format!("/{id}/consumers")),
        json!({"type": "worker", "script_name": "w"}),
    )
    .await;
    let (status, code, _) = Answer::failure(&second);
    assert_eq!((status, code), (409, 11004));

    // An update replaces the whole configuration, keeping the id.
    let updated = put(&emulator, &path, json!({"type": "http_pull"})).await;
    assert_eq!(
        Answer::result(&updated)["settings"],
        json!({"batch_size": 5, "max_retries": 3, "retry_delay": 0, "visibility_timeout_ms": 30_000})
    );
    assert_eq!(Answer::result(&updated)["dead_letter_queue"], json!(""));
    assert_eq!(Answer::result(&updated)["consumer_id"], json!(consumer_id));

    // Bad settings: 400 with 10207 and the field's pointer.
    for (settings, pointer) in [
        (json!({"batch_size": 0}), "/settings/batch_size"),
        (json!({"batch_size": 101}), "/settings/batch_size"),
        (json!({"max_retries": 101}), "/settings/max_retries"),
        (json!({"retry_delay": 86_401}), "/settings/retry_delay"),
        (
            json!({"visibility_timeout_ms": 0}),
            "/settings/visibility_timeout_ms",
        ),
        (json!({"batch_size": 1.5}), "/settings/batch_size"),
        (json!({"batch_size": "10"}), "/settings/batch_size"),
    ] {
        let answer = put(
            &emulator,
            &path,
            json!({"type": "http_pull", "settings": settings}),
        )
        .await;
        assert_eq!(Answer::failure(&answer).1, 10207, "{settings}");
        assert_eq!(error_pointer(&answer), &json!(pointer));
    }
    let own = put(
        &emulator,
        &path,
        json!({"type": "http_pull", "dead_letter_queue": "jobs"}),
    )
    .await;
    assert_eq!(
        Answer::failure(&own).1,
        10207,
        "a queue is not its own dead-letter queue"
    );
    let kind = put(&emulator, &path, json!({"type": "push"})).await;
    assert_eq!(Answer::failure(&kind).1, 10207);
    let unknown = queues(&format!("/{id}/consumers/00000000000000000000000000000000"));
    assert_eq!(Answer::failure(&get(&emulator, &unknown).await).0, 404);
}

#[tokio::test]
async fn a_worker_consumer_is_kept_never_run_and_blocks_http_pull() {
    let (emulator, _clock) = emulator().await;
    let id = create(&emulator, "emails").await;
    let body = json!({
        "type": "worker",
        "script_name": "mailer",
        "settings": {"batch_size": 50, "max_concurrency": 4, "max_retries": 2, "max_wait_time_ms": 2000, "retry_delay": 10}
    });
    let created = post(&emulator, &queues(&format!("/{id}/consumers")), body).await;
    let consumer = Answer::result(&created).clone();
    assert_eq!(consumer["type"], json!("worker"));
    assert_eq!(consumer["script_name"], json!("mailer"));
    assert_eq!(consumer["dead_letter_queue"], json!(""));
    assert_eq!(
        consumer["settings"],
        json!({"batch_size": 50, "max_concurrency": 4, "max_retries": 2, "max_wait_time_ms": 2000, "retry_delay": 10})
    );
    let consumers = queues(&format!("/{id}/consumers"));
    let enable = post(&emulator, &consumers, json!({"type": "http_pull"})).await;
    let (status, code, _) = Answer::failure(&enable);
    let beside = "HTTP pull cannot be enabled beside a Worker";
    assert_eq!((status, code), (409, 11004), "{beside}");
    push(&emulator, &id, text("x")).await;
    assert_eq!(
        Answer::failure(&pull(&emulator, &id, json!({})).await).0,
        405
    );
    assert_eq!(
        emulator.metrics_in(EMULATOR_ACCOUNT_ID, &id).backlog_count,
        1,
        "never run"
    );

    let other = create(&emulator, "other").await;
    let consumers = queues(&format!("/{other}/consumers"));
    let missing = post(&emulator, &consumers, json!({"type": "worker"})).await;
    assert_eq!(
        Answer::failure(&missing).1,
        10207,
        "a worker needs a script_name"
    );
    assert_eq!(error_pointer(&missing), &json!("/script_name"));
}

#[tokio::test]
async fn a_deleted_queue_is_gone_with_its_messages_and_never_springs_back() {
    let (emulator, _clock) = emulator().await;
    let id = http_pull_queue(&emulator, "doomed").await;
    push(&emulator, &id, text("x")).await;
    let deleted = delete(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(Answer::result(&deleted), &Value::Null);
    assert_eq!(deleted.body["result"], Value::Null);
    assert_eq!(emulator.queue_id("doomed"), None);
    for (method, rest, body) in [
        (Method::GET, String::new(), None),
        (Method::DELETE, String::new(), None),
        (Method::PATCH, String::new(), Some(json!({}))),
        (Method::GET, "/consumers".to_owned(), None),
        (Method::POST, "/messages".to_owned(), Some(text("y"))),
        (Method::POST, "/messages/pull".to_owned(), Some(json!({}))),
        (Method::GET, "/metrics".to_owned(), None),
    ] {
        let answer = call(
            &emulator,
            method.clone(),
            &queues(&format!("/{id}{rest}")),
            body,
        )
        .await;
        assert_eq!(
            Answer::failure(&answer),
            (404, 10104, "QueueNotFound".into()),
            "{method} {rest}"
        );
    }
    // Its name is free again, for a new queue with a new id.
    let again = create(&emulator, "doomed").await;
    assert_ne!(again, id);
    assert_eq!(
        emulator
            .metrics_in(EMULATOR_ACCOUNT_ID, &again)
            .backlog_count,
        0
    );

    // A lax queue deleted never springs back into being.
    push(&emulator, "laxone", text("x")).await;
    assert_eq!(
        Answer::result(&delete(&emulator, &queues("/laxone")).await),
        &Value::Null
    );
    let answer = push(&emulator, "laxone", text("x")).await;
    assert_eq!(
        Answer::failure(&answer),
        (404, 10104, "QueueNotFound".into())
    );
}

#[tokio::test]
async fn a_lax_queue_is_listed_by_its_id_with_a_default_consumer_that_can_go() {
    let (emulator, _clock) =
        emulator_with(|e| e.max_retries(7).dead_letter_queue("laxwork", "laxdead")).await;
    assert_eq!(push(&emulator, "laxwork", text("x")).await.status, 200);
    let got = get(&emulator, &queues("/laxwork")).await;
    let queue = Answer::result(&got).clone();
    assert_eq!(
        (&queue["queue_id"], &queue["queue_name"]),
        (&json!("laxwork"), &json!("laxwork"))
    );
    let consumer = queue["consumers"][0].clone();
    assert_eq!(consumer["type"], json!("http_pull"));
    assert_eq!(consumer["dead_letter_queue"], json!("laxdead"));
    assert_eq!(consumer["settings"]["max_retries"], json!(7));
    // Its dead-letter queue came into being with it, by name.
    let dead = get(&emulator, &queues("/laxdead")).await;
    assert_eq!(Answer::result(&dead)["queue_name"], json!("laxdead"));

    let consumer_id = consumer["consumer_id"].as_str().unwrap_or_default();
    let path = queues(&format!("/laxwork/consumers/{consumer_id}"));
    let changed = put(
        &emulator,
        &path,
        json!({"type": "http_pull", "settings": {"batch_size": 1}}),
    )
    .await;
    assert_eq!(Answer::result(&changed)["settings"]["batch_size"], json!(1));
    push(&emulator, "laxwork", text("y")).await;
    let pulled = pull(&emulator, "laxwork", json!({})).await;
    assert_eq!(
        Answer::result(&pulled)["messages"].as_array().map(Vec::len),
        Some(1),
        "its batch_size"
    );
    assert_eq!(
        Answer::result(&delete(&emulator, &path).await),
        &Value::Null
    );
    assert_eq!(
        Answer::failure(&pull(&emulator, "laxwork", json!({})).await).0,
        405
    );
}

#[tokio::test]
async fn the_name_filter_is_exact_and_pages_say_where_they_stand() {
    let (emulator, clock) = emulator().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(create(&emulator, &format!("queue-{i}")).await);
        clock.advance(Duration::from_millis(1));
    }
    create(&emulator, "queue-1-dlq").await;
    let named = get(&emulator, &queues("?name=queue-1")).await;
    let listed = Answer::result(&named)
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["queue_id"], json!(ids[1]));
    let none = get(&emulator, &queues("?name=queue")).await;
    assert_eq!(Answer::result(&none), &json!([]));

    let page = get(&emulator, &queues("?page=2&per_page=2")).await;
    let names = queue_names(&page);
    assert_eq!(names, ["queue-2", "queue-3"], "creation order");
    assert_eq!(
        page.body["result_info"],
        json!({"count": 2, "page": 2, "per_page": 2, "total_count": 6, "total_pages": 3})
    );
    let all = get(&emulator, &queues("")).await;
    assert_eq!(
        all.body["result_info"],
        json!({"count": 6, "page": 1, "per_page": 20, "total_count": 6, "total_pages": 1})
    );
    let past = get(&emulator, &queues("?page=9")).await;
    assert_eq!(Answer::result(&past), &json!([]));
    for bad in ["?page=0", "?page=x", "?per_page=0", "?per_page=1001"] {
        let answer = get(&emulator, &queues(bad)).await;
        assert_eq!(Answer::failure(&answer).0, 400, "{bad}");
    }
}

#[tokio::test]
async fn updates_rename_and_replace_or_change_the_settings() {
    let (emulator, clock) = emulator().await;
    let id = create_both(&emulator, "before", "taken").await;
    clock.advance(Duration::from_secs(2));
    let path = queues(&format!("/{id}"));
    let patched = patch(&emulator, &path, json!({"queue_name": "after", "settings": {"delivery_delay": 5, "message_retention_period": 3600}})).await;
    let queue = Answer::result(&patched).clone();
    assert_eq!(queue["queue_name"], json!("after"));
    assert_eq!(queue["modified_on"], json!("2024-03-20T16:09:16.154Z"));
    assert_eq!(
        queue["settings"],
        json!({"delivery_delay": 5, "delivery_paused": false, "message_retention_period": 3600})
    );
    assert_eq!(
        (emulator.queue_id("after"), emulator.queue_id("before")),
        (Some(id.clone()), None)
    );
    let kept = patch(
        &emulator,
        &path,
        json!({"settings": {"delivery_paused": true}}),
    )
    .await;
    assert_eq!(
        Answer::result(&kept)["settings"],
        json!({"delivery_delay": 5, "delivery_paused": true, "message_retention_period": 3600})
    );
    let replaced = put(&emulator, &path, json!({"settings": {"delivery_delay": 1}})).await;
    assert_eq!(
        Answer::result(&replaced)["settings"],
        json!({"delivery_delay": 1, "delivery_paused": false, "message_retention_period": 345_600})
    );
    assert_eq!(
        Answer::result(&replaced)["queue_name"],
        json!("after"),
        "a name left out is kept"
    );
    let clash = patch(&emulator, &path, json!({"queue_name": "taken"})).await;
    assert_eq!(Answer::failure(&clash).0, 409);
    for (settings, pointer) in [
        (json!({"message_retention_period": 59}), RETENTION),
        (json!({"message_retention_period": 1_209_601}), RETENTION),
        (json!({"delivery_delay": 86_401}), DELIVERY_DELAY),
        (json!({"delivery_paused": "yes"}), PAUSED),
    ] {
        let answer = patch(&emulator, &path, json!({"settings": settings})).await;
        assert_eq!(Answer::failure(&answer).1, 10207, "{settings}");
        assert_eq!(error_pointer(&answer), &json!(pointer));
    }
}

#[tokio::test]
async fn strict_queues_are_declared_with_http_pull_and_nothing_else_springs() {
    let (emulator, _clock) = emulator_with(|e| e.strict_queues(["known"])).await;
    let listed = get(&emulator, &queues("")).await;
    let queue = Answer::result(&listed)[0].clone();
    assert_eq!(
        (&queue["queue_id"], &queue["queue_name"]),
        (&json!("known"), &json!("known"))
    );
    assert_eq!(queue["consumers"][0]["type"], json!("http_pull"));
    let unknown = push(&emulator, "unknown", text("x")).await;
    assert_eq!(
        Answer::failure(&unknown),
        (404, 10104, "QueueNotFound".into())
    );
    // Queues the API creates exist in strict mode too.
    let id = create(&emulator, "created").await;
    assert_eq!(push(&emulator, &id, text("x")).await.status, 200);
    // A strict id is known under every account id.
    let other = "fedcba9876543210fedcba9876543210";
    let path = format!("/accounts/{other}/queues/known/messages");
    let answer = post(&emulator, &path, text("x")).await;
    assert_eq!(answer.status, 200);
}

#[tokio::test]
async fn management_calls_count_against_the_credential_and_take_faults() {
    let model = RateLimitModel::cloudflare().per_credential(
        3,
        Duration::from_secs(60),
        Duration::from_secs(60),
    );
    let (emulator, clock) = emulator_with(|e| e.rate_limits(model)).await;
    let id = create(&emulator, "counted").await;
    let listed = get(&emulator, &queues("")).await;
    assert_eq!(listed.status, 200);
    let got = get(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(got.status, 200);
    let over = get(&emulator, &queues("")).await;
    assert_eq!(
        (Answer::failure(&over).0, Answer::failure(&over).1),
        (429, 971)
    );
    clock.advance(Duration::from_secs(61));
    assert_eq!(get(&emulator, &queues("")).await.status, 200);
    emulator.set_rate_limits(None);

    emulator.inject(Fault::status(503).only(Operation::CreateQueue));
    let listed = get(&emulator, &queues("")).await;
    assert_eq!(listed.status, 200, "the fault waits for its operation");
    let faulty = post(&emulator, &queues(""), json!({"queue_name": "x"})).await;
    assert_eq!(
        (Answer::failure(&faulty).0, Answer::failure(&faulty).1),
        (503, 15000)
    );
    assert_eq!(emulator.queue_id("x"), None);
    let other = patch(&emulator, &queues(""), json!({})).await;
    assert_eq!(
        (Answer::failure(&other).0, Answer::failure(&other).1),
        (405, 7001)
    );
}

#[tokio::test]
async fn the_generated_client_reads_the_management_answers() {
    let emulator = Emulator::new().start().await.expect("starts");
    let client = emulator.client().expect("client");
    let raw = client.raw();
    let created = raw
        .create_queue()
        .account_id(EMULATOR_ACCOUNT_ID)
        .body_map(|b| b.queue_name("typed"))
        .send()
        .await
        .expect("create")
        .into_inner();
    let queue = created.result.expect("a queue");
    let id = queue.queue_id.clone().expect("an id");
    assert_eq!(queue.queue_name.as_deref(), Some("typed"));
    let listed = raw
        .list_queues()
        .account_id(EMULATOR_ACCOUNT_ID)
        .name("typed")
        .send()
        .await
        .expect("list")
        .into_inner();
    let page = listed.result.expect("queues");
    assert_eq!(page.len(), 1);
    assert_eq!(listed.result_info.and_then(|i| i.total_count), Some(1.0));
    let got = raw
        .get_queue()
        .account_id(EMULATOR_ACCOUNT_ID)
        .queue_id(id.as_str())
        .send()
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got.result.and_then(|q| q.queue_id), Some(id));
}
