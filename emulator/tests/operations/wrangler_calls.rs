//! The management calls as wrangler makes them (the facts sheet's
//! "What Cloudflare's CLI sends and reads"): a queue created with its
//! settings, a Worker consumer added with `script_name` and found again by
//! `script` or `service`.

use serde_json::{Value, json};

use cf_queues_testkit::emulators::emulator_on_manual_clock as emulator_with;
use cf_queues_testkit::raw_http::{Answer, create, queues};

use crate::support::{
    DELIVERY_DELAY, PAUSED, RETENTION, delete, error_pointer, get, patch, post, put, queue_names,
};

#[tokio::test]
async fn a_queue_created_with_settings_has_them_checked_as_an_update_checks_them() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    // `wrangler queues create orders --delivery-delay-secs 2 --message-retention-period-secs 3600`
    let body = json!({"queue_name": "orders", "settings": {"delivery_delay": 2, "message_retention_period": 3600}});
    let created = post(&emulator, &queues(""), body).await;
    let queue = Answer::result(&created).clone();
    let expected =
        json!({"delivery_delay": 2, "delivery_paused": false, "message_retention_period": 3600});
    assert_eq!(queue["settings"], expected);
    let id = queue["queue_id"].as_str().unwrap_or_default().to_owned();
    let read = get(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(
        Answer::result(&read)["settings"],
        expected,
        "kept, not only answered"
    );

    // Refused as a PATCH refuses them, and nothing is created.
    for (settings, pointer) in [
        (json!({"message_retention_period": 10}), RETENTION),
        (json!({"delivery_delay": 86_401}), DELIVERY_DELAY),
        (json!({"delivery_paused": "yes"}), PAUSED),
    ] {
        let body = json!({"queue_name": "refused", "settings": settings});
        let answer = post(&emulator, &queues(""), body).await;
        assert_eq!(Answer::failure(&answer).0, 400, "{settings}");
        assert_eq!(Answer::failure(&answer).1, 10207, "{settings}");
        assert_eq!(error_pointer(&answer), &json!(pointer));
        let path = queues(&format!("/{id}"));
        let patched = patch(&emulator, &path, json!({ "settings": settings })).await;
        assert_eq!(
            Answer::failure(&patched),
            Answer::failure(&answer),
            "the same refusal as a PATCH"
        );
    }
    let listed = get(&emulator, &queues("?name=refused")).await;
    assert_eq!(Answer::result(&listed), &json!([]));
}

/// The Worker consumer of `queue` as wrangler's `consumer remove` finds
/// it: `type == "worker"` and `script` or `service` equal to `script`.
fn wrangler_finds(queue: &Value, script: &str) -> Option<String> {
    queue["consumers"]
        .as_array()?
        .iter()
        .find(|c| {
            c["type"] == "worker" && (c["script"] == json!(script) || c["service"] == json!(script))
        })
        .and_then(|c| c["consumer_id"].as_str())
        .map(str::to_owned)
}

