//! Event subscriptions end to end: as wrangler 4.85.0 and Cloudflare's
//! Python SDK send them over raw HTTP (the shapes, the default name, the
//! `queue_id` filter, a page past the end, the refusals with their
//! pointers and codes, at most one subscription per source), what
//! deleting a queue and moving a destination do, and the client's five
//! calls against the emulator.

use std::time::Duration;

use cf_queues::event_subscriptions::{
    EventSource, EventSubscriptionChange, NewEventSubscription, events,
};
use cf_queues::retry::RetryPolicy;
use cf_queues_emulator::Emulator;
use cf_queues_emulator::config::EmulatorConfig;
use cf_queues_testkit::clients::client;
use cf_queues_testkit::emulators::emulator_on_manual_clock;
use cf_queues_testkit::raw_http::{Answer, create, is_hex32, queues, subscriptions};
use serde_json::{Value, json};

use crate::support::{delete, error_pointer, get, patch, post};

/// The body wrangler's `queues subscription create <queue> --source kv
/// --events namespace.created,namespace.deleted` sends, in its key order.
fn wrangler_create(queue_id: &str, name: &str, source: Value) -> Value {
    json!({
        "name": name, "enabled": true, "source": source,
        "destination": {"type": "queues.queue", "queue_id": queue_id},
        "events": ["namespace.created", "namespace.deleted"]
    })
}

