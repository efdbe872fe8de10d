//! `cfq subscriptions list|info`: the account's event subscriptions (all,
//! or one queue's), as JSON lines with the API's fields and as a table,
//! and a subscription that does not exist.

use serde_json::json;

use crate::support::{emulator_from_toml, run_cfq};

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
