//! Events emitted into the subscribed queues: the documented message,
//! exactly, pulled through the client; only the subscriptions whose source,
//! resource and events match receive it; a disabled one receives nothing;
//! an event the catalogue lacks is refused naming the source's events; the
//! emulator's own route for `cfq events emit`.

use serde_json::{Value, json};

use cf_queues::event_subscriptions::{
    EventSource, EventSubscriptionChange, NewEventSubscription, events,
};
use cf_queues::retry::RetryPolicy;
use cf_queues::{PullOptions, Queue};
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, EventToEmit, catalogue};
use cf_queues_testkit::clients::{client, created_pull_queue};
use cf_queues_testkit::emulators::emulator_on_manual_clock;
use cf_queues_testkit::raw_http::{Answer, Method, call, call_with};

/// Every message of `queue`, as JSON, acknowledged.
async fn bodies(queue: &Queue) -> Vec<Value> {
    let batch = queue
        .pull(PullOptions::new().batch_size(100))
        .await
        .expect("pulled");
    let mut acks = cf_queues::Acks::new();
    let mut out = Vec::new();
    for message in &batch.messages {
        out.push(message.body().json::<Value>().expect("a JSON body"));
        acks = acks.ack(message);
    }
    if !batch.messages.is_empty() {
        queue.ack(acks).await.expect("acked");
    }
    out
}

fn workflow(name: &str) -> EventSource {
    EventSource::WorkflowsWorkflow {
        workflow_name: name.into(),
    }
}

#[tokio::test]
async fn an_emitted_event_reaches_the_subscriptions_of_its_source_in_cloudflares_shape() {
    let (emulator, _clock) = emulator_on_manual_clock(|e| e).await;
    let checkout = created_pull_queue(&emulator, "checkout-events").await;
    let refunds = created_pull_queue(&emulator, "refunds-events").await;
    let buckets = created_pull_queue(&emulator, "bucket-events").await;
    let subscribe = |queue: &Queue, source: EventSource, names: &[&str]| {
        let new = NewEventSubscription::new(source, names.iter().copied());
        let queue = queue.clone();
        async move {
            queue
                .create_event_subscription(new)
                .await
                .expect("subscribed")
        }
    };
    let errored = events::workflows::INSTANCE_ERRORED;
    let to_checkout = subscribe(&checkout, workflow("checkout"), &[errored]).await;
    let to_refunds = subscribe(
        &refunds,
        workflow("refunds"),
        &[errored, "instance.completed"],
    )
    .await;
    subscribe(&buckets, EventSource::R2, &events::r2::ALL).await;

    // A Workflow's event, to every Workflow's subscription listing it.
    let delivered = emulator
        .emit_event(EventToEmit::new("workflows.workflow", errored).field("instanceId", "inst-1"))
        .expect("emitted");
    let mut into: Vec<&str> = delivered.iter().map(|d| d.queue_id.as_str()).collect();
    into.sort_unstable();
    let mut expected = vec![checkout.id(), refunds.id()];
    expected.sort_unstable();
    assert_eq!(into, expected);
    let got = bodies(&checkout).await;
    assert_eq!(
        got,
        [json!({
            "type": "cf.workflows.workflow.instance.errored",
            "source": {"type": "workflows.workflow", "workflowName": "checkout"},
            "payload": {"versionId": "v1", "instanceId": "inst-1"},
            "metadata": {
                "accountId": EMULATOR_ACCOUNT_ID,
                "eventSubscriptionId": to_checkout.id.clone().unwrap_or_default(),
                "eventSchemaVersion": 1,
                "eventTimestamp": "2024-03-20T16:09:14.154Z"
            }
        })]
    );
    let got = bodies(&refunds).await;
    assert_eq!(got[0]["source"]["workflowName"], "refunds");
    assert_eq!(
        got[0]["metadata"]["eventSubscriptionId"],
        json!(to_refunds.id.clone().unwrap_or_default())
    );
    assert!(
        bodies(&buckets).await.is_empty(),
        "another source's queue gets nothing"
    );

    // One Workflow's only, by its resource; the payload given replaces the example's.
    let mut payload = serde_json::Map::new();
    payload.insert("instanceId".into(), json!("inst-2"));
    let one = EventToEmit::new("workflows.workflow", "instance.completed")
        .resource("refunds")
        .payload(payload);
    assert_eq!(emulator.emit_event(one).expect("emitted").len(), 1);
    assert_eq!(
        bodies(&refunds).await[0]["payload"],
        json!({"instanceId": "inst-2"})
    );
    assert!(bodies(&checkout).await.is_empty());

    // The documented example's payload, untouched, for R2.
    emulator
        .emit_event(EventToEmit::new("r2", "bucket.created"))
        .expect("emitted");
    let documented = catalogue::find("r2", "bucket.created").expect("documented");
    assert_eq!(
        bodies(&buckets).await[0]["payload"],
        documented.example["payload"]
    );
}