/// The id of a subscription answered.
fn id_of(answer: &Answer) -> String {
    Answer::result(answer)["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_subscription_is_created_read_listed_changed_and_deleted_in_cloudflares_shapes() {
    let (emulator, clock) = emulator_on_manual_clock(|e| e).await;
    let orders = create(&emulator, "orders").await;
    let body = wrangler_create(&orders, "orders kv", json!({"type": "kv"}));
    let created = post(&emulator, &subscriptions(""), body).await;
    let subscription = Answer::result(&created).clone();
    let id = id_of(&created);
    assert!(is_hex32(&id), "{subscription}");
    let at = "2024-03-20T16:09:14.154Z";
    assert_eq!(
        subscription,
        json!({
            "id": id, "name": "orders kv", "enabled": true, "source": {"type": "kv"},
            "destination": {"type": "queues.queue", "queue_id": orders},
            "events": ["namespace.created", "namespace.deleted"],
            "created_at": at, "modified_at": at
        })
    );
    let read = get(&emulator, &subscriptions(&format!("/{id}"))).await;
    assert_eq!(Answer::result(&read), &subscription);

    // wrangler's `list <queue>`: the filter and its paging.
    let listed = get(
        &emulator,
        &subscriptions(&format!("?queue_id={orders}&page=1&per_page=20")),
    )
    .await;
    assert_eq!(Answer::result(&listed), &json!([subscription]));
    assert_eq!(
        listed.body["result_info"],
        json!({"count": 1, "page": 1, "per_page": 20, "total_count": 1, "total_pages": 1})
    );

    // `update --enabled=false --name renamed`: changed, the rest kept.
    clock.advance(Duration::from_secs(2));
    let path = subscriptions(&format!("/{id}"));
    let changed = patch(
        &emulator,
        &path,
        json!({"name": "renamed", "enabled": false}),
    )
    .await;
    let mut expected = subscription.clone();
    expected["name"] = json!("renamed");
    expected["enabled"] = json!(false);
    expected["modified_at"] = json!("2024-03-20T16:09:16.154Z");
    assert_eq!(Answer::result(&changed), &expected);
    assert_eq!(Answer::result(&get(&emulator, &path).await), &expected);

    // The delete answers the subscription as it was; it is gone then.
    let deleted = delete(&emulator, &path).await;
    assert_eq!(Answer::result(&deleted), &expected);
    let gone = get(&emulator, &path).await;
    assert_eq!(
        Answer::failure(&gone),
        (404, 7003, "Event subscription does not exist".to_owned())
    );
    assert_eq!(Answer::failure(&delete(&emulator, &path).await).0, 404);
    assert_eq!(
        Answer::failure(&patch(&emulator, &path, json!({})).await).0,
        404
    );
}

#[tokio::test]
async fn the_list_filters_by_queue_orders_pages_and_answers_a_page_past_the_end() {
    let (emulator, clock) = emulator_on_manual_clock(|e| e).await;
    let orders = create(&emulator, "orders").await;
    let billing = create(&emulator, "billing").await;
    let sources = [
        (&orders, "b-kv", json!({"type": "kv"})),
        (&billing, "a-r2", json!({"type": "r2"})),
        (
            &orders,
            "c-flow",
            json!({"type": "workflows.workflow", "workflow_name": "checkout"}),
        ),
    ];
    for (queue, name, source) in sources {
        clock.advance(Duration::from_secs(1));
        let created = post(
            &emulator,
            &subscriptions(""),
            wrangler_create(queue, name, source),
        )
        .await;
        Answer::result(&created);
    }
    let names = |answer: &Answer| -> Vec<String> {
        let listed = Answer::result(answer)
            .as_array()
            .cloned()
            .unwrap_or_default();
        listed
            .iter()
            .filter_map(|s| s["name"].as_str().map(str::to_owned))
            .collect()
    };
    // By name, ascending: the published description's defaults.
    assert_eq!(
        names(&get(&emulator, &subscriptions("")).await),
        ["a-r2", "b-kv", "c-flow"]
    );
    let query = format!("?queue_id={orders}&order=created_at&direction=desc");
    assert_eq!(
        names(&get(&emulator, &subscriptions(&query)).await),
        ["c-flow", "b-kv"]
    );
    assert_eq!(
        names(&get(&emulator, &subscriptions("?order=source")).await),
        ["b-kv", "a-r2", "c-flow"]
    );
    // Pages of one; a page past the end is empty, as the SDK's paging needs.
    let second = get(&emulator, &subscriptions("?per_page=1&page=2")).await;
    assert_eq!(names(&second), ["b-kv"]);
    assert_eq!(second.body["result_info"]["total_pages"], json!(3));
    let past = get(&emulator, &subscriptions("?per_page=1&page=4")).await;
    assert_eq!(Answer::result(&past), &json!([]));
    let none = get(
        &emulator,
        &subscriptions("?queue_id=ffffffffffffffffffffffffffffffff"),
    )
    .await;
    assert_eq!(Answer::result(&none), &json!([]));
    for query in [
        "?per_page=101",
        "?per_page=0",
        "?page=0",
        "?order=id",
        "?direction=up",
    ] {
        let refused = get(&emulator, &subscriptions(query)).await;
        assert_eq!(Answer::failure(&refused).0, 400, "{query}");
        assert_eq!(Answer::failure(&refused).1, 10207, "{query}");
    }
}

#[tokio::test]
async fn bad_bodies_are_refused_with_the_field_and_nothing_is_created() {
    let (emulator, _clock) = emulator_on_manual_clock(|e| e).await;
    let orders = create(&emulator, "orders").await;
    let valid = || wrangler_create(&orders, "orders kv", json!({"type": "kv"}));
    let with = |key: &str, value: Value| {
        let mut body = valid();
        body[key] = value;
        body
    };
    let without = |key: &str| {
        let mut body = valid();
        body.as_object_mut().map(|o| o.remove(key));
        body
    };
    let cases = [
        (without("source"), "/source"),
        (without("destination"), "/destination"),
        (without("events"), "/events"),
        (with("events", json!([])), "/events"),
        (with("events", json!("namespace.created")), "/events"),
        (
            with("events", json!(["namespace.created", ""])),
            "/events/1",
        ),
        (with("name", json!("")), "/name"),
        (with("enabled", json!("yes")), "/enabled"),
        (
            with("source", json!({"type": "images.image"})),
            "/source/type",
        ),
        (with("source", json!({})), "/source/type"),
        (
            with("source", json!({"type": "workersAi.model"})),
            "/source/model_name",
        ),
        (
            with(
                "source",
                json!({"type": "workersBuilds.worker", "worker_name": ""}),
            ),
            "/source/worker_name",
        ),
        (
            with("source", json!({"type": "workers.script"})),
            "/source/script_tag",
        ),
        (
            with("source", json!({"type": "r2", "bucket": "photos"})),
            "/source/bucket",
        ),
        (
            with(
                "source",
                json!({"type": "workflows.workflow", "workflow_name": 7}),
            ),
            "/source/workflow_name",
        ),
        (
            with(
                "destination",
                json!({"type": "workers.script", "queue_id": orders}),
            ),
            "/destination/type",
        ),
        (
            with("destination", json!({"type": "queues.queue"})),
            "/destination/queue_id",
        ),
    ];
    for (body, pointer) in cases {
        let refused = post(&emulator, &subscriptions(""), body.clone()).await;
        assert_eq!(Answer::failure(&refused).0, 400, "{body}");
        assert_eq!(Answer::failure(&refused).1, 10207, "{body}");
        assert_eq!(error_pointer(&refused), &json!(pointer), "{body}");
    }
    // An unknown destination queue: 404 QueueNotFound, as a queue call.
    let unknown = wrangler_create(
        "ffffffffffffffffffffffffffffffff",
        "x",
        json!({"type": "kv"}),
    );
    let refused = post(&emulator, &subscriptions(""), unknown).await;
    assert_eq!(
        Answer::failure(&refused),
        (404, 10104, "QueueNotFound".to_owned())
    );
    assert_eq!(
        Answer::result(&get(&emulator, &subscriptions("")).await),
        &json!([])
    );

    // A PATCH may not change the source, and checks what it changes.
    let id = id_of(&post(&emulator, &subscriptions(""), valid()).await);
    let path = subscriptions(&format!("/{id}"));
    for (body, pointer) in [
        (json!({"source": {"type": "r2"}}), "/source"),
        (json!({"events": []}), "/events"),
        (json!({"name": " "}), "/name"),
        (
            json!({"destination": {"type": "queues.queue"}}),
            "/destination/queue_id",
        ),
    ] {
        let refused = patch(&emulator, &path, body.clone()).await;
        assert_eq!(Answer::failure(&refused).0, 400, "{body}");
        assert_eq!(error_pointer(&refused), &json!(pointer), "{body}");
    }
    let away = json!({"destination": {"type": "queues.queue", "queue_id": "ffffffffffffffffffffffffffffffff"}});
    assert_eq!(
        Answer::failure(&patch(&emulator, &path, away).await).1,
        10104
    );
    let bad_id = get(&emulator, &subscriptions("/not-an-id")).await;
    assert_eq!(Answer::failure(&bad_id).0, 400);
}

/// A third-party provider documents at most one subscription per source
/// per account, and users report the live API refusing a second
/// (cloudflare/workers-sdk#15340): the same source (type and resource) is
/// refused with 405 whatever the queue; another resource of the same
/// type is another source; once deleted, the source is free again.
#[tokio::test]
async fn one_subscription_per_source_in_an_account() {
    let (emulator, _clock) = emulator_on_manual_clock(|e| e).await;
    let orders = create(&emulator, "orders").await;
    let billing = create(&emulator, "billing").await;
    let checkout = json!({"type": "workflows.workflow", "workflow_name": "checkout"});
    let first = post(
        &emulator,
        &subscriptions(""),
        wrangler_create(&orders, "a", checkout.clone()),
    )
    .await;
    let first = id_of(&first);
    let again = post(
        &emulator,
        &subscriptions(""),
        wrangler_create(&billing, "b", checkout.clone()),
    )
    .await;
    let (status, code, message) = Answer::failure(&again);
    assert_eq!((status, code), (405, 10026));
    assert!(
        message.contains("multiple subscriptions on the same resource"),
        "{message}"
    );
    assert!(
        message.contains(&first),
        "names the subscription that has it: {message}"
    );
    let other = json!({"type": "workflows.workflow", "workflow_name": "refunds"});
    let refunds = post(
        &emulator,
        &subscriptions(""),
        wrangler_create(&orders, "c", other),
    )
    .await;
    Answer::result(&refunds);
    Answer::result(&delete(&emulator, &subscriptions(&format!("/{first}"))).await);
    let after = post(
        &emulator,
        &subscriptions(""),
        wrangler_create(&billing, "b", checkout),
    )
    .await;
    Answer::result(&after);
}

/// Deleting a queue deletes the subscriptions into it (the emulator's
/// choice: none is left naming a queue that does not exist, and their
/// sources are free again); a PATCH that moves the destination moves the
/// subscription to the other queue's list.
#[tokio::test]
async fn deleting_a_queue_deletes_its_subscriptions_and_a_destination_can_move() {
    let (emulator, _clock) = emulator_on_manual_clock(|e| e).await;
    let orders = create(&emulator, "orders").await;
    let billing = create(&emulator, "billing").await;
    let kv = id_of(
        &post(
            &emulator,
            &subscriptions(""),
            wrangler_create(&orders, "kv", json!({"type": "kv"})),
        )
        .await,
    );
    let r2 = id_of(
        &post(
            &emulator,
            &subscriptions(""),
            wrangler_create(&orders, "r2", json!({"type": "r2"})),
        )
        .await,
    );
    let to_billing = json!({"destination": {"type": "queues.queue", "queue_id": billing}});
    let moved = patch(&emulator, &subscriptions(&format!("/{r2}")), to_billing).await;
    assert_eq!(
        Answer::result(&moved)["destination"]["queue_id"],
        json!(billing)
    );
    let of = |queue: &str| subscriptions(&format!("?queue_id={queue}"));
    let ids = |answer: &Answer| -> Vec<Value> {
        Answer::result(answer)
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| s["id"].clone())
            .collect()
    };
    assert_eq!(ids(&get(&emulator, &of(&billing)).await), [json!(r2)]);
    assert_eq!(ids(&get(&emulator, &of(&orders)).await), [json!(kv)]);
    Answer::result(&delete(&emulator, &queues(&format!("/{orders}"))).await);
    assert_eq!(ids(&get(&emulator, &subscriptions("")).await), [json!(r2)]);
    let gone = get(&emulator, &subscriptions(&format!("/{kv}"))).await;
    assert_eq!(Answer::failure(&gone).0, 404);
}

