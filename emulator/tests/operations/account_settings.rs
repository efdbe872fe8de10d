//! A queue's consumer and settings applied to delivery, on a manual clock:
//! `max_retries` and the dead-letter queue by name, `retry_delay`, the
//! default visibility timeout and batch size, `delivery_delay`,
//! `delivery_paused`, the retention period; the metadata and tokens of
//! delivered messages; the configuration file, its round trip and errors.

use std::time::Duration;

use cf_queues_emulator::config::{ConsumerConfig, EmulatorConfig, QueueConfig};
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle, ManualClock};
use serde_json::{Value, json};

use cf_queues_testkit::emulators::{START_MS, emulator_on_manual_clock as emulator_with};
use cf_queues_testkit::raw_http::{
    Answer, create, enable_http_pull, is_hex32, pull, push, queues, subscriptions,
};

use crate::support::{get, http_pull_queue, patch, post, text};

fn messages(answer: &Answer) -> Vec<Value> {
    Answer::result(answer)["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn bodies(answer: &Answer) -> Vec<String> {
    messages(answer)
        .iter()
        .filter_map(|m| m["body"].as_str().map(str::to_owned))
        .collect()
}

async fn metrics(emulator: &EmulatorHandle, id: &str) -> Value {
    Answer::result(&get(emulator, &queues(&format!("/{id}/metrics"))).await).clone()
}

/// Patches these `settings` of queue `id`, which must be accepted.
async fn set(emulator: &EmulatorHandle, id: &str, settings: Value) {
    let path = queues(&format!("/{id}"));
    let answer = patch(emulator, &path, json!({ "settings": settings })).await;
    assert_eq!(answer.status, 200, "{settings}: {:?}", answer.body);
}

/// Queue `name` with an HTTP pull consumer and these `settings`; its id.
async fn queue_set_to(emulator: &EmulatorHandle, name: &str, settings: Value) -> String {
    let id = http_pull_queue(emulator, name).await;
    set(emulator, &id, settings).await;
    id
}

async fn emulator() -> (EmulatorHandle, ManualClock) {
    emulator_with(|e| e).await
}

#[tokio::test]
async fn max_retries_moves_exhausted_messages_to_the_dead_letter_queue_by_name() {
    let (emulator, clock) = emulator().await;
    let work = create(&emulator, "work").await;
    let dead = create(&emulator, "work-dead").await;
    enable_http_pull(
        &emulator,
        &work,
        json!({"dead_letter_queue": "work-dead", "settings": {"max_retries": 2, "visibility_timeout_ms": 1000}}),
    )
    .await;
    enable_http_pull(&emulator, &dead, json!({})).await;
    push(&emulator, &work, text("poison")).await;
    for attempt in 1..=2 {
        let pulled = pull(&emulator, &work, json!({})).await;
        assert_eq!(messages(&pulled)[0]["attempts"], json!(attempt));
        clock.advance(Duration::from_millis(1000));
    }
    assert!(
        messages(&pull(&emulator, &work, json!({})).await).is_empty(),
        "delivered twice"
    );
    let moved = pull(&emulator, &dead, json!({})).await;
    assert_eq!(bodies(&moved), ["poison"]);
    assert_eq!(messages(&moved)[0]["attempts"], json!(1));
}

#[tokio::test]
async fn a_missing_dead_letter_queue_is_created_by_name() {
    let (emulator, _clock) = emulator().await;
    let work = create(&emulator, "source").await;
    assert_eq!(emulator.queue_id("auto-dlq"), None);
    enable_http_pull(&emulator, &work, json!({"dead_letter_queue": "auto-dlq"})).await;
    let id = emulator
        .queue_id("auto-dlq")
        .expect("created with the consumer");
    assert!(is_hex32(&id));
    let got = get(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(
        Answer::result(&got)["consumers"],
        json!([]),
        "as on Cloudflare: no consumer"
    );
}

#[tokio::test]
async fn retries_without_a_delay_wait_the_consumers_retry_delay() {
    let (emulator, clock) = emulator().await;
    let id = create(&emulator, "retried").await;
    enable_http_pull(&emulator, &id, json!({"settings": {"retry_delay": 30}})).await;
    push(&emulator, &id, text("a")).await;
    push(&emulator, &id, text("b")).await;
    let pulled = messages(&pull(&emulator, &id, json!({})).await);
    let lease = |i: usize| pulled[i]["lease_id"].clone();
    let body =
        json!({"retries": [{"lease_id": lease(0)}, {"lease_id": lease(1), "delay_seconds": 0}]});
    let acked = post(&emulator, &queues(&format!("/{id}/messages/ack")), body).await;
    assert_eq!(Answer::result(&acked)["retryCount"], json!(2));
    let long = json!({"visibility_timeout_ms": 600_000});
    assert_eq!(
        bodies(&pull(&emulator, &id, long).await),
        ["b"],
        "an explicit 0 is 0"
    );
    clock.advance(Duration::from_secs(29));
    assert!(bodies(&pull(&emulator, &id, json!({})).await).is_empty());
    clock.advance(Duration::from_secs(1));
    assert_eq!(bodies(&pull(&emulator, &id, json!({})).await), ["a"]);
}

#[tokio::test]
async fn pulls_without_them_take_the_consumers_batch_size_and_visibility_timeout() {
    let (emulator, clock) = emulator().await;
    let id = create(&emulator, "defaults").await;
    enable_http_pull(
        &emulator,
        &id,
        json!({"settings": {"batch_size": 2, "visibility_timeout_ms": 5000}}),
    )
    .await;
    for body in ["1", "2", "3", "4", "5"] {
        push(&emulator, &id, text(body)).await;
    }
    assert_eq!(bodies(&pull(&emulator, &id, json!({})).await), ["1", "2"]);
    assert_eq!(
        bodies(&pull(&emulator, &id, json!({"batch_size": 3})).await),
        ["3", "4", "5"]
    );
    clock.advance(Duration::from_millis(4999));
    assert!(bodies(&pull(&emulator, &id, json!({})).await).is_empty());
    clock.advance(Duration::from_millis(1));
    assert_eq!(
        bodies(&pull(&emulator, &id, json!({})).await),
        ["1", "2"],
        "leased for 5 s"
    );
    // An extension without a timeout takes the consumer's too.
    let pulled = messages(&pull(&emulator, &id, json!({"batch_size": 1})).await);
    let body = json!({"extend": [{"lease_id": pulled[0]["lease_id"]}]});
    let path = queues(&format!("/{id}/messages/extend"));
    assert_eq!(
        Answer::result(&post(&emulator, &path, body).await)["extendCount"],
        json!(1)
    );
}

#[tokio::test]
async fn delivery_delay_delays_pushes_without_a_delay_and_says_so_in_metadata() {
    let (emulator, clock) = emulator().await;
    let id = queue_set_to(&emulator, "later", json!({"delivery_delay": 10})).await;
    push(&emulator, &id, text("queued")).await;
    push(
        &emulator,
        &id,
        json!({"body": "now", "content_type": "text", "delay_seconds": 0}),
    )
    .await;
    let batch = json!({"messages": [{"body": "batched", "content_type": "text"}]});
    post(&emulator, &queues(&format!("/{id}/messages/batch")), batch).await;
    let first = pull(&emulator, &id, json!({})).await;
    assert_eq!(bodies(&first), ["now"]);
    assert_eq!(
        messages(&first)[0]["metadata"].get("CF-msg-delay-secs"),
        None
    );
    clock.advance(Duration::from_secs(10));
    let later = pull(&emulator, &id, json!({})).await;
    assert_eq!(bodies(&later), ["queued", "batched"]);
    for message in messages(&later) {
        assert_eq!(
            message["metadata"],
            json!({"CF-sourceMessageSource": "api", "CF-Content-Type": "text", "CF-msg-delay-secs": "10"})
        );
    }
}

#[tokio::test]
async fn delivered_messages_carry_the_live_apis_ids_tokens_and_metadata() {
    let (emulator, _clock) = emulator().await;
    push(
        &emulator,
        "shapes",
        json!({"body": "x", "content_type": "text", "delay_seconds": 0}),
    )
    .await;
    push(
        &emulator,
        "shapes",
        json!({"body": {"k": 1}, "content_type": "json"}),
    )
    .await;
    let pulled = messages(&pull(&emulator, "shapes", json!({})).await);
    for message in &pulled {
        assert!(
            is_hex32(message["id"].as_str().unwrap_or_default()),
            "{message}"
        );
        let lease = message["lease_id"].as_str().unwrap_or_default();
        assert_eq!(lease.len(), 159, "{lease}");
        assert!(
            lease.starts_with("eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2Q0JDLUhTNTEyIn0.."),
            "{lease}"
        );
        assert_eq!(lease.split('.').count(), 5);
        assert_eq!(message["metadata"]["CF-sourceMessageSource"], json!("api"));
        assert_eq!(message["timestamp_ms"], json!(START_MS));
    }
    let peeked = post(&emulator, &queues("/shapes/messages/peek"), json!({})).await;
    assert_eq!(messages(&peeked).len(), 0, "both leased");
    push(
        &emulator,
        "shapes",
        json!({"body": "y", "content_type": "text", "delay_seconds": 20}),
    )
    .await;
    // Delayed: peek sees nothing yet, but the metadata is the message's own.
    let previewed = post(&emulator, &queues("/shapes/messages/preview"), json!({})).await;
    assert!(messages(&previewed).is_empty());
}

#[tokio::test]
async fn a_paused_queue_accepts_messages_and_refuses_pulls_with_409() {
    let (emulator, _clock) = emulator().await;
    let id = queue_set_to(&emulator, "paused", json!({"delivery_paused": true})).await;
    assert_eq!(push(&emulator, &id, text("kept")).await.status, 200);
    let refused = pull(&emulator, &id, json!({})).await;
    assert_eq!(
        Answer::failure(&refused),
        (409, 10252, "queue_delivery_paused".into())
    );
    let peeked = post(
        &emulator,
        &queues(&format!("/{id}/messages/peek")),
        json!({}),
    )
    .await;
    assert_eq!(bodies(&peeked), ["kept"]);
    set(&emulator, &id, json!({"delivery_paused": false})).await;
    assert_eq!(bodies(&pull(&emulator, &id, json!({})).await), ["kept"]);
}

#[tokio::test]
async fn messages_older_than_the_retention_period_are_gone() {
    let (emulator, clock) = emulator().await;
    let id = queue_set_to(&emulator, "brief", json!({"message_retention_period": 60})).await;
    push(&emulator, &id, text("old")).await;
    clock.advance(Duration::from_secs(30));
    push(&emulator, &id, text("young")).await;
    let leased = messages(&pull(&emulator, &id, json!({"batch_size": 1})).await);
    clock.advance(Duration::from_secs(30));
    assert_eq!(
        metrics(&emulator, &id).await["backlog_count"],
        json!(1),
        "the old one, leased or not"
    );
    let ack = json!({"acks": [{"lease_id": leased[0]["lease_id"]}]});
    let acked = post(&emulator, &queues(&format!("/{id}/messages/ack")), ack).await;
    assert_eq!(
        Answer::result(&acked)["ackCount"],
        json!(0),
        "its lease went with it"
    );
    clock.advance(Duration::from_secs(30));
    assert_eq!(metrics(&emulator, &id).await["backlog_count"], json!(0));

    // Lax queues keep Cloudflare's default, 4 days.
    push(&emulator, "keeper", text("x")).await;
    clock.advance(Duration::from_secs(345_599));
    assert_eq!(emulator.metrics("keeper").backlog_count, 1);
    clock.advance(Duration::from_secs(1));
    assert_eq!(emulator.metrics("keeper").backlog_count, 0);
}

const CONFIG: &str = r#"
strict = true

[[queues]]
queue_name = "orders"
queue_id = "9a7806061c88ada191ed06f989cc3dac"
settings = { delivery_delay = 5, message_retention_period = 3600 }

[queues.consumer]
type = "http_pull"
dead_letter_queue = "orders-dlq"
settings = { batch_size = 2, max_retries = 1, retry_delay = 7, visibility_timeout_ms = 1000 }

[[queues.subscriptions]]
events = ["instance.errored"]
source = { type = "workflows.workflow", workflow_name = "checkout" }

[[queues]]
queue_name = "orders-dlq"
consumer = { type = "http_pull" }

[[queues]]
queue_name = "emails"
consumer = { type = "worker", script_name = "mailer", settings = { max_concurrency = 3 } }
"#;

#[tokio::test]
async fn a_configuration_file_declares_queues_that_keep_their_ids_across_restarts() {
    let dir = std::env::temp_dir().join(format!("cfq-emulator-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = dir.join("account.toml");
    std::fs::write(&file, CONFIG).expect("written");
    let id = "9a7806061c88ada191ed06f989cc3dac";
    for _restart in 0..2 {
        let clock = ManualClock::new(START_MS);
        let emulator = Emulator::new()
            .clock(clock.clone())
            .config_file(&file)
            .expect("a valid file")
            .start()
            .await
            .expect("starts");
        assert_eq!(emulator.queue_id("orders").as_deref(), Some(id));
        let got = get(&emulator, &queues(&format!("/{id}"))).await;
        let queue = Answer::result(&got).clone();
        assert_eq!(
            queue["settings"],
            json!({"delivery_delay": 5, "delivery_paused": false, "message_retention_period": 3600})
        );
        assert_eq!(
            queue["consumers"][0]["settings"],
            json!({"batch_size": 2, "max_retries": 1, "retry_delay": 7, "visibility_timeout_ms": 1000})
        );
        assert_eq!(
            queue["consumers"][0]["dead_letter_queue"],
            json!("orders-dlq")
        );
        let declared = get(&emulator, &subscriptions(&format!("?queue_id={id}"))).await;
        let declared = &Answer::result(&declared)[0];
        assert_eq!(
            (&declared["name"], &declared["enabled"], &declared["events"]),
            (
                &json!("orders workflows.workflow"),
                &json!(true),
                &json!(["instance.errored"])
            )
        );
        assert_eq!(
            declared["source"],
            json!({"type": "workflows.workflow", "workflow_name": "checkout"})
        );
        let emails = emulator.queue_id("emails").expect("declared");
        let worker = get(&emulator, &queues(&format!("/{emails}/consumers"))).await;
        assert_eq!(Answer::result(&worker)[0]["script_name"], json!("mailer"));
        assert_eq!(
            Answer::result(&worker)[0]["settings"]["max_concurrency"],
            json!(3)
        );
        // Strict: nothing springs into being.
        assert_eq!(
            Answer::failure(&push(&emulator, "orders", text("x")).await).0,
            404,
            "a name is no id"
        );

        // The declared settings decide delivery.
        push(&emulator, id, text("m")).await;
        clock.advance(Duration::from_secs(5));
        let pulled = messages(&pull(&emulator, id, json!({})).await);
        assert_eq!(pulled.len(), 1);
        clock.advance(Duration::from_millis(1000));
        let dlq = emulator.queue_id("orders-dlq").expect("declared");
        assert_eq!(
            bodies(&pull(&emulator, &dlq, json!({})).await),
            ["m"],
            "after one delivery"
        );
        emulator.shutdown().await.expect("stops");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_configuration_built_in_code_and_the_builder_shorthands_combine() {
    let mut jobs = QueueConfig::new("jobs");
    jobs.queue_id = Some("jobs".into());
    jobs.consumer = Some(ConsumerConfig::http_pull());
    let mut config = EmulatorConfig::default();
    config.queues.push(jobs);
    let (emulator, _clock) = emulator_with(|e| {
        e.config(config)
            .max_retries(9)
            .dead_letter_queue("jobs", "jobsdead")
    })
    .await;
    let got = get(&emulator, &queues("/jobs")).await;
    let consumer = &Answer::result(&got)["consumers"][0];
    assert_eq!(
        consumer["settings"]["max_retries"],
        json!(9),
        "left out: the builder's"
    );
    assert_eq!(consumer["dead_letter_queue"], json!("jobsdead"));
    assert!(emulator.queue_id("jobsdead").is_some(), "created by name");

    let twice = Emulator::new()
        .strict_queues(["jobs"])
        .config(EmulatorConfig::from_toml("[[queues]]\nqueue_name = \"jobs\"\n").expect("valid"))
        .start()
        .await;
    let message = twice.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("declared twice"), "{message}");
}

#[test]
fn configuration_errors_name_the_line_and_the_field() {
    let cases = [
        (
            "[[queues]]\nqueue_name = \"a\"\nsettinngs = {}\n",
            &["line 3", "settinngs"][..],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\n[queues.consumer]\ntype = \"http_pull\"\nsettings = { batch_size = 0 }\n",
            &["line 5", "batch_size must be from 1 to 100, not 0"],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\nsettings = { message_retention_period = 10 }\n",
            &[
                "line 3",
                "message_retention_period must be from 60 to 1209600",
            ],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\nconsumer = { type = \"pull\" }\n",
            &["line 3", "pull"],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\nconsumer = {}\n",
            &["line 3", "missing field `type`"],
        ),
        ("strict = \"yes\"\n", &["line 1", "strict"]),
        (
            "[[queues]]\nqueue_name = \"Bad\"\n",
            &["line 1", "queues[0]", "queue_name \"Bad\""],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\n\n[[queues]]\nqueue_name = \"a\"\n",
            &["line 4", "queues[1]", "declared twice"],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\nqueue_id = \"not-an-id\"\n",
            &["queues[0]", "queue_id \"not-an-id\""],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\nconsumer = { type = \"http_pull\", dead_letter_queue = \"Bad_DLQ\" }\n",
            &[
                "line 1",
                "queues[0]",
                "consumer.dead_letter_queue \"Bad_DLQ\" is not a queue name",
            ],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\nconsumer = { type = \"worker\" }\n",
            &["queues[0]", "consumer.script_name is required"],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\nconsumer = { type = \"http_pull\", settings = { max_concurrency = 2 } }\n",
            &[
                "queues[0]",
                "consumer.settings.max_concurrency is not a field of an http_pull consumer",
            ],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\nconsumer = { type = \"http_pull\", dead_letter_queue = \"a\" }\n",
            &["queues[0]", "own dead-letter queue"],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\n[[queues.subscriptions]]\nevents = []\nsource = { type = \"kv\" }\n",
            &["queues[0]", "subscriptions[0]", "at least one event"],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\n[[queues.subscriptions]]\nevents = [\"x\"]\nsource = { type = \"kv.namespace\" }\n",
            &[
                "subscriptions[0]",
                "source.type \"kv.namespace\" is not one of",
            ],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\n[[queues.subscriptions]]\nevents = [\"x\"]\nsource = { type = \"workflows.workflow\" }\n",
            &["subscriptions[0]", "source.workflow_name is required"],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\n[[queues.subscriptions]]\nevents = [\"x\"]\nsource = { type = \"r2\", bucket = \"b\" }\n",
            &[
                "subscriptions[0]",
                "source.bucket is not a field of a r2 source",
            ],
        ),
        (
            "[[queues]]\nqueue_name = \"a\"\n[[queues.subscriptions]]\nevents = [\"x\"]\nsource = { type = \"r2\" }\nqueue = \"b\"\n",
            &["line 6", "queue"],
        ),
    ];
    for (text, says) in cases {
        let error = EmulatorConfig::from_toml(text).expect_err(text).to_string();
        for part in says {
            assert!(
                error.contains(part),
                "{text:?}: {error:?} should say {part:?}"
            );
        }
    }
    let missing = EmulatorConfig::from_file("/nonexistent/cfq.toml").expect_err("no file");
    assert!(
        missing
            .to_string()
            .starts_with("/nonexistent/cfq.toml: cannot read it"),
        "{missing}"
    );
    let example = EmulatorConfig::from_toml(CONFIG).expect("the example parses");
    assert_eq!(example.queues.len(), 3);
    assert!(example.strict);
    let _ = EMULATOR_ACCOUNT_ID;
}
