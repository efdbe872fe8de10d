//! `cfq subscriptions list|info`: the account's event subscriptions (all,
//! or one queue's), as JSON lines with the API's fields and as a table,
//! and a subscription that does not exist.

use serde_json::{Value, json};

use cf_queues_emulator::EmulatorHandle;

use crate::support::{Run, emulator_from_toml, run_cfq};

/// `cfq events emit --source SOURCE --event EVENT`, with a table's output.
async fn emit(emulator: &EmulatorHandle, source: &str, event: &str) -> Run {
    run_cfq(
        emulator,
        ["events", "emit", "--source", source, "--event", event],
    )
    .await
}

/// Two queues, each with a subscription declared in the configuration.
const DECLARED: &str = r#"
[[queues]]
queue_name = "orders"
queue_id = "9a7806061c88ada191ed06f989cc3dac"
[[queues.subscriptions]]
events = ["instance.errored", "instance.terminated"]
source = { type = "workflows.workflow", workflow_name = "checkout" }

[[queues]]
queue_name = "buckets"
[[queues.subscriptions]]
name = "bucket feed"
enabled = false
events = ["bucket.created"]
source = { type = "r2" }

[[queues]]
queue_name = "quiet"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_are_listed_by_account_or_queue_and_shown_by_id() {
    let emulator = emulator_from_toml(DECLARED).await;
    let all = run_cfq(&emulator, ["--output", "json", "subscriptions", "list"]).await;
    all.expect_code(0);
    let lines = all.json();
    let names: Vec<_> = lines.iter().map(|s| s["name"].clone()).collect();
    assert_eq!(
        names,
        [json!("bucket feed"), json!("orders workflows.workflow")]
    );
    let orders = &lines[1];
    assert_eq!(
        orders["source"],
        json!({"type": "workflows.workflow", "workflow_name": "checkout"})
    );
    assert_eq!(
        orders["destination"],
        json!({"type": "queues.queue", "queue_id": "9a7806061c88ada191ed06f989cc3dac"})
    );
    assert_eq!(
        orders["events"],
        json!(["instance.errored", "instance.terminated"])
    );
    assert_eq!(
        (&orders["enabled"], &lines[0]["enabled"]),
        (&json!(true), &json!(false))
    );

    // Each queue's own, by name.
    for (queue, expected) in [("orders", orders), ("buckets", &lines[0])] {
        let listed = run_cfq(
            &emulator,
            ["--output", "json", "subscriptions", "list", "-q", queue],
        )
        .await;
        listed.expect_code(0);
        assert_eq!(&listed.json(), std::slice::from_ref(expected), "{queue}");
    }

    let id = orders["id"].as_str().unwrap_or_default();
    for verb in ["info", "get"] {
        let shown = run_cfq(&emulator, ["--output", "json", "subscriptions", verb, id]).await;
        shown.expect_code(0);
        assert_eq!(&shown.one(), orders);
    }
    let table = run_cfq(&emulator, ["--output", "table", "subscriptions", "list"]).await;
    table.expect_code(0);
    let header = table.stdout.lines().next().unwrap_or_default().to_owned();
    assert!(header.starts_with("ID"), "{header}");
    assert!(table.stdout.contains("workflows.workflow") && table.stdout.contains("checkout"));

    let unknown = run_cfq(
        &emulator,
        ["subscriptions", "info", "ffffffffffffffffffffffffffffffff"],
    )
    .await;
    unknown.expect_stderr(4, "does not exist");
    let empty = run_cfq(
        &emulator,
        ["--output", "table", "subscriptions", "list", "-q", "quiet"],
    )
    .await;
    empty.expect_stderr(0, "no event subscriptions into queue quiet");
    assert_eq!(empty.stdout, "");
}