#[tokio::test]
async fn the_clients_calls_work_against_the_emulator() {
    let (emulator, _clock) = emulator_on_manual_clock(|e| e).await;
    let client = client(&emulator, RetryPolicy::none());
    let queue = client.create_queue("models").await.expect("queue");
    let source = EventSource::WorkersAiModel {
        model_name: "@cf/meta/llama-3.1-8b-instruct".into(),
    };
    let new = NewEventSubscription::new(source.clone(), events::workers_ai::ALL);
    let created = queue.create_event_subscription(new).await.expect("created");
    assert_eq!(created.name.as_deref(), Some("models workersAi.model"));
    assert_eq!(
        (created.source.clone(), created.enabled),
        (source.clone(), Some(true))
    );
    assert_eq!(created.queue_id.as_deref(), Some(queue.id()));
    assert_eq!(created.events, events::workers_ai::ALL);
    let id = created.id.clone().expect("an id");
    assert_eq!(client.event_subscription(&id).await.expect("read"), created);
    let only = std::slice::from_ref(&created);
    assert_eq!(queue.event_subscriptions().await.expect("listed"), only);
    assert_eq!(client.event_subscriptions().await.expect("listed"), only);

    let change = EventSubscriptionChange::new()
        .enabled(false)
        .events([events::workers_ai::BATCH_FAILED]);
    let changed = client
        .update_event_subscription(&id, change)
        .await
        .expect("changed");
    assert_eq!(changed.enabled, Some(false));
    assert_eq!(changed.events, [events::workers_ai::BATCH_FAILED]);
    assert_eq!(changed.source, source);

    let second = NewEventSubscription::new(source, ["batch.queued"]);
    let refused = queue
        .create_event_subscription(second)
        .await
        .expect_err("one per source");
    assert_eq!(refused.status(), Some(405));
    assert!(!refused.may_have_landed());

    client
        .delete_event_subscription(&id)
        .await
        .expect("deleted");
    let gone = client.event_subscription(&id).await.expect_err("gone");
    assert!(gone.is_not_found(), "{gone:?}");
    assert!(
        queue
            .event_subscriptions()
            .await
            .expect("listed")
            .is_empty()
    );
}

/// Declared in a configuration, two subscriptions to one source are
/// refused before anything is served, naming the second.
#[tokio::test]
async fn a_configuration_declaring_one_source_twice_does_not_start() {
    let text = r#"
[[queues]]
queue_name = "a"
[[queues.subscriptions]]
events = ["bucket.created"]
source = { type = "r2" }

[[queues]]
queue_name = "b"
[[queues.subscriptions]]
events = ["bucket.deleted"]
source = { type = "r2" }
"#;
    let config = EmulatorConfig::from_toml(text).expect("each is valid alone");
    let started = Emulator::new().config(config).start().await;
    let message = started.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("queue \"b\""), "{message}");
    assert!(message.contains("subscriptions[0]"), "{message}");
    assert!(message.contains("at most one per source"), "{message}");
}