#[tokio::test]
async fn a_disabled_subscription_gets_nothing_and_a_miss_says_why() {
    let (emulator, _clock) = emulator_on_manual_clock(|e| e).await;
    let queue = created_pull_queue(&emulator, "kv-events").await;
    let created = queue
        .create_event_subscription(NewEventSubscription::new(
            EventSource::Kv,
            ["namespace.created"],
        ))
        .await
        .expect("subscribed");
    let id = created.id.clone().unwrap_or_default();
    let client = client(&emulator, RetryPolicy::none());
    client
        .update_event_subscription(&id, EventSubscriptionChange::new().enabled(false))
        .await
        .expect("disabled");
    let refused = emulator
        .emit_event(EventToEmit::new("kv", "namespace.created"))
        .expect_err("disabled");
    assert_eq!(refused.status(), 404);
    assert!(refused.message().contains("1 disabled"), "{refused}");
    assert_eq!(emulator.metrics(queue.id()).backlog_count, 0);

    // An event the subscription does not list, or the catalogue lacks.
    client
        .update_event_subscription(&id, EventSubscriptionChange::new().enabled(true))
        .await
        .expect("enabled");
    let other = emulator
        .emit_event(EventToEmit::new("kv", "namespace.deleted"))
        .expect_err("not listed");
    assert_eq!(other.status(), 404);
    let unknown = emulator
        .emit_event(EventToEmit::new("kv", "namespace.renamed"))
        .expect_err("not documented");
    assert_eq!(unknown.status(), 400);
    assert!(
        unknown
            .message()
            .contains("namespace.created, namespace.deleted"),
        "{unknown}"
    );
    let undocumented = emulator
        .emit_event(EventToEmit::new("images", "image.uploaded"))
        .expect_err("no documented events");
    assert!(
        undocumented
            .message()
            .contains("no Cloudflare page documents"),
        "{undocumented}"
    );
    assert_eq!(emulator.metrics(queue.id()).backlog_count, 0);
    assert_eq!(
        emulator
            .emit_event(EventToEmit::new("kv", "namespace.created"))
            .expect("enabled again")
            .len(),
        1
    );
}

#[tokio::test]
async fn the_emulators_route_emits_with_the_apis_credentials() {
    let (emulator, _clock) = emulator_on_manual_clock(|e| e).await;
    let queue = created_pull_queue(&emulator, "vectors").await;
    queue
        .create_event_subscription(NewEventSubscription::new(
            EventSource::Vectorize,
            ["index.created"],
        ))
        .await
        .expect("subscribed");
    let path = format!("/_emulator/accounts/{EMULATOR_ACCOUNT_ID}/events");
    let body = json!({"source": "vectorize", "event": "index.created", "fields": {"name": "docs"}});
    for root in [
        emulator.base_url(),
        emulator.base_url().trim_end_matches("/client/v4"),
    ] {
        let answer = call_with(
            &emulator,
            root,
            Method::POST,
            &path,
            Some(body.clone()),
            &[],
        )
        .await;
        let result = Answer::result(&answer);
        assert_eq!(result["type"], "cf.vectorize.index.created", "{root}");
        assert_eq!(result["delivered"][0]["queue_id"], json!(queue.id()));
    }
    let emitted = bodies(&queue).await;
    assert_eq!(emitted.len(), 2);
    assert_eq!(emitted[0]["payload"]["name"], "docs");

    let unknown = call(
        &emulator,
        Method::POST,
        &path,
        Some(json!({"source": "vectorize", "event": "x"})),
    )
    .await;
    assert_eq!(Answer::failure(&unknown).0, 400);
    let missing = call(
        &emulator,
        Method::POST,
        &path,
        Some(json!({"event": "index.created"})),
    )
    .await;
    assert_eq!(Answer::failure(&missing).0, 400);
    let unauthenticated = reqwest::Client::new()
        .post(format!("{}{path}", emulator.base_url()))
        .json(&body)
        .send()
        .await
        .expect("answered");
    assert_eq!(unauthenticated.status().as_u16(), 400, "no credentials");
    assert_eq!(
        bodies(&queue).await.len(),
        0,
        "nothing emitted without credentials"
    );
}

/// An emit checks every queue's room before it pushes anything: one queue
/// whose backlog is full refuses the whole emit (429, 10251), and the
/// other queue gets nothing either.
#[tokio::test]
async fn an_emit_delivers_everywhere_or_nowhere() {
    let (emulator, _clock) = emulator_on_manual_clock(|e| e.max_backlog_bytes(2_000)).await;
    let roomy = created_pull_queue(&emulator, "roomy").await;
    let full = created_pull_queue(&emulator, "full").await;
    for (queue, name) in [(&roomy, "checkout"), (&full, "refunds")] {
        let new = NewEventSubscription::new(workflow(name), ["instance.errored"]);
        queue
            .create_event_subscription(new)
            .await
            .expect("subscribed");
    }
    full.push(cf_queues::Message::text("x".repeat(1_900)))
        .await
        .expect("pushed");
    let refused = emulator
        .emit_event(EventToEmit::new("workflows.workflow", "instance.errored"))
        .expect_err("a full queue");
    assert_eq!(refused.status(), 429, "{refused}");
    assert_eq!(
        emulator.metrics(roomy.id()).backlog_count,
        0,
        "nothing half-emitted"
    );
    assert_eq!(emulator.metrics(full.id()).backlog_count, 1);
    // The one with room alone, by its resource.
    let one = EventToEmit::new("workflows.workflow", "instance.errored").resource("checkout");
    assert_eq!(emulator.emit_event(one).expect("emitted").len(), 1);
}