/// Queues by name, as elsewhere: a subscription created, changed (its
/// queue moved by name) and deleted; an event emitted into it and pulled;
/// the catalogue listed; a miss and an unknown event said plainly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_are_made_by_queue_name_and_events_emitted_into_them() {
    let emulator = emulator_from_toml(
        "[[queues]]\nqueue_name = \"builds\"\nconsumer = { type = \"http_pull\" }\n\
         [[queues]]\nqueue_name = \"other\"\nconsumer = { type = \"http_pull\" }\n",
    )
    .await;
    let json = ["--output", "json"];
    let created = run_cfq(
        &emulator,
        json.iter().copied().chain([
            "subscriptions",
            "create",
            "-q",
            "builds",
            "--source",
            "workersBuilds.worker",
            "--resource",
            "api",
            "--events",
            "build.failed,build.succeeded",
        ]),
    )
    .await;
    created.expect_code(0);
    let subscription = created.one();
    assert_eq!(subscription["name"], "builds workersBuilds.worker");
    assert_eq!(
        subscription["source"],
        json!({"type": "workersBuilds.worker", "worker_name": "api"})
    );
    assert_eq!(
        subscription["events"],
        json!(["build.failed", "build.succeeded"])
    );
    let id = subscription["id"].as_str().unwrap_or_default().to_owned();

    let no_resource = run_cfq(
        &emulator,
        [
            "subscriptions",
            "create",
            "-q",
            "builds",
            "--source",
            "workflows.workflow",
            "--events",
            "instance.errored",
        ],
    )
    .await;
    no_resource.expect_stderr(2, "--resource is required for a workflows.workflow source");

    // The catalogue, whole and by source.
    let listed = run_cfq(&emulator, ["--output", "json", "events", "list"]).await;
    listed.expect_code(0);
    assert_eq!(listed.json().len(), 25);
    let builds = run_cfq(
        &emulator,
        [
            "--output",
            "json",
            "events",
            "list",
            "--source",
            "workersBuilds.worker",
        ],
    )
    .await;
    let names: Vec<Value> = builds.json().iter().map(|e| e["event"].clone()).collect();
    assert_eq!(
        names,
        [
            json!("build.started"),
            json!("build.failed"),
            json!("build.canceled"),
            json!("build.succeeded")
        ]
    );

    // The shell completes sources and events from the catalogue.
    let completions = run_cfq(&emulator, ["completions", "bash"]).await;
    completions.expect_code(0);
    for word in [
        "workersBuilds.worker",
        "build.failed",
        "instance.errored",
        "namespace.created",
    ] {
        assert!(completions.stdout.contains(word), "{word} is not completed");
    }

    // Emitted into the queue, then pulled.
    let emitted = run_cfq(
        &emulator,
        json.iter().copied().chain([
            "events",
            "emit",
            "--source",
            "workersBuilds.worker",
            "--event",
            "build.failed",
            "--field",
            "buildOutcome=failure",
            "--field",
            "attempt=2",
        ]),
    )
    .await;
    emitted.expect_code(0);
    let builds_id = emulator.queue_id("builds").unwrap_or_default();
    assert_eq!(
        emitted.one(),
        json!({"type": "cf.workersBuilds.worker.build.failed", "subscription_id": id, "queue_id": builds_id})
    );
    let pulled = run_cfq(
        &emulator,
        ["--output", "json", "pull", "-q", "builds", "--ack"],
    )
    .await;
    pulled.expect_code(0);
    let event = &pulled.one()["body"];
    assert_eq!(event["type"], "cf.workersBuilds.worker.build.failed");
    assert_eq!(
        event["source"],
        json!({"type": "workersBuilds.worker", "workerName": "api"})
    );
    assert_eq!(
        (
            &event["payload"]["buildOutcome"],
            &event["payload"]["attempt"]
        ),
        (&json!("failure"), &json!(2))
    );
    assert_eq!(event["metadata"]["eventSubscriptionId"], json!(id));

    // An event the subscription does not list; one the source does not have.
    let missed = emit(&emulator, "workersBuilds.worker", "build.started").await;
    missed.expect_stderr(4, "no enabled event subscription");
    let wrong = emit(&emulator, "r2", "build.started").await;
    wrong.expect_stderr(2, "bucket.created, bucket.deleted");
    let narrowed = run_cfq(
        &emulator,
        [
            "--queue",
            "builds",
            "events",
            "emit",
            "--source",
            "kv",
            "--event",
            "namespace.created",
        ],
    )
    .await;
    narrowed.expect_stderr(2, "do not apply to `cfq events`");
    let resource = run_cfq(
        &emulator,
        [
            "events",
            "emit",
            "--source",
            "kv",
            "--event",
            "namespace.created",
            "--resource",
            "x",
        ],
    )
    .await;
    resource.expect_stderr(2, "--resource does not apply to a kv source");

    // Moved to another queue by name, disabled, then deleted.
    let moved = run_cfq(
        &emulator,
        json.iter().copied().chain([
            "subscriptions",
            "update",
            id.as_str(),
            "--to",
            "other",
            "--disable",
            "--name",
            "paused builds",
        ]),
    )
    .await;
    moved.expect_code(0);
    let moved = moved.one();
    assert_eq!(
        moved["destination"]["queue_id"],
        json!(emulator.queue_id("other"))
    );
    assert_eq!(
        (&moved["enabled"], &moved["name"]),
        (&json!(false), &json!("paused builds"))
    );
    let disabled = emit(&emulator, "workersBuilds.worker", "build.failed").await;
    disabled.expect_stderr(4, "1 disabled");
    let deleted = run_cfq(
        &emulator,
        json.iter()
            .copied()
            .chain(["subscriptions", "delete", id.as_str()]),
    )
    .await;
    deleted.expect_code(0);
    assert_eq!(deleted.one(), json!({"id": id, "deleted": true}));
    let gone = run_cfq(&emulator, ["subscriptions", "info", id.as_str()]).await;
    gone.expect_code(4);
}