#[tokio::test]
async fn worker_consumers_carry_script_and_script_name_and_wrangler_finds_them() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    let id = create(&emulator, "emails").await;
    // `wrangler queues consumer add emails mailer --batch-size 20`
    let add = json!({
        "script_name": "mailer", "environment_name": "", "type": "worker",
        "settings": {"batch_size": 20, "max_retries": 4, "max_wait_time_ms": 3000, "max_concurrency": 2, "retry_delay": 5},
        "dead_letter_queue": null
    });
    let consumers = queues(&format!("/{id}/consumers"));
    let added = post(&emulator, &consumers, add).await;
    let consumer = Answer::result(&added).clone();
    assert_eq!(
        (&consumer["script_name"], &consumer["script"]),
        (&json!("mailer"), &json!("mailer"))
    );
    assert_eq!(consumer.get("service"), None, "no service was given");
    let consumer_id = consumer["consumer_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    // `consumer remove` reads the queue, finds the consumer by `script`,
    // and deletes it by id.
    let info = get(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(
        wrangler_finds(Answer::result(&info), "mailer"),
        Some(consumer_id.clone())
    );
    let listed = get(&emulator, &consumers).await;
    assert_eq!(Answer::result(&listed)[0]["script"], json!("mailer"));
    let one = get(&emulator, &format!("{consumers}/{consumer_id}")).await;
    assert_eq!(Answer::result(&one)["script"], json!("mailer"));
    let removed = delete(&emulator, &format!("{consumers}/{consumer_id}")).await;
    assert_eq!(Answer::result(&removed), &Value::Null);

    // The live API's names are accepted on the way in too.
    let by_script = post(
        &emulator,
        &consumers,
        json!({"type": "worker", "script": "sender"}),
    )
    .await;
    let by_script = Answer::result(&by_script).clone();
    assert_eq!(
        (&by_script["script_name"], &by_script["script"]),
        (&json!("sender"), &json!("sender"))
    );
    let by_script_id = by_script["consumer_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let by_service = put(
        &emulator,
        &format!("{consumers}/{by_script_id}"),
        json!({"type": "worker", "service": "notifier"}),
    )
    .await;
    let by_service = Answer::result(&by_service).clone();
    assert_eq!(by_service["service"], json!("notifier"));
    assert_eq!(by_service["script"], json!("notifier"));
    let info = get(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(
        wrangler_finds(Answer::result(&info), "notifier"),
        Some(by_script_id.clone())
    );

    // Two names for two scripts are refused, naming the field.
    let both = put(
        &emulator,
        &format!("{consumers}/{by_script_id}"),
        json!({"type": "worker", "script": "a", "script_name": "b"}),
    )
    .await;
    assert_eq!(Answer::failure(&both).1, 10207);
    assert_eq!(
        both.body["errors"][0]["source"]["pointer"],
        json!("/script")
    );
}

#[tokio::test]
async fn a_dead_letter_queue_name_is_checked_as_a_queue_name_is() {
    let (emulator, _clock) = emulator_with(|e| e).await;
    let id = create(&emulator, "work").await;
    let consumers = queues(&format!("/{id}/consumers"));
    let huge = "d".repeat(2_000_000);
    for name in ["Orders_DLQ", "-dlq", "dlq-", &*"d".repeat(64), &*huge] {
        let refused = [
            post(
                &emulator,
                &consumers,
                json!({"type": "http_pull", "dead_letter_queue": name}),
            )
            .await,
            put(
                &emulator,
                &format!("{consumers}/0123"),
                json!({"type": "worker", "script_name": "w", "dead_letter_queue": name}),
            )
            .await,
        ];
        for answer in &refused {
            let (status, code, message) = Answer::failure(answer);
            assert_eq!(
                (status, code),
                (400, 11003),
                "{}",
                &message[..message.len().min(200)]
            );
            assert!(
                message.starts_with("Invalid queue name: invalid queue name: "),
                "{message:.200}"
            );
            assert!(message.len() < 400, "a long name is not echoed whole");
            assert_eq!(
                answer.body["errors"][0]["source"]["pointer"],
                json!("/dead_letter_queue")
            );
        }
    }
    // Nothing was created: no consumer, no dead-letter queue.
    let listed = get(&emulator, &queues("")).await;
    let names = queue_names(&listed);
    assert_eq!(names, ["work"]);
    let info = get(&emulator, &queues(&format!("/{id}"))).await;
    assert_eq!(Answer::result(&info)["consumers"], json!([]));
    // The same field name on a queue name refused at creation.
    let bad = post(&emulator, &queues(""), json!({"queue_name": "Bad"})).await;
    assert_eq!(
        bad.body["errors"][0]["source"]["pointer"],
        json!("/queue_name")
    );
    assert_eq!(Answer::failure(&bad).1, 11003);
}
